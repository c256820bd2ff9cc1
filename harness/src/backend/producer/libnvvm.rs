//! libNVVM: NVVM IR (the LLVM 7 dialect with typed pointers) -> PTX.

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "libnvvm",
    aliases: &["nvvm"],
    describe: "libNVVM (NVVM IR)",
    tool: "libNVVM",
    capability: Some(Capability::Libnvvm),
    also_requires: &[],
    accepts: &[Language::NvvmIr],
    hand_written: false,
    // libNVVM 2.0: "-arch=compute_35 is an unsupported option"; compute_50 is taken.
    oldest_target: "sm_50",
    version: tool_version,
    compile,
    extra_tool: None,
    user: None,
};

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    let arch = format!("-arch={}", src.compute());
    let mut opts = vec![arch.as_str()];
    opts.extend_from_slice(src.options.nvvm);
    tc.nvvm(src.text, &opts)
}
