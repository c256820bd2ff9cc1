//! Capabilities a case may require, and the set this machine has.
//!
//! A case names the capabilities it needs in its suite entry; the runner skips it, naming the
//! first missing one, before anything runs. `--require` names capabilities (or families such as
//! `toolchain`) whose absence must fail the run instead.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What answers whether this machine has a capability (see `probe::probe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbedBy {
    /// The toolchain found the tool or library.
    Toolchain,
    /// The CUDA driver lists a GPU.
    Driver,
    /// The companion module's device node.
    Kmod,
    /// The test provider's device node.
    Testprov,
    /// libibverbs lists an RDMA device.
    Rdma,
    /// A GPU, an RDMA device and nvidia-peermem loaded.
    Peermem,
    /// A GPU and an RDMA device.
    Dmabuf,
    /// Never in the machine's set: the case finds it missing itself (a producer's feature, a
    /// corpus checked out or not).
    Case,
}

/// One row of the capability table.
#[derive(Debug)]
struct Row {
    name: &'static str,
    family: &'static str,
    probe: ProbedBy,
    hint: &'static str,
}

/// What a user does to provide a toolchain capability.
const TOOLCHAIN_HINT: &str =
    "run `gpucts toolchain install` (with `--toolchain system`: install the CUDA toolkit)";

/// The capability table: one row per capability (its name in suites and `--require`, the
/// family `--require` may name instead, what probes it, what a user does to provide it).
macro_rules! capabilities {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $name:literal, family: $family:literal, probe: $probe:ident, hint: $hint:expr;
    )+) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Capability {
            $( $(#[$doc])* $variant, )+
        }

        impl Capability {
            pub(crate) const ALL: &'static [Capability] = &[$(Capability::$variant),+];
            const ROWS: &'static [Row] = &[$(Row {
                name: $name,
                family: $family,
                probe: ProbedBy::$probe,
                hint: $hint,
            }),+];
        }
    };
}

capabilities! {
    /// A CUDA GPU reachable through the driver API.
    Gpu = "gpu", family: "gpu", probe: Driver,
        hint: "needs an NVIDIA GPU and its driver (libcuda.so.1)";
    /// `ptxas` (PTX -> cubin).
    Ptxas = "ptxas", family: "toolchain", probe: Toolchain, hint: TOOLCHAIN_HINT;
    /// NVRTC (CUDA C++ -> PTX).
    Nvrtc = "nvrtc", family: "toolchain", probe: Toolchain, hint: TOOLCHAIN_HINT;
    /// nvJitLink (offline linking of PTX/cubins).
    Nvjitlink = "nvjitlink", family: "toolchain", probe: Toolchain, hint: TOOLCHAIN_HINT;
    /// libNVVM (NVVM IR -> PTX).
    Libnvvm = "libnvvm", family: "toolchain", probe: Toolchain, hint: TOOLCHAIN_HINT;
    /// `nvdisasm` (cubin disassembly).
    Nvdisasm = "nvdisasm", family: "toolchain", probe: Toolchain, hint: TOOLCHAIN_HINT;
    /// `cuobjdump`.
    Cuobjdump = "cuobjdump", family: "toolchain", probe: Toolchain, hint: TOOLCHAIN_HINT;
    /// libcu++ headers (`cuda/atomic`), from the `nvidia-cuda-cccl` wheel or a CUDA install.
    Cccl = "cccl", family: "toolchain", probe: Toolchain, hint: TOOLCHAIN_HINT;
    /// clang-19 / llc-19 with the NVPTX target.
    Clang = "clang", family: "clang", probe: Toolchain,
        hint: "run `apt-get install clang-19 llvm-19`";
    /// The host's C++ compiler, g++: an Itanium C++ ABI reference independent of the CUDA
    /// producers (ptx-interop 13.2 ch. 7 names).
    #[serde(rename = "g++")]
    Gxx = "g++", family: "g++", probe: Toolchain, hint: "run `apt-get install g++`";
    /// rustc's `nvptx64-nvidia-cuda` target, with `rust-src` (gpucts builds `core` for it).
    Rustc = "rustc", family: "rustc", probe: Toolchain,
        hint: "install Rust (rustup) and run `rustup component add rust-src`";
    /// Triton (PyPI `triton`, pinned), compiling `@triton.jit` kernels to PTX without a GPU.
    Triton = "triton", family: "triton", probe: Toolchain,
        hint: "run `gpucts toolchain install --with triton`";
    /// numba-cuda (PyPI `numba-cuda`, pinned), compiling Python device functions with its C
    /// ABI through libNVVM.
    NumbaCuda = "numba-cuda", family: "numba-cuda", probe: Toolchain,
        hint: "run `gpucts toolchain install --with numba-cuda`";
    /// The gpucts companion module's device node, `/dev/gpucts`.
    Kmod = "kmod", family: "kmod", probe: Kmod,
        hint: "build and load kmod/ (see kmod/README.md)";
    /// An RDMA device through libibverbs (cargo feature `rdma`).
    Rdma = "rdma", family: "rdma", probe: Rdma,
        hint: "build with `--features rdma` on a machine with an RDMA device (libibverbs)";
    /// The companion module's test provider, `/dev/gpucts_testprov` (host pages standing in
    /// for GPU memory, with fault injection; kmod/testprov). Never a GPU.
    Testprov = "testprov", family: "testprov", probe: Testprov,
        hint: "load kmod/testprov/gpucts_testprov.ko before gpucts_p2p.ko (ci/kmod-vm does; never next to nvidia.ko)";
    /// nvidia-peermem: ibv_reg_mr on GPU memory (gpudirect §1.6).
    Peermem = "peermem", family: "peermem", probe: Peermem,
        hint: "a GPU, an RDMA NIC and `modprobe nvidia-peermem`";
    /// ibv_reg_dmabuf_mr on a dma-buf of GPU memory (cuMemGetHandleForAddressRange).
    Dmabuf = "dmabuf", family: "dmabuf", probe: Dmabuf,
        hint: "a GPU with dma-buf export (CUDA 11.7+, open kernel modules) and an RDMA NIC";
    /// A language feature the producer under test lacks (e.g. a libcu++ without
    /// `cuda::thread_scope_cluster`): the case cannot be expressed with this producer version.
    /// Its own family, so `--require toolchain` does not fail on it; `--require
    /// producer-feature` does.
    ProducerFeature = "producer-feature", family: "producer-feature", probe: Case,
        hint: "needs a producer version that can express the case";
    /// ci/kmod-vm's guest peer: QEMU's edu device behind QEMU's intel-iommu, bound by the
    /// companion module (the gpudirect.kmod.iommu_* cases).
    IommuPeer = "iommu-peer", family: "iommu-peer", probe: Case,
        hint: "run ci/kmod-vm (QEMU 7.2+: -device intel-iommu, -device edu)";
    /// A public corpus under `../shared/corpora/` (read in place, never copied).
    Corpus = "corpus", family: "corpus", probe: Case,
        hint: "needs the public corpora checked out at ../shared/corpora/";
}

impl Capability {
    fn row(self) -> &'static Row {
        &Capability::ROWS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The family `--require` may name instead of the capability itself.
    pub fn family(self) -> &'static str {
        self.row().family
    }

    /// What a user does to provide this capability.
    pub(crate) fn hint(self) -> &'static str {
        self.row().hint
    }

    /// What answers whether this machine has the capability.
    pub(crate) fn probed_by(self) -> ProbedBy {
        self.row().probe
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A capability name that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapabilityError {
    /// Not a capability's name.
    #[error("unknown capability `{0}`")]
    Unknown(String),
    /// A `--require` entry that is neither a capability nor a family; `known` lists both.
    #[error("unknown capability `{name}` (known: {known})")]
    UnknownRequirement { name: String, known: String },
}

impl FromStr for Capability {
    type Err = CapabilityError;
    fn from_str(s: &str) -> Result<Self, CapabilityError> {
        Capability::ALL
            .iter()
            .copied()
            .find(|c| c.name() == s)
            .ok_or_else(|| CapabilityError::Unknown(s.to_string()))
    }
}

/// A `--require` entry: one capability or a whole family (`toolchain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement(String);

impl Requirement {
    pub fn parse(s: &str) -> Result<Self, CapabilityError> {
        let s = s.trim();
        if Capability::ALL
            .iter()
            .any(|c| c.name() == s || c.family() == s)
        {
            Ok(Requirement(s.to_string()))
        } else {
            let mut known: Vec<&str> = Capability::ALL.iter().map(|c| c.name()).collect();
            for c in Capability::ALL {
                if !known.contains(&c.family()) {
                    known.push(c.family());
                }
            }
            Err(CapabilityError::UnknownRequirement {
                name: s.to_string(),
                known: known.join(", "),
            })
        }
    }

    /// Every `--require` entry, or the first that names nothing.
    pub(crate) fn parse_all(entries: &[String]) -> Result<Vec<Requirement>, CapabilityError> {
        entries.iter().map(|e| Requirement::parse(e)).collect()
    }

    pub fn covers(&self, cap: Capability) -> bool {
        cap.name() == self.0 || cap.family() == self.0
    }
}

/// Why a capability is missing, as the probe or the toolchain found it (a skip reason).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{0}")]
pub struct Missing(pub String);

impl Missing {
    pub fn new(reason: impl std::fmt::Display) -> Missing {
        Missing(reason.to_string())
    }
}

/// What this machine has: for each capability either a description (version, path) or the
/// reason it is missing.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Capabilities {
    entries: BTreeMap<Capability, Result<String, Missing>>,
}

impl Capabilities {
    pub fn set(&mut self, cap: Capability, state: Result<String, Missing>) {
        self.entries.insert(cap, state);
    }

    pub fn has(&self, cap: Capability) -> bool {
        matches!(self.entries.get(&cap), Some(Ok(_)))
    }

    /// Why `cap` is missing, in a form fit for a skip reason.
    pub(crate) fn missing_reason(&self, cap: Capability) -> String {
        let why = match self.entries.get(&cap) {
            Some(Err(why)) => why.to_string(),
            Some(Ok(_)) => return String::new(),
            None => format!("{cap} was not probed"),
        };
        format!("{why} ({})", cap.hint())
    }

    /// The first capability in `needed` that is missing, as a skip status.
    pub(crate) fn first_missing(&self, needed: &[Capability]) -> Option<(Capability, String)> {
        needed
            .iter()
            .copied()
            .find(|c| !self.has(*c))
            .map(|c| (c, self.missing_reason(c)))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Capability, &Result<String, Missing>)> {
        self.entries.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_match_the_serde_spelling() {
        // Suites and results.json spell a capability the serde way (kebab-case of the
        // variant); the table's name must be the same word.
        for &c in Capability::ALL {
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::json!(c.name())
            );
            assert_eq!(c.name().parse::<Capability>(), Ok(c));
        }
        assert_eq!(Capability::ALL.len(), Capability::ROWS.len());
        assert_eq!(Capability::ProducerFeature.name(), "producer-feature");
        assert_eq!(Capability::Cccl.family(), "toolchain");
        assert_eq!(Capability::Clang.family(), "clang");
        assert_eq!(Capability::Gpu.probed_by(), ProbedBy::Driver);
    }

    #[test]
    fn requirement_families_cover_members() {
        let r = Requirement::parse("toolchain").unwrap();
        assert!(r.covers(Capability::Ptxas));
        assert!(r.covers(Capability::Nvrtc));
        assert!(!r.covers(Capability::Gpu));
        assert!(Requirement::parse("gpu").unwrap().covers(Capability::Gpu));
        assert_eq!(
            Requirement::parse("warp-drive").unwrap_err().to_string(),
            "unknown capability `warp-drive` (known: gpu, ptxas, nvrtc, nvjitlink, libnvvm, \
             nvdisasm, cuobjdump, cccl, clang, g++, rustc, triton, numba-cuda, kmod, rdma, testprov, peermem, dmabuf, \
             producer-feature, iommu-peer, corpus, toolchain)"
        );
        assert_eq!(
            "warp-drive".parse::<Capability>(),
            Err(CapabilityError::Unknown("warp-drive".into()))
        );
        let all = Requirement::parse_all(&["gpu".into(), " toolchain".into()]).unwrap();
        assert_eq!(all.len(), 2);
        assert!(Requirement::parse_all(&["gpu".into(), "x".into()]).is_err());
        assert!(
            !r.covers(Capability::ProducerFeature),
            "a producer's missing feature is not a missing toolchain"
        );
    }

    #[test]
    fn missing_reason_names_hint() {
        let mut c = Capabilities::default();
        c.set(
            Capability::Gpu,
            Err(Missing::new("no GPU: libcuda.so.1 not found")),
        );
        let (cap, why) = c.first_missing(&[Capability::Gpu]).unwrap();
        assert_eq!(cap, Capability::Gpu);
        assert!(why.contains("libcuda.so.1"), "{why}");
    }
}
