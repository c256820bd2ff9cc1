//! The command line. Raw flags are parsed here with clap and turned into the runner's inputs;
//! nothing below this module reads `std::env::args`.
//!
//! Exit status is a contract: 0 nothing failed, 101 a case failed (libtest's code), 2 usage or
//! suite-file errors.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::backend::toolchain::{prebuilt, Policy, ToolSettings};
use crate::config::RunConfig;
use crate::report;
use crate::runner::Format;
use crate::suite;

mod bench;
mod commands;
mod prebuild;
mod run;

use bench::{bench, bench_record};
use commands::{abi, litmus, probe, toolchain, validate, xcall};
use prebuild::prebuild;
use run::{child_case, run};

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
    /// A file describing compilers gpucts does not know (name, language, command line with
    /// {input} {output} {arch}, version command; README "Your own producer"): each runs as a
    /// producer in the suite entries that take user producers (abi.params, xcall pairs).
    /// Repeatable.
    #[arg(long = "producer-file", value_name = "FILE", global = true)]
    producer_files: Vec<PathBuf>,
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
    /// Producers whose outputs are recorded: clang (clang-19) and llvm (llc-19) always, rustc
    /// when named.
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
    Install {
        /// Python front ends to install as well, each pinned into its own directory of the
        /// cache: `triton` (about 1 GB), `numba-cuda` (about 360 MB).
        #[arg(long, value_delimiter = ',', value_name = "FRONT_END")]
        with: Vec<crate::backend::toolchain::python::FrontEnd>,
    },
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

/// Producers from files join the registry before anything asks for producers; a file that
/// does not read, or a compiler whose version command does not run, is a usage error (false,
/// after saying why).
fn register_producer_files(files: &[PathBuf]) -> bool {
    if files.is_empty() {
        return true;
    }
    match crate::backend::producer::user::register(files) {
        Ok(()) => true,
        Err(e) => {
            error(e);
            false
        }
    }
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
    if !register_producer_files(&cli.producer_files) {
        return EXIT_USAGE;
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
    // A device the driver does not see is a usage error naming those it sees (without a
    // driver there is nothing to check: the GPU cases skip naming the GPU).
    if let Some(device) = &cli.device {
        if let Ok(driver) = crate::backend::cuda::probe() {
            if let Err(e) = device.resolve(&driver.gpus) {
                error(e);
                return EXIT_USAGE;
            }
        }
    }
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
        Some(Cmd::Litmus { action }) => litmus(action, config, &tools),
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

fn print_load_errors(errors: &[suite::SuiteError]) {
    for e in errors {
        error(e);
    }
}

/// The loaded suites, when no case's area refuses its content (what a run would meet: a
/// missing file, an unknown producer or test name; issue 10).
fn checked(
    mut suites: Vec<suite::LoadedSuite>,
    data: &crate::data::DataRoot,
) -> Result<Vec<suite::LoadedSuite>, Vec<suite::SuiteError>> {
    suite::drop_out_of_view(&mut suites, &data.path);
    let errors = suite::validate_cases(&suites, &data.path);
    if errors.is_empty() {
        Ok(suites)
    } else {
        Err(errors)
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
