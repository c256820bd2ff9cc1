//! The `abi` area: data representation (ptx-interop 13.2 ch. 1) and parameter passing (§2.3).

mod fundamental;

pub mod lint;
pub mod lint_corpus;
pub mod paramgen;

use serde::Deserialize;

use crate::area::{CaseContext, CaseError, Check, ValidateContext};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/abi.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum AbiCheck {
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
    /// manifest and the exit status and rule ids the spec's rules give, both required: a case
    /// without them would accept whatever ptxas's verdict allows (`abi::lint_corpus`).
    LintCorpus {
        file: String,
        exit: i32,
        rules: Vec<String>,
    },
    /// The graffiti oracle on a GPU: random types `r<seed_start>..` (`count` of them) written
    /// member by member by an NVRTC-compiled kernel, bytes compared with the engine.
    Graffiti { seed_start: u64, count: u64 },
    /// A module of [`isa_probes::PROBES`] against ptxas: the PTX ISA's verdict (§1.1 shared
    /// and local address widths, §1.2 vector forms, ch. 3 32-bit forms).
    IsaProbe { probe: String },
    /// §1.3: a producer's code reads every bit field of [`bitfield_values::FIELDS`] back with
    /// the table's sign and range (executed with the PTX interpreter).
    BitFieldValues {
        #[serde(deserialize_with = "bitfield_values::producer_in_view")]
        producer: crate::backend::producer::Producer,
    },
    /// §1.3 on a GPU: a kernel calls the producer's accessors of [`bitfield_values::FIELDS`]
    /// on device memory and the values read back follow the table ([`bitfields_gpu`]).
    GpuBitFields {
        #[serde(deserialize_with = "bitfield_values::producer_in_view")]
        producer: crate::backend::producer::Producer,
    },
    /// §1.4 / §2.3 note E on a GPU: texture and surface handles passed to a callee as `.b64`
    /// and used there with tex, suld and sust ([`handles_gpu`]).
    GpuHandles { params: handles_gpu::HandleParams },
}

fn paramgen_producer(name: &str) -> Option<paramgen::Producer> {
    crate::backend::producer::parse_in_view(name, &paramgen::producers())
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
            AbiCheck::IsaProbe { .. } => vec![Capability::Ptxas],
            AbiCheck::BitFieldValues { producer } => producer.requires(),
            AbiCheck::GpuBitFields { producer } => {
                let mut v = vec![Capability::Gpu];
                v.extend(producer.requires());
                v
            }
            AbiCheck::GpuHandles { .. } => vec![Capability::Gpu],
        }
    }

    fn isolate(&self) -> bool {
        matches!(
            self,
            AbiCheck::Graffiti { .. } | AbiCheck::GpuBitFields { .. } | AbiCheck::GpuHandles { .. }
        )
    }

    fn validate(&self, ctx: &ValidateContext) -> Result<(), Vec<CaseError>> {
        validate(self, ctx)
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
                lint_corpus::case(ctx, file, *exit, rules)
            }
            AbiCheck::Graffiti { seed_start, count } => {
                graffiti_gpu::graffiti_case(ctx, *seed_start, *count)
            }
            AbiCheck::IsaProbe { probe } => match isa_probes::probe(probe) {
                Some(p) => isa_probes::case(ctx, p),
                None => CaseStatus::error(format!("unknown probe `{probe}`")),
            },
            AbiCheck::BitFieldValues { producer } => bitfield_values::case(ctx, *producer),
            AbiCheck::GpuBitFields { producer } => bitfields_gpu::case(ctx, *producer),
            AbiCheck::GpuHandles { params } => handles_gpu::case(ctx, *params),
        }
    }
}

/// What a run of an abi case would refuse: an unknown §1.1 type, producer,
/// signature or position, an unreadable file, a `type:` the type file does not define.
fn validate(check: &AbiCheck, ctx: &ValidateContext) -> Result<(), Vec<CaseError>> {
    let mut errors = Vec::new();
    match check {
        AbiCheck::FundamentalType { ptx_type, .. } => {
            if !fundamental::TABLE_TYPES.contains(&ptx_type.as_str()) {
                errors.push(CaseError::new(
                    "ptx_type",
                    ptx_type,
                    format!(
                        "`{ptx_type}` is not a type of the §1.1 table; `ptx_type:` is one of {}",
                        fundamental::TABLE_TYPES.join(", ")
                    ),
                ));
            }
        }
        AbiCheck::RandomType { seed, .. } => {
            errors.extend(crate::area::seed_in_range("seed", *seed));
        }
        AbiCheck::TypesFile { file, only, .. } => {
            errors.extend(validate_types_file(ctx, file, only.as_deref()))
        }
        AbiCheck::ParamPassing {
            producer,
            signature,
            position,
        } => errors.extend(validate_param_passing(producer, signature, position)),
        AbiCheck::Lint { file, .. } => errors.extend(crate::area::readable_file(ctx, "file", file)),
        AbiCheck::LintCorpus { file, .. } => {
            if let Some(e) = crate::area::readable_file(ctx, "file", file) {
                errors.push(e);
            } else if let Err(e) = lint_corpus::read_manifest(&ctx.root.join(file)) {
                errors.push(CaseError::new(
                    "file",
                    file,
                    format!("{e}; a corpus file needs its ptxas manifest `{file}.manifest`"),
                ));
            }
        }
        AbiCheck::IsaProbe { probe } => {
            if isa_probes::probe(probe).is_none() {
                let ids: Vec<&str> = isa_probes::PROBES.iter().map(|p| p.id).collect();
                errors.push(CaseError::new(
                    "probe",
                    probe,
                    format!(
                        "unknown probe `{probe}`; `probe:` is one of {}",
                        ids.join(", ")
                    ),
                ));
            }
        }
        AbiCheck::BitFieldValues { .. }
        | AbiCheck::GpuBitFields { .. }
        | AbiCheck::GpuHandles { .. } => {}
        AbiCheck::Graffiti { seed_start, count } => {
            if seed_start.saturating_add(*count) >= crate::area::MAX_SEED {
                errors.push(CaseError::new(
                    "seed_start",
                    seed_start.to_string(),
                    format!("`seed_start: {seed_start}` plus `count: {count}` is too large; the seeds stay below 2^48"),
                ));
            }
            if *count == 0 {
                errors.push(CaseError::about(
                    "count",
                    "`count: 0` checks no type; `count:` is at least 1",
                ));
            }
        }
    }
    crate::area::problems(errors)
}

/// A `types_file` case's file: readable, a type file, defining the `type:` it names.
fn validate_types_file(ctx: &ValidateContext, file: &str, only: Option<&str>) -> Vec<CaseError> {
    let mut errors = Vec::new();
    if let Some(e) = crate::area::readable_file(ctx, "file", file) {
        errors.push(e);
    } else {
        let path = ctx.root.join(file);
        let origin = path.display().to_string();
        let parsed = crate::suite::input::read_text(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| type_file::parse_types(&t, &origin).map_err(|e| e.to_string()));
        match (parsed, only) {
            (Err(e), _) => errors.push(CaseError::new(
                "file",
                file,
                format!("the type file does not read: {e}"),
            )),
            (Ok(defs), Some(name)) if !defs.iter().any(|d| d.name == name) => {
                errors.push(CaseError::new(
                    "type",
                    name,
                    format!("{file} defines no type `{name}`; `type:` names one of its types"),
                ))
            }
            (Ok(_), _) => {}
        }
    }
    errors
}

/// A `param_passing` case's producer, §2.3 signature and position.
fn validate_param_passing(producer: &str, signature: &str, position: &str) -> Vec<CaseError> {
    let mut errors = Vec::new();
    if paramgen_producer(producer).is_none() {
        let names: Vec<&str> = paramgen::producers().iter().map(|p| p.name()).collect();
        errors.push(CaseError::new(
            "producer",
            producer,
            format!(
                "unknown producer `{producer}`; `producer:` is one of {}",
                names.join(", ")
            ),
        ));
    }
    let sigs = paramgen::signatures();
    if !sigs.iter().any(|s| s.id == signature) {
        errors.push(CaseError::new(
            "signature",
            signature,
            format!(
                "unknown signature `{signature}`; `signature:` is one of the §2.3 table's: {}",
                sigs.iter().map(|s| s.id).collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    if !["param", "return"].contains(&position) {
        errors.push(CaseError::new(
            "position",
            position,
            format!("unknown position `{position}`; `position:` is param or return"),
        ));
    }
    errors
}

pub mod bitfield_values;
pub mod bitfields_gpu;
mod cases;
pub mod graffiti_gpu;
pub mod handles_gpu;
pub mod isa_probes;

pub mod layout;
pub mod oracle;
pub mod random;
pub mod render;
pub mod type_file;
pub mod types;
