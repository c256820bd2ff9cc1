//! rustc's `nvptx64-nvidia-cuda` target: Rust's own PTX producer, on the NVPTX back end of the
//! LLVM rustc links (22.1 with rustc 1.95).
//!
//! The target is tier 2 without a prebuilt standard library on every host (`rustup target
//! add nvptx64-nvidia-cuda` answered 404 on this project's machines), so gpucts builds `core`
//! for it from the `rust-src` component, once per rustc version, into a private sysroot
//! under the per-user cache: `cargo build -Zbuild-std=core` of an empty `#![no_std]` crate.
//! `-Zbuild-std` is unstable; stable rustc runs it under `RUSTC_BOOTSTRAP=1`, which enables
//! unstable options for that one command (the documented way rustc's own build uses them).
//! The same variable lets the sources write `extern "ptx-kernel"` (feature `abi_ptx`), the
//! only way Rust declares a kernel. Nothing else in a run is built that way.
//!
//! Each source is then one `rustc --crate-type rlib --emit asm` against that sysroot: an
//! rlib needs no panic handler and no linker, and its `#[no_mangle]` items are emitted as
//! `.visible` functions and kernels.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use super::{process, which, Component, ComponentError, Origin, ToolError, Toolchain};
use crate::capability::Capability;

/// The target triple.
pub const TARGET: &str = "nvptx64-nvidia-cuda";

/// rustc and its version line: `rustc 1.95.0 (59807616e 2026-04-14), LLVM 22.1.2` (from
/// `rustc -vV`), when `rust-src` is installed beside it (the sources of `core`).
pub(super) fn find_rustc() -> Result<Component, ComponentError> {
    let path = which("rustc").ok_or(ComponentError::RustcNotFound)?;
    let out = process::output_within(
        Command::new(&path).arg("-vV"),
        "rustc",
        process::PROBE_TIMEOUT,
    )?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let release = text.lines().next().unwrap_or("").trim().to_string();
    let llvm = text
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .map(str::trim);
    let (false, Some(llvm)) = (release.is_empty(), llvm) else {
        return Err(ComponentError::VersionOutput(text));
    };
    let sysroot = process::output_within(
        Command::new(&path).args(["--print", "sysroot"]),
        "rustc",
        process::PROBE_TIMEOUT,
    )?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    if !core_source(&sysroot).is_file() {
        return Err(ComponentError::NoRustSrc { sysroot });
    }
    Ok(Component {
        path,
        version: format!("{release}, LLVM {llvm}"),
        origin: Origin::System,
    })
}

/// `core`'s crate root in a sysroot's `rust-src`.
fn core_source(sysroot: &Path) -> PathBuf {
    sysroot.join("lib/rustlib/src/rust/library/core/src/lib.rs")
}

/// The private sysroot with `core` built for [`TARGET`]: `<cache>/rustc-nvptx/<hash of the
/// version line>`, built on first use under a lock and renamed into place, so concurrent
/// runs never see half of one.
fn sysroot(tc: &Toolchain, rustc: &Component) -> Result<PathBuf, ToolError> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| build_sysroot(tc, rustc).map_err(|e| e.to_string()))
        .clone()
        .map_err(|log| ToolError::SetupFailed {
            tool: "rustc (building core for nvptx64-nvidia-cuda)".into(),
            log,
        })
}

fn build_sysroot(tc: &Toolchain, rustc: &Component) -> Result<PathBuf, ToolError> {
    let root = tc
        .settings
        .cache_root
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join("rustc-nvptx");
    let key = format!("{:016x}", fnv1a(rustc.version.as_bytes()));
    let done = root.join(&key);
    let lib = |r: &Path| r.join("lib/rustlib").join(TARGET).join("lib");
    if lib(&done).join("libcore.rlib").is_file() {
        return Ok(done);
    }
    std::fs::create_dir_all(&root)?;
    let lock = std::fs::File::create(root.join(format!("{key}.lock")))?;
    lock.lock()?;
    if lib(&done).join("libcore.rlib").is_file() {
        return Ok(done);
    }
    let work = tempfile::Builder::new()
        .prefix("build-")
        .tempdir_in(&root)?;
    let krate = work.path().join("crate");
    std::fs::create_dir_all(&krate)?;
    std::fs::write(
        krate.join("Cargo.toml"),
        "[package]\nname = \"gpucts_core\"\nversion = \"0.0.0\"\nedition = \"2021\"\n[lib]\npath = \"lib.rs\"\n[workspace]\n",
    )?;
    std::fs::write(krate.join("lib.rs"), "#![no_std]\n")?;
    let cargo = rustc
        .path
        .parent()
        .map(|d| d.join("cargo"))
        .filter(|c| c.is_file())
        .or_else(|| which("cargo"))
        .ok_or_else(|| ToolError::failed("cargo", "cargo not found beside rustc or on PATH"))?;
    let target_dir = work.path().join("target");
    // `-Zbuild-std` resolves the whole library workspace of rust-src (its Cargo.lock names
    // crates.io packages such as rustc-demangle even when only `core` is built). Offline
    // first: a machine that has them in cargo's registry cache builds without the network;
    // else once more online, where cargo fetches them (a rig with no registry fails both, and
    // the error says so).
    let build = |offline: bool| {
        let mut cmd = Command::new(&cargo);
        cmd.current_dir(&krate)
            .env("RUSTC_BOOTSTRAP", "1")
            .env("RUSTC", &rustc.path)
            .env("CARGO_TARGET_DIR", &target_dir)
            .env_remove("RUSTFLAGS")
            .args(["build", "--release"])
            .args(offline.then_some("--offline"))
            .args(["-Zbuild-std=core", "--target", TARGET]);
        process::output_within(
            &mut cmd,
            "cargo",
            tc.tool_timeout().max(std::time::Duration::from_secs(600)),
        )
    };
    let offline = build(true)?;
    if !offline.status.success() {
        let online = build(false)?;
        if !online.status.success() {
            return Err(ToolError::failed(
                "cargo -Zbuild-std=core",
                format!(
                    "offline: {}\nwith the registry: {}",
                    String::from_utf8_lossy(&offline.stderr).trim(),
                    String::from_utf8_lossy(&online.stderr).trim()
                ),
            ));
        }
    }
    let staged = work.path().join("sysroot");
    std::fs::create_dir_all(lib(&staged))?;
    let deps = target_dir.join(TARGET).join("release/deps");
    for e in std::fs::read_dir(&deps)? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        for krate in ["core", "compiler_builtins"] {
            if name.starts_with(&format!("lib{krate}-")) && name.ends_with(".rlib") {
                std::fs::copy(&p, lib(&staged).join(format!("lib{krate}.rlib")))?;
            }
        }
    }
    if !lib(&staged).join("libcore.rlib").is_file() {
        return Err(ToolError::failed(
            "cargo -Zbuild-std=core",
            format!("no libcore rlib in {}", deps.display()),
        ));
    }
    let _ = std::fs::remove_dir_all(&done);
    std::fs::rename(&staged, &done)?;
    Ok(done)
}

/// FNV-1a, 64 bits: a stable name for a version line.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Toolchain {
    /// Compile a `#![no_std]` Rust crate to PTX for `arch` (`sm_NN`): `rustc --crate-type rlib
    /// --emit asm -C target-cpu=sm_NN` with `args` after, against the private sysroot.
    /// `crate_name` names the crate (two crates of one link must differ in it).
    pub(crate) fn rustc_ptx(
        &self,
        source: &str,
        arch: &str,
        crate_name: &str,
        args: &[&str],
    ) -> Result<String, ToolError> {
        let rustc = self
            .component(Capability::Rustc)
            .ok_or(ToolError::NotAvailable(Capability::Rustc))?
            .clone();
        // The key is what rustc reads: target, crate name, arguments and source (never the
        // scratch directory); a store replays it on a rig without Rust.
        let cpu = format!("-Ctarget-cpu={arch}");
        let mut parts = vec![TARGET, crate_name, cpu.as_str()];
        parts.extend_from_slice(args);
        parts.push(source);
        super::prebuilt::through(
            self.settings.prebuilt.as_deref(),
            super::prebuilt::Tool::Rustc,
            &rustc.version,
            &parts,
            || self.run_rustc(&rustc, source, arch, crate_name, args),
        )
    }

    /// rustc itself on `source` (the part of [`Toolchain::rustc_ptx`] a prebuilt store
    /// replays).
    fn run_rustc(
        &self,
        rustc: &super::Component,
        source: &str,
        arch: &str,
        crate_name: &str,
        args: &[&str],
    ) -> Result<String, ToolError> {
        let sysroot = sysroot(self, rustc)?;
        let dir = super::tempfile_dir()?;
        let input = dir.path().join("lib.rs");
        let output = dir.path().join("out.ptx");
        std::fs::write(&input, source)?;
        let mut cmd = Command::new(&rustc.path);
        // An internal compiler error writes `rustc-ice-*.txt` into the working directory
        // unless RUSTC_ICE=0; the backtrace would make every crash's log differ.
        cmd.current_dir(dir.path())
            .env("RUSTC_BOOTSTRAP", "1")
            .env("RUSTC_ICE", "0")
            .env("RUST_BACKTRACE", "0")
            .arg("--sysroot")
            .arg(&sysroot)
            .args(["--target", TARGET, "--crate-type", "rlib", "--emit", "asm"])
            .args(["--crate-name", crate_name, "--edition", "2021"])
            .arg(format!("-Ctarget-cpu={arch}"))
            .args(args)
            .arg("-o")
            .arg(&output)
            .arg(&input);
        let out = process::output_within(&mut cmd, "rustc", self.tool_timeout())?;
        if !out.status.success() {
            let log = String::from_utf8_lossy(&out.stderr).into_owned();
            if log.contains("not a recognized processor") || log.contains("is not a recognized") {
                return Err(ToolError::UnknownTarget {
                    tool: "rustc".into(),
                    arch: arch.into(),
                    log,
                });
            }
            return Err(ToolError::failed("rustc", ice_summary(&log).unwrap_or(log)));
        }
        Ok(std::fs::read_to_string(&output)?)
    }
}

/// An internal compiler error's log as the lines that say what failed, without the process
/// id and the notes asking for a bug report (they differ between runs): `None` when the log
/// is not a crash's.
fn ice_summary(log: &str) -> Option<String> {
    if !log.contains("the compiler unexpectedly panicked") {
        return None;
    }
    let pid = regex::Regex::new(r"^thread 'rustc' \(\d+\) panicked at [^:]*/compiler/").ok()?;
    let lines: Vec<String> = log
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            if pid.is_match(l) {
                Some(pid.replace(l, "rustc panicked at compiler/").into_owned())
            } else if l.starts_with("internal error:")
                || l.starts_with("error: the compiler unexpectedly panicked")
                || l.starts_with("#0 [")
            {
                Some(l.to_string())
            } else {
                None
            }
        })
        .collect();
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    /// The crash rustc 1.95.0 has on an aggregate aligned to 32 passed by value (its log as
    /// rustc wrote it, backtrace off): the summary keeps what failed and where, without the
    /// thread's id.
    #[test]
    fn an_internal_compiler_error_is_summarised_without_its_process_id() {
        let log = "\nthread 'rustc' (22766) panicked at /rustc-dev/59807616e1fa2540724bfbac14d7976d7e/compiler/rustc_target/src/callconv/nvptx64.rs:40:14:\ninternal error: entered unreachable code: Align is given as power of 2 no larger than 16 bytes\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nerror: the compiler unexpectedly panicked. This is a bug\n\nnote: we would appreciate a bug report: https://github.com/rust-lang/rust/issues/new\n\nquery stack during panic:\n#0 [fn_abi_of_fn_ptr] computing call ABI of `unsafe extern \"C\" fn(xa25_1, u32) -> xa25_2_a32` function pointers\n#1 [check_mono_item] monomorphization-time checking\nend of query stack\n";
        assert_eq!(
            super::ice_summary(log).unwrap(),
            "rustc panicked at compiler/rustc_target/src/callconv/nvptx64.rs:40:14:\n\
             internal error: entered unreachable code: Align is given as power of 2 no larger than 16 bytes\n\
             error: the compiler unexpectedly panicked. This is a bug\n\
             #0 [fn_abi_of_fn_ptr] computing call ABI of `unsafe extern \"C\" fn(xa25_1, u32) -> xa25_2_a32` function pointers"
        );
        assert_eq!(super::ice_summary("error[E0412]: cannot find type"), None);
    }
}
