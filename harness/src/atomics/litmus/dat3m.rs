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
    parse_condition, parse_int, LitmusTest, Location, Op, Operand, AtomOp, Scope, Sem, Thread,
};

/// A parse error: 1-based line and message. Displays as `LINE: message` so that a caller can
/// prefix `path:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    pub line: usize,
    pub msg: String,
}

impl std::fmt::Display for ImportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.line, self.msg)
    }
}

fn err<T>(line: usize, msg: impl Into<String>) -> Result<T, ImportError> {
    Err(ImportError {
        line,
        msg: msg.into(),
    })
}

/// Imports a Dat3M PTX litmus test.
pub fn import(text: &str) -> Result<LitmusTest, ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let skip_blank = |i: &mut usize| {
        while *i < lines.len() && lines[*i].trim().is_empty() {
            *i += 1;
        }
    };
    skip_blank(&mut i);
    let Some(first) = lines.get(i) else {
        return err(1, "empty file (expected `PTX NAME`)");
    };
    let name = match first.trim().strip_prefix("PTX") {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => rest.trim(),
        _ => return err(i + 1, "expected `PTX NAME` header"),
    };
    if name.is_empty() {
        return err(i + 1, "missing test name after `PTX`");
    }
    i += 1;

    // Quoted description strings, possibly spanning lines, up to the init block.
    let mut desc = Vec::new();
    let mut rest_of_line = String::new();
    while i < lines.len() {
        let l = lines[i].trim();
        if l.is_empty() {
            i += 1;
            continue;
        }
        if let Some(body) = l.strip_prefix('"') {
            let mut s = String::new();
            let mut body = body.to_string();
            let start = i;
            loop {
                if let Some(end) = body.find('"') {
                    s.push_str(&body[..end]);
                    break;
                }
                s.push_str(&body);
                s.push('\n');
                i += 1;
                if i >= lines.len() {
                    return err(start + 1, "unterminated description string");
                }
                body = lines[i].to_string();
            }
            desc.push(s);
            i += 1;
            continue;
        }
        if let Some(rest) = l.strip_prefix('{') {
            rest_of_line = rest.to_string();
            break;
        }
        return err(
            i + 1,
            format!("expected `{{` (the init block), found `{l}`"),
        );
    }
    if i >= lines.len() {
        return err(lines.len(), "missing init block `{ ... }`");
    }

    // Init block: `;`-separated entries until `}`.
    let mut locations: Vec<Location> = Vec::new();
    let mut regs: BTreeMap<usize, BTreeMap<String, i64>> = BTreeMap::new();
    let mut cur = rest_of_line;
    loop {
        let (body, closed) = match cur.find('}') {
            Some(p) => (cur[..p].to_string(), true),
            None => (cur.clone(), false),
        };
        for entry in body.split(';') {
            let e = entry.trim();
            if e.is_empty() {
                continue;
            }
            let Some((lhs, rhs)) = e.split_once('=') else {
                return err(i + 1, format!("init entry `{e}` is not `name=value`"));
            };
            let lhs = lhs.trim();
            let lhs = lhs.rsplit(char::is_whitespace).next().unwrap_or(lhs); // `int x = 0`
            let rhs = rhs.trim();
            let Some(v) = parse_int(rhs) else {
                return err(i + 1, format!("init value `{rhs}` is not an integer"));
            };
            if let Some((t, r)) = lhs.split_once(':') {
                let Ok(tid) = t.trim_start_matches('P').parse::<usize>() else {
                    return err(i + 1, format!("bad thread in init entry `{e}`"));
                };
                regs.entry(tid).or_default().insert(r.to_string(), v);
            } else if locations.iter().any(|l| l.name == lhs) {
                return err(i + 1, format!("location `{lhs}` initialised twice"));
            } else {
                locations.push(Location {
                    name: lhs.to_string(),
                    init: v,
                    space: Default::default(),
                });
            }
        }
        i += 1;
        if closed {
            break;
        }
        if i >= lines.len() {
            return err(lines.len(), "unterminated init block (missing `}`)");
        }
        cur = lines[i].to_string();
    }

    // Thread header.
    skip_blank(&mut i);
    let Some(header) = lines.get(i) else {
        return err(lines.len(), "missing thread header `P0@cta 0,gpu 0 | ...;`");
    };
    let header_line = i + 1;
    let mut threads = Vec::new();
    for (col, cell) in split_row(header).iter().enumerate() {
        let cell = cell.trim();
        let (pname, place) = match cell.split_once('@') {
            Some((p, rest)) => (p.trim(), rest),
            None => (cell, ""),
        };
        if pname != format!("P{col}") {
            return err(
                header_line,
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
        for kv in place.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let mut it = kv.split_whitespace();
            let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) else {
                return err(
                    header_line,
                    format!("bad placement `{kv}` (expected e.g. `cta 0`)"),
                );
            };
            let Ok(v) = v.parse::<u32>() else {
                return err(header_line, format!("bad number in placement `{kv}`"));
            };
            match k {
                "cta" => th.cta = v,
                "cluster" => th.cluster = Some(v),
                "gpu" => th.gpu = v,
                "warp" => th.warp = Some(v),
                _ => return err(header_line, format!("unknown placement `{k}`")),
            }
        }
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
    i += 1;

    // Instruction rows until the condition.
    let mut cond_start = None;
    while i < lines.len() {
        let l = lines[i].trim();
        if l.is_empty() {
            i += 1;
            continue;
        }
        if l.starts_with("exists") || l.starts_with("~exists") || l.starts_with("forall") {
            cond_start = Some(i);
            break;
        }
        let cells = split_row(lines[i]);
        if cells.len() > threads.len() {
            return err(
                i + 1,
                format!("{} columns, but {} threads", cells.len(), threads.len()),
            );
        }
        for (col, cell) in cells.iter().enumerate() {
            let c = cell.trim();
            if c.is_empty() {
                continue;
            }
            let op = parse_instr(c).map_err(|m| ImportError {
                line: i + 1,
                msg: m,
            })?;
            threads[col].ops.push(op);
        }
        i += 1;
    }
    let Some(cs) = cond_start else {
        return err(
            lines.len(),
            "missing condition (`exists`, `~exists` or `forall`)",
        );
    };
    let cond_text = lines[cs..].join(" ");
    let condition = parse_condition(&cond_text).map_err(|m| ImportError {
        line: cs + 1,
        msg: m,
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
    test.validate().map_err(|m| ImportError {
        line: cs + 1,
        msg: m,
    })?;
    Ok(test)
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

fn strip_addr(s: &str) -> String {
    s.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim()
        .to_string()
}

/// Parses one instruction cell into an operation.
pub fn parse_instr(text: &str) -> Result<Op, String> {
    let text = text.trim().trim_end_matches(';');
    let (mnem, rest) = match text.find(char::is_whitespace) {
        Some(p) => (&text[..p], text[p..].trim()),
        None => (text, ""),
    };
    let args: Vec<String> = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split(',').map(|a| a.trim().to_string()).collect()
    };
    let mut parts = mnem.split('.');
    let head = parts.next().unwrap_or("");
    let mut sem = None;
    let mut scope = None;
    let mut rmw = None;
    for p in parts {
        if let Some(s) = Sem::parse(p) {
            sem = Some(s);
        } else if let Some(s) = Scope::parse(p) {
            scope = Some(s);
        } else if let Some(r) = AtomOp::parse(p) {
            rmw = Some(r);
        } else if head == "membar" && p == "gl" {
            scope = Some(Scope::Gpu);
        } else if matches!(
            p,
            "global" | "shared" | "generic" | "s32" | "u32" | "b32" | "s64" | "u64" | "b64"
        ) {
            // State space and type do not change the model.
        } else {
            return Err(format!("unsupported modifier `.{p}` in `{text}`"));
        }
    }
    let need = |n: usize| -> Result<(), String> {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!(
                "`{head}` takes {n} operands, `{text}` has {}",
                args.len()
            ))
        }
    };
    match head {
        "ld" => {
            need(2)?;
            let src = strip_addr(&args[1]);
            if let Some(v) = parse_int(&src) {
                // Dat3M's register initialisation `ld r0, 2`.
                return Ok(Op::Mov {
                    reg: args[0].clone(),
                    val: Operand::Const(v),
                });
            }
            let sem = sem.unwrap_or(Sem::Weak);
            let scope = if sem == Sem::Weak {
                None
            } else {
                Some(scope.unwrap_or(Scope::Gpu))
            };
            Ok(Op::Ld {
                reg: args[0].clone(),
                loc: src,
                sem,
                scope,
            })
        }
        "st" => {
            need(2)?;
            let sem = sem.unwrap_or(Sem::Weak);
            let scope = if sem == Sem::Weak {
                None
            } else {
                Some(scope.unwrap_or(Scope::Gpu))
            };
            Ok(Op::St {
                loc: strip_addr(&args[0]),
                val: operand(&args[1]),
                sem,
                scope,
            })
        }
        "atom" => {
            let Some(op) = rmw else {
                return Err(format!(
                    "`{text}`: atom needs an operation (.add, .exch, .cas, ...)"
                ));
            };
            let (cmp, val) = if op == AtomOp::Cas {
                need(4)?;
                (Some(operand(&args[2])), operand(&args[3]))
            } else {
                need(3)?;
                (None, operand(&args[2]))
            };
            Ok(Op::Atom {
                op,
                reg: args[0].clone(),
                loc: strip_addr(&args[1]),
                val,
                cmp,
                sem: sem.unwrap_or(Sem::Relaxed),
                scope: scope.unwrap_or(Scope::Gpu),
            })
        }
        "red" => {
            let Some(op) = rmw else {
                return Err(format!("`{text}`: red needs an operation (.add, .or, ...)"));
            };
            need(2)?;
            Ok(Op::Red {
                op,
                loc: strip_addr(&args[0]),
                val: operand(&args[1]),
                sem: sem.unwrap_or(Sem::Relaxed),
                scope: scope.unwrap_or(Scope::Gpu),
            })
        }
        "fence" | "membar" => {
            need(0)?;
            let sem = if head == "membar" {
                Sem::Sc
            } else {
                sem.unwrap_or(Sem::Sc)
            };
            Ok(Op::Fence {
                sem,
                scope: scope.unwrap_or(Scope::Sys),
            })
        }
        "mov" => {
            need(2)?;
            Ok(Op::Mov {
                reg: args[0].clone(),
                val: operand(&args[1]),
            })
        }
        _ if text.ends_with(':') => Err(format!("labels are not supported (`{text}`)")),
        _ => Err(format!("unsupported instruction `{head}` in `{text}`")),
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
    }
}

/// Exports a test in Dat3M's PTX syntax. Lost on the way: `warp` and state spaces, which the
/// syntax has no place for.
pub fn export(test: &LitmusTest) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "PTX {}", test.name);
    if let Some(d) = &test.description {
        let _ = writeln!(s, "\"{}\"", d.replace('"', "'"));
    }
    s.push_str("{\n");
    for l in test.all_locations() {
        let _ = writeln!(s, "{l}={};", test.init_of(&l));
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
        let e = import("PTX X\n{ x=0; }\n P0@cta 0,gpu 0 ;\n bne r1, 0, L ;\nexists (x == 1)\n")
            .unwrap_err();
        assert_eq!(e.line, 4);
        assert!(import("C X\n").unwrap_err().msg.contains("PTX"));
    }
}
