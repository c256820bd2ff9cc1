//! The reader's cursor over the token stream, and module level: the header directives
//! (`.version`, `.target`, `.address_size`), linkage, aliases, and the statements it skips.

use std::collections::{HashMap, HashSet};

use super::scope::{BodyScope, Decl, DeclScan, IncompleteScan, SIZED_SPACES};
use super::*;
use crate::lexer::Lexer;

/// A one-token-lookahead parser over the pull lexer: memory does not grow with the file.
pub(super) struct Parser<'a> {
    pub(super) lx: Lexer<'a>,
    pub(super) cur: Option<Token<'a>>,
    /// The token consumed last.
    pub(super) prev: Option<Token<'a>>,
    pub(super) version: Option<(u32, u32)>,
    pub(super) notes: Vec<ModuleNote>,
    /// Whether function bodies are read statement by statement ([`PtxModule::read`]) or
    /// skipped as balanced braces ([`PtxModule::parse`], for fragments).
    pub(super) check_bodies: bool,
    /// Names declared at module level (variables, functions, aliases, module `.reg`s) and
    /// `%name<N>` ranges, for the names bodies use.
    pub(super) module_names: HashSet<&'a str>,
    pub(super) module_ranges: HashMap<&'a str, u64>,
    pub(super) body: BodyScope<'a>,
    /// Set while a module-level variable declaration without `.extern` is skipped.
    pub(super) incomplete: Option<IncompleteScan<'a>>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(src: &'a str) -> Result<Parser<'a>, PtxError> {
        Parser::with_lexer(Lexer::new(src, true))
    }

    pub(super) fn with_lexer(mut lx: Lexer<'a>) -> Result<Parser<'a>, PtxError> {
        let cur = lx.next_token()?;
        Ok(Parser {
            lx,
            cur,
            prev: None,
            version: None,
            notes: Vec::new(),
            check_bodies: false,
            module_names: HashSet::new(),
            module_ranges: HashMap::new(),
            body: BodyScope::default(),
            incomplete: None,
        })
    }

    pub(super) fn peek(&self) -> Option<&Token<'a>> {
        self.cur.as_ref()
    }

    pub(super) fn bump(&mut self) -> Result<Option<Token<'a>>, PtxError> {
        let next = self.lx.next_token()?;
        let t = std::mem::replace(&mut self.cur, next);
        if t.is_some() {
            self.prev.clone_from(&t);
        }
        Ok(t)
    }

    pub(super) fn end_pos(&self) -> (u32, u32) {
        self.lx.position()
    }

    pub(super) fn err(&self, expected: &str) -> PtxError {
        match self.peek() {
            Some(t) => PtxError::new(
                t.line,
                t.col,
                PtxErrorKind::Syntax,
                format!("expected {expected}, found `{}`", t.text),
            ),
            None => {
                let (l, c) = self.end_pos();
                PtxError::new(
                    l,
                    c,
                    PtxErrorKind::Syntax,
                    format!("expected {expected}, found end of file"),
                )
            }
        }
    }

    pub(super) fn eat_punct(&mut self, c: char) -> Result<bool, PtxError> {
        if self.peek().is_some_and(|t| t.is_punct(c)) {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub(super) fn expect_punct(&mut self, c: char, what: &str) -> Result<(), PtxError> {
        if self.eat_punct(c)? {
            Ok(())
        } else {
            Err(self.err(what))
        }
    }

    pub(super) fn number(&mut self, what: &str) -> Result<u64, PtxError> {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Number => {
                let v = parse_int(t.text).ok_or_else(|| self.err(what))?;
                self.bump()?;
                Ok(v)
            }
            _ => Err(self.err(what)),
        }
    }

    /// Note `feature` at `t` when the module's version predates it.
    pub(super) fn gate(&mut self, feature: &'static str, line: u32, column: u32) {
        if let (Some(since), Some(version)) = (introduced(feature), self.version) {
            if version < since {
                self.notes.push(ModuleNote {
                    line,
                    column,
                    kind: NoteKind::NeedsVersion {
                        feature,
                        since,
                        version,
                    },
                });
            }
        }
    }

    pub(super) fn gate_tok(&mut self, t: &Token<'_>) {
        if let Some(&(f, _)) = INTRODUCED.iter().find(|(f, _)| *f == t.text) {
            self.gate(f, t.line, t.col);
        }
    }

    pub(super) fn module(mut self, require_header: bool) -> Result<PtxModule, PtxError> {
        let mut m = PtxModule::default();
        if require_header {
            self.header(&mut m)?;
        }
        let mut linkage = Linkage::default();
        let mut pending_linkage = false;
        while let Some(t) = self.bump()? {
            if t.kind != TokenKind::Directive {
                if t.is_punct('@') && self.peek().is_some_and(|n| n.is_punct('@')) {
                    // `@@DWARF …` lines of old producers (PTX ISA ch. 11 debugging directives).
                    self.skip_line_tail(t.line)?;
                    continue;
                }
                if t.is_punct(';') && !pending_linkage {
                    continue;
                }
                let what = if t.is_punct('}') {
                    "a directive at module level (this `}` closes nothing)"
                } else {
                    "a directive at module level (`.func`, `.entry`, a variable, …)"
                };
                return Err(PtxError::new(
                    t.line,
                    t.col,
                    PtxErrorKind::Syntax,
                    format!("expected {what}, found `{}`", t.text),
                ));
            }
            match t.text {
                ".version" | ".target" | ".address_size" => {
                    self.header_directive(&t, &mut m)?;
                }
                ".extern" => linkage.is_extern = true,
                ".visible" => linkage.is_visible = true,
                ".weak" => linkage.is_weak = true,
                ".common" => linkage.is_common = true,
                ".hidden" => {
                    // No ptxas reads it (measured: 12.9, 13.0.48 and 13.5.37 at every
                    // `.version` up to 9.5: "Parsing error near '.hidden'"), though producers
                    // write it: read on, and report it.
                    linkage.is_hidden = true;
                    self.notes.push(ModuleNote {
                        line: t.line,
                        column: t.col,
                        kind: NoteKind::Placement {
                            feature: ".hidden".into(),
                            allowed: "no PTX ISA version up to 9.5 has a `.hidden` directive (ptxas 12.9, 13.0 and 13.5: \"Parsing error near '.hidden'\"); use `.visible` or no linkage directive",
                        },
                    });
                }
                ".func" | ".entry" => {
                    let kind = if t.text == ".func" {
                        FunctionKind::Func
                    } else {
                        FunctionKind::Entry
                    };
                    let f = self.function(kind, t.line, linkage)?;
                    m.functions.push(f);
                    linkage = Linkage::default();
                    pending_linkage = false;
                    continue;
                }
                ".alias" => {
                    if let Some(n) = self
                        .peek()
                        .filter(|n| n.kind == TokenKind::Ident)
                        .map(|n| n.text)
                    {
                        self.module_names.insert(n);
                    }
                    let a = self.ident("an alias name after `.alias`")?;
                    self.expect_punct(',', "`,` between the alias and the aliasee")?;
                    let b = self.ident("the aliasee's name after `,`")?;
                    self.eat_punct(';')?;
                    m.aliases.push((a, b));
                }
                d if LINE_DIRECTIVES.contains(&d) => {
                    self.skip_line_tail(t.line)?;
                }
                ".section" => {
                    self.skip_statement(t.line)?;
                }
                _ => {
                    if SIZED_SPACES.contains(&t.text) && !linkage.is_extern {
                        self.incomplete = Some(IncompleteScan::default());
                    }
                    self.skip_statement(t.line)?;
                    if let Some(scan) = self.incomplete.take() {
                        self.note_incomplete(scan);
                    }
                    linkage = Linkage::default();
                    pending_linkage = false;
                    self.gate_tok(&t);
                    continue;
                }
            }
            self.gate_tok(&t);
            pending_linkage = matches!(
                t.text,
                ".extern" | ".visible" | ".weak" | ".common" | ".hidden"
            );
        }
        m.notes = std::mem::take(&mut self.notes);
        m.notes.extend(self.lx.non_ascii.iter().map(|n| ModuleNote {
            line: n.line,
            column: n.col,
            kind: NoteKind::NonAscii { byte: n.byte },
        }));
        m.notes.sort_by_key(|n| (n.line, n.column));
        Ok(m)
    }

    /// `.version` then `.target` first, as ptxas requires.
    pub(super) fn header(&mut self, m: &mut PtxModule) -> Result<(), PtxError> {
        for want in [".version", ".target"] {
            match self.peek() {
                Some(t) if t.is_directive(want) => {
                    let t = t.clone();
                    self.bump()?;
                    self.header_directive(&t, m)?;
                }
                other => {
                    let (line, col, found) = match other {
                        Some(t) => (t.line, t.col, format!("`{}`", t.text)),
                        None => {
                            let (l, c) = self.end_pos();
                            (l, c, "end of file".to_string())
                        }
                    };
                    return Err(PtxError::new(
                        line,
                        col,
                        PtxErrorKind::Header,
                        format!(
                            "expected `{want}` (a PTX module starts with `.version MAJOR.MINOR` then `.target sm_XX`, and `.address_size 64` for 64-bit code; ptxas: \"Missing {want} directive\"), found {found}"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    fn header_directive(&mut self, t: &Token<'a>, m: &mut PtxModule) -> Result<(), PtxError> {
        match t.text {
            ".version" => {
                let v = self
                    .peek()
                    .filter(|n| n.kind == TokenKind::Number && n.line == t.line)
                    .map(|n| n.text);
                let Some(v) = v.filter(|v| parse_version(v).is_some()) else {
                    return Err(self.err("a version `MAJOR.MINOR` after `.version`"));
                };
                if m.version.is_some() {
                    return Err(PtxError::new(
                        t.line,
                        t.col,
                        PtxErrorKind::Syntax,
                        "a second `.version`; a module has one, at its start",
                    ));
                }
                m.version = Some(v.to_string());
                self.version = parse_version(v);
                self.bump()?;
            }
            ".target" => {
                let before = m.target.len();
                while let Some(n) = self.peek().filter(|n| n.line == t.line) {
                    if n.kind == TokenKind::Ident {
                        m.target.push(n.text.to_string());
                    } else if !n.is_punct(',') {
                        break;
                    }
                    self.bump()?;
                }
                if m.target.len() == before {
                    return Err(self.err("a target name after `.target`"));
                }
            }
            _ => {
                let n = self.number("32 or 64 after `.address_size`")?;
                let Some(size) = u32::try_from(n).ok().and_then(AddressSize::from_bits) else {
                    return Err(PtxError::new(
                        t.line,
                        t.col,
                        PtxErrorKind::Syntax,
                        format!("expected 32 or 64 after `.address_size`, found {n}"),
                    ));
                };
                if m.address_size.is_some() {
                    // ptxas 12.9: "Parsing error near '.address_size': syntax error".
                    return Err(PtxError::new(
                        t.line,
                        t.col,
                        PtxErrorKind::Syntax,
                        "a second `.address_size`; a module has at most one, after `.target`",
                    ));
                }
                m.address_size = Some(size);
            }
        }
        Ok(())
    }

    fn ident(&mut self, what: &str) -> Result<String, PtxError> {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Ident => {
                let s = t.text.to_string();
                self.bump()?;
                Ok(s)
            }
            _ => Err(self.err(what)),
        }
    }

    /// Skip the rest of a directive without `;` that ends at its line's end.
    pub(super) fn skip_line_tail(&mut self, line: u32) -> Result<(), PtxError> {
        while self.peek().is_some_and(|n| n.line == line) {
            self.bump()?;
        }
        Ok(())
    }

    /// Skip an unknown module-level statement: up to a `;` or a closing `}` (plus an optional
    /// `;`) at bracket depth 0, or to the end of the line when the statement has neither
    /// (`.section` headers and other line-oriented producer directives). An unclosed bracket
    /// is an error at the bracket.
    fn skip_statement(&mut self, line: u32) -> Result<(), PtxError> {
        let mut open: Vec<(char, u32, u32)> = Vec::new();
        let mut scan = DeclScan::default();
        while let Some(t) = self.peek() {
            if open.is_empty() && t.line != line && t.kind == TokenKind::Directive {
                let continues = self
                    .prev
                    .as_ref()
                    .is_some_and(|p| p.is_punct('{') || p.is_punct(','));
                if !continues {
                    // A new statement started on a later line.
                    return Ok(());
                }
            }
            let t = t.clone();
            self.bump()?;
            if let Some(s) = self.incomplete.as_mut() {
                s.feed(&t);
            }
            if self.check_bodies {
                match scan.feed(&t) {
                    Some(Decl::Name(n)) => {
                        self.module_names.insert(n);
                    }
                    Some(Decl::Range(n, c)) => {
                        let e = self.module_ranges.entry(n).or_insert(0);
                        *e = (*e).max(c);
                    }
                    None => {}
                }
            }
            if t.is_punct('{') || t.is_punct('(') || t.is_punct('[') {
                if open.len() >= MAX_DEPTH {
                    return Err(PtxError::new(
                        t.line,
                        t.col,
                        PtxErrorKind::Syntax,
                        format!("brackets nested deeper than {MAX_DEPTH}"),
                    ));
                }
                let c = t.text.chars().next().unwrap_or('{');
                open.push((c, t.line, t.col));
            } else if t.is_punct('}') || t.is_punct(')') || t.is_punct(']') {
                let want = match t.text {
                    "}" => '{',
                    ")" => '(',
                    _ => '[',
                };
                match open.pop() {
                    Some((c, _, _)) if c == want => {}
                    _ => {
                        return Err(PtxError::new(
                            t.line,
                            t.col,
                            PtxErrorKind::Syntax,
                            format!("`{}` closes nothing open in this statement", t.text),
                        ))
                    }
                }
                if open.is_empty() && t.is_punct('}') {
                    self.eat_punct(';')?;
                    return Ok(());
                }
            } else if open.is_empty() && t.is_punct(';') {
                return Ok(());
            }
        }
        if let Some((c, l, col)) = open.last() {
            return Err(PtxError::new(
                *l,
                *col,
                PtxErrorKind::Syntax,
                format!("`{c}` opened here is never closed before the end of the file"),
            ));
        }
        Ok(())
    }
}
