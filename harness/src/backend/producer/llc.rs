//! LLVM IR -> PTX through LLVM 19's NVPTX back end (`llc-19`). Spelled `llvm` in suites.

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::{llc, ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "llvm",
    aliases: &["llc", "llc-19"],
    describe: "llc-19 (LLVM IR, NVPTX back end)",
    tool: "llc-19",
    // llc-19 ships with clang-19 (Debian's llvm-19); the Clang probe checks both.
    capability: Some(Capability::Clang),
    also_requires: &[],
    accepts: &[Language::LlvmIr],
    hand_written: false,
    // llc-19: "'sm_10' is not a recognized processor"; sm_20 is.
    oldest_target: "sm_20",
    version: tool_version,
    compile,
    extra_tool: Some(|tc| llc::llc_path(tc).ok()),
    user: None,
};

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    llc::llc_ptx(tc, src.text, src.arch, src.options.llc)
}
