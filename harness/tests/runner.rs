//! End-to-end tests of the `gpucts` binary: suite errors, matrix expansion, filters, JUnit,
//! `--require`, waivers, crash and hang isolation, exit codes.
//!
//! Every run uses `--toolchain system` and fixture suites from `tests/fixtures/`, so nothing is
//! installed and no GPU is needed. The fixtures' outcomes are known by construction (an equality
//! of two literals, a signal the child raises, a sleep past the timeout).

mod common;

use common::{fixture, gpucts, text, tmp};
use std::path::Path;
use std::process::Output;

fn run_fixture(name: &str, extra: &[&str], junit: &Path) -> Output {
    common::run_fixture(name, junit, extra)
}

#[test]
fn duplicate_key_exits_2_naming_file_and_line() {
    let f = fixture("duplicate_key.yaml");
    let o = gpucts(&["validate", f.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    // The second `clause:` is on line 5.
    assert!(err.contains("duplicate_key.yaml:5:"), "{err}");
    assert!(err.to_lowercase().contains("duplicate"), "{err}");
}

#[test]
fn unknown_field_exits_2_with_position() {
    let f = fixture("unknown_field.yaml");
    let o = gpucts(&["validate", f.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("unknown_field.yaml:5:"), "{err}");
    assert!(err.contains("colour"), "{err}");
}

#[test]
fn bad_check_content_names_the_case() {
    let f = fixture("bad_check.yaml");
    let o = gpucts(&["validate", f.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    // The entry starts on line 6; the message names the case and the bad value.
    assert!(err.contains("bad_check.yaml:6:"), "{err}");
    assert!(err.contains("\"one\""), "{err}");
    assert!(err.contains("selftest.bad.one"), "{err}");
}

#[test]
fn duplicate_ids_after_expansion_are_rejected() {
    let f = fixture("duplicate_id.yaml");
    let o = gpucts(&["validate", f.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("duplicate case id `selftest.same.2`"), "{err}");
}

#[test]
fn a_broken_suite_stops_the_run_before_anything_runs() {
    let d = tmp("broken");
    let junit = d.path().join("junit.xml");
    let good = fixture("passing.yaml");
    let bad = fixture("unknown_field.yaml");
    let o = gpucts(&[
        "--suite",
        good.to_str().unwrap(),
        "--suite",
        bad.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(!out.contains("test selftest.ok.equal"), "{out}");
    assert!(!junit.exists());
}

#[test]
fn matrix_expansion_and_list() {
    let f = fixture("selftest.yaml");
    let o = gpucts(&["--suite", f.to_str().unwrap(), "--list", "matrix"]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0));
    let ids: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    // 2 x 3 combinations minus the excluded y_2.
    assert_eq!(ids.len(), 5, "{out}");
    assert!(ids.contains(&"selftest.matrix.x_2"));
    assert!(!ids.contains(&"selftest.matrix.y_2"));
}

#[test]
fn crash_hang_fail_skip_are_reported_and_the_run_goes_on() {
    let d = tmp("full");
    let junit = d.path().join("junit.xml");
    let o = run_fixture("selftest.yaml", &[], &junit);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(101), "{out}\n{err}");
    for id in [
        "selftest.basic.equal",
        "selftest.isolated.child_equal",
        "selftest.matrix.y_1",
    ] {
        // libtest's pretty line: `test <id, padded> ... ok`.
        let passed = out.lines().any(|l| {
            l.strip_prefix("test ")
                .and_then(|r| r.split_once(" ... "))
                .is_some_and(|(name, status)| name.trim_end() == id && status == "ok")
        });
        assert!(passed, "{id} did not pass:\n{out}");
    }
    let xml = std::fs::read_to_string(&junit).unwrap();
    // Every case reached the report: 7 plain + 5 expanded.
    assert_eq!(xml.matches("<testcase ").count(), 12, "{xml}");
    assert!(xml.contains("killed by SIGSEGV"), "{xml}");
    assert!(xml.contains("timeout after 1.0s"), "{xml}");
    assert!(xml.contains("expected: 4"), "{xml}");
    assert!(xml.contains("observed: 8"), "{xml}");
    assert!(xml.contains("the check panicked"), "{xml}");
    // The skip names the capability and why.
    assert_eq!(
        xml.matches(r#"<skipped message="skip [gpu]: no GPU"#)
            .count(),
        1,
        "{xml}"
    );
    // Environment fingerprint as testsuite properties.
    assert!(xml.contains(r#"<property name="os""#), "{xml}");
    assert!(
        out.contains("gpucts: 7 passed, 4 failed, 1 skipped"),
        "{out}"
    );
    // The child's own output is kept with the crash.
    assert!(xml.contains("about to raise signal 11"), "{xml}");
}

#[test]
fn require_turns_a_skip_into_exit_101() {
    let d = tmp("require");
    let junit = d.path().join("junit.xml");
    let o = run_fixture("passing.yaml", &[], &junit);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = run_fixture("passing.yaml", &["--require", "gpu"], &junit);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(101), "{out}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("required-capability"), "{xml}");
    // A family that does not cover the skipped capability changes nothing.
    let o = run_fixture("passing.yaml", &["--require", "toolchain"], &junit);
    assert_eq!(o.status.code(), Some(0));
    let o = run_fixture("passing.yaml", &["--require", "warp-drive"], &junit);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn waivers_waive_failures_and_report_stale_ones() {
    let d = tmp("waivers");
    let junit = d.path().join("junit.xml");
    let o = run_fixture("failing.yaml", &[], &junit);
    assert_eq!(o.status.code(), Some(101));
    let w = fixture("waivers.yaml");
    let o = run_fixture("failing.yaml", &["--waivers", w.to_str().unwrap()], &junit);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("stale waiver: W-SELF-1 lists selftest.known.equal"),
        "{out}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("waived (W-SELF-1)"), "{xml}");
}

/// A waiver excuses the findings it names, not the case: the fixture's failure observes 2; a
/// waiver naming another finding leaves the case failed, and the failure says which finding
/// no waiver excuses.
#[test]
fn a_waiver_excuses_only_its_findings() {
    let d = tmp("waiver-findings");
    let junit = d.path().join("junit.xml");
    let w = d.path().join("other-finding.yaml");
    std::fs::write(
        &w,
        "waivers:\n  - id: W-OTHER\n    cases: \"selftest.known.unequal\"\n    reason: r\n    findings: ['^3$']\n",
    )
    .unwrap();
    let o = run_fixture(
        "failing.yaml",
        &["--waivers", w.to_str().unwrap(), "--no-default-waivers"],
        &junit,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(101), "{out}{err}");
    let results = std::fs::read_to_string(d.path().join("results.json")).unwrap();
    assert!(
        results.contains("waiver W-OTHER does not excuse 1 of these findings:\\n  2"),
        "{results}"
    );
}

#[test]
fn filters_exact_and_skip() {
    let d = tmp("filters");
    let junit = d.path().join("junit.xml");
    let o = run_fixture(
        "selftest.yaml",
        &["selftest.basic.equal", "--exact"],
        &junit,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 1, "{xml}");
    let o = run_fixture(
        "selftest.yaml",
        &["selftest.basic", "--skip", "unequal", "--skip", "panic"],
        &junit,
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<testcase ").count(), 1, "{xml}");
}

#[test]
fn probe_json_is_json() {
    let o = gpucts(&["probe", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("probe --json prints JSON");
    assert!(v["host"]["kernel"].is_string());
    assert!(v["capabilities"]["gpu"]["present"].is_boolean());
}

#[test]
fn unknown_suite_name_is_a_usage_error() {
    let o = gpucts(&["--suite", "no-such-suite"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("no suite named `no-such-suite`"), "{err}");
}
