//! Dat3M's public PTX litmus corpus (`../shared/corpora/dat3m-ptx`, read in place, never
//! copied): every test with a published PTX v6.0 / v7.5 verdict must parse and get Dat3M's
//! verdict under the matching model; every other file gets a verdict or a clear refusal.
//! Expected values are Dat3M's published CSVs (1 = the condition holds as quantified, see the
//! corpus's NOTES.md), not this checker's output.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{try_check_with, Model, Options};
use crate::atomics::litmus::load_file;

/// `../shared/corpora/dat3m-ptx` from the checkout (one level further up from a worktree).
fn corpus() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let near = root.join("../../shared/corpora/dat3m-ptx");
    if near.exists() {
        near
    } else {
        root.join("../../../shared/corpora/dat3m-ptx")
    }
}

fn expectations(dir: &Path, csv: &str) -> BTreeMap<String, bool> {
    let text = std::fs::read_to_string(dir.join(csv)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .filter_map(|l| {
            let (p, v) = l.split_once(',')?;
            let p = p.trim().strip_prefix("litmus/PTX/")?;
            Some((p.to_string(), v.trim() == "1"))
        })
        .collect()
}

#[derive(Debug, Default)]
struct Tally {
    listed: usize,
    parsed: usize,
    agree: usize,
    refused: Vec<String>,
    disagree: Vec<String>,
}

fn run(dir: &Path, csv: &str, model: Model) -> Tally {
    let mut t = Tally::default();
    for (path, expected) in expectations(dir, csv) {
        t.listed += 1;
        let test = match load_file(&dir.join(&path)) {
            Ok(x) => x,
            Err(e) => {
                t.refused.push(format!("{path}: {e}"));
                continue;
            }
        };
        t.parsed += 1;
        let opts = Options {
            unroll: super::DEFAULT_UNROLL,
            model: Some(if test.uses_proxies() {
                Model::V75
            } else {
                model
            }),
            liveness: false,
        };
        match try_check_with(&test, &opts) {
            Ok(v) if v.bound_reached => t.refused.push(format!("{path}: bound reached")),
            Ok(v) if v.condition_holds == expected => t.agree += 1,
            Ok(v) => t.disagree.push(format!(
                "{path}: expected {}, got {}",
                u8::from(expected),
                u8::from(v.condition_holds)
            )),
            Err(e) => t.refused.push(format!("{path}: {e}")),
        }
    }
    t
}

#[test]
fn dat3m_ptx_corpus_verdicts() {
    let dir = corpus();
    crate::require!(dir.exists(), "../shared/corpora/dat3m-ptx");
    let start = Instant::now();
    let v6 = run(&dir, "PTXv6_0-expected.csv", Model::V60);
    let v75 = run(&dir, "PTXv7_5-expected.csv", Model::V75);
    // Every other file: a verdict or a clear refusal, never a panic.
    let mut others = (0usize, 0usize, 0usize);
    let listed: std::collections::BTreeSet<String> = expectations(&dir, "PTXv7_5-expected.csv")
        .into_keys()
        .collect();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "litmus") {
                let rel = p
                    .strip_prefix(&dir)
                    .map(|r| r.display().to_string())
                    .unwrap_or_default();
                if listed.contains(&rel) {
                    continue;
                }
                others.0 += 1;
                match load_file(&p).and_then(|t| try_check_with(&t, &Options::default())) {
                    Ok(v) if !v.bound_reached => others.1 += 1,
                    _ => others.2 += 1,
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    for (name, t) in [("v6.0", &v6), ("v7.5", &v75)] {
        eprintln!(
            "{name}: {} listed, {} parsed, {} agree, {} disagree, {} refused",
            t.listed,
            t.parsed,
            t.agree,
            t.disagree.len(),
            t.refused.len()
        );
        for d in t.disagree.iter().chain(&t.refused) {
            eprintln!("  {d}");
        }
    }
    eprintln!(
        "others: {} files, {} verdicts, {} refused/bound reached; whole corpus {secs:.1}s",
        others.0, others.1, others.2
    );
    assert!(
        v6.disagree.is_empty(),
        "v6.0 disagreements: {:#?}",
        v6.disagree
    );
    assert_eq!(v6.agree, v6.listed, "every v6.0 test agrees");
}

/// Dat3M's liveness expectations (`Property.TERMINATION`: 1 = no execution stays in a loop
/// forever or blocks at a barrier under a fair scheduler).
#[test]
fn dat3m_ptx_liveness_verdicts() {
    let dir = corpus();
    crate::require!(dir.exists(), "../shared/corpora/dat3m-ptx");
    for (csv, model) in [
        ("PTXv6_0-Liveness-expected.csv", Model::V60),
        ("PTXv7_5-Liveness-expected.csv", Model::V75),
    ] {
        let exp = expectations(&dir, csv);
        assert!(!exp.is_empty(), "{csv}: no expectations read");
        let (mut agree, mut wrong) = (0, Vec::new());
        for (path, terminates) in &exp {
            let opts = Options {
                unroll: super::DEFAULT_UNROLL,
                model: Some(model),
                liveness: true,
            };
            let got = load_file(&dir.join(path))
                .and_then(|t| try_check_with(&t, &opts))
                .map(|v| v.liveness_violation.is_some_and(|w| w.is_none()));
            match got {
                Ok(g) if g == *terminates => agree += 1,
                other => wrong.push(format!("{path}: expected {terminates}, got {other:?}")),
            }
        }
        eprintln!("{csv}: {} listed, {agree} agree", exp.len());
        assert!(wrong.is_empty(), "{csv}: {wrong:#?}");
    }
}
