//! `gpucts litmus run FILE...`: a user's own litmus tests (gpucts YAML or Dat3M `.litmus`,
//! whatever `litmus check` reads) run on GPU 0 through the GPU worker the suite's
//! `atomics.gpu.*` cases use ([`OnWorker`]: one context, counting kernels, outcomes counted on
//! the device), or with `--emulate` through the same worker on the PTX emulator
//! ([`super::emulate::EmulatorExecutor`]). Either engine gives a histogram of outcomes; one report and one exit code are made from it: each
//! outcome judged by the PTX memory model (the check `litmus check` does), forbidden outcomes
//! first, weak outcomes and rates, and exit 101 when any outcome the model forbids was seen.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::emulate::{self, EmulateError};
use super::layout::{GeometryError, Histogram, StressParams};
use super::{layout, worker, RunError};
use crate::atomics::litmus::{AtomOp, LitmusTest, Op, Operand, Term};
use crate::atomics::model::{self, ModelVerdict};
use crate::backend::cuda::Session;

/// Exit codes of the command (the project's: 0 ok, 101 a failure seen, 2 bad input; and 3:
/// a test ran but none of its instances was judged, so it proved nothing).
pub(crate) const EXIT_OK: i32 = 0;
pub(crate) const EXIT_FORBIDDEN: i32 = 101;
pub(crate) const EXIT_BAD_INPUT: i32 = 2;
pub(crate) const EXIT_NOTHING_JUDGED: i32 = 3;

/// Launches per test under `--emulate` when `--iterations` is not given: with
/// [`emulate_defaults`] (64 instances a launch for 2 threads) about 76,000 instances per
/// CPU-second in a release build, so a 2- to 4-thread test takes 0.4 to 1.5 s (docs/STATUS.md).
pub(crate) const EMULATE_ITERATIONS: u64 = 500;

/// Launches per test on the GPU when `--iterations` is not given (the suite's figure).
pub(crate) const GPU_ITERATIONS: u64 = super::DEFAULT_ITERATIONS;

/// The emulator's default launch shape: the suite's defaults scaled down to what an
/// interpreter runs in about a second (one testing CTA per role at most 8, one warp per
/// role within a CTA, no stressing CTAs, light stress). [`params_for`] widens the shape
/// when a test has more roles than it places.
pub(crate) fn emulate_defaults() -> StressParams {
    StressParams {
        testing_workgroups: 2,
        workgroup_size: 32,
        max_workgroups: 2,
        stress_line_size: 64,
        stress_target_lines: 2,
        stress_iterations: 4,
        pre_stress_iterations: 2,
        ..StressParams::default()
    }
}

/// Which engine ran a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    Gpu,
    Emulator,
}

/// Where the stress parameters come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StressSource {
    /// The engine's defaults.
    Defaults,
    /// `--stress-file F`: a whole set (a `litmus tune --json` record: its best set) or a plain
    /// object whose keys replace the engine's defaults.
    File(PathBuf),
    /// `--stress KEY=VALUE...`: each replaces one default.
    Pairs(Vec<String>),
}

/// What the command was asked.
#[derive(Debug, Clone)]
pub struct Request {
    pub files: Vec<PathBuf>,
    pub iterations: Option<u64>,
    pub stress: StressSource,
    pub json: Option<PathBuf>,
    pub emulate: bool,
    /// `--device`: the GPU it runs on (unused with `emulate`).
    pub device: crate::backend::cuda::DeviceSelector,
    /// Where the command looks for its tools (the ptxas that compiles kernels ahead).
    pub tools: crate::backend::toolchain::ToolSettings,
}

/// Bad arguments: the whole command stops with exit 2 before any test runs.
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    #[error("--stress {pair}: expected KEY=VALUE")]
    NotAPair { pair: String },
    #[error("--stress {key}: unknown key; the keys are {}", keys().join(", "))]
    UnknownKey { key: String },
    #[error("--stress {key}={value}: {why}")]
    BadValue {
        key: String,
        value: String,
        why: String,
    },
    #[error("--stress-file {path}: {why}")]
    StressFile { path: String, why: String },
    #[error("--iterations must be at least 1")]
    ZeroIterations,
    #[error("{path}: {why}")]
    Files { path: String, why: String },
    /// GPU 0 could not be opened (no driver, no device).
    #[error("litmus run needs a GPU: {0}; --emulate runs the kernels in the PTX emulator instead")]
    NoGpu(String),
    #[error("--json {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// The serde names of [`StressParams`]' fields (the keys `--stress` accepts).
pub fn keys() -> Vec<String> {
    match serde_json::to_value(StressParams::default()) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    }
}

/// `base` with the keys of `over` (a JSON object) replaced, checked by [`StressParams`]' own
/// deserializer (unknown keys and bad values are refused there).
fn merge(
    base: &StressParams,
    over: &serde_json::Map<String, serde_json::Value>,
) -> Result<StressParams, String> {
    let mut v = serde_json::to_value(base).map_err(|e| e.to_string())?;
    if let serde_json::Value::Object(m) = &mut v {
        for (k, x) in over {
            m.insert(k.clone(), x.clone());
        }
    }
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// `--stress KEY=VALUE` pairs over `base`. A value is read as YAML, so `64`, `true` and
/// `store-load` all mean what they say.
pub(crate) fn apply_pairs(base: &StressParams, pairs: &[String]) -> Result<StressParams, ArgError> {
    let known = keys();
    let mut p = base.clone();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(ArgError::NotAPair { pair: pair.clone() });
        };
        let key = key.trim();
        if !known.iter().any(|k| k == key) {
            return Err(ArgError::UnknownKey { key: key.into() });
        }
        let bad = |why: String| ArgError::BadValue {
            key: key.into(),
            value: value.into(),
            why,
        };
        let parsed: serde_json::Value =
            serde_saphyr::from_str(value).map_err(|e| bad(e.to_string()))?;
        let mut over = serde_json::Map::new();
        over.insert(key.into(), parsed);
        p = merge(&p, &over).map_err(bad)?;
    }
    Ok(p)
}

/// The parameter set of a `--stress-file`: a `litmus tune --json` record (its best-ranked set,
/// as `litmus tune` ranks them: most tests with a weak outcome, then most weak outcomes per
/// kernel-second) or a plain StressParams object (JSON or YAML) whose keys replace `base`.
/// Returns the set and a line saying which it was.
pub(crate) fn read_stress_file(
    path: &Path,
    base: &StressParams,
) -> Result<(StressParams, String), ArgError> {
    let bad = |why: String| ArgError::StressFile {
        path: path.display().to_string(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    // YAML is a superset of JSON: one reader for both.
    let v: serde_json::Value = serde_saphyr::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let serde_json::Value::Object(m) = v else {
        return Err(bad(
            "expected an object of stress parameters or a `litmus tune --json` record".into(),
        ));
    };
    if m.contains_key("configs") && m.contains_key("runs") {
        let t: TuneRecord = serde_json::from_value(serde_json::Value::Object(m))
            .map_err(|e| bad(format!("a `litmus tune --json` record: {e}")))?;
        let k = t
            .best()
            .ok_or_else(|| bad("the tuning record has no parameter sets".into()))?;
        let set = t.configs[k].clone();
        return Ok((
            set,
            format!("set {k} of the tuning record {} (its best)", path.display()),
        ));
    }
    let p = merge(base, &m).map_err(bad)?;
    Ok((p, format!("{}", path.display())))
}

/// The parts of a `litmus tune --json` record ([`super::tune::Tuning`]) that rank its sets.
#[derive(serde::Deserialize)]
struct TuneRecord {
    configs: Vec<StressParams>,
    runs: Vec<TuneRunRecord>,
}

#[derive(serde::Deserialize)]
struct TuneRunRecord {
    config: usize,
    result: String,
    #[serde(default)]
    weak: u64,
    #[serde(default)]
    kernel_s: f64,
}

impl TuneRecord {
    /// `litmus tune`'s ranking ([`super::tune::ranking`]): most tests with a weak outcome,
    /// then most weak outcomes per kernel-second, then the lowest set number.
    fn best(&self) -> Option<usize> {
        let mut score = vec![(0usize, 0f64); self.configs.len()];
        for r in &self.runs {
            if r.result == "ran" && r.weak > 0 {
                if let Some(s) = score.get_mut(r.config) {
                    s.0 += 1;
                    s.1 += r.weak as f64 / r.kernel_s.max(1e-9);
                }
            }
        }
        (0..score.len()).min_by(|&a, &b| {
            score[b]
                .0
                .cmp(&score[a].0)
                .then(score[b].1.total_cmp(&score[a].1))
                .then(a.cmp(&b))
        })
    }
}

/// The test files named: files as given, directories walked for `.litmus`, `.yaml` and
/// `.yml` files (sorted).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ArgError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out)?;
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("litmus" | "yaml" | "yml")
            ) {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let before = out.len();
            walk(p, &mut out).map_err(|e| ArgError::Files {
                path: p.display().to_string(),
                why: e.to_string(),
            })?;
            if out.len() == before {
                return Err(ArgError::Files {
                    path: p.display().to_string(),
                    why: "a directory without .litmus, .yaml or .yml files".into(),
                });
            }
        } else {
            // A missing file is that file's error, reported beside the others.
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// What one engine gave for one test.
#[derive(Debug, Clone)]
pub struct Seen {
    pub histogram: Histogram,
    pub launches: u64,
    pub instances: u64,
    /// Launch-to-completion time summed over launches (the GPU's; none for the emulator).
    pub kernel_time: Option<Duration>,
    /// The whole run of the test: kernel generation (and JIT), launches, copies, decoding.
    pub end_to_end: Duration,
    pub barrier_timeouts: u64,
    /// Instances a thread of which stopped at the kernel's loop cap: no outcome.
    pub did_not_terminate: u64,
    /// Instances a thread of which ran a loop iteration with effects past the model's loop
    /// bound: an execution the verdict did not enumerate, not judged.
    pub past_model_bound: u64,
}

/// Why an engine gave no histogram: the test is one it cannot express (a refusal, naming the
/// construct), or it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotRun {
    Refused(String),
    /// Why, and the error's kind ([`error_kind`]).
    Error(String, String),
}

/// What kind of error stopped a test's run, for the record's `error` field: the CUresult name
/// of a driver error (`CUDA_ERROR_ILLEGAL_INSTRUCTION`: a kernel fault), the emulator's finding,
/// or the part of the harness that failed.
pub(crate) fn error_kind(e: &RunError) -> String {
    match e {
        RunError::Driver(d) => format!("{:?}", d.code),
        RunError::Load(l) => format!("{:?}", l.code),
        RunError::Emulate(EmulateError::Barrier(_)) => "emulator: barrier misuse".into(),
        RunError::Emulate(EmulateError::Deadlock) => "emulator: deadlock".into(),
        RunError::Emulate(EmulateError::Runaway) => "emulator: runaway".into(),
        RunError::Emulate(_) => "emulator".into(),
        RunError::Worker(_) => "worker".into(),
        RunError::Decode(_) | RunError::Count(_) => "decode".into(),
        RunError::Model(_) => "model".into(),
        RunError::Geometry(_) | RunError::Kernel(_) => "kernel".into(),
    }
}

/// An engine: GPU 0 through the suite's runner, or the emulator.
pub(crate) trait Runner {
    fn kind(&self) -> Engine;
    fn run(
        &self,
        test: &LitmusTest,
        verdict: &ModelVerdict,
        params: &StressParams,
        launches: u64,
        seed: u64,
    ) -> Result<Seen, NotRun>;
}

/// An engine through the GPU worker ([`worker::Worker`]), as the suite's `atomics.gpu.*` cases
/// run: the test's counting kernel (outcomes counted on the device) in a batch, on one
/// executor for the whole command: GPU 0's context, or the PTX emulator (a cluster test in a
/// cluster launch of its own shape). A test the worker does not take runs on the per-test
/// path instead, which says what it said before: one whose counting kernel is refused where
/// the plain kernel may not be.
#[derive(Debug)]
pub(crate) struct OnWorker<E: worker::Executor> {
    worker: RefCell<worker::Worker<E>>,
}

impl<E: worker::Executor> OnWorker<E> {
    pub fn new(executor: E) -> OnWorker<E> {
        OnWorker {
            worker: RefCell::new(worker::Worker::new(executor)),
        }
    }

    /// The test's run on the worker, or `None` when the per-test path should run it.
    fn run_on_worker(
        &self,
        test: &LitmusTest,
        params: &StressParams,
        launches: u64,
        budget: Option<Duration>,
        seed: u64,
    ) -> Option<Result<Seen, NotRun>> {
        let start = Instant::now();
        if let Err(e) = layout::Geometry::new(test, params) {
            return Some(Err(NotRun::Refused(e.to_string())));
        }
        let job = worker::Job {
            test: test.clone(),
            params: params.clone(),
            launches,
            budget,
            seed,
        };
        let report = self.worker.borrow_mut().run(&[job]).pop()?;
        match report {
            Ok(r) => Some(Ok(Seen {
                histogram: r.histogram,
                launches: r.launches,
                instances: r.instances,
                kernel_time: Some(r.kernel_time),
                end_to_end: start.elapsed(),
                barrier_timeouts: r.barrier_timeouts,
                did_not_terminate: r.did_not_terminate,
                past_model_bound: r.past_model_bound,
            })),
            Err(
                RunError::Kernel(_)
                | RunError::Count(_)
                | RunError::Emulate(EmulateError::Unsupported(_) | EmulateError::Kernel(_)),
            ) => None,
            Err(e) => Some(Err(NotRun::Error(e.to_string(), error_kind(&e)))),
        }
    }
}

impl Runner for OnWorker<worker::CudaExecutor> {
    fn kind(&self) -> Engine {
        Engine::Gpu
    }
    fn run(
        &self,
        test: &LitmusTest,
        verdict: &ModelVerdict,
        params: &StressParams,
        launches: u64,
        seed: u64,
    ) -> Result<Seen, NotRun> {
        let budget = Some(super::RUN_BUDGET);
        match self.run_on_worker(test, params, launches, budget, seed) {
            Some(seen) => seen,
            None => {
                let (seen, sticky) = {
                    let w = self.worker.borrow();
                    per_test_on_gpu(
                        w.executor().session(),
                        test,
                        verdict,
                        params,
                        launches,
                        seed,
                    )
                };
                // A kernel fault there leaves the worker's context unusable too.
                if let Some(code) = sticky {
                    self.worker.borrow_mut().recover(&code);
                }
                seen
            }
        }
    }
}

impl Runner for OnWorker<emulate::EmulatorExecutor> {
    fn kind(&self) -> Engine {
        Engine::Emulator
    }
    fn run(
        &self,
        test: &LitmusTest,
        verdict: &ModelVerdict,
        params: &StressParams,
        launches: u64,
        seed: u64,
    ) -> Result<Seen, NotRun> {
        match self.run_on_worker(test, params, launches, None, seed) {
            // The emulator's launch time is an interpreter's: no kernel time is reported.
            Some(seen) => seen.map(|s| Seen {
                kernel_time: None,
                ..s
            }),
            None => Emulator.run(test, verdict, params, launches, seed),
        }
    }
}

/// One test's run on `session` through [`super::run`] (a kernel of its own, outcomes decoded on
/// the host), and the sticky CUDA error it left the context with, if any
/// ([`worker::sticky_error`]).
fn per_test_on_gpu(
    session: &Session,
    test: &LitmusTest,
    verdict: &ModelVerdict,
    params: &StressParams,
    launches: u64,
    seed: u64,
) -> (Result<Seen, NotRun>, Option<String>) {
    let start = Instant::now();
    let r = super::run(
        session,
        test,
        verdict,
        params,
        launches,
        Some(super::RUN_BUDGET),
        seed,
    );
    let sticky = r.as_ref().err().and_then(worker::sticky_error);
    let seen = match r {
        Ok(r) => Ok(Seen {
            histogram: r.histogram,
            launches: r.launches,
            instances: r.instances,
            kernel_time: Some(r.kernel_time),
            end_to_end: start.elapsed(),
            barrier_timeouts: r.barrier_timeouts,
            did_not_terminate: r.did_not_terminate,
            past_model_bound: r.past_model_bound,
        }),
        Err(e @ (RunError::Geometry(_) | RunError::Kernel(_))) => {
            Err(NotRun::Refused(e.to_string()))
        }
        Err(e) => Err(NotRun::Error(e.to_string(), error_kind(&e))),
    };
    (seen, sticky)
}

/// The PTX emulator ([`emulate::emulate`]): the same generated kernel, tables and decoding,
/// run by an interpreter with a sequentially consistent scheduler.
#[derive(Debug)]
pub(crate) struct Emulator;

impl Runner for Emulator {
    fn kind(&self) -> Engine {
        Engine::Emulator
    }
    fn run(
        &self,
        test: &LitmusTest,
        _verdict: &ModelVerdict,
        params: &StressParams,
        launches: u64,
        seed: u64,
    ) -> Result<Seen, NotRun> {
        let start = Instant::now();
        match emulate::emulate(test, params, launches, seed) {
            Ok(e) => Ok(Seen {
                histogram: e.histogram,
                launches: e.launches,
                instances: e.instances,
                kernel_time: None,
                end_to_end: start.elapsed(),
                barrier_timeouts: e.barrier_timeouts,
                did_not_terminate: e.did_not_terminate,
                past_model_bound: e.past_model_bound,
            }),
            Err(
                e @ (EmulateError::Geometry(_)
                | EmulateError::Kernel(_)
                | EmulateError::Unsupported(_)),
            ) => Err(NotRun::Refused(e.to_string())),
            Err(e) => {
                let why = e.to_string();
                Err(NotRun::Error(why, error_kind(&RunError::Emulate(e))))
            }
        }
    }
}

/// The emulator's parameters for `test`: [`emulate_defaults`], widened to place the test
/// (more testing CTAs, or more warps per CTA, for its roles), then the user's overrides.
pub(crate) fn params_for(
    test: &LitmusTest,
    user: &dyn Fn(&StressParams) -> Result<StressParams, ArgError>,
) -> Result<StressParams, ArgError> {
    let mut base = emulate_defaults();
    // At most two widenings: the test is then either placed or refused for another reason.
    for _ in 0..2 {
        match layout::Geometry::new(test, &base) {
            Err(GeometryError::TooFewUnits {
                roles, unit, units, ..
            }) => {
                let n = roles.next_power_of_two();
                if unit == "testing CTAs" {
                    base.testing_workgroups = n;
                    base.max_workgroups = base.max_workgroups.max(n);
                } else if unit == "testing clusters" {
                    // `units` clusters of `testing_workgroups / units` CTAs each: one
                    // cluster per thread, of the same size.
                    let cluster = base.testing_workgroups / units.max(1);
                    base.testing_workgroups = n * cluster;
                    base.max_workgroups = base.max_workgroups.max(n * cluster);
                } else {
                    base.workgroup_size = (n * 32).max(base.workgroup_size);
                }
            }
            _ => break,
        }
    }
    user(&base)
}

/// One outcome of a test's histogram as the report gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutcomeRecord {
    /// Term (as the model names it: `P1:r0`, `x`) → value.
    pub values: BTreeMap<String, i64>,
    pub count: u64,
    /// Some consistent execution of the model gives it. Judged instances ran no effectful
    /// loop iteration past the model's bound (those are `past_model_bound`), so they are
    /// executions the model enumerated: an outcome it does not give is forbidden, on a
    /// test whose verdict reached the bound too.
    pub allowed: bool,
    /// Allowed, and not an outcome of any sequentially consistent interleaving.
    pub weak: bool,
}

/// The model's verdict on a test, as `litmus check` gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VerdictRecord {
    /// `ptx-v6.0` or `ptx-v7.5`.
    pub model: String,
    pub condition: String,
    /// `allowed`, `forbidden` or `unknown (why)`: the condition's outcome.
    pub outcome: String,
    /// How `weak` was decided: `sequential-consistency` (the outcome is not one of the test's
    /// sequentially consistent outcomes, enumerated) or `condition` (the outcome satisfies
    /// the test's condition: used where the enumerator does not reach, i.e. tests with
    /// branches, barriers or register arithmetic).
    pub weak_basis: &'static str,
}

/// Whether a test ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ran,
    Refused,
    Error,
}

/// One test's record in the `--json` document (docs/LITMUS.md describes every field).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TestRecord {
    /// The model's terms in its order (the condition's), for the text report.
    #[serde(skip)]
    pub terms: Vec<String>,
    pub file: String,
    /// The test's name (null when the file could not be read).
    pub name: Option<String>,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// For status `error`: the error's kind ([`error_kind`]), e.g. the CUresult name of a
    /// kernel fault (`CUDA_ERROR_ILLEGAL_INSTRUCTION`), `input` (the file), `model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub verdict: Option<VerdictRecord>,
    /// The histogram, forbidden outcomes first, then by count (most first).
    pub outcomes: Vec<OutcomeRecord>,
    /// Instances with an outcome the model forbids.
    pub forbidden_seen: u64,
    /// Instances judged against the model: those with an outcome (`instances` less
    /// `did_not_terminate` and `past_model_bound`). 0 for a test that ran proves nothing.
    pub judged: u64,
    /// Instances with a weak outcome.
    pub weak_seen: u64,
    pub instances: u64,
    pub launches: u64,
    pub engine: Engine,
    pub params: Option<StressParams>,
    /// Instances per second of summed kernel time (GPU only).
    pub instances_per_kernel_second: Option<f64>,
    /// Instances per second of the test's whole run (generation, JIT, launches, decoding).
    pub instances_per_second_end_to_end: Option<f64>,
    /// Weak outcomes per second of the test's whole run.
    pub weak_per_second_end_to_end: Option<f64>,
    pub seconds_end_to_end: Option<f64>,
    pub barrier_timeouts: u64,
    /// Instances that did not terminate within the loop cap (no outcome recorded for them).
    pub did_not_terminate: u64,
    /// Instances that ran a loop iteration with effects past the model's loop bound (Dat3M's
    /// 1): executions the model's verdict did not enumerate, so neither allowed nor forbidden
    /// and not in `outcomes`.
    pub past_model_bound: u64,
}

impl TestRecord {
    fn not_run(
        file: &Path,
        name: Option<String>,
        engine: Engine,
        status: Status,
        why: String,
    ) -> Self {
        TestRecord {
            terms: Vec::new(),
            file: file.display().to_string(),
            name,
            status,
            why: Some(why),
            error: (status == Status::Error).then(|| "input".to_string()),
            verdict: None,
            outcomes: Vec::new(),
            forbidden_seen: 0,
            judged: 0,
            weak_seen: 0,
            instances: 0,
            launches: 0,
            engine,
            params: None,
            instances_per_kernel_second: None,
            instances_per_second_end_to_end: None,
            weak_per_second_end_to_end: None,
            seconds_end_to_end: None,
            barrier_timeouts: 0,
            did_not_terminate: 0,
            past_model_bound: 0,
        }
    }

    /// The exit code this test alone gives.
    pub(crate) fn exit_code(&self) -> i32 {
        if self.forbidden_seen > 0 {
            EXIT_FORBIDDEN
        } else if self.status != Status::Ran {
            EXIT_BAD_INPUT
        } else if self.judged == 0 {
            EXIT_NOTHING_JUDGED
        } else {
            EXIT_OK
        }
    }
}

/// The outcomes of `test` under sequential consistency: every interleaving of its threads'
/// operations, each executed atomically in program order (Lamport's definition), the terms
/// read at the end. `None` for a test beyond this enumerator (branches, barriers, register
/// arithmetic); the caller then calls an outcome weak by the test's condition.
pub(crate) fn sc_outcomes(test: &LitmusTest, terms: &[Term]) -> Option<BTreeSet<Vec<i64>>> {
    type Regs = Vec<BTreeMap<String, i64>>;
    for t in &test.threads {
        for op in &t.ops {
            if !matches!(
                op,
                Op::Ld { .. }
                    | Op::St { .. }
                    | Op::Atom { .. }
                    | Op::Red { .. }
                    | Op::Fence { .. }
                    | Op::Mov { .. }
            ) {
                return None;
            }
        }
    }
    let val = |o: &Operand, r: &BTreeMap<String, i64>| match o {
        Operand::Const(c) => *c,
        Operand::Reg(x) => *r.get(x).unwrap_or(&0),
    };
    let mut out = BTreeSet::new();
    // Depth-first over states (program counters, memory, registers); a state reached twice
    // has the same futures, so each is expanded once.
    let start_regs: Regs = test
        .threads
        .iter()
        .map(|t| t.regs.iter().map(|(k, v)| (k.clone(), *v)).collect())
        .collect();
    let mut stack = vec![(
        vec![0usize; test.threads.len()],
        BTreeMap::<String, i64>::new(),
        start_regs,
    )];
    let mut seen: HashSet<(Vec<usize>, BTreeMap<String, i64>, Regs)> = HashSet::new();
    while let Some(state) = stack.pop() {
        if !seen.insert(state.clone()) {
            continue;
        }
        let (pcs, mem, regs) = state;
        let read = |m: &BTreeMap<String, i64>, l: &str| *m.get(l).unwrap_or(&test.init_of(l));
        let mut any = false;
        for (t, thread) in test.threads.iter().enumerate() {
            let Some(op) = thread.ops.get(pcs[t]) else {
                continue;
            };
            any = true;
            let (mut mem, mut regs, mut pcs) = (mem.clone(), regs.clone(), pcs.clone());
            match op {
                Op::Ld { reg, loc, .. } => {
                    let x = read(&mem, loc);
                    regs[t].insert(reg.clone(), x);
                }
                Op::St { loc, val: v, .. } => {
                    let x = val(v, &regs[t]);
                    mem.insert(loc.clone(), x);
                }
                Op::Atom {
                    op,
                    reg,
                    loc,
                    val: v,
                    cmp,
                    ..
                } => {
                    let old = read(&mem, loc);
                    let b = val(v, &regs[t]);
                    let new = match (op, cmp) {
                        (AtomOp::Cas, Some(c)) if old != val(c, &regs[t]) => old,
                        _ => op.apply(old, b),
                    };
                    mem.insert(loc.clone(), new);
                    regs[t].insert(reg.clone(), old);
                }
                Op::Red {
                    op, loc, val: v, ..
                } => {
                    let new = op.apply(read(&mem, loc), val(v, &regs[t]));
                    mem.insert(loc.clone(), new);
                }
                Op::Mov { reg, val: v } => {
                    let x = val(v, &regs[t]);
                    regs[t].insert(reg.clone(), x);
                }
                _ => {}
            }
            pcs[t] += 1;
            stack.push((pcs, mem, regs));
        }
        if !any {
            out.insert(
                terms
                    .iter()
                    .map(|term| match term {
                        Term::Reg { thread, reg } => regs
                            .get(*thread)
                            .and_then(|r| r.get(reg))
                            .copied()
                            .unwrap_or(0),
                        Term::Loc(l) => read(&mem, l),
                    })
                    .collect(),
            );
        }
    }
    Some(out)
}

/// A histogram judged: each outcome allowed or forbidden by the model (as
/// [`super::classify`] judges it), and weak or not. `sc` is the test's sequentially
/// consistent outcomes when known.
pub fn judge(
    test: &LitmusTest,
    verdict: &ModelVerdict,
    sc: Option<&BTreeSet<Vec<i64>>>,
    histogram: &Histogram,
) -> Vec<OutcomeRecord> {
    let mut out: Vec<OutcomeRecord> = histogram
        .iter()
        .map(|(o, &count)| {
            let allowed = verdict.outcome_allowed(o);
            let weak = allowed
                && match sc {
                    Some(sc) => !sc.contains(o),
                    None => {
                        let value =
                            |t: &Term| verdict.terms.iter().position(|x| x == t).map(|i| o[i]);
                        test.condition.prop.eval(&value) == Some(true)
                    }
                };
            OutcomeRecord {
                values: verdict
                    .terms
                    .iter()
                    .zip(o)
                    .map(|(t, v)| (t.to_string(), *v))
                    .collect(),
                count,
                allowed,
                weak,
            }
        })
        .collect();
    let forbidden = |r: &OutcomeRecord| !r.allowed;
    out.sort_by(|a, b| {
        forbidden(b)
            .cmp(&forbidden(a))
            .then(b.count.cmp(&a.count))
            .then(a.values.cmp(&b.values))
    });
    out
}

/// A test's record from what its engine gave.
pub fn record(
    file: &Path,
    test: &LitmusTest,
    verdict: &ModelVerdict,
    engine: Engine,
    params: &StressParams,
    seen: &Seen,
) -> TestRecord {
    let judged: u64 = seen.histogram.values().sum();
    let counted = judged + seen.did_not_terminate + seen.past_model_bound;
    if counted != seen.instances {
        // A lost or doubly counted instance: a fault of the runner, no verdict.
        return TestRecord {
            error: Some("count".into()),
            ..TestRecord::not_run(
                file,
                Some(test.name.clone()),
                engine,
                Status::Error,
                format!(
                    "the counts do not add up to the {} instances run: {judged} outcomes + {} \
                     did not terminate + {} past the model's loop bound = {counted}",
                    seen.instances, seen.did_not_terminate, seen.past_model_bound
                ),
            )
        };
    }
    let sc = sc_outcomes(test, &verdict.terms);
    let outcomes = judge(test, verdict, sc.as_ref(), &seen.histogram);
    let forbidden_seen = outcomes
        .iter()
        .filter(|o| !o.allowed)
        .map(|o| o.count)
        .sum();
    let weak_seen = outcomes.iter().filter(|o| o.weak).map(|o| o.count).sum();
    let rate = |n: u64, d: Duration| {
        let s = d.as_secs_f64();
        (s > 0.0).then(|| n as f64 / s)
    };
    TestRecord {
        terms: verdict.terms.iter().map(|t| t.to_string()).collect(),
        file: file.display().to_string(),
        name: Some(test.name.clone()),
        status: Status::Ran,
        why: None,
        error: None,
        verdict: Some(VerdictRecord {
            model: <&str>::from(verdict.model).to_string(),
            condition: test.condition.to_string(),
            outcome: verdict.outcome_text().unwrap_or_default(),
            weak_basis: if sc.is_some() {
                "sequential-consistency"
            } else {
                "condition"
            },
        }),
        judged: seen.histogram.values().sum(),
        outcomes,
        forbidden_seen,
        weak_seen,
        instances: seen.instances,
        launches: seen.launches,
        engine,
        params: Some(params.clone()),
        instances_per_kernel_second: seen.kernel_time.and_then(|k| rate(seen.instances, k)),
        instances_per_second_end_to_end: rate(seen.instances, seen.end_to_end),
        weak_per_second_end_to_end: rate(weak_seen, seen.end_to_end),
        seconds_end_to_end: Some(seen.end_to_end.as_secs_f64()),
        barrier_timeouts: seen.barrier_timeouts,
        did_not_terminate: seen.did_not_terminate,
        past_model_bound: seen.past_model_bound,
    }
}

fn rate_text(r: Option<f64>) -> String {
    match r {
        None => "-".into(),
        Some(r) if r >= 1e6 => format!("{:.2}M/s", r / 1e6),
        Some(r) if r >= 1e3 => format!("{:.1}k/s", r / 1e3),
        Some(r) => format!("{r:.1}/s"),
    }
}

fn values_text(v: &BTreeMap<String, i64>, order: &[String]) -> String {
    let parts: Vec<String> = order
        .iter()
        .filter_map(|t| v.get(t).map(|x| format!("{t}={x}")))
        .collect();
    format!("({})", parts.join(", "))
}

/// The text of one test's report: its forbidden outcomes first (with their counts), then
/// the histogram, then the rates.
pub fn render(r: &TestRecord) -> String {
    let terms = &r.terms;
    let mut s = String::new();
    let name = r.name.as_deref().unwrap_or("-");
    match r.status {
        Status::Refused => {
            let _ = writeln!(
                s,
                "{}: {name}: refused: {}",
                r.file,
                r.why.as_deref().unwrap_or("")
            );
            return s;
        }
        Status::Error => {
            let _ = writeln!(s, "{}: error: {}", r.file, r.why.as_deref().unwrap_or(""));
            return s;
        }
        Status::Ran => {}
    }
    for o in r.outcomes.iter().filter(|o| !o.allowed) {
        let _ = writeln!(
            s,
            "FORBIDDEN {}: {name}: {} x{} (an outcome the PTX memory model forbids)",
            r.file,
            values_text(&o.values, terms),
            o.count
        );
    }
    if r.judged == 0 {
        let _ = writeln!(
            s,
            "NOTHING JUDGED {}: {name}: none of its {} instances gave an outcome to judge \
             ({} did not terminate, {} ran past the model's loop bound)",
            r.file, r.instances, r.did_not_terminate, r.past_model_bound
        );
    }
    let v = r.verdict.as_ref();
    let _ = writeln!(
        s,
        "{}: {name} ({}; {} {})",
        r.file,
        match r.engine {
            Engine::Gpu => "GPU 0",
            Engine::Emulator => "emulator",
        },
        v.map_or("", |v| v.model.as_str()),
        v.map_or(String::new(), |v| format!("{}: {}", v.condition, v.outcome)),
    );
    let width = r
        .outcomes
        .iter()
        .map(|o| values_text(&o.values, terms).len())
        .max()
        .unwrap_or(0);
    for o in &r.outcomes {
        let mark = if o.allowed { "allowed" } else { "forbidden" };
        let _ = writeln!(
            s,
            "  {:<width$} {:>10}  {mark}{}",
            values_text(&o.values, terms),
            o.count,
            if o.weak { ", weak" } else { "" }
        );
    }
    let kernel = match r.instances_per_kernel_second {
        Some(k) => format!("{} per kernel-second, ", rate_text(Some(k))),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "  {} instances in {} launches, {:.3} s: forbidden {}, weak {} ({} end to end); instances {kernel}{} end to end{}",
        r.instances,
        r.launches,
        r.seconds_end_to_end.unwrap_or(0.0),
        r.forbidden_seen,
        r.weak_seen,
        rate_text(r.weak_per_second_end_to_end),
        rate_text(r.instances_per_second_end_to_end),
        [
            (r.barrier_timeouts > 0)
                .then(|| format!("; {} spin-barrier timeouts", r.barrier_timeouts)),
            (r.did_not_terminate > 0).then(|| {
                format!(
                    "; {} instances did not terminate within {} loop iterations",
                    r.did_not_terminate,
                    super::kernel::LOOP_CAP
                )
            }),
            (r.past_model_bound > 0).then(|| {
                format!(
                    "; {} instances ran a loop iteration with effects past the model's loop bound \
                     ({}; not judged)",
                    r.past_model_bound,
                    super::kernel::MODEL_UNROLL
                )
            }),
        ]
        .into_iter()
        .flatten()
        .collect::<String>()
    );
    s
}

/// The last line: how many ran, were refused, erred, showed a forbidden outcome, and (when
/// some) ran without a judged instance.
pub fn tally(records: &[TestRecord]) -> String {
    let n = |s: Status| records.iter().filter(|r| r.status == s).count();
    let forbidden = records.iter().filter(|r| r.forbidden_seen > 0).count();
    let unjudged = records
        .iter()
        .filter(|r| r.status == Status::Ran && r.judged == 0)
        .count();
    let errors = n(Status::Error);
    let mut s = format!(
        "litmus run: {} ran, {} refused, {forbidden} with forbidden outcomes",
        n(Status::Ran),
        n(Status::Refused),
    );
    if errors > 0 {
        let _ = write!(s, ", {errors} errors");
    }
    if unjudged > 0 {
        let _ = write!(s, ", {unjudged} with no judged instance");
    }
    s
}

/// The worst exit code of the records: 101 when any saw a forbidden outcome, else 2 when any
/// did not run, else 3 when one ran without a judged instance, else 0.
pub(crate) fn exit_code(records: &[TestRecord]) -> i32 {
    let codes: Vec<i32> = records.iter().map(TestRecord::exit_code).collect();
    [EXIT_FORBIDDEN, EXIT_BAD_INPUT, EXIT_NOTHING_JUDGED]
        .into_iter()
        .find(|c| codes.contains(c))
        .unwrap_or(EXIT_OK)
}

/// Run every file on `engine`: each test's text report is passed to `print` as it finishes.
pub(crate) fn run_files(
    engine: &dyn Runner,
    files: &[PathBuf],
    iterations: u64,
    params_of: &dyn Fn(&LitmusTest) -> Result<StressParams, ArgError>,
    print: &mut dyn FnMut(&str),
) -> Result<Vec<TestRecord>, ArgError> {
    let mut records = Vec::new();
    for file in files {
        let rec = match crate::atomics::litmus::load_file(file) {
            Err(e) => TestRecord::not_run(file, None, engine.kind(), Status::Error, e.to_string()),
            Ok(test) => match model::try_check(&test) {
                Err(e) => TestRecord {
                    error: Some("model".into()),
                    ..TestRecord::not_run(
                        file,
                        Some(test.name.clone()),
                        engine.kind(),
                        Status::Error,
                        format!("the model checker gave no verdict: {e}"),
                    )
                },
                Ok(verdict) => {
                    let params = params_of(&test)?;
                    match engine.run(&test, &verdict, &params, iterations, 1) {
                        Ok(seen) => record(file, &test, &verdict, engine.kind(), &params, &seen),
                        Err(not_run) => {
                            let (status, why) = match not_run {
                                NotRun::Refused(why) => (Status::Refused, (why, None)),
                                NotRun::Error(why, kind) => (Status::Error, (why, Some(kind))),
                            };
                            let (why, error) = why;
                            let mut r = TestRecord::not_run(
                                file,
                                Some(test.name.clone()),
                                engine.kind(),
                                status,
                                why,
                            );
                            r.params = Some(params);
                            r.error = error;
                            r
                        }
                    }
                }
            },
        };
        print(&render(&rec));
        records.push(rec);
    }
    Ok(records)
}

/// The command: resolve parameters, open the engine, run every file, print each report and
/// the tally, write `--json`. Returns the exit code (stdout is written through `print`,
/// errors that stop the command come back as `Err`, exit 2).
pub fn command(req: &Request, print: &mut dyn FnMut(&str)) -> Result<i32, ArgError> {
    if req.iterations == Some(0) {
        return Err(ArgError::ZeroIterations);
    }
    let files = expand(&req.files)?;
    let engine: Box<dyn Runner> = if req.emulate {
        Box::new(OnWorker::new(emulate::EmulatorExecutor::new()))
    } else {
        let session =
            Session::open_device(&req.device).map_err(|e| ArgError::NoGpu(e.to_string()))?;
        Box::new(OnWorker::new(worker::CudaExecutor::on(session, &req.tools)))
    };
    let iterations = req.iterations.unwrap_or(if req.emulate {
        EMULATE_ITERATIONS
    } else {
        GPU_ITERATIONS
    });
    // The user's parameters over a base set; read once (a stress file may be large).
    let file_set = match &req.stress {
        StressSource::File(p) => {
            let base = if req.emulate {
                emulate_defaults()
            } else {
                StressParams::default()
            };
            Some(read_stress_file(p, &base)?)
        }
        _ => None,
    };
    let user = |base: &StressParams| -> Result<StressParams, ArgError> {
        match &req.stress {
            StressSource::Defaults => Ok(base.clone()),
            StressSource::Pairs(pairs) => apply_pairs(base, pairs),
            StressSource::File(_) => Ok(file_set
                .as_ref()
                .map(|(p, _)| p.clone())
                .unwrap_or_default()),
        }
    };
    let emulate = req.emulate;
    let params_of = |test: &LitmusTest| -> Result<StressParams, ArgError> {
        if emulate && !matches!(req.stress, StressSource::File(_)) {
            params_for(test, &user)
        } else {
            user(&StressParams::default())
        }
    };
    // Check the user's parameters before any test runs: a bad key is the command's error.
    user(&StressParams::default())?;
    let mut head = format!(
        "litmus run: {} on {}, {iterations} launches each",
        match files.len() {
            1 => "1 file".to_string(),
            n => format!("{n} files"),
        },
        match engine.kind() {
            Engine::Gpu => "GPU 0",
            Engine::Emulator => "the PTX emulator",
        }
    );
    match (&req.stress, &file_set) {
        (StressSource::File(_), Some((p, from))) => {
            let _ = write!(
                head,
                "; stress parameters from {from}: {}",
                serde_json::to_string(p).unwrap_or_default()
            );
        }
        _ if emulate => {
            let _ = write!(
                head,
                "; stress parameters: {} (the emulator's defaults, widened per test to place its threads{})",
                serde_json::to_string(&user(&emulate_defaults())?).unwrap_or_default(),
                if matches!(req.stress, StressSource::Pairs(_)) {
                    ", then --stress"
                } else {
                    ""
                }
            );
        }
        _ => {
            let _ = write!(
                head,
                "; stress parameters: {}",
                serde_json::to_string(&user(&StressParams::default())?).unwrap_or_default()
            );
        }
    }
    print(&format!("{head}\n"));
    let records = run_files(engine.as_ref(), &files, iterations, &params_of, print)?;
    if let Some(p) = &req.json {
        let text = serde_json::to_string_pretty(&records).unwrap_or_default();
        std::fs::write(p, text).map_err(|source| ArgError::Write {
            path: p.display().to_string(),
            source,
        })?;
    }
    print(&format!("{}\n", tally(&records)));
    Ok(exit_code(&records))
}

#[cfg(test)]
mod tests;
