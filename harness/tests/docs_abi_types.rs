//! docs/ABI-TYPES.md stays true: every YAML example in it lays out, and the figures the page
//! quotes (worked by hand from ptx-interop 13.2 ch. 1's rules, not taken from gpucts) are what
//! `gpucts abi layout` prints.

use std::process::Command;

fn examples() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let doc = std::fs::read_to_string(root.join("docs/ABI-TYPES.md")).unwrap();
    let mut out = Vec::new();
    let mut rest = doc.as_str();
    while let Some(start) = rest.find("```yaml\n") {
        let body = &rest[start + 8..];
        let end = body.find("```").unwrap();
        out.push(body[..end].to_string());
        rest = &body[end + 3..];
    }
    out
}

fn layout(yaml: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("types.yaml");
    std::fs::write(&f, yaml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpucts"))
        .args(["abi", "layout"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{yaml}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// (type, size, align, [(member, offset)])
type Want = (&'static str, u64, u64, &'static [(&'static str, u64)]);

fn check(v: &serde_json::Value, want: &[Want]) {
    for (name, size, align, members) in want {
        let t = v["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == *name)
            .unwrap_or_else(|| panic!("no type {name} in {v}"));
        assert_eq!(t["size"], *size, "{name}: {t}");
        assert_eq!(t["align"], *align, "{name}: {t}");
        for (m, off) in *members {
            let got = t["members"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["name"] == *m)
                .unwrap_or_else(|| panic!("{name}.{m} missing: {t}"));
            assert_eq!(got["offset"], *off, "{name}.{m}: {t}");
        }
    }
}

#[test]
fn every_example_lays_out_as_the_page_says() {
    let ex = examples();
    assert_eq!(ex.len(), 6, "the page has six examples");
    check(
        &layout(&ex[0]),
        &[("padding", 24, 8, &[("c", 0), ("d", 8), ("s", 16)])],
    );
    check(
        &layout(&ex[1]),
        &[("vectors", 24, 8, &[("c", 0), ("f3", 4), ("f2", 16)])],
    );
    check(
        &layout(&ex[2]),
        &[
            ("inner", 16, 8, &[("a", 0), ("b", 8)]),
            (
                "outer",
                32,
                8,
                &[("c", 0), ("arr", 2), ("n", 8), ("anon", 24)],
            ),
        ],
    );
    check(&layout(&ex[3]), &[("u", 8, 4, &[("bytes", 0), ("i", 0)])]);
    check(
        &layout(&ex[4]),
        &[("bits", 8, 4, &[("j", 0), ("k", 0), ("c", 2), ("d", 4)])],
    );
    let v32 = layout(&ex[5]);
    assert_eq!(v32["address_size"], 32);
    check(&v32, &[("ptrs", 12, 4, &[("c", 0), ("p", 4), ("l", 8)])]);
    let v64 = layout(&ex[5].replace("address_size: 32", "address_size: 64"));
    check(&v64, &[("ptrs", 24, 8, &[("c", 0), ("p", 8), ("l", 16)])]);
}
