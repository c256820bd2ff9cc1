//! A small interpreter for one PTX function at a time: straight-line integer code, the state
//! spaces (`.global`, `.shared`, `.local`, `.param`, `.const`) and generic addressing, so that
//! what a producer's code puts into a `.param` — the bits of an argument before a `call`, of a
//! return value before `ret` — can be observed without a GPU.
//!
//! It runs one function until its first `call` or its `ret`/`exit` and then hands back the
//! state, so a caller's argument bytes can be read at the call and a callee's return bytes at
//! its return; a second run of another function can be given those bytes (a caller of one
//! producer against a callee of another). Anything it does not execute (branches, floating
//! point, vectors, atomics) is refused by name, never guessed. Reads of bytes nobody wrote are
//! errors: a `.param` the caller wrote only partly is seen, not filled with zeros.
//!
//! Generic addresses (PTX ISA §6.4.1.1 "Generic Addressing"): the `.shared` and `.local`
//! windows are placed at [`SHARED_WINDOW`] and [`LOCAL_WINDOW`] (each 4 GiB, as 32-bit window
//! offsets, ptx-interop 13.2 §1.1); every other generic address is a `.global` one.

use std::collections::HashMap;

use crate::instr::{strip_comments, Instruction};

/// Base of the `.shared` window in the generic address space.
pub const SHARED_WINDOW: u64 = 0x1000_0000_0000;
/// Base of the `.local` window in the generic address space.
pub const LOCAL_WINDOW: u64 = 0x2000_0000_0000;
const WINDOW_SIZE: u64 = 1 << 32;
/// Where the interpreter places `.global` objects (below both windows).
const GLOBAL_BASE: u64 = 0x4000_0000;
/// Statements one run may execute (the code it runs has no loops; this is a guard).
const MAX_STEPS: usize = 100_000;
/// Largest PTX text the interpreter reads (a producer's one-function module is a few KiB;
/// checked before any work).
pub const MAX_EXEC_BYTES: usize = 1 << 20;
/// Largest `.param` variable, in bytes, a store may grow (the kernel parameter space ptxas
/// 12.9 accepts is 32,764 bytes; a device function's parameters are smaller still).
pub const MAX_PARAM_BYTES: usize = 1 << 16;

/// A state space the interpreter keeps memory for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemSpace {
    Global,
    Shared,
    Local,
    Const,
}

impl MemSpace {
    pub fn name(self) -> &'static str {
        match self {
            MemSpace::Global => ".global",
            MemSpace::Shared => ".shared",
            MemSpace::Local => ".local",
            MemSpace::Const => ".const",
        }
    }

    fn from_modifier(m: &str) -> Option<MemSpace> {
        match m.split("::").next() {
            Some("global") => Some(MemSpace::Global),
            Some("shared") => Some(MemSpace::Shared),
            Some("local") => Some(MemSpace::Local),
            Some("const") => Some(MemSpace::Const),
            _ => None,
        }
    }
}

/// The generic address of `addr` in `space` (ptx-interop 13.2 §2.3 note B: what a pointer
/// argument must be).
pub fn generic(space: MemSpace, addr: u64) -> u64 {
    match space {
        MemSpace::Shared => SHARED_WINDOW + (addr & (WINDOW_SIZE - 1)),
        MemSpace::Local => LOCAL_WINDOW + (addr & (WINDOW_SIZE - 1)),
        MemSpace::Global | MemSpace::Const => addr,
    }
}

/// The state space and address a generic address names.
pub fn resolve(addr: u64) -> (MemSpace, u64) {
    if (SHARED_WINDOW..SHARED_WINDOW + WINDOW_SIZE).contains(&addr) {
        (MemSpace::Shared, addr - SHARED_WINDOW)
    } else if (LOCAL_WINDOW..LOCAL_WINDOW + WINDOW_SIZE).contains(&addr) {
        (MemSpace::Local, addr - LOCAL_WINDOW)
    } else {
        (MemSpace::Global, addr)
    }
}

/// Why a run stopped without reaching a `call` or `ret`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    #[error("no definition of function `{0}`")]
    NoFunction(String),
    #[error("line {line}: the interpreter does not execute `{text}`")]
    Unsupported { line: usize, text: String },
    #[error("line {line}: register `{reg}` read before it is written")]
    Unwritten { line: usize, reg: String },
    #[error("line {line}: reads {bytes} byte(s) at {what} that nothing wrote")]
    UnwrittenMemory {
        line: usize,
        what: String,
        bytes: usize,
    },
    #[error("line {line}: {message}")]
    Bad { line: usize, message: String },
    #[error("more than {MAX_STEPS} statements")]
    Runaway,
    #[error("a PTX text of {0} bytes, over the interpreter's {MAX_EXEC_BYTES}")]
    TooLarge(usize),
    #[error("{0}")]
    Parse(String),
}

/// Where a run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// At a `call` (not executed): the callee (a function name, or the register of an
    /// indirect call), the `.param` names passed, and those the return values go to.
    Call {
        line: usize,
        callee: String,
        args: Vec<String>,
        rets: Vec<String>,
    },
    /// At `ret` or `exit`.
    Ret { line: usize },
}

/// One function of a PTX text, ready to run.
#[derive(Debug, Clone)]
pub struct Machine {
    body: Vec<Instruction>,
    /// Register name or `%prefix` of a `%prefix<N>` declaration -> width in bits (1 for
    /// `.pred`).
    widths: HashMap<String, u32>,
    regs: HashMap<String, u64>,
    /// Module and function variables: name -> (space, address).
    symbols: HashMap<String, (MemSpace, u64)>,
    mem: HashMap<(MemSpace, u64), u8>,
    /// `.param` variables by name: the function's own, and those of call sites.
    params: HashMap<String, Vec<Option<u8>>>,
    next: HashMap<MemSpace, u64>,
    /// The statement the next [`Machine::run`] starts at.
    pc: usize,
}

impl Machine {
    /// The function `name` of `ptx`, with the module's variables placed in their spaces.
    pub fn new(ptx: &str, name: &str) -> Result<Machine, ExecError> {
        if ptx.len() > MAX_EXEC_BYTES {
            return Err(ExecError::TooLarge(ptx.len()));
        }
        let body = crate::instr::function_body(ptx, name).map_err(|e| {
            if e.line == 0 {
                ExecError::NoFunction(name.to_string())
            } else {
                ExecError::Parse(e.to_string())
            }
        })?;
        let mut m = Machine {
            body,
            widths: HashMap::new(),
            regs: HashMap::new(),
            symbols: HashMap::new(),
            mem: HashMap::new(),
            params: HashMap::new(),
            next: HashMap::new(),
            pc: 0,
        };
        m.declarations(&strip_comments(ptx));
        Ok(m)
    }

    /// Read `.reg` widths and variable declarations of every space (module scope and
    /// function scope alike: names the producers write are unique within a module).
    fn declarations(&mut self, text: &str) {
        for stmt in text.split([';', '{', '}']) {
            let mut words: Vec<&str> = stmt.split_whitespace().collect();
            while words
                .first()
                .is_some_and(|w| matches!(*w, ".visible" | ".extern" | ".weak" | ".common"))
            {
                words.remove(0);
            }
            let Some(first) = words.first() else { continue };
            if *first == ".reg" {
                let bits = words
                    .iter()
                    .find_map(|w| type_bits(w.trim_start_matches('.')))
                    .or_else(|| words.contains(&".pred").then_some(1))
                    .unwrap_or(64);
                let names = words
                    .iter()
                    .skip(1)
                    .filter(|w| !w.starts_with('.'))
                    .copied()
                    .collect::<Vec<_>>()
                    .join(" ");
                for n in names.split(',') {
                    let n = n.trim();
                    let n = n.split('<').next().unwrap_or(n);
                    if !n.is_empty() {
                        self.widths.insert(n.to_string(), bits);
                    }
                }
                continue;
            }
            let Some(space) = first.strip_prefix('.').and_then(MemSpace::from_modifier) else {
                continue;
            };
            let decl = stmt.split('=').next().unwrap_or(stmt);
            let Some(last) = decl.split_whitespace().last() else {
                continue;
            };
            let (name, count) = match last.split_once('[') {
                Some((n, rest)) => (
                    n,
                    crate::literal::parse_int(rest.trim_end_matches(']')).unwrap_or(1),
                ),
                None => (last, 1),
            };
            let elem = decl
                .split_whitespace()
                .find_map(|w| type_bits(w.trim_start_matches('.')))
                .unwrap_or(8);
            // An array larger than the address space is placed anyway (nothing is allocated
            // for it); its size saturates rather than wraps.
            let size = (u64::from(elem) / 8).max(1).saturating_mul(count.max(1));
            let addr = self.allocate(space, size);
            self.symbols.insert(name.to_string(), (space, addr));
        }
    }

    fn allocate(&mut self, space: MemSpace, size: u64) -> u64 {
        let start = if space == MemSpace::Global {
            GLOBAL_BASE
        } else {
            0x100
        };
        let next = self.next.entry(space).or_insert(start);
        let addr = *next;
        *next = addr
            .saturating_add(size.max(1))
            .div_ceil(16)
            .saturating_mul(16);
        addr
    }

    /// Place `bytes` in `space` and give their address in that space.
    pub fn place(&mut self, space: MemSpace, bytes: &[u8]) -> u64 {
        let addr = self.allocate(space, bytes.len() as u64);
        self.write(space, addr, bytes);
        addr
    }

    pub fn write(&mut self, space: MemSpace, addr: u64, bytes: &[u8]) {
        for (i, b) in bytes.iter().enumerate() {
            self.mem.insert((space, addr.wrapping_add(i as u64)), *b);
        }
    }

    /// `n` bytes at `addr` in `space`, `None` for a byte nothing wrote.
    pub fn read(&self, space: MemSpace, addr: u64, n: usize) -> Vec<Option<u8>> {
        (0..n as u64)
            .map(|i| self.mem.get(&(space, addr.wrapping_add(i))).copied())
            .collect()
    }

    /// The space and address of a variable the module or function declares.
    pub fn symbol(&self, name: &str) -> Option<(MemSpace, u64)> {
        self.symbols.get(name).copied()
    }

    /// Set a `.param` variable (a parameter of the function run) to `bytes`.
    pub fn set_param(&mut self, name: &str, bytes: &[u8]) {
        self.params
            .insert(name.to_string(), bytes.iter().map(|b| Some(*b)).collect());
    }

    /// The bytes of a `.param` variable as they are now (`None`: never written).
    pub fn param(&self, name: &str) -> Option<&[Option<u8>]> {
        self.params.get(name).map(Vec::as_slice)
    }

    /// Run until the next `call`, `ret` or `exit`: from the first statement, or after the
    /// `call` the previous run stopped at (its return values set with [`Machine::set_param`]).
    pub fn run(&mut self) -> Result<Stop, ExecError> {
        let body = std::mem::take(&mut self.body);
        let result = self.run_body(&body);
        self.body = body;
        result
    }

    fn run_body(&mut self, body: &[Instruction]) -> Result<Stop, ExecError> {
        for (steps, ins) in body.iter().enumerate().skip(self.pc) {
            if steps > MAX_STEPS {
                return Err(ExecError::Runaway);
            }
            self.pc = steps + 1;
            if let Some(g) = &ins.guard {
                let p = self.get(&g.predicate, 1, ins.line)?;
                if (p != 0) == g.negated {
                    continue;
                }
            }
            if let Some(stop) = self.step(ins)? {
                return Ok(stop);
            }
        }
        Err(ExecError::Bad {
            line: body.last().map_or(0, |i| i.line),
            message: "the body ends without `ret`".into(),
        })
    }

    fn unsupported(ins: &Instruction) -> ExecError {
        ExecError::Unsupported {
            line: ins.line,
            text: ins.to_string(),
        }
    }

    fn width_of(&self, reg: &str) -> Option<u32> {
        if let Some(w) = self.widths.get(reg) {
            return Some(*w);
        }
        self.widths
            .get(reg.trim_end_matches(|c: char| c.is_ascii_digit()))
            .copied()
    }

    fn set(&mut self, reg: &str, value: u64, line: usize) -> Result<(), ExecError> {
        let w = self.width_of(reg).ok_or_else(|| ExecError::Bad {
            line,
            message: format!("`{reg}` is not a declared register"),
        })?;
        self.regs.insert(reg.to_string(), truncate(value, w));
        Ok(())
    }

    /// An operand's value at `bits`: a register, an immediate, or a variable's address in its
    /// own space.
    fn get(&self, op: &str, bits: u32, line: usize) -> Result<u64, ExecError> {
        let op = op.trim();
        if op.starts_with('%') {
            return self
                .regs
                .get(op)
                .map(|v| truncate(*v, bits))
                .ok_or_else(|| ExecError::Unwritten {
                    line,
                    reg: op.to_string(),
                });
        }
        if let Some(v) = crate::literal::parse_signed(op) {
            return Ok(truncate(v as u64, bits));
        }
        if let Some(v) = crate::literal::parse_int(op) {
            return Ok(truncate(v, bits));
        }
        if let Some((_, addr)) = self.symbols.get(op) {
            return Ok(truncate(*addr, bits));
        }
        Err(ExecError::Bad {
            line,
            message: format!("operand `{op}` is neither a register, an immediate nor a variable"),
        })
    }

    /// `[base+off]` -> (the base's text, offset).
    fn address(op: &str) -> Option<(&str, i64)> {
        let inner = op.trim().strip_prefix('[')?.strip_suffix(']')?.trim();
        match inner.rfind(['+', '-']).filter(|&i| i > 0) {
            Some(i) => {
                let off = crate::literal::parse_signed(inner[i..].trim_start_matches('+').trim())?;
                Some((inner[..i].trim(), off))
            }
            None => Some((inner, 0)),
        }
    }

    /// One statement; `Some` when the run stops here.
    fn step(&mut self, ins: &Instruction) -> Result<Option<Stop>, ExecError> {
        let line = ins.line;
        let ty = ins.modifiers.last().map(String::as_str).unwrap_or("");
        let operand = |i: usize| operand_of(ins, i);
        if ins
            .modifiers
            .iter()
            .any(|m| m.starts_with('v') && m[1..].parse::<u32>().is_ok())
        {
            return Err(Self::unsupported(ins));
        }
        match ins.opcode.as_str() {
            "ret" | "exit" => return Ok(Some(Stop::Ret { line })),
            "call" => return Ok(Some(call_stop(ins))),
            "ld" | "st" => self.ld_st(ins, ty)?,
            "mov" => {
                let bits = type_bits(ty).or((ty == "pred").then_some(1));
                let bits = bits.ok_or_else(|| Self::unsupported(ins))?;
                if operand(1)?.starts_with('{') {
                    return Err(Self::unsupported(ins));
                }
                let v = self.get(operand(1)?, bits, line)?;
                self.set(operand(0)?, v, line)?;
            }
            "cvt" | "cvta" => self.convert(ins, ty)?,
            "add" | "sub" | "mul" | "and" | "or" | "xor" | "shl" | "shr" | "min" | "max"
            | "not" | "neg" => self.integer_op(ins, ty)?,
            "bfe" | "bfi" => self.bit_field(ins, ty)?,
            "selp" | "setp" => self.select_compare(ins, ty)?,
            _ => return Err(Self::unsupported(ins)),
        }
        Ok(None)
    }

    /// `ld`/`st`: `.param` variables by name, other spaces by address (generic resolved).
    fn ld_st(&mut self, ins: &Instruction, ty: &str) -> Result<(), ExecError> {
        let line = ins.line;
        let operand = |i: usize| operand_of(ins, i);
        let bits = type_bits(ty).ok_or_else(|| Self::unsupported(ins))?;
        let bytes = (bits / 8) as usize;
        let (addr_op, value_op) = if ins.opcode == "ld" {
            (operand(1)?, operand(0)?)
        } else {
            (operand(0)?, operand(1)?)
        };
        let (base, off) = Self::address(addr_op).ok_or_else(|| Self::unsupported(ins))?;
        if ins.has("param") {
            let name = base.to_string();
            let at = usize::try_from(off)
                .ok()
                .filter(|o| o + bytes <= MAX_PARAM_BYTES)
                .ok_or_else(|| ExecError::Bad {
                    line,
                    message: format!(
                        "`[{name}{off:+}]` is outside any .param variable (at most {MAX_PARAM_BYTES} bytes)"
                    ),
                })?;
            if ins.opcode == "ld" {
                let slot = self.params.get(&name).ok_or(ExecError::UnwrittenMemory {
                    line,
                    what: format!("[{name}]"),
                    bytes,
                })?;
                let got: Option<Vec<u8>> = (0..bytes)
                    .map(|i| slot.get(at + i).copied().flatten())
                    .collect();
                let got = got.ok_or(ExecError::UnwrittenMemory {
                    line,
                    what: format!("[{name}+{off}]"),
                    bytes,
                })?;
                let v = extend(le(&got), bits, is_signed(ty));
                self.set(value_op, v, line)?;
            } else {
                let v = self.get(value_op, bits, line)?;
                let slot = self.params.entry(name).or_default();
                let end = at + bytes;
                if slot.len() < end {
                    slot.resize(end, None);
                }
                for i in 0..bytes {
                    slot[at + i] = Some((v >> (8 * i)) as u8);
                }
            }
            return Ok(());
        }
        let space = ins
            .modifiers
            .iter()
            .find_map(|m| MemSpace::from_modifier(m));
        let base_addr = self.get(base, 64, line)?;
        let a = base_addr.wrapping_add(off as u64);
        let (space, a, what) = match space {
            Some(s) => (s, a, format!("{} 0x{a:x}", s.name())),
            None => {
                let (s, r) = resolve(a);
                (s, r, format!("generic 0x{a:x} ({} 0x{r:x})", s.name()))
            }
        };
        if ins.opcode == "ld" {
            let got: Option<Vec<u8>> = self.read(space, a, bytes).into_iter().collect();
            let got = got.ok_or(ExecError::UnwrittenMemory { line, what, bytes })?;
            let v = extend(le(&got), bits, is_signed(ty));
            self.set(value_op, v, line)?;
        } else {
            let v = self.get(value_op, bits, line)?;
            let bytes_le: Vec<u8> = (0..bytes).map(|i| (v >> (8 * i)) as u8).collect();
            self.write(space, a, &bytes_le);
        }
        Ok(())
    }

    /// `cvt` between integer types and `cvta` between generic and a state space.
    fn convert(&mut self, ins: &Instruction, ty: &str) -> Result<(), ExecError> {
        let line = ins.line;
        let operand = |i: usize| operand_of(ins, i);
        match ins.opcode.as_str() {
            "cvt" => {
                let types: Vec<&str> = ins
                    .modifiers
                    .iter()
                    .map(String::as_str)
                    .filter(|m| type_bits(m).is_some())
                    .collect();
                let [dt, st] = types[..] else {
                    return Err(Self::unsupported(ins));
                };
                if ins.modifiers.len() != 2 || dt.starts_with('f') || st.starts_with('f') {
                    return Err(Self::unsupported(ins));
                }
                let sbits = type_bits(st).unwrap_or(64);
                let v = extend(self.get(operand(1)?, sbits, line)?, sbits, is_signed(st));
                let dbits = type_bits(dt).unwrap_or(64);
                self.set(operand(0)?, extend(v, dbits, is_signed(dt)), line)?;
            }
            "cvta" => {
                let to = ins.has("to");
                let space = ins
                    .modifiers
                    .iter()
                    .find_map(|m| MemSpace::from_modifier(m))
                    .ok_or_else(|| Self::unsupported(ins))?;
                let bits = type_bits(ty).unwrap_or(64);
                let a = self.get(operand(1)?, bits, line)?;
                let v = if to {
                    let (s, r) = resolve(a);
                    let global_like = matches!(space, MemSpace::Global | MemSpace::Const);
                    if s != space && !(global_like && s == MemSpace::Global) {
                        return Err(ExecError::Bad {
                            line,
                            message: format!(
                                "`{ins}` converts generic 0x{a:x}, a {} address, to {}",
                                s.name(),
                                space.name()
                            ),
                        });
                    }
                    r
                } else {
                    generic(space, a)
                };
                self.set(operand(0)?, v, line)?;
            }
            _ => return Err(Self::unsupported(ins)),
        }
        Ok(())
    }

    /// Integer arithmetic, logic and shifts (`add` .. `max`, `not`, `neg`); floats refused.
    fn integer_op(&mut self, ins: &Instruction, ty: &str) -> Result<(), ExecError> {
        let line = ins.line;
        let operand = |i: usize| operand_of(ins, i);
        match ins.opcode.as_str() {
            "add" | "sub" | "mul" | "and" | "or" | "xor" | "shl" | "shr" | "min" | "max" => {
                let bits = type_bits(ty)
                    .or((ty == "pred").then_some(1))
                    .ok_or_else(|| Self::unsupported(ins))?;
                if ty.starts_with('f') || (ins.opcode == "mul" && !ins.has("lo")) {
                    return Err(Self::unsupported(ins));
                }
                let shift = matches!(ins.opcode.as_str(), "shl" | "shr");
                let a = self.get(operand(1)?, bits, line)?;
                let b = self.get(operand(2)?, if shift { 32 } else { bits }, line)?;
                let signed = is_signed(ty);
                let sa = extend(a, bits, true) as i64;
                let sb = extend(b, bits, true) as i64;
                let v = match ins.opcode.as_str() {
                    "add" => a.wrapping_add(b),
                    "sub" => a.wrapping_sub(b),
                    "mul" => a.wrapping_mul(b),
                    "and" => a & b,
                    "or" => a | b,
                    "xor" => a ^ b,
                    "shl" => a
                        .checked_shl(b as u32)
                        .filter(|_| b < u64::from(bits))
                        .unwrap_or(0),
                    "shr" if signed => (sa >> b.min(u64::from(bits) - 1)) as u64,
                    "shr" => a
                        .checked_shr(b as u32)
                        .filter(|_| b < u64::from(bits))
                        .unwrap_or(0),
                    "min" if signed => sa.min(sb) as u64,
                    "max" if signed => sa.max(sb) as u64,
                    "min" => a.min(b),
                    _ => a.max(b),
                };
                self.set(operand(0)?, v, line)?;
            }
            "not" | "neg" => {
                let bits = type_bits(ty).ok_or_else(|| Self::unsupported(ins))?;
                let a = self.get(operand(1)?, bits, line)?;
                let v = if ins.opcode == "not" {
                    !a
                } else {
                    a.wrapping_neg()
                };
                self.set(operand(0)?, v, line)?;
            }
            _ => return Err(Self::unsupported(ins)),
        }
        Ok(())
    }

    /// `bfe`/`bfi` (PTX ISA bit-field extract and insert).
    fn bit_field(&mut self, ins: &Instruction, ty: &str) -> Result<(), ExecError> {
        let line = ins.line;
        let operand = |i: usize| operand_of(ins, i);
        match ins.opcode.as_str() {
            "bfe" => {
                let bits = type_bits(ty).ok_or_else(|| Self::unsupported(ins))?;
                let a = self.get(operand(1)?, bits, line)?;
                let pos = self.get(operand(2)?, 32, line)? & 0xff;
                let len = self.get(operand(3)?, 32, line)? & 0xff;
                // PTX ISA `bfe`: d[i] = a[pos+i] for i < len while pos+i <= msb, else the
                // sign bit a[min(pos+len-1, msb)] (.s types, len > 0) or 0.
                let msb = u64::from(bits) - 1;
                let sbit = if is_signed(ty) && len > 0 {
                    (a >> (pos + len - 1).min(msb)) & 1
                } else {
                    0
                };
                let mut v = 0u64;
                for i in 0..=msb {
                    let bit = if i < len && pos + i <= msb {
                        (a >> (pos + i)) & 1
                    } else {
                        sbit
                    };
                    v |= bit << i;
                }
                self.set(operand(0)?, v, line)?;
            }
            "bfi" => {
                // PTX ISA `bfi`: d = b with bits [pos, pos+len) replaced by a's low bits.
                let bits = type_bits(ty).ok_or_else(|| Self::unsupported(ins))?;
                let a = self.get(operand(1)?, bits, line)?;
                let mut v = self.get(operand(2)?, bits, line)?;
                let pos = self.get(operand(3)?, 32, line)? & 0xff;
                let len = self.get(operand(4)?, 32, line)? & 0xff;
                let msb = u64::from(bits) - 1;
                for i in 0..len {
                    if pos + i > msb {
                        break;
                    }
                    v = (v & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
                }
                self.set(operand(0)?, v, line)?;
            }
            _ => return Err(Self::unsupported(ins)),
        }
        Ok(())
    }

    /// `selp` and integer `setp`.
    fn select_compare(&mut self, ins: &Instruction, ty: &str) -> Result<(), ExecError> {
        let line = ins.line;
        let operand = |i: usize| operand_of(ins, i);
        match ins.opcode.as_str() {
            "selp" => {
                let bits = type_bits(ty).ok_or_else(|| Self::unsupported(ins))?;
                let p = self.get(operand(3)?, 1, line)?;
                let v = self.get(operand(if p != 0 { 1 } else { 2 })?, bits, line)?;
                self.set(operand(0)?, v, line)?;
            }
            "setp" => {
                let bits = type_bits(ty).ok_or_else(|| Self::unsupported(ins))?;
                if ty.starts_with('f') || ins.modifiers.len() != 2 {
                    return Err(Self::unsupported(ins));
                }
                let a = self.get(operand(1)?, bits, line)?;
                let b = self.get(operand(2)?, bits, line)?;
                let (sa, sb) = (extend(a, bits, true) as i64, extend(b, bits, true) as i64);
                let signed = is_signed(ty);
                let r = match ins.modifiers[0].as_str() {
                    "eq" => a == b,
                    "ne" => a != b,
                    "lt" if signed => sa < sb,
                    "le" if signed => sa <= sb,
                    "gt" if signed => sa > sb,
                    "ge" if signed => sa >= sb,
                    "lt" | "lo" => a < b,
                    "le" | "ls" => a <= b,
                    "gt" | "hi" => a > b,
                    "ge" | "hs" => a >= b,
                    _ => return Err(Self::unsupported(ins)),
                };
                self.set(operand(0)?, u64::from(r), line)?;
            }
            _ => return Err(Self::unsupported(ins)),
        }
        Ok(())
    }
}

/// Operand `i` of `ins`, or the error that names the missing one.
fn operand_of(ins: &Instruction, i: usize) -> Result<&str, ExecError> {
    ins.operands
        .get(i)
        .map(String::as_str)
        .ok_or(ExecError::Bad {
            line: ins.line,
            message: format!("`{}` lacks operand {}", ins.opcode, i + 1),
        })
}

/// `call{.uni} (rets), f, (args)` / `call f, (args)` / `call (rets), f` / `call f`.
fn call_stop(ins: &Instruction) -> Stop {
    let list = |s: &str| -> Vec<String> {
        s.trim()
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    };
    let ops = &ins.operands;
    let (rets, rest) = match ops.first() {
        Some(o) if o.trim_start().starts_with('(') => (list(o), &ops[1..]),
        _ => (Vec::new(), &ops[..]),
    };
    Stop::Call {
        line: ins.line,
        callee: rest
            .first()
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        args: rest.get(1).map(|s| list(s)).unwrap_or_default(),
        rets,
    }
}

/// Width of a PTX scalar type modifier (`s8`, `u32`, `b64`, `f32`, ...).
pub fn type_bits(t: &str) -> Option<u32> {
    // The class letter is ASCII: a modifier beginning with any other character is no type
    // (and splitting inside a multi-byte character would panic).
    let n = t.strip_prefix(['s', 'u', 'b', 'f'])?;
    match n.parse::<u32>().ok()? {
        n @ (8 | 16 | 32 | 64) => Some(n),
        _ => None,
    }
}

fn is_signed(t: &str) -> bool {
    t.starts_with('s')
}

fn truncate(v: u64, bits: u32) -> u64 {
    if bits >= 64 {
        v
    } else {
        v & ((1u64 << bits) - 1)
    }
}

/// `v`'s low `bits` extended to 64 bits, by sign when `signed` (PTX ISA: a narrower value in a
/// wider register is sign-extended for `.s` types, zero-extended otherwise).
pub fn extend(v: u64, bits: u32, signed: bool) -> u64 {
    let t = truncate(v, bits);
    if signed && bits < 64 && bits > 0 && (t >> (bits - 1)) & 1 == 1 {
        t | !((1u64 << bits) - 1)
    } else {
        t
    }
}

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel in clang-19's shape: the argument is loaded with `ld.global.s8` into a 32-bit
    /// register and stored whole into the `.param`.
    const CALLER: &str = ".version 7.8\n.target sm_90\n.address_size 64\n\
        .extern .func (.param .b32 func_retval0) take(.param .b32 take_param_0);\n\
        .visible .shared .align 4 .u32 sh;\n\
        .visible .entry k(.param .u64 k_param_0)\n{\n\
        \t.reg .b16 %rs<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<5>;\n\
        \tld.param.u64 %rd1, [k_param_0];\n\
        \tcvta.to.global.u64 %rd2, %rd1;\n\
        \tld.global.u8 %rs1, [%rd2];\n\
        \tcvt.s32.s8 %r1, %rs1;\n\
        \tmov.u64 %rd3, sh;\n\
        \tcvta.shared.u64 %rd4, %rd3;\n\
        \t{\n\t.param .b32 param0;\n\tst.param.b32 [param0+0], %r1;\n\
        \t.param .b64 param1;\n\tst.param.b64 [param1+0], %rd4;\n\
        \t.param .b32 retval0;\n\tcall.uni (retval0), take, (param0, param1);\n\t}\n\tret;\n}\n";

    #[test]
    fn caller_bits_at_the_call() {
        let mut m = Machine::new(CALLER, "k").unwrap();
        let g = m.place(MemSpace::Global, &[0x80]);
        m.set_param("k_param_0", &generic(MemSpace::Global, g).to_le_bytes());
        let stop = m.run().unwrap();
        let Stop::Call {
            callee, args, rets, ..
        } = stop
        else {
            panic!("{stop:?}")
        };
        assert_eq!(callee, "take");
        assert_eq!(args, ["param0", "param1"]);
        assert_eq!(rets, ["retval0"]);
        // cvt.s32.s8 of 0x80 is -128: 0xffffff80, by the ISA's sign extension.
        assert_eq!(
            m.param("param0").unwrap(),
            [Some(0x80), Some(0xff), Some(0xff), Some(0xff)]
        );
        let sh = m.symbol("sh").unwrap();
        let p1: Vec<u8> = m
            .param("param1")
            .unwrap()
            .iter()
            .map(|b| b.unwrap())
            .collect();
        let addr = u64::from_le_bytes(p1.try_into().unwrap());
        assert_eq!(resolve(addr), (MemSpace::Shared, sh.1));
        assert!(addr >= SHARED_WINDOW);
        // Resumed after the call, the kernel runs on to its `ret`, not from its start.
        m.set_param("retval0", &[1, 0, 0, 0]);
        assert!(matches!(m.run().unwrap(), Stop::Ret { .. }));
    }

    #[test]
    fn partial_param_stores_stay_unwritten() {
        let ptx = ".version 7.8\n.target sm_90\n.address_size 64\n\
            .visible .func (.param .b32 func_retval0) f(.param .b32 f_param_0)\n{\n\
            \t.reg .b16 %rs<2>;\n\tld.param.u8 %rs1, [f_param_0];\n\
            \tst.param.b8 [func_retval0+0], %rs1;\n\tret;\n}\n";
        let mut m = Machine::new(ptx, "f").unwrap();
        m.set_param("f_param_0", &[0xfe, 0x12, 0x34, 0x56]);
        assert!(matches!(m.run().unwrap(), Stop::Ret { .. }));
        assert_eq!(
            m.param("func_retval0").unwrap(),
            [Some(0xfe)],
            "only the byte st.param.b8 wrote"
        );
    }

    #[test]
    fn generic_loads_resolve_the_window_and_wrong_cvta_is_refused() {
        let ptx = ".version 7.8\n.target sm_90\n.address_size 64\n\
            .visible .func (.param .b32 func_retval0) f(.param .b64 f_param_0)\n{\n\
            \t.reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [f_param_0];\n\
            \tld.u32 %r1, [%rd1];\n\tst.param.b32 [func_retval0+0], %r1;\n\tret;\n}\n\
            .visible .func (.param .b32 func_retval0) g(.param .b64 g_param_0)\n{\n\
            \t.reg .b32 %r<2>;\n\t.reg .b64 %rd<3>;\n\tld.param.u64 %rd1, [g_param_0];\n\
            \tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.u32 %r1, [%rd2];\n\
            \tst.param.b32 [func_retval0+0], %r1;\n\tret;\n}\n";
        for space in [MemSpace::Global, MemSpace::Shared, MemSpace::Local] {
            let mut m = Machine::new(ptx, "f").unwrap();
            let a = m.place(space, &7u32.to_le_bytes());
            m.set_param("f_param_0", &generic(space, a).to_le_bytes());
            m.run().unwrap();
            assert_eq!(
                m.param("func_retval0").unwrap(),
                [Some(7), Some(0), Some(0), Some(0)]
            );
        }
        let mut m = Machine::new(ptx, "g").unwrap();
        let a = m.place(MemSpace::Shared, &7u32.to_le_bytes());
        m.set_param("g_param_0", &generic(MemSpace::Shared, a).to_le_bytes());
        assert!(matches!(m.run(), Err(ExecError::Bad { .. })));
    }

    #[test]
    fn extension_and_bfe_follow_the_isa() {
        assert_eq!(extend(0x80, 8, true), 0xffff_ffff_ffff_ff80);
        assert_eq!(extend(0x80, 8, false), 0x80);
        assert_eq!(extend(0x7fff, 16, true), 0x7fff);
        let ptx = ".version 7.8\n.target sm_90\n.address_size 64\n\
            .visible .func (.param .b32 func_retval0) f(.param .b32 f_param_0)\n{\n\
            \t.reg .b32 %r<3>;\n\tld.param.b32 %r1, [f_param_0];\n\
            \tbfe.s32 %r2, %r1, 4, 3;\n\tst.param.b32 [func_retval0+0], %r2;\n\tret;\n}\n";
        let mut m = Machine::new(ptx, "f").unwrap();
        // Bits 4..7 of 0x70 are 0b111: -1 as a signed 3-bit field.
        m.set_param("f_param_0", &0x70u32.to_le_bytes());
        m.run().unwrap();
        assert_eq!(m.param("func_retval0").unwrap(), [Some(0xff); 4]);
        let mut m = Machine::new(&ptx.replace("bfe.s32", "bfe.u32"), "f").unwrap();
        m.set_param("f_param_0", &0x70u32.to_le_bytes());
        m.run().unwrap();
        assert_eq!(
            m.param("func_retval0").unwrap(),
            [Some(7), Some(0), Some(0), Some(0)]
        );
    }

    #[test]
    fn refuses_what_it_does_not_execute() {
        let ptx = ".version 7.8\n.target sm_90\n.address_size 64\n\
            .visible .func f()\n{\n\t.reg .f32 %f<3>;\n\tadd.f32 %f1, %f2, %f2;\n\tret;\n}\n";
        let mut m = Machine::new(ptx, "f").unwrap();
        assert!(matches!(m.run(), Err(ExecError::Unsupported { .. })));
        assert!(matches!(
            Machine::new(ptx, "g"),
            Err(ExecError::NoFunction(_))
        ));
    }
}
