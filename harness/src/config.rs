//! The run's settings: built once, from the command line and the environment, and handed down
//! as a value ([`RunConfig`]). Every environment variable gpucts reads is read in this module
//! and nowhere else (`harness/tests/config_env.rs` scans the sources for reads elsewhere);
//! backends get the values as parameters or fields, cases through `CaseContext::config`.
//!
//! | variable | value | default | what it changes |
//! |---|---|---|---|
//! | `GPUCTS_ROOT` | directory | a checkout at or above the working directory, else the embedded suites | the data root (`suites/`, `ptx-corpus/`); `--root` wins |
//! | `GPUCTS_CACHE` | directory | `$XDG_CACHE_HOME/gpucts`, else `$HOME/.cache/gpucts` | where the managed toolchain wheels, the embedded data copy and the disk cache of tool runs live |
//! | `XDG_CACHE_HOME`, `HOME` | directory | | the per-user cache when `GPUCTS_CACHE` is unset |
//! | `GPUCTS_TOOL_TIMEOUT_S` | seconds, above 0 (`0.5` too) | 600 | the limit for one compiler or disassembler run |
//! | `GPUCTS_HIDE_TOOLS` | capability names, comma-separated (`clang,nvrtc`) | none | discovery reports those components missing (to check what happens without them) |
//! | `GPUCTS_REQUIRE_TOOLS` | `1` | unset | unit tests: a missing tool fails the test instead of ignoring it (CI) |
//! | `GPUCTS_REQUIRE_GPU` | `1` | unset | unit tests: a missing GPU, module or RDMA device fails the test (rigs) |
//! | `GPUCTS_REQUIRE_CORPUS` | `1` | unset | unit tests: a missing public corpus fails the test |
//! | `GPUCTS_SELFTEST_STATE` | directory | unset (the `fail_once` selftest check errors) | where the selftest `fail_once` check keeps its markers |
//! | `GPUCTS_PARAMGEN_TABLE` | file | unset | the paramgen unit test writes its summary table there |
//! | `GPUCTS_TOOL_CACHE` | `off` or `0` | on | turns the disk cache of tool runs (xcall's and atomics' compilations, ptxas) off; `GPUCTS_XCALL_CACHE`, its earlier name, is still read |
//! | `GPUCTS_XCALL_DUMP` | directory | unset | xcall keeps every batch's source and PTX there |
//! | `GPUCTS_XCALL_TIMES` | anything | unset | xcall prints each batch job's wall time on stderr |
//! | `GPUCTS_KMOD_FLAVOUR` | `desktop` or `tegra` | the loaded module's | the companion-module flavour the run expects (ci/kmod-vm) |
//! | `GPUCTS_P2P_PEER` | PCI address `dddd:bb:dd.f` | `0000:00:00.0` (the host bridge) | the DMA peer of the kmod cases (a NIC on a rig) |
//! | `P2P_RACE_ITERS` | whole number | the case's own | rounds of the kmod revoke/unpin race |
//! | `GPUCTS_RDMA_DEVICE` | device name | the first libibverbs lists | the RDMA device of the gpudirect cases and bench |
//! | `CUDA_HOME`, `CUDA_PATH` | directory | `/usr/local/cuda` | CUDA roots searched for the NVIDIA components (after `PATH` for the executables) |
//!
//! Command-line settings that reach below the command line (`--max-cases`, `--rerun-failures`)
//! are fields too, so an isolated child is told them as flags, never through the environment.
//! docs/ENVIRONMENT.md has the same table for users.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// The default limit for one tool run.
pub(crate) const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);

/// Which absences fail a unit test instead of ignoring it (`GPUCTS_REQUIRE_*=1`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TestRequires {
    pub tools: bool,
    pub gpu: bool,
    pub corpus: bool,
}

/// The settings of one gpucts process. See the module documentation for each variable.
#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    /// `GPUCTS_ROOT` (empty counts as unset).
    pub root: Option<PathBuf>,
    /// `GPUCTS_CACHE`, else `$XDG_CACHE_HOME/gpucts`, else `$HOME/.cache/gpucts`.
    pub cache_root: Option<PathBuf>,
    /// `GPUCTS_TOOL_TIMEOUT_S`, else [`DEFAULT_TOOL_TIMEOUT`].
    pub tool_timeout: Duration,
    /// `GPUCTS_HIDE_TOOLS`, split at commas, blanks dropped.
    pub hide_tools: Vec<String>,
    /// `CUDA_HOME`, `CUDA_PATH`, then `/usr/local/cuda`.
    pub cuda_roots: Vec<PathBuf>,
    /// `GPUCTS_REQUIRE_TOOLS`, `GPUCTS_REQUIRE_GPU`, `GPUCTS_REQUIRE_CORPUS`.
    pub test_requires: TestRequires,
    /// `GPUCTS_SELFTEST_STATE`.
    pub selftest_state: Option<PathBuf>,
    /// `GPUCTS_PARAMGEN_TABLE`.
    pub paramgen_table: Option<PathBuf>,
    /// Neither `GPUCTS_TOOL_CACHE` nor its earlier name `GPUCTS_XCALL_CACHE` is `off` or `0`.
    pub tool_cache: bool,
    /// `GPUCTS_XCALL_DUMP`.
    pub xcall_dump: Option<PathBuf>,
    /// `GPUCTS_XCALL_TIMES` is set.
    pub xcall_times: bool,
    /// `GPUCTS_KMOD_FLAVOUR`, as written (the kmod cases parse it and name it when it is
    /// neither flavour).
    pub kmod_flavour: Option<String>,
    /// `GPUCTS_P2P_PEER`, as written (parsed, and refused by name, by the kmod cases).
    pub p2p_peer: Option<String>,
    /// `P2P_RACE_ITERS`, as written.
    pub p2p_race_iters: Option<String>,
    /// `GPUCTS_RDMA_DEVICE`.
    pub rdma_device: Option<String>,
    /// `--max-cases`: cases one suite entry may expand to (`None`: the suite model's default).
    pub max_cases_per_entry: Option<u64>,
    /// `--rerun-failures`: how often a failed case runs again, each time in a fresh child.
    pub rerun_failures: u32,
    /// `--device`: the GPU every GPU case and command opens (default: the driver's first).
    pub device: DeviceSelector,
}

impl Default for RunConfig {
    /// Nothing set: what a process with an empty environment and no flags gets.
    fn default() -> Self {
        RunConfig::from_lookup(|_| None)
    }
}

impl RunConfig {
    /// The settings of this process's environment (command-line fields at their defaults).
    pub(crate) fn from_env() -> RunConfig {
        RunConfig::from_lookup(|name| std::env::var_os(name))
    }

    /// The settings an environment gives, `var` answering each variable's value.
    pub(crate) fn from_lookup(var: impl Fn(&str) -> Option<OsString>) -> RunConfig {
        let path = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let text = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
        let cache_root = path("GPUCTS_CACHE")
            .or_else(|| path("XDG_CACHE_HOME").map(|p| p.join("gpucts")))
            .or_else(|| path("HOME").map(|h| h.join(".cache/gpucts")));
        let tool_timeout = text("GPUCTS_TOOL_TIMEOUT_S")
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(DEFAULT_TOOL_TIMEOUT, Duration::from_secs_f64);
        let hide_tools = text("GPUCTS_HIDE_TOOLS")
            .map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|n| !n.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let mut cuda_roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
            .iter()
            .filter_map(|v| var(v).map(PathBuf::from))
            .collect();
        cuda_roots.push(PathBuf::from("/usr/local/cuda"));
        let one = |name: &str| text(name).is_some_and(|v| v == "1");
        RunConfig {
            root: path("GPUCTS_ROOT"),
            cache_root,
            tool_timeout,
            hide_tools,
            cuda_roots,
            test_requires: TestRequires {
                tools: one("GPUCTS_REQUIRE_TOOLS"),
                gpu: one("GPUCTS_REQUIRE_GPU"),
                corpus: one("GPUCTS_REQUIRE_CORPUS"),
            },
            selftest_state: var("GPUCTS_SELFTEST_STATE").map(PathBuf::from),
            paramgen_table: var("GPUCTS_PARAMGEN_TABLE").map(PathBuf::from),
            tool_cache: !["GPUCTS_TOOL_CACHE", "GPUCTS_XCALL_CACHE"]
                .iter()
                .any(|name| text(name).is_some_and(|v| v == "off" || v == "0")),
            xcall_dump: var("GPUCTS_XCALL_DUMP").map(PathBuf::from),
            xcall_times: var("GPUCTS_XCALL_TIMES").is_some(),
            kmod_flavour: text("GPUCTS_KMOD_FLAVOUR"),
            p2p_peer: text("GPUCTS_P2P_PEER"),
            p2p_race_iters: text("P2P_RACE_ITERS"),
            rdma_device: text("GPUCTS_RDMA_DEVICE"),
            max_cases_per_entry: None,
            rerun_failures: 0,
            device: Default::default(),
        }
    }

    /// The environment's settings, read once for this process, for the code that runs
    /// outside any command and so is handed no [`RunConfig`]: the test helpers of
    /// [`crate::testkit`] (`GPUCTS_REQUIRE_*`, which integration tests read too) and
    /// [`ToolSettings::from_environment`](crate::backend::toolchain::ToolSettings::from_environment)
    /// (tests). Cases and commands never call it: a command builds its [`RunConfig`] once
    /// ([`RunConfig::from_env`] and its flags) and hands it down, to cases through
    /// `CaseContext::config`. `tests::production_code_reads_the_config_it_is_handed` keeps
    /// other callers out.
    pub fn outside_any_run() -> &'static RunConfig {
        static ENV: std::sync::OnceLock<RunConfig> = std::sync::OnceLock::new();
        ENV.get_or_init(RunConfig::from_env)
    }

    /// [`RunConfig::outside_any_run`], for unit tests.
    #[cfg(test)]
    pub fn environment() -> &'static RunConfig {
        RunConfig::outside_any_run()
    }

    /// Where the managed toolchain wheels of pin set `set` are installed (pip `--target`).
    pub fn toolchain_site(&self, set: &str) -> Option<PathBuf> {
        self.cache_root
            .as_ref()
            .map(|r| r.join("toolchain").join(set))
    }
}

/// Which GPU a run uses (`--device N|UUID`): an ordinal as the driver numbers devices
/// (`cuDeviceGet`, within `CUDA_VISIBLE_DEVICES`), or a UUID as `nvidia-smi -L` prints it
/// (`GPU-` and 32 hex digits in 8-4-4-4-12 groups; case, the prefix and the dashes optional),
/// which names the same card whatever the ordering.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DeviceSelector {
    Ordinal(u32),
    /// 32 lowercase hex digits, no prefix or dashes.
    Uuid(String),
}

impl Default for DeviceSelector {
    /// The driver's first device, what a run without `--device` uses.
    fn default() -> Self {
        DeviceSelector::Ordinal(0)
    }
}

impl std::fmt::Display for DeviceSelector {
    /// The form `--device` takes back: the ordinal, or the UUID as nvidia-smi prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceSelector::Ordinal(n) => write!(f, "{n}"),
            DeviceSelector::Uuid(h) => write!(
                f,
                "GPU-{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            ),
        }
    }
}

/// `--device` text that is neither an ordinal nor a UUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a device: expected an ordinal (0, 1, ...) or a UUID as nvidia-smi -L prints it \
     (GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)"
)]
pub struct BadDeviceSelector(pub String);

impl std::str::FromStr for DeviceSelector {
    type Err = BadDeviceSelector;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        if !t.is_empty() && t.len() <= 10 && t.bytes().all(|b| b.is_ascii_digit()) {
            return t
                .parse()
                .map(DeviceSelector::Ordinal)
                .map_err(|_| BadDeviceSelector(text.into()));
        }
        let body = t
            .strip_prefix("GPU-")
            .or_else(|| t.strip_prefix("gpu-"))
            .unwrap_or(t);
        let groups: Vec<&str> = body.split('-').collect();
        // dashes, when there are any, sit where nvidia-smi puts them
        let grouped = groups.len() == 1 || groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]);
        let hex: String = groups.concat().to_ascii_lowercase();
        if grouped && hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(DeviceSelector::Uuid(hex))
        } else {
            Err(BadDeviceSelector(text.into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let m: std::collections::HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        move |k| m.get(k).cloned()
    }

    /// The defaults the module table promises when nothing is set.
    #[test]
    fn nothing_set_gives_the_documented_defaults() {
        let c = RunConfig::default();
        assert_eq!(c.root, None);
        assert_eq!(c.cache_root, None);
        assert_eq!(c.tool_timeout, Duration::from_secs(600));
        assert!(c.hide_tools.is_empty());
        assert_eq!(c.cuda_roots, vec![PathBuf::from("/usr/local/cuda")]);
        assert_eq!(c.test_requires, TestRequires::default());
        assert!(c.tool_cache && !c.xcall_times);
        assert_eq!(c.rerun_failures, 0);
    }

    #[test]
    fn each_variable_reaches_its_field() {
        let c = RunConfig::from_lookup(lookup(&[
            ("GPUCTS_ROOT", "/r"),
            ("GPUCTS_CACHE", "/c"),
            ("XDG_CACHE_HOME", "/x"),
            ("GPUCTS_TOOL_TIMEOUT_S", "2.5"),
            ("GPUCTS_HIDE_TOOLS", "clang, nvrtc,,"),
            ("CUDA_PATH", "/cuda-path"),
            ("GPUCTS_REQUIRE_TOOLS", "1"),
            ("GPUCTS_REQUIRE_GPU", "yes"),
            ("GPUCTS_XCALL_CACHE", "off"),
            ("GPUCTS_XCALL_TIMES", ""),
            ("GPUCTS_P2P_PEER", "0000:3b:00.0"),
            ("GPUCTS_RDMA_DEVICE", "mlx5_0"),
        ]));
        assert_eq!(c.root, Some(PathBuf::from("/r")));
        assert_eq!(c.cache_root, Some(PathBuf::from("/c")), "GPUCTS_CACHE wins");
        assert_eq!(c.tool_timeout, Duration::from_millis(2500));
        assert_eq!(c.hide_tools, vec!["clang", "nvrtc"]);
        assert_eq!(
            c.cuda_roots,
            vec![
                PathBuf::from("/cuda-path"),
                PathBuf::from("/usr/local/cuda")
            ]
        );
        // Only `1` requires.
        assert!(c.test_requires.tools && !c.test_requires.gpu);
        assert!(!c.tool_cache && c.xcall_times);
        assert_eq!(c.p2p_peer.as_deref(), Some("0000:3b:00.0"));
        assert_eq!(c.rdma_device.as_deref(), Some("mlx5_0"));
        assert_eq!(
            c.toolchain_site("cu12.9-r1"),
            Some(PathBuf::from("/c/toolchain/cu12.9-r1"))
        );
    }

    /// The cache falls back to XDG, then HOME; an unusable timeout to the default; an empty
    /// root is no root.
    #[test]
    fn fallbacks() {
        let c = RunConfig::from_lookup(lookup(&[
            ("XDG_CACHE_HOME", "/x"),
            ("HOME", "/h"),
            ("GPUCTS_TOOL_TIMEOUT_S", "0"),
            ("GPUCTS_ROOT", ""),
        ]));
        assert_eq!(c.cache_root, Some(PathBuf::from("/x/gpucts")));
        assert_eq!(c.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert_eq!(c.root, None);
        let c = RunConfig::from_lookup(lookup(&[("HOME", "/h"), ("GPUCTS_TOOL_TIMEOUT_S", "x")]));
        assert_eq!(c.cache_root, Some(PathBuf::from("/h/.cache/gpucts")));
        assert_eq!(c.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        let c = RunConfig::from_lookup(lookup(&[("GPUCTS_XCALL_CACHE", "0")]));
        assert!(!c.tool_cache);
        let c = RunConfig::from_lookup(lookup(&[("GPUCTS_XCALL_CACHE", "on")]));
        assert!(c.tool_cache);
        let c = RunConfig::from_lookup(lookup(&[("GPUCTS_TOOL_CACHE", "off")]));
        assert!(!c.tool_cache);
    }

    /// The production code of `src/` (each file's lines before its first `#[cfg(test)]`,
    /// comments left out; `tests.rs`, `*_tests.rs` and `testkit.rs` skipped): `(file, line,
    /// text)` of each line containing `needle`.
    fn production_lines_with(needle: &str) -> Vec<(String, usize, String)> {
        fn rust_files(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    rust_files(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        assert!(files.len() > 50, "found {} source files", files.len());
        let mut found = Vec::new();
        for f in &files {
            let name = f.file_name().unwrap().to_string_lossy();
            if name == "tests.rs" || name.ends_with("_tests.rs") || name == "testkit.rs" {
                continue;
            }
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(f).unwrap();
            for (i, l) in text.lines().enumerate() {
                if l.trim_start().starts_with("#[cfg(test)]") {
                    break;
                }
                let code = l.split("//").next().unwrap_or("");
                if code.contains(needle) {
                    found.push((format!("src/{rel}"), i + 1, l.trim().to_string()));
                }
            }
        }
        found
    }

    /// Cases and commands read the run's settings from what they are handed (the case
    /// context's `config`, a `&RunConfig` or the toolchain's settings), never from the
    /// process-wide copy of the environment, which only unit tests may use (issue 43).
    #[test]
    fn production_code_reads_the_config_it_is_handed() {
        let found: Vec<String> = production_lines_with("RunConfig::environment()")
            .into_iter()
            .map(|(f, l, t)| format!("{f}:{l}: {t}"))
            .collect();
        assert!(
            found.is_empty(),
            "{} production reads of RunConfig::environment() (use the case context's config \
             or a &RunConfig handed down):\n{}",
            found.len(),
            found.join("\n")
        );
        // The named door for code outside any run has only its documented callers.
        const OUTSIDE_ANY_RUN_CALLERS: &[&str] = &["src/backend/toolchain/mod.rs"];
        let others: Vec<String> = production_lines_with("RunConfig::outside_any_run()")
            .into_iter()
            .filter(|(f, _, _)| !OUTSIDE_ANY_RUN_CALLERS.contains(&f.as_str()))
            .map(|(f, l, t)| format!("{f}:{l}: {t}"))
            .collect();
        assert!(
            others.is_empty(),
            "RunConfig::outside_any_run() is for code outside any run (see its doc); found:\n{}",
            others.join("\n")
        );
        // A GPU is the run's `--device` (`CaseContext::open_gpu`, `Session::open_device`),
        // never a literal ordinal.
        let literal: Vec<String> = production_lines_with("Session::open(")
            .into_iter()
            .filter(|(f, _, _)| f != "src/backend/cuda.rs")
            .map(|(f, l, t)| format!("{f}:{l}: {t}"))
            .collect();
        assert!(
            literal.is_empty(),
            "GPUs opened by ordinal outside the CUDA backend (use ctx.open_gpu() or \
             Session::open_device(&config.device)):\n{}",
            literal.join("\n")
        );
        // The scanner sees what it is meant to see.
        assert!(!production_lines_with("RunConfig::from_env()").is_empty());
        assert!(!production_lines_with("Session::open_device(").is_empty());
    }
}
