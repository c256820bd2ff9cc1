//! Extract an operation's instruction sequence from a producer's PTX function and check it
//! against the chapter's allowed mappings ([`super::table`]), comparing parsed parts with the
//! PTX ISA's defaults applied ([`MemOp::effective`]).

use std::fmt;

use crate::ptx::instr::{Instruction, MemOp, MemOpKind, Scope, Space};

use super::source::MappingCase;
use super::table::{self, Mapping, Operation, RmwOp, Step, StepKind};

/// The instructions of a function body that take part in the mapping: memory-model
/// instructions (loads, stores, atomics, fences, barriers) other than `.param` accesses
/// (argument and return passing), plus calls, which never match a step but show up in the
/// emitted sequence when a producer calls out instead of emitting the operation inline.
/// Address arithmetic, moves, compares and branches are dropped.
pub fn extract(body: &[Instruction]) -> Vec<Instruction> {
    body.iter()
        .filter(|i| match i.mem_op() {
            Some(m) => {
                !(matches!(m.kind, MemOpKind::Ld | MemOpKind::St) && m.space == Some(Space::Param))
            }
            None => i.opcode == "call",
        })
        .cloned()
        .collect()
}

/// How an emitted sequence conforms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The emitted memory instructions as written.
    pub emitted: Vec<String>,
    /// The chapter's row it matched, written out for the case's scope.
    pub mapping: String,
    /// That mapping's name, row and position (`seq_cst_load.alt1`).
    pub name: String,
    pub clause: String,
    /// Readings applied: strengthened `.sem`, a stronger order's row, PTX ISA defaults.
    pub notes: Vec<String>,
}

impl fmt::Display for Matched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` matches {} `{}` ({})",
            self.emitted.join(" "),
            self.name,
            self.mapping,
            self.clause
        )?;
        if !self.notes.is_empty() {
            write!(f, "; {}", self.notes.join("; "))?;
        }
        Ok(())
    }
}

/// An emitted sequence the chapter does not allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub case: MappingCase,
    /// Each emitted instruction as written, with its meaning when PTX ISA defaults apply.
    pub emitted: Vec<String>,
    /// Each allowed sequence for the case's scope, with its table.
    pub allowed: Vec<String>,
    /// The row the case expected, with its recommended (or only) sequence for the case's
    /// scope and its clause id: `seq_cst_load, recommended `fence.sc.gpu; ld.acquire.gpu;`
    /// (ptx-interop-13.2 ch. 4 seq_cst atomic_load)`.
    pub row: String,
    /// What differs from the closest row of the case's own table.
    pub diagnosis: String,
}

impl Mismatch {
    pub fn emitted_text(&self) -> String {
        if self.emitted.is_empty() {
            "(no memory instruction)".into()
        } else {
            self.emitted.join(" ")
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.case;
        writeln!(
            f,
            "{}: {} emitted `{}` for {}(memory_order_{}, thread_scope {})",
            c.id(),
            super::source::describe(c.producer),
            self.emitted_text(),
            c.operation.name(),
            c.order.name(),
            c.scope.name()
        )?;
        writeln!(f, "  expected row {}", self.row)?;
        writeln!(f, "  allowed ({}):", c.clause())?;
        for a in &self.allowed {
            writeln!(f, "    {a}")?;
        }
        write!(f, "  {}", self.diagnosis)
    }
}

/// Check the function body of `case` (as returned by [`crate::ptx::instr::function_body`]).
pub fn check_case(case: &MappingCase, body: &[Instruction]) -> Result<Matched, Mismatch> {
    let emitted = extract(body);
    let rmw = match case.operation {
        Operation::Rmw(r) => Some(r),
        _ => None,
    };
    let allowed = table::allowed(case.operation, case.order).unwrap_or_default();
    for m in &allowed {
        if let Ok(mut notes) = match_mapping(m, &emitted, case.scope, rmw, false) {
            if m.order != case.order {
                notes.push(format!(
                    "uses the {} row: the C++ order strengthened from {}",
                    m.order.name(),
                    case.order.name()
                ));
            }
            return Ok(Matched {
                emitted: emitted.iter().map(written).collect(),
                mapping: m.render(case.scope, rmw),
                name: m.name(),
                clause: m.clause.clone(),
                notes,
            });
        }
    }
    let row = table::Row {
        order: case.order,
        kind: case.operation.row_kind(),
    };
    let first = row.mappings().into_iter().next();
    Err(Mismatch {
        case: *case,
        row: format!(
            "{}, {} `{}` ({})",
            row.name(),
            if first.as_ref().is_some_and(|m| m.recommended) {
                "recommended"
            } else {
                "only mapping"
            },
            first.map(|m| m.render(case.scope, rmw)).unwrap_or_default(),
            row.clause_id()
        ),
        emitted: emitted.iter().map(described).collect(),
        allowed: allowed
            .iter()
            .map(|m| {
                format!(
                    "{}  [{}{}]",
                    m.render(case.scope, rmw),
                    m.name(),
                    if m.order != case.order {
                        ", a stronger order's row"
                    } else {
                        ""
                    }
                )
            })
            .collect(),
        diagnosis: {
            let mut d = diagnose(case, &emitted, rmw);
            if body.iter().any(|i| i.opcode == "bra" || i.opcode == "brx") {
                d.push_str(
                    " (the function branches; its memory instructions are read in program order)",
                );
            }
            d
        },
    })
}

fn written(i: &Instruction) -> String {
    let mut s = i.opcode.clone();
    for m in &i.modifiers {
        s.push('.');
        s.push_str(m);
    }
    s.push(';');
    s
}

/// The instruction as written, plus its meaning when that differs from the text.
fn described(i: &Instruction) -> String {
    let w = written(i);
    match i.mem_op() {
        Some(m) if needs_reading(&m) => format!("{w} (= {};)", m.effective()),
        _ => w,
    }
}

fn needs_reading(m: &MemOp) -> bool {
    match m.kind {
        MemOpKind::Atom | MemOpKind::Red => m.sem.is_none() || m.scope.is_none(),
        MemOpKind::Fence => m.sem.is_none(),
        MemOpKind::Membar => true,
        MemOpKind::Ld | MemOpKind::St => m.sem == Some(crate::ptx::instr::Sem::Volatile),
        _ => false,
    }
}

/// How the emitted instructions diverge from one row of the chapter's table (ptx-interop
/// ch. 4), at the first position that differs; `index` counts from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowMismatch {
    #[error("{emitted} memory instruction(s) where the row has {row}")]
    Count { emitted: usize, row: usize },
    #[error("instruction {index} `{written}`: {step}")]
    At {
        index: usize,
        written: String,
        step: StepMismatch,
    },
}

/// How one instruction diverges from the row's step; `want` is the step as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StepMismatch {
    #[error("not a memory instruction; expected `{want}`")]
    NotMemory { want: String },
    #[error("is {is}, expected `{want}`")]
    Kind { is: &'static str, want: String },
    #[error("operation .{got} where `{want}` needs .{need}")]
    Operation {
        got: &'static str,
        want: String,
        need: &'static str,
    },
    #[error("no memory semantics; expected `{want}`")]
    NoSemantics { want: String },
    #[error("semantics .{got} is weaker than (or not) the required .{required}")]
    Semantics {
        got: &'static str,
        required: &'static str,
    },
    #[error("scope .{got} where `{want}` needs .{need}")]
    Scope {
        got: &'static str,
        want: String,
        need: &'static str,
    },
    #[error(transparent)]
    Type(#[from] AccessTypeMismatch),
}

/// Match `emitted` against one row. Ok carries the readings used; Err the reason at the first
/// position that differs. With `ignore_scope`, scope differences are tolerated (used only to
/// diagnose, never to accept).
fn match_mapping(
    m: &Mapping,
    emitted: &[Instruction],
    scope: Scope,
    rmw: Option<RmwOp>,
    ignore_scope: bool,
) -> Result<Vec<String>, RowMismatch> {
    if emitted.len() != m.steps.len() {
        return Err(RowMismatch::Count {
            emitted: emitted.len(),
            row: m.steps.len(),
        });
    }
    let mut notes = Vec::new();
    for (i, (ins, step)) in emitted.iter().zip(&m.steps).enumerate() {
        match match_step(step, ins, scope, rmw, ignore_scope) {
            Ok(mut n) => notes.append(&mut n),
            Err(step) => {
                return Err(RowMismatch::At {
                    index: i + 1,
                    written: written(ins),
                    step,
                })
            }
        }
    }
    Ok(notes)
}

fn match_step(
    step: &Step,
    ins: &Instruction,
    scope: Scope,
    rmw: Option<RmwOp>,
    ignore_scope: bool,
) -> Result<Vec<String>, StepMismatch> {
    let want = step_name(step, scope, rmw);
    let Some(mem) = ins.mem_op() else {
        return Err(StepMismatch::NotMemory { want });
    };
    let e = mem.effective();
    let kind_ok = matches!(
        (step.kind, e.kind),
        (StepKind::Fence, MemOpKind::Fence)
            | (StepKind::Ld, MemOpKind::Ld)
            | (StepKind::St, MemOpKind::St)
            | (StepKind::Atom, MemOpKind::Atom)
    );
    if !kind_ok {
        return Err(StepMismatch::Kind {
            is: e.kind.name(),
            want,
        });
    }
    if let (StepKind::Atom, Some(r)) = (step.kind, rmw) {
        if e.op != Some(r.ptx_op()) {
            return Err(StepMismatch::Operation {
                got: e.op.map_or("none", |o| o.name()),
                want,
                need: r.ptx_op().name(),
            });
        }
    }
    let Some(sem) = e.sem else {
        return Err(StepMismatch::NoSemantics { want });
    };
    if !sem.at_least(step.sem) || !step.kind.accepts(sem) {
        return Err(StepMismatch::Semantics {
            got: sem.name(),
            required: step.sem.name(),
        });
    }
    if e.scope != Some(scope) && !ignore_scope {
        return Err(StepMismatch::Scope {
            got: e.scope.map_or("none", |s| s.name()),
            want,
            need: scope.name(),
        });
    }
    check_type(&mem, step, rmw)?;
    let mut notes = Vec::new();
    if sem != step.sem {
        notes.push(format!(
            "`{}` strengthens .{} to .{} (ch. 4 note: the order is monotonic)",
            written(ins),
            step.sem.name(),
            sem.name()
        ));
    }
    if needs_reading(&mem) {
        notes.push(format!(
            "`{}` read as `{e}` (PTX ISA defaults/synonyms)",
            written(ins)
        ));
    }
    Ok(notes)
}

/// How an access's data type diverges from the 32-bit `int` the cases operate on (`ty` is
/// the type suffix as written, without the dot).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessTypeMismatch {
    #[error("no data type")]
    NoType,
    #[error(".{ty} is not a 32-bit access of an int")]
    Width { ty: String },
    #[error(".{ty} min/max of a signed int needs .s32")]
    Unsigned { ty: String },
}

/// The cases operate on a 32-bit `int`: the access must be 32 bits wide, and min/max must
/// compare signed (PTX ISA atom: `.s32` for signed min/max). Not a clause of ch. 4, but a
/// mapping that gets these wrong computes a different C++ operation.
fn check_type(mem: &MemOp, step: &Step, rmw: Option<RmwOp>) -> Result<(), AccessTypeMismatch> {
    let Some(ty) = mem.ty.as_deref() else {
        return if step.kind == StepKind::Fence {
            Ok(())
        } else {
            Err(AccessTypeMismatch::NoType)
        };
    };
    if !ty.ends_with("32") {
        return Err(AccessTypeMismatch::Width { ty: ty.to_string() });
    }
    if step.kind == StepKind::Atom
        && matches!(rmw, Some(RmwOp::FetchMin | RmwOp::FetchMax))
        && ty != "s32"
    {
        return Err(AccessTypeMismatch::Unsigned { ty: ty.to_string() });
    }
    Ok(())
}

fn step_name(step: &Step, scope: Scope, rmw: Option<RmwOp>) -> String {
    let m = Mapping {
        order: table::Order::Relaxed,
        kind: table::RowKind::Fence,
        position: 0,
        steps: vec![*step],
        recommended: false,
        clause: String::new(),
    };
    m.render(scope, rmw).trim_end_matches(';').to_string()
}

/// Explain a mismatch against the rows of the case's own order (the chapter's table for it).
fn diagnose(case: &MappingCase, emitted: &[Instruction], rmw: Option<RmwOp>) -> String {
    let rows = table::rows(case.operation, case.order);
    let allowed = table::allowed(case.operation, case.order).unwrap_or_default();
    // Differs only in scope?
    for m in &allowed {
        if match_mapping(m, emitted, case.scope, rmw, true).is_ok() {
            let scopes: Vec<Scope> = emitted
                .iter()
                .filter_map(|i| i.mem_op())
                .filter_map(|m| m.effective().scope)
                .filter(|s| *s != case.scope)
                .collect();
            let names: Vec<&str> = scopes.iter().map(|s| s.name()).collect();
            // Scopes nest cta < cluster < gpu < sys; a narrower one leaves threads of the
            // required scope outside the operation's morally-strong set.
            let effect = if scopes.iter().any(|s| *s < case.scope) {
                "narrower than required: threads in the required scope but outside the emitted \
                 one are not covered"
            } else {
                "wider than required: stronger in the memory model, but the chapter's note \
                 permits strengthening the memory order, not the scope"
            };
            return format!(
                "matches `{}` except for scope: emitted .{}, required .{} ({effect})",
                m.render(case.scope, rmw),
                names.join("/."),
                case.scope.name()
            );
        }
    }
    // Missing the leading fence of a row?
    for m in &rows {
        if m.steps.len() == emitted.len() + 1 {
            let tail = Mapping {
                steps: m.steps[1..].to_vec(),
                ..m.clone()
            };
            if match_mapping(&tail, emitted, case.scope, rmw, false).is_ok() {
                return format!(
                    "missing the leading `{}` of `{}`",
                    step_name(&m.steps[0], case.scope, rmw),
                    m.render(case.scope, rmw)
                );
            }
        }
    }
    // Otherwise the first difference from the closest same-length row.
    let same_len: Vec<&Mapping> = rows
        .iter()
        .filter(|m| m.steps.len() == emitted.len())
        .collect();
    if let Some(m) = same_len.first() {
        if let Err(e) = match_mapping(m, emitted, case.scope, rmw, false) {
            return format!("against `{}`: {e}", m.render(case.scope, rmw));
        }
    }
    let lens: Vec<String> = rows.iter().map(|m| m.steps.len().to_string()).collect();
    format!(
        "{} memory instruction(s) emitted; the {} rows have {}",
        emitted.len(),
        case.order.name(),
        lens.join(" or ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::mapping::source::Producer;
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
        MappingCase {
            producer: Producer::named("nvrtc"),
            operation,
            order,
            scope,
        }
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
}
