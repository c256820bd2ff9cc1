//! Outcome counting on the device. The counting kernel ([`super::kernel::generate_counting`])
//! maps each instance's observed values (the model's terms: registers from the result slots,
//! final values of locations) to an index in the test's outcome space and adds one to that
//! index's counter with `red.relaxed.gpu.global.add.u32`; the host reads back the counters,
//! not the results and location buffers.
//!
//! The outcome space is the product of one value domain per term: the values the test's text
//! can put in a register or a location (initial values, constants, one round of sums for
//! additive RMWs), a static bound that does not come from the model. An instance whose
//! values fall outside it is written whole to an overflow log (a counter, then the values),
//! so the histogram stays exact whatever the hardware does: a forbidden outcome outside the
//! domain is reported with its values as before.
//!
//! Which thread counts an instance: the last of its roles to finish. Each role thread stores
//! its result slots, then increments the instance's arrival word with
//! `atom.acq_rel.gpu.global.add.u32`; the thread that sees `roles - 1` has every other role's
//! stores and final accesses ordered before its own reads (PTX ISA "Memory consistency model":
//! release / acquire patterns through an atomic's read-modify-write at gpu scope), so the
//! locations hold their final values. In the shared-memory layout an instance lives in one
//! CTA: after the copy back and `bar.sync 0`, role 0's thread counts its instance.
//!
//! The counts buffer (`p_counts`, 32-bit words): `[0, size)` outcome counters, `size`
//! overflow count, `size + 1` did-not-terminate count, then one arrival word per instance,
//! then the overflow log (terms words per entry, one entry per instance and launch at most).
//!
//! A group of launches shares one host wait ([`super::worker::LAUNCHES_PER_SYNC`]): the head
//! (counters, overflow count, did-not-terminate count) is cleared once before the group and
//! accumulates over its launches, the overflow log goes on where the last launch left it (the
//! kernel appends at the index its `atom.add` on the overflow count returns), and only the
//! arrival words are cleared before every launch ([`OutcomeSpace::group_words`]).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::layout::{Apart, Geometry, Histogram, DID_NOT_TERMINATE};
use crate::atomics::litmus::{AtomOp, LitmusTest, Op, Operand, Term};

/// Most counters an outcome space may have: 16 KiB of counters read back per launch. A test
/// whose product of domains is larger counts everything through the overflow log.
pub(crate) const MAX_OUTCOMES: usize = 4096;

/// Most values one term's domain holds (tests whose constants exceed it count through the log).
pub(crate) const MAX_DOMAIN: usize = 16;

/// One test's outcome space on the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeSpace {
    /// The model's terms, in its order: an outcome is their values.
    pub terms: Vec<Term>,
    /// Candidate 32-bit words of every term (one domain for all terms), sorted.
    pub domain: Vec<u32>,
    /// Counters: `domain.len() ^ terms.len()`, or 0 when that exceeds [`MAX_OUTCOMES`].
    pub size: usize,
}

/// Why a test's outcome cannot be counted on the device.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountError {
    #[error("condition names {0}, which no operation writes")]
    UnwrittenRegister(String),
    #[error("condition names location `{0}`, which the test lacks")]
    UnknownLocation(String),
    #[error("counts buffer of {got} words, {want} expected")]
    Short { got: usize, want: usize },
    #[error(
        "the overflow log holds {entries} entries, past its room for {room}: the device wrote \
         beyond the counts buffer"
    )]
    LogPastBuffer { entries: usize, room: usize },
}

impl OutcomeSpace {
    /// The space of `test`'s outcomes over `terms` (the model's, [`crate::atomics::model`]).
    pub fn new(test: &LitmusTest, terms: &[Term]) -> OutcomeSpace {
        let mut values: BTreeSet<i64> = BTreeSet::from([0]);
        for l in &test.locations {
            values.insert(l.init);
        }
        let mut adds = Vec::new();
        for t in &test.threads {
            values.extend(t.regs.values().copied());
            for op in &t.ops {
                let mut konst = |o: &Operand| {
                    if let Operand::Const(c) = o {
                        values.insert(*c);
                    }
                };
                match op {
                    Op::St { val, .. } | Op::Mov { val, .. } => konst(val),
                    Op::Atom { op, val, cmp, .. } => {
                        konst(val);
                        if let Some(c) = cmp {
                            konst(c);
                        }
                        if let (AtomOp::Add, Operand::Const(c)) = (op, val) {
                            adds.push(*c);
                        }
                    }
                    Op::Red { op, val, .. } => {
                        konst(val);
                        if let (AtomOp::Add, Operand::Const(c)) = (op, val) {
                            adds.push(*c);
                        }
                    }
                    Op::Local { a, b, .. } => {
                        konst(a);
                        konst(b);
                    }
                    _ => {}
                }
            }
        }
        // Additive RMWs: each adds its constant to some value already there (repeated once
        // per RMW, so n increments of 1 from 0 reach n), in the device's 32-bit words. Each
        // round can multiply the values by the RMWs' count: it stops once past MAX_DOMAIN,
        // where the domain is given up anyway.
        let mut words: BTreeSet<u32> = values.into_iter().map(|v| v as u32).collect();
        for _ in 0..adds.len() {
            if words.len() > MAX_DOMAIN {
                break;
            }
            let now: Vec<u32> = words.iter().copied().collect();
            for v in now {
                for a in &adds {
                    words.insert(v.wrapping_add(*a as u32));
                }
            }
        }
        let mut domain: Vec<u32> = words.into_iter().collect();
        if domain.len() > MAX_DOMAIN {
            domain.clear();
        }
        let size = (domain.len() as u128)
            .checked_pow(terms.len() as u32)
            .filter(|&s| s <= MAX_OUTCOMES as u128 && !domain.is_empty())
            .unwrap_or(0) as usize;
        OutcomeSpace {
            terms: terms.to_vec(),
            domain,
            size,
        }
    }

    /// Word index of the overflow count in the counts buffer.
    pub(crate) fn overflow_word(&self) -> usize {
        self.size
    }

    /// Word index of the did-not-terminate count.
    pub(crate) fn dnt_word(&self) -> usize {
        self.size + 1
    }

    /// Word index of the count of instances past the model's loop bound
    /// ([`super::layout::PAST_MODEL_BOUND`]).
    pub(crate) fn past_bound_word(&self) -> usize {
        self.size + 2
    }

    /// Words the host reads back after every group of launches: counters, overflow,
    /// did-not-terminate, past the model's bound.
    pub(crate) fn head_words(&self) -> usize {
        self.size + 3
    }

    /// First arrival word (one per instance).
    pub(crate) fn arrival_word(&self) -> usize {
        self.head_words()
    }

    /// First word of the overflow log for `instances` instances a launch.
    pub(crate) fn log_word(&self, instances: usize) -> usize {
        self.arrival_word() + instances
    }

    /// Words of the counts buffer for `instances` instances a launch.
    pub fn words(&self, instances: usize) -> usize {
        self.log_word(instances) + instances * self.terms.len().max(1)
    }

    /// Words of the counts buffer for a group of `launches` launches of `instances` instances
    /// each with one host wait: the overflow log has room for every instance of every launch
    /// (the log's entries accumulate over the group, the arrival words do not).
    pub(crate) fn group_words(&self, instances: usize, launches: usize) -> usize {
        self.log_word(instances) + launches.max(1) * instances * self.terms.len().max(1)
    }

    /// Words of the overflow log that `head` (counters, overflow, did-not-terminate) says
    /// are written, when they fit a buffer of `group_words(instances, launches)`; an error
    /// when the log ran past its room (the device wrote out of bounds).
    pub(crate) fn log_words(
        &self,
        head: &[u32],
        instances: usize,
        launches: usize,
    ) -> Result<usize, CountError> {
        let over = head
            .get(self.overflow_word())
            .copied()
            .ok_or(CountError::Short {
                got: head.len(),
                want: self.head_words(),
            })? as usize;
        let room = launches.max(1) * instances;
        if over > room {
            return Err(CountError::LogPastBuffer {
                entries: over,
                room,
            });
        }
        Ok(over * self.terms.len())
    }

    /// The outcome counter `index` stands for (the inverse of the kernel's mixed-radix sum:
    /// term i's domain position times `domain.len() ^ i`).
    pub fn outcome(&self, mut index: usize) -> Vec<i64> {
        let d = self.domain.len().max(1);
        (0..self.terms.len())
            .map(|_| {
                let v = self.domain[index % d];
                index /= d;
                i64::from(v as i32)
            })
            .collect()
    }

    /// The histogram the counters `head` ([`OutcomeSpace::head_words`]) and the overflow
    /// `log` (its first `head[overflow]` entries) give, added into `into`; returns the
    /// instances counted apart (did not terminate, past the model's loop bound).
    pub(crate) fn decode(
        &self,
        head: &[u32],
        log: &[u32],
        into: &mut Histogram,
    ) -> Result<Apart, CountError> {
        if head.len() < self.head_words() {
            return Err(CountError::Short {
                got: head.len(),
                want: self.head_words(),
            });
        }
        for (i, &n) in head[..self.size].iter().enumerate() {
            if n > 0 {
                *into.entry(self.outcome(i)).or_default() += u64::from(n);
            }
        }
        let t = self.terms.len();
        let over = head[self.overflow_word()] as usize;
        if over > 0 {
            if log.len() < over * t {
                return Err(CountError::Short {
                    got: log.len(),
                    want: over * t,
                });
            }
            for e in 0..over {
                let o = log[e * t..][..t]
                    .iter()
                    .map(|&w| i64::from(w as i32))
                    .collect();
                *into.entry(o).or_default() += 1;
            }
        }
        Ok(Apart {
            did_not_terminate: u64::from(head[self.dnt_word()]),
            past_model_bound: u64::from(head[self.past_bound_word()]),
        })
    }
}

/// Where one term's value is read from.
enum Src {
    Slot(usize),
    Loc(usize),
}

fn sources(g: &Geometry, space: &OutcomeSpace) -> Result<Vec<Src>, CountError> {
    space
        .terms
        .iter()
        .map(|t| match t {
            Term::Reg { thread, reg } => g
                .slot_of(*thread, reg)
                .map(Src::Slot)
                .ok_or_else(|| CountError::UnwrittenRegister(t.to_string())),
            Term::Loc(l) => g
                .location_index(l)
                .map(Src::Loc)
                .ok_or_else(|| CountError::UnknownLocation(l.clone())),
        })
        .collect()
}

/// Declarations and parameter load of the counting code (after the kernel's prologue).
pub(super) fn prologue() -> &'static str {
    "\t.reg .pred %k_op;\n\t.reg .b32 %k_oi, %k_ov, %k_oa;\n\t.reg .b64 %k_counts, %k_or, %k_ol, %k_ow;\n\
     \tld.param.u64 %k_w, [p_counts];\n\tcvta.to.global.u64 %k_counts, %k_w;\n"
}

/// The kernel's extra parameter.
pub(super) const PARAM: &str = ",\n\t.param .u64 p_counts";

/// PTX that counts the instance whose index is in `inst` (a `.b32` register), once every
/// role of it has finished: with `arrive`, after this role's arrival (the last arriver
/// counts); without, unconditionally (the caller has synchronised the instance's threads).
/// `tag` makes the labels unique in the kernel.
pub(super) fn count_code(
    g: &Geometry,
    space: &OutcomeSpace,
    inst: &str,
    tag: &str,
    arrive: bool,
) -> Result<String, CountError> {
    let srcs = sources(g, space)?;
    let (ns, nl) = (g.slots.len().max(1), g.locations.len().max(1));
    let n = g.instances() as usize;
    let mut s = String::new();
    let end = format!("CNT{tag}_END");
    if arrive {
        let _ = write!(
            s,
            "\t// count the instance once all {roles} roles have arrived\n\
             \tmul.wide.u32 %k_ow, {inst}, 4;\n\tadd.s64 %k_ow, %k_counts, %k_ow;\n\
             \tatom.acq_rel.gpu.global.add.u32 %k_oa, [%k_ow+{arr}], 1;\n\
             \tsetp.ne.u32 %k_op, %k_oa, {last};\n\t@%k_op bra {end};\n",
            roles = g.roles,
            arr = 4 * space.arrival_word(),
            last = g.roles.saturating_sub(1),
        );
    }
    let _ = write!(
        s,
        "\tmul.wide.u32 %k_ow, {inst}, {row};\n\tadd.s64 %k_or, %k_results, %k_ow;\n",
        row = 4 * ns
    );
    if let Some(k) = g.slot_of(DID_NOT_TERMINATE.0, DID_NOT_TERMINATE.1) {
        let _ = write!(
            s,
            "\tld.relaxed.gpu.global.u32 %k_ov, [%k_or+{}];\n\
             \tsetp.eq.u32 %k_op, %k_ov, {past};\n\t@%k_op bra CNT{tag}_PAST;\n\
             \tsetp.ne.u32 %k_op, %k_ov, 0;\n\t@%k_op bra CNT{tag}_DNT;\n",
            4 * k,
            past = super::layout::PAST_MODEL_BOUND,
        );
    }
    // One term's value into %k_ov.
    let load = |s: &mut String, src: &Src| match src {
        Src::Slot(k) => {
            let _ = writeln!(s, "\tld.relaxed.gpu.global.u32 %k_ov, [%k_or+{}];", 4 * k);
        }
        Src::Loc(j) => {
            let _ = write!(
                s,
                "\tmul.wide.u32 %k_ow, {inst}, {row};\n\tadd.s64 %k_ow, %k_addrs, %k_ow;\n\
                 \tld.global.u32 %k_ov, [%k_ow+{off}];\n\tmul.wide.u32 %k_ow, %k_ov, 4;\n\
                 \tadd.s64 %k_ow, %k_locs, %k_ow;\n\tld.relaxed.gpu.global.u32 %k_ov, [%k_ow];\n",
                row = 4 * nl,
                off = 4 * j
            );
        }
    };
    if space.size > 0 {
        let _ = writeln!(s, "\tmov.u32 %k_oi, 0;");
        let mut stride = 1usize;
        for (i, src) in srcs.iter().enumerate() {
            load(&mut s, src);
            for (x, d) in space.domain.iter().enumerate() {
                let _ = write!(
                    s,
                    "\tsetp.eq.u32 %k_op, %k_ov, {d};\n\t@%k_op bra CNT{tag}_T{i}_{x};\n"
                );
            }
            let _ = writeln!(s, "\tbra CNT{tag}_OVER;");
            for x in 0..space.domain.len() {
                let _ = write!(
                    s,
                    "CNT{tag}_T{i}_{x}:\n\tadd.u32 %k_oi, %k_oi, {};\n\tbra CNT{tag}_T{i};\n",
                    x * stride
                );
            }
            let _ = writeln!(s, "CNT{tag}_T{i}:");
            stride *= space.domain.len();
        }
        let _ = write!(
            s,
            "\tmul.wide.u32 %k_ow, %k_oi, 4;\n\tadd.s64 %k_ow, %k_counts, %k_ow;\n\
             \tred.relaxed.gpu.global.add.u32 [%k_ow], 1;\n\tbra {end};\n"
        );
    }
    // Outside the domain: the values themselves, in the next log entry.
    let t = space.terms.len().max(1);
    let _ = write!(
        s,
        "CNT{tag}_OVER:\n\
         \tatom.relaxed.gpu.global.add.u32 %k_oa, [%k_counts+{over}], 1;\n\
         \tmul.wide.u32 %k_ol, %k_oa, {entry};\n\tadd.s64 %k_ol, %k_counts, %k_ol;\n",
        over = 4 * space.overflow_word(),
        entry = 4 * t,
    );
    for (i, src) in srcs.iter().enumerate() {
        load(&mut s, src);
        let _ = writeln!(
            s,
            "\tst.global.u32 [%k_ol+{}], %k_ov;",
            4 * (space.log_word(n) + i)
        );
    }
    let _ = writeln!(s, "\tbra {end};");
    let _ = write!(
        s,
        "CNT{tag}_PAST:\n\tred.relaxed.gpu.global.add.u32 [%k_counts+{}], 1;\n\tbra {end};\n\
         CNT{tag}_DNT:\n\tred.relaxed.gpu.global.add.u32 [%k_counts+{}], 1;\n{end}:\n",
        4 * space.past_bound_word(),
        4 * space.dnt_word()
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::{catalog, model};

    #[test]
    fn counter_indices_decode_to_their_values() {
        let mp = catalog::by_name("MP.rel_acq.gpu.inter_cta").unwrap();
        let terms = model::check(&mp).terms;
        let space = OutcomeSpace::new(&mp, &terms);
        // MP writes 1 (data, flag) over initial 0: domain {0, 1}, two registers.
        assert_eq!(space.domain, vec![0, 1]);
        assert_eq!(space.size, 4);
        let all: BTreeSet<Vec<i64>> = (0..space.size).map(|i| space.outcome(i)).collect();
        let want: BTreeSet<Vec<i64>> = [[0, 0], [0, 1], [1, 0], [1, 1]]
            .iter()
            .map(|o| o.to_vec())
            .collect();
        assert_eq!(all, want);
        // Counters 3 at (1,0) and the log's one (7, 0): both in the histogram.
        let mut head = vec![0u32; space.head_words()];
        let i10 = (0..space.size)
            .find(|&i| space.outcome(i) == [1, 0])
            .unwrap();
        head[i10] = 3;
        head[space.overflow_word()] = 1;
        head[space.dnt_word()] = 2;
        head[space.past_bound_word()] = 4;
        let mut h = Histogram::new();
        let apart = space.decode(&head, &[7, 0], &mut h).unwrap();
        assert_eq!(
            apart,
            Apart {
                did_not_terminate: 2,
                past_model_bound: 4
            }
        );
        assert_eq!(h, Histogram::from([(vec![1, 0], 3), (vec![7, 0], 1)]));
        assert!(space.decode(&head[..2], &[], &mut h).is_err());
    }

    // A group's counts buffer has log room for every instance of every launch, after the
    // arrival words; more entries than that is the device writing past the buffer.
    #[test]
    fn a_group_log_has_room_for_every_instance_of_every_launch() {
        let mp = catalog::by_name("MP.rel_acq.gpu.inter_cta").unwrap();
        let space = OutcomeSpace::new(&mp, &model::check(&mp).terms);
        let (n, t) = (100, space.terms.len());
        assert_eq!(space.group_words(n, 1), space.words(n));
        assert_eq!(space.group_words(n, 4), space.log_word(n) + 4 * n * t);
        let mut head = vec![0u32; space.head_words()];
        head[space.overflow_word()] = 400;
        assert_eq!(space.log_words(&head, n, 4), Ok(400 * t));
        head[space.overflow_word()] = 401;
        assert_eq!(
            space.log_words(&head, n, 4),
            Err(CountError::LogPastBuffer {
                entries: 401,
                room: 400
            })
        );
        assert!(space.log_words(&head[..1], n, 4).is_err());
    }
}
