//! End-to-end: `--device N|UUID` and `--devices all|N,...` through the binary, on a fake
//! multi-device machine (tests/fixtures/devices.yaml: a check that uses "the GPU" without
//! needing one and reports the device its context was given, in process and in a child).

mod common;

use common::{gpucts, run_fixture, text, tmp};
use serde_json::Value;
use std::path::Path;

fn results(dir: &Path) -> Vec<(String, String, Option<String>)> {
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let mut v: Vec<_> = r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["verdict"], "pass", "{c}");
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"]["note"].as_str().unwrap_or("").to_string(),
                c["device"].as_str().map(str::to_string),
            )
        })
        .collect();
    v.sort();
    v
}

/// The devices to fan out over: two on a machine without a driver (nothing checks them
/// then), else the driver's first two (or its one).
fn two_devices() -> Vec<String> {
    let o = gpucts(&["probe", "--json"]);
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    match p["driver"]["Ok"]["gpus"].as_array() {
        Some(g) => (0..g.len().min(2)).map(|n| n.to_string()).collect(),
        None => vec!["0".into(), "1".into()],
    }
}

#[test]
fn devices_runs_each_gpu_case_once_per_device_naming_it() {
    let d = tmp("devices");
    let devices = two_devices();
    let list = devices.join(",");
    let o = run_fixture(
        "devices.yaml",
        &d.path().join("junit.xml"),
        &["--devices", &list],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let mut want = vec![("selftest.device.host_only".to_string(), String::new(), None)];
    for dev in &devices {
        for case in ["here", "child"] {
            want.push((
                format!("selftest.device.{case}@{dev}"),
                format!("device {dev}"),
                Some(dev.clone()),
            ));
        }
    }
    want.sort();
    assert_eq!(results(d.path()), want);
    let xml = std::fs::read_to_string(d.path().join("junit.xml")).unwrap();
    for dev in &devices {
        assert_eq!(
            xml.matches(&format!(r#"<property name="device" value="{dev}"/>"#))
                .count(),
            2,
            "{xml}"
        );
    }
    // `--list` shows the per-device ids
    let o = run_fixture(
        "devices.yaml",
        &d.path().join("junit.xml"),
        &["--devices", &list, "--list"],
    );
    let (out, _) = text(&o);
    assert!(
        out.contains(&format!("selftest.device.child@{}", devices[0])),
        "{out}"
    );
}

#[test]
fn device_is_what_every_case_and_child_opens() {
    let d = tmp("device");
    let uuid = "GPU-8e7a1c2b-1f3d-4c5e-9a0b-0123456789ab";
    // (a UUID is not checked against the driver by the run: a case opening it would say)
    for (flag, shown) in [("1", "1"), (&uuid.to_lowercase()[4..], uuid)] {
        let o = run_fixture(
            "devices.yaml",
            &d.path().join("junit.xml"),
            &["--device", flag],
        );
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{out}{err}");
        assert_eq!(
            results(d.path()),
            [
                (
                    "selftest.device.child".into(),
                    format!("device {shown}"),
                    None
                ),
                (
                    "selftest.device.here".into(),
                    format!("device {shown}"),
                    None
                ),
                ("selftest.device.host_only".into(), String::new(), None),
            ]
        );
    }
}

#[test]
fn a_bad_device_or_device_list_is_a_usage_error_naming_it() {
    let d = tmp("bad-device");
    let junit = d.path().join("junit.xml");
    for (args, says) in [
        (&["--device", "GPU-12"][..], "\"GPU-12\" is not a device"),
        (&["--devices", "0,0"][..], "--devices: 0 named twice"),
        (&["--devices", "0,x"][..], "\"x\" is not a device"),
        (
            &["--device", "0", "--devices", "1"][..],
            "cannot be used with",
        ),
    ] {
        let o = run_fixture("devices.yaml", &junit, args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!junit.exists(), "{args:?}: nothing runs");
    }
}
