//! The environment is read in one module: `harness/src/config.rs` builds the run's settings
//! (`RunConfig`) and everything else gets them as values. This test scans the sources (as
//! `layers.rs` does) for an environment read anywhere else, and checks that every variable
//! config.rs reads is in the user's table, docs/ENVIRONMENT.md.

use std::path::{Path, PathBuf};

/// Files that still read variables themselves, to be moved onto `RunConfig`: none may be
/// added. (`gpudirect/kmod_cases.rs` reads GPUCTS_KMOD_FLAVOUR, GPUCTS_P2P_PEER and
/// P2P_RACE_ITERS; `RunConfig::{kmod_flavour, p2p_peer, p2p_race_iters}` hold them.)
const NOT_YET_MOVED: &[&str] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The lines of `text` that read or change the process environment, comments left out.
fn environment_reads(text: &str) -> Vec<(usize, String)> {
    const CALLS: [&str; 4] = [
        "env::var",
        "env::set_var",
        "env::remove_var",
        "use std::env",
    ];
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let code = l.split("//").next().unwrap_or("");
            CALLS.iter().any(|c| code.contains(c))
        })
        .map(|(i, l)| (i + 1, l.trim().to_string()))
        .collect()
}

#[test]
fn the_environment_is_read_only_in_config_rs() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "found {} source files", files.len());
    let mut found = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if rel == "config.rs" || NOT_YET_MOVED.contains(&rel.as_str()) {
            continue;
        }
        for (line, text) in environment_reads(&std::fs::read_to_string(f).unwrap()) {
            found.push(format!("src/{rel}:{line}: {text}"));
        }
    }
    assert!(
        found.is_empty(),
        "environment read outside src/config.rs (add a RunConfig field and pass it down):\n{}",
        found.join("\n")
    );
    // The scanner sees the reads it is meant to see.
    let config = std::fs::read_to_string(src.join("config.rs")).unwrap();
    assert!(!environment_reads(&config).is_empty());
    assert!(!environment_reads("let x = std::env::var_os(\"GPUCTS_X\");").is_empty());
    assert!(environment_reads("// std::env::var(\"GPUCTS_X\") in a comment").is_empty());
}

/// Every variable config.rs reads is in docs/ENVIRONMENT.md and in config.rs's own table.
#[test]
fn every_variable_read_is_documented() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let config = std::fs::read_to_string(root.join("harness/src/config.rs")).unwrap();
    let doc = std::fs::read_to_string(root.join("docs/ENVIRONMENT.md")).unwrap();
    let code: String = config
        .split("#[cfg(test)]")
        .next()
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let table: String = config
        .lines()
        .filter(|l| l.starts_with("//! |"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = Vec::new();
    for (i, _) in code.match_indices('"') {
        let rest = &code[i + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
            .collect();
        if name.len() > 3 && rest[name.len()..].starts_with('"') {
            names.push(name);
        }
    }
    names.sort();
    names.dedup();
    assert!(names.len() >= 18, "{names:?}");
    assert!(
        names.contains(&"GPUCTS_HIDE_TOOLS".to_string()),
        "{names:?}"
    );
    for n in &names {
        assert!(
            doc.contains(&format!("`{n}`")),
            "{n} missing from docs/ENVIRONMENT.md"
        );
        assert!(
            table.contains(&format!("`{n}`")),
            "{n} missing from config.rs's table"
        );
    }
}
