//! Where each test instance runs and lives: the thread-to-role tables a kernel launch reads,
//! the addresses of every instance's locations, and decoding what came back into outcomes.
//!
//! All the shuffling is decided here on the host, per iteration, and handed to the kernel as
//! tables, so that the placement rules can be checked without a GPU: every instance gets each
//! of the test's threads exactly once; `inter_cta` puts them in different CTAs, `intra_cta` in
//! one CTA and different warps (as the catalogue's placement says, thread i in warp i),
//! `intra_cluster` in different CTAs of one thread block cluster, `inter_cluster` in different
//! clusters. A cluster launch tiles the grid with clusters of [`Geometry::cluster`] CTAs along
//! x: hardware block `b` is CTA `b % cluster` (its `%cluster_ctarank`) of cluster
//! `b / cluster` (its `%clusterid.x`); the shuffle moves whole clusters and keeps ranks.

use crate::vocab::Vocabulary;
use std::collections::BTreeMap;
use strum::VariantArray;

use rand::Rng;

use crate::atomics::litmus::{LitmusTest, Op, Space, Term};

/// A role-table entry of a thread that plays no test role (a stress thread).
pub(crate) const NONE: u32 = u32::MAX;
/// Threads of a warp.
pub(crate) const WARP: u32 = 32;
/// Most CTAs a launch may have (all must be co-resident for the spin barrier: far more than
/// any GPU holds at once).
pub(crate) const MAX_WORKGROUPS: u32 = 65_536;
/// Most threads a launch may have.
pub(crate) const MAX_THREADS: u32 = 1 << 22;
/// Most words of the stress scratch buffer (64 MiB).
pub(crate) const MAX_SCRATCH_WORDS: u64 = 1 << 24;
/// Most stress accesses per thread.
pub(crate) const MAX_STRESS_ITERATIONS: u64 = 1 << 16;
/// Most words between an instance's locations.
pub(crate) const MAX_MEM_STRIDE: u64 = 64;
/// Most threads of a CTA (CUDA's limit on every architecture since sm_20).
pub(crate) const MAX_BLOCK: u32 = 1024;
/// Most static shared memory a kernel declares (48 KiB on every architecture; more needs
/// dynamic shared memory and an opt-in).
pub(crate) const MAX_STATIC_SHARED: u64 = 48 * 1024;

/// The stress parameters of MC Mutants (Levine et al., ASPLOS'23) and GPUHarbor (Levine et
/// al., ISSTA'23). In a suite (`gpu: {test: ..., stress: {stress_iterations: 512}}`) the keys
/// given replace the defaults; `gpucts litmus tune` prints whole sets in this form.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StressParams {
    /// CTAs that run test instances (a power of two).
    pub testing_workgroups: u32,
    /// Threads per CTA (a power of two, a multiple of 32).
    pub workgroup_size: u32,
    /// CTAs launched in all; those beyond the testing ones only stress memory. All must be
    /// co-resident for the spin barrier (it gives up after a bounded spin regardless).
    pub max_workgroups: u32,
    /// Words of one stress line.
    pub stress_line_size: u32,
    /// Stress lines that stressing CTAs pick from.
    pub stress_target_lines: u32,
    /// Accesses per stressing thread while the test runs.
    pub stress_iterations: u32,
    /// Accesses per testing thread before the barrier.
    pub pre_stress_iterations: u32,
    /// What a stressing thread does to its line each iteration.
    pub stress_pattern: StressPattern,
    /// Percentage of iterations whose CTA, warp and lane assignment is shuffled.
    pub shuffle_pct: u32,
    /// Spin-barrier start: testing threads wait for each other before the test's first access.
    pub barrier: bool,
    /// Words between the locations of one instance's block.
    pub mem_stride: u32,
    /// Tests placed within one CTA keep their locations in that CTA's shared memory (copied
    /// in from the location buffer before the test and back after it); ignored for tests
    /// across CTAs. Shared memory is where GPU litmus studies saw weak behaviour inside a
    /// workgroup (Alglave et al., ASPLOS'15; GPUHarbor's workgroup-memory tests).
    pub intra_cta_shared: bool,
    /// Tests placed within one cluster keep each instance's locations in the shared memory of
    /// the CTA playing its P0 (copied in before the test and back after it, with a cluster
    /// barrier on each side); the other CTAs reach them through distributed shared memory
    /// (`mapa` and `.shared::cluster` accesses, PTX ISA "Distributed shared memory"). Ignored
    /// for other placements.
    pub cluster_shared: bool,
}

/// What each stressing thread does to its stress line per iteration: the two accesses of
/// GPUHarbor's memory-stress patterns (Levine et al., ISSTA'23). Suites and `litmus tune`
/// records write it as its code (0..=3, the order below) or its name (`store-load`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
#[serde(try_from = "PatternWritten", into = "u32")]
pub enum StressPattern {
    #[strum(serialize = "store-store")]
    StoreStore,
    #[strum(serialize = "store-load")]
    StoreLoad,
    #[strum(serialize = "load-store")]
    LoadStore,
    #[strum(serialize = "load-load")]
    LoadLoad,
}

impl StressPattern {
    /// In code order.
    /// The code records carry (0..=3).
    pub fn code(self) -> u32 {
        self as u32
    }
}

impl From<StressPattern> for u32 {
    fn from(p: StressPattern) -> u32 {
        p.code()
    }
}

/// A stress pattern as a file writes it.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum PatternWritten {
    Code(u64),
    Name(String),
}

/// A `stress_pattern:` that is neither a code nor a name.
#[derive(Debug, thiserror::Error)]
#[error(
    "`{0}`: stress_pattern is 0 (store-store), 1 (store-load), 2 (load-store) or 3 (load-load)"
)]
pub(crate) struct UnknownStressPattern(String);

impl TryFrom<PatternWritten> for StressPattern {
    type Error = UnknownStressPattern;
    fn try_from(w: PatternWritten) -> Result<Self, Self::Error> {
        let found = match &w {
            PatternWritten::Code(c) => StressPattern::VARIANTS.get(*c as usize).copied(),
            PatternWritten::Name(n) => StressPattern::VARIANTS
                .iter()
                .copied()
                .find(|p| p.name() == n),
        };
        found.ok_or_else(|| {
            UnknownStressPattern(match w {
                PatternWritten::Code(c) => c.to_string(),
                PatternWritten::Name(n) => n,
            })
        })
    }
}

impl Default for StressParams {
    /// Sized for one H100 (132 SMs): 128 CTAs of 256 threads are co-resident with room to
    /// spare; 8,192 instances per launch.
    fn default() -> Self {
        StressParams {
            testing_workgroups: 32,
            workgroup_size: 256,
            max_workgroups: 128,
            stress_line_size: 64,
            stress_target_lines: 16,
            stress_iterations: 128,
            pre_stress_iterations: 64,
            stress_pattern: StressPattern::StoreLoad,
            shuffle_pct: 100,
            barrier: true,
            mem_stride: 1,
            intra_cta_shared: false,
            cluster_shared: false,
        }
    }
}

/// Most threads a random parameter set launches: 128 Ki, under an H100's 132 SMs x 2,048
/// resident threads (270,336), so every CTA can be co-resident for the spin barrier.
pub(crate) const MAX_RANDOM_THREADS: u32 = 128 * 1024;

impl StressParams {
    /// A random parameter set, GPUHarbor's tuning style (Levine et al., ISSTA'23: each
    /// parameter drawn independently from a range): powers of two for the launch shape, every
    /// stress knob from off to heavy. Always valid for [`Geometry::new`] (a test may still
    /// have more roles than units; that test is skipped for this set).
    pub fn random(rng: &mut impl Rng) -> StressParams {
        fn pow2(rng: &mut impl Rng, lo: u32, hi: u32) -> u32 {
            1 << rng.random_range(lo.trailing_zeros()..=hi.trailing_zeros())
        }
        let workgroup_size = pow2(rng, 32, 1024);
        let testing_workgroups = pow2(rng, 2, (MAX_RANDOM_THREADS / workgroup_size).min(256));
        let most = (MAX_RANDOM_THREADS / workgroup_size).max(testing_workgroups);
        let max_workgroups = rng.random_range(testing_workgroups..=most);
        let intra_cta_shared = rng.random_bool(0.5);
        // Shared memory holds a CTA's locations (the catalogue's tests have at most four):
        // keep them inside static shared memory.
        let most_stride = if intra_cta_shared {
            (MAX_STATIC_SHARED / (4 * 4 * u64::from(workgroup_size))).clamp(1, 8) as u32
        } else {
            8
        };
        StressParams {
            testing_workgroups,
            workgroup_size,
            max_workgroups,
            stress_line_size: pow2(rng, 1, 128),
            stress_target_lines: rng.random_range(1..=64),
            stress_iterations: rng.random_range(0..=1024),
            pre_stress_iterations: rng.random_range(0..=512),
            stress_pattern: StressPattern::VARIANTS[rng.random_range(0..=3)],
            shuffle_pct: rng.random_range(0..=100),
            barrier: rng.random_bool(0.5),
            mem_stride: rng.random_range(1..=most_stride),
            intra_cta_shared,
            cluster_shared: false,
        }
    }
}

pub use crate::atomics::litmus::Placement;

/// The fixed shape of a test's launches: roles, locations, result slots.
#[derive(Debug, Clone)]
pub struct Geometry {
    pub params: StressParams,
    pub placement: Placement,
    /// Threads of the test (roles).
    pub roles: u32,
    /// The test's locations, in [`LitmusTest::all_locations`] order.
    pub locations: Vec<String>,
    /// Initial value of each location.
    pub inits: Vec<i64>,
    /// Result slots of one instance: every (thread, register) the test writes or initialises.
    pub slots: Vec<(usize, String)>,
    /// The locations live in each CTA's shared memory ([`StressParams::intra_cta_shared`] for
    /// a test within one CTA).
    pub shared: bool,
    /// One role per thread ([`Dedicated`]) instead of every testing thread playing every role
    /// for different instances: for tests with control flow, barriers, or threads placed in
    /// some CTAs together and in others apart.
    pub dedicated: Option<Dedicated>,
    /// CTAs per thread block cluster of the launch ([`cluster_size`]); 1 for a launch without
    /// clusters.
    pub cluster: u32,
    /// The index of each location's physical location (itself unless it aliases another):
    /// a final value of an alias is its physical location's.
    pub(crate) physical: Vec<usize>,
    /// The physical locations whose words live in the surface array that mirrors the location
    /// buffer ([`super::binding`]); their final values are read back from the array.
    pub(crate) surface_backed: Vec<usize>,
}

/// Most CTAs of a cluster a launch may ask for without opting in to a non-portable size
/// (CUDA: 8 on every sm_90 part).
pub(crate) const MAX_PORTABLE_CLUSTER: u32 = 8;

/// CTAs per cluster for a test of `roles` threads placed with `placement`: within one cluster,
/// the next power of two that holds every thread's CTA; across clusters, 2 (the smallest
/// cluster launch, so that the hardware runs in its cluster mode); 1 otherwise.
pub(crate) fn cluster_size(placement: Placement, roles: u32) -> u32 {
    match placement {
        Placement::IntraCluster => roles.max(2).next_power_of_two(),
        Placement::InterCluster => 2,
        Placement::IntraCta | Placement::InterCta => 1,
    }
}

/// The result slot of an instance that flags "did not terminate": written 1 by a thread that
/// reached [`super::kernel::LOOP_CAP`] backward jumps (its thread index is no test thread's).
pub(crate) const DID_NOT_TERMINATE: (usize, &str) = (usize::MAX, "%did_not_terminate");

/// The [`DID_NOT_TERMINATE`] slot's value for an instance one of whose threads ran a loop
/// iteration with effects past the model's loop bound (`kernel::MODEL_UNROLL`); the loop cap
/// writes 1.
pub(crate) const PAST_MODEL_BOUND: u32 = 2;

/// The one-role-per-thread layout. A test's threads are placed per its scope tree: the test's
/// CTAs (`C` distinct `cta` values) map onto `C` hardware CTAs, and the threads of one test CTA
/// onto distinct warps of it, one warp per thread, lane `i` of every such warp playing
/// instance `i` of the group. A hardware CTA holds `groups` such warp groups; testing CTAs are
/// taken `C` at a time. Each role is played by exactly one thread per instance, so a thread
/// waiting for another (a spin loop, a barrier) waits only for threads that run their own
/// role concurrently, never for one that must first finish another role.
///
/// Barriers: a test barrier `id` of warp group `w` is hardware barrier
/// `1 + w * barrier_ids.len() + index(id)` (hardware barrier 0 stays the kernel's own), with
/// thread count `32 * quorum` (each test thread is a whole warp); so each instance's threads
/// synchronise with their own group only — together with the other 31 instances of the warp
/// group, which run the same roles on disjoint locations and add no ordering between one
/// instance's events that the test's barrier does not already give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dedicated {
    /// Test CTA (0..ctas) of each role.
    pub role_cta: Vec<u32>,
    /// Warp of each role within its warp group (0..warps).
    pub role_warp: Vec<u32>,
    /// Distinct CTAs of the test.
    pub ctas: u32,
    /// Warps of one warp group: the most test threads one test CTA has.
    pub warps: u32,
    /// Warp groups per hardware CTA.
    pub groups: u32,
    /// The test's barrier ids (values), sorted; hardware ids per group are allotted in this
    /// order.
    pub barrier_ids: Vec<i64>,
}

/// Hardware named barriers per CTA (PTX ISA "bar, barrier": 16, ids 0..15); id 0 stays the
/// kernel's own.
pub(crate) const HW_BARRIERS: u32 = 16;

/// The value of a register operand fixed before the test runs: the thread's initial value
/// when no operation writes the register, or the one constant every `mov` into it writes.
pub(crate) fn static_value(
    thread: &crate::atomics::litmus::Thread,
    o: &crate::atomics::litmus::Operand,
) -> Option<i64> {
    use crate::atomics::litmus::Operand;
    match o {
        Operand::Const(v) => Some(*v),
        Operand::Reg(r) => {
            let mut value = thread.regs.get(r).copied().unwrap_or(0);
            let mut moved: Option<i64> = None;
            for op in &thread.ops {
                if op.dest() != Some(r.as_str()) {
                    continue;
                }
                match op {
                    Op::Mov {
                        val: Operand::Const(c),
                        ..
                    } if moved.is_none_or(|m| m == *c) => moved = Some(*c),
                    _ => return None,
                }
            }
            if let Some(m) = moved {
                // A register both initialised and moved to another value has two values.
                if thread.regs.contains_key(r) && value != m {
                    return None;
                }
                value = m;
            }
            Some(value)
        }
    }
}

/// The id a barrier operation names (its `id`, else its instance), when fixed.
pub(crate) fn barrier_id(thread: &crate::atomics::litmus::Thread, op: &Op) -> Option<i64> {
    match op {
        Op::Barrier { instance, id, .. } => match id {
            Some(o) => static_value(thread, o),
            None => Some(*instance),
        },
        _ => None,
    }
}

/// Whether a test needs the one-role-per-thread layout.
fn needs_dedicated(test: &LitmusTest) -> bool {
    test.threads
        .iter()
        .flat_map(|t| &t.ops)
        .any(|o| o.is_control() || matches!(o, Op::Barrier { .. }))
}

/// Why a test or a parameter set has no launch geometry on the GPU runner.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    #[error(
        "testing_workgroups ({testing_workgroups}) and workgroup_size ({workgroup_size}) must be powers of two, \
         workgroup_size {WARP}..={MAX_BLOCK}"
    )]
    NotPowersOfTwo {
        testing_workgroups: u32,
        workgroup_size: u32,
    },
    #[error("max_workgroups must be >= testing_workgroups, mem_stride >= 1")]
    Workgroups,
    #[error("stress lines must be non-empty")]
    Stress,
    /// `unit`: testing CTAs or warps per CTA.
    #[error("`{test}` has {roles} threads but only {units} {unit} to place them in")]
    TooFewUnits {
        test: String,
        roles: u32,
        units: u32,
        unit: &'static str,
    },
    #[error("`{test}`: location `{location}` is in shared memory; the GPU runner places every location in global memory")]
    SharedLocation { test: String, location: String },
    #[error("`{0}`: the GPU runner uses one GPU")]
    SeveralGpus(String),
    #[error("`{0}`: {1}")]
    Clusters(String, &'static str),

    #[error("`{0}`: threads sharing a warp are not placed by the GPU runner")]
    SharedWarp(String),
    #[error("`{0}`: threads must all share one CTA or each have their own")]
    MixedCtas(String),
    #[error("{what} is {value}; at most {max}")]
    TooLarge {
        what: &'static str,
        value: u64,
        max: u64,
    },
    #[error("{bytes} bytes of shared memory for one CTA's locations (workgroup_size x locations x mem_stride x 4); at most {MAX_STATIC_SHARED}")]
    SharedTooLarge { bytes: u64 },
}

/// Why a launch's buffers do not decode into outcomes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("condition names {0}, which no operation writes")]
    UnwrittenRegister(String),
    #[error("condition names location `{0}`, which the test lacks")]
    UnknownLocation(String),
    #[error(
        "result buffer of {results} words, address table of {addresses}, for {instances} instances"
    )]
    ShortBuffers {
        results: usize,
        addresses: usize,
        instances: usize,
    },
    #[error("location word {0} beyond the buffer")]
    BeyondBuffer(usize),
}

/// The stress parameters' own bounds, before any product of them is formed.
fn check_params(p: &StressParams) -> Result<(), GeometryError> {
    let pow2 = |v: u32| v != 0 && v.is_power_of_two();
    if !pow2(p.testing_workgroups)
        || !pow2(p.workgroup_size)
        || p.workgroup_size < WARP
        || p.workgroup_size > MAX_BLOCK
    {
        return Err(GeometryError::NotPowersOfTwo {
            testing_workgroups: p.testing_workgroups,
            workgroup_size: p.workgroup_size,
        });
    }
    if p.max_workgroups < p.testing_workgroups || p.mem_stride == 0 {
        return Err(GeometryError::Workgroups);
    }
    if p.stress_line_size == 0 || p.stress_target_lines == 0 {
        return Err(GeometryError::Stress);
    }
    // Sizes a suite may now write (`stress:`): bounded before any product is formed, so
    // buffer sizes and thread counts cannot overflow and a launch stays finite.
    let bounded = [
        (
            "max_workgroups",
            u64::from(p.max_workgroups),
            u64::from(MAX_WORKGROUPS),
        ),
        (
            "max_workgroups x workgroup_size",
            u64::from(p.max_workgroups) * u64::from(p.workgroup_size),
            u64::from(MAX_THREADS),
        ),
        (
            "stress_line_size x stress_target_lines",
            u64::from(p.stress_line_size) * u64::from(p.stress_target_lines),
            MAX_SCRATCH_WORDS,
        ),
        (
            "stress_iterations",
            u64::from(p.stress_iterations),
            MAX_STRESS_ITERATIONS,
        ),
        (
            "pre_stress_iterations",
            u64::from(p.pre_stress_iterations),
            MAX_STRESS_ITERATIONS,
        ),
        ("shuffle_pct", u64::from(p.shuffle_pct), 100),
        ("mem_stride", u64::from(p.mem_stride), MAX_MEM_STRIDE),
    ];
    if let Some(&(what, value, max)) = bounded.iter().find(|(_, v, m)| v > m) {
        return Err(GeometryError::TooLarge { what, value, max });
    }
    Ok(())
}

/// The result words a launch writes per instance: each thread's registers (those it loads,
/// exchanges, moves or computes), and in the one-role-per-thread layout with control flow the
/// did-not-terminate flag.
fn result_slots(test: &LitmusTest, dedicated: bool) -> Vec<(usize, String)> {
    let mut slots: Vec<(usize, String)> = Vec::new();
    for (ti, t) in test.threads.iter().enumerate() {
        let mut add = |r: &String| {
            if !slots.iter().any(|(i, x)| *i == ti && x == r) {
                slots.push((ti, r.clone()));
            }
        };
        t.regs.keys().for_each(&mut add);
        for op in &t.ops {
            if let Op::Ld { reg, .. }
            | Op::Atom { reg, .. }
            | Op::Mov { reg, .. }
            | Op::ProxyLd { reg, .. } = op
            {
                add(reg);
            }
            // Register arithmetic writes registers too (only tests in the
            // one-role-per-thread layout have it among the catalogue's and corpus's).
            if let Op::Local { reg, .. } = op {
                add(reg);
            }
        }
    }
    if dedicated
        && test
            .threads
            .iter()
            .flat_map(|t| &t.ops)
            .any(|o| matches!(o, Op::Label { .. } | Op::Branch { .. } | Op::Goto { .. }))
    {
        slots.push((DID_NOT_TERMINATE.0, DID_NOT_TERMINATE.1.to_string()));
    }
    slots
}

impl Geometry {
    pub fn new(test: &LitmusTest, params: &StressParams) -> Result<Geometry, GeometryError> {
        let p = params;
        check_params(p)?;
        let (placement, mixed) = match placement_of(test) {
            Ok(pl) => (pl, false),
            Err(GeometryError::MixedCtas(_)) => (Placement::InterCta, true),
            Err(e) => return Err(e),
        };
        let roles = test.threads.len() as u32;
        let dedicated = if mixed || needs_dedicated(test) {
            Some(dedicated_of(test, p)?)
        } else {
            None
        };
        let cluster = cluster_size(placement, roles);
        if cluster > 1 {
            if dedicated.is_some() {
                return Err(GeometryError::Clusters(
                    test.name.clone(),
                    "a cluster test with control flow or barriers is not placed by the GPU runner",
                ));
            }
            // Both powers of two: fewer testing CTAs than one cluster holds.
            if !p.testing_workgroups.is_multiple_of(cluster) {
                return Err(GeometryError::TooFewUnits {
                    test: test.name.clone(),
                    roles: cluster,
                    units: p.testing_workgroups,
                    unit: "testing CTAs for one cluster",
                });
            }
        }
        let units = units_of(placement, p, cluster);
        if cluster > MAX_PORTABLE_CLUSTER || (dedicated.is_none() && roles > units) {
            return Err(GeometryError::TooFewUnits {
                test: test.name.clone(),
                roles,
                units,
                unit: match placement {
                    Placement::IntraCta => "warps per CTA",
                    Placement::InterCta => "testing CTAs",
                    Placement::IntraCluster => "CTAs per cluster (at most 8)",
                    Placement::InterCluster => "testing clusters",
                },
            });
        }
        for l in &test.locations {
            if l.space == Space::Shared {
                return Err(GeometryError::SharedLocation {
                    test: test.name.clone(),
                    location: l.name.clone(),
                });
            }
        }
        let locations = test.all_locations();
        let inits = locations.iter().map(|l| test.init_of(l)).collect();
        let slots = result_slots(test, dedicated.is_some());
        // The one-role-per-thread layout keeps its locations in global memory.
        // Generic aliases and surfaces are views of the location buffer in global memory
        // ([`super::binding`]).
        let bound = super::binding::bindings(test, &locations).ok();
        let views = bound.as_ref().is_some_and(|b| b.any());
        let (physical, surface_backed) = match &bound {
            Some(b) => (
                (0..locations.len())
                    .map(|j| {
                        locations
                            .iter()
                            .position(|l| l == test.physical(&locations[j]))
                            .unwrap_or(j)
                    })
                    .collect(),
                b.surface_backed(),
            ),
            None => ((0..locations.len()).collect(), Vec::new()),
        };
        let shared = dedicated.is_none()
            && !views
            && match placement {
                Placement::IntraCta => p.intra_cta_shared,
                Placement::IntraCluster => p.cluster_shared,
                Placement::InterCta | Placement::InterCluster => false,
            };
        if shared {
            let bytes = u64::from(p.workgroup_size)
                * locations.len().max(1) as u64
                * u64::from(p.mem_stride)
                * 4;
            if bytes > MAX_STATIC_SHARED {
                return Err(GeometryError::SharedTooLarge { bytes });
            }
        }
        // Clusters tile the grid: the stressing CTAs beyond the last whole cluster are dropped.
        let mut params = params.clone();
        params.max_workgroups -= params.max_workgroups % cluster;
        Ok(Geometry {
            params,
            placement,
            roles,
            locations,
            inits,
            slots,
            shared,
            dedicated,
            cluster,
            physical,
            surface_backed,
        })
    }

    /// Test instances per launch: one per testing thread; in the one-role-per-thread layout,
    /// 32 per warp group.
    pub fn instances(&self) -> u32 {
        match &self.dedicated {
            None => self.params.testing_workgroups * self.params.workgroup_size,
            Some(d) => (self.params.testing_workgroups / d.ctas) * d.groups * WARP,
        }
    }

    pub(crate) fn total_threads(&self) -> u32 {
        self.params.max_workgroups * self.params.workgroup_size
    }

    /// Words of one CTA's block of locations (its shared memory when [`Geometry::shared`]).
    pub(crate) fn cta_location_words(&self) -> u32 {
        self.params.workgroup_size * self.locations.len().max(1) as u32 * self.params.mem_stride
    }

    /// Words of the test-location buffer.
    pub(crate) fn location_words(&self) -> usize {
        self.instances() as usize * self.locations.len().max(1) * self.params.mem_stride as usize
    }

    pub(crate) fn slot_of(&self, thread: usize, reg: &str) -> Option<usize> {
        self.slots
            .iter()
            .position(|(t, r)| *t == thread && r == reg)
    }

    pub(crate) fn location_index(&self, name: &str) -> Option<usize> {
        self.locations.iter().position(|l| l == name)
    }

    /// The test-location buffer's initial image.
    pub(crate) fn initial_memory(&self, addrs: &[u32]) -> Vec<u32> {
        let mut mem = vec![0u32; self.location_words()];
        let nl = self.locations.len();
        for inst in 0..self.instances() as usize {
            for (j, init) in self.inits.iter().enumerate() {
                mem[addrs[inst * nl + j] as usize] = *init as u32;
            }
        }
        mem
    }
}

/// The one-role-per-thread placement of `test` under `p` ([`Dedicated`]).
fn dedicated_of(test: &LitmusTest, p: &StressParams) -> Result<Dedicated, GeometryError> {
    let ctas: Vec<u32> = test
        .threads
        .iter()
        .map(|t| t.cta)
        .collect::<std::collections::BTreeSet<u32>>()
        .into_iter()
        .collect();
    let mut role_cta = Vec::new();
    let mut role_warp = Vec::new();
    let mut per_cta = vec![0u32; ctas.len()];
    for t in &test.threads {
        let c = ctas.iter().position(|&c| c == t.cta).unwrap_or(0);
        role_cta.push(c as u32);
        role_warp.push(per_cta[c]);
        per_cta[c] += 1;
    }
    let warps = per_cta.iter().copied().max().unwrap_or(1).max(1);
    let mut barrier_ids: Vec<i64> = Vec::new();
    for t in &test.threads {
        for o in &t.ops {
            if let Some(id) = barrier_id(t, o) {
                if !barrier_ids.contains(&id) {
                    barrier_ids.push(id);
                }
            }
        }
    }
    barrier_ids.sort_unstable();
    let per_cta_warps = p.workgroup_size / WARP;
    let mut groups = per_cta_warps / warps;
    if !barrier_ids.is_empty() {
        groups = groups.min((HW_BARRIERS - 1) / barrier_ids.len() as u32);
    }
    let name = || test.name.clone();
    if groups == 0 {
        return Err(GeometryError::TooFewUnits {
            test: name(),
            roles: warps,
            units: per_cta_warps,
            unit: "warps per CTA (one warp per thread of a test CTA)",
        });
    }
    if (ctas.len() as u32) > p.testing_workgroups {
        return Err(GeometryError::TooFewUnits {
            test: name(),
            roles: ctas.len() as u32,
            units: p.testing_workgroups,
            unit: "testing CTAs for its CTAs",
        });
    }
    Ok(Dedicated {
        role_cta,
        role_warp,
        ctas: ctas.len() as u32,
        warps,
        groups,
        barrier_ids,
    })
}

/// Units an instance's roles are spread over: testing CTAs (`inter_cta`), warps of a CTA
/// (`intra_cta`), CTAs of a cluster (`intra_cluster`), testing clusters (`inter_cluster`).
fn units_of(placement: Placement, p: &StressParams, cluster: u32) -> u32 {
    match placement {
        Placement::IntraCta => p.workgroup_size / WARP,
        Placement::InterCta => p.testing_workgroups,
        Placement::IntraCluster => cluster,
        Placement::InterCluster => p.testing_workgroups / cluster,
    }
}

/// The placement of the test's threads: all in one CTA, or each in its own; with clusters
/// named (`cluster:` on some thread), each in its own CTA, all in one cluster or each in its
/// own.
pub(crate) fn placement_of(test: &LitmusTest) -> Result<Placement, GeometryError> {
    let t = &test.threads;
    if t.iter().any(|th| th.gpu != 0) {
        return Err(GeometryError::SeveralGpus(test.name.clone()));
    }
    if t.iter().any(|th| th.cluster.is_some()) {
        let ctas: std::collections::BTreeSet<u32> = t.iter().map(|th| th.cta).collect();
        let clusters: std::collections::BTreeSet<u32> =
            t.iter().map(|th| th.effective_cluster()).collect();
        return if ctas.len() != t.len() {
            Err(GeometryError::Clusters(
                test.name.clone(),
                "threads of a cluster test must each have their own CTA",
            ))
        } else if clusters.len() == 1 && t.len() > 1 {
            Ok(Placement::IntraCluster)
        } else if clusters.len() == t.len() {
            Ok(Placement::InterCluster)
        } else {
            Err(GeometryError::Clusters(
                test.name.clone(),
                "threads must all share one cluster or each have their own",
            ))
        };
    }
    let ctas: std::collections::BTreeSet<u32> = t.iter().map(|th| th.cta).collect();
    if ctas.len() == 1 && t.len() > 1 {
        let warps: std::collections::BTreeSet<Option<u32>> = t.iter().map(|th| th.warp).collect();
        if warps.len() != t.len() && warps.iter().any(Option::is_some) {
            return Err(GeometryError::SharedWarp(test.name.clone()));
        }
        Ok(Placement::IntraCta)
    } else if ctas.len() == t.len() {
        Ok(Placement::InterCta)
    } else {
        Err(GeometryError::MixedCtas(test.name.clone()))
    }
}

/// One launch's shuffle: which logical CTA each hardware block plays, and the offsets that
/// spread an instance's roles across CTAs or warps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IterationPlan {
    /// Logical CTA of each hardware block (a permutation of 0..max_workgroups); logical CTAs
    /// below `testing_workgroups` test, the rest stress.
    pub cta_of_block: Vec<u32>,
    /// Distance, in CTAs (inter) or warps (intra), between consecutive roles of an instance.
    pub unit_offset: u32,
    /// Odd multiplier permuting local ids (lanes for intra, threads for inter).
    pub local_mult: u32,
    /// Added per role to the permuted local id.
    pub local_shift: u32,
    /// Odd multiplier permuting instances between one location and the next.
    pub loc_mult: u32,
    /// Stress word of each hardware block (index into the scratch buffer).
    pub stress_word: Vec<u32>,
}

impl IterationPlan {
    /// No shuffling: block b is CTA b, roles in adjacent units, identity permutations.
    pub(crate) fn identity(g: &Geometry) -> IterationPlan {
        IterationPlan {
            cta_of_block: (0..g.params.max_workgroups).collect(),
            unit_offset: 1,
            local_mult: 1,
            local_shift: 0,
            loc_mult: 1,
            stress_word: (0..g.params.max_workgroups)
                .map(|b| (b % g.params.stress_target_lines) * g.params.stress_line_size)
                .collect(),
        }
    }

    /// A shuffled plan with probability `shuffle_pct`, else the identity (stress targets are
    /// always random).
    pub fn random(g: &Geometry, rng: &mut impl Rng) -> IterationPlan {
        let mut plan = IterationPlan::identity(g);
        let p = &g.params;
        plan.stress_word = (0..p.max_workgroups)
            .map(|_| rng.random_range(0..p.stress_target_lines) * p.stress_line_size)
            .collect();
        if rng.random_range(0..100) >= p.shuffle_pct {
            return plan;
        }
        // Whole clusters move, each CTA keeping its rank (a launch's clusters tile the grid;
        // without clusters, each CTA is its own).
        let c = g.cluster;
        let mut order: Vec<u32> = (0..p.max_workgroups / c).collect();
        for i in (1..order.len()).rev() {
            let j = rng.random_range(0..=i);
            order.swap(i, j);
        }
        plan.cta_of_block = (0..p.max_workgroups)
            .map(|b| order[(b / c) as usize] * c + b % c)
            .collect();
        let units = units_of(g.placement, p, c);
        // Roles r and s sit (r - s) * offset units apart; that is never a multiple of `units`
        // when (roles - 1) * offset < units.
        let max_off = if g.roles > 1 {
            (units - 1) / (g.roles - 1)
        } else {
            1
        };
        plan.unit_offset = rng.random_range(1..=max_off.max(1));
        let local_n = match g.placement {
            Placement::InterCta | Placement::IntraCluster | Placement::InterCluster => {
                p.workgroup_size
            }
            Placement::IntraCta => WARP,
        };
        plan.local_mult = rng.random_range(0..local_n / 2) * 2 + 1;
        plan.local_shift = rng.random_range(0..local_n);
        plan.loc_mult = rng.random_range(0..g.instances() / 2) * 2 + 1;
        plan
    }
}

/// The tables one launch reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tables {
    /// `roles[thread * R + r]`: the instance global thread `thread` plays role r of, or
    /// [`NONE`] for a stress thread.
    pub roles: Vec<u32>,
    /// `addrs[inst * L + j]`: word index of instance `inst`'s location j.
    pub addrs: Vec<u32>,
    /// Stress word of each hardware block.
    pub stress_word: Vec<u32>,
    /// Threads that run test roles (the spin barrier's count).
    pub testing_threads: u32,
}

pub(crate) fn tables(g: &Geometry, plan: &IterationPlan) -> Tables {
    let p = &g.params;
    let (w, tw) = (p.workgroup_size, p.testing_workgroups);
    let r_n = g.roles as usize;
    let mut roles = vec![NONE; g.total_threads() as usize * r_n];
    let mut testing = 0;
    if let Some(d) = &g.dedicated {
        // Logical CTA L < H * C plays test CTA L / H of CTA group L % H; warp k of warp group
        // gw plays the role placed in (test CTA, warp k); lanes permuted per test CTA.
        let h_n = tw / d.ctas;
        for b in 0..p.max_workgroups {
            let cta = plan.cta_of_block[b as usize];
            if cta >= h_n * d.ctas {
                continue;
            }
            let (h, c) = (cta % h_n, cta / h_n);
            for l in 0..w {
                let (warp, lane) = (l / WARP, l % WARP);
                let (gw, k) = (warp / d.warps, warp % d.warps);
                if gw >= d.groups {
                    continue;
                }
                let Some(r) = (0..r_n).find(|&r| d.role_cta[r] == c && d.role_warp[r] == k) else {
                    continue;
                };
                let lane = (lane.wrapping_mul(plan.local_mult) + c * plan.local_shift) % WARP;
                roles[(b * w + l) as usize * r_n + r] = (h * d.groups + gw) * WARP + lane;
                testing += 1;
            }
        }
    } else {
        for b in 0..p.max_workgroups {
            let cta = plan.cta_of_block[b as usize];
            if cta >= tw {
                continue;
            }
            for l in 0..w {
                let thread = (b * w + l) as usize;
                testing += 1;
                for r in 0..g.roles {
                    let inst = match g.placement {
                        Placement::InterCta | Placement::IntraCluster | Placement::InterCluster => {
                            let c = role_cta(g, cta, r, plan.unit_offset);
                            let local =
                                (l.wrapping_mul(plan.local_mult) + r * plan.local_shift) % w;
                            c * w + local
                        }
                        Placement::IntraCta => {
                            let nw = w / WARP;
                            let warp = (l / WARP + r * plan.unit_offset) % nw;
                            let lane = ((l % WARP).wrapping_mul(plan.local_mult)
                                + r * plan.local_shift)
                                % WARP;
                            cta * w + warp * WARP + lane
                        }
                    };
                    roles[thread * r_n + r as usize] = inst;
                }
            }
        }
    }
    let nl = g.locations.len() as u32;
    let n = g.instances();
    let stride = p.mem_stride;
    let mut addrs = Vec::with_capacity((n * nl) as usize);
    for inst in 0..n {
        for j in 0..nl {
            // Location 0 of instance i sits in block i; the others in a permuted block, so
            // neighbouring words belong to different instances (GPUHarbor's interleaving).
            let mult = plan
                .loc_mult
                .wrapping_mul(j)
                .wrapping_mul(2)
                .wrapping_sub(1);
            let block = if j == 0 {
                inst
            } else if g.shared {
                // Within the instance's own CTA: that CTA's shared memory holds its block.
                (inst / w) * w + inst.wrapping_mul(mult) % w
            } else {
                inst.wrapping_mul(mult) % n
            };
            addrs.push(block * nl * stride + j * stride);
        }
    }
    Tables {
        roles,
        addrs,
        stress_word: plan.stress_word.clone(),
        testing_threads: testing,
    }
}

/// The logical CTA that plays role `r` of the instances of logical CTA `cta` (whose role 0 it
/// plays), roles `offset` units apart: across CTAs, `offset` CTAs on; within a cluster, the
/// CTA `offset` ranks on in the same cluster; across clusters, the CTA of the same rank
/// `offset` clusters on.
fn role_cta(g: &Geometry, cta: u32, r: u32, offset: u32) -> u32 {
    let (tw, c) = (g.params.testing_workgroups, g.cluster);
    match g.placement {
        Placement::IntraCluster => cta - cta % c + (cta % c + r * offset) % c,
        Placement::InterCluster => ((cta / c + r * offset) % (tw / c)) * c + cta % c,
        Placement::IntraCta | Placement::InterCta => (cta + r * offset) % tw,
    }
}

/// Outcome → how many instances produced it. An outcome is the condition's terms' values.
pub type Histogram = BTreeMap<Vec<i64>, u64>;

/// Instances counted apart from the outcome histogram, by what their "did not terminate"
/// slot ([`DID_NOT_TERMINATE`]) says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Apart {
    /// One of its threads stopped at [`super::kernel::LOOP_CAP`] backward jumps.
    pub did_not_terminate: u64,
    /// One of its threads ran a loop iteration with effects past the model's loop bound
    /// ([`PAST_MODEL_BOUND`]): an execution the verdict did not enumerate.
    pub past_model_bound: u64,
}

impl std::ops::AddAssign for Apart {
    fn add_assign(&mut self, o: Apart) {
        self.did_not_terminate += o.did_not_terminate;
        self.past_model_bound += o.past_model_bound;
    }
}

impl Apart {
    /// One instance whose "did not terminate" slot holds `word` (nonzero).
    pub(crate) fn of_slot(word: u32) -> Apart {
        if word == PAST_MODEL_BOUND {
            Apart {
                past_model_bound: 1,
                ..Apart::default()
            }
        } else {
            Apart {
                did_not_terminate: 1,
                ..Apart::default()
            }
        }
    }
}

/// Each instance's outcome: registers from the results buffer (`results[inst * S + slot]`),
/// final memory values from the location buffer at the instance's addresses. An instance
/// whose [`DID_NOT_TERMINATE`] slot is set (a thread stopped at the loop cap, or ran past the
/// model's loop bound) has no outcome: it is counted apart, and the counts are returned.
pub(crate) fn decode(
    g: &Geometry,
    terms: &[Term],
    tables: &Tables,
    results: &[u32],
    memory: &[u32],
    into: &mut Histogram,
) -> Result<Apart, DecodeError> {
    let dnt = g.slot_of(DID_NOT_TERMINATE.0, DID_NOT_TERMINATE.1);
    let mut apart = Apart::default();
    enum Src {
        Slot(usize),
        Loc(usize),
    }
    let srcs: Vec<Src> = terms
        .iter()
        .map(|t| match t {
            Term::Reg { thread, reg } => g
                .slot_of(*thread, reg)
                .map(Src::Slot)
                .ok_or_else(|| DecodeError::UnwrittenRegister(t.to_string())),
            Term::Loc(l) => g
                .location_index(l)
                .map(Src::Loc)
                .ok_or_else(|| DecodeError::UnknownLocation(l.clone())),
        })
        .collect::<Result<_, _>>()?;
    let (s_n, l_n) = (g.slots.len(), g.locations.len());
    let n = g.instances() as usize;
    if results.len() < n * s_n || tables.addrs.len() < n * l_n {
        return Err(DecodeError::ShortBuffers {
            results: results.len(),
            addresses: tables.addrs.len(),
            instances: n,
        });
    }
    for inst in 0..n {
        if let Some(word) = dnt.map(|k| results[inst * s_n + k]).filter(|&w| w != 0) {
            apart += Apart::of_slot(word);
            continue;
        }
        let mut outcome = Vec::with_capacity(srcs.len());
        for s in &srcs {
            let word = match s {
                Src::Slot(k) => results[inst * s_n + k],
                Src::Loc(j) => {
                    let j = g.physical.get(*j).copied().unwrap_or(*j);
                    let a = tables.addrs[inst * l_n + j] as usize;
                    *memory.get(a).ok_or(DecodeError::BeyondBuffer(a))?
                }
            };
            // Values are 32-bit two's complement on the device.
            outcome.push(i64::from(word as i32));
        }
        *into.entry(outcome).or_default() += 1;
    }
    Ok(apart)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::catalog;
    use rand::SeedableRng;

    fn small() -> StressParams {
        StressParams {
            testing_workgroups: 8,
            workgroup_size: 128,
            max_workgroups: 12,
            ..StressParams::default()
        }
    }

    // Checked by brute force over the table, not by re-deriving the formulas: each instance
    // gets each role exactly once, from a testing CTA, and the placement holds.
    fn check_tables(g: &Geometry, t: &Tables, plan: &IterationPlan) {
        let (w, r_n) = (g.params.workgroup_size, g.roles as usize);
        let n = g.instances() as usize;
        let mut seen: Vec<Vec<Option<(u32, u32)>>> = vec![vec![None; r_n]; n];
        let mut testing = 0;
        for thread in 0..g.total_threads() {
            let row = &t.roles[thread as usize * r_n..][..r_n];
            let (b, l) = (thread / w, thread % w);
            if row.iter().all(|&i| i == NONE) {
                assert!(plan.cta_of_block[b as usize] >= g.params.testing_workgroups);
                continue;
            }
            testing += 1;
            for (r, &inst) in row.iter().enumerate() {
                assert!((inst as usize) < n);
                let slot = &mut seen[inst as usize][r];
                assert!(slot.is_none(), "instance {inst} role {r} twice");
                *slot = Some((b, l));
            }
        }
        assert_eq!(testing, t.testing_threads);
        for (inst, roles) in seen.iter().enumerate() {
            let at: Vec<(u32, u32)> = roles.iter().map(|x| x.expect("role missing")).collect();
            for a in 0..r_n {
                for b in a + 1..r_n {
                    match g.placement {
                        Placement::InterCta => {
                            assert_ne!(at[a].0, at[b].0, "instance {inst}: roles share a CTA")
                        }
                        Placement::IntraCta => {
                            assert_eq!(at[a].0, at[b].0, "instance {inst}: roles in two CTAs");
                            assert_ne!(at[a].1 / WARP, at[b].1 / WARP, "roles share a warp");
                        }
                        // A launch's clusters tile the grid: block b is in cluster b / size.
                        Placement::IntraCluster => {
                            assert_ne!(at[a].0, at[b].0, "instance {inst}: roles share a CTA");
                            assert_eq!(at[a].0 / g.cluster, at[b].0 / g.cluster, "two clusters");
                        }
                        Placement::InterCluster => {
                            assert_ne!(at[a].0 / g.cluster, at[b].0 / g.cluster, "one cluster");
                        }
                    }
                }
            }
        }
        // Every location word belongs to exactly one (instance, location).
        let mut words = std::collections::BTreeSet::new();
        for &a in &t.addrs {
            assert!((a as usize) < g.location_words());
            assert!(words.insert(a), "word {a} shared");
        }
    }

    #[test]
    fn every_instance_gets_every_role_once_with_its_placement() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for name in [
            "MP.rel_acq.gpu.inter_cta",
            "MP.rel_acq.cta.intra_cta",
            "IRIW.sc.gpu.inter_cta",
            "IRIW.relaxed.cta.intra_cta",
            "RelSeq.rel_acq.gpu.intra_cta",
            "CoRR.relaxed.sys.inter_cta",
            "MP.rel_acq.cluster.intra_cluster",
            "IRIW.sc.cluster.intra_cluster",
            "RelSeq.rel_acq.cluster.inter_cluster",
            "IRIW.relaxed.cluster.inter_cluster",
        ] {
            let test = catalog::by_name(name).unwrap();
            for stride in [1, 3] {
                let params = StressParams {
                    mem_stride: stride,
                    ..small()
                };
                let g = Geometry::new(&test, &params).unwrap();
                let id = IterationPlan::identity(&g);
                check_tables(&g, &tables(&g, &id), &id);
                for _ in 0..20 {
                    let plan = IterationPlan::random(&g, &mut rng);
                    check_tables(&g, &tables(&g, &plan), &plan);
                }
            }
        }
    }

    /// The one-role-per-thread layout, checked by brute force over the table: each thread
    /// plays at most one role; each instance gets each role exactly once; roles of one test
    /// CTA share a hardware CTA and sit in different warps; roles of different test CTAs sit
    /// in different hardware CTAs; every instance's location words are its own.
    #[test]
    fn one_role_per_thread_follows_the_scope_tree() {
        let test = crate::atomics::litmus::from_yaml(
            "name: mixed\nthreads:\n\
             - cta: 0\n  ops: [{st: {loc: x, val: 1}}]\n\
             - cta: 0\n  ops: [{ld: {reg: r0, loc: x}}]\n\
             - cta: 5\n  ops: [{ld: {reg: r1, loc: y}}]\n\
             condition: 'exists (P1:r0 == 0)'\n",
        )
        .unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for (tw, w, max) in [(2, 64, 2), (4, 128, 6), (8, 256, 12)] {
            let params = StressParams {
                testing_workgroups: tw,
                workgroup_size: w,
                max_workgroups: max,
                ..small()
            };
            let g = Geometry::new(&test, &params).unwrap();
            let d = g
                .dedicated
                .clone()
                .expect("mixed CTAs take one role per thread");
            assert_eq!((d.ctas, d.warps), (2, 2));
            for _ in 0..10 {
                let plan = IterationPlan::random(&g, &mut rng);
                let t = tables(&g, &plan);
                let n = g.instances() as usize;
                let mut at: Vec<Vec<Option<(u32, u32)>>> = vec![vec![None; 3]; n];
                let mut testing = 0;
                for thread in 0..g.total_threads() {
                    let row = &t.roles[thread as usize * 3..][..3];
                    let played: Vec<usize> = (0..3).filter(|&r| row[r] != NONE).collect();
                    assert!(played.len() <= 1, "thread {thread} plays {played:?}");
                    for r in played {
                        testing += 1;
                        let slot = &mut at[row[r] as usize][r];
                        assert!(slot.is_none(), "instance {} role {r} twice", row[r]);
                        *slot = Some((thread / w, (thread % w) / WARP));
                    }
                }
                assert_eq!(testing, t.testing_threads);
                for (inst, roles) in at.iter().enumerate() {
                    let p: Vec<(u32, u32)> =
                        roles.iter().map(|x| x.expect("role missing")).collect();
                    assert_eq!(p[0].0, p[1].0, "instance {inst}: P0, P1 share test CTA 0");
                    assert_ne!(p[0].1, p[1].1, "instance {inst}: P0, P1 in one warp");
                    assert_ne!(p[0].0, p[2].0, "instance {inst}: P2 is in another CTA");
                }
                let mut words = std::collections::BTreeSet::new();
                for &a in &t.addrs {
                    assert!((a as usize) < g.location_words());
                    assert!(words.insert(a), "word {a} shared");
                }
            }
        }
    }

    #[test]
    fn shuffling_changes_assignment_only_when_asked() {
        let test = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let off = Geometry::new(
            &test,
            &StressParams {
                shuffle_pct: 0,
                ..small()
            },
        )
        .unwrap();
        let p = IterationPlan::random(&off, &mut rng);
        assert_eq!(p.cta_of_block, IterationPlan::identity(&off).cta_of_block);
        let on = Geometry::new(&test, &small()).unwrap();
        let shuffled = (0..10).any(|_| {
            IterationPlan::random(&on, &mut rng).cta_of_block
                != IterationPlan::identity(&on).cta_of_block
        });
        assert!(shuffled);
    }

    #[test]
    fn bad_parameters_and_placements_are_refused() {
        let mp = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
        let bad = StressParams {
            workgroup_size: 100,
            ..small()
        };
        assert!(Geometry::new(&mp, &bad).is_err());
        // IRIW's four threads across CTAs need four testing CTAs.
        let iriw = catalog::by_name("IRIW.relaxed.gpu.inter_cta").unwrap();
        let few = StressParams {
            testing_workgroups: 2,
            max_workgroups: 2,
            ..small()
        };
        let e = Geometry::new(&iriw, &few).unwrap_err();
        assert!(
            matches!(
                e,
                GeometryError::TooFewUnits {
                    roles: 4,
                    units: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("4 threads"));
        let mut mixed = catalog::by_name("IRIW.relaxed.gpu.inter_cta").unwrap();
        mixed.threads[1].cta = 0;
        assert!(matches!(
            placement_of(&mixed),
            Err(GeometryError::MixedCtas(_))
        ));
    }

    // Synthetic buffers: instance i's registers and memory set by hand, decoded back.
    #[test]
    fn decode_reads_registers_and_final_memory() {
        let test = catalog::by_name("2+2W.relaxed.gpu.inter_cta").unwrap();
        let g = Geometry::new(&test, &small()).unwrap();
        let plan = IterationPlan::identity(&g);
        let t = tables(&g, &plan);
        let terms = vec![Term::Loc("x".into()), Term::Loc("y".into())];
        let n = g.instances() as usize;
        let mut mem = vec![0u32; g.location_words()];
        let (x, y) = (
            g.location_index("x").unwrap(),
            g.location_index("y").unwrap(),
        );
        for inst in 0..n {
            let weak = inst % 10 == 0;
            mem[t.addrs[inst * 2 + x] as usize] = if weak { 1 } else { 2 };
            mem[t.addrs[inst * 2 + y] as usize] = if weak { 1 } else { 2 };
        }
        let mut h = Histogram::new();
        decode(&g, &terms, &t, &[], &mem, &mut h).unwrap();
        let weak = n.div_ceil(10) as u64;
        assert_eq!(h.get(&vec![1, 1]), Some(&weak));
        assert_eq!(h.get(&vec![2, 2]), Some(&(n as u64 - weak)));

        let mp = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
        let g = Geometry::new(&mp, &small()).unwrap();
        let t = tables(&g, &IterationPlan::identity(&g));
        let (r0, r1) = (g.slot_of(1, "r0").unwrap(), g.slot_of(1, "r1").unwrap());
        let mut res = vec![0u32; n * g.slots.len()];
        res[3 * g.slots.len() + r0] = 1;
        res[5 * g.slots.len() + r0] = u32::MAX; // -1 as the device's 32-bit word
        let terms = vec![
            Term::Reg {
                thread: 1,
                reg: "r0".into(),
            },
            Term::Reg {
                thread: 1,
                reg: "r1".into(),
            },
        ];
        let mut h = Histogram::new();
        decode(&g, &terms, &t, &res, &vec![0; g.location_words()], &mut h).unwrap();
        let _ = r1;
        assert_eq!(h[&vec![1, 0]], 1);
        assert_eq!(h[&vec![-1, 0]], 1);
        assert_eq!(h[&vec![0, 0]], n as u64 - 2);
        let unknown = vec![Term::Reg {
            thread: 0,
            reg: "r9".into(),
        }];
        assert!(decode(&g, &unknown, &t, &res, &[], &mut h).is_err());
    }

    /// In shared memory every location of an instance lies in its own CTA's block (the block
    /// the kernel copies into that CTA's shared memory), each word used once; a block too
    /// large for static shared memory is refused.
    #[test]
    fn shared_locations_stay_in_their_cta() {
        let params = StressParams {
            intra_cta_shared: true,
            mem_stride: 3,
            ..small()
        };
        let t = catalog::by_name("IRIW.relaxed.gpu.intra_cta").unwrap();
        let g = Geometry::new(&t, &params).unwrap();
        assert!(g.shared);
        let (w, nl) = (g.params.workgroup_size, g.locations.len() as u32);
        let block = w * nl * g.params.mem_stride;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for _ in 0..8 {
            let plan = IterationPlan::random(&g, &mut rng);
            let tables = tables(&g, &plan);
            let mut seen = std::collections::HashSet::new();
            for inst in 0..g.instances() {
                for j in 0..nl {
                    let a = tables.addrs[(inst * nl + j) as usize];
                    assert_eq!(a / block, inst / w, "instance {inst} location {j} at {a}");
                    assert!(seen.insert(a), "word {a} twice");
                }
            }
        }
        let too_big = StressParams {
            workgroup_size: 1024,
            mem_stride: 8,
            ..params
        };
        assert_eq!(
            Geometry::new(&t, &too_big).unwrap_err(),
            GeometryError::SharedTooLarge {
                bytes: 1024 * u64::from(nl) * 8 * 4
            }
        );
        // Across CTAs the flag changes nothing.
        let inter = catalog::by_name("IRIW.relaxed.gpu.inter_cta").unwrap();
        assert!(!Geometry::new(&inter, &params).unwrap().shared);
    }

    /// What a suite's `stress:` can ask for is bounded before any size is computed: values
    /// whose products would overflow a u32 are refused, not wrapped.
    #[test]
    fn stress_sizes_are_bounded() {
        let t = catalog::by_name("MP.relaxed.gpu.inter_cta").unwrap();
        let cases = [
            (
                StressParams {
                    max_workgroups: u32::MAX,
                    ..StressParams::default()
                },
                "max_workgroups",
            ),
            (
                StressParams {
                    stress_line_size: u32::MAX,
                    stress_target_lines: u32::MAX,
                    ..StressParams::default()
                },
                "stress_line_size x stress_target_lines",
            ),
            (
                StressParams {
                    stress_iterations: u32::MAX,
                    ..StressParams::default()
                },
                "stress_iterations",
            ),
            (
                StressParams {
                    shuffle_pct: 101,
                    ..StressParams::default()
                },
                "shuffle_pct",
            ),
        ];
        for (p, what) in cases {
            match Geometry::new(&t, &p) {
                Err(GeometryError::TooLarge { what: w, .. }) => assert_eq!(w, what),
                other => panic!("{what}: {other:?}"),
            }
        }
        let many = StressParams {
            max_workgroups: 65_536,
            workgroup_size: 1024,
            ..StressParams::default()
        };
        assert!(matches!(
            Geometry::new(&t, &many),
            Err(GeometryError::TooLarge {
                what: "max_workgroups x workgroup_size",
                ..
            })
        ));
    }
}
