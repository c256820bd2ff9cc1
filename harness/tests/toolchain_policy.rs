//! End to end: `--toolchain system` uses only what the system itself has (README "Quick
//! start"): neither installing NVIDIA's wheels nor using ones a `toolchain install` left in
//! the managed directory.

use std::process::Command;

#[test]
fn toolchain_system_ignores_the_managed_wheels() {
    let system_cuda = ["/usr/local/cuda/bin/ptxas", "/usr/bin/ptxas"]
        .iter()
        .any(|p| std::path::Path::new(p).exists())
        || std::env::var_os("CUDA_HOME").is_some()
        || std::env::var_os("CUDA_PATH").is_some();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let reports = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpucts"))
        .current_dir(&root)
        .args(["--suite", "abi", "--toolchain", "system", "--exact"])
        .arg("abi.fundamental.b32")
        .arg("--junit")
        .arg(reports.path().join("junit.xml"))
        .args(["--format", "json"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // Nothing installed either way. Without a system CUDA the case skips naming ptxas and the
    // policy (the JSON event carries the whole reason; the console line is short); with one
    // (a rig), every component the run used is the system's, none from the managed wheels.
    assert!(!stderr.contains("installing"), "{stderr}");
    let event = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["name"] == "abi.fundamental.b32" && v["event"] != "started")
        .unwrap_or_else(|| panic!("no event for the case: {stdout}"));
    if system_cuda {
        assert_eq!(event["verdict"], "pass", "{event}");
        let results: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(reports.path().join("results.json")).unwrap(),
        )
        .unwrap();
        let tools = results["probe"]["toolchain"].as_object().unwrap();
        for (name, t) in tools {
            if let Some(origin) = t["origin"].as_str() {
                assert_eq!(origin, "system", "{name}: {t}");
            }
        }
        return;
    }
    let reason = event["reason"].as_str().unwrap_or_default();
    assert_eq!(event["capability"], "ptxas", "{event}");
    assert!(reason.contains("--toolchain system"), "{event}");
}
