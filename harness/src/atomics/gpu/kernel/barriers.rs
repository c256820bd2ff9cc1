//! The checks that a test's barriers can run as hardware barriers: every phase fills, in
//! every execution, so the kernel never hangs on one.

use std::collections::BTreeMap;

use super::{inexpressible, KernelError};
use crate::atomics::gpu::layout;
use crate::atomics::litmus::{LitmusTest, Op};

/// Arrivals at each (test CTA, barrier id): (thread, op index, arrive, quorum as written).
type Arrivals = BTreeMap<(u32, i64), Vec<(usize, usize, bool, Option<i64>)>>;

fn arrivals(test: &LitmusTest) -> Arrivals {
    let mut m = Arrivals::new();
    for (t, th) in test.threads.iter().enumerate() {
        for (oi, op) in th.ops.iter().enumerate() {
            if let (Op::Barrier { arrive, quorum, .. }, Some(id)) = (op, layout::barrier_id(th, op))
            {
                let q = quorum
                    .as_ref()
                    .map(|q| layout::static_value(th, q).unwrap_or(i64::MIN));
                m.entry((th.cta, id)).or_default().push((t, oi, *arrive, q));
            }
        }
    }
    m
}

/// The quorum of barrier `op` of thread `t` in test threads: as written, else every arrival
/// at its id in its CTA.
pub(super) fn barrier_quorum(test: &LitmusTest, t: usize, op: &Op) -> Option<u32> {
    let th = &test.threads[t];
    let id = layout::barrier_id(th, op)?;
    let all = arrivals(test);
    let members = all.get(&(th.cta, id))?;
    let q = members
        .iter()
        .find_map(|m| m.3)
        .unwrap_or(members.len() as i64);
    u32::try_from(q).ok()
}

/// Refuses the barriers a hardware barrier cannot run to completion in every execution. A
/// hardware barrier waits, without a timeout, until its count of threads arrives; a phase that
/// never fills hangs the kernel. So every barrier's id and quorum must be fixed before the
/// test runs, the arrivals at each id of a CTA must be exactly its quorum (one phase: a
/// later phase would mix the threads of several instances, or never fill), the threads must
/// not branch (a thread stopped by the loop cap would leave its barrier waiting), and the
/// order of ids across threads must let every phase fill.
pub(super) fn check_barriers(test: &LitmusTest) -> Result<(), KernelError> {
    check_barrier_places(test)?;
    let all = arrivals(test);
    check_barrier_quorums(test, &all)?;
    check_barrier_phases_fill(test, &all)
}

/// Every barrier is reached exactly once (not in a loop, not jumped over) with an id fixed
/// before the run.
fn check_barrier_places(test: &LitmusTest) -> Result<(), KernelError> {
    for (t, th) in test.threads.iter().enumerate() {
        for (oi, op) in th.ops.iter().enumerate() {
            if !matches!(op, Op::Barrier { .. }) {
                continue;
            }
            let at = format!("`{}` P{t} op {}", test.name, oi + 1);
            let text = crate::atomics::litmus::dat3m::instr_text(op);
            // A barrier inside a loop would be reached a number of times the run decides; one
            // that a forward branch jumps over, maybe never.
            let jumps = th.ops.iter().enumerate().filter_map(|(j, o)| match o {
                Op::Goto { target } | Op::Branch { target, .. } => th
                    .ops
                    .iter()
                    .position(|l| matches!(l, Op::Label { name } if name == target))
                    .map(|k| (j, k)),
                _ => None,
            });
            for (j, k) in jumps {
                if (k <= oi && oi < j) || (j < oi && oi < k) {
                    return Err(inexpressible(
                        &at,
                        text,
                        if k <= j {
                            "a barrier inside a loop: the run decides how often it is reached, \
                             and a hardware barrier's phase must fill exactly"
                        } else {
                            "a branch jumps over this barrier: a hardware barrier whose \
                             arrivals the run decides may never fill and hang the kernel"
                        },
                    ));
                }
            }
            if layout::barrier_id(th, op).is_none() {
                return Err(inexpressible(
                    &at,
                    text,
                    "the barrier id comes from a value read at run time: a hardware barrier \
                     whose id the run decides may never fill and hang the kernel",
                ));
            }
        }
    }
    Ok(())
}

/// The arrivals at each id of a CTA name one quorum, fixed before the run, and are exactly
/// that many.
fn check_barrier_quorums(test: &LitmusTest, all: &Arrivals) -> Result<(), KernelError> {
    for ((cta, id), members) in all {
        let (t, oi, _, _) = members[0];
        let at = format!("`{}` P{t} op {}", test.name, oi + 1);
        let text = crate::atomics::litmus::dat3m::instr_text(&test.threads[t].ops[oi]);
        let quorums: std::collections::BTreeSet<Option<i64>> =
            members.iter().map(|m| m.3).collect();
        if quorums.contains(&Some(i64::MIN)) || quorums.len() > 1 {
            return Err(inexpressible(
                &at,
                text,
                format!(
                    "the arrivals at barrier {id} of CTA {cta} name different or run-time \
                     quorums; a hardware barrier takes one thread count"
                ),
            ));
        }
        let k = members.len() as i64;
        let q = members[0].3.unwrap_or(k);
        if q != k {
            return Err(inexpressible(
                &at,
                text,
                format!(
                    "{k} arrivals at barrier {id} of CTA {cta} with quorum {q}: a hardware \
                     barrier phase fills with exactly its count, so the arrivals beyond a full \
                     phase (or a phase that never fills) would wait forever"
                ),
            ));
        }
    }
    Ok(())
}

/// Every phase fills in every order of the threads: run the threads' barrier sequences (one
/// phase per id) to a fixpoint.
fn check_barrier_phases_fill(test: &LitmusTest, all: &Arrivals) -> Result<(), KernelError> {
    let seqs: Vec<Vec<((u32, i64), bool)>> = test
        .threads
        .iter()
        .map(|th| {
            th.ops
                .iter()
                .filter_map(|op| match op {
                    Op::Barrier { arrive, .. } => {
                        layout::barrier_id(th, op).map(|id| ((th.cta, id), *arrive))
                    }
                    _ => None,
                })
                .collect()
        })
        .collect();
    let mut arrived: BTreeMap<(u32, i64), usize> = BTreeMap::new();
    let mut pos = vec![0usize; seqs.len()];
    let mut waiting: Vec<Option<(u32, i64)>> = vec![None; seqs.len()];
    loop {
        let mut moved = false;
        for t in 0..seqs.len() {
            if let Some(key) = waiting[t] {
                if arrived.get(&key).copied().unwrap_or(0) == all[&key].len() {
                    waiting[t] = None;
                    moved = true;
                }
                continue;
            }
            if let Some(&(key, arrive)) = seqs[t].get(pos[t]) {
                *arrived.entry(key).or_insert(0) += 1;
                pos[t] += 1;
                if !arrive {
                    waiting[t] = Some(key);
                }
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    if let Some(t) = (0..seqs.len()).find(|&t| waiting[t].is_some() || pos[t] < seqs[t].len()) {
        let (cta, id) = waiting[t].unwrap_or_else(|| seqs[t][pos[t]].0);
        return Err(inexpressible(
            &format!("`{}` P{t}", test.name),
            format!("bar.cta.sync {id}"),
            format!("barrier {id} of CTA {cta} never fills in some order of the threads' barriers: the kernel would hang"),
        ));
    }
    Ok(())
}
