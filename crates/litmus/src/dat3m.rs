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

mod export;
mod instr;

use std::collections::BTreeMap;

pub use export::{export, instr_text};
pub use instr::parse_instr;
use instr::split_row;

use super::{parse_condition, parse_int, Alias, LitmusTest, Location, Proxy, Thread};

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
         fence.proxy.texture, fence.proxy.constant, fence.proxy.alias, fence.proxy.async)"
    )]
    ProxyFence(String),
    #[error(
        "unsupported instruction `{opcode}` in `{text}` (supported: ld, st, atom, red, fence, \
         membar, mov, add/sub/mul/div/and/or/xor, beq/bne/blt/ble/bgt/bge, goto/bra, \
         bar/barrier, fence.proxy.*, tld, suld, sust, cold, ld.const, cp.async.bulk, \
         mbarrier.try_wait.parity, labels `L:`)"
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

/// The description strings from line `*i` up to the init block, and the byte offset in line
/// `*i` (then the init block's line) just after the init block's `{`. Quoted strings
/// (possibly spanning lines) as written; when the quotes do not pair up, the text up to the
/// init block as one description: Dat3M reads past whatever precedes the init block, and
/// its corpus has a description that quotes a phrase inside its quotes
/// (`Manual/MICRO24-Fig4b-correct.litmus`).
fn descriptions(lines: &[&str], i: &mut usize) -> Result<(Vec<String>, usize), ImportError> {
    let start = *i;
    let strict = quoted_descriptions(lines, i);
    // Only quotes that do not pair up fall back; any other fault stands where it was found.
    let unpaired = |e: &ImportError| e.msg.contains("unterminated description");
    if !strict.as_ref().is_err_and(unpaired) {
        return strict;
    }
    let Some(block) = (start..lines.len()).find(|&j| lines[j].trim_start().starts_with('{')) else {
        return strict;
    };
    // As the quoted reading takes a description: its first line trimmed, the others as
    // written (so that export and import give it back unchanged).
    let mut region = lines[start..block]
        .iter()
        .skip_while(|l| l.trim().is_empty());
    let first = region.next().map(|l| l.trim()).unwrap_or_default();
    let text: String = std::iter::once(first)
        .chain(region.copied())
        .collect::<Vec<_>>()
        .join("\n")
        .replace('\r', "");
    if !text.starts_with('"') {
        // Not a description gone wrong: something else stands before the init block.
        return strict;
    }
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t'))
    {
        return err(
            start + 1,
            format!("the description holds the control character {c:?}; a description is text, lines and tabs"),
        );
    }
    *i = block;
    let indent = lines[block].len() - lines[block].trim_start().len();
    Ok((vec![text], indent + 1))
}

/// [`descriptions`] when every description is a well-formed quoted string.
fn quoted_descriptions(lines: &[&str], i: &mut usize) -> Result<(Vec<String>, usize), ImportError> {
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
    let mut test = LitmusTest {
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
    test.place_async_locations();
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

#[cfg(test)]
mod tests;
