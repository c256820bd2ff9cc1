use super::*;
use crate::atomics::mapping::source::{ObjectSpace, Producer, ValueType};
use crate::atomics::mapping::table::Order;
use crate::ptx::instr::parse_instruction;

fn body(lines: &[&str]) -> Vec<Instruction> {
    lines
        .iter()
        .enumerate()
        .map(|(n, l)| parse_instruction(l, n + 1).unwrap())
        .collect()
}

fn case(operation: Operation, order: Order, scope: Scope) -> MappingCase {
    MappingCase::base(Producer::named("nvrtc"), operation, order, scope)
}

fn typed(
    op: Operation,
    order: Order,
    scope: Scope,
    space: ObjectSpace,
    ty: ValueType,
) -> MappingCase {
    MappingCase {
        space,
        ty,
        ..case(op, order, scope)
    }
}

/// A function's body and label lines from PTX text, as the batch reads them.
fn function(
    ptx: &str,
) -> (
    Vec<Instruction>,
    std::collections::HashMap<String, Vec<usize>>,
) {
    (
        crate::ptx::instr::function_body(ptx, "f").unwrap(),
        label_lines(ptx),
    )
}

// Each form a producer emits for a type or state space, hand-written, against the ch. 4
// row it must match (expected names from the chapter's tables; type and space rules from
// the PTX ISA's atom, ld/st and generic-addressing sections).
#[test]
fn types_and_spaces_follow_the_rows() {
    use ObjectSpace::*;
    use ValueType::*;
    let ok: [(MappingCase, &[&str], &str); 8] = [
        (
            typed(
                Operation::Rmw(RmwOp::FetchAdd),
                Order::Relaxed,
                Scope::Cta,
                Shared,
                U64,
            ),
            &["atom.shared.add.relaxed.cta.u64 %rd3, [%rd1], %rd2"],
            "relaxed_rmw.only",
        ),
        (
            typed(
                Operation::Rmw(RmwOp::FetchMin),
                Order::Acquire,
                Scope::Gpu,
                Global,
                U32,
            ),
            &["atom.global.min.acquire.gpu.u32 %r3, [%rd1], %r2"],
            "acquire_rmw.recommended",
        ),
        (
            typed(
                Operation::Rmw(RmwOp::FetchMax),
                Order::Relaxed,
                Scope::Sys,
                Generic,
                S64,
            ),
            &["atom.max.relaxed.sys.s64 %rd3, [%rd1], %rd2"],
            "relaxed_rmw.only",
        ),
        (
            typed(
                Operation::Rmw(RmwOp::FetchAdd),
                Order::SeqCst,
                Scope::Gpu,
                Global,
                F32,
            ),
            &["fence.sc.gpu", "atom.add.acquire.gpu.f32 %f1, [%rd1], %f2"],
            "seq_cst_rmw.recommended",
        ),
        // fetch_sub: PTX has no atom.sub; add of the negated operand.
        (
            typed(
                Operation::Rmw(RmwOp::FetchSub),
                Order::Release,
                Scope::Cta,
                Shared,
                F64,
            ),
            &[
                "neg.f64 %fd2, %fd3",
                "atom.shared.add.release.cta.f64 %fd1, [%rd1], %fd2",
            ],
            "release_rmw.recommended",
        ),
        (
            typed(
                Operation::Rmw(RmwOp::Exchange),
                Order::AcqRel,
                Scope::Gpu,
                Generic,
                F32,
            ),
            &["atom.exch.acq_rel.gpu.b32 %r1, [%rd1], %r2"],
            "acq_rel_rmw.recommended",
        ),
        (
            typed(Operation::Load, Order::SeqCst, Scope::Gpu, Shared, F64),
            &["fence.sc.gpu", "ld.acquire.gpu.shared.f64 %fd1, [%rd1]"],
            "seq_cst_load.recommended",
        ),
        (
            typed(Operation::Store, Order::Release, Scope::Sys, Global, U64),
            &[
                "fence.release.sys",
                "st.relaxed.sys.global.b64 [%rd1], %rd2",
            ],
            "release_store.alt1",
        ),
    ];
    for (c, lines, name) in ok {
        let m = check_case(&c, &body(lines)).unwrap_or_else(|e| panic!("{}: {e}", c.id()));
        assert_eq!(m.name, name, "{}", c.id());
    }
    let fetch_sub = &ok[4];
    let m = check_case(&fetch_sub.0, &body(fetch_sub.1)).unwrap();
    assert!(m.notes.iter().any(|n| n.contains("negated operand")), "{m}");
    // A shared object addressed generically (libcu++ after cvta.shared) is the same access.
    let c = typed(
        Operation::Rmw(RmwOp::FetchOr),
        Order::Relaxed,
        Scope::Cta,
        Shared,
        S32,
    );
    let m = check_case(&c, &body(&["atom.or.relaxed.cta.b32 %r1, [%rd1], %r2"])).unwrap();
    assert!(m.notes.is_empty(), "{m}");

    let bad: [(MappingCase, &[&str], &str); 8] = [
        // Signed min of an unsigned object, unsigned max of a signed one.
        (
            typed(
                Operation::Rmw(RmwOp::FetchMin),
                Order::Relaxed,
                Scope::Gpu,
                Global,
                U32,
            ),
            &["atom.global.min.relaxed.gpu.s32 %r3, [%rd1], %r2"],
            ".s32 min/max of unsigned int needs .u32",
        ),
        (
            typed(
                Operation::Rmw(RmwOp::FetchMax),
                Order::Relaxed,
                Scope::Gpu,
                Global,
                S64,
            ),
            &["atom.global.max.relaxed.gpu.u64 %rd3, [%rd1], %rd2"],
            ".u64 min/max of long long needs .s64",
        ),
        // A 32-bit access of a 64-bit object.
        (
            typed(Operation::Load, Order::Relaxed, Scope::Gpu, Global, U64),
            &["ld.relaxed.gpu.global.b32 %r1, [%rd1]"],
            ".b32 is not a 64-bit access of unsigned long long",
        ),
        // An integer add on a float's bits.
        (
            typed(
                Operation::Rmw(RmwOp::FetchAdd),
                Order::Relaxed,
                Scope::Gpu,
                Generic,
                F32,
            ),
            &["atom.add.relaxed.gpu.u32 %r1, [%rd1], %r2"],
            ".u32 add of float needs .f32",
        ),
        // The wrong state space for the object, and a qualified access on a pointer whose
        // space the compiler cannot see.
        (
            typed(
                Operation::Rmw(RmwOp::FetchAdd),
                Order::Relaxed,
                Scope::Gpu,
                Global,
                U32,
            ),
            &["atom.shared.add.relaxed.gpu.u32 %r1, [%rd1], %r2"],
            "state space .shared cannot hold the global object",
        ),
        (
            typed(Operation::Store, Order::Relaxed, Scope::Gpu, Generic, S64),
            &["st.relaxed.gpu.global.b64 [%rd1], %rd2"],
            "state space .global cannot hold the generic object",
        ),
        // Plain local accesses with no isspacep.local test are not a dispatch.
        (
            typed(Operation::Load, Order::Relaxed, Scope::Gpu, Generic, S32),
            &["ld.local.u32 %r1, [%rd1]"],
            "instruction 1 `ld.local.u32;`",
        ),
        // red returns nothing: not for a call whose value is used.
        (
            typed(
                Operation::Rmw(RmwOp::FetchAdd),
                Order::Relaxed,
                Scope::Gpu,
                Global,
                U32,
            ),
            &["red.relaxed.gpu.global.add.u32 [%rd1], %r2"],
            "is red, which returns no value",
        ),
    ];
    for (c, lines, why) in bad {
        let e = check_case(&c, &body(lines)).unwrap_err();
        assert!(e.diagnosis.contains(why), "{}: {e}", c.id());
    }
}

// red is atom without a destination (PTX ISA red): for a call whose value is discarded it
// is the row's atom, and it takes only .relaxed and .release, so an acquire RMW needs the
// row's alternative with a trailing acquire fence.
#[test]
fn red_stands_for_atom_when_the_result_is_unused() {
    let none = Default::default();
    let c = typed(
        Operation::Rmw(RmwOp::FetchAdd),
        Order::Release,
        Scope::Gpu,
        ObjectSpace::Global,
        ValueType::U32,
    );
    let m = check_case_in(
        &c,
        &body(&["red.release.gpu.global.add.u32 [%rd1], %r2"]),
        &none,
        ResultUse::Discarded,
    )
    .unwrap();
    assert_eq!(m.name, "release_rmw.recommended");
    assert!(m.notes.iter().any(|n| n.contains("PTX ISA red")), "{m}");
    let c = typed(
        Operation::Rmw(RmwOp::FetchXor),
        Order::Acquire,
        Scope::Cta,
        ObjectSpace::Shared,
        ValueType::U64,
    );
    let m = check_case_in(
        &c,
        &body(&[
            "red.relaxed.cta.shared.xor.b64 [%rd1], %rd2",
            "fence.acquire.cta",
        ]),
        &none,
        ResultUse::Discarded,
    )
    .unwrap();
    assert_eq!(m.name, "acquire_rmw.alt1");
    // A red alone for an acquire RMW lacks the acquire.
    assert!(check_case_in(
        &c,
        &body(&["red.relaxed.cta.shared.xor.b64 [%rd1], %rd2"]),
        &none,
        ResultUse::Discarded
    )
    .is_err());
}

// A loop of atom.cas for an operation PTX lacks (floating-point subtraction): the CAS that
// succeeds is the RMW, judged by the row with its own .sem and scope; the plain load that
// seeds the expected value is not part of the mapping.
#[test]
fn cas_loops_are_judged_by_the_row() {
    let loop_ptx = |fence: &str, sem: &str, back: &str| {
        format!(
            ".visible .func f(.param .b64 f_param_0)\n{{\n\
                 ld.param.u64 %rd1, [f_param_0];\n\
                 {fence}\
                 ld.global.f32 %f6, [%rd1];\n\
                 $L__BB0_1:\n\
                 sub.rn.f32 %f5, %f6, %f4;\n\
                 mov.b32 %r1, %f5;\n\
                 mov.b32 %r2, %f6;\n\
                 atom.global.cas{sem}.gpu.b32 %r3, [%rd1], %r2, %r1;\n\
                 mov.b32 %f6, %r3;\n\
                 setp.ne.s32 %p1, %r3, %r2;\n\
                 @%p1 bra {back};\n\
                 $L__BB0_2:\n\
                 ret;\n}}\n"
        )
    };
    let c = typed(
        Operation::Rmw(RmwOp::FetchSub),
        Order::SeqCst,
        Scope::Gpu,
        ObjectSpace::Global,
        ValueType::F32,
    );
    let (b, l) = function(&loop_ptx("fence.sc.gpu;\n", ".acquire", "$L__BB0_1"));
    let m = check_case_in(&c, &b, &l, ResultUse::Used).unwrap();
    assert_eq!(m.name, "seq_cst_rmw.recommended");
    assert!(m.notes.iter().any(|n| n.contains("only seeds")), "{m}");
    // The same loop with a relaxed CAS and no fence is not a seq_cst RMW.
    let (b, l) = function(&loop_ptx("", ".relaxed", "$L__BB0_1"));
    let e = check_case_in(&c, &b, &l, ResultUse::Used).unwrap_err();
    assert_eq!(e.row, "seq_cst_rmw, recommended `fence.sc.gpu; atom.acquire.gpu.add;` (ptx-interop-13.2 ch. 4 seq_cst atomic_rmw)");
    // ... but it is a relaxed one.
    let relaxed = MappingCase {
        order: Order::Relaxed,
        ..c
    };
    assert!(check_case_in(&relaxed, &b, &l, ResultUse::Used).is_ok());
    // A forward branch is no loop: a single CAS that may fail is not the RMW.
    let (b, l) = function(&loop_ptx("", ".relaxed", "$L__BB0_2"));
    let e = check_case_in(&relaxed, &b, &l, ResultUse::Used).unwrap_err();
    assert!(!e.diagnosis.contains("retried in a loop"), "{e}");
    assert_eq!(e.emitted.len(), 2, "{e}");
}

// libcu++ on a generic pointer tests isspacep.local and accesses thread-private local
// memory plainly (PTX ISA: .local is private to the thread); the other branch holds the
// mapping. The local branch's vector store is read as one statement.
#[test]
fn a_local_dispatch_leaves_out_the_private_branch() {
    let ptx = ".visible .func f(.param .b64 f_param_0)\n{\n\
                   ld.param.u64 %rd4, [f_param_0];\n\
                   isspacep.local %p1, %rd4;\n\
                   @%p1 bra $L__BB0_2;\n\
                   bra.uni $L__BB0_1;\n\
                   $L__BB0_2:\n\
                   cvta.to.local.u64 %rd7, %rd4;\n\
                   ld.local.u8 %rd8, [%rd7];\n\
                   ld.u8 %rs1, [%rd4];\n\
                   st.local.v4.u8 [%rd7], {%rs6, %rs5, %rs4, %rs3};\n\
                   bra.uni $L__BB0_3;\n\
                   $L__BB0_1:\n\
                   fence.gpu.sc;\n\
                   ld.acquire.gpu.b64 %rd22,[%rd4];\n\
                   $L__BB0_3:\n\
                   ret;\n}\n";
    let (b, l) = function(ptx);
    assert!(b
        .iter()
        .any(|i| i.opcode == "st" && i.operands.len() == 2 && i.operands[1].ends_with('}')));
    let c = typed(
        Operation::Load,
        Order::SeqCst,
        Scope::Gpu,
        ObjectSpace::Generic,
        ValueType::F64,
    );
    let m = check_case_in(&c, &b, &l, ResultUse::Used).unwrap();
    assert_eq!(m.name, "seq_cst_load.recommended");
    assert!(m.notes.iter().any(|n| n.contains("isspacep.local")), "{m}");
}

// Expected verdicts below follow the ch. 4 tables, not this module's output.

#[test]
fn accepts_each_spec_sequence() {
    let load_sc = case(Operation::Load, Order::SeqCst, Scope::Gpu);
    // Both seq_cst-load rows.
    assert!(check_case(
        &load_sc,
        &body(&["fence.sc.gpu", "ld.acquire.gpu.b32 %r1, [%rd1]"])
    )
    .is_ok());
    assert!(check_case(
        &load_sc,
        &body(&[
            "fence.sc.gpu",
            "ld.relaxed.gpu.b32 %r1, [%rd1]",
            "fence.acquire.gpu"
        ])
    )
    .is_ok());
    // acq_rel RMW, second row, with parameter traffic and arithmetic around it.
    let cas = case(
        Operation::Rmw(RmwOp::CompareExchange),
        Order::AcqRel,
        Scope::Cta,
    );
    let m = check_case(
        &cas,
        &body(&[
            "ld.param.u64 %rd1, [f_param_0]",
            "fence.release.cta",
            "atom.cas.acquire.cta.b32 %r3, [%rd1], %r1, %r2",
            "setp.eq.s32 %p1, %r3, %r1",
            "st.param.b32 [func_retval0+0], %r3",
        ]),
    )
    .unwrap();
    assert_eq!(m.mapping, "fence.release.cta; atom.acquire.cta.cas;");
    assert!(m.notes.is_empty());
}

#[test]
fn accepts_libcudacxx_forms_and_the_strengthening_note() {
    // libcu++ writes modifiers in its own order; an acquire fence as fence.acq_rel is a
    // strengthening the note permits.
    let f = case(Operation::Fence, Order::Acquire, Scope::Cta);
    let m = check_case(&f, &body(&["fence.cta.acq_rel"])).unwrap();
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("strengthens .acquire to .acq_rel")));
    // The note's own example: fence.sc; ld.relaxed strengthened to fence.sc; ld.acquire.
    let rmw = case(Operation::Rmw(RmwOp::FetchMin), Order::SeqCst, Scope::Sys);
    assert!(check_case(
        &rmw,
        &body(&["fence.sys.sc", "atom.min.acquire.sys.s32 %r1,[%rd1],%r2"])
    )
    .is_ok());
    // An acquire load implemented with the seq_cst row: a stronger C++ order.
    let ld = case(Operation::Load, Order::Acquire, Scope::Gpu);
    let m = check_case(
        &ld,
        &body(&["fence.sc.gpu", "ld.acquire.gpu.b32 %r1,[%rd1]"]),
    )
    .unwrap();
    assert!(m.notes.iter().any(|n| n.contains("seq_cst row")));
    // membar.gl is fence.sc.gpu on sm_70+.
    let f = case(Operation::Fence, Order::SeqCst, Scope::Gpu);
    assert!(check_case(&f, &body(&["membar.gl"])).is_ok());
    // atom without .sem/.scope is relaxed at gpu scope.
    let r = case(Operation::Rmw(RmwOp::FetchAdd), Order::Relaxed, Scope::Gpu);
    assert!(check_case(&r, &body(&["atom.add.u32 %r2, [%rd1], %r1"])).is_ok());
}

#[test]
fn rejects_a_relaxed_load_for_an_acquire_load() {
    let ld = case(Operation::Load, Order::Acquire, Scope::Gpu);
    let e = check_case(&ld, &body(&["ld.relaxed.gpu.b32 %r1, [%rd1]"])).unwrap_err();
    assert!(e.diagnosis.contains("weaker"), "{e}");
    assert!(e.allowed.iter().any(|a| a.starts_with("ld.acquire.gpu;")));
}

#[test]
fn rejects_a_wrong_scope_even_a_wider_one() {
    let st = case(Operation::Store, Order::Release, Scope::Cta);
    let e = check_case(&st, &body(&["st.release.gpu.b32 [%rd1], %r1"])).unwrap_err();
    assert!(e.diagnosis.contains("except for scope"), "{e}");
    // A relaxed cta RMW emitted without scope is gpu scope by the ISA default.
    let r = case(Operation::Rmw(RmwOp::FetchAdd), Order::Relaxed, Scope::Cta);
    let e = check_case(&r, &body(&["atom.add.u32 %r2, [%rd1], %r1"])).unwrap_err();
    assert!(e.emitted[0].contains("atom.relaxed.gpu.add"), "{e}");
    assert!(e.diagnosis.contains("wider than required"), "{e}");
    // ... and at system scope it is narrower than required.
    let r = case(Operation::Rmw(RmwOp::FetchAdd), Order::Relaxed, Scope::Sys);
    let e = check_case(&r, &body(&["atom.add.u32 %r2, [%rd1], %r1"])).unwrap_err();
    assert!(e.diagnosis.contains("narrower than required"), "{e}");
}

#[test]
fn rejects_a_seq_cst_store_without_its_fence() {
    let st = case(Operation::Store, Order::SeqCst, Scope::Sys);
    let e = check_case(&st, &body(&["st.relaxed.sys.b32 [%rd1], %r1"])).unwrap_err();
    assert!(
        e.diagnosis.contains("missing the leading `fence.sc.sys`"),
        "{e}"
    );
    // A release store is not a seq_cst one either.
    assert!(check_case(&st, &body(&["st.release.sys.b32 [%rd1], %r1"])).is_err());
}

#[test]
fn rejects_weak_and_volatile_and_wrong_ops() {
    let ld = case(Operation::Load, Order::Relaxed, Scope::Cta);
    // A weak load is not atomic.
    assert!(check_case(&ld, &body(&["ld.u32 %r1, [%rd1]"])).is_err());
    // ld.volatile is relaxed.sys: right order, wider scope.
    let e = check_case(&ld, &body(&["ld.volatile.u32 %r1, [%rd1]"])).unwrap_err();
    assert!(e.diagnosis.contains("except for scope"), "{e}");
    let sys = case(Operation::Load, Order::Relaxed, Scope::Sys);
    assert!(check_case(&sys, &body(&["ld.volatile.u32 %r1, [%rd1]"])).is_ok());
    // Wrong rmw op, and unsigned min for an int.
    let x = case(Operation::Rmw(RmwOp::FetchXor), Order::Relaxed, Scope::Gpu);
    assert!(check_case(&x, &body(&["atom.or.relaxed.gpu.b32 %r1,[%rd1],%r2"])).is_err());
    let mn = case(Operation::Rmw(RmwOp::FetchMin), Order::Relaxed, Scope::Gpu);
    assert!(check_case(&mn, &body(&["atom.min.relaxed.gpu.u32 %r1,[%rd1],%r2"])).is_err());
    // An acquire RMW is not a release one (incomparable orders).
    let rel = case(Operation::Rmw(RmwOp::Exchange), Order::Release, Scope::Gpu);
    assert!(check_case(&rel, &body(&["atom.exch.acquire.gpu.b32 %r1,[%rd1],%r2"])).is_err());
    // Nothing emitted at all.
    let e = check_case(&rel, &body(&["ret"])).unwrap_err();
    assert_eq!(e.emitted_text(), "(no memory instruction)");
}

// Every "OR" alternative of the chapter's tables, written as a producer would emit it
// (hand-written PTX, types and operands included), is accepted and named by its row and
// position; the expected names and clause ids are transcribed from ptx-interop 13.2 ch. 4.
#[test]
fn accepts_every_alternative_by_name() {
    use RmwOp::*;
    let cases: [(Operation, Order, &[&str], &str); 8] = [
        (
            Operation::Load,
            Order::SeqCst,
            &[
                "fence.sc.gpu",
                "ld.relaxed.gpu.b32 %r1, [%rd1]",
                "fence.acquire.gpu",
            ],
            "seq_cst_load.alt1",
        ),
        (
            Operation::Rmw(FetchAdd),
            Order::SeqCst,
            &[
                "fence.sc.gpu",
                "atom.relaxed.gpu.add.u32 %r1, [%rd1], %r2",
                "fence.acquire.gpu",
            ],
            "seq_cst_rmw.alt1",
        ),
        (
            Operation::Store,
            Order::Release,
            &["fence.release.gpu", "st.relaxed.gpu.b32 [%rd1], %r1"],
            "release_store.alt1",
        ),
        (
            Operation::Rmw(Exchange),
            Order::Release,
            &[
                "fence.release.gpu",
                "atom.relaxed.gpu.exch.b32 %r1, [%rd1], %r2",
            ],
            "release_rmw.alt1",
        ),
        (
            Operation::Load,
            Order::Acquire,
            &["ld.relaxed.gpu.b32 %r1, [%rd1]", "fence.acquire.gpu"],
            "acquire_load.alt1",
        ),
        (
            Operation::Rmw(FetchOr),
            Order::Acquire,
            &[
                "atom.relaxed.gpu.or.b32 %r1, [%rd1], %r2",
                "fence.acquire.gpu",
            ],
            "acquire_rmw.alt1",
        ),
        (
            Operation::Rmw(CompareExchange),
            Order::AcqRel,
            &[
                "fence.release.gpu",
                "atom.acquire.gpu.cas.b32 %r1, [%rd1], %r2, %r3",
            ],
            "acq_rel_rmw.alt1",
        ),
        (
            Operation::Rmw(FetchMax),
            Order::AcqRel,
            &[
                "fence.release.gpu",
                "atom.relaxed.gpu.max.s32 %r1, [%rd1], %r2",
                "fence.acquire.gpu",
            ],
            "acq_rel_rmw.alt2",
        ),
    ];
    const CLAUSES: [(&str, &str); 7] = [
        ("seq_cst_load", "seq_cst atomic_load"),
        ("seq_cst_rmw", "seq_cst atomic_rmw"),
        ("release_store", "release atomic_store"),
        ("release_rmw", "release atomic_rmw"),
        ("acquire_load", "acquire atomic_load"),
        ("acquire_rmw", "acquire atomic_rmw"),
        ("acq_rel_rmw", "acq_rel atomic_rmw"),
    ];
    for (op, order, lines, name) in cases {
        let c = case(op, order, Scope::Gpu);
        let m = check_case(&c, &body(lines)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.name, name);
        assert!(m.notes.is_empty(), "{name}: {:?}", m.notes);
        // The clause id: the row's, with the position after its "OR".
        let (row, alt) = name.split_once('.').unwrap();
        let clause = CLAUSES.iter().find(|(r, _)| *r == row).unwrap().1;
        assert_eq!(
            table::named(name).unwrap().clause_id(),
            format!("ptx-interop-13.2 ch. 4 {clause} {alt}")
        );
    }
    // The recommended sequences are named as such; a row without a choice is `only`.
    let c = case(Operation::Load, Order::SeqCst, Scope::Cta);
    let m = check_case(
        &c,
        &body(&["fence.sc.cta", "ld.acquire.cta.b32 %r1, [%rd1]"]),
    )
    .unwrap();
    assert_eq!(m.name, "seq_cst_load.recommended");
    let c = case(Operation::Store, Order::SeqCst, Scope::Cta);
    let m = check_case(
        &c,
        &body(&["fence.sc.cta", "st.relaxed.cta.b32 [%rd1], %r1"]),
    )
    .unwrap();
    assert_eq!(m.name, "seq_cst_store.only");
}

// The chapter's first note: the memory order parameter is monotonic, so each step of an
// alternative may carry a stronger order, and a stronger C++ order's row (or alternative)
// may stand in for a weaker one.
#[test]
fn accepts_strengthened_alternatives() {
    // seq_cst_load.alt1 with its trailing acquire fence strengthened to acq_rel, and its
    // load to acquire.
    let ld = case(Operation::Load, Order::SeqCst, Scope::Sys);
    let m = check_case(
        &ld,
        &body(&[
            "fence.sc.sys",
            "ld.acquire.sys.b32 %r1, [%rd1]",
            "fence.acq_rel.sys",
        ]),
    )
    .unwrap();
    assert_eq!(m.name, "seq_cst_load.alt1");
    assert_eq!(m.notes.len(), 2, "{m}");
    // release_store.alt1 with its fence strengthened to acq_rel.
    let st = case(Operation::Store, Order::Release, Scope::Cta);
    let m = check_case(
        &st,
        &body(&["fence.acq_rel.cta", "st.relaxed.cta.b32 [%rd1], %r1"]),
    )
    .unwrap();
    assert_eq!(m.name, "release_store.alt1");
    // An acquire RMW written with acq_rel_rmw.alt2 (a stronger C++ order's alternative).
    let rmw = case(Operation::Rmw(RmwOp::FetchAnd), Order::Acquire, Scope::Gpu);
    let m = check_case(
        &rmw,
        &body(&[
            "fence.release.gpu",
            "atom.relaxed.gpu.and.b32 %r1, [%rd1], %r2",
            "fence.acquire.gpu",
        ]),
    )
    .unwrap();
    // The acquire row's own alt1 is `atom.relaxed; fence.acquire` (2 steps); 3 steps
    // match the acq_rel row's alt2.
    assert_eq!(m.name, "acq_rel_rmw.alt2");
    assert!(m.notes.iter().any(|n| n.contains("acq_rel row")), "{m}");
}

// Anything weaker than every mapping of the row (and of the stronger rows) is refused,
// and the refusal names the row it expected with its recommended form.
#[test]
fn rejects_weakened_alternatives_naming_the_row() {
    let weakened: [(Operation, Order, &[&str], &str); 5] = [
            // seq_cst_load.alt1 without its trailing acquire fence.
            (
                Operation::Load,
                Order::SeqCst,
                &["fence.sc.gpu", "ld.relaxed.gpu.b32 %r1, [%rd1]"],
                "seq_cst_load, recommended `fence.sc.gpu; ld.acquire.gpu;` (ptx-interop-13.2 ch. 4 seq_cst atomic_load)",
            ),
            // acquire_load.alt1 with a release fence in place of the acquire one.
            (
                Operation::Load,
                Order::Acquire,
                &["ld.relaxed.gpu.b32 %r1, [%rd1]", "fence.release.gpu"],
                "acquire_load, recommended `ld.acquire.gpu;` (ptx-interop-13.2 ch. 4 acquire atomic_load)",
            ),
            // acq_rel_rmw.alt1 with a relaxed atom: that is release_rmw.alt1, a weaker order.
            (
                Operation::Rmw(RmwOp::FetchAdd),
                Order::AcqRel,
                &[
                    "fence.release.gpu",
                    "atom.relaxed.gpu.add.u32 %r1, [%rd1], %r2",
                ],
                "acq_rel_rmw, recommended `atom.acq_rel.gpu.add;` (ptx-interop-13.2 ch. 4 acq_rel atomic_rmw)",
            ),
            // release_store.alt1 with the fence after the store.
            (
                Operation::Store,
                Order::Release,
                &["st.relaxed.gpu.b32 [%rd1], %r1", "fence.release.gpu"],
                "release_store, recommended `st.release.gpu;` (ptx-interop-13.2 ch. 4 release atomic_store)",
            ),
            // seq_cst_rmw.alt1 with the leading fence weakened to acq_rel.
            (
                Operation::Rmw(RmwOp::Exchange),
                Order::SeqCst,
                &[
                    "fence.acq_rel.gpu",
                    "atom.relaxed.gpu.exch.b32 %r1, [%rd1], %r2",
                    "fence.acquire.gpu",
                ],
                "seq_cst_rmw, recommended `fence.sc.gpu; atom.acquire.gpu.exch;` (ptx-interop-13.2 ch. 4 seq_cst atomic_rmw)",
            ),
        ];
    for (op, order, lines, row) in weakened {
        let c = case(op, order, Scope::Gpu);
        let e = check_case(&c, &body(lines)).unwrap_err();
        assert_eq!(e.row, row);
        assert!(
            e.to_string().contains(&format!("expected row {row}")),
            "{e}"
        );
        // Every alternative of the row is listed as allowed.
        let names: Vec<&str> = e
            .allowed
            .iter()
            .filter_map(|a| a.split('[').nth(1))
            .collect();
        let alts = table::rows(op, order).len();
        assert!(names.len() >= alts, "{e}");
    }
    // The runner's status carries the row too.
    let c = case(Operation::Load, Order::Acquire, Scope::Gpu);
    let e = check_case(&c, &body(&["ld.relaxed.gpu.b32 %r1, [%rd1]"])).unwrap_err();
    match super::super::MappingOutcome::Diverges(e).to_status(&c) {
        crate::outcome::CaseStatus::Fail { expected, .. } => assert!(
            expected.starts_with("row acquire_load, recommended `ld.acquire.gpu;`"),
            "{expected}"
        ),
        other => panic!("{other:?}"),
    }
}
