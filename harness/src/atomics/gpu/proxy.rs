//! Litmus tests of Hopper's async proxy on the GPU: `cp.async.bulk` global → shared completing
//! on an `mbarrier`, `mbarrier.try_wait.parity`, `fence.proxy.async` (PTX ISA 8.x
//! "Asynchronous copy", "Async Proxy", "cp.async.bulk", "mbarrier", "membar/fence"; sm_90).
//!
//! These tests do not fit the catalogue's kernel ([`super::kernel`]): a bulk copy moves 16
//! aligned bytes and completes on an 8-byte mbarrier object in the issuing CTA's shared memory,
//! where the catalogue lays out 4-byte words shuffled across instances. So they have their own
//! kernel with a fixed layout:
//!
//! - every test thread runs on its own warp of its CTA; lane `l` of CTA group `b` plays
//!   instance `32 b + l` (a group holds one CTA per test CTA, so a test with threads in two
//!   CTAs runs in pairs of CTAs);
//! - each instance has 16 bytes per global location (`p_locs`, the value in the first word),
//!   16 bytes per shared location and 8 per mbarrier in its CTA's shared memory ([`DATA`],
//!   [`MBARRIERS`]), and one word per result register plus a "did not terminate" word
//!   (`p_results`);
//! - warp 0 of each CTA writes the shared locations' initial values, initialises the
//!   mbarriers with one expected arrival, and issues `fence.proxy.async.shared::cta` so that
//!   the initial values precede the copies' async writes (the model's initial writes precede
//!   every operation), then `bar.sync 0`;
//! - `cp.async.bulk dst, src, m` is `mbarrier.arrive.expect_tx` of the copy's 16 bytes on `m`
//!   (the one arrival of phase 0) and `cp.async.bulk.shared::cluster.global.mbarrier::
//!   complete_tx::bytes`; `mbarrier.try_wait.parity m, 0` loops until true, at most
//!   [`super::kernel::LOOP_CAP`] times (then the instance is "did not terminate", no outcome).
//!
//! A test's outcomes are judged as the PTX ISA defines them where it does (the model's
//! allowed set) and recorded as observations where it does not ([`Expectation::Observation`]).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::kernel::{KernelError, LOOP_CAP, PTX_VERSION, TARGET};
use super::layout::Histogram;
use super::RunError;
use crate::atomics::litmus::{LitmusTest, Op, Operand, ProxyFenceKind, Sem, Space, Term};
use crate::atomics::model;
use crate::backend::cuda::{KernelArg, LaunchConfig, Session};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// The kernel's entry point.
pub(crate) const KERNEL: &str = "gpucts_proxy";
/// The shared array of the instances' shared locations (16 bytes each).
pub const DATA: &str = "gpucts_px_data";
/// The shared array of the instances' mbarrier objects (8 bytes each).
pub(crate) const MBARRIERS: &str = "gpucts_px_mbar";
/// Bytes one bulk copy moves (the ISA's minimum: a multiple of 16, 16-byte aligned).
pub(crate) const COPY_BYTES: u32 = 16;
/// Instances per CTA group: one per lane.
const LANES: u32 = 32;
/// CTA groups per GPU launch (instances per launch: 32 times this).
pub(crate) const GPU_GROUPS: u32 = 264;
/// CTA groups per emulated launch.
pub const EMULATED_GROUPS: u32 = 2;

/// Where a test's locations, threads and results go in the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyLayout {
    /// Per thread: its CTA's index in the group and its warp in that CTA.
    pub roles: Vec<(u32, u32)>,
    /// CTAs per group (the test's distinct CTAs).
    pub ctas: u32,
    /// Warps per CTA (the most test threads of one CTA).
    pub warps: u32,
    pub global: Vec<String>,
    pub shared: Vec<String>,
    pub mbarriers: Vec<String>,
    /// The condition's terms (registers only) and their result words.
    pub terms: Vec<Term>,
}

fn refuse(test: &LitmusTest, construct: impl Into<String>, why: &str) -> KernelError {
    KernelError::Inexpressible {
        at: format!("`{}`", test.name),
        construct: construct.into(),
        why: why.to_string(),
    }
}

impl ProxyLayout {
    /// The layout of `test`, or why the proxy kernel cannot run it: a memory term in the
    /// condition, a shared location used from two CTAs, a copy no thread waits for, an
    /// operation other than weak or strong `ld`/`st`, `fence`, `fence.proxy.async`,
    /// `cp.async.bulk` and `mbarrier.try_wait`, or threads on several GPUs or clusters.
    pub fn new(test: &LitmusTest) -> Result<ProxyLayout, KernelError> {
        let mut ctas: Vec<(u32, u32)> = Vec::new();
        let mut roles = Vec::new();
        let mut per_cta: Vec<u32> = Vec::new();
        for t in &test.threads {
            if t.gpu != 0 || t.cluster.is_some() {
                return Err(refuse(
                    test,
                    "gpu/cluster",
                    "the async-proxy kernel runs on one GPU without clusters",
                ));
            }
            let key = (t.gpu, t.cta);
            let c = match ctas.iter().position(|&k| k == key) {
                Some(c) => c,
                None => {
                    ctas.push(key);
                    per_cta.push(0);
                    ctas.len() - 1
                }
            };
            roles.push((c as u32, per_cta[c]));
            per_cta[c] += 1;
        }
        let space_of = |l: &str| {
            test.locations
                .iter()
                .find(|m| m.name == l)
                .map_or(Space::Global, |m| m.space)
        };
        let mut lay = ProxyLayout {
            roles,
            ctas: ctas.len() as u32,
            warps: per_cta.iter().copied().max().unwrap_or(1),
            global: Vec::new(),
            shared: Vec::new(),
            mbarriers: Vec::new(),
            terms: Vec::new(),
        };
        let mut waited = Vec::new();
        let mut shared_cta: Vec<(String, u32)> = Vec::new();
        for (ti, t) in test.threads.iter().enumerate() {
            for op in &t.ops {
                match op {
                    Op::BulkCopy { dst, src, mbar } => {
                        if space_of(dst) != Space::Shared || space_of(src) != Space::Global {
                            return Err(refuse(
                                test,
                                crate::atomics::litmus::dat3m::instr_text(op),
                                "a bulk copy here goes from a global location to a shared one",
                            ));
                        }
                        lay.mbarriers.push(mbar.clone());
                    }
                    Op::MbarWait { mbar } => waited.push(mbar.clone()),
                    Op::Ld { .. } | Op::St { .. } | Op::Fence { .. } => {}
                    Op::ProxyFence {
                        kind: ProxyFenceKind::Async,
                    } => {}
                    _ => {
                        return Err(refuse(test, crate::atomics::litmus::dat3m::instr_text(op), "the async-proxy kernel runs ld, st, fence, fence.proxy.async, cp.async.bulk and mbarrier.try_wait only"));
                    }
                }
                for l in op.locs() {
                    if lay.mbarriers.iter().any(|m| m == l) {
                        continue;
                    }
                    match space_of(l) {
                        Space::Shared => {
                            let cta = lay.roles[ti].0;
                            match shared_cta.iter().find(|(n, _)| n == l) {
                                Some((_, c)) if *c != cta => {
                                    return Err(refuse(
                                        test,
                                        l,
                                        "a shared location is used by the threads of one CTA",
                                    ));
                                }
                                Some(_) => {}
                                None => {
                                    shared_cta.push((l.to_string(), cta));
                                    lay.shared.push(l.to_string());
                                }
                            }
                        }
                        _ if !lay.global.iter().any(|g| g == l) => lay.global.push(l.to_string()),
                        _ => {}
                    }
                }
            }
        }
        if let Some(m) = lay.mbarriers.iter().find(|m| !waited.contains(m)) {
            return Err(refuse(test, m.as_str(), "every copy is waited for (a CTA may not exit with a copy into its shared memory in flight)"));
        }
        let verdict =
            model::try_check(test).map_err(|e| refuse(test, "condition", &e.to_string()))?;
        for term in &verdict.terms {
            if !matches!(term, Term::Reg { .. }) {
                return Err(refuse(
                    test,
                    term.to_string(),
                    "the async-proxy kernel reads back registers, not final memory",
                ));
            }
        }
        lay.terms = verdict.terms;
        Ok(lay)
    }

    fn global_index(&self, l: &str) -> Option<usize> {
        self.global.iter().position(|g| g == l)
    }

    /// The address register of location `l` (`%g`, `%s` or `%m` and its index).
    fn addr(&self, l: &str) -> Result<String, KernelError> {
        if let Some(j) = self.mbarriers.iter().position(|m| m == l) {
            return Ok(format!("[%m{j}]"));
        }
        if let Some(j) = self.shared.iter().position(|m| m == l) {
            return Ok(format!("[%s{j}]"));
        }
        self.global_index(l)
            .map(|j| format!("[%g{j}]"))
            .ok_or_else(|| KernelError::UnknownLocation(l.to_string()))
    }

    fn space(&self, l: &str) -> &'static str {
        if self.shared.iter().any(|m| m == l) {
            ".shared"
        } else {
            ".global"
        }
    }

    /// Result words per instance: one per term, then "did not terminate".
    pub(crate) fn result_words(&self) -> usize {
        self.terms.len() + 1
    }

    /// Threads per CTA.
    pub fn block(&self) -> u32 {
        LANES * self.warps
    }
}

/// The test's register `reg` of thread `t` as a kernel register.
fn reg(regs: &mut Vec<(usize, String)>, t: usize, r: &str) -> String {
    let k = match regs.iter().position(|(u, s)| *u == t && s == r) {
        Some(k) => k,
        None => {
            regs.push((t, r.to_string()));
            regs.len() - 1
        }
    };
    format!("%v{k}")
}

fn value(regs: &mut Vec<(usize, String)>, t: usize, o: &Operand) -> Result<String, KernelError> {
    Ok(match o {
        Operand::Reg(r) => reg(regs, t, r),
        Operand::Const(v) => i32::try_from(*v)
            .map_err(|_| KernelError::Wide {
                at: format!("P{t}"),
                value: *v,
            })?
            .to_string(),
    })
}

fn sem_scope(sem: Sem, scope: Option<crate::atomics::litmus::Scope>) -> String {
    match (sem, scope) {
        (Sem::Weak, _) | (_, None) => String::new(),
        (s, Some(sc)) => format!(".{}.{}", s.name(), sc.name()),
    }
}

/// The code of thread `t`'s role: its operations, then its result words.
fn role_code(
    test: &LitmusTest,
    lay: &ProxyLayout,
    t: usize,
    regs: &mut Vec<(usize, String)>,
    out: &mut String,
) -> Result<(), KernelError> {
    let _ = writeln!(out, "ROLE{t}:");
    for (r, v) in &test.threads[t].regs {
        let _ = writeln!(out, "\tmov.b32 {}, {};", reg(regs, t, r), *v as i32);
    }
    for (oi, op) in test.threads[t].ops.iter().enumerate() {
        let line = match op {
            Op::Ld {
                reg: r,
                loc,
                sem,
                scope,
            } => format!(
                "ld{}{}.u32 {}, {};",
                sem_scope(*sem, *scope),
                lay.space(loc),
                reg(regs, t, r),
                lay.addr(loc)?
            ),
            Op::St {
                loc,
                val,
                sem,
                scope,
            } => format!(
                "st{}{}.u32 {}, {};",
                sem_scope(*sem, *scope),
                lay.space(loc),
                lay.addr(loc)?,
                value(regs, t, val)?
            ),
            Op::Fence { sem, scope } => format!("fence.{}.{};", sem.name(), scope.name()),
            Op::ProxyFence { .. } => "fence.proxy.async;".to_string(),
            Op::BulkCopy { dst, src, mbar } => format!(
                "mbarrier.arrive.expect_tx.shared::cta.b64 %k_state, {m}, {COPY_BYTES};\n\t\
                 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes {d}, {s}, {COPY_BYTES}, {m};",
                m = lay.addr(mbar)?,
                d = lay.addr(dst)?,
                s = lay.addr(src)?
            ),
            Op::MbarWait { mbar } => format!(
                "mov.u32 %k_iter, 0;\nWAIT{t}_{oi}:\n\t\
                 mbarrier.try_wait.parity.shared::cta.b64 %k_p, {m}, 0;\n\t@%k_p bra WAITED{t}_{oi};\n\t\
                 add.u32 %k_iter, %k_iter, 1;\n\tsetp.ge.u32 %k_p, %k_iter, {LOOP_CAP};\n\t\
                 @%k_p bra CAP;\n\tbra WAIT{t}_{oi};\nWAITED{t}_{oi}:",
                m = lay.addr(mbar)?
            ),
            _ => unreachable!("ProxyLayout::new refuses every other operation"),
        };
        let _ = writeln!(out, "\t{line}");
    }
    for (k, term) in lay.terms.iter().enumerate() {
        if let Term::Reg { thread, reg: r } = term {
            if *thread == t {
                let _ = writeln!(
                    out,
                    "\tst.global.u32 [%k_res+{}], {};",
                    4 * k,
                    reg(regs, t, r)
                );
            }
        }
    }
    out.push_str("\tbra DONE;\n");
    Ok(())
}

/// The PTX module of `test` under `lay`.
pub fn generate(test: &LitmusTest, lay: &ProxyLayout) -> Result<String, KernelError> {
    let mut regs: Vec<(usize, String)> = Vec::new();
    let mut roles = String::new();
    for t in 0..test.threads.len() {
        role_code(test, lay, t, &mut regs, &mut roles)?;
    }
    let (ng, ns, nm) = (lay.global.len(), lay.shared.len(), lay.mbarriers.len());
    let mut s = String::new();
    let _ = write!(
        s,
        "// gpucts async-proxy litmus kernel for `{name}` ({roles} threads, {ctas} CTAs a group)\n\
         .version {PTX_VERSION}\n.target {TARGET}\n.address_size 64\n\n\
         .shared .align 16 .b32 {DATA}[{data}];\n.shared .align 8 .b64 {MBARRIERS}[{mb}];\n\n\
         .visible .entry {KERNEL}(\n\t.param .u64 p_locs,\n\t.param .u64 p_results\n)\n{{\n\
         \t.reg .pred %k_p;\n\
         \t.reg .b32 %k_l, %k_lane, %k_warp, %k_b, %k_grp, %k_cta, %k_inst, %k_iter, %k_role;\n\
         \t.reg .b64 %k_w, %k_locs, %k_res, %k_base, %k_state;\n\
         \t.reg .b32 %v<{nv}>;\n\t.reg .b64 %g<{ngr}>, %s<{nsr}>, %m<{nmr}>;\n\
         \tld.param.u64 %k_w, [p_locs];\n\tcvta.to.global.u64 %k_locs, %k_w;\n\
         \tld.param.u64 %k_w, [p_results];\n\tcvta.to.global.u64 %k_res, %k_w;\n\
         \tmov.u32 %k_l, %tid.x;\n\tand.b32 %k_lane, %k_l, 31;\n\tshr.u32 %k_warp, %k_l, 5;\n\
         \tmov.u32 %k_b, %ctaid.x;\n\tdiv.u32 %k_grp, %k_b, {ctas};\n\trem.u32 %k_cta, %k_b, {ctas};\n\
         \tmad.lo.u32 %k_inst, %k_grp, {LANES}, %k_lane;\n\
         \tmul.wide.u32 %k_w, %k_inst, {rw};\n\tadd.s64 %k_res, %k_res, %k_w;\n",
        name = test.name,
        roles = test.threads.len(),
        ctas = lay.ctas,
        data = (LANES as usize * ns * 4).max(4),
        mb = (LANES as usize * nm).max(1),
        nv = regs.len().max(1),
        ngr = ng.max(1),
        nsr = ns.max(1),
        nmr = nm.max(1),
        rw = 4 * lay.result_words(),
    );
    // Addresses: 16 bytes a location, 8 an mbarrier.
    let _ = writeln!(
        s,
        "\tmul.wide.u32 %k_w, %k_inst, {};\n\tadd.s64 %k_base, %k_locs, %k_w;",
        16 * ng.max(1)
    );
    for j in 0..ng {
        let _ = writeln!(s, "\tadd.s64 %g{j}, %k_base, {};", 16 * j);
    }
    let _ = writeln!(
        s,
        "\tmov.u64 %k_base, {DATA};\n\tmul.wide.u32 %k_w, %k_lane, {};\n\tadd.s64 %k_base, %k_base, %k_w;",
        16 * ns.max(1)
    );
    for j in 0..ns {
        let _ = writeln!(s, "\tadd.s64 %s{j}, %k_base, {};", 16 * j);
    }
    let _ = writeln!(
        s,
        "\tmov.u64 %k_base, {MBARRIERS};\n\tmul.wide.u32 %k_w, %k_lane, {};\n\tadd.s64 %k_base, %k_base, %k_w;",
        8 * nm.max(1)
    );
    for j in 0..nm {
        let _ = writeln!(s, "\tadd.s64 %m{j}, %k_base, {};", 8 * j);
    }
    // Warp 0 of each CTA: the shared initial values, the mbarriers, then the proxy fence that
    // puts those generic writes before any copy's async writes.
    s.push_str("\tsetp.ne.u32 %k_p, %k_warp, 0;\n\t@%k_p bra SETUP_DONE;\n");
    for (j, l) in lay.shared.iter().enumerate() {
        let _ = writeln!(s, "\tst.shared.u32 [%s{j}], {};", test.init_of(l) as i32);
    }
    for j in 0..nm {
        let _ = writeln!(s, "\tmbarrier.init.shared::cta.b64 [%m{j}], 1;");
    }
    s.push_str("\tfence.proxy.async.shared::cta;\nSETUP_DONE:\n\tbar.sync 0;\n");
    let _ = writeln!(s, "\tmad.lo.u32 %k_role, %k_cta, {}, %k_warp;", lay.warps);
    for (t, (c, w)) in lay.roles.iter().enumerate() {
        let _ = writeln!(
            s,
            "\tsetp.eq.u32 %k_p, %k_role, {};\n\t@%k_p bra ROLE{t};",
            c * lay.warps + w
        );
    }
    s.push_str("\tbra DONE;\n");
    s.push_str(&roles);
    let _ = write!(
        s,
        "CAP:\n\tst.global.u32 [%k_res+{}], 1;\nDONE:\n\tret;\n}}\n",
        4 * lay.terms.len()
    );
    Ok(s)
}

/// What launches of a proxy test gave.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyRun {
    /// Outcome (the values of the model's terms, in its order) → instances.
    pub histogram: Histogram,
    pub launches: u64,
    pub instances: u64,
    /// Instances a thread of which stopped at the wait loop's cap: no outcome.
    pub did_not_terminate: u64,
    pub kernel_time: Duration,
}

impl ProxyRun {
    /// Adds one launch's result words (`result_words` per instance).
    fn decode(&mut self, lay: &ProxyLayout, words: &[u32]) {
        let n = lay.result_words();
        for inst in words.chunks(n) {
            if inst[n - 1] != 0 {
                self.did_not_terminate += 1;
                continue;
            }
            let o: Vec<i64> = inst[..n - 1].iter().map(|&w| i64::from(w as i32)).collect();
            *self.histogram.entry(o).or_insert(0) += 1;
        }
        self.instances += (words.len() / n) as u64;
        self.launches += 1;
    }
}

/// The global buffer's initial words: each instance's global locations, the value in the
/// first word of its 16 bytes.
fn initial_locations(test: &LitmusTest, lay: &ProxyLayout, instances: usize) -> Vec<u32> {
    let ng = lay.global.len().max(1);
    let mut words = vec![0u32; instances * ng * 4];
    for i in 0..instances {
        for (j, l) in lay.global.iter().enumerate() {
            words[(i * ng + j) * 4] = test.init_of(l) as u32;
        }
    }
    words
}

/// `launches` emulated launches of `test` ([`super::emulate`]'s machine, which performs each
/// bulk copy at a random later step and lets it read what the async proxy may see).
pub fn emulate(test: &LitmusTest, launches: u64, seed: u64) -> Result<ProxyRun, RunError> {
    let lay = ProxyLayout::new(test)?;
    let ptx = generate(test, &lay)?;
    let instances = (LANES * EMULATED_GROUPS) as usize;
    let locs = initial_locations(test, &lay, instances);
    let mut run = ProxyRun::default();
    for k in 0..launches {
        let words = super::emulate::launch_proxy(
            &ptx,
            lay.block(),
            lay.block() * lay.ctas * EMULATED_GROUPS,
            &locs,
            instances * lay.result_words(),
            seed.wrapping_add(k),
        )?;
        run.decode(&lay, &words);
    }
    Ok(run)
}

/// `launches` launches of `test` on `session`, stopping after `budget`.
pub fn run(
    session: &Session,
    test: &LitmusTest,
    launches: u64,
    budget: Duration,
) -> Result<ProxyRun, RunError> {
    let lay = ProxyLayout::new(test)?;
    let ptx = generate(test, &lay)?;
    let e = RunError::Driver;
    let module = session.load_ptx(&ptx)?;
    let f = session.function(&module, KERNEL).map_err(e)?;
    let instances = (LANES * GPU_GROUPS) as usize;
    let image = initial_locations(test, &lay, instances);
    let locs = session.buffer(image.len() * 4).map_err(e)?;
    let results = session
        .buffer(instances * lay.result_words() * 4)
        .map_err(e)?;
    let cfg = LaunchConfig {
        grid: GPU_GROUPS * lay.ctas,
        block: lay.block(),
        shared_bytes: 0,
    };
    let mut run = ProxyRun::default();
    let start = Instant::now();
    while run.launches < launches && start.elapsed() < budget {
        session.copy_u32_to_device(locs.ptr, &image).map_err(e)?;
        session.memset(results.ptr, 0, results.bytes).map_err(e)?;
        let args = [KernelArg::Ptr(locs.ptr), KernelArg::Ptr(results.ptr)];
        // SAFETY: `generate` declares exactly these parameters: two `.param .u64` buffer
        // addresses, the location buffer and the results buffer, sized for `instances`.
        run.kernel_time += unsafe { session.launch_timed(f, cfg, &args) }.map_err(e)?;
        let words = session
            .copy_u32_to_host(results.ptr, instances * lay.result_words())
            .map_err(e)?;
        run.decode(&lay, &words);
    }
    Ok(run)
}

/// What a proxy case expects of the outcomes: the model's verdict, which the ISA defines, or
/// none (an observation: the outcomes are recorded, not judged).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    /// The PTX ISA defines the outcome: no outcome outside the model's allowed set.
    Defined,
    /// The PTX ISA does not define it: the outcomes are recorded as observations.
    Observation,
}

/// The outcomes in words: `P1:r0=1 P1:r1=0: 12 instances`, most frequent first.
fn histogram_text(terms: &[Term], h: &Histogram) -> String {
    let mut rows: Vec<(&Vec<i64>, &u64)> = h.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1));
    rows.iter()
        .map(|(o, n)| {
            let vals: Vec<String> = terms
                .iter()
                .zip(o.iter())
                .map(|(t, v)| format!("{t}={v}"))
                .collect();
            format!("{}: {n}", vals.join(" "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Judge a run of `test` as `expect` says: a defined test fails on an outcome the model
/// forbids; an observation passes tagged [`crate::outcome::OBSERVATION`], its note naming every
/// outcome seen and the model's reading (the mixed-proxy model's, which the ISA does not
/// state).
pub fn judge(test: &LitmusTest, expect: Expectation, run: &ProxyRun) -> CaseStatus {
    let verdict = match model::try_check(test) {
        Ok(v) => v,
        Err(e) => return CaseStatus::error(format!("the checker gave no verdict: {e}")),
    };
    let seen = histogram_text(&verdict.terms, &run.histogram);
    let figures = format!(
        "{} instances in {} launches, {} did not terminate",
        run.instances, run.launches, run.did_not_terminate
    );
    if run.histogram.is_empty() {
        return CaseStatus::error(format!("no instance gave an outcome ({figures})"));
    }
    let forbidden: Vec<&Vec<i64>> = run
        .histogram
        .keys()
        .filter(|o| !verdict.outcome_allowed(o))
        .collect();
    let word = if verdict.allowed {
        "allowed"
    } else {
        "forbidden"
    };
    match expect {
        Expectation::Defined if forbidden.is_empty() => CaseStatus::pass_with(format!(
            "no outcome the model forbids (condition {word}); seen {seen}; {figures}"
        )),
        Expectation::Defined => {
            let mut h = Histogram::new();
            for o in forbidden {
                h.insert(o.clone(), run.histogram[o]);
            }
            CaseStatus::fail_detail(
                "only outcomes the PTX memory model allows".to_string(),
                format!("forbidden outcomes: {}", histogram_text(&verdict.terms, &h)),
                format!("seen {seen}; {figures}"),
            )
        }
        Expectation::Observation => CaseStatus::Pass {
            note: Some(format!(
                "observation, not conformance (the PTX ISA does not define the outcome): seen {seen}; \
                 the mixed-proxy model's reading: condition {word}; {figures}"
            )),
            tags: vec![crate::outcome::OBSERVATION.to_string()],
            control: None,
        },
    }
}

/// The `atomics.gpu.proxy.*` case: run the test in `file` on the run's GPU (`ctx`; sm_90, a
/// GPU older than that skips naming it) and judge it.
pub fn case(
    ctx: &crate::area::CaseContext,
    file: &std::path::Path,
    expect: Expectation,
    iterations: u64,
) -> CaseStatus {
    let test = match crate::atomics::litmus::load_file(file) {
        Ok(t) => t,
        Err(e) => return CaseStatus::error(e.to_string()),
    };
    if let Err(e) = ProxyLayout::new(&test) {
        return CaseStatus::error(e.to_string());
    }
    let session = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(e),
    };
    match session.compute_capability() {
        Ok((major, minor)) if major < 9 => {
            return CaseStatus::skip(
                Capability::Gpu,
                format!("cp.async.bulk, mbarrier expect_tx and fence.proxy.async need sm_90; GPU 0 is sm_{major}{minor}"),
            )
        }
        Ok(_) => {}
        Err(e) => return CaseStatus::error(e.to_string()),
    }
    match run(&session, &test, iterations, super::RUN_BUDGET) {
        Ok(r) => judge(&test, expect, &r),
        Err(e) => CaseStatus::error(e),
    }
}

#[cfg(test)]
mod tests;
