//! What a function body declares and uses: its `{ }` scopes and the names each declares
//! (PTX ISA §5.4 declarations and parameterized names), the names it uses, and the scans
//! over a declaration's tokens that find declared names and unsized arrays.

use std::collections::{HashMap, HashSet};

use super::parse_int;
use crate::lexer::{Token, TokenKind};

/// A name used in a function body, where, and by which function.
#[derive(Debug, Clone, Copy)]
pub(super) struct Use<'a> {
    pub(super) name: &'a str,
    pub(super) line: u32,
    pub(super) col: u32,
    /// The target of a `bra`: must be a label of the function.
    pub(super) branch: bool,
    pub(super) function: &'a str,
}

/// What one function body declares and uses (reused from function to function). A name is
/// visible from its declaration to the end of its `{ }` scope, as ptxas 12.9 holds it
/// (measured: a register used before its `.reg`, or outside the scope that declares it, is
/// "Unknown symbol"); labels are visible in the whole function (a forward `bra` reads).
#[derive(Debug, Default)]
pub(super) struct BodyScope<'a> {
    /// Declared names in scope, with how many scopes declare each.
    pub(super) decls: HashMap<&'a str, u32>,
    /// Names in declaration order, and `%name<N>` ranges, for closing scopes.
    pub(super) stack: Vec<&'a str>,
    pub(super) ranges: Vec<(&'a str, u64)>,
    /// `(stack.len(), ranges.len())` at each open scope.
    pub(super) marks: Vec<(usize, usize)>,
    pub(super) labels: HashSet<&'a str>,
    /// Branch targets and names not declared where used: resolved against the labels at the
    /// end of the body.
    pub(super) uses: Vec<Use<'a>>,
    pub(super) stmt: Vec<Token<'a>>,
    pub(super) names: Vec<usize>,
}

impl<'a> BodyScope<'a> {
    pub(super) fn declare(&mut self, d: Decl<'a>) {
        match d {
            Decl::Name(n) => {
                *self.decls.entry(n).or_insert(0) += 1;
                self.stack.push(n);
            }
            Decl::Range(n, c) => self.ranges.push((n, c)),
        }
    }

    pub(super) fn open(&mut self) {
        self.marks.push((self.stack.len(), self.ranges.len()));
    }

    pub(super) fn close(&mut self) {
        let (names, ranges) = self.marks.pop().unwrap_or((0, 0));
        for n in self.stack.drain(names..) {
            if let Some(c) = self.decls.get_mut(n) {
                *c -= 1;
                if *c == 0 {
                    self.decls.remove(n);
                }
            }
        }
        self.ranges.truncate(ranges);
    }

    pub(super) fn knows(&self, name: &str) -> bool {
        self.decls.contains_key(name)
            || numbered(name)
                .is_some_and(|(prefix, v)| self.ranges.iter().any(|&(p, c)| p == prefix && v < c))
    }
}

/// What a declaration declares.
#[derive(Debug, Clone, Copy)]
pub(super) enum Decl<'a> {
    Name(&'a str),
    /// `%r<5>`: `%r0` to `%r4` (PTX ISA §5.4.6 parameterized variable names).
    Range(&'a str, u64),
}

/// `%r12` as (`%r`, 12).
pub(super) fn numbered(name: &str) -> Option<(&str, u64)> {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits == name.len() {
        return None;
    }
    let (prefix, n) = name.split_at(name.len() - digits);
    // ptxas 12.9 reads `%r01` as a register of `%r<4>` (measured).
    Some((prefix, n.parse().ok()?))
}

/// Finds a declarator `name[]` (an empty first dimension) without an initializer in a variable
/// declaration: PTX ISA §5.4 array declarations leave the size out only for an `.extern`
/// array or one whose initializer gives it.
#[derive(Debug, Default)]
pub(super) struct IncompleteScan<'a> {
    pub(super) depth: usize,
    pub(super) in_init: bool,
    /// The last name at depth 0, and whether the token just read is a `[` opened after it.
    pub(super) name: Option<(&'a str, u32, u32)>,
    pub(super) just_opened: bool,
    pub(super) candidate: Option<(&'a str, u32, u32)>,
    pub(super) found: Option<(&'a str, u32, u32)>,
}

impl<'a> IncompleteScan<'a> {
    pub(super) fn feed(&mut self, t: &Token<'a>) {
        let just_opened = std::mem::take(&mut self.just_opened);
        if self.depth == 0 && (t.is_punct(',') || t.is_punct(';')) {
            self.end_declarator();
        } else if self.depth == 0 && t.is_punct('=') {
            self.in_init = true;
            self.candidate = None;
        } else if t.is_punct('[') || t.is_punct('{') || t.is_punct('(') {
            self.just_opened = self.depth == 0 && t.is_punct('[') && !self.in_init;
            self.depth += 1;
        } else if t.is_punct(']') || t.is_punct('}') || t.is_punct(')') {
            self.depth = self.depth.saturating_sub(1);
            if just_opened && self.candidate.is_none() {
                self.candidate = self.name;
            }
        } else if self.depth == 0 && !self.in_init && t.kind == TokenKind::Ident {
            self.name = Some((t.text, t.line, t.col));
            self.candidate = None;
        }
    }

    fn end_declarator(&mut self) {
        if let Some(c) = self.candidate.take() {
            self.found.get_or_insert(c);
        }
        self.in_init = false;
        self.name = None;
    }

    /// The first incomplete declarator of the statement, when it has ended.
    pub(super) fn finish(mut self) -> Option<(&'a str, u32, u32)> {
        self.end_declarator();
        self.found
    }
}

/// The state spaces of variables whose arrays must be sized (ptxas 12.9 refuses an unsized
/// non-`.extern` array in each, at module level and in a body).
pub(super) const SIZED_SPACES: &[&str] = &[".global", ".const", ".shared", ".local"];

/// Collects the names a declaration statement declares: `%r<5>` (a range `%r0`..`%r4`, PTX ISA
/// §5.4 "parameterized variable names"), `x[4]`, `a, b`; names inside an initializer are not
/// declared.
#[derive(Debug, Default)]
pub(super) struct DeclScan<'a> {
    pub(super) last: Option<&'a str>,
    pub(super) prev_ident: bool,
    /// 1: `<` after a name, 2: the count read.
    pub(super) state: u8,
    pub(super) count: u64,
    pub(super) in_init: bool,
    pub(super) depth: usize,
}

impl<'a> DeclScan<'a> {
    pub(super) fn feed(&mut self, t: &Token<'a>) -> Option<Decl<'a>> {
        match self.state {
            1 if t.kind == TokenKind::Number => {
                self.count = parse_int(t.text).unwrap_or(0);
                self.state = 2;
                return None;
            }
            2 if t.is_punct('>') => {
                self.state = 0;
                self.prev_ident = false;
                return self.last.map(|l| Decl::Range(l, self.count));
            }
            _ => self.state = 0,
        }
        if t.is_punct('<') && self.prev_ident {
            self.state = 1;
            return None;
        }
        self.prev_ident = false;
        if t.is_punct('=') {
            self.in_init = true;
        } else if t.is_punct('{') || t.is_punct('(') || t.is_punct('[') {
            self.depth += 1;
        } else if t.is_punct('}') || t.is_punct(')') || t.is_punct(']') {
            self.depth = self.depth.saturating_sub(1);
        } else if t.is_punct(',') && self.depth == 0 {
            self.in_init = false;
        } else if t.kind == TokenKind::Ident && !self.in_init {
            self.last = Some(t.text);
            self.prev_ident = true;
            return Some(Decl::Name(t.text));
        }
        None
    }
}
