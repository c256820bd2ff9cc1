//! Userspace GPUDirect RDMA API on a GPU without a NIC (gpudirect §3.5, §4.2): pointer
//! attributes, address ranges, the §3.5 registration cache over real allocations, dma-buf
//! export.

use crate::backend::cuda::{DriverResult, PointerAttribute, Session};
use crate::backend::kmod::{self, Device};
use crate::capability::Capability;
use crate::gpudirect::regcache::{Lookup, Memory, Pinner, RegCache, GPU_PAGE};
use crate::outcome::CaseStatus;

type Step<T> = Result<T, CaseStatus>;

fn err(e: impl std::fmt::Display) -> CaseStatus {
    CaseStatus::error(e.to_string())
}

/// `CU_MEMORYTYPE_DEVICE` (cuda.h).
const MEMORYTYPE_DEVICE: u64 = 2;

/// §4.2: cuPointerGetAttributes with the attributes the spec names for GPUDirect RDMA
/// (BUFFER_ID, MEMORY_TYPE, IS_MANAGED) plus SYNC_MEMOPS after setting it; the batch agrees
/// with one cuPointerGetAttribute per attribute; a host pointer gets an error from
/// cuPointerGetAttribute(BUFFER_ID) ("anything else if pointer points to CPU memory").
pub(crate) fn pointer_attributes(s: &Session) -> Step<String> {
    let p = s.alloc(1 << 20).map_err(err)?;
    let r = (|| -> Step<String> {
        if s.set_sync_memops(p) != DriverResult::CUDA_SUCCESS {
            return Err(CaseStatus::fail(
                "SYNC_MEMOPS set on device memory",
                "an error",
            ));
        }
        let attrs = [
            PointerAttribute::CU_POINTER_ATTRIBUTE_BUFFER_ID,
            PointerAttribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            PointerAttribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
            PointerAttribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
        ];
        let (rc, v) = s.pointer_attributes(&attrs, p + 4096);
        if rc != DriverResult::CUDA_SUCCESS {
            return Err(CaseStatus::fail(
                "cuPointerGetAttributes succeeds",
                format!("{rc:?}"),
            ));
        }
        let id = s
            .attribute_u64(PointerAttribute::CU_POINTER_ATTRIBUTE_BUFFER_ID, p)
            .map_err(err)?;
        let mut bad = Vec::new();
        if v[0] != id || id == 0 {
            bad.push(format!("BUFFER_ID {:#x} in the batch, {id:#x} alone", v[0]));
        }
        if v[1] != MEMORYTYPE_DEVICE {
            bad.push(format!("MEMORY_TYPE {}", v[1]));
        }
        if v[2] != 0 {
            bad.push(format!("IS_MANAGED {}", v[2]));
        }
        if v[3] != 1 {
            bad.push(format!("SYNC_MEMOPS {}", v[3]));
        }
        let host = vec![0u8; 4096];
        if s.attribute_u64(
            PointerAttribute::CU_POINTER_ATTRIBUTE_BUFFER_ID,
            host.as_ptr() as u64,
        )
        .is_ok()
        {
            bad.push("BUFFER_ID of a host pointer succeeded".into());
        }
        if bad.is_empty() {
            Ok(format!("buffer id {id:#x}"))
        } else {
            Err(CaseStatus::fail(
                "the batch agrees with single queries: device memory, not managed, SYNC_MEMOPS 1; host pointer an error",
                bad.join("; "),
            ))
        }
    })();
    s.free(p).map_err(err)?;
    r
}

/// §3.5: cuMemGetAddressRange of an interior pointer gives the whole allocation; a freed
/// pointer gives an error.
pub(crate) fn address_range(s: &Session) -> Step<String> {
    let len = (1 << 20) + 12345;
    let p = s.alloc(len).map_err(err)?;
    let r = s.address_range(p + 77_777);
    s.free(p).map_err(err)?;
    let (base, size) =
        r.map_err(|e| CaseStatus::fail("cuMemGetAddressRange succeeds", e.to_string()))?;
    if base != p || size < len {
        return Err(CaseStatus::fail(
            format!("base {p:#x}, size >= {len}"),
            format!("base {base:#x}, size {size}"),
        ));
    }
    if s.address_range(p).is_ok() {
        return Err(CaseStatus::fail(
            "an error for a freed pointer",
            "cuMemGetAddressRange succeeded",
        ));
    }
    Ok(format!("{base:#x}+{size}"))
}

struct CudaMemory<'s>(&'s Session);

impl Memory for CudaMemory<'_> {
    type Error = crate::backend::cuda::DriverCallError;
    fn address_range(&self, p: u64) -> Result<(u64, u64), Self::Error> {
        self.0.address_range(p).map(|(b, s)| (b, s as u64))
    }
    fn buffer_id(&self, p: u64) -> Result<u64, Self::Error> {
        self.0
            .attribute_u64(PointerAttribute::CU_POINTER_ATTRIBUTE_BUFFER_ID, p)
    }
}

/// PIN refused by the companion module.
#[derive(Debug, thiserror::Error)]
#[error("PIN {va:#x}+{len}: {errno}")]
struct PinError {
    va: u64,
    len: u64,
    errno: kmod::Errno,
}

/// Pins through the companion module when it is loaded; otherwise records ranges only.
struct KmodPinner(Option<Device>, u32);

impl Pinner for KmodPinner {
    type Pin = (u64, u64, u64);
    type Error = PinError;
    fn pin(&mut self, va: u64, len: u64) -> Result<Self::Pin, PinError> {
        self.1 += 1;
        match &self.0 {
            Some(d) => d
                .pin(va, len, 0)
                .map(|p| (p.handle, va, len))
                .map_err(|errno| PinError { va, len, errno }),
            None => Ok((u64::from(self.1), va, len)),
        }
    }
    fn unpin(&mut self, pin: Self::Pin) {
        if let Some(d) = &self.0 {
            let _ = d.unpin(pin.0);
        }
    }
}

/// §3.5 registration cache on real allocations: miss, hit, and after cuMemFree + cuMemAlloc
/// (the driver often hands the same VA back) never the stale pin.
pub(crate) fn regcache_no_stale(s: &Session) -> Step<String> {
    let mem = CudaMemory(s);
    let dev = std::path::Path::new(kmod::DEVICE)
        .exists()
        .then(|| Device::open().ok())
        .flatten();
    let through = if dev.is_some() {
        "kmod pins"
    } else {
        "recorded ranges"
    };
    let mut cache = RegCache::new(KmodPinner(dev, 0));
    let len = 3 * GPU_PAGE as usize + 100;
    let a = s.alloc(len).map_err(err)?;
    let first = cache
        .get(&mem, a + 10, 10)
        .map(|(pin, r, how)| (*pin, r, how));
    let again = cache
        .get(&mem, a + 5000, 10)
        .map(|(pin, _, how)| (*pin, how));
    s.free(a).map_err(err)?;
    let b = s.alloc(len).map_err(err)?;
    let after = cache.get(&mem, b + 10, 10).map(|(pin, _, how)| (*pin, how));
    s.free(b).map_err(err)?;
    let freed = cache.get(&mem, b + 10, 10).map(|_| ());
    let _ = cache.into_pinner();
    let (pin1, (start, end), how1) = first.map_err(err)?;
    let (pin2, how2) = again.map_err(err)?;
    let (pin3, how3) = after.map_err(err)?;
    let mut bad = Vec::new();
    if how1 != Lookup::Miss || how2 != Lookup::Hit || pin2 != pin1 {
        bad.push(format!("first {how1:?}, second {how2:?}"));
    }
    if start % GPU_PAGE != 0 || end % GPU_PAGE != 0 || start > a || end < a + len as u64 {
        bad.push(format!("pinned {start:#x}..{end:#x} for {a:#x}+{len}"));
    }
    if how3 == Lookup::Hit || pin3 == pin1 {
        bad.push(format!(
            "after free and realloc ({}): {how3:?} with {}",
            if a == b {
                "same address"
            } else {
                "new address"
            },
            if pin3 == pin1 {
                "the old pin"
            } else {
                "a new pin"
            }
        ));
    }
    if freed.is_ok() {
        bad.push("a freed pointer was served".into());
    }
    if bad.is_empty() {
        Ok(format!(
            "miss, hit, then {how3:?} after realloc ({}), {through}",
            if a == b { "same VA" } else { "new VA" }
        ))
    } else {
        Err(CaseStatus::fail(
            "miss, hit, never the stale pin after free/realloc, an error for a freed pointer",
            bad.join("; "),
        ))
    }
}

/// cuMemGetHandleForAddressRange(DMA_BUF_FD): a descriptor, its size (lseek to the end) at
/// least the range; whether the exporter accepts a CPU mmap is recorded, not judged.
pub(crate) fn dmabuf_export(s: &Session) -> Step<String> {
    let len = 2usize << 20;
    let base = s.alloc(len + (2 << 20)).map_err(err)?;
    let p = (base + (2 << 20) - 1) & !((2 << 20) - 1);
    let r = (|| -> Step<String> {
        let fd = match s.dmabuf_fd(p, len) {
            Ok(fd) => fd,
            Err(e) if e.code == DriverResult::CUDA_ERROR_NOT_SUPPORTED => {
                return Err(CaseStatus::skip(
                    Capability::Dmabuf,
                    format!("the driver does not export dma-bufs: {e}"),
                ))
            }
            Err(e) => {
                return Err(CaseStatus::fail(
                    "cuMemGetHandleForAddressRange succeeds",
                    e.to_string(),
                ))
            }
        };
        use std::os::fd::AsRawFd;
        // SAFETY: lseek on our descriptor.
        let size = unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_END) };
        if size < len as i64 {
            return Err(CaseStatus::fail(
                format!("a dma-buf of at least {len} bytes"),
                format!("lseek end {size}"),
            ));
        }
        // SAFETY: a fresh mapping chosen by the kernel, unmapped at once.
        let m = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        let mmap = if m == libc::MAP_FAILED {
            format!("refused ({})", std::io::Error::last_os_error())
        } else {
            // SAFETY: our mapping.
            unsafe { libc::munmap(m, 4096) };
            "accepted".into()
        };
        Ok(format!(
            "fd {}, size {size}, CPU mmap {mmap}",
            fd.as_raw_fd()
        ))
    })();
    s.free(base).map_err(err)?;
    r
}
