//! Writing a test in Dat3M's syntax.

use std::fmt::Write as _;

use crate::{LitmusTest, Op, Operand, Proxy, Scope, Sem};

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
                Proxy::Constant | Proxy::Generic | Proxy::Async => "cold",
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
        Op::BulkCopy { dst, src, mbar } => format!("cp.async.bulk {dst}, {src}, {mbar}"),
        Op::MbarWait { mbar } => format!("mbarrier.try_wait.parity {mbar}, 0"),
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
            // The warp is a placement hint the import reads back (`warp N`), so that
            // export | import keeps it.
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
