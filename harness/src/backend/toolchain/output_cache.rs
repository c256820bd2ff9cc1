//! A disk cache of tool runs (compilations, ptxas), beside the toolchain cache:
//! `<cache root>/tool-runs-v1/<sha256>.{ok,err}`. The key is the tool's identity (name, version
//! and path as the toolchain found it), its options and its whole input, so a hit is the
//! output that same tool gave that same input (the tools are deterministic); a different
//! compiler, option or source is a different key. A tool's rejection (`Failed` with its log)
//! is kept too: it is the tool's answer on the input. Timeouts, signals from outside and I/O
//! errors are not.
//!
//! The toolchain's settings say whether it is on (`ToolSettings::output_cache`):
//! `GPUCTS_TOOL_CACHE=off` (or `0`) turns it off, and so do a toolchain recording a prebuilt
//! store (a hit would record nothing) and the benches that measure the tools.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{ToolError, Toolchain};

/// The folder under the cache root. The version changes when an entry's meaning does.
pub const DIR: &str = "tool-runs-v1";

/// Whether a run's answer came from the cache or from the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answered {
    FromCache,
    ByTool,
}

/// Where `tc`'s outputs are kept, when its settings allow a cache.
fn dir(tc: &Toolchain) -> Option<PathBuf> {
    let settings = tc.settings();
    if !settings.output_cache {
        return None;
    }
    settings.cache_root.as_ref().map(|r| r.join(DIR))
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

/// The cached answer of `tc`'s run keyed by `parts`, else run `f` and keep its output or its
/// tool's rejection.
pub fn run(
    tc: &Toolchain,
    parts: &[&[u8]],
    f: impl FnOnce() -> Result<Vec<u8>, ToolError>,
) -> (Result<Vec<u8>, ToolError>, Answered) {
    run_in(dir(tc).as_deref(), parts, f)
}

/// [`run`] for a text output.
pub fn run_text(
    tc: &Toolchain,
    parts: &[&[u8]],
    f: impl FnOnce() -> Result<String, ToolError>,
) -> (Result<String, ToolError>, Answered) {
    let (out, answered) = run(tc, parts, || f().map(String::into_bytes));
    let text = out.and_then(|bytes| {
        String::from_utf8(bytes).map_err(|e| ToolError::Failed {
            tool: "tool-run cache".into(),
            log: format!("a cached output is not UTF-8: {e}"),
        })
    });
    (text, answered)
}

pub(crate) fn run_in(
    dir: Option<&Path>,
    parts: &[&[u8]],
    f: impl FnOnce() -> Result<Vec<u8>, ToolError>,
) -> (Result<Vec<u8>, ToolError>, Answered) {
    let Some(dir) = dir else {
        return (f(), Answered::ByTool);
    };
    let k = key(parts);
    let ok = dir.join(format!("{k}.ok"));
    let err = dir.join(format!("{k}.err"));
    if let Ok(bytes) = std::fs::read(&ok) {
        return (Ok(bytes), Answered::FromCache);
    }
    if let Ok(text) = std::fs::read_to_string(&err) {
        if let Some((tool, log)) = text.split_once('\n') {
            let failed = ToolError::Failed {
                tool: tool.to_string(),
                log: log.to_string(),
            };
            return (Err(failed), Answered::FromCache);
        }
    }
    let out = f();
    // Written to a temporary file and renamed: a concurrent reader sees all or nothing. A
    // cache that cannot be written only costs the next run the same work.
    let keep = |path: &Path, bytes: &[u8]| -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut t = tempfile::NamedTempFile::new_in(dir)?;
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
    (out, Answered::ByTool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Keys separate their parts (no concatenation collisions) and a second run is a hit
    /// that returns the first run's output, rejections included; a timeout or a failed
    /// preparation is not kept.
    #[test]
    fn keys_separate_parts_and_hits_return_the_output() {
        assert_ne!(key(&[b"ab", b"c"]), key(&[b"a", b"bc"]));
        assert_eq!(key(&[b"x"]), key(&[b"x"]));
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join(DIR);
        let dir = Some(dir.as_path());
        let parts: [&[u8]; 2] = [b"tool 1.0", b"input"];
        let first = run_in(dir, &parts, || Ok(b"out".to_vec()));
        let second = run_in(dir, &parts, || panic!("a hit runs nothing"));
        assert_eq!(first.1, Answered::ByTool);
        assert_eq!(second.1, Answered::FromCache);
        assert_eq!(
            (first.0.unwrap(), second.0.unwrap()),
            (b"out".to_vec(), b"out".to_vec())
        );
        let parts: [&[u8]; 2] = [b"tool 1.0 fails", b"input"];
        let fail = || {
            Err(ToolError::Failed {
                tool: "nvrtc".into(),
                log: "line 1\nline 2".into(),
            })
        };
        let a = run_in(dir, &parts, fail).0.unwrap_err().to_string();
        let (b, answered) = run_in(dir, &parts, || panic!("a hit runs nothing"));
        assert_eq!(answered, Answered::FromCache);
        let b = b.unwrap_err().to_string();
        assert_eq!(a, b);
        assert!(a.contains("line 1\nline 2"), "{a}");
        // A timeout is not a verdict: not kept.
        let parts: [&[u8]; 1] = [b"times out"];
        let to = run_in(dir, &parts, || {
            Err(ToolError::Timeout {
                tool: "ptxas".into(),
                after_s: 1.0,
            })
        });
        assert!(to.0.is_err());
        let again = run_in(dir, &parts, || Ok(b"ran".to_vec()));
        assert_eq!(
            (again.0.unwrap(), again.1),
            (b"ran".to_vec(), Answered::ByTool)
        );
        // Nor is a tool that could not be prepared (rustc's core not built: the registry
        // lacked a crate): once the machine is fixed, the next run compiles.
        let parts: [&[u8]; 1] = [b"rustc without its core"];
        let unprepared = run_in(dir, &parts, || {
            Err(ToolError::SetupFailed {
                tool: "rustc (building core for nvptx64-nvidia-cuda)".into(),
                log: "no matching package named `rustc-demangle` found".into(),
            })
        });
        assert!(matches!(unprepared.0, Err(ToolError::SetupFailed { .. })));
        let fixed = run_in(dir, &parts, || Ok(b"ptx".to_vec()));
        assert_eq!(
            (fixed.0.unwrap(), fixed.1),
            (b"ptx".to_vec(), Answered::ByTool)
        );
    }

    /// The toolchain's settings decide: with `output_cache` on, a second run is a hit; off
    /// (a recording or benchmarking toolchain), every run runs its tool.
    #[test]
    fn the_toolchain_settings_switch_the_cache() {
        use crate::backend::toolchain::ToolSettings;
        let root = tempfile::tempdir().unwrap();
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
        run(&cold, &parts, tool).0.unwrap();
        run(&cold, &parts, tool).0.unwrap();
        assert_eq!(
            runs.load(Ordering::Relaxed),
            2,
            "off: the tool ran each time"
        );
        let warm = Toolchain::discover_with(settings(true));
        run(&warm, &parts, tool).0.unwrap();
        run(&warm, &parts, tool).0.unwrap();
        assert_eq!(
            runs.load(Ordering::Relaxed),
            3,
            "on: the second run was a hit"
        );
    }
}
