//! The values that cross a call, observed offline by executing each producer's PTX with the
//! PTX interpreter ([`crate::ptx::exec`]), not only its declarations:
//!
//! - ptx-interop 13.2 §2.3 note A: an integer narrower than 32 bits is widened to the 32-bit
//!   `.param` by sign or zero extension after its signedness. The caller's `st.param` is run
//!   and the four bytes it leaves in the argument read; the callee's `ret` likewise for a
//!   narrow return value. Whether each callee relies on the caller's extension (reads the
//!   whole word) or re-extends the low bits itself is recorded.
//! - Note B: a pointer argument is a generic address. The caller passes the address of a
//!   `.global`, `.shared` and `.local` object; the argument must be that object's generic
//!   address, and the callee must read the object through it.
//! - Between producers: a caller of one producer is run to its call, the callee of another is
//!   run on the bytes it wrote, and the caller resumed with the bytes the callee returned; the
//!   kernel's result must be the C value.
//!
//! Expected values come from C's conversions (C11 6.3.1.3: `(signed char)0x5a5a8080` is
//! -128) and the note's extension of them to 32 bits, never from a producer. Plain `char`'s
//! signedness is the host's (§1.1; [`host`]): signed on x86-64, unsigned on aarch64. A producer
//! replayed from a prebuilt store made on another host compiled for that host, so its plain
//! `char` is not judged against this one's (the cases say so).

use crate::vocab::Vocabulary;
use std::fmt;
use std::sync::{Arc, OnceLock};
use strum::VariantArray;

use serde::Deserialize;

use crate::area::{BatchCache, CaseContext};
use crate::backend::host;
use crate::backend::producer::{Language, Options, Producer, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;
use crate::outcome::CaseStatus;
use crate::ptx::exec::{self, ExecError, Machine, MemSpace, Stop};

/// The languages the value programs are written in (numba-cuda's Python: the callees only).
pub const LANGUAGES: [Language; 5] = [
    Language::CudaCpp,
    Language::ClangCuda,
    Language::NvvmIr,
    Language::LlvmIr,
    Language::Numba,
];

/// Every producer that reads one of [`LANGUAGES`].
pub fn producers() -> Vec<Producer> {
    Producer::accepting(&LANGUAGES)
}

/// The producers of [`producers`] that write the callers too (all but numba-cuda).
pub fn caller_producers() -> Vec<Producer> {
    producers()
        .into_iter()
        .filter(|p| p.language_of(&LANGUAGES) != Some(Language::Numba))
        .collect()
}

/// Deserialize a producer of [`producers`]; any other is an error naming the view.
pub(crate) fn producer_in_view<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Producer, D::Error> {
    let p = Producer::deserialize(d)?;
    crate::backend::producer::in_view(p, "xcall values", &producers())
        .map_err(serde::de::Error::custom)
}

/// An integral source type narrower than 32 bits (§2.3 note A).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Narrow {
    #[strum(serialize = "bool")]
    Bool,
    #[strum(serialize = "char")]
    Char,
    #[strum(serialize = "schar")]
    Schar,
    #[strum(serialize = "uchar")]
    Uchar,
    #[strum(serialize = "short")]
    Short,
    #[strum(serialize = "ushort")]
    Ushort,
}

impl Narrow {
    pub(crate) fn c_type(self) -> &'static str {
        match self {
            Narrow::Bool => "bool",
            Narrow::Char => "char",
            Narrow::Schar => "signed char",
            Narrow::Uchar => "unsigned char",
            Narrow::Short => "short",
            Narrow::Ushort => "unsigned short",
        }
    }

    /// Bytes of the object in memory.
    pub(crate) fn bytes(self) -> usize {
        match self {
            Narrow::Short | Narrow::Ushort => 2,
            _ => 1,
        }
    }

    /// Signed types are sign-extended, the others zero-extended (note A); plain `char` is as
    /// signed as this host's (§1.1).
    pub(crate) fn signed(self) -> bool {
        self.signed_for(host::plain_char_signed(host::ARCH))
    }

    /// [`Narrow::signed`] on a host whose plain `char` is signed when `char_signed`.
    pub(crate) fn signed_for(self, char_signed: bool) -> bool {
        match self {
            Narrow::Char => char_signed,
            Narrow::Schar | Narrow::Short => true,
            Narrow::Bool | Narrow::Uchar | Narrow::Ushort => false,
        }
    }

    /// The IR type and the parameter attribute clang's CUDA front end gives it on this host.
    pub(crate) fn ir(self) -> (&'static str, &'static str) {
        self.ir_for(host::plain_char_signed(host::ARCH))
    }

    /// [`Narrow::ir`] on a host whose plain `char` is signed when `char_signed`.
    pub(crate) fn ir_for(self, char_signed: bool) -> (&'static str, &'static str) {
        match self {
            Narrow::Bool => ("i1", "zeroext"),
            Narrow::Char => ("i8", if char_signed { "signext" } else { "zeroext" }),
            Narrow::Schar => ("i8", "signext"),
            Narrow::Uchar => ("i8", "zeroext"),
            Narrow::Short => ("i16", "signext"),
            Narrow::Ushort => ("i16", "zeroext"),
        }
    }

    /// The object the caller reads and passes: the type's most negative value when signed,
    /// its top bit alone when unsigned, `true` for bool — every one of them one whose 32-bit
    /// form differs between sign and zero extension, but bool's.
    pub(crate) fn object(self) -> Vec<u8> {
        match self {
            Narrow::Bool => vec![1],
            Narrow::Short | Narrow::Ushort => vec![0x00, 0x80],
            _ => vec![0x80],
        }
    }

    /// The C value of the object (C11 6.2.6.2: two's complement on this host).
    pub(crate) fn value_of_object(self) -> i32 {
        let o = self.object();
        match (self.bytes(), self.signed()) {
            (1, true) => i32::from(o[0] as i8),
            (1, false) => i32::from(o[0]),
            (_, true) => i32::from(i16::from_le_bytes([o[0], o[1]])),
            (_, false) => i32::from(u16::from_le_bytes([o[0], o[1]])),
        }
    }

    /// `(int)(T)x` by C11 6.3.1.2 and 6.3.1.3 (modulo 2^N for the narrow types, as every
    /// producer on a two's-complement host defines it).
    pub(crate) fn convert(self, x: i32) -> i32 {
        match self {
            Narrow::Bool => i32::from(x != 0),
            Narrow::Char => {
                if self.signed() {
                    i32::from(x as i8)
                } else {
                    i32::from(x as u8)
                }
            }
            Narrow::Schar => i32::from(x as i8),
            Narrow::Uchar => i32::from(x as u8),
            Narrow::Short => i32::from(x as i16),
            Narrow::Ushort => i32::from(x as u16),
        }
    }
}

/// The `int` a narrow return value is converted from: its low byte and halfword have their top
/// bit set and the upper bits are neither all zeros nor all ones.
pub(crate) const RETURN_SOURCE: i32 = 0x5a5a_8080;
/// The `int` stored in the object whose address the caller passes (note B).
pub(crate) const POINTER_VALUE: i32 = 0x1234_5678;

/// Where the object of a note B call lives.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
#[serde(rename_all = "snake_case")]
pub enum Object {
    #[strum(serialize = "global")]
    Global,
    #[strum(serialize = "shared")]
    Shared,
    #[strum(serialize = "local")]
    Local,
}

impl Object {
    fn space(self) -> MemSpace {
        match self {
            Object::Global => MemSpace::Global,
            Object::Shared => MemSpace::Shared,
            Object::Local => MemSpace::Local,
        }
    }
}

/// What a case checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Subject {
    /// The 32-bit argument `call_<t>` writes for a narrow value (note A).
    Caller { ty: Narrow },
    /// The 32-bit return value `ret_<t>` writes (note A).
    Return { ty: Narrow },
    /// The pointer argument `ptr_<object>` passes, and `load_int` reading through a generic
    /// address of each space (note B).
    Pointer { object: Object },
}

// ------------------------------------------------------------------ the programs

fn cuda_source(clang: bool) -> String {
    let mut s = String::new();
    if clang {
        s += "#define __device__ __attribute__((device))\n#define __global__ __attribute__((global))\n\
              #define __shared__ __attribute__((shared))\n#define __noinline__ __attribute__((noinline))\n";
    }
    for &t in Narrow::VARIANTS {
        let (n, c) = (t.name(), t.c_type());
        s += &format!(
            "extern \"C\" __device__ int take_{n}({c});\n\
             extern \"C\" __global__ void call_{n}(const {c}* p, int* o) {{ *o = take_{n}(*p); }}\n\
             extern \"C\" __device__ __noinline__ int recv_{n}({c} c) {{ return c; }}\n\
             extern \"C\" __device__ __noinline__ {c} ret_{n}(int x) {{ return ({c})x; }}\n\
             extern \"C\" __device__ {c} give_{n}(int x);\n\
             extern \"C\" __global__ void callret_{n}(int x, int* o) {{ *o = give_{n}(x); }}\n"
        );
    }
    s += "extern \"C\" __device__ int deref(int* p);\n\
          __shared__ int gpucts_sh;\n__device__ int gpucts_gl;\n\
          extern \"C\" __global__ void ptr_global(int v, int* o) { gpucts_gl = v; *o = deref(&gpucts_gl); }\n\
          extern \"C\" __global__ void ptr_shared(int v, int* o) { gpucts_sh = v; *o = deref(&gpucts_sh); }\n\
          extern \"C\" __global__ void ptr_local(int v, int* o) { int l = v; *o = deref(&l); }\n\
          extern \"C\" __device__ __noinline__ int load_int(int* p) { return *p; }\n";
    s
}

/// numba's type for a narrow C type on a host whose plain `char` is signed when
/// `char_signed`.
fn numba_type(t: Narrow, char_signed: bool) -> &'static str {
    match t {
        Narrow::Bool => "types.boolean",
        Narrow::Char if char_signed => "types.int8",
        Narrow::Char => "types.uint8",
        Narrow::Schar => "types.int8",
        Narrow::Uchar => "types.uint8",
        Narrow::Short => "types.int16",
        Narrow::Ushort => "types.uint16",
    }
}

/// The callees for numba-cuda, as C ABI device functions (`abi="c"`): `ret_<t>(int x)`
/// returning `x` converted to the narrow type (numba's conversion of an int32 to int8 keeps
/// the low bits, to a boolean tests for non-zero: C's conversions) and `recv_<t>(t c)`
/// returning it as an int. numba writes no kernel with a C ABI and no pointer argument of a
/// chosen space, so the callers (`call_<t>`, `callret_<t>`) and note B's programs are absent.
fn numba_source(char_signed: bool) -> String {
    let mut s = String::from(
        "# Generated by gpucts xcall values for numba-cuda (abi=\"c\").\n\
         from numba import types\n\n\
         def identity(x):\n    return x\n\n\
         GPUCTS_FUNCTIONS = [\n",
    );
    for &t in Narrow::VARIANTS {
        let (n, ty) = (t.name(), numba_type(t, char_signed));
        s += &format!(
            "    (identity, {ty}(types.int32), \"ret_{n}\"),\n    (identity, types.int32({ty}), \"recv_{n}\"),\n"
        );
    }
    s + "]\n"
}

/// Why `producer` has no program for `subject`: numba-cuda writes only the callees.
fn unwritten(producer: Producer, subject: Subject) -> Option<String> {
    (producer.language_of(&LANGUAGES) == Some(Language::Numba)
        && !matches!(subject, Subject::Return { .. }))
    .then(|| {
        "numba-cuda compiles no kernel with a C ABI call and no pointer to a chosen state space: \
         only its callees (ret_<t>, recv_<t>) are judged"
            .to_string()
    })
}

/// The same programs as clang's CUDA front end lowers them for a host whose plain `char` is
/// signed when `char_signed` (narrow parameters and returns carry `signext`/`zeroext`, a
/// `bool` in memory is a byte), for libNVVM (`typed`, LLVM 7 typed pointers) and llc-19
/// (opaque pointers).
fn ir_source(typed: bool, char_signed: bool) -> String {
    let ptr = |t: &str, space: u32| -> String {
        match (typed, space) {
            (true, 0) => format!("{t}*"),
            (true, s) => format!("{t} addrspace({s})*"),
            (false, 0) => "ptr".into(),
            (false, s) => format!("ptr addrspace({s})"),
        }
    };
    let mut s = format!(
        "target datalayout = \"{}\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n\n",
        crate::abi::paramgen::NVVM_DATALAYOUT
    );
    let mut kernels = Vec::new();
    for &t in Narrow::VARIANTS {
        let n = t.name();
        let (ty, ext) = t.ir_for(char_signed);
        let mem = if t == Narrow::Bool { "i8" } else { ty };
        let load = if t == Narrow::Bool {
            format!(
                "  %m = load i8, {} %p\n  %v = trunc i8 %m to i1\n",
                ptr("i8", 0)
            )
        } else {
            format!("  %v = load {ty}, {} %p\n", ptr(ty, 0))
        };
        let widen = if t.signed_for(char_signed) {
            "sext"
        } else {
            "zext"
        };
        let narrow = if t == Narrow::Bool {
            "  %t = icmp ne i32 %x, 0\n".to_string()
        } else {
            format!("  %t = trunc i32 %x to {ty}\n")
        };
        s += &format!(
            "declare i32 @take_{n}({ty} {ext})\n\
             define void @call_{n}({} %p, {} %o) {{\n{load}  %r = call i32 @take_{n}({ty} {ext} %v)\n  store i32 %r, {} %o\n  ret void\n}}\n\
             define i32 @recv_{n}({ty} {ext} %c) #0 {{\n  %r = {widen} {ty} %c to i32\n  ret i32 %r\n}}\n\
             define {ext} {ty} @ret_{n}(i32 %x) #0 {{\n{narrow}  ret {ty} %t\n}}\n\
             declare {ext} {ty} @give_{n}(i32)\n\
             define void @callret_{n}(i32 %x, {} %o) {{\n  %v = call {ext} {ty} @give_{n}(i32 %x)\n  %r = {widen} {ty} %v to i32\n  store i32 %r, {} %o\n  ret void\n}}\n\n",
            ptr(mem, 0),
            ptr("i32", 0),
            ptr("i32", 0),
            ptr("i32", 0),
            ptr("i32", 0),
        );
        kernels.push(format!("call_{n}"));
        kernels.push(format!("callret_{n}"));
    }
    let p0 = ptr("i32", 0);
    s += &format!(
        "declare i32 @deref({p0})\n\
         @gpucts_sh = internal addrspace(3) global i32 undef, align 4\n\
         @gpucts_gl = addrspace(1) global i32 0, align 4\n\
         define void @ptr_global(i32 %v, {p0} %o) {{\n  store i32 %v, {} @gpucts_gl\n  %r = call i32 @deref({p0} addrspacecast ({} @gpucts_gl to {p0}))\n  store i32 %r, {p0} %o\n  ret void\n}}\n\
         define void @ptr_shared(i32 %v, {p0} %o) {{\n  store i32 %v, {} @gpucts_sh\n  %r = call i32 @deref({p0} addrspacecast ({} @gpucts_sh to {p0}))\n  store i32 %r, {p0} %o\n  ret void\n}}\n\
         define void @ptr_local(i32 %v, {p0} %o) {{\n  %l = alloca i32, align 4\n  store i32 %v, {p0} %l\n  %r = call i32 @deref({p0} %l)\n  store i32 %r, {p0} %o\n  ret void\n}}\n\
         define i32 @load_int({p0} %p) #0 {{\n  %r = load i32, {p0} %p\n  ret i32 %r\n}}\n\n\
         attributes #0 = {{ noinline }}\n",
        ptr("i32", 1),
        ptr("i32", 1),
        ptr("i32", 3),
        ptr("i32", 3),
    );
    kernels.extend(["ptr_global", "ptr_shared", "ptr_local"].map(String::from));
    let kty = |k: &str| -> String {
        if !typed {
            return "ptr".into();
        }
        if k.starts_with("callret_") || k.starts_with("ptr_") {
            "void (i32, i32*)*".into()
        } else {
            let t = Narrow::VARIANTS
                .iter()
                .find(|t| k == format!("call_{}", t.name()))
                .map_or("i8", |t| if *t == Narrow::Bool { "i8" } else { t.ir().0 });
            format!("void ({t}*, i32*)*")
        }
    };
    let refs: Vec<String> = (0..kernels.len()).map(|i| format!("!{}", i + 1)).collect();
    s += &format!("!nvvm.annotations = !{{{}}}\n", refs.join(", "));
    for (i, k) in kernels.iter().enumerate() {
        s += &format!("!{} = !{{{} @{k}, !\"kernel\", i32 1}}\n", i + 1, kty(k));
    }
    if typed {
        s += &format!(
            "!nvvmir.version = !{{!{}}}\n!{} = !{{i32 2, i32 0}}\n",
            kernels.len() + 1,
            kernels.len() + 1
        );
    }
    s
}

/// The value programs in `language` for a host whose plain `char` is signed when
/// `char_signed` (the C++ sources say `char` and leave it to the compiler's host).
pub(crate) fn source(language: Language, char_signed: bool) -> Option<String> {
    match language {
        Language::CudaCpp => Some(cuda_source(false)),
        Language::ClangCuda => Some(cuda_source(true)),
        Language::NvvmIr => Some(ir_source(true, char_signed)),
        Language::LlvmIr => Some(ir_source(false, char_signed)),
        Language::Numba => Some(numba_source(char_signed)),
        Language::C | Language::Ptx | Language::Rust | Language::Triton => None,
    }
}

pub(crate) fn compile(tc: &Toolchain, producer: Producer) -> Result<String, String> {
    // the IR is written as the front end of the producer's host writes it: a replayed llc
    // compiled the store's host's IR, which is what the store holds
    let arch = producer
        .capability()
        .map_or_else(|| host::ARCH.to_string(), |c| tc.host_arch(c));
    let char_signed = host::plain_char_signed(&arch);
    compile_programs(tc, producer, &|l| source(l, char_signed), "value programs")
}

/// `producer`'s PTX of the programs `source` writes in its language (relocatable device
/// code: the callers and callees link across producers), or why there is none.
pub(crate) fn compile_programs(
    tc: &Toolchain,
    producer: Producer,
    source: &dyn Fn(Language) -> Option<String>,
    what: &str,
) -> Result<String, String> {
    let language = producer
        .language_of(&LANGUAGES)
        .ok_or_else(|| format!("{} reads none of this check's languages", producer.name()))?;
    let text = source(language).ok_or_else(|| format!("no source in {language:?}"))?;
    let src = Source::new(language, &text).options(Options {
        nvrtc: &["--relocatable-device-code=true", "-std=c++17"],
        clang: &["-fgpu-rdc", "-O2", "-std=c++17"],
        nvvm: &[],
        llc: &["-O2"],
        rustc: &[],
    });
    producer
        .compile(tc, &src)
        .map_err(|e: ToolError| format!("{} rejected the {what}: {e}", producer.name()))
}

/// The producer's PTX of the value programs, compiled once per run.
pub(crate) fn batch(
    ctx: &CaseContext,
    producer: Producer,
) -> Arc<OnceLock<Result<String, String>>> {
    static CACHE: OnceLock<BatchCache<Producer, Result<String, String>>> = OnceLock::new();
    CACHE
        .get_or_init(BatchCache::new)
        .get_or_compute(ctx, &producer, || compile(ctx.toolchain, producer))
}

pub(crate) fn ptx_of(ctx: &CaseContext, producer: Producer) -> Result<String, CaseStatus> {
    match batch(ctx, producer).get() {
        Some(Ok(p)) => Ok(p.clone()),
        Some(Err(e)) => Err(CaseStatus::error(e)),
        None => Err(CaseStatus::error("batch not computed")),
    }
}

// ------------------------------------------------------------------ running them

/// Why an observation failed: the value is wrong (a finding), or the code could not be run
/// (the interpreter's limit, an error of the case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Expected, observed.
    Wrong(String, String),
    Exec(String),
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Wrong(e, o) => write!(f, "expected {e}, observed {o}"),
            Problem::Exec(m) => f.write_str(m),
        }
    }
}

impl From<ExecError> for Problem {
    fn from(e: ExecError) -> Problem {
        Problem::Exec(e.to_string())
    }
}

impl Problem {
    fn status(self, what: &str) -> CaseStatus {
        match self {
            Problem::Wrong(e, o) => CaseStatus::fail(format!("{what}: {e}"), o),
            Problem::Exec(m) => CaseStatus::error(format!("{what}: {m}")),
        }
    }
}

fn show(bytes: &[Option<u8>]) -> String {
    if bytes.iter().all(Option::is_some) && bytes.len() <= 8 {
        let v = bytes
            .iter()
            .rev()
            .fold(0u64, |a, b| (a << 8) | u64::from(b.unwrap_or(0)));
        format!("0x{v:0w$x}", w = bytes.len() * 2)
    } else {
        let parts: Vec<String> = bytes
            .iter()
            .map(|b| b.map_or("--".into(), |b| format!("{b:02x}")))
            .collect();
        format!("bytes [{}] (-- never written)", parts.join(" "))
    }
}

fn word(bytes: &[Option<u8>]) -> Option<u32> {
    if bytes.len() != 4 {
        return None;
    }
    let b: Option<Vec<u8>> = bytes.iter().copied().collect();
    b.map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The names of a function's parameters and return values, from the module reader.
fn param_names(ptx: &str, function: &str) -> Result<(Vec<String>, Vec<String>), Problem> {
    let m = crate::ptx::PtxModule::parse(ptx).map_err(|e| Problem::Exec(e.to_string()))?;
    let f = m
        .function(function)
        .filter(|f| f.is_definition)
        .ok_or_else(|| Problem::Exec(format!("no definition of `{function}`")))?;
    Ok((
        f.params.iter().map(|p| p.name.clone()).collect(),
        f.returns.iter().map(|p| p.name.clone()).collect(),
    ))
}

/// A kernel run to its first call: the machine (to resume), and the call.
struct AtCall {
    machine: Machine,
    callee: String,
    args: Vec<Vec<Option<u8>>>,
    rets: Vec<String>,
    /// Global address of the kernel's `int* o`.
    out: u64,
}

/// Run `kernel(a0, int* o)` to its call of `callee`; `first` is the first kernel parameter's
/// bytes, or the bytes of an object whose global address is passed instead.
fn run_to_call(ptx: &str, kernel: &str, first: KernelArg, callee: &str) -> Result<AtCall, Problem> {
    let (params, _) = param_names(ptx, kernel)?;
    let [p0, p1] = &params[..] else {
        return Err(Problem::Exec(format!(
            "`{kernel}` has {} parameters, not 2",
            params.len()
        )));
    };
    let mut m = Machine::new(ptx, kernel)?;
    let first = match first {
        KernelArg::Object(bytes) => m.place(MemSpace::Global, &bytes).to_le_bytes().to_vec(),
        KernelArg::Int(v) => v.to_le_bytes().to_vec(),
    };
    let out = m.place(MemSpace::Global, &[0; 4]);
    // A sentinel the kernel must overwrite with its result.
    m.write(MemSpace::Global, out, &0xdead_beefu32.to_le_bytes());
    m.set_param(p0, &first);
    m.set_param(p1, &out.to_le_bytes());
    match m.run()? {
        Stop::Call {
            callee: c,
            args,
            rets,
            ..
        } if c == callee => {
            let args = args
                .iter()
                .map(|a| m.param(a).map(<[_]>::to_vec).unwrap_or_default())
                .collect();
            Ok(AtCall {
                machine: m,
                callee: c,
                args,
                rets,
                out,
            })
        }
        other => Err(Problem::Exec(format!(
            "`{kernel}` did not call `{callee}` first: {other:?}"
        ))),
    }
}

enum KernelArg {
    Object(Vec<u8>),
    Int(i32),
}

impl AtCall {
    /// Give the call's return value and run the kernel to its end; what it stored at `o`.
    fn finish(mut self, ret: &[Option<u8>]) -> Result<Option<i32>, Problem> {
        let Some(r) = self.rets.first() else {
            return Err(Problem::Exec(format!(
                "the call of `{}` takes no return value",
                self.callee
            )));
        };
        let bytes: Option<Vec<u8>> = ret.iter().copied().collect();
        let bytes = bytes.ok_or_else(|| {
            Problem::Wrong("a fully written 32-bit return value".into(), show(ret))
        })?;
        self.machine.set_param(r, &bytes);
        match self.machine.run()? {
            Stop::Ret { .. } => {}
            other => return Err(Problem::Exec(format!("a second call: {other:?}"))),
        }
        Ok(word(&self.machine.read(MemSpace::Global, self.out, 4)).map(|w| w as i32))
    }
}

/// Run `function(bytes...)` to its `ret`; the bytes of its first return value. `memory`
/// is placed first (objects a pointer argument points at).
fn run_function(
    ptx: &str,
    function: &str,
    args: &[Vec<Option<u8>>],
    memory: &[(MemSpace, u64, Vec<u8>)],
) -> Result<Vec<Option<u8>>, Problem> {
    let (params, rets) = param_names(ptx, function)?;
    if params.len() != args.len() {
        return Err(Problem::Exec(format!(
            "`{function}` takes {} parameters, the caller passed {}",
            params.len(),
            args.len()
        )));
    }
    let mut m = Machine::new(ptx, function)?;
    for (space, addr, bytes) in memory {
        m.write(*space, *addr, bytes);
    }
    for (name, bytes) in params.iter().zip(args) {
        let b: Option<Vec<u8>> = bytes.iter().copied().collect();
        let b = b.ok_or_else(|| {
            Problem::Wrong(format!("every byte of `{name}` written"), show(bytes))
        })?;
        m.set_param(name, &b);
    }
    match m.run()? {
        Stop::Ret { .. } => {}
        other => return Err(Problem::Exec(format!("`{function}` calls: {other:?}"))),
    }
    let r = rets
        .first()
        .ok_or_else(|| Problem::Exec(format!("`{function}` returns nothing")))?;
    Ok(m.param(r).map(<[_]>::to_vec).unwrap_or_default())
}

fn expect_word(what: &str, got: &[Option<u8>], want: i32) -> Result<(), Problem> {
    // A 32-bit `.param` of which fewer bytes were written shows its unwritten ones.
    let mut got = got.to_vec();
    if got.len() < 4 {
        got.resize(4, None);
    }
    let got = &got[..];
    if word(got) == Some(want as u32) {
        Ok(())
    } else {
        Err(Problem::Wrong(
            format!("{what} 0x{:08x} ({want})", want as u32),
            show(got),
        ))
    }
}

/// Note A, caller side: the 32-bit argument `call_<t>` writes for the object.
pub(crate) fn caller_bits(ptx: &str, t: Narrow) -> Result<(), Problem> {
    let n = t.name();
    let at = run_to_call(
        ptx,
        &format!("call_{n}"),
        KernelArg::Object(t.object()),
        &format!("take_{n}"),
    )?;
    let arg = at.args.first().cloned().unwrap_or_default();
    let ext = if t.signed() { "sign" } else { "zero" };
    expect_word(
        &format!("the {n} argument {ext}-extended to 32 bits:"),
        &arg,
        t.value_of_object(),
    )
}

/// Note A, return side: the 32-bit return value of `ret_<t>(RETURN_SOURCE)`.
pub(crate) fn return_bits(ptx: &str, t: Narrow) -> Result<(), Problem> {
    let n = t.name();
    let got = run_function(
        ptx,
        &format!("ret_{n}"),
        &[RETURN_SOURCE.to_le_bytes().map(Some).to_vec()],
        &[],
    )?;
    let ext = if t.signed() { "sign" } else { "zero" };
    expect_word(
        &format!("the {n} return value {ext}-extended to 32 bits:"),
        &got,
        t.convert(RETURN_SOURCE),
    )
}

/// Whether `recv_<t>` relies on note A: given an argument whose upper 24 or 16 bits are not
/// the extension of its low bits, does it return them as they are (relies) or re-extend the
/// low bits (does not)? `Err` when a conforming argument does not give the value back.
pub(crate) fn callee_relies(ptx: &str, t: Narrow) -> Result<bool, Problem> {
    let n = t.name();
    let f = format!("recv_{n}");
    let v = t.value_of_object();
    let conforming = run_function(ptx, &f, &[v.to_le_bytes().map(Some).to_vec()], &[])?;
    expect_word(&format!("`{f}` of a conforming argument:"), &conforming, v)?;
    let low_bits = if t.bytes() == 1 { 8 } else { 16 };
    let dirty = (0x5a5a_5a5au32 & !((1u32 << low_bits) - 1)) | (v as u32 & ((1 << low_bits) - 1));
    let got = run_function(ptx, &f, &[dirty.to_le_bytes().map(Some).to_vec()], &[])?;
    Ok(word(&got) != Some(v as u32))
}

/// Note B, caller side: the pointer `ptr_<object>` passes is the generic address of an object
/// of that space holding [`POINTER_VALUE`]; returns the call stopped there and the address.
fn pointer_call(ptx: &str, object: Object) -> Result<(AtCall, u64), Problem> {
    let at = run_to_call(
        ptx,
        &format!("ptr_{}", object.name()),
        KernelArg::Int(POINTER_VALUE),
        "deref",
    )?;
    let arg = at.args.first().cloned().unwrap_or_default();
    let bytes: Option<Vec<u8>> = arg.iter().copied().collect();
    let addr = match bytes {
        Some(b) if b.len() == 8 => u64::from_le_bytes(b.try_into().unwrap_or([0; 8])),
        _ => {
            return Err(Problem::Wrong(
                "a 64-bit generic address".into(),
                show(&arg),
            ))
        }
    };
    let (space, a) = exec::resolve(addr);
    if space != object.space() {
        return Err(Problem::Wrong(
            format!(
                "the generic address of the {} object (in the {} window)",
                object.name(),
                object.space().name()
            ),
            format!("0x{addr:x}, a {} address", space.name()),
        ));
    }
    let held = at.machine.read(space, a, 4);
    if word(&held) != Some(POINTER_VALUE as u32) {
        return Err(Problem::Wrong(
            format!("0x{addr:x} to hold the object's value 0x{POINTER_VALUE:08x}"),
            show(&held),
        ));
    }
    Ok((at, addr))
}

/// Note B, callee side: `load_int` reads an `int` through the generic address of an object of
/// each space.
pub(crate) fn callee_dereferences(ptx: &str, object: Object) -> Result<(), Problem> {
    let space = object.space();
    let addr = 0x40;
    let generic = exec::generic(space, addr);
    let got = run_function(
        ptx,
        "load_int",
        &[generic.to_le_bytes().map(Some).to_vec()],
        &[(space, addr, POINTER_VALUE.to_le_bytes().to_vec())],
    )?;
    expect_word(
        &format!(
            "`load_int` through generic 0x{generic:x} (a {} object):",
            space.name()
        ),
        &got,
        POINTER_VALUE,
    )
}

pub(crate) fn pointer_arg(ptx: &str, object: Object) -> Result<(), Problem> {
    pointer_call(ptx, object).map(|_| ())
}

/// A caller of one producer against a callee of another: each narrow type both ways and a
/// pointer to each space; the kernel's result must be the C value. Returns the checks made.
/// The callee module's functions are the value programs' own (`recv_<t>`, `ret_<t>`,
/// `load_int`).
pub fn pair(caller: &str, callee: &str) -> Result<usize, Problem> {
    pair_via(caller, callee, Callees::Programs)
}

/// Which functions of the callee's module answer the caller's calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Callees {
    /// The value programs' `recv_<t>`, `ret_<t>` and `load_int`, defined beside the callers.
    Programs,
    /// A module that defines the names the callers call (`take_<t>`, `give_<t>`, `deref`),
    /// as the driver's linker joins them on a GPU.
    Linked,
}

impl Callees {
    pub(crate) fn arg(self, t: Narrow) -> String {
        match self {
            Callees::Programs => format!("recv_{}", t.name()),
            Callees::Linked => format!("take_{}", t.name()),
        }
    }

    pub(crate) fn ret(self, t: Narrow) -> String {
        match self {
            Callees::Programs => format!("ret_{}", t.name()),
            Callees::Linked => format!("give_{}", t.name()),
        }
    }

    pub(crate) fn deref(self) -> &'static str {
        match self {
            Callees::Programs => "load_int",
            Callees::Linked => "deref",
        }
    }
}

/// [`pair`] with the callee's functions named by `callees`.
pub(crate) fn pair_via(caller: &str, callee: &str, callees: Callees) -> Result<usize, Problem> {
    pair_of(caller, callee, callees, Narrow::VARIANTS)
}

/// [`pair_via`] over the narrow types `types` only.
fn pair_of(
    caller: &str,
    callee: &str,
    callees: Callees,
    types: &[Narrow],
) -> Result<usize, Problem> {
    let mut checks = 0;
    for &t in types {
        let n = t.name();
        // Argument: call_<t> (caller) -> recv_<t> (callee) -> back.
        let at = run_to_call(
            caller,
            &format!("call_{n}"),
            KernelArg::Object(t.object()),
            &format!("take_{n}"),
        )?;
        let ret = run_function(callee, &callees.arg(t), &at.args, &[])?;
        let got = at.finish(&ret)?;
        if got != Some(t.value_of_object()) {
            return Err(Problem::Wrong(
                format!("{n} argument: kernel result {}", t.value_of_object()),
                format!("{got:?}"),
            ));
        }
        // Return: callret_<t> (caller) -> ret_<t> (callee) -> back.
        let at = run_to_call(
            caller,
            &format!("callret_{n}"),
            KernelArg::Int(RETURN_SOURCE),
            &format!("give_{n}"),
        )?;
        let ret = run_function(callee, &callees.ret(t), &at.args, &[])?;
        let got = at.finish(&ret)?;
        if got != Some(t.convert(RETURN_SOURCE)) {
            return Err(Problem::Wrong(
                format!("{n} return: kernel result {}", t.convert(RETURN_SOURCE)),
                format!("{got:?}"),
            ));
        }
        checks += 2;
    }
    for &object in Object::VARIANTS {
        let (at, addr) = pointer_call(caller, object)?;
        let (space, a) = exec::resolve(addr);
        let held: Vec<u8> = at
            .machine
            .read(space, a, 4)
            .into_iter()
            .map(|b| b.unwrap_or(0))
            .collect();
        let ret = run_function(callee, callees.deref(), &at.args, &[(space, a, held)])?;
        let got = at.finish(&ret)?;
        if got != Some(POINTER_VALUE) {
            return Err(Problem::Wrong(
                format!("{} pointer: kernel result {POINTER_VALUE}", object.name()),
                format!("{got:?}"),
            ));
        }
        checks += 1;
    }
    Ok(checks)
}

/// Why `producer`'s plain `char` cannot be judged here: its output was compiled for another
/// host than this one (a prebuilt store made on another architecture), and plain `char`'s
/// signedness is the host's (§1.1).
fn foreign_host(ctx: &CaseContext, producer: Producer) -> Option<(Capability, String)> {
    let cap = producer.capability()?;
    let theirs = ctx.toolchain.host_arch(cap);
    (theirs != host::ARCH).then(|| {
        (
            cap,
            format!(
                "{}'s output was compiled for an {theirs} host (the prebuilt store's), this host \
                 is {}: plain char's signedness is the host's (ptx-interop-13.2 §1.1); make the \
                 store on an {} machine to judge it",
                producer.name(),
                host::ARCH,
                host::ARCH
            ),
        )
    })
}

/// The narrow types a pair is judged on: all of them, but plain `char` when a producer
/// compiled for another host (`foreign`).
fn judged_types(foreign: bool) -> Vec<Narrow> {
    Narrow::VARIANTS
        .iter()
        .copied()
        .filter(|t| !foreign || *t != Narrow::Char)
        .collect()
}

/// A per-producer case.
pub(crate) fn producer_case(ctx: &CaseContext, producer: Producer, subject: Subject) -> CaseStatus {
    if let Some(why) = unwritten(producer, subject) {
        return CaseStatus::skip(Capability::ProducerFeature, why);
    }
    if let Subject::Caller { ty: Narrow::Char } | Subject::Return { ty: Narrow::Char } = subject {
        if let Some((cap, why)) = foreign_host(ctx, producer) {
            return CaseStatus::skip(cap, why);
        }
    }
    let ptx = match ptx_of(ctx, producer) {
        Ok(p) => p,
        Err(s) => return s,
    };
    let what = producer.name();
    match subject {
        Subject::Caller { ty } => match caller_bits(&ptx, ty) {
            Ok(()) => CaseStatus::pass(),
            Err(p) => p.status(&format!("{what} caller")),
        },
        Subject::Return { ty } => match return_bits(&ptx, ty) {
            Ok(()) => match callee_relies(&ptx, ty) {
                Ok(relies) => CaseStatus::pass_with(format!(
                    "recv_{} {}",
                    ty.name(),
                    if relies {
                        "relies on the caller's extension (returns the word it got)"
                    } else {
                        "re-extends the low bits itself (does not rely on note A)"
                    }
                )),
                Err(p) => p.status(&format!("{what} callee")),
            },
            Err(p) => p.status(&format!("{what} callee")),
        },
        Subject::Pointer { object } => {
            match pointer_arg(&ptx, object).and_then(|()| callee_dereferences(&ptx, object)) {
                Ok(()) => CaseStatus::pass(),
                Err(p) => p.status(&format!("{what} pointer to a {} object", object.name())),
            }
        }
    }
}

/// A caller of `caller` against a callee of `callee`.
pub(crate) fn pair_case(ctx: &CaseContext, caller: Producer, callee: Producer) -> CaseStatus {
    let (a, b) = match (ptx_of(ctx, caller), ptx_of(ctx, callee)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(s), _) | (_, Err(s)) => return s,
    };
    // a producer compiled for another host: every type but plain char, whose signedness is
    // the host's
    let foreign = foreign_host(ctx, caller).or_else(|| foreign_host(ctx, callee));
    match pair_of(&a, &b, Callees::Programs, &judged_types(foreign.is_some())) {
        Ok(_) => match foreign {
            Some((_, why)) => CaseStatus::pass_with(format!("plain char not judged: {why}")),
            None => CaseStatus::pass(),
        },
        Err(p) => p.status(&format!(
            "{} caller, {} callee",
            caller.name(),
            callee.name()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numba's type for each narrow C type has the C type's width and signedness (from
    /// [`Narrow::bytes`] and [`Narrow::signed_for`], §1.1), on both kinds of host; the source
    /// defines `ret_<t>` and `recv_<t>` of each type once, and nothing else.
    #[test]
    fn numba_callees_have_the_c_types() {
        for char_signed in [true, false] {
            let src = numba_source(char_signed);
            for &t in Narrow::VARIANTS {
                let want = match t {
                    Narrow::Bool => "types.boolean".to_string(),
                    _ => format!(
                        "types.{}int{}",
                        if t.signed_for(char_signed) { "" } else { "u" },
                        t.bytes() * 8
                    ),
                };
                assert_eq!(numba_type(t, char_signed), want, "{t}");
                let n = t.name();
                assert_eq!(
                    src.matches(&format!("(identity, {want}(types.int32), \"ret_{n}\")"))
                        .count(),
                    1,
                    "{src}"
                );
                assert_eq!(
                    src.matches(&format!("(identity, types.int32({want}), \"recv_{n}\")"))
                        .count(),
                    1,
                    "{src}"
                );
            }
            assert_eq!(
                src.matches("(identity, ").count(),
                2 * Narrow::VARIANTS.len()
            );
        }
    }

    /// numba-cuda's callers and note B's programs are not written: those cases skip; its
    /// returns and every other producer's subjects are judged.
    #[test]
    fn numba_has_only_callee_cases() {
        let numba = Producer::named("numba-cuda");
        let nvrtc = Producer::named("nvrtc");
        let caller = Subject::Caller { ty: Narrow::Schar };
        let ret = Subject::Return { ty: Narrow::Schar };
        let ptr = Subject::Pointer {
            object: Object::Global,
        };
        assert!(unwritten(numba, caller)
            .unwrap()
            .contains("only its callees"));
        assert!(unwritten(numba, ptr).is_some());
        assert_eq!(unwritten(numba, ret), None);
        for s in [caller, ret, ptr] {
            assert_eq!(unwritten(nvrtc, s), None);
        }
        // The producers writing callers: the view without numba-cuda.
        let mut callers = producers();
        callers.retain(|&p| p != numba);
        assert_eq!(caller_producers(), callers);
        assert!(producers().contains(&numba) && callers.contains(&nvrtc));
    }

    /// numba-cuda's callees run: an unsigned narrow return is zero-extended as note A says, and
    /// `recv_<t>` gives a conforming argument back. (Its signed narrow returns are the
    /// finding W-XCALL-NUMBA-NARROW-RETURN-ZEXT: zero-extended.)
    #[test]
    fn numba_callees_execute() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::NumbaCuda), "numba-cuda");
        crate::require!(tc.has(Capability::Libnvvm), "libNVVM");
        let ptx = compile(&tc, Producer::named("numba-cuda")).unwrap();
        for t in [Narrow::Bool, Narrow::Uchar, Narrow::Ushort] {
            return_bits(&ptx, t).unwrap_or_else(|e| panic!("{t}: {e:?}"));
        }
        for &t in Narrow::VARIANTS {
            callee_relies(&ptx, t).unwrap_or_else(|e| panic!("{t}: {e:?}"));
        }
    }

    /// Plain `char` is the host's (§1.1): signed on x86-64, unsigned on aarch64, in the
    /// expected values, in the IR written for the IR producers and in which types a pair with
    /// a producer compiled for another host is judged on.
    #[test]
    fn plain_char_is_the_host_s() {
        assert!(Narrow::Char.signed_for(true) && !Narrow::Char.signed_for(false));
        assert_eq!(Narrow::Char.ir_for(true), ("i8", "signext"));
        assert_eq!(Narrow::Char.ir_for(false), ("i8", "zeroext"));
        assert_eq!(Narrow::Schar.ir_for(false), ("i8", "signext"));
        let host_signed = std::ffi::c_char::MIN != 0;
        assert_eq!(Narrow::Char.signed(), host_signed);
        assert_eq!(
            Narrow::Char.convert(RETURN_SOURCE),
            if host_signed { -128 } else { 128 }
        );
        assert_eq!(
            Narrow::Char.value_of_object(),
            if host_signed { -128 } else { 128 }
        );
        let unsigned_host = ir_source(false, false);
        assert!(
            unsigned_host.contains("@recv_char(i8 zeroext %c)"),
            "{unsigned_host}"
        );
        assert!(
            unsigned_host.contains("%r = zext i8 %c to i32"),
            "{unsigned_host}"
        );
        let signed_host = ir_source(true, true);
        assert!(
            signed_host.contains("@recv_char(i8 signext %c)"),
            "{signed_host}"
        );
        assert_eq!(judged_types(false), Narrow::VARIANTS.to_vec());
        let foreign = judged_types(true);
        assert!(!foreign.contains(&Narrow::Char) && foreign.len() == Narrow::VARIANTS.len() - 1);
    }

    /// A producer replayed from a store made on another host compiled for that host: its
    /// plain-char cases skip naming it (and the host), before anything is compiled; one from
    /// this host's store, or run here, is judged.
    #[test]
    fn a_producer_replayed_from_another_host_s_store_skips_its_plain_char() {
        use crate::backend::toolchain::{prebuilt, ToolSettings};
        let dir = tempfile::tempdir().unwrap();
        let store_on = |arch: &str| {
            let m = prebuilt::Manifest {
                format: prebuilt::FORMAT.into(),
                gpucts: env!("CARGO_PKG_VERSION").into(),
                tools: [("clang-19".to_string(), "clang version 19.1.7".to_string())].into(),
                ptxas: None,
                host_arch: Some(arch.to_string()),
                outputs: 0,
                cases: Default::default(),
            };
            std::fs::write(
                dir.path().join(prebuilt::MANIFEST),
                serde_json::to_string(&m).unwrap(),
            )
            .unwrap();
            let store = prebuilt::Store::open(dir.path()).unwrap();
            Toolchain::discover_with(ToolSettings {
                prebuilt: Some(std::sync::Arc::new(prebuilt::Mode::Replay(store))),
                output_cache: false,
                ..Default::default()
            })
        };
        let other = if host::ARCH == "s390x" {
            "x86_64"
        } else {
            "s390x"
        };
        let (config, scope, caps) = Default::default();
        let clang = Producer::named("clang");
        let tc = store_on(other);
        let ctx = CaseContext::new(&config, &scope, "t", &caps, &tc, ".".as_ref());
        let (cap, why) = foreign_host(&ctx, clang).expect("another host's store");
        assert_eq!(cap, Capability::Clang);
        assert!(
            why.contains(&format!("compiled for an {other} host")),
            "{why}"
        );
        let char_caller = Subject::Caller { ty: Narrow::Char };
        match producer_case(&ctx, clang, char_caller) {
            CaseStatus::Skip { capability, .. } => assert_eq!(capability, Capability::Clang),
            s => panic!("expected a skip: {s:?}"),
        }
        // gpucts's own emitter compiles nothing: always this host's
        assert!(foreign_host(&ctx, Producer::named("gpucts")).is_none());
        let tc = store_on(host::ARCH);
        let ctx = CaseContext::new(&config, &scope, "t", &caps, &tc, ".".as_ref());
        assert!(foreign_host(&ctx, clang).is_none());
    }

    #[test]
    fn expected_values_follow_c_conversions() {
        // C11 6.3.1.3 on a two's-complement host, by hand.
        assert_eq!(Narrow::Schar.value_of_object(), -128);
        assert_eq!(Narrow::Uchar.value_of_object(), 128);
        assert_eq!(Narrow::Short.value_of_object(), -32768);
        assert_eq!(Narrow::Ushort.value_of_object(), 32768);
        assert_eq!(Narrow::Bool.value_of_object(), 1);
        assert_eq!(Narrow::Schar.convert(RETURN_SOURCE), -128);
        assert_eq!(Narrow::Uchar.convert(RETURN_SOURCE), 0x80);
        assert_eq!(Narrow::Short.convert(RETURN_SOURCE), -32640);
        assert_eq!(Narrow::Ushort.convert(RETURN_SOURCE), 0x8080);
        assert_eq!(Narrow::Bool.convert(RETURN_SOURCE), 1);
    }

    /// A hand-written module shaped like the producers' output, with one defect per function
    /// that the checks must name.
    const HAND: &str = ".version 7.8\n.target sm_90\n.address_size 64\n\
        .extern .func (.param .b32 func_retval0) take_schar(.param .b32 take_schar_param_0);\n\
        .extern .func (.param .b32 func_retval0) deref(.param .b64 deref_param_0);\n\
        .visible .shared .align 4 .u32 gpucts_sh;\n\
        .visible .entry call_schar(.param .u64 call_schar_param_0, .param .u64 call_schar_param_1)\n{\n\
        \t.reg .b32 %r<4>;\n\t.reg .b64 %rd<5>;\n\
        \tld.param.u64 %rd1, [call_schar_param_0];\n\tld.param.u64 %rd2, [call_schar_param_1];\n\
        \tcvta.to.global.u64 %rd3, %rd2;\n\tcvta.to.global.u64 %rd4, %rd1;\n\
        \tld.global.u8 %r1, [%rd4];\n\
        \t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r1;\n\t.param .b32 retval0;\n\
        \tcall.uni (retval0), take_schar, (param0);\n\tld.param.b32 %r2, [retval0+0];\n\t}\n\
        \tst.global.u32 [%rd3], %r2;\n\tret;\n}\n\
        .visible .func (.param .b32 func_retval0) ret_schar(.param .b32 ret_schar_param_0)\n{\n\
        \t.reg .b16 %rs<2>;\n\tld.param.u8 %rs1, [ret_schar_param_0];\n\
        \tst.param.b16 [func_retval0+0], %rs1;\n\tret;\n}\n\
        .visible .func (.param .b32 func_retval0) recv_schar(.param .b32 recv_schar_param_0)\n{\n\
        \t.reg .b32 %r<2>;\n\tld.param.b32 %r1, [recv_schar_param_0];\n\
        \tst.param.b32 [func_retval0+0], %r1;\n\tret;\n}\n\
        .visible .entry ptr_shared(.param .u32 ptr_shared_param_0, .param .u64 ptr_shared_param_1)\n{\n\
        \t.reg .b32 %r<4>;\n\t.reg .b64 %rd<5>;\n\
        \tld.param.u32 %r1, [ptr_shared_param_0];\n\tst.shared.u32 [gpucts_sh], %r1;\n\
        \tmov.u64 %rd3, gpucts_sh;\n\
        \t{\n\t.param .b64 param0;\n\tst.param.b64 [param0+0], %rd3;\n\t.param .b32 retval0;\n\
        \tcall.uni (retval0), deref, (param0);\n\t}\n\tret;\n}\n\
        .visible .func (.param .b32 func_retval0) load_int(.param .b64 load_int_param_0)\n{\n\
        \t.reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [load_int_param_0];\n\
        \tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];\n\
        \tst.param.b32 [func_retval0+0], %r1;\n\tret;\n}\n";

    #[test]
    fn defects_are_named() {
        // A signed char zero-extended by the caller: 0x00000080, not 0xffffff80.
        let e = caller_bits(HAND, Narrow::Schar).unwrap_err();
        assert!(
            matches!(&e, Problem::Wrong(_, o) if o == "0x00000080"),
            "{e}"
        );
        // A return value written with st.param.b16: the upper half of the word is never
        // written.
        let e = return_bits(HAND, Narrow::Schar).unwrap_err();
        assert!(
            matches!(&e, Problem::Wrong(_, o) if o.contains("-- --")),
            "{e}"
        );
        // A callee returning the whole word relies on the caller's extension.
        assert!(callee_relies(HAND, Narrow::Schar).unwrap());
        // A shared address passed without cvta.shared: not in the shared window.
        let e = pointer_arg(HAND, Object::Shared).unwrap_err();
        assert!(
            matches!(&e, Problem::Wrong(w, _) if w.contains("generic address")),
            "{e}"
        );
        // A callee that converts its pointer to .global cannot read a shared object.
        assert!(callee_dereferences(HAND, Object::Global).is_ok());
        assert!(callee_dereferences(HAND, Object::Shared).is_err());
    }

    #[test]
    fn every_producer_extends_and_passes_generic_addresses() {
        let tc = Toolchain::discover_system();
        let mut outputs = Vec::new();
        for p in caller_producers() {
            crate::require!(p.requires().iter().all(|c| tc.has(*c)), p.name());
            let ptx = compile(&tc, p).unwrap();
            for &t in Narrow::VARIANTS {
                caller_bits(&ptx, t).unwrap_or_else(|e| panic!("{} {t:?}: {e}", p.name()));
                return_bits(&ptx, t).unwrap_or_else(|e| panic!("{} {t:?}: {e}", p.name()));
                callee_relies(&ptx, t).unwrap_or_else(|e| panic!("{} {t:?}: {e}", p.name()));
            }
            for &o in Object::VARIANTS {
                pointer_arg(&ptx, o).unwrap_or_else(|e| panic!("{} {o:?}: {e}", p.name()));
                callee_dereferences(&ptx, o).unwrap_or_else(|e| panic!("{} {o:?}: {e}", p.name()));
            }
            outputs.push((p, ptx));
        }
        for (a, pa) in &outputs {
            for (b, pb) in &outputs {
                assert_eq!(
                    pair(pa, pb).unwrap_or_else(|e| panic!("{} -> {}: {e}", a.name(), b.name())),
                    15
                );
            }
        }
    }
}
