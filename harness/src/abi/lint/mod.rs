//! The parameter-passing linter: checks every `.func` and `.entry` prototype of a PTX module
//! against ptx-interop 13.2 §2.3 (the table of source type classes and its notes A–E).
//!
//! What PTX alone can decide. A prototype shows the state space, the PTX type, `.align` and
//! the array size of each parameter, never the source type. So the linter judges the shape of
//! each declaration, not which source type it came from:
//! - decidable: a scalar narrower than 32 bits (note A: 8- and 16-bit integers are widened, and
//!   no other source type maps to an 8- or 16-bit scalar); a 16-bit float (note C); a byte
//!   array without `.align` or with an element type other than `.b8` (aggregate row); an
//!   alignment outside {1, 2, 4, …, 128} (note D); an array size that is not a multiple of its
//!   alignment (§1.2: an aggregate's size is a multiple of its alignment); an opaque
//!   `.texref`/`.samplerref`/`.surfref` parameter instead of a `.b64` handle (note E); a type
//!   the table has no row for (`.pred`, `.b128`, vectors); a non-`.param` state space (§2.3:
//!   all parameters and return values of a device function are in `.param`); and a `.ptr`
//!   parameter whose width is not the module's `.address_size` (§1.1, §2.3 pointer rows).
//!   `.ptr` is a kernel-parameter attribute (ptxas 12.9: "Illegal placement of kernel parameter
//!   attribute" on a `.func`), so from PTX alone pointer width is decidable for kernels only.
//! - not decidable: whether a `.u32`/`.b32` or `.u64`/`.b64` scalar is a pointer (an `int` and
//!   a 32-bit pointer, or a `long long` and a 64-bit pointer, declare identically), whether a
//!   `.b32` is a float or an integer, and whether an aggregate's `.align` is the source type's
//!   alignment. Those need the source signature: see `abi::paramgen::check_decl`.
//!
//! Kernel (`.entry`) parameters follow the host's layout rather than the table (NVRTC 12.9
//! declares a `char` kernel parameter `.param .u8`), so for them only well-formedness is
//! checked: alignment, size multiple of alignment, `.ptr` width.

pub mod syscalls;

use std::fmt;

use std::collections::HashMap;

use crate::ptx::module::{
    AddressSize, FunctionDecl, FunctionKind, ModuleNote, NoteKind, ParamDecl, ParamSpace, PtxError,
    PtxModule, PtxType, MAX_PTX_BYTES,
};

/// One rule of the table, with the clause that states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A device-function parameter or return value outside the `.param` state space.
    ParamSpace,
    /// An integer scalar narrower than 32 bits.
    NarrowInteger,
    /// A 16-bit floating-point scalar (`.f16`, `.bf16`, or a packed pair of them).
    HalfFloat,
    /// An array that is not `.align A .b8 name[N]`.
    AggregateForm,
    /// An alignment outside {1, 2, 4, 8, 16, 32, 64, 128}.
    Alignment,
    /// An array size that is not a multiple of its alignment.
    SizeMultiple,
    /// A `.ptr` parameter whose width disagrees with `.address_size`.
    PointerWidth,
    /// An opaque texture/sampler/surface type instead of a 64-bit handle.
    Handle,
    /// A PTX type the table has no row for.
    TableType,
    /// Source-aware only: a scalar whose PTX width or class is not the table's for its source
    /// type (e.g. a `long long` as `.b32`, a `float` as `.u32`).
    ScalarClass,
    /// Source-aware only: an aggregate whose `.align` is not its alignment (note D).
    AggregateAlign,
    /// Source-aware only: an aggregate whose array size is not its size.
    AggregateSize,
    /// Source-aware only: the function or the value is not in the producer's output.
    Missing,
    /// A kernel parameter outside `.param` (ptxas 12.9: "Entry parameter … must have .param
    /// state space").
    EntryParamSpace,
    /// Two parameters (or a parameter and a return value) of one function with one name
    /// (ptxas 12.9: "Duplicate definition of variable").
    DuplicateParam,
    /// A vector in the `.param` state space (ptxas 12.9: "cannot be allocated in .param state
    /// space").
    ParamVector,
    /// A kernel parameter declared `name[]` (ptxas 12.9: "Parameter to entry function cannot
    /// be an incomplete array").
    EntryIncompleteArray,
    /// A feature newer than the module's `.version`.
    PtxVersion,
    /// A directive where the PTX grammar does not allow it (ptxas 12.9: a syntax error).
    Placement,
    /// A non-ASCII byte in a comment or string (ptxas 12.9 refuses the file).
    NonAscii,
    /// An opcode the PTX ISA does not have, in a function body.
    UnknownInstruction,
    /// A variable `name[]` with neither `.extern` nor an initializer (ptxas 12.9:
    /// "Non-external variable has incomplete type").
    IncompleteArray,
    /// A modifier the opcode's syntax does not give it (ptxas 12.9: "Unknown modifier").
    UnknownModifier,
    /// A register or name used in a body and declared nowhere.
    Undeclared,
    /// A `bra` to a label that is not in the function.
    UndefinedLabel,
    /// ptx-interop 13.2 ch. 3, the system calls: see `abi::lint::syscalls`.
    Syscall(syscalls::SyscallRule, syscalls::Syscall),
}

impl Rule {
    /// Short stable id, for waivers and reports.
    pub fn id(self) -> &'static str {
        match self {
            Rule::ParamSpace => "param-space",
            Rule::NarrowInteger => "narrow-integer",
            Rule::HalfFloat => "half-float",
            Rule::AggregateForm => "aggregate-form",
            Rule::Alignment => "alignment",
            Rule::SizeMultiple => "size-multiple",
            Rule::PointerWidth => "pointer-width",
            Rule::Handle => "handle",
            Rule::TableType => "table-type",
            Rule::ScalarClass => "scalar-class",
            Rule::AggregateAlign => "aggregate-align",
            Rule::AggregateSize => "aggregate-size",
            Rule::Missing => "missing",
            Rule::EntryParamSpace => "entry-param-space",
            Rule::DuplicateParam => "duplicate-param",
            Rule::ParamVector => "param-vector",
            Rule::EntryIncompleteArray => "entry-incomplete-array",
            Rule::PtxVersion => "ptx-version",
            Rule::Placement => "placement",
            Rule::NonAscii => "non-ascii",
            Rule::UnknownInstruction => "unknown-instruction",
            Rule::UnknownModifier => "unknown-modifier",
            Rule::IncompleteArray => "incomplete-array",
            Rule::Undeclared => "undeclared-name",
            Rule::UndefinedLabel => "undefined-label",
            Rule::Syscall(r, _) => r.id(),
        }
    }

    pub fn clause(self) -> &'static str {
        match self {
            Rule::ParamSpace => "ptx-interop 13.2 §2.3",
            Rule::NarrowInteger => "ptx-interop 13.2 §2.3 note A",
            Rule::HalfFloat => "ptx-interop 13.2 §2.3 note C",
            Rule::AggregateForm => "ptx-interop 13.2 §2.3 aggregates row",
            Rule::Alignment => "ptx-interop 13.2 §2.3 note D",
            Rule::SizeMultiple => "ptx-interop 13.2 §1.2, §2.3 aggregates row",
            Rule::PointerWidth => "ptx-interop 13.2 §1.1, §2.3 pointer rows",
            Rule::Handle => "ptx-interop 13.2 §2.3 note E",
            Rule::TableType | Rule::ScalarClass | Rule::Missing => "ptx-interop 13.2 §2.3 table",
            Rule::AggregateAlign => "ptx-interop 13.2 §2.3 note D",
            Rule::AggregateSize => "ptx-interop 13.2 §2.3 aggregates row",
            Rule::EntryParamSpace => "PTX ISA §5.1.6 kernel parameters (.param state space)",
            Rule::DuplicateParam => "PTX ISA §5.4 variable declarations (one name per scope)",
            Rule::ParamVector => "PTX ISA §5.1.6 (.param variables are scalars or arrays)",
            Rule::EntryIncompleteArray => "PTX ISA §5.1.6 kernel parameters (sized)",
            Rule::PtxVersion => "PTX ISA ch. 11 directives, PTX ISA Notes of each",
            Rule::Placement => "PTX ISA ch. 11 directives (where each may appear)",
            Rule::NonAscii => "PTX ISA §4.1 source format (ASCII)",
            Rule::UnknownInstruction => "PTX ISA §9.7 instructions",
            Rule::UnknownModifier => "PTX ISA §9.7 instructions (the syntax of each)",
            Rule::IncompleteArray => {
                "PTX ISA §5.4 variables, array declarations (`[]` only with .extern or an initializer)"
            }
            Rule::Undeclared => {
                "PTX ISA §5.4 variables (declared before use), ch. 10 special registers"
            }
            Rule::UndefinedLabel => "PTX ISA §9.7.12 bra (a label in the current function)",
            Rule::Syscall(_, call) => call.clause(),
        }
    }
}

/// A parameter or return value that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub file: String,
    pub line: u32,
    pub function: String,
    pub kind: FunctionKind,
    /// `parameter 0 \`x\`` or `return value 0 \`func_retval0\``.
    pub position: String,
    /// The offending declaration as PTX text.
    pub decl: String,
    pub rule: Rule,
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FunctionKind::Func => ".func",
            FunctionKind::Entry => ".entry",
        };
        if self.function.is_empty() {
            return write!(
                f,
                "{}:{}:{}: {} [{}, {}]",
                self.file,
                self.line,
                self.position,
                self.message,
                self.rule.id(),
                self.rule.clause()
            );
        }
        write!(
            f,
            "{}:{}: {kind} `{}` {} (`{}`): {} [{}, {}]",
            self.file,
            self.line,
            self.function,
            self.position,
            self.decl,
            self.message,
            self.rule.id(),
            self.rule.clause()
        )
    }
}

/// Read `src` as a whole PTX file ([`PtxModule::read`]) and lint it. `Err` is the "cannot
/// read" outcome (exit 2 in the CLI contract).
pub(crate) fn lint_source(src: &str, file: &str) -> Result<Vec<Violation>, PtxError> {
    lint_source_counted(src, file).map(|r| r.violations)
}

/// What linting one file found, and how many functions it checked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct LintReport {
    pub violations: Vec<Violation>,
    /// Distinct `.func`/`.entry` names checked (a declaration and its definition count once).
    pub functions: usize,
}

/// [`lint_source`] with the count of functions checked.
pub(crate) fn lint_source_counted(src: &str, file: &str) -> Result<LintReport, PtxError> {
    let module = PtxModule::read(src)?;
    Ok(lint_module(&module, src, file))
}

fn lint_module(module: &PtxModule, src: &str, file: &str) -> LintReport {
    let mut v = lint(module, file);
    // ch. 3: system-call prototypes and call sites.
    v.extend(syscalls::lint(module, src, file));
    v.sort_by_key(|x| x.line);
    if module.address_size.is_none() {
        // No default is assumed silently: a finding that depends on the pointer width says
        // where the width came from (PTX ISA `.address_size`: 32 when absent; ptxas 12.9
        // assumes the same). A fragment without `.version`/`.target` is refused by `read`.
        for x in v
            .iter_mut()
            .filter(|x| matches!(x.rule, Rule::PointerWidth | Rule::Syscall(..)))
        {
            x.message += " (no `.address_size` in the module: the PTX ISA default, 32, applies; add `.address_size 64` after `.target` for 64-bit code)";
        }
    }
    let mut names: Vec<&str> = module.functions.iter().map(|f| f.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    LintReport {
        violations: v,
        functions: names.len(),
    }
}

/// Why a file cannot be judged. Its `Display` is the one line `abi lint` prints: `FILE:LINE:
/// COLUMN: what was expected` for a read error, `FILE: cannot read: …` otherwise.
#[derive(Debug, thiserror::Error)]
pub enum LintFileError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: cannot read: not a regular file; give a .ptx file")]
    NotAFile { file: String },
    #[error("{file}: {}", crate::ptx::module::too_large(*size, *max_bytes))]
    TooLarge {
        file: String,
        size: u64,
        max_bytes: u64,
    },
    #[error("{}", error.at(file))]
    Read { file: String, error: PtxError },
}

/// Read and lint one file; `Err` says why it cannot be judged.
pub fn lint_path(path: &std::path::Path) -> Result<Vec<Violation>, LintFileError> {
    lint_file(path).map(|r| r.violations)
}

/// [`lint_path`] with the count of functions checked. The size is checked before reading, and
/// only regular files are read (a FIFO or `/dev/zero` would never end). A byte that is not
/// UTF-8 is reported with its own value at its line and column.
pub(crate) fn lint_file(path: &std::path::Path) -> Result<LintReport, LintFileError> {
    lint_file_within(path, MAX_PTX_BYTES)
}

/// [`lint_file`] with another size limit (`gpucts abi lint --max-ptx-bytes`).
pub(crate) fn lint_file_within(
    path: &std::path::Path,
    max_bytes: u64,
) -> Result<LintReport, LintFileError> {
    let file = path.display().to_string();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(source) => return Err(LintFileError::Io { file, source }),
    };
    if !meta.is_file() {
        return Err(LintFileError::NotAFile { file });
    }
    if meta.len() > max_bytes {
        return Err(LintFileError::TooLarge {
            file,
            size: meta.len(),
            max_bytes,
        });
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(source) => return Err(LintFileError::Io { file, source }),
    };
    let module = match PtxModule::read_bytes(&bytes, max_bytes) {
        Ok(m) => m,
        Err(error) => return Err(LintFileError::Read { file, error }),
    };
    // The system-call checks read the text; a file that is not UTF-8 has been refused or its
    // bad bytes are in comments, where the lossy text has the same statements.
    let src = String::from_utf8_lossy(&bytes);
    Ok(lint_module(&module, &src, &file))
}

/// Exit status of `gpucts abi lint` for one file: 0 conforms, 1 violations, 2 cannot read.
pub(crate) fn exit_code(result: &Result<Vec<Violation>, PtxError>) -> i32 {
    match result {
        Ok(v) if v.is_empty() => 0,
        Ok(_) => 1,
        Err(_) => 2,
    }
}

/// Whether two declarations have one shape: everything but the name.
fn same_shape(a: &ParamDecl, b: &ParamDecl) -> bool {
    a.space == b.space
        && a.align == b.align
        && a.ty == b.ty
        && a.vector == b.vector
        && a.array == b.array
        && a.ptr == b.ptr
}

/// Whether `a` and `b` are one prototype, parameter names aside.
fn same_prototype(a: &FunctionDecl, b: &FunctionDecl) -> bool {
    a.kind == b.kind
        && a.returns.len() == b.returns.len()
        && a.params.len() == b.params.len()
        && a.returns
            .iter()
            .zip(&b.returns)
            .all(|(x, y)| same_shape(x, y))
        && a.params
            .iter()
            .zip(&b.params)
            .all(|(x, y)| same_shape(x, y))
}

/// Every violation in `module`, in source order. Each function is judged once: on its
/// definition when it has one, else on its first declaration; a forward declaration whose
/// prototype has the definition's shape (parameter names may differ, as in LLVM's output) is
/// not reported again. Linear in the number of functions.
pub fn lint(module: &PtxModule, file: &str) -> Vec<Violation> {
    let addr = module.effective_address_size();
    let mut out = Vec::new();
    // The prototype each name is judged on: its definition, else its first declaration.
    let mut judged: HashMap<&str, usize> = HashMap::with_capacity(module.functions.len());
    for (i, f) in module.functions.iter().enumerate() {
        match judged.get(f.name.as_str()) {
            Some(&j) if module.functions[j].is_definition || !f.is_definition => {}
            _ => {
                judged.insert(f.name.as_str(), i);
            }
        }
    }
    for (i, f) in module.functions.iter().enumerate() {
        let j = judged.get(f.name.as_str()).copied().unwrap_or(i);
        if j != i && same_prototype(f, &module.functions[j]) {
            continue;
        }
        for (k, p) in f.returns.iter().enumerate() {
            check(f, p, ("return value", k), addr, file, &mut out);
        }
        for (k, p) in f.params.iter().enumerate() {
            check(f, p, ("parameter", k), addr, file, &mut out);
        }
        duplicates(f, file, &mut out);
    }
    for n in &module.notes {
        out.push(note(n, file));
    }
    out.sort_by_key(|v| v.line);
    out
}

/// Two parameters or return values of `f` with one name.
fn duplicates(f: &FunctionDecl, file: &str, out: &mut Vec<Violation>) {
    if f.returns.len() + f.params.len() < 2 {
        return;
    }
    // Few parameters: a linear scan of the earlier ones; many: a map (linear either way).
    let many = f.returns.len() + f.params.len() > 16;
    let mut seen: HashMap<&str, u32> = HashMap::new();
    let mut earlier: Vec<(&str, u32)> = Vec::new();
    for (pos, p) in f
        .returns
        .iter()
        .enumerate()
        .map(|(i, p)| (("return value", i), p))
        .chain(
            f.params
                .iter()
                .enumerate()
                .map(|(i, p)| (("parameter", i), p)),
        )
    {
        if p.name.is_empty() {
            continue;
        }
        let first = if many {
            seen.insert(p.name.as_str(), p.line)
        } else {
            let hit = earlier.iter().find(|(n, _)| *n == p.name).map(|&(_, l)| l);
            earlier.push((p.name.as_str(), p.line));
            hit
        };
        if let Some(first) = first {
            out.push(Violation {
                file: file.to_string(),
                line: p.line,
                function: f.name.clone(),
                kind: f.kind,
                position: format!("{} {} `{}`", pos.0, pos.1, p.name),
                decl: p.render(),
                rule: Rule::DuplicateParam,
                message: format!(
                    "`{}` is already declared at line {first} in this prototype",
                    p.name
                ),
            });
        }
    }
}

fn note(n: &ModuleNote, file: &str) -> Violation {
    let rule = match n.kind {
        NoteKind::NonAscii { .. } => Rule::NonAscii,
        NoteKind::NeedsVersion { .. } => Rule::PtxVersion,
        NoteKind::Placement { .. } => Rule::Placement,
        NoteKind::UnknownInstruction { .. } => Rule::UnknownInstruction,
        NoteKind::UnknownModifier { .. } => Rule::UnknownModifier,
        NoteKind::IncompleteArray { .. } => Rule::IncompleteArray,
        NoteKind::Undeclared { .. } => Rule::Undeclared,
        NoteKind::UndefinedLabel { .. } => Rule::UndefinedLabel,
    };
    Violation {
        file: file.to_string(),
        line: n.line,
        function: String::new(),
        kind: FunctionKind::Func,
        // Module-level findings carry their column here; Display prints `FILE:LINE:COLUMN:`.
        position: n.column.to_string(),
        decl: String::new(),
        rule,
        message: n.kind.to_string(),
    }
}

/// The rules one declaration breaks, with a message for each. Shared with
/// `paramgen::check_decl`, which adds what only the source signature can tell.
pub(crate) fn decl_rules(
    kind: FunctionKind,
    p: &ParamDecl,
    address_size: AddressSize,
) -> Vec<(Rule, String)> {
    let mut v = Vec::new();
    well_formedness(p, address_size, &mut v);
    if kind == FunctionKind::Func {
        device_rules(p, &mut v);
    } else {
        entry_rules(p, &mut v);
    }
    v
}

/// The rules every declaration keeps, a kernel's too.
fn well_formedness(p: &ParamDecl, address_size: AddressSize, v: &mut Vec<(Rule, String)>) {
    // Well-formedness, for kernels too. Note D bounds the parameter's own alignment; the
    // pointee alignment of `.ptr .align N` only has to be a power of two (PTX ISA).
    if let Some(a) = p.align.filter(|a| !(a.is_power_of_two() && *a <= 128)) {
        v.push((
            Rule::Alignment,
            format!("alignment {a} is not one of 1, 2, 4, 8, 16, 32, 64, 128"),
        ));
    }
    if let Some(a) = p
        .ptr
        .as_ref()
        .and_then(|x| x.align)
        .filter(|a| !a.is_power_of_two())
    {
        v.push((
            Rule::Alignment,
            format!("`.ptr .align {a}` is not a power of two"),
        ));
    }
    if let (Some(n), Some(a)) = (p.array_len(), p.align) {
        if a > 0 && n % u64::from(a) != 0 {
            v.push((
                Rule::SizeMultiple,
                format!("size {n} is not a multiple of the alignment {a}"),
            ));
        }
    }
    if p.ptr.is_some() {
        if let Some(bits) = p.ty.bits().filter(|&b| b != address_size.bits()) {
            v.push((
                Rule::PointerWidth,
                format!(
                    "a `.ptr` parameter is {bits} bits wide under `.address_size {address_size}`"
                ),
            ));
        }
    }
    if p.vector.is_some() && p.space == ParamSpace::Param {
        v.push((
            Rule::ParamVector,
            format!(
                "a vector .v{} {} cannot be a `.param` variable; pass it as `.align A .b8 name[N]`",
                p.vector.unwrap_or(0),
                p.ty
            ),
        ));
    }
}

/// A kernel parameter's own rules: a complete size, the `.param` space.
fn entry_rules(p: &ParamDecl, v: &mut Vec<(Rule, String)>) {
    if p.array == Some(None) {
        v.push((
            Rule::EntryIncompleteArray,
            "a kernel parameter declared `name[]`; its size must be given".into(),
        ));
    }
    if p.space != ParamSpace::Param {
        v.push((
            Rule::EntryParamSpace,
            "a kernel parameter declared in `.reg`; kernel parameters are in `.param`".into(),
        ));
    }
}

/// A device function parameter's rules: no kernel attributes, `.param`, and an aggregate,
/// vector or scalar with a row in the parameter table.
fn device_rules(p: &ParamDecl, v: &mut Vec<(Rule, String)>) {
    if p.ptr.is_some() {
        // ptxas 12.9: "Illegal placement of kernel parameter attribute".
        v.push((
            Rule::Placement,
            "`.ptr` is a kernel-parameter attribute; a device function's parameter cannot carry it"
                .into(),
        ));
    }
    if p.space != ParamSpace::Param {
        v.push((
            Rule::ParamSpace,
            "declared in `.reg`, not in the `.param` state space".into(),
        ));
    }
    if p.array.is_some() {
        let mut wrong = Vec::new();
        if p.ty != PtxType::B8 {
            wrong.push(format!("element type is {} instead of .b8", p.ty));
        }
        if p.align.is_none() {
            wrong.push("no `.align`".to_string());
        }
        if p.array_len().is_none() {
            wrong.push("no array size".to_string());
        }
        if p.vector.is_some() && p.space != ParamSpace::Param {
            wrong.push("a vector element type".to_string());
        }
        if !wrong.is_empty() {
            v.push((
                Rule::AggregateForm,
                format!(
                    "an aggregate must be declared `.align A .b8 name[N]`: {}",
                    wrong.join(", ")
                ),
            ));
        }
        return;
    }
    if p.vector.is_some() {
        if p.space != ParamSpace::Param {
            v.push((
                Rule::TableType,
                format!(
                    "vector type .v{} {} has no row in the table",
                    p.vector.unwrap_or(0),
                    p.ty
                ),
            ));
        }
        return;
    }
    scalar_type_rules(p.ty, v);
}

/// A scalar device parameter's type: the ones the parameter table has no row for.
fn scalar_type_rules(ty: PtxType, v: &mut Vec<(Rule, String)>) {
    match ty {
        t if t.is_half_float() => {
            v.push((Rule::HalfFloat, format!("{t} is a 16-bit floating-point type, which cannot be a parameter or return value")));
        }
        t if t.is_integer_class() && t.bits().is_some_and(|b| b < 32) => {
            v.push((
                Rule::NarrowInteger,
                format!(
                    "{t} is an integer of {} bits, not widened to a 32-bit .param",
                    t.bits().unwrap_or(0)
                ),
            ));
        }
        t if t.is_opaque() => {
            v.push((
                Rule::Handle,
                format!("{t} passed directly; opaque objects are passed as .b64 handles"),
            ));
        }
        PtxType::Pred | PtxType::B128 => {
            v.push((Rule::TableType, format!("{ty} has no row in the table")));
        }
        _ => {}
    }
}

fn check(
    f: &FunctionDecl,
    p: &ParamDecl,
    position: (&str, usize),
    addr: AddressSize,
    file: &str,
    out: &mut Vec<Violation>,
) {
    let rules = decl_rules(f.kind, p, addr);
    if rules.is_empty() {
        return;
    }
    let (what, k) = position;
    let position = if p.name.is_empty() {
        format!("{what} {k}")
    } else {
        format!("{what} {k} `{}`", p.name)
    };
    for (rule, message) in rules {
        out.push(Violation {
            file: file.to_string(),
            line: p.line,
            function: f.name.clone(),
            kind: f.kind,
            position: position.clone(),
            decl: p.render(),
            rule,
            message,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lint a one-prototype module and return the rule ids it breaks, in order.
    fn rules(addr: u32, proto: &str) -> Vec<&'static str> {
        let src = format!(".version 8.8\n.target sm_90\n.address_size {addr}\n{proto}\n");
        lint_source(&src, "t.ptx")
            .unwrap()
            .iter()
            .map(|v| v.rule.id())
            .collect()
    }

    fn func(params: &str) -> String {
        format!(".func f({params});")
    }

    // Each row of the §2.3 table, in the form the table gives, conforms — as parameter and as
    // return value, 32- and 64-bit modules.
    #[test]
    fn table_rows_conform() {
        for ty in [
            ".u32", ".s32", ".b32", ".u64", ".s64", ".b64", ".f32", ".f64",
        ] {
            assert!(
                rules(64, &func(&format!(".param {ty} a"))).is_empty(),
                "{ty}"
            );
            assert!(
                rules(64, &format!(".func (.param {ty} r) f();")).is_empty(),
                "{ty}"
            );
        }
        for (a, n) in [
            (1, 3),
            (2, 2),
            (4, 12),
            (8, 16),
            (16, 16),
            (32, 64),
            (64, 64),
            (128, 128),
        ] {
            assert!(
                rules(64, &func(&format!(".param .align {a} .b8 s[{n}]"))).is_empty(),
                "{a} {n}"
            );
            assert!(rules(32, &format!(".func (.param .align {a} .b8 r[{n}]) f();")).is_empty());
        }
    }

    #[test]
    fn narrow_integers_are_note_a() {
        for ty in [".u8", ".s8", ".b8", ".u16", ".s16", ".b16"] {
            assert_eq!(
                rules(64, &func(&format!(".param {ty} a"))),
                vec!["narrow-integer"],
                "{ty}"
            );
            assert_eq!(
                rules(64, &format!(".func (.param {ty} r) f();")),
                vec!["narrow-integer"],
                "{ty}"
            );
        }
    }

    #[test]
    fn half_floats_are_note_c() {
        for ty in [".f16", ".bf16", ".f16x2", ".bf16x2"] {
            assert_eq!(
                rules(64, &func(&format!(".param {ty} a"))),
                vec!["half-float"],
                "{ty}"
            );
            assert_eq!(
                rules(64, &format!(".func (.param {ty} r) f();")),
                vec!["half-float"],
                "{ty}"
            );
        }
    }

    #[test]
    fn aggregate_form() {
        assert_eq!(rules(64, &func(".param .b8 s[4]")), vec!["aggregate-form"]);
        assert_eq!(
            rules(64, &func(".param .align 4 .b32 s[4]")),
            vec!["aggregate-form"]
        );
        assert_eq!(
            rules(64, &func(".param .align 4 .b8 s[]")),
            vec!["aggregate-form"]
        );
        assert_eq!(
            rules(64, &func(".param .align 4 .u8 s[4]")),
            vec!["aggregate-form"]
        );
    }

    #[test]
    fn alignment_is_note_d() {
        for a in [0, 3, 6, 12, 256] {
            let got = rules(
                64,
                &func(&format!(".param .align {a} .b8 s[{}]", 256.max(a))),
            );
            assert!(got.contains(&"alignment"), "{a}: {got:?}");
        }
        assert_eq!(
            rules(64, &func(".param .align 3 .b32 a")),
            vec!["alignment"]
        );
    }

    #[test]
    fn size_must_be_multiple_of_alignment() {
        // clang-19 raises a local function's 3-byte struct to `.align 16 .b8 [3]`.
        assert_eq!(
            rules(64, &func(".param .align 16 .b8 s[3]")),
            vec!["size-multiple"]
        );
        assert_eq!(
            rules(64, &func(".param .align 4 .b8 s[6]")),
            vec!["size-multiple"]
        );
        assert!(rules(64, &func(".param .align 2 .b8 s[6]")).is_empty());
    }

    #[test]
    fn pointer_width_follows_address_size() {
        let k64 = ".entry k(.param .u32 .ptr .global .align 4 p)";
        assert_eq!(
            rules(64, &format!("{k64} {{ ret; }}")),
            vec!["pointer-width"]
        );
        assert!(rules(64, ".entry k(.param .u64 .ptr .global .align 4 p) { ret; }").is_empty());
        assert!(rules(32, ".entry k(.param .u32 .ptr .align 4 p) { ret; }").is_empty());
        assert_eq!(
            rules(32, ".entry k(.param .u64 .ptr .align 4 p) { ret; }"),
            vec!["pointer-width"]
        );
        // No `.address_size`: the ISA default is 32 bits.
        // The finding says where the width came from; nothing is assumed silently.
        let src = ".version 8.0\n.target sm_90\n.entry k(.param .b64 .ptr p) { ret; }";
        let v = lint_source(src, "t").unwrap();
        assert_eq!(v[0].rule, Rule::PointerWidth);
        assert!(v[0].message.contains("no `.address_size`"), "{}", v[0]);
        // A fragment without a header is refused, with how to give one.
        let e = lint_source(".entry k(.param .b64 .ptr p) { ret; }", "t").unwrap_err();
        assert!(e.message.contains("`.address_size 64`"), "{e}");
    }

    #[test]
    fn handles_and_types_without_a_row() {
        assert_eq!(rules(64, &func(".param .texref t")), vec!["handle"]);
        assert_eq!(rules(64, &func(".param .surfref t")), vec!["handle"]);
        assert_eq!(rules(64, &func(".param .pred p")), vec!["table-type"]);
        assert_eq!(rules(64, &func(".param .b128 q")), vec!["table-type"]);
        assert_eq!(
            rules(64, ".func (.reg .b32 r) f (.reg .b32 a);"),
            vec!["param-space", "param-space"]
        );
    }

    // Kernel parameters follow the host layout: NVRTC 12.9 gives a `char` kernel parameter
    // `.param .u8`, which is fine; malformed alignment still is not.
    #[test]
    fn entries_get_well_formedness_only() {
        assert!(rules(
            64,
            ".entry k(.param .u64 .ptr .global .align 256 p) { ret; }"
        )
        .is_empty());
        assert_eq!(
            rules(64, ".entry k(.param .u64 .ptr .align 12 p) { ret; }"),
            vec!["alignment"]
        );
        assert!(rules(
            64,
            ".entry k(.param .u8 c, .param .f16 h, .param .align 1 .b8 s[3]) { ret; }"
        )
        .is_empty());
        assert_eq!(
            rules(64, ".entry k(.param .align 3 .b8 s[3]) { ret; }"),
            vec!["alignment"]
        );
        assert_eq!(
            rules(64, ".entry k(.param .align 4 .b8 s[3]) { ret; }"),
            vec!["size-multiple"]
        );
    }

    #[test]
    fn message_names_file_line_function_parameter_and_clause() {
        let src = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .func (.param .b32 r) g(\n\t.param .u8 g_param_0\n)\n{\n\tret;\n}\n";
        let v = lint_source(src, "corpus/x.ptx").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].to_string(),
            "corpus/x.ptx:5: .func `g` parameter 0 `g_param_0` (`.param .u8 g_param_0`): .u8 is an integer of 8 bits, not widened to a 32-bit .param [narrow-integer, ptx-interop 13.2 §2.3 note A]"
        );
        assert_eq!(exit_code(&Ok(v)), 1);
        let missing = lint_path(std::path::Path::new("/nonexistent/x.ptx"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.starts_with("/nonexistent/x.ptx: cannot read:"),
            "{missing}"
        );
        assert_eq!(exit_code(&lint_source(".func (", "x")), 2);
        assert_eq!(
            exit_code(&lint_source(src.replace(".u8", ".b32").as_str(), "x")),
            0
        );
    }

    /// Every file of `ptx-corpus/` gets the exit status and violations its README row states.
    #[test]
    fn corpus_verdicts_match_readme() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ptx-corpus");
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        let mut rows = 0;
        for line in readme
            .lines()
            .filter(|l| l.starts_with("| ") && l.contains(".ptx |"))
        {
            let cols: Vec<&str> = line.split('|').map(str::trim).collect();
            let (file, exit, want) = (cols[1], cols[5], cols[6]);
            let src = std::fs::read_to_string(dir.join(file)).unwrap();
            let result = lint_source(&src, file);
            assert_eq!(exit_code(&result).to_string(), exit, "{file}: {result:?}");
            let got: Vec<&str> = result
                .as_ref()
                .map(|v| v.iter().map(|x| x.rule.id()).collect())
                .unwrap_or_default();
            let want: Vec<&str> = want
                .split(',')
                .map(str::trim)
                .filter(|w| !w.is_empty())
                .collect();
            assert_eq!(got, want, "{file}");
            rows += 1;
        }
        let on_disk = std::fs::read_dir(&dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "ptx")
            })
            .count();
        assert_eq!(rows, on_disk, "every corpus file has a README row");
    }

    // A forward declaration and its definition are one function: LLVM names the parameters
    // differently in each (`f_param_0` vs none), and the finding must appear once, at the
    // definition.
    #[test]
    fn each_finding_once() {
        let src = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .func (.param .b32 r) f(.param .u8 a);\n\
            .func (.param .b32 r) f(.param .u8 b)\n{\n ret;\n}\n\
            .func g(.param .u8);\n.func g(.param .u8);\n";
        let v = lint_source(src, "t.ptx").unwrap();
        let got: Vec<_> = v
            .iter()
            .map(|v| (v.line, v.function.as_str(), v.rule.id()))
            .collect();
        assert_eq!(
            got,
            vec![(5, "f", "narrow-integer"), (9, "g", "narrow-integer")]
        );
        // A declaration whose shape differs from the definition is judged on its own.
        let src2 = src.replace(
            ".func (.param .b32 r) f(.param .u8 a);",
            ".func (.param .b32 r) f(.param .u16 a);",
        );
        let n = lint_source(&src2, "t.ptx").unwrap().len();
        assert_eq!(n, 3);
    }

    // ptxas 12.9 refuses both (measured): "Entry parameter 'a' must have .param state space"
    // and "Duplicate definition of variable 'a'" (also between a return value and a
    // parameter); "Variable 'a' cannot be allocated in .param state space" for `.param .v2`.
    #[test]
    fn kernel_reg_params_duplicate_names_and_param_vectors_are_findings() {
        assert_eq!(
            rules(64, ".entry k(.reg .b32 a) { ret; }"),
            vec!["entry-param-space"]
        );
        assert_eq!(
            rules(64, ".func f(.param .b32 a, .param .b32 a) { ret; }"),
            vec!["duplicate-param"]
        );
        assert_eq!(
            rules(64, ".func (.param .b32 a) f(.param .b32 a) { ret; }"),
            vec!["duplicate-param"]
        );
        assert_eq!(
            rules(64, ".entry k(.param .u32 a, .param .u32 a) { ret; }"),
            vec!["duplicate-param"]
        );
        assert_eq!(
            rules(64, ".func f(.param .v2 .b32 a) { ret; }"),
            vec!["param-vector"]
        );
        assert_eq!(
            rules(64, ".entry k(.param .v4 .f32 a) { ret; }"),
            vec!["param-vector"]
        );
        // Unnamed parameters of a declaration are not duplicates.
        assert!(rules(64, ".func f(.param .b32, .param .b32);").is_empty());
    }

    // Non-ASCII in a comment: ptxas 12.9 refuses the file ("Unexpected non-ASCII character
    // encountered on line 4"); the reader reads on and reports it with its position.
    #[test]
    fn non_ascii_in_a_comment_is_a_finding_with_its_column() {
        let src =
            ".version 8.0\n.target sm_90\n.address_size 64\n.func f() { ret; } // caf\u{e9}\n";
        let v = lint_source(src, "t.ptx").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(
            v[0].to_string(),
            "t.ptx:4:26: non-ASCII byte 0xC3 in a comment or string; PTX is ASCII (ptxas 12.9 refuses the file: \"Unexpected non-ASCII character\") [non-ascii, PTX ISA §4.1 source format (ASCII)]"
        );
    }

    // The forward-declaration check is linear: 100,000 declarations and their 100,000
    // definitions lint well inside the bound (a quadratic pass makes 10^10 comparisons:
    // minutes).
    #[test]
    fn many_forward_declarations_lint_in_linear_time() {
        let n = 100_000;
        let mut src = String::from(".version 8.0\n.target sm_90\n.address_size 64\n");
        for i in 0..n {
            src += &format!(".func (.param .b32 r) f{i}(.param .b32 a, .param .u64 b);\n");
        }
        for i in 0..n {
            src += &format!(
                ".func (.param .b32 r) f{i}(.param .b32 x, .param .u8 y)\n{{\n ret;\n}}\n"
            );
        }
        let t = std::time::Instant::now();
        let r = lint_source_counted(&src, "big.ptx").unwrap();
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(r.functions, n);
        // Each definition's `.u8` once; each declaration (`.u64`, another shape) is clean.
        assert_eq!(r.violations.len(), n);
        assert!(secs < 30.0, "{secs} s");
    }

    #[test]
    fn unreadable_files_are_exit_2_with_a_position() {
        for (src, want) in [
            ("", "t.ptx:1:1: expected `.version`"),
            ("garbage\n", "t.ptx:1:1: expected `.version`"),
            (
                ".version 8.0\n.target sm_90\n.func f() {\n",
                "t.ptx:4:1: expected `}`",
            ),
            (
                ".version 8.0\n.target sm_90\n/* x\n",
                "t.ptx:3:1: unterminated `/*`",
            ),
            (
                ".version 8.0\n.target sm_90\n.pragma \"x;\n",
                "t.ptx:3:9: unterminated string",
            ),
        ] {
            let r = lint_source(src, "t.ptx");
            assert_eq!(exit_code(&r), 2, "{src:?}");
            let msg = r.unwrap_err().at("t.ptx");
            assert!(msg.starts_with(want), "{src:?}: {msg}");
        }
        let dir = std::env::temp_dir();
        assert!(lint_path(&dir)
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
    }

    /// No input makes the reader panic, and every refusal has a position. Random byte edits,
    /// insertions, deletions and truncations (a fixed xorshift seed) of every corpus file.
    #[test]
    fn mutated_corpus_files_are_read_or_refused_with_a_position() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ptx-corpus");
        let files: Vec<Vec<u8>> = super::super::lint_corpus::corpus_files(&root)
            .iter()
            .filter_map(|p| std::fs::read(p).ok())
            .collect();
        assert!(files.len() >= 40);
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let alphabet = b"{}()[];,.@\"/*\n \t%$019abx_:<>+-!\x00\xc3\xa9";
        let pick = |r: u64| alphabet[(r as usize) % alphabet.len()];
        for _ in 0..5_000 {
            let mut b = files[(rnd() as usize) % files.len()].clone();
            for _ in 0..1 + rnd() % 8 {
                if b.is_empty() {
                    break;
                }
                let i = (rnd() as usize) % b.len();
                match rnd() % 4 {
                    0 => b[i] = pick(rnd()),
                    1 => {
                        b.remove(i);
                    }
                    2 => b.insert(i, pick(rnd())),
                    _ => b.truncate(i),
                }
            }
            let src = String::from_utf8_lossy(&b);
            if let Err(e) = lint_source(&src, "m.ptx") {
                assert!(
                    e.line >= 1 && e.column >= 1 && !e.message.is_empty(),
                    "{e:?}"
                );
            }
        }
    }
}
