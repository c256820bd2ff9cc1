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

use std::collections::{HashMap, HashSet};
use std::fmt;

use super::instr;
use super::lexer::{LexErrorKind, Lexer, Token, TokenKind};

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
pub const INTRODUCED: &[(&str, (u32, u32))] = &[
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

/// A one-token-lookahead parser over the pull lexer: memory does not grow with the file.
struct Parser<'a> {
    lx: Lexer<'a>,
    cur: Option<Token<'a>>,
    /// The token consumed last.
    prev: Option<Token<'a>>,
    version: Option<(u32, u32)>,
    notes: Vec<ModuleNote>,
    /// Whether function bodies are read statement by statement ([`PtxModule::read`]) or
    /// skipped as balanced braces ([`PtxModule::parse`], for fragments).
    check_bodies: bool,
    /// Names declared at module level (variables, functions, aliases, module `.reg`s) and
    /// `%name<N>` ranges, for the names bodies use.
    module_names: HashSet<&'a str>,
    module_ranges: HashMap<&'a str, u64>,
    body: BodyScope<'a>,
    /// Set while a module-level variable declaration without `.extern` is skipped.
    incomplete: Option<IncompleteScan<'a>>,
}

/// A name used in a function body, where, and by which function.
#[derive(Debug, Clone, Copy)]
struct Use<'a> {
    name: &'a str,
    line: u32,
    col: u32,
    /// The target of a `bra`: must be a label of the function.
    branch: bool,
    function: &'a str,
}

/// What one function body declares and uses (reused from function to function). A name is
/// visible from its declaration to the end of its `{ }` scope, as ptxas 12.9 holds it
/// (measured: a register used before its `.reg`, or outside the scope that declares it, is
/// "Unknown symbol"); labels are visible in the whole function (a forward `bra` reads).
#[derive(Debug, Default)]
struct BodyScope<'a> {
    /// Declared names in scope, with how many scopes declare each.
    decls: HashMap<&'a str, u32>,
    /// Names in declaration order, and `%name<N>` ranges, for closing scopes.
    stack: Vec<&'a str>,
    ranges: Vec<(&'a str, u64)>,
    /// `(stack.len(), ranges.len())` at each open scope.
    marks: Vec<(usize, usize)>,
    labels: HashSet<&'a str>,
    /// Branch targets and names not declared where used: resolved against the labels at the
    /// end of the body.
    uses: Vec<Use<'a>>,
    stmt: Vec<Token<'a>>,
    names: Vec<usize>,
}

impl<'a> BodyScope<'a> {
    fn declare(&mut self, d: Decl<'a>) {
        match d {
            Decl::Name(n) => {
                *self.decls.entry(n).or_insert(0) += 1;
                self.stack.push(n);
            }
            Decl::Range(n, c) => self.ranges.push((n, c)),
        }
    }

    fn open(&mut self) {
        self.marks.push((self.stack.len(), self.ranges.len()));
    }

    fn close(&mut self) {
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

    fn knows(&self, name: &str) -> bool {
        self.decls.contains_key(name)
            || numbered(name)
                .is_some_and(|(prefix, v)| self.ranges.iter().any(|&(p, c)| p == prefix && v < c))
    }
}

/// What a declaration declares.
#[derive(Debug, Clone, Copy)]
enum Decl<'a> {
    Name(&'a str),
    /// `%r<5>`: `%r0` to `%r4` (PTX ISA §5.4.6 parameterized variable names).
    Range(&'a str, u64),
}

/// `%r12` as (`%r`, 12).
fn numbered(name: &str) -> Option<(&str, u64)> {
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
struct IncompleteScan<'a> {
    depth: usize,
    in_init: bool,
    /// The last name at depth 0, and whether the token just read is a `[` opened after it.
    name: Option<(&'a str, u32, u32)>,
    just_opened: bool,
    candidate: Option<(&'a str, u32, u32)>,
    found: Option<(&'a str, u32, u32)>,
}

impl<'a> IncompleteScan<'a> {
    fn feed(&mut self, t: &Token<'a>) {
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
    fn finish(mut self) -> Option<(&'a str, u32, u32)> {
        self.end_declarator();
        self.found
    }
}

/// The state spaces of variables whose arrays must be sized (ptxas 12.9 refuses an unsized
/// non-`.extern` array in each, at module level and in a body).
const SIZED_SPACES: &[&str] = &[".global", ".const", ".shared", ".local"];

/// Collects the names a declaration statement declares: `%r<5>` (a range `%r0`..`%r4`, PTX ISA
/// §5.4 "parameterized variable names"), `x[4]`, `a, b`; names inside an initializer are not
/// declared.
#[derive(Debug, Default)]
struct DeclScan<'a> {
    last: Option<&'a str>,
    prev_ident: bool,
    /// 1: `<` after a name, 2: the count read.
    state: u8,
    count: u64,
    in_init: bool,
    depth: usize,
}

impl<'a> DeclScan<'a> {
    fn feed(&mut self, t: &Token<'a>) -> Option<Decl<'a>> {
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

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Result<Parser<'a>, PtxError> {
        Parser::with_lexer(Lexer::new(src, true))
    }

    fn with_lexer(mut lx: Lexer<'a>) -> Result<Parser<'a>, PtxError> {
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

    fn peek(&self) -> Option<&Token<'a>> {
        self.cur.as_ref()
    }

    fn bump(&mut self) -> Result<Option<Token<'a>>, PtxError> {
        let next = self.lx.next_token()?;
        let t = std::mem::replace(&mut self.cur, next);
        if t.is_some() {
            self.prev.clone_from(&t);
        }
        Ok(t)
    }

    fn end_pos(&self) -> (u32, u32) {
        self.lx.position()
    }

    fn err(&self, expected: &str) -> PtxError {
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

    fn eat_punct(&mut self, c: char) -> Result<bool, PtxError> {
        if self.peek().is_some_and(|t| t.is_punct(c)) {
            self.bump()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn expect_punct(&mut self, c: char, what: &str) -> Result<(), PtxError> {
        if self.eat_punct(c)? {
            Ok(())
        } else {
            Err(self.err(what))
        }
    }

    fn number(&mut self, what: &str) -> Result<u64, PtxError> {
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
    fn gate(&mut self, feature: &'static str, line: u32, column: u32) {
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

    fn gate_tok(&mut self, t: &Token<'_>) {
        if let Some(&(f, _)) = INTRODUCED.iter().find(|(f, _)| *f == t.text) {
            self.gate(f, t.line, t.col);
        }
    }

    fn module(mut self, require_header: bool) -> Result<PtxModule, PtxError> {
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
    fn header(&mut self, m: &mut PtxModule) -> Result<(), PtxError> {
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
    fn skip_line_tail(&mut self, line: u32) -> Result<(), PtxError> {
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

    /// Read a function body whose `{` was just consumed, statement by statement (PTX ISA §4.3
    /// statements, §9.2 instructions): nested `{ }` scopes, labels `name:`, declarations
    /// (`.reg`, `.local`, `.shared`, `.param`, …), line directives (`.loc`), other directives up
    /// to their `;`, and instructions read by [`instr::read_statement`]. What ptxas refuses as
    /// a parsing error (a missing `;`, an unbalanced bracket, a malformed operand list, a
    /// statement that is not one) is an error at its position; an opcode the ISA does not
    /// have, a register or name never declared, a branch to a label the function does not have
    /// are notes (ptxas 12.9 reports those as errors after parsing).
    fn body(
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
    fn statement(
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

    fn note_incomplete(&mut self, scan: IncompleteScan<'a>) {
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
    fn skip_body(&mut self, open_line: u32, open_col: u32) -> Result<(), PtxError> {
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

    fn function(
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
        // Performance, cluster and ABI directives, and pragmas, between prototype and body.
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

    fn param(&mut self, what: &str, kind: FunctionKind) -> Result<ParamDecl, PtxError> {
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

/// Bracket nesting the reader follows in a skipped statement.
const MAX_DEPTH: usize = 1024;
/// Tokens in one body statement (the longest producer statements, `wgmma` with 128
/// accumulator registers, have a few hundred).
const MAX_STATEMENT_TOKENS: usize = 1 << 16;

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
        assert_eq!(m.address_size, Some(AddressSize::A64));
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
        assert_eq!(m.effective_address_size(), AddressSize::A32);
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
            "x.ptx:3:2: expected `,` or `)` after a parameter declaration, found `.param`"
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

    fn read_err(src: &str) -> (u32, u32, PtxErrorKind, String) {
        let e = PtxModule::read(src).unwrap_err();
        (e.line, e.column, e.kind, e.message)
    }

    // What ptxas 12.9.86 refuses as a whole file (measured, `ptxas -arch=sm_90 -c`): an empty
    // file, garbage or a file without `.version` ("Missing .version directive at start of
    // file"), `.target` missing or first ("Missing .target directive" / "Missing .version"),
    // a second `.address_size`, a stray `}`, a body never closed, a `.v2` after the type.
    #[test]
    fn read_refuses_what_is_not_a_module() {
        for src in [
            "",
            "   \n\n",
            "hello world this is garbage\n",
            ".target sm_90\n.version 8.0\n",
        ] {
            let (line, _, kind, msg) = read_err(src);
            assert_eq!(kind, PtxErrorKind::Header, "{src:?}");
            assert!(msg.contains("expected `.version`"), "{msg}");
            assert!(line >= 1);
        }
        let (line, col, kind, msg) = read_err(".version 8.0\n.address_size 64\n");
        assert_eq!((line, col, kind), (2, 1, PtxErrorKind::Header));
        assert!(msg.contains("expected `.target`"), "{msg}");
        let h = ".version 8.0\n.target sm_90\n.address_size 64\n";
        let (line, col, _, msg) = read_err(&format!("{h}.address_size 64\n"));
        assert_eq!((line, col), (4, 1));
        assert!(msg.contains("second `.address_size`"), "{msg}");
        let (line, col, _, msg) = read_err(&format!("{h}.func f() {{ ret; }}\n}}\n"));
        assert_eq!((line, col), (5, 1));
        assert!(msg.contains("closes nothing"), "{msg}");
        let (line, _, _, msg) = read_err(&format!("{h}.func f() {{\n ret;\n"));
        assert_eq!(line, 6);
        assert!(msg.contains("opened at line 4 column 11"), "{msg}");
        let (line, col, _, msg) = read_err(&format!("{h}.func f(.param .b32 .v2 a);\n"));
        assert_eq!((line, col), (4, 21));
        assert!(msg.contains("vector"), "{msg}");
        let (line, col, kind, _) = read_err(&format!("{h}/* open\n.func f();\n"));
        assert_eq!((line, col), (4, 1));
        assert_eq!(kind, PtxErrorKind::Lex(LexErrorKind::UnterminatedComment));
        let (line, _, kind, _) = read_err(&format!("{h}.global .b8 x[4] = {{1, 2;\n"));
        assert_eq!((line, kind), (4, PtxErrorKind::Syntax));
        let (_, _, kind, _) = read_err("\u{feff}.version 8.0\n.target sm_90\n");
        assert_eq!(kind, PtxErrorKind::Lex(LexErrorKind::ByteOrderMark));
        let (line, _, _, msg) = read_err(&format!("{h}foo;\n"));
        assert_eq!(line, 4);
        assert!(msg.contains("a directive at module level"), "{msg}");
        // A fragment is fine for `parse`, which internal callers use on snippets.
        assert!(PtxModule::parse(".func f(.param .b32 a);").is_ok());
    }

    // Forms of old producers that ptxas 12.9 accepts (measured): `.func` declarations without
    // `;` before the next directive (ISA 1.4 and 8.0 alike), `.reg` parameters, `.entry`
    // without a parameter list, `@@DWARF` lines, and ISA 1.x files without `.address_size`.
    #[test]
    fn old_producer_forms_read() {
        let src = ".version 1.4\n.target sm_13\n.func (.reg .u32 %rv) f (.reg .u32 %a)\n\
            .func g (.reg .u32 %a)\n.entry k\n{\n ret;\n}\n\
            .func (.reg .u32 %rv) f (.reg .u32 %a)\n{\n mov.u32 %rv, %a;\n ret;\n}\n\
            @@DWARF .section .debug_info, \"\",@progbits\n@@DWARF .byte 0x1, 0x2\n\
            .func g (.reg .u32 %a) { ret; }\n";
        let m = PtxModule::read(src).unwrap();
        let got: Vec<_> = m
            .functions
            .iter()
            .map(|f| (f.name.as_str(), f.is_definition, f.params.len(), f.line))
            .collect();
        assert_eq!(
            got,
            vec![
                ("f", false, 1, 3),
                ("g", false, 1, 4),
                ("k", true, 0, 5),
                ("f", true, 1, 9),
                ("g", true, 1, 16)
            ]
        );
        assert_eq!(m.version_number(), Some((1, 4)));
        assert_eq!(m.address_size, None);
        assert!(m.notes.is_empty(), "{:?}", m.notes);
    }

    // Module-level directives and attributes of ISA 2.x-9.x read, each where the ISA puts it.
    #[test]
    fn directives_and_attributes_of_every_version() {
        let src = ".version 9.0\n.target sm_100a\n.address_size 64\n\
            .extern .func (.param .b32 r) ext (.param .b64 p) .noreturn;\n\
            .weak .func w();\n.common .global .align 4 .u32 c;\n.hidden .func h();\n\
            .visible .func f() .noreturn .abi_preserve 8 .abi_preserve_control 2 { trap; }\n\
            .alias a1, f;\n.pragma \"nounroll\";\n\
            .visible .entry k(.param .u64 .ptr .global .align 16 p, .param .texref t,\n\
              .param .samplerref s, .param .surfref u, .param .align 8 .b8 m[2][4])\n\
            .maxntid 128, 1, 1 .reqntid 128 .minnctapersm 2 .maxnreg 64\n\
            .reqnctapercluster 2, 1, 1 .explicitcluster .maxclusterrank 8 .blocksareclusters\n\
            .pragma \"nounroll\";\n{ ret; }\n\
            .section .debug_abbrev { .b8 1 .b8 17 }\n\
            .func $L__f$x(.param .b32 %a_1) { ret; }\n";
        let m = PtxModule::read(src).unwrap();
        // `.hidden` reads, but no ptxas up to 13.5 (ISA 9.5) does: a note, at line 7.
        let notes: Vec<_> = m
            .notes
            .iter()
            .map(|n| (n.line, matches!(n.kind, NoteKind::Placement { .. })))
            .collect();
        assert_eq!(notes, vec![(7, true)], "{:?}", m.notes);
        let names: Vec<_> = m.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, vec!["ext", "w", "h", "f", "k", "$L__f$x"]);
        assert!(m.functions[2].linkage.is_hidden);
        assert_eq!(m.aliases, vec![("a1".to_string(), "f".to_string())]);
        let k = &m.functions[4];
        assert_eq!(k.params.len(), 5);
        assert_eq!(k.params[4].array_len(), Some(8));
        assert_eq!(k.params[1].ty, PtxType::TexRef);
        assert_eq!(
            k.directives
                .iter()
                .map(|d| d.0.as_str())
                .collect::<Vec<_>>(),
            vec![
                ".maxntid",
                ".reqntid",
                ".minnctapersm",
                ".maxnreg",
                ".reqnctapercluster",
                ".explicitcluster",
                ".maxclusterrank",
                ".blocksareclusters",
                ".pragma"
            ]
        );
    }

    // What a version does not allow is a note citing the version, not a read failure.
    // Thresholds ptxas 12.9 states ("Feature '…' requires PTX ISA .version X or later"):
    // `.weak` 3.1, `.common` 5.0, `.alias` 6.3, `.noreturn` 6.4, `.address_size` 2.3.
    #[test]
    fn version_gated_features_are_notes() {
        let src = ".version 2.2\n.target sm_20\n.address_size 64\n.weak .func w();\n\
            .common .global .u32 c;\n.func f() .noreturn { trap; }\n.alias a, f;\n";
        let m = PtxModule::read(src).unwrap();
        let got: Vec<_> = m
            .notes
            .iter()
            .map(|n| match &n.kind {
                NoteKind::NeedsVersion { feature, since, .. } => (n.line, *feature, *since),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (3, ".address_size", (2, 3)),
                (4, ".weak", (3, 1)),
                (5, ".common", (5, 0)),
                (6, ".noreturn", (6, 4)),
                (7, ".alias", (6, 3))
            ]
        );
        // ptxas 12.9 refuses `.noreturn` on a kernel and `.maxntid` on a device function as
        // syntax errors: notes of placement.
        let e =
            PtxModule::read(".version 8.0\n.target sm_90\n.entry k() .maxntid 0x80, 09 { ret; }\n")
                .unwrap_err();
        assert_eq!((e.line, e.column), (3, 27), "{e}");
        assert!(PtxModule::read(
            ".version 8.0\n.target sm_90\n.entry k() .maxntid 0x80, 010, 0b1 { ret; }\n"
        )
        .is_ok());
        let m = PtxModule::read(".version 8.0\n.target sm_90\n.entry k() .noreturn { ret; }\n.func f() .maxntid 32 { ret; }\n").unwrap();
        let places: Vec<_> = m
            .notes
            .iter()
            .map(|n| (n.line, matches!(n.kind, NoteKind::Placement { .. })))
            .collect();
        assert_eq!(places, vec![(3, true), (4, true)]);
    }

    fn body(stmts: &str) -> String {
        format!(
            ".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n\t.reg .b32 %r<4>;\n\t.reg .pred %p<2>;\n{stmts}\n\tret;\n}}\n"
        )
    }

    // What ptxas 12.9.86 says of each statement on line 8 of `body` (measured, `-arch=sm_90
    // -O0 -c`): "Parsing error" (a read error here) for a missing `;`, a missing comma, an
    // empty operand, an open parenthesis; "Not a name of any known instruction" and
    // "Unknown symbol" (errors after parsing: notes here).
    #[test]
    fn body_statements_are_read_as_ptxas_reads_them() {
        for (stmt, line, col, want) in [
            // ptxas: line 9, Parsing error near 'ret'.
            ("add.s32 %r1, %r2, %r3", 9, 2, "`,` between operands or `;`"),
            // ptxas: Parsing error near '%r3'.
            (
                "add.s32 %r1, %r2 %r3;",
                8,
                18,
                "`,` between operands or `;`",
            ),
            // ptxas: Parsing error near ';'.
            ("add.s32 %r1, %r2, ;", 8, 19, "an operand"),
            // ptxas: Parsing error near '%r2' (the `(` is never closed).
            ("add.s32 %r1, (%r2, %r3;", 8, 23, "closing `(`"),
            // ptxas: line 9, Parsing error near 'ret' (a stray `}` closes the body early).
            ("}", 9, 2, "a directive at module level"),
            // ptxas: Parsing error near '.s32' (`add` is read as the predicate).
            (
                "@ add.s32 %r1, %r2, %r3;",
                8,
                6,
                "an instruction after the guard",
            ),
            // ptxas: Parsing error near '42'.
            ("42;", 8, 1, "an instruction, a label"),
        ] {
            let e = PtxModule::read(&body(stmt)).unwrap_err();
            assert_eq!(e.kind, PtxErrorKind::Syntax, "{stmt}: {e}");
            assert_eq!((e.line, e.column), (line, col), "{stmt}: {e}");
            assert!(e.message.contains(want), "{stmt}: {e}");
        }
        // A missing `;` before the `}` that ends the body.
        let e =
            PtxModule::read(".version 8.8\n.target sm_90\n.entry k()\n{\n\tret\n}\n").unwrap_err();
        assert_eq!((e.line, e.column), (5, 5), "{e}");
        assert!(e.message.contains("expected `;`"), "{e}");
    }

    #[test]
    fn unknown_opcodes_and_undeclared_names_are_notes() {
        let kinds = |stmt: &str| -> Vec<(u32, u32, String)> {
            PtxModule::read(&body(stmt))
                .unwrap()
                .notes
                .into_iter()
                .map(|n| (n.line, n.column, n.kind.to_string()))
                .collect()
        };
        // ptxas: "Not a name of any known instruction: 'foo'".
        let n = kinds("\tfoo.b32 %r1, %r2;");
        assert_eq!((n.len(), n[0].0, n[0].1), (1, 8, 2), "{n:?}");
        assert!(n[0].2.contains("`foo` is not an instruction"), "{n:?}");
        // ptxas: "Unknown symbol '%r9'" (`%r<4>` declares %r0..%r3), '%r4', '%foo', '%p5'.
        for (stmt, name) in [
            ("\tmov.u32 %r9, %r1;", "%r9"),
            ("\tmov.u32 %r1, %r4;", "%r4"),
            ("\tmov.u32 %r1, %foo;", "%foo"),
            ("\t@%p5 bra $L1;\n$L1:", "%p5"),
            ("\tmov.u32 %r1, undeclared_sym;", "undeclared_sym"),
        ] {
            let n = kinds(stmt);
            assert_eq!(n.len(), 1, "{stmt}: {n:?}");
            assert!(
                n[0].2.contains(&format!("`{name}` is used in `k`")),
                "{n:?}"
            );
        }
        // ptxas: "Unknown symbol '$L_none'".
        let n = kinds("\tbra $L_none;");
        assert!(n[0].2.contains("not a label of `k`"), "{n:?}");
        // ptxas accepts all of these (measured): special registers, a forward label, `%r01`,
        // a guard, WARP_SZ.
        for ok in [
            "\tmov.u32 %r1, %tid.x;",
            "\t@%p1 bra $L1;\n$L1:",
            "\tmov.u32 %r01, 1;",
            "\tmov.u32 %r1, WARP_SZ;",
            "\tmov.u32 %r1, %envreg31;",
        ] {
            assert_eq!(kinds(ok), vec![], "{ok}");
        }
    }

    // ptxas 12.9 on this module (measured): "Non-external variable 'X' has incomplete type"
    // for a, c, s, m1, bad2, vis, wk, cm (module level) and bs, bl (in the body), at their
    // lines; `ok1` (initializer), `ok2` (.extern) and `ok3` are accepted.
    #[test]
    fn unsized_arrays_need_extern_or_an_initializer() {
        let src = ".version 8.5\n.target sm_90\n.address_size 64\n\
            .global .b32 a[];\n.const .b32 c[];\n.shared .b8 s[];\n\
            .global .u32 ok1[] = {1, 2, 3};\n.extern .global .b32 ok2[];\n\
            .global .u32 m1[][4];\n.global .u32 ok3[2][4], bad2[];\n\
            .visible .global .b32 vis[];\n.weak .global .b32 wk[];\n.common .global .b32 cm[];\n\
            .visible .entry k()\n{\n.reg .b32 %r<2>;\n.shared .b8 bs[];\n.local .b8 bl[];\n\
            .extern .shared .b8 ok4[];\nret;\n}\n";
        let got: Vec<(String, u32)> = PtxModule::read(src)
            .unwrap()
            .notes
            .iter()
            .filter_map(|n| match &n.kind {
                NoteKind::IncompleteArray { name } => Some((name.clone(), n.line)),
                _ => None,
            })
            .collect();
        let want: Vec<(String, u32)> = [
            ("a", 4),
            ("c", 5),
            ("s", 6),
            ("m1", 9),
            ("bad2", 10),
            ("vis", 11),
            ("wk", 12),
            ("cm", 13),
            ("bs", 17),
            ("bl", 18),
        ]
        .iter()
        .map(|&(n, l)| (n.to_string(), l))
        .collect();
        assert_eq!(got, want);
    }

    // ptxas 12.9 (measured): "Unknown modifier '.foo'", "Unknown modifier '.relaxd'",
    // "Illegal modifier '.relaxed' for instruction 'add'", "Unknown modifier '.wide'" on the
    // first four; it assembles the rest.
    #[test]
    fn modifiers_are_checked_against_the_opcode() {
        let h = ".version 8.8\n.target sm_90a\n.address_size 64\n.entry k()\n{\n\
            .reg .b32 %r<4>;\n.reg .b64 %rd<3>;\n.reg .b16 %h<2>;\n.reg .pred %p;\n";
        let stmts = [
            "add.foo.s32 %r1, %r2, %r3;",
            "ld.global.relaxd.u32 %r1, [%rd1];",
            "add.relaxed.s32 %r1, %r2, %r3;",
            "add.wide.s32 %r1, %r2, %r3;",
            "ld.global.nc.L1::no_allocate.v4.f32 {%r0, %r1, %r2, %r3}, [%rd1];",
            "ld.global.L2::128B.u32 %r1, [%rd1];",
            "cvt.rn.satfinite.e4m3x2.f32 %h1, %r1, %r2;",
            "fence.proxy.async.shared::cta;",
            "atom.add.acquire.gpu.s32 %r1, [%rd1], %r2;",
            "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [%rd1], %r1, [%rd2];",
            "setp.ne.and.f32 %p, %r1, %r2, %p;",
            "ld.global.L1::evict_last.L2::256B.v2.u32 {%r1, %r2}, [%rd1];",
            "wgmma.fence.sync.aligned;",
        ];
        let body = stmts.join("\n");
        let m = PtxModule::read(&format!("{h}{body}\nret;\n}}\n")).unwrap();
        let got: Vec<(u32, String)> = m
            .notes
            .iter()
            .filter_map(|n| match &n.kind {
                NoteKind::UnknownModifier { opcode, modifier } => {
                    Some((n.line, format!("{opcode}.{modifier}")))
                }
                _ => None,
            })
            .collect();
        let want = [
            (10, "add.foo"),
            (11, "ld.relaxd"),
            (12, "add.relaxed"),
            (13, "add.wide"),
        ];
        assert_eq!(
            got,
            want.iter()
                .map(|&(l, s)| (l, s.to_string()))
                .collect::<Vec<_>>()
        );
    }

    // ptxas 12.9 holds names to declaration before use and to their scope (measured: each is
    // "Unknown symbol"): a register used before its `.reg`, a module variable declared after
    // the function, a register of an inner scope used after it closes.
    #[test]
    fn names_are_declared_before_use_and_scoped() {
        let undeclared = |src: &str| -> Vec<u32> {
            PtxModule::read(src)
                .unwrap()
                .notes
                .iter()
                .filter(|n| matches!(n.kind, NoteKind::Undeclared { .. }))
                .map(|n| n.line)
                .collect()
        };
        let h = ".version 8.8\n.target sm_90\n.address_size 64\n";
        assert_eq!(
            undeclared(&format!(
                "{h}.entry k()\n{{\n mov.u32 %r1, 1;\n .reg .b32 %r<4>;\n ret;\n}}\n"
            )),
            vec![6]
        );
        assert_eq!(
            undeclared(&format!("{h}.entry k()\n{{\n .reg .b64 %rd<4>;\n mov.u64 %rd1, gv;\n ret;\n}}\n.global .u32 gv;\n")),
            vec![7]
        );
        assert_eq!(
            undeclared(&format!(
                "{h}.entry k()\n{{\n {{\n .reg .b32 %q;\n }}\n mov.u32 %q, 1;\n ret;\n}}\n"
            )),
            vec![9]
        );
        // Declared first: variables, functions (recursion too), parameters, a call scope.
        let src = format!(
            "{h}.global .u32 gv;\n.extern .func (.param .b32 r) ext(.param .b32 a);\n\
             .visible .func (.param .b32 rv) f(.param .b32 x)\n{{\n .reg .b32 %r<3>;\n .reg .b64 %rd1;\n\
             ld.param.b32 %r1, [x];\n mov.u64 %rd1, gv;\n\
             {{\n .param .b32 a0;\n st.param.b32 [a0+0], %r1;\n .param .b32 r0;\n\
             call.uni (r0), ext, (a0);\n ld.param.b32 %r2, [r0+0];\n }}\n\
             {{ .param .b32 b0; st.param.b32 [b0], %r2; .param .b32 b1; call.uni (b1), f, (b0); }}\n\
             st.param.b32 [rv+0], %r2;\n ret;\n}}\n"
        );
        assert_eq!(undeclared(&src), Vec::<u32>::new());
    }
}
