//! End-to-end: forbidden litmus passes whose relaxed control showed no weak outcome (issue 28
//! item 5), through the binary without a GPU. tests/fixtures/weak-controls.yaml replays
//! outcome counts through the GPU cases' own judge; which controls showed their weak outcome
//! is known by construction (MP's weak outcome (1, 0) is absent from two controls' counts, one
//! judged in an isolated child), so two of the four passes carry the tag.

mod common;

use common::{gpucts, run_fixture, text, tmp};
use std::path::Path;
use std::process::Output;

const TAG: &str = "control-without-weak-outcomes";
const QUIET: [&str; 2] = [
    "selftest.litmus.quiet_control",
    "selftest.litmus.quiet_control_in_child",
];

fn run(dir: &Path, extra: &[&str]) -> Output {
    run_fixture("weak-controls.yaml", &dir.join("junit.xml"), extra)
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn tags_of(results: &serde_json::Value) -> Vec<(String, Vec<String>)> {
    let mut v: Vec<(String, Vec<String>)> = results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let tags = c["status"]["tags"]
                .as_array()
                .map(|t| t.iter().map(|x| x.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            (c["id"].as_str().unwrap().to_string(), tags)
        })
        .collect();
    v.sort();
    v
}

fn expected_tags() -> Vec<(String, Vec<String>)> {
    let mut v: Vec<(String, Vec<String>)> = [
        "selftest.litmus.allowed_no_control",
        "selftest.litmus.busy_control",
        QUIET[0],
        QUIET[1],
    ]
    .iter()
    .map(|id| {
        let tags = if QUIET.contains(id) {
            vec![TAG.to_string()]
        } else {
            Vec::new()
        };
        (id.to_string(), tags)
    })
    .collect();
    v.sort();
    v
}

#[test]
fn a_pass_on_a_control_without_weak_outcomes_is_tagged_everywhere() {
    let d = tmp("weak-controls");
    let o = run(d.path(), &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    // The tally line comes right after the usual one; the teeth lines end the run:
    // busy_control is the one inter_cta test whose control showed weak outcomes, the
    // two quiet controls are intra_cta.
    let lines: Vec<&str> = out.lines().collect();
    let n = lines.len();
    assert_eq!(
        lines[n - 4..],
        [
            "gpucts: 4 passed, 0 failed, 0 skipped",
            "4 passed, 2 of them with a control that showed no weak outcome",
            "forbidden litmus passes evidenced by a control that showed weak outcomes: inter_cta 1",
            "forbidden litmus passes whose control showed no weak outcome \
             (the stress could not have caught a violation; not evidence): intra_cta 2",
        ],
        "{out}"
    );
    // results.json: the tag on the two quiet controls' passes, also from the child.
    let r = read_json(&d.path().join("results.json"));
    assert_eq!(tags_of(&r), expected_tags());
    for c in r["cases"].as_array().unwrap() {
        assert_eq!(c["verdict"], "pass", "{c}");
    }
    // JUnit: one tag property per quiet case.
    let xml = std::fs::read_to_string(d.path().join("junit.xml")).unwrap();
    assert_eq!(
        xml.matches(&format!(r#"<property name="tag" value="{TAG}"/>"#))
            .count(),
        2,
        "{xml}"
    );
    // The HTML report's summary says it.
    let html = std::fs::read_to_string(d.path().join("report.html")).unwrap();
    assert!(
        html.contains("4 passed, 2 of them with a control that showed no weak outcome"),
        "{html}"
    );

    // `gpucts merge` keeps the tags.
    let a = d.path().join("node-a");
    let b = d.path().join("node-b");
    for n in [&a, &b] {
        std::fs::create_dir_all(n).unwrap();
        std::fs::copy(d.path().join("results.json"), n.join("results.json")).unwrap();
    }
    let merged = d.path().join("merged");
    let o = gpucts(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let m = read_json(&merged.join("results.json"));
    let tagged = m["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"]["tags"] == serde_json::json!([TAG]))
        .count();
    assert_eq!(tagged, 2 * 2, "two quiet cases on each of two nodes");
}

#[test]
fn require_weak_controls_fails_them_naming_the_control() {
    let d = tmp("require-weak-controls");
    let o = run(d.path(), &["--require-weak-controls"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(101), "{out}{err}");
    assert!(
        out.contains("gpucts: 2 passed, 2 failed, 0 skipped"),
        "{out}"
    );
    assert!(!out.contains("of them with a control"), "{out}");
    let r = read_json(&d.path().join("results.json"));
    assert_eq!(r["run"]["require_weak_controls"], true);
    for c in r["cases"].as_array().unwrap() {
        let quiet = QUIET.contains(&c["id"].as_str().unwrap());
        assert_eq!(c["verdict"], if quiet { "fail" } else { "pass" }, "{c}");
        if quiet {
            // The control's instances are the sum of its counts in the fixture: 100.
            assert_eq!(
                c["status"]["observed"],
                "control MP.relaxed.cta.intra_cta showed no weak outcome in 100 instances",
                "{c}"
            );
        }
    }
    let xml = std::fs::read_to_string(d.path().join("junit.xml")).unwrap();
    assert_eq!(xml.matches("<failure").count(), 2, "{xml}");
}
