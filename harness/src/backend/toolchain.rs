//! The offline toolchain: ptxas, NVRTC, nvJitLink, libNVVM, nvdisasm, cuobjdump, libcu++
//! headers, and clang-19 with the NVPTX target.
//!
//! (API skeleton; discovery and the managed wheels are filled in by the foundation.)

use std::path::PathBuf;

use crate::capability::Capability;

/// A tool run that did not produce its output.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0} is not available")]
    NotAvailable(Capability),
    #[error("{tool} failed: {log}")]
    Failed { tool: String, log: String },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Input kinds for [`Toolchain::nvjitlink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkInputKind {
    Ptx,
    Cubin,
}

/// Languages clang compiles for NVPTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClangLang {
    C,
    /// CUDA device code (`-x cuda --cuda-device-only`).
    Cuda,
    /// LLVM IR text.
    LlvmIr,
}

#[derive(Debug, Clone, Default)]
pub struct Toolchain {
    pub ptxas: Option<PathBuf>,
}
