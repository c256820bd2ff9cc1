//! Module-level PTX reading: the `.version`, `.target` and `.address_size` directives and the
//! prototype of every `.func` and `.entry`, declared or defined, for every PTX ISA version from
//! 1.0 to 9.x.
//!
//! Bodies, variables and directives this reader does not model are skipped (balanced braces,
//! up to the next `;`, or to the end of a line-oriented directive), so output from any producer
//! reads. What cannot be read is an error at `line:column` naming what was expected: bytes
//! ptxas refuses (see [`super::lexer`]), an unterminated body, a stray `}`, a prototype that
//! does not follow the grammar. What reads but a PTX ISA version does not allow, or ptxas
//! refuses for another reason, is a [`ModuleNote`] for a linter to report, never an error.
//!
//! [`PtxModule::parse`] reads a module or a fragment; [`PtxModule::read`] reads a whole file as
//! ptxas does: within [`MAX_PTX_BYTES`], starting with `.version` and `.target`.
//!
//! The reader by concern: `parser` (the token cursor and the module-level directives),
//! `function` (prototypes and parameters), `body` (function bodies statement by statement) and
//! `scope` (what a body declares and uses); this file holds the types they produce.

use std::fmt;

use crate::lexer::{LexErrorKind, Lexer, Token, TokenKind};

mod body;
mod function;
mod parser;
mod scope;

use parser::Parser;

/// The `.address_size` of a PTX module: it fixes the size of pointers and of `long`
/// (ptx-interop 13.2 §1.1: "pointer size and long int size are dictated by the hosts ABI").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressSize {
    A32,
    A64,
}

impl AddressSize {
    pub fn bytes(self) -> u64 {
        match self {
            AddressSize::A32 => 4,
            AddressSize::A64 => 8,
        }
    }

    /// The size `.address_size BITS` names (32 or 64).
    pub fn from_bits(bits: u32) -> Option<AddressSize> {
        match bits {
            32 => Some(AddressSize::A32),
            64 => Some(AddressSize::A64),
            _ => None,
        }
    }

    /// Bits of an address: what `.address_size` writes.
    pub fn bits(self) -> u32 {
        match self {
            AddressSize::A32 => 32,
            AddressSize::A64 => 64,
        }
    }
}

/// As `.address_size` writes it: `32` or `64`.
impl std::fmt::Display for AddressSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.bits())
    }
}

/// Largest PTX text [`PtxModule::read`] accepts, checked before any work (256 MiB; the largest
/// producer files seen, CUTLASS kernels, are tens of MiB).
pub const MAX_PTX_BYTES: u64 = 256 << 20;

/// What kind of failure a [`PtxError`] is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxErrorKind {
    /// A byte or token ptxas refuses before parsing.
    #[error("{0}")]
    Lex(#[from] LexErrorKind),
    /// The text does not follow the PTX grammar where the reader holds it to it.
    #[error("syntax")]
    Syntax,
    /// No `.version`/`.target` header: not a PTX module.
    #[error("header")]
    Header,
    /// Larger than the limit.
    #[error("too large")]
    TooLarge,
}

/// A read failure at a source line and column. Display gives `LINE:COLUMN: message`; use
/// [`PtxError::at`] for the `FILE:LINE:COLUMN: message` form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct PtxError {
    pub line: u32,
    /// 1-based byte column.
    pub column: u32,
    pub message: String,
    pub kind: PtxErrorKind,
}

impl PtxError {
    /// `FILE:LINE:COLUMN: message`.
    pub fn at(&self, file: &str) -> String {
        format!("{file}:{}:{}: {}", self.line, self.column, self.message)
    }

    fn new(line: u32, column: u32, kind: PtxErrorKind, message: impl Into<String>) -> PtxError {
        PtxError {
            line,
            column,
            message: message.into(),
            kind,
        }
    }
}

impl From<super::lexer::LexError> for PtxError {
    fn from(e: super::lexer::LexError) -> PtxError {
        PtxError::new(e.line, e.col, PtxErrorKind::Lex(e.kind), e.kind.to_string())
    }
}

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

/// Linking directives written before `.func`/`.entry` (PTX ISA ch. 11, linking directives).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Linkage {
    pub is_extern: bool,
    pub is_visible: bool,
    pub is_weak: bool,
    pub is_common: bool,
    /// `.hidden` (newer producers; ptxas 12.9 does not know it).
    pub is_hidden: bool,
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
    /// Directives between the prototype and the body or `;`, as written (`.maxntid`,
    /// `.noreturn`, `.abi_preserve`, `.pragma`, …), with their line.
    pub directives: Vec<(String, u32)>,
}

/// Something the reader read but that a PTX ISA version does not allow, or that ptxas refuses:
/// a linter reports it; it never stops reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleNote {
    pub line: u32,
    pub column: u32,
    pub kind: NoteKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteKind {
    /// A non-ASCII byte inside a comment or string (ptxas 12.9: "Unexpected non-ASCII
    /// character").
    NonAscii { byte: u8 },
    /// `feature` needs PTX ISA `since` or later; the module declares `version`.
    NeedsVersion {
        feature: &'static str,
        since: (u32, u32),
        version: (u32, u32),
    },
    /// A directive where the grammar does not put it (e.g. `.noreturn` on an `.entry`).
    Placement {
        feature: String,
        allowed: &'static str,
    },
    /// An opcode that is not an instruction of the PTX ISA (ptxas 12.9: "Not a name of any
    /// known instruction").
    UnknownInstruction { opcode: String },
    /// A variable declared `name[]` with neither `.extern` nor an initializer (ptxas 12.9:
    /// "Non-external variable 'name' has incomplete type").
    IncompleteArray { name: String },
    /// A modifier the opcode's syntax in PTX ISA ch. 9.7 does not give it (ptxas 12.9:
    /// "Unknown modifier" or "Illegal modifier"); see [`instr::MODIFIERS`].
    UnknownModifier { opcode: String, modifier: String },
    /// A register or name a body uses that no declaration gives (ptxas 12.9: "Unknown
    /// symbol").
    Undeclared { name: String, function: String },
    /// A `bra` to a label the function does not have (ptxas 12.9: "Unknown symbol").
    UndefinedLabel { label: String, function: String },
}

impl fmt::Display for NoteKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoteKind::NonAscii { byte } => write!(
                f,
                "non-ASCII byte 0x{byte:02X} in a comment or string; PTX is ASCII (ptxas 12.9 refuses the file: \"Unexpected non-ASCII character\")"
            ),
            NoteKind::NeedsVersion {
                feature,
                since,
                version,
            } => write!(
                f,
                "{feature} needs PTX ISA {}.{} or later; the module declares `.version {}.{}`",
                since.0, since.1, version.0, version.1
            ),
            NoteKind::Placement { feature, allowed } => {
                write!(f, "`{feature}` is not allowed here; {allowed}")
            }
            NoteKind::UnknownInstruction { opcode } => write!(
                f,
                "`{opcode}` is not an instruction of the PTX ISA (ch. 9.7 lists them; ptxas 12.9: \"Not a name of any known instruction\")"
            ),
            NoteKind::IncompleteArray { name } => write!(
                f,
                "`{name}[]` has no size: an array's first dimension may be left empty only with `.extern` or an initializer that gives it (ptxas 12.9: \"Non-external variable '{name}' has incomplete type\")"
            ),
            NoteKind::UnknownModifier { opcode, modifier } => write!(
                f,
                "`.{modifier}` is not a modifier of `{opcode}` (its syntax in PTX ISA ch. 9.7 does not give it; ptxas 12.9: \"Unknown modifier\" or \"Illegal modifier\")"
            ),
            NoteKind::Undeclared { name, function } => write!(
                f,
                "`{name}` is used in `{function}` but never declared (no `.reg`, variable, parameter, label or function of that name, and not a special register of ch. 10; ptxas 12.9: \"Unknown symbol\")"
            ),
            NoteKind::UndefinedLabel { label, function } => write!(
                f,
                "`bra` to `{label}`, which is not a label of `{function}` (a branch target is a label in the same function; ptxas 12.9: \"Unknown symbol\")"
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PtxModule {
    /// `.version` as written, e.g. `8.5`.
    pub version: Option<String>,
    pub target: Vec<String>,
    /// `.address_size`, if the module states it.
    pub address_size: Option<AddressSize>,
    pub functions: Vec<FunctionDecl>,
    /// `.alias alias, aliasee;` pairs (PTX 6.3+).
    pub aliases: Vec<(String, String)>,
    /// What reads but is not allowed, in source order (see [`ModuleNote`]).
    pub notes: Vec<ModuleNote>,
}

/// The PTX ISA version that introduced each module-level feature the reader knows, from the
/// ISA's "PTX ISA Notes" of each directive; the ones ptxas checks were measured with it
/// (`Feature '…' requires PTX ISA .version X or later`): with ptxas 12.9 `.weak` 3.1,
/// `.common` 5.0, `.alias` 6.3, `.noreturn` 6.4, `.address_size` 2.3, `.ptr` 2.2, `.b128`
/// 8.3; with ptxas 13.0.48 and 13.5.37 (which reads ISA up to 9.5) `.reqnctapercluster`,
/// `.explicitcluster`, `.maxclusterrank` 7.8, `.abi_preserve`, `.abi_preserve_control`,
/// `.blocksareclusters` 9.0.
pub(crate) const INTRODUCED: &[(&str, (u32, u32))] = &[
    (".address_size", (2, 3)),
    (".weak", (3, 1)),
    (".common", (5, 0)),
    (".alias", (6, 3)),
    (".pragma", (2, 0)),
    (".section", (2, 0)),
    (".maxnreg", (1, 3)),
    (".maxntid", (1, 3)),
    (".maxnctapersm", (1, 3)),
    (".reqntid", (2, 1)),
    (".minnctapersm", (2, 0)),
    (".noreturn", (6, 4)),
    (".reqnctapercluster", (7, 8)),
    (".explicitcluster", (7, 8)),
    (".maxclusterrank", (7, 8)),
    (".attribute", (8, 0)),
    (".abi_preserve", (9, 0)),
    (".abi_preserve_control", (9, 0)),
    (".blocksareclusters", (9, 0)),
    (".ptr", (2, 2)),
    (".b128", (8, 3)),
    // Device functions with `.param` parameters (the ABI); before 2.0 only `.reg`.
    (".param parameter of a .func", (2, 0)),
];

fn introduced(feature: &str) -> Option<(u32, u32)> {
    INTRODUCED
        .iter()
        .find(|(f, _)| *f == feature)
        .map(|&(_, v)| v)
}

/// Directives allowed between a kernel's prototype and its body (PTX ISA ch. 11:
/// performance-tuning and cluster-dimension directives).
const ENTRY_DIRECTIVES: &[&str] = &[
    ".maxntid",
    ".reqntid",
    ".minnctapersm",
    ".maxnctapersm",
    ".maxnreg",
    ".maxclusterrank",
    ".reqnctapercluster",
    ".explicitcluster",
    ".blocksareclusters",
];

/// Directives allowed after a device function's prototype.
const FUNC_DIRECTIVES: &[&str] = &[".noreturn", ".abi_preserve", ".abi_preserve_control"];

/// Module-level statements that start a new statement: an old-style `.func` declaration
/// without `;` ends where one of these begins (old nvcc/nvopencc; ptxas 12.9 accepts it).
const STATEMENT_STARTS: &[&str] = &[
    ".func",
    ".entry",
    ".extern",
    ".visible",
    ".weak",
    ".common",
    ".hidden",
    ".global",
    ".const",
    ".shared",
    ".local",
    ".tex",
    ".texref",
    ".samplerref",
    ".surfref",
    ".file",
    ".loc",
    ".section",
    ".alias",
    ".pragma",
    ".version",
    ".target",
    ".address_size",
];

/// Line-oriented directives: they end at the end of their line, without `;`.
const LINE_DIRECTIVES: &[&str] = &[".file", ".loc"];

impl PtxModule {
    /// Address size in bits the module uses: its `.address_size`, else 32, which the PTX ISA
    /// gives as the default when the directive is absent (".address_size": "defaults to 32"),
    /// and ptxas 12.9 applies (measured: "mismatches with .address_size of 32 bits").
    pub fn effective_address_size(&self) -> AddressSize {
        self.address_size.unwrap_or(AddressSize::A32)
    }

    /// The `.version` as (major, minor), when it is well formed.
    pub fn version_number(&self) -> Option<(u32, u32)> {
        parse_version(self.version.as_deref()?)
    }

    pub fn function(&self, name: &str) -> Option<&FunctionDecl> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// Read a module or a fragment (no header required).
    pub fn parse(src: &str) -> Result<PtxModule, PtxError> {
        Parser::new(src)?.module(false)
    }

    /// Read a whole PTX file as ptxas does: at most [`MAX_PTX_BYTES`], and starting with
    /// `.version` then `.target` (ptxas 12.9: "Missing .version directive at start of file",
    /// "Missing .target directive"). An empty file, a fragment or garbage is an error.
    pub fn read(src: &str) -> Result<PtxModule, PtxError> {
        PtxModule::read_bytes(src.as_bytes(), MAX_PTX_BYTES)
    }

    /// [`PtxModule::read`] on a file's bytes, within `max_bytes` (checked first). Bytes that
    /// are not UTF-8 are refused (or, in a comment, reported) with their own value and
    /// position, as every non-ASCII byte is.
    pub fn read_bytes(bytes: &[u8], max_bytes: u64) -> Result<PtxModule, PtxError> {
        if bytes.len() as u64 > max_bytes {
            return Err(PtxError::new(
                1,
                1,
                PtxErrorKind::TooLarge,
                too_large(bytes.len() as u64, max_bytes),
            ));
        }
        let substituted = super::lexer::ascii_substitute(bytes);
        let src = match &substituted {
            Some(s) => s.as_str(),
            None => std::str::from_utf8(bytes).unwrap_or_default(),
        };
        let mut p = Parser::with_lexer(Lexer::with_raw(src, bytes, true))?;
        p.check_bodies = true;
        p.module(true)
    }
}

/// The message for a file over the size limit: the size, the limit, and how to raise it.
pub fn too_large(size: u64, max_bytes: u64) -> String {
    format!(
        "{size} bytes is over the limit of {max_bytes} bytes ({} MiB) for one PTX file; raise it with `--max-ptx-bytes N`",
        max_bytes >> 20
    )
}

fn parse_version(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.split_once('.')?;
    if a.is_empty() || b.is_empty() || !(a.bytes().chain(b.bytes())).all(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Bracket nesting the reader follows in a skipped statement.
const MAX_DEPTH: usize = 1024;

fn closing(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        _ => '}',
    }
}

/// The position just after a token.
fn after(t: &Token<'_>) -> (u32, u32) {
    (t.line, t.col.saturating_add(t.text.len() as u32))
}

/// PTX integer literal: the one grammar of [`crate::literal`].
fn parse_int(s: &str) -> Option<u64> {
    crate::literal::parse_int(s)
}

#[cfg(test)]
mod tests;
