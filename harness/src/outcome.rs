//! What a case can say, in two layers (as deqp-runner does): the raw [`CaseStatus`] a case
//! reports, and the [`Verdict`] after `--require` and the waiver list are applied.
//!
//! This is the one definition of a run's verdict: [`Verdict::judge`] is the only conversion
//! from a status, [`Verdict::category`] the only mapping to the summary's counts, and
//! [`Verdict::is_failure`] the only rule for the exit code. (An area's own findings, e.g. an
//! ABI oracle's agreement or a mapping case's match, become a [`CaseStatus`] in that area; they
//! are not run verdicts.)

use serde::{Deserialize, Serialize};

use crate::capability::Capability;

/// The tag of a forbidden litmus test's pass whose relaxed control never showed its weak
/// outcome: the stress could not have caught a violation, so the pass says little.
pub const CONTROL_WITHOUT_WEAK_OUTCOMES: &str = "control-without-weak-outcomes";

/// A forbidden litmus test's relaxed control as it ran beside the test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlRun {
    /// The control's litmus test name.
    pub test: String,
    pub instances: u64,
    /// Instances that showed the control's weak outcome.
    pub weak: u64,
}

/// The raw result of running one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CaseStatus {
    /// The property held. `note` carries figures or warnings worth showing (e.g. a litmus
    /// histogram, or "control never showed the weak outcome").
    Pass {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// Qualifications of the pass that reports show beside it and a run flag may act on
        /// ([`CONTROL_WITHOUT_WEAK_OUTCOMES`]); absent in results written before tags.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tags: Vec<String>,
        /// The relaxed control that ran beside a forbidden litmus test, and what it showed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        control: Option<ControlRun>,
    },
    /// The property did not hold: what the spec (or oracle) expects against what was seen.
    Fail {
        expected: String,
        observed: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
        /// What the check found, one finding an entry, when the check lists them itself (the
        /// detail then also holds context, e.g. the signature a mismatch is about); otherwise
        /// the lines of `observed` and `detail` are the findings.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        findings: Vec<String>,
    },
    /// The case cannot run here: a named missing capability, and the way to provide it.
    Skip {
        capability: Capability,
        reason: String,
    },
    /// The harness or environment broke (a tool crashed, a file was unreadable); says nothing
    /// about conformance, but is never a pass.
    Error { message: String },
    /// An isolated child died by a signal or exited without reporting.
    Crash {
        how: String,
        #[serde(default)]
        output: String,
    },
    /// An isolated child ran past its timeout and was killed.
    Timeout {
        after_s: f64,
        #[serde(default)]
        output: String,
    },
}

/// The reason of [`CaseStatus::compiled_only`].
pub const COMPILED_ONLY: &str = "compiled only (gpucts prebuild): the device part runs on the rig";

impl CaseStatus {
    pub fn pass() -> Self {
        CaseStatus::Pass {
            note: None,
            tags: Vec::new(),
            control: None,
        }
    }
    pub fn pass_with(note: impl Into<String>) -> Self {
        CaseStatus::Pass {
            note: Some(note.into()),
            tags: Vec::new(),
            control: None,
        }
    }
    /// A forbidden litmus test's pass beside its control: tagged
    /// [`CONTROL_WITHOUT_WEAK_OUTCOMES`] when the control never showed its weak outcome.
    pub fn pass_beside_control(note: impl Into<String>, control: ControlRun) -> Self {
        let tags = if control.weak == 0 {
            vec![CONTROL_WITHOUT_WEAK_OUTCOMES.to_string()]
        } else {
            Vec::new()
        };
        CaseStatus::Pass {
            note: Some(note.into()),
            tags,
            control: Some(control),
        }
    }

    /// The tags of a pass (none for any other status).
    pub fn tags(&self) -> &[String] {
        match self {
            CaseStatus::Pass { tags, .. } => tags,
            _ => &[],
        }
    }

    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags().iter().any(|t| t == tag)
    }

    /// `--require-weak-controls`: a pass tagged [`CONTROL_WITHOUT_WEAK_OUTCOMES`] fails,
    /// naming the control and its instances; every other status stands.
    pub fn with_weak_controls_required(self) -> CaseStatus {
        if !self.has_tag(CONTROL_WITHOUT_WEAK_OUTCOMES) {
            return self;
        }
        let CaseStatus::Pass { note, control, .. } = self else {
            return self;
        };
        let observed = match &control {
            Some(c) => format!(
                "control {} showed no weak outcome in {} instances",
                c.test, c.instances
            ),
            // Results without the control's record (another writer): the tag says it all.
            None => "the control showed no weak outcome".to_string(),
        };
        CaseStatus::fail_detail(
            "a relaxed control that shows its weak outcome (--require-weak-controls)",
            observed,
            note.unwrap_or_default(),
        )
    }
    pub fn fail(expected: impl Into<String>, observed: impl Into<String>) -> Self {
        CaseStatus::Fail {
            expected: expected.into(),
            observed: observed.into(),
            detail: String::new(),
            findings: Vec::new(),
        }
    }
    pub fn fail_detail(
        expected: impl Into<String>,
        observed: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        CaseStatus::Fail {
            expected: expected.into(),
            observed: observed.into(),
            detail: detail.into(),
            findings: Vec::new(),
        }
    }
    /// A failure whose findings the check lists itself: `context` (what they are about) and
    /// then the findings make up the detail; only the findings are for waivers to excuse.
    pub fn fail_findings(
        expected: impl Into<String>,
        observed: impl Into<String>,
        context: &str,
        findings: Vec<String>,
    ) -> Self {
        let mut detail = context.trim_end().to_string();
        for f in &findings {
            detail.push('\n');
            detail.push_str(f);
        }
        CaseStatus::Fail {
            expected: expected.into(),
            observed: observed.into(),
            detail,
            findings,
        }
    }
    pub fn skip(capability: Capability, reason: impl Into<String>) -> Self {
        CaseStatus::Skip {
            capability,
            reason: reason.into(),
        }
    }
    /// What a device check returns under `gpucts prebuild` once its compilations ran: a skip
    /// for the device ([`crate::area::CaseContext::compile_only`]).
    pub fn compiled_only() -> Self {
        CaseStatus::skip(Capability::Gpu, COMPILED_ONLY)
    }
    /// Whether this is [`CaseStatus::compiled_only`].
    pub fn is_compiled_only(&self) -> bool {
        matches!(self, CaseStatus::Skip { capability: Capability::Gpu, reason } if reason == COMPILED_ONLY)
    }
    pub fn error(message: impl std::fmt::Display) -> Self {
        CaseStatus::Error {
            message: message.to_string(),
        }
    }

    /// A case status that counts against conformance (before waivers).
    pub fn is_failure(&self) -> bool {
        match self {
            CaseStatus::Pass { .. } | CaseStatus::Skip { .. } => false,
            CaseStatus::Fail { .. }
            | CaseStatus::Error { .. }
            | CaseStatus::Crash { .. }
            | CaseStatus::Timeout { .. } => true,
        }
    }

    /// What a failure found, one finding a line, for a waiver's `findings:` to excuse: the
    /// lines of what was observed and of the detail (a fail), of the message (an error), or
    /// how a child died or timed out. Empty for a pass or a skip.
    pub fn finding_lines(&self) -> Vec<&str> {
        let text: Vec<&str> = match self {
            CaseStatus::Pass { .. } | CaseStatus::Skip { .. } => Vec::new(),
            CaseStatus::Fail { findings, .. } if !findings.is_empty() => {
                findings.iter().map(String::as_str).collect()
            }
            CaseStatus::Fail {
                observed, detail, ..
            } => vec![observed, detail],
            CaseStatus::Error { message } => vec![message],
            CaseStatus::Crash { how, .. } => vec![how],
            CaseStatus::Timeout { .. } => vec!["timeout"],
        };
        let mut lines: Vec<&str> = Vec::new();
        for l in text.iter().flat_map(|t| t.lines()).map(str::trim) {
            if !l.is_empty() && !lines.contains(&l) {
                lines.push(l);
            }
        }
        lines
    }

    /// This failure with the findings waiver `waiver` does not excuse named after it (the
    /// case then fails, and says why its waiver did not apply).
    pub fn with_unexcused(&self, waiver: &str, unexcused: &[String]) -> CaseStatus {
        let note = format!(
            "waiver {waiver} does not excuse {} of these findings:\n{}",
            unexcused.len(),
            unexcused
                .iter()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        let join = |a: &str| {
            if a.is_empty() {
                note.clone()
            } else {
                format!("{note}\n{a}")
            }
        };
        match self.clone() {
            CaseStatus::Fail {
                expected,
                observed,
                detail,
                findings,
            } => CaseStatus::Fail {
                expected,
                observed,
                detail: join(&detail),
                findings,
            },
            CaseStatus::Error { message } => CaseStatus::Error {
                message: format!("{message}\n{note}"),
            },
            CaseStatus::Crash { how, output } => CaseStatus::Crash {
                how,
                output: join(&output),
            },
            CaseStatus::Timeout { after_s, output } => CaseStatus::Timeout {
                after_s,
                output: join(&output),
            },
            other => other,
        }
    }

    /// One line for consoles and JUnit messages.
    pub fn summary(&self) -> String {
        match self {
            CaseStatus::Pass { note: None, .. } => "pass".into(),
            CaseStatus::Pass { note: Some(n), .. } => format!("pass: {n}"),
            CaseStatus::Fail {
                expected,
                observed,
                detail,
                ..
            } => {
                let mut s = format!("expected: {expected}\nobserved: {observed}");
                if !detail.is_empty() {
                    s.push('\n');
                    s.push_str(detail);
                }
                s
            }
            CaseStatus::Skip { capability, reason } => format!("skip [{capability}]: {reason}"),
            CaseStatus::Error { message } => format!("error: {message}"),
            CaseStatus::Crash { how, output } => format!("crash: {how}\n{output}"),
            CaseStatus::Timeout { after_s, output } => {
                format!("timeout after {after_s:.1}s\n{output}")
            }
        }
    }
}

/// The verdict after `--require` and waivers, which is what reports and the exit code use.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
pub enum Category {
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
    pub fn category(&self) -> Category {
        match self {
            Verdict::Pass | Verdict::StaleWaiver { .. } => Category::Passed,
            Verdict::Fail | Verdict::RequiredMissing => Category::Failed,
            Verdict::Skip => Category::Skipped,
            Verdict::Waived { .. } => Category::Waived,
            Verdict::Flaky => Category::Flaky,
        }
    }

    /// Whether this verdict makes the run exit 101.
    pub fn is_failure(&self) -> bool {
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
