//! The run's console, a sink of the run's events (`runner::sink`): one short line per case in
//! libtest's pretty or terse layout, or a JSON event stream (libtest's events, with every field
//! the reports carry), and a progress bar on a terminal. The detail of a case (full skip reason, waiver text, expected vs observed) is in
//! the reports; the console names it in a few words. Formats: reports/README.md.

use std::io::Write;

use indicatif::ProgressBar;
use serde_json::{json, Value};

use super::sink::{Event, Sink};
use super::{CaseResult, Format, Tally};
use crate::outcome::{CaseStatus, Verdict};

/// Longest reason shown on a case's line; the reports have the whole text.
const SHORT: usize = 72;
/// Longest id column: longer ids are not padded.
const ID_COLUMN: usize = 56;
/// At most this many lines, each at most [`FAILURE_LINE`] characters, of a failure's text in
/// the closing `failures:` section.
const FAILURE_LINES: usize = 6;
const FAILURE_LINE: usize = 160;

/// `text` with control characters (other than newline and tab) written as `\u{..}`, so a
/// case's text cannot drive the terminal.
pub(crate) fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                format!("\\u{{{:x}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` cut to at most `max` characters at a word boundary, with `…` when cut (control
/// characters made [`printable`] first).
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let text = printable(text);
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max.saturating_sub(1)).collect();
    let at_word = match cut.rfind(' ') {
        Some(i) if i > max / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", at_word.trim_end_matches([',', ';', ':', ' ']))
}

/// The gist of a reason: the text before its first parenthesis (where the how-to hint and the
/// OS error go), cut to [`SHORT`] characters.
pub(crate) fn short_reason(reason: &str) -> String {
    let head = reason.split(" (").next().unwrap_or(reason);
    shorten(head, SHORT)
}

/// The gist of a waiver's reason: its first sentence, cut to [`SHORT`] characters.
pub(crate) fn short_waiver_reason(reason: &str) -> String {
    let first = reason.split(". ").next().unwrap_or(reason);
    let first = first.split("; ").next().unwrap_or(first);
    shorten(first.split(" (").next().unwrap_or(first), SHORT)
}

/// What the case's console line says after `... ` (libtest's words: ok, FAILED, ignored).
pub(crate) fn outcome_text(r: &CaseResult, waiver_reason: Option<&str>) -> String {
    match (&r.verdict, &r.status) {
        (Verdict::Pass, _) => "ok".into(),
        (Verdict::StaleWaiver { waiver }, _) => format!("ok (stale waiver {waiver})"),
        (Verdict::Flaky, _) => format!(
            "ok (flaky: failed {} time(s), then passed)",
            r.attempts.len()
        ),
        (Verdict::Skip, CaseStatus::Skip { capability, reason }) => {
            format!("ignored (skip [{capability}]: {})", short_reason(reason))
        }
        (Verdict::Skip, s) => format!("ignored ({})", shorten(&s.summary(), SHORT)),
        (Verdict::Waived { waiver }, _) => match waiver_reason {
            Some(w) => format!("ignored (waived ({waiver}): {})", short_waiver_reason(w)),
            None => format!("ignored (waived ({waiver}))"),
        },
        (Verdict::RequiredMissing, CaseStatus::Skip { capability, reason }) => format!(
            "FAILED (required [{capability}] missing: {})",
            short_reason(reason)
        ),
        (Verdict::RequiredMissing, _) | (Verdict::Fail, _) => "FAILED".into(),
    }
}

/// The text of a failure for the closing `failures:` section: the summary, each line cut to
/// [`FAILURE_LINE`] characters, at most [`FAILURE_LINES`] lines.
pub(crate) fn failure_text(r: &CaseResult) -> String {
    let summary = match &r.verdict {
        Verdict::RequiredMissing => format!("required capability missing: {}", r.status.summary()),
        _ => r.status.summary(),
    };
    let lines: Vec<&str> = summary.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(FAILURE_LINES)
        .map(|l| shorten(l, FAILURE_LINE))
        .collect();
    if lines.len() > FAILURE_LINES || lines.iter().any(|l| l.chars().count() > FAILURE_LINE) {
        out.push("(the whole text is in junit.xml and results.json)".into());
    }
    out.join("\n")
}

/// libtest's event word for a verdict.
fn event_word(v: &Verdict) -> &'static str {
    match v {
        Verdict::Pass | Verdict::StaleWaiver { .. } | Verdict::Flaky => "ok",
        Verdict::Skip | Verdict::Waived { .. } => "ignored",
        Verdict::Fail | Verdict::RequiredMissing => "failed",
    }
}

/// The JSON event for a finished case: libtest's fields (`type`, `event`, `name`,
/// `exec_time`, `message`) plus the case's status and verdict fields as results.json writes
/// them, the waiver's reason, and the figures the case recorded.
pub(crate) fn case_event(r: &CaseResult, waiver_reason: Option<&str>) -> Value {
    let mut e = json!({
        "type": "test",
        "event": event_word(&r.verdict),
        "name": r.id,
        "area": r.area,
        "clause": r.clause,
        "exec_time": r.duration_s,
        "message": outcome_text(r, waiver_reason),
    });
    let (Some(obj), Ok(Value::Object(status)), Ok(Value::Object(verdict))) = (
        e.as_object_mut(),
        serde_json::to_value(&r.status),
        serde_json::to_value(&r.verdict),
    ) else {
        return e;
    };
    obj.extend(status);
    obj.extend(verdict);
    if let Some(w) = waiver_reason {
        obj.insert("waiver_reason".into(), Value::String(w.to_string()));
    }
    if !r.attempts.is_empty() {
        obj.insert(
            "attempts".into(),
            serde_json::to_value(&r.attempts).unwrap_or(Value::Null),
        );
    }
    if !r.figures.is_empty() {
        obj.insert(
            "figures".into(),
            serde_json::to_value(&r.figures).unwrap_or(Value::Null),
        );
    }
    e
}

/// libtest's counts for a tally: `passed` counts flaky cases, `ignored` skipped and waived ones.
pub(crate) fn libtest_counts(t: &Tally) -> (usize, usize, usize) {
    (t.passed + t.flaky, t.failed, t.skipped + t.waived)
}

/// The console sink for `format`: libtest's pretty or terse layout, or the JSON event stream.
pub(crate) fn for_format(format: Format) -> Box<dyn Sink> {
    match format {
        Format::Pretty => Box::new(Pretty::default()),
        Format::Terse => Box::new(Terse::default()),
        Format::Json => Box::new(JsonStream::default()),
    }
}

/// The progress bar (on a terminal only) and the lines printed above it.
#[derive(Debug, Default)]
struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    fn start(&mut self, total: usize) {
        self.bar = super::progress::bar(total);
    }

    /// `text` on stdout as it is, above the progress bar when there is one.
    fn write(&self, text: &str) {
        let out = || {
            let mut o = std::io::stdout().lock();
            let _ = write!(o, "{text}");
            let _ = o.flush();
        };
        match &self.bar {
            Some(b) => b.suspend(out),
            None => out(),
        }
    }

    /// A line on stdout, above the progress bar when there is one.
    fn print(&self, line: &str) {
        self.write(&format!("{line}\n"));
    }

    fn inc(&self) {
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    fn clear(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// libtest's opening of the text layouts.
fn text_opening(progress: &mut Progress, ids: &[&str]) {
    progress.start(ids.len());
    progress.print(&format!("\nrunning {} tests", ids.len()));
}

/// libtest's closing of the text layouts: the failures, then `test result: …`.
fn text_closing(progress: &mut Progress, results: &[CaseResult], filtered_out: usize, secs: f64) {
    progress.clear();
    let (passed, failed, ignored) = libtest_counts(&Tally::of(results));
    let failures: Vec<&CaseResult> = results.iter().filter(|r| r.verdict.is_failure()).collect();
    if !failures.is_empty() {
        progress.print("\nfailures:\n");
        for r in &failures {
            progress.print(&format!("---- {} ----\n{}\n", r.id, failure_text(r)));
        }
        progress.print("\nfailures:");
        for r in &failures {
            progress.print(&format!("    {}", r.id));
        }
    }
    progress.print(&format!(
        "\ntest result: {}. {passed} passed; {failed} failed; {ignored} ignored; 0 measured; \
         {filtered_out} filtered out; finished in {secs:.2}s\n",
        if failed == 0 { "ok" } else { "FAILED" }
    ));
}

/// libtest's pretty layout: `test ID ... ok`, ids padded to one column.
#[derive(Debug, Default)]
pub(crate) struct Pretty {
    progress: Progress,
    width: usize,
}

impl Sink for Pretty {
    fn event(&mut self, event: &Event<'_>, _at: std::time::SystemTime) {
        match *event {
            Event::RunStarted { ids } => {
                self.width = ids
                    .iter()
                    .map(|i| i.len())
                    .filter(|&n| n <= ID_COLUMN)
                    .max()
                    .unwrap_or(0);
                text_opening(&mut self.progress, ids);
            }
            Event::CaseStarted { .. } => {}
            // not a `test ... ` line: those are one per case, as libtest prints them
            Event::CaseRerun {
                id,
                attempt,
                failed,
            } => self.progress.print(&format!(
                "rerun {id}: attempt {attempt} after {}",
                // one line: the summary's lines joined
                failed.summary().lines().collect::<Vec<_>>().join("; ")
            )),
            Event::CaseFinished {
                result,
                waiver_reason,
            } => {
                self.progress.print(&format!(
                    "test {:<w$} ... {}",
                    result.id,
                    outcome_text(result, waiver_reason),
                    w = self.width
                ));
                self.progress.inc();
            }
            Event::RunFinished {
                results,
                filtered_out,
                wall_s,
                ..
            } => text_closing(&mut self.progress, results, filtered_out, wall_s),
        }
    }
}

/// libtest's terse layout: one character a case (`.`, `i`, `F`), and `N/TOTAL` every 88 cases
/// and at the last.
#[derive(Debug, Default)]
pub(crate) struct Terse {
    progress: Progress,
    total: usize,
    done: usize,
}

impl Sink for Terse {
    fn event(&mut self, event: &Event<'_>, _at: std::time::SystemTime) {
        match *event {
            Event::RunStarted { ids } => {
                self.total = ids.len();
                text_opening(&mut self.progress, ids);
            }
            // one character per case: a rerun shows in its case's verdict (flaky)
            Event::CaseStarted { .. } | Event::CaseRerun { .. } => {}
            Event::CaseFinished { result, .. } => {
                self.done += 1;
                let mut s = match event_word(&result.verdict) {
                    "ok" => '.',
                    "ignored" => 'i',
                    _ => 'F',
                }
                .to_string();
                if self.done.is_multiple_of(88) || self.done == self.total {
                    s.push_str(&format!(" {}/{}\n", self.done, self.total));
                }
                self.progress.write(&s);
                self.progress.inc();
            }
            Event::RunFinished {
                results,
                filtered_out,
                wall_s,
                ..
            } => text_closing(&mut self.progress, results, filtered_out, wall_s),
        }
    }
}

/// libtest's JSON event stream on stdout, one event a line. While cases run, fd 1 points at
/// stderr, so that what checks and tools print cannot break the stream; the real stdout is
/// restored when the run finishes.
#[derive(Debug, Default)]
pub(crate) struct JsonStream {
    progress: Progress,
    /// The run's real stdout, for the events.
    out: Option<std::fs::File>,
    saved_stdout: Option<i32>,
}

impl JsonStream {
    /// Keep the real stdout for events and point fd 1 at stderr.
    fn redirect_stdout(&mut self) {
        let _ = std::io::stdout().flush();
        // SAFETY: dup and dup2 act on file descriptors only; fd 1 and 2 are the process's
        // standard streams, and the duplicate is owned by the File made from it below.
        let saved = unsafe { libc::dup(1) };
        if saved < 0 {
            return;
        }
        // SAFETY: as above; a failed dup2 leaves fd 1 as it was.
        if unsafe { libc::dup2(2, 1) } < 0 {
            // SAFETY: `saved` is the descriptor dup returned above and is not used again.
            unsafe { libc::close(saved) };
            return;
        }
        // SAFETY: a second duplicate of the real stdout, owned by this File alone (closed on
        // drop); `saved` stays open to restore fd 1.
        let for_events = unsafe { libc::dup(saved) };
        if for_events >= 0 {
            use std::os::fd::FromRawFd;
            // SAFETY: `for_events` is a fresh descriptor nothing else owns.
            self.out = Some(unsafe { std::fs::File::from_raw_fd(for_events) });
        }
        self.saved_stdout = Some(saved);
    }

    fn restore_stdout(&mut self) {
        let _ = std::io::stdout().flush();
        if let Some(saved) = self.saved_stdout.take() {
            // SAFETY: `saved` is the duplicate of the real stdout made in redirect_stdout.
            unsafe {
                libc::dup2(saved, 1);
                libc::close(saved);
            }
        }
        self.out = None;
    }

    fn emit(&mut self, v: &Value) {
        if let Some(f) = &mut self.out {
            let _ = writeln!(f, "{v}");
            let _ = f.flush();
        }
    }
}

impl Sink for JsonStream {
    fn event(&mut self, event: &Event<'_>, _at: std::time::SystemTime) {
        match *event {
            Event::RunStarted { ids } => {
                self.progress.start(ids.len());
                self.redirect_stdout();
                self.emit(&json!({"type": "suite", "event": "started", "test_count": ids.len()}));
            }
            Event::CaseStarted { id } => {
                self.emit(&json!({"type": "test", "event": "started", "name": id}));
            }
            // libtest's JSON has no such event, and its readers know only libtest's; the
            // case's `flaky` verdict and the journal carry the reruns
            Event::CaseRerun { .. } => {}
            Event::CaseFinished {
                result,
                waiver_reason,
            } => {
                self.emit(&case_event(result, waiver_reason));
                self.progress.inc();
            }
            Event::RunFinished {
                results,
                filtered_out,
                wall_s,
                ..
            } => {
                self.progress.clear();
                let tally = Tally::of(results);
                let (passed, failed, ignored) = libtest_counts(&tally);
                self.emit(&json!({
                    "type": "suite",
                    "event": if failed == 0 { "ok" } else { "failed" },
                    "passed": passed,
                    "failed": failed,
                    "ignored": ignored,
                    "measured": 0,
                    "filtered_out": filtered_out,
                    "exec_time": wall_s,
                    "tally": tally,
                }));
                self.restore_stdout();
            }
        }
    }
}

impl Drop for JsonStream {
    fn drop(&mut self) {
        self.restore_stdout();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_cut_to_their_gist() {
        // The GPU skip names libcuda once, not three times.
        let gpu = "no GPU: libcuda.so.1 cannot be loaded (libcuda.so.1: cannot open shared \
                   object file: No such file or directory) (needs an NVIDIA GPU and its driver \
                   (libcuda.so.1))";
        assert_eq!(short_reason(gpu), "no GPU: libcuda.so.1 cannot be loaded");
        let long = "word ".repeat(40);
        let s = short_reason(&long);
        assert!(s.chars().count() <= SHORT && s.ends_with('…'), "{s}");
        assert_eq!(
            short_waiver_reason("clang lowers X wrongly. The front end already knows; more"),
            "clang lowers X wrongly"
        );
    }
}
