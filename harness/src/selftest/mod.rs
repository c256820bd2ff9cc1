//! The `selftest` area: cases whose behaviour is known in advance, so the runner, isolation,
//! verdicts and reports can be tested end to end without hardware. Not a spec area; its suites
//! live in `harness/tests/fixtures/`, not `suites/`.

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SelftestCheck {
    /// Compares two integers: passes when equal.
    Equal { left: i64, right: i64 },
    /// Needs a capability (listed in `requires`), then passes.
    Needs { capability: Capability },
    /// Isolated: the child kills itself with a signal (SIGSEGV, SIGABRT, ...).
    Crash { signal: i32 },
    /// Isolated: the child sleeps past any sane timeout.
    Hang { seconds: u64 },
    /// Isolated: prints then passes, proving results cross the process boundary.
    ChildEqual { left: i64, right: i64 },
    /// The check panics; the runner must report an error and go on.
    Panic,
}

impl Check for SelftestCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            SelftestCheck::Needs { capability } => vec![*capability],
            _ => Vec::new(),
        }
    }

    fn isolate(&self) -> bool {
        matches!(
            self,
            SelftestCheck::Crash { .. }
                | SelftestCheck::Hang { .. }
                | SelftestCheck::ChildEqual { .. }
        )
    }

    fn run(&self, _ctx: &CaseContext) -> CaseStatus {
        match *self {
            SelftestCheck::Equal { left, right } | SelftestCheck::ChildEqual { left, right } => {
                println!("selftest: comparing {left} with {right}");
                if left == right {
                    CaseStatus::pass()
                } else {
                    CaseStatus::fail(left.to_string(), right.to_string())
                }
            }
            SelftestCheck::Needs { .. } => CaseStatus::pass(),
            SelftestCheck::Crash { signal } => {
                eprintln!("selftest: about to raise signal {signal}");
                // Rust's runtime handles SIGSEGV/SIGBUS to report stack overflows and returns
                // for a raised (not faulting) signal; restore the default action first.
                // SAFETY: deliberately ending this (child) process.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::raise(signal);
                }
                CaseStatus::error("the signal did not end the process")
            }
            SelftestCheck::Hang { seconds } => {
                std::thread::sleep(std::time::Duration::from_secs(seconds));
                CaseStatus::error("woke up from a hang")
            }
            SelftestCheck::Panic => panic!("selftest panic"),
        }
    }
}
