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
use crate::backend::producer::{Language, Options, Producer, Source};
use crate::backend::toolchain::{ClangLang, ToolError, Toolchain};
use crate::capability::Capability;

/// Types per compilation.
pub const BATCH: u64 = 25;

/// One debug flavour: a producer, the language it is given the kernels in, and the options
/// that make it write debug information.
#[derive(Debug)]
struct Flavour {
    /// The spelling in suites and case ids.
    name: &'static str,
    /// The producer's name in the one vocabulary ([`Producer::parse`]).
    producer: &'static str,
    language: Language,
    debug: Options<'static>,
    /// Whether it writes `.debug_info` (not only line tables).
    full: bool,
}

const NO_OPTIONS: Options<'static> = Options {
    nvrtc: &[],
    clang: &[],
    nvvm: &[],
    llc: &[],
    rustc: &[],
};

/// The flavours, one row each.
static FLAVOURS: &[Flavour] = &[
    // NVRTC `-G`: full DWARF.
    Flavour {
        name: "nvrtc_g",
        producer: "nvrtc",
        language: Language::CudaCpp,
        debug: Options {
            nvrtc: &["-std=c++17", "-G"],
            ..NO_OPTIONS
        },
        full: true,
    },
    // NVRTC `-lineinfo`: `.file`/`.loc` only.
    Flavour {
        name: "nvrtc_lineinfo",
        producer: "nvrtc",
        language: Language::CudaCpp,
        debug: Options {
            nvrtc: &["-std=c++17", "-lineinfo"],
            ..NO_OPTIONS
        },
        full: false,
    },
    // clang-19 `-g`, CUDA device code.
    Flavour {
        name: "clang_g",
        producer: "clang",
        language: Language::ClangCuda,
        debug: Options {
            clang: &["-g"],
            ..NO_OPTIONS
        },
        full: true,
    },
    // llc-19 on the IR clang-19 writes with `-g -emit-llvm` (the debug metadata is clang's).
    Flavour {
        name: "llc_g",
        producer: "llvm",
        language: Language::LlvmIr,
        debug: NO_OPTIONS,
        full: true,
    },
    // libNVVM `-g -opt=0` on NVVM IR with debug metadata (what NVRTC's `-G` is to CUDA).
    Flavour {
        name: "nvvm_g",
        producer: "libnvvm",
        language: Language::NvvmIr,
        debug: Options {
            nvvm: &["-g", "-opt=0"],
            ..NO_OPTIONS
        },
        full: true,
    },
    // libNVVM `-g` at its default optimisation level (`-opt=3`).
    Flavour {
        name: "nvvm_g_opt",
        producer: "libnvvm",
        language: Language::NvvmIr,
        debug: Options {
            nvvm: &["-g"],
            ..NO_OPTIONS
        },
        full: true,
    },
];

/// A producer's debug flavour ([`FLAVOURS`]); suites spell it `nvrtc_g`, `clang_g`, ...
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct DebugProducer(u8);

impl std::fmt::Debug for DebugProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> Deserialize<'de> for DebugProducer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DebugProducer::parse(&s).ok_or_else(|| {
            let names: Vec<&str> = FLAVOURS.iter().map(|f| f.name).collect();
            serde::de::Error::custom(format!(
                "unknown variant `{s}`, expected one of {}",
                names.join(", ")
            ))
        })
    }
}

impl DebugProducer {
    /// Every flavour whose producer is registered.
    pub fn all() -> impl Iterator<Item = DebugProducer> {
        (0..FLAVOURS.len())
            .map(|i| DebugProducer(i as u8))
            .filter(|f| Producer::parse(f.flavour().producer).is_some())
    }

    pub fn parse(s: &str) -> Option<DebugProducer> {
        DebugProducer::all().find(|f| f.name() == s)
    }

    fn flavour(self) -> &'static Flavour {
        &FLAVOURS[usize::from(self.0)]
    }

    pub fn name(self) -> &'static str {
        self.flavour().name
    }

    /// The compiler behind this debug flavour, in the one producer vocabulary.
    pub fn producer(self) -> Producer {
        Producer::named(self.flavour().producer)
    }

    pub fn requires(self) -> Vec<Capability> {
        let mut caps = self.producer().requires();
        caps.push(Capability::Ptxas);
        caps
    }

    /// The language the flavour is given its source in.
    pub(crate) fn language(self) -> Language {
        self.flavour().language
    }

    /// Whether the producer writes `.debug_info` (not only line tables).
    pub fn full(self) -> bool {
        self.flavour().full
    }
}

pub(super) const CLANG_PRELUDE: &str = "#define __device__ __attribute__((device))\n\
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

/// The producer's PTX for batch `batch` of [`BATCH`] types, and how many types it has.
fn compile(tc: &Toolchain, p: DebugProducer, batch: u64) -> Result<(String, usize), ToolError> {
    let language = p.flavour().language;
    if language == Language::NvvmIr {
        // libNVVM reads NVVM IR, not CUDA: its own generated types.
        let types = nvvm_ir::types(batch, BATCH as usize);
        let ptx = compile_src(tc, p, &nvvm_ir::module(&types))?;
        return Ok((ptx, types.len()));
    }
    let types = random_batch(batch * BATCH, BATCH as usize);
    let dialect = match language {
        Language::CudaCpp => Dialect::Cuda,
        // clang-19 reads the source without CUDA's headers (the LLVM IR flavour: clang-19
        // writes the IR from that same source first)
        Language::ClangCuda | Language::C | Language::LlvmIr => Dialect::C,
        Language::NvvmIr | Language::Ptx | Language::Rust | Language::Triton | Language::Numba => {
            return Err(ToolError::Failed {
                tool: p.name().to_string(),
                log: format!("no generated DWARF source for {language:?}"),
            })
        }
    };
    Ok((compile_src(tc, p, &source(&types, dialect))?, types.len()))
}

/// Compile `text` (CUDA C++ for NVRTC, clang's CUDA otherwise, NVVM IR for libNVVM) with the
/// flavour's producer and debug options; for the LLVM IR flavour, clang-19 first writes the
/// IR with its debug metadata.
pub(super) fn compile_src(
    tc: &Toolchain,
    p: DebugProducer,
    text: &str,
) -> Result<String, ToolError> {
    let flavour = p.flavour();
    let ir;
    let text = if flavour.language == Language::LlvmIr {
        ir = tc.clang_stdout(
            text,
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
        ir.as_str()
    } else {
        text
    };
    let src = Source::new(flavour.language, text)
        .file_name("gpucts_dwarf.cu")
        .options(flavour.debug);
    p.producer().compile(tc, &src)
}

/// Why a producer's batch is not clean: the producer or ptxas failed, the output does not
/// read, or `gpucts dwarf check` found something (one line per finding).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BatchFindings {
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
pub(crate) fn check_batch(
    tc: &Toolchain,
    p: DebugProducer,
    batch: u64,
) -> Result<String, BatchFindings> {
    let (ptx, types) = compile(tc, p, batch).map_err(BatchFindings::Producer)?;
    let name = format!("{}-batch{batch}.ptx", p.name());
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
        "PTX: {} variables' address classes match their locations, {} .loc rows found; cubin: {} variables, {} FDEs in .debug_frame",
        r.classes_compared, r.locs_found, c.classes_compared, c.fdes
    )
}

/// A small kernel with a known result, in the producer's debug PTX (for the GPU cases).
pub(crate) fn compile_kernel(tc: &Toolchain, p: DebugProducer) -> Result<String, ToolError> {
    let body =
        "extern \"C\" __global__ void gpucts_dwarf_add(unsigned *p, unsigned a, unsigned b) {\n\
                \x20 unsigned s = a + b;\n  p[threadIdx.x] = s * 2 + threadIdx.x;\n}\n";
    let src = match p.flavour().language {
        Language::CudaCpp => body.to_string(),
        Language::NvvmIr => nvvm_ir::add_kernel(),
        _ => format!(
            "{CLANG_PRELUDE}{}",
            body.replace("threadIdx.x", "__nvvm_read_ptx_sreg_tid_x()")
        ),
    };
    compile_src(tc, p, &src)
}
