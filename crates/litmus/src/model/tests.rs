//! The checker against published verdicts.
//!
//! Two sources:
//! * Dat3M (github.com/hernanponcedeleon/Dat3M): the test texts below are written as its
//!   `litmus/PTX/...` files are published, and the expected value is the entry for that file in
//!   `dartagnan/src/test/resources/PTXv6_0-expected.csv` / `PTXv7_5-expected.csv`, where `1`
//!   means the condition holds as quantified and `0` that it does not.
//! * Lustig, Sahasrabuddhe, Giroux, ASPLOS 2019, whose result is that the C++ → PTX mappings of
//!   ptx-interop 13.2 §4 are sound: an outcome C++ forbids for the source program must be
//!   forbidden for its PTX mapping (MP with release/acquire, SB and IRIW with seq_cst, CoRR),
//!   and its definition of morally strong: operations whose scopes do not include each other's
//!   thread do not synchronise, so their weak outcomes stay allowed.

use super::*;
use crate::import_dat3m;

fn dat3m(text: &str) -> ModelVerdict {
    let t = import_dat3m(text).unwrap_or_else(|e| panic!("{e}"));
    check(&t)
}

/// Dat3M's CSV value: does the condition hold as quantified?
fn holds(text: &str) -> bool {
    dat3m(text).condition_holds
}

// --- Dat3M tests and their expected results -------------------------------------------------

// litmus/PTX/Manual/MP-gpu.litmus, expected 1 (the ~exists holds).
const MP_GPU: &str = "PTX MP-gpu
{ x=0; y=0; P1:r1=0; P1:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         ;
 st.weak x, 1           | ld.acquire.gpu r1, y   ;
 st.release.gpu y, 1    | ld.weak r2, x          ;
~exists
(P1:r1 == 1 /\\ P1:r2 != 1)
";

#[test]
fn dat3m_mp_gpu() {
    assert!(holds(MP_GPU));
}

// litmus/PTX/Manual/MP-sys-fence.litmus, expected 1.
#[test]
fn dat3m_mp_sys_fence() {
    assert!(holds(
        "PTX MP-sys-fence
{ x=0; y=0; P1:r1=0; P1:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         ;
 st.weak x, 1           | ld.relaxed.sys r1, y   ;
 fence.acq_rel.sys      | fence.acq_rel.sys      ;
 st.relaxed.sys y, 1    | ld.weak r2, x          ;
~exists
(P1:r1 == 1 /\\ P1:r2 != 1)
"
    ));
}

// litmus/PTX/Manual/MP-3-transitive.litmus, expected 1: causality is transitive across a
// cta-scoped and a gpu-scoped synchronisation.
#[test]
fn dat3m_mp_3_transitive() {
    assert!(holds(
        "PTX MP-3-transitive
{ x=0; y=0; z=0; P1:r0=0; P2:r1=0; P2:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         | P2@cta 1,gpu 0         ;
 st.weak x, 1           | ld.acquire.cta r0, y   | ld.acquire.gpu r1, z   ;
 st.release.cta y, 1    | st.release.gpu z, 1    | ld.weak r2, x          ;
~exists
(P1:r0 == 1 /\\ P2:r1 == 1 /\\ P2:r2 != 1)
"
    ));
}

// litmus/PTX/Manual/SB+sc-sys.litmus, expected 1: fence.sc.sys across GPUs forbids SB.
#[test]
fn dat3m_sb_sc_sys() {
    let v = dat3m(
        "PTX SB+sc-sys
{ x=0; y=0; P0:r1=0; P1:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 1,gpu 1         ;
 st.weak x, 1           | st.weak y, 1           ;
 fence.sc.sys           | fence.sc.sys           ;
 ld.weak r1, y          | ld.weak r2, x          ;
~exists
(P0:r1 != 1 /\\ P1:r2 != 1)
",
    );
    assert!(v.condition_holds);
    assert!(!v.allowed);
    assert!(!v.rejected.is_empty());
}

// litmus/PTX/Nvidia/SB+sc-cta-outScope.litmus, expected 1: cta fences in different CTAs are
// not morally strong, so the SB outcome stays reachable.
#[test]
fn dat3m_sb_sc_cta_out_of_scope() {
    assert!(holds(
        "PTX SB+sc-cta-outScope
{ x=0; y=0; P0:r0=0; P1:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 1,gpu 0         ;
 st.weak x, 1           | st.weak y, 1           ;
 fence.sc.cta           | fence.sc.cta           ;
 ld.weak r0, y          | ld.weak r1, x          ;
exists
(P0:r0 == 2 \\/ P1:r1 != 1)
"
    ));
}

// litmus/PTX/Nvidia/SB-cta.litmus, expected 1: fence.sc.cta within one CTA forbids SB.
#[test]
fn dat3m_sb_cta() {
    assert!(holds(
        "PTX SB-cta
{ x=0; y=0; P0:r0=0; P1:r1=0; }
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         ;
 st.weak x, 1           | st.weak y, 2           ;
 fence.sc.cta           | fence.sc.cta           ;
 ld.weak r0, y          | ld.weak r1, x          ;
forall
(P0:r0 == 2 \\/ P1:r1 == 1)
"
    ));
}

// litmus/PTX/Manual/SB+sc-gpu-multiFence.litmus, expected 1.
#[test]
fn dat3m_sb_sc_gpu_multi_fence() {
    assert!(holds(
        "PTX SB+sc-gpu-multiFence
{ x=0; y=0; P0:r1=0; P1:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 1,gpu 0         ;
 st.weak x, 1           | st.weak y, 1           ;
 fence.sc.gpu           | fence.sc.gpu           ;
 st.weak x, 2           | st.weak y, 2           ;
 fence.sc.gpu           | fence.sc.gpu           ;
 ld.weak r1, y          | ld.weak r2, x          ;
forall
(P0:r1 == 2 \\/ P1:r2 == 2)
"
    ));
}

// litmus/PTX/Manual/SB-weak.litmus, expected 1: without fences SB is reachable.
#[test]
fn dat3m_sb_weak() {
    assert!(holds(
        "PTX SB-weak
{ x=0; y=0; P0:r1=0; P1:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 1,gpu 0         ;
 st.weak x, 1           | st.weak y, 1           ;
 ld.weak r1, y          | ld.weak r2, x          ;
exists
(P0:r1 != 1 /\\ P1:r2 != 1)
"
    ));
}

// litmus/PTX/Manual/Coherence.litmus, expected 0; Coherence-weak.litmus, expected 1.
const COHERENCE: &str = "PTX Coherence
{ x=0; P2:r0=0; P2:r1=0; P3:r2=0; P3:r3=0; }
 P0@cta 0,gpu 0      | P1@cta 0,gpu 0      | P2@cta 0,gpu 0       | P3@cta 0,gpu 0       ;
 st.relaxed.sys x, 1 | st.relaxed.sys x, 2 | ld.acquire.sys r0, x | ld.acquire.sys r2, x ;
                     |                     | ld.acquire.sys r1, x | ld.acquire.sys r3, x ;
exists
(P2:r0 = 1 /\\ P2:r1 = 2 /\\ P3:r2 = 2 /\\ P3:r3 = 1)
";

#[test]
fn dat3m_coherence() {
    let v = dat3m(COHERENCE);
    assert!(!v.condition_holds);
    // Every execution giving the outcome breaks sc-per-location or coherence (through cause).
    assert!(v
        .rejected
        .iter()
        .all(|r| matches!(r.axiom, Axiom::ScPerLocation | Axiom::Coherence)));
}

#[test]
fn dat3m_coherence_weak() {
    let weak = COHERENCE
        .replace("st.relaxed.sys x, 1", "st.weak x, 1       ")
        .replace("st.relaxed.sys x, 2", "st.weak x, 2       ");
    assert!(holds(&weak));
}

// litmus/PTX/Manual/CoRR-weak-weak.litmus, expected 1: weak reads are not morally strong
// with the writer, so they may see x out of coherence order.
#[test]
fn dat3m_corr_weak_weak() {
    assert!(holds(
        "PTX CoRR-weak-weak
{ x = 0; P1:r1=0; P1:r2=0; }
 P0@cta 0,gpu 0         | P1@cta 1,gpu 1          ;
 st.release.gpu x, 1    | ld.weak r1, x           ;
                        | ld.weak r2, x           ;
exists
(P1:r1 == 1 /\\ P1:r2 == 0)
"
    ));
}

// litmus/PTX/Manual/CoWW-R.litmus, expected 1.
#[test]
fn dat3m_coww_r() {
    assert!(holds(
        "PTX CoWW-R
{ x = 0; }
 P0@cta 0,gpu 0             ;
 st.weak x, 1               ;
 st.weak x, 2               ;
 ld.acquire.sys r1, x       ;
~exists
(P0:r1 == 1)
"
    ));
}

// litmus/PTX/Nvidia/Atom-SB.litmus, expected 1.
#[test]
fn dat3m_atom_sb() {
    assert!(holds(
        "PTX Atom-SB
{ P0:r0=0; P1:r1=0; x=0; y=0; }
 P0@cta 0,gpu 0                       | P1@cta 1,gpu 0                         ;
 atom.acq_rel.gpu.add r1, x, 1        | atom.acq_rel.gpu.add r3, y, 1         ;
 atom.acq_rel.gpu.add r2, y, 1        | atom.acq_rel.gpu.add r4, x, 1         ;
forall
(P0:r2 != 0 \\/ P1:r4 != 0)
"
    ));
}

// litmus/PTX/Manual/Atom-minus-location_.litmus, expected 1: both decrements land.
#[test]
fn dat3m_atom_minus_location() {
    assert!(holds(
        "PTX _Atom-minus-location
{ P0:r0=0; P1:r0=0; x=2; }
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 atom.acq_rel.sys.sub r0, x, 1    | atom.acq_rel.sys.sub r0, x, 1  ;
forall
(x == 0)
"
    ));
}

// litmus/PTX/Nvidia/Release-acquire-pattern.litmus, expected 0: a release followed by a
// relaxed store to the same location still forms a release pattern.
#[test]
fn dat3m_release_acquire_pattern() {
    let v = dat3m(
        "PTX Release-acquire-pattern
{ x = 0; y = 0; P1:r1 = 0; P1:r2 = 0; }
 P0@cta 0,gpu 0           | P1@cta 1,gpu 0              ;
 st.weak y, 1             | ld.relaxed.sys r1, x        ;
 st.release.sys x, 1      | fence.acq_rel.sys           ;
 st.relaxed.sys x, 2      | ld.weak r2, y               ;
exists
(P1:r1 == 2 /\\ P1:r2 == 0)
",
    );
    assert!(!v.condition_holds);
    assert!(v.rejected.iter().any(|r| r.axiom == Axiom::Causality));
}

// litmus/PTX/Nvidia/Co-Total-3-threads-scope-diff.litmus, expected 1.
#[test]
fn dat3m_co_total_3_threads_scope_diff() {
    assert!(holds(
        "PTX Co-Total-3-threads-scope-diff
{ x = 0; flag1 = 0; flag2 = 0; }
 P0@cta 0,gpu 0           | P1@cta 0,gpu 0              |   P2@cta 1,gpu 0            ;
 st.weak x, 42            | ld.acquire.gpu r0, flag1    |   ld.acquire.gpu r1, flag2  ;
 st.release.cta flag1, 1  | st.release.gpu flag2, 1     |   ld.weak r2, x             ;
exists
(P1:r0 == 1 /\\ P2:r1 == 1 /\\ P2:r2 == 42)
"
    ));
}

// litmus/PTX/Nvidia/LB+NoThinAir-location_.litmus, expected 1: 42 cannot appear from thin air.
#[test]
fn dat3m_lb_no_thin_air() {
    let v = dat3m(
        "PTX NoThinAir-location
{ P0:r1=0; P1:r2=0; x=0; y=0; }
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 ld.weak r0, x                    | ld.weak r1, y                    ;
 st.weak y, r0                    | st.weak x, r1                    ;
~exists
(x == 42 /\\ y == 42)
",
    );
    assert!(v.condition_holds);
    assert!(v.rejected.iter().all(|r| r.axiom == Axiom::NoThinAir));
    assert!(!v.rejected.is_empty());
}

// litmus/PTX/Memalloy/IRIW_gl_cta.litmus, expected 1.
#[test]
fn dat3m_iriw_gl_cta() {
    assert!(holds(
        "PTX IRIW_gl_cta
{ P0:r0=0; P1:r0=0; P1:r2=0; P2:r0=0; P3:r0=0; P3:r2=0; x=0; }
 P0@cta 0,gpu 0           | P1@cta 1,gpu 0           | P2@cta 1,gpu 0           | P3@cta 1,gpu 0           ;
 ld.weak r0, 1            | ld.weak r0, x            | ld.weak r0, 2            | ld.weak r0, x            ;
 st.weak x, r0            | fence.sc.gpu             | st.weak x, r0            | fence.sc.cta             ;
                          | ld.weak r2, x            |                          | ld.weak r2, x            ;
exists
(P1:r0 == 1 /\\ P1:r2 == 0 /\\ P3:r0 == 1 /\\ P3:r2 == 0)
"
    ));
}

// litmus/PTX/Memalloy/WRW+2W1.litmus, expected 0.
#[test]
fn dat3m_wrw_2w1() {
    assert!(!holds(
        "PTX WRW+2W1
{ P0:r0=0; P1:r0=0; P1:r2=0; P2:r0=0; P2:r2=0; x=0; y=0; }
 P0@cta 0,gpu 0           | P1@cta 1,gpu 0           | P2@cta 1,gpu 0           ;
 ld r0, 2                 | ld.weak r0, x            | ld r0, 2                 ;
 st.weak x, r0            | fence.sc.cta             | st.weak x, r0            ;
                          | ld r2, 1                 | fence.sc.gpu             ;
                          | st.weak y, r2            | ld r2, 1                 ;
                          |                          | st.weak y, r2            ;
exists
(x == 2 /\\ y == 2 /\\ P1:r0 == 2)
"
    ));
}

// --- Classic shapes: the paper's mapping soundness and scope rules -------------------------

fn mp(w_sem: &str, r_sem: &str, p1_cta: u32) -> String {
    format!(
        "PTX MP
{{ x=0; y=0; }}
 P0@cta 0,gpu 0 | P1@cta {p1_cta},gpu 0 ;
 st.relaxed.gpu x, 1 | ld.{r_sem} r0, y ;
 st.{w_sem} y, 1 | ld.relaxed.gpu r1, x ;
exists (P1:r0 == 1 /\\ P1:r1 == 0)
"
    )
}

// C++ forbids MP with release/acquire; the mapping st.release / ld.acquire must too.
#[test]
fn mp_release_acquire_gpu_forbidden() {
    let v = dat3m(&mp("release.gpu", "acquire.gpu", 1));
    assert!(!v.allowed);
    assert!(v.rejected.iter().all(|r| r.axiom == Axiom::Causality));
}

// Scopes that do not include the other thread (cta, different CTAs): not morally strong, no
// synchronisation, MP's weak outcome allowed.
#[test]
fn mp_release_acquire_cta_across_ctas_allowed() {
    assert!(dat3m(&mp("release.cta", "acquire.cta", 1)).allowed);
    assert!(!dat3m(&mp("release.cta", "acquire.cta", 0)).allowed);
}

// Relaxed MP: no synchronisation, allowed (C++ allows it for relaxed too).
#[test]
fn mp_relaxed_allowed() {
    assert!(dat3m(&mp("relaxed.gpu", "relaxed.gpu", 1)).allowed);
}

// C++ seq_cst forbids SB; its mapping (fence.sc; st.relaxed / fence.sc; ld.acquire) must too.
#[test]
fn sb_seq_cst_mapping_forbidden() {
    let v = dat3m(
        "PTX SB
{ x=0; y=0; }
 P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;
 fence.sc.gpu | fence.sc.gpu ;
 st.relaxed.gpu x, 1 | st.relaxed.gpu y, 1 ;
 fence.sc.gpu | fence.sc.gpu ;
 ld.acquire.gpu r0, y | ld.acquire.gpu r1, x ;
exists (P0:r0 == 0 /\\ P1:r1 == 0)
",
    );
    assert!(!v.allowed);
}

// C++ seq_cst forbids IRIW; the fence.sc mapping of the loads must too. With acquire loads
// alone (no fence.sc) PTX, like C++ acquire/release, allows it.
#[test]
fn iriw_seq_cst_forbidden_acquire_allowed() {
    let with = |f: &str| {
        format!(
            "PTX IRIW
{{ x=0; y=0; }}
 P0@cta 0,gpu 0 | P1@cta 1,gpu 0 | P2@cta 2,gpu 0 | P3@cta 3,gpu 0 ;
 st.relaxed.gpu x, 1 | st.relaxed.gpu y, 1 | ld.acquire.gpu r0, x | ld.acquire.gpu r0, y ;
 | | {f} | {f} ;
 | | ld.acquire.gpu r1, y | ld.acquire.gpu r1, x ;
exists (P2:r0 == 1 /\\ P2:r1 == 0 /\\ P3:r0 == 1 /\\ P3:r1 == 0)
"
        )
    };
    assert!(!dat3m(&with("fence.sc.gpu")).allowed);
    assert!(dat3m(&with("fence.acq_rel.gpu")).allowed);
}

// CoRR with morally strong accesses is forbidden (C++ read-read coherence).
#[test]
fn corr_relaxed_forbidden() {
    let v = dat3m(
        "PTX CoRR
{ x=0; }
 P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;
 st.relaxed.gpu x, 1 | ld.relaxed.gpu r0, x ;
 | ld.relaxed.gpu r1, x ;
exists (P1:r0 == 1 /\\ P1:r1 == 0)
",
    );
    assert!(!v.allowed);
    assert!(v.rejected.iter().all(|r| r.axiom == Axiom::ScPerLocation));
}

// LB without dependencies: PTX's no-thin-air axiom is acyclic(rf | dep), so relaxed LB with no
// dependency is allowed; with release/acquire it is forbidden by causality.
#[test]
fn lb_relaxed_allowed_release_acquire_forbidden() {
    let lb = |ld: &str, st: &str| {
        format!(
            "PTX LB
{{ x=0; y=0; }}
 P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;
 ld.{ld} r0, x | ld.{ld} r1, y ;
 st.{st} y, 1 | st.{st} x, 1 ;
exists (P0:r0 == 1 /\\ P1:r1 == 1)
"
        )
    };
    assert!(dat3m(&lb("relaxed.gpu", "relaxed.gpu")).allowed);
    assert!(!dat3m(&lb("acquire.gpu", "release.gpu")).allowed);
}

// Release sequence through an RMW: observation extends along rf; rmw; rf, so a relaxed atomic
// increment between the release store and the acquire load keeps the synchronisation, while a
// plain relaxed store in its place breaks it.
#[test]
fn release_sequence_through_rmw() {
    let t = |middle: &str| {
        format!(
            "PTX RelSeq
{{ x=0; y=0; }}
 P0@cta 0,gpu 0 | P1@cta 1,gpu 0 | P2@cta 2,gpu 0 ;
 st.relaxed.gpu x, 1 | {middle} | ld.acquire.gpu r0, y ;
 st.release.gpu y, 1 | | ld.relaxed.gpu r1, x ;
exists (P2:r0 == 2 /\\ P2:r1 == 0)
"
        )
    };
    // r0 == 2 needs the middle write to follow the release store in coherence order.
    let v = dat3m(&t("atom.relaxed.gpu.add r2, y, 1"));
    assert!(!v.allowed);
    assert!(dat3m(&t("st.relaxed.gpu y, 2")).allowed);
}

// Atomicity: two morally strong increments cannot both read 0.
#[test]
fn rmw_atomicity() {
    let t = |scope: &str, cta1: u32| {
        format!(
            "PTX RMW
{{ x=0; }}
 P0@cta 0,gpu 0 | P1@cta {cta1},gpu 0 ;
 atom.relaxed.{scope}.add r0, x, 1 | atom.relaxed.{scope}.add r1, x, 1 ;
exists (P0:r0 == 0 /\\ P1:r1 == 0)
"
        )
    };
    let v = dat3m(&t("gpu", 1));
    assert!(!v.allowed);
    // Both reading the initial value: ruled out by atomicity whatever the coherence order.
    // (The circular candidate, each reading the other's write, has no defined values and is
    // reported under no-thin-air.)
    let from_init: Vec<_> = v
        .rejected
        .iter()
        .filter(|r| r.execution.matches("<- init").count() == 2)
        .collect();
    assert_eq!(from_init.len(), 2);
    assert!(from_init.iter().all(|r| r.axiom == Axiom::Atomicity));
    assert!(v
        .rejected
        .iter()
        .all(|r| matches!(r.axiom, Axiom::Atomicity | Axiom::NoThinAir)));
    assert!(dat3m(&t("cta", 1)).allowed);
}

#[test]
fn report_names_outcome_and_axioms() {
    let t = import_dat3m(&mp("release.gpu", "acquire.gpu", 1)).unwrap();
    let r = report(&t, &check(&t));
    assert!(r.contains("outcome: forbidden\n"), "{r}");
    assert!(r.contains("causality: rf["), "{r}");
    let t = import_dat3m(&mp("relaxed.gpu", "relaxed.gpu", 1)).unwrap();
    assert!(report(&t, &check(&t)).contains("outcome: allowed\n"));
}

// The outcome set: relaxed MP reaches all four (r0, r1) pairs; release/acquire removes exactly
// (1, 0) (C++ release/acquire MP, mapped per ptx-interop 13.2 §4).
#[test]
fn allowed_outcomes_of_mp() {
    let relaxed = dat3m(&mp("relaxed.gpu", "relaxed.gpu", 1));
    assert_eq!(relaxed.terms.len(), 2);
    let all: BTreeSet<Vec<i64>> = [[0, 0], [0, 1], [1, 0], [1, 1]]
        .iter()
        .map(|v| v.to_vec())
        .collect();
    assert_eq!(relaxed.allowed_outcomes, all);
    let ra = dat3m(&mp("release.gpu", "acquire.gpu", 1));
    let mut expect = all.clone();
    expect.remove(&vec![1, 0]);
    assert_eq!(ra.allowed_outcomes, expect);
    assert!(!ra.outcome_allowed(&[1, 0]));
    assert!(ra.outcome_allowed(&[1, 1]));
}

#[test]
fn oversized_tests_are_refused_not_enumerated() {
    // Eight threads each storing twice to x: 16! coherence orders.
    let mut cols = Vec::new();
    for i in 0..8 {
        cols.push(format!("P{i}@cta {i},gpu 0"));
    }
    let row = ["st.relaxed.gpu x, 1"; 8].join(" | ");
    let text = format!(
        "PTX big\n{{ x=0; }}\n {} ;\n {row} ;\n {row} ;\nexists (x == 1)\n",
        cols.join(" | ")
    );
    let t = import_dat3m(&text).unwrap();
    let e = try_check(&t).unwrap_err();
    assert!(
        matches!(&e, super::ModelError::TooManyCandidates { test, .. } if test == "big"),
        "{e:?}"
    );
    assert!(e.to_string().contains("candidate executions"), "{e}");
    let v = check(&t);
    assert!(v.error.is_some() && !v.allowed);
    assert!(report(&t, &v).contains("outcome: unknown"));
}

// litmus/PTX/Manual/MP-cta-gpu.litmus, expected 1: a cta-scoped release and a gpu-scoped
// acquire in the same CTA are morally strong and synchronise.
#[test]
fn dat3m_mp_cta_gpu() {
    assert!(holds(
        "PTX MP-cta-gpu
\"Message passing, sync because release/acquire operations are morally strong\"
{
x=0;
y=0;
P1:r1=0;
P1:r2=0;
}
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         ;
 st.weak x, 1           | ld.acquire.gpu r1, y   ;
 st.release.cta y, 1    | ld.weak r2, x          ;
~exists
(P1:r1 == 1 /\\ P1:r2 != 1)
"
    ));
}

// litmus/PTX/Manual/CoWW-RR.litmus, expected 1: weak writes may be seen out of order.
#[test]
fn dat3m_coww_rr() {
    assert!(holds(
        "PTX CoWW-RR
{
P1:r0 = 0;
P1:r1 = 0;
x=0;
}
 P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;
 st.weak x, 1   | ld.weak r0, x  ;
 st.weak x, 2   | ld.weak r1, x  ;
exists
(P1:r0 == 2 /\\ P1:r1 == 1)
"
    ));
}

// litmus/PTX/Manual/LB-dlb.litmus, expected 0: load buffering through compare-and-swap and
// fence.sc.gpu cannot happen.
#[test]
fn dat3m_lb_dlb() {
    let v = dat3m(
        "PTX LB-dlb
\"Adapted from Figure 8 in
GPU Concurrency: Weak Behaviours and Programming Assumptions\"
{
t=0;
h=0;
P1:r3=0;
}
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 atom.relaxed.gpu.cas r0, h, 0, 1 | ld.weak r1, t                    ;
 fence.sc.gpu                     | fence.sc.gpu                     ;
 st.weak t, 1                     | atom.relaxed.gpu.cas r3, h, 0, 1 ;
exists
 (P0:r0 == 1 /\\ P1:r1 == 1)
",
    );
    assert!(!v.condition_holds);
    assert!(v.consistent > 0);
}

// litmus/PTX/Manual/Red-plus-location_.litmus, expected 1: both reductions land.
#[test]
fn dat3m_red_plus_location() {
    assert!(holds(
        "PTX Red-plus-location
{ P0:r0=0; P1:r0=0; x=0; }
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 red.acq_rel.sys.add x, 1         | red.acq_rel.sys.add x, 1  ;
forall
(x == 2)
"
    ));
}

// litmus/PTX/Manual/Atom-plus-location-weak_.litmus, expected 1: cta-scoped RMWs in different
// CTAs are not morally strong, so atomicity does not hold between them.
#[test]
fn dat3m_atom_plus_location_weak() {
    assert!(holds(
        "PTX _Atom-plus-location
{ P0:r0=0; P1:r0=0; x=0; }
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 atom.acq_rel.cta.add r0, x, 1    | atom.acq_rel.cta.add r0, x, 1  ;
exists
(x != 2)
"
    ));
}

// PTX ISA atom.cas: the new value is stored only when the old value equals the comparand; the
// destination register gets the old value either way.
#[test]
fn failed_cas_does_not_write() {
    let v = dat3m(
        "PTX cas
{ x=0; }
 P0@cta 0,gpu 0 ;
 atom.relaxed.gpu.cas r0, x, 5, 7 ;
 atom.relaxed.gpu.cas r1, x, 0, 9 ;
forall (P0:r0 == 0 /\\ P0:r1 == 0 /\\ x == 9)
",
    );
    assert!(v.condition_holds, "{v:?}");
    assert_eq!(v.consistent, 1);
}

// litmus/PTX/Nvidia/Co-Total-4-threads.litmus, expected 1: two racing weak writes need not be
// ordered by coherence, so two observers synchronised with both may see different values.
// (A total coherence order would forbid this: whichever write comes second, one observer's
// read would be from-read before a write that causally precedes it.)
#[test]
fn dat3m_co_total_4_threads_needs_partial_coherence() {
    assert!(holds(
        "PTX Co-Total-4-threads
{
x=0; f1=0; f2=0;
P2:r0=0; P2:r1=0; P2:r2=0;
P3:r3=0; P3:r4=0; P3:r5=0;
}
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         | P2@cta 0,gpu 0         | P3@cta 0,gpu 0         ;
 st.weak x, 1           | st.weak x, 2           | ld.acquire.sys r0, f1  | ld.acquire.sys r3, f1  ;
 st.release.sys f1, 1   | st.release.sys f2, 1   | ld.acquire.sys r1, f2  | ld.acquire.sys r4, f2  ;
                        |                        | ld.weak r2, x          | ld.weak r5, x   ;
exists
(P2:r0 = 1 /\\ P2:r1 = 1 /\\ P2:r2 = 1 /\\ P3:r3 = 1 /\\ P3:r4 = 1 /\\ P3:r5 = 2)
"
    ));
}

// The same with the writes made relaxed at sys scope: morally strong writes must be ordered
// by coherence, and the outcome becomes forbidden (Dat3M's Coherence.litmus, expected 0, is
// the two-observer form of this rule).
#[test]
fn strong_racing_writes_are_ordered() {
    let v = dat3m(
        "PTX Co-Total-4-threads-strong
{ x=0; f1=0; f2=0; }
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         | P2@cta 0,gpu 0         | P3@cta 0,gpu 0         ;
 st.relaxed.sys x, 1    | st.relaxed.sys x, 2    | ld.acquire.sys r0, f1  | ld.acquire.sys r3, f1  ;
 st.release.sys f1, 1   | st.release.sys f2, 1   | ld.acquire.sys r1, f2  | ld.acquire.sys r4, f2  ;
                        |                        | ld.weak r2, x          | ld.weak r5, x   ;
exists
(P2:r0 = 1 /\\ P2:r1 = 1 /\\ P2:r2 = 1 /\\ P3:r3 = 1 /\\ P3:r4 = 1 /\\ P3:r5 = 2)
",
    );
    assert!(!v.allowed);
}

// ptx-interop 13.2 §4 also maps a release store to `fence.release; st.relaxed` and an acquire
// load to `ld.relaxed; fence.acquire`; by the paper's soundness result MP through them is
// forbidden. With the fences swapped (an acquire fence before the store, a release fence after
// the load) neither forms a release or acquire pattern, and MP's outcome stays allowed.
#[test]
fn one_way_fences() {
    let t = |f0: &str, f1: &str| {
        format!(
            "PTX MP-fences
{{ x=0; y=0; }}
 P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;
 st.relaxed.gpu x, 1 | ld.relaxed.gpu r0, y ;
 {f0} | {f1} ;
 st.relaxed.gpu y, 1 | ld.relaxed.gpu r1, x ;
exists (P1:r0 == 1 /\\ P1:r1 == 0)
"
        )
    };
    assert!(!dat3m(&t("fence.release.gpu", "fence.acquire.gpu")).allowed);
    assert!(dat3m(&t("fence.acquire.gpu", "fence.release.gpu")).allowed);
}

/// The axioms by the names of Dat3M's cat files, the models by `--model`'s values, and the
/// outcomes by the words of `litmus check`'s report.
#[test]
fn model_vocabulary_names() {
    use strum::VariantArray;
    let axioms: Vec<String> = Axiom::VARIANTS.iter().map(|a| a.to_string()).collect();
    assert_eq!(
        axioms,
        [
            "coherence",
            "fence-sc",
            "atomicity",
            "no-thin-air",
            "sc-per-location",
            "causality"
        ]
    );
    assert_eq!(Model::parse("ptx-v6.0"), Some(Model::V60));
    assert_eq!(Model::parse("ptx-v7.5"), Some(Model::V75));
    assert_eq!(Model::parse("ptx-v8.0"), None);
    for &m in Model::VARIANTS {
        assert_eq!(Model::parse(m.name()), Some(m));
    }
    assert_eq!("forbidden".parse::<Outcome>(), Ok(Outcome::Forbidden));
    assert_eq!(Outcome::Allowed.to_string(), "allowed");
    assert!("sometimes".parse::<Outcome>().is_err());
}
