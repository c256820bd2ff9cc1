//! A test whose tool is missing is reported, never passed silently: with
//! `GPUCTS_REQUIRE_TOOLS=1` (CI) it fails, without it it says `ignored (missing: …)`. Checked
//! by running this test binary again on one tool-dependent test, with the tool hidden through
//! `GPUCTS_HIDE_TOOLS` (so the check holds on a machine that has the tool, CI's included).

use std::process::Command;

use gpucts::backend::toolchain::{Toolchain, HIDE_VAR};
use gpucts::capability::Capability;

/// The probe: a test that needs clang-19, the way every tool-dependent unit test asks for it.
#[test]
#[ignore = "run in a child process by the_probe_fails_only_when_tools_are_required"]
fn probe_needs_clang() {
    let tc = Toolchain::discover_system();
    gpucts::require!(tc.has(Capability::Clang), "clang-19");
    println!("probe ran with clang-19");
}

/// Runs the probe in a fresh process of this binary with `env`; (success, stdout + stderr).
fn probe(env: &[(&str, &str)]) -> (bool, String) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        "probe_needs_clang",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env_remove("GPUCTS_REQUIRE_TOOLS")
    .env_remove(HIDE_VAR);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn the_probe_fails_only_when_tools_are_required() {
    // Hidden and required: the test fails, naming the tool and the variable.
    let (ok, text) = probe(&[(HIDE_VAR, "clang"), ("GPUCTS_REQUIRE_TOOLS", "1")]);
    assert!(!ok, "a required missing tool must fail the test:\n{text}");
    assert!(
        text.contains("required tool missing: clang-19 (GPUCTS_REQUIRE_TOOLS is set)"),
        "{text}"
    );
    // Hidden, not required: it returns early and says so.
    let (ok, text) = probe(&[(HIDE_VAR, "clang")]);
    assert!(ok, "{text}");
    assert!(text.contains("ignored (missing: clang-19)"), "{text}");
    assert!(!text.contains("probe ran"), "{text}");
}
