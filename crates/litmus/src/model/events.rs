//! The events of one combination of thread paths, and the relations fixed by the program
//! alone: program order, po-loc, morally strong, the release and acquire patterns.

use std::collections::{BTreeMap, HashMap};

use super::rel::{empty, has, set, Rel};
use super::{unroll, Model, ModelError};
use crate::{
    dat3m::instr_text, AtomOp, BranchCond, LitmusTest, LocalOp, Location, Op, Operand, Proxy,
    Scope, Sem, Thread,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    R,
    W,
    F,
}

/// Where a value comes from, symbolically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Src {
    Const(i64),
    /// The value read by this read event.
    Read(usize),
    /// Register arithmetic (`add r2, r2, 1`).
    Bin(LocalOp, Box<Src>, Box<Src>),
}

impl Src {
    /// The read events the value depends on (data dependencies).
    pub fn reads(&self, out: &mut Vec<usize>) {
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
pub enum WVal {
    Plain(Src),
    Rmw {
        read: usize,
        op: AtomOp,
        operand: Src,
        cmp: Option<Src>,
    },
}

#[derive(Debug, Clone)]
pub struct Ev {
    pub kind: Kind,
    pub thread: Option<usize>,
    pub loc: usize,
    pub strong: bool,
    pub scope: Option<Scope>,
    /// W & REL, or a release fence (release, acq_rel, sc).
    pub rel: bool,
    /// R & ACQ, or an acquire fence (acquire, acq_rel, sc).
    pub acq: bool,
    pub sc_fence: bool,
    /// For an rmw read: its write.
    pub rmw_write: Option<usize>,
    pub wval: Option<WVal>,
    pub label: String,
    /// Virtual location (the name used; `loc` is the physical one).
    pub vloc: usize,
    /// The proxy of a memory access; of a proxy fence, the proxy it fences.
    pub proxy: Proxy,
    /// `fence.proxy.{surface,texture,constant}` (orders `proxy` against generic).
    pub proxy_fence: bool,
    /// `fence.proxy.alias`.
    pub alias_fence: bool,
    /// (gpu, cta) of the thread, for the 7.5 model's same-CTA proxy fences.
    pub cta_key: (u32, u32),
}

pub struct Program {
    pub evs: Vec<Ev>,
    pub locs: Vec<String>,
    /// Final register values per thread.
    pub regs: Vec<BTreeMap<String, Src>>,
    pub po: Rel,
    pub po_loc: Rel,
    pub ms: Rel,
    pub rmw: Rel,
    pub rel_pat: Rel,
    pub acq_pat: Rel,
    pub reads: Vec<usize>,
    pub sc_fences: Vec<usize>,
    /// Branch conditions the threads' paths assume: (condition, lhs, rhs).
    pub assumes: Vec<(BranchCond, Src, Src)>,
    /// Data and control dependencies (read -> later event), for No-Thin-Air.
    pub dep: Rel,
    /// Barrier arrivals: (arrive event, leave event when the thread waits, thread, CTA key,
    /// id, quorum).
    pub barriers: Vec<BarrierEv>,
    pub model: Model,
    /// Per thread whose path ends at a back-jump: the reads of its last loop iteration.
    pub stuck: Vec<Vec<usize>>,
    /// The cas writes in the last iteration of spin paths: an execution in which one of them
    /// succeeds did not spin without effect, so it was cut by the bound instead.
    pub spin_cas: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct BarrierEv {
    pub arrive: usize,
    pub leave: Option<usize>,
    /// (gpu, cluster, cta) of the thread: `bar.cta` synchronises one CTA.
    pub cta: (u32, u32, u32),
    pub id: Src,
    pub quorum: Option<Src>,
}

pub const NO_LOC: usize = usize::MAX;

/// The value of an mbarrier location once phase 0 has completed (it starts at 0).
pub const PHASE_COMPLETE: i64 = 1;

#[cfg(test)]
thread_local! {
    /// A deliberately wrong model in which the complete-tx has no release semantics (the
    /// mbarrier's completion orders nothing), which the tests must catch.
    pub static DROP_MBARRIER_RELEASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn drop_mbarrier_release() -> bool {
    #[cfg(test)]
    if DROP_MBARRIER_RELEASE.with(|m| m.get()) {
        return true;
    }
    false
}

/// Where each location name lives: its physical location (an alias shares its target's; the
/// index into `locs`) and its virtual address (the index into `names`, Dat3M's `vloc`).
/// Every lookup goes through maps built once, so building the events is linear in the
/// locations (a scan per location made 100,000 locations take minutes).
pub struct LocIndex<'t> {
    /// Every location name the test uses.
    pub names: Vec<String>,
    /// The physical locations, each once.
    pub locs: Vec<String>,
    /// The listed locations by name.
    pub listed: HashMap<&'t str, &'t Location>,
    /// Index into `names` / `locs` by name.
    pub name_at: HashMap<String, usize>,
    pub loc_at: HashMap<String, usize>,
}

impl<'t> LocIndex<'t> {
    pub fn new(test: &'t LitmusTest) -> Self {
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
    pub fn physical<'a>(&'a self, l: &'a str) -> &'a str {
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
    pub fn init_of(&self, l: &str) -> i64 {
        self.listed.get(self.physical(l)).map_or(0, |m| m.init)
    }

    /// The physical location of `l` (shared by all its aliases).
    pub fn loc(&self, l: &str) -> usize {
        self.loc_at.get(self.physical(l)).copied().unwrap_or(NO_LOC)
    }

    /// The virtual address of `l`: a texture/surface/constant alias is another proxy's view
    /// of the same virtual address; only a generic alias is a different one (PTX ISA 7.5
    /// proxies; Dat3M's `vloc`).
    pub fn vloc(&self, l: &str) -> usize {
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
pub fn src_of(regs: &BTreeMap<String, Src>, o: &Operand) -> Src {
    match o {
        Operand::Const(v) => Src::Const(*v),
        Operand::Reg(r) => regs.get(r).cloned().unwrap_or(Src::Const(0)),
    }
}

/// The events of a test, built thread by thread along one path each, with what the
/// relations need besides the events themselves.
pub struct Events<'t> {
    pub idx: LocIndex<'t>,
    pub evs: Vec<Ev>,
    /// Branch conditions the paths assume: (condition, lhs, rhs).
    pub assumes: Vec<(BranchCond, Src, Src)>,
    /// Data and control dependencies: (read, later event).
    pub deps: Vec<(usize, usize)>,
    pub barriers: Vec<BarrierEv>,
    /// Per looping thread: the reads of its last loop iteration.
    pub stuck: Vec<Vec<usize>>,
    /// The cas writes in the last iteration of spin paths.
    pub spin_cas: Vec<usize>,
    /// Final register values per thread.
    pub regs: Vec<BTreeMap<String, Src>>,
    /// Each thread's events in program order.
    pub thread_evs: Vec<Vec<usize>>,
    /// Each bulk copy's events after the events its thread issued before it: ordered after
    /// those, and not before the thread's later events (the copy runs asynchronously).
    pub async_chains: Vec<Vec<usize>>,
}

/// The state of one thread while its path is turned into events.
pub struct ThreadState {
    pub regs: BTreeMap<String, Src>,
    /// The thread's events so far, in program order.
    pub mine: Vec<usize>,
    /// (gpu, cluster, cta): `bar.cta` synchronises one CTA.
    pub cta: (u32, u32, u32),
}

impl<'t> Events<'t> {
    /// One initial write per physical location, of its init value, by no thread.
    pub fn new(test: &'t LitmusTest) -> Self {
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
            async_chains: Vec::new(),
        }
    }

    /// The events of thread `ti` along `path`: each operation's events in program order, the
    /// branch conditions the path assumes, and the control dependencies (every event after a
    /// branch depends on what the branch read).
    pub fn thread(&mut self, ti: usize, t: &Thread, path: &unroll::Path) {
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
    pub fn push(&mut self, ev: Ev, st: &mut ThreadState) -> usize {
        let id = self.evs.len();
        self.evs.push(ev);
        st.mine.push(id);
        id
    }

    /// The events of one operation (`base` carries its thread, label and defaults: a strong
    /// fence of no scope) and its effect on the registers.
    pub fn op(&mut self, op: &Op, base: Ev, st: &mut ThreadState) {
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
            Op::BulkCopy { dst, src, mbar } => self.bulk_copy(dst, src, mbar, base, st),
            Op::MbarWait { mbar } => {
                // The wait loop ends once try_wait.parity returns true: a strong read with the
                // default `.acquire.cta` semantics that observes the phase's completion (the
                // complete-tx's write; PTX ISA "mbarrier.test_wait/try_wait").
                let r = self.push(
                    Ev {
                        kind: Kind::R,
                        loc: self.idx.loc(mbar),
                        vloc: self.idx.vloc(mbar),
                        scope: Some(Scope::Cta),
                        acq: true,
                        ..base
                    },
                    st,
                );
                self.assumes
                    .push((BranchCond::Eq, Src::Read(r), Src::Const(PHASE_COMPLETE)));
            }
        }
    }

    /// `cp.async.bulk`'s events, all of the issuing thread and CTA but outside its program
    /// order after the instruction (the copy is asynchronous; PTX ISA "Asynchronous copy"):
    /// a weak read of `src` and a weak write of `dst`, both in the async proxy ("Async
    /// Proxy": cp.async.bulk operations are performed in the asynchronous proxy; the copy is
    /// a weak memory operation, "cp.async.bulk"); the implicit generic-async proxy fence
    /// that follows its completion ("Async Proxy"); and the complete-tx on the mbarrier, a
    /// strong write with `.release` semantics at `.cluster` scope ("cp.async.bulk"), which
    /// completes phase 0. The chain is ordered after the thread's earlier events, as the
    /// instruction that starts it is.
    fn bulk_copy(&mut self, dst: &str, src: &str, mbar: &str, base: Ev, st: &ThreadState) {
        let mut chain = st.mine.clone();
        let at = |label: &str| format!("{} ({label})", base.label);
        let r = self.evs.len();
        let async_access = |kind, loc: &str, label: &str, idx: &LocIndex<'_>| Ev {
            kind,
            loc: idx.loc(loc),
            vloc: idx.vloc(loc),
            strong: false,
            proxy: Proxy::Async,
            label: at(label),
            ..base.clone()
        };
        let read = async_access(Kind::R, src, "async read", &self.idx);
        let write = Ev {
            wval: Some(WVal::Plain(Src::Read(r))),
            ..async_access(Kind::W, dst, "async write", &self.idx)
        };
        self.evs.push(read);
        self.evs.push(write);
        self.deps.push((r, r + 1));
        self.evs.push(Ev {
            proxy: Proxy::Async,
            proxy_fence: true,
            label: at("implicit generic-async proxy fence"),
            ..base.clone()
        });
        self.evs.push(Ev {
            kind: Kind::W,
            loc: self.idx.loc(mbar),
            vloc: self.idx.vloc(mbar),
            scope: Some(Scope::Cluster),
            rel: !drop_mbarrier_release(),
            wval: Some(WVal::Plain(Src::Const(PHASE_COMPLETE))),
            label: at("complete-tx"),
            ..base
        });
        chain.extend(r..r + 4);
        self.async_chains.push(chain);
    }

    /// A load or store through the generic proxy (`ld`/`st`) or another one (`tld`/`suld`/
    /// `cold`, `sust`; PTX ISA 7.5 proxies): one event each, the proxy its only difference.
    /// A strong load with `.acquire` is an acquire, a strong store with `.release` a release;
    /// a load's register now holds what it reads, a store depends on its value's reads.
    pub fn access(&mut self, op: &Op, base: Ev, st: &mut ThreadState) {
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
    pub fn barrier(
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
    pub fn rmw(&mut self, a: Rmw, base: Ev, st: &mut ThreadState) {
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
pub struct Rmw<'a> {
    pub op: AtomOp,
    pub reg: Option<&'a String>,
    pub loc: &'a str,
    pub val: &'a Operand,
    pub cmp: Option<&'a Operand>,
    pub sem: Sem,
    pub scope: Scope,
}

/// Program order `po`: each thread's events in the order of its path.
pub fn program_order(thread_evs: &[Vec<usize>], n: usize) -> Rel {
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

pub fn is_mem(e: &Ev) -> bool {
    e.kind != Kind::F
}

/// `po-loc`: program order between memory operations on the same location; the v7.5
/// release/acquire patterns use po-vloc (the same virtual address).
pub fn po_loc(evs: &[Ev], po: &Rel, model: Model) -> Rel {
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
pub fn morally_strong(test: &LitmusTest, evs: &[Ev], model: Model) -> Rel {
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
pub fn release_acquire_patterns(evs: &[Ev], po: &Rel, po_loc: &Rel) -> (Rel, Rel) {
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
pub fn build(
    test: &LitmusTest,
    paths: &[&unroll::Path],
    model: Model,
) -> Result<Program, ModelError> {
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
    let mut sequences = b.thread_evs;
    sequences.extend(b.async_chains);
    let po = program_order(&sequences, n);
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
