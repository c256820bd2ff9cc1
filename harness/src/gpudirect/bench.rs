//! `gpucts bench gpudirect`: pin and unpin latency per size (gdrcopy's method: each
//! nvidia_p2p_get_pages / put_pages timed on its own, here through the companion module's
//! PIN / UNPIN), CPU read / write bandwidth through the pinned mapping per size (gdrcopy's
//! copybw: repeated copies to and from the BAR mapping), and RDMA WRITE / READ bandwidth and
//! latency per size (perftest's method: back-to-back operations on one QP). Every figure is
//! min / median / max over repetitions, and every block says what it ran on: the test
//! provider's host pages and soft-RoCE are labelled as such, never as GPU figures.
//!
//! Each block ([`blocks`]) also records its curves as figures (`crate::figures::BenchBlock`),
//! so `gpucts bench gpudirect --results DIR` puts them in a results set and its HTML report.

use std::fmt::Write as _;
use std::time::Instant;

use crate::backend::kmod::{self, Device};
use crate::capability::Capability;
use crate::figures::{series, BenchBlock, Better};
use crate::gpudirect::kmod_cases::{Mem, DESKTOP_ALIGN, TEGRA_ALIGN};

const PIN: &str = "gpudirect.pin";
const PIN_WHAT: &str = "bench: pin/unpin latency per size (gpudirect-rdma §3.2)";
const BAR: &str = "gpudirect.bar";
const BAR_WHAT: &str =
    "bench: CPU access bandwidth through the pinned BAR mapping (gpudirect-rdma §3.5)";
const RDMA: &str = "gpudirect.rdma";
const RDMA_WHAT: &str =
    "bench: RDMA WRITE/READ latency and bandwidth per size (gpudirect-rdma §3.5)";

/// min / median / max of a sample.
pub fn summary(xs: &mut [f64]) -> (f64, f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    let med = if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    };
    (xs[0], med, xs[n - 1])
}

fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KB", b >> 10),
        b => format!("{b} B"),
    }
}

/// The whole bench as text; `reps` repetitions per size (pins of 256 MB and more: at most 5);
/// `config`: the command's settings (the RDMA device).
pub fn run(reps: usize, config: &crate::config::RunConfig) -> String {
    blocks(reps, config)
        .iter()
        .map(|b| b.text.as_str())
        .collect()
}

/// The whole bench as blocks (`gpudirect.pin`, `gpudirect.bar`, `gpudirect.rdma`), each with
/// its text and its curves; a block that cannot run here names the missing capability.
pub fn blocks(reps: usize, config: &crate::config::RunConfig) -> Vec<BenchBlock> {
    let reps = reps.clamp(3, 100);
    let mut out = kmod_bench(reps, &config.device);
    out.push(rdma_bench(reps, config.rdma_device.as_deref()));
    out
}

fn block(
    name: &str,
    what: &str,
    text: String,
    figures: Vec<crate::figures::Figure>,
    t0: Instant,
) -> BenchBlock {
    BenchBlock {
        name: name.into(),
        what: what.into(),
        skipped: None,
        figures,
        text,
        secs: t0.elapsed().as_secs_f64(),
    }
}

/// What the pinned memory is: the label every figure carries (the test provider's host pages
/// are never shown as GPU figures), the largest allocation and the pin alignment.
struct Source {
    label: &'static str,
    short: &'static str,
    max: u64,
    align: u64,
    tegra: bool,
}

/// The companion module's blocks: pin/unpin latency per size (gpudirect-rdma §3.2) and CPU
/// bandwidth through the pinned BAR mapping (§3.5); skipped, naming the capability, when the
/// module or a memory source is missing.
fn kmod_bench(reps: usize, device: &crate::backend::cuda::DeviceSelector) -> Vec<BenchBlock> {
    let t0 = Instant::now();
    let dev = match Device::open() {
        Ok(d) => d,
        Err(e) => {
            let why = format!("the companion module is not loaded: {e}");
            return vec![
                BenchBlock::skip(PIN, PIN_WHAT, Capability::Kmod, why.clone()),
                BenchBlock::skip(BAR, BAR_WHAT, Capability::Kmod, why),
            ];
        }
    };
    let tegra = dev
        .version()
        .map(|v| v.flavour == kmod::FLAVOUR_TEGRA)
        .unwrap_or(false);
    let mem = match Mem::open(device) {
        Ok(m) => m,
        Err(s) => {
            let (cap, why) = match s {
                crate::outcome::CaseStatus::Skip { capability, reason } => (capability, reason),
                other => (Capability::Gpu, other.summary()),
            };
            return vec![
                BenchBlock::skip(PIN, PIN_WHAT, cap, why.clone()),
                BenchBlock::skip(BAR, BAR_WHAT, cap, why),
            ];
        }
    };
    let (label, short, max) = match &mem {
        Mem::Prov(_) => (
            "TEST PROVIDER (host pages standing in for GPU memory; not GPU figures)",
            "test provider, not GPU",
            kmod::TESTPROV_MAX_ALLOC,
        ),
        Mem::Cuda(_) => (
            "GPU (cuMemAlloc memory, BAR1 through the companion module)",
            "GPU",
            1 << 30,
        ),
    };
    let src = Source {
        label,
        short,
        max,
        align: if tegra { TEGRA_ALIGN } else { DESKTOP_ALIGN },
        tegra,
    };
    let pin_block = pin_latency(&dev, &mem, &src, reps, t0);
    vec![pin_block, bar_bandwidth(&dev, &mem, &src, reps)]
}

/// Pin and unpin latency per size, 4 KB to 1 GB (each PIN / UNPIN timed on its own, as
/// gdrcopy times nvidia_p2p_get_pages / put_pages; gpudirect-rdma §3.2). A 4 KB request pins
/// a whole GPU page: the module rounds it.
fn pin_latency(dev: &Device, mem: &Mem, src: &Source, reps: usize, t0: Instant) -> BenchBlock {
    let mut out = String::new();
    let (mut pin_pts, mut unpin_pts) = (Vec::new(), Vec::new());
    let _ = writeln!(
        out,
        "pin/unpin latency on {}, {} flavour, {reps} repetitions (µs: min / median / max)",
        src.label,
        if src.tegra { "tegra" } else { "desktop" }
    );
    let sizes: [u64; 7] = [
        4 << 10,
        64 << 10,
        1 << 20,
        16 << 20,
        64 << 20,
        256 << 20,
        1 << 30,
    ];
    for &size in &sizes {
        if size > src.max {
            let _ = writeln!(
                out,
                "  {:>7}  skipped (the memory source allocates at most {})",
                human(size),
                human(src.max)
            );
            continue;
        }
        let va = match mem.alloc(size.max(src.align), src.align) {
            Ok((va, _)) => va,
            Err(s) => {
                let _ = writeln!(out, "  {:>7}  alloc: {}", human(size), s.summary());
                continue;
            }
        };
        let n = if size >= 256 << 20 { reps.min(5) } else { reps };
        let (mut pin, mut unpin) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let t = Instant::now();
            let p = match dev.pin(va, size, 0) {
                Ok(p) => p,
                Err(e) => {
                    let _ = writeln!(out, "  {:>7}  PIN: {e}", human(size));
                    break;
                }
            };
            pin.push(t.elapsed().as_secs_f64() * 1e6);
            let t = Instant::now();
            let _ = dev.unpin(p.handle);
            unpin.push(t.elapsed().as_secs_f64() * 1e6);
        }
        pin_pts.push((size as f64, pin.clone()));
        unpin_pts.push((size as f64, unpin.clone()));
        let (a, b, c) = summary(&mut pin);
        let (d, e, f) = summary(&mut unpin);
        let _ = writeln!(
            out,
            "  {:>7}  pin {a:>9.1} / {b:>9.1} / {c:>9.1}   unpin {d:>9.1} / {e:>9.1} / {f:>9.1}",
            human(size)
        );
        let _ = mem.free(va);
    }
    let short = src.short;
    block(
        PIN,
        PIN_WHAT,
        out,
        vec![
            series(
                &format!("pin latency ({short})"),
                "bytes",
                "µs",
                Some(Better::Lower),
                &pin_pts,
            ),
            series(
                &format!("unpin latency ({short})"),
                "bytes",
                "µs",
                Some(Better::Lower),
                &unpin_pts,
            ),
        ],
        t0,
    )
}

/// CPU write and read bandwidth through one mapping of the largest pin the source allows
/// (at most 64 MB), per size from 4 KB up by fours (gdrcopy's copybw: repeated copies to and
/// from the BAR mapping; gpudirect-rdma §3.5).
fn bar_bandwidth(dev: &Device, mem: &Mem, src: &Source, reps: usize) -> BenchBlock {
    let t0 = Instant::now();
    let mut out = String::new();
    let span = src.max.min(64 << 20);
    let _ = writeln!(
        out,
        "CPU access through the pinned mapping on {}, {reps} repetitions (MB/s: min / median / max)",
        src.label
    );
    let (mut write_pts, mut read_pts) = (Vec::new(), Vec::new());
    let Ok((va, _)) = mem.alloc(span, src.align) else {
        let _ = writeln!(out, "  alloc of {} failed", human(span));
        return block(BAR, BAR_WHAT, out, Vec::new(), t0);
    };
    let Ok(p) = dev.pin(va, span, 0) else {
        let _ = writeln!(out, "  PIN of {} failed", human(span));
        let _ = mem.free(va);
        return block(BAR, BAR_WHAT, out, Vec::new(), t0);
    };
    if let Ok(m) = dev.mmap(p.mmap_offset, span as usize, true) {
        let mut buf = vec![0x5au8; span as usize];
        let mut size = 4096u64;
        while size <= span {
            let (mut w, mut r) = (Vec::new(), Vec::new());
            for _ in 0..reps {
                let t = Instant::now();
                m.copy_in(0, &buf[..size as usize]);
                w.push(size as f64 / t.elapsed().as_secs_f64() / 1e6);
                let t = Instant::now();
                m.copy_out(0, &mut buf[..size as usize]);
                r.push(size as f64 / t.elapsed().as_secs_f64() / 1e6);
            }
            write_pts.push((size as f64, w.clone()));
            read_pts.push((size as f64, r.clone()));
            let (a, b, c) = summary(&mut w);
            let (d, e, f) = summary(&mut r);
            let _ = writeln!(
                out,
                "  {:>7}  write {a:>9.0} / {b:>9.0} / {c:>9.0}   read {d:>9.0} / {e:>9.0} / {f:>9.0}",
                human(size)
            );
            size *= 4;
        }
    } else {
        let _ = writeln!(out, "  mmap failed");
    }
    let _ = dev.unpin(p.handle);
    let _ = mem.free(va);
    let short = src.short;
    let figures = vec![
        series(
            &format!("BAR write bandwidth ({short})"),
            "bytes",
            "MB/s",
            Some(Better::Higher),
            &write_pts,
        ),
        series(
            &format!("BAR read bandwidth ({short})"),
            "bytes",
            "MB/s",
            Some(Better::Higher),
            &read_pts,
        ),
    ];
    block(BAR, BAR_WHAT, out, figures, t0)
}

#[cfg(feature = "rdma")]
/// `dev`: the RDMA device the command's settings name (`GPUCTS_RDMA_DEVICE`), else the first.
fn rdma_bench(reps: usize, dev: Option<&str>) -> BenchBlock {
    use crate::backend::rdma::{Op, Verbs};
    let t0 = Instant::now();
    let mut out = String::new();
    let out = &mut out;
    let v = match Verbs::open(dev) {
        Ok(v) => v,
        Err(e) => {
            return BenchBlock::skip(RDMA, RDMA_WHAT, Capability::Rdma, e.to_string());
        }
    };
    let soft = v.device.starts_with("rxe") || v.device.starts_with("siw");
    let label = if soft {
        format!(
            "{} (SOFTWARE RDMA: soft-RoCE over the VM's own interface; host memory, not GPU figures)",
            v.device
        )
    } else {
        format!("{} (host memory)", v.device)
    };
    let max = 64usize << 20;
    let mut src = vec![0x11u8; max];
    let mut dst = vec![0u8; max];
    // SAFETY: both buffers outlive their regions (dropped at the end of this function, after
    // the regions and the queue pairs).
    let regs = unsafe {
        (
            v.reg_mr(src.as_mut_ptr(), max),
            v.reg_mr(dst.as_mut_ptr(), max),
        )
    };
    let (Ok(smr), Ok(dmr), Ok(lb)) = (regs.0, regs.1, v.loopback()) else {
        let _ = writeln!(out, "RDMA: registration or QP setup failed");
        return block(RDMA, RDMA_WHAT, std::mem::take(out), Vec::new(), t0);
    };
    let short = if soft {
        "soft-RoCE, host memory"
    } else {
        "host memory"
    };
    // latency (µs) up to 4 KB, bandwidth (MB/s) above, per operation
    let mut pts: [Vec<(f64, Vec<f64>)>; 4] = Default::default();
    let (s, d) = (src.as_ptr() as u64, dst.as_ptr() as u64);
    let _ = writeln!(
        out,
        "RDMA loopback on {label}, {reps} repetitions; latency µs and bandwidth MB/s (min / median / max)"
    );
    let mut size = 1usize;
    'sizes: while size <= max {
        let mut line = format!("  {:>7}", human(size as u64));
        for op in [Op::Write, Op::Read] {
            let mut xs = Vec::new();
            for _ in 0..if size > 4 << 20 { reps.min(3) } else { reps } {
                let t = Instant::now();
                let r = match op {
                    Op::Write => lb.transfer(op, &smr, s, &dmr, d, size as u32),
                    Op::Read => lb.transfer(op, &dmr, d, &smr, s, size as u32),
                };
                if let Err(e) = r {
                    let _ = writeln!(out, "{line}  {op:?}: {e}");
                    break 'sizes;
                }
                let secs = t.elapsed().as_secs_f64();
                xs.push(if size <= 4096 {
                    secs * 1e6
                } else {
                    size as f64 / secs / 1e6
                });
            }
            let slot = usize::from(op != Op::Write) + if size <= 4096 { 0 } else { 2 };
            pts[slot].push((size as f64, xs.clone()));
            let (a, b, c) = summary(&mut xs);
            let unit = if size <= 4096 { "µs" } else { "MB/s" };
            let _ = write!(
                line,
                "  {} {a:>9.1} / {b:>9.1} / {c:>9.1} {unit}",
                if op == Op::Write { "write" } else { "read" }
            );
        }
        let _ = writeln!(out, "{line}");
        size *= if size < 4096 { 8 } else { 4 };
    }
    drop(lb);
    drop((smr, dmr));
    let [wl, rl, wb, rb] = pts;
    let figures = vec![
        series(
            &format!("RDMA WRITE latency ({short})"),
            "bytes",
            "µs",
            Some(Better::Lower),
            &wl,
        ),
        series(
            &format!("RDMA READ latency ({short})"),
            "bytes",
            "µs",
            Some(Better::Lower),
            &rl,
        ),
        series(
            &format!("RDMA WRITE bandwidth ({short})"),
            "bytes",
            "MB/s",
            Some(Better::Higher),
            &wb,
        ),
        series(
            &format!("RDMA READ bandwidth ({short})"),
            "bytes",
            "MB/s",
            Some(Better::Higher),
            &rb,
        ),
    ];
    block(RDMA, RDMA_WHAT, std::mem::take(out), figures, t0)
}

#[cfg(not(feature = "rdma"))]
fn rdma_bench(_reps: usize, _dev: Option<&str>) -> BenchBlock {
    BenchBlock::skip(
        RDMA,
        RDMA_WHAT,
        Capability::Rdma,
        "built without --features rdma",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_is_min_median_max() {
        assert_eq!(summary(&mut [3.0, 1.0, 2.0]), (1.0, 2.0, 3.0));
        assert_eq!(summary(&mut [4.0, 1.0, 2.0, 3.0]), (1.0, 2.5, 4.0));
        assert_eq!(human(4096), "4 KB");
        assert_eq!(human(1 << 30), "1 GB");
        assert_eq!(human(3), "3 B");
    }
}
