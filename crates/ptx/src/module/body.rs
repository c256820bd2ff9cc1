//! Function bodies, read statement by statement as ptxas 12.9 reads them: scopes and the
//! names they declare ([`super::scope`]), labels and branch targets, directives inside a
//! body, and each instruction's opcode and modifiers against the PTX ISA's tables.

use std::collections::HashSet;

use super::parser::Parser;
use super::scope::{numbered, BodyScope, DeclScan, IncompleteScan, Use, SIZED_SPACES};
use super::*;
use crate::instr;

impl<'a> Parser<'a> {
    /// Read a function body whose `{` was just consumed, statement by statement (PTX ISA §4.3
    /// statements, §9.2 instructions): nested `{ }` scopes, labels `name:`, declarations
    /// (`.reg`, `.local`, `.shared`, `.param`, …), line directives (`.loc`), other directives up
    /// to their `;`, and instructions read by [`instr::read_statement`]. What ptxas refuses as
    /// a parsing error (a missing `;`, an unbalanced bracket, a malformed operand list, a
    /// statement that is not one) is an error at its position; an opcode the ISA does not
    /// have, a register or name never declared, a branch to a label the function does not have
    /// are notes (ptxas 12.9 reports those as errors after parsing).
    pub(super) fn body(
        &mut self,
        open_line: u32,
        open_col: u32,
        function: &'a str,
        returns: &[ParamDecl],
        params: &[ParamDecl],
    ) -> Result<(), PtxError> {
        let mut scope = std::mem::take(&mut self.body);
        scope.decls.clear();
        scope.stack.clear();
        scope.ranges.clear();
        scope.marks.clear();
        scope.labels.clear();
        scope.uses.clear();
        scope.stmt.clear();
        let params: HashSet<&str> = returns
            .iter()
            .chain(params)
            .map(|p| p.name.as_str())
            .collect();
        let r = self.body_statements(&mut scope, open_line, open_col, function, &params);
        if r.is_ok() {
            self.resolve_body(&mut scope);
        }
        self.body = scope;
        r
    }

    fn body_statements(
        &mut self,
        scope: &mut BodyScope<'a>,
        open_line: u32,
        open_col: u32,
        function: &'a str,
        params: &HashSet<&str>,
    ) -> Result<(), PtxError> {
        let mut depth = 1usize;
        // Brackets open in the statement being read.
        let mut open: Vec<(char, u32, u32)> = Vec::new();
        loop {
            let Some(t) = self.bump()? else {
                return Err(self.unclosed_body(open_line, open_col));
            };
            if scope.stmt.is_empty() {
                if self.statement_start(t, scope, &mut depth, function)? {
                    return Ok(());
                }
                continue;
            }
            if t.is_punct(';') && open.is_empty() {
                self.statement(scope, function, params, &t)?;
                scope.stmt.clear();
                continue;
            }
            self.statement_token(t, scope, &mut open)?;
        }
    }

    /// The first token of a statement: a scope's `{` or `}`, an empty statement, an `@@DWARF`
    /// line, a label, a directive, or the start of an instruction. `Ok(true)` when the `}`
    /// closes the body.
    fn statement_start(
        &mut self,
        t: Token<'a>,
        scope: &mut BodyScope<'a>,
        depth: &mut usize,
        function: &'a str,
    ) -> Result<bool, PtxError> {
        match t.kind {
            TokenKind::Punct if t.is_punct('{') => {
                if *depth >= MAX_DEPTH {
                    return Err(PtxError::new(
                        t.line,
                        t.col,
                        PtxErrorKind::Syntax,
                        format!("scopes nested deeper than {MAX_DEPTH}"),
                    ));
                }
                *depth += 1;
                scope.open();
            }
            TokenKind::Punct if t.is_punct('}') => {
                *depth -= 1;
                if *depth == 0 {
                    return Ok(true);
                }
                scope.close();
            }
            TokenKind::Punct if t.is_punct(';') => {}
            TokenKind::Punct
                if t.is_punct('@') && self.peek().is_some_and(|n| n.is_punct('@')) =>
            {
                self.skip_line_tail(t.line)?;
            }
            TokenKind::Ident
                if self.peek().is_some_and(|n| n.is_punct(':'))
                    && !t.text.starts_with('%') =>
            {
                // A label (PTX ISA §4.4 "labels"); a statement may follow on the line.
                self.bump()?;
                scope.labels.insert(t.text);
            }
            TokenKind::Directive => self.body_directive(&t, scope)?,
            TokenKind::Ident | TokenKind::Punct if t.kind == TokenKind::Ident || t.is_punct('@') => {
                scope.stmt.push(t);
            }
            _ => {
                return Err(PtxError::new(
                    t.line,
                    t.col,
                    PtxErrorKind::Syntax,
                    format!(
                        "expected an instruction, a label, a directive or `}}` in the body of `{function}`, found `{}`",
                        t.text
                    ),
                ))
            }
        }
        Ok(false)
    }

    /// A token inside an instruction statement (not its ending `;`): brackets must balance
    /// within the statement, and a statement has at most [`MAX_STATEMENT_TOKENS`] tokens.
    fn statement_token(
        &mut self,
        t: Token<'a>,
        scope: &mut BodyScope<'a>,
        open: &mut Vec<(char, u32, u32)>,
    ) -> Result<(), PtxError> {
        if t.is_punct('(') || t.is_punct('[') || t.is_punct('{') {
            if open.len() >= MAX_DEPTH {
                return Err(PtxError::new(
                    t.line,
                    t.col,
                    PtxErrorKind::Syntax,
                    format!("brackets nested deeper than {MAX_DEPTH}"),
                ));
            }
            open.push((t.text.chars().next().unwrap_or('('), t.line, t.col));
        } else if t.is_punct(')') || t.is_punct(']') || t.is_punct('}') {
            let want = match t.text {
                ")" => '(',
                "]" => '[',
                _ => '{',
            };
            match open.pop() {
                Some((c, _, _)) if c == want => {}
                Some((c, l, col)) => {
                    return Err(PtxError::new(
                        t.line,
                        t.col,
                        PtxErrorKind::Syntax,
                        format!(
                            "expected the `{}` closing `{c}` opened at line {l} column {col}, found `{}`",
                            closing(c),
                            t.text
                        ),
                    ))
                }
                None => {
                    // The statement never ended: `}` (the end of a scope or the body) or
                    // a stray `)`/`]` after it.
                    let (l, c) = after(scope.stmt.last().unwrap_or(&t));
                    return Err(PtxError::new(
                        l,
                        c,
                        PtxErrorKind::Syntax,
                        format!(
                            "expected `;` at the end of the statement `{}` (line {}), found `{}`",
                            statement_text(&scope.stmt),
                            scope.stmt[0].line,
                            t.text
                        ),
                    ));
                }
            }
        } else if t.is_punct(';') {
            let (c, l, col) = open.last().copied().unwrap_or(('(', t.line, t.col));
            return Err(PtxError::new(
                t.line,
                t.col,
                PtxErrorKind::Syntax,
                format!(
                    "expected `{}` closing `{c}` opened at line {l} column {col}, found `;`",
                    closing(c)
                ),
            ));
        }
        if scope.stmt.len() >= MAX_STATEMENT_TOKENS {
            return Err(PtxError::new(
                t.line,
                t.col,
                PtxErrorKind::Syntax,
                format!(
                    "a statement of more than {MAX_STATEMENT_TOKENS} tokens (no `;` since line {})",
                    scope.stmt[0].line
                ),
            ));
        }
        scope.stmt.push(t);
        Ok(())
    }

    /// A directive statement inside a body.
    fn body_directive(&mut self, t: &Token<'a>, scope: &mut BodyScope<'a>) -> Result<(), PtxError> {
        if LINE_DIRECTIVES.contains(&t.text) {
            return self.skip_line_tail(t.line);
        }
        let declares = matches!(
            t.text,
            ".reg" | ".local" | ".shared" | ".param" | ".const" | ".global" | ".tex" | ".sreg"
        );
        let mut scan = DeclScan::default();
        let mut incomplete = SIZED_SPACES.contains(&t.text).then(IncompleteScan::default);
        let mut open = 0usize;
        loop {
            let Some(n) = self.bump()? else {
                let (l, c) = self.end_pos();
                return Err(PtxError::new(
                    l,
                    c,
                    PtxErrorKind::Syntax,
                    format!(
                        "expected `;` ending the `{}` at line {}, found end of file",
                        t.text, t.line
                    ),
                ));
            };
            if let Some(s) = incomplete.as_mut() {
                s.feed(&n);
            }
            if n.is_punct(';') && open == 0 {
                if let Some(s) = incomplete {
                    self.note_incomplete(s);
                }
                return Ok(());
            }
            if n.is_punct('{') || n.is_punct('(') || n.is_punct('[') {
                open += 1;
            } else if n.is_punct('}') || n.is_punct(')') || n.is_punct(']') {
                if open == 0 {
                    return Err(PtxError::new(
                        n.line,
                        n.col,
                        PtxErrorKind::Syntax,
                        format!(
                            "expected `;` ending the `{}` at line {}, found `{}`",
                            t.text, t.line, n.text
                        ),
                    ));
                }
                open -= 1;
            }
            if declares {
                if let Some(d) = scan.feed(&n) {
                    scope.declare(d);
                }
            }
        }
    }

    /// One instruction statement, its `;` just read.
    pub(super) fn statement(
        &mut self,
        scope: &mut BodyScope<'a>,
        function: &'a str,
        params: &HashSet<&str>,
        semicolon: &Token<'a>,
    ) -> Result<(), PtxError> {
        scope.names.clear();
        let toks = &scope.stmt;
        let shape = match instr::read_statement(toks, &mut scope.names) {
            Ok(s) => s,
            Err(e) => {
                let (l, c) = match toks.get(e.at) {
                    Some(t) => (t.line, t.col),
                    None => (semicolon.line, semicolon.col),
                };
                return Err(PtxError::new(l, c, PtxErrorKind::Syntax, e.message));
            }
        };
        let op = &toks[shape.opcode];
        if !instr::is_opcode(op.text) {
            self.notes.push(ModuleNote {
                line: op.line,
                column: op.col,
                kind: NoteKind::UnknownInstruction {
                    opcode: op.text.to_string(),
                },
            });
        } else {
            self.check_modifiers(op.text, toks, &shape.modifiers);
        }
        let branch = op.text == "bra";
        for &i in &scope.names {
            let t = &toks[i];
            let branch = branch && shape.guard.is_none_or(|(_, g)| g != i);
            if t.text == "_"
                || (!branch
                    && (scope.knows(t.text)
                        || params.contains(t.text)
                        || instr::is_special_register(t.text)
                        // PTX ISA §4.5 predefined identifiers: the warp size constant.
                        || t.text == "WARP_SZ"
                        || self.module_names.contains(t.text)
                        || numbered(t.text).is_some_and(|(p, v)| {
                            self.module_ranges.get(p).is_some_and(|&c| v < c)
                        })))
            {
                continue;
            }
            scope.uses.push(Use {
                name: t.text,
                line: t.line,
                col: t.col,
                branch,
                function,
            });
        }
        Ok(())
    }

    pub(super) fn note_incomplete(&mut self, scan: IncompleteScan<'a>) {
        if let Some((name, line, column)) = scan.finish() {
            self.notes.push(ModuleNote {
                line,
                column,
                kind: NoteKind::IncompleteArray {
                    name: name.to_string(),
                },
            });
        }
    }

    /// Each modifier of an instruction against the opcode's row of [`instr::MODIFIERS`]
    /// (opcodes without a row are not checked).
    fn check_modifiers(&mut self, opcode: &str, toks: &[Token<'a>], modifiers: &[(usize, usize)]) {
        for &(a, b) in modifiers {
            let first = &toks[a];
            if a == b {
                let name = first.text.strip_prefix('.').unwrap_or(first.text);
                self.check_modifier(opcode, name, first);
                continue;
            }
            // `.L2::128B.v4` is read as `.L2`, `:`, `:`, `128B.v4` (a number token runs on
            // through dots); `.2d` as `.`, `2d`: one modifier per dot-separated part.
            let joined = toks[a..=b].iter().map(|t| t.text).collect::<String>();
            for name in joined.split('.').filter(|p| !p.is_empty()) {
                self.check_modifier(opcode, name, first);
            }
        }
    }

    fn check_modifier(&mut self, opcode: &str, name: &str, at: &Token<'a>) {
        if instr::modifier_allowed(opcode, name) == Some(false) {
            self.notes.push(ModuleNote {
                line: at.line,
                column: at.col,
                kind: NoteKind::UnknownModifier {
                    opcode: opcode.to_string(),
                    modifier: name.to_string(),
                },
            });
        }
    }

    /// Branch targets and names not declared where used: each must be a label of the body.
    fn resolve_body(&mut self, scope: &mut BodyScope<'a>) {
        for u in scope.uses.drain(..) {
            if scope.labels.contains(u.name) {
                continue;
            }
            let kind = if u.branch {
                NoteKind::UndefinedLabel {
                    label: u.name.to_string(),
                    function: u.function.to_string(),
                }
            } else {
                NoteKind::Undeclared {
                    name: u.name.to_string(),
                    function: u.function.to_string(),
                }
            };
            self.notes.push(ModuleNote {
                line: u.line,
                column: u.col,
                kind,
            });
        }
    }

    /// Skip a balanced `{ … }` block whose `{` was just consumed.
    pub(super) fn skip_body(&mut self, open_line: u32, open_col: u32) -> Result<(), PtxError> {
        let mut depth = 1usize;
        while let Some(t) = self.bump()? {
            if t.is_punct('{') {
                depth += 1;
            } else if t.is_punct('}') {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
        }
        Err(self.unclosed_body(open_line, open_col))
    }

    /// The end of the file inside a body: where it ended, and where the body opened.
    fn unclosed_body(&self, open_line: u32, open_col: u32) -> PtxError {
        let (l, c) = self.end_pos();
        PtxError::new(
            l,
            c,
            PtxErrorKind::Syntax,
            format!(
                "expected `}}` closing the body opened at line {open_line} column {open_col}, found end of file"
            ),
        )
    }
}

/// Tokens in one body statement (the longest producer statements, `wgmma` with 128
/// accumulator registers, have a few hundred).
const MAX_STATEMENT_TOKENS: usize = 1 << 16;

/// A statement's tokens as text for a message, shortened.
fn statement_text(toks: &[Token<'_>]) -> String {
    let mut s = String::new();
    for t in toks {
        if s.len() > 60 {
            s.push_str(" …");
            break;
        }
        let glue = t.kind == TokenKind::Directive
            || matches!(t.text, "," | "]" | ")" | "}" | ":")
            || s.ends_with(['[', '(', '{', '@', '!', ':'])
            || s.is_empty();
        if !glue {
            s.push(' ');
        }
        s.push_str(t.text);
    }
    s
}
