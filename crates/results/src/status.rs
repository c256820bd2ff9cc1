//! A case's raw status as `results.json` stores it (the runner's `CaseStatus`): what a case
//! said before `--require` and the waiver list turned it into a verdict.
//!
//! The capability a skip names is a type parameter: the harness stores its `Capability`
//! enum, a reader that does not know the harness's capabilities reads the name as a
//! `String` (the default). Both read and write the same JSON.

use serde::{Deserialize, Serialize};

/// The capability that names the GPU itself: what a device check compiled under `gpucts
/// prebuild` skips for.
pub trait DeviceCapability: Sized {
    fn device() -> Self;
}

impl DeviceCapability for String {
    fn device() -> String {
        "gpu".to_string()
    }
}

/// The tag of a forbidden litmus test's pass whose relaxed control never showed its weak
/// outcome: the stress could not have caught a violation, so the pass says little.
pub const CONTROL_WITHOUT_WEAK_OUTCOMES: &str = "control-without-weak-outcomes";

/// The tag of a case whose outcomes the spec does not define: what was seen is recorded as an
/// observation, and the pass proves no conformance.
pub const OBSERVATION: &str = "observation";

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
pub enum CaseStatus<C = String> {
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
    Skip { capability: C, reason: String },
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

impl<C: Clone> CaseStatus<C> {
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
    pub fn with_weak_controls_required(self) -> CaseStatus<C> {
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
    pub fn skip(capability: C, reason: impl Into<String>) -> Self {
        CaseStatus::Skip {
            capability,
            reason: reason.into(),
        }
    }
    /// What a device check returns under `gpucts prebuild` once its compilations ran: a skip
    /// naming the device.
    pub fn compiled_only() -> Self
    where
        C: DeviceCapability,
    {
        CaseStatus::skip(C::device(), COMPILED_ONLY)
    }
    /// Whether this is [`CaseStatus::compiled_only`].
    pub fn is_compiled_only(&self) -> bool
    where
        C: DeviceCapability + PartialEq,
    {
        matches!(self, CaseStatus::Skip { capability, reason } if *capability == C::device() && reason == COMPILED_ONLY)
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
    pub fn with_unexcused(&self, waiver: &str, unexcused: &[String]) -> CaseStatus<C> {
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
}

impl<C: std::fmt::Display> CaseStatus<C> {
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
