//! Field bugs of GPUDirect third-party modules as regressions, each named after what happened,
//! and gdrcopy's sanity classes the other cases do not already cover (fd passing, a child
//! thread). kmod/README.md maps every gdrcopy class to its case.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::*;

/// get_pages racing a free of the VA range (a double free in the open driver): the provider
/// sleeps in get_pages holding the allocation; a free in that window makes get_pages fail
/// with EINVAL, a later one revokes the pin. The allocation goes exactly once either way.
pub(super) fn get_pages_races_free_of_va(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let allocs = call(tp.stats(), "testprov STATS")?.allocs;
    call(
        tp.mode(kmod::TpMode {
            get_delay_us: 3000,
            ..Default::default()
        }),
        "testprov MODE",
    )?;
    let (mut refused, mut revoked) = (0, 0);
    let r = (|| {
        for i in 0..40u64 {
            let va = c.alloc(a)?;
            let delay = std::time::Duration::from_micros((i * 1531) % 6000);
            let (pin, freed) = std::thread::scope(|s| {
                let t = s.spawn(|| {
                    std::thread::sleep(delay);
                    tp.free(va)
                });
                let pin = c.pin(va, a, 0);
                (pin, t.join())
            });
            call(
                freed.map_err(|_| Errno(libc::EIO)).and_then(|f| f),
                "testprov FREE",
            )?;
            match pin {
                Err(Errno(libc::EINVAL)) => refused += 1,
                Err(e) => return Err(CaseStatus::fail("PIN succeeds or EINVAL", format!("{e}"))),
                Ok(p) => {
                    let e = call(c.gp.events(p.handle), "EVENTS")?;
                    unpin(c, p.handle, "UNPIN")?;
                    ensure!(
                        e.state == kmod::STATE_REVOKED && e.callbacks == 1,
                        "a pin of a range freed afterwards is revoked once",
                        "round {i}: state {}, {} callbacks",
                        e.state,
                        e.callbacks
                    );
                    revoked += 1;
                }
            }
        }
        Ok(())
    })();
    call(tp.mode(kmod::TpMode::default()), "testprov MODE reset")?;
    r?;
    ensure!(
        refused > 0,
        "a free during get_pages at least once",
        "0 refused, {revoked} revoked"
    );
    let now = call(tp.stats(), "testprov STATS")?.allocs;
    ensure!(
        now == allocs,
        "every allocation released once",
        "{now} allocations, {allocs} before"
    );
    Ok(Some(format!("{refused} refused, {revoked} revoked of 40")))
}

/// nvidia-peermem's "detected invalid context": drivers before R560 could call the callback
/// of a registration that had ended. The provider calls an unpinned pin's callback again at
/// the next get_pages; the module touches nothing and counts it.
pub(super) fn stray_callback_invalid_context_ignored(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let va = c.alloc(2 * a)?;
    let before = call(c.gp.stats(), "STATS")?.stray_callbacks;
    call(
        tp.mode(kmod::TpMode {
            stray_callbacks: 1,
            ..Default::default()
        }),
        "testprov MODE",
    )?;
    let r = (|| {
        let p = call(c.pin(va, a, 0), "PIN")?;
        unpin(c, p.handle, "UNPIN")?;
        call(c.pin(va + a, a, 0), "the next PIN")
    })();
    call(tp.mode(kmod::TpMode::default()), "testprov MODE reset")?;
    let q = r?;
    let after = call(c.gp.stats(), "STATS")?.stray_callbacks;
    untouched(c, q.handle, "EVENTS", "the live pin untouched")?;
    unpin(c, q.handle, "UNPIN")?;
    c.free(va)?;
    ensure!(
        after == before + 1,
        "one stray callback counted",
        "{after}, {before} before"
    );
    Ok(None)
}

/// Lock inversion between invalidation (the callback, under the driver's locks, §2.3) and
/// teardown (close and munmap, which call put_pages): both race for 300 rounds. A deadlock
/// hangs the case until the runner's timeout.
pub(super) fn invalidation_races_teardown(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let tp = c.tp()?;
    let pins = call(tp.stats(), "testprov STATS")?.pins;
    for i in 0..300u64 {
        let va = c.alloc(a)?;
        let fd = Device::open().map_err(CaseStatus::error)?;
        let p = call(fd.pin(va, a, 0), "PIN")?;
        let m = call(fd.mmap(p.mmap_offset, a as usize, true), "mmap")?;
        let freed = std::thread::scope(|s| {
            let t = s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_micros(i % 7));
                tp.free(va)
            });
            drop(m);
            drop(fd);
            t.join()
        });
        call(
            freed.map_err(|_| Errno(libc::EIO)).and_then(|f| f),
            "testprov FREE",
        )?;
    }
    let now = call(tp.stats(), "testprov STATS")?.pins;
    ensure!(now == pins, "no pin left", "{now} pins, {pins} before");
    Ok(None)
}

/// Close without unmap: the descriptor closed with a DMA mapping and a CPU mapping, never
/// DMA_UNMAP or UNPIN; the release at the last munmap unmaps for the peer before put_pages
/// (the provider counts the other order as a violation, which the runner checks).
pub(super) fn close_without_unmap(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let peer = super::dma::peer(c)?;
    let va = c.alloc(a)?;
    let fd = Device::open().map_err(CaseStatus::error)?;
    let p = call(fd.pin(va, a, 0), "PIN")?;
    call(fd.dma_map(p.handle, peer, 0, None), "DMA_MAP")?;
    let m = call(fd.mmap(p.mmap_offset, a as usize, true), "mmap")?;
    drop(fd);
    ensure!(
        m.read(0) == Ok(testprov_pattern(va)),
        "the mapping reads after close",
        "{:?}",
        m.read(0)
    );
    if let Some(s) = c.stats() {
        ensure!(
            s.pins >= 1 && s.dma_mappings >= 1,
            "pin and DMA mapping kept while mapped",
            "{} pins, {} mappings",
            s.pins,
            s.dma_mappings
        );
    }
    drop(m); // the release: dma_unmap_pages, then put_pages
    c.free(va)?;
    Ok(None)
}

/// The Grace-Hopper failure, length 0x10008 on 64 KiB pages: the module pins whole GPU pages
/// (§3.2: 0x20000 on the desktop's 64 KB pages; §4.4.3: 0x11000 on Tegra's 4 KB), whole host
/// pages too; the exact length reaches the driver only with PIN_EXACT, which refuses it.
pub(super) fn unaligned_length_0x10008_on_64k_pages(c: &Ctx) -> Step<Option<String>> {
    let len = 0x10008u64;
    let want = if c.tegra { 0x11000 } else { 0x20000 };
    let va = c.mem.alloc(2 * 0x10000, 0x10000)?.0;
    if c.mem.prov().is_some() {
        want_errno(
            c.pin(va, len, kmod::PIN_EXACT),
            libc::EINVAL,
            "PIN_EXACT of 0x10008",
        )?;
    }
    let p = call(c.pin(va, len, 0), "PIN of 0x10008")?;
    // SAFETY: sysconf has no preconditions.
    let host = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    let t = call(c.gp.page_table(p.handle), "PAGE_TABLE")?;
    let m = call(c.map(&p, p.pinned_length), "mmap")?;
    let last = m.read(0x10000);
    drop(m);
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    ensure!(
        p.pinned_va == va && p.pinned_length == want && want % host == 0,
        format!("{want:#x} pinned at the VA, whole {host}-byte host pages"),
        "{:#x}+{:#x}",
        p.pinned_va,
        p.pinned_length
    );
    ensure!(
        u64::from(t.entries) * t.page_size == want && t.page_size == c.a,
        "entries of the flavour's GPU page",
        "{} entries of {}",
        t.entries,
        t.page_size
    );
    ensure!(
        last == Ok(testprov_pattern(va + 0x10000)),
        "the word at +0x10000 (in the asked range) reads",
        "{last:?}"
    );
    Ok(None)
}

fn send_fd(sock: i32, fd: i32) -> bool {
    let mut byte = [b'x'];
    // SAFETY: a control buffer of CMSG_SPACE(int) bytes holding one SCM_RIGHTS message, all
    // on this stack frame, passed to sendmsg.
    unsafe {
        let space = libc::CMSG_SPACE(std::mem::size_of::<i32>() as u32) as usize;
        let mut cbuf = vec![0u8; space];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr() as *mut libc::c_void,
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space as _;
        let cm = libc::CMSG_FIRSTHDR(&msg);
        (*cm).cmsg_level = libc::SOL_SOCKET;
        (*cm).cmsg_type = libc::SCM_RIGHTS;
        (*cm).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<i32>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cm) as *mut i32, fd);
        libc::sendmsg(sock, &msg, 0) == 1
    }
}

/// The descriptor received over the socket, or -1 (system calls only: safe after fork).
fn recv_fd(sock: i32) -> i32 {
    let mut byte = [0u8];
    let mut cbuf = [0u64; 8]; // CMSG_SPACE(int) is 24 on 64-bit Linux
                              // SAFETY: recvmsg into a control buffer on this stack frame; the descriptor is read from
                              // the first message only if the kernel says it is SCM_RIGHTS.
    unsafe {
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr() as *mut libc::c_void,
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        if libc::recvmsg(sock, &mut msg, 0) != 1 {
            return -1;
        }
        let cm = libc::CMSG_FIRSTHDR(&msg);
        if cm.is_null() || (*cm).cmsg_type != libc::SCM_RIGHTS {
            return -1;
        }
        std::ptr::read_unaligned(libc::CMSG_DATA(cm) as *const i32)
    }
}

/// gdrcopy's "fd passing" class: a descriptor sent to another process carries the handles,
/// not the right to use them (§3.3); the pin stays untouched and the free still revokes it.
pub(super) fn fd_passing_handles_stay_with_pinner(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(a)?;
    let p = call(c.pin(va, a, 0), "PIN")?;
    let mut sv = [0i32; 2];
    // SAFETY: socketpair writes two descriptors into `sv`.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) } != 0 {
        return Err(CaseStatus::error("socketpair failed"));
    }
    // SAFETY: fresh descriptors nobody else owns.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
    let handle = p.handle;
    let offset = p.mmap_offset;
    let gp_fd = c.gp.fd();
    let st = std::thread::scope(|s| {
        let sender = s.spawn(|| send_fd(ours.as_raw_fd(), gp_fd));
        let st = fork_wait(|| {
            // SAFETY: closing the inherited copy, so only the received descriptor is used.
            unsafe { libc::close(gp_fd) };
            let fd = recv_fd(theirs.as_raw_fd());
            if fd < 0 {
                return 1;
            }
            // SAFETY: the received descriptor is this child's.
            let gp = Device::from_fd(unsafe { OwnedFd::from_raw_fd(fd) });
            if gp.events(handle).err() != Some(Errno(libc::EACCES)) {
                return 2;
            }
            if gp.unpin(handle).err() != Some(Errno(libc::EACCES)) {
                return 3;
            }
            match gp.mmap(offset, 4096, true) {
                Err(Errno(libc::EACCES)) => 0,
                _ => 4,
            }
        });
        let sent = sender.join().unwrap_or(false);
        (st, sent)
    });
    let (st, sent) = (st.0?, st.1);
    ensure!(sent, "the descriptor sent", "sendmsg failed");
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "EACCES for EVENTS, UNPIN, mmap through the passed descriptor",
        "child: {} (1: recvmsg; else the first call that did not get EACCES)",
        describe_wait(st)
    );
    untouched(c, p.handle, "EVENTS", "the pin untouched by the receiver")?;
    let cbs = c.free(va)?;
    ensure!(cbs.unwrap_or(1) == 1, "the free revokes it", "{cbs:?}");
    let u = unpin(c, p.handle, "UNPIN")?;
    let want = if c.mem.prov().is_some() {
        kmod::UNPIN_REVOKED
    } else {
        u.result
    };
    ensure!(u.result == want, "UNPIN_REVOKED", "{}", u.result);
    Ok(None)
}

/// gdrcopy's "child thread" class: the process, not the thread, owns a pin (§3.3 "the same
/// process context"): a thread pins, the main thread reads through a mapping, another thread
/// unpins.
pub(super) fn child_thread_pins_and_unpins(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(a)?;
    let gp = &c.gp;
    let p = std::thread::scope(|s| s.spawn(move || gp.pin(va, a, 0)).join())
        .map_err(|_| CaseStatus::error("the pinning thread panicked"))?;
    let p = call(p, "PIN in a thread")?;
    let m = call(c.map(&p, a), "mmap of the thread's pin")?;
    check_pattern(&m, va, a)?;
    drop(m);
    let handle = p.handle;
    let u = std::thread::scope(|s| s.spawn(move || gp.unpin(handle)).join())
        .map_err(|_| CaseStatus::error("the unpinning thread panicked"))?;
    let u = call(u, "UNPIN in another thread")?;
    let (want, _) = c.clean_unpin();
    ensure!(
        u.result == want,
        "released as a clean unpin",
        "{}",
        u.result
    );
    c.free(va)?;
    Ok(None)
}
