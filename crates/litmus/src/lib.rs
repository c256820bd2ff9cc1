//! Litmus tests for the PTX memory consistency model: the data model, its YAML form, the
//! condition language, conversion to and from Dat3M's PTX `.litmus` syntax ([`dat3m`]), and
//! an exhaustive checker of the PTX memory model ([`model`]: which outcomes the model allows).
//! The crate knows nothing of gpucts's harness; gpucts's atomics area, its GPU litmus engine
//! and its emulator use it. See `examples/check.rs` for the whole path from a file to a
//! verdict.
//!
//! A test is a handful of threads, each placed in a CTA / cluster / GPU, running PTX memory
//! operations (`ld`, `st`, `atom`, `fence`) with a memory-ordering semantic and a scope
//! (ptx-interop 13.2 §4 maps C++ atomics onto exactly these), plus a condition over final
//! register and memory values with a quantifier (`exists`, `~exists`, `forall`).
//!
//! YAML shape (every map rejects unknown keys):
//!
//! ```yaml
//! name: MP.rel_acq.gpu.inter_cta
//! locations: [{name: x}, {name: y, init: 0, space: global}]
//! threads:
//!   - cta: 0
//!     ops:
//!       - st: {loc: x, val: 1, sem: relaxed, scope: gpu}
//!       - st: {loc: y, val: 1, sem: release, scope: gpu}
//!   - cta: 1
//!     ops:
//!       - ld: {reg: r0, loc: y, sem: acquire, scope: gpu}
//!       - ld: {reg: r1, loc: x, sem: relaxed, scope: gpu}
//! condition: 'exists (P1:r0 == 1 /\ P1:r1 == 0)'
//! ```

mod condition;
pub mod dat3m;
pub mod model;
mod validate;
mod yaml;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

// The crate's one vocabulary for semantics, scopes, state spaces and atomic operations
// (ptx::instr); a litmus test uses them as the PTX ISA names them.
pub use gpucts_ptx::instr::{AtomOp, Scope, Sem, Space};

pub use condition::{
    parse_condition, Condition, ConditionError, Prop, Quantifier, Term, Value, MAX_CONDITION_DEPTH,
};
pub use yaml::{from_yaml, to_yaml};

/// Where a test's threads run relative to each other: the catalogue's and the GPU runner's one
/// definition (the model itself reads each thread's cta/cluster/gpu).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString, strum::VariantArray,
)]
#[strum(serialize_all = "snake_case")]
pub enum Placement {
    /// All threads in one CTA (CTA 0), thread i in warp i.
    IntraCta,
    /// Thread i in CTA i.
    InterCta,
    /// Thread i in CTA i, all of them in one thread block cluster (cluster 0): the CTAs of one
    /// cluster, which `.cluster` scope includes (PTX ISA "Scope": the set of all threads in
    /// the same cluster as the current thread).
    IntraCluster,
    /// Thread i in CTA i of cluster i: threads in different clusters, which `.cluster` scope
    /// does not include.
    InterCluster,
}

impl Placement {
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Whether the placement puts its threads in thread block clusters of several CTAs.
    pub fn is_cluster(self) -> bool {
        matches!(self, Placement::IntraCluster | Placement::InterCluster)
    }

    /// Thread `i`'s CTA, cluster and warp under this placement (the catalogue's and the
    /// GPU runner's one reading of it).
    pub fn place(self, i: u32) -> (u32, Option<u32>, Option<u32>) {
        match self {
            Placement::IntraCta => (0, None, Some(i)),
            Placement::InterCta => (i, None, None),
            Placement::IntraCluster => (i, Some(0), None),
            Placement::InterCluster => (i, Some(i), None),
        }
    }

    /// How a description says where the threads run.
    pub fn describe(self) -> &'static str {
        match self {
            Placement::IntraCta => "all threads in one CTA",
            Placement::InterCta => "each thread in its own CTA",
            Placement::IntraCluster => "each thread in its own CTA, all in one cluster",
            Placement::InterCluster => "each thread in its own cluster",
        }
    }
}

/// A value operand: a constant or a register of the same thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Operand {
    Const(i64),
    Reg(String),
}

impl fmt::Display for Operand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operand::Const(v) => write!(f, "{v}"),
            Operand::Reg(r) => f.write_str(r),
        }
    }
}

fn is_weak(s: &Sem) -> bool {
    *s == Sem::Weak
}

/// One operation of a thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Op {
    /// `ld{.sem.scope} reg, [loc]`
    Ld {
        reg: String,
        loc: String,
        #[serde(default = "weak", skip_serializing_if = "is_weak")]
        sem: Sem,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
    },
    /// `st{.sem.scope} [loc], val`
    St {
        loc: String,
        val: Operand,
        #[serde(default = "weak", skip_serializing_if = "is_weak")]
        sem: Sem,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
    },
    /// `atom.sem.scope.op reg, [loc], val` (`cas`: `reg, [loc], cmp, val`)
    Atom {
        op: AtomOp,
        reg: String,
        loc: String,
        val: Operand,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cmp: Option<Operand>,
        sem: Sem,
        scope: Scope,
    },
    /// `red.sem.scope.op [loc], val`: an atomic reduction, an RMW whose old value is dropped.
    Red {
        op: AtomOp,
        loc: String,
        val: Operand,
        sem: Sem,
        scope: Scope,
    },
    /// `fence.sem.scope` with sem one of sc, acq_rel, acquire, release.
    Fence { sem: Sem, scope: Scope },
    /// A register move (no memory event); Dat3M writes it `ld r0, 2`.
    Mov { reg: String, val: Operand },
    /// `add r2, r2, 1`: register arithmetic (no memory event).
    Local {
        op: LocalOp,
        reg: String,
        a: Operand,
        b: Operand,
    },
    /// `LC00:` a branch target.
    Label { name: String },
    /// `bne r0, 1, LC01`: jump to `target` when `a cond b`.
    Branch {
        cond: BranchCond,
        a: Operand,
        b: Operand,
        target: String,
    },
    /// `goto LC00` (PTX `bra LC00`): an unconditional jump.
    Goto { target: String },
    /// `bar.cta.sync INSTANCE[, ID[, QUORUM]]` / `bar.cta.arrive ...` (Dat3M's form; PTX's
    /// `bar.sync ID[, COUNT]` and `barrier.sync ...` read with instance 0). Threads of one CTA
    /// reaching barriers with the same id (the instance when no id is given) synchronise;
    /// `quorum` is the thread count the barrier waits for (PTX ISA "bar, barrier": `b`).
    Barrier {
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        arrive: bool,
        #[serde(default)]
        instance: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<Operand>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quorum: Option<Operand>,
    },
    /// `fence.proxy.{surface,texture,constant,alias}` (PTX ISA 7.5 "proxies").
    ProxyFence { kind: ProxyFenceKind },
    /// A load through a non-generic proxy: `tld` (texture), `suld` (surface), `cold` /
    /// `ld.const` (constant).
    ProxyLd {
        proxy: Proxy,
        reg: String,
        loc: String,
        #[serde(default = "weak", skip_serializing_if = "is_weak")]
        sem: Sem,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
    },
    /// A store through the surface proxy: `sust`.
    ProxySt {
        proxy: Proxy,
        loc: String,
        val: Operand,
        #[serde(default = "weak", skip_serializing_if = "is_weak")]
        sem: Sem,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        scope: Option<Scope>,
    },
    /// `cp.async.bulk [dst], [src], 16, [mbar]` (Dat3M-style text `cp.async.bulk dst, src,
    /// mbar`): a bulk copy of `src` (global) into `dst` (the issuing CTA's shared memory),
    /// performed asynchronously in the async proxy and completing on mbarrier `mbar` (PTX ISA
    /// "cp.async.bulk": the copy is a weak memory operation, the complete-tx on the mbarrier
    /// has `.release` semantics at `.cluster` scope; "Async Proxy": its completion is followed
    /// by an implicit generic-async proxy fence). The issuing thread also arrives on `mbar`
    /// expecting the copy's bytes (`mbarrier.arrive.expect_tx`), so the phase completes when
    /// the copy does.
    BulkCopy {
        dst: String,
        src: String,
        mbar: String,
    },
    /// `mbarrier.try_wait.parity [mbar], 0` in a loop until it returns true: waits for the
    /// completion of phase 0 of `mbar` with the default `.acquire.cta` semantics (PTX ISA
    /// "mbarrier.test_wait/try_wait"), after which the results of the asynchronous operations
    /// that phase tracked may be accessed ("Mbarrier-based mechanism").
    MbarWait { mbar: String },
}

/// Register arithmetic of Dat3M's PTX litmus dialect (`add`, `sub`, `mul`, `div`, `and`, `or`,
/// `xor`), on 64-bit two's-complement values; division by zero gives 0 (no litmus test
/// divides by zero; the value is fixed so that every execution has one).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum LocalOp {
    Add,
    Sub,
    Mul,
    Div,
    And,
    Or,
    Xor,
}

impl LocalOp {
    pub fn name(self) -> &'static str {
        self.into()
    }
    pub fn parse(s: &str) -> Option<LocalOp> {
        s.parse().ok()
    }
    pub fn apply(self, a: i64, b: i64) -> i64 {
        match self {
            LocalOp::Add => a.wrapping_add(b),
            LocalOp::Sub => a.wrapping_sub(b),
            LocalOp::Mul => a.wrapping_mul(b),
            LocalOp::Div => a.checked_div(b).unwrap_or(0),
            LocalOp::And => a & b,
            LocalOp::Or => a | b,
            LocalOp::Xor => a ^ b,
        }
    }
}

/// The comparison of a conditional branch (`beq`, `bne`, `blt`, `ble`, `bgt`, `bge`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
pub enum BranchCond {
    #[strum(serialize = "beq")]
    Eq,
    #[strum(serialize = "bne")]
    Ne,
    #[strum(serialize = "blt")]
    Lt,
    #[strum(serialize = "ble")]
    Le,
    #[strum(serialize = "bgt")]
    Gt,
    #[strum(serialize = "bge")]
    Ge,
}

impl BranchCond {
    /// The Dat3M mnemonic (`beq`, ...).
    pub fn mnemonic(self) -> &'static str {
        self.into()
    }
    pub fn from_mnemonic(s: &str) -> Option<BranchCond> {
        s.parse().ok()
    }
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            BranchCond::Eq => a == b,
            BranchCond::Ne => a != b,
            BranchCond::Lt => a < b,
            BranchCond::Le => a <= b,
            BranchCond::Gt => a > b,
            BranchCond::Ge => a >= b,
        }
    }
    /// The comparison that holds exactly when this one does not.
    pub fn negate(self) -> BranchCond {
        match self {
            BranchCond::Eq => BranchCond::Ne,
            BranchCond::Ne => BranchCond::Eq,
            BranchCond::Lt => BranchCond::Ge,
            BranchCond::Le => BranchCond::Gt,
            BranchCond::Gt => BranchCond::Le,
            BranchCond::Ge => BranchCond::Lt,
        }
    }
}

/// The proxy through which memory is accessed (PTX ISA 7.5, memory consistency model,
/// "proxies": generic, texture, surface, constant).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Proxy {
    #[default]
    Generic,
    Texture,
    Surface,
    Constant,
    /// The asynchronous proxy of `cp{.reduce}.async.bulk` (PTX ISA "Async Proxy"); reached only
    /// through [`Op::BulkCopy`], never declared as an alias.
    Async,
}

impl Proxy {
    pub fn name(self) -> &'static str {
        self.into()
    }
    pub fn parse(s: &str) -> Option<Proxy> {
        s.parse().ok()
    }
}

/// What a `fence.proxy.*` orders: one non-generic proxy against the generic one, or virtual
/// aliases of one physical location (`alias`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ProxyFenceKind {
    Texture,
    Surface,
    Constant,
    Alias,
    /// `fence.proxy.async`: orders the async proxy against the generic proxy in both
    /// directions, on all state spaces (PTX ISA "membar/fence": `.async` with no state space).
    Async,
}

impl ProxyFenceKind {
    pub fn name(self) -> &'static str {
        self.into()
    }
    pub fn parse(s: &str) -> Option<ProxyFenceKind> {
        s.parse().ok()
    }
    /// The proxy the fence orders against the generic proxy (`None` for `alias`).
    pub fn proxy(self) -> Option<Proxy> {
        match self {
            ProxyFenceKind::Texture => Some(Proxy::Texture),
            ProxyFenceKind::Surface => Some(Proxy::Surface),
            ProxyFenceKind::Constant => Some(Proxy::Constant),
            ProxyFenceKind::Async => Some(Proxy::Async),
            ProxyFenceKind::Alias => None,
        }
    }
}

impl Op {
    /// The location a memory operation accesses.
    pub fn loc(&self) -> Option<&str> {
        match self {
            Op::Ld { loc, .. }
            | Op::St { loc, .. }
            | Op::Atom { loc, .. }
            | Op::Red { loc, .. }
            | Op::ProxyLd { loc, .. }
            | Op::ProxySt { loc, .. } => Some(loc),
            _ => None,
        }
    }
    /// Every location an operation names: [`Op::loc`]'s, or a bulk copy's destination, source
    /// and mbarrier, or the mbarrier a wait reads.
    pub fn locs(&self) -> Vec<&str> {
        match self {
            Op::BulkCopy { dst, src, mbar } => vec![dst, src, mbar],
            Op::MbarWait { mbar } => vec![mbar],
            _ => self.loc().into_iter().collect(),
        }
    }
    /// The register an operation writes.
    pub fn dest(&self) -> Option<&str> {
        match self {
            Op::Ld { reg, .. }
            | Op::Atom { reg, .. }
            | Op::Mov { reg, .. }
            | Op::Local { reg, .. }
            | Op::ProxyLd { reg, .. } => Some(reg),
            _ => None,
        }
    }
    /// Whether the operation writes memory or takes part in a barrier (a loop iteration
    /// without any is a side-effect-free spin).
    pub fn has_effect(&self) -> bool {
        matches!(
            self,
            Op::St { .. }
                | Op::Atom { .. }
                | Op::Red { .. }
                | Op::ProxySt { .. }
                | Op::Barrier { .. }
                | Op::BulkCopy { .. }
        )
    }
    /// The registers an operation reads.
    pub fn operand_regs(&self) -> Vec<&str> {
        let ops: Vec<&Operand> = match self {
            Op::St { val, .. }
            | Op::Red { val, .. }
            | Op::Mov { val, .. }
            | Op::ProxySt { val, .. } => {
                vec![val]
            }
            Op::Atom { val, cmp, .. } => std::iter::once(val).chain(cmp.as_ref()).collect(),
            Op::Local { a, b, .. } | Op::Branch { a, b, .. } => vec![a, b],
            Op::Barrier { id, quorum, .. } => id.iter().chain(quorum.iter()).collect(),
            _ => Vec::new(),
        };
        ops.into_iter()
            .filter_map(|o| match o {
                Operand::Reg(r) => Some(r.as_str()),
                Operand::Const(_) => None,
            })
            .collect()
    }
    /// Whether the operation is control flow (label, branch, jump).
    pub fn is_control(&self) -> bool {
        matches!(self, Op::Label { .. } | Op::Branch { .. } | Op::Goto { .. })
    }
}

fn weak() -> Sem {
    Sem::Weak
}

/// A thread and where it runs. Scope inclusion is decided by (gpu, cluster, cta); `warp` only
/// guides a GPU runner's placement (same warp or not) and does not change the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thread {
    pub cta: u32,
    /// Cluster of the CTA; when absent each CTA is its own cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<u32>,
    #[serde(default)]
    pub gpu: u32,
    /// Warp index within the CTA (a runner placement hint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warp: Option<u32>,
    /// Initial register values (default 0).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub regs: BTreeMap<String, i64>,
    pub ops: Vec<Op>,
}

impl Thread {
    /// The registers live before each operation (index `ops.len()`: the thread's end): read
    /// on some path from there before being written. At the end every register the thread
    /// names counts as read, since the condition may name any. A backward dataflow over the
    /// thread's labels, branches and gotos, to a fixed point.
    pub fn live_registers(&self) -> Vec<std::collections::BTreeSet<&str>> {
        use std::collections::BTreeSet;
        let n = self.ops.len();
        let label = |name: &str| {
            self.ops
                .iter()
                .position(|o| matches!(o, Op::Label { name: l } if l == name))
                .unwrap_or(n)
        };
        let succ: Vec<Vec<usize>> = self
            .ops
            .iter()
            .enumerate()
            .map(|(i, op)| match op {
                Op::Goto { target } => vec![label(target)],
                Op::Branch { target, .. } => vec![label(target), i + 1],
                _ => vec![i + 1],
            })
            .collect();
        let mut all: BTreeSet<&str> = self.regs.keys().map(String::as_str).collect();
        for op in &self.ops {
            all.extend(op.dest());
            all.extend(op.operand_regs());
        }
        let mut live: Vec<BTreeSet<&str>> = vec![BTreeSet::new(); n + 1];
        live[n] = all;
        let mut changed = true;
        while changed {
            changed = false;
            for i in (0..n).rev() {
                let mut out: BTreeSet<&str> = BTreeSet::new();
                for &j in &succ[i] {
                    out.extend(live[j.min(n)].iter().copied());
                }
                if let Some(d) = self.ops[i].dest() {
                    out.remove(d);
                }
                out.extend(self.ops[i].operand_regs());
                if out != live[i] {
                    live[i] = out;
                    changed = true;
                }
            }
        }
        live
    }

    /// Whether op `i`, run in an iteration of a loop whose head has `live_at_head` live, leaves
    /// something a later iteration or the thread's end can see: it writes memory or takes
    /// part in a barrier (a cas only when it succeeds: `cas_counts` says whether to count one
    /// regardless), or writes a register live at the head. An iteration with none of these
    /// is a spin: running it again or not changes nothing later.
    pub fn iteration_effect(
        &self,
        i: usize,
        live_at_head: &std::collections::BTreeSet<&str>,
        cas_counts: bool,
    ) -> bool {
        let op = &self.ops[i];
        let cas = matches!(
            op,
            Op::Atom {
                op: AtomOp::Cas,
                ..
            }
        );
        (op.has_effect() && (cas_counts || !cas))
            || op.dest().is_some_and(|r| live_at_head.contains(r))
    }

    pub fn effective_cluster(&self) -> u32 {
        self.cluster.unwrap_or(self.cta)
    }
    /// Whether an operation of this thread with `scope` includes thread `other`.
    pub fn scope_includes(&self, scope: Scope, other: &Thread) -> bool {
        match scope {
            Scope::Sys => true,
            Scope::Gpu => self.gpu == other.gpu,
            Scope::Cluster => {
                self.gpu == other.gpu && self.effective_cluster() == other.effective_cluster()
            }
            Scope::Cta => {
                self.gpu == other.gpu
                    && self.effective_cluster() == other.effective_cluster()
                    && self.cta == other.cta
            }
        }
    }
}

/// A shared memory location and its initial value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Location {
    pub name: String,
    #[serde(default)]
    pub init: i64,
    #[serde(default, skip_serializing_if = "is_global")]
    pub space: Space,
    /// `name @ PROXY aliases OF`: a virtual address of `OF`'s physical location, accessed
    /// through `PROXY` (PTX ISA 7.5 proxies; Dat3M's init-block declaration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias: Option<Alias>,
}

/// A proxy declaration of a location (`t @ texture aliases x`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Alias {
    pub proxy: Proxy,
    pub of: String,
}

fn is_global(s: &Space) -> bool {
    *s == Space::Global
}

/// A complete litmus test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LitmusTest {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Locations with their initial values; locations used but not listed start at 0.
    #[serde(default)]
    pub locations: Vec<Location>,
    pub threads: Vec<Thread>,
    pub condition: Condition,
}

/// A test that parses but breaks a rule of the model: at an operation (its thread and 1-based
/// position, which readers turn into a line and column), in the condition, or in the test.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTest {
    #[error("P{thread} op {op}: {what}")]
    Op {
        thread: usize,
        op: usize,
        what: String,
    },
    #[error("{0}")]
    Condition(String),
    #[error("{0}")]
    Test(String),
    /// The test's name (readers point at `name:` or the `PTX NAME` header).
    #[error("{0}")]
    Name(String),
    /// The test's description.
    #[error("{0}")]
    Description(String),
    /// The `index`-th (0-based) listed location.
    #[error("{what}")]
    Location { index: usize, what: String },
    /// The `index`-th (0-based) thread.
    #[error("{what}")]
    Thread { index: usize, what: String },
}

/// A litmus YAML text that does not read: at a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    #[error("{line}:{column}: {what}")]
    Syntax {
        line: u64,
        column: u64,
        what: String,
    },
    #[error("{line}:{column}: {source}")]
    Invalid {
        line: u64,
        column: u64,
        source: InvalidTest,
    },
}

/// A litmus file that cannot be read, converted or written (`gpucts litmus ...`, suites).
#[derive(Debug, thiserror::Error)]
pub enum LitmusFileError {
    #[error(transparent)]
    Read(#[from] gpucts_input::InputError),
    #[error("{}:{source}", path.display())]
    Yaml {
        path: std::path::PathBuf,
        source: YamlError,
    },
    #[error("{}:{source}", path.display())]
    Dat3m {
        path: std::path::PathBuf,
        source: dat3m::ImportError,
    },
    #[error("{}: unknown litmus file type (expected .yaml, .yml or .litmus)", path.display())]
    UnknownType { path: std::path::PathBuf },
    #[error("{}: {source}", path.display())]
    Write {
        path: std::path::PathBuf,
        source: serde_saphyr::SerializeError,
    },
}

/// Parses an integer value: a PTX literal ([`gpucts_ptx::literal`]: `010` is octal 8) with
/// an optional sign, in the range of a 64-bit signed value: `-9223372036854775808` (i64::MIN)
/// is accepted and any larger magnitude refused, whatever the base.
pub fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if digits.starts_with(['-', '+']) {
        return None;
    }
    let mag = gpucts_ptx::literal::parse_int(digits)?;
    if neg {
        if mag == 1u64 << 63 {
            Some(i64::MIN)
        } else {
            i64::try_from(mag).ok().map(|v| -v)
        }
    } else {
        i64::try_from(mag).ok()
    }
}

/// Whether `s` can name a register or a location: `[A-Za-z_%][A-Za-z0-9_%$]*` (Dat3M's and
/// PTX's identifiers; `1+1` or an empty address is neither).
pub fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '%')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '%' | '$'))
}

/// The most locations a test may list. Every reader checks these bounds as it reads, before
/// any work that grows with the test (work per location per location makes an init block of
/// 100,000 locations take minutes); real tests have a handful, and the checker itself
/// handles at most 64 events, one initial write per location among them.
pub const MAX_LOCATIONS: usize = 1024;
/// The most threads a test may have.
pub const MAX_THREADS: usize = 256;
/// The most operations a test may have, all threads together.
pub const MAX_OPS: usize = 4096;

/// Why `name` cannot name a test: it must be one line of text with no blank at either end,
/// because the Dat3M header `PTX NAME` holds it on one line and is read trimmed (an empty or
/// multi-line name was exported as text the import refused).
pub fn test_name_problem(name: &str) -> Option<&'static str> {
    if name.trim().is_empty() {
        Some("is empty")
    } else if name.chars().any(char::is_control) {
        Some("holds a line break, tab or other control character")
    } else if name.trim() != name {
        Some("starts or ends with a blank")
    } else {
        None
    }
}

pub use dat3m::{export as export_dat3m, import as import_dat3m};

/// Loads a test from a `.yaml`/`.yml` or Dat3M `.litmus` file.
pub fn load_file(path: &std::path::Path) -> Result<LitmusTest, LitmusFileError> {
    let text = gpucts_input::read_text(path)?;
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let path = path.to_path_buf();
    match ext {
        // Every error of `from_yaml` and `import` displays as `line:column: `.
        "yaml" | "yml" => from_yaml(&text).map_err(|source| LitmusFileError::Yaml { path, source }),
        "litmus" => import_dat3m(&text).map_err(|source| LitmusFileError::Dat3m { path, source }),
        _ => Err(LitmusFileError::UnknownType { path }),
    }
}

/// `gpucts litmus import FILE.litmus`: a Dat3M test as YAML text.
pub fn import_file(path: &std::path::Path) -> Result<String, LitmusFileError> {
    let text = gpucts_input::read_text(path)?;
    let test = import_dat3m(&text).map_err(|source| LitmusFileError::Dat3m {
        path: path.to_path_buf(),
        source,
    })?;
    to_yaml(&test).map_err(|source| LitmusFileError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// `gpucts litmus export FILE`: a test (YAML or Dat3M) as Dat3M `.litmus` text.
pub fn export_file(path: &std::path::Path) -> Result<String, LitmusFileError> {
    Ok(export_dat3m(&load_file(path)?))
}

#[cfg(test)]
mod tests;
