//! What a case can say, in two layers (as deqp-runner does): the raw [`CaseStatus`] a case
//! reports, and the [`Verdict`] after `--require` and the waiver list are applied.
//!
//! This is the one definition of a run's verdict: [`Verdict::judge`] is the only conversion
//! from a status, [`Verdict::category`] the only mapping to the summary's counts, and
//! [`Verdict::is_failure`] the only rule for the exit code. (An area's own findings, e.g. an
//! ABI oracle's agreement or a mapping case's match, become a [`CaseStatus`] in that area; they
//! are not run verdicts.)

use serde::Serialize;

use crate::capability::Capability;

pub use gpucts_results::{ControlRun, COMPILED_ONLY, CONTROL_WITHOUT_WEAK_OUTCOMES, OBSERVATION};

/// The raw result of running one case: the results.json schema's status
/// ([`gpucts_results::CaseStatus`]) naming the harness's [`Capability`] when it skips.
pub type CaseStatus = gpucts_results::CaseStatus<Capability>;

/// A device check compiled under `gpucts prebuild` skips for the GPU.
impl gpucts_results::DeviceCapability for Capability {
    fn device() -> Capability {
        Capability::Gpu
    }
}

/// The verdict after `--require` and waivers, which is what reports and the exit code use.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    Skip,
    /// A failure listed in the waiver file.
    Waived {
        waiver: String,
    },
    /// The case passed although a waiver lists it: the waiver should be removed.
    StaleWaiver {
        waiver: String,
    },
    /// A skip for a capability named in `--require`.
    RequiredMissing,
    /// Failed, then passed when run again (`--rerun-failures`): reported, not a pass.
    Flaky,
}

/// Which count of the closing summary a verdict adds to (`gpucts: P passed, F failed, S
/// skipped[, N flaky]`; `waived: W`). A stale waiver is a pass, also counted on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Category {
    Passed,
    Failed,
    Skipped,
    Waived,
    /// Failed, then passed on a rerun: counted on its own (`, N flaky`), neither a pass nor a
    /// failure.
    Flaky,
}

impl Verdict {
    /// The verdict for a status. `required` says whether `--require` names the capability a
    /// skip lacks (a required skip fails); `waiver` is the id of the waiver listing the case on
    /// this platform, if any (a failure listed is waived; a pass listed makes it stale).
    pub fn judge(status: &CaseStatus, required: bool, waiver: Option<&str>) -> Verdict {
        match status {
            CaseStatus::Skip { .. } if required => Verdict::RequiredMissing,
            CaseStatus::Skip { .. } => Verdict::Skip,
            CaseStatus::Pass { .. } => match waiver {
                Some(w) => Verdict::StaleWaiver { waiver: w.into() },
                None => Verdict::Pass,
            },
            CaseStatus::Fail { .. } => match waiver {
                Some(w) => Verdict::Waived { waiver: w.into() },
                None => Verdict::Fail,
            },
            // A waiver excuses a divergence it names, never a harness error, a crash or a
            // timeout: those say nothing about the producer and may hide any finding.
            CaseStatus::Error { .. } | CaseStatus::Crash { .. } | CaseStatus::Timeout { .. } => {
                Verdict::Fail
            }
        }
    }

    /// The summary count this verdict adds to.
    pub(crate) fn category(&self) -> Category {
        match self {
            Verdict::Pass | Verdict::StaleWaiver { .. } => Category::Passed,
            Verdict::Fail | Verdict::RequiredMissing => Category::Failed,
            Verdict::Skip => Category::Skipped,
            Verdict::Waived { .. } => Category::Waived,
            Verdict::Flaky => Category::Flaky,
        }
    }

    /// Whether this verdict makes the run exit 101.
    pub(crate) fn is_failure(&self) -> bool {
        match self {
            Verdict::Fail | Verdict::RequiredMissing => true,
            Verdict::Pass
            | Verdict::Skip
            | Verdict::Waived { .. }
            | Verdict::StaleWaiver { .. }
            | Verdict::Flaky => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_status() -> Vec<CaseStatus> {
        vec![
            CaseStatus::pass(),
            CaseStatus::pass_with("note"),
            CaseStatus::fail("4", "8"),
            CaseStatus::skip(Capability::Gpu, "no GPU"),
            CaseStatus::error("tool broke"),
            CaseStatus::Crash {
                how: "killed by SIGSEGV".into(),
                output: String::new(),
            },
            CaseStatus::Timeout {
                after_s: 1.0,
                output: String::new(),
            },
        ]
    }

    /// The whole table, from the rules in reports/README.md: a skip fails only when required;
    /// a waiver turns a failure into `waived` and a pass into a stale waiver; a waiver never
    /// touches a skip.
    #[test]
    fn judge_covers_every_status() {
        for s in every_status() {
            for required in [false, true] {
                for waiver in [None, Some("W-1")] {
                    let v = Verdict::judge(&s, required, waiver);
                    let want = match (&s, required, waiver) {
                        (CaseStatus::Skip { .. }, true, _) => Verdict::RequiredMissing,
                        (CaseStatus::Skip { .. }, false, _) => Verdict::Skip,
                        (CaseStatus::Pass { .. }, _, None) => Verdict::Pass,
                        (CaseStatus::Pass { .. }, _, Some(w)) => Verdict::StaleWaiver {
                            waiver: w.to_string(),
                        },
                        (_, _, None) => Verdict::Fail,
                        (CaseStatus::Fail { .. }, _, Some(w)) => Verdict::Waived {
                            waiver: w.to_string(),
                        },
                        (_, _, Some(_)) => Verdict::Fail,
                    };
                    assert_eq!(v, want, "{s:?} required={required} waiver={waiver:?}");
                    // A raw failure is a run failure exactly when no waiver covers it, and
                    // only a fail can be covered.
                    if s.is_failure() {
                        let covered = waiver.is_some() && matches!(s, CaseStatus::Fail { .. });
                        assert_eq!(v.is_failure(), !covered, "{s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn categories_and_exit_code_agree() {
        let all = [
            (Verdict::Pass, Category::Passed, false),
            (Verdict::Fail, Category::Failed, true),
            (Verdict::Skip, Category::Skipped, false),
            (
                Verdict::Waived { waiver: "W".into() },
                Category::Waived,
                false,
            ),
            (
                Verdict::StaleWaiver { waiver: "W".into() },
                Category::Passed,
                false,
            ),
            (Verdict::RequiredMissing, Category::Failed, true),
            (Verdict::Flaky, Category::Flaky, false),
        ];
        for (v, c, fails) in all {
            assert_eq!(v.category(), c, "{v:?}");
            assert_eq!(v.is_failure(), fails, "{v:?}");
            assert_eq!(c == Category::Failed, fails, "{v:?}");
        }
    }

    #[test]
    fn verdicts_serialize_as_results_json_names_them() {
        let v = serde_json::to_value(Verdict::Waived {
            waiver: "W-1".into(),
        })
        .unwrap();
        assert_eq!(v, serde_json::json!({"verdict": "waived", "waiver": "W-1"}));
        let v = serde_json::to_value(Verdict::RequiredMissing).unwrap();
        assert_eq!(v, serde_json::json!({"verdict": "required_missing"}));
    }

    fn control(weak: u64) -> ControlRun {
        ControlRun {
            test: "MP.relaxed.cta.intra_cta".into(),
            instances: 819_200,
            weak,
        }
    }

    /// The rule: a control with no weak outcome tags the pass; one with any does not.
    #[test]
    fn a_control_without_weak_outcomes_tags_the_pass() {
        let s = CaseStatus::pass_beside_control("figures", control(0));
        assert_eq!(s.tags(), ["control-without-weak-outcomes"]);
        assert!(!s.is_failure());
        for weak in [1, 819_200] {
            let s = CaseStatus::pass_beside_control("figures", control(weak));
            assert!(s.tags().is_empty(), "{weak}: {s:?}");
        }
        assert!(CaseStatus::pass().tags().is_empty());
        assert!(CaseStatus::fail("a", "b").tags().is_empty());
    }

    #[test]
    fn require_weak_controls_fails_a_tagged_pass_naming_the_control() {
        let s =
            CaseStatus::pass_beside_control("figures", control(0)).with_weak_controls_required();
        match &s {
            CaseStatus::Fail {
                expected,
                observed,
                detail,
                ..
            } => {
                assert!(expected.contains("--require-weak-controls"), "{expected}");
                assert_eq!(
                    observed,
                    "control MP.relaxed.cta.intra_cta showed no weak outcome in 819200 instances"
                );
                assert_eq!(detail, "figures");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            Verdict::judge(&s, false, None),
            Verdict::Fail,
            "a failure of the run"
        );
        // Untagged statuses stand.
        for s in [
            CaseStatus::pass_beside_control("figures", control(3)),
            CaseStatus::pass_with("allowed test, no control"),
            CaseStatus::skip(Capability::Gpu, "no GPU"),
            CaseStatus::fail("4", "8"),
        ] {
            assert_eq!(s.clone().with_weak_controls_required(), s);
        }
    }

    /// results.json written before tags still loads, and a tag survives a round trip (the
    /// child's result document, results.json, merge).
    #[test]
    fn tags_serialize_beside_the_pass_and_old_passes_still_load() {
        let old: CaseStatus =
            serde_json::from_value(serde_json::json!({"status": "pass", "note": "n"})).unwrap();
        assert_eq!(old, CaseStatus::pass_with("n"));
        let s = CaseStatus::pass_beside_control("n", control(0));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v["tags"],
            serde_json::json!(["control-without-weak-outcomes"])
        );
        assert_eq!(v["control"]["instances"], 819_200);
        assert_eq!(serde_json::from_value::<CaseStatus>(v).unwrap(), s);
        // A plain pass writes neither field.
        let v = serde_json::to_value(CaseStatus::pass()).unwrap();
        assert_eq!(v, serde_json::json!({"status": "pass"}));
    }
}
