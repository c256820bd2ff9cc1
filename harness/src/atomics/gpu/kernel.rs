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
//! to it too: [`cap_check`](instr::cap_check)), since a barrier counts whole warps and a warp
//! must not execute two barrier instructions on one barrier in one phase; each hardware
//! barrier of a CTA serves one test CTA's one barrier id, so all its uses name one thread
//! count.
//!
//! What a kernel cannot express is refused naming the construct and why
//! ([`KernelError::Inexpressible`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::binding::{self, Bindings};
use super::count::{self, OutcomeSpace};
use super::layout::{Dedicated, Geometry, PAST_MODEL_BOUND};
use crate::atomics::litmus::LitmusTest;

mod barriers;
mod instr;
mod skeleton;

use barriers::check_barriers;
use instr::{max_loop_heads, stops_before_barriers, stress_loop, thread_ops, Regs};
use skeleton::{
    copy_in, copy_out, header, initial_registers, location_view, prologue_common, role_addresses,
    view_params, view_prologue,
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
/// ([`bound_check`](instr::bound_check)) made an execution the model never enumerated, so
/// its instance is flagged [`PAST_MODEL_BOUND`] and not judged; iterations without effects
/// (spins) do not count, as the model's spin-loop rule folds them away.
pub(crate) const MODEL_UNROLL: u32 = crate::atomics::model::DEFAULT_UNROLL;

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

/// The bindings of `test`'s locations ([`binding`]), a refusal as [`KernelError::Inexpressible`].
pub(crate) fn bind(test: &LitmusTest, g: &Geometry) -> Result<Bindings, KernelError> {
    binding::bindings(test, &g.locations).map_err(|r| KernelError::Inexpressible {
        at: r.at,
        construct: r.construct,
        why: r.why,
    })
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

/// Role `t`'s path out of a loop stopped at the cap ([`cap_check`](instr::cap_check)): the
/// instance marked as not terminating (slot `dnt`) and counted.
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
