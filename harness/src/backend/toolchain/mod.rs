//! The offline toolchain: ptxas, NVRTC, nvJitLink, libNVVM, nvdisasm, cuobjdump, libcu++
//! headers, and clang-19 with the NVPTX target. None of these needs a GPU.
//!
//! Each component is looked for on `PATH`, under `$CUDA_HOME` and `/usr/local/cuda`, and in the
//! managed wheel cache (see [`managed`]). With [`Policy::Auto`], components that are missing are
//! installed from NVIDIA's pinned redistributable wheels; [`Policy::System`] never installs.

mod ffi;
pub mod llc;
pub mod prebuilt;

pub(crate) use ffi::FfiError;
pub mod managed;
pub mod output_cache;
pub mod process;
pub mod python;
pub mod rustc;
pub(crate) mod stderr_capture;

use crate::vocab::Vocabulary;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};

use serde::Serialize;

use crate::capability::{Capabilities, Capability};

/// A tool run that did not produce its output.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("{0} is not available")]
    NotAvailable(Capability),
    #[error("{tool} failed: {log}")]
    Failed { tool: String, log: String },
    /// The tool does not know the target at all (ptxas 13.0 dropped sm_50..sm_72: "Value
    /// 'sm_50' is not defined for option 'gpu-name'"): a missing feature of this tool
    /// version, not a verdict on the input.
    #[error("{tool} has no target {arch}: {log}")]
    UnknownTarget {
        tool: String,
        arch: String,
        log: String,
    },
    /// What the tool needs before it can take any input could not be made (rustc's `core` for
    /// nvptx64, built once from rust-src): the machine's state, not an answer on the input.
    /// Never kept (the disk cache, a prebuilt store); a case meeting it is an error.
    #[error("{tool} failed: {log}")]
    SetupFailed { tool: String, log: String },
    /// The tool ran past its limit and was killed with everything it started.
    #[error("{tool} did not finish within {after_s:.0} s and was killed")]
    Timeout { tool: String, after_s: f64 },
    /// A signal from outside ended the tool (the OOM killer's SIGKILL, a TERM or INT not from
    /// gpucts): what the machine did, not the tool's answer on the input. Never kept as a
    /// rejection (a prebuilt store, the disk caches), and a case meeting it is an error. (A
    /// tool that crashes on its input, e.g. SIGABRT, answered: that is [`ToolError::Failed`].)
    #[error("{tool} was killed by {signal}, not by gpucts: stopped from outside (the OOM killer, an operator), not a verdict on the input{}", stderr_tail(log))]
    Killed {
        tool: String,
        signal: String,
        log: String,
    },
    /// Replaying a prebuilt store (`--prebuilt DIR`) that has no output for this input.
    #[error(
        "{tool}: no prebuilt output for this input in {} (key {key}): the store was made for \
         other inputs; run `gpucts prebuild` again with this gpucts and these cases",
        dir.display()
    )]
    NotPrebuilt {
        tool: String,
        dir: PathBuf,
        key: String,
    },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The last lines of what a killed tool wrote, for its error.
fn stderr_tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).collect();
    match lines.len() {
        0 => String::new(),
        n => format!(
            "; its last output: {}",
            lines[n.saturating_sub(3)..].join(" | ")
        ),
    }
}

impl ToolError {
    fn failed(tool: &str, log: impl Into<String>) -> Self {
        ToolError::Failed {
            tool: tool.to_string(),
            log: log.into(),
        }
    }
}

/// Why discovery counts a component missing although a file was found, or found no clang.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ComponentError {
    /// Running the tool for its version failed.
    #[error(transparent)]
    Run(#[from] ToolError),
    #[error("unexpected --version output: {0}")]
    VersionOutput(String),
    /// The shared library would not open.
    #[error(transparent)]
    Library(#[from] FfiError),
    #[error("clang-19 not found")]
    ClangNotFound,
    #[error("clang-19 at {} does not run: {source}", path.display())]
    ClangDoesNotRun { path: PathBuf, source: ToolError },
    #[error("{} lacks the NVPTX target", path.display())]
    NoNvptxTarget { path: PathBuf },
    #[error("g++ not found on PATH")]
    GxxNotFound,
    #[error("rustc not found on PATH")]
    RustcNotFound,
    /// rustc without the sources of `core`, which gpucts builds for nvptx64-nvidia-cuda.
    #[error("rustc's sysroot {} has no rust-src (run `rustup component add rust-src`)", sysroot.display())]
    NoRustSrc { sysroot: PathBuf },
}

/// Input kinds for [`Toolchain::nvjitlink`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkInputKind {
    Ptx,
    Cubin,
}

/// Languages clang compiles for NVPTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClangLang {
    C,
    /// CUDA device code (`-x cuda --cuda-device-only`).
    Cuda,
    /// LLVM IR text.
    LlvmIr,
}

impl ClangLang {
    fn extension(self) -> &'static str {
        match self {
            ClangLang::C => "c",
            ClangLang::Cuda => "cu",
            ClangLang::LlvmIr => "ll",
        }
    }
}

/// Whether the harness may install missing components (`--toolchain auto|system`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Policy {
    /// Use what the system has; install NVIDIA's pinned wheels for what it lacks.
    #[default]
    Auto,
    /// Use only what the system itself has (CUDA roots, PATH): neither install the pinned
    /// wheels nor use ones installed before.
    System,
}

/// Where a component was found.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    #[strum(serialize = "system")]
    System,
    #[strum(serialize = "managed")]
    Managed,
    /// Outputs recorded on another machine (`--prebuilt DIR`, [`prebuilt`]).
    #[strum(serialize = "prebuilt")]
    Prebuilt,
}

/// One found component.
#[derive(Debug, Clone, Serialize)]
pub struct Component {
    pub path: PathBuf,
    pub version: String,
    pub origin: Origin,
}

/// The toolchain this run uses.
#[derive(Debug, Default)]
pub struct Toolchain {
    found: BTreeMap<Capability, Component>,
    missing: BTreeMap<Capability, String>,
    /// Shared objects are opened at most once per process.
    nvrtc: OnceLock<Result<ffi::Nvrtc, FfiError>>,
    /// The NVRTC instance for `-G` compiles (see [`Toolchain::nvrtc`]).
    nvrtc_device_debug: OnceLock<Result<ffi::Nvrtc, FfiError>>,
    nvjitlink: OnceLock<Result<ffi::NvJitLink, FfiError>>,
    nvvm: OnceLock<Result<ffi::Nvvm, FfiError>>,
    /// `Prototype doesn't match` lines nvJitLink wrote to stderr for links it completed
    /// (counted, not shown: [`stderr_capture`]).
    prototype_lines: std::sync::atomic::AtomicUsize,
    /// What discovery was told: limits, hidden components, where to look, the prebuilt store.
    settings: ToolSettings,
}

/// The toolchain's part of the run's settings ([`crate::config::RunConfig`]), and the prebuilt
/// store the command line opened.
#[derive(Debug, Clone)]
pub struct ToolSettings {
    /// The limit for one compiler or disassembler run.
    pub timeout: std::time::Duration,
    /// Capability names discovery reports missing ([`HIDE_VAR`]).
    pub hide: Vec<String>,
    /// CUDA roots searched for the NVIDIA components.
    pub cuda_roots: Vec<PathBuf>,
    /// The per-user cache holding the managed wheels.
    pub cache_root: Option<PathBuf>,
    /// `--prebuilt DIR` (replay) or `gpucts prebuild` (record).
    pub prebuilt: Option<Arc<prebuilt::Mode>>,
    /// Whether a check may answer a tool run from a disk cache of that tool's earlier output
    /// for the same input (`GPUCTS_TOOL_CACHE`, [`output_cache`]). Off while recording a prebuilt store (a hit
    /// would record nothing) and for benches that measure the tools.
    pub output_cache: bool,
    /// Where xcall keeps every batch's source and PTX (`GPUCTS_XCALL_DUMP`).
    pub xcall_dump: Option<PathBuf>,
    /// Whether xcall prints each batch job's wall time on stderr (`GPUCTS_XCALL_TIMES`).
    pub xcall_times: bool,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings::of(&crate::config::RunConfig::default(), None)
    }
}

impl ToolSettings {
    /// The settings `config` gives, with the store the command line opened.
    pub fn of(config: &crate::config::RunConfig, prebuilt: Option<Arc<prebuilt::Mode>>) -> Self {
        ToolSettings {
            timeout: config.tool_timeout,
            hide: config.hide_tools.clone(),
            cuda_roots: config.cuda_roots.clone(),
            cache_root: config.cache_root.clone(),
            prebuilt,
            output_cache: config.tool_cache,
            xcall_dump: config.xcall_dump.clone(),
            xcall_times: config.xcall_times,
        }
    }

    /// The settings of this process's environment, with no store, for code outside any run
    /// (tests; see
    /// [`RunConfig::outside_any_run`](crate::config::RunConfig::outside_any_run)). A command
    /// uses [`ToolSettings::of`] its own config.
    pub fn from_environment() -> Self {
        ToolSettings::of(crate::config::RunConfig::outside_any_run(), None)
    }

    /// Where the managed wheels are installed.
    pub(crate) fn site_dir(&self) -> Option<PathBuf> {
        managed::site_dir(self.cache_root.as_deref())
    }
}

/// `GPUCTS_HIDE_TOOLS=clang,nvrtc` makes discovery report those components missing, so that a
/// machine that has them can check what happens without them (e.g. that
/// `GPUCTS_REQUIRE_TOOLS=1 cargo test` then fails). Nothing installs a hidden component.
pub const HIDE_VAR: &str = "GPUCTS_HIDE_TOOLS";

/// Components the NVIDIA wheels provide (clang comes from Debian).
pub(crate) const NVIDIA_COMPONENTS: &[Capability] = &[
    Capability::Ptxas,
    Capability::Nvrtc,
    Capability::Nvjitlink,
    Capability::Libnvvm,
    Capability::Nvdisasm,
    Capability::Cuobjdump,
    Capability::Cccl,
];

impl Toolchain {
    /// Discover what is installed (system CUDA roots and PATH first, then wheels an earlier
    /// `toolchain install` put in the managed directory), never installing anything, with the
    /// settings of this process's environment ([`ToolSettings::from_environment`]: tests and
    /// code outside any run). A command discovers with its own settings
    /// ([`Toolchain::discover_with`]).
    pub fn discover_system() -> Toolchain {
        Toolchain::discover_with(ToolSettings::from_environment())
    }

    /// [`Toolchain::discover_system`] with the run's settings.
    pub(crate) fn discover_with(settings: ToolSettings) -> Toolchain {
        Toolchain::discover(true, settings)
    }

    /// Discover what is installed; the managed wheels count only with `with_managed`
    /// (`--toolchain system` leaves them out: only what the system itself has).
    fn discover(with_managed: bool, settings: ToolSettings) -> Toolchain {
        let mut tc = Toolchain {
            settings,
            ..Toolchain::default()
        };
        let roots = tc.settings.cuda_roots.clone();
        let managed = tc
            .settings
            .site_dir()
            .filter(|d| with_managed && d.is_dir());
        for &cap in NVIDIA_COMPONENTS {
            let sys = roots.iter().find_map(|r| locate_in_cuda_root(cap, r));
            let on_path = match cap {
                Capability::Ptxas | Capability::Nvdisasm | Capability::Cuobjdump => {
                    which(cap.name())
                }
                _ => None,
            };
            let found = on_path.or(sys).map(|p| (p, Origin::System)).or_else(|| {
                managed
                    .as_deref()
                    .and_then(|m| managed::locate(cap, m))
                    .map(|p| (p, Origin::Managed))
            });
            match found {
                Some((path, origin)) => match version_of(cap, &path) {
                    Ok(version) => {
                        tc.found.insert(
                            cap,
                            Component {
                                path,
                                version,
                                origin,
                            },
                        );
                    }
                    Err(e) => {
                        tc.missing.insert(
                            cap,
                            format!("{} found at {} but unusable: {e}", cap, path.display()),
                        );
                    }
                },
                None => {
                    let why = if with_managed {
                        format!("{} not found", describe(cap))
                    } else {
                        format!(
                            "{} not found on the system (--toolchain system: the managed wheels are not used)",
                            describe(cap)
                        )
                    };
                    tc.missing.insert(cap, why);
                }
            }
        }
        match find_clang() {
            Ok(c) => {
                tc.found.insert(Capability::Clang, c);
            }
            Err(e) => {
                tc.missing.insert(Capability::Clang, e.to_string());
            }
        }
        match find_gxx() {
            Ok(c) => {
                tc.found.insert(Capability::Gxx, c);
            }
            Err(e) => {
                tc.missing.insert(Capability::Gxx, e.to_string());
            }
        }
        match rustc::find_rustc() {
            Ok(c) => {
                tc.found.insert(Capability::Rustc, c);
            }
            Err(e) => {
                tc.missing.insert(Capability::Rustc, e.to_string());
            }
        }
        python::discover(&mut tc);
        let hidden = tc.settings.hide.clone();
        tc.hide(&hidden);
        // After hiding: a rig replaying a store has clang-19 through it, whatever its own.
        let mode = tc.settings.prebuilt.clone();
        if let Some(prebuilt::Mode::Replay(store)) = mode.as_deref() {
            match store.version(prebuilt::Tool::Clang) {
                Some(version) => tc.replayed(Capability::Clang, store, version),
                None => {
                    tc.found.remove(&Capability::Clang);
                    tc.missing.insert(
                        Capability::Clang,
                        format!(
                            "clang-19: the prebuilt store {} holds no clang-19 outputs",
                            store.dir().display()
                        ),
                    );
                }
            }
            // rustc only when the store recorded it: a store made without `--producers rustc`
            // leaves a rig's own rustc (if any) in charge.
            if let Some(version) = store.version(prebuilt::Tool::Rustc) {
                tc.replayed(Capability::Rustc, store, version);
            }
        }
        tc
    }

    /// `cap` answered by `store`'s outputs, recorded with the tool at `version`.
    fn replayed(&mut self, cap: Capability, store: &prebuilt::Store, version: String) {
        self.missing.remove(&cap);
        let component = Component {
            path: store.dir().to_path_buf(),
            version,
            origin: Origin::Prebuilt,
        };
        self.found.insert(cap, component);
    }

    /// The prebuilt store clang-19 and llc-19 outputs come from (`--prebuilt DIR`), if any.
    pub fn prebuilt(&self) -> Option<&prebuilt::Store> {
        self.component(Capability::Clang)
            .filter(|c| c.origin == Origin::Prebuilt)
            .and(self.replaying())
    }

    /// The host architecture `cap`'s outputs were compiled for (§1.1): the build machine's
    /// when a prebuilt store answers for it, else this machine's.
    pub fn host_arch(&self, cap: Capability) -> String {
        match (self.component(cap), self.replaying()) {
            (Some(c), Some(store)) if c.origin == Origin::Prebuilt => store.host_arch(),
            _ => crate::backend::host::ARCH.to_string(),
        }
    }

    /// The store this toolchain replays, if any.
    pub(crate) fn replaying(&self) -> Option<&prebuilt::Store> {
        match self.settings.prebuilt.as_deref() {
            Some(prebuilt::Mode::Replay(s)) => Some(s),
            _ => None,
        }
    }

    /// The store this toolchain records into (`gpucts prebuild`), if any.
    pub(crate) fn recording(&self) -> Option<&prebuilt::Store> {
        match self.settings.prebuilt.as_deref() {
            Some(prebuilt::Mode::Record(s)) => Some(s),
            _ => None,
        }
    }

    /// This toolchain, its clang-19 and llc-19 runs recorded into `mode`'s store (`gpucts
    /// prebuild`: discovery first finds the clang-19 whose version the store is made for).
    pub(crate) fn recording_into(mut self, store: Arc<prebuilt::Mode>) -> Toolchain {
        self.settings.prebuilt = Some(store);
        // Recording needs the tools to run: a cached output would record nothing.
        self.settings.output_cache = false;
        self
    }

    /// The settings this toolchain was discovered with.
    pub fn settings(&self) -> &ToolSettings {
        &self.settings
    }

    /// The limit for one tool run.
    pub(crate) fn tool_timeout(&self) -> std::time::Duration {
        self.settings.timeout
    }

    /// Treat the capabilities in `names` as missing (see [`HIDE_VAR`]).
    fn hide(&mut self, names: &[String]) {
        for name in names {
            for &cap in Capability::ALL.iter().filter(|c| c.name() == name) {
                self.found.remove(&cap);
                self.missing
                    .insert(cap, format!("{} hidden by {HIDE_VAR}", describe(cap)));
            }
        }
    }

    /// Discover, then with [`Policy::Auto`] install the pinned wheels if an NVIDIA component
    /// is missing. Progress goes to stderr. An install failure leaves the components missing
    /// with the failure as their reason; cases that need them skip.
    pub fn provision(policy: Policy, settings: ToolSettings) -> Toolchain {
        let tc = Toolchain::discover(policy == Policy::Auto, settings.clone());
        let lacking: Vec<Capability> = NVIDIA_COMPONENTS
            .iter()
            .copied()
            .filter(|c| !tc.has(*c))
            .filter(|c| !tc.missing.get(c).is_some_and(|why| why.ends_with(HIDE_VAR)))
            .collect();
        if policy == Policy::System || lacking.is_empty() {
            return tc;
        }
        let names: Vec<&str> = lacking.iter().map(|c| c.name()).collect();
        eprintln!(
            "gpucts: {} not found on this system; installing NVIDIA's redistributable wheels (use --toolchain system to forbid)",
            names.join(", ")
        );
        match managed::install(settings.cache_root.as_deref(), &mut std::io::stderr()) {
            Ok(dir) => {
                eprintln!("gpucts: toolchain installed in {}", dir.display());
                Toolchain::discover_with(settings)
            }
            Err(e) => {
                let mut tc = tc;
                for c in lacking {
                    tc.missing.insert(
                        c,
                        format!("{} not found, and installing it failed: {e}", describe(c)),
                    );
                }
                tc
            }
        }
    }

    pub fn has(&self, cap: Capability) -> bool {
        self.found.contains_key(&cap)
    }

    pub fn component(&self, cap: Capability) -> Option<&Component> {
        self.found.get(&cap)
    }

    pub fn missing(&self) -> &BTreeMap<Capability, String> {
        &self.missing
    }

    pub fn components(&self) -> &BTreeMap<Capability, Component> {
        &self.found
    }

    /// Record the toolchain's capabilities.
    pub(crate) fn fill_capabilities(&self, caps: &mut Capabilities) {
        for (cap, c) in &self.found {
            caps.set(
                *cap,
                Ok(format!(
                    "{} ({}, {})",
                    c.version,
                    c.path.display(),
                    c.origin.name()
                )),
            );
        }
        for (cap, why) in &self.missing {
            caps.set(*cap, Err(crate::capability::Missing(why.clone())));
        }
    }

    fn path(&self, cap: Capability) -> Result<&Path, ToolError> {
        self.found
            .get(&cap)
            .map(|c| c.path.as_path())
            .ok_or(ToolError::NotAvailable(cap))
    }

    /// NVRTC: CUDA C++ -> PTX. The libcu++ include directory is added when present.
    pub fn nvrtc(&self, source: &str, name: &str, opts: &[&str]) -> Result<String, ToolError> {
        let path = self.path(Capability::Nvrtc)?;
        // Measured with NVRTC 12.9 (libnvrtc.so.12 of the pinned wheel): once a process has
        // compiled anything with `-G`, every later compile without it of the same source gives
        // different PTX (a 25-type dwarf batch: 1,666 -> 1,828 lines with -lineinfo; by-value
        // aggregate parameters loaded field by field instead of as v4 words), so results would
        // depend on which case ran first (harness/tests/nvrtc_isolation.rs). `-G` compiles use
        // a second NVRTC loaded from a private copy of the library, which leaves this one untouched.
        let device_debug = opts.iter().any(|o| *o == "-G" || *o == "--device-debug");
        type Open = fn(&Path) -> Result<ffi::Nvrtc, FfiError>;
        let (slot, open): (_, Open) = if device_debug {
            (&self.nvrtc_device_debug, ffi::Nvrtc::open_isolated)
        } else {
            (&self.nvrtc, ffi::Nvrtc::open)
        };
        let lib = slot
            .get_or_init(|| open(path))
            .as_ref()
            .map_err(|e| ToolError::failed("nvrtc", e.to_string()))?;
        let mut all: Vec<String> = opts.iter().map(|s| s.to_string()).collect();
        if let Some(cccl) = self.found.get(&Capability::Cccl) {
            all.push(format!("-I{}", cccl.path.display()));
        }
        lib.compile(source, name, &all)
            .map_err(|e| ToolError::failed("nvrtc", e.to_string()))
    }

    /// libNVVM: NVVM IR text -> PTX.
    pub(crate) fn nvvm(&self, ir: &str, opts: &[&str]) -> Result<String, ToolError> {
        let path = self.path(Capability::Libnvvm)?;
        let lib = self
            .nvvm
            .get_or_init(|| ffi::Nvvm::open(path))
            .as_ref()
            .map_err(|e| ToolError::failed("libnvvm", e.to_string()))?;
        lib.compile(ir, opts)
            .map_err(|e| ToolError::failed("libnvvm", e.to_string()))
    }

    /// nvJitLink: link PTX and cubins into one cubin.
    pub fn nvjitlink(
        &self,
        inputs: &[(LinkInputKind, &str, &[u8])],
        opts: &[&str],
    ) -> Result<Vec<u8>, ToolError> {
        let path = self.path(Capability::Nvjitlink)?;
        let lib = self
            .nvjitlink
            .get_or_init(|| ffi::NvJitLink::open(path))
            .as_ref()
            .map_err(|e| ToolError::failed("nvjitlink", e.to_string()))?;
        let (linked, lines) = stderr_capture::run_with_stderr_filtered(|| lib.link(inputs, opts));
        self.prototype_lines
            .fetch_add(lines, std::sync::atomic::Ordering::Relaxed);
        linked.map_err(|e| ToolError::failed("nvjitlink", e.to_string()))
    }

    /// How many `Prototype doesn't match` lines nvJitLink has written to stderr for this
    /// toolchain's links (not shown).
    pub(crate) fn nvjitlink_prototype_lines(&self) -> usize {
        self.prototype_lines
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// ptxas: PTX -> cubin.
    pub fn ptxas(&self, ptx: &str, arch: &str, args: &[&str]) -> Result<Vec<u8>, ToolError> {
        let ptxas = self.path(Capability::Ptxas)?;
        let dir = tempfile_dir()?;
        let input = dir.path().join("input.ptx");
        let output = dir.path().join("output.cubin");
        std::fs::write(&input, ptx)?;
        let out = process::output_within(
            Command::new(ptxas)
                .arg(format!("-arch={arch}"))
                .args(args)
                .arg(&input)
                .arg("-o")
                .arg(&output),
            "ptxas",
            self.tool_timeout(),
        )?;
        if !out.status.success() {
            let log = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            );
            if log.contains(&format!(
                "Value '{arch}' is not defined for option 'gpu-name'"
            )) {
                return Err(ToolError::UnknownTarget {
                    tool: "ptxas".to_string(),
                    arch: arch.to_string(),
                    log: log.trim().to_string(),
                });
            }
            return Err(ToolError::failed("ptxas", log));
        }
        Ok(std::fs::read(&output)?)
    }

    /// ptxas on each of `ptxs` (PTX -> cubin for `arch`), up to `threads` at once: each
    /// text's cubin or its own error, in order. ptxas takes ~10 ms per litmus test body at
    /// -O3, so a GPU run that compiles hundreds of kernels one by one spends seconds on it
    /// while the GPU idles.
    pub(crate) fn ptxas_many(
        &self,
        ptxs: &[&str],
        arch: &str,
        threads: usize,
    ) -> Vec<Result<Vec<u8>, ToolError>> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        type Cubin = Result<Vec<u8>, ToolError>;
        let out: Vec<std::sync::Mutex<Option<Cubin>>> =
            ptxs.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|sc| {
            for _ in 0..threads.clamp(1, ptxs.len().max(1)) {
                sc.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(ptx) = ptxs.get(i) else { break };
                    let r = self.ptxas(ptx, arch, &[]);
                    *out[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                });
            }
        });
        out.into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .unwrap_or_else(|| Err(ToolError::failed("ptxas", "not run")))
            })
            .collect()
    }

    /// nvdisasm on a cubin.
    pub(crate) fn nvdisasm(&self, cubin: &[u8], args: &[&str]) -> Result<String, ToolError> {
        self.run_on_cubin(Capability::Nvdisasm, cubin, args)
    }

    /// cuobjdump on a cubin.
    pub(crate) fn cuobjdump(&self, cubin: &[u8], args: &[&str]) -> Result<String, ToolError> {
        self.run_on_cubin(Capability::Cuobjdump, cubin, args)
    }

    fn run_on_cubin(
        &self,
        cap: Capability,
        cubin: &[u8],
        args: &[&str],
    ) -> Result<String, ToolError> {
        let tool = self.path(cap)?;
        let dir = tempfile_dir()?;
        let input = dir.path().join("input.cubin");
        std::fs::write(&input, cubin)?;
        let out = process::output_within(
            Command::new(tool).args(args).arg(&input),
            cap.name(),
            self.tool_timeout(),
        )?;
        if !out.status.success() {
            return Err(ToolError::failed(
                cap.name(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// clang-19 -> PTX for `nvptx64-nvidia-cuda`.
    pub(crate) fn clang_ptx(
        &self,
        source: &str,
        lang: ClangLang,
        args: &[&str],
    ) -> Result<String, ToolError> {
        self.clang_ptx_for(source, lang, "sm_90", args)
    }

    /// clang-19 -> PTX for `nvptx64-nvidia-cuda` and GPU `arch` (`sm_50`, ...).
    pub(crate) fn clang_ptx_for(
        &self,
        source: &str,
        lang: ClangLang,
        arch: &str,
        args: &[&str],
    ) -> Result<String, ToolError> {
        let cuda_arch = format!("--cuda-gpu-arch={arch}");
        let march = format!("-march={arch}");
        let mut all: Vec<&str> = match lang {
            ClangLang::Cuda => vec![
                "--cuda-device-only",
                &cuda_arch,
                "-nocudainc",
                "-nocudalib",
                "-S",
                "-o",
                "-",
            ],
            ClangLang::C | ClangLang::LlvmIr => {
                vec!["--target=nvptx64-nvidia-cuda", &march, "-S", "-o", "-"]
            }
        };
        all.extend_from_slice(args);
        self.clang_stdout(source, lang, &all)
    }

    /// clang-19 with `args` on `source` (the file is appended); returns stdout.
    pub(crate) fn clang_stdout(
        &self,
        source: &str,
        lang: ClangLang,
        args: &[&str],
    ) -> Result<String, ToolError> {
        let version = self
            .component(Capability::Clang)
            .ok_or(ToolError::NotAvailable(Capability::Clang))?
            .version
            .clone();
        // The key is what clang reads: the language, the arguments and the source (never the
        // scratch path the source is written to).
        let mut parts = vec![lang.extension()];
        parts.extend_from_slice(args);
        parts.push(source);
        prebuilt::through(
            self.settings.prebuilt.as_deref(),
            prebuilt::Tool::Clang,
            &version,
            &parts,
            || self.run_clang(source, lang, args),
        )
    }

    /// The host's g++ on C++ `source`: the assembly it writes (`-S`), warnings off (the
    /// sources carry CUDA attributes g++ ignores).
    pub(crate) fn gxx_assembly(&self, source: &str) -> Result<String, ToolError> {
        let gxx = self.path(Capability::Gxx)?;
        let dir = tempfile_dir()?;
        let input = dir.path().join("input.cpp");
        std::fs::write(&input, source)?;
        let mut cmd = Command::new(gxx);
        cmd.args(["-x", "c++", "-std=c++17", "-w", "-S", "-o", "-"])
            .arg(&input);
        let out = process::output_within(&mut cmd, "g++", self.tool_timeout())?;
        if !out.status.success() {
            return Err(ToolError::failed(
                "g++",
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn run_clang(&self, source: &str, lang: ClangLang, args: &[&str]) -> Result<String, ToolError> {
        let clang = self.path(Capability::Clang)?;
        let dir = tempfile_dir()?;
        let input = dir.path().join(format!("input.{}", lang.extension()));
        std::fs::write(&input, source)?;
        let mut cmd = Command::new(clang);
        if lang == ClangLang::Cuda {
            cmd.args(["-x", "cuda"]);
        }
        let out = process::output_within(cmd.args(args).arg(&input), "clang", self.tool_timeout())?;
        if !out.status.success() {
            return Err(ToolError::failed(
                "clang",
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// A fresh private temporary directory, removed when dropped.
pub(crate) fn tempfile_dir() -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new().prefix("gpucts-").tempdir()
}

fn describe(cap: Capability) -> &'static str {
    match cap {
        Capability::Ptxas => "ptxas",
        Capability::Nvrtc => "NVRTC (libnvrtc.so)",
        Capability::Nvjitlink => "nvJitLink (libnvJitLink.so)",
        Capability::Libnvvm => "libNVVM (libnvvm.so)",
        Capability::Nvdisasm => "nvdisasm",
        Capability::Cuobjdump => "cuobjdump",
        Capability::Cccl => "libcu++ headers (cuda/atomic)",
        Capability::Clang => "clang-19",
        Capability::Gxx => "g++",
        Capability::Rustc => "rustc with rust-src (nvptx64-nvidia-cuda)",
        Capability::Triton => "Triton",
        Capability::NumbaCuda => "numba-cuda",
        _ => "component",
    }
}

/// The shared library `stem` (e.g. `libnvrtc.so`) in `dir`, unversioned or with the highest
/// version suffix.
fn find_so(dir: &Path, stem: &str) -> Option<PathBuf> {
    let exact = dir.join(stem);
    if exact.is_file() {
        return Some(exact);
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{stem}.")) && !n.contains("alt"))
        })
        .collect();
    candidates.sort();
    candidates.pop()
}

fn locate_in_cuda_root(cap: Capability, root: &Path) -> Option<PathBuf> {
    let file = |p: PathBuf| p.is_file().then_some(p);
    match cap {
        Capability::Ptxas => file(root.join("bin/ptxas")),
        Capability::Nvdisasm => file(root.join("bin/nvdisasm")),
        Capability::Cuobjdump => file(root.join("bin/cuobjdump")),
        Capability::Nvrtc => find_so(&root.join("lib64"), "libnvrtc.so"),
        Capability::Nvjitlink => find_so(&root.join("lib64"), "libnvJitLink.so"),
        Capability::Libnvvm => find_so(&root.join("nvvm/lib64"), "libnvvm.so"),
        Capability::Cccl => ["include", "include/cccl"]
            .iter()
            .map(|d| root.join(d))
            .find(|d| d.join("cuda/atomic").is_file()),
        _ => None,
    }
}

/// An executable named `name` on `PATH` (the `which` crate: executable files only).
fn which(name: &str) -> Option<PathBuf> {
    which::which(name).ok()
}

fn version_of(cap: Capability, path: &Path) -> Result<String, ComponentError> {
    match cap {
        Capability::Ptxas | Capability::Nvdisasm | Capability::Cuobjdump => {
            let out = process::output_within(
                Command::new(path).arg("--version"),
                cap.name(),
                process::PROBE_TIMEOUT,
            )?;
            let text = String::from_utf8_lossy(&out.stdout);
            // NVIDIA tools end with "Cuda compilation tools, release 12.9, V12.9.86".
            text.lines()
                .rev()
                .find_map(|l| l.split_once(", V").map(|(_, v)| v.trim().to_string()))
                .ok_or_else(|| ComponentError::VersionOutput(text.trim().to_string()))
        }
        Capability::Nvrtc => Ok(ffi::Nvrtc::open(path)?.version()),
        Capability::Nvjitlink => Ok(ffi::NvJitLink::open(path)?.version()),
        Capability::Libnvvm => Ok(ffi::Nvvm::open(path)?.version()),
        Capability::Cccl => {
            // <cuda/std/version> or <cuda/version> carries CCCL_VERSION as MMMmmmppp.
            for rel in [
                "cuda/version",
                "cuda/std/__cccl/version.h",
                "cuda/std/detail/__config",
            ] {
                if let Ok(text) = std::fs::read_to_string(path.join(rel)) {
                    if let Some(v) = text.lines().find_map(|l| {
                        let l = l.trim();
                        l.strip_prefix("#define CCCL_VERSION ")
                            .or_else(|| l.strip_prefix("#  define CCCL_VERSION "))
                            .or_else(|| l.strip_prefix("#define _LIBCUDACXX_CUDA_API_VERSION "))
                    }) {
                        if let Ok(n) = v.trim().parse::<u64>() {
                            return Ok(format!(
                                "{}.{}.{}",
                                n / 1_000_000,
                                (n / 1000) % 1000,
                                n % 1000
                            ));
                        }
                    }
                }
            }
            Ok("unknown version".into())
        }
        _ => Ok(String::new()),
    }
}

/// The host's g++ and its version (the first line of `g++ --version`).
fn find_gxx() -> Result<Component, ComponentError> {
    let path = which("g++").ok_or(ComponentError::GxxNotFound)?;
    let out = process::output_within(
        Command::new(&path).arg("--version"),
        "g++",
        process::PROBE_TIMEOUT,
    )?;
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    if version.is_empty() {
        return Err(ComponentError::VersionOutput(
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ));
    }
    Ok(Component {
        path,
        version,
        origin: Origin::System,
    })
}

fn find_clang() -> Result<Component, ComponentError> {
    let path = which("clang-19")
        .or_else(|| Some(PathBuf::from("/usr/lib/llvm-19/bin/clang")).filter(|p| p.is_file()))
        .ok_or(ComponentError::ClangNotFound)?;
    let out = match process::output_within(
        Command::new(&path).arg("--version"),
        "clang-19",
        process::PROBE_TIMEOUT,
    ) {
        Ok(out) => out,
        Err(source) => return Err(ComponentError::ClangDoesNotRun { path, source }),
    };
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    // The NVPTX back end must be built in; llc lists registered targets.
    let llc = path.with_file_name("llc-19");
    let llc = if llc.is_file() {
        llc
    } else {
        PathBuf::from("/usr/lib/llvm-19/bin/llc")
    };
    if let Ok(o) = process::output_within(
        Command::new(&llc).arg("--version"),
        "llc-19",
        process::PROBE_TIMEOUT,
    ) {
        if !String::from_utf8_lossy(&o.stdout).contains("nvptx64") {
            return Err(ComponentError::NoNvptxTarget { path });
        }
    }
    Ok(Component {
        path,
        version,
        origin: Origin::System,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_so_prefers_highest_versioned_name() {
        let d = tempfile_dir().unwrap();
        for n in ["libnvrtc.so.11", "libnvrtc.so.12", "libnvrtc.alt.so.12"] {
            std::fs::write(d.path().join(n), b"").unwrap();
        }
        let p = find_so(d.path(), "libnvrtc.so").unwrap();
        assert_eq!(p.file_name().unwrap(), "libnvrtc.so.12");
    }

    #[test]
    fn hidden_components_are_missing() {
        let mut tc = Toolchain::default();
        tc.found.insert(
            Capability::Clang,
            Component {
                path: PathBuf::from("/usr/bin/clang-19"),
                version: "19".into(),
                origin: Origin::System,
            },
        );
        tc.hide(&["ptxas".to_string(), "clang".to_string()]);
        assert!(!tc.has(Capability::Clang));
        assert_eq!(
            tc.missing()[&Capability::Clang],
            "clang-19 hidden by GPUCTS_HIDE_TOOLS"
        );
        assert!(tc.missing().contains_key(&Capability::Ptxas));
    }

    // Texts compiled several at a time come back in order, each with its own cubin (an ELF
    // image) or its own error: one bad text does not cost the others.
    #[test]
    fn ptxas_many_gives_each_text_its_own_cubin_or_error() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Ptxas), "ptxas");
        let kernel = |name: &str| {
            format!(
                ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry {name}() {{ ret; }}\n"
            )
        };
        let (a, b) = (kernel("first"), kernel("second"));
        let bad =
            ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { nonsense; }\n";
        let out = tc.ptxas_many(&[&a, bad, &b], "sm_90", 2);
        assert_eq!(out.len(), 3);
        for (i, name) in [(0, "first"), (2, "second")] {
            let cubin = out[i].as_ref().unwrap();
            assert_eq!(&cubin[..4], b"\x7fELF", "{name}");
            assert!(
                cubin.windows(name.len()).any(|w| w == name.as_bytes()),
                "{name}'s cubin names its kernel"
            );
        }
        assert!(matches!(&out[1], Err(ToolError::Failed { tool, .. }) if tool == "ptxas"));
        assert!(tc.ptxas_many(&[], "sm_90", 4).is_empty());
    }

    #[test]
    fn missing_tools_are_errors_not_panics() {
        let tc = Toolchain::default();
        assert!(matches!(
            tc.ptxas(".version 8.0", "sm_90", &[]),
            Err(ToolError::NotAvailable(Capability::Ptxas))
        ));
        assert!(matches!(
            tc.nvrtc("", "x.cu", &[]),
            Err(ToolError::NotAvailable(Capability::Nvrtc))
        ));
    }

    /// A clang-19 that the OOM killer ends (a script that sends itself SIGKILL stands in for
    /// it) while `gpucts prebuild` records: the run is `Killed` naming the signal, and the
    /// store keeps nothing, so a rig would not replay the kill as clang refusing the input.
    /// A clang that refuses (exit 1) is kept as the rejection it is.
    #[test]
    fn a_killed_clang_is_not_recorded_as_a_rejection() {
        use std::os::unix::fs::PermissionsExt;
        let bin = tempfile::tempdir().unwrap();
        let fake = |name: &str, body: &str| {
            let path = bin.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let killed = fake(
            "clang-killed",
            "echo 'LLVM ERROR: out of memory' >&2\nkill -KILL $$",
        );
        let refusing = fake("clang-refusing", "echo \"error: expected ';'\" >&2\nexit 1");
        let store_dir = tempfile::tempdir().unwrap();
        let version = "clang version 19.1.7 (fake)";
        let versions = [("clang-19".to_string(), version.to_string())].into();
        let store = prebuilt::Store::create(
            store_dir.path(),
            &[prebuilt::Tool::Clang].into(),
            &versions,
            None,
        )
        .unwrap();
        let mode = Arc::new(prebuilt::Mode::Record(store));
        let with_clang = |path: &Path| {
            let mut tc = Toolchain::default().recording_into(Arc::clone(&mode));
            tc.found.insert(
                Capability::Clang,
                Component {
                    path: path.to_path_buf(),
                    version: version.to_string(),
                    origin: Origin::System,
                },
            );
            tc
        };
        let source = "int f(int x) { return x; }";
        match with_clang(&killed).clang_ptx(source, ClangLang::C, &["-O2"]) {
            Err(ToolError::Killed { signal, log, .. }) => {
                assert_eq!(signal, "SIGKILL (signal 9)");
                assert!(log.contains("out of memory"), "{log}");
            }
            other => panic!("expected a kill: {other:?}"),
        }
        let prebuilt::Mode::Record(store) = &*mode else {
            unreachable!()
        };
        assert_eq!(store.finish([]).unwrap().outputs, 0, "the kill was kept");
        assert!(matches!(
            with_clang(&refusing).clang_ptx(source, ClangLang::C, &["-O2"]),
            Err(ToolError::Failed { .. })
        ));
        assert_eq!(
            store.finish([]).unwrap().outputs,
            1,
            "the refusal was not kept"
        );
    }

    /// ptxas, when present, assembles a minimal module and rejects a malformed one.
    #[test]
    fn ptxas_round_trip_when_present() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Ptxas), "ptxas");
        let ok = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { ret; }\n";
        let cubin = tc.ptxas(ok, "sm_90", &[]).unwrap();
        assert_eq!(&cubin[..4], b"\x7fELF");
        let bad = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n";
        assert!(matches!(
            tc.ptxas(bad, "sm_90", &[]),
            Err(ToolError::Failed { .. })
        ));
    }

    /// NVRTC and nvJitLink, when present: compile a kernel and link its PTX.
    #[test]
    fn nvrtc_then_nvjitlink_when_present() {
        let tc = Toolchain::discover_system();
        crate::require!(
            tc.has(Capability::Nvrtc) && tc.has(Capability::Nvjitlink),
            "NVRTC and nvJitLink"
        );
        let ptx = tc
            .nvrtc(
                "extern \"C\" __global__ void k(int *p) { *p = 42; }",
                "k.cu",
                &["--gpu-architecture=compute_90"],
            )
            .unwrap();
        assert!(ptx.contains(".entry k("), "{ptx}");
        let cubin = tc
            .nvjitlink(
                &[(LinkInputKind::Ptx, "k.ptx", ptx.as_bytes())],
                &["-arch=sm_90"],
            )
            .unwrap();
        assert_eq!(&cubin[..4], b"\x7fELF");
        let err = tc.nvrtc("this is not C++", "bad.cu", &[]).unwrap_err();
        assert!(err.to_string().contains("bad.cu"), "{err}");
    }
}
