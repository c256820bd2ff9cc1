//! Run-time bindings to NVRTC, nvJitLink and libNVVM (opened with `dlopen`, so the harness
//! builds and runs where none is installed). Only the handful of entry points gpucts uses.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::fmt;
use std::path::{Path, PathBuf};

use libloading::Library;

use super::LinkInputKind;

type Handle = *mut c_void;

/// The vendor library a call went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VendorLib {
    Nvrtc,
    NvJitLink,
    Nvvm,
}

/// A failure of the bindings: the library would not load, lacks a symbol, was handed a string
/// with a NUL, or returned a non-zero status from a call (with its program log, if it keeps one).
/// `Clone` because an open failure is kept for the process (`Toolchain` opens each library once).
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum FfiError {
    #[error("cannot load {}: {reason}", path.display())]
    Load { path: PathBuf, reason: String },
    #[error("missing symbol {symbol}: {reason}")]
    Symbol {
        symbol: &'static str,
        reason: String,
    },
    /// A C string argument (`what`: source, name, option) contains a NUL byte.
    #[error("{what} contains NUL{}", text.as_deref().map(|t| format!(": {t:?}")).unwrap_or_default())]
    Nul {
        what: &'static str,
        text: Option<String>,
    },
    #[error(transparent)]
    Call(#[from] CallError),
}

/// A library call that returned a non-zero status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallError {
    pub library: VendorLib,
    /// The C entry point, e.g. `nvJitLinkComplete`.
    pub call: &'static str,
    /// The library's status code (`nvrtcResult`, `nvJitLinkResult`, `nvvmResult`).
    pub code: i32,
    /// The library's name for `code` (NVRTC's `nvrtcGetErrorString`), when it has one.
    pub status: Option<String>,
    /// The input being added (`nvJitLinkAddData`), when the call names one.
    pub input: Option<String>,
    /// The program's error log, for the calls that leave one.
    pub log: Option<String>,
}

impl std::error::Error for CallError {}

impl fmt::Display for CallError {
    // The wording each library's callers have always shown (and parse, for NVRTC's log).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self
            .status
            .clone()
            .unwrap_or_else(|| format!("NVRTC error {}", self.code));
        let log = self.log.as_deref().unwrap_or("");
        match (self.library, self.call) {
            (VendorLib::Nvrtc, "nvrtcCompileProgram") => write!(f, "{status}: {log}"),
            (VendorLib::Nvrtc, call) => write!(f, "{call}: {status}"),
            (VendorLib::NvJitLink, "nvJitLinkAddData") => write!(
                f,
                "adding {} failed (code {}): {log}",
                self.input.as_deref().unwrap_or(""),
                self.code
            ),
            (VendorLib::NvJitLink, "nvJitLinkComplete") => {
                write!(f, "link failed (code {}): {log}", self.code)
            }
            (VendorLib::Nvvm, "nvvmCompileProgram") => {
                write!(f, "compile failed (code {}): {log}", self.code)
            }
            (_, call) if self.log.is_some() => {
                write!(f, "{call} failed (code {}): {log}", self.code)
            }
            (_, call) => write!(f, "{call} failed with code {}", self.code),
        }
    }
}

impl CallError {
    fn new(library: VendorLib, call: &'static str, code: c_int) -> CallError {
        CallError {
            library,
            call,
            code,
            status: None,
            input: None,
            log: None,
        }
    }

    fn with_log(mut self, log: String) -> CallError {
        self.log = Some(log);
        self
    }
}

fn open(path: &Path) -> Result<Library, FfiError> {
    // SAFETY: loading a vendor library runs its initialisers; these are NVIDIA's own
    // redistributables, loaded once per process.
    unsafe { Library::new(path) }.map_err(|e| FfiError::Load {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// A library loaded from a private copy, and the directory that holds the copy.
struct Isolated {
    lib: Library,
    /// Kept for the library's lifetime: NVRTC opens `libnvrtc-builtins.so.*` from its own
    /// directory (`$ORIGIN`) at its first compile, not when it is loaded.
    dir: tempfile::TempDir,
}

/// Loads a private copy of the library at `path`: the dynamic loader keys loaded objects by
/// file, so a copy (another inode) gets its own globals while sharing the process's libc
/// (a `dlmopen(LM_ID_NEWLM)` namespace, tried first, brings a second libc and NVRTC 12.9
/// aborted in it with a double free). The libraries the original loads from its own
/// directory (for `libnvrtc.so.12`, `libnvrtc-builtins.so.12.9`: every sibling whose name
/// starts with the stem and a `-`) are linked next to the copy, or the copy's first compile
/// fails with NVRTC_ERROR_BUILTIN_OPERATION_FAILURE (CI, 11-23: only in a process whose
/// first NVRTC had not loaded the builtins already).
fn open_isolated(path: &Path) -> Result<Isolated, FfiError> {
    let load_error = |reason: String| FfiError::Load {
        path: path.to_path_buf(),
        reason,
    };
    let dir = tempfile::Builder::new()
        .prefix("gpucts-lib-")
        .tempdir()
        .map_err(|e| load_error(format!("a directory for a private copy: {e}")))?;
    let name = path.file_name().unwrap_or(path.as_os_str());
    let copy = dir.path().join(name);
    std::fs::copy(path, &copy)
        .map_err(|e| load_error(format!("copying to {}: {e}", copy.display())))?;
    let stem = name.to_string_lossy();
    let stem = stem.split(".so").next().unwrap_or_default();
    if let Some(parent) = path.parent().filter(|_| !stem.is_empty()) {
        let siblings = std::fs::read_dir(parent)
            .map_err(|e| load_error(format!("listing {}: {e}", parent.display())))?;
        for entry in siblings.flatten() {
            let n = entry.file_name();
            if n.to_string_lossy().starts_with(&format!("{stem}-")) {
                std::os::unix::fs::symlink(entry.path(), dir.path().join(&n))
                    .map_err(|e| load_error(format!("linking {}: {e}", entry.path().display())))?;
            }
        }
    }
    // SAFETY: as in `open`: NVIDIA's redistributable, here a byte-identical copy of it.
    let lib = unsafe { Library::new(&copy) }.map_err(|e| load_error(e.to_string()))?;
    Ok(Isolated { lib, dir })
}

macro_rules! sym {
    ($lib:expr, $name:literal, $ty:ty) => {{
        // SAFETY: the signature matches the vendor header for this symbol.
        let s: libloading::Symbol<$ty> = unsafe { $lib.get(concat!($name, "\0").as_bytes()) }
            .map_err(|e| FfiError::Symbol {
                symbol: $name,
                reason: e.to_string(),
            })?;
        *s
    }};
}

fn cstrings(items: &[impl AsRef<str>]) -> Result<Vec<CString>, FfiError> {
    items
        .iter()
        .map(|s| {
            CString::new(s.as_ref()).map_err(|_| FfiError::Nul {
                what: "option",
                text: Some(s.as_ref().to_string()),
            })
        })
        .collect()
}

fn text_from(buf: Vec<u8>) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

// The bindings hold only a `Library` and function pointers, which are `Send` and `Sync`
// already, so no `unsafe impl` is needed; sharing them across threads is sound because every
// call creates its own program or linker handle (NVRTC, nvJitLink and libNVVM are documented
// thread-safe for distinct handles). This fails to compile if a field ever stops being so.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<Nvrtc>();
    shared::<NvJitLink>();
    shared::<Nvvm>();
};

// ---------------------------------------------------------------- NVRTC

type NvrtcVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type NvrtcCreate = unsafe extern "C" fn(
    *mut Handle,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> c_int;
type NvrtcCompile = unsafe extern "C" fn(Handle, c_int, *const *const c_char) -> c_int;
type NvrtcSize = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
type NvrtcGet = unsafe extern "C" fn(Handle, *mut c_char) -> c_int;
type NvrtcDestroy = unsafe extern "C" fn(*mut Handle) -> c_int;
type NvrtcErr = unsafe extern "C" fn(c_int) -> *const c_char;

pub struct Nvrtc {
    _lib: Library,
    /// The directory of a private copy ([`Nvrtc::open_isolated`]), removed after the library.
    _private_dir: Option<tempfile::TempDir>,
    version: NvrtcVersion,
    create: NvrtcCreate,
    compile: NvrtcCompile,
    ptx_size: NvrtcSize,
    ptx: NvrtcGet,
    log_size: NvrtcSize,
    log: NvrtcGet,
    destroy: NvrtcDestroy,
    err: NvrtcErr,
}

impl Nvrtc {
    pub fn open(path: &Path) -> Result<Nvrtc, FfiError> {
        Nvrtc::with(open(path)?, None)
    }

    /// NVRTC loaded from a private copy of the library ([`open_isolated`]): its global state is not
    /// the state of the instance [`Nvrtc::open`] gives.
    pub(crate) fn open_isolated(path: &Path) -> Result<Nvrtc, FfiError> {
        let i = open_isolated(path)?;
        Nvrtc::with(i.lib, Some(i.dir))
    }

    fn with(lib: Library, private_dir: Option<tempfile::TempDir>) -> Result<Nvrtc, FfiError> {
        Ok(Nvrtc {
            version: sym!(lib, "nvrtcVersion", NvrtcVersion),
            create: sym!(lib, "nvrtcCreateProgram", NvrtcCreate),
            compile: sym!(lib, "nvrtcCompileProgram", NvrtcCompile),
            ptx_size: sym!(lib, "nvrtcGetPTXSize", NvrtcSize),
            ptx: sym!(lib, "nvrtcGetPTX", NvrtcGet),
            log_size: sym!(lib, "nvrtcGetProgramLogSize", NvrtcSize),
            log: sym!(lib, "nvrtcGetProgramLog", NvrtcGet),
            destroy: sym!(lib, "nvrtcDestroyProgram", NvrtcDestroy),
            err: sym!(lib, "nvrtcGetErrorString", NvrtcErr),
            _lib: lib,
            _private_dir: private_dir,
        })
    }

    pub fn version(&self) -> String {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: out-pointers to live locals.
        unsafe { (self.version)(&mut major, &mut minor) };
        format!("{major}.{minor}")
    }

    /// `call` failed with `code`: the error, with NVRTC's name for the code.
    fn error(&self, call: &'static str, code: c_int) -> CallError {
        // SAFETY: returns a static string for any code.
        let p = unsafe { (self.err)(code) };
        let status = if p.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated static string.
            Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        CallError {
            status,
            ..CallError::new(VendorLib::Nvrtc, call, code)
        }
    }

    /// Compile; on failure the error is the program log.
    pub fn compile(&self, source: &str, name: &str, opts: &[String]) -> Result<String, FfiError> {
        let nul = |what| FfiError::Nul { what, text: None };
        let src = CString::new(source).map_err(|_| nul("source"))?;
        let cname = CString::new(name).map_err(|_| nul("name"))?;
        let copts = cstrings(opts)?;
        let ptrs: Vec<*const c_char> = copts.iter().map(|c| c.as_ptr()).collect();
        let mut prog: Handle = std::ptr::null_mut();
        // SAFETY: all pointers are valid for the call; no headers are passed.
        let rc = unsafe {
            (self.create)(
                &mut prog,
                src.as_ptr(),
                cname.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(self.error("nvrtcCreateProgram", rc).into());
        }
        // SAFETY: `prog` is a live program until destroyed below.
        let result = unsafe {
            let rc = (self.compile)(prog, ptrs.len() as c_int, ptrs.as_ptr());
            if rc != 0 {
                let mut n = 0usize;
                (self.log_size)(prog, &mut n);
                let mut buf = vec![0u8; n.max(1)];
                (self.log)(prog, buf.as_mut_ptr() as *mut c_char);
                Err(self
                    .error("nvrtcCompileProgram", rc)
                    .with_log(text_from(buf))
                    .into())
            } else {
                let mut n = 0usize;
                (self.ptx_size)(prog, &mut n);
                let mut buf = vec![0u8; n.max(1)];
                let rc = (self.ptx)(prog, buf.as_mut_ptr() as *mut c_char);
                if rc != 0 {
                    Err(self.error("nvrtcGetPTX", rc).into())
                } else {
                    Ok(text_from(buf))
                }
            }
        };
        // SAFETY: destroys the program created above exactly once.
        unsafe { (self.destroy)(&mut prog) };
        result
    }
}

// ---------------------------------------------------------------- nvJitLink

type JlCreate = unsafe extern "C" fn(*mut Handle, c_uint, *const *const c_char) -> c_int;
type JlAddData = unsafe extern "C" fn(Handle, c_int, *const c_void, usize, *const c_char) -> c_int;
type JlComplete = unsafe extern "C" fn(Handle) -> c_int;
type JlSize = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
type JlGet = unsafe extern "C" fn(Handle, *mut c_void) -> c_int;
type JlGetLog = unsafe extern "C" fn(Handle, *mut c_char) -> c_int;
type JlDestroy = unsafe extern "C" fn(*mut Handle) -> c_int;
type JlVersion = unsafe extern "C" fn(*mut c_uint, *mut c_uint) -> c_int;

pub(crate) struct NvJitLink {
    _lib: Library,
    create: JlCreate,
    add: JlAddData,
    complete: JlComplete,
    cubin_size: JlSize,
    cubin: JlGet,
    err_size: JlSize,
    err_log: JlGetLog,
    destroy: JlDestroy,
    version: JlVersion,
}

impl NvJitLink {
    pub fn open(path: &Path) -> Result<NvJitLink, FfiError> {
        let lib = open(path)?;
        Ok(NvJitLink {
            create: sym!(lib, "nvJitLinkCreate", JlCreate),
            add: sym!(lib, "nvJitLinkAddData", JlAddData),
            complete: sym!(lib, "nvJitLinkComplete", JlComplete),
            cubin_size: sym!(lib, "nvJitLinkGetLinkedCubinSize", JlSize),
            cubin: sym!(lib, "nvJitLinkGetLinkedCubin", JlGet),
            err_size: sym!(lib, "nvJitLinkGetErrorLogSize", JlSize),
            err_log: sym!(lib, "nvJitLinkGetErrorLog", JlGetLog),
            destroy: sym!(lib, "nvJitLinkDestroy", JlDestroy),
            version: sym!(lib, "nvJitLinkVersion", JlVersion),
            _lib: lib,
        })
    }

    pub fn version(&self) -> String {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: out-pointers to live locals.
        unsafe { (self.version)(&mut major, &mut minor) };
        format!("{major}.{minor}")
    }

    pub(crate) fn link(
        &self,
        inputs: &[(LinkInputKind, &str, &[u8])],
        opts: &[&str],
    ) -> Result<Vec<u8>, FfiError> {
        let copts = cstrings(opts)?;
        let ptrs: Vec<*const c_char> = copts.iter().map(|c| c.as_ptr()).collect();
        let mut h: Handle = std::ptr::null_mut();
        // SAFETY: option pointers live for the call.
        let rc = unsafe { (self.create)(&mut h, ptrs.len() as c_uint, ptrs.as_ptr()) };
        if rc != 0 {
            return Err(CallError::new(VendorLib::NvJitLink, "nvJitLinkCreate", rc).into());
        }
        // SAFETY: `h` is live until destroyed below; buffers outlive each call.
        let result = unsafe {
            let log = |h: Handle| {
                let mut n = 0usize;
                (self.err_size)(h, &mut n);
                let mut buf = vec![0u8; n.max(1)];
                (self.err_log)(h, buf.as_mut_ptr() as *mut c_char);
                text_from(buf)
            };
            let mut res = Ok(());
            for (kind, name, data) in inputs {
                // nvJitLinkInputType: NVJITLINK_INPUT_CUBIN = 1, NVJITLINK_INPUT_PTX = 2.
                let k = match kind {
                    LinkInputKind::Cubin => 1,
                    LinkInputKind::Ptx => 2,
                };
                let cname = CString::new(*name).unwrap_or_default();
                // PTX is read as a C string: without a terminating NUL nvJitLink reads past
                // the buffer (seen as "does not match type NVJITLINK_INPUT_PTX").
                let owned;
                let data: &[u8] = if *kind == LinkInputKind::Ptx && data.last() != Some(&0) {
                    owned = [*data, &[0u8][..]].concat();
                    &owned
                } else {
                    data
                };
                let rc = (self.add)(
                    h,
                    k,
                    data.as_ptr() as *const c_void,
                    data.len(),
                    cname.as_ptr(),
                );
                if rc != 0 {
                    res = Err(CallError {
                        input: Some(name.to_string()),
                        ..CallError::new(VendorLib::NvJitLink, "nvJitLinkAddData", rc)
                    }
                    .with_log(log(h)));
                    break;
                }
            }
            match res {
                Err(e) => Err(FfiError::from(e)),
                Ok(()) => {
                    let rc = (self.complete)(h);
                    if rc != 0 {
                        Err(
                            CallError::new(VendorLib::NvJitLink, "nvJitLinkComplete", rc)
                                .with_log(log(h))
                                .into(),
                        )
                    } else {
                        let mut n = 0usize;
                        (self.cubin_size)(h, &mut n);
                        let mut buf = vec![0u8; n];
                        let rc = (self.cubin)(h, buf.as_mut_ptr() as *mut c_void);
                        if rc != 0 {
                            Err(
                                CallError::new(VendorLib::NvJitLink, "nvJitLinkGetLinkedCubin", rc)
                                    .into(),
                            )
                        } else {
                            Ok(buf)
                        }
                    }
                }
            }
        };
        // SAFETY: destroys the handle created above exactly once.
        unsafe { (self.destroy)(&mut h) };
        result
    }
}

// ---------------------------------------------------------------- libNVVM

type NvvmVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> c_int;
type NvvmCreate = unsafe extern "C" fn(*mut Handle) -> c_int;
type NvvmAdd = unsafe extern "C" fn(Handle, *const c_char, usize, *const c_char) -> c_int;
type NvvmCompile = unsafe extern "C" fn(Handle, c_int, *const *const c_char) -> c_int;
type NvvmSize = unsafe extern "C" fn(Handle, *mut usize) -> c_int;
type NvvmGet = unsafe extern "C" fn(Handle, *mut c_char) -> c_int;
type NvvmDestroy = unsafe extern "C" fn(*mut Handle) -> c_int;

pub(crate) struct Nvvm {
    _lib: Library,
    version: NvvmVersion,
    create: NvvmCreate,
    add: NvvmAdd,
    compile: NvvmCompile,
    result_size: NvvmSize,
    result: NvvmGet,
    log_size: NvvmSize,
    log: NvvmGet,
    destroy: NvvmDestroy,
}

impl Nvvm {
    pub fn open(path: &Path) -> Result<Nvvm, FfiError> {
        let lib = open(path)?;
        Ok(Nvvm {
            version: sym!(lib, "nvvmVersion", NvvmVersion),
            create: sym!(lib, "nvvmCreateProgram", NvvmCreate),
            add: sym!(lib, "nvvmAddModuleToProgram", NvvmAdd),
            compile: sym!(lib, "nvvmCompileProgram", NvvmCompile),
            result_size: sym!(lib, "nvvmGetCompiledResultSize", NvvmSize),
            result: sym!(lib, "nvvmGetCompiledResult", NvvmGet),
            log_size: sym!(lib, "nvvmGetProgramLogSize", NvvmSize),
            log: sym!(lib, "nvvmGetProgramLog", NvvmGet),
            destroy: sym!(lib, "nvvmDestroyProgram", NvvmDestroy),
            _lib: lib,
        })
    }

    pub fn version(&self) -> String {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: out-pointers to live locals.
        unsafe { (self.version)(&mut major, &mut minor) };
        format!("{major}.{minor}")
    }

    pub fn compile(&self, ir: &str, opts: &[&str]) -> Result<String, FfiError> {
        let copts = cstrings(opts)?;
        let ptrs: Vec<*const c_char> = copts.iter().map(|c| c.as_ptr()).collect();
        let name = CString::new("module.ll").unwrap_or_default();
        let mut prog: Handle = std::ptr::null_mut();
        // SAFETY: out-pointer to a live local.
        let rc = unsafe { (self.create)(&mut prog) };
        if rc != 0 {
            return Err(CallError::new(VendorLib::Nvvm, "nvvmCreateProgram", rc).into());
        }
        // SAFETY: `prog` is live until destroyed below; buffers outlive each call.
        let result = unsafe {
            let log = |prog: Handle| {
                let mut n = 0usize;
                (self.log_size)(prog, &mut n);
                let mut buf = vec![0u8; n.max(1)];
                (self.log)(prog, buf.as_mut_ptr() as *mut c_char);
                text_from(buf)
            };
            let rc = (self.add)(prog, ir.as_ptr() as *const c_char, ir.len(), name.as_ptr());
            if rc != 0 {
                Err(
                    CallError::new(VendorLib::Nvvm, "nvvmAddModuleToProgram", rc)
                        .with_log(log(prog))
                        .into(),
                )
            } else {
                let rc = (self.compile)(prog, ptrs.len() as c_int, ptrs.as_ptr());
                if rc != 0 {
                    Err(CallError::new(VendorLib::Nvvm, "nvvmCompileProgram", rc)
                        .with_log(log(prog))
                        .into())
                } else {
                    let mut n = 0usize;
                    (self.result_size)(prog, &mut n);
                    let mut buf = vec![0u8; n.max(1)];
                    (self.result)(prog, buf.as_mut_ptr() as *mut c_char);
                    Ok(text_from(buf))
                }
            }
        };
        // SAFETY: destroys the program created above exactly once.
        unsafe { (self.destroy)(&mut prog) };
        result
    }
}

macro_rules! opaque_debug {
    ($($t:ty),*) => {$(
        impl std::fmt::Debug for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($t))
            }
        }
    )*};
}
opaque_debug!(Nvrtc, NvJitLink, Nvvm);
