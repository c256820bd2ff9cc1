//! `--rerun-failures N`: a failed case runs again, up to N times, each time in a fresh child
//! (so state the first attempt left in this process cannot decide the next); a case that
//! fails and then passes is `flaky`, never a pass.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use crate::capability::Capability;
use crate::outcome::{CaseStatus, Verdict};
use crate::suite::Case;

static RERUN_FAILURES: AtomicU32 = AtomicU32::new(0);

/// Set N for this run (the command line's `--rerun-failures`).
pub fn set_rerun_failures(n: u32) {
    RERUN_FAILURES.store(n, Ordering::Relaxed);
}

/// The last status and the failed attempts before it: `rerun` is called while the status is
/// a failure, at most N times.
pub fn with_reruns(
    first: CaseStatus,
    mut rerun: impl FnMut() -> CaseStatus,
) -> (CaseStatus, Vec<CaseStatus>) {
    let n = RERUN_FAILURES.load(Ordering::Relaxed);
    let mut status = first;
    let mut attempts = Vec::new();
    for _ in 0..n {
        if !status.is_failure() {
            break;
        }
        attempts.push(status);
        status = rerun();
    }
    (status, attempts)
}

/// A pass after failed attempts is flaky (also when a waiver lists the case: a waiver still
/// needed some of the time is not stale); every other verdict stands.
pub fn flaky_or(verdict: Verdict, attempts: &[CaseStatus]) -> Verdict {
    match verdict {
        Verdict::Pass | Verdict::StaleWaiver { .. } if !attempts.is_empty() => Verdict::Flaky,
        v => v,
    }
}

/// Run `case` in a fresh child of `exe`, one GPU case at a time.
pub fn fresh_child(case: &Case, env: &super::RunEnv, gpu: &Mutex<()>) -> CaseStatus {
    let _gpu = super::gpu_turn(case.requires.contains(&Capability::Gpu), gpu);
    super::child::run_isolated(&env.exe, &env.data, &case.file, &case.id, case.timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiver still needed some of the time is not stale: a pass after failed attempts is
    /// flaky whether or not a waiver lists the case.
    #[test]
    fn a_pass_after_failures_is_flaky_even_when_waived() {
        let failed = [CaseStatus::fail("1", "2")];
        let stale = Verdict::StaleWaiver { waiver: "W".into() };
        assert_eq!(flaky_or(stale.clone(), &failed), Verdict::Flaky);
        assert_eq!(flaky_or(stale.clone(), &[]), stale);
        assert_eq!(flaky_or(Verdict::Pass, &failed), Verdict::Flaky);
    }

    #[test]
    fn fail_then_pass_is_flaky_and_keeps_the_failure() {
        // One test touches the global N, so the cases run in sequence here.
        set_rerun_failures(2);
        let mut next = vec![CaseStatus::pass()].into_iter();
        let (s, a) = with_reruns(CaseStatus::fail("1", "2"), || next.next().unwrap());
        assert_eq!(s, CaseStatus::pass());
        assert_eq!(a, vec![CaseStatus::fail("1", "2")]);
        assert_eq!(flaky_or(Verdict::Pass, &a), Verdict::Flaky);
        // Always failing: N reruns, then the failure stands.
        let (s, a) = with_reruns(CaseStatus::fail("1", "2"), || CaseStatus::fail("1", "3"));
        assert_eq!(s, CaseStatus::fail("1", "3"));
        assert_eq!(a.len(), 2);
        assert_eq!(flaky_or(Verdict::Fail, &a), Verdict::Fail);
        // A pass is never rerun.
        let (_, a) = with_reruns(CaseStatus::pass(), || unreachable!());
        assert!(a.is_empty());
        set_rerun_failures(0);
        let (s, a) = with_reruns(CaseStatus::fail("1", "2"), || unreachable!());
        assert!(s.is_failure() && a.is_empty());
    }
}
