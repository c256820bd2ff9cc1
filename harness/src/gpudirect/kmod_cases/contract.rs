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
