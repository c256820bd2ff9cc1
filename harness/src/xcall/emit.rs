//! Source for each producer: per signature a callee `xcall_f<seed>` (records every byte it
//! received in `gpucts_xcall_rec`, returns a value built from them) and a caller kernel
//! `xcall_k<seed>(unsigned char *out)` (passes graffiti values, writes what came back to
//! `out`). Three generators: CUDA C++ (NVRTC and clang-19), LLVM IR (llc-19, and libNVVM's
//! typed-pointer dialect), and PTX written from the ptx-interop 13.2 §2.3 table (gpucts's
//! reference producer).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::sig::Role;
use super::sig::{graffiti, ret_const, ret_key, Signature, Val, REC, REC_BYTES};
use crate::abi::layout::{vector_align, vector_exists, AddressSize};
use crate::abi::render::render_c;
use crate::abi::types::{all_records, vector_type_name, Dialect, Scalar, Ty, TypeDef};
use crate::backend::producer::{Language, Producer};

/// Why a producer cannot express a signature (the case skips with capability
/// `producer-feature`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Inexpressible {
    /// LLVM IR types carry no alignment above 16, and a returned value's `.param` alignment
    /// comes from its type (ptx-interop 13.2 §2.3).
    #[error("{producer} cannot return an aggregate aligned to {align}: LLVM IR types carry no alignment above 16 and a returned value's `.param` alignment comes from its type")]
    ReturnAlignment { producer: &'static str, align: u64 },
    /// A type the producer's language cannot write (Rust has no bit fields).
    #[error("{producer} cannot express the signature: {why}")]
    Language { producer: &'static str, why: String },
    /// The hand-written corpus holds seeds `first..end` only.
    #[error("the hand-written corpus (ptx-corpus/xcall/) holds signatures {first}..{end} only")]
    NotInCorpus { first: u64, end: u64 },
}

/// Whether `p` can express `sig`; the reason when it cannot (the case skips with capability
/// `producer-feature`).
pub fn expresses(p: Producer, sig: &Signature) -> Result<(), Inexpressible> {
    if p.is_hand_written() {
        return if super::corpus::is_corpus(sig.seed) {
            Ok(())
        } else {
            Err(Inexpressible::NotInCorpus {
                first: super::corpus::FIRST_SEED,
                end: super::corpus::FIRST_SEED + super::corpus::COUNT,
            })
        };
    }
    match p.language_of(&LANGUAGES) {
        Some(Language::LlvmIr | Language::NvvmIr) => {
            if let Some(r) = &sig.ret {
                let (_, a) = r.size_align();
                if a > 16 && is_aggregate(r) {
                    return Err(Inexpressible::ReturnAlignment {
                        producer: p.describe(),
                        align: a,
                    });
                }
            }
            Ok(())
        }
        Some(Language::Rust) => {
            super::emit_rust::expresses(sig).map_err(|why| Inexpressible::Language {
                producer: p.describe(),
                why,
            })
        }
        Some(
            Language::CudaCpp
            | Language::ClangCuda
            | Language::Ptx
            | Language::C
            | Language::Triton
            | Language::Numba,
        )
        | None => Ok(()),
    }
}

fn is_aggregate(v: &Val) -> bool {
    !matches!(v, Val::Scalar(s) if *s != Scalar::Half)
}

// ---------------------------------------------------------------------------------------------
// CUDA C++

/// The C++ spelling of a value's type.
pub(crate) fn cpp_type(v: &Val) -> String {
    match v {
        Val::Scalar(Scalar::Half) => "__half".into(),
        Val::Scalar(Scalar::Pointer) => "void *".into(),
        Val::Scalar(s) => s.c_name(Dialect::Cuda).into(),
        Val::Bf16 => "__nv_bfloat16".into(),
        Val::Vector(s, n) => vector_type_name(*s, *n, Dialect::Cuda),
        Val::Agg(g) => g.c_name(),
    }
}

/// Definitions every C++ source needs: CUDA's 16-bit float types, which NVRTC has only with
/// cuda_fp16.h (not part of the toolchain): the same 2-byte, 2-aligned structs.
const CPP_COMMON: &str = "struct __align__(2) __half { unsigned short __x; };\nstruct __align__(2) __nv_bfloat16 { unsigned short __x; };\n";

/// What clang-19 with `-nocudainc` lacks that NVRTC has built in: the CUDA keywords, the
/// object-handle typedefs and CUDA's vector types (as CUDA defines them: structs named
/// `float4` etc. with the §1.2 alignment, so they mangle and pass alike).
fn clang_prelude() -> String {
    let mut s = String::from(
        "#define __device__ __attribute__((device))\n#define __global__ __attribute__((global))\n\
         #define __noinline__ __attribute__((noinline))\n#define __align__(n) __attribute__((aligned(n)))\n\
         typedef unsigned long long cudaTextureObject_t;\ntypedef unsigned long long cudaSurfaceObject_t;\n",
    );
    for (sc, elem) in [
        (Scalar::Char, "signed char"),
        (Scalar::UChar, "unsigned char"),
        (Scalar::Short, "short"),
        (Scalar::UShort, "unsigned short"),
        (Scalar::Int, "int"),
        (Scalar::UInt, "unsigned int"),
        (Scalar::Long, "long"),
        (Scalar::ULong, "unsigned long"),
        (Scalar::LongLong, "long long"),
        (Scalar::ULongLong, "unsigned long long"),
        (Scalar::Float, "float"),
        (Scalar::Double, "double"),
    ] {
        for n in 1..=4 {
            if !vector_exists(sc, n, AddressSize::A64) {
                continue;
            }
            let name = vector_type_name(sc, n, Dialect::Cuda);
            let members = ["x", "y", "z", "w"][..n as usize].join(", ");
            let _ = writeln!(
                s,
                "struct __align__({}) {name} {{ {elem} {members}; }};",
                vector_align(sc, n, AddressSize::A64)
            );
        }
    }
    s
}

/// Record definitions (nested ones hoisted) and alignment wrappers for every aggregate.
fn cpp_records(sigs: &[&Signature]) -> String {
    let mut defs: Vec<TypeDef> = Vec::new();
    let mut wrappers = String::new();
    let mut seen = BTreeSet::new();
    for s in sigs {
        for a in s.aggs() {
            if seen.insert(a.c_name()) {
                if !defs.iter().any(|d| d.name == a.def.name) {
                    defs.push(a.def.clone());
                }
                if let Some(al) = a.align_attr {
                    let _ = writeln!(
                        wrappers,
                        "struct __align__({al}) {} {{ {} v; }};",
                        a.c_name(),
                        a.def.name
                    );
                }
            }
        }
    }
    let mut out = render_c(&defs, Dialect::Cuda);
    out += &wrappers;
    out
}

fn cpp_prelude(p: Producer, sigs: &[&Signature]) -> String {
    let mut s = format!("// Generated by gpucts xcall for {}.\n", p.describe());
    if p.language_of(&LANGUAGES) == Some(Language::ClangCuda) {
        s += &clang_prelude();
    }
    s += CPP_COMMON;
    s += &cpp_records(sigs);
    s
}

fn cpp_proto(sig: &Signature, names: bool) -> String {
    let ps: Vec<String> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if names {
                format!("{} p{i}", cpp_type(p))
            } else {
                cpp_type(p)
            }
        })
        .collect();
    ps.join(", ")
}

fn cpp_ret(sig: &Signature) -> String {
    sig.ret.as_ref().map_or("void".into(), cpp_type)
}

/// The C++ callee batch.
pub(crate) fn cpp_callee(p: Producer, sigs: &[&Signature]) -> String {
    let mut s = cpp_prelude(p, sigs);
    let _ = writeln!(
        s,
        "extern \"C\" {{ __device__ unsigned char {REC}[{REC_BYTES}]; }}"
    );
    for sig in sigs {
        let _ = writeln!(
            s,
            "extern \"C\" __device__ __noinline__ {} {}({}) {{\n  unsigned char *rec = {REC};",
            cpp_ret(sig),
            sig.callee(),
            cpp_proto(sig, true)
        );
        for (i, (v, off)) in sig.params.iter().zip(sig.rec_offsets()).enumerate() {
            let _ = writeln!(s, "  {{ const unsigned char *b = (const unsigned char *)&p{i}; for (int j = 0; j < {}; ++j) rec[{off} + j] = b[j]; }}", v.size());
        }
        if let Some(r) = &sig.ret {
            let _ = writeln!(
                s,
                "  {} r;\n  unsigned char *o = (unsigned char *)&r;",
                cpp_type(r)
            );
            let src = sig.ret_sources();
            for j in 0..r.size() {
                match src.get(j as usize) {
                    Some(i) => {
                        let _ = writeln!(s, "  o[{j}] = rec[{i}] ^ {};", ret_key(j));
                    }
                    None => {
                        let _ = writeln!(s, "  o[{j}] = {};", ret_const(j));
                    }
                }
            }
            s += "  return r;\n";
        }
        s += "}\n";
    }
    s
}

/// The C++ caller batch.
pub(crate) fn cpp_caller(p: Producer, sigs: &[&Signature]) -> String {
    let mut s = cpp_prelude(p, sigs);
    for sig in sigs {
        let _ = writeln!(
            s,
            "extern \"C\" __device__ {} {}({});",
            cpp_ret(sig),
            sig.callee(),
            cpp_proto(sig, false)
        );
        let _ = writeln!(
            s,
            "extern \"C\" __global__ void {}(unsigned char *out) {{",
            sig.kernel()
        );
        let mut args = Vec::new();
        for (i, v) in sig.params.iter().enumerate() {
            let k = graffiti(sig.seed, i, 0);
            let _ = writeln!(s, "  {} a{i}; {{ unsigned char *b = (unsigned char *)&a{i}; for (int j = 0; j < {}; ++j) b[j] = (unsigned char)(j * 31 + {k}); }}", cpp_type(v), v.size());
            args.push(format!("a{i}"));
        }
        let target = if sig.indirect {
            let _ = writeln!(
                s,
                "  {} (*volatile fp)({}) = {};",
                cpp_ret(sig),
                cpp_proto(sig, false),
                sig.callee()
            );
            "fp".to_string()
        } else {
            sig.callee()
        };
        match &sig.ret {
            Some(r) => {
                let _ = writeln!(s, "  {} r = {target}({});\n  {{ const unsigned char *o = (const unsigned char *)&r; for (int j = 0; j < {}; ++j) out[j] = o[j]; }}", cpp_type(r), args.join(", "), r.size());
            }
            None => {
                let _ = writeln!(s, "  {target}({});", args.join(", "));
            }
        }
        s += "}\n";
    }
    s
}

/// C++ declarations whose mangled names NVRTC and clang-19 must agree on (Itanium ABI,
/// ptx-interop 13.2 ch. 7): a function template in nested namespaces, aggregates by
/// `const &`, scalars, `__half` and vectors by value; the return type is part of a template's
/// mangled name. Explicitly instantiated with the seed.
pub(crate) fn cpp_mangle(p: Producer, sigs: &[&Signature]) -> String {
    let mut s = cpp_prelude(p, sigs);
    for sig in sigs {
        let ps: Vec<String> = sig
            .params
            .iter()
            .map(|v| match v {
                Val::Agg(_) => format!("const {} &", cpp_type(v)),
                _ => cpp_type(v),
            })
            .collect();
        let body = match &sig.ret {
            Some(r) => format!("{{ {} r{{}}; return r; }}", cpp_type(r)),
            None => "{}".into(),
        };
        let _ = writeln!(
            s,
            "namespace gpucts_mangle {{ namespace xm{0} {{\ntemplate <int N> __device__ __noinline__ {1} f({2}) {body}\ntemplate __device__ {1} f<{0}>({2});\n}} }}",
            sig.seed,
            cpp_ret(sig),
            ps.join(", ")
        );
    }
    s
}

// ---------------------------------------------------------------------------------------------
// LLVM IR

/// The two IR dialects: LLVM 19 (opaque pointers, `byval(T)`, `ptx_kernel`) and the NVVM IR
/// libNVVM 12.x reads (LLVM 7: typed pointers, `!nvvm.annotations` kernels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IrDialect {
    Llvm19,
    Nvvm,
}

/// The data layout libNVVM documents for 64-bit NVVM IR.
const NVVM_DATALAYOUT: &str = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64";

struct Ir {
    d: IrDialect,
    n: usize,
}

impl Ir {
    fn ptr(&self, t: &str) -> String {
        match self.d {
            IrDialect::Llvm19 => "ptr".into(),
            IrDialect::Nvvm => format!("{t}*"),
        }
    }

    fn gptr(&self, t: &str) -> String {
        match self.d {
            IrDialect::Llvm19 => "ptr addrspace(1)".into(),
            IrDialect::Nvvm => format!("{t} addrspace(1)*"),
        }
    }

    fn tmp(&mut self) -> String {
        self.n += 1;
        format!("%t{}", self.n)
    }

    /// IR type and the parameter attributes of a value: (type, attrs, byval align).
    fn ty(&self, sig: &Signature, idx: usize, v: &Val) -> (String, &'static str, Option<u64>) {
        match v {
            Val::Scalar(s) => match s {
                Scalar::Char | Scalar::SChar => ("i8".into(), "signext ", None),
                Scalar::UChar => ("i8".into(), "zeroext ", None),
                Scalar::Short => ("i16".into(), "signext ", None),
                Scalar::UShort => ("i16".into(), "zeroext ", None),
                Scalar::Int | Scalar::UInt => ("i32".into(), "", None),
                Scalar::Float => ("float".into(), "", None),
                Scalar::Double => ("double".into(), "", None),
                Scalar::Pointer => (self.ptr("i8"), "", None),
                Scalar::Half => (agg_name(sig, idx), "", Some(2)),
                _ => ("i64".into(), "", None),
            },
            _ => (agg_name(sig, idx), "", Some(v.size_align().1)),
        }
    }
}

/// `%xt<seed>_<idx>`: idx 0 is the return value, 1.. the parameters.
fn agg_name(sig: &Signature, idx: usize) -> String {
    format!("%xt{}_{idx}", sig.seed)
}

/// The IR struct standing for an aggregate: `{ [size/A x iA*8] }` has exactly the C size and
/// (up to 8) alignment; 16 and above use `<4 x i32>` elements (16-aligned in both data
/// layouts; `i128` elements crash llc-19, see docs/STATUS.md) and the byval `align` carries
/// more.
fn agg_body(v: &Val) -> String {
    let (size, align) = v.size_align();
    if align >= 16 {
        return format!("{{ [{} x <4 x i32>] }}", size / 16);
    }
    format!("{{ [{} x i{}] }}", size / align, align * 8)
}

fn ir_types(ir: &Ir, sig: &Signature, out: &mut String) {
    let vals = std::iter::once(sig.ret.as_ref()).chain(sig.params.iter().map(Some));
    for (idx, v) in vals.enumerate() {
        if let Some(v) = v {
            if ir.ty(sig, idx, v).2.is_some() {
                let _ = writeln!(out, "{} = type {}", agg_name(sig, idx), agg_body(v));
            }
        }
    }
}

fn ir_param_list(ir: &Ir, sig: &Signature, names: bool) -> String {
    let ps: Vec<String> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let (t, attr, byval) = ir.ty(sig, i + 1, v);
            let name = if names {
                format!(" %p{i}")
            } else {
                String::new()
            };
            match (byval, ir.d) {
                (Some(a), IrDialect::Llvm19) => format!("ptr byval({t}) align {a}{name}"),
                (Some(a), IrDialect::Nvvm) => format!("{t}* byval align {a}{name}"),
                (None, _) => format!("{t} {attr}{name}")
                    .replace("  ", " ")
                    .trim_end()
                    .to_string(),
            }
        })
        .collect();
    ps.join(", ")
}

fn ir_ret(ir: &Ir, sig: &Signature) -> String {
    match &sig.ret {
        None => "void".into(),
        Some(r) => {
            let (t, attr, _) = ir.ty(sig, 0, r);
            format!("{attr}{t}")
        }
    }
}

fn ir_header(d: IrDialect) -> String {
    let mut s = String::from("; Generated by gpucts xcall.\n");
    match d {
        IrDialect::Llvm19 => s += "target triple = \"nvptx64-nvidia-cuda\"\n\n",
        IrDialect::Nvvm => {
            let _ = writeln!(
                s,
                "target datalayout = \"{NVVM_DATALAYOUT}\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n"
            );
        }
    }
    s
}

/// Store `n` bytes from `src` (a generic `i8` pointer) into the record buffer at `off`.
fn ir_copy_to_rec(ir: &mut Ir, out: &mut String, src: &str, n: u64, off: u64) {
    let (p8, g8) = (ir.ptr("i8"), ir.gptr("i8"));
    let rec_ty = format!("[{REC_BYTES} x i8]");
    let rec_ptr = ir.gptr(&rec_ty);
    for j in 0..n {
        let (a, v, b) = (ir.tmp(), ir.tmp(), ir.tmp());
        let _ = writeln!(out, "  {a} = getelementptr i8, {p8} {src}, i64 {j}\n  {v} = load i8, {p8} {a}\n  {b} = getelementptr inbounds {rec_ty}, {rec_ptr} @{REC}, i64 0, i64 {}\n  store i8 {v}, {g8} {b}", off + j);
    }
}

/// The IR callee batch.
pub(crate) fn ir_callee(d: IrDialect, sigs: &[&Signature]) -> String {
    let mut ir = Ir { d, n: 0 };
    let mut s = ir_header(d);
    for sig in sigs {
        ir_types(&ir, sig, &mut s);
    }
    let _ = writeln!(
        s,
        "@{REC} = addrspace(1) global [{REC_BYTES} x i8] zeroinitializer, align 8\n"
    );
    let p8 = ir.ptr("i8");
    let rec_ty = format!("[{REC_BYTES} x i8]");
    let rec_ptr = ir.gptr(&rec_ty);
    let g8 = ir.gptr("i8");
    for sig in sigs {
        let _ = writeln!(
            s,
            "define {} @{}({}) noinline {{",
            ir_ret(&ir, sig),
            sig.callee(),
            ir_param_list(&ir, sig, true)
        );
        for (i, (v, off)) in sig.params.iter().zip(sig.rec_offsets()).enumerate() {
            let (t, _, byval) = ir.ty(sig, i + 1, v);
            let src = ir.tmp();
            match byval {
                Some(_) => {
                    let _ = writeln!(s, "  {src} = bitcast {} %p{i} to {p8}", ir.ptr(&t));
                }
                None => {
                    let slot = ir.tmp();
                    let _ = writeln!(s, "  {slot} = alloca {t}, align 8\n  store {t} %p{i}, {} {slot}\n  {src} = bitcast {} {slot} to {p8}", ir.ptr(&t), ir.ptr(&t));
                }
            }
            ir_copy_to_rec(&mut ir, &mut s, &src, v.size(), off);
        }
        match &sig.ret {
            None => s += "  ret void\n",
            Some(r) => {
                let (t, _, _) = ir.ty(sig, 0, r);
                let (slot, o) = (ir.tmp(), ir.tmp());
                let _ = writeln!(
                    s,
                    "  {slot} = alloca {t}, align 16\n  {o} = bitcast {} {slot} to {p8}",
                    ir.ptr(&t)
                );
                let src = sig.ret_sources();
                for j in 0..r.size() {
                    let dst = ir.tmp();
                    let _ = writeln!(s, "  {dst} = getelementptr i8, {p8} {o}, i64 {j}");
                    match src.get(j as usize) {
                        Some(i) => {
                            let (a, v, x) = (ir.tmp(), ir.tmp(), ir.tmp());
                            let _ = writeln!(s, "  {a} = getelementptr inbounds {rec_ty}, {rec_ptr} @{REC}, i64 0, i64 {i}\n  {v} = load i8, {g8} {a}\n  {x} = xor i8 {v}, {}\n  store i8 {x}, {p8} {dst}", ret_key(j) as i8);
                        }
                        None => {
                            let _ = writeln!(s, "  store i8 {}, {p8} {dst}", ret_const(j) as i8);
                        }
                    }
                }
                let v = ir.tmp();
                let _ = writeln!(s, "  {v} = load {t}, {} {slot}\n  ret {t} {v}", ir.ptr(&t));
            }
        }
        s += "}\n\n";
    }
    if d == IrDialect::Nvvm {
        s += "!nvvmir.version = !{!0}\n!0 = !{i32 2, i32 0}\n";
    }
    s
}

/// The IR caller batch.
pub(crate) fn ir_caller(d: IrDialect, sigs: &[&Signature]) -> String {
    let mut ir = Ir { d, n: 0 };
    let mut s = ir_header(d);
    for sig in sigs {
        ir_types(&ir, sig, &mut s);
    }
    let p8 = ir.ptr("i8");
    let mut kernels = Vec::new();
    for sig in sigs {
        let ret = ir_ret(&ir, sig);
        let _ = writeln!(
            s,
            "declare {ret} @{}({})",
            sig.callee(),
            ir_param_list(&ir, sig, false)
        );
        let cc = if d == IrDialect::Llvm19 {
            "ptx_kernel "
        } else {
            ""
        };
        let _ = writeln!(s, "define {cc}void @{}({p8} %out) {{", sig.kernel());
        kernels.push(sig.kernel());
        let mut args = Vec::new();
        for (i, v) in sig.params.iter().enumerate() {
            let (t, attr, byval) = ir.ty(sig, i + 1, v);
            let (slot, b) = (ir.tmp(), ir.tmp());
            let _ = writeln!(
                s,
                "  {slot} = alloca {t}, align {}\n  {b} = bitcast {} {slot} to {p8}",
                v.size_align().1.max(1),
                ir.ptr(&t)
            );
            for j in 0..v.size() {
                let a = ir.tmp();
                let _ = writeln!(
                    s,
                    "  {a} = getelementptr i8, {p8} {b}, i64 {j}\n  store i8 {}, {p8} {a}",
                    graffiti(sig.seed, i, j) as i8
                );
            }
            match byval {
                Some(al) => args.push(match d {
                    IrDialect::Llvm19 => format!("ptr byval({t}) align {al} {slot}"),
                    IrDialect::Nvvm => format!("{t}* byval align {al} {slot}"),
                }),
                None => {
                    let v = ir.tmp();
                    let _ = writeln!(s, "  {v} = load {t}, {} {slot}", ir.ptr(&t));
                    args.push(format!("{t} {attr}{v}"));
                }
            }
        }
        let callee = if sig.indirect {
            // A function pointer read back through a volatile slot: the call cannot be
            // turned into a direct one, so it goes through `.callprototype`.
            // LLVM 7 function types carry no parameter attributes: bare types.
            let bare: Vec<String> = sig
                .params
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let (t, _, byval) = ir.ty(sig, i + 1, v);
                    if byval.is_some() {
                        format!("{t}*")
                    } else {
                        t
                    }
                })
                .collect();
            let bare_ret = sig
                .ret
                .as_ref()
                .map_or("void".to_string(), |r| ir.ty(sig, 0, r).0);
            let fty = format!("{bare_ret} ({})*", bare.join(", "));
            let fty = match d {
                IrDialect::Llvm19 => "ptr".to_string(),
                IrDialect::Nvvm => fty,
            };
            let (slot, fp) = (ir.tmp(), ir.tmp());
            let _ = writeln!(s, "  {slot} = alloca {fty}, align 8\n  store volatile {fty} @{}, {} {slot}\n  {fp} = load volatile {fty}, {} {slot}", sig.callee(), ir.ptr(&fty), ir.ptr(&fty));
            fp
        } else {
            format!("@{}", sig.callee())
        };
        match &sig.ret {
            None => {
                let _ = writeln!(s, "  call void {callee}({})", args.join(", "));
            }
            Some(r) => {
                let (t, _, _) = ir.ty(sig, 0, r);
                let (v, slot, b) = (ir.tmp(), ir.tmp(), ir.tmp());
                let _ = writeln!(s, "  {v} = call {ret} {callee}({})\n  {slot} = alloca {t}, align 16\n  store {t} {v}, {} {slot}\n  {b} = bitcast {} {slot} to {p8}", args.join(", "), ir.ptr(&t), ir.ptr(&t));
                for j in 0..r.size() {
                    let (a, x, o) = (ir.tmp(), ir.tmp(), ir.tmp());
                    let _ = writeln!(s, "  {a} = getelementptr i8, {p8} {b}, i64 {j}\n  {x} = load i8, {p8} {a}\n  {o} = getelementptr i8, {p8} %out, i64 {j}\n  store i8 {x}, {p8} {o}");
                }
            }
        }
        s += "  ret void\n}\n\n";
    }
    if d == IrDialect::Nvvm {
        let refs: Vec<String> = (0..kernels.len()).map(|i| format!("!{i}")).collect();
        let _ = writeln!(s, "!nvvm.annotations = !{{{}}}", refs.join(", "));
        for (i, k) in kernels.iter().enumerate() {
            let _ = writeln!(s, "!{i} = !{{void (i8*)* @{k}, !\"kernel\", i32 1}}");
        }
        let _ = writeln!(
            s,
            "!nvvmir.version = !{{!{0}}}\n!{0} = !{{i32 2, i32 0}}",
            kernels.len()
        );
    }
    s
}

// ---------------------------------------------------------------------------------------------
// PTX: the reference producer

const PTX_HEADER: &str = ".version 8.5\n.target sm_90\n.address_size 64\n\n";

/// A parameter declaration in the §2.3 table's form, named `name`.
fn ptx_decl(v: &Val, name: &str) -> String {
    let d = v.table_decl();
    match d.split_once(" .b8 [") {
        Some((head, tail)) => format!(".param {head} .b8 {name}[{tail}"),
        None => format!(".param {d} {name}"),
    }
}

fn ptx_proto(sig: &Signature) -> (String, String) {
    let ret = sig
        .ret
        .as_ref()
        .map(|r| format!("({}) ", ptx_decl(r, "func_retval0")))
        .unwrap_or_default();
    let ps: Vec<String> = sig
        .params
        .iter()
        .enumerate()
        .map(|(i, v)| ptx_decl(v, &format!("{}_param_{i}", sig.callee())))
        .collect();
    (ret, ps.join(",\n\t"))
}

/// Sign- or zero-extension of a small integer per §2.3 note A.
fn extend(v: &Val, reg: &str) -> Option<String> {
    match (v.class(), v.size()) {
        (super::sig::Class::Int { signed: true, .. }, 1) => {
            Some(format!("cvt.s32.s8 {reg}, {reg};"))
        }
        (super::sig::Class::Int { signed: true, .. }, 2) => {
            Some(format!("cvt.s32.s16 {reg}, {reg};"))
        }
        _ => None,
    }
}

/// Whether a value passes as a scalar `.param` (not `.b8` array).
fn ptx_scalar(v: &Val) -> bool {
    !matches!(v.class(), super::sig::Class::Aggregate { .. })
}

/// The reference callee batch.
pub(crate) fn ptx_callee(sigs: &[&Signature]) -> String {
    let mut s = String::from("// Generated by gpucts xcall: the reference producer (ptx-interop 13.2 section 2.3 table).\n");
    s += PTX_HEADER;
    let _ = writeln!(s, ".visible .global .align 8 .b8 {REC}[{REC_BYTES}];\n");
    for sig in sigs {
        let (ret, params) = ptx_proto(sig);
        let _ = writeln!(
            s,
            ".visible .func {ret}{}(\n\t{params}\n)\n{{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;",
            sig.callee()
        );
        for (i, (v, off)) in sig.params.iter().zip(sig.rec_offsets()).enumerate() {
            let pname = format!("{}_param_{i}", sig.callee());
            if ptx_scalar(v) {
                let (reg, w) = if v.size() == 8 {
                    ("%rd1", 64)
                } else {
                    ("%r1", 32)
                };
                let _ = writeln!(s, "\tld.param.b{w} {reg}, [{pname}];");
                for j in 0..v.size() {
                    let _ = writeln!(
                        s,
                        "\tst.global.u8 [{REC}+{}], {reg};\n\tshr.b{w} {reg}, {reg}, 8;",
                        off + j
                    );
                }
            } else {
                for j in 0..v.size() {
                    let _ = writeln!(
                        s,
                        "\tld.param.u8 %r1, [{pname}+{j}];\n\tst.global.u8 [{REC}+{}], %r1;",
                        off + j
                    );
                }
            }
        }
        if let Some(r) = &sig.ret {
            let src = sig.ret_sources();
            let byte = |s: &mut String, j: u64| match src.get(j as usize) {
                Some(i) => {
                    let _ = writeln!(
                        s,
                        "\tld.global.u8 %r1, [{REC}+{i}];\n\txor.b32 %r1, %r1, {};",
                        ret_key(j)
                    );
                }
                None => {
                    let _ = writeln!(s, "\tmov.b32 %r1, {};", ret_const(j));
                }
            };
            if ptx_scalar(r) {
                let wide = r.size() == 8;
                let acc = if wide { "%rd2" } else { "%r2" };
                let w = if wide { 64 } else { 32 };
                let _ = writeln!(s, "\tmov.b{w} {acc}, 0;");
                for j in (0..r.size()).rev() {
                    byte(&mut s, j);
                    if wide {
                        let _ = writeln!(s, "\tshl.b64 %rd2, %rd2, 8;\n\tcvt.u64.u32 %rd1, %r1;\n\tor.b64 %rd2, %rd2, %rd1;");
                    } else {
                        let _ = writeln!(s, "\tshl.b32 %r2, %r2, 8;\n\tor.b32 %r2, %r2, %r1;");
                    }
                }
                if let Some(x) = extend(r, "%r2") {
                    let _ = writeln!(s, "\t{x}");
                }
                let _ = writeln!(s, "\tst.param.b{w} [func_retval0], {acc};");
            } else {
                for j in 0..r.size() {
                    byte(&mut s, j);
                    let _ = writeln!(s, "\tst.param.b8 [func_retval0+{j}], %r1;");
                }
            }
        }
        s += "\tret;\n}\n\n";
    }
    s
}

/// The scalar a caller passes: the graffiti bytes as a little-endian integer, extended per
/// note A.
fn scalar_value(sig: &Signature, i: usize, v: &Val) -> u64 {
    let n = v.size();
    let mut x: u64 = 0;
    for j in (0..n).rev() {
        x = (x << 8) | u64::from(graffiti(sig.seed, i, j));
    }
    match (v.class(), n) {
        (super::sig::Class::Int { signed: true, .. }, 1) => (x as u8 as i8 as i32 as u32).into(),
        (super::sig::Class::Int { signed: true, .. }, 2) => (x as u16 as i16 as i32 as u32).into(),
        _ => x,
    }
}

fn ptx_extern(sig: &Signature) -> String {
    let (ret, params) = ptx_proto(sig);
    format!(".extern .func {ret}{}(\n\t{params}\n);\n", sig.callee())
}

/// The reference caller batch.
pub(crate) fn ptx_caller(sigs: &[&Signature]) -> String {
    let mut s = String::from("// Generated by gpucts xcall: the reference producer (ptx-interop 13.2 section 2.3 table).\n");
    s += PTX_HEADER;
    for sig in sigs {
        s += &ptx_extern(sig);
        let k = sig.kernel();
        let _ = writeln!(s, ".visible .entry {k}(\n\t.param .u64 {k}_param_0\n)\n{{\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n\tld.param.u64 %rd1, [{k}_param_0];\n\tcvta.to.global.u64 %rd1, %rd1;\n\t{{");
        let mut args = Vec::new();
        for (i, v) in sig.params.iter().enumerate() {
            let name = format!("param{i}");
            let _ = writeln!(s, "\t{};", ptx_decl(v, &name));
            if ptx_scalar(v) {
                let x = scalar_value(sig, i, v);
                if v.size() == 8 {
                    let _ = writeln!(s, "\tmov.b64 %rd2, {x};\n\tst.param.b64 [{name}], %rd2;");
                } else {
                    let _ = writeln!(s, "\tmov.b32 %r1, {x};\n\tst.param.b32 [{name}], %r1;");
                }
            } else {
                for j in 0..v.size() {
                    let _ = writeln!(
                        s,
                        "\tmov.b32 %r1, {};\n\tst.param.b8 [{name}+{j}], %r1;",
                        graffiti(sig.seed, i, j)
                    );
                }
            }
            args.push(name);
        }
        if let Some(r) = &sig.ret {
            let _ = writeln!(s, "\t{};", ptx_decl(r, "retval0"));
        }
        let rets = if sig.ret.is_some() { "(retval0), " } else { "" };
        if sig.indirect {
            let pr: Vec<String> = sig.params.iter().map(|v| ptx_decl(v, "_")).collect();
            let rr = sig
                .ret
                .as_ref()
                .map(|r| format!("({}) ", ptx_decl(r, "_")))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "\txcall_p{}: .callprototype {rr}_ ({});\n\tmov.u64 %rd2, {};\n\tcall {rets}%rd2, ({}), xcall_p{};",
                sig.seed,
                pr.join(", "),
                sig.callee(),
                args.join(", "),
                sig.seed
            );
        } else {
            let _ = writeln!(
                s,
                "\tcall.uni {rets}{}, ({});",
                sig.callee(),
                args.join(", ")
            );
        }
        if let Some(r) = &sig.ret {
            if ptx_scalar(r) {
                let (reg, w) = if r.size() == 8 {
                    ("%rd3", 64)
                } else {
                    ("%r2", 32)
                };
                let _ = writeln!(s, "\tld.param.b{w} {reg}, [retval0];");
                for j in 0..r.size() {
                    let _ = writeln!(
                        s,
                        "\tst.global.u8 [%rd1+{j}], {reg};\n\tshr.b{w} {reg}, {reg}, 8;"
                    );
                }
            } else {
                for j in 0..r.size() {
                    let _ = writeln!(
                        s,
                        "\tld.param.u8 %r2, [retval0+{j}];\n\tst.global.u8 [%rd1+{j}], %r2;"
                    );
                }
            }
        }
        s += "\t}\n\tret;\n}\n\n";
    }
    s
}

/// The languages the batches are written in: CUDA C++ with and without CUDA's headers, both IR
/// dialects, and PTX itself for the reference emitter.
pub const LANGUAGES: [Language; 6] = [
    Language::CudaCpp,
    Language::ClangCuda,
    Language::LlvmIr,
    Language::NvvmIr,
    Language::Ptx,
    Language::Rust,
];

/// The source a producer compiles for one role of a batch, and its language; `None` for a
/// producer that reads none of [`LANGUAGES`] (the hand-written corpus).
pub fn source(p: Producer, role: Role, sigs: &[&Signature]) -> Option<(Language, String)> {
    let language = p.language_of(&LANGUAGES)?;
    let text = match (language, role) {
        (Language::CudaCpp | Language::ClangCuda, Role::Callee) => cpp_callee(p, sigs),
        (Language::CudaCpp | Language::ClangCuda, Role::Caller) => cpp_caller(p, sigs),
        (Language::LlvmIr, Role::Callee) => ir_callee(IrDialect::Llvm19, sigs),
        (Language::LlvmIr, Role::Caller) => ir_caller(IrDialect::Llvm19, sigs),
        (Language::NvvmIr, Role::Callee) => ir_callee(IrDialect::Nvvm, sigs),
        (Language::NvvmIr, Role::Caller) => ir_caller(IrDialect::Nvvm, sigs),
        (Language::Ptx, Role::Callee) => ptx_callee(sigs),
        (Language::Ptx, Role::Caller) => ptx_caller(sigs),
        (Language::Rust, Role::Callee) => super::emit_rust::callee(sigs),
        (Language::Rust, Role::Caller) => super::emit_rust::caller(sigs),
        (Language::C | Language::Triton | Language::Numba, _) => return None,
    };
    Some((language, text))
}

/// Every record the C++ rendering defines for `sigs` (for tests).
pub fn records(sigs: &[&Signature]) -> Vec<String> {
    let defs: Vec<TypeDef> = sigs
        .iter()
        .flat_map(|s| s.aggs().map(|a| a.def.clone()))
        .collect();
    all_records(&defs).iter().map(|r| r.name.clone()).collect()
}

#[allow(dead_code)]
fn _uses(_: Ty) {}
