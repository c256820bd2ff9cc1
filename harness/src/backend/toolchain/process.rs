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
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The tool's outcome as a toolchain result: a run past the limit is a [`ToolError::Timeout`].
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
    Ok(f)
}

/// Run `cmd` with stdin from `/dev/null`, capturing stdout and stderr, for at most `timeout`.
pub fn output_within(
    cmd: &mut Command,
    tool: &str,
    timeout: Duration,
) -> Result<Output, ToolError> {
    let f = within(run(cmd, timeout), tool, timeout)?;
    Ok(Output {
        status: f.status,
        stdout: f.stdout,
        stderr: f.stderr,
    })
}

/// Run `cmd` (its stdout and stderr as the caller set them, stdin from `/dev/null`) for at
/// most `timeout`.
pub fn status_within(
    cmd: &mut Command,
    tool: &str,
    timeout: Duration,
) -> Result<ExitStatus, ToolError> {
    within(run_uncaptured(cmd, timeout), tool, timeout).map(|f| f.status)
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
