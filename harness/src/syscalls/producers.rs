//! What producers emit for printf / malloc / free / assert (ptx-interop 13.2 ch. 3), compiled
//! in one batch per producer (one NVRTC program, one clang run, one libNVVM program, one llc
//! run), then
//! - linted with the chapter-3 checks of `abi lint`;
//! - the vprintf argument buffer of each printf checked against one documented layout.
//!
//! # The vprintf argument buffer (the layout every producer is held to)
//!
//! ch. 3 says `valist` points to "the valist of arguments" and that `vprintf` is what `printf`
//! of `stdio.h` becomes; it does not draw the buffer. The layout used here is C's: each
//! argument after the default argument promotions (C11 6.5.2.2p6-7: integers narrower than
//! `int` become `int`, `float` becomes `double`) is placed at the next offset that is a multiple
//! of its promoted size (4 for `int`, 8 for `long`/`long long`/`double`/pointers under LP64,
//! which ptx-interop 13.2 §1.1 gives for 64-bit addresses), in order, starting at offset 0. A
//! producer's buffer is read from its PTX: the stores into the local depot region that the
//! `valist` argument points at, since the previous vprintf call.
//!
//! NVRTC and clang-19 compile CUDA C++ `printf` calls, so the promotion and placement are
//! theirs. libNVVM and llc-19 take IR, where the C front end's part is the generator's: it
//! writes the promoted values (`sext`/`zext`/`fpext`) into a struct of the promoted types, as
//! clang's CUDA printf lowering does; what those cases check is the back end's placement of
//! that struct under its data layout.

use crate::vocab::Vocabulary;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use rand::{Rng, SeedableRng};
use serde::Deserialize;

use crate::abi::lint::syscalls::{call_sites, CallSite, Syscall, Val};
use crate::abi::lint::{lint_source, Rule, Violation};
use crate::area::{BatchCache, CaseContext};
use crate::backend::toolchain::Toolchain;
use crate::outcome::CaseStatus;

pub use crate::backend::producer::Producer;
use crate::backend::producer::{Language, Options, Source};

/// The languages the printf / malloc / free / assert programs are written in.
pub(crate) const LANGUAGES: [Language; 4] = [
    Language::CudaCpp,
    Language::ClangCuda,
    Language::NvvmIr,
    Language::LlvmIr,
];

/// The producers whose printf / malloc / free / assert PTX this area compiles: every one that
/// reads one of [`LANGUAGES`] (suites spell them `nvrtc`, `clang`, `libnvvm`, `llc`, ...).
pub fn producers() -> Vec<Producer> {
    Producer::accepting(&LANGUAGES)
}

/// Deserialize a producer of [`producers`]; any other is an error naming the view.
pub(crate) fn producer_in_view<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Producer, D::Error> {
    let p = Producer::deserialize(d)?;
    crate::backend::producer::in_view(p, "syscalls", &producers()).map_err(serde::de::Error::custom)
}

/// A program of the batch, named by the system calls it makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Program {
    /// Every printf mix (`vprintf`).
    Printf,
    /// `malloc`, `free`, `free(NULL)`.
    MallocFree,
    /// A failing `assert` (`__assertfail`).
    Assert,
}

impl Program {
    fn calls(self) -> &'static [Syscall] {
        match self {
            Program::Printf => &[Syscall::Vprintf],
            Program::MallocFree => &[Syscall::Malloc, Syscall::Free],
            Program::Assert => &[Syscall::Assertfail],
        }
    }
}

/// A C argument type of a printf mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CArg {
    Int,
    UInt,
    Long,
    ULong,
    LongLong,
    ULongLong,
    Char,
    SChar,
    UChar,
    Short,
    UShort,
    Float,
    Double,
    Str,
    Ptr,
}

impl CArg {
    pub(crate) const ALL: [CArg; 15] = [
        CArg::Int,
        CArg::UInt,
        CArg::Long,
        CArg::ULong,
        CArg::LongLong,
        CArg::ULongLong,
        CArg::Char,
        CArg::SChar,
        CArg::UChar,
        CArg::Short,
        CArg::UShort,
        CArg::Float,
        CArg::Double,
        CArg::Str,
        CArg::Ptr,
    ];

    pub(crate) fn c_type(self) -> &'static str {
        match self {
            CArg::Int => "int",
            CArg::UInt => "unsigned",
            CArg::Long => "long",
            CArg::ULong => "unsigned long",
            CArg::LongLong => "long long",
            CArg::ULongLong => "unsigned long long",
            CArg::Char => "char",
            CArg::SChar => "signed char",
            CArg::UChar => "unsigned char",
            CArg::Short => "short",
            CArg::UShort => "unsigned short",
            CArg::Float => "float",
            CArg::Double => "double",
            CArg::Str => "const char*",
            CArg::Ptr => "void*",
        }
    }

    /// The printf conversion for a value of this type.
    pub fn conversion(self) -> &'static str {
        match self {
            CArg::Int => "%d",
            CArg::UInt => "%u",
            CArg::Long => "%ld",
            CArg::ULong => "%lu",
            CArg::LongLong => "%lld",
            CArg::ULongLong => "%llu",
            CArg::Char => "%c",
            CArg::SChar => "%hhd",
            CArg::UChar => "%hhu",
            CArg::Short => "%hd",
            CArg::UShort => "%hu",
            CArg::Float | CArg::Double => "%f",
            CArg::Str => "%s",
            CArg::Ptr => "%p",
        }
    }

    /// Size in bytes after the default argument promotions, LP64 (C11 6.5.2.2p6-7).
    pub(crate) fn promoted_size(self) -> u64 {
        match self {
            CArg::Int
            | CArg::UInt
            | CArg::Char
            | CArg::SChar
            | CArg::UChar
            | CArg::Short
            | CArg::UShort => 4,
            CArg::Long
            | CArg::ULong
            | CArg::LongLong
            | CArg::ULongLong
            | CArg::Float
            | CArg::Double
            | CArg::Str
            | CArg::Ptr => 8,
        }
    }

    /// IR type of the parameter, the promoted IR type, and the promoting instruction.
    fn ir(self) -> (&'static str, &'static str, Option<&'static str>) {
        match self {
            CArg::Int | CArg::UInt => ("i32", "i32", None),
            CArg::Long | CArg::ULong | CArg::LongLong | CArg::ULongLong => ("i64", "i64", None),
            // `char` is signed on x86-64 Linux, which CUDA device code follows.
            CArg::Char | CArg::SChar => ("i8", "i32", Some("sext")),
            CArg::UChar => ("i8", "i32", Some("zext")),
            CArg::Short => ("i16", "i32", Some("sext")),
            CArg::UShort => ("i16", "i32", Some("zext")),
            CArg::Float => ("float", "double", Some("fpext")),
            CArg::Double => ("double", "double", None),
            CArg::Str | CArg::Ptr => ("ptr", "ptr", None),
        }
    }
}

/// The printf argument mixes: none, each type alone, pairs that need padding, and seeded random
/// mixes of 3 to 10 arguments.
pub(crate) fn mixes() -> &'static [Vec<CArg>] {
    static MIXES: OnceLock<Vec<Vec<CArg>>> = OnceLock::new();
    MIXES.get_or_init(|| {
        use CArg::*;
        let mut m: Vec<Vec<CArg>> = vec![Vec::new()];
        m.extend(CArg::ALL.iter().map(|&a| vec![a]));
        for pair in [
            [Char, Double],
            [Int, LongLong],
            [Float, Int],
            [Short, Ptr],
            [Int, Str],
            [UChar, ULongLong],
            [Int, Float],
            [SChar, Long],
            [UShort, Double],
            [Char, Char],
        ] {
            m.push(pair.to_vec());
        }
        m.push(vec![Int, Int, Double]);
        m.push(vec![Float, Float, Float]);
        m.push(vec![Char, Short, Int, LongLong]);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5953_4341_4c4c);
        while m.len() < MIX_COUNT {
            let n = rng.random_range(3..=10);
            m.push(
                (0..n)
                    .map(|_| CArg::ALL[rng.random_range(0..CArg::ALL.len())])
                    .collect(),
            );
        }
        m
    })
}

/// How many mixes there are (the suite's `mix` range).
pub(crate) const MIX_COUNT: usize = 48;

/// The documented layout: (offset, size) of each argument.
pub(crate) fn expected_layout(mix: &[CArg]) -> Vec<(u64, u64)> {
    let mut off = 0u64;
    mix.iter()
        .map(|a| {
            let s = a.promoted_size();
            off = off.div_ceil(s) * s;
            let slot = (off, s);
            off += s;
            slot
        })
        .collect()
}

/// The layout with a flag on each `float` slot: the value there was promoted, so it is written
/// by a 64-bit floating-point store (a `cvt.f64.f32` result). A `double` or an integer may be
/// copied bit for bit through an integer store (NVRTC 12.9 stores a `double` kernel parameter
/// it loaded with `ld.param.u64` by `st.local.u64`), so their stores' types are not judged.
pub(crate) fn expected_slots(mix: &[CArg]) -> Vec<(u64, u64, bool)> {
    expected_layout(mix)
        .into_iter()
        .zip(mix)
        .map(|((o, s), a)| (o, s, *a == CArg::Float))
        .collect()
}

/// The same offsets and sizes, and a floating-point store at every promoted `float`.
pub(crate) fn conforms(got: &[(u64, u64, bool)], want: &[(u64, u64, bool)]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| g.0 == w.0 && g.1 == w.1 && (g.2 || !w.2))
}

fn format_string(mix: &[CArg]) -> String {
    let mut s = String::from("gpucts");
    for a in mix {
        s.push(' ');
        s.push_str(a.conversion());
    }
    s.push_str("\\n");
    s
}

fn kernel_name(i: usize) -> String {
    format!("gpucts_pf_{i}")
}

const MALLOC_FN: &str = "gpucts_malloc";
/// The kernel that asserts `i != 3`.
pub(crate) const ASSERT_FN: &str = "gpucts_assert";

/// What the producer's `__assertfail` call is given as file and line, and a part of the
/// function name it passes (NVRTC passes `__PRETTY_FUNCTION__`, the others the bare name).
pub(crate) fn assert_site(producer: Producer) -> (String, u32, &'static str) {
    match producer.language_of(&LANGUAGES) {
        Some(language @ (Language::CudaCpp | Language::ClangCuda)) => {
            let src = source(language);
            let line = src
                .lines()
                .position(|l| l.contains(&format!("void {ASSERT_FN}(")))
                .map_or(0, |i| i as u32 + 1);
            let file = if language == Language::CudaCpp {
                NVRTC_FILE
            } else {
                // clang sees the toolchain's scratch file.
                "input.cu"
            };
            (file.to_string(), line, ASSERT_FN)
        }
        // The IR producers, and any producer outside the view (the suite reader refuses
        // those), see the IR file name.
        Some(
            Language::NvvmIr
            | Language::LlvmIr
            | Language::C
            | Language::Ptx
            | Language::Rust
            | Language::Triton
            | Language::Numba,
        )
        | None => ("gpucts.ll".to_string(), 7, ASSERT_FN),
    }
}

/// The program name NVRTC is given (what its `__assertfail` calls pass as the file).
const NVRTC_FILE: &str = "gpucts_syscalls.cu";

/// The programs in `language`.
fn source(language: Language) -> String {
    match language {
        Language::CudaCpp => cuda_source(false),
        Language::ClangCuda => cuda_source(true),
        // libNVVM's dialect has typed pointers, LLVM 19's opaque ones.
        Language::NvvmIr => ir_source(true),
        Language::LlvmIr => ir_source(false),
        Language::C | Language::Ptx | Language::Rust | Language::Triton | Language::Numba => {
            String::new()
        }
    }
}

/// CUDA C++ for NVRTC (printf, malloc, free and assert are built in) or clang-19 (without the
/// CUDA headers: the declarations and an `assert` shaped like CUDA's `assert.h` are here).
pub(crate) fn cuda_source(clang: bool) -> String {
    let mut s = String::new();
    if clang {
        s += "#define __device__ __attribute__((device))\n#define __global__ __attribute__((global))\n\
              extern \"C\" __device__ int printf(const char*, ...);\n\
              extern \"C\" __device__ void* malloc(unsigned long);\n\
              extern \"C\" __device__ void free(void*);\n\
              extern \"C\" __device__ void __assertfail(const char*, const char*, unsigned, const char*, unsigned long);\n\
              #define assert(e) ((e) ? (void)0 : __assertfail(#e, __FILE__, __LINE__, __func__, sizeof(char)))\n";
    }
    for (i, mix) in mixes().iter().enumerate() {
        let params: Vec<String> = mix
            .iter()
            .enumerate()
            .map(|(j, a)| format!("{} a{j}", a.c_type()))
            .collect();
        let mut args = String::new();
        for j in 0..mix.len() {
            args += &format!(", a{j}");
        }
        s += &format!(
            "extern \"C\" __global__ void {}({}) {{ printf(\"{}\"{args}); }}\n",
            kernel_name(i),
            params.join(", "),
            format_string(mix)
        );
    }
    s += &format!(
        "extern \"C\" __global__ void {MALLOC_FN}(unsigned long n, int** out) {{ int* p = (int*)malloc(n); if (p) p[0] = 1; *out = p; free(p); free(0); }}\n\
         extern \"C\" __global__ void {ASSERT_FN}(int i) {{ assert(i != 3); }}\n"
    );
    s
}

/// LLVM IR for llc-19 (`typed == false`, opaque pointers) or NVVM IR for libNVVM
/// (`typed == true`, LLVM 7 typed pointers).
pub(crate) fn ir_source(typed: bool) -> String {
    let p = if typed { "i8*" } else { "ptr" };
    let pt = |t: &'static str| if t == "ptr" { p } else { t };
    let mut s = format!(
        "target datalayout = \"{}\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n\n\
         declare i32 @vprintf({p}, {p})\ndeclare {p} @malloc(i64)\ndeclare void @free({p})\n\
         declare void @__assertfail({p}, {p}, i32, {p}, i64)\n\n",
        crate::abi::paramgen::NVVM_DATALAYOUT
    );
    // A global string's generic address, as a constant expression.
    let string = |name: &str, len: usize| {
        if typed {
            format!("i8* addrspacecast (i8 addrspace(1)* getelementptr inbounds ([{len} x i8], [{len} x i8] addrspace(1)* @{name}, i64 0, i64 0) to i8*)")
        } else {
            format!("ptr addrspacecast (ptr addrspace(1) @{name} to ptr)")
        }
    };
    for (i, mix) in mixes().iter().enumerate() {
        let text = format_string(mix).replace("\\n", "\\0A");
        let len = text.len() - 2 * text.matches("\\0A").count() + 1;
        s += &format!(
            "@fmt{i} = private unnamed_addr addrspace(1) constant [{len} x i8] c\"{text}\\00\"\n"
        );
        let params: Vec<String> = mix
            .iter()
            .enumerate()
            .map(|(j, a)| format!("{} %a{j}", pt(a.ir().0)))
            .collect();
        let fields: Vec<&str> = mix.iter().map(|a| pt(a.ir().1)).collect();
        let st = format!("{{ {} }}", fields.join(", "));
        s += &format!(
            "define void @{}({}) {{\n",
            kernel_name(i),
            params.join(", ")
        );
        let buf = if mix.is_empty() {
            format!("{p} null")
        } else {
            s += &format!("  %buf = alloca {st}, align 8\n");
            for (j, a) in mix.iter().enumerate() {
                let (from, to, op) = a.ir();
                let v = match op {
                    Some(op) => {
                        s += &format!("  %e{j} = {op} {from} %a{j} to {to}\n");
                        format!("%e{j}")
                    }
                    None => format!("%a{j}"),
                };
                let stp = if typed {
                    format!("{st}*")
                } else {
                    "ptr".into()
                };
                s += &format!(
                    "  %g{j} = getelementptr inbounds {st}, {stp} %buf, i32 0, i32 {j}\n  store {} {v}, {} %g{j}\n",
                    pt(to),
                    if typed { format!("{}*", pt(to)) } else { "ptr".into() }
                );
            }
            if typed {
                s += &format!("  %b = bitcast {st}* %buf to i8*\n");
                "i8* %b".to_string()
            } else {
                "ptr %buf".to_string()
            }
        };
        s += &format!(
            "  %r = call i32 @vprintf({}, {buf})\n  ret void\n}}\n\n",
            string(&format!("fmt{i}"), len)
        );
    }
    let pp = if typed { "i8**" } else { "ptr" };
    s += &format!(
        "define void @{MALLOC_FN}(i64 %n, {pp} %out) {{\n  %m = call {p} @malloc(i64 %n)\n  store {p} %m, {pp} %out\n  \
         call void @free({p} %m)\n  call void @free({p} null)\n  ret void\n}}\n\n"
    );
    for (name, text) in [
        ("msg", "i != 3"),
        ("file", "gpucts.ll"),
        ("func", ASSERT_FN),
    ] {
        s += &format!(
            "@{name} = private unnamed_addr addrspace(1) constant [{} x i8] c\"{text}\\00\"\n",
            text.len() + 1
        );
    }
    s += &format!(
        "define void @{ASSERT_FN}(i32 %i) {{\n  %c = icmp ne i32 %i, 3\n  br i1 %c, label %ok, label %fail\n\
         fail:\n  call void @__assertfail({}, {}, i32 7, {}, i64 1)\n  br label %ok\nok:\n  ret void\n}}\n",
        string("msg", 7),
        string("file", 10),
        string("func", ASSERT_FN.len() + 1)
    );
    // The malloc and assert functions are kernels, so a GPU case can launch them.
    s += &format!(
        "\n!nvvm.annotations = !{{!1, !2}}\n!1 = !{{{} @{MALLOC_FN}, !\"kernel\", i32 1}}\n!2 = !{{{} @{ASSERT_FN}, !\"kernel\", i32 1}}\n",
        if typed { "void (i64, i8**)*" } else { "ptr" },
        if typed { "void (i32)*" } else { "ptr" },
    );
    if typed {
        s += "!nvvmir.version = !{!0}\n!0 = !{i32 2, i32 0}\n";
    }
    s
}

/// One producer's batch: its PTX, the ch. 3 lint findings and the system calls in it.
#[derive(Debug)]
pub struct Batch {
    pub ptx: String,
    pub findings: Vec<Violation>,
    pub calls: Vec<CallSite>,
}

/// Why a producer's syscalls batch has no PTX to check.
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("{producer} rejected the syscalls batch: {source}")]
    Rejected {
        producer: &'static str,
        source: crate::backend::toolchain::ToolError,
    },
    /// The producer has no source in this area's view (the producer vocabulary's reason).
    #[error("{0}")]
    NoSource(String),
    #[error("the {producer} PTX does not parse: {reason}")]
    Unreadable {
        producer: &'static str,
        reason: String,
    },
}

/// Why the argument buffer of a vprintf call cannot be read from its PTX.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LayoutError {
    #[error("no valist argument")]
    NoValist,
    /// `valist`: the argument as the reader saw it.
    #[error("valist is not a known depot address: {valist}")]
    NotADepotAddress { valist: String },
}

fn compile(tc: &Toolchain, producer: Producer) -> Result<String, BatchError> {
    let Some(language) = producer.language_of(&LANGUAGES) else {
        let e = crate::backend::producer::in_view(producer, "syscalls", &producers());
        return Err(BatchError::NoSource(
            e.map_or_else(|e| e.to_string(), |p| format!("{p}: no source")),
        ));
    };
    let text = source(language);
    let src = Source::new(language, &text)
        .file_name(NVRTC_FILE)
        .options(Options {
            clang: &["-O2"],
            llc: &["-O2"],
            ..Options::default()
        });
    producer
        .compile(tc, &src)
        .map_err(|source| BatchError::Rejected {
            producer: producer.name(),
            source,
        })
}

/// The batch of `producer`, compiled once per run.
pub fn batch(ctx: &CaseContext, producer: Producer) -> Arc<OnceLock<Result<Batch, BatchError>>> {
    static CACHE: OnceLock<BatchCache<Producer, Result<Batch, BatchError>>> = OnceLock::new();
    CACHE
        .get_or_init(BatchCache::new)
        .get_or_compute(ctx, &producer, || {
            let ptx = compile(ctx.toolchain, producer)?;
            let findings = lint_source(&ptx, &format!("{}.ptx", producer.name())).map_err(|e| {
                BatchError::Unreadable {
                    producer: producer.name(),
                    reason: e.to_string(),
                }
            })?;
            let calls = call_sites(&ptx);
            Ok(Batch {
                ptx,
                findings,
                calls,
            })
        })
}

fn with_batch(
    ctx: &CaseContext,
    producer: Producer,
    f: impl FnOnce(&Batch) -> CaseStatus,
) -> CaseStatus {
    let slot = batch(ctx, producer);
    match slot.get() {
        Some(Ok(b)) => f(b),
        Some(Err(e)) => CaseStatus::error(e),
        None => CaseStatus::error("batch not computed"),
    }
}

/// The producer's PTX for `program` has no ch. 3 finding about the program's system calls, and
/// calls each of them.
pub(crate) fn lint_case(ctx: &CaseContext, producer: Producer, program: Program) -> CaseStatus {
    with_batch(ctx, producer, |b| {
        for call in program.calls() {
            if !b.calls.iter().any(|c| c.call == *call) {
                return CaseStatus::fail(
                    format!("a call of `{}` in the {} PTX", call.name(), producer.name()),
                    "none",
                );
            }
        }
        let mine: Vec<String> = b
            .findings
            .iter()
            .filter(|v| matches!(v.rule, Rule::Syscall(_, c) if program.calls().contains(&c)))
            .map(|v| v.to_string())
            .collect();
        if mine.is_empty() {
            CaseStatus::pass()
        } else {
            CaseStatus::fail_detail(
                "no ch. 3 finding",
                format!("{} findings: {}", mine.len(), mine[0]),
                mine.join("\n"),
            )
        }
    })
}

/// The argument buffer of one vprintf call, as (offset from the buffer, bytes, floating-point
/// store) of each element stored, or why it cannot be read.
pub(crate) fn observed_layout(
    c: &CallSite,
    size: u64,
) -> Result<Vec<(u64, u64, bool)>, LayoutError> {
    let valist = c
        .args
        .get(1)
        .and_then(|a| a.value.clone())
        .ok_or(LayoutError::NoValist)?;
    let (sym, base) = match valist {
        Val::Imm(0) => return Ok(Vec::new()),
        Val::Addr {
            sym,
            offset: Some(o),
            ..
        } => (sym, o),
        other => {
            return Err(LayoutError::NotADepotAddress {
                valist: format!("{other:?}"),
            })
        }
    };
    let mut out = Vec::new();
    for s in &c.stores {
        let (Some(ss), Some(o)) = (&s.sym, s.offset) else {
            continue;
        };
        if *ss != sym || o < base || o >= base + size as i64 {
            continue;
        }
        for k in 0..s.count {
            out.push((
                (o - base) as u64 + u64::from(k * s.bytes),
                u64::from(s.bytes),
                s.ty.starts_with('f'),
            ));
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// The vprintf buffer of mix `mix` has the documented layout.
pub(crate) fn layout_case(ctx: &CaseContext, producer: Producer, mix: usize) -> CaseStatus {
    let Some(args) = mixes().get(mix) else {
        return CaseStatus::error(format!("no printf mix {mix} (0..{MIX_COUNT})"));
    };
    with_batch(ctx, producer, |b| {
        let name = kernel_name(mix);
        let Some(c) = b
            .calls
            .iter()
            .find(|c| c.caller == name && c.call == Syscall::Vprintf)
        else {
            return CaseStatus::fail(format!("a vprintf call in `{name}`"), "none");
        };
        let want = expected_slots(args);
        let size = want.last().map_or(0, |(o, s, _)| o + s);
        let types: Vec<&str> = args.iter().map(|a| a.c_type()).collect();
        match observed_layout(c, size) {
            Ok(got) if conforms(&got, &want) => CaseStatus::pass(),
            Ok(got) => CaseStatus::fail_detail(
                format!(
                    "(offset, size, floating store) {want:?} for ({})",
                    types.join(", ")
                ),
                format!("{got:?}"),
                format!("the call at line {} of the {} PTX", c.line, producer.name()),
            ),
            Err(e) => CaseStatus::fail_detail(
                format!("(offset, size, floating store) {want:?}"),
                e.to_string(),
                format!("the call at line {} of the {} PTX", c.line, producer.name()),
            ),
        }
    })
}

/// Kernel names of the batch, for tests.
pub fn kernel_names() -> HashMap<String, usize> {
    (0..mixes().len()).map(|i| (kernel_name(i), i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The documented layout, worked by hand from C's promotions and size alignment.
    #[test]
    fn expected_layout_by_hand() {
        use CArg::*;
        assert_eq!(expected_layout(&[]), vec![]);
        assert_eq!(expected_layout(&[Char, Double]), vec![(0, 4), (8, 8)]);
        assert_eq!(expected_layout(&[Float, Int]), vec![(0, 8), (8, 4)]);
        assert_eq!(
            expected_layout(&[Int, Double, Float, Str, LongLong, Char, Short, Ptr]),
            // NVRTC 12.9 and clang-19 store this at 0, 8, 16, 24, 32, 40, 44, 48 (see the
            // module docs).
            vec![
                (0, 4),
                (8, 8),
                (16, 8),
                (24, 8),
                (32, 8),
                (40, 4),
                (44, 4),
                (48, 8)
            ]
        );
        assert_eq!(
            expected_layout(&[Int, Int, Int, Long]),
            vec![(0, 4), (4, 4), (8, 4), (16, 8)]
        );
    }

    #[test]
    fn mixes_are_stable_and_varied() {
        let m = mixes();
        assert_eq!(m.len(), MIX_COUNT);
        assert!(m[0].is_empty());
        for a in CArg::ALL {
            assert!(m.iter().skip(16).any(|x| x.contains(&a)), "{a:?}");
        }
        assert_eq!(kernel_names().len(), MIX_COUNT);
    }

    // The buffer of a hand-written call: vector stores split, stores outside the buffer and
    // to other symbols ignored.
    #[test]
    fn observed_layout_of_hand_written_ptx() {
        let src = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);\n\
            .global .align 1 .b8 f[2];\n.entry k()\n{\n.local .align 8 .b8 __local_depot0[48];\n\
            mov.u64 %SPL, __local_depot0;\ncvta.local.u64 %SP, %SPL;\nadd.u64 %rd1, %SP, 16;\nadd.u64 %rd2, %SPL, 16;\n\
            st.local.u32 [%rd2], %r1;\nst.local.v2.u32 [%rd2+4], {%r1, %r2};\nst.local.f64 [%rd2+16], %fd1;\n\
            st.local.u32 [%SPL], %r1;\nst.global.u32 [f], %r1;\nmov.u64 %rd3, f;\ncvta.global.u64 %rd4, %rd3;\n\
            { .param .b64 a; st.param.b64 [a], %rd4; .param .b64 b; st.param.b64 [b], %rd1; .param .s32 r;\n\
            call.uni (r), vprintf, (a, b); }\nret;\n}\n";
        let c = call_sites(src);
        assert_eq!(
            observed_layout(&c[0], 24).unwrap(),
            vec![(0, 4, false), (4, 4, false), (8, 4, false), (16, 8, true)]
        );
        assert_eq!(
            expected_slots(&[CArg::Int, CArg::Float, CArg::Double]),
            vec![(0, 4, false), (8, 8, true), (16, 8, false)]
        );
        let want = expected_slots(&[CArg::Float, CArg::Double]);
        assert!(conforms(&[(0, 8, true), (8, 8, false)], &want));
        assert!(conforms(&[(0, 8, true), (8, 8, true)], &want));
        // A float's bits copied without conversion, or stored at 4 bytes: not promoted.
        assert!(!conforms(&[(0, 8, false), (8, 8, true)], &want));
        assert!(!conforms(&[(0, 4, true), (8, 8, true)], &want));
        assert!(!conforms(&[(0, 8, true)], &want));
    }

    // The generated sources are well formed enough for the tools that read them.
    #[test]
    fn batches_compile_and_lint() {
        let tc = Toolchain::discover_system();
        for p in producers() {
            crate::require!(p.requires().iter().all(|c| tc.has(*c)), p.name());
            let ptx = compile(&tc, p).unwrap();
            // Real producer output cut anywhere: the ch. 3 checks never panic.
            for cut in (0..ptx.len())
                .step_by(401)
                .filter(|&c| ptx.is_char_boundary(c))
            {
                let _ = lint_source(&ptx[..cut], "cut.ptx");
                let _ = call_sites(&ptx[..cut]);
            }
            let calls = call_sites(&ptx);
            assert_eq!(
                calls.iter().filter(|c| c.call == Syscall::Vprintf).count(),
                MIX_COUNT,
                "{}",
                p.name()
            );
        }
    }
}
