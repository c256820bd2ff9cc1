//! CUDA driver backend, through cudarc with run-time loading: the harness builds and runs with
//! no CUDA installed, and then there is simply no GPU capability.
//!
//! cudarc panics if it cannot load libcuda, so presence is checked with `dlopen` first.

use cudarc::driver::{result, sys};
use serde::Serialize;

/// What the probe learns of each GPU.
#[derive(Debug, Clone, Serialize)]
pub struct GpuInfo {
    pub ordinal: i32,
    pub name: String,
    pub compute_capability: String,
    pub uuid: String,
    pub total_mem_mib: u64,
    /// From NVML, when libnvidia-ml is present.
    pub bar1_total_mib: Option<u64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DriverInfo {
    /// `cuDriverGetVersion`, e.g. "13.0".
    pub cuda_version: String,
    /// From NVML, e.g. "580.65.06".
    pub driver_version: Option<String>,
    pub gpus: Vec<GpuInfo>,
}

fn libcuda_loadable() -> Result<(), String> {
    // SAFETY: loading the driver library runs its initialisers, which is what using it needs.
    unsafe { libloading::Library::new("libcuda.so.1") }
        .map(drop)
        .map_err(|e| format!("no GPU: libcuda.so.1 cannot be loaded ({e})"))
}

fn uuid_text(u: &sys::CUuuid) -> String {
    let b: Vec<u8> = u.bytes.iter().map(|&c| c as u8).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(&b[0..4]),
        hex(&b[4..6]),
        hex(&b[6..8]),
        hex(&b[8..10]),
        hex(&b[10..16])
    )
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Probe the driver and its GPUs. `Err` says why there is no GPU capability.
pub fn probe() -> Result<DriverInfo, String> {
    libcuda_loadable()?;
    let caught = std::panic::catch_unwind(|| -> Result<DriverInfo, String> {
        result::init().map_err(|e| format!("no GPU: cuInit failed: {e:?}"))?;
        let mut v = 0;
        // SAFETY: out-pointer to a live local.
        unsafe { sys::cuDriverGetVersion(&mut v) }
            .result()
            .map_err(|e| format!("cuDriverGetVersion: {e:?}"))?;
        let count = result::device::get_count().map_err(|e| format!("cuDeviceGetCount: {e:?}"))?;
        if count == 0 {
            return Err("no GPU: the driver reports 0 devices".into());
        }
        let nvml = nvml::Nvml::open().ok();
        let mut gpus = Vec::new();
        for ordinal in 0..count {
            let dev = result::device::get(ordinal).map_err(|e| format!("cuDeviceGet: {e:?}"))?;
            let name = result::device::get_name(dev).unwrap_or_default();
            // SAFETY: valid device handle and attribute enums.
            let (major, minor, mem) = unsafe {
                (
                    result::device::get_attribute(
                        dev,
                        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                    )
                    .unwrap_or(0),
                    result::device::get_attribute(
                        dev,
                        sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                    )
                    .unwrap_or(0),
                    result::device::total_mem(dev).unwrap_or(0),
                )
            };
            let uuid = result::device::get_uuid(dev)
                .map(|u| uuid_text(&u))
                .unwrap_or_default();
            let bar1_total_mib = nvml
                .as_ref()
                .and_then(|n| n.bar1_total(&uuid))
                .map(|b| b >> 20);
            gpus.push(GpuInfo {
                ordinal,
                name,
                compute_capability: format!("{major}.{minor}"),
                uuid,
                total_mem_mib: (mem as u64) >> 20,
                bar1_total_mib,
            });
        }
        Ok(DriverInfo {
            cuda_version: format!("{}.{}", v / 1000, (v % 1000) / 10),
            driver_version: nvml.as_ref().and_then(|n| n.driver_version()),
            gpus,
        })
    });
    caught.unwrap_or_else(|_| Err("no GPU: the CUDA driver could not be loaded".into()))
}

/// The few NVML calls the probe uses (BAR1 size and driver version).
mod nvml {
    use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

    use libloading::Library;

    #[repr(C)]
    struct Bar1Memory {
        total: u64,
        free: u64,
        used: u64,
    }

    pub struct Nvml {
        lib: Library,
    }

    type Init = unsafe extern "C" fn() -> c_int;
    type ByUuid = unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> c_int;
    type Bar1 = unsafe extern "C" fn(*mut c_void, *mut Bar1Memory) -> c_int;
    type DriverVersion = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;

    impl Nvml {
        pub fn open() -> Result<Nvml, String> {
            // SAFETY: loading NVIDIA's management library.
            let lib = unsafe { Library::new("libnvidia-ml.so.1") }.map_err(|e| e.to_string())?;
            // SAFETY: nvmlInit_v2 takes no arguments.
            let rc = unsafe {
                let init: libloading::Symbol<Init> =
                    lib.get(b"nvmlInit_v2\0").map_err(|e| e.to_string())?;
                init()
            };
            if rc != 0 {
                return Err(format!("nvmlInit_v2 returned {rc}"));
            }
            Ok(Nvml { lib })
        }

        pub fn bar1_total(&self, uuid: &str) -> Option<u64> {
            let cu = CString::new(uuid).ok()?;
            // SAFETY: signatures per nvml.h; out-pointers to live locals.
            unsafe {
                let by_uuid: libloading::Symbol<ByUuid> =
                    self.lib.get(b"nvmlDeviceGetHandleByUUID\0").ok()?;
                let bar1: libloading::Symbol<Bar1> =
                    self.lib.get(b"nvmlDeviceGetBAR1MemoryInfo\0").ok()?;
                let mut dev = std::ptr::null_mut();
                if by_uuid(cu.as_ptr(), &mut dev) != 0 {
                    return None;
                }
                let mut m = Bar1Memory {
                    total: 0,
                    free: 0,
                    used: 0,
                };
                (bar1(dev, &mut m) == 0).then_some(m.total)
            }
        }

        pub fn driver_version(&self) -> Option<String> {
            let mut buf = [0 as c_char; 96];
            // SAFETY: buffer and its length.
            unsafe {
                let f: libloading::Symbol<DriverVersion> =
                    self.lib.get(b"nvmlSystemGetDriverVersion\0").ok()?;
                if f(buf.as_mut_ptr(), buf.len() as c_uint) != 0 {
                    return None;
                }
                Some(CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_formats_like_nvidia_smi() {
        let mut u = sys::CUuuid { bytes: [0; 16] };
        for (i, b) in u.bytes.iter_mut().enumerate() {
            *b = (i as u8 * 17) as _;
        }
        assert_eq!(uuid_text(&u), "GPU-00112233-4455-6677-8899-aabbccddeeff");
    }

    #[test]
    fn probe_never_panics() {
        // On a machine without a GPU this is Err naming libcuda; with one, Ok with a device.
        match probe() {
            Ok(info) => assert!(!info.gpus.is_empty()),
            Err(why) => assert!(why.starts_with("no GPU"), "{why}"),
        }
    }
}

/// A primary context on one device, for cases that allocate and query memory. Only ever used
/// in an isolated child (see `Check::isolate`).
pub struct Session {
    dev: sys::CUdevice,
}

/// A driver call's failure, with the call named.
#[derive(Debug, thiserror::Error)]
#[error("{call} returned {code:?}")]
pub struct DriverCallError {
    pub call: &'static str,
    pub code: sys::CUresult,
}

fn check(call: &'static str, code: sys::CUresult) -> Result<(), DriverCallError> {
    if code == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverCallError { call, code })
    }
}

impl Session {
    /// Open device `ordinal`'s primary context and make it current on this thread.
    pub fn open(ordinal: i32) -> Result<Session, String> {
        probe()?;
        // SAFETY: driver calls with out-pointers to live locals; the library is loaded.
        unsafe {
            check("cuInit", sys::cuInit(0)).map_err(|e| e.to_string())?;
            let mut dev = 0;
            check("cuDeviceGet", sys::cuDeviceGet(&mut dev, ordinal)).map_err(|e| e.to_string())?;
            let mut ctx = std::ptr::null_mut();
            check(
                "cuDevicePrimaryCtxRetain",
                sys::cuDevicePrimaryCtxRetain(&mut ctx, dev),
            )
            .map_err(|e| e.to_string())?;
            check("cuCtxSetCurrent", sys::cuCtxSetCurrent(ctx)).map_err(|e| e.to_string())?;
            Ok(Session { dev })
        }
    }

    pub fn alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr, DriverCallError> {
        let mut p = 0;
        // SAFETY: out-pointer to a live local; a context is current.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
        Ok(p)
    }

    pub fn free(&self, p: sys::CUdeviceptr) -> Result<(), DriverCallError> {
        // SAFETY: `p` came from `alloc` and is freed once by the caller's contract.
        check("cuMemFree", unsafe { sys::cuMemFree_v2(p) })
    }

    /// gpudirect §4.2: `cuPointerSetAttribute(&1, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p)`; the raw
    /// result, since for host memory a failure is the expected answer.
    pub fn set_sync_memops(&self, p: sys::CUdeviceptr) -> sys::CUresult {
        let flag: u32 = 1;
        // SAFETY: `flag` outlives the call; the driver validates `p`.
        unsafe {
            sys::cuPointerSetAttribute(
                &flag as *const u32 as *const std::ffi::c_void,
                sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                p,
            )
        }
    }

    /// A pointer attribute that is a 32-bit value (SYNC_MEMOPS).
    pub fn attribute_u32(
        &self,
        attr: sys::CUpointer_attribute,
        p: sys::CUdeviceptr,
    ) -> Result<u32, DriverCallError> {
        let mut v: u32 = 0;
        // SAFETY: `v` is large enough for a 32-bit attribute.
        check("cuPointerGetAttribute", unsafe {
            sys::cuPointerGetAttribute(&mut v as *mut u32 as *mut std::ffi::c_void, attr, p)
        })?;
        Ok(v)
    }

    /// A pointer attribute that is a 64-bit value (BUFFER_ID).
    pub fn attribute_u64(
        &self,
        attr: sys::CUpointer_attribute,
        p: sys::CUdeviceptr,
    ) -> Result<u64, DriverCallError> {
        let mut v: u64 = 0;
        // SAFETY: `v` is large enough for a 64-bit attribute.
        check("cuPointerGetAttribute", unsafe {
            sys::cuPointerGetAttribute(&mut v as *mut u64 as *mut std::ffi::c_void, attr, p)
        })?;
        Ok(v)
    }

    pub fn device(&self) -> sys::CUdevice {
        self.dev
    }
}

pub use sys::CUpointer_attribute as PointerAttribute;
pub use sys::CUresult as DriverResult;
