//! Module-level PTX reading: the `.version`, `.target` and `.address_size` directives and the
//! prototype of every `.func` and `.entry`, declared or defined.
//!
//! Bodies, variables and directives this reader does not model are skipped (balanced braces,
//! up to the next `;`, or to the end of a line-oriented directive), so output from any producer
//! reads. A prototype that does not follow the PTX grammar is an error naming the line and what
//! was expected.

use std::fmt;

use super::lexer::{tokenize, Token, TokenKind};

/// A parse failure at a source line. Display gives `LINE: message`; use [`PtxError::at`] for
/// the `FILE:LINE: message` form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtxError {
    pub line: u32,
    pub message: String,
}

impl PtxError {
    /// `FILE:LINE: message`.
    pub fn at(&self, file: &str) -> String {
        format!("{file}:{}: {}", self.line, self.message)
    }
}

impl fmt::Display for PtxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.line, self.message)
    }
}

impl std::error::Error for PtxError {}

/// PTX fundamental and opaque types that may appear in a parameter declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PtxType {
    B8,
    B16,
    B32,
    B64,
    B128,
    U8,
    U16,
    U32,
    U64,
    S8,
    S16,
    S32,
    S64,
    F16,
    F16x2,
    Bf16,
    Bf16x2,
    F32,
    F64,
    Pred,
    TexRef,
    SamplerRef,
    SurfRef,
}

impl PtxType {
    pub fn from_directive(d: &str) -> Option<PtxType> {
        use PtxType::*;
        Some(match d {
            ".b8" => B8,
            ".b16" => B16,
            ".b32" => B32,
            ".b64" => B64,
            ".b128" => B128,
            ".u8" => U8,
            ".u16" => U16,
            ".u32" => U32,
            ".u64" => U64,
            ".s8" => S8,
            ".s16" => S16,
            ".s32" => S32,
            ".s64" => S64,
            ".f16" => F16,
            ".f16x2" => F16x2,
            ".bf16" => Bf16,
            ".bf16x2" => Bf16x2,
            ".f32" => F32,
            ".f64" => F64,
            ".pred" => Pred,
            ".texref" => TexRef,
            ".samplerref" => SamplerRef,
            ".surfref" => SurfRef,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use PtxType::*;
        match self {
            B8 => ".b8",
            B16 => ".b16",
            B32 => ".b32",
            B64 => ".b64",
            B128 => ".b128",
            U8 => ".u8",
            U16 => ".u16",
            U32 => ".u32",
            U64 => ".u64",
            S8 => ".s8",
            S16 => ".s16",
            S32 => ".s32",
            S64 => ".s64",
            F16 => ".f16",
            F16x2 => ".f16x2",
            Bf16 => ".bf16",
            Bf16x2 => ".bf16x2",
            F32 => ".f32",
            F64 => ".f64",
            Pred => ".pred",
            TexRef => ".texref",
            SamplerRef => ".samplerref",
            SurfRef => ".surfref",
        }
    }

    /// Size in bits of a scalar of this type; `None` for `.pred` and the opaque types, whose
    /// size is not defined by the ABI (ptx-interop 13.2 §1.1, §1.4).
    pub fn bits(self) -> Option<u32> {
        use PtxType::*;
        match self {
            B8 | U8 | S8 => Some(8),
            B16 | U16 | S16 | F16 | Bf16 => Some(16),
            B32 | U32 | S32 | F32 | F16x2 | Bf16x2 => Some(32),
            B64 | U64 | S64 | F64 => Some(64),
            B128 => Some(128),
            Pred | TexRef | SamplerRef | SurfRef => None,
        }
    }

    /// The untyped, unsigned or signed integer types (`.bN`, `.uN`, `.sN`).
    pub fn is_integer_class(self) -> bool {
        use PtxType::*;
        matches!(
            self,
            B8 | B16 | B32 | B64 | B128 | U8 | U16 | U32 | U64 | S8 | S16 | S32 | S64
        )
    }

    /// Half-precision types, scalar or packed (`.f16`, `.f16x2`, `.bf16`, `.bf16x2`).
    pub fn is_half_float(self) -> bool {
        matches!(
            self,
            PtxType::F16 | PtxType::F16x2 | PtxType::Bf16 | PtxType::Bf16x2
        )
    }

    pub fn is_opaque(self) -> bool {
        matches!(
            self,
            PtxType::TexRef | PtxType::SamplerRef | PtxType::SurfRef
        )
    }
}

impl fmt::Display for PtxType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// State space of a parameter declaration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamSpace {
    /// `.param` — what the ABI requires (ptx-interop 13.2 §2.3).
    Param,
    /// `.reg` — the pre-ABI style some hand-written PTX still uses.
    Reg,
}

/// The `.ptr` attribute of a kernel pointer parameter: `.ptr .global .align 8`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PtrAttr {
    /// `.const`, `.global`, `.local`, `.shared`; `None` is generic.
    pub space: Option<String>,
    pub align: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamDecl {
    pub space: ParamSpace,
    pub align: Option<u32>,
    pub ty: PtxType,
    /// `.v2`/`.v4` vector count when written (the ISA does not allow it on `.param`, but some
    /// hand-written `.reg` prototypes use it).
    pub vector: Option<u32>,
    /// `Some(Some(n))` for `name[n]`, `Some(None)` for `name[]`, `None` for a scalar.
    pub array: Option<Option<u64>>,
    pub ptr: Option<PtrAttr>,
    /// Empty for unnamed parameters in declarations.
    pub name: String,
    pub line: u32,
}

impl ParamDecl {
    pub fn array_len(&self) -> Option<u64> {
        self.array.flatten()
    }

    /// The declaration as PTX text, e.g. `.param .align 4 .b8 x[12]`.
    pub fn render(&self) -> String {
        let mut s = String::from(match self.space {
            ParamSpace::Param => ".param",
            ParamSpace::Reg => ".reg",
        });
        if let Some(a) = self.align {
            s += &format!(" .align {a}");
        }
        if let Some(v) = self.vector {
            s += &format!(" .v{v}");
        }
        s += " ";
        s += self.ty.name();
        if let Some(p) = &self.ptr {
            s += " .ptr";
            if let Some(sp) = &p.space {
                s += " ";
                s += sp;
            }
            if let Some(a) = p.align {
                s += &format!(" .align {a}");
            }
        }
        if !self.name.is_empty() {
            s += " ";
            s += &self.name;
        }
        match self.array {
            Some(Some(n)) => s += &format!("[{n}]"),
            Some(None) => s += "[]",
            None => {}
        }
        s
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionKind {
    /// `.func`: a device function, subject to the §2.3 table.
    Func,
    /// `.entry`: a kernel, whose parameters follow the host's layout.
    Entry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Linkage {
    pub is_extern: bool,
    pub is_visible: bool,
    pub is_weak: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionDecl {
    pub kind: FunctionKind,
    pub name: String,
    /// `true` when a body `{ … }` follows the prototype.
    pub is_definition: bool,
    pub linkage: Linkage,
    pub returns: Vec<ParamDecl>,
    pub params: Vec<ParamDecl>,
    /// Line of the `.func`/`.entry` keyword.
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PtxModule {
    /// `.version` as written, e.g. `8.5`.
    pub version: Option<String>,
    pub target: Vec<String>,
    /// `.address_size`, if the module states it.
    pub address_size: Option<u32>,
    pub functions: Vec<FunctionDecl>,
}

impl PtxModule {
    /// Address size in bits the module uses: its `.address_size`, else 32, the PTX ISA's
    /// default when the directive is absent.
    pub fn effective_address_size(&self) -> u32 {
        self.address_size.unwrap_or(32)
    }

    pub fn function(&self, name: &str) -> Option<&FunctionDecl> {
        self.functions.iter().find(|f| f.name == name)
    }

    pub fn parse(src: &str) -> Result<PtxModule, PtxError> {
        let toks = tokenize(src);
        Parser {
            toks: &toks,
            pos: 0,
        }
        .module()
    }
}

struct Parser<'t, 'a> {
    toks: &'t [Token<'a>],
    pos: usize,
}

/// Line-oriented directives: they end at the end of their line, without `;`.
const LINE_DIRECTIVES: &[&str] = &[".file", ".loc", ".version", ".target", ".address_size"];

/// Kernel and function performance directives that may sit between prototype and body.
const PERF_DIRECTIVES: &[&str] = &[
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    ".maxnctapersm",
    ".maxnreg",
    ".maxclusterrank",
    ".reqnctapercluster",
    ".explicitcluster",
    ".blocksareclusters",
    ".noreturn",
    ".abi_preserve",
    ".abi_preserve_control",
];

impl<'t, 'a> Parser<'t, 'a> {
    fn peek(&self) -> Option<&'t Token<'a>> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Token<'a>> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn last_line(&self) -> u32 {
        self.toks.last().map_or(1, |t| t.line)
    }

    fn err(&self, expected: &str) -> PtxError {
        match self.peek() {
            Some(t) => PtxError {
                line: t.line,
                message: format!("expected {expected}, found `{}`", t.text),
            },
            None => PtxError {
                line: self.last_line(),
                message: format!("expected {expected}, found end of file"),
            },
        }
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.peek().is_some_and(|t| t.is_punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char, what: &str) -> Result<(), PtxError> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            Err(self.err(what))
        }
    }

    fn number(&mut self, what: &str) -> Result<u64, PtxError> {
        match self.peek() {
            Some(t) if t.kind == TokenKind::Number => {
                let v = parse_int(t.text).ok_or_else(|| self.err(what))?;
                self.pos += 1;
                Ok(v)
            }
            _ => Err(self.err(what)),
        }
    }

    fn module(mut self) -> Result<PtxModule, PtxError> {
        let mut m = PtxModule::default();
        let mut linkage = Linkage::default();
        while let Some(t) = self.next() {
            if t.kind != TokenKind::Directive {
                // Stray tokens at module level (a producer's extension, a lone `;`) are
                // skipped; only prototypes are held to the grammar.
                linkage = Linkage::default();
                continue;
            }
            match t.text {
                ".version" => {
                    let v = self
                        .peek()
                        .filter(|n| n.kind == TokenKind::Number && n.line == t.line);
                    let Some(v) = v else {
                        return Err(self.err("a version number after `.version`"));
                    };
                    m.version = Some(v.text.to_string());
                    self.pos += 1;
                }
                ".target" => {
                    while let Some(n) = self.peek().filter(|n| n.line == t.line) {
                        if n.kind == TokenKind::Ident {
                            m.target.push(n.text.to_string());
                        } else if !n.is_punct(',') {
                            break;
                        }
                        self.pos += 1;
                    }
                    if m.target.is_empty() {
                        return Err(self.err("a target name after `.target`"));
                    }
                }
                ".address_size" => {
                    let n = self.number("32 or 64 after `.address_size`")?;
                    if n != 32 && n != 64 {
                        return Err(PtxError {
                            line: t.line,
                            message: format!("expected 32 or 64 after `.address_size`, found {n}"),
                        });
                    }
                    m.address_size = Some(n as u32);
                }
                ".extern" => linkage.is_extern = true,
                ".visible" => linkage.is_visible = true,
                ".weak" => linkage.is_weak = true,
                ".common" => {}
                ".func" | ".entry" => {
                    let kind = if t.text == ".func" {
                        FunctionKind::Func
                    } else {
                        FunctionKind::Entry
                    };
                    let f = self.function(kind, t.line, linkage)?;
                    m.functions.push(f);
                    linkage = Linkage::default();
                }
                d if LINE_DIRECTIVES.contains(&d) => {
                    self.skip_line_tail(t.line);
                }
                _ => {
                    self.skip_statement(t.line);
                    linkage = Linkage::default();
                }
            }
        }
        Ok(m)
    }

    /// Skip the rest of a directive without `;` that ends at its line's end.
    fn skip_line_tail(&mut self, line: u32) {
        while self.peek().is_some_and(|n| n.line == line) {
            self.pos += 1;
        }
    }

    /// Skip an unknown module-level statement: up to a `;` or a closing `}` (plus an optional
    /// `;`) at bracket depth 0, or to the end of the line when the statement has neither
    /// (`.section` headers and other line-oriented producer directives).
    fn skip_statement(&mut self, line: u32) {
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            if depth == 0 && t.line != line && t.kind == TokenKind::Directive {
                let continues =
                    self.toks[self.pos - 1].is_punct('{') || self.toks[self.pos - 1].is_punct(',');
                if !continues && !t.is_punct('{') {
                    // A new statement started on a later line.
                    return;
                }
            }
            self.pos += 1;
            if t.is_punct('{') || t.is_punct('(') || t.is_punct('[') {
                depth += 1;
            } else if t.is_punct('}') || t.is_punct(')') || t.is_punct(']') {
                depth = depth.saturating_sub(1);
                if depth == 0 && t.is_punct('}') {
                    self.eat_punct(';');
                    return;
                }
            } else if depth == 0 && t.is_punct(';') {
                return;
            }
        }
    }

    /// Skip a balanced `{ … }` block whose `{` was just consumed.
    fn skip_body(&mut self, open_line: u32) -> Result<(), PtxError> {
        let mut depth = 1usize;
        while let Some(t) = self.next() {
            if t.is_punct('{') {
                depth += 1;
            } else if t.is_punct('}') {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
        }
        Err(PtxError {
            line: self.last_line(),
            message: format!(
                "expected `}}` closing the body opened at line {open_line}, found end of file"
            ),
        })
    }

    fn function(
        &mut self,
        kind: FunctionKind,
        line: u32,
        linkage: Linkage,
    ) -> Result<FunctionDecl, PtxError> {
        // `.func .attribute(.unified(…))` (PTX 8.0+).
        self.skip_attributes();
        let mut returns = Vec::new();
        if kind == FunctionKind::Func && self.eat_punct('(') {
            returns = self.param_list("a return parameter declaration")?;
        }
        self.skip_attributes();
        let name = match self.peek() {
            Some(t) if t.kind == TokenKind::Ident => t.text.to_string(),
            _ => {
                let what = if kind == FunctionKind::Func {
                    "a function name after `.func`"
                } else {
                    "a kernel name after `.entry`"
                };
                return Err(self.err(what));
            }
        };
        self.pos += 1;
        let mut params = Vec::new();
        if self.eat_punct('(') {
            params = self.param_list("a parameter declaration")?;
        }
        // Performance directives and pragmas between prototype and body.
        loop {
            match self.peek() {
                Some(t) if t.kind == TokenKind::Directive && PERF_DIRECTIVES.contains(&t.text) => {
                    self.pos += 1;
                    while self
                        .peek()
                        .is_some_and(|n| n.kind == TokenKind::Number || n.is_punct(','))
                    {
                        self.pos += 1;
                    }
                }
                Some(t) if t.is_directive(".pragma") => {
                    self.pos += 1;
                    while self
                        .peek()
                        .is_some_and(|n| n.kind == TokenKind::Str || n.is_punct(','))
                    {
                        self.pos += 1;
                    }
                    self.eat_punct(';');
                }
                _ => break,
            }
        }
        let is_definition = if self.eat_punct(';') {
            false
        } else if self.eat_punct('{') {
            let open = self.toks[self.pos - 1].line;
            self.skip_body(open)?;
            true
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
        })
    }

    fn skip_attributes(&mut self) {
        while self.peek().is_some_and(|t| t.is_directive(".attribute")) {
            self.pos += 1;
            if self.eat_punct('(') {
                let mut depth = 1usize;
                while let Some(t) = self.next() {
                    if t.is_punct('(') {
                        depth += 1;
                    } else if t.is_punct(')') {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                }
            }
        }
    }

    /// Parameters after `(` up to and including `)`, separated by commas.
    fn param_list(&mut self, what: &str) -> Result<Vec<ParamDecl>, PtxError> {
        let mut out = Vec::new();
        if self.eat_punct(')') {
            return Ok(out);
        }
        loop {
            out.push(self.param(what)?);
            if self.eat_punct(',') {
                continue;
            }
            self.expect_punct(')', "`,` or `)` after a parameter declaration")?;
            return Ok(out);
        }
    }

    fn param(&mut self, what: &str) -> Result<ParamDecl, PtxError> {
        let line = self.peek().map_or(self.last_line(), |t| t.line);
        let space = match self.peek() {
            Some(t) if t.is_directive(".param") => ParamSpace::Param,
            Some(t) if t.is_directive(".reg") => ParamSpace::Reg,
            _ => return Err(self.err(&format!("{what} starting with `.param` or `.reg`"))),
        };
        self.pos += 1;
        let mut align = None;
        let mut vector = None;
        let mut ty = None;
        let mut ptr: Option<PtrAttr> = None;
        while let Some(t) = self.peek().cloned() {
            if t.kind != TokenKind::Directive {
                break;
            }
            self.pos += 1;
            match t.text {
                ".align" => {
                    let a = self.number("an alignment after `.align`")?;
                    let a = u32::try_from(a).map_err(|_| PtxError {
                        line: t.line,
                        message: format!("alignment {a} out of range"),
                    })?;
                    match ptr.as_mut() {
                        Some(p) => p.align = Some(a),
                        None => align = Some(a),
                    }
                }
                ".ptr" => {
                    ptr = Some(PtrAttr {
                        space: None,
                        align: None,
                    })
                }
                ".global" | ".shared" | ".const" | ".local" if ptr.is_some() => {
                    if let Some(p) = ptr.as_mut() {
                        p.space = Some(t.text.to_string());
                    }
                }
                ".v2" | ".v4" | ".v8" => vector = Some(t.text[2..].parse().unwrap_or(0)),
                d => match PtxType::from_directive(d) {
                    Some(x) if ty.is_none() => ty = Some(x),
                    _ => {
                        self.pos -= 1;
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
            self.pos += 1;
        }
        let mut array = None;
        if self.eat_punct('[') {
            if self.eat_punct(']') {
                array = Some(None);
            } else {
                let n = self.number("an array size")?;
                self.expect_punct(']', "`]` after the array size")?;
                array = Some(Some(n));
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

/// PTX integer literal: the one grammar of [`crate::ptx::literal`].
fn parse_int(s: &str) -> Option<u64> {
    crate::ptx::literal::parse_int(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Prototype shapes copied from real producer output (clang-19 19.1.7 and NVRTC 12.9).
    const CLANG_STATIC: &str = r#"//
// Generated by LLVM NVPTX Back-End
//

.version 7.8
.target sm_90
.address_size 64

	// .globl	g_s3                    // -- Begin function g_s3
.func  (.param .align 16 .b8 func_retval0[3]) f_s3
(
	.param .align 16 .b8 f_s3_param_0[3]
)
;
.visible .func  (.param .b32 func_retval0) f_char(
	.param .b32 f_char_param_0
)                                       // @f_char
{
	.reg .b16 	%rs<2>;
	{ // callseq 0, 0
	.param .b32 param0;
	}
	ret;
}
.visible .entry k(
	.param .u8 k_param_0,
	.param .align 1 .b8 k_param_1[3],
	.param .u64 .ptr .global .align 8 k_param_2
)
.maxntid 128, 1, 1
{
	ret;
}
"#;

    #[test]
    fn reads_directives_and_prototypes() {
        let m = PtxModule::parse(CLANG_STATIC).unwrap();
        assert_eq!(m.version.as_deref(), Some("7.8"));
        assert_eq!(m.target, vec!["sm_90"]);
        assert_eq!(m.address_size, Some(64));
        assert_eq!(m.functions.len(), 3);

        let s3 = &m.functions[0];
        assert_eq!(
            (s3.kind, s3.name.as_str(), s3.is_definition, s3.line),
            (FunctionKind::Func, "f_s3", false, 10)
        );
        assert!(!s3.linkage.is_visible);
        assert_eq!(
            s3.returns[0].render(),
            ".param .align 16 .b8 func_retval0[3]"
        );
        assert_eq!(
            s3.params[0].render(),
            ".param .align 16 .b8 f_s3_param_0[3]"
        );
        assert_eq!(s3.params[0].line, 12);

        let c = &m.functions[1];
        assert!(c.is_definition && c.linkage.is_visible);
        assert_eq!(c.params[0].ty, PtxType::B32);

        let k = &m.functions[2];
        assert_eq!(k.kind, FunctionKind::Entry);
        assert_eq!(k.params.len(), 3);
        assert_eq!(k.params[0].ty, PtxType::U8);
        assert_eq!(k.params[1].array_len(), Some(3));
        assert_eq!(
            k.params[2].ptr,
            Some(PtrAttr {
                space: Some(".global".into()),
                align: Some(8)
            })
        );
        assert_eq!(k.params[2].align, None);
    }

    #[test]
    fn skips_unknown_directives_variables_and_debug_sections() {
        let src = r#"
.version 8.8
.target sm_90, debug
.address_size 64
.file 1 "a.cu"
.extern .shared .align 16 .b8 smem[];
.global .align 4 .b8 tbl[4] = {1, 2, 3, 4};
.visible .global .texref tex;
.some_future_directive foo bar
.extern .func (.param .b32 r) ext (.param .b64 p, .param .f32 q);
.weak .func nop;
.section .debug_info
{
.b32 12
.b8 0
}
.func .attribute(.unified(0x1, 0x2)) uf() { ret; }
"#;
        let m = PtxModule::parse(src).unwrap();
        assert_eq!(m.target, vec!["sm_90", "debug"]);
        let names: Vec<_> = m.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["ext", "nop", "uf"]);
        assert!(m.functions[0].linkage.is_extern);
        assert_eq!(m.functions[0].params.len(), 2);
        assert!(m.functions[1].linkage.is_weak && m.functions[1].params.is_empty());
        assert!(m.functions[2].is_definition);
    }

    #[test]
    fn old_style_reg_params() {
        let m = PtxModule::parse(".version 2.0\n.target sm_20\n.func (.reg .b32 %rv) f (.reg .b32 %a, .reg .v2 .f32 %b) { ret; }").unwrap();
        let f = &m.functions[0];
        assert_eq!(f.returns[0].space, ParamSpace::Reg);
        assert_eq!(f.params[1].vector, Some(2));
        assert_eq!(m.effective_address_size(), 32);
    }

    #[test]
    fn malformed_prototypes_name_line_and_expectation() {
        let e = PtxModule::parse(".version 8.0\n.func (.param .b32 r) \n(").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(
            e.message
                .starts_with("expected a function name after `.func`"),
            "{e}"
        );

        let e = PtxModule::parse(".func f(\n .param .b32 a\n .param .b32 b)").unwrap_err();
        assert_eq!(
            e.at("x.ptx"),
            "x.ptx:3: expected `,` or `)` after a parameter declaration, found `.param`"
        );

        let e = PtxModule::parse(".func f(.param .align x .b8 a[4]);").unwrap_err();
        assert!(e.message.contains("alignment after `.align`"), "{e}");

        let e = PtxModule::parse(".func f(.param .q32 a);").unwrap_err();
        assert!(e.message.contains("parameter type"), "{e}");

        let e = PtxModule::parse(".func f(.param .b32 a) {\n ret;\n").unwrap_err();
        assert!(
            e.message.contains("closing the body opened at line 1"),
            "{e}"
        );

        let e = PtxModule::parse(".entry k(.param .b8 a[4) {}").unwrap_err();
        assert!(e.message.contains("`]` after the array size"), "{e}");
    }

    #[test]
    fn system_call_prototypes_and_noreturn() {
        // The shapes of ptx-interop 13.2 ch. 3 prototypes.
        let src = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .extern .func (.param .b32 status) vprintf (.param .b64 format, .param .b64 valist);\n\
            .extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b32 line,\n\
            .param .b64 function, .param .b64 charSize) .noreturn;\n\
            .alias fa, fb;\n.pragma \"nounroll\";\n.weak .func (.param .b64 p) malloc (.param .b64 size);\n";
        let m = PtxModule::parse(src).unwrap();
        let names: Vec<_> = m
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.params.len(), f.line))
            .collect();
        assert_eq!(
            names,
            vec![("vprintf", 2, 4), ("__assertfail", 5, 5), ("malloc", 1, 9)]
        );
        assert!(m.functions[2].linkage.is_weak);
    }

    /// No prefix of a real producer's file makes the reader panic: it parses or errs.
    #[test]
    fn truncated_files_never_panic() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ptx-corpus");
        for name in [
            "clang-19_small.ptx",
            "nvrtc-12.9_small.ptx",
            "hand_conforming.ptx",
        ] {
            let src = std::fs::read_to_string(dir.join(name)).unwrap();
            let mut errors = 0;
            for cut in (0..src.len())
                .step_by(5)
                .filter(|&c| src.is_char_boundary(c))
            {
                if let Err(e) = PtxModule::parse(&src[..cut]) {
                    assert!(e.line >= 1 && !e.message.is_empty());
                    errors += 1;
                }
            }
            // Cuts inside a prototype or body are errors, so there must be some.
            assert!(errors > 0, "{name}");
            assert!(PtxModule::parse(&src).is_ok(), "{name}");
        }
    }
}
