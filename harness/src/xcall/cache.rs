//! A disk cache of the suite's batch tool runs (compilations and ptxas), beside the toolchain
//! cache: `~/.cache/gpucts/xcall-v1/<sha256>.{ok,err}`. The key is the tool's identity (name,
//! version and path as the toolchain found it), its options and the whole input text, so a
//! hit is the output that same tool gave that same input (the tools are deterministic); a
//! different compiler, option or source is a different key. Producer rejections (`Failed`
//! with the tool's log) are kept too; timeouts and I/O errors are not.
//!
//! The toolchain's settings say whether it is on (`ToolSettings::output_cache`):
//! `GPUCTS_XCALL_CACHE=off` (or `0`) turns it off, and so do a toolchain recording a prebuilt
//! store and `gpucts bench xcall`'s (its rate stays the compile-and-link rate).

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::area::{BatchCache, RunScope};
use crate::backend::toolchain::{ToolError, Toolchain};

/// Where `tc`'s outputs are kept, when its settings allow a cache.
fn dir(tc: &Toolchain) -> Option<PathBuf> {
    let settings = tc.settings();
    if !settings.output_cache {
        return None;
    }
    settings.cache_root.as_ref().map(|r| r.join("xcall-v1"))
}

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

    fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
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

/// The key of a tool run: every part, length-prefixed, hashed.
pub fn key(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    hex::encode(h.finalize())
}

/// The cached result of `tc`'s run keyed by `parts`, else run `f` (charged to `phase` on
/// `clock`) and keep its output or its tool's rejection.
pub fn run(
    tc: &Toolchain,
    clock: &PhaseClock,
    parts: &[&[u8]],
    phase: Phase,
    f: impl FnOnce() -> Result<Vec<u8>, ToolError>,
) -> Result<Vec<u8>, ToolError> {
    run_in(dir(tc), clock, parts, phase, f)
}

fn run_in(
    dir: Option<PathBuf>,
    clock: &PhaseClock,
    parts: &[&[u8]],
    phase: Phase,
    f: impl FnOnce() -> Result<Vec<u8>, ToolError>,
) -> Result<Vec<u8>, ToolError> {
    let Some(dir) = dir else {
        return clock.timed(phase, f);
    };
    let k = key(parts);
    let ok = dir.join(format!("{k}.ok"));
    let err = dir.join(format!("{k}.err"));
    if let Ok(bytes) = std::fs::read(&ok) {
        clock.hit();
        return Ok(bytes);
    }
    if let Ok(text) = std::fs::read_to_string(&err) {
        if let Some((tool, log)) = text.split_once('\n') {
            clock.hit();
            return Err(ToolError::Failed {
                tool: tool.to_string(),
                log: log.to_string(),
            });
        }
    }
    let out = clock.timed(phase, f);
    // Written to a temporary file and renamed: a concurrent reader sees all or nothing. A
    // cache that cannot be written only costs the next run the same work.
    let keep = |path: &std::path::Path, bytes: &[u8]| -> std::io::Result<()> {
        std::fs::create_dir_all(&dir)?;
        let mut t = tempfile::NamedTempFile::new_in(&dir)?;
        t.write_all(bytes)?;
        t.persist(path).map_err(|e| e.error)?;
        Ok(())
    };
    match &out {
        Ok(bytes) => drop(keep(&ok, bytes)),
        Err(ToolError::Failed { tool, log }) => {
            drop(keep(&err, format!("{tool}\n{log}").as_bytes()))
        }
        Err(_) => {}
    }
    out
}

/// [`run`] for a text output.
pub(crate) fn run_text(
    tc: &Toolchain,
    clock: &PhaseClock,
    parts: &[&[u8]],
    phase: Phase,
    f: impl FnOnce() -> Result<String, ToolError>,
) -> Result<String, ToolError> {
    let bytes = run(tc, clock, parts, phase, || f().map(String::into_bytes))?;
    String::from_utf8(bytes).map_err(|e| ToolError::Failed {
        tool: "xcall cache".into(),
        log: format!("a cached output is not UTF-8: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys separate their parts (no concatenation collisions) and a second run is a hit
    /// that returns the first run's output, rejections included.
    #[test]
    fn keys_separate_parts_and_hits_return_the_output() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_eq!(key(&[b"x"]), key(&[b"x"]));
        let root = tempfile::tempdir().unwrap();
        let dir = || Some(root.path().join("xcall-v1"));
        let clock = PhaseClock::default();
        let parts: [&[u8]; 2] = [b"tool 1.0", b"input"];
        let first = run_in(
            dir(),
            &clock,
            &parts,
            Phase::Compile,
            || Ok(b"out".to_vec()),
        )
        .unwrap();
        let second = run_in(dir(), &clock, &parts, Phase::Compile, || {
            panic!("a hit runs nothing")
        })
        .unwrap();
        assert_eq!((first, second), (b"out".to_vec(), b"out".to_vec()));
        let parts: [&[u8]; 2] = [b"tool 1.0 fails", b"input"];
        let fail = || {
            Err(ToolError::Failed {
                tool: "nvrtc".into(),
                log: "line 1\nline 2".into(),
            })
        };
        let a = run_in(dir(), &clock, &parts, Phase::Ptxas, fail)
            .unwrap_err()
            .to_string();
        let b = run_in(dir(), &clock, &parts, Phase::Ptxas, || {
            panic!("a hit runs nothing")
        })
        .unwrap_err()
        .to_string();
        assert_eq!(a, b);
        assert!(a.contains("line 1\nline 2"), "{a}");
        // A timeout is not a verdict: not kept.
        let parts: [&[u8]; 1] = [b"times out"];
        let to = run_in(dir(), &clock, &parts, Phase::Ptxas, || {
            Err(ToolError::Timeout {
                tool: "ptxas".into(),
                after_s: 1.0,
            })
        });
        assert!(to.is_err());
        let again = run_in(dir(), &clock, &parts, Phase::Ptxas, || Ok(b"ran".to_vec())).unwrap();
        assert_eq!(again, b"ran".to_vec());
        // The clock counts what ran above: one compile; ptxas rejecting, timing out and
        // running; the two hits.
        let line = clock.summary();
        assert!(line.contains("Compile 1 runs"), "{line}");
        assert!(line.contains("Ptxas 3 runs"), "{line}");
        assert!(line.ends_with("disk cache hits 2"), "{line}");
    }

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

    /// The toolchain's settings decide: with `output_cache` on, a second run is a hit; off
    /// (a recording or benchmarking toolchain), every run runs its tool.
    #[test]
    fn the_toolchain_settings_switch_the_cache() {
        use crate::backend::toolchain::ToolSettings;
        let root = tempfile::tempdir().unwrap();
        let clock = PhaseClock::default();
        let settings = |output_cache| ToolSettings {
            cache_root: Some(root.path().to_path_buf()),
            output_cache,
            ..ToolSettings::default()
        };
        let runs = AtomicUsize::new(0);
        let tool = || {
            runs.fetch_add(1, Ordering::Relaxed);
            Ok(b"out".to_vec())
        };
        let parts: [&[u8]; 1] = [b"settings test"];
        let cold = Toolchain::discover_with(settings(false));
        run(&cold, &clock, &parts, Phase::Compile, tool).unwrap();
        run(&cold, &clock, &parts, Phase::Compile, tool).unwrap();
        assert_eq!(
            runs.load(Ordering::Relaxed),
            2,
            "off: the tool ran each time"
        );
        let warm = Toolchain::discover_with(settings(true));
        run(&warm, &clock, &parts, Phase::Compile, tool).unwrap();
        run(&warm, &clock, &parts, Phase::Compile, tool).unwrap();
        assert_eq!(
            runs.load(Ordering::Relaxed),
            3,
            "on: the second run was a hit"
        );
    }
}
