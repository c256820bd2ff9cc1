//! A run (`gpucts [--suite ...] [FILTER]`): its inputs, the run itself, `--resume` and the
//! closing; and the isolated child's one case (`gpucts __case`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::{
    checked, error, limits, print_load_errors, suite_files, RunArgs, EXIT_FAILED, EXIT_OK,
    EXIT_USAGE,
};
use crate::backend::toolchain::{ToolSettings, Toolchain};
use crate::capability::{Capability, Requirement};
use crate::config::RunConfig;
use crate::report;
use crate::runner::{self, Format, RunEnv};
use crate::suite::{self, Case};
use crate::waivers::Waivers;

pub(super) fn child_case(
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

pub(super) fn run(
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
