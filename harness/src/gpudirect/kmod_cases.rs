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
pub const DESKTOP_ALIGN: u64 = 64 * 1024;
pub const TEGRA_ALIGN: u64 = 4 * 1024;

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
            | AddressesNeedCapSysAdmin => vec![Capability::Kmod, Capability::Testprov],
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

// ---------------------------------------------------------------------------------------------
// Memory to pin: the test provider's fake GPU memory, or cuMemAlloc.

/// What pins are made on.
#[derive(Debug)]
pub enum Mem {
    /// `/dev/gpucts_testprov`: frees report the callbacks they fired; counts and injection.
    Prov(TestProv),
    /// A CUDA device (a rig): allocations over-allocated to the pin alignment.
    Cuda(CudaMem),
}

pub struct CudaMem {
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
    /// The provider when loaded, else the GPU; `Err` is the skip naming what is missing.
    pub fn open() -> Result<Mem, CaseStatus> {
        if Path::new(kmod::TESTPROV_DEVICE).exists() {
            return TestProv::open().map(Mem::Prov).map_err(CaseStatus::error);
        }
        match Session::open(0) {
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

    pub fn prov(&self) -> Option<&TestProv> {
        match self {
            Mem::Prov(p) => Some(p),
            Mem::Cuda(_) => None,
        }
    }

    /// `len` bytes at an `align`-aligned VA whose words hold `testprov_pattern(va)` (the
    /// provider fills them; on a GPU they are copied in), and the GPU's UUID.
    pub fn alloc(&self, len: u64, align: u64) -> Step<(u64, [u8; 16])> {
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
    pub fn free(&self, va: u64) -> Step<Option<u32>> {
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

    pub fn stats(&self) -> Option<TpStats> {
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
pub struct Ctx {
    pub gp: Device,
    pub mem: Mem,
    pub tegra: bool,
    /// The pin alignment the spec gives the flavour (§3.2 / §4.4.3), not the module's word.
    pub a: u64,
    pub caps: u32,
}

impl Ctx {
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

fn expected_tegra(reported: u32) -> Result<bool, UnknownFlavour> {
    match std::env::var("GPUCTS_KMOD_FLAVOUR").as_deref() {
        Ok("tegra") => Ok(true),
        Ok("desktop") => Ok(false),
        Ok(other) => Err(UnknownFlavour(other.to_string())),
        Err(_) => Ok(reported == kmod::FLAVOUR_TEGRA),
    }
}

/// Run one scenario with fresh descriptors and check nothing is left behind.
pub fn run(sc: Scenario) -> CaseStatus {
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
    let tegra = match expected_tegra(v.flavour) {
        Ok(t) => t,
        Err(e) => return CaseStatus::error(e),
    };
    let mem = match Mem::open() {
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
        InjectedEnomem => injected_enomem(c),
        IncompatiblePageTableVersion => incompatible_version(c),
        PutPagesCallbackSemantics => put_pages_callback_semantics(c),
        RevokeRacesUnpin => revoke_races_unpin(c),
        RevokeWithIoctlsInFlight => revoke_with_ioctls_in_flight(c),
        ProcessKilledWithPins => process_killed_with_pins(c),
        FdClosedWithMappingOpen => fd_closed_with_mapping(c),
        ForkExitWithLivePins => fork_exit_with_live_pins(c),
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

// ---------------------------------------------------------------------------------------------

fn get_version(c: &Ctx) -> Step<Option<String>> {
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

fn pin_unpin_aligned(c: &Ctx) -> Step<Option<String>> {
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

fn pin_unaligned_rounded(c: &Ctx) -> Step<Option<String>> {
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
fn pin_size_classes(c: &Ctx) -> Step<Option<String>> {
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

fn pin_zero_length(c: &Ctx) -> Step<Option<String>> {
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

fn provider_rejects_unaligned(c: &Ctx) -> Step<Option<String>> {
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

fn page_table(c: &Ctx) -> Step<Option<String>> {
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

fn mmap_cpu_access(c: &Ctx) -> Step<Option<String>> {
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

fn persistent_survives_free(c: &Ctx) -> Step<Option<String>> {
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

fn revoked_on_free(c: &Ctx) -> Step<Option<String>> {
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

fn two_pins_one_revoked(c: &Ctx) -> Step<Option<String>> {
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
    let e = call(c.gp.events(pb.handle), "EVENTS b")?;
    ensure!(
        e.state == kmod::STATE_PINNED && e.callbacks == 0 && e.zaps == 0,
        "b untouched",
        "state {}, {} callbacks, {} zaps",
        e.state,
        e.callbacks,
        e.zaps
    );
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

/// The DMA peer: `GPUCTS_P2P_PEER=dddd:bb:dd.f` (a NIC on a rig), else 0000:00:00.0, the host
/// bridge every PC and the VM have.
fn peer() -> Step<(u32, u32, u32)> {
    let Ok(s) = std::env::var("GPUCTS_P2P_PEER") else {
        return Ok((0, 0, 0));
    };
    let bad = || CaseStatus::error(format!("GPUCTS_P2P_PEER={s}: expected dddd:bb:dd.f"));
    let (dom, rest) = s.split_once(':').ok_or_else(bad)?;
    let (bus, rest) = rest.split_once(':').ok_or_else(bad)?;
    let (dev, func) = rest.split_once('.').ok_or_else(bad)?;
    let h = |x: &str| u32::from_str_radix(x, 16).map_err(|_| bad());
    let (dev, func) = (h(dev)?, h(func)?);
    if dev > 31 || func > 7 {
        return Err(bad());
    }
    Ok((h(dom)?, h(bus)?, dev << 3 | func))
}

/// A PCI bus number no device of domain 0 sits on (from sysfs), for ENODEV.
fn absent_bus() -> u32 {
    let used: Vec<u32> = std::fs::read_dir("/sys/bus/pci/devices")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    let mut it = n.split(':');
                    (it.next() == Some("0000"))
                        .then(|| it.next().and_then(|b| u32::from_str_radix(b, 16).ok()))
                        .flatten()
                })
                .collect()
        })
        .unwrap_or_default();
    (0x10..=0xfe)
        .rev()
        .find(|b| !used.contains(b))
        .unwrap_or(0x9e)
}

fn dma_map_unmap(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let peer = peer()?;
    let va = c.alloc(2 * a)?;
    let p = call(c.pin(va, 2 * a, 0), "PIN")?;
    let mut phys = [0u64; 4];
    let t = call(c.gp.page_table_addrs(p.handle, &mut phys), "PAGE_TABLE")?;
    let dir = if c.tegra { 1 } else { 0 };
    let mut dma = [0u64; 4];
    let d = call(c.gp.dma_map(p.handle, peer, dir, Some(&mut dma)), "DMA_MAP")?;
    ensure!(
        d.compatible == 1 && d.entries == 2,
        "a compatible mapping of 2 entries",
        "compatible {}, {} entries",
        d.compatible,
        d.entries
    );
    ensure!(
        d.page_size_type == t.page_size_type,
        "the page table's page size",
        "{} vs {}",
        d.page_size_type,
        t.page_size_type
    );
    if c.mem.prov().is_some() {
        // the provider models an identity IOMMU (§2.4): bus address == physical
        ensure!(
            dma[..2] == phys[..2],
            "bus addresses equal physical (identity IOMMU of the provider)",
            "dma {:#x?} vs phys {:#x?}",
            &dma[..2],
            &phys[..2]
        );
    } else {
        ensure!(
            dma[0] != 0 && dma[1] != 0,
            "two bus addresses",
            "{:#x?}",
            &dma[..2]
        );
    }
    if let Some(s) = c.stats() {
        ensure!(
            s.dma_mappings == 1,
            "the provider holds 1 mapping",
            "{}",
            s.dma_mappings
        );
    }
    let e = call(c.gp.events(p.handle), "EVENTS")?;
    ensure!(
        e.flags & kmod::EV_DMA_MAPPED != 0,
        "EV_DMA_MAPPED",
        "flags {:#x}",
        e.flags
    );
    want_errno(
        c.gp.dma_map(p.handle, peer, dir, None),
        libc::EBUSY,
        "second DMA_MAP",
    )?;
    call(c.gp.dma_unmap(p.handle), "DMA_UNMAP")?;
    want_errno(c.gp.dma_unmap(p.handle), libc::EINVAL, "DMA_UNMAP twice")?;
    if let Some(s) = c.stats() {
        ensure!(s.dma_mappings == 0, "no mapping left", "{}", s.dma_mappings);
    }
    want_errno(
        c.gp.dma_map(p.handle, (peer.0, absent_bus(), 0), dir, None),
        libc::ENODEV,
        "DMA_MAP for an absent peer",
    )?;
    want_errno(
        c.gp.dma_map(p.handle, peer, 3, None),
        libc::EINVAL,
        "DMA_MAP direction 3",
    )?;
    want_errno(
        c.gp.dma_map(p.handle, (peer.0, 256, 0), dir, None),
        libc::EINVAL,
        "DMA_MAP bus 256",
    )?;
    // mapped again, then left for UNPIN to unmap
    call(c.gp.dma_map(p.handle, peer, dir, None), "DMA_MAP again")?;
    unpin(c, p.handle, "UNPIN with a mapping")?;
    if let Some(s) = c.stats() {
        ensure!(
            s.dma_mappings == 0,
            "UNPIN unmapped",
            "{} mappings",
            s.dma_mappings
        );
    }
    c.free(va)?;
    Ok(None)
}

fn dma_mapping_freed_by_callback(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(a)?;
    let p = call(c.pin(va, a, 0), "PIN")?;
    call(
        c.gp.dma_map(p.handle, peer()?, if c.tegra { 1 } else { 0 }, None),
        "DMA_MAP",
    )?;
    let cbs = c.free(va)?;
    ensure!(cbs.unwrap_or(1) == 1, "one callback", "{cbs:?}");
    // §3.4: the callback freed the mapping with free_dma_mapping
    if let Some(s) = c.stats() {
        ensure!(
            s.dma_mappings == 0,
            "the callback freed the mapping",
            "{} mappings",
            s.dma_mappings
        );
    }
    want_errno(c.gp.dma_unmap(p.handle), libc::ESTALE, "DMA_UNMAP revoked")?;
    let u = unpin(c, p.handle, "UNPIN")?;
    ensure!(
        u.result == kmod::UNPIN_REVOKED,
        "UNPIN_REVOKED",
        "{}",
        u.result
    );
    Ok(None)
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

fn bad_args(c: &Ctx) -> Step<Option<String>> {
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

fn other_process_eacces(c: &Ctx) -> Step<Option<String>> {
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
struct CapHeader {
    version: u32,
    pid: i32,
}
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}
const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
const CAP_SYS_ADMIN: u32 = 21;

fn drop_cap_sys_admin() -> bool {
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
        d[(CAP_SYS_ADMIN / 32) as usize].effective &= !(1 << (CAP_SYS_ADMIN % 32));
        libc::syscall(libc::SYS_capset, &mut h as *mut CapHeader, d.as_ptr()) == 0
    }
}

fn addresses_need_cap_sys_admin(c: &Ctx) -> Step<Option<String>> {
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

fn injected_enomem(c: &Ctx) -> Step<Option<String>> {
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

fn incompatible_version(c: &Ctx) -> Step<Option<String>> {
    let tp = c.tp()?;
    let va = c.alloc(c.a)?;
    call(tp.inject(0, 1, 0), "INJECT")?;
    let p = call(c.pin(va, c.a, 0), "PIN")?;
    let mut addr = [0u64; 1];
    let t = call(c.gp.page_table_addrs(p.handle, &mut addr), "PAGE_TABLE")?;
    // §4.3: NVIDIA_P2P_PAGE_TABLE_VERSION_COMPATIBLE refuses another major version
    ensure!(
        t.compatible == 0 && t.version >> 16 == 2,
        "major version 2 reported incompatible",
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
        c.gp.dma_map(p.handle, peer()?, 0, None),
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

/// §4.3 vs §4.4.3: who fires the callback on put_pages.
fn put_pages_callback_semantics(c: &Ctx) -> Step<Option<String>> {
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
fn revoke_races_unpin(c: &Ctx) -> Step<Option<String>> {
    let tp = c.tp()?;
    let iters: u32 = std::env::var("P2P_RACE_ITERS")
        .ok()
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
enum InFlightDivergence {
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
fn revoke_with_ioctls_in_flight(c: &Ctx) -> Step<Option<String>> {
    let peer = peer()?;
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

/// A child pins (one persistent on the desktop) and maps, then is SIGKILLed; the two
/// descriptor close orders decide which driver sees the exit first (§2.3).
fn killed_child(c: &Ctx, gp_first: bool) -> Step<()> {
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

fn process_killed_with_pins(c: &Ctx) -> Step<Option<String>> {
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

fn fd_closed_with_mapping(c: &Ctx) -> Step<Option<String>> {
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
fn fork_exit_with_live_pins(c: &Ctx) -> Step<Option<String>> {
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
    let e = call(c.gp.events(p.handle), "EVENTS")?;
    ensure!(
        e.state == kmod::STATE_PINNED && e.callbacks == 0 && e.zaps == 0,
        "the parent's pin untouched by the children's exits",
        "state {}, {} callbacks, {} zaps",
        e.state,
        e.callbacks,
        e.zaps
    );
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
