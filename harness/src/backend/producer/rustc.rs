//! rustc's `nvptx64-nvidia-cuda` target (LLVM 22's NVPTX back end, through rustc): Rust as a
//! PTX producer. ptx-interop 13.2 binds every generator of PTX; Rust's `extern "C"` promises
//! C's calling convention, so a Rust function must be callable from every other producer's
//! PTX and call theirs. How the sources are compiled (the `core` gpucts builds once):
//! [`crate::backend::toolchain::rustc`].

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "rustc",
    aliases: &["rust"],
    describe: "rustc (Rust, nvptx64-nvidia-cuda)",
    tool: "rustc",
    capability: Some(Capability::Rustc),
    also_requires: &[],
    accepts: &[Language::Rust],
    hand_written: false,
    // Measured with rustc 1.95.0 (LLVM 22.1.2): `-Ctarget-cpu=sm_20` still compiles
    // (`.version 3.2`); LLVM knows no older NVPTX processor.
    oldest_target: "sm_20",
    version: tool_version,
    compile,
    extra_tool: None,
    user: None,
};

/// The crate name a source's file name gives (`xcall_caller.cu` -> `xcall_caller`): the
/// callers and callees of one link are different crates.
fn crate_name(file_name: &str) -> String {
    let stem = file_name.split('.').next().unwrap_or("gpucts");
    let name: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        format!("gpucts_{name}")
    } else {
        name
    }
}

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    tc.rustc_ptx(
        src.text,
        src.arch,
        &crate_name(src.file_name),
        src.options.rustc,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn crate_names_are_identifiers() {
        assert_eq!(super::crate_name("xcall_caller.cu"), "xcall_caller");
        assert_eq!(super::crate_name("a-b.rs"), "a_b");
        assert_eq!(super::crate_name("9.rs"), "gpucts_9");
    }
}
