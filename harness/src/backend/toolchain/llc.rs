//! llc-19: LLVM IR -> PTX for `nvptx64-nvidia-cuda`, with a timeout (the process is killed
//! when it expires). llc sits next to the clang-19 the toolchain found.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{tempfile_dir, ToolError, Toolchain};
use crate::capability::Capability;

/// How long one llc run may take.
pub const LLC_TIMEOUT: Duration = Duration::from_secs(120);

fn llc_path(tc: &Toolchain) -> Result<PathBuf, ToolError> {
    let clang = tc
        .component(Capability::Clang)
        .ok_or(ToolError::NotAvailable(Capability::Clang))?;
    let next = clang.path.with_file_name("llc-19");
    Ok(if next.is_file() {
        next
    } else {
        PathBuf::from("/usr/lib/llvm-19/bin/llc")
    })
}

/// Compile LLVM IR text to PTX with `llc-19 -march=nvptx64 -mcpu=<cpu> <args>`.
pub fn llc_ptx(tc: &Toolchain, ir: &str, cpu: &str, args: &[&str]) -> Result<String, ToolError> {
    let llc = llc_path(tc)?;
    let dir = tempfile_dir()?;
    let input = dir.path().join("input.ll");
    let output = dir.path().join("output.ptx");
    std::fs::write(&input, ir)?;
    let mut child = Command::new(&llc)
        .arg("-march=nvptx64")
        .arg(format!("-mcpu={cpu}"))
        .args(args)
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if start.elapsed() > LLC_TIMEOUT {
            // The child is ours; kill it and reap it so no zombie is left.
            let _ = child.kill();
            let _ = child.wait();
            return Err(ToolError::Failed {
                tool: "llc".into(),
                log: format!("killed after {}s", LLC_TIMEOUT.as_secs()),
            });
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut log = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut log);
    }
    if !status.success() {
        return Err(ToolError::Failed {
            tool: "llc".into(),
            log,
        });
    }
    Ok(std::fs::read_to_string(&output)?)
}
