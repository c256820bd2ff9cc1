//! The abi suite's cases: each compares the spec's rules (through the layout engine or the
//! §2.3 table) with an independent observation (an oracle compiler, a producer's PTX).

use crate::vocab::Vocabulary;
use std::collections::HashMap;
use std::sync::Arc;

use crate::area::{BatchCache, CaseContext};
use crate::backend::toolchain::ToolError;
use crate::outcome::CaseStatus;
use crate::ptx::PtxModule;

use super::oracle::{self, Agreement, Oracle};
use super::paramgen::{self, Observation, Producer, Variant};
use super::type_file::TypeFileError;
use super::{lint as linter, random};

fn judge(oracle: Oracle, name: &str, verdict: &Agreement) -> CaseStatus {
    match verdict {
        Agreement::Agree => CaseStatus::pass(),
        Agreement::Mismatch(msg) => CaseStatus::fail_detail(
            format!("{} agrees with the ch. 1 layout of `{name}`", oracle.name()),
            "a different layout",
            msg.clone(),
        ),
        Agreement::Error(msg) => {
            CaseStatus::error(format!("{} could not judge `{name}`: {msg}", oracle.name()))
        }
    }
}

/// Why a batch, a types file or a producer's signatures have no verdicts; every case of it
/// reports the same error, so it is kept (shared) in the batch cache.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CaseInputError {
    /// The oracle's or producer's tool failed.
    #[error(transparent)]
    Tool(Arc<ToolError>),
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: Arc<std::io::Error>,
    },
    #[error(transparent)]
    Types(Arc<TypeFileError>),
    /// The producer's PTX does not read: `file:line:column: what`.
    #[error("{0}")]
    ProducerPtx(String),
}

impl From<ToolError> for CaseInputError {
    fn from(e: ToolError) -> Self {
        CaseInputError::Tool(Arc::new(e))
    }
}

type BatchVerdicts = Result<HashMap<String, Agreement>, CaseInputError>;

pub fn random_type(ctx: &CaseContext, oracle: Oracle, seed: u64) -> CaseStatus {
    static CACHE: std::sync::OnceLock<BatchCache<(&'static str, u64), BatchVerdicts>> =
        std::sync::OnceLock::new();
    let start = seed - seed % oracle::BATCH as u64;
    let slot =
        CACHE
            .get_or_init(BatchCache::new)
            .get_or_compute(ctx, &(oracle.name(), start), || {
                oracle::check_batch(
                    oracle,
                    ctx.toolchain,
                    &random::random_batch(start, oracle::BATCH),
                )
                .map(|rs| rs.into_iter().map(|r| (r.name, r.verdict)).collect())
                .map_err(CaseInputError::from)
            });
    let name = random::random_type(seed).name;
    match slot.get() {
        Some(Ok(verdicts)) => match verdicts.get(&name) {
            Some(v) => judge(oracle, &name, v),
            None => CaseStatus::error(format!(
                "the {} batch has no verdict for `{name}`",
                oracle.name()
            )),
        },
        Some(Err(e)) => CaseStatus::error(format!("{} oracle: {e}", oracle.name())),
        None => CaseStatus::error("batch not computed"),
    }
}

type FileVerdicts = Result<Vec<(String, Agreement)>, CaseInputError>;

pub fn types_file(ctx: &CaseContext, oracle: Oracle, file: &str, only: Option<&str>) -> CaseStatus {
    static CACHE: std::sync::OnceLock<BatchCache<(&'static str, String), FileVerdicts>> =
        std::sync::OnceLock::new();
    let path = ctx.root.join(file);
    // Nested types are judged with the type that holds them, so the whole file is compiled
    // once per oracle and each case reads its type's verdict.
    let slot = CACHE.get_or_init(BatchCache::new).get_or_compute(
        ctx,
        &(oracle.name(), file.to_string()),
        || {
            let text = std::fs::read_to_string(&path).map_err(|e| CaseInputError::Read {
                path: path.display().to_string(),
                source: Arc::new(e),
            })?;
            let defs = super::type_file::parse_types(&text, &path.display().to_string())
                .map_err(|e| CaseInputError::Types(Arc::new(e)))?;
            Ok(oracle::check_all(oracle, ctx.toolchain, &defs)?
                .into_iter()
                .map(|r| (r.name, r.verdict))
                .collect())
        },
    );
    let results = match slot.get() {
        Some(Ok(r)) => r,
        Some(Err(e)) => return CaseStatus::error(e.to_string()),
        None => return CaseStatus::error("file verdicts not computed"),
    };
    let picked: Vec<&(String, Agreement)> = results
        .iter()
        .filter(|(n, _)| only.is_none_or(|o| o == n))
        .collect();
    if picked.is_empty() {
        return CaseStatus::error(format!(
            "{} has no type `{}`",
            path.display(),
            only.unwrap_or("")
        ));
    }
    let first_bad = picked
        .iter()
        .map(|(n, v)| judge(oracle, n, v))
        .find(|s| s.is_failure());
    first_bad.unwrap_or_else(|| CaseStatus::pass_with(format!("{} type(s) agree", picked.len())))
}

type Observations = Result<Vec<Observation>, CaseInputError>;

pub fn param_passing(
    ctx: &CaseContext,
    producer: Producer,
    signature: &str,
    position: &str,
) -> CaseStatus {
    if let Some(why) = paramgen::signatures()
        .iter()
        .find(|s| s.id == signature)
        .and_then(|s| paramgen::inexpressible(producer, s))
    {
        return CaseStatus::skip(crate::capability::Capability::ProducerFeature, why);
    }
    static CACHE: std::sync::OnceLock<BatchCache<&'static str, Observations>> =
        std::sync::OnceLock::new();
    let slot = CACHE
        .get_or_init(BatchCache::new)
        .get_or_compute(ctx, &producer.name(), || {
            let sigs = paramgen::signatures();
            let ptx = paramgen::emit(producer, ctx.toolchain, &sigs)?;
            let module = PtxModule::parse(&ptx).map_err(|e| {
                CaseInputError::ProducerPtx(e.at(&format!("{} output", producer.name())))
            })?;
            Ok(paramgen::observe(&module, &sigs))
        });
    let observations = match slot.get() {
        Some(Ok(o)) => o,
        Some(Err(e)) => return CaseStatus::error(e.to_string()),
        None => return CaseStatus::error("observations not computed"),
    };
    let Some(obs) = observations.iter().find(|o| {
        o.sig_id == signature && o.position.name() == position && o.variant == Variant::External
    }) else {
        return CaseStatus::error(format!(
            "no {position} observation for signature `{signature}`"
        ));
    };
    let expected = format!(
        "a {} declaration per the §2.3 table row for {}",
        position,
        obs.class.row()
    );
    match (&obs.declared, obs.findings.is_empty()) {
        (None, _) => CaseStatus::fail(expected, "the function or value is missing from the PTX"),
        (Some(decl), true) => CaseStatus::pass_with(format!("`{decl}`")),
        (Some(decl), false) => CaseStatus::fail_detail(
            expected,
            format!("`{decl}` (line {})", obs.line),
            obs.findings
                .iter()
                .map(|(rule, msg)| format!("[{} {}] {msg}", rule.id(), rule.clause()))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

pub fn lint(ctx: &CaseContext, file: &str, exit: i32, rules: &[String]) -> CaseStatus {
    let path = ctx.root.join(file);
    let src = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(format!("{}: {e}", path.display())),
    };
    let result = linter::lint_source(&src, file);
    let got_exit = linter::exit_code(&result);
    let got_rules: Vec<String> = match &result {
        Ok(v) => v.iter().map(|v| v.rule.id().to_string()).collect(),
        Err(_) => Vec::new(),
    };
    if got_exit == exit && got_rules == rules {
        CaseStatus::pass()
    } else {
        let detail = match &result {
            Ok(v) => v
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => e.at(file),
        };
        CaseStatus::fail_detail(
            format!("exit {exit}, rules {rules:?}"),
            format!("exit {got_exit}, rules {got_rules:?}"),
            detail,
        )
    }
}
