//! Qualification bundles: `gpucts bundle RESULTS_DIR -o NAME.tar.zst` packs a run's reports,
//! its probe, the suite and waiver files it used (checked against the hashes the run
//! recorded), the gpucts version and git state and the command lines, with a manifest of
//! every file's sha256 and optionally an ed25519 signature of that manifest.
//!
//! Layout (flat tar, zstd-compressed):
//!
//! ```text
//! MANIFEST.sha256         "<sha256>  <path>" per file, sha256sum's format, sorted
//! SIGNATURE.ed25519       optional: "signature <hex>" and "key <hex>" of MANIFEST.sha256
//! bundle.json             gpucts version, git state, bundle command line, inputs
//! probe.json              the machine as the run probed it
//! results/...             results.json, junit.xml, report.html of the run
//! inputs/...              suite and waiver files, by their path in the checkout
//! ```
//!
//! `verify` exits 0 intact, 1 tampered (a hash, a missing or extra file, a bad signature,
//! naming the file), 2 unreadable.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::results::{self, HashedFile};

pub const MANIFEST: &str = "MANIFEST.sha256";
pub const SIGNATURE: &str = "SIGNATURE.ed25519";
/// Limits checked while reading a bundle, before anything is kept.
pub(crate) const MAX_ENTRIES: usize = 10_000;
pub(crate) const MAX_FILE_BYTES: u64 = 256 << 20;
pub(crate) const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Results-directory files bundled (others are left out: scratch, core files).
const RESULT_FILES: &[&str] = &["results.json", "junit.xml", "report.html"];

const SECRET_TAG: &str = "gpucts-ed25519-secret-key";
const PUBLIC_TAG: &str = "gpucts-ed25519-public-key";

/// Whether `path` names a bundle (by its extension).
pub(crate) fn is_bundle_name(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".tar.zst")
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn safe_name(name: &str) -> bool {
    let p = Path::new(name);
    !name.is_empty()
        && p.components().all(|c| matches!(c, Component::Normal(_)))
        && !name.contains('\n')
}

/// Why a bundle, a key or a bundle's inputs could not be read or written (exit 2). `path` is
/// the file concerned; `name` an entry inside a bundle.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("{}: cannot read: {source}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a zstd stream: {source}", path.display())]
    NotZstd {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: not a tar archive: {source}", path.display())]
    NotTar {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: unreadable tar entry: {source}", path.display())]
    Entry {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: more than {MAX_ENTRIES} entries; bundles hold at most {MAX_ENTRIES}", path.display())]
    TooManyEntries { path: PathBuf },
    #[error("{}: unreadable entry name: {source}", path.display())]
    EntryName {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A symlink, hard link, device or other entry that is neither a file nor a directory.
    #[error("{}: entry `{name}` is not a regular file; bundles hold only files", path.display())]
    NotAFile { path: PathBuf, name: String },
    #[error("{}: entry `{name}` is not a plain relative path; bundles hold relative names without `..`", path.display())]
    UnsafeName { path: PathBuf, name: String },
    #[error("{}: entry `{name}` is {size} bytes; at most {MAX_FILE_BYTES} per file", path.display())]
    EntryTooLarge {
        path: PathBuf,
        name: String,
        size: u64,
    },
    #[error("{}: more than {MAX_TOTAL_BYTES} bytes in all; bundles hold at most that", path.display())]
    TooLarge { path: PathBuf },
    #[error("{}: entry `{name}` unreadable: {source}", path.display())]
    EntryUnreadable {
        path: PathBuf,
        name: String,
        source: std::io::Error,
    },
    #[error("{}: entry `{name}` appears twice", path.display())]
    Duplicate { path: PathBuf, name: String },
    #[error("{}: no {name} in the bundle", path.display())]
    NoResults { path: PathBuf, name: &'static str },
    #[error("{}: cannot read key: {source}", path.display())]
    KeyUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:1:1: not a key: {source}; expected `{tag} <64 hex digits>` (gpucts bundle keygen)", path.display())]
    NotAKey {
        path: PathBuf,
        tag: &'static str,
        source: hex::FromHexError,
    },
    #[error("{}:1:1: key of {len} bytes; ed25519 keys are 32 bytes (`{tag} <64 hex digits>`)", path.display())]
    KeyLength {
        path: PathBuf,
        tag: &'static str,
        len: usize,
    },
    #[error("{}: not an ed25519 public key: {source}", path.display())]
    NotAPublicKey {
        path: PathBuf,
        source: ed25519_dalek::SignatureError,
    },
    #[error("no randomness for a key: {0}")]
    NoRandomness(getrandom::Error),
    #[error("{}: exists; keygen does not overwrite keys", path.display())]
    KeyExists { path: PathBuf },
    /// Writing a key, a bundle or reading a results file to pack failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The results directory to pack (boxed: a results set read from a bundle holds this
    /// error in turn).
    #[error(transparent)]
    Results(Box<results::ReadError>),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("{}: the run used it but it cannot be read now: {source}", path.display())]
    InputUnreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: changed since the run (recorded sha256 {recorded}, now {now}); bundle from the checkout that made the run", path.display())]
    InputChanged {
        path: PathBuf,
        recorded: String,
        now: String,
    },
}

/// An entry name as bundles store it: `./` components dropped (a bundle repacked with `tar c
/// .` names its files `./MANIFEST.sha256`); `None` for a name that is not a plain relative
/// path (absolute, `..`) or names nothing but `.`.
fn plain_name(name: &str) -> Option<String> {
    let mut parts = Vec::new();
    for c in Path::new(name).components() {
        match c {
            Component::CurDir => {}
            Component::Normal(p) => parts.push(p.to_str()?),
            _ => return None,
        }
    }
    let plain = parts.join("/");
    safe_name(&plain).then_some(plain)
}

/// A bundle repacked from the directory it was unpacked into (`tar cf x.tar dir/`) holds every
/// file under `dir/`: the one top-level directory holding the manifest is dropped. Names are
/// left as they are when a file lies outside that directory.
fn strip_top_directory(entries: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    if entries.contains_key(MANIFEST) {
        return entries;
    }
    let Some(top) = entries
        .keys()
        .find_map(|n| n.strip_suffix(MANIFEST)?.strip_suffix('/'))
        .filter(|t| !t.contains('/'))
        .map(|t| format!("{t}/"))
    else {
        return entries;
    };
    if !entries.keys().all(|n| n.starts_with(&top)) {
        return entries;
    }
    entries
        .into_iter()
        .map(|(n, b)| (n[top.len()..].to_string(), b))
        .collect()
}

/// Every file of a bundle, by name; an `Err` means unreadable (exit 2). Directory entries are
/// skipped and `./` prefixes dropped, so a bundle unpacked and repacked with `tar` reads as the
/// one gpucts wrote; anything else that is not a plain file (a symlink, a link, a device) or
/// whose name leaves the bundle (`..`, absolute) is refused.
pub(crate) fn read_entries(path: &Path) -> Result<BTreeMap<String, Vec<u8>>, BundleError> {
    let at = || path.to_path_buf();
    let f = std::fs::File::open(path).map_err(|source| BundleError::Open { path: at(), source })?;
    let dec = zstd::stream::read::Decoder::new(f)
        .map_err(|source| BundleError::NotZstd { path: at(), source })?;
    // The whole decompressed stream is bounded, so a small bomb cannot fill memory.
    let mut ar = tar::Archive::new(dec.take(MAX_TOTAL_BYTES + 1));
    let mut out = BTreeMap::new();
    let mut total = 0u64;
    let entries = ar
        .entries()
        .map_err(|source| BundleError::NotTar { path: at(), source })?;
    for (seen, entry) in entries.enumerate() {
        let mut e = entry.map_err(|source| BundleError::Entry { path: at(), source })?;
        if seen >= MAX_ENTRIES {
            return Err(BundleError::TooManyEntries { path: at() });
        }
        let raw = e
            .path()
            .map_err(|source| BundleError::EntryName { path: at(), source })?
            .to_string_lossy()
            .into_owned();
        let kind = e.header().entry_type();
        if kind.is_dir() {
            // What `tar` writes for `dir/` or `.`; a directory carries no bytes to check, but
            // one whose name leaves the bundle is refused like a file's.
            if raw.trim_end_matches('/') != "." && plain_name(&raw).is_none() {
                return Err(BundleError::UnsafeName {
                    path: at(),
                    name: raw,
                });
            }
            continue;
        }
        if !kind.is_file() {
            return Err(BundleError::NotAFile {
                path: at(),
                name: raw,
            });
        }
        let Some(name) = plain_name(&raw) else {
            return Err(BundleError::UnsafeName {
                path: at(),
                name: raw,
            });
        };
        let size = e.size();
        if size > MAX_FILE_BYTES {
            return Err(BundleError::EntryTooLarge {
                path: at(),
                name,
                size,
            });
        }
        total += size;
        if total > MAX_TOTAL_BYTES {
            return Err(BundleError::TooLarge { path: at() });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        if let Err(source) = e.read_to_end(&mut bytes) {
            return Err(BundleError::EntryUnreadable {
                path: at(),
                name,
                source,
            });
        }
        if out.contains_key(&name) {
            return Err(BundleError::Duplicate { path: at(), name });
        }
        out.insert(name, bytes);
    }
    Ok(strip_top_directory(out))
}

/// The `results.json` in a bundle: its shown name and bytes.
pub(crate) fn read_results(path: &Path) -> Result<(String, Vec<u8>), BundleError> {
    let mut entries = read_entries(path)?;
    let name = "results/results.json";
    match entries.remove(name) {
        Some(b) => Ok((format!("{}!{name}", path.display()), b)),
        None => Err(BundleError::NoResults {
            path: path.to_path_buf(),
            name,
        }),
    }
}

/// The `results.json` of `path`: a results directory, the file itself, or a bundle
/// (`.tar.zst`) holding it.
pub(crate) fn load_results(path: &Path) -> Result<results::Results, BundleError> {
    if is_bundle_name(path) && !path.is_dir() {
        let (name, bytes) = read_results(path)?;
        return results::parse(&name, &bytes).map_err(|e| BundleError::Results(Box::new(e)));
    }
    results::load(path).map_err(|e| BundleError::Results(Box::new(e)))
}

#[derive(Debug, Serialize)]
struct BundleInfo {
    bundle_format: u32,
    gpucts_version: &'static str,
    git: Option<String>,
    created: String,
    command_line: Vec<String>,
    results_dir: String,
    run_command_line: Vec<String>,
    inputs: Vec<InputInfo>,
}

#[derive(Debug, Serialize)]
struct InputInfo {
    path: String,
    stored_as: String,
    sha256: String,
}

fn key_bytes(path: &Path, tag: &'static str) -> Result<[u8; 32], BundleError> {
    let text = std::fs::read_to_string(path).map_err(|source| BundleError::KeyUnreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let hexpart = text.trim().strip_prefix(tag).unwrap_or(text.trim()).trim();
    let bytes = hex::decode(hexpart).map_err(|source| BundleError::NotAKey {
        path: path.to_path_buf(),
        tag,
        source,
    })?;
    bytes
        .try_into()
        .map_err(|b: Vec<u8>| BundleError::KeyLength {
            path: path.to_path_buf(),
            tag,
            len: b.len(),
        })
}

/// An I/O failure on `path` while writing a key or a bundle.
fn io_at(path: &Path) -> impl Fn(std::io::Error) -> BundleError + '_ {
    move |source| BundleError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// `gpucts bundle keygen -o NAME`: NAME.key (secret, mode 0600) and NAME.pub.
pub fn keygen(stem: &Path) -> Result<(PathBuf, PathBuf), BundleError> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(BundleError::NoRandomness)?;
    let sk = SigningKey::from_bytes(&secret);
    let key = stem.with_extension("key");
    let public = stem.with_extension("pub");
    for p in [&key, &public] {
        if p.exists() {
            return Err(BundleError::KeyExists { path: p.clone() });
        }
    }
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&key)
            .map_err(io_at(&key))?;
        writeln!(f, "{SECRET_TAG} {}", hex::encode(secret)).map_err(io_at(&key))?;
    }
    std::fs::write(
        &public,
        format!(
            "{PUBLIC_TAG} {}\n",
            hex::encode(sk.verifying_key().to_bytes())
        ),
    )
    .map_err(io_at(&public))?;
    Ok((key, public))
}

/// What `create` packed.
#[derive(Debug)]
pub struct Created {
    pub files: usize,
    pub signed: bool,
}

/// Pack `dir` (a results directory) into `out`.
pub fn create(
    dir: &Path,
    out: &Path,
    sign: Option<&Path>,
    root: &Path,
    command_line: Vec<String>,
) -> Result<Created, BundleError> {
    let r = results::load(dir).map_err(|e| BundleError::Results(Box::new(e)))?;
    let signing = sign
        .map(|k| key_bytes(k, SECRET_TAG).map(|b| SigningKey::from_bytes(&b)))
        .transpose()?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for name in RESULT_FILES {
        let p = dir.join(name);
        if p.is_file() {
            let b = std::fs::read(&p).map_err(io_at(&p))?;
            files.insert(format!("results/{name}"), b);
        }
    }
    if let Some(probe) = &r.probe {
        let text = serde_json::to_vec_pretty(probe)?;
        files.insert("probe.json".into(), text);
    }
    let run = r.run.clone().unwrap_or_default();
    let mut inputs = Vec::new();
    let recorded: Vec<&HashedFile> = run.suites.iter().chain(run.waiver_files.iter()).collect();
    for (i, h) in recorded.iter().enumerate() {
        let src = if Path::new(&h.path).is_absolute() {
            PathBuf::from(&h.path)
        } else {
            root.join(&h.path)
        };
        let bytes = std::fs::read(&src).map_err(|source| BundleError::InputUnreadable {
            path: src.clone(),
            source,
        })?;
        let now = sha256_hex(&bytes);
        if now != h.sha256 {
            return Err(BundleError::InputChanged {
                path: src,
                recorded: h.sha256.clone(),
                now,
            });
        }
        let stored = if safe_name(&h.path) {
            format!("inputs/{}", h.path)
        } else {
            let base = Path::new(&h.path)
                .file_name()
                .map(|b| b.to_string_lossy().into_owned())
                .unwrap_or_else(|| "file".into());
            format!("inputs/external/{i}-{base}")
        };
        inputs.push(InputInfo {
            path: h.path.clone(),
            stored_as: stored.clone(),
            sha256: now,
        });
        files.insert(stored, bytes);
    }
    let info = BundleInfo {
        bundle_format: 1,
        gpucts_version: env!("CARGO_PKG_VERSION"),
        git: results::git_state(root),
        created: time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        command_line,
        results_dir: dir.display().to_string(),
        run_command_line: run.command_line.clone(),
        inputs,
    };
    files.insert("bundle.json".into(), serde_json::to_vec_pretty(&info)?);
    let manifest: String = files
        .iter()
        .map(|(n, b)| format!("{}  {n}\n", sha256_hex(b)))
        .collect();
    let mut all: Vec<(String, Vec<u8>)> = vec![(MANIFEST.into(), manifest.clone().into_bytes())];
    if let Some(sk) = &signing {
        let sig = sk.sign(manifest.as_bytes());
        all.push((
            SIGNATURE.into(),
            format!(
                "signature {}\nkey {}\n",
                hex::encode(sig.to_bytes()),
                hex::encode(sk.verifying_key().to_bytes())
            )
            .into_bytes(),
        ));
    }
    let n = files.len();
    all.extend(files);
    write_tar_zst(out, &all)?;
    Ok(Created {
        files: n,
        signed: signing.is_some(),
    })
}

/// Write `entries` as a zstd-compressed tar (written beside `out` then renamed, so a failed
/// write leaves no half bundle).
pub(crate) fn write_tar_zst(out: &Path, entries: &[(String, Vec<u8>)]) -> Result<(), BundleError> {
    let tmp = out.with_extension("partial");
    let err = io_at(out);
    {
        let f = std::fs::File::create(&tmp).map_err(&err)?;
        let enc = zstd::stream::write::Encoder::new(f, 19).map_err(&err)?;
        let mut tb = tar::Builder::new(enc);
        let mtime = time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
        for (name, bytes) in entries {
            let mut h = tar::Header::new_ustar();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(mtime);
            h.set_entry_type(tar::EntryType::Regular);
            tb.append_data(&mut h, name, bytes.as_slice())
                .map_err(&err)?;
        }
        let enc = tb.into_inner().map_err(&err)?;
        enc.finish().map_err(&err)?;
    }
    std::fs::rename(&tmp, out).map_err(&err)
}

/// The outcome of `verify`.
#[derive(Debug, PartialEq, Eq)]
pub enum Verified {
    /// Every file matches; `signer` is the key that signed it, if signed.
    Intact {
        files: usize,
        signer: Option<String>,
        trusted: bool,
    },
    /// What is wrong, naming the file.
    Tampered(Vec<String>),
}

/// Check a bundle; `Err` when it cannot be read at all (exit 2).
pub fn verify(path: &Path, key: Option<&Path>) -> Result<Verified, BundleError> {
    let trusted_key = key
        .map(|k| {
            let b = key_bytes(k, PUBLIC_TAG)?;
            VerifyingKey::from_bytes(&b).map_err(|source| BundleError::NotAPublicKey {
                path: k.to_path_buf(),
                source,
            })
        })
        .transpose()?;
    let mut entries = read_entries(path)?;
    let mut problems = Vec::new();
    let Some(manifest) = entries.remove(MANIFEST) else {
        return Ok(Verified::Tampered(vec![format!(
            "{MANIFEST}: missing; every bundle has one"
        )]));
    };
    let sig = entries.remove(SIGNATURE);
    let manifest_text = String::from_utf8_lossy(&manifest).into_owned();
    let mut listed = BTreeMap::new();
    for (i, line) in manifest_text.lines().enumerate() {
        match line.split_once("  ") {
            Some((h, name)) if h.len() == 64 && safe_name(name) => {
                listed.insert(name.to_string(), h.to_string());
            }
            _ => problems.push(format!("{MANIFEST}:{}:1: not `<sha256>  <path>`", i + 1)),
        }
    }
    for (name, want) in &listed {
        match entries.get(name) {
            None => problems.push(format!("{name}: listed in {MANIFEST} but missing")),
            Some(b) => {
                let got = sha256_hex(b);
                if &got != want {
                    problems.push(format!("{name}: sha256 {got}, the manifest says {want}"));
                }
            }
        }
    }
    for name in entries.keys() {
        if !listed.contains_key(name) {
            problems.push(format!("{name}: extra file, not in {MANIFEST}"));
        }
    }
    let mut signer = None;
    let mut trusted = false;
    match (&sig, &trusted_key) {
        (None, Some(_)) => problems.push(format!(
            "{SIGNATURE}: missing; --key was given, so the bundle must be signed"
        )),
        (None, None) => {}
        (Some(s), _) => {
            let text = String::from_utf8_lossy(s);
            let field = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
            };
            let sig_bytes = field("signature ")
                .and_then(|h| hex::decode(h).ok())
                .and_then(|b| <[u8; 64]>::try_from(b).ok());
            let embedded = field("key ")
                .and_then(|h| hex::decode(h).ok())
                .and_then(|b| <[u8; 32]>::try_from(b).ok())
                .and_then(|b| VerifyingKey::from_bytes(&b).ok());
            match (sig_bytes, embedded) {
                (Some(sb), Some(ek)) => {
                    let vk = trusted_key.unwrap_or(ek);
                    let sig = Signature::from_bytes(&sb);
                    if vk.verify(&manifest, &sig).is_ok() {
                        signer = Some(hex::encode(vk.to_bytes()));
                        trusted = trusted_key.is_some();
                    } else if trusted_key.is_some() {
                        problems.push(format!(
                            "{SIGNATURE}: does not verify with the key given (--key)"
                        ));
                    } else {
                        problems.push(format!(
                            "{SIGNATURE}: does not verify {MANIFEST} with its own key"
                        ));
                    }
                }
                _ => problems.push(format!(
                    "{SIGNATURE}: not `signature <128 hex>` and `key <64 hex>` lines"
                )),
            }
        }
    }
    if problems.is_empty() {
        Ok(Verified::Intact {
            files: listed.len(),
            signer,
            trusted,
        })
    } else {
        Ok(Verified::Tampered(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_be_plain_relative_paths() {
        assert!(safe_name("results/results.json"));
        assert!(!safe_name("../etc/passwd"));
        assert!(!safe_name("/etc/passwd"));
        // `a/./b` names `a/b` (a `.` component is dropped): plain enough to store.
        assert!(safe_name("a/./b"));
        assert!(!safe_name("a/../b"));
        assert!(!safe_name(""));
    }

    #[test]
    fn tampering_is_found_and_named() {
        let d = tempfile::tempdir().unwrap();
        let manifest = format!("{}  a.txt\n", sha256_hex(b"hello"));
        let good = d.path().join("good.tar.zst");
        write_tar_zst(
            &good,
            &[
                (MANIFEST.into(), manifest.clone().into_bytes()),
                ("a.txt".into(), b"hello".to_vec()),
            ],
        )
        .unwrap();
        assert!(matches!(
            verify(&good, None).unwrap(),
            Verified::Intact { files: 1, .. }
        ));
        let bad = d.path().join("bad.tar.zst");
        write_tar_zst(
            &bad,
            &[
                (MANIFEST.into(), manifest.into_bytes()),
                ("a.txt".into(), b"hellO".to_vec()),
                ("b.txt".into(), b"x".to_vec()),
            ],
        )
        .unwrap();
        let Verified::Tampered(p) = verify(&bad, None).unwrap() else {
            panic!("tampering not found")
        };
        assert!(p.iter().any(|x| x.starts_with("a.txt: sha256")), "{p:?}");
        assert!(p.iter().any(|x| x.starts_with("b.txt: extra")), "{p:?}");
        let junk = d.path().join("junk.tar.zst");
        std::fs::write(&junk, b"not zstd").unwrap();
        assert!(matches!(
            verify(&junk, None),
            Err(BundleError::NotZstd { .. }
                | BundleError::NotTar { .. }
                | BundleError::Entry { .. })
        ));
    }

    /// `sh -c SCRIPT` in `dir` (the real tar and zstd), within the tool time limit.
    fn sh(dir: &Path, script: &str) {
        let o = crate::backend::toolchain::process::output_within(
            std::process::Command::new("sh")
                .args(["-c", script])
                .current_dir(dir),
            "sh",
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        assert!(
            o.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// A signed bundle unpacked into `d/b/` (as `tar x` leaves it).
    fn unpacked_signed(d: &Path, sk: &SigningKey) {
        let files: [(&str, &[u8]); 3] = [
            ("bundle.json", b"{}"),
            ("results/results.json", b"{\"schema_version\": 2}"),
            ("inputs/suites/abi.yaml", b"area: abi\n"),
        ];
        let manifest: String = {
            let mut sorted = files.to_vec();
            sorted.sort();
            sorted
                .iter()
                .map(|(n, b)| format!("{}  {n}\n", sha256_hex(b)))
                .collect()
        };
        let sig = sk.sign(manifest.as_bytes());
        let b = d.join("b");
        for (n, bytes) in files {
            let p = b.join(n);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        std::fs::write(b.join(MANIFEST), manifest).unwrap();
        std::fs::write(
            b.join(SIGNATURE),
            format!(
                "signature {}\nkey {}\n",
                hex::encode(sig.to_bytes()),
                hex::encode(sk.verifying_key().to_bytes())
            ),
        )
        .unwrap();
    }

    /// A bundle a user unpacked and packed again with `tar` (directory entries, `./` names, or
    /// everything under the directory it was unpacked into) verifies as the one gpucts wrote;
    /// a changed, extra or traversing file, a symlink, or a missing signature are still found.
    #[test]
    fn a_bundle_repacked_with_tar_verifies_and_tampering_is_still_found() {
        let have = |t: &str| which::which(t).is_ok();
        crate::require!(have("tar") && have("zstd"), "tar and zstd");
        let d = tempfile::tempdir().unwrap();
        let sk = SigningKey::from_bytes(&[7u8; 32]);
        let public = d.path().join("k.pub");
        std::fs::write(
            &public,
            format!(
                "{PUBLIC_TAG} {}\n",
                hex::encode(sk.verifying_key().to_bytes())
            ),
        )
        .unwrap();
        unpacked_signed(d.path(), &sk);
        // `tar c *` inside the directory (directory entries `inputs/`, `results/`), `tar c .`
        // (`./` and `./`-prefixed names), `tar c b/` from its parent (all under `b/`).
        for (name, script) in [
            (
                "star",
                "cd b && tar cf ../star.tar * && zstd -q ../star.tar -o ../star.tar.zst",
            ),
            (
                "dot",
                "tar -C b -cf dot.tar . && zstd -q dot.tar -o dot.tar.zst",
            ),
            ("dir", "tar cf dir.tar b/ && zstd -q dir.tar -o dir.tar.zst"),
        ] {
            sh(d.path(), script);
            let bundle = d.path().join(format!("{name}.tar.zst"));
            let v = verify(&bundle, Some(&public)).unwrap();
            assert!(
                matches!(
                    v,
                    Verified::Intact {
                        files: 3,
                        trusted: true,
                        ..
                    }
                ),
                "{name}: {v:?}"
            );
        }
        // A changed file, repacked the same way: tampered, naming it.
        std::fs::write(d.path().join("b/inputs/suites/abi.yaml"), "area: xcall\n").unwrap();
        sh(
            d.path(),
            "tar -C b -cf t.tar . && zstd -q -f t.tar -o t.tar.zst",
        );
        let Verified::Tampered(p) = verify(&d.path().join("t.tar.zst"), Some(&public)).unwrap()
        else {
            panic!("a changed file was not found")
        };
        assert!(
            p.iter()
                .any(|x| x.starts_with("inputs/suites/abi.yaml: sha256")),
            "{p:?}"
        );
        // An extra file.
        unpacked_signed(d.path(), &sk);
        std::fs::write(d.path().join("b/results/extra.txt"), "x").unwrap();
        sh(
            d.path(),
            "cd b && tar cf ../x.tar * && zstd -q -f ../x.tar -o ../x.tar.zst",
        );
        let Verified::Tampered(p) = verify(&d.path().join("x.tar.zst"), None).unwrap() else {
            panic!("an extra file was not found")
        };
        assert_eq!(p, ["results/extra.txt: extra file, not in MANIFEST.sha256"]);
        std::fs::remove_file(d.path().join("b/results/extra.txt")).unwrap();
        // A symlink: refused (exit 2), not followed.
        std::os::unix::fs::symlink("/etc/passwd", d.path().join("b/inputs/link")).unwrap();
        sh(
            d.path(),
            "tar -C b -cf l.tar . && zstd -q -f l.tar -o l.tar.zst",
        );
        assert!(matches!(
            verify(&d.path().join("l.tar.zst"), None),
            Err(BundleError::NotAFile { name, .. }) if name == "./inputs/link"
        ));
        std::fs::remove_file(d.path().join("b/inputs/link")).unwrap();
        // A name leaving the bundle (`tar -P` keeps `..`): refused.
        std::fs::write(d.path().join("outside.txt"), "x").unwrap();
        sh(
            d.path(),
            "tar -C b -P -cf p.tar . ../outside.txt && zstd -q -f p.tar -o p.tar.zst",
        );
        assert!(matches!(
            verify(&d.path().join("p.tar.zst"), None),
            Err(BundleError::UnsafeName { name, .. }) if name == "../outside.txt"
        ));
        // Unsigned, repacked: a key given still requires the signature.
        std::fs::remove_file(d.path().join("b").join(SIGNATURE)).unwrap();
        sh(
            d.path(),
            "tar -C b -cf u.tar . && zstd -q -f u.tar -o u.tar.zst",
        );
        let Verified::Tampered(p) = verify(&d.path().join("u.tar.zst"), Some(&public)).unwrap()
        else {
            panic!("a missing signature was not found")
        };
        assert!(
            p.iter()
                .any(|x| x.starts_with("SIGNATURE.ed25519: missing")),
            "{p:?}"
        );
    }

    #[test]
    fn dot_prefixes_and_top_directories_are_dropped_only_when_plain() {
        assert_eq!(plain_name("./a/b.txt").as_deref(), Some("a/b.txt"));
        assert_eq!(plain_name("a/./b.txt").as_deref(), Some("a/b.txt"));
        assert_eq!(plain_name("./").as_deref(), None);
        assert_eq!(plain_name("../a").as_deref(), None);
        assert_eq!(plain_name("/a").as_deref(), None);
        let e = |names: &[&str]| -> Vec<String> {
            strip_top_directory(names.iter().map(|n| (n.to_string(), Vec::new())).collect())
                .into_keys()
                .collect()
        };
        assert_eq!(
            e(&["b/MANIFEST.sha256", "b/x/y"]),
            ["MANIFEST.sha256", "x/y"]
        );
        // A file outside the directory keeps every name as it is (then an extra file).
        assert_eq!(e(&["b/MANIFEST.sha256", "c"]), ["b/MANIFEST.sha256", "c"]);
        assert_eq!(e(&["MANIFEST.sha256", "b/x"]), ["MANIFEST.sha256", "b/x"]);
    }
}
