//! CUDA driver backend, through cudarc with run-time loading: the harness builds and runs with
//! no CUDA installed, and then there is simply no GPU capability.
//!
//! cudarc panics if it cannot load libcuda, so presence is checked with `dlopen` first.

use std::str::FromStr;

use cudarc::driver::{result, sys};
use serde::Serialize;

pub mod handles;

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
    /// The ordinal of the GPU the run uses (`--device`; the probe's own default is 0).
    pub selected: i32,
}

impl DriverInfo {
    /// The GPU the run uses.
    pub fn selected_gpu(&self) -> Option<&GpuInfo> {
        self.gpus.iter().find(|g| g.ordinal == self.selected)
    }
}

/// Why the driver cannot be used: no GPU capability (the probe), or a device that would not
/// open. Each driver failure carries the call and its `CUresult` (printed with its name and
/// the driver's description).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    #[error("no GPU: libcuda.so.1 cannot be loaded ({0})")]
    Unloadable(String),
    #[error("no GPU: cuInit failed: {0:?}")]
    Init(result::DriverError),
    #[error("no GPU: the driver reports 0 devices")]
    NoDevices,
    /// cudarc panicked while loading the driver.
    #[error("no GPU: the CUDA driver could not be loaded")]
    LoadPanicked,
    /// A query that failed after the driver initialised.
    #[error("{call}: {error:?}")]
    Query {
        call: &'static str,
        error: result::DriverError,
    },
    #[error(transparent)]
    Call(#[from] DriverCallError),
    /// `--device` names no device the driver sees.
    #[error("no GPU: {0}")]
    NoSuchDevice(#[from] NoSuchDevice),
}

pub use crate::config::{BadDeviceSelector, DeviceSelector};

/// A selector that matches none of the devices the driver sees; names them all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--device {wanted}: the driver sees {}", seen_text(.seen))]
pub struct NoSuchDevice {
    pub wanted: DeviceSelector,
    /// (ordinal, name, UUID) of each device seen.
    pub seen: Vec<(i32, String, String)>,
}

fn seen_text(seen: &[(i32, String, String)]) -> String {
    match seen.len() {
        0 => "no device".into(),
        n => format!(
            "{n} device{} ({})",
            if n == 1 { "" } else { "s" },
            seen.iter()
                .map(|(o, name, uuid)| format!("{o}: {name} {uuid}"))
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

impl DeviceSelector {
    /// The ordinal of the device this selects among `gpus` (the probe's list).
    pub fn resolve(&self, gpus: &[GpuInfo]) -> Result<i32, NoSuchDevice> {
        let found = gpus.iter().find(|g| match self {
            DeviceSelector::Ordinal(n) => i64::from(g.ordinal) == i64::from(*n),
            DeviceSelector::Uuid(hex) => DeviceSelector::from_str(&g.uuid)
                .is_ok_and(|u| u == DeviceSelector::Uuid(hex.clone())),
        });
        found.map(|g| g.ordinal).ok_or_else(|| NoSuchDevice {
            wanted: self.clone(),
            seen: gpus
                .iter()
                .map(|g| (g.ordinal, g.name.clone(), g.uuid.clone()))
                .collect(),
        })
    }
}

fn query(call: &'static str) -> impl Fn(result::DriverError) -> CudaError {
    move |error| CudaError::Query { call, error }
}

fn libcuda_loadable() -> Result<(), CudaError> {
    // SAFETY: loading the driver library runs its initialisers, which is what using it needs.
    unsafe { libloading::Library::new("libcuda.so.1") }
        .map(drop)
        .map_err(|e| CudaError::Unloadable(e.to_string()))
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
pub fn probe() -> Result<DriverInfo, CudaError> {
    libcuda_loadable()?;
    let caught = std::panic::catch_unwind(|| -> Result<DriverInfo, CudaError> {
        result::init().map_err(CudaError::Init)?;
        let mut v = 0;
        // SAFETY: out-pointer to a live local.
        unsafe { sys::cuDriverGetVersion(&mut v) }
            .result()
            .map_err(query("cuDriverGetVersion"))?;
        let count = result::device::get_count().map_err(query("cuDeviceGetCount"))?;
        if count == 0 {
            return Err(CudaError::NoDevices);
        }
        let nvml = nvml::Nvml::open().ok();
        let mut gpus = Vec::new();
        for ordinal in 0..count {
            let dev = result::device::get(ordinal).map_err(query("cuDeviceGet"))?;
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
            selected: 0,
        })
    });
    caught.unwrap_or(Err(CudaError::LoadPanicked))
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

    pub(crate) struct Nvml {
        lib: Library,
    }

    /// Why NVML is not used (the probe then leaves BAR1 size and driver version unknown).
    #[derive(Debug, thiserror::Error)]
    pub(crate) enum NvmlError {
        #[error(transparent)]
        Load(#[from] libloading::Error),
        /// `nvmlReturn_t` of `nvmlInit_v2`.
        #[error("nvmlInit_v2 returned {0}")]
        Init(c_int),
    }

    type Init = unsafe extern "C" fn() -> c_int;
    type ByUuid = unsafe extern "C" fn(*const c_char, *mut *mut c_void) -> c_int;
    type Bar1 = unsafe extern "C" fn(*mut c_void, *mut Bar1Memory) -> c_int;
    type DriverVersion = unsafe extern "C" fn(*mut c_char, c_uint) -> c_int;

    impl Nvml {
        pub fn open() -> Result<Nvml, NvmlError> {
            // SAFETY: loading NVIDIA's management library.
            let lib = unsafe { Library::new("libnvidia-ml.so.1") }?;
            // SAFETY: nvmlInit_v2 takes no arguments.
            let rc = unsafe {
                let init: libloading::Symbol<Init> = lib.get(b"nvmlInit_v2\0")?;
                init()
            };
            if rc != 0 {
                return Err(NvmlError::Init(rc));
            }
            Ok(Nvml { lib })
        }

        pub(crate) fn bar1_total(&self, uuid: &str) -> Option<u64> {
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

        pub(crate) fn driver_version(&self) -> Option<String> {
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

    fn gpu(ordinal: i32, uuid: &str) -> GpuInfo {
        GpuInfo {
            ordinal,
            name: format!("fake {ordinal}"),
            compute_capability: "9.0".into(),
            uuid: uuid.into(),
            total_mem_mib: 1,
            bar1_total_mib: None,
        }
    }

    /// `--device` takes what nvidia-smi -L prints (and what CUDA_VISIBLE_DEVICES takes): an
    /// ordinal, or GPU- and 32 hex digits grouped 8-4-4-4-12.
    #[test]
    fn a_device_is_an_ordinal_or_a_uuid_as_nvidia_smi_prints_it() {
        let u = "GPU-8e7a1c2b-1f3d-4c5e-9a0b-0123456789ab";
        let hex = "8e7a1c2b1f3d4c5e9a0b0123456789ab";
        assert_eq!("3".parse(), Ok(DeviceSelector::Ordinal(3)));
        assert_eq!(" 0 ".parse(), Ok(DeviceSelector::Ordinal(0)));
        for text in [u, &u.to_uppercase(), &u[4..], hex] {
            assert_eq!(
                text.parse::<DeviceSelector>(),
                Ok(DeviceSelector::Uuid(hex.into())),
                "{text}"
            );
        }
        // and prints back as nvidia-smi does
        assert_eq!(DeviceSelector::Uuid(hex.into()).to_string(), u);
        assert_eq!(DeviceSelector::Ordinal(7).to_string(), "7");
        for bad in [
            "",
            "-1",
            "1.5",
            "99999999999",
            "GPU-",
            "GPU-8e7a1c2b-1f3d-4c5e-9a0b-0123456789a",
            "GPU-8e7a1c2b1f3d-4c5e-9a0b-0123456789ab",
            "GPU-8e7a1c2b-1f3d-4c5e-9a0b-0123456789ax",
            "all",
        ] {
            assert_eq!(
                bad.parse::<DeviceSelector>(),
                Err(BadDeviceSelector(bad.into())),
                "{bad}"
            );
        }
    }

    /// On a fake two-device machine: an ordinal or a UUID picks its device; one that matches
    /// none is refused naming every device seen.
    #[test]
    fn a_selector_resolves_among_the_devices_seen_or_names_them() {
        let a = "GPU-00000000-0000-0000-0000-00000000000a";
        let b = "GPU-00000000-0000-0000-0000-00000000000b";
        let gpus = [gpu(0, a), gpu(1, b)];
        assert_eq!(DeviceSelector::Ordinal(1).resolve(&gpus), Ok(1));
        assert_eq!(b.parse::<DeviceSelector>().unwrap().resolve(&gpus), Ok(1));
        assert_eq!(
            a[4..].parse::<DeviceSelector>().unwrap().resolve(&gpus),
            Ok(0)
        );
        let e = DeviceSelector::Ordinal(2).resolve(&gpus).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("--device 2: the driver sees 2 devices (0: fake 0 {a}; 1: fake 1 {b})")
        );
        let c = "GPU-00000000-0000-0000-0000-00000000000c";
        let e = c
            .parse::<DeviceSelector>()
            .unwrap()
            .resolve(&gpus)
            .unwrap_err();
        assert_eq!(e.wanted.to_string(), c);
        assert_eq!(
            DeviceSelector::Ordinal(0)
                .resolve(&[])
                .unwrap_err()
                .to_string(),
            "--device 0: the driver sees no device"
        );
    }

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
            Err(why) => {
                assert!(why.to_string().starts_with("no GPU"), "{why}");
                crate::require!(device: false, "a CUDA GPU (the probe's device half)");
            }
        }
    }
}

/// A primary context on one device, for cases that allocate and query memory. Only ever used
/// in an isolated child (see `Check::isolate`).
#[derive(Debug)]
pub struct Session {
    dev: sys::CUdevice,
}

/// A driver call's failure, with the call named.
#[derive(Debug, Clone, thiserror::Error)]
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

/// Whether a driver error leaves the context unusable: the CUresult codes the CUDA driver API
/// documents as "This leaves the process in an inconsistent state and any further CUDA work
/// will return the same error" (a kernel fault: illegal address or instruction, misaligned
/// address, invalid address space or PC, hardware stack error, device-side assert, launch
/// timeout, launch failure, tensor memory leak; and an uncorrectable ECC error or a contained
/// error). Every later call on the context fails with the same code until it is reset.
pub(crate) fn sticky(code: sys::CUresult) -> bool {
    use sys::CUresult as R;
    matches!(
        code,
        R::CUDA_ERROR_ILLEGAL_ADDRESS
            | R::CUDA_ERROR_LAUNCH_TIMEOUT
            | R::CUDA_ERROR_ASSERT
            | R::CUDA_ERROR_HARDWARE_STACK_ERROR
            | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | R::CUDA_ERROR_MISALIGNED_ADDRESS
            | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | R::CUDA_ERROR_INVALID_PC
            | R::CUDA_ERROR_LAUNCH_FAILED
            | R::CUDA_ERROR_TENSOR_MEMORY_LEAK
            | R::CUDA_ERROR_ECC_UNCORRECTABLE
            | R::CUDA_ERROR_CONTAINED
    )
}

impl Session {
    /// Reset the device's primary context after a sticky error ([`sticky`]) and make it
    /// current again: every allocation and module of the old context is gone, so the caller
    /// drops its buffers and modules first (their frees must not reach the new context's).
    /// A small allocation, memset and synchronisation then check that the context works.
    pub(crate) fn reset(&self) -> Result<(), DriverCallError> {
        // SAFETY: driver calls on this session's device with out-pointers to live locals.
        unsafe {
            check(
                "cuDevicePrimaryCtxReset",
                sys::cuDevicePrimaryCtxReset_v2(self.dev),
            )?;
            let mut ctx = std::ptr::null_mut();
            check(
                "cuDevicePrimaryCtxRetain",
                sys::cuDevicePrimaryCtxRetain(&mut ctx, self.dev),
            )?;
            check("cuCtxSetCurrent", sys::cuCtxSetCurrent(ctx))?;
        }
        let probe = self.buffer(4)?;
        self.memset(probe.ptr, 0, 4)?;
        self.synchronize()
    }

    /// Open the device `device` selects (the run's `--device`): its primary context, current
    /// on this thread. An ordinal opens directly; a UUID is looked up among the probe's devices.
    pub fn open_device(device: &DeviceSelector) -> Result<Session, CudaError> {
        let seen = || -> Result<Vec<GpuInfo>, CudaError> { Ok(probe()?.gpus) };
        match device {
            // (an ordinal past i32 is no device: the driver refuses it like any other)
            DeviceSelector::Ordinal(n) => {
                match Session::open(i32::try_from(*n).unwrap_or(i32::MAX)) {
                    Err(CudaError::Call(e))
                        if e.code == sys::CUresult::CUDA_ERROR_INVALID_DEVICE =>
                    {
                        // name the devices there are, not only the driver's code
                        Err(device
                            .resolve(&seen()?)
                            .err()
                            .map_or(e.into(), CudaError::from))
                    }
                    opened => opened,
                }
            }
            DeviceSelector::Uuid(_) => Session::open(device.resolve(&seen()?)?),
        }
    }

    /// Open device `ordinal`'s primary context and make it current on this thread. Private:
    /// outside this backend a device is the run's (`open_device` with `--device`), never a
    /// literal ordinal.
    fn open(ordinal: i32) -> Result<Session, CudaError> {
        probe()?;
        // SAFETY: driver calls with out-pointers to live locals; the library is loaded.
        unsafe {
            check("cuInit", sys::cuInit(0))?;
            let mut dev = 0;
            check("cuDeviceGet", sys::cuDeviceGet(&mut dev, ordinal))?;
            let mut ctx = std::ptr::null_mut();
            check(
                "cuDevicePrimaryCtxRetain",
                sys::cuDevicePrimaryCtxRetain(&mut ctx, dev),
            )?;
            check("cuCtxSetCurrent", sys::cuCtxSetCurrent(ctx))?;
            Ok(Session { dev })
        }
    }

    pub(crate) fn alloc(&self, bytes: usize) -> Result<sys::CUdeviceptr, DriverCallError> {
        let mut p = 0;
        // SAFETY: out-pointer to a live local; a context is current.
        check("cuMemAlloc", unsafe { sys::cuMemAlloc_v2(&mut p, bytes) })?;
        Ok(p)
    }

    pub(crate) fn free(&self, p: sys::CUdeviceptr) -> Result<(), DriverCallError> {
        // SAFETY: `p` came from `alloc` and is freed once by the caller's contract.
        check("cuMemFree", unsafe { sys::cuMemFree_v2(p) })
    }

    /// gpudirect §4.2: `cuPointerSetAttribute(&1, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, p)`; the raw
    /// result, since for host memory a failure is the expected answer.
    pub(crate) fn set_sync_memops(&self, p: sys::CUdeviceptr) -> sys::CUresult {
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
    pub(crate) fn attribute_u32(
        &self,
        attr: sys::CUpointer_attribute,
        p: sys::CUdeviceptr,
    ) -> Result<u32, DriverCallError> {
        assert_eq!(
            attribute_max_bytes(attr),
            Some(4),
            "{attr:?} is not a 32-bit pointer attribute"
        );
        let mut v: u32 = 0;
        // SAFETY: `v` holds the 4 bytes the driver writes for this attribute (asserted).
        check("cuPointerGetAttribute", unsafe {
            sys::cuPointerGetAttribute(&mut v as *mut u32 as *mut std::ffi::c_void, attr, p)
        })?;
        Ok(v)
    }

    /// A pointer attribute that is a 64-bit value (BUFFER_ID).
    pub(crate) fn attribute_u64(
        &self,
        attr: sys::CUpointer_attribute,
        p: sys::CUdeviceptr,
    ) -> Result<u64, DriverCallError> {
        assert!(
            attribute_max_bytes(attr).is_some_and(|n| n <= 8),
            "{attr:?} is not a pointer attribute of at most 64 bits"
        );
        let mut v: u64 = 0;
        // SAFETY: `v` holds the at most 8 bytes the driver writes for this attribute (asserted).
        check("cuPointerGetAttribute", unsafe {
            sys::cuPointerGetAttribute(&mut v as *mut u64 as *mut std::ffi::c_void, attr, p)
        })?;
        Ok(v)
    }

    pub fn device(&self) -> sys::CUdevice {
        self.dev
    }

    /// The device's UUID bytes, as `nvidia_p2p_page_table.gpu_uuid` carries them.
    pub(crate) fn uuid(&self) -> Result<[u8; 16], CudaError> {
        result::device::get_uuid(self.dev)
            .map(|u| u.bytes.map(|b| b as u8))
            .map_err(query("cuDeviceGetUuid"))
    }
}

pub use sys::CUpointer_attribute as PointerAttribute;
pub use sys::CUresult as DriverResult;

// ---------------------------------------------------------------------------------------------
// Modules, kernels, device buffers: what a case needs to run its own kernels. No area logic.

/// Bytes the driver JIT may write into its error log.
const JIT_LOG_BYTES: usize = 16 * 1024;

/// A loaded module (unloaded on drop).
#[derive(Debug)]
pub struct Module {
    raw: sys::CUmodule,
}

/// The most bytes `cuPointerGetAttribute` writes for `attr` (CUDA driver API, "Data types for
/// the attributes" of cuPointerGetAttribute): 4 for `unsigned int`, `int` and booleans, 8 for
/// pointers, `CUcontext`, `size_t` and `unsigned long long`; `None` for what is wider
/// (`P2P_TOKENS`, a struct) or not listed here, which the safe accessors refuse.
pub(crate) fn attribute_max_bytes(attr: sys::CUpointer_attribute) -> Option<usize> {
    use sys::CUpointer_attribute as A;
    match attr {
        A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE
        | A::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS
        | A::CU_POINTER_ATTRIBUTE_IS_MANAGED
        | A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        | A::CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE
        | A::CU_POINTER_ATTRIBUTE_MAPPED
        | A::CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE
        | A::CU_POINTER_ATTRIBUTE_ACCESS_FLAGS => Some(4),
        A::CU_POINTER_ATTRIBUTE_CONTEXT
        | A::CU_POINTER_ATTRIBUTE_DEVICE_POINTER
        | A::CU_POINTER_ATTRIBUTE_HOST_POINTER
        | A::CU_POINTER_ATTRIBUTE_BUFFER_ID
        | A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR
        | A::CU_POINTER_ATTRIBUTE_RANGE_SIZE
        | A::CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES
        | A::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE => Some(8),
        _ => None,
    }
}

/// A kernel of a loaded module; borrows the module, so it cannot outlive it (a launch after
/// `cuModuleUnload` would use a dangling handle).
#[derive(Debug, Clone, Copy)]
pub struct Function<'m> {
    raw: sys::CUfunction,
    _module: std::marker::PhantomData<&'m Module>,
}

/// Launch geometry: a 1-D grid of 1-D blocks is all the runners need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: u32,
    pub block: u32,
    pub shared_bytes: u32,
}

/// One kernel argument, in the kernel's parameter order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelArg {
    /// A device pointer (`.param .u64`).
    Ptr(sys::CUdeviceptr),
    U32(u32),
    U64(u64),
}

/// Debug output asked of the driver JIT when it compiles PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JitDebug {
    None,
    /// `CU_JIT_GENERATE_DEBUG_INFO`: full debug information (as `ptxas -g`).
    DebugInfo,
    /// `CU_JIT_GENERATE_LINE_INFO`: line tables only (as `ptxas -lineinfo`).
    LineInfo,
}

/// A module load the driver refused, with its JIT error log.
#[derive(Debug, thiserror::Error)]
#[error("cuModuleLoadDataEx returned {code:?}: {log}")]
pub struct LoadError {
    pub code: sys::CUresult,
    pub log: String,
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: `raw` came from cuModuleLoadDataEx and is unloaded once.
        unsafe {
            sys::cuModuleUnload(self.raw);
        }
    }
}

impl Session {
    /// Load a module from PTX text (JIT-compiled by the driver) or a cubin image. On failure
    /// the driver's JIT error log is in the error.
    pub(crate) fn load_ptx(&self, ptx: &str) -> Result<Module, LoadError> {
        self.load_ptx_with(ptx, JitDebug::None)
    }

    /// Load PTX asking the driver JIT for debug output (`CU_JIT_GENERATE_DEBUG_INFO` or
    /// `CU_JIT_GENERATE_LINE_INFO`), as a debugger-attached load does.
    pub(crate) fn load_ptx_with(&self, ptx: &str, debug: JitDebug) -> Result<Module, LoadError> {
        let mut image = ptx.as_bytes().to_vec();
        image.push(0);
        self.load_image(&image, debug)
    }

    /// Load a module from a cubin (ELF) image.
    pub fn load_cubin(&self, cubin: &[u8]) -> Result<Module, LoadError> {
        self.load_image(cubin, JitDebug::None)
    }

    fn load_image(&self, image: &[u8], debug: JitDebug) -> Result<Module, LoadError> {
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = vec![
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        // The driver reads option values as pointer-sized words; a size or a flag is passed
        // by value.
        let mut values: Vec<*mut std::ffi::c_void> = vec![
            log.as_mut_ptr() as *mut std::ffi::c_void,
            JIT_LOG_BYTES as *mut std::ffi::c_void,
        ];
        let flag = match debug {
            JitDebug::None => None,
            JitDebug::DebugInfo => Some(sys::CUjit_option::CU_JIT_GENERATE_DEBUG_INFO),
            JitDebug::LineInfo => Some(sys::CUjit_option::CU_JIT_GENERATE_LINE_INFO),
        };
        if let Some(flag) = flag {
            options.push(flag);
            values.push(std::ptr::without_provenance_mut(1));
        }
        let mut raw = std::ptr::null_mut();
        // SAFETY: `image` outlives the call (NUL-terminated for PTX); the log buffer is
        // JIT_LOG_BYTES long as the option says.
        let code = unsafe {
            sys::cuModuleLoadDataEx(
                &mut raw,
                image.as_ptr() as *const std::ffi::c_void,
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        if code == sys::CUresult::CUDA_SUCCESS {
            Ok(Module { raw })
        } else {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            Err(LoadError {
                code,
                log: String::from_utf8_lossy(&log[..end]).trim().to_string(),
            })
        }
    }

    /// A kernel of `module` by its (unmangled) name.
    pub fn function<'m>(
        &self,
        module: &'m Module,
        name: &str,
    ) -> Result<Function<'m>, DriverCallError> {
        let cname = std::ffi::CString::new(name).map_err(|_| DriverCallError {
            call: "cuModuleGetFunction",
            code: sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        })?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: live module, NUL-terminated name, out-pointer to a local.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut raw, module.raw, cname.as_ptr())
        })?;
        Ok(Function {
            raw,
            _module: std::marker::PhantomData,
        })
    }

    /// Launch `f` on the default stream; asynchronous (see [`Session::synchronize`]).
    ///
    /// # Safety
    /// `args` must match `f`'s parameters in number and size (`Ptr`/`U64` 8 bytes, `U32` 4):
    /// the driver copies as many bytes as the kernel declares from the pointers passed.
    pub unsafe fn launch(
        &self,
        f: Function<'_>,
        cfg: LaunchConfig,
        args: &[KernelArg],
    ) -> Result<(), DriverCallError> {
        // SAFETY: the caller's contract, passed on.
        unsafe { self.launch_cluster(f, cfg, 1, args) }
    }

    /// Launch `f` with thread block clusters of `cluster` CTAs along x; the grid must be a
    /// multiple of `cluster`. Asynchronous, as [`Session::launch`]. A cluster of one is a
    /// plain launch (`cuLaunchKernel`, which every driver has); larger clusters take
    /// `cuLaunchKernelEx` with `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION` (CUDA 12 drivers).
    ///
    /// # Safety
    /// As for [`Session::launch`].
    pub(crate) unsafe fn launch_cluster(
        &self,
        f: Function<'_>,
        cfg: LaunchConfig,
        cluster: u32,
        args: &[KernelArg],
    ) -> Result<(), DriverCallError> {
        // The driver takes one pointer per argument, to storage holding its value.
        let mut storage: Vec<u64> = args
            .iter()
            .map(|a| match *a {
                KernelArg::Ptr(p) => p,
                KernelArg::U64(v) => v,
                KernelArg::U32(v) => u64::from(v),
            })
            .collect();
        let mut ptrs: Vec<*mut std::ffi::c_void> = storage
            .iter_mut()
            .map(|v| v as *mut u64 as *mut std::ffi::c_void)
            .collect();
        // A u32 argument is read from the first 4 bytes of its slot: little-endian x86-64 and
        // aarch64 hosts put the low half there.
        if cluster <= 1 {
            // SAFETY: `storage` and `ptrs` outlive the call; argument count and sizes match
            // the kernel's parameters (this function's contract).
            return check("cuLaunchKernel", unsafe {
                sys::cuLaunchKernel(
                    f.raw,
                    cfg.grid,
                    1,
                    1,
                    cfg.block,
                    1,
                    1,
                    cfg.shared_bytes,
                    std::ptr::null_mut(),
                    ptrs.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            });
        }
        // SAFETY: a plain C struct of integers, for which all-zero bytes are a valid value;
        // the cluster dimension is then written into the union member its id selects.
        let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attr.value.clusterDim = sys::CUlaunchAttributeValue_union__bindgen_ty_1 {
            x: cluster,
            y: 1,
            z: 1,
        };
        let config = sys::CUlaunchConfig {
            gridDimX: cfg.grid,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: cfg.block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: cfg.shared_bytes,
            hStream: std::ptr::null_mut(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: `config`, `attr`, `storage` and `ptrs` outlive the call; argument count and
        // sizes match the kernel's parameters (this function's contract).
        check("cuLaunchKernelEx", unsafe {
            sys::cuLaunchKernelEx(&config, f.raw, ptrs.as_mut_ptr(), std::ptr::null_mut())
        })
    }

    /// The device's compute capability (major, minor).
    pub(crate) fn compute_capability(&self) -> Result<(i32, i32), DriverCallError> {
        let get = |attr| {
            let mut v = 0;
            // SAFETY: out-pointer to a live local; a device attribute query.
            check("cuDeviceGetAttribute", unsafe {
                sys::cuDeviceGetAttribute(&mut v, attr, self.dev)
            })
            .map(|()| v)
        };
        use sys::CUdevice_attribute as A;
        Ok((
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            get(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        ))
    }

    /// Wait for all work of the context; a kernel fault surfaces here.
    pub(crate) fn synchronize(&self) -> Result<(), DriverCallError> {
        // SAFETY: no arguments; a context is current.
        check("cuCtxSynchronize", unsafe { sys::cuCtxSynchronize() })
    }

    /// Launch, wait, and return the wall-clock time of launch plus execution.
    ///
    /// # Safety
    /// As for [`Session::launch`].
    pub(crate) unsafe fn launch_timed(
        &self,
        f: Function<'_>,
        cfg: LaunchConfig,
        args: &[KernelArg],
    ) -> Result<std::time::Duration, DriverCallError> {
        let start = std::time::Instant::now();
        // SAFETY: the caller's contract, passed on.
        unsafe { self.launch(f, cfg, args) }?;
        self.synchronize()?;
        Ok(start.elapsed())
    }

    /// Set `bytes` bytes at `p` to `value`. On device memory this does not wait for the host
    /// either (CUDA driver API, "API synchronization behavior"): it is ordered behind the
    /// context's earlier launches.
    pub(crate) fn memset(
        &self,
        p: sys::CUdeviceptr,
        value: u8,
        bytes: usize,
    ) -> Result<(), DriverCallError> {
        // SAFETY: the driver validates the range.
        check("cuMemsetD8", unsafe { sys::cuMemsetD8_v2(p, value, bytes) })
    }

    /// Copy host bytes to device memory at `dst`.
    pub(crate) fn copy_to_device(
        &self,
        dst: sys::CUdeviceptr,
        src: &[u8],
    ) -> Result<(), DriverCallError> {
        // SAFETY: `src` is valid for its length; the driver validates the device range.
        check("cuMemcpyHtoD", unsafe {
            sys::cuMemcpyHtoD_v2(dst, src.as_ptr() as *const std::ffi::c_void, src.len())
        })
    }

    /// Copy device memory at `src` into `dst` (its whole length).
    pub(crate) fn copy_to_host(
        &self,
        dst: &mut [u8],
        src: sys::CUdeviceptr,
    ) -> Result<(), DriverCallError> {
        // SAFETY: `dst` is valid for writes of its length.
        check("cuMemcpyDtoH", unsafe {
            sys::cuMemcpyDtoH_v2(dst.as_mut_ptr() as *mut std::ffi::c_void, src, dst.len())
        })
    }

    /// Copy `bytes` bytes of device memory from `src` to `dst`. Device-to-device copies do
    /// not wait for the host ("API synchronization behavior" in the CUDA driver API
    /// reference): the copy is queued behind the context's earlier work, so a run of resets
    /// and launches needs one wait at its end.
    pub(crate) fn copy_device(
        &self,
        dst: sys::CUdeviceptr,
        src: sys::CUdeviceptr,
        bytes: usize,
    ) -> Result<(), DriverCallError> {
        // SAFETY: plain integers; the driver validates both device ranges.
        check("cuMemcpyDtoD", unsafe {
            sys::cuMemcpyDtoD_v2(dst, src, bytes)
        })
    }

    /// Copy 32-bit words to the device.
    pub(crate) fn copy_u32_to_device(
        &self,
        dst: sys::CUdeviceptr,
        src: &[u32],
    ) -> Result<(), DriverCallError> {
        let bytes: Vec<u8> = src.iter().flat_map(|w| w.to_le_bytes()).collect();
        self.copy_to_device(dst, &bytes)
    }

    /// Read `count` 32-bit words from the device.
    pub(crate) fn copy_u32_to_host(
        &self,
        src: sys::CUdeviceptr,
        count: usize,
    ) -> Result<Vec<u32>, DriverCallError> {
        let mut bytes = vec![0u8; count * 4];
        self.copy_to_host(&mut bytes, src)?;
        Ok(u32_words(&bytes))
    }

    /// A device buffer freed on drop.
    pub fn buffer(&self, bytes: usize) -> Result<DeviceBuffer, DriverCallError> {
        Ok(DeviceBuffer {
            ptr: self.alloc(bytes.max(1))?,
            bytes,
        })
    }
}

/// One physical allocation mapped at two virtual address ranges of the context
/// (`cuMemCreate`, then `cuMemAddressReserve` + `cuMemMap` + `cuMemSetAccess` for each view):
/// two generic addresses of the same bytes, as a generic alias of a litmus location needs
/// (PTX ISA 7.5 "Proxies": virtual aliases of one physical location). Unmapped and released on
/// drop.
#[derive(Debug)]
pub struct DoubleMapping {
    handle: sys::CUmemGenericAllocationHandle,
    /// The two views, each `bytes` long.
    pub views: [sys::CUdeviceptr; 2],
    /// The mapped size: the request rounded up to the allocation granularity.
    pub bytes: usize,
}

impl Session {
    /// `bytes` of device memory mapped twice ([`DoubleMapping`]). A driver without virtual
    /// memory management answers with the failing call named (e.g. `cuMemCreate`
    /// returning `CUDA_ERROR_NOT_SUPPORTED`); what was made before it is undone.
    pub fn double_mapping(&self, bytes: usize) -> Result<DoubleMapping, DriverCallError> {
        // SAFETY: plain-old-data driver structs; zero is each field's "none".
        let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        prop.location.id = self.dev;
        let mut granularity = 0usize;
        // SAFETY: out-pointer to a live local, `prop` lives across the call.
        check("cuMemGetAllocationGranularity", unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        })?;
        let g = granularity.max(1);
        let size = bytes.max(1).div_ceil(g) * g;
        let mut handle = 0;
        // SAFETY: as above; a context is current.
        check("cuMemCreate", unsafe {
            sys::cuMemCreate(&mut handle, size, &prop, 0)
        })?;
        let mut m = DoubleMapping {
            handle,
            views: [0, 0],
            bytes: size,
        };
        let access = sys::CUmemAccessDesc {
            location: prop.location,
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        for k in 0..2 {
            let mut va = 0;
            // SAFETY: out-pointer to a live local; on failure `m`'s drop undoes the views
            // made so far (a zero view is skipped) and releases the handle.
            check("cuMemAddressReserve", unsafe {
                sys::cuMemAddressReserve(&mut va, size, g, 0, 0)
            })?;
            // SAFETY: `va` is a reserved range of `size` bytes, `handle` an allocation of as
            // many.
            check("cuMemMap", unsafe { sys::cuMemMap(va, size, 0, handle, 0) }).inspect_err(
                |_| {
                    // SAFETY: `va` was reserved just above and is not mapped.
                    unsafe { sys::cuMemAddressFree(va, size) };
                },
            )?;
            m.views[k] = va;
            // SAFETY: `va` is mapped for `size` bytes; `access` lives across the call.
            check("cuMemSetAccess", unsafe {
                sys::cuMemSetAccess(va, size, &access, 1)
            })?;
        }
        Ok(m)
    }
}

impl Drop for DoubleMapping {
    fn drop(&mut self) {
        // SAFETY: each non-zero view was reserved and mapped with `bytes`, the handle created
        // once; each is undone once.
        unsafe {
            for va in self.views {
                if va != 0 {
                    sys::cuMemUnmap(va, self.bytes);
                    sys::cuMemAddressFree(va, self.bytes);
                }
            }
            sys::cuMemRelease(self.handle);
        }
    }
}

/// Little-endian bytes as 32-bit words (a trailing partial word is dropped).
pub(crate) fn u32_words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Device memory owned by the caller, freed when dropped.
#[derive(Debug)]
pub struct DeviceBuffer {
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from cuMemAlloc and is freed once.
        unsafe {
            sys::cuMemFree_v2(self.ptr);
        }
    }
}

#[cfg(test)]
mod launch_tests {
    use super::*;

    /// Two views of one allocation are the same bytes: a word written through the first
    /// view (cuMemcpyHtoD) reads back through the second (cuMemcpyDtoH), the CUDA driver
    /// API's contract for two cuMemMap calls of one handle.
    #[test]
    fn a_double_mapping_shows_one_write_in_both_views() {
        let Ok(s) = Session::open(0) else {
            crate::require!(device: false, "a CUDA GPU (cuMemMap twice)");
            return;
        };
        let m = s.double_mapping(4096).expect("virtual memory management");
        assert_ne!(m.views[0], m.views[1]);
        s.copy_to_device(m.views[0] + 8, &0x5eed_u32.to_le_bytes())
            .unwrap();
        assert_eq!(s.copy_u32_to_host(m.views[1] + 8, 1).unwrap(), vec![0x5eed]);
    }

    #[test]
    fn words_are_little_endian() {
        assert_eq!(u32_words(&[1, 0, 0, 0, 0, 1, 0, 0, 9]), vec![1, 256]);
    }

    // With no GPU the session cannot open, and says why, without panicking (and the test is
    // reported as missing a GPU, failing under GPUCTS_REQUIRE_GPU=1); with one, a trivial PTX
    // kernel loads, launches and writes what it should.
    /// The widths come from the driver API's table of attribute types, not from the code:
    /// SYNC_MEMOPS is a boolean (4 bytes at most), BUFFER_ID an `unsigned long long`, and
    /// P2P_TOKENS a 16-byte struct the safe accessors must refuse.
    #[test]
    fn pointer_attribute_widths() {
        use sys::CUpointer_attribute as A;
        assert_eq!(
            attribute_max_bytes(A::CU_POINTER_ATTRIBUTE_SYNC_MEMOPS),
            Some(4)
        );
        assert_eq!(
            attribute_max_bytes(A::CU_POINTER_ATTRIBUTE_BUFFER_ID),
            Some(8)
        );
        assert_eq!(
            attribute_max_bytes(A::CU_POINTER_ATTRIBUTE_P2P_TOKENS),
            None
        );
        let s = Session { dev: 0 };
        let wide =
            std::panic::catch_unwind(|| s.attribute_u64(A::CU_POINTER_ATTRIBUTE_P2P_TOKENS, 0));
        let why = wide.expect_err("a 16-byte attribute into 8 bytes is refused");
        let why = why
            .downcast_ref::<String>()
            .map(String::as_str)
            .unwrap_or_default();
        assert!(
            why.contains("not a pointer attribute of at most 64 bits"),
            "{why}"
        );
    }

    #[test]
    fn session_or_reason() {
        let opened = Session::open(0);
        if let Err(why) = &opened {
            assert!(why.to_string().starts_with("no GPU"), "{why}");
        }
        crate::require!(device: opened.is_ok(), "a GPU");
        let s = opened.unwrap();
        let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .visible .entry k(.param .u64 p, .param .u32 v)\n{\n.reg .b64 %rd<3>;\n.reg .b32 %r<2>;\n\
            ld.param.u64 %rd1, [p];\ncvta.to.global.u64 %rd2, %rd1;\nld.param.u32 %r1, [v];\n\
            st.global.u32 [%rd2], %r1;\nret;\n}\n";
        let m = s.load_ptx(ptx).unwrap();
        let f = s.function(&m, "k").unwrap();
        let b = s.buffer(4).unwrap();
        s.memset(b.ptr, 0, 4).unwrap();
        // SAFETY: `k(.param .u64 p, .param .u32 v)` above.
        unsafe {
            s.launch_timed(
                f,
                LaunchConfig {
                    grid: 1,
                    block: 1,
                    shared_bytes: 0,
                },
                &[KernelArg::Ptr(b.ptr), KernelArg::U32(0xfeed)],
            )
        }
        .unwrap();
        assert_eq!(s.copy_u32_to_host(b.ptr, 1).unwrap(), vec![0xfeed]);
        let bad = s.load_ptx(".version 8.0\n.target sm_90\n.address_size 64\nbogus;\n");
        assert!(bad.is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// Context limits and the device printf stream (for the syscalls area).

pub use sys::CUlimit as ContextLimit;

impl Session {
    /// `cuCtxSetLimit` on the current context.
    pub(crate) fn set_limit(
        &self,
        limit: sys::CUlimit,
        value: usize,
    ) -> Result<(), DriverCallError> {
        // SAFETY: plain values; a context is current.
        check("cuCtxSetLimit", unsafe { sys::cuCtxSetLimit(limit, value) })
    }

    /// `cuCtxGetLimit` on the current context.
    pub fn limit(&self, limit: sys::CUlimit) -> Result<usize, DriverCallError> {
        let mut v = 0usize;
        // SAFETY: out-pointer to a live local; a context is current.
        check("cuCtxGetLimit", unsafe {
            sys::cuCtxGetLimit(&mut v, limit)
        })?;
        Ok(v)
    }
}

/// Run `f` with this process's stdout and stderr (file descriptors 1 and 2, where the driver
/// writes device printf and assert output) redirected into a temporary file, and return what
/// was written there. C stdio buffers are flushed before the descriptors are restored.
pub(crate) fn capture_output<R>(f: impl FnOnce() -> R) -> std::io::Result<(R, String)> {
    use std::io::{Read, Seek, Write};
    use std::os::fd::AsRawFd;
    let mut file = tempfile::tempfile()?;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: dup/dup2 on descriptors this process owns; the saved copies are restored and
    // closed below on every path.
    let saved = unsafe { [libc::dup(1), libc::dup(2)] };
    if saved.iter().any(|&d| d < 0) {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `file` is open for the duration; 1 and 2 are replaced by it.
    unsafe {
        libc::dup2(file.as_raw_fd(), 1);
        libc::dup2(file.as_raw_fd(), 2);
    }
    let r = f();
    // SAFETY: flush every C stdio stream (the driver prints through stdio), then put the
    // saved descriptors back and close the copies.
    unsafe {
        libc::fflush(std::ptr::null_mut());
        libc::dup2(saved[0], 1);
        libc::dup2(saved[1], 2);
        libc::close(saved[0]);
        libc::close(saved[1]);
    }
    let mut out = String::new();
    file.seek(std::io::SeekFrom::Start(0))?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    out.push_str(&String::from_utf8_lossy(&bytes));
    Ok((r, out))
}

#[cfg(test)]
mod capture_tests {
    // What C code writes to stdout and stderr while captured comes back, and the descriptors
    // work again afterwards.
    #[test]
    fn captures_c_stdio_on_both_streams() {
        let (_, out) = super::capture_output(|| {
            // SAFETY: NUL-terminated format strings without conversions.
            unsafe {
                libc::printf(c"to-stdout\n".as_ptr());
                libc::write(2, c"to-stderr\n".as_ptr() as *const libc::c_void, 10);
            }
        })
        .unwrap();
        assert!(
            out.contains("to-stdout") && out.contains("to-stderr"),
            "{out}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// GPUDirect RDMA userspace API (gpudirect §4.2): address ranges, attributes, dma-buf export.

impl Session {
    /// `cuMemGetAddressRange`: the base and size of the allocation containing `p` (§3.5).
    pub(crate) fn address_range(
        &self,
        p: sys::CUdeviceptr,
    ) -> Result<(sys::CUdeviceptr, usize), DriverCallError> {
        let (mut base, mut size) = (0, 0);
        // SAFETY: out-pointers to live locals.
        check("cuMemGetAddressRange", unsafe {
            sys::cuMemGetAddressRange_v2(&mut base, &mut size, p)
        })?;
        Ok((base, size))
    }

    /// `cuPointerGetAttributes` for 64-bit-or-smaller attributes, each read into its own u64
    /// (zeroed first, so a 32-bit attribute reads as its value). The raw result is returned
    /// with the values, since for some pointers a failure is the expected answer.
    pub(crate) fn pointer_attributes(
        &self,
        attrs: &[sys::CUpointer_attribute],
        p: sys::CUdeviceptr,
    ) -> (sys::CUresult, Vec<u64>) {
        for a in attrs {
            assert!(
                attribute_max_bytes(*a).is_some_and(|n| n <= 8),
                "{a:?} is not a pointer attribute of at most 64 bits"
            );
        }
        let mut vals = vec![0u64; attrs.len()];
        let mut ptrs: Vec<*mut std::ffi::c_void> = vals
            .iter_mut()
            .map(|v| v as *mut u64 as *mut std::ffi::c_void)
            .collect();
        let mut a = attrs.to_vec();
        // SAFETY: one 8-byte slot per attribute, each larger than or equal to what it holds.
        let r = unsafe {
            sys::cuPointerGetAttributes(a.len() as u32, a.as_mut_ptr(), ptrs.as_mut_ptr(), p)
        };
        (r, vals)
    }

    /// `cuMemGetHandleForAddressRange(DMA_BUF_FD)`: a dma-buf of `size` bytes at `p`
    /// (aligned to the host page size), owned by the result.
    pub(crate) fn dmabuf_fd(
        &self,
        p: sys::CUdeviceptr,
        size: usize,
    ) -> Result<std::os::fd::OwnedFd, DriverCallError> {
        use std::os::fd::FromRawFd;
        let mut fd: i32 = -1;
        // SAFETY: `fd` receives an int; the driver validates the range.
        check("cuMemGetHandleForAddressRange", unsafe {
            sys::cuMemGetHandleForAddressRange(
                &mut fd as *mut i32 as *mut std::ffi::c_void,
                p,
                size,
                sys::CUmemRangeHandleType::CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                0,
            )
        })?;
        // SAFETY: a fresh descriptor the driver handed to us.
        Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
    }
}

// ---------------------------------------------------------------------------------------------
// The driver's JIT linker (cuLink*), and module globals. Added for the xcall area.

/// A `cuLinkCreate` state, destroyed on drop (which also frees the linked image).
struct LinkState {
    raw: sys::CUlinkState,
}

impl Drop for LinkState {
    fn drop(&mut self) {
        // SAFETY: `raw` came from cuLinkCreate_v2 and is destroyed once.
        unsafe {
            sys::cuLinkDestroy(self.raw);
        }
    }
}

impl Session {
    /// Link PTX modules (name, text) with the driver's JIT linker (`cuLinkCreate`,
    /// `cuLinkAddData` per input, `cuLinkComplete`) and load the image. On failure the
    /// linker's error log is in the error.
    pub(crate) fn link_ptx(&self, inputs: &[(&str, &str)]) -> Result<Module, LoadError> {
        let mut log = vec![0u8; JIT_LOG_BYTES];
        let mut options = [
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
            sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        ];
        let mut values: [*mut std::ffi::c_void; 2] = [
            log.as_mut_ptr() as *mut std::ffi::c_void,
            JIT_LOG_BYTES as *mut std::ffi::c_void,
        ];
        let fail = |code: sys::CUresult, log: &[u8]| {
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            LoadError {
                code,
                log: String::from_utf8_lossy(&log[..end]).trim().to_string(),
            }
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: the options arrays and the log buffer (JIT_LOG_BYTES long, as the option
        // says) outlive the link state, which `LinkState` destroys before they are dropped.
        let code = unsafe {
            sys::cuLinkCreate_v2(
                options.len() as u32,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
                &mut raw,
            )
        };
        if code != sys::CUresult::CUDA_SUCCESS {
            return Err(fail(code, &log));
        }
        let state = LinkState { raw };
        for (name, ptx) in inputs {
            let mut image = ptx.as_bytes().to_vec();
            image.push(0);
            let cname = std::ffi::CString::new(*name).unwrap_or_default();
            // SAFETY: `image` (NUL-terminated PTX) and `cname` live across the call; the
            // driver copies the data.
            let code = unsafe {
                sys::cuLinkAddData_v2(
                    state.raw,
                    sys::CUjitInputType::CU_JIT_INPUT_PTX,
                    image.as_mut_ptr() as *mut std::ffi::c_void,
                    image.len(),
                    cname.as_ptr(),
                    0,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            if code != sys::CUresult::CUDA_SUCCESS {
                return Err(fail(code, &log));
            }
        }
        let mut cubin = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: out-pointers to locals; the image stays valid until `state` is dropped.
        let code = unsafe { sys::cuLinkComplete(state.raw, &mut cubin, &mut size) };
        if code != sys::CUresult::CUDA_SUCCESS {
            return Err(fail(code, &log));
        }
        let mut module = std::ptr::null_mut();
        // SAFETY: `cubin` is the linker's image, alive until `state` drops after this call.
        let code = unsafe { sys::cuModuleLoadData(&mut module, cubin) };
        drop(state);
        if code != sys::CUresult::CUDA_SUCCESS {
            return Err(fail(code, &log));
        }
        Ok(Module { raw: module })
    }

    /// Address and size of a module's global variable.
    pub fn global(
        &self,
        module: &Module,
        name: &str,
    ) -> Result<(sys::CUdeviceptr, usize), DriverCallError> {
        let cname = std::ffi::CString::new(name).map_err(|_| DriverCallError {
            call: "cuModuleGetGlobal",
            code: sys::CUresult::CUDA_ERROR_INVALID_VALUE,
        })?;
        let (mut ptr, mut bytes) = (0, 0usize);
        // SAFETY: live module, NUL-terminated name, out-pointers to locals.
        check("cuModuleGetGlobal", unsafe {
            sys::cuModuleGetGlobal_v2(&mut ptr, &mut bytes, module.raw, cname.as_ptr())
        })?;
        Ok((ptr, bytes))
    }
}
