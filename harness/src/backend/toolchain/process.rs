//! Running an external tool with a time limit. Every tool the harness starts (ptxas, clang,
//! nvdisasm, cuobjdump, `--version` probes, pip) goes through here, onto the one supervisor
//! ([`crate::backend::process`]): it runs in its own process group, and when the limit passes
//! the whole group (the tool and anything it started, e.g. clang's `cc1`) gets SIGTERM, then
//! SIGKILL after the grace period, and the run is a [`ToolError::Timeout`], never a hang.

use std::process::{Command, ExitStatus, Output};
use std::time::Duration;

use super::ToolError;
use crate::backend::process::{run, run_uncaptured, Ending, Finished, RunError};

/// The limit for a `--version` probe.
pub(crate) const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// A signal's name and number (`SIGKILL (signal 9)`).
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGINT => "SIGINT",
        _ => return format!("signal {sig}"),
    };
    format!("{name} (signal {sig})")
}

/// Signals that end a process from outside (the OOM killer's SIGKILL, an operator's TERM,
/// INT or HUP): the tool was stopped, it did not answer. A crash signal (SIGABRT from an LLVM
/// "Cannot select", SIGSEGV) is raised by the tool itself on its input, deterministically,
/// and stays its answer: a failure, kept like any other rejection.
const STOPPED_FROM_OUTSIDE: [i32; 4] = [libc::SIGKILL, libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// The tool's outcome as a toolchain result: a run past the limit is a [`ToolError::Timeout`],
/// one stopped from outside ([`STOPPED_FROM_OUTSIDE`]) a [`ToolError::Killed`]: neither is the
/// tool's answer.
fn within(
    finished: Result<Finished, RunError>,
    tool: &str,
    timeout: Duration,
) -> Result<Finished, ToolError> {
    let f = finished.map_err(|e| ToolError::Io(e.into_io()))?;
    if let Ending::TimedOut(_) = f.ending {
        return Err(ToolError::Timeout {
            tool: tool.to_string(),
            after_s: timeout.as_secs_f64(),
        });
    }
    if let Ending::Signalled(sig) = f.ending {
        if !STOPPED_FROM_OUTSIDE.contains(&sig) {
            return Ok(f);
        }
        return Err(ToolError::Killed {
            tool: tool.to_string(),
            signal: signal_name(sig),
            log: String::from_utf8_lossy(&f.stderr).into_owned(),
        });
    }
    Ok(f)
}

/// What every tool is started with: an LLVM-based tool (clang, llc, rustc) that crashes on
/// its input prints its stack without running `llvm-symbolizer` on it (LLVM's
/// `Signals.cpp` reads this variable). The frames' names say nothing about the input, and
/// symbolizing costs a tenth of a second per crash, which isolating a batch's rejected cases
/// pays once per case.
fn quiet(cmd: &mut Command) -> &mut Command {
    cmd.env("LLVM_DISABLE_SYMBOLIZATION", "1")
}

/// Run `cmd` with stdin from `/dev/null`, capturing stdout and stderr, for at most `timeout`.
pub(crate) fn output_within(
    cmd: &mut Command,
    tool: &str,
    timeout: Duration,
) -> Result<Output, ToolError> {
    let f = within(run(quiet(cmd), timeout), tool, timeout)?;
    Ok(Output {
        status: f.status,
        stdout: f.stdout,
        stderr: f.stderr,
    })
}

/// Run `cmd` (its stdout and stderr as the caller set them, stdin from `/dev/null`) for at
/// most `timeout`.
pub(crate) fn status_within(
    cmd: &mut Command,
    tool: &str,
    timeout: Duration,
) -> Result<ExitStatus, ToolError> {
    within(run_uncaptured(quiet(cmd), timeout), tool, timeout).map(|f| f.status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_hung_tool_is_a_timeout() {
        // The supervisor's own tests cover the group, the grace period and the grandchildren;
        // here: the limit becomes `ToolError::Timeout` with the limit it had.
        let t0 = Instant::now();
        let r = output_within(
            Command::new("sh").arg("-c").arg("sleep 30"),
            "sh",
            Duration::from_millis(300),
        );
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        let Err(ToolError::Timeout { tool, after_s }) = r else {
            panic!("expected a timeout: {r:?}")
        };
        assert_eq!((tool.as_str(), after_s), ("sh", 0.3));
    }

    /// A tool the kernel kills (the OOM killer sends SIGKILL) did not answer: its run is
    /// `Killed` naming the signal, not a failure the callers would read as a rejection.
    #[test]
    fn a_tool_killed_by_a_signal_is_not_a_failure() {
        let r = output_within(
            Command::new("sh")
                .arg("-c")
                .arg("echo 'out of memory soon' >&2; kill -KILL $$"),
            "sh",
            Duration::from_secs(30),
        );
        let Err(ToolError::Killed { tool, signal, log }) = r else {
            panic!("expected a kill: {r:?}")
        };
        assert_eq!(
            (tool.as_str(), signal.as_str()),
            ("sh", "SIGKILL (signal 9)")
        );
        assert_eq!(log, "out of memory soon\n");
        // A tool that aborts on its input (llc-19's "Cannot select" raises SIGABRT) answered:
        // its non-zero status goes to the caller, which reads the refusal.
        let o = output_within(
            Command::new("sh")
                .arg("-c")
                .arg("echo 'LLVM ERROR: Cannot select' >&2; kill -ABRT $$"),
            "sh",
            Duration::from_secs(30),
        )
        .unwrap();
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(o.status.signal(), Some(libc::SIGABRT));
        assert_eq!(o.stderr, b"LLVM ERROR: Cannot select\n");
        // An exit code, even one a shell reports for a killed child (128 + 9), is the
        // tool's own answer.
        let o = output_within(
            Command::new("sh").arg("-c").arg("exit 137"),
            "sh",
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(o.status.code(), Some(137));
    }

    #[test]
    fn output_and_status_come_back_within_the_limit() {
        let o = output_within(
            Command::new("sh")
                .arg("-c")
                .arg("echo out; echo err >&2; exit 3"),
            "sh",
            Duration::from_secs(30),
        )
        .unwrap();
        assert_eq!(o.stdout, b"out\n");
        assert_eq!(o.stderr, b"err\n");
        assert_eq!(o.status.code(), Some(3));
        let s = status_within(
            Command::new("sh").arg("-c").arg("exit 0"),
            "sh",
            Duration::from_secs(30),
        )
        .unwrap();
        assert!(s.success());
    }
}
