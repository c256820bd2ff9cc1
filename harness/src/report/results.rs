//! `results.json` as the readers (`report`, `diff`, `bundle`, `merge`) see it: the schema
//! crate's types (`gpucts_results`) with the harness's capabilities, and what needs the
//! harness (the runner's verdict, git).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use gpucts_results::results::{
    group_verdict, Counts, HashedFile, NodeInfo, ReadError, RunInfo, VerdictName, WaiverRecord,
    MAX_CASES, MAX_RESULTS_BYTES, OLDEST_SCHEMA, SCHEMA_VERSION,
};

use crate::capability::Capability;
use crate::outcome::Verdict;

/// A whole results set, skips naming the harness's capabilities.
pub type Results = gpucts_results::Results<Capability>;
/// One case as read back.
pub type StoredCase = gpucts_results::StoredCase<Capability>;

/// The one conversion from the runner's verdict to the name results.json stores (the waiver
/// id travels beside it, not in the name).
impl From<&Verdict> for VerdictName {
    fn from(v: &Verdict) -> VerdictName {
        match v {
            Verdict::Pass => VerdictName::Pass,
            Verdict::Fail => VerdictName::Fail,
            Verdict::Skip => VerdictName::Skip,
            Verdict::Waived { .. } => VerdictName::Waived,
            Verdict::StaleWaiver { .. } => VerdictName::StaleWaiver,
            Verdict::RequiredMissing => VerdictName::RequiredMissing,
            Verdict::Flaky => VerdictName::Flaky,
        }
    }
}

/// The `results.json` of `path`: a results directory or the file itself (a bundle is read by
/// [`super::bundle::load_results`], which packs this reader's files).
pub fn load(path: &Path) -> Result<Results, ReadError> {
    gpucts_results::load(path)
}

/// Parse `results.json` bytes; `shown` names them in errors.
pub fn parse(shown: &str, bytes: &[u8]) -> Result<Results, ReadError> {
    gpucts_results::parse(shown, bytes)
}

/// `git rev-parse HEAD` of `root` (with `-dirty` when `git status` lists changes); `None`
/// outside a checkout or when git is missing or slow (5 s each).
pub(crate) fn git_state(root: &Path) -> Option<String> {
    let head = git(root, &["rev-parse", "HEAD"])?;
    let status = git(root, &["status", "--porcelain", "--untracked-files=no"])?;
    let head = head.trim().to_string();
    Some(if status.trim().is_empty() {
        head
    } else {
        format!("{head}-dirty")
    })
}

fn git(root: &Path, args: &[&str]) -> Option<String> {
    // Through the one time-limited runner: output is read while git runs (a long `status`
    // does not fill the pipe and stall until the limit).
    let out = crate::backend::toolchain::process::output_within(
        Command::new("git").arg("-C").arg(root).args(args),
        "git",
        Duration::from_secs(5),
    )
    .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8(out.stdout).ok()
}

/// The directory a results path names (for files written beside it).
pub(crate) fn dir_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every runner verdict reads back under the name the writer gave it (its serde tag), and
    /// the reader's failure and pass predicates agree with the runner's.
    #[test]
    fn verdict_names_are_the_runner_verdicts() {
        use crate::outcome::Category;
        let all = [
            Verdict::Pass,
            Verdict::Fail,
            Verdict::Skip,
            Verdict::Waived { waiver: "W".into() },
            Verdict::StaleWaiver { waiver: "W".into() },
            Verdict::RequiredMissing,
            Verdict::Flaky,
        ];
        for v in &all {
            let name = VerdictName::from(v);
            let tag = serde_json::to_value(v).unwrap()["verdict"].clone();
            assert_eq!(tag, name.as_str(), "{v:?}");
            let read: VerdictName = serde_json::from_value(tag).unwrap();
            assert_eq!(read, name);
            assert_eq!(name.is_failure(), v.is_failure(), "{v:?}");
            assert_eq!(name.is_pass(), v.category() == Category::Passed, "{v:?}");
        }
    }

    /// A reader without the harness (the schema crate's default, capabilities as text) reads
    /// every skip the harness writes, naming the capability as `--require` spells it, and a
    /// status it read writes back byte for byte.
    #[test]
    fn schema_readers_need_no_harness_capabilities() {
        use crate::outcome::CaseStatus;
        for cap in Capability::ALL {
            let written = serde_json::to_string(&CaseStatus::skip(*cap, "why")).unwrap();
            let read: gpucts_results::CaseStatus = serde_json::from_str(&written).unwrap();
            let gpucts_results::CaseStatus::Skip { capability, reason } = &read else {
                panic!("{written}")
            };
            assert_eq!(capability, cap.name());
            assert_eq!(reason, "why");
            assert_eq!(serde_json::to_string(&read).unwrap(), written);
        }
        // The device skip of `gpucts prebuild` is recognised by both readers.
        let written = serde_json::to_string(&CaseStatus::compiled_only()).unwrap();
        let read: gpucts_results::CaseStatus = serde_json::from_str(&written).unwrap();
        assert!(read.is_compiled_only());
    }
}
