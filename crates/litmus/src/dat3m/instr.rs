//! One instruction cell of a Dat3M thread column: PTX memory, control and barrier
//! instructions with their modifiers read by kind.

use super::OpError;
use crate::{
    parse_int, AtomOp, BranchCond, LocalOp, Op, Operand, Proxy, ProxyFenceKind, Scope, Sem,
};

pub fn split_row(line: &str) -> Vec<&str> {
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
/// operands by the crate's one PTX instruction reader ([`gpucts_ptx::instr::parse_instruction`])
/// and its literals read by the one literal grammar ([`gpucts_ptx::literal`]).
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
    let ins = gpucts_ptx::instr::parse_instruction(text, 0)
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
    ins: &'a gpucts_ptx::instr::Instruction,
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
    async_op(c)
}

/// `cp.async.bulk dst, src, mbar` and `mbarrier.try_wait.parity mbar, 0` (the async proxy's
/// copy and the wait for the phase that tracks it; see [`Op::BulkCopy`]).
fn async_op(c: &Cell) -> Result<Option<Op>, OpError> {
    const COPY: &str = "cp.async.bulk DST, SRC, MBAR";
    const WAIT: &str = "mbarrier.try_wait.parity MBAR, 0 (each mbarrier completes phase 0 only)";
    let mods: Vec<&str> = c.ins.modifiers.iter().map(String::as_str).collect();
    match c.head() {
        "cp" => {
            if mods != ["async", "bulk"] {
                return Err(OpError::Form {
                    text: c.text.to_string(),
                    expected: COPY,
                });
            }
            c.need(3)?;
            Ok(Some(Op::BulkCopy {
                dst: c.loc(0)?,
                src: c.loc(1)?,
                mbar: c.loc(2)?,
            }))
        }
        "mbarrier" => {
            c.need(2)?;
            if mods != ["try_wait", "parity"] || c.value(1)? != Operand::Const(0) {
                return Err(OpError::Form {
                    text: c.text.to_string(),
                    expected: WAIT,
                });
            }
            Ok(Some(Op::MbarWait { mbar: c.loc(0)? }))
        }
        _ => Ok(None),
    }
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
