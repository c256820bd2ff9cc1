//! The mappings of ptx-interop 13.2 ch. 4 (Atomics ABI) as data: for each C++ atomic
//! operation and memory order, the PTX instruction sequences the chapter allows, each with
//! the table and row it comes from. Sequences are scope-generic: every step carries the
//! operation's own scope (`<scope>` in the chapter's tables).
//!
//! Strengthening (the chapter's first note: the memory order parameter is monotonic, so any
//! such parameter may be strengthened) is applied in two places, both documented where used:
//! - per PTX instruction: a step's `.sem` may be replaced by a stronger one in the order
//!   relaxed < acquire, release < acq_rel < sc ([`Sem::at_least`]), restricted to what the
//!   instruction accepts (`ld`: relaxed, acquire; `st`: relaxed, release; `atom`: the four
//!   of relaxed..acq_rel; `fence`: acquire, release, acq_rel, sc). This is the note's own
//!   example (`fence.sc; ld.relaxed` strengthened to `fence.sc; ld.acquire`) and covers
//!   libcu++'s acquire fence emitted as `fence.acq_rel`.
//! - per C++ call: an operation with order O may use any row for an order O' that is at
//!   least as strong as O in C++ (relaxed < acquire, release < acq_rel < seq_cst) and valid
//!   for the operation; that is a strengthening of the C++ memory order parameter itself.
//!
//! The scope is never widened: the note speaks of the memory order only.

use crate::vocab::Vocabulary;
use std::fmt;
use strum::VariantArray;

use crate::ptx::instr::{AtomOp, Scope, Sem};

/// The read-modify-write operations the chapter's `atomic_<rmw op>` rows cover.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum RmwOp {
    #[strum(serialize = "fetch_add")]
    FetchAdd,
    /// PTX has no `atom.sub`: the row's `<rmw op>` for a subtraction is `add` of the
    /// negated operand (the same value in two's complement and, for floating point, in
    /// IEEE 754, where `x - y` is `x + (-y)`).
    #[strum(serialize = "fetch_sub")]
    FetchSub,
    #[strum(serialize = "exchange")]
    Exchange,
    #[strum(serialize = "compare_exchange")]
    CompareExchange,
    #[strum(serialize = "fetch_and")]
    FetchAnd,
    #[strum(serialize = "fetch_or")]
    FetchOr,
    #[strum(serialize = "fetch_xor")]
    FetchXor,
    #[strum(serialize = "fetch_min")]
    FetchMin,
    #[strum(serialize = "fetch_max")]
    FetchMax,
}

impl RmwOp {
    /// The `atom` operation (`<rmw op>` in the chapter's tables).
    pub(crate) fn ptx_op(self) -> AtomOp {
        match self {
            RmwOp::FetchAdd | RmwOp::FetchSub => AtomOp::Add,
            RmwOp::Exchange => AtomOp::Exch,
            RmwOp::CompareExchange => AtomOp::Cas,
            RmwOp::FetchAnd => AtomOp::And,
            RmwOp::FetchOr => AtomOp::Or,
            RmwOp::FetchXor => AtomOp::Xor,
            RmwOp::FetchMin => AtomOp::Min,
            RmwOp::FetchMax => AtomOp::Max,
        }
    }
}

/// A C++ atomic operation the chapter maps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// `atomic_thread_fence`
    Fence,
    /// `atomic_load`
    Load,
    /// `atomic_store`
    Store,
    /// `atomic_<rmw op>`
    Rmw(RmwOp),
}

impl Operation {
    pub fn all() -> Vec<Operation> {
        let mut v = vec![Operation::Fence, Operation::Load, Operation::Store];
        v.extend(RmwOp::VARIANTS.iter().map(|&r| Operation::Rmw(r)));
        v
    }

    pub fn name(self) -> &'static str {
        match self {
            Operation::Fence => "fence",
            Operation::Load => "load",
            Operation::Store => "store",
            Operation::Rmw(r) => r.name(),
        }
    }

    /// The API named in the chapter's first column.
    pub(crate) fn api(self) -> &'static str {
        match self {
            Operation::Fence => "atomic_thread_fence",
            Operation::Load => "atomic_load",
            Operation::Store => "atomic_store",
            Operation::Rmw(_) => "atomic_<rmw op>",
        }
    }

    /// Orders C++ accepts for the operation and the chapter maps. Loads take no release or
    /// acq_rel order, stores no acquire or acq_rel ([atomics.types.operations]); consume is
    /// left out (the chapter has no row for it); a relaxed fence is a no-op the chapter does
    /// not map.
    pub(crate) fn valid_orders(self) -> &'static [Order] {
        use Order::*;
        match self {
            Operation::Fence => &[SeqCst, AcqRel, Acquire, Release],
            Operation::Load => &[SeqCst, Acquire, Relaxed],
            Operation::Store => &[SeqCst, Release, Relaxed],
            Operation::Rmw(_) => &[SeqCst, AcqRel, Acquire, Release, Relaxed],
        }
    }
}

/// C++ memory orders.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum Order {
    #[strum(serialize = "seq_cst")]
    SeqCst,
    #[strum(serialize = "acq_rel")]
    AcqRel,
    #[strum(serialize = "acquire")]
    Acquire,
    #[strum(serialize = "release")]
    Release,
    #[strum(serialize = "relaxed")]
    Relaxed,
}

impl Order {
    /// The PTX `.sem` of the same name (seq_cst is `.sc`): the explicit conversion between the
    /// C++ and the PTX views of a memory order (ptx-interop 13.2 ch. 4 maps one onto the other).
    pub fn sem(self) -> Sem {
        match self {
            Order::SeqCst => Sem::Sc,
            Order::AcqRel => Sem::AcqRel,
            Order::Acquire => Sem::Acquire,
            Order::Release => Sem::Release,
            Order::Relaxed => Sem::Relaxed,
        }
    }

    /// C++ strength: relaxed < acquire, release < acq_rel < seq_cst, the same lattice as
    /// [`Sem::at_least`] through [`Order::sem`] (one definition of the order, not two).
    pub(crate) fn at_least(self, other: Order) -> bool {
        self.sem().at_least(other.sem())
    }
}

/// The instruction a step of a mapping names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    Fence,
    Ld,
    St,
    /// `atom` with the operation's `<rmw op>`.
    Atom,
}

impl StepKind {
    /// The `.sem` values the instruction accepts (PTX ISA: ld, st, atom, fence), i.e. how far
    /// the chapter's note can strengthen a step of this kind.
    pub fn accepts(self, sem: Sem) -> bool {
        use Sem::*;
        match self {
            StepKind::Ld => matches!(sem, Relaxed | Acquire),
            StepKind::St => matches!(sem, Relaxed | Release),
            StepKind::Atom => matches!(sem, Relaxed | Acquire | Release | AcqRel),
            StepKind::Fence => matches!(sem, Acquire | Release | AcqRel | Sc),
        }
    }
}

/// One instruction of a mapping: `<kind>.<sem>.<scope>[.<rmw op>]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub kind: StepKind,
    pub sem: Sem,
}

const fn step(kind: StepKind, sem: Sem) -> Step {
    Step { kind, sem }
}

/// The operation column of a row: the chapter has one row per API and order, and all
/// `atomic_<rmw op>` share theirs.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum RowKind {
    #[strum(serialize = "fence")]
    Fence,
    #[strum(serialize = "load")]
    Load,
    #[strum(serialize = "store")]
    Store,
    #[strum(serialize = "rmw")]
    Rmw,
}

impl RowKind {
    /// The API of the chapter's first column as the clause catalogue spells it.
    pub(crate) fn api(self) -> &'static str {
        match self {
            RowKind::Fence => "atomic_thread_fence",
            RowKind::Load => "atomic_load",
            RowKind::Store => "atomic_store",
            RowKind::Rmw => "atomic_rmw",
        }
    }

    /// A representative operation of the row (any `<rmw op>` stands for all of them).
    pub(crate) fn operation(self) -> Operation {
        match self {
            RowKind::Fence => Operation::Fence,
            RowKind::Load => Operation::Load,
            RowKind::Store => Operation::Store,
            RowKind::Rmw => Operation::Rmw(RmwOp::FetchAdd),
        }
    }
}

impl Operation {
    pub(crate) fn row_kind(self) -> RowKind {
        match self {
            Operation::Fence => RowKind::Fence,
            Operation::Load => RowKind::Load,
            Operation::Store => RowKind::Store,
            Operation::Rmw(_) => RowKind::Rmw,
        }
    }
}

/// One row of the chapter's tables: an API at a memory order (`seq_cst_load`,
/// `acq_rel_rmw`, `release_fence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Row {
    pub order: Order,
    pub kind: RowKind,
}

impl Row {
    /// Every row the chapter has (15: 4 fences, 3 loads, 3 stores, 5 RMWs), table by table.
    pub fn all() -> Vec<Row> {
        let mut v = Vec::new();
        for order in Order::VARIANTS.iter().copied() {
            for &kind in RowKind::VARIANTS {
                if kind.operation().valid_orders().contains(&order) {
                    v.push(Row { order, kind });
                }
            }
        }
        v
    }

    /// `seq_cst_load`, `acq_rel_rmw`.
    pub fn name(self) -> String {
        format!("{}_{}", self.order.name(), self.kind.name())
    }

    pub fn parse(name: &str) -> Option<Row> {
        Row::all().into_iter().find(|r| r.name() == name)
    }

    /// The row's clause id in suites/clauses/catalogue.yaml
    /// (`ptx-interop-13.2 ch. 4 seq_cst atomic_load`).
    pub(crate) fn clause_id(self) -> String {
        format!(
            "ptx-interop-13.2 ch. 4 {} {}",
            self.order.name(),
            self.kind.api()
        )
    }

    /// The row's mappings in the chapter's order, the recommended one first.
    pub(crate) fn mappings(self) -> Vec<Mapping> {
        rows(self.kind.operation(), self.order)
    }

    /// The mapping at `position` (0: the recommended or only one; n: the n-th "OR").
    pub fn mapping(self, position: usize) -> Option<Mapping> {
        self.mappings().into_iter().nth(position)
    }
}

/// One allowed sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// The table the row is in (the order whose mapping this is).
    pub order: Order,
    /// The row's operation column.
    pub kind: RowKind,
    /// Where the sequence stands in its row: 0 for the first (the one marked "(recommended)"
    /// where the row has a choice), n for the n-th alternative after an "OR".
    pub position: usize,
    pub steps: Vec<Step>,
    /// The chapter marks this alternative "(recommended)".
    pub recommended: bool,
    /// Where the row is: `ptx-interop 13.2 ch. 4, acquire table, atomic_load`.
    pub clause: String,
}

impl Mapping {
    pub fn row(&self) -> Row {
        Row {
            order: self.order,
            kind: self.kind,
        }
    }

    /// The mapping's own name, row and position: `seq_cst_load.recommended`,
    /// `seq_cst_load.alt1`, `acq_rel_rmw.alt2`, `seq_cst_store.only` (a row without choice).
    pub fn name(&self) -> String {
        format!("{}.{}", self.row().name(), self.position_name())
    }

    /// `recommended`, `only` or `alt<n>`.
    pub(crate) fn position_name(&self) -> String {
        match self.position {
            0 if self.recommended => "recommended".to_string(),
            0 => "only".to_string(),
            n => format!("alt{n}"),
        }
    }

    /// The clause id this mapping implements: the row's id, with ` alt<n>` for an alternative
    /// (`ptx-interop-13.2 ch. 4 acq_rel atomic_rmw alt2`).
    pub(crate) fn clause_id(&self) -> String {
        match self.position {
            0 => self.row().clause_id(),
            n => format!("{} alt{n}", self.row().clause_id()),
        }
    }

    /// An alternative ("OR") of its row, not the row's first mapping.
    pub(crate) fn is_alternative(&self) -> bool {
        self.position > 0
    }

    /// The sequence written out for a scope and (for RMW) an operation, in the chapter's form:
    /// `fence.sc.gpu; atom.acquire.gpu.add;`.
    pub fn render(&self, scope: Scope, rmw: Option<RmwOp>) -> String {
        self.steps
            .iter()
            .map(|s| render_step(s, scope, rmw))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn render_step(s: &Step, scope: Scope, rmw: Option<RmwOp>) -> String {
    let kind = match s.kind {
        StepKind::Fence => "fence",
        StepKind::Ld => "ld",
        StepKind::St => "st",
        StepKind::Atom => "atom",
    };
    match (s.kind, rmw) {
        (StepKind::Atom, Some(r)) => format!(
            "{kind}.{}.{}.{};",
            s.sem.name(),
            scope.name(),
            r.ptx_op().name()
        ),
        _ => format!("{kind}.{}.{};", s.sem.name(), scope.name()),
    }
}

impl fmt::Display for Mapping {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.steps.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            let kind = match s.kind {
                StepKind::Fence => "fence",
                StepKind::Ld => "ld",
                StepKind::St => "st",
                StepKind::Atom => "atom",
            };
            write!(f, "{kind}.{}.<scope>", s.sem.name())?;
            if s.kind == StepKind::Atom {
                f.write_str(".<rmw op>")?;
            }
            f.write_str(";")?;
        }
        Ok(())
    }
}

/// The chapter's rows for exactly `(op, order)`, recommended alternative first; empty when the
/// chapter has no row (the order is not valid for the operation).
pub fn rows(op: Operation, order: Order) -> Vec<Mapping> {
    use Sem::*;
    use StepKind::*;
    let table = match order {
        Order::SeqCst => "seq_cst",
        Order::AcqRel => "acq_rel",
        Order::Acquire => "acquire",
        Order::Release => "release",
        Order::Relaxed => "relaxed",
    };
    let clause = format!("ptx-interop 13.2 ch. 4, {table} table, {}", op.api());
    let alts: Vec<Vec<Step>> = match (op, order) {
        (Operation::Fence, Order::SeqCst) => vec![vec![step(Fence, Sc)]],
        (Operation::Fence, Order::AcqRel) => vec![vec![step(Fence, AcqRel)]],
        (Operation::Fence, Order::Acquire) => vec![vec![step(Fence, Acquire)]],
        (Operation::Fence, Order::Release) => vec![vec![step(Fence, Release)]],
        (Operation::Load, Order::SeqCst) => vec![
            vec![step(Fence, Sc), step(Ld, Acquire)],
            vec![step(Fence, Sc), step(Ld, Relaxed), step(Fence, Acquire)],
        ],
        (Operation::Load, Order::Acquire) => vec![
            vec![step(Ld, Acquire)],
            vec![step(Ld, Relaxed), step(Fence, Acquire)],
        ],
        (Operation::Load, Order::Relaxed) => vec![vec![step(Ld, Relaxed)]],
        (Operation::Store, Order::SeqCst) => vec![vec![step(Fence, Sc), step(St, Relaxed)]],
        (Operation::Store, Order::Release) => vec![
            vec![step(St, Release)],
            vec![step(Fence, Release), step(St, Relaxed)],
        ],
        (Operation::Store, Order::Relaxed) => vec![vec![step(St, Relaxed)]],
        (Operation::Rmw(_), Order::SeqCst) => vec![
            vec![step(Fence, Sc), step(Atom, Acquire)],
            vec![step(Fence, Sc), step(Atom, Relaxed), step(Fence, Acquire)],
        ],
        (Operation::Rmw(_), Order::AcqRel) => vec![
            vec![step(Atom, AcqRel)],
            vec![step(Fence, Release), step(Atom, Acquire)],
            vec![
                step(Fence, Release),
                step(Atom, Relaxed),
                step(Fence, Acquire),
            ],
        ],
        (Operation::Rmw(_), Order::Acquire) => vec![
            vec![step(Atom, Acquire)],
            vec![step(Atom, Relaxed), step(Fence, Acquire)],
        ],
        (Operation::Rmw(_), Order::Release) => vec![
            vec![step(Atom, Release)],
            vec![step(Fence, Release), step(Atom, Relaxed)],
        ],
        (Operation::Rmw(_), Order::Relaxed) => vec![vec![step(Atom, Relaxed)]],
        _ => vec![],
    };
    // The chapter marks the first alternative "(recommended)" where there is a choice.
    let n = alts.len();
    alts.into_iter()
        .enumerate()
        .map(|(i, steps)| Mapping {
            order,
            kind: op.row_kind(),
            position: i,
            steps,
            recommended: i == 0 && n > 1,
            clause: clause.clone(),
        })
        .collect()
}

/// Every alternative ("OR") of every row, in table order: the mappings the chapter allows
/// besides each row's first.
pub(crate) fn alternatives() -> Vec<Mapping> {
    Row::all()
        .into_iter()
        .flat_map(|r| r.mappings())
        .filter(Mapping::is_alternative)
        .collect()
}

/// The mapping named `seq_cst_load.alt1` (see [`Mapping::name`]).
pub fn named(name: &str) -> Option<Mapping> {
    let (row, _) = name.split_once('.')?;
    Row::parse(row)?
        .mappings()
        .into_iter()
        .find(|m| m.name() == name)
}

/// Every sequence allowed for `(op, order)` with the C++-order strengthening: the rows of
/// `order` first, then those of each stronger order valid for the operation. `None` when
/// `order` is not valid for `op` (e.g. a release load).
pub fn allowed(op: Operation, order: Order) -> Option<Vec<Mapping>> {
    if !op.valid_orders().contains(&order) {
        return None;
    }
    let mut out = rows(op, order);
    for &o in op.valid_orders() {
        if o != order && o.at_least(order) {
            out.extend(rows(op, o));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    // The C++ read-modify-writes convert to the PTX `atom` operation the chapter's
    // `atomic_<rmw op>` rows name (pairs written out from the table, not derived from code).
    #[test]
    fn rmw_ops_convert_to_their_atom_operation() {
        let table = [
            ("fetch_add", "add"),
            // PTX ISA atom has no `sub`: add of the negated operand.
            ("fetch_sub", "add"),
            ("exchange", "exch"),
            ("compare_exchange", "cas"),
            ("fetch_and", "and"),
            ("fetch_or", "or"),
            ("fetch_xor", "xor"),
            ("fetch_min", "min"),
            ("fetch_max", "max"),
        ];
        assert_eq!(RmwOp::VARIANTS.len(), table.len());
        for (op, (cpp, ptx)) in RmwOp::VARIANTS.iter().zip(table) {
            assert_eq!(op.name(), cpp);
            assert_eq!(Some(op.ptx_op()), AtomOp::parse(ptx), "{cpp}");
        }
    }

    // The C++ view converts to the PTX view by name, and the strength order is the one
    // [atomics.order] gives: relaxed below everything, acquire and release incomparable,
    // acq_rel above both, seq_cst on top (pairs written out here, not derived from code).
    #[test]
    fn order_converts_to_sem_and_keeps_the_cpp_strength_order() {
        for o in Order::VARIANTS.iter().copied() {
            let ptx = if o == Order::SeqCst { "sc" } else { o.name() };
            assert_eq!(Sem::parse(ptx), Some(o.sem()), "{}", o.name());
        }
        use Order::*;
        let stronger: &[(Order, Order)] = &[
            (Acquire, Relaxed),
            (Release, Relaxed),
            (AcqRel, Relaxed),
            (SeqCst, Relaxed),
            (AcqRel, Acquire),
            (AcqRel, Release),
            (SeqCst, Acquire),
            (SeqCst, Release),
            (SeqCst, AcqRel),
        ];
        for a in Order::VARIANTS.iter().copied() {
            for b in Order::VARIANTS.iter().copied() {
                let expect = a == b || stronger.contains(&(a, b));
                assert_eq!(a.at_least(b), expect, "{} >= {}", a.name(), b.name());
            }
        }
    }

    #[test]
    fn cpp_rmw_ops_convert_to_distinct_atom_ops() {
        // fetch_sub shares `add` with fetch_add (PTX has no atom.sub); every other op is its own.
        let ops: Vec<AtomOp> = RmwOp::VARIANTS
            .iter()
            .filter(|r| **r != RmwOp::FetchSub)
            .map(|r| r.ptx_op())
            .collect();
        let cpp: Vec<RmwOp> = RmwOp::VARIANTS
            .iter()
            .copied()
            .filter(|r| *r != RmwOp::FetchSub)
            .collect();
        for (i, a) in ops.iter().enumerate() {
            assert!(!ops[i + 1..].contains(a), "{a:?} twice");
            // fetch_<op> names the atom operation it maps to (exchange/compare_exchange aside).
            let cpp = cpp[i].name();
            assert!(
                cpp.ends_with(a.name())
                    || (cpp, a.name()) == ("exchange", "exch")
                    || (cpp, a.name()) == ("compare_exchange", "cas"),
                "{cpp} -> {}",
                a.name()
            );
        }
    }

    #[test]
    fn every_valid_combination_has_a_row_and_invalid_ones_have_none() {
        for op in Operation::all() {
            for order in Order::VARIANTS.iter().copied() {
                let r = rows(op, order);
                if op.valid_orders().contains(&order) {
                    assert!(!r.is_empty(), "{} {} has no row", op.name(), order.name());
                    assert!(allowed(op, order).is_some());
                } else {
                    assert!(
                        r.is_empty(),
                        "{} {} should have no row",
                        op.name(),
                        order.name()
                    );
                    assert!(allowed(op, order).is_none());
                }
            }
        }
        // The combinations C++ rejects.
        assert!(allowed(Operation::Store, Order::Acquire).is_none());
        assert!(allowed(Operation::Store, Order::AcqRel).is_none());
        assert!(allowed(Operation::Load, Order::Release).is_none());
        assert!(allowed(Operation::Load, Order::AcqRel).is_none());
        assert!(allowed(Operation::Fence, Order::Relaxed).is_none());
    }

    #[test]
    fn rows_transcribe_the_chapter() {
        // seq_cst load: `fence.sc; ld.acquire` (recommended) or
        // `fence.sc; ld.relaxed; fence.acquire` (ptx-interop 13.2 ch. 4).
        let r = rows(Operation::Load, Order::SeqCst);
        assert_eq!(r.len(), 2);
        assert!(r[0].recommended);
        assert_eq!(
            r[0].render(Scope::Gpu, None),
            "fence.sc.gpu; ld.acquire.gpu;"
        );
        assert_eq!(
            r[1].render(Scope::Gpu, None),
            "fence.sc.gpu; ld.relaxed.gpu; fence.acquire.gpu;"
        );
        // acq_rel RMW has three alternatives.
        let r = rows(Operation::Rmw(RmwOp::FetchAdd), Order::AcqRel);
        let texts: Vec<String> = r
            .iter()
            .map(|m| m.render(Scope::Cta, Some(RmwOp::FetchAdd)))
            .collect();
        assert_eq!(
            texts,
            [
                "atom.acq_rel.cta.add;",
                "fence.release.cta; atom.acquire.cta.add;",
                "fence.release.cta; atom.relaxed.cta.add; fence.acquire.cta;",
            ]
        );
        // seq_cst store has one.
        let r = rows(Operation::Store, Order::SeqCst);
        assert_eq!(r.len(), 1);
        assert!(!r[0].recommended);
        assert_eq!(
            r[0].render(Scope::Sys, None),
            "fence.sc.sys; st.relaxed.sys;"
        );
        assert_eq!(
            r[0].clause,
            "ptx-interop 13.2 ch. 4, seq_cst table, atomic_store"
        );
    }

    #[test]
    fn every_step_sem_is_one_its_instruction_accepts() {
        for op in Operation::all() {
            for order in Order::VARIANTS.iter().copied() {
                for m in rows(op, order) {
                    for s in &m.steps {
                        assert!(s.kind.accepts(s.sem), "{} {} {m}", op.name(), order.name());
                    }
                }
            }
        }
    }

    #[test]
    fn order_strengthening_adds_only_stronger_rows() {
        let a = allowed(Operation::Load, Order::Acquire).unwrap();
        assert!(a.iter().all(|m| m.order.at_least(Order::Acquire)));
        assert!(a.iter().any(|m| m.order == Order::SeqCst));
        let s = allowed(Operation::Store, Order::SeqCst).unwrap();
        assert!(s.iter().all(|m| m.order == Order::SeqCst));
        // Acquire and release are incomparable.
        assert!(!Order::Acquire.at_least(Order::Release));
        let r = allowed(Operation::Rmw(RmwOp::Exchange), Order::Release).unwrap();
        assert!(r.iter().all(|m| m.order != Order::Acquire));
    }

    // The chapter's tables have 15 rows (seq_cst: fence, load, store, rmw; release: fence,
    // store, rmw; acquire: fence, load, rmw; acq_rel: fence, rmw; relaxed: load, store, rmw)
    // and 8 "OR" alternatives: one each for seq_cst load and rmw, release store and rmw,
    // acquire load and rmw, two for acq_rel rmw. Counted from the chapter, not the code.
    #[test]
    fn rows_and_alternatives_are_named_by_row_and_position() {
        let rows = Row::all();
        assert_eq!(rows.len(), 15);
        let names: Vec<String> = rows.iter().map(|r| r.name()).collect();
        for n in [
            "seq_cst_fence",
            "seq_cst_load",
            "seq_cst_store",
            "seq_cst_rmw",
            "acq_rel_fence",
            "acq_rel_rmw",
            "release_store",
            "acquire_load",
            "relaxed_rmw",
        ] {
            assert!(names.iter().any(|x| x == n), "{n}");
            assert_eq!(Row::parse(n).map(|r| r.name()).as_deref(), Some(n));
        }
        assert!(Row::parse("release_load").is_none());
        let alts: Vec<String> = alternatives().iter().map(|m| m.name()).collect();
        assert_eq!(
            alts,
            [
                "seq_cst_load.alt1",
                "seq_cst_rmw.alt1",
                "acq_rel_rmw.alt1",
                "acq_rel_rmw.alt2",
                "acquire_load.alt1",
                "acquire_rmw.alt1",
                "release_store.alt1",
                "release_rmw.alt1",
            ]
        );
        for n in &alts {
            assert_eq!(named(n).map(|m| m.name()).as_ref(), Some(n));
        }
        assert_eq!(
            named("seq_cst_load.recommended").unwrap().clause_id(),
            "ptx-interop-13.2 ch. 4 seq_cst atomic_load"
        );
        assert_eq!(
            named("acq_rel_rmw.alt2").unwrap().clause_id(),
            "ptx-interop-13.2 ch. 4 acq_rel atomic_rmw alt2"
        );
        assert_eq!(named("relaxed_load.only").unwrap().steps.len(), 1);
        assert!(named("relaxed_load.alt1").is_none());
        assert!(named("seq_cst_load").is_none());
    }
}
