//! The command line. Raw flags are parsed here with clap and turned into the runner's inputs;
//! nothing below this module reads `std::env::args`.
//!
//! Exit status is a contract: 0 nothing failed, 101 a case failed (libtest's code), 2 usage or
//! suite-file errors.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::backend::toolchain::{prebuilt, Policy, ToolSettings, Toolchain};
use crate::capability::{Capability, Requirement};
use crate::config::RunConfig;
use crate::report;
use crate::runner::{self, Format, RunEnv};
use crate::suite::{self, Case};
use crate::waivers::Waivers;

pub(crate) const EXIT_OK: i32 = 0;
pub(crate) const EXIT_FAILED: i32 = 101;
pub(crate) const EXIT_USAGE: i32 = 2;

/// Known producer divergences, each investigated, applied unless `--no-default-waivers`.
pub const DEFAULT_WAIVERS: &str = crate::waivers::DEFAULT_FILE;

#[derive(Parser, Debug)]
#[command(
    name = "gpucts",
    version,
    about = "Conformance tests for NVIDIA GPU interoperability: the PTX ABI and GPUDirect RDMA",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    #[command(flatten)]
    run: RunArgs,
    /// The data root: a directory holding suites/ and ptx-corpus/ (a gpucts checkout). Default:
    /// GPUCTS_ROOT, else a checkout at or above the working directory, else the suites
    /// embedded in this binary (`gpucts probe` says which).
    #[arg(long, value_name = "DIR", global = true)]
    root: Option<PathBuf>,
    /// The public corpora folder (Dat3M's PTX litmus tests, ...). Default: ../shared/corpora
    /// beside the checkout; without one, public-corpus cases skip.
    #[arg(long, value_name = "DIR", global = true)]
    corpora: Option<PathBuf>,
    /// No public corpora, not even beside the checkout (what a parent without corpora tells
    /// its isolated children).
    #[arg(long, global = true, hide = true, conflicts_with = "corpora")]
    no_corpora: bool,
    /// Take clang-19 and llc-19 outputs from DIR, made by `gpucts prebuild` on a machine that
    /// has them: on a rig without clang, the clang and llvm cases DIR holds run (the others
    /// skip, naming DIR).
    #[arg(long, value_name = "DIR", global = true)]
    prebuilt: Option<PathBuf>,
    /// The GPU to use: an ordinal (0, 1, ...) as the driver numbers devices, or a UUID as
    /// nvidia-smi -L prints it (GPU-xxxxxxxx-...). Default: 0. Every GPU case, `litmus run`,
    /// `litmus tune` and `--bench` use it; the probe's fingerprint describes it.
    #[arg(long, value_name = "N|UUID", global = true)]
    device: Option<crate::backend::cuda::DeviceSelector>,
}

#[derive(Args, Debug, Default)]
struct RunArgs {
    /// Suite to run: a file stem under suites/ (abi, atomics, ...), a path to a suite file, or
    /// `all`. Repeatable. Default: all.
    #[arg(long = "suite", value_name = "NAME")]
    suites: Vec<String>,
    /// Run only cases whose id contains FILTER (with --exact: equals FILTER).
    #[arg(value_name = "FILTER")]
    filter: Option<String>,
    /// List the selected cases without running them.
    #[arg(long)]
    list: bool,
    /// Match FILTER and --skip exactly instead of as substrings.
    #[arg(long)]
    exact: bool,
    /// Skip cases whose id contains PATTERN. Repeatable.
    #[arg(long = "skip", value_name = "PATTERN")]
    skip: Vec<String>,
    /// Console output format.
    #[arg(long, value_enum, default_value_t = Format::Pretty)]
    format: Format,
    /// Cases run at once, 1..=256 (default: the number of CPUs).
    #[arg(long, value_name = "N", value_parser = parse_jobs)]
    jobs: Option<usize>,
    /// Cases one suite entry may expand to (matrix × table rows; default 100000).
    #[arg(long, value_name = "N", value_parser = parse_max_cases)]
    max_cases: Option<u64>,
    /// Where to write JUnit XML (default: reports/<suite>-<timestamp>/junit.xml).
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Capabilities (or the `toolchain` family) whose absence fails the run instead of
    /// skipping: gpu, toolchain, ptxas, nvrtc, nvjitlink, libnvvm, nvdisasm, cuobjdump, cccl,
    /// clang, kmod, rdma, testprov, peermem, dmabuf.
    #[arg(long, value_name = "CAP[,CAP...]", value_delimiter = ',')]
    require: Vec<String>,
    /// Known failures to report as waived (YAML; see reports/README.md). Repeatable; added to
    /// suites/waivers/known-divergences.yaml.
    #[arg(long, value_name = "FILE")]
    waivers: Vec<PathBuf>,
    /// Do not apply suites/waivers/known-divergences.yaml (every divergence fails).
    #[arg(long)]
    no_default_waivers: bool,
    /// `auto` installs NVIDIA's pinned wheels for missing components; `system` never installs.
    #[arg(long, value_enum, default_value_t = Policy::Auto)]
    toolchain: Policy,
    /// Run a failed case again, up to N times, each in a fresh child; a case that fails and
    /// then passes is reported `flaky`, not passed.
    #[arg(long, value_name = "N", default_value_t = 0)]
    rerun_failures: u32,
    /// Fail a forbidden litmus test whose relaxed control never showed its weak outcome (by
    /// default such a case passes, tagged control-without-weak-outcomes); with
    /// `=PATTERN[,PATTERN...]`, only cases whose ids contain a pattern (e.g.
    /// `--require-weak-controls=inter_cta,inter_cluster`: the placements whose controls can
    /// show weak outcomes on today's GPUs).
    #[arg(long, value_name = "PATTERN,...", num_args = 0..=1, require_equals = true)]
    require_weak_controls: Option<Option<String>>,
    /// Finish a run that was stopped (its reports say `incomplete`): DIR is its report
    /// directory. The run's own command line is used again; the cases its journal holds are
    /// not run again, and the machine's fingerprint and the selected ids must be the same.
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// Run every case that uses a GPU once per device: `all` (every device the driver sees) or
    /// ordinals and UUIDs (`0,2`). Each copy's id ends `@DEVICE` (`abi.gpu.handles.x@2`), and
    /// results.json and JUnit name its device; other cases run once.
    #[arg(long, value_name = "all|N,...", conflicts_with = "device")]
    devices: Option<String>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Describe this machine: OS, kernel, CPU, GPUs, driver, toolchain, kmod, RDMA.
    Probe {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Which spec clauses the suites check, how strongly and where; with RESULTS (a
    /// results.json or its report folder), what the cases did. Clauses no case checks first.
    Coverage {
        /// Print JSON: a list of clauses.
        #[arg(long)]
        json: bool,
        results: Option<PathBuf>,
    },
    /// Check suite files without running anything (default: every file in suites/).
    Validate {
        paths: Vec<PathBuf>,
        /// Cases one suite entry may expand to (matrix × table rows; default 100000).
        #[arg(long, value_name = "N", value_parser = parse_max_cases)]
        max_cases: Option<u64>,
    },
    /// Show or install the offline toolchain.
    Toolchain {
        #[command(subcommand)]
        action: ToolchainCmd,
    },
    /// ABI tools: the layout engine and the parameter-passing linter on your own files.
    Abi {
        #[command(subcommand)]
        action: AbiCmd,
    },
    /// Cross-producer calls: check PTX files meant to be linked together.
    Xcall {
        #[command(subcommand)]
        action: XcallCmd,
    },
    /// Litmus tests: the PTX memory model's verdict, and Dat3M syntax conversion.
    Litmus {
        #[command(subcommand)]
        action: LitmusCmd,
    },
    /// DWARF tools: check the debug information of PTX files and cubins (ptx-interop ch. 5).
    Dwarf {
        #[command(subcommand)]
        action: DwarfCmd,
    },
    /// Print throughput figures (random types verified per second per oracle; model checks).
    /// With `--results DIR`: measure each bench's curves (min / median / max over `--reps`) and
    /// write them as a results set (junit.xml, results.json, report.html) in DIR.
    Bench {
        #[arg(value_enum)]
        area: BenchArea,
        /// How many random types (abi; with --results: the largest batch, at most 100).
        #[arg(long, default_value_t = 2000)]
        count: usize,
        /// Repetitions per measured point, 1..=100 (default 5; gpudirect: --count, 3..100).
        #[arg(long, value_name = "N")]
        reps: Option<usize>,
        /// Record the curves into a results set in DIR (read by `gpucts report`, `diff`).
        #[arg(long, value_name = "DIR")]
        results: Option<PathBuf>,
    },
    /// Run one case in this process and print its result (used for crash isolation).
    /// Write the HTML qualification report of a results directory or bundle.
    Report(crate::report::commands::ReportArgs),
    /// Compare two results sets (directories or bundles); exit 1 on a regression.
    Diff(crate::report::commands::DiffArgs),
    /// Pack a results directory into a qualification bundle (`keygen`, `verify`).
    Bundle(crate::report::commands::BundleArgs),
    /// Merge node results directories (a fleet run) into one results set and report.
    Merge(crate::report::commands::MergeArgs),
    /// Compile the clang-19 and llc-19 outputs the selected cases need into DIR, for a rig
    /// without clang (`gpucts --prebuilt DIR ...` there). Exit 0, 101 when a case's
    /// compilation went wrong, 2 for bad usage or an unusable DIR.
    Prebuild(PrebuildArgs),
    #[command(name = "__case", hide = true)]
    Case {
        #[arg(long)]
        file: PathBuf,
        #[arg(long)]
        id: String,
        /// The case's scratch directory, made and removed by the parent.
        #[arg(long)]
        scratch: Option<PathBuf>,
        /// Where to write the result document for the parent (default: stdout).
        #[arg(long)]
        result: Option<PathBuf>,
        /// The parent's `--max-cases`.
        #[arg(long, value_name = "N", value_parser = parse_max_cases)]
        max_cases: Option<u64>,
    },
}

#[derive(Args, Debug)]
struct PrebuildArgs {
    /// Suites whose cases are prebuilt (as for a run; default: all).
    #[arg(long = "suite", value_name = "NAME")]
    suites: Vec<String>,
    /// Only cases whose id contains FILTER (with --exact: equals FILTER).
    #[arg(value_name = "FILTER")]
    filter: Option<String>,
    /// Match FILTER and --skip exactly instead of as substrings.
    #[arg(long)]
    exact: bool,
    /// Leave out cases whose id contains PATTERN. Repeatable.
    #[arg(long = "skip", value_name = "PATTERN")]
    skip: Vec<String>,
    /// Producers whose outputs are recorded: clang (clang-19), llvm (llc-19).
    #[arg(
        long,
        value_name = "P[,P...]",
        value_delimiter = ',',
        default_value = "clang,llvm"
    )]
    producers: Vec<String>,
    /// The store to write (created, or added to when it holds the same toolchain).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    /// Cases compiled at once, 1..=256 (default: the number of CPUs).
    #[arg(long, value_name = "N", value_parser = parse_jobs)]
    jobs: Option<usize>,
}

#[derive(Subcommand, Debug)]
enum AbiCmd {
    /// Print the ch. 1 layout of every type in a YAML type file as JSON.
    Layout { file: PathBuf },
    /// Check the .param declarations of PTX files against the §2.3 table. Exit 0 when every
    /// file conforms, 1 on a violation, 2 when a file cannot be read or parsed.
    Lint {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Largest PTX file read, in bytes (default 268435456, 256 MiB).
        #[arg(long, value_name = "N")]
        max_ptx_bytes: Option<u64>,
    },
}

#[derive(Subcommand, Debug)]
enum XcallCmd {
    /// Compare every extern declaration and call site with the definition in the other files
    /// (parameter count, state space, type, size, alignment, return value, .callprototype).
    /// Exit 0 when all agree, 1 on a mismatch, 2 when a file cannot be read or parsed.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum DwarfCmd {
    /// Check PTX files, cubins or ELF objects against ptx-interop 13.2 ch. 5 (sections, address
    /// classes, references, names, .file/.loc). Exit 0 when no file has a finding, 1 on a
    /// finding (printed as `file:line: message [clause]`), 2 when a file cannot be read.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum LitmusCmd {
    /// Print `outcome: allowed|forbidden` for a test (YAML or Dat3M .litmus), and for a
    /// forbidden outcome the axiom ruling out each candidate execution.
    Check {
        file: PathBuf,
        /// Loop bound: each loop body runs at most N times (Dat3M's bound; an execution cut
        /// by it makes the outcome `unknown (bound reached)`).
        #[arg(long, default_value_t = crate::atomics::model::DEFAULT_UNROLL)]
        unroll: u32,
        /// `ptx-v6.0` or `ptx-v7.5` (default: v7.5 when the test uses proxies, else v6.0).
        #[arg(long)]
        model: Option<String>,
        /// Whether every execution terminates under a fair scheduler (spin loops, barrier
        /// quorums) instead of the condition.
        #[arg(long)]
        liveness: bool,
        /// The most candidate executions (by the checker's estimate) a test may need
        /// (default 2000000, about a minute).
        #[arg(long, value_name = "N")]
        max_candidates: Option<u64>,
    },
    /// Search stress parameters on GPU 0 under which the relaxed controls show their weak
    /// outcomes: parameter set 0 is the suite's default, the others random (GPUHarbor's
    /// tuning); prints the best sets and each test's best. Exit 0, 101 if any outcome the
    /// model forbids was seen, 2 without a GPU or for an unknown test.
    Tune {
        /// Catalogue tests (`MP.relaxed.cta.intra_cta` or `atomics.gpu.MP.relaxed.cta.intra_cta`);
        /// default: every relaxed control the suite's forbidden cases run.
        tests: Vec<String>,
        /// Parameter sets to try (the default set plus N - 1 random ones).
        #[arg(long, default_value_t = 20)]
        configs: usize,
        /// Seed of the random sets (the same seed gives the same sets).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Launches per test and set.
        #[arg(long, default_value_t = 20)]
        iterations: u64,
        /// Stop starting new runs after this many seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 300)]
        budget: u64,
        /// Also write every run, with its parameters, as JSON.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Run litmus tests (YAML or Dat3M .litmus; a directory is walked) on GPU 0, or with
    /// --emulate in the PTX emulator: each test's outcome histogram, every outcome marked
    /// allowed or forbidden by the model, weak outcomes/s, instances/s. Exit 0; 101 when an
    /// outcome the model forbids was seen; 2 for bad input, no GPU, or a test the generator
    /// cannot express (the construct is named). docs/LITMUS.md describes the --json document.
    Run {
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Launches per test (default 100 on a GPU, 500 in the emulator).
        #[arg(long, value_name = "N")]
        iterations: Option<u64>,
        /// Stress parameters: a `litmus tune --json` record (its best set) or a JSON/YAML
        /// object of StressParams keys.
        #[arg(long, value_name = "F", conflicts_with = "stress")]
        stress_file: Option<PathBuf>,
        /// One stress parameter (a StressParams key), e.g. --stress stress_iterations=512.
        #[arg(long, value_name = "KEY=VALUE")]
        stress: Vec<String>,
        /// Write every test's record as one JSON document.
        #[arg(long, value_name = "F")]
        json: Option<PathBuf>,
        /// Run the generated kernels in the PTX emulator instead of a GPU.
        #[arg(long)]
        emulate: bool,
    },
    /// Write the PTX kernel the GPU runner would launch for a test (YAML or Dat3M), under the
    /// suite's default stress parameters; no GPU needed. Exit 0, 2 for bad input or a test
    /// the generator cannot express (the construct is named).
    Kernel {
        file: PathBuf,
        /// Where to write the PTX.
        #[arg(short = 'o', long = "output", value_name = "OUT.ptx")]
        output: PathBuf,
    },
    /// Convert a Dat3M .litmus file to gpucts YAML (stdout).
    Import { file: PathBuf },
    /// Convert a test (YAML or .litmus) to Dat3M .litmus syntax (stdout).
    Export { file: PathBuf },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
enum BenchArea {
    Abi,
    Atomics,
    Xcall,
    /// Pin/unpin latency, BAR bandwidth, RDMA bandwidth/latency (repetitions: `--reps`, else
    /// `--count`; 3..100).
    Gpudirect,
    /// PTX reader + `abi lint` over ptx-corpus/ (MB/s, files/s) beside ptxas -O0.
    Lint,
    /// Every bench's recorded curves (abi, lint, xcall, atomics, gpudirect); needs --results.
    All,
}

#[derive(Subcommand, Debug)]
enum ToolchainCmd {
    /// What is used and from where.
    Show,
    /// Install the pinned NVIDIA wheels into the cache.
    Install,
}

/// The most cases run at once: each is a thread (and for isolated cases a child process), so a
/// larger figure is a typo that would start that many threads.
pub(crate) const MAX_JOBS: usize = 256;

/// A `--jobs` value clap refuses (exit 2 with this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum JobsError {
    #[error("`{0}` is not a whole number; --jobs is 1..={MAX_JOBS}")]
    NotANumber(String),
    #[error("{0} cases at once is out of range; --jobs is 1..={MAX_JOBS}")]
    OutOfRange(usize),
}

fn parse_jobs(s: &str) -> Result<usize, JobsError> {
    let n: usize = s
        .parse()
        .map_err(|_| JobsError::NotANumber(s.to_string()))?;
    if n == 0 || n > MAX_JOBS {
        return Err(JobsError::OutOfRange(n));
    }
    Ok(n)
}

/// A `--max-cases` value clap refuses (exit 2 with this message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}`: --max-cases is a whole number, at least 1")]
pub(crate) struct MaxCasesError(pub String);

fn parse_max_cases(s: &str) -> Result<u64, MaxCasesError> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(MaxCasesError(s.to_string())),
    }
}

/// The suite-load limits of a command: `--max-cases` (isolated children are told it as a
/// flag).
fn limits(config: &RunConfig) -> suite::Limits {
    suite::Limits::with_max_cases(config.max_cases_per_entry)
}

fn error(msg: impl std::fmt::Display) {
    eprintln!("gpucts: {msg}");
}

pub fn main() -> i32 {
    let mut cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    // `--resume DIR`: the interrupted run's own command line, its reports where they were.
    if let (None, Some(dir)) = (&cli.command, cli.run.resume.clone()) {
        let header = match report::run::read_journal(&dir) {
            Ok((h, _)) => h,
            Err(e) => {
                error(format!("--resume: {e}"));
                return EXIT_USAGE;
            }
        };
        cli = match Cli::try_parse_from(&header.command_line) {
            Ok(c) => c,
            Err(e) => {
                error(format!(
                    "--resume: the interrupted run's command line no longer parses: {e}"
                ));
                return EXIT_USAGE;
            }
        };
        cli.run.junit = Some(header.junit);
        cli.run.resume = Some(dir);
    }
    // The data root is resolved once, by the commands that read suites, and handed down (an
    // unusable --root exits 2 before anything runs); the others never touch it.
    let (root, corpora) = (
        cli.root.clone(),
        // `--no-corpora` is an explicit none: an empty path, which `locate` reads as none.
        if cli.no_corpora {
            Some(PathBuf::new())
        } else {
            cli.corpora.clone()
        },
    );
    // The run's settings: the environment, read here once, and the flags that reach below
    // the command line.
    let mut config = RunConfig::from_env();
    config.max_cases_per_entry = match &cli.command {
        None => cli.run.max_cases,
        Some(Cmd::Validate { max_cases, .. } | Cmd::Case { max_cases, .. }) => *max_cases,
        _ => None,
    };
    config.rerun_failures = cli.run.rerun_failures;
    config.device = cli.device.clone().unwrap_or_default();
    let mut replay = None;
    if let Some(dir) = &cli.prebuilt {
        if matches!(cli.command, Some(Cmd::Prebuild(_))) {
            error("--prebuilt replays a store; prebuild writes one: give one or the other");
            return EXIT_USAGE;
        }
        match prebuilt::Store::open(dir) {
            Ok(store) => replay = Some(Arc::new(prebuilt::Mode::Replay(store))),
            Err(e) => {
                error(e);
                return EXIT_USAGE;
            }
        }
    }
    let tools = ToolSettings::of(&config, replay);
    let config = &config;
    let (root, corpora) = (&root, &corpora);
    match cli.command {
        None => with_data(root, corpora, config, |d| run(&cli.run, config, &tools, d)),
        Some(Cmd::Probe { json }) => {
            with_data(root, corpora, config, |d| probe(json, config, &tools, d))
        }
        Some(Cmd::Validate { paths, .. }) => {
            with_data(root, corpora, config, |d| validate(&paths, config, d))
        }
        Some(Cmd::Coverage { json, results }) => with_data(root, corpora, config, |d| {
            crate::coverage::cli(json, results.as_deref(), d)
        }),
        Some(Cmd::Toolchain { action }) => toolchain(action, &tools),
        Some(Cmd::Abi { action }) => abi(action),
        Some(Cmd::Xcall { action }) => xcall(action),
        Some(Cmd::Litmus { action }) => litmus(action, config),
        Some(Cmd::Dwarf {
            action: DwarfCmd::Check { files },
        }) => crate::dwarf::check::cli(&files, config),
        Some(Cmd::Bench {
            area,
            count,
            reps,
            results,
        }) => match results {
            Some(dir) => with_data(root, corpora, config, |d| {
                bench_record(area, count, reps, &dir, config, &tools, d)
            }),
            None if area == BenchArea::All => {
                error("bench all: records the curves of every bench; give --results DIR");
                EXIT_USAGE
            }
            // gpudirect's repetitions were `--count` before `--reps` existed
            None if area == BenchArea::Gpudirect => with_data(root, corpora, config, |d| {
                bench(area, reps.unwrap_or(count), config, &tools, d)
            }),
            None => with_data(root, corpora, config, |d| {
                bench(area, count, config, &tools, d)
            }),
        },
        Some(Cmd::Report(a)) => crate::report::commands::report(a),
        Some(Cmd::Diff(a)) => crate::report::commands::diff(a),
        Some(Cmd::Bundle(a)) => with_data(root, corpora, config, |d| {
            crate::report::commands::bundle(a, &d.path)
        }),
        Some(Cmd::Merge(a)) => crate::report::commands::merge(a),
        Some(Cmd::Prebuild(a)) => {
            with_data(root, corpora, config, |d| prebuild(&a, config, &tools, d))
        }
        Some(Cmd::Case {
            file,
            id,
            scratch,
            result,
            ..
        }) => with_data(root, corpora, config, |d| {
            child_case(
                &file,
                &id,
                scratch.as_deref(),
                result.as_deref(),
                config,
                &tools,
                d,
            )
        }),
    }
}

/// Run `f` with this command's data root, or exit 2 naming why there is none.
fn with_data(
    root: &Option<PathBuf>,
    corpora: &Option<PathBuf>,
    config: &RunConfig,
    f: impl FnOnce(&crate::data::DataRoot) -> i32,
) -> i32 {
    match crate::data::DataRoot::locate(root.as_deref(), corpora.as_deref(), config) {
        Ok(d) => f(&d),
        Err(e) => {
            error(e);
            EXIT_USAGE
        }
    }
}

fn probe(
    json: bool,
    config: &RunConfig,
    tools: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    let tc = Toolchain::discover_with(tools.clone());
    let (p, _) = crate::probe::probe_for(&tc, &config.device);
    if json {
        let mut v = serde_json::to_value(&p).unwrap_or_default();
        if let (Some(o), Ok(d)) = (v.as_object_mut(), serde_json::to_value(data)) {
            o.insert("data".into(), d);
        }
        match serde_json::to_string_pretty(&v) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                error(e);
                return EXIT_USAGE;
            }
        }
    } else {
        print!("{}", p.render());
        print!("{}", data.describe());
    }
    EXIT_OK
}

fn print_load_errors(errors: &[suite::SuiteError]) {
    for e in errors {
        error(e);
    }
}

/// The loaded suites, when no case's area refuses its content (what a run would meet: a
/// missing file, an unknown producer or test name; issue 10).
fn checked(
    suites: Vec<suite::LoadedSuite>,
    data: &crate::data::DataRoot,
) -> Result<Vec<suite::LoadedSuite>, Vec<suite::SuiteError>> {
    let errors = suite::validate_cases(&suites, &data.path);
    if errors.is_empty() {
        Ok(suites)
    } else {
        Err(errors)
    }
}

fn validate(paths: &[PathBuf], config: &RunConfig, data: &crate::data::DataRoot) -> i32 {
    let root = &data.path;
    let files = if paths.is_empty() {
        match suite::resolve_suite_arg("all", &root.join("suites")) {
            Ok(f) => f,
            Err(e) => {
                error(e);
                return EXIT_USAGE;
            }
        }
    } else {
        paths.to_vec()
    };
    match suite::load_suites_with(&files, &crate::areas::all(), &limits(config))
        .and_then(|s| checked(s, data))
    {
        Ok(suites) => {
            let n: usize = suites.iter().map(|s| s.cases.len()).sum();
            for s in &suites {
                println!(
                    "{}: {} cases ({}{}{})",
                    s.file.display(),
                    s.cases.len(),
                    s.area,
                    if s.description.is_empty() { "" } else { ": " },
                    s.description
                );
            }
            println!("gpucts: {} suite files valid, {n} cases", suites.len());
            EXIT_OK
        }
        Err(errors) => {
            print_load_errors(&errors);
            EXIT_USAGE
        }
    }
}

fn toolchain(action: ToolchainCmd, tools: &ToolSettings) -> i32 {
    if let ToolchainCmd::Install = action {
        match crate::backend::toolchain::managed::install(
            tools.cache_root.as_deref(),
            &mut std::io::stderr(),
        ) {
            Ok(dir) => println!("installed: {}", dir.display()),
            Err(e) => {
                error(format!("toolchain install failed: {e}"));
                return EXIT_FAILED;
            }
        }
    }
    let tc = Toolchain::discover_with(tools.clone());
    for (cap, c) in tc.components() {
        println!(
            "{:<10} {:<22} {:<8} {}",
            cap.name(),
            c.version,
            c.origin.name(),
            c.path.display()
        );
    }
    for (cap, why) in tc.missing() {
        println!("{:<10} {:<22} {:<8} {}", cap.name(), "-", "missing", why);
    }
    if let Some(site) = tools.site_dir() {
        println!("managed cache: {}", site.display());
    }
    EXIT_OK
}

fn abi(action: AbiCmd) -> i32 {
    match action {
        AbiCmd::Layout { file } => match crate::abi::type_file::layout_file_json(&file) {
            Ok(json) => {
                println!("{json}");
                EXIT_OK
            }
            Err(e) => {
                error(e);
                EXIT_USAGE
            }
        },
        AbiCmd::Lint {
            files,
            max_ptx_bytes,
        } => {
            let max = max_ptx_bytes.unwrap_or(crate::ptx::module::MAX_PTX_BYTES);
            let mut code = EXIT_OK;
            let (mut functions, mut findings) = (0usize, 0usize);
            for f in &files {
                match crate::abi::lint::lint_file_within(f, max) {
                    Ok(r) => {
                        for v in &r.violations {
                            println!("{v}");
                        }
                        functions += r.functions;
                        findings += r.violations.len();
                        if !r.violations.is_empty() && code == EXIT_OK {
                            code = 1;
                        }
                    }
                    Err(e) => {
                        error(e);
                        code = EXIT_USAGE;
                    }
                }
            }
            // issue 17 item 3: a clean run says what it checked.
            println!(
                "{} files, {functions} functions checked, {findings} findings",
                files.len()
            );
            code
        }
    }
}

fn xcall(action: XcallCmd) -> i32 {
    match action {
        XcallCmd::Check { files } => {
            let checked = crate::xcall::check::run(&files);
            print!("{}", checked.stdout());
            eprint!("{}", checked.stderr());
            checked.exit_code()
        }
    }
}

fn litmus(action: LitmusCmd, config: &RunConfig) -> i32 {
    use crate::atomics::litmus;
    // (text for stdout, exit code) or a message for stderr (exit 2).
    let r: Result<(String, i32), String> = match &action {
        LitmusCmd::Check {
            file,
            unroll,
            model,
            liveness,
            max_candidates,
        } => crate::atomics::model::check_file_with(
            file,
            *unroll,
            model.as_deref(),
            *liveness,
            max_candidates.map(u128::from),
        )
        .map(|v| (v.to_string(), EXIT_OK))
        .map_err(|e| e.to_string()),
        LitmusCmd::Kernel { file, output } => {
            crate::atomics::gpu::kernel_command(file, output).map(|t| (t, EXIT_OK))
        }
        LitmusCmd::Run {
            files,
            iterations,
            stress_file,
            stress,
            json,
            emulate,
        } => {
            use crate::atomics::gpu::litmus_run::{command, Request, StressSource};
            let req = Request {
                files: files.clone(),
                iterations: *iterations,
                stress: match (stress_file, stress.is_empty()) {
                    (Some(f), _) => StressSource::File(f.clone()),
                    (None, false) => StressSource::Pairs(stress.clone()),
                    (None, true) => StressSource::Defaults,
                },
                json: json.clone(),
                emulate: *emulate,
                device: config.device.clone(),
            };
            // Each test's report is printed as it finishes (a corpus run takes a while).
            command(&req, &mut |t| print!("{t}"))
                .map(|code| (String::new(), code))
                .map_err(|e| e.to_string())
        }
        LitmusCmd::Import { file } => litmus::import_file(file)
            .map(|t| (t, EXIT_OK))
            .map_err(|e| e.to_string()),
        LitmusCmd::Export { file } => litmus::export_file(file)
            .map(|t| (t, EXIT_OK))
            .map_err(|e| e.to_string()),
        LitmusCmd::Tune {
            tests,
            configs,
            seed,
            iterations,
            budget,
            json,
        } => crate::atomics::gpu::tune::run_command(
            &config.device,
            tests,
            *configs,
            *seed,
            *iterations,
            std::time::Duration::from_secs(*budget),
            json.as_deref(),
        )
        .map(|(t, forbidden)| (t, if forbidden { EXIT_FAILED } else { EXIT_OK }))
        .map_err(|e| e.to_string()),
    };
    match r {
        Ok((text, code)) => {
            print!("{text}");
            if !text.is_empty() && !text.ends_with('\n') {
                println!();
            }
            code
        }
        Err(e) => {
            error(e);
            EXIT_USAGE
        }
    }
}

/// `gpucts bench AREA --results DIR`: measure the area's curves and write them as a results
/// set (`crate::bench`); exit 2 when DIR cannot be written.
fn bench_record(
    area: BenchArea,
    count: usize,
    reps: Option<usize>,
    dir: &Path,
    config: &RunConfig,
    tools: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    let reps = match crate::bench::check_reps(reps.unwrap_or(5)) {
        Ok(r) => r,
        Err(e) => {
            error(e);
            return EXIT_USAGE;
        }
    };
    let root = data.path.clone();
    let paths = match report::run::prepare(Some(&dir.join("junit.xml")), &root, "bench") {
        Ok(p) => p,
        Err(e) => {
            error(e);
            return EXIT_USAGE;
        }
    };
    let started = time::OffsetDateTime::now_utc();
    let tc = Toolchain::discover_with(tools.clone());
    let (probe, caps) = crate::probe::probe_for(&tc, &config.device);
    let fingerprint = probe.fingerprint();
    let o = crate::bench::Options { reps, count };
    let all = area == BenchArea::All;
    let mut blocks = Vec::new();
    if all || area == BenchArea::Abi {
        blocks.extend(crate::bench::abi(&tc, &caps, o));
    }
    if all || area == BenchArea::Lint {
        blocks.extend(crate::bench::lint(&root, o));
    }
    if all || area == BenchArea::Xcall {
        blocks.extend(crate::bench::xcall(o));
    }
    if all || area == BenchArea::Atomics {
        blocks.extend(crate::bench::atomics(o, &config.device));
    }
    if all || area == BenchArea::Gpudirect {
        blocks.extend(crate::gpudirect::bench::blocks(reps.max(3), config));
    }
    for b in &blocks {
        print!("{}", b.text);
    }
    let results: Vec<_> = blocks.iter().map(crate::bench::case_result).collect();
    let mut record = report::run::RunRecord::new(
        &root,
        &[],
        &[],
        &[],
        serde_json::to_value(&probe).ok(),
        started,
    );
    record.run.wall_s = blocks.iter().map(|b| b.secs).sum();
    let written = report::run::write(&results, &fingerprint, &paths, &mut record);
    for e in &written.errors {
        error(e);
    }
    if let Some(p) = written.path("results") {
        println!("JSON results: {}", p.display());
    }
    if let Some(p) = written.path("html") {
        println!("HTML report: {}", p.display());
    }
    let figures: usize = blocks.iter().map(|b| b.figures.len()).sum();
    let skipped = blocks.iter().filter(|b| b.skipped.is_some()).count();
    println!(
        "gpucts bench: {} measured, {skipped} skipped, {figures} figures",
        blocks.len() - skipped
    );
    if written.errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_USAGE
    }
}

fn bench(
    area: BenchArea,
    count: usize,
    config: &RunConfig,
    tools: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    let tc = Toolchain::discover_with(tools.clone());
    match area {
        BenchArea::All => return EXIT_USAGE,
        BenchArea::Gpudirect => {
            print!("{}", crate::gpudirect::bench::run(count, config));
        }
        BenchArea::Lint => {
            print!(
                "{}",
                crate::abi::lint_corpus::bench(&tc, &data.path.join("ptx-corpus"))
            );
        }
        BenchArea::Abi => {
            println!("abi: random types verified per second, {count} types, one compilation per {} types", crate::abi::oracle::BATCH);
            print!("{}", crate::abi::oracle::bench(&tc, count));
        }
        BenchArea::Xcall => {
            // The tools' rate: no output answered from the disk cache.
            let cold = Toolchain::discover_with(ToolSettings {
                output_cache: false,
                ..tools.clone()
            });
            print!("{}", crate::xcall::bench(&cold))
        }
        BenchArea::Atomics => {
            use crate::atomics::{catalog, mapping, model};
            let tests = catalog::catalog();
            let t0 = std::time::Instant::now();
            let mut candidates = 0usize;
            for t in &tests {
                candidates += model::check(t).candidates;
            }
            let secs = t0.elapsed().as_secs_f64();
            println!(
                "model: {} catalogue tests in {secs:.3} s = {:.0} tests/s ({candidates} candidate executions, {:.0}/s)",
                tests.len(),
                tests.len() as f64 / secs,
                candidates as f64 / secs
            );
            print!("{}", crate::atomics::corpus::bench(data));
            for producer in mapping::source::producers() {
                let cases = mapping::source::cases_for(producer);
                let t0 = std::time::Instant::now();
                let verdicts = mapping::run_batch(&tc, producer, &cases);
                let secs = t0.elapsed().as_secs_f64();
                let conform = verdicts.iter().filter(|(_, v)| v.is_conforming()).count();
                println!(
                    "mapping {:<6} {} cases in {secs:.2} s = {:.0} cases/s ({conform} conform)",
                    producer.name(),
                    cases.len(),
                    cases.len() as f64 / secs
                );
            }
        }
    }
    EXIT_OK
}

fn child_case(
    file: &Path,
    id: &str,
    scratch: Option<&Path>,
    result: Option<&Path>,
    config: &RunConfig,
    tools: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    runner::child::die_with_parent();
    let suite = match suite::load_file_with(file, &crate::areas::all(), &limits(config)) {
        Ok(s) => s,
        Err(errors) => {
            print_load_errors(&errors);
            return EXIT_USAGE;
        }
    };
    let Some(case) = suite.cases.iter().find(|c| c.id == id) else {
        error(format!("no case `{id}` in {}", file.display()));
        return EXIT_USAGE;
    };
    let tc = Toolchain::discover_with(tools.clone());
    let (_, caps) = crate::probe::probe_for(&tc, &config.device);
    // A child runs one case: its batches compute that case's member only.
    let scope = runner::run_scope(std::slice::from_ref(case), &Default::default(), &tc);
    let executed = runner::run_in_process(case, config, &scope, &caps, &tc, data, scratch);
    let written = match result {
        Some(path) => runner::child::write_result(path, &executed),
        None => serde_json::to_string(&executed)
            .map(|s| println!("{s}"))
            .map_err(std::io::Error::other),
    };
    match written {
        Ok(()) => EXIT_OK,
        Err(e) => {
            error(format!("cannot write the result: {e}"));
            EXIT_USAGE
        }
    }
}

/// The suite files `--suite` names (none: all), sorted, each once; `None` (after printing
/// why) when a name resolves to nothing.
fn suite_files(names: &[String], data: &crate::data::DataRoot) -> Option<Vec<PathBuf>> {
    let all = ["all".to_string()];
    let names = if names.is_empty() { &all[..] } else { names };
    let mut files = Vec::new();
    for s in names {
        match suite::resolve_suite_arg(s, &data.path.join("suites")) {
            Ok(f) => files.extend(f),
            Err(e) => {
                error(e);
                return None;
            }
        }
    }
    files.sort();
    files.dedup();
    Some(files)
}

/// The tools `--producers` names, in prebuild's terms; a usage error otherwise.
fn prebuild_tools(
    producers: &[String],
) -> Result<std::collections::BTreeSet<prebuilt::Tool>, String> {
    use crate::backend::toolchain::prebuilt::Tool;
    let mut tools = std::collections::BTreeSet::new();
    for p in producers {
        let Some(t) = Tool::from_producer(p) else {
            return Err(format!(
                "--producers: `{p}` is not one prebuild records (clang, llvm); the NVIDIA \
                 producers run on the rig, from its CUDA or the pinned wheels"
            ));
        };
        tools.insert(t);
    }
    // The two share clang-19's LLVM and the suites use both for one producer (atomics'
    // `llvm` runs clang-19 on LLVM IR, xcall's and dwarf's run llc-19): a store of one alone
    // would list cases whose other outputs it lacks.
    if tools.len() != Tool::ALL.len() {
        return Err(
            "--producers: clang and llvm are recorded together (the llvm producer runs \
                    clang-19 on LLVM IR in atomics and llc-19 elsewhere): give --producers \
                    clang,llvm"
                .to_string(),
        );
    }
    Ok(tools)
}

/// The cases of `suites` the selection (`filter`, `--exact`, `--skip`) picks; the load errors
/// are printed.
fn selected_cases(
    suites: &[String],
    selection: &runner::Selection,
    config: &RunConfig,
    data: &crate::data::DataRoot,
) -> Option<Vec<Case>> {
    let files = suite_files(suites, data)?;
    match suite::load_suites_with(&files, &crate::areas::all(), &limits(config))
        .and_then(|s| checked(s, data))
    {
        Ok(s) => Some(
            s.into_iter()
                .flat_map(|s| s.cases)
                .filter(|c| selection.selects(&c.id))
                .collect(),
        ),
        Err(errors) => {
            print_load_errors(&errors);
            None
        }
    }
}

fn prebuild(
    args: &PrebuildArgs,
    config: &RunConfig,
    tools_settings: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    let tools = match prebuild_tools(&args.producers) {
        Ok(t) => t,
        Err(e) => {
            error(e);
            return EXIT_USAGE;
        }
    };
    let selection = runner::Selection {
        filter: args.filter.clone(),
        exact: args.exact,
        skip: args.skip.clone(),
        ..Default::default()
    };
    let Some(cases) = selected_cases(&args.suites, &selection, config, data) else {
        return EXIT_USAGE;
    };
    let toolchain = Toolchain::discover_with(tools_settings.clone());
    let Some(clang) = toolchain.component(Capability::Clang) else {
        error(format!(
            "nothing to prebuild with: {}",
            toolchain
                .missing()
                .get(&Capability::Clang)
                .map_or("clang-19 not found", String::as_str)
        ));
        return EXIT_USAGE;
    };
    // llc-19 is clang-19's LLVM: one version for both.
    let versions = tools
        .iter()
        .map(|t| (t.name().to_string(), clang.version.clone()))
        .collect();
    let ptxas = toolchain
        .component(Capability::Ptxas)
        .map(|c| c.version.as_str());
    let store = match prebuilt::Store::create(&args.output, &tools, &versions, ptxas) {
        Ok(s) => s,
        Err(e) => {
            error(e);
            return EXIT_USAGE;
        }
    };
    let mode = Arc::new(prebuilt::Mode::Record(store));
    let toolchain = toolchain.recording_into(Arc::clone(&mode));
    let Some(store) = toolchain.recording() else {
        error("the prebuilt store is not recording");
        return EXIT_USAGE;
    };
    let (_, caps) = crate::probe::probe_for(&toolchain, &config.device);
    let jobs = args
        .jobs
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1);
    let t0 = std::time::Instant::now();
    let done = runner::prebuild::prebuild(&cases, config, &caps, &toolchain, data, jobs);
    finish_prebuild(&done, store, &tools, t0.elapsed())
}

/// Prebuild's closing: the reasons cases were not prebuilt, the store's manifest, the summary
/// line and the exit code.
fn finish_prebuild(
    done: &runner::prebuild::Prebuilt,
    store: &prebuilt::Store,
    tools: &std::collections::BTreeSet<prebuilt::Tool>,
    elapsed: std::time::Duration,
) -> i32 {
    // The first few of each kind, then a count: a whole missing component is one reason
    // repeated for thousands of cases.
    const SHOWN: usize = 20;
    for (what, list) in [
        ("not prebuilt", &done.not_prebuilt),
        ("error", &done.errors),
    ] {
        for (id, why) in list.iter().take(SHOWN) {
            eprintln!("{what}: {id}: {why}");
        }
        if list.len() > SHOWN {
            eprintln!("{what}: ... and {} more", list.len() - SHOWN);
        }
    }
    let manifest = match store.finish(done.compiled.iter().cloned()) {
        Ok(m) => m,
        Err(e) => {
            error(e);
            return EXIT_FAILED;
        }
    };
    println!(
        "gpucts prebuild: {} cases compiled, {} not prebuilt, {} errors ({} selected cases use \
         neither clang-19 nor llc-19); {} outputs of {} in {} ({:.0} s)",
        done.compiled.len(),
        done.not_prebuilt.len(),
        done.errors.len(),
        done.without_clang,
        manifest.outputs,
        tools
            .iter()
            .map(|t| t.name())
            .collect::<Vec<_>>()
            .join(", "),
        store.dir().display(),
        elapsed.as_secs_f64()
    );
    if store.write_failed() {
        error(format!(
            "some outputs could not be written to {}: the store is incomplete",
            store.dir().display()
        ));
        return EXIT_FAILED;
    }
    if done.errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

/// What a run reads before anything runs: the suite files, their suites, `--require` and the
/// waivers.
struct RunInputs {
    files: Vec<PathBuf>,
    cases: Vec<Case>,
    requires: Vec<Requirement>,
    waivers: Waivers,
}

/// The run's inputs, or `None` after printing what is wrong with them (exit 2).
fn run_inputs(
    args: &RunArgs,
    config: &RunConfig,
    data: &crate::data::DataRoot,
) -> Option<RunInputs> {
    let files = suite_files(&args.suites, data)?;
    let suites = match suite::load_suites_with(&files, &crate::areas::all(), &limits(config))
        .and_then(|s| checked(s, data))
    {
        Ok(s) => s,
        Err(errors) => {
            print_load_errors(&errors);
            error(format!(
                "{} error(s) in suite files; nothing was run",
                errors.len()
            ));
            return None;
        }
    };
    let requires = match Requirement::parse_all(&args.require) {
        Ok(r) => r,
        Err(e) => {
            error(format!("--require: {e}"));
            return None;
        }
    };
    let waivers = match Waivers::load_run(&data.path, args.no_default_waivers, &args.waivers) {
        Ok(w) => w,
        Err(e) => {
            error(e);
            return None;
        }
    };
    Some(RunInputs {
        files,
        cases: suites.into_iter().flat_map(|s| s.cases).collect(),
        requires,
        waivers,
    })
}

fn run(
    args: &RunArgs,
    config: &RunConfig,
    tools: &ToolSettings,
    data: &crate::data::DataRoot,
) -> i32 {
    let root = data.path.clone();
    let suites_arg = if args.suites.is_empty() {
        vec!["all".to_string()]
    } else {
        args.suites.clone()
    };
    let name = report::run::report_name(&suites_arg);

    // Everything that can be wrong with the invocation or the suite files is found before
    // anything runs, and exits 2.
    let Some(RunInputs {
        files,
        cases,
        requires,
        waivers,
    }) = run_inputs(args, config, data)
    else {
        return EXIT_USAGE;
    };
    let cases = match &args.devices {
        None => cases,
        Some(spec) => {
            let seen = crate::backend::cuda::probe().ok().map(|d| d.gpus);
            match runner::devices::parse(spec, seen.as_deref()) {
                Ok(devices) => runner::devices::per_device(cases, &devices),
                Err(e) => {
                    error(e);
                    return EXIT_USAGE;
                }
            }
        }
    };
    let selection = runner::Selection {
        filter: args.filter.clone(),
        exact: args.exact,
        skip: args.skip.clone(),
        list: args.list,
        jobs: args.jobs,
        format: args.format,
    };
    if args.list {
        runner::list(cases, data, &selection);
        return EXIT_OK;
    }

    // Report paths are checked before anything runs (exit 2 with the path and the OS error).
    let paths = match report::run::prepare(args.junit.as_deref(), &data.reports_base(), &name) {
        Ok(p) => p,
        Err(e) => {
            error(e);
            return EXIT_USAGE;
        }
    };

    // Provision the toolchain only when a selected case needs part of it.
    let toolchain = if selection.needs_toolchain(&cases) {
        Toolchain::provision(args.toolchain, tools.clone())
    } else {
        Toolchain::discover_with(tools.clone())
    };
    let (probe, caps) = crate::probe::probe_for(&toolchain, &config.device);
    let fingerprint = probe.fingerprint();
    let waiver_files = report::run::waiver_files(&root, args.no_default_waivers, &args.waivers);
    let mut record = report::run::RunRecord::new(
        &root,
        &files,
        &waiver_files,
        &args.require,
        serde_json::to_value(&probe).ok(),
        time::OffsetDateTime::now_utc(),
    );
    record.run.rerun_failures = args.rerun_failures;
    let weak_controls = runner::WeakControls::from_flag(args.require_weak_controls.clone());
    if let Some(patterns) = weak_controls.patterns() {
        record.run.require_weak_controls = true;
        record.run.require_weak_controls_for = patterns;
    }
    let gpu = caps
        .has(Capability::Gpu)
        .then(|| fingerprint.get("gpu").cloned().unwrap_or_default());
    let have = toolchain.components().len();
    eprintln!(
        "{}",
        report::run::banner(
            cases.len(),
            &name,
            gpu.as_deref(),
            have,
            have + toolchain.missing().len()
        )
    );

    // What an interrupted run finished, when this one resumes it: the same machine and the
    // same selected cases, or nothing runs.
    let done = match &args.resume {
        None => Vec::new(),
        Some(dir) => match resumable(dir, &fingerprint, &cases, &selection) {
            Ok(done) => done,
            Err(e) => {
                error(format!("--resume {}: {e}", dir.display()));
                return EXIT_USAGE;
            }
        },
    };
    let mut reports = report::run::ReportSink::new(paths, record, fingerprint.clone());
    if args.resume.is_some() {
        reports = reports.resuming();
    }
    let stop = match runner::stop::Stop::on_signals() {
        Ok(s) => s,
        Err(e) => {
            error(format!("cannot watch for SIGINT/SIGTERM: {e}"));
            runner::stop::Stop::never()
        }
    };
    let scope = runner::run_scope(&cases, &selection, &toolchain);
    let env = Arc::new(RunEnv {
        config: config.clone(),
        scope,
        resources: runner::Resources::new(),
        caps,
        toolchain,
        data: data.clone(),
        exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("gpucts")),
        requires,
        require_weak_controls: weak_controls,
        waivers,
        fingerprint,
        results: Mutex::new(Vec::new()),
        stop,
    });
    let outcome = runner::run_resumed(
        cases,
        Arc::clone(&env),
        &selection,
        &mut [&mut reports],
        done,
    );
    finish_run(args.format, &mut reports, &outcome)
}

/// The finished cases of the interrupted run in `dir`, if this run can finish it: this
/// machine's fingerprint is the one it ran on, and the same cases are selected.
fn resumable(
    dir: &std::path::Path,
    fingerprint: &std::collections::BTreeMap<String, String>,
    cases: &[suite::Case],
    selection: &runner::Selection,
) -> Result<Vec<runner::CaseResult>, String> {
    let (header, done) = report::run::read_journal(dir)?;
    let changed: Vec<String> = header
        .fingerprint
        .keys()
        .chain(fingerprint.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|k| header.fingerprint.get(*k) != fingerprint.get(*k))
        .map(|k| {
            format!(
                "{k}: was {}, now {}",
                header.fingerprint.get(k).map_or("-", String::as_str),
                fingerprint.get(k).map_or("-", String::as_str)
            )
        })
        .collect();
    if !changed.is_empty() {
        return Err(format!(
            "this machine is not the one the run started on ({})",
            changed.join("; ")
        ));
    }
    let ids: Vec<&str> = cases
        .iter()
        .filter(|c| selection.selects(&c.id))
        .map(|c| c.id.as_str())
        .collect();
    if ids != header.ids.iter().map(String::as_str).collect::<Vec<_>>() {
        return Err(format!(
            "the suites now select {} cases where the run selected {}: the run cannot be \
             finished with the same ids",
            ids.len(),
            header.ids.len()
        ));
    }
    Ok(done)
}

/// A run's closing: the report files' errors, the JSON report event, the closing lines and the
/// exit code.
fn finish_run(
    format: Format,
    reports: &mut report::run::ReportSink,
    outcome: &runner::RunOutcome,
) -> i32 {
    let written = reports.written();
    for e in &written.errors {
        error(e);
    }
    if format == Format::Json {
        println!("{}", report::run::report_event(&written, &outcome.tally));
    }
    // The closing lines go to stderr when stdout is JSON events.
    let mut lines = report::run::closing_lines(&outcome.results, &outcome.tally, &written);
    if !outcome.not_run.is_empty() {
        let dir = written
            .path("results")
            .and_then(|p| p.parent())
            .map(|d| d.display().to_string())
            .unwrap_or_else(|| "DIR".into());
        lines.push(format!(
            "gpucts: incomplete: the run was stopped; {} of {} selected cases did not run \
             (finish it: gpucts --resume {dir})",
            outcome.not_run.len(),
            outcome.not_run.len() + outcome.results.len()
        ));
    }
    for line in lines {
        if format == Format::Json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    if !written.errors.is_empty() {
        EXIT_USAGE
    } else if !outcome.not_run.is_empty() {
        runner::stop::EXIT_INTERRUPTED
    } else if outcome.failed() {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}
