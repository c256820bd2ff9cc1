use super::*;
use crate::atomics::litmus::from_yaml;

/// Message passing through a release store and an acquire load at gpu scope, threads in
/// different CTAs (ptx-interop 13.2 ch. 4: the C++ release/acquire mapping).
const MP: &str = "name: MP+rel-acq\nlocations: [{name: data}, {name: flag}]\nthreads:\n  - cta: 0\n    ops:\n      - st: {loc: data, val: 42, sem: relaxed, scope: gpu}\n      - st: {loc: flag, val: 1, sem: release, scope: gpu}\n  - cta: 1\n    ops:\n      - ld: {reg: r0, loc: flag, sem: acquire, scope: gpu}\n      - ld: {reg: r1, loc: data, sem: relaxed, scope: gpu}\ncondition: 'exists (P1:r0 == 1 /\\ P1:r1 == 0)'\n";

/// Store buffering with relaxed accesses: (0, 0) is its weak outcome.
const SB: &str = "name: SB\nthreads:\n  - cta: 0\n    ops:\n      - st: {loc: x, val: 1, sem: relaxed, scope: gpu}\n      - ld: {reg: r0, loc: y, sem: relaxed, scope: gpu}\n  - cta: 1\n    ops:\n      - st: {loc: y, val: 1, sem: relaxed, scope: gpu}\n      - ld: {reg: r0, loc: x, sem: relaxed, scope: gpu}\ncondition: 'exists (P0:r0 == 0 /\\ P1:r0 == 0)'\n";

/// An outcome as the model's terms order it, from (term, value) pairs.
fn outcome(v: &ModelVerdict, pairs: &[(&str, i64)]) -> Vec<i64> {
    v.terms
        .iter()
        .map(|t| {
            pairs
                .iter()
                .find(|(n, _)| *n == t.to_string())
                .map(|(_, x)| *x)
                .unwrap()
        })
        .collect()
}

fn seen(h: Histogram) -> Seen {
    let instances = h.values().sum();
    Seen {
        histogram: h,
        launches: 1,
        instances,
        kernel_time: None,
        end_to_end: Duration::from_millis(10),
        barrier_timeouts: 0,
        did_not_terminate: 0,
        past_model_bound: 0,
    }
}

// MP with release/acquire: reading flag == 1 and then data == 0 is forbidden by the PTX
// memory model (PTX ISA, Memory Consistency Model, axiom Causality: the release store of
// flag observed by the acquire load synchronizes, so the store of data precedes the load
// of data in causality order and the load cannot read the initial 0). A histogram with
// that outcome is reported FORBIDDEN, first, with its count, and exits 101.
#[test]
fn a_forbidden_outcome_is_printed_first_and_exits_101() {
    let test = from_yaml(MP).unwrap();
    let v = model::try_check(&test).unwrap();
    let bad = outcome(&v, &[("P1:r0", 1), ("P1:r1", 0)]);
    let mut h = Histogram::new();
    h.insert(outcome(&v, &[("P1:r0", 0), ("P1:r1", 0)]), 500);
    h.insert(outcome(&v, &[("P1:r0", 1), ("P1:r1", 42)]), 400);
    h.insert(bad.clone(), 3);
    let r = record(
        Path::new("mp.yaml"),
        &test,
        &v,
        Engine::Emulator,
        &emulate_defaults(),
        &seen(h),
    );
    assert_eq!(r.forbidden_seen, 3);
    assert_eq!(r.exit_code(), EXIT_FORBIDDEN);
    assert!(!r.outcomes[0].allowed);
    assert_eq!(r.outcomes[0].count, 3);
    let text = render(&r);
    let first = text.lines().next().unwrap();
    assert!(
        first.starts_with("FORBIDDEN") && first.contains("(P1:r0=1, P1:r1=0) x3"),
        "{text}"
    );
    // The allowed outcomes are marked so; (0, 0) and (1, 42) are sequentially consistent.
    assert!(
        text.contains("(P1:r0=0, P1:r1=0)") && text.contains("allowed"),
        "{text}"
    );
    assert_eq!(r.weak_seen, 0);
    // Worst of several: 101 takes precedence over a file that did not run (2).
    let err = TestRecord::not_run(
        Path::new("bad.yaml"),
        None,
        Engine::Emulator,
        Status::Error,
        "bad.yaml:1:1: nonsense".into(),
    );
    assert_eq!(exit_code(&[err.clone(), r.clone()]), EXIT_FORBIDDEN);
    assert_eq!(exit_code(std::slice::from_ref(&err)), EXIT_BAD_INPUT);
    assert_eq!(
        tally(&[err, r]),
        "litmus run: 1 ran, 0 refused, 1 with forbidden outcomes, 1 errors"
    );
}

// Sequential consistency (Lamport 1979): MP's interleavings give (r0, r1) in
// {(0, 0), (0, 42), (1, 42)}; SB's give every pair but (0, 0), which the PTX model allows
// for relaxed accesses: SB's (0, 0) is weak, MP's outcomes are not.
#[test]
fn weak_means_allowed_and_not_sequentially_consistent() {
    let mp = from_yaml(MP).unwrap();
    let v = model::try_check(&mp).unwrap();
    let sc = sc_outcomes(&mp, &v.terms).unwrap();
    let want: BTreeSet<Vec<i64>> = [(0, 0), (0, 42), (1, 42)]
        .iter()
        .map(|&(a, b)| outcome(&v, &[("P1:r0", a), ("P1:r1", b)]))
        .collect();
    assert_eq!(sc, want);

    let sb = from_yaml(SB).unwrap();
    let v = model::try_check(&sb).unwrap();
    assert!(
        v.allowed,
        "the model allows SB's (0, 0) for relaxed accesses"
    );
    let mut h = Histogram::new();
    let weak = outcome(&v, &[("P0:r0", 0), ("P1:r0", 0)]);
    h.insert(weak.clone(), 7);
    h.insert(outcome(&v, &[("P0:r0", 1), ("P1:r0", 1)]), 9);
    let r = record(
        Path::new("sb.yaml"),
        &sb,
        &v,
        Engine::Emulator,
        &emulate_defaults(),
        &seen(h),
    );
    assert_eq!(r.weak_seen, 7);
    assert_eq!(r.forbidden_seen, 0);
    assert_eq!(r.exit_code(), EXIT_OK);
    assert_eq!(
        r.verdict.as_ref().unwrap().weak_basis,
        "sequential-consistency"
    );
}

/// P0 stores x = 1 in every iteration of a loop that leaves once it reads P1's y = 1:
/// the model unrolls the loop once, so its verdict reaches the bound (executions reading
/// y = 0 twice are cut). x = 0 at the end is impossible in every execution, cut or not
/// (P0's store precedes its only exit in program order), so an instance reporting it is
/// a violation, not an outcome the bounded search merely missed.
const CUT_LOOP: &str = "PTX cut\n{ x=0; y=0; P0:r0=0; }\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n LC00: | st.weak y, 1 ;\n st.weak x, 1 | ;\n ld.weak r0, y | ;\n bne r0, 1, LC00 | ;\nexists (x == 0)\n";

// Strict judging: judged instances ran no effectful iteration past the model's bound
// (those are counted apart as past_model_bound), so an outcome outside the allowed set
// is forbidden on a bound-reached test too: printed FORBIDDEN, exit 101.
#[test]
fn a_forbidden_outcome_on_a_bound_reached_test_exits_101() {
    let test = crate::atomics::litmus::dat3m::import(CUT_LOOP).unwrap();
    let v = model::try_check(&test).unwrap();
    assert!(v.bound_reached, "the loop is cut by the model's bound");
    let mut h = Histogram::new();
    h.insert(outcome(&v, &[("x", 1)]), 90);
    h.insert(outcome(&v, &[("x", 0)]), 2);
    let r = record(
        Path::new("cut.litmus"),
        &test,
        &v,
        Engine::Emulator,
        &emulate_defaults(),
        &seen(h),
    );
    assert_eq!(r.forbidden_seen, 2);
    assert_eq!(r.judged, 92);
    assert_eq!(exit_code(std::slice::from_ref(&r)), EXIT_FORBIDDEN);
    let text = render(&r);
    assert!(
        text.starts_with("FORBIDDEN cut.litmus: cut: (x=0) x2"),
        "{text}"
    );
}

// A test that ran but judged no instance (all at the loop cap or past the model's bound)
// proved nothing: its own exit code, 3, under a forbidden outcome's 101 and bad input's
// 2, and a line naming it.
#[test]
fn a_test_with_no_judged_instance_exits_3() {
    let test = from_yaml(MP).unwrap();
    let v = model::try_check(&test).unwrap();
    let mut none = seen(Histogram::new());
    none.instances = 64;
    none.did_not_terminate = 40;
    none.past_model_bound = 24;
    let r = record(
        Path::new("mp.yaml"),
        &test,
        &v,
        Engine::Emulator,
        &emulate_defaults(),
        &none,
    );
    assert_eq!(r.judged, 0);
    assert_eq!(r.exit_code(), EXIT_NOTHING_JUDGED);
    // Counts that do not add up: an error of kind `count`, no verdict.
    let mut lost = none.clone();
    lost.instances = 65;
    let bad = record(
        Path::new("mp.yaml"),
        &test,
        &v,
        Engine::Emulator,
        &emulate_defaults(),
        &lost,
    );
    assert_eq!(
        (bad.status, bad.error.as_deref()),
        (Status::Error, Some("count"))
    );
    assert!(
        bad.why
            .as_deref()
            .unwrap()
            .contains("do not add up to the 65 instances"),
        "{:?}",
        bad.why
    );
    assert!(
        render(&r).contains("NOTHING JUDGED mp.yaml: MP+rel-acq: none of its 64 instances"),
        "{}",
        render(&r)
    );
    assert!(tally(std::slice::from_ref(&r)).ends_with(", 1 with no judged instance"));
    let mut h = Histogram::new();
    h.insert(outcome(&v, &[("P1:r0", 1), ("P1:r1", 42)]), 5);
    let ok = record(
        Path::new("mp.yaml"),
        &test,
        &v,
        Engine::Emulator,
        &emulate_defaults(),
        &seen(h),
    );
    assert_eq!(exit_code(&[ok.clone(), r.clone()]), EXIT_NOTHING_JUDGED);
    let refused = TestRecord::not_run(
        Path::new("x.litmus"),
        None,
        Engine::Emulator,
        Status::Refused,
        "why".into(),
    );
    assert_eq!(exit_code(&[r, refused]), EXIT_BAD_INPUT);
    assert_eq!(exit_code(&[ok]), EXIT_OK);
}

// `--stress KEY=VALUE`: keys are StressParams' serde names; an unknown one is refused
// naming it and the accepted ones; a value of the wrong type names the key.
#[test]
fn stress_pairs_set_fields_and_refuse_unknown_keys() {
    let base = StressParams::default();
    let p = apply_pairs(
        &base,
        &[
            "stress_iterations=7".into(),
            "stress_pattern=load-load".into(),
            "barrier=false".into(),
        ],
    )
    .unwrap();
    assert_eq!(p.stress_iterations, 7);
    assert_eq!(p.stress_pattern, layout::StressPattern::LoadLoad);
    assert!(!p.barrier);
    let e = apply_pairs(&base, &["stres_iterations=7".into()])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("stres_iterations") && e.contains("workgroup_size"),
        "{e}"
    );
    let e = apply_pairs(&base, &["barrier=maybe".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("barrier=maybe"), "{e}");
    let e = apply_pairs(&base, &["barrier".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("KEY=VALUE"), "{e}");
}

// A `litmus tune --json` record: the set `litmus tune` ranks first (most tests with a
// weak outcome) is used; a plain object replaces only the keys it names.
#[test]
fn stress_files_tune_records_and_plain_objects() {
    let dir = tempfile::tempdir().unwrap();
    let one = StressParams {
        stress_iterations: 9,
        ..StressParams::default()
    };
    let t = super::super::tune::Tuning {
        seed: 1,
        iterations: 2,
        configs: vec![StressParams::default(), one.clone()],
        tests: vec!["a".into(), "b".into()],
        runs: [(0, "a", 0), (0, "b", 5), (1, "a", 1), (1, "b", 1)]
            .iter()
            .map(|&(config, test, weak)| super::super::tune::TuneRun {
                config,
                test: test.into(),
                outcome: super::super::tune::TuneOutcome::Ran {
                    instances: 10,
                    weak,
                    forbidden: 0,
                    kernel_s: 1.0,
                    wall_s: 1.0,
                },
            })
            .collect(),
        stopped_by_budget: false,
        context_lost: None,
    };
    let tf = dir.path().join("tune.json");
    std::fs::write(&tf, serde_json::to_string(&t).unwrap()).unwrap();
    let (p, from) = read_stress_file(&tf, &emulate_defaults()).unwrap();
    assert_eq!(p, one, "set 1 showed weak outcomes in 2 tests, set 0 in 1");
    assert!(from.contains("set 1"), "{from}");
    let pf = dir.path().join("p.yaml");
    std::fs::write(&pf, "stress_iterations: 3\n").unwrap();
    let (p, _) = read_stress_file(&pf, &emulate_defaults()).unwrap();
    assert_eq!(p.stress_iterations, 3);
    assert_eq!(p.workgroup_size, emulate_defaults().workgroup_size);
    std::fs::write(&pf, "nonsense_key: 3\n").unwrap();
    let e = read_stress_file(&pf, &emulate_defaults())
        .unwrap_err()
        .to_string();
    assert!(e.contains("nonsense_key"), "{e}");
}
