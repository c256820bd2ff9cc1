//! End-to-end tests of the report commands: the HTML report a run writes and `gpucts report`,
//! `gpucts diff`, `gpucts bundle` (`keygen`, `verify`), `gpucts merge` and
//! `--rerun-failures`, on fixture suites whose outcomes are known by construction
//! (tests/fixtures/reports.yaml, flaky.yaml), and the report in a real browser.

mod common;

use common::{fixture, gpucts, gpucts_env, text, tmp};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run reports.yaml into `dir` (junit.xml, results.json, report.html).
fn run_reports(dir: &Path) -> Output {
    let junit = dir.join("junit.xml");
    let suite = fixture("reports.yaml");
    gpucts(&[
        "--suite",
        suite.to_str().unwrap(),
        "--toolchain",
        "system",
        "--junit",
        junit.to_str().unwrap(),
    ])
}

fn read_json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write_json(p: &Path, v: &serde_json::Value) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn case_mut<'a>(v: &'a mut serde_json::Value, id: &str) -> &'a mut serde_json::Value {
    v["cases"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| c["id"] == id)
        .unwrap()
}

#[test]
fn a_run_writes_results_and_a_self_contained_html_report() {
    let d = tmp("html");
    let o = run_reports(d.path());
    let (out, err) = text(&o);
    // One failure by construction (4 != 8), one GPU skip, three passes.
    assert_eq!(o.status.code(), Some(101), "{out}{err}");
    assert!(
        out.contains("gpucts: 3 passed, 1 failed, 1 skipped"),
        "{out}"
    );
    // The closing line naming report.html: tests/snapshots/cli_snapshots__pretty.snap.
    let r = read_json(&d.path().join("results.json"));
    assert_eq!(r["schema_version"], 2);
    assert!(r["probe"]["host"]["kernel"].is_string(), "probe recorded");
    let suites = r["run"]["suites"].as_array().unwrap();
    assert_eq!(suites[0]["path"], "harness/tests/fixtures/reports.yaml");
    assert_eq!(suites[0]["sha256"].as_str().unwrap().len(), 64);
    // samples [10, 30, 20]: min 10, median 20, max 30.
    let figs = r["figures"]["selftest.report.figures"].as_array().unwrap();
    assert_eq!(figs.len(), 3);
    assert_eq!(
        (&figs[0]["min"], &figs[0]["median"], &figs[0]["max"]),
        (&10.0.into(), &20.0.into(), &30.0.into())
    );
    // Recorded in an isolated child, carried to the parent: samples [7, 5], median 6.
    let child = &r["figures"]["selftest.report.child_figures"][0];
    assert_eq!(
        (&child["min"], &child["median"]),
        (&5.0.into(), &6.0.into())
    );

    let html = std::fs::read_to_string(d.path().join("report.html")).unwrap();
    for section in [
        r#"id="machine""#,
        r#"id="suites""#,
        r#"id="coverage""#,
        r#"id="failures""#,
        r#"id="waivers""#,
        r#"id="figures""#,
    ] {
        assert!(html.contains(section), "missing {section}");
    }
    assert!(html.contains("ptx-interop 13.2 §2.3"));
    assert!(html.contains("gpudirect-rdma §3.5"));
    assert!(html.contains("selftest.report.fail"));
    // Curves are plotted; histograms are HTML bars and numbers table rows, each case's
    // figures folded under one line.
    let series = figs.iter().filter(|f| f["kind"] == "series").count();
    assert_eq!(html.matches("<svg").count(), series);
    assert_eq!(
        html.matches("<details class=\"case-figures\"").count(),
        r["figures"].as_object().unwrap().len()
    );
    // Self-contained: nothing fetched, no scripts.
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
}

#[test]
fn report_command_renders_and_refuses_bad_results() {
    let d = tmp("report");
    run_reports(d.path());
    let out = d.path().join("again.html");
    let o = gpucts(&[
        "report",
        d.path().to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    assert!(std::fs::read_to_string(&out)
        .unwrap()
        .contains("selftest.report.fail"));

    // Another schema version: exit 2 naming the version.
    let mut v = read_json(&d.path().join("results.json"));
    v["schema_version"] = 99.into();
    let other = d.path().join("v99/results.json");
    write_json(&other, &v);
    let o = gpucts(&["report", other.parent().unwrap().to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("schema_version 99"), "{err}");

    // Truncated: exit 2 with file:line:column.
    let full = std::fs::read_to_string(d.path().join("results.json")).unwrap();
    let cut = d.path().join("cut/results.json");
    std::fs::create_dir_all(cut.parent().unwrap()).unwrap();
    std::fs::write(&cut, &full[..full.len() / 3]).unwrap();
    let o = gpucts(&["report", cut.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cut/results.json:"), "{err}");
    assert!(err.contains("EOF"), "{err}");
    let o = gpucts(&["report", "/nonexistent/dir"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn diff_finds_regressions_fixes_and_suite_changes() {
    let d = tmp("diff");
    let base = d.path().join("base");
    run_reports(&base);
    let v = read_json(&base.join("results.json"));

    // Same results: no findings, exit 0.
    let o = gpucts(&["diff", base.to_str().unwrap(), base.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));

    // New: the pass now fails, the failure is fixed, the GPU case now runs.
    let mut n = v.clone();
    *case_mut(&mut n, "selftest.report.pass") = {
        let mut c = case_mut(&mut n, "selftest.report.pass").clone();
        c["verdict"] = "fail".into();
        c["status"] = serde_json::json!({"status": "fail", "expected": "2", "observed": "3"});
        c
    };
    let c = case_mut(&mut n, "selftest.report.fail");
    c["verdict"] = "pass".into();
    c["status"] = serde_json::json!({"status": "pass"});
    // The rate (better: higher) drops from 10..30 to 1..3: beyond its noise.
    let f = &mut n["figures"]["selftest.report.figures"][0];
    f["min"] = 1.0.into();
    f["median"] = 2.0.into();
    f["max"] = 3.0.into();
    let new = d.path().join("new");
    write_json(&new.join("results.json"), &n);
    let o = gpucts(&["diff", base.to_str().unwrap(), new.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(
        out.contains("new failure       selftest.report.pass"),
        "{out}"
    );
    assert!(
        out.contains("fixed             selftest.report.fail"),
        "{out}"
    );
    assert!(
        out.contains("figure regressed  selftest.report.figures: rate"),
        "{out}"
    );
    assert!(out.contains("; regression"), "{out}");
    let o = gpucts(&[
        "diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
    ]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["regression"], true);
    assert_eq!(j["counts"]["new_failure"], 1);
    assert_eq!(j["counts"]["fixed"], 1);
    // The HTML report carries the same diff.
    let page = d.path().join("with-diff.html");
    let o = gpucts(&[
        "report",
        new.to_str().unwrap(),
        "--baseline",
        base.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(r#"id="diff""#) && html.contains("<b>regression</b>"));
    assert!(
        html.contains("<td>new_failure</td><td>selftest.report.pass</td>"),
        "{html}"
    );

    // A different suite set: a finding, not an error, and not a regression.
    let mut other = v.clone();
    other["cases"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
        "id": "dwarf.x", "area": "dwarf", "clause": "c", "status": {"status": "pass"},
        "verdict": "pass"}));
    let added = d.path().join("added");
    write_json(&added.join("results.json"), &other);
    let o = gpucts(&["diff", base.to_str().unwrap(), added.to_str().unwrap()]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("suite added       dwarf"), "{out}");

    // Unreadable side: exit 2.
    let o = gpucts(&["diff", base.to_str().unwrap(), "/nonexistent"]);
    assert_eq!(o.status.code(), Some(2));
}

/// The committed H100 record of the GPU atomics run (312 cases, 3 figures each).
fn h100_atomics() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/rigs/h100-2026-11-24/atomics")
}

/// A copy of results `v` whose scalar figures and series points are multiplied by
/// `factor(case index, better)` (min, median and max alike, so the spread keeps its shape).
fn scaled(v: &serde_json::Value, factor: impl Fn(usize, Option<&str>) -> f64) -> serde_json::Value {
    let mut v = v.clone();
    let figures = v["figures"].as_object_mut().unwrap();
    for (i, figs) in figures.values_mut().enumerate() {
        for f in figs.as_array_mut().unwrap() {
            let k = factor(i, f["better"].as_str());
            let spreads: Vec<&mut serde_json::Value> = match f["kind"].as_str() {
                Some("scalar") => vec![f],
                Some("series") => f["points"].as_array_mut().unwrap().iter_mut().collect(),
                _ => vec![],
            };
            for s in spreads {
                for key in ["min", "median", "max"] {
                    s[key] = (s[key].as_f64().unwrap() * k).into();
                }
            }
        }
    }
    v
}

/// The figures of results `v` that have a worse direction (`better` set).
fn directed_figures(v: &serde_json::Value) -> usize {
    v["figures"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|f| f.as_array().unwrap())
        .filter(|f| f["kind"] == "scalar" && f["better"].is_string())
        .count()
}

fn diff_out(base: &Path, new: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["diff", base.to_str().unwrap(), new.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = gpucts(&args);
    let (out, err) = text(&o);
    (o.status.code(), format!("{out}{err}"))
}

/// Real run-to-run noise: three runs of the 468 atomics.gpu cases on one H200 (committed
/// record) diff clean against each other in every order with the default tolerance, and
/// against the H100 record the figures are not compared (another GPU), verdicts are.
#[test]
fn diff_of_three_runs_on_one_h200_is_clean() {
    let rig = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/rigs/h200-2026-11-26");
    let runs = ["atomics", "embedded-atomics", "atomics-run3"].map(|r| rig.join(r));
    for a in &runs {
        for b in &runs {
            if a == b {
                continue;
            }
            let (code, out) = diff_out(a, b, &[]);
            assert_eq!(code, Some(0), "{} -> {}: {out}", a.display(), b.display());
            assert!(!out.contains("machines differ"), "{out}");
        }
    }
    let (code, out) = diff_out(&h100_atomics(), &runs[0], &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("machines differ: ")),
        "{out}"
    );
}

/// A nightly compares tonight's run with its baseline: run-to-run noise within the
/// tolerance passes, a real drop fails, and figures from another GPU are not compared unless
/// asked for.
#[test]
fn diff_of_the_h100_record_flags_only_real_figure_regressions() {
    let base = h100_atomics();
    let v = read_json(&base.join("results.json"));
    let directed = directed_figures(&v);
    assert!(
        directed > 0,
        "the record has figures with a worse direction"
    );
    let gpu = v["fingerprint"]["gpu"].as_str().unwrap().to_string();
    assert!(v["fingerprint"]["driver"].is_string());
    let d = tmp("diff-h100");
    let write = |name: &str, v: &serde_json::Value| {
        let dir = d.path().join(name);
        write_json(&dir.join("results.json"), v);
        dir
    };
    let regressed = |out: &str| {
        out.lines()
            .filter(|l| l.starts_with("figure regressed"))
            .count()
    };

    // Every figure moved by 8 %, up for one case and down for the next: noise.
    let jitter = scaled(&v, |i, _| if i % 2 == 0 { 1.08 } else { 0.92 });
    let jittered = write("jittered", &jitter);
    let (code, out) = diff_out(&base, &jittered, &[]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(regressed(&out), 0, "{out}");
    assert!(!out.contains("machines differ"), "{out}");
    // A tolerance below the jitter: each directed figure that moved the worse way regresses.
    let worse = v["figures"]
        .as_object()
        .unwrap()
        .values()
        .enumerate()
        .flat_map(|(i, f)| f.as_array().unwrap().iter().map(move |f| (i, f)))
        .filter(|(i, f)| {
            f["kind"] == "scalar"
                && match f["better"].as_str() {
                    Some("higher") => i % 2 == 1,
                    Some("lower") => i % 2 == 0,
                    _ => false,
                }
        })
        .count();
    let (code, out) = diff_out(&base, &jittered, &["--tolerance", "5%"]);
    assert_eq!(code, Some(if worse > 0 { 1 } else { 0 }), "{out}");
    assert_eq!(regressed(&out), worse, "{out}");

    // Halved in the worse direction: every directed figure regresses.
    let half = |_: usize, better: Option<&str>| match better {
        Some("higher") => 0.5,
        Some("lower") => 2.0,
        _ => 1.0,
    };
    let halved_v = scaled(&v, half);
    let halved = write("halved", &halved_v);
    let (code, out) = diff_out(&base, &halved, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(regressed(&out), directed, "{out}");
    assert!(out.trim_end().ends_with("; regression"), "{out}");
    // ... unless the tolerance is wider than the drop.
    let (code, out) = diff_out(&base, &halved, &["--tolerance", "60"]);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = diff_out(&base, &halved, &["--tolerance", "-5%"]);
    assert_eq!(code, Some(2), "{out}");

    // The halved figures measured on another GPU: verdicts compared, figures not, one line
    // says why; --across-machines compares them.
    let mut other = halved_v.clone();
    let other_gpu = format!("{gpu} (another GPU, TEST DATA)");
    other["fingerprint"]["gpu"] = other_gpu.clone().into();
    let elsewhere = write("other-gpu", &other);
    let (code, out) = diff_out(&base, &elsewhere, &[]);
    assert_eq!(code, Some(0), "{out}");
    let lines: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("machines differ"))
        .collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(
        lines[0].contains(&gpu) && lines[0].contains(&other_gpu),
        "{out}"
    );
    assert!(lines[0].contains("figures not compared"), "{out}");
    assert_eq!(regressed(&out), 0, "{out}");
    let (code, out) = diff_out(&base, &elsewhere, &["--across-machines"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(regressed(&out), directed, "{out}");
    let (code, out) = diff_out(&base, &elsewhere, &["--json"]);
    assert_eq!(code, Some(0), "{out}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["regression"], false);
    assert_eq!(j["tolerance_pct"], 35.0);
    assert_eq!(j["machines"][0]["same"], false);
    assert_eq!(j["machines"][0]["figures_compared"], false);
    assert_eq!(j["machines"][0]["base"]["gpu"], gpu.as_str());
    assert_eq!(j["machines"][0]["new"]["gpu"], other_gpu.as_str());
    assert_eq!(j["findings"].as_array().unwrap().len(), 0);

    // Another driver on the same GPU is another machine too.
    let mut drv = halved_v.clone();
    drv["fingerprint"]["driver"] = "999.99 (TEST DATA)".into();
    let (code, out) = diff_out(&base, &write("other-driver", &drv), &[]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("machines differ"), "{out}");

    // A verdict regression counts whatever machine ran it.
    let first = v["cases"][0]["id"].as_str().unwrap().to_string();
    let c = case_mut(&mut other, &first);
    c["verdict"] = "fail".into();
    c["status"] = serde_json::json!({"status": "fail", "expected": "x", "observed": "y"});
    let (code, out) = diff_out(&base, &write("other-gpu-fail", &other), &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("new failure       {first}")), "{out}");
}

#[test]
fn rerun_failures_reports_flaky_not_pass() {
    let d = tmp("flaky");
    let state = tmp("flaky-state");
    let junit = d.path().join("junit.xml");
    let suite = fixture("flaky.yaml");
    let o = gpucts_env(
        &[
            "--suite",
            suite.to_str().unwrap(),
            "--toolchain",
            "system",
            "--junit",
            junit.to_str().unwrap(),
            "--rerun-failures",
            "2",
        ],
        &[("GPUCTS_SELFTEST_STATE", state.path())],
    );
    let (out, err) = text(&o);
    // fail_first fails once then passes: flaky. The other never passes: failed.
    assert_eq!(o.status.code(), Some(101), "{out}{err}");
    assert!(
        out.contains("gpucts: 0 passed, 1 failed, 0 skipped, 1 flaky"),
        "{out}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(xml.matches("<flakyFailure").count(), 1, "{xml}");
    // The always-failing case ran three times: two earlier failures recorded.
    assert_eq!(xml.matches("<rerunFailure").count(), 2, "{xml}");
    let r = read_json(&d.path().join("results.json"));
    let once = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "selftest.flaky.once")
        .unwrap();
    assert_eq!(once["verdict"], "flaky");
    assert_eq!(once["attempts"].as_array().unwrap().len(), 1);
    // Each rerun is an event: a console line, and a timestamped journal line before the
    // case's own (once: attempt 2; always: attempts 2 and 3).
    assert!(
        out.contains("rerun selftest.flaky.once: attempt 2 after "),
        "{out}"
    );
    let journal = std::fs::read_to_string(d.path().join("results.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut reruns: Vec<(String, u64)> = lines
        .iter()
        .filter(|l| l["type"] == "rerun")
        .map(|l| {
            assert!(l["at"].as_str().is_some_and(|t| t.ends_with('Z')), "{l}");
            assert_eq!(l["failed"]["status"], "fail", "{l}");
            (
                l["id"].as_str().unwrap().to_string(),
                l["attempt"].as_u64().unwrap(),
            )
        })
        .collect();
    reruns.sort();
    assert_eq!(
        reruns,
        [
            ("selftest.flaky.always".to_string(), 2),
            ("selftest.flaky.always".to_string(), 3),
            ("selftest.flaky.once".to_string(), 2),
        ]
    );
    let position = |ty: &str, id: &str| {
        lines
            .iter()
            .position(|l| l["type"] == ty && (l["id"] == id || l["result"]["id"] == id))
            .unwrap()
    };
    assert!(position("rerun", "selftest.flaky.once") < position("case", "selftest.flaky.once"));

    // Without --rerun-failures the same case is a plain failure.
    let state2 = tmp("flaky-state2");
    let o = gpucts_env(
        &[
            "--suite",
            suite.to_str().unwrap(),
            "--toolchain",
            "system",
            "--junit",
            junit.to_str().unwrap(),
        ],
        &[("GPUCTS_SELFTEST_STATE", state2.path())],
    );
    let (out, _) = text(&o);
    assert!(
        out.contains("gpucts: 0 passed, 2 failed, 0 skipped\n"),
        "{out}"
    );
}

fn rewrite_bundle(src: &Path, dst: &Path, mut edit: impl FnMut(&mut Vec<(String, Vec<u8>)>)) {
    use std::io::Read;
    let f = std::fs::File::open(src).unwrap();
    let mut ar = tar::Archive::new(zstd::stream::read::Decoder::new(f).unwrap());
    let mut entries = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().to_string_lossy().into_owned();
        let mut b = Vec::new();
        e.read_to_end(&mut b).unwrap();
        entries.push((name, b));
    }
    edit(&mut entries);
    let out = std::fs::File::create(dst).unwrap();
    let mut tb = tar::Builder::new(zstd::stream::write::Encoder::new(out, 3).unwrap());
    for (n, b) in &entries {
        let mut h = tar::Header::new_ustar();
        h.set_size(b.len() as u64);
        h.set_mode(0o644);
        tb.append_data(&mut h, n, b.as_slice()).unwrap();
    }
    tb.into_inner().unwrap().finish().unwrap();
}

#[test]
fn bundle_create_sign_verify_and_tampering() {
    let d = tmp("bundle");
    let run = d.path().join("run");
    run_reports(&run);
    let b = d.path().join("q.tar.zst");
    let key = d.path().join("k");
    let o = gpucts(&["bundle", "keygen", "-o", key.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let o = gpucts(&[
        "bundle",
        run.to_str().unwrap(),
        "-o",
        b.to_str().unwrap(),
        "--sign",
        d.path().join("k.key").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let pubkey = d.path().join("k.pub");
    let verify = |p: &Path, key: Option<&Path>| {
        let mut args = vec!["bundle", "verify", p.to_str().unwrap()];
        if let Some(k) = key {
            args.extend(["--key", k.to_str().unwrap()]);
        }
        let o = gpucts(&args);
        let (out, err) = text(&o);
        (o.status.code(), out + &err)
    };
    let (code, out) = verify(&b, Some(&pubkey));
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("intact"), "{out}");
    // The bundle holds the inputs the run recorded.
    let mut names = Vec::new();
    rewrite_bundle(&b, &d.path().join("copy.tar.zst"), |e| {
        names = e.iter().map(|x| x.0.clone()).collect()
    });
    for want in [
        "MANIFEST.sha256",
        "SIGNATURE.ed25519",
        "bundle.json",
        "probe.json",
        "results/results.json",
        "results/junit.xml",
        "results/report.html",
        "inputs/harness/tests/fixtures/reports.yaml",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    // diff reads bundles as well as directories.
    let o = gpucts(&["diff", b.to_str().unwrap(), run.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));

    // A changed file, a missing file, an extra file: exit 1 naming the file.
    let t = d.path().join("t.tar.zst");
    rewrite_bundle(&b, &t, |e| {
        for (n, b) in e.iter_mut() {
            if n == "results/junit.xml" {
                b.extend_from_slice(b"<!-- edited -->");
            }
        }
    });
    let (code, out) = verify(&t, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("results/junit.xml: sha256"), "{out}");
    rewrite_bundle(&b, &t, |e| e.retain(|x| x.0 != "probe.json"));
    let (code, out) = verify(&t, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("probe.json: listed in MANIFEST.sha256 but missing"),
        "{out}"
    );
    rewrite_bundle(&b, &t, |e| e.push(("extra.txt".into(), b"x".to_vec())));
    let (code, out) = verify(&t, None);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("extra.txt: extra file"), "{out}");

    // Another key: the signature does not verify.
    let other = d.path().join("other");
    gpucts(&["bundle", "keygen", "-o", other.to_str().unwrap()]);
    let (code, out) = verify(&b, Some(&d.path().join("other.pub")));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("SIGNATURE.ed25519"), "{out}");

    // Not a bundle at all: exit 2.
    let junk = d.path().join("junk.tar.zst");
    std::fs::write(&junk, b"not a bundle").unwrap();
    let (code, _) = verify(&junk, None);
    assert_eq!(code, Some(2));
}

#[test]
fn merge_builds_a_node_matrix_and_flags_the_odd_node() {
    let d = tmp("merge");
    let a = d.path().join("node-a");
    run_reports(&a);
    let mut v = read_json(&a.join("results.json"));
    // node-b fails where node-a passes; node-c agrees with node-a.
    let b = d.path().join("node-b");
    let c = d.path().join("node-c");
    write_json(&c.join("results.json"), &v);
    let case = case_mut(&mut v, "selftest.report.pass");
    case["verdict"] = "fail".into();
    case["status"] = serde_json::json!({"status": "fail", "expected": "2", "observed": "3"});
    write_json(&b.join("results.json"), &v);
    let out = d.path().join("merged");
    let o = gpucts(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        c.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let (so, se) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{so}{se}");
    assert!(so.contains("merged 3 nodes, 15 cases"), "{so}");
    let m = read_json(&out.join("results.json"));
    assert_eq!(m["nodes"].as_array().unwrap().len(), 3);
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#"id="fleet""#));
    assert!(html.contains("node-b <b>(outlier)</b>"), "node-b flagged");
    assert!(!html.contains("node-a <b>(outlier)</b>"));
    assert!(
        html.contains("verdict fail; the fleet&#x27;s is pass"),
        "outlier reason"
    );
    // A merged set can be diffed against a node's own and reported again.
    let o = gpucts(&["report", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    // Merging a merged set or a missing dir: exit 2.
    let o = gpucts(&[
        "merge",
        out.to_str().unwrap(),
        "-o",
        d.path().join("x").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn waivers_appear_with_their_reason_and_the_failure_as_evidence() {
    let d = tmp("waived");
    let junit = d.path().join("junit.xml");
    let suite = fixture("reports.yaml");
    let waivers = fixture("report-waivers.yaml");
    let o = gpucts(&[
        "--suite",
        suite.to_str().unwrap(),
        "--toolchain",
        "system",
        "--junit",
        junit.to_str().unwrap(),
        "--waivers",
        waivers.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let html = std::fs::read_to_string(d.path().join("report.html")).unwrap();
    let section = html.split(r#"id="waivers""#).nth(1).unwrap();
    let section = section.split("</section>").next().unwrap();
    assert!(section.contains("W-REPORT-1"), "{section}");
    assert!(
        section.contains("the fixture compares 4 with 8 on purpose"),
        "{section}"
    );
    // The evidence: what the waived case observed.
    assert!(section.contains("expected: 4\nobserved: 8"), "{section}");
    assert!(html.contains("Failures (0)"));
}

/// Headless Chromium's console, as logged with `--enable-logging=stderr`: one line per
/// message (`INFO:CONSOLE...] "message", source: ...`).
fn chromium_console(chromium: &Path, page: &Path) -> (Vec<String>, String) {
    chromium_with(chromium, &["--dump-dom"], page)
}

/// Headless Chromium on `page` with `args` (`--dump-dom`, `--screenshot=…`): its console
/// lines and its stdout.
fn chromium_with(chromium: &Path, args: &[&str], page: &Path) -> (Vec<String>, String) {
    let profile = tmp("chromium-profile");
    let url = format!("file://{}", page.display());
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(&url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // Read both pipes while it runs: a DOM larger than a pipe's buffer would block it.
    let drain = |r: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut buf);
            }
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(child.stdout.take().map(|r| Box::new(r) as _));
    let err = drain(child.stderr.take().map(|r| Box::new(r) as _));
    // A minute at most: kill it on expiry.
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium did not finish in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let (dom, err) = (out.join().unwrap(), err.join().unwrap());
    let console = err
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(String::from)
        .collect();
    (console, dom)
}

fn find_chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|n| {
            std::env::var_os("PATH").and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(n))
                    .find(|c| c.is_file())
            })
        })
}

#[test]
fn report_loads_in_chromium_without_console_errors_and_plots_have_content() {
    let Some(chromium) = find_chromium() else {
        gpucts::require!(false, "chromium");
        return;
    };
    let d = tmp("browser");
    // The detector first: a page with a console error and an exception must be caught.
    let bad = d.path().join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>console.error('boom'); missing_fn();</script></body></html>",
    )
    .unwrap();
    let (console, _) = chromium_console(&chromium, &bad);
    assert_eq!(console.len(), 2, "detector must see both: {console:?}");

    run_reports(d.path());
    let (console, dom) = chromium_console(&chromium, &d.path().join("report.html"));
    assert!(console.is_empty(), "console messages: {console:?}");
    // The DOM as the browser built it: each curve is an SVG with its drawn line and axis
    // text; each histogram a table with one bar per outcome.
    let r = read_json(&d.path().join("results.json"));
    let all: Vec<&serde_json::Value> = r["figures"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|f| f.as_array().unwrap())
        .collect();
    let series = all.iter().filter(|f| f["kind"] == "series").count();
    let bins: usize = all
        .iter()
        .filter(|f| f["kind"] == "histogram")
        .map(|f| f["bins"].as_array().unwrap().len())
        .sum();
    assert!(
        series > 0 && bins > 0,
        "the fixture records a curve and a histogram"
    );
    let figures: Vec<&str> = dom.split("<div class=\"figure\"").skip(1).collect();
    assert_eq!(figures.len(), series);
    let svgs: Vec<&str> = figures
        .iter()
        .filter_map(|f| {
            f.split_once("<svg")
                .map(|(_, s)| s.split("</svg>").next().unwrap_or(""))
        })
        .collect();
    assert_eq!(svgs.len(), series);
    assert!(svgs.iter().all(|s| s.contains("<polyline")), "curve drawn");
    assert!(svgs.iter().all(|s| s.contains("<text")), "axes labelled");
    assert_eq!(
        dom.matches("<td class=\"bar\"><span style=\"width:")
            .count(),
        bins
    );
}

/// The bench curves as the browser draws them: a real `gpucts bench lint` curve and, for the
/// GPU benches that cannot run here, a pin-latency curve of hand-written TEST DATA (not a
/// measurement). Each must load without console messages and its SVG must hold the curve
/// (polyline), the min..max bars and axis text.
#[test]
fn bench_curves_render_in_chromium_with_content() {
    let Some(chromium) = find_chromium() else {
        gpucts::require!(false, "chromium");
        return;
    };
    let d = tmp("browser-bench");
    let lint = d.path().join("lint");
    let o = gpucts(&[
        "bench",
        "lint",
        "--reps",
        "2",
        "--results",
        lint.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let hand = d.path().join("hand");
    let p =
        |x: f64, m: f64| serde_json::json!({"x": x, "min": m - 1.0, "median": m, "max": m + 1.0});
    write_json(
        &hand.join("results.json"),
        &serde_json::json!({
            "schema_version": 2, "gpucts_version": "0.1.0",
            "figures": {"bench.gpudirect.pin": [{"kind": "series",
                "name": "pin latency (TEST DATA, not a measurement)", "x_unit": "bytes",
                "unit": "µs", "better": "lower",
                "points": [p(4096.0, 10.0), p(65536.0, 20.0), p(1048576.0, 90.0)]}]},
            "cases": [{"id": "bench.gpudirect.pin", "area": "bench", "clause": "bench: test data",
                "status": {"status": "pass", "note": "TEST DATA"}, "verdict": "pass"}]
        }),
    );
    let o = gpucts(&["report", hand.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    // Each page holds one curve of three sizes (lint: 10, 100, 1,000 functions; the test data:
    // 4 KB, 64 KB, 1 MB).
    for (page, curves) in [(lint.join("report.html"), 1), (hand.join("report.html"), 1)] {
        let (console, dom) = chromium_console(&chromium, &page);
        assert!(
            console.is_empty(),
            "{}: console messages: {console:?}",
            page.display()
        );
        let bench = dom
            .split("<section id=\"bench\">")
            .nth(1)
            .unwrap_or_else(|| panic!("{}: no bench section", page.display()))
            .split("</section>")
            .next()
            .unwrap();
        let svgs: Vec<&str> = bench
            .split("<div class=\"figure\" data-kind=\"series\"")
            .skip(1)
            .filter_map(|f| {
                f.split_once("<svg")
                    .map(|(_, s)| s.split("</svg>").next().unwrap_or(""))
            })
            .collect();
        assert_eq!(svgs.len(), curves, "{}", page.display());
        for s in svgs {
            // plot.rs draws the curve in #54A24B, 2 px, with a median dot and a min..max bar
            // (three strokes) per point; the axes are black.
            let green: Vec<&str> = s
                .split('<')
                .filter(|e| e.to_ascii_uppercase().contains("54A24B"))
                .collect();
            let curve = green
                .iter()
                .find(|e| e.starts_with("polyline"))
                .expect("curve drawn");
            let points = curve
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            assert_eq!(points.split_whitespace().count(), 3, "{curve}");
            assert_eq!(green.iter().filter(|e| e.starts_with("circle")).count(), 3);
            assert_eq!(
                green.iter().filter(|e| e.starts_with("line")).count(),
                9,
                "min..max bars"
            );
            assert!(s.contains("<text"), "axes labelled");
        }
    }
}

/// The committed H100 record with the shared-memory variants added: each intra-CTA case
/// again as `atomics.gpu.shared.*` with the same figures, as the 468-case GPU atomics run
/// (312 + 156) records them.
fn h100_with_shared() -> serde_json::Value {
    let mut v = read_json(&h100_atomics().join("results.json"));
    let cases = v["cases"].as_array().unwrap().clone();
    for c in cases {
        let id = c["id"].as_str().unwrap();
        let Some(rest) = id.strip_prefix("atomics.gpu.") else {
            continue;
        };
        if !rest.ends_with(".intra_cta") {
            continue;
        }
        let shared = format!("atomics.gpu.shared.{rest}");
        let mut n = c.clone();
        n["id"] = shared.clone().into();
        v["cases"].as_array_mut().unwrap().push(n);
        let figs = v["figures"][id].clone();
        v["figures"][shared] = figs;
    }
    v
}

/// A results set shaped like an offline `--suite all` run: the ids `--suite all --list`
/// prints (about 20,000), GPU and kernel-module cases skipped with the probe's reason, one
/// xcall pair in 20 waived with its evidence (the waiver records of the H100 xcall record),
/// one case in 97 failed with a 20-line detail, the rest passed with a note.
fn synthetic_suite_all() -> serde_json::Value {
    let o = gpucts(&["--suite", "all", "--list", "--toolchain", "system"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let ids: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    let xcall = read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../reports/rigs/h100-2026-11-24/xcall/results.json"),
    );
    let waivers = xcall["run"]["waivers"].as_array().unwrap().clone();
    assert!(!waivers.is_empty());
    let device = [
        "atomics.gpu.",
        "xcall.gpu.",
        "dwarf.gpu.",
        "syscalls.gpu.",
        "gpudirect.",
    ];
    let cases: Vec<serde_json::Value> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let area = id.split('.').next().unwrap();
            let mut c = serde_json::json!({
                "id": id, "area": area,
                "clause": format!("ptx-interop 13.2 §{}.{}", i % 5 + 1, i % 7),
                "origin": format!("suites/{area}.yaml:{}:5", i % 300), "duration_s": 0.01});
            if device.iter().any(|p| id.starts_with(p)) {
                c["status"] = serde_json::json!({"status": "skip", "capability": "gpu",
                    "reason": "no GPU: libcuda.so.1 cannot be loaded (libcuda.so.1: cannot open shared object file: No such file or directory) (needs an NVIDIA GPU and its driver (libcuda.so.1))"});
                c["verdict"] = "skip".into();
            } else if id.starts_with("xcall.pair.") && i % 20 == 0 {
                let detail = format!(
                    "caller.ptx:{i}: .param .b32 xcall_f{i}_param_2\ncallee.ptx:{i}: .param .f32 xcall_f{i}_param_2\n"
                )
                .repeat(4);
                c["status"] = serde_json::json!({"status": "fail",
                    "expected": "the callee reads the caller's parameters as declared",
                    "observed": format!("parameter 2 of xcall_f{i}: .b32 in the caller, .f32 in the callee"),
                    "detail": detail});
                c["verdict"] = "waived".into();
                c["waiver"] = waivers[i % waivers.len()]["id"].clone();
            } else if i % 97 == 0 {
                c["status"] = serde_json::json!({"status": "fail",
                    "expected": format!("layout of struct S{i}: size 24, align 8"),
                    "observed": "size 32, align 16",
                    "detail": format!("member m{i} at offset 8 (expected 4)\n").repeat(20)});
                c["verdict"] = "fail".into();
            } else {
                c["status"] = serde_json::json!({"status": "pass",
                    "note": format!("checked {} members against the oracle; the producer agrees on size, alignment and every offset", i % 50)});
                c["verdict"] = "pass".into();
            }
            c
        })
        .collect();
    serde_json::json!({
        "schema_version": 2, "gpucts_version": "0.1.0",
        "fingerprint": {"gpu": "none", "os": "Debian GNU/Linux 12 (bookworm)"},
        "run": {"command_line": ["gpucts", "--suite", "all"], "started": "", "finished": "",
                "suites": [], "waiver_files": [], "waivers": waivers, "requires": [],
                "rerun_failures": 0},
        "cases": cases})
}

/// `gpucts report` of results `v` written under `dir`: the page's text.
fn report_of(dir: &Path, v: &serde_json::Value) -> String {
    write_json(&dir.join("results.json"), v);
    let o = gpucts(&["report", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    std::fs::read_to_string(dir.join("report.html")).unwrap()
}

/// The first element in the page's body.
fn first_in_body(html: &str) -> &str {
    let body = html.split_once("<body>").expect("a body").1.trim_start();
    &body[..body.find('>').map(|i| i + 1).unwrap_or(body.len())]
}

/// The atomics.gpu cases of results `v` with figures, and how many of them saw a weak outcome.
fn measured_atomics(v: &serde_json::Value) -> (usize, usize) {
    let figs = v["figures"].as_object().unwrap();
    let with: Vec<&serde_json::Value> = figs
        .iter()
        .filter(|(k, _)| k.starts_with("atomics.gpu."))
        .map(|(_, f)| f)
        .collect();
    let weak = with
        .iter()
        .filter(|f| {
            f.as_array().unwrap().iter().any(|f| {
                f["kind"] == "histogram"
                    && f["bins"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|b| b["weak"] == true && b["count"].as_u64().unwrap() > 0)
            })
        })
        .count();
    (with.len(), weak)
}

/// A reviewer opens the report: the summary comes first, and the report of the largest runs
/// stays small enough to open and mail (GPU atomics: 1.5 MB; `--suite all`: 3 MB), with every
/// case's figures still in it, folded.
#[test]
fn reports_open_with_the_summary_and_stay_small() {
    const GPU_RUN_LIMIT: usize = 1_500_000;
    const SUITE_ALL_LIMIT: usize = 3_000_000;
    let d = tmp("report-sizes");
    let h100 = read_json(&h100_atomics().join("results.json"));
    let with_shared = h100_with_shared();
    assert_eq!(
        with_shared["cases"].as_array().unwrap().len(),
        h100["cases"].as_array().unwrap().len() * 3 / 2,
        "the shared variants double the intra-CTA half"
    );
    for (name, v) in [("h100", &h100), ("h100-shared", &with_shared)] {
        let html = report_of(&d.path().join(name), v);
        eprintln!("{name}: report.html {} bytes", html.len());
        assert!(html.len() < GPU_RUN_LIMIT, "{name}: {} bytes", html.len());
        assert_eq!(first_in_body(&html), r#"<section id="summary">"#, "{name}");
        let summary = html
            .split(r#"<section id="summary">"#)
            .nth(1)
            .unwrap()
            .split("</section>")
            .next()
            .unwrap();
        let gpu = v["fingerprint"]["gpu"].as_str().unwrap();
        assert!(
            summary.contains(&format!("Atomics on the GPU: {gpu}")),
            "{name}"
        );
        // One heatmap cell per measured case, shaded where the weak outcome appeared.
        let (measured, weak) = measured_atomics(v);
        assert_eq!(
            summary.matches(r#"<td class="h hv-"#).count(),
            measured,
            "{name}"
        );
        let shaded = summary
            .split(r#"<td class="h hv-"#)
            .skip(1)
            .filter(|cell| {
                cell.split('>')
                    .next()
                    .unwrap()
                    .contains("style=\"background:")
            })
            .count();
        assert_eq!(shaded, weak, "{name}");
        assert!(summary.contains(&format!(
            "{measured} cases measured; the weak outcome appeared in {weak};"
        )));
        // Every case's figures are still there, folded.
        let figures = v["figures"].as_object().unwrap();
        assert_eq!(
            html.matches(r#"<details class="case-figures""#).count(),
            figures.len(),
            "{name}"
        );
        let bins: usize = figures
            .values()
            .flat_map(|f| f.as_array().unwrap())
            .filter(|f| f["kind"] == "histogram")
            .map(|f| f["bins"].as_array().unwrap().len())
            .sum();
        assert_eq!(html.matches(r#"<td class="bar">"#).count(), bins, "{name}");
    }

    let all = synthetic_suite_all();
    let cases = all["cases"].as_array().unwrap();
    assert!(cases.len() > 15_000, "{} cases", cases.len());
    let html = report_of(&d.path().join("all"), &all);
    eprintln!(
        "suite all ({} cases): report.html {} bytes",
        cases.len(),
        html.len()
    );
    assert!(html.len() < SUITE_ALL_LIMIT, "{} bytes", html.len());
    assert_eq!(first_in_body(&html), r#"<section id="summary">"#);
    let summary = html.split("</section>").next().unwrap();
    // One row per area, and the caller × callee matrix of the xcall pairs.
    let mut areas: Vec<&str> = cases.iter().map(|c| c["area"].as_str().unwrap()).collect();
    areas.sort();
    areas.dedup();
    let table = summary.split(r#"<table id="suites">"#).nth(1).unwrap();
    let table = table.split("</table>").next().unwrap();
    assert_eq!(table.matches("<tr>").count(), areas.len() + 1, "{table}");
    let pairs: Vec<Vec<&str>> = cases
        .iter()
        .filter_map(|c| c["id"].as_str().unwrap().strip_prefix("xcall.pair."))
        .map(|rest| rest.split('.').collect())
        .collect();
    let mut callers: Vec<&str> = pairs.iter().map(|p| p[0]).collect();
    let mut callees: Vec<&str> = pairs.iter().map(|p| p[1]).collect();
    callers.sort();
    callers.dedup();
    callees.sort();
    callees.dedup();
    let m = summary
        .split(r#"<table class="matrix" id="matrix-xcall-pair">"#)
        .nth(1)
        .expect("xcall pair matrix")
        .split("</table>")
        .next()
        .unwrap();
    assert_eq!(m.matches("<tr>").count(), callers.len() + 1, "{m}");
    let header = m.split("</tr>").next().unwrap();
    assert_eq!(
        header.matches("<th>").count(),
        callees.len() + 1,
        "{header}"
    );
    // The GPU cases all skipped offline: no heatmap.
    assert!(!summary.contains("Atomics on the GPU"));
}

/// Base64 (RFC 4648, padded), to hand a PNG to a page as a data: URL.
fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for c in bytes.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                s.push(A[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// The summary as the browser renders it: a screenshot of the H100 record's report is a real
/// image, not blank, with the heatmap's red shades (the record has weak outcomes) and the
/// green PASS badge; the DOM has the heatmap table inside the summary.
#[test]
fn summary_renders_in_a_chromium_screenshot() {
    let Some(chromium) = find_chromium() else {
        gpucts::require!(false, "chromium");
        return;
    };
    let d = tmp("browser-summary");
    let v = read_json(&h100_atomics().join("results.json"));
    report_of(d.path(), &v);
    let page = d.path().join("report.html");
    let (console, dom) = chromium_console(&chromium, &page);
    assert!(console.is_empty(), "console messages: {console:?}");
    let summary = dom
        .split(r#"<section id="summary">"#)
        .nth(1)
        .expect("summary in the DOM")
        .split("</section>")
        .next()
        .unwrap();
    let (measured, weak) = measured_atomics(&v);
    assert!(summary.contains(r#"<table class="heat">"#));
    assert_eq!(summary.matches(r#"<td class="h hv-"#).count(), measured);

    // The summary is 52 rows of the heatmap: a tall window takes it whole.
    let png = d.path().join("summary.png");
    let shot = format!("--screenshot={}", png.display());
    chromium_with(
        &chromium,
        &[&shot, "--window-size=1280,3600", "--hide-scrollbars"],
        &page,
    );
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    // Its pixels, counted by the browser itself: the PNG drawn on a canvas.
    let probe = d.path().join("probe.html");
    std::fs::write(
        &probe,
        format!(
            r#"<html><body><img id="shot" src="data:image/png;base64,{}"><pre id="out"></pre>
<script>
window.onload = () => {{
  const img = document.getElementById("shot");
  const c = document.createElement("canvas");
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext("2d");
  g.drawImage(img, 0, 0);
  const p = g.getImageData(0, 0, c.width, c.height).data;
  let white = 0, red = 0, green = 0, dark = 0;
  for (let i = 0; i < p.length; i += 4) {{
    const [r, gr, b] = [p[i], p[i + 1], p[i + 2]];
    if (r > 245 && gr > 245 && b > 245) white++;
    if (r > 200 && gr < 190 && b < 190 && r - gr > 40) red++;
    if (r < 80 && gr > 100 && gr < 140 && b < 80) green++;
    if (r < 60 && gr < 60 && b < 60) dark++;
  }}
  document.getElementById("out").textContent =
    ["size", c.width, c.height, "white", white, "red", red, "green", green, "dark", dark].join(" ");
}};
</script></body></html>"#,
            base64(&bytes)
        ),
    )
    .unwrap();
    let (console, dom) = chromium_with(&chromium, &["--dump-dom"], &probe);
    assert!(console.is_empty(), "console messages: {console:?}");
    let out = dom
        .split(r#"<pre id="out">"#)
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or("");
    let n: Vec<u64> = out
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(n.len(), 6, "pixel counts: {out:?}");
    let (w, h, white, red, green, dark) = (n[0], n[1], n[2], n[3], n[4], n[5]);
    assert_eq!((w, h), (1280, 3600), "{out}");
    let total = w * h;
    assert!(white < total * 98 / 100, "not blank: {out}");
    assert!(dark > total / 1000, "text drawn: {out}");
    assert!(green > 0, "the PASS badge: {out}");
    assert_eq!(red > 0, weak > 0, "the heatmap's shades: {out}");
}
