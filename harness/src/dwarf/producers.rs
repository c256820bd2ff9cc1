//! Producers' debug PTX (ptx-interop 13.2 §5.1): NVRTC `-G` and `-lineinfo`, clang-19 `-g`
//! (CUDA device code), llc-19 on the IR clang writes with `-g`, and libNVVM `-g` on NVVM IR
//! with debug metadata ([`super::nvvm_ir`]). Each compiles kernels over random types (the abi
//! generator's; for libNVVM, scalars, arrays, pointers and structs): a `__device__`, a
//! `__constant__`, a `__shared__` and a local of each type, the type by value or by pointer as
//! a parameter. The PTX, and the cubin ptxas `-g` makes of it, go through `gpucts dwarf check`.

use std::fmt::Write as _;

use serde::Deserialize;

use super::check::{check_elf, check_ptx, Report, Unreadable};
use super::nvvm_ir;
use crate::abi::random::random_batch;
use crate::abi::render::render_c;
use crate::abi::types::{Dialect, TypeDef};
use crate::backend::producer::Producer;
use crate::backend::toolchain::llc::llc_ptx;
use crate::backend::toolchain::{ClangLang, ToolError, Toolchain};
use crate::capability::Capability;

/// Types per compilation.
pub const BATCH: u64 = 25;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DebugProducer {
    /// NVRTC `-G`: full DWARF.
    NvrtcG,
    /// NVRTC `-lineinfo`: `.file`/`.loc` only.
    NvrtcLineinfo,
    /// clang-19 `-g`, CUDA device code.
    ClangG,
    /// clang-19 `-g -emit-llvm`, then llc-19.
    LlcG,
    /// libNVVM `-g -opt=0` on NVVM IR with debug metadata (what NVRTC's `-G` is to CUDA).
    NvvmG,
    /// libNVVM `-g` at its default optimisation level (`-opt=3`).
    NvvmGOpt,
}

impl DebugProducer {
    /// The compiler behind this debug flavour, in the one producer vocabulary.
    pub fn producer(self) -> Producer {
        match self {
            DebugProducer::NvrtcG | DebugProducer::NvrtcLineinfo => Producer::Nvrtc,
            DebugProducer::ClangG => Producer::Clang,
            DebugProducer::LlcG => Producer::Llc,
            DebugProducer::NvvmG | DebugProducer::NvvmGOpt => Producer::Libnvvm,
        }
    }

    pub fn requires(self) -> Vec<Capability> {
        let mut caps = self.producer().requires();
        caps.push(Capability::Ptxas);
        caps
    }

    /// Whether the producer writes `.debug_info` (not only line tables).
    pub fn full(self) -> bool {
        self != DebugProducer::NvrtcLineinfo
    }
}

const CLANG_PRELUDE: &str = "#define __device__ __attribute__((device))\n\
#define __constant__ __attribute__((constant))\n\
#define __global__ __attribute__((global))\n\
#define __shared__ __attribute__((shared))\n";

/// CUDA source: the types, and per type a kernel using it in every state space.
pub fn source(types: &[TypeDef], dialect: Dialect) -> String {
    let mut s = String::new();
    if dialect == Dialect::C {
        s += CLANG_PRELUDE;
    }
    s += &render_c(types, dialect);
    for (i, t) in types.iter().enumerate() {
        let n = &t.name;
        let _ = writeln!(
            s,
            "__device__ {n} gpucts_g{i};\n__constant__ {n} gpucts_c{i};\n\
             extern \"C\" __global__ void gpucts_k{i}({n} *out, {n} in) {{\n\
             \x20 __shared__ {n} s;\n  {n} l = in;\n  s = l;\n  gpucts_g{i} = s;\n  *out = gpucts_c{i};\n}}"
        );
    }
    s
}

/// libNVVM's options: the other producers' target, `-g` for full DWARF, and the
/// optimisation level.
fn nvvm_options(p: DebugProducer) -> &'static [&'static str] {
    if p == DebugProducer::NvvmGOpt {
        &["-arch=compute_90", "-g"]
    } else {
        &["-arch=compute_90", "-g", "-opt=0"]
    }
}

/// The producer's PTX for batch `batch` of [`BATCH`] types, and how many types it has.
fn compile(tc: &Toolchain, p: DebugProducer, batch: u64) -> Result<(String, usize), ToolError> {
    if matches!(p, DebugProducer::NvvmG | DebugProducer::NvvmGOpt) {
        // libNVVM reads NVVM IR, not CUDA: its own generated types.
        let types = nvvm_ir::types(batch, BATCH as usize);
        let ptx = tc.nvvm(&nvvm_ir::module(&types), nvvm_options(p))?;
        return Ok((ptx, types.len()));
    }
    let types = random_batch(batch * BATCH, BATCH as usize);
    let dialect = match p {
        DebugProducer::NvrtcG | DebugProducer::NvrtcLineinfo => Dialect::Cuda,
        _ => Dialect::C,
    };
    Ok((compile_src(tc, p, &source(&types, dialect))?, types.len()))
}

fn compile_src(tc: &Toolchain, p: DebugProducer, src: &str) -> Result<String, ToolError> {
    let arch = "--gpu-architecture=compute_90";
    match p {
        DebugProducer::NvrtcG => tc.nvrtc(src, "gpucts_dwarf.cu", &[arch, "-std=c++17", "-G"]),
        DebugProducer::NvrtcLineinfo => {
            tc.nvrtc(src, "gpucts_dwarf.cu", &[arch, "-std=c++17", "-lineinfo"])
        }
        DebugProducer::ClangG => tc.clang_ptx(src, ClangLang::Cuda, &["-g"]),
        DebugProducer::LlcG => {
            let ir = tc.clang_stdout(
                src,
                ClangLang::Cuda,
                &[
                    "--cuda-device-only",
                    "--cuda-gpu-arch=sm_90",
                    "-nocudainc",
                    "-nocudalib",
                    "-g",
                    "-S",
                    "-emit-llvm",
                    "-o",
                    "-",
                ],
            )?;
            llc_ptx(tc, &ir, "sm_90", &[])
        }
        DebugProducer::NvvmG | DebugProducer::NvvmGOpt => tc.nvvm(src, nvvm_options(p)),
    }
}

/// Why a producer's batch is not clean: the producer or ptxas failed, the output does not
/// read, or `gpucts dwarf check` found something (one line per finding).
#[derive(Debug, thiserror::Error)]
pub enum BatchFindings {
    #[error("the producer failed: {0}")]
    Producer(ToolError),
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    #[error("ptxas -g: {0}")]
    Ptxas(ToolError),
    #[error("{}", .0.join("\n"))]
    Findings(Vec<String>),
}

/// Check one batch: the PTX, and the cubin ptxas `-g` builds from it. Ok(note) when there is
/// no finding; Err(findings) otherwise.
pub fn check_batch(tc: &Toolchain, p: DebugProducer, batch: u64) -> Result<String, BatchFindings> {
    let (ptx, types) = compile(tc, p, batch).map_err(BatchFindings::Producer)?;
    let name = format!("{p:?}-batch{batch}.ptx");
    let r = check_ptx(&name, &ptx, Some(tc))?;
    let cubin = tc
        .ptxas(&ptx, "sm_90", &["-g"])
        .map_err(BatchFindings::Ptxas)?;
    let c = check_elf(&format!("{name}.cubin"), &cubin)?;
    let mut all: Vec<String> = r.findings.iter().map(|f| f.to_string()).collect();
    all.extend(c.findings.iter().map(|f| f.to_string()));
    // Teeth: a full-DWARF producer must have given the check variables to compare.
    let want = if p.full() { types * 3 } else { 0 };
    if r.classes_compared < want {
        all.push(format!(
            "only {} variables had a location to compare with their address class (want ≥ {want})",
            r.classes_compared
        ));
    }
    if !p.full() && !ptx.contains(".loc") {
        all.push("no .loc directive in -lineinfo output".into());
    }
    if all.is_empty() {
        Ok(note(&r, &c))
    } else {
        Err(BatchFindings::Findings(all))
    }
}

fn note(r: &Report, c: &Report) -> String {
    format!(
        "PTX: {} variables' address classes match their locations, {} .loc rows found; cubin: {} variables",
        r.classes_compared, r.locs_found, c.classes_compared
    )
}

/// A small kernel with a known result, in the producer's debug PTX (for the GPU cases).
pub fn compile_kernel(tc: &Toolchain, p: DebugProducer) -> Result<String, ToolError> {
    let body =
        "extern \"C\" __global__ void gpucts_dwarf_add(unsigned *p, unsigned a, unsigned b) {\n\
                \x20 unsigned s = a + b;\n  p[threadIdx.x] = s * 2 + threadIdx.x;\n}\n";
    let src = match p {
        DebugProducer::NvrtcG | DebugProducer::NvrtcLineinfo => body.to_string(),
        DebugProducer::NvvmG | DebugProducer::NvvmGOpt => nvvm_ir::add_kernel(),
        _ => format!(
            "{CLANG_PRELUDE}{}",
            body.replace("threadIdx.x", "__nvvm_read_ptx_sreg_tid_x()")
        ),
    };
    compile_src(tc, p, &src)
}
