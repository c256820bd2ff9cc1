//! Every fuzz target, for a short bounded time in `cargo test` (issue 10 Deliver 4: "CI runs
//! each target for a short bounded time"). The long libFuzzer runs stay in `bash ci/fuzz`
//! (its instrumented build alone is past the CI budget); this test runs the same functions
//! (`gpucts::fuzzing`) without instrumentation:
//!
//! 1. every seed (the repository files `fuzz/seed.sh` seeds from, and `fuzz/corpus/<target>/`
//!    and `fuzz/artifacts/<target>/` when a libFuzzer run left them) and every regression
//!    input (`harness/tests/data/fuzz/<target>-*`) is replayed;
//! 2. then seeded mutations of the seeds (bit flips, byte sets and inserts, deletions,
//!    repeated chunks, splices of two seeds, YAML/PTX tokens) run until the time is up.
//!
//! Any panic fails, as does any single input taking over the per-input limit; an input
//! running ten times the limit aborts the process (a hang), naming the file it was saved to.
//! Environment: `GPUCTS_FUZZ_SMOKE_SECS` (mutation seconds per target, default 10),
//! `GPUCTS_FUZZ_SMOKE_MAX_MS` (per-input limit, default 1000), `GPUCTS_FUZZ_SMOKE_SEED`
//! (default 10). Failing inputs are saved under `target/fuzz-smoke/`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An input and where it came from.
type Input = (String, Vec<u8>);

/// The input now running and since when (for the watchdog).
type Running = Option<(Instant, Vec<u8>)>;

/// Largest input kept or made (libFuzzer runs use `-max_len=65536` too).
const MAX_LEN: usize = 65_536;

fn files_under(dir: &Path, ext: Option<&str>, recurse: bool, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if recurse {
                files_under(&p, ext, recurse, out);
            }
        } else if ext.is_none_or(|x| p.extension().is_some_and(|e| e == x)) {
            out.push(p);
        }
    }
}

/// The seeds of one target, as `fuzz/seed.sh` picks them, plus libFuzzer's corpus and
/// artifacts when present; and the regression inputs.
fn seeds(target: &str) -> (Vec<Input>, Vec<Input>) {
    let r = root();
    let mut files = Vec::new();
    match target {
        "suite_yaml" => files_under(&r.join("suites"), Some("yaml"), false, &mut files),
        "waivers" => files_under(&r.join("suites/waivers"), Some("yaml"), false, &mut files),
        "abi_types" => files_under(&r.join("suites/abi"), Some("yaml"), false, &mut files),
        "litmus_yaml" => files_under(&r.join("suites/litmus"), Some("yaml"), false, &mut files),
        "dat3m" => files_under(&r.join("suites/litmus"), Some("litmus"), false, &mut files),
        "litmus_count" => {
            files_under(&r.join("suites/litmus"), Some("litmus"), false, &mut files);
            files_under(&r.join("suites/litmus"), Some("yaml"), false, &mut files);
        }
        "ptx_module" | "dwarf_check" | "ptx_instr" | "ptx_exec" => {
            files_under(&r.join("ptx-corpus"), Some("ptx"), true, &mut files)
        }
        // Stores are generated, none is in the repository: a small one written by hand.
        "prebuilt_manifest" => files.push(r.join("harness/tests/fixtures/prebuilt-manifest.json")),
        "clause_catalogue" => files.push(r.join("suites/clauses/catalogue.yaml")),
        "dwarf_frame" => files.push(r.join("harness/tests/fixtures/debug-frame-64.bin")),
        "producer_file" => files.push(r.join("harness/tests/fixtures/producers.yaml")),
        other => panic!("no seeds for target {other}"),
    }
    files_under(&r.join("fuzz/corpus").join(target), None, false, &mut files);
    files_under(
        &r.join("fuzz/artifacts").join(target),
        None,
        false,
        &mut files,
    );
    let mut seeds: Vec<Input> = files
        .iter()
        .filter_map(|p| {
            let mut b = std::fs::read(p).ok()?;
            if target == "clause_catalogue" && b.len() > MAX_LEN {
                // The catalogue outgrew one input: its first entries, cut at a line end, are
                // still a catalogue to read (and to mutate).
                let cut = b[..MAX_LEN]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |i| i + 1);
                b.truncate(cut);
            }
            (!b.is_empty() && b.len() <= MAX_LEN).then(|| (p.display().to_string(), b))
        })
        .collect();
    if target == "ptx_instr" {
        // One statement per input, as seed.sh cuts them: every distinct instruction line.
        let mut lines: Vec<String> = seeds
            .iter()
            .flat_map(|(_, b)| {
                String::from_utf8_lossy(b)
                    .lines()
                    .map(|l| l.trim().to_string())
                    .filter(|l| {
                        l.starts_with(|c: char| c.is_ascii_lowercase())
                            && l.contains(char::is_whitespace)
                            && l.contains(';')
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        lines.sort();
        lines.dedup();
        lines.truncate(2000);
        seeds.extend(
            lines
                .into_iter()
                .map(|l| ("ptx-corpus line".to_string(), l.into_bytes())),
        );
    }
    let mut regressions = Vec::new();
    let mut data = Vec::new();
    files_under(
        &root().join("harness/tests/data/fuzz"),
        None,
        false,
        &mut data,
    );
    for p in data {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(&format!("{target}-")) {
            regressions.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    (seeds, regressions)
}

/// Bytes and words that matter to the readers (YAML indicators, PTX directives, litmus
/// operators, a lone UTF-8 lead byte).
const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b": ",
    b"\n- ",
    b"\n  ",
    b"*a",
    b"&a ",
    b"!!str ",
    b"'",
    b"\"",
    b"#",
    b"|",
    b">",
    b"~",
    b"null",
    b".inf",
    b"-1",
    b"0x",
    b"1e999",
    b"9223372036854775808",
    b"{range: [0, 100000]}",
    b"matrix:",
    b"table:",
    b"exclude:",
    b"check:",
    b"{x}",
    b".reg",
    b".param",
    b".func",
    b".entry",
    b".version 8.0",
    b".address_size 64",
    b"ld.",
    b".release",
    b".acquire",
    b"/*",
    b"*/",
    b"//",
    b";",
    b"(",
    b")",
    b"/\\",
    b"\\/",
    b"~(",
    b"exists",
    b"P0:r0",
    b"fence.sc",
    b"\xc3",
    b"\xff",
    b"\r",
    b"\0",
];

fn mutate(rng: &mut impl Rng, seeds: &[Input]) -> Vec<u8> {
    let mut d = seeds[rng.random_range(0..seeds.len())].1.clone();
    for _ in 0..rng.random_range(1..5) {
        let len = d.len();
        let at = if len == 0 {
            0
        } else {
            rng.random_range(0..=len)
        };
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                d[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                d[i] = rng.random();
            }
            2 => d.insert(at, rng.random()),
            3 if len > 0 => {
                let n = rng.random_range(1..=len.min(64));
                let i = rng.random_range(0..=len - n);
                d.drain(i..i + n);
            }
            4 if len > 0 => {
                // A chunk repeated: deep nesting, long lists, many declarations.
                let n = rng.random_range(1..=len.min(32));
                let i = rng.random_range(0..=len - n);
                let chunk = d[i..i + n].to_vec();
                let times = rng.random_range(1..200);
                let at = rng.random_range(0..=len);
                let rep: Vec<u8> = chunk.iter().copied().cycle().take(n * times).collect();
                d.splice(at..at, rep);
            }
            5 => {
                let other = &seeds[rng.random_range(0..seeds.len())].1;
                let cut = rng.random_range(0..=other.len());
                d.truncate(at);
                d.extend_from_slice(&other[cut..]);
            }
            _ => {
                let t = TOKENS[rng.random_range(0..TOKENS.len())];
                d.splice(at..at, t.iter().copied());
            }
        }
        d.truncate(MAX_LEN);
    }
    d
}

fn save(target: &str, kind: &str, data: &[u8]) -> PathBuf {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    data.hash(&mut h);
    let dir = root().join("target/fuzz-smoke");
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!("{target}-{kind}-{:016x}", h.finish()));
    let _ = std::fs::write(&p, data);
    p
}

fn smoke(target: &str) {
    let f = gpucts::fuzzing::TARGETS
        .iter()
        .find(|(n, _)| *n == target)
        .map(|(_, f)| *f)
        .expect("a target of gpucts::fuzzing");
    let secs = env_u64("GPUCTS_FUZZ_SMOKE_SECS", 10);
    let limit = Duration::from_millis(env_u64("GPUCTS_FUZZ_SMOKE_MAX_MS", 1000));
    let seed = env_u64("GPUCTS_FUZZ_SMOKE_SEED", 10);
    let (seeds, regressions) = seeds(target);
    assert!(
        !seeds.is_empty(),
        "{target}: no seeds found under {}",
        root().display()
    );

    // A watchdog: an input still running at ten times the limit is a hang; save it and stop.
    let current: Arc<Mutex<Running>> = Arc::new(Mutex::new(None));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let (current, done, target) = (Arc::clone(&current), Arc::clone(&done), target.to_string());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let guard = current.lock().unwrap_or_else(|e| e.into_inner());
                if let Some((t0, data)) = guard.as_ref() {
                    if t0.elapsed() > limit * 10 {
                        let p = save(&target, "hang", data);
                        eprintln!(
                            "fuzz-smoke: {target}: an input ran past {:?} (hang), saved to {}",
                            limit * 10,
                            p.display()
                        );
                        std::process::abort();
                    }
                }
            }
        })
    };

    let mut failures: Vec<String> = Vec::new();
    let mut slowest = Duration::ZERO;
    let mut run = |data: &[u8], what: &str, failures: &mut Vec<String>| {
        *current.lock().unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), data.to_vec()));
        let t0 = Instant::now();
        let r = std::panic::catch_unwind(|| f(data));
        let took = t0.elapsed();
        *current.lock().unwrap_or_else(|e| e.into_inner()) = None;
        slowest = slowest.max(took);
        if r.is_err() {
            let p = save(target, "crash", data);
            failures.push(format!("{what}: panicked (input saved to {})", p.display()));
        } else if took > limit {
            let p = save(target, "slow", data);
            failures.push(format!(
                "{what}: took {took:?}, over {limit:?} (input saved to {})",
                p.display()
            ));
        }
    };

    let t_replay = Instant::now();
    for (name, data) in seeds.iter().chain(&regressions) {
        run(data, name, &mut failures);
    }
    let replay = t_replay.elapsed();

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
        seed ^ target
            .bytes()
            .fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b))),
    );
    let t0 = Instant::now();
    let mut n = 0u64;
    while t0.elapsed() < Duration::from_secs(secs) && failures.len() < 5 {
        let data = mutate(&mut rng, &seeds);
        run(&data, &format!("mutated input #{n}"), &mut failures);
        n += 1;
    }
    let spent = t0.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = watchdog.join();
    println!(
        "fuzz-smoke: {target}: {} seeds + {} regression inputs replayed in {:.1}s; {n} mutated inputs in {spent:.1}s ({:.0} inputs/s); slowest input {} ms; {} failures",
        seeds.len(),
        regressions.len(),
        replay.as_secs_f64(),
        n as f64 / spent.max(1e-9),
        slowest.as_millis(),
        failures.len()
    );
    assert!(failures.is_empty(), "{target}:\n{}", failures.join("\n"));
}

#[test]
fn suite_yaml() {
    smoke("suite_yaml");
}

#[test]
fn waivers() {
    smoke("waivers");
}

#[test]
fn abi_types() {
    smoke("abi_types");
}

#[test]
fn ptx_module() {
    smoke("ptx_module");
}

#[test]
fn ptx_instr() {
    smoke("ptx_instr");
}

#[test]
fn litmus_yaml() {
    smoke("litmus_yaml");
}

#[test]
fn dat3m() {
    smoke("dat3m");
}

#[test]
fn dwarf_check() {
    smoke("dwarf_check");
}

#[test]
fn dwarf_frame() {
    smoke("dwarf_frame");
}

#[test]
fn prebuilt_manifest() {
    smoke("prebuilt_manifest");
}

#[test]
fn clause_catalogue() {
    smoke("clause_catalogue");
}

#[test]
fn ptx_exec() {
    smoke("ptx_exec");
}

#[test]
fn litmus_count() {
    smoke("litmus_count");
}

#[test]
fn producer_file() {
    smoke("producer_file");
}

#[test]
fn every_library_target_is_smoked_and_has_a_libfuzzer_wrapper() {
    // The fuzz crate's targets (fuzz/fuzz_targets/*.rs) are the independent list: each must be
    // a target of the library and have a test above.
    let this = include_str!("fuzz_smoke.rs");
    let mut wrappers = Vec::new();
    files_under(
        &root().join("fuzz/fuzz_targets"),
        Some("rs"),
        false,
        &mut wrappers,
    );
    assert_eq!(wrappers.len(), gpucts::fuzzing::TARGETS.len());
    for p in wrappers {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(
            gpucts::fuzzing::TARGETS.iter().any(|(n, _)| *n == name),
            "{name}"
        );
        assert!(
            this.contains(&format!("fn {name}() {{\n    smoke(\"{name}\");")),
            "{name}"
        );
        let body = std::fs::read_to_string(&p).unwrap();
        assert!(
            body.contains(&format!("gpucts::fuzzing::{name}(data)")),
            "{name}"
        );
    }
}
