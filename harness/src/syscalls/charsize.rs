//! ch. 3 `__assertfail`: "charSize … is always 1" — the value each producer's `assert` passes
//! as the fifth argument, read statically from its PTX (the value stored into the call's
//! fifth `.param`, through the lint's data flow of the call site), not only the parameter's
//! declared type.
//!
//! NVRTC's `assert` is CUDA's own `assert.h`; clang-19's is the area's stand-in shaped like it
//! (`sizeof(char)`); libNVVM's and llc-19's IR passes `i64 1` as clang's CUDA lowering does, so
//! for those two the case checks that the back end keeps the constant.

use crate::abi::lint::syscalls::{Syscall, Val};
use crate::area::CaseContext;
use crate::outcome::CaseStatus;

use super::producers::{batch, Producer};

/// What the chapter requires of `charSize`.
pub(crate) const CHAR_SIZE: i64 = 1;

/// Every `__assertfail` call's fifth argument is the immediate 1 (one byte per character).
pub fn judge(calls: &[crate::abi::lint::syscalls::CallSite]) -> Result<usize, String> {
    let asserts: Vec<_> = calls
        .iter()
        .filter(|c| c.call == Syscall::Assertfail)
        .collect();
    if asserts.is_empty() {
        return Err("no call of `__assertfail`".into());
    }
    for c in &asserts {
        match c.args.get(4).map(|a| (&a.value, a.bits)) {
            Some((Some(Val::Imm(CHAR_SIZE)), _)) => {}
            Some((v, bits)) => {
                return Err(format!(
                    "line {}: charSize is {v:?} ({} bits)",
                    c.line,
                    bits.map_or("?".into(), |b| b.to_string())
                ))
            }
            None => return Err(format!("line {}: no fifth argument", c.line)),
        }
    }
    Ok(asserts.len())
}

pub fn case(ctx: &CaseContext, producer: Producer) -> CaseStatus {
    let slot = batch(ctx, producer);
    match slot.get() {
        Some(Ok(b)) => match judge(&b.calls) {
            Ok(n) => CaseStatus::pass_with(format!("{n} __assertfail call(s) pass charSize 1")),
            Err(observed) => CaseStatus::fail(
                format!("charSize {CHAR_SIZE} in every __assertfail call"),
                observed,
            ),
        },
        Some(Err(e)) => CaseStatus::error(e),
        None => CaseStatus::error("batch not computed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::lint::syscalls::call_sites;

    fn module(char_size: &str) -> String {
        format!(
            ".version 8.5\n.target sm_90\n.address_size 64\n\
             .extern .func __assertfail(.param .b64 a, .param .b64 b, .param .b32 c, .param .b64 d, .param .b64 e);\n\
             .global .align 1 .b8 msg[2] = {{65, 0}};\n\
             .visible .entry k()\n{{\n\t.reg .b64 %rd<3>;\n\tmov.u64 %rd1, msg;\n\tcvta.global.u64 %rd2, %rd1;\n\
             \t{{\n\t.param .b64 param0;\n\tst.param.b64 [param0], %rd2;\n\t.param .b64 param1;\n\tst.param.b64 [param1], %rd2;\n\
             \t.param .b32 param2;\n\tst.param.b32 [param2], 7;\n\t.param .b64 param3;\n\tst.param.b64 [param3], %rd2;\n\
             \t.param .b64 param4;\n\tst.param.b64 [param4], {char_size};\n\
             \tcall.uni __assertfail, (param0, param1, param2, param3, param4);\n\t}}\n\tret;\n}}\n"
        )
    }

    #[test]
    fn the_value_not_the_type_is_judged() {
        assert_eq!(judge(&call_sites(&module("1"))), Ok(1));
        // sizeof(wchar_t) or a UTF-16 unit would be 4 or 2: refused by the chapter's rule.
        let e = judge(&call_sites(&module("2"))).unwrap_err();
        assert!(e.contains("Imm(2)"), "{e}");
        assert!(judge(&[]).is_err());
    }
}
