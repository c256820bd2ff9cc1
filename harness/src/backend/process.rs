//! The one process supervisor: every child the harness starts (an isolated case, ptxas, clang,
//! a `--version` probe, pip) runs through [`run`] or [`run_uncaptured`].
//!
//! The child runs in its own process group with stdin from `/dev/null`. When the limit passes
//! the group gets SIGTERM, then, if the child is still there after [`GRACE`], SIGKILL. The
//! child is always reaped, and whatever it left in its group (a grandchild still holding the
//! pipes) is killed when it ends, so reading its output never hangs on them.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Between SIGTERM and SIGKILL: long enough for a child that handles SIGTERM to release what
/// it holds (a GPU context, the kernel module, a temporary file) and flush its output, short
/// enough that a hung child costs little more than its limit.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// How a supervised child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited by itself with this code, within the limit.
    Exited(i32),
    /// A signal it did not get from the supervisor ended it, within the limit.
    Signalled(i32),
    /// It outlived the limit and was stopped.
    TimedOut(Stopped),
}

/// What stopped a child that outlived its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stopped {
    /// It ended within the grace period after SIGTERM.
    ByTerm,
    /// It was still there after the grace period and got SIGKILL.
    ByKill,
}

/// A reaped child and everything it wrote.
#[derive(Debug)]
pub struct Finished {
    pub ending: Ending,
    /// The status `wait` returned (after a timeout: the status the stopping signal left).
    pub status: ExitStatus,
    /// What it wrote to stdout; empty where the caller did not pipe it ([`run_uncaptured`]).
    pub stdout: Vec<u8>,
    /// What it wrote to stderr; empty where the caller did not pipe it.
    pub stderr: Vec<u8>,
}

/// Why a child could not be supervised.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot start: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("cannot wait: {0}")]
    Wait(#[source] std::io::Error),
}

impl RunError {
    /// The underlying error, whichever step it came from.
    pub(crate) fn into_io(self) -> std::io::Error {
        match self {
            RunError::Spawn(e) | RunError::Wait(e) => e,
        }
    }
}

/// Run `cmd` for at most `limit` (then [`GRACE`]), capturing its stdout and stderr.
pub fn run(cmd: &mut Command, limit: Duration) -> Result<Finished, RunError> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    supervise(cmd, limit)
}

/// Run `cmd` for at most `limit` (then [`GRACE`]), its stdout and stderr going where the caller
/// set them (stdin is still `/dev/null`).
pub(crate) fn run_uncaptured(cmd: &mut Command, limit: Duration) -> Result<Finished, RunError> {
    supervise(cmd, limit)
}

fn signal_group(pgid: i32, sig: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid addresses the process
    // group `supervise` created for the child (ESRCH when it is already gone is harmless).
    unsafe { libc::kill(-pgid, sig) };
}

fn read_all(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
    pipe.map(|mut p| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = p.read_to_end(&mut v);
            v
        })
    })
}

fn supervise(cmd: &mut Command, limit: Duration) -> Result<Finished, RunError> {
    // Spawned on the caller's thread: a child that asks to die with its parent
    // (PR_SET_PDEATHSIG) dies when the thread that started it ends, which must be the caller.
    let mut child = cmd
        .stdin(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(RunError::Spawn)?;
    let pgid = child.id() as i32;
    // Both pipes are drained at once, each on its own thread, so a child that fills one while
    // nobody reads it cannot block.
    let readers = [read_all(child.stdout.take()), read_all(child.stderr.take())];
    let (status, stopped) = wait_within(child, pgid, limit);
    // Anything the child started and left behind in its group goes with it, so the readers
    // finish.
    signal_group(pgid, libc::SIGKILL);
    let [stdout, stderr] = readers.map(|r| r.and_then(|t| t.join().ok()).unwrap_or_default());
    let status = status.map_err(RunError::Wait)?;
    let ending = match (stopped, status.code(), status.signal()) {
        (Some(how), _, _) => Ending::TimedOut(how),
        (None, Some(code), _) => Ending::Exited(code),
        (None, None, Some(sig)) => Ending::Signalled(sig),
        (None, None, None) => {
            return Err(RunError::Wait(std::io::Error::other(format!(
                "wait returned neither an exit code nor a signal: {status:?}"
            ))))
        }
    };
    Ok(Finished {
        ending,
        status,
        stdout,
        stderr,
    })
}

/// Wait for `child` at most `limit`; past it, SIGTERM its group, wait [`GRACE`], SIGKILL.
/// Returns the reaped status and, after a timeout, what stopped it.
fn wait_within(
    mut child: Child,
    pgid: i32,
    limit: Duration,
) -> (std::io::Result<ExitStatus>, Option<Stopped>) {
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let r = child.wait();
        let _ = tx.send(());
        r
    });
    let stopped = match rx.recv_timeout(limit) {
        Ok(()) => None,
        Err(_) => {
            signal_group(pgid, libc::SIGTERM);
            match rx.recv_timeout(GRACE) {
                Ok(()) => Some(Stopped::ByTerm),
                Err(_) => {
                    signal_group(pgid, libc::SIGKILL);
                    Some(Stopped::ByKill)
                }
            }
        }
    };
    let status = waiter
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the waiting thread panicked")));
    (status, stopped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    /// Whether `pid` is gone (or only a zombie waiting for its parent, init).
    fn gone(pid: i32) -> bool {
        // SAFETY: signal 0 only asks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        !alive || zombie
    }

    #[test]
    fn a_normal_exit_comes_back_with_its_output() {
        let f = run(
            &mut sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(f.ending, Ending::Exited(3));
        assert_eq!(f.status.code(), Some(3));
        assert_eq!(f.stdout, b"out\n");
        assert_eq!(f.stderr, b"err\n");
    }

    #[test]
    fn a_signal_within_the_limit_is_told_apart() {
        let f = run(
            &mut sh("echo before; kill -SEGV $$"),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(f.ending, Ending::Signalled(libc::SIGSEGV));
        assert_eq!(f.stdout, b"before\n");
    }

    #[test]
    fn a_child_that_ends_on_sigterm_is_stopped_by_term() {
        let f = run(
            &mut sh("echo started; exec sleep 30"),
            Duration::from_millis(300),
        )
        .unwrap();
        // Ended within the grace period, so SIGKILL was never needed.
        assert_eq!(f.ending, Ending::TimedOut(Stopped::ByTerm));
        assert_eq!(f.status.signal(), Some(libc::SIGTERM));
        assert_eq!(f.stdout, b"started\n");
    }

    #[test]
    fn a_child_that_ignores_sigterm_is_killed_after_the_grace_period() {
        let limit = Duration::from_millis(300);
        let t0 = Instant::now();
        let f = run(
            &mut sh("trap '' TERM; echo started; sleep 30; echo never"),
            limit,
        )
        .unwrap();
        let took = t0.elapsed();
        assert_eq!(f.ending, Ending::TimedOut(Stopped::ByKill));
        assert_eq!(f.status.signal(), Some(libc::SIGKILL));
        assert_eq!(f.stdout, b"started\n");
        assert!(
            took >= limit + GRACE,
            "killed before the grace period: {took:?}"
        );
        // Generous slack: two loaded cores must not make this flaky.
        assert!(took < limit + GRACE + Duration::from_secs(8), "{took:?}");
    }

    #[test]
    fn a_grandchild_holding_the_pipes_does_not_hang_the_reader() {
        // The child exits at once; its background `sleep` still holds stdout and stderr.
        let t0 = Instant::now();
        let f = run(&mut sh("sleep 30 & echo $!"), Duration::from_secs(60)).unwrap();
        assert_eq!(f.ending, Ending::Exited(0));
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        let pid: i32 = String::from_utf8_lossy(&f.stdout).trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(gone(pid), "the grandchild {pid} outlived its parent");
    }

    #[test]
    fn a_hung_child_and_its_grandchild_are_killed_at_the_limit() {
        let t0 = Instant::now();
        let f = run(
            &mut sh("sleep 30 & echo $!; wait"),
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(matches!(f.ending, Ending::TimedOut(_)), "{:?}", f.ending);
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        let pid: i32 = String::from_utf8_lossy(&f.stdout).trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(gone(pid), "the grandchild {pid} outlived the limit");
    }

    #[test]
    fn a_chatty_child_does_not_deadlock_on_a_full_pipe() {
        // Far more than a pipe holds (64 KiB), to stderr first: a reader that drained only
        // stdout would leave the child blocked, and the limit would end it.
        const N: usize = 3 << 20;
        let f = run(
            &mut sh(&format!(
                "head -c {N} /dev/zero >&2; head -c {N} /dev/zero; head -c {N} /dev/zero >&2"
            )),
            Duration::from_secs(120),
        )
        .unwrap();
        assert_eq!(f.ending, Ending::Exited(0));
        assert_eq!((f.stdout.len(), f.stderr.len()), (N, 2 * N));
    }

    #[test]
    fn an_uncaptured_run_leaves_the_output_alone() {
        let f = run_uncaptured(
            sh("exit 4").stdout(Stdio::null()).stderr(Stdio::null()),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(f.ending, Ending::Exited(4));
        assert!(f.stdout.is_empty() && f.stderr.is_empty());
    }

    #[test]
    fn a_missing_program_is_a_spawn_error() {
        let r = run(
            &mut Command::new("/nonexistent/gpucts-no-such-tool"),
            Duration::from_secs(60),
        );
        assert!(matches!(r, Err(RunError::Spawn(_))), "{r:?}");
    }
}
