//! `gpucts coverage`: every clause of the catalogue, each with the cases that cite it or that
//! the catalogue lists; every shipped case cites a catalogue clause; with a run's results, the
//! verdict counts per clause are the run's (counted here from results.json independently).
//! And `gpucts validate` refuses a clause id the catalogue does not have, at its position.

mod common;
use common::{gpucts, text, tmp};

use std::collections::{BTreeMap, HashMap, HashSet};

fn coverage_json(args: &[&str]) -> Vec<serde_json::Value> {
    let mut a = vec!["coverage", "--json"];
    a.extend_from_slice(args);
    let o = gpucts(&a);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    serde_json::from_str(&out).expect("a JSON list of clauses")
}

fn listed_ids() -> Vec<String> {
    let o = gpucts(&["--suite", "all", "--list"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    out.lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_clause_is_listed_and_every_case_cites_one() {
    let cov = coverage_json(&[]);
    // The catalogue's entries, counted from its text: one `  - id:` line each.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let catalogue = std::fs::read_to_string(root.join("suites/clauses/catalogue.yaml")).unwrap();
    let entries = catalogue
        .lines()
        .filter(|l| l.starts_with("  - id:"))
        .count();
    assert_eq!(cov.len(), entries);

    let mut ids = HashSet::new();
    let mut seen_covered = false;
    let listed: HashSet<String> = listed_ids().into_iter().collect();
    assert!(listed.len() > 1000, "the shipped suites list their cases");
    let mut citing: HashMap<String, usize> = HashMap::new();
    for c in &cov {
        let id = c["id"].as_str().unwrap();
        assert!(
            id.starts_with("ptx-interop-13.2 ") || id.starts_with("gpudirect-rdma "),
            "{id}"
        );
        assert!(ids.insert(id.to_string()), "{id} twice");
        assert!(!c["summary"].as_str().unwrap().is_empty(), "{id}");
        let cases = c["cases"].as_array().unwrap();
        // `untestable` only where no case is listed.
        if c.get("untestable").is_some() {
            assert!(cases.is_empty(), "{id}: untestable with cases");
        }
        // Clauses with no case come first.
        if cases.is_empty() {
            assert!(
                !seen_covered,
                "{id}: a clause without cases after one with cases"
            );
        } else {
            seen_covered = true;
        }
        for k in cases {
            let case = k["id"].as_str().unwrap();
            assert!(
                listed.contains(case),
                "{id}: lists {case}, which --list does not have"
            );
            if k["cites"].as_bool().unwrap() {
                *citing.entry(case.to_string()).or_default() += 1;
                // A case citing a clause is one of the catalogue's groups for it (so its
                // reach and strength are known).
                assert!(
                    k["on"].is_string(),
                    "{id}: {case} cites it but no glob lists it"
                );
            }
        }
    }
    for case in &listed {
        assert_eq!(
            citing.get(case),
            Some(&1),
            "{case} cites no catalogue clause"
        );
    }
}

#[test]
fn verdict_counts_per_clause_are_the_runs() {
    for (suite, filter) in [("abi", "abi.lint"), ("gpudirect", "gpudirect.userspace")] {
        let d = tmp("coverage");
        let junit = d.path().join("junit.xml");
        let o = gpucts(&[
            "--suite",
            suite,
            "--toolchain",
            "system",
            "--junit",
            junit.to_str().unwrap(),
            filter,
        ]);
        let (_, err) = text(&o);
        assert!(matches!(o.status.code(), Some(0) | Some(101)), "{err}");
        let results: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.path().join("results.json")).unwrap())
                .unwrap();
        let verdict: HashMap<&str, &str> = results["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["id"].as_str().unwrap(), c["verdict"].as_str().unwrap()))
            .collect();
        assert!(!verdict.is_empty());
        // The folder and the file name the same run.
        for arg in [d.path().to_path_buf(), d.path().join("results.json")] {
            let cov = coverage_json(&[arg.to_str().unwrap()]);
            let mut ran = 0;
            for c in &cov {
                let mut want: BTreeMap<String, u64> = BTreeMap::new();
                for k in c["cases"].as_array().unwrap() {
                    let v = verdict
                        .get(k["id"].as_str().unwrap())
                        .copied()
                        .unwrap_or("not_run");
                    *want.entry(v.to_string()).or_default() += 1;
                    ran += usize::from(v != "not_run");
                }
                let got: BTreeMap<String, u64> =
                    serde_json::from_value(c["verdicts"].clone()).unwrap();
                assert_eq!(got, want, "{}", c["id"]);
            }
            assert!(
                ran >= verdict.len(),
                "every case of the run is some clause's"
            );
        }
    }
}

#[test]
fn unreadable_results_are_bad_input() {
    let d = tmp("coverage-bad");
    let not_results = d.path().join("x.json");
    std::fs::write(&not_results, "{\"cases\": 3}").unwrap();
    for arg in [
        d.path().join("missing").to_str().unwrap().to_string(),
        not_results.to_str().unwrap().to_string(),
    ] {
        let o = gpucts(&["coverage", &arg]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{arg}: {err}");
        assert!(err.contains(&*arg) || err.contains("x.json"), "{err}");
    }
}

#[test]
fn validate_refuses_an_unknown_clause_id_at_its_position() {
    let d = tmp("coverage-validate");
    let file = d.path().join("s.yaml");
    let suite = "area: selftest\ncases:\n  - id: selftest.c.one\n    clause: plain text (a suite outside the shipped ones)\n    check: {equal: {left: 1, right: 1}}\n  - id: selftest.c.two\n    clause: ptx-interop-13.2 §9.9 nothing (detail)\n    check: {equal: {left: 1, right: 1}}\n";
    std::fs::write(&file, suite).unwrap();
    let o = gpucts(&["validate", file.to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    // Line 7, column 13: where `ptx-interop-13.2 §9.9` starts (counted by hand).
    assert!(err.contains(&format!("{}:7:13:", file.display())), "{err}");
    assert!(err.contains("ptx-interop-13.2 §9.9 nothing"), "{err}");
    assert!(!err.contains("selftest.c.one"), "{err}");
}

/// The catalogue's errata (each checked against the specification's text and the released
/// headers in `clauses::errata`) are shown by `gpucts coverage`, text and JSON, so a reader of a
/// verdict knows where the specification itself cannot be followed.
#[test]
fn coverage_shows_the_errata_of_the_specifications() {
    let o = gpucts(&["coverage"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let section = out
        .split("\nerrata in the specifications (")
        .nth(1)
        .expect("an errata section");
    for id in [
        "gpudirect-rdma §3.3 put_pages",
        "gpudirect-rdma §3.4 callback waits",
        "ptx-interop-13.2 ch. 6 example",
    ] {
        assert!(section.contains(id), "{id} missing from:\n{section}");
    }
    let cov = coverage_json(&[]);
    let with_erratum: Vec<&str> = cov
        .iter()
        .filter(|c| c["erratum"].is_string())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(
        with_erratum.contains(&"gpudirect-rdma §3.3 put_pages"),
        "{with_erratum:?}"
    );
}
