//! The `syscalls` area: ptx-interop 13.2 ch. 3, the driver-provided functions `vprintf`,
//! `malloc`, `free` and `__assertfail`.
//!
//! - [`probes`]: the chapter's prototypes (32- and 64-bit) and wrong ones against ptxas, the
//!   linter and the driver JIT;
//! - [`producers`]: what NVRTC, clang-19, libNVVM and llc-19 emit for printf / malloc / free /
//!   assert, linted, and the vprintf argument buffer each builds against one documented layout;
//! - [`gpu`]: the driver's behaviour (printf formatting and limits, the malloc heap, assert).

pub(crate) mod charsize;
pub mod gpu;
pub(crate) mod probes;
pub mod producers;
pub(crate) mod vprintf_status;

use serde::Deserialize;

pub use crate::abi::lint::syscalls::Syscall;
use crate::area::{CaseContext, Check};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/syscalls.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum SyscallsCheck {
    /// A module that declares `call` with the guide's prototype for `address_size` (every
    /// pointer `t1` and `size_t` `t2` as wide as an address) and calls it from a kernel
    /// assembles for `arch`, and the cubin leaves the function undefined for the driver.
    GuidePrototype {
        call: Syscall,
        #[serde(default = "default_address_size")]
        address_size: u32,
        #[serde(default = "default_arch")]
        arch: String,
    },
    /// A prototype or call shape of [`probes::PROBES`] through one tool: ptxas does what was
    /// measured; the linter's findings are the chapter's verdict; the driver JIT (GPU) does
    /// what ptxas does.
    Probe { tool: ProbeTool, probe: String },
    /// A producer's PTX for one program passes the ch. 3 lint.
    ProducerLint {
        #[serde(deserialize_with = "producers::producer_in_view")]
        producer: producers::Producer,
        program: producers::Program,
    },
    /// The vprintf argument buffer a producer builds for printf mix `mix` has the documented
    /// layout.
    VprintfLayout {
        #[serde(deserialize_with = "producers::producer_in_view")]
        producer: producers::Producer,
        mix: usize,
    },
    /// Every `__assertfail` call in a producer's assert program passes charSize 1.
    AssertCharSize {
        #[serde(deserialize_with = "producers::producer_in_view")]
        producer: producers::Producer,
    },
    /// The driver's behaviour on a GPU.
    Gpu { case: gpu::GpuCase },
}

/// Who judges a probe module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ProbeTool {
    Ptxas,
    Lint,
    Jit,
}

fn default_address_size() -> u32 {
    64
}

fn default_arch() -> String {
    "sm_90".into()
}

impl Check for SyscallsCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            SyscallsCheck::GuidePrototype { .. } => vec![Capability::Ptxas],
            SyscallsCheck::Probe { tool, .. } => match tool {
                ProbeTool::Ptxas => vec![Capability::Ptxas],
                ProbeTool::Lint => Vec::new(),
                ProbeTool::Jit => vec![Capability::Gpu],
            },
            SyscallsCheck::ProducerLint { producer, .. }
            | SyscallsCheck::VprintfLayout { producer, .. }
            | SyscallsCheck::AssertCharSize { producer } => producer.requires(),
            SyscallsCheck::Gpu { case } => case.requires(),
        }
    }

    fn isolate(&self) -> bool {
        matches!(
            self,
            SyscallsCheck::Probe {
                tool: ProbeTool::Jit,
                ..
            } | SyscallsCheck::Gpu { .. }
        )
    }

    /// Refused before the run (issue 10): an unknown probe, a printf mix out of range, an
    /// address size PTX does not have, an arch that is not `sm_<digits>[a-z]`.
    fn validate(
        &self,
        _ctx: &crate::area::ValidateContext,
    ) -> Result<(), Vec<crate::area::CaseError>> {
        use crate::area::CaseError;
        let mut errors = Vec::new();
        match self {
            SyscallsCheck::GuidePrototype {
                address_size, arch, ..
            } => {
                if ![32, 64].contains(address_size) {
                    errors.push(CaseError::new(
                        "address_size",
                        address_size.to_string(),
                        format!("`address_size: {address_size}`; PTX's .address_size is 32 or 64"),
                    ));
                }
                let digits = arch
                    .strip_prefix("sm_")
                    .map(|d| d.trim_end_matches(|c: char| c.is_ascii_lowercase()));
                if !digits.is_some_and(|d| {
                    !d.is_empty() && d.len() <= 4 && d.bytes().all(|b| b.is_ascii_digit())
                }) {
                    errors.push(CaseError::new(
                        "arch",
                        arch.as_str(),
                        format!(
                            "`arch: {arch}` is not a target; `arch:` is sm_<number>, e.g. sm_90"
                        ),
                    ));
                }
            }
            SyscallsCheck::Probe { probe, .. } if probes::probe(probe).is_none() => {
                errors.push(CaseError::new(
                    "probe",
                    probe.as_str(),
                    format!(
                        "unknown probe `{probe}`; `probe:` is one of {}",
                        probes::PROBES
                            .iter()
                            .map(|p| p.id)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            SyscallsCheck::Gpu {
                case: gpu::GpuCase::Printf { conversion },
            } if gpu::printf_entry(conversion).is_none() => {
                errors.push(CaseError::new(
                    "conversion",
                    conversion.as_str(),
                    format!(
                        "unknown printf conversion `{conversion}`; `conversion:` is one of {}",
                        gpu::PRINTF
                            .iter()
                            .map(|e| e.0)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            SyscallsCheck::VprintfLayout { mix, .. } if *mix >= producers::MIX_COUNT => {
                errors.push(CaseError::new(
                    "mix",
                    mix.to_string(),
                    format!(
                        "no printf mix {mix}; `mix:` is in 0..{}",
                        producers::MIX_COUNT
                    ),
                ));
            }
            _ => {}
        }
        crate::area::problems(errors)
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        let probe = |id: &str| {
            probes::probe(id).ok_or_else(|| CaseStatus::error(format!("unknown probe `{id}`")))
        };
        match self {
            SyscallsCheck::GuidePrototype {
                call,
                address_size,
                arch,
            } => match crate::ptx::AddressSize::from_bits(*address_size) {
                Some(a) => probes::guide_prototype(ctx, *call, a, arch),
                // `validate` refuses any other width before a run.
                None => CaseStatus::error(format!(
                    "`address_size: {address_size}`; PTX's .address_size is 32 or 64"
                )),
            },
            SyscallsCheck::Probe { tool, probe: id } => match (probe(id), tool) {
                (Err(s), _) => s,
                (Ok(p), ProbeTool::Ptxas) => probes::ptxas_probe(ctx, p),
                (Ok(p), ProbeTool::Lint) => probes::lint_probe(p),
                (Ok(p), ProbeTool::Jit) => probes::jit_probe(ctx, p),
            },
            SyscallsCheck::ProducerLint { producer, program } => {
                producers::lint_case(ctx, *producer, *program)
            }
            SyscallsCheck::VprintfLayout { producer, mix } => {
                producers::layout_case(ctx, *producer, *mix)
            }
            SyscallsCheck::AssertCharSize { producer } => charsize::case(ctx, *producer),
            SyscallsCheck::Gpu { case } => gpu::run(ctx, case),
        }
    }
}
