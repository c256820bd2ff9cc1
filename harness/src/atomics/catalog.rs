//! The litmus coverage catalogue: the standard shapes (MP, SB, LB, IRIW, 2+2W, S, R, CoRR,
//! CoRW, CoWR, CoWW, RMW atomicity, release sequence), each written with the C++ → PTX
//! mappings of ptx-interop 13.2 §4, at cta, gpu and sys scope, with the threads in one CTA or
//! each in its own CTA.
//!
//! Names are `SHAPE.MAPPING.SCOPE.PLACEMENT`, e.g. `MP.rel_acq.gpu.inter_cta`. Every test's
//! condition is `exists` of the shape's weak outcome. No verdict is stored here: whether the
//! outcome is allowed comes from [`crate::atomics::model::check`], and so does the choice of a
//! forbidden test's control ([`control_for`]).

use std::collections::BTreeMap;

use strum::VariantArray;

use crate::atomics::litmus::{
    parse_condition, AtomOp, LitmusTest, Location, Op, Operand, Scope, Sem, Thread,
};
use crate::atomics::model;

crate::vocab::vocabulary! {
    /// A test shape.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Shape {
        Mp = "MP",
        Sb = "SB",
        Lb = "LB",
        Iriw = "IRIW",
        TwoPlusTwoW = "2+2W",
        S = "S",
        R = "R",
        CoRR = "CoRR",
        CoRW = "CoRW",
        CoWR = "CoWR",
        CoWW = "CoWW",
        RmwAtomicity = "RMW",
        ReleaseSequence = "RelSeq",
    }
}

crate::vocab::vocabulary! {
    /// How the shape's C++ atomics are mapped to PTX (ptx-interop 13.2 §4).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Mapping {
        /// `st.release` / `ld.acquire` / `atom.acq_rel`.
        RelAcq = "rel_acq",
        /// seq_cst: `fence.sc; st.relaxed`, `fence.sc; ld.acquire`, `fence.sc; atom.acquire`.
        Sc = "sc",
        /// Fence-based: `fence.acq_rel; st.relaxed`, `ld.relaxed; fence.acq_rel`,
        /// `fence.acq_rel; atom.relaxed; fence.acq_rel`.
        Fence = "fence",
        /// Everything `.relaxed`: the control.
        Relaxed = "relaxed",
    }
}

pub use crate::atomics::litmus::Placement;

pub const SCOPES: [Scope; 3] = [Scope::Cta, Scope::Gpu, Scope::Sys];

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
pub fn test_name(shape: Shape, mapping: Mapping, scope: Scope, placement: Placement) -> String {
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
            Thread {
                cta: match placement {
                    Placement::IntraCta => 0,
                    Placement::InterCta => i as u32,
                },
                cluster: None,
                gpu: 0,
                // Within one CTA, each thread in its own warp.
                warp: match placement {
                    Placement::IntraCta => Some(i as u32),
                    Placement::InterCta => None,
                },
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
            match placement {
                Placement::IntraCta => "all threads in one CTA",
                Placement::InterCta => "each thread in its own CTA",
            }
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

/// Every catalogue test with its parameters.
pub fn entries() -> Vec<CatalogEntry> {
    let mut out = Vec::new();
    for shape in Shape::ALL.iter().copied() {
        for mapping in Mapping::ALL.iter().copied() {
            for scope in SCOPES {
                for &placement in Placement::VARIANTS {
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
    out
}

/// Every catalogue test.
pub fn catalog() -> Vec<LitmusTest> {
    entries().into_iter().map(|e| e.test).collect()
}

fn parse_name(name: &str) -> Option<(Shape, Mapping, Scope, Placement)> {
    let mut it = name.split('.');
    let (s, m, sc, p) = (it.next()?, it.next()?, it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    Some((
        Shape::parse(s)?,
        Mapping::parse(m)?,
        *SCOPES.iter().find(|x| x.name() == sc)?,
        p.parse::<Placement>().ok()?,
    ))
}

/// A catalogue test by its name.
pub fn by_name(name: &str) -> Option<LitmusTest> {
    let (s, m, sc, p) = parse_name(name)?;
    Some(build(s, m, sc, p))
}

/// For a test the model forbids, its control: the same shape whose weak outcome the model
/// allows, so that a GPU run of the control shows whether the stress can produce weak
/// behaviour at all. Tried in order: relaxed at the same scope and placement, then relaxed at
/// cta scope across CTAs (not morally strong). `None` when the test is allowed, or when no
/// variant's outcome is allowed (e.g. nothing weakens a single-location order in one thread).
pub fn control_for(name: &str) -> Option<String> {
    let (s, m, sc, p) = parse_name(name)?;
    if model::check(&build(s, m, sc, p)).allowed {
        return None;
    }
    [
        (Mapping::Relaxed, sc, p),
        (Mapping::Relaxed, Scope::Cta, Placement::InterCta),
    ]
    .into_iter()
    .map(|(m, sc, p)| build(s, m, sc, p))
    .find(|t| model::check(t).allowed)
    .map(|t| t.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_resolve() {
        let all = entries();
        assert_eq!(all.len(), 13 * 4 * 3 * 2);
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
pub fn cpp_forbids(shape: Shape, mapping: Mapping) -> bool {
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
/// shapes; cta scope across CTAs is not morally strong, so every weak outcome is allowed.
pub fn expected_allowed(e: &CatalogEntry) -> bool {
    let in_scope = e.scope != Scope::Cta || e.placement == Placement::IntraCta;
    if in_scope {
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
            let in_scope = e.scope != Scope::Cta || e.placement == Placement::IntraCta;
            if !in_scope {
                continue;
            }
            let allowed = model::check(&e.test).allowed;
            assert_eq!(allowed, expected_allowed(&e), "{}", e.test.name);
        }
    }

    // The morally-strong definition: cta-scoped operations in different CTAs are not morally
    // strong with each other, so nothing synchronises, no coherence or atomicity between the
    // threads is promised, and every weak outcome is allowed.
    #[test]
    fn cta_scope_across_ctas_allows_every_weak_outcome() {
        for e in entries() {
            if e.scope == Scope::Cta && e.placement == Placement::InterCta {
                assert!(model::check(&e.test).allowed, "{}", e.test.name);
            }
        }
    }
}
