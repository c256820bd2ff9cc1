//! The `atomics` area: ptx-interop 13.2 ch. 4 (the atomics ABI) and the PTX memory model.
//!
//! - `mapping`: each C++ atomic operation × order × scope, compiled by each producer, must
//!   emit one of the chapter's instruction sequences.
//! - `litmus`, `model`, `catalog`: litmus tests, a checker of the PTX memory model (Lustig et
//!   al., ASPLOS'19), and the coverage catalogue whose verdicts the checker computes.

pub mod mapping;

use std::sync::OnceLock;

pub mod catalog;
pub mod corpus;
pub mod gpu;
pub mod litmus;
pub mod model;

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

use crate::backend::producer::Language;
use mapping::source::MappingCase;

/// The `check:` vocabulary of `suites/atomics.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum AtomicsCheck {
    /// One operation at one order and scope, compiled by one producer, against the chapter's
    /// mappings. An order that C++ does not allow for the operation is a suite error.
    Mapping(MappingSpec),
    /// A catalogue litmus test (`MP.rel_acq.gpu.inter_cta`): the memory-model checker's
    /// verdict must be the one the mappings' soundness and the scope rules imply
    /// ([`catalog::expected_allowed`]).
    Model { test: String },
    /// An alternative-mapping test (`MP.seq_cst_load.alt1.mixed.gpu.inter_cta`,
    /// [`catalog::alternative`]): a shape the recommended mapping makes forbidden, with one of
    /// the chapter's alternatives substituted in every thread or mixed with the recommended
    /// mapping; the model must forbid its weak outcome too.
    Alternative { test: String },
    /// A catalogue litmus test run on the GPU ([`gpu`]): no outcome outside the model's
    /// allowed set may appear; a forbidden test's relaxed control must show its weak outcome
    /// or the case carries a "stress has no teeth" warning.
    Gpu {
        test: String,
        #[serde(default = "gpu_iterations")]
        iterations: u64,
        /// Stress parameters replacing the defaults ([`gpu::StressParams`]; e.g. a set
        /// `gpucts litmus tune` found).
        #[serde(default)]
        stress: gpu::StressParams,
    },
    /// Dat3M's public PTX corpus against one of its expectation files (`ptx-v6.0`,
    /// `ptx-v7.5`, `liveness-ptx-v6.0`, `liveness-ptx-v7.5`): every listed test must get
    /// Dat3M's published verdict. Skips, naming the folder, when the corpus is absent.
    Corpus { expectations: String },
    /// A litmus file of `suites/litmus/` whose outcome (`allowed`/`forbidden`) is argued in
    /// the file's description, independently of the checker.
    Litmus {
        file: String,
        outcome: ExpectedOutcome,
    },
    /// An async-proxy test of `suites/litmus/` run on the GPU with its own kernel
    /// ([`gpu::proxy`]; sm_90): `expect: defined` fails on an outcome the model forbids,
    /// `expect: observation` (the PTX ISA does not define the outcome) records what was seen,
    /// tagged `observation`.
    GpuProxy {
        file: String,
        expect: gpu::proxy::Expectation,
        #[serde(default = "gpu_iterations")]
        iterations: u64,
    },
}

/// A `litmus:` case's `outcome:`: `allowed` or `forbidden`, or another word, which
/// `validate` refuses at its place in the suite file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub(crate) enum ExpectedOutcome {
    Is(model::Outcome),
    Unknown(String),
}

impl From<String> for ExpectedOutcome {
    fn from(s: String) -> Self {
        match s.parse() {
            Ok(o) => ExpectedOutcome::Is(o),
            Err(_) => ExpectedOutcome::Unknown(s),
        }
    }
}

fn gpu_iterations() -> u64 {
    gpu::DEFAULT_ITERATIONS
}

/// `{producer: nvrtc, operation: fetch_add, order: acquire, scope: gpu}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawMapping")]
pub(crate) struct MappingSpec(pub MappingCase);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMapping {
    producer: String,
    operation: String,
    order: String,
    scope: String,
    /// The object's state space and type (`global`/`shared`/`generic`, `s32`..`f64`); both
    /// or neither (then `int` on `.global`).
    #[serde(default)]
    space: Option<String>,
    #[serde(default, rename = "type")]
    ty: Option<String>,
}

/// A `mapping:` check naming no case of the mapping table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no mapping case for producer `{producer}`, operation `{operation}`, order `{order}`, scope `{scope}`{object} \
     (producers: nvrtc, clang, llvm; an order must be valid for the operation in C++, the operation \
     defined on the type; space and type are given both or neither, `global`/`s32` never)"
)]
pub(crate) struct UnknownMapping {
    producer: String,
    operation: String,
    order: String,
    scope: String,
    object: String,
}

impl TryFrom<RawMapping> for MappingSpec {
    type Error = UnknownMapping;
    fn try_from(r: RawMapping) -> Result<Self, UnknownMapping> {
        let mut id = format!(
            "atomics.mapping.{}.{}.{}.{}",
            r.producer, r.operation, r.order, r.scope
        );
        let object = match (&r.space, &r.ty) {
            (None, None) => String::new(),
            (s, t) => {
                let (s, t) = (s.as_deref().unwrap_or("?"), t.as_deref().unwrap_or("?"));
                id.push_str(&format!(".{s}.{t}"));
                format!(", space `{s}`, type `{t}`")
            }
        };
        MappingCase::from_id(&id)
            .map(MappingSpec)
            .ok_or(UnknownMapping {
                producer: r.producer,
                operation: r.operation,
                order: r.order,
                scope: r.scope,
                object,
            })
    }
}

/// Each producer's batch is compiled once per process, on first use.
fn cache() -> &'static mapping::MappingCache {
    static CACHE: OnceLock<mapping::MappingCache> = OnceLock::new();
    CACHE.get_or_init(mapping::MappingCache::new)
}

impl Check for AtomicsCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            AtomicsCheck::Mapping(MappingSpec(case)) => {
                let mut caps = case.producer.requires();
                // The CUDA C++ source includes libcu++'s <cuda/atomic>.
                if mapping::source::language(case.producer) == Some(Language::CudaCpp) {
                    caps.push(Capability::Cccl);
                }
                caps
            }
            AtomicsCheck::Model { .. }
            | AtomicsCheck::Alternative { .. }
            | AtomicsCheck::Corpus { .. }
            | AtomicsCheck::Litmus { .. } => Vec::new(),
            AtomicsCheck::Gpu { .. } | AtomicsCheck::GpuProxy { .. } => vec![Capability::Gpu],
        }
    }

    /// GPU cases run in-process on the run's one GPU worker (`gpu::worker`: one context
    /// for the run); `isolate: true` in a suite still gives a case its own child, context
    /// and worker.
    fn isolate(&self) -> bool {
        false
    }

    /// A catalogue test on the GPU runs on the process's GPU worker, but for a cluster test
    /// (its own context and cluster launch).
    fn shares_gpu(&self) -> bool {
        match self {
            AtomicsCheck::Gpu { test, stress, .. } => gpu::runs_on_worker(test, stress),
            _ => false,
        }
    }

    /// Refused before the run: a test name outside the catalogue, zero iterations,
    /// an unknown corpus expectation, a litmus file that does not read, an outcome other than
    /// allowed or forbidden.
    fn validate(
        &self,
        ctx: &crate::area::ValidateContext,
    ) -> Result<(), Vec<crate::area::CaseError>> {
        use crate::area::CaseError;
        static NAMES: OnceLock<std::collections::HashSet<String>> = OnceLock::new();
        let in_catalogue = |t: &str| {
            NAMES
                .get_or_init(|| {
                    catalog::entries()
                        .into_iter()
                        .map(|e| e.test.name)
                        .collect()
                })
                .contains(t)
        };
        let unknown_test = |t: &str| {
            CaseError::new(
                "test",
                t,
                format!("no catalogue test named `{t}`; `test:` is <shape>.<mapping>.<scope>.<placement> of the catalogue, e.g. MP.rel_acq.gpu.inter_cta (`gpucts --suite atomics --list` lists them)"),
            )
        };
        let mut errors = Vec::new();
        match self {
            AtomicsCheck::Mapping(_) => {}
            AtomicsCheck::Model { test } if !in_catalogue(test) => errors.push(unknown_test(test)),
            AtomicsCheck::Model { .. } => {}
            AtomicsCheck::Alternative { test } => {
                static LISTED: OnceLock<std::collections::HashSet<String>> = OnceLock::new();
                let listed = LISTED.get_or_init(|| {
                    catalog::alternative_entries()
                        .into_iter()
                        .map(|e| e.test.name)
                        .collect()
                });
                if !listed.contains(test) {
                    errors.push(CaseError::new(
                        "test",
                        test.as_str(),
                        format!("no alternative test named `{test}`; `test:` is <shape>.<row>.alt<n>.<all|mixed|mixed_rev>.<scope>.<placement> for a shape the recommended mapping makes forbidden and that uses the row, e.g. MP.release_store.alt1.all.gpu.inter_cta (`gpucts --suite atomics --list` lists them)"),
                    ));
                }
            }
            AtomicsCheck::Gpu {
                test,
                iterations,
                stress,
            } => {
                match catalog::by_name(test) {
                    None => errors.push(unknown_test(test)),
                    Some(t) => {
                        if let Err(e) = gpu::layout::Geometry::new(&t, stress) {
                            errors.push(CaseError::about("stress", e.to_string()));
                        }
                    }
                }
                if *iterations == 0 {
                    errors.push(CaseError::about(
                        "iterations",
                        "`iterations: 0` runs nothing; `iterations:` is at least 1",
                    ));
                }
            }
            AtomicsCheck::Corpus { expectations } => {
                if let Err(e) = corpus::case(expectations) {
                    errors.push(CaseError::new(
                        "expectations",
                        expectations.as_str(),
                        e.to_string(),
                    ));
                }
            }
            AtomicsCheck::Litmus { file, outcome } => {
                if let ExpectedOutcome::Unknown(outcome) = outcome {
                    errors.push(CaseError::new(
                        "outcome",
                        outcome.as_str(),
                        format!("`outcome: {outcome}`; `outcome:` is allowed or forbidden"),
                    ));
                }
                // As `litmus_case` reads it: a name in suites/litmus/ of the data root.
                let dir = ctx.root.join(LITMUS_DIR);
                if file.contains("..") {
                    errors.push(CaseError::new(
                        "file",
                        file.as_str(),
                        format!("`file: {file}`; `file:` is a file name in suites/litmus/"),
                    ));
                } else if let Err(e) = litmus::load_file(&dir.join(file)) {
                    errors.push(CaseError::new("file", file.as_str(), format!("the litmus file does not read: {e}; `file:` is a file name in suites/litmus/")));
                }
            }
            AtomicsCheck::GpuProxy {
                file, iterations, ..
            } => {
                let read = if file.contains("..") {
                    Err(format!(
                        "`file: {file}`; `file:` is a file name in suites/litmus/"
                    ))
                } else {
                    litmus::load_file(&ctx.root.join(LITMUS_DIR).join(file))
                        .map_err(|e| e.to_string())
                        .and_then(|t| gpu::proxy::ProxyLayout::new(&t).map_err(|e| e.to_string()))
                        .map(|_| ())
                };
                if let Err(e) = read {
                    errors.push(CaseError::new("file", file.as_str(), e));
                }
                if *iterations == 0 {
                    errors.push(CaseError::about(
                        "iterations",
                        "`iterations: 0` runs nothing; `iterations:` is at least 1",
                    ));
                }
            }
        }
        crate::area::problems(errors)
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            AtomicsCheck::Mapping(MappingSpec(case)) => cache().outcome(ctx, case).to_status(case),
            AtomicsCheck::Model { test } => model_case(test),
            AtomicsCheck::Alternative { test } => alternative_case(test),
            AtomicsCheck::Gpu {
                test,
                iterations,
                stress,
            } => {
                let (status, figures) = gpu::gpu_case(
                    &ctx.config.device,
                    ctx.toolchain.settings(),
                    test,
                    *iterations,
                    stress,
                );
                figures.into_iter().for_each(|f| ctx.record(f));
                status
            }
            AtomicsCheck::Corpus { expectations } => corpus_case(expectations, ctx.corpora),
            AtomicsCheck::Litmus { file, outcome } => litmus_case(ctx.root, file, outcome),
            AtomicsCheck::GpuProxy {
                file,
                expect,
                iterations,
            } if !file.contains("..") => gpu::proxy::case(
                ctx,
                &ctx.root.join(LITMUS_DIR).join(file),
                *expect,
                *iterations,
            ),
            AtomicsCheck::GpuProxy { file, .. } => CaseStatus::error(format!(
                "`file: {file}`; `file:` is a file name in suites/litmus/"
            )),
        }
    }
}

fn model_case(name: &str) -> CaseStatus {
    let Some(entry) = catalog::entry(name) else {
        return CaseStatus::error(format!("no catalogue test named `{name}`"));
    };
    let verdict = match model::try_check(&entry.test) {
        Ok(v) => v,
        Err(e) => return CaseStatus::error(format!("the checker gave no verdict: {e}")),
    };
    let word = |allowed: bool| if allowed { "allowed" } else { "forbidden" };
    let expected = catalog::expected_allowed(&entry);
    if verdict.allowed == expected {
        let why = match verdict.rejected.first() {
            Some(r) if !verdict.allowed => format!(", e.g. ruled out by {}", r.axiom),
            _ => String::new(),
        };
        CaseStatus::pass_with(format!(
            "{} ({} candidates, {} consistent{why})",
            word(verdict.allowed),
            verdict.candidates,
            verdict.consistent
        ))
    } else {
        CaseStatus::fail_detail(
            format!("weak outcome {}", word(expected)),
            format!("weak outcome {}", word(verdict.allowed)),
            model::report(&entry.test, &verdict),
        )
    }
}

/// An alternative test must be forbidden: the recommended mapping is sound (forbids what C++
/// forbids, in scope) and the chapter lets any listed alternative replace it, in any thread.
fn alternative_case(name: &str) -> CaseStatus {
    let Some(entry) = catalog::alternative(name) else {
        return CaseStatus::error(format!("no alternative test named `{name}`"));
    };
    if !entry.expected_forbidden() {
        return CaseStatus::error(format!(
            "`{name}`: the recommended mapping does not make this shape forbidden; no claim to check"
        ));
    }
    let check = |t: &litmus::LitmusTest| {
        model::try_check(t)
            .map_err(|e| CaseStatus::error(format!("the checker gave no verdict: {e}")))
    };
    let (alt, rec) = match (check(&entry.test), check(&entry.recommended)) {
        (Ok(a), Ok(r)) => (a, r),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let word = |allowed: bool| if allowed { "allowed" } else { "forbidden" };
    if !alt.allowed && !rec.allowed {
        let why = match alt.rejected.first() {
            Some(r) => format!(", e.g. ruled out by {}", r.axiom),
            None => String::new(),
        };
        CaseStatus::pass_with(format!(
            "forbidden with {} ({}), as with the recommended mapping ({} candidates, {} consistent{why})",
            entry.alternative.name(),
            entry.alternative.clause_id(),
            alt.candidates,
            alt.consistent
        ))
    } else {
        CaseStatus::fail_detail(
            "weak outcome forbidden".to_string(),
            format!(
                "weak outcome {} with {} ({} with the recommended mapping)",
                word(alt.allowed),
                entry.alternative.name(),
                word(rec.allowed)
            ),
            format!(
                "{}\n{}",
                model::report(&entry.test, &alt),
                litmus::to_yaml(&entry.test).unwrap_or_default()
            ),
        )
    }
}

fn corpus_case(which: &str, corpora: Option<&std::path::Path>) -> CaseStatus {
    let (csv, model, liveness) = match corpus::case(which) {
        Ok(c) => c,
        Err(e) => return CaseStatus::error(e),
    };
    let Some(dir) = corpus::dir(corpora) else {
        return CaseStatus::skip(Capability::Corpus, corpus::missing(corpora));
    };
    let t = match corpus::run(&dir, csv, model, liveness) {
        Ok(t) => t,
        Err(e) => return CaseStatus::error(e),
    };
    if t.listed > 0 && t.agree == t.listed {
        CaseStatus::pass_with(format!(
            "{}: {} tests, all agree with Dat3M under {}",
            csv,
            t.listed,
            model.name()
        ))
    } else {
        CaseStatus::fail_detail(
            format!("{} of {} agree", t.listed, t.listed),
            format!(
                "{} agree, {} disagree, {} refused",
                t.agree,
                t.disagree.len(),
                t.refused.len()
            ),
            t.disagree
                .iter()
                .chain(&t.refused)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}

/// Where `litmus:` cases' files are, under the data root.
pub(crate) const LITMUS_DIR: &str = "suites/litmus";

fn litmus_case(root: &std::path::Path, file: &str, expected: &ExpectedOutcome) -> CaseStatus {
    let expected = match expected {
        ExpectedOutcome::Is(o) if !file.contains("..") => *o,
        _ => {
            return CaseStatus::error(format!(
                "litmus case `{file}`: outcome must be allowed or forbidden, the file a name in suites/litmus/"
            ))
        }
    };
    let path = root.join(LITMUS_DIR).join(file);
    let checked = match model::check_file(&path) {
        Ok(v) => v,
        Err(e) => return CaseStatus::error(e),
    };
    if checked.verdict.outcome() == Some(expected) {
        CaseStatus::pass_with(format!("{expected} (as argued in the test's description)"))
    } else {
        let got = checked
            .verdict
            .outcome_text()
            .unwrap_or_else(|| "none".to_string());
        CaseStatus::fail_detail(expected.name(), got, checked.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn suite_cases() -> Vec<crate::suite::Case> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        crate::suite::load_file(&root.join("suites/atomics.yaml"), &crate::areas::all())
            .unwrap()
            .cases
    }

    // The suite lists exactly the alternative tests the catalogue builds (offline, each citing
    // the clause of its alternative), and the mixed ones again on the GPU.
    #[test]
    fn the_suite_lists_every_alternative_test() {
        let cases = suite_cases();
        let entries = catalog::alternative_entries();
        let want: BTreeSet<String> = entries
            .iter()
            .map(|e| format!("atomics.alternatives.{}", e.test.name))
            .collect();
        let got: BTreeSet<String> = cases
            .iter()
            .filter(|c| c.id.starts_with("atomics.alternatives."))
            .map(|c| c.id.clone())
            .collect();
        assert_eq!(got, want);
        for e in &entries {
            let id = format!("atomics.alternatives.{}", e.test.name);
            let c = cases.iter().find(|c| c.id == id).unwrap();
            assert_eq!(
                crate::clauses::cited_id(&c.clause),
                e.alternative.clause_id(),
                "{id}"
            );
        }
        let want: BTreeSet<String> = entries
            .iter()
            .filter(|e| e.mix != catalog::Mix::All)
            .map(|e| format!("atomics.gpu.alternatives.{}", e.test.name))
            .collect();
        let got: BTreeSet<String> = cases
            .iter()
            .filter(|c| c.id.starts_with("atomics.gpu.alternatives."))
            .map(|c| c.id.clone())
            .collect();
        assert_eq!(got, want);
    }

    // Each alternative case passes (the model forbids the weak outcome, as the chapter's
    // interchangeability implies), and a name outside the list is an error, not a verdict.
    #[test]
    fn alternative_cases_pass_and_unknown_ones_are_errors() {
        for e in catalog::alternative_entries() {
            let s = alternative_case(&e.test.name);
            assert!(
                matches!(s, CaseStatus::Pass { .. }),
                "{}: {s:?}",
                e.test.name
            );
        }
        assert!(matches!(
            alternative_case("MP.release_store.alt1.all.cta.inter_cta"),
            CaseStatus::Error { .. }
        ));
        assert!(matches!(
            alternative_case("MP.nothing.alt1.all.gpu.inter_cta"),
            CaseStatus::Error { .. }
        ));
    }
}
