//! JUnit XML rendered from a results set with quick-junit (nextest's writer), one
//! `<testsuite>` per area, for the CI systems that read JUnit (Jenkins, GitLab, Surefire-style
//! readers).
//!
//! What each verdict becomes:
//! - pass, stale waiver, flaky: a passed `<testcase>` whose `<system-out>` carries the clause,
//!   the note, the tags and a stale waiver; a flaky case's failed attempts are
//!   `<flakyFailure>`/`<flakyError>`;
//! - skip: `<skipped message="skip [capability]: reason"/>`;
//! - waived: `<skipped message="waived (ID); the case failed with: …"/>`, the failed attempts
//!   before it (`--rerun-failures`) in the element's text;
//! - fail: `<failure type="fail|crash|timeout">` or, for a harness error, `<error type="error">`
//!   with the status as `message`; required-missing: `<failure type="required-capability">`;
//!   attempts before the last one are `<rerunFailure>`/`<rerunError>`.
//!
//! Each `<testsuite>` has the machine's fingerprint as `<properties>`; a case's tags
//! (`control-without-weak-outcomes`) are `<property name="tag">` inside its `<testcase>`.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestRerun};
use quick_junit::{TestSuite, XmlString};

use super::results::{Results, StoredCase, VerdictName};
use crate::outcome::CaseStatus;

/// The name of the JUnit document's `<testsuites>`.
const REPORT_NAME: &str = "gpucts";

/// Text that XML 1.0 can carry: characters XML forbids (controls other than tab, newline and
/// carriage return; U+FFFE, U+FFFF) are written as `\u{..}` rather than dropped, and `]]>` as
/// `]] >` (the form JUnit readers have seen since reports began). The exact text is in
/// results.json.
pub fn xml_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.replace("]]>", "]] >")
}

/// `text` made [`xml_safe`] for quick-junit (which would drop control characters silently).
fn xml(text: &str) -> XmlString {
    XmlString::new(xml_safe(text))
}

/// Why the JUnit document could not be written.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    #[error("cannot write JUnit XML: {0}")]
    Write(#[from] quick_junit::SerializeError),
}

/// The JUnit document of a results set.
pub fn render(results: &Results) -> Result<String, JunitError> {
    let mut by_area: std::collections::BTreeMap<&str, Vec<&StoredCase>> = Default::default();
    for c in &results.cases {
        by_area.entry(c.area.as_str()).or_default().push(c);
    }
    let finished = results.run.as_ref().map(|r| r.finished.as_str());
    let mut report = Report::new(REPORT_NAME);
    for (id, (area, cases)) in by_area.into_iter().enumerate() {
        let mut suite = TestSuite::new(format!("gpucts.{area}"));
        // Surefire's suite attributes, as reports have carried them.
        suite.extra.insert("id".into(), id.to_string().into());
        suite
            .extra
            .insert("package".into(), format!("testsuite/gpucts.{area}").into());
        suite.extra.insert("hostname".into(), "localhost".into());
        if let Some(t) = finished.filter(|t| !t.is_empty()) {
            suite.extra.insert("timestamp".into(), t.into());
        }
        suite.add_properties(
            results
                .fingerprint
                .iter()
                .map(|(k, v)| Property::new(xml(k), xml(v))),
        );
        // Skipped and waived cases took time too (a waived case ran and failed): JUnit's
        // sums count it.
        suite.set_time(Duration::from_secs_f64(
            cases.iter().map(|c| seconds(c.duration_s)).sum(),
        ));
        suite.add_test_cases(cases.into_iter().map(testcase));
        report.add_test_suite(suite);
    }
    // A stopped run: each case it did not run is an error, so the report is never read as
    // green (`gpucts --resume DIR` finishes it).
    if let Some(run) = results.run.as_ref().filter(|r| r.incomplete) {
        let mut suite = TestSuite::new("gpucts.not_run");
        suite.add_property(Property::new("incomplete", "true"));
        suite.add_test_cases(run.not_run.iter().map(|id| {
            let mut tc = TestCase::new(
                xml(id),
                non_success(
                    NonSuccessKind::Error,
                    "not-run",
                    "not run: the run was stopped before this case (gpucts --resume DIR finishes it)"
                        .into(),
                    &[],
                ),
            );
            tc.set_classname(id.rsplit_once('.').map(|(k, _)| k).unwrap_or(id));
            tc
        }));
        report.add_test_suite(suite);
    }
    Ok(report.to_string()?)
}

/// A duration that `Duration` can hold (a hand-edited results.json may carry anything).
fn seconds(s: f64) -> f64 {
    if s.is_finite() && s > 0.0 {
        s.min(1e9)
    } else {
        0.0
    }
}

fn testcase(c: &StoredCase) -> TestCase {
    let mut tc = TestCase::new(xml(&c.id), status(c));
    let classname = c.id.rsplit_once('.').map(|(k, _)| k).unwrap_or(&c.area);
    tc.set_classname(classname);
    tc.set_time(Duration::from_secs_f64(seconds(c.duration_s)));
    tc.extra.insert("file".into(), xml(&c.origin));
    tc.add_properties(c.status.tags().iter().map(|t| Property::new("tag", xml(t))));
    if let Some(d) = &c.device {
        tc.add_property(Property::new("device", xml(d)));
    }
    // The case's text: in `<system-out>` for a passed case; as the text of its `<failure>` or
    // `<error>` otherwise (where a CI page shows it beside the message).
    let text = xml(&case_text(c));
    match &mut tc.status {
        TestCaseStatus::Success { .. } => {
            tc.set_system_out(text);
        }
        TestCaseStatus::NonSuccess { description, .. } => *description = Some(text),
        TestCaseStatus::Skipped { .. } => {}
    }
    tc
}

/// The status element of a case (see the module comment).
fn status(c: &StoredCase) -> TestCaseStatus {
    let waiver = c.waiver.as_deref().unwrap_or("");
    let summary = c.status.summary();
    match c.verdict {
        VerdictName::Pass | VerdictName::StaleWaiver | VerdictName::Flaky => {
            TestCaseStatus::Success {
                flaky_runs: reruns(&c.attempts),
            }
        }
        VerdictName::Skip => skipped(summary, None),
        VerdictName::Waived => skipped(
            format!("waived ({waiver}); the case failed with: {summary}"),
            attempts_text(&c.attempts),
        ),
        VerdictName::RequiredMissing => non_success(
            NonSuccessKind::Failure,
            "required-capability",
            format!("required capability missing: {summary}"),
            &c.attempts,
        ),
        VerdictName::Fail => {
            let (kind, ty) = kind(&c.status);
            let message = match &c.status {
                CaseStatus::Error { message } => message.clone(),
                _ => summary,
            };
            non_success(kind, ty, message, &c.attempts)
        }
    }
}

fn skipped(message: String, description: Option<String>) -> TestCaseStatus {
    let mut s = TestCaseStatus::skipped();
    s.set_message(xml(&message));
    if let Some(d) = description {
        s.set_description(xml(&d));
    }
    s
}

fn non_success(
    kind: NonSuccessKind,
    ty: &str,
    message: String,
    attempts: &[CaseStatus],
) -> TestCaseStatus {
    let mut s = TestCaseStatus::non_success(kind);
    s.set_type(ty).set_message(xml(&message));
    s.add_reruns(reruns(attempts));
    s
}

/// JUnit's kind and `type` for a failed status: a harness error is an `<error>`; a crash, a
/// timeout and any other failure a `<failure>` of that type.
fn kind(s: &CaseStatus) -> (NonSuccessKind, &'static str) {
    match s {
        CaseStatus::Error { .. } => (NonSuccessKind::Error, "error"),
        CaseStatus::Crash { .. } => (NonSuccessKind::Failure, "crash"),
        CaseStatus::Timeout { .. } => (NonSuccessKind::Failure, "timeout"),
        _ => (NonSuccessKind::Failure, "fail"),
    }
}

/// Surefire's record of earlier failed attempts (`--rerun-failures`): each with the first line
/// of its text as `message` and the whole text as `<stackTrace>`. quick-junit names them
/// `flaky…` inside a passed case and `rerun…` inside a failed one.
fn reruns(attempts: &[CaseStatus]) -> Vec<TestRerun> {
    attempts
        .iter()
        .map(|a| {
            let (kind, ty) = kind(a);
            let summary = xml_safe(&a.summary());
            let mut r = TestRerun::new(kind);
            r.set_message(summary.lines().next().unwrap_or(""))
                .set_type(ty)
                .set_stack_trace(summary.as_str());
            r
        })
        .collect()
}

/// The failed attempts before a waived case's last one, one paragraph each: JUnit's
/// `<skipped>` has no room for rerun elements.
fn attempts_text(attempts: &[CaseStatus]) -> Option<String> {
    (!attempts.is_empty()).then(|| {
        attempts
            .iter()
            .enumerate()
            .map(|(i, a)| format!("attempt {} ({}): {}", i + 1, kind(a).1, a.summary()))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// What a case's `<system-out>` (or failure text) says: the clause, a pass's note, its tags
/// (also as properties, for readers that ignore a testcase's properties), a stale waiver.
fn case_text(c: &StoredCase) -> String {
    let mut out = format!("clause: {}", c.clause);
    if let CaseStatus::Pass { note: Some(n), .. } = &c.status {
        out.push_str("\nnote: ");
        out.push_str(n);
    }
    for t in c.status.tags() {
        out.push_str("\ntag: ");
        out.push_str(t);
    }
    if c.verdict == VerdictName::StaleWaiver {
        let waiver = c.waiver.as_deref().unwrap_or("");
        out.push_str(&format!(
            "\nstale waiver: {waiver} lists this case but it passed"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Capability;
    use quick_xml::events::Event;
    use quick_xml::Reader;

    fn case(id: &str, status: CaseStatus, verdict: VerdictName) -> StoredCase {
        StoredCase {
            id: id.into(),
            area: "abi".into(),
            clause: "ptx-interop 13.2 §1.1".into(),
            origin: "suites/abi.yaml:3:5".into(),
            status,
            verdict,
            waiver: None,
            duration_s: 0.01,
            attempts: Vec::new(),
            node: None,
            device: None,
        }
    }

    fn results(cases: Vec<StoredCase>) -> Results {
        Results {
            schema_version: super::super::results::SCHEMA_VERSION,
            gpucts_version: "0.1.0".into(),
            fingerprint: [("gpu".to_string(), "none".to_string())].into(),
            probe: None,
            run: None,
            figures: Default::default(),
            nodes: Vec::new(),
            cases,
        }
    }

    fn well_formed(xml: &str) {
        let mut r = Reader::from_str(xml);
        while r.read_event().unwrap() != Event::Eof {}
    }

    #[test]
    fn junit_carries_skip_reason_waiver_failure_and_properties() {
        let mut waived = case(
            "abi.a.waived",
            CaseStatus::fail("align 16", "align 8"),
            VerdictName::Waived,
        );
        waived.waiver = Some("W-7".into());
        let r = results(vec![
            case("abi.a.pass", CaseStatus::pass(), VerdictName::Pass),
            case(
                "abi.a.fail",
                CaseStatus::fail("size 4", "size 8"),
                VerdictName::Fail,
            ),
            case(
                "abi.a.skip",
                CaseStatus::skip(Capability::Gpu, "no GPU <none>"),
                VerdictName::Skip,
            ),
            waived,
        ]);
        let xml = render(&r).unwrap();
        assert!(
            xml.contains(r#"<property name="gpu" value="none"/>"#),
            "{xml}"
        );
        assert!(xml.contains("expected: size 4"), "{xml}");
        assert!(xml.contains("observed: size 8"), "{xml}");
        assert!(
            xml.contains(r#"message="skip [gpu]: no GPU &lt;none&gt;""#),
            "{xml}"
        );
        assert!(xml.contains("waived (W-7)"), "{xml}");
        assert_eq!(xml.matches("<testcase").count(), 4);
        well_formed(&xml);
    }

    /// A tagged pass carries `<property name="tag" value="control-without-weak-outcomes"/>`
    /// inside its own `<testcase>` (and a `tag:` line in its output); an untagged one none.
    #[test]
    fn a_tagged_pass_carries_its_tag_as_a_testcase_property() {
        let control = |weak| crate::outcome::ControlRun {
            test: "MP.relaxed.cta.intra_cta".into(),
            instances: 100,
            weak,
        };
        let r = results(vec![
            case(
                "atomics.gpu.MP.rel_acq.cta.intra_cta",
                CaseStatus::pass_beside_control("quiet control", control(0)),
                VerdictName::Pass,
            ),
            case(
                "atomics.gpu.MP.rel_acq.cta.inter_cta",
                CaseStatus::pass_beside_control("busy control", control(9)),
                VerdictName::Pass,
            ),
        ]);
        let xml = render(&r).unwrap();
        let property = r#"<property name="tag" value="control-without-weak-outcomes"/>"#;
        assert_eq!(xml.matches(property).count(), 1, "{xml}");
        // It sits in the intra-CTA case, between its start and its end.
        let start = xml
            .find(r#"<testcase name="atomics.gpu.MP.rel_acq.cta.intra_cta""#)
            .unwrap();
        let end = start + xml[start..].find("</testcase>").unwrap();
        let at = xml.find(property).unwrap();
        assert!(start < at && at < end, "{xml}");
        assert!(
            xml[start..end].contains("tag: control-without-weak-outcomes"),
            "{xml}"
        );
        well_formed(&xml);
    }

    /// Reruns: a flaky pass lists its failed attempt as `<flakyFailure>`, a case that never
    /// passed as `<rerunFailure>`, each with the attempt's first line as message and the
    /// whole text as `<stackTrace>`; a waived case's attempts are its `<skipped>` text.
    #[test]
    fn attempts_are_surefire_reruns() {
        let attempt = CaseStatus::fail("1", "2");
        let mut flaky = case("abi.r.flaky", CaseStatus::pass(), VerdictName::Flaky);
        flaky.attempts = vec![attempt.clone()];
        let mut failed = case("abi.r.failed", attempt.clone(), VerdictName::Fail);
        failed.attempts = vec![CaseStatus::error("tool broke")];
        let mut waived = case("abi.r.waived", attempt.clone(), VerdictName::Waived);
        waived.waiver = Some("W-1".into());
        waived.attempts = vec![attempt];
        let xml = render(&results(vec![flaky, failed, waived])).unwrap();
        assert!(
            xml.contains(r#"<flakyFailure message="expected: 1" type="fail">"#),
            "{xml}"
        );
        assert!(
            xml.contains("<stackTrace>expected: 1\nobserved: 2</stackTrace>"),
            "{xml}"
        );
        assert!(
            xml.contains(r#"<rerunError message="error: tool broke" type="error">"#),
            "{xml}"
        );
        assert!(
            xml.contains("attempt 1 (fail): expected: 1\nobserved: 2</skipped>"),
            "{xml}"
        );
        well_formed(&xml);
    }
}
