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
    if system_cuda {
        eprintln!("ignored (a system CUDA toolkit is installed: ptxas would be found)");
        return;
    }
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(env!("CARGO_BIN_EXE_gpucts"))
        .current_dir(&root)
        .args(["--suite", "abi", "--toolchain", "system", "--exact"])
        .arg("abi.fundamental.b32")
        .args(["--junit", "/dev/null", "--format", "json"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // Nothing installed, and the case skips naming ptxas and the policy (the JSON event
    // carries the whole reason; the console line is short).
    assert!(!stderr.contains("installing"), "{stderr}");
    let event = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["name"] == "abi.fundamental.b32" && v["event"] != "started")
        .unwrap_or_else(|| panic!("no event for the case: {stdout}"));
    let reason = event["reason"].as_str().unwrap_or_default();
    assert_eq!(event["capability"], "ptxas", "{event}");
    assert!(reason.contains("--toolchain system"), "{event}");
}
