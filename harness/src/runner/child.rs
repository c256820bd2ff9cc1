//! Crash isolation: a case that launches GPU work or talks to the kernel module runs in a
//! child process (`gpucts __case`), under the one supervisor ([`crate::backend::process`]): in
//! its own process group, with a timeout, SIGTERM then SIGKILL after a grace period.
//!
//! The child prints its [`CaseStatus`] as one line `GPUCTS-RESULT <json>` on stdout. A child
//! that dies by a signal, exits without that line, or outlives its timeout is reported as
//! `Crash` or `Timeout` with what it printed, and the run goes on.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::backend::process::{Ending, RunError};
use crate::outcome::CaseStatus;

pub const RESULT_TAG: &str = "GPUCTS-RESULT ";

/// The most of a child's output kept in a report.
const OUTPUT_LIMIT: usize = 16 * 1024;

fn tail(s: &str) -> String {
    if s.len() <= OUTPUT_LIMIT {
        return s.to_string();
    }
    let mut start = s.len() - OUTPUT_LIMIT;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    format!("[... {} bytes cut ...]\n{}", start, &s[start..])
}

fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        _ => return format!("signal {sig}"),
    };
    format!("{name} (signal {sig})")
}

/// Called first in an isolated child: the kernel kills it when the parent run dies (a
/// Ctrl-C reaches only the parent's process group, and a child in its own group would
/// otherwise be left running with the GPU or the module).
pub fn die_with_parent() {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
}

/// Run one case in a child of `exe` and turn what happens into a status.
pub fn run_isolated(
    exe: &Path,
    data: &crate::data::DataRoot,
    suite_file: &Path,
    case_id: &str,
    timeout: Duration,
) -> CaseStatus {
    // The parent owns the child's scratch directory, so it goes away even when the child is
    // killed.
    let scratch = match crate::backend::toolchain::tempfile_dir() {
        Ok(d) => d,
        Err(e) => return CaseStatus::error(format!("cannot create a scratch directory: {e}")),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("__case");
    // The child reads the same data root and corpora as its parent, wherever it is started.
    cmd.arg("--root").arg(&data.path);
    // No corpora is said explicitly: a child must not find some beside its root that the
    // parent did not use.
    match &data.corpora {
        Some(c) => cmd.arg("--corpora").arg(c),
        None => cmd.arg("--no-corpora"),
    };
    // A rig replaying prebuilt clang outputs: the child replays the same store.
    if let Some(store) = crate::backend::toolchain::prebuilt::replaying() {
        cmd.arg("--prebuilt").arg(store.dir());
    }
    cmd.arg("--file")
        .arg(suite_file)
        .arg("--id")
        .arg(case_id)
        .arg("--scratch")
        .arg(scratch.path());
    let finished = match crate::backend::process::run(&mut cmd, timeout) {
        Ok(f) => f,
        Err(RunError::Spawn(e)) => {
            return CaseStatus::error(format!("cannot start child {}: {e}", exe.display()))
        }
        Err(RunError::Wait(e)) => return CaseStatus::error(format!("waiting for child: {e}")),
    };
    let stdout = String::from_utf8_lossy(&finished.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&finished.stderr).into_owned();
    let reported = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix(RESULT_TAG))
        .map(serde_json::from_str::<CaseStatus>);
    crate::figures::record_from_child(case_id, &stdout);
    let printed: String = stdout
        .lines()
        .filter(|l| !l.starts_with(RESULT_TAG) && !l.starts_with(crate::figures::TAG))
        .chain(stderr.lines())
        .collect::<Vec<_>>()
        .join("\n");

    let how = match finished.ending {
        Ending::TimedOut(_) => {
            return CaseStatus::Timeout {
                after_s: timeout.as_secs_f64(),
                output: tail(&printed),
            }
        }
        Ending::Exited(0) => match reported {
            Some(Ok(status)) => return status,
            Some(Err(e)) => {
                return CaseStatus::error(format!("child reported an unreadable result: {e}"))
            }
            None => "exited with status 0 without reporting a result".to_string(),
        },
        Ending::Exited(code) => format!("exited with status {code} without reporting a result"),
        Ending::Signalled(sig) => format!("killed by {}", signal_name(sig)),
    };
    CaseStatus::Crash {
        how,
        output: tail(&printed),
    }
}
