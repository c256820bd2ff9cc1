//! Companion kernel module backend: `/dev/gpucts`, through the UAPI of
//! `kmod/include/uapi/gpucts_p2p.h` (version 1). The structures mirror the header field for
//! field; their sizes and the ioctl numbers are checked against the header's own list.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The device node the companion module creates.
pub(crate) const DEVICE: &str = "/dev/gpucts";
pub(crate) const VERSION_MAJOR: u32 = 1;
/// Minor version that added `GPUCTS_P2P_IOC_STATS`.
pub(crate) const VERSION_MINOR_STATS: u32 = 1;
/// Minor version that added `GPUCTS_P2P_IOC_PEER_DMA` and `CAP_PEER_DMA`.
pub(crate) const VERSION_MINOR_PEER_DMA: u32 = 2;
/// Minor version that added `STATS.stray_callbacks`, `EV_CB_SAW_PAGES` and DMA_MAP's
/// `EPROTO` for an incompatible DMA mapping.
pub const VERSION_MINOR_REGISTRATIONS: u32 = 3;
/// The test provider's control node (`kmod/testprov/gpucts_testprov.h`).
pub(crate) const TESTPROV_DEVICE: &str = "/dev/gpucts_testprov";
/// `GPUCTS_TESTPROV_MAX_ALLOC`: the largest single fake allocation.
pub(crate) const TESTPROV_MAX_ALLOC: u64 = 64 << 20;

pub(crate) const FLAVOUR_DESKTOP: u32 = 0;
pub(crate) const FLAVOUR_TEGRA: u32 = 1;
pub(crate) const CAP_PERSISTENT: u32 = 1 << 0;
pub(crate) const CAP_ADDRESSES: u32 = 1 << 1;
pub(crate) const CAP_PEER_DMA: u32 = 1 << 2;
/// The DMA peer the module binds: QEMU's edu device.
pub(crate) const PEER_VENDOR: u32 = 0x1234;
pub(crate) const PEER_DEVICE: u32 = 0x11e8;
pub(crate) const PEER_BUF_SIZE: u32 = 4096;
pub(crate) const PEER_DMA_TO_MEM: u32 = 1 << 0;
pub(crate) const PEER_DMA_RAW: u32 = 1 << 1;
pub(crate) const PIN_PERSISTENT: u32 = 1 << 0;
pub(crate) const PIN_EXACT: u32 = 1 << 1;
/// UAPI 1.2: get_pages with a NULL free callback (gpudirect §1.10 says it is refused).
pub(crate) const PIN_NO_CALLBACK: u32 = 1 << 2;
pub(crate) const EV_INCOMPATIBLE: u32 = 1 << 8;
pub(crate) const EV_DMA_MAPPED: u32 = 1 << 9;
/// The free callback found the first pinned word unchanged: not unmapped yet (§2.3).
pub(crate) const EV_CB_SAW_PAGES: u32 = 1 << 10;
/// `enum nvidia_p2p_page_size_type` (gpudirect §4.3).
pub(crate) const PAGE_SIZE_4KB: u32 = 0;
pub(crate) const PAGE_SIZE_64KB: u32 = 1;
pub(crate) const UNPIN_PUT: u32 = 1;
pub(crate) const UNPIN_REVOKED: u32 = 2;
pub(crate) const UNPIN_REVOKED_DURING: u32 = 3;
pub(crate) const STATE_PINNED: u32 = 1;
pub(crate) const STATE_REVOKED: u32 = 2;

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub flavour: u32,
    pub caps: u32,
    pub pin_align: u64,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Pin {
    pub va: u64,
    pub length: u64,
    pub p2p_token: u64,
    pub va_space_token: u32,
    pub flags: u32,
    pub handle: u64,
    pub pinned_va: u64,
    pub pinned_length: u64,
    pub mmap_offset: u64,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Unpin {
    pub handle: u64,
    pub result: u32,
    pub callbacks: u32,
    pub put_ret: i32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PageTable {
    pub handle: u64,
    pub addrs_ptr: u64,
    pub addrs_count: u32,
    pub version: u32,
    pub compatible: u32,
    pub page_size_type: u32,
    pub page_size: u64,
    pub entries: u32,
    pub pad: u32,
    pub gpu_uuid: [u8; 16],
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Events {
    pub handle: u64,
    pub state: u32,
    pub callbacks: u32,
    pub flags: u32,
    pub zaps: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DmaMap {
    pub handle: u64,
    pub pci_domain: u32,
    pub pci_bus: u32,
    pub pci_devfn: u32,
    pub direction: u32,
    pub addrs_ptr: u64,
    pub addrs_count: u32,
    pub version: u32,
    pub compatible: u32,
    pub page_size_type: u32,
    pub entries: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct DmaUnmap {
    pub handle: u64,
}

/// `struct gpucts_p2p_stats` (UAPI minor 1).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Stats {
    pub handles: u32,
    /// Minor 3: free callbacks for a registration that had ended, ignored.
    pub stray_callbacks: u32,
}

/// `struct gpucts_p2p_peer_dma` (UAPI minor 2).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct PeerDma {
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
    pub peer_offset: u32,
    pub flags: u32,
    pub pad: u32,
    pub bus_addr: u64,
}

/// Linux `_IOC` encoding (x86-64, arm64).
pub(crate) const fn ioc_typed(dir: u64, ty: u8, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | ((ty as u64) << 8) | nr
}
const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    ioc_typed(dir, b'G', nr, size)
}
pub(crate) const READ: u64 = 2;
pub const WRITE: u64 = 1;

pub(crate) const IOC_GET_VERSION: u64 = ioc(READ, 0x00, std::mem::size_of::<Version>());
pub(crate) const IOC_PIN: u64 = ioc(READ | WRITE, 0x01, std::mem::size_of::<Pin>());
pub(crate) const IOC_UNPIN: u64 = ioc(READ | WRITE, 0x02, std::mem::size_of::<Unpin>());
pub(crate) const IOC_PAGE_TABLE: u64 = ioc(READ | WRITE, 0x03, std::mem::size_of::<PageTable>());
pub(crate) const IOC_EVENTS: u64 = ioc(READ | WRITE, 0x06, std::mem::size_of::<Events>());
pub(crate) const IOC_DMA_MAP: u64 = ioc(READ | WRITE, 0x04, std::mem::size_of::<DmaMap>());
pub(crate) const IOC_DMA_UNMAP: u64 = ioc(WRITE, 0x05, std::mem::size_of::<DmaUnmap>());
pub(crate) const IOC_STATS: u64 = ioc(READ, 0x07, std::mem::size_of::<Stats>());
pub(crate) const IOC_PEER_DMA: u64 = ioc(READ | WRITE, 0x08, std::mem::size_of::<PeerDma>());

/// An errno from the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({})",
            errno_name(self.0),
            std::io::Error::from_raw_os_error(self.0)
        )
    }
}

pub(crate) fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EINVAL => "EINVAL",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::ESTALE => "ESTALE",
        libc::ENOTTY => "ENOTTY",
        libc::EFAULT => "EFAULT",
        libc::EPERM => "EPERM",
        libc::ENOMEM => "ENOMEM",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EPROTO => "EPROTO",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::ENOSPC => "ENOSPC",
        libc::ENXIO => "ENXIO",
        libc::EBADF => "EBADF",
        _ => "errno",
    }
}

/// `ioctl(fd, cmd, arg)` as a `Result`.
///
/// # Safety
/// `arg` must be null or point to memory the command may read and write (its encoded size).
pub(crate) unsafe fn raw_ioctl(fd: i32, cmd: u64, arg: *mut libc::c_void) -> Result<(), Errno> {
    // SAFETY: per the function's contract.
    let rc = unsafe { libc::ioctl(fd, cmd as _, arg) };
    if rc < 0 {
        Err(Errno(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ))
    } else {
        Ok(())
    }
}

/// Why the module's or the test provider's device cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum KmodError {
    #[error("cannot open {path}: {source}")]
    Open {
        path: &'static str,
        source: std::io::Error,
    },
    #[error("kmod not loaded: {DEVICE} does not exist")]
    NotLoaded,
    /// The node exists but does not open (permissions, a stale node).
    #[error("kmod present but {0}")]
    Unopenable(Box<KmodError>),
    #[error("{TESTPROV_DEVICE} does not exist (load kmod/testprov)")]
    TestprovNotLoaded,
    /// An ioctl the probe issues (`ioctl`: its UAPI name) returned an errno.
    #[error("{path} does not answer {ioctl}: {errno}")]
    Ioctl {
        path: &'static str,
        ioctl: &'static str,
        errno: Errno,
    },
    #[error("{DEVICE} speaks UAPI {major}.{minor}, this gpucts speaks {VERSION_MAJOR}.x")]
    Uapi { major: u32, minor: u32 },
}

/// An open `/dev/gpucts`.
#[derive(Debug)]
pub struct Device {
    file: File,
}

impl Device {
    pub fn open() -> Result<Device, KmodError> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(DEVICE)
            .map(|file| Device { file })
            .map_err(|source| KmodError::Open {
                path: DEVICE,
                source,
            })
    }

    /// Issue `cmd` with `arg`; the module reads and writes `arg` in place.
    ///
    /// # Safety
    /// `T` must be the structure `cmd` encodes (size and layout).
    unsafe fn ioctl<T>(&self, cmd: u64, arg: &mut T) -> Result<(), Errno> {
        // SAFETY: per the function's contract, `arg` is the structure the command expects.
        unsafe { raw_ioctl(self.fd(), cmd, arg as *mut T as *mut libc::c_void) }
    }

    /// Adopt an open descriptor of `/dev/gpucts` (a forked child opens with `libc::open`,
    /// which does not allocate).
    pub(crate) fn from_fd(fd: std::os::fd::OwnedFd) -> Device {
        Device {
            file: File::from(fd),
        }
    }

    /// The descriptor (for a forked child, which shares it).
    pub(crate) fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// PIN with every field of `p` as given (tokens, pads); `p` is updated on success.
    pub(crate) fn pin_raw(&self, p: &mut Pin) -> Result<(), Errno> {
        // SAFETY: IOC_PIN takes a `Pin`.
        unsafe { self.ioctl(IOC_PIN, p) }
    }

    /// UNPIN with every field of `u` as given (the pad included).
    pub(crate) fn unpin_raw(&self, u: &mut Unpin) -> Result<(), Errno> {
        // SAFETY: IOC_UNPIN takes an `Unpin`.
        unsafe { self.ioctl(IOC_UNPIN, u) }
    }

    /// PAGE_TABLE copying up to `addrs.len()` physical addresses into `addrs`.
    pub(crate) fn page_table_addrs(
        &self,
        handle: u64,
        addrs: &mut [u64],
    ) -> Result<PageTable, Errno> {
        let mut t = PageTable {
            handle,
            addrs_ptr: addrs.as_mut_ptr() as u64,
            addrs_count: addrs.len().min(u32::MAX as usize) as u32,
            ..Default::default()
        };
        // SAFETY: IOC_PAGE_TABLE takes a `PageTable`; addrs_ptr has room for addrs_count words.
        unsafe { self.ioctl(IOC_PAGE_TABLE, &mut t) }.map(|()| t)
    }

    /// PAGE_TABLE with every field of `t` as given.
    ///
    /// # Safety
    /// `t.addrs_ptr` must be 0, unmapped, or have room for `t.addrs_count` words.
    pub(crate) unsafe fn page_table_raw(&self, t: &mut PageTable) -> Result<(), Errno> {
        // SAFETY: IOC_PAGE_TABLE takes a `PageTable`; the address array per the contract.
        unsafe { self.ioctl(IOC_PAGE_TABLE, t) }
    }

    /// DMA_MAP for the peer `domain:bus:devfn`; DMA addresses into `addrs` when given.
    pub(crate) fn dma_map(
        &self,
        handle: u64,
        peer: (u32, u32, u32),
        direction: u32,
        addrs: Option<&mut [u64]>,
    ) -> Result<DmaMap, Errno> {
        let (addrs_ptr, addrs_count) = match addrs {
            Some(a) => (a.as_mut_ptr() as u64, a.len().min(u32::MAX as usize) as u32),
            None => (0, 0),
        };
        let mut d = DmaMap {
            handle,
            pci_domain: peer.0,
            pci_bus: peer.1,
            pci_devfn: peer.2,
            direction,
            addrs_ptr,
            addrs_count,
            ..Default::default()
        };
        // SAFETY: IOC_DMA_MAP takes a `DmaMap`; addrs_ptr has room for addrs_count words.
        unsafe { self.ioctl(IOC_DMA_MAP, &mut d) }.map(|()| d)
    }

    pub(crate) fn dma_unmap(&self, handle: u64) -> Result<(), Errno> {
        let mut d = DmaUnmap { handle };
        // SAFETY: IOC_DMA_UNMAP takes a `DmaUnmap`.
        unsafe { self.ioctl(IOC_DMA_UNMAP, &mut d) }
    }

    /// PEER_DMA (UAPI 1.2): the peer's engine copies `length` bytes between its buffer at
    /// `peer_offset` and pinned byte `offset` of `handle` (with `PEER_DMA_RAW`: bus address
    /// `offset`, handle 0); the bus address the engine was given.
    pub(crate) fn peer_dma(
        &self,
        handle: u64,
        offset: u64,
        length: u32,
        peer_offset: u32,
        flags: u32,
    ) -> Result<u64, Errno> {
        let mut p = PeerDma {
            handle,
            offset,
            length,
            peer_offset,
            flags,
            ..Default::default()
        };
        // SAFETY: IOC_PEER_DMA takes a `PeerDma`.
        unsafe { self.ioctl(IOC_PEER_DMA, &mut p) }.map(|()| p.bus_addr)
    }

    /// Handles alive in the whole module (UAPI 1.1); `ENOTTY` from a 1.0 module.
    pub(crate) fn stats(&self) -> Result<Stats, Errno> {
        let mut st = Stats::default();
        // SAFETY: IOC_STATS takes a `Stats`.
        unsafe { self.ioctl(IOC_STATS, &mut st) }.map(|()| st)
    }

    /// `mmap(NULL, len, PROT_READ|PROT_WRITE, shared ? MAP_SHARED : MAP_PRIVATE, fd, offset)`.
    pub(crate) fn mmap(&self, offset: u64, len: usize, shared: bool) -> Result<Mapping, Errno> {
        let flags = if shared {
            libc::MAP_SHARED
        } else {
            libc::MAP_PRIVATE
        };
        // SAFETY: a fresh mapping chosen by the kernel; nothing of ours is replaced.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                self.fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            Err(Errno(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ))
        } else {
            Ok(Mapping {
                ptr: p as usize,
                len,
            })
        }
    }

    pub fn version(&self) -> Result<Version, Errno> {
        let mut v = Version::default();
        // SAFETY: IOC_GET_VERSION takes a `Version`.
        unsafe { self.ioctl(IOC_GET_VERSION, &mut v) }.map(|()| v)
    }

    pub fn pin(&self, va: u64, length: u64, flags: u32) -> Result<Pin, Errno> {
        let mut p = Pin {
            va,
            length,
            flags,
            ..Default::default()
        };
        // SAFETY: IOC_PIN takes a `Pin`.
        unsafe { self.ioctl(IOC_PIN, &mut p) }.map(|()| p)
    }

    /// PIN with the desktop API's tokens (gpudirect §2.6).
    pub(crate) fn pin_tokens(
        &self,
        va: u64,
        length: u64,
        p2p_token: u64,
        va_space_token: u32,
    ) -> Result<Pin, Errno> {
        let mut p = Pin {
            va,
            length,
            p2p_token,
            va_space_token,
            ..Default::default()
        };
        // SAFETY: IOC_PIN takes a `Pin`.
        unsafe { self.ioctl(IOC_PIN, &mut p) }.map(|()| p)
    }

    pub fn unpin(&self, handle: u64) -> Result<Unpin, Errno> {
        let mut u = Unpin {
            handle,
            ..Default::default()
        };
        // SAFETY: IOC_UNPIN takes an `Unpin`.
        unsafe { self.ioctl(IOC_UNPIN, &mut u) }.map(|()| u)
    }

    pub(crate) fn page_table(&self, handle: u64) -> Result<PageTable, Errno> {
        let mut t = PageTable {
            handle,
            ..Default::default()
        };
        // SAFETY: IOC_PAGE_TABLE takes a `PageTable`; no address array is passed.
        unsafe { self.ioctl(IOC_PAGE_TABLE, &mut t) }.map(|()| t)
    }

    pub fn events(&self, handle: u64) -> Result<Events, Errno> {
        let mut e = Events {
            handle,
            ..Default::default()
        };
        // SAFETY: IOC_EVENTS takes an `Events`.
        unsafe { self.ioctl(IOC_EVENTS, &mut e) }.map(|()| e)
    }

    /// An ioctl number the module does not define, with a harmless argument.
    pub fn unknown_ioctl(&self) -> Result<(), Errno> {
        let mut v = Version::default();
        // SAFETY: the module must refuse an unknown number without touching memory; even if it
        // wrote, `v` is as large as the number's encoded size.
        unsafe { self.ioctl(ioc(READ, 0x7f, std::mem::size_of::<Version>()), &mut v) }
    }
}

/// A CPU mapping of pinned pages (BAR1 on a discrete GPU); unmapped on drop. Accesses go
/// through [`Mapping::read`] and [`Mapping::write`], which report SIGBUS (a revoked mapping)
/// instead of dying.
#[derive(Debug)]
pub struct Mapping {
    ptr: usize,
    len: usize,
}

/// An access to a mapping raised SIGBUS (the pages were revoked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sigbus;

impl Mapping {
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub(crate) fn addr(&self) -> usize {
        self.ptr
    }

    /// Whether `n` bytes at `off` lie inside the mapping (without wrapping: `off + n` is
    /// checked, so a huge `off` cannot pass the bounds test of a safe accessor).
    fn fits(&self, off: usize, n: usize) -> bool {
        off.checked_add(n).is_some_and(|end| end <= self.len)
    }

    /// The 64-bit word at byte offset `off` (8-aligned, inside the mapping).
    pub fn read(&self, off: usize) -> Result<u64, Sigbus> {
        assert!(
            off.is_multiple_of(8) && self.fits(off, 8),
            "read outside the mapping"
        );
        sigbus::guarded(self.ptr, self.len, || {
            // SAFETY: in bounds and aligned (asserted); the page is mapped until drop, and a
            // revoked page faults into the guard, which maps a blank page there.
            unsafe { std::ptr::read_volatile((self.ptr + off) as *const u64) }
        })
    }

    pub fn write(&self, off: usize, v: u64) -> Result<(), Sigbus> {
        assert!(
            off.is_multiple_of(8) && self.fits(off, 8),
            "write outside the mapping"
        );
        sigbus::guarded(self.ptr, self.len, || {
            // SAFETY: as for `read`.
            unsafe { std::ptr::write_volatile((self.ptr + off) as *mut u64, v) }
        })
    }

    /// Copy `dst.len()` bytes from offset `off` with 8-byte loads (BAR reads); no guard.
    pub(crate) fn copy_out(&self, off: usize, dst: &mut [u8]) {
        assert!(self.fits(off, dst.len()), "copy outside the mapping");
        // SAFETY: in bounds; only used on mappings the caller holds pinned.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (self.ptr + off) as *const u8,
                dst.as_mut_ptr(),
                dst.len(),
            )
        }
    }

    /// Copy `src` to offset `off` (BAR writes); no guard.
    pub(crate) fn copy_in(&self, off: usize, src: &[u8]) {
        assert!(self.fits(off, src.len()), "copy outside the mapping");
        // SAFETY: in bounds; only used on mappings the caller holds pinned.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), (self.ptr + off) as *mut u8, src.len())
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// SIGBUS on a revoked mapping, caught: the handler maps a blank anonymous page over the
/// faulting page (so the access completes) and records the hit; a fault outside the armed
/// range restores the default action, so a real crash still crashes.
mod sigbus {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Mutex, Once};

    static START: AtomicUsize = AtomicUsize::new(0);
    static END: AtomicUsize = AtomicUsize::new(0);
    static HIT: AtomicBool = AtomicBool::new(false);
    static INSTALL: Once = Once::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    extern "C" fn on_sigbus(_sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        if addr >= START.load(Ordering::SeqCst) && addr < END.load(Ordering::SeqCst) {
            // SAFETY: sysconf and mmap are async-signal-safe; the page replaced lies in the
            // mapping the guarded access belongs to.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
                libc::mmap(
                    (addr & !(page - 1)) as *mut libc::c_void,
                    page,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                );
            }
            HIT.store(true, Ordering::SeqCst);
        } else {
            // SAFETY: restoring the default action; the fault repeats and kills the process.
            unsafe {
                libc::signal(libc::SIGBUS, libc::SIG_DFL);
            }
        }
    }

    pub(crate) fn guarded<T>(
        start: usize,
        len: usize,
        f: impl FnOnce() -> T,
    ) -> Result<T, super::Sigbus> {
        let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        INSTALL.call_once(|| {
            // SAFETY: installing a handler that only uses async-signal-safe calls.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_sigbus as *const () as usize;
                sa.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut sa.sa_mask);
                libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut());
            }
        });
        HIT.store(false, Ordering::SeqCst);
        START.store(start, Ordering::SeqCst);
        END.store(start + len, Ordering::SeqCst);
        let v = f();
        START.store(0, Ordering::SeqCst);
        END.store(0, Ordering::SeqCst);
        if HIT.load(Ordering::SeqCst) {
            Err(super::Sigbus)
        } else {
            Ok(v)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The test provider's control interface (kmod/testprov/gpucts_testprov.h): fake "GPU memory".

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TpAlloc {
    pub length: u64,
    pub va: u64,
    pub gpu_uuid: [u8; 16],
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TpFree {
    pub va: u64,
    pub callbacks: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TpInject {
    pub enomem: u32,
    pub bad_version: u32,
    pub put_delay_us: u32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TpStats {
    pub pins: u32,
    pub persistent_pins: u32,
    pub dma_mappings: u32,
    pub allocs: u32,
    pub callbacks: u64,
    pub violations: u64,
}

/// `struct gpucts_testprov_mode`: how the provider behaves from now on (zeros: as loaded).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TpMode {
    pub pt_version: u32,
    pub dma_version: u32,
    pub get_delay_us: u32,
    pub stray_callbacks: u32,
}

/// `struct gpucts_testprov_tokens`: an allocation's tokens (gpudirect §2.6).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TpTokens {
    pub va: u64,
    pub p2p_token: u64,
    pub va_space_token: u32,
    pub pad: u32,
}

pub(crate) const TP_IOC_ALLOC: u64 =
    ioc_typed(READ | WRITE, b'g', 0x01, std::mem::size_of::<TpAlloc>());
pub(crate) const TP_IOC_FREE: u64 =
    ioc_typed(READ | WRITE, b'g', 0x02, std::mem::size_of::<TpFree>());
pub(crate) const TP_IOC_INJECT: u64 = ioc_typed(WRITE, b'g', 0x03, std::mem::size_of::<TpInject>());
pub(crate) const TP_IOC_STATS: u64 = ioc_typed(READ, b'g', 0x04, std::mem::size_of::<TpStats>());
pub(crate) const TP_IOC_MODE: u64 = ioc_typed(WRITE, b'g', 0x05, std::mem::size_of::<TpMode>());
pub(crate) const TP_IOC_TOKENS: u64 =
    ioc_typed(READ | WRITE, b'g', 0x06, std::mem::size_of::<TpTokens>());

/// `GPUCTS_TESTPROV_PATTERN(va)`: what the provider stores in the word at fake GPU VA `va`.
pub(crate) const fn testprov_pattern(va: u64) -> u64 {
    va ^ 0x9e37_79b9_7f4a_7c15
}

/// An open `/dev/gpucts_testprov`: allocations belong to it and are freed when it closes.
#[derive(Debug)]
pub(crate) struct TestProv {
    file: File,
}

impl TestProv {
    pub fn open() -> Result<TestProv, KmodError> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(TESTPROV_DEVICE)
            .map(|file| TestProv { file })
            .map_err(|source| KmodError::Open {
                path: TESTPROV_DEVICE,
                source,
            })
    }

    pub(crate) fn fd(&self) -> i32 {
        self.file.as_raw_fd()
    }

    /// Adopt an open descriptor of `/dev/gpucts_testprov`.
    pub(crate) fn from_fd(fd: std::os::fd::OwnedFd) -> TestProv {
        TestProv {
            file: File::from(fd),
        }
    }

    /// # Safety
    /// `arg` must be the structure `cmd` encodes (its size and layout): the kernel reads and
    /// writes that many bytes through it.
    unsafe fn ioctl<T>(&self, cmd: u64, arg: &mut T) -> Result<(), Errno> {
        // SAFETY: the caller passes the structure its command encodes.
        unsafe { raw_ioctl(self.fd(), cmd, arg as *mut T as *mut libc::c_void) }
    }

    /// Fake GPU memory: its VA and the UUID its page tables will carry.
    pub(crate) fn alloc(&self, length: u64) -> Result<TpAlloc, Errno> {
        let mut a = TpAlloc {
            length,
            ..Default::default()
        };
        // SAFETY: `a` is the `TpAlloc` TP_IOC_ALLOC encodes.
        unsafe { self.ioctl(TP_IOC_ALLOC, &mut a) }.map(|()| a)
    }

    /// Like cuMemFree; the number of free callbacks it fired.
    pub(crate) fn free(&self, va: u64) -> Result<u32, Errno> {
        let mut f = TpFree {
            va,
            ..Default::default()
        };
        // SAFETY: `f` is the `TpFree` TP_IOC_FREE encodes.
        unsafe { self.ioctl(TP_IOC_FREE, &mut f) }.map(|()| f.callbacks)
    }

    pub(crate) fn inject(
        &self,
        enomem: u32,
        bad_version: u32,
        put_delay_us: u32,
    ) -> Result<(), Errno> {
        let mut i = TpInject {
            enomem,
            bad_version,
            put_delay_us,
            pad: 0,
        };
        // SAFETY: `i` is the `TpInject` TP_IOC_INJECT encodes.
        unsafe { self.ioctl(TP_IOC_INJECT, &mut i) }
    }

    /// Set the provider's behaviour (versions it reports, get_pages delay, stray callbacks).
    pub fn mode(&self, m: TpMode) -> Result<(), Errno> {
        let mut m = m;
        // SAFETY: `m` is the `TpMode` TP_IOC_MODE encodes.
        unsafe { self.ioctl(TP_IOC_MODE, &mut m) }
    }

    /// The tokens of an allocation of this descriptor.
    pub fn tokens(&self, va: u64) -> Result<TpTokens, Errno> {
        let mut t = TpTokens {
            va,
            ..Default::default()
        };
        // SAFETY: `t` is the `TpTokens` TP_IOC_TOKENS encodes.
        unsafe { self.ioctl(TP_IOC_TOKENS, &mut t) }.map(|()| t)
    }

    pub(crate) fn stats(&self) -> Result<TpStats, Errno> {
        let mut s = TpStats::default();
        // SAFETY: `s` is the `TpStats` TP_IOC_STATS encodes.
        unsafe { self.ioctl(TP_IOC_STATS, &mut s) }.map(|()| s)
    }
}

/// Whether the test provider's control node is there (`Err` says why not).
pub(crate) fn probe_testprov() -> Result<String, KmodError> {
    if !Path::new(TESTPROV_DEVICE).exists() {
        return Err(KmodError::TestprovNotLoaded);
    }
    let tp = TestProv::open()?;
    tp.stats().map_err(|errno| KmodError::Ioctl {
        path: TESTPROV_DEVICE,
        ioctl: "STATS",
        errno,
    })?;
    Ok(format!(
        "{TESTPROV_DEVICE} (test provider: host pages, not a GPU)"
    ))
}

/// Whether the module's device can be opened and speaks this UAPI; `Err` says why not.
pub fn probe() -> Result<String, KmodError> {
    if !Path::new(DEVICE).exists() {
        return Err(KmodError::NotLoaded);
    }
    let dev = Device::open().map_err(|e| KmodError::Unopenable(Box::new(e)))?;
    let v = dev.version().map_err(|errno| KmodError::Ioctl {
        path: DEVICE,
        ioctl: "GET_VERSION",
        errno,
    })?;
    if v.major != VERSION_MAJOR {
        return Err(KmodError::Uapi {
            major: v.major,
            minor: v.minor,
        });
    }
    Ok(format!(
        "{DEVICE} UAPI {}.{} ({} flavour)",
        v.major,
        v.minor,
        if v.flavour == FLAVOUR_TEGRA {
            "tegra"
        } else {
            "desktop"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers and sizes the header lists for bindings that do not run cpp.
    #[test]
    fn layout_matches_the_uapi_header() {
        assert_eq!(std::mem::size_of::<Version>(), 24);
        assert_eq!(std::mem::size_of::<Pin>(), 64);
        assert_eq!(std::mem::size_of::<Unpin>(), 24);
        assert_eq!(std::mem::size_of::<PageTable>(), 64);
        assert_eq!(std::mem::size_of::<Events>(), 24);
        assert_eq!(IOC_GET_VERSION, 0x8018_4700);
        assert_eq!(IOC_PIN, 0xc040_4701);
        assert_eq!(IOC_UNPIN, 0xc018_4702);
        assert_eq!(IOC_PAGE_TABLE, 0xc040_4703);
        assert_eq!(IOC_EVENTS, 0xc018_4706);
        assert_eq!(std::mem::size_of::<DmaMap>(), 56);
        assert_eq!(std::mem::size_of::<DmaUnmap>(), 8);
        assert_eq!(std::mem::size_of::<Stats>(), 8);
        assert_eq!(IOC_DMA_MAP, 0xc038_4704);
        assert_eq!(std::mem::size_of::<PeerDma>(), 40);
        assert_eq!(IOC_PEER_DMA, 0xc028_4708);
        assert_eq!(IOC_DMA_UNMAP, 0x4008_4705);
        assert_eq!(IOC_STATS, 0x8008_4707);
        let header = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../kmod/include/uapi/gpucts_p2p.h"
        ))
        .expect("the UAPI header is in the repository");
        for n in [
            "0x80184700",
            "0xc0404701",
            "0xc0184702",
            "0xc0404703",
            "0xc0184706",
            "0xc0384704",
            "0xc0284708",
            "0x40084705",
            "0x80084707",
        ] {
            assert!(header.contains(n), "header lists {n}");
        }
        assert!(header.contains("GPUCTS_P2P_VERSION_MAJOR\t1"));
    }

    /// The test provider's numbers and sizes, as its header lists them.
    #[test]
    fn testprov_layout_matches_its_header() {
        assert_eq!(std::mem::size_of::<TpAlloc>(), 32);
        assert_eq!(std::mem::size_of::<TpFree>(), 16);
        assert_eq!(std::mem::size_of::<TpInject>(), 16);
        assert_eq!(std::mem::size_of::<TpStats>(), 32);
        assert_eq!(TP_IOC_ALLOC, 0xc020_6701);
        assert_eq!(TP_IOC_FREE, 0xc010_6702);
        assert_eq!(TP_IOC_INJECT, 0x4010_6703);
        assert_eq!(TP_IOC_STATS, 0x8020_6704);
        assert_eq!(std::mem::size_of::<TpMode>(), 16);
        assert_eq!(std::mem::size_of::<TpTokens>(), 24);
        assert_eq!(TP_IOC_MODE, 0x4010_6705);
        assert_eq!(TP_IOC_TOKENS, 0xc018_6706);
        let header = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../kmod/testprov/gpucts_testprov.h"
        ))
        .expect("the provider header is in the repository");
        for n in [
            "0xc0206701",
            "0xc0106702",
            "0x40106703",
            "0x80206704",
            "0x40106705",
            "0xc0186706",
            "0x9e3779b97f4a7c15",
        ] {
            assert!(header.contains(n), "header lists {n}");
        }
    }

    /// A SIGBUS inside the guarded range is reported, not fatal: a file mapping past the end
    /// of its (empty) file faults with SIGBUS, as a revoked BAR mapping does.
    #[test]
    fn sigbus_guard_reports_a_fault() {
        let f = tempfile::tempfile().expect("tempfile");
        // SAFETY: a fresh shared mapping of our own empty file.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let m = Mapping {
            ptr: p as usize,
            len: 4096,
        };
        assert_eq!(m.read(0), Err(Sigbus));
        f.set_len(4096).expect("grow");
        // after the guard mapped a blank page there, reads succeed (0)
        assert_eq!(m.read(8), Ok(0));
    }
}
