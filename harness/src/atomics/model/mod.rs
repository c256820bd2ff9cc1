//! An explicit-state checker of the PTX memory consistency model, as formalised by Lustig,
//! Sahasrabuddhe and Giroux ("A Formal Analysis of the NVIDIA PTX Memory Consistency Model",
//! ASPLOS 2019; their Alloy model is `ptx.als` in github.com/NVlabs/ptxmemorymodel) and written
//! in cat by Dat3M (`cat/ptx-v6.0.cat`, `cat/ptx.cat` without proxies).
//!
//! For a litmus test it enumerates every candidate execution — a reads-from choice for each
//! read, a coherence order per location (a strict partial order after the initial write that
//! orders every morally strong pair of writes, as the paper's `co` is total only among
//! morally strong writes), and an order of the `fence.sc` operations consistent with program
//! order — computes the values each execution produces, and keeps those that satisfy the six
//! axioms. A location's final value is that of any co-maximal write (what an observer after
//! every thread would read):
//!
//! * Coherence: `([W]; cause; [W]) & loc ⊆ co`
//! * Fence-SC: `irreflexive(sync_fence; cause)`
//! * Atomicity: `((ms & fr); (ms & co)) & rmw = ∅`
//! * No-Thin-Air: `acyclic(rf | dep)` (here: every value is computable without a cycle)
//! * SC-per-Location: `acyclic((ms & (rf | co | fr)) | po-loc)`
//! * Causality: `irreflexive((rf | fr)?; cause)`
//!
//! with ms = morally strong (same thread, or both strong with scopes including each other's
//! thread, and the same location when both are memory operations), observation
//! `obs = (ms & rf) | obs; rmw; obs`, release pattern `[W&REL]; po-loc?; [strong W] |
//! [F&REL]; po; [strong W]`, acquire pattern `[strong R]; po-loc?; [R&ACQ] | [strong R]; po;
//! [F&ACQ]`, synchronisation `sync = ms & (release; obs; acquire)`, Fence-SC order restricted to
//! morally strong `fence.sc` pairs, base causality `(po | sync | sync_fence)+` (program order is
//! part of base causality, as in the PTX ISA and Dat3M's `ptx.cat`; the paper's Alloy model keeps
//! only po-paths through some synchronisation and adds `obs; po-loc` instead, which gives the same
//! verdicts because a po-only path that closes a cycle joins same-location accesses, already
//! caught as po-loc), and causality `cause = base | obs; base`. `fence.sc` and `fence.acq_rel` are both release and acquire
//! fences; `fence.release` only the former, `fence.acquire` only the latter.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use crate::atomics::litmus::{
    dat3m::instr_text, AtomOp, BranchCond, LitmusTest, LocalOp, Location, Op, Operand, Proxy,
    Quantifier, Scope, Sem, Term, Thread,
};

pub mod unroll;

/// The axioms, in the order a rejection names the first one violated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Axiom {
    Coherence,
    FenceSc,
    Atomicity,
    NoThinAir,
    ScPerLocation,
    Causality,
}

impl Axiom {
    pub fn name(self) -> &'static str {
        match self {
            Axiom::Coherence => "coherence",
            Axiom::FenceSc => "fence-sc",
            Axiom::Atomicity => "atomicity",
            Axiom::NoThinAir => "no-thin-air",
            Axiom::ScPerLocation => "sc-per-location",
            Axiom::Causality => "causality",
        }
    }
}

impl fmt::Display for Axiom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A candidate execution that would produce the condition's outcome, and the first axiom
/// that rules it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub axiom: Axiom,
    /// The execution: reads-from, coherence order, Fence-SC order.
    pub execution: String,
}

/// The model's answer for a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelVerdict {
    /// The condition's proposition is satisfied by some consistent execution ("outcome:
    /// allowed"), whatever the quantifier.
    pub allowed: bool,
    /// The condition as quantified: `exists` holds iff allowed; `~exists` holds iff not
    /// allowed; `forall` holds iff every consistent execution satisfies the proposition.
    pub condition_holds: bool,
    /// Candidate executions examined (each rf × co × Fence-SC order choice).
    pub candidates: usize,
    /// Candidates satisfying every axiom.
    pub consistent: usize,
    /// When not allowed: every candidate that would satisfy the proposition, with its first
    /// violated axiom. (Empty when allowed.)
    pub rejected: Vec<Rejection>,
    /// The terms the condition mentions (registers and final memory values), in order.
    pub terms: Vec<Term>,
    /// Every combination of values of `terms` that some consistent execution produces: a GPU
    /// runner that observes any other combination has seen behaviour the model forbids.
    pub allowed_outcomes: BTreeSet<Vec<i64>>,
    /// Set when the checker could not decide (see [`check`]); the other fields are then empty.
    pub error: Option<String>,
    /// Some execution was cut by the loop bound and the verdict could depend on what lies
    /// beyond it: the answer is `bound reached`, never a pass.
    pub bound_reached: bool,
    /// The model that judged the test.
    pub model: Model,
    /// Some execution blocks at a barrier whose quorum never arrives (non-terminating).
    pub hang: bool,
    /// With `--liveness`: `Some(witness)` when a consistent execution keeps a thread in a
    /// loop forever under a fair scheduler or blocks it at a barrier; `None` when none does.
    pub liveness_violation: Option<Option<String>>,
}

impl ModelVerdict {
    /// Whether observed values of [`ModelVerdict::terms`] (same order) are an outcome of some
    /// consistent execution; a GPU run that sees any other outcome has broken the model.
    pub fn outcome_allowed(&self, values: &[i64]) -> bool {
        self.allowed_outcomes.contains(values)
    }
}

/// The most candidate executions `try_check` will enumerate.
/// The figure is the guard's upper bound, not what the search visits: the catalogue's CAS
/// locks (bound ~3.9M) check in seconds. 5M admits them and refuses the 8-thread SB with
/// fence.sc (10.3M) that issue 10 saw run for minutes; `litmus check --max-candidates N`
/// raises it.
pub const MAX_CANDIDATES: u128 = 5_000_000;

// ---------------------------------------------------------------------------------------------
// Relations over at most 64 events, one bit row per event.

type Rel = Vec<u64>;

fn empty(n: usize) -> Rel {
    vec![0; n]
}

fn has(r: &Rel, a: usize, b: usize) -> bool {
    r[a] >> b & 1 == 1
}

fn set(r: &mut Rel, a: usize, b: usize) {
    r[a] |= 1 << b;
}

fn union(a: &Rel, b: &Rel) -> Rel {
    a.iter().zip(b).map(|(x, y)| x | y).collect()
}

fn inter(a: &Rel, b: &Rel) -> Rel {
    a.iter().zip(b).map(|(x, y)| x & y).collect()
}

fn compose(a: &Rel, b: &Rel) -> Rel {
    a.iter()
        .map(|&row| {
            let mut out = 0u64;
            let mut bits = row;
            while bits != 0 {
                let j = bits.trailing_zeros() as usize;
                out |= b[j];
                bits &= bits - 1;
            }
            out
        })
        .collect()
}

/// Transitive closure (Warshall).
fn closure(r: &Rel) -> Rel {
    let mut c = r.clone();
    let n = c.len();
    for k in 0..n {
        let rk = c[k];
        for row in c.iter_mut() {
            if *row >> k & 1 == 1 {
                *row |= rk;
            }
        }
    }
    c
}

fn acyclic(r: &Rel) -> bool {
    let c = closure(r);
    (0..c.len()).all(|i| !has(&c, i, i))
}

// ---------------------------------------------------------------------------------------------
// Events

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    R,
    W,
    F,
}

/// Where a value comes from, symbolically.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Src {
    Const(i64),
    /// The value read by this read event.
    Read(usize),
    /// Register arithmetic (`add r2, r2, 1`).
    Bin(LocalOp, Box<Src>, Box<Src>),
}

impl Src {
    /// The read events the value depends on (data dependencies).
    fn reads(&self, out: &mut Vec<usize>) {
        match self {
            Src::Const(_) => {}
            Src::Read(r) => out.push(*r),
            Src::Bin(_, a, b) => {
                a.reads(out);
                b.reads(out);
            }
        }
    }
}

#[derive(Debug, Clone)]
enum WVal {
    Plain(Src),
    Rmw {
        read: usize,
        op: AtomOp,
        operand: Src,
        cmp: Option<Src>,
    },
}

#[derive(Debug, Clone)]
struct Ev {
    kind: Kind,
    thread: Option<usize>,
    loc: usize,
    strong: bool,
    scope: Option<Scope>,
    /// W & REL, or a release fence (release, acq_rel, sc).
    rel: bool,
    /// R & ACQ, or an acquire fence (acquire, acq_rel, sc).
    acq: bool,
    sc_fence: bool,
    /// For an rmw read: its write.
    rmw_write: Option<usize>,
    wval: Option<WVal>,
    label: String,
    /// Virtual location (the name used; `loc` is the physical one).
    vloc: usize,
    /// The proxy of a memory access; of a proxy fence, the proxy it fences.
    proxy: Proxy,
    /// `fence.proxy.{surface,texture,constant}` (orders `proxy` against generic).
    proxy_fence: bool,
    /// `fence.proxy.alias`.
    alias_fence: bool,
    /// (gpu, cta) of the thread, for the 7.5 model's same-CTA proxy fences.
    cta_key: (u32, u32),
}

struct Program {
    evs: Vec<Ev>,
    locs: Vec<String>,
    /// Final register values per thread.
    regs: Vec<BTreeMap<String, Src>>,
    po: Rel,
    po_loc: Rel,
    ms: Rel,
    rmw: Rel,
    rel_pat: Rel,
    acq_pat: Rel,
    reads: Vec<usize>,
    sc_fences: Vec<usize>,
    /// Branch conditions the threads' paths assume: (condition, lhs, rhs).
    assumes: Vec<(BranchCond, Src, Src)>,
    /// Data and control dependencies (read -> later event), for No-Thin-Air.
    dep: Rel,
    /// Barrier arrivals: (arrive event, leave event when the thread waits, thread, CTA key,
    /// id, quorum).
    barriers: Vec<BarrierEv>,
    model: Model,
    /// Per thread whose path ends at a back-jump: the reads of its last loop iteration.
    stuck: Vec<Vec<usize>>,
    /// The cas writes in the last iteration of spin paths: an execution in which one of them
    /// succeeds did not spin without effect, so it was cut by the bound instead.
    spin_cas: Vec<usize>,
}

#[derive(Debug, Clone)]
struct BarrierEv {
    arrive: usize,
    leave: Option<usize>,
    /// (gpu, cluster, cta) of the thread: `bar.cta` synchronises one CTA.
    cta: (u32, u32, u32),
    id: Src,
    quorum: Option<Src>,
}

const NO_LOC: usize = usize::MAX;

/// Where each location name lives: its physical location (an alias shares its target's; the
/// index into `locs`) and its virtual address (the index into `names`, Dat3M's `vloc`).
/// Every lookup goes through maps built once, so building the events is linear in the
/// locations (a scan per location made 100,000 locations take minutes).
struct LocIndex<'t> {
    /// Every location name the test uses.
    names: Vec<String>,
    /// The physical locations, each once.
    locs: Vec<String>,
    /// The listed locations by name.
    listed: HashMap<&'t str, &'t Location>,
    /// Index into `names` / `locs` by name.
    name_at: HashMap<String, usize>,
    loc_at: HashMap<String, usize>,
}

impl<'t> LocIndex<'t> {
    fn new(test: &'t LitmusTest) -> Self {
        let names = test.all_locations();
        let mut listed = HashMap::new();
        for l in &test.locations {
            // The first declaration wins, as `find` on the list would.
            listed.entry(l.name.as_str()).or_insert(l);
        }
        let mut idx = LocIndex {
            names,
            locs: Vec::new(),
            listed,
            name_at: HashMap::new(),
            loc_at: HashMap::new(),
        };
        for (i, n) in idx.names.iter().enumerate() {
            idx.name_at.entry(n.clone()).or_insert(i);
        }
        let locs: Vec<String> = idx
            .names
            .iter()
            .filter(|l| idx.physical(l) == l.as_str())
            .cloned()
            .collect();
        for (i, l) in locs.iter().enumerate() {
            idx.loc_at.entry(l.clone()).or_insert(i);
        }
        idx.locs = locs;
        idx
    }

    /// [`LitmusTest::physical`] through the map: the name an alias chain ends at, `l` itself
    /// when it is no alias (bounded, as there, against a cycle validation missed).
    fn physical<'a>(&'a self, l: &'a str) -> &'a str {
        let mut cur = l;
        for _ in 0..=self.listed.len() {
            match self.listed.get(cur).and_then(|m| m.alias.as_ref()) {
                Some(a) => cur = a.of.as_str(),
                None => return cur,
            }
        }
        cur
    }

    /// [`LitmusTest::init_of`] through the map.
    fn init_of(&self, l: &str) -> i64 {
        self.listed.get(self.physical(l)).map_or(0, |m| m.init)
    }

    /// The physical location of `l` (shared by all its aliases).
    fn loc(&self, l: &str) -> usize {
        self.loc_at.get(self.physical(l)).copied().unwrap_or(NO_LOC)
    }

    /// The virtual address of `l`: a texture/surface/constant alias is another proxy's view
    /// of the same virtual address; only a generic alias is a different one (PTX ISA 7.5
    /// proxies; Dat3M's `vloc`).
    fn vloc(&self, l: &str) -> usize {
        let mut cur = l;
        for _ in 0..=self.listed.len() {
            match self.listed.get(cur).and_then(|m| m.alias.as_ref()) {
                Some(a) if a.proxy != Proxy::Generic => cur = a.of.as_str(),
                _ => break,
            }
        }
        self.name_at.get(cur).copied().unwrap_or(NO_LOC)
    }
}

/// The value of operand `o` in the registers `regs`. A register no one wrote holds 0
/// (validation has rejected registers that are never written; on a path that skips the write,
/// the PTX register is still 0-initialised by the litmus convention of Dat3M's init block).
fn src_of(regs: &BTreeMap<String, Src>, o: &Operand) -> Src {
    match o {
        Operand::Const(v) => Src::Const(*v),
        Operand::Reg(r) => regs.get(r).cloned().unwrap_or(Src::Const(0)),
    }
}

/// The events of a test, built thread by thread along one path each, with what the
/// relations need besides the events themselves.
struct Events<'t> {
    idx: LocIndex<'t>,
    evs: Vec<Ev>,
    /// Branch conditions the paths assume: (condition, lhs, rhs).
    assumes: Vec<(BranchCond, Src, Src)>,
    /// Data and control dependencies: (read, later event).
    deps: Vec<(usize, usize)>,
    barriers: Vec<BarrierEv>,
    /// Per looping thread: the reads of its last loop iteration.
    stuck: Vec<Vec<usize>>,
    /// The cas writes in the last iteration of spin paths.
    spin_cas: Vec<usize>,
    /// Final register values per thread.
    regs: Vec<BTreeMap<String, Src>>,
    /// Each thread's events in program order.
    thread_evs: Vec<Vec<usize>>,
}

/// The state of one thread while its path is turned into events.
struct ThreadState {
    regs: BTreeMap<String, Src>,
    /// The thread's events so far, in program order.
    mine: Vec<usize>,
    /// (gpu, cluster, cta): `bar.cta` synchronises one CTA.
    cta: (u32, u32, u32),
}

impl<'t> Events<'t> {
    /// One initial write per physical location, of its init value, by no thread.
    fn new(test: &'t LitmusTest) -> Self {
        let idx = LocIndex::new(test);
        let evs = idx
            .locs
            .iter()
            .enumerate()
            .map(|(li, l)| Ev {
                kind: Kind::W,
                thread: None,
                loc: li,
                strong: false,
                scope: None,
                rel: false,
                acq: false,
                sc_fence: false,
                rmw_write: None,
                wval: Some(WVal::Plain(Src::Const(idx.init_of(l)))),
                label: format!("init {l}={}", idx.init_of(l)),
                vloc: idx.vloc(l),
                proxy: Proxy::Generic,
                proxy_fence: false,
                alias_fence: false,
                cta_key: (u32::MAX, u32::MAX),
            })
            .collect();
        Events {
            idx,
            evs,
            assumes: Vec::new(),
            deps: Vec::new(),
            barriers: Vec::new(),
            stuck: Vec::new(),
            spin_cas: Vec::new(),
            regs: Vec::new(),
            thread_evs: Vec::new(),
        }
    }

    /// The events of thread `ti` along `path`: each operation's events in program order, the
    /// branch conditions the path assumes, and the control dependencies (every event after a
    /// branch depends on what the branch read).
    fn thread(&mut self, ti: usize, t: &Thread, path: &unroll::Path) {
        let mut st = ThreadState {
            regs: t
                .regs
                .iter()
                .map(|(k, v)| (k.clone(), Src::Const(*v)))
                .collect(),
            mine: Vec::new(),
            cta: (t.gpu, t.effective_cluster(), t.cta),
        };
        let mut ctrl_reads: Vec<usize> = Vec::new();
        let looping = path.end != unroll::End::Done;
        let mut last_iter: Vec<usize> = Vec::new();
        for (si, step) in path.steps.iter().enumerate() {
            let in_last = looping && si >= path.loop_from;
            let (oi, op) = match step {
                unroll::Step::Assume { cond, a, b } => {
                    let (a, b) = (src_of(&st.regs, a), src_of(&st.regs, b));
                    a.reads(&mut ctrl_reads);
                    b.reads(&mut ctrl_reads);
                    self.assumes.push((*cond, a, b));
                    continue;
                }
                unroll::Step::Op(oi) => (*oi, &t.ops[*oi]),
            };
            let first_new = self.evs.len();
            // `P1[2] ld.acquire.gpu r0, y`: thread, 1-based position, instruction.
            let base = Ev {
                kind: Kind::F,
                thread: Some(ti),
                loc: NO_LOC,
                strong: true,
                scope: None,
                rel: false,
                acq: false,
                sc_fence: false,
                rmw_write: None,
                wval: None,
                label: format!("P{ti}[{}] {}", oi + 1, instr_text(op)),
                vloc: NO_LOC,
                proxy: Proxy::Generic,
                proxy_fence: false,
                alias_fence: false,
                cta_key: (t.gpu, t.cta),
            };
            self.op(op, base, &mut st);
            for (e, ev) in self.evs.iter().enumerate().skip(first_new) {
                self.deps.extend(ctrl_reads.iter().map(|&r| (r, e)));
                if in_last && ev.kind == Kind::R {
                    last_iter.push(e);
                }
                if in_last
                    && path.end == unroll::End::Spin
                    && matches!(ev.wval, Some(WVal::Rmw { cmp: Some(_), .. }))
                {
                    self.spin_cas.push(e);
                }
            }
        }
        if looping {
            self.stuck.push(last_iter);
        }
        self.regs.push(st.regs);
        self.thread_evs.push(st.mine);
    }

    /// Appends `ev` to the events and to the thread's program order; its index.
    fn push(&mut self, ev: Ev, st: &mut ThreadState) -> usize {
        let id = self.evs.len();
        self.evs.push(ev);
        st.mine.push(id);
        id
    }

    /// The events of one operation (`base` carries its thread, label and defaults: a strong
    /// fence of no scope) and its effect on the registers.
    fn op(&mut self, op: &Op, base: Ev, st: &mut ThreadState) {
        match op {
            Op::Label { .. } | Op::Branch { .. } | Op::Goto { .. } => {}
            Op::Local { op, reg, a, b } => {
                let v = Src::Bin(
                    *op,
                    Box::new(src_of(&st.regs, a)),
                    Box::new(src_of(&st.regs, b)),
                );
                st.regs.insert(reg.clone(), v);
            }
            Op::Barrier {
                arrive,
                instance,
                id,
                quorum,
            } => self.barrier(*arrive, *instance, id.as_ref(), quorum.as_ref(), base, st),
            Op::ProxyFence { kind } => {
                self.push(
                    Ev {
                        proxy: kind.proxy().unwrap_or(Proxy::Generic),
                        proxy_fence: kind.proxy().is_some(),
                        alias_fence: kind.proxy().is_none(),
                        ..base
                    },
                    st,
                );
            }
            Op::Ld { .. } | Op::ProxyLd { .. } | Op::St { .. } | Op::ProxySt { .. } => {
                self.access(op, base, st);
            }
            Op::Atom {
                op,
                reg,
                loc,
                val,
                cmp,
                sem,
                scope,
            } => self.rmw(
                Rmw {
                    op: *op,
                    reg: Some(reg),
                    loc,
                    val,
                    cmp: cmp.as_ref(),
                    sem: *sem,
                    scope: *scope,
                },
                base,
                st,
            ),
            Op::Red {
                op,
                loc,
                val,
                sem,
                scope,
            } => self.rmw(
                Rmw {
                    op: *op,
                    reg: None,
                    loc,
                    val,
                    cmp: None,
                    sem: *sem,
                    scope: *scope,
                },
                base,
                st,
            ),
            Op::Fence { sem, scope } => {
                // `fence.sc` and `fence.acq_rel` are both release and acquire fences.
                self.push(
                    Ev {
                        scope: Some(*scope),
                        rel: matches!(sem, Sem::Release | Sem::AcqRel | Sem::Sc),
                        acq: matches!(sem, Sem::Acquire | Sem::AcqRel | Sem::Sc),
                        sc_fence: *sem == Sem::Sc,
                        ..base
                    },
                    st,
                );
            }
            Op::Mov { reg, val } => {
                let s = src_of(&st.regs, val);
                st.regs.insert(reg.clone(), s);
            }
        }
    }

    /// A load or store through the generic proxy (`ld`/`st`) or another one (`tld`/`suld`/
    /// `cold`, `sust`; PTX ISA 7.5 proxies): one event each, the proxy its only difference.
    /// A strong load with `.acquire` is an acquire, a strong store with `.release` a release;
    /// a load's register now holds what it reads, a store depends on its value's reads.
    fn access(&mut self, op: &Op, base: Ev, st: &mut ThreadState) {
        match op {
            Op::Ld {
                reg,
                loc,
                sem,
                scope,
            }
            | Op::ProxyLd {
                reg,
                loc,
                sem,
                scope,
                ..
            } => {
                let proxy = match op {
                    Op::ProxyLd { proxy, .. } => *proxy,
                    _ => base.proxy,
                };
                let id = self.push(
                    Ev {
                        kind: Kind::R,
                        loc: self.idx.loc(loc),
                        vloc: self.idx.vloc(loc),
                        proxy,
                        strong: *sem != Sem::Weak,
                        scope: *scope,
                        acq: *sem == Sem::Acquire,
                        ..base
                    },
                    st,
                );
                st.regs.insert(reg.clone(), Src::Read(id));
            }
            Op::St {
                loc,
                val,
                sem,
                scope,
            }
            | Op::ProxySt {
                loc,
                val,
                sem,
                scope,
                ..
            } => {
                let proxy = match op {
                    Op::ProxySt { proxy, .. } => *proxy,
                    _ => base.proxy,
                };
                let id = self.evs.len();
                let v = src_of(&st.regs, val);
                let mut rs = Vec::new();
                v.reads(&mut rs);
                self.deps.extend(rs.into_iter().map(|r| (r, id)));
                self.push(
                    Ev {
                        kind: Kind::W,
                        loc: self.idx.loc(loc),
                        vloc: self.idx.vloc(loc),
                        proxy,
                        strong: *sem != Sem::Weak,
                        scope: *scope,
                        rel: *sem == Sem::Release,
                        wval: Some(WVal::Plain(v)),
                        ..base
                    },
                    st,
                );
            }
            _ => {}
        }
    }

    /// A barrier (`bar.sync`/`barrier.sync`, or `bar.arrive` which does not wait): an arrive
    /// event, and a leave event when the thread waits; the barrier is named by its id, or by
    /// the instance when it has none (PTX ISA "bar, barrier").
    fn barrier(
        &mut self,
        arrive: bool,
        instance: i64,
        id: Option<&Operand>,
        quorum: Option<&Operand>,
        base: Ev,
        st: &mut ThreadState,
    ) {
        let a = self.push(
            Ev {
                label: format!("{} (arrive)", base.label),
                ..base.clone()
            },
            st,
        );
        let leave = if arrive {
            None
        } else {
            Some(self.push(
                Ev {
                    label: format!("{} (leave)", base.label),
                    ..base
                },
                st,
            ))
        };
        let id = match id {
            Some(o) => src_of(&st.regs, o),
            // Without an id, the instance names the barrier; keep the two apart.
            None => Src::Const(instance.wrapping_add(1 << 40)),
        };
        self.barriers.push(BarrierEv {
            arrive: a,
            leave,
            cta: st.cta,
            id,
            quorum: quorum.map(|q| src_of(&st.regs, q)),
        });
    }

    /// An `atom` or `red`: a read and a write joined by `rmw`, the write's value computed from
    /// the read, the operand and (cas) the comparand, which it depends on. Acquire semantics
    /// go on the read, release on the write; `red` writes no register.
    fn rmw(&mut self, a: Rmw, base: Ev, st: &mut ThreadState) {
        let r = self.evs.len();
        let w = r + 1;
        let operand = src_of(&st.regs, a.val);
        let cmp = a.cmp.map(|c| src_of(&st.regs, c));
        let mut rs = Vec::new();
        operand.reads(&mut rs);
        if let Some(c) = &cmp {
            c.reads(&mut rs);
        }
        self.deps.extend(rs.into_iter().map(|x| (x, w)));
        let (loc, vloc) = (self.idx.loc(a.loc), self.idx.vloc(a.loc));
        self.push(
            Ev {
                kind: Kind::R,
                loc,
                vloc,
                scope: Some(a.scope),
                acq: matches!(a.sem, Sem::Acquire | Sem::AcqRel),
                rmw_write: Some(w),
                ..base.clone()
            },
            st,
        );
        self.push(
            Ev {
                kind: Kind::W,
                loc,
                vloc,
                scope: Some(a.scope),
                rel: matches!(a.sem, Sem::Release | Sem::AcqRel),
                wval: Some(WVal::Rmw {
                    read: r,
                    op: a.op,
                    operand,
                    cmp,
                }),
                ..base
            },
            st,
        );
        if let Some(reg) = a.reg {
            st.regs.insert(reg.clone(), Src::Read(r));
        }
    }
}

/// The fields of an `atom` (with a destination register) or a `red` (without).
struct Rmw<'a> {
    op: AtomOp,
    reg: Option<&'a String>,
    loc: &'a str,
    val: &'a Operand,
    cmp: Option<&'a Operand>,
    sem: Sem,
    scope: Scope,
}

/// Program order `po`: each thread's events in the order of its path.
fn program_order(thread_evs: &[Vec<usize>], n: usize) -> Rel {
    let mut po = empty(n);
    for mine in thread_evs {
        for (i, &a) in mine.iter().enumerate() {
            for &b in &mine[i + 1..] {
                set(&mut po, a, b);
            }
        }
    }
    po
}

fn is_mem(e: &Ev) -> bool {
    e.kind != Kind::F
}

/// `po-loc`: program order between memory operations on the same location; the v7.5
/// release/acquire patterns use po-vloc (the same virtual address).
fn po_loc(evs: &[Ev], po: &Rel, model: Model) -> Rel {
    let n = evs.len();
    let mut po_loc = empty(n);
    for a in 0..n {
        for b in 0..n {
            let (ea, eb) = (&evs[a], &evs[b]);
            let same_loc = is_mem(ea) && is_mem(eb) && ea.loc == eb.loc;
            let same_vloc = same_loc && (model == Model::V60 || ea.vloc == eb.vloc);
            if has(po, a, b) && same_vloc {
                set(&mut po_loc, a, b);
            }
        }
    }
    po_loc
}

/// `ms`, morally strong: two distinct operations of one thread, or both strong with scopes
/// that include each other's thread; memory operations must overlap (the same location; in
/// v7.5 also the same virtual address) and, in v7.5 ("morally strong" of PTX ISA 7.5), go
/// through the same proxy. Initial writes take part in no synchronisation.
fn morally_strong(test: &LitmusTest, evs: &[Ev], model: Model) -> Rel {
    let n = evs.len();
    let mut ms = empty(n);
    for a in 0..n {
        for b in 0..n {
            let (ea, eb) = (&evs[a], &evs[b]);
            let same_loc = is_mem(ea) && is_mem(eb) && ea.loc == eb.loc;
            let overlap = match model {
                Model::V60 => same_loc,
                Model::V75 => same_loc && ea.vloc == eb.vloc,
            };
            if a == b || (is_mem(ea) && is_mem(eb) && !overlap) {
                continue;
            }
            if model == Model::V75 && ea.proxy != eb.proxy {
                continue;
            }
            let (Some(ta), Some(tb)) = (ea.thread, eb.thread) else {
                continue;
            };
            let related = ta == tb
                || (ea.strong
                    && eb.strong
                    && test.threads[ta]
                        .scope_includes(ea.scope.unwrap_or(Scope::Sys), &test.threads[tb])
                    && test.threads[tb]
                        .scope_includes(eb.scope.unwrap_or(Scope::Sys), &test.threads[ta]));
            if related {
                set(&mut ms, a, b);
            }
        }
    }
    ms
}

/// The release pattern `[W&REL]; po-loc?; [strong W] | [F&REL]; po; [strong W]` and the
/// acquire pattern `[strong R]; po-loc?; [R&ACQ] | [strong R]; po; [F&ACQ]` (the PTX memory
/// model's release and acquire patterns, as in Dat3M's `ptx.cat`).
fn release_acquire_patterns(evs: &[Ev], po: &Rel, po_loc: &Rel) -> (Rel, Rel) {
    let n = evs.len();
    let mut rel_pat = empty(n);
    let mut acq_pat = empty(n);
    for a in 0..n {
        for b in 0..n {
            let (ea, eb) = (&evs[a], &evs[b]);
            if eb.kind == Kind::W && eb.strong && ea.rel {
                let ok = match ea.kind {
                    Kind::W => a == b || has(po_loc, a, b),
                    Kind::F => has(po, a, b),
                    Kind::R => false,
                };
                if ok {
                    set(&mut rel_pat, a, b);
                }
            }
            if ea.kind == Kind::R && ea.strong && eb.acq {
                let ok = match eb.kind {
                    Kind::R => a == b || has(po_loc, a, b),
                    Kind::F => has(po, a, b),
                    Kind::W => false,
                };
                if ok {
                    set(&mut acq_pat, a, b);
                }
            }
        }
    }
    (rel_pat, acq_pat)
}

/// The program of `test` along one path per thread: its events (initial writes first) and
/// the relations fixed before any reads-from or coherence choice: program order, po-loc,
/// morally strong, rmw, the release and acquire patterns and the dependencies.
fn build(test: &LitmusTest, paths: &[&unroll::Path], model: Model) -> Result<Program, ModelError> {
    let mut b = Events::new(test);
    for (ti, t) in test.threads.iter().enumerate() {
        b.thread(ti, t, paths[ti]);
    }
    let n = b.evs.len();
    if n > 64 {
        return Err(ModelError::TooManyEvents {
            test: test.name.clone(),
            events: n,
        });
    }
    let evs = b.evs;
    let po = program_order(&b.thread_evs, n);
    let po_loc = po_loc(&evs, &po, model);
    let ms = morally_strong(test, &evs, model);
    let mut rmw = empty(n);
    for (a, ev) in evs.iter().enumerate() {
        if let Some(w) = ev.rmw_write {
            set(&mut rmw, a, w);
        }
    }
    let (rel_pat, acq_pat) = release_acquire_patterns(&evs, &po, &po_loc);
    let reads = (0..n).filter(|&i| evs[i].kind == Kind::R).collect();
    let sc_fences = (0..n).filter(|&i| evs[i].sc_fence).collect();
    let mut dep = empty(n);
    for (r, e) in b.deps {
        set(&mut dep, r, e);
    }
    Ok(Program {
        evs,
        locs: b.idx.locs,
        regs: b.regs,
        po,
        po_loc,
        ms,
        rmw,
        rel_pat,
        acq_pat,
        reads,
        sc_fences,
        assumes: b.assumes,
        dep,
        barriers: b.barriers,
        model,
        stuck: b.stuck,
        spin_cas: b.spin_cas,
    })
}

/// The ways barrier arrivals can synchronise under the values `val`, as relations from each
/// arrival to the leave events it releases; `None` when a waiting thread's barrier never
/// completes. Arrivals at one barrier (same CTA and id) complete it once `quorum` of them
/// (all of them when no quorum is given) have arrived: those synchronise with each other;
/// a later arrival passes a completed barrier, ordered after every earlier arrival (PTX ISA
/// "bar, barrier": the barrier completes when the expected number of threads arrive;
/// `bar.arrive` counts without waiting). These choices reproduce Dat3M's `Barrier/quorum*`
/// verdicts.
fn barrier_options(p: &Program, val: &[Option<i64>]) -> Option<Vec<Rel>> {
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

fn subsets(k: usize, q: usize) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    for mask in 0u32..(1u32 << k.min(16)) {
        if mask.count_ones() as usize == q {
            out.push((0..k).filter(|i| mask >> i & 1 == 1).collect());
        }
    }
    out
}

fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
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
fn linearisations(items: &[usize], po: &Rel) -> Vec<Vec<usize>> {
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

fn eval_src(s: &Src, val: &[Option<i64>]) -> Option<i64> {
    match s {
        Src::Const(v) => Some(*v),
        Src::Read(r) => val[*r],
        Src::Bin(op, a, b) => Some(op.apply(eval_src(a, val)?, eval_src(b, val)?)),
    }
}

/// Values of every event under an rf choice: `None` for values caught in a cycle of rf and
/// dependencies (thin air). `exists[w]` is whether a write happens (a failed cas does not).
fn compute_values(p: &Program, rf: &[usize]) -> (Vec<Option<i64>>, Vec<Option<bool>>) {
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

struct Outcome<'a> {
    p: &'a Program,
    val: &'a [Option<i64>],
    final_mem: Vec<Option<i64>>,
}

impl Outcome<'_> {
    fn value(&self, t: &Term) -> Option<i64> {
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

fn describe(p: &Program, rf: &[usize], co: &[CoOrder], sco: &[usize]) -> String {
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
struct CoOrder {
    writes: Vec<usize>,
    pairs: Vec<(usize, usize)>,
    /// Writes with no successor: each may be the location's final value.
    maximal: Vec<usize>,
}

fn coherence_orders(ws: &[usize], ms: &Rel) -> Vec<CoOrder> {
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

/// The first axiom an execution violates, or `None` if it is consistent.
/// `live`: the events that happen (a failed cas has no write).
fn first_violation(
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
fn v75_violation(
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

/// Checks a test against the model. A test beyond the checker (more than 64 events, more
/// than [`MAX_CANDIDATES`] candidate executions) gives a verdict with `error` set and nothing
/// allowed; [`try_check`] returns that as an `Err` instead.
pub fn check(test: &LitmusTest) -> ModelVerdict {
    try_check(test).unwrap_or_else(|e| ModelVerdict {
        allowed: false,
        condition_holds: false,
        candidates: 0,
        consistent: 0,
        rejected: Vec::new(),
        terms: Vec::new(),
        allowed_outcomes: BTreeSet::new(),
        error: Some(e.to_string()),
        bound_reached: false,
        model: Model::V60,
        hang: false,
        liveness_violation: None,
    })
}

/// Which memory model judges a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// PTX ISA 6.0 without proxies (Dat3M `ptx-v6.0.cat`), the default for tests without
    /// proxies.
    V60,
    /// PTX ISA 7.5 with proxies (Dat3M `ptx-v7.5.cat`): generic/texture/surface/constant
    /// proxies, `fence.proxy.*`, virtual aliases.
    V75,
}

impl Model {
    pub fn name(self) -> &'static str {
        match self {
            Model::V60 => "ptx-v6.0",
            Model::V75 => "ptx-v7.5",
        }
    }
    pub fn parse(s: &str) -> Option<Model> {
        match s {
            "ptx-v6.0" => Some(Model::V60),
            "ptx-v7.5" => Some(Model::V75),
            _ => None,
        }
    }
}

/// How to check: the loop bound and the model (`None`: v7.5 when the test uses proxies,
/// v6.0 otherwise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    pub unroll: u32,
    pub model: Option<Model>,
    /// Answer the liveness question instead (`litmus check --liveness`).
    pub liveness: bool,
    /// The most candidate executions (by the checker's estimate) a test may need.
    pub max_candidates: u128,
}

/// Dat3M's loop bound for its PTX tests.
pub const DEFAULT_UNROLL: u32 = 1;

impl Default for Options {
    fn default() -> Self {
        Options {
            unroll: DEFAULT_UNROLL,
            model: None,
            liveness: false,
            max_candidates: MAX_CANDIDATES,
        }
    }
}

#[derive(Default)]
struct Acc {
    candidates: usize,
    consistent: usize,
    allowed: bool,
    all_satisfy: bool,
    rejected: Vec<Rejection>,
    allowed_outcomes: BTreeSet<Vec<i64>>,
    bound_reached: bool,
    hang: bool,
    liveness: bool,
    /// A consistent execution in which some thread never terminates under a fair scheduler.
    stuck_witness: Option<String>,
}

/// Why the checker refuses a test: it is too large to enumerate, or needs the other model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("test `{test}` has {events} events; the checker handles at most 64")]
    TooManyEvents { test: String, events: usize },
    #[error("test `{test}` uses proxies (aliases, tld/suld/sust/cold, fence.proxy); check it with --model ptx-v7.5")]
    NeedsPtx75 { test: String },
    /// `combinations`: the product of the threads' path counts, or "more than 2^128".
    #[error("test `{test}` has {combinations} combinations of thread paths; the checker enumerates at most {max} candidate executions (raise with --max-candidates N)")]
    TooManyCombinations {
        test: String,
        combinations: String,
        max: u128,
    },
    /// `estimate`: "at least N" or "more than 2^128".
    #[error("test `{test}` has {estimate} candidate executions by the checker's estimate (reads-from × coherence orders × final-memory states × fence-sc orders × barrier orders, under --unroll {unroll}); the checker enumerates at most {max} (raise with --max-candidates N)")]
    TooManyCandidates {
        test: String,
        estimate: String,
        unroll: u32,
        max: u128,
    },
    #[error("a read has no write to read from")]
    NoWriteToReadFrom,
    #[error(transparent)]
    Unroll(#[from] unroll::UnrollError),
}

/// `gpucts litmus check` refused its arguments, could not read the file, or the checker
/// refused the test (at `line`: where its threads start).
#[derive(Debug, thiserror::Error)]
pub enum CheckFileError {
    #[error("unknown model `{0}`; allowed: ptx-v6.0, ptx-v7.5")]
    UnknownModel(String),
    #[error("--unroll must be at least 1")]
    ZeroUnroll,
    #[error(transparent)]
    File(#[from] crate::atomics::litmus::LitmusFileError),
    #[error("{}:{line}:1: {source}", path.display())]
    Refused {
        path: std::path::PathBuf,
        line: usize,
        source: ModelError,
    },
}

/// Checks a test against the model (default options); an error when the test is too large
/// to enumerate.
pub fn try_check(test: &LitmusTest) -> Result<ModelVerdict, ModelError> {
    try_check_with(test, &Options::default())
}

/// The candidate executions of one path combination, bounded before any work: rf choices ×
/// coherence orders (each pair of writes ordered one way, the other, or not) × fence.sc orders.
fn estimate(p: &Program) -> u128 {
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

/// Checks a test: every combination of thread paths under the loop bound, each enumerated.
pub fn try_check_with(test: &LitmusTest, opts: &Options) -> Result<ModelVerdict, ModelError> {
    let model = opts.model.unwrap_or(if test.uses_proxies() {
        Model::V75
    } else {
        Model::V60
    });
    if model == Model::V60 && test.uses_proxies() {
        return Err(ModelError::NeedsPtx75 {
            test: test.name.clone(),
        });
    }
    let per_thread: Vec<Vec<unroll::Path>> = test
        .threads
        .iter()
        .map(|t| unroll::paths(t, opts.unroll))
        .collect::<Result<_, _>>()?;
    // Checked: a product that wrapped past 2^128 would pass the guard (issue 10).
    let combos: Option<u128> = per_thread
        .iter()
        .try_fold(1u128, |a, v| a.checked_mul(v.len() as u128));
    match combos {
        Some(c) if c <= opts.max_candidates => {}
        _ => {
            return Err(ModelError::TooManyCombinations {
                test: test.name.clone(),
                combinations: combos
                    .map_or_else(|| "more than 2^128".to_string(), |c| c.to_string()),
                max: opts.max_candidates,
            });
        }
    }
    let mut term_set = BTreeSet::new();
    test.condition.prop.terms(&mut term_set);
    let terms: Vec<Term> = term_set.into_iter().collect();
    // Build every terminating-or-cut combination first, so the size is known up front.
    let mut programs = Vec::new();
    let mut total: u128 = 0;
    let mut idx = vec![0usize; per_thread.len()];
    loop {
        let paths: Vec<&unroll::Path> = idx
            .iter()
            .enumerate()
            .map(|(t, &i)| &per_thread[t][i])
            .collect();
        let has_spin = paths.iter().any(|p| p.end == unroll::End::Spin);
        {
            let cut = paths.iter().any(|p| p.end == unroll::End::Cut);
            let p = build(test, &paths, model)?;
            // A spin without cas operations is non-terminating whatever the values; one
            // whose only effects are cas operations is decided per execution.
            let skip = has_spin && !opts.liveness && p.spin_cas.is_empty();
            total = total.saturating_add(if skip { 0 } else { estimate(&p) });
            if total > opts.max_candidates {
                let shown = if total == u128::MAX {
                    "more than 2^128".to_string()
                } else {
                    format!("at least {total}")
                };
                return Err(ModelError::TooManyCandidates {
                    test: test.name.clone(),
                    estimate: shown,
                    unroll: opts.unroll,
                    max: opts.max_candidates,
                });
            }
            if !skip {
                programs.push((p, cut));
            }
        }
        let mut k = 0;
        loop {
            if k == idx.len() {
                break;
            }
            idx[k] += 1;
            if idx[k] < per_thread[k].len() {
                break;
            }
            idx[k] = 0;
            k += 1;
        }
        if k == idx.len() {
            break;
        }
    }
    let mut acc = Acc {
        all_satisfy: true,
        liveness: opts.liveness,
        ..Acc::default()
    };
    for (p, cut) in &programs {
        enumerate(test, p, &terms, *cut, &mut acc)?;
    }
    let Acc {
        candidates,
        consistent,
        allowed,
        all_satisfy,
        mut rejected,
        allowed_outcomes,
        bound_reached,
        hang,
        liveness: _,
        stuck_witness,
    } = acc;
    if allowed {
        rejected.clear();
    }
    let condition_holds = match test.condition.quantifier {
        Quantifier::Exists => allowed,
        Quantifier::NotExists => !allowed,
        Quantifier::Forall => all_satisfy,
    };
    // A cut execution could, beyond the bound, still decide the condition: only a verdict
    // that no further execution can change stands (an exists witness, a forall/~exists
    // counterexample).
    let decided = match test.condition.quantifier {
        Quantifier::Exists | Quantifier::NotExists => allowed,
        Quantifier::Forall => !all_satisfy,
    };
    Ok(ModelVerdict {
        allowed,
        condition_holds,
        candidates,
        consistent,
        rejected,
        terms,
        allowed_outcomes,
        error: None,
        bound_reached: bound_reached && !decided,
        model,
        hang,
        liveness_violation: opts.liveness.then_some(stuck_witness),
    })
}

/// Advances the mixed-radix counter `idx` (digit `k` counts up to `len(k)`) to the next
/// combination; false once every combination has been visited.
fn next_choice(idx: &mut [usize], len: impl Fn(usize) -> usize) -> bool {
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
fn rf_candidates(p: &Program) -> Result<Vec<Vec<usize>>, ModelError> {
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
fn enumerate(
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
struct Candidate<'a> {
    test: &'a LitmusTest,
    p: &'a Program,
    terms: &'a [Term],
    /// The orders of the `fence.sc` operations consistent with program order.
    sc_orders: &'a [Vec<usize>],
    /// The write each read reads from, in `p.reads` order.
    rf: &'a [usize],
}

/// Whether the values a reads-from choice gives are an execution of the paths at all.
struct Feasibility {
    /// Not an execution: a read from a cas write that did not happen, a branch condition
    /// the path assumed does not hold, a spin whose cas all failed, or a barrier that never
    /// completes (without `--liveness`).
    excluded: bool,
    /// Cut by the loop bound (a spin whose cas succeeded counts as cut).
    cut: bool,
    /// Some branch condition's value is unknown (it depends on a thin-air value).
    assume_unknown: bool,
    /// With `--liveness`: a waiting thread's barrier never completes.
    hanging: bool,
    /// The ways the barrier arrivals synchronise.
    bar_opts: Vec<Rel>,
}

impl Candidate<'_> {
    /// Which executions this reads-from choice admits: the paths' branch conditions and
    /// cas outcomes must agree with its values, and its barriers must complete.
    fn feasibility(
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
    fn reads_from(&self, cut: bool, acc: &mut Acc) {
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
    fn judge(&self, ex: &Execution, f: &Feasibility, acc: &mut Acc) {
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
    fn final_states(&self, ex: &Execution) -> (bool, bool, Vec<Vec<i64>>) {
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
struct Execution<'a> {
    val: &'a [Option<i64>],
    /// The events that happen (a failed cas's write does not), as a bit set.
    live: u64,
    rf_rel: &'a Rel,
    co_rel: Rel,
    co: &'a [CoOrder],
    /// Per location, the values a later observer may read.
    finals: Vec<Vec<Option<i64>>>,
}

/// The coherence relation `co` of one order per location: the initial write of location
/// `li` (event `li`) before every other write to it, then the order's own pairs.
fn coherence_relation(co: &[CoOrder], n: usize) -> Rel {
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
fn final_values(co: &[CoOrder], val: &[Option<i64>]) -> Vec<Vec<Option<i64>>> {
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

/// `gpucts litmus check FILE`: the model's verdict as a printable report.
pub fn check_file(path: &std::path::Path) -> Result<String, CheckFileError> {
    check_file_with(path, DEFAULT_UNROLL, None, false, None)
}

/// `gpucts litmus check [--unroll N] [--model ptx-v6.0|ptx-v7.5] [--liveness] FILE`.
pub fn check_file_with(
    path: &std::path::Path,
    unroll: u32,
    model: Option<&str>,
    liveness: bool,
    max_candidates: Option<u128>,
) -> Result<String, CheckFileError> {
    let max_candidates = max_candidates.unwrap_or(MAX_CANDIDATES);
    let model = match model {
        None => None,
        Some(m) => {
            Some(Model::parse(m).ok_or_else(|| CheckFileError::UnknownModel(m.to_string()))?)
        }
    };
    if unroll == 0 {
        return Err(CheckFileError::ZeroUnroll);
    }
    let test = crate::atomics::litmus::load_file(path)?;
    let opts = Options {
        unroll,
        model,
        liveness,
        max_candidates,
    };
    let verdict = try_check_with(&test, &opts).map_err(|source| {
        // A refusal of the whole test (its state space) points at where its threads start:
        // `threads:` in YAML, the `P0@...` header in Dat3M syntax.
        let line = crate::suite::input::read_text(path)
            .ok()
            .and_then(|t| {
                t.lines()
                    .position(|l| l.starts_with("threads:") || l.trim_start().starts_with("P0"))
            })
            .map_or(1, |i| i + 1);
        CheckFileError::Refused {
            path: path.to_path_buf(),
            line,
            source,
        }
    })?;
    Ok(report(&test, &verdict))
}

/// The printable report of `gpucts litmus check`.
pub fn report(test: &LitmusTest, v: &ModelVerdict) -> String {
    let mut s = String::new();
    s.push_str(&format!("test: {}\n", test.name));
    s.push_str(&format!("condition: {}\n", test.condition));
    if let Some(e) = &v.error {
        s.push_str(&format!("outcome: unknown ({e})\n"));
        return s;
    }
    if let Some(l) = &v.liveness_violation {
        match l {
            Some(w) => s.push_str(&format!(
                "liveness: violation (under a fair scheduler some execution does not terminate)\n  {w}\n"
            )),
            None => s.push_str(
                "liveness: terminates (no consistent execution loops forever or blocks at a barrier)\n",
            ),
        }
        s.push_str(&format!("model: {}\n", v.model.name()));
        return s;
    }
    if v.bound_reached {
        s.push_str(&format!(
            "outcome: unknown (bound reached: an execution cut by the loop bound could decide the condition; raise --unroll)\nmodel: {}\n",
            v.model.name()
        ));
        return s;
    }
    s.push_str(&format!(
        "outcome: {}\n",
        if v.allowed { "allowed" } else { "forbidden" }
    ));
    s.push_str(&format!("model: {}\n", v.model.name()));
    // Issue 17 item 3: one statement read once, not "holds: no (exists: some ... satisfies it)".
    let prop = test.condition.to_string();
    let prop = prop.split_once(' ').map_or(prop.as_str(), |(_, p)| p);
    let q = test.condition.quantifier.keyword();
    let found = match (test.condition.quantifier, v.allowed, v.condition_holds) {
        (Quantifier::Exists | Quantifier::NotExists, true, _) => {
            "some consistent execution reaches it".to_string()
        }
        (Quantifier::Exists | Quantifier::NotExists, false, _) => {
            "no consistent execution reaches it".to_string()
        }
        (Quantifier::Forall, _, true) => "every consistent execution satisfies it".to_string(),
        (Quantifier::Forall, _, false) => {
            "some consistent execution does not satisfy it".to_string()
        }
    };
    s.push_str(&format!(
        "{q} {prop}: {found}, so the condition {}\n",
        if v.condition_holds { "holds" } else { "fails" }
    ));
    s.push_str(&format!(
        "executions: {} candidates, {} consistent\n",
        v.candidates, v.consistent
    ));
    let mut counts: BTreeMap<Axiom, usize> = BTreeMap::new();
    for r in &v.rejected {
        *counts.entry(r.axiom).or_default() += 1;
    }
    for (a, c) in &counts {
        s.push_str(&format!("ruled out by {a}: {c} candidate(s)\n"));
    }
    const SHOWN: usize = 200;
    for r in v.rejected.iter().take(SHOWN) {
        s.push_str(&format!("  {}: {}\n", r.axiom, r.execution));
    }
    if v.rejected.len() > SHOWN {
        s.push_str(&format!("  ... and {} more\n", v.rejected.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod corpus;
#[cfg(test)]
mod flow_tests;
#[cfg(test)]
mod tests;
