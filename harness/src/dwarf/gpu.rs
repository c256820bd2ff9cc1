//! On a GPU (issue 13 item 5): the driver JIT loads a producer's debug PTX and the kernel still
//! computes the right result. backend/cuda.rs's `load_ptx` passes no JIT options yet, so
//! `CU_JIT_GENERATE_DEBUG_INFO`/`CU_JIT_GENERATE_LINE_INFO` wait for an entry point there
//! (owned by another area); the PTX itself carries the DWARF sections / `.loc` lines.

use super::producers::{compile_kernel, DebugProducer};
use crate::area::CaseContext;
use crate::backend::cuda::{KernelArg, LaunchConfig, Session};
use crate::outcome::CaseStatus;

pub fn jit_load(ctx: &CaseContext, p: DebugProducer) -> CaseStatus {
    let ptx = match compile_kernel(ctx.toolchain, p) {
        Ok(x) => x,
        Err(e) => return CaseStatus::error(e),
    };
    let s = match Session::open(0) {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(e),
    };
    let m = match s.load_ptx(&ptx) {
        Ok(m) => m,
        Err(e) => return CaseStatus::fail("the driver JIT loads the debug PTX", e.to_string()),
    };
    let run = || -> Result<Vec<u32>, String> {
        let f = s
            .function(&m, "gpucts_dwarf_add")
            .map_err(|e| e.to_string())?;
        let buf = s.buffer(32 * 4).map_err(|e| e.to_string())?;
        let cfg = LaunchConfig {
            grid: 1,
            block: 32,
            shared_bytes: 0,
        };
        s.launch(
            f,
            cfg,
            &[
                KernelArg::Ptr(buf.ptr),
                KernelArg::U32(3),
                KernelArg::U32(4),
            ],
        )
        .map_err(|e| e.to_string())?;
        s.synchronize().map_err(|e| e.to_string())?;
        s.copy_u32_to_host(buf.ptr, 32).map_err(|e| e.to_string())
    };
    match run() {
        // p[t] = (a + b) * 2 + t
        Ok(v) if v.iter().enumerate().all(|(t, x)| *x == 14 + t as u32) => CaseStatus::pass(),
        Ok(v) => CaseStatus::fail("p[t] = (3 + 4) * 2 + t", format!("{v:?}")),
        Err(e) => CaseStatus::error(e),
    }
}
