//! Extract an operation's instruction sequence from a producer's PTX function and check it
//! against the chapter's allowed mappings ([`super::table`]), comparing parsed parts with the
//! PTX ISA's defaults applied ([`MemOp::effective`]).

use crate::vocab::Vocabulary;
use std::fmt;

use crate::backend::producer::Language;
use crate::ptx::instr::{AtomOp, Instruction, MemOp, MemOpKind, Scope, Sem, Space};

pub use super::source::ResultUse;
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

/// Where each label of a PTX text is (1-based line), for finding loops: the instruction
/// reader drops labels, keeping each statement's line.
pub(crate) fn label_lines(ptx: &str) -> std::collections::HashMap<String, Vec<usize>> {
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
pub(crate) fn extract(body: &[Instruction]) -> Vec<Instruction> {
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
    pub(crate) fn emitted_text(&self) -> String {
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

/// The instructions of `body` that carry the mapping, what reading them left out or stood
/// in for (the notes), and the CAS loop found: the thread-private branch of an
/// `isspacep.local` dispatch and a CAS loop's seeding load are left out.
fn read_body(
    case: &MappingCase,
    body: &[Instruction],
    labels: &std::collections::HashMap<String, Vec<usize>>,
) -> (Vec<Instruction>, Vec<String>, Option<CasLoop>) {
    let mut structure = Vec::new();
    let program;
    let body = if super::source::language(case.producer) == Some(Language::Triton) {
        let (kept, notes) =
            super::source::triton::program_instructions(case, &case.function_name(), body);
        structure.extend(notes);
        program = kept;
        &program[..]
    } else {
        body
    };
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
    (kept, structure, cas_loop)
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
    let (kept, structure, cas_loop) = read_body(case, body, labels);
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
pub(crate) enum RowMismatch {
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
pub(crate) enum StepMismatch {
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
pub(crate) enum AccessTypeMismatch {
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
mod tests;
