//! RDMA through libibverbs (cargo feature `rdma`): memory registration and RDMA WRITE / READ
//! in loopback (two RC queue pairs of one port connected to each other), checked byte for
//! byte against the pattern written before the transfer, at every size from 1 B to 64 MB and
//! unaligned offsets, with guard bytes around the target. In the VM the device is soft-RoCE
//! (rdma_rxe): host memory only; GPU memory (nvidia-peermem, dma-buf) needs a rig.
//!
//! `GPUCTS_RDMA_DEVICE` picks the device (default: the first libibverbs lists).

use serde::Deserialize;

use crate::capability::Capability;
use crate::outcome::CaseStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RdmaCase {
    /// ibv_reg_mr on host memory: the region reports the range registered, keys are set.
    HostRegMr,
    /// RDMA WRITE host → host, every size class, unaligned offsets.
    WriteLoopback,
    /// RDMA READ host ← host, every size class, unaligned offsets.
    ReadLoopback,
    /// rdma_cm between two processes: a server offers a 1 MB buffer, the client connects
    /// through rdma_cm to the device's IPv4 address, RDMA READs it and RDMA WRITEs another
    /// pattern into it, which the server checks.
    CmTwoProcesses,
    /// ibv_reg_mr on cuMemAlloc memory through nvidia-peermem (gpudirect §3.7), then WRITE into
    /// it and READ back out, checked through cuMemcpy.
    GpuPeermem,
    /// ibv_reg_dmabuf_mr on a dma-buf of cuMemAlloc memory (cuMemGetHandleForAddressRange),
    /// then WRITE / READ as for peermem.
    GpuDmabuf,
}

impl RdmaCase {
    pub fn requires(self) -> Vec<Capability> {
        match self {
            RdmaCase::HostRegMr
            | RdmaCase::WriteLoopback
            | RdmaCase::ReadLoopback
            | RdmaCase::CmTwoProcesses => {
                vec![Capability::Rdma]
            }
            RdmaCase::GpuPeermem => vec![Capability::Gpu, Capability::Rdma, Capability::Peermem],
            RdmaCase::GpuDmabuf => vec![Capability::Gpu, Capability::Rdma, Capability::Dmabuf],
        }
    }
}

/// The byte a transfer `seed` puts at index `i` of its source: a multiplicative hash, so a
/// shifted, truncated or stale copy differs from it.
pub fn pattern(seed: u64, i: usize) -> u8 {
    let x = (i as u64 ^ seed.rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (x >> 56) as u8
}

/// Sizes from 1 B to 64 MB: around powers of two, the MTU, a page, a GPU page.
pub const SIZES: &[usize] = &[
    1,
    2,
    3,
    7,
    8,
    9,
    63,
    64,
    65,
    1023,
    1024,
    1025,
    4095,
    4096,
    4097,
    65535,
    65536,
    65537,
    (1 << 20) + 3,
    4 << 20,
    16 << 20,
    64 << 20,
];

/// (source offset, target offset) pairs; large sizes run with the first two only.
pub const OFFSETS: &[(usize, usize)] = &[(0, 0), (1, 3), (7, 4093), (4095, 1)];

/// Byte-compares `got` with the pattern `seed` from index `from`; the first difference.
pub fn first_difference(got: &[u8], seed: u64, from: usize) -> Option<(usize, u8, u8)> {
    got.iter()
        .enumerate()
        .find(|(i, b)| **b != pattern(seed, from + i))
        .map(|(i, b)| (i, pattern(seed, from + i), *b))
}

/// Run `case` on the run's RDMA device (`config.rdma_device`, else the first libibverbs lists).
pub fn run(case: RdmaCase, config: &crate::config::RunConfig) -> CaseStatus {
    #[cfg(feature = "rdma")]
    {
        imp::run(case, config.rdma_device.as_deref(), &config.device)
    }
    #[cfg(not(feature = "rdma"))]
    {
        let _ = (case, config);
        CaseStatus::skip(
            Capability::Rdma,
            "built without rdma (rebuild with `--features rdma`)",
        )
    }
}

#[cfg(feature = "rdma")]
mod imp {
    use super::*;
    use crate::backend::cuda::Session;
    use crate::backend::rdma::{Loopback, Mr, Op, Verbs};

    /// The device `dev` names, else the first libibverbs lists.
    fn open(dev: Option<&str>) -> Result<Verbs, CaseStatus> {
        Verbs::open(dev).map_err(|e| CaseStatus::error(e.to_string()))
    }

    /// `dev`: the run's RDMA device (`GPUCTS_RDMA_DEVICE`), when it names one; `gpu_device`:
    /// its GPU (`--device`).
    pub fn run(
        case: RdmaCase,
        dev: Option<&str>,
        gpu_device: &crate::backend::cuda::DeviceSelector,
    ) -> CaseStatus {
        let r = match case {
            RdmaCase::HostRegMr => host_reg_mr(dev),
            RdmaCase::WriteLoopback => loopback_sweep(Op::Write, dev),
            RdmaCase::ReadLoopback => loopback_sweep(Op::Read, dev),
            RdmaCase::CmTwoProcesses => cm_two_processes(dev),
            RdmaCase::GpuPeermem => gpu(false, dev, gpu_device),
            RdmaCase::GpuDmabuf => gpu(true, dev, gpu_device),
        };
        match r {
            Ok(note) => CaseStatus::pass_with(note),
            Err(s) => s,
        }
    }

    fn host_reg_mr(dev: Option<&str>) -> Result<String, CaseStatus> {
        let v = open(dev)?;
        let mut buf = vec![0u8; 3 * 4096 + 5];
        let (p, len) = (buf.as_mut_ptr(), buf.len());
        // SAFETY: `buf` outlives the region (dropped first, below).
        let mr = unsafe { v.reg_mr(p, len) }.map_err(|e| CaseStatus::error(e.to_string()))?;
        let (addr, rlen) = mr.range();
        let ok = addr == p as u64 && rlen == len && mr.lkey() != 0 && mr.rkey() != 0;
        drop(mr);
        drop(buf);
        if ok {
            Ok(format!("{} (GID {})", v.device, v.gid_text()))
        } else {
            Err(CaseStatus::fail(
                format!("the region reports {:#x}+{len} with keys set", p as u64),
                format!("{addr:#x}+{rlen}"),
            ))
        }
    }

    /// One transfer of `len` bytes from `src[so..]` to `dst[dox..]` (WRITE: src local; READ:
    /// src remote), then the target checked against the pattern and its guard bytes.
    #[allow(clippy::too_many_arguments)]
    fn one(
        lb: &Loopback,
        op: Op,
        (src, src_mr): (&mut [u8], &Mr),
        (dst, dst_mr): (&mut [u8], &Mr),
        so: usize,
        dox: usize,
        len: usize,
        seed: u64,
    ) -> Result<(), CaseStatus> {
        for (i, b) in src[so..so + len].iter_mut().enumerate() {
            *b = pattern(seed, i);
        }
        let guard = !pattern(seed, 0);
        let lo = dox.saturating_sub(1);
        let hi = (dox + len + 1).min(dst.len());
        dst[lo..hi].fill(guard);
        let (s, d) = (
            src.as_ptr() as u64 + so as u64,
            dst.as_ptr() as u64 + dox as u64,
        );
        let r = match op {
            Op::Write => lb.transfer(op, src_mr, s, dst_mr, d, len as u32),
            Op::Read => lb.transfer(op, dst_mr, d, src_mr, s, len as u32),
        };
        r.map_err(|e| CaseStatus::error(format!("{len} B at offsets {so}/{dox}: {e}")))?;
        if let Some((i, want, got)) = first_difference(&dst[dox..dox + len], seed, 0) {
            return Err(CaseStatus::fail(
                format!("{len} B at offsets {so}/{dox}: the source's bytes"),
                format!("byte {i}: {got:#04x}, source had {want:#04x}"),
            ));
        }
        if dox > 0 && dst[dox - 1] != guard || dox + len < dst.len() && dst[dox + len] != guard {
            return Err(CaseStatus::fail(
                format!("{len} B at offsets {so}/{dox}: nothing written outside the range"),
                "a guard byte changed".to_string(),
            ));
        }
        Ok(())
    }

    fn loopback_sweep(op: Op, dev: Option<&str>) -> Result<String, CaseStatus> {
        let v = open(dev)?;
        let max = SIZES.iter().max().copied().unwrap_or(0) + 8192;
        let mut src = vec![0u8; max];
        let mut dst = vec![0u8; max];
        // SAFETY: both buffers outlive their regions (the regions drop first, at scope end).
        let src_mr = unsafe { v.reg_mr(src.as_mut_ptr(), max) }
            .map_err(|e| CaseStatus::error(e.to_string()))?;
        // SAFETY: as above.
        let dst_mr = unsafe { v.reg_mr(dst.as_mut_ptr(), max) }
            .map_err(|e| CaseStatus::error(e.to_string()))?;
        let lb = v.loopback().map_err(|e| CaseStatus::error(e.to_string()))?;
        let mut n = 0u64;
        let mut bytes = 0usize;
        for &len in SIZES {
            let offs = if len > (1 << 20) {
                &OFFSETS[..2]
            } else {
                OFFSETS
            };
            for &(so, dox) in offs {
                n += 1;
                one(
                    &lb,
                    op,
                    (&mut src, &src_mr),
                    (&mut dst, &dst_mr),
                    so,
                    dox,
                    len,
                    n,
                )?;
                bytes += len;
            }
        }
        drop(lb);
        drop((src_mr, dst_mr));
        Ok(format!(
            "{n} transfers, {bytes} bytes, 1 B..64 MB, on {} (GID {})",
            v.device,
            v.gid_text()
        ))
    }

    /// The IPv4 address of the device's RoCE v2 GID (sysfs), for rdma_cm: read before any
    /// verbs call so the forked server starts from a clean library.
    fn device_ipv4(dev: Option<&str>) -> Result<String, CaseStatus> {
        let root = std::path::Path::new("/sys/class/infiniband");
        let dev = match dev {
            Some(d) => d.to_string(),
            None => std::fs::read_dir(root)
                .ok()
                .and_then(|mut d| d.next())
                .and_then(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .ok_or_else(|| CaseStatus::error("no device under /sys/class/infiniband"))?,
        };
        let gids = root.join(&dev).join("ports/1/gids");
        let mut found = None;
        for i in 0..16 {
            let Ok(g) = std::fs::read_to_string(gids.join(i.to_string())) else {
                continue;
            };
            let parts: Vec<&str> = g.trim().split(':').collect();
            if parts.len() == 8 && parts[..5].iter().all(|p| *p == "0000") && parts[5] == "ffff" {
                let hi = u16::from_str_radix(parts[6], 16).unwrap_or(0);
                let lo = u16::from_str_radix(parts[7], 16).unwrap_or(0);
                found = Some(format!(
                    "{}.{}.{}.{}",
                    hi >> 8,
                    hi & 0xff,
                    lo >> 8,
                    lo & 0xff
                ));
                break;
            }
        }
        found.ok_or_else(|| {
            CaseStatus::error(format!(
                "{dev} has no IPv4-mapped GID (rdma_cm needs an IP address on its interface)"
            ))
        })
    }

    fn cm_two_processes(dev: Option<&str>) -> Result<String, CaseStatus> {
        use crate::backend::rdma::{cm_client, cm_serve};
        use std::ffi::CString;
        const LEN: usize = 1 << 20;
        let ip = device_ipv4(dev)?;
        let host = CString::new(ip.clone()).map_err(CaseStatus::error)?;
        let port = CString::new("18761").map_err(CaseStatus::error)?;
        let mut fds = [0i32; 2];
        // SAFETY: a two-element array for pipe(2).
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return Err(CaseStatus::error("pipe failed"));
        }
        // SAFETY: the child runs the server and leaves with _exit; no verbs state exists yet.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: the read end is the parent's.
            unsafe { libc::close(fds[0]) };
            let r = cm_serve(
                &host,
                &port,
                LEN,
                |b| {
                    b.iter_mut()
                        .enumerate()
                        .for_each(|(i, x)| *x = pattern(11, i))
                },
                // SAFETY: one byte to our pipe.
                || unsafe {
                    libc::write(fds[1], b"l".as_ptr().cast(), 1);
                },
            );
            let code = match r {
                Ok(buf) if first_difference(&buf, 12, 0).is_none() => 0,
                Ok(_) => 1,
                Err(_) => 2,
            };
            // SAFETY: leaving the child.
            unsafe { libc::_exit(code) }
        }
        // SAFETY: our copy of the write end.
        unsafe { libc::close(fds[1]) };
        if pid < 0 {
            // SAFETY: the read end.
            unsafe { libc::close(fds[0]) };
            return Err(CaseStatus::error("fork failed"));
        }
        let mut b = 0u8;
        // SAFETY: one byte into a live local.
        let n = unsafe { libc::read(fds[0], (&mut b as *mut u8).cast(), 1) };
        // SAFETY: the read end.
        unsafe { libc::close(fds[0]) };
        let client = if n == 1 {
            cm_client(&host, &port, |len| {
                (0..len).map(|i| pattern(12, i)).collect()
            })
        } else {
            Err(crate::backend::rdma::VerbsError {
                call: "rdma_listen",
                what: "the server never listened".into(),
            })
        };
        let mut st = 0;
        // SAFETY: our child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        let read = client.map_err(|e| CaseStatus::error(format!("client: {e}")))?;
        if let Some((i, want, got)) = first_difference(&read, 11, 0) {
            return Err(CaseStatus::fail(
                "RDMA READ through rdma_cm returns the server's bytes",
                format!("byte {i}: {got:#04x}, server had {want:#04x}"),
            ));
        }
        match (libc::WIFEXITED(st), libc::WEXITSTATUS(st)) {
            (true, 0) => Ok(format!(
                "1 MB READ and WRITE between two processes via {ip}:18761"
            )),
            (true, 1) => Err(CaseStatus::fail(
                "the server's buffer holds what the client wrote",
                "it differs",
            )),
            _ => Err(CaseStatus::error(format!(
                "the server failed (wait status {st:#x}; 2: a verbs/rdma_cm call)"
            ))),
        }
    }

    /// GPU memory as the RDMA target (peermem: ibv_reg_mr on the device pointer; dmabuf:
    /// ibv_reg_dmabuf_mr on its exported fd): WRITE host → GPU, cuMemcpy back; READ GPU → host.
    fn gpu(
        dmabuf: bool,
        dev: Option<&str>,
        gpu_device: &crate::backend::cuda::DeviceSelector,
    ) -> Result<String, CaseStatus> {
        let v = open(dev)?;
        let s = Session::open_device(gpu_device).map_err(CaseStatus::error)?;
        let len = 4usize << 20;
        let dp = s.alloc(len).map_err(|e| CaseStatus::error(e.to_string()))?;
        let result = (|| -> Result<String, CaseStatus> {
            let gpu_mr = if dmabuf {
                let fd = s
                    .dmabuf_fd(dp, len)
                    .map_err(|e| CaseStatus::error(e.to_string()))?;
                use std::os::fd::AsRawFd;
                v.reg_dmabuf_mr(0, len, dp, fd.as_raw_fd())
                    .map_err(|e| CaseStatus::error(e.to_string()))?
            } else {
                // SAFETY: the device allocation outlives the region (freed after it drops).
                unsafe { v.reg_mr(dp as *mut u8, len) }
                    .map_err(|e| CaseStatus::error(e.to_string()))?
            };
            let mut host = vec![0u8; len];
            // SAFETY: `host` outlives the region.
            let host_mr = unsafe { v.reg_mr(host.as_mut_ptr(), len) }
                .map_err(|e| CaseStatus::error(e.to_string()))?;
            let lb = v.loopback().map_err(|e| CaseStatus::error(e.to_string()))?;
            for (i, b) in host.iter_mut().enumerate() {
                *b = pattern(1, i);
            }
            lb.transfer(
                Op::Write,
                &host_mr,
                host.as_ptr() as u64,
                &gpu_mr,
                dp,
                len as u32,
            )
            .map_err(|e| CaseStatus::error(e.to_string()))?;
            let mut back = vec![0u8; len];
            s.copy_to_host(&mut back, dp)
                .map_err(|e| CaseStatus::error(e.to_string()))?;
            if let Some((i, want, got)) = first_difference(&back, 1, 0) {
                return Err(CaseStatus::fail(
                    "RDMA WRITE lands in GPU memory",
                    format!("byte {i}: {got:#04x}, wrote {want:#04x}"),
                ));
            }
            host.fill(0);
            lb.transfer(
                Op::Read,
                &host_mr,
                host.as_ptr() as u64,
                &gpu_mr,
                dp,
                len as u32,
            )
            .map_err(|e| CaseStatus::error(e.to_string()))?;
            if let Some((i, want, got)) = first_difference(&host, 1, 0) {
                return Err(CaseStatus::fail(
                    "RDMA READ from GPU memory returns its bytes",
                    format!("byte {i}: {got:#04x}, GPU had {want:#04x}"),
                ));
            }
            Ok(format!("4 MB WRITE and READ through {}", v.device))
        })();
        s.free(dp).map_err(|e| CaseStatus::error(e.to_string()))?;
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_tells_shifted_and_stale_copies_apart() {
        let a: Vec<u8> = (0..4096).map(|i| pattern(1, i)).collect();
        assert_eq!(first_difference(&a, 1, 0), None);
        // a copy shifted by one byte or from another transfer is caught early
        assert!(matches!(first_difference(&a[1..], 1, 0), Some((i, _, _)) if i < 8));
        assert!(matches!(first_difference(&a, 2, 0), Some((i, _, _)) if i < 8));
        // every byte value appears: a constant fill cannot pass
        let mut seen = [false; 256];
        a.iter().for_each(|&b| seen[b as usize] = true);
        assert!(seen.iter().filter(|s| **s).count() > 200);
        assert_eq!(SIZES.first(), Some(&1));
        assert_eq!(SIZES.last(), Some(&(64 << 20)));
    }
}
