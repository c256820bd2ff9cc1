//! The reports of one run: where they go, writing them (results.json from the run's results,
//! every other format of `formats::REPORTS` rendered from it; as a sink of the run's events,
//! [`ReportSink`]), and the console's opening and closing lines. The lines are contracts (CI scripts read them); their wording is fixed here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::figures::Figure;
use super::formats::{Make, ReportFormat, REPORTS};
use super::results::{self, RunInfo, SCHEMA_VERSION};
use crate::capability::Capability;
use crate::outcome::{CaseStatus, Verdict};
use crate::runner::sink::{Event, Sink};
use crate::runner::{CaseResult, Tally};

/// The report name of a run: the suite arguments' stems joined by `+` (`abi+atomics`).
pub(crate) fn report_name(suites: &[String]) -> String {
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

/// The line printed (to stderr) before the cases run.
pub(crate) fn banner(
    cases: usize,
    name: &str,
    gpu: Option<&str>,
    have: usize,
    known: usize,
) -> String {
    format!(
        "gpucts {}: {cases} cases from {name} | gpu: {} | toolchain: {have}/{known} components",
        env!("CARGO_PKG_VERSION"),
        gpu.unwrap_or("none"),
    )
}

#[derive(Serialize)]
struct ResultsFile<'a> {
    schema_version: u32,
    gpucts_version: &'static str,
    fingerprint: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<&'a serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<&'a RunInfo>,
    tally: Tally,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    figures: &'a BTreeMap<String, Vec<Figure>>,
    cases: &'a [CaseResult],
}

fn results_text(
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
    probe: Option<&serde_json::Value>,
    run: Option<&RunInfo>,
    figures: &BTreeMap<String, Vec<Figure>>,
) -> std::io::Result<String> {
    let file = ResultsFile {
        schema_version: SCHEMA_VERSION,
        gpucts_version: env!("CARGO_PKG_VERSION"),
        fingerprint,
        probe,
        run,
        tally: Tally::of(results),
        figures,
        cases: results,
    };
    serde_json::to_string_pretty(&file).map_err(std::io::Error::other)
}

/// What a run knows about itself, for its reports.
#[derive(Debug, Default)]
pub struct RunRecord {
    pub probe: Option<serde_json::Value>,
    pub run: RunInfo,
}

impl RunRecord {
    /// The record of a run from this process: the command line, the git state of `root`, the
    /// suite and waiver files with their hashes, the waivers applied.
    pub fn new(
        root: &Path,
        suites: &[PathBuf],
        waiver_files: &[PathBuf],
        requires: &[String],
        probe: Option<serde_json::Value>,
        started: time::OffsetDateTime,
    ) -> RunRecord {
        let hash_all = |files: &[PathBuf]| {
            files
                .iter()
                .filter_map(|f| results::HashedFile::of(f, root).ok())
                .collect()
        };
        RunRecord {
            probe,
            run: RunInfo {
                command_line: std::env::args().collect(),
                started: started
                    .format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default(),
                finished: String::new(),
                suites: hash_all(suites),
                waiver_files: hash_all(waiver_files),
                waivers: waiver_files
                    .iter()
                    .flat_map(|f| waiver_records(f))
                    .collect(),
                requires: requires.to_vec(),
                git: results::git_state(root),
                rerun_failures: 0,
                require_weak_controls: false,
                require_weak_controls_for: Vec::new(),
                wall_s: 0.0,
                incomplete: false,
                not_run: Vec::new(),
            },
        }
    }
}

/// The waiver files a run reads (as `Waivers::load_run` does): the default file under `root`
/// unless `no_default` or absent, then each of `extra`.
pub fn waiver_files(root: &Path, no_default: bool, extra: &[PathBuf]) -> Vec<PathBuf> {
    let default = root.join(crate::waivers::DEFAULT_FILE);
    let mut files = Vec::new();
    if !no_default && default.is_file() {
        files.push(default);
    }
    files.extend(extra.iter().cloned());
    files
}

/// The waivers of a waiver file, for the report (the run has already checked the file; one
/// that cannot be read here contributes nothing).
fn waiver_records(path: &Path) -> Vec<results::WaiverRecord> {
    #[derive(serde::Deserialize)]
    struct File {
        waivers: Vec<results::WaiverRecord>,
    }
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_saphyr::from_str::<File>(&t).ok())
        .map(|f| f.waivers)
        .unwrap_or_default()
}

/// Where a run's reports go, checked before the run starts ([`prepare`]): one path for each
/// of [`REPORTS`], in its order.
#[derive(Debug, Clone)]
pub struct ReportPaths {
    paths: Vec<(&'static ReportFormat, PathBuf)>,
}

impl ReportPaths {
    /// Where the report with `key` goes.
    pub fn get(&self, key: &str) -> Option<&Path> {
        self.paths
            .iter()
            .find(|(r, _)| r.key == key)
            .map(|(_, p)| p.as_path())
    }
}

/// A report path that cannot be written: the path and the OS error.
#[derive(Debug, thiserror::Error)]
#[error("cannot {what} {}: {source}", path.display())]
pub(crate) struct PathError {
    what: &'static str,
    path: PathBuf,
    source: std::io::Error,
}

/// The report paths of a run (`junit` when given, else `reports/<name>-<UTC stamp>/junit.xml`
/// under `root`; every other report beside it), checked before anything runs: the directory
/// is created and each file is opened for writing (a file that did not exist is removed
/// again), so a run never ends with reports it cannot write.
pub(crate) fn prepare(
    junit: Option<&Path>,
    root: &Path,
    name: &str,
) -> Result<ReportPaths, PathError> {
    let default_junit = || {
        let stamp = time::OffsetDateTime::now_utc()
            .format(time::macros::format_description!(
                "[year][month][day]T[hour][minute][second]Z"
            ))
            .unwrap_or_else(|_| "run".into());
        root.join("reports")
            .join(format!("{name}-{stamp}"))
            .join("junit.xml")
    };
    let junit_path = junit.map(Path::to_path_buf).unwrap_or_else(default_junit);
    // The other reports go beside the JUnit file, unless that is no regular file
    // (`--junit /dev/null`, a FIFO): then into the default report directory, never into /dev.
    let beside = if junit_path.exists() && !junit_path.is_file() {
        default_junit()
    } else {
        junit_path.clone()
    };
    let dir = beside
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|source| PathError {
        what: "create",
        path: dir.clone(),
        source,
    })?;
    // `--junit` names the JUnit file; every other report has its file name in the directory.
    let paths = ReportPaths {
        paths: REPORTS
            .iter()
            .map(|r| match r.key {
                "junit" => (r, junit_path.clone()),
                _ => (r, dir.join(r.file)),
            })
            .collect(),
    };
    for (_, p) in &paths.paths {
        let existed = p.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(p)
            .map_err(|source| PathError {
                what: "write",
                path: p.clone(),
                source,
            })?;
        if !existed {
            let _ = std::fs::remove_file(p);
        }
    }
    Ok(paths)
}

/// What writing the reports did.
#[derive(Debug, Default)]
pub struct Written {
    /// The reports written, in the order of [`REPORTS`].
    pub reports: Vec<(&'static ReportFormat, PathBuf)>,
    /// Problems met, one line each (`cannot write PATH: OS error`); any makes the run exit 2.
    pub errors: Vec<String>,
}

impl Written {
    /// Where the report with `key` was written, if it was.
    pub fn path(&self, key: &str) -> Option<&Path> {
        self.reports
            .iter()
            .find(|(r, _)| r.key == key)
            .map(|(_, p)| p.as_path())
    }
}

/// Write results.json (with `record`: the probe, how the run was made, the figures), then
/// every other report of [`REPORTS`] rendered from the results set results.json holds.
pub fn write(
    results: &[CaseResult],
    fingerprint: &BTreeMap<String, String>,
    paths: &ReportPaths,
    record: &mut RunRecord,
) -> Written {
    let mut written = Written::default();
    record.run.finished = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let figures: BTreeMap<String, Vec<Figure>> = results
        .iter()
        .filter(|r| !r.figures.is_empty())
        .map(|r| (r.id.clone(), r.figures.clone()))
        .collect();
    let Some((source, json_path)) = paths
        .paths
        .iter()
        .find(|(r, _)| matches!(r.make, Make::Source))
    else {
        return written;
    };
    let text = match results_text(
        results,
        fingerprint,
        record.probe.as_ref(),
        Some(&record.run),
        &figures,
    ) {
        Ok(t) => t,
        Err(e) => {
            written
                .errors
                .push(format!("cannot write {}: {e}", json_path.display()));
            return written;
        }
    };
    if let Some(e) = write_file(json_path, text.as_bytes()) {
        written.errors.push(e);
    } else {
        written.reports.push((source, json_path.clone()));
    }
    // Every other report is rendered from what was written, read back as any reader would.
    let set = match results::parse(&json_path.display().to_string(), text.as_bytes()) {
        Ok(set) => set,
        Err(e) => {
            written.errors.push(e.to_string());
            return written;
        }
    };
    for (report, path) in &paths.paths {
        let Make::Render(render) = report.make else {
            continue;
        };
        match render(&set) {
            Ok(text) => match write_file(path, text.as_bytes()) {
                None => written.reports.push((report, path.clone())),
                Some(e) => written.errors.push(e),
            },
            Err(e) => written
                .errors
                .push(format!("cannot write {}: {e}", path.display())),
        }
    }
    // Announced in the order of REPORTS, whatever the order of writing.
    written
        .reports
        .sort_by_key(|(r, _)| REPORTS.iter().position(|x| x.key == r.key));
    written
}

/// Write `bytes` to `path` (creating its directory); the error line when that fails.
fn write_file(path: &Path, bytes: &[u8]) -> Option<String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return Some(format!("cannot create {}: {e}", dir.display()));
        }
    }
    std::fs::write(path, bytes)
        .err()
        .map(|e| format!("cannot write {}: {e}", path.display()))
}

/// The journal's file name, beside results.json: one JSON object a line, written as the run
/// goes, so a run that is killed outright still leaves what finished.
pub const JOURNAL: &str = "results.jsonl";

/// The journal's first line: what `--resume` needs to finish the run the same way.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct JournalHeader {
    /// `"run"`.
    #[serde(rename = "type")]
    pub kind: String,
    pub gpucts_version: String,
    /// The command line of the run, argv[0] first: a resumed run parses it again.
    pub command_line: Vec<String>,
    /// Where the JUnit report goes (absolute): a resumed run writes its reports there.
    pub junit: PathBuf,
    pub fingerprint: BTreeMap<String, String>,
    /// The selected cases, in the order they are taken.
    pub ids: Vec<String>,
}

/// One finished case in the journal.
#[derive(Debug, Serialize, serde::Deserialize)]
struct JournalCase {
    /// `"case"`.
    #[serde(rename = "type")]
    kind: String,
    /// When the case finished (RFC 3339, UTC).
    at: String,
    result: CaseResult,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    figures: Vec<Figure>,
}

/// A failed case about to run again (`--rerun-failures`), in the journal: the case's line
/// comes when its last attempt finished.
#[derive(Debug, Serialize, serde::Deserialize)]
struct JournalRerun {
    /// `"rerun"`.
    #[serde(rename = "type")]
    kind: String,
    /// When the rerun started (RFC 3339, UTC).
    at: String,
    id: String,
    /// The attempt about to run: 2 for the first rerun.
    attempt: u32,
    /// The status of the attempt before it.
    failed: CaseStatus,
}

/// What kind of line a journal line is (its `type`).
#[derive(serde::Deserialize)]
struct JournalKind {
    #[serde(rename = "type")]
    kind: String,
}

fn rfc3339(at: std::time::SystemTime) -> String {
    time::OffsetDateTime::from(at)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The most a journal may hold (bytes): far above 25,000 cases' results.
pub const MAX_JOURNAL_BYTES: u64 = 1 << 30;

/// An interrupted run's journal, read back for `--resume`: its header and the cases that
/// finished (a last line cut short by the kill is dropped).
pub fn read_journal(dir: &Path) -> Result<(JournalHeader, Vec<CaseResult>), String> {
    let path = dir.join(JOURNAL);
    let size = std::fs::metadata(&path)
        .map_err(|e| {
            format!(
                "{}: {e} (is {} a run's report directory?)",
                path.display(),
                dir.display()
            )
        })?
        .len();
    if size > MAX_JOURNAL_BYTES {
        return Err(format!(
            "{}: {size} bytes, over the {MAX_JOURNAL_BYTES}-byte limit",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines().enumerate();
    let header: JournalHeader = match lines.next() {
        Some((_, l)) => serde_json::from_str(l).map_err(|e| {
            format!(
                "{}:1:{}: not a journal header: {e}",
                path.display(),
                e.column()
            )
        })?,
        None => return Err(format!("{}: empty journal", path.display())),
    };
    let ends_cut = !text.ends_with('\n');
    let count = text.lines().count();
    let mut done = Vec::new();
    for (i, l) in lines {
        // a rerun line says when a failed case ran again; the case's own line follows
        if serde_json::from_str::<JournalKind>(l).is_ok_and(|k| k.kind == "rerun") {
            continue;
        }
        match serde_json::from_str::<JournalCase>(l) {
            Ok(c) => {
                let mut r = c.result;
                r.figures = c.figures;
                done.push(r);
            }
            // The process was killed while writing its last line.
            Err(_) if ends_cut && i + 1 == count => {}
            Err(e) => return Err(format!("{}:{}:{}: {e}", path.display(), i + 1, e.column())),
        }
    }
    Ok((header, done))
}

/// The sink that journals each case as it finishes ([`JOURNAL`]) and writes a run's reports
/// when the run finishes or is stopped ([`write`]); the console's closing lines then name what
/// it wrote ([`ReportSink::written`]).
#[derive(Debug)]
pub(crate) struct ReportSink {
    paths: ReportPaths,
    record: RunRecord,
    fingerprint: BTreeMap<String, String>,
    written: Option<Written>,
    /// Append to an existing journal (a resumed run) instead of starting one.
    resumed: bool,
    journal: Option<std::fs::File>,
    /// Why the journal could not be written (reported once, with the reports' errors).
    journal_error: Option<String>,
}

impl ReportSink {
    pub fn new(
        paths: ReportPaths,
        record: RunRecord,
        fingerprint: BTreeMap<String, String>,
    ) -> ReportSink {
        ReportSink {
            paths,
            record,
            fingerprint,
            written: None,
            resumed: false,
            journal: None,
            journal_error: None,
        }
    }

    /// A sink for a resumed run: it appends to the journal already there.
    pub fn resuming(mut self) -> ReportSink {
        self.resumed = true;
        self
    }

    fn journal_path(&self) -> Option<PathBuf> {
        let json = self.paths.get("results")?;
        Some(json.parent().unwrap_or(Path::new(".")).join(JOURNAL))
    }

    fn open_journal(&mut self, ids: &[&str]) {
        let Some(path) = self.journal_path() else {
            return;
        };
        let opened = if self.resumed {
            std::fs::OpenOptions::new().append(true).open(&path)
        } else {
            std::fs::File::create(&path)
        };
        let mut file = match opened {
            Ok(f) => f,
            Err(e) => {
                self.journal_error = Some(format!("cannot write {}: {e}", path.display()));
                return;
            }
        };
        if !self.resumed {
            let junit = self
                .paths
                .get("junit")
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()))
                .unwrap_or_default();
            let header = JournalHeader {
                kind: "run".into(),
                gpucts_version: env!("CARGO_PKG_VERSION").into(),
                command_line: self.record.run.command_line.clone(),
                junit,
                fingerprint: self.fingerprint.clone(),
                ids: ids.iter().map(|s| s.to_string()).collect(),
            };
            if let Err(e) = write_line(&mut file, &header) {
                self.journal_error = Some(format!("cannot write {}: {e}", path.display()));
                return;
            }
        }
        self.journal = Some(file);
    }

    fn journal_case(&mut self, result: &CaseResult, at: std::time::SystemTime) {
        let Some(file) = self.journal.as_mut() else {
            return;
        };
        let line = JournalCase {
            kind: "case".into(),
            at: rfc3339(at),
            result: result.clone(),
            figures: result.figures.clone(),
        };
        if let Err(e) = write_line(file, &line) {
            self.journal_error = Some(format!("cannot write the journal: {e}"));
            self.journal = None;
        }
    }

    fn journal_rerun(
        &mut self,
        id: &str,
        attempt: u32,
        failed: &CaseStatus,
        at: std::time::SystemTime,
    ) {
        let Some(file) = self.journal.as_mut() else {
            return;
        };
        let line = JournalRerun {
            kind: "rerun".into(),
            at: rfc3339(at),
            id: id.to_string(),
            attempt,
            failed: failed.clone(),
        };
        if let Err(e) = write_line(file, &line) {
            self.journal_error = Some(format!("cannot write the journal: {e}"));
            self.journal = None;
        }
    }

    /// What writing the reports did (an error when the run never finished).
    pub fn written(&mut self) -> Written {
        self.written.take().unwrap_or_else(|| Written {
            reports: Vec::new(),
            errors: vec!["the run did not finish; no report was written".into()],
        })
    }
}

/// One JSON object and a newline, in one write (a kill leaves at most the last line cut).
fn write_line(file: &mut std::fs::File, value: &impl Serialize) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    file.write_all(&line)
}

impl Sink for ReportSink {
    fn event(&mut self, event: &Event<'_>, at: std::time::SystemTime) {
        match *event {
            Event::RunStarted { ids } => self.open_journal(ids),
            Event::CaseFinished { result, .. } => self.journal_case(result, at),
            Event::CaseRerun {
                id,
                attempt,
                failed,
            } => self.journal_rerun(id, attempt, failed, at),
            Event::CaseStarted { .. } => {}
            Event::RunFinished {
                results,
                wall_s,
                not_run,
                ..
            } => {
                self.record.run.wall_s = wall_s;
                self.record.run.incomplete = !not_run.is_empty();
                self.record.run.not_run = not_run.to_vec();
                let mut written = write(results, &self.fingerprint, &self.paths, &mut self.record);
                written.errors.extend(self.journal_error.take());
                self.written = Some(written);
            }
        }
    }
}

/// The closing lines: stale waivers, the report paths, waiver counts, and the tally, then the
/// passes with a control without weak outcomes when there are any. `, N waived` and `, N
/// flaky` are appended to the tally only when non-zero, with how they map to libtest's
/// `ignored` and `passed` counts.
pub(crate) fn closing_lines(
    results: &[CaseResult],
    tally: &Tally,
    written: &Written,
) -> Vec<String> {
    let mut lines = Vec::new();
    for r in results {
        if let Verdict::StaleWaiver { waiver } = &r.verdict {
            lines.push(format!(
                "stale waiver: {waiver} lists {} but it passed",
                r.id
            ));
        }
    }
    for (report, path) in &written.reports {
        lines.push(format!("{}: {}", report.label, path.display()));
    }
    if tally.waived > 0 || tally.stale_waivers > 0 {
        lines.push(format!(
            "waived: {}, stale waivers: {}",
            tally.waived, tally.stale_waivers
        ));
    }
    let (observed, conformance): (Vec<CaseResult>, Vec<CaseResult>) = results
        .iter()
        .cloned()
        .partition(|r| crate::runner::is_observation(&r.id, &r.status));
    if !observed.is_empty() {
        let (o, c) = (Tally::of(&observed), Tally::of(&conformance));
        lines.push(format!(
            "of which observations (`*.observe.*` of a tool, or tagged `observation` where the spec defines no outcome; not the spec's verdict): {} passed, {} failed, {} skipped; conformance: {} passed, {} failed, {} skipped, {} waived",
            o.passed, o.failed, o.skipped, c.passed, c.failed, c.skipped, c.waived
        ));
    }
    lines.extend(skip_lines(results));
    let mut tail = String::new();
    let mut libtest = Vec::new();
    if tally.waived > 0 {
        tail.push_str(&format!(", {} waived", tally.waived));
        libtest.push(format!(
            "libtest's {} ignored = skipped + waived",
            tally.skipped + tally.waived
        ));
    }
    if tally.flaky > 0 {
        tail.push_str(&format!(", {} flaky", tally.flaky));
        libtest.push(format!(
            "libtest's {} passed = passed + flaky",
            tally.passed + tally.flaky
        ));
    }
    if !libtest.is_empty() {
        tail.push_str(&format!(" ({})", libtest.join("; ")));
    }
    lines.push(format!(
        "gpucts: {} passed, {} failed, {} skipped{tail}",
        tally.passed, tally.failed, tally.skipped
    ));
    if let Some(line) = weak_control_line(tally) {
        lines.push(line);
    }
    lines.extend(gpucts_results::teeth::teeth_lines(
        &gpucts_results::teeth::teeth(results.iter().map(|r| (r.id.as_str(), &r.status))),
    ));
    lines
}

/// The skipped cases grouped by the capability they miss, most first, each with what provides
/// it: a bare machine's run says which install unlocks most of the suite.
pub(crate) fn skip_lines(results: &[CaseResult]) -> Vec<String> {
    let mut by: BTreeMap<Capability, usize> = BTreeMap::new();
    for r in results {
        if let (Verdict::Skip, CaseStatus::Skip { capability, .. }) = (&r.verdict, &r.status) {
            *by.entry(*capability).or_default() += 1;
        }
    }
    if by.is_empty() {
        return Vec::new();
    }
    let mut rows: Vec<(Capability, usize)> = by.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.name().cmp(b.0.name())));
    let width = rows
        .iter()
        .map(|(_, n)| n.to_string().len())
        .max()
        .unwrap_or(1);
    let mut lines = vec!["skipped, by what is missing:".to_string()];
    lines.extend(
        rows.into_iter()
            .map(|(c, n)| format!("  {n:>width$} need {}: {}", c.name(), c.hint())),
    );
    lines
}

/// `N passed, M of them with a control that showed no weak outcome`, when M > 0: how many
/// passes rest on a stress whose relaxed control never showed its weak outcome (a contract
/// CI scripts parse).
pub(crate) fn weak_control_line(tally: &Tally) -> Option<String> {
    (tally.control_without_weak_outcomes > 0).then(|| {
        format!(
            "{} passed, {} of them with a control that showed no weak outcome",
            tally.passed, tally.control_without_weak_outcomes
        )
    })
}

/// The JSON event that ends a `--format json` stream: where the reports went and what could
/// not be written.
pub(crate) fn report_event(written: &Written, tally: &Tally) -> serde_json::Value {
    let mut event = serde_json::Map::new();
    event.insert("type".into(), "report".into());
    for report in REPORTS {
        let path = written.path(report.key).map(|p| p.display().to_string());
        event.insert(report.key.into(), path.into());
    }
    event.insert("errors".into(), written.errors.clone().into());
    event.insert(
        "tally".into(),
        serde_json::to_value(tally).unwrap_or_default(),
    );
    serde_json::Value::Object(event)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal as a stopped run leaves it: the header, a rerun line, a finished case, and a
    /// last line cut by the kill. The rerun is no case; the cut line is dropped; a line of
    /// another type is an error at its position.
    #[test]
    fn a_journal_reads_back_its_cases_past_reruns_and_a_cut_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let header = JournalHeader {
            kind: "run".into(),
            gpucts_version: "0".into(),
            command_line: vec!["gpucts".into()],
            junit: dir.path().join("junit.xml"),
            fingerprint: BTreeMap::new(),
            ids: vec!["selftest.a".into(), "selftest.b".into()],
        };
        let case = |id: &str| JournalCase {
            kind: "case".into(),
            at: "2026-11-28T00:00:00Z".into(),
            result: CaseResult {
                id: id.into(),
                area: "selftest".into(),
                clause: "none".into(),
                origin: "f:1:1".into(),
                status: CaseStatus::pass(),
                verdict: Verdict::Pass,
                duration_s: 0.0,
                device: None,
                attempts: Vec::new(),
                figures: Vec::new(),
            },
            figures: Vec::new(),
        };
        let rerun = JournalRerun {
            kind: "rerun".into(),
            at: "2026-11-28T00:00:00Z".into(),
            id: "selftest.a".into(),
            attempt: 2,
            failed: CaseStatus::fail("1", "2"),
        };
        let b = serde_json::to_string(&case("selftest.b")).unwrap();
        let text = format!(
            "{}\n{}\n{}\n{}",
            serde_json::to_string(&header).unwrap(),
            serde_json::to_string(&rerun).unwrap(),
            serde_json::to_string(&case("selftest.a")).unwrap(),
            &b[..b.len() / 2]
        );
        std::fs::write(dir.path().join(JOURNAL), &text).unwrap();
        let (h, done) = read_journal(dir.path()).unwrap();
        assert_eq!(h.ids, header.ids);
        let ids: Vec<&str> = done.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["selftest.a"]);
        // a line of no known type in the middle
        let text = text.replacen("\"rerun\"", "\"other\"", 1);
        std::fs::write(dir.path().join(JOURNAL), text).unwrap();
        let e = read_journal(dir.path()).unwrap_err();
        assert!(e.contains("results.jsonl:2:"), "{e}");
    }

    #[test]
    fn report_names_join_suite_stems() {
        assert_eq!(
            report_name(&["abi".into(), "suites/atomics.yaml".into()]),
            "abi+atomics"
        );
    }

    #[test]
    fn closing_lines_end_with_the_tally() {
        let tally = Tally {
            passed: 3,
            failed: 1,
            skipped: 2,
            waived: 1,
            stale_waivers: 0,
            flaky: 0,
            control_without_weak_outcomes: 0,
        };
        let written = Written {
            reports: vec![(
                crate::report::formats::by_key("junit").unwrap(),
                PathBuf::from("r/junit.xml"),
            )],
            errors: Vec::new(),
        };
        assert_eq!(
            closing_lines(&[], &tally, &written),
            vec![
                "JUnit report: r/junit.xml".to_string(),
                "waived: 1, stale waivers: 0".into(),
                "gpucts: 3 passed, 1 failed, 2 skipped, 1 waived (libtest's 3 ignored = skipped + waived)"
                    .into(),
            ]
        );
    }

    /// Skips grouped by capability, most first, each with its remedy: the run on a bare
    /// machine names the install that unlocks most cases (clang-19) with its count.
    #[test]
    fn skips_are_grouped_by_capability_with_the_remedy() {
        let case = |id: &str, status: CaseStatus| CaseResult {
            id: id.into(),
            area: "abi".into(),
            clause: "c".into(),
            origin: String::new(),
            verdict: crate::runner::judge(&status, &[], None),
            status,
            duration_s: 0.0,
            device: None,
            attempts: Vec::new(),
            figures: Vec::new(),
        };
        let skip = |c: Capability| CaseStatus::skip(c, "missing");
        let results = vec![
            case("a", skip(Capability::Clang)),
            case("b", skip(Capability::Gpu)),
            case("c", skip(Capability::Clang)),
            case("d", CaseStatus::pass()),
        ];
        assert_eq!(
            skip_lines(&results),
            vec![
                "skipped, by what is missing:".to_string(),
                "  2 need clang: run `apt-get install clang-19 llvm-19`".into(),
                "  1 need gpu: needs an NVIDIA GPU and its driver (libcuda.so.1)".into(),
            ]
        );
        assert!(skip_lines(&results[3..]).is_empty());
        let tally = Tally::of(&results);
        let lines = closing_lines(&results, &tally, &Written::default());
        assert_eq!(lines[0], "skipped, by what is missing:");
        assert!(lines
            .last()
            .unwrap()
            .starts_with("gpucts: 1 passed, 0 failed, 3 skipped"));
    }

    /// The tally line for passes on a control without weak outcomes: printed after the usual
    /// tally, only when there is one.
    #[test]
    fn the_weak_control_line_follows_the_tally_when_a_pass_rests_on_such_a_control() {
        let mut tally = Tally {
            passed: 468,
            failed: 0,
            skipped: 0,
            waived: 0,
            stale_waivers: 0,
            flaky: 0,
            control_without_weak_outcomes: 0,
        };
        let written = Written::default();
        assert_eq!(weak_control_line(&tally), None);
        assert_eq!(
            closing_lines(&[], &tally, &written).last().unwrap(),
            "gpucts: 468 passed, 0 failed, 0 skipped"
        );
        tally.control_without_weak_outcomes = 256;
        assert_eq!(
            closing_lines(&[], &tally, &written),
            vec![
                "gpucts: 468 passed, 0 failed, 0 skipped".to_string(),
                "468 passed, 256 of them with a control that showed no weak outcome".into()
            ]
        );
    }

    /// Issue 10 item 3: a report that cannot be written at the end is an error naming the
    /// path and the OS error (the binary exits 2 on any).
    #[test]
    fn a_report_that_cannot_be_written_is_an_error_with_path_and_os_error() {
        let d = tempfile::tempdir().unwrap();
        let paths = prepare(Some(&d.path().join("junit.xml")), d.path(), "x").unwrap();
        // After the check, something takes report.html's place.
        let html = paths.get("html").unwrap().to_path_buf();
        std::fs::create_dir(&html).unwrap();
        let mut record = RunRecord::default();
        let w = write(&[], &BTreeMap::new(), &paths, &mut record);
        assert!(w.path("junit").is_some() && w.path("results").is_some());
        assert!(w.path("html").is_none());
        assert_eq!(
            w.errors,
            vec![format!(
                "cannot write {}: Is a directory (os error 21)",
                html.display()
            )]
        );
        // prepare refuses the same place before a run.
        let e = prepare(Some(&d.path().join("junit.xml")), d.path(), "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot write {}: Is a directory (os error 21)",
                html.display()
            )
        );
    }
}
