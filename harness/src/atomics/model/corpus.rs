//! Dat3M's public PTX litmus corpus (read in place through [`crate::atomics::corpus`], never
//! copied): every test with a published PTX v6.0 / v7.5 (and liveness) verdict gets Dat3M's
//! verdict; every other file gets a verdict or a clear refusal, none panics, and the whole
//! corpus takes under 30 s. Expected values are Dat3M's CSVs, not this checker's output.

use std::time::Instant;

use super::{try_check_with, Options};
use crate::atomics::corpus::{self, expectations};
use crate::atomics::litmus::load_file;

#[test]
fn dat3m_ptx_corpus_verdicts() {
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let data = crate::data::DataRoot::at(&checkout);
    let Some(dir) = corpus::dir(data.corpora.as_deref()) else {
        crate::require!(corpus: false, "../shared/corpora/dat3m-ptx");
        return;
    };
    let start = Instant::now();
    for which in [
        "ptx-v6.0",
        "ptx-v7.5",
        "liveness-ptx-v6.0",
        "liveness-ptx-v7.5",
    ] {
        let (csv, model, liveness) = corpus::case(which).unwrap();
        let t = corpus::run(&dir, csv, model, liveness).unwrap();
        eprintln!(
            "{csv}: {} listed, {} parsed, {} agree, {} disagree, {} refused",
            t.listed,
            t.parsed,
            t.agree,
            t.disagree.len(),
            t.refused.len()
        );
        assert!(t.listed > 0, "{csv}: no expectations read");
        assert!(t.disagree.is_empty(), "{csv}: {:#?}", t.disagree);
        assert_eq!(t.agree, t.listed, "{csv}: {:#?}", t.refused);
    }
    // Every other file: a verdict or a clear refusal (an error message), never a panic.
    let listed = expectations(&dir, "PTXv7_5-expected.csv").unwrap();
    let (mut files, mut verdicts, mut bound, mut refused) = (0, 0, 0, Vec::new());
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "litmus") {
                continue;
            }
            files += 1;
            let rel = p
                .strip_prefix(&dir)
                .map(|r| r.display().to_string())
                .unwrap_or_default();
            if listed.contains_key(&rel) {
                continue;
            }
            match load_file(&p)
                .map_err(|e| e.to_string())
                .and_then(|t| try_check_with(&t, &Options::default()).map_err(|e| e.to_string()))
            {
                Ok(v) if v.bound_reached => bound += 1,
                Ok(_) => verdicts += 1,
                Err(e) => refused.push(e),
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{files} files; unlisted: {verdicts} verdicts, {bound} bound reached, {} refused; whole corpus {secs:.1}s",
        refused.len()
    );
    for r in &refused {
        eprintln!("  {r}");
    }
    assert_eq!(files, 748, "the corpus has 748 .litmus files");
    assert!(secs < 30.0, "whole corpus took {secs:.1}s");
}
