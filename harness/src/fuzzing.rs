//! One entry point per reader of hand-written or generated input, for fuzzing (issue 10 item 4).
//! Each takes any bytes and must return without panicking, in bounded time and memory:
//! whatever the input, the reader answers with a value or an error. The cargo-fuzz targets in
//! `fuzz/` (long libFuzzer runs, `bash ci/fuzz`) and the bounded mutation test that runs in
//! `cargo test` (`harness/tests/fuzz_smoke.rs`) call the same functions, so both exercise
//! the same code. Nothing here is used by a run.

use std::path::Path;

/// A fuzz target: any bytes in, no panic out.
pub(crate) type Target = fn(&[u8]);

/// The targets, by the names the fuzz crate and the smoke test use.
pub const TARGETS: &[(&str, Target)] = &[
    ("suite_yaml", suite_yaml),
    ("waivers", waivers),
    ("abi_types", abi_types),
    ("ptx_module", ptx_module),
    ("ptx_instr", ptx_instr),
    ("litmus_yaml", litmus_yaml),
    ("dat3m", dat3m),
    ("dwarf_check", dwarf_check),
    ("dwarf_frame", dwarf_frame),
    ("prebuilt_manifest", prebuilt_manifest),
    ("clause_catalogue", clause_catalogue),
    ("ptx_exec", ptx_exec),
    ("litmus_count", litmus_count),
    ("producer_file", producer_file),
];

/// A `--producer-file` (compilers described by the user): producers or an error at
/// `file:line:column`; no command is run.
pub fn producer_file(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = crate::backend::producer::user::parse_only(text);
    }
}

/// The clause catalogue (`suites/clauses/catalogue.yaml`): clauses or an error at
/// `file:line:column`; then a citation looked up and coverage joined over a few case ids, so
/// every glob is matched.
pub fn clause_catalogue(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = crate::clauses::Catalogue::parse(Path::new("catalogue.yaml"), text) {
        let first = c
            .clauses()
            .first()
            .map(|k| k.id.clone())
            .unwrap_or_default();
        let _ = c.check_citation(&format!("{first} (detail)"));
        let cases = [
            ("abi.params.clang.ptr.return", first.as_str()),
            ("gpudirect.kmod.pin_unpin_aligned", "gpudirect-rdma §9 none"),
            ("", ""),
        ];
        let verdicts = [(
            "abi.params.clang.ptr.return".to_string(),
            "pass".to_string(),
        )]
        .into_iter()
        .collect();
        let _ = crate::clauses::coverage(&c, cases, Some(&verdicts));
    }
}

/// A prebuilt store's manifest.json (`gpucts --prebuilt DIR`): a manifest or an error at
/// `manifest.json:line:column`.
pub fn prebuilt_manifest(data: &[u8]) {
    let _ = crate::backend::toolchain::prebuilt::parse_manifest(&String::from_utf8_lossy(data));
}

/// Suite YAML: cases or `file:line:column` errors; then what `validate` checks of each case's
/// content (files, names) against the repository.
pub fn suite_yaml(data: &[u8]) {
    let areas = crate::areas::all();
    // A small expansion limit keeps each input cheap; the limit itself is what is tested.
    let limits = crate::suite::Limits {
        max_cases_per_entry: 1000,
    };
    if let Ok(s) = crate::suite::load_bytes(Path::new("fuzz.yaml"), data, &areas, &limits) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let _ = crate::suite::validate_cases(&[s], &root);
    }
}

/// Waiver lists: parse, compile the globs, match them against an id.
pub fn waivers(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(w) = crate::waivers::Waivers::parse(Path::new("fuzz.yaml"), text) {
        let caps = [crate::capability::Capability::Clang];
        if let Some(a) = w.find("abi.params.clang.u8", &caps, &Default::default()) {
            let failure = crate::outcome::CaseStatus::fail_detail("a", "b: [rule]", "c\nd");
            let _ = a.unexcused(&failure);
        }
    }
}

/// ABI type descriptions (`abi layout`): parse, then lay out every record.
pub fn abi_types(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::abi::type_file::layout_text_json(text, "fuzz.yaml");
}

/// The PTX module reader.
pub fn ptx_module(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::ptx::module::PtxModule::parse(text);
}

/// The PTX instruction reader: one statement, and the bodies of the functions a text declares.
pub fn ptx_instr(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = crate::ptx::instr::parse_instruction(text, 1);
    for name in crate::ptx::instr::function_names(text).iter().take(8) {
        let _ = crate::ptx::instr::function_body(text, name);
    }
}

/// The most candidate executions a fuzzed litmus test may ask the model for: small, so each
/// input is cheap; the guard that refuses more is what is exercised.
const FUZZ_MAX_CANDIDATES: u128 = 20_000;

/// Litmus tests in YAML: parse, validate, check against the model (its state-space guard
/// must refuse what it cannot finish).
pub fn litmus_yaml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = crate::atomics::litmus::from_yaml(text) {
        let opts = crate::atomics::model::Options {
            max_candidates: FUZZ_MAX_CANDIDATES,
            ..Default::default()
        };
        let _ = crate::atomics::model::try_check_with(&t, &opts);
    }
}

/// Dat3M `.litmus` tests: import, and `export | import | export` is stable (issue 10: the
/// export wrote names its own import rejected).
pub fn dat3m(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = crate::atomics::litmus::dat3m::import(text) {
        let out = crate::atomics::litmus::dat3m::export(&t);
        match crate::atomics::litmus::dat3m::import(&out) {
            Ok(again) => assert_eq!(
                crate::atomics::litmus::dat3m::export(&again),
                out,
                "export | import | export is stable"
            ),
            Err(e) => panic!("export wrote a test import rejects: {e}\n{out}"),
        }
    }
}

/// `dwarf check` input: PTX text or ELF bytes (no toolchain: the in-process checks only).
pub fn dwarf_check(data: &[u8]) {
    let _ = crate::dwarf::check::check_bytes("fuzz", data, None);
}

/// The back end's `.debug_frame` reader and the DWARF 2 forms reader on arbitrary bytes (the
/// ELF path of `dwarf_check` reaches them only through a well-formed cubin).
pub fn dwarf_frame(data: &[u8]) {
    let _ = crate::dwarf::frame::check(&crate::dwarf::frame::Frames {
        bytes: data,
        relocations: std::collections::BTreeMap::from([(20, "k".to_string())]),
        code: std::collections::BTreeMap::from([("k".to_string(), 0x580)]),
        address_size: 8,
    });
    let (info, abbrev) = data.split_at(data.len() / 2);
    let _ = crate::dwarf::forms::dwarf2_departures(info, abbrev);
}

/// Functions run per input (the first of the text's, as `ptx_instr` reads them).
const EXEC_FUNCTIONS: usize = 8;
/// Stops one function may reach (each `call` is one; a producer's caller makes one or two).
const EXEC_STOPS: usize = 8;

/// The PTX interpreter (`ptx::exec`): each function of the text run from its first statement
/// through every `call` it reaches (the call's return values given bytes of the input, as a
/// callee of another producer would), its own parameters set from the prototype; then its
/// parameters and the variables it declares read back. A run ends with a stop or an error.
pub fn ptx_exec(data: &[u8]) {
    use crate::ptx::exec::{Machine, MemSpace, Stop};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let module = crate::ptx::module::PtxModule::parse(text).ok();
    let fill = |n: usize| -> Vec<u8> { data.iter().copied().cycle().take(n.min(64)).collect() };
    for name in crate::ptx::instr::function_names(text)
        .iter()
        .take(EXEC_FUNCTIONS)
    {
        let Ok(mut m) = Machine::new(text, name) else {
            continue;
        };
        let params = module
            .iter()
            .flat_map(|md| md.functions.iter().filter(|f| &f.name == name))
            .flat_map(|f| f.params.iter().chain(&f.returns));
        for p in params {
            let bytes = p.array_len().unwrap_or(8).min(64) as usize;
            m.set_param(&p.name, &fill(bytes));
        }
        let _ = m.place(MemSpace::Shared, &fill(16));
        for _ in 0..EXEC_STOPS {
            match m.run() {
                Ok(Stop::Call { rets, args, .. }) => {
                    for a in &args {
                        let _ = m.param(a);
                    }
                    for r in &rets {
                        m.set_param(r, &fill(8));
                    }
                }
                Ok(Stop::Ret { .. }) | Err(_) => break,
            }
        }
        if let Some((space, addr)) = m.symbol(name) {
            let _ = m.read(space, addr, 8);
        }
    }
}

/// Device-side outcome counting's outcome space (`atomics::gpu::count`), derived from a litmus
/// test's text (Dat3M `.litmus` or YAML): the space over the condition's terms, every counter
/// index decoded back to values, counters and an overflow log (words of the input) decoded
/// into a histogram, and the counting kernel generated for the default geometry.
pub fn litmus_count(data: &[u8]) {
    use crate::atomics::gpu::{count::OutcomeSpace, kernel, layout};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let test = match crate::atomics::litmus::dat3m::import(text) {
        Ok(t) => t,
        Err(_) => match crate::atomics::litmus::from_yaml(text) {
            Ok(t) => t,
            Err(_) => return,
        },
    };
    let mut terms = std::collections::BTreeSet::new();
    test.condition.prop.terms(&mut terms);
    let terms: Vec<_> = terms.into_iter().collect();
    let space = OutcomeSpace::new(&test, &terms);
    for i in 0..space.size {
        let _ = space.outcome(i);
    }
    let words: Vec<u32> = data
        .chunks(4)
        .map(|c| c.iter().rev().fold(0u32, |w, b| (w << 8) | u32::from(*b)))
        .collect();
    let head: Vec<u32> = words
        .iter()
        .copied()
        .cycle()
        .take(space.head_words())
        .map(|w| w & 0xff)
        .collect();
    let mut histogram = layout::Histogram::new();
    let _ = space.decode(&head, &words, &mut histogram);
    if let Ok(g) = layout::Geometry::new(&test, &layout::StressParams::default()) {
        let _ = kernel::generate_counting(&test, &g, &space);
    }
}
