//! Crash isolation: a case that launches GPU work or talks to the kernel module runs in a
//! child process (`gpucts __case`), in its own process group, with a timeout.
//!
//! The child prints its [`CaseStatus`] as one line `GPUCTS-RESULT <json>` on stdout. A child
//! that dies by a signal, exits without that line, or outlives its timeout is reported as
//! `Crash` or `Timeout` with what it printed, and the run goes on.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::outcome::CaseStatus;

pub const RESULT_TAG: &str = "GPUCTS-RESULT ";

/// After SIGTERM to the group, how long before SIGKILL.
const GRACE: Duration = Duration::from_secs(2);
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
        .arg(scratch.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return CaseStatus::error(format!("cannot start child {}: {e}", exe.display())),
    };
    let pgid = child.id() as i32;
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });

    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => return CaseStatus::error(format!("waiting for child: {e}")),
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            // SAFETY: signalling the child's own process group.
            unsafe { libc::kill(-pgid, libc::SIGTERM) };
            let grace_end = Instant::now() + GRACE;
            let s = loop {
                if let Ok(Some(s)) = child.try_wait() {
                    break Some(s);
                }
                if Instant::now() >= grace_end {
                    // SAFETY: as above.
                    unsafe { libc::kill(-pgid, libc::SIGKILL) };
                    break child.wait().ok();
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            break s;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // Grandchildren still holding the pipes are in the same group: make sure they go too, so
    // the readers below finish.
    // SAFETY: signalling the child's own (now leaderless) process group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let stdout = String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned();
    let stderr = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
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

    if timed_out {
        return CaseStatus::Timeout {
            after_s: timeout.as_secs_f64(),
            output: tail(&printed),
        };
    }
    match (status, reported) {
        (Some(s), Some(Ok(status))) if s.success() => status,
        (Some(s), Some(Err(e))) if s.success() => {
            CaseStatus::error(format!("child reported an unreadable result: {e}"))
        }
        (Some(s), _) => {
            let how = match (s.signal(), s.code()) {
                (Some(sig), _) => format!("killed by {}", signal_name(sig)),
                (None, Some(code)) => {
                    format!("exited with status {code} without reporting a result")
                }
                _ => "ended without a status".into(),
            };
            CaseStatus::Crash {
                how,
                output: tail(&printed),
            }
        }
        (None, _) => CaseStatus::error("lost the child process"),
    }
}
