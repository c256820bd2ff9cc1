//! The axioms of the PTX 6.0 and 7.5 models, checked on one candidate execution.

use super::events::{Kind, Program};
use super::rel::{acyclic, closure, compose, empty, has, inter, set, union, Rel};
use super::{Axiom, Model};
use crate::atomics::litmus::Proxy;

/// The first axiom an execution violates, or `None` if it is consistent.
/// `live`: the events that happen (a failed cas has no write).
pub(super) fn first_violation(
    p: &Program,
    live: u64,
    rf_rel: &Rel,
    co_rel: &Rel,
    sco: &[usize],
    bar: &Rel,
) -> Option<Axiom> {
    let n = p.evs.len();
    // fr = rf^-1; co
    let mut fr = empty(n);
    for (w, &readers) in rf_rel.iter().enumerate() {
        let mut bits = readers;
        while bits != 0 {
            let r = bits.trailing_zeros() as usize;
            fr[r] |= co_rel[w];
            bits &= bits - 1;
        }
    }
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
    if p.model == Model::V75 {
        return v75_violation(p, live, rf_rel, co_rel, &fr, &base);
    }
    let cause = union(&base, &compose(&obs, &base));

    // Coherence
    for a in 0..n {
        if p.evs[a].kind != Kind::W || live >> a & 1 == 0 {
            continue;
        }
        for b in 0..n {
            if p.evs[b].kind == Kind::W
                && live >> b & 1 == 1
                && p.evs[a].loc == p.evs[b].loc
                && has(&cause, a, b)
                && !has(co_rel, a, b)
            {
                return Some(Axiom::Coherence);
            }
        }
    }
    // Fence-SC
    for a in 0..n {
        for b in 0..n {
            if has(&sync_fence, a, b) && has(&cause, b, a) {
                return Some(Axiom::FenceSc);
            }
        }
    }
    // Atomicity
    let ms_fr = inter(&p.ms, &fr);
    let ms_co = inter(&p.ms, co_rel);
    let bad = inter(&compose(&ms_fr, &ms_co), &p.rmw);
    if bad.iter().any(|&r| r != 0) {
        return Some(Axiom::Atomicity);
    }
    // No-Thin-Air: acyclic(rf | dep), dep = data | ctrl (values computed without a cycle
    // already; a control dependency can close one too).
    if !acyclic(&union(rf_rel, &p.dep)) {
        return Some(Axiom::NoThinAir);
    }
    // SC-per-location
    let com = union(&union(rf_rel, co_rel), &fr);
    if !acyclic(&union(&inter(&p.ms, &com), &p.po_loc)) {
        return Some(Axiom::ScPerLocation);
    }
    // Causality: irreflexive((rf | fr)?; cause), as in the paper's Alloy model (`optional`), so
    // a cycle in causality order itself is ruled out too.
    if (0..n).any(|i| has(&cause, i, i)) {
        return Some(Axiom::Causality);
    }
    let rf_fr = union(rf_rel, &fr);
    for (a, &row) in rf_fr.iter().enumerate() {
        let mut bits = row;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            if has(&cause, b, a) {
                return Some(Axiom::Causality);
            }
            bits &= bits - 1;
        }
    }
    None
}

/// The PTX 7.5 model (Dat3M `ptx-v7.5.cat`; PTX ISA 7.5 memory consistency model, "proxies"
/// and "causality order" with proxy-preserved base causality): causality between two
/// memory operations survives only through the same proxy and virtual address, or through
/// proxy fences of the operations' proxies in their CTAs (and `fence.proxy.alias` between
/// virtual aliases of one physical location). Axioms: Coherence, Atomicity, No-Thin-Air,
/// Causality `irreflexive((rf | fr); cause)`; Fence-SC relates fences, which proxy-preserved
/// causality never does (as in the cat file).
pub(super) fn v75_violation(
    p: &Program,
    live: u64,
    rf_rel: &Rel,
    co_rel: &Rel,
    fr: &Rel,
    cb: &Rel,
) -> Option<Axiom> {
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
    let cause = union(&ppcb, &compose(&obs, &ppcb));
    for a in 0..n {
        if e[a].kind != Kind::W || live >> a & 1 == 0 {
            continue;
        }
        for b in 0..n {
            if e[b].kind == Kind::W
                && live >> b & 1 == 1
                && e[a].loc == e[b].loc
                && has(&cause, a, b)
                && !has(co_rel, a, b)
            {
                return Some(Axiom::Coherence);
            }
        }
    }
    let ms_fr = inter(&p.ms, fr);
    let ms_co = inter(&p.ms, co_rel);
    if inter(&compose(&ms_fr, &ms_co), &p.rmw)
        .iter()
        .any(|&r| r != 0)
    {
        return Some(Axiom::Atomicity);
    }
    if !acyclic(&union(rf_rel, &p.dep)) {
        return Some(Axiom::NoThinAir);
    }
    let rf_fr = union(rf_rel, fr);
    for (a, &row) in rf_fr.iter().enumerate() {
        let mut bits = row;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            if has(&cause, b, a) {
                return Some(Axiom::Causality);
            }
            bits &= bits - 1;
        }
    }
    None
}
