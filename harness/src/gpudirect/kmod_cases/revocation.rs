//! Freeing pinned memory: persistent pins survive, others are revoked through the free
//! callback, which races with unpin and with the module's own calls in flight.

use super::dma::peer;
use super::*;

pub(super) fn persistent_survives_free(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    if c.tegra || c.caps & kmod::CAP_PERSISTENT == 0 {
        // §4.4.2 (Tegra) or a driver without the persistent API: the header's EOPNOTSUPP
        let va = c.alloc(a)?;
        want_errno(
            c.pin(va, a, kmod::PIN_PERSISTENT),
            libc::EOPNOTSUPP,
            "persistent PIN without the persistent API",
        )?;
        c.free(va)?;
        return Ok(Some("no persistent API: EOPNOTSUPP".into()));
    }
    let allocs = c.stats().map(|s| s.allocs);
    let va = c.alloc(2 * a)?;
    let p = call(c.pin(va, 2 * a, kmod::PIN_PERSISTENT), "persistent PIN")?;
    let m = call(c.map(&p, p.pinned_length), "mmap")?;
    let cbs = c.free(va)?;
    ensure!(
        cbs.unwrap_or(0) == 0,
        "no callback for a persistent pin (§1.10)",
        "{cbs:?}"
    );
    let e = call(c.gp.events(p.handle), "EVENTS")?;
    ensure!(
        e.state == kmod::STATE_PINNED && e.callbacks == 0,
        "still pinned, no callback",
        "state {}, {} callbacks",
        e.state,
        e.callbacks
    );
    if c.mem.prov().is_some() {
        // the provider keeps the pages; CUDA may reuse the VA, so only the provider's count
        check_pattern(&m, va, p.pinned_length)?;
        if let Some(s) = c.stats() {
            ensure!(
                s.persistent_pins == 1,
                "the provider keeps the persistent pin",
                "{} persistent pins",
                s.persistent_pins
            );
        }
    }
    drop(m);
    let u = unpin(c, p.handle, "UNPIN")?;
    ensure!(
        u.result == kmod::UNPIN_PUT && u.put_ret == 0,
        "put_pages_persistent released it",
        "result {}, put_ret {}",
        u.result,
        u.put_ret
    );
    if let (Some(before), Some(s)) = (allocs, c.stats()) {
        ensure!(
            s.allocs == before,
            "the freed allocation's pages released at unpin",
            "{} allocations, {} before",
            s.allocs,
            before
        );
    }
    Ok(None)
}

pub(super) fn revoked_on_free(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(2 * a)?;
    let p = call(c.pin(va, 2 * a, 0), "PIN")?;
    let m = call(c.map(&p, p.pinned_length), "mmap")?;
    ensure!(
        m.read(0) == Ok(testprov_pattern(va)),
        "the first word reads the pattern",
        "{:?}",
        m.read(0)
    );
    let cbs = c.free(va)?;
    ensure!(
        cbs.unwrap_or(1) == 1,
        "the free fires one callback (§2.3)",
        "{cbs:?}"
    );
    let e = call(c.gp.events(p.handle), "EVENTS")?;
    ensure!(
        e.state == kmod::STATE_REVOKED && e.callbacks == 1 && e.zaps == 1,
        "revoked, 1 callback, mapping torn down once",
        "state {}, {} callbacks, {} zaps",
        e.state,
        e.callbacks,
        e.zaps
    );
    ensure!(
        m.read(0).is_err(),
        "SIGBUS after revocation",
        "read {:?}",
        m.read(0)
    );
    ensure!(
        m.read(p.pinned_length as usize - 8).is_err(),
        "SIGBUS at the end too",
        "a read"
    );
    want_errno(
        c.gp.page_table(p.handle),
        libc::ESTALE,
        "PAGE_TABLE revoked",
    )?;
    want_errno(
        c.gp.mmap(p.mmap_offset, 4096, true),
        libc::ESTALE,
        "mmap revoked",
    )?;
    drop(m);
    let u = unpin(c, p.handle, "UNPIN revoked")?;
    ensure!(
        u.result == kmod::UNPIN_REVOKED && u.callbacks == 1 && u.put_ret == 0,
        "UNPIN_REVOKED without put_pages (§3.4)",
        "result {}, {} callbacks, put_ret {}",
        u.result,
        u.callbacks,
        u.put_ret
    );
    want_errno(c.gp.unpin(p.handle), libc::ENOENT, "second UNPIN")?;
    Ok(None)
}

pub(super) fn two_pins_one_revoked(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(a)?;
    let vb = c.alloc(a)?;
    let pa = call(c.pin(va, a, 0), "PIN a")?;
    let pb = call(c.pin(vb, a, 0), "PIN b")?;
    let mb = call(c.map(&pb, a), "mmap b")?;
    let cbs = c.free(va)?;
    ensure!(cbs.unwrap_or(1) == 1, "free a: one callback", "{cbs:?}");
    let e = call(c.gp.events(pa.handle), "EVENTS a")?;
    ensure!(
        e.state == kmod::STATE_REVOKED,
        "a revoked",
        "state {}",
        e.state
    );
    untouched(c, pb.handle, "EVENTS b", "b untouched")?;
    check_pattern(&mb, vb, a)?;
    drop(mb);
    let u = unpin(c, pa.handle, "UNPIN a")?;
    ensure!(
        u.result == kmod::UNPIN_REVOKED,
        "a: UNPIN_REVOKED",
        "{}",
        u.result
    );
    let u = unpin(c, pb.handle, "UNPIN b")?;
    let (result, _) = c.clean_unpin();
    ensure!(u.result == result, format!("b: {result}"), "{}", u.result);
    c.free(vb)?;
    Ok(None)
}

/// §4.3 vs §4.4.3: who fires the callback on put_pages.
pub(super) fn put_pages_callback_semantics(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(4 * a)?;
    let mut pins = Vec::new();
    for i in 0..4 {
        pins.push(call(c.pin(va + i * a, a, 0), "PIN")?);
    }
    let before = c.stats().map(|s| s.callbacks);
    let (result, cbs) = c.clean_unpin();
    for (i, p) in pins.iter().enumerate() {
        let u = unpin(c, p.handle, "UNPIN")?;
        ensure!(
            u.result == result && u.callbacks == cbs,
            format!("unpin {i}: result {result}, {cbs} callbacks"),
            "result {}, {} callbacks",
            u.result,
            u.callbacks
        );
    }
    if let (Some(b), Some(s)) = (before, c.stats()) {
        ensure!(
            s.callbacks - b == u64::from(4 * cbs),
            format!("the provider fired {} callbacks for 4 put_pages", 4 * cbs),
            "{}",
            s.callbacks - b
        );
    }
    let cbs = c.free(va)?;
    ensure!(
        cbs.unwrap_or(0) == 0,
        "no callback on free after unpin",
        "{cbs:?}"
    );
    Ok(None)
}

/// §1.10 (the R515–R535 crash): a free racing an unpin, thousands of rounds, put_pages
/// slowed every other round; each round's result must be consistent with the callbacks.
pub(super) fn revoke_races_unpin(c: &Ctx) -> Step<Option<String>> {
    let tp = c.tp()?;
    let iters: u32 = c
        .config
        .p2p_race_iters
        .as_deref()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(if c.tegra { 1000 } else { 3000 });
    let start = Barrier::new(2);
    let done = Barrier::new(2);
    let stop = AtomicBool::new(false);
    let va = std::sync::atomic::AtomicU64::new(0);
    let free_cbs = std::sync::atomic::AtomicI64::new(0);
    let (mut n_put, mut n_during, mut n_before) = (0u32, 0u32, 0u32);
    let outcome: Step<()> = std::thread::scope(|s| {
        s.spawn(|| {
            let mut round = 0u32;
            loop {
                start.wait();
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                // a varying head start for the unpin: the free lands before, inside, after
                for i in 0..(round % 32) * 400 {
                    std::hint::black_box(i);
                }
                round += 1;
                let r = tp.free(va.load(Ordering::SeqCst));
                free_cbs.store(r.map_or(-1, i64::from), Ordering::SeqCst);
                done.wait();
            }
        });
        let mut out = Ok(());
        for i in 0..iters {
            let step = (|| -> Step<()> {
                call(tp.inject(0, 0, if i & 1 == 1 { 20 } else { 0 }), "INJECT")?;
                let v = c.alloc(c.a)?;
                va.store(v, Ordering::SeqCst);
                let p = call(c.pin(v, c.a, 0), "PIN")?;
                start.wait();
                let u = c.gp.unpin(p.handle);
                done.wait();
                let u = call(u, &format!("round {i}: UNPIN"))?;
                let cbs = free_cbs.load(Ordering::SeqCst);
                ensure!(cbs >= 0, "the free succeeds", "round {i}: free failed");
                match u.result {
                    kmod::UNPIN_PUT => {
                        n_put += 1;
                        ensure!(
                            cbs == 0,
                            "put_pages won: the free fired no callback",
                            "round {i}: PUT but the free fired {cbs}"
                        );
                    }
                    kmod::UNPIN_REVOKED_DURING => n_during += 1,
                    kmod::UNPIN_REVOKED => n_before += 1,
                    r => {
                        return Err(CaseStatus::fail(
                            "an UNPIN_* result",
                            format!("round {i}: {r}"),
                        ))
                    }
                }
                if !c.tegra && u.result != kmod::UNPIN_PUT {
                    ensure!(
                        cbs == 1,
                        "revoked: the free fired the one callback",
                        "round {i}: result {} but the free fired {cbs}",
                        u.result
                    );
                }
                ensure!(
                    u.callbacks <= 1,
                    "at most one callback per registration",
                    "round {i}: {} callbacks",
                    u.callbacks
                );
                Ok(())
            })();
            if let Err(e) = step {
                // the freer may wait at `start`: let it go round once on a dead VA
                out = Err(e);
                break;
            }
        }
        stop.store(true, Ordering::SeqCst);
        start.wait();
        out
    });
    let _ = tp.inject(0, 0, 0);
    outcome?;
    let s = call(tp.stats(), "testprov STATS")?;
    ensure!(
        s.pins == 0 && s.allocs == 0,
        "nothing left after the rounds",
        "{} pins, {} allocations",
        s.pins,
        s.allocs
    );
    Ok(Some(format!(
        "{iters} rounds: put {n_put}, revoked during unpin {n_during}, revoked before {n_before}"
    )))
}

/// How the user thread of [`revoke_with_ioctls_in_flight`] saw the module diverge from "every
/// call succeeds or answers ESTALE" (gpudirect-rdma, the free callback).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum InFlightDivergence {
    #[error("no ESTALE after {0} calls")]
    NoEstale(u64),
    /// `call` is the ioctl (PAGE_TABLE, DMA_MAP, DMA_UNMAP).
    #[error("{call}: {errno}")]
    Call { call: &'static str, errno: Errno },
    #[error("the user thread panicked")]
    Panicked,
}

/// The callback waits for the module's own users of the pages: a thread loops PAGE_TABLE /
/// DMA_MAP / DMA_UNMAP while the memory is freed; every call succeeds or answers ESTALE.
pub(super) fn revoke_with_ioctls_in_flight(c: &Ctx) -> Step<Option<String>> {
    let peer = peer(c)?;
    let mut loops = 0u64;
    for round in 0..200u32 {
        let va = c.alloc(2 * c.a)?;
        let p = call(c.pin(va, 2 * c.a, 0), "PIN")?;
        let (gp, tegra) = (&c.gp, c.tegra);
        let (busy, cbs) = std::thread::scope(|s| {
            let user = s.spawn(move || -> Result<(u64, bool), InFlightDivergence> {
                let mut addrs = [0u64; 4];
                let mut calls = 0u64;
                let dir = if tegra { 1 } else { 0 };
                loop {
                    calls += 1;
                    if calls > 200_000 {
                        return Err(InFlightDivergence::NoEstale(calls));
                    }
                    match gp.page_table_addrs(p.handle, &mut addrs) {
                        Err(Errno(libc::ESTALE)) => return Ok((calls, true)),
                        Err(errno) => {
                            return Err(InFlightDivergence::Call {
                                call: "PAGE_TABLE",
                                errno,
                            })
                        }
                        Ok(_) => {}
                    }
                    match gp.dma_map(p.handle, peer, dir, Some(&mut addrs)) {
                        Err(Errno(libc::ESTALE)) => return Ok((calls, true)),
                        Err(errno) => {
                            return Err(InFlightDivergence::Call {
                                call: "DMA_MAP",
                                errno,
                            })
                        }
                        Ok(_) => {}
                    }
                    match gp.dma_unmap(p.handle) {
                        Err(Errno(libc::ESTALE)) => return Ok((calls, true)),
                        Err(errno) => {
                            return Err(InFlightDivergence::Call {
                                call: "DMA_UNMAP",
                                errno,
                            })
                        }
                        Ok(_) => {}
                    }
                }
            });
            std::thread::sleep(std::time::Duration::from_micros(
                50 + u64::from(round % 10) * 40,
            ));
            let cbs = c.free(va);
            let busy = user.join().unwrap_or(Err(InFlightDivergence::Panicked));
            (busy, cbs)
        });
        let cbs = cbs?;
        let (calls, _) = busy.map_err(|e| {
            CaseStatus::fail(
                "every call succeeds or answers ESTALE",
                format!("round {round}: {e}"),
            )
        })?;
        loops += calls;
        ensure!(
            cbs.unwrap_or(1) == 1,
            "one callback",
            "round {round}: {cbs:?}"
        );
        let u = unpin(c, p.handle, "UNPIN")?;
        ensure!(
            u.result == kmod::UNPIN_REVOKED,
            "UNPIN_REVOKED",
            "round {round}: {}",
            u.result
        );
    }
    if let Some(s) = c.stats() {
        ensure!(
            s.pins == 0 && s.dma_mappings == 0 && s.allocs == 0,
            "nothing left",
            "{} pins, {} DMA mappings, {} allocations",
            s.pins,
            s.dma_mappings,
            s.allocs
        );
    }
    Ok(Some(format!("200 rounds, {loops} ioctl loops")))
}
