//! The PTX producers gpucts compiles with or reads, as one vocabulary for every area.
//!
//! ptx-interop 13.2 §2.3 binds every generator of PTX: a caller from one producer and a callee
//! from another must agree on the calling sequence. Each area picks the producers it drives
//! (its *view*, a constant list in the area) and keeps its own source generator; the names,
//! the capability each producer needs and its version come from here.
//!
//! Spellings: [`Producer::name`] is the spelling suites and case ids use; [`Producer::parse`]
//! also takes the aliases older suites wrote (`llc` for the LLVM IR producer, `reference` for
//! gpucts's own emitter, `hand` for the corpus).

use std::fmt;

use crate::backend::toolchain::Toolchain;
use crate::capability::Capability;

/// One producer of PTX.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Producer {
    /// NVRTC: CUDA C++ → PTX (the nvcc front end as a library).
    Nvrtc,
    /// libNVVM: NVVM IR (the LLVM 7 dialect with typed pointers) → PTX.
    Libnvvm,
    /// clang-19: C, C++ or CUDA device code → PTX for `nvptx64-nvidia-cuda`.
    Clang,
    /// LLVM IR → PTX through LLVM 19's NVPTX back end (`llc-19`; the atomics area drives the
    /// same back end through `clang-19 -x ir`). Spelled `llvm` in suites.
    Llc,
    /// gpucts's own PTX emitter: writes the §2.3 table literally (the reference producer).
    Gpucts,
    /// Hand-written PTX in `ptx-corpus/`, each file with its provenance.
    Corpus,
}

impl Producer {
    /// Every producer, in a stable order.
    pub const ALL: [Producer; 6] = [
        Producer::Nvrtc,
        Producer::Libnvvm,
        Producer::Clang,
        Producer::Llc,
        Producer::Gpucts,
        Producer::Corpus,
    ];

    /// The spelling in suites, case ids and reports.
    pub fn name(self) -> &'static str {
        match self {
            Producer::Nvrtc => "nvrtc",
            Producer::Libnvvm => "libnvvm",
            Producer::Clang => "clang",
            Producer::Llc => "llvm",
            Producer::Gpucts => "gpucts",
            Producer::Corpus => "corpus",
        }
    }

    /// The canonical name or an accepted alias.
    pub fn parse(s: &str) -> Option<Producer> {
        Some(match s {
            "nvrtc" => Producer::Nvrtc,
            "libnvvm" | "nvvm" => Producer::Libnvvm,
            "clang" | "clang-19" => Producer::Clang,
            "llvm" | "llc" | "llc-19" => Producer::Llc,
            "gpucts" | "reference" => Producer::Gpucts,
            "corpus" | "hand" => Producer::Corpus,
            _ => return None,
        })
    }

    /// What the producer reads, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Producer::Nvrtc => "NVRTC (CUDA C++)",
            Producer::Libnvvm => "libNVVM (NVVM IR)",
            Producer::Clang => "clang-19 (C / CUDA device C++)",
            Producer::Llc => "llc-19 (LLVM IR, NVPTX back end)",
            Producer::Gpucts => "gpucts reference PTX emitter (ptx-interop 13.2 §2.3 table)",
            Producer::Corpus => "hand-written PTX (ptx-corpus/)",
        }
    }

    /// The capability the producer needs to run; `None` for those that need no tool.
    pub fn capability(self) -> Option<Capability> {
        match self {
            Producer::Nvrtc => Some(Capability::Nvrtc),
            Producer::Libnvvm => Some(Capability::Libnvvm),
            // llc-19 ships with clang-19 (Debian's llvm-19); the Clang probe checks both.
            Producer::Clang | Producer::Llc => Some(Capability::Clang),
            Producer::Gpucts | Producer::Corpus => None,
        }
    }

    /// The capabilities as a list (empty for the tool-less producers).
    pub fn requires(self) -> Vec<Capability> {
        self.capability().into_iter().collect()
    }

    /// The version the producer reports on this machine, for waivers' `platform:` pins and
    /// reports; `None` when its tool is missing.
    pub fn version(self, tc: &Toolchain) -> Option<String> {
        match self {
            Producer::Gpucts => Some(format!("gpucts {}", env!("CARGO_PKG_VERSION"))),
            Producer::Corpus => Some("hand-written".to_string()),
            p => p
                .capability()
                .and_then(|c| tc.component(c))
                .map(|c| c.version.clone()),
        }
    }
}

impl fmt::Display for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Producer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Producer::parse(&s).ok_or_else(|| {
            let names: Vec<&str> = Producer::ALL.iter().map(|p| p.name()).collect();
            serde::de::Error::custom(format!(
                "unknown producer `{s}`; expected one of {}",
                names.join(", ")
            ))
        })
    }
}

/// A producer an area does not drive, named where the area was asked for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("producer `{producer}` is not one {area} compiles with (it uses {allowed})")]
pub struct NotInView {
    pub producer: Producer,
    pub area: &'static str,
    pub allowed: String,
}

/// Check that `p` is in an area's view; the error names the view.
pub fn in_view(p: Producer, area: &'static str, view: &[Producer]) -> Result<Producer, NotInView> {
    if view.contains(&p) {
        Ok(p)
    } else {
        Err(NotInView {
            producer: p,
            area,
            allowed: view.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
        })
    }
}

/// Parse a name that must be in an area's view.
pub fn parse_in_view(s: &str, view: &[Producer]) -> Option<Producer> {
    Producer::parse(s).filter(|p| view.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_aliases_resolve() {
        for p in Producer::ALL {
            assert_eq!(Producer::parse(p.name()), Some(p));
            assert_eq!(p.to_string(), p.name());
        }
        // The spellings suites already use: abi (nvrtc, clang, libnvvm), atomics (llvm).
        assert_eq!(Producer::parse("llvm"), Some(Producer::Llc));
        assert_eq!(Producer::parse("llc-19"), Some(Producer::Llc));
        assert_eq!(Producer::parse("reference"), Some(Producer::Gpucts));
        assert_eq!(Producer::parse("gcc"), None);
        let names: std::collections::BTreeSet<&str> =
            Producer::ALL.iter().map(|p| p.name()).collect();
        assert_eq!(names.len(), Producer::ALL.len(), "names are distinct");
    }

    #[test]
    fn capabilities_follow_the_tools() {
        assert_eq!(Producer::Nvrtc.capability(), Some(Capability::Nvrtc));
        assert_eq!(Producer::Libnvvm.capability(), Some(Capability::Libnvvm));
        assert_eq!(Producer::Llc.capability(), Some(Capability::Clang));
        assert!(Producer::Gpucts.requires().is_empty());
        assert!(Producer::Corpus.requires().is_empty());
        let tc = Toolchain::default();
        assert_eq!(Producer::Nvrtc.version(&tc), None, "no tool, no version");
        assert!(Producer::Gpucts.version(&tc).is_some());
    }

    #[test]
    fn deserializes_with_a_clear_error() {
        let p: Producer = serde_json::from_value(serde_json::json!("llvm")).unwrap();
        assert_eq!(p, Producer::Llc);
        let e = serde_json::from_value::<Producer>(serde_json::json!("gcc")).unwrap_err();
        assert!(e.to_string().contains("unknown producer `gcc`"), "{e}");
    }

    #[test]
    fn views_name_what_they_allow() {
        let view = [Producer::Nvrtc, Producer::Clang];
        assert_eq!(in_view(Producer::Clang, "x", &view), Ok(Producer::Clang));
        let e = in_view(Producer::Llc, "abi", &view).unwrap_err();
        assert_eq!(
            e.to_string(),
            "producer `llvm` is not one abi compiles with (it uses nvrtc, clang)"
        );
        assert_eq!(parse_in_view("llvm", &view), None);
        assert_eq!(parse_in_view("clang", &view), Some(Producer::Clang));
    }
}
