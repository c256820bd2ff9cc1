//! Reading `.debug_info` into a flat tree of DIEs, from PTX `.section` data or from an ELF
//! (cubin), with every address operand tied to the label or symbol it refers to: a PTX label
//! reference or an ELF relocation at that byte becomes a [`Target`]. gimli reads; its
//! `RelocateReader` tells us the byte offset of each address it reads. Limits: at most
//! [`MAX_DIES`] entries and depth [`MAX_DEPTH`]; a malformed section ends the read with an
//! error naming the offset reached, keeping the entries read before it.

use std::collections::BTreeMap;

use gimli::{EndianSlice, LittleEndian, Reader as _, RelocateReader};

use super::ptxscan::AddressClass;

pub(crate) const MAX_DIES: usize = 1_000_000;
pub(crate) const MAX_DEPTH: usize = 256;

/// What a label reference or relocation names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub addend: i64,
    /// The state space of a variable symbol; `Some(Code)` for functions and labels; `None` when
    /// the name resolves to nothing the reader knows (a broken reference).
    pub space: Option<AddressClass>,
    /// Whether it is a DWARF section name (`.debug_line`), not a program symbol.
    pub section: bool,
}

/// A value of an attribute, with references and addresses resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    U(u64),
    S(i64),
    Str(String),
    /// A reference to another DIE, by `.debug_info` offset.
    Ref(u64),
    /// An address: the label or symbol it refers to, or a bare constant.
    Addr(Result<Target, u64>),
    /// A location expression: its bytes, and the address operands' targets by position.
    Expr(Vec<u8>, Vec<(usize, Target)>),
    Flag(bool),
    Other(String),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Die {
    /// Offset in `.debug_info`.
    pub offset: u64,
    pub depth: usize,
    pub parent: Option<usize>,
    pub tag: gimli::DwTag,
    pub attrs: Vec<(gimli::DwAt, Val)>,
}

impl Die {
    pub fn attr(&self, at: gimli::DwAt) -> Option<&Val> {
        self.attrs.iter().find(|(a, _)| *a == at).map(|(_, v)| v)
    }
    pub fn name(&self) -> Option<&str> {
        match self.attr(gimli::DW_AT_name) {
            Some(Val::Str(s)) => Some(s),
            _ => None,
        }
    }
    pub(crate) fn udata(&self, at: gimli::DwAt) -> Option<u64> {
        match self.attr(at) {
            Some(Val::U(u)) => Some(*u),
            Some(Val::S(s)) => u64::try_from(*s).ok(),
            _ => None,
        }
    }
}

/// The entries read, and the error that stopped the read (with the offset reached).
#[derive(Debug, Clone, Default)]
pub(crate) struct Tree {
    pub dies: Vec<Die>,
    pub error: Option<(u64, String)>,
}

impl Tree {
    pub(crate) fn by_offset(&self, off: u64) -> Option<&Die> {
        self.dies
            .binary_search_by_key(&off, |d| d.offset)
            .ok()
            .map(|i| &self.dies[i])
    }
    pub fn children(&self, i: usize) -> impl Iterator<Item = (usize, &Die)> {
        self.dies
            .iter()
            .enumerate()
            .skip(i + 1)
            .take_while(move |(_, d)| d.depth > self.dies[i].depth)
            .filter(move |(_, d)| d.parent == Some(i))
    }
}

/// The raw sections and the targets of the references in `.debug_info` (by byte offset).
#[derive(Debug, Clone, Default)]
pub(crate) struct Sections<'a> {
    pub info: &'a [u8],
    pub abbrev: &'a [u8],
    pub str: &'a [u8],
    pub refs: BTreeMap<usize, Target>,
}

const TAG: u64 = 0xFEED_0000_0000_0000;

#[derive(Debug, Clone, Copy)]
struct Reloc<'a>(&'a BTreeMap<usize, usize>);

impl gimli::Relocate<usize> for Reloc<'_> {
    fn relocate_address(&self, offset: usize, value: u64) -> gimli::Result<u64> {
        Ok(match self.0.get(&offset) {
            Some(i) => TAG | *i as u64,
            None => value,
        })
    }
    fn relocate_offset(&self, _offset: usize, value: usize) -> gimli::Result<usize> {
        Ok(value)
    }
}

type R<'a> = RelocateReader<EndianSlice<'a, LittleEndian>, Reloc<'a>>;

/// Read every unit of `.debug_info`.
pub(crate) fn read_tree(s: &Sections<'_>) -> Tree {
    let index: BTreeMap<usize, usize> = s.refs.keys().enumerate().map(|(i, o)| (*o, i)).collect();
    let targets: Vec<&Target> = s.refs.values().collect();
    let reloc = Reloc(&index);
    let load = |id: gimli::SectionId| -> Result<R<'_>, gimli::Error> {
        let data: &[u8] = match id {
            gimli::SectionId::DebugInfo => s.info,
            gimli::SectionId::DebugAbbrev => s.abbrev,
            gimli::SectionId::DebugStr => s.str,
            _ => &[],
        };
        Ok(RelocateReader::new(
            EndianSlice::new(data, LittleEndian),
            reloc,
        ))
    };
    let Ok(dwarf) = gimli::Dwarf::load(load) else {
        return Tree::default();
    };
    let mut tree = Tree::default();
    let resolve = |v: u64| -> Result<Target, u64> {
        if v & 0xFFFF_0000_0000_0000 == TAG {
            match targets.get((v & 0xFFFF_FFFF) as usize) {
                Some(t) => Ok((*t).clone()),
                None => Err(v),
            }
        } else {
            Err(v)
        }
    };
    let mut units = dwarf.units();
    loop {
        let header = match units.next() {
            Ok(Some(h)) => h,
            Ok(None) => break,
            Err(e) => {
                let at = tree.dies.last().map_or(0, |d| d.offset);
                tree.error = Some((at, format!("unit header: {e}")));
                break;
            }
        };
        let uoff = header
            .offset()
            .as_debug_info_offset()
            .map_or(0, |o| o.0 as u64);
        if let Err((at, e)) = read_unit(&dwarf, header, uoff, &resolve, s.info, &mut tree) {
            tree.error = Some((at, e));
            break;
        }
    }
    tree
}

fn read_unit<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    header: gimli::UnitHeader<R<'a>>,
    uoff: u64,
    resolve: &dyn Fn(u64) -> Result<Target, u64>,
    info: &'a [u8],
    tree: &mut Tree,
) -> Result<(), (u64, String)> {
    // Not `Dwarf::unit`: that also parses the line program, which PTX does not carry (ptxas
    // builds `.debug_line`).
    let abbrevs = header
        .abbreviations(&dwarf.debug_abbrev)
        .map_err(|e| (uoff, format!("unit at {uoff:#x}: abbreviations: {e}")))?;
    let mut cursor = header.entries(&abbrevs);
    let mut depth: isize = 0;
    let mut stack: Vec<usize> = Vec::new();
    let mut last = uoff;
    loop {
        let next = cursor
            .next_dfs()
            .map_err(|e| (last, format!("DIE after offset {last:#x}: {e}")))?;
        let Some((delta, entry)) = next else { break };
        depth += delta;
        if depth < 0 || depth as usize > MAX_DEPTH {
            return Err((last, format!("DIE nesting deeper than {MAX_DEPTH}")));
        }
        if tree.dies.len() >= MAX_DIES {
            return Err((last, format!("more than {MAX_DIES} DIEs")));
        }
        let d = depth as usize;
        stack.truncate(d);
        let off = entry
            .offset()
            .to_debug_info_offset(&header)
            .map_or(0, |o| o.0 as u64);
        last = off;
        let mut attrs = Vec::new();
        let mut it = entry.attrs();
        while let Some(a) = it
            .next()
            .map_err(|e| (off, format!("DIE at {off:#x}: attribute: {e}")))?
        {
            attrs.push((a.name(), value(dwarf, &header, a.value(), resolve, info)));
        }
        let idx = tree.dies.len();
        tree.dies.push(Die {
            offset: off,
            depth: d,
            parent: stack.last().copied(),
            tag: entry.tag(),
            attrs,
        });
        stack.push(idx);
    }
    Ok(())
}

fn value<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    unit: &gimli::UnitHeader<R<'a>>,
    v: gimli::AttributeValue<R<'a>>,
    resolve: &dyn Fn(u64) -> Result<Target, u64>,
    info: &'a [u8],
) -> Val {
    use gimli::AttributeValue as A;
    match v {
        A::Addr(a) => Val::Addr(resolve(a)),
        A::Data1(x) => Val::U(x.into()),
        A::Data2(x) => Val::U(x.into()),
        A::Data4(x) => Val::U(x.into()),
        A::Data8(x) => Val::U(x),
        A::Udata(x) => Val::U(x),
        A::Sdata(x) => Val::S(x),
        A::Flag(f) => Val::Flag(f),
        A::AddressClass(c) => Val::U(c.0),
        A::Encoding(c) => Val::U(c.0.into()),
        A::Language(c) => Val::U(c.0.into()),
        A::FileIndex(_) => Val::Other("file".into()),
        A::UnitRef(o) => Val::Ref(
            o.to_debug_info_offset(unit)
                .map_or(u64::MAX, |x| x.0 as u64),
        ),
        A::DebugInfoRef(o) => Val::Ref(o.0 as u64),
        A::String(r) => Val::Str(lossy(&r)),
        A::DebugStrRef(o) => match dwarf.debug_str.get_str(o) {
            Ok(r) => Val::Str(lossy(&r)),
            Err(e) => Val::Other(format!("bad .debug_str offset {:#x}: {e}", o.0)),
        },
        A::Exprloc(gimli::Expression(r)) | A::Block(r) => expr(r, unit.encoding(), resolve, info),
        A::SecOffset(o) => Val::Other(format!("sec_offset {o:#x}")),
        A::DebugLineRef(o) => Val::Other(format!("line {:#x}", o.0)),
        other => Val::Other(format!("{other:?}")),
    }
}

fn lossy(r: &R<'_>) -> String {
    r.to_string_lossy()
        .map(|c| c.into_owned())
        .unwrap_or_default()
}

/// An expression's bytes and, for each `DW_OP_addr`, its target. The operand offsets come from
/// gimli's operation parser (which reads addresses through the relocating reader).
fn expr<'a>(
    r: R<'a>,
    enc: gimli::Encoding,
    resolve: &dyn Fn(u64) -> Result<Target, u64>,
    _info: &'a [u8],
) -> Val {
    let mut bytes = Vec::new();
    let mut raw = r.clone();
    while let Ok(b) = raw.read_u8() {
        bytes.push(b);
    }
    let mut targets = Vec::new();
    let mut ops = gimli::Expression(r.clone()).operations(enc);
    let mut pos = 0usize;
    while let Ok(Some(op)) = ops.next() {
        if let gimli::Operation::Address { address } = op {
            if let Ok(t) = resolve(address) {
                targets.push((pos, t));
            }
        }
        pos += 1;
    }
    Val::Expr(bytes, targets)
}

/// A register name from the CUDA encoding of `DW_OP_regx`/`DW_OP_bregx` operands: the name's
/// ASCII bytes read as a big-endian number (`%r1` = 0x257231, as in ptx-interop 13.2 ch. 6).
pub(crate) fn register_name(n: u64) -> Option<String> {
    let bytes: Vec<u8> = n
        .to_be_bytes()
        .iter()
        .copied()
        .skip_while(|b| *b == 0)
        .collect();
    let s = String::from_utf8(bytes).ok()?;
    (s.starts_with('%') && s.len() > 1 && s.chars().all(|c| c.is_ascii_graphic())).then_some(s)
}

/// The CUDA register operand for `name` (inverse of [`register_name`]).
pub(crate) fn register_number(name: &str) -> Option<u64> {
    if name.len() > 8 || !name.is_ascii() {
        return None;
    }
    Some(name.bytes().fold(0u64, |acc, b| (acc << 8) | u64::from(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_names_round_trip_and_match_the_spec_example() {
        // ch. 6: `DW_OP_regx 177 228 149 1` (ULEB 0x257231) is %r1.
        assert_eq!(register_name(0x257231).as_deref(), Some("%r1"));
        assert_eq!(register_number("%r1"), Some(0x257231));
        assert_eq!(register_name(5), None);
    }
}
