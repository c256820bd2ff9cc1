//! End-to-end tests of `gpucts abi lint` exit codes on PTX bodies (issue 19): 0 for what
//! ptxas 12.9 accepts, 1 with `file:line:column` for what it refuses after parsing (unknown
//! opcode, undeclared register), 2 with `file:line:column` for what it refuses as a parsing
//! error (a missing `;`); a byte that is not UTF-8 is named by its own value; the size limit
//! can be raised with `--max-ptx-bytes`.

mod common;

use common::{gpucts, text};

fn lint(name: &str, bytes: &[u8], extra: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    let p = path.display().to_string();
    let mut args = vec!["abi", "lint"];
    args.extend_from_slice(extra);
    args.push(&p);
    let o = gpucts(&args);
    let (out, err) = text(&o);
    (o.status.code().unwrap_or(-1), out, err.replace(&p, name))
}

fn module(stmt: &str) -> String {
    format!(
        ".version 8.8\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n\t.reg .b32 %r<4>;\n{stmt}\n\tret;\n}}\n"
    )
}

#[test]
fn body_errors_give_exit_1_or_2_with_a_position() {
    // ptxas 12.9 accepts it.
    let (code, out, _) = lint("ok.ptx", module("\tadd.s32 %r1, %r2, %r3;").as_bytes(), &[]);
    assert_eq!(code, 0, "{out}");
    // ptxas 12.9: "line 7; error : Not a name of any known instruction: 'foo'".
    let (code, out, _) = lint("op.ptx", module("\tfoo.b32 %r1, %r2;").as_bytes(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(":7:2: `foo` is not an instruction"), "{out}");
    // ptxas 12.9: "line 7; error : Unknown symbol '%r9'".
    let (code, out, _) = lint("reg.ptx", module("\tmov.u32 %r9, %r1;").as_bytes(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(":7:10: `%r9` is used in `k`"), "{out}");
    // ptxas 12.9: "line 8; fatal : Parsing error near 'ret'".
    let (code, _, err) = lint(
        "semi.ptx",
        module("\tadd.s32 %r1, %r2, %r3").as_bytes(),
        &[],
    );
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("semi.ptx:8:2: expected `,` between operands or `;`"),
        "{err}"
    );
}

#[test]
fn a_byte_that_is_not_utf8_is_named_by_its_value() {
    // 0xFF is never UTF-8: refused outside a comment, reported inside one, as 0xFF both
    // times (ptxas 12.9: "Unexpected non-ASCII character").
    let mut b = module("\tadd.s32 %r1, %r2, %r3;").into_bytes();
    let at = b.windows(7).position(|w| w == b"add.s32").unwrap();
    b.insert(at, 0xFF);
    let (code, _, err) = lint("ff.ptx", &b, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("ff.ptx:7:2: "), "{err}");
    assert!(err.contains("non-ASCII byte 0xFF"), "{err}");
    let mut c = module("\t// caf\u{e9}").into_bytes();
    let e9 = c.iter().position(|&x| x == 0xC3).unwrap();
    c.splice(e9..e9 + 2, [0xE9]);
    let (code, out, _) = lint("latin1.ptx", &c, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("latin1.ptx:7:8: non-ASCII byte 0xE9"), "{out}");
}

#[test]
fn the_size_limit_is_stated_and_can_be_raised() {
    let src = module("\tadd.s32 %r1, %r2, %r3;");
    let n = src.len();
    let (code, _, err) = lint("big.ptx", src.as_bytes(), &["--max-ptx-bytes", "100"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "big.ptx: {n} bytes is over the limit of 100 bytes"
        )),
        "{err}"
    );
    assert!(err.contains("--max-ptx-bytes"), "{err}");
    let limit = n.to_string();
    let (code, out, _) = lint("big.ptx", src.as_bytes(), &["--max-ptx-bytes", &limit]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn modifiers_and_unsized_arrays_give_exit_1_with_a_position() {
    // ptxas 12.9: "line 7; error : Unknown modifier '.relaxd'".
    let (code, out, _) = lint(
        "mod.ptx",
        module("\t.reg .b64 %rd1;\n\tld.global.relaxd.u32 %r1, [%rd1];").as_bytes(),
        &[],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("mod.ptx:8:11: `.relaxd` is not a modifier of `ld`"),
        "{out}"
    );
    assert!(out.contains("[unknown-modifier, "), "{out}");
    // ptxas 12.9 assembles these: the cache-eviction and vector forms are modifiers of `ld`.
    let (code, out, _) = lint(
        "ok.ptx",
        module(
            "\t.reg .b64 %rd1;\n\tld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%r1, %r2}, [%rd1];",
        )
        .as_bytes(),
        &[],
    );
    assert_eq!(code, 0, "{out}");
    // ptxas 12.9: "line 4; error : Non-external variable 'a' has incomplete type".
    let src = ".version 8.8\n.target sm_90\n.address_size 64\n.global .b32 a[];\n\
               .extern .global .b32 b[];\n.visible .entry k()\n{\n\tret;\n}\n";
    let (code, out, _) = lint("arr.ptx", src.as_bytes(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("arr.ptx:4:14: `a[]` has no size"), "{out}");
    assert!(out.contains("[incomplete-array, "), "{out}");
    assert!(!out.contains("`b[]`"), "{out}");
}
