//! The `syscalls` area: ptx-interop 13.2 ch. 3, the driver-provided functions `vprintf`,
//! `malloc`, `free` and `__assertfail`, declared with the guide's prototypes.

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::capability::Capability;
use crate::cubin::Cubin;
use crate::outcome::CaseStatus;

/// The system calls of ch. 3.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Syscall {
    Vprintf,
    Malloc,
    Free,
    #[serde(rename = "__assertfail")]
    Assertfail,
}

/// The `check:` vocabulary of `suites/syscalls.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SyscallsCheck {
    /// A module that declares `call` with the guide's prototype (for `.address_size 64`: every
    /// pointer `t1` and `size_t` `t2` is `.b64`) and calls it from a kernel assembles, and the
    /// cubin leaves the function undefined for the driver to provide.
    GuidePrototype { call: Syscall },
}

impl Syscall {
    fn name(self) -> &'static str {
        match self {
            Syscall::Vprintf => "vprintf",
            Syscall::Malloc => "malloc",
            Syscall::Free => "free",
            Syscall::Assertfail => "__assertfail",
        }
    }

    /// The prototype for 64-bit addresses, built from ch. 3's parameter definitions.
    fn prototype64(self) -> &'static str {
        match self {
            Syscall::Vprintf => ".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);",
            Syscall::Malloc => ".extern .func (.param .b64 ptr) malloc (.param .b64 size);",
            Syscall::Free => ".extern .func free (.param .b64 ptr);",
            Syscall::Assertfail => ".extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b64 charSize);",
        }
    }

    /// A call with generic-space pointers, as ch. 3 requires of pointer arguments.
    fn call64(self) -> &'static str {
        match self {
            Syscall::Vprintf => "{ .param .b64 a0; st.param.b64 [a0], %rd2; .param .b64 a1; st.param.b64 [a1], 0; .param .s32 r0; call.uni (r0), vprintf, (a0, a1); ld.param.s32 %r1, [r0]; }",
            Syscall::Malloc => "{ .param .b64 a0; st.param.b64 [a0], 64; .param .b64 r0; call.uni (r0), malloc, (a0); ld.param.b64 %rd3, [r0]; }",
            Syscall::Free => "{ .param .b64 a0; st.param.b64 [a0], %rd2; call.uni free, (a0); }",
            Syscall::Assertfail => "{ .param .b64 a0; st.param.b64 [a0], %rd2; .param .b64 a1; st.param.b64 [a1], %rd2; .param .b32 a2; st.param.b32 [a2], 7; .param .b64 a3; st.param.b64 [a3], %rd2; .param .b64 a4; st.param.b64 [a4], 1; call.uni __assertfail, (a0, a1, a2, a3, a4); }",
        }
    }
}

fn guide_prototype(ctx: &CaseContext, call: Syscall) -> CaseStatus {
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n{}\n\
         .global .align 1 .b8 gpucts_text[3] = {{103, 112, 0}};\n\
         .visible .entry gpucts_k() {{\n  .reg .b64 %rd<4>; .reg .b32 %r<2>;\n\
         mov.u64 %rd1, gpucts_text;\n  cvta.global.u64 %rd2, %rd1;\n  {}\n  ret;\n}}\n",
        call.prototype64(),
        call.call64()
    );
    let cubin = match ctx.toolchain.ptxas(&ptx, "sm_90", &[]) {
        Ok(c) => c,
        Err(e) => {
            return CaseStatus::fail_detail(
                "ptxas accepts the guide's prototype and a call through it",
                "ptxas rejected it",
                e.to_string(),
            )
        }
    };
    match Cubin::parse(&cubin) {
        Ok(elf)
            if elf
                .symbol(call.name())
                .is_some_and(|s| s.section.is_empty()) =>
        {
            CaseStatus::pass()
        }
        Ok(_) => CaseStatus::fail(
            format!(
                "`{}` left undefined in the cubin for the driver to provide",
                call.name()
            ),
            "no undefined symbol of that name",
        ),
        Err(e) => CaseStatus::error(e),
    }
}

impl Check for SyscallsCheck {
    fn requires(&self) -> Vec<Capability> {
        vec![Capability::Ptxas]
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            SyscallsCheck::GuidePrototype { call } => guide_prototype(ctx, *call),
        }
    }
}
