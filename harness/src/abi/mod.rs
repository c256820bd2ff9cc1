//! The `abi` area: data representation (ptx-interop 13.2 ch. 1) and parameter passing (§2.3).

mod fundamental;

pub mod lint;
pub mod lint_corpus;
pub mod lint_syscalls;
pub mod paramgen;

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/abi.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum AbiCheck {
    /// A §1.1 table row: ptxas must place a global of `ptx_type` with this size and alignment.
    FundamentalType {
        ptx_type: String,
        size: u64,
        align: u64,
    },
    /// The layout engine (ch. 1 rules) and an independent oracle agree on the random type
    /// `r<seed>` (types are compiled in batches of [`oracle::BATCH`] for speed).
    RandomType { oracle: oracle::Oracle, seed: u64 },
    /// The engine and an oracle agree on every type of a type file (relative to the repo root),
    /// or with `type:` on that one type.
    TypesFile {
        oracle: oracle::Oracle,
        file: String,
        /// Only this type of the file.
        #[serde(default, rename = "type")]
        only: Option<String>,
    },
    /// §2.3: the `.param` declaration a producer emits for an external device function's
    /// parameter or return value of a type class follows the table.
    ParamPassing {
        producer: String,
        signature: String,
        position: String,
    },
    /// `gpucts abi lint` on a PTX file (relative to the repo root) gives this exit status and
    /// these rule ids, in order; the expectation comes from §2.3, written in the suite.
    Lint {
        file: String,
        exit: i32,
        rules: Vec<String>,
    },
    /// A `ptx-corpus/` file (relative to the repo root) against ptxas's measured verdict in its
    /// manifest, and, when given, the exit status and rule ids the spec's rules give
    /// (`abi::lint_corpus`).
    LintCorpus {
        file: String,
        #[serde(default)]
        exit: Option<i32>,
        #[serde(default)]
        rules: Option<Vec<String>>,
    },
    /// The graffiti oracle on a GPU: random types `r<seed_start>..` (`count` of them) written
    /// member by member by an NVRTC-compiled kernel, bytes compared with the engine.
    Graffiti { seed_start: u64, count: u64 },
}

fn paramgen_producer(name: &str) -> Option<paramgen::Producer> {
    crate::backend::producer::parse_in_view(name, &paramgen::PRODUCERS)
}

impl Check for AbiCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            AbiCheck::FundamentalType { .. } => vec![Capability::Ptxas],
            AbiCheck::RandomType { oracle, .. } | AbiCheck::TypesFile { oracle, .. } => {
                oracle.requires().to_vec()
            }
            AbiCheck::ParamPassing { producer, .. } => paramgen_producer(producer)
                .map(|p| p.requires())
                .unwrap_or_default(),
            AbiCheck::Lint { .. } | AbiCheck::LintCorpus { .. } => Vec::new(),
            AbiCheck::Graffiti { .. } => vec![Capability::Gpu, Capability::Nvrtc],
        }
    }

    fn isolate(&self) -> bool {
        matches!(self, AbiCheck::Graffiti { .. })
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            AbiCheck::FundamentalType {
                ptx_type,
                size,
                align,
            } => fundamental::check(ctx, ptx_type, *size, *align),
            AbiCheck::RandomType { oracle, seed } => cases::random_type(ctx, *oracle, *seed),
            AbiCheck::TypesFile { oracle, file, only } => {
                cases::types_file(ctx, *oracle, file, only.as_deref())
            }
            AbiCheck::ParamPassing {
                producer,
                signature,
                position,
            } => match paramgen_producer(producer) {
                Some(p) => cases::param_passing(ctx, p, signature, position),
                None => CaseStatus::error(format!(
                    "unknown producer `{producer}` (nvrtc, clang, libnvvm)"
                )),
            },
            AbiCheck::Lint { file, exit, rules } => cases::lint(ctx, file, *exit, rules),
            AbiCheck::LintCorpus { file, exit, rules } => {
                lint_corpus::case(ctx, file, *exit, rules.as_deref())
            }
            AbiCheck::Graffiti { seed_start, count } => {
                graffiti_gpu::graffiti_case(ctx, *seed_start, *count)
            }
        }
    }
}

mod cases;
pub mod graffiti_gpu;

pub mod layout;
pub mod oracle;
pub mod random;
pub mod types;
