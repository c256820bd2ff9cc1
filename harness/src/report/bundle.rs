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
pub const MAX_ENTRIES: usize = 10_000;
pub const MAX_FILE_BYTES: u64 = 256 << 20;
pub const MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Results-directory files bundled (others are left out: scratch, core files).
const RESULT_FILES: &[&str] = &["results.json", "junit.xml", "report.html"];

const SECRET_TAG: &str = "gpucts-ed25519-secret-key";
const PUBLIC_TAG: &str = "gpucts-ed25519-public-key";

/// Whether `path` names a bundle (by its extension).
pub fn is_bundle_name(path: &Path) -> bool {
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

/// Every file of a bundle, by name; an `Err` means unreadable (exit 2).
pub fn read_entries(path: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let shown = path.display();
    let f = std::fs::File::open(path).map_err(|e| format!("{shown}: cannot read: {e}"))?;
    let dec = zstd::stream::read::Decoder::new(f)
        .map_err(|e| format!("{shown}: not a zstd stream: {e}"))?;
    // The whole decompressed stream is bounded, so a small bomb cannot fill memory.
    let mut ar = tar::Archive::new(dec.take(MAX_TOTAL_BYTES + 1));
    let mut out = BTreeMap::new();
    let mut total = 0u64;
    let entries = ar
        .entries()
        .map_err(|e| format!("{shown}: not a tar archive: {e}"))?;
    for entry in entries {
        let mut e = entry.map_err(|e| format!("{shown}: unreadable tar entry: {e}"))?;
        if out.len() >= MAX_ENTRIES {
            return Err(format!(
                "{shown}: more than {MAX_ENTRIES} entries; bundles hold at most {MAX_ENTRIES}"
            ));
        }
        let name = e
            .path()
            .map_err(|e| format!("{shown}: unreadable entry name: {e}"))?
            .to_string_lossy()
            .into_owned();
        if !e.header().entry_type().is_file() {
            return Err(format!(
                "{shown}: entry `{name}` is not a regular file; bundles hold only files"
            ));
        }
        if !safe_name(&name) {
            return Err(format!(
                "{shown}: entry `{name}` is not a plain relative path; bundles hold relative names without `..`"
            ));
        }
        let size = e.size();
        if size > MAX_FILE_BYTES {
            return Err(format!(
                "{shown}: entry `{name}` is {size} bytes; at most {MAX_FILE_BYTES} per file"
            ));
        }
        total += size;
        if total > MAX_TOTAL_BYTES {
            return Err(format!(
                "{shown}: more than {MAX_TOTAL_BYTES} bytes in all; bundles hold at most that"
            ));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        e.read_to_end(&mut bytes)
            .map_err(|e| format!("{shown}: entry `{name}` unreadable: {e}"))?;
        if out.insert(name.clone(), bytes).is_some() {
            return Err(format!("{shown}: entry `{name}` appears twice"));
        }
    }
    Ok(out)
}

/// The `results.json` in a bundle: its shown name and bytes.
pub fn read_results(path: &Path) -> Result<(String, Vec<u8>), String> {
    let mut entries = read_entries(path)?;
    let name = "results/results.json";
    match entries.remove(name) {
        Some(b) => Ok((format!("{}!{name}", path.display()), b)),
        None => Err(format!("{}: no {name} in the bundle", path.display())),
    }
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

fn key_bytes(path: &Path, tag: &str) -> Result<[u8; 32], String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read key: {e}", path.display()))?;
    let hexpart = text.trim().strip_prefix(tag).unwrap_or(text.trim()).trim();
    let bytes = hex::decode(hexpart).map_err(|e| {
        format!(
            "{}:1:1: not a key: {e}; expected `{tag} <64 hex digits>` (gpucts bundle keygen)",
            path.display()
        )
    })?;
    bytes.try_into().map_err(|b: Vec<u8>| {
        format!(
            "{}:1:1: key of {} bytes; ed25519 keys are 32 bytes (`{tag} <64 hex digits>`)",
            path.display(),
            b.len()
        )
    })
}

/// `gpucts bundle keygen -o NAME`: NAME.key (secret, mode 0600) and NAME.pub.
pub fn keygen(stem: &Path) -> Result<(PathBuf, PathBuf), String> {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|e| format!("no randomness for a key: {e}"))?;
    let sk = SigningKey::from_bytes(&secret);
    let key = stem.with_extension("key");
    let public = stem.with_extension("pub");
    for p in [&key, &public] {
        if p.exists() {
            return Err(format!(
                "{}: exists; keygen does not overwrite keys",
                p.display()
            ));
        }
    }
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&key)
            .map_err(|e| format!("{}: {e}", key.display()))?;
        writeln!(f, "{SECRET_TAG} {}", hex::encode(secret))
            .map_err(|e| format!("{}: {e}", key.display()))?;
    }
    std::fs::write(
        &public,
        format!(
            "{PUBLIC_TAG} {}\n",
            hex::encode(sk.verifying_key().to_bytes())
        ),
    )
    .map_err(|e| format!("{}: {e}", public.display()))?;
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
) -> Result<Created, String> {
    let r = results::load(dir).map_err(|e| e.to_string())?;
    let signing = sign
        .map(|k| key_bytes(k, SECRET_TAG).map(|b| SigningKey::from_bytes(&b)))
        .transpose()?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for name in RESULT_FILES {
        let p = dir.join(name);
        if p.is_file() {
            let b = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            files.insert(format!("results/{name}"), b);
        }
    }
    if let Some(probe) = &r.probe {
        let text = serde_json::to_vec_pretty(probe).map_err(|e| e.to_string())?;
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
        let bytes = std::fs::read(&src).map_err(|e| {
            format!(
                "{}: the run used it but it cannot be read now: {e}",
                src.display()
            )
        })?;
        let now = sha256_hex(&bytes);
        if now != h.sha256 {
            return Err(format!(
                "{}: changed since the run (recorded sha256 {}, now {now}); bundle from the checkout that made the run",
                src.display(),
                h.sha256
            ));
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
    files.insert(
        "bundle.json".into(),
        serde_json::to_vec_pretty(&info).map_err(|e| e.to_string())?,
    );
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
pub fn write_tar_zst(out: &Path, entries: &[(String, Vec<u8>)]) -> Result<(), String> {
    let tmp = out.with_extension("partial");
    let err = |e: std::io::Error| format!("{}: {e}", out.display());
    {
        let f = std::fs::File::create(&tmp).map_err(err)?;
        let enc = zstd::stream::write::Encoder::new(f, 19).map_err(err)?;
        let mut tb = tar::Builder::new(enc);
        let mtime = time::OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
        for (name, bytes) in entries {
            let mut h = tar::Header::new_ustar();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.set_mtime(mtime);
            h.set_entry_type(tar::EntryType::Regular);
            tb.append_data(&mut h, name, bytes.as_slice())
                .map_err(err)?;
        }
        let enc = tb.into_inner().map_err(err)?;
        enc.finish().map_err(err)?;
    }
    std::fs::rename(&tmp, out).map_err(err)
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
pub fn verify(path: &Path, key: Option<&Path>) -> Result<Verified, String> {
    let trusted_key = key
        .map(|k| key_bytes(k, PUBLIC_TAG))
        .transpose()?
        .map(|b| {
            VerifyingKey::from_bytes(&b).map_err(|e| {
                format!(
                    "{}: not an ed25519 public key: {e}",
                    key.map(|k| k.display().to_string()).unwrap_or_default()
                )
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
        assert!(!safe_name("a/./b") || Path::new("a/./b").components().count() == 2);
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
        assert!(verify(&junk, None).is_err());
    }
}
