//! Where a run reads the project's shipped data from: the suites, their litmus files, the
//! waiver list and the project's own PTX corpus (`suites/`, `ptx-corpus/`), and where the
//! public corpora are (`../shared/corpora` beside a checkout).
//!
//! A directory given with `--root` or `GPUCTS_ROOT`, or a checkout found from the working
//! directory, is read in place, so an edited suite counts without a rebuild. Without one, the
//! copy embedded in the binary when it was built is used: it is written once into the user's
//! cache and read from there, because cases hand their files to tools by path (ptxas, the
//! readers' `file:line:column` messages). A copied or installed `gpucts` therefore runs every
//! shipped suite from any directory, and never reads the tree it was built in.

use std::path::{Path, PathBuf};

use include_dir::{include_dir, Dir};
use sha2::{Digest, Sha256};

/// The shipped data, as it was when this binary was built. `build.rs` makes cargo rebuild when
/// a file under these folders changes.
static EMBEDDED_SUITES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../suites");
static EMBEDDED_PTX_CORPUS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../ptx-corpus");

/// The folders of a data root, each embedded as a whole.
const EMBEDDED: [(&str, &Dir<'static>); 2] = [
    ("suites", &EMBEDDED_SUITES),
    ("ptx-corpus", &EMBEDDED_PTX_CORPUS),
];

/// Where the data root came from, in the order they are tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// `--root DIR`.
    Flag,
    /// `GPUCTS_ROOT`.
    Env,
    /// A directory with `suites/` and `harness/` at or above the working directory.
    Checkout,
    /// The copy embedded in the binary, written to the cache.
    Embedded,
}

impl Source {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Source::Flag => "--root",
            Source::Env => "GPUCTS_ROOT",
            Source::Checkout => "checkout found from the working directory",
            Source::Embedded => "embedded in the binary",
        }
    }
}

/// Where the public corpora (Dat3M's PTX litmus tests, ...) came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CorporaSource {
    /// `--corpora DIR`.
    Flag,
    /// `../shared/corpora` beside the data root (a checkout, or one level further up from a
    /// worktree).
    BesideRoot,
}

/// The data a run reads, resolved once at the start of a command and passed down.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DataRoot {
    /// The directory holding `suites/` and `ptx-corpus/`.
    pub path: PathBuf,
    pub source: Source,
    /// The public corpora folder, when there is one.
    pub corpora: Option<PathBuf>,
    pub corpora_source: Option<CorporaSource>,
}

/// Why no data root could be used: a named directory lacks the suites, or the embedded copy
/// cannot be written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DataError {
    #[error("{from} {}: no suites/ folder there; give the root of a gpucts checkout (or leave it out to use the suites embedded in the binary)", path.display())]
    NotARoot { from: &'static str, path: PathBuf },
    #[error("--corpora {}: not a directory", .0.display())]
    NotCorpora(PathBuf),
    #[error("cannot write the embedded suites to {}: {source}; set GPUCTS_CACHE to a writable directory or run from a checkout", path.display())]
    Extract {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl DataRoot {
    /// The data root of this command: `--root`, `GPUCTS_ROOT`, a checkout at or above the
    /// working directory, else the embedded copy; and the corpora: `--corpora`, else
    /// `../shared/corpora` beside a root on disk.
    pub(crate) fn locate(
        root_flag: Option<&Path>,
        corpora_flag: Option<&Path>,
        config: &crate::config::RunConfig,
    ) -> Result<Self, DataError> {
        let env_root = config.root.clone();
        let cwd = std::env::current_dir().ok();
        let (path, source) = if let Some(p) = root_flag {
            (checked_root("--root", p)?, Source::Flag)
        } else if let Some(p) = env_root.filter(|p| !p.as_os_str().is_empty()) {
            (checked_root("GPUCTS_ROOT", &p)?, Source::Env)
        } else if let Some(dir) = cwd.as_deref().and_then(checkout_above) {
            (dir, Source::Checkout)
        } else {
            (
                extract_embedded(config.cache_root.as_deref())?,
                Source::Embedded,
            )
        };
        let (corpora, corpora_source) = match corpora_flag {
            // An empty path: none (`--no-corpora`, what a parent without corpora tells its
            // isolated children).
            Some(p) if p.as_os_str().is_empty() => (None, None),
            Some(p) if p.is_dir() => (Some(p.to_path_buf()), Some(CorporaSource::Flag)),
            Some(p) => return Err(DataError::NotCorpora(p.to_path_buf())),
            None if source != Source::Embedded => match corpora_beside(&path) {
                Some(p) => (Some(p), Some(CorporaSource::BesideRoot)),
                None => (None, None),
            },
            None => (None, None),
        };
        Ok(DataRoot {
            path,
            source,
            corpora,
            corpora_source,
        })
    }

    /// A root on disk with no corpora: for tests and tools that are handed the directory.
    pub fn at(path: &Path) -> DataRoot {
        let corpora = corpora_beside(path);
        DataRoot {
            path: path.to_path_buf(),
            source: Source::Flag,
            corpora_source: corpora.as_ref().map(|_| CorporaSource::BesideRoot),
            corpora,
        }
    }

    /// Where reports go by default: under the checkout or the named root, but for the embedded
    /// copy under the working directory (the cache is no place a user looks).
    pub(crate) fn reports_base(&self) -> PathBuf {
        match self.source {
            Source::Embedded => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            _ => self.path.clone(),
        }
    }

    /// One line for `gpucts probe`: which suites a run uses.
    pub(crate) fn describe(&self) -> String {
        let corpora = match (&self.corpora, self.corpora_source) {
            (Some(p), Some(CorporaSource::Flag)) => format!("{} (--corpora)", p.display()),
            (Some(p), _) => format!("{} (beside the root)", p.display()),
            (None, _) => "none (public-corpus cases skip; give --corpora DIR)".into(),
        };
        format!(
            "suites      {} ({}{})\ncorpora     {corpora}\n",
            self.path.display(),
            self.source.describe(),
            if self.source == Source::Embedded {
                format!(", gpucts {}", env!("CARGO_PKG_VERSION"))
            } else {
                String::new()
            }
        )
    }
}

fn checked_root(from: &'static str, p: &Path) -> Result<PathBuf, DataError> {
    if p.join("suites").is_dir() {
        Ok(p.to_path_buf())
    } else {
        Err(DataError::NotARoot {
            from,
            path: p.to_path_buf(),
        })
    }
}

/// The nearest directory at or above `cwd` that is a gpucts checkout (a copy of the repository
/// at any path counts).
pub(crate) fn checkout_above(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|d| d.join("suites").is_dir() && d.join("harness").is_dir())
        .map(Path::to_path_buf)
}

/// `../shared/corpora` beside a checkout, or one level further up (a worktree of it).
fn corpora_beside(root: &Path) -> Option<PathBuf> {
    ["../shared/corpora", "../../shared/corpora"]
        .iter()
        .map(|r| root.join(r))
        .find(|p| p.is_dir())
}

/// The embedded contents of one file, by its path under the data root (`suites/...`).
pub(crate) fn embedded_file(path: &str) -> Option<&'static [u8]> {
    let (top, rest) = path.split_once('/')?;
    let (_, dir) = EMBEDDED.iter().find(|(name, _)| *name == top)?;
    dir.get_file(rest).map(|f| f.contents())
}

/// Every embedded file as (path relative to the data root, contents), in path order.
pub(crate) fn embedded_files() -> Vec<(PathBuf, &'static [u8])> {
    fn walk(dir: &'static Dir<'static>, prefix: &Path, out: &mut Vec<(PathBuf, &'static [u8])>) {
        for f in dir.files() {
            out.push((prefix.join(f.path()), f.contents()));
        }
        for d in dir.dirs() {
            walk(d, prefix, out);
        }
    }
    let mut out = Vec::new();
    for (name, dir) in EMBEDDED {
        walk(dir, Path::new(name), &mut out);
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A digest of the embedded tree, so two builds with different suites never share a cache
/// folder.
fn embedded_digest(files: &[(PathBuf, &[u8])]) -> String {
    let mut h = Sha256::new();
    for (p, bytes) in files {
        let name = p.to_string_lossy();
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    }
    hex::encode(&h.finalize()[..8])
}

/// The folder the embedded copy goes to: `$GPUCTS_CACHE/data/…` (else the XDG or home cache,
/// else the temporary directory), named by version and digest.
fn embedded_dir(cache_root: Option<&Path>, digest: &str) -> PathBuf {
    // Without a cache directory, a per-user folder of the temporary directory (a shared
    // `/tmp/gpucts` would let another user plant a copy in advance).
    let base = cache_root.map(Path::to_path_buf).unwrap_or_else(|| {
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        std::env::temp_dir().join(format!("gpucts-{uid}"))
    });
    base.join("data")
        .join(format!("{}-{digest}", env!("CARGO_PKG_VERSION")))
}

/// Marks a complete copy; a folder without it is one a killed run left half-written.
const COMPLETE: &str = ".complete";

/// Write the embedded tree to its cache folder unless a complete copy is there. The copy is
/// written to a private folder and renamed into place, so concurrent runs (a fleet on one
/// file system, isolated children) never see a partial tree.
fn extract_embedded(cache_root: Option<&Path>) -> Result<PathBuf, DataError> {
    let files = embedded_files();
    let dir = embedded_dir(cache_root, &embedded_digest(&files));
    if dir.join(COMPLETE).is_file() {
        return Ok(dir);
    }
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DataError::Extract { path, source }
    };
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(err(parent))?;
    let tmp = tempfile::Builder::new()
        .prefix(".extract-")
        .tempdir_in(parent)
        .map_err(err(parent))?;
    for (rel, bytes) in &files {
        let path = tmp.path().join(rel);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(err(d))?;
        }
        std::fs::write(&path, bytes).map_err(err(&path))?;
        // Read-only: an edit made in the cache (where error messages point) must not pass
        // for the embedded suites. (Removing the folder needs only the folders' write bit.)
        let mut perm = std::fs::metadata(&path).map_err(err(&path))?.permissions();
        perm.set_readonly(true);
        std::fs::set_permissions(&path, perm).map_err(err(&path))?;
    }
    std::fs::write(tmp.path().join(COMPLETE), b"").map_err(err(tmp.path()))?;
    let staged = tmp.keep();
    match std::fs::rename(&staged, &dir) {
        Ok(()) => Ok(dir),
        // Another run finished first (or a stale half copy is in the way): use a complete one,
        // else replace the stale one.
        Err(_) if dir.join(COMPLETE).is_file() => {
            let _ = std::fs::remove_dir_all(&staged);
            Ok(dir)
        }
        Err(_) => {
            // A stale half copy is in the way: move it aside under a name of its own (never
            // delete a folder another run may just have renamed into place), then retry.
            let aside = parent.join(format!(
                ".stale-{}-{}",
                std::process::id(),
                staged
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default()
            ));
            let _ = std::fs::rename(&dir, &aside);
            let _ = std::fs::remove_dir_all(&aside);
            match std::fs::rename(&staged, &dir) {
                Ok(()) => Ok(dir),
                Err(_) if dir.join(COMPLETE).is_file() => {
                    let _ = std::fs::remove_dir_all(&staged);
                    Ok(dir)
                }
                Err(e) => Err(err(&dir)(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded tree is the source tree's `suites/` and `ptx-corpus/`, file for file: what a
    /// copied binary runs is what the checkout runs.
    #[test]
    fn embedded_tree_is_the_source_tree() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let embedded = embedded_files();
        let mut on_disk = Vec::new();
        for top in ["suites", "ptx-corpus"] {
            let mut stack = vec![src.join(top)];
            while let Some(d) = stack.pop() {
                for e in std::fs::read_dir(&d).unwrap() {
                    let p = e.unwrap().path();
                    if p.is_dir() {
                        stack.push(p);
                    } else {
                        on_disk.push(p.strip_prefix(&src).unwrap().to_path_buf());
                    }
                }
            }
        }
        on_disk.sort();
        let names: Vec<PathBuf> = embedded.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(names, on_disk);
        for (rel, bytes) in &embedded {
            assert_eq!(
                std::fs::read(src.join(rel)).unwrap(),
                *bytes,
                "{}",
                rel.display()
            );
        }
    }

    #[test]
    fn a_named_root_without_suites_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let e = DataRoot::locate(Some(d.path()), None, &Default::default()).unwrap_err();
        assert!(
            matches!(e, DataError::NotARoot { from: "--root", .. }),
            "{e}"
        );
        assert!(e.to_string().contains("no suites/ folder"), "{e}");
    }

    #[test]
    fn checkout_is_found_from_a_subdirectory() {
        let d = tempfile::tempdir().unwrap();
        for sub in ["suites", "harness/src"] {
            std::fs::create_dir_all(d.path().join(sub)).unwrap();
        }
        assert_eq!(
            checkout_above(&d.path().join("harness/src")).as_deref(),
            Some(d.path())
        );
        let other = tempfile::tempdir().unwrap();
        assert_eq!(checkout_above(other.path()), None);
    }
}
