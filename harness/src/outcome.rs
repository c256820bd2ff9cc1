//! What a case can say, in two layers (as deqp-runner does): the raw [`CaseStatus`] a case
//! reports, and the [`Verdict`] after `--require` and the waiver list are applied.

use serde::{Deserialize, Serialize};

use crate::capability::Capability;

/// The raw result of running one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CaseStatus {
    /// The property held. `note` carries figures or warnings worth showing (e.g. a litmus
    /// histogram, or "control never showed the weak outcome").
    Pass {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The property did not hold: what the spec (or oracle) expects against what was seen.
    Fail {
        expected: String,
        observed: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
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

impl CaseStatus {
    pub fn pass() -> Self {
        CaseStatus::Pass { note: None }
    }
    pub fn pass_with(note: impl Into<String>) -> Self {
        CaseStatus::Pass {
            note: Some(note.into()),
        }
    }
    pub fn fail(expected: impl Into<String>, observed: impl Into<String>) -> Self {
        CaseStatus::Fail {
            expected: expected.into(),
            observed: observed.into(),
            detail: String::new(),
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
        }
    }
    pub fn skip(capability: Capability, reason: impl Into<String>) -> Self {
        CaseStatus::Skip {
            capability,
            reason: reason.into(),
        }
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

    /// One line for consoles and JUnit messages.
    pub fn summary(&self) -> String {
        match self {
            CaseStatus::Pass { note: None } => "pass".into(),
            CaseStatus::Pass { note: Some(n) } => format!("pass: {n}"),
            CaseStatus::Fail {
                expected,
                observed,
                detail,
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

impl Verdict {
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
