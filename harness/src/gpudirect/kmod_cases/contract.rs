//! The driver's contract as the test provider models it: a NULL callback refused (gpudirect
//! §1.10), a freed VA not pinnable, overlapping pins sharing pages and released one at a time,
//! revocation when the owning context goes (§2.3).

use super::*;

/// §1.10: nvidia_p2p_get_pages no longer accepts a NULL callback pointer.
pub(super) fn get_pages_null_callback_refused(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let pins = call(tp.stats(), "testprov STATS")?.pins;
    let va = c.alloc(a)?;
    want_errno(
        c.pin(va, a, kmod::PIN_NO_CALLBACK),
        libc::EINVAL,
        "get_pages with a NULL callback",
    )?;
    let now = call(tp.stats(), "testprov STATS")?.pins;
    ensure!(
        now == pins,
        "nothing pinned by the refused call",
        "{now} pins, {pins} before"
    );
    want_errno(
        c.pin(va, a, kmod::PIN_NO_CALLBACK | kmod::PIN_PERSISTENT),
        libc::EINVAL,
        "NO_CALLBACK with PERSISTENT",
    )?;
    let p = call(c.pin(va, a, 0), "PIN with the callback")?;
    unpin(c, p.handle, "UNPIN")?;
    let cbs = c.free(va)?;
    ensure!(
        cbs == Some(0),
        "no callback on a free after unpin",
        "{cbs:?}"
    );
    Ok(None)
}

/// A freed allocation's VA is unmapped: get_pages refuses it with the provider's EINVAL.
pub(super) fn pin_of_freed_va_einval(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let pins = call(tp.stats(), "testprov STATS")?.pins;
    let va = c.alloc(2 * a)?;
    let cbs = c.free(va)?;
    ensure!(
        cbs == Some(0),
        "no callback for an unpinned allocation",
        "{cbs:?}"
    );
    want_errno(c.pin(va, 2 * a, 0), libc::EINVAL, "PIN of the freed VA")?;
    want_errno(c.pin(va + a, a, 0), libc::EINVAL, "PIN inside the freed VA")?;
    let now = call(tp.stats(), "testprov STATS")?.pins;
    ensure!(now == pins, "nothing pinned", "{now} pins, {pins} before");
    Ok(None)
}

/// Two pins over the same pages share them (the overlap is the same page in both page
/// tables); releasing the smaller leaves the larger intact, overlap included.
pub(super) fn overlapping_pins_partial_unpin(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let pins = call(tp.stats(), "testprov STATS")?.pins;
    let va = c.alloc(3 * a)?;
    let big = call(c.pin(va, 3 * a, 0), "PIN of 3 pages")?;
    let small = call(c.pin(va + a, a, 0), "PIN of the middle page")?;
    let mut pa = [0u64; 3];
    let mut pb = [0u64; 1];
    let ta = call(c.gp.page_table_addrs(big.handle, &mut pa), "PAGE_TABLE big")?;
    let tb = call(
        c.gp.page_table_addrs(small.handle, &mut pb),
        "PAGE_TABLE small",
    )?;
    ensure!(
        ta.entries == 3 && tb.entries == 1,
        "3 and 1 entries",
        "{} and {}",
        ta.entries,
        tb.entries
    );
    ensure!(
        pb[0] == pa[1],
        "the overlap is the same page in both tables",
        "{:#x} vs {:#x}",
        pb[0],
        pa[1]
    );
    let m = call(c.map(&big, big.pinned_length), "mmap")?;
    let u = unpin(c, small.handle, "UNPIN of the middle page")?;
    let (want_result, want_cbs) = c.clean_unpin();
    ensure!(
        u.result == want_result && u.callbacks == want_cbs,
        "the small pin released on its own (§4.3; Tegra: its own callback, §4.4.3)",
        "result {}, {} callbacks",
        u.result,
        u.callbacks
    );
    untouched(c, big.handle, "EVENTS big", "the big pin untouched")?;
    let now = call(tp.stats(), "testprov STATS")?.pins;
    ensure!(now == pins + 1, "one pin left", "{now} pins, {pins} before");
    check_pattern(&m, va, 3 * a)?;
    drop(m);
    unpin(c, big.handle, "UNPIN of 3 pages")?;
    c.free(va)?;
    Ok(None)
}

/// §2.3: the callback runs when the owning context goes (cuCtxDestroy), not only on
/// cuMemFree. The provider's context is an open `/dev/gpucts_testprov`.
pub(super) fn revoked_on_context_destroy(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let allocs = call(tp.stats(), "testprov STATS")?.allocs;
    let ctx2 = TestProv::open().map_err(CaseStatus::error)?;
    let va = call(ctx2.alloc(a), "ALLOC in the second context")?.va;
    let vb = call(ctx2.alloc(a), "second ALLOC in the second context")?.va;
    let p = call(c.pin(va, a, 0), "PIN a")?;
    let q = call(c.pin(vb, a, 0), "PIN b")?;
    let m = call(c.map(&p, p.pinned_length), "mmap")?;
    ensure!(
        m.read(0) == Ok(testprov_pattern(va)),
        "the first word reads the pattern",
        "{:?}",
        m.read(0)
    );
    drop(ctx2); // the context goes, with both allocations
    let e = call(c.gp.events(p.handle), "EVENTS a")?;
    ensure!(
        e.state == kmod::STATE_REVOKED && e.callbacks == 1 && e.zaps == 1,
        "a revoked once, its mapping torn down",
        "state {}, {} callbacks, {} zaps",
        e.state,
        e.callbacks,
        e.zaps
    );
    let e = call(c.gp.events(q.handle), "EVENTS b")?;
    ensure!(
        e.state == kmod::STATE_REVOKED && e.callbacks == 1,
        "b revoked once",
        "state {}, {} callbacks",
        e.state,
        e.callbacks
    );
    ensure!(
        m.read(0) == Err(kmod::Sigbus),
        "SIGBUS through the torn-down mapping",
        "{:?}",
        m.read(0)
    );
    drop(m);
    for (h, n) in [(p.handle, "a"), (q.handle, "b")] {
        let u = unpin(c, h, &format!("UNPIN {n}"))?;
        ensure!(
            u.result == kmod::UNPIN_REVOKED,
            "UNPIN_REVOKED",
            "{n}: result {}",
            u.result
        );
    }
    let now = call(tp.stats(), "testprov STATS")?.allocs;
    ensure!(
        now == allocs,
        "the context's pages released",
        "{now} allocations, {allocs} before"
    );
    Ok(None)
}

/// §2.6: "When no tokens are used, the NVIDIA driver limits the Kernel API to the process
/// which owns the memory allocation": another process, with its own descriptor, gets the
/// driver's EINVAL (the range is not in its VA space); the owner pins.
pub(super) fn pin_without_tokens_owner_only(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let pins = call(tp.stats(), "testprov STATS")?.pins;
    let va = c.alloc(a)?;
    let st = fork_wait(|| {
        let Ok(fd) = open_gp_raw() else { return 1 };
        let gp = Device::from_fd(fd);
        match gp.pin(va, a, 0) {
            Err(Errno(libc::EINVAL)) => 0,
            _ => 2,
        }
    })?;
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "another process's PIN without tokens: EINVAL",
        "child: {} (1: open, 2: not EINVAL)",
        describe_wait(st)
    );
    let now = call(tp.stats(), "testprov STATS")?.pins;
    ensure!(
        now == pins,
        "nothing pinned for the other process",
        "{now} pins, {pins} before"
    );
    let p = call(c.pin(va, a, 0), "the owner's PIN")?;
    unpin(c, p.handle, "the owner's UNPIN")?;
    c.free(va)?;
    Ok(None)
}

/// §2.6: with the allocation's tokens any process may pin ("doesn't perform any additional
/// checks"); with other tokens nobody may. Tegra's API has no tokens (§4.4.2): refused.
pub(super) fn pin_with_tokens_must_match(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let pins = call(tp.stats(), "testprov STATS")?.pins;
    let va = c.alloc(2 * a)?;
    let tk = call(tp.tokens(va), "testprov TOKENS")?;
    ensure!(
        tk.p2p_token != 0 && tk.va_space_token != 0,
        "non-zero tokens",
        "{:#x}/{}",
        tk.p2p_token,
        tk.va_space_token
    );
    if c.tegra {
        want_errno(
            c.gp.pin_tokens(va, a, tk.p2p_token, tk.va_space_token),
            libc::EINVAL,
            "PIN with tokens on Tegra",
        )?;
        c.free(va)?;
        return Ok(Some("Tegra: no tokens API".into()));
    }
    want_errno(
        c.gp.pin_tokens(va, a, tk.p2p_token ^ 1, tk.va_space_token),
        libc::EINVAL,
        "PIN with a wrong p2p_token",
    )?;
    want_errno(
        c.gp.pin_tokens(va, a, tk.p2p_token, tk.va_space_token + 1),
        libc::EINVAL,
        "PIN with a wrong va_space_token",
    )?;
    let st = fork_wait(|| {
        let Ok(fd) = open_gp_raw() else { return 1 };
        let gp = Device::from_fd(fd);
        let Ok(q) = gp.pin_tokens(va, 2 * a, tk.p2p_token, tk.va_space_token) else {
            return 2;
        };
        match gp.page_table(q.handle) {
            Ok(t) if t.entries == 2 => {}
            _ => return 3,
        }
        match gp.unpin(q.handle) {
            Ok(u) if u.result == kmod::UNPIN_PUT => 0,
            _ => 4,
        }
    })?;
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "another process pins with the tokens, reads 2 entries, unpins",
        "child: {} (2: PIN, 3: PAGE_TABLE, 4: UNPIN)",
        describe_wait(st)
    );
    let now = call(tp.stats(), "testprov STATS")?.pins;
    ensure!(
        now == pins,
        "nothing left pinned",
        "{now} pins, {pins} before"
    );
    c.free(va)?;
    Ok(None)
}

/// §2.3: "The corresponding mapped memory areas will only be unmapped by the NVIDIA driver
/// after returning from the callback": the module's callback reads the first pinned word
/// and finds it as it was at pin time (`EV_CB_SAW_PAGES`).
pub(super) fn unmap_only_after_callback_returns(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    c.tp()?;
    let va = c.alloc(2 * a)?;
    let p = call(c.pin(va, a, 0), "PIN")?;
    let q = call(c.pin(va + a, a, 0), "PIN 2")?;
    let e = call(c.gp.events(p.handle), "EVENTS before")?;
    ensure!(
        e.flags & kmod::EV_CB_SAW_PAGES == 0,
        "no flag before a callback",
        "flags {:#x}",
        e.flags
    );
    let cbs = c.free(va)?;
    ensure!(cbs == Some(2), "2 callbacks", "{cbs:?}");
    for (h, n) in [(p.handle, "first"), (q.handle, "second")] {
        let e = call(c.gp.events(h), "EVENTS")?;
        ensure!(
            e.state == kmod::STATE_REVOKED
                && e.callbacks == 1
                && e.flags & kmod::EV_CB_SAW_PAGES != 0,
            "revoked once, the callback saw the pinned word",
            "{n}: state {}, {} callbacks, flags {:#x}",
            e.state,
            e.callbacks,
            e.flags
        );
        let u = unpin(c, h, "UNPIN")?;
        ensure!(
            u.result == kmod::UNPIN_REVOKED,
            "UNPIN_REVOKED",
            "{n}: {}",
            u.result
        );
    }
    Ok(None)
}

/// NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE (§4.3, the header's macros): the same major with
/// a newer minor is used; an older minor is refused and no other field is read.
pub(super) fn page_table_minor_version_injection(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let va = c.alloc(a)?;
    let newer = kmod::TpMode {
        pt_version: 0x0001_0003,
        ..Default::default()
    };
    call(tp.mode(newer), "testprov MODE")?;
    let r = (|| {
        let p = call(c.pin(va, a, 0), "PIN with minor 3")?;
        let t = call(c.gp.page_table(p.handle), "PAGE_TABLE")?;
        ensure!(
            t.version == 0x0001_0003 && t.compatible == 1 && t.entries == 1,
            "version 0x10003 compatible, 1 entry",
            "version {:#x}, compatible {}, {} entries",
            t.version,
            t.compatible,
            t.entries
        );
        let m = call(c.map(&p, a), "mmap")?;
        check_pattern(&m, va, a)?;
        drop(m);
        unpin(c, p.handle, "UNPIN")?;
        call(
            tp.mode(kmod::TpMode {
                pt_version: 0x0001_0001,
                ..Default::default()
            }),
            "testprov MODE",
        )?;
        let p = call(c.pin(va, a, 0), "PIN with minor 1")?;
        let t = call(c.gp.page_table(p.handle), "PAGE_TABLE")?;
        let e = call(c.gp.events(p.handle), "EVENTS")?;
        let mm = c.map(&p, a).err();
        unpin(c, p.handle, "UNPIN")?;
        ensure!(
            t.compatible == 0 && t.entries == 0 && e.flags & kmod::EV_INCOMPATIBLE != 0,
            "minor 1 incompatible, no field read",
            "compatible {}, {} entries, flags {:#x}",
            t.compatible,
            t.entries,
            e.flags
        );
        ensure!(mm == Some(Errno(libc::EPROTO)), "mmap EPROTO", "{mm:?}");
        Ok(())
    })();
    call(tp.mode(kmod::TpMode::default()), "testprov MODE reset")?;
    r?;
    c.free(va)?;
    Ok(None)
}

/// NVIDIA_P2P_DMA_MAPPING_VERSION_COMPATIBLE: a newer minor is used; another major or an
/// older minor is refused with EPROTO and the mapping given back.
pub(super) fn dma_mapping_version_injection(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let peer = super::dma::peer(c)?;
    let va = c.alloc(a)?;
    let p = call(c.pin(va, a, 0), "PIN")?;
    let mode = |v| kmod::TpMode {
        dma_version: v,
        ..Default::default()
    };
    let r = (|| {
        call(tp.mode(mode(0x0002_0004)), "testprov MODE")?;
        let d = call(c.gp.dma_map(p.handle, peer, 0, None), "DMA_MAP minor 4")?;
        ensure!(
            d.version == 0x0002_0004 && d.compatible == 1 && d.entries == 1,
            "minor 4 compatible, 1 entry",
            "version {:#x}, compatible {}, {} entries",
            d.version,
            d.compatible,
            d.entries
        );
        call(c.gp.dma_unmap(p.handle), "DMA_UNMAP")?;
        for v in [0x0003_0003u32, 0x0001_0003, 0x0002_0002] {
            call(tp.mode(mode(v)), "testprov MODE")?;
            want_errno(
                c.gp.dma_map(p.handle, peer, 0, None),
                libc::EPROTO,
                &format!("DMA_MAP of version {v:#x}"),
            )?;
            let s = call(tp.stats(), "testprov STATS")?;
            let e = call(c.gp.events(p.handle), "EVENTS")?;
            ensure!(
                s.dma_mappings == 0 && e.flags & kmod::EV_DMA_MAPPED == 0,
                "the refused mapping given back",
                "version {v:#x}: {} mappings, flags {:#x}",
                s.dma_mappings,
                e.flags
            );
        }
        Ok(())
    })();
    call(tp.mode(kmod::TpMode::default()), "testprov MODE reset")?;
    r?;
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(None)
}
