//! The PTX text of a litmus test's operations, one role's code at a time: memory, register,
//! surface, jump and barrier lines, the loop cap and the model's loop bound at backward
//! jumps, the refusals of what no kernel expresses, and the stress loops.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::barriers::barrier_quorum;
use super::{bind, inexpressible, KernelError, LOOP_CAP, MODEL_UNROLL};
use crate::atomics::gpu::binding::Binding;
use crate::atomics::gpu::layout::{self, Geometry, StressPattern};
use crate::atomics::litmus::{
    AtomOp, BranchCond, LitmusTest, LocalOp, Op, Operand, Proxy, ProxyFenceKind, Sem,
};

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
pub(super) fn max_loop_heads(test: &LitmusTest) -> usize {
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

pub(super) struct Regs {
    /// (thread, register) → `%v<k>`.
    pub(super) vars: BTreeMap<(usize, String), usize>,
    /// constant → `%c<k>`.
    pub(super) consts: BTreeMap<u32, usize>,
}

impl Regs {
    pub(super) fn var(&mut self, t: usize, r: &str) -> String {
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
pub(super) fn stops_before_barriers(test: &LitmusTest, t: usize) -> bool {
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

/// A test barrier as the hardware barrier of the instance's warp group
/// ([`Dedicated`](super::Dedicated)): `barrier.sync` or `barrier.arrive` (`arrive`), count
/// 32 x quorum.
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
    let id = layout::barrier_id(&test.threads[t], op).ok_or_else(|| {
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

pub(super) fn thread_ops(
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

pub(super) fn stress_loop(label: &str, iterations: u32, pattern: StressPattern, out: &mut String) {
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
