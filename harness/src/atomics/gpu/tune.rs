//! `gpucts litmus tune`: a search for stress parameters under which the relaxed controls show
//! their weak outcomes (issue 16: on the H100, no control placed within one CTA, nor CoRR/CoRW/
//! CoWR/CoWW/RMW anywhere, ever did with the default parameters, so their forbidden cases
//! carry "stress has no teeth").
//!
//! GPUHarbor's method (Levine et al., ISSTA'23): draw parameter sets at random
//! ([`StressParams::random`]), run every test under each for a short while, and rank the sets by
//! how many tests showed weak behaviour and how often. Configuration 0 is always the default
//! set, so a tuning run also measures the suite as it stands. Every outcome is still judged by
//! the memory model: an outcome the model forbids, seen while tuning, is reported as loudly as
//! in the suite.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use serde::Serialize;

use super::layout::StressParams;
use super::{classify, run, RunError};
use crate::atomics::catalog;
use crate::atomics::litmus::LitmusTest;
use crate::atomics::model::{self, ModelVerdict};
use crate::backend::cuda::Session;

/// What one (parameter set, test) pair gave.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum TuneOutcome {
    Ran {
        instances: u64,
        /// Instances whose outcome is the test's condition (its weak outcome).
        weak: u64,
        /// Instances whose outcome the model forbids: any is a failure of the device.
        forbidden: u64,
        kernel_s: f64,
        wall_s: f64,
    },
    /// The set cannot place this test (more roles than CTAs or warps).
    Skipped { reason: String },
    /// The driver refused (a launch error, an out-of-memory).
    Failed { error: String },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuneRun {
    pub config: usize,
    pub test: String,
    #[serde(flatten)]
    pub outcome: TuneOutcome,
}

/// A tuning run: the parameter sets and every run made (in order; a run stopped by its time
/// budget has fewer than configs x tests).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tuning {
    pub seed: u64,
    pub iterations: u64,
    pub configs: Vec<StressParams>,
    pub tests: Vec<String>,
    pub runs: Vec<TuneRun>,
    /// Whether the time budget ended the run before every pair ran.
    pub stopped_by_budget: bool,
    /// A failure after which the GPU context no longer works (a kernel fault is sticky): the
    /// run stopped there.
    pub context_lost: Option<String>,
}

/// Why a tuning run did not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TuneError {
    #[error("`{0}` is not a catalogue test (`gpucts --suite atomics --list` names them: atomics.gpu.<test>)")]
    UnknownTest(String),
    #[error("litmus tune needs a GPU: {0}")]
    NoGpu(String),
    #[error("--configs must be at least 1")]
    NoConfigs,
    #[error("--configs {0}: at most {MAX_CONFIGS} parameter sets")]
    TooManyConfigs(usize),
    #[error("{path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Most parameter sets one tuning run draws (they are held in memory before the first run).
pub(crate) const MAX_CONFIGS: usize = 10_000;

/// The relaxed controls the suite's forbidden cases run (each distinct one once, sorted):
/// the tests whose weak outcomes the stress must be able to produce.
pub(crate) fn default_tests() -> Vec<String> {
    let controls: BTreeSet<String> = catalog::catalog()
        .iter()
        .filter_map(|t| catalog::control_for(&t.name))
        .collect();
    controls.into_iter().collect()
}

/// Configuration 0 is the default set, then `n - 1` random ones from `seed`.
pub fn configs(n: usize, seed: u64) -> Vec<StressParams> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    std::iter::once(StressParams::default())
        .chain((1..n).map(|_| StressParams::random(&mut rng)))
        .collect()
}

/// Run every test under every set, `iterations` launches each (at most 10 s a pair), until
/// `budget` is spent.
pub fn tune(
    session: &Session,
    tests: &[LitmusTest],
    configs: &[StressParams],
    iterations: u64,
    budget: Duration,
    seed: u64,
) -> Tuning {
    let verdicts: Vec<ModelVerdict> = tests.iter().map(model::check).collect();
    let start = Instant::now();
    let mut runs = Vec::new();
    let mut stopped_by_budget = false;
    let mut context_lost = None;
    'sets: for (k, params) in configs.iter().enumerate() {
        for (test, verdict) in tests.iter().zip(&verdicts) {
            if start.elapsed() >= budget {
                stopped_by_budget = true;
                break 'sets;
            }
            let outcome = match run(
                session,
                test,
                verdict,
                params,
                iterations,
                Some(super::RUN_BUDGET),
                seed.wrapping_add(k as u64),
            ) {
                Ok(r) => {
                    let c = classify(test, verdict, &r.histogram);
                    TuneOutcome::Ran {
                        instances: r.instances,
                        weak: c.weak,
                        forbidden: c.forbidden.iter().map(|(_, n)| n).sum(),
                        kernel_s: r.kernel_time.as_secs_f64(),
                        wall_s: r.wall_time.as_secs_f64(),
                    }
                }
                Err(RunError::Geometry(e)) => TuneOutcome::Skipped {
                    reason: e.to_string(),
                },
                Err(e) => TuneOutcome::Failed {
                    error: e.to_string(),
                },
            };
            let failed = matches!(outcome, TuneOutcome::Failed { .. });
            runs.push(TuneRun {
                config: k,
                test: test.name.clone(),
                outcome,
            });
            // A launch refused for its resources leaves the context usable; a fault in a
            // kernel does not, and every later run would fail the same way.
            if failed {
                if let Err(e) = session.synchronize() {
                    context_lost = Some(format!("after set {k}, {}: {e}", test.name));
                    break 'sets;
                }
            }
        }
    }
    Tuning {
        seed,
        iterations,
        configs: configs.to_vec(),
        tests: tests.iter().map(|t| t.name.clone()).collect(),
        runs,
        stopped_by_budget,
        context_lost,
    }
}

/// A set's standing: tests that showed a weak outcome, and their summed weak outcomes per
/// kernel-second.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Standing {
    pub config: usize,
    pub tests_with_weak: usize,
    pub weak_per_s: f64,
    pub forbidden: u64,
}

/// The sets ranked best first: more tests with weak outcomes, then more weak outcomes per
/// kernel-second.
pub(crate) fn ranking(t: &Tuning) -> Vec<Standing> {
    let mut out: Vec<Standing> = (0..t.configs.len())
        .map(|k| Standing {
            config: k,
            tests_with_weak: 0,
            weak_per_s: 0.0,
            forbidden: 0,
        })
        .collect();
    for r in &t.runs {
        if let TuneOutcome::Ran {
            weak,
            forbidden,
            kernel_s,
            ..
        } = r.outcome
        {
            let s = &mut out[r.config];
            if weak > 0 {
                s.tests_with_weak += 1;
                s.weak_per_s += weak as f64 / kernel_s.max(1e-9);
            }
            s.forbidden += forbidden;
        }
    }
    out.sort_by(|a, b| {
        b.tests_with_weak
            .cmp(&a.tests_with_weak)
            .then(b.weak_per_s.total_cmp(&a.weak_per_s))
            .then(a.config.cmp(&b.config))
    });
    out
}

/// The report: forbidden outcomes first (a device failure), the five best sets with their
/// parameters, and each test's best set (or "no weak outcome under any set").
pub fn summary(t: &Tuning) -> String {
    let mut s = String::new();
    let ran = t
        .runs
        .iter()
        .filter(|r| matches!(r.outcome, TuneOutcome::Ran { .. }))
        .count();
    let _ = writeln!(
        s,
        "litmus tune: {} tests x {} parameter sets, {} launches each: {ran} runs{}",
        t.tests.len(),
        t.configs.len(),
        t.iterations,
        if t.stopped_by_budget {
            " (stopped by the time budget)"
        } else {
            ""
        }
    );
    for r in &t.runs {
        if let TuneOutcome::Ran { forbidden, .. } = r.outcome {
            if forbidden > 0 {
                let _ = writeln!(
                    s,
                    "FORBIDDEN: {} under set {}: {forbidden} instances with an outcome the model forbids",
                    r.test, r.config
                );
            }
        }
    }
    if let Some(why) = &t.context_lost {
        let _ = writeln!(s, "stopped: the GPU context no longer works {why}");
    }
    for r in &t.runs {
        if let TuneOutcome::Failed { error } = &r.outcome {
            let _ = writeln!(s, "failed: {} under set {}: {error}", r.test, r.config);
        }
    }
    let _ = writeln!(s, "best parameter sets (tests with weak outcomes, weak/s):");
    for st in ranking(t).iter().take(5) {
        let params = serde_json::to_string(&t.configs[st.config]).unwrap_or_default();
        let _ = writeln!(
            s,
            "  set {:>3}: {:>3} of {} tests, {:.3e} weak/s  {params}",
            st.config,
            st.tests_with_weak,
            t.tests.len(),
            st.weak_per_s
        );
    }
    let _ = writeln!(
        s,
        "per test, the set with the most weak outcomes per kernel-second:"
    );
    for name in &t.tests {
        let best = t
            .runs
            .iter()
            .filter(|r| &r.test == name)
            .filter_map(|r| match r.outcome {
                TuneOutcome::Ran {
                    weak,
                    instances,
                    kernel_s,
                    ..
                } if weak > 0 => {
                    Some((r.config, weak, instances, weak as f64 / kernel_s.max(1e-9)))
                }
                _ => None,
            })
            .max_by(|a, b| a.3.total_cmp(&b.3));
        let _ = match best {
            Some((k, weak, n, rate)) => writeln!(
                s,
                "  {name}: set {k}: {weak} of {n} instances weak ({:.3} %), {rate:.3e} weak/s",
                100.0 * weak as f64 / n.max(1) as f64
            ),
            None => writeln!(s, "  {name}: no weak outcome under any set"),
        };
    }
    s
}

/// The command: check the test names, open `device` (`--device`), tune, print the summary, and write the
/// runs as JSON when asked. Returns the summary and whether any forbidden outcome was seen.
pub(crate) fn run_command(
    device: &crate::backend::cuda::DeviceSelector,
    names: &[String],
    n_configs: usize,
    seed: u64,
    iterations: u64,
    budget: Duration,
    json: Option<&std::path::Path>,
) -> Result<(String, bool), TuneError> {
    if n_configs == 0 {
        return Err(TuneError::NoConfigs);
    }
    if n_configs > MAX_CONFIGS {
        return Err(TuneError::TooManyConfigs(n_configs));
    }
    let names = if names.is_empty() {
        default_tests()
    } else {
        names.to_vec()
    };
    let tests = names
        .iter()
        .map(|n| {
            let bare = n.strip_prefix("atomics.gpu.").unwrap_or(n);
            catalog::by_name(bare).ok_or_else(|| TuneError::UnknownTest(n.clone()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let session = Session::open_device(device).map_err(|e| TuneError::NoGpu(e.to_string()))?;
    let t = tune(
        &session,
        &tests,
        &configs(n_configs, seed),
        iterations,
        budget,
        seed,
    );
    if let Some(p) = json {
        let text = serde_json::to_string_pretty(&t).unwrap_or_default();
        std::fs::write(p, text).map_err(|source| TuneError::Write {
            path: p.display().to_string(),
            source,
        })?;
    }
    let forbidden = ranking(&t).iter().any(|s| s.forbidden > 0);
    Ok((summary(&t), forbidden))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::gpu::layout::Geometry;
    use crate::atomics::gpu::{kernel, layout};

    /// Random sets stay inside the bounds the runner needs: valid launch shapes, at most
    /// MAX_RANDOM_THREADS threads, and every catalogue test either placed or refused only
    /// because it has more roles than units.
    #[test]
    fn random_sets_are_valid_launches() {
        let sets = configs(200, 7);
        assert_eq!(sets[0], StressParams::default());
        let tests = catalog::catalog();
        for p in &sets[1..] {
            assert!(
                p.max_workgroups * p.workgroup_size <= layout::MAX_RANDOM_THREADS,
                "{p:?}"
            );
            for t in &tests {
                match Geometry::new(t, p) {
                    Ok(g) => assert!(g.instances() >= 64, "{}: {p:?}", t.name),
                    Err(e) => assert!(
                        matches!(e, layout::GeometryError::TooFewUnits { .. }),
                        "{}: {e}",
                        t.name
                    ),
                }
            }
        }
        // The draws cover the ranges (not one value repeated).
        let distinct =
            |f: fn(&StressParams) -> u32| sets.iter().map(f).collect::<BTreeSet<u32>>().len();
        assert!(distinct(|p| p.workgroup_size) >= 5);
        assert!(distinct(|p| p.stress_pattern.code()) == 4);
        assert!(distinct(|p| p.mem_stride) == 8);
    }

    /// The default tests are the suite's controls: MP's relaxed variants are among them, and
    /// each one is a test the model allows (it has a weak outcome to show).
    #[test]
    fn default_tests_are_allowed_controls() {
        let tests = default_tests();
        assert!(
            tests.contains(&"MP.relaxed.gpu.inter_cta".to_string()),
            "{tests:?}"
        );
        for n in &tests {
            let t = catalog::by_name(n).unwrap();
            assert!(model::check(&t).allowed, "{n}");
        }
    }

    /// Kernels under random sets assemble with NVIDIA's assembler for the device target.
    #[test]
    fn kernels_under_random_sets_assemble() {
        let tc = crate::backend::toolchain::Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
        let (mut assembled, mut too_few) = (0, 0);
        for (k, p) in configs(12, 3).iter().enumerate() {
            for name in [
                "MP.relaxed.cta.intra_cta",
                "IRIW.relaxed.gpu.inter_cta",
                "SB.sc.gpu.inter_cta",
            ] {
                let t = catalog::by_name(name)
                    .unwrap_or_else(|| panic!("{name}: not in the catalogue"));
                // Only a test with more threads than the set has units may be left out
                // (predicted independently of `Geometry`); any other refusal fails.
                if super::super::emulate::fits(&t, p).is_err() {
                    assert!(Geometry::new(&t, p).is_err(), "set {k}, {name}");
                    too_few += 1;
                    continue;
                }
                let g = Geometry::new(&t, p).unwrap_or_else(|e| panic!("set {k}, {name}: {e}"));
                let ptx = kernel::generate(&t, &g).unwrap();
                if let Err(e) = tc.ptxas(&ptx, kernel::TARGET, &[]) {
                    panic!("set {k} {p:?}, {name}: {e}");
                }
                assembled += 1;
            }
        }
        // Every input assembled or predicted not to fit, and at most a quarter of the 36
        // left out.
        assert_eq!(assembled + too_few, 36);
        assert!(too_few <= 9, "{too_few} of 36 inputs did not fit");
    }

    fn ran(weak: u64, kernel_s: f64) -> TuneOutcome {
        TuneOutcome::Ran {
            instances: 1000,
            weak,
            forbidden: 0,
            kernel_s,
            wall_s: 1.0,
        }
    }

    /// The ranking on runs whose answer is worked out by hand: set 2 shows weak outcomes in
    /// two tests (beats set 1's one test with a higher rate); set 0 in none.
    #[test]
    fn ranking_prefers_breadth_then_rate() {
        let t = Tuning {
            seed: 1,
            iterations: 10,
            configs: configs(3, 1),
            tests: vec!["A".into(), "B".into()],
            runs: vec![
                TuneRun {
                    config: 0,
                    test: "A".into(),
                    outcome: ran(0, 1.0),
                },
                TuneRun {
                    config: 0,
                    test: "B".into(),
                    outcome: TuneOutcome::Skipped {
                        reason: "roles".into(),
                    },
                },
                TuneRun {
                    config: 1,
                    test: "A".into(),
                    outcome: ran(500, 0.001),
                },
                TuneRun {
                    config: 1,
                    test: "B".into(),
                    outcome: ran(0, 0.001),
                },
                TuneRun {
                    config: 2,
                    test: "A".into(),
                    outcome: ran(2, 1.0),
                },
                TuneRun {
                    config: 2,
                    test: "B".into(),
                    outcome: ran(3, 1.0),
                },
            ],
            stopped_by_budget: false,
            context_lost: None,
        };
        let r = ranking(&t);
        assert_eq!(r.iter().map(|s| s.config).collect::<Vec<_>>(), [2, 1, 0]);
        assert_eq!((r[0].tests_with_weak, r[0].weak_per_s), (2, 5.0));
        assert_eq!((r[1].tests_with_weak, r[1].weak_per_s), (1, 500_000.0));
        let s = summary(&t);
        assert!(
            s.contains("  A: set 1: 500 of 1000 instances weak (50.000 %)"),
            "{s}"
        );
        assert!(s.contains("  B: set 2: 3 of 1000 instances weak"), "{s}");
        assert!(!s.contains("FORBIDDEN"), "{s}");
    }

    #[test]
    fn a_forbidden_outcome_is_reported_first() {
        let t = Tuning {
            seed: 1,
            iterations: 10,
            configs: configs(1, 1),
            tests: vec!["A".into()],
            runs: vec![TuneRun {
                config: 0,
                test: "A".into(),
                outcome: TuneOutcome::Ran {
                    instances: 10,
                    weak: 0,
                    forbidden: 2,
                    kernel_s: 1.0,
                    wall_s: 1.0,
                },
            }],
            stopped_by_budget: true,
            context_lost: Some("after set 0, A: CUDA_ERROR_ILLEGAL_ADDRESS".into()),
        };
        let s = summary(&t);
        assert_eq!(
            s.lines().nth(1),
            Some("FORBIDDEN: A under set 0: 2 instances with an outcome the model forbids")
        );
        assert!(s.contains("(stopped by the time budget)"), "{s}");
        assert!(
            s.contains("stopped: the GPU context no longer works after set 0, A: CUDA_ERROR_ILLEGAL_ADDRESS"),
            "{s}"
        );
        assert!(s.contains("  A: no weak outcome under any set"), "{s}");
        assert_eq!(ranking(&t)[0].forbidden, 2);
    }

    /// What `litmus tune` prints for a set is what a suite's `stress:` takes: the JSON of a
    /// random set reads back as the same set, and a partial mapping fills the rest from the
    /// default.
    #[test]
    fn printed_sets_read_back_as_suite_stress() {
        for p in configs(20, 5) {
            let json = serde_json::to_string(&p).unwrap();
            let back: StressParams = serde_saphyr::from_str(&json).unwrap();
            assert_eq!(back, p, "{json}");
        }
        let partial: StressParams = serde_saphyr::from_str("{stress_iterations: 512}").unwrap();
        assert_eq!(
            partial,
            StressParams {
                stress_iterations: 512,
                ..StressParams::default()
            }
        );
        assert!(serde_saphyr::from_str::<StressParams>("{stres_iterations: 1}").is_err());
    }
}
