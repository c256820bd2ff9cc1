//! Triton (PyPI `triton`): `@triton.jit` Python kernels compiled by Triton's own MLIR
//! pipeline and the LLVM NVPTX back end it bundles, for a target without a GPU. Its
//! `tl.atomic_*` operations take `sem=` and `scope=`: ptx-interop 13.2 ch. 4's orders and
//! scopes, written directly. How a source is compiled: [`crate::backend::toolchain::python`].

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::python::FrontEnd;
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "triton",
    aliases: &[],
    describe: "Triton (Python @triton.jit kernels)",
    tool: "Triton",
    capability: Some(Capability::Triton),
    also_requires: &[],
    accepts: &[Language::Triton],
    hand_written: false,
    // Measured with Triton 3.9.0: a release `atomic_add` compiles for sm_70; for sm_60 and
    // older Triton still writes `.release` and its own ptxas refuses the module.
    oldest_target: "sm_70",
    version: tool_version,
    compile,
    extra_tool: None,
    user: None,
};

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    tc.python_ptx(FrontEnd::Triton, src.text, src.arch)
}
