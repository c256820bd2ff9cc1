use std::collections::BTreeSet;

use super::*;
use crate::atomics::catalog;
use crate::atomics::litmus::{AtomOp, Op, Operand, Term};

/// One emulated launch of `test` (the generated kernel) under `g` and `plan`: the histogram
/// and the barrier-timeout count.
fn launch(
    test: &LitmusTest,
    g: &Geometry,
    plan: &IterationPlan,
    seed: Option<u64>,
) -> (Histogram, u32) {
    let prog = parse(&kernel::generate(test, g).unwrap()).unwrap();
    let terms = model::check(test).terms;
    let l = launch_program(&prog, g, plan, &terms, seed).unwrap();
    (l.histogram, l.timeouts)
}

/// Outcomes of `test` under sequential consistency, by enumerating every interleaving of
/// its threads' operations (independent of the kernel and the model).
fn sc_outcomes(test: &LitmusTest, terms: &[Term]) -> BTreeSet<Vec<i64>> {
    fn go(
        test: &LitmusTest,
        terms: &[Term],
        pcs: &mut Vec<usize>,
        mem: &mut HashMap<String, i64>,
        regs: &mut Vec<HashMap<String, i64>>,
        out: &mut BTreeSet<Vec<i64>>,
    ) {
        let mut any = false;
        for t in 0..test.threads.len() {
            let Some(op) = test.threads[t].ops.get(pcs[t]) else {
                continue;
            };
            any = true;
            let (saved_mem, saved_regs) = (mem.clone(), regs.clone());
            let v = |o: &Operand, r: &HashMap<String, i64>| match o {
                Operand::Const(c) => *c,
                Operand::Reg(x) => *r.get(x).unwrap_or(&0),
            };
            let rd = |m: &HashMap<String, i64>, l: &str| *m.get(l).unwrap_or(&test.init_of(l));
            match op {
                Op::Ld { reg, loc, .. } => {
                    let x = rd(mem, loc);
                    regs[t].insert(reg.clone(), x);
                }
                Op::St { loc, val, .. } => {
                    let x = v(val, &regs[t]);
                    mem.insert(loc.clone(), x);
                }
                Op::Atom {
                    op,
                    reg,
                    loc,
                    val,
                    cmp,
                    ..
                } => {
                    let old = rd(mem, loc);
                    let b = v(val, &regs[t]);
                    let new = match (op, cmp) {
                        (AtomOp::Cas, Some(c)) if old != v(c, &regs[t]) => old,
                        _ => op.apply(old, b),
                    };
                    mem.insert(loc.clone(), new);
                    regs[t].insert(reg.clone(), old);
                }
                Op::Red { op, loc, val, .. } => {
                    let new = op.apply(rd(mem, loc), v(val, &regs[t]));
                    mem.insert(loc.clone(), new);
                }
                Op::Fence { .. } => {}
                Op::Mov { reg, val } => {
                    let x = v(val, &regs[t]);
                    regs[t].insert(reg.clone(), x);
                }
                other => {
                    unreachable!("the SC enumerator covers straight-line tests, not {other:?}")
                }
            }
            pcs[t] += 1;
            go(test, terms, pcs, mem, regs, out);
            pcs[t] -= 1;
            *mem = saved_mem;
            *regs = saved_regs;
        }
        if !any {
            out.insert(
                terms
                    .iter()
                    .map(|term| match term {
                        Term::Reg { thread, reg } => *regs[*thread].get(reg).unwrap_or(&0),
                        Term::Loc(l) => *mem.get(l).unwrap_or(&test.init_of(l)),
                    })
                    .collect(),
            );
        }
    }
    let mut out = BTreeSet::new();
    let mut regs: Vec<HashMap<String, i64>> = test
        .threads
        .iter()
        .map(|t| t.regs.iter().map(|(k, v)| (k.clone(), *v)).collect())
        .collect();
    go(
        test,
        terms,
        &mut vec![0; test.threads.len()],
        &mut HashMap::new(),
        &mut regs,
        &mut out,
    );
    out
}

/// One emulated launch of `test` under `g` and `plan` must give every instance one outcome,
/// each in `sc` (the test's sequentially consistent outcomes), with no barrier timeout.
fn assert_sc_launch(
    test: &LitmusTest,
    g: &Geometry,
    plan: &IterationPlan,
    seed: u64,
    sc: &BTreeSet<Vec<i64>>,
) {
    let (h, timeouts) = launch(test, g, plan, Some(seed));
    let at = format!("{} {:?}", test.name, g.params);
    assert_eq!(timeouts, 0, "{at}");
    assert_eq!(h.values().sum::<u64>(), u64::from(g.instances()), "{at}");
    for o in h.keys() {
        assert!(sc.contains(o), "{at}: outcome {o:?} is not SC ({sc:?})");
    }
}

fn small() -> StressParams {
    StressParams {
        testing_workgroups: 4,
        workgroup_size: 128,
        max_workgroups: 6,
        stress_iterations: 6,
        pre_stress_iterations: 2,
        stress_target_lines: 2,
        stress_line_size: 4,
        ..StressParams::default()
    }
}

// The generated kernel, run by the emulator on the runner's own tables and decoded by the
// runner's own decoder, produces one outcome per instance, every one sequentially consistent
// for the test (so each instance's roles met on the same locations), with no barrier timeout.
#[test]
fn emulated_launches_give_sequentially_consistent_outcomes() {
    let mut checked = 0;
    for e in catalog::entries() {
        if e.placement.is_cluster() {
            continue;
        }
        let test = e.test;
        let g = Geometry::new(&test, &small()).unwrap();
        let terms = model::check(&test).terms;
        let sc = sc_outcomes(&test, &terms);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(checked);
        for round in 0..2u64 {
            let plan = if round == 0 {
                IterationPlan::identity(&g)
            } else {
                IterationPlan::random(&g, &mut rng)
            };
            assert_sc_launch(&test, &g, &plan, checked * 10 + round, &sc);
        }
        checked += 1;
    }
    assert_eq!(checked, 312);
}

// Random tuning sets (`litmus tune`) keep the kernel correct: with their stress knobs (stride,
// stress lines and pattern, shuffling, barrier on or off) and a launch shape shrunk to what the
// emulator runs quickly, every instance still gives one sequentially consistent outcome.
#[test]
fn emulated_random_tuning_sets_stay_correct() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let names = [
        "MP.relaxed.gpu.inter_cta",
        "MP.relaxed.cta.intra_cta",
        "SB.relaxed.gpu.inter_cta",
        "IRIW.relaxed.gpu.inter_cta",
        "CoRR.relaxed.gpu.intra_cta",
    ];
    let (mut checked, mut too_few) = (0, 0);
    for k in 0..16u64 {
        let r = StressParams::random(&mut rng);
        let params = StressParams {
            testing_workgroups: r.testing_workgroups.min(4),
            workgroup_size: r.workgroup_size.clamp(128, 256),
            max_workgroups: r.testing_workgroups.min(4) + 1,
            stress_iterations: r.stress_iterations.min(6),
            pre_stress_iterations: r.pre_stress_iterations.min(3),
            ..r
        };
        for name in names {
            let test =
                catalog::by_name(name).unwrap_or_else(|| panic!("{name}: not in the catalogue"));
            // The only input a set may not fit: a test with more threads than units to place
            // them in (testing CTAs across CTAs, warps within one); any other refusal fails.
            let g = match fits(&test, &params) {
                Ok(()) => Geometry::new(&test, &params)
                    .unwrap_or_else(|e| panic!("set {k}, {name}: {e} ({params:?})")),
                Err(units) => {
                    let e = Geometry::new(&test, &params).map(|_| ()).unwrap_err();
                    assert!(
                        matches!(e, layout::GeometryError::TooFewUnits { units: u, .. } if u == units),
                        "set {k}, {name}: {e}"
                    );
                    too_few += 1;
                    continue;
                }
            };
            let terms = model::check(&test).terms;
            let sc = sc_outcomes(&test, &terms);
            let plan = IterationPlan::random(&g, &mut rng);
            assert_sc_launch(&test, &g, &plan, k, &sc);
            checked += 1;
        }
    }
    // Every input is checked or predicted not to fit; and the predicted misfits stay under a
    // quarter of the 80 inputs (seed 11's sets), so the check covers most of them.
    assert_eq!(checked + too_few, 80);
    assert!(too_few <= 20, "{too_few} of 80 inputs did not fit");
}

// With the locations of tests within one CTA in that CTA's shared memory (copied in, a
// `bar.sync`, the test, a `bar.sync`, copied out), every instance still gives one sequentially
// consistent outcome, decoded from the location buffer as before.
#[test]
fn emulated_shared_memory_launches_stay_correct() {
    let params = StressParams {
        intra_cta_shared: true,
        mem_stride: 2,
        ..small()
    };
    let mut checked = 0;
    for e in catalog::entries() {
        if e.placement.is_cluster() {
            continue;
        }
        let test = e.test;
        let g = Geometry::new(&test, &params).unwrap();
        if !g.shared {
            continue;
        }
        let terms = model::check(&test).terms;
        let sc = sc_outcomes(&test, &terms);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(checked);
        let plan = IterationPlan::random(&g, &mut rng);
        assert_sc_launch(&test, &g, &plan, checked, &sc);
        checked += 1;
    }
    assert_eq!(checked, 156);
}

// Discriminating: threads run one after another in id order with the identity plan, so the
// placement rule alone fixes the histogram. Across CTAs, role r of an instance in CTA k runs
// in CTA k - r: MP's reader of an instance in CTA k >= 1 runs (in CTA k - 1) before its
// writer and sees (0, 0); the reader of CTA 0's instances runs last (in the last testing
// CTA) and sees (1, 1). Within a CTA, the reader sits one warp below the writer (the writer
// of warp w's instances is in warp w, the reader in warp w - 1), so warp 0's instances are
// read last: (1, 1) for 32 instances per CTA, (0, 0) for the rest.
#[test]
fn sequential_emulation_gives_the_histogram_the_placement_implies() {
    let params = StressParams {
        barrier: false,
        ..small()
    };
    let (tw, w) = (
        params.testing_workgroups as u64,
        params.workgroup_size as u64,
    );
    let inter = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
    let g = Geometry::new(&inter, &params).unwrap();
    let (h, _) = launch(&inter, &g, &IterationPlan::identity(&g), None);
    let want: Histogram = [(vec![0, 0], (tw - 1) * w), (vec![1, 1], w)]
        .into_iter()
        .collect();
    assert_eq!(h, want);
    let intra = catalog::by_name("MP.relaxed.cta.intra_cta").unwrap();
    let g = Geometry::new(&intra, &params).unwrap();
    let (h, _) = launch(&intra, &g, &IterationPlan::identity(&g), None);
    let want: Histogram = [(vec![0, 0], tw * (w - 32)), (vec![1, 1], tw * 32)]
        .into_iter()
        .collect();
    assert_eq!(h, want);
}

// The SC enumerator itself, on textbook results: MP under SC never gives (1, 0); SB never
// gives (0, 0); 2+2W never leaves (1, 1).
#[test]
fn sc_enumerator_matches_textbook_outcomes() {
    let mp = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
    let t = model::check(&mp).terms;
    let o = sc_outcomes(&mp, &t);
    assert_eq!(
        o,
        [vec![0, 0], vec![0, 1], vec![1, 1]].into_iter().collect()
    );
    let sb = catalog::by_name("SB.relaxed.gpu.inter_cta").unwrap();
    let o = sc_outcomes(&sb, &model::check(&sb).terms);
    assert!(!o.contains(&vec![0, 0]) && o.len() == 3);
    let w = catalog::by_name("2+2W.relaxed.gpu.inter_cta").unwrap();
    let o = sc_outcomes(&w, &model::check(&w).terms);
    assert!(!o.contains(&vec![1, 1]));
}

// The emulator is a sequentially consistent machine, as published GPUs behave within one CTA
// since Maxwell: an intra-CTA control's weak outcome is not SC (the independent enumerator
// says so), so its launches never show it, and the forbidden test passes tagged
// `control-without-weak-outcomes`, a failure under `--require-weak-controls`.
#[test]
fn an_sc_machine_gives_passes_tagged_control_without_weak_outcomes() {
    use crate::outcome::{CaseStatus, CONTROL_WITHOUT_WEAK_OUTCOMES};
    for name in ["MP.rel_acq.cta.intra_cta", "SB.sc.cta.intra_cta"] {
        let test = catalog::by_name(name).unwrap();
        let control = catalog::by_name(&catalog::control_for(name).unwrap()).unwrap();
        let run = |t: &LitmusTest, seed: u64| {
            let g = Geometry::new(t, &small()).unwrap();
            let verdict = model::check(t);
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut histogram = Histogram::new();
            for round in 0..3 {
                let plan = IterationPlan::random(&g, &mut rng);
                let (h, _) = launch(t, &g, &plan, Some(seed * 10 + round));
                for (o, n) in h {
                    *histogram.entry(o).or_insert(0) += n;
                }
            }
            let report = super::super::RunReport {
                test: t.name.clone(),
                launches: 3,
                instances: histogram.values().sum(),
                kernel_time: std::time::Duration::ZERO,
                launch_rates: Vec::new(),
                wall_time: std::time::Duration::ZERO,
                setup_time: std::time::Duration::ZERO,
                host_time: std::time::Duration::ZERO,
                terms: verdict.terms.clone(),
                histogram,
                barrier_timeouts: 0,
                did_not_terminate: 0,
                past_model_bound: 0,
            };
            (verdict, report)
        };
        // Independently of the kernel and the judge: no SC execution of the control satisfies
        // its condition, so its weak count must be 0.
        let cterms = model::check(&control).terms;
        let sc = sc_outcomes(&control, &cterms);
        assert!(
            sc.iter().all(|o| {
                let value = |t: &Term| cterms.iter().position(|x| x == t).map(|i| o[i]);
                control.condition.prop.eval(&value) != Some(true)
            }),
            "{name}: the control's weak outcome is SC"
        );
        let (v, r) = run(&test, 1);
        let (cv, cr) = run(&control, 2);
        let c = super::super::classify(&test, &v, &r.histogram);
        let cc = super::super::classify(&control, &cv, &cr.histogram);
        let status = super::super::judge(&v, &r, &c, Some((&cr, &cc)));
        assert!(
            matches!(&status, CaseStatus::Pass { .. }),
            "{name}: {status:?}"
        );
        assert_eq!(status.tags(), [CONTROL_WITHOUT_WEAK_OUTCOMES], "{name}");
        assert!(status.with_weak_controls_required().is_failure(), "{name}");
    }
}

// The public entry point: `launches` launches, each instance counted once, every outcome
// sequentially consistent (the independent enumerator), and the same seed gives the same
// histogram (a user's `--emulate` run is reproducible).
#[test]
fn emulate_counts_every_instance_of_every_launch() {
    let test = catalog::by_name("SB.relaxed.gpu.inter_cta").unwrap();
    let params = small();
    let g = Geometry::new(&test, &params).unwrap();
    let run = emulate(&test, &params, 3, 7).unwrap();
    assert_eq!(run.launches, 3);
    assert_eq!(run.instances, 3 * u64::from(g.instances()));
    assert_eq!(run.histogram.values().sum::<u64>(), run.instances);
    assert_eq!(run.barrier_timeouts, 0);
    let sc = sc_outcomes(&test, &model::check(&test).terms);
    assert!(run.histogram.keys().all(|o| sc.contains(o)), "{run:?}");
    assert_eq!(emulate(&test, &params, 3, 7).unwrap(), run);
}

use super::fixtures::one_role_params;

/// A spin loop that waits for a store that no thread makes stops at the loop cap: every
/// instance is counted "did not terminate", none becomes an outcome, and the launch ends.
#[test]
fn a_spin_that_never_ends_stops_at_the_cap_and_is_no_outcome() {
    let test = crate::atomics::gpu::emulate::fixtures::spin_forever();
    let run = emulate(&test, &one_role_params(), 1, 3).unwrap();
    assert!(run.instances > 0);
    assert_eq!(run.did_not_terminate, run.instances);
    assert!(run.histogram.is_empty(), "{:?}", run.histogram);
}

/// Message passing with a spin on the flag: on a sequentially consistent machine the spin
/// ends once the flag's store arrives, and the data store precedes it in program order, so
/// the only outcome is r0 = 1, r1 = 1 (no instance stops at the cap).
#[test]
fn a_spin_ends_when_the_awaited_store_arrives() {
    let test = crate::atomics::litmus::from_yaml(
        "name: MP+spin\n\
         threads:\n\
         - cta: 0\n  ops:\n\
         \x20 - st: {loc: x, val: 1}\n\
         \x20 - st: {loc: y, val: 1, sem: release, scope: gpu}\n\
         - cta: 1\n  ops:\n\
         \x20 - label: {name: L}\n\
         \x20 - ld: {reg: r0, loc: y, sem: acquire, scope: gpu}\n\
         \x20 - branch: {cond: ne, a: r0, b: 1, target: L}\n\
         \x20 - ld: {reg: r1, loc: x}\n\
         condition: 'exists (P1:r0 == 1 /\\ P1:r1 == 0)'\n",
    )
    .unwrap();
    let run = emulate(&test, &one_role_params(), 2, 5).unwrap();
    assert_eq!(run.did_not_terminate, 0);
    let only: Vec<&Vec<i64>> = run.histogram.keys().collect();
    assert_eq!(only, vec![&vec![1, 1]], "{:?}", run.histogram);
    assert_eq!(run.histogram[&vec![1, 1]], run.instances);
}

/// A barrier between a store and a load of another thread of the CTA: the load runs after
/// the barrier completes, which is after the store (PTX ISA "bar, barrier"), so it reads 1.
#[test]
fn a_barrier_orders_a_store_before_another_threads_load() {
    let test = crate::atomics::litmus::from_yaml(
        "name: bar-MP\n\
         threads:\n\
         - cta: 0\n  ops:\n\
         \x20 - st: {loc: x, val: 1}\n\
         \x20 - barrier: {instance: 1}\n\
         - cta: 0\n  ops:\n\
         \x20 - barrier: {instance: 1}\n\
         \x20 - ld: {reg: r0, loc: x}\n\
         condition: 'exists (P1:r0 == 0)'\n",
    )
    .unwrap();
    let params = StressParams {
        testing_workgroups: 1,
        workgroup_size: 64,
        max_workgroups: 1,
        ..one_role_params()
    };
    let run = emulate(&test, &params, 2, 9).unwrap();
    assert!(run.instances > 0);
    assert_eq!(run.histogram.keys().collect::<Vec<_>>(), vec![&vec![1]]);
}

/// A launch shape every cluster test fits: 8 testing CTAs (two clusters of 4, or four of 2)
/// of one warp, and one stressing cluster.
fn cluster_params(cluster_shared: bool) -> StressParams {
    StressParams {
        testing_workgroups: 8,
        workgroup_size: 32,
        max_workgroups: 12,
        cluster_shared,
        mem_stride: 2,
        ..small()
    }
}

/// Whether an emulated launch of `test` gives only outcomes the model allows (and every
/// instance one outcome); `Err` with the first other outcome.
fn cluster_launch_allowed(
    test: &LitmusTest,
    params: &StressParams,
    seed: u64,
) -> Result<(), String> {
    let g = Geometry::new(test, params).unwrap();
    let v = model::check(test);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let plan = IterationPlan::random(&g, &mut rng);
    let (h, timeouts) = launch(test, &g, &plan, Some(seed));
    assert_eq!(timeouts, 0, "{}", test.name);
    if h.values().sum::<u64>() != u64::from(g.instances()) {
        return Err(format!(
            "{}: {h:?} is not one outcome per instance",
            test.name
        ));
    }
    match h.keys().find(|o| !v.allowed_outcomes.contains(*o)) {
        Some(o) => Err(format!(
            "{}: outcome {o:?} not allowed by the model",
            test.name
        )),
        None => Ok(()),
    }
}

// Every cluster catalogue kernel (threads in the CTAs of one cluster, or in different
// clusters; locations in global memory, and, within a cluster, in the P0 CTA's shared memory
// reached through `mapa` and `.shared::cluster`) emulates to outcomes the model allows only,
// one per instance, on shuffled plans (clusters moved whole).
#[test]
fn cluster_kernels_emulate_to_allowed_outcomes() {
    let (mut global, mut dsmem) = (0, 0);
    for (k, e) in catalog::entries().into_iter().enumerate() {
        if !e.placement.is_cluster() {
            continue;
        }
        cluster_launch_allowed(&e.test, &cluster_params(false), k as u64).unwrap();
        global += 1;
        let params = cluster_params(true);
        if Geometry::new(&e.test, &params).unwrap().shared {
            let ptx = kernel::generate(&e.test, &Geometry::new(&e.test, &params).unwrap()).unwrap();
            assert!(ptx.contains("mapa.shared::cluster.u64") && ptx.contains(".shared::cluster."));
            cluster_launch_allowed(&e.test, &params, k as u64).unwrap();
            dsmem += 1;
        }
    }
    assert_eq!((global, dsmem), (104, 52));
}

// Mutation check: with `mapa` wrongly keeping each thread in its own CTA's shared memory, the
// threads of one instance no longer meet on the same locations, and the cluster tests above
// see it (an outcome the model forbids, or instances without one).
#[test]
fn a_wrong_distributed_shared_memory_mapping_is_caught() {
    MAPA_TO_SELF.with(|m| m.set(true));
    let mut caught = 0;
    for name in [
        "MP.rel_acq.cluster.intra_cluster",
        "SB.sc.cluster.intra_cluster",
        "CoRR.relaxed.cluster.intra_cluster",
        "RMW.rel_acq.cluster.intra_cluster",
    ] {
        let t = catalog::by_name(name).unwrap();
        if (0..4).any(|seed| cluster_launch_allowed(&t, &cluster_params(true), seed).is_err()) {
            caught += 1;
        }
    }
    MAPA_TO_SELF.with(|m| m.set(false));
    assert!(caught >= 1, "no cluster test saw the wrong mapping");
    eprintln!("a wrong DSMEM mapping caught by {caught} of 4 tests");
}

// The cluster registers and `mapa` by hand: CTA b of a launch with clusters of 4 is rank b % 4
// of cluster b / 4 (PTX ISA "Special registers": %cluster_ctarank, %clusterid), and `mapa`
// keeps the offset while moving to the named rank of the same cluster.
#[test]
fn cluster_registers_and_mapa_follow_the_grid_tiling() {
    let t = Thread {
        pc: 0,
        regs: HashMap::new(),
        done: false,
        waiting: None,
        arrived: None,
        tid: 0,
        ctaid: 6,
    };
    let prog = Program {
        code: Vec::new(),
        labels: HashMap::new(),
    };
    let m = Machine {
        prog: &prog,
        mem: HashMap::new(),
        params: HashMap::new(),
        ntid: 32,
        cluster: 4,
        barrier: HashMap::new(),
        proxy: proxy::AsyncState::new(&prog),
    };
    assert_eq!(m.val(&t, "%cluster_ctarank").unwrap(), 2);
    assert_eq!(m.val(&t, "%clusterid.x").unwrap(), 1);
    let a = m.val(&t, kernel::SMEM).unwrap() + 12;
    // Rank 0 of cluster 1 is CTA 4.
    assert_eq!(mapa(a, 6, 0, 4).unwrap(), shared_base(4) + 12);
    assert_eq!(mapa(a, 6, 2, 4).unwrap(), a);
    assert!(mapa(a, 6, 4, 4).is_err());
    assert!(mapa(5, 6, 0, 4).is_err());
}

// The generated cluster kernels assemble for sm_90 with ptxas: `.explicitcluster`,
// `%clusterid.x` / `%cluster_ctarank`, `mapa.shared::cluster`, `.shared::cluster` accesses and
// `barrier.cluster` (the independent check that the GPU could load them).
#[test]
fn cluster_kernels_assemble_with_ptxas() {
    let tc = crate::backend::toolchain::Toolchain::discover_system();
    let dsmem = StressParams {
        cluster_shared: true,
        ..StressParams::default()
    };
    let mut kernels = Vec::new();
    for e in catalog::entries() {
        if !e.placement.is_cluster() {
            continue;
        }
        for p in [StressParams::default(), dsmem.clone()] {
            let g = Geometry::new(&e.test, &p).unwrap();
            if p.cluster_shared && !g.shared {
                continue;
            }
            let ptx = kernel::generate(&e.test, &g).unwrap();
            assert!(ptx.contains(".explicitcluster") && ptx.contains("%cluster_ctarank"));
            kernels.push((e.test.name.clone(), ptx));
        }
    }
    assert_eq!(kernels.len(), 104 + 52);
    crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
    for (name, ptx) in &kernels {
        if let Err(err) = tc.ptxas(ptx, kernel::TARGET, &[]) {
            panic!("{name}: {err}\n{ptx}");
        }
    }
}

fn dat3m(src: &str) -> LitmusTest {
    crate::atomics::litmus::dat3m::import(src).unwrap()
}

/// A thread writes a location through a generic alias and, after `fence.proxy.alias`, reads
/// it through the other name (Dat3M `Manual/proxy/Proxy-Alias-AliasFence`, listed as holding:
/// every execution reads 42). The alias is the same word in the buffer's second mapping, so
/// every instance reads 42; and the final value of either name is 42.
#[test]
fn a_generic_alias_is_the_same_storage_in_the_second_mapping() {
    let test = dat3m(
        "PTX alias\n{\nx = 0;\ny @ generic aliases x;\n}\nP0@cta 0,gpu 0 ;\n st.weak y, 42 ;\n\
         fence.proxy.alias ;\n ld.weak r0, x ;\nforall (P0:r0 == 42 /\\ x == 42 /\\ y == 42)\n",
    );
    let ptx = kernel::generate(&test, &Geometry::new(&test, &small()).unwrap()).unwrap();
    assert!(ptx.contains(".param .u64 p_alias") && ptx.contains("fence.proxy.alias;"));
    let run = emulate(&test, &small(), 2, 7).unwrap();
    let verdict = model::check(&test);
    assert_eq!(run.histogram.len(), 1, "{:?}", run.histogram);
    let (outcome, n) = run.histogram.iter().next().unwrap();
    assert!(
        outcome.iter().all(|v| *v == 42),
        "{outcome:?} of {:?}",
        verdict.terms
    );
    assert_eq!(*n, run.instances);
}

/// A surface write then a surface read of the same name by one thread: program order on one
/// virtual address through one proxy is coherent (PTX ISA 7.5 "Proxies"; Dat3M's
/// `Proxy-SingleThread-rf-surW-surR` lists `forall (P0:r0 == 1)` as holding), so every
/// instance reads 1, and the location's final value, read back from the array, is 1.
#[test]
fn surface_accesses_reach_the_array_that_mirrors_the_buffer() {
    let test = dat3m(
        "PTX sur\n{\nx = 0;\ns @ surface aliases x;\n}\nP0@cta 0,gpu 0 ;\n sust.weak s, 1 ;\n\
         suld.weak r0, s ;\nforall (P0:r0 == 1 /\\ x == 1)\n",
    );
    let g = Geometry::new(&test, &small()).unwrap();
    let ptx = kernel::generate(&test, &g).unwrap();
    assert!(
        ptx.contains("sust.b.1d.b32.trap [%k_surf0, {%k_sx}]"),
        "{ptx}"
    );
    assert!(
        !g.shared,
        "surface locations stay in the global buffer's layout"
    );
    let run = emulate(&test, &small(), 2, 9).unwrap();
    assert_eq!(
        run.histogram.keys().collect::<Vec<_>>(),
        vec![&vec![1, 1]],
        "{:?}",
        run.histogram
    );
    let verdict = model::check(&test);
    assert!(run.histogram.keys().all(|o| verdict.outcome_allowed(o)));
}

/// A location reached through a surface and generically: CUDA's surfaces live in CUDA
/// arrays, which have no generic address (cuSurfObjectCreate), so the kernel is refused,
/// naming the generic access.
#[test]
fn a_surface_location_with_generic_accesses_is_refused() {
    let test = dat3m(
        "PTX gs\n{\nx = 0;\ns @ surface aliases x;\n}\nP0@cta 0,gpu 0 ;\n st.weak x, 1 ;\n\
         suld.weak r0, s ;\nexists (P0:r0 != 1)\n",
    );
    match emulate(&test, &small(), 1, 1) {
        Err(EmulateError::Kernel(KernelError::Inexpressible { construct, .. })) => {
            assert!(construct.contains("st.weak x, 1"), "{construct}")
        }
        other => panic!("{other:?}"),
    }
}
