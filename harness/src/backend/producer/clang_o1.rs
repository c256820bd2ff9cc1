//! clang-19 at `-O1`: the same front end and NVPTX back end as [`super::clang`], with `-O1`
//! after the area's arguments (clang takes the last `-O`). The lighter pipeline (no loop
//! vectoriser, less inlining and instruction combining) is a second lowering of the same
//! source, so a calling-sequence or atomics-mapping choice that depends on optimisation shows
//! as a difference between `clang` and `clang-o1`.

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "clang-o1",
    aliases: &["clang-19-O1"],
    describe: "clang-19 -O1 (C / CUDA device C++)",
    tool: "clang-19 -O1",
    capability: Some(Capability::Clang),
    also_requires: &[],
    accepts: &[Language::ClangCuda, Language::C],
    hand_written: false,
    oldest_target: "sm_20",
    version: tool_version,
    compile,
    extra_tool: None,
    user: None,
};

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    super::clang::compile_with(tc, src, &["-O1"])
}
