//! Companion kernel module backend: `/dev/gpucts`, through the UAPI of
//! `kmod/include/uapi/gpucts_p2p.h` (version 1). The structures mirror the header field for
//! field; their sizes and the ioctl numbers are checked against the header's own list.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The device node the companion module creates.
pub const DEVICE: &str = "/dev/gpucts";
pub const VERSION_MAJOR: u32 = 1;

pub const FLAVOUR_DESKTOP: u32 = 0;
pub const FLAVOUR_TEGRA: u32 = 1;
pub const CAP_PERSISTENT: u32 = 1 << 0;
pub const PIN_PERSISTENT: u32 = 1 << 0;
pub const UNPIN_PUT: u32 = 1;
pub const UNPIN_REVOKED: u32 = 2;
pub const UNPIN_REVOKED_DURING: u32 = 3;
pub const STATE_PINNED: u32 = 1;
pub const STATE_REVOKED: u32 = 2;

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub flavour: u32,
    pub caps: u32,
    pub pin_align: u64,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Pin {
    pub va: u64,
    pub length: u64,
    pub p2p_token: u64,
    pub va_space_token: u32,
    pub flags: u32,
    pub handle: u64,
    pub pinned_va: u64,
    pub pinned_length: u64,
    pub mmap_offset: u64,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Unpin {
    pub handle: u64,
    pub result: u32,
    pub callbacks: u32,
    pub put_ret: i32,
    pub pad: u32,
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PageTable {
    pub handle: u64,
    pub addrs_ptr: u64,
    pub addrs_count: u32,
    pub version: u32,
    pub compatible: u32,
    pub page_size_type: u32,
    pub page_size: u64,
    pub entries: u32,
    pub pad: u32,
    pub gpu_uuid: [u8; 16],
}

#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Events {
    pub handle: u64,
    pub state: u32,
    pub callbacks: u32,
    pub flags: u32,
    pub zaps: u32,
}

/// Linux `_IOC` encoding (x86-64, arm64).
const fn ioc(dir: u64, nr: u64, size: usize) -> u64 {
    (dir << 30) | ((size as u64) << 16) | ((b'G' as u64) << 8) | nr
}
const READ: u64 = 2;
const WRITE: u64 = 1;

pub const IOC_GET_VERSION: u64 = ioc(READ, 0x00, std::mem::size_of::<Version>());
pub const IOC_PIN: u64 = ioc(READ | WRITE, 0x01, std::mem::size_of::<Pin>());
pub const IOC_UNPIN: u64 = ioc(READ | WRITE, 0x02, std::mem::size_of::<Unpin>());
pub const IOC_PAGE_TABLE: u64 = ioc(READ | WRITE, 0x03, std::mem::size_of::<PageTable>());
pub const IOC_EVENTS: u64 = ioc(READ | WRITE, 0x06, std::mem::size_of::<Events>());

/// An errno from the module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({})",
            errno_name(self.0),
            std::io::Error::from_raw_os_error(self.0)
        )
    }
}

pub fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EINVAL => "EINVAL",
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::ESTALE => "ESTALE",
        libc::ENOTTY => "ENOTTY",
        libc::EFAULT => "EFAULT",
        libc::EPERM => "EPERM",
        libc::ENOMEM => "ENOMEM",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EPROTO => "EPROTO",
        _ => "errno",
    }
}

/// An open `/dev/gpucts`.
#[derive(Debug)]
pub struct Device {
    file: File,
}

impl Device {
    pub fn open() -> Result<Device, String> {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(DEVICE)
            .map(|file| Device { file })
            .map_err(|e| format!("cannot open {DEVICE}: {e}"))
    }

    /// Issue `cmd` with `arg`; the module reads and writes `arg` in place.
    ///
    /// # Safety
    /// `T` must be the structure `cmd` encodes (size and layout).
    unsafe fn ioctl<T>(&self, cmd: u64, arg: &mut T) -> Result<(), Errno> {
        // SAFETY: per the function's contract, `arg` is the structure the command expects.
        let rc = unsafe { libc::ioctl(self.file.as_raw_fd(), cmd as _, arg as *mut T) };
        if rc < 0 {
            Err(Errno(
                std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
            ))
        } else {
            Ok(())
        }
    }

    pub fn version(&self) -> Result<Version, Errno> {
        let mut v = Version::default();
        // SAFETY: IOC_GET_VERSION takes a `Version`.
        unsafe { self.ioctl(IOC_GET_VERSION, &mut v) }.map(|()| v)
    }

    pub fn pin(&self, va: u64, length: u64, flags: u32) -> Result<Pin, Errno> {
        let mut p = Pin {
            va,
            length,
            flags,
            ..Default::default()
        };
        // SAFETY: IOC_PIN takes a `Pin`.
        unsafe { self.ioctl(IOC_PIN, &mut p) }.map(|()| p)
    }

    pub fn unpin(&self, handle: u64) -> Result<Unpin, Errno> {
        let mut u = Unpin {
            handle,
            ..Default::default()
        };
        // SAFETY: IOC_UNPIN takes an `Unpin`.
        unsafe { self.ioctl(IOC_UNPIN, &mut u) }.map(|()| u)
    }

    pub fn page_table(&self, handle: u64) -> Result<PageTable, Errno> {
        let mut t = PageTable {
            handle,
            ..Default::default()
        };
        // SAFETY: IOC_PAGE_TABLE takes a `PageTable`; no address array is passed.
        unsafe { self.ioctl(IOC_PAGE_TABLE, &mut t) }.map(|()| t)
    }

    pub fn events(&self, handle: u64) -> Result<Events, Errno> {
        let mut e = Events {
            handle,
            ..Default::default()
        };
        // SAFETY: IOC_EVENTS takes an `Events`.
        unsafe { self.ioctl(IOC_EVENTS, &mut e) }.map(|()| e)
    }

    /// An ioctl number the module does not define, with a harmless argument.
    pub fn unknown_ioctl(&self) -> Result<(), Errno> {
        let mut v = Version::default();
        // SAFETY: the module must refuse an unknown number without touching memory; even if it
        // wrote, `v` is as large as the number's encoded size.
        unsafe { self.ioctl(ioc(READ, 0x7f, std::mem::size_of::<Version>()), &mut v) }
    }
}

/// Whether the module's device can be opened and speaks this UAPI; `Err` says why not.
pub fn probe() -> Result<String, String> {
    if !Path::new(DEVICE).exists() {
        return Err(format!("kmod not loaded: {DEVICE} does not exist"));
    }
    let dev = Device::open().map_err(|e| format!("kmod present but {e}"))?;
    let v = dev
        .version()
        .map_err(|e| format!("{DEVICE} does not answer GET_VERSION: {e}"))?;
    if v.major != VERSION_MAJOR {
        return Err(format!(
            "{DEVICE} speaks UAPI {}.{}, this gpucts speaks {VERSION_MAJOR}.x",
            v.major, v.minor
        ));
    }
    Ok(format!(
        "{DEVICE} UAPI {}.{} ({} flavour)",
        v.major,
        v.minor,
        if v.flavour == FLAVOUR_TEGRA {
            "tegra"
        } else {
            "desktop"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The numbers and sizes the header lists for bindings that do not run cpp.
    #[test]
    fn layout_matches_the_uapi_header() {
        assert_eq!(std::mem::size_of::<Version>(), 24);
        assert_eq!(std::mem::size_of::<Pin>(), 64);
        assert_eq!(std::mem::size_of::<Unpin>(), 24);
        assert_eq!(std::mem::size_of::<PageTable>(), 64);
        assert_eq!(std::mem::size_of::<Events>(), 24);
        assert_eq!(IOC_GET_VERSION, 0x8018_4700);
        assert_eq!(IOC_PIN, 0xc040_4701);
        assert_eq!(IOC_UNPIN, 0xc018_4702);
        assert_eq!(IOC_PAGE_TABLE, 0xc040_4703);
        assert_eq!(IOC_EVENTS, 0xc018_4706);
        let header = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../kmod/include/uapi/gpucts_p2p.h"
        ))
        .expect("the UAPI header is in the repository");
        for n in [
            "0x80184700",
            "0xc0404701",
            "0xc0184702",
            "0xc0404703",
            "0xc0184706",
        ] {
            assert!(header.contains(n), "header lists {n}");
        }
        assert!(header.contains("GPUCTS_P2P_VERSION_MAJOR\t1"));
    }
}
