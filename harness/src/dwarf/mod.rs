//! The `dwarf` area: debug information (ptx-interop 13.2 ch. 5–6).

use serde::Deserialize;

use crate::area::{BatchCache, CaseContext, Check};
use crate::capability::Capability;
use crate::cubin::Cubin;
use crate::outcome::CaseStatus;

/// The `check:` vocabulary of `suites/dwarf.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum DwarfCheck {
    /// §5.1: the backend builds `.debug_line` from `.file`/`.loc`. A kernel carrying `.loc`
    /// directives for `lines` is assembled; every line must come back from the cubin's line
    /// program, attributed to `file`, at non-decreasing addresses.
    LineTable { file: String, lines: Vec<u32> },
    /// §5.1–§5.2: gpucts's own DWARF for the kernel of random type `seed` survives ptxas `-g`
    /// (see [`roundtrip`]); kernels are assembled in batches of [`roundtrip::BATCH`].
    RoundTrip { seed: u64 },
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
        Err(e) => return CaseStatus::fail("a .debug_line section built from .file/.loc", e),
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
    static CACHE: std::sync::OnceLock<BatchCache<u64, Result<roundtrip::Verdicts, String>>> =
        std::sync::OnceLock::new();
    let batch = seed / roundtrip::BATCH;
    let slot = CACHE
        .get_or_init(BatchCache::new)
        .get_or_compute(&batch, || roundtrip::run_batch(ctx.toolchain, batch));
    match slot.get() {
        Some(Ok(v)) => match v.get(&seed) {
            Some(Ok(note)) => CaseStatus::pass_with(note.clone()),
            Some(Err((e, o))) => CaseStatus::fail(e.clone(), o.clone()),
            None => CaseStatus::error(format!("seed {seed} missing from its batch")),
        },
        Some(Err(e)) => CaseStatus::fail("the batch assembles and reads back", e.clone()),
        None => CaseStatus::error("batch not computed"),
    }
}

impl Check for DwarfCheck {
    fn requires(&self) -> Vec<Capability> {
        vec![Capability::Ptxas]
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            DwarfCheck::LineTable { file, lines } => line_table(ctx, file, lines),
            DwarfCheck::RoundTrip { seed } => round_trip(ctx, *seed),
        }
    }
}

pub mod check;
pub mod elf;
pub mod emit;
pub mod ptxscan;
pub mod read;
pub mod roundtrip;
