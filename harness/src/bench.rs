//! `gpucts bench AREA --results DIR`: each bench measures its curves with repetitions (every
//! point keeps min / median / max over `--reps`) and records them as figures of pseudo-cases
//! `bench.<area>.<what>` (area `bench`) in an ordinary results set: `junit.xml`,
//! `results.json` and `report.html`, read by `gpucts report`, `diff`, `bundle` and `merge` like
//! any run's. A bench that cannot run here is a skip naming the missing capability.
//!
//! Curves: the ABI oracles' random types verified per second against the types per
//! compilation (ptx-interop 13.2 ch. 1); the PTX reader + §2.3 lint's MB/s against the module
//! size; the xcall checker's signatures per second against the signatures per file pair; the
//! memory model's candidate executions per second against a litmus test's candidate count;
//! pin / unpin latency, BAR and RDMA bandwidth per transfer size (`gpudirect::bench`).
//!
//! This module sits beside `areas` at the top: it uses the areas' public entry points and the
//! report layer, and nothing below names it.

use crate::backend::cuda::DeviceSelector;
use crate::backend::toolchain::ToolSettings;
use crate::vocab::Vocabulary;
use std::path::Path;
use std::time::{Duration, Instant};
use strum::VariantArray;

use crate::backend::toolchain::Toolchain;
use crate::capability::Capabilities;
use crate::figures::{series, BenchBlock, Better, Figure, Spread};
use crate::outcome::{CaseStatus, Verdict};
use crate::runner::CaseResult;

/// How much to measure.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Repetitions per point (min / median / max over them).
    pub reps: usize,
    /// abi: the largest batch (types per compilation) measured.
    pub count: usize,
}

/// The most repetitions a point may take (a typo would otherwise run for hours).
pub(crate) const MAX_REPS: usize = 100;

fn elapsed(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

/// `ABI oracles`: for each oracle, random types verified per second against the types per
/// compilation (1, 10, 100, capped at `count`); each repetition compiles fresh types.
pub fn abi(tc: &Toolchain, caps: &Capabilities, o: Options) -> Vec<BenchBlock> {
    use crate::abi::oracle::{check_batch, Oracle, BATCH};
    let top = o.count.clamp(1, BATCH);
    let mut sizes: Vec<usize> = [1, 10, 100].into_iter().filter(|&n| n < top).collect();
    sizes.push(top);
    let what = "bench: random types verified per second by an ABI oracle (ptx-interop 13.2 ch. 1)";
    let mut out = Vec::new();
    // Seeds far from the suite's (which start at 0) so no batch is shared with a suite run.
    let mut seed = 1_000_000u64;
    for &oracle in Oracle::VARIANTS {
        let name = format!("abi.{}", oracle.name());
        if let Some(c) = oracle.requires().iter().find(|c| !caps.has(**c)) {
            out.push(BenchBlock::skip(&name, what, *c, c.hint()));
            continue;
        }
        let t0 = Instant::now();
        let mut text = format!(
            "{name}: types/s per types per compilation, {} repetitions (min / median / max)\n",
            o.reps
        );
        let mut pts = Vec::new();
        let (mut agreed, mut other) = (0usize, 0usize);
        let mut failed = None;
        'sizes: for &n in &sizes {
            let mut rates = Vec::new();
            for _ in 0..o.reps {
                let types = crate::abi::random::random_batch(seed, n);
                seed += n as u64;
                let t = Instant::now();
                match check_batch(oracle, tc, &types) {
                    Ok(rs) => {
                        rates.push(n as f64 / elapsed(t));
                        let (a, o) = crate::abi::oracle::tally(&rs);
                        agreed += a;
                        other += o;
                    }
                    Err(e) => {
                        failed = Some(e.to_string());
                        break 'sizes;
                    }
                }
            }
            if let Some(s) = Spread::of(&rates) {
                text += &format!(
                    "  {n:>4} types  {:>9.1} / {:>9.1} / {:>9.1} types/s\n",
                    s.min, s.median, s.max
                );
            }
            pts.push((n as f64, rates));
        }
        if let Some(e) = &failed {
            text += &format!("  stopped: {e}\n");
        }
        text += &format!("  {agreed} agree, {other} mismatch or error\n");
        out.push(BenchBlock {
            name,
            what: what.into(),
            skipped: None,
            figures: vec![series(
                &format!("{} types/s", oracle.name()),
                "types per compilation",
                "types/s",
                Some(Better::Higher),
                &pts,
            )],
            text,
            secs: elapsed(t0),
        });
    }
    out
}

/// The PTX reader + §2.3 lint: MB/s against the size of a synthetic module (10, 100, 1,000
/// functions), and files/s over `ptx-corpus/` (when present).
pub fn lint(root: &Path, o: Options) -> Vec<BenchBlock> {
    use crate::abi::lint::lint_source_counted;
    use crate::abi::lint_corpus::{corpus_files, synthetic_module};
    let t0 = Instant::now();
    let mut text = format!(
        "lint: gpucts reader+lint MB/s per module size, {} repetitions (min / median / max)\n",
        o.reps
    );
    let mut pts = Vec::new();
    for n in [10usize, 100, 1000] {
        let module = synthetic_module(n);
        let mb = module.len() as f64 / 1e6;
        let mut rates = Vec::new();
        for _ in 0..o.reps {
            let t = Instant::now();
            let ok = lint_source_counted(&module, "synthetic.ptx").is_ok();
            let secs = elapsed(t);
            if ok {
                rates.push(mb / secs);
            }
        }
        if let Some(s) = Spread::of(&rates) {
            text += &format!(
                "  {n:>5} functions, {:>9} bytes  {:>8.1} / {:>8.1} / {:>8.1} MB/s\n",
                module.len(),
                s.min,
                s.median,
                s.max
            );
        } else {
            text += &format!("  {n:>5} functions: the reader refused the synthetic module\n");
        }
        pts.push((module.len() as f64, rates));
    }
    let mut figs = vec![series(
        "reader+lint MB/s",
        "bytes",
        "MB/s",
        Some(Better::Higher),
        &pts,
    )];
    let files: Vec<String> = corpus_files(&root.join("ptx-corpus"))
        .into_iter()
        .filter_map(|p| std::fs::read(&p).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    if !files.is_empty() {
        let mut rates = Vec::new();
        for _ in 0..o.reps {
            let t = Instant::now();
            for f in &files {
                let _ = lint_source_counted(f, "corpus.ptx");
            }
            rates.push(files.len() as f64 / elapsed(t));
        }
        if let Some(s) = Spread::of(&rates) {
            text += &format!(
                "  ptx-corpus: {} files  {:.0} / {:.0} / {:.0} files/s\n",
                files.len(),
                s.min,
                s.median,
                s.max
            );
            figs.push(Figure::Scalar {
                name: format!("ptx-corpus files/s ({} files)", files.len()),
                unit: "files/s".into(),
                better: Some(Better::Higher),
                value: s,
            });
        }
    }
    vec![BenchBlock {
        name: "lint.reader".into(),
        what: "bench: PTX reader and parameter lint throughput (ptx-interop 13.2 §2.3)".into(),
        skipped: None,
        figures: figs,
        text,
        secs: elapsed(t0),
    }]
}

/// The xcall checker: signatures per second (generated by gpucts's own PTX emitter, caller and
/// callee files read and every call compared with its definition) against the signatures per
/// file pair (10, 100, 1,000). Offline: no producer is run.
pub fn xcall(o: Options) -> Vec<BenchBlock> {
    use crate::backend::producer::Producer;
    use crate::xcall::{check, emit, sig};
    let t0 = Instant::now();
    let mut text = format!(
        "xcall: checker signatures/s per file pair size, {} repetitions (min / median / max)\n",
        o.reps
    );
    let mut pts = Vec::new();
    let mut problem = None;
    for n in [10u64, 100, 1000] {
        let sigs: Vec<sig::Signature> = sig::signatures(0, n)
            .into_iter()
            .filter(|s| emit::expresses(Producer::named("gpucts"), s).is_ok())
            .collect();
        let refs: Vec<&sig::Signature> = sigs.iter().collect();
        let (caller, callee) = (emit::ptx_caller(&refs), emit::ptx_callee(&refs));
        let mut rates = Vec::new();
        for _ in 0..o.reps {
            let t = Instant::now();
            let r = check::PtxFile::parse("caller.ptx", &caller)
                .and_then(|a| Ok((a, check::PtxFile::parse("callee.ptx", &callee)?)))
                .and_then(|(a, b)| check::check(&[a, b]));
            match r {
                Ok(rep) if rep.mismatches.is_empty() => rates.push(sigs.len() as f64 / elapsed(t)),
                Ok(rep) => {
                    problem = Some(format!(
                        "{} mismatches between gpucts's own caller and callee",
                        rep.mismatches.len()
                    ));
                    break;
                }
                Err(e) => {
                    problem = Some(e.to_string());
                    break;
                }
            }
        }
        if let Some(s) = Spread::of(&rates) {
            text += &format!(
                "  {:>5} signatures  {:>9.0} / {:>9.0} / {:>9.0} signatures/s\n",
                sigs.len(),
                s.min,
                s.median,
                s.max
            );
        }
        pts.push((sigs.len() as f64, rates));
    }
    if let Some(p) = &problem {
        text += &format!("  stopped: {p}\n");
    }
    vec![BenchBlock {
        name: "xcall.check".into(),
        what: "bench: cross-producer call checker throughput (ptx-interop 13.2 §2.3)".into(),
        skipped: None,
        figures: vec![series(
            "checker signatures/s",
            "signatures per file pair",
            "signatures/s",
            Some(Better::Higher),
            &pts,
        )],
        text,
        secs: elapsed(t0),
    }]
}

/// The memory model over the litmus catalogue: candidate executions per second against each
/// test's candidate count (tests of the same count share a point), and catalogue tests/s.
/// `device`: the GPU of the GPU blocks (`--device`); `tools`: where the worker's ptxas is.
pub fn atomics(o: Options, device: &DeviceSelector, tools: &ToolSettings) -> Vec<BenchBlock> {
    use crate::atomics::{catalog, model};
    let t0 = Instant::now();
    let tests = catalog::catalog();
    let mut by_size: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
    let mut per_run = Vec::new();
    for _ in 0..o.reps {
        let run = Instant::now();
        for t in &tests {
            let one = Instant::now();
            let v = model::check(t);
            let secs = elapsed(one);
            by_size
                .entry(v.candidates)
                .or_default()
                .push(v.candidates as f64 / secs.max(1e-9));
        }
        per_run.push(tests.len() as f64 / elapsed(run));
    }
    let pts: Vec<(f64, Vec<f64>)> = by_size.into_iter().map(|(x, ys)| (x as f64, ys)).collect();
    let mut text = format!(
        "atomics: memory model over {} catalogue tests, {} repetitions (min / median / max)\n",
        tests.len(),
        o.reps
    );
    let mut figs = vec![series(
        "model candidate executions/s",
        "candidate executions per test",
        "candidates/s",
        Some(Better::Higher),
        &pts,
    )];
    if let Some(s) = Spread::of(&per_run) {
        text += &format!(
            "  catalogue  {:.1} / {:.1} / {:.1} tests/s\n",
            s.min, s.median, s.max
        );
        figs.push(Figure::Scalar {
            name: "catalogue tests/s".into(),
            unit: "tests/s".into(),
            better: Some(Better::Higher),
            value: s,
        });
    }
    for (x, ys) in &pts {
        if let Some(s) = Spread::of(ys) {
            text += &format!(
                "  {x:>9} candidates  {:.0} / {:.0} / {:.0} candidates/s\n",
                s.min, s.median, s.max
            );
        }
    }
    let mut blocks = vec![BenchBlock {
        name: "atomics.model".into(),
        what: "bench: memory model checker throughput (ptx-interop 13.2 memory consistency model)"
            .into(),
        skipped: None,
        figures: figs,
        text,
        secs: elapsed(t0),
    }];
    blocks.push(gpu_host(o));
    blocks.push(gpu_worker_emulated(o));
    blocks.push(gpu_cases_emulated(o));
    blocks.push(gpu_worker(device, tools));
    blocks.push(gpu_cases(device, tools));
    blocks
}

/// One `atomics.gpu.*` case as the runner hands it to the worker: the catalogue test, its
/// control when the test is forbidden, and the stress parameters.
type GpuCase = (
    crate::atomics::litmus::LitmusTest,
    Option<crate::atomics::litmus::LitmusTest>,
    crate::atomics::gpu::layout::StressParams,
);

/// What [`run_cases`] measured: the worker's counts, the wall time, and the cases whose
/// status was an error.
struct CasesRun {
    stats: crate::atomics::gpu::worker::Stats,
    wall: f64,
    errors: Vec<String>,
}

/// `cases` as a run's runner threads hand them to the GPU worker: `threads` threads take the
/// next case each ([`crate::atomics::gpu::run_case_with`]) and submit it to one queue
/// ([`crate::atomics::gpu::worker::serve`]) that waits up to `wait` for more before each
/// batch, on the executor `open` makes in the worker's thread.
fn run_cases<E: crate::atomics::gpu::worker::Executor>(
    open: impl FnOnce() -> Result<E, String> + Send,
    cases: &[GpuCase],
    launches: u64,
    threads: usize,
    wait: Duration,
) -> Result<CasesRun, String> {
    use crate::atomics::gpu::worker::{serve, submit_to, Request, Worker};
    use crate::outcome::CaseStatus;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (tx, rx) = std::sync::mpsc::channel::<Request>();
    let next = AtomicUsize::new(0);
    let errors = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        let server = sc.spawn(move || {
            let mut w = Worker::new(open()?);
            serve(&mut w, &rx, wait);
            Ok::<_, String>(w.stats)
        });
        let run = Instant::now();
        let submitters: Vec<_> = (0..threads)
            .map(|_| {
                let tx = tx.clone();
                let (next, errors) = (&next, &errors);
                sc.spawn(move || {
                    while let Some((test, control, params)) =
                        cases.get(next.fetch_add(1, Ordering::Relaxed))
                    {
                        let (status, _) = crate::atomics::gpu::run_case_with(
                            test,
                            control.as_ref(),
                            launches,
                            params,
                            |jobs| submit_to(&tx, jobs),
                        );
                        if let CaseStatus::Error { message } = status {
                            let mut e = errors.lock().unwrap_or_else(|e| e.into_inner());
                            e.push(format!("{}: {message}", test.name));
                        }
                    }
                })
            })
            .collect();
        drop(tx);
        for s in submitters {
            let _ = s.join();
        }
        let wall = elapsed(run);
        let stats = server
            .join()
            .map_err(|_| "the worker thread panicked".to_string())??;
        Ok::<_, String>((stats, wall))
    })
    .map(|(stats, wall)| CasesRun {
        stats,
        wall,
        errors: errors.into_inner().unwrap_or_else(|e| e.into_inner()),
    })
}

/// The text and figures of a [`run_cases`] run of `n` cases.
fn cases_figures(label: &str, r: &CasesRun, n: usize) -> (String, Vec<Figure>) {
    let cases_per_s = n as f64 / r.wall.max(1e-12);
    let e2e = r.stats.instances as f64 / r.wall.max(1e-12);
    let mut text = format!(
        "  {label}: {n} cases in {:.2} s: {cases_per_s:.2} cases/s, {e2e:.3e} instances/s end \
         to end; {} batches, {} launches, up to {} cases per round and {} tests per launch\n",
        r.wall,
        r.stats.batches,
        r.stats.launches,
        r.stats.max_requests_per_round,
        r.stats.max_tests_per_launch
    );
    for e in r.errors.iter().take(5) {
        text += &format!("  error: {e}\n");
    }
    let figures = vec![
        Figure::Scalar {
            name: format!("{label} cases/s"),
            unit: "cases/s".into(),
            better: Some(Better::Higher),
            value: Spread::exact(cases_per_s),
        },
        Figure::Scalar {
            name: format!("{label} instances/s end to end"),
            unit: "instances/s".into(),
            better: Some(Better::Higher),
            value: Spread::exact(e2e),
        },
        Figure::Scalar {
            name: format!("{label} launches"),
            unit: "launches".into(),
            better: Some(Better::Lower),
            value: Spread::exact(r.stats.launches as f64),
        },
    ];
    (text, figures)
}

/// The cases of `tests` under `params`: each with its control when the model forbids it.
fn gpu_cases_of(
    tests: impl IntoIterator<Item = crate::atomics::litmus::LitmusTest>,
    params: &crate::atomics::gpu::layout::StressParams,
) -> Vec<GpuCase> {
    use crate::atomics::{catalog, model};
    tests
        .into_iter()
        .map(|t| {
            let control = if model::check(&t).allowed {
                None
            } else {
                catalog::control_for(&t.name).and_then(|c| catalog::by_name(&c))
            };
            (t, control, params.clone())
        })
        .collect()
}

/// Cases through the GPU worker on the PTX emulator, as the runner hands them over: one case
/// per batch (one runner thread, no wait: the runner before cases were batched) against
/// four runner threads whose cases the worker batches. The emulator's rates are an
/// interpreter's; what carries over to a GPU is the packing (launches, cases per launch).
fn gpu_cases_emulated(o: Options) -> BenchBlock {
    use crate::atomics::catalog;
    use crate::atomics::gpu::emulate::EmulatorExecutor;
    use crate::atomics::gpu::layout::StressParams;
    use crate::atomics::gpu::worker::BATCH_WAIT;
    let t0 = Instant::now();
    let params = StressParams {
        testing_workgroups: 4,
        workgroup_size: 128,
        max_workgroups: 5,
        stress_iterations: 4,
        pre_stress_iterations: 2,
        stress_target_lines: 2,
        stress_line_size: 4,
        ..StressParams::default()
    };
    const CASES: usize = 8;
    const LAUNCHES: u64 = 2;
    const THREADS: usize = 4;
    let cases = gpu_cases_of(catalog::catalog().into_iter().take(CASES), &params);
    let mut text = format!(
        "atomics: {CASES} atomics.gpu cases x {LAUNCHES} launches through the worker on the PTX \
         emulator, {} repetitions\n",
        o.reps
    );
    let (mut alone, mut batched) = (Vec::new(), Vec::new());
    let mut last = None;
    for _ in 0..o.reps {
        let open = || Ok(EmulatorExecutor::new());
        let one = run_cases(open, &cases, LAUNCHES, 1, Duration::ZERO);
        let open = || Ok(EmulatorExecutor::new());
        let many = run_cases(open, &cases, LAUNCHES, THREADS, BATCH_WAIT);
        match (one, many) {
            (Ok(one), Ok(many)) => {
                alone.push(CASES as f64 / one.wall.max(1e-12));
                batched.push(CASES as f64 / many.wall.max(1e-12));
                last = Some((one, many));
            }
            (Err(e), _) | (_, Err(e)) => text += &format!("  the worker did not start: {e}\n"),
        }
    }
    let mut figures = Vec::new();
    if let (Some(a), Some(b)) = (Spread::of(&alone), Spread::of(&batched)) {
        text += &format!(
            "  one case per batch: {:.2} / {:.2} / {:.2} cases/s\n  \
             {THREADS} runner threads, batched: {:.2} / {:.2} / {:.2} cases/s\n",
            a.min, a.median, a.max, b.min, b.median, b.max
        );
        figures.push(Figure::Scalar {
            name: "emulated cases/s, one case per batch".into(),
            unit: "cases/s".into(),
            better: Some(Better::Higher),
            value: a,
        });
        figures.push(Figure::Scalar {
            name: "emulated cases/s, batched".into(),
            unit: "cases/s".into(),
            better: Some(Better::Higher),
            value: b,
        });
    }
    if let Some((one, many)) = last {
        for (label, r) in [("one case per batch", &one), ("batched", &many)] {
            let (t, f) = cases_figures(&format!("emulated, {label}"), r, CASES);
            text += &t;
            figures.extend(f.into_iter().filter(|f| !f.name().ends_with("cases/s")));
        }
    }
    BenchBlock {
        name: "atomics.gpu_cases.emulated".into(),
        what: "bench: atomics.gpu cases through the GPU worker's queue on the PTX emulator (one \
               case per batch against cases batched across runner threads)"
            .into(),
        skipped: None,
        figures,
        text,
        secs: elapsed(t0),
    }
}

/// The suite's `atomics.gpu.*` cases on the worker's queue (312 catalogue tests, 156 in shared
/// memory; controls beside forbidden tests; default stress, 100 launches) on `device`, as the
/// runner hands them over: one case per batch, then 16 runner threads whose cases the worker
/// batches. Cases/s, instances/s end to end and launches of each, in the same run.
fn gpu_cases(device: &DeviceSelector, tools: &ToolSettings) -> BenchBlock {
    use crate::atomics::catalog;
    use crate::atomics::gpu::layout::{Geometry, StressParams};
    use crate::atomics::gpu::worker::{CudaExecutor, BATCH_WAIT};
    use crate::atomics::gpu::DEFAULT_ITERATIONS;
    let name = "atomics.gpu_cases";
    let what = "bench: the atomics.gpu.* cases through the GPU worker's queue";
    let t0 = Instant::now();
    if let Err(e) = crate::backend::cuda::Session::open_device(device) {
        return BenchBlock::skip(
            name,
            what,
            crate::capability::Capability::Gpu,
            format!("no CUDA GPU {device} for the worker: {e}"),
        );
    }
    let mut cases = gpu_cases_of(catalog::catalog(), &StressParams::default());
    let shared = StressParams {
        intra_cta_shared: true,
        ..StressParams::default()
    };
    let in_shared = catalog::catalog()
        .into_iter()
        .filter(|t| Geometry::new(t, &shared).is_ok_and(|g| g.shared));
    cases.extend(gpu_cases_of(in_shared, &shared));
    let mut text = format!(
        "atomics: {} atomics.gpu cases through the GPU worker's queue on GPU {device}\n",
        cases.len()
    );
    let mut figures = Vec::new();
    for (label, threads, wait) in [
        ("GPU cases, one per batch", 1, Duration::ZERO),
        ("GPU cases, batched", 16, BATCH_WAIT),
    ] {
        match run_cases(
            || CudaExecutor::open(device, tools),
            &cases,
            DEFAULT_ITERATIONS,
            threads,
            wait,
        ) {
            Ok(r) => {
                let (t, f) = cases_figures(label, &r, cases.len());
                text += &t;
                figures.extend(f);
            }
            Err(e) => text += &format!("  {label}: the worker did not start: {e}\n"),
        }
    }
    BenchBlock {
        name: name.into(),
        what: what.into(),
        skipped: None,
        figures,
        text,
        secs: elapsed(t0),
    }
}

/// One worker run's figures: end to end (wall, from the first job's preparation to the last
/// report) and per kernel-second, with the launches' packing.
fn worker_figures(
    label: &str,
    stats: &crate::atomics::gpu::worker::Stats,
    wall: f64,
    tests: usize,
) -> (String, Vec<Figure>) {
    let kernel = stats.kernel_time.as_secs_f64().max(1e-12);
    let e2e = stats.instances as f64 / wall.max(1e-12);
    let per_kernel = stats.instances as f64 / kernel;
    let per_launch = stats.instances as f64 / (stats.launches.max(1)) as f64;
    let text = format!(
        "  {label}: {tests} tests, {} instances in {:.2} s: {e2e:.3e} instances/s end to end, \
         {per_kernel:.3e} per kernel-second; {} launches in {} batches, {} host syncs, \
         {per_launch:.0} instances and up to {} tests per launch; {} kernels compiled in {:.2} s \
         ({:.1} ms each; {} of them several at a time), {} from the cache; {} context \
         recoveries, {} tests re-run alone after a fault\n",
        stats.instances,
        wall,
        stats.launches,
        stats.batches,
        stats.syncs,
        stats.max_tests_per_launch,
        stats.compiled,
        stats.compile_time.as_secs_f64(),
        1e3 * stats.compile_time.as_secs_f64() / stats.compiled.max(1) as f64,
        stats.compiled_ahead,
        stats.cached,
        stats.recoveries,
        stats.isolated
    );
    let figures = vec![
        Figure::Scalar {
            name: format!("{label} instances/s end to end"),
            unit: "instances/s".into(),
            better: Some(Better::Higher),
            value: Spread::exact(e2e),
        },
        Figure::Scalar {
            name: format!("{label} instances per kernel-second"),
            unit: "instances/s".into(),
            better: Some(Better::Higher),
            value: Spread::exact(per_kernel),
        },
        Figure::Scalar {
            name: format!("{label} seconds compiling kernels"),
            unit: "s".into(),
            better: Some(Better::Lower),
            value: Spread::exact(stats.compile_time.as_secs_f64()),
        },
    ];
    (text, figures)
}

/// The litmus path on the PTX emulator, before and after the GPU worker: each catalogue test
/// alone with host-side decoding (`emulate`), then all of them through the worker (counting
/// kernels, batches). Small launches (what the emulator runs quickly); the figures exercise
/// the worker's path in CI and compare the two paths on one machine, not a GPU's rates.
fn gpu_worker_emulated(o: Options) -> BenchBlock {
    use crate::atomics::catalog;
    use crate::atomics::gpu::emulate::{self, EmulatorExecutor};
    use crate::atomics::gpu::layout::StressParams;
    use crate::atomics::gpu::worker::{Job, Worker};
    let t0 = Instant::now();
    let params = StressParams {
        testing_workgroups: 4,
        workgroup_size: 128,
        max_workgroups: 5,
        stress_iterations: 4,
        pre_stress_iterations: 2,
        stress_target_lines: 2,
        stress_line_size: 4,
        ..StressParams::default()
    };
    const TESTS: usize = 16;
    const LAUNCHES: u64 = 2;
    let tests: Vec<_> = catalog::catalog().into_iter().take(TESTS).collect();
    let mut text = format!(
        "atomics: litmus launches in the PTX emulator, {TESTS} catalogue tests x {LAUNCHES} launches, {} repetitions\n",
        o.reps
    );
    let (mut before, mut after) = (Vec::new(), Vec::new());
    let mut last = None;
    for rep in 0..o.reps {
        let run = Instant::now();
        let mut instances = 0;
        for (i, t) in tests.iter().enumerate() {
            if let Ok(e) = emulate::emulate(t, &params, LAUNCHES, (rep * TESTS + i) as u64) {
                instances += e.instances;
            }
        }
        before.push(instances as f64 / elapsed(run));
        let jobs: Vec<Job> = tests
            .iter()
            .enumerate()
            .map(|(i, t)| Job {
                test: t.clone(),
                params: params.clone(),
                launches: LAUNCHES,
                budget: None,
                seed: (rep * TESTS + i) as u64,
            })
            .collect();
        let mut w = Worker::new(EmulatorExecutor::new());
        let run = Instant::now();
        let failed = w.run(&jobs).iter().filter(|r| r.is_err()).count();
        let wall = elapsed(run);
        after.push(w.stats.instances as f64 / wall.max(1e-12));
        if failed > 0 {
            text += &format!("  {failed} jobs failed in the worker\n");
        }
        last = Some((w.stats, wall));
    }
    let mut figures = Vec::new();
    if let (Some(b), Some(a)) = (Spread::of(&before), Spread::of(&after)) {
        text += &format!(
            "  one test per launch, host decoding: {:.3e} / {:.3e} / {:.3e} instances/s\n  \
             worker (device counting, batches):   {:.3e} / {:.3e} / {:.3e} instances/s\n",
            b.min, b.median, b.max, a.min, a.median, a.max
        );
        figures.push(Figure::Scalar {
            name: "emulated instances/s, one test per launch".into(),
            unit: "instances/s".into(),
            better: Some(Better::Higher),
            value: b,
        });
    }
    if let Some((stats, wall)) = last {
        let (t, f) = worker_figures("emulated worker", &stats, wall, TESTS);
        text += &t;
        figures.extend(f);
    }
    BenchBlock {
        name: "atomics.gpu_worker.emulated".into(),
        what: "bench: GPU litmus worker on the PTX emulator (device counting, several tests per launch)"
            .into(),
        skipped: None,
        figures,
        text,
        secs: elapsed(t0),
    }
}

/// The `atomics.gpu.*` cases' tests through the GPU worker on `device`, one submission: the 312
/// catalogue tests and the 156 in shared memory (as the suite runs them, default stress,
/// 100 launches each), packed into batches. End-to-end instances/s (targets: the 468 in
/// under 30 s, 1e8 instances/s) and per kernel-second, measured in the same run.
fn gpu_worker(device: &DeviceSelector, tools: &ToolSettings) -> BenchBlock {
    use crate::atomics::catalog;
    use crate::atomics::gpu::layout::{Geometry, StressParams};
    use crate::atomics::gpu::worker::{CudaExecutor, Job, Worker};
    use crate::atomics::gpu::DEFAULT_ITERATIONS;
    let name = "atomics.gpu_worker";
    let what = "bench: the 468 atomics.gpu.* tests through the GPU worker";
    let t0 = Instant::now();
    let executor = match CudaExecutor::open(device, tools) {
        Ok(e) => e,
        Err(e) => {
            return BenchBlock::skip(
                name,
                what,
                crate::capability::Capability::Gpu,
                format!("no CUDA GPU {device} for the worker: {e}"),
            )
        }
    };
    let mut jobs = Vec::new();
    for t in catalog::catalog() {
        for shared in [false, true] {
            let params = StressParams {
                intra_cta_shared: shared,
                ..StressParams::default()
            };
            if shared && !Geometry::new(&t, &params).is_ok_and(|g| g.shared) {
                continue;
            }
            jobs.push(Job {
                test: t.clone(),
                params,
                launches: DEFAULT_ITERATIONS,
                budget: None,
                seed: jobs.len() as u64,
            });
        }
    }
    let mut w = Worker::new(executor);
    let run = Instant::now();
    let results = w.run(&jobs);
    let wall = elapsed(run);
    let failed: Vec<String> = results
        .iter()
        .zip(&jobs)
        .filter_map(|(r, j)| r.as_ref().err().map(|e| format!("{}: {e}", j.test.name)))
        .collect();
    let mut text = format!(
        "atomics: {} tests through the GPU worker on GPU {device}\n",
        jobs.len()
    );
    let (t, figures) = worker_figures("GPU worker", &w.stats, wall, jobs.len());
    text += &t;
    let (by_ptxas, by_jit) = w.executor().compiled_by;
    text += &format!("  kernels compiled by ptxas: {by_ptxas}, by the driver's JIT: {by_jit}\n");
    text += &format!(
        "  targets: 468 tests in < 30 s ({}), >= 1e8 instances/s end to end ({})\n",
        if wall < 30.0 { "met" } else { "missed" },
        if w.stats.instances as f64 / wall.max(1e-12) >= 1e8 {
            "met"
        } else {
            "missed"
        }
    );
    for f in failed.iter().take(10) {
        text += &format!("  failed: {f}\n");
    }
    // The same tests with one host wait per launch (the worker before launch groups), on a
    // second executor so that no kernel comes from the first run's cache: what the groups of
    // `LAUNCHES_PER_SYNC` launches per wait bought on this GPU.
    let mut figures = figures;
    match CudaExecutor::open(device, tools) {
        Ok(e) => {
            let mut w1 = Worker::new(e).with_launches_per_sync(1);
            let run = Instant::now();
            let failed = w1.run(&jobs).iter().filter(|r| r.is_err()).count();
            let (t, f) = worker_figures(
                "GPU worker, one launch per wait",
                &w1.stats,
                elapsed(run),
                jobs.len(),
            );
            text += &t;
            if failed > 0 {
                text += &format!("  {failed} tests failed with one launch per wait\n");
            }
            figures.extend(f);
        }
        Err(e) => text += &format!("  one launch per wait: no second executor: {e}\n"),
    }
    BenchBlock {
        name: name.into(),
        what: what.into(),
        skipped: None,
        figures,
        text,
        secs: elapsed(t0),
    }
}

/// The host's share of a GPU litmus launch, without a GPU: per launch, a shuffled plan, the
/// role and address tables, the initial memory image and the decoding of a launch's results
/// into the outcome histogram, at the default stress parameters (8,192 instances a launch).
/// Its instances/s bound what a GPU run can reach end to end.
fn gpu_host(o: Options) -> BenchBlock {
    use crate::atomics::gpu::layout::{self, Geometry, Histogram, IterationPlan, StressParams};
    use crate::atomics::{catalog, model};
    use rand::SeedableRng;
    let t0 = Instant::now();
    const LAUNCHES: usize = 20;
    let params = StressParams::default();
    let mut rates = Vec::new();
    let mut per_stage = [0f64; 3];
    let mut tests = 0;
    for t in catalog::catalog() {
        let Ok(g) = Geometry::new(&t, &params) else {
            continue;
        };
        tests += 1;
        let terms = model::check(&t).terms;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let n = g.instances() as usize;
        let results = vec![0u32; n * g.slots.len()];
        for _ in 0..o.reps {
            let mut h = Histogram::new();
            let run = Instant::now();
            for _ in 0..LAUNCHES {
                let a = Instant::now();
                let plan = IterationPlan::random(&g, &mut rng);
                let tables = layout::tables(&g, &plan);
                let b = Instant::now();
                let memory = g.initial_memory(&tables.addrs);
                let c = Instant::now();
                let _ = layout::decode(&g, &terms, &tables, &results, &memory, &mut h);
                per_stage[0] += (b - a).as_secs_f64();
                per_stage[1] += (c - b).as_secs_f64();
                per_stage[2] += elapsed(c);
            }
            rates.push((LAUNCHES * n) as f64 / elapsed(run));
        }
    }
    let total: f64 = per_stage.iter().sum::<f64>().max(1e-12);
    let mut text = format!(
        "atomics: host work of a GPU litmus launch ({tests} catalogue tests x {LAUNCHES} launches, {} repetitions)\n",
        o.reps
    );
    let mut figures = Vec::new();
    if let Some(s) = Spread::of(&rates) {
        text += &format!(
            "  instances/s (per test)  {:.3e} / {:.3e} / {:.3e}\n  time: plan + tables {:.0} %, initial memory {:.0} %, decode {:.0} %\n",
            s.min,
            s.median,
            s.max,
            100.0 * per_stage[0] / total,
            100.0 * per_stage[1] / total,
            100.0 * per_stage[2] / total
        );
        figures.push(Figure::Scalar {
            name: "host instances/s".into(),
            unit: "instances/s".into(),
            better: Some(Better::Higher),
            value: s,
        });
    }
    BenchBlock {
        name: "atomics.gpu_host".into(),
        what: "bench: host work per GPU litmus launch (tables, initial memory, decoding)".into(),
        skipped: None,
        figures,
        text,
        secs: elapsed(t0),
    }
}

/// The pseudo-case a block becomes in a results set; its figures are recorded under its id.
pub(crate) fn case_result(b: &BenchBlock) -> CaseResult {
    let id = format!("bench.{}", b.name);
    let status = match &b.skipped {
        Some((cap, reason)) => CaseStatus::skip(*cap, reason.clone()),
        None => CaseStatus::pass_with(b.text.trim_end().to_string()),
    };
    CaseResult {
        verdict: Verdict::judge(&status, false, None),
        id,
        area: "bench".into(),
        clause: b.what.clone(),
        origin: "gpucts bench".into(),
        status,
        duration_s: b.secs,
        device: None,
        attempts: Vec::new(),
        figures: b.figures.clone(),
    }
}

/// A `--reps` value out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--reps {0}: repetitions per point are 1..={MAX_REPS}")]
pub(crate) struct RepsError(pub usize);

/// Why `--reps` was refused.
pub(crate) fn check_reps(reps: usize) -> Result<usize, RepsError> {
    if (1..=MAX_REPS).contains(&reps) {
        Ok(reps)
    } else {
        Err(RepsError(reps))
    }
}
