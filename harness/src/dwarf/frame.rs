//! ptx-interop 13.2 §5.1: "the backend also generates the `.debug_frame` section". In a CUDA
//! ELF object with debug information, the back end's `.debug_frame` must be there, read as
//! DWARF call frame information (every CIE, FDE and call-frame instruction parses), and
//! describe the code: each function with code has an FDE whose initial location is relocated
//! to that function's symbol and whose range lies inside the function's `.text.<name>`
//! section. The cubin's relocations (`.rela.debug_frame`) name the functions, because the
//! FDE's own address field holds 0 until the object is loaded.
//!
//! The reader is written here, from DWARF 3 §6.4.1 and §7.23 (entry layout and instruction
//! encodings), because gimli's call-frame reader refuses registers above `u16` and the CUDA
//! back end numbers its registers with 32-bit ULEB128 values (ptxas 12.9 writes, e.g.,
//! `DW_CFA_def_cfa` with register 0x5000001). ptxas writes the 64-bit DWARF format with CIE
//! version 3. Every read is bounded by the section.

use std::collections::{BTreeMap, HashMap};

use object::{Object, ObjectSection, ObjectSymbol};

use super::elf::Elf;

/// What the back end's `.debug_frame` said.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrameReport {
    /// Each problem, with its position (`.debug_frame+0x..`) when it has one.
    pub problems: Vec<(Option<u64>, String)>,
    pub cies: usize,
    /// Function symbol (or `?` when the FDE's location is not relocated to one) -> FDEs.
    pub fdes: BTreeMap<String, usize>,
}

/// Call frame information to check: the section bytes, the relocations of it (byte offset
/// -> symbol), and the functions with code (symbol -> bytes of code).
#[derive(Debug)]
pub struct Frames<'a> {
    pub bytes: &'a [u8],
    pub relocations: BTreeMap<usize, String>,
    pub code: BTreeMap<String, u64>,
    pub address_size: u8,
}

/// The `.debug_frame` of an ELF object, with its relocations and the code of its functions;
/// `None` when there is no `.debug_frame`.
pub(crate) fn frames<'a>(e: &Elf<'a>) -> Option<Frames<'a>> {
    let section = e.file.section_by_name(".debug_frame")?;
    let bytes = section.data().ok()?;
    let mut relocations = BTreeMap::new();
    for (off, r) in section.relocations() {
        let object::RelocationTarget::Symbol(si) = r.target() else {
            continue;
        };
        if let Ok(sym) = e.file.symbol_by_index(si) {
            relocations.insert(off as usize, sym.name().unwrap_or("").to_string());
        }
    }
    let mut code = BTreeMap::new();
    for s in e.file.sections() {
        let Ok(name) = s.name() else { continue };
        if let Some(f) = name.strip_prefix(".text.") {
            if s.size() > 0 {
                code.insert(f.to_string(), s.size());
            }
        }
    }
    Some(Frames {
        bytes,
        relocations,
        code,
        address_size: if e.file.is_64() { 8 } else { 4 },
    })
}

/// A bounded little-endian cursor over one entry.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let Some(end) = end else {
            return Err(format!(
                "{n} bytes needed at +{:#x}, the entry ends",
                self.at
            ));
        };
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn uint(&mut self, n: usize) -> Result<u64, String> {
        let s = self.bytes(n)?;
        Ok(s.iter().rev().fold(0u64, |v, x| (v << 8) | u64::from(*x)))
    }
    fn uleb(&mut self) -> Result<u64, String> {
        let (mut v, mut shift) = (0u64, 0u32);
        loop {
            let x = self.uint(1)? as u8;
            if shift < 64 {
                v |= u64::from(x & 0x7f) << shift;
            }
            shift += 7;
            if x & 0x80 == 0 {
                return Ok(v);
            }
            if shift > 70 {
                return Err("a LEB128 number longer than 10 bytes".into());
            }
        }
    }
    fn sleb(&mut self) -> Result<i64, String> {
        let start = self.at;
        self.uleb()?;
        // Re-read with sign extension; the length is known to be valid.
        let (mut v, mut shift, mut at) = (0i64, 0u32, start);
        loop {
            let x = self.b[at];
            at += 1;
            if shift < 64 {
                v |= i64::from(x & 0x7f) << shift;
            }
            shift += 7;
            if x & 0x80 == 0 {
                if shift < 64 && x & 0x40 != 0 {
                    v |= -1i64 << shift;
                }
                return Ok(v);
            }
        }
    }
    fn cstr(&mut self) -> Result<String, String> {
        let rest = &self.b[self.at..];
        let Some(n) = rest.iter().position(|&x| x == 0) else {
            return Err("an unterminated augmentation string".into());
        };
        let s = String::from_utf8_lossy(&rest[..n]).into_owned();
        self.at += n + 1;
        Ok(s)
    }
    fn done(&self) -> bool {
        self.at >= self.b.len()
    }
}

/// Decode a call-frame instruction stream (DWARF 3 §6.4.2, encodings §7.23); the number of
/// instructions, or what could not be read.
fn instructions(b: &[u8], address_size: usize) -> Result<usize, String> {
    let mut c = Cursor { b, at: 0 };
    let mut n = 0;
    while !c.done() {
        let op = c.uint(1)? as u8;
        n += 1;
        match op >> 6 {
            1 => continue, // DW_CFA_advance_loc
            2 => {
                c.uleb()?; // DW_CFA_offset: register in the low bits, ULEB offset
                continue;
            }
            3 => continue, // DW_CFA_restore
            _ => {}
        }
        match op {
            0x00 | 0x0a | 0x0b => {}             // nop, remember_state, restore_state
            0x01 => drop(c.uint(address_size)?), // set_loc
            0x02 => drop(c.uint(1)?),            // advance_loc1
            0x03 => drop(c.uint(2)?),            // advance_loc2
            0x04 => drop(c.uint(4)?),            // advance_loc4
            0x06..=0x08 | 0x0d | 0x0e | 0x2e => drop(c.uleb()?), // restore_ext, undefined, same_value, def_cfa_register, def_cfa_offset, GNU_args_size
            0x13 => drop(c.sleb()?),                             // def_cfa_offset_sf
            0x05 | 0x09 | 0x0c | 0x14 => {
                c.uleb()?; // offset_extended, register, def_cfa, val_offset
                c.uleb()?;
            }
            0x11 | 0x12 | 0x15 | 0x2f => {
                c.uleb()?; // offset_extended_sf, def_cfa_sf, val_offset_sf, GNU_negative_offset_extended
                c.sleb()?;
            }
            0x0f => {
                let len = c.uleb()?; // def_cfa_expression: a block
                c.bytes(usize::try_from(len).map_err(|_| "a block too long")?)?;
            }
            0x10 | 0x16 => {
                c.uleb()?; // expression, val_expression: register, block
                let len = c.uleb()?;
                c.bytes(usize::try_from(len).map_err(|_| "a block too long")?)?;
            }
            other => {
                return Err(format!(
                    "call frame instruction {other:#04x} at +{:#x} is not defined",
                    c.at - 1
                ))
            }
        }
    }
    Ok(n)
}

/// One entry's header: where it starts, whether 64-bit, its CIE id / pointer, its body.
struct Entry<'a> {
    at: usize,
    wide: bool,
    id: u64,
    /// Offset in the section of the byte after the id field.
    body_at: usize,
    body: &'a [u8],
}

fn entry_at(bytes: &[u8], at: usize) -> Result<Entry<'_>, String> {
    let mut c = Cursor { b: bytes, at };
    let len32 = c.uint(4)?;
    let (wide, len) = if len32 == 0xffff_ffff {
        (true, c.uint(8)?)
    } else {
        (false, len32)
    };
    let len = usize::try_from(len).map_err(|_| "a length beyond memory")?;
    let start = c.at;
    let entry = c.bytes(len)?;
    let mut e = Cursor { b: entry, at: 0 };
    let id = e.uint(if wide { 8 } else { 4 })?;
    Ok(Entry {
        at,
        wide,
        id,
        body_at: start + e.at,
        body: &entry[e.at..],
    })
}

fn entries(bytes: &[u8]) -> (Vec<Entry<'_>>, Option<(usize, String)>) {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < bytes.len() {
        match entry_at(bytes, at) {
            Ok(e) => {
                at = e.body_at + e.body.len();
                out.push(e);
            }
            Err(why) => return (out, Some((at, why))),
        }
    }
    (out, None)
}

/// Check call frame information as §5.1's back end must write it.
pub fn check(f: &Frames<'_>) -> FrameReport {
    let mut r = FrameReport::default();
    let asz = usize::from(f.address_size);
    let (list, cut) = entries(f.bytes);
    if let Some((at, why)) = cut {
        r.problems.push((
            Some(at as u64),
            format!("unreadable call frame entry: {why}"),
        ));
    }
    // CIE offset -> (code alignment), for the FDEs that point at it.
    let mut cies: HashMap<u64, ()> = HashMap::new();
    let mut described: HashMap<String, Vec<u64>> = HashMap::new();
    for e in &list {
        let cie_id = if e.wide { u64::MAX } else { 0xffff_ffff };
        let at = Some(e.at as u64);
        if e.id == cie_id {
            r.cies += 1;
            let mut c = Cursor { b: e.body, at: 0 };
            let header = (|| -> Result<usize, String> {
                let version = c.uint(1)?;
                if !matches!(version, 1 | 3) {
                    return Err(format!("CIE version {version}; .debug_frame has 1 or 3"));
                }
                let aug = c.cstr()?;
                if !aug.is_empty() {
                    return Err(format!("augmentation \"{aug}\" is not read here"));
                }
                c.uleb()?; // code alignment factor
                c.sleb()?; // data alignment factor
                if version == 1 {
                    c.uint(1)?;
                } else {
                    c.uleb()?;
                } // return address register
                Ok(c.at)
            })();
            match header.and_then(|h| instructions(&e.body[h..], asz)) {
                Ok(_) => {
                    cies.insert(e.at as u64, ());
                }
                Err(why) => r.problems.push((at, format!("CIE: {why}"))),
            }
            continue;
        }
        // An FDE: its CIE pointer is a section offset.
        if !cies.contains_key(&e.id) {
            r.problems.push((
                at,
                format!("FDE's CIE pointer {:#x} names no readable CIE", e.id),
            ));
        }
        let mut c = Cursor { b: e.body, at: 0 };
        let location_at = e.body_at;
        let fields = (|| -> Result<u64, String> {
            c.uint(asz)?; // initial location: 0 until relocated
            c.uint(asz)
        })();
        let range = match fields.and_then(|range| instructions(&e.body[c.at..], asz).map(|_| range))
        {
            Ok(range) => range,
            Err(why) => {
                r.problems.push((at, format!("FDE: {why}")));
                continue;
            }
        };
        match f.relocations.get(&location_at) {
            Some(s) => {
                *r.fdes.entry(s.clone()).or_insert(0) += 1;
                described.entry(s.clone()).or_default().push(range);
            }
            None => {
                *r.fdes.entry("?".into()).or_insert(0) += 1;
                r.problems.push((
                    at,
                    "FDE's initial location is not relocated to a function".into(),
                ));
            }
        }
    }
    for (function, size) in &f.code {
        match described.get(function) {
            None => r.problems.push((
                None,
                format!("function `{function}` ({size} bytes of code) has no FDE"),
            )),
            Some(ranges) => {
                for len in ranges {
                    if len > size {
                        r.problems.push((
                            None,
                            format!(
                                "an FDE of `{function}` covers {len} bytes; its code is {size}"
                            ),
                        ));
                    }
                }
            }
        }
    }
    let mut stray: Vec<&String> = described
        .keys()
        .filter(|f1| !f.code.contains_key(*f1))
        .collect();
    stray.sort();
    for function in stray {
        r.problems.push((
            None,
            format!("an FDE describes `{function}`, which has no .text section"),
        ));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::write::{
        Address, CallFrameInstruction, CommonInformationEntry, EndianVec, FrameDescriptionEntry,
        FrameTable,
    };
    use gimli::{Encoding, Format, LittleEndian, Register};

    /// `.debug_frame` written by gimli's writer (an independent encoder): one CIE and an FDE
    /// per (function, length). The FDEs' addresses are `Address::Constant(0)` as in an
    /// unlinked cubin, so the relocations returned (FDE address field offset -> function) are
    /// what names each function, as `.rela.debug_frame` does.
    fn written(fdes: &[(&str, u32)]) -> (Vec<u8>, BTreeMap<usize, String>) {
        let encoding = Encoding {
            format: Format::Dwarf32,
            version: 1,
            address_size: 8,
        };
        let mut table = FrameTable::default();
        let mut cie = CommonInformationEntry::new(encoding, 4, -4, Register(1));
        cie.add_instruction(CallFrameInstruction::Cfa(Register(1), 0));
        let id = table.add_cie(cie);
        for (_, len) in fdes {
            let mut fde = FrameDescriptionEntry::new(Address::Constant(0), *len);
            fde.add_instruction(4, CallFrameInstruction::CfaOffset(16));
            table.add_fde(id, fde);
        }
        let mut out = gimli::write::DebugFrame::from(EndianVec::new(LittleEndian));
        table.write_debug_frame(&mut out).unwrap();
        let bytes = out.slice().to_vec();
        // Each FDE: length (4), CIE pointer (4), initial location (8): its address field is
        // 8 bytes past the FDE's start. Find the FDEs by walking the length fields.
        let mut relocations = BTreeMap::new();
        let (mut at, mut k) = (0usize, 0usize);
        while at + 8 <= bytes.len() {
            let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let id = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap());
            if id != 0xffff_ffff {
                relocations.insert(at + 8, fdes[k].0.to_string());
                k += 1;
            }
            at += 4 + len;
        }
        assert_eq!(k, fdes.len());
        (bytes, relocations)
    }

    fn code(fns: &[(&str, u64)]) -> BTreeMap<String, u64> {
        fns.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    }

    #[test]
    fn every_function_described_is_clean() {
        let (bytes, relocations) = written(&[("k", 0x580), ("f", 0x980)]);
        let r = check(&Frames {
            bytes: &bytes,
            relocations,
            code: code(&[("k", 0x580), ("f", 0x980)]),
            address_size: 8,
        });
        assert_eq!(r.problems, []);
        assert_eq!(r.cies, 1);
        assert_eq!(r.fdes.get("k"), Some(&1));
        assert_eq!(r.fdes.get("f"), Some(&1));
    }

    #[test]
    fn a_function_without_fde_an_overlong_range_and_a_stray_fde_are_named() {
        let (bytes, relocations) = written(&[("k", 0x600), ("gone", 0x10)]);
        let r = check(&Frames {
            bytes: &bytes,
            relocations,
            code: code(&[("k", 0x580), ("f", 0x980)]),
            address_size: 8,
        });
        let text: Vec<&str> = r.problems.iter().map(|p| p.1.as_str()).collect();
        assert!(
            text.contains(&"function `f` (2432 bytes of code) has no FDE"),
            "{text:?}"
        );
        assert!(
            text.contains(&"an FDE of `k` covers 1536 bytes; its code is 1408"),
            "{text:?}"
        );
        assert!(
            text.contains(&"an FDE describes `gone`, which has no .text section"),
            "{text:?}"
        );
    }

    #[test]
    fn an_unrelocated_fde_and_a_cut_section_are_problems_not_panics() {
        let (bytes, relocations) = written(&[("k", 0x580)]);
        let r = check(&Frames {
            bytes: &bytes,
            relocations: BTreeMap::new(),
            code: code(&[("k", 0x580)]),
            address_size: 8,
        });
        assert!(
            r.problems.iter().any(|p| p.1.contains("not relocated")),
            "{r:?}"
        );
        // Cut anywhere, the FDE (the last entry) is lost or unreadable: a problem either way.
        for n in 1..bytes.len() {
            let r = check(&Frames {
                bytes: &bytes[..n],
                relocations: relocations.clone(),
                code: code(&[("k", 0x580)]),
                address_size: 8,
            });
            assert!(!r.problems.is_empty(), "cut at {n}: {r:?}");
        }
    }

    // The 64-bit format with CIE version 3 and 32-bit ULEB register numbers, as the CUDA back
    // end writes it: a section laid out by hand from DWARF 3 §7.23 (fuzz seed too).
    #[test]
    fn a_64_bit_cie_with_wide_registers_reads() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/debug-frame-64.bin"
        );
        let bytes = std::fs::read(path).unwrap();
        // The CIE: 12-byte initial length + its body; the FDE's location after its own
        // 12-byte length and 8-byte CIE pointer.
        let cie_len = 12 + u64::from_le_bytes(bytes[4..12].try_into().unwrap()) as usize;
        let relocations = BTreeMap::from([(cie_len + 20, "k".to_string())]);
        let r = check(&Frames {
            bytes: &bytes,
            relocations,
            code: code(&[("k", 0x580)]),
            address_size: 8,
        });
        assert_eq!(r.problems, []);
        assert_eq!((r.cies, r.fdes.get("k")), (1, Some(&1)));
    }
}
