//! Issue 10 item 5: printing and re-reading a suite gives the same cases. Random suites (a
//! seeded generator: ids, clauses and check strings with YAML's awkward spellings, matrix
//! lists and ranges, defaults, timeouts, `isolate`) are printed two ways (serde-saphyr's block
//! YAML and JSON, which is YAML too), read by the suite reader, and the cases compared with
//! the ones this test expands itself; the read cases printed again as a flat suite (one
//! entry per case) read back to the same cases.
//! `GPUCTS_ROUNDTRIP_SUITES` sets how many suites (default 300).

use std::collections::BTreeMap;
use std::path::Path;

use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

use gpucts::selftest::SelftestCheck;
use gpucts::suite::{load_text, Limits};

/// Matrix values that are valid in an id but that YAML reads as something else when written
/// bare (`007` as 7, `1e3` as 1000, `null`, `true`, `0x1F`).
const ID_WORDS: &[&str] = &[
    "u8", "007", "1e3", "null", "true", "false", "0x1F", "+1", "-2", "a-b", "x_y", "NaN", "inf",
];
/// Pieces of clauses and check strings: YAML indicators, quotes, comments, escapes, unicode,
/// leading and trailing blanks, line breaks.
const TEXT_BITS: &[&str] = &[
    "ptx-interop 13.2 §2.3",
    "a: b",
    " #no comment",
    "'single'",
    "\"double\"",
    "back\\slash",
    "- dash",
    "[flow, seq]",
    "{not: map}",
    "& * ! | > %",
    "tab\there",
    "line\nbreak",
    "  lead",
    "trail  ",
    "@at `tick`",
    "ünïcödé ✓",
    "null",
    "~",
    "0o17",
];
const CAPS: &[&str] = &["ptxas", "nvrtc", "clang", "gpu", "nvjitlink"];

fn text(rng: &mut impl Rng) -> String {
    let n = rng.random_range(1..4);
    let mut s: String = (0..n)
        .map(|_| TEXT_BITS[rng.random_range(0..TEXT_BITS.len())])
        .collect::<Vec<_>>()
        .join(" ");
    if s.trim().is_empty() {
        s.push('x');
    }
    s
}

/// What one generated case must become.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    id: String,
    clause: String,
    requires: Vec<String>,
    isolate: bool,
    timeout_ms: u128,
    check: String,
}

/// A value as it appears substituted into an id or clause.
fn word(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn substitute(s: &str, params: &BTreeMap<String, Value>) -> String {
    let mut out = s.to_string();
    for (k, v) in params {
        out = out.replace(&format!("{{{k}}}"), &word(v));
    }
    out
}

/// The Debug form a check must have, given an expansion's parameters.
type ExpectCheck = Box<dyn Fn(&BTreeMap<String, Value>) -> String>;

/// A random suite (as a JSON value) and the cases it must give.
fn generate(rng: &mut impl Rng, n: usize) -> (Value, Vec<Expected>) {
    let mut defaults = serde_json::Map::new();
    let mut default_req: Vec<String> = Vec::new();
    if rng.random_bool(0.5) {
        default_req.push(CAPS[rng.random_range(0..CAPS.len())].to_string());
        defaults.insert("requires".into(), json!(default_req));
    }
    let default_timeout = rng
        .random_bool(0.5)
        .then(|| f64::from(rng.random_range(1..100_000u32)) / 100.0);
    if let Some(t) = default_timeout {
        defaults.insert("timeout_s".into(), json!(t));
    }
    let default_isolate = rng.random_bool(0.3).then(|| rng.random_bool(0.5));
    if let Some(i) = default_isolate {
        defaults.insert("isolate".into(), json!(i));
    }
    let mut cases = Vec::new();
    let mut expected = Vec::new();
    for e in 0..rng.random_range(1..5) {
        let mut entry = serde_json::Map::new();
        // Axes: a list of id words (distinct) or a small integer range.
        let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
        let mut matrix = serde_json::Map::new();
        for key in ["a", "b"].iter().take(rng.random_range(0..3)) {
            if rng.random_bool(0.5) {
                let lo = rng.random_range(-5..5i64);
                let hi = lo + rng.random_range(1..4i64);
                matrix.insert(key.to_string(), json!({"range": [lo, hi]}));
                axes.push((key.to_string(), (lo..hi).map(|i| json!(i)).collect()));
            } else {
                let mut vals: Vec<&str> = ID_WORDS.to_vec();
                vals.sort_by_key(|_| rng.random::<u32>());
                vals.truncate(rng.random_range(1..4));
                matrix.insert(key.to_string(), json!(vals));
                axes.push((key.to_string(), vals.iter().map(|v| json!(v)).collect()));
            }
        }
        let placeholders: String = axes.iter().map(|(k, _)| format!(".{{{k}}}")).collect();
        let id = format!("selftest.n{n}.e{e}{placeholders}");
        let clause_has_key = !axes.is_empty() && rng.random_bool(0.5);
        let clause = if clause_has_key {
            format!("{} {{{}}}", text(rng), axes[0].0)
        } else {
            text(rng)
        };
        entry.insert("id".into(), json!(id));
        entry.insert("clause".into(), json!(clause));
        let mut req = default_req.clone();
        if rng.random_bool(0.5) {
            let c = CAPS[rng.random_range(0..CAPS.len())];
            entry.insert("requires".into(), json!([c]));
            req.push(c.to_string());
        }
        // Compared as a set (the reader keeps capabilities in its own order).
        req.sort();
        req.dedup();
        let timeout = if rng.random_bool(0.5) {
            let t = f64::from(rng.random_range(1..100_000u32)) / 1000.0;
            entry.insert("timeout_s".into(), json!(t));
            t
        } else {
            default_timeout.unwrap_or(120.0)
        };
        let isolate_entry = rng.random_bool(0.3).then(|| rng.random_bool(0.5));
        if let Some(i) = isolate_entry {
            entry.insert("isolate".into(), json!(i));
        }
        let isolate = isolate_entry.or(default_isolate).unwrap_or(false);
        if !matrix.is_empty() {
            entry.insert("matrix".into(), Value::Object(matrix));
        }
        // The check: integers at the extremes, or strings with the awkward pieces (one may
        // take a matrix value).
        let (check, expect_check): (Value, ExpectCheck) = if rng.random_bool(0.5) {
            let pick = |rng: &mut _| -> i64 {
                let r: &mut dyn rand::RngCore = rng;
                match r.next_u32() % 4 {
                    0 => i64::MIN,
                    1 => i64::MAX,
                    2 => 0,
                    _ => i64::from(r.next_u32() as i32),
                }
            };
            let (l, r) = (pick(rng), pick(rng));
            (
                json!({"equal": {"left": l, "right": r}}),
                Box::new(move |_| format!("{:?}", SelftestCheck::Equal { left: l, right: r })),
            )
        } else {
            let exp = if axes.is_empty() {
                text(rng)
            } else {
                format!("{} {{{}}}", text(rng), axes[0].0)
            };
            let obs = text(rng);
            let exp2 = exp.clone();
            (
                json!({"fail_with": {"expected": exp, "observed": obs}}),
                Box::new(move |p| {
                    format!(
                        "{:?}",
                        SelftestCheck::FailWith {
                            expected: substitute(&exp2, p),
                            observed: obs.clone(),
                        }
                    )
                }),
            )
        };
        entry.insert("check".into(), check);
        cases.push(Value::Object(entry));
        // Expand as the format says: every combination of the axes' values.
        let mut combos: Vec<BTreeMap<String, Value>> = vec![BTreeMap::new()];
        for (k, vals) in &axes {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    vals.iter().map(move |v| {
                        let mut c = c.clone();
                        c.insert(k.clone(), v.clone());
                        c
                    })
                })
                .collect();
        }
        for p in combos {
            expected.push(Expected {
                id: substitute(&id, &p),
                clause: substitute(&clause, &p),
                requires: req.clone(),
                isolate,
                timeout_ms: (timeout * 1000.0).round() as u128,
                check: expect_check(&p),
            });
        }
    }
    let mut suite = serde_json::Map::new();
    suite.insert("area".into(), json!("selftest"));
    if !defaults.is_empty() {
        suite.insert("defaults".into(), Value::Object(defaults));
    }
    suite.insert("cases".into(), Value::Array(cases));
    expected.sort_by(|a, b| a.id.cmp(&b.id));
    (Value::Object(suite), expected)
}

fn read(text: &str) -> Result<Vec<Expected>, String> {
    let s = load_text(
        Path::new("printed.yaml"),
        text,
        &gpucts::areas::all(),
        &Limits {
            max_cases_per_entry: 1000,
        },
    )
    .map_err(|e| {
        e.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let mut got: Vec<Expected> = s
        .cases
        .iter()
        .map(|c| Expected {
            id: c.id.clone(),
            clause: c.clause.clone(),
            requires: {
                let mut r: Vec<String> = c
                    .requires
                    .iter()
                    .map(|r| {
                        serde_json::to_value(r)
                            .unwrap()
                            .as_str()
                            .unwrap()
                            .to_string()
                    })
                    .collect();
                r.sort();
                r
            },
            isolate: c.isolate,
            timeout_ms: c.timeout.as_millis(),
            check: format!("{:?}", c.check),
        })
        .collect();
    got.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(got)
}

#[test]
fn printing_and_rereading_a_suite_gives_the_same_cases() {
    let n: usize = std::env::var("GPUCTS_ROUNDTRIP_SUITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
    let mut total = 0;
    for i in 0..n {
        let (suite, expected) = generate(&mut rng, i);
        let yaml = serde_saphyr::to_string(&suite).unwrap();
        let json = serde_json::to_string_pretty(&suite).unwrap();
        for (how, printed) in [("yaml", &yaml), ("json", &json)] {
            let got = read(printed).unwrap_or_else(|e| panic!("{how} #{i}: {e}\n{printed}"));
            assert_eq!(got, expected, "{how} #{i}:\n{printed}");
        }
        // The read cases printed flat (one literal entry each) read back the same. The check
        // content is re-derived from the case's check as its area holds it.
        let flat: Vec<Value> = read(&yaml)
            .unwrap()
            .iter()
            .zip(flat_checks(&suite, &expected))
            .map(|(c, check)| {
                json!({
                    "id": c.id, "clause": c.clause, "requires": c.requires,
                    "isolate": c.isolate, "timeout_s": c.timeout_ms as f64 / 1000.0,
                    "check": check,
                })
            })
            .collect();
        let flat = serde_saphyr::to_string(&json!({"area": "selftest", "cases": flat})).unwrap();
        assert_eq!(read(&flat).unwrap(), expected, "flat #{i}:\n{flat}");
        total += expected.len();
    }
    assert!(total >= n, "{total} cases over {n} suites");
}

/// Each expected case's check content as a literal `check:` (from its Debug form's fields).
fn flat_checks(_suite: &Value, expected: &[Expected]) -> Vec<Value> {
    expected
        .iter()
        .map(|e| {
            if let Some(rest) = e.check.strip_prefix("Equal { left: ") {
                let (l, r) = rest.trim_end_matches(" }").split_once(", right: ").unwrap();
                json!({"equal": {"left": l.parse::<i64>().unwrap(), "right": r.parse::<i64>().unwrap()}})
            } else {
                // FailWith { expected: "...", observed: "..." }: Debug strings are Rust
                // literals; JSON reads them for the characters used here.
                let rest = e.check.strip_prefix("FailWith { expected: ").unwrap();
                let (x, o) = rest.trim_end_matches(" }").split_once(", observed: ").unwrap();
                json!({"fail_with": {"expected": unescape(x), "observed": unescape(o)}})
            }
        })
        .collect()
}

fn unescape(debug: &str) -> String {
    serde_json::from_str::<String>(debug).unwrap_or_else(|e| panic!("{debug}: {e}"))
}
