//! llc-19: LLVM IR text -> PTX through LLVM's NVPTX back end, with a time limit.
//!
//! llc ships with clang-19 (Debian's llvm-19), so it is found next to the clang the toolchain
//! uses and needs [`Capability::Clang`].

use std::io::Read as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{tempfile_dir, ToolError, Toolchain};
use crate::capability::Capability;

/// How long one llc run may take before it is killed.
pub const LLC_TIMEOUT: Duration = Duration::from_secs(120);

/// The llc-19 beside the toolchain's clang-19.
pub fn llc_path(tc: &Toolchain) -> Result<PathBuf, ToolError> {
    let clang = tc
        .component(Capability::Clang)
        .ok_or(ToolError::NotAvailable(Capability::Clang))?;
    let beside = clang.path.with_file_name("llc-19");
    for p in [beside, PathBuf::from("/usr/lib/llvm-19/bin/llc")] {
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(ToolError::NotAvailable(Capability::Clang))
}

/// Compile LLVM IR to PTX for `nvptx64-nvidia-cuda`, sm_90, plus `args`.
pub fn llc_ptx(tc: &Toolchain, ir: &str, args: &[&str]) -> Result<String, ToolError> {
    let llc = llc_path(tc)?;
    let dir = tempfile_dir()?;
    let input = dir.path().join("input.ll");
    let output = dir.path().join("output.ptx");
    std::fs::write(&input, ir)?;
    let mut child = Command::new(llc)
        .args(["-mtriple=nvptx64-nvidia-cuda", "-mcpu=sm_90"])
        .args(args)
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut stderr = child.stderr.take();
    // Drain stderr on a thread so a chatty llc cannot block on a full pipe.
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait()? {
            break st;
        }
        if start.elapsed() > LLC_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ToolError::Failed {
                tool: "llc-19".into(),
                log: format!("killed after {} s", LLC_TIMEOUT.as_secs()),
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let log = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(ToolError::Failed {
            tool: "llc-19".into(),
            log,
        });
    }
    Ok(std::fs::read_to_string(&output)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiles_ir_and_reports_errors() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Clang), "clang");
        let ptx = llc_ptx(
            &tc,
            "target triple = \"nvptx64-nvidia-cuda\"\ndefine i32 @f(i32 %x) { ret i32 %x }\n",
            &[],
        )
        .unwrap();
        assert!(
            ptx.contains(".func  (.param .b32 func_retval0) f(") || ptx.contains(" f("),
            "{ptx}"
        );
        let e = llc_ptx(&tc, "this is not IR", &[]).unwrap_err();
        assert!(e.to_string().contains("llc-19"), "{e}");
    }
}
