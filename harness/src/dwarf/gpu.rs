//! On a GPU (issue 13 item 5): the driver JIT loads a producer's debug PTX with
//! `CU_JIT_GENERATE_DEBUG_INFO` (full-DWARF producers) or `CU_JIT_GENERATE_LINE_INFO`
//! (NVRTC `-lineinfo`), as a debugger-attached load does, and the kernel still computes the
//! right result (ptx-interop 13.2 §5.1: the producer's sections and `.loc` lines go through
//! the back end).

use super::producers::{compile_kernel, DebugProducer};
use crate::area::CaseContext;
use crate::backend::cuda::{DriverCallError, JitDebug, KernelArg, LaunchConfig};
use crate::outcome::CaseStatus;

pub(crate) fn jit_load(ctx: &CaseContext, p: DebugProducer) -> CaseStatus {
    let ptx = match compile_kernel(ctx.toolchain, p) {
        Ok(x) => x,
        Err(e) => return CaseStatus::error(e),
    };
    if ctx.compile_only {
        return CaseStatus::compiled_only();
    }
    let s = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(e),
    };
    let debug = if p.full() {
        JitDebug::DebugInfo
    } else {
        JitDebug::LineInfo
    };
    let m = match s.load_ptx_with(&ptx, debug) {
        Ok(m) => m,
        Err(e) => return CaseStatus::fail("the driver JIT loads the debug PTX", e.to_string()),
    };
    let run = || -> Result<Vec<u32>, DriverCallError> {
        let f = s.function(&m, "gpucts_dwarf_add")?;
        let buf = s.buffer(32 * 4)?;
        let cfg = LaunchConfig {
            grid: 1,
            block: 32,
            shared_bytes: 0,
        };
        // SAFETY: `gpucts_dwarf_add(unsigned *p, unsigned a, unsigned b)`: a 64-bit pointer and
        // two 32-bit values (`nvvm_ir::kernel_ir`).
        unsafe {
            s.launch(
                f,
                cfg,
                &[
                    KernelArg::Ptr(buf.ptr),
                    KernelArg::U32(3),
                    KernelArg::U32(4),
                ],
            )
        }?;
        s.synchronize()?;
        s.copy_u32_to_host(buf.ptr, 32)
    };
    match run() {
        // p[t] = (a + b) * 2 + t
        Ok(v) if v.iter().enumerate().all(|(t, x)| *x == 14 + t as u32) => CaseStatus::pass(),
        Ok(v) => CaseStatus::fail("p[t] = (3 + 4) * 2 + t", format!("{v:?}")),
        Err(e) => CaseStatus::error(e.to_string()),
    }
}
