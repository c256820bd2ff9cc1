//! Extract an operation's instruction sequence from a producer's PTX function and check it
//! against the chapter's allowed mappings ([`super::table`]), comparing parsed parts with the
//! PTX ISA's defaults applied ([`MemOp::effective`]).

use std::fmt;

use crate::ptx::instr::{AtomOp, Instruction, MemOp, MemOpKind, Scope, Sem, Space};

use super::source::{MappingCase, ObjectSpace, ValueType};
use super::table::{self, Mapping, Operation, RmwOp, Step, StepKind};

/// What the check knows of the case besides its row: the object's type and state space, and
/// the structure found around the memory instructions.
#[derive(Debug, Clone, Copy)]
struct Reading {
    ty: ValueType,
    space: ObjectSpace,
    /// The `atom` step is an `atom.cas` retried in a loop until it succeeds.
    cas_loop: bool,
    /// The C++ call's result is used (a `red`, which returns nothing, cannot stand for it).
    result_used: bool,
}

/// Whether the C++ call's result is used by the program: a `red` (PTX ISA `red`: an `atom`
/// without a destination) implements the RMW only when it is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultUse {
    Used,
    Discarded,
}

/// Where each label of a PTX text is (1-based line), for finding loops: the instruction
/// reader drops labels, keeping each statement's line.
pub fn label_lines(ptx: &str) -> std::collections::HashMap<String, Vec<usize>> {
    let mut out: std::collections::HashMap<String, Vec<usize>> = Default::default();
    for (n, l) in ptx.lines().enumerate() {
        let t = l.trim_start();
        if let Some(c) = t.find(':') {
            let lab = &t[..c];
            if !lab.is_empty()
                && !t[c..].starts_with("::")
                && lab
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$' | b'%'))
            {
                out.entry(lab.to_string()).or_default().push(n + 1);
            }
        }
    }
    out
}

/// A compare-and-swap loop: the `atom.cas` (index into the body) inside a backward branch's
/// range, and the plain `ld` of the same address just before the loop that seeds the expected
/// value, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CasLoop {
    cas: usize,
    seed: Option<usize>,
}

fn find_cas_loop(
    body: &[Instruction],
    labels: &std::collections::HashMap<String, Vec<usize>>,
) -> Option<CasLoop> {
    let cas: Vec<usize> = body
        .iter()
        .enumerate()
        .filter(|(_, i)| {
            i.mem_op()
                .is_some_and(|m| m.kind == MemOpKind::Atom && m.op == Some(AtomOp::Cas))
        })
        .map(|(n, _)| n)
        .collect();
    let [c] = cas[..] else {
        return None;
    };
    let cas_line = body[c].line;
    // A branch after the CAS to a label at or before it: the loop's back edge.
    let head = body[c + 1..]
        .iter()
        .filter(|i| i.opcode == "bra")
        .filter_map(|i| i.operands.first())
        .filter_map(|l| labels.get(l.as_str()))
        .flatten()
        .copied()
        .filter(|&line| line <= cas_line)
        .max()?;
    // The seed: the last memory instruction before the loop head, a plain or relaxed `ld` of
    // the address the CAS updates.
    let addr = body[c].operands.get(1)?;
    let seed = body[..c]
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, i)| i.line < head && i.mem_op().is_some())
        .find(|(_, i)| {
            i.mem_op().is_some_and(|m| {
                !(matches!(m.kind, MemOpKind::Ld | MemOpKind::St) && m.space == Some(Space::Param))
            })
        })
        .filter(|(_, i)| i.opcode == "ld" && i.operands.get(1) == Some(addr))
        .map(|(n, _)| n);
    // Nothing else may touch memory inside the loop.
    let others = body
        .iter()
        .enumerate()
        .filter(|(n, i)| *n != c && i.line >= head && i.line <= cas_line)
        .any(|(_, i)| {
            i.mem_op().is_some_and(|m| {
                !(matches!(m.kind, MemOpKind::Ld | MemOpKind::St) && m.space == Some(Space::Param))
            })
        });
    (!others).then_some(CasLoop { cas: c, seed })
}

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

/// Check the function body of `case` (as returned by [`crate::ptx::instr::function_body`]),
/// whose result the program uses, with no label positions (no loop is recognised).
pub fn check_case(case: &MappingCase, body: &[Instruction]) -> Result<Matched, Mismatch> {
    check_case_in(case, body, &Default::default(), ResultUse::Used)
}

/// Check the function body of `case`; `labels` are the label lines of the PTX text the body
/// comes from ([`label_lines`]), `result` whether the program uses the call's value.
///
/// Three structures are read before matching the rows:
/// - generic addressing with libcu++'s `isspacep.local` dispatch: the `.local` and weak
///   accesses of the branch for thread-private memory are left out (PTX ISA §5.1.5: the local
///   state space is private to the thread, so no other thread can observe or race with them);
///   the other branch must hold the mapping;
/// - a compare-and-swap loop for an operation PTX lacks (e.g. floating-point subtraction):
///   the `atom.cas` that succeeds is the RMW (PTX ISA `atom.cas`: it writes only if memory
///   still holds the value the new one was computed from), so it stands for the row's
///   `atom.<rmw op>` with its own `.sem` and scope, and the plain `ld` seeding its expected
///   value is not part of the mapping (a stale or torn seed only makes the CAS fail and retry);
/// - `red` (an `atom` without destination, PTX ISA `red`) for an RMW whose result is unused.
pub fn check_case_in(
    case: &MappingCase,
    body: &[Instruction],
    labels: &std::collections::HashMap<String, Vec<usize>>,
    result: ResultUse,
) -> Result<Matched, Mismatch> {
    let mut structure = Vec::new();
    let local_dispatch = body
        .iter()
        .any(|i| i.opcode == "isspacep" && i.has("local"));
    let cas_loop = match case.operation {
        Operation::Rmw(r) if r != RmwOp::CompareExchange => find_cas_loop(body, labels),
        _ => None,
    };
    let mut kept: Vec<Instruction> = Vec::new();
    for (n, i) in body.iter().enumerate() {
        // The private branch's accesses: `.local` ones, and weak ones (libcu++ compares the
        // expected value bytewise through generic pointers there). No row has a weak step, so
        // leaving weak accesses out never completes a row; it can only make one incomplete.
        if local_dispatch
            && i.mem_op().is_some_and(|m| {
                matches!(m.kind, MemOpKind::Ld | MemOpKind::St)
                    && m.space != Some(Space::Param)
                    && (m.space == Some(Space::Local) || m.effective().sem == Some(Sem::Weak))
            })
        {
            continue;
        }
        if cas_loop.is_some_and(|l| l.seed == Some(n)) {
            structure.push(format!(
                "`{}` only seeds the CAS loop's expected value (not part of the mapping)",
                written(i)
            ));
            continue;
        }
        kept.push(i.clone());
    }
    if local_dispatch && kept.len() != extract(body).len() {
        structure.push(
            "`isspacep.local` dispatch: the thread-private `.local` branch is left out".into(),
        );
    }
    if let Some(l) = cas_loop {
        structure.push(format!(
            "`{}` retried in a loop until it succeeds stands for `atom.<rmw op>` (PTX ISA atom.cas)",
            written(&body[l.cas])
        ));
    }
    let reading = Reading {
        ty: case.ty,
        space: case.space,
        cas_loop: cas_loop.is_some(),
        result_used: result == ResultUse::Used,
    };
    let emitted = extract(&kept);
    let rmw = match case.operation {
        Operation::Rmw(r) => Some(r),
        _ => None,
    };
    let allowed = table::allowed(case.operation, case.order).unwrap_or_default();
    for m in &allowed {
        if let Ok(mut notes) = match_mapping(m, &emitted, case.scope, rmw, false, &reading) {
            if m.order != case.order {
                notes.push(format!(
                    "uses the {} row: the C++ order strengthened from {}",
                    m.order.name(),
                    case.order.name()
                ));
            }
            let mut all = structure.clone();
            all.append(&mut notes);
            return Ok(Matched {
                emitted: emitted.iter().map(written).collect(),
                mapping: m.render(case.scope, rmw),
                name: m.name(),
                clause: m.clause.clone(),
                notes: all,
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
            let mut d = diagnose(case, &emitted, rmw, &reading);
            if !structure.is_empty() {
                d.push_str(&format!(" (read: {})", structure.join("; ")));
            } else if body.iter().any(|i| i.opcode == "bra" || i.opcode == "brx") {
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
    #[error("state space .{got} cannot hold the {object} object")]
    Space {
        got: &'static str,
        object: &'static str,
    },
    #[error("is red, which returns no value, where `{want}` must return the value read")]
    RedResult { want: String },
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
    reading: &Reading,
) -> Result<Vec<String>, RowMismatch> {
    if emitted.len() != m.steps.len() {
        return Err(RowMismatch::Count {
            emitted: emitted.len(),
            row: m.steps.len(),
        });
    }
    let mut notes = Vec::new();
    for (i, (ins, step)) in emitted.iter().zip(&m.steps).enumerate() {
        match match_step(step, ins, scope, rmw, ignore_scope, reading) {
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
    reading: &Reading,
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
    let mut notes = Vec::new();
    // `red` is `atom` without the value read (PTX ISA red): the same RMW when the program
    // discards the value; it takes only .relaxed and .release.
    let red = step.kind == StepKind::Atom && e.kind == MemOpKind::Red;
    if red && reading.result_used {
        return Err(StepMismatch::RedResult { want });
    }
    if !kind_ok && !red {
        return Err(StepMismatch::Kind {
            is: e.kind.name(),
            want,
        });
    }
    if red {
        notes.push(format!(
            "`{}` is `atom` without a destination (PTX ISA red); the result is unused",
            written(ins)
        ));
    }
    if let (StepKind::Atom, Some(r)) = (step.kind, rmw) {
        let cas_for_op = reading.cas_loop && e.op == Some(AtomOp::Cas);
        if e.op != Some(r.ptx_op()) && !cas_for_op {
            return Err(StepMismatch::Operation {
                got: e.op.map_or("none", |o| o.name()),
                want,
                need: r.ptx_op().name(),
            });
        }
        if r == RmwOp::FetchSub && e.op == Some(AtomOp::Add) {
            notes.push(format!(
                "`{}` adds the negated operand: PTX has no atom.sub",
                written(ins)
            ));
        }
    }
    let Some(sem) = e.sem else {
        return Err(StepMismatch::NoSemantics { want });
    };
    let accepts = if red {
        matches!(sem, Sem::Relaxed | Sem::Release)
    } else {
        step.kind.accepts(sem)
    };
    if !sem.at_least(step.sem) || !accepts {
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
    if step.kind != StepKind::Fence {
        check_space(&mem, reading.space)?;
    }
    check_type(&mem, step, reading)?;
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

/// The state space an access names must hold the object: `.global` for a global object,
/// `.shared` (`.shared::cta`) for a `__shared__` one, or no space (generic addressing, valid
/// for both, PTX ISA §6.4.1.5); a pointer whose space the compiler cannot see allows only
/// generic addressing.
fn check_space(mem: &MemOp, object: ObjectSpace) -> Result<(), StepMismatch> {
    let ok = matches!(
        (object, mem.space),
        (_, None)
            | (ObjectSpace::Global, Some(Space::Global))
            | (ObjectSpace::Shared, Some(Space::Shared | Space::SharedCta))
    );
    if ok {
        Ok(())
    } else {
        Err(StepMismatch::Space {
            got: mem.space.map_or("generic", |s| s.name()),
            object: object.name(),
        })
    }
}

/// How an access's data type diverges from the case's C++ type (`ty` is the type suffix as
/// written, without the dot).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessTypeMismatch {
    #[error("no data type")]
    NoType,
    #[error(".{ty} is not a {bits}-bit access of {cxx}")]
    Width {
        ty: String,
        bits: u32,
        cxx: &'static str,
    },
    #[error(".{ty} {op} of {cxx} needs .{need}")]
    Kind {
        ty: String,
        op: &'static str,
        cxx: &'static str,
        need: String,
    },
}

/// The access must be as wide as the C++ type, and where the `atom` operation's result
/// depends on how the bits are read, read them as the type: min/max compare signed (`.s`) or
/// unsigned (`.u`), add is integer (`.u`/`.s`) or floating-point (`.f`), and/or/xor are
/// bitwise (`.b`, or `.u`/`.s`, PTX ISA atom). Not a clause of ch. 4, but a mapping that gets
/// these wrong computes a different C++ operation. Loads, stores, exchange and CAS move bits.
fn check_type(mem: &MemOp, step: &Step, reading: &Reading) -> Result<(), AccessTypeMismatch> {
    let Some(ty) = mem.ty.as_deref() else {
        return if step.kind == StepKind::Fence {
            Ok(())
        } else {
            Err(AccessTypeMismatch::NoType)
        };
    };
    let t = reading.ty;
    let bits = t.bits();
    if ty[1..] != bits.to_string() {
        return Err(AccessTypeMismatch::Width {
            ty: ty.to_string(),
            bits,
            cxx: t.cxx(),
        });
    }
    if step.kind != StepKind::Atom {
        return Ok(());
    }
    let class = ty.as_bytes()[0];
    let mismatch = |op: &'static str, need: String| {
        Err(AccessTypeMismatch::Kind {
            ty: ty.to_string(),
            op,
            cxx: t.cxx(),
            need,
        })
    };
    match mem.op {
        Some(AtomOp::Min | AtomOp::Max) => {
            let need = if t.is_signed() { b's' } else { b'u' };
            if class != need {
                return mismatch("min/max", format!("{}{bits}", need as char));
            }
            Ok(())
        }
        Some(AtomOp::Add) if t.is_float() != (class == b'f') => {
            let need = if t.is_float() {
                format!("f{bits}")
            } else {
                format!("u{bits}")
            };
            mismatch("add", need)
        }
        Some(AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch | AtomOp::Cas)
            if class == b'f' =>
        {
            mismatch("a bitwise operation", format!("b{bits}"))
        }
        _ => Ok(()),
    }
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
fn diagnose(
    case: &MappingCase,
    emitted: &[Instruction],
    rmw: Option<RmwOp>,
    reading: &Reading,
) -> String {
    let rows = table::rows(case.operation, case.order);
    let allowed = table::allowed(case.operation, case.order).unwrap_or_default();
    // Differs only in scope?
    for m in &allowed {
        if match_mapping(m, emitted, case.scope, rmw, true, reading).is_ok() {
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
            if match_mapping(&tail, emitted, case.scope, rmw, false, reading).is_ok() {
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
        if let Err(e) = match_mapping(m, emitted, case.scope, rmw, false, reading) {
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
}
