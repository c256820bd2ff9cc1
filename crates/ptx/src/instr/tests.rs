use super::table::MODIFIERS;
use super::*;

// Lines below are verbatim producer output: libcu++ 2.8 via NVRTC 12.9 (compute_90) and
// clang 19.1.7 (sm_90), compiled from the sources in `atomics::mapping::source`.

#[test]
fn parses_nvrtc_atom_with_modifiers_in_producer_order() {
    let i = parse_instruction("atom.add.acquire.gpu.s32 %r1,[%rd1],%r2", 7).unwrap();
    assert_eq!(i.opcode, "atom");
    assert_eq!(i.modifiers, ["add", "acquire", "gpu", "s32"]);
    assert_eq!(i.operands, ["%r1", "[%rd1]", "%r2"]);
    assert_eq!(i.line, 7);
    let m = i.mem_op().unwrap();
    assert_eq!(m.kind, MemOpKind::Atom);
    assert_eq!(m.sem, Some(Sem::Acquire));
    assert_eq!(m.scope, Some(Scope::Gpu));
    assert_eq!(m.op, Some(AtomOp::Add));
    assert_eq!(m.ty.as_deref(), Some("s32"));
    assert_eq!(m.space, None);
}

#[test]
fn modifier_order_does_not_change_the_parsed_parts() {
    // The PTX ISA's own order `atom{.sem}{.scope}{.space}.op.type` against libcu++'s.
    let a = parse_instruction("atom.acquire.gpu.global.add.s32 %r1, [%rd1], %r2", 0)
        .unwrap()
        .mem_op()
        .unwrap();
    let b = parse_instruction("atom.global.add.acquire.gpu.s32 %r1,[%rd1],%r2", 0)
        .unwrap()
        .mem_op()
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn fences_as_libcudacxx_writes_them() {
    let f = parse_instruction("fence.cta.acq_rel", 0)
        .unwrap()
        .mem_op()
        .unwrap();
    assert_eq!(
        (f.kind, f.sem, f.scope),
        (MemOpKind::Fence, Some(Sem::AcqRel), Some(Scope::Cta))
    );
    let f = parse_instruction("fence.gpu.sc", 0)
        .unwrap()
        .mem_op()
        .unwrap();
    assert_eq!((f.sem, f.scope), (Some(Sem::Sc), Some(Scope::Gpu)));
}

#[test]
fn ptx_isa_defaults_apply_to_clang_atoms() {
    // clang 19 emits `atom.add.u32` with no .sem/.scope: PTX ISA atom defaults.
    let e = parse_instruction("atom.add.u32 \t%r2, [%rd1], %r1", 0)
        .unwrap()
        .mem_op()
        .unwrap()
        .effective();
    assert_eq!(e.sem, Some(Sem::Relaxed));
    assert_eq!(e.scope, Some(Scope::Gpu));
    assert_eq!(e.to_string(), "atom.relaxed.gpu.add");
}

#[test]
fn volatile_is_relaxed_sys_and_plain_ld_is_weak() {
    let e = parse_instruction("ld.volatile.u32 \t%r1, [%rd1]", 0)
        .unwrap()
        .mem_op()
        .unwrap()
        .effective();
    assert_eq!((e.sem, e.scope), (Some(Sem::Relaxed), Some(Scope::Sys)));
    let e = parse_instruction("ld.global.u32 %r1, [%rd1]", 0)
        .unwrap()
        .mem_op()
        .unwrap()
        .effective();
    assert_eq!((e.sem, e.scope), (Some(Sem::Weak), None));
}

#[test]
fn membar_levels_are_fence_sc_scopes() {
    for (text, scope) in [
        ("membar.cta", Scope::Cta),
        ("membar.gl", Scope::Gpu),
        ("membar.sys", Scope::Sys),
    ] {
        let e = parse_instruction(text, 0)
            .unwrap()
            .mem_op()
            .unwrap()
            .effective();
        assert_eq!(e.kind, MemOpKind::Fence, "{text}");
        assert_eq!((e.sem, e.scope), (Some(Sem::Sc), Some(scope)), "{text}");
    }
    // fence without .sem is acq_rel.
    let e = parse_instruction("fence.gpu", 0)
        .unwrap()
        .mem_op()
        .unwrap()
        .effective();
    assert_eq!(e.sem, Some(Sem::AcqRel));
}

#[test]
fn guards_and_param_space() {
    let i = parse_instruction("@!%p1 bra $L__BB0_2", 0).unwrap();
    assert_eq!(
        i.guard,
        Some(Guard {
            negated: true,
            predicate: "%p1".into()
        })
    );
    assert_eq!(i.opcode, "bra");
    assert!(i.mem_op().is_none());
    let m = parse_instruction("st.param.b32 \t[func_retval0+0], %r2", 0)
        .unwrap()
        .mem_op()
        .unwrap();
    assert_eq!(m.space, Some(Space::Param));
    let m = parse_instruction("ld.shared::cluster.u32 %r1, [%r2]", 0)
        .unwrap()
        .mem_op()
        .unwrap();
    assert_eq!(m.space, Some(Space::SharedCluster));
}

#[test]
fn array_elements_are_operands() {
    // PTX ISA §6.4.2's own forms (`ld.global.u32 s, a[0];`, `mov.u32 s, a[1];`) and a
    // register index; ptxas 12.9 assembles `ld.const.b16 t, c[0]` and `mov.u64 a, c[1]`.
    for text in [
        "ld.global.u32 s, a[0]",
        "mov.u32 s, a[1]",
        "ld.const.b16 temp1, constparams[0]",
        "ld.shared.f32 %f1, tile[%r1]",
        "ld.shared.f32 %f1, tile[%r1+4]",
    ] {
        let i = parse_instruction(text, 1).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(i.operands.len(), 2, "{text}: {:?}", i.operands);
    }
    let e = parse_instruction("mov.u32 s, a[1", 4).unwrap_err();
    assert_eq!(e.line, 4);
    assert!(e.to_string().contains("`]` closing the array index"), "{e}");
    // Deep index chains are refused, never a stack overflow.
    let deep = format!("mov.u32 s, a{}", "[a".repeat(10_000));
    assert!(parse_instruction(&deep, 1).is_err());
}

/// The table against ptxas 12.9's recorded verdicts (ptx-corpus/gen/modifiers.py tried
/// each opcode of the table with each modifier any row names, and misspellings): every
/// modifier ptxas assembles in one form is allowed, so every one the table refuses is one
/// ptxas refused in every form tried.
#[test]
fn modifier_table_agrees_with_ptxas() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../ptx-corpus/gen/out/modifiers-ptxas-12.9.txt"
    );
    let text = std::fs::read_to_string(path).expect("the recorded ptxas verdicts");
    let mut probed = std::collections::HashSet::new();
    let (mut accepted, mut refused_both, mut refused_by_ptxas_only) = (0, 0, 0);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (head, mods) = line.split_once(" | ").expect("`... | modifiers`");
        let mut words = head.split_whitespace();
        let (verdict, op) = (words.next().unwrap(), words.next().unwrap());
        assert_ne!(verdict, "noform", "{op}: no form was tried");
        for m in mods.split_whitespace() {
            probed.insert((op.to_string(), m.to_string()));
            let allowed = modifier_allowed(op, m);
            assert!(allowed.is_some(), "{op} is probed but not in the table");
            match (verdict, allowed == Some(true)) {
                ("accept", true) => accepted += 1,
                ("accept", false) => {
                    panic!("ptxas 12.9 assembles `{op}.{m}`; the table refuses it")
                }
                (_, false) => refused_both += 1,
                (_, true) => refused_by_ptxas_only += 1,
            }
        }
    }
    // Every modifier of every row was tried on its opcode.
    for (_, ops, mods) in MODIFIERS {
        for op in ops.split_whitespace() {
            for m in mods.split_whitespace() {
                assert!(
                    probed.contains(&(op.into(), m.into())),
                    "{op}.{m} not tried"
                );
            }
        }
    }
    // Both sides say something: a table or a recording that allowed (or refused)
    // everything would not be a check.
    assert!(
        accepted > 500 && refused_both > 5000,
        "{accepted} {refused_both}"
    );
    eprintln!(
        "modifier table vs ptxas 12.9: {} pairs tried; agree {} (assembled and allowed {accepted}, refused by both {refused_both}); allowed but refused in every form tried {refused_by_ptxas_only}",
        probed.len(),
        accepted + refused_both
    );
}

#[test]
fn modifiers_outside_the_table_are_found() {
    assert_eq!(modifier_allowed("add", "foo"), Some(false));
    assert_eq!(modifier_allowed("ld", "relaxd"), Some(false));
    assert_eq!(modifier_allowed("ld", "L1::no_allocate"), Some(true));
    assert_eq!(modifier_allowed("add", "finite"), Some(true));
    // Opcodes without a row are not judged.
    assert_eq!(modifier_allowed("wgmma", "anything"), None);
}

#[test]
fn rejects_malformed_statements() {
    assert!(parse_instruction("", 3).is_err());
    assert!(parse_instruction("@%p1", 3).is_err());
    assert!(parse_instruction("atom..add %r1", 3).is_err());
    let e = parse_instruction("@ x", 9).unwrap_err();
    assert_eq!(e.line, 9);
}

const CLANG_PTX: &str = r#"
//
// Generated by LLVM NVPTX Back-End
//

.version 7.8
.target sm_90
.address_size 64

	// .globl	f_cas_acq_dev           // -- Begin function f_cas_acq_dev
.visible .func  (.param .b32 func_retval0) f_cas_acq_dev(
	.param .b64 f_cas_acq_dev_param_0,
	.param .b32 f_cas_acq_dev_param_1,
	.param .b32 f_cas_acq_dev_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<2>;

// %bb.0:                               // %entry
	ld.param.u64 	%rd1, [f_cas_acq_dev_param_0];
	ld.param.u32 	%r1, [f_cas_acq_dev_param_1];
	ld.param.u32 	%r2, [f_cas_acq_dev_param_2];
	atom.cas.b32 	%r3, [%rd1], %r1, %r2;
	setp.eq.s32 	%p1, %r3, %r1;
$L__BB0_1: /* a label */
	selp.u32 	%r4, 1, 0, %p1;
	st.param.b32 	[func_retval0+0], %r4;
	ret;
                                    // -- End function
}
.visible .entry k_fence_acquire_cta()
{
	// begin inline asm
	fence.cta.acq_rel;
	// end inline asm
	ret;

}
"#;

#[test]
fn function_body_skips_directives_labels_and_comments() {
    let body = function_body(CLANG_PTX, "f_cas_acq_dev").unwrap();
    let ops: Vec<&str> = body.iter().map(|i| i.opcode.as_str()).collect();
    assert_eq!(ops, ["ld", "ld", "ld", "atom", "setp", "selp", "st", "ret"]);
    assert_eq!(body[3].to_string(), "atom.cas.b32 %r3, [%rd1], %r1, %r2;");
    // Line numbers point into the original text.
    let line = CLANG_PTX
        .lines()
        .position(|l| l.contains("atom.cas"))
        .unwrap()
        + 1;
    assert_eq!(body[3].line, line);
    let k = function_body(CLANG_PTX, "k_fence_acquire_cta").unwrap();
    assert_eq!(k.len(), 2);
    assert_eq!(k[0].modifiers, ["cta", "acq_rel"]);
    assert_eq!(
        function_names(CLANG_PTX),
        ["f_cas_acq_dev", "k_fence_acquire_cta"]
    );
    assert!(function_body(CLANG_PTX, "missing").is_err());
}
