//! The run's console: one short line per case in libtest's pretty or terse format, or a JSON
//! event stream (libtest's events, with every field the reports carry), and a progress bar on
//! a terminal. The detail of a case (full skip reason, waiver text, expected vs observed) is in
//! the reports; the console names it in a few words. Formats: reports/README.md.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use indicatif::ProgressBar;
use serde_json::{json, Value};

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
pub fn printable(text: &str) -> String {
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
pub fn shorten(text: &str, max: usize) -> String {
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
pub fn short_reason(reason: &str) -> String {
    let head = reason.split(" (").next().unwrap_or(reason);
    shorten(head, SHORT)
}

/// The gist of a waiver's reason: its first sentence, cut to [`SHORT`] characters.
pub fn short_waiver_reason(reason: &str) -> String {
    let first = reason.split(". ").next().unwrap_or(reason);
    let first = first.split("; ").next().unwrap_or(first);
    shorten(first.split(" (").next().unwrap_or(first), SHORT)
}

/// What the case's console line says after `... ` (libtest's words: ok, FAILED, ignored).
pub fn outcome_text(r: &CaseResult, waiver_reason: Option<&str>) -> String {
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
pub fn failure_text(r: &CaseResult) -> String {
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
pub fn case_event(r: &CaseResult, waiver_reason: Option<&str>) -> Value {
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
pub fn libtest_counts(t: &Tally) -> (usize, usize, usize) {
    (t.passed + t.flaky, t.failed, t.skipped + t.waived)
}

/// The console of one run.
pub struct Console {
    format: Format,
    width: usize,
    total: usize,
    done: AtomicUsize,
    bar: Option<ProgressBar>,
    /// JSON mode: the run's real stdout (fd 1 points at stderr while cases run, so that what
    /// checks and tools print cannot break the event stream).
    json: Option<Mutex<std::fs::File>>,
    saved_stdout: Option<i32>,
    lock: Mutex<()>,
}

impl Console {
    /// Start the console for `ids` (the selected cases) and print libtest's opening.
    pub fn start(format: Format, ids: &[&str]) -> Console {
        let width = ids
            .iter()
            .map(|i| i.len())
            .filter(|&n| n <= ID_COLUMN)
            .max()
            .unwrap_or(0);
        let mut c = Console {
            format,
            width,
            total: ids.len(),
            done: AtomicUsize::new(0),
            bar: super::progress::bar(ids.len()),
            json: None,
            saved_stdout: None,
            lock: Mutex::new(()),
        };
        if format == Format::Json {
            c.redirect_stdout();
            c.event(&json!({"type": "suite", "event": "started", "test_count": ids.len()}));
        } else {
            c.print(&format!("\nrunning {} tests", ids.len()));
        }
        c
    }

    /// JSON mode: keep the real stdout for events and point fd 1 at stderr.
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
            let f = unsafe { std::fs::File::from_raw_fd(for_events) };
            self.json = Some(Mutex::new(f));
        }
        self.saved_stdout = Some(saved);
    }

    fn event(&self, v: &Value) {
        if let Some(f) = &self.json {
            let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(f, "{v}");
            let _ = f.flush();
        }
    }

    /// A line on stdout, above the progress bar when there is one.
    fn print(&self, line: &str) {
        let out = || {
            let mut o = std::io::stdout().lock();
            let _ = writeln!(o, "{line}");
            let _ = o.flush();
        };
        match &self.bar {
            Some(b) => b.suspend(out),
            None => out(),
        }
    }

    /// A case is about to run (JSON: libtest's `started` event).
    pub fn case_started(&self, id: &str) {
        if self.format == Format::Json {
            self.event(&json!({"type": "test", "event": "started", "name": id}));
        }
    }

    /// A case finished: its line (or event), and the progress bar moves.
    pub fn case_finished(&self, r: &CaseResult, waiver_reason: Option<&str>) {
        let _one_at_a_time = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        match self.format {
            Format::Json => self.event(&case_event(r, waiver_reason)),
            Format::Pretty => self.print(&format!(
                "test {:<w$} ... {}",
                r.id,
                outcome_text(r, waiver_reason),
                w = self.width
            )),
            Format::Terse => {
                let c = match event_word(&r.verdict) {
                    "ok" => '.',
                    "ignored" => 'i',
                    _ => 'F',
                };
                let mut s = c.to_string();
                if n.is_multiple_of(88) || n == self.total {
                    s.push_str(&format!(" {n}/{}\n", self.total));
                }
                let out = || {
                    let mut o = std::io::stdout().lock();
                    let _ = write!(o, "{s}");
                    let _ = o.flush();
                };
                match &self.bar {
                    Some(b) => b.suspend(out),
                    None => out(),
                }
            }
        }
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    /// libtest's closing: the failures and `test result: …` (or the suite event), then the
    /// real stdout is restored.
    pub fn finish(mut self, results: &[CaseResult], filtered_out: usize, secs: f64) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
        let tally = Tally::of(results);
        let (passed, failed, ignored) = libtest_counts(&tally);
        let ok = failed == 0;
        if self.format == Format::Json {
            self.event(&json!({
                "type": "suite",
                "event": if ok { "ok" } else { "failed" },
                "passed": passed,
                "failed": failed,
                "ignored": ignored,
                "measured": 0,
                "filtered_out": filtered_out,
                "exec_time": secs,
                "tally": tally,
            }));
            self.restore_stdout();
            return;
        }
        let failures: Vec<&CaseResult> =
            results.iter().filter(|r| r.verdict.is_failure()).collect();
        if !failures.is_empty() {
            self.print("\nfailures:\n");
            for r in &failures {
                self.print(&format!("---- {} ----\n{}\n", r.id, failure_text(r)));
            }
            self.print("\nfailures:");
            for r in &failures {
                self.print(&format!("    {}", r.id));
            }
        }
        self.print(&format!(
            "\ntest result: {}. {passed} passed; {failed} failed; {ignored} ignored; 0 measured; \
             {filtered_out} filtered out; finished in {secs:.2}s\n",
            if ok { "ok" } else { "FAILED" }
        ));
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
        self.json = None;
    }
}

impl std::fmt::Debug for Console {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Console")
            .field("format", &self.format)
            .field("total", &self.total)
            .field("progress", &self.bar.is_some())
            .finish()
    }
}

impl Drop for Console {
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
