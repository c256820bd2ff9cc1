//! JUnit rendered from results.json with quick-junit says what the JUnit of the earlier writer
//! (junit-report plus a quick-xml pass, kept in `junit_compat/old_junit.rs`) said, for the
//! same results: the same `<testsuite>` names, counts and properties; the same testcases with
//! the same classname, file, status element, type, message, text, properties and rerun
//! records. Both documents are parsed with quick-xml and compared as such, never as text.
//!
//! The results sets are real runs: the GPU rigs' results committed under reports/rigs/, and
//! two runs of the fixture suites made here with the debug binary (every status the runner
//! has: pass, fail, crash, timeout, harness error, skip, required-missing, waived, stale
//! waiver, flaky, tagged pass).
//!
//! One difference is intended: a waived case's failed attempts (`--rerun-failures`) were
//! `<rerunFailure>` elements inside a `<skipped>` testcase; quick-junit's `<skipped>` has no
//! room for them, so they are the skipped element's text, one `attempt N (TYPE): TEXT` a line.

mod common;
#[path = "junit_compat/old_junit.rs"]
mod old_junit;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{fixture, gpucts_env, text, tmp};
use gpucts::outcome::Verdict;
use gpucts::report::results::{self, Results, StoredCase, VerdictName};
use gpucts::runner::CaseResult;
use quick_xml::events::{BytesStart, Event};

/// A `<flakyFailure>`, `<rerunError>`, … record.
#[derive(Debug, Clone, PartialEq)]
struct Rerun {
    element: String,
    message: Option<String>,
    ty: Option<String>,
    stack_trace: String,
}

/// What a CI reader sees of one `<testcase>`.
#[derive(Debug, Clone, Default, PartialEq)]
struct Case {
    classname: Option<String>,
    file: Option<String>,
    /// `pass`, or the status element: `failure`, `error`, `skipped`.
    status: String,
    ty: Option<String>,
    message: Option<String>,
    /// The text of the status element (failure, error, skipped).
    status_text: String,
    system_out: String,
    properties: Vec<(String, String)>,
    reruns: Vec<Rerun>,
}

/// What a CI reader sees of one `<testsuite>`.
#[derive(Debug, Clone, Default, PartialEq)]
struct Suite {
    /// `tests`, `failures`, `errors`.
    counts: [Option<String>; 3],
    properties: Vec<(String, String)>,
    cases: BTreeMap<String, Case>,
}

fn attr(e: &BytesStart, name: &str) -> Option<String> {
    e.try_get_attribute(name)
        .unwrap()
        .map(|a| a.unescape_value().unwrap().into_owned())
}

/// Parse a JUnit document into its suites (by name).
fn parse(xml: &str) -> BTreeMap<String, Suite> {
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut suites: BTreeMap<String, Suite> = BTreeMap::new();
    let mut stack: Vec<String> = Vec::new();
    let (mut suite, mut case) = (String::new(), String::new());
    loop {
        let ev = reader.read_event().unwrap();
        let (e, empty) = match &ev {
            Event::Eof => break,
            Event::Start(e) => (Some(e.clone()), false),
            Event::Empty(e) => (Some(e.clone()), true),
            Event::End(_) => {
                stack.pop();
                continue;
            }
            Event::Text(t) => {
                let t = t.unescape().unwrap().into_owned();
                if !t.trim().is_empty() {
                    add_text(&mut suites, &suite, &case, &stack, &t);
                }
                continue;
            }
            Event::CData(t) => {
                let t = String::from_utf8(t.to_vec()).unwrap();
                add_text(&mut suites, &suite, &case, &stack, &t);
                continue;
            }
            _ => continue,
        };
        let e = e.unwrap();
        let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
        let parent = stack.last().cloned().unwrap_or_default();
        match name.as_str() {
            "testsuite" => {
                suite = attr(&e, "name").unwrap();
                let s = suites.entry(suite.clone()).or_default();
                s.counts = [attr(&e, "tests"), attr(&e, "failures"), attr(&e, "errors")];
            }
            "testcase" => {
                case = attr(&e, "name").unwrap();
                let c = Case {
                    classname: attr(&e, "classname"),
                    file: attr(&e, "file"),
                    status: "pass".into(),
                    ..Case::default()
                };
                let old = suites
                    .get_mut(&suite)
                    .unwrap()
                    .cases
                    .insert(case.clone(), c);
                assert!(old.is_none(), "testcase {case} twice");
            }
            "property" => {
                let p = (attr(&e, "name").unwrap(), attr(&e, "value").unwrap());
                let grand = stack.iter().rev().nth(1).cloned().unwrap_or_default();
                assert_eq!(parent, "properties");
                let s = suites.get_mut(&suite).unwrap();
                match grand.as_str() {
                    "testsuite" => s.properties.push(p),
                    "testcase" => s.cases.get_mut(&case).unwrap().properties.push(p),
                    other => panic!("a property inside {other}"),
                }
            }
            "failure" | "error" | "skipped" => {
                let c = suites
                    .get_mut(&suite)
                    .unwrap()
                    .cases
                    .get_mut(&case)
                    .unwrap();
                c.status = name.clone();
                c.ty = attr(&e, "type");
                c.message = attr(&e, "message");
            }
            "flakyFailure" | "flakyError" | "rerunFailure" | "rerunError" => {
                let c = suites
                    .get_mut(&suite)
                    .unwrap()
                    .cases
                    .get_mut(&case)
                    .unwrap();
                c.reruns.push(Rerun {
                    element: name.clone(),
                    message: attr(&e, "message"),
                    ty: attr(&e, "type"),
                    stack_trace: String::new(),
                });
            }
            "testsuites" | "properties" | "system-out" | "system-err" | "stackTrace" => {}
            other => panic!("unexpected element <{other}>"),
        }
        if !empty {
            stack.push(name);
        }
    }
    suites
}

fn add_text(
    suites: &mut BTreeMap<String, Suite>,
    suite: &str,
    case: &str,
    stack: &[String],
    t: &str,
) {
    let Some(c) = suites.get_mut(suite).and_then(|s| s.cases.get_mut(case)) else {
        panic!("text outside a testcase: {t:?}");
    };
    match stack.last().map(String::as_str) {
        Some("system-out") => c.system_out.push_str(t),
        Some("failure" | "error" | "skipped") => c.status_text.push_str(t),
        Some("stackTrace") => c.reruns.last_mut().unwrap().stack_trace.push_str(t),
        other => panic!("text inside {other:?}: {t:?}"),
    }
}

/// The runner's result a stored case was written from (what the earlier writer took).
fn live(c: &StoredCase) -> CaseResult {
    let waiver = || c.waiver.clone().unwrap_or_default();
    CaseResult {
        id: c.id.clone(),
        area: c.area.clone(),
        clause: c.clause.clone(),
        origin: c.origin.clone(),
        status: c.status.clone(),
        verdict: match c.verdict {
            VerdictName::Pass => Verdict::Pass,
            VerdictName::Fail => Verdict::Fail,
            VerdictName::Skip => Verdict::Skip,
            VerdictName::Waived => Verdict::Waived { waiver: waiver() },
            VerdictName::StaleWaiver => Verdict::StaleWaiver { waiver: waiver() },
            VerdictName::RequiredMissing => Verdict::RequiredMissing,
            VerdictName::Flaky => Verdict::Flaky,
        },
        duration_s: c.duration_s,
        device: None,
        attempts: c.attempts.clone(),
        figures: Vec::new(),
    }
}

/// The earlier document, with the one intended change applied: a skipped case's reruns
/// become its text.
fn old_document(set: &Results) -> BTreeMap<String, Suite> {
    let live: Vec<CaseResult> = set.cases.iter().map(live).collect();
    let xml = old_junit::render(&live, &set.fingerprint, time::OffsetDateTime::UNIX_EPOCH)
        .expect("the earlier writer renders");
    let mut doc = parse(&xml);
    for s in doc.values_mut() {
        for c in s.cases.values_mut() {
            if c.status == "skipped" && !c.reruns.is_empty() {
                let lines: Vec<String> = c
                    .reruns
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        format!(
                            "attempt {} ({}): {}",
                            i + 1,
                            r.ty.as_deref().unwrap_or(""),
                            r.stack_trace
                        )
                    })
                    .collect();
                c.status_text = lines.join("\n");
                c.reruns.clear();
            }
        }
    }
    doc
}

/// Compare the two documents of `set`, case by case, naming the first difference.
fn assert_same_junit(name: &str, set: &Results) -> BTreeMap<String, Suite> {
    let new = gpucts::report::junit::render(set).expect("quick-junit renders");
    let new = parse(&new);
    let old = old_document(set);
    assert_eq!(
        old.keys().collect::<Vec<_>>(),
        new.keys().collect::<Vec<_>>(),
        "{name}: testsuites"
    );
    for (suite, o) in &old {
        let n = &new[suite];
        assert_eq!(o.counts, n.counts, "{name}: {suite} counts");
        assert_eq!(o.properties, n.properties, "{name}: {suite} properties");
        assert_eq!(
            o.cases.keys().collect::<Vec<_>>(),
            n.cases.keys().collect::<Vec<_>>(),
            "{name}: {suite} testcases"
        );
        for (id, oc) in &o.cases {
            assert_eq!(oc, &n.cases[id], "{name}: {id}");
        }
    }
    old
}

/// Every results.json a GPU rig committed.
fn rig_results() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n == "results.json") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/rigs"),
        &mut out,
    );
    out.sort();
    out
}

#[test]
fn junit_of_the_rigs_results_is_the_junit_ci_read_before() {
    let sets = rig_results();
    assert!(sets.len() >= 10, "the rig records: {sets:?}");
    let (mut compared, mut tagged, mut waived) = (0, 0, 0);
    for p in &sets {
        let set = results::load(p).unwrap();
        let doc = assert_same_junit(&p.display().to_string(), &set);
        for c in doc.values().flat_map(|s| s.cases.values()) {
            compared += 1;
            tagged += c.properties.iter().filter(|(k, _)| k == "tag").count();
            waived += usize::from(
                c.message
                    .as_deref()
                    .is_some_and(|m| m.starts_with("waived (")),
            );
        }
    }
    // The rigs' sets carry what the comparison is about: waived failures and tagged passes.
    assert!(compared > 5000, "{compared} testcases");
    assert!(
        waived > 100 && tagged > 100,
        "{waived} waived, {tagged} tagged"
    );
}

/// Two fixture runs of the debug binary: every status, reruns and stale waivers in the first,
/// `--require gpu` (required-missing) and figures in the second. Each run's junit.xml is the
/// one quick-junit renders from its results.json alone, byte for byte.
#[test]
fn junit_of_a_fixture_run_is_the_junit_ci_read_before() {
    let d = tmp("junit-compat");
    let stale = d.path().join("stale-waivers.yaml");
    std::fs::write(
        &stale,
        "waivers:\n  - id: W-STALE-1\n    cases: \"selftest.basic.equal\"\n    \
         reason: listed although it passes\n    findings: ['.']\n",
    )
    .unwrap();
    let state = tmp("junit-compat-state");
    let one = d.path().join("one");
    let two = d.path().join("two");
    let suite = |n: &str| fixture(n).display().to_string();
    let runs: [(&Path, Vec<String>); 2] = [
        (
            &one,
            vec![
                "--suite".into(),
                suite("selftest.yaml"),
                "--suite".into(),
                suite("weak-controls.yaml"),
                "--suite".into(),
                suite("text.yaml"),
                "--suite".into(),
                suite("flaky.yaml"),
                "--waivers".into(),
                suite("text-waivers.yaml"),
                "--waivers".into(),
                stale.display().to_string(),
                "--rerun-failures".into(),
                "1".into(),
            ],
        ),
        (
            &two,
            vec![
                "--suite".into(),
                suite("reports.yaml"),
                "--waivers".into(),
                suite("report-waivers.yaml"),
                "--require".into(),
                "gpu".into(),
            ],
        ),
    ];
    let mut seen = Vec::new();
    for (dir, args) in &runs {
        let junit = dir.join("junit.xml");
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend(["--toolchain", "system", "--junit", junit.to_str().unwrap()]);
        let o = gpucts_env(&a, &[("GPUCTS_SELFTEST_STATE", state.path())]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(101), "{out}\n{err}");
        let set = results::load(&dir.join("results.json")).unwrap();
        assert_eq!(
            std::fs::read_to_string(&junit).unwrap(),
            gpucts::report::junit::render(&set).unwrap(),
            "junit.xml is rendered from results.json"
        );
        let doc = assert_same_junit(&dir.display().to_string(), &set);
        seen.extend(doc.into_values().flat_map(|s| s.cases.into_values()));
    }
    // The comparison met every element the writers produce.
    let has = |f: &dyn Fn(&Case) -> bool| seen.iter().any(f);
    for ty in ["fail", "crash", "timeout", "required-capability"] {
        assert!(
            has(&|c| c.status == "failure" && c.ty.as_deref() == Some(ty)),
            "{ty}"
        );
    }
    assert!(has(&|c| c.status == "error"));
    assert!(has(
        &|c| c.status == "skipped" && c.message.as_deref().unwrap().starts_with("skip [gpu]")
    ));
    assert!(has(
        &|c| c.status == "skipped" && c.status_text.starts_with("attempt 1 (fail)")
    ));
    assert!(has(&|c| c.system_out.contains("stale waiver: W-STALE-1")));
    assert!(has(&|c| c
        .reruns
        .iter()
        .any(|r| r.element == "flakyFailure")));
    assert!(has(&|c| c
        .reruns
        .iter()
        .any(|r| r.element == "rerunFailure")));
    assert!(has(&|c| c.properties
        == [(
            "tag".to_string(),
            "control-without-weak-outcomes".to_string()
        )]));
}
