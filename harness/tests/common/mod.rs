//! Helpers shared by the end-to-end tests of the `gpucts` binary (each test file is its own
//! crate and uses a subset, hence the `dead_code` allowance).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A fixture suite or file under `harness/tests/fixtures/`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Run gpucts with `args` and extra environment, rooted at the repository.
pub fn gpucts_env(args: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpucts"));
    c.args(args).env(
        "GPUCTS_ROOT",
        Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(),
    );
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("gpucts runs")
}

/// Run gpucts with `args`, rooted at the repository.
pub fn gpucts(args: &[&str]) -> Output {
    gpucts_env(args, &[])
}

/// Run fixture suite `name` (harness/tests/fixtures/) with `--toolchain system`, JUnit at
/// `junit` (the other reports beside it), and `extra` arguments.
pub fn run_fixture(name: &str, junit: &Path, extra: &[&str]) -> Output {
    let suite = fixture(name);
    let mut args = vec![
        "--suite",
        suite.to_str().unwrap(),
        "--toolchain",
        "system",
        "--junit",
        junit.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    gpucts(&args)
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A directory for one test's reports, removed when the test ends.
pub fn tmp(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("gpucts-e2e-{name}-"))
        .tempdir()
        .unwrap()
}

/// case id → verdict, from a run's results.json.
pub fn verdicts(results: &Path) -> BTreeMap<String, String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}
