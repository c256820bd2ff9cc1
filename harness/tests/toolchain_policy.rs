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
        .args(["--junit", "/dev/null"])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    // Nothing installed, and the case skips naming ptxas and the policy.
    assert!(!stderr.contains("installing"), "{stderr}");
    assert!(
        stdout.contains("abi.fundamental.b32")
            && stdout.contains("ptxas")
            && stdout.contains("--toolchain system"),
        "{stdout}"
    );
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("0 passed, 0 failed, 1 skipped"), "{all}");
}
