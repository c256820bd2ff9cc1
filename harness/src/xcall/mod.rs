//! The `xcall` area: a caller compiled by one PTX producer calls a callee compiled by another,
//! and the pieces must link (ptx-interop 13.2 §2.3: producers that follow the calling sequence
//! interoperate).

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::backend::toolchain::{ClangLang, LinkInputKind, ToolError};
use crate::capability::Capability;
use crate::cubin::Cubin;
use crate::outcome::CaseStatus;

/// A producer of PTX from CUDA C++.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Producer {
    Nvrtc,
    Clang,
}

impl Producer {
    fn capability(self) -> Capability {
        match self {
            Producer::Nvrtc => Capability::Nvrtc,
            Producer::Clang => Capability::Clang,
        }
    }

    /// Relocatable device code, so an external device function may stay unresolved.
    fn compile(self, ctx: &CaseContext, source: &str, name: &str) -> Result<String, ToolError> {
        match self {
            Producer::Nvrtc => ctx.toolchain.nvrtc(
                source,
                name,
                &[
                    "--gpu-architecture=compute_90",
                    "--relocatable-device-code=true",
                ],
            ),
            Producer::Clang => {
                ctx.toolchain
                    .clang_ptx(source, ClangLang::Cuda, &["-fgpu-rdc", "-O2"])
            }
        }
    }
}

/// The `check:` vocabulary of `suites/xcall.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum XcallCheck {
    /// A kernel from `caller` passes an aggregate `{int; char}` by value to a device function
    /// from `callee`; nvJitLink must link the two PTX modules into one sm_90 cubin that holds
    /// both functions.
    LinkAggregate { caller: Producer, callee: Producer },
}

// Attributes rather than the __device__/__global__ macros, so the same text compiles with
// NVRTC and with clang's -nocudainc.
const TYPES: &str = "struct S { int a; char b; };\n";
const CALLER: &str = "extern \"C\" __attribute__((device)) int gpucts_callee(struct S s);\n\
extern \"C\" __attribute__((global)) void gpucts_caller(int *out) { struct S s = {40, 2}; *out = gpucts_callee(s); }\n";
const CALLEE: &str = "extern \"C\" __attribute__((device)) __attribute__((noinline)) int gpucts_callee(struct S s) { return s.a + s.b; }\n";

fn link_aggregate(ctx: &CaseContext, caller: Producer, callee: Producer) -> CaseStatus {
    let caller_ptx = match caller.compile(ctx, &format!("{TYPES}{CALLER}"), "caller.cu") {
        Ok(p) => p,
        Err(e) => return CaseStatus::error(format!("compiling the caller: {e}")),
    };
    let callee_ptx = match callee.compile(ctx, &format!("{TYPES}{CALLEE}"), "callee.cu") {
        Ok(p) => p,
        Err(e) => return CaseStatus::error(format!("compiling the callee: {e}")),
    };
    let linked = ctx.toolchain.nvjitlink(
        &[
            (LinkInputKind::Ptx, "caller.ptx", caller_ptx.as_bytes()),
            (LinkInputKind::Ptx, "callee.ptx", callee_ptx.as_bytes()),
        ],
        &["-arch=sm_90"],
    );
    let cubin = match linked {
        Ok(c) => c,
        Err(e) => {
            return CaseStatus::fail_detail(
                "the two modules link",
                "nvJitLink refused them",
                e.to_string(),
            )
        }
    };
    match Cubin::parse(&cubin) {
        Ok(elf) if elf.has_function("gpucts_caller") && elf.has_function("gpucts_callee") => {
            CaseStatus::pass()
        }
        Ok(_) => CaseStatus::fail(
            "a cubin holding gpucts_caller and gpucts_callee",
            "a function is missing",
        ),
        Err(e) => CaseStatus::error(e),
    }
}

impl Check for XcallCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            XcallCheck::LinkAggregate { caller, callee } => {
                vec![
                    caller.capability(),
                    callee.capability(),
                    Capability::Nvjitlink,
                ]
            }
        }
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            XcallCheck::LinkAggregate { caller, callee } => link_aggregate(ctx, *caller, *callee),
        }
    }
}
