//! Conditions: a quantifier over a proposition on final register and memory values, and
//! their parser.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::parse_int;

#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr)]
pub enum Quantifier {
    #[strum(serialize = "exists")]
    Exists,
    #[strum(serialize = "~exists")]
    NotExists,
    #[strum(serialize = "forall")]
    Forall,
}

impl Quantifier {
    pub fn keyword(self) -> &'static str {
        self.into()
    }
}

/// A value observed at the end of an execution.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Term {
    /// A register of thread `thread` (`P1:r0` or `1:r0`).
    Reg { thread: usize, reg: String },
    /// The final value of a memory location.
    Loc(String),
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Reg { thread, reg } => write!(f, "P{thread}:{reg}"),
            Term::Loc(l) => f.write_str(l),
        }
    }
}

/// One side of a [`Prop::Rel`] comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Term(Term),
    Const(i64),
}

impl Value {
    fn get(&self, value: &dyn Fn(&Term) -> Option<i64>) -> Option<i64> {
        match self {
            Value::Term(t) => value(t),
            Value::Const(c) => Some(*c),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Term(t) => write!(f, "{t}"),
            Value::Const(c) => write!(f, "{c}"),
        }
    }
}

/// A proposition over final values. `And`/`Or` are n-ary and kept flat, so printing and parsing
/// give back the same tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prop {
    True,
    Cmp {
        term: Term,
        eq: bool,
        val: i64,
    },
    /// A comparison of anything else: two terms (`P0:r1 == P0:r2`), or two constants
    /// (`0 == 0`, CADP's condition that only asks for a terminating execution).
    Rel {
        a: Value,
        eq: bool,
        b: Value,
    },
    And(Vec<Prop>),
    Or(Vec<Prop>),
    Not(Box<Prop>),
}

impl Prop {
    /// Three-valued evaluation: `None` when a value it needs is unknown.
    pub fn eval(&self, value: &dyn Fn(&Term) -> Option<i64>) -> Option<bool> {
        match self {
            Prop::True => Some(true),
            Prop::Cmp { term, eq, val } => value(term).map(|v| (v == *val) == *eq),
            Prop::Rel { a, eq, b } => match (a.get(value), b.get(value)) {
                (Some(x), Some(y)) => Some((x == y) == *eq),
                _ => None,
            },
            Prop::Not(p) => p.eval(value).map(|b| !b),
            Prop::And(ps) => {
                let mut unknown = false;
                for p in ps {
                    match p.eval(value) {
                        Some(false) => return Some(false),
                        None => unknown = true,
                        Some(true) => {}
                    }
                }
                if unknown {
                    None
                } else {
                    Some(true)
                }
            }
            Prop::Or(ps) => {
                let mut unknown = false;
                for p in ps {
                    match p.eval(value) {
                        Some(true) => return Some(true),
                        None => unknown = true,
                        Some(false) => {}
                    }
                }
                if unknown {
                    None
                } else {
                    Some(false)
                }
            }
        }
    }

    /// Every term the proposition mentions.
    pub fn terms(&self, out: &mut BTreeSet<Term>) {
        match self {
            Prop::True => {}
            Prop::Cmp { term, .. } => {
                out.insert(term.clone());
            }
            Prop::Rel { a, b, .. } => {
                for v in [a, b] {
                    if let Value::Term(t) = v {
                        out.insert(t.clone());
                    }
                }
            }
            Prop::Not(p) => p.terms(out),
            Prop::And(ps) | Prop::Or(ps) => ps.iter().for_each(|p| p.terms(out)),
        }
    }

    fn fmt_prec(&self, f: &mut fmt::Formatter<'_>, prec: u8) -> fmt::Result {
        // prec: 0 = top (or), 1 = inside and, 2 = inside not
        match self {
            Prop::True => f.write_str("true"),
            Prop::Cmp { term, eq, val } => {
                write!(f, "{term} {} {val}", if *eq { "==" } else { "!=" })
            }
            Prop::Rel { a, eq, b } => {
                write!(f, "{a} {} {b}", if *eq { "==" } else { "!=" })
            }
            Prop::Not(p) => {
                f.write_str("~")?;
                p.fmt_prec(f, 2)
            }
            Prop::And(ps) | Prop::Or(ps) => {
                let (sep, my) = if matches!(self, Prop::And(_)) {
                    (" /\\ ", 1)
                } else {
                    (" \\/ ", 0)
                };
                let paren = prec > my;
                if paren {
                    f.write_str("(")?;
                }
                for (i, p) in ps.iter().enumerate() {
                    if i > 0 {
                        f.write_str(sep)?;
                    }
                    p.fmt_prec(f, my + 1)?;
                }
                if paren {
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Prop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_prec(f, 0)
    }
}

/// The quantified condition of a test. In YAML it is one string, e.g.
/// `'exists (P1:r0 == 1 /\ P1:r1 == 0)'`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Condition {
    pub quantifier: Quantifier,
    pub prop: Prop,
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (", self.quantifier.keyword())?;
        self.prop.fmt_prec(f, 0)?;
        f.write_str(")")
    }
}

impl From<Condition> for String {
    fn from(c: Condition) -> String {
        c.to_string()
    }
}

impl TryFrom<String> for Condition {
    type Error = ConditionError;
    fn try_from(s: String) -> Result<Condition, ConditionError> {
        parse_condition(&s)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Int(i64),
    Eq,
    Ne,
    And,
    Or,
    Not,
    LParen,
    RParen,
}

/// Why a condition does not parse: what was found where something else was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConditionError {
    #[error("bad number `{0}`")]
    BadNumber(String),
    #[error("unexpected character `{0}` in condition")]
    UnexpectedCharacter(char),
    #[error("the condition nests `(` and `~` more than {MAX_CONDITION_DEPTH} deep; at most {MAX_CONDITION_DEPTH} levels")]
    TooDeep,
    /// `found` is the token met (or `None` at the end), as the parser shows it.
    #[error("expected {expected}, found {found}")]
    Expected { expected: String, found: String },
    #[error("unexpected {0} after the condition")]
    Trailing(String),
    #[error("bad thread in `{0}` (expected P<n>:reg)")]
    BadThread(String),
    #[error("missing register in `{0}`")]
    MissingRegister(String),
}

fn expected(what: impl Into<String>, found: &impl fmt::Debug) -> ConditionError {
    ConditionError::Expected {
        expected: what.into(),
        found: format!("{found:?}"),
    }
}

fn lex_condition(s: &str) -> Result<Vec<Tok>, ConditionError> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if s[i..].starts_with("/\\") {
            out.push(Tok::And);
            i += 2;
        } else if s[i..].starts_with("\\/") {
            out.push(Tok::Or);
            i += 2;
        } else if s[i..].starts_with("==") {
            out.push(Tok::Eq);
            i += 2;
        } else if s[i..].starts_with("!=") {
            out.push(Tok::Ne);
            i += 2;
        } else if c == '=' {
            out.push(Tok::Eq);
            i += 1;
        } else if c == '~' || c == '!' {
            out.push(Tok::Not);
            i += 1;
        } else if c == '(' {
            out.push(Tok::LParen);
            i += 1;
        } else if c == ')' {
            out.push(Tok::RParen);
            i += 1;
        } else if c == '-' || c.is_ascii_digit() {
            let start = i;
            i += 1;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            let text = &s[start..i];
            let v = parse_int(text).ok_or_else(|| ConditionError::BadNumber(text.to_string()))?;
            // `1:r0` is a register term in herd's short form, not a number.
            if i < b.len() && b[i] == b':' && !text.starts_with('-') {
                let rstart = i + 1;
                let mut j = rstart;
                while j < b.len()
                    && ((b[j] as char).is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'%')
                {
                    j += 1;
                }
                out.push(Tok::Word(format!("P{}:{}", v, &s[rstart..j])));
                i = j;
            } else {
                out.push(Tok::Int(v));
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == '%' {
            let start = i;
            while i < b.len()
                && ((b[i] as char).is_ascii_alphanumeric() || matches!(b[i], b'_' | b':' | b'%'))
            {
                i += 1;
            }
            let mut word = s[start..i].to_string();
            // `P3: r0` (Dat3M accepts a space after the thread's colon).
            if word.ends_with(':') {
                while i < b.len() && (b[i] as char).is_whitespace() {
                    i += 1;
                }
                let rs = i;
                while i < b.len()
                    && ((b[i] as char).is_ascii_alphanumeric() || matches!(b[i], b'_' | b'%'))
                {
                    i += 1;
                }
                word.push_str(&s[rs..i]);
            }
            out.push(Tok::Word(word));
        } else {
            return Err(ConditionError::UnexpectedCharacter(c));
        }
    }
    Ok(out)
}

/// The deepest nesting of `(` and `~` a condition may have: the parser and the evaluator
/// recurse once per level, and 10,000 levels overflow the stack. Real conditions nest a few
/// levels.
pub const MAX_CONDITION_DEPTH: usize = 100;

struct CondParser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

impl CondParser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn or(&mut self) -> Result<Prop, ConditionError> {
        let mut v = vec![self.and()?];
        while self.peek() == Some(&Tok::Or) {
            self.pos += 1;
            v.push(self.and()?);
        }
        Ok(flatten(v, false))
    }
    fn and(&mut self) -> Result<Prop, ConditionError> {
        let mut v = vec![self.unary()?];
        while self.peek() == Some(&Tok::And) {
            self.pos += 1;
            v.push(self.unary()?);
        }
        Ok(flatten(v, true))
    }
    fn unary(&mut self) -> Result<Prop, ConditionError> {
        if matches!(self.peek(), Some(Tok::Not | Tok::LParen)) {
            self.depth += 1;
            if self.depth > MAX_CONDITION_DEPTH {
                return Err(ConditionError::TooDeep);
            }
            let r = self.unary_inner();
            self.depth -= 1;
            return r;
        }
        self.unary_inner()
    }
    fn unary_inner(&mut self) -> Result<Prop, ConditionError> {
        match self.next() {
            Some(Tok::Not) => Ok(Prop::Not(Box::new(self.unary()?))),
            Some(Tok::LParen) => {
                let p = self.or()?;
                match self.next() {
                    Some(Tok::RParen) => Ok(p),
                    other => Err(expected("`)` in condition", &other)),
                }
            }
            Some(Tok::Word(w)) if w == "true" => Ok(Prop::True),
            Some(first @ (Tok::Word(_) | Tok::Int(_))) => {
                let shown = match &first {
                    Tok::Word(w) => w.clone(),
                    Tok::Int(v) => v.to_string(),
                    _ => String::new(),
                };
                let a = self.value(first)?;
                let eq = match self.next() {
                    Some(Tok::Eq) => true,
                    Some(Tok::Ne) => false,
                    other => return Err(expected(format!("`==` or `!=` after `{shown}`"), &other)),
                };
                let b = match self.next() {
                    Some(t @ (Tok::Word(_) | Tok::Int(_))) => self.value(t)?,
                    other => return Err(expected(format!("a number after `{shown}`"), &other)),
                };
                Ok(match (a, b) {
                    (Value::Term(term), Value::Const(val)) => Prop::Cmp { term, eq, val },
                    (a, b) => Prop::Rel { a, eq, b },
                })
            }
            other => Err(expected("a comparison in condition", &other)),
        }
    }
}

impl CondParser {
    fn value(&self, t: Tok) -> Result<Value, ConditionError> {
        match t {
            Tok::Int(v) => Ok(Value::Const(v)),
            Tok::Word(w) => Ok(Value::Term(parse_term(&w)?)),
            other => Err(expected("a term or a number", &other)),
        }
    }
}

fn flatten(v: Vec<Prop>, is_and: bool) -> Prop {
    if v.len() == 1 {
        return v.into_iter().next().unwrap_or(Prop::True);
    }
    let mut out = Vec::new();
    for p in v {
        match (p, is_and) {
            (Prop::And(ps), true) => out.extend(ps),
            (Prop::Or(ps), false) => out.extend(ps),
            (p, _) => out.push(p),
        }
    }
    if is_and {
        Prop::And(out)
    } else {
        Prop::Or(out)
    }
}

fn parse_term(w: &str) -> Result<Term, ConditionError> {
    if let Some((t, r)) = w.split_once(':') {
        let idx = t
            .strip_prefix('P')
            .unwrap_or(t)
            .parse::<usize>()
            .map_err(|_| ConditionError::BadThread(w.to_string()))?;
        if r.is_empty() {
            return Err(ConditionError::MissingRegister(w.to_string()));
        }
        Ok(Term::Reg {
            thread: idx,
            reg: r.to_string(),
        })
    } else {
        Ok(Term::Loc(w.to_string()))
    }
}

/// Parses `exists (...)`, `~exists (...)`, `forall (...)`; a bare proposition means `exists`.
pub fn parse_condition(s: &str) -> Result<Condition, ConditionError> {
    let toks = lex_condition(s)?;
    let mut p = CondParser {
        toks,
        pos: 0,
        depth: 0,
    };
    let quantifier = match (p.toks.first(), p.toks.get(1)) {
        (Some(Tok::Word(w)), _) if w == "exists" => {
            p.pos = 1;
            Quantifier::Exists
        }
        (Some(Tok::Word(w)), _) if w == "forall" => {
            p.pos = 1;
            Quantifier::Forall
        }
        (Some(Tok::Not), Some(Tok::Word(w))) if w == "exists" => {
            p.pos = 2;
            Quantifier::NotExists
        }
        _ => Quantifier::Exists,
    };
    let prop = p.or()?;
    if p.pos < p.toks.len() {
        return Err(ConditionError::Trailing(format!("{:?}", p.toks[p.pos])));
    }
    Ok(Condition { quantifier, prop })
}
