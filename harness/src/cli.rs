//! The command line. Raw flags are parsed here with clap and turned into the runner's inputs;
//! nothing below this module reads `std::env::args`.
//!
//! Exit status is a contract: 0 nothing failed, 101 a case failed (libtest's code), 2 usage or
//! suite-file errors.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::backend::toolchain::{managed, Policy, Toolchain};
use crate::capability::{Capability, Requirement};
use crate::runner::{self, RunEnv, Tally};
use crate::suite::{self, Case};
use crate::waivers::Waivers;

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILED: i32 = 101;
pub const EXIT_USAGE: i32 = 2;

/// Known producer divergences, each investigated, applied unless `--no-default-waivers`.
pub const DEFAULT_WAIVERS: &str = "suites/waivers/known-divergences.yaml";

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
    /// Cases run at once (default: the number of CPUs).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Where to write JUnit XML (default: reports/<suite>-<timestamp>/junit.xml).
    #[arg(long, value_name = "PATH")]
    junit: Option<PathBuf>,
    /// Capabilities (or the `toolchain` family) whose absence fails the run instead of
    /// skipping: gpu, toolchain, ptxas, nvrtc, nvjitlink, libnvvm, nvdisasm, cuobjdump, cccl,
    /// clang, kmod, rdma.
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
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
enum Format {
    #[default]
    Pretty,
    Terse,
    Json,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Describe this machine: OS, kernel, CPU, GPUs, driver, toolchain, kmod, RDMA.
    Probe {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check suite files without running anything (default: every file in suites/).
    Validate { paths: Vec<PathBuf> },
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
    /// Print throughput figures (random types verified per second per oracle; model checks).
    Bench {
        #[arg(value_enum)]
        area: BenchArea,
        /// How many random types (abi).
        #[arg(long, default_value_t = 2000)]
        count: usize,
    },
    /// Run one case in this process and print its result (used for crash isolation).
    #[command(name = "__case", hide = true)]
    Case {
        #[arg(long)]
        file: PathBuf,
        #[arg(long)]
        id: String,
        /// The case's scratch directory, made and removed by the parent.
        #[arg(long)]
        scratch: Option<PathBuf>,
    },
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
enum LitmusCmd {
    /// Print `outcome: allowed|forbidden` for a test (YAML or Dat3M .litmus), and for a
    /// forbidden outcome the axiom ruling out each candidate execution.
    Check { file: PathBuf },
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
}

#[derive(Subcommand, Debug)]
enum ToolchainCmd {
    /// What is used and from where.
    Show,
    /// Install the pinned NVIDIA wheels into the cache.
    Install,
}

/// The repository root: `$GPUCTS_ROOT`, else the nearest ancestor of the working directory
/// holding `suites/`, else the workspace this binary was built from.
pub fn find_root() -> PathBuf {
    if let Some(r) = std::env::var_os("GPUCTS_ROOT") {
        return PathBuf::from(r);
    }
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            if dir.join("suites").is_dir() && dir.join("harness").is_dir() {
                return dir.to_path_buf();
            }
        }
    }
    let built = Path::new(env!("CARGO_MANIFEST_DIR"));
    built.parent().unwrap_or(built).to_path_buf()
}

fn error(msg: impl std::fmt::Display) {
    eprintln!("gpucts: {msg}");
}

pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        None => run(cli.run),
        Some(Cmd::Probe { json }) => probe(json),
        Some(Cmd::Validate { paths }) => validate(paths),
        Some(Cmd::Toolchain { action }) => toolchain(action),
        Some(Cmd::Abi { action }) => abi(action),
        Some(Cmd::Xcall { action }) => xcall(action),
        Some(Cmd::Litmus { action }) => litmus(action),
        Some(Cmd::Bench { area, count }) => bench(area, count),
        Some(Cmd::Case { file, id, scratch }) => child_case(&file, &id, scratch.as_deref()),
    }
}

fn probe(json: bool) -> i32 {
    let tc = Toolchain::discover_system();
    let (p, _) = crate::probe::probe(&tc);
    if json {
        match serde_json::to_string_pretty(&p) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                error(e);
                return EXIT_USAGE;
            }
        }
    } else {
        print!("{}", p.render());
    }
    EXIT_OK
}

fn print_load_errors(errors: &[suite::SuiteError]) {
    for e in errors {
        error(e);
    }
}

fn validate(paths: Vec<PathBuf>) -> i32 {
    let root = find_root();
    let files = if paths.is_empty() {
        match suite::resolve_suite_arg("all", &root.join("suites")) {
            Ok(f) => f,
            Err(e) => {
                error(e);
                return EXIT_USAGE;
            }
        }
    } else {
        paths
    };
    match suite::load_suites(&files) {
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

fn toolchain(action: ToolchainCmd) -> i32 {
    if let ToolchainCmd::Install = action {
        match managed::install(&mut std::io::stderr()) {
            Ok(dir) => println!("installed: {}", dir.display()),
            Err(e) => {
                error(format!("toolchain install failed: {e}"));
                return EXIT_FAILED;
            }
        }
    }
    let tc = Toolchain::discover_system();
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
    if let Some(site) = managed::site_dir() {
        println!("managed cache: {}", site.display());
    }
    EXIT_OK
}

fn abi(action: AbiCmd) -> i32 {
    match action {
        AbiCmd::Layout { file } => match crate::abi::layout::layout_file_json(&file) {
            Ok(json) => {
                println!("{json}");
                EXIT_OK
            }
            Err(e) => {
                error(e);
                EXIT_USAGE
            }
        },
        AbiCmd::Lint { files } => {
            let mut code = EXIT_OK;
            for f in &files {
                match crate::abi::lint::lint_path(f) {
                    Ok(violations) => {
                        for v in &violations {
                            println!("{v}");
                        }
                        if !violations.is_empty() && code == EXIT_OK {
                            code = 1;
                        }
                    }
                    Err(e) => {
                        error(e);
                        code = EXIT_USAGE;
                    }
                }
            }
            code
        }
    }
}

fn xcall(action: XcallCmd) -> i32 {
    match action {
        XcallCmd::Check { files } => {
            let (code, out, err) = crate::xcall::check::run(&files);
            print!("{out}");
            eprint!("{err}");
            code
        }
    }
}

fn litmus(action: LitmusCmd) -> i32 {
    use crate::atomics::litmus;
    let r = match &action {
        LitmusCmd::Check { file } => litmus::check_file(file),
        LitmusCmd::Import { file } => litmus::import_file(file),
        LitmusCmd::Export { file } => litmus::export_file(file),
    };
    match r {
        Ok(text) => {
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
            EXIT_OK
        }
        Err(e) => {
            error(e);
            EXIT_USAGE
        }
    }
}

fn bench(area: BenchArea, count: usize) -> i32 {
    let tc = Toolchain::discover_system();
    match area {
        BenchArea::Abi => {
            println!("abi: random types verified per second, {count} types, one compilation per {} types", crate::abi::oracle::BATCH);
            print!("{}", crate::abi::oracle::bench(&tc, count));
        }
        BenchArea::Xcall => print!("{}", crate::xcall::bench(&tc)),
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
            for producer in mapping::source::PRODUCERS {
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

fn child_case(file: &Path, id: &str, scratch: Option<&Path>) -> i32 {
    let suite = match suite::load_file(file) {
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
    let tc = Toolchain::discover_system();
    let (_, caps) = crate::probe::probe(&tc);
    let status = runner::run_in_process(case, &caps, &tc, &find_root(), scratch);
    match serde_json::to_string(&status) {
        Ok(s) => {
            println!("{}{s}", runner::child::RESULT_TAG);
            EXIT_OK
        }
        Err(e) => {
            error(e);
            EXIT_USAGE
        }
    }
}

fn report_name(suites: &[String]) -> String {
    let names: Vec<String> = suites
        .iter()
        .map(|s| {
            Path::new(s)
                .file_stem()
                .map(|x| x.to_string_lossy().into_owned())
                .unwrap_or_else(|| s.clone())
        })
        .collect();
    names.join("+")
}

fn run(args: RunArgs) -> i32 {
    let root = find_root();
    let suites_arg = if args.suites.is_empty() {
        vec!["all".to_string()]
    } else {
        args.suites.clone()
    };

    // Everything that can be wrong with the invocation or the suite files is found before
    // anything runs, and exits 2.
    let mut files = Vec::new();
    for s in &suites_arg {
        match suite::resolve_suite_arg(s, &root.join("suites")) {
            Ok(f) => files.extend(f),
            Err(e) => {
                error(e);
                return EXIT_USAGE;
            }
        }
    }
    files.sort();
    files.dedup();
    let suites = match suite::load_suites(&files) {
        Ok(s) => s,
        Err(errors) => {
            print_load_errors(&errors);
            error(format!(
                "{} error(s) in suite files; nothing was run",
                errors.len()
            ));
            return EXIT_USAGE;
        }
    };
    let mut requires = Vec::new();
    for r in &args.require {
        match Requirement::parse(r) {
            Ok(r) => requires.push(r),
            Err(e) => {
                error(format!("--require: {e}"));
                return EXIT_USAGE;
            }
        }
    }
    let mut waiver_files = Vec::new();
    let default_waivers = root.join(DEFAULT_WAIVERS);
    if !args.no_default_waivers && default_waivers.is_file() {
        waiver_files.push(default_waivers);
    }
    waiver_files.extend(args.waivers.iter().cloned());
    let mut waivers = Waivers::default();
    for f in &waiver_files {
        match Waivers::load(f)
            .map_err(|e| e.to_string())
            .and_then(|w| waivers.extend(w))
        {
            Ok(()) => {}
            Err(e) => {
                error(e);
                return EXIT_USAGE;
            }
        }
    }
    let cases: Vec<Case> = suites.into_iter().flat_map(|s| s.cases).collect();

    let mut mimic = libtest_mimic::Arguments {
        filter: args.filter.clone(),
        exact: args.exact,
        skip: args.skip.clone(),
        list: args.list,
        test_threads: args.jobs,
        format: Some(match args.format {
            Format::Pretty => libtest_mimic::FormatSetting::Pretty,
            Format::Terse => libtest_mimic::FormatSetting::Terse,
            Format::Json => libtest_mimic::FormatSetting::Json,
        }),
        ..Default::default()
    };
    if args.list {
        let trials = runner::trials(cases, Arc::new(empty_env(&root)));
        let _ = libtest_mimic::run(&mimic, trials);
        return EXIT_OK;
    }

    // Provision the toolchain only when a selected case needs part of it.
    let needs_toolchain = cases
        .iter()
        .any(|c| selected(&c.id, &args) && c.requires.iter().any(|r| r.family() == "toolchain"));
    let toolchain = if needs_toolchain {
        Toolchain::provision(args.toolchain)
    } else {
        Toolchain::discover_system()
    };
    let (probe, caps) = crate::probe::probe(&toolchain);
    let fingerprint = probe.fingerprint();
    let gpu = caps.has(Capability::Gpu);
    eprintln!(
        "gpucts {}: {} cases from {} | gpu: {} | toolchain: {}/{} components",
        env!("CARGO_PKG_VERSION"),
        cases.len(),
        report_name(&suites_arg),
        if gpu {
            fingerprint.get("gpu").cloned().unwrap_or_default()
        } else {
            "none".into()
        },
        toolchain.components().len(),
        toolchain.components().len() + toolchain.missing().len(),
    );

    let env = Arc::new(RunEnv {
        caps,
        toolchain,
        root: root.clone(),
        exe: std::env::current_exe().unwrap_or_else(|_| PathBuf::from("gpucts")),
        requires,
        waivers,
        fingerprint,
        results: Mutex::new(Vec::new()),
    });
    if mimic.test_threads.is_none() {
        mimic.test_threads = std::thread::available_parallelism().ok().map(|n| n.get());
    }
    let conclusion = libtest_mimic::run(&mimic, runner::trials(cases, Arc::clone(&env)));

    let mut results = std::mem::take(&mut *env.results.lock().unwrap_or_else(|e| e.into_inner()));
    results.sort_by(|a, b| a.id.cmp(&b.id));
    let tally = Tally::of(&results);

    let now = time::OffsetDateTime::now_utc();
    let junit_path = args.junit.clone().unwrap_or_else(|| {
        let stamp = now
            .format(time::macros::format_description!(
                "[year][month][day]T[hour][minute][second]Z"
            ))
            .unwrap_or_else(|_| "run".into());
        root.join("reports")
            .join(format!("{}-{stamp}", report_name(&suites_arg)))
            .join("junit.xml")
    });
    let mut report_ok = true;
    if let Some(dir) = junit_path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            error(format!("cannot create {}: {e}", dir.display()));
            report_ok = false;
        }
    }
    match crate::report::junit::render(&results, &env.fingerprint, now) {
        Ok(xml) => {
            if let Err(e) = std::fs::write(&junit_path, xml) {
                error(format!("cannot write {}: {e}", junit_path.display()));
                report_ok = false;
            }
        }
        Err(e) => {
            error(e);
            report_ok = false;
        }
    }
    let json_path = junit_path.with_file_name("results.json");
    if args.junit.is_none() {
        if let Err(e) = crate::report::write_json(&json_path, &results, &env.fingerprint) {
            error(format!("cannot write {}: {e}", json_path.display()));
        }
    }

    // The closing lines go to stderr when stdout is JSON events.
    let say = |line: String| {
        if args.format == Format::Json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    };
    for r in &results {
        if let crate::outcome::Verdict::StaleWaiver { waiver } = &r.verdict {
            say(format!(
                "stale waiver: {waiver} lists {} but it passed",
                r.id
            ));
        }
    }
    if report_ok {
        say(format!("JUnit report: {}", junit_path.display()));
    }
    if tally.waived > 0 || tally.stale_waivers > 0 {
        say(format!(
            "waived: {}, stale waivers: {}",
            tally.waived, tally.stale_waivers
        ));
    }
    say(format!(
        "gpucts: {} passed, {} failed, {} skipped",
        tally.passed, tally.failed, tally.skipped
    ));
    if tally.failed > 0 || conclusion.has_failed() {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
}

/// Mirrors libtest-mimic's selection (substring or exact filter, `--skip` substrings).
fn selected(id: &str, args: &RunArgs) -> bool {
    let filter_ok = match &args.filter {
        None => true,
        Some(f) if args.exact => id == f,
        Some(f) => id.contains(f.as_str()),
    };
    let skipped = args.skip.iter().any(|s| {
        if args.exact {
            id == s
        } else {
            id.contains(s.as_str())
        }
    });
    filter_ok && !skipped
}

fn empty_env(root: &Path) -> RunEnv {
    RunEnv {
        caps: Default::default(),
        toolchain: Toolchain::default(),
        root: root.to_path_buf(),
        exe: PathBuf::new(),
        requires: Vec::new(),
        waivers: Waivers::default(),
        fingerprint: Default::default(),
        results: Mutex::new(Vec::new()),
    }
}
