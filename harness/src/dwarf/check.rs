//! `gpucts dwarf check FILE...`: the rules of ptx-interop 13.2 ch. 5 applied to a PTX file, a
//! cubin or another CUDA ELF object, from any producer.
//!
//! - §5.1: a PTX file with debug information carries `.debug_info` and `.debug_abbrev`; their
//!   label references resolve to labels, symbols or sections of the module; subprogram names
//!   (linkage names first) are functions of the module; the compilation unit's name is a file of
//!   the `.file` table; every `.loc` names a declared file and comes back from the
//!   `.debug_line` ptxas builds (when ptxas is available) at its line and column.
//! - §5.2: every `DW_TAG_variable` and `DW_TAG_formal_parameter` carries
//!   `DW_AT_address_class` with a code of the table (1..12), and the code is the state space of
//!   its location: a `.reg` → 2, a special register → 3, `.const` → 4, `.global` → 5, `.local`
//!   → 6, `.param` → 7, `.shared` → 8, texture/surface/sampler references → 10/9/11, an address
//!   held in a register (`DW_OP_bregx`) → 12 (generic), except the local depot `%SPL` → 6.
//!
//! Exit status (the contract): 0 no findings, 1 findings, 2 a file could not be read.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;

use super::elf::Elf;
use super::ptxscan::{self, is_special_register, AddressClass, PtxDebug};
use super::read::{read_tree, register_name, Die, Sections, Target, Tree, Val};
use crate::backend::toolchain::Toolchain;
use crate::capability::Capability;
use crate::cubin::{Cubin, CubinError, LineRow};

pub(crate) const CLAUSE_SECTIONS: &str = "ptx-interop 13.2 §5.1";
pub(crate) const CLAUSE_CLASS: &str = "ptx-interop 13.2 §5.2";

/// One finding: where, which clause, what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub position: String,
    pub clause: &'static str,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} [{}]", self.position, self.message, self.clause)
    }
}

/// What a checked file said: its findings, and notes on checks that could not run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    pub notes: Vec<String>,
    /// Variables and parameters whose location named a state space to compare the class with.
    pub classes_compared: usize,
    /// `.loc` directives found again in `.debug_line`.
    pub locs_found: usize,
    /// FDEs of the back end's `.debug_frame` that name a function of the object.
    pub fdes: usize,
    /// Each named variable or parameter DIE's `DW_AT_address_class` code (§5.2).
    pub classes: BTreeMap<String, u64>,
}

/// A file that could not be read at all (exit 2): `file:line:col: what` or `file:offset`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unreadable(pub String);

/// The largest input file read.
pub(crate) const MAX_FILE: u64 = 256 << 20;

/// Check one file (PTX text or ELF bytes, told apart by content).
pub(crate) fn check_path(
    path: &std::path::Path,
    tc: Option<&Toolchain>,
) -> Result<Report, Unreadable> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| Unreadable(format!("{shown}: {e}")))?;
    if meta.len() > MAX_FILE {
        return Err(Unreadable(format!(
            "{shown}: {} bytes; at most {MAX_FILE} are read",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| Unreadable(format!("{shown}: {e}")))?;
    check_bytes(&shown, &bytes, tc)
}

pub(crate) fn check_bytes(
    shown: &str,
    bytes: &[u8],
    tc: Option<&Toolchain>,
) -> Result<Report, Unreadable> {
    if bytes.starts_with(b"\x7fELF") {
        return check_elf(shown, bytes);
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        Unreadable(format!(
            "{shown}: byte {}: neither an ELF object nor PTX text (invalid UTF-8)",
            e.valid_up_to()
        ))
    })?;
    if !text.contains(".version") {
        return Err(Unreadable(format!(
            "{shown}:1:1: neither an ELF object nor PTX (no `.version` directive)"
        )));
    }
    check_ptx(shown, text, tc)
}

fn decode_uleb(b: &[u8]) -> Option<(u64, usize)> {
    let (mut v, mut shift) = (0u64, 0u32);
    for (i, x) in b.iter().enumerate() {
        if shift > 63 {
            return None;
        }
        v |= u64::from(x & 0x7f) << shift;
        shift += 7;
        if x & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The state space a location expression puts its object in, when the expression says.
enum Located {
    AddressClass(AddressClass, String),
    Broken(String),
    Unknown,
}

fn locate(v: &Val, registers: &dyn Fn(&str) -> bool) -> Located {
    let Val::Expr(bytes, targets) = v else {
        return Located::Unknown; // a location list or no location: nothing to compare
    };
    let Some(&op) = bytes.first() else {
        return Located::Unknown;
    };
    match op {
        0x03 => match targets.first() {
            Some((_, t)) => match t.space {
                Some(sp) => Located::AddressClass(sp, format!("symbol `{}`", t.name)),
                None => Located::Broken(format!(
                    "DW_OP_addr names `{}`, which is no symbol of the module",
                    t.name
                )),
            },
            None => Located::Unknown, // a resolved constant address (ELF): no symbol to ask
        },
        0x90 | 0x92 => {
            let Some((n, _)) = decode_uleb(&bytes[1..]) else {
                return Located::Broken("truncated DW_OP_regx/DW_OP_bregx operand".into());
            };
            let Some(name) = register_name(n) else {
                return Located::Unknown; // a register number, not a PTX name
            };
            if !is_special_register(&name) && !registers(&name) {
                return Located::Broken(format!("register `{name}` is not declared"));
            }
            let sp = match (op, name.as_str()) {
                (0x92, "%SPL") => AddressClass::Local,
                (0x92, _) => AddressClass::Generic,
                _ if is_special_register(&name) => AddressClass::Sreg,
                _ => AddressClass::Reg,
            };
            Located::AddressClass(sp, format!("register `{name}`"))
        }
        // The frame is in `.local` (ptxas 12.9 itself rewrites a `.local` symbol's DW_OP_addr
        // into DW_OP_fbreg).
        0x91 => Located::AddressClass(
            AddressClass::Local,
            "a frame-base offset (the .local frame)".into(),
        ),
        0x50..=0x6f => Located::AddressClass(AddressClass::Reg, "a DW_OP_reg register".into()),
        0x70..=0x8f => {
            Located::AddressClass(AddressClass::Generic, "an address in a register".into())
        }
        _ => Located::Unknown,
    }
}

/// The rules on the DIE tree shared by PTX and ELF inputs.
fn check_tree(
    tree: &Tree,
    pos: &dyn Fn(u64) -> String,
    functions: &dyn Fn(&str) -> bool,
    function_list: &str,
    registers: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) -> usize {
    let mut compared = 0;
    if let Some((at, e)) = &tree.error {
        out.push(Finding {
            position: pos(*at),
            clause: CLAUSE_SECTIONS,
            message: format!("unreadable .debug_info: {e}"),
        });
    }
    for d in &tree.dies {
        // A subroutine type's parameter list (a function pointer's type) describes types,
        // not storage: §5.2's class is for variables and parameters.
        let type_list = d
            .parent
            .and_then(|p| tree.dies.get(p))
            .is_some_and(|p| p.tag == gimli::DW_TAG_subroutine_type);
        match d.tag {
            gimli::DW_TAG_formal_parameter if type_list => {}
            gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter => {
                compared += check_variable(d, pos, registers, out);
            }
            gimli::DW_TAG_subprogram => check_subprogram(d, pos, functions, function_list, out),
            _ => {}
        }
    }
    compared
}

/// The `DW_AT_address_class` code of every named variable and parameter DIE.
fn address_classes(tree: &Tree) -> BTreeMap<String, u64> {
    tree.dies
        .iter()
        .filter(|d| {
            matches!(
                d.tag,
                gimli::DW_TAG_variable | gimli::DW_TAG_formal_parameter
            )
        })
        .filter_map(|d| match (d.name(), d.attr(gimli::DW_AT_address_class)) {
            (Some(n), Some(Val::U(c))) => Some((n.to_string(), *c)),
            _ => None,
        })
        .collect()
}

/// A DIE's tag and name (or offset), for messages.
fn die_what(d: &Die) -> String {
    let tag = d.tag.static_string().unwrap_or("DW_TAG_?");
    match d.name() {
        Some(n) => format!("{tag} `{n}`"),
        None => format!("{tag} at {:#x}", d.offset),
    }
}

/// §5.2: a variable or parameter DIE has a `DW_AT_address_class` of the table, and its
/// location is in that class's space. Returns 1 when a location was compared with the class.
fn check_variable(
    d: &Die,
    pos: &dyn Fn(u64) -> String,
    registers: &dyn Fn(&str) -> bool,
    out: &mut Vec<Finding>,
) -> usize {
    let what = || die_what(d);
    let class = match d.attr(gimli::DW_AT_address_class) {
        None => {
            out.push(Finding {
                position: pos(d.offset),
                clause: CLAUSE_CLASS,
                message: format!("{} has no DW_AT_address_class", what()),
            });
            None
        }
        Some(Val::U(c)) if (1..=12).contains(c) => AddressClass::from_class(*c),
        Some(v) => {
            let shown = match v {
                Val::U(c) => c.to_string(),
                Val::S(c) => c.to_string(),
                other => format!("{other:?}"),
            };
            out.push(Finding {
                position: pos(d.offset),
                clause: CLAUSE_CLASS,
                message: format!(
                    "{}: DW_AT_address_class {shown} is not a code of the table (1..12)",
                    what()
                ),
            });
            None
        }
    };
    let Some(loc) = d.attr(gimli::DW_AT_location) else {
        return 0;
    };
    match locate(loc, registers) {
        Located::Broken(m) => {
            out.push(Finding {
                position: pos(d.offset),
                clause: CLAUSE_SECTIONS,
                message: format!("{}: {m}", what()),
            });
            0
        }
        Located::AddressClass(sp, how) => {
            if let Some(c) = class.filter(|&c| c != sp) {
                out.push(Finding {
                    position: pos(d.offset),
                    clause: CLAUSE_CLASS,
                    message: format!(
                        "{}: DW_AT_address_class {} ({}) but its location is {how}, in {} ({})",
                        what(),
                        c.address_class(),
                        c.code_name(),
                        sp.code_name(),
                        sp.address_class()
                    ),
                });
            }
            1
        }
        Located::Unknown => 0,
    }
}

/// A subprogram with code names a function of the module, and its `DW_AT_low_pc` a label.
fn check_subprogram(
    d: &Die,
    pos: &dyn Fn(u64) -> String,
    functions: &dyn Fn(&str) -> bool,
    function_list: &str,
    out: &mut Vec<Finding>,
) {
    if d.attr(gimli::DW_AT_low_pc).is_none() {
        return; // a declaration or an abstract instance: no code of its own
    }
    let linkage = [gimli::DW_AT_linkage_name, gimli::DW_AT_MIPS_linkage_name]
        .into_iter()
        .find_map(|a| match d.attr(a) {
            Some(Val::Str(s)) => Some((a, s.as_str())),
            _ => None,
        });
    let (attr, name) = match (linkage, d.name()) {
        (Some((a, n)), _) => (a.static_string().unwrap_or("linkage name"), n),
        (None, Some(n)) => ("DW_AT_name", n),
        (None, None) => return,
    };
    if !functions(name) {
        out.push(Finding {
            position: pos(d.offset),
            clause: CLAUSE_SECTIONS,
            message: format!(
                "DW_TAG_subprogram {attr} `{name}` is no function of the module (functions: {function_list})"
            ),
        });
    }
    if let Some(Val::Addr(Ok(t))) = d.attr(gimli::DW_AT_low_pc) {
        if t.space.is_none() {
            out.push(Finding {
                position: pos(d.offset),
                clause: CLAUSE_SECTIONS,
                message: format!(
                    "DW_TAG_subprogram `{name}`: DW_AT_low_pc names `{}`, which is no label of the module",
                    t.name
                ),
            });
        }
    }
}

fn compile_units(tree: &Tree) -> Vec<(u64, String, Option<String>)> {
    tree.dies
        .iter()
        .filter(|d| d.tag == gimli::DW_TAG_compile_unit)
        .filter_map(|d| {
            let dir = match d.attr(gimli::DW_AT_comp_dir) {
                Some(Val::Str(s)) => Some(s.clone()),
                _ => None,
            };
            d.name().map(|n| (d.offset, n.to_string(), dir))
        })
        .collect()
}

fn same_file(cu: &str, dir: Option<&str>, file: &str) -> bool {
    let joined = dir.map(|d| format!("{}/{cu}", d.trim_end_matches('/')));
    file == cu || joined.as_deref() == Some(file)
}

/// Check a PTX text.
pub(crate) fn check_ptx(
    shown: &str,
    text: &str,
    tc: Option<&Toolchain>,
) -> Result<Report, Unreadable> {
    let d = ptxscan::scan(text).map_err(|e| Unreadable(format!("{shown}:{e}")))?;
    let mut r = Report::default();
    let has_dwarf = d.sections.iter().any(|s| s.name.starts_with(".debug_"));
    for need in [".debug_info", ".debug_abbrev"] {
        if (d.target_debug || has_dwarf) && d.section(need).is_none() {
            r.findings.push(Finding {
                position: format!("{shown}:1"),
                clause: CLAUSE_SECTIONS,
                message: format!(
                    "no `.section {need}`: a PTX file with debug information carries .debug_info and .debug_abbrev"
                ),
            });
        }
    }
    // Every label reference resolves.
    let defined: HashSet<&str> = d.sections.iter().map(|s| s.name.as_str()).collect();
    let target_of = |label: &str, addend: i64| -> Target {
        let section = label.starts_with(".debug_") || defined.contains(label);
        let space = if section || d.labels.contains(label) || d.functions.contains_key(label) {
            Some(AddressClass::Code)
        } else {
            d.variables.get(label).map(|s| s.space)
        };
        Target {
            name: label.to_string(),
            addend,
            space,
            section,
        }
    };
    for s in &d.sections {
        for rf in &s.refs {
            if target_of(&rf.label, rf.addend).space.is_none() {
                r.findings.push(Finding {
                    position: format!("{shown}:{}:{}", rf.line, rf.col),
                    clause: CLAUSE_SECTIONS,
                    message: format!(
                        "`{}` in {} is no label, symbol or section of the module",
                        rf.label, s.name
                    ),
                });
            }
        }
    }
    if let (Some(info), Some(abbrev)) = (d.section(".debug_info"), d.section(".debug_abbrev")) {
        let refs = info
            .refs
            .iter()
            .map(|rf| (rf.offset, target_of(&rf.label, rf.addend)))
            .collect();
        let str_sec = d
            .section(".debug_str")
            .map(|s| s.bytes.as_slice())
            .unwrap_or(&[]);
        let tree = read_tree(&Sections {
            info: &info.bytes,
            abbrev: &abbrev.bytes,
            str: str_sec,
            refs,
        });
        let pos = |off: u64| format!("{shown}:{}", info.line_of(off as usize));
        let fnames: Vec<&str> = d.functions.keys().map(String::as_str).collect();
        r.classes = address_classes(&tree);
        r.classes_compared = check_tree(
            &tree,
            &pos,
            &|n| d.functions.contains_key(n),
            &fnames.join(", "),
            &|reg| d.has_register(reg),
            &mut r.findings,
        );
        // §5.1: "standard DWARF2 sections".
        for x in super::forms::dwarf2_departures(&info.bytes, &abbrev.bytes) {
            r.findings.push(Finding {
                position: pos(x.offset),
                clause: CLAUSE_SECTIONS,
                message: x.message,
            });
        }
        check_compile_units(&tree, &d, &pos, &mut r.findings);
    }
    for l in &d.locs {
        if !d.files.contains_key(&l.file) {
            r.findings.push(Finding {
                position: format!("{shown}:{}", l.ptx_line),
                clause: CLAUSE_SECTIONS,
                message: format!(".loc names file {}, which no .file declares", l.file),
            });
        }
    }
    if !d.locs.is_empty() {
        line_table(shown, text, &d, tc, &mut r);
    }
    Ok(r)
}

/// §5.1: every compile unit names a file of the module's `.file` table.
fn check_compile_units(
    tree: &Tree,
    d: &PtxDebug,
    pos: &dyn Fn(u64) -> String,
    findings: &mut Vec<Finding>,
) {
    for (off, cu, dir) in compile_units(tree) {
        if !d
            .files
            .values()
            .any(|(f, _)| same_file(&cu, dir.as_deref(), f))
        {
            let files: Vec<String> = d
                .files
                .iter()
                .map(|(n, (f, _))| format!("{n} \"{f}\""))
                .collect();
            findings.push(Finding {
                position: pos(off),
                clause: CLAUSE_SECTIONS,
                message: format!(
                    "compile unit `{cu}` (comp_dir {}) is not a file of the .file table ({})",
                    dir.as_deref().unwrap_or("none"),
                    files.join(", ")
                ),
            });
        }
    }
}

/// §5.1: ptxas builds `.debug_line` from `.file`/`.loc`; assemble (`-g`, which keeps every
/// instruction) and look for every `.loc` that precedes an instruction.
fn line_table(shown: &str, text: &str, d: &PtxDebug, tc: Option<&Toolchain>, r: &mut Report) {
    let Some(tc) = tc.filter(|t| t.has(Capability::Ptxas)) else {
        r.notes.push(format!(
            "{shown}: .loc → .debug_line not checked (ptxas not available)"
        ));
        return;
    };
    let cubin = match tc.ptxas(text, "sm_90", &["-g"]) {
        Ok(c) => c,
        Err(e) => {
            r.findings.push(Finding {
                position: format!("{shown}:1"),
                clause: CLAUSE_SECTIONS,
                message: format!("ptxas -g does not assemble the file: {e}"),
            });
            return;
        }
    };
    let rows = match line_rows(&cubin) {
        Ok(rows) => rows,
        Err(e) => {
            r.findings.push(Finding {
                position: format!("{shown}:1"),
                clause: CLAUSE_SECTIONS,
                message: format!("the .debug_line ptxas built is unreadable: {e}"),
            });
            return;
        }
    };
    let with_cols = rows.iter().any(|x| x.column != 0);
    // Line 0 is DWARF's "no source line": ptxas gives it no row of its own.
    for l in d.locs.iter().filter(|l| l.has_code && l.line != 0) {
        let Some((file, _)) = d.files.get(&l.file) else {
            continue;
        };
        let hit = rows.iter().any(|row| {
            row.file == *file
                && row.line == l.line
                && (!with_cols || row.column == l.col || l.col == 0)
        });
        if hit {
            r.locs_found += 1;
        } else {
            r.findings.push(Finding {
                position: format!("{shown}:{}", l.ptx_line),
                clause: CLAUSE_SECTIONS,
                message: format!(
                    ".loc {} {} {} has no row in the .debug_line ptxas built (file \"{file}\")",
                    l.file, l.line, l.col
                ),
            });
        }
    }
}

/// The rows of every line program in a cubin's `.debug_line`: the one line-table reader,
/// [`crate::cubin::Cubin::line_rows`].
pub(crate) fn line_rows(elf: &[u8]) -> Result<Vec<LineRow>, CubinError> {
    Cubin::parse(elf)?.line_rows()
}

/// Check an ELF object (a cubin).
/// §5.1: the back end generates `.debug_frame`; in an object with `.debug_info` it is there,
/// reads, and has an FDE for each function with code ([`super::frame`]).
fn check_frames(shown: &str, e: &Elf<'_>, r: &mut Report) {
    let Some(frames) = super::frame::frames(e) else {
        r.findings.push(Finding {
            position: format!("{shown}:0"),
            clause: CLAUSE_SECTIONS,
            message: "debug information without .debug_frame: the back end generates .debug_frame"
                .into(),
        });
        return;
    };
    let f = super::frame::check(&frames);
    r.fdes = f.fdes.iter().filter(|(s, _)| *s != "?").map(|x| x.1).sum();
    for (at, message) in f.problems {
        r.findings.push(Finding {
            position: match at {
                Some(off) => format!("{shown}:.debug_frame+{off:#x}"),
                None => format!("{shown}:.debug_frame"),
            },
            clause: CLAUSE_SECTIONS,
            message,
        });
    }
}

pub(crate) fn check_elf(shown: &str, bytes: &[u8]) -> Result<Report, Unreadable> {
    let e = Elf::parse(bytes).map_err(|x| Unreadable(format!("{shown}: {x}")))?;
    let mut r = Report::default();
    let has_info = e.section(".debug_info").is_some();
    if !has_info && e.section(".debug_line").is_none() {
        r.findings.push(Finding {
            position: format!("{shown}:0"),
            clause: CLAUSE_SECTIONS,
            message: "no .debug_info and no .debug_line: the object carries no debug information"
                .into(),
        });
        return Ok(r);
    }
    if has_info && e.section(".debug_abbrev").is_none() {
        r.findings.push(Finding {
            position: format!("{shown}:0"),
            clause: CLAUSE_SECTIONS,
            message: ".debug_info without .debug_abbrev".into(),
        });
        return Ok(r);
    }
    if has_info {
        check_frames(shown, &e, &mut r);
        let s = e.sections();
        let tree = read_tree(&s);
        let pos = |off: u64| format!("{shown}:.debug_info+{off:#x}");
        let fnames: BTreeSet<&str> = e.functions.iter().map(String::as_str).collect();
        let list: Vec<&str> = fnames.iter().copied().collect();
        r.classes = address_classes(&tree);
        r.classes_compared = check_tree(
            &tree,
            &pos,
            &|n| fnames.contains(n),
            &list.join(", "),
            &|_| true,
            &mut r.findings,
        );
        if let Ok(rows) = line_rows(bytes) {
            let files: BTreeSet<&str> = rows.iter().map(|x| x.file.as_str()).collect();
            for (off, cu, dir) in compile_units(&tree) {
                if !files.is_empty() && !files.iter().any(|f| same_file(&cu, dir.as_deref(), f)) {
                    let list: Vec<&str> = files.iter().copied().collect();
                    r.findings.push(Finding {
                        position: pos(off),
                        clause: CLAUSE_SECTIONS,
                        message: format!(
                            "compile unit `{cu}` (comp_dir {}) is not a file of .debug_line ({})",
                            dir.as_deref().unwrap_or("none"),
                            list.join(", ")
                        ),
                    });
                }
            }
        }
    }
    Ok(r)
}

/// `gpucts dwarf check FILE...`: findings on stdout, unreadable files on stderr; the exit status
/// is 2 if any file was unreadable, else 1 if any finding, else 0. `config`: the command's
/// settings (where the tools are).
pub fn cli(files: &[std::path::PathBuf], config: &crate::config::RunConfig) -> i32 {
    let tc = Toolchain::discover_with(crate::backend::toolchain::ToolSettings::of(config, None));
    let (mut findings, mut unreadable, mut compared) = (0usize, 0usize, 0usize);
    for f in files {
        match check_path(f, Some(&tc)) {
            Ok(r) => {
                compared += r.classes_compared;
                for x in &r.findings {
                    println!("{x}");
                }
                for n in &r.notes {
                    eprintln!("note: {n}");
                }
                findings += r.findings.len();
            }
            Err(e) => {
                eprintln!("gpucts: {e}");
                unreadable += 1;
            }
        }
    }
    // A clean file prints no finding; the summary says what was looked at.
    eprintln!(
        "gpucts dwarf check: {} files ({unreadable} unreadable), {compared} variables' address classes compared with their locations, {findings} findings",
        files.len()
    );
    if unreadable > 0 {
        2
    } else if findings > 0 {
        1
    } else {
        0
    }
}
