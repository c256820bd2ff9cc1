//! The offline byte-coverage pass (`xcall.bytes`) against the hardware: on an H100 on
//! 2026-11-26 (driver 580.159.04, CUDA 13.0) `xcall.gpu` found clang-19's union byte losses
//! (harness/tests/fixtures/h100-2026-11-26-xcall-gpu-failures.json, copied from that run's
//! results.json). Offline, with the default waivers off, each pair among NVRTC, libNVVM,
//! clang-19 and llc-19 must name exactly the values and bytes the GPU named, field for field,
//! and every pair the GPU passed must pass. Seed 78 is left out: there ptxas miscompiles
//! correct PTX (W-XCALL-PTXAS-LIBNVVM-BYVAL-V4), which no reading of the PTX can see.

mod common;

use common::{gpucts, text, tmp};
use std::collections::{BTreeMap, BTreeSet};

use gpucts::backend::toolchain::{Policy, ToolSettings, Toolchain};
use gpucts::capability::Capability;

/// (seed, "parameter N" or "return value", byte, field) of one finding line.
type Loss = (u64, String, u64, String);

fn loss(line: &str) -> Option<Loss> {
    let re = regex::Regex::new(
        r"seed (\d+) .*: (parameter \d+|return value) \(.*\), byte (\d+) \(field ([^)]*)\)",
    )
    .unwrap();
    let c = re.captures(line)?;
    Some((
        c[1].parse().unwrap(),
        c[2].to_string(),
        c[3].parse().unwrap(),
        c[4].to_string(),
    ))
}

const PRODUCERS: [&str; 4] = ["nvrtc", "clang", "llvm", "libnvvm"];

#[test]
fn offline_byte_coverage_names_what_the_h100_saw() {
    let tc = Toolchain::provision(Policy::Auto, ToolSettings::from_environment());
    for (cap, name) in [
        (Capability::Clang, "clang-19"),
        (Capability::Nvrtc, "nvrtc"),
        (Capability::Libnvvm, "libnvvm"),
    ] {
        gpucts::require!(tc.has(cap), name);
    }
    let fixture: serde_json::Value = serde_json::from_str(include_str!(
        "fixtures/h100-2026-11-26-xcall-gpu-failures.json"
    ))
    .unwrap();
    // What the GPU saw per pair (an absent pair passed there).
    let mut gpu: BTreeMap<(String, String), BTreeSet<Loss>> = BTreeMap::new();
    for a in PRODUCERS {
        for b in PRODUCERS {
            gpu.insert((a.into(), b.into()), BTreeSet::new());
        }
    }
    for c in fixture["cases"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        let parts: Vec<&str> = id.split('.').collect();
        let key = (parts[2].to_string(), parts[3].to_string());
        let Some(set) = gpu.get_mut(&key) else {
            continue;
        };
        for l in c["detail"].as_str().unwrap().lines() {
            if let Some(x) = loss(l).filter(|x| x.0 != 78) {
                set.insert(x);
            }
        }
    }
    assert_eq!(
        gpu.values().filter(|s| !s.is_empty()).count(),
        7,
        "the H100 flagged clang with each of the 4 as callee and 3 others as caller"
    );

    let reports = tmp("xcall-bytes");
    let junit = reports.path().join("junit.xml");
    let o = gpucts(&[
        "--suite",
        "xcall",
        "xcall.bytes.",
        "--no-default-waivers",
        "--junit",
        junit.to_str().unwrap(),
    ]);
    let (out, err) = text(&o);
    assert_eq!(
        o.status.code(),
        Some(101),
        "clang's pairs fail: {out}\n{err}"
    );
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(reports.path().join("results.json")).unwrap(),
    )
    .unwrap();
    let mut seen = 0;
    for c in results["cases"].as_array().unwrap() {
        let id = c["id"].as_str().unwrap();
        let parts: Vec<&str> = id.split('.').collect();
        let key = (parts[2].to_string(), parts[3].to_string());
        let Some(want) = gpu.get(&key) else { continue };
        seen += 1;
        let got: BTreeSet<Loss> = c["status"]["findings"]
            .as_array()
            .map(|f| f.iter().filter_map(|l| loss(l.as_str().unwrap())).collect())
            .unwrap_or_default();
        assert_eq!(&got, want, "{id}: offline against the H100");
        let verdict = c["verdict"].as_str().unwrap();
        assert_eq!(
            verdict,
            if want.is_empty() { "pass" } else { "fail" },
            "{id}: {}",
            c["status"]
        );
    }
    assert_eq!(seen, 16, "every pair of the four producers ran");
}
