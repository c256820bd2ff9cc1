use super::*;
use strum::VariantArray;

/// Immediates follow the PTX ISA's constants (§4.5): a leading 0 is octal, `0b` binary,
/// `0x` hex; a float constant is not an integer.
#[test]
fn immediates_follow_the_isa_literal_grammar() {
    assert_eq!(parse_imm("010"), Some(8));
    assert_eq!(parse_imm("0b101"), Some(5));
    assert_eq!(parse_imm("-0x10"), Some(-16));
    assert_eq!(parse_imm("7U"), Some(7));
    assert_eq!(parse_imm("0f3F800000"), None);
    assert_eq!(parse_imm("09"), None);
    assert_eq!(split_offset("buf+010"), ("buf", 8));
}
use crate::abi::lint::lint_source;

/// (rule id, line) of every chapter-3 finding in a module.
fn found(src: &str) -> Vec<(&'static str, u32)> {
    lint_source(src, "t.ptx")
        .unwrap()
        .iter()
        .filter(|v| matches!(v.rule, Rule::Syscall(..)))
        .map(|v| (v.rule.id(), v.line))
        .collect()
}

/// A 64-bit module: line 4 holds `decls`, line 5 a `.global` string, the kernel body starts
/// at line 7 with the string's address taken (line 8) and converted (line 9); `body` starts
/// on line 10.
fn m64(decls: &str, body: &str) -> String {
    format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n{decls}\n\
             .global .align 1 .b8 fmt[3] = {{103, 112, 0}};\n.visible .entry k()\n{{ .reg .b64 %rd<3>; .reg .b32 %r<2>;\n\
             mov.u64 %rd1, fmt;\ncvta.global.u64 %rd2, %rd1;\n{body}\nret;\n}}\n"
        )
}

const VPRINTF_CALL: &str = "{\n.param .b64 p0;\nst.param.b64 [p0+0], %rd2;\n.param .b64 p1;\nst.param.b64 [p1+0], %rd2;\n.param .s32 r0;\ncall.uni (r0), vprintf, (p0, p1);\n}";

// The chapter's four prototypes, with a conforming call of each, give no finding for both
// address sizes.
#[test]
fn guide_prototypes_and_calls_conform() {
    for addr in [AddressSize::A32, AddressSize::A64] {
        let (w, r, cv) = if addr == AddressSize::A64 {
            ("b64", "%rd2", "u64")
        } else {
            ("b32", "%r2", "u32")
        };
        let decls: Vec<String> = Syscall::VARIANTS
            .iter()
            .map(|s| s.prototype(addr))
            .collect();
        let src = format!(
                ".version 8.0\n.target sm_50\n.address_size {addr}\n{}\n\
                 .global .align 1 .b8 fmt[3] = {{103, 112, 0}};\n.visible .entry k()\n{{ .reg .{cv} {r}, {r}0;\n\
                 mov.{cv} {r}0, fmt;\ncvta.global.{cv} {r}, {r}0;\n\
                 {{ .param .{w} a; st.param.{w} [a], {r}; .param .{w} b; st.param.{w} [b], {r}; .param .s32 s; call.uni (s), vprintf, (a, b); }}\n\
                 {{ .param .{w} a; st.param.{w} [a], 16; .param .{w} p; call.uni (p), malloc, (a); }}\n\
                 {{ .param .{w} a; st.param.{w} [a], {r}; call.uni free, (a); }}\n\
                 {{ .param .{w} a; st.param.{w} [a], {r}; .param .{w} b; st.param.{w} [b], {r}; .param .b32 c; st.param.b32 [c], 7; \
                 .param .{w} d; st.param.{w} [d], {r}; .param .{w} e; st.param.{w} [e], 1; call.uni __assertfail, (a, b, c, d, e); }}\n\
                 ret;\n}}\n",
                decls.join("\n")
            );
        assert_eq!(found(&src), vec![], "{addr}\n{src}");
    }
}

// The chapter's own 32-bit example: format from `cvta.global.b32`, valist from
// `cvta.local.b32` of a local array.
#[test]
fn chapter_example_32_bit() {
    let src = ".version 8.0\n.target sm_50\n.address_size 32\n\
            .extern .func (.param .s32 status) vprintf (.param .b32 format, .param .b32 valist);\n\
            .global .align 1 .b8 _fmt[3];\n.entry k()\n{ .reg .b32 %r<4>;\n.local .align 4 .b8 _valist_array[8];\n\
            .param .b32 param0;\n.param .b32 param1;\n.param .s32 st;\n\
            cvta.global.b32 %r2, _fmt;\nst.param.b32 [param0], %r2;\ncvta.local.b32 %r3, _valist_array;\n\
            st.param.b32 [param1], %r3;\ncall.uni (st), vprintf, (param0, param1);\nret;\n}\n";
    assert_eq!(found(src), vec![]);
    // The same without the conversion of the local array (taken at line 14): the call on
    // line 16 is the finding.
    let bad = src.replace(
        "cvta.local.b32 %r3, _valist_array",
        "mov.b32 %r3, _valist_array",
    );
    assert_eq!(found(&bad), vec![("syscall-non-generic", 16)]);
    // The chapter writes `cvta.global.b32`, which the ISA's cvta syntax (.u32, .u64) does
    // not give (ptxas 12.9: "Unexpected instruction types specified for 'cvta'"): that
    // is an unknown-modifier finding beside the system-call one.
    let v = lint_source(&bad, "t.ptx").unwrap();
    let call = v
        .iter()
        .find(|v| v.rule.id() == "syscall-non-generic")
        .unwrap();
    assert!(call
        .message
        .contains(".local address of `_valist_array` taken at line 14"));
}

// Declarations: counts, widths and the chapter's types, for a 64-bit module.
#[test]
fn declarations_follow_the_chapter() {
    let cases: &[(&str, &[&str])] = &[
            // NVRTC 12.9's status type.
            (".extern .func (.param .b32 s) vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-type"]),
            (".extern .func (.param .u32 s) vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-type"]),
            (".extern .func (.param .s32 s) vprintf (.param .b32 f, .param .b64 v);", &["syscall-decl-width"]),
            (".extern .func (.param .s32 s) vprintf (.param .b64 f, .param .b32 v);", &["syscall-decl-width"]),
            (".extern .func (.param .s32 s) vprintf (.param .f64 f, .param .b64 v);", &["syscall-decl-type"]),
            (".extern .func (.param .b64 s) vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-width"]),
            (".extern .func vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-count"]),
            (".extern .func (.param .s32 s) vprintf (.param .b64 f);", &["syscall-decl-count"]),
            (".extern .func (.param .s32 s) vprintf (.param .b64 f, .param .b64 v, .param .b64 x);", &["syscall-decl-count"]),
            (".extern .func (.param .b64 p) malloc (.param .b32 n);", &["syscall-decl-width"]),
            (".extern .func (.param .b32 p) malloc (.param .b64 n);", &["syscall-decl-width"]),
            (".extern .func malloc (.param .b64 n);", &["syscall-decl-count"]),
            (".extern .func free (.param .b32 p);", &["syscall-decl-width"]),
            (".extern .func free (.param .align 8 .b8 p[8]);", &["syscall-decl-width"]),
            (".extern .func (.param .b32 r) free (.param .b64 p);", &["syscall-decl-count"]),
            // A missing charSize.
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn);", &["syscall-decl-count"]),
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn, .param .b32 c);", &["syscall-decl-width"]),
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .b64 l, .param .b64 fn, .param .b64 c);", &["syscall-decl-width"]),
            (".extern .func __assertfail (.param .b32 m, .param .b64 f, .param .b32 l, .param .b64 fn, .param .b64 c);", &["syscall-decl-width"]),
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .u32 l, .param .b64 fn, .param .b64 c);", &["syscall-decl-type"]),
            (".func free (.param .b64 p);", &["syscall-definition"]),
            (".visible .func free (.param .b64 p) { ret; }", &["syscall-definition"]),
            // Not a system call: nothing to say.
            (".extern .func (.param .b32 s) myprintf (.param .b32 f);", &[]),
        ];
    for (decl, want) in cases {
        let src = format!(".version 8.0\n.target sm_90\n.address_size 64\n{decl}\n");
        let got: Vec<&str> = found(&src).iter().map(|x| x.0).collect();
        assert_eq!(&got, want, "{decl}");
    }
    // Under `.address_size 32` the 64-bit forms are the wrong width.
    let src = format!(
        ".version 8.0\n.target sm_50\n.address_size 32\n{}\n",
        Syscall::Free.prototype(AddressSize::A64)
    );
    assert_eq!(found(&src), vec![("syscall-decl-width", 4)]);
}

#[test]
fn call_sites_count_and_width() {
    let decl = Syscall::Vprintf.prototype(AddressSize::A64);
    assert_eq!(found(&m64(&decl, VPRINTF_CALL)), vec![]);
    // A 32-bit format argument (the call is on line 16).
    let narrow = VPRINTF_CALL.replace(
        ".param .b64 p0;\nst.param.b64 [p0+0], %rd2",
        ".param .b32 p0;\nst.param.b32 [p0+0], %r2",
    );
    assert_eq!(
        found(&m64(&decl, &narrow)),
        vec![("syscall-call-width", 16)]
    );
    // No arguments, no return value, too many arguments.
    assert_eq!(
        found(&m64(&decl, "call.uni vprintf;")),
        vec![("syscall-call-count", 10), ("syscall-call-count", 10)]
    );
    let three = VPRINTF_CALL.replace("(p0, p1)", "(p0, p1, p1)");
    assert_eq!(found(&m64(&decl, &three)), vec![("syscall-call-count", 16)]);
    // A width known only from the st.param (no in-body declaration).
    assert_eq!(
        found(&m64(
            &Syscall::Free.prototype(AddressSize::A64),
            "st.param.b32 [q], %r1;\ncall.uni free, (q);"
        )),
        vec![("syscall-call-width", 11)]
    );
}

#[test]
fn pointers_must_be_generic() {
    let decl = Syscall::Vprintf.prototype(AddressSize::A64);
    // The format from `mov` of the .global symbol without `cvta` (address on line 8).
    let raw = VPRINTF_CALL.replace("[p0+0], %rd2", "[p0+0], %rd1");
    let v = lint_source(&m64(&decl, &raw), "t.ptx").unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].line, 16);
    let text = v[0].to_string();
    assert!(text.contains("taken at line 8"), "{text}");
    assert!(text.contains("argument 0 `format`"), "{text}");
    assert!(
        text.ends_with("[syscall-non-generic, ptx-interop 13.2 ch. 3, vprintf]"),
        "{text}"
    );
    // Through `add` and `mov` copies, and from a `.local` depot (the valist).
    let local = ".local .align 8 .b8 depot[16];\nmov.u64 %SPL, depot;\nadd.u64 %rd5, %SPL, 8;\nmov.b64 %rd6, %rd5;\n".to_string()
            + &VPRINTF_CALL.replace("[p1+0], %rd2", "[p1+0], %rd6");
    assert_eq!(
        found(&m64(&decl, &local)),
        vec![("syscall-non-generic", 20)]
    );
    // `cvta.local` first: generic, fine; `cvta.to.global` makes it non-generic again.
    let ok = local.replace(
        "add.u64 %rd5, %SPL, 8",
        "cvta.local.u64 %SP, %SPL;\nadd.u64 %rd5, %SP, 8",
    );
    assert_eq!(found(&m64(&decl, &ok)), vec![]);
    let back = VPRINTF_CALL.replace(
        "st.param.b64 [p0+0], %rd2",
        "cvta.to.global.u64 %rd3, %rd2;\nst.param.b64 [p0+0], %rd3",
    );
    assert_eq!(found(&m64(&decl, &back)), vec![("syscall-non-generic", 17)]);
    // .const strings and __assertfail's file and function.
    let src = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n{}\n.const .align 1 .b8 msg[2];\n.entry k()\n{{ .reg .b64 %rd<3>;\n\
             mov.u64 %rd1, msg;\ncvta.const.u64 %rd2, %rd1;\n\
             .param .b64 a;\nst.param.b64 [a], %rd2;\n.param .b64 b;\nst.param.b64 [b], %rd1;\n.param .b32 c;\nst.param.b32 [c], 3;\n\
             .param .b64 d;\nst.param.b64 [d], %rd1;\n.param .b64 e;\nst.param.b64 [e], 1;\ncall.uni __assertfail, (a, b, c, d, e);\nret;\n}}\n",
            Syscall::Assertfail.prototype(AddressSize::A64)
        );
    let v = lint_source(&src, "t.ptx").unwrap();
    let pos: Vec<&str> = v.iter().map(|x| x.position.as_str()).collect();
    assert_eq!(
        pos,
        vec![
            "call of `__assertfail`, argument 1 `file`",
            "call of `__assertfail`, argument 3 `function`"
        ]
    );
    assert!(v.iter().all(|x| x.line == 20
        && x.message
            .contains(".const address of `msg` taken at line 8")));
    // malloc's size is not a pointer: an address there says nothing about generic space.
    let m = m64(
        &Syscall::Malloc.prototype(AddressSize::A64),
        ".param .b64 a;\nst.param.b64 [a], %rd1;\n.param .b64 r;\ncall.uni (r), malloc, (a);",
    );
    assert_eq!(found(&m), vec![]);
}

// A call through a register is checked when the register holds a system call's address,
// and is left alone otherwise; neither panics.
#[test]
fn calls_through_registers() {
    let decl = Syscall::Free.prototype(AddressSize::A64);
    let known =
        "mov.u64 %rd9, free;\n.param .b32 a;\nst.param.b32 [a], %r1;\ncall.uni %rd9, (a), proto;";
    assert_eq!(found(&m64(&decl, known)), vec![("syscall-call-width", 13)]);
    let unknown = "ld.param.u64 %rd9, [x];\n.param .b32 a;\ncall.uni %rd9, (a), proto;";
    assert_eq!(found(&m64(&decl, unknown)), vec![]);
}

/// No prefix of a module with every kind of call makes the check panic.
#[test]
fn truncated_and_odd_input_never_panics() {
    let decls: Vec<String> = Syscall::VARIANTS
        .iter()
        .map(|s| s.prototype(AddressSize::A64))
        .collect();
    let src = m64(
            &decls.join("\n"),
            &format!("{VPRINTF_CALL}\ncall.uni;\ncall (r), ;\ncall.uni (), free, ();\ncall free, (a, b, c, d, e, f);\n@%p1 bra $L;\n$L: call.uni %rd1;\nst.param.b64 [], ;\nmov.u64 %rd1, fmt+;\nadd.u64 %r1, %r1;\nst.local.v4.b32 [%rd1+-8], {{%r1, %r2}};"),
        );
    for cut in 0..=src.len() {
        let _ = call_sites(&src[..cut]);
        if let Ok(m) = PtxModule::parse(&src[..cut]) {
            let _ = lint(&m, &src[..cut], "t.ptx");
        }
    }
    let calls = call_sites(&src);
    assert!(calls
        .iter()
        .any(|c| c.call == Syscall::Free && c.args.len() == 6));
}

// The scanner sees through initializers, `.section` blocks and comments.
#[test]
fn scan_reads_symbols_and_bodies() {
    let src = ".global .align 1 .b8 $str[3] = {1, 2, 3}; // { not a body\n\
            .section .debug_info { .b8 1 }\n.extern .shared .align 16 .b8 smem[];\n\
            .visible .func (.param .b32 r) f(.param .b64 a)\n{\n/* } */ ret;\n}\n.entry k() { exit; }\n";
    let sc = scan(src);
    assert_eq!(
        sc.symbols.get("$str").map(|s| s.space.as_str()),
        Some("global")
    );
    assert_eq!(
        sc.symbols.get("smem").map(|s| (s.space.as_str(), s.line)),
        Some(("shared", 3))
    );
    let names: Vec<(&str, FunctionKind, usize)> = sc
        .bodies
        .iter()
        .map(|b| (b.name.as_str(), b.kind, b.stmts.len()))
        .collect();
    assert_eq!(
        names,
        vec![("f", FunctionKind::Func, 1), ("k", FunctionKind::Entry, 1)]
    );
    assert_eq!(sc.bodies[0].stmts[0].line, 6);
}

// Stores into the vprintf buffer are collected per call with offsets from the depot.
#[test]
fn stores_before_a_vprintf_call() {
    let body = ".local .align 8 .b8 __local_depot0[16];\nmov.u64 %SPL, __local_depot0;\ncvta.local.u64 %SP, %SPL;\n\
            add.u64 %rd4, %SP, 0;\nadd.u64 %rd5, %SPL, 0;\nst.local.u32 [%rd5], %r1;\nst.local.v2.u32 [%rd5+8], {%r1, %r2};\n"
            .to_string()
            + &VPRINTF_CALL.replace("[p1+0], %rd2", "[p1+0], %rd4");
    let src = m64(&Syscall::Vprintf.prototype(AddressSize::A64), &body);
    let c = call_sites(&src);
    assert_eq!(c.len(), 1);
    let slots: Vec<(Option<i64>, u32, u32)> = c[0]
        .stores
        .iter()
        .map(|s| (s.offset, s.bytes, s.count))
        .collect();
    assert_eq!(slots, vec![(Some(0), 4, 1), (Some(8), 4, 2)]);
    assert!(
        matches!(&c[0].args[1].value, Some(Val::Addr { sym, generic: true, offset: Some(0), .. }) if sym == "__local_depot0")
    );
}
