//! One PTX kernel per litmus test, GPUHarbor / MC Mutants style: every testing thread plays
//! each of the test's threads for a different instance (the [`super::layout`] tables say
//! which), after optional pre-stress and a spin barrier; the other CTAs hammer stress lines.
//!
//! Each litmus operation becomes exactly the PTX instruction its semantic and scope name
//! (ptx-interop 13.2 §4 maps C++ atomics onto these): `ld.acquire.gpu.global.u32`,
//! `st.release.cta.global.u32`, `atom.relaxed.sys.global.add.u32`, `fence.sc.gpu`, plain
//! `ld.global.u32` / `st.global.u32` for weak accesses. Constants are loaded into registers
//! before the barrier so that the test's accesses run back to back.
//!
//! Parameters, in order: locations, results, roles, addrs, barrier (two words: arrival count,
//! spin timeouts), scratch, stress words (all `.u64` device pointers), testing threads (`.u32`).
//!
//! Tests with labels, branches, jumps or barriers, and tests whose threads share some CTAs
//! and not others, use the one-role-per-thread layout ([`super::layout::Dedicated`]): each
//! thread branches to the code of its one role. There, a backward jump counts against
//! [`LOOP_CAP`]: a thread that reaches it writes the instance's "did not terminate" slot and
//! returns, so a spin loop never hangs the kernel and never yields a made-up outcome. A test
//! barrier becomes `barrier.sync`/`barrier.arrive` (PTX ISA "bar, barrier": the non-aligned
//! forms, since the 32 lanes of a warp play 32 instances and may diverge in spin loops) on a
//! hardware barrier id of the instance's warp group, with count 32 x quorum. Each test barrier
//! is one instruction that every lane of the warp executes (a lane stopped at the cap goes on
//! to it too: [`cap_check`]), since a barrier counts whole warps and a warp must not execute
//! two barrier instructions on one barrier in one phase; each hardware barrier of a CTA serves
//! one test CTA's one barrier id, so all its uses name one thread count.
//!
//! What a kernel cannot express is refused naming the construct and why
//! ([`KernelError::Inexpressible`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::binding::{self, Binding, Bindings};
use super::count::{self, OutcomeSpace};
use super::layout::{Dedicated, Geometry, StressPattern, PAST_MODEL_BOUND};
use crate::atomics::litmus::{
    AtomOp, BranchCond, LitmusTest, LocalOp, Op, Operand, Proxy, ProxyFenceKind, Sem,
};

/// The kernel's entry point.
pub(crate) const KERNEL: &str = "gpucts_litmus";
/// PTX ISA version and target: the driver of the target machine (R580) JIT-compiles PTX up to
/// ISA 8.8; 8.0 has every instruction the runner emits for sm_90.
pub(crate) const PTX_VERSION: &str = "8.0";
pub(crate) const TARGET: &str = "sm_90";
/// Spin-barrier polls before a testing thread gives up waiting (and counts a timeout).
pub(crate) const SPIN_LIMIT: u32 = 1 << 20;
/// The shared-memory array of a CTA's locations ([`Geometry::shared`]).
pub(crate) const SMEM: &str = "gpucts_smem";
/// Backward jumps one thread may take in the test's code before it stops and flags its
/// instance "did not terminate within LOOP_CAP" ([`super::layout::DID_NOT_TERMINATE`]).
pub(crate) const LOOP_CAP: u32 = 1 << 12;

/// The loop bound of the model's verdict a kernel is judged by ([`crate::atomics::model`]'s
/// `--unroll`, Dat3M's 1): the model's paths end at a backward jump to a label whose body
/// already ran this many times. A thread that runs an iteration *with effects* past it
/// ([`bound_check`]) made an execution the model never enumerated, so its instance is
/// flagged [`PAST_MODEL_BOUND`] and not judged; iterations without effects (spins) do not
/// count, as the model's spin-loop rule folds them away.
pub(crate) const MODEL_UNROLL: u32 = crate::atomics::model::DEFAULT_UNROLL;

/// Where the labels of `ops` that backward jumps target (loop heads) stand, in order; loop
/// head `k` is the `k`th of them.
fn loop_heads(ops: &[Op]) -> Vec<usize> {
    let mut heads: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(oi, op)| backward(ops, *oi, op))
        .filter_map(|(_, op)| match op {
            Op::Goto { target } | Op::Branch { target, .. } => ops
                .iter()
                .position(|o| matches!(o, Op::Label { name } if name == target)),
            _ => None,
        })
        .collect();
    heads.sort_unstable();
    heads.dedup();
    heads
}

/// The most loop heads a thread of `test` has (registers `%k_e<k>`, `%k_n<k>` per head).
fn max_loop_heads(test: &LitmusTest) -> usize {
    test.threads
        .iter()
        .map(|t| loop_heads(&t.ops).len())
        .max()
        .unwrap_or(0)
}

/// After op `i` of `thread`, whose loop heads have `heads_live` live: mark the iteration of
/// every loop it is in as effectful (`%k_e<k>`) when the model's unrolling would
/// ([`crate::atomics::litmus::Thread::iteration_effect`]): a store, RMW, reduction or
/// barrier, or a write of a register live at that loop's head; a cas only when it succeeds
/// (its old value equals the compare value).
fn effect_marks(
    thread: &crate::atomics::litmus::Thread,
    i: usize,
    heads_live: &[std::collections::BTreeSet<&str>],
    t: usize,
    regs: &mut Regs,
    what: &str,
) -> Result<String, KernelError> {
    let mut out = String::new();
    let mut cas_heads = Vec::new();
    for (k, live) in heads_live.iter().enumerate() {
        if thread.iteration_effect(i, live, false) {
            let _ = writeln!(out, "\tmov.u32 %k_e{k}, 1;");
        } else if thread.iteration_effect(i, live, true) {
            cas_heads.push(k);
        }
    }
    if let (
        false,
        Op::Atom {
            op: AtomOp::Cas,
            reg,
            cmp: Some(c),
            ..
        },
    ) = (cas_heads.is_empty(), &thread.ops[i])
    {
        let _ = writeln!(
            out,
            "\tsetp.eq.u32 %k_pb, {}, {};",
            regs.var(t, reg),
            regs.operand(t, c, what)?
        );
        for k in cas_heads {
            let _ = writeln!(out, "\t@%k_pb mov.u32 %k_e{k}, 1;");
        }
    }
    Ok(out)
}

/// At a taken backward jump to loop head `k`: an iteration with effects counts against
/// [`MODEL_UNROLL`], and one past it sets `%k_past` (the model's path would have ended here,
/// cut by its bound).
fn bound_check(k: usize) -> String {
    format!(
        "add.u32 %k_n{k}, %k_n{k}, %k_e{k};\n\tsetp.ge.u32 %k_pb, %k_n{k}, {MODEL_UNROLL};\n\
         \t@%k_pb or.b32 %k_past, %k_past, %k_e{k};\n\t"
    )
}

/// Why a litmus test has no GPU kernel: an operation (`at`: the test and the operation) the
/// generator cannot emit as the test states it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    #[error("{at}: a {sem} access needs a scope")]
    NoScope { at: String, sem: String },
    #[error("{at}: constant {value} does not fit in 32 bits")]
    Wide { at: String, value: i64 },
    #[error("unknown location `{0}`")]
    UnknownLocation(String),
    /// `instr` (ld, st, atom, red, fence) with semantics it does not take.
    #[error("{at}: {instr} cannot be {sem}")]
    Semantics {
        at: String,
        instr: &'static str,
        sem: String,
    },
    #[error("{at}: cas without a compare value")]
    CasWithoutCompare { at: String },
    #[error("{at}: there is no red.{op}")]
    NoRed { at: String, op: String },
    #[error(
        "{at}: the GPU litmus runner does not generate `{instr}` yet (control flow, \
         barriers and proxies are checked by the model only)"
    )]
    NotGenerated { at: String, instr: String },
    /// The counting kernel cannot read an outcome's term.
    #[error(transparent)]
    Count(#[from] count::CountError),
    /// A construct no kernel of this runner can express, and why.
    #[error("{at}: `{construct}`: {why}")]
    Inexpressible {
        at: String,
        construct: String,
        why: String,
    },
}

fn inexpressible(at: &str, construct: impl Into<String>, why: impl Into<String>) -> KernelError {
    KernelError::Inexpressible {
        at: at.to_string(),
        construct: construct.into(),
        why: why.into(),
    }
}

/// Why the proxy constructs have no kernel here.
const TEXTURE_WHY: &str = "the texture proxy needs a CUtexObject bound to the location buffer; \
    the runner binds none";
const CONSTANT_WHY: &str = "the constant proxy reads the .const bank, which the test's generic \
    stores cannot reach (a kernel cannot store to constant memory)";
const PROXY_FENCE_WHY: &str = "not a PTX instruction: PTX's fence.proxy takes .alias, .async \
    and .tensormap only (ptxas 12.9: unknown modifier); the model's texture, surface and \
    constant proxy fences have no instruction a kernel could emit";
const ASYNC_WHY: &str = "the async proxy's tests run with their own kernel \
    (atomics::gpu::proxy: 16-byte copies, an mbarrier per instance)";

fn strong_q(
    sem: Sem,
    scope: Option<crate::atomics::litmus::Scope>,
    what: &str,
) -> Result<String, KernelError> {
    Ok(match sem {
        Sem::Weak => String::new(),
        _ => {
            let sc = scope.ok_or_else(|| KernelError::NoScope {
                at: what.to_string(),
                sem: sem.name().to_string(),
            })?;
            format!(".{}.{}", sem.name(), sc.name())
        }
    })
}

/// The `atom`/`red` operation and type suffix, e.g. `add.u32`, `exch.b32`.
fn rmw_suffix(op: AtomOp) -> &'static str {
    match op {
        AtomOp::Add | AtomOp::Sub => "add.u32",
        AtomOp::Exch => "exch.b32",
        AtomOp::And => "and.b32",
        AtomOp::Or => "or.b32",
        AtomOp::Xor => "xor.b32",
        AtomOp::Min => "min.u32",
        AtomOp::Max => "max.u32",
        AtomOp::Cas => "cas.b32",
        AtomOp::Inc => "inc.u32",
        AtomOp::Dec => "dec.u32",
    }
}

struct Regs {
    /// (thread, register) → `%v<k>`.
    vars: BTreeMap<(usize, String), usize>,
    /// constant → `%c<k>`.
    consts: BTreeMap<u32, usize>,
}

impl Regs {
    fn var(&mut self, t: usize, r: &str) -> String {
        let n = self.vars.len();
        format!("%v{}", *self.vars.entry((t, r.to_string())).or_insert(n))
    }
    fn konst(&mut self, v: i64, what: &str) -> Result<String, KernelError> {
        let w = u32::try_from(v)
            .or_else(|_| i32::try_from(v).map(|x| x as u32))
            .map_err(|_| KernelError::Wide {
                at: what.to_string(),
                value: v,
            })?;
        let n = self.consts.len();
        Ok(format!("%c{}", *self.consts.entry(w).or_insert(n)))
    }
    fn operand(&mut self, t: usize, o: &Operand, what: &str) -> Result<String, KernelError> {
        match o {
            Operand::Const(v) => self.konst(*v, what),
            Operand::Reg(r) => Ok(self.var(t, r)),
        }
    }
}

/// The state space of the test's locations: in a cluster launch, shared memory is reached
/// through the `.shared::cluster` window (PTX ISA "Distributed shared memory": the other CTAs'
/// shared memory, and the thread's own, at the addresses `mapa` gives).
fn space(g: &Geometry) -> &'static str {
    match (g.shared, g.cluster > 1) {
        (false, _) => ".global",
        (true, false) => ".shared",
        (true, true) => ".shared::cluster",
    }
}

/// A test label as a kernel label of role `t` (labels are kernel-wide in PTX).
fn label(t: usize, name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("L{t}_{clean}")
}

/// The PTX comparison of a test branch (signed, as the model compares 64-bit values; the
/// test's constants fit 32 bits).
fn setp_cmp(c: BranchCond) -> &'static str {
    match c {
        BranchCond::Eq => "eq",
        BranchCond::Ne => "ne",
        BranchCond::Lt => "lt",
        BranchCond::Le => "le",
        BranchCond::Gt => "gt",
        BranchCond::Ge => "ge",
    }
}

/// Whether barriers follow op `oi` of `ops`.
fn barriers_after(oi: usize, ops: &[Op]) -> bool {
    ops[oi + 1..]
        .iter()
        .any(|o| matches!(o, Op::Barrier { .. }))
}

/// A backward jump's count against [`LOOP_CAP`]: past it, the thread goes to `CAP<t>`; or,
/// when barriers follow the jump, it marks itself stopped (`%k_stop`) and leaves the loop
/// through its exit (`STOP<t>_<op>`, right after the jump), so that it reaches the barriers
/// that follow at the same instructions as the threads that left the loop normally, and goes
/// to `CAP<t>` at the end of its role. PTX ISA "bar, barrier": a barrier instruction marks its
/// *warp's* arrival once every non-exited thread of the warp has executed it, and a warp
/// must not execute more barrier instructions on one barrier than intended before the barrier
/// resets; the 32 lanes of a warp play 32 instances, some of which may stop at the cap while
/// others leave the loop, so a separate arrive path for stopped lanes would have one warp
/// execute two barrier instructions (sync and arrive) on one barrier in one phase.
fn cap_check(t: usize, oi: usize, ops: &[Op]) -> String {
    if barriers_after(oi, ops) {
        format!(
            "add.u32 %k_iter, %k_iter, 1;\n\tsetp.ge.u32 %k_p, %k_iter, {LOOP_CAP};\n\
             \t@%k_p mov.u32 %k_stop, 1;\n\t@%k_p bra STOP{t}_{oi};\n\t"
        )
    } else {
        format!(
            "add.u32 %k_iter, %k_iter, 1;\n\tsetp.ge.u32 %k_p, %k_iter, {LOOP_CAP};\n\t@%k_p bra CAP{t};\n\t"
        )
    }
}

/// Whether role `t` of `test` has a backward jump followed by barriers (its threads may stop
/// at the cap and go on to those barriers: [`cap_check`]).
fn stops_before_barriers(test: &LitmusTest, t: usize) -> bool {
    let ops = &test.threads[t].ops;
    ops.iter()
        .enumerate()
        .any(|(oi, op)| backward(ops, oi, op) && barriers_after(oi, ops))
}

/// Whether op `oi` is a jump to a label at or before it.
fn backward(ops: &[Op], oi: usize, op: &Op) -> bool {
    match op {
        Op::Goto { target } | Op::Branch { target, .. } => ops[..=oi]
            .iter()
            .any(|l| matches!(l, Op::Label { name } if name == target)),
        _ => false,
    }
}

/// A test barrier as the hardware barrier of the instance's warp group ([`Dedicated`]):
/// `barrier.sync` or `barrier.arrive` (`arrive`), count 32 x quorum.
fn barrier_line(
    g: &Geometry,
    test: &LitmusTest,
    t: usize,
    op: &Op,
    arrive: bool,
    what: &str,
) -> Result<String, KernelError> {
    let d = g.dedicated.as_ref().ok_or_else(|| {
        inexpressible(
            what,
            "bar",
            "a barrier needs the one-role-per-thread layout",
        )
    })?;
    let id = super::layout::barrier_id(&test.threads[t], op).ok_or_else(|| {
        inexpressible(
            what,
            crate::atomics::litmus::dat3m::instr_text(op),
            "the barrier id is not fixed before the test runs",
        )
    })?;
    let idx = d.barrier_ids.iter().position(|&x| x == id).unwrap_or(0);
    let q = barrier_quorum(test, t, op).unwrap_or(1);
    // The warp's lanes converge first (every lane reaches this one instruction, stopped at
    // the cap or not: `cap_check`), so the barrier instruction runs once for the whole warp.
    Ok(format!(
        "add.u32 %k_hw, %k_gb, {idx};\n\tbar.warp.sync 0xffffffff;\n\tbarrier.{} %k_hw, {};",
        if arrive { "arrive" } else { "sync" },
        32 * q
    ))
}

/// The address operand of location `loc` for role `t`.
fn addr(g: &Geometry, t: usize, loc: &str) -> Result<String, KernelError> {
    g.location_index(loc)
        .map(|j| format!("[%a{t}_{j}]"))
        .ok_or_else(|| KernelError::UnknownLocation(loc.to_string()))
}

fn semantics(at: &str, instr: &'static str, sem: Sem, allowed: &[Sem]) -> Result<(), KernelError> {
    if allowed.contains(&sem) {
        Ok(())
    } else {
        Err(KernelError::Semantics {
            at: at.to_string(),
            instr,
            sem: sem.name().to_string(),
        })
    }
}

/// The line of a memory operation (`ld`, `st`, `atom`, `red`); `None` for any other.
fn memory_line(
    g: &Geometry,
    op: &Op,
    t: usize,
    regs: &mut Regs,
    what: &str,
    out: &mut String,
) -> Result<Option<String>, KernelError> {
    Ok(Some(match op {
        Op::Ld {
            reg,
            loc,
            sem,
            scope,
        } => {
            semantics(what, "ld", *sem, &[Sem::Weak, Sem::Relaxed, Sem::Acquire])?;
            format!(
                "ld{}{}.u32 {}, {};",
                strong_q(*sem, *scope, what)?,
                space(g),
                regs.var(t, reg),
                addr(g, t, loc)?
            )
        }
        Op::St {
            loc,
            val,
            sem,
            scope,
        } => {
            semantics(what, "st", *sem, &[Sem::Weak, Sem::Relaxed, Sem::Release])?;
            format!(
                "st{}{}.u32 {}, {};",
                strong_q(*sem, *scope, what)?,
                space(g),
                addr(g, t, loc)?,
                regs.operand(t, val, what)?
            )
        }
        Op::Atom {
            op,
            reg,
            loc,
            val,
            cmp,
            sem,
            scope,
        } => {
            let rmw = [Sem::Relaxed, Sem::Acquire, Sem::Release, Sem::AcqRel];
            semantics(what, "atom", *sem, &rmw)?;
            let v = rmw_value(*op, val, t, regs, what, out)?;
            let head = format!(
                "atom.{}.{}{}.{} {}, {}",
                sem.name(),
                scope.name(),
                space(g),
                rmw_suffix(*op),
                regs.var(t, reg),
                addr(g, t, loc)?
            );
            match (op, cmp) {
                (AtomOp::Cas, Some(c)) => format!("{head}, {}, {v};", regs.operand(t, c, what)?),
                (AtomOp::Cas, None) => {
                    return Err(KernelError::CasWithoutCompare { at: what.into() })
                }
                _ => format!("{head}, {v};"),
            }
        }
        Op::Red {
            op,
            loc,
            val,
            sem,
            scope,
        } => {
            semantics(
                what,
                "red",
                *sem,
                &[Sem::Relaxed, Sem::Release, Sem::AcqRel],
            )?;
            if matches!(op, AtomOp::Exch | AtomOp::Cas) {
                return Err(KernelError::NoRed {
                    at: what.into(),
                    op: op.name().to_string(),
                });
            }
            let v = rmw_value(*op, val, t, regs, what, out)?;
            // PTX's red takes .relaxed and .release only; an acq_rel reduction is the same RMW
            // as `atom.acq_rel` whose old value is dropped.
            let (instr, dst) = if *sem == Sem::AcqRel {
                ("atom", "%k_tmp, ")
            } else {
                ("red", "")
            };
            format!(
                "{instr}.{}.{}{}.{} {dst}{}, {v};",
                sem.name(),
                scope.name(),
                space(g),
                rmw_suffix(*op),
                addr(g, t, loc)?
            )
        }
        _ => return Ok(None),
    }))
}

/// The line of a register operation (`mov`, arithmetic); `None` for any other.
fn register_line(
    op: &Op,
    t: usize,
    regs: &mut Regs,
    what: &str,
) -> Result<Option<String>, KernelError> {
    Ok(Some(match op {
        Op::Mov { reg, val } => {
            let v = regs.operand(t, val, what)?;
            format!("mov.b32 {}, {v};", regs.var(t, reg))
        }
        Op::Local { op, reg, a, b } => {
            let (a, b) = (regs.operand(t, a, what)?, regs.operand(t, b, what)?);
            let d = regs.var(t, reg);
            match op {
                LocalOp::Add => format!("add.s32 {d}, {a}, {b};"),
                LocalOp::Sub => format!("sub.s32 {d}, {a}, {b};"),
                LocalOp::Mul => format!("mul.lo.s32 {d}, {a}, {b};"),
                LocalOp::And => format!("and.b32 {d}, {a}, {b};"),
                LocalOp::Or => format!("or.b32 {d}, {a}, {b};"),
                LocalOp::Xor => format!("xor.b32 {d}, {a}, {b};"),
                // The model divides by zero to 0 (LocalOp::apply); PTX leaves it undefined.
                LocalOp::Div => format!(
                    "setp.eq.s32 %k_p, {b}, 0;\n\tdiv.s32 {d}, {a}, {b};\n\t@%k_p mov.b32 {d}, 0;"
                ),
            }
        }
        _ => return Ok(None),
    }))
}

/// The line of a surface access (`sust`/`suld`, PTX ISA "Surface instructions": `.b` mode,
/// the x coordinate in bytes, `.trap` on an out-of-range coordinate, which never happens: the
/// word's offset lies inside the array that mirrors the location buffer) or of
/// `fence.proxy.alias`; `None` for any other operation. The surface proxy has weak accesses
/// only (PTX ISA 7.5 "Proxies").
fn proxy_line(
    g: &Geometry,
    test: &LitmusTest,
    op: &Op,
    t: usize,
    regs: &mut Regs,
    what: &str,
) -> Result<Option<String>, KernelError> {
    let (loc, sem) = match op {
        Op::ProxyFence {
            kind: ProxyFenceKind::Alias,
        } => return Ok(Some("fence.proxy.alias;".into())),
        Op::ProxyLd {
            proxy: Proxy::Surface,
            loc,
            sem,
            ..
        }
        | Op::ProxySt {
            proxy: Proxy::Surface,
            loc,
            sem,
            ..
        } => (loc, *sem),
        _ => return Ok(None),
    };
    if sem != Sem::Weak {
        let instr = if matches!(op, Op::ProxyLd { .. }) {
            "suld"
        } else {
            "sust"
        };
        return Err(KernelError::Semantics {
            at: what.into(),
            instr,
            sem: sem.name().to_string(),
        });
    }
    let j = g
        .location_index(loc)
        .ok_or_else(|| KernelError::UnknownLocation(loc.clone()))?;
    let object = match bind(test, g)?.per_location[j] {
        Binding::Surface { object, .. } => object,
        _ => return Err(KernelError::UnknownLocation(loc.clone())),
    };
    let coordinate = format!("cvt.u32.u64 %k_sx, %a{t}_{j};\n\t");
    Ok(Some(match op {
        Op::ProxySt { val, .. } => format!(
            "{coordinate}sust.b.1d.b32.trap [%k_surf{object}, {{%k_sx}}], {{{}}};",
            regs.operand(t, val, what)?
        ),
        Op::ProxyLd { reg, .. } => format!(
            "{coordinate}suld.b.1d.b32.trap {{{}}}, [%k_surf{object}, {{%k_sx}}];",
            regs.var(t, reg)
        ),
        _ => unreachable!("matched above"),
    }))
}

/// The bindings of `test`'s locations ([`binding`]), a refusal as [`KernelError::Inexpressible`].
pub(crate) fn bind(test: &LitmusTest, g: &Geometry) -> Result<Bindings, KernelError> {
    binding::bindings(test, &g.locations).map_err(|r| KernelError::Inexpressible {
        at: r.at,
        construct: r.construct,
        why: r.why,
    })
}

/// The refusal of a proxy operation no kernel of this runner expresses.
fn proxy_refusal(op: &Op, what: &str) -> Option<KernelError> {
    match op {
        Op::ProxyFence { kind } => {
            let construct = format!("fence.proxy.{}", kind.name());
            let why = match kind {
                ProxyFenceKind::Async => ASYNC_WHY,
                _ => PROXY_FENCE_WHY,
            };
            Some(inexpressible(what, construct, why))
        }
        Op::ProxyLd { proxy, .. } | Op::ProxySt { proxy, .. } => {
            let why = match proxy {
                Proxy::Texture => TEXTURE_WHY,
                Proxy::Constant => CONSTANT_WHY,
                Proxy::Async => ASYNC_WHY,
                // Surface accesses are lines of their own (`proxy_line`); the generic proxy
                // is reached by ld/st/atom/red.
                Proxy::Surface | Proxy::Generic => "not an operation of a kernel",
            };
            let text = crate::atomics::litmus::dat3m::instr_text(op);
            Some(inexpressible(what, text, why))
        }
        Op::BulkCopy { .. } | Op::MbarWait { .. } => Some(inexpressible(
            what,
            crate::atomics::litmus::dat3m::instr_text(op),
            ASYNC_WHY,
        )),
        _ => None,
    }
}

/// A jump (`goto`, or a branch with its comparison) of role `t` at op `oi`; a backward one
/// counts against [`LOOP_CAP`].
fn jump_line(
    test: &LitmusTest,
    (t, oi): (usize, usize),
    heads: &[usize],
    regs: &mut Regs,
    what: &str,
) -> Result<Option<String>, KernelError> {
    let ops = &test.threads[t].ops;
    let (target, construct) = match &ops[oi] {
        Op::Goto { target } => (target, format!("goto {target}")),
        Op::Branch { cond, target, .. } => (target, format!("{} {target}", cond.mnemonic())),
        _ => return Ok(None),
    };
    let at = ops
        .iter()
        .position(|o| matches!(o, Op::Label { name: n } if n == target))
        .ok_or_else(|| inexpressible(what, construct, "no such label in this thread"))?;
    let (cap, exit, check) = if at <= oi {
        let exit = if barriers_after(oi, ops) {
            format!("\nSTOP{t}_{oi}:")
        } else {
            String::new()
        };
        let k = heads.iter().position(|&h| h == at).unwrap_or_default();
        (cap_check(t, oi, ops), exit, Some(bound_check(k)))
    } else {
        (String::new(), String::new(), None)
    };
    Ok(Some(match (&ops[oi], check) {
        (Op::Branch { cond, a, b, .. }, None) => {
            let (a, b) = (regs.operand(t, a, what)?, regs.operand(t, b, what)?);
            format!(
                "{cap}setp.{}.s32 %k_p, {a}, {b};\n\t@%k_p bra {};{exit}",
                setp_cmp(*cond),
                label(t, target)
            )
        }
        // A taken backward branch counts its iteration against the model's bound first.
        (Op::Branch { cond, a, b, .. }, Some(check)) => {
            let (a, b) = (regs.operand(t, a, what)?, regs.operand(t, b, what)?);
            format!(
                "{cap}setp.{}.s32 %k_p, {a}, {b};\n\t@%k_p bra NJ{t}_{oi};\n\t{check}bra {};\n\
                 NJ{t}_{oi}:{exit}",
                setp_cmp(cond.negate()),
                label(t, target)
            )
        }
        (_, check) => format!(
            "{cap}{}bra {};{exit}",
            check.unwrap_or_default(),
            label(t, target)
        ),
    }))
}

fn thread_ops(
    g: &Geometry,
    test: &LitmusTest,
    t: usize,
    regs: &mut Regs,
    out: &mut String,
) -> Result<(), KernelError> {
    let thread = &test.threads[t];
    let heads = loop_heads(&thread.ops);
    let live = thread.live_registers();
    let heads_live: Vec<_> = heads.iter().map(|&at| live[at].clone()).collect();
    for k in 0..heads.len() {
        let _ = writeln!(out, "\tmov.u32 %k_n{k}, 0;\n\tmov.u32 %k_e{k}, 0;");
    }
    for (oi, op) in test.threads[t].ops.iter().enumerate() {
        let what = format!("`{}` P{t} op {}", test.name, oi + 1);
        if let Some(line) = proxy_line(g, test, op, t, regs, &what)? {
            let _ = writeln!(out, "\t{line}");
            out.push_str(&effect_marks(thread, oi, &heads_live, t, regs, &what)?);
            continue;
        }
        if let Some(e) = proxy_refusal(op, &what) {
            return Err(e);
        }
        let line = match op {
            Op::Fence { sem, scope } => {
                let fences = [Sem::Sc, Sem::AcqRel, Sem::Acquire, Sem::Release];
                semantics(&what, "fence", *sem, &fences)?;
                format!("fence.{}.{};", sem.name(), scope.name())
            }
            Op::Label { name } => {
                let _ = writeln!(out, "{}:", label(t, name));
                // A loop head: the iteration starting here has had no effect yet.
                if let Some(k) = heads.iter().position(|&h| h == oi) {
                    let _ = writeln!(out, "\tmov.u32 %k_e{k}, 0;");
                }
                continue;
            }
            Op::Barrier { arrive, .. } => barrier_line(g, test, t, op, *arrive, &what)?,
            _ => {
                let line = match memory_line(g, op, t, regs, &what, out)? {
                    Some(l) => Some(l),
                    None => register_line(op, t, regs, &what)?,
                };
                match line {
                    Some(l) => l,
                    None => jump_line(test, (t, oi), &heads, regs, &what)?.ok_or_else(|| {
                        inexpressible(&what, format!("{op:?}"), "not an operation of a kernel")
                    })?,
                }
            }
        };
        let _ = writeln!(out, "\t{line}");
        out.push_str(&effect_marks(thread, oi, &heads_live, t, regs, &what)?);
    }
    Ok(())
}

/// The operand of an RMW; `sub` (Dat3M's, not PTX's) becomes `add` of the negation.
fn rmw_value(
    op: AtomOp,
    val: &Operand,
    t: usize,
    regs: &mut Regs,
    what: &str,
    out: &mut String,
) -> Result<String, KernelError> {
    match (op, val) {
        (AtomOp::Sub, Operand::Const(v)) => regs.konst(v.wrapping_neg(), what),
        (AtomOp::Sub, Operand::Reg(r)) => {
            let _ = writeln!(out, "\tneg.s32 %k_neg, {};", regs.var(t, r));
            Ok("%k_neg".into())
        }
        _ => regs.operand(t, val, what),
    }
}

fn stress_loop(label: &str, iterations: u32, pattern: StressPattern, out: &mut String) {
    if iterations == 0 {
        return;
    }
    let st = |v: &str| format!("\tst.relaxed.gpu.global.u32 [%k_sa], {v};\n");
    let ld = "\tld.relaxed.gpu.global.u32 %k_sv, [%k_sa];\n".to_string();
    let body = match pattern {
        StressPattern::StoreStore => {
            format!("{}\tadd.u32 %k_sv, %k_i, 1;\n{}", st("%k_i"), st("%k_sv"))
        }
        StressPattern::StoreLoad => format!("{}{ld}", st("%k_i")),
        StressPattern::LoadStore => format!("{ld}{}", st("%k_i")),
        StressPattern::LoadLoad => format!("{ld}{ld}"),
    };
    let _ = write!(
        out,
        "\tmov.u32 %k_i, 0;\n{label}:\n{body}\tadd.u32 %k_i, %k_i, 1;\n\
         \tsetp.lt.u32 %k_p, %k_i, {iterations};\n\t@%k_p bra {label};\n"
    );
}

/// Arrivals at each (test CTA, barrier id): (thread, op index, arrive, quorum as written).
type Arrivals = BTreeMap<(u32, i64), Vec<(usize, usize, bool, Option<i64>)>>;

fn arrivals(test: &LitmusTest) -> Arrivals {
    let mut m = Arrivals::new();
    for (t, th) in test.threads.iter().enumerate() {
        for (oi, op) in th.ops.iter().enumerate() {
            if let (Op::Barrier { arrive, quorum, .. }, Some(id)) =
                (op, super::layout::barrier_id(th, op))
            {
                let q = quorum
                    .as_ref()
                    .map(|q| super::layout::static_value(th, q).unwrap_or(i64::MIN));
                m.entry((th.cta, id)).or_default().push((t, oi, *arrive, q));
            }
        }
    }
    m
}

/// The quorum of barrier `op` of thread `t` in test threads: as written, else every arrival
/// at its id in its CTA.
fn barrier_quorum(test: &LitmusTest, t: usize, op: &Op) -> Option<u32> {
    let th = &test.threads[t];
    let id = super::layout::barrier_id(th, op)?;
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
fn check_barriers(test: &LitmusTest) -> Result<(), KernelError> {
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
            if super::layout::barrier_id(th, op).is_none() {
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
                        super::layout::barrier_id(th, op).map(|id| ((th.cta, id), *arrive))
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

/// Role `t`'s code in the one-role-per-thread kernel: its instance's addresses and barrier
/// ids, pre-stress, the spin barrier, the role's operations (`body`), its results and (when
/// `counting`) the instance's count.
#[allow(clippy::too_many_arguments)]
fn dedicated_role(
    s: &mut String,
    g: &Geometry,
    b: &Bindings,
    d: &Dedicated,
    regs: &mut Regs,
    t: usize,
    (body, stops): (&str, bool),
    counting: Option<&OutcomeSpace>,
) -> Result<(), KernelError> {
    let (nl, ns) = (g.locations.len(), g.slots.len());
    let p = &g.params;
    let _ = writeln!(
        s,
        "ROLE{t}:\n\tmul.wide.u32 %k_w, %k_inst{t}, {};\n\tadd.s64 %k_aa, %k_addrs, %k_w;",
        4 * nl.max(1)
    );
    for j in 0..nl {
        location_view(s, b.per_location[j], t, j);
    }
    if !d.barrier_ids.is_empty() {
        // The instance's warp group ((inst / 32) mod groups) owns hardware barriers
        // 1 + group * ids .. 1 + (group + 1) * ids.
        let _ = writeln!(
            s,
            "\tshr.u32 %k_gb, %k_inst{t}, 5;\n\trem.u32 %k_gb, %k_gb, {};\n\
             \tmul.lo.u32 %k_gb, %k_gb, {};\n\tadd.u32 %k_gb, %k_gb, 1;",
            d.groups,
            d.barrier_ids.len()
        );
    }
    let _ = writeln!(
        s,
        "\tmov.u32 %k_iter, 0;\n\tmov.u32 %k_stop, 0;\n\tmov.u32 %k_past, 0;\n\t// pre-stress"
    );
    stress_loop(
        &format!("PRE{t}"),
        p.pre_stress_iterations,
        p.stress_pattern,
        s,
    );
    if p.barrier {
        let _ = write!(
            s,
            "\t// spin barrier: every testing thread arrives before any starts\n\
             \tred.relaxed.gpu.global.add.u32 [%k_barrier], 1;\n\tmov.u32 %k_spin, 0;\n\
             SPIN{t}:\n\tld.relaxed.gpu.global.u32 %k_bar, [%k_barrier];\n\
             \tsetp.ge.u32 %k_p, %k_bar, %k_testing;\n\t@%k_p bra GO{t};\n\
             \tadd.u32 %k_spin, %k_spin, 1;\n\tsetp.lt.u32 %k_p, %k_spin, {SPIN_LIMIT};\n\
             \t@%k_p bra SPIN{t};\n\tred.relaxed.gpu.global.add.u32 [%k_barrier+4], 1;\nGO{t}:\n"
        );
    }
    let _ = writeln!(s, "\t// P{t}");
    s.push_str(body);
    if stops {
        // Stopped at the cap before the barriers it went on to: no outcome.
        let _ = writeln!(s, "\tsetp.ne.u32 %k_p, %k_stop, 0;\n\t@%k_p bra CAP{t};");
    }
    let _ = writeln!(
        s,
        "\tmul.wide.u32 %k_w, %k_inst{t}, {};\n\tadd.s64 %k_w, %k_results, %k_w;",
        4 * ns.max(1)
    );
    if let Some(k) = g.slot_of(
        super::layout::DID_NOT_TERMINATE.0,
        super::layout::DID_NOT_TERMINATE.1,
    ) {
        // Past the model's loop bound: the instance is flagged, not judged.
        let _ = writeln!(
            s,
            "\tsetp.ne.u32 %k_pb, %k_past, 0;\n\tmov.u32 %k_tmp, {PAST_MODEL_BOUND};\n\
             \t@%k_pb st.global.u32 [%k_w+{}], %k_tmp;",
            4 * k
        );
    }
    for (k, (st, r)) in g.slots.iter().enumerate() {
        if *st == t {
            let v = regs.var(t, r);
            let _ = writeln!(s, "\tst.global.u32 [%k_w+{}], {v};", 4 * k);
        }
    }
    if let Some(space) = counting {
        let inst = format!("%k_inst{t}");
        s.push_str(&count::count_code(g, space, &inst, &format!("D{t}"), true)?);
    }
    s.push_str("\tret;\n");
    Ok(())
}

/// Role `t`'s path out of a loop stopped at the cap ([`cap_check`]): the instance marked as
/// not terminating (slot `dnt`) and counted.
fn dedicated_cap_path(
    s: &mut String,
    g: &Geometry,
    t: usize,
    dnt: Option<usize>,
    counting: Option<&OutcomeSpace>,
) -> Result<(), KernelError> {
    let ns = g.slots.len();
    if let Some(k) = dnt {
        let _ = writeln!(
            s,
            "CAP{t}:\n\t// stopped at the loop cap: the instance did not terminate within {LOOP_CAP}\n\
             \tmul.wide.u32 %k_w, %k_inst{t}, {};\n\tadd.s64 %k_w, %k_results, %k_w;\n\
             \tmov.u32 %k_tmp, 1;\n\tst.global.u32 [%k_w+{}], %k_tmp;",
            4 * ns.max(1),
            4 * k
        );
        if let Some(space) = counting {
            let inst = format!("%k_inst{t}");
            s.push_str(&count::count_code(g, space, &inst, &format!("C{t}"), true)?);
        }
        s.push_str("\tret;\n");
    }
    Ok(())
}

/// The kernel of the one-role-per-thread layout ([`Dedicated`]): each testing thread reads
/// which role it plays and runs only that role's code.
fn generate_dedicated(
    test: &LitmusTest,
    g: &Geometry,
    d: &Dedicated,
    counting: Option<&OutcomeSpace>,
) -> Result<String, KernelError> {
    check_barriers(test)?;
    let views = bind(test, g)?;
    let roles = test.threads.len();
    let nl = g.locations.len();
    let mut regs = Regs {
        vars: BTreeMap::new(),
        consts: BTreeMap::new(),
    };
    for (t, r) in &g.slots {
        if *t < roles {
            regs.var(*t, r);
        }
    }
    let mut bodies = Vec::new();
    for t in 0..roles {
        let mut b = String::new();
        thread_ops(g, test, t, &mut regs, &mut b)?;
        bodies.push(b);
    }
    let dnt = g.slot_of(
        super::layout::DID_NOT_TERMINATE.0,
        super::layout::DID_NOT_TERMINATE.1,
    );
    let mut s = String::new();
    let cp = format!(
        "{}{}",
        if counting.is_some() { count::PARAM } else { "" },
        view_params(&views)
    );
    let _ = write!(
        s,
        "// gpucts litmus kernel for `{name}` (one role per thread: {ctas} CTAs, {warps} warps \
         per group, {groups} groups per CTA; {roles} roles, {nl} locations)\n\
         .version {PTX_VERSION}\n.target {TARGET}\n.address_size 64\n\n\
         .visible .entry {KERNEL}(\n\t.param .u64 p_locs,\n\t.param .u64 p_results,\n\
         \t.param .u64 p_roles,\n\t.param .u64 p_addrs,\n\t.param .u64 p_barrier,\n\
         \t.param .u64 p_scratch,\n\t.param .u64 p_stress,\n\t.param .u32 p_testing{cp}\n)\n{{\n\
         \t.reg .pred %k_p, %k_none, %k_pb;\n\
         \t.reg .b32 %k_b, %k_l, %k_nt, %k_g, %k_i, %k_sv, %k_sl, %k_tmp, %k_bar, %k_spin, %k_testing, %k_neg, %k_iter, %k_stop, %k_gb, %k_hw, %k_past;\n\
         \t.reg .b64 %k_locs, %k_results, %k_roles, %k_addrs, %k_barrier, %k_scratch, %k_stress, %k_ra, %k_aa, %k_sa, %k_w;\n",
        name = test.name,
        ctas = d.ctas,
        warps = d.warps,
        groups = d.groups,
    );
    let heads = max_loop_heads(test);
    if heads > 0 {
        // Per loop head: this iteration's effects, and the effectful iterations so far.
        let names: Vec<String> = (0..heads)
            .flat_map(|k| [format!("%k_e{k}"), format!("%k_n{k}")])
            .collect();
        let _ = writeln!(s, "\t.reg .b32 {};", names.join(", "));
    }
    prologue_common(&mut s, &regs, roles, nl, 1);
    view_prologue(&mut s, &views);
    if counting.is_some() {
        s.push_str(count::prologue());
    }
    let _ = write!(
        s,
        "\t// this thread's role: at most one entry of its row is an instance\n\
         \tmul.wide.u32 %k_w, %k_g, {row};\n\tadd.s64 %k_ra, %k_roles, %k_w;\n",
        row = 4 * roles,
    );
    initial_registers(&mut s, test, &regs);
    for t in 0..roles {
        let _ = writeln!(
            s,
            "\tld.global.u32 %k_inst{t}, [%k_ra+{}];\n\tsetp.ne.u32 %k_p, %k_inst{t}, {none};\n\t@%k_p bra ROLE{t};",
            4 * t,
            none = super::layout::NONE,
        );
    }
    s.push_str("\tbra STRESS;\n");
    let p = &g.params;
    for (t, body) in bodies.iter().enumerate() {
        let stops = stops_before_barriers(test, t);
        dedicated_role(&mut s, g, &views, d, &mut regs, t, (body, stops), counting)?;
        dedicated_cap_path(&mut s, g, t, dnt, counting)?;
    }
    s.push_str("STRESS:\n");
    stress_loop("STRESS_LOOP", p.stress_iterations, p.stress_pattern, &mut s);
    s.push_str("\tret;\n}\n");
    Ok(s)
}

/// The PTX module for `test` under `g`'s parameters.
pub fn generate(test: &LitmusTest, g: &Geometry) -> Result<String, KernelError> {
    generate_with(test, g, None)
}

/// The PTX module for `test` under `g`'s parameters that counts outcomes on the device
/// ([`super::count`]): one more parameter, `p_counts`, after `p_testing`.
pub(crate) fn generate_counting(
    test: &LitmusTest,
    g: &Geometry,
    space: &OutcomeSpace,
) -> Result<String, KernelError> {
    if bind(test, g)?.any() {
        // Batch kernels share one parameter list ([`super::batch`]); a test whose locations
        // need views (a second mapping, surface objects) runs with a kernel of its own.
        return Err(inexpressible(
            &format!("`{}`", test.name),
            "a location view (generic alias or surface) in a batch kernel",
            "the batch kernels take the location buffer only; the test runs with its own kernel",
        ));
    }
    generate_with(test, g, Some(space))
}

fn generate_with(
    test: &LitmusTest,
    g: &Geometry,
    counting: Option<&OutcomeSpace>,
) -> Result<String, KernelError> {
    if let Some(d) = &g.dedicated {
        return generate_dedicated(test, g, d, counting);
    }
    let views = bind(test, g)?;
    let roles = test.threads.len();
    let (nl, ns) = (g.locations.len(), g.slots.len());
    let mut regs = Regs {
        vars: BTreeMap::new(),
        consts: BTreeMap::new(),
    };
    // Result slots first, so their %v numbers are stable.
    for (t, r) in &g.slots {
        regs.var(*t, r);
    }
    // The test's body: each role's operations back to back, then the results.
    let mut test_body = String::new();
    for t in 0..roles {
        let _ = writeln!(test_body, "\t// P{t}");
        thread_ops(g, test, t, &mut regs, &mut test_body)?;
    }
    let mut s = String::new();
    header(&mut s, test, g, counting.is_some(), &views);
    prologue_common(&mut s, &regs, roles, nl, g.cluster);
    view_prologue(&mut s, &views);
    if counting.is_some() {
        s.push_str(count::prologue());
    }
    let _ = write!(
        s,
        "\t// this thread's roles\n\
         \tmul.wide.u32 %k_w, %k_g, {row};\n\tadd.s64 %k_ra, %k_roles, %k_w;\n\
         \tld.global.u32 %k_inst0, [%k_ra];\n\
         \tsetp.eq.u32 %k_none, %k_inst0, {none};\n\t@%k_none bra STRESS;\n",
        row = 4 * roles,
        none = super::layout::NONE,
    );
    if g.shared {
        copy_in(&mut s, g);
    }
    role_addresses(&mut s, g, &views, roles, nl);
    // Initial registers (default 0) and constants.
    initial_registers(&mut s, test, &regs);
    let p = &g.params;
    let _ = writeln!(s, "\t// pre-stress");
    stress_loop("PRE", p.pre_stress_iterations, p.stress_pattern, &mut s);
    if p.barrier {
        let _ = write!(
            s,
            "\t// spin barrier: every testing thread arrives before any starts\n\
             \tred.relaxed.gpu.global.add.u32 [%k_barrier], 1;\n\tmov.u32 %k_spin, 0;\n\
             SPIN:\n\tld.relaxed.gpu.global.u32 %k_bar, [%k_barrier];\n\
             \tsetp.ge.u32 %k_p, %k_bar, %k_testing;\n\t@%k_p bra GO;\n\
             \tadd.u32 %k_spin, %k_spin, 1;\n\tsetp.lt.u32 %k_p, %k_spin, {SPIN_LIMIT};\n\
             \t@%k_p bra SPIN;\n\tred.relaxed.gpu.global.add.u32 [%k_barrier+4], 1;\nGO:\n"
        );
    }
    s.push_str(&test_body);
    for t in 0..roles {
        let _ = writeln!(
            s,
            "\tmul.wide.u32 %k_w, %k_inst{t}, {};\n\tadd.s64 %k_w, %k_results, %k_w;",
            4 * ns.max(1)
        );
        for (k, (st, r)) in g.slots.iter().enumerate() {
            if *st == t {
                let v = regs.var(t, r);
                let _ = writeln!(s, "\tst.global.u32 [%k_w+{}], {v};", 4 * k);
            }
        }
    }
    if let (Some(space), false) = (counting, g.shared) {
        for t in 0..roles {
            let inst = format!("%k_inst{t}");
            s.push_str(&count::count_code(g, space, &inst, &format!("R{t}"), true)?);
        }
    }
    if g.shared {
        copy_out(&mut s, g);
        if let Some(space) = counting {
            // The CTA's copy back is done once every thread passes the barrier; each
            // instance has one role-0 thread, in this CTA.
            s.push_str("\tbar.sync 0;\n");
            s.push_str(&count::count_code(g, space, "%k_inst0", "S", false)?);
        }
    }
    s.push_str("\tret;\nSTRESS:\n");
    stress_loop("STRESS_LOOP", p.stress_iterations, p.stress_pattern, &mut s);
    s.push_str("\tret;\n}\n");
    Ok(s)
}

/// The module header, the entry's parameters and the kernel's own registers. A cluster launch
/// is `.explicitcluster` (PTX ISA "Cluster dimension directives": the cluster dimensions must
/// be given at launch; the runner launches with the cluster-dimension attribute). `counting`
/// adds the outcome counters' parameter.
fn header(s: &mut String, test: &LitmusTest, g: &Geometry, counting: bool, views: &Bindings) {
    let cp = format!(
        "{}{}",
        if counting { count::PARAM } else { "" },
        view_params(views)
    );
    let _ = write!(
        s,
        "// gpucts litmus kernel for `{name}` ({place:?}, {roles} roles, {nl} locations{cl})\n\
         .version {PTX_VERSION}\n.target {TARGET}\n.address_size 64\n\n{smem}\
         .visible .entry {KERNEL}(\n\t.param .u64 p_locs,\n\t.param .u64 p_results,\n\
         \t.param .u64 p_roles,\n\t.param .u64 p_addrs,\n\t.param .u64 p_barrier,\n\
         \t.param .u64 p_scratch,\n\t.param .u64 p_stress,\n\t.param .u32 p_testing{cp}\n)\n{cluster}{{\n\
         \t.reg .pred %k_p, %k_none;\n\
         \t.reg .b32 %k_b, %k_l, %k_nt, %k_g, %k_i, %k_sv, %k_sl, %k_tmp, %k_bar, %k_spin, %k_testing, %k_neg;\n\
         \t.reg .b64 %k_locs, %k_results, %k_roles, %k_addrs, %k_barrier, %k_scratch, %k_stress, %k_ra, %k_aa, %k_sa, %k_w;\n",
        name = test.name,
        place = g.placement,
        roles = test.threads.len(),
        nl = g.locations.len(),
        cl = if g.cluster > 1 {
            format!(", clusters of {} CTAs", g.cluster)
        } else {
            String::new()
        },
        cluster = if g.cluster > 1 {
            ".explicitcluster\n"
        } else {
            ""
        },
        smem = if g.shared {
            format!(
                ".shared .align 4 .b32 {SMEM}[{}];\n\n",
                g.cta_location_words()
            )
        } else {
            String::new()
        },
    );
    if g.shared {
        let own = if g.cluster > 1 { ", %k_own" } else { "" };
        let _ = writeln!(
            s,
            "\t.reg .b32 %k_slab, %k_cw, %k_cv{own};\n\t.reg .b64 %k_sm, %k_cg, %k_cs;"
        );
    }
}

/// The CTA's block of locations (the words of the instances it holds: all of its threads
/// test, and every instance whose P0 it plays sits in it) copied into its shared memory, then
/// a barrier: `bar.sync` within a CTA; in a cluster, `barrier.cluster.arrive` (release) and
/// `barrier.cluster.wait` (acquire), so that every CTA of the cluster has its block in place,
/// and has started, before any reaches into it (PTX ISA "Distributed shared memory": a CTA's
/// shared memory may be accessed only while it runs).
fn copy_in(s: &mut String, g: &Geometry) {
    let _ = write!(
        s,
        "\t// the CTA's locations into shared memory\n\
         \tdiv.u32 %k_slab, %k_inst0, {w};\n\tmul.lo.u32 %k_slab, %k_slab, {cw};\n\
         \tmov.u64 %k_sm, {SMEM};\n\tmov.u32 %k_cw, %k_l;\n\
         SMEM_IN:\n\tsetp.ge.u32 %k_p, %k_cw, {cw};\n\t@%k_p bra SMEM_IN_DONE;\n\
         \tadd.u32 %k_tmp, %k_slab, %k_cw;\n\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
         \tadd.s64 %k_cg, %k_locs, %k_w;\n\tld.global.u32 %k_cv, [%k_cg];\n\
         \tmul.wide.u32 %k_w, %k_cw, 4;\n\tadd.s64 %k_cs, %k_sm, %k_w;\n\
         \tst.shared.u32 [%k_cs], %k_cv;\n\tadd.u32 %k_cw, %k_cw, %k_nt;\n\tbra SMEM_IN;\n\
         SMEM_IN_DONE:\n{barrier}",
        w = g.params.workgroup_size,
        cw = g.cta_location_words(),
        barrier = sync_line(g),
    );
}

/// The barrier around the shared-memory copies: the CTA's, or the cluster's.
fn sync_line(g: &Geometry) -> &'static str {
    if g.cluster > 1 {
        "\tbarrier.cluster.arrive;\n\tbarrier.cluster.wait;\n"
    } else {
        "\tbar.sync 0;\n"
    }
}

/// Final values back to the location buffer, once every thread of the CTA (of the cluster:
/// those reaching into this CTA's shared memory) is done.
fn copy_out(s: &mut String, g: &Geometry) {
    let _ = write!(
        s,
        "\t// the CTA's final values back to the location buffer\n{barrier}\
         \tmov.u32 %k_cw, %k_l;\n\
         SMEM_OUT:\n\tsetp.ge.u32 %k_p, %k_cw, {cw};\n\t@%k_p bra SMEM_OUT_DONE;\n\
         \tmul.wide.u32 %k_w, %k_cw, 4;\n\tadd.s64 %k_cs, %k_sm, %k_w;\n\
         \tld.shared.u32 %k_cv, [%k_cs];\n\
         \tadd.u32 %k_tmp, %k_slab, %k_cw;\n\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
         \tadd.s64 %k_cg, %k_locs, %k_w;\n\tst.global.u32 [%k_cg], %k_cv;\n\
         \tadd.u32 %k_cw, %k_cw, %k_nt;\n\tbra SMEM_OUT;\nSMEM_OUT_DONE:\n",
        barrier = sync_line(g),
        cw = g.cta_location_words(),
    );
}

/// Each role's instance and the addresses of its locations, `%a<t>_<j>`: in the location
/// buffer; in shared memory, the word's offset in its CTA's block; in a cluster's distributed
/// shared memory, that offset in the block of the CTA playing the instance's P0 (logical CTA
/// `inst / workgroup_size`, whose rank in its cluster is that number mod the cluster size, as
/// the tables keep ranks), mapped into that CTA with `mapa`.
fn role_addresses(s: &mut String, g: &Geometry, b: &Bindings, roles: usize, nl: usize) {
    let (w, cw) = (g.params.workgroup_size, g.cta_location_words());
    for t in 0..roles {
        if t > 0 {
            let _ = writeln!(s, "\tld.global.u32 %k_inst{t}, [%k_ra+{}];", 4 * t);
        }
        let _ = writeln!(
            s,
            "\tmul.wide.u32 %k_w, %k_inst{t}, {};\n\tadd.s64 %k_aa, %k_addrs, %k_w;",
            4 * nl.max(1)
        );
        for j in 0..nl {
            let (sub, base, map) = match (g.shared, g.cluster > 1) {
                (false, _) => (String::new(), "%k_locs", String::new()),
                (true, false) => (
                    "\tsub.u32 %k_tmp, %k_tmp, %k_slab;\n".into(),
                    "%k_sm",
                    String::new(),
                ),
                (true, true) => (
                    format!(
                        "\tdiv.u32 %k_own, %k_inst{t}, {w};\n\tmul.lo.u32 %k_cv, %k_own, {cw};\n\
                         \tsub.u32 %k_tmp, %k_tmp, %k_cv;\n"
                    ),
                    "%k_sm",
                    format!(
                        "\trem.u32 %k_own, %k_own, {c};\n\
                         \tmapa.shared::cluster.u64 %a{t}_{j}, %a{t}_{j}, %k_own;\n",
                        c = g.cluster
                    ),
                ),
            };
            if b.per_location[j] != Binding::Linear {
                // Only the location buffer has other views (the geometry keeps such a test's
                // locations out of shared memory).
                location_view(s, b.per_location[j], t, j);
                continue;
            }
            let _ = write!(
                s,
                "\tld.global.u32 %k_tmp, [%k_aa+{}];\n{sub}\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
                 \tadd.s64 %a{t}_{j}, {base}, %k_w;\n{map}",
                4 * j
            );
        }
    }
}

/// `%a<t>_<j>` of a location reached through a view ([`Binding`]): a generic alias's address
/// in the second mapping (`%k_alias`) of its physical location's word; a surface name's byte
/// offset of that word in the array (the surface instruction's x coordinate). The address
/// table `%k_aa` points at the instance's row.
fn location_view(s: &mut String, b: Binding, t: usize, j: usize) {
    let (of, base) = match b {
        Binding::Linear => (j, Some("%k_locs")),
        Binding::GenericAlias { of } => (of, Some("%k_alias")),
        Binding::Surface { of, .. } => (of, None),
    };
    let _ = writeln!(s, "\tld.global.u32 %k_tmp, [%k_aa+{}];", 4 * of);
    match base {
        Some(base) => {
            let _ = writeln!(
                s,
                "\tmul.wide.u32 %k_w, %k_tmp, 4;\n\tadd.s64 %a{t}_{j}, {base}, %k_w;"
            );
        }
        None => {
            let _ = writeln!(s, "\tmul.wide.u32 %a{t}_{j}, %k_tmp, 4;");
        }
    }
}

/// The kernel parameters of the views a test's locations need ([`Binding`]), after the
/// others: the second mapping of the location buffer, then one surface object per surface
/// name.
fn view_params(b: &Bindings) -> String {
    let mut s = String::new();
    if b.alias() {
        s.push_str(",\n\t.param .u64 p_alias");
    }
    for k in 0..b.surfaces {
        let _ = write!(s, ",\n\t.param .u64 p_surf{k}");
    }
    s
}

/// The views' registers, loaded from their parameters.
fn view_prologue(s: &mut String, b: &Bindings) {
    if b.alias() {
        s.push_str(
            "\t.reg .b64 %k_alias;\n\tld.param.u64 %k_w, [p_alias];\n\tcvta.to.global.u64 %k_alias, %k_w;\n",
        );
    }
    if b.surfaces > 0 {
        let _ = writeln!(
            s,
            "\t.reg .b32 %k_sx;\n\t.reg .b64 %k_surf<{}>;",
            b.surfaces
        );
        for k in 0..b.surfaces {
            let _ = writeln!(s, "\tld.param.u64 %k_surf{k}, [p_surf{k}];");
        }
    }
}

/// The part of the prologue both layouts share: register declarations for the test's
/// registers, constants and per-role addresses, the kernel parameters in global space, this
/// thread's ids and its CTA's stress word.
///
/// In a cluster launch the thread's block is found from its cluster's id and its rank in it
/// (`%clusterid.x`, `%cluster_ctarank`, PTX ISA "Special registers"), the numbering the
/// tables place roles by, so that roles meant for one cluster run in one.
fn prologue_common(s: &mut String, regs: &Regs, roles: usize, nl: usize, cluster: u32) {
    let _ = writeln!(s, "\t.reg .b32 %v<{}>;", regs.vars.len().max(1));
    let _ = writeln!(s, "\t.reg .b32 %c<{}>;", regs.consts.len().max(1));
    for t in 0..roles {
        let _ = writeln!(s, "\t.reg .b32 %k_inst{t};");
        for j in 0..nl {
            let _ = writeln!(s, "\t.reg .b64 %a{t}_{j};");
        }
    }
    for (p, r) in [
        ("p_locs", "%k_locs"),
        ("p_results", "%k_results"),
        ("p_roles", "%k_roles"),
        ("p_addrs", "%k_addrs"),
        ("p_barrier", "%k_barrier"),
        ("p_scratch", "%k_scratch"),
        ("p_stress", "%k_stress"),
    ] {
        let _ = writeln!(
            s,
            "\tld.param.u64 %k_w, [{p}];\n\tcvta.to.global.u64 {r}, %k_w;"
        );
    }
    let block = if cluster > 1 {
        format!(
            "\tmov.u32 %k_b, %clusterid.x;\n\tmov.u32 %k_tmp, %cluster_ctarank;\n\
             \tmad.lo.u32 %k_b, %k_b, {cluster}, %k_tmp;\n"
        )
    } else {
        "\tmov.u32 %k_b, %ctaid.x;\n".to_string()
    };
    let _ = write!(
        s,
        "\tld.param.u32 %k_testing, [p_testing];\n{block}\
         \tmov.u32 %k_l, %tid.x;\n\tmov.u32 %k_nt, %ntid.x;\n\
         \tmad.lo.u32 %k_g, %k_b, %k_nt, %k_l;\n\
         \t// this CTA's stress word\n\
         \tmul.wide.u32 %k_w, %k_b, 4;\n\tadd.s64 %k_w, %k_stress, %k_w;\n\
         \tld.global.u32 %k_sl, [%k_w];\n\tmul.wide.u32 %k_w, %k_sl, 4;\n\
         \tadd.s64 %k_sa, %k_scratch, %k_w;\n"
    );
}

/// Each test register's initial value (default 0) and each constant, into its PTX register.
fn initial_registers(s: &mut String, test: &LitmusTest, regs: &Regs) {
    for ((t, r), k) in &regs.vars {
        let init = test.threads[*t].regs.get(r).copied().unwrap_or(0);
        let _ = writeln!(s, "\tmov.b32 %v{k}, {};", init as u32);
    }
    for (v, k) in &regs.consts {
        let _ = writeln!(s, "\tmov.b32 %c{k}, {v};");
    }
}
