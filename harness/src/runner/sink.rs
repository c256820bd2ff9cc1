//! Where a run's events go. The runner tells each registered [`Sink`] what happens, in order:
//! the run started, a case started, a case finished with its result, the run finished with
//! every result. The console layouts (`runner::console`), the JSON event stream and
//! results.json (`report::run::ReportSink`) are sinks; none of them drives the run.

use std::sync::Mutex;

use super::CaseResult;

/// One thing that happened in a run.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Before any case: the ids of the selected cases, in the order they are taken.
    RunStarted { ids: &'a [&'a str] },
    /// A case is about to run (cases of several jobs interleave).
    CaseStarted { id: &'a str },
    /// A failed case is about to run again (`--rerun-failures`): attempt number `attempt`
    /// (2 for the first rerun) after `failed`, the status of the attempt before it.
    CaseRerun {
        id: &'a str,
        attempt: u32,
        failed: &'a crate::outcome::CaseStatus,
    },
    /// A case finished, judged; `waiver_reason` is the reason of the waiver its verdict names.
    CaseFinished {
        result: &'a CaseResult,
        waiver_reason: Option<&'a str>,
    },
    /// Every case finished, or the run was stopped: the results sorted by id (batch time
    /// charged once), how many cases the selection left out, the wall-clock seconds from the
    /// first start to the last end, and the selected cases that did not run (empty unless the
    /// run was stopped: then the reports say it is incomplete).
    RunFinished {
        results: &'a [CaseResult],
        filtered_out: usize,
        wall_s: f64,
        not_run: &'a [String],
    },
}

/// A receiver of a run's events. Events reach the sinks one at a time, each sink in the
/// order it was registered, so a sink needs no locking of its own; `at` is when the event
/// happened (the journal records it per case).
pub trait Sink: Send {
    fn event(&mut self, event: &Event<'_>, at: std::time::SystemTime);
}

/// The registered sinks of one run; [`Sinks::send`] may be called from every job's thread.
pub(crate) struct Sinks<'a> {
    sinks: Mutex<Vec<&'a mut dyn Sink>>,
}

impl<'a> Sinks<'a> {
    pub fn new(sinks: Vec<&'a mut dyn Sink>) -> Sinks<'a> {
        Sinks {
            sinks: Mutex::new(sinks),
        }
    }

    /// Hand `event` to every sink, in registration order.
    pub(crate) fn send(&self, event: Event<'_>) {
        let at = std::time::SystemTime::now();
        let mut sinks = self.sinks.lock().unwrap_or_else(|e| e.into_inner());
        for s in sinks.iter_mut() {
            s.event(&event, at);
        }
    }
}

impl std::fmt::Debug for Sinks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.sinks.lock().map(|s| s.len()).unwrap_or(0);
        f.debug_struct("Sinks").field("sinks", &n).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what it saw, to check the order sinks are told things in.
    struct Log<'a>(&'a str, &'a Mutex<Vec<String>>);
    impl Sink for Log<'_> {
        fn event(&mut self, e: &Event<'_>, _at: std::time::SystemTime) {
            let what = match e {
                Event::RunStarted { ids } => format!("start {}", ids.len()),
                Event::CaseStarted { id } => format!("case {id}"),
                Event::CaseRerun { id, attempt, .. } => format!("rerun {id} {attempt}"),
                Event::CaseFinished { result, .. } => format!("done {}", result.id),
                Event::RunFinished { filtered_out, .. } => format!("end {filtered_out}"),
            };
            self.1.lock().unwrap().push(format!("{}: {what}", self.0));
        }
    }

    #[test]
    fn every_sink_gets_every_event_in_registration_order() {
        let seen = Mutex::new(Vec::new());
        let (mut a, mut b) = (Log("a", &seen), Log("b", &seen));
        let sinks = Sinks::new(vec![&mut a, &mut b]);
        let result = CaseResult {
            id: "selftest.x".into(),
            area: "selftest".into(),
            clause: "c".into(),
            origin: "o".into(),
            status: crate::outcome::CaseStatus::pass(),
            verdict: crate::outcome::Verdict::Pass,
            duration_s: 0.0,
            device: None,
            attempts: Vec::new(),
            figures: Vec::new(),
        };
        sinks.send(Event::RunStarted {
            ids: &["selftest.x"],
        });
        sinks.send(Event::CaseStarted { id: "selftest.x" });
        sinks.send(Event::CaseFinished {
            result: &result,
            waiver_reason: None,
        });
        sinks.send(Event::RunFinished {
            results: std::slice::from_ref(&result),
            filtered_out: 3,
            wall_s: 0.0,
            not_run: &[],
        });
        drop(sinks);
        assert_eq!(
            seen.into_inner().unwrap(),
            [
                "a: start 1",
                "b: start 1",
                "a: case selftest.x",
                "b: case selftest.x",
                "a: done selftest.x",
                "b: done selftest.x",
                "a: end 3",
                "b: end 3",
            ]
        );
    }
}
