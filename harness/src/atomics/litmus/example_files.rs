use super::*;
// Test-only: the examples' verdicts come from the checker, which the syntax tree itself
// never imports (the model reads litmus tests, never the reverse).
use crate::atomics::model::{check_file, Outcome};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../suites/litmus")
}

fn outcome(file: &str) -> Option<Outcome> {
    let r = check_file(&dir().join(file)).unwrap_or_else(|e| panic!("{e}"));
    r.verdict.outcome()
}

// Expected outcomes: the mapping-soundness result of Lustig et al. (ASPLOS'19) for the
// forbidden ones (C++ forbids MP with release/acquire, SB with seq_cst, lost RMW updates,
// CoRR), and its morally-strong definition for the cta-scope-across-CTAs ones, which
// Dat3M's MP/SB "outScope" tests expect allowed too.
#[test]
fn shipped_examples_check() {
    assert_eq!(
        outcome("mp-release-acquire-gpu.yaml"),
        Some(Outcome::Forbidden)
    );
    assert_eq!(
        outcome("mp-release-acquire-cta-inter-cta.yaml"),
        Some(Outcome::Allowed)
    );
    assert_eq!(outcome("sb-seq-cst-cluster.yaml"), Some(Outcome::Forbidden));
    assert_eq!(outcome("counter-atomic-add.yaml"), Some(Outcome::Allowed));
    assert_eq!(
        outcome("MP+fence-acq_rel-sys.litmus"),
        Some(Outcome::Forbidden)
    );
    assert_eq!(
        outcome("SB+fence-sc-cta-inter-cta.litmus"),
        Some(Outcome::Allowed)
    );
    assert_eq!(outcome("CoRR+relaxed-gpu.litmus"), Some(Outcome::Forbidden));
    assert_eq!(outcome("RelSeq+rmw-gpu.litmus"), Some(Outcome::Forbidden));
    // The finding in words read once, never "condition holds: no (exists: some consistent
    // execution satisfies it)".
    let r = check_file(&dir().join("counter-atomic-add.yaml"))
        .unwrap()
        .to_string();
    assert!(
        r.contains("forall (counter == 12): every consistent execution satisfies it, so the condition holds"),
        "{r}"
    );
    let r = check_file(&dir().join("mp-release-acquire-gpu.yaml"))
        .unwrap()
        .to_string();
    assert!(
        r.contains("): no consistent execution reaches it, so the condition fails"),
        "{r}"
    );
    assert!(!r.contains("condition holds: no"), "{r}");
}

#[test]
fn import_and_export_files_convert() {
    let yaml = import_file(&dir().join("CoRR+relaxed-gpu.litmus")).unwrap();
    let from_yaml_text = from_yaml(&yaml).unwrap();
    let from_litmus = load_file(&dir().join("CoRR+relaxed-gpu.litmus")).unwrap();
    assert_eq!(from_yaml_text, from_litmus);
    let text = export_file(&dir().join("mp-release-acquire-gpu.yaml")).unwrap();
    assert_eq!(
        import_dat3m(&text).unwrap(),
        load_file(&dir().join("mp-release-acquire-gpu.yaml")).unwrap()
    );
}

#[test]
fn file_errors_name_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("bad.litmus");
    std::fs::write(
        &p,
        "PTX bad\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.relaxed.gpu x 1 ;\nexists (x == 1)\n",
    )
    .unwrap();
    let e = check_file(&p).unwrap_err();
    use crate::atomics::model::CheckFileError;
    assert!(
        matches!(
            &e,
            CheckFileError::File(LitmusFileError::Dat3m {
                source: dat3m::ImportError {
                    line: 4,
                    col: 2,
                    ..
                },
                ..
            })
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.starts_with(&format!("{}:4:2: ", p.display())), "{e}");
    let p = tmp.path().join("bad.yaml");
    std::fs::write(
        &p,
        "name: t\nthreads:\n  - cta: 0\n    opz: []\ncondition: 'exists (x == 1)'\n",
    )
    .unwrap();
    let e = check_file(&p).unwrap_err();
    assert!(
        matches!(
            &e,
            CheckFileError::File(LitmusFileError::Yaml {
                source: YamlError::Syntax { line: 4, .. },
                ..
            })
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.starts_with(&format!("{}:4:", p.display())), "{e}");
    let p = tmp.path().join("t.txt");
    std::fs::write(&p, "").unwrap();
    let e = check_file(&p).unwrap_err();
    assert!(
        matches!(e, CheckFileError::File(LitmusFileError::UnknownType { .. })),
        "{e:?}"
    );
    assert!(e.to_string().contains("unknown litmus file type"));
}
