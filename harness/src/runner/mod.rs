//! Running cases: capability gating, in-process or isolated execution, and the verdict against
//! `--require` and waivers. Results are collected for the reporters; the console is
//! libtest-mimic's.

pub mod child;
pub mod console;
pub mod devices;
pub mod prebuild;
pub mod progress;
pub mod rerun;
pub mod sink;
pub mod stop;

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strum::VariantArray;

use libtest_mimic::{Completion, Failed, Trial};
use serde::Serialize;

use crate::area::{BatchUse, CaseContext, Resource, RunScope};
use crate::backend::toolchain::{tempfile_dir, Toolchain};
use crate::capability::{Capabilities, Capability, Requirement};
use crate::config::RunConfig;
use crate::figures::Figure;
use crate::outcome::{CaseStatus, Category, Verdict};
use crate::suite::Case;
use crate::waivers::Waivers;

/// One case's result, as reporters see it (and as the run's journal holds it, read back by
/// `--resume`).
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct CaseResult {
    pub id: String,
    pub area: String,
    pub clause: String,
    pub origin: String,
    pub status: CaseStatus,
    #[serde(flatten)]
    pub verdict: Verdict,
    pub duration_s: f64,
    /// The GPU this case ran on, when the run covered several (`--devices`; the id ends
    /// `@DEVICE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Failed attempts before the last (`--rerun-failures`), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<CaseStatus>,
    /// The figures the case measured (its last attempt's); results.json carries them in its
    /// `figures` map under the case's id.
    #[serde(skip)]
    pub figures: Vec<Figure>,
}

/// What one execution of a case gave: its status and the figures it measured. An isolated
/// child writes it as one JSON document for its parent ([`child`]).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub(crate) struct Executed {
    pub status: CaseStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<Figure>,
}

impl From<CaseStatus> for Executed {
    /// A status with no figures (a skip, an error before the check ran).
    fn from(status: CaseStatus) -> Executed {
        Executed {
            status,
            figures: Vec::new(),
        }
    }
}

/// The run's shared resources, one lock each ([`Resource`]).
#[derive(Debug, Default)]
pub struct Resources {
    locks: BTreeMap<Resource, std::sync::RwLock<()>>,
}

/// A resource a case holds: alone, or together with other cases that share it
/// ([`shared_resources_of`]).
#[derive(Debug)]
pub enum Held<'a> {
    Alone(std::sync::RwLockWriteGuard<'a, ()>),
    Together(std::sync::RwLockReadGuard<'a, ()>),
}

impl Resources {
    pub fn new() -> Resources {
        Resources {
            locks: Resource::ALL
                .iter()
                .map(|r| (*r, std::sync::RwLock::new(())))
                .collect(),
        }
    }

    /// Hold every resource in `wanted` alone ([`Resources::hold_sharing`]).
    pub fn hold(&self, wanted: &[Resource]) -> (Vec<Held<'_>>, Duration) {
        self.hold_sharing(wanted, &[])
    }

    /// Hold every resource in `wanted` (taken in one order, so two cases wanting two never
    /// deadlock), and how long it took to get them: the time other cases held them, not the
    /// case's own (an H100 run reported 5.8 s per litmus case, 15 queued cases of 0.39 s each
    /// included). Those also in `shared` are held together with other cases holding them
    /// shared, and apart from every case holding them alone.
    pub(crate) fn hold_sharing(
        &self,
        wanted: &[Resource],
        shared: &[Resource],
    ) -> (Vec<Held<'_>>, Duration) {
        let t0 = Instant::now();
        let mut wanted = wanted.to_vec();
        wanted.sort();
        wanted.dedup();
        let guards = wanted
            .iter()
            .filter_map(|r| self.locks.get(r).map(|l| (r, l)))
            .map(|(r, l)| {
                if shared.contains(r) {
                    Held::Together(l.read().unwrap_or_else(|e| e.into_inner()))
                } else {
                    Held::Alone(l.write().unwrap_or_else(|e| e.into_inner()))
                }
            })
            .collect::<Vec<_>>();
        let waited = if guards.is_empty() {
            Duration::ZERO
        } else {
            t0.elapsed()
        };
        (guards, waited)
    }
}

/// The resources a case holds while it runs: those its check declares, and the GPU for a case
/// that requires the `gpu` capability.
pub(crate) fn resources_of(case: &Case) -> Vec<Resource> {
    let mut r = case.check.resources();
    if case.requires.contains(&Capability::Gpu) {
        r.push(Resource::Gpu);
    }
    r.sort();
    r.dedup();
    r
}

/// The resources of [`resources_of`] the case holds together with other cases sharing
/// them: the GPU, for a case whose GPU work all goes through the process's GPU worker
/// ([`crate::area::Check::shares_gpu`]), which launches one batch at a time, so that cases
/// on several runner threads reach its queue together and share launches. A case isolated in
/// a child has its own context and holds the GPU alone.
pub(crate) fn shared_resources_of(case: &Case) -> Vec<Resource> {
    if !case.isolate && case.check.shares_gpu() {
        vec![Resource::Gpu]
    } else {
        Vec::new()
    }
}

/// What every case of a run shares.
#[derive(Debug)]
pub struct RunEnv {
    /// The run's settings (command line and environment).
    pub config: RunConfig,
    /// The run's selection and the batches its cases compute ([`run_scope`]).
    pub scope: RunScope,
    /// The shared resources cases declare, one lock each.
    pub resources: Resources,
    pub caps: Capabilities,
    pub toolchain: Toolchain,
    /// The suites' data root and the public corpora (isolated children get the same).
    pub data: crate::data::DataRoot,
    /// The gpucts executable, for isolated children.
    pub exe: PathBuf,
    pub requires: Vec<Requirement>,
    /// `--require-weak-controls[=PATTERN,...]`: which passes tagged
    /// `control-without-weak-outcomes` fail.
    pub require_weak_controls: WeakControls,
    pub waivers: Waivers,
    pub fingerprint: BTreeMap<String, String>,
    pub results: Mutex<Vec<CaseResult>>,
    /// Set by SIGINT/SIGTERM: no case starts after it ([`stop`]).
    pub stop: stop::Stop,
}

impl RunEnv {
    /// An environment with nothing probed, for listing cases without running them.
    pub fn empty(data: &crate::data::DataRoot) -> RunEnv {
        RunEnv {
            config: RunConfig::default(),
            scope: RunScope::new(),
            resources: Resources::new(),
            caps: Default::default(),
            toolchain: Toolchain::default(),
            data: data.clone(),
            exe: PathBuf::new(),
            requires: Vec::new(),
            require_weak_controls: WeakControls::Off,
            waivers: Waivers::default(),
            fingerprint: Default::default(),
            results: Mutex::new(Vec::new()),
            stop: stop::Stop::never(),
        }
    }
}

/// Which cases `--require-weak-controls` holds to a control that showed weak outcomes.
/// Within a CTA no weak outcome has been published on Maxwell or later hardware, so a rig
/// requires it only of the placements whose controls can show one (`inter_cta`,
/// `inter_cluster`) and labels the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum WeakControls {
    /// Not given: tagged passes stay passes.
    #[default]
    Off,
    /// `--require-weak-controls`: every tagged pass fails.
    All,
    /// `--require-weak-controls=P1,P2`: a tagged pass fails when its case id contains one of
    /// the patterns.
    Matching(Vec<String>),
}

impl WeakControls {
    /// From the flag: absent, bare, or with a comma-separated list of id substrings (empty
    /// entries dropped; a list of none is the bare flag).
    pub fn from_flag(flag: Option<Option<String>>) -> WeakControls {
        match flag {
            None => WeakControls::Off,
            Some(None) => WeakControls::All,
            Some(Some(list)) => {
                let patterns: Vec<String> = list
                    .split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(String::from)
                    .collect();
                if patterns.is_empty() {
                    WeakControls::All
                } else {
                    WeakControls::Matching(patterns)
                }
            }
        }
    }

    /// Whether the case `id`'s tagged pass fails.
    pub fn applies_to(&self, id: &str) -> bool {
        match self {
            WeakControls::Off => false,
            WeakControls::All => true,
            WeakControls::Matching(p) => p.iter().any(|p| id.contains(p.as_str())),
        }
    }

    /// For the run record: the patterns (empty for all), or `None` when off.
    pub fn patterns(&self) -> Option<Vec<String>> {
        match self {
            WeakControls::Off => None,
            WeakControls::All => Some(Vec::new()),
            WeakControls::Matching(p) => Some(p.clone()),
        }
    }
}

/// Console output format (libtest's).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    #[default]
    Pretty,
    Terse,
    Json,
}

/// Which cases run and how the console shows them: libtest's flags.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub filter: Option<String>,
    pub exact: bool,
    pub skip: Vec<String>,
    pub list: bool,
    /// Cases run at once; `None` is the number of CPUs.
    pub jobs: Option<usize>,
    pub format: Format,
}

impl Selection {
    /// Mirrors libtest-mimic's selection (substring or exact filter, `--skip` substrings).
    pub(crate) fn selects(&self, id: &str) -> bool {
        let filter_ok = match &self.filter {
            None => true,
            Some(f) if self.exact => id == f,
            Some(f) => id.contains(f.as_str()),
        };
        let skipped = self.skip.iter().any(|s| {
            if self.exact {
                id == s
            } else {
                id.contains(s.as_str())
            }
        });
        filter_ok && !skipped
    }

    /// Whether a selected case needs part of the NVIDIA toolchain (so it is worth provisioning).
    pub(crate) fn needs_toolchain(&self, cases: &[Case]) -> bool {
        cases
            .iter()
            .any(|c| self.selects(&c.id) && c.requires.iter().any(|r| r.family() == "toolchain"))
    }

    fn arguments(&self) -> libtest_mimic::Arguments {
        libtest_mimic::Arguments {
            filter: self.filter.clone(),
            exact: self.exact,
            skip: self.skip.clone(),
            list: self.list,
            test_threads: self
                .jobs
                .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get())),
            format: Some(match self.format {
                Format::Pretty => libtest_mimic::FormatSetting::Pretty,
                Format::Terse => libtest_mimic::FormatSetting::Terse,
                Format::Json => libtest_mimic::FormatSetting::Json,
            }),
            ..Default::default()
        }
    }
}

/// The scope of a run of `cases` under `selection` ([`RunEnv::scope`]): its selected ids, so
/// batch computations compile only what runs. Replaying a prebuilt store, a batch's members
/// are all computed anyway, as `gpucts prebuild` computed them (a batch of the selected
/// members only would be an input the store lacks); which batches are needed still follows
/// the selection.
pub(crate) fn run_scope(cases: &[Case], selection: &Selection, toolchain: &Toolchain) -> RunScope {
    RunScope::selecting(
        cases
            .iter()
            .filter(|c| selection.selects(&c.id))
            // batches are the suite's: per-device copies (`--devices`) share them
            .map(|c| c.suite_id().to_string()),
        toolchain.prebuilt().is_some(),
    )
}

/// Print the selected cases, libtest's way (`id: test`), running nothing.
pub fn list(cases: Vec<Case>, data: &crate::data::DataRoot, selection: &Selection) {
    let mut args = selection.arguments();
    args.list = true;
    let _ = libtest_mimic::run(&args, trials(cases, Arc::new(RunEnv::empty(data))));
}

/// What a run gives the reporters: every case's result (sorted by id) and whether the console
/// saw a failure.
#[derive(Debug)]
pub struct RunOutcome {
    pub results: Vec<CaseResult>,
    pub tally: Tally,
    pub console_failed: bool,
    /// Wall-clock seconds from the first case started to the last one finished.
    pub wall_s: f64,
    /// Selected cases that did not run because the run was stopped ([`stop`]), by id.
    pub not_run: Vec<String>,
}

impl RunOutcome {
    /// Whether the run exits 101.
    pub fn failed(&self) -> bool {
        self.tally.failed > 0 || self.console_failed
    }
}

/// Run the selected cases and collect their results, telling the console for
/// `selection.format` and then each of `sinks` what happens. Batches are computed in
/// `env.scope` (made by [`run_scope`] for the same selection); each case's duration counts
/// its share of a batch's compute time once (spread over the cases that used the batch)
/// instead of the time it waited for it.
pub fn run(
    cases: Vec<Case>,
    env: Arc<RunEnv>,
    selection: &Selection,
    sinks: &mut [&mut dyn sink::Sink],
) -> RunOutcome {
    run_resumed(cases, env, selection, sinks, Vec::new())
}

/// [`run`], for a run that already has the results of `done` (read back from an interrupted
/// run's journal by `--resume`): those cases are not run again, and their results join the
/// new ones in the reports.
pub fn run_resumed(
    cases: Vec<Case>,
    env: Arc<RunEnv>,
    selection: &Selection,
    sinks: &mut [&mut dyn sink::Sink],
    done: Vec<CaseResult>,
) -> RunOutcome {
    let total = cases.len();
    let finished: std::collections::HashSet<String> = done.iter().map(|r| r.id.clone()).collect();
    let selected: Vec<Case> = cases
        .into_iter()
        .filter(|c| selection.selects(&c.id))
        .collect();
    let filtered_out = total - selected.len();
    let selected: Vec<Case> = selected
        .into_iter()
        .filter(|c| !finished.contains(&c.id))
        .collect();
    env.results
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(done);
    let ids: Vec<&str> = selected.iter().map(|c| c.id.as_str()).collect();
    // The console first: its closing lines come before what the other sinks write.
    let mut console = console::for_format(selection.format);
    let mut all: Vec<&mut dyn sink::Sink> = vec![console.as_mut()];
    all.extend(sinks.iter_mut().map(|s| &mut **s as &mut dyn sink::Sink));
    let sinks = sink::Sinks::new(all);
    sinks.send(sink::Event::RunStarted { ids: &ids });
    let t0 = Instant::now();
    let jobs = selection
        .jobs
        .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
        .unwrap_or(1)
        .clamp(1, selected.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let used: Mutex<Vec<(String, BatchUse)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                if env.stop.requested() {
                    break;
                }
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(case) = selected.get(i) else { break };
                sinks.send(sink::Event::CaseStarted { id: &case.id });
                let (result, batch_use) = run_case(case, &env, &|attempt, failed| {
                    sinks.send(sink::Event::CaseRerun {
                        id: &case.id,
                        attempt,
                        failed,
                    })
                });
                if env.stop.requested() {
                    // Finished after the stop: its child may have got the signal too, so the
                    // result says nothing of the case; `--resume` runs it again.
                    break;
                }
                sinks.send(sink::Event::CaseFinished {
                    result: &result,
                    waiver_reason: waiver_reason(&env, &result.verdict),
                });
                used.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((case.id.clone(), batch_use));
                env.results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(result);
            });
        }
    });
    let secs = t0.elapsed().as_secs_f64();
    let mut results = std::mem::take(&mut *env.results.lock().unwrap_or_else(|e| e.into_inner()));
    charge_batches(
        &mut results,
        &used.into_inner().unwrap_or_else(|e| e.into_inner()),
        &env.scope,
    );
    results.sort_by(|a, b| a.id.cmp(&b.id));
    let ran: std::collections::HashSet<&str> = results.iter().map(|r| r.id.as_str()).collect();
    let not_run: Vec<String> = selected
        .iter()
        .filter(|c| !ran.contains(c.id.as_str()))
        .map(|c| c.id.clone())
        .collect();
    sinks.send(sink::Event::RunFinished {
        results: &results,
        filtered_out,
        wall_s: secs,
        not_run: &not_run,
    });
    let tally = Tally::of(&results);
    RunOutcome {
        results,
        tally,
        console_failed: false,
        wall_s: secs,
        not_run,
    }
}

/// Replace the time each case spent inside batch computations (computing, or waiting for
/// another case's) by its share of each batch it used: the batch's compute time divided by
/// the number of cases that used it. Each batch is thus charged once in all.
fn charge_batches(results: &mut [CaseResult], used: &[(String, BatchUse)], scope: &RunScope) {
    let mut members: std::collections::HashMap<crate::area::BatchToken, usize> =
        std::collections::HashMap::new();
    for (_, u) in used {
        for t in &u.batches {
            *members.entry(*t).or_default() += 1;
        }
    }
    let by_id: std::collections::HashMap<&str, &BatchUse> =
        used.iter().map(|(id, u)| (id.as_str(), u)).collect();
    for r in results.iter_mut() {
        let Some(u) = by_id.get(r.id.as_str()) else {
            continue;
        };
        if u.batches.is_empty() {
            continue;
        }
        let share: f64 = u
            .batches
            .iter()
            .filter_map(|t| {
                let cost = scope.batch_cost(t)?;
                Some(cost.as_secs_f64() / members.get(t).copied().unwrap_or(1).max(1) as f64)
            })
            .sum();
        r.duration_s = (r.duration_s - u.in_batches.as_secs_f64()).max(0.0) + share;
    }
}

/// Run one case (with its reruns, each told to `on_rerun` with its attempt number and the
/// failed status before it) and judge it; also what it did with batches.
fn run_case(
    case: &Case,
    env: &RunEnv,
    on_rerun: &dyn Fn(u32, &CaseStatus),
) -> (CaseResult, BatchUse) {
    let t0 = Instant::now();
    let mut waited = Duration::ZERO;
    // The parent applies `--require-weak-controls` to what a case (or its child) reported, so
    // the flag needs no passing to children; a failure it makes is rerun like any other.
    let mut required = |(e, w): (Executed, Duration)| {
        waited += w;
        if env.require_weak_controls.applies_to(&case.id) {
            Executed {
                status: e.status.with_weak_controls_required(),
                ..e
            }
        } else {
            e
        }
    };
    let (first, first_waited, batch_use) = execute(case, env);
    let first = required((first, first_waited));
    let (last, attempts) =
        rerun::with_reruns(first, env.config.rerun_failures, |attempt, failed| {
            on_rerun(attempt, failed);
            required(rerun::fresh_child(case, env))
        });
    let Executed { status, figures } = last;
    // The case's own time: waiting for the GPU while other cases used it is not.
    let duration_s = t0.elapsed().saturating_sub(waited).as_secs_f64();
    // Waivers excuse what they name: a failure with any other finding fails, and says which.
    // Every attempt counts: a crash or another finding before a known failure is not hidden
    // by the last attempt's being known.
    use crate::waivers::Excuse;
    let applied = env
        .waivers
        .applicable(&case.id, &case.requires, &env.fingerprint);
    let unexcused_attempt =
        attempts
            .iter()
            .enumerate()
            .find_map(|(i, a)| match crate::waivers::excuse(&applied, a) {
                Excuse::Unexcused { waivers, lines } => Some((
                    waivers,
                    lines
                        .into_iter()
                        .map(|l| format!("attempt {}: {l}", i + 1))
                        .collect::<Vec<_>>(),
                )),
                _ => None,
            });
    let (status, waiver) = match (crate::waivers::excuse(&applied, &status), unexcused_attempt) {
        (Excuse::Unexcused { waivers, lines }, _) => {
            (status.with_unexcused(&waivers, &lines), None)
        }
        (_, Some((waivers, lines))) if status.is_failure() => {
            (status.with_unexcused(&waivers, &lines), None)
        }
        (Excuse::Excused(ids) | Excuse::Stale(ids), _) => (status, Some(ids)),
        (Excuse::None, _) => (status, None),
    };
    let verdict = rerun::flaky_or(judge(&status, &env.requires, waiver.as_deref()), &attempts);
    (
        CaseResult {
            id: case.id.clone(),
            area: case.area.clone(),
            clause: case.clause.clone(),
            origin: case.origin.to_string(),
            status,
            verdict,
            duration_s,
            device: case.device.as_ref().map(ToString::to_string),
            attempts,
            figures,
        },
        batch_use,
    )
}

/// The verdict for a status (see [`Verdict::judge`]): `--require` first (a skip for a required
/// capability fails), then waivers (a failure listed is waived; a pass listed makes the waiver
/// stale).
pub fn judge(status: &CaseStatus, requires: &[Requirement], waiver: Option<&str>) -> Verdict {
    let required = match status {
        CaseStatus::Skip { capability, .. } => requires.iter().any(|r| r.covers(*capability)),
        _ => false,
    };
    Verdict::judge(status, required, waiver)
}

/// Run a case's check in this process; a panic is an `Error`, never a crash of the run.
/// `scratch` is the case's directory when the caller owns it (an isolated child's parent, which
/// removes it even when the child is killed); otherwise one is made and removed here.
pub(crate) fn run_in_process(
    case: &Case,
    config: &RunConfig,
    scope: &RunScope,
    caps: &Capabilities,
    toolchain: &Toolchain,
    data: &crate::data::DataRoot,
    scratch: Option<&std::path::Path>,
) -> Executed {
    run_check(case, config, scope, caps, toolchain, data, scratch, false).0
}

/// Run a case's compilations only, in this process (`gpucts prebuild`; see
/// [`CaseContext::compile_only`]).
pub(crate) fn compile_in_process(
    case: &Case,
    config: &RunConfig,
    scope: &RunScope,
    caps: &Capabilities,
    toolchain: &Toolchain,
    data: &crate::data::DataRoot,
) -> CaseStatus {
    run_check(case, config, scope, caps, toolchain, data, None, true)
        .0
        .status
}

/// Run the check; also what it did with batches.
#[allow(clippy::too_many_arguments)]
fn run_check(
    case: &Case,
    config: &RunConfig,
    scope: &RunScope,
    caps: &Capabilities,
    toolchain: &Toolchain,
    data: &crate::data::DataRoot,
    scratch: Option<&std::path::Path>,
    compile_only: bool,
) -> (Executed, BatchUse) {
    let owned = match scratch {
        Some(_) => None,
        None => match tempfile_dir() {
            Ok(d) => Some(d),
            Err(e) => {
                let status = CaseStatus::error(format!("cannot create a scratch directory: {e}"));
                return (status.into(), BatchUse::default());
            }
        },
    };
    let scratch = scratch
        .map(|p| p.to_path_buf())
        .or_else(|| owned.as_ref().map(|d| d.path().to_path_buf()));
    // A per-device copy of a case (`--devices`) runs with its device as the run's.
    let on_device;
    let config = match &case.device {
        Some(d) => {
            on_device = RunConfig {
                device: d.clone(),
                ..config.clone()
            };
            &on_device
        }
        None => config,
    };
    // The check sees the suite's case (its id, its batches); a copy's device is the config's.
    let mut ctx = CaseContext::new(config, scope, case.suite_id(), caps, toolchain, &data.path);
    ctx.scratch = scratch.unwrap_or_default();
    ctx.corpora = data.corpora.as_deref();
    ctx.compile_only = compile_only;
    let status = match std::panic::catch_unwind(AssertUnwindSafe(|| case.check.run(&ctx))) {
        Ok(s) => s,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            CaseStatus::error(format!("the check panicked: {msg}"))
        }
    };
    let executed = Executed {
        status,
        figures: ctx.take_figures(),
    };
    (executed, ctx.take_batch_use())
}

/// Run a case's check, or skip it naming the first capability it needs that this machine
/// lacks; also how long it waited for its shared resources and what it did with batches (in
/// this process: an isolated child's batches are its own).
pub(crate) fn execute(case: &Case, env: &RunEnv) -> (Executed, Duration, BatchUse) {
    if let Some((capability, reason)) = env.caps.first_missing(&case.requires) {
        return (
            CaseStatus::Skip { capability, reason }.into(),
            Duration::ZERO,
            BatchUse::default(),
        );
    }
    // A rig replaying prebuilt clang (or rustc) outputs runs the cases of those tools the
    // build machine prebuilt.
    if let Some(store) = env.toolchain.prebuilt() {
        let tools = crate::backend::toolchain::prebuilt::Tool::VARIANTS;
        let replayed = tools.iter().map(|t| t.capability()).find(|c| {
            case.requires.contains(c)
                && env
                    .toolchain
                    .component(*c)
                    .is_some_and(|t| t.origin == crate::backend::toolchain::Origin::Prebuilt)
        });
        if let Some(capability) = replayed.filter(|_| !store.covers(case.suite_id())) {
            let skip = CaseStatus::skip(
                capability,
                format!(
                    "{capability} comes from the prebuilt store {}, which does not hold this \
                     case (`gpucts prebuild` did not run it)",
                    store.dir().display()
                ),
            );
            return (skip.into(), Duration::ZERO, BatchUse::default());
        }
    }
    let (_held, waited) = env
        .resources
        .hold_sharing(&resources_of(case), &shared_resources_of(case));
    let (executed, used) = if case.isolate {
        (child::run_isolated(env, case), BatchUse::default())
    } else {
        run_check(
            case,
            &env.config,
            &env.scope,
            &env.caps,
            &env.toolchain,
            &env.data,
            None,
            false,
        )
    };
    (executed, waited, used)
}

/// libtest-mimic trials for the cases (the `--list` output); each records its [`CaseResult`]
/// in `env.results` when run.
pub(crate) fn trials(cases: Vec<Case>, env: Arc<RunEnv>) -> Vec<Trial> {
    cases
        .into_iter()
        .map(|case| {
            let env = Arc::clone(&env);
            let name = case.id.clone();
            Trial::ignorable_test(name, move || {
                // (`--list` only: nothing reruns)
                let (result, _) = run_case(&case, &env, &|_, _| {});
                let outcome = console_outcome(
                    &result.status,
                    &result.verdict,
                    waiver_reason(&env, &result.verdict),
                );
                env.results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(result);
                outcome
            })
        })
        .collect()
}

/// The reason of the waiver a verdict names, for the console.
fn waiver_reason<'a>(env: &'a RunEnv, verdict: &Verdict) -> Option<&'a str> {
    let id = match verdict {
        Verdict::Waived { waiver } | Verdict::StaleWaiver { waiver } => waiver,
        _ => return None,
    };
    // Several waivers may excuse one case together (`W-A+W-B`): the first one's reason.
    let first = id.split('+').next().unwrap_or(id);
    env.waivers
        .iter()
        .find(|w| w.id == first)
        .map(|w| w.reason.as_str())
}

fn console_outcome(
    status: &CaseStatus,
    verdict: &Verdict,
    waiver_reason: Option<&str>,
) -> Result<Completion, Failed> {
    match verdict {
        Verdict::Pass | Verdict::StaleWaiver { .. } | Verdict::Flaky => Ok(Completion::Completed),
        Verdict::Skip => Ok(Completion::ignored_with(status.summary())),
        Verdict::Waived { waiver: id } => Ok(Completion::ignored_with(format!(
            "waived ({id}): {}",
            waiver_reason.unwrap_or("")
        ))),
        Verdict::RequiredMissing => Err(Failed::from(format!(
            "required capability missing: {}",
            status.summary()
        ))),
        Verdict::Fail => Err(Failed::from(status.summary())),
    }
}

/// Counts for the closing summary.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
    pub waived: usize,
    pub stale_waivers: usize,
    pub flaky: usize,
    /// Passes tagged `control-without-weak-outcomes` (counted in `passed` too).
    pub control_without_weak_outcomes: usize,
}

/// Whether a case is an observation, not a verdict of the spec: an observation of a tool
/// (`AREA.observe.…`: the tool held to behaviour measured before, e.g. what ptxas 12.9
/// accepts), or a pass tagged `observation` (outcomes the spec does not define, recorded: the
/// async proxy's cases). Reports count them apart from conformance.
pub(crate) fn is_observation(id: &str, status: &CaseStatus) -> bool {
    id.split('.').nth(1) == Some("observe") || status.has_tag(crate::outcome::OBSERVATION)
}

impl Tally {
    pub fn of(results: &[CaseResult]) -> Tally {
        let mut t = Tally::default();
        for r in results {
            match r.verdict.category() {
                Category::Passed => t.passed += 1,
                Category::Failed => t.failed += 1,
                Category::Skipped => t.skipped += 1,
                Category::Waived => t.waived += 1,
                Category::Flaky => t.flaky += 1,
            }
            if let Verdict::StaleWaiver { .. } = r.verdict {
                t.stale_waivers += 1;
            }
            if r.verdict.category() == Category::Passed
                && r.status
                    .has_tag(crate::outcome::CONTROL_WITHOUT_WEAK_OUTCOMES)
            {
                t.control_without_weak_outcomes += 1;
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two runs in one process, one after the other and side by side, each see their own
    /// selection: a shared batch computes exactly the members its run selected (the
    /// selftest batch counts them). A run-wide selection (one set for the process) would give
    /// the later run the earlier one's batch, or the two runs one selection.
    #[test]
    fn runs_in_one_process_keep_their_own_selection() {
        let dir = tempfile::tempdir().unwrap();
        let members = ["one", "two", "three", "four"].map(|m| format!("selftest.batch.a.{m}"));
        let mut yaml = String::from("area: selftest\ndescription: a shared batch\ncases:\n");
        for m in &members {
            yaml += &format!(
                "  - id: {m}\n    clause: ptx-interop 13.2 §1.1\n    check: {{batch: \
                 {{key: a, member_ms: 1, members: [{}]}}}}\n",
                members.join(", ")
            );
        }
        let file = dir.path().join("batch.yaml");
        std::fs::write(&file, yaml).unwrap();
        let cases = crate::suite::load_file(&file, &crate::areas::all())
            .unwrap()
            .cases;
        let data = crate::data::DataRoot::at(dir.path());
        // The note of each case a run of `filter` ran: how many members its batch computed.
        let run_of = |filter: &str, exact: bool| {
            let selection = Selection {
                filter: Some(filter.to_string()),
                exact,
                jobs: Some(2),
                format: Format::Terse,
                ..Selection::default()
            };
            let mut env = RunEnv::empty(&data);
            env.scope = run_scope(&cases, &selection, &env.toolchain);
            let outcome = run(cases.clone(), Arc::new(env), &selection, &mut []);
            outcome
                .results
                .into_iter()
                .map(|r| match r.status {
                    CaseStatus::Pass { note, .. } => (r.id, note.unwrap_or_default()),
                    other => panic!("{}: {other:?}", r.id),
                })
                .collect::<Vec<_>>()
        };
        let computed = |n: usize| format!("batch a: {n} member(s) computed");
        let one = run_of("selftest.batch.a.one", true);
        assert_eq!(one, [(members[0].clone(), computed(1))]);
        let all = run_of("selftest.batch.a.", false);
        assert_eq!(all.len(), 4);
        assert!(all.iter().all(|(_, n)| *n == computed(4)), "{all:?}");
        let (one, all) = std::thread::scope(|s| {
            let one = s.spawn(|| run_of("selftest.batch.a.two", true));
            let all = s.spawn(|| run_of("selftest.batch.a.", false));
            (one.join().unwrap(), all.join().unwrap())
        });
        assert_eq!(one, [(members[1].clone(), computed(1))]);
        assert!(all.iter().all(|(_, n)| *n == computed(4)), "{all:?}");
    }

    #[test]
    fn observations_are_told_by_their_id() {
        let pass = CaseStatus::pass();
        assert!(is_observation(
            "syscalls.observe.ptxas.vprintf_status_b32",
            &pass
        ));
        assert!(is_observation("syscalls.observe.jit.malloc_guide", &pass));
        assert!(!is_observation(
            "syscalls.probe.lint.vprintf_status_b32",
            &pass
        ));
        assert!(!is_observation("observe.syscalls.x", &pass));
        assert!(!is_observation("xcall.self.gpucts.0", &pass));
        // The async proxy's undefined outcomes: a pass tagged `observation`.
        let observed = CaseStatus::Pass {
            note: None,
            tags: vec![crate::outcome::OBSERVATION.into()],
            control: None,
        };
        assert!(is_observation(
            "atomics.gpu.proxy.fence-reader-cta",
            &observed
        ));
        assert!(!is_observation("atomics.gpu.proxy.fence-reader-cta", &pass));
    }

    /// A GPU case queued behind another is charged its own time only: the wait for the GPU is
    /// measured and taken off. Thread A holds the GPU for 300 ms; B waits for it, then works
    /// 50 ms.
    #[test]
    fn time_waiting_for_the_gpu_is_not_the_cases_time() {
        let resources = Resources::new();
        let (held, _) = resources.hold(&[Resource::Gpu]);
        let (ready, waiting) = std::sync::mpsc::channel();
        std::thread::scope(|sc| {
            let b = sc.spawn(|| {
                let t0 = Instant::now();
                ready.send(()).unwrap();
                let (turn, waited) = resources.hold(&[Resource::Gpu]);
                std::thread::sleep(Duration::from_millis(50));
                drop(turn);
                (t0.elapsed(), waited)
            });
            // B is about to ask for the GPU: hold it 300 ms more.
            waiting.recv().unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
            let (total, waited) = b.join().unwrap();
            assert!(waited >= Duration::from_millis(200), "{waited:?}");
            let own = total.saturating_sub(waited);
            assert!(own >= Duration::from_millis(50), "{own:?}");
            assert!(own < Duration::from_millis(250), "{own:?} of {total:?}");
        });
        // A case without a shared resource neither waits nor records a wait.
        let (none, waited) = resources.hold(&[]);
        assert!(none.is_empty());
        assert_eq!(waited, Duration::ZERO);
    }

    /// Cases holding the GPU shared (the GPU worker's) overlap one another; a case holding it
    /// alone waits for all of them, and they for it.
    #[test]
    fn cases_sharing_the_gpu_overlap_and_exclude_the_others() {
        let resources = Resources::new();
        let gpu = [Resource::Gpu];
        let (a, _) = resources.hold_sharing(&gpu, &gpu);
        let (b, waited) = resources.hold_sharing(&gpu, &gpu);
        assert!(matches!(b[..], [Held::Together(_)]), "{b:?}");
        assert!(waited < Duration::from_millis(100), "{waited:?}");
        std::thread::scope(|sc| {
            let alone = sc.spawn(|| {
                let (held, waited) = resources.hold(&gpu);
                assert!(matches!(held[..], [Held::Alone(_)]), "{held:?}");
                waited
            });
            std::thread::sleep(Duration::from_millis(150));
            drop((a, b));
            assert!(alone.join().unwrap() >= Duration::from_millis(100));
        });
        let (alone, _) = resources.hold(&gpu);
        std::thread::scope(|sc| {
            let shared = sc.spawn(|| resources.hold_sharing(&gpu, &gpu).1);
            std::thread::sleep(Duration::from_millis(150));
            drop(alone);
            assert!(shared.join().unwrap() >= Duration::from_millis(100));
        });
    }

    /// Cases sharing a resource run one after another; cases on different resources overlap.
    #[test]
    fn a_resource_serializes_only_the_cases_that_declare_it() {
        let resources = Resources::new();
        let (kmod, _) = resources.hold(&[Resource::KmodDevice]);
        // The GPU is free while the module's device is held.
        let (gpu, waited) = resources.hold(&[Resource::Gpu]);
        assert_eq!(gpu.len(), 1);
        assert!(waited < Duration::from_millis(100), "{waited:?}");
        drop(gpu);
        std::thread::scope(|sc| {
            let other = sc.spawn(|| resources.hold(&[Resource::Gpu, Resource::KmodDevice]).1);
            std::thread::sleep(Duration::from_millis(150));
            drop(kmod);
            assert!(other.join().unwrap() >= Duration::from_millis(100));
        });
    }

    fn waiver() -> crate::waivers::Waiver {
        crate::waivers::Waiver {
            id: "W-1".into(),
            cases: "*".into(),
            reason: "known".into(),
            findings: vec![".".into()],
            context: Vec::new(),
            platform: Default::default(),
        }
    }

    #[test]
    fn require_turns_skip_into_failure() {
        let skip = CaseStatus::skip(Capability::Gpu, "no GPU");
        assert_eq!(judge(&skip, &[], None), Verdict::Skip);
        let req = vec![Requirement::parse("gpu").unwrap()];
        assert_eq!(judge(&skip, &req, None), Verdict::RequiredMissing);
        assert!(judge(&skip, &req, None).is_failure());
        let tc = vec![Requirement::parse("toolchain").unwrap()];
        assert_eq!(
            judge(&skip, &tc, None),
            Verdict::Skip,
            "toolchain does not cover gpu"
        );
        let ptxas_skip = CaseStatus::skip(Capability::Ptxas, "ptxas not found");
        assert_eq!(judge(&ptxas_skip, &tc, None), Verdict::RequiredMissing);
    }

    #[test]
    fn waivers_waive_failures_and_go_stale_on_pass() {
        let w = waiver();
        let fail = CaseStatus::fail("4", "8");
        assert_eq!(
            judge(&fail, &[], Some(w.id.as_str())),
            Verdict::Waived {
                waiver: "W-1".into()
            }
        );
        assert_eq!(
            judge(&CaseStatus::pass(), &[], Some(w.id.as_str())),
            Verdict::StaleWaiver {
                waiver: "W-1".into()
            }
        );
        let crash = CaseStatus::Crash {
            how: "killed by SIGSEGV".into(),
            output: String::new(),
        };
        assert_eq!(judge(&crash, &[], None), Verdict::Fail);
        assert!(!judge(&fail, &[], Some(w.id.as_str())).is_failure());
    }

    #[test]
    fn the_console_shows_what_the_verdict_says() {
        let skip = CaseStatus::skip(Capability::Gpu, "no GPU");
        let w = waiver();
        assert!(console_outcome(&CaseStatus::pass(), &Verdict::Pass, None).is_ok());
        assert!(console_outcome(&skip, &Verdict::Skip, None).is_ok());
        assert!(console_outcome(&skip, &Verdict::RequiredMissing, None).is_err());
        let fail = CaseStatus::fail("4", "8");
        assert!(console_outcome(&fail, &Verdict::Fail, None).is_err());
        let waived = Verdict::Waived {
            waiver: "W-1".into(),
        };
        assert!(console_outcome(&fail, &waived, Some(&w.reason)).is_ok());
        // Every verdict that fails the run fails its console line, and no other.
        for (status, v) in [
            (&skip, Verdict::Skip),
            (&skip, Verdict::RequiredMissing),
            (&fail, Verdict::Fail),
            (&fail, waived.clone()),
            (&CaseStatus::pass(), Verdict::Pass),
        ] {
            assert_eq!(
                console_outcome(status, &v, Some(&w.reason)).is_err(),
                v.is_failure(),
                "{v:?}"
            );
        }
    }

    #[test]
    fn tally_counts_stale_waivers_as_passes() {
        let r = |verdict| CaseResult {
            id: "x".into(),
            area: "selftest".into(),
            clause: "c".into(),
            origin: "o".into(),
            status: CaseStatus::pass(),
            verdict,
            duration_s: 0.0,
            device: None,
            attempts: Vec::new(),
            figures: Vec::new(),
        };
        let t = Tally::of(&[
            r(Verdict::Pass),
            r(Verdict::StaleWaiver { waiver: "W".into() }),
            r(Verdict::Fail),
            r(Verdict::RequiredMissing),
            r(Verdict::Skip),
            r(Verdict::Waived { waiver: "W".into() }),
            r(Verdict::Flaky),
        ]);
        assert_eq!(
            t,
            Tally {
                passed: 2,
                failed: 2,
                skipped: 1,
                waived: 1,
                stale_waivers: 1,
                flaky: 1,
                control_without_weak_outcomes: 0,
            }
        );
    }

    /// Only passes count towards `M of them with a control that showed no weak outcome`:
    /// a tagged pass, a tagged stale waiver; not an untagged pass, nor a flaky case.
    #[test]
    fn tally_counts_passes_with_a_control_without_weak_outcomes() {
        use crate::outcome::ControlRun;
        let control = |weak| ControlRun {
            test: "MP.relaxed.cta.intra_cta".into(),
            instances: 100,
            weak,
        };
        let r = |status, verdict| CaseResult {
            id: "x".into(),
            area: "atomics".into(),
            clause: "c".into(),
            origin: "o".into(),
            status,
            verdict,
            duration_s: 0.0,
            device: None,
            attempts: Vec::new(),
            figures: Vec::new(),
        };
        let tagged = || CaseStatus::pass_beside_control("n", control(0));
        let t = Tally::of(&[
            r(tagged(), Verdict::Pass),
            r(tagged(), Verdict::StaleWaiver { waiver: "W".into() }),
            r(tagged(), Verdict::Flaky),
            r(
                CaseStatus::pass_beside_control("n", control(5)),
                Verdict::Pass,
            ),
            r(CaseStatus::pass(), Verdict::Pass),
        ]);
        assert_eq!((t.passed, t.control_without_weak_outcomes), (4, 2));
    }

    /// `--require-weak-controls=inter_cta,inter_cluster` holds only the cases whose ids
    /// contain a pattern; the bare flag holds every case, none without it.
    #[test]
    fn require_weak_controls_patterns_select_case_ids() {
        let inter = "atomics.gpu.MP.rel_acq.gpu.inter_cta";
        let intra = "atomics.gpu.MP.rel_acq.cta.intra_cta";
        let cluster = "atomics.gpu.cluster.SB.sc.cluster.inter_cluster";
        let some = WeakControls::from_flag(Some(Some("inter_cta, inter_cluster,".into())));
        assert_eq!(
            some,
            WeakControls::Matching(vec!["inter_cta".into(), "inter_cluster".into()])
        );
        assert!(some.applies_to(inter) && some.applies_to(cluster));
        assert!(!some.applies_to(intra));
        let all = WeakControls::from_flag(Some(None));
        assert!(all.applies_to(intra) && all.applies_to(inter));
        assert_eq!(WeakControls::from_flag(Some(Some(",".into()))), all);
        let off = WeakControls::from_flag(None);
        assert!(!off.applies_to(inter));
        assert_eq!(off.patterns(), None);
        assert_eq!(all.patterns(), Some(vec![]));
    }

    /// `--require-weak-controls` in the parent: a tagged pass reported by a case (or its
    /// child) is a failure of the run, before waivers and reruns see it.
    #[test]
    fn require_weak_controls_turns_the_tag_into_a_failure() {
        let tagged = CaseStatus::pass_beside_control(
            "n",
            crate::outcome::ControlRun {
                test: "SB.relaxed.cta.intra_cta".into(),
                instances: 4096,
                weak: 0,
            },
        );
        assert_eq!(judge(&tagged, &[], None), Verdict::Pass);
        let failed = tagged.with_weak_controls_required();
        assert_eq!(judge(&failed, &[], None), Verdict::Fail);
        assert!(failed
            .summary()
            .contains("control SB.relaxed.cta.intra_cta showed no weak outcome in 4096 instances"));
    }
}
