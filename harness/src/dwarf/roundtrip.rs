//! The round trip (ptx-interop 13.2 §5.1–§5.2): gpucts writes DWARF for generated kernels
//! ([`super::emit`]), ptxas `-g` assembles the PTX, and the cubin is read back with gimli and
//! `object`. Per kernel: the DIE tree under the subprogram and every type it reaches are the
//! same as written; every variable and parameter keeps its address class and location; the
//! types' sizes and member offsets are the layout engine's (computed afresh, not read from what
//! was written); pointer types keep their address class; the `.loc` lines come back from
//! `.debug_line`. A second reader checks what it can show: cuobjdump's ELF dump lists the same
//! `.debug_info` relocations, and nvdisasm `-g` annotates the same source lines.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::Arc;

use super::elf::{Elf, ElfError};
use super::emit::{module, program, EmitError, ExpectedVar, Program};
use super::ptxscan::{self, AddressClass, ScanError};
use super::read::{read_tree, register_name, Die, Sections, Target, Tree, Val};
use crate::abi::layout::{layout, size_align, AddressSize};
use crate::abi::types::{Ty, TypeDef};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::capability::Capability;
use crate::cubin::{CubinError, LineRow};

/// Kernels per PTX module (one ptxas run each).
pub const BATCH: u64 = 50;

/// Per-seed verdicts of one batch: `Ok(note)` or `Err((expected, observed))`.
pub(crate) type Verdicts = HashMap<u64, Result<String, (String, String)>>;

fn render(tree: &Tree, v: &Val) -> String {
    match v {
        Val::Ref(o) => match tree.by_offset(*o) {
            Some(d) => format!(
                "<{} {}>",
                d.tag.static_string().unwrap_or("?"),
                d.name().unwrap_or("")
            ),
            None => format!("<dangling {o:#x}>"),
        },
        // Addresses are label references in the PTX and relocations or resolved constants in
        // the cubin; their targets are compared separately.
        Val::Addr(_) => "addr".into(),
        // ptxas 12.9 rewrites a `.local` symbol's DW_OP_addr into DW_OP_fbreg N padded with
        // DW_OP_nop to the same length: both are "in memory", compared per variable below.
        Val::Expr(b, _) if matches!(b.first(), Some(&0x03) | Some(&0x91)) => "memory".into(),
        Val::Expr(b, _) => b.iter().map(|x| format!("{x:02x}")).collect(),
        other => format!("{other:?}"),
    }
}

/// The subtree at `root` and every DIE it references (transitively), rendered one line each.
fn dump(tree: &Tree, root: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![root];
    let mut seen = BTreeSet::new();
    while let Some(i) = todo.pop() {
        if !seen.insert(i) {
            continue;
        }
        let base = tree.dies[i].depth;
        for (k, d) in tree.dies.iter().enumerate().skip(i) {
            if k > i && d.depth <= base {
                break;
            }
            let mut line = format!(
                "{}{}",
                "  ".repeat(d.depth - base),
                d.tag.static_string().unwrap_or("?")
            );
            for (at, v) in &d.attrs {
                let _ = write!(
                    line,
                    " {}={}",
                    at.static_string().unwrap_or("?"),
                    render(tree, v)
                );
                if let Val::Ref(o) = v {
                    if let Ok(j) = tree.dies.binary_search_by_key(o, |x| x.offset) {
                        todo.push(j);
                    }
                }
            }
            out.push(line);
        }
    }
    out
}

fn find_child<'t>(
    tree: &'t Tree,
    parent: usize,
    name: &str,
) -> Option<(usize, &'t super::read::Die)> {
    tree.children(parent).find(|(_, d)| d.name() == Some(name))
}

fn deref<'t>(tree: &'t Tree, d: &super::read::Die) -> Option<(usize, &'t super::read::Die)> {
    match d.attr(gimli::DW_AT_type) {
        Some(Val::Ref(o)) => tree
            .dies
            .binary_search_by_key(o, |x| x.offset)
            .ok()
            .map(|i| (i, &tree.dies[i])),
        _ => None,
    }
}

/// The layout engine's description of a type, checked against a DIE of the cubin.
fn check_type(tree: &Tree, i: usize, ty: &Ty, path: &str, errs: &mut Vec<String>) {
    let d = &tree.dies[i];
    let (size, _) = match size_align(ty, AddressSize::A64) {
        Ok(x) => x,
        Err(e) => return errs.push(format!("{path}: layout engine: {e}")),
    };
    if d.udata(gimli::DW_AT_byte_size) != Some(size) && !matches!(ty, Ty::Scalar(_)) {
        errs.push(format!(
            "{path}: DW_AT_byte_size {:?}, layout engine {size}",
            d.udata(gimli::DW_AT_byte_size)
        ));
    }
    match ty {
        Ty::Scalar(_) => {
            if d.udata(gimli::DW_AT_byte_size) != Some(size) {
                errs.push(format!(
                    "{path}: scalar size {:?}, want {size}",
                    d.udata(gimli::DW_AT_byte_size)
                ));
            }
        }
        Ty::Vector(..) | Ty::Array(..) => {
            let n = match ty {
                Ty::Vector(_, n) => u64::from(*n),
                Ty::Array(_, n) => *n,
                _ => 0,
            };
            let vector = matches!(ty, Ty::Vector(..));
            if d.tag != gimli::DW_TAG_array_type
                || vector != matches!(d.attr(gimli::DW_AT_GNU_vector), Some(Val::Flag(true)))
            {
                errs.push(format!(
                    "{path}: {} is not an array/vector type as written",
                    d.tag
                ));
            }
            let count = tree
                .children(i)
                .find(|(_, c)| c.tag == gimli::DW_TAG_subrange_type)
                .and_then(|(_, c)| c.udata(gimli::DW_AT_count));
            if count != Some(n) {
                errs.push(format!("{path}: element count {count:?}, want {n}"));
            }
            if let (Ty::Array(e, _), Some((j, _))) = (ty, deref(tree, d)) {
                check_type(tree, j, e, &format!("{path}[]"), errs);
            }
        }
        Ty::Record(r) => check_record(tree, i, r, path, errs),
    }
}

fn check_record(tree: &Tree, i: usize, r: &TypeDef, path: &str, errs: &mut Vec<String>) {
    let d = &tree.dies[i];
    let want_tag = match r.kind {
        crate::abi::types::RecordKind::Struct => gimli::DW_TAG_structure_type,
        crate::abi::types::RecordKind::Union => gimli::DW_TAG_union_type,
    };
    if d.tag != want_tag || d.name() != Some(r.name.as_str()) {
        errs.push(format!(
            "{path}: {} `{:?}`, want {want_tag} `{}`",
            d.tag,
            d.name(),
            r.name
        ));
        return;
    }
    let l = match layout(r, AddressSize::A64) {
        Ok(l) => l,
        Err(e) => return errs.push(format!("{path}: layout engine: {e}")),
    };
    for (f, m) in r.fields.iter().zip(&l.members) {
        let Some(name) = &f.name else { continue };
        let Some((j, md)) = find_child(tree, i, name) else {
            errs.push(format!("{path}.{name}: member missing"));
            continue;
        };
        match (m.bit_offset, m.bit_width) {
            (Some(b), Some(w)) => {
                let got = (
                    md.udata(gimli::DW_AT_data_bit_offset),
                    md.udata(gimli::DW_AT_bit_size),
                );
                if got != (Some(b), Some(u64::from(w))) {
                    errs.push(format!(
                        "{path}.{name}: bit offset/size {got:?}, layout engine ({b}, {w})"
                    ));
                }
            }
            _ => {
                let got = md.udata(gimli::DW_AT_data_member_location);
                if got != Some(m.offset) {
                    errs.push(format!(
                        "{path}.{name}: offset {got:?}, layout engine {}",
                        m.offset
                    ));
                }
            }
        }
        match deref(tree, md) {
            Some((k, _)) => check_type(tree, k, &f.ty, &format!("{path}.{name}"), errs),
            None => errs.push(format!("{path}.{name}: no DW_AT_type")),
        }
        let _ = j;
    }
}

/// Per-kernel checks on the cubin's tree; `written` is the tree read from the PTX sections:
/// the subprogram's DIE tree as written, each variable's tag, address class and location
/// (ptx-interop 13.2 §5.2), the record's layout and the pointer's address class, and the
/// `.loc` lines in `.debug_line` and nvdisasm's annotations (§5.1).
fn judge(
    p: &Program,
    written: &Tree,
    cubin: &Tree,
    elf: &Elf<'_>,
    rows: &[LineRow],
    disasm_lines: &BTreeSet<u64>,
) -> Result<String, (String, String)> {
    let find = |t: &Tree| {
        t.dies
            .iter()
            .position(|d| d.tag == gimli::DW_TAG_subprogram && d.name() == Some(p.kernel.as_str()))
    };
    let (Some(wi), Some(ci)) = (find(written), find(cubin)) else {
        return Err((
            format!("a DW_TAG_subprogram `{}` in the cubin", p.kernel),
            "none".into(),
        ));
    };
    let (a, b) = (dump(written, wi), dump(cubin, ci));
    if a != b {
        let diff: Vec<String> = a
            .iter()
            .zip(&b)
            .filter(|(x, y)| x != y)
            .take(3)
            .map(|(x, y)| format!("wrote `{x}`, read `{y}`"))
            .collect();
        return Err((
            format!("the DIE tree as written ({} entries)", a.len()),
            format!("{} entries; {}", b.len(), diff.join("; ")),
        ));
    }
    let mut errs = Vec::new();
    let mut fbreg = 0;
    for v in &p.vars {
        let Some((vi, d)) = find_child(cubin, ci, &v.name) else {
            errs.push(format!("variable `{}` missing", v.name));
            continue;
        };
        check_variable(v, d, &mut errs);
        if check_location(v, d, elf, &mut errs) {
            fbreg += 1;
        }
        if v.name == "g" {
            // variable → typedef → the record.
            match deref(cubin, &cubin.dies[vi]) {
                Some((_, td)) if td.tag == gimli::DW_TAG_typedef => match deref(cubin, td) {
                    Some((ri, _)) => check_record(cubin, ri, &p.ty, &p.ty.name, &mut errs),
                    None => errs.push("typedef without DW_AT_type".into()),
                },
                other => errs.push(format!(
                    "`g`: type {:?} is not the typedef",
                    other.map(|(_, d)| d.tag)
                )),
            }
        }
        if v.name == "q" {
            let got = deref(cubin, d).and_then(|(_, t)| {
                (t.tag == gimli::DW_TAG_pointer_type).then(|| t.udata(gimli::DW_AT_address_class))
            });
            let want = Some(Some(u64::from(p.pointer_spaces[0].address_class())));
            if got != want {
                errs.push(format!("`q`: pointer address class {got:?}, want {want:?}"));
            }
        }
    }
    let lines = [p.seed % 1000 + 1, p.seed % 1000 + 2];
    for l in lines {
        if !rows.iter().any(|r| r.line == l) {
            errs.push(format!(".loc line {l} not in .debug_line"));
        }
        if !disasm_lines.contains(&l) {
            errs.push(format!(".loc line {l} not in nvdisasm -g's annotations"));
        }
    }
    if errs.is_empty() {
        Ok(format!(
            "{} DIEs, {} variables; classes, registers, symbols, sizes and offsets survive{}",
            b.len(),
            p.vars.len(),
            if fbreg > 0 {
                " (ptxas rewrote the .local DW_OP_addr as DW_OP_fbreg)"
            } else {
                ""
            }
        ))
    } else {
        Err((
            "the DWARF as written, and the layout engine's layout".into(),
            errs.join("; "),
        ))
    }
}

/// A variable's DIE: `DW_TAG_formal_parameter` for a parameter, `DW_TAG_variable` otherwise,
/// and the CUDA address class of its state space (ptx-interop 13.2 §5.2).
fn check_variable(v: &ExpectedVar, d: &Die, errs: &mut Vec<String>) {
    let want_tag = if v.parameter {
        gimli::DW_TAG_formal_parameter
    } else {
        gimli::DW_TAG_variable
    };
    if d.tag != want_tag {
        errs.push(format!("`{}` is {}, want {want_tag}", v.name, d.tag));
    }
    let class = d.udata(gimli::DW_AT_address_class);
    if class != Some(u64::from(v.space.address_class())) {
        errs.push(format!(
            "`{}`: DW_AT_address_class {class:?}, want {} ({})",
            v.name,
            v.space.address_class(),
            v.space.code_name()
        ));
    }
}

/// A variable's `DW_AT_location` after ptxas: a register variable names its register
/// (`DW_OP_regx`), a global or constant one a `DW_OP_addr` relocated against its symbol, a
/// shared one the symbol's address resolved in place; a local one may come back as
/// `DW_OP_fbreg` (true then). ptx-interop 13.2 §5.2.
fn check_location(v: &ExpectedVar, d: &Die, elf: &Elf<'_>, errs: &mut Vec<String>) -> bool {
    match (v.space, d.attr(gimli::DW_AT_location)) {
        (
            AddressClass::Reg | AddressClass::Sreg | AddressClass::Generic,
            Some(Val::Expr(bytes, _)),
        ) => {
            let reg = bytes
                .get(1..)
                .and_then(|b| {
                    let mut r = gimli::EndianSlice::new(b, gimli::LittleEndian);
                    gimli::Reader::read_uleb128(&mut r).ok()
                })
                .and_then(register_name);
            if reg.as_deref() != Some(v.location.as_str()) {
                errs.push(format!(
                    "`{}`: register {reg:?}, want {}",
                    v.name, v.location
                ));
            }
        }
        (AddressClass::Global | AddressClass::Const, Some(Val::Expr(_, t))) => {
            let got = t.first().map(|(_, t)| t.name.as_str());
            if got != Some(v.location.as_str()) {
                errs.push(format!(
                    "`{}`: DW_OP_addr relocated against {got:?}, want {}",
                    v.name, v.location
                ));
            }
        }
        (AddressClass::Shared, Some(Val::Expr(bytes, t))) => {
            // ptxas resolves shared addresses in place: the operand is the symbol's address.
            let got = bytes.get(1..9).map(|b| {
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                u64::from_le_bytes(a)
            });
            let want = elf.variables.get(&v.location).map(|x| x.1);
            if !t.is_empty() || got.is_none() || got != want {
                errs.push(format!(
                    "`{}`: DW_OP_addr {got:?}, want the address of `{}` ({want:?})",
                    v.name, v.location
                ));
            }
        }
        (AddressClass::Local, Some(Val::Expr(b, _))) if b.first() == Some(&0x91) => return true,
        (_, Some(Val::Expr(b, _))) if b.first() == Some(&0x03) => {}
        (_, other) => errs.push(format!("`{}`: location {other:?}", v.name)),
    }
    false
}

/// Relocations of `.debug_info` in cuobjdump `-elf`'s dump: (offset, symbol, addend).
fn cuobjdump_relocs(dump: &str) -> BTreeSet<(u64, String, i64)> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for line in dump.lines() {
        if line.starts_with(".section") {
            inside = line.contains(".rela.debug_info");
            continue;
        }
        if !inside {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() == 4 {
            let off = u64::from_str_radix(f[0].trim_start_matches("0x"), 16);
            let add = i64::from_str_radix(f[3].trim_start_matches("0x"), 16);
            if let (Ok(o), Ok(a)) = (off, add) {
                out.insert((o, f[1].to_string(), a));
            }
        }
    }
    out
}

/// Source lines nvdisasm `-g` annotates (`//## File "...", line N`).
fn disasm_lines(text: &str) -> BTreeSet<u64> {
    text.lines()
        .filter_map(|l| l.split("line ").nth(1))
        .filter_map(|r| r.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .collect()
}

/// Why a batch of round-trip kernels could not be judged (each of its cases fails with this).
/// `Clone` because a batch's result is kept for all its cases (`area::BatchCache`); the tool
/// and emitter errors, which are not, are shared behind an `Arc`.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BatchError {
    #[error(transparent)]
    Emit(Arc<EmitError>),
    #[error("ptxas -g rejected the generated PTX: {0}")]
    Ptxas(#[source] Arc<ToolError>),
    #[error("generated PTX: {0}")]
    Scan(#[source] ScanError),
    /// A `.section` the emitter must have written (`.debug_info`, `.debug_abbrev`).
    #[error("no {0} written")]
    MissingSection(&'static str),
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error("DWARF unreadable at {at:#x}: {what}")]
    Unreadable { at: u64, what: String },
    /// The cubin's `.debug_line` rows could not be read.
    #[error(transparent)]
    LineRows(#[from] CubinError),
    /// cuobjdump or nvdisasm did not run.
    #[error(transparent)]
    SecondReader(Arc<ToolError>),
    #[error(
        "object and cuobjdump -elf disagree on .rela.debug_info: {ours} vs {theirs} entries; \
         only object: {only_object:?}; only cuobjdump: {only_cuobjdump:?}"
    )]
    Relocations {
        ours: usize,
        theirs: usize,
        /// Up to three relocations (offset, symbol, addend) only object reads.
        only_object: Vec<(u64, String, i64)>,
        /// Up to three only cuobjdump lists.
        only_cuobjdump: Vec<(u64, String, i64)>,
    },
}

/// Run one batch: every seed in `[batch * BATCH, (batch + 1) * BATCH)`.
pub(crate) fn run_batch(tc: &Toolchain, batch: u64) -> Result<Verdicts, BatchError> {
    let programs: Vec<Program> = (batch * BATCH..(batch + 1) * BATCH).map(program).collect();
    let file = format!("gpucts_dwarf_{batch}.cu");
    let ptx = module(&programs, &file).map_err(|e| BatchError::Emit(Arc::new(e)))?;
    let cubin = tc
        .ptxas(&ptx, "sm_90", &["-g"])
        .map_err(|e| BatchError::Ptxas(Arc::new(e)))?;
    let scanned = ptxscan::scan(&ptx).map_err(BatchError::Scan)?;
    let info = scanned
        .section(".debug_info")
        .ok_or(BatchError::MissingSection(".debug_info"))?;
    let abbrev = scanned
        .section(".debug_abbrev")
        .ok_or(BatchError::MissingSection(".debug_abbrev"))?;
    let refs = info
        .refs
        .iter()
        .map(|r| {
            let t = Target {
                name: r.label.clone(),
                addend: r.addend,
                space: scanned.variables.get(&r.label).map(|s| s.space),
                section: r.label.starts_with(".debug"),
            };
            (r.offset, t)
        })
        .collect();
    let written = read_tree(&Sections {
        info: &info.bytes,
        abbrev: &abbrev.bytes,
        str: &[],
        refs,
    });
    let elf = Elf::parse(&cubin)?;
    let secs = elf.sections();
    let back = read_tree(&secs);
    if let Some((at, e)) = back.error.as_ref().or(written.error.as_ref()) {
        return Err(BatchError::Unreadable {
            at: *at,
            what: e.clone(),
        });
    }
    let rows = super::check::line_rows(&cubin)?;
    // The second reader: cuobjdump's relocations must be object's, one for one.
    let ours: BTreeSet<(u64, String, i64)> = secs
        .refs
        .iter()
        .map(|(o, t)| (*o as u64, t.name.clone(), t.addend))
        .collect();
    let mut second = String::new();
    if tc.has(Capability::Cuobjdump) {
        let dump = tc
            .cuobjdump(&cubin, &["-elf"])
            .map_err(|e| BatchError::SecondReader(Arc::new(e)))?;
        let theirs = cuobjdump_relocs(&dump);
        if theirs != ours {
            return Err(BatchError::Relocations {
                ours: ours.len(),
                theirs: theirs.len(),
                only_object: ours.difference(&theirs).take(3).cloned().collect(),
                only_cuobjdump: theirs.difference(&ours).take(3).cloned().collect(),
            });
        }
        second += &format!("; cuobjdump agrees on {} relocations", ours.len());
    } else {
        // The pass then proves less: say so instead of passing silently.
        second += "; relocations not cross-checked (no cuobjdump)";
    }
    let dl = if tc.has(Capability::Nvdisasm) {
        let text = tc
            .nvdisasm(&cubin, &["-g"])
            .map_err(|e| BatchError::SecondReader(Arc::new(e)))?;
        disasm_lines(&text)
    } else {
        second += "; line rows not cross-checked (no nvdisasm)";
        rows.iter().map(|r| r.line).collect()
    };
    Ok(programs
        .iter()
        .map(|p| {
            let v = judge(p, &written, &back, &elf, &rows, &dl).map(|n| format!("{n}{second}"));
            (p.seed, v)
        })
        .collect())
}
