//! PTX instruction statements: guard, opcode, ordered modifiers and operands, and a structured
//! view of the memory-model instructions (`ld`, `st`, `atom`, `red`, `fence`, `membar`,
//! barriers) so that checks compare parsed parts, never text. Producers order modifiers
//! differently (`atom.add.acquire.gpu.s32` from libcu++ against the PTX ISA's
//! `atom{.sem}{.scope}{.space}.op.type`), and the PTX ISA gives defaults for omitted
//! qualifiers; [`MemOp::effective`] applies them.

use std::fmt;

use crate::lexer::Token;

mod functions;
mod grammar;
mod memop;
mod table;

pub use functions::{function_body, function_names, strip_comments};
pub(crate) use grammar::read_statement;
pub use memop::{AtomOp, Effective, MemOp, MemOpKind, Scope, Sem, Space};
pub(crate) use table::{is_opcode, is_special_register, modifier_allowed};

/// A parse failure, with the 1-based line of the PTX text it comes from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct InstrError {
    pub line: usize,
    pub message: String,
}

/// A guard predicate: `@%p1` or `@!%p1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    pub negated: bool,
    pub predicate: String,
}

/// One instruction statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// 1-based line in the PTX text where the statement starts (0 when parsed standalone).
    pub line: usize,
    pub guard: Option<Guard>,
    /// `atom`, `ld`, `fence`, ...
    pub opcode: String,
    /// Modifiers in source order, without the leading dot: `["add", "acquire", "gpu", "s32"]`.
    pub modifiers: Vec<String>,
    /// Operands split at top-level commas, trimmed: `["%r1", "[%rd1]", "%r2"]`.
    pub operands: Vec<String>,
}

impl Instruction {
    pub fn has(&self, modifier: &str) -> bool {
        self.modifiers.iter().any(|m| m == modifier)
    }

    /// The structured view when this is a memory-model instruction.
    pub fn mem_op(&self) -> Option<MemOp> {
        MemOp::from_instruction(self)
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = &self.guard {
            write!(f, "@{}{} ", if g.negated { "!" } else { "" }, g.predicate)?;
        }
        f.write_str(&self.opcode)?;
        for m in &self.modifiers {
            write!(f, ".{m}")?;
        }
        if !self.operands.is_empty() {
            write!(f, " {}", self.operands.join(", "))?;
        }
        f.write_str(";")
    }
}

/// Parse one statement (without its `;`), e.g. `@!%p1 atom.add.acquire.gpu.s32 %r1,[%rd1],%r2`.
/// The statement is read by the one statement grammar, [`read_statement`], that the module
/// reader also holds every function body to.
pub fn parse_instruction(stmt: &str, line: usize) -> Result<Instruction, InstrError> {
    let text = stmt.trim().trim_end_matches(';').trim();
    if text.is_empty() {
        return Err(InstrError {
            line,
            message: "empty statement".into(),
        });
    }
    let toks = super::lexer::tokenize(text);
    let mut names = Vec::new();
    let shape = read_statement(&toks, &mut names).map_err(|e| InstrError {
        line,
        message: format!("{} in `{stmt}`", e.message),
    })?;
    // Tokens borrow from `text`: their byte offsets give the exact source of each part.
    let offset = |t: &Token<'_>| t.text.as_ptr() as usize - text.as_ptr() as usize;
    let span = |(a, b): (usize, usize)| {
        let (s, e) = (offset(&toks[a]), offset(&toks[b]) + toks[b].text.len());
        text[s..e].to_string()
    };
    let guard = shape.guard.map(|(negated, i)| Guard {
        negated,
        predicate: toks[i].text.to_string(),
    });
    Ok(Instruction {
        line,
        guard,
        opcode: toks[shape.opcode].text.to_string(),
        modifiers: shape
            .modifiers
            .iter()
            .map(|&(a, b)| span((a, b)).trim_start_matches('.').to_string())
            .collect(),
        operands: shape.operands.iter().map(|&r| span(r)).collect(),
    })
}

#[cfg(test)]
mod tests;
