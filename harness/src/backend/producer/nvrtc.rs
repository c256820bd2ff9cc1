//! NVRTC: CUDA C++ -> PTX (the nvcc front end as a library).

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "nvrtc",
    aliases: &[],
    describe: "NVRTC (CUDA C++)",
    tool: "NVRTC",
    capability: Some(Capability::Nvrtc),
    also_requires: &[],
    accepts: &[Language::CudaCpp],
    hand_written: false,
    // NVRTC 12.9 rejects compute_30/35/37 ("invalid value for --gpu-architecture") and takes
    // compute_50.
    oldest_target: "sm_50",
    version: tool_version,
    compile,
    // The libcu++/CCCL headers the toolchain gives NVRTC (`-I`): what a source's `#include
    // <cuda/atomic>` compiles against is part of what NVRTC's output depends on.
    extra_tool: Some(|tc| tc.component(Capability::Cccl).map(|c| c.path.clone())),
    user: None,
};

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    let arch = format!("--gpu-architecture={}", src.compute());
    let mut opts = vec![arch.as_str()];
    opts.extend_from_slice(src.options.nvrtc);
    tc.nvrtc(src.text, src.file_name, &opts)
}
