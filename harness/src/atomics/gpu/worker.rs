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
pub struct PartCounts {
    /// [`OutcomeSpace::head_words`] words: counters, overflow, did-not-terminate.
    pub head: Vec<u32>,
    /// The overflow log's first `head[overflow]` entries.
    pub log: Vec<u32>,
    /// Testing threads that gave up at the spin barrier.
    pub timeouts: u32,
}

/// Runs batch kernels. `Module` is a compiled kernel.
pub trait Executor {
    type Module;
    /// Compile (JIT) a batch kernel.
    fn load(&mut self, ptx: &str) -> Result<Self::Module, RunError>;
    /// One launch of `batch` (loaded as `module`), part k under `plans[k]`: each part's
    /// counts and the launch's time (launch to completion).
    fn launch(
        &mut self,
        module: &Self::Module,
        batch: &Batch,
        plans: &[IterationPlan],
    ) -> Result<(Vec<PartCounts>, Duration), RunError>;
}

/// Counts of the worker's work, for reports and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Kernels compiled (cache misses).
    pub compiled: u64,
    /// Kernels found in the cache.
    pub cached: u64,
    pub launches: u64,
    /// Tests run, and the most tests one launch held.
    pub tests: u64,
    pub max_tests_per_launch: usize,
    /// Instances over all tests and launches.
    pub instances: u64,
    /// Launch-to-completion time summed over launches.
    pub kernel_time: Duration,
}

/// Plans a job's launches cycle through: drawn once per job, so that the host does no table
/// work per launch (MC Mutants reshuffles every iteration; 16 shuffles per job keep the
/// placements varied while the device runs back to back).
pub const PLAN_POOL: usize = 16;

/// The worker: an executor and its kernel cache.
pub struct Worker<E: Executor> {
    executor: E,
    cache: HashMap<String, E::Module>,
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
    pub fn executor(&self) -> &E {
        &self.executor
    }
}

struct Prepared {
    geometry: Geometry,
    space: OutcomeSpace,
    verdict_terms: Vec<crate::atomics::litmus::Term>,
    plans: Vec<IterationPlan>,
}

impl<E: Executor> Worker<E> {
    pub fn new(executor: E) -> Worker<E> {
        Worker {
            executor,
            cache: HashMap::new(),
            stats: Stats::default(),
        }
    }

    /// The loaded module of `ptx`, compiling it on first use.
    fn module(&mut self, ptx: &str) -> Result<&E::Module, RunError> {
        if self.cache.contains_key(ptx) {
            self.stats.cached += 1;
        } else {
            let m = self.executor.load(ptx)?;
            self.stats.compiled += 1;
            self.cache.insert(ptx.to_string(), m);
        }
        Ok(&self.cache[ptx])
    }

    /// Run `jobs`, packed into batches; one report per job, in order.
    pub fn run(&mut self, jobs: &[Job]) -> Vec<Result<RunReport, RunError>> {
        let mut out: Vec<Option<Result<RunReport, RunError>>> = jobs.iter().map(|_| None).collect();
        let mut prepared = Vec::new();
        let mut ok = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            let setup = Instant::now();
            match prepare(job) {
                Ok(p) => {
                    prepared.push((p, setup.elapsed()));
                    ok.push(i);
                }
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        let geometries: Vec<&Geometry> = prepared.iter().map(|(p, _)| &p.geometry).collect();
        for members in batch::plan(&geometries) {
            let reports = self.run_batch(jobs, &ok, &prepared, &members);
            match reports {
                Ok(rs) => {
                    for (m, r) in members.iter().zip(rs) {
                        out[ok[*m]] = Some(Ok(r));
                    }
                }
                Err(e) => {
                    let text = e.to_string();
                    for m in &members {
                        out[ok[*m]] = Some(Err(RunError::Worker(text.clone())));
                    }
                }
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(RunError::Worker("not run".into()))))
            .collect()
    }

    fn run_batch(
        &mut self,
        jobs: &[Job],
        ok: &[usize],
        prepared: &[(Prepared, Duration)],
        members: &[usize],
    ) -> Result<Vec<RunReport>, RunError> {
        let setup = Instant::now();
        let tests: Vec<_> = members
            .iter()
            .map(|&m| {
                (
                    &jobs[ok[m]].test,
                    &prepared[m].0.geometry,
                    &prepared[m].0.space,
                )
            })
            .collect();
        let b = batch::generate(&tests)?;
        let mut reports: Vec<RunReport> = members
            .iter()
            .map(|&m| {
                let job = &jobs[ok[m]];
                RunReport {
                    test: job.test.name.clone(),
                    launches: 0,
                    instances: 0,
                    kernel_time: Duration::ZERO,
                    launch_rates: Vec::new(),
                    wall_time: Duration::ZERO,
                    setup_time: prepared[m].1,
                    host_time: Duration::ZERO,
                    terms: prepared[m].0.verdict_terms.clone(),
                    histogram: Histogram::new(),
                    barrier_timeouts: 0,
                    did_not_terminate: 0,
                }
            })
            .collect();
        // Compile (or find) the kernel: setup, shared by the batch's tests.
        self.module(&b.ptx)?;
        let setup = setup.elapsed();
        for r in &mut reports {
            r.setup_time += setup;
        }
        let launches = members
            .iter()
            .map(|&m| jobs[ok[m]].launches)
            .max()
            .unwrap_or(0);
        let budget = members.iter().filter_map(|&m| jobs[ok[m]].budget).min();
        self.stats.tests += members.len() as u64;
        self.stats.max_tests_per_launch = self.stats.max_tests_per_launch.max(members.len());
        let start = Instant::now();
        for i in 0..launches {
            if budget.is_some_and(|b| start.elapsed() >= b) {
                break;
            }
            let plans: Vec<IterationPlan> = members
                .iter()
                .map(|&m| {
                    let pool = &prepared[m].0.plans;
                    pool[i as usize % pool.len()].clone()
                })
                .collect();
            let module = &self.cache[&b.ptx];
            let (counts, time) = self.executor.launch(module, &b, &plans)?;
            self.stats.launches += 1;
            self.stats.kernel_time += time;
            let host = Instant::now();
            for ((k, &m), c) in members.iter().enumerate().zip(&counts) {
                let r = &mut reports[k];
                if r.launches >= jobs[ok[m]].launches {
                    continue;
                }
                let part = &b.parts[k];
                let n = u64::from(part.geometry.instances());
                r.did_not_terminate += part.space.decode(&c.head, &c.log, &mut r.histogram)?;
                r.barrier_timeouts += u64::from(c.timeouts);
                r.launches += 1;
                r.instances += n;
                r.kernel_time += time;
                self.stats.instances += n;
                if !time.is_zero() {
                    r.launch_rates.push(n as f64 / time.as_secs_f64());
                }
            }
            let host = host.elapsed();
            for r in &mut reports {
                r.host_time += host;
            }
        }
        let wall = start.elapsed();
        for r in &mut reports {
            r.wall_time = wall;
        }
        Ok(reports)
    }
}

fn prepare(job: &Job) -> Result<Prepared, RunError> {
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
    })
}

/// GPU 0 through the cuda backend: one context for the executor's life; each part's buffers
/// allocated on its first launch and kept, its plan tables uploaded once per plan.
#[derive(Debug)]
pub struct CudaExecutor {
    session: crate::backend::cuda::Session,
    /// Per batch kernel (by its PTX) and part: the part's device buffers.
    buffers: HashMap<String, Vec<PartBuffers>>,
}

#[derive(Debug)]
struct PartBuffers {
    locs: crate::backend::cuda::DeviceBuffer,
    results: crate::backend::cuda::DeviceBuffer,
    barrier: crate::backend::cuda::DeviceBuffer,
    scratch: crate::backend::cuda::DeviceBuffer,
    counts: crate::backend::cuda::DeviceBuffer,
    /// Per plan (by its tables): roles, addrs, stress words, initial image, testing threads.
    plans: Vec<(IterationPlan, PlanBuffers)>,
}

#[derive(Debug)]
struct PlanBuffers {
    roles: crate::backend::cuda::DeviceBuffer,
    addrs: crate::backend::cuda::DeviceBuffer,
    stress: crate::backend::cuda::DeviceBuffer,
    image: Vec<u32>,
    /// The image is all zeros: a memset resets the locations.
    zero: bool,
    testing: u32,
}

/// A loaded batch kernel: the module and its PTX (the key of its buffers).
#[derive(Debug)]
pub struct CudaModule {
    module: crate::backend::cuda::Module,
    ptx: String,
}

impl CudaExecutor {
    pub fn open() -> Result<CudaExecutor, String> {
        Ok(CudaExecutor {
            session: crate::backend::cuda::Session::open(0).map_err(|e| e.to_string())?,
            buffers: HashMap::new(),
        })
    }
}

impl Executor for CudaExecutor {
    type Module = CudaModule;

    fn load(&mut self, ptx: &str) -> Result<CudaModule, RunError> {
        Ok(CudaModule {
            module: self.session.load_ptx(ptx)?,
            ptx: ptx.to_string(),
        })
    }

    fn launch(
        &mut self,
        module: &CudaModule,
        b: &Batch,
        plans: &[IterationPlan],
    ) -> Result<(Vec<PartCounts>, Duration), RunError> {
        use crate::backend::cuda::{KernelArg, LaunchConfig};
        let s = &self.session;
        let e = RunError::Driver;
        if !self.buffers.contains_key(&module.ptx) {
            let mut parts = Vec::new();
            for part in &b.parts {
                let g = &part.geometry;
                let p = &g.params;
                let n = g.instances() as usize;
                parts.push(PartBuffers {
                    locs: s.buffer(g.location_words() * 4).map_err(e)?,
                    results: s.buffer(n * g.slots.len().max(1) * 4).map_err(e)?,
                    barrier: s.buffer(8).map_err(e)?,
                    scratch: s
                        .buffer((p.stress_line_size * p.stress_target_lines) as usize * 4)
                        .map_err(e)?,
                    counts: s.buffer(part.space.words(n) * 4).map_err(e)?,
                    plans: Vec::new(),
                });
            }
            self.buffers.insert(module.ptx.clone(), parts);
        }
        let parts = self.buffers.get_mut(&module.ptx).expect("inserted above");
        let mut args = Vec::new();
        for ((part, bufs), plan) in b.parts.iter().zip(parts.iter_mut()).zip(plans) {
            let g = &part.geometry;
            let k = match bufs.plans.iter().position(|(p, _)| p == plan) {
                Some(k) => k,
                None => {
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
                        zero: image.iter().all(|&w| w == 0),
                        image,
                        testing: t.testing_threads,
                    };
                    bufs.plans.push((plan.clone(), pb));
                    bufs.plans.len() - 1
                }
            };
            let pb = &bufs.plans[k].1;
            let n = g.instances() as usize;
            if pb.zero {
                s.memset(bufs.locs.ptr, 0, bufs.locs.bytes).map_err(e)?;
            } else {
                s.copy_u32_to_device(bufs.locs.ptr, &pb.image).map_err(e)?;
            }
            s.memset(bufs.barrier.ptr, 0, 8).map_err(e)?;
            s.memset(bufs.counts.ptr, 0, part.space.cleared_words(n) * 4)
                .map_err(e)?;
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
        let f = s.function(&module.module, batch::KERNEL).map_err(e)?;
        let cfg = LaunchConfig {
            grid: b.grid,
            block: b.block,
            shared_bytes: 0,
        };
        // SAFETY: `batch::generate` declares, per part and in part order, the nine parameters
        // of `batch::PARAMS`: `.u64` pointers but `p_testing` (`.u32`), as pushed above.
        let time = unsafe { s.launch_timed(f, cfg, &args) }.map_err(e)?;
        let mut out = Vec::new();
        for (part, bufs) in b.parts.iter().zip(parts.iter()) {
            let sp = &part.space;
            let n = part.geometry.instances() as usize;
            let head = s
                .copy_u32_to_host(bufs.counts.ptr, sp.head_words())
                .map_err(e)?;
            let over = head[sp.overflow_word()] as usize;
            let log = if over > 0 {
                let all = s
                    .copy_u32_to_host(bufs.counts.ptr, sp.log_word(n) + over * sp.terms.len())
                    .map_err(e)?;
                all[sp.log_word(n)..].to_vec()
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
}

/// A request to the run's worker thread: jobs, and where to send their reports.
type Request = (Vec<Job>, mpsc::Sender<Vec<Result<RunReport, String>>>);

/// The run's worker thread (started on first use): it opens GPU 0 once and serves every
/// request on that one context.
fn channel() -> &'static Mutex<mpsc::Sender<Request>> {
    static WORKER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    WORKER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::spawn(move || {
            let mut worker = CudaExecutor::open().map(Worker::new);
            for (jobs, reply) in rx {
                let reports = match &mut worker {
                    Ok(w) => w
                        .run(&jobs)
                        .into_iter()
                        .map(|r| r.map_err(|e| e.to_string()))
                        .collect(),
                    Err(e) => jobs.iter().map(|_| Err(e.clone())).collect(),
                };
                let _ = reply.send(reports);
            }
        });
        Mutex::new(tx)
    })
}

/// Run `jobs` on the process's GPU worker (one CUDA context for the process) and wait for
/// their reports, in order.
pub fn submit(jobs: Vec<Job>) -> Vec<Result<RunReport, String>> {
    let n = jobs.len();
    let (tx, rx) = mpsc::channel();
    let sent = channel()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((jobs, tx));
    match sent.ok().and_then(|()| rx.recv().ok()) {
        Some(r) => r,
        None => (0..n)
            .map(|_| Err("the GPU worker thread has stopped".to_string()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::catalog;
    use crate::atomics::gpu::emulate::EmulatorExecutor;
    use crate::outcome::CaseStatus;

    fn small() -> StressParams {
        StressParams {
            testing_workgroups: 4,
            workgroup_size: 128,
            max_workgroups: 5,
            stress_iterations: 4,
            pre_stress_iterations: 2,
            stress_target_lines: 2,
            stress_line_size: 4,
            ..StressParams::default()
        }
    }

    fn job(name: &str, launches: u64) -> Job {
        Job {
            test: catalog::by_name(name).unwrap(),
            params: small(),
            launches,
            budget: None,
            seed: 3,
        }
    }

    // Three tests of one block size share every launch; each gets its own launches' worth of
    // instances and only outcomes the model allows; a second run of the same jobs compiles
    // nothing (the kernel is cached by its text).
    #[test]
    fn jobs_share_launches_and_kernels_compile_once() {
        let names = [
            "MP.rel_acq.gpu.inter_cta",
            "SB.relaxed.gpu.intra_cta",
            "LB.relaxed.gpu.inter_cta",
        ];
        let jobs: Vec<Job> = names.iter().map(|n| job(n, 3)).collect();
        let mut w = Worker::new(EmulatorExecutor::new(1));
        for round in 0..2 {
            for (j, r) in jobs.iter().zip(w.run(&jobs)) {
                let r = r.unwrap();
                let g = Geometry::new(&j.test, &j.params).unwrap();
                assert_eq!(r.launches, 3);
                assert_eq!(r.instances, 3 * u64::from(g.instances()));
                assert_eq!(r.histogram.values().sum::<u64>(), r.instances, "{}", r.test);
                let v = model::check(&j.test);
                assert!(r.histogram.keys().all(|o| v.outcome_allowed(o)), "{r:?}");
            }
            assert_eq!(w.stats.max_tests_per_launch, 3);
            assert_eq!(w.stats.launches, 3 * (round + 1));
        }
        assert_eq!((w.stats.compiled, w.stats.cached), (1, 1));
        assert_eq!(w.executor().loads, 1);
    }

    // A job the generator refuses is an error of its own; the others still run.
    #[test]
    fn a_refused_job_does_not_stop_the_queue() {
        let mut bad = job("IRIW.rel_acq.cta.intra_cta", 1);
        bad.params.workgroup_size = 32; // one warp: four roles do not fit
        let jobs = vec![bad, job("MP.rel_acq.gpu.inter_cta", 1)];
        let mut w = Worker::new(EmulatorExecutor::new(2));
        let out = w.run(&jobs);
        assert!(
            matches!(&out[0], Err(RunError::Geometry(_))),
            "{:?}",
            out[0]
        );
        assert!(out[1].is_ok());
    }

    // A forbidden test and its control through an emulated worker: the case's verdict as on
    // a GPU. The emulator is sequentially consistent, so MP's control shows no weak outcome:
    // a pass tagged with the control that never showed its weak outcome.
    #[test]
    fn a_case_through_an_emulated_worker_is_judged_as_on_a_gpu() {
        let test = catalog::by_name("MP.rel_acq.gpu.inter_cta").unwrap();
        let control = catalog::control_for(&test.name).and_then(|c| catalog::by_name(&c));
        assert!(control.is_some());
        let mut w = Worker::new(EmulatorExecutor::new(3));
        let mut submitted = 0;
        let (status, figures) =
            super::super::run_case_with(&test, control.as_ref(), 2, &small(), |jobs| {
                submitted = jobs.len();
                w.run(&jobs)
                    .into_iter()
                    .map(|r| r.map_err(|e| e.to_string()))
                    .collect()
            });
        assert_eq!(submitted, 2, "test and control in one submission");
        assert_eq!(w.stats.max_tests_per_launch, 2);
        match &status {
            CaseStatus::Pass { note, .. } => {
                assert!(
                    note.as_deref()
                        .is_some_and(|n| n.contains("stress has no teeth")),
                    "{status:?}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(figures.len(), 3);
    }
}
