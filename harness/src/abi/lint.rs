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

use std::fmt;

use crate::ptx::module::{
    FunctionDecl, FunctionKind, ParamDecl, ParamSpace, PtxError, PtxModule, PtxType,
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
    /// ptx-interop 13.2 ch. 3, the system calls: see `abi::lint_syscalls`.
    Syscall(
        super::lint_syscalls::SyscallRule,
        super::lint_syscalls::Syscall,
    ),
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

/// Parse `src` and lint it. `Err` is the "cannot parse" outcome (exit 2 in the CLI contract).
pub fn lint_source(src: &str, file: &str) -> Result<Vec<Violation>, PtxError> {
    let module = PtxModule::parse(src)?;
    let mut v = lint(&module, file);
    // ch. 3: system-call prototypes and call sites.
    v.extend(super::lint_syscalls::lint(&module, src, file));
    v.sort_by_key(|x| x.line);
    Ok(v)
}

/// Read and lint one file. `Err` is the one-line reason it cannot be judged, as
/// `FILE:LINE: what was expected` for a parse error or `FILE: cannot read: …`.
pub fn lint_path(path: &std::path::Path) -> Result<Vec<Violation>, String> {
    let file = path.display().to_string();
    let src = std::fs::read_to_string(path).map_err(|e| format!("{file}: cannot read: {e}"))?;
    lint_source(&src, &file).map_err(|e| e.at(&file))
}

/// Exit status of `gpucts abi lint` for one file: 0 conforms, 1 violations, 2 cannot parse.
pub fn exit_code(result: &Result<Vec<Violation>, PtxError>) -> i32 {
    match result {
        Ok(v) if v.is_empty() => 0,
        Ok(_) => 1,
        Err(_) => 2,
    }
}

/// Every violation in `module`, in source order. A forward declaration identical to the
/// function's definition (LLVM emits one for each local function) is not reported twice.
pub fn lint(module: &PtxModule, file: &str) -> Vec<Violation> {
    let addr = module.effective_address_size();
    let mut out = Vec::new();
    let same = |a: &FunctionDecl, b: &FunctionDecl| {
        let render = |f: &FunctionDecl| {
            (
                f.returns.iter().map(ParamDecl::render).collect::<Vec<_>>(),
                f.params.iter().map(ParamDecl::render).collect::<Vec<_>>(),
            )
        };
        a.name == b.name && a.kind == b.kind && render(a) == render(b)
    };
    for f in &module.functions {
        if !f.is_definition
            && module
                .functions
                .iter()
                .any(|d| d.is_definition && same(f, d))
        {
            continue;
        }
        for (i, p) in f.returns.iter().enumerate() {
            check(f, p, &format!("return value {i}"), addr, file, &mut out);
        }
        for (i, p) in f.params.iter().enumerate() {
            check(f, p, &format!("parameter {i}"), addr, file, &mut out);
        }
    }
    out
}

/// The rules one declaration breaks, with a message for each. Shared with
/// `paramgen::check_decl`, which adds what only the source signature can tell.
pub fn decl_rules(kind: FunctionKind, p: &ParamDecl, address_size: u32) -> Vec<(Rule, String)> {
    let mut v = Vec::new();
    let device = kind == FunctionKind::Func;

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
        if let Some(bits) = p.ty.bits().filter(|&b| b != address_size) {
            v.push((
                Rule::PointerWidth,
                format!(
                    "a `.ptr` parameter is {bits} bits wide under `.address_size {address_size}`"
                ),
            ));
        }
    }
    if !device {
        return v;
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
        if p.vector.is_some() {
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
        return v;
    }
    if p.vector.is_some() {
        v.push((
            Rule::TableType,
            format!(
                "vector type .v{} {} has no row in the table",
                p.vector.unwrap_or(0),
                p.ty
            ),
        ));
        return v;
    }
    match p.ty {
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
            v.push((Rule::TableType, format!("{} has no row in the table", p.ty)));
        }
        _ => {}
    }
    v
}

fn check(
    f: &FunctionDecl,
    p: &ParamDecl,
    position: &str,
    addr: u32,
    file: &str,
    out: &mut Vec<Violation>,
) {
    let position = if p.name.is_empty() {
        position.to_string()
    } else {
        format!("{position} `{}`", p.name)
    };
    for (rule, message) in decl_rules(f.kind, p, addr) {
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
        let src = format!(".version 8.0\n.target sm_90\n.address_size {addr}\n{proto}\n");
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
        let src = ".version 8.0\n.target sm_90\n.entry k(.param .b64 .ptr p) { ret; }";
        assert_eq!(lint_source(src, "t").unwrap()[0].rule, Rule::PointerWidth);
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
        let missing = lint_path(std::path::Path::new("/nonexistent/x.ptx")).unwrap_err();
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
}
