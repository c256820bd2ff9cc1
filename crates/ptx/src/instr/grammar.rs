//! The statement grammar (PTX ISA §9.2 "PTX instructions"): an optional guard `@p` or `@!p`,
//! an opcode with dot-modifiers, and comma-separated operands; the `;` is the caller's.

use crate::lexer::{Token, TokenKind};

/// Where a statement breaks the grammar: the index of the offending token (`tokens.len()` for
/// the end of the statement) and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShapeError {
    pub at: usize,
    pub message: String,
}

/// The parts of one statement, as token indices (inclusive ranges) into the tokens read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Shape {
    /// `(negated, predicate token)`.
    pub guard: Option<(bool, usize)>,
    pub opcode: usize,
    /// One range per modifier: `.shared::cta`, `.L2::128B` (`.L2`, `:`, `:`, `128B`), `.2d`.
    pub modifiers: Vec<(usize, usize)>,
    pub operands: Vec<(usize, usize)>,
}

/// Bracket nesting one statement may use (deeper is refused, never a stack overflow).
const MAX_NESTING: usize = 64;

/// Read one statement (without `;`) from its tokens. Every identifier in an operand (registers,
/// labels, variables, functions) and the guard predicate are appended to `names` as token
/// indices, so a caller can check that each is declared.
pub(crate) fn read_statement(t: &[Token<'_>], names: &mut Vec<usize>) -> Result<Shape, ShapeError> {
    let mut c = Cursor { t, i: 0, names };
    let mut shape = Shape::default();
    if c.punct('@') {
        c.i += 1;
        let negated = c.punct('!');
        if negated {
            c.i += 1;
        }
        match c.peek() {
            Some(p) if p.kind == TokenKind::Ident => {
                shape.guard = Some((negated, c.i));
                c.names.push(c.i);
                c.i += 1;
            }
            _ => return Err(c.err("a predicate after `@` (`@%p1`, `@!%p1`)")),
        }
    }
    match c.peek() {
        Some(o) if o.kind == TokenKind::Ident && !o.text.starts_with(['%', '$']) => {
            shape.opcode = c.i;
            c.i += 1;
        }
        _ if shape.guard.is_some() => return Err(c.err("an instruction after the guard")),
        _ => return Err(c.err("an instruction opcode")),
    }
    // Modifiers: `.name`, `.name::sub` (`::` may be followed by a number: `.L2::128B`,
    // `.cta_group::1`), and `.2d`-style names that start with a digit.
    loop {
        let start = c.i;
        match c.peek() {
            Some(d) if d.kind == TokenKind::Directive => c.i += 1,
            Some(d) if d.is_punct('.') => {
                if c.t
                    .get(c.i + 1)
                    .is_some_and(|n| n.kind == TokenKind::Number)
                {
                    c.i += 2;
                } else {
                    return Err(c.err("a modifier name after `.`"));
                }
            }
            _ => break,
        }
        while c.punct(':')
            && c.t.get(c.i + 1).is_some_and(|n| n.is_punct(':'))
            && c.t
                .get(c.i + 2)
                .is_some_and(|n| matches!(n.kind, TokenKind::Ident | TokenKind::Number))
        {
            c.i += 3;
        }
        shape.modifiers.push((start, c.i - 1));
    }
    if c.i < t.len() {
        shape.operands = c.list(None, 0)?;
    }
    if let Some(x) = c.peek() {
        let what = if c.t.get(c.i.wrapping_sub(1)).is_some_and(ends_operand) && starts_operand(x) {
            "`,` between operands or `;` at the end of the statement"
        } else {
            "`,` or `;` after an operand"
        };
        return Err(c.err(what));
    }
    Ok(shape)
}

fn ends_operand(t: &Token<'_>) -> bool {
    matches!(
        t.kind,
        TokenKind::Ident | TokenKind::Number | TokenKind::Directive
    ) || t.is_punct(']')
        || t.is_punct('}')
        || t.is_punct(')')
}

fn starts_operand(t: &Token<'_>) -> bool {
    matches!(t.kind, TokenKind::Ident | TokenKind::Number)
        || t.is_punct('[')
        || t.is_punct('{')
        || t.is_punct('(')
}

struct Cursor<'t, 'a, 'n> {
    t: &'t [Token<'a>],
    i: usize,
    names: &'n mut Vec<usize>,
}

impl Cursor<'_, '_, '_> {
    fn peek(&self) -> Option<&Token<'_>> {
        self.t.get(self.i)
    }

    fn punct(&self, c: char) -> bool {
        self.peek().is_some_and(|t| t.is_punct(c))
    }

    fn err(&self, expected: &str) -> ShapeError {
        let found = match self.peek() {
            Some(t) => format!("`{}`", t.text),
            None => "the end of the statement".to_string(),
        };
        ShapeError {
            at: self.i,
            message: format!("expected {expected}, found {found}"),
        }
    }

    /// `operand (, operand)*`, up to `close` (not consumed) or the end; an empty list only
    /// inside brackets (`call f, ();`).
    fn list(
        &mut self,
        close: Option<char>,
        depth: usize,
    ) -> Result<Vec<(usize, usize)>, ShapeError> {
        let mut out = Vec::new();
        if close.is_some_and(|c| self.punct(c)) {
            return Ok(out);
        }
        loop {
            let start = self.i;
            self.expr(depth)?;
            out.push((start, self.i - 1));
            if self.punct(',') {
                self.i += 1;
                continue;
            }
            return Ok(out);
        }
    }

    /// `unary* primary suffix* (binop unary* primary suffix*)*`: registers `%r1`, `%tid.x`,
    /// predicates `!%p`, pairs `%r1|%p1`, immediates `-1`, `0f3F800000`, addresses
    /// `[%rd1+-8]`, vectors `{%f1, _}`, call lists `(param0, param1)`, `sym+4`.
    fn expr(&mut self, depth: usize) -> Result<(), ShapeError> {
        loop {
            while self.punct('-') || self.punct('!') || self.punct('~') || self.punct('+') {
                self.i += 1;
            }
            self.primary(depth)?;
            while self.peek().is_some_and(|t| t.kind == TokenKind::Directive) {
                self.i += 1;
            }
            let two =
                |a: char, s: &Self| s.punct(a) && s.t.get(s.i + 1).is_some_and(|n| n.is_punct(a));
            if two('<', self) || two('>', self) {
                self.i += 2;
            } else if ['+', '-', '*', '/', '|', '&', '^']
                .iter()
                .any(|&c| self.punct(c))
            {
                self.i += 1;
            } else {
                return Ok(());
            }
        }
    }

    fn primary(&mut self, depth: usize) -> Result<(), ShapeError> {
        let Some(t) = self.peek() else {
            return Err(self.err("an operand"));
        };
        match t.kind {
            TokenKind::Ident => {
                self.names.push(self.i);
                self.i += 1;
                // PTX ISA §6.4.2 (arrays as operands): an array element by index, `a[0]`,
                // `a[%r1]`, `a[%r1+4]`; each index is a bracketed expression.
                let mut indices = 0usize;
                while self.punct('[') {
                    indices += 1;
                    if depth + indices > MAX_NESTING {
                        return Err(self.err(&format!("at most {MAX_NESTING} nested brackets")));
                    }
                    self.i += 1;
                    self.expr(depth + indices)?;
                    if self.punct(']') {
                        self.i += 1;
                    } else {
                        return Err(self.err("`]` closing the array index"));
                    }
                }
                Ok(())
            }
            TokenKind::Number => {
                self.i += 1;
                Ok(())
            }
            TokenKind::Punct if t.is_punct('[') || t.is_punct('{') || t.is_punct('(') => {
                let close = match t.text {
                    "[" => ']',
                    "{" => '}',
                    _ => ')',
                };
                if depth >= MAX_NESTING {
                    return Err(self.err(&format!("at most {MAX_NESTING} nested brackets")));
                }
                self.i += 1;
                self.list(Some(close), depth + 1)?;
                if self.punct(close) {
                    self.i += 1;
                    Ok(())
                } else {
                    Err(self.err(&format!("`,` or `{close}` in the bracketed operand")))
                }
            }
            _ => Err(self.err(
                "an operand (a register, a name, a number, `[address]`, `{vector}` or `(list)`)",
            )),
        }
    }
}
