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
    let mut w = Worker::new(EmulatorExecutor::new());
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

// Jobs that need three batches (three block sizes) have their three kernels compiled
// together before the first batch runs, once: the second run finds all three cached.
#[test]
fn a_runs_batch_kernels_are_compiled_together_before_they_run() {
    let jobs: Vec<Job> = [32, 64, 128]
        .into_iter()
        .map(|workgroup_size| Job {
            params: StressParams {
                workgroup_size,
                ..small()
            },
            ..job("MP.rel_acq.gpu.inter_cta", 1)
        })
        .collect();
    let mut w = Worker::new(EmulatorExecutor::new());
    assert!(w.run(&jobs).iter().all(Result::is_ok));
    assert_eq!(w.stats.batches, 3);
    assert_eq!((w.stats.compiled, w.stats.compiled_ahead), (3, 3));
    assert!(w.run(&jobs).iter().all(Result::is_ok));
    assert_eq!((w.stats.compiled, w.stats.compiled_ahead), (3, 3));
    assert_eq!(w.executor().loads, 3);
}

/// A case's jobs as `run_case_with` submits them: the test (seed 1) and, for a forbidden
/// test, its control (seed 2).
fn case_jobs(name: &str, launches: u64) -> Vec<Job> {
    let mut jobs = vec![Job {
        seed: 1,
        ..job(name, launches)
    }];
    let test = &jobs[0].test;
    if !model::check(test).allowed {
        if let Some(c) = catalog::control_for(name) {
            jobs.push(Job {
                seed: 2,
                ..job(&c, launches)
            });
        }
    }
    jobs
}

/// Each job's histogram (and what else it counted) from a run.
fn counts(r: &RunReport) -> (Histogram, u64, u64, u64, u64) {
    (
        r.histogram.clone(),
        r.launches,
        r.instances,
        r.did_not_terminate,
        r.barrier_timeouts,
    )
}

const CASES: [&str; 4] = [
    "MP.rel_acq.gpu.inter_cta",
    "SB.sc.cta.intra_cta",
    "CoRR.relaxed.gpu.inter_cta",
    "MP.relaxed.gpu.inter_cta",
];

// A test's counts do not depend on what shares its launches: each case's jobs alone, and
// every case's in one batch, give the same histograms (a part's plans and interleaving
// seeds are its job's), with only outcomes the model allows and each job's launches'
// worth of instances.
#[test]
fn a_test_counts_the_same_alone_or_batched() {
    let mut alone = Vec::new();
    let mut all = Vec::new();
    for name in CASES {
        let jobs = case_jobs(name, 2);
        let mut w = Worker::new(EmulatorExecutor::new());
        alone.extend(w.run(&jobs).into_iter().map(|r| counts(&r.unwrap())));
        all.extend(jobs);
    }
    let mut w = Worker::new(EmulatorExecutor::new());
    let together: Vec<_> = w
        .run(&all)
        .into_iter()
        .map(|r| counts(&r.unwrap()))
        .collect();
    assert_eq!(w.stats.batches, 1);
    assert_eq!(w.stats.max_tests_per_launch, all.len());
    assert_eq!(w.stats.launches, 2);
    for ((j, a), t) in all.iter().zip(&alone).zip(&together) {
        assert_eq!(a, t, "{}", j.test.name);
        let g = Geometry::new(&j.test, &j.params).unwrap();
        assert_eq!(t.2, 2 * u64::from(g.instances()), "{}", j.test.name);
        let v = model::check(&j.test);
        assert!(t.0.keys().all(|o| v.outcome_allowed(o)), "{t:?}");
    }
}

// Several launches per host wait count exactly what one launch per wait counts: the same
// jobs (a catalogue test, a test whose every outcome goes through the overflow log, and a
// spin that never ends) run 5 launches with one wait each and in groups of 2, 2 and 1 (the
// emulated group keeps only the words a GPU group keeps between launches), and give the
// same histograms, did-not-terminate counts and instances; 5 waits against 3.
#[test]
fn a_group_of_launches_counts_what_its_launches_count_one_by_one() {
    let tiny = crate::atomics::gpu::emulate::fixtures::one_role_params();
    let tests = [
        (
            catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap(),
            small(),
        ),
        (
            // 40 | 3 | 5 = 47, outside the domain the text gives: every instance is logged.
            crate::atomics::gpu::emulate::fixtures::two_ors(),
            tiny.clone(),
        ),
        (crate::atomics::gpu::emulate::fixtures::spin_forever(), tiny),
    ];
    let jobs: Vec<Job> = tests
        .into_iter()
        .enumerate()
        .map(|(i, (test, params))| Job {
            test,
            params,
            launches: 5,
            budget: None,
            seed: 7 + i as u64,
        })
        .collect();
    let run = |per_sync| {
        let mut w = Worker::new(EmulatorExecutor::new()).with_launches_per_sync(per_sync);
        let mut out = Vec::new();
        for j in &jobs {
            out.push(counts(&w.run(std::slice::from_ref(j)).remove(0).unwrap()));
        }
        (out, w.stats)
    };
    let (one, one_stats) = run(1);
    let (grouped, group_stats) = run(2);
    assert_eq!(one, grouped);
    assert_eq!((one_stats.launches, one_stats.syncs), (15, 15));
    assert_eq!((group_stats.launches, group_stats.syncs), (15, 9));
    for (j, c) in jobs.iter().zip(&grouped) {
        let n = u64::from(Geometry::new(&j.test, &j.params).unwrap().instances());
        assert_eq!(c.2, 5 * n, "{}", j.test.name);
        assert_eq!(c.0.values().sum::<u64>() + c.3, 5 * n, "{}", j.test.name);
    }
    assert_eq!(grouped[1].0, Histogram::from([(vec![47], grouped[1].2)]));
    assert_eq!(
        grouped[2].3, grouped[2].2,
        "every spin instance stopped at the cap"
    );
}

// Cases that runner threads submit together share one batch: four cases from four
// threads (three forbidden tests with their controls, one allowed test alone) are served
// in one batch of their seven tests (two launches in all, where one case at a time takes
// eight), and each case is judged as when it runs alone: the same
// verdict, tags, control figures and outcome histogram.
#[test]
fn cases_submitted_together_share_launches_and_keep_their_verdicts() {
    use super::super::run_case_with;
    let run = |name: &str, submit: &mut dyn FnMut(Vec<Job>) -> Vec<Result<RunReport, String>>| {
        let test = catalog::by_name(name).unwrap();
        let control = catalog::control_for(name).and_then(|c| catalog::by_name(&c));
        let (status, figures) = run_case_with(&test, control.as_ref(), 2, &small(), submit);
        let histogram = figures
            .into_iter()
            .find(|f| matches!(f, crate::figures::Figure::Histogram { .. }));
        let status = match status {
            CaseStatus::Pass { tags, control, .. } => format!("pass {tags:?} {control:?}"),
            other => panic!("{name}: {other:?}"),
        };
        (status, format!("{histogram:?}"))
    };
    let alone: Vec<_> = CASES
        .iter()
        .map(|n| {
            let mut w = Worker::new(EmulatorExecutor::new());
            run(n, &mut |jobs| {
                w.run(&jobs)
                    .into_iter()
                    .map(|r| r.map_err(|e| e.to_string()))
                    .collect()
            })
        })
        .collect();
    let (tx, rx) = mpsc::channel::<Request>();
    let server = std::thread::spawn(move || {
        let mut w = Worker::new(EmulatorExecutor::new());
        // Long enough for four threads released together to all be queued.
        serve(&mut w, &rx, Duration::from_secs(2));
        w.stats
    });
    let start = std::sync::Barrier::new(CASES.len());
    let together: Vec<_> = std::thread::scope(|sc| {
        let handles: Vec<_> = CASES
            .iter()
            .map(|n| {
                let (tx, start) = (tx.clone(), &start);
                sc.spawn(move || {
                    start.wait();
                    run(n, &mut |jobs| submit_to(&tx, jobs))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    drop(tx);
    let stats = server.join().unwrap();
    assert_eq!(together, alone);
    assert_eq!((stats.requests, stats.max_requests_per_round), (4, 4));
    assert_eq!((stats.batches, stats.launches, stats.tests), (1, 2, 7));
}

// A job the generator refuses is an error of its own; the others still run.
#[test]
fn a_refused_job_does_not_stop_the_queue() {
    let mut bad = job("IRIW.rel_acq.cta.intra_cta", 1);
    bad.params.workgroup_size = 32; // one warp: four roles do not fit
    let jobs = vec![bad, job("MP.rel_acq.gpu.inter_cta", 1)];
    let mut w = Worker::new(EmulatorExecutor::new());
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
    let mut w = Worker::new(EmulatorExecutor::new());
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

/// The emulator behind a device that faults like a GPU: the launch of a kernel holding
/// test `culprit` fails with a sticky `CUDA_ERROR_ILLEGAL_INSTRUCTION` (as
/// `cuCtxSynchronize` reports a kernel fault), and from then on every call fails with it
/// (as `cuModuleLoadDataEx` did for the 34 tests after a fault on one shared context)
/// until the context is made anew; `recoverable: false` is a device whose reset fails.
struct Faulting {
    inner: EmulatorExecutor,
    culprit: String,
    poisoned: bool,
    recoverable: bool,
    recoveries: u32,
}

fn fault(call: &'static str) -> RunError {
    RunError::Driver(crate::backend::cuda::DriverCallError {
        call,
        code: cudarc::driver::sys::CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
    })
}

impl Executor for Faulting {
    type Module = (crate::atomics::gpu::emulate::EmulatedModule, bool);
    fn load(&mut self, ptx: &str) -> Result<Self::Module, RunError> {
        if self.poisoned {
            return Err(fault("cuModuleLoadDataEx"));
        }
        let culprit = ptx.contains(&format!("// `{}`", self.culprit));
        Ok((self.inner.load(ptx)?, culprit))
    }
    fn launch_group(
        &mut self,
        module: &Self::Module,
        batch: &Batch,
        launches: &[Vec<PartLaunch<'_>>],
    ) -> Result<(Vec<PartCounts>, Duration), RunError> {
        if self.poisoned || module.1 {
            self.poisoned = true;
            return Err(fault("cuCtxSynchronize"));
        }
        self.inner.launch_group(&module.0, batch, launches)
    }
    fn recover(&mut self) -> Result<(), RunError> {
        self.recoveries += 1;
        if !self.recoverable {
            return Err(fault("cuDevicePrimaryCtxReset"));
        }
        self.poisoned = false;
        Ok(())
    }
}

fn faulting(culprit: &str, recoverable: bool) -> Worker<Faulting> {
    Worker::new(Faulting {
        inner: EmulatorExecutor::new(),
        culprit: culprit.into(),
        poisoned: false,
        recoverable,
        recoveries: 0,
    })
}

// A sticky fault in a batch of four: the worker makes the context anew and runs the four
// again one by one, so the error lands on the test whose kernel faults, named by its
// CUDA error, and the three others get the counts they get on a device that never
// faulted; the jobs submitted after it run as well.
#[test]
fn a_sticky_fault_is_the_culprits_error_and_the_others_still_run() {
    let culprit = "SB.relaxed.gpu.intra_cta";
    let first: Vec<Job> = [
        "MP.rel_acq.gpu.inter_cta",
        culprit,
        "LB.relaxed.gpu.inter_cta",
        "CoRR.relaxed.gpu.inter_cta",
    ]
    .iter()
    .map(|n| job(n, 2))
    .collect();
    let later = vec![job("MP.relaxed.gpu.inter_cta", 2)];
    let mut clean = Worker::new(EmulatorExecutor::new());
    let want: Vec<_> = first
        .iter()
        .chain(&later)
        .map(|j| clean.run(std::slice::from_ref(j)).pop().unwrap())
        .collect();
    let mut w = faulting(culprit, true);
    let mut got = w.run(&first);
    got.extend(w.run(&later));
    for ((j, g), want) in first.iter().chain(&later).zip(&got).zip(&want) {
        if j.test.name == culprit {
            let e = g.as_ref().unwrap_err();
            assert_eq!(
                sticky_error(e).as_deref(),
                Some("CUDA_ERROR_ILLEGAL_INSTRUCTION"),
                "{e}"
            );
        } else {
            let (g, want) = (g.as_ref().unwrap(), want.as_ref().unwrap());
            assert_eq!(counts(g), counts(want), "{}", j.test.name);
        }
    }
    // One recovery after the batch, one after the culprit alone.
    assert_eq!((w.stats.isolated, w.stats.recoveries), (4, 2));
    assert_eq!(w.executor().recoveries, 2);
}

// A device whose context cannot be made anew: the culprit's error, then every later job
// an error that says why (never a cascade of the same driver error under other names).
#[test]
fn a_context_that_cannot_be_made_anew_stops_the_worker_with_the_reason() {
    let culprit = "SB.relaxed.gpu.intra_cta";
    let mut w = faulting(culprit, false);
    let out = w.run(&[job(culprit, 1)]);
    assert!(sticky_error(out[0].as_ref().unwrap_err()).is_some());
    let out = w.run(&[job("MP.rel_acq.gpu.inter_cta", 1)]);
    let e = out[0].as_ref().unwrap_err().to_string();
    assert!(
        e.contains("could not be made anew after CUDA_ERROR_ILLEGAL_INSTRUCTION"),
        "{e}"
    );
}

// Cluster tests launch as clusters: queued among tests without clusters of the same
// block size, they go into a batch of their own cluster shape (PTX ISA: one launch has
// one cluster shape), and each gets its launches' worth of instances and only outcomes
// the model allows; the batch kernel of two cluster tests assembles.
#[test]
fn cluster_tests_batch_by_their_cluster_shape() {
    let p = StressParams {
        testing_workgroups: 8,
        workgroup_size: 32,
        max_workgroups: 12,
        ..small()
    };
    let names = [
        "MP.rel_acq.cluster.intra_cluster",
        "MP.rel_acq.gpu.inter_cta",
        "MP.rel_acq.cluster.inter_cluster",
        "SB.relaxed.gpu.inter_cta",
    ];
    let jobs: Vec<Job> = names
        .iter()
        .map(|n| Job {
            params: p.clone(),
            ..job(n, 2)
        })
        .collect();
    let shapes: Vec<(u32, u32)> = jobs
        .iter()
        .map(|j| batch::shape(&Geometry::new(&j.test, &j.params).unwrap()))
        .collect();
    assert_eq!(shapes, vec![(32, 2), (32, 1), (32, 2), (32, 1)]);
    let mut w = Worker::new(EmulatorExecutor::new());
    for (j, r) in jobs.iter().zip(w.run(&jobs)) {
        let r = r.unwrap_or_else(|e| panic!("{}: {e}", j.test.name));
        let g = Geometry::new(&j.test, &j.params).unwrap();
        assert_eq!(r.instances, 2 * u64::from(g.instances()), "{}", j.test.name);
        let v = model::check(&j.test);
        assert!(r.histogram.keys().all(|o| v.outcome_allowed(o)), "{r:?}");
    }
    assert_eq!((w.stats.batches, w.stats.max_tests_per_launch), (2, 2));
    let tc = crate::backend::toolchain::Toolchain::discover_system();
    crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
    let prepared: Vec<_> = [&jobs[0], &jobs[2]]
        .iter()
        .map(|j| {
            let g = Geometry::new(&j.test, &j.params).unwrap();
            let s = OutcomeSpace::new(&j.test, &model::check(&j.test).terms);
            (&j.test, g, s)
        })
        .collect();
    let refs: Vec<_> = prepared.iter().map(|(t, g, s)| (*t, g, s)).collect();
    let b = batch::generate(&refs).unwrap();
    assert_eq!(b.cluster, 2);
    tc.ptxas(&b.ptx, super::super::kernel::TARGET, &[])
        .unwrap_or_else(|e| panic!("{e}\n{}", b.ptx));
}
