//! An explicit-state checker of the PTX memory consistency model, as formalised by Lustig,
//! Sahasrabuddhe and Giroux ("A Formal Analysis of the NVIDIA PTX Memory Consistency Model",
//! ASPLOS 2019; their Alloy model is `ptx.als` in github.com/NVlabs/ptxmemorymodel) and written
//! in cat by Dat3M (`cat/ptx-v6.0.cat`, `cat/ptx.cat` without proxies).
//!
//! For a litmus test it enumerates every candidate execution — a reads-from choice for each
//! read, a coherence order per location (a strict partial order after the initial write that
//! orders every morally strong pair of writes, as the paper's `co` is total only among
//! morally strong writes), and an order of the `fence.sc` operations consistent with program
//! order — computes the values each execution produces, and keeps those that satisfy the six
//! axioms. A location's final value is that of any co-maximal write (what an observer after
//! every thread would read):
//!
//! * Coherence: `([W]; cause; [W]) & loc ⊆ co`
//! * Fence-SC: `irreflexive(sync_fence; cause)`
//! * Atomicity: `((ms & fr); (ms & co)) & rmw = ∅`
//! * No-Thin-Air: `acyclic(rf | dep)` (here: every value is computable without a cycle)
//! * SC-per-Location: `acyclic((ms & (rf | co | fr)) | po-loc)`
//! * Causality: `irreflexive((rf | fr)?; cause)`
//!
//! with ms = morally strong (same thread, or both strong with scopes including each other's
//! thread, and the same location when both are memory operations), observation
//! `obs = (ms & rf) | obs; rmw; obs`, release pattern `[W&REL]; po-loc?; [strong W] |
//! [F&REL]; po; [strong W]`, acquire pattern `[strong R]; po-loc?; [R&ACQ] | [strong R]; po;
//! [F&ACQ]`, synchronisation `sync = ms & (release; obs; acquire)`, Fence-SC order restricted to
//! morally strong `fence.sc` pairs, base causality `(po | sync | sync_fence)+` (program order is
//! part of base causality, as in the PTX ISA and Dat3M's `ptx.cat`; the paper's Alloy model keeps
//! only po-paths through some synchronisation and adds `obs; po-loc` instead, which gives the same
//! verdicts because a po-only path that closes a cycle joins same-location accesses, already
//! caught as po-loc), and causality `cause = base | obs; base`. `fence.sc` and `fence.acq_rel` are both release and acquire
//! fences; `fence.release` only the former, `fence.acquire` only the latter.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::{LitmusTest, Quantifier, Term};

mod axioms;
mod enumerate;
mod events;
mod rel;
pub mod unroll;

use enumerate::{enumerate, estimate, Acc};
use events::build;

/// The axioms, in the order a rejection names the first one violated.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::IntoStaticStr,
    strum::Display,
    strum::VariantArray,
)]
#[strum(serialize_all = "kebab-case")]
pub enum Axiom {
    Coherence,
    FenceSc,
    Atomicity,
    NoThinAir,
    ScPerLocation,
    Causality,
}

impl Axiom {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// A candidate execution that would produce the condition's outcome, and the first axiom
/// that rules it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub axiom: Axiom,
    /// The execution: reads-from, coherence order, Fence-SC order.
    pub execution: String,
}

/// The model's answer for a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelVerdict {
    /// The condition's proposition is satisfied by some consistent execution ("outcome:
    /// allowed"), whatever the quantifier.
    pub allowed: bool,
    /// The condition as quantified: `exists` holds iff allowed; `~exists` holds iff not
    /// allowed; `forall` holds iff every consistent execution satisfies the proposition.
    pub condition_holds: bool,
    /// Candidate executions examined (each rf × co × Fence-SC order choice).
    pub candidates: usize,
    /// Candidates satisfying every axiom.
    pub consistent: usize,
    /// When not allowed: every candidate that would satisfy the proposition, with its first
    /// violated axiom. (Empty when allowed.)
    pub rejected: Vec<Rejection>,
    /// The terms the condition mentions (registers and final memory values), in order.
    pub terms: Vec<Term>,
    /// Every combination of values of `terms` that some consistent execution produces: a GPU
    /// runner that observes any other combination has seen behaviour the model forbids.
    pub allowed_outcomes: BTreeSet<Vec<i64>>,
    /// Set when the checker could not decide (see [`check`]); the other fields are then empty.
    pub error: Option<String>,
    /// Some execution was cut by the loop bound and the verdict could depend on what lies
    /// beyond it: the answer is `bound reached`, never a pass.
    pub bound_reached: bool,
    /// The model that judged the test.
    pub model: Model,
    /// Some execution blocks at a barrier whose quorum never arrives (non-terminating).
    pub hang: bool,
    /// With `--liveness`: `Some(witness)` when a consistent execution keeps a thread in a
    /// loop forever under a fair scheduler or blocks it at a barrier; `None` when none does.
    pub liveness_violation: Option<Option<String>>,
}

/// Whether some consistent execution reaches the condition's proposition: the `outcome:` of
/// `gpucts litmus check` and of a `litmus:` case.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::Display,
    strum::VariantArray,
)]
#[strum(serialize_all = "lowercase")]
pub enum Outcome {
    Allowed,
    Forbidden,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

impl ModelVerdict {
    /// The decided outcome; `None` when the checker could not decide (an error, or an
    /// execution cut by the loop bound could decide it) or answered the liveness question.
    pub fn outcome(&self) -> Option<Outcome> {
        if self.error.is_some() || self.liveness_violation.is_some() || self.bound_reached {
            return None;
        }
        Some(if self.allowed {
            Outcome::Allowed
        } else {
            Outcome::Forbidden
        })
    }

    /// The text of the report's `outcome:` line (`allowed`, `forbidden`, `unknown (why)`);
    /// `None` for a liveness answer, whose report has no such line.
    pub fn outcome_text(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(format!("unknown ({e})"));
        }
        if self.liveness_violation.is_some() {
            return None;
        }
        if self.bound_reached {
            return Some(
                "unknown (bound reached: an execution cut by the loop bound could decide the condition; raise --unroll)"
                    .to_string(),
            );
        }
        self.outcome().map(|o| o.name().to_string())
    }

    /// Whether observed values of [`ModelVerdict::terms`] (same order) are an outcome of some
    /// consistent execution; a GPU run that sees any other outcome has broken the model.
    pub fn outcome_allowed(&self, values: &[i64]) -> bool {
        self.allowed_outcomes.contains(values)
    }
}

/// The most candidate executions `try_check` will enumerate.
/// The figure is the guard's upper bound, not what the search visits: the catalogue's CAS
/// locks (bound ~3.9M) check in seconds. 5M admits them and refuses the 8-thread SB with
/// fence.sc (bound 10.3M), whose enumeration takes minutes; `litmus check --max-candidates N`
/// raises it.
pub const MAX_CANDIDATES: u128 = 5_000_000;

/// Checks a test against the model. A test beyond the checker (more than 64 events, more
/// than [`MAX_CANDIDATES`] candidate executions) gives a verdict with `error` set and nothing
/// allowed; [`try_check`] returns that as an `Err` instead.
pub fn check(test: &LitmusTest) -> ModelVerdict {
    try_check(test).unwrap_or_else(|e| ModelVerdict {
        allowed: false,
        condition_holds: false,
        candidates: 0,
        consistent: 0,
        rejected: Vec::new(),
        terms: Vec::new(),
        allowed_outcomes: BTreeSet::new(),
        error: Some(e.to_string()),
        bound_reached: false,
        model: Model::V60,
        hang: false,
        liveness_violation: None,
    })
}

/// Which memory model judges a test.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
pub enum Model {
    /// PTX ISA 6.0 without proxies (Dat3M `ptx-v6.0.cat`), the default for tests without
    /// proxies.
    #[strum(serialize = "ptx-v6.0")]
    V60,
    /// PTX ISA 7.5 with proxies (Dat3M `ptx-v7.5.cat`): generic/texture/surface/constant
    /// proxies, `fence.proxy.*`, virtual aliases.
    #[strum(serialize = "ptx-v7.5")]
    V75,
}

impl Model {
    pub fn name(self) -> &'static str {
        self.into()
    }
    pub fn parse(s: &str) -> Option<Model> {
        s.parse().ok()
    }
}

/// How to check: the loop bound and the model (`None`: v7.5 when the test uses proxies,
/// v6.0 otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub unroll: u32,
    pub model: Option<Model>,
    /// Answer the liveness question instead (`litmus check --liveness`).
    pub liveness: bool,
    /// The most candidate executions (by the checker's estimate) a test may need.
    pub max_candidates: u128,
}

/// Dat3M's loop bound for its PTX tests.
pub const DEFAULT_UNROLL: u32 = 1;

impl Default for Options {
    fn default() -> Self {
        Options {
            unroll: DEFAULT_UNROLL,
            model: None,
            liveness: false,
            max_candidates: MAX_CANDIDATES,
        }
    }
}

/// Why the checker refuses a test: it is too large to enumerate, or needs the other model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("test `{test}` has {events} events; the checker handles at most 64")]
    TooManyEvents { test: String, events: usize },
    #[error("test `{test}` uses proxies (aliases, tld/suld/sust/cold, fence.proxy); check it with --model ptx-v7.5")]
    NeedsPtx75 { test: String },
    /// `combinations`: the product of the threads' path counts, or "more than 2^128".
    #[error("test `{test}` has {combinations} combinations of thread paths; the checker enumerates at most {max} candidate executions (raise with --max-candidates N)")]
    TooManyCombinations {
        test: String,
        combinations: String,
        max: u128,
    },
    /// `estimate`: "at least N" or "more than 2^128".
    #[error("test `{test}` has {estimate} candidate executions by the checker's estimate (reads-from × coherence orders × final-memory states × fence-sc orders × barrier orders, under --unroll {unroll}); the checker enumerates at most {max} (raise with --max-candidates N)")]
    TooManyCandidates {
        test: String,
        estimate: String,
        unroll: u32,
        max: u128,
    },
    #[error("a read has no write to read from")]
    NoWriteToReadFrom,
    #[error(transparent)]
    Unroll(#[from] unroll::UnrollError),
}

/// `gpucts litmus check` refused its arguments, could not read the file, or the checker
/// refused the test (at `line`: where its threads start).
#[derive(Debug, thiserror::Error)]
pub enum CheckFileError {
    #[error("unknown model `{0}`; allowed: ptx-v6.0, ptx-v7.5")]
    UnknownModel(String),
    #[error("--unroll must be at least 1")]
    ZeroUnroll,
    #[error(transparent)]
    File(#[from] crate::LitmusFileError),
    #[error("{}:{line}:1: {source}", path.display())]
    Refused {
        path: std::path::PathBuf,
        line: usize,
        source: ModelError,
    },
}

/// Checks a test against the model (default options); an error when the test is too large
/// to enumerate.
pub fn try_check(test: &LitmusTest) -> Result<ModelVerdict, ModelError> {
    try_check_with(test, &Options::default())
}

/// Checks a test: every combination of thread paths under the loop bound, each enumerated.
pub fn try_check_with(test: &LitmusTest, opts: &Options) -> Result<ModelVerdict, ModelError> {
    let model = opts.model.unwrap_or(if test.uses_proxies() {
        Model::V75
    } else {
        Model::V60
    });
    if model == Model::V60 && test.uses_proxies() {
        return Err(ModelError::NeedsPtx75 {
            test: test.name.clone(),
        });
    }
    let per_thread: Vec<Vec<unroll::Path>> = test
        .threads
        .iter()
        .map(|t| unroll::paths(t, opts.unroll))
        .collect::<Result<_, _>>()?;
    // Checked: a product that wrapped past 2^128 would pass the guard.
    let combos: Option<u128> = per_thread
        .iter()
        .try_fold(1u128, |a, v| a.checked_mul(v.len() as u128));
    match combos {
        Some(c) if c <= opts.max_candidates => {}
        _ => {
            return Err(ModelError::TooManyCombinations {
                test: test.name.clone(),
                combinations: combos
                    .map_or_else(|| "more than 2^128".to_string(), |c| c.to_string()),
                max: opts.max_candidates,
            });
        }
    }
    let mut term_set = BTreeSet::new();
    test.condition.prop.terms(&mut term_set);
    let terms: Vec<Term> = term_set.into_iter().collect();
    let programs = programs(test, &per_thread, model, opts)?;
    let mut acc = Acc {
        all_satisfy: true,
        liveness: opts.liveness,
        ..Acc::default()
    };
    for (p, cut) in &programs {
        enumerate(test, p, &terms, *cut, &mut acc)?;
    }
    Ok(verdict(test, acc, terms, model, opts))
}

/// Every terminating-or-cut combination of thread paths as a program (with whether the loop
/// bound cut it), built before any enumeration so that the size is known up front.
fn programs(
    test: &LitmusTest,
    per_thread: &[Vec<unroll::Path>],
    model: Model,
    opts: &Options,
) -> Result<Vec<(events::Program, bool)>, ModelError> {
    let mut programs = Vec::new();
    let mut total: u128 = 0;
    let mut idx = vec![0usize; per_thread.len()];
    loop {
        let paths: Vec<&unroll::Path> = idx
            .iter()
            .enumerate()
            .map(|(t, &i)| &per_thread[t][i])
            .collect();
        let has_spin = paths.iter().any(|p| p.end == unroll::End::Spin);
        let cut = paths.iter().any(|p| p.end == unroll::End::Cut);
        let p = build(test, &paths, model)?;
        // A spin without cas operations is non-terminating whatever the values; one
        // whose only effects are cas operations is decided per execution.
        let skip = has_spin && !opts.liveness && p.spin_cas.is_empty();
        total = total.saturating_add(if skip { 0 } else { estimate(&p) });
        if total > opts.max_candidates {
            let shown = if total == u128::MAX {
                "more than 2^128".to_string()
            } else {
                format!("at least {total}")
            };
            return Err(ModelError::TooManyCandidates {
                test: test.name.clone(),
                estimate: shown,
                unroll: opts.unroll,
                max: opts.max_candidates,
            });
        }
        if !skip {
            programs.push((p, cut));
        }
        if !enumerate::next_choice(&mut idx, |k| per_thread[k].len()) {
            return Ok(programs);
        }
    }
}

/// The verdict from what the enumeration accumulated.
fn verdict(
    test: &LitmusTest,
    acc: Acc,
    terms: Vec<Term>,
    model: Model,
    opts: &Options,
) -> ModelVerdict {
    let Acc {
        candidates,
        consistent,
        allowed,
        all_satisfy,
        mut rejected,
        allowed_outcomes,
        bound_reached,
        hang,
        liveness: _,
        stuck_witness,
    } = acc;
    if allowed {
        rejected.clear();
    }
    let condition_holds = match test.condition.quantifier {
        Quantifier::Exists => allowed,
        Quantifier::NotExists => !allowed,
        Quantifier::Forall => all_satisfy,
    };
    // A cut execution could, beyond the bound, still decide the condition: only a verdict
    // that no further execution can change stands (an exists witness, a forall/~exists
    // counterexample).
    let decided = match test.condition.quantifier {
        Quantifier::Exists | Quantifier::NotExists => allowed,
        Quantifier::Forall => !all_satisfy,
    };
    ModelVerdict {
        allowed,
        condition_holds,
        candidates,
        consistent,
        rejected,
        terms,
        allowed_outcomes,
        error: None,
        bound_reached: bound_reached && !decided,
        model,
        hang,
        liveness_violation: opts.liveness.then_some(stuck_witness),
    }
}

/// What `gpucts litmus check` found: the test read from the file and the model's verdict.
/// Displays as the command's report ([`report`]).
#[derive(Debug, Clone)]
pub struct FileVerdict {
    pub test: LitmusTest,
    pub verdict: ModelVerdict,
}

impl fmt::Display for FileVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&report(&self.test, &self.verdict))
    }
}

/// `gpucts litmus check FILE`: the model's verdict on the file's test.
pub fn check_file(path: &std::path::Path) -> Result<FileVerdict, CheckFileError> {
    check_file_with(path, DEFAULT_UNROLL, None, false, None)
}

/// `gpucts litmus check [--unroll N] [--model ptx-v6.0|ptx-v7.5] [--liveness] FILE`.
pub fn check_file_with(
    path: &std::path::Path,
    unroll: u32,
    model: Option<&str>,
    liveness: bool,
    max_candidates: Option<u128>,
) -> Result<FileVerdict, CheckFileError> {
    let max_candidates = max_candidates.unwrap_or(MAX_CANDIDATES);
    let model = match model {
        None => None,
        Some(m) => {
            Some(Model::parse(m).ok_or_else(|| CheckFileError::UnknownModel(m.to_string()))?)
        }
    };
    if unroll == 0 {
        return Err(CheckFileError::ZeroUnroll);
    }
    let test = crate::load_file(path)?;
    let opts = Options {
        unroll,
        model,
        liveness,
        max_candidates,
    };
    let verdict = try_check_with(&test, &opts).map_err(|source| {
        // A refusal of the whole test (its state space) points at where its threads start:
        // `threads:` in YAML, the `P0@...` header in Dat3M syntax.
        let line = gpucts_input::read_text(path)
            .ok()
            .and_then(|t| {
                t.lines()
                    .position(|l| l.starts_with("threads:") || l.trim_start().starts_with("P0"))
            })
            .map_or(1, |i| i + 1);
        CheckFileError::Refused {
            path: path.to_path_buf(),
            line,
            source,
        }
    })?;
    Ok(FileVerdict { test, verdict })
}

/// The printable report of `gpucts litmus check`.
pub fn report(test: &LitmusTest, v: &ModelVerdict) -> String {
    let mut s = String::new();
    s.push_str(&format!("test: {}\n", test.name));
    s.push_str(&format!("condition: {}\n", test.condition));
    if let Some(l) = &v.liveness_violation {
        match l {
            Some(w) => s.push_str(&format!(
                "liveness: violation (under a fair scheduler some execution does not terminate)\n  {w}\n"
            )),
            None => s.push_str(
                "liveness: terminates (no consistent execution loops forever or blocks at a barrier)\n",
            ),
        }
    }
    if let Some(o) = v.outcome_text() {
        s.push_str(&format!("outcome: {o}\n"));
    }
    if v.error.is_some() {
        return s;
    }
    s.push_str(&format!("model: {}\n", v.model.name()));
    if v.outcome().is_none() {
        return s;
    }
    // One statement, read once: the quantified proposition, what the executions show, and
    // whether the condition therefore holds.
    let prop = test.condition.to_string();
    let prop = prop.split_once(' ').map_or(prop.as_str(), |(_, p)| p);
    let q = test.condition.quantifier.keyword();
    let found = match (test.condition.quantifier, v.allowed, v.condition_holds) {
        (Quantifier::Exists | Quantifier::NotExists, true, _) => {
            "some consistent execution reaches it".to_string()
        }
        (Quantifier::Exists | Quantifier::NotExists, false, _) => {
            "no consistent execution reaches it".to_string()
        }
        (Quantifier::Forall, _, true) => "every consistent execution satisfies it".to_string(),
        (Quantifier::Forall, _, false) => {
            "some consistent execution does not satisfy it".to_string()
        }
    };
    s.push_str(&format!(
        "{q} {prop}: {found}, so the condition {}\n",
        if v.condition_holds { "holds" } else { "fails" }
    ));
    s.push_str(&format!(
        "executions: {} candidates, {} consistent\n",
        v.candidates, v.consistent
    ));
    let mut counts: BTreeMap<Axiom, usize> = BTreeMap::new();
    for r in &v.rejected {
        *counts.entry(r.axiom).or_default() += 1;
    }
    for (a, c) in &counts {
        s.push_str(&format!("ruled out by {a}: {c} candidate(s)\n"));
    }
    const SHOWN: usize = 200;
    for r in v.rejected.iter().take(SHOWN) {
        s.push_str(&format!("  {}: {}\n", r.axiom, r.execution));
    }
    if v.rejected.len() > SHOWN {
        s.push_str(&format!("  ... and {} more\n", v.rejected.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod async_tests;
#[cfg(test)]
mod flow_tests;
#[cfg(test)]
mod tests;
