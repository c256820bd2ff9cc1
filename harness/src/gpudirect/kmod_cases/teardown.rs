//! A process that ends with pins, mappings or children alive: the module cleans up after it.

use super::*;

/// A child pins (one persistent on the desktop) and maps, then is SIGKILLed; the two
/// descriptor close orders decide which driver sees the exit first (§2.3).
pub(super) fn killed_child(c: &Ctx, gp_first: bool) -> Step<()> {
    let a = c.a;
    let tegra = c.tegra;
    let mut fds = [0i32; 2];
    // SAFETY: a two-element array for pipe(2).
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(CaseStatus::error("pipe failed"));
    }
    // SAFETY: the child only makes system calls and leaves with _exit or by SIGKILL.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let code = (|| -> i32 {
            // SAFETY: closing the read end in the child.
            unsafe { libc::close(fds[0]) };
            let (gp, tp) = if gp_first {
                (open_gp_raw(), open_tp_raw())
            } else {
                let tp = open_tp_raw();
                (open_gp_raw(), tp)
            };
            let (Ok(gp), Ok(tp)) = (gp, tp) else { return 1 };
            let (gp, tp) = (Device::from_fd(gp), TestProv::from_fd(tp));
            let Ok(al) = tp.alloc(4 * a) else { return 1 };
            let Ok(p) = gp.pin(al.va, a, 0) else { return 2 };
            match gp.mmap(p.mmap_offset, a as usize, true) {
                Ok(m) => std::mem::forget(m),
                Err(_) => return 2,
            }
            if gp.pin(al.va + a, a, 0).is_err() {
                return 3;
            }
            if !tegra && gp.pin(al.va + 2 * a, a, kmod::PIN_PERSISTENT).is_err() {
                return 4;
            }
            std::mem::forget((gp, tp));
            // SAFETY: one byte from a live buffer to our pipe.
            if unsafe { libc::write(fds[1], b"r".as_ptr() as *const _, 1) } != 1 {
                return 5;
            }
            // SAFETY: waits for the SIGKILL.
            unsafe { libc::pause() };
            6
        })();
        // SAFETY: leaving the child.
        unsafe { libc::_exit(code) }
    }
    // SAFETY: closing our copy of the write end.
    unsafe { libc::close(fds[1]) };
    if pid < 0 {
        // SAFETY: closing the read end.
        unsafe { libc::close(fds[0]) };
        return Err(CaseStatus::error("fork failed"));
    }
    let mut ch = 0u8;
    // SAFETY: one byte into a live local.
    let n = unsafe { libc::read(fds[0], &mut ch as *mut u8 as *mut _, 1) };
    // SAFETY: closing the read end.
    unsafe { libc::close(fds[0]) };
    if n != 1 {
        let st = wait(pid)?;
        return Err(CaseStatus::error(format!(
            "the child could not pin: {}",
            describe_wait(st)
        )));
    }
    if let Some(s) = c.stats() {
        ensure!(s.pins >= 2, "the child's pins seen", "{} pins", s.pins);
    }
    // SAFETY: killing our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let st = wait(pid)?;
    ensure!(
        libc::WIFSIGNALED(st),
        "the child killed",
        "{}",
        describe_wait(st)
    );
    Ok(())
}

pub(super) fn process_killed_with_pins(c: &Ctx) -> Step<Option<String>> {
    let tp = c.tp()?;
    killed_child(c, true)?;
    killed_child(c, false)?;
    let s = call(tp.stats(), "testprov STATS")?;
    ensure!(
        s.pins == 0 && s.dma_mappings == 0 && s.allocs == 0,
        "the killed processes' pins, mappings and allocations released",
        "{} pins, {} DMA mappings, {} allocations",
        s.pins,
        s.dma_mappings,
        s.allocs
    );
    Ok(None)
}

pub(super) fn fd_closed_with_mapping(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(2 * a)?;
    let fd = Device::open().map_err(CaseStatus::error)?;
    let p = call(fd.pin(va, a, 0), "PIN")?;
    let q = call(fd.pin(va + a, a, 0), "PIN 2")?;
    let m = call(fd.mmap(p.mmap_offset, a as usize, true), "mmap")?;
    let n = call(fd.mmap(q.mmap_offset, a as usize, true), "mmap 2")?;
    drop(fd);
    // header: a CPU mapping keeps the file open, so the pins stay
    if let Some(s) = c.stats() {
        ensure!(s.pins == 2, "2 pins after close", "{}", s.pins);
    }
    check_pattern(&m, va, a)?;
    drop(m);
    if let Some(s) = c.stats() {
        ensure!(s.pins == 2, "pins kept until the last munmap", "{}", s.pins);
    }
    // revoke while only the second mapping keeps the file
    let cbs = c.free(va)?;
    ensure!(cbs.unwrap_or(2) == 2, "2 callbacks", "{cbs:?}");
    ensure!(
        n.read(0).is_err(),
        "SIGBUS on a revoked mapping of a closed fd",
        "a read"
    );
    drop(n);
    if let Some(s) = c.stats() {
        ensure!(
            s.pins == 0,
            "released at the last munmap",
            "{} pins",
            s.pins
        );
    }
    Ok(None)
}

/// Fork and exit with live pins: the child inherits the descriptor but not the mapping
/// (header: mappings are not inherited by fork), and its exit releases nothing of the
/// parent's (§3.3: the pins belong to the pinning process).
pub(super) fn fork_exit_with_live_pins(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(2 * a)?;
    let p = call(c.pin(va, 2 * a, 0), "PIN")?;
    let m = call(c.map(&p, 2 * a), "mmap")?;
    let addr = m.addr();
    let st = fork_wait(|| {
        // SAFETY: deliberately touches the parent's mapping address, which fork did not copy:
        // the child must die of SIGSEGV here.
        let _v = unsafe { std::ptr::read_volatile(addr as *const u64) };
        0
    })?;
    ensure!(
        libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGSEGV,
        "the child has no copy of the mapping (SIGSEGV)",
        "child: {}",
        describe_wait(st)
    );
    let st = fork_wait(|| 0)?;
    ensure!(
        libc::WIFEXITED(st),
        "the child exits",
        "{}",
        describe_wait(st)
    );
    untouched(
        c,
        p.handle,
        "EVENTS",
        "the parent's pin untouched by the children's exits",
    )?;
    check_pattern(&m, va, 2 * a)?;
    if let Some(s) = c.stats() {
        ensure!(s.pins == 1, "1 pin", "{} pins", s.pins);
    }
    drop(m);
    let u = unpin(c, p.handle, "UNPIN")?;
    let (result, _) = c.clean_unpin();
    ensure!(
        u.result == result,
        format!("result {result}"),
        "{}",
        u.result
    );
    c.free(va)?;
    Ok(None)
}
