//! The contract between the runner and the spec areas.
//!
//! Each area (abi, atomics, ...) defines its own `check:` vocabulary as a serde enum that
//! implements [`Check`]; [`registry`] maps a suite file's `area:` to the parser for it. The
//! runner knows nothing of what a check does; an area knows nothing of how it is scheduled.

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::backend::toolchain::Toolchain;
use crate::capability::{Capabilities, Capability};
use crate::outcome::CaseStatus;

/// Everything a running case may use. Backends are reached only through here.
pub struct CaseContext<'a> {
    pub id: &'a str,
    pub caps: &'a Capabilities,
    pub toolchain: &'a Toolchain,
    /// A fresh directory for this case's files, removed afterwards unless `--keep`.
    pub scratch: PathBuf,
    /// The repository root (for `ptx-corpus/`, `kmod/`).
    pub root: &'a Path,
}

/// One case's area-specific content, parsed from its `check:`.
pub trait Check: Send + Sync + Debug + 'static {
    /// Capabilities implied by the content (e.g. the producer it compiles with), added to those
    /// the entry lists.
    fn requires(&self) -> Vec<Capability> {
        Vec::new()
    }
    /// Whether the case must run in a child process (GPU work, kernel module, anything that can
    /// crash or poison a context).
    fn isolate(&self) -> bool {
        false
    }
    fn run(&self, ctx: &CaseContext) -> CaseStatus;
}

/// Parses the `check:` content of one area's cases.
pub trait AreaParser: Send + Sync {
    fn parse(&self, content: serde_json::Value) -> Result<Arc<dyn Check>, String>;
}

struct Typed<C>(std::marker::PhantomData<fn() -> C>);

impl<C: Check + DeserializeOwned> AreaParser for Typed<C> {
    fn parse(&self, content: serde_json::Value) -> Result<Arc<dyn Check>, String> {
        serde_json::from_value::<C>(content)
            .map(|c| Arc::new(c) as Arc<dyn Check>)
            .map_err(|e| e.to_string())
    }
}

fn typed<C: Check + DeserializeOwned>() -> Box<dyn AreaParser> {
    Box::new(Typed::<C>(std::marker::PhantomData))
}

/// The areas a suite file may name.
pub const AREAS: &[&str] = &[
    "abi",
    "xcall",
    "syscalls",
    "atomics",
    "dwarf",
    "gpudirect",
    "selftest",
];

/// The parser for an area's checks.
pub fn registry(area: &str) -> Option<Box<dyn AreaParser>> {
    Some(match area {
        "abi" => typed::<crate::abi::AbiCheck>(),
        "xcall" => typed::<crate::xcall::XcallCheck>(),
        "syscalls" => typed::<crate::syscalls::SyscallsCheck>(),
        "atomics" => typed::<crate::atomics::AtomicsCheck>(),
        "dwarf" => typed::<crate::dwarf::DwarfCheck>(),
        "gpudirect" => typed::<crate::gpudirect::GpudirectCheck>(),
        "selftest" => typed::<crate::selftest::SelftestCheck>(),
        _ => return None,
    })
}
