//! Snapshots of what a run prints (insta): libtest's pretty, terse and JSON layouts and the
//! closing lines, for a fixed run of the fixture suites (selftest.yaml, weak-controls.yaml,
//! text.yaml with text-waivers.yaml; flaky.yaml with `--rerun-failures`), one job so the order
//! is fixed. CI scripts parse these lines; a snapshot that changes is a format change.
//!
//! The snapshots pin the format, not the semantics: what each line must say is asserted from
//! the issues' contracts in tests/console.rs, tests/runner.rs and tests/reports.rs.
//!
//! Volatile parts are redacted before comparing: durations (`finished in [TIME]s`,
//! `"exec_time":[TIME]`), the report directory (`[DIR]`) and the reason the GPU is missing
//! (`[NO GPU]`, which depends on the machine's driver). The fixtures' GPU cases skip, so these
//! snapshots hold on machines without a GPU (CI, a developer's machine).
//!
//! Blessing a changed snapshot, after reviewing every changed line against the contracts:
//! `INSTA_UPDATE=always cargo test --test cli_snapshots` rewrites the `.snap` files under
//! harness/tests/snapshots/ (or, with cargo-insta installed, `cargo insta test` then
//! `cargo insta review` / `cargo insta accept`); review the diff before committing. CI
//! (`CI=true`) never writes snapshots: a difference fails.

mod common;

use std::path::Path;

use common::{fixture, gpucts_env, text, tmp};

/// Run the fixture suites with `--format FORMAT --jobs 1` and `extra`, reports into `dir`.
fn run(dir: &Path, suites: &[&str], extra: &[&str]) -> (String, String) {
    let junit = dir.join("junit.xml");
    let mut args: Vec<String> = Vec::new();
    for s in suites {
        args.push("--suite".into());
        args.push(fixture(s).display().to_string());
    }
    for a in [
        "--toolchain",
        "system",
        "--jobs",
        "1",
        "--junit",
        junit.to_str().unwrap(),
    ] {
        args.push(a.into());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let state = tmp("snapshot-state");
    let o = gpucts_env(
        &args,
        &[
            ("GPUCTS_SELFTEST_STATE", state.path()),
            ("RUST_BACKTRACE", Path::new("0")),
        ],
    );
    let (out, err) = text(&o);
    (redact(&out, dir), redact(&err, dir))
}

/// The text with its volatile parts replaced (see the file's comment).
fn redact(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "[DIR]");
    let rules = [
        (r"finished in [0-9]+\.[0-9]+s", "finished in [TIME]s"),
        (r#""exec_time":[0-9.e+-]+"#, r#""exec_time":[TIME]"#),
        // The console's short reason, and the JSON stream's whole reason and message.
        (r"skip \[gpu\]: no GPU[^)\n]*", "skip [gpu]: [NO GPU]"),
        (r#""reason":"no GPU[^"]*""#, r#""reason":"[NO GPU]""#),
    ];
    let mut text = text;
    for (pattern, with) in rules {
        text = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&text, with)
            .into_owned();
    }
    text
}

/// The closing lines on stderr (JSON mode prints them there): from the first report line on.
fn closing_on_stderr(err: &str) -> String {
    let lines: Vec<&str> = err.lines().collect();
    let from = lines
        .iter()
        .position(|l| l.starts_with("JUnit report: "))
        .unwrap_or(lines.len());
    lines[from..].join("\n")
}

const SUITES: [&str; 3] = ["selftest.yaml", "weak-controls.yaml", "text.yaml"];

fn waivers() -> String {
    fixture("text-waivers.yaml").display().to_string()
}

#[test]
fn pretty_layout_and_closing_lines() {
    let d = tmp("snapshot-pretty");
    let (out, _) = run(d.path(), &SUITES, &["--waivers", &waivers()]);
    insta::assert_snapshot!("pretty", out);
}

#[test]
fn terse_layout_and_closing_lines() {
    let d = tmp("snapshot-terse");
    let (out, _) = run(
        d.path(),
        &SUITES,
        &["--waivers", &waivers(), "--format", "terse"],
    );
    insta::assert_snapshot!("terse", out);
}

#[test]
fn json_stream_and_closing_lines() {
    let d = tmp("snapshot-json");
    let (out, err) = run(
        d.path(),
        &SUITES,
        &["--waivers", &waivers(), "--format", "json"],
    );
    insta::assert_snapshot!("json", out);
    insta::assert_snapshot!("json_closing_on_stderr", closing_on_stderr(&err));
}

/// The tally with flaky cases and a stale waiver (`, N flaky (libtest's …)`, `stale waiver:`).
#[test]
fn pretty_closing_lines_with_reruns_and_a_stale_waiver() {
    let d = tmp("snapshot-rerun");
    let stale = d.path().join("stale.yaml");
    std::fs::write(
        &stale,
        "waivers:\n  - id: W-STALE-1\n    cases: \"selftest.basic.equal\"\n    \
         reason: listed although it passes\n    findings: ['.']\n",
    )
    .unwrap();
    let (out, _) = run(
        d.path(),
        &["flaky.yaml", "selftest.yaml"],
        &[
            "--skip",
            "selftest.isolated",
            "--skip",
            "selftest.basic.panic",
            "--skip",
            "selftest.basic.unequal",
            "--skip",
            "selftest.matrix",
            "--skip",
            "selftest.caps",
            "--waivers",
            stale.to_str().unwrap(),
            "--rerun-failures",
            "1",
        ],
    );
    insta::assert_snapshot!("pretty_rerun", out);
}
