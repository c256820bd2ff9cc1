//! Crash isolation: a case that launches GPU work or talks to the kernel module runs in a
//! child process (`gpucts __case`), under the one supervisor ([`crate::backend::process`]): in
//! its own process group, with a timeout, SIGTERM then SIGKILL after a grace period.
//!
//! The child writes what it gave ([`Executed`]: the status and the figures it measured) as one
//! JSON document to the file its parent names (`--result`), so nothing the check prints on
//! stdout can be mistaken for it. A child that dies by a signal, exits without writing it, or
//! outlives its timeout is reported as `Crash` or `Timeout` with what it printed, and the run
//! goes on.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::{Executed, RunEnv};
use crate::backend::process::{Ending, RunError};
use crate::backend::toolchain::process::signal_name;
use crate::outcome::CaseStatus;

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

/// Called first in an isolated child: the kernel kills it when the parent run dies (a
/// Ctrl-C reaches only the parent's process group, and a child in its own group would
/// otherwise be left running with the GPU or the module).
pub(crate) fn die_with_parent() {
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

/// In the child: write what the case gave to `path` for the parent.
pub(crate) fn write_result(path: &Path, executed: &Executed) -> std::io::Result<()> {
    let text = serde_json::to_vec(executed).map_err(std::io::Error::other)?;
    std::fs::write(path, text)
}

/// Run one case in a child of the run's executable and turn what happens into what it gave.
/// The child looks the case up by its suite id and opens the case's device (a per-device
/// copy's, else the run's).
pub(crate) fn run_isolated(env: &RunEnv, case: &crate::suite::Case) -> Executed {
    let device = case.device.as_ref().unwrap_or(&env.config.device);
    run_child(env, &case.file, case.suite_id(), device, case.timeout).unwrap_or_else(Executed::from)
}

fn run_child(
    env: &RunEnv,
    suite_file: &Path,
    case_id: &str,
    device: &crate::backend::cuda::DeviceSelector,
    timeout: Duration,
) -> Result<Executed, CaseStatus> {
    let (exe, data) = (&env.exe, &env.data);
    // The parent owns the child's scratch directory and result file, so they go away even
    // when the child is killed.
    let dir = crate::backend::toolchain::tempfile_dir()
        .map_err(|e| CaseStatus::error(format!("cannot create a scratch directory: {e}")))?;
    let scratch = dir.path().join("scratch");
    let result = dir.path().join("result.json");
    std::fs::create_dir(&scratch)
        .map_err(|e| CaseStatus::error(format!("cannot create a scratch directory: {e}")))?;
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
    if let Some(store) = env.toolchain.replaying() {
        cmd.arg("--prebuilt").arg(store.dir());
    }
    // The child knows the same producers from files.
    for f in crate::backend::producer::user::files() {
        cmd.arg("--producer-file").arg(f);
    }
    // The child opens the same GPU.
    cmd.arg("--device").arg(device.to_string());
    // The child loads the same file within the same limits.
    if let Some(n) = env.config.max_cases_per_entry {
        cmd.arg("--max-cases").arg(n.to_string());
    }
    cmd.arg("--file")
        .arg(suite_file)
        .arg("--id")
        .arg(case_id)
        .arg("--scratch")
        .arg(&scratch)
        .arg("--result")
        .arg(&result);
    let finished = match crate::backend::process::run(&mut cmd, timeout) {
        Ok(f) => f,
        Err(RunError::Spawn(e)) => {
            return Err(CaseStatus::error(format!(
                "cannot start child {}: {e}",
                exe.display()
            )))
        }
        Err(RunError::Wait(e)) => return Err(CaseStatus::error(format!("waiting for child: {e}"))),
    };
    let stdout = String::from_utf8_lossy(&finished.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&finished.stderr).into_owned();
    let printed: String = stdout
        .lines()
        .chain(stderr.lines())
        .collect::<Vec<_>>()
        .join("\n");
    let how = match finished.ending {
        Ending::TimedOut(_) => {
            return Err(CaseStatus::Timeout {
                after_s: timeout.as_secs_f64(),
                output: tail(&printed),
            })
        }
        Ending::Exited(0) => match std::fs::read(&result) {
            Ok(bytes) => {
                return serde_json::from_slice::<Executed>(&bytes).map_err(|e| {
                    CaseStatus::error(format!("child reported an unreadable result: {e}"))
                })
            }
            Err(_) => "exited with status 0 without reporting a result".to_string(),
        },
        Ending::Exited(code) => format!("exited with status {code} without reporting a result"),
        Ending::Signalled(sig) => format!("killed by {}", signal_name(sig)),
    };
    Err(CaseStatus::Crash {
        how,
        output: tail(&printed),
    })
}
