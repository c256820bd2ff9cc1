//! Control flow: each thread's program (labels, conditional branches, jumps) becomes the set
//! of its straight-line paths, with the branch conditions each path assumes, under a bound on
//! loop iterations (`--unroll N`, Dat3M's loop bound; Dat3M runs its PTX tests with bound 1).
//!
//! A path ends when the thread runs off its last instruction (`Done`), or when it would take
//! a backward jump to a label whose loop body already ran `N` times. If the iteration that
//! jump closes wrote nothing and reached no barrier, the thread is spinning on values that
//! only later iterations could change: a side-effect-free spin loop, whose executions that
//! keep spinning do not terminate and are excluded (Dat3M's spin-loop rule; an execution
//! that leaves the loop later reads the same values as one that leaves it in its first
//! iteration). Otherwise the path is `Cut`: the bound was reached and the verdict may depend
//! on what lies beyond it.

use std::collections::BTreeMap;

use crate::{BranchCond, Op, Operand, Thread};

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The thread's operation at this index.
    Op(usize),
    /// The path continues only if `a cond b`.
    Assume {
        cond: BranchCond,
        a: Operand,
        b: Operand,
    },
}

/// How a path ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Done,
    /// The loop bound was reached inside a loop with side effects.
    Cut,
    /// The loop bound was reached in a side-effect-free spin loop: a non-terminating path.
    Spin,
}

/// A straight-line path through a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    pub steps: Vec<Step>,
    pub end: End,
    /// For a path ending at a back-jump (`Cut`, `Spin`): where its last loop iteration
    /// starts in `steps` (the iteration a stuck thread would repeat forever).
    pub loop_from: usize,
}

/// The most paths one thread may have before the test is refused.
pub const MAX_PATHS: usize = 4096;

/// Every path of `t` with each loop body run at most `bound` times.
/// A thread whose paths under the loop bound are too many to enumerate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnrollError {
    #[error("a thread has more than {MAX_PATHS} paths under the loop bound; lower --unroll")]
    TooManyPaths,
}

pub fn paths(t: &Thread, bound: u32) -> Result<Vec<Path>, UnrollError> {
    let labels: BTreeMap<&str, usize> = t
        .ops
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Op::Label { name } => Some((name.as_str(), i)),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    let mut st = State {
        steps: Vec::new(),
        taken: BTreeMap::new(),
        seen: BTreeMap::new(),
        live: t.live_registers(),
    };
    walk(t, &labels, bound.max(1), 0, &mut st, &mut out)?;
    Ok(out)
}

struct State<'t> {
    /// The registers live before each op ([`Thread::live_registers`]).
    live: Vec<std::collections::BTreeSet<&'t str>>,
    steps: Vec<Step>,
    /// Backward jumps taken to each label.
    taken: BTreeMap<usize, u32>,
    /// Where (in `steps`) the path last passed each label.
    seen: BTreeMap<usize, usize>,
}

fn walk(
    t: &Thread,
    labels: &BTreeMap<&str, usize>,
    bound: u32,
    mut pc: usize,
    st: &mut State,
    out: &mut Vec<Path>,
) -> Result<(), UnrollError> {
    loop {
        if out.len() > MAX_PATHS {
            return Err(UnrollError::TooManyPaths);
        }
        let Some(op) = t.ops.get(pc) else {
            out.push(Path {
                steps: st.steps.clone(),
                end: End::Done,
                loop_from: st.steps.len(),
            });
            return Ok(());
        };
        match op {
            Op::Label { .. } => {
                st.seen.insert(pc, st.steps.len());
                pc += 1;
            }
            Op::Goto { target } => {
                let to = labels[target.as_str()];
                return jump(t, labels, bound, pc, to, st, out);
            }
            Op::Branch { cond, a, b, target } => {
                let to = labels[target.as_str()];
                // Taken.
                let mark = st.steps.len();
                let saved = (st.taken.clone(), st.seen.clone());
                st.steps.push(Step::Assume {
                    cond: *cond,
                    a: a.clone(),
                    b: b.clone(),
                });
                jump(t, labels, bound, pc, to, st, out)?;
                st.steps.truncate(mark);
                (st.taken, st.seen) = saved;
                // Not taken.
                st.steps.push(Step::Assume {
                    cond: cond.negate(),
                    a: a.clone(),
                    b: b.clone(),
                });
                pc += 1;
            }
            _ => {
                st.steps.push(Step::Op(pc));
                pc += 1;
            }
        }
    }
}

fn jump(
    t: &Thread,
    labels: &BTreeMap<&str, usize>,
    bound: u32,
    from: usize,
    to: usize,
    st: &mut State,
    out: &mut Vec<Path>,
) -> Result<(), UnrollError> {
    if to > from {
        return walk(t, labels, bound, to, st, out);
    }
    let n = st.taken.get(&to).copied().unwrap_or(0);
    if n + 1 >= bound {
        // The loop body would run more than `bound` times.
        let start = st.seen.get(&to).copied().unwrap_or(0);
        // A cas is an effect only when it succeeds: an iteration whose only effects are
        // cas operations is a spin when they all fail, which the model decides per
        // execution (Dat3M's dynamic spin-loop detection does the same). A register the
        // iteration writes and the code after the loop head may read is an effect too:
        // folding the iteration away would change what is read.
        let live = &st.live[to];
        let effect = st.steps[start..]
            .iter()
            .any(|s| matches!(s, Step::Op(i) if t.iteration_effect(*i, live, false)));
        out.push(Path {
            steps: st.steps.clone(),
            end: if effect { End::Cut } else { End::Spin },
            loop_from: start,
        });
        return Ok(());
    }
    let saved = st.taken.clone();
    st.taken.insert(to, n + 1);
    let r = walk(t, labels, bound, to, st, out);
    st.taken = saved;
    r
}
