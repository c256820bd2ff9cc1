//! clang-19: CUDA device C++ or C -> PTX for `nvptx64-nvidia-cuda`.

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::{ClangLang, ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "clang",
    aliases: &["clang-19"],
    describe: "clang-19 (C / CUDA device C++)",
    tool: "clang-19",
    capability: Some(Capability::Clang),
    also_requires: &[],
    accepts: &[Language::ClangCuda, Language::C],
    hand_written: false,
    // clang-19 goes down to sm_20 ("unsupported CUDA gpu architecture: sm_10" below).
    oldest_target: "sm_20",
    version: tool_version,
    compile,
    extra_tool: None,
    user: None,
};

/// clang-19 on a CUDA or C source, with the area's arguments and then `own`.
pub(super) fn compile_with(
    tc: &Toolchain,
    src: &Source<'_>,
    own: &[&str],
) -> Result<String, ToolError> {
    let lang = match src.language {
        Language::C => ClangLang::C,
        Language::ClangCuda => ClangLang::Cuda,
        // not in `accepts` (Producer::compile refuses them first); a direct caller is told
        Language::CudaCpp
        | Language::NvvmIr
        | Language::LlvmIr
        | Language::Ptx
        | Language::Rust
        | Language::Triton
        | Language::Numba => {
            return Err(super::refuses(&DEF, src));
        }
    };
    let mut args = src.options.clang.to_vec();
    args.extend_from_slice(own);
    tc.clang_ptx_for(src.text, lang, src.arch, &args)
}

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    compile_with(tc, src, &[])
}
