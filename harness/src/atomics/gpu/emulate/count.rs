//! Emulated launches of the counting kernel ([`kernel::generate_counting`]): the exact PTX the
//! GPU worker launches, with its `p_counts` buffer, read back as the GPU path reads it (the
//! counters, then the overflow log). Each launch also decodes the same run's result and
//! location buffers on the host ([`layout::decode`]) so that the two can be compared.

use super::*;
use crate::atomics::gpu::count::OutcomeSpace;

/// Where the counts buffer starts in the emulator's address space (the other buffers:
/// [`BASES`]).
pub(crate) const COUNTS_BASE: u64 = 8 << 40;

/// A machine for one launch of `prog` with `threads` threads in CTAs of `ntid`, its parameters
/// named and its buffers loaded.
pub(crate) fn machine<'a>(
    prog: &'a Program,
    ntid: u32,
    params: &[(String, u64)],
    buffers: &[(u64, &[u32])],
) -> Machine<'a> {
    let mut m = Machine {
        prog,
        mem: HashMap::new(),
        params: params.iter().cloned().collect(),
        ntid: u64::from(ntid),
        // A batch of cluster tests sets its cluster size.
        cluster: 1,
        barrier: HashMap::new(),
        proxy: proxy::AsyncState::new(prog),
    };
    for (base, words) in buffers {
        load(&mut m.mem, *base, words);
    }
    m
}

/// Run every thread of `m` to completion (`threads` in all, CTAs of `m.ntid`), interleaved at
/// random from `seed` (`None`: one after another in global-id order); the steps taken.
pub(crate) fn run_threads(
    m: &mut Machine<'_>,
    threads: u32,
    seed: Option<u64>,
) -> Result<u64, EmulateError> {
    let ntid = m.ntid;
    let mut threads: Vec<Thread> = (0..u64::from(threads))
        .map(|i| Thread {
            pc: 0,
            regs: HashMap::new(),
            done: false,
            waiting: None,
            tid: i % ntid,
            ctaid: i / ntid,
            arrived: None,
        })
        .collect();
    super::schedule(m, &mut threads, seed)
}

/// What one emulated launch of a counting kernel gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountedLaunch {
    /// From the device's counters and overflow log.
    pub device: Histogram,
    /// Instances the device counted apart (did not terminate, past the model's bound).
    pub device_apart: layout::Apart,
    /// From the same run's result and location buffers, decoded on the host.
    pub host: Histogram,
    pub host_apart: layout::Apart,
    /// Entries of the overflow log (outcomes outside the space's domain).
    pub overflow: u64,
    pub timeouts: u32,
    pub steps: u64,
}

/// Kernel parameters (name, value) and buffers (base, words) in the emulator's space.
pub(crate) type Setup = (Vec<(String, u64)>, Vec<(u64, Vec<u32>)>);

/// The kernel parameters and the buffers of one litmus launch in the emulator's space.
pub(crate) fn litmus_buffers(t: &layout::Tables, image: &[u32]) -> Setup {
    let mut params: Vec<(String, u64)> = BASES.iter().map(|(n, b)| (n.to_string(), *b)).collect();
    params.push(("p_testing".into(), u64::from(t.testing_threads)));
    params.push(("p_counts".into(), COUNTS_BASE));
    let buffers = vec![
        (BASES[0].1, image.to_vec()),
        (BASES[2].1, t.roles.clone()),
        (BASES[3].1, t.addrs.clone()),
        (BASES[6].1, t.stress_word.clone()),
    ];
    (params, buffers)
}

/// One emulated launch of `ptx` (a counting kernel for `g` and `space`) under `plan`.
pub fn launch_counting(
    ptx: &str,
    g: &Geometry,
    space: &OutcomeSpace,
    plan: &IterationPlan,
    seed: Option<u64>,
) -> Result<CountedLaunch, EmulateError> {
    let prog = parse(ptx)?;
    let t = layout::tables(g, plan);
    let (params, buffers) = litmus_buffers(&t, &g.initial_memory(&t.addrs));
    let bufs: Vec<(u64, &[u32])> = buffers.iter().map(|(b, w)| (*b, w.as_slice())).collect();
    let mut m = machine(&prog, g.params.workgroup_size, &params, &bufs);
    let steps = run_threads(&mut m, g.total_threads(), seed)?;
    let n = g.instances() as usize;
    let head = read(&m.mem, COUNTS_BASE, space.head_words());
    let over = head[space.overflow_word()] as usize;
    let log = read(
        &m.mem,
        COUNTS_BASE + 4 * space.log_word(n) as u64,
        over * space.terms.len(),
    );
    let mut device = Histogram::new();
    let device_apart = space
        .decode(&head, &log, &mut device)
        .map_err(|e| EmulateError::Unsupported(e.to_string()))?;
    let res = read(&m.mem, BASES[1].1, n * g.slots.len());
    let mem = read(&m.mem, BASES[0].1, g.location_words());
    let mut host = Histogram::new();
    let host_apart = layout::decode(g, &space.terms, &t, &res, &mem, &mut host)?;
    Ok(CountedLaunch {
        device,
        device_apart,
        host,
        host_apart,
        overflow: over as u64,
        timeouts: read(&m.mem, BASES[4].1, 2)[1],
        steps,
    })
}

/// [`emulate`] through the counting kernel: `launches` launches of `test`, the histogram from
/// the device's counters.
pub fn emulate_counting(
    test: &LitmusTest,
    params: &StressParams,
    launches: u64,
    seed: u64,
) -> Result<Emulated, EmulateError> {
    let g = Geometry::new(test, params)?;
    let space = OutcomeSpace::new(test, &model::check(test).terms);
    let ptx = kernel::generate_counting(test, &g, &space)?;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Emulated {
        histogram: Histogram::new(),
        launches,
        instances: 0,
        barrier_timeouts: 0,
        steps: 0,
        did_not_terminate: 0,
        past_model_bound: 0,
    };
    for _ in 0..launches {
        let plan = IterationPlan::random(&g, &mut rng);
        let run = launch_counting(&ptx, &g, &space, &plan, Some(rng.random()))?;
        for (o, n) in run.device {
            *out.histogram.entry(o).or_insert(0) += n;
        }
        out.instances += u64::from(g.instances());
        out.barrier_timeouts += u64::from(run.timeouts);
        out.steps += run.steps;
        out.did_not_terminate += run.device_apart.did_not_terminate;
        out.past_model_bound += run.device_apart.past_model_bound;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::catalog;

    fn small(shared: bool) -> StressParams {
        StressParams {
            testing_workgroups: 4,
            workgroup_size: 128,
            max_workgroups: 6,
            stress_iterations: 6,
            pre_stress_iterations: 2,
            stress_target_lines: 2,
            stress_line_size: 4,
            intra_cta_shared: shared,
            mem_stride: if shared { 2 } else { 1 },
            ..StressParams::default()
        }
    }

    /// One counting launch of `test`: the counters (with the log) sum to the instances, every
    /// outcome they give is one the model allows (the independent oracle), and they equal the
    /// host's decoding of the same run's buffers.
    fn check(test: &LitmusTest, params: &StressParams, seed: u64) -> CountedLaunch {
        let g = Geometry::new(test, params).unwrap();
        let verdict = model::check(test);
        let space = OutcomeSpace::new(test, &verdict.terms);
        let ptx = kernel::generate_counting(test, &g, &space).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let plan = IterationPlan::random(&g, &mut rng);
        let run = launch_counting(&ptx, &g, &space, &plan, Some(seed)).unwrap();
        let at = &test.name;
        assert_eq!(
            run.device.values().sum::<u64>()
                + run.device_apart.did_not_terminate
                + run.device_apart.past_model_bound,
            u64::from(g.instances()),
            "{at}"
        );
        for o in run.device.keys() {
            assert!(verdict.outcome_allowed(o), "{at}: {o:?} is forbidden");
        }
        assert_eq!(run.device, run.host, "{at}");
        assert_eq!(run.device_apart, run.host_apart, "{at}");
        run
    }

    // Every catalogue test, in global memory and (those within a CTA) in shared memory.
    #[test]
    fn device_counters_equal_the_host_decoding_of_the_same_run() {
        let (mut global, mut shared) = (0, 0);
        for (i, e) in catalog::entries().into_iter().enumerate() {
            // Cluster tests run alone with a cluster launch, never counted in a batch.
            if e.test.name.ends_with("_cluster") {
                continue;
            }
            check(&e.test, &small(false), i as u64);
            global += 1;
            if Geometry::new(&e.test, &small(true)).unwrap().shared {
                check(&e.test, &small(true), 1000 + i as u64);
                shared += 1;
            }
        }
        assert_eq!((global, shared), (312, 156));
    }

    // An outcome outside the domain reaches the overflow log with its values: `or`s of 3 and
    // 5 into an initial 40 end at 47, which no constant of the test names.
    #[test]
    fn values_outside_the_domain_are_logged_whole() {
        let test = crate::atomics::gpu::emulate::fixtures::two_ors();
        let params = StressParams {
            testing_workgroups: 2,
            workgroup_size: 32,
            max_workgroups: 2,
            ..small(false)
        };
        let run = check(&test, &params, 4);
        // 40 | 3 | 5 = 47 in any order (the model's only outcome).
        assert_eq!(run.device.keys().collect::<Vec<_>>(), vec![&vec![47]]);
        let space = OutcomeSpace::new(&test, &model::check(&test).terms);
        assert!(!space.domain.contains(&47), "{:?}", space.domain);
        let g = Geometry::new(&test, &params).unwrap();
        assert_eq!(run.overflow, u64::from(g.instances()));
    }

    /// A Dat3M-syntax test of two threads on CTAs 0 and 1 (`P0 | P1` columns).
    fn two_threads(name: &str, init: &str, rows: &[(&str, &str)], cond: &str) -> LitmusTest {
        let mut text = format!("PTX {name}\n{{\n{init}\n}}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n");
        for (a, b) in rows {
            text += &format!(" {a} | {b} ;\n");
        }
        text += cond;
        crate::atomics::litmus::dat3m::import(&text).unwrap()
    }

    use crate::atomics::gpu::emulate::fixtures::one_role_params as tiny;

    // The model unrolls loops once (Dat3M's bound): an execution whose thread runs a loop
    // iteration with effects and jumps back is one it never enumerated. P1 exchanges 1 into x
    // and loops while it read 0: x starts at 0 and P0 only ever writes 0, so every instance's
    // P1 runs a second, effectful iteration (the first one's write is the only 1 it can
    // read), and none is judged; the device and the host agree on the count.
    #[test]
    fn an_effectful_iteration_past_the_models_bound_is_counted_apart() {
        let test = two_threads(
            "exch-twice",
            "x=0;",
            &[
                ("atom.relaxed.gpu.exch r0, x, 0", "LC10:"),
                ("", "atom.relaxed.gpu.exch r1, x, 1"),
                ("", "beq r1, 0, LC10"),
            ],
            "exists (P1:r1 == 1)",
        );
        let run = check(&test, &tiny(), 5);
        assert_eq!(run.device_apart.past_model_bound, 32);
        assert!(run.device.is_empty());
    }

    // An iteration that only changes a register read after the loop head counts as an effect
    // too (`Thread::iteration_effect`): P1 counts its attempts and stores the count, so an
    // instance that retried stored 2 or more, an outcome the bounded model never enumerates;
    // those instances are counted apart, never judged forbidden (`check` fails on any judged
    // outcome the model forbids).
    #[test]
    fn a_retry_that_changes_a_live_register_is_past_the_models_bound() {
        let test = two_threads(
            "count-attempts",
            "x=0; y=0; P1:r2=0;",
            &[
                ("st.relaxed.gpu y, 1", "LC10:"),
                ("", "add r2, r2, 1"),
                ("", "ld.relaxed.gpu r0, y"),
                ("", "beq r0, 0, LC10"),
                ("", "st.relaxed.gpu x, r2"),
            ],
            "exists (x == 2)",
        );
        let mut past = 0;
        for seed in 0..4 {
            let run = check(&test, &tiny(), seed);
            assert!(run.device.keys().all(|o| o == &vec![1]), "{:?}", run.device);
            past += run.device_apart.past_model_bound;
        }
        assert!(past > 0, "no instance retried in 4 launches");
    }

    // Iterations without effects do not count against the bound (the model's spin-loop rule
    // folds them away): a reader spinning on a flag, and a cas lock whose failed attempts
    // are spins, are judged in every instance that finished.
    #[test]
    fn spins_and_failed_cas_attempts_stay_within_the_models_bound() {
        let spin = two_threads(
            "MP-spin",
            "x=0; y=0;",
            &[
                ("st.relaxed.gpu x, 1", "LC10:"),
                ("st.release.gpu y, 1", "ld.acquire.gpu r0, y"),
                ("", "beq r0, 0, LC10"),
                ("", "ld.relaxed.gpu r1, x"),
            ],
            "exists (P1:r1 == 0)",
        );
        let lock = two_threads(
            "cas-lock",
            "m=1; x=0;",
            &[
                ("st.relaxed.gpu x, 1", "LC10:"),
                ("st.release.gpu m, 0", "atom.acquire.gpu.cas r0, m, 0, 1"),
                ("", "bne r0, 0, LC10"),
                ("", "ld.relaxed.gpu r1, x"),
            ],
            "exists (P1:r1 == 0)",
        );
        for test in [spin, lock] {
            let run = check(&test, &tiny(), 11);
            assert_eq!(run.device_apart.past_model_bound, 0, "{}", test.name);
            assert_eq!(
                run.device.values().sum::<u64>() + run.device_apart.did_not_terminate,
                32,
                "{}",
                test.name
            );
            assert!(!run.device.is_empty(), "{}", test.name);
        }
    }

    // The one-role-per-thread layout: a spin that never ends is counted "did not terminate"
    // on the device, by the last of the instance's roles to arrive.
    #[test]
    fn did_not_terminate_is_counted_on_the_device() {
        let test = crate::atomics::gpu::emulate::fixtures::spin_forever();
        let run = check(&test, &tiny(), 9);
        assert_eq!(run.device_apart.did_not_terminate, 32);
        assert!(run.device.is_empty());
    }
}

/// The counting kernels of the catalogue assemble (ptxas: the independent check that the GPU
/// could load the PTX the emulator ran).
#[cfg(test)]
#[test]
fn counting_kernels_assemble() {
    use crate::backend::toolchain::Toolchain;
    use crate::capability::Capability;
    let tc = Toolchain::discover_system();
    crate::require!(tc.has(Capability::Ptxas), "ptxas");
    for e in crate::atomics::catalog::entries() {
        if Geometry::new(&e.test, &StressParams::default())
            .unwrap()
            .cluster
            > 1
        {
            continue;
        }
        for shared in [false, true] {
            let params = StressParams {
                intra_cta_shared: shared,
                ..StressParams::default()
            };
            let g = Geometry::new(&e.test, &params).unwrap();
            let space = OutcomeSpace::new(&e.test, &model::check(&e.test).terms);
            let ptx = kernel::generate_counting(&e.test, &g, &space).unwrap();
            tc.ptxas(&ptx, kernel::TARGET, &[])
                .unwrap_or_else(|err| panic!("{}: {err}", e.test.name));
        }
    }
}

/// Where part `k` of a batch has its buffers: the single-test bases, moved by 16 GiB a part.
fn part_base(base: u64, k: usize) -> u64 {
    base + ((k as u64) << 34)
}

/// Memory (address → word) after a launch, each part's tables, and the steps taken.
type Ran = (HashMap<u64, u32>, Vec<layout::Tables>, u64);

/// The memory of one emulated launch of `batch` (part k under `plans[k]`), each part's
/// tables, and the steps taken.
fn run_batch_machine(
    prog: &Program,
    batch: &crate::atomics::gpu::batch::Batch,
    plans: &[IterationPlan],
    seed: Option<u64>,
) -> Result<Ran, EmulateError> {
    let mut params = Vec::new();
    let mut buffers = Vec::new();
    let mut tables = Vec::new();
    for (k, (part, plan)) in batch.parts.iter().zip(plans).enumerate() {
        let t = layout::tables(&part.geometry, plan);
        let (p, b) = litmus_buffers(&t, &part.geometry.initial_memory(&t.addrs));
        for (name, v) in p {
            let v = if name == "p_testing" {
                v
            } else {
                part_base(v, k)
            };
            params.push((format!("{name}_b{k}"), v));
        }
        buffers.extend(b.into_iter().map(|(base, w)| (part_base(base, k), w)));
        tables.push(t);
    }
    let bufs: Vec<(u64, &[u32])> = buffers.iter().map(|(b, w)| (*b, w.as_slice())).collect();
    let mut m = machine(prog, batch.block, &params, &bufs);
    m.cluster = u64::from(batch.cluster);
    let steps = run_threads(&mut m, batch.grid * batch.block, seed)?;
    Ok((m.mem, tables, steps))
}

/// The memory of part `k` of `batch` after its CTAs ran alone under `plan`, interleaved at
/// random from `seed`, and the steps taken. The parts of a batch share nothing (their own
/// CTAs, buffers and counters), so the parts run one after another, each its own machine,
/// make one of the launch's interleavings; and a part runs as it would beside any others.
fn run_part_machine(
    prog: &Program,
    batch: &crate::atomics::gpu::batch::Batch,
    k: usize,
    plan: &IterationPlan,
    seed: u64,
    kept: &HashMap<u64, u32>,
) -> Result<(HashMap<u64, u32>, u64), EmulateError> {
    let part = &batch.parts[k];
    let t = layout::tables(&part.geometry, plan);
    let (p, b) = litmus_buffers(&t, &part.geometry.initial_memory(&t.addrs));
    let params: Vec<(String, u64)> = p
        .into_iter()
        .map(|(name, v)| {
            let v = if name == "p_testing" {
                v
            } else {
                part_base(v, k)
            };
            (format!("{name}_b{k}"), v)
        })
        .collect();
    let buffers: Vec<(u64, Vec<u32>)> = b
        .into_iter()
        .map(|(base, w)| (part_base(base, k), w))
        .collect();
    let bufs: Vec<(u64, &[u32])> = buffers.iter().map(|(b, w)| (*b, w.as_slice())).collect();
    let mut m = machine(prog, batch.block, &params, &bufs);
    m.mem.extend(kept);
    m.cluster = u64::from(batch.cluster);
    let ntid = u64::from(batch.block);
    let first = u64::from(part.start) * ntid;
    let threads = u64::from(part.geometry.params.max_workgroups) * ntid;
    let mut threads: Vec<Thread> = (first..first + threads)
        .map(|i| Thread {
            pc: 0,
            regs: HashMap::new(),
            done: false,
            waiting: None,
            tid: i % ntid,
            ctaid: i / ntid,
            arrived: None,
        })
        .collect();
    let steps = super::schedule(&mut m, &mut threads, Some(seed))?;
    Ok((m.mem, steps))
}

/// The words of part `k` that a GPU group of launches keeps from one launch to the next
/// (the worker's `CudaExecutor` resets everything else before each launch): the counters,
/// overflow and did-not-terminate counts, the overflow log's entries and the spin timeouts.
fn group_words_kept(
    mem: &HashMap<u64, u32>,
    part: &crate::atomics::gpu::batch::Part,
    k: usize,
) -> HashMap<u64, u32> {
    let space = &part.space;
    let n = part.geometry.instances() as usize;
    let counts = part_base(COUNTS_BASE, k);
    let head = read(mem, counts, space.head_words());
    let log = counts + 4 * space.log_word(n) as u64;
    let log_words = head[space.overflow_word()] as usize * space.terms.len();
    let timeouts = part_base(BASES[4].1, k) + 4;
    (0..space.head_words() as u64)
        .map(|i| counts + 4 * i)
        .chain((0..log_words as u64).map(|i| log + 4 * i))
        .chain([timeouts])
        .filter_map(|a| mem.get(&a).map(|&w| (a, w)))
        .collect()
}

/// Part k's counts in the memory of a batch launch, read as the GPU path reads them.
fn part_counts(
    mem: &HashMap<u64, u32>,
    part: &crate::atomics::gpu::batch::Part,
    k: usize,
) -> crate::atomics::gpu::worker::PartCounts {
    let space = &part.space;
    let n = part.geometry.instances() as usize;
    let counts = part_base(COUNTS_BASE, k);
    let head = read(mem, counts, space.head_words());
    let over = head[space.overflow_word()] as usize;
    let log = read(
        mem,
        counts + 4 * space.log_word(n) as u64,
        over * space.terms.len(),
    );
    crate::atomics::gpu::worker::PartCounts {
        head,
        log,
        timeouts: read(mem, part_base(BASES[4].1, k), 2)[1],
    }
}

/// One emulated launch of `batch` (each part under its plan in `plans`): each part's
/// counted launch, as [`launch_counting`] gives one test's.
pub fn launch_batch(
    batch: &crate::atomics::gpu::batch::Batch,
    plans: &[IterationPlan],
    seed: Option<u64>,
) -> Result<Vec<CountedLaunch>, EmulateError> {
    let prog = parse(&batch.ptx)?;
    let (mem, tables, steps) = run_batch_machine(&prog, batch, plans, seed)?;
    let mut out = Vec::new();
    for (k, (part, t)) in batch.parts.iter().zip(&tables).enumerate() {
        let (g, space) = (&part.geometry, &part.space);
        let n = g.instances() as usize;
        let c = part_counts(&mem, part, k);
        let mut device = Histogram::new();
        let device_apart = space
            .decode(&c.head, &c.log, &mut device)
            .map_err(|e| EmulateError::Unsupported(e.to_string()))?;
        let res = read(&mem, part_base(BASES[1].1, k), n * g.slots.len());
        let locs = read(&mem, part_base(BASES[0].1, k), g.location_words());
        let mut host = Histogram::new();
        let host_apart = layout::decode(g, &space.terms, t, &res, &locs, &mut host)?;
        out.push(CountedLaunch {
            device,
            device_apart,
            host,
            host_apart,
            overflow: u64::from(c.head[space.overflow_word()]),
            timeouts: c.timeouts,
            steps,
        });
    }
    Ok(out)
}

/// The GPU worker's executor on the emulator ([`crate::atomics::gpu::worker::Executor`]):
/// each part of a launch runs its CTAs interleaved at random from the part's seed
/// ([`crate::atomics::gpu::worker::PartLaunch`]), so a test's counts do not depend on the
/// batch it is in ([`launch_batch`] interleaves a whole batch at once). The launch time is the
/// emulator's wall time.
#[derive(Debug, Default)]
pub struct EmulatorExecutor {
    /// Kernels parsed ("compiled"), for tests of the worker's cache.
    pub loads: u64,
    /// Instructions executed over all launches.
    pub steps: u64,
}

impl EmulatorExecutor {
    pub fn new() -> EmulatorExecutor {
        EmulatorExecutor::default()
    }
}

/// A kernel parsed by the emulator.
pub struct EmulatedModule(Program);

impl std::fmt::Debug for EmulatedModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EmulatedModule({} instructions)", self.0.code.len())
    }
}

impl crate::atomics::gpu::worker::Executor for EmulatorExecutor {
    type Module = EmulatedModule;

    fn load(&mut self, ptx: &str) -> Result<EmulatedModule, crate::atomics::gpu::RunError> {
        self.loads += 1;
        Ok(EmulatedModule(parse(ptx)?))
    }

    /// The launches of a group one after another, each on fresh buffers but for the words a
    /// GPU group keeps between its launches ([`group_words_kept`]): so the counting kernel's
    /// accumulation over a group (counters, the overflow log appended where it stopped) runs
    /// here as on a GPU, and a log past its room is the error the GPU path gives.
    fn launch_group(
        &mut self,
        module: &EmulatedModule,
        batch: &crate::atomics::gpu::batch::Batch,
        launches: &[Vec<crate::atomics::gpu::worker::PartLaunch<'_>>],
    ) -> Result<
        (
            Vec<crate::atomics::gpu::worker::PartCounts>,
            std::time::Duration,
        ),
        crate::atomics::gpu::RunError,
    > {
        let t0 = std::time::Instant::now();
        let mut kept: Vec<HashMap<u64, u32>> = vec![HashMap::new(); batch.parts.len()];
        for launch in launches {
            for (k, (part, pl)) in batch.parts.iter().zip(launch).enumerate() {
                let (mem, steps) =
                    run_part_machine(&module.0, batch, k, pl.plan, pl.seed, &kept[k])?;
                self.steps += steps;
                kept[k] = group_words_kept(&mem, part, k);
            }
        }
        let mut counts = Vec::new();
        for (k, part) in batch.parts.iter().enumerate() {
            let n = part.geometry.instances() as usize;
            let c = part_counts(&kept[k], part, k);
            part.space.log_words(&c.head, n, launches.len())?;
            counts.push(c);
        }
        Ok((counts, t0.elapsed()))
    }
}

#[cfg(test)]
mod batch_tests {
    use super::*;
    use crate::atomics::catalog;
    use crate::atomics::gpu::batch;

    fn params(shared: bool) -> StressParams {
        StressParams {
            testing_workgroups: 4,
            workgroup_size: 128,
            max_workgroups: 5,
            stress_iterations: 4,
            pre_stress_iterations: 2,
            stress_target_lines: 2,
            stress_line_size: 4,
            intra_cta_shared: shared,
            ..StressParams::default()
        }
    }

    // Catalogue tests of every shape, in global and shared memory, plus a one-role-per-thread
    // test with a spin loop, in one launch: each part gets its own instances, only outcomes
    // the model allows for its own test, and counters equal to the host decoding of its
    // buffers.
    #[test]
    fn a_batch_gives_each_test_its_own_allowed_outcomes() {
        let spin = crate::atomics::litmus::from_yaml(
            "name: MP+spin\n\
             threads:\n\
             - cta: 0\n  ops:\n\
             \x20 - st: {loc: x, val: 1}\n\
             \x20 - st: {loc: y, val: 1, sem: release, scope: gpu}\n\
             - cta: 1\n  ops:\n\
             \x20 - label: {name: L}\n\
             \x20 - ld: {reg: r0, loc: y, sem: acquire, scope: gpu}\n\
             \x20 - branch: {cond: ne, a: r0, b: 1, target: L}\n\
             \x20 - ld: {reg: r1, loc: x}\n\
             condition: 'exists (P1:r0 == 1 /\\ P1:r1 == 0)'\n",
        )
        .unwrap();
        let mut tests = vec![spin];
        let mut shapes = std::collections::BTreeSet::new();
        for e in catalog::entries() {
            if Geometry::new(&e.test, &StressParams::default())
                .unwrap()
                .cluster
                > 1
            {
                continue;
            }
            // One test per shape and placement keeps the launch small.
            let shape = e.test.name.split('.').next().unwrap_or("").to_string();
            if shapes.insert((shape, e.test.name.ends_with("inter_cta"))) {
                tests.push(e.test);
            }
        }
        let mut prepared = Vec::new();
        for (i, t) in tests.iter().enumerate() {
            let g = Geometry::new(t, &params(i % 2 == 0)).unwrap();
            let v = model::check(t);
            let space = OutcomeSpace::new(t, &v.terms);
            prepared.push((t, g, space, v));
        }
        let refs: Vec<_> = prepared.iter().map(|(t, g, s, _)| (*t, g, s)).collect();
        let b = batch::generate(&refs).unwrap();
        assert!(b.parts.len() >= 20, "{} tests", b.parts.len());
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let plans: Vec<IterationPlan> = b
            .parts
            .iter()
            .map(|p| IterationPlan::random(&p.geometry, &mut rng))
            .collect();
        let runs = launch_batch(&b, &plans, Some(11)).unwrap();
        for ((t, g, _, v), run) in prepared.iter().zip(&runs) {
            let at = &t.name;
            assert_eq!(
                run.device.values().sum::<u64>()
                    + run.device_apart.did_not_terminate
                    + run.device_apart.past_model_bound,
                u64::from(g.instances()),
                "{at}"
            );
            assert!(
                run.device.keys().all(|o| v.outcome_allowed(o)),
                "{at}: {run:?}"
            );
            assert_eq!(run.device, run.host, "{at}");
            assert_eq!(run.timeouts, 0, "{at}");
        }
    }
}
