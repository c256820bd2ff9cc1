//! The `dwarf` area: debug information (ptx-interop 13.2 ch. 5–6).

use serde::Deserialize;

use crate::area::{BatchCache, CaseContext, Check};
use crate::capability::Capability;
use crate::cubin::Cubin;
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/dwarf.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum DwarfCheck {
    /// §5.1: the backend builds `.debug_line` from `.file`/`.loc`. A kernel carrying `.loc`
    /// directives for `lines` is assembled; every line must come back from the cubin's line
    /// program, attributed to `file`, at non-decreasing addresses.
    LineTable { file: String, lines: Vec<u32> },
    /// §5.1–§5.2: gpucts's own DWARF for the kernel of random type `seed` survives ptxas `-g`
    /// (see [`roundtrip`]); kernels are assembled in batches of [`roundtrip::BATCH`].
    RoundTrip { seed: u64 },
    /// §5.1–§5.2: `gpucts dwarf check` on a PTX file of the repository; `findings` lists a
    /// substring of each finding expected, in order (none: the file must be clean). Extra or
    /// missing findings fail.
    CheckFile {
        file: String,
        #[serde(default)]
        findings: Vec<String>,
    },
    /// §5.1: a PTX file of the repository assembles with ptxas `-g`.
    Assembles { file: String },
    /// §5.1–§5.2: a producer's debug PTX for a batch of random types passes the check (PTX
    /// and the cubin ptxas `-g` builds from it).
    Producer {
        producer: producers::DebugProducer,
        batch: u64,
    },
    /// On a GPU: the driver JIT loads the producer's debug PTX for a small kernel, which
    /// still computes the right result.
    JitLoad { producer: producers::DebugProducer },
    /// §5.2: the producer's DWARF for variables in `storage` (code, surface, texture,
    /// sampler) gives that storage's address class (see [`classes`]).
    AddressClass {
        producer: producers::DebugProducer,
        storage: classes::Storage,
    },
}

fn line_table(ctx: &CaseContext, file: &str, lines: &[u32]) -> CaseStatus {
    if lines.is_empty() {
        return CaseStatus::error("line_table needs at least one line");
    }
    let mut body = String::new();
    for (i, line) in lines.iter().enumerate() {
        body += &format!(
            "  .loc 1 {line} 1\n  add.u32 %r1, %r1, {};\n  st.global.u32 [%rd1], %r1;\n",
            i + 1
        );
    }
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.file 1 \"{file}\"\n\
         .visible .entry gpucts_k(.param .u64 p) {{\n  .reg .b64 %rd<2>; .reg .b32 %r<2>;\n\
         ld.param.u64 %rd1, [p];\n  mov.u32 %r1, 0;\n{body}  ret;\n}}\n"
    );
    let cubin = match ctx.toolchain.ptxas(&ptx, "sm_90", &["-lineinfo", "-O0"]) {
        Ok(c) => c,
        Err(e) => return CaseStatus::error(e),
    };
    let rows = match Cubin::parse(&cubin).and_then(|c| c.line_rows()) {
        Ok(r) => r,
        Err(e) => {
            return CaseStatus::fail("a .debug_line section built from .file/.loc", e.to_string())
        }
    };
    let seen: Vec<u64> = rows
        .iter()
        .filter(|r| r.file.ends_with(file))
        .map(|r| r.line)
        .collect();
    let missing: Vec<u32> = lines
        .iter()
        .copied()
        .filter(|l| !seen.contains(&u64::from(*l)))
        .collect();
    let monotonic = rows.windows(2).all(|w| w[0].address <= w[1].address);
    if missing.is_empty() && monotonic {
        CaseStatus::pass()
    } else {
        CaseStatus::fail_detail(
            format!("lines {lines:?} of {file}, at non-decreasing addresses"),
            format!("lines {seen:?}"),
            format!("missing {missing:?}; rows: {rows:?}"),
        )
    }
}

fn round_trip(ctx: &CaseContext, seed: u64) -> CaseStatus {
    type Cache = BatchCache<u64, Result<roundtrip::Verdicts, roundtrip::BatchError>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let batch = seed / roundtrip::BATCH;
    let slot = CACHE
        .get_or_init(BatchCache::new)
        .get_or_compute(ctx, &batch, || roundtrip::run_batch(ctx.toolchain, batch));
    match slot.get() {
        Some(Ok(v)) => match v.get(&seed) {
            Some(Ok(note)) => CaseStatus::pass_with(note.clone()),
            Some(Err((e, o))) => CaseStatus::fail(e.clone(), o.clone()),
            None => CaseStatus::error(format!("seed {seed} missing from its batch")),
        },
        Some(Err(e)) => CaseStatus::fail("the batch assembles and reads back", e.to_string()),
        None => CaseStatus::error("batch not computed"),
    }
}

fn check_file(ctx: &CaseContext, file: &str, want: &[String]) -> CaseStatus {
    let path = ctx.root.join(file);
    let r = match check::check_path(&path, Some(ctx.toolchain)) {
        Ok(r) => r,
        Err(e) => return CaseStatus::fail("a readable file", e.to_string()),
    };
    let got: Vec<String> = r.findings.iter().map(|f| f.to_string()).collect();
    let matches =
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.contains(w.as_str()));
    if matches {
        CaseStatus::pass_with(format!("{} findings as expected", got.len()))
    } else {
        CaseStatus::fail_detail(
            if want.is_empty() {
                "no findings".to_string()
            } else {
                format!("findings containing {want:?}")
            },
            got.join("\n"),
            r.notes.join("; "),
        )
    }
}

fn assembles(ctx: &CaseContext, file: &str) -> CaseStatus {
    let text = match std::fs::read_to_string(ctx.root.join(file)) {
        Ok(t) => t,
        Err(e) => return CaseStatus::error(format!("{file}: {e}")),
    };
    match ctx.toolchain.ptxas(&text, "sm_90", &["-g"]) {
        Ok(c) => match elf::Elf::parse(&c) {
            Ok(e) if e.section(".debug_info").is_some() && e.section(".debug_line").is_some() => {
                CaseStatus::pass_with("ptxas -g: a cubin with .debug_info and .debug_line")
            }
            Ok(_) => CaseStatus::fail(
                "a cubin with .debug_info and .debug_line",
                "sections missing",
            ),
            Err(e) => CaseStatus::fail("a CUDA ELF", e.to_string()),
        },
        Err(e) => CaseStatus::fail("ptxas -g assembles the file", e.to_string()),
    }
}

fn producer(ctx: &CaseContext, p: producers::DebugProducer, batch: u64) -> CaseStatus {
    match producers::check_batch(ctx.toolchain, p, batch) {
        Ok(note) => CaseStatus::pass_with(note),
        Err(findings) => CaseStatus::fail(
            "no findings from `gpucts dwarf check`",
            findings.to_string(),
        ),
    }
}

impl Check for DwarfCheck {
    fn requires(&self) -> Vec<Capability> {
        match self {
            DwarfCheck::Producer { producer, .. } => producer.requires(),
            DwarfCheck::AddressClass { producer, .. } => producer.producer().requires(),
            DwarfCheck::JitLoad { producer } => {
                let mut v = producer.requires();
                v.push(Capability::Gpu);
                v
            }
            _ => vec![Capability::Ptxas],
        }
    }

    fn isolate(&self) -> bool {
        matches!(self, DwarfCheck::JitLoad { .. })
    }

    /// Refused before the run (issue 10): a file that does not read, a line table without
    /// lines or with a file name that cannot stand in a PTX `.file` string.
    fn validate(
        &self,
        ctx: &crate::area::ValidateContext,
    ) -> Result<(), Vec<crate::area::CaseError>> {
        use crate::area::CaseError;
        let mut errors = Vec::new();
        match self {
            DwarfCheck::LineTable { file, lines } => {
                if lines.is_empty() {
                    errors.push(CaseError::about(
                        "lines",
                        "`lines: []`; `lines:` lists at least one line number",
                    ));
                }
                if file.is_empty() || file.contains(['"', '\\', '\n']) {
                    errors.push(CaseError::new(
                        "file",
                        file.as_str(),
                        format!("`file: {file:?}` cannot be a PTX `.file` name; `file:` is a non-empty name without quotes or backslashes"),
                    ));
                }
            }
            DwarfCheck::CheckFile { file, .. } | DwarfCheck::Assembles { file } => {
                errors.extend(crate::area::readable_file(ctx, "file", file));
            }
            DwarfCheck::RoundTrip { seed } => {
                errors.extend(crate::area::seed_in_range("seed", *seed));
            }
            DwarfCheck::Producer { batch, .. }
                if batch.saturating_mul(producers::BATCH) >= crate::area::MAX_SEED =>
            {
                errors.push(CaseError::new(
                    "batch",
                    batch.to_string(),
                    format!(
                        "`batch: {batch}` is too large; `batch:` is below 2^48 / {}",
                        producers::BATCH
                    ),
                ));
            }
            _ => {}
        }
        crate::area::problems(errors)
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            DwarfCheck::LineTable { file, lines } => line_table(ctx, file, lines),
            DwarfCheck::RoundTrip { seed } => round_trip(ctx, *seed),
            DwarfCheck::CheckFile { file, findings } => check_file(ctx, file, findings),
            DwarfCheck::Assembles { file } => assembles(ctx, file),
            DwarfCheck::Producer { producer: p, batch } => producer(ctx, *p, *batch),
            DwarfCheck::JitLoad { producer: p } => gpu::jit_load(ctx, *p),
            DwarfCheck::AddressClass {
                producer: p,
                storage,
            } => match classes::check(ctx.toolchain, *p, *storage) {
                Ok(note) => CaseStatus::pass_with(note),
                Err(problems) => CaseStatus::fail(
                    format!(
                        "DW_AT_address_class {} ({}) in {}'s DWARF",
                        storage.class(),
                        storage.class_name(),
                        p.name()
                    ),
                    problems,
                ),
            },
        }
    }
}

pub mod check;
pub mod classes;
pub mod elf;
pub mod emit;
pub mod forms;
pub mod frame;
mod gpu;
pub mod nvvm_ir;
pub mod producers;
pub mod ptxscan;
pub mod read;
pub mod roundtrip;

#[cfg(test)]
mod tests {
    use super::*;

    /// The findings `suites/dwarf.yaml` expects of a `check_file` case on `file`.
    fn expected(file: &str) -> Vec<String> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let text = std::fs::read_to_string(root.join("suites/dwarf.yaml")).unwrap();
        #[derive(serde::Deserialize)]
        struct Suite {
            cases: Vec<serde_json::Value>,
        }
        let suite: Suite = crate::suite::from_yaml(&text).unwrap();
        suite
            .cases
            .iter()
            .filter_map(|c| c.pointer("/check/check_file"))
            .find(|c| c["file"] == file)
            .map(|c| {
                c["findings"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_else(|| panic!("no check_file case for {file}"))
    }

    fn findings_of(path: &std::path::Path) -> Vec<String> {
        check::check_path(path, None)
            .unwrap()
            .findings
            .iter()
            .map(|f| f.to_string())
            .collect()
    }

    fn matches(got: &[String], want: &[String]) -> bool {
        got.len() == want.len() && got.iter().zip(want).all(|(g, w)| g.contains(w.as_str()))
    }

    /// `dwarf.negative.class-out-of-range.check` names the out-of-range defect: the file's
    /// findings match, and the same file with the class turned into a valid code of the wrong
    /// state space (8, `.shared`, on a `.global` variable) gives a finding that does not.
    #[test]
    fn out_of_range_expectation_names_its_defect() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let file = "ptx-corpus/dwarf/negative/class-out-of-range.ptx";
        let want = expected(file);
        let path = root.join(file);
        assert!(
            matches(&findings_of(&path), &want),
            "{:?}",
            findings_of(&path)
        );
        // The other defect, in the same file at the same DIE.
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\n.b8 13, 0\n").count(), 1);
        let dir = tempfile::tempdir().unwrap();
        let wrong = dir.path().join("negative/class-out-of-range.ptx");
        std::fs::create_dir_all(wrong.parent().unwrap()).unwrap();
        std::fs::write(&wrong, text.replace("\n.b8 13, 0\n", "\n.b8 8, 0\n")).unwrap();
        let got = findings_of(&wrong);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].contains("ADDR_shared_space"), "{got:?}");
        assert!(!matches(&got, &want), "{got:?} matches {want:?}");
        // And the wrong-state-space case's own expectation does not match the out-of-range one.
        let shared = expected("ptx-corpus/dwarf/negative/class-shared-on-global.ptx");
        assert!(!matches(&findings_of(&path), &shared));
    }
}
