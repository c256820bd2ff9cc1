//! DWARF as an oracle: NVRTC compiles the batch with `-G` (one `__device__` variable per type so
//! every type gets a DIE), ptxas assembles it with `-g`, and the cubin's `.debug_info` says
//! where each member lives (`DW_AT_data_member_location`; for bit fields `DW_AT_bit_size` and
//! either DWARF 4's `DW_AT_data_bit_offset` or DWARF 2's `DW_AT_bit_offset`, which NVRTC 12.9
//! emits). DWARF gives sizes but not alignments, and omits nothing we name; members are paired
//! by name.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use gimli::{AttributeValue, EndianSlice, LittleEndian, Reader as _};
use object::{Object, ObjectSection};

use super::{
    all_error, engine64, judge, EngineFn, ObservedMember, ObservedRecord, Pairing, TypeResult,
};
use crate::abi::render::render_c;
use crate::abi::types::{all_records, Dialect, TypeDef};
use crate::backend::toolchain::{ClangLang, ToolError, Toolchain};

pub(crate) const NVRTC_OPTS: &[&str] = &["--gpu-architecture=compute_90", "-std=c++17", "-G"];
pub(crate) const PTXAS_ARCH: &str = "sm_90";

pub fn source(types: &[TypeDef]) -> String {
    let mut s = render_c(types, Dialect::Cuda);
    for (i, r) in types.iter().enumerate() {
        let _ = writeln!(s, "__device__ {} gpucts_g{i};", r.name);
    }
    s
}

pub(crate) fn check_batch(tc: &Toolchain, types: &[TypeDef]) -> Result<Vec<TypeResult>, ToolError> {
    match build_cubin(tc, types) {
        Ok(cubin) => Ok(compare_cubin(types, &cubin, &engine64)),
        Err(ToolError::Failed { tool, log }) => Ok(all_error(
            types,
            &format!("{tool} rejected the batch (NVRTC -G, then ptxas -g):\n{log}"),
        )),
        Err(e) => Err(e),
    }
}

/// The C source for clang `-g`: one global of every type.
pub(crate) fn clang_source(types: &[TypeDef]) -> String {
    let mut s = render_c(types, Dialect::C);
    for (i, r) in types.iter().enumerate() {
        let _ = writeln!(s, "{} gpucts_g{i};", r.name);
    }
    s
}

/// Check a batch against clang-19's DWARF (`clang -g`, then `ptxas -g`).
pub(crate) fn check_batch_clang(
    tc: &Toolchain,
    types: &[TypeDef],
) -> Result<Vec<TypeResult>, ToolError> {
    let built = tc
        .clang_ptx(&clang_source(types), ClangLang::C, &["-g"])
        .and_then(|ptx| tc.ptxas(&ptx, PTXAS_ARCH, &["-g"]));
    match built {
        Ok(cubin) => Ok(compare_cubin(types, &cubin, &engine64)),
        Err(ToolError::Failed { tool, log }) => Ok(all_error(
            types,
            &format!("{tool} rejected the batch (clang -g, then ptxas -g):\n{log}"),
        )),
        Err(e) => Err(e),
    }
}

/// Build the batch's cubin (NVRTC `-G`, ptxas `-g`).
pub(crate) fn build_cubin(tc: &Toolchain, types: &[TypeDef]) -> Result<Vec<u8>, ToolError> {
    let ptx = tc.nvrtc(&source(types), "gpucts_abi_dwarf.cu", NVRTC_OPTS)?;
    tc.ptxas(&ptx, PTXAS_ARCH, &["-g"])
}

pub(crate) fn compare_cubin(
    types: &[TypeDef],
    cubin: &[u8],
    engine: EngineFn<'_>,
) -> Vec<TypeResult> {
    let wanted: HashSet<String> = all_records(types).iter().map(|r| r.name.clone()).collect();
    match read_records(cubin, &wanted) {
        Ok(obs) => judge(types, &obs, Pairing::ByName, "dwarf", engine),
        Err(e) => all_error(types, &format!("unreadable DWARF: {e}")),
    }
}

/// Why the DWARF of a cubin could not be read for its records.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DwarfReadError {
    #[error("not an ELF file: {0}")]
    NotElf(object::Error),
    /// gimli's reading error, as it words it.
    #[error("{0}")]
    Gimli(gimli::Error),
    /// A `DW_AT_data_member_location` form other than a constant or an expression.
    #[error("unsupported member location {0}")]
    Location(String),
    #[error("unsupported member location opcode {0:#x}")]
    Opcode(u8),
    #[error("bit field {0:?} has no byte size")]
    NoByteSize(Option<String>),
    #[error("bit field {0:?}: bit offset out of range")]
    BitOffset(Option<String>),
}

impl From<gimli::Error> for DwarfReadError {
    fn from(e: gimli::Error) -> Self {
        DwarfReadError::Gimli(e)
    }
}

/// The struct and union DIEs named in `wanted`, from an ELF's `.debug_info`.
pub(crate) fn read_records(
    elf: &[u8],
    wanted: &HashSet<String>,
) -> Result<HashMap<String, ObservedRecord>, DwarfReadError> {
    let file = object::File::parse(elf).map_err(DwarfReadError::NotElf)?;
    let load = |id: gimli::SectionId| -> Result<EndianSlice<'_, LittleEndian>, gimli::Error> {
        let data = file
            .section_by_name(id.name())
            .and_then(|s| s.data().ok())
            .unwrap_or(&[]);
        Ok(EndianSlice::new(data, LittleEndian))
    };
    let dwarf = gimli::Dwarf::load(load)?;
    let mut out = HashMap::new();
    let mut units = dwarf.units();
    while let Some(header) = units.next()? {
        let unit = dwarf.unit(header)?;
        let mut tree = unit.entries_tree(None)?;
        let root = tree.root()?;
        walk(&dwarf, &unit, root, wanted, &mut out)?;
    }
    Ok(out)
}

type R<'a> = EndianSlice<'a, LittleEndian>;

fn walk<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    unit: &gimli::Unit<R<'a>>,
    node: gimli::EntriesTreeNode<'_, '_, '_, R<'a>>,
    wanted: &HashSet<String>,
    out: &mut HashMap<String, ObservedRecord>,
) -> Result<(), DwarfReadError> {
    let e = node.entry().clone();
    let is_record = matches!(
        e.tag(),
        gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type
    );
    let name = if is_record {
        die_name(dwarf, unit, &e)
    } else {
        None
    };
    let mut children = node.children();
    match name {
        Some(n) if wanted.contains(&n) && !out.contains_key(&n) => {
            let mut rec = ObservedRecord {
                size: udata(&e, gimli::DW_AT_byte_size),
                align: None,
                members: Vec::new(),
            };
            while let Some(child) = children.next()? {
                let m = child.entry();
                if m.tag() == gimli::DW_TAG_member {
                    rec.members.push(member(dwarf, unit, m)?);
                }
            }
            out.insert(n, rec);
        }
        _ => {
            while let Some(child) = children.next()? {
                walk(dwarf, unit, child, wanted, out)?;
            }
        }
    }
    Ok(())
}

fn die_name(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &gimli::Unit<R<'_>>,
    e: &gimli::DebuggingInformationEntry<R<'_>>,
) -> Option<String> {
    let v = e.attr_value(gimli::DW_AT_name).ok()??;
    let s = dwarf.attr_string(unit, v).ok()?;
    Some(s.to_string_lossy().into_owned())
}

fn udata(e: &gimli::DebuggingInformationEntry<R<'_>>, at: gimli::DwAt) -> Option<u64> {
    e.attr_value(at).ok()??.udata_value()
}

/// `DW_AT_data_member_location`: a constant, or (DWARF 2) `DW_OP_plus_uconst N`.
fn member_location(e: &gimli::DebuggingInformationEntry<R<'_>>) -> Result<u64, DwarfReadError> {
    let Some(v) = e.attr_value(gimli::DW_AT_data_member_location)? else {
        return Ok(0); // union members may omit it
    };
    if let Some(n) = v.udata_value() {
        return Ok(n);
    }
    let mut bytes = match v {
        AttributeValue::Exprloc(x) => x.0,
        AttributeValue::Block(b) => b,
        other => return Err(DwarfReadError::Location(format!("{other:?}"))),
    };
    let op = bytes.read_u8()?;
    if op != gimli::DW_OP_plus_uconst.0 {
        return Err(DwarfReadError::Opcode(op));
    }
    Ok(bytes.read_uleb128()?)
}

fn member(
    dwarf: &gimli::Dwarf<R<'_>>,
    unit: &gimli::Unit<R<'_>>,
    m: &gimli::DebuggingInformationEntry<R<'_>>,
) -> Result<ObservedMember, DwarfReadError> {
    let name = die_name(dwarf, unit, m);
    let loc = member_location(m)?;
    let bits = match udata(m, gimli::DW_AT_bit_size) {
        None => None,
        Some(w) => {
            let abs = if let Some(b) = udata(m, gimli::DW_AT_data_bit_offset) {
                b // DWARF 4: from the start of the aggregate
            } else {
                // DWARF 2: DW_AT_bit_offset counts from the most significant bit of the
                // DW_AT_byte_size storage unit at the member location (little-endian target).
                let unit_bytes = match udata(m, gimli::DW_AT_byte_size) {
                    Some(s) => s,
                    None => type_size(unit, m)
                        .ok_or_else(|| DwarfReadError::NoByteSize(name.clone()))?,
                };
                let from_msb = udata(m, gimli::DW_AT_bit_offset).unwrap_or(0);
                (loc * 8 + unit_bytes * 8)
                    .checked_sub(from_msb + w)
                    .ok_or_else(|| DwarfReadError::BitOffset(name.clone()))?
            };
            Some((abs, w as u32))
        }
    };
    Ok(ObservedMember {
        name,
        offset: bits.map_or(loc, |(b, _)| b / 8),
        bits,
    })
}

fn type_size(
    unit: &gimli::Unit<R<'_>>,
    m: &gimli::DebuggingInformationEntry<R<'_>>,
) -> Option<u64> {
    let AttributeValue::UnitRef(off) = m.attr_value(gimli::DW_AT_type).ok()?? else {
        return None;
    };
    let t = unit.entry(off).ok()?;
    udata(&t, gimli::DW_AT_byte_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::layout::Layout;
    use crate::abi::oracle::Agreement;
    use crate::abi::type_file::parse_types;

    #[test]
    fn a_wrong_engine_answer_is_caught() {
        let tc = Toolchain::discover_system();
        crate::require!(
            tc.has(crate::capability::Capability::Nvrtc)
                && tc.has(crate::capability::Capability::Ptxas),
            "nvrtc and ptxas"
        );
        let t = parse_types(
            "types:\n  - name: S\n    members: [{name: c, type: char}, {name: v, type: float3}, {name: b, type: int, bits: 3}, {name: d, type: int, bits: 30}]\n",
            "t",
        )
        .unwrap();
        let cubin = build_cubin(&tc, &t).unwrap();
        assert_eq!(
            compare_cubin(&t, &cubin, &engine64)[0].verdict,
            Agreement::Agree
        );
        // An engine that forgot §1.2's float3 alignment (packing v at 1) must be caught.
        let wrong = |t: &TypeDef| -> Result<Layout, crate::abi::layout::LayoutError> {
            let mut l = engine64(t)?;
            l.members[1].offset = 1;
            Ok(l)
        };
        let Agreement::Mismatch(m) = &compare_cubin(&t, &cubin, &wrong)[0].verdict else {
            panic!("expected a mismatch")
        };
        assert!(m.contains("member `v`: engine offset 1, oracle 4"), "{m}");
        // And one that let the 30-bit field share b's int (bits 3..33 cross the unit).
        let wrong = |t: &TypeDef| -> Result<Layout, crate::abi::layout::LayoutError> {
            let mut l = engine64(t)?;
            l.members[3].bit_offset = Some(16 * 8 + 3);
            Ok(l)
        };
        let Agreement::Mismatch(m) = &compare_cubin(&t, &cubin, &wrong)[0].verdict else {
            panic!("expected a mismatch")
        };
        assert!(
            m.contains("bit field `d`: engine bit 131 width 30, oracle bit 160"),
            "{m}"
        );
    }

    /// NVRTC 12.9 `-G` describes a bit field that exactly fills an aligned storage unit of its
    /// type as a plain member (no `DW_AT_bit_size`), while clang-19 `-g` keeps the bit-field
    /// attributes. The bits are the same, so the layout comparison accepts it; recorded here
    /// because a debugger sees an ordinary member.
    #[test]
    fn nvrtc_describes_unit_filling_bit_fields_as_plain_members() {
        let tc = Toolchain::discover_system();
        let caps = [
            crate::capability::Capability::Nvrtc,
            crate::capability::Capability::Ptxas,
        ];
        crate::require!(caps.iter().all(|c| tc.has(*c)), "nvrtc and ptxas");
        let t = parse_types(
            "types:\n  - name: W\n    members: [{name: a, type: char, bits: 8}, {name: b, type: short, bits: 16}, {name: c, type: int, bits: 3}]\n",
            "t",
        )
        .unwrap();
        let wanted: HashSet<String> = ["W".to_string()].into();
        let nv = read_records(&build_cubin(&tc, &t).unwrap(), &wanted).unwrap();
        let bits: Vec<_> = nv["W"].members.iter().map(|m| m.bits).collect();
        assert_eq!(bits, vec![None, None, Some((32, 3))]);
        if tc.has(crate::capability::Capability::Clang) {
            let ptx = tc
                .clang_ptx(&clang_source(&t), ClangLang::C, &["-g"])
                .unwrap();
            let cubin = tc.ptxas(&ptx, PTXAS_ARCH, &["-g"]).unwrap();
            let cl = read_records(&cubin, &wanted).unwrap();
            let bits: Vec<_> = cl["W"].members.iter().map(|m| m.bits).collect();
            assert_eq!(bits, vec![Some((0, 8)), Some((16, 16)), Some((32, 3))]);
        } else {
            crate::testkit::tool_missing(crate::testkit::Need::Tool, "clang");
        }
    }
}
