//! DMA mappings of pinned pages for a peer device, and their release by the free callback.

use super::*;

/// The DMA peer: `GPUCTS_P2P_PEER=dddd:bb:dd.f` (a NIC on a rig), else 0000:00:00.0, the host
/// bridge every PC and the VM have.
pub(super) fn peer(c: &Ctx) -> Step<(u32, u32, u32)> {
    let Some(s) = c.config.p2p_peer.as_deref() else {
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

/// Whether an IOMMU translates for the PCI device (its group's domain type is DMA or DMA-FQ,
/// not identity), from sysfs.
pub(super) fn translated((dom, bus, devfn): (u32, u32, u32)) -> bool {
    std::fs::read_to_string(format!(
        "/sys/bus/pci/devices/{dom:04x}:{bus:02x}:{:02x}.{}/iommu_group/type",
        devfn >> 3,
        devfn & 7
    ))
    .is_ok_and(|t| t.trim().starts_with("DMA"))
}

/// A PCI bus number no device of domain 0 sits on (from sysfs), for ENODEV.
pub(super) fn absent_bus() -> u32 {
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

pub(super) fn dma_map_unmap(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let peer = peer(c)?;
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
        // the provider maps through the kernel DMA API: the physical address unless an IOMMU
        // translates for the peer (§2.4; §4.3 dma_map_pages gives the peer's I/O addresses)
        if translated(peer) {
            ensure!(
                dma[0] != phys[0] && dma[1] != phys[1],
                "IOVAs for a peer behind a translating IOMMU",
                "dma {:#x?} vs phys {:#x?}",
                &dma[..2],
                &phys[..2]
            );
        } else {
            ensure!(
                dma[..2] == phys[..2],
                "bus addresses equal physical (no translating IOMMU for the peer)",
                "dma {:#x?} vs phys {:#x?}",
                &dma[..2],
                &phys[..2]
            );
        }
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

pub(super) fn dma_mapping_freed_by_callback(c: &Ctx) -> Step<Option<String>> {
    let a = c.a;
    let va = c.alloc(a)?;
    let p = call(c.pin(va, a, 0), "PIN")?;
    call(
        c.gp.dma_map(p.handle, peer(c)?, if c.tegra { 1 } else { 0 }, None),
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
