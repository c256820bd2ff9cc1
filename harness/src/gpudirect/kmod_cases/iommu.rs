//! DMA through an IOMMU: QEMU's edu device, bound by the module, is the peer behind QEMU's
//! intel-iommu (ci/kmod-vm). The addresses `nvidia_p2p_dma_map_pages` gives it are IOVAs
//! (gpudirect §4.3: the peer's I/O addresses, which differ from physical ones where an IOMMU
//! translates, §2.4), its DMA engine copies through them, and once the pin is revoked the
//! module refuses the handle while the IOMMU refuses the stale IOVAs, which the guest's
//! IOMMU driver logs: intel-iommu as a DMAR fault (ci/kmod-vm), arm-smmu-v3 as a translation
//! fault event (ci/kmod-vm-arm64, QEMU's SMMUv3).
//!
//! Independent sources of the expected values: QEMU's edu specification (PCI 1234:11e8, a
//! 4096-byte buffer, a 28-bit DMA mask), the provider's fill pattern, sysfs (the device's
//! IOMMU domain type), and the kernel's own fault report in `/dev/kmsg`.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;

use super::*;

/// edu's default DMA mask (QEMU docs/specs/edu.txt): IOVAs for it must fit 28 bits.
const EDU_DMA_MASK: u64 = (1 << 28) - 1;
/// Bytes per transfer: each takes 100 ms of guest time in edu, and TCG is slow.
const XFER: u32 = 1024;

/// The edu device: its PCI address and `(domain, bus, devfn)`.
struct Peer {
    bdf: String,
    addr: (u32, u32, u32),
}

fn sysfs(bdf: &str, file: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/bus/pci/devices/{bdf}/{file}"))
        .ok()
        .map(|s| s.trim().to_string())
}

fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// edu, translated by an IOMMU and bound by the module; a skip naming what the VM lacks.
fn iommu_peer(c: &Ctx) -> Step<Peer> {
    let lacks = |what: &str| CaseStatus::skip(Capability::IommuPeer, what.to_string());
    let bdf = std::fs::read_dir("/sys/bus/pci/devices")
        .map_err(|e| CaseStatus::error(format!("/sys/bus/pci/devices: {e}")))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|bdf| {
            sysfs(bdf, "vendor").and_then(|v| hex(&v)) == Some(kmod::PEER_VENDOR)
                && sysfs(bdf, "device").and_then(|d| hex(&d)) == Some(kmod::PEER_DEVICE)
        })
        .ok_or_else(|| lacks("edu: no QEMU edu device (PCI 1234:11e8)"))?;
    let domain_type = sysfs(&bdf, "iommu_group/type")
        .ok_or_else(|| lacks(&format!("intel-iommu: {bdf} is in no IOMMU group")))?;
    // DMA and DMA-FQ translate; identity (pass-through) does not
    if !domain_type.starts_with("DMA") {
        return Err(lacks(&format!(
            "intel-iommu: the IOMMU domain of {bdf} is {domain_type}"
        )));
    }
    let bad = || CaseStatus::error(format!("PCI address {bdf}"));
    let (dom, rest) = bdf.split_once(':').ok_or_else(bad)?;
    let (bus, rest) = rest.split_once(':').ok_or_else(bad)?;
    let (dev, func) = rest.split_once('.').ok_or_else(bad)?;
    let (dom, bus, dev, func) = (
        hex(dom).ok_or_else(bad)?,
        hex(bus).ok_or_else(bad)?,
        hex(dev).ok_or_else(bad)?,
        hex(func).ok_or_else(bad)?,
    );
    let v = call(c.gp.version(), "GET_VERSION")?;
    ensure!(
        v.minor >= kmod::VERSION_MINOR_PEER_DMA && v.caps & kmod::CAP_PEER_DMA != 0,
        format!("the module bound edu at {bdf} as its DMA peer"),
        "UAPI minor {}, caps {:#x}",
        v.minor,
        v.caps
    );
    Ok(Peer {
        addr: (dom, bus, dev << 3 | func),
        bdf,
    })
}

/// `/dev/kmsg` from its end: what the kernel logs from now on.
struct Kmsg(std::fs::File);

impl Kmsg {
    fn open() -> Step<Kmsg> {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open("/dev/kmsg")
            .map_err(|e| CaseStatus::error(format!("/dev/kmsg: {e}")))?;
        f.seek(SeekFrom::End(0))
            .map_err(|e| CaseStatus::error(format!("/dev/kmsg: seek: {e}")))?;
        Ok(Kmsg(f))
    }

    /// The IOMMU's report of a fault by the peer at `addr`'s page for an `access`, waited for
    /// up to 3 s ([`FaultScan`]: intel-iommu's DMAR record or arm-smmu-v3's event).
    fn iommu_fault(&mut self, peer: &Peer, access: Access, addr: u64) -> Option<String> {
        self.iommu_fault_within(peer, access, addr, 300)
    }

    /// As [`Kmsg::iommu_fault`], waiting `tries` × 10 ms.
    fn iommu_fault_within(
        &mut self,
        peer: &Peer,
        access: Access,
        addr: u64,
        tries: u32,
    ) -> Option<String> {
        let mut scan = FaultScan::new(peer.addr, access, addr);
        let mut buf = [0u8; 1024];
        for _ in 0..tries {
            match self.0.read(&mut buf) {
                Ok(n) if n > 0 => {
                    if let Some(seen) = scan.record(&String::from_utf8_lossy(&buf[..n])) {
                        return Some(seen);
                    }
                }
                // EPIPE: records overwritten before we read them; read on
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => {}
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
        None
    }
}

/// The direction of the peer's DMA a fault is looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// The peer read memory (edu's DMA from RAM to its buffer).
    Read,
    /// The peer wrote memory.
    Write,
    /// Either direction.
    Any,
}

/// SMMUv3's event number of a translation fault (Arm IHI 0070, F_TRANSLATION).
const SMMU_F_TRANSLATION: u32 = 0x10;
/// The RnW bit of an SMMUv3 event record's second word: 1 for a read.
const SMMU_EVENT_RNW: u64 = 1 << 35;

/// A search of the kernel log's records (`/dev/kmsg`, one record per read:
/// `pri,seq,time,flags;message`) for the IOMMU's report of a fault by one PCI device at one
/// page. Two IOMMUs report them:
/// - intel-iommu (x86, VT-d): one record, `DMAR: [DMA Write NO_PASID] Request device
///   [bb:dd.f] fault addr 0x... [fault reason ...]`;
/// - arm-smmu-v3 (arm64): `event 0x10 received:`, then the event record's four 64-bit words,
///   one record each (`\x09 0x...`: /dev/kmsg escapes the driver's tab). Word 0 holds the
///   StreamID in bits 63:32 (QEMU's virt machine: the PCI requester id, bus << 8 | devfn),
///   word 1 the RnW bit, word 2 the input address (the IOVA the device used).
///
/// The same rules as the C scenarios' (kmod/tests/p2p_scenarios_iommu.c, `wait_dmar_fault_for`).
struct FaultScan {
    /// The PCI requester id: bus << 8 | devfn.
    requester: u32,
    /// `Request device [bb:dd.f]`, as intel-iommu prints it.
    dmar_device: String,
    access: Access,
    /// The faulting page.
    page: u64,
    /// Inside an SMMU translation-fault event: the words read so far.
    smmu_words: Option<Vec<u64>>,
}

impl FaultScan {
    fn new(peer: (u32, u32, u32), access: Access, addr: u64) -> FaultScan {
        let (_, bus, devfn) = peer;
        FaultScan {
            requester: bus << 8 | devfn,
            dmar_device: format!(
                "Request device [{bus:02x}:{:02x}.{}]",
                devfn >> 3,
                devfn & 7
            ),
            access,
            page: addr & !0xfff,
            smmu_words: None,
        }
    }

    /// Feed one record; the fault's description once a record completes a matching report.
    fn record(&mut self, rec: &str) -> Option<String> {
        // the message is the record's first line: a device's message is followed by its
        // dictionary, ` SUBSYSTEM=...` and ` DEVICE=...` lines (Documentation/ABI/testing/dev-kmsg)
        let msg = rec.split_once(';').map_or(rec, |(_, m)| m);
        let msg = msg.lines().next().unwrap_or("").trim();
        if msg.contains("DMAR: [") {
            let kind = match self.access {
                Access::Read => "DMA Read",
                Access::Write => "DMA Write",
                Access::Any => "DMA",
            };
            let at = format!("fault addr {:#x}", self.page);
            return (msg.contains(kind) && msg.contains(&self.dmar_device) && msg.contains(&at))
                .then(|| msg.to_string());
        }
        if !msg.starts_with("arm-smmu-v3") {
            return None;
        }
        let body = msg.split_once(": ").map(|(_, b)| b.trim())?;
        if let Some(event) = body
            .strip_prefix("event 0x")
            .and_then(|e| e.split_whitespace().next())
        {
            let event = u32::from_str_radix(event, 16).ok();
            self.smmu_words = (event == Some(SMMU_F_TRANSLATION)).then(Vec::new);
            return None;
        }
        let words = self.smmu_words.as_mut()?;
        let word = body.trim_start_matches("\\x09").trim();
        let word = u64::from_str_radix(word.strip_prefix("0x")?, 16).ok()?;
        words.push(word);
        if words.len() < 4 {
            return None;
        }
        let w = self.smmu_words.take()?;
        let read = w[1] & SMMU_EVENT_RNW != 0;
        let direction = match self.access {
            Access::Read => read,
            Access::Write => !read,
            Access::Any => true,
        };
        ((w[0] >> 32) == u64::from(self.requester) && direction && w[2] & !0xfff == self.page).then(
            || {
                format!(
                    "SMMUv3 F_TRANSLATION ({}) StreamID {:#x} input address {:#x}",
                    if read { "read" } else { "write" },
                    w[0] >> 32,
                    w[2]
                )
            },
        )
    }
}

fn map_for(c: &Ctx, h: u64, peer: &Peer, addrs: &mut [u64]) -> Step<kmod::DmaMap> {
    call(
        c.gp.dma_map(h, peer.addr, 0, Some(addrs)),
        &format!("DMA_MAP for edu at {}", peer.bdf),
    )
}

fn needs_provider(c: &Ctx) -> Step<()> {
    c.tp().map(|_| ())
}

pub(super) fn iommu_iova_not_physical(c: &Ctx) -> Step<Option<String>> {
    needs_provider(c)?;
    let peer = iommu_peer(c)?;
    let a = c.a;
    let va = c.alloc(2 * a)?;
    let p = call(c.pin(va, 2 * a, 0), "PIN")?;
    let mut phys = [0u64; 2];
    call(c.gp.page_table_addrs(p.handle, &mut phys), "PAGE_TABLE")?;
    let mut dma = [0u64; 2];
    let d = map_for(c, p.handle, &peer, &mut dma)?;
    ensure!(
        d.compatible == 1 && d.entries == 2,
        "a compatible mapping of 2 entries",
        "compatible {}, {} entries",
        d.compatible,
        d.entries
    );
    for i in 0..2 {
        ensure!(
            dma[i] != phys[i],
            "IOVAs, not the physical addresses (§4.3 dma_map_pages behind an IOMMU)",
            "entry {i}: bus address {:#x} is the physical address",
            dma[i]
        );
        ensure!(
            dma[i] + a - 1 <= EDU_DMA_MASK,
            "IOVAs within edu's 28-bit DMA mask",
            "entry {i}: {:#x}",
            dma[i]
        );
        ensure!(
            dma[i] & 0xfff == 0,
            "page-aligned IOVAs",
            "entry {i}: {:#x}",
            dma[i]
        );
    }
    ensure!(
        dma[0] != dma[1],
        "one IOVA per GPU page",
        "both at {:#x}",
        dma[0]
    );
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(Some(format!(
        "IOVAs {:#x}, {:#x} for physical {:#x}, {:#x}",
        dma[0], dma[1], phys[0], phys[1]
    )))
}

pub(super) fn iommu_dma_roundtrip(c: &Ctx) -> Step<Option<String>> {
    needs_provider(c)?;
    let peer = iommu_peer(c)?;
    let a = c.a;
    let (src, dst) = (512u64, a + 256);
    let va = c.alloc(2 * a)?;
    let p = call(c.pin(va, 2 * a, 0), "PIN")?;
    let m = call(c.map(&p, p.pinned_length), "mmap")?;
    let mut dma = [0u64; 2];
    map_for(c, p.handle, &peer, &mut dma)?;
    // memory -> edu's buffer (a DMA read through the IOMMU), then into the other GPU page
    let bus = call(c.gp.peer_dma(p.handle, src, XFER, 8, 0), "PEER_DMA to edu")?;
    ensure!(
        bus == dma[0] + src,
        "the engine given the mapping's IOVA",
        "{bus:#x}, mapping says {:#x}",
        dma[0] + src
    );
    let bus = call(
        c.gp.peer_dma(p.handle, dst, XFER, 8, kmod::PEER_DMA_TO_MEM),
        "PEER_DMA from edu",
    )?;
    ensure!(
        bus == dma[1] + 256,
        "the engine given the mapping's IOVA",
        "{bus:#x}, mapping says {:#x}",
        dma[1] + 256
    );
    for k in 0..u64::from(XFER) / 8 {
        let want = testprov_pattern(va + src + 8 * k);
        let got = m.read((dst + 8 * k) as usize);
        ensure!(
            got == Ok(want),
            format!("the source's fill pattern {want:#x} after the round trip"),
            "word {k}: {got:?}"
        );
    }
    for off in [dst - 8, dst + u64::from(XFER)] {
        ensure!(
            m.read(off as usize) == Ok(testprov_pattern(va + off)),
            "the bytes beside the copy unchanged",
            "at +{off:#x}: {:?}",
            m.read(off as usize)
        );
    }
    check_pattern(&m, va, a)?;
    want_errno(
        c.gp.peer_dma(p.handle, a - 8, 16, 0, 0),
        libc::ERANGE,
        "PEER_DMA across two page-table entries",
    )?;
    want_errno(
        c.gp.peer_dma(p.handle, 2 * a, 8, 0, 0),
        libc::ERANGE,
        "PEER_DMA past the pinned range",
    )?;
    want_errno(
        c.gp.peer_dma(p.handle, 0, 96, kmod::PEER_BUF_SIZE - 96, 0),
        libc::EINVAL,
        "PEER_DMA reaching the end of edu's buffer",
    )?;
    want_errno(
        c.gp.peer_dma(p.handle, 0, 8, 0, kmod::PEER_DMA_RAW),
        libc::EINVAL,
        "raw PEER_DMA with a handle",
    )?;
    call(c.gp.dma_unmap(p.handle), "DMA_UNMAP")?;
    want_errno(
        c.gp.peer_dma(p.handle, 0, 8, 0, 0),
        libc::ENODEV,
        "PEER_DMA without a mapping",
    )?;
    drop(m);
    unpin(c, p.handle, "UNPIN")?;
    c.free(va)?;
    Ok(Some(format!(
        "{XFER} bytes to edu and back through IOVAs {:#x}, {:#x}",
        dma[0], dma[1]
    )))
}

/// After revocation the module refuses the handle, and a peer that kept the IOVAs is stopped
/// by the IOMMU: the fault is logged and the pages, still held by a second pin, keep their
/// bytes. Desktop: the keeping pin is persistent and the free revokes the other (§1.10,
/// §2.3); Tegra (no persistent API): both are ordinary and the other is revoked by its
/// put_pages, which fires the callback there (§4.4.3).
pub(super) fn iommu_stale_iova_faults_after_revoke(c: &Ctx) -> Step<Option<String>> {
    needs_provider(c)?;
    let peer = iommu_peer(c)?;
    let a = c.a;
    let va = c.alloc(2 * a)?;
    let keep_flags = if c.tegra { 0 } else { kmod::PIN_PERSISTENT };
    let keep = call(c.pin(va, 2 * a, keep_flags), "PIN that keeps the pages")?;
    let m = call(c.map(&keep, keep.pinned_length), "mmap")?;
    let rev = call(c.pin(va, 2 * a, 0), "PIN to revoke")?;
    let mut dma = [0u64; 2];
    map_for(c, rev.handle, &peer, &mut dma)?;
    // edu's buffer now holds page 0's bytes, not page 1's
    call(c.gp.peer_dma(rev.handle, 0, XFER, 0, 0), "PEER_DMA to edu")?;
    let mut kmsg = Kmsg::open()?;
    if c.tegra {
        let u = unpin(c, rev.handle, "UNPIN")?;
        ensure!(
            u.result == kmod::UNPIN_REVOKED_DURING && u.callbacks == 1,
            "put_pages fired the callback (§4.4.3)",
            "result {}, {} callbacks",
            u.result,
            u.callbacks
        );
        want_errno(
            c.gp.peer_dma(rev.handle, 0, 8, 0, kmod::PEER_DMA_TO_MEM),
            libc::ENOENT,
            "PEER_DMA on the released handle",
        )?;
    } else {
        let cbs = c.free(va)?;
        ensure!(
            cbs == Some(1),
            "the free revoked the ordinary pin only",
            "{cbs:?} callbacks"
        );
        let e = call(c.gp.events(rev.handle), "EVENTS")?;
        ensure!(
            e.state == kmod::STATE_REVOKED && e.callbacks == 1,
            "revoked by one callback",
            "state {}, {} callbacks",
            e.state,
            e.callbacks
        );
        // the module issues no DMA for a revoked handle
        want_errno(
            c.gp.peer_dma(rev.handle, 0, 8, 0, kmod::PEER_DMA_TO_MEM),
            libc::ESTALE,
            "PEER_DMA on the revoked handle",
        )?;
    }
    if let Some(s) = c.stats() {
        ensure!(
            s.dma_mappings == 0,
            "the callback unmapped the IOVAs",
            "{} mappings",
            s.dma_mappings
        );
    }
    // A peer still holding the IOVAs: read 8 bytes of page 0, then write page 0's bytes over
    // page 1. The read comes first and is short: arm-smmu-v3 logs a fault per access (edu's
    // engine moves 4 bytes at a time) and rate-limits its log to 10 events in 5 s, so a
    // 1024-byte write first would leave the read's event unlogged (as the C scenario does).
    call(
        c.gp.peer_dma(0, dma[0], 8, 2048, kmod::PEER_DMA_RAW),
        "raw PEER_DMA read from the revoked IOVA",
    )?;
    let read_fault = kmsg.iommu_fault(&peer, Access::Read, dma[0]);
    ensure!(
        read_fault.is_some(),
        format!(
            "an IOMMU fault for edu's read from revoked IOVA {:#x}",
            dma[0]
        ),
        "none logged within 3 s"
    );
    call(
        c.gp.peer_dma(
            0,
            dma[1],
            XFER,
            0,
            kmod::PEER_DMA_RAW | kmod::PEER_DMA_TO_MEM,
        ),
        "raw PEER_DMA write to the revoked IOVA",
    )?;
    let write_fault = kmsg.iommu_fault(&peer, Access::Write, dma[1]);
    ensure!(
        write_fault.is_some(),
        format!(
            "an IOMMU fault for edu's write to revoked IOVA {:#x}",
            dma[1]
        ),
        "none logged within 3 s"
    );
    // no page took the write: page 1 holds its own fill pattern
    for k in 0..u64::from(XFER) / 8 {
        let off = a + 8 * k;
        ensure!(
            m.read(off as usize) == Ok(testprov_pattern(va + off)),
            "page 1 unchanged after the faulted write",
            "word {k}: {:?}",
            m.read(off as usize)
        );
    }
    check_pattern(&m, va, 2 * a)?;
    drop(m);
    let u = unpin(c, keep.handle, "UNPIN of the keeping pin")?;
    let (want, _) = c.clean_unpin();
    ensure!(
        u.result == want,
        "the keeping pin released normally",
        "result {}",
        u.result
    );
    if c.tegra {
        c.free(va)?;
    }
    Ok(write_fault)
}

/// §3.4 / §2.3: the callback waits for the peer's transfer in flight and the pages are unmapped
/// only after it returns: a free during edu's DMA read leaves the transfer whole (no DMAR
/// fault; edu's buffer holds the source's bytes, copied out to a second allocation to read).
pub(super) fn iommu_free_waits_for_peer_dma(c: &Ctx) -> Step<Option<String>> {
    needs_provider(c)?;
    let peer = iommu_peer(c)?;
    let a = c.a;
    let vb = c.alloc(a)?;
    let pb = call(c.pin(vb, a, 0), "PIN b")?;
    let m = call(c.map(&pb, pb.pinned_length), "mmap b")?;
    map_for(c, pb.handle, &peer, &mut [0u64; 1])?;
    let mut source = None;
    for _ in 0..5 {
        let va = c.alloc(a)?;
        let pa = call(c.pin(va, a, 0), "PIN a")?;
        let mut dma = [0u64; 1];
        map_for(c, pa.handle, &peer, &mut dma)?;
        let mut kmsg = Kmsg::open()?;
        let started = AtomicBool::new(false);
        let done = AtomicBool::new(false);
        let gp = &c.gp;
        let (ret, overlapped, cbs) = std::thread::scope(|s| {
            let t = s.spawn(|| {
                started.store(true, Ordering::SeqCst);
                let r = gp.peer_dma(pa.handle, 0, XFER, 0, 0);
                done.store(true, Ordering::SeqCst);
                r
            });
            while !started.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // edu's transfer takes 100 ms of guest time
            std::thread::sleep(std::time::Duration::from_millis(20));
            let overlapped = !done.load(Ordering::SeqCst);
            let cbs = c.free(va);
            (t.join(), overlapped, cbs)
        });
        let ret = ret.map_err(|_| CaseStatus::error("the PEER_DMA thread panicked"))?;
        let cbs = cbs?;
        ensure!(
            cbs.unwrap_or(1) == 1,
            "the free fired the callback",
            "{cbs:?}"
        );
        match ret {
            // revoked before the transfer began: not the race; again
            Err(Errno(libc::ESTALE)) => {}
            r => {
                call(r, "PEER_DMA during the free")?;
                let fault = kmsg.iommu_fault_within(&peer, Access::Any, dma[0], 50);
                ensure!(
                    fault.is_none(),
                    "no IOMMU fault for the transfer in flight",
                    "{fault:?}"
                );
                if overlapped {
                    source = Some(va);
                }
            }
        }
        unpin(c, pa.handle, "UNPIN a")?;
        if source.is_some() {
            break;
        }
    }
    let Some(va) = source else {
        return Err(CaseStatus::fail(
            "a free overlapping edu's transfer",
            "the transfer was never in flight at the free in 5 tries",
        ));
    };
    // edu's buffer -> b, whose own bytes differ from a's
    call(
        c.gp.peer_dma(pb.handle, 0, XFER, 0, kmod::PEER_DMA_TO_MEM),
        "PEER_DMA edu -> b",
    )?;
    for k in 0..u64::from(XFER) / 8 {
        let want = testprov_pattern(va + 8 * k);
        let got = m.read((8 * k) as usize);
        ensure!(
            got == Ok(want),
            format!("the freed source's bytes {want:#x}, read whole before the unmapping"),
            "word {k}: {got:?}"
        );
    }
    drop(m);
    unpin(c, pb.handle, "UNPIN b")?;
    c.free(vb)?;
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A /dev/kmsg record as the kernel gives one: `pri,seq,time,flags;message`, the tab
    /// escaped as `\x09`, then the dictionary of the device that logged it
    /// (Documentation/ABI/testing/dev-kmsg).
    fn kmsg(seq: u32, msg: &str) -> String {
        format!(
            "3,{seq},33902305,-;{}\n SUBSYSTEM=platform\n DEVICE=+platform:9050000.smmuv3\n",
            msg.replace('\t', "\\x09")
        )
    }

    /// The four records arm-smmu-v3 logged for one fault in the arm64 guest (ci/kmod-vm-arm64,
    /// QEMU 7.2's SMMUv3, Linux 6.1): event 0x10, StreamID 0x10 (edu at 00:02.0), input
    /// address 0xfffc010, a write (RnW clear).
    const SMMU_WRITE_FAULT: [&str; 5] = [
        "arm-smmu-v3 9050000.smmuv3: event 0x10 received:",
        "arm-smmu-v3 9050000.smmuv3: \t0x0000001000000010",
        "arm-smmu-v3 9050000.smmuv3: \t0x0000000000000000",
        "arm-smmu-v3 9050000.smmuv3: \t0x000000000fffc010",
        "arm-smmu-v3 9050000.smmuv3: \t0x0000000000000000",
    ];
    const EDU_ARM64: (u32, u32, u32) = (0, 0, 2 << 3);

    fn scan(access: Access, addr: u64, peer: (u32, u32, u32), msgs: &[&str]) -> Option<String> {
        let mut s = FaultScan::new(peer, access, addr);
        let mut seen = None;
        for (i, m) in msgs.iter().enumerate() {
            if let Some(d) = s.record(&kmsg(i as u32, m)) {
                assert!(seen.is_none(), "one report, found twice");
                assert_eq!(i, msgs.len() - 1, "the report completes at its last record");
                seen = Some(d);
            }
        }
        seen
    }

    #[test]
    fn an_smmu_translation_fault_is_found_by_its_stream_direction_and_page() {
        let seen = scan(Access::Write, 0xfffc000, EDU_ARM64, &SMMU_WRITE_FAULT);
        assert_eq!(
            seen.as_deref(),
            Some("SMMUv3 F_TRANSLATION (write) StreamID 0x10 input address 0xfffc010")
        );
        assert!(scan(Access::Any, 0xfffc123, EDU_ARM64, &SMMU_WRITE_FAULT).is_some());
        // another page, another direction, another device: not this fault
        assert!(scan(Access::Write, 0xfffd000, EDU_ARM64, &SMMU_WRITE_FAULT).is_none());
        assert!(scan(Access::Read, 0xfffc000, EDU_ARM64, &SMMU_WRITE_FAULT).is_none());
        assert!(scan(Access::Write, 0xfffc000, (0, 0, 3 << 3), &SMMU_WRITE_FAULT).is_none());
        // the same words with RnW set are a read
        let mut read = SMMU_WRITE_FAULT;
        read[2] = "arm-smmu-v3 9050000.smmuv3: \t0x0000000800000000";
        assert!(scan(Access::Read, 0xfffc000, EDU_ARM64, &read).is_some());
        assert!(scan(Access::Write, 0xfffc000, EDU_ARM64, &read).is_none());
    }

    #[test]
    fn only_a_translation_fault_event_with_all_four_words_counts() {
        // another event number (0x0a: C_BAD_STE) with the same words
        let mut other = SMMU_WRITE_FAULT;
        other[0] = "arm-smmu-v3 9050000.smmuv3: event 0x0a received:";
        assert!(scan(Access::Any, 0xfffc000, EDU_ARM64, &other).is_none());
        // three words, then a new event: the first is dropped, the second completes
        let mut msgs = SMMU_WRITE_FAULT[..4].to_vec();
        msgs.extend_from_slice(&SMMU_WRITE_FAULT);
        let mut s = FaultScan::new(EDU_ARM64, Access::Write, 0xfffc000);
        let hits: Vec<usize> = msgs
            .iter()
            .enumerate()
            .filter_map(|(i, m)| s.record(&kmsg(i as u32, m)).map(|_| i))
            .collect();
        assert_eq!(hits, vec![8]);
        // words that are not hex end nothing and complete nothing
        assert!(s
            .record(&kmsg(9, "arm-smmu-v3 9050000.smmuv3: \tgarbage"))
            .is_none());
    }

    #[test]
    fn an_intel_iommu_dmar_record_is_found_by_device_direction_and_page() {
        // intel-iommu's format (drivers/iommu/intel/dmar.c, dmar_fault_do_one), edu at 00:03.0
        let rec = "DMAR: [DMA Write NO_PASID] Request device [00:03.0] fault addr 0xfffe000 \
                   [fault reason 0x05] PTE Write access is not set";
        let edu = (0, 0, 3 << 3);
        assert!(scan(Access::Write, 0xfffe010, edu, &[rec]).is_some());
        assert!(scan(Access::Any, 0xfffe000, edu, &[rec]).is_some());
        assert!(scan(Access::Read, 0xfffe000, edu, &[rec]).is_none());
        assert!(scan(Access::Write, 0xffff000, edu, &[rec]).is_none());
        assert!(scan(Access::Write, 0xfffe000, (0, 0, 4 << 3), &[rec]).is_none());
    }
}
