//! `gpucts prebuild`: the clang-19 and llc-19 (and, asked, rustc) outputs of the selected
//! cases, recorded into a store for a rig without those compilers.

use crate::vocab::Vocabulary;
use std::sync::Arc;

use super::{
    checked, error, limits, print_load_errors, suite_files, PrebuildArgs, EXIT_FAILED, EXIT_OK,
    EXIT_USAGE,
};
use crate::backend::toolchain::{prebuilt, ToolSettings, Toolchain};
use crate::capability::Capability;
use crate::config::RunConfig;
use crate::runner;
use crate::suite::{self, Case};

/// The tools `--producers` names, in prebuild's terms; a usage error otherwise.
fn prebuild_tools(
    producers: &[String],
) -> Result<std::collections::BTreeSet<prebuilt::Tool>, String> {
    use crate::backend::toolchain::prebuilt::Tool;
    let mut tools = std::collections::BTreeSet::new();
    for p in producers {
        let Some(t) = Tool::from_producer(p) else {
            return Err(format!(
                "--producers: `{p}` is not one prebuild records (clang, llvm, rustc); the \
                 NVIDIA producers run on the rig, from its CUDA or the pinned wheels"
            ));
        };
        tools.insert(t);
    }
    // The two share clang-19's LLVM and the suites use both for one producer (atomics'
    // `llvm` runs clang-19 on LLVM IR, xcall's and dwarf's run llc-19): a store of one alone
    // would list cases whose other outputs it lacks. rustc comes on top of them.
    if !(tools.contains(&Tool::Clang) && tools.contains(&Tool::Llc)) {
        return Err(
            "--producers: clang and llvm are recorded together (the llvm producer runs \
                    clang-19 on LLVM IR in atomics and llc-19 elsewhere): give --producers \
                    clang,llvm (and rustc)"
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

pub(super) fn prebuild(
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
    if toolchain.component(Capability::Clang).is_none() {
        error(format!(
            "nothing to prebuild with: {}",
            toolchain
                .missing()
                .get(&Capability::Clang)
                .map_or("clang-19 not found", String::as_str)
        ));
        return EXIT_USAGE;
    }
    // Each tool's version is its capability's (llc-19 is clang-19's LLVM: one for both).
    let mut versions = std::collections::BTreeMap::new();
    for t in &tools {
        let Some(c) = toolchain.component(t.capability()) else {
            let missing = toolchain.missing().get(&t.capability());
            error(format!(
                "--producers {}: {}",
                t.producer(),
                missing.map_or("not found", String::as_str)
            ));
            return EXIT_USAGE;
        };
        versions.insert(t.name().to_string(), c.version.clone());
    }
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
    let recorded: Vec<Capability> = tools.iter().map(|t| t.capability()).collect();
    let done = runner::prebuild::prebuild(&cases, &recorded, config, &caps, &toolchain, data, jobs);
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
         none of the recorded tools); {} outputs of {} in {} ({:.0} s)",
        done.compiled.len(),
        done.not_prebuilt.len(),
        done.errors.len(),
        done.without_recorded,
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
