//! `gpucts bench AREA --results DIR`: the benches record their curves (min / median / max per
//! point) into a results set that `gpucts report` and `gpucts diff` read.
//!
//! The offline benches run for real here (their measured numbers cannot be known in advance;
//! what is checked is what follows from the arguments: the points each bench measures, the
//! repetitions behind each, the units, the spread's order, the plots). The GPU, pin, BAR and
//! RDMA benches skip here by name; their plotting and diff paths are tested on results sets
//! written by hand below, labelled TEST DATA: they are not measurements.

mod common;

use common::{gpucts, text, tmp};
use serde_json::{json, Value};
use std::path::Path;

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn case<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no case {id}"))
}

/// The one figure named `name` of case `id`.
fn figure<'a>(r: &'a Value, id: &str, name: &str) -> &'a Value {
    r["figures"][id]
        .as_array()
        .unwrap_or_else(|| panic!("no figures for {id}: {}", r["figures"]))
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{id} has no figure {name}: {}", r["figures"][id]))
}

/// A point's numbers are a spread: finite, positive, min <= median <= max.
fn assert_spread(p: &Value) {
    let (a, b, c) = (
        p["min"].as_f64().unwrap(),
        p["median"].as_f64().unwrap(),
        p["max"].as_f64().unwrap(),
    );
    assert!(a > 0.0 && a <= b && b <= c && c.is_finite(), "{p}");
}

fn xs(f: &Value) -> Vec<f64> {
    f["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["x"].as_f64().unwrap())
        .collect()
}

/// The `<div class="figure" ...>` blocks of one section of a report page.
fn section_figures<'a>(html: &'a str, id: &str) -> Vec<&'a str> {
    let Some(sec) = html.split(&format!("<section id=\"{id}\">")).nth(1) else {
        return Vec::new();
    };
    let sec = sec.split("</section>").next().unwrap();
    sec.split("<div class=\"figure\"").skip(1).collect()
}

/// The points of the curve plot.rs draws (a 2 px #54A24B polyline; the axes are black).
fn curve_points(block: &str) -> usize {
    let svg = block.split("<svg").nth(1).unwrap_or("");
    svg.split('<')
        .find(|e| e.starts_with("polyline") && e.to_ascii_uppercase().contains("54A24B"))
        .and_then(|e| e.split("points=\"").nth(1))
        .and_then(|p| p.split('"').next())
        .map_or(0, |p| p.split_whitespace().count())
}

/// The rows of a figure block's table (one per point), header excluded.
fn table_rows(block: &str) -> usize {
    block.matches("<tr><td>").count()
}

fn count_ptx(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += count_ptx(&p);
        } else if p.extension().is_some_and(|x| x == "ptx") {
            n += 1;
        }
    }
    n
}

#[test]
fn every_bench_records_its_curves_into_a_results_set_and_its_report() {
    let d = tmp("bench-all");
    let dir = d.path().join("b");
    let o = gpucts(&[
        "bench",
        "all",
        "--count",
        "10",
        "--reps",
        "2",
        "--results",
        dir.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let r = read_json(&dir.join("results.json"));
    assert_eq!(r["schema_version"], 2);
    assert!(dir.join("junit.xml").is_file() && dir.join("report.html").is_file());

    // abi: --count 10 asks for batches of 1 and 10 types, --reps 2 for two compilations of
    // fresh types each, so every oracle that ran judged 2 * (1 + 10) = 22 types.
    for oracle in ["clang", "clang32", "nvrtc", "dwarf", "clang_dwarf"] {
        let id = format!("bench.abi.{oracle}");
        let c = case(&r, &id);
        if c["verdict"] == "skip" {
            let cap = c["status"]["capability"].as_str();
            gpucts::testkit::tool_missing(
                gpucts::testkit::Need::Tool,
                cap.unwrap_or_else(|| panic!("a skip names its capability: {c}")),
            );
            continue;
        }
        let note = c["status"]["note"].as_str().unwrap();
        let agree: usize = note
            .split(" agree, ")
            .next()
            .and_then(|s| s.rsplit(char::is_whitespace).next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{note}"));
        let other: usize = note
            .split(" agree, ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("{note}"));
        assert_eq!(agree + other, 22, "{note}");
        let f = figure(&r, &id, &format!("{oracle} types/s"));
        assert_eq!(f["kind"], "series");
        assert_eq!(f["unit"], "types/s");
        assert_eq!(f["better"], "higher");
        assert_eq!(xs(f), vec![1.0, 10.0]);
        f["points"]
            .as_array()
            .unwrap()
            .iter()
            .for_each(assert_spread);
    }

    // lint: synthetic modules of 10, 100 and 1,000 functions: three sizes in bytes, growing;
    // the corpus figure counts the .ptx files under ptx-corpus/.
    let f = figure(&r, "bench.lint.reader", "reader+lint MB/s");
    let x = xs(f);
    assert_eq!(x.len(), 3, "{f}");
    assert!(x[0] > 0.0 && x[0] < x[1] && x[1] < x[2], "{x:?}");
    f["points"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(assert_spread);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ptx-corpus");
    let n = count_ptx(&root);
    assert!(n > 0, "ptx-corpus/ is in the repository");
    let s = figure(
        &r,
        "bench.lint.reader",
        &format!("ptx-corpus files/s ({n} files)"),
    );
    assert_eq!(s["kind"], "scalar");
    assert_spread(s);

    // xcall: the first 10, 100 and 1,000 signatures (those gpucts's emitter expresses).
    let f = figure(&r, "bench.xcall.check", "checker signatures/s");
    let x = xs(f);
    assert_eq!(x.len(), 3, "{f}");
    assert!(
        x[0] > 0.0 && x[0] <= 10.0 && x[1] <= 100.0 && x[2] <= 1000.0 && x[1] > x[0] && x[2] > x[1]
    );
    f["points"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(assert_spread);

    // atomics: one point per candidate count of the catalogue, a whole-catalogue rate.
    let f = figure(&r, "bench.atomics.model", "model candidate executions/s");
    assert!(!xs(f).is_empty());
    f["points"]
        .as_array()
        .unwrap()
        .iter()
        .for_each(assert_spread);
    assert_spread(figure(&r, "bench.atomics.model", "catalogue tests/s"));
    assert_spread(figure(&r, "bench.atomics.gpu_host", "host instances/s"));

    // gpudirect: without the companion module (/dev/gpucts) pin and BAR skip naming kmod; a
    // build without the rdma feature skips RDMA naming rdma.
    if !Path::new("/dev/gpucts").exists() {
        for id in ["bench.gpudirect.pin", "bench.gpudirect.bar"] {
            let c = case(&r, id);
            assert_eq!(c["verdict"], "skip", "{c}");
            assert_eq!(c["status"]["capability"], "kmod", "{c}");
        }
    }
    if !cfg!(feature = "rdma") {
        assert_eq!(
            case(&r, "bench.gpudirect.rdma")["status"]["capability"],
            "rdma"
        );
    }
    assert!(
        out.contains("gpudirect.pin: skipped (kmod:") || Path::new("/dev/gpucts").exists(),
        "{out}"
    );

    // The report: every recorded figure in the Bench section; every curve drawn.
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let recorded: usize = r["figures"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_array().unwrap().len())
        .sum();
    let blocks = section_figures(&html, "bench");
    assert_eq!(blocks.len(), recorded);
    assert!(section_figures(&html, "figures").is_empty());
    for b in &blocks {
        if b.contains("data-kind=\"series\"") {
            assert!(table_rows(b) > 0, "{b}");
            assert_eq!(
                curve_points(b),
                table_rows(b),
                "one curve point per row: {b}"
            );
        }
    }
}

#[test]
fn bench_arguments_are_checked() {
    let o = gpucts(&["bench", "all"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("give --results DIR"), "{:?}", text(&o));
    let d = tmp("bench-args");
    let o = gpucts(&[
        "bench",
        "lint",
        "--reps",
        "0",
        "--results",
        d.path().to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o)
        .1
        .contains("--reps 0: repetitions per point are 1..=100"));
    // A results directory that cannot be created: exit 2 before anything is measured.
    let file = d.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let o = gpucts(&[
        "bench",
        "lint",
        "--results",
        file.join("sub").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    assert!(text(&o).1.contains("cannot create"), "{:?}", text(&o));
}

/// TEST DATA, written by hand (not measurements): a gpudirect bench results set with pin /
/// unpin latency, BAR and RDMA curves. `pin` is the pin latency at 4 KB, 64 KB and 1 MB,
/// `bar` the BAR write bandwidth at 4 KB and 64 KB, `rdma` the RDMA WRITE bandwidth at 64 KB.
fn hand_written(pin: [[f64; 3]; 3], bar: [[f64; 3]; 2], rdma: [f64; 3]) -> Value {
    let pts = |xs: &[f64], ys: &[[f64; 3]]| -> Value {
        xs.iter()
            .zip(ys)
            .map(|(x, y)| json!({"x": x, "min": y[0], "median": y[1], "max": y[2]}))
            .collect()
    };
    let series = |name: &str, unit: &str, better: &str, points: Value| {
        json!({"kind": "series", "name": name, "x_unit": "bytes", "unit": unit,
               "better": better, "points": points})
    };
    let note = "TEST DATA written by hand for the report and diff tests; not a measurement";
    let case = |id: &str| {
        json!({"id": id, "area": "bench", "clause": "bench: hand-written test data",
               "origin": "harness/tests/bench.rs", "status": {"status": "pass", "note": note},
               "verdict": "pass", "duration_s": 0.0})
    };
    json!({
        "schema_version": 2,
        "gpucts_version": "0.1.0",
        "fingerprint": {"gpu": "TEST DATA (no GPU)"},
        "figures": {
            "bench.gpudirect.pin": [
                series("pin latency (TEST DATA)", "µs", "lower",
                       pts(&[4096.0, 65536.0, 1048576.0], &pin)),
                series("unpin latency (TEST DATA)", "µs", "lower",
                       pts(&[4096.0, 65536.0, 1048576.0], &[[2.0, 3.0, 4.0], [5.0, 6.0, 7.0], [8.0, 9.0, 10.0]])),
            ],
            "bench.gpudirect.bar": [
                series("BAR write bandwidth (TEST DATA)", "MB/s", "higher", pts(&[4096.0, 65536.0], &bar)),
            ],
            "bench.gpudirect.rdma": [
                series("RDMA WRITE bandwidth (TEST DATA)", "MB/s", "higher", pts(&[65536.0], &[rdma])),
            ],
        },
        "cases": [case("bench.gpudirect.pin"), case("bench.gpudirect.bar"), case("bench.gpudirect.rdma")],
    })
}

const BASE_PIN: [[f64; 3]; 3] = [
    [10.0, 11.0, 12.0],
    [20.0, 22.0, 24.0],
    [100.0, 110.0, 120.0],
];
const BASE_BAR: [[f64; 3]; 2] = [[900.0, 1000.0, 1100.0], [2000.0, 2100.0, 2200.0]];
const BASE_RDMA: [f64; 3] = [3000.0, 3100.0, 3200.0];

fn write_set(dir: &Path, v: &Value) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("results.json"),
        serde_json::to_string_pretty(v).unwrap(),
    )
    .unwrap();
}

#[test]
fn gpu_bench_curves_are_plotted_from_a_hand_written_results_set() {
    let d = tmp("bench-hand");
    write_set(d.path(), &hand_written(BASE_PIN, BASE_BAR, BASE_RDMA));
    let page = d.path().join("r.html");
    let o = gpucts(&[
        "report",
        d.path().to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("Bench curves (4)"), "four curves written");
    let blocks = section_figures(&html, "bench");
    assert_eq!(blocks.len(), 4);
    for b in &blocks {
        assert_eq!(curve_points(b), table_rows(b), "{b}");
    }
    // The pin curve's table: the numbers written above, in the unit written above.
    let pin = blocks
        .iter()
        .find(|b| b.contains("pin latency (TEST DATA)") && !b.contains("unpin"))
        .unwrap();
    assert!(pin.contains("<th>median (µs)</th>"), "{pin}");
    assert_eq!(curve_points(pin), 3, "{pin}");
    for row in [
        "<td>4096 bytes</td><td class=\"n\">10</td><td class=\"n\">11</td><td class=\"n\">12</td>",
        "<td>65536 bytes</td><td class=\"n\">20</td><td class=\"n\">22</td><td class=\"n\">24</td>",
        "<td>1048576 bytes</td><td class=\"n\">100</td><td class=\"n\">110</td><td class=\"n\">120</td>",
    ] {
        assert!(pin.contains(row), "{row} in {pin}");
    }
    assert!(html.contains("Figures (0)"), "no non-bench figures");
}

#[test]
fn diff_compares_bench_curves_against_their_noise() {
    let d = tmp("bench-diff");
    let base = d.path().join("base");
    write_set(&base, &hand_written(BASE_PIN, BASE_BAR, BASE_RDMA));

    // Noise: every new median lies inside the base's min..max, so nothing is reported.
    let noise = d.path().join("noise");
    write_set(
        &noise,
        &hand_written(
            [
                [11.0, 11.5, 13.0],
                [21.0, 23.0, 25.0],
                [105.0, 115.0, 118.0],
            ],
            [[950.0, 1050.0, 1150.0], [2100.0, 2150.0, 2250.0]],
            [3050.0, 3150.0, 3300.0],
        ),
    );
    let o = gpucts(&["diff", base.to_str().unwrap(), noise.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    assert!(!out.lines().any(|l| l.starts_with("figure")), "{out}");
    assert!(out.contains("0 figures changed; no regression"), "{out}");

    // Beyond the noise: pin latency at 4 KB 11 -> 31 µs (bands 10..12 and 30..32 apart; lower
    // is better: a regression); BAR write at 64 KB 2100 -> 1050 MB/s (higher is better: a
    // regression); RDMA WRITE 3100 -> 6100 MB/s (an improvement: a change, not a regression).
    let worse = d.path().join("worse");
    let mut pin = BASE_PIN;
    pin[0] = [30.0, 31.0, 32.0];
    let mut bar = BASE_BAR;
    bar[1] = [1000.0, 1050.0, 1100.0];
    write_set(&worse, &hand_written(pin, bar, [6000.0, 6100.0, 6200.0]));
    let o = gpucts(&["diff", base.to_str().unwrap(), worse.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("figure")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines.iter().any(|l| l.starts_with("figure regressed")
        && l.contains("bench.gpudirect.pin: pin latency (TEST DATA): at 4096 bytes: 11 µs (10..12) -> at 4096 bytes: 31 µs (30..32)")
        && l.ends_with("[regression]")), "{out}");
    assert!(lines.iter().any(|l| l.starts_with("figure regressed")
        && l.contains("bench.gpudirect.bar: BAR write bandwidth (TEST DATA): at 65536 bytes: 2100 MB/s (2000..2200) -> at 65536 bytes: 1050 MB/s (1000..1100)")), "{out}");
    assert!(lines.iter().any(|l| l.starts_with("figure changed")
        && l.contains("bench.gpudirect.rdma: RDMA WRITE bandwidth (TEST DATA): at 65536 bytes: 3100 MB/s (3000..3200) -> at 65536 bytes: 6100 MB/s (6000..6200)")
        && !l.contains("[regression]")), "{out}");

    // The same as JSON.
    let o = gpucts(&[
        "diff",
        base.to_str().unwrap(),
        worse.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["regression"], true);
    assert_eq!(j["counts"]["figure_regressed"], 2, "{j}");
    assert_eq!(j["counts"]["figure_changed"], 1, "{j}");
}

#[test]
fn older_and_malformed_sets_beside_bench_sets() {
    let d = tmp("bench-compat");
    let bench = d.path().join("bench");
    write_set(&bench, &hand_written(BASE_PIN, BASE_BAR, BASE_RDMA));
    // Layout 1 (no schema_version, no figures), as gpucts wrote before reports: still read;
    // against a bench set the different suite sets are findings, not errors.
    let old = d.path().join("old");
    write_set(
        &old,
        &json!({"gpucts_version": "0.1.0", "cases": [{"id": "abi.a", "area": "abi",
            "clause": "ptx-interop 13.2 §1.1", "status": {"status": "pass"}, "verdict": "pass"}]}),
    );
    let o = gpucts(&["report", old.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let html = std::fs::read_to_string(old.join("report.html")).unwrap();
    assert!(!html.contains("<section id=\"bench\">"));
    let o = gpucts(&["diff", old.to_str().unwrap(), bench.to_str().unwrap()]);
    let (out, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("suite added       bench: not run -> 3 cases"),
        "{out}"
    );
    assert!(
        out.contains("suite removed     abi: 1 cases -> not run"),
        "{out}"
    );
    // A figure of a kind no gpucts writes: exit 2 naming the file, line and column.
    let bad = d.path().join("bad");
    let mut v = hand_written(BASE_PIN, BASE_BAR, BASE_RDMA);
    v["figures"]["bench.gpudirect.rdma"][0]["kind"] = json!("curve");
    write_set(&bad, &v);
    let o = gpucts(&["diff", bench.to_str().unwrap(), bad.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad/results.json:") && err.contains("unknown variant `curve`"),
        "{err}"
    );
}
