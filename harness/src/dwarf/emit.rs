//! gpucts as a DWARF producer (ptx-interop 13.2 §5.1): for generated kernels, `gimli::write`
//! builds `.debug_info`/`.debug_abbrev`, and [`to_ptx`] prints them as PTX `.section` data
//! whose addresses and section offsets are label references (`.b64 gpucts_g3`,
//! `.b32 .debug_abbrev`), as the spec's chapter 6 example does.
//!
//! Each kernel `gpucts_dw_<seed>` describes one random type of the abi generator (structs with
//! the layout engine's member offsets, unions, arrays, native vectors, bit fields, behind a
//! typedef) and variables of that type in every state space a variable can live in, each with
//! the §5.2 address class of its location.

use std::collections::HashMap;
use std::fmt::Write as _;

use gimli::write::{
    Address, AttributeValue, DwarfUnit, EndianVec, Expression, LineProgram, LineString, Sections,
    UnitEntryId, Writer,
};
use gimli::{LittleEndian, SectionId};

use super::ptxscan::AddressClass;
use super::read::register_number;
use crate::abi::layout::{layout, size_align, AddressSize};
use crate::abi::random::random_type;
use crate::abi::types::{Scalar, Ty, TypeDef};

/// One variable the generated DWARF describes, as the oracle expects to find it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedVar {
    pub name: String,
    pub parameter: bool,
    pub space: AddressClass,
    /// The PTX symbol (for address locations) or register (for register locations).
    pub location: String,
}

/// A generated kernel: its PTX (without the DWARF sections) and what its DWARF says.
#[derive(Debug, Clone)]
pub struct Program {
    pub seed: u64,
    pub kernel: String,
    pub ty: TypeDef,
    pub vars: Vec<ExpectedVar>,
    /// Pointer types described: (pointee address class space).
    pub pointer_spaces: Vec<AddressClass>,
    pub ptx_decls: String,
    pub ptx_body: String,
}

fn space_for_pointer(seed: u64, k: u64) -> AddressClass {
    [
        AddressClass::Global,
        AddressClass::Shared,
        AddressClass::Const,
        AddressClass::Local,
        AddressClass::Generic,
        AddressClass::Param,
    ][((seed + k) % 6) as usize]
}

/// The kernel for one seed.
pub(crate) fn program(seed: u64) -> Program {
    let ty = random_type(seed);
    let kernel = format!("gpucts_dw_{seed}");
    let (size, align) =
        size_align(&Ty::Record(Box::new(ty.clone())), AddressSize::A64).unwrap_or((1, 1));
    let (size, align) = (size.max(1), align.max(1));
    let g = |p: &str| format!("gpucts_{p}{seed}");
    let mut decls = String::new();
    let _ = writeln!(decls, ".global .align {align} .b8 {}[{size}];", g("g"));
    let _ = writeln!(decls, ".shared .align {align} .b8 {}[{size}];", g("s"));
    let _ = writeln!(decls, ".const .align {align} .b8 {}[{size}];", g("c"));
    let param = format!("{kernel}_param_0");
    let body = format!(
        "{{\n  .local .align {align} .b8 {l}[{size}];\n  .reg .b32 %r<3>;\n  .reg .b64 %rd<3>;\n\
         .loc 1 {seed2} 1\n$Lgpucts_begin{seed}:\n\
         \x20 ld.param.u8 %r1, [{param}];\n  ld.global.u8 %r2, [{gv}];\n  add.u32 %r1, %r1, %r2;\n\
         \x20 ld.const.u8 %r2, [{cv}];\n  add.u32 %r1, %r1, %r2;\n  st.shared.u8 [{sv}], %r1;\n\
         \x20 st.local.u8 [{l}], %r1;\n  ld.local.u8 %r2, [{l}];\n  mov.u32 %r1, %tid.x;\n\
         \x20 add.u32 %r1, %r1, %r2;\n  mov.u64 %rd1, {gv};\n  cvta.global.u64 %rd2, %rd1;\n\
         \x20 st.u8 [%rd2], %r1;\n\
         .loc 1 {seed3} 1\n  st.global.u8 [{gv}+0], %r1;\n  ret;\n$Lgpucts_end{seed}:\n}}\n",
        l = g("l"),
        gv = g("g"),
        cv = g("c"),
        sv = g("s"),
        seed2 = seed % 1000 + 1,
        seed3 = seed % 1000 + 2,
    );
    let ptx_body = format!(
        ".visible .entry {kernel}(\n  .param .align {align} .b8 {param}[{size}]\n)\n{body}"
    );
    let vars = vec![
        ExpectedVar {
            name: "p".into(),
            parameter: true,
            space: AddressClass::Param,
            location: param,
        },
        ExpectedVar {
            name: "g".into(),
            parameter: false,
            space: AddressClass::Global,
            location: g("g"),
        },
        ExpectedVar {
            name: "s".into(),
            parameter: false,
            space: AddressClass::Shared,
            location: g("s"),
        },
        ExpectedVar {
            name: "c".into(),
            parameter: false,
            space: AddressClass::Const,
            location: g("c"),
        },
        ExpectedVar {
            name: "l".into(),
            parameter: false,
            space: AddressClass::Local,
            location: g("l"),
        },
        ExpectedVar {
            name: "r".into(),
            parameter: false,
            space: AddressClass::Reg,
            location: "%r1".into(),
        },
        ExpectedVar {
            name: "t".into(),
            parameter: false,
            space: AddressClass::Sreg,
            location: "%tid.x".into(),
        },
        ExpectedVar {
            name: "q".into(),
            parameter: false,
            space: AddressClass::Reg,
            location: "%rd1".into(),
        },
        ExpectedVar {
            name: "v".into(),
            parameter: false,
            space: AddressClass::Generic,
            location: "%rd2".into(),
        },
    ];
    Program {
        seed,
        kernel,
        ty,
        vars,
        pointer_spaces: vec![space_for_pointer(seed, 0), space_for_pointer(seed, 3)],
        ptx_decls: decls,
        ptx_body,
    }
}

/// A `Writer` that keeps the relocations gimli asks for: symbol addresses and offsets into
/// other DWARF sections, which become label references in the PTX.
#[derive(Debug, Clone)]
struct RelocWriter {
    out: EndianVec<LittleEndian>,
    relocs: Vec<(usize, u8, Reloc)>,
}

#[derive(Debug, Clone)]
enum Reloc {
    Symbol(usize, i64),
    Section(SectionId, usize),
}

impl Writer for RelocWriter {
    type Endian = LittleEndian;
    fn endian(&self) -> LittleEndian {
        LittleEndian
    }
    fn len(&self) -> usize {
        self.out.len()
    }
    fn write(&mut self, bytes: &[u8]) -> gimli::write::Result<()> {
        self.out.write(bytes)
    }
    fn write_at(&mut self, offset: usize, bytes: &[u8]) -> gimli::write::Result<()> {
        self.out.write_at(offset, bytes)
    }
    fn write_address(&mut self, address: Address, size: u8) -> gimli::write::Result<()> {
        match address {
            Address::Constant(v) => self.write_udata(v, size),
            Address::Symbol { symbol, addend } => {
                self.relocs
                    .push((self.len(), size, Reloc::Symbol(symbol, addend)));
                self.write_udata(0, size)
            }
        }
    }
    fn write_offset(
        &mut self,
        val: usize,
        section: SectionId,
        size: u8,
    ) -> gimli::write::Result<()> {
        self.relocs
            .push((self.len(), size, Reloc::Section(section, val)));
        self.write_udata(val as u64, size)
    }
    fn write_offset_at(
        &mut self,
        offset: usize,
        val: usize,
        section: SectionId,
        size: u8,
    ) -> gimli::write::Result<()> {
        self.relocs
            .push((offset, size, Reloc::Section(section, val)));
        self.write_udata_at(offset, val as u64, size)
    }
}

struct Builder<'a> {
    unit: &'a mut gimli::write::Unit,
    symbols: &'a mut Vec<String>,
    records: HashMap<String, UnitEntryId>,
    scalars: HashMap<Scalar, UnitEntryId>,
}

impl Builder<'_> {
    fn symbol(&mut self, name: &str) -> Address {
        let symbol = match self.symbols.iter().position(|s| s == name) {
            Some(i) => i,
            None => {
                self.symbols.push(name.to_string());
                self.symbols.len() - 1
            }
        };
        Address::Symbol { symbol, addend: 0 }
    }

    fn scalar(&mut self, s: Scalar) -> UnitEntryId {
        if let Some(id) = self.scalars.get(&s) {
            return *id;
        }
        let root = self.unit.root();
        let id = if s == Scalar::Pointer {
            let id = self.unit.add(root, gimli::DW_TAG_pointer_type);
            let e = self.unit.get_mut(id);
            e.set(gimli::DW_AT_byte_size, AttributeValue::Udata(8));
            e.set(
                gimli::DW_AT_address_class,
                AttributeValue::AddressClass(gimli::DwAddr(
                    AddressClass::Generic.address_class().into(),
                )),
            );
            id
        } else {
            let id = self.unit.add(root, gimli::DW_TAG_base_type);
            let enc = match s {
                Scalar::Half | Scalar::Float | Scalar::Double => gimli::DW_ATE_float,
                Scalar::Char | Scalar::SChar => gimli::DW_ATE_signed_char,
                Scalar::UChar => gimli::DW_ATE_unsigned_char,
                Scalar::Short | Scalar::Int | Scalar::Long | Scalar::LongLong => {
                    gimli::DW_ATE_signed
                }
                _ => gimli::DW_ATE_unsigned,
            };
            let name = s.c_name(crate::abi::types::Dialect::C);
            let e = self.unit.get_mut(id);
            e.set(gimli::DW_AT_name, AttributeValue::String(name.into()));
            e.set(gimli::DW_AT_encoding, AttributeValue::Encoding(enc));
            e.set(
                gimli::DW_AT_byte_size,
                AttributeValue::Udata(crate::abi::layout::scalar_size(s, AddressSize::A64)),
            );
            id
        };
        self.scalars.insert(s, id);
        id
    }

    fn ty(&mut self, t: &Ty) -> Result<UnitEntryId, EmitError> {
        let root = self.unit.root();
        Ok(match t {
            Ty::Scalar(s) => self.scalar(*s),
            Ty::Vector(s, n) => {
                let elem = self.scalar(*s);
                let (size, _) = size_align(t, AddressSize::A64).map_err(layout_error)?;
                let id = self.unit.add(root, gimli::DW_TAG_array_type);
                let e = self.unit.get_mut(id);
                e.set(gimli::DW_AT_type, AttributeValue::UnitRef(elem));
                e.set(gimli::DW_AT_GNU_vector, AttributeValue::Flag(true));
                e.set(gimli::DW_AT_byte_size, AttributeValue::Udata(size));
                let sub = self.unit.add(id, gimli::DW_TAG_subrange_type);
                self.unit
                    .get_mut(sub)
                    .set(gimli::DW_AT_count, AttributeValue::Udata((*n).into()));
                id
            }
            Ty::Array(elem, n) => {
                let et = self.ty(elem)?;
                let (size, _) = size_align(t, AddressSize::A64).map_err(layout_error)?;
                let id = self.unit.add(root, gimli::DW_TAG_array_type);
                let e = self.unit.get_mut(id);
                e.set(gimli::DW_AT_type, AttributeValue::UnitRef(et));
                e.set(gimli::DW_AT_byte_size, AttributeValue::Udata(size));
                let sub = self.unit.add(id, gimli::DW_TAG_subrange_type);
                self.unit
                    .get_mut(sub)
                    .set(gimli::DW_AT_count, AttributeValue::Udata(*n));
                id
            }
            Ty::Record(r) => self.record(r)?,
        })
    }

    fn record(&mut self, r: &TypeDef) -> Result<UnitEntryId, EmitError> {
        if let Some(id) = self.records.get(&r.name) {
            return Ok(*id);
        }
        let l = layout(r, AddressSize::A64).map_err(layout_error)?;
        let root = self.unit.root();
        let tag = match r.kind {
            crate::abi::types::RecordKind::Struct => gimli::DW_TAG_structure_type,
            crate::abi::types::RecordKind::Union => gimli::DW_TAG_union_type,
        };
        let id = self.unit.add(root, tag);
        self.records.insert(r.name.clone(), id);
        {
            let e = self.unit.get_mut(id);
            e.set(
                gimli::DW_AT_name,
                AttributeValue::String(r.name.clone().into()),
            );
            e.set(gimli::DW_AT_byte_size, AttributeValue::Udata(l.size));
        }
        for (f, m) in r.fields.iter().zip(&l.members) {
            let Some(name) = &f.name else { continue };
            let ft = self.ty(&f.ty)?;
            let mid = self.unit.add(id, gimli::DW_TAG_member);
            let e = self.unit.get_mut(mid);
            e.set(
                gimli::DW_AT_name,
                AttributeValue::String(name.clone().into()),
            );
            e.set(gimli::DW_AT_type, AttributeValue::UnitRef(ft));
            match (m.bit_offset, m.bit_width) {
                (Some(b), Some(w)) => {
                    e.set(gimli::DW_AT_bit_size, AttributeValue::Udata(w.into()));
                    e.set(gimli::DW_AT_data_bit_offset, AttributeValue::Udata(b));
                }
                _ => e.set(
                    gimli::DW_AT_data_member_location,
                    AttributeValue::Udata(m.offset),
                ),
            }
        }
        Ok(id)
    }
}

/// Why a program's debug information could not be written as PTX `.section` directives.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// The layout engine refused a type (`abi::layout`'s reason).
    #[error("{0}")]
    Layout(String),
    #[error("register name too long")]
    RegisterName,
    #[error("gimli write: {0}")]
    Write(gimli::write::Error),
    /// Rewriting the abbreviations to DWARF 2 forms met a short table.
    #[error("truncated abbreviation")]
    TruncatedAbbreviation,
    #[error("DW_FORM_flag_present has no DWARF 2 form")]
    FlagPresent,
    #[error("{0}")]
    Rewrite(gimli::write::Error),
    #[error("unknown symbol")]
    UnknownSymbol,
}

fn layout_error(e: impl std::fmt::Display) -> EmitError {
    EmitError::Layout(e.to_string())
}

/// The compile unit of a batch written as `file`: DWARF 2, 32-bit, 8-byte addresses (what
/// ptxas reads, ptx-interop 13.2 §5.1), a line program naming `file`, and the unit's producer,
/// language, name, directory and line-table attributes. Returns the unit and `file`'s index.
fn compile_unit(file: &str) -> (DwarfUnit, gimli::write::FileId) {
    let enc = gimli::Encoding {
        format: gimli::Format::Dwarf32,
        version: 2,
        address_size: 8,
    };
    let mut lp = LineProgram::new(
        enc,
        gimli::LineEncoding::default(),
        LineString::String(b"/gpucts".to_vec()),
        None,
        LineString::String(file.as_bytes().to_vec()),
        None,
    );
    let dir = lp.default_directory();
    let file_id = lp.add_file(LineString::String(file.as_bytes().to_vec()), dir, None);
    let mut dw = DwarfUnit::new(enc);
    dw.unit.line_program = lp;
    let root = dw.unit.root();
    let e = dw.unit.get_mut(root);
    e.set(
        gimli::DW_AT_producer,
        AttributeValue::String(b"gpucts".to_vec()),
    );
    e.set(
        gimli::DW_AT_language,
        AttributeValue::Language(gimli::DW_LANG_C_plus_plus),
    );
    e.set(
        gimli::DW_AT_name,
        AttributeValue::String(file.as_bytes().to_vec()),
    );
    e.set(
        gimli::DW_AT_comp_dir,
        AttributeValue::String(b"/gpucts".to_vec()),
    );
    e.set(gimli::DW_AT_stmt_list, AttributeValue::LineProgramRef);
    (dw, file_id)
}

/// The DWARF of a batch of programs, as PTX `.section` directives.
pub(crate) fn to_ptx(programs: &[Program], file: &str) -> Result<String, EmitError> {
    let (mut dw, file_id) = compile_unit(file);
    let mut symbols = Vec::new();
    let mut b = Builder {
        unit: &mut dw.unit,
        symbols: &mut symbols,
        records: HashMap::new(),
        scalars: HashMap::new(),
    };
    for p in programs {
        b.program(p, file_id)?;
    }
    let mut sections = Sections::new(RelocWriter {
        out: EndianVec::new(LittleEndian),
        relocs: Vec::new(),
    });
    dw.write(&mut sections).map_err(EmitError::Write)?;
    downgrade_forms(&mut sections.debug_abbrev.0.out)?;
    let mut out = String::new();
    for (name, w) in [
        (".debug_abbrev", &sections.debug_abbrev.0),
        (".debug_info", &sections.debug_info.0),
    ] {
        print_section(&mut out, name, w, &symbols)?;
    }
    Ok(out)
}

impl Builder<'_> {
    /// One program's DIEs under the unit: its record type and a typedef of it, pointers to the
    /// typedef qualified with their pointee's address class, and the kernel's subprogram with
    /// its variables (ptx-interop 13.2 §5.2).
    fn program(&mut self, p: &Program, file_id: gimli::write::FileId) -> Result<(), EmitError> {
        let root = self.unit.root();
        let rec = self.record(&p.ty)?;
        let td = self.unit.add(root, gimli::DW_TAG_typedef);
        let e = self.unit.get_mut(td);
        e.set(
            gimli::DW_AT_name,
            AttributeValue::String(format!("{}_t", p.ty.name).into()),
        );
        e.set(gimli::DW_AT_type, AttributeValue::UnitRef(rec));
        // Pointers to the type, each qualified with the address class of its pointee's space.
        let mut ptrs = Vec::new();
        for sp in &p.pointer_spaces {
            let id = self.unit.add(root, gimli::DW_TAG_pointer_type);
            let e = self.unit.get_mut(id);
            e.set(gimli::DW_AT_type, AttributeValue::UnitRef(td));
            e.set(gimli::DW_AT_byte_size, AttributeValue::Udata(8));
            e.set(
                gimli::DW_AT_address_class,
                AttributeValue::AddressClass(gimli::DwAddr(sp.address_class().into())),
            );
            ptrs.push(id);
        }
        let uint = self.scalar(Scalar::UInt);
        let sp = self.subprogram(p, file_id);
        for v in &p.vars {
            let ty = match v.name.as_str() {
                "r" | "t" => uint,
                "q" => ptrs[0],
                _ => td,
            };
            self.variable(sp, v, ty)?;
        }
        Ok(())
    }

    /// The kernel's `DW_TAG_subprogram`: its name, declaration line and the address range
    /// between its begin and end labels.
    fn subprogram(&mut self, p: &Program, file_id: gimli::write::FileId) -> UnitEntryId {
        let root = self.unit.root();
        let begin = self.symbol(&format!("$Lgpucts_begin{}", p.seed));
        let end = self.symbol(&format!("$Lgpucts_end{}", p.seed));
        let sp = self.unit.add(root, gimli::DW_TAG_subprogram);
        let e = self.unit.get_mut(sp);
        e.set(
            gimli::DW_AT_name,
            AttributeValue::String(p.kernel.clone().into()),
        );
        e.set(
            gimli::DW_AT_linkage_name,
            AttributeValue::String(p.kernel.clone().into()),
        );
        e.set(gimli::DW_AT_external, AttributeValue::Flag(true));
        e.set(
            gimli::DW_AT_decl_file,
            AttributeValue::FileIndex(Some(file_id)),
        );
        e.set(
            gimli::DW_AT_decl_line,
            AttributeValue::Udata(p.seed % 1000 + 1),
        );
        e.set(gimli::DW_AT_low_pc, AttributeValue::Address(begin));
        e.set(gimli::DW_AT_high_pc, AttributeValue::Address(end));
        sp
    }

    /// A variable or parameter of subprogram `sp` of type `ty`: its location (`DW_OP_regx` for
    /// a register, `DW_OP_bregx REG 0` for a generic pointer held in one, `DW_OP_addr` of its
    /// symbol otherwise) and the address class of its state space (ptx-interop 13.2 §5.2).
    fn variable(
        &mut self,
        sp: UnitEntryId,
        v: &ExpectedVar,
        ty: UnitEntryId,
    ) -> Result<(), EmitError> {
        let tag = if v.parameter {
            gimli::DW_TAG_formal_parameter
        } else {
            gimli::DW_TAG_variable
        };
        let mut loc = Expression::new();
        match v.space {
            AddressClass::Reg | AddressClass::Sreg => {
                let n = register_number(&v.location).ok_or(EmitError::RegisterName)?;
                let mut raw = vec![gimli::DW_OP_regx.0];
                leb128_u(&mut raw, n);
                loc = Expression::raw(raw);
            }
            AddressClass::Generic => {
                let n = register_number(&v.location).ok_or(EmitError::RegisterName)?;
                let mut raw = vec![gimli::DW_OP_bregx.0];
                leb128_u(&mut raw, n);
                raw.push(0);
                loc = Expression::raw(raw);
            }
            _ => loc.op_addr(self.symbol(&v.location)),
        }
        let id = self.unit.add(sp, tag);
        let e = self.unit.get_mut(id);
        e.set(
            gimli::DW_AT_name,
            AttributeValue::String(v.name.clone().into()),
        );
        e.set(gimli::DW_AT_type, AttributeValue::UnitRef(ty));
        e.set(gimli::DW_AT_location, AttributeValue::Exprloc(loc));
        e.set(
            gimli::DW_AT_address_class,
            AttributeValue::AddressClass(gimli::DwAddr(v.space.address_class().into())),
        );
        Ok(())
    }
}

/// ptxas 12.9 reads the producer's DWARF and knows only the DWARF 2 forms ("Error in
/// get_form_value default" otherwise). gimli writes `DW_FORM_exprloc`/`DW_FORM_sec_offset`,
/// which have the encodings of DWARF 2's `DW_FORM_block`/`DW_FORM_data4` in 32-bit DWARF, so
/// the abbreviations are rewritten in place.
fn downgrade_forms(abbrev: &mut EndianVec<LittleEndian>) -> Result<(), EmitError> {
    let mut bytes = abbrev.slice().to_vec();
    let mut i = 0;
    let uleb = |b: &[u8], i: &mut usize| -> Result<u64, EmitError> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let x = *b.get(*i).ok_or(EmitError::TruncatedAbbreviation)?;
            *i += 1;
            v |= u64::from(x & 0x7f) << shift;
            shift += 7;
            if x & 0x80 == 0 || shift > 63 {
                return Ok(v);
            }
        }
    };
    loop {
        if uleb(&bytes, &mut i)? == 0 {
            break;
        }
        uleb(&bytes, &mut i)?; // tag
        i += 1; // children
        loop {
            let at = uleb(&bytes, &mut i)?;
            let at_form = i;
            let form = uleb(&bytes, &mut i)?;
            if at == 0 && form == 0 {
                break;
            }
            match form {
                0x18 => bytes[at_form] = 0x09,
                0x17 => bytes[at_form] = 0x06,
                0x19 => return Err(EmitError::FlagPresent),
                _ => {}
            }
        }
    }
    let mut v = EndianVec::new(LittleEndian);
    v.write(&bytes).map_err(EmitError::Rewrite)?;
    *abbrev = v;
    Ok(())
}

fn leb128_u(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            break;
        }
        out.push(b | 0x80);
    }
}

fn print_section(
    out: &mut String,
    name: &str,
    w: &RelocWriter,
    symbols: &[String],
) -> Result<(), EmitError> {
    let bytes = w.out.slice();
    let mut relocs: Vec<&(usize, u8, Reloc)> = w.relocs.iter().collect();
    relocs.sort_by_key(|r| r.0);
    let _ = writeln!(out, ".section {name}\n{{");
    let mut pos = 0;
    let flush = |out: &mut String, from: usize, to: usize| {
        for chunk in bytes[from..to].chunks(16) {
            let list: Vec<String> = chunk.iter().map(|b| b.to_string()).collect();
            let _ = writeln!(out, ".b8 {}", list.join(", "));
        }
    };
    for (off, size, r) in relocs {
        flush(out, pos, *off);
        let label = match r {
            Reloc::Symbol(i, a) => {
                let s = symbols.get(*i).ok_or(EmitError::UnknownSymbol)?;
                if *a == 0 {
                    s.clone()
                } else {
                    format!("{s}+{a}")
                }
            }
            Reloc::Section(id, 0) => id.name().to_string(),
            Reloc::Section(id, v) => format!("{}+{v}", id.name()),
        };
        let _ = writeln!(out, ".b{} {label}", u32::from(*size) * 8);
        pos = off + usize::from(*size);
    }
    flush(out, pos, bytes.len());
    out.push_str("}\n");
    Ok(())
}

/// A whole PTX module for a batch: the kernels, `.file`, and the DWARF sections.
pub fn module(programs: &[Program], file: &str) -> Result<String, EmitError> {
    let mut s = format!(
        ".version 8.0\n.target sm_90, debug\n.address_size 64\n\n.file 1 \"/gpucts/{file}\"\n\n"
    );
    for p in programs {
        s += &p.ptx_decls;
    }
    for p in programs {
        s += &p.ptx_body;
    }
    s += &to_ptx(programs, file)?;
    Ok(s)
}
