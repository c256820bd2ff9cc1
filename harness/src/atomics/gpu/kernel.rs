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

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::layout::{Geometry, StressPattern};
use crate::atomics::litmus::{AtomOp, LitmusTest, Op, Operand, Sem};

/// The kernel's entry point.
pub const KERNEL: &str = "gpucts_litmus";
/// PTX ISA version and target: the driver of the target machine (R580) JIT-compiles PTX up to
/// ISA 8.8; 8.0 has every instruction the runner emits for sm_90.
pub const PTX_VERSION: &str = "8.0";
pub const TARGET: &str = "sm_90";
/// Spin-barrier polls before a testing thread gives up waiting (and counts a timeout).
pub const SPIN_LIMIT: u32 = 1 << 20;
/// The shared-memory array of a CTA's locations ([`Geometry::shared`]).
pub const SMEM: &str = "gpucts_smem";

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
}

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

/// The test's operations of thread `t` as PTX lines, addresses in `%a<t>_<j>`.
/// The state space of the test's locations.
fn space(g: &Geometry) -> &'static str {
    if g.shared {
        ".shared"
    } else {
        ".global"
    }
}

fn thread_ops(
    g: &Geometry,
    test: &LitmusTest,
    t: usize,
    regs: &mut Regs,
    out: &mut String,
) -> Result<(), KernelError> {
    let addr = |loc: &str| -> Result<String, KernelError> {
        g.location_index(loc)
            .map(|j| format!("[%a{t}_{j}]"))
            .ok_or_else(|| KernelError::UnknownLocation(loc.to_string()))
    };
    for (oi, op) in test.threads[t].ops.iter().enumerate() {
        let what = format!("`{}` P{t} op {}", test.name, oi + 1);
        let line = match op {
            Op::Ld {
                reg,
                loc,
                sem,
                scope,
            } => {
                if !matches!(sem, Sem::Weak | Sem::Relaxed | Sem::Acquire) {
                    return Err(KernelError::Semantics {
                        at: what.clone(),
                        instr: "ld",
                        sem: sem.name().to_string(),
                    });
                }
                format!(
                    "ld{}{}.u32 {}, {};",
                    strong_q(*sem, *scope, &what)?,
                    space(g),
                    regs.var(t, reg),
                    addr(loc)?
                )
            }
            Op::St {
                loc,
                val,
                sem,
                scope,
            } => {
                if !matches!(sem, Sem::Weak | Sem::Relaxed | Sem::Release) {
                    return Err(KernelError::Semantics {
                        at: what.clone(),
                        instr: "st",
                        sem: sem.name().to_string(),
                    });
                }
                format!(
                    "st{}{}.u32 {}, {};",
                    strong_q(*sem, *scope, &what)?,
                    space(g),
                    addr(loc)?,
                    regs.operand(t, val, &what)?
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
                if !matches!(
                    sem,
                    Sem::Relaxed | Sem::Acquire | Sem::Release | Sem::AcqRel
                ) {
                    return Err(KernelError::Semantics {
                        at: what.clone(),
                        instr: "atom",
                        sem: sem.name().to_string(),
                    });
                }
                let v = rmw_value(*op, val, t, regs, &what, out)?;
                let head = format!(
                    "atom.{}.{}{}.{} {}, {}",
                    sem.name(),
                    scope.name(),
                    space(g),
                    rmw_suffix(*op),
                    regs.var(t, reg),
                    addr(loc)?
                );
                match (op, cmp) {
                    (AtomOp::Cas, Some(c)) => {
                        format!("{head}, {}, {v};", regs.operand(t, c, &what)?)
                    }
                    (AtomOp::Cas, None) => {
                        return Err(KernelError::CasWithoutCompare { at: what.clone() })
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
                if !matches!(sem, Sem::Relaxed | Sem::Release) {
                    return Err(KernelError::Semantics {
                        at: what.clone(),
                        instr: "red",
                        sem: sem.name().to_string(),
                    });
                }
                if matches!(op, AtomOp::Exch | AtomOp::Cas) {
                    return Err(KernelError::NoRed {
                        at: what.clone(),
                        op: op.name().to_string(),
                    });
                }
                let v = rmw_value(*op, val, t, regs, &what, out)?;
                format!(
                    "red.{}.{}{}.{} {}, {v};",
                    sem.name(),
                    scope.name(),
                    space(g),
                    rmw_suffix(*op),
                    addr(loc)?
                )
            }
            Op::Fence { sem, scope } => {
                if !matches!(sem, Sem::Sc | Sem::AcqRel | Sem::Acquire | Sem::Release) {
                    return Err(KernelError::Semantics {
                        at: what.clone(),
                        instr: "fence",
                        sem: sem.name().to_string(),
                    });
                }
                format!("fence.{}.{};", sem.name(), scope.name())
            }
            Op::Mov { reg, val } => {
                let v = regs.operand(t, val, &what)?;
                format!("mov.b32 {}, {v};", regs.var(t, reg))
            }
            other => {
                return Err(KernelError::NotGenerated {
                    at: what.clone(),
                    instr: crate::atomics::litmus::dat3m::instr_text(other),
                })
            }
        };
        let _ = writeln!(out, "\t{line}");
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

/// The PTX module for `test` under `g`'s parameters.
pub fn generate(test: &LitmusTest, g: &Geometry) -> Result<String, KernelError> {
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
    let mut results = String::new();
    for t in 0..roles {
        let _ = writeln!(
            results,
            "\tmul.wide.u32 %k_w, %k_inst{t}, {};\n\tadd.s64 %k_w, %k_results, %k_w;",
            4 * ns.max(1)
        );
        for (s, (st, r)) in g.slots.iter().enumerate() {
            if *st == t {
                let v = regs.var(t, r);
                let _ = writeln!(results, "\tst.global.u32 [%k_w+{}], {v};", 4 * s);
            }
        }
    }

    let mut s = String::new();
    let _ = write!(
        s,
        "// gpucts litmus kernel for `{name}` ({place:?}, {roles} roles, {nl} locations)\n\
         .version {PTX_VERSION}\n.target {TARGET}\n.address_size 64\n\n{smem}\
         .visible .entry {KERNEL}(\n\t.param .u64 p_locs,\n\t.param .u64 p_results,\n\
         \t.param .u64 p_roles,\n\t.param .u64 p_addrs,\n\t.param .u64 p_barrier,\n\
         \t.param .u64 p_scratch,\n\t.param .u64 p_stress,\n\t.param .u32 p_testing\n)\n{{\n\
         \t.reg .pred %k_p, %k_none;\n\
         \t.reg .b32 %k_b, %k_l, %k_nt, %k_g, %k_i, %k_sv, %k_sl, %k_tmp, %k_bar, %k_spin, %k_testing, %k_neg;\n\
         \t.reg .b64 %k_locs, %k_results, %k_roles, %k_addrs, %k_barrier, %k_scratch, %k_stress, %k_ra, %k_aa, %k_sa, %k_w;\n",
        name = test.name,
        place = g.placement,
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
        let _ = writeln!(
            s,
            "\t.reg .b32 %k_slab, %k_cw, %k_cv;\n\t.reg .b64 %k_sm, %k_cg, %k_cs;"
        );
    }
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
    let _ = write!(
        s,
        "\tld.param.u32 %k_testing, [p_testing];\n\
         \tmov.u32 %k_b, %ctaid.x;\n\tmov.u32 %k_l, %tid.x;\n\tmov.u32 %k_nt, %ntid.x;\n\
         \tmad.lo.u32 %k_g, %k_b, %k_nt, %k_l;\n\
         \t// this CTA's stress word\n\
         \tmul.wide.u32 %k_w, %k_b, 4;\n\tadd.s64 %k_w, %k_stress, %k_w;\n\
         \tld.global.u32 %k_sl, [%k_w];\n\tmul.wide.u32 %k_w, %k_sl, 4;\n\
         \tadd.s64 %k_sa, %k_scratch, %k_w;\n\
         \t// this thread's roles\n\
         \tmul.wide.u32 %k_w, %k_g, {row};\n\tadd.s64 %k_ra, %k_roles, %k_w;\n\
         \tld.global.u32 %k_inst0, [%k_ra];\n\
         \tsetp.eq.u32 %k_none, %k_inst0, {none};\n\t@%k_none bra STRESS;\n",
        row = 4 * roles,
        none = super::layout::NONE,
    );
    if g.shared {
        // This CTA's block of locations: the words of the instances it holds (all of its
        // threads test, and every instance it plays sits in it), copied into shared memory.
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
             SMEM_IN_DONE:\n\tbar.sync 0;\n",
            w = g.params.workgroup_size,
            cw = g.cta_location_words(),
        );
    }
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
            // In shared memory a location is its word's offset in the CTA's block.
            let (sub, base) = if g.shared {
                ("\tsub.u32 %k_tmp, %k_tmp, %k_slab;\n", "%k_sm")
            } else {
                ("", "%k_locs")
            };
            let _ = writeln!(
                s,
                "\tld.global.u32 %k_tmp, [%k_aa+{}];\n{sub}\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
                 \tadd.s64 %a{t}_{j}, {base}, %k_w;",
                4 * j
            );
        }
    }
    // Initial registers (default 0) and constants.
    for (t, th) in test.threads.iter().enumerate() {
        for (r, k) in regs.vars.clone() {
            if r.0 == t {
                let init = th.regs.get(&r.1).copied().unwrap_or(0);
                let _ = writeln!(s, "\tmov.b32 %v{k}, {};", init as u32);
            }
        }
    }
    for (v, k) in &regs.consts {
        let _ = writeln!(s, "\tmov.b32 %c{k}, {v};");
    }
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
    s.push_str(&results);
    if g.shared {
        // Final values back to the location buffer, once every thread of the CTA is done.
        let _ = write!(
            s,
            "\t// the CTA's final values back to the location buffer\n\tbar.sync 0;\n\
             \tmov.u32 %k_cw, %k_l;\n\
             SMEM_OUT:\n\tsetp.ge.u32 %k_p, %k_cw, {cw};\n\t@%k_p bra SMEM_OUT_DONE;\n\
             \tmul.wide.u32 %k_w, %k_cw, 4;\n\tadd.s64 %k_cs, %k_sm, %k_w;\n\
             \tld.shared.u32 %k_cv, [%k_cs];\n\
             \tadd.u32 %k_tmp, %k_slab, %k_cw;\n\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
             \tadd.s64 %k_cg, %k_locs, %k_w;\n\tst.global.u32 [%k_cg], %k_cv;\n\
             \tadd.u32 %k_cw, %k_cw, %k_nt;\n\tbra SMEM_OUT;\nSMEM_OUT_DONE:\n",
            cw = g.cta_location_words(),
        );
    }
    s.push_str("\tret;\nSTRESS:\n");
    stress_loop("STRESS_LOOP", p.stress_iterations, p.stress_pattern, &mut s);
    s.push_str("\tret;\n}\n");
    Ok(s)
}
