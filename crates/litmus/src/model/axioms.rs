//! The axioms of the PTX 6.0 and 7.5 models, checked on one candidate execution.
//!
//! Both models judge an execution the same way: derive from-reads and a causality order, then
//! find the first of the model's axioms the execution violates. They differ in the causality
//! order (v7.5 keeps only proxy-preserved base causality) and in which axioms they check.

use super::events::{Kind, Program};
use super::rel::{acyclic, closure, compose, empty, has, inter, set, union, Rel};
use super::{Axiom, Model};
use crate::Proxy;

/// The PTX 6.0 axioms (Dat3M `ptx-v6.0.cat`), in the order a rejection names the first one
/// violated.
const V60_AXIOMS: &[Axiom] = &[
    Axiom::Coherence,
    Axiom::FenceSc,
    Axiom::Atomicity,
    Axiom::NoThinAir,
    Axiom::ScPerLocation,
    Axiom::Causality,
];

/// The PTX 7.5 axioms (Dat3M `ptx-v7.5.cat`): Fence-SC relates fences, which
/// proxy-preserved causality never does, so the cat file has no such axiom; nor has it
/// SC-per-location.
const V75_AXIOMS: &[Axiom] = &[
    Axiom::Coherence,
    Axiom::Atomicity,
    Axiom::NoThinAir,
    Axiom::Causality,
];

/// The first axiom an execution violates, or `None` if it is consistent.
/// `live`: the events that happen (a failed cas has no write).
pub fn first_violation(
    p: &Program,
    live: u64,
    rf_rel: &Rel,
    co_rel: &Rel,
    sco: &[usize],
    bar: &Rel,
) -> Option<Axiom> {
    let n = p.evs.len();
    // observation = (ms & rf) | obs; rmw; obs
    let mut obs = inter(&p.ms, rf_rel);
    loop {
        let next = union(&obs, &compose(&compose(&obs, &p.rmw), &obs));
        if next == obs {
            break;
        }
        obs = next;
    }
    let sync = inter(&p.ms, &compose(&compose(&p.rel_pat, &obs), &p.acq_pat));
    let mut sync_fence = empty(n);
    for (i, &a) in sco.iter().enumerate() {
        for &b in &sco[i + 1..] {
            if has(&p.ms, a, b) {
                set(&mut sync_fence, a, b);
            }
        }
    }
    // Base causality includes barrier synchronisation (Dat3M's `sync_barrier`; PTX ISA
    // memory consistency model, "base causality order": bar/barrier operations synchronise
    // the threads that take part).
    let base = closure(&union(&union(&union(&p.po, &sync), &sync_fence), bar));
    let (cause, axioms) = match p.model {
        Model::V60 => (union(&base, &compose(&obs, &base)), V60_AXIOMS),
        Model::V75 => (proxy_preserved_cause(p, rf_rel, &base), V75_AXIOMS),
    };
    let ex = Judged {
        p,
        live,
        rf: rf_rel,
        co: co_rel,
        fr: from_reads(rf_rel, co_rel, n),
        cause,
        sync_fence,
    };
    axioms.iter().copied().find(|&a| ex.violates(a))
}

/// fr = rf^-1; co
fn from_reads(rf_rel: &Rel, co_rel: &Rel, n: usize) -> Rel {
    let mut fr = empty(n);
    for (w, &readers) in rf_rel.iter().enumerate() {
        let mut bits = readers;
        while bits != 0 {
            let r = bits.trailing_zeros() as usize;
            fr[r] |= co_rel[w];
            bits &= bits - 1;
        }
    }
    fr
}

/// The causality order of the PTX 7.5 model (Dat3M `ptx-v7.5.cat`; PTX ISA 7.5 memory
/// consistency model, "proxies" and "causality order" with proxy-preserved base causality):
/// causality between two memory operations survives only through the same proxy and virtual
/// address, or through proxy fences of the operations' proxies in their CTAs (and
/// `fence.proxy.alias` between virtual aliases of one physical location). `cb`: base
/// causality.
fn proxy_preserved_cause(p: &Program, rf_rel: &Rel, cb: &Rel) -> Rel {
    let n = p.evs.len();
    let e = &p.evs;
    let is_mem = |i: usize| e[i].kind != Kind::F && e[i].thread.is_some();
    let gen = |i: usize| e[i].proxy == Proxy::Generic;
    // proxy-fence-ops: [F]; (same-proxy & scta); [M]
    let pfo = |f: usize, m: usize| {
        e[f].kind == Kind::F && e[f].proxy == e[m].proxy && e[f].cta_key == e[m].cta_key
    };
    // pre(a): where a's effect enters the generic world; post(b): where b's leaves it.
    let pre: Vec<Vec<usize>> = (0..n)
        .map(|a| {
            let mut v: Vec<usize> = (0..n)
                .filter(|&f| e[f].proxy_fence && has(cb, a, f) && pfo(f, a))
                .collect();
            if gen(a) {
                v.push(a);
            }
            v
        })
        .collect();
    let post: Vec<Vec<usize>> = (0..n)
        .map(|b| {
            let mut v: Vec<usize> = (0..n)
                .filter(|&f| e[f].proxy_fence && has(cb, f, b) && pfo(f, b))
                .collect();
            if gen(b) {
                v.push(b);
            }
            v
        })
        .collect();
    let aliases: Vec<usize> = (0..n).filter(|&f| e[f].alias_fence).collect();
    let mut ppcb = empty(n);
    for a in (0..n).filter(|&a| is_mem(a)) {
        for b in (0..n).filter(|&b| is_mem(b)) {
            let vloc = e[a].vloc == e[b].vloc;
            let loc = e[a].loc == e[b].loc;
            if !loc {
                continue;
            }
            let direct = has(cb, a, b)
                && vloc
                && ((gen(a) && gen(b))
                    || (e[a].proxy == e[b].proxy && e[a].cta_key == e[b].cta_key));
            let fenced = vloc
                && pre[a]
                    .iter()
                    .any(|&x| post[b].iter().any(|&y| x != y && has(cb, x, y)));
            let aliased = aliases.iter().any(|&f| {
                pre[a].iter().any(|&x| has(cb, x, f)) && post[b].iter().any(|&y| has(cb, f, y))
            });
            if direct || fenced || aliased {
                set(&mut ppcb, a, b);
            }
        }
    }
    // observation = (morally-strong & rf) | rmw; cause = ppcb | observation; ppcb
    let obs = union(&inter(&p.ms, rf_rel), &p.rmw);
    union(&ppcb, &compose(&obs, &ppcb))
}

/// One candidate execution with the relations its axioms read.
struct Judged<'a> {
    p: &'a Program,
    /// The events that happen (a failed cas has no write).
    live: u64,
    rf: &'a Rel,
    co: &'a Rel,
    fr: Rel,
    /// The model's causality order.
    cause: Rel,
    /// The Fence-SC order restricted to morally strong `fence.sc` pairs.
    sync_fence: Rel,
}

impl Judged<'_> {
    fn violates(&self, axiom: Axiom) -> bool {
        let p = self.p;
        let n = p.evs.len();
        match axiom {
            // ([W]; cause; [W]) & loc ⊆ co
            Axiom::Coherence => {
                let live_write = |a: usize| p.evs[a].kind == Kind::W && self.live >> a & 1 == 1;
                (0..n).filter(|&a| live_write(a)).any(|a| {
                    (0..n).any(|b| {
                        live_write(b)
                            && p.evs[a].loc == p.evs[b].loc
                            && has(&self.cause, a, b)
                            && !has(self.co, a, b)
                    })
                })
            }
            // irreflexive(sync_fence; cause)
            Axiom::FenceSc => (0..n)
                .any(|a| (0..n).any(|b| has(&self.sync_fence, a, b) && has(&self.cause, b, a))),
            // ((ms & fr); (ms & co)) & rmw = ∅
            Axiom::Atomicity => {
                let ms_fr = inter(&p.ms, &self.fr);
                let ms_co = inter(&p.ms, self.co);
                inter(&compose(&ms_fr, &ms_co), &p.rmw)
                    .iter()
                    .any(|&r| r != 0)
            }
            // acyclic(rf | dep), dep = data | ctrl (values computed without a cycle already;
            // a control dependency can close one too).
            Axiom::NoThinAir => !acyclic(&union(self.rf, &p.dep)),
            // acyclic((ms & (rf | co | fr)) | po-loc)
            Axiom::ScPerLocation => {
                let com = union(&union(self.rf, self.co), &self.fr);
                !acyclic(&union(&inter(&p.ms, &com), &p.po_loc))
            }
            // v6.0: irreflexive((rf | fr)?; cause), as in the paper's Alloy model
            // (`optional`), so a cycle in causality order itself is ruled out too; v7.5:
            // irreflexive((rf | fr); cause), as in `ptx-v7.5.cat`.
            Axiom::Causality => {
                let optional = p.model == Model::V60;
                (optional && (0..n).any(|i| has(&self.cause, i, i)))
                    || union(self.rf, &self.fr)
                        .iter()
                        .enumerate()
                        .any(|(a, &row)| {
                            let mut bits = row;
                            while bits != 0 {
                                let b = bits.trailing_zeros() as usize;
                                if has(&self.cause, b, a) {
                                    return true;
                                }
                                bits &= bits - 1;
                            }
                            false
                        })
            }
        }
    }
}
