//! Signatures for the parameter-passing checks: one function `T f(T x)` per source type class
//! of the ptx-interop 13.2 §2.3 table, written for each producer (CUDA C++ for NVRTC, C for
//! clang-19, NVVM IR for libNVVM), and the mapping from the functions a producer emits back to
//! the signature, with the declaration the table expects.
//!
//! Every type class is emitted twice: with external linkage (`gpucts_<id>`) and as a local
//! function called from a kernel (`gpucts_<id>_local`). LLVM treats the two differently: it
//! may change the `.param` of a function whose every caller it sees.

use crate::vocab::Vocabulary;
use std::fmt::Write as _;

use crate::abi::lint::{decl_rules, Rule};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::ptx::module::{FunctionKind, ParamDecl, PtxModule, PtxType};
use crate::ptx::table::{self, ScalarVerdict};
use crate::ptx::AddressSize;

/// A source type class of the §2.3 table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeClass {
    /// Integral types (§2.3 rows 1–2); `bits` is the source width.
    Integer { bits: u32, signed: bool },
    /// Pointers (§2.3 rows 3–4, note B): as wide as `.address_size`.
    Pointer,
    /// Floating-point types of 32 or 64 bits (note C).
    Float { bits: u32 },
    /// 16-bit floating-point types: note C forbids them as parameters and return values, so
    /// whatever a producer declares must not be a 16-bit float.
    HalfFloat,
    /// Aggregates or unions, native vectors included (§1.2): `.align align .b8 name[size]`.
    Aggregate { size: u64, align: u32 },
}

impl TypeClass {
    /// Name of the table row, for reports.
    pub fn row(&self) -> &'static str {
        match self {
            TypeClass::Integer { bits: 64, .. } => "integral 64",
            TypeClass::Integer { .. } => "integral 8 to 32",
            TypeClass::Pointer => "pointer",
            TypeClass::Float { .. } => "floating-point",
            TypeClass::HalfFloat => "16-bit floating-point",
            TypeClass::Aggregate { .. } => "aggregate or union",
        }
    }

    /// The scalar PTX type the table gives the row (`ptx::table`); `None` for the rows that are
    /// not one scalar (16-bit floats, aggregates).
    pub(crate) fn table_type(&self, address_size: AddressSize) -> Option<PtxType> {
        match *self {
            TypeClass::Integer { bits, signed } => Some(table::integer_type(bits, signed)),
            TypeClass::Pointer => Some(table::pointer_type(address_size)),
            TypeClass::Float { bits } => table::float_type(bits),
            TypeClass::HalfFloat | TypeClass::Aggregate { .. } => None,
        }
    }
}

/// One generated signature: `T gpucts_<id>(T x)` in each producer's language.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// Stable id, also the function-name stem.
    pub id: &'static str,
    /// Human-readable source type, e.g. `struct { char a, b, c; }`.
    pub source: &'static str,
    pub class: TypeClass,
    /// CUDA C++ spelling (NVRTC).
    pub cuda_type: &'static str,
    /// C spelling (clang-19).
    pub c_type: &'static str,
    /// LLVM IR type (libNVVM).
    pub ir_type: &'static str,
    /// IR parameter attributes for scalars (`signext`/`zeroext`), as clang would write them.
    pub ir_ext: &'static str,
}

/// The 64-bit host the generated sources target: `long` is 64 bits, pointers are 64 bits.
pub const ADDRESS_SIZE: AddressSize = AddressSize::A64;

const fn int(bits: u32, signed: bool) -> TypeClass {
    TypeClass::Integer { bits, signed }
}

const fn float(bits: u32) -> TypeClass {
    TypeClass::Float { bits }
}

const fn agg(size: u64, align: u32) -> TypeClass {
    TypeClass::Aggregate { size, align }
}

/// One row of [`SIGNATURES`], in the table's column order.
const fn sig(
    id: &'static str,
    source: &'static str,
    class: TypeClass,
    cuda_type: &'static str,
    c_type: &'static str,
    ir_type: &'static str,
    ir_ext: &'static str,
) -> Signature {
    Signature {
        id,
        source,
        class,
        cuda_type,
        c_type,
        ir_type,
        ir_ext,
    }
}

/// Every type class of the §2.3 table, with sizes and alignments from §1.1 and §1.2. Columns:
/// id, source type, class, CUDA C++ spelling, C spelling, LLVM IR type, IR parameter attribute.
#[rustfmt::skip]
pub(crate) const SIGNATURES: &[Signature] = &[
    sig("bool", "bool", int(8, false), "bool", "_Bool", "i1", "zeroext"),
    sig("char", "char", int(8, true), "char", "char", "i8", "signext"),
    sig("schar", "signed char", int(8, true), "signed char", "signed char", "i8", "signext"),
    sig("uchar", "unsigned char", int(8, false), "unsigned char", "unsigned char", "i8", "zeroext"),
    sig("short", "short", int(16, true), "short", "short", "i16", "signext"),
    sig("ushort", "unsigned short", int(16, false), "unsigned short", "unsigned short", "i16", "zeroext"),
    sig("int", "int", int(32, true), "int", "int", "i32", ""),
    sig("uint", "unsigned int", int(32, false), "unsigned int", "unsigned int", "i32", ""),
    // `long` follows the host: 64 bits on the 64-bit host (§1.1).
    sig("long", "long", int(64, true), "long", "long", "i64", ""),
    sig("ulong", "unsigned long", int(64, false), "unsigned long", "unsigned long", "i64", ""),
    sig("llong", "long long", int(64, true), "long long", "long long", "i64", ""),
    sig("ullong", "unsigned long long", int(64, false), "unsigned long long", "unsigned long long", "i64", ""),
    sig("float", "float", float(32), "float", "float", "float", ""),
    sig("double", "double", float(64), "double", "double", "double", ""),
    // NVRTC has no built-in 16-bit float type without cuda_fp16.h; `HalfStorage` mirrors
    // its `__half` (a 2-byte struct aligned to 2). clang and NVVM IR have native ones.
    sig("half", "half (_Float16 / __half)", TypeClass::HalfFloat, "HalfStorage", "_Float16", "half", ""),
    sig("ptr", "int *", TypeClass::Pointer, "int *", "int *", "i32*", ""),
    sig("s1", "struct { char a; }", agg(1, 1), "S1", "struct S1", "%S1", ""),
    sig("s2", "struct { char a[2]; }", agg(2, 1), "S2", "struct S2", "%S2", ""),
    sig("s3", "struct { char a, b, c; }", agg(3, 1), "S3", "struct S3", "%S3", ""),
    sig("s5", "struct { char a[5]; }", agg(5, 1), "S5", "struct S5", "%S5", ""),
    sig("s2a2", "struct { short a; }", agg(2, 2), "S2a2", "struct S2a2", "%S2a2", ""),
    sig("s6a2", "struct { short a[3]; }", agg(6, 2), "S6a2", "struct S6a2", "%S6a2", ""),
    sig("s4a4", "struct { int a; }", agg(4, 4), "S4a4", "struct S4a4", "%S4a4", ""),
    sig("s8a4", "struct { char c; int i; }", agg(8, 4), "S8a4", "struct S8a4", "%S8a4", ""),
    sig("s12a4", "struct { float x, y, z; }", agg(12, 4), "S12a4", "struct S12a4", "%S12a4", ""),
    sig("s8a8", "struct { long long a; }", agg(8, 8), "S8a8", "struct S8a8", "%S8a8", ""),
    sig("s16a8", "struct { double a, b; }", agg(16, 8), "S16a8", "struct S16a8", "%S16a8", ""),
    sig("s16a16", "struct __align__(16) { int a; }", agg(16, 16), "S16a16", "struct S16a16", "%S16a16", ""),
    sig("u4", "union { int i; float f; }", agg(4, 4), "U4", "union U4", "%U4", ""),
    // Native vectors (§1.2): odd count aligns as the element, even count as n × element.
    sig("char2", "char2", agg(2, 2), "char2", "char2", "<2 x i8>", ""),
    sig("char3", "char3", agg(3, 1), "char3", "char3", "<3 x i8>", ""),
    sig("char4", "char4", agg(4, 4), "char4", "char4", "<4 x i8>", ""),
    sig("short2", "short2", agg(4, 4), "short2", "short2", "<2 x i16>", ""),
    sig("int2", "int2", agg(8, 8), "int2", "int2", "<2 x i32>", ""),
    sig("float2", "float2", agg(8, 8), "float2", "float2", "<2 x float>", ""),
    sig("float3", "float3", agg(12, 4), "float3", "float3", "<3 x float>", ""),
    sig("float4", "float4", agg(16, 16), "float4", "float4", "<4 x float>", ""),
    sig("double2", "double2", agg(16, 16), "double2", "double2", "<2 x double>", ""),
];

/// Every type class of the §2.3 table as owned signatures ([`SIGNATURES`]).
pub fn signatures() -> Vec<Signature> {
    SIGNATURES.to_vec()
}

/// Which of the two emitted functions of a signature.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum Variant {
    /// External linkage: every producer must keep the table's form.
    #[strum(serialize = "external")]
    External,
    /// Local (static / internal) function, called from the kernel.
    #[strum(serialize = "local")]
    Local,
}

/// Name of the function a producer emits for `sig` in `variant`.
pub(crate) fn function_name(sig: &Signature, variant: Variant) -> String {
    match variant {
        Variant::External => format!("gpucts_{}", sig.id),
        Variant::Local => format!("gpucts_{}_local", sig.id),
    }
}

/// Whether the PTX symbol `symbol` is the function `name`: the same, or `name` inside an
/// Itanium-mangled symbol (NVRTC mangles `static` functions into an internal namespace,
/// e.g. `_ZN36_INTERNAL_…17gpucts_bool_localEb`; rustc's legacy mangling of a private
/// function is `_ZN5crate17gpucts_bool_local17h…E`).
pub(crate) fn symbol_is(symbol: &str, name: &str) -> bool {
    let len = name.len();
    symbol == name
        || (symbol.starts_with("_Z")
            && (symbol.contains(&format!("{len}{name}E"))
                // rustc's legacy mangling: the name, then the crate hash `17h<16 hex>`.
                || symbol.contains(&format!("{len}{name}17h"))))
}

/// The plain name inside a symbol: itself, or the last `<len>gpucts_…` component of an
/// Itanium-mangled symbol.
fn plain_name(symbol: &str) -> &str {
    if !symbol.starts_with("_Z") {
        return symbol;
    }
    let Some(at) = symbol.rfind("gpucts_") else {
        return symbol;
    };
    let digits = symbol[..at]
        .bytes()
        .rev()
        .take_while(u8::is_ascii_digit)
        .count();
    let Ok(len) = symbol[at - digits..at].parse::<usize>() else {
        return symbol;
    };
    symbol.get(at..at + len).unwrap_or(symbol)
}

/// The signature and variant a function symbol was generated from.
pub fn lookup<'s>(sigs: &'s [Signature], symbol: &str) -> Option<(&'s Signature, Variant)> {
    let stem = plain_name(symbol).strip_prefix("gpucts_")?;
    let (id, variant) = match stem.strip_suffix("_local") {
        Some(id) => (id, Variant::Local),
        None => (stem, Variant::External),
    };
    sigs.iter().find(|s| s.id == id).map(|s| (s, variant))
}

/// Options for [`crate::backend::toolchain::Toolchain::nvrtc`]: relocatable device code so
/// that external device functions are kept.
pub const NVRTC_OPTIONS: &[&str] = &["--gpu-architecture=compute_90", "-rdc=true"];
/// Extra clang-19 arguments (C, `--target=nvptx64-nvidia-cuda -march=sm_90` added by the backend).
pub(crate) const CLANG_ARGS: &[&str] = &["-O2"];
/// libNVVM options.
pub const NVVM_OPTIONS: &[&str] = &["-arch=compute_90"];

/// Struct definitions shared by the CUDA and C sources; CUDA vectors are built in.
fn c_aggregates(cuda: bool) -> String {
    let a16 = if cuda {
        "struct __align__(16) S16a16"
    } else {
        "struct __attribute__((aligned(16))) S16a16"
    };
    let mut s = String::from(
        "struct S1 { char a; };\nstruct S2 { char a[2]; };\nstruct S3 { char a, b, c; };\n\
         struct S5 { char a[5]; };\nstruct S2a2 { short a; };\nstruct S6a2 { short a[3]; };\n\
         struct S4a4 { int a; };\nstruct S8a4 { char c; int i; };\nstruct S12a4 { float x, y, z; };\n\
         struct S8a8 { long long a; };\nstruct S16a8 { double a, b; };\n",
    );
    let _ = writeln!(s, "{a16} {{ int a; }};\nunion U4 {{ int i; float f; }};");
    s
}

/// CUDA C++ for NVRTC: `extern "C" __device__ __noinline__ T gpucts_<id>(T x)` per
/// signature, a `static` local twin, and a kernel that calls the local twins.
pub(crate) fn nvrtc_source(sigs: &[Signature]) -> String {
    let mut s = String::from("// Generated by gpucts abi::paramgen for NVRTC.\n");
    s += "struct __align__(2) HalfStorage { unsigned short x; };\n";
    s += &c_aggregates(true);
    for sig in sigs {
        let t = sig.cuda_type;
        let g = global_name(sig);
        let _ = writeln!(s, "__device__ {t} {g};");
        for (head, v) in [
            ("extern \"C\"", Variant::External),
            ("static", Variant::Local),
        ] {
            let _ = writeln!(s, "{head} __device__ __noinline__ {t} {}({t} x) {{ {t} r = {g}; {g} = x; return r; }}", function_name(sig, v));
        }
    }
    s += &kernel_body(
        sigs,
        "extern \"C\" __global__ void gpucts_kernel(char *buf)",
        |s| s.cuda_type,
    );
    s
}

/// C for clang-19 `--target=nvptx64-nvidia-cuda`: the same functions with
/// `__attribute__((noinline))` and an `nvptx_kernel` caller.
pub(crate) fn clang_source(sigs: &[Signature]) -> String {
    let mut s = String::from(
        "// Generated by gpucts abi::paramgen for clang-19 (C, nvptx64-nvidia-cuda).\n",
    );
    s += &c_aggregates(false);
    for (n, e, c) in [
        ("char", "char", 2),
        ("char", "char", 3),
        ("char", "char", 4),
        ("short", "short", 2),
        ("int", "int", 2),
        ("float", "float", 2),
        ("float", "float", 3),
        ("float", "float", 4),
        ("double", "double", 2),
    ] {
        let _ = writeln!(
            s,
            "typedef {e} {n}{c} __attribute__((ext_vector_type({c})));"
        );
    }
    for sig in sigs {
        let t = sig.c_type;
        let g = global_name(sig);
        let _ = writeln!(s, "{t} {g};");
        for (head, v) in [("", Variant::External), ("static ", Variant::Local)] {
            let _ = writeln!(s, "{head}__attribute__((noinline)) {t} {}({t} x) {{ {t} r = {g}; {g} = x; return r; }}", function_name(sig, v));
        }
    }
    s += &kernel_body(
        sigs,
        "__attribute__((nvptx_kernel)) void gpucts_kernel(char *buf)",
        |s| s.c_type,
    );
    s
}

/// Rust for rustc (`nvptx64-nvidia-cuda`): the C types' `#[repr(C)]` twins (CUDA's vectors as
/// the structs CUDA defines them as; `f16` for the half), an exported `extern "C"` function
/// per signature, a private twin, and a `ptx-kernel` that calls the twins.
pub(crate) fn rust_source(sigs: &[Signature]) -> String {
    let mut s = String::from(
        "// Generated by gpucts abi::paramgen for rustc (nvptx64-nvidia-cuda).\n\
         #![no_std]\n#![feature(abi_ptx, f16)]\n\
         #![allow(non_camel_case_types, non_upper_case_globals, dead_code, improper_ctypes_definitions)]\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S1 { a: i8 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S2 { a: [i8; 2] }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S3 { a: i8, b: i8, c: i8 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S5 { a: [i8; 5] }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S2a2 { a: i16 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S6a2 { a: [i16; 3] }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S4a4 { a: i32 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S8a4 { c: i8, i: i32 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S12a4 { x: f32, y: f32, z: f32 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S8a8 { a: i64 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub struct S16a8 { a: f64, b: f64 }\n\
         #[repr(C, align(16))] #[derive(Clone, Copy)] pub struct S16a16 { a: i32 }\n\
         #[repr(C)] #[derive(Clone, Copy)] pub union U4 { i: i32, f: f32 }\n",
    );
    // CUDA's vector types (vector_types.h): `__align__` of n x the element for n = 2, 4.
    for (name, e, n, align) in [
        ("char2", "i8", 2, 2),
        ("char3", "i8", 3, 1),
        ("char4", "i8", 4, 4),
        ("short2", "i16", 2, 4),
        ("int2", "i32", 2, 8),
        ("float2", "f32", 2, 8),
        ("float3", "f32", 3, 4),
        ("float4", "f32", 4, 16),
        ("double2", "f64", 2, 16),
    ] {
        let fields = ["x", "y", "z", "w"][..n]
            .iter()
            .map(|f| format!("{f}: {e}"))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            s,
            "#[repr(C, align({align}))] #[derive(Clone, Copy)] pub struct {name} {{ {fields} }}"
        );
    }
    let mut kernel = String::from(
        "#[no_mangle]\npub unsafe extern \"ptx-kernel\" fn gpucts_kernel(buf: *mut u8) {\n",
    );
    for (i, sig) in sigs.iter().enumerate() {
        let t = rust_type(sig);
        let g = global_name(sig);
        let _ = writeln!(s, "static mut {g}: {t} = unsafe {{ core::mem::zeroed() }};");
        for (head, v) in [
            ("#[no_mangle] pub ", Variant::External),
            ("", Variant::Local),
        ] {
            let _ = writeln!(
                s,
                "#[inline(never)] {head}extern \"C\" fn {}(x: {t}) -> {t} {{ unsafe {{ core::ptr::replace(core::ptr::addr_of_mut!({g}), x) }} }}",
                function_name(sig, v)
            );
        }
        let _ = writeln!(
            kernel,
            "    *(buf.add({}) as *mut {t}) = {}(*(buf.add({}) as *const {t}));",
            i * 128,
            function_name(sig, Variant::Local),
            i * 128 + 64
        );
    }
    kernel += "}\n";
    s + &kernel
}

/// The Rust spelling of a signature's C type: `core::ffi`'s widths on the 64-bit host (`long`
/// is `i64`), `#[repr(C)]` twins for the aggregates.
fn rust_type(sig: &Signature) -> &'static str {
    match sig.id {
        "bool" => "bool",
        "char" | "schar" => "i8",
        "uchar" => "u8",
        "short" => "i16",
        "ushort" => "u16",
        "int" => "i32",
        "uint" => "u32",
        "long" | "llong" => "i64",
        "ulong" | "ullong" => "u64",
        "float" => "f32",
        "double" => "f64",
        "half" => "f16",
        "ptr" => "*mut i32",
        // The aggregates and vectors: the twin of the C type of the same name.
        _ => sig
            .c_type
            .trim_start_matches("struct ")
            .trim_start_matches("union "),
    }
}

/// Each function swaps its argument with a global, so no producer can fold the call away or
/// drop its return value.
fn global_name(sig: &Signature) -> String {
    format!("gpucts_g_{}", sig.id)
}

/// Slots of 64 bytes in the kernel's buffer, one pair per signature, each aligned for any type.
fn kernel_body(sigs: &[Signature], head: &str, ty: impl Fn(&Signature) -> &'static str) -> String {
    let mut s = format!("{head} {{\n");
    for (i, sig) in sigs.iter().enumerate() {
        let t = ty(sig);
        let _ = writeln!(
            s,
            "  *({t} *)(buf + {}) = {}(*({t} *)(buf + {}));",
            i * 128,
            function_name(sig, Variant::Local),
            i * 128 + 64
        );
    }
    s += "}\n";
    s
}

/// IR struct bodies whose natural alignment is the C alignment, so a returned value carries it.
fn ir_struct(id: &str) -> Option<&'static str> {
    Some(match id {
        "s1" => "{ i8 }",
        "s2" => "{ [2 x i8] }",
        "s3" => "{ i8, i8, i8 }",
        "s5" => "{ [5 x i8] }",
        "s2a2" => "{ i16 }",
        "s6a2" => "{ [3 x i16] }",
        "s4a4" => "{ i32 }",
        "s8a4" => "{ i8, i32 }",
        "s12a4" => "{ float, float, float }",
        "s8a8" => "{ i64 }",
        "s16a8" => "{ double, double }",
        // `<4 x i32>` is 16-aligned under the NVVM data layout; `{ i32, [12 x i8] }` would
        // carry alignment 4 into the return value.
        "s16a16" => "{ <4 x i32> }",
        "u4" => "{ i32 }",
        _ => return None,
    })
}

/// The data layout libNVVM documents for 64-bit NVVM IR.
pub(crate) const NVVM_DATALAYOUT: &str = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64";

/// NVVM IR (LLVM 7 dialect with typed pointers, which libNVVM 12.x reads) for libNVVM.
/// Scalars and vectors pass by value; structs by `byval` pointer with the C alignment, as
/// clang's front end lowers them, and return by value.
pub(crate) fn nvvm_ir(sigs: &[Signature]) -> String {
    let mut s = String::from("; Generated by gpucts abi::paramgen for libNVVM.\n");
    let _ = writeln!(
        s,
        "target datalayout = \"{NVVM_DATALAYOUT}\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n"
    );
    for sig in sigs {
        if let Some(body) = ir_struct(sig.id) {
            let _ = writeln!(s, "{} = type {body}", sig.ir_type);
        }
    }
    for sig in sigs {
        let _ = writeln!(
            s,
            "@{} = internal addrspace(1) global {} zeroinitializer",
            global_name(sig),
            sig.ir_type
        );
    }
    let mut kernel = String::from("define void @gpucts_kernel(i8* %buf) {\n");
    for (i, sig) in sigs.iter().enumerate() {
        let t = sig.ir_type;
        let ext = if sig.ir_ext.is_empty() {
            String::new()
        } else {
            format!("{} ", sig.ir_ext)
        };
        let (in_off, out_off) = (i * 128 + 64, i * 128);
        let _ = writeln!(s);
        let _ = write!(kernel, "  %i{i} = getelementptr i8, i8* %buf, i64 {in_off}\n  %ip{i} = bitcast i8* %i{i} to {t}*\n  %o{i} = getelementptr i8, i8* %buf, i64 {out_off}\n  %op{i} = bitcast i8* %o{i} to {t}*\n");
        for v in [Variant::External, Variant::Local] {
            let name = function_name(sig, v);
            let linkage = if v == Variant::Local { "internal " } else { "" };
            let g = format!(
                "{t}* addrspacecast ({t} addrspace(1)* @{} to {t}*)",
                global_name(sig)
            );
            let swap =
                |x: &str| format!("  %old = load {t}, {g}\n  store {t} {x}, {g}\n  ret {t} %old\n");
            if let TypeClass::Aggregate { align, .. } = sig.class {
                if sig.ir_type.starts_with('%') {
                    let _ = writeln!(s, "define {linkage}{t} @{name}({t}* byval align {align} %x) noinline {{\n  %v = load {t}, {t}* %x, align {align}\n{}}}", swap("%v"));
                    if v == Variant::Local {
                        let _ = writeln!(kernel, "  %r{i} = call {t} @{name}({t}* byval align {align} %ip{i})\n  store {t} %r{i}, {t}* %op{i}, align {align}");
                    }
                    continue;
                }
            }
            let _ = writeln!(
                s,
                "define {linkage}{ext}{t} @{name}({t} {ext}%x) noinline {{\n{}}}",
                swap("%x")
            );
            if v == Variant::Local {
                let _ = writeln!(kernel, "  %a{i} = load {t}, {t}* %ip{i}\n  %r{i} = call {ext}{t} @{name}({t} {ext}%a{i})\n  store {t} %r{i}, {t}* %op{i}");
            }
        }
    }
    kernel += "  ret void\n}\n";
    s += "\n";
    s += &kernel;
    s += "\n!nvvm.annotations = !{!0}\n!0 = !{void (i8*)* @gpucts_kernel, !\"kernel\", i32 1}\n";
    s += "!nvvmir.version = !{!1}\n!1 = !{i32 2, i32 0}\n";
    s
}

/// Where a declaration sits in the prototype.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum Position {
    #[strum(serialize = "param")]
    Param,
    #[strum(serialize = "return")]
    Return,
}

/// What a producer declared for one signature, variant and position, and how it measures up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    pub sig_id: &'static str,
    pub class: TypeClass,
    pub variant: Variant,
    pub position: Position,
    /// The declaration as PTX text; `None` when the function or the value is missing.
    pub declared: Option<String>,
    /// Source line of the declaration (or of the function when the value is missing).
    pub line: u32,
    /// Rules broken, with messages; empty when the declaration conforms.
    pub findings: Vec<(Rule, String)>,
}

impl Observation {
    pub fn conforms(&self) -> bool {
        self.findings.is_empty()
    }
}

/// The declaration the table expects for `class`, as text (name omitted).
pub(crate) fn expected_decl(class: TypeClass, address_size: AddressSize) -> String {
    match class {
        TypeClass::Integer { bits: 64, signed } => {
            format!(".param {}", if signed { ".s64" } else { ".u64" })
        }
        TypeClass::Integer { signed, .. } => {
            format!(".param {}", if signed { ".s32" } else { ".u32" })
        }
        TypeClass::Pointer => format!(".param .u{address_size}"),
        TypeClass::Float { bits } => format!(".param .f{bits}"),
        TypeClass::HalfFloat => "not a 16-bit floating-point .param".to_string(),
        TypeClass::Aggregate { size, align } => format!(".param .align {align} .b8 name[{size}]"),
    }
}

/// Check one declaration of a device function against the table row of its source type:
/// the rules the linter applies to PTX alone, plus what only the source type tells (width and
/// class of scalars, alignment and size of aggregates). A scalar is judged by
/// `ptx::table::judge_scalar`, the judge `xcall` uses for caller against callee: `.bN` is the
/// untyped form of an integer row, while the other signedness and `.bN` for `.fN` depart.
pub(crate) fn check_decl(
    class: TypeClass,
    p: &ParamDecl,
    address_size: AddressSize,
) -> Vec<(Rule, String)> {
    let mut v = decl_rules(FunctionKind::Func, p, address_size);
    let scalar = p.array.is_none() && p.vector.is_none();
    let want = expected_decl(class, address_size);
    let verdict = class
        .table_type(address_size)
        .filter(|_| scalar)
        .map(|t| table::judge_scalar(t, p.ty));
    let departure = |verdict: Option<ScalarVerdict>| match verdict.and_then(|v| v.departure()) {
        Some(d) => format!(": {d}"),
        None => String::new(),
    };
    match class {
        TypeClass::Integer { bits, signed } => {
            let already = v.iter().any(|(r, _)| *r == Rule::NarrowInteger);
            if !verdict.is_some_and(ScalarVerdict::conforms) && !already {
                let sign = if signed { "signed" } else { "unsigned" };
                v.push((
                    Rule::ScalarClass,
                    format!(
                        "{bits}-bit {sign} integer declared `{}`{}; the table gives `{want}`",
                        p.render(),
                        departure(verdict)
                    ),
                ));
            }
        }
        TypeClass::Pointer => match verdict {
            Some(ok) if ok.conforms() => {}
            Some(ScalarVerdict::OtherSignedness) => v.push((
                Rule::ScalarClass,
                format!(
                    "pointer declared `{}`{}; the table gives `{want}`",
                    p.render(),
                    departure(verdict)
                ),
            )),
            _ => v.push((Rule::PointerWidth, format!("pointer declared `{}` under `.address_size {address_size}`; the table gives `{want}`", p.render()))),
        },
        TypeClass::Float { bits } => {
            if !verdict.is_some_and(ScalarVerdict::conforms) {
                v.push((
                    Rule::ScalarClass,
                    format!(
                        "{bits}-bit float declared `{}`{}; the table gives `{want}`",
                        p.render(),
                        departure(verdict)
                    ),
                ));
            }
        }
        TypeClass::HalfFloat => {
            // Note C bans a 16-bit float; a 16-bit integer scalar carrying it is no better.
            if scalar && p.ty.bits() == Some(16)
                && !v
                    .iter()
                    .any(|(r, _)| matches!(r, Rule::HalfFloat | Rule::NarrowInteger))
            {
                v.push((
                    Rule::HalfFloat,
                    format!("16-bit float passed as 16-bit scalar `{}`", p.render()),
                ));
            }
        }
        TypeClass::Aggregate { size, align } => {
            if p.array.is_none() {
                v.push((Rule::AggregateForm, format!("aggregate of {size} bytes declared as scalar `{}`; the table gives `{want}`", p.render())));
            } else {
                if p.align.is_some_and(|a| a != align) {
                    v.push((
                        Rule::AggregateAlign,
                        format!(
                            "declared `.align {}`, the aggregate's alignment is {align}",
                            p.align.unwrap_or(0)
                        ),
                    ));
                }
                if p.array_len().is_some_and(|n| n != size) {
                    v.push((
                        Rule::AggregateSize,
                        format!(
                            "declared {} bytes, the aggregate's size is {size}",
                            p.array_len().unwrap_or(0)
                        ),
                    ));
                }
            }
        }
    }
    v
}

/// Map every generated function in `module` back to its signature and judge its parameter
/// and return value. A function the producer did not emit, a missing return value (e.g. an
/// aggregate returned through a hidden pointer) or an extra parameter is reported as a
/// finding of the observation it affects.
pub(crate) fn observe(module: &PtxModule, sigs: &[Signature]) -> Vec<Observation> {
    let addr = module.effective_address_size();
    let mut out = Vec::new();
    for sig in sigs {
        for variant in [Variant::External, Variant::Local] {
            let name = function_name(sig, variant);
            let f = module
                .functions
                .iter()
                .filter(|f| symbol_is(&f.name, &name) && f.kind == FunctionKind::Func)
                .max_by_key(|f| f.is_definition);
            for position in [Position::Param, Position::Return] {
                let mut obs = Observation {
                    sig_id: sig.id,
                    class: sig.class,
                    variant,
                    position,
                    declared: None,
                    line: 0,
                    findings: Vec::new(),
                };
                let Some(f) = f else {
                    obs.findings
                        .push((Rule::Missing, format!("function `{name}` not emitted")));
                    out.push(obs);
                    continue;
                };
                obs.line = f.line;
                let list = if position == Position::Param {
                    &f.params
                } else {
                    &f.returns
                };
                match list.as_slice() {
                    [p] => {
                        obs.declared = Some(p.render());
                        obs.line = p.line;
                        obs.findings = check_decl(sig.class, p, addr);
                    }
                    [] => obs.findings.push((
                        Rule::Missing,
                        format!(
                            "`{name}` has no {}",
                            if position == Position::Param {
                                "parameter"
                            } else {
                                "return value"
                            }
                        ),
                    )),
                    many => {
                        obs.declared = Some(
                            many.iter()
                                .map(ParamDecl::render)
                                .collect::<Vec<_>>()
                                .join(", "),
                        );
                        obs.line = many[0].line;
                        obs.findings.push((
                            Rule::AggregateForm,
                            format!("one source value passed as {} declarations", many.len()),
                        ));
                    }
                }
                out.push(obs);
            }
        }
    }
    out
}

pub use crate::backend::producer::Producer;
use crate::backend::producer::{Language, Options, Source};

/// The languages the signatures are written in (one source generator each).
pub const LANGUAGES: [Language; 5] = [
    Language::CudaCpp,
    Language::C,
    Language::NvvmIr,
    Language::Rust,
    Language::Numba,
];

/// This area's view of the producer vocabulary: every producer that reads one of
/// [`LANGUAGES`].
pub fn producers() -> Vec<Producer> {
    Producer::accepting(&LANGUAGES)
}

/// The source in `language` for `sigs`; `None` for a language the area does not write.
pub fn source(language: Language, sigs: &[Signature]) -> Option<String> {
    match language {
        Language::CudaCpp => Some(nvrtc_source(sigs)),
        Language::C => Some(clang_source(sigs)),
        Language::NvvmIr => Some(nvvm_ir(sigs)),
        Language::Rust => Some(rust_source(sigs)),
        Language::Numba => Some(numba_source(sigs)),
        Language::ClangCuda | Language::LlvmIr | Language::Ptx | Language::Triton => None,
    }
}

/// What the area asks of each tool: relocatable device code (NVRTC), so that external device
/// functions are kept; clang at `-O2`.
const OPTIONS: Options<'static> = Options {
    nvrtc: &["-rdc=true"],
    clang: CLANG_ARGS,
    nvvm: &[],
    llc: &[],
    // Legacy mangling names the private twins `_ZN…17gpucts_<id>_local17h<hash>E`, which
    // [`symbol_is`] reads like NVRTC's internal names.
    rustc: &[
        "-Copt-level=2",
        "-Zunstable-options",
        "-Csymbol-mangling-version=legacy",
    ],
};

/// numba's type for a signature's C type, for numba-cuda's C ABI (`abi="c"`): its scalar
/// types (`boolean` is C's `_Bool`, `float16` the 16-bit float, `CPointer(int32)` `int *`);
/// `Err` with the reason for a type numba cannot pass that way.
pub(crate) fn numba_type(sig: &Signature) -> Result<&'static str, String> {
    Ok(match sig.id {
        "bool" => "types.boolean",
        "char" | "schar" => "types.int8",
        "uchar" => "types.uint8",
        "short" => "types.int16",
        "ushort" => "types.uint16",
        "int" => "types.int32",
        "uint" => "types.uint32",
        "long" | "llong" => "types.int64",
        "ulong" | "ullong" => "types.uint64",
        "float" => "types.float32",
        "double" => "types.float64",
        "half" => "types.float16",
        "ptr" => "types.CPointer(types.int32)",
        _ => {
            return Err(format!(
                "numba-cuda's C ABI has no by-value {} ({}): its abi=\"c\" functions take \
                 numba's scalar types and pointers",
                sig.class.row(),
                sig.source
            ))
        }
    })
}

/// Python for numba-cuda: `def gpucts_<id>(x): return x` compiled for each signature numba
/// writes ([`numba_type`]) as a C ABI device function of that name, `T gpucts_<id>(T x)`.
/// numba has no internal-linkage C function, so only the external variant is written.
pub(crate) fn numba_source(sigs: &[Signature]) -> String {
    let mut s = String::from(
        "# Generated by gpucts abi::paramgen for numba-cuda (abi=\"c\").\n\
         from numba import types\n\n\
         def identity(x):\n    return x\n\n\
         GPUCTS_FUNCTIONS = [\n",
    );
    for sig in sigs {
        if let Ok(t) = numba_type(sig) {
            let _ = writeln!(
                s,
                "    (identity, {t}({t}), \"{}\"),",
                function_name(sig, Variant::External)
            );
        }
    }
    s + "]\n"
}

/// Why `producer` cannot write `sig`'s function, if it cannot.
pub(crate) fn inexpressible(producer: Producer, sig: &Signature) -> Option<String> {
    match producer.language_of(&LANGUAGES) {
        Some(Language::Numba) => numba_type(sig).err(),
        _ => None,
    }
}

/// Compile `sigs` to PTX with `producer` (one of [`producers`]).
pub(crate) fn emit(
    producer: Producer,
    tc: &Toolchain,
    sigs: &[Signature],
) -> Result<String, ToolError> {
    let Some(language) = producer.language_of(&LANGUAGES) else {
        let e = crate::backend::producer::in_view(producer, "abi::paramgen", &producers());
        return Err(ToolError::Failed {
            tool: producer.name().to_string(),
            log: e.err().map(|e| e.to_string()).unwrap_or_default(),
        });
    };
    let text = source(language, sigs).unwrap_or_default();
    let src = Source::new(language, &text)
        .file_name("gpucts_paramgen.cu")
        .options(OPTIONS);
    producer.compile(tc, &src)
}

/// A Markdown table: one row per signature, one column per producer and variant, each cell
/// `param / return` declarations, with the rule ids of any finding. For reports and notes.
pub fn summary_table(sigs: &[Signature], results: &[(Producer, Vec<Observation>)]) -> String {
    let mut s = String::from("| type | §2.3 row | expected |");
    let mut rule = String::from("| --- | --- | --- |");
    for (p, _) in results {
        for v in [Variant::External, Variant::Local] {
            let _ = write!(s, " {} {} |", p.name(), v.name());
            rule += " --- |";
        }
    }
    s += "\n";
    s += &rule;
    s += "\n";
    let short = |d: &Option<String>| {
        d.as_deref().map_or("—".to_string(), |d| {
            // Drop the parameter name: `.param .align 4 .b8 [3]`.
            let mut parts: Vec<&str> = d.split(' ').collect();
            if let Some(last) = parts.last_mut() {
                if let Some(i) = last.find('[') {
                    *last = &last[i..];
                } else if !last.starts_with('.') {
                    parts.pop();
                }
            }
            parts.join(" ")
        })
    };
    for sig in sigs {
        let _ = write!(
            s,
            "| {} | {} | `{}` |",
            sig.source,
            sig.class.row(),
            expected_decl(sig.class, ADDRESS_SIZE)
        );
        for (_, obs) in results {
            for v in [Variant::External, Variant::Local] {
                let cell: Vec<String> = [Position::Param, Position::Return]
                    .iter()
                    .filter_map(|pos| {
                        obs.iter()
                            .find(|o| o.sig_id == sig.id && o.variant == v && o.position == *pos)
                    })
                    .map(|o| {
                        let rules: Vec<&str> = o.findings.iter().map(|(r, _)| r.id()).collect();
                        if rules.is_empty() {
                            format!("`{}`", short(&o.declared))
                        } else {
                            format!("`{}` **{}**", short(&o.declared), rules.join(","))
                        }
                    })
                    .collect();
                let _ = write!(s, " {} |", cell.join(" / "));
            }
        }
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::toolchain::ClangLang;
    use crate::capability::Capability;
    use std::collections::BTreeSet;

    fn decl(text: &str) -> ParamDecl {
        let m = PtxModule::parse(&format!(".address_size 64\n.func f({text});")).unwrap();
        m.functions[0].params[0].clone()
    }

    fn ids(v: &[(Rule, String)]) -> Vec<&'static str> {
        v.iter().map(|(r, _)| r.id()).collect()
    }

    /// Whether `producer`'s source holds `sig`'s function in `variant` (numba-cuda writes only
    /// the external functions of the signatures it can express).
    fn writes(producer: Producer, sig: &Signature, variant: Variant) -> bool {
        inexpressible(producer, sig).is_none()
            && !(variant == Variant::Local
                && producer.language_of(&LANGUAGES) == Some(Language::Numba))
    }

    fn sig(id: &str) -> Signature {
        signatures().into_iter().find(|s| s.id == id).unwrap()
    }

    #[test]
    fn names_map_back_to_signatures() {
        let sigs = signatures();
        for s in &sigs {
            for v in [Variant::External, Variant::Local] {
                let (found, variant) = lookup(&sigs, &function_name(s, v)).unwrap();
                assert_eq!((found.id, variant), (s.id, v));
            }
        }
        // A symbol NVRTC 12.9 gave the `static` local twin of the 3-char struct signature.
        let nvrtc = "_ZN36_INTERNAL_00000000_6_sig_cu_5b66acce15gpucts_s3_localE2S3";
        assert_eq!(
            lookup(&sigs, nvrtc).map(|(s, v)| (s.id, v)),
            Some(("s3", Variant::Local))
        );
        assert!(symbol_is(nvrtc, "gpucts_s3_local"));
        assert!(!symbol_is(nvrtc, "gpucts_s3"));
        assert!(lookup(&sigs, "gpucts_nope").is_none() && lookup(&sigs, "main").is_none());
        // rustc's legacy mangling of a private function: name, then the hash.
        let rustc = "_ZN15gpucts_paramgen15gpucts_s3_local17h0123456789abcdefE";
        assert!(symbol_is(rustc, "gpucts_s3_local") && !symbol_is(rustc, "gpucts_s3"));
        assert_eq!(
            lookup(&sigs, rustc).map(|(s, v)| (s.id, v)),
            Some(("s3", Variant::Local))
        );
    }

    /// The Rust source writes each signature's two functions once, with the C type's twin,
    /// and calls every private twin from the kernel.
    #[test]
    fn the_rust_source_writes_every_signature() {
        let sigs = signatures();
        let src = rust_source(&sigs);
        for sig in &sigs {
            let t = rust_type(sig);
            for v in [Variant::External, Variant::Local] {
                let f = function_name(sig, v);
                let def = format!(" fn {f}(x: {t}) -> {t} {{");
                assert_eq!(src.matches(&def).count(), 1, "{def}");
            }
            let local = format!("= {}(*(buf.add(", function_name(sig, Variant::Local));
            assert_eq!(src.matches(&local).count(), 1, "{local}");
        }
        assert!(src.contains("#[repr(C, align(16))] #[derive(Clone, Copy)] pub struct float4 { x: f32, y: f32, z: f32, w: f32 }"));
        assert!(src.contains(
            "#[repr(C, align(1))] #[derive(Clone, Copy)] pub struct char3 { x: i8, y: i8, z: i8 }"
        ));
        assert_eq!(
            rust_type(&sigs[sigs.iter().position(|s| s.id == "ulong").unwrap()]),
            "u64"
        );
    }

    /// numba's type for each C type has the C type's width and signedness (from the §2.3
    /// class, not from the mapping itself); the source lists each once; aggregates and vectors
    /// are named as what numba's C ABI does not pass.
    #[test]
    fn the_numba_source_writes_every_scalar_signature_and_names_the_rest() {
        let sigs = signatures();
        let src = numba_source(&sigs);
        for sig in &sigs {
            let listed = src.matches(&format!("\"gpucts_{}\"", sig.id)).count();
            match (sig.class, numba_type(sig)) {
                (
                    TypeClass::Integer {
                        bits: 8,
                        signed: false,
                    },
                    Ok(t),
                ) if sig.id == "bool" => {
                    assert_eq!(t, "types.boolean")
                }
                (TypeClass::Integer { bits, signed }, Ok(t)) => {
                    let want = format!("types.{}int{bits}", if signed { "" } else { "u" });
                    assert_eq!(t, want, "{}", sig.id);
                }
                (TypeClass::Float { bits }, Ok(t)) => assert_eq!(t, format!("types.float{bits}")),
                (TypeClass::HalfFloat, Ok(t)) => assert_eq!(t, "types.float16"),
                (TypeClass::Pointer, Ok(t)) => assert_eq!(t, "types.CPointer(types.int32)"),
                (TypeClass::Aggregate { .. }, Err(why)) => {
                    assert!(
                        why.starts_with("numba-cuda's C ABI has no by-value aggregate or union"),
                        "{why}"
                    );
                    assert_eq!(listed, 0, "{}", sig.id);
                    continue;
                }
                (class, t) => panic!("{}: {class:?} -> {t:?}", sig.id),
            }
            assert_eq!(listed, 1, "{}", sig.id);
        }
    }

    /// numba-cuda compiles the source, and each function it lists is found in the PTX with a
    /// declaration for its parameter and its return value.
    #[test]
    fn numba_cuda_declares_every_function_it_is_given() {
        let tc = crate::backend::toolchain::Toolchain::discover_system();
        crate::require!(tc.has(Capability::NumbaCuda), "numba-cuda");
        crate::require!(tc.has(Capability::Libnvvm), "libNVVM");
        let sigs = signatures();
        let ptx = emit(Producer::named("numba-cuda"), &tc, &sigs).unwrap();
        let obs = observe(&PtxModule::parse(&ptx).unwrap(), &sigs);
        for sig in sigs.iter().filter(|s| numba_type(s).is_ok()) {
            for pos in [Position::Param, Position::Return] {
                let o = obs
                    .iter()
                    .find(|o| {
                        o.sig_id == sig.id && o.variant == Variant::External && o.position == pos
                    })
                    .unwrap_or_else(|| panic!("{} {pos:?}\n{ptx}", sig.id));
                assert!(o.declared.is_some(), "{} {pos:?}\n{ptx}", sig.id);
            }
        }
    }

    /// The form the §2.3 table gives each class passes; each way of breaking it is named.
    #[test]
    fn check_decl_follows_the_table() {
        let table = [
            ("char", ".param .s32 x"),
            ("uchar", ".param .u32 x"),
            ("ushort", ".param .b32 x"), // `.b32` is the same 32-bit class
            ("llong", ".param .s64 x"),
            ("ullong", ".param .u64 x"),
            ("ptr", ".param .u64 x"),
            ("float", ".param .f32 x"),
            ("double", ".param .f64 x"),
            ("half", ".param .b32 x"),
            ("half", ".param .align 2 .b8 x[2]"),
            ("s3", ".param .align 1 .b8 x[3]"),
            ("s12a4", ".param .align 4 .b8 x[12]"),
            ("s16a16", ".param .align 16 .b8 x[16]"),
            ("float3", ".param .align 4 .b8 x[12]"),
            ("double2", ".param .align 16 .b8 x[16]"),
        ];
        for (id, text) in table {
            assert_eq!(
                ids(&check_decl(sig(id).class, &decl(text), AddressSize::A64)),
                Vec::<&str>::new(),
                "{id}: {text}"
            );
        }
        let broken = [
            ("char", ".param .u8 x", vec!["narrow-integer"]),
            ("llong", ".param .b32 x", vec!["scalar-class"]),
            ("int", ".param .f32 x", vec!["scalar-class"]),
            ("ptr", ".param .u32 x", vec!["pointer-width"]),
            ("float", ".param .u32 x", vec!["scalar-class"]),
            // Row C writes `.f32`/`.f64`; untyped bits are not a float type.
            ("float", ".param .b32 x", vec!["scalar-class"]),
            ("double", ".param .b64 x", vec!["scalar-class"]),
            // Rows 1-2 choose `.u32` or `.s32` by the source type's signedness.
            ("uint", ".param .s32 x", vec!["scalar-class"]),
            ("ptr", ".param .s64 x", vec!["scalar-class"]),
            ("half", ".param .f16 x", vec!["half-float"]),
            ("half", ".param .b16 x", vec!["narrow-integer"]),
            (
                "s3",
                ".param .align 4 .b8 x[3]",
                vec!["size-multiple", "aggregate-align"],
            ),
            ("s3", ".param .b32 x", vec!["aggregate-form"]),
            (
                "s16a16",
                ".param .align 4 .b8 x[16]",
                vec!["aggregate-align"],
            ),
            (
                "float3",
                ".param .align 16 .b8 x[16]",
                vec!["aggregate-align", "aggregate-size"],
            ),
        ];
        for (id, text, want) in broken {
            assert_eq!(
                ids(&check_decl(sig(id).class, &decl(text), AddressSize::A64)),
                want,
                "{id}: {text}"
            );
        }
        assert!(ids(&check_decl(
            sig("ptr").class,
            &decl(".param .b32 x"),
            AddressSize::A32
        ))
        .is_empty());
    }

    /// NVRTC's own sizeof/alignof of every CUDA type agree with the class each signature
    /// claims (§1.1 sizes, §1.2 aggregate and vector rules).
    #[test]
    fn signature_classes_agree_with_nvrtc_layout() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Nvrtc), "nvrtc");
        let sigs = signatures();
        let mut src = nvrtc_source(&sigs);
        for s in &sigs {
            let (size, align) = match s.class {
                TypeClass::Integer { bits, .. } => (u64::from(bits / 8), bits / 8),
                TypeClass::Float { bits } => (u64::from(bits / 8), bits / 8),
                TypeClass::Pointer => (8, 8),
                TypeClass::HalfFloat => (2, 2),
                TypeClass::Aggregate { size, align } => (size, align),
            };
            let t = s.cuda_type;
            src += &format!(
                "static_assert(sizeof({t}) == {size} && alignof({t}) == {align}, \"{}\");\n",
                s.id
            );
        }
        tc.nvrtc(&src, "layout.cu", NVRTC_OPTIONS).unwrap();
    }

    /// Debug builds add `.file`, `.loc`, `.section .debug_*` blocks and `@@DWARF` lines; the
    /// reader must find the same prototypes in them as in the plain build.
    #[test]
    fn reader_reads_debug_builds() {
        let tc = Toolchain::discover_system();
        crate::require!(
            tc.has(Capability::Nvrtc) && tc.has(Capability::Clang),
            "nvrtc and clang"
        );
        let sigs = signatures();
        let protos = |ptx: &str| -> Vec<String> {
            let m = PtxModule::parse(ptx).unwrap_or_else(|e| panic!("{e}"));
            m.functions
                .iter()
                .filter(|f| f.is_definition)
                .map(|f| {
                    let r: Vec<String> = f
                        .returns
                        .iter()
                        .chain(&f.params)
                        .map(ParamDecl::render)
                        .collect();
                    format!("{} {}", f.name, r.join(", "))
                })
                .collect()
        };
        {
            let src = nvrtc_source(&sigs);
            let plain = tc.nvrtc(&src, "p.cu", NVRTC_OPTIONS).unwrap();
            let mut opts = NVRTC_OPTIONS.to_vec();
            opts.push("-G");
            let debug = tc.nvrtc(&src, "p.cu", &opts).unwrap();
            assert!(
                debug.contains(".section\t.debug_info") || debug.contains(".section .debug_info")
            );
            assert_eq!(protos(&debug).len(), protos(&plain).len());
        }
        {
            let src = clang_source(&sigs);
            let plain = tc.clang_ptx(&src, ClangLang::C, CLANG_ARGS).unwrap();
            let debug = tc.clang_ptx(&src, ClangLang::C, &["-O2", "-g"]).unwrap();
            assert!(debug.contains(".loc"));
            assert_eq!(protos(&debug), protos(&plain));
        }
    }

    /// Every producer available emits every generated function; every parameter and return
    /// value of the external functions follows the table except those the waiver file lists.
    #[test]
    fn producers_follow_the_table() {
        let tc = Toolchain::discover_system();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let waivers =
            crate::waivers::Waivers::load(&root.join(crate::waivers::DEFAULT_FILE)).unwrap();
        let fingerprint = crate::probe::probe(&tc).0.fingerprint();
        let sigs = signatures();
        let mut results = Vec::new();
        for p in producers() {
            if let Some(missing) = p.requires().into_iter().find(|c| !tc.has(*c)) {
                crate::testkit::tool_missing(crate::testkit::Need::Tool, missing.name());
                continue;
            }
            let ptx = emit(p, &tc, &sigs).unwrap_or_else(|e| panic!("{}: {e}", p.name()));
            let m = PtxModule::parse(&ptx).unwrap_or_else(|e| panic!("{}: {e}", p.name()));
            let obs = observe(&m, &sigs);
            assert_eq!(obs.len(), sigs.len() * 4);
            let obs: Vec<Observation> = obs
                .into_iter()
                .filter(|o| {
                    let sig = sigs.iter().find(|s| s.id == o.sig_id).unwrap();
                    writes(p, sig, o.variant)
                })
                .collect();
            for o in &obs {
                assert!(
                    !o.findings.iter().any(|(r, _)| *r == Rule::Missing),
                    "{}: {o:?}",
                    p.name()
                );
            }
            let got: BTreeSet<String> = obs
                .iter()
                .filter(|o| o.variant == Variant::External && !o.conforms())
                .map(|o| format!("abi.params.{}.{}.{}", p.name(), o.sig_id, o.position.name()))
                .collect();
            // Which external declarations diverge is recorded once, in the waiver file (whose
            // entries name the case ids `abi.params.<producer>.<signature>.<position>` and
            // the producer versions seen): every divergence must be waived there on this
            // platform, and every waived one must still diverge.
            let want: BTreeSet<String> = sigs
                .iter()
                .filter(|s| writes(p, s, Variant::External))
                .flat_map(|s| [Position::Param, Position::Return].map(|pos| (s.id, pos)))
                .map(|(sig, pos)| format!("abi.params.{}.{sig}.{}", p.name(), pos.name()))
                .filter(|id| {
                    let needs = p.capability().into_iter().collect::<Vec<_>>();
                    waivers.find(id, &needs, &fingerprint).is_some()
                })
                .collect();
            assert_eq!(got, want, "{}", p.name());
            results.push((p, obs));
        }
        let table = summary_table(&sigs, &results);
        assert_eq!(table.lines().count(), sigs.len() + 2);
        if let Some(path) = &crate::config::RunConfig::environment().paramgen_table {
            std::fs::write(path, &table).unwrap();
        }
    }
}
