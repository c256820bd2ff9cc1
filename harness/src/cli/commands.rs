//! The small subcommands: `probe`, `validate`, `toolchain`, `abi`, `xcall` and `litmus`.

use crate::vocab::Vocabulary;
use std::path::PathBuf;

use super::{
    checked, error, limits, print_load_errors, AbiCmd, LitmusCmd, ToolchainCmd, XcallCmd,
    EXIT_FAILED, EXIT_OK, EXIT_USAGE,
};
use crate::backend::toolchain::{ToolSettings, Toolchain};
use crate::config::RunConfig;
use crate::suite;

pub(super) fn probe(
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

pub(super) fn validate(paths: &[PathBuf], config: &RunConfig, data: &crate::data::DataRoot) -> i32 {
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

pub(super) fn toolchain(action: ToolchainCmd, tools: &ToolSettings) -> i32 {
    if let ToolchainCmd::Install { with } = action {
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
        for fe in with {
            match crate::backend::toolchain::python::install(
                tools.cache_root.as_deref(),
                fe,
                &mut std::io::stderr(),
            ) {
                Ok(dir) => println!("installed: {}", dir.display()),
                Err(e) => {
                    error(format!("toolchain install of {fe} failed: {e}"));
                    return EXIT_FAILED;
                }
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

pub(super) fn abi(action: AbiCmd) -> i32 {
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

pub(super) fn xcall(action: XcallCmd) -> i32 {
    match action {
        XcallCmd::Check { files } => {
            let checked = crate::xcall::check::run(&files);
            print!("{}", checked.stdout());
            eprint!("{}", checked.stderr());
            checked.exit_code()
        }
    }
}

pub(super) fn litmus(action: LitmusCmd, config: &RunConfig, tools: &ToolSettings) -> i32 {
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
                tools: tools.clone(),
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
