//! Cases that drive the `nvidia_p2p_*` API through the companion module.

use crate::backend::cuda::Session;
use crate::backend::kmod::{self, Device, Errno};
use crate::outcome::CaseStatus;

/// gpudirect §3.2: pins are made in 64 KB units on desktop GPUs; §4.4 (Tegra): 4 KB pages.
const DESKTOP_ALIGN: u64 = 64 * 1024;
const TEGRA_ALIGN: u64 = 4 * 1024;

pub fn version() -> CaseStatus {
    let dev = match Device::open() {
        Ok(d) => d,
        Err(e) => return CaseStatus::error(e),
    };
    match dev.version() {
        Ok(v) => {
            let want_align = if v.flavour == kmod::FLAVOUR_TEGRA {
                TEGRA_ALIGN
            } else {
                DESKTOP_ALIGN
            };
            if v.major == kmod::VERSION_MAJOR && v.pin_align == want_align {
                CaseStatus::pass_with(format!(
                    "UAPI {}.{}, flavour {}, caps {:#x}",
                    v.major, v.minor, v.flavour, v.caps
                ))
            } else {
                CaseStatus::fail(
                    format!("major {}, pin_align {want_align}", kmod::VERSION_MAJOR),
                    format!("major {}, pin_align {}", v.major, v.pin_align),
                )
            }
        }
        Err(e) => CaseStatus::fail("GET_VERSION succeeds", e.to_string()),
    }
}

pub fn bad_arguments() -> CaseStatus {
    let dev = match Device::open() {
        Ok(d) => d,
        Err(e) => return CaseStatus::error(e),
    };
    let checks: [(&str, Result<(), Errno>, i32); 4] = [
        (
            "PIN length 0",
            dev.pin(DESKTOP_ALIGN, 0, 0).map(drop),
            libc::EINVAL,
        ),
        (
            "UNPIN unknown handle",
            dev.unpin(0xdead_beef).map(drop),
            libc::ENOENT,
        ),
        (
            "EVENTS unknown handle",
            dev.events(0xdead_beef).map(drop),
            libc::ENOENT,
        ),
        ("unknown ioctl", dev.unknown_ioctl(), libc::ENOTTY),
    ];
    let wrong: Vec<String> = checks
        .iter()
        .filter(|(_, got, want)| *got != Err(Errno(*want)))
        .map(|(what, got, want)| format!("{what}: wanted {}, got {got:?}", kmod::errno_name(*want)))
        .collect();
    if wrong.is_empty() {
        CaseStatus::pass()
    } else {
        CaseStatus::fail("EINVAL, ENOENT, ENOENT, ENOTTY", wrong.join("; "))
    }
}

pub fn pin_page_table(s: &Session) -> Result<CaseStatus, String> {
    let dev = Device::open()?;
    let len = 4 * DESKTOP_ALIGN;
    let p = s
        .alloc(len as usize + DESKTOP_ALIGN as usize)
        .map_err(|e| e.to_string())?;
    let va = (p + DESKTOP_ALIGN - 1) & !(DESKTOP_ALIGN - 1);
    let result = (|| -> Result<CaseStatus, String> {
        let pin = dev.pin(va, len, 0).map_err(|e| format!("PIN: {e}"))?;
        let table = dev
            .page_table(pin.handle)
            .map_err(|e| format!("PAGE_TABLE: {e}"));
        let unpin = dev.unpin(pin.handle).map_err(|e| format!("UNPIN: {e}"));
        let table = table?;
        let unpin = unpin?;
        let uuid = s.uuid()?;
        let mut problems = Vec::new();
        if table.compatible == 0 {
            problems.push(format!(
                "page table version {:#x} not compatible",
                table.version
            ));
        }
        if table.page_size != DESKTOP_ALIGN {
            problems.push(format!("page size {} (want 65536)", table.page_size));
        }
        if u64::from(table.entries) != len / DESKTOP_ALIGN {
            problems.push(format!(
                "{} entries (want {})",
                table.entries,
                len / DESKTOP_ALIGN
            ));
        }
        if table.gpu_uuid != uuid {
            problems.push("GPU UUID differs from the CUDA device's".into());
        }
        if unpin.result != kmod::UNPIN_PUT || unpin.callbacks != 0 {
            problems.push(format!(
                "unpin result {} with {} callbacks",
                unpin.result, unpin.callbacks
            ));
        }
        Ok(if problems.is_empty() {
            CaseStatus::pass_with(format!(
                "{} entries of {} bytes, version {:#x}",
                table.entries, table.page_size, table.version
            ))
        } else {
            CaseStatus::fail(
                "a compatible table of 64 KB pages naming this GPU; a clean unpin",
                problems.join("; "),
            )
        })
    })();
    s.free(p).map_err(|e| e.to_string())?;
    result
}

pub fn revoke_on_free(s: &Session) -> Result<CaseStatus, String> {
    let dev = Device::open()?;
    let len = 2 * DESKTOP_ALIGN;
    let p = s
        .alloc(len as usize + DESKTOP_ALIGN as usize)
        .map_err(|e| e.to_string())?;
    let va = (p + DESKTOP_ALIGN - 1) & !(DESKTOP_ALIGN - 1);
    let pin = match dev.pin(va, len, 0) {
        Ok(pin) => pin,
        Err(e) => {
            s.free(p).map_err(|e| e.to_string())?;
            return Err(format!("PIN: {e}"));
        }
    };
    s.free(p).map_err(|e| e.to_string())?;
    let ev = dev.events(pin.handle).map_err(|e| format!("EVENTS: {e}"))?;
    let un = dev
        .unpin(pin.handle)
        .map_err(|e| format!("UNPIN after free: {e}"))?;
    Ok(
        if ev.state == kmod::STATE_REVOKED && ev.callbacks == 1 && un.result == kmod::UNPIN_REVOKED
        {
            CaseStatus::pass()
        } else {
            CaseStatus::fail(
                "after cuMemFree: state revoked, 1 callback; unpin reports revoked",
                format!(
                    "state {}, {} callbacks; unpin result {}",
                    ev.state, ev.callbacks, un.result
                ),
            )
        },
    )
}
