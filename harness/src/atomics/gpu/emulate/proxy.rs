//! The async proxy in the emulator: `cp.async.bulk` global → shared completing on an
//! `mbarrier`, the mbarrier's phases (`mbarrier.init`, `mbarrier.arrive.expect_tx`,
//! `mbarrier.try_wait.parity`) and `fence.proxy.async` (PTX ISA 8.x "Asynchronous copy",
//! "Async Proxy", "mbarrier", "membar/fence").
//!
//! A bulk copy starts when its instruction runs and is performed at a later step of the
//! schedule: it reads its source, writes its destination and performs the complete-tx on its
//! mbarrier, whose phase completes when its arrivals and transaction bytes are all in. Its
//! reads go through the async proxy, which sees the generic proxy's writes only up to the last
//! `fence.proxy.async` of the issuing CTA (the kernel's start counting as one): of each word it
//! reads the value memory held at that point or any value written since, picked by the
//! schedule. So a copy without the fence may read a value the generic proxy has overwritten,
//! and one after the fence cannot (the ISA: accessing a location through several proxies
//! needs a cross-proxy fence).

use std::collections::HashMap;

use super::{arg, unsupported, EmulateError, Ins, Machine, Program, Thread};

/// Where the proxy kernel's mbarriers start in a CTA's shared memory (its data at 0).
pub(super) const MBARRIER_OFFSET: u64 = 1 << 20;

#[cfg(test)]
thread_local! {
    /// A deliberately wrong emulator in which `fence.proxy.async` does nothing, which the tests
    /// must catch.
    pub(crate) static IGNORE_PROXY_FENCE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn ignore_proxy_fence() -> bool {
    #[cfg(test)]
    if IGNORE_PROXY_FENCE.with(|m| m.get()) {
        return true;
    }
    false
}

/// One mbarrier object: arrivals expected per phase, those still pending in the current
/// phase, its transaction count, and the phases completed.
#[derive(Debug, Clone, Copy)]
struct Mbarrier {
    expected: u64,
    pending: u64,
    tx: i64,
    phase: u64,
}

/// A bulk copy started and not yet performed.
#[derive(Debug, Clone, Copy)]
struct BulkCopy {
    dst: u64,
    src: u64,
    bytes: u64,
    mbar: u64,
    /// The issuing CTA's async-proxy horizon when the copy started.
    horizon: u64,
}

/// The emulator's async-proxy state.
#[derive(Debug, Default)]
pub(super) struct AsyncState {
    /// The program starts bulk copies: only then are writes logged.
    on: bool,
    /// Perform a copy as soon as it starts (the sequential schedule).
    pub(super) eager: bool,
    /// Writes so far (each write's number).
    seq: u64,
    /// Per word address: its writes (number, value), the value it held before the first at 0.
    log: HashMap<u64, Vec<(u64, u32)>>,
    /// Per CTA: the write number at its last `fence.proxy.async` (0: the kernel's start).
    horizon: HashMap<u64, u64>,
    mbar: HashMap<u64, Mbarrier>,
    pending: Vec<BulkCopy>,
}

impl AsyncState {
    pub(super) fn new(prog: &Program) -> AsyncState {
        AsyncState {
            on: prog.code.iter().any(|i| i.opcode[0] == "cp"),
            ..AsyncState::default()
        }
    }

    /// Bulk copies started and not yet performed.
    pub(super) fn pending(&self) -> usize {
        self.pending.len()
    }
}

impl Machine<'_> {
    /// A write to memory, logged for the async proxy's reads.
    pub(super) fn write(&mut self, at: u64, x: u32) {
        if self.proxy.on {
            let old = *self.mem.get(&at).unwrap_or(&0);
            self.proxy.seq += 1;
            let seq = self.proxy.seq;
            self.proxy
                .log
                .entry(at)
                .or_insert_with(|| vec![(0, old)])
                .push((seq, x));
        }
        self.mem.insert(at, x);
    }

    /// `fence` of any kind is a no-op in a sequentially consistent machine, except
    /// `fence.proxy.async` (with or without a state space), which brings the async proxy of
    /// the thread's CTA up to every write so far.
    pub(super) fn fence(&mut self, t: &Thread, ins: &Ins) {
        if ins.has("proxy") && ins.has("async") && !ignore_proxy_fence() {
            self.proxy.horizon.insert(t.ctaid, self.proxy.seq);
        }
    }

    /// `mbarrier.init`, `mbarrier.arrive.expect_tx`, `mbarrier.try_wait.parity` and
    /// `cp.async.bulk ... .mbarrier::complete_tx::bytes`.
    pub(super) fn async_proxy(
        &mut self,
        t: &Thread,
        ins: &Ins,
    ) -> Result<Option<u64>, EmulateError> {
        let v = |i: usize| self.v(t, ins, i);
        match ins.opcode[0].as_str() {
            "cp" if ins.has("bulk") && ins.has("mbarrier::complete_tx::bytes") => {
                let copy = BulkCopy {
                    dst: self.addr(t, arg(ins, 0)?)?,
                    src: self.addr(t, arg(ins, 1)?)?,
                    bytes: v(2)?,
                    mbar: self.addr(t, arg(ins, 3)?)?,
                    horizon: *self.proxy.horizon.get(&t.ctaid).unwrap_or(&0),
                };
                self.proxy.pending.push(copy);
                if self.proxy.eager {
                    let k = self.proxy.pending.len() - 1;
                    self.perform(k, &mut |n| n - 1);
                }
                Ok(None)
            }
            "mbarrier" if ins.has("init") => {
                let (at, count) = (self.addr(t, arg(ins, 0)?)?, v(1)?);
                let b = Mbarrier {
                    expected: count,
                    pending: count,
                    tx: 0,
                    phase: 0,
                };
                self.proxy.mbar.insert(at, b);
                Ok(None)
            }
            "mbarrier" if ins.has("arrive") && ins.has("expect_tx") => {
                let (at, bytes) = (self.addr(t, arg(ins, 1)?)?, v(2)?);
                let b = self.mbarrier(at)?;
                b.tx += bytes as i64;
                b.pending = b.pending.saturating_sub(1);
                let phase = b.phase;
                self.complete_phase(at);
                Ok(Some(phase))
            }
            "mbarrier" if ins.has("try_wait") && ins.has("parity") => {
                // Phase k's parity is k mod 2: the phase of parity `p` has completed once the
                // current phase's parity differs from it.
                let (at, parity) = (self.addr(t, arg(ins, 1)?)?, v(2)?);
                let phase = self.mbarrier(at)?.phase;
                Ok(Some(u64::from(phase & 1 != parity & 1)))
            }
            _ => Err(unsupported(&ins.opcode)),
        }
    }

    fn mbarrier(&mut self, at: u64) -> Result<&mut Mbarrier, EmulateError> {
        self.proxy
            .mbar
            .get_mut(&at)
            .ok_or_else(|| unsupported(format!("an mbarrier at {at:#x} never initialised")))
    }

    /// The phase completes once its arrivals and transaction bytes are all in.
    fn complete_phase(&mut self, at: u64) {
        if let Some(b) = self.proxy.mbar.get_mut(&at) {
            if b.pending == 0 && b.tx == 0 {
                b.phase += 1;
                b.pending = b.expected;
            }
        }
    }

    /// Performs started copy `k`: each word of the source as the async proxy sees it (`pick`
    /// chooses among the values it may read, oldest first), into the destination, then the
    /// complete-tx of its bytes on its mbarrier.
    pub(super) fn perform(&mut self, k: usize, pick: &mut dyn FnMut(usize) -> usize) {
        let c = self.proxy.pending.swap_remove(k);
        for w in 0..c.bytes / 4 {
            let src = c.src + 4 * w;
            let x = match self.proxy.log.get(&src) {
                None => *self.mem.get(&src).unwrap_or(&0),
                Some(log) => {
                    let from = log.iter().rposition(|&(s, _)| s <= c.horizon).unwrap_or(0);
                    log[from + pick(log.len() - from)].1
                }
            };
            self.write(c.dst + 4 * w, x);
        }
        if let Some(b) = self.proxy.mbar.get_mut(&c.mbar) {
            b.tx -= c.bytes as i64;
        }
        self.complete_phase(c.mbar);
    }
}

/// One emulated launch of an async-proxy kernel ([`crate::atomics::gpu::proxy`]): `threads`
/// threads in CTAs of `ntid`, the location buffer `locs` at `p_locs`, and `results` words read
/// back from `p_results` after the run, interleaved at random from `seed`.
pub fn launch_proxy(
    ptx: &str,
    ntid: u32,
    threads: u32,
    locs: &[u32],
    results: usize,
    seed: u64,
) -> Result<Vec<u32>, EmulateError> {
    let prog = super::parse(ptx)?;
    let (l, r) = (super::BASES[0].1, super::BASES[1].1);
    let params = [("p_locs".to_string(), l), ("p_results".to_string(), r)];
    let mut m = super::count::machine(&prog, ntid, &params, &[(l, locs)]);
    super::count::run_threads(&mut m, threads, Some(seed))?;
    Ok(super::read(&m.mem, r, results))
}
