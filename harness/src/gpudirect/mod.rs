//! The `gpudirect` area: the GPUDirect RDMA userspace API on a GPU, and the `nvidia_p2p_*`
//! kernel API through the companion module (`kmod/`, `/dev/gpucts`).

pub mod bench;
pub mod kmod_cases;
pub mod rdma_cases;
pub mod regcache;
mod userspace;

use serde::Deserialize;

use crate::area::{CaseContext, Check};
use crate::backend::cuda::{DriverCallError, DriverResult, PointerAttribute, Session};
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/gpudirect.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum GpudirectCheck {
    /// gpudirect §4.2: SYNC_MEMOPS set on device memory succeeds and reads back as 1; set on a
    /// host pointer fails.
    SyncMemops,
    /// gpudirect §3.5: a buffer id identifies one allocation, so freeing and allocating again
    /// (even at the same address) gives a different id.
    BufferIdChanges,
    /// §4.2: cuPointerGetAttributes (BUFFER_ID, MEMORY_TYPE, IS_MANAGED, SYNC_MEMOPS) agrees
    /// with single queries; a host pointer's BUFFER_ID is an error.
    PointerAttributes,
    /// §3.5: cuMemGetAddressRange of an interior pointer gives the whole allocation.
    AddressRange,
    /// §3.5: a registration cache with the buffer-id tag check and 64 KB rounding never serves
    /// a stale pin after free/realloc.
    RegcacheNoStale,
    /// dma-buf export of GPU memory (cuMemGetHandleForAddressRange): fd, size, mmap recorded.
    DmabufExport,
    /// One of the companion module's scenarios (kmod/tests/p2p_scenarios.c and more), driven
    /// through `/dev/gpucts` on test-provider memory (the VM) or cuMemAlloc memory (a rig);
    /// see `kmod_cases`.
    Kmod(kmod_cases::Scenario),
    /// RDMA through libibverbs: registration and loopback WRITE/READ (see `rdma_cases`).
    Rdma(rdma_cases::RdmaCase),
}

const ALLOC: usize = 1 << 20;

fn sync_memops(s: &Session) -> Result<CaseStatus, DriverCallError> {
    let p = s.alloc(ALLOC)?;
    let set = s.set_sync_memops(p);
    let got = s.attribute_u32(PointerAttribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p);
    let host = vec![0u8; 4096];
    let host_set = s.set_sync_memops(host.as_ptr() as u64);
    s.free(p)?;
    Ok(match (set, got, host_set) {
        (DriverResult::CUDA_SUCCESS, Ok(1), r) if r != DriverResult::CUDA_SUCCESS => {
            CaseStatus::pass()
        }
        (set, got, host_set) => CaseStatus::fail(
            "device: CUDA_SUCCESS and SYNC_MEMOPS reads 1; host pointer: an error",
            format!("device: {set:?}, reads {got:?}; host pointer: {host_set:?}"),
        ),
    })
}

fn buffer_id_changes(s: &Session) -> Result<CaseStatus, DriverCallError> {
    let attr = PointerAttribute::CU_POINTER_ATTRIBUTE_BUFFER_ID;
    let a = s.alloc(ALLOC)?;
    let id_a = s.attribute_u64(attr, a)?;
    s.free(a)?;
    let b = s.alloc(ALLOC)?;
    let id_b = s.attribute_u64(attr, b)?;
    s.free(b)?;
    Ok(if id_a != id_b {
        CaseStatus::pass_with(format!(
            "ids {id_a:#x} then {id_b:#x} (addresses {a:#x}, {b:#x}{})",
            if a == b { ", same address" } else { "" }
        ))
    } else {
        CaseStatus::fail(
            "a new buffer id for the new allocation",
            format!("the same id {id_a:#x} twice"),
        )
    })
}

/// A case on the run's GPU (`ctx`).
fn with_session(
    ctx: &CaseContext,
    f: impl FnOnce(&Session) -> Result<CaseStatus, DriverCallError>,
) -> CaseStatus {
    match ctx.open_gpu() {
        Ok(s) => f(&s).unwrap_or_else(CaseStatus::error),
        Err(e) => CaseStatus::error(e),
    }
}

/// A case returning a pass note or the status to report.
fn with_note(
    ctx: &CaseContext,
    f: impl FnOnce(&Session) -> Result<String, CaseStatus>,
) -> CaseStatus {
    match ctx.open_gpu() {
        Ok(s) => match f(&s) {
            Ok(note) => CaseStatus::pass_with(note),
            Err(status) => status,
        },
        Err(e) => CaseStatus::error(e),
    }
}

impl Check for GpudirectCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            GpudirectCheck::SyncMemops
            | GpudirectCheck::BufferIdChanges
            | GpudirectCheck::PointerAttributes
            | GpudirectCheck::AddressRange
            | GpudirectCheck::RegcacheNoStale
            | GpudirectCheck::DmabufExport => vec![Capability::Gpu],
            GpudirectCheck::Kmod(sc) => sc.requires(),
            GpudirectCheck::Rdma(c) => c.requires(),
        }
    }

    fn isolate(&self) -> bool {
        true
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            GpudirectCheck::SyncMemops => with_session(ctx, sync_memops),
            GpudirectCheck::BufferIdChanges => with_session(ctx, buffer_id_changes),
            GpudirectCheck::PointerAttributes => with_note(ctx, userspace::pointer_attributes),
            GpudirectCheck::AddressRange => with_note(ctx, userspace::address_range),
            GpudirectCheck::RegcacheNoStale => with_note(ctx, userspace::regcache_no_stale),
            GpudirectCheck::DmabufExport => with_note(ctx, userspace::dmabuf_export),
            GpudirectCheck::Kmod(sc) => kmod_cases::run(*sc, ctx.config),
            GpudirectCheck::Rdma(c) => rdma_cases::run(*c, ctx.config),
        }
    }
}
