//! The UAPI's argument checks and privileges: exact errnos in the header's check order, other
//! processes' handles, CAP_SYS_ADMIN for addresses, injected failures, version mismatches,
//! who may open the node, and pins charged to RLIMIT_MEMLOCK.

use super::dma::peer;
use super::*;

pub(super) fn bad_args(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    // the part needing no memory first
    for h in [0, 777_777, u64::MAX] {
        want_errno(c.gp.unpin(h), libc::ENOENT, &format!("UNPIN handle {h}"))?;
    }
    want_errno(
        c.gp.page_table(4242),
        libc::ENOENT,
        "PAGE_TABLE unknown handle",
    )?;
    want_errno(c.gp.events(4242), libc::ENOENT, "EVENTS unknown handle")?;
    want_errno(
        c.gp.dma_unmap(4242),
        libc::ENOENT,
        "DMA_UNMAP unknown handle",
    )?;
    want_errno(
        c.gp.pin(u64::MAX - 4096, 4000, 0),
        libc::EINVAL,
        "PIN whose rounding overflows",
    )?;
    want_errno(
        // SAFETY: a NULL argument; the module must answer EFAULT.
        unsafe { kmod::raw_ioctl(c.gp.fd(), kmod::IOC_PIN, std::ptr::null_mut()) },
        libc::EFAULT,
        "PIN with a NULL argument",
    )?;
    let mut p = Pin::default();
    let unknown = kmod::ioc_typed(
        kmod::READ | kmod::WRITE,
        b'G',
        0x7f,
        std::mem::size_of::<Pin>(),
    );
    want_errno(
        // SAFETY: `p` is as large as both numbers encode.
        unsafe { kmod::raw_ioctl(c.gp.fd(), unknown, &mut p as *mut Pin as *mut _) },
        libc::ENOTTY,
        "unknown command",
    )?;
    let wrong_size = kmod::ioc_typed(
        kmod::READ | kmod::WRITE,
        b'G',
        0x01,
        std::mem::size_of::<Unpin>(),
    );
    want_errno(
        // SAFETY: `p` (64 bytes) is larger than the 24 bytes the number encodes.
        unsafe { kmod::raw_ioctl(c.gp.fd(), wrong_size, &mut p as *mut Pin as *mut _) },
        libc::ENOTTY,
        "PIN number with the UNPIN size",
    )?;
    // the rest pins memory
    let va = c.alloc(a)?;
    want_errno(
        c.pin(va, u64::MAX - 4, 0),
        libc::EINVAL,
        "PIN va + length overflows",
    )?;
    want_errno(c.pin(va, 1 << 40, 0), libc::EINVAL, "PIN 1 TB (provider)")?;
    want_errno(c.pin(va, 8, 0x80), libc::EINVAL, "PIN unknown flag")?;
    want_errno(
        c.pin(0x1000, 8, 0),
        libc::EINVAL,
        "PIN unmapped VA (provider)",
    )?;
    let p = call(c.pin(va, 8, 0), "PIN")?;
    let mut u = Unpin {
        handle: p.handle,
        pad: 1,
        ..Default::default()
    };
    want_errno(c.gp.unpin_raw(&mut u), libc::EINVAL, "UNPIN non-zero pad")?;
    let mut t = kmod::PageTable {
        handle: p.handle,
        pad: 1,
        ..Default::default()
    };
    want_errno(
        // SAFETY: no address array.
        unsafe { c.gp.page_table_raw(&mut t) },
        libc::EINVAL,
        "PAGE_TABLE non-zero pad",
    )?;
    if c.tegra {
        let mut q = Pin {
            va,
            length: 8,
            p2p_token: 1,
            ..Default::default()
        };
        want_errno(c.gp.pin_raw(&mut q), libc::EINVAL, "Tegra PIN with a token")?;
    }
    // another open file does not know this handle (header: handles are per open file)
    let other = Device::open().map_err(CaseStatus::error)?;
    want_errno(other.unpin(p.handle), libc::ENOENT, "UNPIN on another fd")?;
    want_errno(
        other.mmap(p.mmap_offset, 4096, true),
        libc::ENOENT,
        "mmap of another fd's handle",
    )?;
    drop(other);
    unpin(c, p.handle, "UNPIN")?;
    if let Some(s) = c.stats() {
        ensure!(s.pins == 0, "no pin left", "{} pins", s.pins);
    }
    c.free(va)?;
    Ok(None)
}

pub(super) fn other_process_eacces(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(a)?;
    let p = call(c.pin(va, a, 0), "PIN")?;
    // §3.3: put_pages must come from the pinning process; the descriptor is shared
    let st = fork_wait(|| {
        if c.gp.unpin(p.handle).err() != Some(Errno(libc::EACCES)) {
            return 1;
        }
        if c.gp.page_table(p.handle).err() != Some(Errno(libc::EACCES)) {
            return 2;
        }
        if c.gp.events(p.handle).err() != Some(Errno(libc::EACCES)) {
            return 3;
        }
        match c.gp.mmap(p.mmap_offset, 4096, true) {
            Err(Errno(libc::EACCES)) => {}
            _ => return 4,
        }
        if c.gp.dma_unmap(p.handle) != Err(Errno(libc::EACCES)) {
            return 5;
        }
        0
    })?;
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "EACCES for UNPIN, PAGE_TABLE, EVENTS, mmap, DMA_UNMAP in the child",
        "child: {} (the number of the first call that did not get EACCES)",
        describe_wait(st)
    );
    if let Some(s) = c.stats() {
        ensure!(s.pins == 1, "the child released nothing", "{} pins", s.pins);
    }
    unpin(c, p.handle, "owner's UNPIN")?;
    c.free(va)?;
    Ok(None)
}

#[repr(C)]
pub(super) struct CapHeader {
    version: u32,
    pid: i32,
}
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(super) struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
pub(super) const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
pub(super) const CAP_SYS_ADMIN: u32 = 21;
pub(super) const CAP_IPC_LOCK: u32 = 14;

pub(super) fn drop_cap_sys_admin() -> bool {
    drop_cap(CAP_SYS_ADMIN)
}

/// Drop `cap` from the effective set (capabilities(7) numbering).
pub(super) fn drop_cap(cap: u32) -> bool {
    let mut h = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut d = [CapData::default(); 2];
    // SAFETY: capget/capset with a v3 header and two data words, as capget(2) documents.
    unsafe {
        if libc::syscall(libc::SYS_capget, &mut h as *mut CapHeader, d.as_mut_ptr()) != 0 {
            return false;
        }
        d[(cap / 32) as usize].effective &= !(1 << (cap % 32));
        libc::syscall(libc::SYS_capset, &mut h as *mut CapHeader, d.as_ptr()) == 0
    }
}

pub(super) fn addresses_need_cap_sys_admin(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(CaseStatus::error(
            "needs root (to drop CAP_SYS_ADMIN from it)",
        ));
    }
    let st = fork_wait(|| {
        let (Ok(gp), Ok(tp)) = (open_gp_raw(), open_tp_raw()) else {
            return 10;
        };
        let (gp, tp) = (Device::from_fd(gp), TestProv::from_fd(tp));
        let Ok(al) = tp.alloc(a) else { return 10 };
        let Ok(p) = gp.pin(al.va, a, 0) else {
            return 10;
        };
        if !drop_cap_sys_admin() {
            return 11;
        }
        match gp.version() {
            Ok(v) if v.caps & kmod::CAP_ADDRESSES == 0 => {}
            _ => return 1,
        }
        let mut addr = [0u64; 1];
        if gp.page_table_addrs(p.handle, &mut addr).err() != Some(Errno(libc::EPERM))
            || addr[0] != 0
        {
            return 2;
        }
        match gp.page_table(p.handle) {
            Ok(t) if t.entries == 1 => {}
            _ => return 3,
        }
        0 // exit releases the pin and the allocation
    })?;
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "without CAP_SYS_ADMIN: no CAP_ADDRESSES, EPERM for addresses, entries still told",
        "child: {} (1 caps, 2 EPERM, 3 entries, 10 setup, 11 capset)",
        describe_wait(st)
    );
    if let Some(s) = c.stats() {
        ensure!(
            s.pins == 0,
            "the child's pin released at its exit",
            "{} pins",
            s.pins
        );
    }
    Ok(None)
}

pub(super) fn injected_enomem(c: &Ctx) -> Step<Option<String>> {
    let tp = c.tp()?;
    let va = c.alloc(c.a)?;
    call(tp.inject(1, 0, 0), "INJECT")?;
    want_errno(
        c.pin(va, c.a, 0),
        libc::ENOMEM,
        "PIN when get_pages fails with ENOMEM (passed unchanged)",
    )?;
    if let Some(s) = c.stats() {
        ensure!(s.pins == 0, "no pin made", "{} pins", s.pins);
    }
    let p = call(c.pin(va, c.a, 0), "PIN after the injection")?;
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(None)
}

pub(super) fn incompatible_version(c: &Ctx) -> Step<Option<String>> {
    let tp = c.tp()?;
    let va = c.alloc(c.a)?;
    call(tp.inject(0, 1, 0), "INJECT")?;
    let p = call(c.pin(va, c.a, 0), "PIN")?;
    let mut addr = [0u64; 1];
    let t = call(c.gp.page_table_addrs(p.handle, &mut addr), "PAGE_TABLE")?;
    // §4.3: the provider injects GPUCTS_TESTPROV_BAD_PT_VERSION, a major no release has
    // (R515-R575 hand out major 1, R580 and later major 2, both read by the module)
    ensure!(
        t.compatible == 0 && t.version == 0x0003_0000,
        "major version 3 reported incompatible",
        "version {:#x}, compatible {}",
        t.version,
        t.compatible
    );
    ensure!(
        t.entries == 0 && t.page_size == 0 && addr[0] == 0,
        "no other field read",
        "{} entries, page size {}, address {:#x}",
        t.entries,
        t.page_size,
        addr[0]
    );
    want_errno(
        c.gp.mmap(p.mmap_offset, 4096, true),
        libc::EPROTO,
        "mmap of an incompatible table",
    )?;
    want_errno(
        c.gp.dma_map(p.handle, peer(c)?, 0, None),
        libc::EPROTO,
        "DMA_MAP of an incompatible table",
    )?;
    let e = call(c.gp.events(p.handle), "EVENTS")?;
    ensure!(
        e.flags & kmod::EV_INCOMPATIBLE != 0,
        "EV_INCOMPATIBLE",
        "flags {:#x}",
        e.flags
    );
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(None)
}

fn need_root(why: &str) -> Step<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(CaseStatus::error(format!("needs root ({why})")));
    }
    Ok(())
}

/// nobody/nogroup: a uid and gid outside any group the node may be given.
const NOBODY: u32 = 65534;

/// The node admits only its owner and group (the module's default mode is 0660, a udev rule
/// names the group): a process with another uid and gid and no supplementary groups gets
/// EACCES from open(2), as path_resolution(7) rules.
pub(super) fn dev_node_unprivileged_eacces(_c: &Ctx) -> Step<Option<String>> {
    need_root("to become another user")?;
    let meta = std::fs::metadata(kmod::DEVICE)
        .map_err(|e| CaseStatus::error(format!("stat {}: {e}", kmod::DEVICE)))?;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    ensure!(
        meta.file_type().is_char_device(),
        "a character device",
        "{:?}",
        meta.file_type()
    );
    ensure!(
        meta.mode() & 0o007 == 0,
        "no permission bits for others",
        "mode {:03o}",
        meta.mode() & 0o777
    );
    ensure!(
        meta.uid() != NOBODY && meta.gid() != NOBODY,
        "the node is not nobody's or nogroup's",
        "{}:{}",
        meta.uid(),
        meta.gid()
    );
    let st = fork_wait(|| {
        // SAFETY: credential system calls on this (child) process only.
        unsafe {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(NOBODY, NOBODY, NOBODY) != 0
                || libc::setresuid(NOBODY, NOBODY, NOBODY) != 0
            {
                return 10;
            }
            if libc::geteuid() != NOBODY || libc::getegid() != NOBODY {
                return 11;
            }
        }
        match open_gp_raw() {
            Ok(_) => 1,
            Err(Errno(e)) if e == libc::EACCES => 0,
            Err(_) => 2,
        }
    })?;
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "open as nobody:nogroup without groups: EACCES",
        "child: {} (1 opened, 2 another errno, 10 setresuid, 11 ids)",
        describe_wait(st)
    );
    Ok(None)
}

/// Pins are charged to RLIMIT_MEMLOCK as RDMA's ib_umem_get charges them (mm->pinned_vm,
/// CAP_IPC_LOCK exempt, ENOMEM beyond it as mlock(2)), and the charge goes back on every
/// path: unpin, revocation (the free callback), release of the file. A forked process starts
/// with nothing charged.
pub(super) fn pin_charged_to_memlock(c: &Ctx) -> Step<Option<String>> {
    c.tp()?;
    need_root("to pin beyond RLIMIT_MEMLOCK with CAP_IPC_LOCK, then drop it")?;
    let a = c.a;
    let st = fork_wait(|| {
        let (Ok(gp), Ok(tp)) = (open_gp_raw(), open_tp_raw()) else {
            return 20;
        };
        let (gp, tp) = (Device::from_fd(gp), TestProv::from_fd(tp));
        let (Ok(va), Ok(vb), Ok(big)) = (tp.alloc(2 * a), tp.alloc(2 * a), tp.alloc(4 * a)) else {
            return 20;
        };
        let rl = libc::rlimit {
            rlim_cur: 2 * a,
            rlim_max: 2 * a,
        };
        // SAFETY: a valid rlimit for this (child) process.
        if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rl) } != 0 {
            return 20;
        }
        let enomem = Some(Errno(libc::ENOMEM));
        // CAP_IPC_LOCK: beyond the limit all the same
        match gp.pin(big.va, 4 * a, 0) {
            Ok(p) if gp.unpin(p.handle).is_ok() => {}
            _ => return 1,
        }
        if !drop_cap(CAP_IPC_LOCK) {
            return 21;
        }
        // up to the limit, then beyond it
        let Ok(pa) = gp.pin(va.va, 2 * a, 0) else {
            return 2;
        };
        if gp.pin(vb.va, a, 0).err() != enomem {
            return 3;
        }
        match tp.stats() {
            Ok(s) if s.pins == 1 => {}
            _ => return 4,
        }
        if gp.pin(big.va, 4 * a, 0).err() != enomem {
            return 5;
        }
        // unpin gives the charge back
        if gp.unpin(pa.handle).is_err() {
            return 6;
        }
        let Ok(pb) = gp.pin(vb.va, 2 * a, 0) else {
            return 6;
        };
        // so does revocation, before the revoked handle is unpinned
        if tp.free(vb.va) != Ok(1) {
            return 7;
        }
        if gp.pin(va.va, 2 * a, 0).is_err() {
            return 7;
        }
        match gp.unpin(pb.handle) {
            Ok(u) if u.result == kmod::UNPIN_REVOKED => {}
            _ => return 8,
        }
        if gp.pin(big.va, a, 0).err() != enomem {
            return 9;
        }
        // and closing the file with the pin held
        drop(gp);
        let Ok(gp) = open_gp_raw() else { return 10 };
        let gp = Device::from_fd(gp);
        match gp.pin(va.va, 2 * a, 0) {
            Ok(p) if gp.unpin(p.handle).is_ok() => {}
            _ => return 10,
        }
        0 // exit frees the allocations
    })?;
    ensure!(
        libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
        "pins charged to RLIMIT_MEMLOCK: ENOMEM beyond, the charge back at unpin, revocation, close",
        "child: {} (1 CAP_IPC_LOCK bypass, 2 pin to the limit, 3/5 ENOMEM beyond, 4 provider \
         asked, 6 unpin, 7 revocation, 8 revoked unpin, 9 limit still held, 10 release, 20/21 \
         setup)",
        describe_wait(st)
    );
    if let Some(s) = c.stats() {
        ensure!(
            s.pins == 0,
            "the child's pins released at its exit",
            "{} pins",
            s.pins
        );
    }
    Ok(None)
}
