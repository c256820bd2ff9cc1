//! Function prototypes: `.func` and `.entry` headers, their attributes and performance
//! directives, and each parameter's declaration (PTX ISA §5.1.6 kernel and function
//! parameters, §11 directives).

use super::parser::Parser;
use super::*;

impl<'a> Parser<'a> {
    pub(super) fn function(
        &mut self,
        kind: FunctionKind,
        line: u32,
        linkage: Linkage,
    ) -> Result<FunctionDecl, PtxError> {
        // `.func .attribute(.unified(…))` (PTX 8.0+).
        self.skip_attributes(kind)?;
        let mut returns = Vec::new();
        if kind == FunctionKind::Func && self.eat_punct('(')? {
            returns = self.param_list("a return parameter declaration", kind)?;
        }
        self.skip_attributes(kind)?;
        let (name, fname) = match self.peek() {
            Some(t) if t.kind == TokenKind::Ident => {
                let text: &'a str = t.text;
                // Declared from its prototype on (a body may call itself).
                self.module_names.insert(text);
                (text.to_string(), text)
            }
            _ => {
                let what = if kind == FunctionKind::Func {
                    "a function name after `.func`"
                } else {
                    "a kernel name after `.entry`"
                };
                return Err(self.err(what));
            }
        };
        self.bump()?;
        let mut params = Vec::new();
        if self.eat_punct('(')? {
            params = self.param_list("a parameter declaration", kind)?;
        }
        let directives = self.prototype_directives(kind)?;
        let is_definition = if self.eat_punct(';')? {
            false
        } else if self.peek().is_some_and(|t| t.is_punct('{')) {
            let (ol, oc) = self.peek().map_or((line, 1), |t| (t.line, t.col));
            self.bump()?;
            if self.check_bodies {
                self.body(ol, oc, fname, &returns, &params)?;
            } else {
                self.skip_body(ol, oc)?;
            }
            true
        } else if self.peek().is_none_or_directive_start() {
            // An old-style declaration without `;` (old nvcc/nvopencc); ptxas 12.9 accepts
            // it at every version (measured).
            false
        } else {
            return Err(self.err(&format!(
                "`;` or a body `{{` after the prototype of `{name}`"
            )));
        };
        Ok(FunctionDecl {
            kind,
            name,
            is_definition,
            linkage,
            returns,
            params,
            line,
            directives,
        })
    }

    /// The performance, cluster and ABI directives and the pragmas between a prototype and its
    /// body or `;`, with their lines; one that belongs to the other kind of function is a note.
    fn prototype_directives(&mut self, kind: FunctionKind) -> Result<Vec<(String, u32)>, PtxError> {
        let mut directives = Vec::new();
        while let Some(t) = self.peek().cloned() {
            if t.kind != TokenKind::Directive {
                break;
            }
            let (own, other) = match kind {
                FunctionKind::Entry => (ENTRY_DIRECTIVES, FUNC_DIRECTIVES),
                FunctionKind::Func => (FUNC_DIRECTIVES, ENTRY_DIRECTIVES),
            };
            if own.contains(&t.text) || other.contains(&t.text) {
                if other.contains(&t.text) {
                    // ptxas 12.9: "Parsing error near '.noreturn'" on an `.entry`,
                    // "near '.maxntid'" on a `.func`.
                    self.notes.push(ModuleNote {
                        line: t.line,
                        column: t.col,
                        kind: NoteKind::Placement {
                            feature: t.text.to_string(),
                            allowed: if kind == FunctionKind::Entry {
                                "`.noreturn` and `.abi_preserve*` follow a `.func` prototype only (PTX ISA ch. 11)"
                            } else {
                                "performance-tuning and cluster directives follow an `.entry` prototype only (PTX ISA ch. 11)"
                            },
                        },
                    });
                }
                self.gate_tok(&t);
                self.bump()?;
                directives.push((t.text.to_string(), t.line));
                while let Some(n) = self
                    .peek()
                    .filter(|n| n.kind == TokenKind::Number || n.is_punct(','))
                {
                    // Arguments are integer constants of the one literal grammar.
                    if n.kind == TokenKind::Number && parse_int(n.text).is_none() {
                        return Err(self.err(&format!(
                            "an integer after `{}` (decimal, 0x hex, 0b binary, 0-prefixed octal)",
                            t.text
                        )));
                    }
                    self.bump()?;
                }
            } else if t.is_directive(".pragma") {
                self.gate_tok(&t);
                self.bump()?;
                directives.push((t.text.to_string(), t.line));
                while self
                    .peek()
                    .is_some_and(|n| n.kind == TokenKind::Str || n.is_punct(','))
                {
                    self.bump()?;
                }
                self.eat_punct(';')?;
            } else {
                break;
            }
        }
        Ok(directives)
    }

    fn skip_attributes(&mut self, kind: FunctionKind) -> Result<(), PtxError> {
        while let Some(t) = self
            .peek()
            .filter(|t| t.is_directive(".attribute"))
            .cloned()
        {
            self.gate_tok(&t);
            if kind == FunctionKind::Entry {
                // ptxas 12.9: "Parsing error near '.attribute'" on an `.entry`.
                self.notes.push(ModuleNote {
                    line: t.line,
                    column: t.col,
                    kind: NoteKind::Placement {
                        feature: ".attribute".into(),
                        allowed:
                            "`.attribute(…)` applies to variables and `.func` (PTX ISA ch. 11)",
                    },
                });
            }
            self.bump()?;
            if self.peek().is_some_and(|t| t.is_punct('(')) {
                let (ol, oc) = self.peek().map_or((t.line, t.col), |p| (p.line, p.col));
                self.bump()?;
                let mut depth = 1usize;
                loop {
                    let Some(t) = self.bump()? else {
                        return Err(PtxError::new(
                            ol,
                            oc,
                            PtxErrorKind::Syntax,
                            "`(` of `.attribute` is never closed",
                        ));
                    };
                    if t.is_punct('(') {
                        depth += 1;
                    } else if t.is_punct(')') {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    } else if t.is_punct('{') || t.is_punct('}') || t.is_punct(';') {
                        return Err(PtxError::new(
                            t.line,
                            t.col,
                            PtxErrorKind::Syntax,
                            format!("expected `)` closing `.attribute(`, found `{}`", t.text),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Parameters after `(` up to and including `)`, separated by commas.
    fn param_list(&mut self, what: &str, kind: FunctionKind) -> Result<Vec<ParamDecl>, PtxError> {
        let mut out = Vec::new();
        if self.eat_punct(')')? {
            return Ok(out);
        }
        loop {
            if out.len() >= MAX_PARAMS {
                return Err(self.err(&format!("`)`: at most {MAX_PARAMS} parameters")));
            }
            out.push(self.param(what, kind)?);
            if self.eat_punct(',')? {
                continue;
            }
            self.expect_punct(')', "`,` or `)` after a parameter declaration")?;
            return Ok(out);
        }
    }

    pub(super) fn param(&mut self, what: &str, kind: FunctionKind) -> Result<ParamDecl, PtxError> {
        let (line, col) = match self.peek() {
            Some(t) => (t.line, t.col),
            None => self.end_pos(),
        };
        let space = match self.peek() {
            Some(t) if t.is_directive(".param") => ParamSpace::Param,
            Some(t) if t.is_directive(".reg") => ParamSpace::Reg,
            _ => return Err(self.err(&format!("{what} starting with `.param` or `.reg`"))),
        };
        if space == ParamSpace::Param && kind == FunctionKind::Func {
            self.gate(".param parameter of a .func", line, col);
        }
        self.bump()?;
        let mut align = None;
        let mut vector = None;
        let mut ty = None;
        let mut ptr: Option<PtrAttr> = None;
        while let Some(t) = self.peek().cloned() {
            if t.kind != TokenKind::Directive {
                break;
            }
            match t.text {
                ".align" => {
                    self.bump()?;
                    let a = self.number("an alignment after `.align`")?;
                    let a = u32::try_from(a).map_err(|_| {
                        PtxError::new(
                            t.line,
                            t.col,
                            PtxErrorKind::Syntax,
                            format!("alignment {a} out of range"),
                        )
                    })?;
                    match ptr.as_mut() {
                        Some(p) => p.align = Some(a),
                        None => align = Some(a),
                    }
                }
                ".ptr" if ty.is_some() => {
                    self.gate_tok(&t);
                    self.bump()?;
                    ptr = Some(PtrAttr {
                        space: None,
                        align: None,
                    })
                }
                ".global" | ".shared" | ".const" | ".local" if ptr.is_some() => {
                    self.bump()?;
                    if let Some(p) = ptr.as_mut() {
                        p.space = Some(t.text.to_string());
                    }
                }
                ".v2" | ".v4" | ".v8" if ty.is_none() => {
                    self.bump()?;
                    vector = t.text[2..].parse().ok();
                }
                ".v2" | ".v4" | ".v8" => {
                    // ptxas 12.9: "Parsing error near '.v2': syntax error".
                    return Err(self.err("a parameter name (a vector `.vN` comes before the type: `.reg .v2 .f32 x`)"));
                }
                d => match PtxType::from_directive(d) {
                    Some(x) if ty.is_none() => {
                        self.gate_tok(&t);
                        self.bump()?;
                        ty = Some(x);
                    }
                    _ => {
                        return Err(
                            self.err("a parameter type such as `.b32`, `.align N` or `.ptr`")
                        );
                    }
                },
            }
        }
        let Some(ty) = ty else {
            return Err(self.err("a parameter type such as `.b32` or `.u64`"));
        };
        let mut name = String::new();
        if let Some(t) = self.peek().filter(|t| t.kind == TokenKind::Ident) {
            name = t.text.to_string();
            self.bump()?;
        }
        let mut array = None;
        // `name[N]`, `name[]`, and multi-dimensional `name[N][M]` (size is the product).
        while self.eat_punct('[')? {
            if self.eat_punct(']')? {
                array = Some(None);
            } else {
                let n = self.number("an array size")?;
                self.expect_punct(']', "`]` after the array size")?;
                array = Some(match array {
                    Some(Some(m)) => Some(n.saturating_mul(m)),
                    Some(None) => None,
                    None => Some(n),
                });
            }
        }
        Ok(ParamDecl {
            space,
            align,
            ty,
            vector,
            array,
            ptr,
            name,
            line,
        })
    }
}

/// Parameters in one list (ptxas has no documented limit; 65,536 bounds the work).
const MAX_PARAMS: usize = 65_536;

trait DirectiveStart {
    fn is_none_or_directive_start(&self) -> bool;
}

impl DirectiveStart for Option<&Token<'_>> {
    /// End of file, a directive that starts a module-level statement, or `@@DWARF`.
    fn is_none_or_directive_start(&self) -> bool {
        match self {
            None => true,
            Some(t) => {
                (t.kind == TokenKind::Directive && STATEMENT_STARTS.contains(&t.text))
                    || t.is_punct('@')
            }
        }
    }
}
