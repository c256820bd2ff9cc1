//! The managed toolchain: NVIDIA's redistributable wheels, pinned, installed with pip into a
//! per-user cache (`$GPUCTS_CACHE`, else `$XDG_CACHE_HOME/gpucts`, else `~/.cache/gpucts`).
//!
//! The install goes to a temporary directory that is renamed into place when pip succeeds, under
//! an exclusive lock, so concurrent runs and interrupted installs never see a half-written tree.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::capability::Capability;

/// The pinned wheels. The 12.9 series for the compilers (the driver on the GPU rigs, R580,
/// accepts its PTX); nvdisasm and cuobjdump are only published as 13.x wheels, which read
/// sm_90 cubins from 12.9 ptxas.
pub(crate) const PINNED: &[&str] = &[
    "nvidia-cuda-nvcc-cu12==12.9.86",
    "nvidia-cuda-nvrtc-cu12==12.9.86",
    "nvidia-nvjitlink-cu12==12.9.86",
    "nvidia-cuda-cccl-cu12==12.9.27",
    "nvidia-cuda-nvdisasm==13.2.86",
    "nvidia-cuda-cuobjdump==13.2.86",
];

/// The name of this pin set; changing [`PINNED`] changes the directory, so an old install is
/// never mixed with a new one.
pub(crate) const SET: &str = "cu12.9-r1";

/// The wheels' platform tag: the architecture gpucts itself was built for, not the Python
/// interpreter's. An aarch64 gpucts (a Jetson, a Grace node, or qemu-user on an x86 machine)
/// loads NVRTC, nvJitLink and libNVVM into its own process, so it needs NVIDIA's aarch64
/// ("sbsa") wheels whatever python3 runs pip.
pub(crate) fn wheel_platform() -> String {
    format!("manylinux2014_{}", std::env::consts::ARCH)
}

/// The directory the wheels are installed into (pip `--target`), under the per-user cache
/// `cache_root` ([`crate::config::RunConfig::cache_root`]): one per pin set and architecture,
/// so an x86-64 and an aarch64 gpucts sharing a home directory never load each other's.
pub(crate) fn site_dir(cache_root: Option<&Path>) -> Option<PathBuf> {
    cache_root.map(|r| {
        r.join("toolchain")
            .join(format!("{SET}-{}", std::env::consts::ARCH))
    })
}

/// A component inside an installed wheel tree.
pub(crate) fn locate(cap: Capability, site: &Path) -> Option<PathBuf> {
    let nv = site.join("nvidia");
    let file = |p: PathBuf| p.is_file().then_some(p);
    let first = |cands: &[PathBuf]| cands.iter().find(|p| p.is_file()).cloned();
    match cap {
        Capability::Ptxas => file(nv.join("cuda_nvcc/bin/ptxas")),
        Capability::Nvrtc => file(nv.join("cuda_nvrtc/lib/libnvrtc.so.12")),
        Capability::Nvjitlink => file(nv.join("nvjitlink/lib/libnvJitLink.so.12")),
        Capability::Libnvvm => file(nv.join("cuda_nvcc/nvvm/lib64/libnvvm.so")),
        Capability::Nvdisasm => first(&[
            nv.join("cu13/bin/nvdisasm"),
            nv.join("cuda_nvdisasm/bin/nvdisasm"),
        ]),
        Capability::Cuobjdump => first(&[
            nv.join("cu13/bin/cuobjdump"),
            nv.join("cuda_cuobjdump/bin/cuobjdump"),
        ]),
        Capability::Cccl => {
            let d = nv.join("cuda_cccl/include");
            d.join("cuda/atomic").is_file().then_some(d)
        }
        _ => None,
    }
}

/// An exclusive advisory lock on a file, released on drop.
pub(crate) struct Lock(std::fs::File);

impl Lock {
    pub(crate) fn acquire(path: &Path) -> std::io::Result<Lock> {
        use std::os::fd::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)?;
        // SAFETY: flock on a file descriptor we own.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Lock(f))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking our own descriptor.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// The limit for `pip install` of the pinned wheels.
pub(crate) const INSTALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

fn python() -> Option<String> {
    ["python3", "python"]
        .iter()
        .find(|p| {
            super::process::status_within(
                Command::new(p)
                    .args(["-m", "pip", "--version"])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
                p,
                super::process::PROBE_TIMEOUT,
            )
            .is_ok_and(|s| s.success())
        })
        .map(|s| s.to_string())
}

/// Why the pinned wheels could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("no cache directory: set GPUCTS_CACHE or HOME")]
    NoCache,
    #[error("bad cache path")]
    BadCachePath,
    #[error("python3 with pip not found (apt-get install python3-pip)")]
    NoPip,
    /// A file-system step; `what` says which (e.g. `cannot create DIR`).
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// pip could not be started or ran past its limit.
    #[error("cannot run {python} -m pip: {source}")]
    PipDidNotRun {
        python: String,
        source: super::ToolError,
    },
    #[error("pip install failed ({0})")]
    PipFailed(std::process::ExitStatus),
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> InstallError {
    move |source| InstallError::Io { what, source }
}

/// Install the pinned wheels (if not already there); returns the site directory. pip's own
/// progress goes to `progress`.
pub fn install(
    cache_root: Option<&Path>,
    progress: &mut dyn Write,
) -> Result<PathBuf, InstallError> {
    let root = cache_root.ok_or(InstallError::NoCache)?;
    let site = site_dir(Some(root)).ok_or(InstallError::NoCache)?;
    let parent = site.parent().ok_or(InstallError::BadCachePath)?;
    std::fs::create_dir_all(parent).map_err(io(format!("cannot create {}", parent.display())))?;
    let _lock = Lock::acquire(&root.join("toolchain.lock"))
        .map_err(io("cannot lock the toolchain cache".into()))?;
    if site.join(".complete").is_file() {
        return Ok(site);
    }
    let py = python().ok_or(InstallError::NoPip)?;
    let staging = parent.join(format!(".{SET}.partial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let platform = wheel_platform();
    let _ = writeln!(
        progress,
        "gpucts: pip install --platform {platform} --target {} {}",
        site.display(),
        PINNED.join(" ")
    );
    let mut pip = Command::new(&py);
    pip.args([
        "-m",
        "pip",
        "install",
        "--disable-pip-version-check",
        "--no-deps",
        "--no-input",
        "--progress-bar",
        "on",
        "--only-binary=:all:",
        "--platform",
        &platform,
        "--target",
    ])
    .arg(&staging)
    .args(PINNED)
    .stdin(Stdio::null())
    // pip's progress and messages go where the user sees them, never into our stdout
    // (which may be JSON).
    .stdout(Stdio::from(
        std::io::stderr()
            .lock()
            .try_clone_stderr()
            .map_err(io("cannot pass stderr to pip".into()))?,
    ));
    // A download of a few hundred MB; an hour is a network that is not coming back.
    let status =
        super::process::status_within(&mut pip, "pip", INSTALL_TIMEOUT).map_err(|source| {
            InstallError::PipDidNotRun {
                python: py.clone(),
                source,
            }
        })?;
    if !status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(InstallError::PipFailed(status));
    }
    std::fs::write(staging.join(".complete"), PINNED.join("\n"))
        .map_err(io("cannot mark install complete".into()))?;
    let _ = std::fs::remove_dir_all(&site);
    std::fs::rename(&staging, &site)
        .map_err(io(format!("cannot move {} into place", staging.display())))?;
    Ok(site)
}

trait TryCloneStderr {
    fn try_clone_stderr(&self) -> std::io::Result<std::os::fd::OwnedFd>;
}

impl TryCloneStderr for std::io::StderrLock<'_> {
    fn try_clone_stderr(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        self.as_fd().try_clone_to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_finds_wheel_layout() {
        let d = super::super::tempfile_dir().unwrap();
        let nv = d.path().join("nvidia");
        std::fs::create_dir_all(nv.join("cuda_nvcc/bin")).unwrap();
        std::fs::write(nv.join("cuda_nvcc/bin/ptxas"), b"").unwrap();
        std::fs::create_dir_all(nv.join("cuda_cccl/include/cuda")).unwrap();
        std::fs::write(nv.join("cuda_cccl/include/cuda/atomic"), b"").unwrap();
        assert!(locate(Capability::Ptxas, d.path()).is_some());
        assert_eq!(
            locate(Capability::Cccl, d.path()).unwrap(),
            nv.join("cuda_cccl/include")
        );
        assert!(locate(Capability::Nvrtc, d.path()).is_none());
    }

    #[test]
    fn the_wheels_are_those_of_the_architecture_gpucts_was_built_for() {
        // NVIDIA publishes each pinned wheel as manylinux2014_x86_64 and manylinux2014_aarch64
        // (sbsa); the tag must name the binary's own architecture, which the install directory
        // names too.
        let arch = if cfg!(target_arch = "aarch64") {
            "aarch64"
        } else {
            "x86_64"
        };
        assert_eq!(wheel_platform(), format!("manylinux2014_{arch}"));
        let site = site_dir(Some(Path::new("/c"))).unwrap();
        assert_eq!(
            site,
            Path::new("/c/toolchain").join(format!("{SET}-{arch}"))
        );
    }

    #[test]
    fn pins_are_exact() {
        assert!(PINNED.iter().all(|p| p.contains("==")));
    }
}
