//! Byte coverage, offline: every byte of a value that crosses a call must be moved through the
//! `.param` space. ptx-interop 13.2 §2.3 passes an aggregate as `.param .align A .b8
//! name[size]`, every byte of every member (a union's too), so each of the four moves of a
//! call must cover every byte the source type defines: the caller's `st.param`s of each
//! argument, the callee's `ld.param`s of each parameter, the callee's `st.param`s of its
//! return value and the caller's `ld.param`s of it. Which bytes a type defines is the
//! significance mask the GPU judge compares with ([`Val::mask`]), computed from the layout
//! engine, never from a producer's output.
//!
//! A byte no instruction moves is a byte the other side receives as whatever the register
//! or stack held: on a GPU it shows as a stale value (W-XCALL-CLANG-UNION-BYTES was caught so
//! on an H100); here it shows in the text. A `.param` whose address a body takes (`mov` or
//! `cvta` of its name) may be moved through generic addresses, which this scan cannot see:
//! that side of the signature is counted as not judged, never as a pass.

use std::fmt;

use super::check::{ParamAccess, PtxFile};
use super::gpu::field_name;
use super::sig::{Role, Signature, Val};
use crate::area::CaseContext;
use crate::backend::producer::Producer;
use crate::outcome::CaseStatus;

/// Which of a call's four moves a gap is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    /// The caller's `st.param` of an argument.
    CallerStores,
    /// The callee's `ld.param` of its parameter.
    CalleeLoads,
    /// The callee's `st.param` of its return value.
    CalleeReturns,
    /// The caller's `ld.param` of the returned value.
    CallerReceives,
}

impl Move {
    fn says(self) -> &'static str {
        match self {
            Move::CallerStores => "the caller's call site stores nothing there",
            Move::CalleeLoads => "the callee loads nothing from there",
            Move::CalleeReturns => "the callee stores nothing there",
            Move::CallerReceives => "the caller loads nothing from there",
        }
    }
}

/// A significant byte no `ld.param`/`st.param` of one move covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub mv: Move,
    /// The parameter, counted from 1; `None` for the return value.
    pub param: Option<usize>,
    /// The value's description ([`Val::describe`]).
    pub value: String,
    pub byte: u64,
    pub field: String,
    pub mask: u8,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.param {
            Some(i) => write!(f, "parameter {i} ({})", self.value)?,
            None => write!(f, "return value ({})", self.value)?,
        }
        write!(
            f,
            ", byte {} (field {}): {} (significant bits {:#04x})",
            self.byte,
            self.field,
            self.mv.says(),
            self.mask
        )
    }
}

/// What one side of a signature showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Coverage {
    /// Every significant byte moved, or the first gap of each value that lost one.
    Judged(Vec<Gap>),
    /// The scan cannot tell (the reason): the address of a `.param` is taken, or the
    /// function or its call is not in the text.
    NotJudged(String),
}

/// The first significant byte of `v` that `accesses` leave uncovered.
fn first_gap(v: &Val, accesses: &[&ParamAccess], mv: Move, param: Option<usize>) -> Option<Gap> {
    let mask = v.mask();
    let mut covered = vec![false; mask.len()];
    for a in accesses {
        for b in a.offset..a.offset.saturating_add(a.bytes) {
            if let Some(c) = covered.get_mut(b as usize) {
                *c = true;
            }
        }
    }
    let byte = mask.iter().zip(&covered).position(|(m, c)| *m != 0 && !c)?;
    Some(Gap {
        mv,
        param,
        value: v.describe(),
        byte: byte as u64,
        field: field_name(v, byte as u64),
        mask: mask[byte],
    })
}

fn taken(file: &PtxFile, function: &str, name: &str) -> bool {
    file.address_taken
        .iter()
        .any(|t| t.function == function && t.name == name)
}

/// The caller's side: kernel `xcall_k<seed>`'s stores of each argument before its call of
/// the callee, and its loads of the returned value after it.
pub fn caller_side(file: &PtxFile, sig: &Signature) -> Coverage {
    let kernel = sig.kernel();
    let callee = sig.callee();
    let calls: Vec<_> = file.calls.iter().filter(|c| c.caller == kernel).collect();
    // An indirect call through a `volatile` pointer has no resolved target: the kernel's
    // only call is it.
    let site = calls
        .iter()
        .position(|c| c.target.as_deref() == Some(callee.as_str()))
        .or_else(|| (calls.len() == 1).then_some(0));
    let Some(k) = site else {
        return Coverage::NotJudged(format!("no call of `{callee}` in `{kernel}`"));
    };
    let c = calls[k];
    let before = k.checked_sub(1).map_or(0, |p| calls[p].seq);
    let after = calls.get(k + 1).map_or(usize::MAX, |n| n.seq);
    if c.arg_names.len() != sig.params.len() {
        return Coverage::NotJudged(format!(
            "the call in `{kernel}` passes {} arguments, the signature has {}",
            c.arg_names.len(),
            sig.params.len()
        ));
    }
    let moves = |name: &str, store: bool, from: usize, to: usize| -> Vec<&ParamAccess> {
        file.accesses
            .iter()
            .filter(|a| {
                a.function == kernel
                    && a.name == name
                    && a.store == store
                    && a.seq >= from
                    && a.seq <= to
            })
            .collect()
    };
    let mut gaps = Vec::new();
    for (i, (v, name)) in sig.params.iter().zip(&c.arg_names).enumerate() {
        if taken(file, &kernel, name) {
            return Coverage::NotJudged(format!("`{kernel}` takes the address of `{name}`"));
        }
        gaps.extend(first_gap(
            v,
            &moves(name, true, before, c.seq),
            Move::CallerStores,
            Some(i + 1),
        ));
    }
    if let (Some(r), Some(name)) = (&sig.ret, c.ret_names.first()) {
        if taken(file, &kernel, name) {
            return Coverage::NotJudged(format!("`{kernel}` takes the address of `{name}`"));
        }
        gaps.extend(first_gap(
            r,
            &moves(name, false, c.seq, after),
            Move::CallerReceives,
            None,
        ));
    }
    Coverage::Judged(gaps)
}

/// The callee's side: function `xcall_f<seed>`'s loads of each parameter and its stores of
/// the return value.
pub fn callee_side(file: &PtxFile, sig: &Signature) -> Coverage {
    let callee = sig.callee();
    let Some(f) = file.module.function(&callee).filter(|f| f.is_definition) else {
        return Coverage::NotJudged(format!("no definition of `{callee}`"));
    };
    if f.params.len() != sig.params.len() {
        return Coverage::NotJudged(format!(
            "`{callee}` takes {} parameters, the signature has {}",
            f.params.len(),
            sig.params.len()
        ));
    }
    let moves = |name: &str, store: bool| -> Vec<&ParamAccess> {
        file.accesses
            .iter()
            .filter(|a| a.function == callee && a.name == name && a.store == store)
            .collect()
    };
    let mut gaps = Vec::new();
    for (i, (v, p)) in sig.params.iter().zip(&f.params).enumerate() {
        if taken(file, &callee, &p.name) {
            return Coverage::NotJudged(format!("`{callee}` takes the address of `{}`", p.name));
        }
        gaps.extend(first_gap(
            v,
            &moves(&p.name, false),
            Move::CalleeLoads,
            Some(i + 1),
        ));
    }
    if let (Some(r), Some(p)) = (&sig.ret, f.returns.first()) {
        if taken(file, &callee, &p.name) {
            return Coverage::NotJudged(format!("`{callee}` takes the address of `{}`", p.name));
        }
        gaps.extend(first_gap(
            r,
            &moves(&p.name, true),
            Move::CalleeReturns,
            None,
        ));
    }
    Coverage::Judged(gaps)
}

/// What a pair's batches showed, signature by signature.
#[derive(Debug, Default)]
pub(crate) struct PairCoverage {
    /// One line per value that loses a byte: `caller -> callee, <signature>: <gap>`.
    findings: Vec<String>,
    /// Signatures judged on both sides.
    judged: usize,
    /// Sides the scan could not judge, with why.
    not_judged: Vec<String>,
    /// Signatures a producer refused (no PTX; their pair cases report it).
    refused: usize,
}

impl PairCoverage {
    /// Judge `sig` in the caller's batch `fa` and the callee's batch `fb`.
    pub(crate) fn judge(
        &mut self,
        (caller, callee): (Producer, Producer),
        (fa, fb): (&PtxFile, &PtxFile),
        sig: &Signature,
    ) {
        let mut whole = true;
        for side in [caller_side(fa, sig), callee_side(fb, sig)] {
            match side {
                Coverage::Judged(gaps) => self.findings.extend(
                    gaps.iter()
                        .map(|g| format!("{caller} -> {callee}, {}: {g}", sig.describe())),
                ),
                Coverage::NotJudged(why) => {
                    whole = false;
                    self.not_judged.push(format!("seed {}: {why}", sig.seed));
                }
            }
        }
        self.judged += usize::from(whole);
    }

    /// The case's verdict: a failure naming every lost byte; an error when nothing could be
    /// judged (never a pass without a check); else a pass that counts what was judged.
    pub(crate) fn status(self) -> CaseStatus {
        let note = format!(
            "{} signatures judged on both sides; {} sides not judged{}; {} refused by a producer (see the pair cases)",
            self.judged,
            self.not_judged.len(),
            self.not_judged
                .first()
                .map_or(String::new(), |w| format!(" (first: {w})")),
            self.refused
        );
        if !self.findings.is_empty() {
            return CaseStatus::fail_findings(
                "every significant byte of every argument and return value is moved through .param on both sides of the call (§2.3)",
                format!("{} values lose a byte", self.findings.len()),
                &note,
                self.findings,
            );
        }
        if self.judged == 0 {
            return CaseStatus::error(format!("no signature could be judged: {note}"));
        }
        CaseStatus::pass_with(note)
    }
}

/// `xcall.bytes.{caller}.{callee}`: every signature both producers express, each side judged
/// in its producer's batch; one finding per value that loses a byte.
pub(crate) fn case(ctx: &CaseContext, caller: Producer, callee: Producer) -> CaseStatus {
    let tc = ctx.toolchain;
    super::prefetch(ctx.scope, tc);
    let target = super::Target::Current;
    let mut seen = PairCoverage::default();
    for m in target.masks() {
        if !super::pair_runs(caller, callee, m) {
            continue;
        }
        let a = super::batch(ctx, tc, caller, Role::Caller, m, target);
        let b = super::batch(ctx, tc, callee, Role::Callee, m, target);
        let (Some(a), Some(b)) = (a.get(), b.get()) else {
            return CaseStatus::error("batch not computed");
        };
        let (fa, fb) = match (&a.parsed, &b.parsed) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(e), _) | (_, Err(e)) => {
                return CaseStatus::error(format!("gpucts cannot read the PTX: {e}"))
            }
        };
        for sig in target.sigs(m) {
            if a.rejected.contains_key(&sig.seed) || b.rejected.contains_key(&sig.seed) {
                seen.refused += 1;
            } else {
                seen.judge((caller, callee), (fa, fb), sig);
            }
        }
    }
    seen.status()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcall::emit::{ptx_callee, ptx_caller};
    use crate::xcall::sig::signature;

    /// gpucts's reference emitter moves every byte one `.b8` at a time (the §2.3 table), so its
    /// PTX is the faithful text; a line removed from it is the defect the pass must name.
    fn reference(seed: u64) -> (Signature, String, String) {
        let sig = signature(seed);
        let caller = ptx_caller(&[&sig]);
        let callee = ptx_callee(&[&sig]);
        (sig, caller, callee)
    }

    fn without(text: &str, line: &str) -> String {
        let n = text.lines().filter(|l| l.contains(line)).count();
        assert_eq!(n, 1, "`{line}` occurs once in:\n{text}");
        text.lines()
            .filter(|l| !l.contains(line))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn parse(text: &str) -> PtxFile {
        PtxFile::parse("t.ptx", text).unwrap()
    }

    fn gaps(c: Coverage) -> Vec<Gap> {
        match c {
            Coverage::Judged(g) => g,
            Coverage::NotJudged(why) => panic!("not judged: {why}"),
        }
    }

    #[test]
    fn the_reference_emitter_moves_every_byte() {
        for seed in 0..240 {
            let (sig, caller, callee) = reference(seed);
            assert_eq!(gaps(caller_side(&parse(&caller), &sig)), [], "seed {seed}");
            assert_eq!(gaps(callee_side(&parse(&callee), &sig)), [], "seed {seed}");
        }
    }

    /// Seed 16 passes a 48-byte union as its second argument; byte 1 belongs to member
    /// `.f0.f0` (the byte clang-19's call site leaves unstored on the H100).
    #[test]
    fn an_unstored_argument_byte_is_named_with_its_field() {
        let (sig, caller, _) = reference(16);
        let broken = without(&caller, "st.param.b8 [param1+1],");
        let g = gaps(caller_side(&parse(&broken), &sig));
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(
            (
                g[0].mv,
                g[0].param,
                g[0].byte,
                g[0].field.as_str(),
                g[0].mask
            ),
            (Move::CallerStores, Some(2), 1, ".f0.f0", 0xff)
        );
        let text = g[0].to_string();
        assert!(
            text.starts_with("parameter 2 (union r1016008 (48 B, align 16;")
                && text.ends_with(
                    "byte 1 (field .f0.f0): the caller's call site stores nothing there (significant bits 0xff)"
                ),
            "{text}"
        );
    }

    /// The callee's loads are counted per parameter: parameter 1's load at byte 1 does not
    /// stand in for a missing load of parameter 2's byte 1.
    #[test]
    fn an_unloaded_parameter_byte_is_not_covered_by_another_parameter() {
        let (sig, _, callee) = reference(16);
        assert!(sig.params[0].size() > 1, "parameter 1 has a byte 1 too");
        let name = format!("[{}_param_1+1];", sig.callee());
        let g = gaps(callee_side(&parse(&without(&callee, &name)), &sig));
        assert_eq!(
            g.iter()
                .map(|g| (g.mv, g.param, g.byte))
                .collect::<Vec<_>>(),
            [(Move::CalleeLoads, Some(2), 1)]
        );
    }

    /// Seed 14 returns a 24-byte union whose byte 2 is member `.f2`: the caller that never
    /// loads it and the callee that never stores it are each named.
    #[test]
    fn a_return_byte_lost_on_either_side_is_named() {
        let (sig, caller, callee) = reference(14);
        let c = without(&caller, "[retval0+2];");
        let g = gaps(caller_side(&parse(&c), &sig));
        assert_eq!(
            g.iter()
                .map(|g| (g.mv, g.param, g.byte, g.field.clone()))
                .collect::<Vec<_>>(),
            [(Move::CallerReceives, None, 2, ".f2".to_string())]
        );
        let f = without(&callee, "[func_retval0+2],");
        let g = gaps(callee_side(&parse(&f), &sig));
        assert_eq!(
            g.iter().map(|g| (g.mv, g.byte)).collect::<Vec<_>>(),
            [(Move::CalleeReturns, 2)]
        );
        assert!(g[0].to_string().contains("the callee stores nothing there"));
    }

    /// Padding carries nothing (§1.2): a byte outside every member may go unmoved.
    #[test]
    fn padding_need_not_be_moved() {
        let sig = (0..240)
            .map(signature)
            .find(|s| matches!(&s.params[0], Val::Agg(g) if g.what == "padded: char then double"))
            .unwrap();
        assert_eq!(sig.params[0].mask()[3], 0, "byte 3 is padding");
        let caller = ptx_caller(&[&sig]);
        let broken = without(&caller, "st.param.b8 [param0+3],");
        assert_eq!(gaps(caller_side(&parse(&broken), &sig)), []);
        // The callee's loads likewise.
        let callee = ptx_callee(&[&sig]);
        let name = format!("[{}_param_0+3];", sig.callee());
        assert_eq!(
            gaps(callee_side(&parse(&without(&callee, &name)), &sig)),
            []
        );
        let name = format!("[{}_param_0+8];", sig.callee());
        let g = gaps(callee_side(&parse(&without(&callee, &name)), &sig));
        assert_eq!((g[0].mv, g[0].byte), (Move::CalleeLoads, 8));
    }

    /// Vector moves cover their lanes: four `.b8` stores replaced by one `.v4.b8` store
    /// leave no gap, and a `.v2` that covers only two of the four leaves the third.
    #[test]
    fn vector_moves_cover_every_lane() {
        let (sig, caller, _) = reference(16);
        let lines: Vec<&str> = caller.lines().collect();
        let rewrite = |lanes: &str| -> String {
            let mut out = Vec::new();
            for l in &lines {
                if (0..4).any(|j| l.contains(&format!("st.param.b8 [param1+{j}],"))) {
                    if l.contains("[param1+0]") {
                        out.push(format!(
                            "\tst.param.{lanes} [param1+0], {{%r1, %r1, %r1, %r1}};"
                        ));
                    }
                } else {
                    out.push(l.to_string());
                }
            }
            out.join("\n")
        };
        assert_eq!(gaps(caller_side(&parse(&rewrite("v4.b8")), &sig)), []);
        let g = gaps(caller_side(&parse(&rewrite("v2.b8")), &sig));
        assert_eq!((g[0].param, g[0].byte), (Some(2), 2));
    }

    /// A `.param` whose address is taken may move through generic addresses: that side is
    /// not judged, and says why.
    #[test]
    fn an_address_taken_param_is_not_judged() {
        let (sig, _, callee) = reference(16);
        let name = format!("{}_param_1", sig.callee());
        let taken = callee.replacen("\tret;", &format!("\tmov.b64 %rd9, {name};\n\tret;"), 1);
        match callee_side(&parse(&taken), &sig) {
            Coverage::NotJudged(why) => assert!(why.contains(&name), "{why}"),
            c => panic!("{c:?}"),
        }
        // A function's own address (an indirect call's target) is not a parameter's.
        let (sig, caller, _) = reference(3);
        assert!(sig.indirect || !caller.contains("mov.u64 %rd2, xcall_f"));
        assert!(matches!(
            caller_side(&parse(&caller), &sig),
            Coverage::Judged(_)
        ));
    }

    /// The case's verdict from the judgement: a lost byte fails naming the pair, the
    /// signature and the gap; a faithful pair passes counting what it judged; a pair of which
    /// nothing could be judged is an error, never a pass.
    #[test]
    fn the_verdict_fails_on_a_lost_byte_and_never_passes_unjudged() {
        let g = Producer::named("gpucts");
        let (sig, caller, callee) = reference(16);
        let (fa, fb) = (parse(&caller), parse(&callee));

        let mut faithful = PairCoverage::default();
        faithful.judge((g, g), (&fa, &fb), &sig);
        match faithful.status() {
            CaseStatus::Pass { note: Some(n), .. } => assert!(
                n.starts_with("1 signatures judged on both sides; 0 sides not judged; 0 refused"),
                "{n}"
            ),
            s => panic!("{s:?}"),
        }

        let broken = parse(&without(&caller, "st.param.b8 [param1+1],"));
        let mut lossy = PairCoverage::default();
        lossy.judge((g, g), (&broken, &fb), &sig);
        let s = lossy.status();
        assert!(s.is_failure(), "{s:?}");
        let lines = s.finding_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("gpucts -> gpucts, seed 16 (")
                && lines[0].contains("parameter 2 (union r1016008")
                && lines[0]
                    .contains("byte 1 (field .f0.f0): the caller's call site stores nothing there"),
            "{}",
            lines[0]
        );

        // The callee's file lacks the function: that side is not judged, and with nothing
        // judged the case is an error.
        let mut unjudged = PairCoverage::default();
        unjudged.judge((g, g), (&fa, &fa), &sig);
        unjudged.refused = 2;
        match unjudged.status() {
            CaseStatus::Error { message } => assert!(
                message.starts_with("no signature could be judged: 0 signatures judged on both sides; 1 sides not judged (first: seed 16: no definition of `xcall_f16`); 2 refused"),
                "{message}"
            ),
            s => panic!("{s:?}"),
        }
    }

    /// The caller's side is read at the call of the signature's callee: another call before
    /// it in the kernel is passed over (and its stores are not the callee's), and an indirect
    /// call whose target register was not loaded from the callee's name is taken when it is
    /// the kernel's only call.
    #[test]
    fn the_callee_s_call_is_found_among_the_kernel_s_calls() {
        let (sig, caller, _) = reference(16);
        let k = sig.kernel();
        // A call of another function before the callee's, in its own block.
        let head = format!(".visible .entry {k}(");
        let other = ".extern .func gpucts_other(.param .b32 x);\n";
        let two_calls = caller.replacen(&head, &format!("{other}{head}"), 1).replacen(
            "\t{\n",
            "\t{ .param .b32 p; mov.b32 %r1, 7; st.param.b32 [p], %r1; call.uni gpucts_other, (p); }\n\t{\n",
            1,
        );
        let f = parse(&two_calls);
        assert_eq!(f.calls.iter().filter(|c| c.caller == k).count(), 2);
        assert_eq!(gaps(caller_side(&f, &sig)), []);

        // An indirect call through a register loaded from memory: no resolved target.
        let (sig, caller, _) = (0..240)
            .map(reference)
            .find(|(s, _, _)| s.indirect)
            .unwrap();
        let load = format!("mov.u64 %rd2, {};", sig.callee());
        assert!(caller.contains(&load), "{caller}");
        let unresolved = parse(&caller.replacen(&load, "ld.global.u64 %rd2, [%rd1];", 1));
        assert!(unresolved
            .calls
            .iter()
            .any(|c| c.caller == sig.kernel() && c.target.is_none()));
        assert_eq!(gaps(caller_side(&unresolved, &sig)), []);
    }
}
