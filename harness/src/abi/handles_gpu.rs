//! ptx-interop 13.2 §1.4 and §2.3 note E on a GPU: texture and surface handles cross a call as
//! `.b64` and the callee reads and writes through them. The host makes a 2-D CUDA array of
//! 32-bit words, a texture object and a surface object on it; a kernel passes both handles to
//! a `.func` that reads one element with `tex`, another with `suld`, writes their sum with
//! `sust` and returns it; the kernel also passes the texture handle through a function that
//! returns it as `.b64` and reads with what came back. The host checks the returned words
//! and every element of the array afterwards.
//!
//! Two kernels, one per way a kernel receives a handle: as a `.u64` parameter (a
//! `CUtexObject`/`CUsurfObject` value, as CUDA C++ passes `cudaTextureObject_t`) and as a
//! `.texref`/`.surfref` parameter taken into a register with `mov.u64` (the table's "assigned
//! from .texref ... .surfref"; ptxas refuses `mov.b64` there). Unified texture mode: a
//! texture object carries its sampler, so no separate `.samplerref` handle exists to pass.
//!
//! Expected values come from the words the host wrote ([`element`]), never from the device.

use serde::Deserialize;

use crate::area::CaseContext;
use crate::backend::cuda::{KernelArg, LaunchConfig};
use crate::outcome::CaseStatus;

/// How the kernel receives the handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandleParams {
    /// `.param .u64` holding the object handles.
    U64,
    /// `.param .texref` / `.param .surfref`, moved into a register with `mov.u64`.
    Texref,
}

impl HandleParams {
    pub const ALL: [HandleParams; 2] = [HandleParams::U64, HandleParams::Texref];

    pub fn kernel(self) -> &'static str {
        match self {
            HandleParams::U64 => "gpucts_handles_u64",
            HandleParams::Texref => "gpucts_handles_texref",
        }
    }

    /// The element (x, 1) the callee writes: a different one per kernel.
    fn write_x(self) -> u32 {
        match self {
            HandleParams::U64 => 3,
            HandleParams::Texref => 0,
        }
    }
}

/// The array's size: 4 x 2 words.
pub const WIDTH: usize = 4;
pub const HEIGHT: usize = 2;

/// The word the host writes at (x, y): each byte names the element, so a read from the wrong
/// one shows which.
pub fn element(x: usize, y: usize) -> u32 {
    0x0100_0000 * (y as u32 + 1) + 0x0001_0000 * (x as u32 + 1) + 0x005a
}

/// What the callee computes: `tex` at (1, 0) plus `suld` at (2, 1), wrapping.
pub fn callee_value() -> u32 {
    element(1, 0).wrapping_add(element(2, 1))
}

/// The two output words of a kernel: the callee's return value, and `tex` at (2, 0) through
/// the handle a function returned.
pub fn expected_out() -> [u32; 2] {
    [callee_value(), element(2, 0)]
}

/// The array after the kernel: as written, with the callee's sum at (write_x, 1).
pub fn expected_array(params: HandleParams) -> Vec<u32> {
    let mut v = Vec::new();
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            if y == 1 && x == params.write_x() as usize {
                v.push(callee_value());
            } else {
                v.push(element(x, y));
            }
        }
    }
    v
}

const CALLEES: &str = "\
// ptx-interop 13.2 2.3 note E: the handles arrive as .b64; tex reads (1, 0) with unnormalised coordinates
// (texel centres at +0.5), suld (2, 1) (x in bytes), sust writes the sum at (x, 1).
.visible .func (.param .b32 r) gpucts_use_handles(.param .b64 t, .param .b64 s, .param .b32 x)
{
\t.reg .b64 %rd<3>;
\t.reg .b32 %r<12>;
\t.reg .f32 %f<3>;
\tld.param.b64 %rd1, [t];
\tld.param.b64 %rd2, [s];
\tld.param.b32 %r10, [x];
\tmov.f32 %f1, 0f3FC00000;
\tmov.f32 %f2, 0f3F000000;
\ttex.2d.v4.u32.f32 {%r1, %r2, %r3, %r4}, [%rd1, {%f1, %f2}];
\tmov.u32 %r5, 8;
\tmov.u32 %r6, 1;
\tsuld.b.2d.b32.trap {%r7}, [%rd2, {%r5, %r6}];
\tadd.u32 %r8, %r1, %r7;
\tshl.b32 %r9, %r10, 2;
\tsust.b.2d.b32.trap [%rd2, {%r9, %r6}], {%r8};
\tst.param.b32 [r], %r8;
\tret;
}

// ptx-interop 13.2 1.4: a handle returned from a function as .b64.
.visible .func (.param .b64 r) gpucts_pass_handle(.param .b64 h)
{
\t.reg .b64 %rd<2>;
\tld.param.b64 %rd1, [h];
\tst.param.b64 [r], %rd1;
\tret;
}
";

/// The kernel body after the handles are in %rd1 (texture) and %rd2 (surface) and the output
/// address in %rd3.
fn kernel_body(write_x: u32) -> String {
    format!(
        "\t{{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd1;\n\t.param .b64 p1;\n\tst.param.b64 [p1], %rd2;\n\
         \t.param .b32 p2;\n\tst.param.b32 [p2], {write_x};\n\t.param .b32 r0;\n\
         \tcall.uni (r0), gpucts_use_handles, (p0, p1, p2);\n\tld.param.b32 %r1, [r0];\n\t}}\n\
         \tst.global.u32 [%rd3], %r1;\n\
         \t{{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd1;\n\t.param .b64 r0;\n\
         \tcall.uni (r0), gpucts_pass_handle, (p0);\n\tld.param.b64 %rd4, [r0];\n\t}}\n\
         \tmov.f32 %f1, 0f40200000;\n\tmov.f32 %f2, 0f3F000000;\n\
         \ttex.2d.v4.u32.f32 {{%r2, %r3, %r4, %r5}}, [%rd4, {{%f1, %f2}}];\n\
         \tst.global.u32 [%rd3+4], %r2;\n\tret;\n}}\n"
    )
}

/// The module of one kernel, with both callees. One kernel a module: ptxas 12.9.86 dies with
/// SIGSEGV on a module holding both kernels (the same callee called with handles from `.u64`
/// parameters and from `.texref`/`.surfref` parameters), while each alone assembles.
pub fn module(params: HandleParams) -> String {
    let regs = "\t.reg .b64 %rd<6>;\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<3>;\n";
    let (decl, take) = match params {
        HandleParams::U64 => (
            ".param .u64 t, .param .u64 s, .param .u64 o",
            "\tld.param.u64 %rd1, [t];\n\tld.param.u64 %rd2, [s];\n",
        ),
        HandleParams::Texref => (
            ".param .texref t, .param .surfref s, .param .u64 o",
            "\tmov.u64 %rd1, t;\n\tmov.u64 %rd2, s;\n",
        ),
    };
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\n{CALLEES}\n\
         .visible .entry {}({decl})\n{{\n{regs}{take}\
         \tld.param.u64 %rd5, [o];\n\tcvta.to.global.u64 %rd3, %rd5;\n{}",
        params.kernel(),
        kernel_body(params.write_x()),
    )
}

/// Why a run could not be judged (a driver call failed).
fn driver(what: &str, e: impl std::fmt::Display) -> CaseStatus {
    CaseStatus::fail(format!("{what} succeeds"), e.to_string())
}

/// Run one kernel on a fresh array and judge the words.
pub fn case(ctx: &CaseContext, params: HandleParams) -> CaseStatus {
    if ctx.compile_only {
        return CaseStatus::compiled_only();
    }
    let s = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(format!("no CUDA context: {e}")),
    };
    let m = match s.load_ptx(&module(params)) {
        Ok(m) => m,
        Err(e) => {
            return CaseStatus::fail_detail(
                "the driver JIT loads the handle-passing module (ptxas assembles it)",
                format!("{:?}", e.code),
                e.log,
            )
        }
    };
    let array = match s.word_array(WIDTH, HEIGHT) {
        Ok(a) => a,
        Err(e) => return driver("a 4x2 CUDA array with surface load/store", e),
    };
    let words: Vec<u32> = (0..HEIGHT)
        .flat_map(|y| (0..WIDTH).map(move |x| element(x, y)))
        .collect();
    if let Err(e) = s.write_array(&array, &words) {
        return driver("copying the words into the array", e);
    }
    let tex = match s.texture_object(&array) {
        Ok(t) => t,
        Err(e) => return driver("cuTexObjectCreate on the array", e),
    };
    let surf = match s.surface_object(&array) {
        Ok(t) => t,
        Err(e) => return driver("cuSurfObjectCreate on the array", e),
    };
    let run = || -> Result<([u32; 2], Vec<u32>), crate::backend::cuda::DriverCallError> {
        let out = s.buffer(8)?;
        s.memset(out.ptr, 0, 8)?;
        let f = s.function(&m, params.kernel())?;
        let cfg = LaunchConfig {
            grid: 1,
            block: 1,
            shared_bytes: 0,
        };
        // SAFETY: both kernels take three 8-byte parameters: the texture handle, the surface
        // handle (`.u64`, or `.texref`/`.surfref`, 8 bytes each) and the output pointer.
        unsafe {
            s.launch(
                f,
                cfg,
                &[
                    KernelArg::U64(tex.handle),
                    KernelArg::U64(surf.handle),
                    KernelArg::Ptr(out.ptr),
                ],
            )
        }?;
        s.synchronize()?;
        let o = s.copy_u32_to_host(out.ptr, 2)?;
        Ok(([o[0], o[1]], s.read_array(&array)?))
    };
    let (out, after) = match run() {
        Ok(r) => r,
        Err(e) => return driver(&format!("launching `{}`", params.kernel()), e),
    };
    judge(params, out, &after)
}

/// The kernel's two words and the array afterwards against what the host wrote.
pub fn judge(params: HandleParams, out: [u32; 2], after: &[u32]) -> CaseStatus {
    let want = expected_out();
    if out[0] != want[0] {
        return CaseStatus::fail(
            format!(
                "the callee's tex (1,0) + suld (2,1) through the .b64 handles: 0x{:08x}",
                want[0]
            ),
            format!("0x{:08x}", out[0]),
        );
    }
    if out[1] != want[1] {
        return CaseStatus::fail(
            format!(
                "tex (2,0) through the handle a function returned as .b64: 0x{:08x}",
                want[1]
            ),
            format!("0x{:08x}", out[1]),
        );
    }
    let array = expected_array(params);
    if let Some(i) = (0..array.len()).find(|i| after.get(*i) != Some(&array[*i])) {
        return CaseStatus::fail(
            format!(
                "the array after the callee's sust: element ({}, {}) = 0x{:08x}",
                i % WIDTH,
                i / WIDTH,
                array[i]
            ),
            after
                .get(i)
                .map_or("missing".into(), |w| format!("0x{w:08x}")),
        );
    }
    CaseStatus::pass_with(format!(
        "`{}`: tex, suld and sust through .b64 handles in a callee, and tex through a returned handle",
        params.kernel()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::toolchain::Toolchain;

    /// The words, worked by hand: (1,0) = 0x0102005a, (2,1) = 0x0203005a, their sum
    /// 0x0305_00b4; the u64 kernel writes it at (3,1), the texref one at (0,1).
    #[test]
    fn expected_words() {
        assert_eq!(element(1, 0), 0x0102_005a);
        assert_eq!(element(2, 1), 0x0203_005a);
        assert_eq!(callee_value(), 0x0305_00b4);
        assert_eq!(expected_out(), [0x0305_00b4, 0x0103_005a]);
        let a = expected_array(HandleParams::U64);
        assert_eq!(a[7], 0x0305_00b4);
        assert_eq!(a[4], 0x0201_005a);
        let b = expected_array(HandleParams::Texref);
        assert_eq!(b[4], 0x0305_00b4);
        assert_eq!(b[7], 0x0204_005a);
        // A read of the wrong element, or a write left out, is a failure naming it.
        let mut after = a.clone();
        assert!(matches!(
            judge(HandleParams::U64, expected_out(), &after),
            CaseStatus::Pass { .. }
        ));
        after[7] = element(3, 1);
        let CaseStatus::Fail { expected, .. } = judge(HandleParams::U64, expected_out(), &after)
        else {
            panic!("an unwritten element passes")
        };
        assert!(expected.contains("element (3, 1)"), "{expected}");
        assert!(matches!(
            judge(HandleParams::U64, [element(2, 1), element(2, 0)], &a),
            CaseStatus::Fail { .. }
        ));
    }

    /// ptxas assembles each kernel's module for sm_90 and the ABI lint finds nothing in it.
    #[test]
    fn modules_assemble_and_lint() {
        let tc = Toolchain::discover_system();
        for params in HandleParams::ALL {
            let ptx = module(params);
            assert!(ptx.contains(params.kernel()));
            let v = crate::abi::lint::lint_source(&ptx, "handles.ptx").unwrap();
            assert!(v.is_empty(), "{v:?}");
            crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
            tc.ptxas(&ptx, "sm_90", &[])
                .unwrap_or_else(|e| panic!("{e}\n{ptx}"));
        }
    }

    /// Every case of `suites/abi.yaml` whose id starts with `["abi.gpu.handles.", "abi.gpu.bitfields."]` needs the GPU, and with every
    /// other capability present and none of a GPU it skips naming `gpu` (a failure under
    /// `--require gpu`), never running or crashing.
    #[test]
    fn gpu_cases_skip_naming_the_gpu() {
        let ids = crate::testkit::assert_gpu_cases_skip_naming_the_gpu("abi", |c| {
            ["abi.gpu.handles.", "abi.gpu.bitfields."]
                .iter()
                .any(|p| c.id.starts_with(p))
        });
        assert_eq!(ids.len(), 5);
    }
}
