//! The `selftest` area: cases whose behaviour is known in advance, so the runner, isolation,
//! verdicts and reports can be tested end to end without hardware. Not a spec area; its suites
//! live in `harness/tests/fixtures/`, not `suites/`.

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SelftestCheck {
    /// Compares two integers: passes when equal.
    Equal { left: i64, right: i64 },
    /// Needs a capability (listed in `requires`), then passes.
    Needs { capability: Capability },
    /// Isolated: the child kills itself with a signal (SIGSEGV, SIGABRT, ...).
    Crash { signal: i32 },
    /// Isolated: the child sleeps past any sane timeout.
    Hang { seconds: u64 },
    /// Isolated: prints then passes, proving results cross the process boundary.
    ChildEqual { left: i64, right: i64 },
    /// The check panics; the runner must report an error and go on.
    Panic,
    /// Fails the first time (creating `$GPUCTS_SELFTEST_STATE/<marker>`), passes after: a
    /// flaky case for `--rerun-failures`.
    FailFirst { marker: String },
    /// Records figures (for the reports): a scalar over `samples`, a curve of `points`
    /// (x, samples...), a histogram of `bins` (label, count; labels starting `weak` weak).
    Figures {
        samples: Vec<f64>,
        #[serde(default)]
        points: Vec<Vec<f64>>,
        #[serde(default)]
        bins: Vec<(String, u64)>,
        /// Record them in an isolated child (they must reach the parent's results).
        #[serde(default)]
        isolate: bool,
    },
    /// A batch shared by `members` (case ids): computed once per `key` through
    /// `area::BatchCache`, taking `member_ms` per selected member (as a producer's batch
    /// compile takes time per case); passes with the number of members computed.
    Batch {
        key: String,
        members: Vec<String>,
        member_ms: u64,
    },
    /// Takes `ms` milliseconds in-process, then passes: a run long enough to be stopped
    /// halfway (the `--resume` tests).
    Sleep { ms: u64 },
    /// Uses "the GPU" without needing one: runs once per device under `--devices` (a fake
    /// multi-device machine) and passes naming the device its context was given
    /// (`device N`); with `isolate`, in a child (the device must reach it).
    Device {
        #[serde(default)]
        isolate: bool,
    },
    /// Fails with this text as expected and observed (reports must carry any text).
    FailWith { expected: String, observed: String },
    /// Isolated, needs clang-19: compiles `int gpucts_selftest(int x) { return x + <add>; }`
    /// to PTX in the child and passes when the function is there (a rig replaying a prebuilt
    /// store gives the child the store).
    ChildClang { add: i64 },
    /// Judges outcome counts given for catalogue litmus test `test` (and its control's) as a
    /// GPU case judges what it saw (`atomics::gpu::judge_seen`): verdicts and tags end to end
    /// without a GPU; each outcome lists the values of the model's terms.
    LitmusSeen {
        test: String,
        seen: Vec<(Vec<i64>, u64)>,
        #[serde(default)]
        control_seen: Option<Vec<(Vec<i64>, u64)>>,
        /// Judge in an isolated child (the tags must reach the parent).
        #[serde(default)]
        isolate: bool,
    },
}

impl Check for SelftestCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            SelftestCheck::Needs { capability } => vec![*capability],
            SelftestCheck::ChildClang { .. } => vec![Capability::Clang],
            _ => Vec::new(),
        }
    }

    fn isolate(&self) -> bool {
        matches!(
            self,
            SelftestCheck::Crash { .. }
                | SelftestCheck::Hang { .. }
                | SelftestCheck::ChildEqual { .. }
                | SelftestCheck::ChildClang { .. }
                | SelftestCheck::Figures { isolate: true, .. }
                | SelftestCheck::LitmusSeen { isolate: true, .. }
                | SelftestCheck::Device { isolate: true }
        )
    }

    fn per_device(&self) -> bool {
        matches!(self, SelftestCheck::Device { .. })
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            SelftestCheck::ChildClang { add } => {
                let src = format!("int gpucts_selftest(int x) {{ return x + {add}; }}\n");
                match ctx.toolchain.clang_ptx(
                    &src,
                    crate::backend::toolchain::ClangLang::C,
                    &["-O2"],
                ) {
                    Ok(ptx) if ptx.contains("gpucts_selftest(") => CaseStatus::pass(),
                    Ok(ptx) => CaseStatus::fail("PTX defining gpucts_selftest", ptx),
                    Err(e) => CaseStatus::error(e),
                }
            }
            SelftestCheck::FailFirst { marker } => {
                let Some(dir) = &ctx.config.selftest_state else {
                    return CaseStatus::error("GPUCTS_SELFTEST_STATE is not set");
                };
                let path = dir.join(marker);
                if path.exists() {
                    return CaseStatus::pass();
                }
                match std::fs::write(&path, b"failed once\n") {
                    Ok(()) => CaseStatus::fail("a second attempt", "the first attempt"),
                    Err(e) => CaseStatus::error(format!("{}: {e}", path.display())),
                }
            }
            SelftestCheck::Figures {
                samples,
                points,
                bins,
                ..
            } => {
                use crate::figures::{Better, Bin, Figure, Point, Spread};
                let Some(value) = Spread::of(samples) else {
                    return CaseStatus::error("no samples");
                };
                ctx.record(Figure::Scalar {
                    name: "rate".into(),
                    unit: "items/s".into(),
                    better: Some(Better::Higher),
                    value,
                });
                if !points.is_empty() {
                    let pts = points
                        .iter()
                        .filter_map(|p| {
                            let (x, ys) = p.split_first()?;
                            Some(Point {
                                x: *x,
                                y: Spread::of(ys)?,
                            })
                        })
                        .collect();
                    ctx.record(Figure::Series {
                        name: "bandwidth".into(),
                        x_unit: "bytes".into(),
                        unit: "GB/s".into(),
                        better: Some(Better::Higher),
                        points: pts,
                    });
                }
                if !bins.is_empty() {
                    let bins = bins
                        .iter()
                        .map(|(label, count)| Bin {
                            label: label.clone(),
                            count: *count,
                            weak: label.starts_with("weak"),
                        })
                        .collect();
                    ctx.record(Figure::Histogram {
                        name: "outcomes".into(),
                        bins,
                    });
                }
                CaseStatus::pass()
            }
            SelftestCheck::Batch {
                key,
                members,
                member_ms,
            } => {
                static CACHE: std::sync::OnceLock<crate::area::BatchCache<String, usize>> =
                    std::sync::OnceLock::new();
                let slot = CACHE
                    .get_or_init(crate::area::BatchCache::new)
                    .get_or_compute(ctx, key, || {
                        let n = members.iter().filter(|m| ctx.batch_member(m)).count();
                        std::thread::sleep(std::time::Duration::from_millis(
                            member_ms.saturating_mul(n as u64),
                        ));
                        n
                    });
                match slot.get() {
                    Some(n) => {
                        CaseStatus::pass_with(format!("batch {key}: {n} member(s) computed"))
                    }
                    None => CaseStatus::error("the batch was not computed"),
                }
            }
            SelftestCheck::FailWith { expected, observed } => {
                CaseStatus::fail(expected.clone(), observed.clone())
            }
            SelftestCheck::Device { .. } => {
                CaseStatus::pass_with(format!("device {}", ctx.config.device))
            }
            SelftestCheck::LitmusSeen {
                test,
                seen,
                control_seen,
                ..
            } => crate::atomics::gpu::judge_seen(test, seen, control_seen.as_deref()),
            _ => self.run_fixed(),
        }
    }
}

impl SelftestCheck {
    fn run_fixed(&self) -> CaseStatus {
        match *self {
            SelftestCheck::Equal { left, right } | SelftestCheck::ChildEqual { left, right } => {
                println!("selftest: comparing {left} with {right}");
                if left == right {
                    CaseStatus::pass()
                } else {
                    CaseStatus::fail(left.to_string(), right.to_string())
                }
            }
            SelftestCheck::Needs { .. } => CaseStatus::pass(),
            SelftestCheck::Crash { signal } => {
                eprintln!("selftest: about to raise signal {signal}");
                // Rust's runtime handles SIGSEGV/SIGBUS to report stack overflows and returns
                // for a raised (not faulting) signal; restore the default action first.
                // SAFETY: deliberately ending this (child) process.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::raise(signal);
                }
                CaseStatus::error("the signal did not end the process")
            }
            SelftestCheck::Hang { seconds } => {
                std::thread::sleep(std::time::Duration::from_secs(seconds));
                CaseStatus::error("woke up from a hang")
            }
            SelftestCheck::Panic => panic!("selftest panic"),
            SelftestCheck::Sleep { ms } => {
                std::thread::sleep(std::time::Duration::from_millis(ms.min(60_000)));
                CaseStatus::pass()
            }
            SelftestCheck::FailFirst { .. }
            | SelftestCheck::Figures { .. }
            | SelftestCheck::Batch { .. }
            | SelftestCheck::FailWith { .. }
            | SelftestCheck::Device { .. }
            | SelftestCheck::ChildClang { .. }
            | SelftestCheck::LitmusSeen { .. } => CaseStatus::error("not a fixed check"),
        }
    }
}
