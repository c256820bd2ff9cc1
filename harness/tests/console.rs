//! End-to-end tests of what a run prints and writes, with expectations taken from the issues
//! (17: console, JSON stream, filters, timings, progress; 10 item 3: report paths and JUnit
//! that stays XML whatever a case's text), on fixture suites whose outcomes are known by
//! construction (tests/fixtures/text.yaml, batch.yaml, reports.yaml).

mod common;

use common::{fixture, gpucts, text, tmp};
use std::path::Path;
use std::process::{Command, Output};

/// Run a fixture suite with `extra` arguments, reports into `dir`.
fn run(suite: &str, dir: &Path, extra: &[&str]) -> Output {
    common::run_fixture(suite, &dir.join("junit.xml"), extra)
}

fn text_waivers() -> String {
    fixture("text-waivers.yaml").display().to_string()
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Issue 17 item 1: `--format json` carries what the pretty and JUnit outputs carry — the
/// missing capability, the skip reason, the waiver id and reason, the verdict, the duration,
/// the figures — and stdout is nothing but JSON events.
#[test]
fn json_stream_carries_every_reason() {
    let d = tmp("json");
    let w = text_waivers();
    let o = run(
        "text.yaml",
        d.path(),
        &["--waivers", &w, "--format", "json"],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(101), "{out}\n{err}");
    let events: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let done = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == name && e["event"] != "started")
            .unwrap_or_else(|| panic!("no event for {name} in {out}"))
            .clone()
    };
    let skip = done("selftest.text.needs_gpu");
    assert_eq!(skip["event"], "ignored");
    assert_eq!(skip["verdict"], "skip");
    assert_eq!(skip["capability"], "gpu");
    assert!(
        skip["reason"].as_str().unwrap().starts_with("no GPU"),
        "{skip}"
    );
    assert!(skip["exec_time"].is_number());
    let waived = done("selftest.text.waived");
    assert_eq!(waived["event"], "ignored");
    assert_eq!(waived["verdict"], "waived");
    assert_eq!(waived["waiver"], "W-TEXT-1");
    assert!(
        waived["waiver_reason"]
            .as_str()
            .unwrap()
            .contains("A second sentence"),
        "the whole reason: {waived}"
    );
    assert_eq!(waived["observed"], "2 \u{1b} ]]>", "the failure it waives");
    let fail = done("selftest.text.controls");
    assert_eq!(fail["event"], "failed");
    assert_eq!(fail["verdict"], "fail");
    assert_eq!(fail["expected"], "a\u{0}b ]]> c");
    // libtest's closing event, then where the reports went.
    let suite = events
        .iter()
        .find(|e| e["type"] == "suite" && e["event"] == "failed");
    let suite = suite.expect("suite event");
    assert_eq!(suite["ignored"], 2);
    assert_eq!(suite["tally"]["waived"], 1);
    assert_eq!(suite["tally"]["skipped"], 1);
    let report = events.last().unwrap();
    assert_eq!(report["type"], "report");
    for key in ["junit", "results", "html"] {
        let p = report[key].as_str().unwrap();
        assert!(Path::new(p).is_file(), "{key}: {p}");
    }

    // Figures, as the reports carry them.
    let d = tmp("json-figures");
    let o = run("reports.yaml", d.path(), &["--format", "json"]);
    let (out, _) = text(&o);
    let figures: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["name"] == "selftest.report.figures" && e["event"] == "ok")
        .collect();
    assert_eq!(figures.len(), 1, "{out}");
    let kinds: Vec<&str> = figures[0]["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["scalar", "series", "histogram"]);
}

/// Issue 17 item 2: one short line per case (capability + short reason, waiver id), detail in
/// the reports; the closing lines name junit.xml and results.json and say how libtest's
/// "ignored" relates to skipped and waived.
#[test]
fn console_has_one_short_line_per_case_and_names_both_reports() {
    let d = tmp("console");
    let w = text_waivers();
    let o = run("text.yaml", d.path(), &["--waivers", &w]);
    let (out, err) = text(&o);
    for line in out.lines() {
        assert!(line.chars().count() <= 200, "long line: {line}");
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{7}'),
            "raw control character: {line:?}"
        );
    }
    for id in [
        "selftest.text.controls",
        "selftest.text.waived",
        "selftest.text.needs_gpu",
    ] {
        let n = out
            .lines()
            .filter(|l| l.starts_with(&format!("test {id} ")))
            .count();
        assert_eq!(n, 1, "one line for {id}:\n{out}");
    }
    let skip = out
        .lines()
        .find(|l| l.starts_with("test selftest.text.needs_gpu"))
        .unwrap();
    assert!(skip.contains("skip [gpu]"), "{skip}");
    assert_eq!(skip.matches("libcuda").count(), 1, "{skip}");
    let waived = out
        .lines()
        .find(|l| l.starts_with("test selftest.text.waived"))
        .unwrap();
    assert!(waived.contains("W-TEXT-1"), "{waived}");
    assert!(!waived.contains("second sentence"), "{waived}");
    // The closing lines name both reports at the paths asked for (their wording and paths:
    // tests/snapshots/cli_snapshots__pretty.snap); the files are there.
    let junit = d.path().join("junit.xml");
    let results = d.path().join("results.json");
    assert!(results.is_file() && junit.is_file());
    // libtest says 2 ignored; gpucts says 1 skipped and 1 waived, and says they add up.
    assert!(out.contains("2 ignored"), "{out}");
    let last = out.lines().last().unwrap();
    assert!(
        last.starts_with("gpucts: 0 passed, 1 failed, 1 skipped, 1 waived"),
        "{last}\n{err}"
    );
    assert!(last.contains("2 ignored = skipped + waived"), "{last}");
}

/// Issue 17 item 6: a filtered run computes only the selected cases' batch members.
/// batch.yaml's batch takes 500 ms per member it computes.
#[test]
fn a_filtered_run_computes_only_its_batch_members() {
    let all = tmp("batch-all");
    let o = run("batch.yaml", all.path(), &["--jobs", "2"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let one = tmp("batch-one");
    let o = run("batch.yaml", one.path(), &["selftest.batch.a.one"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let all = read_json(&all.path().join("results.json"));
    let one = read_json(&one.path().join("results.json"));
    let note = |r: &serde_json::Value, i: usize| r["cases"][i]["status"]["note"].clone();
    assert_eq!(all["cases"].as_array().unwrap().len(), 4);
    assert_eq!(note(&all, 0), "batch a: 4 member(s) computed");
    assert_eq!(one["cases"].as_array().unwrap().len(), 1);
    assert_eq!(note(&one, 0), "batch a: 1 member(s) computed");
    let wall = |r: &serde_json::Value| r["run"]["wall_s"].as_f64().unwrap();
    assert!(wall(&all) >= 2.0, "4 members x 500 ms: {}", wall(&all));
    assert!(
        wall(&one) < wall(&all) / 2.0,
        "one of four members takes a fraction: {} vs {}",
        wall(&one),
        wall(&all)
    );
}

/// Issue 17 item 7: a batch's time is charged once (spread over the cases that used it), so
/// the cases' durations add up to the run's wall time (within 10%), in results.json and in
/// JUnit, even when several cases waited for the batch at once.
#[test]
fn batch_time_is_charged_once() {
    let d = tmp("batch-time");
    let o = run("batch.yaml", d.path(), &["--jobs", "4"]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let r = read_json(&d.path().join("results.json"));
    let wall = r["run"]["wall_s"].as_f64().unwrap();
    let sum: f64 = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["duration_s"].as_f64().unwrap())
        .sum();
    assert!(
        (sum - wall).abs() <= 0.1 * wall,
        "sum of durations {sum} vs wall {wall}"
    );
    let xml = std::fs::read_to_string(d.path().join("junit.xml")).unwrap();
    let times: f64 = xml
        .split("<testcase ")
        .skip(1)
        .filter_map(|t| {
            let v = t.split("time=\"").nth(1)?.split('"').next()?;
            v.parse::<f64>().ok()
        })
        .sum();
    assert!(
        (times - wall).abs() <= 0.1 * wall,
        "JUnit times {times} vs wall {wall}"
    );
}

/// Issue 17 item 8: progress (done/total, rate, ETA) on a terminal, nothing extra otherwise.
#[test]
fn progress_only_on_a_terminal() {
    let d = tmp("progress-pipe");
    let o = run("batch.yaml", d.path(), &[]);
    let (out, err) = text(&o);
    for s in [&out, &err] {
        assert!(!s.contains("ETA"), "progress without a terminal: {s}");
        assert!(!s.contains("cases,"), "progress without a terminal: {s}");
    }
    // On a pseudo-terminal (util-linux `script`), the bar shows done/total and an ETA.
    let Some(script) = ["/usr/bin/script", "/bin/script"]
        .into_iter()
        .find(|p| Path::new(p).exists())
    else {
        gpucts::require!(false, "script, util-linux");
        return;
    };
    let d = tmp("progress-tty");
    let cmd = format!(
        "'{}' --suite '{}' --toolchain system --jobs 1 --junit '{}'",
        env!("CARGO_BIN_EXE_gpucts"),
        fixture("batch.yaml").display(),
        d.path().join("junit.xml").display()
    );
    let log = d.path().join("tty.log");
    let o = Command::new(script)
        .args(["-qec", &cmd, log.to_str().unwrap()])
        .env(
            "GPUCTS_ROOT",
            Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(),
        )
        .output()
        .unwrap();
    let tty = String::from_utf8_lossy(&o.stdout);
    assert!(tty.contains("/4 cases"), "done/total on a terminal: {tty}");
    assert!(tty.contains("ETA"), "ETA on a terminal: {tty}");
    assert!(tty.contains("gpucts: 4 passed"), "{tty}");
}

/// Issue 10 item 3: report paths are checked before anything runs: exit 2 with the path and
/// the OS error.
#[test]
fn unwritable_report_paths_stop_the_run_before_it_starts() {
    let d = tmp("paths");
    // A file where a directory must be.
    let file = d.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let junit = file.join("junit.xml");
    let suite = fixture("batch.yaml");
    let o = gpucts(&[
        "--suite",
        suite.to_str().unwrap(),
        "--toolchain",
        "system",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(err.contains(&file.display().to_string()), "{err}");
    assert!(
        err.contains("File exists (os error 17)"),
        "the OS error: {err}"
    );
    assert!(!out.contains("test selftest"), "nothing ran: {out}");
    // results.json beside junit.xml cannot be written (a directory is in its place).
    let dir = d.path().join("reports");
    std::fs::create_dir_all(dir.join("results.json")).unwrap();
    let o = run("batch.yaml", &dir, &[]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains(&dir.join("results.json").display().to_string()),
        "{err}"
    );
    assert!(err.contains("Is a directory"), "the OS error: {err}");
    assert!(!out.contains("test selftest"), "nothing ran: {out}");
}

/// Issue 10 item 3: control characters and `]]>` in a clause, a failure's text or a waiver's
/// reason still give well-formed JUnit XML (read back with an XML parser), and the text is
/// kept in a visible form.
#[test]
fn junit_stays_xml_whatever_the_text() {
    let d = tmp("xml");
    let w = text_waivers();
    let o = run("text.yaml", d.path(), &["--waivers", &w]);
    assert_eq!(o.status.code(), Some(101), "{:?}", text(&o));
    let xml = std::fs::read_to_string(d.path().join("junit.xml")).unwrap();
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut texts = String::new();
    let mut attrs = String::new();
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::CData(c)) => {
                texts.push_str(&String::from_utf8_lossy(&c.into_inner()))
            }
            Ok(quick_xml::events::Event::Text(t)) => {
                texts.push_str(&t.unescape().expect("valid escapes"))
            }
            Ok(quick_xml::events::Event::Start(e)) | Ok(quick_xml::events::Event::Empty(e)) => {
                for a in e.attributes() {
                    let a = a.expect("well-formed attribute");
                    attrs.push_str(&a.unescape_value().expect("valid escapes"));
                    attrs.push('\n');
                }
            }
            Ok(_) => {}
            Err(e) => panic!(
                "junit.xml is not XML at {}: {e}\n{xml}",
                reader.buffer_position()
            ),
        }
    }
    // XML 1.0 allows no control characters but tab, newline and carriage return.
    for c in xml.chars() {
        assert!(
            !c.is_control() || matches!(c, '\t' | '\n' | '\r'),
            "control character {:?} in junit.xml",
            c
        );
    }
    assert!(texts.contains("ptx-interop 13.2 §1.1"), "{texts}");
    assert!(attrs.contains("expected: a"), "{attrs}");
    assert!(attrs.contains("W-TEXT-1"), "{attrs}");
    // results.json keeps the exact text.
    let r = read_json(&d.path().join("results.json"));
    let c = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "selftest.text.controls")
        .unwrap();
    assert_eq!(
        c["status"]["observed"],
        "bell\u{7} esc\u{1b}[0m \u{c} ]]>]]>"
    );
}
