//! `gpucts validate` catches everything a run would (issue 10 Deliver 2): a case whose `check:`
//! names a missing file, an unknown producer, test, probe or value its area rejects is a suite
//! error at `file:line:column`, exit 2, for `validate` and for a run, which then runs nothing.
//! Each expected position is where this test wrote the bad value into its own suite text.

mod common;
use common::{gpucts, text, tmp};

/// 1-based line and column (in characters) of the first `needle` at or after `after` in `text`.
fn pos_of(text: &str, after: &str, needle: &str) -> (usize, usize) {
    let from = text.find(after).expect("marker in the text");
    let at = from + text[from..].find(needle).expect("needle in the text");
    let line = text[..at].matches('\n').count() + 1;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    (line, text[line_start..at].chars().count() + 1)
}

/// A suite of `area` with one valid case and one bad case (`bad` is the YAML after `- id:`).
fn suite(area: &str, good: &str, bad: &str) -> String {
    format!(
        "area: {area}\ncases:\n  - id: {area}.ok.one\n    clause: test clause\n    check: {good}\n  - id: {area}.bad.{bad}\n"
    )
}

struct Bad {
    area: &'static str,
    good: &'static str,
    /// The bad entry after its `- id: <area>.bad.`: the case name, clause and check.
    entry: &'static str,
    /// What the message must name (the value written wrong).
    names: &'static str,
    /// The text the position points at (its first occurrence in the bad entry).
    at: &'static str,
}

const ABI_GOOD: &str = "{lint: {file: ptx-corpus/hand_conforming.ptx, exit: 0, rules: []}}";
const ATOMICS_GOOD: &str = "{model: {test: MP.rel_acq.gpu.inter_cta}}";
const SYSCALLS_GOOD: &str = "{probe: {tool: lint, probe: vprintf_guide}}";
const DWARF_GOOD: &str = "{check_file: {file: ptx-corpus/dwarf/negative/conforming.ptx}}";
const XCALL_GOOD: &str = "{mangle: {seed: 3}}";

fn classes() -> Vec<Bad> {
    vec![
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "lintfile\n    clause: c\n    check:\n      lint: {file: ptx-corpus/no-such-file.ptx, exit: 0, rules: []}\n",
            names: "ptx-corpus/no-such-file.ptx",
            at: "file: ptx-corpus/no-such",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "pp.{p}\n    clause: c\n    matrix:\n      p: [nvrtc, gcc9]\n    check:\n      param_passing: {producer: \"{p}\", signature: int, position: param}\n",
            names: "gcc9",
            at: "gcc9",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "sig\n    clause: c\n    check:\n      param_passing: {producer: nvrtc, signature: int128, position: param}\n",
            names: "int128",
            at: "signature: int128",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "posn\n    clause: c\n    check:\n      param_passing: {producer: nvrtc, signature: int, position: middle}\n",
            names: "middle",
            at: "position: middle",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "fund\n    clause: c\n    check:\n      fundamental_type:\n        size: 16\n        ptx_type: u128\n        align: 16\n",
            names: "u128",
            at: "ptx_type: u128",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "rule\n    clause: c\n    check:\n      types_file: {oracle: clang, file: suites/abi/types.yaml, type: no_such_type}\n",
            names: "no_such_type",
            at: "type: no_such_type",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "corpus\n    clause: c\n    check:\n      lint_corpus: {file: suites/abi.yaml, exit: 0, rules: []}\n",
            names: "manifest",
            at: "file: suites/abi.yaml",
        },
        Bad {
            area: "xcall",
            good: XCALL_GOOD,
            entry: "seed\n    clause: c\n    check:\n      pair: {caller: nvrtc, callee: clang, seed: 99999}\n",
            names: "99999",
            at: "seed: 99999",
        },
        Bad {
            area: "xcall",
            good: XCALL_GOOD,
            // The hand-written corpus has only its own signatures (seeds 1000..1013).
            entry: "corpus\n    clause: c\n    check:\n      pair: {caller: corpus, callee: nvrtc, seed: 7}\n",
            names: "hand-written corpus",
            at: "seed: 7",
        },
        Bad {
            area: "xcall",
            good: XCALL_GOOD,
            entry: "oldest\n    clause: c\n    check:\n      oldest: {caller: clang, callee: llvm, seed: 5000}\n",
            names: "5000",
            at: "seed: 5000",
        },
        Bad {
            area: "syscalls",
            good: SYSCALLS_GOOD,
            entry: "probe\n    clause: c\n    check:\n      probe: {tool: ptxas, probe: vprintf_nonsense}\n",
            names: "vprintf_nonsense",
            at: "probe: vprintf_nonsense",
        },
        Bad {
            area: "syscalls",
            good: SYSCALLS_GOOD,
            entry: "mix\n    clause: c\n    check:\n      vprintf_layout: {producer: nvrtc, mix: 4800}\n",
            names: "4800",
            at: "mix: 4800",
        },
        Bad {
            area: "syscalls",
            good: SYSCALLS_GOOD,
            entry: "guide\n    clause: c\n    check:\n      guide_prototype: {call: vprintf, address_size: 48, arch: sm_90}\n",
            names: "48",
            at: "address_size: 48",
        },
        Bad {
            area: "syscalls",
            good: SYSCALLS_GOOD,
            entry: "arch\n    clause: c\n    check:\n      guide_prototype: {call: vprintf, arch: \"sm_90 }\"}\n",
            names: "sm_90 }",
            at: "arch:",
        },
        Bad {
            area: "syscalls",
            good: SYSCALLS_GOOD,
            entry: "conv\n    clause: c\n    check:\n      gpu: {case: {printf: {conversion: percent_q}}}\n",
            names: "percent_q",
            at: "conversion: percent_q",
        },
        Bad {
            area: "atomics",
            good: ATOMICS_GOOD,
            entry: "model\n    clause: c\n    check:\n      model: {test: MP.rel_acq.gpu.nowhere}\n",
            names: "MP.rel_acq.gpu.nowhere",
            at: "test: MP.rel_acq.gpu.nowhere",
        },
        Bad {
            area: "atomics",
            good: ATOMICS_GOOD,
            entry: "gpu\n    clause: c\n    check:\n      gpu: {test: MP.rel_acq.gpu.inter_cta, iterations: 0}\n",
            names: "iterations: 0",
            at: "iterations: 0",
        },
        Bad {
            area: "atomics",
            good: ATOMICS_GOOD,
            entry: "stress\n    clause: c\n    check:\n      gpu: {test: MP.rel_acq.gpu.inter_cta, stress: {workgroup_size: 2048}}\n",
            names: "workgroup_size (2048)",
            at: "stress: {",
        },
        Bad {
            area: "atomics",
            good: ATOMICS_GOOD,
            entry: "corpus\n    clause: c\n    check:\n      corpus: {expectations: ptx-v9.9}\n",
            names: "ptx-v9.9",
            at: "expectations: ptx-v9.9",
        },
        Bad {
            area: "atomics",
            good: ATOMICS_GOOD,
            entry: "litmus\n    clause: c\n    check:\n      litmus: {file: no-such-test.litmus, outcome: forbidden}\n",
            names: "no-such-test.litmus",
            at: "file: no-such-test",
        },
        Bad {
            area: "atomics",
            good: ATOMICS_GOOD,
            entry: "outcome\n    clause: c\n    check:\n      litmus: {file: CoRR+relaxed-gpu.litmus, outcome: sometimes}\n",
            names: "sometimes",
            at: "outcome: sometimes",
        },
        Bad {
            area: "dwarf",
            good: DWARF_GOOD,
            entry: "check\n    clause: c\n    check:\n      check_file:\n        findings: []\n        file: ptx-corpus/dwarf/missing.ptx\n",
            names: "ptx-corpus/dwarf/missing.ptx",
            at: "file: ptx-corpus/dwarf/missing",
        },
        Bad {
            area: "dwarf",
            good: DWARF_GOOD,
            entry: "assembles\n    clause: c\n    check:\n      assembles: {file: ptx-corpus/dwarf}\n",
            names: "not a regular file",
            at: "file: ptx-corpus/dwarf}",
        },
        Bad {
            area: "dwarf",
            good: DWARF_GOOD,
            entry: "lines\n    clause: c\n    check:\n      line_table: {file: a.cu, lines: []}\n",
            names: "lines: []",
            at: "lines: []",
        },
        // Seeds past 2^48: the batch arithmetic after them would overflow.
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "random\n    clause: c\n    check:\n      random_type: {oracle: clang, seed: 18446744073709551615}\n",
            names: "18446744073709551615",
            at: "seed: 1844",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "graffiti\n    clause: c\n    check:\n      graffiti: {seed_start: 281474976710600, count: 100}\n",
            names: "281474976710600",
            at: "seed_start: 2814",
        },
        Bad {
            area: "abi",
            good: ABI_GOOD,
            entry: "graffiti0\n    clause: c\n    check:\n      graffiti: {seed_start: 0, count: 0}\n",
            names: "count: 0",
            at: "count: 0",
        },
        Bad {
            area: "dwarf",
            good: DWARF_GOOD,
            entry: "rt\n    clause: c\n    check:\n      round_trip: {seed: 281474976710656}\n",
            names: "281474976710656",
            at: "seed: 2814",
        },
        Bad {
            area: "dwarf",
            good: DWARF_GOOD,
            entry: "prod\n    clause: c\n    check:\n      producer: {producer: clang_g, batch: 1000000000000000}\n",
            names: "1000000000000000",
            at: "batch: 1000",
        },
        Bad {
            area: "dwarf",
            good: DWARF_GOOD,
            entry: "quote\n    clause: c\n    check:\n      line_table: {file: 'a\"b.cu', lines: [1]}\n",
            names: "a\\\"b.cu",
            at: "file: 'a",
        },
    ]
}

#[test]
fn every_class_a_run_would_refuse_is_a_validate_error_at_its_position() {
    let dir = tmp("validate-cases");
    let mut classes_seen = 0;
    for (i, b) in classes().iter().enumerate() {
        let yaml = suite(b.area, b.good, b.entry);
        let file = dir.path().join(format!("bad{i}.yaml"));
        std::fs::write(&file, &yaml).unwrap();
        let (line, col) = pos_of(&yaml, &format!("{}.bad.", b.area), b.at);
        let want = format!("{}:{line}:{col}: ", file.display());
        let o = gpucts(&["validate", file.to_str().unwrap()]);
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{}: {err}", b.entry);
        assert!(err.contains(&want), "{}: want {want} in:\n{err}", b.entry);
        assert!(
            err.contains(b.names),
            "{}: message names `{}`:\n{err}",
            b.entry,
            b.names
        );
        assert!(
            err.contains(&format!("case `{}.bad.", b.area)),
            "the message names the case: {err}"
        );
        assert_eq!(
            err.lines().count(),
            1,
            "one problem, the good case none: {err}"
        );
        // The same suite with the bad entry dropped is valid: the good case is not what fails.
        let good = dir.path().join(format!("good{i}.yaml"));
        let good_text = &yaml[..yaml.find(&format!("  - id: {}.bad.", b.area)).unwrap()];
        std::fs::write(&good, good_text).unwrap();
        let o = gpucts(&["validate", good.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(0), "{good_text}\n{}", text(&o).1);
        classes_seen += 1;
    }
    assert_eq!(classes_seen, 30);
}

#[test]
fn a_run_with_one_bad_case_refuses_before_anything_runs() {
    let dir = tmp("validate-run");
    let b = &classes()[1];
    let yaml = suite(b.area, b.good, b.entry);
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let junit = dir.path().join("out/junit.xml");
    std::fs::create_dir_all(junit.parent().unwrap()).unwrap();
    let o = gpucts(&[
        "--suite",
        file.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    let (line, col) = pos_of(&yaml, "abi.bad.", "gcc9");
    assert!(
        err.contains(&format!("{}:{line}:{col}: ", file.display())),
        "{err}"
    );
    assert!(err.contains("nothing was run"), "{err}");
    // Nothing ran: no case line, no report.
    assert!(!out.contains("abi.ok.one"), "{out}");
    assert!(!junit.exists(), "no report is written for a refused run");
    // A matrix value shared by many expansions is reported once.
    let many = dir.path().join("many.yaml");
    let t = "area: abi\ncases:\n  - id: abi.m.{s}.{p}\n    clause: c\n    matrix:\n      s: {range: [0, 50]}\n      p: [nope]\n    check:\n      param_passing: {producer: \"{p}\", signature: int, position: param}\n";
    std::fs::write(&many, t).unwrap();
    let o = gpucts(&["validate", many.to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(err.lines().count(), 1, "{err}");
    let (line, col) = pos_of(t, "p: [", "nope");
    assert!(err.contains(&format!(":{line}:{col}: ")), "{err}");
}

/// The suites the project ships validate (a check's own rules and the suite files written
/// by other changes must agree: a corpus pair's seeds are the corpus's, not 0..240).
#[test]
fn the_shipped_suites_validate() {
    let o = gpucts(&["validate"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
}
