//! The values of [`super::values`] on a GPU: a caller module and a callee module joined by the
//! driver's JIT linker (`cuLink*`), each value kernel launched once (one thread), and the `int`
//! it stores read back and compared with the C value (§2.3 note A: a narrow integer both ways;
//! note B: a pointer to a `.global`, `.shared` and `.local` object).
//!
//! The caller side is the value programs' PTX as the offline cases run it (`call_<t>`,
//! `callret_<t>`, `ptr_<space>` calling the undefined `take_<t>`, `give_<t>`, `deref`); the
//! callee side is the same producer's (or another's) compilation of those three functions
//! alone. `gpucts` is a side written here in PTX, reading the table literally: its callee
//! `take_<t>` returns the whole 32-bit word it was passed, so a producer's caller is observed
//! on the device to the bit (the kernel stores the word), and its caller `callret_<t>` stores
//! the whole 32-bit word `give_<t>` returned, so a producer's callee's return value is too.
//! The other two of its functions extend and dereference as the notes say.
//!
//! Expected values are C's ([`Narrow::value_of_object`], [`Narrow::convert`], the pointed-to
//! `int`), never a producer's. Offline, the same two modules run through the PTX interpreter
//! ([`values::pair_via`]), ptxas assembles the hand-written ones and nvJitLink links every pair
//! (unit tests).

use crate::vocab::Vocabulary;
use std::sync::{Arc, OnceLock};
use strum::VariantArray;

use serde::Deserialize;

use super::values::{self, Callees, Narrow, Object, POINTER_VALUE, RETURN_SOURCE};
use crate::area::{BatchCache, CaseContext};
use crate::backend::cuda::{self, KernelArg, LaunchConfig, Session};
use crate::backend::producer::{Language, Producer};
use crate::backend::toolchain::Toolchain;
use crate::outcome::CaseStatus;

/// The producers a GPU values case takes: those that write the value programs' callers and
/// callees, and gpucts's hand-written side.
pub fn producers() -> Vec<Producer> {
    let mut v = values::caller_producers();
    v.push(Producer::named("gpucts"));
    v
}

pub(crate) fn producer_in_view<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Producer, D::Error> {
    let p = Producer::deserialize(d)?;
    crate::backend::producer::in_view(p, "xcall GPU values", &producers())
        .map_err(serde::de::Error::custom)
}

fn is_reference(p: Producer) -> bool {
    p.language_of(&[Language::Ptx]).is_some()
}

// ------------------------------------------------------------------ the callee programs

/// The callee functions alone, under the names the callers call.
pub(crate) fn callee_source(language: Language) -> Option<String> {
    match language {
        Language::CudaCpp | Language::ClangCuda => {
            let mut s = String::new();
            if language == Language::ClangCuda {
                s += "#define __device__ __attribute__((device))\n";
            }
            for &t in Narrow::VARIANTS {
                let (n, c) = (t.name(), t.c_type());
                s += &format!(
                    "extern \"C\" __device__ int take_{n}({c} c) {{ return c; }}\n\
                     extern \"C\" __device__ {c} give_{n}(int x) {{ return ({c})x; }}\n"
                );
            }
            s += "extern \"C\" __device__ int deref(int* p) { return *p; }\n";
            Some(s)
        }
        Language::NvvmIr | Language::LlvmIr => {
            let typed = language == Language::NvvmIr;
            let p32 = if typed { "i32*" } else { "ptr" };
            let mut s = format!(
                "target datalayout = \"{}\"\ntarget triple = \"nvptx64-nvidia-cuda\"\n\n",
                crate::abi::paramgen::NVVM_DATALAYOUT
            );
            for &t in Narrow::VARIANTS {
                let n = t.name();
                let (ty, ext) = t.ir();
                let widen = if t.signed() { "sext" } else { "zext" };
                let narrow = if t == Narrow::Bool {
                    "  %t = icmp ne i32 %x, 0\n".to_string()
                } else {
                    format!("  %t = trunc i32 %x to {ty}\n")
                };
                s += &format!(
                    "define i32 @take_{n}({ty} {ext} %c) {{\n  %r = {widen} {ty} %c to i32\n  ret i32 %r\n}}\n\
                     define {ext} {ty} @give_{n}(i32 %x) {{\n{narrow}  ret {ty} %t\n}}\n"
                );
            }
            s += &format!(
                "define i32 @deref({p32} %p) {{\n  %r = load i32, {p32} %p, align 4\n  ret i32 %r\n}}\n"
            );
            if typed {
                s += "!nvvmir.version = !{!0}\n!0 = !{i32 2, i32 0}\n";
            }
            Some(s)
        }
        Language::C | Language::Ptx | Language::Rust | Language::Triton | Language::Numba => None,
    }
}

fn compile_callee(tc: &Toolchain, producer: Producer) -> Result<String, String> {
    if is_reference(producer) {
        return Ok(REFERENCE_CALLEE.clone());
    }
    values::compile_programs(tc, producer, &callee_source, "callee programs")
}

fn callee_batch(ctx: &CaseContext, producer: Producer) -> Arc<OnceLock<Result<String, String>>> {
    static CACHE: OnceLock<BatchCache<Producer, Result<String, String>>> = OnceLock::new();
    CACHE
        .get_or_init(BatchCache::new)
        .get_or_compute(ctx, &producer, || compile_callee(ctx.toolchain, producer))
}

fn caller_ptx(ctx: &CaseContext, producer: Producer) -> Result<String, CaseStatus> {
    if is_reference(producer) {
        return Ok(REFERENCE_CALLER.clone());
    }
    values::ptx_of(ctx, producer)
}

fn callee_ptx(ctx: &CaseContext, producer: Producer) -> Result<String, CaseStatus> {
    match callee_batch(ctx, producer).get() {
        Some(Ok(p)) => Ok(p.clone()),
        Some(Err(e)) => Err(CaseStatus::error(e.clone())),
        None => Err(CaseStatus::error("batch not computed")),
    }
}

// ------------------------------------------------------------------ gpucts's side, in PTX

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n\n";

/// The load that widens the object's bytes to the 32-bit argument by the type's signedness.
fn load_op(t: Narrow) -> &'static str {
    match (t.bytes(), t.signed()) {
        (1, true) => "ld.global.s8",
        (1, false) => "ld.global.u8",
        (_, true) => "ld.global.s16",
        (_, false) => "ld.global.u16",
    }
}

/// Note A in the callee's return: `(T)x` widened to 32 bits.
fn narrow_op(t: Narrow) -> &'static str {
    match t {
        Narrow::Bool => "\tsetp.ne.u32 %p1, %r1, 0;\n\tselp.u32 %r2, 1, 0, %p1;\n",
        Narrow::Char => {
            if t.signed() {
                "\tcvt.s32.s8 %r2, %r1;\n"
            } else {
                "\tcvt.u32.u8 %r2, %r1;\n"
            }
        }
        Narrow::Schar => "\tcvt.s32.s8 %r2, %r1;\n",
        Narrow::Uchar => "\tcvt.u32.u8 %r2, %r1;\n",
        Narrow::Short => "\tcvt.s32.s16 %r2, %r1;\n",
        Narrow::Ushort => "\tcvt.u32.u16 %r2, %r1;\n",
    }
}

/// The caller kernels: each argument widened by its load, each returned word stored whole.
pub(crate) static REFERENCE_CALLER: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut s = HEADER.to_string();
    for &t in Narrow::VARIANTS {
        let n = t.name();
        s += &format!(
            ".extern .func (.param .b32 func_retval0) take_{n}(.param .b32 take_{n}_param_0);\n\
             .extern .func (.param .b32 func_retval0) give_{n}(.param .b32 give_{n}_param_0);\n"
        );
    }
    s += ".extern .func (.param .b32 func_retval0) deref(.param .b64 deref_param_0);\n\
          .global .align 4 .b32 gpucts_ref_gl;\n.shared .align 4 .b32 gpucts_ref_sh;\n\n";
    for &t in Narrow::VARIANTS {
        let n = t.name();
        let r = if t.signed() { ".s32" } else { ".u32" };
        s += &format!(
            ".visible .entry call_{n}(.param .u64 call_{n}_param_0, .param .u64 call_{n}_param_1)\n{{\n\
             \t.reg {r} %r<2>;\n\t.reg .b32 %w<2>;\n\t.reg .b64 %rd<5>;\n\
             \tld.param.u64 %rd1, [call_{n}_param_0];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
             \tld.param.u64 %rd3, [call_{n}_param_1];\n\tcvta.to.global.u64 %rd4, %rd3;\n\
             \t{} %r1, [%rd2];\n\
             \t{{\n\t.param .b32 param0;\n\tst.param.b32 [param0], %r1;\n\t.param .b32 retval0;\n\
             \tcall.uni (retval0), take_{n}, (param0);\n\tld.param.b32 %w1, [retval0];\n\t}}\n\
             \tst.global.b32 [%rd4], %w1;\n\tret;\n}}\n\n\
             .visible .entry callret_{n}(.param .u32 callret_{n}_param_0, .param .u64 callret_{n}_param_1)\n{{\n\
             \t.reg .b32 %w<3>;\n\t.reg .b64 %rd<3>;\n\
             \tld.param.u32 %w1, [callret_{n}_param_0];\n\
             \tld.param.u64 %rd1, [callret_{n}_param_1];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
             \t{{\n\t.param .b32 param0;\n\tst.param.b32 [param0], %w1;\n\t.param .b32 retval0;\n\
             \tcall.uni (retval0), give_{n}, (param0);\n\tld.param.b32 %w2, [retval0];\n\t}}\n\
             \tst.global.b32 [%rd2], %w2;\n\tret;\n}}\n\n",
            load_op(t)
        );
    }
    for (o, store, var, space) in [
        ("global", "st.global.u32", "gpucts_ref_gl", "global"),
        ("shared", "st.shared.u32", "gpucts_ref_sh", "shared"),
        ("local", "st.local.u32", "gpucts_ref_l", "local"),
    ] {
        let local = if o == "local" {
            "\t.local .align 4 .b8 gpucts_ref_l[4];\n"
        } else {
            ""
        };
        s += &format!(
            ".visible .entry ptr_{o}(.param .u32 ptr_{o}_param_0, .param .u64 ptr_{o}_param_1)\n{{\n\
             {local}\t.reg .b32 %w<3>;\n\t.reg .b64 %rd<5>;\n\
             \tld.param.u32 %w1, [ptr_{o}_param_0];\n\
             \tld.param.u64 %rd1, [ptr_{o}_param_1];\n\tcvta.to.global.u64 %rd2, %rd1;\n\
             \t{store} [{var}], %w1;\n\tmov.u64 %rd3, {var};\n\tcvta.{space}.u64 %rd4, %rd3;\n\
             \t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd4;\n\t.param .b32 retval0;\n\
             \tcall.uni (retval0), deref, (param0);\n\tld.param.b32 %w2, [retval0];\n\t}}\n\
             \tst.global.b32 [%rd2], %w2;\n\tret;\n}}\n\n"
        );
    }
    s
});

/// The callee functions: `take_<t>` returns the word it was passed, `give_<t>` returns `(T)x`
/// widened by note A, `deref` reads through the generic address.
pub(crate) static REFERENCE_CALLEE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let mut s = HEADER.to_string();
    for &t in Narrow::VARIANTS {
        let n = t.name();
        s += &format!(
            ".visible .func (.param .b32 func_retval0) take_{n}(.param .b32 take_{n}_param_0)\n{{\n\
             \t.reg .b32 %r<2>;\n\tld.param.b32 %r1, [take_{n}_param_0];\n\
             \tst.param.b32 [func_retval0], %r1;\n\tret;\n}}\n\n\
             .visible .func (.param .b32 func_retval0) give_{n}(.param .b32 give_{n}_param_0)\n{{\n\
             \t.reg .pred %p<2>;\n\t.reg .b32 %r<3>;\n\tld.param.b32 %r1, [give_{n}_param_0];\n\
             {}\tst.param.b32 [func_retval0], %r2;\n\tret;\n}}\n\n",
            narrow_op(t)
        );
    }
    s += ".visible .func (.param .b32 func_retval0) deref(.param .b64 deref_param_0)\n{\n\
          \t.reg .b32 %r<2>;\n\t.reg .b64 %rd<2>;\n\tld.param.u64 %rd1, [deref_param_0];\n\
          \tld.u32 %r1, [%rd1];\n\tst.param.b32 [func_retval0], %r1;\n\tret;\n}\n";
    s
});

// ------------------------------------------------------------------ the run

/// One value kernel: its name, what it is given, and the `int` C says it stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Launch {
    pub kernel: String,
    /// What the check is, for messages ("schar argument").
    pub what: String,
    pub first: First,
    pub expected: i32,
}

/// The kernel's first parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum First {
    /// The bytes of an object whose global address is passed.
    Object(Vec<u8>),
    /// A 32-bit value.
    Int(i32),
}

/// The launches of a case, in order, with C's values.
pub(crate) fn launches() -> Vec<Launch> {
    let mut v = Vec::new();
    for &t in Narrow::VARIANTS {
        let n = t.name();
        v.push(Launch {
            kernel: format!("call_{n}"),
            what: format!("{n} argument"),
            first: First::Object(t.object()),
            expected: t.value_of_object(),
        });
        v.push(Launch {
            kernel: format!("callret_{n}"),
            what: format!("{n} return value"),
            first: First::Int(RETURN_SOURCE),
            expected: t.convert(RETURN_SOURCE),
        });
    }
    for &o in Object::VARIANTS {
        v.push(Launch {
            kernel: format!("ptr_{}", o.name()),
            what: format!("pointer to a {} object", o.name()),
            first: First::Int(POINTER_VALUE),
            expected: POINTER_VALUE,
        });
    }
    v
}

/// Compare what each launch stored with C's value; `Err` lists every difference.
pub(crate) fn judge(results: &[(Launch, u32)]) -> Result<usize, Vec<String>> {
    let wrong: Vec<String> = results
        .iter()
        .filter(|(l, got)| *got != l.expected as u32)
        .map(|(l, got)| {
            format!(
                "{} (`{}`): expected 0x{:08x} ({}), observed 0x{got:08x} ({})",
                l.what, l.kernel, l.expected as u32, l.expected, *got as i32
            )
        })
        .collect();
    if wrong.is_empty() {
        Ok(results.len())
    } else {
        Err(wrong)
    }
}

/// `gpucts prebuild`: the two modules compiled (and so recorded) without a GPU.
fn compile_only(ctx: &CaseContext, caller: Producer, callee: Producer) -> CaseStatus {
    if let Err(s) = caller_ptx(ctx, caller) {
        return s;
    }
    if let Err(s) = callee_ptx(ctx, callee) {
        return s;
    }
    CaseStatus::compiled_only()
}

/// Words the kernel must overwrite.
const SENTINEL: u32 = 0xdead_beef;

/// Link `caller`'s kernels with `callee`'s functions, run every launch, and judge.
pub(crate) fn case(ctx: &CaseContext, caller: Producer, callee: Producer) -> CaseStatus {
    if ctx.compile_only {
        return compile_only(ctx, caller, callee);
    }
    let (a, b) = match (caller_ptx(ctx, caller), callee_ptx(ctx, callee)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(s), _) | (_, Err(s)) => return s,
    };
    let session = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(format!("no CUDA context: {e}")),
    };
    let module =
        match session.link_ptx(&[("gpucts_values_caller", &a), ("gpucts_values_callee", &b)]) {
            Ok(m) => m,
            Err(e) => return CaseStatus::fail_detail(
                "the driver's JIT linker links the caller's kernels with the callee's functions",
                format!("{caller} calling {callee}: cuLink* failed"),
                e.to_string(),
            ),
        };
    let mut results = Vec::new();
    for l in launches() {
        match run_one(&session, &module, &l) {
            Ok(got) => results.push((l, got)),
            // A fault poisons the context: report it with what ran before.
            Err(e) => {
                return CaseStatus::fail_detail(
                    format!("`{}` runs", l.kernel),
                    format!("{caller} calling {callee}, {}: {e}", l.what),
                    format!("{} launches ran before it", results.len()),
                )
            }
        }
    }
    // The same two modules through the PTX interpreter, so a report shows whether the
    // device and the offline execution agree.
    let offline = match values::pair_via(&a, &b, Callees::Linked) {
        Ok(n) => format!("the PTX interpreter: {n} of {n} C values"),
        Err(p) => format!("the PTX interpreter: {p}"),
    };
    match judge(&results) {
        Ok(n) => CaseStatus::pass_with(format!(
            "{n} kernels stored C's value ({caller} caller, {callee} callee); {offline}"
        )),
        Err(wrong) => CaseStatus::fail_detail(
            "each kernel stores the C value of what crossed the call (§2.3 notes A and B)",
            format!("{caller} calling {callee}: {}", wrong[0]),
            format!(
                "{} of {} differ:\n{}\n{offline}",
                wrong.len(),
                results.len(),
                wrong.join("\n")
            ),
        ),
    }
}

/// One kernel, one thread: its first argument (an object's device address or an int) and the
/// output word, which starts as [`SENTINEL`].
fn run_one(s: &Session, module: &cuda::Module, l: &Launch) -> Result<u32, cuda::DriverCallError> {
    let out = s.buffer(4)?;
    s.copy_u32_to_device(out.ptr, &[SENTINEL])?;
    let object = s.buffer(8)?;
    let first = match &l.first {
        First::Object(bytes) => {
            s.copy_to_device(object.ptr, bytes)?;
            KernelArg::Ptr(object.ptr)
        }
        First::Int(v) => KernelArg::U32(*v as u32),
    };
    let f = s.function(module, &l.kernel)?;
    let cfg = LaunchConfig {
        grid: 1,
        block: 1,
        shared_bytes: 0,
    };
    // SAFETY: every value kernel takes (.u64 object pointer or .u32 value, .u64 output); the
    // first argument's kind follows the kernel's name (`launches`).
    unsafe { s.launch(f, cfg, &[first, KernelArg::Ptr(out.ptr)]) }?;
    s.synchronize()?;
    Ok(s.copy_u32_to_host(out.ptr, 1)?[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C's values for the launches, worked by hand (C11 6.3.1.3 on a two's-complement host).
    #[test]
    fn launches_expect_c_values() {
        let l = launches();
        assert_eq!(l.len(), 15);
        let get = |k: &str| l.iter().find(|x| x.kernel == k).unwrap().expected;
        assert_eq!(get("call_schar"), -128);
        assert_eq!(get("call_uchar"), 128);
        assert_eq!(get("call_short"), -32768);
        assert_eq!(get("call_bool"), 1);
        assert_eq!(get("callret_char"), -128);
        assert_eq!(get("callret_ushort"), 0x8080);
        assert_eq!(get("callret_short"), -32640);
        assert_eq!(get("ptr_local"), 0x1234_5678);
        let e = judge(&[(l[0].clone(), 0x80)]).unwrap_err();
        assert!(
            e[0].contains("expected 0x00000001") || e[0].contains("0xffffff80"),
            "{e:?}"
        );
    }

    /// The hand-written side assembles for sm_90 (as relocatable objects: each calls what the
    /// other defines), passes the ABI lint, and runs in the interpreter against itself: the
    /// kernels store C's values.
    #[test]
    fn reference_side_assembles_lints_and_runs() {
        for (name, ptx) in [
            ("caller", &*REFERENCE_CALLER),
            ("callee", &*REFERENCE_CALLEE),
        ] {
            let v = crate::abi::lint::lint_source(ptx, name).unwrap();
            assert!(v.is_empty(), "{name}: {v:?}");
        }
        assert_eq!(
            values::pair_via(&REFERENCE_CALLER, &REFERENCE_CALLEE, Callees::Linked).unwrap(),
            15
        );
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
        for ptx in [&*REFERENCE_CALLER, &*REFERENCE_CALLEE] {
            tc.ptxas(ptx, "sm_90", &["-c"])
                .unwrap_or_else(|e| panic!("{e}\n{ptx}"));
        }
    }

    /// A zero-extending caller is seen to the bit through the recording callee: the kernel
    /// stores 0x00000080 for a signed char.
    #[test]
    fn the_recording_callee_exposes_the_callers_word() {
        let bad = REFERENCE_CALLER.replace("ld.global.s8", "ld.global.u8");
        let e = values::pair_via(&bad, &REFERENCE_CALLEE, Callees::Linked).unwrap_err();
        assert!(e.to_string().contains("char argument"), "{e}");
        // And a callee that does not widen its return value is seen by the recording caller.
        let bad = REFERENCE_CALLEE.replace("cvt.s32.s16 %r2, %r1;", "mov.b32 %r2, %r1;");
        let e = values::pair_via(&REFERENCE_CALLER, &bad, Callees::Linked).unwrap_err();
        assert!(e.to_string().contains("short return"), "{e}");
    }

    /// Every producer here: its callee functions compile, and every caller (the value
    /// programs) against every callee (these, and gpucts's) stores C's values in the
    /// interpreter; nvJitLink links each pair for sm_90, as the driver's linker will.
    #[test]
    fn every_pair_runs_offline_and_links() {
        let tc = Toolchain::discover_system();
        let mut sides = vec![(
            Producer::named("gpucts"),
            REFERENCE_CALLER.clone(),
            REFERENCE_CALLEE.clone(),
        )];
        for p in values::caller_producers() {
            crate::require!(p.requires().iter().all(|c| tc.has(*c)), p.name());
            let caller = values::compile(&tc, p).unwrap();
            let callee = compile_callee(&tc, p).unwrap();
            sides.push((p, caller, callee));
        }
        let link = tc.has(crate::capability::Capability::Nvjitlink);
        for (a, caller, _) in &sides {
            for (b, _, callee) in &sides {
                let n = values::pair_via(caller, callee, Callees::Linked)
                    .unwrap_or_else(|e| panic!("{a} -> {b}: {e}"));
                assert_eq!(n, 15);
                if link {
                    use crate::backend::toolchain::LinkInputKind::Ptx;
                    let inputs = [
                        (Ptx, "caller.ptx", caller.as_bytes()),
                        (Ptx, "callee.ptx", callee.as_bytes()),
                    ];
                    tc.nvjitlink(&inputs, &["-arch=sm_90"])
                        .unwrap_or_else(|e| panic!("{a} -> {b}: {e}"));
                }
            }
        }
    }

    /// Every case of `suites/xcall.yaml` whose id starts with `["xcall.gpu-values."]` needs the GPU, and with every
    /// other capability present and none of a GPU it skips naming `gpu` (a failure under
    /// `--require gpu`), never running or crashing.
    #[test]
    fn gpu_cases_skip_naming_the_gpu() {
        let ids = crate::testkit::assert_gpu_cases_skip_naming_the_gpu("xcall", |c| {
            c.id.starts_with("xcall.gpu-values.")
        });
        assert_eq!(ids.len(), 36);
    }
}
