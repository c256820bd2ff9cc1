//! The GPU worker: one executor (on a GPU, one CUDA context) for a whole run. Litmus jobs
//! queue on it; it packs them into batch kernels ([`super::batch`]), compiles each kernel
//! once (a cache keyed by the PTX text), and launches the counting kernels
//! ([`super::count`]), reading back only the counters.
//!
//! What runs the kernels is an [`Executor`]: [`CudaExecutor`] on GPU 0 through the cuda
//! backend, or the PTX emulator ([`super::emulate::EmulatorExecutor`]), so the queueing,
//! batching, caching and decoding are the same code with or without a GPU.
//!
//! In a run, the `atomics.gpu.*` cases reach the worker through [`submit`]: a thread that owns
//! the executor for the life of the process, fed over a channel by whichever runner thread
//! holds the GPU resource. A case isolated in a child process (`isolate: true`) gets the
//! child's own worker: one context per case, the behaviour before the worker.

use crate::backend::cuda::DeviceSelector;
use crate::backend::toolchain::ToolSettings;
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use rand::SeedableRng;

use super::batch::{self, Batch};
use super::count::OutcomeSpace;
use super::layout::{self, Geometry, Histogram, IterationPlan, StressParams};
use super::{RunError, RunReport};
use crate::atomics::litmus::LitmusTest;
use crate::atomics::model;

/// One litmus test to run: `launches` launches (stopping early after `budget`) under `params`.
#[derive(Debug, Clone)]
pub struct Job {
    pub test: LitmusTest,
    pub params: StressParams,
    pub launches: u64,
    pub budget: Option<Duration>,
    pub seed: u64,
}

/// What one part of one launch gave back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartCounts {
    /// [`OutcomeSpace::head_words`] words: counters, overflow, did-not-terminate.
    pub head: Vec<u32>,
    /// The overflow log's first `head[overflow]` entries.
    pub log: Vec<u32>,
    /// Testing threads that gave up at the spin barrier.
    pub timeouts: u32,
}

/// One part of one launch: the plan its tables come from, and the seed an emulator
/// interleaves the part's threads with (a GPU has no use for it). Both come from the part's
/// job and the launch's number only, so a test's launches are the same whatever else shares
/// them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartLaunch<'a> {
    pub plan: &'a IterationPlan,
    pub seed: u64,
}

/// Runs batch kernels. `Module` is a compiled kernel.
pub(crate) trait Executor {
    type Module;
    /// Compile (JIT) a batch kernel.
    fn load(&mut self, ptx: &str) -> Result<Self::Module, RunError>;
    /// Compile several batch kernels, each to its module or its own error, in order; an
    /// executor that can compile in parallel does ([`CudaExecutor`] with a ptxas).
    fn load_many(&mut self, ptxs: &[&str]) -> Vec<Result<Self::Module, RunError>> {
        ptxs.iter().map(|p| self.load(p)).collect()
    }
    /// A group of launches of `batch` (loaded as `module`) with one wait for the device at
    /// its end: launch i runs part k as `launches[i][k]` says. Each part's counts summed over
    /// the group (the device accumulates them: [`super::count`]'s group layout; at most
    /// [`LAUNCHES_PER_SYNC`] launches) and the group's time (first launch to completion).
    fn launch_group(
        &mut self,
        module: &Self::Module,
        batch: &Batch,
        launches: &[Vec<PartLaunch<'_>>],
    ) -> Result<(Vec<PartCounts>, Duration), RunError>;
    /// The launches of the batch loaded as `module` are over: what the executor keeps for it
    /// (device buffers, plan tables) may go. A later launch of the same module makes them
    /// anew.
    fn finished(&mut self, _module: &Self::Module) {}
    /// After a sticky error ([`sticky_error`]): drop what the executor holds of the old
    /// context and make a working one. The worker has dropped every module first.
    fn recover(&mut self) -> Result<(), RunError> {
        Ok(())
    }
}

/// The CUDA error (its CUresult name) of `e` when it leaves the context unusable
/// ([`crate::backend::cuda::sticky`]): every later call on the context would fail with it.
pub(crate) fn sticky_error(e: &RunError) -> Option<String> {
    let code = match e {
        RunError::Driver(d) => d.code,
        RunError::Load(l) => l.code,
        _ => return None,
    };
    crate::backend::cuda::sticky(code).then(|| format!("{code:?}"))
}

/// Counts of the worker's work, for reports and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Stats {
    /// Kernels compiled (cache misses).
    pub compiled: u64,
    /// Kernels found in the cache.
    pub cached: u64,
    /// Batches run (each its launches of one batch kernel).
    pub batches: u64,
    pub launches: u64,
    /// Tests run, and the most tests one launch held.
    pub tests: u64,
    pub max_tests_per_launch: usize,
    /// Requests served from the queue ([`serve`]: a runner's case, test and control), and
    /// the most requests one round served (their batches planned and compiled together).
    pub requests: u64,
    pub max_requests_per_round: usize,
    /// Instances over all tests and launches.
    pub instances: u64,
    /// Launch-to-completion time summed over launches.
    pub kernel_time: Duration,
    /// Host waits for the device (one per group of up to [`LAUNCHES_PER_SYNC`] launches):
    /// with `launches`, the figure the throughput of a run turns on.
    pub syncs: u64,
    /// Time spent compiling (JIT) kernels, over the `compiled` ones.
    pub compile_time: Duration,
    /// Of the `compiled` kernels, those compiled several at a time before their batches ran
    /// ([`Worker::precompile`]).
    pub compiled_ahead: u64,
    /// Contexts torn down and made anew after a sticky error.
    pub recoveries: u64,
    /// Tests run again alone after their batch hit a sticky error.
    pub isolated: u64,
}

/// Plans a job's launches cycle through: drawn once per job, so that the host does no table
/// work per launch (MC Mutants reshuffles every iteration; 16 shuffles per job keep the
/// placements varied while the device runs back to back).
pub(crate) const PLAN_POOL: usize = 16;

/// Compiled batch kernels the worker keeps. Kernels of cases batched together are seldom
/// met again in a run (each case runs once), so the cache is bounded; a job list run again
/// (a benchmark's repetitions) finds its kernels.
pub(crate) const MODULE_CACHE: usize = 64;

/// How long the worker's queue ([`serve`]) waits for more cases before it launches a batch
/// that still has room: short beside a case's launches (100 launches of ~0.4 ms on an H100),
/// long beside a runner thread's turn from one case's end to its next submission.
pub(crate) const BATCH_WAIT: Duration = Duration::from_millis(5);

/// Most launches between two host waits. A launch of a 2-test batch runs ~15 us on an H100
/// (1.1e9 instances per kernel-second, 16,384 instances), while a wait and the read-back of
/// the counters cost the host several times that: the H100 run of 2026-11-27 reached 8.2e7
/// instances/s end to end with one wait per launch. The group's resets (locations, arrival
/// words, results) are device-side copies and memsets queued between its launches.
pub(crate) const LAUNCHES_PER_SYNC: u64 = 16;

/// The seed of launch `i` of a job seeded `seed` (for [`PartLaunch::seed`]).
fn launch_seed(seed: u64, i: u64) -> u64 {
    // SplitMix64's increment and finaliser: distinct launches get unrelated streams.
    let mut z = seed.wrapping_add((i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The worker: an executor and its kernel cache.
pub(crate) struct Worker<E: Executor> {
    executor: E,
    cache: HashMap<String, E::Module>,
    /// The cache's keys, oldest first.
    order: std::collections::VecDeque<String>,
    /// Why the executor cannot run anything more: a sticky error its recovery did not clear.
    poisoned: Option<String>,
    /// Most launches per host wait ([`LAUNCHES_PER_SYNC`]; tests compare it with 1).
    launches_per_sync: u64,
    pub stats: Stats,
}

impl<E: Executor> std::fmt::Debug for Worker<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("kernels", &self.cache.len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl<E: Executor> Worker<E> {
    pub(crate) fn executor(&self) -> &E {
        &self.executor
    }
}

/// A job ready to launch: its geometry, outcome space and plans, and the time that took.
struct Prepared {
    geometry: Geometry,
    space: OutcomeSpace,
    verdict_terms: Vec<crate::atomics::litmus::Term>,
    plans: Vec<IterationPlan>,
    setup: Duration,
}

impl<E: Executor> Worker<E> {
    pub fn new(executor: E) -> Worker<E> {
        Worker {
            executor,
            cache: HashMap::new(),
            order: std::collections::VecDeque::new(),
            poisoned: None,
            launches_per_sync: LAUNCHES_PER_SYNC,
            stats: Stats::default(),
        }
    }

    /// This worker with at most `n` launches per host wait (1 ..= [`LAUNCHES_PER_SYNC`]).
    pub(crate) fn with_launches_per_sync(mut self, n: u64) -> Worker<E> {
        self.launches_per_sync = n.clamp(1, LAUNCHES_PER_SYNC);
        self
    }

    /// The loaded module of `ptx`, compiling it on first use.
    fn module(&mut self, ptx: &str) -> Result<&E::Module, RunError> {
        if self.cache.contains_key(ptx) {
            self.stats.cached += 1;
        } else {
            let start = Instant::now();
            let m = self.executor.load(ptx)?;
            self.stats.compile_time += start.elapsed();
            self.remember(ptx, m);
        }
        Ok(&self.cache[ptx])
    }

    /// Keep compiled `m` for `ptx`, the oldest kernel going once [`MODULE_CACHE`] are kept.
    fn remember(&mut self, ptx: &str, m: E::Module) {
        self.stats.compiled += 1;
        if self.order.len() >= MODULE_CACHE {
            if let Some(old) = self.order.pop_front() {
                self.cache.remove(&old);
            }
        }
        self.order.push_back(ptx.to_string());
        self.cache.insert(ptx.to_string(), m);
    }

    /// Compile the kernels of `ptxs` not yet in the cache, several at a time where the
    /// executor can ([`Executor::load_many`]), at most [`MODULE_CACHE`] of them. A kernel
    /// that fails to compile is left out: its batch meets the error when it runs.
    fn precompile(&mut self, ptxs: &[&str]) {
        let mut missing: Vec<&str> = Vec::new();
        for p in ptxs {
            if !self.cache.contains_key(*p) && !missing.contains(p) {
                missing.push(p);
            }
        }
        missing.truncate(MODULE_CACHE);
        if missing.len() < 2 {
            return;
        }
        let start = Instant::now();
        let modules = self.executor.load_many(&missing);
        self.stats.compile_time += start.elapsed();
        for (ptx, m) in missing.into_iter().zip(modules) {
            let Ok(m) = m else { continue };
            self.stats.compiled_ahead += 1;
            self.remember(ptx, m);
        }
    }

    /// Run `jobs`, packed into batches; one report per job, in order.
    pub fn run(&mut self, jobs: &[Job]) -> Vec<Result<RunReport, RunError>> {
        let prepared: Vec<_> = jobs.iter().map(prepare).collect();
        self.run_prepared(jobs, prepared)
    }

    /// Run `jobs` (each prepared, or the error that stopped its preparation) in the batches
    /// [`batch::plan`] packs; one report per job, in order.
    fn run_prepared(
        &mut self,
        jobs: &[Job],
        prepared: Vec<Result<Prepared, RunError>>,
    ) -> Vec<Result<RunReport, RunError>> {
        let mut out: Vec<Option<Result<RunReport, RunError>>> = jobs.iter().map(|_| None).collect();
        let mut ready: Vec<(&Job, Prepared)> = Vec::new();
        let mut ok = Vec::new();
        for (i, (job, p)) in jobs.iter().zip(prepared).enumerate() {
            match p {
                Ok(p) => {
                    ready.push((job, p));
                    ok.push(i);
                }
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        let geometries: Vec<&Geometry> = ready.iter().map(|(_, p)| &p.geometry).collect();
        let planned = batch::plan(&geometries);
        // The batch kernels of the next window, compiled together (in parallel where the
        // executor can) before the first of them runs: the cache keeps them all.
        let generated: Vec<Result<Batch, RunError>> = planned
            .iter()
            .map(|members| {
                let tests: Vec<_> = members
                    .iter()
                    .map(|&m| (&ready[m].0.test, &ready[m].1.geometry, &ready[m].1.space))
                    .collect();
                batch::generate(&tests).map_err(RunError::from)
            })
            .collect();
        let mut batches = planned.into_iter().zip(generated);
        loop {
            let window: Vec<_> = batches.by_ref().take(MODULE_CACHE / 2).collect();
            if window.is_empty() {
                break;
            }
            let texts: Vec<&str> = window
                .iter()
                .filter_map(|(_, b)| b.as_ref().ok().map(|b| b.ptx.as_str()))
                .collect();
            if self.poisoned.is_none() {
                self.precompile(&texts);
            }
            for (members, b) in window {
                self.run_planned(&members, b, &ready, &ok, &mut out);
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(RunError::Worker("not run".into()))))
            .collect()
    }

    /// Run the batch of `members` (indices into `ready`; `b` its kernel, or why it has none)
    /// and put each member's report at `out[ok[member]]`.
    fn run_planned(
        &mut self,
        members: &[usize],
        b: Result<Batch, RunError>,
        ready: &[(&Job, Prepared)],
        ok: &[usize],
        out: &mut [Option<Result<RunReport, RunError>>],
    ) {
        let parts: Vec<(&Job, &Prepared)> =
            members.iter().map(|&m| (ready[m].0, &ready[m].1)).collect();
        match b.and_then(|b| self.run_generated(&parts, &b)) {
            Ok(rs) => {
                for (m, r) in members.iter().zip(rs) {
                    out[ok[*m]] = Some(Ok(r));
                }
            }
            // A batch of one keeps its error's kind (a refusal stays a refusal); after a
            // sticky error the context is made anew for the jobs that follow.
            Err(e) if members.len() == 1 => {
                if let Some(code) = sticky_error(&e) {
                    self.recover(&code);
                }
                out[ok[members[0]]] = Some(Err(e));
            }
            // A sticky error in a batch of several: which test caused it is unknown, so
            // each runs again alone on a fresh context (deqp-runner's crash isolation):
            // the culprit gets the error, the others their own verdicts.
            Err(e) if sticky_error(&e).is_some() => {
                self.recover(&sticky_error(&e).unwrap_or_default());
                for (m, part) in members.iter().zip(&parts) {
                    self.stats.isolated += 1;
                    let r = self.run_batch(std::slice::from_ref(part));
                    if let Err(e) = &r {
                        if let Some(code) = sticky_error(e) {
                            self.recover(&code);
                        }
                    }
                    out[ok[*m]] = Some(r.map(|mut v| v.remove(0)));
                }
            }
            Err(e) => {
                let text = e.to_string();
                for m in members {
                    out[ok[*m]] = Some(Err(RunError::Worker(text.clone())));
                }
            }
        }
    }

    /// Tear down the context after sticky error `code` and make a new one: every module
    /// dropped (the cache), then the executor's buffers and context ([`Executor::recover`]).
    /// When that fails the worker is poisoned: every later batch is an error saying why.
    pub(crate) fn recover(&mut self, code: &str) {
        self.cache.clear();
        self.order.clear();
        self.stats.recoveries += 1;
        if let Err(e) = self.executor.recover() {
            self.poisoned = Some(format!(
                "the GPU context could not be made anew after {code} ({e}); the CUDA driver \
                 API says the process must then be restarted"
            ));
        }
    }

    /// One batch: its kernel compiled (or found), launched until every part has its
    /// launches (or the shortest budget is spent); each part's report.
    fn run_batch(&mut self, parts: &[(&Job, &Prepared)]) -> Result<Vec<RunReport>, RunError> {
        if let Some(why) = &self.poisoned {
            return Err(RunError::Worker(why.clone()));
        }
        let tests: Vec<_> = parts
            .iter()
            .map(|(job, p)| (&job.test, &p.geometry, &p.space))
            .collect();
        let b = batch::generate(&tests)?;
        self.run_generated(parts, &b)
    }

    /// [`Worker::run_batch`] with its kernel generated.
    fn run_generated(
        &mut self,
        parts: &[(&Job, &Prepared)],
        b: &Batch,
    ) -> Result<Vec<RunReport>, RunError> {
        if let Some(why) = &self.poisoned {
            return Err(RunError::Worker(why.clone()));
        }
        let setup = Instant::now();
        let mut reports: Vec<RunReport> = parts
            .iter()
            .map(|(job, p)| RunReport {
                test: job.test.name.clone(),
                launches: 0,
                instances: 0,
                kernel_time: Duration::ZERO,
                launch_rates: Vec::new(),
                wall_time: Duration::ZERO,
                setup_time: p.setup,
                host_time: Duration::ZERO,
                terms: p.verdict_terms.clone(),
                histogram: Histogram::new(),
                barrier_timeouts: 0,
                did_not_terminate: 0,
                past_model_bound: 0,
            })
            .collect();
        // Compile (or find) the kernel: setup, shared by the batch's tests.
        self.module(&b.ptx)?;
        let setup = setup.elapsed();
        for r in &mut reports {
            r.setup_time += setup;
        }
        let launches = parts.iter().map(|(j, _)| j.launches).max().unwrap_or(0);
        let budget = parts.iter().filter_map(|(j, _)| j.budget).min();
        self.stats.batches += 1;
        self.stats.tests += parts.len() as u64;
        self.stats.max_tests_per_launch = self.stats.max_tests_per_launch.max(parts.len());
        let start = Instant::now();
        let result = self.launches(b, parts, &mut reports, launches, budget);
        self.executor.finished(&self.cache[&b.ptx]);
        result?;
        let wall = start.elapsed();
        for r in &mut reports {
            r.wall_time = wall;
        }
        Ok(reports)
    }

    /// Launch `b` `launches` times (or until `budget` is spent), counting into `reports`: in
    /// groups of up to `launches_per_sync` launches with one host wait each, a group no longer
    /// than the launches any part still needs, so that every part's counts are exactly its
    /// own launches' (a part that has them all still runs in the kernel, uncounted).
    fn launches(
        &mut self,
        b: &Batch,
        parts: &[(&Job, &Prepared)],
        reports: &mut [RunReport],
        launches: u64,
        budget: Option<Duration>,
    ) -> Result<(), RunError> {
        let start = Instant::now();
        let mut i = 0;
        // The last group's time per launch: a budget caps the next group by it, so a run
        // ends within about one launch of its budget.
        let mut per_launch: Option<Duration> = None;
        while i < launches {
            if budget.is_some_and(|b| start.elapsed() >= b) {
                break;
            }
            let left = parts
                .iter()
                .zip(reports.iter())
                .filter(|((job, _), r)| r.launches < job.launches)
                .map(|((job, _), r)| job.launches - r.launches)
                .min()
                .unwrap_or(1);
            let mut group = left.min(self.launches_per_sync).min(launches - i).max(1);
            if let (Some(b), Some(p)) = (budget, per_launch.filter(|p| !p.is_zero())) {
                let room = b.saturating_sub(start.elapsed()).as_secs_f64() / p.as_secs_f64();
                group = group.min((room as u64).max(1));
            }
            let seeds: Vec<Vec<PartLaunch>> = (i..i + group)
                .map(|l| {
                    parts
                        .iter()
                        .map(|(job, p)| PartLaunch {
                            plan: &p.plans[l as usize % p.plans.len()],
                            seed: launch_seed(job.seed, l),
                        })
                        .collect()
                })
                .collect();
            let module = &self.cache[&b.ptx];
            let (counts, time) = self.executor.launch_group(module, b, &seeds)?;
            per_launch = Some(time / group as u32);
            self.stats.launches += group;
            self.stats.syncs += 1;
            self.stats.kernel_time += time;
            let host = Instant::now();
            for (((job, _), c), (r, part)) in parts
                .iter()
                .zip(&counts)
                .zip(reports.iter_mut().zip(&b.parts))
            {
                if r.launches >= job.launches {
                    continue;
                }
                let n = u64::from(part.geometry.instances()) * group;
                let apart = part.space.decode(&c.head, &c.log, &mut r.histogram)?;
                r.did_not_terminate += apart.did_not_terminate;
                r.past_model_bound += apart.past_model_bound;
                r.barrier_timeouts += u64::from(c.timeouts);
                r.launches += group;
                r.instances += n;
                r.kernel_time += time;
                self.stats.instances += n;
                if !time.is_zero() {
                    r.launch_rates.push(n as f64 / time.as_secs_f64());
                }
            }
            let host = host.elapsed();
            for r in reports.iter_mut() {
                r.host_time += host;
            }
            i += group;
        }
        Ok(())
    }
}

fn prepare(job: &Job) -> Result<Prepared, RunError> {
    let setup = Instant::now();
    let geometry = Geometry::new(&job.test, &job.params)?;
    let verdict = model::try_check(&job.test)?;
    let space = OutcomeSpace::new(&job.test, &verdict.terms);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(job.seed);
    let plans = (0..PLAN_POOL.min(job.launches.max(1) as usize))
        .map(|_| IterationPlan::random(&geometry, &mut rng))
        .collect();
    Ok(Prepared {
        geometry,
        space,
        verdict_terms: verdict.terms,
        plans,
        setup: setup.elapsed(),
    })
}

/// GPU 0 through the cuda backend: one context for the executor's life; each part's buffers
/// allocated on its first launch and kept, its plan tables uploaded once per plan.
#[derive(Debug)]
pub(crate) struct CudaExecutor {
    session: crate::backend::cuda::Session,
    /// Per batch kernel (by its PTX) and part: the part's device buffers.
    buffers: HashMap<String, Vec<PartBuffers>>,
    /// The ptxas that compiles kernels ahead, several at a time, and the device's target
    /// (`sm_<major><minor>`); `None` without one (each kernel is then the driver's JIT).
    /// Found on first use.
    ahead: std::cell::OnceCell<Option<(crate::backend::toolchain::Toolchain, String)>>,
    /// Whether ptxas failed a whole window and is no longer asked.
    ptxas_off: bool,
    /// Kernels compiled by ptxas (then loaded as cubins) and by the driver's JIT.
    pub(crate) compiled_by: (u64, u64),
    /// Where the run looks for its tools (the ptxas of `ahead`).
    tools: ToolSettings,
}

#[derive(Debug)]
struct PartBuffers {
    locs: crate::backend::cuda::DeviceBuffer,
    results: crate::backend::cuda::DeviceBuffer,
    barrier: crate::backend::cuda::DeviceBuffer,
    scratch: crate::backend::cuda::DeviceBuffer,
    /// Counts for a group of [`LAUNCHES_PER_SYNC`] launches ([`OutcomeSpace::group_words`]).
    counts: crate::backend::cuda::DeviceBuffer,
    /// Per plan (by its tables): roles, addrs, stress words, initial image, testing threads.
    plans: Vec<(IterationPlan, PlanBuffers)>,
}

impl PartBuffers {
    /// A batch part's buffers, made once per batch kernel (its plans' tables are added as
    /// launches meet them).
    fn new(s: &crate::backend::cuda::Session, part: &batch::Part) -> Result<PartBuffers, RunError> {
        let e = RunError::Driver;
        let g = &part.geometry;
        let p = &g.params;
        let n = g.instances() as usize;
        Ok(PartBuffers {
            locs: s.buffer(g.location_words() * 4).map_err(e)?,
            results: s.buffer(n * g.slots.len().max(1) * 4).map_err(e)?,
            barrier: s.buffer(8).map_err(e)?,
            scratch: s
                .buffer((p.stress_line_size * p.stress_target_lines) as usize * 4)
                .map_err(e)?,
            counts: s
                .buffer(part.space.group_words(n, LAUNCHES_PER_SYNC as usize) * 4)
                .map_err(e)?,
            plans: Vec::new(),
        })
    }

    /// The index in `plans` of `plan`'s tables, uploaded on first use (synchronous copies:
    /// before a group's launches are queued, never between them).
    fn plan(
        &mut self,
        s: &crate::backend::cuda::Session,
        g: &Geometry,
        plan: &IterationPlan,
    ) -> Result<usize, RunError> {
        if let Some(k) = self.plans.iter().position(|(p, _)| p == plan) {
            return Ok(k);
        }
        let e = RunError::Driver;
        let t = layout::tables(g, plan);
        let image = g.initial_memory(&t.addrs);
        let up = |w: &[u32]| -> Result<_, RunError> {
            let d = s.buffer(w.len() * 4).map_err(e)?;
            s.copy_u32_to_device(d.ptr, w).map_err(e)?;
            Ok(d)
        };
        let pb = PlanBuffers {
            roles: up(&t.roles)?,
            addrs: up(&t.addrs)?,
            stress: up(&t.stress_word)?,
            image: if image.iter().all(|&w| w == 0) {
                None
            } else {
                Some(up(&image)?)
            },
            testing: t.testing_threads,
        };
        self.plans.push((plan.clone(), pb));
        Ok(self.plans.len() - 1)
    }

    /// Queue the resets launch-by-launch state needs before a launch under plan `k`: the
    /// locations to the initial image, the spin barrier's arrival count, the results (whose
    /// "did not terminate" slot only the kernel sets) and the arrival words. The group's
    /// accumulating words (counters, overflow count and log, did-not-terminate count, spin
    /// timeouts) are left alone. Device-side memsets and copies: none waits for the host.
    fn reset_for_launch(
        &self,
        s: &crate::backend::cuda::Session,
        part: &batch::Part,
        k: usize,
    ) -> Result<(), RunError> {
        let e = RunError::Driver;
        let g = &part.geometry;
        let n = g.instances() as usize;
        match &self.plans[k].1.image {
            None => s.memset(self.locs.ptr, 0, self.locs.bytes).map_err(e)?,
            Some(image) => s
                .copy_device(self.locs.ptr, image.ptr, self.locs.bytes)
                .map_err(e)?,
        }
        s.memset(self.barrier.ptr, 0, 4).map_err(e)?;
        if g.slot_of(layout::DID_NOT_TERMINATE.0, layout::DID_NOT_TERMINATE.1)
            .is_some()
        {
            s.memset(self.results.ptr, 0, self.results.bytes)
                .map_err(e)?;
        }
        let arrivals = self.counts.ptr + 4 * part.space.arrival_word() as u64;
        s.memset(arrivals, 0, n * 4).map_err(e)?;
        Ok(())
    }
}

#[derive(Debug)]
struct PlanBuffers {
    roles: crate::backend::cuda::DeviceBuffer,
    addrs: crate::backend::cuda::DeviceBuffer,
    stress: crate::backend::cuda::DeviceBuffer,
    /// The initial image of the locations on the device, copied over them before each
    /// launch; `None` when it is all zeros (a memset then).
    image: Option<crate::backend::cuda::DeviceBuffer>,
    testing: u32,
}

/// A loaded batch kernel: the module and its PTX (the key of its buffers).
#[derive(Debug)]
pub(crate) struct CudaModule {
    module: crate::backend::cuda::Module,
    ptx: String,
}

impl CudaExecutor {
    /// An executor on `device` (the run's `--device`), in a context of its own, compiling
    /// with the ptxas the run's `tools` find.
    pub fn open(device: &DeviceSelector, tools: &ToolSettings) -> Result<CudaExecutor, String> {
        Ok(CudaExecutor::on(
            crate::backend::cuda::Session::open_device(device).map_err(|e| e.to_string())?,
            tools,
        ))
    }

    /// An executor on an open session (its context), compiling with the ptxas `tools` find.
    pub fn on(session: crate::backend::cuda::Session, tools: &ToolSettings) -> CudaExecutor {
        CudaExecutor {
            session,
            buffers: HashMap::new(),
            ahead: std::cell::OnceCell::new(),
            ptxas_off: false,
            compiled_by: (0, 0),
            tools: tools.clone(),
        }
    }

    /// The ptxas and target for [`Executor::load_many`], if this machine has a ptxas.
    fn ahead(&self) -> Option<&(crate::backend::toolchain::Toolchain, String)> {
        self.ahead
            .get_or_init(|| {
                let (major, minor) = self.session.compute_capability().ok()?;
                let tc = crate::backend::toolchain::Toolchain::discover_with(self.tools.clone());
                tc.has(crate::capability::Capability::Ptxas)
                    .then(|| (tc, format!("sm_{major}{minor}")))
            })
            .as_ref()
    }

    pub(crate) fn session(&self) -> &crate::backend::cuda::Session {
        &self.session
    }
}

impl Executor for CudaExecutor {
    type Module = CudaModule;

    /// One kernel, the way [`Executor::load_many`] compiles several: whichever path a
    /// kernel takes does not depend on what it was compiled with.
    fn load(&mut self, ptx: &str) -> Result<CudaModule, RunError> {
        self.load_many(&[ptx])
            .pop()
            .unwrap_or_else(|| Err(RunError::Worker("no module".into())))
    }

    /// ptxas on every text at once (one process per core), then each cubin loaded; a text
    /// ptxas refuses, or whose cubin the driver does not load (a ptxas newer than the
    /// driver), goes to the driver's JIT as [`Executor::load`] would.
    fn load_many(&mut self, ptxs: &[&str]) -> Vec<Result<CudaModule, RunError>> {
        let cubins: Vec<Option<Vec<u8>>> = match self.ahead().filter(|_| !self.ptxas_off) {
            Some((tc, arch)) => {
                let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
                tc.ptxas_many(ptxs, arch, threads)
                    .into_iter()
                    .map(Result::ok)
                    .collect()
            }
            None => vec![None; ptxs.len()],
        };
        // A ptxas that failed every text of a window (too old for the device, say) is not
        // asked again: each window would spend its processes for nothing.
        if ptxs.len() > 1 && cubins.iter().all(Option::is_none) {
            self.ptxas_off = true;
        }
        ptxs.iter()
            .zip(cubins)
            .map(|(ptx, cubin)| {
                let module = match cubin.and_then(|c| self.session.load_cubin(&c).ok()) {
                    Some(m) => {
                        self.compiled_by.0 += 1;
                        m
                    }
                    None => {
                        let m = self.session.load_ptx(ptx)?;
                        self.compiled_by.1 += 1;
                        m
                    }
                };
                Ok(CudaModule {
                    module,
                    ptx: ptx.to_string(),
                })
            })
            .collect()
    }

    fn launch_group(
        &mut self,
        module: &CudaModule,
        b: &Batch,
        launches: &[Vec<PartLaunch<'_>>],
    ) -> Result<(Vec<PartCounts>, Duration), RunError> {
        use crate::backend::cuda::{KernelArg, LaunchConfig};
        let s = &self.session;
        let e = RunError::Driver;
        if launches.len() as u64 > LAUNCHES_PER_SYNC {
            return Err(RunError::Worker(format!(
                "{} launches in one group, past the counts buffers' room for {LAUNCHES_PER_SYNC}",
                launches.len()
            )));
        }
        if !self.buffers.contains_key(&module.ptx) {
            let parts = b
                .parts
                .iter()
                .map(|part| PartBuffers::new(s, part))
                .collect::<Result<Vec<_>, _>>()?;
            self.buffers.insert(module.ptx.clone(), parts);
        }
        let parts = self.buffers.get_mut(&module.ptx).expect("inserted above");
        // Every plan's tables on the device before the first launch is queued, and the
        // group's accumulating words cleared.
        let mut plan_of = Vec::with_capacity(launches.len());
        for launch in launches {
            let mut ks = Vec::with_capacity(b.parts.len());
            for ((part, bufs), pl) in b.parts.iter().zip(parts.iter_mut()).zip(launch) {
                ks.push(bufs.plan(s, &part.geometry, pl.plan)?);
            }
            plan_of.push(ks);
        }
        for (part, bufs) in b.parts.iter().zip(parts.iter()) {
            s.memset(bufs.counts.ptr, 0, part.space.head_words() * 4)
                .map_err(e)?;
            s.memset(bufs.barrier.ptr, 0, 8).map_err(e)?;
        }
        let f = s.function(&module.module, batch::KERNEL).map_err(e)?;
        let cfg = LaunchConfig {
            grid: b.grid,
            block: b.block,
            shared_bytes: 0,
        };
        let start = Instant::now();
        // A launch that fails after others were queued: wait for those before the caller
        // frees their buffers (`finished`), whatever the wait reports.
        let abandon = |e: RunError| {
            let _ = s.synchronize();
            e
        };
        for ks in &plan_of {
            let mut args = Vec::with_capacity(b.parts.len() * batch::PARAMS.len());
            for ((part, bufs), &k) in b.parts.iter().zip(parts.iter()).zip(ks) {
                bufs.reset_for_launch(s, part, k).map_err(abandon)?;
                let pb = &bufs.plans[k].1;
                args.extend([
                    KernelArg::Ptr(bufs.locs.ptr),
                    KernelArg::Ptr(bufs.results.ptr),
                    KernelArg::Ptr(pb.roles.ptr),
                    KernelArg::Ptr(pb.addrs.ptr),
                    KernelArg::Ptr(bufs.barrier.ptr),
                    KernelArg::Ptr(bufs.scratch.ptr),
                    KernelArg::Ptr(pb.stress.ptr),
                    KernelArg::U32(pb.testing),
                    KernelArg::Ptr(bufs.counts.ptr),
                ]);
            }
            // SAFETY: `batch::generate` declares, per part and in part order, the nine
            // parameters of `batch::PARAMS`: `.u64` pointers but `p_testing` (`.u32`), as
            // pushed above; a cluster batch is `.explicitcluster` and its grid whole clusters
            // (`batch::generate`).
            unsafe { s.launch_cluster(f, cfg, b.cluster, &args) }
                .map_err(e)
                .map_err(abandon)?;
        }
        s.synchronize().map_err(e)?;
        let time = start.elapsed();
        let mut out = Vec::new();
        for (part, bufs) in b.parts.iter().zip(parts.iter()) {
            let sp = &part.space;
            let n = part.geometry.instances() as usize;
            let head = s
                .copy_u32_to_host(bufs.counts.ptr, sp.head_words())
                .map_err(e)?;
            let words = sp.log_words(&head, n, LAUNCHES_PER_SYNC as usize)?;
            let log = if words > 0 {
                s.copy_u32_to_host(bufs.counts.ptr + 4 * sp.log_word(n) as u64, words)
                    .map_err(e)?
            } else {
                Vec::new()
            };
            let timeouts = s.copy_u32_to_host(bufs.barrier.ptr, 2).map_err(e)?[1];
            out.push(PartCounts {
                head,
                log,
                timeouts,
            });
        }
        Ok((out, time))
    }

    fn finished(&mut self, module: &CudaModule) {
        self.buffers.remove(&module.ptx);
    }

    fn recover(&mut self) -> Result<(), RunError> {
        // The buffers go before the context does, so that their frees reach the old one.
        self.buffers.clear();
        self.session.reset()?;
        Ok(())
    }
}

/// A request to a worker's queue ([`serve`]): one case's jobs (a test and its control), and
/// where to send their reports, in order.
#[derive(Debug)]
pub struct Request {
    pub jobs: Vec<Job>,
    pub reply: mpsc::Sender<Vec<Result<RunReport, String>>>,
}

/// A request with its jobs prepared (geometry, outcome space, plans) as it arrived.
struct Queued {
    request: Request,
    prepared: Vec<Result<Prepared, RunError>>,
}

impl Queued {
    fn of(request: Request) -> Queued {
        let prepared = request.jobs.iter().map(prepare).collect();
        Queued { request, prepared }
    }

    /// The launch shape ([`batch::shape`]), threads and tests of its jobs that will launch.
    fn shape(&self) -> (Option<(u32, u32)>, u32, usize) {
        let mut block = None;
        let (mut threads, mut tests) = (0, 0);
        for p in self.prepared.iter().flatten() {
            block.get_or_insert(batch::shape(&p.geometry));
            threads += p.geometry.total_threads();
            tests += 1;
        }
        (block, threads, tests)
    }
}

/// Which queued requests go into the next batch: the oldest, then every later one with its
/// launch shape (block size and cluster size) whose jobs still fit ([`batch::MAX_BATCH_TESTS`], [`batch::MAX_BATCH_THREADS`]),
/// in arrival order, a request's jobs counted together (a test beside its control). Also
/// whether the batch is full (no request of the shape could still join): what [`serve`]
/// waits for. The round it then serves is planned anew by [`batch::plan`], which may put a
/// test and its control in different launches (what a test shows does not depend on its
/// batch).
fn pick(backlog: &std::collections::VecDeque<Queued>) -> (Vec<usize>, bool) {
    let Some(first) = backlog.front() else {
        return (Vec::new(), false);
    };
    let (block, mut threads, mut tests) = first.shape();
    let mut picked = vec![0];
    for (i, q) in backlog.iter().enumerate().skip(1) {
        let (b, t, n) = q.shape();
        if b.is_some() && b != block {
            continue;
        }
        if tests + n <= batch::MAX_BATCH_TESTS && threads + t <= batch::MAX_BATCH_THREADS {
            picked.push(i);
            threads += t;
            tests += n;
        }
    }
    // Full when even the smallest request (one test of the first's size) no longer fits.
    let one = first.shape().1 / (first.shape().2.max(1) as u32);
    let full =
        tests + 1 > batch::MAX_BATCH_TESTS || threads + one.max(1) > batch::MAX_BATCH_THREADS;
    (picked, full)
}

/// Serve the queue `rx` on `worker` until every sender is gone, in rounds: take the oldest
/// request, wait up to `wait` for more while its batch has room (the requests sent meanwhile
/// by other runner threads; [`pick`]), then serve every queued request in one
/// [`Worker::run`]-like round (their batches planned together by [`batch::plan`] and their
/// kernels compiled together, in parallel where the executor can), answer each request its
/// own reports, and go on. What a test shows does not depend on what it was batched with
/// (its plans and seeds are its job's: [`PartLaunch`]).
pub(crate) fn serve<E: Executor>(
    worker: &mut Worker<E>,
    rx: &mpsc::Receiver<Request>,
    wait: Duration,
) {
    let mut backlog = std::collections::VecDeque::new();
    loop {
        if backlog.is_empty() {
            match rx.recv() {
                Ok(r) => backlog.push_back(Queued::of(r)),
                Err(_) => return,
            }
        }
        let deadline = Instant::now() + wait;
        loop {
            while let Ok(r) = rx.try_recv() {
                backlog.push_back(Queued::of(r));
            }
            if pick(&backlog).1 {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left) {
                Ok(r) => backlog.push_back(Queued::of(r)),
                Err(_) => break,
            }
        }
        let group: Vec<Queued> = backlog.drain(..).collect();
        worker.stats.requests += group.len() as u64;
        worker.stats.max_requests_per_round = worker.stats.max_requests_per_round.max(group.len());
        let mut jobs = Vec::new();
        let mut prepared = Vec::new();
        let mut sizes = Vec::new();
        let mut replies = Vec::new();
        for q in group {
            sizes.push(q.request.jobs.len());
            jobs.extend(q.request.jobs);
            prepared.extend(q.prepared);
            replies.push(q.request.reply);
        }
        let mut reports = worker.run_prepared(&jobs, prepared).into_iter();
        for (n, reply) in sizes.into_iter().zip(replies) {
            let mine = reports
                .by_ref()
                .take(n)
                .map(|r| r.map_err(|e| e.to_string()))
                .collect();
            // A requester that gave up (its thread ended) needs no answer.
            let _ = reply.send(mine);
        }
    }
}

/// The worker thread of `device` (started on its first use, with the first user's `tools`:
/// one run's): it opens the device once and serves every request on that one context,
/// batching the cases that runner threads submit together. One thread per device a process
/// uses.
fn channel(device: &DeviceSelector, tools: &ToolSettings) -> mpsc::Sender<Request> {
    static WORKERS: OnceLock<Mutex<HashMap<DeviceSelector, mpsc::Sender<Request>>>> =
        OnceLock::new();
    let mut workers = WORKERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    workers
        .entry(device.clone())
        .or_insert_with(|| {
            let (tx, rx) = mpsc::channel::<Request>();
            let (device, tools) = (device.clone(), tools.clone());
            std::thread::spawn(move || match CudaExecutor::open(&device, &tools) {
                Ok(e) => serve(&mut Worker::new(e), &rx, BATCH_WAIT),
                Err(e) => {
                    for r in rx {
                        let _ = r
                            .reply
                            .send(r.jobs.iter().map(|_| Err(e.clone())).collect());
                    }
                }
            });
            tx
        })
        .clone()
}

/// Run `jobs` on the queue `tx` serves and wait for their reports, in order.
pub(crate) fn submit_to(
    tx: &mpsc::Sender<Request>,
    jobs: Vec<Job>,
) -> Vec<Result<RunReport, String>> {
    let n = jobs.len();
    let (reply, rx) = mpsc::channel();
    match tx
        .send(Request { jobs, reply })
        .ok()
        .and_then(|()| rx.recv().ok())
    {
        Some(r) => r,
        None => (0..n)
            .map(|_| Err("the GPU worker thread has stopped".to_string()))
            .collect(),
    }
}

/// Run `jobs` on the GPU worker of `device` (one CUDA context per device for the process)
/// and wait for their reports, in order. Jobs other runner threads submit meanwhile may share
/// launches.
pub(crate) fn submit(
    device: &DeviceSelector,
    tools: &ToolSettings,
    jobs: Vec<Job>,
) -> Vec<Result<RunReport, String>> {
    submit_to(&channel(device, tools), jobs)
}

#[cfg(test)]
mod tests;
