use std::time::Duration;
use strum::VariantArray;

use super::layout::{Geometry, StressParams, StressPattern};
use super::*;
use crate::atomics::litmus::{Op, Sem as LSem};
use crate::backend::toolchain::Toolchain;
use crate::ptx::instr::{self, MemOpKind};

fn kernel_for(name: &str) -> String {
    let t = catalog::by_name(name).unwrap();
    let g = Geometry::new(&t, &StressParams::default()).unwrap();
    kernel::generate(&t, &g).unwrap()
}

// Every catalogue test (and every stress pattern) gives a kernel that NVIDIA's assembler
// accepts for the target device.
#[test]
fn every_catalogue_kernel_assembles_with_ptxas() {
    let tc = Toolchain::discover_system();
    crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
    let mut assembled = 0;
    for e in catalog::entries() {
        let g = Geometry::new(&e.test, &StressParams::default()).unwrap();
        let ptx = kernel::generate(&e.test, &g).unwrap();
        if let Err(err) = tc.ptxas(&ptx, kernel::TARGET, &[]) {
            panic!("{}: {err}\n{ptx}", e.test.name);
        }
        assembled += 1;
    }
    let t = catalog::by_name("SB.sc.gpu.inter_cta").unwrap();
    for &pattern in StressPattern::VARIANTS {
        let params = StressParams {
            stress_pattern: pattern,
            barrier: pattern.code() % 2 == 0,
            pre_stress_iterations: pattern.code() * 10,
            ..StressParams::default()
        };
        let g = Geometry::new(&t, &params).unwrap();
        tc.ptxas(&kernel::generate(&t, &g).unwrap(), kernel::TARGET, &[])
            .unwrap();
        assembled += 1;
    }
    eprintln!("ptxas assembled {assembled} generated litmus kernels for sm_90");
    // Cluster-scope tests included (clusters in global memory).
    assert_eq!(assembled, 416 + 4);
}

/// The memory-model instructions of the test's own accesses (those on `%a<t>_<j>` addresses,
/// and fences), in order, as the PTX parser sees them.
fn test_instructions(ptx: &str) -> Vec<instr::Instruction> {
    instr::function_body(ptx, kernel::KERNEL)
        .unwrap()
        .into_iter()
        .filter(|i| {
            let on_loc = i.operands.iter().any(|o| o.starts_with("[%a"));
            on_loc || i.opcode == "fence"
        })
        .collect()
}

// Each litmus operation is one instruction with the operation's own semantic and scope
// (compared through the parser's structured view, with the PTX ISA's defaults applied).
#[test]
fn each_operation_carries_its_semantic_and_scope() {
    let shared = StressParams {
        intra_cta_shared: true,
        ..StressParams::default()
    };
    let mut in_shared = 0;
    for (e, params) in catalog::entries()
        .into_iter()
        .flat_map(|e| [(e.clone(), StressParams::default()), (e, shared.clone())])
    {
        let g = Geometry::new(&e.test, &params).unwrap();
        // Locations in shared memory exactly for tests within one CTA that ask for it.
        let space = if g.shared { "shared" } else { "global" };
        assert_eq!(
            g.shared,
            params.intra_cta_shared && e.test.name.ends_with("intra_cta"),
            "{}",
            e.test.name
        );
        in_shared += usize::from(g.shared);
        let ptx = kernel::generate(&e.test, &g).unwrap();
        let got = test_instructions(&ptx);
        let want: Vec<&Op> = e.test.threads.iter().flat_map(|t| &t.ops).collect();
        assert_eq!(got.len(), want.len(), "{}", e.test.name);
        for (ins, op) in got.iter().zip(want) {
            let m = ins.mem_op().unwrap().effective();
            let ctx = format!("{}: {ins} for {op:?}", e.test.name);
            let (kind, sem, scope) = match op {
                Op::Ld { sem, scope, .. } => (MemOpKind::Ld, *sem, *scope),
                Op::St { sem, scope, .. } => (MemOpKind::St, *sem, *scope),
                Op::Atom { sem, scope, .. } => (MemOpKind::Atom, *sem, Some(*scope)),
                Op::Red { sem, scope, .. } => (MemOpKind::Red, *sem, Some(*scope)),
                Op::Fence { sem, scope } => (MemOpKind::Fence, *sem, Some(*scope)),
                other => unreachable!("the catalogue has no {other:?}"),
            };
            assert_eq!(m.kind, kind, "{ctx}");
            assert_eq!(m.sem.map(|s| s.name()), Some(sem.name()), "{ctx}");
            if sem != LSem::Weak {
                assert_eq!(m.scope, scope, "{ctx}");
            }
            if matches!(kind, MemOpKind::Ld | MemOpKind::St | MemOpKind::Atom) {
                assert!(ins.has(space), "{ctx}");
            }
        }
    }
    assert_eq!(
        in_shared, 156,
        "every test within one CTA, once in shared memory"
    );
}

// Kernels with their locations in shared memory assemble for the device: every catalogue test
// placed within one CTA.
#[test]
fn shared_memory_kernels_assemble_with_ptxas() {
    let tc = Toolchain::discover_system();
    crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
    let params = StressParams {
        intra_cta_shared: true,
        ..StressParams::default()
    };
    let mut assembled = 0;
    for e in catalog::entries() {
        let g = Geometry::new(&e.test, &params).unwrap();
        if !g.shared {
            continue;
        }
        let ptx = kernel::generate(&e.test, &g).unwrap();
        assert!(ptx.contains(".shared .align 4 .b32 gpucts_smem["), "{ptx}");
        if let Err(err) = tc.ptxas(&ptx, kernel::TARGET, &[]) {
            panic!("{}: {err}\n{ptx}", e.test.name);
        }
        assembled += 1;
    }
    assert_eq!(assembled, 156);
}

#[test]
fn exact_text_of_representative_instructions() {
    let mp = kernel_for("MP.rel_acq.gpu.inter_cta");
    assert!(mp.contains("st.release.gpu.global.u32 [%a0_1], %c"), "{mp}");
    assert!(
        mp.contains("ld.acquire.gpu.global.u32 %v0, [%a1_1];"),
        "{mp}"
    );
    assert!(
        mp.contains("ld.acquire.gpu.global.u32 %v1, [%a1_0];"),
        "{mp}"
    );
    let sb = kernel_for("SB.sc.cta.intra_cta");
    assert!(sb.contains("fence.sc.cta;"));
    let rmw = kernel_for("RMW.fence.sys.inter_cta");
    assert!(rmw.contains("fence.acq_rel.sys;"));
    assert!(rmw.contains("atom.relaxed.sys.global.add.u32 %v0, [%a0_0], %c"));
    let weak = {
        let mut t = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
        for th in &mut t.threads {
            for op in &mut th.ops {
                if let Op::Ld { sem, scope, .. } | Op::St { sem, scope, .. } = op {
                    *sem = LSem::Weak;
                    *scope = None;
                }
            }
        }
        kernel::generate(&t, &Geometry::new(&t, &StressParams::default()).unwrap()).unwrap()
    };
    assert!(weak.contains("\tst.global.u32 [%a0_0], %c"), "{weak}");
    assert!(weak.contains("\tld.global.u32 %v0, [%a1_1];"), "{weak}");
}

#[test]
fn invalid_operations_are_refused_by_the_generator() {
    let mut t = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
    if let Op::Ld { sem, .. } = &mut t.threads[1].ops[0] {
        *sem = LSem::Release;
    }
    let g = Geometry::new(&t, &StressParams::default()).unwrap();
    let e = kernel::generate(&t, &g).unwrap_err();
    assert!(
        matches!(&e, kernel::KernelError::Semantics { at, sem, .. } if at.ends_with("P1 op 1") && sem == "release"),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.contains("P1 op 1") && e.contains("release"), "{e}");
}

fn report(name: &str, terms: Vec<Term>, hist: &[(Vec<i64>, u64)]) -> RunReport {
    RunReport {
        test: name.into(),
        launches: 10,
        instances: hist.iter().map(|(_, n)| n).sum(),
        kernel_time: Duration::from_millis(20),
        launch_rates: Vec::new(),
        wall_time: Duration::from_millis(40),
        setup_time: Duration::from_millis(5),
        host_time: Duration::from_millis(3),
        terms,
        histogram: hist.iter().cloned().collect(),
        barrier_timeouts: 0,
        did_not_terminate: 0,
        past_model_bound: 0,
    }
}

// MP's outcomes (P1:r0, P1:r1): (1, 0) is the weak one. Lustig et al. (ASPLOS'19) and the C++
// model: relaxed MP allows it; release/acquire at gpu scope forbids it.
#[test]
fn synthetic_histograms_are_classified_by_the_model() {
    let relaxed = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
    let rv = model::check(&relaxed);
    assert_eq!(rv.terms.len(), 2);
    let h: Histogram = [
        (vec![0, 0], 50),
        (vec![1, 1], 40),
        (vec![1, 0], 7),
        (vec![0, 1], 3),
    ]
    .into_iter()
    .collect();
    let c = classify(&relaxed, &rv, &h);
    assert_eq!(c.weak, 7);
    assert!(c.forbidden.is_empty());

    let ra = catalog::by_name("MP.rel_acq.gpu.inter_cta").unwrap();
    let v = model::check(&ra);
    let c = classify(&ra, &v, &h);
    assert_eq!(c.weak, 7);
    assert_eq!(c.forbidden, vec![(vec![1, 0], 7)]);
    // A value no execution can produce is forbidden even for the relaxed test.
    let junk: Histogram = [(vec![5, 0], 2)].into_iter().collect();
    assert_eq!(
        classify(&relaxed, &rv, &junk).forbidden,
        vec![(vec![5, 0], 2)]
    );

    let r = report(
        &ra.name,
        v.terms.clone(),
        &[(vec![1, 0], 7), (vec![0, 0], 93)],
    );
    match judge(&v, &r, &c, None) {
        CaseStatus::Fail { observed, .. } => {
            assert!(observed.starts_with("7 of 100 instances"), "{observed}");
            assert!(observed.contains("P1:r0=1, P1:r1=0"), "{observed}");
        }
        other => panic!("{other:?}"),
    }
}

// A run none of whose instances gave an outcome (each counted apart: stopped at the loop
// cap, or past the model's loop bound) judged nothing: an error naming both counts, never a
// pass; so is a run that judged fewer than MIN_JUDGED_PERCENT of its instances (1 of 100);
// a run with enough judged instances says how many were not.
#[test]
fn a_run_with_no_judged_instance_is_no_pass() {
    let ra = catalog::by_name("MP.rel_acq.gpu.inter_cta").unwrap();
    let v = model::check(&ra);
    let mut r = report(&ra.name, v.terms.clone(), &[]);
    r.instances = 100;
    r.did_not_terminate = 60;
    r.past_model_bound = 40;
    let c = classify(&ra, &v, &r.histogram);
    match judge(&v, &r, &c, None) {
        CaseStatus::Error { message } => {
            assert!(
                message.starts_with("0 of 100 instances gave an outcome to judge, under the 50%"),
                "{message}"
            );
            assert!(message.contains("60 did not terminate"), "{message}");
            assert!(message.contains("40 ran a loop iteration"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let mut r = report(&ra.name, v.terms.clone(), &[(vec![1, 1], 1)]);
    r.instances = 100;
    r.did_not_terminate = 99;
    let c = classify(&ra, &v, &r.histogram);
    match judge(&v, &r, &c, None) {
        CaseStatus::Error { message } => {
            assert!(message.starts_with("1 of 100 instances"), "{message}");
        }
        other => panic!("one judged of 100 is no pass: {other:?}"),
    }
    let mut r = report(&ra.name, v.terms.clone(), &[(vec![1, 1], 90)]);
    r.instances = 100;
    r.past_model_bound = 10;
    let c = classify(&ra, &v, &r.histogram);
    match judge(&v, &r, &c, None) {
        CaseStatus::Pass { note, .. } => {
            let note = note.unwrap_or_default();
            assert!(
                note.contains("judged 90 of 100; not judged: 0 did not terminate, 10 past"),
                "{note}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn control_without_weak_outcomes_is_a_warning_not_a_failure() {
    let ra = catalog::by_name("MP.rel_acq.gpu.inter_cta").unwrap();
    let v = model::check(&ra);
    let clean = [(vec![0, 0], 60), (vec![1, 1], 40)];
    let r = report(&ra.name, v.terms.clone(), &clean);
    let c = classify(&ra, &v, &r.histogram);
    assert!(c.forbidden.is_empty());

    let control = catalog::control_for(&ra.name).unwrap();
    let ct = catalog::by_name(&control).unwrap();
    let cv = model::check(&ct);
    let toothless = report(&control, cv.terms.clone(), &clean);
    let tc = classify(&ct, &cv, &toothless.histogram);
    // The rule (issue 28 item 5): a control whose weak count is 0 tags the pass.
    assert_eq!(tc.weak, 0);
    let toothless_pass = judge(&v, &r, &c, Some((&toothless, &tc)));
    match &toothless_pass {
        CaseStatus::Pass {
            note: Some(n),
            tags,
            control: Some(ctl),
        } => {
            assert!(n.starts_with("warning: stress has no teeth"), "{n}");
            assert_eq!(tags, &["control-without-weak-outcomes"]);
            assert_eq!(
                (ctl.test.as_str(), ctl.instances, ctl.weak),
                (control.as_str(), 100, 0)
            );
        }
        other => panic!("{other:?}"),
    }
    // --require-weak-controls: a failure naming the control and its 100 instances.
    match toothless_pass.with_weak_controls_required() {
        CaseStatus::Fail { observed, .. } => assert_eq!(
            observed,
            format!("control {control} showed no weak outcome in 100 instances")
        ),
        other => panic!("{other:?}"),
    }
    let biting = report(
        &control,
        cv.terms.clone(),
        &[(vec![1, 0], 3), (vec![0, 0], 97)],
    );
    let bc = classify(&ct, &cv, &biting.histogram);
    match judge(&v, &r, &c, Some((&biting, &bc))) {
        CaseStatus::Pass {
            note: Some(n),
            tags,
            control: Some(ctl),
        } => {
            assert!(!n.contains("no teeth"), "{n}");
            assert!(n.contains("weak outcome 3 times"), "{n}");
            assert!(tags.is_empty(), "{tags:?}");
            assert_eq!(ctl.weak, 3);
        }
        other => panic!("{other:?}"),
    }
    // The control's own forbidden outcomes are a failure too.
    let broken = report(
        &control,
        cv.terms.clone(),
        &[(vec![7, 7], 1), (vec![0, 0], 99)],
    );
    let bc = classify(&ct, &cv, &broken.histogram);
    assert!(matches!(
        judge(&v, &r, &c, Some((&broken, &bc))),
        CaseStatus::Fail { .. }
    ));
    // An allowed test needs no control and reports its figures.
    let rel = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
    let rv = model::check(&rel);
    let rr = report(
        &rel.name,
        rv.terms.clone(),
        &[(vec![1, 0], 3), (vec![0, 0], 97)],
    );
    let rc = classify(&rel, &rv, &rr.histogram);
    match judge(&rv, &rr, &rc, None) {
        CaseStatus::Pass {
            note: Some(n),
            tags,
            control,
        } => {
            assert!(n.contains("100 instances in 10 launches"), "{n}");
            assert!(n.contains("(P1:r0=1, P1:r1=0)=3"), "{n}");
            assert!(tags.is_empty() && control.is_none(), "{tags:?} {control:?}");
        }
        other => panic!("{other:?}"),
    }
    // So is an allowed test that never showed its weak outcome: it has no control to judge.
    let quiet = report(&rel.name, rv.terms.clone(), &clean);
    let qc = classify(&rel, &rv, &quiet.histogram);
    assert!(judge(&rv, &quiet, &qc, None).tags().is_empty());
    // A forbidden test without a control for its shape is untagged too (its note says so).
    let s = judge(&v, &r, &c, None);
    assert!(s.tags().is_empty(), "{s:?}");
    assert!(s.summary().contains("no relaxed control"), "{s:?}");
}

// Outcomes plus the instances counted apart must be the instances run: a report where they
// are not (a lost or doubly counted instance) is an error naming the sums, never a verdict.
#[test]
fn counts_that_do_not_add_up_are_an_error() {
    let ra = catalog::by_name("MP.rel_acq.gpu.inter_cta").unwrap();
    let v = model::check(&ra);
    let mut r = report(&ra.name, v.terms.clone(), &[(vec![1, 1], 90)]);
    r.instances = 100;
    r.did_not_terminate = 5;
    let c = classify(&ra, &v, &r.histogram);
    match judge(&v, &r, &c, None) {
        CaseStatus::Error { message } => assert!(
            message.contains("do not add up to the 100 instances run: 90 outcomes + 5 did not terminate + 0 past"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    r.past_model_bound = 5;
    let c = classify(&ra, &v, &r.histogram);
    assert!(matches!(judge(&v, &r, &c, None), CaseStatus::Pass { .. }));
}

// A forbidden test whose shape has a control, replayed without the control's report: an error
// naming the control, never a pass "with no relaxed control for this shape".
#[test]
fn a_missing_control_report_is_an_error_not_a_pass() {
    let name = "MP.rel_acq.gpu.inter_cta";
    let control = catalog::control_for(name).expect("MP has a relaxed control");
    let s = judge_seen(name, &[(vec![0, 0], 60), (vec![1, 1], 40)], None);
    match &s {
        CaseStatus::Error { message } => {
            assert!(
                message.contains(&format!("no report of control {control}")),
                "{message}"
            )
        }
        other => panic!("{other:?}"),
    }
    // With the control's report it is judged (a pass here: no forbidden outcome).
    let with = judge_seen(
        name,
        &[(vec![0, 0], 60), (vec![1, 1], 40)],
        Some(&[(vec![0, 0], 50), (vec![1, 0], 3)]),
    );
    assert!(matches!(with, CaseStatus::Pass { .. }), "{with:?}");
}

// Without a GPU the case reports an error naming why (the runner never gets that far: the
// case requires the gpu capability and is skipped first); with one, MP with release/acquire
// passes (its weak outcome is forbidden by the PTX memory model). A test the catalogue does
// not have is an error either way.
#[test]
fn gpu_case_passes_only_on_a_gpu() {
    assert!(matches!(
        gpu_case(
            &Default::default(),
            &Default::default(),
            "MP.nope",
            1,
            &StressParams::default()
        )
        .0,
        CaseStatus::Error { .. }
    ));
    let (s, figures) = gpu_case(
        &Default::default(),
        &Default::default(),
        "MP.rel_acq.gpu.inter_cta",
        1,
        &StressParams::default(),
    );
    if Session::open_device(&Default::default()).is_ok() {
        assert!(matches!(s, CaseStatus::Pass { .. }), "{s:?}");
        // The run's histogram and its two rates come back with the status.
        assert_eq!(figures.len(), 3, "{figures:?}");
    } else {
        assert!(matches!(s, CaseStatus::Error { .. }), "{s:?}");
        assert!(
            figures.is_empty(),
            "nothing ran, nothing measured: {figures:?}"
        );
        // The GPU half did not run: ignored with the reason, a failure on a rig.
        crate::require!(device: false, "a CUDA GPU (MP on the device)");
    }
}

// The reports' figures of a run: MP's weak outcome (P1:r0=1, P1:r1=0) is the one its
// condition names (so marked weak), 7 of 100 instances in 20 ms of kernel time: 350 weak
// outcomes/s and 5,000 instances/s.
#[test]
fn figures_mark_the_weak_outcome_and_give_rates_per_second() {
    use crate::figures::Figure;
    let t = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
    let v = model::check(&t);
    let r = report(
        &t.name,
        v.terms.clone(),
        &[(vec![1, 0], 7), (vec![0, 0], 93)],
    );
    let f = figures_of(&t, &r);
    match &f[0] {
        Figure::Histogram { bins, .. } => {
            let weak: Vec<(u64, bool)> = bins.iter().map(|b| (b.count, b.weak)).collect();
            assert_eq!(weak, vec![(93, false), (7, true)]);
        }
        other => panic!("{other:?}"),
    }
    match (&f[1], &f[2]) {
        (Figure::Scalar { value: w, .. }, Figure::Scalar { value: i, .. }) => {
            assert!((w.median - 350.0).abs() < 1e-6, "{w:?}");
            assert!((i.median - 5000.0).abs() < 1e-6, "{i:?}");
        }
        other => panic!("{other:?}"),
    }
    // With per-launch rates, instances/s is their median within their min..max: the band
    // `gpucts diff` compares a later run against.
    let mut r = r;
    r.launch_rates = vec![4000.0, 6000.0, 5500.0];
    match &figures_of(&t, &r)[2] {
        Figure::Scalar { value, .. } => {
            assert_eq!(
                (value.min, value.median, value.max),
                (4000.0, 5500.0, 6000.0)
            );
        }
        other => panic!("{other:?}"),
    }
}

// A suite's `stress:` writes the pattern as its code or its name; records keep the code (what
// `litmus tune` wrote before the pattern had names), and anything else is refused naming the
// four.
#[test]
fn stress_pattern_reads_codes_and_names_and_writes_codes() {
    let read = |v: serde_json::Value| {
        serde_json::from_value::<StressParams>(serde_json::json!({ "stress_pattern": v }))
            .map(|p| p.stress_pattern)
    };
    assert_eq!(
        read(serde_json::json!(0)).unwrap(),
        StressPattern::StoreStore
    );
    assert_eq!(read(serde_json::json!(3)).unwrap(), StressPattern::LoadLoad);
    assert_eq!(
        read(serde_json::json!("load-store")).unwrap(),
        StressPattern::LoadStore
    );
    for bad in [serde_json::json!(4), serde_json::json!("store")] {
        let e = read(bad).unwrap_err().to_string();
        assert!(e.contains("1 (store-load)"), "{e}");
    }
    let p = StressParams {
        stress_pattern: StressPattern::LoadStore,
        ..StressParams::default()
    };
    assert_eq!(serde_json::to_value(&p).unwrap()["stress_pattern"], 2);
    // The default is GPUHarbor's store-load.
    assert_eq!(StressParams::default().stress_pattern.code(), 1);
}

/// Kernels with location views assemble for sm_90: a generic alias in the second mapping
/// with `fence.proxy.alias`, and two surface objects (synonyms of one location) with
/// `sust`/`suld`, in both layouts (a barrier-free test shares roles; a branch makes it one
/// role per thread).
#[test]
fn view_kernels_assemble_with_ptxas() {
    let tc = Toolchain::discover_system();
    crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
    let syn = "PTX syn\n{\nx = 0;\ny @ generic aliases x;\ns1 @ surface aliases y;\n\
               s2 @ surface aliases x;\nz = 0;\nflag = 0;\n}\n\
               P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n sust.weak s1, 2 | ld.acquire.gpu r0, flag ;\n\
               st.weak z, 1 | suld.weak r1, s2 ;\n fence.proxy.alias | ld.weak r2, z ;\n\
               st.release.gpu flag, 1 | ;\nexists (P1:r0 == 1 /\\ P1:r1 != 2)\n";
    let spin = "PTX spin\n{\nx = 0;\ny @ generic aliases x;\n}\n\
                P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n st.weak y, 1 | LC00: ;\n\
                fence.proxy.alias | ld.weak r0, x ;\n | bne r0, 1, LC00 ;\n\
                exists (P1:r0 == 1)\n";
    for src in [syn, spin] {
        let t = crate::atomics::litmus::dat3m::import(src).unwrap();
        let g = Geometry::new(&t, &StressParams::default()).unwrap();
        let ptx = kernel::generate(&t, &g).unwrap();
        if let Err(err) = tc.ptxas(&ptx, kernel::TARGET, &[]) {
            panic!("{}: {err}\n{ptx}", t.name);
        }
    }
}
