//! Running cases: capability gating, in-process or isolated execution, and the verdict against
//! `--require` and waivers. Results are collected for the reporters; the console is
//! libtest-mimic's.

pub mod child;
pub mod rerun;

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use libtest_mimic::{Completion, Failed, Trial};
use serde::Serialize;

use crate::area::CaseContext;
use crate::backend::toolchain::{tempfile_dir, Toolchain};
use crate::capability::{Capabilities, Capability, Requirement};
use crate::outcome::{CaseStatus, Verdict};
use crate::suite::Case;
use crate::waivers::{Waiver, Waivers};

/// One case's result, as reporters see it.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub area: String,
    pub clause: String,
    pub origin: String,
    pub status: CaseStatus,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub duration_s: f64,
    /// Failed attempts before the last (`--rerun-failures`), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<CaseStatus>,
}

/// What every case of a run shares.
pub struct RunEnv {
    pub caps: Capabilities,
    pub toolchain: Toolchain,
    pub root: PathBuf,
    /// The gpucts executable, for isolated children.
    pub exe: PathBuf,
    pub requires: Vec<Requirement>,
    pub waivers: Waivers,
    pub fingerprint: BTreeMap<String, String>,
    pub results: Mutex<Vec<CaseResult>>,
}

/// The verdict for a status: `--require` first (a skip for a required capability fails), then
/// waivers (a failure listed is waived; a pass listed makes the waiver stale).
pub fn judge(status: &CaseStatus, requires: &[Requirement], waiver: Option<&Waiver>) -> Verdict {
    match status {
        CaseStatus::Skip { capability, .. } => {
            if requires.iter().any(|r| r.covers(*capability)) {
                Verdict::RequiredMissing
            } else {
                Verdict::Skip
            }
        }
        CaseStatus::Pass { .. } => match waiver {
            Some(w) => Verdict::StaleWaiver {
                waiver: w.id.clone(),
            },
            None => Verdict::Pass,
        },
        CaseStatus::Fail { .. }
        | CaseStatus::Error { .. }
        | CaseStatus::Crash { .. }
        | CaseStatus::Timeout { .. } => match waiver {
            Some(w) => Verdict::Waived {
                waiver: w.id.clone(),
            },
            None => Verdict::Fail,
        },
    }
}

/// Run a case's check in this process; a panic is an `Error`, never a crash of the run.
/// `scratch` is the case's directory when the caller owns it (an isolated child's parent, which
/// removes it even when the child is killed); otherwise one is made and removed here.
pub fn run_in_process(
    case: &Case,
    caps: &Capabilities,
    toolchain: &Toolchain,
    root: &std::path::Path,
    scratch: Option<&std::path::Path>,
) -> CaseStatus {
    let owned = match scratch {
        Some(_) => None,
        None => match tempfile_dir() {
            Ok(d) => Some(d),
            Err(e) => return CaseStatus::error(format!("cannot create a scratch directory: {e}")),
        },
    };
    let scratch = scratch
        .map(|p| p.to_path_buf())
        .or_else(|| owned.as_ref().map(|d| d.path().to_path_buf()));
    let ctx = CaseContext {
        id: &case.id,
        caps,
        toolchain,
        scratch: scratch.unwrap_or_default(),
        root,
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| case.check.run(&ctx))) {
        Ok(s) => s,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            CaseStatus::error(format!("the check panicked: {msg}"))
        }
    }
}

/// Cases that use the GPU run one at a time: concurrent kernels from other cases would change
/// what a litmus test observes and the rates it reports, and a crash would take others along.
static GPU_EXCLUSIVE: Mutex<()> = Mutex::new(());

fn execute(case: &Case, env: &RunEnv) -> CaseStatus {
    if let Some((capability, reason)) = env.caps.first_missing(&case.requires) {
        return CaseStatus::Skip { capability, reason };
    }
    let _gpu = case
        .requires
        .contains(&Capability::Gpu)
        .then(|| GPU_EXCLUSIVE.lock().unwrap_or_else(|e| e.into_inner()));
    if case.isolate {
        child::run_isolated(&env.exe, &case.file, &case.id, case.timeout)
    } else {
        run_in_process(case, &env.caps, &env.toolchain, &env.root, None)
    }
}

/// libtest-mimic trials for the cases; each records its [`CaseResult`] in `env.results`.
pub fn trials(cases: Vec<Case>, env: Arc<RunEnv>) -> Vec<Trial> {
    cases
        .into_iter()
        .map(|case| {
            let env = Arc::clone(&env);
            let name = case.id.clone();
            Trial::ignorable_test(name, move || {
                let t0 = Instant::now();
                let (status, attempts) = rerun::with_reruns(execute(&case, &env), || {
                    rerun::fresh_child(&case, &env.exe, &GPU_EXCLUSIVE)
                });
                let waiver = env.waivers.find(&case.id, &env.fingerprint);
                let verdict = rerun::flaky_or(judge(&status, &env.requires, waiver), &attempts);
                crate::report::progress::tick();
                let outcome = console_outcome(&status, &verdict, waiver);
                env.results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(CaseResult {
                        id: case.id.clone(),
                        area: case.area.clone(),
                        clause: case.clause.clone(),
                        origin: case.origin.clone(),
                        status,
                        verdict,
                        duration_s: t0.elapsed().as_secs_f64(),
                        attempts,
                    });
                outcome
            })
        })
        .collect()
}

fn console_outcome(
    status: &CaseStatus,
    verdict: &Verdict,
    waiver: Option<&Waiver>,
) -> Result<Completion, Failed> {
    match verdict {
        Verdict::Pass | Verdict::StaleWaiver { .. } | Verdict::Flaky => Ok(Completion::Completed),
        Verdict::Skip => Ok(Completion::ignored_with(status.summary())),
        Verdict::Waived { waiver: id } => Ok(Completion::ignored_with(format!(
            "waived ({id}): {}",
            waiver.map(|w| w.reason.as_str()).unwrap_or("")
        ))),
        Verdict::RequiredMissing => Err(Failed::from(format!(
            "required capability missing: {}",
            status.summary()
        ))),
        Verdict::Fail => Err(Failed::from(status.summary())),
    }
}

/// Counts for the closing summary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub waived: usize,
    pub stale_waivers: usize,
    pub flaky: usize,
}

impl Tally {
    pub fn of(results: &[CaseResult]) -> Tally {
        let mut t = Tally::default();
        for r in results {
            match r.verdict {
                Verdict::Pass => t.passed += 1,
                Verdict::Fail | Verdict::RequiredMissing => t.failed += 1,
                Verdict::Skip => t.skipped += 1,
                Verdict::Waived { .. } => t.waived += 1,
                Verdict::Flaky => t.flaky += 1,
                Verdict::StaleWaiver { .. } => {
                    t.passed += 1;
                    t.stale_waivers += 1
                }
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiver() -> Waiver {
        Waiver {
            id: "W-1".into(),
            cases: "*".into(),
            reason: "known".into(),
            platform: Default::default(),
        }
    }

    #[test]
    fn require_turns_skip_into_failure() {
        let skip = CaseStatus::skip(Capability::Gpu, "no GPU");
        assert_eq!(judge(&skip, &[], None), Verdict::Skip);
        let req = vec![Requirement::parse("gpu").unwrap()];
        assert_eq!(judge(&skip, &req, None), Verdict::RequiredMissing);
        assert!(judge(&skip, &req, None).is_failure());
        let tc = vec![Requirement::parse("toolchain").unwrap()];
        assert_eq!(
            judge(&skip, &tc, None),
            Verdict::Skip,
            "toolchain does not cover gpu"
        );
        let ptxas_skip = CaseStatus::skip(Capability::Ptxas, "ptxas not found");
        assert_eq!(judge(&ptxas_skip, &tc, None), Verdict::RequiredMissing);
    }

    #[test]
    fn waivers_waive_failures_and_go_stale_on_pass() {
        let w = waiver();
        let fail = CaseStatus::fail("4", "8");
        assert_eq!(
            judge(&fail, &[], Some(&w)),
            Verdict::Waived {
                waiver: "W-1".into()
            }
        );
        assert_eq!(
            judge(&CaseStatus::pass(), &[], Some(&w)),
            Verdict::StaleWaiver {
                waiver: "W-1".into()
            }
        );
        let crash = CaseStatus::Crash {
            how: "killed by SIGSEGV".into(),
            output: String::new(),
        };
        assert_eq!(judge(&crash, &[], None), Verdict::Fail);
        assert!(!judge(&fail, &[], Some(&w)).is_failure());
    }
}
