//! Companion kernel module backend: the `/dev/gpucts` character device of `kmod/`.

use std::path::Path;

/// The device node the companion module creates.
pub const DEVICE: &str = "/dev/gpucts";

/// Whether the module's device can be opened; `Err` says why not.
pub fn probe() -> Result<String, String> {
    let p = Path::new(DEVICE);
    if !p.exists() {
        return Err(format!("kmod not loaded: {DEVICE} does not exist"));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(p)
        .map(|_| format!("{DEVICE} opened"))
        .map_err(|e| format!("kmod present but {DEVICE} cannot be opened: {e}"))
}
