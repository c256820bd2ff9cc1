//! The malformed-input sweep of issue 10: a few hundred generated bad inputs across the
//! readers of hand-written files (suite YAML, waiver lists, ABI type descriptions, litmus YAML,
//! Dat3M `.litmus`), each given to the `gpucts` binary.
//!
//! What must hold, for every input (the issue's "done when"): no panic (exit 101 from a
//! reader, or a signal), no hang (each run is killed after 20 s), and for an input that is bad
//! by construction exit 2 with a `file:line:column:` position in the message. Inputs made by
//! random mutation of a valid file may still be valid: for those exit 0 is accepted too, and an
//! exit 2 must carry a position.
//!
//! "Bad by construction" is decided by the suite format's rules (issue 10's list: `.inf`
//! timeouts, an empty clause, an unknown key, a non-UTF-8 byte, ...), never by running the
//! reader first.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Deterministic pseudo-random numbers (the sweep is the same on every run).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One reader: how to give it a file, and a valid example to mutate.
struct Reader {
    name: &'static str,
    ext: &'static str,
    /// The command line for a file (its path replaces `{}`).
    args: Vec<String>,
    valid: String,
    /// Inputs bad by construction.
    bad: Vec<(String, Vec<u8>)>,
}

#[derive(Default, Debug)]
struct Tally {
    inputs: usize,
    bad_by_construction: usize,
    exit2_with_position: usize,
    accepted: usize,
    panics: Vec<String>,
    hangs: Vec<String>,
    wrong: Vec<String>,
}

fn run(args: &[String], file: &Path) -> (Option<i32>, String, Duration) {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{}", &file.display().to_string()))
        .collect();
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpucts"))
        .args(&args)
        .env("GPUCTS_ROOT", root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gpucts starts");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let err = reader.join().unwrap_or_default();
            return (status.code(), err, t0.elapsed());
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            return (None, "killed after 20 s".into(), t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn has_position(stderr: &str) -> bool {
    // `path:LINE:COLUMN: ` with LINE and COLUMN at least 1.
    stderr.lines().any(|l| {
        let parts: Vec<&str> = l.split(':').collect();
        parts.windows(3).any(|w| {
            w[0].parse::<u64>().is_ok_and(|n| n >= 1)
                && w[1].parse::<u64>().is_ok_and(|n| n >= 1)
                && w[2].starts_with(' ')
        })
    })
}

/// Generic mutations of a valid text: each result may or may not be valid.
fn mutations(valid: &str, rng: &mut Lcg, n: usize) -> Vec<(String, Vec<u8>)> {
    let lines: Vec<&str> = valid.lines().collect();
    let mut out = Vec::new();
    for k in 0..n {
        let mut ls: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        let i = rng.below(ls.len());
        let what = match k % 8 {
            0 => {
                ls.remove(i);
                "delete a line"
            }
            1 => {
                let l = ls[i].clone();
                ls.insert(i, l);
                "duplicate a line"
            }
            2 => {
                let cut = rng.below(valid.len());
                let t: String = valid.chars().take(cut).collect();
                out.push((format!("truncate at {cut}"), t.into_bytes()));
                continue;
            }
            3 => {
                let l = &ls[i];
                let c = rng.below(l.len() + 1);
                let mut s: String = l.chars().take(c).collect();
                s.push(['{', '[', '"', '\'', ':', '|', '~', '('][rng.below(8)]);
                s.extend(l.chars().skip(c));
                ls[i] = s;
                "insert a bracket or quote"
            }
            4 => {
                let j = rng.below(ls.len());
                ls.swap(i, j);
                "swap two lines"
            }
            5 => {
                ls[i] = format!("\t{}", ls[i]);
                "tab indentation"
            }
            6 => {
                let l = &ls[i];
                ls[i] = l
                    .split_inclusive(|c: char| !c.is_alphanumeric())
                    .map(|w| {
                        if w.chars().any(|c| c.is_ascii_digit()) {
                            "-99999999999999999999999 "
                        } else {
                            w
                        }
                    })
                    .collect();
                "huge number"
            }
            _ => {
                ls[i] = ls[i].replace(' ', "");
                "remove spaces"
            }
        };
        out.push((
            format!("{what} (line {})", i + 1),
            ls.join("\n").into_bytes(),
        ));
    }
    out
}

fn read(p: &str) -> String {
    std::fs::read_to_string(root().join(p)).unwrap()
}

fn readers() -> Vec<Reader> {
    let s = |x: &str| x.to_string();
    let suite = "area: selftest\ncases:\n  - id: selftest.sweep.one\n    clause: gpucts sweep\n    check: {equal: {left: 1, right: 1}}\n".to_string();
    let abi_suite = "area: abi\ncases:\n  - id: abi.sweep.lint\n    clause: ptx-interop 13.2 §2.3\n    check:\n      lint: {file: ptx-corpus/hand_conforming.ptx, exit: 0, rules: []}\n  - id: abi.sweep.pp.{p}\n    clause: ptx-interop 13.2 §2.3\n    matrix:\n      p: [nvrtc, clang]\n    check:\n      param_passing: {producer: \"{p}\", signature: int, position: param}\n  - id: abi.sweep.rule\n    clause: ptx-interop 13.2 §1.2\n    check: {types_file: {oracle: clang, file: suites/abi/types.yaml, type: padding}}\n  - id: abi.sweep.fund\n    clause: ptx-interop 13.2 §1.1\n    check: {fundamental_type: {ptx_type: u32, size: 4, align: 4}}\n  - id: abi.sweep.graffiti\n    clause: ptx-interop 13.2 ch. 1\n    check: {graffiti: {seed_start: 0, count: 2}}\n".to_string();
    let atomics_suite = "area: atomics\ncases:\n  - id: atomics.sweep.model\n    clause: ptx-interop 13.2 §4\n    check:\n      model: {test: MP.rel_acq.gpu.inter_cta}\n  - id: atomics.sweep.gpu\n    clause: ptx-interop 13.2 §4\n    check:\n      gpu: {test: SB.rel_acq.gpu.inter_cta, iterations: 5}\n  - id: atomics.sweep.corpus\n    clause: ptx-interop 13.2 §4\n    check: {corpus: {expectations: ptx-v7.5}}\n  - id: atomics.sweep.litmus\n    clause: ptx-interop 13.2 §4\n    check: {litmus: {file: CoRR+relaxed-gpu.litmus, outcome: allowed}}\n".to_string();
    let waiver = read("suites/waivers/known-divergences.yaml");
    let types = read("suites/abi/types.yaml");
    let lit_yaml = read("suites/litmus/mp-release-acquire-gpu.yaml");
    let lit = read("suites/litmus/MP+fence-acq_rel-sys.litmus");
    let b = |n: &str, t: String| (n.to_string(), t.into_bytes());
    let nest = |open: &str, n: usize| open.repeat(n);
    vec![
        Reader {
            name: "suite",
            ext: "yaml",
            args: vec![s("validate"), s("{}")],
            valid: suite.clone(),
            bad: vec![
                b("timeout .inf", suite.replace("    check:", "    timeout_s: .inf\n    check:")),
                b("timeout -1", suite.replace("    check:", "    timeout_s: -1\n    check:")),
                b("timeout .nan", suite.replace("    check:", "    timeout_s: .nan\n    check:")),
                b("timeout 0", suite.replace("    check:", "    timeout_s: 0\n    check:")),
                b("four range axes overflow", suite.replace("selftest.sweep.one", "selftest.sweep.{a}.{b}.{c}.{d}").replace("    check:", "    matrix: {a: {range: [0, 65536]}, b: {range: [0, 65536]}, c: {range: [0, 65536]}, d: {range: [0, 65536]}}\n    check:")),
                b("two range axes over the limit", suite.replace("selftest.sweep.one", "selftest.sweep.{a}.{b}").replace("    check:", "    matrix: {a: {range: [0, 1000000]}, b: {range: [0, 1000000]}}\n    check:")),
                b("backwards range", suite.replace("selftest.sweep.one", "selftest.sweep.{a}").replace("    check:", "    matrix: {a: {range: [5, 1]}}\n    check:")),
                b("axis typo", suite.replace("selftest.sweep.one", "selftest.sweep.{a}").replace("    check:", "    matrix: {a: {rang: [0, 3]}}\n    check:")),
                b("id with a space from the matrix", suite.replace("selftest.sweep.one", "selftest.sweep.{a}").replace("    check:", "    matrix: {a: [\"x y\"]}\n    check:")),
                b("id with .. from the matrix", suite.replace("selftest.sweep.one", "selftest.sweep.{a}").replace("    check:", "    matrix: {a: [\"x..y\"]}\n    check:")),
                b("id with / from the matrix", suite.replace("selftest.sweep.one", "selftest.sweep.{a}").replace("    check:", "    matrix: {a: [\"x/y\"]}\n    check:")),
                b("exclude matching nothing", suite.replace("selftest.sweep.one", "selftest.sweep.{a}").replace("    check:", "    matrix: {a: [x, y]}\n    exclude: [{a: z}]\n    check:")),
                b("exclude removing everything", suite.replace("selftest.sweep.one", "selftest.sweep.{a}").replace("    check:", "    matrix: {a: [x, y]}\n    exclude: [{a: x}, {a: y}]\n    check:")),
                b("empty clause", suite.replace("clause: gpucts sweep", "clause:")),
                b("duplicate key", suite.replace("area: selftest\n", "area: selftest\narea: selftest\n")),
                b("unknown key", suite.replace("    check:", "    chekc: 1\n    check:")),
                b("CR-only line ends", suite.replace("    check:", "    bogus: 1\n    check:").replace('\n', "\r")),
                b("unknown area", suite.replace("area: selftest", "area: nosuch")),
                b("deep nesting", format!("{suite}x: {}\n", nest("[", 5000))),
                ("non-UTF-8".into(), [suite.as_bytes(), b"# \xff\xfe\n"].concat()),
                b("empty file", String::new()),
                b("only a comment", "# nothing\n".into()),
                b("a scalar", "42\n".into()),
            ],
        },
        // What `validate` checks of each case's content (issue 10: a run met these first).
        Reader {
            name: "suite-checks-abi",
            ext: "yaml",
            args: vec![s("validate"), s("{}")],
            valid: abi_suite.clone(),
            bad: vec![
                b("missing lint file", abi_suite.replace("ptx-corpus/hand_conforming.ptx", "ptx-corpus/nope.ptx")),
                b("directory as a file", abi_suite.replace("ptx-corpus/hand_conforming.ptx", "ptx-corpus")),
                b("unknown producer in the matrix", abi_suite.replace("p: [nvrtc, clang]", "p: [nvrtc, gcc]")),
                b("unknown signature", abi_suite.replace("signature: int", "signature: int7")),
                b("unknown position", abi_suite.replace("position: param", "position: both")),
                b("type not in the file", abi_suite.replace("type: padding", "type: padd")),
                b("missing type file", abi_suite.replace("file: suites/abi/types.yaml", "file: suites/abi/none.yaml")),
                b("not a §1.1 type", abi_suite.replace("ptx_type: u32", "ptx_type: u24")),
                b("corpus file without manifest", abi_suite.replace("ptx-corpus/hand_conforming.ptx", "suites/abi/types.yaml").replace("lint: {file: suites/abi/types.yaml, exit: 0, rules: []}", "lint_corpus: {file: suites/abi/types.yaml}")),
                b("graffiti of no types", abi_suite.replace("count: 2", "count: 0")),
            ],
        },
        Reader {
            name: "suite-checks-atomics",
            ext: "yaml",
            args: vec![s("validate"), s("{}")],
            valid: atomics_suite.clone(),
            bad: vec![
                b("unknown model test", atomics_suite.replace("model: {test: MP.rel_acq.gpu.inter_cta}", "model: {test: MP.rel_acq.gpu.inter_grid}")),
                b("unknown gpu test", atomics_suite.replace("gpu: {test: SB.rel_acq.gpu.inter_cta", "gpu: {test: SB.rel_acq.gpu.nowhere")),
                b("zero iterations", atomics_suite.replace("iterations: 5", "iterations: 0")),
                b("unknown corpus expectation", atomics_suite.replace("expectations: ptx-v7.5", "expectations: ptx-v8.0")),
                b("missing litmus file", atomics_suite.replace("CoRR+relaxed-gpu.litmus", "CoRR-gpu.litmus")),
                b("litmus file outside suites/litmus", atomics_suite.replace("CoRR+relaxed-gpu.litmus", "../abi/types.yaml")),
                b("unknown outcome", atomics_suite.replace("outcome: allowed", "outcome: maybe")),
            ],
        },
        Reader {
            name: "waivers",
            ext: "yaml",
            args: vec![s("--suite"), root().join("harness/tests/fixtures/bad_input_suite.yaml").display().to_string(), s("--list"), s("--no-default-waivers"), s("--waivers"), s("{}")],
            valid: waiver.clone(),
            bad: vec![
                b("unknown key", "waivers:\n  - id: A\n    cases: \"x\"\n    reasn: r\n".into()),
                b("duplicate id", "waivers:\n  - {id: A, cases: x, reason: r}\n  - {id: A, cases: y, reason: r}\n".into()),
                b("no reason", "waivers:\n  - {id: A, cases: x, reason: \" \"}\n".into()),
                b("unclosed brace", "waivers:\n  - {id: A, cases: \"a{b\", reason: r}\n".into()),
                b("braces 50 deep", format!("waivers:\n  - {{id: A, cases: \"{}{}\", reason: r}}\n", "{a,".repeat(50), "}".repeat(50))),
                b("platform key typo", "waivers:\n  - {id: A, cases: x, reason: r, findings: [y], platform: {clnag: \"*\"}}\n".into()),
                b("no findings", "waivers:\n  - {id: A, cases: x, reason: r}\n".into()),
                b("findings not a regex", "waivers:\n  - {id: A, cases: x, reason: r, findings: [\"(\"]}\n".into()),
                b("duplicate key", "waivers:\n  - {id: A, cases: x, id: B, reason: r}\n".into()),
                b("not a list", "waivers: 3\n".into()),
                ("non-UTF-8".into(), b"waivers:\n  - {id: \xe9, cases: x, reason: r}\n".to_vec()),
            ],
        },
        Reader {
            name: "abi-types",
            ext: "yaml",
            args: vec![s("abi"), s("layout"), s("{}")],
            valid: types.clone(),
            bad: vec![
                b("doubly nested ×24", {
                    let mut t = "types:\n  - name: T0\n    members: [{name: a, type: int}, {name: b, type: int}]\n".to_string();
                    for i in 1..24 {
                        t += &format!("  - name: T{i}\n    members: [{{name: a, type: T{p}}}, {{name: b, type: T{p}}}]\n", p = i - 1);
                    }
                    t
                }),
                b("duplicate type", "types:\n  - name: S\n    members: [{name: a, type: int}]\n  - name: S\n    members: [{name: b, type: int}]\n".into()),
                b("keyword type name", "types:\n  - name: struct\n    members: [{name: a, type: int}]\n".into()),
                b("keyword member name", "types:\n  - name: S\n    members: [{name: int, type: int}]\n".into()),
                b("unknown type", "types:\n  - name: S\n    members: [{name: a, type: Nope}]\n".into()),
                b("no members", "types:\n  - name: S\n    members: []\n".into()),
                b("array of 0", "types:\n  - name: S\n    members: [{name: a, type: {array: int, count: 0}}]\n".into()),
                b("bit field too wide", "types:\n  - name: S\n    members: [{name: a, type: char, bits: 9}]\n".into()),
                b("unknown member key", "types:\n  - name: S\n    members: [{name: a, typ: int}]\n".into()),
                b("vector PTX does not have", "types:\n  - name: S\n    members: [{name: a, type: int}, {name: v, type: double3}]\n".into()),
                b("aggregate past the size limit", "types:\n  - name: S\n    members: [{name: a, type: {array: char, count: 1099511627776}}, {name: b, type: {array: char, count: 1099511627776}}]\n".into()),
                b("type named like a nested anonymous struct", "types:\n  - name: A_b\n    members: [{name: y, type: char}]\n  - name: A\n    members: [{name: b, type: {struct: [{name: x, type: int}]}}]\n".into()),
                b("nested anonymous struct named like a later type", "types:\n  - name: A\n    members: [{name: b, type: {struct: [{name: x, type: int}]}}]\n  - name: A_b\n    members: [{name: x, type: int}]\n".into()),
                b("struct named like a CUDA vector", "types:\n  - name: float4\n    members: [{name: x, type: char}]\n  - name: S\n    members: [{name: m, type: float4}]\n".into()),
                b("struct named like a scalar", "types:\n  - name: uchar\n    members: [{name: x, type: int}]\n".into()),
                b("deep array nesting", format!("types:\n  - name: S\n    members: [{{name: a, type: {}int{}}}]\n", "{array: ".repeat(300), ", count: 1}".repeat(300))),
            ],
        },
        Reader {
            name: "litmus-yaml",
            ext: "yaml",
            args: vec![s("litmus"), s("check"), s("{}")],
            valid: lit_yaml.clone(),
            bad: vec![
                b("ld with .release", lit_yaml.replace("ld: {reg: r0, loc: flag, sem: acquire", "ld: {reg: r0, loc: flag, sem: release")),
                b("operand 1+1", lit_yaml.replace("val: 42", "val: 1+1")),
                b("empty address", lit_yaml.replace("loc: data, val: 42", "loc: \"\", val: 42")),
                b("condition register never written", lit_yaml.replace("P1:r1 == 0", "P1:r9 == 0")),
                b("condition thread missing", lit_yaml.replace("P1:r1 == 0", "P7:r1 == 0")),
                b("10000 parentheses", lit_yaml.replace("'exists (P1:r0 == 1 /\\ P1:r1 == 0)'", &format!("'exists {}P1:r0 == 1{}'", "(".repeat(10000), ")".repeat(10000)))),
                b("10000 negations", lit_yaml.replace("'exists (P1:r0 == 1 /\\ P1:r1 == 0)'", &format!("'exists ({}P1:r0 == 1)'", "~".repeat(10000)))),
                b("value past i64", lit_yaml.replace("val: 42", "val: 9223372036854775808")),
                b("register initialised twice", lit_yaml.replace("  - cta: 1\n", "  - cta: 1\n    regs: {r0: 1, r0: 2}\n")),
                b("unknown op key", lit_yaml.replace("val: 42,", "vall: 42,")),
                b("location listed twice", lit_yaml.replacen("  - {name: flag}\n", "  - {name: flag}\n  - {name: data, init: 1}\n", 1)),
                b("empty name", lit_yaml.replacen("name: ", "name: \"\"\n# was: ", 1)),
                b("multi-line name", lit_yaml.replacen("name: ", "name: \"a\\nb\"\n# was: ", 1)),
                b("name with a leading blank", lit_yaml.replacen("name: ", "name: \" a\"\n# was: ", 1)),
                b("no threads", "name: x\nthreads: []\ncondition: 'exists (x == 1)'\n".into()),
                b("eight-thread SB with fence.sc", {
                    let mut t = "name: SB8\nthreads:\n".to_string();
                    for i in 0..8 {
                        t += &format!("  - cta: {i}\n    ops:\n      - st: {{loc: x{i}, val: 1}}\n      - fence: {{sem: sc, scope: gpu}}\n      - ld: {{reg: r0, loc: x{}}}\n", (i + 1) % 8);
                    }
                    t + "condition: 'exists (P0:r0 == 0 /\\ P1:r0 == 0)'\n"
                }),
            ],
        },
        Reader {
            name: "dat3m",
            ext: "litmus",
            args: vec![s("litmus"), s("check"), s("{}")],
            valid: lit.clone(),
            bad: vec![
                b("no header", lit.replacen("PTX MP+fence-acq_rel-sys", "", 1)),
                b("operand 1+1", lit.replace("st.weak data, 42", "st.weak data, 1+1")),
                b("empty address", lit.replace("st.weak data, 42", "st.weak [], 42")),
                b("register initialised twice", lit.replace("P1:r0=0;", "P1:r0=0;\nP1:r0=1;")),
                b("location initialised twice", lit.replace("data=0;", "data=0;\ndata=1;")),
                b("condition register never written", lit.replace("P1:r1 != 42", "P1:r7 != 42")),
                b("10000 parentheses", lit.replace("(P1:r0 == 1 /\\ P1:r1 != 42)", &format!("{}P1:r0 == 1{}", "(".repeat(10000), ")".repeat(10000)))),
                b("10000 negations", lit.replace("(P1:r0 == 1 /\\ P1:r1 != 42)", &format!("({}P1:r0 == 1)", "~".repeat(10000)))),
                b("unterminated init block", lit.replace("}\n", "\n")),
                b("too many columns", lit.replace("fence.acq_rel.sys      ;", "fence.acq_rel.sys | nop ;")),
                b("ld.release", lit.replace("ld.relaxed.sys r0, flag", "ld.release.sys r0, flag")),
                b("no condition", lit.replace("exists\n(P1:r0 == 1 /\\ P1:r1 != 42)", "")),
                b("value past i64", lit.replace("st.weak data, 42", "st.weak data, 9223372036854775808")),
                b("init block of 100000 locations", {
                    let locs: String = (0..100_000).map(|i| format!("l{i}=0;")).collect();
                    lit.replace("data=0;", &format!("{locs}\ndata=0;"))
                }),
                b("300 threads", {
                    let head: Vec<String> = (0..300).map(|t| format!("P{t}@cta {t},gpu 0")).collect();
                    format!("PTX W\n{{ x=0; }}\n {} ;\n st.weak x, 1 ;\nexists (x == 1)\n", head.join(" | "))
                }),
                b("control character in the name", lit.replacen("PTX MP+fence", "PTX MP\u{7}+fence", 1)),
                b("init block of 20000 locations, one twice", {
                    let locs: String = (0..20000).map(|i| format!("l{i}=0;")).collect();
                    lit.replace("data=0;", &format!("{locs}l7=1;\ndata=0;"))
                }),
            ],
        },
    ]
}

#[test]
fn malformed_inputs_give_exit_2_with_a_position_and_never_panic_or_hang() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Lcg(0x5eed_0010);
    let mut tally = Tally::default();
    let mut per_reader = Vec::new();
    let t0 = Instant::now();
    for r in readers() {
        let mut inputs: Vec<(String, Vec<u8>, bool)> = r
            .bad
            .iter()
            .map(|(n, b)| (n.clone(), b.clone(), true))
            .collect();
        // Every bad-by-construction input again with a non-UTF-8 byte, then CR-only line
        // ends: both must still be refused with a position.
        for (n, b) in &r.bad {
            let mut x = b"\xc3(".to_vec();
            x.extend_from_slice(b);
            inputs.push((format!("{n}, invalid UTF-8 first"), x, true));
        }
        for (n, m) in mutations(&r.valid, &mut rng, 40) {
            inputs.push((n, m, false));
        }
        let count = inputs.len();
        for (k, (what, bytes, bad)) in inputs.into_iter().enumerate() {
            let path = dir.path().join(format!("{}-{k}.{}", r.name, r.ext));
            std::fs::File::create(&path)
                .and_then(|mut f| f.write_all(&bytes))
                .unwrap();
            let (code, err, took) = run(&r.args, &path);
            tally.inputs += 1;
            tally.bad_by_construction += usize::from(bad);
            let label = format!(
                "{} `{what}` ({}): exit {code:?} in {took:?}: {}",
                r.name,
                path.display(),
                err.lines().next().unwrap_or("")
            );
            match code {
                None => tally.hangs.push(label),
                Some(101) => tally.panics.push(label),
                Some(_) if err.contains("panicked") => tally.panics.push(label),
                Some(2) if has_position(&err) => tally.exit2_with_position += 1,
                Some(0) if !bad => tally.accepted += 1,
                Some(_) => tally.wrong.push(label),
            }
        }
        per_reader.push(format!("{}: {count}", r.name));
    }
    eprintln!(
        "sweep: {} inputs ({}), {} bad by construction; {} exit 2 with a position, {} accepted (valid mutations), {} panics, {} hangs, {} wrong; {:?}",
        tally.inputs,
        per_reader.join(", "),
        tally.bad_by_construction,
        tally.exit2_with_position,
        tally.accepted,
        tally.panics.len(),
        tally.hangs.len(),
        tally.wrong.len(),
        t0.elapsed()
    );
    assert!(tally.inputs >= 200, "{tally:?}");
    assert!(
        tally.panics.is_empty() && tally.hangs.is_empty() && tally.wrong.is_empty(),
        "panics: {:#?}\nhangs: {:#?}\nwrong exit or no position: {:#?}",
        tally.panics,
        tally.hangs,
        tally.wrong
    );
}

#[test]
fn devices_and_fifos_are_refused_at_once() {
    // Issue 10: reading /dev/zero or a FIFO as an input never ended.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("suite.yaml");
    let st = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(st.success());
    for args in [
        vec!["validate", "{}"],
        vec!["abi", "layout", "{}"],
        vec!["litmus", "check", "{}"],
    ] {
        for f in [Path::new("/dev/zero"), fifo.as_path()] {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let (code, err, took) = run(&args, f);
            assert_eq!(code, Some(2), "{args:?} {}: {err}", f.display());
            assert!(err.contains("only regular files are read"), "{err}");
            assert!(took < Duration::from_secs(5));
        }
    }
}

#[test]
fn absurd_job_counts_are_refused() {
    for jobs in ["0", "1000000", "-1"] {
        let (code, err, _) = run(
            &["--list".into(), format!("--jobs={jobs}"), "{}".into()],
            Path::new("x"),
        );
        assert_eq!(code, Some(2), "--jobs {jobs}: {err}");
        assert!(err.contains("--jobs is 1..=256"), "{err}");
    }
}

#[test]
fn suite_errors_name_the_field_and_what_is_allowed() {
    // Issue 17 item 4: no library advice; the field and what it allows, in the suite's terms.
    let dir = tempfile::tempdir().unwrap();
    let base = "area: selftest\ncases:\n  - id: selftest.m.{a}\n    clause: c\n    matrix: {a: [x]}\n    check: {equal: {left: 1, right: 1}}\n";
    let cases = [
        (
            base.replace("clause: c", "clause:"),
            "4:",
            "`clause` has no value; `clause:` is the spec clause",
        ),
        (
            base.replace("area: selftest\n", "area: selftest\narea: selftest\n"),
            "2:1:",
            "duplicate key: `area` is given twice",
        ),
        (
            base.replace("{a: [x]}", "{a: {rang: [0, 3]}}"),
            "5:",
            "a matrix axis is a list of values `[a, b]` or `{range: [lo, hi]}`",
        ),
        (
            base.replace("clause: c", "clause: c\n    timeout_s: .inf"),
            "5:",
            "`timeout_s:` is a number of seconds, above 0 and at most 86400",
        ),
        (
            base.replace("clause: c", "clause: c\n    isolate: 3"),
            "5:",
            "`isolate`: expected true or false",
        ),
        (
            base.replace("clause: c", "clause: c\n    requires: gpu"),
            "5:",
            "`requires:` is a list of capability names",
        ),
    ];
    for (i, (text, pos, want)) in cases.iter().enumerate() {
        let f = dir.path().join(format!("s{i}.yaml"));
        std::fs::write(&f, text).unwrap();
        let (code, err, _) = run(&["validate".into(), "{}".into()], &f);
        assert_eq!(code, Some(2), "{err}");
        let shown = format!("{}:{pos}", f.display());
        assert!(
            err.contains(&shown) && err.contains(want),
            "want `{shown}` and `{want}`:\n{err}"
        );
        for leak in ["DuplicateKeyPolicy", "Option<", "untagged enum", "Options"] {
            assert!(!err.contains(leak), "{leak}: {err}");
        }
    }
}

/// Found by the ptx_instr fuzz target (issue 10 item 4): `ptx::instr::function_names` slices a
/// multi-byte character. The PTX reader is another owner's; the input is kept here for them.
#[test]
fn ptx_instruction_reader_survives_a_multibyte_character() {
    let text = String::from_utf8_lossy(include_bytes!("data/fuzz/ptx_instr-crash-193d4065.ptx"));
    let r = std::panic::catch_unwind(|| gpucts::ptx::instr::function_names(&text));
    assert!(r.is_ok(), "function_names panicked");
}

/// `litmus tune` refuses what it cannot run before it asks for a GPU: a name outside the
/// catalogue (named in the message) and zero parameter sets, each exit 2.
#[test]
fn litmus_tune_refuses_unknown_tests_and_no_sets() {
    let (code, err, _) = run(
        &[
            "litmus".into(),
            "tune".into(),
            "MP.relaxed.gpu.inter_cta".into(),
            "MP.nope".into(),
        ],
        Path::new("x"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`MP.nope` is not a catalogue test"), "{err}");
    let (code, err, _) = run(
        &[
            "litmus".into(),
            "tune".into(),
            "--configs".into(),
            "0".into(),
        ],
        Path::new("x"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--configs must be at least 1"), "{err}");
    let (code, err, _) = run(
        &[
            "litmus".into(),
            "tune".into(),
            "--configs".into(),
            "1000000000000".into(),
        ],
        Path::new("x"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("at most 10000 parameter sets"), "{err}");
}

/// `litmus export` writes only what `litmus import` reads back: a YAML test whose name the
/// `PTX NAME` header cannot hold is refused at `name:` (exit 2), and a test with an awkward
/// but one-line name goes export | import | export unchanged.
#[test]
fn litmus_export_writes_only_what_import_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let lit_yaml = read("suites/litmus/mp-release-acquire-gpu.yaml");
    let gpucts = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_gpucts"))
            .args(args)
            .env("GPUCTS_ROOT", root())
            .output()
            .expect("gpucts starts")
    };
    for name in ["\"\"", "\"a\\nb\"", "\"a\\r\""] {
        let f = dir.path().join("bad.yaml");
        std::fs::write(
            &f,
            lit_yaml.replacen("name: ", &format!("name: {name}\n# was: "), 1),
        )
        .unwrap();
        let out = gpucts(&["litmus", "export", f.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(
            err.contains("bad.yaml:") && err.contains("test name"),
            "{name}: {err}"
        );
        assert!(out.stdout.is_empty(), "{name}");
    }
    for name in ["\"a b | c ; {\"", "\"PTX x\"", "'\"q\"'"] {
        let f = dir.path().join("ok.yaml");
        std::fs::write(
            &f,
            lit_yaml.replacen("name: ", &format!("name: {name}\n# was: "), 1),
        )
        .unwrap();
        let once = gpucts(&["litmus", "export", f.to_str().unwrap()]);
        assert_eq!(
            once.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&once.stderr)
        );
        let lit = dir.path().join("ok.litmus");
        std::fs::write(&lit, &once.stdout).unwrap();
        let back = gpucts(&["litmus", "import", lit.to_str().unwrap()]);
        assert_eq!(
            back.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&back.stderr)
        );
        let again_yaml = dir.path().join("again.yaml");
        std::fs::write(&again_yaml, &back.stdout).unwrap();
        let twice = gpucts(&["litmus", "export", again_yaml.to_str().unwrap()]);
        assert_eq!(
            String::from_utf8_lossy(&twice.stdout),
            String::from_utf8_lossy(&once.stdout),
            "{name}"
        );
    }
}
