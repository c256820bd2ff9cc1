//! Dat3M's PTX `.litmus` syntax (the tests under Dat3M's `litmus/PTX/`):
//!
//! ```text
//! PTX MP-gpu
//! "optional description"
//! { x=0; y=0; P1:r1=0; }
//!  P0@cta 0,gpu 0      | P1@cta 1,gpu 0       ;
//!  st.weak x, 1        | ld.acquire.gpu r1, y ;
//!  st.release.gpu y, 1 | ld.weak r2, x        ;
//! exists (P1:r1 == 1 /\ P1:r2 == 0)
//! ```
//!
//! Instruction modifiers are read by kind, not position, so `atom.add.acquire.gpu.s32` (how
//! NVRTC orders them) and `atom.acquire.gpu.add` (Dat3M) mean the same. `membar.{cta,gl,sys}`
//! reads as `fence.sc` of that scope. Branches and labels are not supported (tests here are
//! straight-line); they are reported with their line.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{
    parse_condition, parse_int, Alias, AtomOp, BranchCond, LitmusTest, LocalOp, Location, Op,
    Operand, Proxy, ProxyFenceKind, Scope, Sem, Thread,
};

/// A parse error: 1-based line, column and message. Displays as `LINE:COLUMN: message` so that
/// a caller can prefix `path:`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {msg}")]
pub struct ImportError {
    pub line: usize,
    /// 1-based column of the offending cell or entry (1 when the whole line is at fault).
    pub col: usize,
    pub msg: String,
}

/// Why an instruction cell is not an operation the model knows; each says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    #[error("bad label `{0}`")]
    BadLabel(String),
    /// The PTX instruction reader's message.
    #[error("{0}")]
    Instruction(String),
    #[error(
        "guarded instructions are not supported (`{0}`); write the branch with \
         beq/bne/blt/ble/bgt/bge"
    )]
    Guarded(String),
    #[error("`{opcode}` takes {expected} operands, `{text}` has {found}")]
    Operands {
        opcode: String,
        expected: usize,
        found: usize,
        text: String,
    },
    #[error("unsupported modifier `.{modifier}` in `{text}`")]
    Modifier { modifier: String, text: String },
    #[error("unsupported barrier modifier `.{modifier}` in `{text}` (allowed: .cta, .sync, .arrive, .aligned)")]
    BarrierModifier { modifier: String, text: String },
    /// `kind`: label, register or location.
    #[error("`{name}` in `{text}` is not a {kind} name")]
    NotAName {
        kind: &'static str,
        name: String,
        text: String,
    },
    #[error(
        "`{operand}` in `{text}` is neither a register nor an integer (PTX literals: \
         decimal, 0x hex, 0b binary, 0-prefixed octal)"
    )]
    NotAValue { operand: String, text: String },
    #[error(
        "unsupported proxy fence `{0}` (allowed: fence.proxy.surface, \
         fence.proxy.texture, fence.proxy.constant, fence.proxy.alias)"
    )]
    ProxyFence(String),
    #[error(
        "unsupported instruction `{opcode}` in `{text}` (supported: ld, st, atom, red, fence, \
         membar, mov, add/sub/mul/div/and/or/xor, beq/bne/blt/ble/bgt/bge, goto/bra, \
         bar/barrier, fence.proxy.*, tld, suld, sust, cold, ld.const, labels `L:`)"
    )]
    Unsupported { opcode: String, text: String },
    /// The instruction is known but its form is not: `expected` says which form is.
    #[error("`{text}`: {expected}")]
    Form {
        text: String,
        expected: &'static str,
    },
}

fn err<T>(line: usize, msg: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError {
        line,
        col: 1,
        msg: msg.into(),
    })
}

fn err_at<T>(line: usize, col: usize, msg: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError {
        line,
        col,
        msg: msg.into(),
    })
}

/// 1-based column (in characters) of `part`, a subslice of `line`, where its text starts
/// after leading blanks; 1 when `part` does not lie in `line`.
fn col_of(line: &str, part: &str) -> usize {
    let start = line.as_ptr() as usize;
    let at = part.as_ptr() as usize;
    if at < start || at + part.len() > start + line.len() {
        return 1;
    }
    let lead = part.len() - part.trim_start().len();
    line.get(..at - start + lead)
        .map_or(1, |before| before.chars().count() + 1)
}

/// [`col_of`] for the parts of one line taken left to right (the entries of an init block,
/// the cells of a row): it counts the characters between one part and the next only, so a
/// line of n parts costs O(line) rather than n counts from the line's start (a one-line
/// init block of 100,000 entries spent seconds counting).
struct Columns<'a> {
    line: &'a str,
    /// A byte offset into `line` and the number of characters before it.
    byte: usize,
    chars: usize,
}

impl<'a> Columns<'a> {
    fn new(line: &'a str) -> Self {
        Columns {
            line,
            byte: 0,
            chars: 0,
        }
    }

    fn of(&mut self, part: &str) -> usize {
        let start = self.line.as_ptr() as usize;
        let at = part.as_ptr() as usize;
        if at < start || at + part.len() > start + self.line.len() {
            return 1;
        }
        let lead = part.len() - part.trim_start().len();
        let to = at - start + lead;
        if to < self.byte {
            return col_of(self.line, part); // out of order: count from the start
        }
        let Some(between) = self.line.get(self.byte..to) else {
            return col_of(self.line, part);
        };
        self.chars += between.chars().count();
        self.byte = to;
        self.chars + 1
    }
}

/// Advances `*i` past blank lines.
fn skip_blank(lines: &[&str], i: &mut usize) {
    while *i < lines.len() && lines[*i].trim().is_empty() {
        *i += 1;
    }
}

/// The `PTX NAME` header (after blank lines): the test's name. `*i` ends on the next line.
fn header<'a>(lines: &[&'a str], i: &mut usize) -> Result<&'a str, ImportError> {
    skip_blank(lines, i);
    let Some(first) = lines.get(*i) else {
        return err(1, "empty file (expected `PTX NAME`)");
    };
    let name = match first.trim().strip_prefix("PTX") {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => rest.trim(),
        _ => return err(*i + 1, "expected `PTX NAME` header"),
    };
    if name.is_empty() {
        return err(*i + 1, "missing test name after `PTX`");
    }
    if let Some(why) = super::test_name_problem(name) {
        return err_at(
            *i + 1,
            col_of(first, name),
            format!("test name {name:?} {why}; a name is one line of text"),
        );
    }
    *i += 1;
    Ok(name)
}

/// The quoted description strings (possibly spanning lines) from line `*i` up to the init
/// block, and the byte offset in line `*i` just after the init block's `{`.
fn descriptions(lines: &[&str], i: &mut usize) -> Result<(Vec<String>, usize), ImportError> {
    let mut desc = Vec::new();
    while *i < lines.len() {
        let l = lines[*i].trim();
        if l.is_empty() {
            *i += 1;
            continue;
        }
        if let Some(body) = l.strip_prefix('"') {
            let mut s = String::new();
            let mut body = body.to_string();
            let start = *i;
            loop {
                if let Some(end) = closing_quote(&body) {
                    s.push_str(&unescape(&body[..end]));
                    break;
                }
                s.push_str(&unescape(&body));
                s.push('\n');
                *i += 1;
                if *i >= lines.len() {
                    return err(start + 1, "unterminated description string");
                }
                body = lines[*i].to_string();
            }
            // A carriage return in a description is a line-end artefact (a CRLF file, or a
            // CR before the LF that `str::lines` strips only when it is the line's last
            // character): dropped, so that export, which writes LF line ends, round-trips.
            s.retain(|c| c != '\r');
            if let Some(c) = s
                .chars()
                .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
            {
                return err(
                    start + 1,
                    format!("the description holds the control character {c:?}; a description is text, lines and tabs"),
                );
            }
            desc.push(s);
            *i += 1;
            continue;
        }
        if l.starts_with('{') {
            // `l` is the line trimmed, so its `{` sits after the line's leading blanks.
            let indent = lines[*i].len() - lines[*i].trim_start().len();
            return Ok((desc, indent + 1));
        }
        return err(
            *i + 1,
            format!("expected `{{` (the init block), found `{l}`"),
        );
    }
    Ok((desc, 0))
}

/// What the init block declares: the locations (initial values, proxy aliases) and each
/// thread's initial registers, by thread index.
struct Init {
    locations: Vec<Location>,
    regs: BTreeMap<usize, BTreeMap<String, i64>>,
}

/// The init block from byte `from` of line `*i` (just after its `{`) to its `}`: `;`-separated
/// entries on one line or many. `*i` ends on the line after the `}`. An entry's error points
/// at the entry in the file's own line.
fn init_block(lines: &[&str], i: &mut usize, from: usize) -> Result<Init, ImportError> {
    if *i >= lines.len() {
        return err(lines.len(), "missing init block `{ ... }`");
    }
    let mut locations: Vec<Location> = Vec::new();
    // Names declared so far: a set, so an init block of many locations stays linear.
    let mut declared: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut regs: BTreeMap<usize, BTreeMap<String, i64>> = BTreeMap::new();
    let mut from = from;
    loop {
        let Some(line) = lines.get(*i) else {
            return err(lines.len(), "unterminated init block (missing `}`)");
        };
        let rest = line.get(from..).unwrap_or("");
        let (body, closed) = match rest.find('}') {
            Some(p) => (&rest[..p], true),
            None => (rest, false),
        };
        let mut cols = Columns::new(line);
        for entry in body.split(';') {
            let e = entry.trim();
            if e.is_empty() {
                continue;
            }
            let col = cols.of(entry);
            init_entry(e, *i + 1, col, &mut locations, &mut declared, &mut regs)?;
            // Checked entry by entry, so that a huge block is refused at its first entry past
            // the bound, before the rest is even split.
            if locations.len() > super::MAX_LOCATIONS {
                return err_at(
                    *i + 1,
                    col,
                    format!(
                        "the init block declares more than {0} locations; a litmus test has at most {0}",
                        super::MAX_LOCATIONS
                    ),
                );
            }
        }
        *i += 1;
        if closed {
            return Ok(Init { locations, regs });
        }
        from = 0;
    }
}

/// The thread header `P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;` (after blank lines): one thread per
/// column, placed by `cta`/`cluster`/`gpu`/`warp`, holding the registers the init block gave
/// it. `*i` ends on the next line.
fn thread_header(
    lines: &[&str],
    i: &mut usize,
    mut regs: BTreeMap<usize, BTreeMap<String, i64>>,
) -> Result<Vec<Thread>, ImportError> {
    skip_blank(lines, i);
    let Some(header) = lines.get(*i) else {
        return err(lines.len(), "missing thread header `P0@cta 0,gpu 0 | ...;`");
    };
    let header_line = *i + 1;
    let mut threads = Vec::new();
    let mut cols = Columns::new(header);
    for (col, cell) in split_row(header).iter().enumerate() {
        let at = cols.of(cell);
        if col == super::MAX_THREADS {
            return err_at(
                header_line,
                at,
                format!(
                    "the header has more than {0} threads; a litmus test has at most {0}",
                    super::MAX_THREADS
                ),
            );
        }
        let cell = cell.trim();
        let (pname, place) = match cell.split_once('@') {
            Some((p, rest)) => (p.trim(), rest),
            None => (cell, ""),
        };
        if pname != format!("P{col}") {
            return err_at(
                header_line,
                at,
                format!("column {col} is `{pname}`, expected `P{col}`"),
            );
        }
        let mut th = Thread {
            cta: 0,
            cluster: None,
            gpu: 0,
            warp: None,
            regs: regs.remove(&col).unwrap_or_default(),
            ops: Vec::new(),
        };
        placement(&mut th, place).map_err(|msg| ImportError {
            line: header_line,
            col: at,
            msg,
        })?;
        threads.push(th);
    }
    if threads.is_empty() {
        return err(header_line, "no threads in header");
    }
    if let Some(&t) = regs.keys().next() {
        return err(
            header_line,
            format!("init block names P{t}, which has no column"),
        );
    }
    *i += 1;
    Ok(threads)
}

/// A header cell's placement after `@` (`cta 0,cluster 1,gpu 0,warp 2`) set on `th`.
fn placement(th: &mut Thread, place: &str) -> Result<(), String> {
    for kv in place.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let mut it = kv.split_whitespace();
        let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) else {
            return Err(format!("bad placement `{kv}` (expected e.g. `cta 0`)"));
        };
        let Ok(v) = v.parse::<u32>() else {
            return Err(format!("bad number in placement `{kv}`"));
        };
        match k {
            "cta" => th.cta = v,
            "cluster" => th.cluster = Some(v),
            "gpu" => th.gpu = v,
            "warp" => th.warp = Some(v),
            _ => return Err(format!("unknown placement `{k}`")),
        }
    }
    Ok(())
}

/// Where each operation was written: (thread, 1-based operation index) → (line, column).
type Positions = BTreeMap<(usize, usize), (usize, usize)>;

/// The instruction rows from line `*i` up to the condition: each non-empty cell an operation
/// of its column's thread. Returns where each operation was written and the index of the
/// condition's first line (`exists`, `~exists` or `forall`).
fn instruction_rows(
    lines: &[&str],
    i: &mut usize,
    threads: &mut [Thread],
) -> Result<(Positions, usize), ImportError> {
    let mut positions = Positions::new();
    let mut ops = 0usize;
    while *i < lines.len() {
        let line = lines[*i];
        let l = line.trim();
        if l.starts_with("exists") || l.starts_with("~exists") || l.starts_with("forall") {
            return Ok((positions, *i));
        }
        *i += 1;
        if l.is_empty() {
            continue;
        }
        let cells = split_row(line);
        if cells.len() > threads.len() {
            return err(
                *i,
                format!("{} columns, but {} threads", cells.len(), threads.len()),
            );
        }
        let mut cols = Columns::new(line);
        for (col, cell) in cells.iter().enumerate() {
            let c = cell.trim();
            if c.is_empty() {
                continue;
            }
            let at = (*i, cols.of(cell));
            ops += 1;
            if ops > super::MAX_OPS {
                return err_at(
                    at.0,
                    at.1,
                    format!(
                        "the test has more than {0} instructions; a litmus test has at most {0}, all threads together",
                        super::MAX_OPS
                    ),
                );
            }
            let op = parse_instr(c).map_err(|m| ImportError {
                line: at.0,
                col: at.1,
                msg: m.to_string(),
            })?;
            positions.insert((col, threads[col].ops.len() + 1), at);
            threads[col].ops.push(op);
        }
    }
    err(
        lines.len(),
        "missing condition (`exists`, `~exists` or `forall`)",
    )
}

/// Imports a Dat3M PTX litmus test: header, descriptions, init block, thread header,
/// instruction rows and the final condition, then the test's own validation.
pub fn import(text: &str) -> Result<LitmusTest, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let name = header(&lines, &mut i)?;
    let (desc, brace_end) = descriptions(&lines, &mut i)?;
    let Init { locations, regs } = init_block(&lines, &mut i, brace_end)?;
    let mut threads = thread_header(&lines, &mut i, regs)?;
    let (positions, cs) = instruction_rows(&lines, &mut i, &mut threads)?;
    let cond_text = lines[cs..].join(" ");
    let condition = parse_condition(&cond_text).map_err(|m| ImportError {
        line: cs + 1,
        col: 1,
        msg: m.to_string(),
    })?;
    let test = LitmusTest {
        name: name.to_string(),
        description: if desc.is_empty() {
            None
        } else {
            Some(desc.join("\n"))
        },
        locations,
        threads,
        condition,
    };
    test.validate().map_err(|m| {
        // An operation's error (`P1 op 3: ...`) points at its cell; others at the condition.
        let at = match &m {
            super::InvalidTest::Op { thread, op, .. } => positions.get(&(*thread, *op)),
            _ => None,
        };
        let (line, col) = at.copied().unwrap_or((cs + 1, 1));
        ImportError {
            line,
            col,
            msg: m.to_string(),
        }
    })?;
    Ok(test)
}

/// One `;`-separated entry of the init block at `line`:`col`: `x = 1`, `P0:r0 = 2` or a
/// proxy declaration `t @ texture aliases x`.
fn init_entry(
    e: &str,
    line: usize,
    col: usize,
    locations: &mut Vec<Location>,
    declared: &mut std::collections::HashSet<String>,
    regs: &mut BTreeMap<usize, BTreeMap<String, i64>>,
) -> Result<(), ImportError> {
    // `t @ texture aliases x`: a proxy declaration (PTX ISA 7.5 proxies).
    if let Some((name, decl)) = e.split_once('@') {
        let words: Vec<&str> = decl.split_whitespace().collect();
        let name = name.trim();
        let (proxy, of) = match words.as_slice() {
            [p, a, of] if *a == "aliases" => (Proxy::parse(p), *of),
            _ => (None, ""),
        };
        let Some(proxy) = proxy else {
            return err_at(
                line,
                col,
                format!(
                    "bad proxy declaration `{e}` (expected `NAME @ generic|texture|surface|constant aliases LOCATION`)"
                ),
            );
        };
        if !declared.insert(name.to_string()) {
            return err_at(line, col, format!("location `{name}` declared twice"));
        }
        locations.push(Location {
            name: name.to_string(),
            init: 0,
            space: Default::default(),
            alias: Some(Alias {
                proxy,
                of: of.to_string(),
            }),
        });
        return Ok(());
    }
    let Some((lhs, rhs)) = e.split_once('=') else {
        return err_at(line, col, format!("init entry `{e}` is not `name=value`"));
    };
    let lhs = lhs.trim();
    let lhs = lhs.rsplit(char::is_whitespace).next().unwrap_or(lhs); // `int x = 0`
    let rhs = rhs.trim();
    let Some(v) = parse_int(rhs) else {
        return err_at(
            line,
            col,
            format!("init value `{rhs}` is not an integer (a 64-bit signed PTX literal)"),
        );
    };
    if let Some((t, r)) = lhs.split_once(':') {
        let Ok(tid) = t.trim_start_matches('P').parse::<usize>() else {
            return err_at(line, col, format!("bad thread in init entry `{e}`"));
        };
        if regs
            .entry(tid)
            .or_default()
            .insert(r.trim().to_string(), v)
            .is_some()
        {
            return err_at(
                line,
                col,
                format!("register `P{tid}:{}` initialised twice", r.trim()),
            );
        }
    } else if !declared.insert(lhs.to_string()) {
        return err_at(line, col, format!("location `{lhs}` initialised twice"));
    } else {
        locations.push(Location {
            name: lhs.to_string(),
            init: v,
            space: Default::default(),
            alias: None,
        });
    }
    Ok(())
}

/// The byte index of the first unescaped `"`.
fn closing_quote(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// `\"` is a quote and `\\` a backslash inside a description.
fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some(n @ ('"' | '\\')) => out.push(n),
                Some(n) => {
                    out.push(c);
                    out.push(n);
                }
                None => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn split_row(line: &str) -> Vec<&str> {
    let l = line.trim();
    let l = l.strip_suffix(';').unwrap_or(l);
    l.split('|').collect()
}

fn operand(s: &str) -> Operand {
    match parse_int(s) {
        Some(v) => Operand::Const(v),
        None => Operand::Reg(s.to_string()),
    }
}

/// A register operand must look like one (`r0`, `%r1`, `x_2`): not a malformed number.
fn value(s: &str, text: &str) -> Result<Operand, OpError> {
    let o = operand(s);
    if let Operand::Reg(r) = &o {
        let ok = !r.is_empty()
            && r.trim_start_matches('%')
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && r.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%');
        if !ok {
            return Err(OpError::NotAValue {
                operand: s.to_string(),
                text: text.to_string(),
            });
        }
    }
    Ok(o)
}

fn strip_addr(s: &str) -> String {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim()
        .to_string()
}

/// Parses one instruction cell into an operation. The cell is split into opcode, modifiers and
/// operands by the crate's one PTX instruction reader ([`crate::ptx::instr::parse_instruction`])
/// and its literals read by the one literal grammar ([`crate::ptx::literal`]).
pub fn parse_instr(text: &str) -> Result<Op, OpError> {
    let text = text.trim().trim_end_matches(';').trim();
    if let Some(name) = text.strip_suffix(':') {
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(OpError::BadLabel(text.to_string()));
        }
        return Ok(Op::Label {
            name: name.to_string(),
        });
    }
    let ins = crate::ptx::instr::parse_instruction(text, 0)
        .map_err(|e| OpError::Instruction(e.message))?;
    if ins.guard.is_some() {
        return Err(OpError::Guarded(text.to_string()));
    }
    let cell = Cell { ins: &ins, text };
    match control_op(&cell)? {
        Some(op) => Ok(op),
        None => memory_op(&cell, &MemoryModifiers::read(&cell)?),
    }
}

/// One instruction cell as the PTX reader split it, with its text for error messages.
struct Cell<'a> {
    ins: &'a crate::ptx::instr::Instruction,
    text: &'a str,
}

/// The type and state-space modifiers a cell may carry without changing the model.
const TYPES: [&str; 9] = [
    "s32", "u32", "b32", "s64", "u64", "b64", "uni", "global", "generic",
];

impl Cell<'_> {
    fn head(&self) -> &str {
        self.ins.opcode.as_str()
    }

    /// Operand `n` (callers check the count first with [`Cell::need`]).
    fn arg(&self, n: usize) -> &str {
        self.ins.operands.get(n).map_or("", String::as_str)
    }

    /// The cell has exactly `n` operands.
    fn need(&self, n: usize) -> Result<(), OpError> {
        let found = self.ins.operands.len();
        if found == n {
            Ok(())
        } else {
            Err(OpError::Operands {
                opcode: self.head().to_string(),
                expected: n,
                found,
                text: self.text.to_string(),
            })
        }
    }

    fn modifier(&self, m: &str) -> OpError {
        OpError::Modifier {
            modifier: m.to_string(),
            text: self.text.to_string(),
        }
    }

    /// Every modifier is one of `allowed`.
    fn no_modifiers(&self, allowed: &[&str]) -> Result<(), OpError> {
        match self
            .ins
            .modifiers
            .iter()
            .find(|m| !allowed.contains(&m.as_str()))
        {
            Some(m) => Err(self.modifier(m)),
            None => Ok(()),
        }
    }

    fn value(&self, n: usize) -> Result<Operand, OpError> {
        value(self.arg(n), self.text)
    }

    fn reg(&self, n: usize) -> Result<String, OpError> {
        reg_name(self.arg(n), self.text)
    }

    /// Operand `n` as a location, its address brackets `[x]` removed.
    fn loc(&self, n: usize) -> Result<String, OpError> {
        loc_name(&strip_addr(self.arg(n)), self.text)
    }
}

/// The operations that touch no memory location: branches, jumps and register arithmetic
/// (what Dat3M's tests use to build dependencies), barriers and proxy fences; `None` for the
/// memory operations.
fn control_op(c: &Cell) -> Result<Option<Op>, OpError> {
    let head = c.head();
    if let Some(cond) = BranchCond::from_mnemonic(head) {
        c.no_modifiers(&[])?;
        c.need(3)?;
        return Ok(Some(Op::Branch {
            cond,
            a: c.value(0)?,
            b: c.value(1)?,
            target: label_name(c.arg(2), c.text)?,
        }));
    }
    if head == "goto" || head == "bra" {
        c.no_modifiers(&["uni"])?;
        c.need(1)?;
        return Ok(Some(Op::Goto {
            target: label_name(c.arg(0), c.text)?,
        }));
    }
    if let Some(op) = LocalOp::parse(head) {
        c.no_modifiers(&TYPES)?;
        c.need(3)?;
        return Ok(Some(Op::Local {
            op,
            reg: c.reg(0)?,
            a: c.value(1)?,
            b: c.value(2)?,
        }));
    }
    if head == "bar" || head == "barrier" {
        return parse_barrier(&c.ins.modifiers, &c.ins.operands, c.text).map(Some);
    }
    if (head == "fence" || head == "membar") && c.ins.has("proxy") {
        // PTX ISA 7.5 proxies: `fence.proxy.KIND` orders one proxy's accesses with generic ones.
        let kind = match c.ins.modifiers.as_slice() {
            [p, k] if p == "proxy" => ProxyFenceKind::parse(k),
            _ => None,
        };
        let Some(kind) = kind else {
            return Err(OpError::ProxyFence(c.text.to_string()));
        };
        c.need(0)?;
        return Ok(Some(Op::ProxyFence { kind }));
    }
    Ok(None)
}

/// A memory operation's modifiers read by kind, in any order: semantics (`.weak`, `.relaxed`,
/// `.acquire`, ...), scope (`.cta`, `.gpu`, `.sys`; `membar.gl` is `.gpu`), the RMW operation
/// of `atom`/`red`, and `ld.const`. Types and state spaces do not change the model.
struct MemoryModifiers {
    sem: Option<Sem>,
    scope: Option<Scope>,
    rmw: Option<AtomOp>,
    konst: bool,
}

impl MemoryModifiers {
    fn read(c: &Cell) -> Result<Self, OpError> {
        let head = c.head();
        let mut m = MemoryModifiers {
            sem: None,
            scope: None,
            rmw: None,
            konst: false,
        };
        for p in &c.ins.modifiers {
            if let Some(s) = Sem::parse(p) {
                m.sem = Some(s);
            } else if let Some(s) = Scope::parse(p) {
                m.scope = Some(s);
            } else if let (Some(r), "atom" | "red") = (AtomOp::parse(p), head) {
                m.rmw = Some(r);
            } else if head == "membar" && p == "gl" {
                m.scope = Some(Scope::Gpu);
            } else if head == "ld" && p == "const" {
                m.konst = true;
            } else if TYPES.contains(&p.as_str()) || p == "shared" {
                // State space and type do not change the model.
            } else {
                return Err(c.modifier(p));
            }
        }
        Ok(m)
    }

    /// A weak access has no scope; a strong one without a scope modifier is `.gpu`.
    fn strong_scope(&self, sem: Sem) -> Option<Scope> {
        if sem == Sem::Weak {
            None
        } else {
            Some(self.scope.unwrap_or(Scope::Gpu))
        }
    }
}

/// The memory operations: loads (generic or through the texture, surface or constant proxy),
/// stores, `atom`, `red`, fences (`membar` is `fence.sc`) and `mov`, with their defaults:
/// weak accesses, relaxed RMWs, `.gpu` scope, `fence.sc.sys`.
fn memory_op(c: &Cell, m: &MemoryModifiers) -> Result<Op, OpError> {
    match c.head() {
        "ld" | "tld" | "suld" | "cold" => load(c, m),
        "st" | "sust" => {
            c.need(2)?;
            let sem = m.sem.unwrap_or(Sem::Weak);
            let loc = c.loc(0)?;
            let val = c.value(1)?;
            let scope = m.strong_scope(sem);
            if c.head() == "sust" {
                Ok(Op::ProxySt {
                    proxy: Proxy::Surface,
                    loc,
                    val,
                    sem,
                    scope,
                })
            } else {
                Ok(Op::St {
                    loc,
                    val,
                    sem,
                    scope,
                })
            }
        }
        "atom" => {
            let Some(op) = m.rmw else {
                return Err(OpError::Form {
                    text: c.text.to_string(),
                    expected: "atom needs an operation (.add, .exch, .cas, ...)",
                });
            };
            let (cmp, val) = if op == AtomOp::Cas {
                c.need(4)?;
                (Some(c.value(2)?), c.value(3)?)
            } else {
                c.need(3)?;
                (None, c.value(2)?)
            };
            Ok(Op::Atom {
                op,
                reg: c.reg(0)?,
                loc: c.loc(1)?,
                val,
                cmp,
                sem: m.sem.unwrap_or(Sem::Relaxed),
                scope: m.scope.unwrap_or(Scope::Gpu),
            })
        }
        "red" => {
            let Some(op) = m.rmw else {
                return Err(OpError::Form {
                    text: c.text.to_string(),
                    expected: "red needs an operation (.add, .or, ...)",
                });
            };
            c.need(2)?;
            Ok(Op::Red {
                op,
                loc: c.loc(0)?,
                val: c.value(1)?,
                sem: m.sem.unwrap_or(Sem::Relaxed),
                scope: m.scope.unwrap_or(Scope::Gpu),
            })
        }
        "fence" | "membar" => {
            c.need(0)?;
            let sem = if c.head() == "membar" {
                Sem::Sc
            } else {
                m.sem.unwrap_or(Sem::Sc)
            };
            Ok(Op::Fence {
                sem,
                scope: m.scope.unwrap_or(Scope::Sys),
            })
        }
        "mov" => {
            c.need(2)?;
            Ok(Op::Mov {
                reg: c.reg(0)?,
                val: c.value(1)?,
            })
        }
        head => Err(OpError::Unsupported {
            opcode: head.to_string(),
            text: c.text.to_string(),
        }),
    }
}

/// A load: `ld` (generic, or the constant proxy with `.const`), `tld` (texture), `suld`
/// (surface), `cold` (constant). Dat3M's register initialisation `ld r0, 2` is a `mov`.
fn load(c: &Cell, m: &MemoryModifiers) -> Result<Op, OpError> {
    let head = c.head();
    c.need(2)?;
    let src = strip_addr(c.arg(1));
    let reg = c.reg(0)?;
    if head == "ld" && !m.konst {
        if let Some(v) = parse_int(&src) {
            return Ok(Op::Mov {
                reg,
                val: Operand::Const(v),
            });
        }
    }
    let loc = loc_name(&src, c.text)?;
    let sem = m.sem.unwrap_or(Sem::Weak);
    let proxy = match head {
        "tld" => Proxy::Texture,
        "suld" => Proxy::Surface,
        "cold" => Proxy::Constant,
        _ if m.konst => Proxy::Constant,
        _ => Proxy::Generic,
    };
    let scope = m.strong_scope(sem);
    if proxy == Proxy::Generic {
        Ok(Op::Ld {
            reg,
            loc,
            sem,
            scope,
        })
    } else {
        Ok(Op::ProxyLd {
            proxy,
            reg,
            loc,
            sem,
            scope,
        })
    }
}

fn ident_ok(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '%')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%')
}

fn label_name(s: &str, text: &str) -> Result<String, OpError> {
    if ident_ok(s) {
        Ok(s.to_string())
    } else {
        Err(OpError::NotAName {
            kind: "label",
            name: s.to_string(),
            text: text.to_string(),
        })
    }
}

fn reg_name(s: &str, text: &str) -> Result<String, OpError> {
    if ident_ok(s) {
        Ok(s.to_string())
    } else {
        Err(OpError::NotAName {
            kind: "register",
            name: s.to_string(),
            text: text.to_string(),
        })
    }
}

fn loc_name(s: &str, text: &str) -> Result<String, OpError> {
    if ident_ok(s) {
        Ok(s.to_string())
    } else {
        Err(OpError::NotAName {
            kind: "location",
            name: s.to_string(),
            text: text.to_string(),
        })
    }
}

/// `bar.cta.sync|arrive INSTANCE[, ID[, QUORUM]]` (Dat3M's dialect: `.cta` present), or PTX's
/// `bar{.sync,.arrive} ID[, COUNT]` / `barrier{.cta}{.sync,.arrive}{.aligned} ID[, COUNT]`
/// (PTX ISA "bar, barrier": `a` the barrier, `b` the thread count), read with instance 0.
fn parse_barrier(mods: &[String], args: &[String], text: &str) -> Result<Op, OpError> {
    let form = |expected| OpError::Form {
        text: text.to_string(),
        expected,
    };
    let mut arrive = None;
    let mut dat3m = false;
    for m in mods {
        match m.as_str() {
            "sync" => arrive = Some(false),
            "arrive" => arrive = Some(true),
            "cta" => dat3m = true,
            "aligned" => {}
            _ => {
                return Err(OpError::BarrierModifier {
                    modifier: m.to_string(),
                    text: text.to_string(),
                })
            }
        }
    }
    let text_is_barrier = text.starts_with("barrier");
    if text_is_barrier {
        dat3m = false;
    }
    let arrive = match arrive {
        Some(a) => a,
        // `bar 0` / `barrier 0` without `.sync`: PTX reads it as bar.sync.
        None if !dat3m => false,
        None => return Err(form("a barrier needs .sync or .arrive")),
    };
    let vals: Vec<Operand> = args
        .iter()
        .map(|a| value(a, text))
        .collect::<Result<_, _>>()?;
    if dat3m {
        let (instance, id, quorum) = match vals.as_slice() {
            [Operand::Const(i)] => (*i, None, None),
            [Operand::Const(i), id] => (*i, Some(id.clone()), None),
            [Operand::Const(i), id, q] => (*i, Some(id.clone()), Some(q.clone())),
            _ => {
                return Err(form(
                    "expected `bar.cta.sync INSTANCE[, ID[, QUORUM]]` with a constant instance",
                ))
            }
        };
        Ok(Op::Barrier {
            arrive,
            instance,
            id,
            quorum,
        })
    } else {
        let (id, quorum) = match vals.as_slice() {
            [a] => (a.clone(), None),
            [a, b] => (a.clone(), Some(b.clone())),
            _ => {
                return Err(form(
                    "expected `bar.sync ID[, COUNT]` (PTX ISA bar/barrier)",
                ))
            }
        };
        if arrive && quorum.is_none() {
            return Err(form("bar.arrive needs a thread count (PTX ISA)"));
        }
        Ok(Op::Barrier {
            arrive,
            instance: 0,
            id: Some(id),
            quorum,
        })
    }
}

/// The Dat3M text of one operation.
pub fn instr_text(op: &Op) -> String {
    let ss = |sem: &Sem, scope: &Option<Scope>| match (sem, scope) {
        (Sem::Weak, _) => ".weak".to_string(),
        (s, Some(sc)) => format!(".{}.{}", s.name(), sc.name()),
        (s, None) => format!(".{}", s.name()),
    };
    match op {
        Op::Ld {
            reg,
            loc,
            sem,
            scope,
        } => format!("ld{} {reg}, {loc}", ss(sem, scope)),
        Op::St {
            loc,
            val,
            sem,
            scope,
        } => format!("st{} {loc}, {val}", ss(sem, scope)),
        Op::ProxyLd {
            proxy,
            reg,
            loc,
            sem,
            scope,
        } => {
            let m = match proxy {
                Proxy::Texture => "tld",
                Proxy::Surface => "suld",
                Proxy::Constant | Proxy::Generic => "cold",
            };
            format!("{m}{} {reg}, {loc}", ss(sem, scope))
        }
        Op::ProxySt {
            loc,
            val,
            sem,
            scope,
            ..
        } => format!("sust{} {loc}, {val}", ss(sem, scope)),
        Op::Atom {
            op,
            reg,
            loc,
            val,
            cmp,
            sem,
            scope,
        } => match cmp {
            Some(c) => format!(
                "atom.{}.{}.{} {reg}, {loc}, {c}, {val}",
                sem.name(),
                scope.name(),
                op.name()
            ),
            None => format!(
                "atom.{}.{}.{} {reg}, {loc}, {val}",
                sem.name(),
                scope.name(),
                op.name()
            ),
        },
        Op::Red {
            op,
            loc,
            val,
            sem,
            scope,
        } => format!(
            "red.{}.{}.{} {loc}, {val}",
            sem.name(),
            scope.name(),
            op.name()
        ),
        Op::Fence { sem, scope } => format!("fence.{}.{}", sem.name(), scope.name()),
        Op::Mov { reg, val } => match val {
            // Dat3M reads a constant register load as `ld r, imm`.
            Operand::Const(v) => format!("ld {reg}, {v}"),
            Operand::Reg(r) => format!("mov {reg}, {r}"),
        },
        Op::Local { op, reg, a, b } => format!("{} {reg}, {a}, {b}", op.name()),
        Op::Label { name } => format!("{name}:"),
        Op::Branch { cond, a, b, target } => format!("{} {a}, {b}, {target}", cond.mnemonic()),
        Op::Goto { target } => format!("goto {target}"),
        Op::Barrier {
            arrive,
            instance,
            id,
            quorum,
        } => {
            let mut t = format!(
                "bar.cta.{} {instance}",
                if *arrive { "arrive" } else { "sync" }
            );
            if let Some(id) = id {
                let _ = write!(t, ", {id}");
                if let Some(q) = quorum {
                    let _ = write!(t, ", {q}");
                }
            }
            t
        }
        Op::ProxyFence { kind } => format!("fence.proxy.{}", kind.name()),
    }
}

/// Exports a test in Dat3M's PTX syntax. Lost on the way: `warp` and state spaces, which the
/// syntax has no place for.
pub fn export(test: &LitmusTest) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "PTX {}", test.name);
    if let Some(d) = &test.description {
        let _ = writeln!(s, "\"{}\"", d.replace('\\', "\\\\").replace('"', "\\\""));
    }
    s.push_str("{\n");
    for l in test.all_locations() {
        match test
            .locations
            .iter()
            .find(|m| m.name == l)
            .and_then(|m| m.alias.as_ref())
        {
            Some(a) => {
                let _ = writeln!(s, "{l} @ {} aliases {};", a.proxy.name(), a.of);
            }
            None => {
                let _ = writeln!(s, "{l}={};", test.init_of(&l));
            }
        }
    }
    for (ti, t) in test.threads.iter().enumerate() {
        for (r, v) in &t.regs {
            let _ = writeln!(s, "P{ti}:{r}={v};");
        }
    }
    s.push_str("}\n");
    let mut cols: Vec<Vec<String>> = test
        .threads
        .iter()
        .enumerate()
        .map(|(ti, t)| {
            let mut head = format!("P{ti}@cta {}", t.cta);
            if let Some(c) = t.cluster {
                let _ = write!(head, ",cluster {c}");
            }
            let _ = write!(head, ",gpu {}", t.gpu);
            // The warp is a placement hint the import reads back (`warp N`): without it an
            // export | import round trip lost it (issue 10 item 5).
            if let Some(w) = t.warp {
                let _ = write!(head, ",warp {w}");
            }
            let mut v = vec![head];
            v.extend(t.ops.iter().map(instr_text));
            v
        })
        .collect();
    let rows = cols.iter().map(Vec::len).max().unwrap_or(0);
    for c in &mut cols {
        let w = c.iter().map(String::len).max().unwrap_or(0);
        c.resize(rows, String::new());
        for cell in c.iter_mut() {
            let pad = w - cell.len();
            cell.push_str(&" ".repeat(pad));
        }
    }
    for r in 0..rows {
        let cells: Vec<&str> = cols.iter().map(|c| c[r].as_str()).collect();
        let _ = writeln!(s, " {} ;", cells.join(" | "));
    }
    let _ = writeln!(s, "{}", test.condition);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::litmus::{Quantifier, Term};

    // Written as Dat3M's litmus/PTX/Manual/MP-gpu.litmus is published.
    const MP_GPU: &str = "PTX MP-gpu
\"Message passing, sync because release/acquire are morally strong\"
{
x=0;
y=0;
P1:r1=0;
P1:r2=0;
}
 P0@cta 0,gpu 0         | P1@cta 0,gpu 0         ;
 st.weak x, 1           | ld.acquire.gpu r1, y   ;
 st.release.gpu y, 1    | ld.weak r2, x          ;
~exists
(P1:r1 == 1 /\\ P1:r2 != 1)
";

    // As litmus/PTX/Manual/Coherence.litmus: several entries on one init line, `=` comparisons.
    const COHERENCE: &str = "PTX Coherence
\"Test that threads 3 and 4 can't read updates to x in conflicting order\"
{
x=0;
P2:r0=0; P2:r1=0;
P3:r2=0; P3:r3=0;
}
 P0@cta 0,gpu 0      | P1@cta 0,gpu 0      | P2@cta 0,gpu 0       | P3@cta 0,gpu 0       ;
 st.relaxed.sys x, 1 | st.relaxed.sys x, 2 | ld.acquire.sys r0, x | ld.acquire.sys r2, x ;
                     |                     | ld.acquire.sys r1, x | ld.acquire.sys r3, x ;
exists
(P2:r0 = 1 /\\ P2:r1 = 2 /\\ P3:r2 = 2 /\\ P3:r3 = 1)
";

    // As litmus/PTX/Nvidia/Atom-SB.litmus: RMWs, `forall`, two description strings.
    const ATOM_SB: &str = "PTX Atom-SB
\"RMW store buffering\"
\"https://github.com/NVlabs/mixedproxy/blob/main/tests/SB_rmw.test\"
{
P0:r0=0;
P1:r1=0;
x=0;
y=0;
}
 P0@cta 0,gpu 0                       | P1@cta 1,gpu 0                         ;
 atom.acq_rel.gpu.add r1, x, 1        | atom.acq_rel.gpu.add r3, y, 1         ;
 atom.acq_rel.gpu.add r2, y, 1        | atom.acq_rel.gpu.add r4, x, 1         ;
forall
(P0:r2 != 0 \\/ P1:r4 != 0)
";

    // As litmus/PTX/Memalloy/WWC1.litmus: register loads `ld r0, 2`, stores of registers.
    const WWC1: &str = "PTX WWC1
\"Rf-c-g Mcta-d-Rg-Wg Rf-w-g Mgl-d-Rg-Wg Ws-c-g\"
{
P0:r0=0;
P1:r0=0;
P1:r2=0;
P2:r0=0;
P2:r2=0;
x=0;
y=0;
}
 P0@cta 0,gpu 0           | P1@cta 1,gpu 0           | P2@cta 1,gpu 0           ;
 ld r0, 2                 | ld.weak r0, x            | ld.weak r0, x            ;
 st.weak x, r0            | fence.sc.cta             | fence.sc.sys            ;
                          | ld r2, 1                 | ld r2, 1                 ;
                          | st.weak y, r2            | st.weak y, r2            ;
exists
(x == 2 /\\ P1:r0 == 2 /\\ P2:r0 == 1)
";

    // As litmus/PTX/Manual/SL-cas-plus.litmus (its branch is dropped: unsupported here), with
    // NVRTC's modifier order on one instruction.
    const CAS: &str = "PTX SL-cas
{
x=0;
m=1;
}
 P0@cta 0,gpu 0                 | P1@cta 1,gpu 0                   ;
 st.relaxed.gpu x, 1            | atom.relaxed.gpu.cas r1, m, 0, 1 ;
 fence.sc.gpu                   | fence.sc.gpu                     ;
 atom.exch.relaxed.gpu.b32 r0, m, 0 | ld.relaxed.gpu r3, x          ;
exists
 (P1:r1 == 0 /\\ P1:r3 == 0)
";

    #[test]
    fn imports_published_tests() {
        let mp = import(MP_GPU).unwrap();
        assert_eq!(mp.name, "MP-gpu");
        assert_eq!(mp.condition.quantifier, Quantifier::NotExists);
        assert_eq!(mp.threads[1].regs.get("r2"), Some(&0));
        assert_eq!(
            mp.threads[0].ops[1],
            Op::St {
                loc: "y".into(),
                val: Operand::Const(1),
                sem: Sem::Release,
                scope: Some(Scope::Gpu)
            }
        );
        let co = import(COHERENCE).unwrap();
        assert_eq!(co.threads.len(), 4);
        assert_eq!(co.threads[2].ops.len(), 2);
        assert_eq!(co.threads[0].ops.len(), 1);
        let sb = import(ATOM_SB).unwrap();
        assert_eq!(sb.condition.quantifier, Quantifier::Forall);
        assert_eq!(sb.threads[1].cta, 1);
        assert!(sb.description.as_deref().unwrap().contains("mixedproxy"));
        let wwc = import(WWC1).unwrap();
        assert_eq!(
            wwc.threads[1].ops[2],
            Op::Mov {
                reg: "r2".into(),
                val: Operand::Const(1)
            }
        );
        assert_eq!(
            wwc.threads[2].ops[1],
            Op::Fence {
                sem: Sem::Sc,
                scope: Scope::Sys
            }
        );
        let cas = import(CAS).unwrap();
        assert_eq!(
            cas.threads[1].ops[0],
            Op::Atom {
                op: AtomOp::Cas,
                reg: "r1".into(),
                loc: "m".into(),
                val: Operand::Const(1),
                cmp: Some(Operand::Const(0)),
                sem: Sem::Relaxed,
                scope: Scope::Gpu
            }
        );
        assert!(matches!(
            &cas.threads[0].ops[2],
            Op::Atom {
                op: AtomOp::Exch,
                ..
            }
        ));
        assert_eq!(cas.init_of("m"), 1);
    }

    // As litmus/PTX/Manual/Red-plus-location_.litmus: reductions.
    const RED: &str = "PTX Red-plus-location
{
P0:r0=0;
P1:r0=0;
x=0;
}
 P0@cta 0,gpu 0                   | P1@cta 1,gpu 0                   ;
 red.acq_rel.sys.add x, 1         | red.acq_rel.sys.add x, 1  ;
forall
(x == 2)
";

    #[test]
    fn roundtrip_import_export_import() {
        assert!(matches!(
            import(RED).unwrap().threads[1].ops[0],
            Op::Red {
                op: AtomOp::Add,
                sem: Sem::AcqRel,
                scope: Scope::Sys,
                ..
            }
        ));
        for text in [MP_GPU, COHERENCE, ATOM_SB, WWC1, CAS, RED] {
            let a = import(text).unwrap();
            let out = export(&a);
            let b = import(&out).unwrap_or_else(|e| panic!("{e}\n{out}"));
            assert_eq!(a, b, "{out}");
        }
    }

    #[test]
    fn cluster_placement_roundtrips() {
        let t = import(
            "PTX C\n{ x=0; }\n P0@cta 0,cluster 3,gpu 1 | P1@cta 1,cluster 3,gpu 1 ;\n st.relaxed.cluster x, 1 | ld.relaxed.cluster r0, x ;\nexists (1:r0 = 1)\n",
        )
        .unwrap();
        assert_eq!(t.threads[1].cluster, Some(3));
        assert_eq!(t.threads[1].gpu, 1);
        assert_eq!(import(&export(&t)).unwrap(), t);
        assert!(matches!(
            &t.condition.prop,
            crate::atomics::litmus::Prop::Cmp {
                term: Term::Reg { thread: 1, .. },
                ..
            }
        ));
    }

    #[test]
    fn errors_carry_the_line() {
        let bad = MP_GPU.replace("ld.acquire.gpu r1, y", "ld.bogus.gpu r1, y");
        let e = import(&bad).unwrap_err();
        assert_eq!(e.line, 10, "{e}");
        assert!(e.msg.contains(".bogus"), "{e}");
        let bad = MP_GPU.replace("P1@cta 0", "P2@cta 0");
        assert_eq!(import(&bad).unwrap_err().line, 9);
        // A jump to no label, an unknown register: the error points at the cell.
        let e = import(
            "PTX X\n{ x=0; P0:r1=0; }\n P0@cta 0,gpu 0 ;\n bne r1, 0, L ;\nexists (x == 1)\n",
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (4, 2), "{e}");
        assert!(e.msg.contains("no label"), "{e}");
        let e = import(
            "PTX X\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n st.weak x, 1 | st.weak x, r7 ;\nexists (x == 1)\n",
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (4, 17), "{e}");
        assert!(e.msg.contains("`r7`"), "{e}");
        // A condition on a register no thread writes is an error, not a silent zero.
        let e =
            import("PTX X\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\nexists (P0:r3 == 0)\n")
                .unwrap_err();
        assert_eq!(e.line, 5, "{e}");
        assert!(import("C X\n").unwrap_err().msg.contains("PTX"));
    }
    /// The 1-based line and character column at which `needle` starts in `text`, counted
    /// from the text itself (not by the importer).
    fn where_is(text: &str, needle: &str) -> (usize, usize) {
        let at = text.find(needle).unwrap();
        let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
        let line = text[..at].matches('\n').count() + 1;
        (line, text[line_start..at].chars().count() + 1)
    }

    /// A bad init entry is reported at its own line and column in the file, wherever it sits
    /// in the block: on the `{` line (indented or not), on a later line of a multi-line block,
    /// after tabs, after a non-ASCII name (columns count characters).
    #[test]
    fn a_bad_init_entry_is_reported_where_it_is_written() {
        let rest = "\n P0@cta 0,gpu 0 ;\n st.weak x, 1 ;\nexists (x == 1)\n";
        for (init, bad, what) in [
            ("{ x=1; y 2; }", "y 2", "not `name=value`"),
            ("   {  x=1;   y 2; }", "y 2", "not `name=value`"),
            (
                "{\nx=0;\n  y=0; P0:r0=1; z 3;\n}",
                "z 3",
                "not `name=value`",
            ),
            ("{ x=0;\n\t\tP0:r0 = zz; }", "P0:r0 = zz", "not an integer"),
            ("\t{\tx=0;\ty=0;\tx=2;\t}", "x=2", "initialised twice"),
            ("{ é=0; y 2; }", "y 2", "not `name=value`"),
            (
                "{ x=0;\n  t @ texture of x; }",
                "t @ texture of x",
                "bad proxy declaration",
            ),
        ] {
            let text = format!("PTX T\n{init}{rest}");
            let e = import(&text).unwrap_err();
            assert_eq!((e.line, e.col), where_is(&text, bad), "{init:?}: {e}");
            assert!(e.msg.contains(what), "{init:?}: {e}");
            let (line, col) = where_is(&text, bad);
            assert!(e.to_string().starts_with(&format!("{line}:{col}: ")), "{e}");
        }
    }

    /// Threads and instructions past their bounds are refused at the first cell past it, as
    /// the header or rows are read; a name or description export could not write back is
    /// refused at its line.
    #[test]
    fn bounds_and_header_text_are_checked_where_they_are_written() {
        let n = super::super::MAX_THREADS + 1;
        let head: Vec<String> = (0..n).map(|t| format!("P{t}@cta {t},gpu 0")).collect();
        let text = format!(
            "PTX W\n{{ x=0; }}\n {} ;\n st.weak x, 1 ;\nexists (x == 1)\n",
            head.join(" | ")
        );
        let e = import(&text).unwrap_err();
        assert_eq!((e.line, e.col), where_is(&text, "P256@"), "{e}");
        assert!(e.msg.contains("more than 256 threads"), "{e}");
        let rows = " st.weak x, 1 | st.weak y, 1 ;\n".repeat(super::super::MAX_OPS / 2 + 1);
        let text = format!(
            "PTX L\n{{ x=0; }}\n P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n{rows}exists (x == 1)\n"
        );
        let e = import(&text).unwrap_err();
        // Row 2049 (file line 2052): its first cell is instruction 4097.
        assert_eq!((e.line, e.col), (2052, 2), "{e}");
        assert!(e.msg.contains("more than 4096 instructions"), "{e}");
        let text = MP_GPU.replacen("PTX MP-gpu", "PTX MP\u{7}gpu", 1);
        let e = import(&text).unwrap_err();
        assert_eq!((e.line, e.col), (1, 5), "{e}");
        assert!(e.msg.contains("control character"), "{e}");
        let text = MP_GPU.replacen("PTX MP-gpu\n", "PTX MP-gpu\n\n\"a\u{1b}b\"\n", 1);
        let e = import(&text).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.msg.contains("control character '\\u{1b}'"), "{e}");
    }

    /// Header cells and instruction cells point at their cell too.
    #[test]
    fn header_and_instruction_errors_point_at_the_cell() {
        for (text, bad) in [
            (
                "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 |  P2@cta 0,gpu 0 ;\n st.weak x, 1 | ;\nexists (x == 1)\n",
                "P2@cta",
            ),
            (
                "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu x ;\n st.weak x, 1 | ;\nexists (x == 1)\n",
                "P1@cta",
            ),
            (
                "PTX T\n{ x=0; }\n P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n st.weak x, 1 |\tld.bogus r0, x ;\nexists (x == 1)\n",
                "ld.bogus",
            ),
        ] {
            let e = import(text).unwrap_err();
            assert_eq!((e.line, e.col), where_is(text, bad), "{e}");
        }
    }
}
