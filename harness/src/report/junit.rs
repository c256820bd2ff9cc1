//! JUnit XML through junit-report, one `<testsuite>` per area.
//!
//! junit-report 0.8 writes neither `<properties>` nor a message on `<skipped/>`; both are added
//! by a pass over its output with quick-xml (its own XML library), so the document stays
//! well-formed and every other element is junit-report's.

use std::collections::{BTreeMap, HashMap};
use std::io::Cursor;

use junit_report::{ReportBuilder, TestCase, TestSuiteBuilder};
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, Writer};

use crate::outcome::{CaseStatus, Verdict};
use crate::runner::CaseResult;

/// Text that XML 1.0 can carry anywhere junit-report puts it (attributes, CDATA): characters
/// XML forbids (controls other than tab, newline and carriage return; U+FFFE, U+FFFF) are
/// written as `\u{..}`, and `]]>`, which would end a CDATA section, as `]] >`. The exact text
/// is in results.json.
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

fn testcase(r: &CaseResult) -> (TestCase, Option<String>) {
    let mut tc = testcase_raw(r);
    tc.0.name = xml_safe(&tc.0.name);
    // Skipped and waived cases took time too (a waived case ran and failed): JUnit's sums
    // count it.
    tc.0.time = time::Duration::seconds_f64(r.duration_s);
    tc.0.result = match tc.0.result {
        junit_report::TestResult::Failure { type_, message } => junit_report::TestResult::Failure {
            type_,
            message: xml_safe(&message),
        },
        junit_report::TestResult::Error { type_, message } => junit_report::TestResult::Error {
            type_,
            message: xml_safe(&message),
        },
        other => other,
    };
    tc.0.system_out = tc.0.system_out.map(|o| xml_safe(&o));
    tc.0.filepath = tc.0.filepath.map(|o| xml_safe(&o));
    (tc.0, tc.1.map(|m| xml_safe(&m)))
}

fn testcase_raw(r: &CaseResult) -> (TestCase, Option<String>) {
    let time = time::Duration::seconds_f64(r.duration_s);
    let mut skip_message = None;
    let mut tc = match (&r.verdict, &r.status) {
        (Verdict::Pass, _) | (Verdict::StaleWaiver { .. }, _) | (Verdict::Flaky, _) => {
            TestCase::success(&r.id, time)
        }
        (Verdict::Skip, s) => {
            skip_message = Some(s.summary());
            TestCase::skipped(&r.id)
        }
        (Verdict::Waived { waiver }, s) => {
            skip_message = Some(format!(
                "waived ({waiver}); the case failed with: {}",
                s.summary()
            ));
            TestCase::skipped(&r.id)
        }
        (Verdict::RequiredMissing, s) => TestCase::failure(
            &r.id,
            time,
            "required-capability",
            &format!("required capability missing: {}", s.summary()),
        ),
        (Verdict::Fail, CaseStatus::Error { message }) => {
            TestCase::error(&r.id, time, "error", message)
        }
        (Verdict::Fail, s @ CaseStatus::Crash { .. }) => {
            TestCase::failure(&r.id, time, "crash", &s.summary())
        }
        (Verdict::Fail, s @ CaseStatus::Timeout { .. }) => {
            TestCase::failure(&r.id, time, "timeout", &s.summary())
        }
        (Verdict::Fail, s) => TestCase::failure(&r.id, time, "fail", &s.summary()),
    };
    let classname = r.id.rsplit_once('.').map(|(c, _)| c).unwrap_or(&r.area);
    tc.set_classname(classname);
    tc.set_filepath(&r.origin);
    let mut out = format!("clause: {}", r.clause);
    if let CaseStatus::Pass { note: Some(n), .. } = &r.status {
        out.push_str("\nnote: ");
        out.push_str(n);
    }
    // Also in the output, for JUnit readers that ignore a testcase's properties.
    for t in r.status.tags() {
        out.push_str("\ntag: ");
        out.push_str(t);
    }
    if let Verdict::StaleWaiver { waiver } = &r.verdict {
        out.push_str(&format!(
            "\nstale waiver: {waiver} lists this case but it passed"
        ));
    }
    tc.set_system_out(&out);
    (tc, skip_message)
}

/// Why the JUnit document could not be written.
#[derive(Debug, thiserror::Error)]
pub enum JunitError {
    #[error("cannot write JUnit XML: {0}")]
    Write(quick_xml::Error),
    #[error("cannot rewrite JUnit XML: {0}")]
    Rewrite(quick_xml::Error),
    #[error(transparent)]
    Utf8(#[from] std::string::FromUtf8Error),
}

/// The JUnit document for these results.
pub fn render(
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
    timestamp: time::OffsetDateTime,
) -> Result<String, JunitError> {
    let mut by_area: BTreeMap<&str, Vec<&CaseResult>> = BTreeMap::new();
    for r in results {
        by_area.entry(r.area.as_str()).or_default().push(r);
    }
    let mut skip_messages: HashMap<String, String> = HashMap::new();
    let mut flaky: HashMap<String, (&[CaseStatus], bool)> = HashMap::new();
    let mut tags: HashMap<String, &[String]> = HashMap::new();
    let mut report = ReportBuilder::new();
    for (area, rs) in by_area {
        let mut suite = TestSuiteBuilder::new(&format!("gpucts.{area}"));
        suite.set_timestamp(timestamp);
        for r in rs {
            let (tc, skip) = testcase(r);
            if let Some(m) = skip {
                skip_messages.insert(r.id.clone(), m);
            }
            if !r.attempts.is_empty() {
                flaky.insert(r.id.clone(), (&r.attempts, r.verdict == Verdict::Flaky));
            }
            if !r.status.tags().is_empty() {
                tags.insert(r.id.clone(), r.status.tags());
            }
            suite.add_testcase(tc);
        }
        report.add_testsuite(suite.build());
    }
    let mut raw = Vec::new();
    report
        .build()
        .write_xml(&mut raw)
        .map_err(JunitError::Write)?;
    annotate(&raw, fingerprint, &skip_messages, &flaky, &tags)
}

/// Surefire's record of earlier failed attempts (`--rerun-failures`): `<flakyFailure>` (or
/// `<flakyError>` for a harness error) when the case passed at last, `<rerunFailure>` /
/// `<rerunError>` when it never did; each with the attempt's message and a `<stackTrace>`.
fn write_flaky<W: std::io::Write>(
    writer: &mut Writer<W>,
    (attempts, passed_at_last): (&[CaseStatus], bool),
) -> Result<(), quick_xml::Error> {
    use quick_xml::events::{BytesEnd, BytesText};
    let prefix = if passed_at_last { "flaky" } else { "rerun" };
    for a in attempts {
        let (what, kind) = match a {
            CaseStatus::Error { .. } => ("Error", "error"),
            CaseStatus::Crash { .. } => ("Failure", "crash"),
            CaseStatus::Timeout { .. } => ("Failure", "timeout"),
            _ => ("Failure", "fail"),
        };
        let tag = format!("{prefix}{what}");
        let tag = tag.as_str();
        let summary = xml_safe(&a.summary());
        let mut e = BytesStart::new(tag);
        e.push_attribute(("message", summary.lines().next().unwrap_or("")));
        e.push_attribute(("type", kind));
        writer.write_event(Event::Start(e))?;
        writer.write_event(Event::Start(BytesStart::new("stackTrace")))?;
        writer.write_event(Event::Text(BytesText::new(&summary)))?;
        writer.write_event(Event::End(BytesEnd::new("stackTrace")))?;
        writer.write_event(Event::End(BytesEnd::new(tag)))?;
    }
    Ok(())
}

/// A case's tags as `<properties><property name="tag" value="..."/>...</properties>`, first
/// inside its `<testcase>` (as Surefire and Ant place a testcase's properties).
fn write_tags<W: std::io::Write>(
    writer: &mut Writer<W>,
    tags: &[String],
) -> Result<(), quick_xml::Error> {
    writer.write_event(Event::Start(BytesStart::new("properties")))?;
    for t in tags {
        let mut p = BytesStart::new("property");
        p.push_attribute(("name", "tag"));
        p.push_attribute(("value", xml_safe(t).as_str()));
        writer.write_event(Event::Empty(p))?;
    }
    writer.write_event(Event::End(quick_xml::events::BytesEnd::new("properties")))?;
    Ok(())
}

/// Add `<properties>` to each `<testsuite>` (the fingerprint) and to each tagged
/// `<testcase>` (junit-report writes neither), and `message` to each `<skipped/>`.
fn annotate(
    raw: &[u8],
    fingerprint: &BTreeMap<String, String>,
    skip_messages: &HashMap<String, String>,
    flaky: &HashMap<String, (&[CaseStatus], bool)>,
    tags: &HashMap<String, &[String]>,
) -> Result<String, JunitError> {
    let mut reader = Reader::from_reader(raw);
    let mut writer = Writer::new_with_indent(Cursor::new(Vec::new()), b' ', 2);
    let mut buf = Vec::new();
    let mut current_case: Option<String> = None;
    let xml_err = JunitError::Rewrite;
    loop {
        let ev = reader.read_event_into(&mut buf).map_err(xml_err)?;
        match ev {
            Event::Eof => break,
            Event::Start(ref e) if e.name().as_ref() == b"testsuite" => {
                writer
                    .write_event(Event::Start(e.to_owned()))
                    .map_err(xml_err)?;
                writer
                    .write_event(Event::Start(BytesStart::new("properties")))
                    .map_err(xml_err)?;
                for (k, v) in fingerprint {
                    let mut p = BytesStart::new("property");
                    p.push_attribute(("name", xml_safe(k).as_str()));
                    p.push_attribute(("value", xml_safe(v).as_str()));
                    writer.write_event(Event::Empty(p)).map_err(xml_err)?;
                }
                writer
                    .write_event(Event::End(quick_xml::events::BytesEnd::new("properties")))
                    .map_err(xml_err)?;
            }
            Event::Start(ref e) | Event::Empty(ref e) if e.name().as_ref() == b"testcase" => {
                current_case = e
                    .try_get_attribute("name")
                    .ok()
                    .flatten()
                    .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()));
                let attempts = current_case.as_ref().and_then(|c| flaky.get(c));
                let tagged = current_case.as_ref().and_then(|c| tags.get(c));
                if attempts.is_none() && tagged.is_none() {
                    writer
                        .write_event(ev.clone().into_owned())
                        .map_err(xml_err)?;
                } else {
                    let empty = matches!(ev, Event::Empty(_));
                    writer
                        .write_event(Event::Start(e.to_owned()))
                        .map_err(xml_err)?;
                    if let Some(t) = tagged {
                        write_tags(&mut writer, t).map_err(xml_err)?;
                    }
                    if let Some(a) = attempts {
                        write_flaky(&mut writer, *a).map_err(xml_err)?;
                    }
                    if empty {
                        writer
                            .write_event(Event::End(quick_xml::events::BytesEnd::new("testcase")))
                            .map_err(xml_err)?;
                    }
                }
            }
            Event::Empty(ref e) if e.name().as_ref() == b"skipped" => {
                let mut s = BytesStart::new("skipped");
                if let Some(m) = current_case.as_ref().and_then(|c| skip_messages.get(c)) {
                    s.push_attribute(("message", m.as_str()));
                }
                writer.write_event(Event::Empty(s)).map_err(xml_err)?;
            }
            other => writer.write_event(other.into_owned()).map_err(xml_err)?,
        }
        buf.clear();
    }
    Ok(String::from_utf8(writer.into_inner().into_inner())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Capability;

    fn result(id: &str, status: CaseStatus, verdict: Verdict) -> CaseResult {
        CaseResult {
            id: id.into(),
            area: "abi".into(),
            clause: "ptx-interop 13.2 §1.1".into(),
            origin: "suites/abi.yaml:3:5".into(),
            status,
            verdict,
            duration_s: 0.01,
            attempts: Vec::new(),
            figures: Vec::new(),
        }
    }

    #[test]
    fn junit_carries_skip_reason_waiver_failure_and_properties() {
        let results = vec![
            result("abi.a.pass", CaseStatus::pass(), Verdict::Pass),
            result(
                "abi.a.fail",
                CaseStatus::fail("size 4", "size 8"),
                Verdict::Fail,
            ),
            result(
                "abi.a.skip",
                CaseStatus::skip(Capability::Gpu, "no GPU <none>"),
                Verdict::Skip,
            ),
            result(
                "abi.a.waived",
                CaseStatus::fail("align 16", "align 8"),
                Verdict::Waived {
                    waiver: "W-7".into(),
                },
            ),
        ];
        let mut fp = BTreeMap::new();
        fp.insert("gpu".to_string(), "none".to_string());
        let xml = render(&results, &fp, time::OffsetDateTime::UNIX_EPOCH).unwrap();
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
        // Well-formed: quick-xml reads it back to the end.
        let mut r = Reader::from_str(&xml);
        while r.read_event().unwrap() != Event::Eof {}
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
        let results = vec![
            result(
                "atomics.gpu.MP.rel_acq.cta.intra_cta",
                CaseStatus::pass_beside_control("quiet control", control(0)),
                Verdict::Pass,
            ),
            result(
                "atomics.gpu.MP.rel_acq.cta.inter_cta",
                CaseStatus::pass_beside_control("busy control", control(9)),
                Verdict::Pass,
            ),
        ];
        let xml = render(&results, &BTreeMap::new(), time::OffsetDateTime::UNIX_EPOCH).unwrap();
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
        let mut r = Reader::from_str(&xml);
        while r.read_event().unwrap() != Event::Eof {}
    }
}
