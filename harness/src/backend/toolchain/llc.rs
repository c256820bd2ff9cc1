//! llc-19: LLVM IR -> PTX for `nvptx64-nvidia-cuda` through LLVM's NVPTX back end, run through
//! [`super::process`] (time limit, process group killed on expiry). llc ships with clang-19
//! (Debian's llvm-19), so it is found next to the clang the toolchain uses and needs
//! [`Capability::Clang`].

use std::path::PathBuf;
use std::process::Command;

use super::{process, tempfile_dir, ToolError, Toolchain};
use crate::capability::Capability;

/// The llc-19 beside the toolchain's clang-19, else Debian's llvm-19 copy.
pub(crate) fn llc_path(tc: &Toolchain) -> Result<PathBuf, ToolError> {
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

/// Compile LLVM IR text to PTX with
/// `llc-19 -mtriple=nvptx64-nvidia-cuda -mcpu=<cpu> <args>`.
pub(crate) fn llc_ptx(
    tc: &Toolchain,
    ir: &str,
    cpu: &str,
    args: &[&str],
) -> Result<String, ToolError> {
    // llc-19 is clang-19's LLVM: the same version (and, replaying, the same store).
    let version = tc
        .component(Capability::Clang)
        .ok_or(ToolError::NotAvailable(Capability::Clang))?
        .version
        .clone();
    let mut parts = vec![cpu];
    parts.extend_from_slice(args);
    parts.push(ir);
    super::prebuilt::through(
        tc.settings().prebuilt.as_deref(),
        super::prebuilt::Tool::Llc,
        &version,
        &parts,
        || run_llc(tc, ir, cpu, args),
    )
}

fn run_llc(tc: &Toolchain, ir: &str, cpu: &str, args: &[&str]) -> Result<String, ToolError> {
    let llc = llc_path(tc)?;
    let dir = tempfile_dir()?;
    let input = dir.path().join("input.ll");
    let output = dir.path().join("output.ptx");
    std::fs::write(&input, ir)?;
    let mut cmd = Command::new(&llc);
    cmd.arg("-mtriple=nvptx64-nvidia-cuda")
        .arg(format!("-mcpu={cpu}"))
        .args(args)
        .arg(&input)
        .arg("-o")
        .arg(&output);
    let out = process::output_within(&mut cmd, "llc-19", tc.tool_timeout())?;
    if !out.status.success() {
        return Err(ToolError::Failed {
            tool: "llc-19".into(),
            log: String::from_utf8_lossy(&out.stderr).into_owned(),
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
            "sm_90",
            &[],
        )
        .unwrap();
        assert!(
            ptx.contains(".func  (.param .b32 func_retval0) f("),
            "{ptx}"
        );
        let e = llc_ptx(&tc, "this is not IR", "sm_90", &[]).unwrap_err();
        assert!(e.to_string().contains("llc-19"), "{e}");
    }
}
