//! numba-cuda (PyPI `numba-cuda`): Python functions compiled by numba's CUDA target to NVVM
//! IR and by libNVVM to PTX, for a target without a GPU. Its C ABI device functions
//! (`cuda.compile(..., device=True, abi="c")`) are what other producers' code calls, so they
//! are bound by ptx-interop 13.2 §2.3 like any C function. How a source is compiled:
//! [`crate::backend::toolchain::python`].

use super::{tool_version, Language, ProducerDef, Source};
use crate::backend::toolchain::python::FrontEnd;
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;

pub(crate) static DEF: ProducerDef = ProducerDef {
    name: "numba-cuda",
    aliases: &["numba"],
    describe: "numba-cuda (Python, abi=\"c\" device functions)",
    tool: "numba-cuda",
    capability: Some(Capability::NumbaCuda),
    // numba-cuda runs the toolchain's libNVVM, and asks NVRTC for the targets it knows.
    also_requires: &[Capability::Libnvvm, Capability::Nvrtc],
    accepts: &[Language::Numba],
    hand_written: false,
    // numba-cuda 0.30.4 takes the oldest target its NVRTC lists as supported (CUDA 12.9's:
    // sm_50), and compiles for it.
    oldest_target: "sm_50",
    version: tool_version,
    compile,
    // libNVVM (the toolchain's) compiles numba's IR: its path keys the caches too.
    extra_tool: Some(|tc| tc.component(Capability::Libnvvm).map(|c| c.path.clone())),
    user: None,
};

fn compile(tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
    tc.python_ptx(FrontEnd::NumbaCuda, src.text, src.arch)
}
