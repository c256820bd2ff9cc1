//! A run that survives being stopped: SIGINT halfway leaves a journal, a valid results.json
//! and JUnit marked incomplete naming the cases not run, exit 130; `gpucts --resume DIR`
//! finishes it to the same verdicts as a run that was never stopped. Expected verdicts come
//! from the uninterrupted run of the same fixture, not from the resumed one.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{fixture, gpucts, text, tmp};
use serde_json::Value;

fn results(dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap()
}

fn verdicts(v: &Value) -> BTreeMap<String, String> {
    v["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn args(junit: &Path) -> Vec<String> {
    [
        "--suite",
        fixture("slow.yaml").to_str().unwrap(),
        "--toolchain",
        "system",
        "--jobs",
        "1",
        "--junit",
        junit.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn a_stopped_run_is_marked_incomplete_and_resume_finishes_it() {
    // The reference: the same run, never stopped.
    let whole = tmp("resume-whole");
    let a: Vec<String> = args(&whole.path().join("junit.xml"));
    let o = gpucts(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(101), "{:?}", text(&o));
    let want = verdicts(&results(whole.path()));
    assert_eq!(want.len(), 10);

    // Stopped once two cases are in the journal.
    let dir = tmp("resume-stopped");
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpucts"))
        .args(args(&dir.path().join("junit.xml")))
        .env(
            "GPUCTS_ROOT",
            Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap(),
        )
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = dir.path().join("results.jsonl");
    let t0 = Instant::now();
    loop {
        let lines = std::fs::read_to_string(&journal)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines >= 3 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "no journal grew");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) on the child's pid, which is still ours to signal (not yet waited).
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "a stopped run exits 130");
    let stopped = results(dir.path());
    assert_eq!(stopped["run"]["incomplete"], true, "{stopped}");
    let not_run: Vec<&str> = stopped["run"]["not_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let ran = verdicts(&stopped);
    assert!(!not_run.is_empty() && !ran.is_empty(), "{stopped}");
    assert_eq!(ran.len() + not_run.len(), 10, "{stopped}");
    for (id, v) in &ran {
        assert_eq!(Some(v), want.get(id), "{id}");
    }
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(junit.contains("gpucts.not_run"), "{junit}");
    assert!(junit.contains(not_run[0]), "{junit}");

    // Resumed: only the cases not run run, and the verdicts are the uninterrupted run's.
    let o = gpucts(&["--resume", dir.path().to_str().unwrap()]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(101), "{out}\n{err}");
    for id in &not_run {
        assert!(out.contains(id), "{id} runs on resume:\n{out}");
    }
    for id in ran.keys() {
        assert!(!out.contains(&format!("{id} ")), "{id} ran again:\n{out}");
    }
    let resumed = results(dir.path());
    assert!(resumed["run"].get("incomplete").is_none(), "{resumed}");
    assert_eq!(verdicts(&resumed), want);
    let junit = std::fs::read_to_string(dir.path().join("junit.xml")).unwrap();
    assert!(!junit.contains("gpucts.not_run"), "{junit}");
}

/// A journal from another machine (another fingerprint) is refused, naming the key.
#[test]
fn resume_refuses_another_machines_run() {
    let dir = tmp("resume-other");
    let a: Vec<String> = args(&dir.path().join("junit.xml"));
    let o = gpucts(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(101), "{:?}", text(&o));
    let journal = dir.path().join("results.jsonl");
    let t = std::fs::read_to_string(&journal).unwrap();
    let (head, rest) = t.split_once('\n').unwrap();
    let mut h: Value = serde_json::from_str(head).unwrap();
    h["fingerprint"]["os"] = Value::String("another OS".into());
    std::fs::write(&journal, format!("{h}\n{rest}")).unwrap();
    let o = gpucts(&["--resume", dir.path().to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("not the one the run started on (os: was another OS"),
        "{err}"
    );
    // No journal at all: a clear error naming the file.
    let empty = tmp("resume-none");
    let o = gpucts(&["--resume", empty.path().to_str().unwrap()]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("results.jsonl"), "{err}");
}
