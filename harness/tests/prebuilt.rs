//! A rig without compilers (issue 26 item 4): `gpucts prebuild -o DIR` on a machine with
//! clang-19, then `gpucts --prebuilt DIR` with clang hidden (`GPUCTS_HIDE_TOOLS=clang`, what a
//! GPU rig without clang sees). The clang and llvm cases give the verdicts the real clang gave
//! (the independent reference: the same cases run with clang present); without the store they
//! skip naming clang; a case the store does not hold skips naming the store; an input the
//! store lacks is an error naming it, never another answer. rustc's cases, recorded with
//! `--producers clang,llvm,rustc`, replay the same way on a rig without Rust.

mod common;

use common::{fixture, gpucts_env, text, tmp};
use std::collections::BTreeMap;
use std::path::Path;

use gpucts::backend::toolchain::Toolchain;
use gpucts::capability::Capability;

/// case id → (verdict, the status's text), from a run's results.json.
fn results(junit: &Path) -> BTreeMap<String, (String, String)> {
    let text = std::fs::read_to_string(junit.with_file_name("results.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                (
                    c["verdict"].as_str().unwrap().to_string(),
                    c["status"].to_string(),
                ),
            )
        })
        .collect()
}

fn verdicts(r: &BTreeMap<String, (String, String)>) -> BTreeMap<String, String> {
    r.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect()
}

/// Every case ran skips because the store `d` does not hold it, naming the store.
fn assert_skip_naming_the_store(cases: &BTreeMap<String, (String, String)>, d: &str) {
    assert!(!cases.is_empty());
    for (id, (verdict, status)) in cases {
        assert_eq!(verdict, "skip", "{id}: {status}");
        assert!(
            status.contains("does not hold this case") && status.contains(d),
            "{status}"
        );
    }
}

/// Run `args` (plus `--junit`) with extra environment; the results.
fn run(
    reports: &Path,
    name: &str,
    args: &[&str],
    env: &[(&str, &Path)],
) -> (Option<i32>, BTreeMap<String, (String, String)>, String) {
    let junit = reports.join(name).join("junit.xml");
    let mut all = args.to_vec();
    all.extend_from_slice(&["--junit", junit.to_str().unwrap()]);
    let o = gpucts_env(&all, env);
    let (out, err) = text(&o);
    (o.status.code(), results(&junit), format!("{out}\n{err}"))
}

#[test]
fn a_rig_without_clang_runs_the_clang_cases_from_a_prebuilt_store() {
    let tc = Toolchain::discover_system();
    gpucts::require!(tc.has(Capability::Clang), "clang-19");
    let store = tmp("prebuilt-store");
    let reports = tmp("prebuilt-reports");
    let dir = store.path().join("store");
    let d = dir.to_str().unwrap();
    // Offline cases of each area that compile with clang-19 or llc-19, and a device case
    // (compiled only here).
    let selections = [
        ("syscalls", "syscalls.layout.llc.mix1"),
        ("syscalls", "syscalls.producer.clang"),
        ("syscalls", "syscalls.gpu.assert.clang"),
        ("atomics", "atomics.mapping.clang.fetch_add"),
        ("atomics", "atomics.mapping.llvm.exchange"),
        ("abi", "abi.params.clang.s1"),
        ("dwarf", "dwarf.producer.clang_g.0"),
    ];
    let mut compiled = 0;
    for (suite, filter) in selections {
        let o = gpucts_env(&["prebuild", "--suite", suite, filter, "-o", d], &[]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "prebuild {filter}: {out}\n{err}");
        let line = out
            .lines()
            .find(|l| l.starts_with("gpucts prebuild: "))
            .unwrap_or_else(|| panic!("no summary line: {out}"));
        let n: usize = line["gpucts prebuild: ".len()..]
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(n > 0, "{line}");
        assert!(line.contains(" 0 not prebuilt, 0 errors"), "{line}");
        compiled += n;
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["cases"].as_array().unwrap().len(), compiled);
    assert!(manifest["tools"]["clang-19"]
        .as_str()
        .unwrap()
        .contains("clang version 19"));

    let hidden = Path::new("clang");
    // The store answers, not the disk cache of earlier clang runs on this machine (the same
    // tool and input: a hit would hide an output the store lacks).
    let replay: [(&str, &Path); 2] = [
        ("GPUCTS_HIDE_TOOLS", hidden),
        ("GPUCTS_TOOL_CACHE", Path::new("off")),
    ];
    for (suite, filter) in selections {
        let name = filter.replace('.', "-");
        let (code, want, log) = run(
            reports.path(),
            &format!("{name}-clang"),
            &["--suite", suite, filter],
            &[],
        );
        assert_eq!(code, Some(0), "{filter} with clang: {log}");
        let (code, got, log) = run(
            reports.path(),
            &format!("{name}-prebuilt"),
            &["--prebuilt", d, "--suite", suite, filter],
            &replay,
        );
        assert_eq!(code, Some(0), "{filter} from the store: {log}");
        // The record says the clang outputs were replayed, not compiled on this machine.
        let record: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                reports
                    .path()
                    .join(format!("{name}-prebuilt"))
                    .join("results.json"),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(
            record["fingerprint"]["clang_origin"], "prebuilt",
            "{filter}"
        );
        assert_eq!(verdicts(&got), verdicts(&want), "{filter}: verdicts differ");
        let (_, bare, log) = run(
            reports.path(),
            &format!("{name}-bare"),
            &["--suite", suite, filter],
            &replay,
        );
        assert_eq!(bare.len(), want.len(), "{log}");
        for (id, (verdict, status)) in &bare {
            assert_eq!(verdict, "skip", "{id} without clang or store: {status}");
            // A device case on a machine without one skips for the device first.
            assert!(
                status.contains("clang") || status.contains("\"capability\":\"gpu\""),
                "{id}: {status}"
            );
        }
        if !filter.contains(".gpu.") {
            assert!(
                // waived: the failure's findings matched a shipped waiver's, line by line
                want.values().any(|(v, _)| v == "pass" || v == "waived"),
                "{filter}: nothing passed with clang; the comparison proves nothing"
            );
        }
    }

    // A clang case the store does not hold skips, naming the store.
    let (code, other, log) = run(
        reports.path(),
        "uncovered",
        &[
            "--prebuilt",
            d,
            "--suite",
            "atomics",
            "atomics.mapping.clang.fetch_or",
        ],
        &replay,
    );
    assert_eq!(code, Some(0), "{log}");
    assert_skip_naming_the_store(&other, d);

    // Isolated children replay the parent's store.
    let selftest = fixture("prebuilt.yaml");
    let o = gpucts_env(
        &["prebuild", "--suite", selftest.to_str().unwrap(), "-o", d],
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let (code, children, log) = run(
        reports.path(),
        "child",
        &["--prebuilt", d, "--suite", selftest.to_str().unwrap()],
        &replay,
    );
    assert_eq!(code, Some(0), "{log}");
    assert_eq!(children.len(), 2);
    assert!(children.values().all(|(v, _)| v == "pass"), "{children:?}");

    // An input the store lacks (its outputs removed) is an error that names the store.
    for e in std::fs::read_dir(dir.join("outputs")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let (code, lost, log) = run(
        reports.path(),
        "lost",
        &[
            "--prebuilt",
            d,
            "--suite",
            "atomics",
            "atomics.mapping.clang.fetch_add",
        ],
        &replay,
    );
    assert_eq!(code, Some(101), "{log}");
    assert!(!lost.is_empty());
    for (id, (verdict, status)) in &lost {
        assert_ne!(verdict, "pass", "{id}");
        assert!(
            status.contains("no prebuilt output for this input"),
            "{id}: {status}"
        );
    }
}

/// rustc's outputs in a store (`--producers clang,llvm,rustc`): a rig without Rust gives
/// rustc's atomics, abi and xcall cases the verdicts rustc gave here, and a rustc case the
/// store does not hold skips naming the store.
#[test]
fn a_rig_without_rust_runs_the_rustc_cases_from_a_prebuilt_store() {
    let tc = Toolchain::discover_system();
    gpucts::require!(tc.has(Capability::Clang), "clang-19");
    gpucts::require!(tc.has(Capability::Rustc), "rustc with rust-src");
    let store = tmp("prebuilt-rustc-store");
    let reports = tmp("prebuilt-rustc-reports");
    let dir = store.path().join("store");
    let d = dir.to_str().unwrap();
    let selections = [
        ("atomics", "atomics.mapping.rustc.load"),
        ("abi", "abi.params.rustc.s8a4"),
        ("xcall", "xcall.pair.rustc.nvrtc.5"),
    ];
    for (suite, filter) in selections {
        let o = gpucts_env(
            &[
                "prebuild",
                "--producers",
                "clang,llvm,rustc",
                "--suite",
                suite,
                filter,
                "-o",
                d,
            ],
            &[],
        );
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "prebuild {filter}: {out}\n{err}");
        assert!(out.contains(" 0 not prebuilt, 0 errors"), "{out}");
    }
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"rustc\": \"rustc "), "{manifest}");
    let replay: [(&str, &Path); 2] = [
        ("GPUCTS_HIDE_TOOLS", Path::new("rustc")),
        ("GPUCTS_TOOL_CACHE", Path::new("off")),
    ];
    for (suite, filter) in selections {
        let name = filter.replace('.', "-");
        let (code, want, log) = run(
            reports.path(),
            &format!("{name}-rustc"),
            &["--suite", suite, filter],
            &[],
        );
        assert_eq!(code, Some(0), "{filter} with rustc: {log}");
        assert!(
            want.values().any(|(v, _)| v == "pass" || v == "waived"),
            "{filter}: nothing passed with rustc; the comparison proves nothing"
        );
        let (code, got, log) = run(
            reports.path(),
            &format!("{name}-prebuilt"),
            &["--prebuilt", d, "--suite", suite, filter],
            &replay,
        );
        assert_eq!(code, Some(0), "{filter} from the store: {log}");
        assert_eq!(verdicts(&got), verdicts(&want), "{filter}: verdicts differ");
        let record = std::fs::read_to_string(
            reports
                .path()
                .join(format!("{name}-prebuilt"))
                .join("results.json"),
        )
        .unwrap();
        let record: serde_json::Value = serde_json::from_str(&record).unwrap();
        assert_eq!(
            record["fingerprint"]["rustc_origin"], "prebuilt",
            "{filter}"
        );
    }
    // A rustc case the store does not hold skips, naming the store.
    let (code, other, log) = run(
        reports.path(),
        "uncovered",
        &[
            "--prebuilt",
            d,
            "--suite",
            "atomics",
            "atomics.mapping.rustc.store",
        ],
        &replay,
    );
    assert_eq!(code, Some(0), "{log}");
    assert_skip_naming_the_store(&other, d);
}

#[test]
fn prebuilt_usage_errors_exit_2_naming_the_problem() {
    let empty = tmp("prebuilt-empty");
    let e = empty.path().to_str().unwrap();
    let o = gpucts_env(&["--prebuilt", e, "--suite", "syscalls", "--list"], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no readable manifest.json"), "{err}");
    let o = gpucts_env(&["prebuild", "--producers", "nvrtc", "-o", e], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("`nvrtc` is not one prebuild records"), "{err}");
    // clang and llvm share clang-19's LLVM and one store: one alone is refused.
    let o = gpucts_env(&["prebuild", "--producers", "clang", "-o", e], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("give --producers clang,llvm"), "{err}");
    // rustc comes on top of clang and llvm, never instead of them.
    let o = gpucts_env(&["prebuild", "--producers", "rustc", "-o", e], &[]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("give --producers clang,llvm (and rustc)"),
        "{err}"
    );
    let o = gpucts_env(&["prebuild", "--prebuilt", e, "-o", e], &[]);
    assert_eq!(o.status.code(), Some(2));
}

/// A stand-in ptxas on `PATH` (first, so discovery takes it): `--version` says `version`;
/// on PTX that clang-19 wrote (LLVM's NVPTX back end) it rejects the function whose
/// definition comes first, as a newer ptxas rejecting a construct would, naming its line the
/// way ptxas does; any other input goes to the real ptxas.
fn fake_ptxas(bin: &Path, real: &Path, version: &str) {
    use std::os::unix::fs::PermissionsExt;
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "ptxas: NVIDIA (R) Ptx optimizing assembler"
  echo "Cuda compilation tools, release 13.0, V{version}"
  exit 0
fi
for a in "$@"; do case "$a" in *.ptx) input="$a";; esac; done
if grep -q "LLVM NVPTX" "$input"; then
  line=$(grep -n "^.visible .entry\|^.visible .func\|^.func\|^.entry" "$input" | head -1 | cut -d: -f1)
  echo "ptxas $input, line $((line + 1)); error   : Feature 'stand-in' not supported here" >&2
  echo "ptxas fatal   : Ptx assembly aborted due to errors" >&2
  exit 255
fi
exec "{real}" "$@"
"#,
        real = real.display()
    );
    let path = bin.join("ptxas");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A rig whose ptxas rejects functions the build machine's accepted: xcall compiles the batch
/// again without them, an input the store never recorded. Each case of the batch is then an
/// error naming the store, the missing input and both ptxas versions (from the manifest),
/// not the seeds' failures of a batch replayed without its reassembly. The run also keeps its
/// selection with `--prebuilt`: it computes the one pair it runs (3 jobs), not every batch.
#[test]
fn a_rig_whose_ptxas_differs_gets_an_error_naming_the_store() {
    let tc = Toolchain::discover_system();
    gpucts::require!(
        tc.has(Capability::Clang) && tc.has(Capability::Ptxas) && tc.has(Capability::Nvjitlink),
        "clang-19, ptxas and nvJitLink"
    );
    let real = tc.component(Capability::Ptxas).unwrap();
    let store = tmp("prebuilt-ptxas");
    let reports = tmp("prebuilt-ptxas-reports");
    let dir = store.path().join("store");
    let d = dir.to_str().unwrap();
    let case = "xcall.pair.clang.gpucts.0";
    let off = Path::new("0");
    let o = gpucts_env(
        &["prebuild", "--suite", "xcall", "--exact", case, "-o", d],
        &[],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "prebuild: {out}\n{err}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["ptxas"], real.version.as_str(), "{manifest}");

    // The same ptxas: the store answers every input.
    let (code, same, log) = run(
        reports.path(),
        "same",
        &["--prebuilt", d, "--suite", "xcall", "--exact", case],
        &[
            ("GPUCTS_HIDE_TOOLS", Path::new("clang")),
            ("GPUCTS_TOOL_CACHE", off),
        ],
    );
    assert_eq!(code, Some(0), "{log}");
    assert!(
        ["pass", "waived"].contains(&same[case].0.as_str()),
        "{case}: {:?}",
        same[case]
    );

    let bin = tmp("prebuilt-ptxas-bin");
    fake_ptxas(bin.path(), &real.path, "13.0.48");
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (code, other, log) = run(
        reports.path(),
        "other",
        &["--prebuilt", d, "--suite", "xcall", "--exact", case],
        &[
            ("GPUCTS_HIDE_TOOLS", Path::new("clang")),
            ("GPUCTS_TOOL_CACHE", off),
            ("GPUCTS_XCALL_TIMES", Path::new("1")),
            ("PATH", Path::new(&path)),
        ],
    );
    assert_eq!(code, Some(101), "{log}");
    let (verdict, status) = &other[case];
    assert_eq!(verdict, "fail", "{status}");
    for part in [
        "\"status\":\"error\"",
        "compiling the batch again without them did not run",
        "no prebuilt output for this input in",
        d,
        &format!("prebuilt where ptxas {} ran", real.version),
        "this machine's ptxas is 13.0.48",
    ] {
        assert!(status.contains(part), "`{part}` not in {status}");
    }
    let jobs = log
        .lines()
        .find_map(|l| l.split_once(" jobs on ").map(|(a, _)| a))
        .and_then(|a| a.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no jobs line: {log}"));
    assert_eq!(jobs, "3", "{log}");
}
