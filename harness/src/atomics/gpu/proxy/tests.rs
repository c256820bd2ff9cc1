use super::*;
use crate::atomics::gpu::emulate::IGNORE_PROXY_FENCE;

/// The suite's async-proxy tests (suites/litmus/proxy-async-*.yaml).
fn suite_tests() -> Vec<LitmusTest> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/litmus");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("proxy-async-"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|n| crate::atomics::litmus::load_file(&dir.join(n)).unwrap())
        .collect()
}

fn by_name(name: &str) -> LitmusTest {
    suite_tests()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no test {name}"))
}

// Every async-proxy kernel assembles for sm_90 with ptxas (the independent check that the GPU
// could load it): cp.async.bulk with its mbarrier operand, mbarrier.init /
// arrive.expect_tx / try_wait.parity, fence.proxy.async.
#[test]
fn proxy_kernels_assemble_with_ptxas() {
    let tc = crate::backend::toolchain::Toolchain::discover_system();
    let kernels: Vec<(String, String)> = suite_tests()
        .iter()
        .map(|t| {
            let ptx = generate(t, &ProxyLayout::new(t).unwrap()).unwrap();
            assert!(
                ptx.contains("cp.async.bulk.shared::cluster.global"),
                "{ptx}"
            );
            (t.name.clone(), ptx)
        })
        .collect();
    assert_eq!(kernels.len(), 5);
    crate::require!(tc.has(Capability::Ptxas), "ptxas");
    for (name, ptx) in &kernels {
        if let Err(err) = tc.ptxas(ptx, TARGET, &[]) {
            panic!("{name}: {err}\n{ptx}");
        }
    }
}

/// The outcomes of `launches` emulated launches that the model forbids, as text.
fn forbidden_in_emulation(test: &LitmusTest, launches: u64, seed: u64) -> Vec<String> {
    let verdict = model::check(test);
    let run = emulate(test, launches, seed).unwrap();
    assert_eq!(run.did_not_terminate, 0, "{}", test.name);
    assert_eq!(run.instances, launches * u64::from(LANES * EMULATED_GROUPS));
    run.histogram
        .keys()
        .filter(|o| !verdict.outcome_allowed(o))
        .map(|o| format!("{}: {o:?}", test.name))
        .collect()
}

// Run in the emulator (sequentially consistent, with copies performed late and reading what
// the async proxy may see), every kernel gives only outcomes the model allows: the kernel, its
// layout and the model agree.
#[test]
fn proxy_kernels_emulate_to_allowed_outcomes() {
    for (i, t) in suite_tests().iter().enumerate() {
        let bad = forbidden_in_emulation(t, 3, i as u64);
        assert!(bad.is_empty(), "{bad:?}");
    }
}

// The emulator's async proxy is not stronger than the ISA: without the fence it shows the
// stale copy the model allows (the weak outcome of proxy-async-nofence), so the check above
// can catch a missing fence.
#[test]
fn the_emulator_shows_a_stale_copy_without_the_fence() {
    let t = by_name("proxy-async-nofence");
    let run = emulate(&t, 4, 7).unwrap();
    assert!(run.histogram.contains_key(&vec![0]), "{:?}", run.histogram);
    assert!(run.histogram.contains_key(&vec![1]), "{:?}", run.histogram);
}

// Mutation check: an emulator whose fence.proxy.async does nothing gives proxy-async-fence the
// stale outcome, which the model forbids; the emulation check catches it.
#[test]
fn an_emulator_ignoring_the_proxy_fence_is_caught() {
    let t = by_name("proxy-async-fence");
    IGNORE_PROXY_FENCE.with(|m| m.set(true));
    let bad = forbidden_in_emulation(&t, 4, 7);
    IGNORE_PROXY_FENCE.with(|m| m.set(false));
    assert!(!bad.is_empty(), "the ignored fence went unnoticed");
    assert!(forbidden_in_emulation(&t, 4, 7).is_empty());
}

// The verdict kinds: a defined test fails on a forbidden outcome and passes otherwise; an
// observation never fails on an outcome, and its pass carries the `observation` tag.
#[test]
fn observations_are_tagged_and_defined_tests_judged() {
    let run = |outcomes: &[(i64, u64)]| ProxyRun {
        histogram: outcomes.iter().map(|&(v, n)| (vec![v], n)).collect(),
        launches: 1,
        instances: outcomes.iter().map(|o| o.1).sum(),
        did_not_terminate: 0,
        kernel_time: Duration::ZERO,
    };
    let fenced = by_name("proxy-async-fence");
    let ok = judge(&fenced, Expectation::Defined, &run(&[(1, 64)]));
    assert!(
        matches!(ok, CaseStatus::Pass { .. }) && ok.tags().is_empty(),
        "{ok:?}"
    );
    let stale = judge(&fenced, Expectation::Defined, &run(&[(1, 60), (0, 4)]));
    assert!(matches!(stale, CaseStatus::Fail { .. }), "{stale:?}");
    let obs = by_name("proxy-async-fence-writer-cta");
    let two = |r0, r1, n| (vec![r0, r1], n);
    let seen = ProxyRun {
        histogram: [two(1, 0, 3), two(1, 1, 50), two(0, 1, 11)]
            .into_iter()
            .collect(),
        launches: 1,
        instances: 64,
        did_not_terminate: 0,
        kernel_time: Duration::ZERO,
    };
    let s = judge(&obs, Expectation::Observation, &seen);
    assert!(s.has_tag(crate::outcome::OBSERVATION), "{s:?}");
    let CaseStatus::Pass { note: Some(n), .. } = &s else {
        panic!("{s:?}")
    };
    assert!(
        n.contains("P1:r0=1 P1:r1=0: 3") && n.contains("observation"),
        "{n}"
    );
    // No outcome at all is no observation.
    let none = judge(&obs, Expectation::Observation, &ProxyRun::default());
    assert!(matches!(none, CaseStatus::Error { .. }), "{none:?}");
}

// What the proxy kernel cannot run is refused by name: a copy no one waits for (its CTA could
// exit with the copy in flight), a final-memory condition, an atom.
#[test]
fn what_the_proxy_kernel_cannot_run_is_refused_by_name() {
    let mut t = by_name("proxy-async-mbar-mp");
    t.threads[1].ops.remove(0);
    t.threads[1].ops.clear();
    t.threads[1].ops.push(Op::Ld {
        reg: "r0".into(),
        loc: "g".into(),
        sem: Sem::Weak,
        scope: None,
    });
    let e = ProxyLayout::new(&t).unwrap_err().to_string();
    assert!(e.contains("`m`") && e.contains("waited"), "{e}");
    let mut t = by_name("proxy-async-mbar-mp");
    t.condition = crate::atomics::litmus::parse_condition("exists (d == 0)").unwrap();
    let e = ProxyLayout::new(&t).unwrap_err().to_string();
    assert!(e.contains("registers, not final memory"), "{e}");
}
