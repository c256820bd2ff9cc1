//! ptx-interop 13.2 §5.1: the producer's `.debug_info` and `.debug_abbrev` are "standard
//! DWARF2 sections". Two things make a section DWARF 2 and not a later version: the unit
//! header's version field is 2, and every attribute form is one DWARF 2 defines (DWARF 2
//! §7.5.4, Figure 21: `DW_FORM_addr` 0x01 through `DW_FORM_indirect` 0x16; DWARF 4 added
//! 0x17..0x20 — `sec_offset`, `exprloc`, `flag_present`, `ref_sig8` — and DWARF 5 more).
//! ptxas enforces the same line: it rejects `DW_FORM_exprloc` in a producer section ("Error in
//! get_form_value default").

use std::collections::BTreeMap;

use gimli::{DebugAbbrev, DebugInfo, LittleEndian};

/// The last attribute form of DWARF 2 (`DW_FORM_indirect`).
pub(crate) const DWARF2_LAST_FORM: u16 = 0x16;

/// One departure from DWARF 2: where in `.debug_info` (the unit or the first DIE using it),
/// and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotDwarf2 {
    pub offset: u64,
    pub message: String,
}

/// The departures from DWARF 2 in a producer's `.debug_info` (with its `.debug_abbrev`): a
/// unit whose version is not 2, and each (attribute, form) pair with a later form, reported
/// once at the first DIE that uses it. A section that does not parse gives what was found
/// before the error (the DIE reader reports the error itself).
pub(crate) fn dwarf2_departures(info: &[u8], abbrev: &[u8]) -> Vec<NotDwarf2> {
    let mut out = Vec::new();
    let debug_abbrev = DebugAbbrev::new(abbrev, LittleEndian);
    let mut units = DebugInfo::new(info, LittleEndian).units();
    // (attribute, form) -> first DIE offset.
    let mut late: BTreeMap<(u16, u16), u64> = BTreeMap::new();
    while let Ok(Some(header)) = units.next() {
        let uoff = header
            .offset()
            .as_debug_info_offset()
            .map_or(0, |o| o.0 as u64);
        if header.version() != 2 {
            out.push(NotDwarf2 {
                offset: uoff,
                message: format!(
                    "unit at {uoff:#x} is DWARF version {}; the producer's sections are DWARF 2",
                    header.version()
                ),
            });
        }
        let Ok(abbrevs) = header.abbreviations(&debug_abbrev) else {
            continue;
        };
        let Ok(mut raw) = header.entries_raw(&abbrevs, None) else {
            continue;
        };
        while !raw.is_empty() {
            let at = raw
                .next_offset()
                .to_debug_info_offset(&header)
                .map_or(uoff, |o| o.0 as u64);
            let Ok(a) = raw.read_abbreviation() else {
                break;
            };
            let Some(a) = a else { continue };
            let mut readable = true;
            for spec in a.attributes() {
                if spec.form().0 > DWARF2_LAST_FORM {
                    late.entry((spec.name().0, spec.form().0)).or_insert(at);
                }
                if raw.read_attribute(*spec).is_err() {
                    readable = false;
                    break;
                }
            }
            if !readable {
                break;
            }
        }
    }
    for ((name, form), offset) in late {
        let attr = gimli::DwAt(name);
        let form = gimli::DwForm(form);
        out.push(NotDwarf2 {
            offset,
            message: format!(
                "{} uses {} ({:#x}), a form DWARF 2 does not have (its forms end at DW_FORM_indirect, 0x16)",
                attr.static_string().unwrap_or("an attribute"),
                form.static_string().unwrap_or("a form"),
                form.0
            ),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::write::{AttributeValue, DwarfUnit, EndianVec, Expression, Sections};
    use gimli::{Encoding, Format};

    /// A one-variable unit written by gimli's writer (an independent DWARF encoder) in
    /// `version`, the variable's location an expression: as DWARF 2 writes it (a block, the
    /// writer picks `DW_FORM_block1`) below version 4, as `DW_FORM_exprloc` from 4 on.
    fn unit(version: u16) -> (Vec<u8>, Vec<u8>) {
        let encoding = Encoding {
            format: Format::Dwarf32,
            version,
            address_size: 8,
        };
        let mut dwarf = DwarfUnit::new(encoding);
        let root = dwarf.unit.root();
        let var = dwarf.unit.add(root, gimli::DW_TAG_variable);
        let mut e = Expression::new();
        e.op_addr(gimli::write::Address::Constant(0x10));
        let location = if version < 4 {
            // DW_OP_addr 0x10 as the bytes DWARF 2 §7.7.1 gives it.
            let mut b = vec![gimli::constants::DW_OP_addr.0];
            b.extend_from_slice(&0x10u64.to_le_bytes());
            AttributeValue::Block(b)
        } else {
            AttributeValue::Exprloc(e)
        };
        dwarf.unit.get_mut(var).set(gimli::DW_AT_location, location);
        dwarf
            .unit
            .get_mut(var)
            .set(gimli::DW_AT_name, AttributeValue::String(b"x".to_vec()));
        let mut sections = Sections::new(EndianVec::new(LittleEndian));
        dwarf.write(&mut sections).unwrap();
        (
            sections.debug_info.slice().to_vec(),
            sections.debug_abbrev.slice().to_vec(),
        )
    }

    #[test]
    fn a_dwarf2_unit_has_no_departures() {
        let (info, abbrev) = unit(2);
        assert_eq!(dwarf2_departures(&info, &abbrev), []);
    }

    #[test]
    fn a_dwarf4_unit_is_named_by_its_version_and_its_exprloc() {
        let (info, abbrev) = unit(4);
        let d = dwarf2_departures(&info, &abbrev);
        assert!(d[0].message.contains("version 4"), "{d:?}");
        assert_eq!(d[0].offset, 0);
        assert!(
            d.iter().any(|x| x
                .message
                .contains("DW_AT_location uses DW_FORM_exprloc (0x18)")),
            "{d:?}"
        );
        // The DIE that uses the form, after the 11-byte unit header and the root DIE.
        assert!(d.iter().all(|x| x.offset < info.len() as u64));
    }

    // A section cut anywhere gives a subset of what the whole one gives: what was read before
    // the cut, never a panic or an invented departure.
    #[test]
    fn a_truncated_section_gives_a_subset() {
        let (info, abbrev) = unit(4);
        let whole = dwarf2_departures(&info, &abbrev);
        for n in 0..info.len() {
            for d in dwarf2_departures(&info[..n], &abbrev) {
                assert!(whole.contains(&d), "cut at {n}: {d:?}");
            }
            for d in dwarf2_departures(&info, &abbrev[..n.min(abbrev.len())]) {
                assert!(whole.contains(&d), "abbrev cut at {n}: {d:?}");
            }
        }
    }
}
