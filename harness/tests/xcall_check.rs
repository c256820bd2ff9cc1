//! End-to-end tests of `gpucts xcall check` on hand-written PTX pairs: exit 0 when they agree,
//! 1 with the message format on a mismatch, 2 with `file:line` on bad input.

use std::process::{Command, Output};

fn check(files: &[(&str, &str)]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpucts"));
    cmd.current_dir(dir.path()).args(["xcall", "check"]);
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
        cmd.arg(name);
    }
    cmd.output().unwrap()
}

const CALLEE: &str = ".version 8.5\n.target sm_90\n.address_size 64\n.visible .func (.param .b32 func_retval0) f(\n\t.param .b32 f_param_0,\n\t.param .align 8 .b8 f_param_1[16]\n)\n{\n\tret;\n}\n";

fn caller(second: &str) -> String {
    format!(".version 8.5\n.target sm_90\n.address_size 64\n.extern .func (.param .b32 func_retval0) f(.param .b32 a, {second});\n.visible .entry k()\n{{\n\t{{\n\t.param .b32 param0;\n\t{}\n\t.param .b32 retval0;\n\tcall.uni (retval0), f, (param0, param1);\n\t}}\n\tret;\n}}\n", second.replace(" b", " param1").to_string() + ";")
}

#[test]
fn matching_pair_exits_0() {
    let o = check(&[
        ("caller.ptx", &caller(".param .align 8 .b8 b[16]")),
        ("other.ptx", CALLEE),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn mismatch_exits_1_with_the_message() {
    let o = check(&[
        ("caller.ptx", &caller(".param .b64 b")),
        ("other.ptx", CALLEE),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("caller.ptx:11: function f, parameter 2: caller passes .b64, callee (other.ptx:4) takes .align 8 .b8[16]"),
        "{out}"
    );
}

#[test]
fn bad_input_exits_2_with_a_line() {
    for (text, want) in [
        ("", "e.ptx:1: empty file"),
        ("garbage here\n", "e.ptx:1: expected `.version`"),
        (
            ".version 8.5\n.func f()\n{\n\tret;\n",
            "e.ptx:5: expected `}`",
        ),
        (
            ".version 8.5\n.func f()\n{\n}\n.func f()\n{\n}\n",
            "e.ptx:5: function `f` defined twice",
        ),
    ] {
        let o = check(&[("e.ptx", text)]);
        assert_eq!(o.status.code(), Some(2), "{text:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.starts_with(want), "{text:?}: {err}");
    }
}
