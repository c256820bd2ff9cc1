//! The companion module's scenarios exist twice: as the C KTAP runner's table
//! (kmod/tests/p2p_scenarios*.c, run in the VM before the harness) and as the harness's
//! `gpudirect.kmod.*` cases (suites/gpudirect.yaml, `check: {kmod: <name>}`). The two lists
//! must name the same scenarios, except the ones only the harness can run, each listed here
//! with why.

use std::collections::BTreeSet;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Scenarios only the harness runs (written in Rust first; not yet ported to the C runner):
/// what each covers. Porting one removes it from here and the test says so.
const HARNESS_ONLY: [(&str, &str); 2] = [
    (
        "pin_size_classes",
        "every size class (1 B to 32 MB) at every offset class, rounded to the GPU page",
    ),
    (
        "fork_exit_with_live_pins",
        "a forked child exits holding the descriptor; the parent's pins are untouched",
    ),
];

/// The C runner's sources: p2p_scenarios.c (the table and main) and the scenario files
/// p2p_scenarios_*.c, one text.
fn c_sources() -> String {
    let dir = root().join("kmod/tests");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("p2p_scenarios") && name.ends_with(".c")
        })
        .collect();
    files.sort();
    assert!(
        files.contains(&dir.join("p2p_scenarios.c")),
        "no p2p_scenarios.c in {files:?}"
    );
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect()
}

/// `{ "name", sc_function },` rows of the C runner's scenario table.
fn c_scenarios() -> BTreeSet<String> {
    let text = c_sources();
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix("{ \"")?;
            let (name, tail) = rest.split_once('"')?;
            tail.trim_start_matches(',')
                .trim()
                .starts_with("sc_")
                .then(|| name.to_string())
        })
        .collect()
}

/// `check: {kmod: <name>}` of the suite.
fn suite_scenarios() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("suites/gpudirect.yaml")).unwrap();
    text.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("check: {kmod:")?;
            Some(rest.trim().trim_end_matches('}').trim().to_string())
        })
        .collect()
}

#[test]
fn the_c_runner_and_the_suite_name_the_same_scenarios() {
    let c = c_scenarios();
    let suite = suite_scenarios();
    // Both readers found a real list (the VM runs 44 C scenarios per flavour).
    assert!(c.len() >= 44, "{c:?}");
    let harness_only: BTreeSet<String> = HARNESS_ONLY.iter().map(|(n, _)| n.to_string()).collect();
    for name in &harness_only {
        assert!(
            suite.contains(name),
            "{name}: listed harness-only but not in the suite"
        );
        assert!(
            !c.contains(name),
            "{name}: the C runner has it now; drop it from HARNESS_ONLY"
        );
    }
    let only_c: Vec<&String> = c.difference(&suite).collect();
    let only_suite: Vec<&String> = suite
        .difference(&c)
        .filter(|n| !harness_only.contains(*n))
        .collect();
    assert!(
        only_c.is_empty() && only_suite.is_empty(),
        "only in kmod/tests/p2p_scenarios*.c: {only_c:?}; only in suites/gpudirect.yaml: {only_suite:?}"
    );
}
