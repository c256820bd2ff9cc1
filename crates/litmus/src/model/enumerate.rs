//! The candidate executions of a program: reads-from choices, coherence orders, `fence.sc`
//! orders and barrier synchronisations, with the values each produces.

use std::collections::{BTreeMap, BTreeSet};

use super::axioms::first_violation;
use super::events::{Kind, Program, Src, WVal};
use super::rel::{empty, has, set, union, Rel};
use super::{Axiom, ModelError, Rejection};
use crate::{LitmusTest, Term};

/// The ways barrier arrivals can synchronise under the values `val`, as relations from each
/// arrival to the leave events it releases; `None` when a waiting thread's barrier never
/// completes. Arrivals at one barrier (same CTA and id) complete it once `quorum` of them
/// (all of them when no quorum is given) have arrived: those synchronise with each other;
/// a later arrival passes a completed barrier, ordered after every earlier arrival (PTX ISA
/// "bar, barrier": the barrier completes when the expected number of threads arrive;
/// `bar.arrive` counts without waiting). These choices reproduce Dat3M's `Barrier/quorum*`
/// verdicts.
pub fn barrier_options(p: &Program, val: &[Option<i64>]) -> Option<Vec<Rel>> {
    let n = p.evs.len();
    type Key = ((u32, u32, u32), i64);
    let mut groups: BTreeMap<Key, Vec<(usize, Option<i64>)>> = BTreeMap::new();
    for (k, b) in p.barriers.iter().enumerate() {
        // Values are known here (thin-air candidates are filtered before); 0 otherwise.
        let id = eval_src(&b.id, val).unwrap_or(0);
        let q = b.quorum.as_ref().map(|q| eval_src(q, val).unwrap_or(0));
        groups.entry((b.cta, id)).or_default().push((k, q));
    }
    let mut options: Vec<Rel> = vec![empty(n)];
    for members in groups.values() {
        let k = members.len();
        let q = members
            .iter()
            .filter_map(|m| m.1)
            .max()
            .map_or(k, |q| q.max(0) as usize);
        let waits = |i: usize| p.barriers[members[i].0].leave.is_some();
        if k < q {
            if (0..k).any(waits) {
                return None;
            }
            continue;
        }
        let q = q.max(1);
        let mut local: Vec<Rel> = Vec::new();
        for first in subsets(k, q) {
            let rest: Vec<usize> = (0..k).filter(|i| !first.contains(i)).collect();
            for order in permutations(&rest) {
                let mut r = empty(n);
                let link = |r: &mut Rel, from: usize, to: usize| {
                    if let Some(l) = p.barriers[members[to].0].leave {
                        set(r, p.barriers[members[from].0].arrive, l);
                    }
                };
                for &a in &first {
                    for &b in &first {
                        if a != b {
                            link(&mut r, a, b);
                        }
                    }
                }
                let mut before = first.clone();
                for &late in &order {
                    for &e in &before {
                        link(&mut r, e, late);
                    }
                    before.push(late);
                }
                local.push(r);
            }
        }
        options = options
            .iter()
            .flat_map(|o| local.iter().map(move |l| union(o, l)))
            .collect();
    }
    Some(options)
}

pub fn subsets(k: usize, q: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for mask in 0u32..(1u32 << k.min(16)) {
        if mask.count_ones() as usize == q {
            out.push((0..k).filter(|i| mask >> i & 1 == 1).collect());
        }
    }
    out
}

pub fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let x = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, x);
            out.push(p);
        }
    }
    out
}

/// All orders of `items` that keep `po`.
pub fn linearisations(items: &[usize], po: &Rel) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut used = vec![false; items.len()];
    fn go(
        items: &[usize],
        po: &Rel,
        used: &mut Vec<bool>,
        cur: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if cur.len() == items.len() {
            out.push(cur.clone());
            return;
        }
        for i in 0..items.len() {
            if used[i] {
                continue;
            }
            // every po-predecessor among the items must already be placed
            let ready = (0..items.len()).all(|j| used[j] || j == i || !has(po, items[j], items[i]));
            if !ready {
                continue;
            }
            used[i] = true;
            cur.push(items[i]);
            go(items, po, used, cur, out);
            cur.pop();
            used[i] = false;
        }
    }
    go(items, po, &mut used, &mut cur, &mut out);
    out
}

pub fn eval_src(s: &Src, val: &[Option<i64>]) -> Option<i64> {
    match s {
        Src::Const(v) => Some(*v),
        Src::Read(r) => val[*r],
        Src::Bin(op, a, b) => Some(op.apply(eval_src(a, val)?, eval_src(b, val)?)),
    }
}

/// Values of every event under an rf choice: `None` for values caught in a cycle of rf and
/// dependencies (thin air). `exists[w]` is whether a write happens (a failed cas does not).
pub fn compute_values(p: &Program, rf: &[usize]) -> (Vec<Option<i64>>, Vec<Option<bool>>) {
    let n = p.evs.len();
    let mut val: Vec<Option<i64>> = vec![None; n];
    let mut exists: Vec<Option<bool>> = p
        .evs
        .iter()
        .map(|e| match e.wval {
            Some(WVal::Rmw { cmp: Some(_), .. }) => None,
            _ => Some(true),
        })
        .collect();
    let mut rf_of = vec![usize::MAX; n];
    for (k, &r) in p.reads.iter().enumerate() {
        rf_of[r] = rf[k];
    }
    loop {
        let mut changed = false;
        for i in 0..n {
            let e = &p.evs[i];
            match e.kind {
                Kind::R if val[i].is_none() => {
                    let w = rf_of[i];
                    if exists[w] == Some(true) && val[w].is_some() {
                        val[i] = val[w];
                        changed = true;
                    }
                }
                Kind::W if val[i].is_none() => match e.wval.as_ref() {
                    Some(WVal::Plain(s)) => {
                        if let Some(v) = eval_src(s, &val) {
                            val[i] = Some(v);
                            changed = true;
                        }
                    }
                    Some(WVal::Rmw {
                        read,
                        op,
                        operand,
                        cmp,
                    }) => {
                        if let (Some(old), Some(x)) = (val[*read], eval_src(operand, &val)) {
                            if let Some(c) = cmp {
                                match eval_src(c, &val) {
                                    Some(c) => exists[i] = Some(old == c),
                                    None => continue,
                                }
                            }
                            val[i] = Some(op.apply(old, x));
                            changed = true;
                        }
                    }
                    None => {}
                },
                _ => {}
            }
        }
        if !changed {
            break;
        }
    }
    (val, exists)
}

pub struct Outcome<'a> {
    pub p: &'a Program,
    pub val: &'a [Option<i64>],
    pub final_mem: Vec<Option<i64>>,
}

impl Outcome<'_> {
    pub fn value(&self, t: &Term) -> Option<i64> {
        match t {
            Term::Loc(l) => {
                let li = self.p.locs.iter().position(|x| x == l)?;
                self.final_mem[li]
            }
            Term::Reg { thread, reg } => match self.p.regs.get(*thread)?.get(reg) {
                None => Some(0),
                Some(s) => eval_src(s, self.val),
            },
        }
    }
}

pub fn describe(p: &Program, rf: &[usize], co: &[CoOrder], sco: &[usize]) -> String {
    let mut parts = Vec::new();
    let rfs: Vec<String> = p
        .reads
        .iter()
        .zip(rf)
        .map(|(&r, &w)| format!("{} <- {}", p.evs[r].label, p.evs[w].label))
        .collect();
    parts.push(format!("rf[{}]", rfs.join("; ")));
    for (li, order) in co.iter().enumerate() {
        if order.writes.len() < 2 {
            continue;
        }
        let k = order.writes.len();
        if order.pairs.len() == k * (k - 1) / 2 {
            // total: print the chain, earliest first (fewest predecessors)
            let mut ws = order.writes.clone();
            ws.sort_by_key(|&w| order.pairs.iter().filter(|&&(_, b)| b == w).count());
            let names: Vec<&str> = ws.iter().map(|&w| p.evs[w].label.as_str()).collect();
            parts.push(format!("co {}[init < {}]", p.locs[li], names.join(" < ")));
        } else {
            let names: Vec<String> = order
                .pairs
                .iter()
                .map(|&(a, b)| format!("{} < {}", p.evs[a].label, p.evs[b].label))
                .collect();
            parts.push(format!(
                "co {}[{}{}unordered otherwise]",
                p.locs[li],
                names.join("; "),
                if names.is_empty() { "" } else { "; " }
            ));
        }
    }
    if sco.len() > 1 {
        let names: Vec<&str> = sco.iter().map(|&f| p.evs[f].label.as_str()).collect();
        parts.push(format!("fence-sc[{}]", names.join(" < ")));
    }
    parts.join(" ")
}

/// A coherence order over one location's writes (the initial write, first of all, left out):
/// a strict partial order that orders every morally strong pair (the paper's `co` is total
/// only within each scope's morally strong writes, Dat3M's `ptx-v6.0.cat` likewise).
#[derive(Debug, Clone)]
pub struct CoOrder {
    pub writes: Vec<usize>,
    pub pairs: Vec<(usize, usize)>,
    /// Writes with no successor: each may be the location's final value.
    pub maximal: Vec<usize>,
}

pub fn coherence_orders(ws: &[usize], ms: &Rel) -> Vec<CoOrder> {
    let k = ws.len();
    let pairs: Vec<(usize, usize)> = (0..k)
        .flat_map(|i| (i + 1..k).map(move |j| (i, j)))
        .collect();
    let options: Vec<u8> = pairs
        .iter()
        .map(|&(i, j)| if has(ms, ws[i], ws[j]) { 2 } else { 3 })
        .collect();
    let mut choice = vec![0u8; pairs.len()];
    let mut out = Vec::new();
    loop {
        let mut before = vec![vec![false; k]; k];
        for (c, &(i, j)) in choice.iter().zip(&pairs) {
            match c {
                0 => before[i][j] = true,
                1 => before[j][i] = true,
                _ => {}
            }
        }
        let transitive = (0..k).all(|a| {
            (0..k).all(|b| !before[a][b] || (0..k).all(|c| !before[b][c] || before[a][c]))
        });
        if transitive {
            let mut ps = Vec::new();
            for a in 0..k {
                for b in 0..k {
                    if before[a][b] {
                        ps.push((ws[a], ws[b]));
                    }
                }
            }
            let maximal = (0..k)
                .filter(|&a| !before[a].iter().any(|&x| x))
                .map(|a| ws[a])
                .collect();
            out.push(CoOrder {
                writes: ws.to_vec(),
                pairs: ps,
                maximal,
            });
        }
        // next choice
        let mut i = 0;
        loop {
            if i == choice.len() {
                return out;
            }
            choice[i] += 1;
            if choice[i] < options[i] {
                break;
            }
            choice[i] = 0;
            i += 1;
        }
    }
}

#[derive(Default)]
pub struct Acc {
    pub candidates: usize,
    pub consistent: usize,
    pub allowed: bool,
    pub all_satisfy: bool,
    pub rejected: Vec<Rejection>,
    pub allowed_outcomes: BTreeSet<Vec<i64>>,
    pub bound_reached: bool,
    pub hang: bool,
    pub liveness: bool,
    /// A consistent execution in which some thread never terminates under a fair scheduler.
    pub stuck_witness: Option<String>,
}

/// The candidate executions of one path combination, bounded before any work: rf choices ×
/// coherence orders (each pair of writes ordered one way, the other, or not) × fence.sc orders.
pub fn estimate(p: &Program) -> u128 {
    let n = p.evs.len();
    // Saturating: 35! does not fit in 128 bits, and a wrapped product would admit the test.
    let fact = |k: usize| (1..=k as u128).fold(1u128, |a, b| a.saturating_mul(b));
    let mut bound: u128 = p
        .reads
        .iter()
        .map(|&r| {
            (0..n)
                .filter(|&w| p.evs[w].kind == Kind::W && p.evs[w].loc == p.evs[r].loc)
                .count()
                .max(1) as u128
        })
        .fold(1u128, |a, b| a.saturating_mul(b));
    for li in 0..p.locs.len() {
        let writes = (0..n)
            .filter(|&w| {
                p.evs[w].kind == Kind::W && p.evs[w].loc == li && p.evs[w].thread.is_some()
            })
            .count();
        let pairs =
            u32::try_from(writes.saturating_mul(writes.saturating_sub(1)) / 2).unwrap_or(u32::MAX);
        bound = bound.saturating_mul(3u128.saturating_pow(pairs));
        // Each candidate also enumerates the final memory: one state per choice of a
        // co-maximal write per location, at most the location's writes.
        bound = bound.saturating_mul(writes.max(1) as u128);
    }
    bound = bound.saturating_mul(fact(p.sc_fences.len()));
    let k = p.barriers.len();
    bound.saturating_mul(fact(k).max(1))
}

/// Advances the mixed-radix counter `idx` (digit `k` counts up to `len(k)`) to the next
/// combination; false once every combination has been visited.
pub fn next_choice(idx: &mut [usize], len: impl Fn(usize) -> usize) -> bool {
    for (k, digit) in idx.iter_mut().enumerate() {
        *digit += 1;
        if *digit < len(k) {
            return true;
        }
        *digit = 0;
    }
    false
}

/// The reads-from candidates of each read (in `p.reads` order): every write to the same
/// location except the read's own rmw write (the initial write included).
pub fn rf_candidates(p: &Program) -> Result<Vec<Vec<usize>>, ModelError> {
    let n = p.evs.len();
    let choices: Vec<Vec<usize>> = p
        .reads
        .iter()
        .map(|&r| {
            (0..n)
                .filter(|&w| {
                    p.evs[w].kind == Kind::W
                        && p.evs[w].loc == p.evs[r].loc
                        && p.evs[r].rmw_write != Some(w)
                })
                .collect()
        })
        .collect();
    if choices.iter().any(Vec::is_empty) {
        return Err(ModelError::NoWriteToReadFrom);
    }
    Ok(choices)
}

/// Enumerates the candidate executions of one combination of thread paths into `acc`: each
/// reads-from choice, then (in [`reads_from`]) each coherence order, `fence.sc` order and
/// barrier synchronisation.
pub fn enumerate(
    test: &LitmusTest,
    p: &Program,
    terms: &[Term],
    cut: bool,
    acc: &mut Acc,
) -> Result<(), ModelError> {
    let choices = rf_candidates(p)?;
    let sc_orders = linearisations(&p.sc_fences, &p.po);
    let mut idx = vec![0usize; p.reads.len()];
    loop {
        let rf: Vec<usize> = idx
            .iter()
            .enumerate()
            .map(|(k, &i)| choices[k][i])
            .collect();
        let c = Candidate {
            test,
            p,
            terms,
            sc_orders: &sc_orders,
            rf: &rf,
        };
        c.reads_from(cut, acc);
        if !next_choice(&mut idx, |k| choices[k].len()) {
            return Ok(());
        }
    }
}

/// One reads-from choice of one combination of paths, and what every execution built on it
/// shares.
pub struct Candidate<'a> {
    pub test: &'a LitmusTest,
    pub p: &'a Program,
    pub terms: &'a [Term],
    /// The orders of the `fence.sc` operations consistent with program order.
    pub sc_orders: &'a [Vec<usize>],
    /// The write each read reads from, in `p.reads` order.
    pub rf: &'a [usize],
}

/// Whether the values a reads-from choice gives are an execution of the paths at all.
pub struct Feasibility {
    /// Not an execution: a read from a cas write that did not happen, a branch condition
    /// the path assumed does not hold, a spin whose cas all failed, or a barrier that never
    /// completes (without `--liveness`).
    pub excluded: bool,
    /// Cut by the loop bound (a spin whose cas succeeded counts as cut).
    pub cut: bool,
    /// Some branch condition's value is unknown (it depends on a thin-air value).
    pub assume_unknown: bool,
    /// With `--liveness`: a waiting thread's barrier never completes.
    pub hanging: bool,
    /// The ways the barrier arrivals synchronise.
    pub bar_opts: Vec<Rel>,
}

impl Candidate<'_> {
    /// Which executions this reads-from choice admits: the paths' branch conditions and
    /// cas outcomes must agree with its values, and its barriers must complete.
    pub fn feasibility(
        &self,
        val: &[Option<i64>],
        exists: &[Option<bool>],
        cut: bool,
        acc: &mut Acc,
    ) -> Feasibility {
        let p = self.p;
        // A read from a cas write that did not happen is no execution at all.
        let mut excluded = self.rf.iter().any(|&w| exists[w] == Some(false));
        // A spin whose cas all failed did nothing: non-terminating, excluded. One whose cas
        // succeeded was cut by the bound.
        let mut cut = cut;
        if !p.spin_cas.is_empty() && !acc.liveness {
            if p.spin_cas.iter().all(|&w| exists[w] == Some(false)) {
                excluded = true;
            } else {
                cut = true;
            }
        }
        // The paths' branch conditions: an rf choice that contradicts one is not an execution
        // of these paths (another combination of paths covers it).
        let mut assume_unknown = false;
        for (c, a, b) in &p.assumes {
            match (eval_src(a, val), eval_src(b, val)) {
                (Some(x), Some(y)) if !c.holds(x, y) => excluded = true,
                (Some(_), Some(_)) => {}
                _ => assume_unknown = true,
            }
        }
        // Barriers: which arrivals synchronise; none when a waiting thread never gets its
        // quorum (a non-terminating execution, excluded as Dat3M does).
        let mut hanging = false;
        let bar_opts = if excluded {
            Vec::new()
        } else {
            match barrier_options(p, val) {
                Some(o) => o,
                None if acc.liveness => {
                    acc.hang = true;
                    hanging = true;
                    vec![empty(p.evs.len())]
                }
                None => {
                    acc.hang = true;
                    excluded = true;
                    Vec::new()
                }
            }
        };
        Feasibility {
            excluded,
            cut,
            assume_unknown,
            hanging,
            bar_opts,
        }
    }

    /// The executions of this reads-from choice into `acc`: one candidate when some value is
    /// thin air (No-Thin-Air: `acyclic(rf | dep)`, here every value computable without a
    /// cycle), else one per coherence order of each location's writes.
    pub fn reads_from(&self, cut: bool, acc: &mut Acc) {
        let p = self.p;
        let n = p.evs.len();
        let (val, exists) = compute_values(p, self.rf);
        let f = self.feasibility(&val, &exists, cut, acc);
        if f.excluded {
            return;
        }
        let thin_air = f.assume_unknown
            || p.evs
                .iter()
                .enumerate()
                .any(|(i, e)| (e.kind != Kind::F && val[i].is_none()) || exists[i].is_none());
        if thin_air {
            acc.candidates += 1;
            let out = Outcome {
                p,
                val: &val,
                final_mem: vec![None; p.locs.len()],
            };
            if !f.cut && self.test.condition.prop.eval(&|t| out.value(t)) != Some(false) {
                acc.rejected.push(Rejection {
                    axiom: Axiom::NoThinAir,
                    execution: describe(p, self.rf, &[], &[]),
                });
            }
            return;
        }
        let live = (0..n)
            .filter(|&i| exists[i] == Some(true))
            .fold(0u64, |m, i| m | 1 << i);
        let mut rf_rel = empty(n);
        for (k, &r) in p.reads.iter().enumerate() {
            set(&mut rf_rel, self.rf[k], r);
        }
        // Coherence orders: per location, partial orders of the writes that happen.
        let per_loc: Vec<Vec<CoOrder>> = (0..p.locs.len())
            .map(|li| {
                let ws: Vec<usize> = (0..n)
                    .filter(|&w| {
                        p.evs[w].kind == Kind::W
                            && p.evs[w].loc == li
                            && p.evs[w].thread.is_some()
                            && exists[w] == Some(true)
                    })
                    .collect();
                coherence_orders(&ws, &p.ms)
            })
            .collect();
        let mut cidx = vec![0usize; per_loc.len()];
        loop {
            let co: Vec<CoOrder> = cidx
                .iter()
                .enumerate()
                .map(|(li, &i)| per_loc[li][i].clone())
                .collect();
            let ex = Execution {
                val: &val,
                live,
                rf_rel: &rf_rel,
                co_rel: coherence_relation(&co, n),
                finals: final_values(&co, &val),
                co: &co,
            };
            self.judge(&ex, &f, acc);
            if !next_choice(&mut cidx, |k| per_loc[k].len()) {
                return;
            }
        }
    }

    /// Judges the executions of one reads-from and coherence choice, one per `fence.sc`
    /// order and barrier synchronisation, against the axioms ([`first_violation`]); a
    /// consistent one adds its outcomes, an inconsistent one that satisfies the condition is
    /// recorded as a rejection. With `--liveness` only a consistent execution that never
    /// terminates under a fair scheduler is looked for.
    pub fn judge(&self, ex: &Execution, f: &Feasibility, acc: &mut Acc) {
        let p = self.p;
        let (sat_any, unsat_any, state_values) = self.final_states(ex);
        for sco in self.sc_orders {
            for bar in &f.bar_opts {
                acc.candidates += 1;
                let verdict = first_violation(p, ex.live, ex.rf_rel, &ex.co_rel, sco, bar);
                if acc.liveness {
                    if verdict.is_none() && acc.stuck_witness.is_none() {
                        // Fair scheduler: a thread stays in its loop forever only if
                        // its last iteration, repeated, reads what memory finally
                        // holds (every read reads a final value of its location).
                        let repeats = |r: &usize| ex.finals[p.evs[*r].loc].contains(&ex.val[*r]);
                        let spins = !p.stuck.is_empty()
                            && p.stuck.iter().all(|reads| reads.iter().all(repeats));
                        if spins || f.hanging {
                            acc.stuck_witness = Some(format!(
                                "{} {}",
                                if f.hanging {
                                    "a barrier never completes:"
                                } else {
                                    "a loop repeats forever reading final values:"
                                },
                                describe(p, self.rf, ex.co, sco)
                            ));
                        }
                    }
                    continue;
                }
                match verdict {
                    None if f.cut => acc.bound_reached = true,
                    None => {
                        acc.consistent += 1;
                        acc.allowed_outcomes.extend(state_values.iter().cloned());
                        acc.allowed |= sat_any;
                        if unsat_any {
                            acc.all_satisfy = false;
                        }
                    }
                    Some(axiom) => {
                        if sat_any && !f.cut {
                            acc.rejected.push(Rejection {
                                axiom,
                                execution: describe(p, self.rf, ex.co, sco),
                            });
                        }
                    }
                }
            }
        }
    }

    /// The final states an execution may end in (each location holding any of its co-maximal
    /// writes): whether some satisfies the condition, whether some does not, and the values
    /// of the condition's terms in each.
    pub fn final_states(&self, ex: &Execution) -> (bool, bool, Vec<Vec<i64>>) {
        let mut states: Vec<Vec<Option<i64>>> = vec![Vec::new()];
        for f in &ex.finals {
            states = states
                .iter()
                .flat_map(|st| {
                    f.iter().map(move |v| {
                        let mut st = st.clone();
                        st.push(*v);
                        st
                    })
                })
                .collect();
        }
        let mut sat_any = false;
        let mut unsat_any = false;
        let mut state_values = Vec::new();
        for final_mem in states {
            let out = Outcome {
                p: self.p,
                val: ex.val,
                final_mem,
            };
            if self.test.condition.prop.eval(&|t| out.value(t)) == Some(true) {
                sat_any = true;
            } else {
                unsat_any = true;
            }
            state_values.push(
                self.terms
                    .iter()
                    .map(|t| out.value(t).unwrap_or(0))
                    .collect::<Vec<i64>>(),
            );
        }
        (sat_any, unsat_any, state_values)
    }
}

/// One reads-from and coherence choice: the values, the events that happen, rf and co.
pub struct Execution<'a> {
    pub val: &'a [Option<i64>],
    /// The events that happen (a failed cas's write does not), as a bit set.
    pub live: u64,
    pub rf_rel: &'a Rel,
    pub co_rel: Rel,
    pub co: &'a [CoOrder],
    /// Per location, the values a later observer may read.
    pub finals: Vec<Vec<Option<i64>>>,
}

/// The coherence relation `co` of one order per location: the initial write of location
/// `li` (event `li`) before every other write to it, then the order's own pairs.
pub fn coherence_relation(co: &[CoOrder], n: usize) -> Rel {
    let mut co_rel = empty(n);
    for (li, order) in co.iter().enumerate() {
        for &w in &order.writes {
            set(&mut co_rel, li, w);
        }
        for &(a, b) in &order.pairs {
            set(&mut co_rel, a, b);
        }
    }
    co_rel
}

/// Final memory: per location, the value of any co-maximal write (what an observer after
/// every thread may read), the initial value when no thread writes it.
pub fn final_values(co: &[CoOrder], val: &[Option<i64>]) -> Vec<Vec<Option<i64>>> {
    co.iter()
        .enumerate()
        .map(|(li, order)| {
            if order.maximal.is_empty() {
                vec![val[li]]
            } else {
                order.maximal.iter().map(|&w| val[w]).collect()
            }
        })
        .collect()
}
