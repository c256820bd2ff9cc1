//! An interpreter for the PTX the kernel generator writes, with a random thread-interleaving
//! scheduler (sequentially consistent), so that the whole launch path — kernel parameters,
//! role and address tables, spin barrier, result layout, decoding — runs without a GPU
//! (`gpucts litmus run --emulate`). It is a sequentially consistent machine: every outcome it
//! gives must be one the PTX memory model allows, so a forbidden outcome from it is a bug in
//! the generator, the tables or the model. It reads only the generator's subset of PTX and
//! refuses anything else by name.
//!
//! Thread block clusters: a launch with clusters of `c` CTAs tiles the grid along x, so CTA
//! `b` is rank `b % c` (`%cluster_ctarank`) of cluster `b / c` (`%clusterid.x`); every CTA's
//! shared memory lives in the one address space, `mapa` moves a shared address to the same
//! offset in another CTA of the cluster, and `.shared::cluster` accesses go wherever their
//! address points (PTX ISA "Distributed shared memory"). `barrier.cluster.arrive` /
//! `barrier.cluster.wait` is a split barrier of every thread of the cluster.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};

use super::kernel::{self, KernelError};
use super::layout::{self, DecodeError, Geometry, GeometryError, Histogram, IterationPlan};
use super::StressParams;
use crate::atomics::litmus::LitmusTest;
use crate::atomics::model;

/// Instruction steps one emulated launch may take before it is called runaway: a kernel
/// whose threads spin (a barrier that never completes, a loop without its cap) stops here
/// with an error instead of hanging.
pub(crate) const MAX_STEPS: u64 = 200_000_000;

/// Why an emulated run has no histogram.
#[derive(Debug, thiserror::Error)]
pub enum EmulateError {
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// The generated kernel uses an instruction or operand the emulator does not execute.
    #[error("the emulator does not execute `{0}`")]
    Unsupported(String),
    #[error("the kernel reads register `{0}` before writing it")]
    Unwritten(String),
    #[error("every live thread waits at a barrier that cannot complete")]
    Deadlock,
    /// A use of a CTA barrier the PTX ISA does not define ("bar, barrier"): on a GPU such a
    /// kernel may hang or fault (`CUDA_ERROR_ILLEGAL_INSTRUCTION`).
    #[error("barrier misuse (PTX ISA \"bar, barrier\"): {0}")]
    Barrier(String),
    #[error("no thread finished within {MAX_STEPS} steps")]
    Runaway,
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// What emulated launches of one test gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Emulated {
    /// Outcome (the values of the model's terms, in its order) → instances.
    pub histogram: Histogram,
    pub launches: u64,
    pub instances: u64,
    /// Testing threads that gave up waiting at the spin barrier.
    pub barrier_timeouts: u64,
    /// Instructions executed, all threads and launches.
    pub steps: u64,
    /// Instances one of whose threads stopped at the loop cap ("did not terminate within
    /// [`kernel::LOOP_CAP`]"): not outcomes, and not in the histogram.
    pub did_not_terminate: u64,
    /// Instances one of whose threads ran past the model's loop bound
    /// ([`layout::PAST_MODEL_BOUND`]): not judged, and not in the histogram.
    pub past_model_bound: u64,
}

/// `launches` emulated launches of `test` under `params`, each with a random iteration plan
/// and interleaving drawn from `seed`.
pub fn emulate(
    test: &LitmusTest,
    params: &StressParams,
    launches: u64,
    seed: u64,
) -> Result<Emulated, EmulateError> {
    let g = Geometry::new(test, params)?;
    let prog = parse(&kernel::generate(test, &g)?)?;
    let terms = model::check(test).terms;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Emulated {
        histogram: Histogram::new(),
        launches,
        instances: 0,
        barrier_timeouts: 0,
        steps: 0,
        did_not_terminate: 0,
        past_model_bound: 0,
    };
    for _ in 0..launches {
        let plan = IterationPlan::random(&g, &mut rng);
        let run = launch_program(&prog, &g, &plan, &terms, Some(rng.random()))?;
        for (o, n) in run.histogram {
            *out.histogram.entry(o).or_insert(0) += n;
        }
        out.instances += u64::from(g.instances());
        out.barrier_timeouts += u64::from(run.timeouts);
        out.steps += run.steps;
        out.did_not_terminate += run.apart.did_not_terminate;
        out.past_model_bound += run.apart.past_model_bound;
    }
    Ok(out)
}

struct Ins {
    guard: Option<String>,
    opcode: Vec<String>,
    args: Vec<String>,
}

impl Ins {
    /// Whether the opcode carries modifier `m`.
    fn has(&self, m: &str) -> bool {
        self.opcode.iter().any(|x| x == m)
    }
}

struct Program {
    code: Vec<Ins>,
    labels: HashMap<String, usize>,
}

fn parse(ptx: &str) -> Result<Program, EmulateError> {
    // The body opens after the parameter list and any directives (`.explicitcluster`).
    let start = ptx
        .find(".entry")
        .and_then(|e| ptx[e..].find(")\n").map(|p| e + p))
        .and_then(|p| ptx[p..].find("\n{").map(|b| p + b - 1))
        .ok_or_else(|| EmulateError::Unsupported("a kernel without an entry body".into()))?;
    let mut code = Vec::new();
    let mut labels = HashMap::new();
    for line in ptx[start + 3..].lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with("//") || l.starts_with(".reg") || l == "}" {
            continue;
        }
        if let Some(label) = l.strip_suffix(':') {
            labels.insert(label.to_string(), code.len());
            continue;
        }
        // The crate's one instruction reader (ptx::instr) and literal grammar (ptx::literal).
        let ins = crate::ptx::instr::parse_instruction(l, 0)
            .map_err(|_| EmulateError::Unsupported(l.to_string()))?;
        if ins.guard.as_ref().is_some_and(|g| g.negated) {
            return Err(EmulateError::Unsupported(l.to_string()));
        }
        let mut opcode = vec![ins.opcode];
        opcode.extend(ins.modifiers);
        code.push(Ins {
            guard: ins.guard.map(|g| g.predicate),
            opcode,
            args: ins.operands,
        });
    }
    for ins in &code {
        if ins.opcode[0] == "bra" && !ins.args.first().is_some_and(|l| labels.contains_key(l)) {
            return Err(EmulateError::Unsupported(format!("bra {:?}", ins.args)));
        }
    }
    Ok(Program { code, labels })
}

struct Thread {
    pc: usize,
    regs: HashMap<String, u64>,
    done: bool,
    /// Waiting at a barrier (its key in [`Machine::barrier`]) for this generation of it to
    /// complete.
    waiting: Option<((u64, u64), u64)>,
    /// Arrived at its cluster's barrier, in this generation, and not yet waited.
    arrived: Option<u64>,
    tid: u64,
    ctaid: u64,
}

struct Machine<'a> {
    prog: &'a Program,
    mem: HashMap<u64, u32>,
    params: HashMap<String, u64>,
    ntid: u64,
    /// CTAs per cluster (1: a launch without clusters).
    cluster: u64,
    /// Per (CTA, barrier id): the current phase and the completed ones (PTX ISA "bar,
    /// barrier": a phase completes when its thread count has arrived). A cluster's barrier is
    /// keyed ([`CLUSTER_BARRIER`] | cluster id, 0).
    barrier: HashMap<(u64, u64), BarrierState>,
    /// Bulk copies, mbarriers and the async proxy's view of memory.
    proxy: proxy::AsyncState,
}

/// One barrier of a CTA (or a cluster's barrier) and the rules of its current phase.
#[derive(Debug, Default)]
struct BarrierState {
    /// Threads arrived in the current phase.
    arrived: u64,
    /// Phases completed.
    completed: u64,
    /// The current phase's thread count, from its first arrival.
    count: Option<u64>,
    /// Per warp of the CTA: the instruction (its index) the warp's lanes execute on this
    /// barrier in the current phase.
    warps: HashMap<u64, usize>,
    /// Threads (`%tid.x`) arrived in the current phase.
    threads: std::collections::HashSet<u64>,
}

/// Lanes of a warp (PTX ISA "warp": 32 threads; the emulator's CTAs are one-dimensional, so
/// warp w of a CTA is `%tid.x` 32w .. 32w + 31).
const WARP: u64 = 32;
/// The barrier-table id bit of a warp's `bar.warp.sync` (CTA barrier ids are 0..15).
const WARP_SYNC: u64 = 1 << 62;

/// Where CTA c's shared memory starts in the emulator's one address space.
fn shared_base(ctaid: u64) -> u64 {
    SHARED + (ctaid << SHARED_BITS)
}

const SHARED: u64 = 9 << 40;
const SHARED_BITS: u32 = 24;
/// The barrier-table key bit of a cluster barrier (no CTA id comes near it).
const CLUSTER_BARRIER: u64 = 1 << 63;

/// Run `threads` on `m` to completion, interleaved at random from `seed` (`None`: the last
/// runnable thread first, one after another); the steps taken.
fn schedule(
    m: &mut Machine<'_>,
    threads: &mut [Thread],
    seed: Option<u64>,
) -> Result<u64, EmulateError> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed.unwrap_or(0));
    let mut live: Vec<usize> = (0..threads.len()).rev().collect();
    let mut steps = 0u64;
    // Without a seed a bulk copy is performed as it starts; with one, at a random later step.
    m.proxy.eager = seed.is_none();
    while !live.is_empty() {
        if m.proxy.pending() > 0 && rng.random_range(0..4) == 0 {
            let k = rng.random_range(0..m.proxy.pending());
            m.perform(k, &mut |n| rng.random_range(0..n));
            continue;
        }
        // A thread waiting at a barrier its CTA has not completed is passed over (in order
        // without a seed: the last runnable one).
        let mut k = match seed {
            Some(_) => rng.random_range(0..live.len()),
            None => live.len() - 1,
        };
        if !m.runnable(&threads[live[k]]) {
            let runnable: Vec<usize> = (0..live.len())
                .filter(|&k| m.runnable(&threads[live[k]]))
                .collect();
            if runnable.is_empty() && m.proxy.pending() > 0 {
                m.perform(0, &mut |n| rng.random_range(0..n));
                continue;
            }
            if runnable.is_empty() {
                return Err(EmulateError::Deadlock);
            }
            k = match seed {
                Some(_) => runnable[rng.random_range(0..runnable.len())],
                None => runnable[runnable.len() - 1],
            };
        }
        let th = &mut threads[live[k]];
        // A few instructions at a time, so that a thread's accesses sometimes run together.
        for _ in 0..rng.random_range(1..4) {
            if th.done {
                break;
            }
            m.step(th)?;
            steps += 1;
        }
        if th.done {
            if seed.is_some() {
                live.swap_remove(k);
            } else {
                live.remove(k);
            }
        }
        if steps >= MAX_STEPS {
            return Err(EmulateError::Runaway);
        }
    }
    // Copies no one waited for still complete (a kernel of the generator waits for each).
    while m.proxy.pending() > 0 {
        m.perform(0, &mut |n| rng.random_range(0..n));
    }
    Ok(steps)
}

#[cfg(test)]
thread_local! {
    /// A deliberately wrong distributed-shared-memory mapping (every `mapa` keeps the
    /// thread's own CTA), which the tests must catch.
    pub(crate) static MAPA_TO_SELF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// `mapa`: shared address `a` of some CTA of the cluster of CTA `ctaid`, moved to the same
/// offset in the CTA of rank `rank` of that cluster.
fn mapa(a: u64, ctaid: u64, rank: u64, cluster: u64) -> Result<u64, EmulateError> {
    let offset = a.wrapping_sub(SHARED);
    if a < SHARED || offset >> SHARED_BITS >= (1 << 16) || rank >= cluster {
        return Err(unsupported(format!("mapa of {a:#x} to rank {rank}")));
    }
    #[cfg(test)]
    if MAPA_TO_SELF.with(|m| m.get()) {
        return Ok(a);
    }
    let within = offset & ((1 << SHARED_BITS) - 1);
    Ok(shared_base(ctaid - ctaid % cluster + rank) + within)
}

/// The new value of an `atom`/`red` whose opcode modifiers are `has`; `c` the swap value of a
/// `cas` (read only for it).
fn rmw(
    has: &dyn Fn(&str) -> bool,
    old: u32,
    b: u32,
    c: &dyn Fn() -> Result<u32, EmulateError>,
) -> Result<Option<u32>, EmulateError> {
    Ok(Some(if has("add") {
        old.wrapping_add(b)
    } else if has("exch") {
        b
    } else if has("and") {
        old & b
    } else if has("or") {
        old | b
    } else if has("xor") {
        old ^ b
    } else if has("min") {
        old.min(b)
    } else if has("max") {
        old.max(b)
    } else if has("cas") {
        if old == b {
            c()?
        } else {
            old
        }
    } else {
        return Ok(None);
    }))
}

/// A `setp` comparison: unsigned or signed 32-bit, as the type says.
fn compare(has: &dyn Fn(&str) -> bool, x: u64, y: u64) -> Option<bool> {
    let (x, y) = if has("s32") {
        (i64::from(x as u32 as i32), i64::from(y as u32 as i32))
    } else {
        (i64::from(x as u32), i64::from(y as u32))
    };
    type Cmp = fn(&i64, &i64) -> bool;
    let cmps: [(&str, Cmp); 6] = [
        ("eq", i64::eq),
        ("ne", i64::ne),
        ("lt", i64::lt),
        ("le", i64::le),
        ("gt", i64::gt),
        ("ge", i64::ge),
    ];
    cmps.iter().find(|(m, _)| has(m)).map(|(_, f)| f(&x, &y))
}

fn unsupported(what: impl std::fmt::Debug) -> EmulateError {
    EmulateError::Unsupported(format!("{what:?}"))
}

impl Machine<'_> {
    fn val(&self, t: &Thread, a: &str) -> Result<u64, EmulateError> {
        Ok(match a {
            "%tid.x" => t.tid,
            "%ctaid.x" => t.ctaid,
            "%ntid.x" => self.ntid,
            "%cluster_ctarank" => t.ctaid % self.cluster,
            "%clusterid.x" => t.ctaid / self.cluster,
            "%cluster_nctarank" => self.cluster,
            kernel::SMEM | crate::atomics::gpu::proxy::DATA => shared_base(t.ctaid),
            crate::atomics::gpu::proxy::MBARRIERS => shared_base(t.ctaid) + proxy::MBARRIER_OFFSET,
            // The generator writes every register before reading it: a read of an unwritten
            // one is a generator bug, not a value.
            _ if a.starts_with('%') => *t
                .regs
                .get(a)
                .ok_or_else(|| EmulateError::Unwritten(a.to_string()))?,
            _ => crate::ptx::literal::parse_int(a).ok_or_else(|| unsupported(a))?,
        })
    }
    fn addr(&self, t: &Thread, a: &str) -> Result<u64, EmulateError> {
        let inner = a.trim_start_matches('[').trim_end_matches(']');
        match inner.split_once('+') {
            Some((r, off)) => {
                let off =
                    crate::ptx::literal::parse_int(off.trim()).ok_or_else(|| unsupported(a))?;
                Ok(self.val(t, r.trim())?.wrapping_add(off))
            }
            None => self.val(t, inner),
        }
        .map(alias_to_buffer)
    }

    /// `sust.b.1d.b32.trap [surf, {x}], {v}` and `suld.b.1d.b32.trap {d}, [surf, {x}]`: every
    /// surface object of a launch is over the one array that mirrors the location buffer
    /// ([`SURFACE_ARRAY`]); `.b` mode addresses bytes. The surface proxy is one more path to
    /// the same storage in this sequentially consistent machine.
    fn surface(&mut self, t: &mut Thread, ins: &Ins) -> Result<Option<u64>, EmulateError> {
        let regs: Vec<String> = ins
            .args
            .join(",")
            .split(['[', ']', '{', '}', ','])
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
        // The instruction reader keeps `1d.b32.trap` as one modifier (it starts with a digit).
        let full = ins.opcode.join(".");
        if !matches!(full.as_str(), "sust.b.1d.b32.trap" | "suld.b.1d.b32.trap") || regs.len() != 3
        {
            return Err(unsupported(&ins.opcode));
        }
        let (handle, x, other) = if ins.opcode[0] == "sust" {
            (&regs[0], &regs[1], &regs[2])
        } else {
            (&regs[1], &regs[2], &regs[0])
        };
        let handle = self.val(t, handle)?;
        if !(SURFACE_OBJECTS..SURFACE_OBJECTS + 64).contains(&handle) {
            return Err(unsupported(format!("surface object {handle:#x}")));
        }
        let at = SURFACE_ARRAY + (self.val(t, x)? & 0xffff_ffff);
        if ins.opcode[0] == "sust" {
            let v = self.val(t, other)? as u32;
            self.write(at, v);
            Ok(None)
        } else {
            // The destination is a vector operand (`{d}`): written here, not as operand 0.
            let v = u64::from(*self.mem.get(&at).unwrap_or(&0));
            t.regs.insert(other.clone(), v);
            Ok(None)
        }
    }
    /// Whether `t` may run: not waiting at a barrier its CTA has not completed.
    fn runnable(&self, t: &Thread) -> bool {
        match t.waiting {
            None => true,
            Some((key, generation)) => self
                .barrier
                .get(&key)
                .is_some_and(|b| b.completed > generation),
        }
    }

    /// One instruction of thread `t`: the guard, then the instruction's kind (memory, async
    /// proxy, fence, control flow and barriers, register arithmetic); a result goes to the
    /// first operand.
    fn step(&mut self, t: &mut Thread) -> Result<(), EmulateError> {
        if t.waiting.is_some() {
            if !self.runnable(t) {
                return Ok(());
            }
            t.waiting = None;
        }
        let prog = self.prog;
        let Some(ins) = prog.code.get(t.pc) else {
            // Falling off the end of the body is the implicit `ret`.
            t.done = true;
            return Ok(());
        };
        t.pc += 1;
        if let Some(g) = &ins.guard {
            if self.val(t, g)? == 0 {
                return Ok(());
            }
        }
        let result = match ins.opcode[0].as_str() {
            "ld" | "st" | "atom" | "red" => self.memory(t, ins)?,
            "sust" | "suld" => self.surface(t, ins)?,
            "cp" | "mbarrier" => self.async_proxy(t, ins)?,
            "fence" => {
                self.fence(t, ins);
                None
            }
            "bra" | "bar" | "barrier" | "ret" => {
                self.control(t, ins)?;
                None
            }
            _ => self.arithmetic(t, ins)?,
        };
        if let Some(x) = result {
            let dst = arg(ins, 0)?.to_string();
            t.regs.insert(dst, x);
        }
        Ok(())
    }

    /// Operand `i` of `ins` as a value.
    fn v(&self, t: &Thread, ins: &Ins, i: usize) -> Result<u64, EmulateError> {
        self.val(t, arg(ins, i)?)
    }

    /// `ld` (of a parameter or memory), `st`, `atom`, `red`.
    fn memory(&mut self, t: &Thread, ins: &Ins) -> Result<Option<u64>, EmulateError> {
        let op = ins.opcode[0].as_str();
        let has = |m: &str| ins.has(m);
        Ok(match op {
            "ld" if has("param") => {
                let name = arg(ins, 1)?.trim_matches(|c| c == '[' || c == ']');
                Some(*self.params.get(name).ok_or_else(|| unsupported(name))?)
            }
            "ld" => {
                let at = self.addr(t, arg(ins, 1)?)?;
                Some(u64::from(*self.mem.get(&at).unwrap_or(&0)))
            }
            "st" => {
                let at = self.addr(t, arg(ins, 0)?)?;
                let x = self.v(t, ins, 1)? as u32;
                self.write(at, x);
                None
            }
            _ => {
                let (at, first) = if op == "atom" {
                    (self.addr(t, arg(ins, 1)?)?, 2)
                } else {
                    (self.addr(t, arg(ins, 0)?)?, 1)
                };
                let old = *self.mem.get(&at).unwrap_or(&0);
                let swap = || self.v(t, ins, first + 1).map(|x| x as u32);
                let new = rmw(&has, old, self.v(t, ins, first)? as u32, &swap)?
                    .ok_or_else(|| unsupported(&ins.opcode))?;
                self.write(at, new);
                (op == "atom").then_some(u64::from(old))
            }
        })
    }

    /// Register arithmetic, moves, comparisons and `mapa`.
    fn arithmetic(&mut self, t: &Thread, ins: &Ins) -> Result<Option<u64>, EmulateError> {
        let has = |m: &str| ins.has(m);
        let v = |i: usize| self.v(t, ins, i);
        Ok(Some(match ins.opcode[0].as_str() {
            "mul" if has("lo") => u64::from((v(1)? as u32).wrapping_mul(v(2)? as u32)),
            "div" if has("s32") => {
                let (x, y) = (v(1)? as u32 as i32, v(2)? as u32 as i32);
                u64::from(x.checked_div(y).unwrap_or(0) as u32)
            }
            "div" => {
                let d = v(2)? as u32;
                u64::from((v(1)? as u32).checked_div(d).unwrap_or(0))
            }
            "rem" => {
                let d = v(2)? as u32;
                u64::from((v(1)? as u32).checked_rem(d).unwrap_or(0))
            }
            "shr" => u64::from((v(1)? as u32) >> (v(2)? as u32 & 31)),
            "and" => u64::from(v(1)? as u32 & v(2)? as u32),
            "or" => u64::from(v(1)? as u32 | v(2)? as u32),
            "xor" => u64::from(v(1)? as u32 ^ v(2)? as u32),
            "cvta" | "mov" => v(1)?,
            // The surface coordinate: a 64-bit byte offset narrowed to 32 bits.
            "cvt" if has("u32") && has("u64") => v(1)? & 0xffff_ffff,
            "mad" => u64::from((v(1)? * v(2)? + v(3)?) as u32),
            "mul" => (v(1)? as u32 as u64) * (v(2)? as u32 as u64),
            "add" if has("s64") => v(1)?.wrapping_add(v(2)?),
            "add" => u64::from((v(1)? as u32).wrapping_add(v(2)? as u32)),
            "sub" => u64::from((v(1)? as u32).wrapping_sub(v(2)? as u32)),
            "neg" => u64::from((v(1)? as u32).wrapping_neg()),
            "setp" => {
                u64::from(compare(&has, v(1)?, v(2)?).ok_or_else(|| unsupported(&ins.opcode))?)
            }
            "mapa" => mapa(v(1)?, t.ctaid, v(2)?, self.cluster)?,
            _ => return Err(unsupported(&ins.opcode)),
        }))
    }

    /// `bra`, `ret`, `bar`/`barrier` (a CTA's) and `barrier.cluster`.
    fn control(&mut self, t: &mut Thread, ins: &Ins) -> Result<(), EmulateError> {
        let has = |m: &str| ins.has(m);
        match ins.opcode[0].as_str() {
            "bra" => t.pc = self.prog.labels[arg(ins, 0)?],
            "ret" => t.done = true,
            "barrier" if has("cluster") => {
                self.cluster_barrier(t, has("arrive"), has("wait"))?;
            }
            // `bar.warp.sync 0xffffffff`: the lanes of the thread's warp wait for one another (PTX ISA
            // "bar.warp.sync"), a barrier of the warp's 32 lanes, all at this instruction.
            "bar" if has("warp") => {
                if self.v(t, ins, 0)? as u32 != u32::MAX {
                    return Err(unsupported(&ins.args));
                }
                let id = WARP_SYNC | (t.tid / WARP);
                self.cta_barrier(t, (id, WARP, false), false)?;
            }
            // `bar.sync a` (all the CTA's threads), `barrier.sync a, b` and
            // `barrier.arrive a, b` (b threads; arrive does not wait).
            _ => {
                let count = if ins.args.len() > 1 {
                    self.v(t, ins, 1)?
                } else {
                    self.ntid
                };
                if !has("arrive") && !has("sync") {
                    return Err(unsupported(&ins.opcode));
                }
                let id = self.v(t, ins, 0)?;
                let explicit = ins.args.len() > 1;
                self.cta_barrier(t, (id, count, explicit), has("arrive"))?;
            }
        }
        Ok(())
    }
}

/// Operand `i` of `ins`.
fn arg(ins: &Ins, i: usize) -> Result<&str, EmulateError> {
    ins.args
        .get(i)
        .map(String::as_str)
        .ok_or_else(|| unsupported(&ins.opcode))
}

impl Machine<'_> {
    /// `bar.sync id`, `barrier.sync id, count`, `barrier.arrive id, count`: the thread counts in
    /// the current phase of its CTA's barrier `id` and, unless it only arrives, waits for the
    /// phase to complete. `explicit`: the instruction names its count.
    ///
    /// What the PTX ISA ("bar, barrier") requires is checked, an error otherwise: a named
    /// count is a nonzero multiple of the warp size; every arrival of one phase names the same
    /// count; a barrier instruction marks its *warp's* arrival, once every non-exited lane of
    /// the warp has executed it, so the lanes of one warp execute one and the same barrier
    /// instruction in a phase (a lane at another barrier instruction on the same barrier, a
    /// `barrier.arrive` beside a `barrier.sync`, would have the warp execute more barrier
    /// instructions than intended before the barrier resets), no thread arrives twice in one
    /// phase, and no more warps arrive than the count holds.
    fn cta_barrier(
        &mut self,
        t: &mut Thread,
        (id, count, explicit): (u64, u64, bool),
        arrive: bool,
    ) -> Result<(), EmulateError> {
        let cta = t.ctaid;
        let misuse =
            |what: String| EmulateError::Barrier(format!("barrier {id} of CTA {cta}: {what}"));
        if explicit && (count == 0 || count % WARP != 0) {
            return Err(misuse(format!(
                "thread count {count} is not a nonzero multiple of the warp size"
            )));
        }
        let pc = t.pc - 1;
        let b = self.barrier.entry((cta, id)).or_default();
        match b.count {
            Some(c) if c != count => {
                return Err(misuse(format!(
                    "one phase with thread counts {c} and {count} (every use of a barrier in a \
                     phase names the same count)"
                )))
            }
            _ => b.count = Some(count),
        }
        let warp = t.tid / WARP;
        match b.warps.get(&warp) {
            Some(&other) if other != pc => {
                return Err(misuse(format!(
                    "lanes of warp {warp} execute two barrier instructions on it in one phase \
                     (instructions {other} and {pc}): a barrier marks its warp's arrival once, \
                     so a warp's lanes must reach it at one instruction"
                )))
            }
            Some(_) => {}
            None => {
                b.warps.insert(warp, pc);
                if b.warps.len() as u64 * WARP > count {
                    return Err(misuse(format!(
                        "{} warps arrive in one phase of count {count}",
                        b.warps.len()
                    )));
                }
            }
        }
        if !b.threads.insert(t.tid) {
            return Err(misuse(format!(
                "thread {} arrives twice in one phase",
                t.tid
            )));
        }
        b.arrived += 1;
        if b.arrived == count {
            *b = BarrierState {
                completed: b.completed + 1,
                ..BarrierState::default()
            };
        } else if !arrive {
            t.waiting = Some(((cta, id), b.completed));
        }
        Ok(())
    }

    /// `barrier.cluster.arrive` (counts the thread in the current phase of its cluster's
    /// barrier) and `barrier.cluster.wait` (waits for that phase to complete): a phase
    /// completes when every thread of the cluster's CTAs has arrived (PTX ISA
    /// "barrier.cluster").
    fn cluster_barrier(
        &mut self,
        t: &mut Thread,
        arrive: bool,
        wait: bool,
    ) -> Result<(), EmulateError> {
        let key = (CLUSTER_BARRIER | (t.ctaid / self.cluster), 0);
        match (arrive, wait, t.arrived) {
            (true, false, None) => {
                let count = self.cluster * self.ntid;
                let b = self.barrier.entry(key).or_default();
                t.arrived = Some(b.completed);
                b.arrived += 1;
                if b.arrived == count {
                    b.arrived = 0;
                    b.completed += 1;
                }
                Ok(())
            }
            (false, true, Some(generation)) => {
                t.arrived = None;
                t.waiting = Some((key, generation));
                Ok(())
            }
            _ => Err(unsupported("barrier.cluster out of arrive/wait order")),
        }
    }
}

/// The base of the location buffer's second mapping (`p_alias`; past the counters,
/// [`count::COUNTS_BASE`], and every CTA's shared memory, [`SHARED`]): an address in it is
/// the buffer's word at the same offset.
const ALIAS_MAPPING: u64 = 16 << 40;
/// Surface object handles (`p_surf<k>`: this plus k), opaque to the kernel as on a GPU.
const SURFACE_OBJECTS: u64 = 17 << 40;
/// Where the surface array's words live in the emulator's one address space.
const SURFACE_ARRAY: u64 = 18 << 40;

/// An address in the second mapping of the location buffer as the buffer's own: both
/// mappings are of the same physical memory.
fn alias_to_buffer(a: u64) -> u64 {
    if (ALIAS_MAPPING..ALIAS_MAPPING + (1 << 40)).contains(&a) {
        a - ALIAS_MAPPING + BASES[0].1
    } else {
        a
    }
}

const BASES: [(&str, u64); 7] = [
    ("p_locs", 1 << 40),
    ("p_results", 2 << 40),
    ("p_roles", 3 << 40),
    ("p_addrs", 4 << 40),
    ("p_barrier", 5 << 40),
    ("p_scratch", 6 << 40),
    ("p_stress", 7 << 40),
];

fn load(mem: &mut HashMap<u64, u32>, base: u64, words: &[u32]) {
    for (i, w) in words.iter().enumerate() {
        mem.insert(base + 4 * i as u64, *w);
    }
}

fn read(mem: &HashMap<u64, u32>, base: u64, n: usize) -> Vec<u32> {
    (0..n as u64)
        .map(|i| *mem.get(&(base + 4 * i)).unwrap_or(&0))
        .collect()
}

/// One emulated launch.
struct Launch {
    histogram: Histogram,
    /// Spin-barrier timeouts the kernel counted.
    timeouts: u32,
    steps: u64,
    apart: layout::Apart,
}

/// One emulated launch of the generated kernel `prog` for geometry `g` and plan `plan`.
/// `seed: None` runs threads one after another in global-id order, each to completion.
fn launch_program(
    prog: &Program,
    g: &Geometry,
    plan: &IterationPlan,
    terms: &[crate::atomics::litmus::Term],
    seed: Option<u64>,
) -> Result<Launch, EmulateError> {
    let t = layout::tables(g, plan);
    let mut m = Machine {
        prog,
        mem: HashMap::new(),
        params: BASES.iter().map(|(n, b)| (n.to_string(), *b)).collect(),
        ntid: u64::from(g.params.workgroup_size),
        cluster: u64::from(g.cluster),
        barrier: HashMap::new(),
        proxy: proxy::AsyncState::new(prog),
    };
    m.params
        .insert("p_testing".into(), u64::from(t.testing_threads));
    m.params.insert("p_alias".into(), ALIAS_MAPPING);
    for k in 0..64 {
        m.params.insert(format!("p_surf{k}"), SURFACE_OBJECTS + k);
    }
    load(&mut m.mem, BASES[0].1, &g.initial_memory(&t.addrs));
    if !g.surface_backed.is_empty() {
        // The array mirrors the buffer: its initial image is the buffer's.
        load(&mut m.mem, SURFACE_ARRAY, &g.initial_memory(&t.addrs));
    }
    load(&mut m.mem, BASES[2].1, &t.roles);
    load(&mut m.mem, BASES[3].1, &t.addrs);
    load(&mut m.mem, BASES[6].1, &t.stress_word);
    let mut threads: Vec<Thread> = (0..g.total_threads())
        .map(|i| Thread {
            pc: 0,
            regs: HashMap::new(),
            done: false,
            waiting: None,
            arrived: None,
            tid: u64::from(i % g.params.workgroup_size),
            ctaid: u64::from(i / g.params.workgroup_size),
        })
        .collect();
    let steps = schedule(&mut m, &mut threads, seed)?;
    let n = g.instances() as usize;
    let res = read(&m.mem, BASES[1].1, n * g.slots.len());
    let mut mem = read(&m.mem, BASES[0].1, g.location_words());
    // A surface-backed location's final value is the array's word.
    if !g.surface_backed.is_empty() {
        let array = read(&m.mem, SURFACE_ARRAY, g.location_words());
        super::surface::merge_final(g, &t, &array, &mut mem);
    }
    let mut histogram = Histogram::new();
    let apart = layout::decode(g, terms, &t, &res, &mem, &mut histogram)?;
    Ok(Launch {
        histogram,
        timeouts: read(&m.mem, BASES[4].1, 2)[1],
        steps,
        apart,
    })
}

/// Whether a test's threads fit a set's units (independently of `Geometry`): each thread of
/// an `inter_cta` test in its own testing CTA, each of an `intra_cta` test in its own warp.
/// `Err(units)` when they do not.
#[cfg(test)]
pub(crate) fn fits(test: &LitmusTest, p: &StressParams) -> Result<(), u32> {
    let units = if test.name.ends_with("inter_cta") {
        p.testing_workgroups
    } else if test.name.ends_with("intra_cluster") {
        // One cluster (the threads' count, to a power of two, at least 2) of testing CTAs.
        let cluster = (test.threads.len() as u32).max(2).next_power_of_two();
        return if p.testing_workgroups < cluster {
            Err(p.testing_workgroups)
        } else {
            Ok(())
        };
    } else if test.name.ends_with("inter_cluster") {
        // Clusters of two CTAs.
        p.testing_workgroups / 2
    } else {
        p.workgroup_size / 32
    };
    if test.threads.len() as u32 <= units {
        Ok(())
    } else {
        Err(units)
    }
}

#[cfg(test)]
mod barrier_tests;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

mod count;
mod proxy;
pub use count::{
    emulate_counting, launch_batch, launch_counting, CountedLaunch, EmulatedModule,
    EmulatorExecutor,
};
pub(crate) use proxy::launch_proxy;
#[cfg(test)]
pub(crate) use proxy::IGNORE_PROXY_FENCE;
