//! The litmus coverage catalogue: the standard shapes (MP, SB, LB, IRIW, 2+2W, S, R, CoRR,
//! CoRW, CoWR, CoWW, RMW atomicity, release sequence), each written with the C++ → PTX
//! mappings of ptx-interop 13.2 §4, at cta, gpu and sys scope with the threads in one CTA or
//! each in its own CTA, and at cluster scope with the threads in different CTAs of one thread
//! block cluster or each in its own cluster.
//!
//! Names are `SHAPE.MAPPING.SCOPE.PLACEMENT`, e.g. `MP.rel_acq.gpu.inter_cta`. Every test's
//! condition is `exists` of the shape's weak outcome. No verdict is stored here: whether the
//! outcome is allowed comes from [`crate::atomics::model::check`], and so does the choice of a
//! forbidden test's control ([`control_for`]).

use crate::vocab::Vocabulary;
use std::collections::BTreeMap;

use strum::VariantArray;

use crate::atomics::litmus::{
    parse_condition, AtomOp, LitmusTest, Location, Op, Operand, Scope, Sem, Thread,
};
use crate::atomics::model;

/// A test shape.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum Shape {
    #[strum(serialize = "MP")]
    Mp,
    #[strum(serialize = "SB")]
    Sb,
    #[strum(serialize = "LB")]
    Lb,
    #[strum(serialize = "IRIW")]
    Iriw,
    #[strum(serialize = "2+2W")]
    TwoPlusTwoW,
    #[strum(serialize = "S")]
    S,
    #[strum(serialize = "R")]
    R,
    #[strum(serialize = "CoRR")]
    CoRR,
    #[strum(serialize = "CoRW")]
    CoRW,
    #[strum(serialize = "CoWR")]
    CoWR,
    #[strum(serialize = "CoWW")]
    CoWW,
    #[strum(serialize = "RMW")]
    RmwAtomicity,
    #[strum(serialize = "RelSeq")]
    ReleaseSequence,
}

/// How the shape's C++ atomics are mapped to PTX (ptx-interop 13.2 §4).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum Mapping {
    /// `st.release` / `ld.acquire` / `atom.acq_rel`.
    #[strum(serialize = "rel_acq")]
    RelAcq,
    /// seq_cst: `fence.sc; st.relaxed`, `fence.sc; ld.acquire`, `fence.sc; atom.acquire`.
    #[strum(serialize = "sc")]
    Sc,
    /// Fence-based: `fence.acq_rel; st.relaxed`, `ld.relaxed; fence.acq_rel`,
    /// `fence.acq_rel; atom.relaxed; fence.acq_rel`.
    #[strum(serialize = "fence")]
    Fence,
    /// Everything `.relaxed`: the control.
    #[strum(serialize = "relaxed")]
    Relaxed,
}

pub use crate::atomics::litmus::Placement;

pub(crate) const SCOPES: [Scope; 3] = [Scope::Cta, Scope::Gpu, Scope::Sys];

/// The placements of the catalogue's cta, gpu and sys scope tests.
pub(crate) const CTA_PLACEMENTS: [Placement; 2] = [Placement::IntraCta, Placement::InterCta];
/// The placements of the catalogue's cluster scope tests: the threads in different CTAs of one
/// cluster (in scope) or in different clusters (out of scope: the controls).
pub(crate) const CLUSTER_PLACEMENTS: [Placement; 2] =
    [Placement::IntraCluster, Placement::InterCluster];

/// The placements the catalogue lists at `scope`.
pub(crate) fn placements_at(scope: Scope) -> [Placement; 2] {
    match scope {
        Scope::Cluster => CLUSTER_PLACEMENTS,
        _ => CTA_PLACEMENTS,
    }
}

/// Whether every thread of a test placed with `placement` is inside the scope instance of
/// every other thread's `scope` operations (PTX ISA "Scope": `.cta` is the threads of one CTA,
/// `.cluster` those of one cluster, `.gpu` those of one device, `.sys` all threads), from the
/// ISA's definitions rather than the model's scope tree.
pub(crate) fn in_scope(scope: Scope, placement: Placement) -> bool {
    match scope {
        Scope::Cta => placement == Placement::IntraCta,
        Scope::Cluster => matches!(placement, Placement::IntraCta | Placement::IntraCluster),
        Scope::Gpu | Scope::Sys => true,
    }
}

/// One catalogue test with what it was generated from.
#[derive(Debug, Clone)]
pub struct CatalogEntry {
    pub shape: Shape,
    pub mapping: Mapping,
    pub scope: Scope,
    pub placement: Placement,
    pub test: LitmusTest,
}

/// An access of a shape before mapping.
enum A {
    St(&'static str, i64),
    Ld(&'static str, &'static str),
    Rmw(&'static str, &'static str, AtomOp, i64),
    /// An RMW that stays relaxed whatever the mapping (the middle of a release sequence).
    RmwRelaxed(&'static str, &'static str, AtomOp, i64),
}

fn shape_program(shape: Shape) -> (Vec<Vec<A>>, &'static str) {
    use A::*;
    match shape {
        Shape::Mp => (
            vec![
                vec![St("x", 1), St("y", 1)],
                vec![Ld("r0", "y"), Ld("r1", "x")],
            ],
            "exists (P1:r0 == 1 /\\ P1:r1 == 0)",
        ),
        Shape::Sb => (
            vec![
                vec![St("x", 1), Ld("r0", "y")],
                vec![St("y", 1), Ld("r0", "x")],
            ],
            "exists (P0:r0 == 0 /\\ P1:r0 == 0)",
        ),
        Shape::Lb => (
            vec![
                vec![Ld("r0", "x"), St("y", 1)],
                vec![Ld("r0", "y"), St("x", 1)],
            ],
            "exists (P0:r0 == 1 /\\ P1:r0 == 1)",
        ),
        Shape::Iriw => (
            vec![
                vec![St("x", 1)],
                vec![St("y", 1)],
                vec![Ld("r0", "x"), Ld("r1", "y")],
                vec![Ld("r0", "y"), Ld("r1", "x")],
            ],
            "exists (P2:r0 == 1 /\\ P2:r1 == 0 /\\ P3:r0 == 1 /\\ P3:r1 == 0)",
        ),
        Shape::TwoPlusTwoW => (
            vec![vec![St("x", 1), St("y", 2)], vec![St("y", 1), St("x", 2)]],
            "exists (x == 1 /\\ y == 1)",
        ),
        Shape::S => (
            vec![
                vec![St("x", 2), St("y", 1)],
                vec![Ld("r0", "y"), St("x", 1)],
            ],
            "exists (P1:r0 == 1 /\\ x == 2)",
        ),
        Shape::R => (
            vec![
                vec![St("x", 1), St("y", 1)],
                vec![St("y", 2), Ld("r0", "x")],
            ],
            "exists (y == 2 /\\ P1:r0 == 0)",
        ),
        Shape::CoRR => (
            vec![vec![St("x", 1)], vec![Ld("r0", "x"), Ld("r1", "x")]],
            "exists (P1:r0 == 1 /\\ P1:r1 == 0)",
        ),
        Shape::CoRW => (
            vec![vec![Ld("r0", "x"), St("x", 1)], vec![St("x", 2)]],
            "exists (P0:r0 == 2 /\\ x == 2)",
        ),
        Shape::CoWR => (
            vec![vec![St("x", 1), Ld("r0", "x")], vec![St("x", 2)]],
            "exists (P0:r0 == 2 /\\ x == 1)",
        ),
        // Two writes in program order seen in the opposite order by an observer.
        Shape::CoWW => (
            vec![
                vec![St("x", 1), St("x", 2)],
                vec![Ld("r0", "x"), Ld("r1", "x")],
            ],
            "exists (P1:r0 == 2 /\\ P1:r1 == 1)",
        ),
        Shape::RmwAtomicity => (
            vec![
                vec![Rmw("r0", "x", AtomOp::Add, 1)],
                vec![Rmw("r0", "x", AtomOp::Add, 1)],
            ],
            "exists (P0:r0 == 0 /\\ P1:r0 == 0)",
        ),
        // MP whose flag passes through a relaxed RMW in a third thread: observation runs along
        // rf; rmw; rf, so the release still synchronises with the acquire.
        Shape::ReleaseSequence => (
            vec![
                vec![St("x", 1), St("y", 1)],
                vec![RmwRelaxed("r0", "y", AtomOp::Add, 1)],
                vec![Ld("r0", "y"), Ld("r1", "x")],
            ],
            "exists (P2:r0 == 2 /\\ P2:r1 == 0)",
        ),
    }
}

fn map_access(a: &A, m: Mapping, s: Scope) -> Vec<Op> {
    let fence = |sem| Op::Fence { sem, scope: s };
    let st = |loc: &str, v: i64, sem| Op::St {
        loc: loc.into(),
        val: Operand::Const(v),
        sem,
        scope: Some(s),
    };
    let ld = |reg: &str, loc: &str, sem| Op::Ld {
        reg: reg.into(),
        loc: loc.into(),
        sem,
        scope: Some(s),
    };
    let atom = |reg: &str, loc: &str, op, v: i64, sem| Op::Atom {
        op,
        reg: reg.into(),
        loc: loc.into(),
        val: Operand::Const(v),
        cmp: None,
        sem,
        scope: s,
    };
    match (a, m) {
        (A::St(l, v), Mapping::RelAcq) => vec![st(l, *v, Sem::Release)],
        (A::St(l, v), Mapping::Sc) => vec![fence(Sem::Sc), st(l, *v, Sem::Relaxed)],
        (A::St(l, v), Mapping::Fence) => vec![fence(Sem::AcqRel), st(l, *v, Sem::Relaxed)],
        (A::St(l, v), Mapping::Relaxed) => vec![st(l, *v, Sem::Relaxed)],
        (A::Ld(r, l), Mapping::RelAcq) => vec![ld(r, l, Sem::Acquire)],
        (A::Ld(r, l), Mapping::Sc) => vec![fence(Sem::Sc), ld(r, l, Sem::Acquire)],
        (A::Ld(r, l), Mapping::Fence) => vec![ld(r, l, Sem::Relaxed), fence(Sem::AcqRel)],
        (A::Ld(r, l), Mapping::Relaxed) => vec![ld(r, l, Sem::Relaxed)],
        (A::Rmw(r, l, o, v), Mapping::RelAcq) => vec![atom(r, l, *o, *v, Sem::AcqRel)],
        (A::Rmw(r, l, o, v), Mapping::Sc) => vec![fence(Sem::Sc), atom(r, l, *o, *v, Sem::Acquire)],
        (A::Rmw(r, l, o, v), Mapping::Fence) => vec![
            fence(Sem::AcqRel),
            atom(r, l, *o, *v, Sem::Relaxed),
            fence(Sem::AcqRel),
        ],
        (A::Rmw(r, l, o, v), Mapping::Relaxed) | (A::RmwRelaxed(r, l, o, v), _) => {
            vec![atom(r, l, *o, *v, Sem::Relaxed)]
        }
    }
}

/// The catalogue name of a combination.
pub(crate) fn test_name(
    shape: Shape,
    mapping: Mapping,
    scope: Scope,
    placement: Placement,
) -> String {
    format!(
        "{}.{}.{}.{}",
        shape.name(),
        mapping.name(),
        scope.name(),
        placement.name()
    )
}

/// Builds one catalogue test.
pub fn build(shape: Shape, mapping: Mapping, scope: Scope, placement: Placement) -> LitmusTest {
    let (threads, cond) = shape_program(shape);
    let mut locs: Vec<String> = Vec::new();
    let threads: Vec<Thread> = threads
        .iter()
        .enumerate()
        .map(|(i, accesses)| {
            let ops: Vec<Op> = accesses
                .iter()
                .flat_map(|a| map_access(a, mapping, scope))
                .collect();
            for op in &ops {
                if let Op::Ld { loc, .. }
                | Op::St { loc, .. }
                | Op::Atom { loc, .. }
                | Op::Red { loc, .. } = op
                {
                    if !locs.contains(loc) {
                        locs.push(loc.clone());
                    }
                }
            }
            // Within one CTA, each thread in its own warp.
            let (cta, cluster, warp) = placement.place(i as u32);
            Thread {
                cta,
                cluster,
                gpu: 0,
                warp,
                regs: BTreeMap::new(),
                ops,
            }
        })
        .collect();
    locs.sort();
    LitmusTest {
        name: test_name(shape, mapping, scope, placement),
        description: Some(format!(
            "{} with the {} mapping (ptx-interop 13.2 §4) at {} scope, {}",
            shape.name(),
            mapping.name(),
            scope.name(),
            placement.describe()
        )),
        locations: locs
            .into_iter()
            .map(|name| Location {
                name,
                init: 0,
                space: Default::default(),
                alias: None,
            })
            .collect(),
        threads,
        // The conditions above are fixed text known to parse (see the unit test).
        condition: parse_condition(cond).unwrap_or_else(|e| unreachable!("{e}")),
    }
}

/// Every catalogue test with its parameters: cta, gpu and sys scope first (in the order they
/// had before cluster scope was added), then cluster scope.
pub fn entries() -> Vec<CatalogEntry> {
    let mut out = Vec::new();
    let scopes = [
        (SCOPES.as_slice(), CTA_PLACEMENTS),
        (&[Scope::Cluster][..], CLUSTER_PLACEMENTS),
    ];
    for (scopes, placements) in scopes {
        for shape in Shape::VARIANTS.iter().copied() {
            for mapping in Mapping::VARIANTS.iter().copied() {
                for &scope in scopes {
                    for placement in placements {
                        out.push(CatalogEntry {
                            shape,
                            mapping,
                            scope,
                            placement,
                            test: build(shape, mapping, scope, placement),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Every catalogue test.
pub(crate) fn catalog() -> Vec<LitmusTest> {
    entries().into_iter().map(|e| e.test).collect()
}

fn parse_name(name: &str) -> Option<(Shape, Mapping, Scope, Placement)> {
    let mut it = name.split('.');
    let (s, m, sc, p) = (it.next()?, it.next()?, it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    let scope = *[Scope::Cta, Scope::Cluster, Scope::Gpu, Scope::Sys]
        .iter()
        .find(|x| x.name() == sc)?;
    let placement = p.parse::<Placement>().ok()?;
    // The listed placements of the scope, and cta scope across the CTAs of one cluster (the
    // cluster tests' control: cta scope does not include the other CTAs).
    let control = scope == Scope::Cta && placement == Placement::IntraCluster;
    if !placements_at(scope).contains(&placement) && !control {
        return None;
    }
    Some((Shape::parse(s)?, Mapping::parse(m)?, scope, placement))
}

/// A catalogue test, or an alternative-mapping test ([`alternative`]), by its name.
pub(crate) fn by_name(name: &str) -> Option<LitmusTest> {
    match parse_name(name) {
        Some((s, m, sc, p)) => Some(build(s, m, sc, p)),
        None => alternative(name).map(|a| a.test),
    }
}

/// For a test the model forbids (a catalogue test or an alternative-mapping test), its
/// control: the same shape whose weak outcome the model
/// allows, so that a GPU run of the control shows whether the stress can produce weak
/// behaviour at all. Tried in order: relaxed at the same scope and placement, then relaxed at
/// cta scope across CTAs (not morally strong) — for a cluster placement, across the CTAs of
/// one cluster, so that the control runs in the same launch shape. `None` when the test is
/// allowed, or when no
/// variant's outcome is allowed (e.g. nothing weakens a single-location order in one thread).
pub(crate) fn control_for(name: &str) -> Option<String> {
    let (s, sc, p, test) = match parse_name(name) {
        Some((s, m, sc, p)) => (s, sc, p, build(s, m, sc, p)),
        None => {
            let a = alternative(name)?;
            (a.shape, a.scope, a.placement, a.test)
        }
    };
    if model::check(&test).allowed {
        return None;
    }
    let across = if p.is_cluster() {
        Placement::IntraCluster
    } else {
        Placement::InterCta
    };
    [
        (Mapping::Relaxed, sc, p),
        (Mapping::Relaxed, Scope::Cta, across),
    ]
    .into_iter()
    .map(|(m, sc, p)| build(s, m, sc, p))
    .find(|t| model::check(t).allowed)
    .map(|t| t.name)
}

// ------------------------------------------------------------------------------------------
// The chapter's alternatives ("OR" mappings) on the catalogue shapes.
//
// ptx-interop 13.2 ch. 4 gives several rows a choice of mapping, marks the first one
// "(recommended)", and notes that either may be picked and that mappings may be mixed within
// one binary. So wherever the recommended mapping makes a shape's weak outcome forbidden, the
// same shape with an alternative substituted, in every thread or in some threads only, must
// be forbidden too. An alternative test takes the shape's C++ program (each access with its
// C++ order), maps every access with its row's recommended mapping, except the accesses of
// the alternative's row in the chosen threads, which get the alternative.

/// The C++ program of a shape: which C++ operation and order each access of the shape is.
/// [`Mapping::RelAcq`]'s and [`Mapping::Sc`]'s programs are the catalogue's; the two RMW
/// programs write the shape's stores (or its loads) as read-modify-writes so that the release
/// and acquire `atomic_<rmw op>` rows have accesses to substitute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// Stores release, loads acquire, read-modify-writes acq_rel.
    RelAcq,
    /// Everything seq_cst.
    Sc,
    /// As `RelAcq`, but each store is a release `exchange`.
    RelRmw,
    /// As `RelAcq`, but each load is an acquire `fetch_add` of 0.
    AcqRmw,
}

impl Program {
    /// The program in which the row's accesses occur; `None` for a row without alternatives
    /// (the fences and the relaxed rows).
    pub(crate) fn for_row(row: Row) -> Option<Program> {
        use table::Order as O;
        use table::RowKind as K;
        Some(match (row.order, row.kind) {
            (O::SeqCst, K::Load | K::Rmw) => Program::Sc,
            (O::Release, K::Store) | (O::Acquire, K::Load) | (O::AcqRel, K::Rmw) => Program::RelAcq,
            (O::Release, K::Rmw) => Program::RelRmw,
            (O::Acquire, K::Rmw) => Program::AcqRmw,
            _ => return None,
        })
    }

    /// The catalogue mapping whose C++ orders the program has: for the RMW programs, the
    /// release/acquire one (a release store written as a release exchange, an acquire load as
    /// an acquire fetch_add of 0, only adds constraints in C++: the RMW must read the
    /// coherence-latest value and extends release sequences, so what the release/acquire
    /// program forbids stays forbidden).
    pub(crate) fn cpp_orders(self) -> Mapping {
        match self {
            Program::Sc => Mapping::Sc,
            Program::RelAcq | Program::RelRmw | Program::AcqRmw => Mapping::RelAcq,
        }
    }

    /// The row of the chapter an access of the shape is in, under this program.
    fn row(self, a: &A) -> Row {
        use table::Order as O;
        use table::RowKind as K;
        let (order, kind) = match (a, self) {
            (A::RmwRelaxed(..), _) => (O::Relaxed, K::Rmw),
            (A::St(..), Program::Sc) => (O::SeqCst, K::Store),
            (A::St(..), Program::RelRmw) => (O::Release, K::Rmw),
            (A::St(..), _) => (O::Release, K::Store),
            (A::Ld(..), Program::Sc) => (O::SeqCst, K::Load),
            (A::Ld(..), Program::AcqRmw) => (O::Acquire, K::Rmw),
            (A::Ld(..), _) => (O::Acquire, K::Load),
            (A::Rmw(..), Program::Sc) => (O::SeqCst, K::Rmw),
            (A::Rmw(..), _) => (O::AcqRel, K::Rmw),
        };
        Row { order, kind }
    }
}

pub use table::Row;

use crate::atomics::mapping::table::{self, StepKind};

/// Where an alternative goes in an alternative test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::VariantArray)]
#[strum(serialize_all = "snake_case")]
pub enum Mix {
    /// In every thread.
    All,
    /// In the odd-numbered threads (P1, P3); the even ones keep the recommended mapping.
    Mixed,
    /// In the even-numbered threads (P0, P2); the odd ones keep the recommended mapping.
    MixedRev,
}

impl Mix {
    pub fn name(self) -> &'static str {
        self.into()
    }

    fn parse(s: &str) -> Option<Mix> {
        Mix::VARIANTS.iter().copied().find(|m| m.name() == s)
    }

    fn takes_alternative(self, thread: usize) -> bool {
        match self {
            Mix::All => true,
            Mix::Mixed => !thread.is_multiple_of(2),
            Mix::MixedRev => thread.is_multiple_of(2),
        }
    }
}

/// The scopes and placements at which alternative tests are listed: every catalogue scope
/// with its threads inside it. In the model a gpu- or sys-scope test does not depend on
/// whether its threads share a CTA (morally strong either way), so one placement each;
/// cta scope across CTAs is no test of a mapping (nothing is morally strong, every weak
/// outcome is allowed whatever the mapping).
pub(crate) const ALTERNATIVE_PLACES: [(Scope, Placement); 3] = [
    (Scope::Cta, Placement::IntraCta),
    (Scope::Gpu, Placement::InterCta),
    (Scope::Sys, Placement::InterCta),
];

/// One alternative test with what it was built from.
#[derive(Debug, Clone)]
pub struct AlternativeEntry {
    pub shape: Shape,
    /// The alternative substituted (an "OR" of its row).
    pub alternative: table::Mapping,
    pub mix: Mix,
    pub scope: Scope,
    pub placement: Placement,
    /// The test with the alternative substituted.
    pub test: LitmusTest,
    /// The same program with the recommended mapping everywhere.
    pub recommended: LitmusTest,
}

impl AlternativeEntry {
    pub(crate) fn program(&self) -> Program {
        // Entries are built only for rows with a program.
        Program::for_row(self.alternative.row()).unwrap_or(Program::RelAcq)
    }

    /// Whether the spec's rules forbid the shape's weak outcome, independently of the model:
    /// the recommended mapping is sound (the chapter cites Lustig et al., ASPLOS'19), so
    /// inside the operations' scope it forbids what C++ forbids ([`cpp_forbids`]), and the
    /// chapter makes the alternatives interchangeable with it.
    pub(crate) fn expected_forbidden(&self) -> bool {
        in_scope(self.scope, self.placement) && cpp_forbids(self.shape, self.program().cpp_orders())
    }
}

/// `MP.seq_cst_load.alt1.mixed.gpu.inter_cta`.
pub(crate) fn alternative_name(
    shape: Shape,
    alternative: &table::Mapping,
    mix: Mix,
    scope: Scope,
    placement: Placement,
) -> String {
    format!(
        "{}.{}.{}.{}.{}",
        shape.name(),
        alternative.name(),
        mix.name(),
        scope.name(),
        placement.name()
    )
}

/// The ops of one access mapped with `m` (a mapping of the access's row) at scope `s`. A
/// store written as an exchange returns its old value into `spare`, a register no condition
/// reads.
fn realise(a: &A, m: &table::Mapping, s: Scope, spare: &str) -> Vec<Op> {
    m.steps
        .iter()
        .map(|step| match (step.kind, a) {
            (StepKind::Fence, _) => Op::Fence {
                sem: step.sem,
                scope: s,
            },
            (StepKind::Ld, A::Ld(r, l)) => Op::Ld {
                reg: (*r).into(),
                loc: (*l).into(),
                sem: step.sem,
                scope: Some(s),
            },
            (StepKind::St, A::St(l, v)) => Op::St {
                loc: (*l).into(),
                val: Operand::Const(*v),
                sem: step.sem,
                scope: Some(s),
            },
            (StepKind::Atom, _) => {
                let (reg, loc, op, val) = match a {
                    A::St(l, v) => (spare, *l, AtomOp::Exch, *v),
                    A::Ld(r, l) => (*r, *l, AtomOp::Add, 0),
                    A::Rmw(r, l, o, v) | A::RmwRelaxed(r, l, o, v) => (*r, *l, *o, *v),
                };
                Op::Atom {
                    op,
                    reg: reg.into(),
                    loc: loc.into(),
                    val: Operand::Const(val),
                    cmp: None,
                    sem: step.sem,
                    scope: s,
                }
            }
            // A row's steps access memory the way its operation does (a load row loads, a
            // store row stores); `Program::row` gives each access a row of its own kind.
            (StepKind::Ld | StepKind::St, _) => {
                unreachable!("a {:?} step for a different access", step.kind)
            }
        })
        .collect()
}

/// The shape's program mapped with the recommended mapping of each access's row, except that
/// the accesses of `alternative`'s row in the threads `mix` picks get `alternative`. `None`
/// when `alternative` is not an alternative of a row some program has.
pub(crate) fn build_alternative(
    shape: Shape,
    alternative: &table::Mapping,
    mix: Mix,
    scope: Scope,
    placement: Placement,
) -> Option<(LitmusTest, LitmusTest)> {
    let program = Program::for_row(alternative.row())?;
    let (threads, _) = shape_program(shape);
    let base = build(shape, program.cpp_orders(), scope, placement);
    let mapped = |substitute: bool| -> Option<Vec<Thread>> {
        threads
            .iter()
            .zip(&base.threads)
            .enumerate()
            .map(|(i, (accesses, t))| {
                let mut ops = Vec::new();
                for (k, a) in accesses.iter().enumerate() {
                    let row = program.row(a);
                    let m = if substitute && row == alternative.row() && mix.takes_alternative(i) {
                        alternative.clone()
                    } else {
                        row.mapping(0)?
                    };
                    ops.extend(realise(a, &m, scope, &format!("w{k}")));
                }
                Some(Thread { ops, ..t.clone() })
            })
            .collect()
    };
    let name = alternative_name(shape, alternative, mix, scope, placement);
    let test = LitmusTest {
        name: name.clone(),
        description: Some(format!(
            "{} with the C++ orders of {}{}, each access mapped with its row's recommended \
             mapping except {} (ptx-interop 13.2 ch. 4) {}, at {} scope, {}",
            shape.name(),
            program.cpp_orders().name(),
            match program {
                Program::RelRmw => ", stores written as release exchanges",
                Program::AcqRmw => ", loads written as acquire fetch_add of 0",
                Program::RelAcq | Program::Sc => "",
            },
            alternative.name(),
            match mix {
                Mix::All => "in every thread",
                Mix::Mixed => "in the odd-numbered threads",
                Mix::MixedRev => "in the even-numbered threads",
            },
            scope.name(),
            placement.describe()
        )),
        threads: mapped(true)?,
        ..base.clone()
    };
    let recommended = LitmusTest {
        name: format!("{name} (recommended mapping everywhere)"),
        description: None,
        threads: mapped(false)?,
        ..base
    };
    Some((test, recommended))
}

/// Whether some thread `mix` gives the alternative has an access of its row, and, for the
/// mixed placements, some thread it leaves recommended has one too: otherwise the test is the
/// all-alternative one or the recommended one again.
fn mix_applies(shape: Shape, program: Program, row: Row, mix: Mix) -> bool {
    let (threads, _) = shape_program(shape);
    let uses = |i: usize| threads[i].iter().any(|a| program.row(a) == row);
    let alt = (0..threads.len()).any(|i| mix.takes_alternative(i) && uses(i));
    let rec = (0..threads.len()).any(|i| !mix.takes_alternative(i) && uses(i));
    alt && (mix == Mix::All || rec)
}

/// An alternative test by its name (any catalogue scope and placement), if the shape uses the
/// alternative's row at that mix.
pub(crate) fn alternative(name: &str) -> Option<AlternativeEntry> {
    let parts: Vec<&str> = name.split('.').collect();
    let [shape, row, position, mix, scope, placement] = parts[..] else {
        return None;
    };
    let shape = Shape::parse(shape)?;
    let alternative = table::named(&format!("{row}.{position}"))?;
    if !alternative.is_alternative() {
        return None;
    }
    let mix = Mix::parse(mix)?;
    let scope = *SCOPES.iter().find(|x| x.name() == scope)?;
    let placement = placement.parse::<Placement>().ok()?;
    let program = Program::for_row(alternative.row())?;
    if !mix_applies(shape, program, alternative.row(), mix) {
        return None;
    }
    let (test, recommended) = build_alternative(shape, &alternative, mix, scope, placement)?;
    Some(AlternativeEntry {
        shape,
        alternative,
        mix,
        scope,
        placement,
        test,
        recommended,
    })
}

/// The listed alternative tests: every alternative of the chapter, on every shape whose weak
/// outcome the spec's rules forbid under the recommended mapping ([`cpp_forbids`]) and that
/// has an access of the alternative's row, in every thread and mixed with the recommended
/// mapping, at [`ALTERNATIVE_PLACES`].
pub(crate) fn alternative_entries() -> Vec<AlternativeEntry> {
    let mut out = Vec::new();
    for alt in table::alternatives() {
        let Some(program) = Program::for_row(alt.row()) else {
            continue;
        };
        for shape in Shape::VARIANTS.iter().copied() {
            if !cpp_forbids(shape, program.cpp_orders()) {
                continue;
            }
            for mix in Mix::VARIANTS.iter().copied() {
                if !mix_applies(shape, program, alt.row(), mix) {
                    continue;
                }
                for (scope, placement) in ALTERNATIVE_PLACES {
                    let name = alternative_name(shape, &alt, mix, scope, placement);
                    // Built from the same parts, so it resolves.
                    if let Some(e) = alternative(&name) {
                        out.push(e);
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_resolve() {
        let all = entries();
        // 13 shapes x 4 mappings x (3 scopes x 2 CTA placements + cluster x 2 placements).
        assert_eq!(all.len(), 13 * 4 * 4 * 2);
        let mut names: Vec<&str> = all.iter().map(|e| e.test.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        for e in &all {
            e.test.validate().unwrap();
            assert_eq!(by_name(&e.test.name).as_ref(), Some(&e.test));
        }
        assert!(by_name("MP.rel_acq.gpu").is_none());
        assert!(by_name("XX.rel_acq.gpu.inter_cta").is_none());
    }

    // The brief's sanity rule (and the paper's morally-strong definition): cta-scoped
    // synchronisation between different CTAs does not synchronise, so MP's weak outcome is
    // allowed, while the same test within one CTA is forbidden.
    #[test]
    fn mp_cta_scope_across_ctas_is_allowed() {
        for m in [Mapping::RelAcq, Mapping::Sc, Mapping::Fence] {
            let across = build(Shape::Mp, m, Scope::Cta, Placement::InterCta);
            assert!(model::check(&across).allowed, "{}", across.name);
            let within = build(Shape::Mp, m, Scope::Cta, Placement::IntraCta);
            assert!(!model::check(&within).allowed, "{}", within.name);
        }
        assert!(!model::check(&by_name("MP.rel_acq.gpu.inter_cta").unwrap()).allowed);
    }

    // PTX ISA "Scope" and "Morally strong": `.cluster` includes every thread of the cluster,
    // so release/acquire at cluster scope between CTAs of one cluster synchronises (MP's weak
    // outcome is forbidden, as at gpu scope); threads of different clusters are outside it,
    // the operations are not morally strong, and the weak outcome is allowed.
    #[test]
    fn mp_cluster_scope_within_and_across_clusters() {
        for m in [Mapping::RelAcq, Mapping::Sc, Mapping::Fence] {
            let within = build(Shape::Mp, m, Scope::Cluster, Placement::IntraCluster);
            assert_eq!(within.threads[0].cluster, within.threads[1].cluster);
            assert_ne!(within.threads[0].cta, within.threads[1].cta);
            assert!(!model::check(&within).allowed, "{}", within.name);
            let across = build(Shape::Mp, m, Scope::Cluster, Placement::InterCluster);
            assert_ne!(across.threads[0].cluster, across.threads[1].cluster);
            assert!(model::check(&across).allowed, "{}", across.name);
            // cta scope across the CTAs of one cluster: not morally strong either.
            let cta = build(Shape::Mp, m, Scope::Cta, Placement::IntraCluster);
            assert!(model::check(&cta).allowed, "{}", cta.name);
        }
        // Coherence of relaxed strong accesses holds among the CTAs of a cluster at cluster
        // scope, not across clusters.
        assert!(!model::check(&by_name("CoRR.relaxed.cluster.intra_cluster").unwrap()).allowed);
        assert!(model::check(&by_name("CoRR.relaxed.cluster.inter_cluster").unwrap()).allowed);
        // Only the listed placements of a scope resolve (and cta scope across a cluster's
        // CTAs, the controls).
        assert!(by_name("MP.rel_acq.cluster.inter_cta").is_none());
        assert!(by_name("MP.rel_acq.gpu.intra_cluster").is_none());
        assert!(by_name("MP.relaxed.cta.intra_cluster").is_some());
    }

    #[test]
    fn cluster_tests_have_cluster_controls() {
        assert_eq!(
            control_for("MP.rel_acq.cluster.intra_cluster").as_deref(),
            Some("MP.relaxed.cluster.intra_cluster")
        );
        assert_eq!(
            control_for("CoRR.relaxed.cluster.intra_cluster").as_deref(),
            Some("CoRR.relaxed.cta.intra_cluster")
        );
        assert_eq!(control_for("MP.rel_acq.cluster.inter_cluster"), None);
    }

    #[test]
    fn forbidden_tests_have_allowed_controls() {
        let c = control_for("MP.rel_acq.gpu.inter_cta").unwrap();
        assert_eq!(c, "MP.relaxed.gpu.inter_cta");
        // Coherence holds for relaxed strong accesses, so CoRR's control drops to cta scope
        // across CTAs.
        assert_eq!(
            control_for("CoRR.relaxed.gpu.inter_cta").as_deref(),
            Some("CoRR.relaxed.cta.inter_cta")
        );
        assert_eq!(control_for("MP.relaxed.gpu.inter_cta"), None);
    }

    #[test]
    fn whole_catalogue_checks_quickly() {
        let start = std::time::Instant::now();
        let all = catalog();
        let allowed = all.iter().filter(|t| model::check(t).allowed).count();
        let took = start.elapsed();
        eprintln!(
            "catalogue: {} tests, {allowed} allowed, {} forbidden, checked in {took:?}",
            all.len(),
            all.len() - allowed
        );
        assert!(allowed > 0 && allowed < all.len());
        assert!(took.as_secs() < 30, "{took:?}");
    }
}

/// Whether the C++ memory model (RC11) forbids the shape's weak outcome when every access
/// uses the given order: seq_cst forbids all of them; release/acquire (and the same built
/// from acquire/release fences) forbids those closed by a happens-before path (MP, LB, S,
/// the release sequence) and coherence/atomicity violations; relaxed forbids only coherence
/// and atomicity violations.
pub(crate) fn cpp_forbids(shape: Shape, mapping: Mapping) -> bool {
    let coherence = matches!(
        shape,
        Shape::CoRR | Shape::CoRW | Shape::CoWR | Shape::CoWW | Shape::RmwAtomicity
    );
    match mapping {
        Mapping::Sc => true,
        Mapping::RelAcq | Mapping::Fence => {
            coherence
                || matches!(
                    shape,
                    Shape::Mp | Shape::Lb | Shape::S | Shape::ReleaseSequence
                )
        }
        Mapping::Relaxed => coherence,
    }
}

/// The verdict the catalogue entry must get from the PTX model, from sources independent of
/// the checker: inside the operations' scope, the chapter's mappings are sound (ptx-interop
/// 13.2 ch. 4 cites Lustig et al., ASPLOS'19), so PTX allows exactly what C++ allows for these
/// shapes ([`in_scope`]); cta scope across CTAs, or cluster scope across clusters, is not
/// morally strong, so every weak outcome is allowed.
pub(crate) fn expected_allowed(e: &CatalogEntry) -> bool {
    if in_scope(e.scope, e.placement) {
        !cpp_forbids(e.shape, e.mapping)
    } else {
        true
    }
}

/// The entry named `name` (`MP.rel_acq.gpu.inter_cta`).
pub fn entry(name: &str) -> Option<CatalogEntry> {
    entries().into_iter().find(|e| e.test.name == name)
}

#[cfg(test)]
mod verdict_matrix {
    use super::*;

    // ptx-interop 13.2 §4 cites Lustig et al. (ASPLOS'19), who prove these mappings sound: an
    // outcome C++ forbids must be forbidden for the PTX mapping when every thread is inside
    // the operations' scope (gpu and sys scope, or cta scope within one CTA). Where C++ allows
    // the outcome, PTX adds no ordering of its own for these shapes, so the verdicts agree.
    #[test]
    fn in_scope_verdicts_match_cpp() {
        for e in entries() {
            if !in_scope(e.scope, e.placement) {
                continue;
            }
            let allowed = model::check(&e.test).allowed;
            assert_eq!(allowed, expected_allowed(&e), "{}", e.test.name);
        }
    }

    // The morally-strong definition: cta-scoped operations in different CTAs (cluster-scoped
    // ones in different clusters) are not morally strong with each other, so nothing
    // synchronises, no coherence or atomicity between the threads is promised, and every weak
    // outcome is allowed.
    #[test]
    fn out_of_scope_placements_allow_every_weak_outcome() {
        let mut n = 0;
        for e in entries() {
            if matches!(
                (e.scope, e.placement),
                (Scope::Cta, Placement::InterCta) | (Scope::Cluster, Placement::InterCluster)
            ) {
                assert!(model::check(&e.test).allowed, "{}", e.test.name);
                n += 1;
            }
        }
        assert_eq!(n, 2 * 13 * 4);
    }

    // At cluster scope within one cluster the verdicts are those of gpu scope across CTAs:
    // both scopes include every thread of the test.
    #[test]
    fn cluster_scope_within_a_cluster_matches_gpu_scope() {
        for shape in Shape::VARIANTS.iter().copied() {
            for m in Mapping::VARIANTS.iter().copied() {
                let c = build(shape, m, Scope::Cluster, Placement::IntraCluster);
                let g = build(shape, m, Scope::Gpu, Placement::InterCta);
                assert_eq!(
                    model::check(&c).allowed_outcomes,
                    model::check(&g).allowed_outcomes,
                    "{}",
                    c.name
                );
            }
        }
    }
}

#[cfg(test)]
mod alternative_tests {
    use super::*;

    // The chapter's "OR" alternatives, transcribed from ptx-interop 13.2 ch. 4 (row, then the
    // sequence after each "OR"); everything else in its tables is a single mapping or the
    // recommended one.
    const SPEC_ALTERNATIVES: [(&str, &str); 8] = [
        (
            "seq_cst_load.alt1",
            "fence.sc.gpu; ld.relaxed.gpu; fence.acquire.gpu;",
        ),
        (
            "seq_cst_rmw.alt1",
            "fence.sc.gpu; atom.relaxed.gpu.add; fence.acquire.gpu;",
        ),
        (
            "acq_rel_rmw.alt1",
            "fence.release.gpu; atom.acquire.gpu.add;",
        ),
        (
            "acq_rel_rmw.alt2",
            "fence.release.gpu; atom.relaxed.gpu.add; fence.acquire.gpu;",
        ),
        ("acquire_load.alt1", "ld.relaxed.gpu; fence.acquire.gpu;"),
        (
            "acquire_rmw.alt1",
            "atom.relaxed.gpu.add; fence.acquire.gpu;",
        ),
        ("release_store.alt1", "fence.release.gpu; st.relaxed.gpu;"),
        (
            "release_rmw.alt1",
            "fence.release.gpu; atom.relaxed.gpu.add;",
        ),
    ];

    #[test]
    fn every_alternative_of_the_chapter_has_a_program() {
        let alts = table::alternatives();
        assert_eq!(alts.len(), SPEC_ALTERNATIVES.len());
        for (name, text) in SPEC_ALTERNATIVES {
            let m = alts
                .iter()
                .find(|m| m.name() == name)
                .unwrap_or_else(|| panic!("{name} not in the table"));
            let rmw = (m.kind == table::RowKind::Rmw).then_some(table::RmwOp::FetchAdd);
            assert_eq!(m.render(Scope::Gpu, rmw), text, "{name}");
            assert!(Program::for_row(m.row()).is_some(), "{name}");
        }
        // Every alternative is exercised by some listed test, in every thread and mixed.
        let entries = alternative_entries();
        for (name, _) in SPEC_ALTERNATIVES {
            let of = |mix: Mix| {
                entries
                    .iter()
                    .filter(|e| e.alternative.name() == name && e.mix == mix)
                    .count()
            };
            assert!(of(Mix::All) > 0, "{name}: no test");
            assert!(
                of(Mix::Mixed) + of(Mix::MixedRev) > 0,
                "{name}: no mixed test"
            );
        }
    }

    // With the recommended mapping everywhere, the release/acquire and seq_cst programs are
    // the catalogue's own tests, whose mapping is written out by hand above (`map_access`):
    // the table and the catalogue read the chapter the same way.
    #[test]
    fn recommended_programs_are_the_catalogue_tests() {
        for e in alternative_entries() {
            let program = e.program();
            if !matches!(program, Program::RelAcq | Program::Sc) {
                continue;
            }
            let cat = build(e.shape, program.cpp_orders(), e.scope, e.placement);
            assert_eq!(e.recommended.threads, cat.threads, "{}", e.test.name);
            assert_eq!(e.recommended.condition, cat.condition);
            assert_ne!(
                e.test.threads, cat.threads,
                "{}: nothing substituted",
                e.test.name
            );
        }
    }

    // Hand-built: SB under seq_cst with seq_cst_load.alt1 mixed: P0 keeps the recommended
    // `fence.sc; ld.acquire`, P1 takes `fence.sc; ld.relaxed; fence.acquire`.
    #[test]
    fn a_mixed_test_mixes() {
        let e = alternative("SB.seq_cst_load.alt1.mixed.gpu.inter_cta").unwrap();
        let f = |sem| Op::Fence {
            sem,
            scope: Scope::Gpu,
        };
        let st = |loc: &str| Op::St {
            loc: loc.into(),
            val: Operand::Const(1),
            sem: Sem::Relaxed,
            scope: Some(Scope::Gpu),
        };
        let ld = |loc: &str, sem| Op::Ld {
            reg: "r0".into(),
            loc: loc.into(),
            sem,
            scope: Some(Scope::Gpu),
        };
        assert_eq!(
            e.test.threads[0].ops,
            [f(Sem::Sc), st("x"), f(Sem::Sc), ld("y", Sem::Acquire)]
        );
        assert_eq!(
            e.test.threads[1].ops,
            [
                f(Sem::Sc),
                st("y"),
                f(Sem::Sc),
                ld("x", Sem::Relaxed),
                f(Sem::Acquire)
            ]
        );
        // The release RMW program writes stores as release exchanges into a spare register.
        let e = alternative("MP.release_rmw.alt1.all.sys.inter_cta").unwrap();
        assert_eq!(
            e.test.threads[0].ops[..2],
            [
                f(Sem::Release).with_scope(Scope::Sys),
                Op::Atom {
                    op: AtomOp::Exch,
                    reg: "w0".into(),
                    loc: "x".into(),
                    val: Operand::Const(1),
                    cmp: None,
                    sem: Sem::Relaxed,
                    scope: Scope::Sys,
                }
            ]
        );
        // A mix that substitutes nothing, or everything again, is no test.
        assert!(alternative("MP.seq_cst_load.alt1.mixed_rev.gpu.inter_cta").is_none());
        assert!(alternative("MP.seq_cst_load.alt1.mixed.gpu.inter_cta").is_none());
        assert!(alternative("MP.seq_cst_load.recommended.all.gpu.inter_cta").is_none());
        assert!(alternative("MP.seq_cst_store.only.all.gpu.inter_cta").is_none());
    }

    trait WithScope {
        fn with_scope(self, s: Scope) -> Op;
    }
    impl WithScope for Op {
        fn with_scope(self, s: Scope) -> Op {
            match self {
                Op::Fence { sem, .. } => Op::Fence { sem, scope: s },
                o => o,
            }
        }
    }

    // The chapter: where the recommended mapping is sound (it forbids what C++ forbids, in
    // scope), an alternative may replace it, in any thread. So each listed test's weak outcome
    // is forbidden, as it is with the recommended mapping everywhere.
    #[test]
    fn alternatives_are_sound_on_the_catalogue() {
        let start = std::time::Instant::now();
        let entries = alternative_entries();
        for e in &entries {
            assert!(e.expected_forbidden(), "{}", e.test.name);
            let rec = model::check(&e.recommended);
            assert!(!rec.allowed, "{}: recommended allowed", e.test.name);
            let alt = model::check(&e.test);
            assert!(!alt.allowed, "{}", model::report(&e.test, &alt));
        }
        eprintln!(
            "{} alternative tests in {:?}",
            entries.len(),
            start.elapsed()
        );
        assert!(start.elapsed().as_secs() < 10);
    }

    // The model's verdict on these tests does not depend on whether gpu- or sys-scope threads
    // share a CTA (both are morally strong): the unlisted placements agree.
    #[test]
    fn unlisted_placements_agree() {
        for e in alternative_entries() {
            if e.scope == Scope::Cta {
                continue;
            }
            let name = e.test.name.replace("inter_cta", "intra_cta");
            let other = alternative(&name).unwrap();
            assert!(!model::check(&other.test).allowed, "{name}");
        }
    }

    /// The shape's program with each access's mapping chosen by `pick` (its index among the
    /// row's mappings).
    fn mapped_with(
        shape: Shape,
        program: Program,
        scope: Scope,
        placement: Placement,
        pick: &mut dyn FnMut(Row) -> usize,
    ) -> LitmusTest {
        let (threads, _) = shape_program(shape);
        let mut t = build(shape, program.cpp_orders(), scope, placement);
        for (accesses, thread) in threads.iter().zip(t.threads.iter_mut()) {
            thread.ops = accesses
                .iter()
                .enumerate()
                .flat_map(|(k, a)| {
                    let row = program.row(a);
                    let m = row.mapping(pick(row)).unwrap();
                    realise(a, &m, scope, &format!("w{k}"))
                })
                .collect();
        }
        t
    }

    // Stronger than the listed tests: every access independently takes any mapping of its
    // row (all rows' alternatives at once, in every combination), and the shapes' forbidden
    // outcomes stay forbidden. The chapter allows exactly this: "either" per operation, mixed
    // within one binary.
    #[test]
    fn every_per_access_choice_is_sound() {
        let mut checked = 0;
        for program in [
            Program::RelAcq,
            Program::Sc,
            Program::RelRmw,
            Program::AcqRmw,
        ] {
            for shape in Shape::VARIANTS.iter().copied() {
                if !cpp_forbids(shape, program.cpp_orders()) {
                    continue;
                }
                let (threads, _) = shape_program(shape);
                let rows: Vec<Row> = threads.iter().flatten().map(|a| program.row(a)).collect();
                let sizes: Vec<usize> = rows.iter().map(|r| r.mappings().len()).collect();
                let combos: usize = sizes.iter().product();
                for c in 0..combos {
                    // Mixed radix over the accesses in program order: access k takes mapping
                    // (c / prod(sizes[..k])) % sizes[k].
                    let mut rest = c;
                    let mut pick = |row: Row| {
                        let n = row.mappings().len();
                        let i = rest % n;
                        rest /= n;
                        i
                    };
                    let t = mapped_with(shape, program, Scope::Gpu, Placement::InterCta, &mut pick);
                    assert!(
                        !model::check(&t).allowed,
                        "{} choice {c} of {combos}",
                        t.name
                    );
                    checked += 1;
                }
            }
        }
        eprintln!("{checked} per-access choices");
        assert!(checked > 100);
    }

    #[test]
    fn alternative_names_resolve_with_controls() {
        let e = alternative_entries();
        let mut names: Vec<&str> = e.iter().map(|e| e.test.name.as_str()).collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
        let t = by_name("MP.release_store.alt1.all.gpu.inter_cta").unwrap();
        assert_eq!(t.name, "MP.release_store.alt1.all.gpu.inter_cta");
        // A forbidden alternative test's control is the shape's relaxed catalogue test.
        assert_eq!(
            control_for("MP.release_store.alt1.all.gpu.inter_cta").as_deref(),
            Some("MP.relaxed.gpu.inter_cta")
        );
        assert!(by_name("MP.release_store.alt9.all.gpu.inter_cta").is_none());
        assert!(by_name("MP.release_store.alt1.some.gpu.inter_cta").is_none());
        assert!(by_name("MP.nonsense.alt1.all.gpu.inter_cta").is_none());
    }

    // The GPU runner's generator takes every alternative test (so a `gpu:` case can name one),
    // and what it writes assembles with ptxas for sm_90 (`fence.acquire` and `fence.release`
    // included), the independent check.
    #[test]
    fn the_gpu_generator_takes_every_alternative_test() {
        use crate::atomics::gpu::{kernel, layout::Geometry, StressParams};
        let tc = crate::backend::toolchain::Toolchain::discover_system();
        let ptxas = tc.has(crate::capability::Capability::Ptxas);
        let mut kernels = Vec::new();
        for e in alternative_entries() {
            let g = Geometry::new(&e.test, &StressParams::default())
                .unwrap_or_else(|err| panic!("{}: {err}", e.test.name));
            let ptx = kernel::generate(&e.test, &g)
                .unwrap_or_else(|err| panic!("{}: {err}", e.test.name));
            assert!(ptx.contains(".entry"), "{}", e.test.name);
            kernels.push((e.test.name, ptx));
        }
        crate::require!(ptxas, "ptxas");
        // One kernel per alternative, shape and mix is enough for the assembler (scopes and
        // placements change only modifiers and launch tables).
        let mut assembled = 0;
        for (name, ptx) in kernels
            .iter()
            .filter(|(n, _)| n.ends_with(".gpu.inter_cta"))
        {
            tc.ptxas(ptx, "sm_90", &[])
                .unwrap_or_else(|e| panic!("{name}: ptxas refuses the kernel: {e}"));
            assembled += 1;
        }
        assert_eq!(assembled * ALTERNATIVE_PLACES.len(), kernels.len());
    }
}
