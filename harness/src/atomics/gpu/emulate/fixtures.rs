//! Litmus tests and stress parameters that several of the GPU layer's test modules share.

use crate::atomics::gpu::layout::StressParams;
use crate::atomics::litmus::LitmusTest;

/// The smallest one-role-per-thread launch: 2 testing CTAs of one warp, a little stress.
pub(crate) fn one_role_params() -> StressParams {
    StressParams {
        testing_workgroups: 2,
        workgroup_size: 32,
        max_workgroups: 2,
        stress_iterations: 2,
        pre_stress_iterations: 1,
        ..StressParams::default()
    }
}

/// P0 spins until x == 1, which no thread writes: every instance stops at the loop cap.
pub(crate) fn spin_forever() -> LitmusTest {
    crate::atomics::litmus::from_yaml(
        "name: spin-forever\n\
         threads:\n\
         - cta: 0\n  ops:\n\
         \x20 - label: {name: L}\n\
         \x20 - ld: {reg: r0, loc: x, sem: relaxed, scope: gpu}\n\
         \x20 - branch: {cond: ne, a: r0, b: 1, target: L}\n\
         - cta: 1\n  ops:\n\
         \x20 - st: {loc: y, val: 1}\n\
         condition: 'exists (P0:r0 == 1)'\n",
    )
    .unwrap()
}

/// Two reductions `or` 3 and 5 into an initial 40: x ends at 47, which no constant of the
/// test names, so every outcome goes through the overflow log.
pub(crate) fn two_ors() -> LitmusTest {
    crate::atomics::litmus::from_yaml(
        "name: two-ors\n\
         locations: [{name: x, init: 40}]\n\
         threads:\n\
         - cta: 0\n  ops:\n\
         \x20 - red: {op: or, loc: x, val: 3, sem: relaxed, scope: gpu}\n\
         - cta: 1\n  ops:\n\
         \x20 - red: {op: or, loc: x, val: 5, sem: relaxed, scope: gpu}\n\
         condition: 'exists (x == 47)'\n",
    )
    .unwrap()
}
