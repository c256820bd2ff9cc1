//! The suite model: YAML suite files, loaded into typed cases.
//!
//! A suite file names its area and lists case entries. An entry has a hierarchical id
//! (`area.group.case`), the spec clause it checks, the capabilities it needs, and a `check:`
//! whose content belongs to the area. A `matrix:` expands one entry into many cases; every
//! matrix key must appear in the id as `{key}`, so expanded ids are distinct, and `{key}` in the
//! check content is replaced by the value.
//!
//! Loading is strict: unknown fields, duplicate keys and malformed values are errors that name
//! `file:line:column`, and a suite that fails to load stops the run before anything runs.

pub mod input;
mod load;
mod matrix;
mod validate;

pub(crate) use load::{
    bare_message, explain, from_yaml, load_bytes, load_file_with, load_suites, load_suites_with,
    resolve_suite_arg, yaml_options, LoadedSuite, SuiteError,
};
pub use load::{load_text, Limits};
pub use matrix::expand;
pub(crate) use validate::{drop_out_of_view, validate_cases};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::area::Check;
use crate::capability::Capability;

/// One runnable case, after matrix expansion and parsing of its area-specific content.
#[derive(Debug, Clone)]
pub struct Case {
    /// Stable hierarchical id, e.g. `abi.fundamental.u32`.
    pub id: String,
    /// The area this case belongs to (the suite file's `area:`).
    pub area: String,
    /// The spec clause checked: a catalogue id ([`crate::clauses`]) and its detail, e.g.
    /// `ptx-interop-13.2 §2.3 note A (lint on producer output)`.
    pub clause: String,
    /// Capabilities the entry lists plus those its check derives.
    pub requires: Vec<Capability>,
    /// Run in a child process (GPU work, kernel module).
    pub isolate: bool,
    pub timeout: Duration,
    /// Where the entry stands, for messages: `suites/abi.yaml:12:5`.
    pub origin: Origin,
    /// The suite file, so an isolated child can load the same case.
    pub file: PathBuf,
    pub check: Arc<dyn Check>,
    /// The GPU this copy of the case runs on, when the run covers several (`--devices`): the
    /// id is then the suite's id with `@DEVICE` after it. `None`: the run's `--device`.
    pub device: Option<crate::backend::cuda::DeviceSelector>,
}

impl Case {
    /// Whether the case uses a GPU, and so runs once per device under `--devices`: it needs
    /// the gpu capability (or peermem, dmabuf: GPU memory over RDMA), or its check says so.
    pub fn uses_gpu(&self) -> bool {
        self.check.per_device()
            || self.requires.iter().any(|c| {
                matches!(
                    c,
                    Capability::Gpu | Capability::Peermem | Capability::Dmabuf
                )
            })
    }

    /// The id the suite file gives the case (without a per-device copy's `@DEVICE`): what an
    /// isolated child looks up.
    pub fn suite_id(&self) -> &str {
        match &self.device {
            Some(d) => self.id.strip_suffix(&format!("@{d}")).unwrap_or(&self.id),
            None => &self.id,
        }
    }
}

/// Where a suite entry stands: its file and the 1-based line and column of the entry.
/// Displays as `file:line:column`, the form every message uses.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    pub file: PathBuf,
    pub line: u64,
    pub column: u64,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

// Unit tests load one suite file without the run around it.
#[cfg(test)]
pub(crate) use load::load_file;

#[cfg(test)]
mod tests {
    use super::Origin;

    #[test]
    fn origin_displays_as_file_line_column() {
        // The form of every suite message and of results.json's `origin` (see `Case::origin`).
        let o = Origin {
            file: "suites/abi.yaml".into(),
            line: 12,
            column: 5,
        };
        assert_eq!(o.to_string(), "suites/abi.yaml:12:5");
    }
}
