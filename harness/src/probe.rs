//! The capability probe: what this machine is and what it can run. `gpucts probe` prints it;
//! every run records it as the environment fingerprint of its reports.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::backend::cuda::{self, CudaError, DriverInfo};
use crate::backend::kmod::{self, KmodError};
use crate::backend::toolchain::Toolchain;
use crate::capability::{Capabilities, Capability, Missing, ProbedBy};

/// Why no RDMA device can be listed.
#[derive(Debug, thiserror::Error)]
pub enum RdmaError {
    #[cfg(feature = "rdma")]
    #[error(transparent)]
    Verbs(#[from] crate::backend::rdma::VerbsError),
    #[error("built without rdma (rebuild with `--features rdma`)")]
    NotBuilt,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostInfo {
    pub os: String,
    pub kernel: String,
    pub arch: String,
    pub cpu: String,
    pub cpus: usize,
}

#[derive(Debug, Serialize)]
pub struct Probe {
    pub host: HostInfo,
    #[serde(serialize_with = "result_with_reason")]
    pub driver: Result<DriverInfo, CudaError>,
    pub toolchain: BTreeMap<String, serde_json::Value>,
    #[serde(serialize_with = "result_with_reason")]
    pub kmod: Result<String, KmodError>,
    #[serde(serialize_with = "result_with_reason")]
    pub rdma: Result<Vec<String>, RdmaError>,
    pub capabilities: BTreeMap<String, serde_json::Value>,
}

/// A `Result` as serde writes one (`{"Ok": …}` / `{"Err": …}`), the error as its message.
fn result_with_reason<T: Serialize, E: std::fmt::Display, S: serde::Serializer>(
    r: &Result<T, E>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match r {
        Ok(v) => s.serialize_newtype_variant("Result", 0, "Ok", v),
        Err(e) => s.serialize_newtype_variant("Result", 1, "Err", &e.to_string()),
    }
}

pub fn host() -> HostInfo {
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        })
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    // SAFETY: uname fills a zeroed struct.
    let kernel = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) == 0 {
            std::ffi::CStr::from_ptr(u.release.as_ptr())
                .to_string_lossy()
                .into_owned()
        } else {
            "unknown".into()
        }
    };
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("model name")
                    .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
            })
        })
        .unwrap_or_else(|| "unknown".into());
    HostInfo {
        os,
        kernel,
        arch: std::env::consts::ARCH.to_string(),
        cpu,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
    }
}

fn rdma_devices() -> Result<Vec<String>, RdmaError> {
    #[cfg(feature = "rdma")]
    {
        Ok(crate::backend::rdma::devices()?)
    }
    #[cfg(not(feature = "rdma"))]
    {
        Err(RdmaError::NotBuilt)
    }
}

/// Why a capability that needs a GPU is missing: the driver's own reason, which says "no GPU"
/// itself when that is the cause (no second prefix).
fn no_gpu(e: &CudaError) -> Missing {
    let why = e.to_string();
    if why.starts_with("no GPU") {
        Missing::new(why)
    } else {
        Missing::new(format!("no GPU: {why}"))
    }
}

/// nvidia-peermem (gpudirect §1.6): a GPU, an RDMA device and the module loaded.
fn peermem(
    driver: &Result<cuda::DriverInfo, CudaError>,
    rdma: &Result<Vec<String>, RdmaError>,
) -> Result<String, Missing> {
    driver.as_ref().map_err(no_gpu)?;
    rdma.as_ref()
        .map_err(|e| Missing::new(format!("no RDMA: {e}")))?;
    if std::path::Path::new("/sys/module/nvidia_peermem").exists() {
        Ok("nvidia_peermem loaded".into())
    } else {
        Err(Missing::new(
            "nvidia_peermem is not loaded (/sys/module/nvidia_peermem)",
        ))
    }
}

/// ibv_reg_dmabuf_mr on GPU memory: a GPU and an RDMA device; whether the driver exports
/// dma-bufs is answered by the case itself (cuMemGetHandleForAddressRange).
fn dmabuf(
    driver: &Result<cuda::DriverInfo, CudaError>,
    rdma: &Result<Vec<String>, RdmaError>,
) -> Result<String, Missing> {
    driver.as_ref().map_err(no_gpu)?;
    match rdma {
        Ok(v) if !v.is_empty() => Ok("a GPU and an RDMA device".into()),
        Ok(_) => Err(Missing::new("no RDMA device found")),
        Err(e) => Err(Missing::new(format!("no RDMA: {e}"))),
    }
}

/// Probe everything; `toolchain` is the one this run will use; the driver's first GPU is the
/// one described.
pub fn probe(toolchain: &Toolchain) -> (Probe, Capabilities) {
    probe_for(toolchain, &cuda::DeviceSelector::default())
}

/// Probe everything, `device` (`--device`) being the GPU the run uses: the fingerprint
/// describes it, and a selector that names no device the driver sees leaves no GPU capability
/// (the reason names the devices seen).
pub fn probe_for(toolchain: &Toolchain, device: &cuda::DeviceSelector) -> (Probe, Capabilities) {
    let mut caps = Capabilities::default();
    toolchain.fill_capabilities(&mut caps);
    let driver = cuda::probe().and_then(|mut d| {
        d.selected = device.resolve(&d.gpus)?;
        Ok(d)
    });
    let kmod = kmod::probe();
    let rdma = rdma_devices();
    for &cap in Capability::ALL {
        let state = match cap.probed_by() {
            // Filled above from what the toolchain found; a case answers for its own.
            ProbedBy::Toolchain | ProbedBy::Case => continue,
            ProbedBy::Driver => match &driver {
                Ok(d) => Ok(d
                    .gpus
                    .iter()
                    .map(|g| format!("{} (sm_{})", g.name, g.compute_capability.replace('.', "")))
                    .collect::<Vec<_>>()
                    .join(", ")),
                Err(e) => Err(Missing::new(e)),
            },
            ProbedBy::Kmod => kmod.as_ref().map(Clone::clone).map_err(Missing::new),
            ProbedBy::Testprov => kmod::probe_testprov().map_err(Missing::new),
            ProbedBy::Rdma => match &rdma {
                Ok(v) if !v.is_empty() => Ok(v.join(", ")),
                Ok(_) => Err(Missing::new("no RDMA device found")),
                Err(e) => Err(Missing::new(e)),
            },
            ProbedBy::Peermem => peermem(&driver, &rdma),
            ProbedBy::Dmabuf => dmabuf(&driver, &rdma),
        };
        caps.set(cap, state);
    }
    let toolchain_json = toolchain
        .components()
        .iter()
        .map(|(c, comp)| {
            (
                c.name().to_string(),
                serde_json::to_value(comp).unwrap_or_default(),
            )
        })
        .chain(
            toolchain
                .missing()
                .iter()
                .map(|(c, why)| (c.name().to_string(), serde_json::json!({ "missing": why }))),
        )
        .collect();
    let capabilities = caps
        .iter()
        .map(|(c, s)| {
            (
                c.name().to_string(),
                match s {
                    Ok(d) => serde_json::json!({ "present": true, "detail": d }),
                    Err(why) => {
                        serde_json::json!({ "present": false, "reason": why, "hint": c.hint() })
                    }
                },
            )
        })
        .collect();
    (
        Probe {
            host: host(),
            driver,
            toolchain: toolchain_json,
            kmod,
            rdma,
            capabilities,
        },
        caps,
    )
}

impl Probe {
    /// Flat key/value pairs for JUnit properties and waiver platform matches.
    pub fn fingerprint(&self) -> BTreeMap<String, String> {
        let mut f = BTreeMap::new();
        f.insert("gpucts".into(), env!("CARGO_PKG_VERSION").into());
        f.insert("os".into(), self.host.os.clone());
        f.insert("kernel".into(), self.host.kernel.clone());
        f.insert("arch".into(), self.host.arch.clone());
        f.insert("cpu".into(), self.host.cpu.clone());
        match &self.driver {
            Ok(d) => {
                f.insert("cuda".into(), d.cuda_version.clone());
                if let Some(v) = &d.driver_version {
                    f.insert("driver".into(), v.clone());
                }
                if let Some(g) = d.selected_gpu() {
                    f.insert("gpu".into(), g.name.clone());
                    f.insert("compute_capability".into(), g.compute_capability.clone());
                    f.insert("gpu_uuid".into(), g.uuid.clone());
                }
            }
            Err(_) => {
                f.insert("gpu".into(), "none".into());
            }
        }
        for (name, v) in &self.toolchain {
            if let Some(ver) = v.get("version").and_then(|x| x.as_str()) {
                f.insert(name.clone(), ver.to_string());
            }
            // A tool replayed from `gpucts prebuild`'s store did not run here: say so beside
            // its version (which is the build machine's).
            if v.get("origin").and_then(|x| x.as_str()) == Some("prebuilt") {
                f.insert(format!("{name}_origin"), "prebuilt".into());
            }
        }
        f
    }

    /// The human-readable form of `gpucts probe`.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let h = &self.host;
        s += &format!(
            "host        {} | kernel {} | {} | {} ({} cpus)\n",
            h.os, h.kernel, h.arch, h.cpu, h.cpus
        );
        match &self.driver {
            Ok(d) => {
                s += &format!(
                    "driver      CUDA {} | driver {}\n",
                    d.cuda_version,
                    d.driver_version.as_deref().unwrap_or("(NVML not found)")
                );
                for g in &d.gpus {
                    s += &format!(
                        "gpu {}       {} | cc {} | {} | {} MiB | BAR1 {}\n",
                        g.ordinal,
                        g.name,
                        g.compute_capability,
                        g.uuid,
                        g.total_mem_mib,
                        g.bar1_total_mib
                            .map(|b| format!("{b} MiB"))
                            .unwrap_or_else(|| "unknown (no NVML)".into())
                    );
                }
            }
            Err(e) => s += &format!("gpu         {e}\n"),
        }
        s += "capabilities\n";
        for (name, v) in &self.capabilities {
            if v["present"].as_bool() == Some(true) {
                s += &format!("  {name:<10} yes  {}\n", v["detail"].as_str().unwrap_or(""));
            } else {
                s += &format!(
                    "  {name:<10} no   {} ({})\n",
                    v["reason"].as_str().unwrap_or(""),
                    v["hint"].as_str().unwrap_or("")
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod no_gpu_tests {
    use super::*;

    // The reason a GPU-dependent capability is missing names "no GPU" once, whether the
    // driver's error already says it (an absent libcuda) or not (a failed query).
    #[test]
    fn no_gpu_prefix_appears_once() {
        let absent = no_gpu(&CudaError::NoDevices).to_string();
        assert_eq!(absent, "no GPU: the driver reports 0 devices");
        let unloadable = no_gpu(&CudaError::Unloadable("libcuda.so.1: nope".into())).to_string();
        assert_eq!(unloadable.matches("no GPU").count(), 1, "{unloadable}");
    }
}
