//! The suite's clock: each phase's runs and thread-seconds, and how many tool runs the
//! toolchain's disk cache answered ([`output_cache`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use crate::area::{BatchCache, RunScope};
use crate::backend::producer::{Producer, Source};
use crate::backend::toolchain::output_cache::{self, Answered};
use crate::backend::toolchain::{ToolError, Toolchain};

/// The phases whose time the suite reports (`GPUCTS_XCALL_TIMES=1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Compile,
    Ptxas,
    Check,
    Link,
}

const PHASES: [Phase; 4] = [Phase::Compile, Phase::Ptxas, Phase::Check, Phase::Link];

/// Each phase's runs and thread-seconds and the disk cache's hits, for one run: the clock
/// is a value of the run's [`RunScope`] ([`PhaseClock::of`]), so two runs in one process
/// count apart.
#[derive(Debug, Default)]
pub struct PhaseClock {
    nanos: [AtomicU64; 4],
    runs: [AtomicUsize; 4],
    hits: AtomicUsize,
}

impl PhaseClock {
    /// The clock of `scope`'s run.
    pub fn of(scope: &RunScope) -> Arc<PhaseClock> {
        static CLOCK: OnceLock<BatchCache<(), Arc<PhaseClock>>> = OnceLock::new();
        let slot = CLOCK
            .get_or_init(BatchCache::new)
            .get_or_compute(scope, &(), Arc::default);
        slot.get().cloned().unwrap_or_default()
    }

    /// Run `f`, charging its wall time to `phase`.
    pub(crate) fn timed<T>(&self, phase: Phase, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        let i = phase as usize;
        self.nanos[i].fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        self.runs[i].fetch_add(1, Ordering::Relaxed);
        out
    }

    fn count(&self, answered: Answered) {
        if answered == Answered::FromCache {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One line: each phase's runs and thread-seconds, and the cache hits.
    pub fn summary(&self) -> String {
        let parts: Vec<String> = PHASES
            .iter()
            .map(|p| {
                let i = *p as usize;
                format!(
                    "{p:?} {} runs {:.1} s",
                    self.runs[i].load(Ordering::Relaxed),
                    self.nanos[i].load(Ordering::Relaxed) as f64 / 1e9
                )
            })
            .collect();
        format!(
            "xcall phases (thread-seconds): {}; disk cache hits {}",
            parts.join(", "),
            self.hits.load(Ordering::Relaxed)
        )
    }
}

/// The cached result of `tc`'s run keyed by `parts` (the toolchain's disk cache of tool runs,
/// [`output_cache`]), else run `f`, charged to `phase` on `clock`.
pub fn run(
    tc: &Toolchain,
    clock: &PhaseClock,
    parts: &[&[u8]],
    phase: Phase,
    f: impl FnOnce() -> Result<Vec<u8>, ToolError>,
) -> Result<Vec<u8>, ToolError> {
    let (out, answered) = output_cache::run(tc, parts, || clock.timed(phase, f));
    clock.count(answered);
    out
}

/// One producer's compilation of `src` through the disk cache, charged to the compile phase.
pub(crate) fn compile(
    tc: &Toolchain,
    clock: &PhaseClock,
    p: Producer,
    src: &Source<'_>,
) -> Result<String, ToolError> {
    let (out, answered) = p.compile_cached(tc, src, |compile| clock.timed(Phase::Compile, compile));
    clock.count(answered);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's clock is a value of its scope: one clock for every use in one run, another
    /// for another run.
    #[test]
    fn each_run_has_its_own_clock() {
        let (one, two) = (RunScope::new(), RunScope::new());
        PhaseClock::of(&one).timed(Phase::Link, || ());
        assert!(PhaseClock::of(&one).summary().contains("Link 1 runs"));
        assert!(PhaseClock::of(&two).summary().contains("Link 0 runs"));
        assert!(Arc::ptr_eq(&PhaseClock::of(&one), &PhaseClock::of(&one)));
    }

    /// The clock charges a tool run to its phase and counts a cached answer as a hit, not a
    /// run.
    #[test]
    fn the_clock_counts_runs_and_hits() {
        use crate::backend::toolchain::ToolSettings;
        let root = tempfile::tempdir().unwrap();
        let tc = Toolchain::discover_with(ToolSettings {
            cache_root: Some(root.path().to_path_buf()),
            output_cache: true,
            ..ToolSettings::default()
        });
        let clock = PhaseClock::default();
        let parts: [&[u8]; 1] = [b"clock test"];
        run(&tc, &clock, &parts, Phase::Ptxas, || Ok(b"a".to_vec())).unwrap();
        run(&tc, &clock, &parts, Phase::Ptxas, || {
            panic!("a hit runs nothing")
        })
        .unwrap();
        let line = clock.summary();
        assert!(line.contains("Ptxas 1 runs"), "{line}");
        assert!(line.ends_with("disk cache hits 1"), "{line}");
    }
}
