//! The async proxy in the model: `cp.async.bulk` completing on an mbarrier and
//! `fence.proxy.async` (PTX ISA 8.x "Asynchronous copy", "Async Proxy", "cp.async.bulk",
//! "membar/fence"). Expected verdicts are argued from the ISA in the comments, not read from
//! the checker.

use super::events::DROP_MBARRIER_RELEASE;
use super::*;
use crate as litmus;
use crate::dat3m;

fn suite(name: &str) -> LitmusTest {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/litmus");
    litmus::load_file(&dir.join(format!("{name}.yaml"))).unwrap()
}

fn allowed(t: &LitmusTest) -> bool {
    let v = check(t);
    assert!(v.error.is_none(), "{}: {:?}", t.name, v.error);
    assert_eq!(
        v.model,
        Model::V75,
        "{}: the async proxy needs the proxy model",
        t.name
    );
    v.allowed
}

/// A test of one thread in CTA 0 over global `g` (init 1) and shared `d`, `m`, in Dat3M text.
fn one_thread(ops: &str, cond: &str) -> LitmusTest {
    let text = format!(
        "PTX t\n{{ g=1; d=0; m=0; P0:r0=0; }}\n P0@cta 0,gpu 0 ;\n{} \nexists ({cond})\n",
        ops.split(';')
            .map(|o| format!(" {} ;\n", o.trim()))
            .collect::<String>()
    );
    dat3m::import(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

// Mutation check: the mbarrier's phase completion is what makes the copy's write visible to
// the waiting thread (the complete-tx is a release at cluster scope, try_wait an acquire). A
// model that drops the release allows the stale read, so `atomics.model.proxy.mbar-mp`, which
// expects forbidden as the ISA's completion mechanism says, would fail.
#[test]
fn the_mbarrier_completion_is_what_forbids_the_stale_read() {
    let t = suite("proxy-async-mbar-mp");
    assert!(!allowed(&t));
    DROP_MBARRIER_RELEASE.with(|m| m.set(true));
    let mutated = allowed(&t);
    DROP_MBARRIER_RELEASE.with(|m| m.set(false));
    assert!(
        mutated,
        "a model without the mbarrier edge still forbids the stale read"
    );
}

// The copy is asynchronous: the issuing thread's later operations are not ordered after it
// (reading the destination before the completion is observed may see the old value), while
// after the wait the copy's write is visible.
#[test]
fn a_copy_orders_nothing_before_its_completion_is_observed() {
    let early = one_thread("cp.async.bulk d, g, m; ld.weak r0, d", "P0:r0 == 0");
    assert!(allowed(&early));
    let waited = one_thread(
        "cp.async.bulk d, g, m; mbarrier.try_wait.parity m, 0; ld.weak r0, d",
        "P0:r0 == 0",
    );
    assert!(!allowed(&waited));
}

// A generic store read by the copy: fence.proxy.async between them orders the two proxies
// (forbidden stale copy), without it nothing does (allowed); a generic fence is no proxy fence.
#[test]
fn only_the_async_proxy_fence_orders_a_generic_store_before_the_copy() {
    let t = |fence: &str| {
        one_thread(
            &format!(
                "st.weak g, 2; {fence} cp.async.bulk d, g, m; mbarrier.try_wait.parity m, 0; ld.weak r0, d"
            ),
            "P0:r0 != 2",
        )
    };
    assert!(!allowed(&t("fence.proxy.async;")));
    assert!(allowed(&t("")));
    assert!(allowed(&t("fence.sc.sys;")));
    assert!(allowed(&t("fence.proxy.alias;")));
}

// The model's reading of the two observation tests, which the ISA leaves undefined: the
// mixed-proxy model orders a proxy fence's effects only for operations of its own CTA, so a
// fence in the copying CTA after the acquire forbids the stale copy, one in the storing CTA
// does not. Recorded in the GPU cases' notes, never judged there.
#[test]
fn the_observation_tests_have_the_mixed_proxy_models_reading() {
    assert!(!allowed(&suite("proxy-async-fence-reader-cta")));
    assert!(allowed(&suite("proxy-async-fence-writer-cta")));
}

// The Dat3M text of the async operations survives export and import (state spaces, which the
// syntax has no place for, aside).
#[test]
fn async_operations_round_trip_through_dat3m_text() {
    for name in ["proxy-async-fence", "proxy-async-fence-reader-cta"] {
        let t = suite(name);
        let text = dat3m::export(&t);
        assert!(text.contains("cp.async.bulk d, g, m"), "{text}");
        assert!(text.contains("mbarrier.try_wait.parity m, 0"), "{text}");
        assert!(text.contains("fence.proxy.async"), "{text}");
        let back = dat3m::import(&text).unwrap();
        let ops = |t: &LitmusTest| {
            t.threads
                .iter()
                .map(|th| th.ops.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(ops(&back), ops(&t));
        assert_eq!(allowed(&back), allowed(&t));
    }
    for bad in [
        "cp.async.bulk d, g",
        "mbarrier.try_wait.parity m, 1",
        "cp.async.bulk.global d, g, m",
    ] {
        assert!(dat3m::parse_instr(bad).is_err(), "{bad}");
    }
}

// The ISA's rules for mbarriers, refused with the rule: an mbarrier is reached only by its
// operations, tracks one copy, and is waited on from its own CTA.
#[test]
fn mbarrier_misuse_is_refused() {
    let refused = |ops: &str, why: &str| {
        let e = match ops.strip_suffix("; P1") {
            // A second thread, in CTA 1, waits on P0's mbarrier.
            Some(ops) => {
                let mut t = one_thread(ops, "P0:r0 == 0");
                t.threads.push(litmus::Thread {
                    cta: 1,
                    cluster: None,
                    gpu: 0,
                    warp: None,
                    regs: Default::default(),
                    ops: vec![litmus::Op::MbarWait { mbar: "m".into() }],
                });
                t.validate().unwrap_err().to_string()
            }
            None => {
                let text = format!(
                    "PTX t\n{{ g=1; d=0; m=0; P0:r0=0; }}\n P0@cta 0,gpu 0 ;\n{}\nexists (P0:r0 == 0)\n",
                    ops.split(';').map(|o| format!(" {} ;\n", o.trim())).collect::<String>()
                );
                dat3m::import(&text).unwrap_err().to_string()
            }
        };
        assert!(e.contains(why), "{ops}: {e}");
    };
    refused("cp.async.bulk d, g, m; ld.weak r0, m", "reached only by");
    refused(
        "cp.async.bulk d, g, m; cp.async.bulk e, g, m; ld.weak r0, d",
        "more than one",
    );
    refused("cp.async.bulk d, g, d; ld.weak r0, d", "three locations");
    refused(
        "mbarrier.try_wait.parity m, 0; ld.weak r0, d",
        "no cp.async.bulk completes",
    );
    refused(
        "cp.async.bulk d, g, m; mbarrier.try_wait.parity m, 0; ld.weak r0, d; P1",
        "own CTA",
    );
    // The Dat3M reader places a copy's destination and mbarrier in shared memory (its text has
    // no state spaces); a YAML test that puts them in global memory is refused.
    let mut t = one_thread(
        "cp.async.bulk d, g, m; mbarrier.try_wait.parity m, 0; ld.weak r0, d",
        "P0:r0 == 0",
    );
    let d = t.locations.iter_mut().find(|l| l.name == "d").unwrap();
    assert_eq!(d.space, litmus::Space::Shared);
    d.space = litmus::Space::Global;
    let e = t.validate().unwrap_err().to_string();
    assert!(e.contains("from global `g` to shared `d`"), "{e}");
}
