//! `gpucts litmus run FILE... [--iterations N] [--stress-file F | --stress KEY=VALUE...]
//! [--json F] [--emulate]`, end to end through the binary. Without a GPU here, the tests run
//! the PTX emulator (`--emulate`) and check the refusal without it. Expected verdicts come
//! from the PTX memory model's rules and the launch shape's arithmetic, not from the command.

mod common;

use std::path::{Path, PathBuf};

use common::{gpucts, text, tmp};
use serde_json::Value;

/// Message passing through a release store and an acquire load at gpu scope, threads in
/// different CTAs: every outcome a sequentially consistent machine gives is one the model
/// allows ((0, 0), (0, 42), (1, 42)); (1, 0) is forbidden (PTX ISA memory model, axiom
/// Causality: the observed release orders the data store before the data load).
const MP: &str = "name: MP+rel-acq.gpu.inter-cta\nlocations:\n  - {name: data}\n  - {name: flag}\nthreads:\n  - cta: 0\n    ops:\n      - st: {loc: data, val: 42, sem: relaxed, scope: gpu}\n      - st: {loc: flag, val: 1, sem: release, scope: gpu}\n  - cta: 1\n    ops:\n      - ld: {reg: r0, loc: flag, sem: acquire, scope: gpu}\n      - ld: {reg: r1, loc: data, sem: relaxed, scope: gpu}\ncondition: 'exists (P1:r0 == 1 /\\ P1:r1 == 0)'\n";

fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn json(p: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    v.as_array()
        .expect("the document is a list of tests")
        .clone()
}

#[test]
fn emulated_mp_is_all_allowed_and_the_json_has_every_field() {
    let dir = tmp("litmus-run-mp");
    let mp = write(dir.path(), "mp.yaml", MP);
    let out = dir.path().join("run.json");
    let o = gpucts(&[
        "litmus",
        "run",
        mp.to_str().unwrap(),
        "--emulate",
        "--iterations",
        "2",
        "--json",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!stdout.contains("FORBIDDEN"), "{stdout}");
    assert!(stdout.contains("allowed"), "{stdout}");
    assert!(
        stdout.contains("litmus run: 1 ran, 0 refused, 0 with forbidden outcomes"),
        "{stdout}"
    );
    let tests = json(&out);
    assert_eq!(tests.len(), 1);
    let t = &tests[0];
    for key in [
        "file",
        "name",
        "status",
        "verdict",
        "outcomes",
        "forbidden_seen",
        "judged",
        "weak_seen",
        "instances",
        "launches",
        "engine",
        "params",
        "instances_per_kernel_second",
        "instances_per_second_end_to_end",
    ] {
        assert!(t.get(key).is_some(), "no `{key}` in {t}");
    }
    assert_eq!(t["status"], "ran");
    assert_eq!(t["engine"], "emulator");
    assert_eq!(t["name"], "MP+rel-acq.gpu.inter-cta");
    assert_eq!(t["verdict"]["outcome"], "forbidden");
    assert!(t["instances_per_kernel_second"].is_null(), "GPU only");
    assert!(t["instances_per_second_end_to_end"].as_f64().unwrap() > 0.0);
    // Instances per launch are testing_workgroups x workgroup_size (one instance per thread
    // of the testing CTAs, MC Mutants' layout); the histogram counts every instance.
    let p = &t["params"];
    let per_launch =
        p["testing_workgroups"].as_u64().unwrap() * p["workgroup_size"].as_u64().unwrap();
    assert_eq!(t["launches"], 2);
    assert_eq!(t["instances"].as_u64().unwrap(), 2 * per_launch);
    let outcomes = t["outcomes"].as_array().unwrap();
    let sum: u64 = outcomes.iter().map(|o| o["count"].as_u64().unwrap()).sum();
    assert_eq!(sum, 2 * per_launch);
    assert_eq!(
        t["judged"].as_u64(),
        Some(sum),
        "every instance gave an outcome"
    );
    // Sequentially consistent outcomes of MP (Lamport): none is (1, 0), none is weak.
    for o in outcomes {
        assert_eq!(o["allowed"], true, "{o}");
        assert_eq!(o["weak"], false, "{o}");
        let (r0, r1) = (
            o["values"]["P1:r0"].as_i64().unwrap(),
            o["values"]["P1:r1"].as_i64().unwrap(),
        );
        assert!([(0, 0), (0, 42), (1, 42)].contains(&(r0, r1)), "{o}");
    }
    assert_eq!(t["forbidden_seen"], 0);
}

#[test]
fn bad_input_refusals_and_no_gpu_exit_2_and_every_file_is_reported() {
    let dir = tmp("litmus-run-bad");
    let mp = write(dir.path(), "mp.yaml", MP);
    // A YAML syntax error on line 3.
    let bad = write(dir.path(), "bad.yaml", "name: bad\nthreads:\n  - cta: [0\n");
    // Two GPUs: the runner launches on one.
    let two = write(
        dir.path(),
        "two-gpus.yaml",
        &MP.replace("  - cta: 1\n", "  - cta: 1\n    gpu: 1\n")
            .replace("scope: gpu}", "scope: sys}"),
    );
    let out = dir.path().join("run.json");
    let o = gpucts(&[
        "litmus",
        "run",
        bad.to_str().unwrap(),
        two.to_str().unwrap(),
        mp.to_str().unwrap(),
        "--emulate",
        "--iterations",
        "1",
        "--json",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
    let pos = regex::Regex::new(r"bad\.yaml:\d+:\d+").unwrap();
    assert!(pos.is_match(&stdout), "file:line:column: {stdout}");
    assert!(
        stdout.contains("refused") && stdout.contains("one GPU"),
        "{stdout}"
    );
    assert!(
        stdout.contains("litmus run: 1 ran, 1 refused, 0 with forbidden outcomes, 1 errors"),
        "{stdout}"
    );
    let tests = json(&out);
    let status: Vec<&str> = tests
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(status, ["error", "refused", "ran"]);
    assert!(tests[1]["why"].as_str().unwrap().contains("one GPU"));

    // Without --emulate, on a machine without a GPU: exit 2, naming what is missing and the
    // way out. (On a GPU machine the test runs instead.)
    let o = gpucts(&["litmus", "run", mp.to_str().unwrap(), "--iterations", "1"]);
    let (stdout, stderr) = text(&o);
    if gpucts::backend::cuda::probe().is_err() {
        assert_eq!(o.status.code(), Some(2), "{stdout}\n{stderr}");
        assert!(
            stderr.contains("no GPU") && stderr.contains("--emulate"),
            "{stderr}"
        );
    } else {
        assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    }

    // --stress: an unknown key is named with the accepted ones; --stress and --stress-file
    // exclude each other.
    let o = gpucts(&[
        "litmus",
        "run",
        mp.to_str().unwrap(),
        "--emulate",
        "--stress",
        "stres=1",
    ]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("stres") && stderr.contains("stress_iterations"),
        "{stderr}"
    );
    let o = gpucts(&[
        "litmus",
        "run",
        mp.to_str().unwrap(),
        "--emulate",
        "--stress",
        "stress_iterations=1",
        "--stress-file",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));

    // A directory without tests is bad input, not an empty success.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = gpucts(&["litmus", "run", empty.to_str().unwrap(), "--emulate"]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("without .litmus"), "{stderr}");
}

/// A Dat3M test from the corpus, read in place: Release-acquire-pattern (NVlabs mixedproxy),
/// whose condition the model forbids; the emulator's outcomes are all allowed.
#[test]
fn a_dat3m_test_runs_in_the_emulator() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora/dat3m-ptx");
    gpucts::require!(corpus: corpus.join("NOTES.md").exists(), "../shared/corpora/dat3m-ptx");
    let file = corpus.join("Nvidia/Release-acquire-pattern.litmus");
    let o = gpucts(&[
        "litmus",
        "run",
        file.to_str().unwrap(),
        "--emulate",
        "--iterations",
        "1",
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("Release-acquire-pattern"), "{stdout}");
    assert!(
        stdout.contains("1 ran, 0 refused, 0 with forbidden"),
        "{stdout}"
    );
}

/// A spin on a location no thread writes never ends (the test is independent of the engine:
/// y stays 0, so `r0 != 1` holds forever): every instance stops at the kernel's loop cap, is
/// counted as not terminating, and none becomes an outcome. The run judged nothing, so it
/// proves nothing: exit 3 and a line naming it, never 0.
#[test]
fn a_spin_that_never_ends_is_counted_not_terminating() {
    let dir = tmp("litmus-run-spin");
    let spin = write(
        dir.path(),
        "spin.yaml",
        "name: spin-forever\nthreads:\n- cta: 0\n  ops:\n  - label: {name: L}\n  - ld: {reg: r0, loc: x, sem: relaxed, scope: gpu}\n  - branch: {cond: ne, a: r0, b: 1, target: L}\n- cta: 1\n  ops:\n  - st: {loc: y, val: 1}\ncondition: 'exists (P0:r0 == 1)'\n",
    );
    let out = dir.path().join("run.json");
    let o = gpucts(&[
        "litmus",
        "run",
        spin.to_str().unwrap(),
        "--emulate",
        "--iterations",
        "1",
        "--json",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    let t = &json(&out)[0];
    let instances = t["instances"].as_u64().unwrap();
    assert!(instances > 0, "{t}");
    assert_eq!(t["judged"].as_u64(), Some(0), "{t}");
    assert!(
        stdout.contains(&format!(
            "NOTHING JUDGED {}: spin-forever: none of its {instances} instances",
            spin.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 ran, 0 refused, 0 with forbidden outcomes, 1 with no judged instance"),
        "{stdout}"
    );
    assert_eq!(t["did_not_terminate"].as_u64(), Some(instances), "{t}");
    assert_eq!(t["outcomes"].as_array().map(Vec::len), Some(0), "{t}");
    assert!(
        stdout.contains(&format!(
            "{instances} instances did not terminate within 4096 loop iterations"
        )),
        "{stdout}"
    );
}

/// Threads in CTAs of different clusters (`inter_cluster`): the emulator widens its launch to
/// one testing cluster per thread, as it widens CTAs for threads in different CTAs, and runs
/// it. SB with fence.sc at gpu scope across clusters: (0, 0) is forbidden (PTX ISA, Memory
/// Consistency Model, axiom Fence-SC: the two fence.sc are morally strong at gpu scope and
/// ordered one way or the other in Fence-SC order), so every judged outcome is allowed.
#[test]
fn a_cross_cluster_test_runs_in_the_emulator() {
    let dir = tmp("litmus-run-cluster");
    let sb = write(
        dir.path(),
        "sb-cluster.litmus",
        "PTX SB+fence.sc.gpu-inter-cluster\n{\nx=0;\ny=0;\nP0:r0=0;\nP1:r1=0;\n}\n P0@cta 0,cluster 0,gpu 0 | P1@cta 1,cluster 1,gpu 0 ;\n st.relaxed.gpu x, 1 | st.relaxed.gpu y, 1 ;\n fence.sc.gpu | fence.sc.gpu ;\n ld.relaxed.gpu r0, y | ld.relaxed.gpu r1, x ;\nexists\n(P0:r0 == 0 /\\ P1:r1 == 0)\n",
    );
    let out = dir.path().join("run.json");
    let o = gpucts(&[
        "litmus",
        "run",
        sb.to_str().unwrap(),
        "--emulate",
        "--iterations",
        "4",
        "--json",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    let t = &json(&out)[0];
    assert_eq!(t["status"], "ran", "{t}");
    assert_eq!(t["verdict"]["outcome"], "forbidden", "{t}");
    assert!(t["judged"].as_u64().unwrap() > 0, "{t}");
    assert_eq!(t["forbidden_seen"].as_u64(), Some(0), "{t}");
    assert!(
        t["params"]["testing_workgroups"].as_u64().unwrap() >= 4,
        "two clusters of two CTAs: {t}"
    );
}
