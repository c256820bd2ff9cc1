//! PTX producers written in Python: Triton (its own MLIR pipeline and bundled LLVM) and
//! numba-cuda (Python through libNVVM). Each is installed with pip, pinned, into its own
//! directory of the per-user cache (`toolchain/py-<front end>-<arch>`, as [`super::managed`]
//! does NVIDIA's wheels: staged, then renamed into place under the cache's lock), and run by
//! the `python3` that installed it, with a small driver of ours ([`Driver`]) that compiles the
//! kernels a source names for a target without a GPU.
//!
//! Neither is installed unless asked (`gpucts toolchain install --with triton,numba-cuda`):
//! together they are 1.3 GB. Without them their cases skip, naming the capability.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{process, Component, Origin, ToolError, Toolchain};
use crate::capability::Capability;

/// A Python front end gpucts drives.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum FrontEnd {
    #[strum(serialize = "triton")]
    Triton,
    #[strum(serialize = "numba-cuda")]
    NumbaCuda,
}

impl FrontEnd {
    /// The capability its cases require.
    pub fn capability(self) -> Capability {
        match self {
            FrontEnd::Triton => Capability::Triton,
            FrontEnd::NumbaCuda => Capability::NumbaCuda,
        }
    }

    /// The pinned packages, installed without their declared dependencies (every one is
    /// listed): Triton 3.9.0 needs nothing beyond the standard library to compile; numba-cuda
    /// 0.30.4 needs numba, llvmlite, numpy, NVIDIA's Python bindings and the CUDA runtime
    /// library (it asks the runtime its version on import). libNVVM, libdevice and NVRTC are
    /// the toolchain's own ([`Toolchain::python_ptx`]).
    pub(crate) fn pinned(self) -> &'static [&'static str] {
        match self {
            FrontEnd::Triton => &["triton==3.9.0"],
            FrontEnd::NumbaCuda => &[
                "numba-cuda==0.30.4",
                "numba==0.68.1",
                "llvmlite==0.50.0",
                "numpy==2.4.6",
                "packaging==26.4",
                "cuda-core==1.2.2",
                "cuda-pathfinder==1.9.1",
                "cuda-bindings==12.9.10",
                "nvidia-cuda-runtime-cu12==12.9.79",
            ],
        }
    }

    /// The module whose import proves the install usable, and whose `__version__` is the
    /// component's version.
    fn module(self) -> &'static str {
        match self {
            FrontEnd::Triton => "triton",
            FrontEnd::NumbaCuda => "numba_cuda",
        }
    }

    /// The driver compiling a source to PTX.
    fn driver(self) -> &'static str {
        match self {
            FrontEnd::Triton => TRITON_DRIVER,
            FrontEnd::NumbaCuda => NUMBA_DRIVER,
        }
    }
}

/// The install directory of `fe` under the per-user cache root.
pub(crate) fn site_dir(cache_root: &Path, fe: FrontEnd) -> PathBuf {
    let name: &'static str = fe.into();
    cache_root
        .join("toolchain")
        .join(format!("py-{name}-{}", std::env::consts::ARCH))
}

/// What an install records in `.complete`: the interpreter that ran pip (its wheels are built
/// for that Python) and the pins.
fn marker(python: &Path, fe: FrontEnd) -> String {
    format!("{}\n{}\n", python.display(), fe.pinned().join("\n"))
}

/// The installed front end, if its install is complete and its interpreter still runs it:
/// `python -c 'import <module>; print(<module>.__version__)'` from the site directory.
pub(crate) fn find(cache_root: Option<&Path>, fe: FrontEnd) -> Result<Component, String> {
    let not_installed = || {
        format!(
            "{fe} not installed (run `gpucts toolchain install --with {fe}`; {} from PyPI)",
            fe.pinned().join(" ")
        )
    };
    let root = cache_root.ok_or_else(not_installed)?;
    let site = site_dir(root, fe);
    let done = std::fs::read_to_string(site.join(".complete")).map_err(|_| not_installed())?;
    let python = PathBuf::from(done.lines().next().unwrap_or_default());
    if done != marker(&python, fe) {
        return Err(format!(
            "{fe} in {} was installed with other pins ({}); run `gpucts toolchain install --with {fe}` again",
            site.display(),
            done.lines().skip(1).collect::<Vec<_>>().join(" ")
        ));
    }
    let script = format!(
        "import site, sys; site.addsitedir(sys.argv[1]); import {m}; print({m}.__version__); \
         print(sys.version.split()[0])",
        m = fe.module()
    );
    let out = process::output_within(
        Command::new(&python)
            .env("PYTHONNOUSERSITE", "1")
            .args(["-c", &script])
            .arg(&site),
        &fe.to_string(),
        process::PROBE_TIMEOUT,
    )
    .map_err(|e| format!("{fe} in {} does not run: {e}", site.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{fe} in {} does not import with {}: {}",
            site.display(),
            python.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or_default()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let (Some(version), Some(py)) = (lines.next(), lines.next()) else {
        return Err(format!("{fe} printed no version: {text}"));
    };
    Ok(Component {
        path: site,
        version: format!("{fe} {version} (Python {py})"),
        origin: Origin::Managed,
    })
}

/// The interpreter pip runs from: the first of `python3`, `python` with pip.
fn python_with_pip() -> Option<PathBuf> {
    ["python3", "python"].iter().find_map(|p| {
        let path = which::which(p).ok()?;
        process::status_within(
            Command::new(&path)
                .args(["-m", "pip", "--version"])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            p,
            process::PROBE_TIMEOUT,
        )
        .is_ok_and(|s| s.success())
        .then_some(path)
    })
}

/// Install `fe`'s pins (if not already there); returns its directory. pip's progress goes to
/// `progress`'s process stderr.
pub fn install(
    cache_root: Option<&Path>,
    fe: FrontEnd,
    progress: &mut dyn Write,
) -> Result<PathBuf, super::managed::InstallError> {
    use super::managed::InstallError;
    let io = |what: String| move |source| InstallError::Io { what, source };
    let root = cache_root.ok_or(InstallError::NoCache)?;
    let site = site_dir(root, fe);
    let parent = site.parent().ok_or(InstallError::BadCachePath)?;
    std::fs::create_dir_all(parent).map_err(io(format!("cannot create {}", parent.display())))?;
    let _lock = super::managed::Lock::acquire(&root.join("toolchain.lock"))
        .map_err(io("cannot lock the toolchain cache".into()))?;
    let python = python_with_pip().ok_or(InstallError::NoPip)?;
    let marker = marker(&python, fe);
    if std::fs::read_to_string(site.join(".complete")).is_ok_and(|m| m == marker) {
        return Ok(site);
    }
    let staging = parent.join(format!(".py-{fe}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let _ = writeln!(
        progress,
        "gpucts: {} -m pip install --target {} {}",
        python.display(),
        site.display(),
        fe.pinned().join(" ")
    );
    let mut pip = Command::new(&python);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-input",
        "--only-binary=:all:",
        "--target",
    ])
    .arg(&staging)
    .args(fe.pinned())
    .stdout(Stdio::null());
    let status = process::status_within(&mut pip, "pip", super::managed::INSTALL_TIMEOUT).map_err(
        |source| InstallError::PipDidNotRun {
            python: python.display().to_string(),
            source,
        },
    )?;
    if !status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(InstallError::PipFailed(status));
    }
    std::fs::write(staging.join(".complete"), &marker)
        .map_err(io("cannot mark install complete".into()))?;
    let _ = std::fs::remove_dir_all(&site);
    std::fs::rename(&staging, &site)
        .map_err(io(format!("cannot move {} into place", staging.display())))?;
    Ok(site)
}

/// How both drivers join one module per function into one: the first module's header
/// (`.version`, `.target`, `.address_size`), then every module's body. A module whose
/// header differs from the first is an error, never joined.
const JOIN: &str = r#"
def gpucts_join(named_modules):
    header, parts = None, []
    for name, ptx in named_modules:
        lines = ptx.splitlines()
        cut = max(i for i, l in enumerate(lines) if l.startswith(".address_size")) + 1
        head = [l for l in lines[:cut] if l.startswith(".")]
        if header is None:
            header = head
            parts.append("\n".join(lines[:cut]))
        elif head != header:
            sys.exit("gpucts: %s's module header %s differs from the first's %s" % (name, head, header))
        parts.append("\n".join(lines[cut:]))
    return "\n".join(parts) + "\n"
"#;

/// numba-cuda's driver. The source is a Python module whose `GPUCTS_FUNCTIONS` lists
/// `(function, signature, abi_name)`; each is compiled as numba-cuda's documented C ABI
/// device function (`cuda.compile(..., device=True, abi="c", output="ptx")`) for `cc`, and
/// the modules are joined ([`JOIN`]).
const NUMBA_DRIVER: &str = r#"
import sys, site
site.addsitedir(sys.argv[1])
src, arch, out = sys.argv[2], sys.argv[3], sys.argv[4]
from numba import cuda
mod = {}
exec(compile(open(src).read(), src, "exec"), mod)
cc = (int(arch[3:-1]), int(arch[-1]))
modules = []
for fn, sig, name in mod["GPUCTS_FUNCTIONS"]:
    ptx, _ = cuda.compile(fn, sig, device=True, abi="c", output="ptx", cc=cc, abi_info={"abi_name": name})
    modules.append((name, ptx))
open(out, "w").write(gpucts_join(modules))
"#;

/// Triton's driver. The source is a Python module whose `GPUCTS_KERNELS` lists
/// `(kernel, signature, constexprs)`; each kernel is compiled for `cuda:<cc>` with one warp
/// (`num_warps=1`) and no line information, and the modules are joined ([`JOIN`]) in the
/// source's order. Triton's own cache goes to a private directory, so no earlier run answers.
/// The pipeline stops at PTX: Triton's last stage (`cubin`, its bundled ptxas) is left out of
/// the NVIDIA back end's stages and PTX made the kernel's binary, which takes a third off each
/// kernel (84 kernels: 3.5 s -> 2.2 s) and leaves the PTX as it was, byte for byte. A large
/// source is split among spawned processes (one per CPU, at least 32 kernels each): Triton
/// compiles one kernel at a time.
const TRITON_DRIVER: &str = r#"
import os, sys, site
site.addsitedir(sys.argv[1])
src, arch, out = sys.argv[2], sys.argv[3], sys.argv[4]

def gpucts_compile(part):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend
    _add_stages, _init = CUDABackend.add_stages, CUDABackend.__init__
    def _to_ptx(self, stages, options, language):
        _add_stages(self, stages, options, language)
        stages.pop("cubin", None)
    def _ptx_binary(self, target):
        _init(self, target)
        self.binary_ext = "ptx"
    CUDABackend.add_stages, CUDABackend.__init__ = _to_ptx, _ptx_binary
    mod = {}
    exec(compile(open(src).read(), src, "exec"), mod)
    kernels = mod["GPUCTS_KERNELS"]
    first, count = part
    modules = []
    for kernel, signature, constexprs in kernels[first:first + count]:
        k = triton.compile(triton.compiler.ASTSource(fn=kernel, signature=signature, constexprs=constexprs),
                           target=GPUTarget("cuda", int(arch[3:]), 32), options={"num_warps": 1, "debug": False})
        ptx = k.asm["ptx"]
        modules.append((kernel.__name__, ptx.decode() if isinstance(ptx, bytes) else ptx))
    return modules

if __name__ == "__main__":
    n = open(src).read().count("@triton.jit")
    workers = max(1, min(os.cpu_count() or 1, n // 32))
    size = -(-n // workers)
    parts = [(i, size) for i in range(0, n, size)]
    if workers == 1:
        results = [gpucts_compile(p) for p in parts]
    else:
        import multiprocessing
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            results = pool.map(gpucts_compile, parts)
    open(out, "w").write(gpucts_join([m for r in results for m in r]))
"#;

impl Toolchain {
    /// Compile a Python front end's source to PTX for `arch` (`sm_NN`) with its driver.
    pub(crate) fn python_ptx(
        &self,
        fe: FrontEnd,
        source: &str,
        arch: &str,
    ) -> Result<String, ToolError> {
        let cap = fe.capability();
        let c = self.component(cap).ok_or(ToolError::NotAvailable(cap))?;
        let marker = std::fs::read_to_string(c.path.join(".complete"))?;
        let python = marker.lines().next().unwrap_or("python3");
        let dir = super::tempfile_dir()?;
        let input = dir.path().join("gpucts_source.py");
        let output = dir.path().join("out.ptx");
        std::fs::write(&input, source)?;
        let mut cmd = Command::new(python);
        if fe == FrontEnd::NumbaCuda {
            self.numba_environment(&mut cmd)?;
        }
        // A file, not `-c`: spawned worker processes import the driver by its path.
        let driver = dir.path().join("gpucts_driver.py");
        std::fs::write(&driver, format!("{JOIN}{}", fe.driver()))?;
        cmd.current_dir(dir.path())
            .env("PYTHONNOUSERSITE", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("TRITON_CACHE_DIR", dir.path().join("triton-cache"))
            .env("TRITON_DISABLE_LINE_INFO", "1")
            // Triton 3.9 warns unless told; fusion does not change an atomic.
            .env("TRITON_DEFAULT_FP_FUSION", "1")
            .arg(&driver)
            .arg(&c.path)
            .arg(&input)
            .arg(arch)
            .arg(&output);
        let tool = fe.to_string();
        let out = process::output_within(&mut cmd, &tool, self.tool_timeout())?;
        if !out.status.success() {
            let log = String::from_utf8_lossy(&out.stderr).into_owned();
            return Err(ToolError::Failed {
                tool,
                log: error_lines(&log),
            });
        }
        Ok(std::fs::read_to_string(&output)?)
    }
}

impl Toolchain {
    /// What numba-cuda is pointed at: the toolchain's libNVVM and libdevice (`CUDA_HOME`, the
    /// directory holding `nvvm/`), its NVRTC (numba asks it for the targets it knows) and the
    /// pinned CUDA runtime library (`LD_LIBRARY_PATH`).
    fn numba_environment(&self, cmd: &mut Command) -> Result<(), ToolError> {
        let nvvm = self
            .component(Capability::Libnvvm)
            .ok_or(ToolError::NotAvailable(Capability::Libnvvm))?;
        let nvrtc = self
            .component(Capability::Nvrtc)
            .ok_or(ToolError::NotAvailable(Capability::Nvrtc))?;
        // <cuda home>/nvvm/lib64/libnvvm.so
        let home = nvvm.path.ancestors().nth(3).unwrap_or(Path::new("/"));
        let site = self
            .component(Capability::NumbaCuda)
            .ok_or(ToolError::NotAvailable(Capability::NumbaCuda))?;
        let mut libs = vec![site.path.join("nvidia/cuda_runtime/lib")];
        libs.extend(nvrtc.path.parent().map(Path::to_path_buf));
        let joined = std::env::join_paths(libs).map_err(|e| ToolError::Failed {
            tool: "numba-cuda".into(),
            log: e.to_string(),
        })?;
        cmd.env("CUDA_HOME", home).env("LD_LIBRARY_PATH", joined);
        Ok(())
    }
}

/// A Python traceback as its last line (the exception) and the source lines of
/// `gpucts_source.py` it passed through: what failed and in which kernel, without the
/// front end's internal frames, whose paths differ between machines.
fn error_lines(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let Some(last) = lines.iter().rposition(|l| !l.trim().is_empty()) else {
        return String::new();
    };
    let mut kept: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains("gpucts_source.py") || l.starts_with("gpucts:"))
        .copied()
        .collect();
    kept.push(lines[last]);
    kept.dedup();
    kept.join("\n")
}

/// Every installed front end, for discovery.
pub(super) fn discover(tc: &mut Toolchain) {
    use strum::VariantArray;
    let root = tc.settings.cache_root.clone();
    for &fe in FrontEnd::VARIANTS {
        match find(root.as_deref(), fe) {
            Ok(c) => {
                tc.found.insert(fe.capability(), c);
            }
            Err(why) => {
                tc.missing.insert(fe.capability(), why);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceback_keeps_the_exception_and_the_source_lines() {
        let log = "Traceback (most recent call last):\n  File \"<string>\", line 11, in <module>\n  File \"/tmp/gpucts-x/gpucts_source.py\", line 4, in gpucts_fetch_add\n  File \"/home/u/.cache/gpucts/toolchain/py-triton/triton/compiler/compiler.py\", line 300, in compile\ntriton.compiler.errors.CompilationError: at 2:4: sem must be one of ...\n";
        assert_eq!(
            error_lines(log),
            "  File \"/tmp/gpucts-x/gpucts_source.py\", line 4, in gpucts_fetch_add\n\
             triton.compiler.errors.CompilationError: at 2:4: sem must be one of ..."
        );
        assert_eq!(error_lines(""), "");
    }

    #[test]
    fn a_missing_install_names_the_command_that_makes_it() {
        let d = super::super::tempfile_dir().unwrap();
        let why = find(Some(d.path()), FrontEnd::Triton).unwrap_err();
        assert!(
            why.starts_with("triton not installed (run `gpucts toolchain install --with triton`"),
            "{why}"
        );
        // An install of other pins is named as such.
        let site = site_dir(d.path(), FrontEnd::Triton);
        std::fs::create_dir_all(&site).unwrap();
        std::fs::write(site.join(".complete"), "/usr/bin/python3\ntriton==3.0.0\n").unwrap();
        let why = find(Some(d.path()), FrontEnd::Triton).unwrap_err();
        assert!(
            why.contains("installed with other pins (triton==3.0.0)"),
            "{why}"
        );
    }

    #[test]
    fn pins_are_exact() {
        use strum::VariantArray;
        for fe in FrontEnd::VARIANTS {
            assert!(fe.pinned().iter().all(|p| p.contains("==")), "{fe}");
        }
    }
}
