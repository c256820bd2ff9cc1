//! The graffiti oracle on a GPU (ptx-interop 13.2 ch. 1, after abi-cafe): NVRTC compiles the
//! writer kernel of [`oracle::graffiti`] for a batch of random types, the driver loads it, one
//! thread writes graffiti through every member, and the bytes that come back are compared with
//! the layout engine's placement.

use super::oracle::{self, graffiti, TypeResult};
use super::random::random_batch;
use crate::area::CaseContext;
use crate::backend::cuda::{self, KernelArg, LaunchConfig};
use crate::outcome::CaseStatus;

/// NVRTC options for the writer: the target machine is sm_90.
pub(crate) const NVRTC_OPTS: &[&str] = &["--gpu-architecture=compute_90", "-std=c++17"];

/// Why the graffiti case could not reach its verdict (an error, not a divergence).
#[derive(Debug, thiserror::Error)]
pub(crate) enum GraffitiGpuError {
    #[error(transparent)]
    Engine(#[from] crate::abi::layout::LayoutError),
    #[error("NVRTC rejected the graffiti kernel: {0}")]
    Nvrtc(crate::backend::toolchain::ToolError),
    #[error(transparent)]
    Cuda(#[from] cuda::CudaError),
    #[error(transparent)]
    Driver(#[from] cuda::DriverCallError),
    #[error(transparent)]
    Load(#[from] cuda::LoadError),
}

/// The PTX of the writer kernel for seeds `seed_start..seed_start + count`.
pub(crate) fn writer_ptx(
    ctx_tc: &crate::backend::toolchain::Toolchain,
    seed_start: u64,
    count: u64,
) -> Result<(Vec<crate::abi::types::TypeDef>, String), GraffitiGpuError> {
    let types = random_batch(seed_start, count as usize);
    let src = graffiti::graffiti_source(&types)?;
    let ptx = ctx_tc
        .nvrtc(&src, "gpucts_graffiti.cu", NVRTC_OPTS)
        .map_err(GraffitiGpuError::Nvrtc)?;
    Ok((types, ptx))
}

/// Pass when every type's bytes agree with the engine; otherwise fail naming each type and
/// the fields whose bytes are wrong.
pub fn status(results: &[TypeResult]) -> CaseStatus {
    let mut mismatches = Vec::new();
    let mut errors = Vec::new();
    for r in results {
        match &r.verdict {
            oracle::Agreement::Agree => {}
            oracle::Agreement::Mismatch(m) => mismatches.push(format!("{}: {m}", r.name)),
            oracle::Agreement::Error(e) => errors.push(format!("{}: {e}", r.name)),
        }
    }
    if !mismatches.is_empty() {
        let names: Vec<&str> = results
            .iter()
            .filter(|r| matches!(r.verdict, oracle::Agreement::Mismatch(_)))
            .map(|r| r.name.as_str())
            .collect();
        return CaseStatus::fail_detail(
            "every member's graffiti at the engine's placement",
            format!(
                "{} of {} types differ: {}",
                names.len(),
                results.len(),
                names.join(", ")
            ),
            mismatches.join("\n"),
        );
    }
    if !errors.is_empty() {
        return CaseStatus::error(errors.join("\n"));
    }
    CaseStatus::pass_with(format!(
        "{} types: the device's bytes match the engine's layout",
        results.len()
    ))
}

/// The `abi.graffiti.*` case.
pub(crate) fn graffiti_case(ctx: &CaseContext, seed_start: u64, count: u64) -> CaseStatus {
    let run = || -> Result<CaseStatus, GraffitiGpuError> {
        let (types, ptx) = writer_ptx(ctx.toolchain, seed_start, count)?;
        let len = graffiti::buffer_len(&types)? as usize;
        let s = ctx.open_gpu()?;
        let m = s.load_ptx(&ptx)?;
        let f = s.function(&m, graffiti::KERNEL)?;
        let out = s.buffer(len)?;
        s.memset(out.ptr, 0, len)?;
        let cfg = LaunchConfig {
            grid: 1,
            block: 1,
            shared_bytes: 0,
        };
        // SAFETY: the writer kernel takes one `.param .u64` (the output buffer's address).
        unsafe { s.launch_timed(f, cfg, &[KernelArg::Ptr(out.ptr)]) }?;
        let mut bytes = vec![0u8; len];
        s.copy_to_host(&mut bytes, out.ptr)?;
        Ok(status(&graffiti::judge(&types, &bytes)))
    };
    run().unwrap_or_else(CaseStatus::error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::toolchain::Toolchain;
    use crate::capability::Capability;

    // Offline half of the oracle: the kernel NVRTC makes for a batch is valid PTX for the
    // target (ptxas assembles it) and has the entry point and the one pointer parameter the
    // launch passes.
    #[test]
    fn nvrtc_graffiti_kernel_assembles_with_ptxas() {
        let tc = Toolchain::discover_system();
        crate::require!(
            tc.has(Capability::Nvrtc) && tc.has(Capability::Ptxas),
            "nvrtc and ptxas"
        );
        let (_, ptx) = writer_ptx(&tc, 0, 100).unwrap();
        assert!(crate::ptx::instr::function_names(&ptx).contains(&graffiti::KERNEL.to_string()));
        let entry = ptx
            .lines()
            .skip_while(|l| !l.contains(&format!(".entry {}", graffiti::KERNEL)))
            .take_while(|l| !l.contains(')'))
            .filter(|l| l.contains(".param"))
            .count();
        assert_eq!(entry, 1, "{ptx}");
        tc.ptxas(&ptx, "sm_90", &[]).unwrap();
    }

    // Every batch the suite launches (seeds 0..2000) compiles with NVRTC and assembles for
    // sm_90. Slow (20 compilations); run with `--ignored`.
    #[test]
    #[ignore = "slow: 20 NVRTC compilations and ptxas runs; run with --ignored"]
    fn every_suite_batch_assembles_with_ptxas() {
        let tc = Toolchain::discover_system();
        crate::require!(
            tc.has(Capability::Nvrtc) && tc.has(Capability::Ptxas),
            "nvrtc and ptxas"
        );
        for start in (0..2000).step_by(100) {
            let (_, ptx) = writer_ptx(&tc, start, 100).unwrap();
            tc.ptxas(&ptx, "sm_90", &[])
                .unwrap_or_else(|e| panic!("seeds {start}..{}: {e}", start + 100));
        }
        eprintln!("20 graffiti batches (2,000 types) assembled for sm_90");
    }

    // The engine's own bytes, placed at each type's slot, pass; one wrong byte fails and the
    // failure names the type.
    #[test]
    fn status_passes_engine_bytes_and_names_a_corrupted_type() {
        let types = random_batch(40, 5);
        let len = graffiti::buffer_len(&types).unwrap() as usize;
        let offs = graffiti::offsets(&types).unwrap();
        let mut buf = vec![0u8; len];
        for (t, o) in types.iter().zip(&offs) {
            let b = graffiti::expected_bytes(t).unwrap();
            buf[*o as usize..][..b.len()].copy_from_slice(&b);
        }
        assert!(matches!(
            status(&graffiti::judge(&types, &buf)),
            CaseStatus::Pass { .. }
        ));
        // Corrupt the first written byte of the third type.
        let third = offs[2] as usize;
        let at = (third..len).find(|&i| buf[i] != 0).unwrap();
        buf[at] ^= 0x01;
        match status(&graffiti::judge(&types, &buf)) {
            CaseStatus::Fail { observed, .. } => {
                assert!(observed.contains(&types[2].name), "{observed}")
            }
            other => panic!("{other:?}"),
        }
    }
}
