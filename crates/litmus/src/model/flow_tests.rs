//! Control flow, barriers, proxies and literals: small tests whose verdicts follow from the
//! PTX ISA by hand (argued beside each), plus the export -> import identity over random tests.

use rand::{Rng, SeedableRng};
use strum::VariantArray;

use super::{try_check_with, Options};
use crate::dat3m::{export, import};
use crate::{
    Alias, AtomOp, BranchCond, Condition, LitmusTest, LocalOp, Location, Op, Operand, Prop, Proxy,
    ProxyFenceKind, Quantifier, Scope, Sem, Term, Thread,
};

fn holds(text: &str) -> (bool, bool) {
    let t = import(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let v = try_check_with(&t, &Options::default()).unwrap();
    (v.condition_holds, v.bound_reached)
}

// The PTX ISA's constants: a leading 0 is octal, so `010` stores 8. Reading it as decimal 10
// (what the importer once did) flips both verdicts below.
#[test]
fn octal_literal_decides_the_verdict() {
    let t = |cond: &str| {
        format!(
            "PTX oct\n{{ x=0; P1:r0=0; }}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n st.relaxed.gpu x, 010 | ld.relaxed.gpu r0, x ;\nexists ({cond})\n"
        )
    };
    // The only write stores 8, so r0 is 0 or 8.
    assert_eq!(holds(&t("P1:r0 == 8")), (true, false));
    assert_eq!(holds(&t("P1:r0 == 10")), (false, false));
}

// A loop with a side effect cut by the bound: the only terminating executions leave x == 1;
// whether x can stay 0 is not decided within one iteration, so the answer is `bound
// reached`, never a pass. A witness (x == 1) decides an exists regardless of the bound.
#[test]
fn a_cut_loop_is_bound_reached_not_a_verdict() {
    let t = |cond: &str| {
        format!(
            "PTX cut\n{{ x=0; y=0; P0:r0=0; }}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n LC00: | st.weak y, 1 ;\n st.weak x, 1 | ;\n ld.weak r0, y | ;\n bne r0, 1, LC00 | ;\nexists ({cond})\n"
        )
    };
    assert_eq!(holds(&t("x == 0")), (false, true));
    assert_eq!(holds(&t("x == 1")), (true, false));
}

// A side-effect-free spin loop (the ticket lock's wait): executions that keep spinning do not
// terminate and are excluded; the ones that leave it read y == 1. So r0 == 1 always holds.
#[test]
fn a_spin_loop_only_leaves_with_the_value_it_waits_for() {
    let text = "PTX spin\n{ y=0; P0:r0=0; }\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n LC00: | st.relaxed.gpu y, 1 ;\n ld.relaxed.gpu r0, y | ;\n bne r0, 1, LC00 | ;\nforall (P0:r0 == 1)\n";
    assert_eq!(holds(text), (true, false));
    // Liveness: P1's store is eventually seen (fair scheduler), so nothing spins forever;
    // without it, the loop reads the final value 0 forever.
    let t = import(text).unwrap();
    let opts = Options {
        liveness: true,
        ..Options::default()
    };
    assert_eq!(
        try_check_with(&t, &opts).unwrap().liveness_violation,
        Some(None)
    );
    let stuck = text.replace("st.relaxed.gpu y, 1", "st.relaxed.gpu z, 1");
    let t = import(&stuck).unwrap();
    assert!(matches!(
        try_check_with(&t, &opts).unwrap().liveness_violation,
        Some(Some(_))
    ));
}

// An iteration that writes no memory but changes a register the code after the loop head
// reads is no spin: running it again changes what is read. P1 counts its attempts in r2 and
// stores the count; a run that reads y == 0 first stores 2 or more, which no execution within
// one iteration shows, so x == 2 is bound reached, not forbidden (the spin rule alone would
// exclude the retry and answer forbidden). The wait's own register r0 is rewritten before it
// is read, so a plain spin stays a spin (the test above).
#[test]
fn a_loop_that_carries_a_register_is_no_spin() {
    let t = |cond: &str| {
        format!(
            "PTX count\n{{ x=0; y=0; P1:r2=0; }}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n \
             st.relaxed.gpu y, 1 | LC10: ;\n | add r2, r2, 1 ;\n | ld.relaxed.gpu r0, y ;\n \
             | beq r0, 0, LC10 ;\n | st.relaxed.gpu x, r2 ;\nexists ({cond})\n"
        )
    };
    assert_eq!(holds(&t("x == 1")), (true, false));
    assert_eq!(holds(&t("x == 2")), (false, true));
    // A register written in the loop and read after it, not carried into the next
    // iteration's reads: the retry leaves r1 from the first iteration behind.
    let t = |cond: &str| {
        format!(
            "PTX leftover\n{{ x=0; y=0; P1:r1=0; }}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n \
             st.relaxed.gpu y, 1 | LC10: ;\n st.relaxed.gpu x, 1 | ld.relaxed.gpu r0, x ;\n \
             | beq r0, 1, LC11 ;\n | ld.relaxed.gpu r1, y ;\n | goto LC10 ;\n | LC11: ;\n\
             exists ({cond})\n"
        )
    };
    assert_eq!(holds(&t("P1:r0 == 1 /\\ P1:r1 == 1")), (false, true));
}

// Message passing through a CTA barrier: bar.sync orders the weak store before the weak load
// (PTX ISA "bar, barrier": memory accesses before the barrier are performed relative to all
// participating threads), so r0 == 1. Across CTAs `bar.cta` synchronises nothing.
#[test]
fn barriers_order_within_their_cta_only() {
    let t = |cta1: u32| {
        format!(
            "PTX bar\n{{ x=0; P1:r0=0; }}\n P0@cta 0,gpu 0 | P1@cta {cta1},gpu 0 ;\n st.weak x, 1 | bar.cta.sync 0 ;\n bar.cta.sync 0 | ld.weak r0, x ;\nforall (P1:r0 == 1)\n"
        )
    };
    assert_eq!(holds(&t(0)), (true, false));
    assert_eq!(holds(&t(1)), (false, false));
}

// PTX 7.5 proxies: a surface store is seen by a generic load of the same address only after
// a surface proxy fence (the mixedproxy tests); without one the old value may be read.
#[test]
fn a_proxy_fence_makes_a_surface_store_visible_to_generic_loads() {
    let t = |fence: &str| {
        format!(
            "PTX px\n{{ x=0; s @ surface aliases x; P0:r0=0; }}\n P0@cta 0,gpu 0 ;\n sust.weak s, 1 ;\n {fence} ;\n ld.weak r0, x ;\nforall (P0:r0 == 1)\n"
        )
    };
    assert_eq!(holds(&t("fence.proxy.surface")), (true, false));
    assert_eq!(holds(&t("fence.proxy.texture")), (false, false));
}

/// A random number below `n`.
fn pick(rng: &mut rand_chacha::ChaCha8Rng, n: usize) -> usize {
    rng.random_range(0..n)
}

const SEMS_LD: [Sem; 3] = [Sem::Weak, Sem::Relaxed, Sem::Acquire];
const SEMS_ST: [Sem; 3] = [Sem::Weak, Sem::Relaxed, Sem::Release];
const SEMS_RMW: [Sem; 4] = [Sem::Relaxed, Sem::Acquire, Sem::Release, Sem::AcqRel];
const SEMS_F: [Sem; 4] = [Sem::Sc, Sem::AcqRel, Sem::Acquire, Sem::Release];
const OPS_RMW: [AtomOp; 9] = [
    AtomOp::Add,
    AtomOp::Sub,
    AtomOp::Exch,
    AtomOp::And,
    AtomOp::Or,
    AtomOp::Xor,
    AtomOp::Min,
    AtomOp::Max,
    AtomOp::Cas,
];
const REGS: [&str; 3] = ["r0", "r1", "r2"];

fn random_test(rng: &mut rand_chacha::ChaCha8Rng, k: usize) -> LitmusTest {
    let regs = REGS;
    let nthreads = 1 + pick(rng, 3);
    let mut threads = Vec::new();
    for ti in 0..nthreads {
        let labels: Vec<String> = (0..pick(rng, 3)).map(|i| format!("LC{ti}{i}")).collect();
        let mut ops = Vec::new();
        for _ in 0..1 + pick(rng, 7) {
            ops.push(random_op(rng, &labels));
        }
        for l in &labels {
            let at = pick(rng, ops.len() + 1);
            ops.insert(at, Op::Label { name: l.clone() });
        }
        threads.push(Thread {
            cta: pick(rng, 3) as u32,
            cluster: (pick(rng, 2) == 0).then_some(pick(rng, 2) as u32),
            gpu: pick(rng, 2) as u32,
            warp: None,
            regs: regs
                .iter()
                .map(|r| (r.to_string(), pick(rng, 5) as i64))
                .collect(),
            ops,
        });
    }
    let condition = random_condition(rng, nthreads);
    let loc = |name: &str, alias: Option<(Proxy, &str)>| Location {
        name: name.into(),
        init: if alias.is_some() { 0 } else { 1 },
        space: Default::default(),
        alias: alias.map(|(proxy, of)| Alias {
            proxy,
            of: of.into(),
        }),
    };
    LitmusTest {
        name: format!("random-{k}"),
        description: Some(format!("line one \"quoted\" {k}\nline two \\ end")),
        locations: vec![
            loc("x", None),
            loc("y", None),
            loc("s", Some((Proxy::Surface, "x"))),
            loc("t", Some((Proxy::Texture, "y"))),
        ],
        threads,
        condition,
    }
}

/// One random operation of any kind (a branch or goto only when the thread has `labels`).
fn random_op(rng: &mut rand_chacha::ChaCha8Rng, labels: &[String]) -> Op {
    let regs = REGS;
    let plain = ["x", "y"];
    let reg = regs[pick(rng, 3)].to_string();
    let val = if pick(rng, 2) == 0 {
        Operand::Const(pick(rng, 20) as i64 - 5)
    } else {
        Operand::Reg(regs[pick(rng, 3)].to_string())
    };
    let loc = plain[pick(rng, 2)].to_string();
    let scope = Scope::ALL[pick(rng, 4)];
    match pick(rng, 12) {
        0 => {
            let sem = SEMS_LD[pick(rng, 3)];
            Op::Ld {
                reg,
                loc,
                sem,
                scope: (sem != Sem::Weak).then_some(scope),
            }
        }
        1 => {
            let sem = SEMS_ST[pick(rng, 3)];
            Op::St {
                loc,
                val,
                sem,
                scope: (sem != Sem::Weak).then_some(scope),
            }
        }
        2 => {
            let op = OPS_RMW[pick(rng, OPS_RMW.len())];
            Op::Atom {
                op,
                reg,
                loc,
                val,
                cmp: (op == AtomOp::Cas).then_some(Operand::Const(pick(rng, 3) as i64)),
                sem: SEMS_RMW[pick(rng, 4)],
                scope,
            }
        }
        3 => Op::Red {
            op: OPS_RMW[pick(rng, OPS_RMW.len() - 1)],
            loc,
            val,
            sem: SEMS_RMW[pick(rng, 4)],
            scope,
        },
        4 => Op::Fence {
            sem: SEMS_F[pick(rng, 4)],
            scope,
        },
        5 => Op::Mov { reg, val },
        6 => Op::Local {
            op: LocalOp::VARIANTS[pick(rng, 7)],
            reg,
            a: Operand::Reg(regs[pick(rng, 3)].to_string()),
            b: val,
        },
        7 if !labels.is_empty() => Op::Branch {
            cond: BranchCond::VARIANTS[pick(rng, 6)],
            a: Operand::Reg(regs[pick(rng, 3)].to_string()),
            b: val,
            target: labels[pick(rng, labels.len())].clone(),
        },
        8 if !labels.is_empty() => Op::Goto {
            target: labels[pick(rng, labels.len())].clone(),
        },
        9 => {
            let id = (pick(rng, 2) == 0).then(|| Operand::Const(pick(rng, 3) as i64));
            Op::Barrier {
                arrive: pick(rng, 2) == 0,
                instance: pick(rng, 3) as i64,
                quorum: id.as_ref().and_then(|_| {
                    (pick(rng, 2) == 0).then(|| Operand::Const(1 + pick(rng, 3) as i64))
                }),
                id,
            }
        }
        10 => Op::ProxyFence {
            kind: [
                ProxyFenceKind::Surface,
                ProxyFenceKind::Texture,
                ProxyFenceKind::Constant,
                ProxyFenceKind::Alias,
            ][pick(rng, 4)],
        },
        _ => {
            if pick(rng, 2) == 0 {
                Op::ProxySt {
                    proxy: Proxy::Surface,
                    loc: "s".into(),
                    val,
                    sem: Sem::Weak,
                    scope: None,
                }
            } else {
                Op::ProxyLd {
                    proxy: [Proxy::Texture, Proxy::Surface, Proxy::Constant][pick(rng, 3)],
                    reg,
                    loc: "t".into(),
                    sem: Sem::Weak,
                    scope: None,
                }
            }
        }
    }
}

/// A random condition over `x` and the registers of `nthreads` threads.
fn random_condition(rng: &mut rand_chacha::ChaCha8Rng, nthreads: usize) -> Condition {
    let regs = REGS;
    let term = |rng: &mut rand_chacha::ChaCha8Rng| {
        if rng.random_range(0..3) == 0 {
            Term::Loc("x".into())
        } else {
            Term::Reg {
                thread: rng.random_range(0..nthreads),
                reg: regs[rng.random_range(0..3)].into(),
            }
        }
    };
    let a = term(rng);
    let b = term(rng);
    let prop = Prop::Or(vec![
        Prop::Cmp {
            term: a,
            eq: true,
            val: rng.random_range(0..4),
        },
        Prop::Not(Box::new(Prop::Cmp {
            term: b,
            eq: false,
            val: -1,
        })),
    ]);
    let quantifier = [
        Quantifier::Exists,
        Quantifier::NotExists,
        Quantifier::Forall,
    ][rng.random_range(0..3)];
    Condition { quantifier, prop }
}

// Export then import gives back the same test, for random tests over every construct.
#[test]
fn export_import_is_the_identity() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(18);
    for k in 0..300 {
        let t = random_test(&mut rng, k);
        t.validate()
            .unwrap_or_else(|e| panic!("generator made an invalid test: {e}\n{t:#?}"));
        let text = export(&t);
        let back = import(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(back, t, "{text}");
    }
}
