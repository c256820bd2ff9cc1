//! The emulator holds kernels to the PTX ISA's rules for CTA barriers ("bar, barrier"), so
//! that a generated kernel that would fault or hang on a GPU fails offline.

use super::count::{machine, run_threads};
use super::{parse, EmulateError};

/// Run `body` (the instructions of a kernel without parameters) on one CTA of `ntid` threads,
/// interleaved from `seed`.
fn run(body: &str, ntid: u32, seed: u64) -> Result<u64, EmulateError> {
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n\n.visible .entry k(\n)\n{{\n\
         \t.reg .pred %p;\n\t.reg .b32 %t, %i, %n;\n\tmov.u32 %t, %tid.x;\n{body}\tret;\n}}\n"
    );
    let prog = parse(&ptx)?;
    let mut m = machine(&prog, ntid, &[], &[]);
    run_threads(&mut m, ntid, Some(seed))
}

/// Lane `%t` spins `%t % 5` times (the lanes of a warp leave a spin loop at different
/// times, as lanes playing different instances do), capped at 2 iterations; a capped lane
/// branches to `capped`, the others fall through to `after`.
fn spin(capped: &str, after: &str) -> String {
    format!(
        "\trem.u32 %n, %t, 5;\n\tmov.u32 %i, 0;\nL:\n\tsetp.ge.u32 %p, %i, %n;\n\t@%p bra DONE;\n\
         \tadd.u32 %i, %i, 1;\n\tsetp.ge.u32 %p, %i, 2;\n\t@%p bra CAPPED;\n\tbra L;\n\
         DONE:\n{after}\tret;\nCAPPED:\n{capped}"
    )
}

fn misuse(r: Result<u64, EmulateError>) -> String {
    match r {
        Err(EmulateError::Barrier(why)) => why,
        other => panic!("expected a barrier misuse, got {other:?}"),
    }
}

// Lanes of one warp that leave a spin loop at different times and all reach one
// `barrier.sync` (the non-aligned form, PTX ISA: allowed in divergent code since sm_70)
// complete it: two warps, count 64.
#[test]
fn diverged_lanes_at_one_barrier_instruction_complete_it() {
    let at = "\tbarrier.sync 1, 64;\n";
    for seed in 0..4 {
        let body = spin("\tbra DONE;\n", at);
        run(&body, 64, seed).unwrap();
    }
}

// A lane stopped at the loop cap that arrives on another path (`barrier.arrive`) while the
// other lanes of its warp `barrier.sync`: one warp executes two barrier instructions on one
// barrier in one phase, which PTX ISA "bar, barrier" forbids (a barrier marks the warp's
// arrival); the emulator names it.
#[test]
fn a_warp_at_two_barrier_instructions_in_one_phase_is_flagged() {
    let body = spin("\tbarrier.arrive 1, 64;\n", "\tbarrier.sync 1, 64;\n");
    let why = misuse(run(&body, 64, 1));
    assert!(why.contains("two barrier instructions"), "{why}");
}

// Two warps of one CTA on one barrier with different thread counts in one phase (PTX ISA:
// the warps share the barrier's name and count).
#[test]
fn one_phase_with_two_thread_counts_is_flagged() {
    let body = "\tsetp.lt.u32 %p, %t, 32;\n\t@%p bra A;\n\tbarrier.sync 2, 64;\n\tret;\n\
                A:\n\tbarrier.sync 2, 32;\n";
    let why = misuse(run(body, 64, 3));
    assert!(why.contains("thread counts"), "{why}");
}

// A thread count that is not a multiple of the warp size (PTX ISA: "the value must be a
// multiple of the warp size"), and more warps than the count holds.
#[test]
fn counts_off_the_warp_size_and_extra_warps_are_flagged() {
    let why = misuse(run("\tbarrier.sync 1, 48;\n", 64, 0));
    assert!(why.contains("multiple of the warp size"), "{why}");
    let why = misuse(run("\tbarrier.sync 1, 32;\n", 64, 0));
    assert!(
        why.contains("2 warps arrive in one phase of count 32"),
        "{why}"
    );
}

// A generated kernel whose spin loop stops at the cap in some instances and not in others,
// with a barrier after the loop: P0 waits for y == 1 while P1 writes 1 then 2, so an
// instance whose P0 misses the 1 spins until the cap. The lanes of P0's warp (32 instances)
// split between the two ways out of the loop, and still meet the PTX ISA's barrier rules
// (one barrier instruction per warp and phase); the stopped instances are counted "did not
// terminate", and every other instance gives an outcome the model allows.
#[test]
fn lanes_stopped_at_the_cap_reach_the_barrier_with_the_others() {
    let test = crate::atomics::litmus::from_yaml(
        "name: spin-then-barrier\n\
         threads:\n\
         - cta: 0\n  ops:\n\
         \x20 - label: {name: L}\n\
         \x20 - ld: {reg: r0, loc: y}\n\
         \x20 - branch: {cond: ne, a: r0, b: 1, target: L}\n\
         \x20 - barrier: {instance: 1}\n\
         \x20 - ld: {reg: r1, loc: x}\n\
         - cta: 0\n  ops:\n\
         \x20 - st: {loc: x, val: 1}\n\
         \x20 - st: {loc: y, val: 1}\n\
         \x20 - st: {loc: y, val: 2}\n\
         \x20 - barrier: {instance: 1}\n\
         condition: 'exists (P0:r1 == 0)'\n",
    )
    .unwrap();
    let params = crate::atomics::gpu::StressParams {
        testing_workgroups: 1,
        workgroup_size: 64,
        max_workgroups: 1,
        stress_iterations: 2,
        pre_stress_iterations: 1,
        ..crate::atomics::gpu::StressParams::default()
    };
    let v = crate::atomics::model::check(&test);
    let (mut stopped, mut finished) = (0, 0);
    for seed in 0..3 {
        let run = super::emulate(&test, &params, 1, seed).unwrap();
        assert!(
            run.histogram.keys().all(|o| v.outcome_allowed(o)),
            "{run:?}"
        );
        stopped += run.did_not_terminate;
        finished += run.histogram.values().sum::<u64>();
    }
    assert!(
        stopped > 0 && finished > 0,
        "{stopped} stopped, {finished} finished"
    );
}
