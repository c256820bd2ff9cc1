//! Running an external tool with a time limit. Every tool the harness starts (ptxas, clang,
//! nvdisasm, cuobjdump, `--version` probes, pip) goes through here: it runs in its own process
//! group, and when the limit passes the whole group (the tool and anything it started, e.g.
//! clang's `cc1`) is killed and the run is a [`ToolError::Timeout`], never a hang.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::ToolError;

/// The limit for one compiler or disassembler run: `GPUCTS_TOOL_TIMEOUT_S` seconds, else 600
/// (a batch of a few hundred functions in a debug build on a loaded machine takes well under a
/// minute; ten is a hang).
pub fn tool_timeout() -> Duration {
    let s = std::env::var("GPUCTS_TOOL_TIMEOUT_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(600.0);
    Duration::from_secs_f64(s)
}

/// The limit for a `--version` probe.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

fn kill_group(pgid: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses the process
    // group this module created for the tool (ESRCH when it is already gone is harmless).
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

/// Wait for `child` at most `timeout`; on expiry kill its group and reap it.
fn wait_within(
    mut child: std::process::Child,
    tool: &str,
    timeout: Duration,
) -> Result<ExitStatus, ToolError> {
    let pgid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let r = child.wait();
        let _ = tx.send(());
        r
    });
    let expired = rx.recv_timeout(timeout).is_err();
    if expired {
        kill_group(pgid);
    }
    let status = waiter
        .join()
        .map_err(|_| ToolError::failed(tool, "the waiting thread panicked"))??;
    if expired {
        return Err(ToolError::Timeout {
            tool: tool.to_string(),
            after_s: timeout.as_secs_f64(),
        });
    }
    Ok(status)
}

/// Run `cmd` with stdin from `/dev/null`, capturing stdout and stderr, for at most `timeout`.
pub fn output_within(
    cmd: &mut Command,
    tool: &str,
    timeout: Duration,
) -> Result<Output, ToolError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn()?;
    let pgid = child.id() as i32;
    let readers = [
        child.stdout.take().map(|mut o| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = o.read_to_end(&mut v);
                v
            })
        }),
        child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut v = Vec::new();
                let _ = e.read_to_end(&mut v);
                v
            })
        }),
    ];
    let status = wait_within(child, tool, timeout);
    // Anything the tool started and left behind holding the pipes goes with it, so the
    // readers finish.
    kill_group(pgid);
    let [out, err] = readers.map(|r| r.and_then(|t| t.join().ok()).unwrap_or_default());
    Ok(Output {
        status: status?,
        stdout: out,
        stderr: err,
    })
}

/// Run `cmd` (its stdin, stdout and stderr as the caller set them) for at most `timeout`.
pub fn status_within(
    cmd: &mut Command,
    tool: &str,
    timeout: Duration,
) -> Result<ExitStatus, ToolError> {
    let child = cmd.process_group(0).spawn()?;
    wait_within(child, tool, timeout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_hung_tool_and_its_children_are_killed_at_the_limit() {
        // `sh` starts a grandchild that would outlive it; both must be gone at the limit.
        let marker = crate::backend::toolchain::tempfile_dir().unwrap();
        let pidfile = marker.path().join("pid");
        let t0 = Instant::now();
        let r = output_within(
            Command::new("sh")
                .arg("-c")
                .arg(format!("sleep 30 & echo $! > {}; wait", pidfile.display())),
            "sh",
            Duration::from_millis(300),
        );
        assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
        let Err(ToolError::Timeout { tool, after_s }) = r else {
            panic!("expected a timeout: {r:?}")
        };
        assert_eq!((tool.as_str(), after_s), ("sh", 0.3));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        assert!(!alive || zombie, "the grandchild {pid} outlived the limit");
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
