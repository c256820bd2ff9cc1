//! Stopping a run without losing it. SIGINT (Ctrl-C) or SIGTERM (a rig's job time limit, a
//! scheduler's preemption) asks the run to stop: no case starts after it, cases that finish
//! after it are counted as not run (an isolated child got the signal too, so its result says
//! nothing of the case), and the reports are written from what finished, marked incomplete
//! and naming the cases not run, for `gpucts --resume DIR`. A second signal ends the process
//! at once (exit 130); the journal beside results.json still holds every finished case.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether the run was asked to stop.
#[derive(Debug, Clone, Default)]
pub struct Stop {
    flag: Arc<AtomicBool>,
}

/// The exit status of a run that was stopped before every case ran (128 + SIGINT, as shells
/// report an interrupted job).
pub const EXIT_INTERRUPTED: i32 = 130;

impl Stop {
    /// A stop no signal sets (tests, commands that run no cases).
    pub fn never() -> Stop {
        Stop::default()
    }

    /// A stop that SIGINT and SIGTERM set; a second one exits the process (130). The
    /// conditional exit is registered first so that it sees the flag the first signal set.
    pub fn on_signals() -> std::io::Result<Stop> {
        let stop = Stop::default();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register_conditional_shutdown(
                sig,
                EXIT_INTERRUPTED,
                Arc::clone(&stop.flag),
            )?;
            signal_hook::flag::register(sig, Arc::clone(&stop.flag))?;
        }
        Ok(stop)
    }

    /// Ask the run to stop (what a signal does).
    pub fn request(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }

    pub fn requested(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_seen_by_every_clone() {
        let s = Stop::never();
        let c = s.clone();
        assert!(!c.requested());
        s.request();
        assert!(c.requested());
    }
}
