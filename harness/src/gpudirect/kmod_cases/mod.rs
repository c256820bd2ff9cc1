//! The companion module's scenarios (kmod/tests/p2p_scenarios.c) as harness cases: the
//! `nvidia_p2p_*` API driven through `/dev/gpucts` (kmod/include/uapi/gpucts_p2p.h).
//!
//! Memory comes from the test provider (`/dev/gpucts_testprov`, host pages, in the VM) when it
//! is loaded, otherwise from `cuMemAlloc` on the GPU. Expected values come from the GPUDirect
//! document (64 KB pinning on the desktop §3.2; 4 KB pages and a callback on every put_pages
//! on Tegra §4.4.3), from the errno contract and check order of the UAPI header, and from the
//! provider's own account (its allocations, UUID, fill pattern and counts), never from the
//! module's answers alone. Every case runs in its own process with its own descriptors, and
//! afterwards the module's live handle count and the provider's pin and DMA-mapping counts
//! must be back where they were: no pin is left behind.

use std::cell::RefCell;
use std::ffi::CStr;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;

use serde::Deserialize;

use crate::backend::cuda::Session;
use crate::backend::kmod::{
    self, errno_name, testprov_pattern, Device, Errno, Mapping, Pin, TestProv, TpStats, Unpin,
};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// gpudirect §3.2: pins are made in 64 KB units on desktop GPUs; §4.4.3 (Tegra): 4 KB pages.
pub(crate) const DESKTOP_ALIGN: u64 = 64 * 1024;
pub(crate) const TEGRA_ALIGN: u64 = 4 * 1024;

/// One kmod scenario; the suite names it as `check: {kmod: <name>}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scenario {
    GetVersion,
    PinUnpinAligned,
    PinUnalignedRounded,
    PinSizeClasses,
    PinZeroLengthEinval,
    ProviderRejectsUnaligned,
    PageTableVersionSizeEntriesUuid,
    MmapCpuAccess,
    PersistentPinSurvivesFree,
    RevokedOnFreeSigbusThenUnpin,
    TwoPinsOnlyFreedOneRevoked,
    DmaMapUnmap,
    DmaMappingFreedByCallback,
    BadIoctlArgsExactErrnos,
    OtherProcessHandleEacces,
    AddressesNeedCapSysAdmin,
    InjectedEnomem,
    IncompatiblePageTableVersion,
    PutPagesCallbackSemantics,
    RevokeRacesUnpin,
    RevokeWithIoctlsInFlight,
    ProcessKilledWithPins,
    FdClosedWithMappingOpen,
    ForkExitWithLivePins,
    GetPagesNullCallbackRefused,
    PinOfFreedVaEinval,
    OverlappingPinsPartialUnpin,
    RevokedOnContextDestroy,
    IommuIovaNotPhysical,
    IommuDmaRoundtrip,
    IommuStaleIovaFaultsAfterRevoke,
    IommuFreeWaitsForPeerDma,
    DevNodeUnprivilegedEacces,
    PinChargedToMemlock,
    PinWithoutTokensOwnerOnly,
    PinWithTokensMustMatch,
    UnmapOnlyAfterCallbackReturns,
    PageTableMinorVersionInjection,
    DmaMappingVersionInjection,
    GetPagesRacesFreeOfVa,
    StrayCallbackInvalidContextIgnored,
    InvalidationRacesTeardown,
    CloseWithoutUnmap,
    #[serde(rename = "unaligned_length_0x10008_on_64k_pages")]
    UnalignedLength0x10008On64kPages,
    FdPassingHandlesStayWithPinner,
    ChildThreadPinsAndUnpins,
}

impl Scenario {
    /// Capabilities beyond `kmod`: fault injection, or a forked child allocating memory (a
    /// CUDA context does not survive fork), needs the test provider.
    pub fn requires(self) -> Vec<Capability> {
        use Scenario::*;
        match self {
            GetVersion | BadIoctlArgsExactErrnos => vec![Capability::Kmod],
            InjectedEnomem
            | IncompatiblePageTableVersion
            | RevokeRacesUnpin
            | RevokeWithIoctlsInFlight
            | ProcessKilledWithPins
            | AddressesNeedCapSysAdmin
            | GetPagesNullCallbackRefused
            | PinOfFreedVaEinval
            | OverlappingPinsPartialUnpin
            | RevokedOnContextDestroy
            | PinChargedToMemlock
            | PinWithoutTokensOwnerOnly
            | PinWithTokensMustMatch
            | UnmapOnlyAfterCallbackReturns
            | PageTableMinorVersionInjection
            | DmaMappingVersionInjection
            | GetPagesRacesFreeOfVa
            | StrayCallbackInvalidContextIgnored
            | InvalidationRacesTeardown => vec![Capability::Kmod, Capability::Testprov],
            // edu behind intel-iommu, in ci/kmod-vm's guest (the case checks, and skips
            // naming what the machine lacks)
            IommuIovaNotPhysical
            | IommuDmaRoundtrip
            | IommuStaleIovaFaultsAfterRevoke
            | IommuFreeWaitsForPeerDma => {
                vec![Capability::Kmod, Capability::Testprov]
            }
            _ => vec![Capability::Kmod],
        }
    }
}

type Step<T> = Result<T, CaseStatus>;

/// Errnos that mean the module or its node went away mid-run: an error, not a verdict.
fn lost_device(e: Errno) -> bool {
    matches!(e.0, libc::ENODEV | libc::ENXIO | libc::EBADF | libc::EIO)
}

/// A call that must succeed; its errno otherwise, with the call named.
fn call<T>(r: Result<T, Errno>, what: &str) -> Step<T> {
    r.map_err(|e| {
        if lost_device(e) {
            CaseStatus::error(format!(
                "{what}: {e} (the module or its device node is gone)"
            ))
        } else {
            CaseStatus::fail(format!("{what} succeeds"), format!("{what}: {e}"))
        }
    })
}

/// A call that must fail with exactly `want` (the header's errno for that check).
fn want_errno<T>(r: Result<T, Errno>, want: i32, what: &str) -> Step<()> {
    match r {
        Err(Errno(e)) if e == want => Ok(()),
        Err(e) => Err(CaseStatus::fail(
            format!("{what}: {}", errno_name(want)),
            format!("{what}: {e}"),
        )),
        Ok(_) => Err(CaseStatus::fail(
            format!("{what}: {}", errno_name(want)),
            format!("{what}: success"),
        )),
    }
}

macro_rules! ensure {
    ($cond:expr, $expected:expr, $($observed:tt)+) => {
        if !($cond) {
            return Err(CaseStatus::fail($expected, format!($($observed)+)));
        }
    };
}

/// A pin nothing may have touched: still pinned, no free callback, no zap (its EVENTS,
/// read as `what`).
fn untouched(c: &Ctx, handle: u64, what: &str, expected: &str) -> Step<()> {
    let e = call(c.gp.events(handle), what)?;
    ensure!(
        e.state == kmod::STATE_PINNED && e.callbacks == 0 && e.zaps == 0,
        expected,
        "state {}, {} callbacks, {} zaps",
        e.state,
        e.callbacks,
        e.zaps
    );
    Ok(())
}

mod contract;
mod dma;
mod errnos;
mod field;
mod iommu;
mod pinning;
mod revocation;
mod teardown;

use contract::{
    dma_mapping_version_injection, get_pages_null_callback_refused, overlapping_pins_partial_unpin,
    page_table_minor_version_injection, pin_of_freed_va_einval, pin_with_tokens_must_match,
    pin_without_tokens_owner_only, revoked_on_context_destroy, unmap_only_after_callback_returns,
};
use dma::{dma_map_unmap, dma_mapping_freed_by_callback};
use errnos::{
    addresses_need_cap_sys_admin, bad_args, dev_node_unprivileged_eacces, incompatible_version,
    injected_enomem, other_process_eacces, pin_charged_to_memlock,
};
use field::{
    child_thread_pins_and_unpins, close_without_unmap, fd_passing_handles_stay_with_pinner,
    get_pages_races_free_of_va, invalidation_races_teardown,
    stray_callback_invalid_context_ignored, unaligned_length_0x10008_on_64k_pages,
};
use iommu::{
    iommu_dma_roundtrip, iommu_free_waits_for_peer_dma, iommu_iova_not_physical,
    iommu_stale_iova_faults_after_revoke,
};
use pinning::{
    get_version, mmap_cpu_access, page_table, pin_size_classes, pin_unaligned_rounded,
    pin_unpin_aligned, pin_zero_length, provider_rejects_unaligned,
};
use revocation::{
    persistent_survives_free, put_pages_callback_semantics, revoke_races_unpin,
    revoke_with_ioctls_in_flight, revoked_on_free, two_pins_one_revoked,
};
use teardown::{fd_closed_with_mapping, fork_exit_with_live_pins, process_killed_with_pins};

// ---------------------------------------------------------------------------------------------
// Memory to pin: the test provider's fake GPU memory, or cuMemAlloc.

/// What pins are made on.
#[derive(Debug)]
pub(crate) enum Mem {
    /// `/dev/gpucts_testprov`: frees report the callbacks they fired; counts and injection.
    Prov(TestProv),
    /// A CUDA device (a rig): allocations over-allocated to the pin alignment.
    Cuda(CudaMem),
}

pub(crate) struct CudaMem {
    s: Session,
    /// (aligned va handed out, cuMemAlloc base)
    allocs: RefCell<Vec<(u64, u64)>>,
}

impl std::fmt::Debug for CudaMem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaMem({} allocations)", self.allocs.borrow().len())
    }
}

impl Mem {
    /// The provider when loaded, else the GPU `device` (the run's `--device`); `Err` is the
    /// skip naming what is missing.
    pub fn open(device: &crate::backend::cuda::DeviceSelector) -> Result<Mem, CaseStatus> {
        if Path::new(kmod::TESTPROV_DEVICE).exists() {
            return TestProv::open().map(Mem::Prov).map_err(CaseStatus::error);
        }
        match Session::open_device(device) {
            Ok(s) => Ok(Mem::Cuda(CudaMem {
                s,
                allocs: RefCell::new(Vec::new()),
            })),
            Err(e) => Err(CaseStatus::skip(
                Capability::Gpu,
                format!("no GPU ({e}) and no test provider: nothing to pin"),
            )),
        }
    }

    pub(crate) fn prov(&self) -> Option<&TestProv> {
        match self {
            Mem::Prov(p) => Some(p),
            Mem::Cuda(_) => None,
        }
    }

    /// `len` bytes at an `align`-aligned VA whose words hold `testprov_pattern(va)` (the
    /// provider fills them; on a GPU they are copied in), and the GPU's UUID.
    pub(crate) fn alloc(&self, len: u64, align: u64) -> Step<(u64, [u8; 16])> {
        match self {
            Mem::Prov(p) => {
                let a = call(p.alloc(len), "testprov ALLOC")?;
                ensure!(
                    a.va % align == 0,
                    "provider allocations aligned to the GPU page",
                    "va {:#x}",
                    a.va
                );
                Ok((a.va, a.gpu_uuid))
            }
            Mem::Cuda(c) => {
                let base =
                    c.s.alloc((len + align) as usize)
                        .map_err(|e| CaseStatus::error(e.to_string()))?;
                let va = (base + align - 1) & !(align - 1);
                c.allocs.borrow_mut().push((va, base));
                let words: Vec<u8> = (0..len / 8)
                    .flat_map(|i| testprov_pattern(va + i * 8).to_le_bytes())
                    .collect();
                c.s.copy_to_device(va, &words)
                    .map_err(|e| CaseStatus::error(e.to_string()))?;
                Ok((va, c.s.uuid().map_err(CaseStatus::error)?))
            }
        }
    }

    /// Free (like cuMemFree); the callbacks fired when the provider can say.
    pub(crate) fn free(&self, va: u64) -> Step<Option<u32>> {
        match self {
            Mem::Prov(p) => call(p.free(va), "testprov FREE").map(Some),
            Mem::Cuda(c) => {
                let base = {
                    let mut allocs = c.allocs.borrow_mut();
                    let i = allocs.iter().position(|(v, _)| *v == va).ok_or_else(|| {
                        CaseStatus::error(format!("{va:#x} is not an allocation of this case"))
                    })?;
                    allocs.remove(i).1
                };
                c.s.free(base)
                    .map_err(|e| CaseStatus::error(e.to_string()))?;
                Ok(None)
            }
        }
    }

    pub(crate) fn stats(&self) -> Option<TpStats> {
        self.prov().and_then(|p| p.stats().ok())
    }
}

impl Drop for CudaMem {
    fn drop(&mut self) {
        for (_, base) in self.allocs.borrow_mut().drain(..) {
            let _ = self.s.free(base);
        }
    }
}

/// What a scenario works with.
#[derive(Debug)]
pub(crate) struct Ctx<'a> {
    /// The run's settings (the DMA peer, the race's rounds).
    pub config: &'a crate::config::RunConfig,
    pub gp: Device,
    pub mem: Mem,
    pub tegra: bool,
    /// The pin alignment the spec gives the flavour (§3.2 / §4.4.3), not the module's word.
    pub a: u64,
    pub caps: u32,
}

impl Ctx<'_> {
    fn pin(&self, va: u64, len: u64, flags: u32) -> Result<Pin, Errno> {
        self.gp.pin(va, len, flags)
    }
    fn alloc(&self, len: u64) -> Step<u64> {
        self.mem.alloc(len, self.a).map(|(va, _)| va)
    }
    fn free(&self, va: u64) -> Step<Option<u32>> {
        self.mem.free(va)
    }
    fn tp(&self) -> Step<&TestProv> {
        self.mem.prov().ok_or_else(|| {
            CaseStatus::skip(
                Capability::Testprov,
                "needs the test provider's control node",
            )
        })
    }
    /// The unpin result the spec gives a pin nobody revoked: desktop put_pages fires no
    /// callback (§4.3); Tegra's always fires one (§4.4.3).
    fn clean_unpin(&self) -> (u32, u32) {
        if self.tegra {
            (kmod::UNPIN_REVOKED_DURING, 1)
        } else {
            (kmod::UNPIN_PUT, 0)
        }
    }
    fn map(&self, p: &Pin, len: u64) -> Result<Mapping, Errno> {
        self.gp.mmap(p.mmap_offset, len as usize, true)
    }
    /// Provider counts, or nothing on a GPU.
    fn stats(&self) -> Option<TpStats> {
        self.mem.stats()
    }
}

/// The flavour the run expects: `GPUCTS_KMOD_FLAVOUR` (desktop|tegra, set by ci/kmod-vm for
/// the build it loaded), else the one the module reports.
/// `GPUCTS_KMOD_FLAVOUR` names neither flavour.
#[derive(Debug, thiserror::Error)]
#[error("GPUCTS_KMOD_FLAVOUR={0}: expected desktop or tegra")]
struct UnknownFlavour(String);

fn expected_tegra(flavour: Option<&str>, reported: u32) -> Result<bool, UnknownFlavour> {
    match flavour {
        Some("tegra") => Ok(true),
        Some("desktop") => Ok(false),
        Some(other) => Err(UnknownFlavour(other.to_string())),
        None => Ok(reported == kmod::FLAVOUR_TEGRA),
    }
}

/// Run one scenario with fresh descriptors and check nothing is left behind; `config`: the
/// run's settings.
pub fn run(sc: Scenario, config: &crate::config::RunConfig) -> CaseStatus {
    let gp = match Device::open() {
        Ok(d) => d,
        Err(e) => return CaseStatus::error(e),
    };
    // The handle and pin counts are module-wide, and injection is provider-wide: kmod cases
    // of concurrent children take turns, through a lock on the device node itself.
    let lock = match Device::open() {
        Ok(d) => d,
        Err(e) => return CaseStatus::error(e),
    };
    // SAFETY: flock on a descriptor we own; released when `lock` is closed.
    if unsafe { libc::flock(lock.fd(), libc::LOCK_EX) } != 0 {
        return CaseStatus::error(format!(
            "flock {}: {}",
            kmod::DEVICE,
            std::io::Error::last_os_error()
        ));
    }
    let v = match gp.version() {
        Ok(v) => v,
        Err(e) => return CaseStatus::error(format!("GET_VERSION: {e}")),
    };
    let tegra = match expected_tegra(config.kmod_flavour.as_deref(), v.flavour) {
        Ok(t) => t,
        Err(e) => return CaseStatus::error(e),
    };
    let mem = match Mem::open(&config.device) {
        Ok(m) => m,
        Err(s) => return s,
    };
    let module_handles = |d: &Device| -> Option<u32> {
        (v.minor >= kmod::VERSION_MINOR_STATS)
            .then(|| d.stats().ok().map(|s| s.handles))
            .flatten()
    };
    let handles_before = module_handles(&gp);
    let prov_before = mem.stats();
    let ctx = Ctx {
        config,
        gp,
        mem,
        tegra,
        a: if tegra { TEGRA_ALIGN } else { DESKTOP_ALIGN },
        caps: v.caps,
    };
    let result = run_scenario(sc, &ctx);
    let Ctx { gp, mem, .. } = ctx;
    drop(gp);
    // no pin left behind: the module's handles and the provider's pins and mappings
    let mut leaks = Vec::new();
    if let (Some(before), Ok(d)) = (handles_before, Device::open()) {
        match module_handles(&d) {
            Some(after) if after != before => leaks.push(format!(
                "module holds {after} handles after the case, {before} before"
            )),
            Some(_) => {}
            None => leaks.push("STATS stopped answering".into()),
        }
    }
    if let (Some(b), Some(a)) = (prov_before, mem.stats()) {
        if a.pins != b.pins || a.dma_mappings != b.dma_mappings {
            leaks.push(format!(
                "provider holds {} pins and {} DMA mappings after the case ({} and {} before)",
                a.pins, a.dma_mappings, b.pins, b.dma_mappings
            ));
        }
        if a.violations != b.violations {
            leaks.push(format!(
                "provider saw {} API violations during the case",
                a.violations - b.violations
            ));
        }
    }
    drop(mem);
    drop(lock);
    let checked = match handles_before {
        Some(_) => "module handle count back to its value before",
        None => "module 1.0: no handle count to check",
    };
    match (result, leaks.is_empty()) {
        (Ok(note), true) => CaseStatus::pass_with(match note {
            Some(n) => format!("{n}; {checked}"),
            None => checked.to_string(),
        }),
        (Ok(_), false) => CaseStatus::fail("no pin left behind", leaks.join("; ")),
        (
            Err(CaseStatus::Fail {
                expected,
                observed,
                detail,
                ..
            }),
            _,
        ) => CaseStatus::fail_detail(
            expected,
            observed,
            [detail, leaks.join("; ")]
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        (Err(other), _) => other,
    }
}

fn run_scenario(sc: Scenario, c: &Ctx) -> Step<Option<String>> {
    use Scenario::*;
    match sc {
        GetVersion => get_version(c),
        PinUnpinAligned => pin_unpin_aligned(c),
        PinUnalignedRounded => pin_unaligned_rounded(c),
        PinSizeClasses => pin_size_classes(c),
        PinZeroLengthEinval => pin_zero_length(c),
        ProviderRejectsUnaligned => provider_rejects_unaligned(c),
        PageTableVersionSizeEntriesUuid => page_table(c),
        MmapCpuAccess => mmap_cpu_access(c),
        PersistentPinSurvivesFree => persistent_survives_free(c),
        RevokedOnFreeSigbusThenUnpin => revoked_on_free(c),
        TwoPinsOnlyFreedOneRevoked => two_pins_one_revoked(c),
        DmaMapUnmap => dma_map_unmap(c),
        DmaMappingFreedByCallback => dma_mapping_freed_by_callback(c),
        BadIoctlArgsExactErrnos => bad_args(c),
        OtherProcessHandleEacces => other_process_eacces(c),
        AddressesNeedCapSysAdmin => addresses_need_cap_sys_admin(c),
        DevNodeUnprivilegedEacces => dev_node_unprivileged_eacces(c),
        PinChargedToMemlock => pin_charged_to_memlock(c),
        InjectedEnomem => injected_enomem(c),
        IncompatiblePageTableVersion => incompatible_version(c),
        PutPagesCallbackSemantics => put_pages_callback_semantics(c),
        RevokeRacesUnpin => revoke_races_unpin(c),
        RevokeWithIoctlsInFlight => revoke_with_ioctls_in_flight(c),
        ProcessKilledWithPins => process_killed_with_pins(c),
        FdClosedWithMappingOpen => fd_closed_with_mapping(c),
        ForkExitWithLivePins => fork_exit_with_live_pins(c),
        GetPagesNullCallbackRefused => get_pages_null_callback_refused(c),
        PinOfFreedVaEinval => pin_of_freed_va_einval(c),
        OverlappingPinsPartialUnpin => overlapping_pins_partial_unpin(c),
        RevokedOnContextDestroy => revoked_on_context_destroy(c),
        IommuIovaNotPhysical => iommu_iova_not_physical(c),
        IommuDmaRoundtrip => iommu_dma_roundtrip(c),
        IommuStaleIovaFaultsAfterRevoke => iommu_stale_iova_faults_after_revoke(c),
        IommuFreeWaitsForPeerDma => iommu_free_waits_for_peer_dma(c),
        PinWithoutTokensOwnerOnly => pin_without_tokens_owner_only(c),
        PinWithTokensMustMatch => pin_with_tokens_must_match(c),
        UnmapOnlyAfterCallbackReturns => unmap_only_after_callback_returns(c),
        PageTableMinorVersionInjection => page_table_minor_version_injection(c),
        DmaMappingVersionInjection => dma_mapping_version_injection(c),
        GetPagesRacesFreeOfVa => get_pages_races_free_of_va(c),
        StrayCallbackInvalidContextIgnored => stray_callback_invalid_context_ignored(c),
        InvalidationRacesTeardown => invalidation_races_teardown(c),
        CloseWithoutUnmap => close_without_unmap(c),
        UnalignedLength0x10008On64kPages => unaligned_length_0x10008_on_64k_pages(c),
        FdPassingHandlesStayWithPinner => fd_passing_handles_stay_with_pinner(c),
        ChildThreadPinsAndUnpins => child_thread_pins_and_unpins(c),
    }
}

/// Reads through the mapping at a prime stride and compares with the fill pattern of the GPU
/// VA each word maps (the provider's, or the one copied to the GPU).
fn check_pattern(m: &Mapping, gpu_va: u64, len: u64) -> Step<()> {
    let words = (len / 8) as usize;
    for i in (0..words).step_by(509).chain(words.checked_sub(1)) {
        let want = testprov_pattern(gpu_va + i as u64 * 8);
        match m.read(i * 8) {
            Err(kmod::Sigbus) => {
                return Err(CaseStatus::fail(
                    "a live mapping reads",
                    format!("SIGBUS at +{}", i * 8),
                ))
            }
            Ok(v) => ensure!(
                v == want,
                format!(
                    "{want:#x} (the fill pattern) at GPU VA {:#x}",
                    gpu_va + i as u64 * 8
                ),
                "{v:#x}"
            ),
        }
    }
    Ok(())
}

fn unpin(c: &Ctx, h: u64, what: &str) -> Step<Unpin> {
    call(c.gp.unpin(h), what)
}

fn open_gp_raw() -> Result<OwnedFd, Errno> {
    open_raw(c"/dev/gpucts")
}
fn open_tp_raw() -> Result<OwnedFd, Errno> {
    open_raw(c"/dev/gpucts_testprov")
}
/// `open(path, O_RDWR | O_CLOEXEC)` without allocating (safe in a forked child).
fn open_raw(path: &CStr) -> Result<OwnedFd, Errno> {
    // SAFETY: a NUL-terminated path; the descriptor is owned by the result.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        Err(Errno(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ))
    } else {
        // SAFETY: a fresh descriptor nobody else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }
}

/// Fork and wait; the child runs `f` (system calls only, no allocation) and exits with its
/// value. Returns the raw wait status.
fn fork_wait(f: impl FnOnce() -> i32) -> Step<i32> {
    // SAFETY: the child only makes system calls and leaves with _exit, so it never touches
    // state another thread of the parent may have held at fork time.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(CaseStatus::error(format!(
            "fork: {}",
            std::io::Error::last_os_error()
        )));
    }
    if pid == 0 {
        let code = f();
        // SAFETY: leaving the child without running the parent's destructors.
        unsafe { libc::_exit(code) }
    }
    wait(pid)
}

fn wait(pid: i32) -> Step<i32> {
    let mut st = 0;
    // SAFETY: waiting for our own child.
    let r = unsafe { libc::waitpid(pid, &mut st, 0) };
    if r != pid {
        return Err(CaseStatus::error(format!(
            "waitpid: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(st)
}

fn describe_wait(st: i32) -> String {
    if libc::WIFEXITED(st) {
        format!("exit {}", libc::WEXITSTATUS(st))
    } else if libc::WIFSIGNALED(st) {
        format!("signal {}", libc::WTERMSIG(st))
    } else {
        format!("status {st:#x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run's GPUCTS_KMOD_FLAVOUR overrides what the module reports (ci/kmod-vm loads the
    /// build it names); without it the module's own report decides; any other name is refused.
    #[test]
    fn the_expected_flavour_is_the_named_one_else_the_reported_one() {
        for reported in [kmod::FLAVOUR_DESKTOP, kmod::FLAVOUR_TEGRA] {
            assert!(expected_tegra(Some("tegra"), reported).unwrap());
            assert!(!expected_tegra(Some("desktop"), reported).unwrap());
            let e = expected_tegra(Some("jetson"), reported).unwrap_err();
            assert_eq!(e.0, "jetson");
        }
        assert!(expected_tegra(None, kmod::FLAVOUR_TEGRA).unwrap());
        assert!(!expected_tegra(None, kmod::FLAVOUR_DESKTOP).unwrap());
    }
}
