//! `--rerun-failures N`: a failed case runs again, up to N times, each time in a fresh child
//! (so state the first attempt left in this process cannot decide the next); a case that
//! fails and then passes is `flaky`, never a pass.

use std::time::Duration;

use super::Executed;
use crate::outcome::{CaseStatus, Verdict};
use crate::suite::Case;

/// The last execution and the failed statuses before it: `rerun` is called while the status
/// is a failure, at most `n` times (`--rerun-failures`), with the number of the attempt it
/// makes (2 for the first rerun) and the failed status before it.
pub(crate) fn with_reruns(
    first: Executed,
    n: u32,
    mut rerun: impl FnMut(u32, &CaseStatus) -> Executed,
) -> (Executed, Vec<CaseStatus>) {
    let mut last = first;
    let mut attempts = Vec::new();
    for _ in 0..n {
        if !last.status.is_failure() {
            break;
        }
        attempts.push(last.status);
        let failed = attempts.last().expect("just pushed");
        last = rerun(attempts.len() as u32 + 1, failed);
    }
    (last, attempts)
}

/// A pass after failed attempts is flaky (also when a waiver lists the case: a waiver still
/// needed some of the time is not stale); every other verdict stands.
pub(crate) fn flaky_or(verdict: Verdict, attempts: &[CaseStatus]) -> Verdict {
    match verdict {
        Verdict::Pass | Verdict::StaleWaiver { .. } if !attempts.is_empty() => Verdict::Flaky,
        v => v,
    }
}

/// Run `case` in a fresh child, holding the resources it declares; also how long it waited
/// for them.
pub(crate) fn fresh_child(case: &Case, env: &super::RunEnv) -> (Executed, Duration) {
    let (_held, waited) = env.resources.hold_sharing(
        &super::resources_of(case),
        &super::shared_resources_of(case),
    );
    (super::child::run_isolated(env, case), waited)
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
        let fail = |o: &str| Executed::from(CaseStatus::fail("1", o));
        let mut next = vec![Executed::from(CaseStatus::pass())].into_iter();
        let (s, a) = with_reruns(fail("2"), 2, |attempt, failed| {
            assert_eq!((attempt, failed), (2, &CaseStatus::fail("1", "2")));
            next.next().unwrap()
        });
        assert_eq!(s.status, CaseStatus::pass());
        assert_eq!(a, vec![CaseStatus::fail("1", "2")]);
        assert_eq!(flaky_or(Verdict::Pass, &a), Verdict::Flaky);
        // Always failing: N reruns, then the failure stands; each rerun is told its number.
        let mut told = Vec::new();
        let (s, a) = with_reruns(fail("2"), 2, |attempt, _| {
            told.push(attempt);
            fail("3")
        });
        assert_eq!(told, [2, 3]);
        assert_eq!(s.status, CaseStatus::fail("1", "3"));
        assert_eq!(a.len(), 2);
        assert_eq!(flaky_or(Verdict::Fail, &a), Verdict::Fail);
        // A pass is never rerun.
        let (_, a) = with_reruns(CaseStatus::pass().into(), 2, |_, _| unreachable!());
        assert!(a.is_empty());
        // N = 0: no rerun.
        let (s, a) = with_reruns(fail("2"), 0, |_, _| unreachable!());
        assert!(s.status.is_failure() && a.is_empty());
    }
}
