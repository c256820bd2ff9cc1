//! ch. 3 vprintf's status observed on a GPU. The chapter declares `vprintf` returning an `.s32`
//! status and says no more of it; the CUDA C++ Programming Guide ("Formatted Output") defines
//! printf's value: unlike C's printf (characters written) it is the number of arguments
//! parsed, 0 when none follow the format, -1 when the format is NULL, -2 on an internal error.
//! A kernel written here in PTX with the chapter's prototype calls `vprintf` with formats of
//! 0, 1 and 3 arguments (valist in local memory, pointers generic) and stores each `.s32`
//! status; a second kernel calls it with a NULL format. The host compares the statuses with
//! the guide's values and checks that the three lines were printed.

use crate::backend::cuda::{self, KernelArg, LaunchConfig, Session};
use crate::outcome::CaseStatus;

/// The formats of the first kernel, the arguments each takes, and the line each prints.
pub const CALLS: [(&str, &[u32], &str); 3] = [
    ("gpucts vprintf status 0\n", &[], "gpucts vprintf status 0"),
    (
        "gpucts vprintf status 1 %d\n",
        &[7],
        "gpucts vprintf status 1 7",
    ),
    (
        "gpucts vprintf status 3 %d %d %d\n",
        &[1, 2, 3],
        "gpucts vprintf status 3 1 2 3",
    ),
];

/// The status the Programming Guide gives each call: the number of arguments parsed.
pub fn expected() -> [i32; 3] {
    [0, 1, 3]
}

/// The status for a NULL format (the guide: -1).
pub const NULL_FORMAT: i32 = -1;

pub const KERNEL: &str = "gpucts_vprintf_status";
pub const NULL_KERNEL: &str = "gpucts_vprintf_null";

fn bytes_of(s: &str) -> String {
    s.bytes()
        .chain(std::iter::once(0))
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One call: format `f<i>` and the valist (or 0), its status stored at `out + 4 i`.
fn call(i: usize, args: &[u32]) -> String {
    let mut s = String::new();
    let valist = if args.is_empty() {
        "0".to_string()
    } else {
        for (k, a) in args.iter().enumerate() {
            s += &format!("\tst.local.u32 [gpucts_valist+{}], {a};\n", 4 * k);
        }
        "%rd5".to_string()
    };
    s += &format!(
        "\tmov.u64 %rd2, gpucts_f{i};\n\tcvta.global.u64 %rd3, %rd2;\n\
         \t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd3;\n\t.param .b64 param1;\n\
         \tst.param.b64 [param1], {valist};\n\t.param .s32 retval0;\n\
         \tcall.uni (retval0), vprintf, (param0, param1);\n\tld.param.s32 %r1, [retval0];\n\t}}\n\
         \tst.global.s32 [%rd1+{}], %r1;\n",
        4 * i
    );
    s
}

/// The module: the chapter's prototype, the formats, both kernels.
pub fn module() -> String {
    let mut s = String::from(
        ".version 8.0\n.target sm_90\n.address_size 64\n\n\
         .extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);\n",
    );
    for (i, (f, _, _)) in CALLS.iter().enumerate() {
        s += &format!(
            ".global .align 1 .b8 gpucts_f{i}[{}] = {{{}}};\n",
            f.len() + 1,
            bytes_of(f)
        );
    }
    s += &format!(
        "\n.visible .entry {KERNEL}(.param .u64 out)\n{{\n\
         \t.local .align 8 .b8 gpucts_valist[16];\n\t.reg .b32 %r<2>;\n\t.reg .b64 %rd<6>;\n\
         \tld.param.u64 %rd4, [out];\n\tcvta.to.global.u64 %rd1, %rd4;\n\
         \tmov.u64 %rd4, gpucts_valist;\n\tcvta.local.u64 %rd5, %rd4;\n"
    );
    for (i, (_, args, _)) in CALLS.iter().enumerate() {
        s += &call(i, args);
    }
    s += &format!(
        "\tret;\n}}\n\n.visible .entry {NULL_KERNEL}(.param .u64 out)\n{{\n\
         \t.reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n\
         \tld.param.u64 %rd2, [out];\n\tcvta.to.global.u64 %rd1, %rd2;\n\
         \t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], 0;\n\t.param .b64 param1;\n\
         \tst.param.b64 [param1], 0;\n\t.param .s32 retval0;\n\
         \tcall.uni (retval0), vprintf, (param0, param1);\n\tld.param.s32 %r1, [retval0];\n\t}}\n\
         \tst.global.s32 [%rd1], %r1;\n\tret;\n}}\n"
    );
    s
}

/// The statuses and the captured output against the guide; `null` is the NULL-format
/// kernel's status, or why it did not complete.
pub fn judge(statuses: [i32; 3], null: Result<i32, String>, printed: &str) -> CaseStatus {
    let want = expected();
    for (i, (got, w)) in statuses.iter().zip(want).enumerate() {
        if *got != w {
            return CaseStatus::fail(
                format!(
                    "vprintf's status for a format of {} argument(s): {w} (the number of arguments parsed)",
                    CALLS[i].1.len()
                ),
                format!("{got} (statuses {statuses:?})"),
            );
        }
    }
    for (_, _, line) in CALLS {
        if !printed.lines().any(|l| l == line) {
            return CaseStatus::fail(format!("the line `{line}` printed"), format!("{printed:?}"));
        }
    }
    match null {
        Ok(NULL_FORMAT) => CaseStatus::pass_with(format!(
            "statuses {statuses:?} for 0, 1 and 3 arguments; {NULL_FORMAT} for a NULL format"
        )),
        Ok(got) => CaseStatus::fail(
            format!("vprintf's status for a NULL format: {NULL_FORMAT}"),
            got.to_string(),
        ),
        Err(why) => CaseStatus::fail(
            format!("vprintf's status for a NULL format: {NULL_FORMAT}"),
            format!("the kernel calling vprintf(NULL, NULL) did not complete: {why}"),
        ),
    }
}

fn launch_one(
    s: &Session,
    m: &cuda::Module,
    kernel: &str,
    words: usize,
) -> Result<Vec<i32>, cuda::DriverCallError> {
    let out = s.buffer(4 * words)?;
    s.memset(out.ptr, 0x5a, 4 * words)?;
    let f = s.function(m, kernel)?;
    let cfg = LaunchConfig {
        grid: 1,
        block: 1,
        shared_bytes: 0,
    };
    // SAFETY: both kernels take one `.u64` (the output words).
    unsafe { s.launch(f, cfg, &[KernelArg::Ptr(out.ptr)]) }?;
    s.synchronize()?;
    Ok(s.copy_u32_to_host(out.ptr, words)?
        .into_iter()
        .map(|w| w as i32)
        .collect())
}

/// The `syscalls.gpu.vprintf_status` case, on the run's GPU (`ctx`).
pub fn case(ctx: &crate::area::CaseContext) -> CaseStatus {
    let s = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(format!("no CUDA context: {e}")),
    };
    let m = match s.load_ptx(&module()) {
        Ok(m) => m,
        Err(e) => {
            return CaseStatus::fail_detail(
                "the driver JIT loads the vprintf module (ptxas assembles it)",
                format!("{:?}", e.code),
                e.log,
            )
        }
    };
    let captured = cuda::capture_output(|| {
        let first = launch_one(&s, &m, KERNEL, 3);
        // The NULL format last: should it fault, the first kernel's statuses are kept.
        let null = first
            .as_ref()
            .ok()
            .map(|_| launch_one(&s, &m, NULL_KERNEL, 1));
        (first, null)
    });
    let ((first, null), printed) = match captured {
        Ok(c) => c,
        Err(e) => return CaseStatus::error(format!("cannot capture the device output: {e}")),
    };
    let statuses = match first {
        Ok(v) => [v[0], v[1], v[2]],
        Err(e) => return CaseStatus::fail(format!("`{KERNEL}` runs"), e.to_string()),
    };
    let null = match null {
        Some(Ok(v)) => Ok(v[0]),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("not launched".into()),
    };
    judge(statuses, null, &printed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::toolchain::Toolchain;

    /// The module assembles for sm_90 and passes the chapter-3 lint (the prototype is the
    /// chapter's, pointers generic).
    #[test]
    fn module_assembles_and_lints() {
        let ptx = module();
        let v = crate::abi::lint::lint_source(&ptx, "vprintf_status.ptx").unwrap();
        assert!(v.is_empty(), "{v:?}");
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Ptxas), "ptxas");
        tc.ptxas(&ptx, "sm_90", &[])
            .unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    }

    /// The guide's values pass; a byte count (C's printf) or a missing line fails.
    #[test]
    fn judging_follows_the_guide() {
        let printed =
            "gpucts vprintf status 0\ngpucts vprintf status 1 7\ngpucts vprintf status 3 1 2 3\n";
        assert!(matches!(
            judge([0, 1, 3], Ok(-1), printed),
            CaseStatus::Pass { .. }
        ));
        // C's printf would return the characters written: 24, 26, 30.
        assert!(matches!(
            judge([24, 26, 30], Ok(-1), printed),
            CaseStatus::Fail { .. }
        ));
        assert!(matches!(
            judge([0, 1, 3], Ok(-1), "gpucts vprintf status 0\n"),
            CaseStatus::Fail { .. }
        ));
        assert!(matches!(
            judge([0, 1, 3], Err("CUDA_ERROR_LAUNCH_FAILED".into()), printed),
            CaseStatus::Fail { .. }
        ));
        assert_eq!(CALLS[0].0.len(), 24);
    }
}
