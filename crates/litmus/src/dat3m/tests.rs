use super::*;
use crate::{AtomOp, Op, Operand, Quantifier, Scope, Sem, Term};

// Written as Dat3M's litmus/PTX/Manual/MP-gpu.litmus is published.
const MP_GPU: &str = "PTX MP-gpu
\"Message passing, sync because release/acquire are morally strong\"
{
x=0;
y=0;
P1:r1=0;
P1:r2=0;
}
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         ;
 st.weak x, 1           | ld.acquire.gpu r1, y   ;
 st.release.gpu y, 1    | ld.weak r2, x          ;
~exists
(P1:r1 == 1 /\\ P1:r2 != 1)
";

// As litmus/PTX/Manual/Coherence.litmus: several entries on one init line, `=` comparisons.
const COHERENCE: &str = "PTX Coherence
\"Test that threads 3 and 4 can't read updates to x in conflicting order\"
{
x=0;
P2:r0=0; P2:r1=0;
P3:r2=0; P3:r3=0;
}
 P0@cta 0,gpu 0      | P1@cta 0,gpu 0      | P2@cta 0,gpu 0       | P3@cta 0,gpu 0       ;
 st.relaxed.sys x, 1 | st.relaxed.sys x, 2 | ld.acquire.sys r0, x | ld.acquire.sys r2, x ;
                     |                     | ld.acquire.sys r1, x | ld.acquire.sys r3, x ;
exists
(P2:r0 = 1 /\\ P2:r1 = 2 /\\ P3:r2 = 2 /\\ P3:r3 = 1)
";

// As litmus/PTX/Nvidia/Atom-SB.litmus: RMWs, `forall`, two description strings.
const ATOM_SB: &str = "PTX Atom-SB
\"RMW store buffering\"
\"https://github.com/NVlabs/mixedproxy/blob/main/tests/SB_rmw.test\"
{
P0:r0=0;
P1:r1=0;
x=0;
y=0;
}
 P0@cta 0,gpu 0                       | P1@cta 1,gpu 0                         ;
 atom.acq_rel.gpu.add r1, x, 1        | atom.acq_rel.gpu.add r3, y, 1         ;
 atom.acq_rel.gpu.add r2, y, 1        | atom.acq_rel.gpu.add r4, x, 1         ;
forall
(P0:r2 != 0 \\/ P1:r4 != 0)
";

// As litmus/PTX/Memalloy/WWC1.litmus: register loads `ld r0, 2`, stores of registers.
const WWC1: &str = "PTX WWC1
\"Rf-c-g Mcta-d-Rg-Wg Rf-w-g Mgl-d-Rg-Wg Ws-c-g\"
{
P0:r0=0;
P1:r0=0;
P1:r2=0;
P2:r0=0;
P2:r2=0;
x=0;
y=0;
}
 P0@cta 0,gpu 0           | P1@cta 1,gpu 0           | P2@cta 1,gpu 0           ;
 ld r0, 2                 | ld.weak r0, x            | ld.weak r0, x            ;
 st.weak x, r0            | fence.sc.cta             | fence.sc.sys            ;
                          | ld r2, 1                 | ld r2, 1                 ;
                          | st.weak y, r2            | st.weak y, r2            ;
exists
(x == 2 /\\ P1:r0 == 2 /\\ P2:r0 == 1)
";

// As litmus/PTX/Manual/SL-cas-plus.litmus (its branch is dropped: unsupported here), with
// NVRTC's modifier order on one instruction.
const CAS: &str = "PTX SL-cas
{
x=0;
m=1;
}
 P0@cta 0,gpu 0                 | P1@cta 1,gpu 0                   ;
 st.relaxed.gpu x, 1            | atom.relaxed.gpu.cas r1, m, 0, 1 ;
 fence.sc.gpu                   | fence.sc.gpu                     ;
 atom.exch.relaxed.gpu.b32 r0, m, 0 | ld.relaxed.gpu r3, x          ;
exists
 (P1:r1 == 0 /\\ P1:r3 == 0)
";

#[test]
fn imports_published_tests() {
    let mp = import(MP_GPU).unwrap();
    assert_eq!(mp.name, "MP-gpu");
    assert_eq!(mp.condition.quantifier, Quantifier::NotExists);
    assert_eq!(mp.threads[1].regs.get("r2"), Some(&0));
    assert_eq!(
        mp.threads[0].ops[1],
        Op::St {
            loc: "y".into(),
            val: Operand::Const(1),
            sem: Sem::Release,
            scope: Some(Scope::Gpu)
        }
    );
    let co = import(COHERENCE).unwrap();
    assert_eq!(co.threads.len(), 4);
    assert_eq!(co.threads[2].ops.len(), 2);
    assert_eq!(co.threads[0].ops.len(), 1);
    let sb = import(ATOM_SB).unwrap();
    assert_eq!(sb.condition.quantifier, Quantifier::Forall);
    assert_eq!(sb.threads[1].cta, 1);
    assert!(sb.description.as_deref().unwrap().contains("mixedproxy"));
    let wwc = import(WWC1).unwrap();
    assert_eq!(
        wwc.threads[1].ops[2],
        Op::Mov {
            reg: "r2".into(),
            val: Operand::Const(1)
        }
    );
    assert_eq!(
        wwc.threads[2].ops[1],
        Op::Fence {
            sem: Sem::Sc,
            scope: Scope::Sys
        }
    );
    let cas = import(CAS).unwrap();
    assert_eq!(
        cas.threads[1].ops[0],
        Op::Atom {
            op: AtomOp::Cas,
            reg: "r1".into(),
            loc: "m".into(),
            val: Operand::Const(1),
            cmp: Some(Operand::Const(0)),
            sem: Sem::Relaxed,
            scope: Scope::Gpu
        }
    );
    assert!(matches!(
        &cas.threads[0].ops[2],
        Op::Atom {
            op: AtomOp::Exch,
            ..
        }
    ));
    assert_eq!(cas.init_of("m"), 1);
}

// As litmus/PTX/Manual/Red-plus-location_.litmus: reductions.
const RED: &str = "PTX Red-plus-location
{
P0:r0=0;
P1:r0=0;
x=0;
}
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 red.acq_rel.sys.add x, 1         | red.acq_rel.sys.add x, 1  ;
forall
(x == 2)
";

#[test]
fn roundtrip_import_export_import() {
    assert!(matches!(
        import(RED).unwrap().threads[1].ops[0],
        Op::Red {
            op: AtomOp::Add,
            sem: Sem::AcqRel,
            scope: Scope::Sys,
            ..
        }
    ));
    for text in [MP_GPU, COHERENCE, ATOM_SB, WWC1, CAS, RED] {
        let a = import(text).unwrap();
        let out = export(&a);
        let b = import(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
        assert_eq!(a, b, "{out}");
    }
}

#[test]
fn cluster_placement_roundtrips() {
    let t = import(
            "PTX C\n{ x=0; }\n P0@cta 0,cluster 3,gpu 1 | P1@cta 1,cluster 3,gpu 1 ;\n st.relaxed.cluster x, 1 | ld.relaxed.cluster r0, x ;\nexists (1:r0 = 1)\n",
        )
        .unwrap();
    assert_eq!(t.threads[1].cluster, Some(3));
    assert_eq!(t.threads[1].gpu, 1);
    assert_eq!(import(&export(&t)).unwrap(), t);
    assert!(matches!(
        &t.condition.prop,
        crate::Prop::Cmp {
            term: Term::Reg { thread: 1, .. },
            ..
        }
    ));
}

#[test]
fn errors_carry_the_line() {
    let bad = MP_GPU.replace("ld.acquire.gpu r1, y", "ld.bogus.gpu r1, y");
    let e = import(&bad).unwrap_err();
    assert_eq!(e.line, 10, "{e}");
    assert!(e.msg.contains(".bogus"), "{e}");
    let bad = MP_GPU.replace("P1@cta 0", "P2@cta 0");
    assert_eq!(import(&bad).unwrap_err().line, 9);
    // A jump to no label, an unknown register: the error points at the cell.
    let e =
        import("PTX X\n{ x=0; P0:r1=0; }\n P0@cta 0,gpu 0 ;\n bne r1, 0, L ;\nexists (x == 1)\n")
            .unwrap_err();
    assert_eq!((e.line, e.col), (4, 2), "{e}");
    assert!(e.msg.contains("no label"), "{e}");
    let e = import(
            "PTX X\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n st.weak x, 1 | st.weak x, r7 ;\nexists (x == 1)\n",
        )
        .unwrap_err();
    assert_eq!((e.line, e.col), (4, 17), "{e}");
    assert!(e.msg.contains("`r7`"), "{e}");
    // A condition on a register no thread writes is an error, not a silent zero.
    let e = import("PTX X\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\nexists (P0:r3 == 0)\n")
        .unwrap_err();
    assert_eq!(e.line, 5, "{e}");
    assert!(import("C X\n").unwrap_err().msg.contains("PTX"));
}
/// The 1-based line and character column at which `needle` starts in `text`, counted
/// from the text itself (not by the importer).
fn where_is(text: &str, needle: &str) -> (usize, usize) {
    let at = text.find(needle).unwrap();
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = text[..at].matches('\n').count() + 1;
    (line, text[line_start..at].chars().count() + 1)
}

/// A bad init entry is reported at its own line and column in the file, wherever it sits
/// in the block: on the `{` line (indented or not), on a later line of a multi-line block,
/// after tabs, after a non-ASCII name (columns count characters).
#[test]
fn a_bad_init_entry_is_reported_where_it_is_written() {
    let rest = "\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\nexists (x == 1)\n";
    for (init, bad, what) in [
        ("{ x=1; y 2; }", "y 2", "not `name=value`"),
        ("   {  x=1;   y 2; }", "y 2", "not `name=value`"),
        (
            "{\nx=0;\n  y=0; P0:r0=1; z 3;\n}",
            "z 3",
            "not `name=value`",
        ),
        ("{ x=0;\n\t\tP0:r0 = zz; }", "P0:r0 = zz", "not an integer"),
        ("\t{\tx=0;\ty=0;\tx=2;\t}", "x=2", "initialised twice"),
        ("{ é=0; y 2; }", "y 2", "not `name=value`"),
        (
            "{ x=0;\n  t @ texture of x; }",
            "t @ texture of x",
            "bad proxy declaration",
        ),
    ] {
        let text = format!("PTX T\n{init}{rest}");
        let e = import(&text).unwrap_err();
        assert_eq!((e.line, e.col), where_is(&text, bad), "{init:?}: {e}");
        assert!(e.msg.contains(what), "{init:?}: {e}");
        let (line, col) = where_is(&text, bad);
        assert!(e.to_string().starts_with(&format!("{line}:{col}: ")), "{e}");
    }
}

/// Threads and instructions past their bounds are refused at the first cell past it, as
/// the header or rows are read; a name or description export could not write back is
/// refused at its line.
#[test]
fn bounds_and_header_text_are_checked_where_they_are_written() {
    let n = super::super::MAX_THREADS + 1;
    let head: Vec<String> = (0..n).map(|t| format!("P{t}@cta {t},gpu 0")).collect();
    let text = format!(
        "PTX W\n{{ x=0; }}\n {} ;\n st.weak x, 1 ;\nexists (x == 1)\n",
        head.join(" | ")
    );
    let e = import(&text).unwrap_err();
    assert_eq!((e.line, e.col), where_is(&text, "P256@"), "{e}");
    assert!(e.msg.contains("more than 256 threads"), "{e}");
    let rows = " st.weak x, 1 | st.weak y, 1 ;\n".repeat(super::super::MAX_OPS / 2 + 1);
    let text =
        format!("PTX L\n{{ x=0; }}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n{rows}exists (x == 1)\n");
    let e = import(&text).unwrap_err();
    // Row 2049 (file line 2052): its first cell is instruction 4097.
    assert_eq!((e.line, e.col), (2052, 2), "{e}");
    assert!(e.msg.contains("more than 4096 instructions"), "{e}");
    let text = MP_GPU.replacen("PTX MP-gpu", "PTX MP\u{7}gpu", 1);
    let e = import(&text).unwrap_err();
    assert_eq!((e.line, e.col), (1, 5), "{e}");
    assert!(e.msg.contains("control character"), "{e}");
    let text = MP_GPU.replacen("PTX MP-gpu\n", "PTX MP-gpu\n\n\"a\u{1b}b\"\n", 1);
    let e = import(&text).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.msg.contains("control character '\\u{1b}'"), "{e}");
}

/// Header cells and instruction cells point at their cell too.
#[test]
fn header_and_instruction_errors_point_at_the_cell() {
    for (text, bad) in [
            (
                "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 |  P2@cta 0,gpu 0 ;\n st.weak x, 1 | ;\nexists (x == 1)\n",
                "P2@cta",
            ),
            (
                "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu x ;\n st.weak x, 1 | ;\nexists (x == 1)\n",
                "P1@cta",
            ),
            (
                "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n st.weak x, 1 |\tld.bogus r0, x ;\nexists (x == 1)\n",
                "ld.bogus",
            ),
        ] {
            let e = import(text).unwrap_err();
            assert_eq!((e.line, e.col), where_is(text, bad), "{e}");
        }
}

/// A description whose quotes do not pair up (it quotes a phrase inside its own quotes, as
/// Dat3M's `Manual/MICRO24-Fig4b-correct.litmus` does) is read as the text before the init
/// block, as Dat3M reads past it; export writes it back escaped and it reads the same again.
#[test]
fn a_description_with_unpaired_quotes_is_the_text_before_the_init_block() {
    // (Blank lines before it, blanks around its first line and at a line's end, as fuzzing
    // found: the description reads back the same after export.)
    let text = "PTX D\n\n  \" \nsays \"hi\" inside \n\"\n{ x=0; }\n P0@cta 0,gpu 0 ;\n \
                st.weak x, 1 ;\nexists (x == 1)\n";
    let t = import(text).unwrap();
    assert_eq!(
        t.description.as_deref(),
        Some("\"\nsays \"hi\" inside \n\"")
    );
    assert_eq!(t.threads[0].ops.len(), 1);
    let again = import(&export(&t)).unwrap();
    assert_eq!(again, t);
    // A quote that never closes and no init block after it is still an error, at its line.
    let e = import("PTX D\n\"open\n st.weak x, 1 ;\n").unwrap_err();
    assert_eq!(e.line, 2, "{e}");
}
