//! Pinning and reading pinned memory: the version handshake, pin sizes and alignment, the
//! page table, and CPU access through a mapping (gpudirect §3.2, §4.4.3).

use super::*;

pub(super) fn get_version(c: &Ctx) -> Step<Option<String>> {
    let v = call(c.gp.version(), "GET_VERSION")?;
    ensure!(
        v.major == kmod::VERSION_MAJOR,
        format!("major {}", kmod::VERSION_MAJOR),
        "major {}",
        v.major
    );
    let want_flavour = if c.tegra {
        kmod::FLAVOUR_TEGRA
    } else {
        kmod::FLAVOUR_DESKTOP
    };
    ensure!(
        v.flavour == want_flavour,
        format!("flavour {want_flavour}"),
        "flavour {}",
        v.flavour
    );
    ensure!(
        v.pin_align == c.a,
        format!("pin_align {} (gpudirect §3.2 / §4.4.3)", c.a),
        "pin_align {}",
        v.pin_align
    );
    // §4.4.2: the Tegra API has no persistent variant
    if c.tegra {
        ensure!(
            v.caps & kmod::CAP_PERSISTENT == 0,
            "no persistent API on Tegra",
            "caps {:#x}",
            v.caps
        );
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        ensure!(
            v.caps & kmod::CAP_ADDRESSES != 0,
            "CAP_ADDRESSES for root",
            "caps {:#x}",
            v.caps
        );
    }
    Ok(Some(format!(
        "UAPI {}.{}, {} flavour, caps {:#x}",
        v.major,
        v.minor,
        if c.tegra { "tegra" } else { "desktop" },
        v.caps
    )))
}

pub(super) fn pin_unpin_aligned(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(4 * a)?;
    let p = call(c.pin(va + a, 2 * a, 0), "PIN")?;
    ensure!(p.handle != 0, "a non-zero handle", "handle 0");
    ensure!(
        p.pinned_va == va + a && p.pinned_length == 2 * a,
        "an aligned range unchanged",
        "{:#x}+{}",
        p.pinned_va,
        p.pinned_length
    );
    if let Some(s) = c.stats() {
        ensure!(s.pins == 1, "the provider holds 1 pin", "{} pins", s.pins);
    }
    let u = unpin(c, p.handle, "UNPIN")?;
    let (result, cbs) = c.clean_unpin();
    ensure!(
        u.result == result && u.callbacks == cbs && u.put_ret == 0,
        format!("result {result}, {cbs} callbacks, put_pages 0 (§4.3/§4.4.3)"),
        "result {}, {} callbacks, put_pages {}",
        u.result,
        u.callbacks,
        u.put_ret
    );
    if let Some(s) = c.stats() {
        ensure!(s.pins == 0, "the provider holds no pin", "{} pins", s.pins);
    }
    want_errno(c.gp.unpin(p.handle), libc::ENOENT, "second UNPIN")?;
    let cbs = c.free(va)?;
    ensure!(
        cbs.unwrap_or(0) == 0,
        "no callback on free after unpin",
        "{cbs:?}"
    );
    Ok(None)
}

pub(super) fn pin_unaligned_rounded(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(4 * a)?;
    // §3.2: inside one GPU page pins the whole page
    let p = call(c.pin(va + 100, 200, 0), "PIN inside a page")?;
    ensure!(
        p.pinned_va == va && p.pinned_length == a,
        format!("{va:#x}+{a}"),
        "{:#x}+{}",
        p.pinned_va,
        p.pinned_length
    );
    unpin(c, p.handle, "UNPIN")?;
    // 16 bytes straddling a boundary: two pages
    let p = call(c.pin(va + a - 8, 16, 0), "PIN straddling")?;
    ensure!(
        p.pinned_va == va && p.pinned_length == 2 * a,
        format!("{va:#x}+{}", 2 * a),
        "{:#x}+{}",
        p.pinned_va,
        p.pinned_length
    );
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(None)
}

/// Every size class (1 B, around 4 KB, around the GPU page, MB, 32 MB) at every offset class
/// (aligned, 1, 8, 4 KB +/- 1, half and one short of a GPU page): the pinned range is the
/// request rounded out to the GPU page (§3.2, §3.5), the page table covers it, unpin is clean.
pub(super) fn pin_size_classes(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let mb = 1u64 << 20;
    let sizes = [
        1,
        8,
        4095,
        4096,
        4097,
        a - 1,
        a,
        a + 1,
        2 * a - 1,
        mb,
        mb + 4096 + 1,
        2 * mb,
        16 * mb,
        32 * mb,
    ];
    let offsets = [0, 1, 8, 4095, 4096, a / 2, a - 1];
    let span = 32 * mb + 2 * a;
    let base = c.alloc(span)?;
    let (result, cbs) = c.clean_unpin();
    let mut n = 0;
    for &size in &sizes {
        for &off in &offsets {
            if a + off + size > span {
                continue;
            }
            let va = base + a + off;
            let start = va & !(a - 1);
            let end = (va + size + a - 1) & !(a - 1);
            let what = format!("{size} B at offset {off}");
            let p = call(c.pin(va, size, 0), &format!("PIN {what}"))?;
            let t = c.gp.page_table(p.handle);
            let u = unpin(c, p.handle, &format!("UNPIN {what}"))?;
            let t = call(t, &format!("PAGE_TABLE {what}"))?;
            ensure!(
                p.pinned_va == start && p.pinned_length == end - start,
                format!("{what}: {start:#x}+{}", end - start),
                "{:#x}+{}",
                p.pinned_va,
                p.pinned_length
            );
            ensure!(
                t.page_size == a && u64::from(t.entries) == (end - start) / a,
                format!("{what}: {} entries of {a} bytes", (end - start) / a),
                "{} entries of {} bytes",
                t.entries,
                t.page_size
            );
            ensure!(
                u.result == result && u.callbacks == cbs,
                format!("{what}: unpin result {result}, {cbs} callbacks"),
                "result {}, {} callbacks",
                u.result,
                u.callbacks
            );
            n += 1;
        }
    }
    if let Some(s) = c.stats() {
        ensure!(s.pins == 0, "no pin left", "{} pins", s.pins);
    }
    c.free(base)?;
    Ok(Some(format!("{n} size/offset pairs")))
}

pub(super) fn pin_zero_length(c: &Ctx) -> Step<Option<String>> {
    let va = c.alloc(c.a)?;
    want_errno(c.pin(va, 0, 0), libc::EINVAL, "PIN length 0")?;
    want_errno(
        c.pin(va, 0, kmod::PIN_EXACT),
        libc::EINVAL,
        "PIN length 0 exact",
    )?;
    if let Some(s) = c.stats() {
        ensure!(s.pins == 0, "no pin made", "{} pins", s.pins);
    }
    c.free(va)?;
    Ok(None)
}

pub(super) fn provider_rejects_unaligned(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(4 * a)?;
    // §3.2: get_pages wants GPU-page-aligned ranges; PIN_EXACT passes the request through
    want_errno(
        c.pin(va + 512, a, kmod::PIN_EXACT),
        libc::EINVAL,
        "exact PIN, unaligned start",
    )?;
    want_errno(
        c.pin(va, a + 512, kmod::PIN_EXACT),
        libc::EINVAL,
        "exact PIN, unaligned length",
    )?;
    let p = call(c.pin(va, a, kmod::PIN_EXACT), "exact PIN, aligned")?;
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(None)
}

pub(super) fn page_table(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let (va, uuid) = c.mem.alloc(4 * a, a)?;
    let p = call(c.pin(va, 3 * a, 0), "PIN")?;
    let mut addrs = [0u64; 8];
    let t = call(c.gp.page_table_addrs(p.handle, &mut addrs), "PAGE_TABLE")?;
    ensure!(
        t.compatible == 1,
        "NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE",
        "version {:#x} not compatible",
        t.version
    );
    let want_type = if c.tegra {
        kmod::PAGE_SIZE_4KB
    } else {
        kmod::PAGE_SIZE_64KB
    };
    ensure!(
        t.page_size_type == want_type && t.page_size == a,
        format!("page size type {want_type}, {a} bytes"),
        "type {}, {} bytes",
        t.page_size_type,
        t.page_size
    );
    ensure!(t.entries == 3, "3 entries", "{} entries", t.entries);
    ensure!(
        t.gpu_uuid == uuid,
        "the allocating GPU's UUID",
        "{:02x?} (GPU {:02x?})",
        t.gpu_uuid,
        uuid
    );
    for i in 0..3 {
        ensure!(
            addrs[i] != 0 && addrs[i] % a == 0,
            "non-zero page-aligned physical addresses",
            "address {i}: {:#x}",
            addrs[i]
        );
        for j in 0..i {
            ensure!(
                addrs[i] != addrs[j],
                "distinct pages",
                "pages {i} and {j} share {:#x}",
                addrs[i]
            );
        }
    }
    ensure!(
        addrs[3] == 0,
        "nothing written past entries",
        "{:#x}",
        addrs[3]
    );
    // a short array gets what fits; entries still tells the total
    let mut short = [0u64; 2];
    let t2 = call(
        c.gp.page_table_addrs(p.handle, &mut short[..1]),
        "PAGE_TABLE short",
    )?;
    ensure!(
        t2.entries == 3 && short[0] == addrs[0] && short[1] == 0,
        "3 entries, one address copied",
        "{} entries, {:#x?}",
        t2.entries,
        short
    );
    let mut bad = kmod::PageTable {
        handle: p.handle,
        addrs_ptr: 8,
        addrs_count: 8,
        ..Default::default()
    };
    want_errno(
        // SAFETY: address 8 is never mapped; the module must answer EFAULT without writing.
        unsafe { c.gp.page_table_raw(&mut bad) },
        libc::EFAULT,
        "PAGE_TABLE to address 8",
    )?;
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(Some(format!("version {:#x}", t.version)))
}

pub(super) fn mmap_cpu_access(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(4 * a)?;
    let p = call(c.pin(va + a, 2 * a, 0), "PIN")?;
    let m = call(c.map(&p, p.pinned_length), "mmap")?;
    check_pattern(&m, p.pinned_va, p.pinned_length)?;
    let word = 0x1122_3344_5566_7788;
    ensure!(m.write(24, word).is_ok(), "a write lands", "SIGBUS");
    ensure!(
        m.read(24) == Ok(word),
        "the write reads back",
        "{:?}",
        m.read(24)
    );
    // header: len > pinned_length, a private mapping, an offset inside the range: EINVAL
    want_errno(
        c.gp.mmap(p.mmap_offset, (p.pinned_length + 4096) as usize, true),
        libc::EINVAL,
        "mmap longer than the pin",
    )?;
    want_errno(
        c.gp.mmap(p.mmap_offset, 4096, false),
        libc::EINVAL,
        "private mmap",
    )?;
    want_errno(
        c.gp.mmap(p.mmap_offset + 4096, 4096, true),
        libc::EINVAL,
        "mmap inside the offset range",
    )?;
    drop(m);
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(None)
}
