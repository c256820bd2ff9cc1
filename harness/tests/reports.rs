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
    assert!(out.contains("HTML report: "), "{out}");
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
    // Two plots (the curve and the histogram); the scalars are table rows.
    assert_eq!(html.matches("<svg").count(), 2);
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
    assert_eq!(j["tolerance_pct"], 20.0);
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
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(&url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("chromium starts");
    // A minute at most: kill it on expiry.
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            panic!("chromium did not finish in 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    let (dom, err) = text(&o);
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
    // The DOM as the browser built it: both plots are SVG with drawn marks (the curve's
    // polyline, the histogram's bars) and axis text.
    let figures: Vec<&str> = dom.split("<div class=\"figure\"").skip(1).collect();
    assert_eq!(figures.len(), 4, "four figures");
    let svgs: Vec<&str> = figures
        .iter()
        .filter_map(|f| {
            f.split_once("<svg")
                .map(|(_, s)| s.split("</svg>").next().unwrap_or(""))
        })
        .collect();
    assert_eq!(svgs.len(), 2);
    assert!(svgs.iter().any(|s| s.contains("<polyline")), "curve drawn");
    assert!(
        svgs.iter().any(|s| s.matches("<rect").count() >= 3),
        "histogram bars drawn"
    );
    assert!(svgs.iter().all(|s| s.contains("<text")), "axes labelled");
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
