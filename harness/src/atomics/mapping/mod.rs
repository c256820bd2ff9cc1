//! Mapping conformance (ptx-interop 13.2 ch. 4, Atomics ABI), no GPU needed: each producer
//! compiles every C++ atomic operation × memory order × scope, and the instruction sequence
//! it emits must be one the chapter allows ([`table`]), strengthening as its note permits.
//!
//! - [`table`]: the chapter's rows as data;
//! - [`source`]: cases, and the per-producer sources (many cases per compilation unit);
//! - [`extract`]: the sequence in a PTX function, and the check against the rows;
//! - here: compiling a batch once per producer and giving each case its [`MappingOutcome`].

pub mod extract;
pub mod source;
pub mod table;

use std::collections::HashMap;
use std::fmt;

use crate::backend::producer::{Language, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;
use crate::outcome::CaseStatus;
use crate::ptx::instr::{function_body, function_names, Scope};

pub use extract::{check_case, check_case_in, Matched, Mismatch, ResultUse};
pub use source::{all_cases, cases_for, MappingCase, ObjectSpace, Producer, ValueType};

/// What one mapping case came to: the mapping's own per-case outcome (what the producer emitted
/// against the chapter's table), which [`MappingOutcome::to_status`] turns into the runner's
/// [`CaseStatus`] and so into the one [`crate::outcome::Verdict`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum MappingOutcome {
    /// The emitted sequence is one the chapter allows.
    Conforms(Matched),
    /// The emitted sequence is not.
    Diverges(Mismatch),
    /// The producer failed on this case's source while compiling others (e.g. a backend that
    /// cannot select the operation); `log` is the producer's message.
    ProducerRejected { log: String },
    /// The producer's source language has no way to write the case (e.g. no cluster scope).
    Unsupported { reason: String },
    /// The producer could not compile anything (missing tool, broken install).
    ToolFailed { message: String },
}

impl MappingOutcome {
    pub(crate) fn is_conforming(&self) -> bool {
        matches!(self, MappingOutcome::Conforms(_))
    }

    /// The case status for the runner. A producer rejecting valid C++ is a failure of that
    /// producer; a source it cannot express skips naming the producer's capability.
    pub(crate) fn to_status(&self, case: &MappingCase) -> CaseStatus {
        let allowed = || {
            let rmw = match case.operation {
                table::Operation::Rmw(r) => Some(r),
                _ => None,
            };
            table::allowed(case.operation, case.order)
                .unwrap_or_default()
                .iter()
                .map(|m| m.render(case.scope, rmw))
                .collect::<Vec<_>>()
                .join(" | ")
        };
        match self {
            MappingOutcome::Conforms(m) => CaseStatus::pass_with(m.to_string()),
            // The row leads the expected text; the detail keeps the form waivers' findings
            // match (`<table clause>; <diagnosis>`).
            MappingOutcome::Diverges(m) => CaseStatus::fail_detail(
                format!("row {}: {}", m.row, m.allowed.join(" | ")),
                m.emitted_text(),
                format!("{}; {}", case.clause(), m.diagnosis),
            ),
            MappingOutcome::ProducerRejected { log } => CaseStatus::fail_detail(
                allowed(),
                format!(
                    "{} produced no PTX for this operation",
                    source::describe(case.producer)
                ),
                first_error_lines(log),
            ),
            MappingOutcome::Unsupported { reason } => CaseStatus::skip(
                Capability::ProducerFeature,
                format!("{}: {reason}", source::describe(case.producer)),
            ),
            MappingOutcome::ToolFailed { message } => CaseStatus::error(message),
        }
    }
}

impl fmt::Display for MappingOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MappingOutcome::Conforms(m) => write!(f, "conforms: {m}"),
            MappingOutcome::Diverges(m) => write!(f, "diverges: {m}"),
            MappingOutcome::ProducerRejected { log } => {
                write!(f, "producer rejected the case: {}", first_error_lines(log))
            }
            MappingOutcome::Unsupported { reason } => write!(f, "unsupported: {reason}"),
            MappingOutcome::ToolFailed { message } => write!(f, "tool failed: {message}"),
        }
    }
}

/// The lines of a compiler log that say what went wrong (clang's backend errors, llc's
/// `LLVM ERROR:`, NVRTC's `error:` lines), at most three. An LLVM crash report's stack dump (from `Stack dump:` on)
/// is not read: its frames (`llvm::report_fatal_error`) say where the tool was, not what.
pub(crate) fn first_error_lines(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .take_while(|l| !l.starts_with("Stack dump:"))
        .filter(|l| l.to_ascii_lowercase().contains("error"))
        .filter(|l| !l.trim_start().starts_with('#'))
        .take(3)
        .map(str::trim)
        .collect();
    if lines.is_empty() {
        log.lines().take(3).collect::<Vec<_>>().join(" / ")
    } else {
        lines.join(" / ")
    }
}

/// Compile and check `cases` (all of `producer`) with the toolchain: one compilation for the
/// batch, more only to isolate cases the producer fails on.
pub(crate) fn run_batch(
    tc: &Toolchain,
    producer: Producer,
    cases: &[MappingCase],
) -> Vec<(String, MappingOutcome)> {
    let compile = |text: &str| -> Result<String, CompileError> {
        let Some(language) = source::language(producer) else {
            return Err(CompileError::Unavailable(
                crate::backend::producer::in_view(producer, "atomics", &source::producers())
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default(),
            ));
        };
        let src = Source::new(language, text)
            .file_name("gpucts_mapping.cu")
            .options(source::OPTIONS);
        // Through the toolchain's disk cache of tool runs: a warm run compiles nothing.
        let (r, _) = producer.compile_cached(tc, &src, |compile| compile());
        r.map_err(|e| match e {
            ToolError::Failed { log, .. } => CompileError::Rejected(log),
            other => CompileError::Unavailable(other.to_string()),
        })
    };
    run_batch_with(producer, cases, &compile)
}

/// Why a producer compiles nothing at all: even the simplest case (a relaxed RMW at device
/// scope) is rejected (`log`: the first error lines), or the compiler cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProducerBroken {
    #[error("{producer} cannot compile even `{case}`: {log}")]
    Rejects {
        producer: String,
        case: String,
        log: String,
    },
    #[error("{0}")]
    Unavailable(String),
}

/// Why a compilation produced no PTX.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CompileError {
    /// The compiler ran and rejected the source; its log.
    Rejected(String),
    /// The compiler could not be run.
    Unavailable(String),
}

/// [`run_batch`] over any compile function (source -> PTX), so it can be driven by a fake.
pub(crate) fn run_batch_with(
    producer: Producer,
    cases: &[MappingCase],
    compile: Compile<'_>,
) -> Vec<(String, MappingOutcome)> {
    let Some(language) = source::language(producer) else {
        let message = format!("producer `{producer}` is not one atomics compiles with");
        return cases
            .iter()
            .map(|c| {
                let message = message.clone();
                (c.id(), MappingOutcome::ToolFailed { message })
            })
            .collect();
    };
    let gen = |cases: &[MappingCase]| source::source(language, cases);
    let mut outcomes: HashMap<MappingCase, MappingOutcome> = HashMap::new();
    let mut to_compile: Vec<MappingCase> = Vec::new();

    // Whether the producer compiles anything at all: a relaxed RMW at device scope is the
    // simplest case every producer handles. Asked only after a failure, at most once.
    let sanity = MappingCase::base(
        producer,
        table::Operation::Rmw(table::RmwOp::FetchAdd),
        table::Order::Relaxed,
        Scope::Gpu,
    );
    let sanity_result: std::cell::OnceCell<Result<(), ProducerBroken>> = std::cell::OnceCell::new();
    let producer_works = || {
        sanity_result
            .get_or_init(|| match compile(&gen(&[sanity])) {
                Ok(_) => Ok(()),
                Err(CompileError::Rejected(log)) => Err(ProducerBroken::Rejects {
                    producer: source::describe(producer),
                    case: sanity.id(),
                    log: first_error_lines(&log),
                }),
                Err(CompileError::Unavailable(m)) => Err(ProducerBroken::Unavailable(m)),
            })
            .clone()
    };

    // libcu++ has no preprocessor test for cluster scope: probe it once.
    let cluster_missing = language == Language::CudaCpp
        && cases.iter().any(|c| c.scope == Scope::Cluster)
        && compile(&source::nvrtc_cluster_probe()).is_err();
    if cluster_missing {
        if let Err(message) = producer_works() {
            return cases
                .iter()
                .map(|c| {
                    (
                        c.id(),
                        MappingOutcome::ToolFailed {
                            message: message.to_string(),
                        },
                    )
                })
                .collect();
        }
    }
    for c in cases {
        if cluster_missing && c.scope == Scope::Cluster {
            outcomes.insert(
                *c,
                MappingOutcome::Unsupported {
                    reason: source::unsupported_reason(c)
                        .unwrap_or_else(|| "this producer has no cluster scope".into()),
                },
            );
        } else {
            to_compile.push(*c);
        }
    }

    let mut compiled: Vec<Compiled> = Vec::new();
    if !to_compile.is_empty() {
        match compile(&gen(&to_compile)) {
            Ok(ptx) => compiled.push((to_compile.clone(), Ok(ptx))),
            Err(CompileError::Unavailable(m)) => {
                for c in &to_compile {
                    outcomes.insert(*c, MappingOutcome::ToolFailed { message: m.clone() });
                }
            }
            // Split only if the producer compiles something at all.
            Err(CompileError::Rejected(_)) => match producer_works() {
                Ok(()) => isolate(&to_compile, &gen, compile, &mut compiled),
                Err(message) => {
                    for c in &to_compile {
                        outcomes.insert(
                            *c,
                            MappingOutcome::ToolFailed {
                                message: message.to_string(),
                            },
                        );
                    }
                }
            },
        }
    }

    judge(compiled, &mut outcomes);

    cases
        .iter()
        .map(|c| {
            let v = outcomes
                .remove(c)
                .unwrap_or_else(|| MappingOutcome::ToolFailed {
                    message: "case was not compiled (duplicate in the batch?)".into(),
                });
            (c.id(), v)
        })
        .collect()
}

/// Each compiled group's outcomes: the producer's rejection, a tool that did not run, or each
/// case's function checked against the chapter's rows.
fn judge(compiled: Vec<Compiled>, outcomes: &mut HashMap<MappingCase, MappingOutcome>) {
    for (group, result) in compiled {
        match result {
            Err(CompileError::Rejected(log)) => {
                for c in group {
                    outcomes.insert(c, MappingOutcome::ProducerRejected { log: log.clone() });
                }
            }
            // The compiler did not run to a verdict on this input (a timeout, an I/O error, an
            // input a prebuilt store lacks): an error, never the producer's rejection, which a
            // waiver may excuse.
            Err(CompileError::Unavailable(message)) => {
                for c in group {
                    outcomes.insert(
                        c,
                        MappingOutcome::ToolFailed {
                            message: message.clone(),
                        },
                    );
                }
            }
            Ok(ptx) => {
                let names = function_names(&ptx);
                let labels = extract::label_lines(&ptx);
                for c in group {
                    let v = outcome_in(&c, &ptx, &names, &labels);
                    outcomes.insert(c, v);
                }
            }
        }
    }
}

/// What the producer's PTX (`names`: its functions, `labels`: [`extract::label_lines`]) says
/// of case `c`. A function the source could not write is a gap of the language (a skip);
/// one the source wrote and the PTX lacks was dropped by the producer: a failure.
fn outcome_in(
    c: &MappingCase,
    ptx: &str,
    names: &[String],
    labels: &HashMap<String, Vec<usize>>,
) -> MappingOutcome {
    let f = c.function_name();
    if !names.contains(&f) {
        return match source::unsupported_reason(c) {
            Some(reason) => MappingOutcome::Unsupported { reason },
            None => MappingOutcome::ProducerRejected {
                log: format!(
                    "error: the producer's PTX has no function `{f}`, which the source defines"
                ),
            },
        };
    }
    match function_body(ptx, &f) {
        Ok(body) => match check_case_in(c, &body, labels, c.result) {
            Ok(m) => MappingOutcome::Conforms(m),
            Err(m) => MappingOutcome::Diverges(m),
        },
        Err(e) => MappingOutcome::ToolFailed {
            message: format!("cannot read the PTX of `{f}`: {e}"),
        },
    }
}

/// A compile function (source -> PTX) that isolation may call from several threads.
type Compile<'a> = &'a (dyn Fn(&str) -> Result<String, CompileError> + Sync);
/// The source of a list of cases.
type Gen<'a> = &'a (dyn Fn(&[MappingCase]) -> String + Sync);
/// Cases compiled together and what the producer answered.
type Compiled = (Vec<MappingCase>, Result<String, CompileError>);

/// Find the cases a producer rejects in a batch it rejected: compile the batch's
/// operation × order groups apart (a back end that cannot select an operation at an order
/// usually cannot at any type, space or scope, so the rejections gather in a few groups),
/// then narrow each rejected group down ([`narrow`]). Groups compile in parallel: each is a
/// small compilation whose cost is mostly the tool's start.
fn isolate(cases: &[MappingCase], gen: Gen<'_>, compile: Compile<'_>, out: &mut Vec<Compiled>) {
    let mut groups: Vec<Vec<MappingCase>> = Vec::new();
    for c in cases {
        match groups
            .iter_mut()
            .find(|g| g[0].operation == c.operation && g[0].order == c.order)
        {
            Some(g) => g.push(*c),
            None => groups.push(vec![*c]),
        }
    }
    let answered = parallel_map(groups, |g| {
        let r = compile(&gen(&g));
        (g, r)
    });
    let mut rejected = Vec::new();
    for (g, r) in answered {
        match r {
            Err(CompileError::Rejected(log)) if g.len() > 1 => rejected.push((g, log)),
            r => out.push((g, r)),
        }
    }
    let narrowed = parallel_map(rejected, |(g, log)| {
        let mut o = Vec::new();
        narrow(g, log, gen, compile, &mut o);
        o
    });
    out.extend(narrowed.into_iter().flatten());
}

/// Narrow down a group the producer rejected with `log`. An LLVM back end that gives up
/// names the function it was compiling ([`culprit_named`]): that case is rejected with that
/// log, and the rest compiled again, until it compiles, so `k` rejected cases cost `k`
/// compilations. A log that names no case of the group (NVRTC's errors) has each case
/// compiled alone when the group is small, else the group halved ([`bisect`]).
fn narrow(
    mut cases: Vec<MappingCase>,
    log: String,
    gen: Gen<'_>,
    compile: Compile<'_>,
    out: &mut Vec<Compiled>,
) {
    /// Above this a group whose log names nothing is halved rather than compiled case by case.
    const ONE_BY_ONE: usize = 96;
    let mut answer = Err(CompileError::Rejected(log));
    loop {
        let log = match answer {
            Err(CompileError::Rejected(log)) => log,
            other => return out.push((cases, other)),
        };
        match named_in(&log, &cases) {
            Some(i) => {
                let c = cases.remove(i);
                out.push((vec![c], Err(CompileError::Rejected(log))));
            }
            None if cases.len() == 1 => return out.push((cases, Err(CompileError::Rejected(log)))),
            None if cases.len() <= ONE_BY_ONE => {
                for c in cases {
                    out.push((vec![c], compile(&gen(&[c]))));
                }
                return;
            }
            None => return bisect(&cases, gen, compile, out),
        }
        if cases.is_empty() {
            return;
        }
        answer = compile(&gen(&cases));
    }
}

/// `f` over `items` on up to as many threads as the machine has cores, in order.
fn parallel_map<T: Send, R: Send>(items: Vec<T>, f: impl Fn(T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if workers <= 1 {
        return items.into_iter().map(f).collect();
    }
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                let Some((i, item)) = next else { break };
                let r = f(item);
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, r));
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// The position in `cases` of the function `log` names as the one the back end gave up on.
fn named_in(log: &str, cases: &[MappingCase]) -> Option<usize> {
    let f = culprit_named(log)?;
    cases.iter().position(|c| c.function_name() == f)
}

/// The function an LLVM back end was compiling when it gave up, as its report names it:
/// `In function: NAME` after a selection failure, or the pass stack's `on function '@NAME'`.
pub(crate) fn culprit_named(log: &str) -> Option<&str> {
    for line in log.lines() {
        if let Some(name) = line.trim().strip_prefix("In function: ") {
            return Some(name.trim());
        }
    }
    log.lines().rev().find_map(|line| {
        let (_, after) = line.split_once(" on function '@")?;
        after.split_once('\'').map(|(name, _)| name)
    })
}

/// Compile halves until each failing case stands alone: a producer that crashes on one
/// operation takes the whole compilation unit down with it.
fn bisect(cases: &[MappingCase], gen: Gen<'_>, compile: Compile<'_>, out: &mut Vec<Compiled>) {
    if cases.len() <= 1 {
        out.push((cases.to_vec(), compile(&gen(cases))));
        return;
    }
    let (a, b) = cases.split_at(cases.len() / 2);
    for half in [a, b] {
        match compile(&gen(half)) {
            Ok(ptx) => out.push((half.to_vec(), Ok(ptx))),
            // Only a rejection is narrowed down: a compiler that did not run says nothing
            // about which case it would have refused.
            Err(CompileError::Rejected(_)) if half.len() > 1 => bisect(half, gen, compile, out),
            Err(e) => out.push((half.to_vec(), Err(e))),
        }
    }
}

/// Verdicts computed once per producer and kept, so a runner asking case by case compiles each
/// producer's batch only once.
#[derive(Debug, Default)]
pub(crate) struct MappingCache {
    done: crate::area::BatchCache<Producer, HashMap<String, MappingOutcome>>,
}

impl MappingCache {
    pub fn new() -> MappingCache {
        MappingCache::default()
    }

    /// The outcome of `case`, compiling its producer's whole batch on first use. Producers'
    /// batches compile in parallel; cases of one producer wait for its batch.
    pub fn outcome(&self, ctx: &crate::area::CaseContext, case: &MappingCase) -> MappingOutcome {
        // Only the run's selected cases of the producer (a filtered run compiles what it
        // runs); every case is a member when the run made no selection.
        let slot = self.done.get_or_compute(ctx, &case.producer, || {
            let members: Vec<MappingCase> = cases_for(case.producer)
                .into_iter()
                .filter(|c| c == case || ctx.batch_member(&c.id()))
                .collect();
            run_batch(ctx.toolchain, case.producer, &members)
                .into_iter()
                .collect()
        });
        slot.get()
            .and_then(|per| per.get(&case.id()).cloned())
            .unwrap_or_else(|| MappingOutcome::ToolFailed {
                message: format!("no verdict for {}", case.id()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::mapping::table::{Operation, Order, RmwOp};

    fn case(producer: Producer, op: Operation, order: Order, scope: Scope) -> MappingCase {
        MappingCase::base(producer, op, order, scope)
    }

    /// A fake producer: emits the chapter's recommended row for every function in the source,
    /// except that it "crashes" on any source containing a seq_cst load.
    fn fake_compile(src: &str) -> Result<String, CompileError> {
        if src.contains("gpucts_load_seq_cst") {
            return Err(CompileError::Rejected(
                "fatal error: error in backend: Cannot select: AtomicLoad".into(),
            ));
        }
        let mut ptx = String::from(".version 8.0\n.target sm_90\n.address_size 64\n");
        for c in cases_for(Producer::named("clang")) {
            let f = c.function_name();
            if !src.contains(&format!(" {f}(")) || c.scope == Scope::Cluster {
                continue;
            }
            let rmw = match c.operation {
                Operation::Rmw(r) => Some(r),
                _ => None,
            };
            let row = &table::rows(c.operation, c.order)[0];
            let mut body = String::new();
            for s in &row.steps {
                let mut text = match s.kind {
                    table::StepKind::Fence => format!("fence.{}.{}", s.sem.name(), c.scope.name()),
                    table::StepKind::Ld => {
                        format!("ld.{}.{}.b32 %r1, [%rd1]", s.sem.name(), c.scope.name())
                    }
                    table::StepKind::St => {
                        format!("st.{}.{}.b32 [%rd1], %r1", s.sem.name(), c.scope.name())
                    }
                    table::StepKind::Atom => format!(
                        "atom.{}.{}.{}.s32 %r1, [%rd1], %r2",
                        s.sem.name(),
                        c.scope.name(),
                        rmw.unwrap().ptx_op().name()
                    ),
                };
                text.push_str(";\n");
                body.push_str(&text);
            }
            ptx.push_str(&format!(
                ".visible .func {f}(\n.param .b64 {f}_param_0\n)\n{{\nld.param.u64 %rd1, [{f}_param_0];\n{body}ret;\n}}\n"
            ));
        }
        Ok(ptx)
    }

    /// A case the source writes whose function the producer's PTX lacks was dropped by the
    /// producer: a failure naming the function, never a skip; a case the source language
    /// cannot write (clang's scoped fence) stays a skip naming the gap.
    #[test]
    fn a_function_missing_from_the_ptx_fails_unless_the_source_could_not_write_it() {
        let p = Producer::named("clang");
        let add = case(
            p,
            Operation::Rmw(RmwOp::FetchAdd),
            Order::Relaxed,
            Scope::Gpu,
        );
        let fence = case(p, Operation::Fence, Order::SeqCst, Scope::Gpu);
        let dropped = add.function_name();
        // The PTX of neither function: the real clang writes no scoped fence at all.
        let compile = |s: &str| {
            fake_compile(s).map(|mut ptx| {
                for f in [add.function_name(), fence.function_name()] {
                    let start = ptx
                        .find(&format!(".visible .func {f}("))
                        .expect("the fake compiler emits every function");
                    let end = start + ptx[start..].find("}\n").unwrap() + 2;
                    ptx.replace_range(start..end, "");
                }
                ptx
            })
        };
        let out: HashMap<String, MappingOutcome> = run_batch_with(p, &[add, fence], &compile)
            .into_iter()
            .collect();
        match &out[&add.id()] {
            MappingOutcome::ProducerRejected { log } => {
                assert!(log.contains(&format!("no function `{dropped}`")), "{log}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            out[&add.id()].to_status(&add),
            CaseStatus::Fail { .. }
        ));
        assert!(
            matches!(&out[&fence.id()], MappingOutcome::Unsupported { .. }),
            "{:?}",
            out[&fence.id()]
        );
    }

    #[test]
    fn batch_isolates_crashing_cases_and_checks_the_rest() {
        let cases: Vec<MappingCase> = cases_for(Producer::named("clang"))
            .into_iter()
            .filter(|c| c.is_base() && c.result == ResultUse::Used)
            .collect();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let compile = |s: &str| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            fake_compile(s)
        };
        let out = run_batch_with(Producer::named("clang"), &cases, &compile);
        assert_eq!(out.len(), cases.len());
        let by_id: HashMap<String, MappingOutcome> = out.into_iter().collect();
        let ld = case(
            Producer::named("clang"),
            Operation::Load,
            Order::SeqCst,
            Scope::Gpu,
        );
        assert!(matches!(
            by_id[&ld.id()],
            MappingOutcome::ProducerRejected { .. }
        ));
        let add = case(
            Producer::named("clang"),
            Operation::Rmw(RmwOp::FetchAdd),
            Order::AcqRel,
            Scope::Cta,
        );
        assert!(by_id[&add.id()].is_conforming(), "{}", by_id[&add.id()]);
        let cl = case(
            Producer::named("clang"),
            Operation::Store,
            Order::Relaxed,
            Scope::Cluster,
        );
        assert!(matches!(
            by_id[&cl.id()],
            MappingOutcome::Unsupported { .. }
        ));
        // The batch, the sanity case, the 55 operation x order groups (4 fences, 3 loads,
        // 3 stores, 9 x 5 RMWs) and the 4 cases of the rejected group one by one.
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::Relaxed),
            1 + 1 + 55 + 4,
            "{} compilations",
            calls.load(std::sync::atomic::Ordering::Relaxed)
        );
        let conforming = by_id.values().filter(|v| v.is_conforming()).count();
        // 220 cases, 55 at cluster scope (unsupported), 3 crashing.
        assert_eq!(conforming, 220 - 55 - 3);
    }

    /// A back end that names the function it gave up on, as LLVM's does, has each named
    /// function rejected with its own log and every other case judged; its group is
    /// compiled once more per rejected member, not once per member.
    #[test]
    fn a_named_culprit_is_set_apart_with_its_group() {
        let clang = Producer::named("clang");
        // Without the seq_cst loads, on which `fake_compile` fails naming nothing.
        let cases: Vec<MappingCase> = cases_for(clang)
            .into_iter()
            .filter(|c| c.is_base() && c.result == ResultUse::Used)
            .filter(|c| !(c.operation == Operation::Load && c.order == Order::SeqCst))
            .collect();
        assert_eq!(cases.len(), 216);
        // LLVM 19 cannot select an acquire load at cta or sys scope (a made-up pair, so
        // that the group also holds cases that compile).
        let bad = [Scope::Cta, Scope::Sys].map(|s| case(clang, Operation::Load, Order::Acquire, s));
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let compile = |s: &str| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            match bad.iter().find(|c| s.contains(&format!(" {}(", c.function_name()))) {
                Some(c) => Err(CompileError::Rejected(format!(
                    "LLVM ERROR: Cannot select: AtomicLoad\nIn function: {f}\nStack dump:\n\
                     2.\tRunning pass 'NVPTX DAG->DAG Pattern Instruction Selection' on function '@{f}'\n",
                    f = c.function_name()
                ))),
                None => fake_compile(s),
            }
        };
        let out = run_batch_with(clang, &cases, &compile);
        let by_id: HashMap<String, MappingOutcome> = out.into_iter().collect();
        for c in &bad {
            match &by_id[&c.id()] {
                MappingOutcome::ProducerRejected { log } => {
                    assert!(log.contains(&c.function_name()), "{log}")
                }
                other => panic!("{}: {other}", c.id()),
            }
        }
        let gpu = case(clang, Operation::Load, Order::Acquire, Scope::Gpu);
        assert!(by_id[&gpu.id()].is_conforming(), "{}", by_id[&gpu.id()]);
        // The batch; the sanity case; the 54 operation x order groups (4 fences, 2 loads, 3
        // stores, 9 x 5 RMWs); the load-acquire group without its first culprit, without its
        // second. Case by case, the group would have cost 4.
        let n = calls.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(n, 1 + 1 + 54 + 2, "{n} compilations");
        let conforming = by_id.values().filter(|v| v.is_conforming()).count();
        // 216 cases, 54 at cluster scope (unsupported), 2 rejected.
        assert_eq!(conforming, 216 - 54 - 2);
    }

    /// A crash report's stack frames are never the diagnosis, symbolized (`#7 0x...`) or not
    /// (`7  libLLVM.so.19.1 0x... llvm::report_fatal_error`, under
    /// `LLVM_DISABLE_SYMBOLIZATION`).
    #[test]
    fn the_diagnosis_is_the_error_above_the_stack_dump() {
        let log = "LLVM ERROR: Cannot select: 0x5: ch = AtomicFence 0x1\nIn function: f\n\
                   Stack dump:\n0.\tProgram arguments: llc-19 in.ll\n\
                   7  libLLVM.so.19.1 0x00007f9d9e00bc24 llvm::report_fatal_error(llvm::Twine const&, bool) + 436\n";
        assert_eq!(
            first_error_lines(log),
            "LLVM ERROR: Cannot select: 0x5: ch = AtomicFence 0x1"
        );
    }

    /// LLVM's two ways of naming the function it gave up on; NVRTC's error names none.
    #[test]
    fn the_culprit_is_read_from_either_llvm_line() {
        assert_eq!(culprit_named("x\nIn function: f_1\ny"), Some("f_1"));
        assert_eq!(
            culprit_named("1.\tRunning pass 'NVPTX DAG->DAG Pattern Instruction Selection' on function '@g'\n"),
            Some("g")
        );
        assert_eq!(
            culprit_named("1.\tRunning pass 'Function Pass Manager' on module 't.ll'."),
            None
        );
        assert_eq!(
            culprit_named("gpucts_mapping.cu(12): error: identifier \"x\" is undefined"),
            None
        );
    }

    /// A compiler that did not run on a sub-batch (a timeout, an input a prebuilt store lacks)
    /// makes its cases errors: never a producer rejection, which a waiver may excuse, and no
    /// narrowing down.
    #[test]
    fn a_compiler_that_did_not_run_is_an_error_not_a_rejection() {
        let cases: Vec<MappingCase> = cases_for(Producer::named("clang"))
            .into_iter()
            .filter(MappingCase::is_base)
            .collect();
        let calls = std::sync::atomic::AtomicUsize::new(0);
        // The whole batch is rejected (a crashing case inside), one half then does not run.
        let compile = |s: &str| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if calls.load(std::sync::atomic::Ordering::Relaxed) == 2 {
                return Err(CompileError::Unavailable(
                    "clang-19: no prebuilt output".into(),
                ));
            }
            fake_compile(s)
        };
        let out = run_batch_with(Producer::named("clang"), &cases, &compile);
        let unavailable: Vec<&MappingOutcome> = out
            .iter()
            .map(|(_, v)| v)
            .filter(|v| matches!(v, MappingOutcome::ToolFailed { message } if message.contains("no prebuilt output")))
            .collect();
        assert!(!unavailable.is_empty(), "{out:?}");
        assert!(
            !out.iter().any(|(_, v)| matches!(v, MappingOutcome::ProducerRejected { log } if log.contains("no prebuilt output"))),
            "an unavailable compiler reported as a rejection"
        );
    }

    #[test]
    fn an_unusable_producer_fails_every_case_without_bisecting() {
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let compile = |_: &str| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Err(CompileError::Rejected(
                "error: cannot open cuda/atomic".into(),
            ))
        };
        let cases = cases_for(Producer::named("nvrtc"));
        let out = run_batch_with(Producer::named("nvrtc"), &cases, &compile);
        assert!(calls.load(std::sync::atomic::Ordering::Relaxed) <= 3);
        assert!(out
            .iter()
            .all(|(_, v)| matches!(v, MappingOutcome::ToolFailed { .. })));
    }

    #[test]
    fn statuses_name_the_evidence() {
        let c = case(
            Producer::named("clang"),
            Operation::Load,
            Order::SeqCst,
            Scope::Gpu,
        );
        let s = MappingOutcome::ProducerRejected {
            log: "x\nfatal error: error in backend: Cannot select: AtomicLoad\n".into(),
        }
        .to_status(&c);
        match s {
            CaseStatus::Fail {
                expected, detail, ..
            } => {
                assert!(expected.contains("fence.sc.gpu; ld.acquire.gpu;"));
                assert!(detail.contains("Cannot select"));
            }
            other => panic!("{other:?}"),
        }
        let s = MappingOutcome::Unsupported {
            reason: "no cluster".into(),
        }
        .to_status(&c);
        assert!(matches!(
            s,
            CaseStatus::Skip {
                capability: Capability::ProducerFeature,
                ..
            }
        ));
    }

    fn few_cases(producer: Producer) -> Vec<MappingCase> {
        vec![
            case(
                producer,
                Operation::Rmw(RmwOp::FetchAdd),
                Order::Relaxed,
                Scope::Gpu,
            ),
            case(
                producer,
                Operation::Rmw(RmwOp::FetchMin),
                Order::SeqCst,
                Scope::Sys,
            ),
            case(
                producer,
                Operation::Rmw(RmwOp::CompareExchange),
                Order::AcqRel,
                Scope::Cta,
            ),
            case(producer, Operation::Load, Order::Acquire, Scope::Gpu),
            case(producer, Operation::Fence, Order::Acquire, Scope::Cta),
            MappingCase {
                space: ObjectSpace::Shared,
                ty: ValueType::U64,
                ..case(
                    producer,
                    Operation::Rmw(RmwOp::FetchMin),
                    Order::Relaxed,
                    Scope::Gpu,
                )
            },
            MappingCase {
                space: ObjectSpace::Generic,
                ty: ValueType::F32,
                ..case(
                    producer,
                    Operation::Rmw(RmwOp::FetchSub),
                    Order::Relaxed,
                    Scope::Gpu,
                )
            },
            MappingCase {
                space: ObjectSpace::Generic,
                ty: ValueType::F64,
                ..case(producer, Operation::Load, Order::Relaxed, Scope::Sys)
            },
        ]
    }

    /// A case's outcome against its one right answer: it conforms unless `waiver` (the waiver
    /// file's entry for it on this machine) lists it, and then it diverges or is rejected.
    fn assert_one_right_answer(c: &MappingCase, v: &MappingOutcome, waiver: Option<&str>) {
        let id = c.id();
        match v {
            MappingOutcome::Conforms(m) => {
                assert_eq!(waiver, None, "{id} conforms: the waiver is stale");
                assert!(!m.emitted.is_empty(), "{id}");
                if let Operation::Rmw(r) = c.operation {
                    let atoms: Vec<&String> = m
                        .emitted
                        .iter()
                        .filter(|e| e.starts_with("atom."))
                        .collect();
                    assert_eq!(atoms.len(), 1, "{id}: {m}");
                    // The row's operation, or an atom.cas retried in a loop (an operation
                    // PTX lacks, e.g. floating-point subtraction).
                    let cas_loop = m.notes.iter().any(|n| n.contains("retried in a loop"));
                    assert!(
                        atoms[0].contains(&format!(".{}.", r.ptx_op().name()))
                            || (cas_loop && atoms[0].contains(".cas.")),
                        "{id}: {m}"
                    );
                }
            }
            MappingOutcome::Diverges(m) => {
                assert!(waiver.is_some(), "{id}: a divergence no waiver lists: {m}");
                assert!(!m.allowed.is_empty() && !m.diagnosis.is_empty(), "{id}")
            }
            MappingOutcome::ProducerRejected { log } => {
                assert!(
                    waiver.is_some(),
                    "{id}: rejected, no waiver lists it: {log}"
                );
                assert!(!log.is_empty(), "{id}")
            }
            // A gap of the producer's source language, not a divergence: cluster scope (NVRTC
            // 12.9's libcu++ and clang-19's builtins have none) and clang's scoped fences.
            MappingOutcome::Unsupported { reason } => assert!(
                c.scope == Scope::Cluster
                    || (source::language(c.producer) == Some(Language::ClangCuda)
                        && c.operation == Operation::Fence),
                "{id}: unsupported ({reason})"
            ),
            MappingOutcome::ToolFailed { message } => panic!("{id}: {message}"),
        }
    }

    /// End to end through the real producers, each case against its one right answer: it
    /// conforms unless the waiver file (the single record of known producer divergences) lists
    /// it for this machine's producer versions, in which case it must diverge or be rejected,
    /// with evidence. A compiled RMW shows exactly one `atom` of the right operation.
    #[test]
    fn end_to_end_through_nvrtc_and_clang() {
        let tc = Toolchain::discover_system();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let waivers =
            crate::waivers::Waivers::load(&root.join(crate::waivers::DEFAULT_FILE)).unwrap();
        let fingerprint = crate::probe::probe(&tc).0.fingerprint();
        for (producer, caps) in [
            (
                Producer::named("nvrtc"),
                &[Capability::Nvrtc, Capability::Cccl][..],
            ),
            (Producer::named("clang"), &[Capability::Clang][..]),
            (Producer::named("llvm"), &[Capability::Clang][..]),
        ] {
            if let Some(missing) = caps.iter().find(|c| !tc.has(**c)) {
                crate::testkit::tool_missing(crate::testkit::Need::Tool, missing.name());
                continue;
            }
            let cases = few_cases(producer);
            let out = run_batch(&tc, producer, &cases);
            assert_eq!(out.len(), cases.len());
            for ((id, v), c) in out.iter().zip(&cases) {
                eprintln!("{id}: {v}");
                assert_eq!(id, &c.id());
                let waiver = waivers
                    .find(id, caps, &fingerprint)
                    .map(|w| w.waiver().id.as_str());
                assert_one_right_answer(c, v, waiver);
            }
        }
    }

    /// The full run, printed: `cargo test -p gpucts --lib mapping::tests::full_batch_report --
    /// --ignored --nocapture`.
    #[test]
    #[ignore = "compiles every case with every producer; run on demand"]
    fn full_batch_report() {
        let tc = Toolchain::discover_system();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let waivers =
            crate::waivers::Waivers::load(&root.join(crate::waivers::DEFAULT_FILE)).unwrap();
        let fingerprint = crate::probe::probe(&tc).0.fingerprint();
        for producer in source::producers() {
            let cases = cases_for(producer);
            let t = std::time::Instant::now();
            let out = run_batch(&tc, producer, &cases);
            let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
            for (id, v) in &out {
                let k = match v {
                    MappingOutcome::Conforms(_) => "conforms",
                    MappingOutcome::Diverges(_) => "diverges",
                    MappingOutcome::ProducerRejected { .. } => "producer_rejected",
                    MappingOutcome::Unsupported { .. } => "unsupported",
                    MappingOutcome::ToolFailed { .. } => "tool_failed",
                };
                *counts.entry(k).or_default() += 1;
                println!("{id}: {v}");
            }
            for ((id, v), c) in out.iter().zip(&cases) {
                assert_one_right_answer(
                    c,
                    v,
                    waivers
                        .find(id, Capability::ALL, &fingerprint)
                        .map(|w| w.waiver().id.as_str()),
                );
            }
            println!(
                "== {}: {} cases in {:.1}s: {counts:?}",
                producer.name(),
                out.len(),
                t.elapsed().as_secs_f64()
            );
        }
    }

    /// The PTX text of `case` compiled alone by `producer` through the batch's source.
    fn compile_one(tc: &Toolchain, case: &MappingCase) -> String {
        let language = source::language(case.producer).unwrap();
        let text = source::source(language, &[*case]);
        let src = Source::new(language, &text)
            .file_name("gpucts_mapping.cu")
            .options(source::OPTIONS);
        case.producer.compile(tc, &src).unwrap()
    }

    /// An RMW whose result is discarded, through libcu++ (`(void)a.fetch_add(v, order)`):
    /// the producer's `atom` with an unused destination or `red` (PTX ISA red: `atom` without
    /// destination) conforms when it carries the row's `.sem` and scope; the same instruction
    /// at another scope does not (ch. 4 never widens or narrows the scope), and a `red` does
    /// not stand for a call whose value is used.
    #[test]
    fn a_discarded_rmw_conforms_as_red_or_atom_and_a_wrong_scope_does_not() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Nvrtc), "NVRTC");
        crate::require!(tc.has(Capability::Cccl), "libcu++ (cccl)");
        let c = case(
            Producer::named("nvrtc"),
            Operation::Rmw(RmwOp::FetchAdd),
            Order::Relaxed,
            Scope::Cta,
        )
        .discarded();
        assert_eq!(c.id(), "atomics.mapping.nvrtc.red.fetch_add.relaxed.cta");
        let ptx = compile_one(&tc, &c);
        let check = |ptx: &str, result: ResultUse| {
            let body = function_body(ptx, &c.function_name()).unwrap();
            check_case_in(&c, &body, &extract::label_lines(ptx), result)
        };
        let m = check(&ptx, ResultUse::Discarded).unwrap();
        // One RMW instruction, `atom` or `red`, adding at relaxed cta (PTX ISA atom/red).
        let rmw: Vec<&String> = m
            .emitted
            .iter()
            .filter(|e| e.starts_with("atom.") || e.starts_with("red."))
            .collect();
        assert_eq!(rmw.len(), 1, "{m}");
        for part in [".add.", ".relaxed.", ".cta."] {
            assert!(rmw[0].contains(part), "{m}");
        }
        // The mutant: the same instruction at gpu scope.
        let line = ptx
            .lines()
            .find(|l| {
                let t = l.trim_start();
                t.starts_with("atom.") || t.starts_with("red.")
            })
            .unwrap();
        let wide = ptx.replace(line, &line.replace(".cta.", ".gpu."));
        let e = check(&wide, ResultUse::Discarded).unwrap_err();
        assert!(e.diagnosis.contains("except for scope"), "{e}");
        // The same RMW written as `red` (no destination): accepted with the value discarded,
        // refused where the program uses the value.
        let operands: Vec<&str> = line.trim().trim_end_matches(';').splitn(2, ' ').collect();
        let args: Vec<&str> = operands[1].split(',').map(str::trim).collect();
        let red_line = format!(
            "\tred.relaxed.cta.global.add.s32 \t{}, {};",
            args[1], args[2]
        );
        let red = ptx.replace(line, &red_line);
        let m = check(&red, ResultUse::Discarded).unwrap();
        assert!(m.notes.iter().any(|n| n.contains("PTX ISA red")), "{m}");
        let e = check(&red, ResultUse::Used).unwrap_err();
        assert!(
            e.diagnosis.contains("is red, which returns no value"),
            "{e}"
        );
        let red_wide = ptx.replace(line, &red_line.replace(".cta.", ".sys."));
        let e = check(&red_wide, ResultUse::Discarded).unwrap_err();
        assert!(e.diagnosis.contains("except for scope"), "{e}");
    }

    /// A discarded RMW on a `__shared__` object: the producer's instruction reaches it through
    /// `.shared` or a generic address (PTX ISA atom/red: no space is generic); `red` in the
    /// shared window conforms, `red` in the global window names memory the object is not in.
    #[test]
    fn a_discarded_rmw_on_a_shared_object_conforms_as_red_shared_not_red_global() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Nvrtc), "NVRTC");
        crate::require!(tc.has(Capability::Cccl), "libcu++ (cccl)");
        let c = MappingCase {
            space: ObjectSpace::Shared,
            ty: ValueType::U32,
            ..case(
                Producer::named("nvrtc"),
                Operation::Rmw(RmwOp::FetchAdd),
                Order::Relaxed,
                Scope::Gpu,
            )
        }
        .discarded();
        assert_eq!(
            c.id(),
            "atomics.mapping.nvrtc.red.fetch_add.relaxed.gpu.shared.u32"
        );
        let ptx = compile_one(&tc, &c);
        let check = |ptx: &str| {
            let body = function_body(ptx, &c.function_name()).unwrap();
            check_case_in(&c, &body, &extract::label_lines(ptx), ResultUse::Discarded)
        };
        check(&ptx).unwrap();
        let line = ptx
            .lines()
            .find(|l| {
                let t = l.trim_start();
                t.starts_with("atom.") || t.starts_with("red.")
            })
            .unwrap();
        let operands: Vec<&str> = line.trim().trim_end_matches(';').splitn(2, ' ').collect();
        let args: Vec<&str> = operands[1].split(',').map(str::trim).collect();
        let (addr, value) = (args[args.len() - 2], args[args.len() - 1]);
        let red = |space: &str| {
            ptx.replace(
                line,
                &format!("\tred.relaxed.gpu{space}.add.u32 \t{addr}, {value};"),
            )
        };
        let m = check(&red(".shared")).unwrap();
        assert!(m.notes.iter().any(|n| n.contains("PTX ISA red")), "{m}");
        check(&red("")).unwrap();
        let e = check(&red(".global")).unwrap_err();
        assert!(e.diagnosis.contains("global"), "{e}");
    }

    #[test]
    fn cache_compiles_a_producer_once() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Nvrtc), "NVRTC");
        crate::require!(tc.has(Capability::Cccl), "libcu++ (cccl)");
        let cache = MappingCache::new();
        let (config, scope, caps) = Default::default();
        let ctx = crate::area::CaseContext::new(&config, &scope, "t", &caps, &tc, ".".as_ref());
        let a = case(
            Producer::named("nvrtc"),
            Operation::Load,
            Order::Acquire,
            Scope::Cta,
        );
        let b = case(
            Producer::named("nvrtc"),
            Operation::Store,
            Order::Release,
            Scope::Sys,
        );
        let va = cache.outcome(&ctx, &a);
        assert!(!matches!(va, MappingOutcome::ToolFailed { .. }), "{va}");
        let batch = cache
            .done
            .get_or_compute(&ctx, &Producer::named("nvrtc"), || {
                panic!("the batch is cached")
            });
        assert_eq!(
            batch.get().map(|m| m.len()),
            Some(cases_for(Producer::named("nvrtc")).len())
        );
        let vb = cache.outcome(&ctx, &b);
        assert!(!matches!(vb, MappingOutcome::ToolFailed { .. }), "{vb}");
        assert_eq!(cache.outcome(&ctx, &a), va);
        assert_eq!(cache.done.len(&scope), 1);
    }
}
