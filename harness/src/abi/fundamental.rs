//! ptx-interop 13.2 §1.1: the fundamental PTX types' sizes and alignments, checked against what
//! ptxas does with a global of each type. The expected numbers are the spec table's, written in
//! the suite; the observation is the cubin's symbol size and section alignment.

use crate::area::CaseContext;
use crate::cubin::Cubin;
use crate::outcome::CaseStatus;

/// PTX type names the table lists; anything else in a suite is a suite error.
pub(super) const TABLE_TYPES: &[&str] = &[
    "b8", "b16", "b32", "b64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "f32",
    "f64",
];

pub fn check(ctx: &CaseContext, ptx_type: &str, size: u64, align: u64) -> CaseStatus {
    if !TABLE_TYPES.contains(&ptx_type) {
        return CaseStatus::error(format!("`{ptx_type}` is not a type of the §1.1 table"));
    }
    // Two elements, so the symbol size shows the element size including any padding, and a
    // lone symbol in .nv.global, so the section alignment is the type's.
    let ptx = format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .global .{ptx_type} gpucts_probe[2];\n"
    );
    let cubin = match ctx.toolchain.ptxas(&ptx, "sm_90", &[]) {
        Ok(c) => c,
        Err(e) => return CaseStatus::error(e),
    };
    let elf = match Cubin::parse(&cubin) {
        Ok(e) => e,
        Err(e) => return CaseStatus::error(e.to_string()),
    };
    let Some(sym) = elf.symbol("gpucts_probe") else {
        return CaseStatus::error("ptxas dropped the probe symbol");
    };
    let expected = format!("size {size}, align {align}");
    let observed = format!("size {}, align {}", sym.size / 2, sym.section_align);
    if sym.size == 2 * size && sym.section_align == align {
        CaseStatus::pass()
    } else {
        CaseStatus::fail_detail(
            expected,
            observed,
            format!(
                "ptxas placed `.global .{ptx_type} x[2]` in {} with {} bytes",
                sym.section, sym.size
            ),
        )
    }
}
