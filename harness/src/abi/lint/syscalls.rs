//! The system-call half of `abi lint`: ptx-interop 13.2 ch. 3 (`vprintf`, `malloc`, `free`,
//! `__assertfail`).
//!
//! What is checked, each finding citing ch. 3 and the function:
//! - declarations: the parameter and return counts of the chapter's prototype, the width of
//!   each for the file's `.address_size` (a pointer `t1` is as wide as an address, `size_t`
//!   `t2` is 32 bits under `.address_size 32` and 64 under 64, `line` is `.b32`, the status is
//!   `.s32`), and the exact type the chapter writes when the width is right but the type is not
//!   (`.b32` where the chapter has `.s32`). A module that defines one of them, or declares it
//!   without `.extern`, contradicts "the function definition is not given … the implementation
//!   is provided by the driver".
//! - call sites: the number of arguments and return values and the width of each `.param`
//!   passed; and the chapter's "any pointers must be converted to generic space": a `format`,
//!   `valist`, `message`, `file`, `function` or `ptr` argument whose register holds the address
//!   of a `.global`/`.const`/`.local`/`.shared` symbol that never went through `cvta` is a
//!   finding naming the line of the call and the line where the address was taken.
//!
//! The instruction reader (`ptx::instr`) skips in-body `.param` and `.local` declarations,
//! which this check needs, so bodies are split into statements here; each instruction
//! statement is then parsed by `ptx::instr::parse_instruction`. The data flow is one pass over
//! each body in program order (the last definition of a register before a use wins), which is
//! how producers lay out a call sequence. Odd or truncated calls (no arguments, too many, a call
//! through a register) are findings or are skipped, never a panic.

use std::collections::HashMap;

use serde::Deserialize;

use super::{Rule, Violation};
use crate::ptx::instr::{parse_instruction, strip_comments, Instruction};
use crate::ptx::module::{AddressSize, FunctionDecl, FunctionKind, ParamDecl, PtxModule, PtxType};

crate::vocab::vocabulary! {
    /// The four system calls of ch. 3.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Syscall {
        Vprintf = "vprintf",
        Malloc = "malloc",
        Free = "free",
        #[serde(rename = "__assertfail")]
        Assertfail = "__assertfail",
    }
}

/// One parameter or return value of a ch. 3 prototype.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// A pointer: `t1`, `.b32` or `.b64` by address size; passed in generic space.
    Pointer(&'static str),
    /// A `size_t`: `t2`, `.b32` or `.b64` by the width of `size_t`.
    SizeT(&'static str),
    /// `__assertfail`'s `line`, `.b32` whatever the address size.
    B32(&'static str),
    /// `vprintf`'s `status`, `.s32`.
    Status(&'static str),
}

impl Slot {
    pub fn name(self) -> &'static str {
        match self {
            Slot::Pointer(n) | Slot::SizeT(n) | Slot::B32(n) | Slot::Status(n) => n,
        }
    }

    /// The type ch. 3 writes for this slot under `.address_size addr` (`size_t` follows the
    /// address size: 32-bit `size_t` with 32-bit addresses, 64-bit with 64-bit ones).
    pub fn ty(self, addr: AddressSize) -> PtxType {
        match self {
            Slot::Pointer(_) | Slot::SizeT(_) if addr == AddressSize::A32 => PtxType::B32,
            Slot::Pointer(_) | Slot::SizeT(_) => PtxType::B64,
            Slot::B32(_) => PtxType::B32,
            Slot::Status(_) => PtxType::S32,
        }
    }

    pub fn bits(self, addr: AddressSize) -> u32 {
        self.ty(addr).bits().unwrap_or(0)
    }

    pub fn is_pointer(self) -> bool {
        matches!(self, Slot::Pointer(_))
    }
}

impl Syscall {
    /// The clause a finding about this function cites.
    pub fn clause(self) -> &'static str {
        match self {
            Syscall::Vprintf => "ptx-interop 13.2 ch. 3, vprintf",
            Syscall::Malloc => "ptx-interop 13.2 ch. 3, malloc",
            Syscall::Free => "ptx-interop 13.2 ch. 3, free",
            Syscall::Assertfail => "ptx-interop 13.2 ch. 3, __assertfail",
        }
    }

    /// The parameters of the chapter's prototype, in order.
    pub fn params(self) -> &'static [Slot] {
        match self {
            Syscall::Vprintf => &[Slot::Pointer("format"), Slot::Pointer("valist")],
            Syscall::Malloc => &[Slot::SizeT("size")],
            Syscall::Free => &[Slot::Pointer("ptr")],
            Syscall::Assertfail => &[
                Slot::Pointer("message"),
                Slot::Pointer("file"),
                Slot::B32("line"),
                Slot::Pointer("function"),
                Slot::SizeT("charSize"),
            ],
        }
    }

    /// The return values of the chapter's prototype.
    pub fn returns(self) -> &'static [Slot] {
        match self {
            Syscall::Vprintf => &[Slot::Status("status")],
            Syscall::Malloc => &[Slot::Pointer("ptr")],
            Syscall::Free | Syscall::Assertfail => &[],
        }
    }

    /// The chapter's prototype for `.address_size addr`, as PTX.
    pub fn prototype(self, addr: AddressSize) -> String {
        let list = |slots: &[Slot]| {
            slots
                .iter()
                .map(|s| format!(".param {} {}", s.ty(addr), s.name()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let ret = if self.returns().is_empty() {
            String::new()
        } else {
            format!("({}) ", list(self.returns()))
        };
        format!(
            ".extern .func {ret}{} ({});",
            self.name(),
            list(self.params())
        )
    }
}

/// What a chapter-3 finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyscallRule {
    /// A declaration with the wrong number of parameters or return values.
    DeclCount,
    /// A declared parameter or return value of the wrong width.
    DeclWidth,
    /// The right width but not the type the chapter writes (`.b32` for `.s32`, a float type).
    DeclType,
    /// The module defines the function, or declares it without `.extern`.
    Definition,
    /// A call passing the wrong number of arguments or return values.
    CallCount,
    /// A call passing an argument or receiving a return value of the wrong width.
    CallWidth,
    /// A pointer argument that is not a generic address.
    NonGeneric,
}

impl SyscallRule {
    pub fn id(self) -> &'static str {
        match self {
            SyscallRule::DeclCount => "syscall-decl-count",
            SyscallRule::DeclWidth => "syscall-decl-width",
            SyscallRule::DeclType => "syscall-decl-type",
            SyscallRule::Definition => "syscall-definition",
            SyscallRule::CallCount => "syscall-call-count",
            SyscallRule::CallWidth => "syscall-call-width",
            SyscallRule::NonGeneric => "syscall-non-generic",
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Bodies as statements.

/// One statement of a function body (or of module scope), comments removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stmt {
    pub line: u32,
    pub text: String,
}

/// A function definition's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Body {
    pub name: String,
    pub kind: FunctionKind,
    pub stmts: Vec<Stmt>,
}

/// A variable's state space and the line that declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub space: String,
    pub line: u32,
}

/// Module-scope variables and the bodies of every defined function.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    pub symbols: HashMap<String, Symbol>,
    pub bodies: Vec<Body>,
}

/// The state space of a variable declaration (`.global .align 1 .b8 $str[4] = {…}`) and its
/// name, or `None` for any other statement.
fn variable(text: &str) -> Option<(String, String)> {
    let mut space = None;
    let mut words = text.split_whitespace().peekable();
    while let Some(w) = words.next() {
        match w {
            ".visible" | ".extern" | ".weak" | ".common" => {}
            ".global" | ".const" | ".local" | ".shared" if space.is_none() => {
                space = Some(w.trim_start_matches('.').to_string());
            }
            ".align" => {
                words.next();
            }
            w if w.starts_with('.') => {
                // `.shared::cta` and types; a space must come first.
                if space.is_none() {
                    let base = w.split("::").next().unwrap_or(w);
                    if matches!(base, ".shared" | ".global" | ".const" | ".local") {
                        space = Some(base.trim_start_matches('.').to_string());
                        continue;
                    }
                    return None;
                }
            }
            w => {
                let name: String = w
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%'))
                    .collect();
                return space.filter(|_| !name.is_empty()).map(|s| (s, name));
            }
        }
    }
    None
}

/// The function kind and name in a header such as `.visible .entry k(` or
/// `.func (.param .b32 r) f(.param .b32 a)`.
fn header(text: &str) -> Option<(FunctionKind, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words.iter().position(|w| {
        *w == ".entry" || *w == ".func" || w.starts_with(".entry(") || w.starts_with(".func(")
    })?;
    let kind = if words[at].starts_with(".entry") {
        FunctionKind::Entry
    } else {
        FunctionKind::Func
    };
    // After the keyword: an optional return list in parentheses, then the name.
    let rest = text.split_once(if kind == FunctionKind::Entry {
        ".entry"
    } else {
        ".func"
    })?;
    let mut s = rest.1.trim_start();
    if kind == FunctionKind::Func && s.starts_with('(') {
        let mut depth = 0i32;
        let mut end = s.len();
        for (i, c) in s.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        s = s[end.min(s.len())..].trim_start();
    }
    let name: String = s
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$'))
        .collect();
    (!name.is_empty()).then_some((kind, name))
}

/// Split `src` into module-scope variables and function bodies. Never fails: unbalanced input
/// ends where the text ends.
pub fn scan(src: &str) -> Scan {
    let text = strip_comments(src);
    let mut out = Scan::default();
    let mut line: u32 = 1;
    let mut cur = String::new();
    let mut cur_line = 0u32;
    let mut depth = 0usize; // braces of bodies and nested scopes
    let mut init = 0usize; // braces of an initializer `= { … }`
    let mut paren = 0usize;
    let mut in_string = false;
    let mut body: Option<Body> = None;
    let mut skip_block = false; // a `.section … { … }` at module scope

    let finish = |cur: &mut String, cur_line: u32, body: &mut Option<Body>, out: &mut Scan| {
        let t = cur.trim();
        if !t.is_empty() {
            let stmt = Stmt {
                line: cur_line,
                text: t.to_string(),
            };
            match body.as_mut() {
                Some(b) => b.stmts.push(stmt),
                None => {
                    if let Some((space, name)) = variable(t) {
                        out.symbols.insert(
                            name,
                            Symbol {
                                space,
                                line: cur_line,
                            },
                        );
                    }
                }
            }
        }
        cur.clear();
    };

    for c in text.chars() {
        if in_string {
            cur.push(c);
            if c == '"' {
                in_string = false;
            }
            if c == '\n' {
                line += 1;
            }
            continue;
        }
        match c {
            '\n' => {
                line += 1;
                cur.push(c);
                continue;
            }
            '"' => in_string = true,
            '(' => paren += 1,
            ')' => paren = paren.saturating_sub(1),
            _ => {}
        }
        if skip_block {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        skip_block = false;
                        cur.clear();
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            ';' if paren == 0 && init == 0 => {
                finish(&mut cur, cur_line, &mut body, &mut out);
                continue;
            }
            '{' if paren == 0 => {
                let operand = depth > 0 && {
                    // `{%r1, %r2}` of a vector instruction, not a nested scope.
                    let t = cur.trim();
                    !t.is_empty() && !t.ends_with(':')
                };
                if init > 0 || cur.contains('=') || operand {
                    init += 1;
                } else if depth == 0 {
                    match header(&cur) {
                        Some((kind, name)) => {
                            body = Some(Body {
                                name,
                                kind,
                                stmts: Vec::new(),
                            });
                        }
                        None => skip_block = true,
                    }
                    cur.clear();
                    depth = 1;
                    continue;
                } else {
                    finish(&mut cur, cur_line, &mut body, &mut out);
                    depth += 1;
                    continue;
                }
            }
            '}' if paren == 0 => {
                if init > 0 {
                    init -= 1;
                } else {
                    finish(&mut cur, cur_line, &mut body, &mut out);
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        if let Some(b) = body.take() {
                            out.bodies.push(b);
                        }
                    }
                    continue;
                }
            }
            _ => {}
        }
        if cur.trim().is_empty() && !c.is_whitespace() {
            cur_line = line;
        }
        cur.push(c);
    }
    finish(&mut cur, cur_line, &mut body, &mut out);
    if let Some(b) = body.take() {
        out.bodies.push(b);
    }
    out
}

/// The statement without leading labels (`$L__BB0_2: ret` -> `ret`).
fn strip_labels(mut s: &str) -> &str {
    loop {
        let Some(colon) = s.find(':') else {
            return s;
        };
        let label = s[..colon].trim();
        let is_label = !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%'))
            && !s[colon..].starts_with("::");
        if !is_label {
            return s;
        }
        s = s[colon + 1..].trim_start();
    }
}

// ---------------------------------------------------------------------------------------------
// Data flow over a body.

/// What a register is known to hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Val {
    /// An address derived from a symbol: `sym` (+ `offset` bytes when known), in the symbol's
    /// state space or, after `cvta`, generic.
    Addr {
        sym: String,
        space: String,
        generic: bool,
        offset: Option<i64>,
        /// Where the address was first taken (`mov %rd1, sym`).
        line: u32,
    },
    /// The address of a function.
    Func(String),
    /// An immediate.
    Imm(i64),
    Other,
}

/// A store to memory other than `.param`: where, how wide, how many elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    pub line: u32,
    /// The symbol the address derives from (a local depot, a global), when known.
    pub sym: Option<String>,
    /// Byte offset from the symbol, when known.
    pub offset: Option<i64>,
    /// Bytes per element.
    pub bytes: u32,
    /// 1, 2 or 4 (`.v2`, `.v4`).
    pub count: u32,
    /// The type modifier as written (`f64`, `u32`, `b64`).
    pub ty: String,
}

/// One argument or return value at a call site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallParam {
    pub name: String,
    /// From the in-body `.param` declaration, else the width of the `st.param` into it.
    pub bits: Option<u32>,
    /// The value stored into it (arguments only).
    pub value: Option<Val>,
}

/// A call of a ch. 3 function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSite {
    pub line: u32,
    pub caller: String,
    pub caller_kind: FunctionKind,
    pub call: Syscall,
    pub text: String,
    pub args: Vec<CallParam>,
    pub rets: Vec<CallParam>,
    /// Stores since the previous call of `vprintf` in the same body (the argument buffer of a
    /// `vprintf` call is written there).
    pub stores: Vec<Store>,
}

/// An immediate operand with an optional sign, in the crate's one literal grammar
/// ([`crate::ptx::literal`]: `010` is octal eight, `0b101` binary, as the PTX ISA reads them).
fn parse_imm(s: &str) -> Option<i64> {
    crate::ptx::literal::parse_signed(s)
}

/// `base`, `base+8`, `base-4` -> (base, offset).
fn split_offset(s: &str) -> (&str, i64) {
    let s = s.trim();
    if let Some(i) = s.rfind(['+', '-']).filter(|&i| i > 0) {
        if let Some(k) = parse_imm(&s[i..].replace('+', "")) {
            return (s[..i].trim(), k);
        }
    }
    (s, 0)
}

/// The bit width named by a type modifier (`u32`, `f64`, `b8`).
fn type_bits(m: &str) -> Option<u32> {
    PtxType::from_directive(&format!(".{m}")).and_then(PtxType::bits)
}

struct Flow<'a> {
    symbols: &'a HashMap<String, Symbol>,
    local_symbols: HashMap<String, Symbol>,
    regs: HashMap<String, Val>,
    /// In-body `.param` declarations: name -> bits.
    param_decls: HashMap<String, u32>,
    /// `st.param` into a name: (bits, value).
    param_stores: HashMap<String, (u32, Val)>,
    stores: Vec<Store>,
}

impl Flow<'_> {
    fn symbol(&self, name: &str) -> Option<&Symbol> {
        self.local_symbols
            .get(name)
            .or_else(|| self.symbols.get(name))
    }

    fn value(&self, operand: &str, line: u32) -> Val {
        let (base, off) = split_offset(operand);
        if let Some(v) = parse_imm(operand) {
            return Val::Imm(v);
        }
        if base.starts_with('%') {
            return match self.regs.get(base) {
                Some(Val::Addr {
                    sym,
                    space,
                    generic,
                    offset,
                    line,
                }) => Val::Addr {
                    sym: sym.clone(),
                    space: space.clone(),
                    generic: *generic,
                    offset: offset.map(|o| o + off),
                    line: *line,
                },
                Some(v) => v.clone(),
                None => Val::Other,
            };
        }
        if let Some(s) = self.symbol(base) {
            return Val::Addr {
                sym: base.to_string(),
                space: s.space.clone(),
                generic: false,
                offset: Some(off),
                line,
            };
        }
        if Syscall::parse(base).is_some() {
            return Val::Func(base.to_string());
        }
        Val::Other
    }

    fn param_decl(&mut self, text: &str) {
        let mut bits = None;
        let mut words = text.split_whitespace().skip(1);
        let mut name = String::new();
        while let Some(w) = words.next() {
            if w == ".align" {
                words.next();
            } else if let Some(b) = PtxType::from_directive(w).and_then(PtxType::bits) {
                bits = Some(b);
            } else if !w.starts_with('.') {
                name = w.to_string();
                break;
            }
        }
        let (name, count) = match name.split_once('[') {
            Some((n, rest)) => (
                n.to_string(),
                rest.trim_end_matches(']')
                    .trim()
                    .parse::<u32>()
                    .unwrap_or(1),
            ),
            None => (name, 1),
        };
        if let (false, Some(b)) = (name.is_empty(), bits) {
            self.param_decls.insert(name, b.saturating_mul(count));
        }
    }

    fn instruction(&mut self, ins: &Instruction, line: u32) {
        let op = ins.opcode.as_str();
        let ops = &ins.operands;
        let set = |regs: &mut HashMap<String, Val>, dest: &str, v: Val| {
            let d = dest.trim();
            if d.starts_with('{') {
                for r in d.trim_matches(['{', '}']).split(',') {
                    regs.insert(r.trim().to_string(), Val::Other);
                }
            } else {
                regs.insert(d.to_string(), v);
            }
        };
        match op {
            "st" => {
                let (Some(addr), Some(value)) = (ops.first(), ops.get(1)) else {
                    return;
                };
                let inner = addr.trim().trim_start_matches('[').trim_end_matches(']');
                let bits = ins.modifiers.iter().rev().find_map(|m| type_bits(m));
                if ins.has("param") {
                    let (name, _) = split_offset(inner);
                    let v = self.value(value, line);
                    self.param_stores
                        .insert(name.to_string(), (bits.unwrap_or(0), v));
                    return;
                }
                let count = if ins.has("v4") {
                    4
                } else if ins.has("v2") {
                    2
                } else {
                    1
                };
                let (sym, offset) = match self.value(inner, line) {
                    Val::Addr { sym, offset, .. } => (Some(sym), offset),
                    _ => (None, None),
                };
                let ty = ins
                    .modifiers
                    .iter()
                    .rev()
                    .find(|m| type_bits(m).is_some())
                    .cloned()
                    .unwrap_or_default();
                self.stores.push(Store {
                    line,
                    sym,
                    offset,
                    bytes: bits.unwrap_or(0) / 8,
                    count,
                    ty,
                });
            }
            "call" | "bra" | "ret" | "exit" | "bar" | "barrier" | "membar" | "fence" | "red"
            | "prefetch" | "trap" | "brkpt" => {}
            "mov" => {
                if let (Some(d), Some(s)) = (ops.first(), ops.get(1)) {
                    let v = self.value(s, line);
                    set(&mut self.regs, d, v);
                }
            }
            "cvta" => {
                if let (Some(d), Some(s)) = (ops.first(), ops.get(1)) {
                    let to = ins.has("to");
                    let v = match self.value(s, line) {
                        Val::Addr {
                            sym,
                            space,
                            offset,
                            line,
                            ..
                        } => Val::Addr {
                            sym,
                            space,
                            generic: !to,
                            offset,
                            line,
                        },
                        _ => Val::Other,
                    };
                    set(&mut self.regs, d, v);
                }
            }
            "add" | "sub" => {
                if let (Some(d), Some(a), Some(b)) = (ops.first(), ops.get(1), ops.get(2)) {
                    let (va, vb) = (self.value(a, line), self.value(b, line));
                    let sign = if op == "sub" { -1 } else { 1 };
                    let v = match (va, vb) {
                        (
                            Val::Addr {
                                sym,
                                space,
                                generic,
                                offset,
                                line,
                            },
                            other,
                        ) => {
                            let offset = match (offset, other) {
                                (Some(o), Val::Imm(k)) => Some(o + sign * k),
                                _ => None,
                            };
                            Val::Addr {
                                sym,
                                space,
                                generic,
                                offset,
                                line,
                            }
                        }
                        (
                            Val::Imm(k),
                            Val::Addr {
                                sym,
                                space,
                                generic,
                                offset,
                                line,
                            },
                        ) if op == "add" => Val::Addr {
                            sym,
                            space,
                            generic,
                            offset: offset.map(|o| o + k),
                            line,
                        },
                        _ => Val::Other,
                    };
                    set(&mut self.regs, d, v);
                }
            }
            _ => {
                if let Some(d) = ops.first() {
                    set(&mut self.regs, d, Val::Other);
                }
            }
        }
    }

    /// The call's parts: return names, target, argument names. `None` when it is not a call
    /// this check can read.
    fn call_parts(ops: &[String]) -> Option<(Vec<String>, String, Vec<String>)> {
        let list = |s: &str| -> Vec<String> {
            s.trim()
                .trim_start_matches('(')
                .trim_end_matches(')')
                .split(',')
                .map(|x| x.trim().to_string())
                .filter(|x| !x.is_empty())
                .collect()
        };
        let mut it = ops.iter().peekable();
        let mut rets = Vec::new();
        if it.peek().is_some_and(|o| o.trim_start().starts_with('(')) && ops.len() >= 2 {
            rets = list(it.next()?);
        }
        let target = it.next()?.trim().to_string();
        if target.is_empty() || target.starts_with('(') {
            return None;
        }
        let args = match it.peek() {
            Some(o) if o.trim_start().starts_with('(') => list(it.next()?),
            _ => Vec::new(),
        };
        Some((rets, target, args))
    }
}

/// Every call of a ch. 3 function in `src`, with what was passed.
pub fn call_sites(src: &str) -> Vec<CallSite> {
    let sc = scan(src);
    let mut out = Vec::new();
    for body in &sc.bodies {
        let mut flow = Flow {
            symbols: &sc.symbols,
            local_symbols: HashMap::new(),
            regs: HashMap::new(),
            param_decls: HashMap::new(),
            param_stores: HashMap::new(),
            stores: Vec::new(),
        };
        let mut since_vprintf = 0usize;
        for st in &body.stmts {
            let text = strip_labels(&st.text);
            if text.is_empty() {
                continue;
            }
            if text.starts_with(".param") {
                flow.param_decl(text);
                continue;
            }
            if text.starts_with('.') {
                if let Some((space, name)) = variable(text) {
                    flow.local_symbols.insert(
                        name,
                        Symbol {
                            space,
                            line: st.line,
                        },
                    );
                }
                continue;
            }
            let Ok(ins) = parse_instruction(text, st.line as usize) else {
                continue;
            };
            if ins.opcode == "call" {
                if let Some((rets, target, args)) = Flow::call_parts(&ins.operands) {
                    let name = if target.starts_with('%') {
                        match flow.regs.get(&target) {
                            Some(Val::Func(f)) => f.clone(),
                            _ => String::new(),
                        }
                    } else {
                        target.clone()
                    };
                    if let Some(call) = Syscall::parse(&name) {
                        let param = |n: &String, flow: &Flow| {
                            let stored = flow.param_stores.get(n);
                            CallParam {
                                name: n.clone(),
                                bits: flow
                                    .param_decls
                                    .get(n)
                                    .copied()
                                    .or(stored.map(|s| s.0).filter(|&b| b > 0)),
                                value: stored.map(|s| s.1.clone()),
                            }
                        };
                        out.push(CallSite {
                            line: st.line,
                            caller: body.name.clone(),
                            caller_kind: body.kind,
                            call,
                            text: ins.to_string(),
                            args: args.iter().map(|a| param(a, &flow)).collect(),
                            rets: rets
                                .iter()
                                .map(|r| CallParam {
                                    value: None,
                                    ..param(r, &flow)
                                })
                                .collect(),
                            stores: flow.stores[since_vprintf.min(flow.stores.len())..].to_vec(),
                        });
                        if call == Syscall::Vprintf {
                            since_vprintf = flow.stores.len();
                        }
                    }
                }
                continue;
            }
            flow.instruction(&ins, st.line);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The checks.

#[allow(clippy::too_many_arguments)]
fn finding(
    file: &str,
    line: u32,
    function: &str,
    kind: FunctionKind,
    position: String,
    decl: String,
    rule: SyscallRule,
    call: Syscall,
    message: String,
) -> Violation {
    Violation {
        file: file.to_string(),
        line,
        function: function.to_string(),
        kind,
        position,
        decl,
        rule: Rule::Syscall(rule, call),
        message,
    }
}

fn check_decl(
    f: &FunctionDecl,
    call: Syscall,
    addr: AddressSize,
    file: &str,
    out: &mut Vec<Violation>,
) {
    let name = call.name();
    let whole = |rule, message: String, out: &mut Vec<Violation>| {
        out.push(finding(
            file,
            f.line,
            name,
            f.kind,
            "prototype".into(),
            call.prototype(addr),
            rule,
            call,
            message,
        ))
    };
    if f.kind == FunctionKind::Entry {
        whole(
            SyscallRule::Definition,
            format!("`{name}` is a system call, not a kernel"),
            out,
        );
        return;
    }
    if f.is_definition {
        whole(
            SyscallRule::Definition,
            format!("`{name}` is defined here; its implementation is provided by the driver"),
            out,
        );
    } else if !f.linkage.is_extern {
        whole(
            SyscallRule::Definition,
            format!("`{name}` is declared without `.extern`; the driver provides it"),
            out,
        );
    }
    for (what, got, want) in [
        ("parameter", &f.params, call.params()),
        ("return value", &f.returns, call.returns()),
    ] {
        if got.len() != want.len() {
            whole(
                SyscallRule::DeclCount,
                format!(
                    "{} {what}s declared; the chapter's prototype has {}",
                    got.len(),
                    want.len()
                ),
                out,
            );
        }
        for (i, (p, slot)) in got.iter().zip(want.iter()).enumerate() {
            check_slot(f, call, what, i, p, *slot, addr, file, out);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn check_slot(
    f: &FunctionDecl,
    call: Syscall,
    what: &str,
    i: usize,
    p: &ParamDecl,
    slot: Slot,
    addr: AddressSize,
    file: &str,
    out: &mut Vec<Violation>,
) {
    let want = slot.ty(addr);
    let bits = p.array_len().map_or(p.ty.bits(), |n| {
        p.ty.bits().map(|b| b.saturating_mul(n as u32))
    });
    let position = format!("{what} {i} `{}`", slot.name());
    let push = |rule, message: String, out: &mut Vec<Violation>| {
        out.push(finding(
            file,
            p.line,
            &f.name,
            f.kind,
            position.clone(),
            p.render(),
            rule,
            call,
            message,
        ))
    };
    if bits != Some(want.bits().unwrap_or(0)) || p.array.is_some() {
        push(
            SyscallRule::DeclWidth,
            format!(
                "`{}` is {} under `.address_size {addr}`; the chapter's is {want}",
                slot.name(),
                match bits {
                    Some(b) => format!("{b} bits"),
                    None => format!("{}", p.ty),
                }
            ),
            out,
        );
    } else if p.ty != want {
        push(
            SyscallRule::DeclType,
            format!(
                "`{}` is declared {}; the chapter writes {want}",
                slot.name(),
                p.ty
            ),
            out,
        );
    }
}

fn check_call(c: &CallSite, addr: AddressSize, file: &str, out: &mut Vec<Violation>) {
    let name = c.call.name();
    let push = |line, position: String, rule, message: String, out: &mut Vec<Violation>| {
        out.push(finding(
            file,
            line,
            &c.caller,
            c.caller_kind,
            position,
            c.text.clone(),
            rule,
            c.call,
            message,
        ))
    };
    for (what, got, want) in [
        ("argument", &c.args, c.call.params()),
        ("return value", &c.rets, c.call.returns()),
    ] {
        if got.len() != want.len() {
            push(
                c.line,
                format!("call of `{name}`"),
                SyscallRule::CallCount,
                format!(
                    "{} {what}s passed; `{name}` takes {}",
                    got.len(),
                    want.len()
                ),
                out,
            );
        }
        for (i, (p, slot)) in got.iter().zip(want.iter()).enumerate() {
            let position = format!("call of `{name}`, {what} {i} `{}`", slot.name());
            let want_bits = slot.bits(addr);
            if let Some(b) = p.bits.filter(|&b| b != want_bits) {
                push(
                    c.line,
                    position.clone(),
                    SyscallRule::CallWidth,
                    format!(
                        "`{}` passed as {b} bits under `.address_size {addr}`; the chapter's is {want_bits}",
                        p.name
                    ),
                    out,
                );
            }
            if !slot.is_pointer() {
                continue;
            }
            if let Some(Val::Addr {
                sym,
                space,
                generic: false,
                line,
                ..
            }) = &p.value
            {
                push(
                    c.line,
                    position,
                    SyscallRule::NonGeneric,
                    format!(
                        "`{}` holds the .{space} address of `{sym}` taken at line {line} without `cvta`; \
                         any pointers must be converted to generic space",
                        slot.name()
                    ),
                    out,
                );
            }
        }
    }
}

/// The chapter-3 findings of `module` (parsed from `src`), in source order.
///
/// Each distinct prototype of a system call is judged once: a module that repeats one
/// declaration (as linked or concatenated PTX does) gets one finding, not one per copy.
/// A module that never names a system call is not scanned for call sites.
pub fn lint(module: &PtxModule, src: &str, file: &str) -> Vec<Violation> {
    let addr = module.effective_address_size();
    let mut out = Vec::new();
    let mut seen: Vec<&FunctionDecl> = Vec::new();
    for f in &module.functions {
        if let Some(call) = Syscall::parse(&f.name) {
            let same = |g: &&FunctionDecl| {
                g.name == f.name
                    && g.kind == f.kind
                    && g.is_definition == f.is_definition
                    && g.linkage == f.linkage
                    && g.returns.len() == f.returns.len()
                    && g.params.len() == f.params.len()
                    && g.returns
                        .iter()
                        .zip(&f.returns)
                        .all(|(a, b)| a.render() == b.render())
                    && g.params
                        .iter()
                        .zip(&f.params)
                        .all(|(a, b)| a.render() == b.render())
            };
            // At most a handful of distinct prototypes per name: the scan stays linear.
            if seen.iter().any(same) {
                continue;
            }
            seen.push(f);
            check_decl(f, call, addr, file, &mut out);
        }
    }
    if !Syscall::ALL.iter().any(|c| src.contains(c.name())) {
        out.sort_by_key(|v| v.line);
        return out;
    }
    for c in call_sites(src) {
        check_call(&c, addr, file, &mut out);
    }
    out.sort_by_key(|v| v.line);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Immediates follow the PTX ISA's constants (§4.5): a leading 0 is octal, `0b` binary,
    /// `0x` hex; a float constant is not an integer.
    #[test]
    fn immediates_follow_the_isa_literal_grammar() {
        assert_eq!(parse_imm("010"), Some(8));
        assert_eq!(parse_imm("0b101"), Some(5));
        assert_eq!(parse_imm("-0x10"), Some(-16));
        assert_eq!(parse_imm("7U"), Some(7));
        assert_eq!(parse_imm("0f3F800000"), None);
        assert_eq!(parse_imm("09"), None);
        assert_eq!(split_offset("buf+010"), ("buf", 8));
    }
    use crate::abi::lint::lint_source;

    /// (rule id, line) of every chapter-3 finding in a module.
    fn found(src: &str) -> Vec<(&'static str, u32)> {
        lint_source(src, "t.ptx")
            .unwrap()
            .iter()
            .filter(|v| matches!(v.rule, Rule::Syscall(..)))
            .map(|v| (v.rule.id(), v.line))
            .collect()
    }

    /// A 64-bit module: line 4 holds `decls`, line 5 a `.global` string, the kernel body starts
    /// at line 7 with the string's address taken (line 8) and converted (line 9); `body` starts
    /// on line 10.
    fn m64(decls: &str, body: &str) -> String {
        format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n{decls}\n\
             .global .align 1 .b8 fmt[3] = {{103, 112, 0}};\n.visible .entry k()\n{{ .reg .b64 %rd<3>; .reg .b32 %r<2>;\n\
             mov.u64 %rd1, fmt;\ncvta.global.u64 %rd2, %rd1;\n{body}\nret;\n}}\n"
        )
    }

    const VPRINTF_CALL: &str = "{\n.param .b64 p0;\nst.param.b64 [p0+0], %rd2;\n.param .b64 p1;\nst.param.b64 [p1+0], %rd2;\n.param .s32 r0;\ncall.uni (r0), vprintf, (p0, p1);\n}";

    // The chapter's four prototypes, with a conforming call of each, give no finding for both
    // address sizes.
    #[test]
    fn guide_prototypes_and_calls_conform() {
        for addr in [AddressSize::A32, AddressSize::A64] {
            let (w, r, cv) = if addr == AddressSize::A64 {
                ("b64", "%rd2", "u64")
            } else {
                ("b32", "%r2", "u32")
            };
            let decls: Vec<String> = Syscall::ALL.iter().map(|s| s.prototype(addr)).collect();
            let src = format!(
                ".version 8.0\n.target sm_50\n.address_size {addr}\n{}\n\
                 .global .align 1 .b8 fmt[3] = {{103, 112, 0}};\n.visible .entry k()\n{{ .reg .{cv} {r}, {r}0;\n\
                 mov.{cv} {r}0, fmt;\ncvta.global.{cv} {r}, {r}0;\n\
                 {{ .param .{w} a; st.param.{w} [a], {r}; .param .{w} b; st.param.{w} [b], {r}; .param .s32 s; call.uni (s), vprintf, (a, b); }}\n\
                 {{ .param .{w} a; st.param.{w} [a], 16; .param .{w} p; call.uni (p), malloc, (a); }}\n\
                 {{ .param .{w} a; st.param.{w} [a], {r}; call.uni free, (a); }}\n\
                 {{ .param .{w} a; st.param.{w} [a], {r}; .param .{w} b; st.param.{w} [b], {r}; .param .b32 c; st.param.b32 [c], 7; \
                 .param .{w} d; st.param.{w} [d], {r}; .param .{w} e; st.param.{w} [e], 1; call.uni __assertfail, (a, b, c, d, e); }}\n\
                 ret;\n}}\n",
                decls.join("\n")
            );
            assert_eq!(found(&src), vec![], "{addr}\n{src}");
        }
    }

    // The chapter's own 32-bit example: format from `cvta.global.b32`, valist from
    // `cvta.local.b32` of a local array.
    #[test]
    fn chapter_example_32_bit() {
        let src = ".version 8.0\n.target sm_50\n.address_size 32\n\
            .extern .func (.param .s32 status) vprintf (.param .b32 format, .param .b32 valist);\n\
            .global .align 1 .b8 _fmt[3];\n.entry k()\n{ .reg .b32 %r<4>;\n.local .align 4 .b8 _valist_array[8];\n\
            .param .b32 param0;\n.param .b32 param1;\n.param .s32 st;\n\
            cvta.global.b32 %r2, _fmt;\nst.param.b32 [param0], %r2;\ncvta.local.b32 %r3, _valist_array;\n\
            st.param.b32 [param1], %r3;\ncall.uni (st), vprintf, (param0, param1);\nret;\n}\n";
        assert_eq!(found(src), vec![]);
        // The same without the conversion of the local array (taken at line 14): the call on
        // line 16 is the finding.
        let bad = src.replace(
            "cvta.local.b32 %r3, _valist_array",
            "mov.b32 %r3, _valist_array",
        );
        assert_eq!(found(&bad), vec![("syscall-non-generic", 16)]);
        // The chapter writes `cvta.global.b32`, which the ISA's cvta syntax (.u32, .u64) does
        // not give (ptxas 12.9: "Unexpected instruction types specified for 'cvta'"): that
        // is an unknown-modifier finding beside the system-call one.
        let v = lint_source(&bad, "t.ptx").unwrap();
        let call = v
            .iter()
            .find(|v| v.rule.id() == "syscall-non-generic")
            .unwrap();
        assert!(call
            .message
            .contains(".local address of `_valist_array` taken at line 14"));
    }

    // Declarations: counts, widths and the chapter's types, for a 64-bit module.
    #[test]
    fn declarations_follow_the_chapter() {
        let cases: &[(&str, &[&str])] = &[
            // NVRTC 12.9's status type.
            (".extern .func (.param .b32 s) vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-type"]),
            (".extern .func (.param .u32 s) vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-type"]),
            (".extern .func (.param .s32 s) vprintf (.param .b32 f, .param .b64 v);", &["syscall-decl-width"]),
            (".extern .func (.param .s32 s) vprintf (.param .b64 f, .param .b32 v);", &["syscall-decl-width"]),
            (".extern .func (.param .s32 s) vprintf (.param .f64 f, .param .b64 v);", &["syscall-decl-type"]),
            (".extern .func (.param .b64 s) vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-width"]),
            (".extern .func vprintf (.param .b64 f, .param .b64 v);", &["syscall-decl-count"]),
            (".extern .func (.param .s32 s) vprintf (.param .b64 f);", &["syscall-decl-count"]),
            (".extern .func (.param .s32 s) vprintf (.param .b64 f, .param .b64 v, .param .b64 x);", &["syscall-decl-count"]),
            (".extern .func (.param .b64 p) malloc (.param .b32 n);", &["syscall-decl-width"]),
            (".extern .func (.param .b32 p) malloc (.param .b64 n);", &["syscall-decl-width"]),
            (".extern .func malloc (.param .b64 n);", &["syscall-decl-count"]),
            (".extern .func free (.param .b32 p);", &["syscall-decl-width"]),
            (".extern .func free (.param .align 8 .b8 p[8]);", &["syscall-decl-width"]),
            (".extern .func (.param .b32 r) free (.param .b64 p);", &["syscall-decl-count"]),
            // A missing charSize.
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn);", &["syscall-decl-count"]),
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .b32 l, .param .b64 fn, .param .b32 c);", &["syscall-decl-width"]),
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .b64 l, .param .b64 fn, .param .b64 c);", &["syscall-decl-width"]),
            (".extern .func __assertfail (.param .b32 m, .param .b64 f, .param .b32 l, .param .b64 fn, .param .b64 c);", &["syscall-decl-width"]),
            (".extern .func __assertfail (.param .b64 m, .param .b64 f, .param .u32 l, .param .b64 fn, .param .b64 c);", &["syscall-decl-type"]),
            (".func free (.param .b64 p);", &["syscall-definition"]),
            (".visible .func free (.param .b64 p) { ret; }", &["syscall-definition"]),
            // Not a system call: nothing to say.
            (".extern .func (.param .b32 s) myprintf (.param .b32 f);", &[]),
        ];
        for (decl, want) in cases {
            let src = format!(".version 8.0\n.target sm_90\n.address_size 64\n{decl}\n");
            let got: Vec<&str> = found(&src).iter().map(|x| x.0).collect();
            assert_eq!(&got, want, "{decl}");
        }
        // Under `.address_size 32` the 64-bit forms are the wrong width.
        let src = format!(
            ".version 8.0\n.target sm_50\n.address_size 32\n{}\n",
            Syscall::Free.prototype(AddressSize::A64)
        );
        assert_eq!(found(&src), vec![("syscall-decl-width", 4)]);
    }

    #[test]
    fn call_sites_count_and_width() {
        let decl = Syscall::Vprintf.prototype(AddressSize::A64);
        assert_eq!(found(&m64(&decl, VPRINTF_CALL)), vec![]);
        // A 32-bit format argument (the call is on line 16).
        let narrow = VPRINTF_CALL.replace(
            ".param .b64 p0;\nst.param.b64 [p0+0], %rd2",
            ".param .b32 p0;\nst.param.b32 [p0+0], %r2",
        );
        assert_eq!(
            found(&m64(&decl, &narrow)),
            vec![("syscall-call-width", 16)]
        );
        // No arguments, no return value, too many arguments.
        assert_eq!(
            found(&m64(&decl, "call.uni vprintf;")),
            vec![("syscall-call-count", 10), ("syscall-call-count", 10)]
        );
        let three = VPRINTF_CALL.replace("(p0, p1)", "(p0, p1, p1)");
        assert_eq!(found(&m64(&decl, &three)), vec![("syscall-call-count", 16)]);
        // A width known only from the st.param (no in-body declaration).
        assert_eq!(
            found(&m64(
                &Syscall::Free.prototype(AddressSize::A64),
                "st.param.b32 [q], %r1;\ncall.uni free, (q);"
            )),
            vec![("syscall-call-width", 11)]
        );
    }

    #[test]
    fn pointers_must_be_generic() {
        let decl = Syscall::Vprintf.prototype(AddressSize::A64);
        // The format from `mov` of the .global symbol without `cvta` (address on line 8).
        let raw = VPRINTF_CALL.replace("[p0+0], %rd2", "[p0+0], %rd1");
        let v = lint_source(&m64(&decl, &raw), "t.ptx").unwrap();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].line, 16);
        let text = v[0].to_string();
        assert!(text.contains("taken at line 8"), "{text}");
        assert!(text.contains("argument 0 `format`"), "{text}");
        assert!(
            text.ends_with("[syscall-non-generic, ptx-interop 13.2 ch. 3, vprintf]"),
            "{text}"
        );
        // Through `add` and `mov` copies, and from a `.local` depot (the valist).
        let local = ".local .align 8 .b8 depot[16];\nmov.u64 %SPL, depot;\nadd.u64 %rd5, %SPL, 8;\nmov.b64 %rd6, %rd5;\n".to_string()
            + &VPRINTF_CALL.replace("[p1+0], %rd2", "[p1+0], %rd6");
        assert_eq!(
            found(&m64(&decl, &local)),
            vec![("syscall-non-generic", 20)]
        );
        // `cvta.local` first: generic, fine; `cvta.to.global` makes it non-generic again.
        let ok = local.replace(
            "add.u64 %rd5, %SPL, 8",
            "cvta.local.u64 %SP, %SPL;\nadd.u64 %rd5, %SP, 8",
        );
        assert_eq!(found(&m64(&decl, &ok)), vec![]);
        let back = VPRINTF_CALL.replace(
            "st.param.b64 [p0+0], %rd2",
            "cvta.to.global.u64 %rd3, %rd2;\nst.param.b64 [p0+0], %rd3",
        );
        assert_eq!(found(&m64(&decl, &back)), vec![("syscall-non-generic", 17)]);
        // .const strings and __assertfail's file and function.
        let src = format!(
            ".version 8.0\n.target sm_90\n.address_size 64\n{}\n.const .align 1 .b8 msg[2];\n.entry k()\n{{ .reg .b64 %rd<3>;\n\
             mov.u64 %rd1, msg;\ncvta.const.u64 %rd2, %rd1;\n\
             .param .b64 a;\nst.param.b64 [a], %rd2;\n.param .b64 b;\nst.param.b64 [b], %rd1;\n.param .b32 c;\nst.param.b32 [c], 3;\n\
             .param .b64 d;\nst.param.b64 [d], %rd1;\n.param .b64 e;\nst.param.b64 [e], 1;\ncall.uni __assertfail, (a, b, c, d, e);\nret;\n}}\n",
            Syscall::Assertfail.prototype(AddressSize::A64)
        );
        let v = lint_source(&src, "t.ptx").unwrap();
        let pos: Vec<&str> = v.iter().map(|x| x.position.as_str()).collect();
        assert_eq!(
            pos,
            vec![
                "call of `__assertfail`, argument 1 `file`",
                "call of `__assertfail`, argument 3 `function`"
            ]
        );
        assert!(v.iter().all(|x| x.line == 20
            && x.message
                .contains(".const address of `msg` taken at line 8")));
        // malloc's size is not a pointer: an address there says nothing about generic space.
        let m = m64(
            &Syscall::Malloc.prototype(AddressSize::A64),
            ".param .b64 a;\nst.param.b64 [a], %rd1;\n.param .b64 r;\ncall.uni (r), malloc, (a);",
        );
        assert_eq!(found(&m), vec![]);
    }

    // A call through a register is checked when the register holds a system call's address,
    // and is left alone otherwise; neither panics.
    #[test]
    fn calls_through_registers() {
        let decl = Syscall::Free.prototype(AddressSize::A64);
        let known = "mov.u64 %rd9, free;\n.param .b32 a;\nst.param.b32 [a], %r1;\ncall.uni %rd9, (a), proto;";
        assert_eq!(found(&m64(&decl, known)), vec![("syscall-call-width", 13)]);
        let unknown = "ld.param.u64 %rd9, [x];\n.param .b32 a;\ncall.uni %rd9, (a), proto;";
        assert_eq!(found(&m64(&decl, unknown)), vec![]);
    }

    /// No prefix of a module with every kind of call makes the check panic.
    #[test]
    fn truncated_and_odd_input_never_panics() {
        let decls: Vec<String> = Syscall::ALL
            .iter()
            .map(|s| s.prototype(AddressSize::A64))
            .collect();
        let src = m64(
            &decls.join("\n"),
            &format!("{VPRINTF_CALL}\ncall.uni;\ncall (r), ;\ncall.uni (), free, ();\ncall free, (a, b, c, d, e, f);\n@%p1 bra $L;\n$L: call.uni %rd1;\nst.param.b64 [], ;\nmov.u64 %rd1, fmt+;\nadd.u64 %r1, %r1;\nst.local.v4.b32 [%rd1+-8], {{%r1, %r2}};"),
        );
        for cut in 0..=src.len() {
            let _ = call_sites(&src[..cut]);
            if let Ok(m) = PtxModule::parse(&src[..cut]) {
                let _ = lint(&m, &src[..cut], "t.ptx");
            }
        }
        let calls = call_sites(&src);
        assert!(calls
            .iter()
            .any(|c| c.call == Syscall::Free && c.args.len() == 6));
    }

    // The scanner sees through initializers, `.section` blocks and comments.
    #[test]
    fn scan_reads_symbols_and_bodies() {
        let src = ".global .align 1 .b8 $str[3] = {1, 2, 3}; // { not a body\n\
            .section .debug_info { .b8 1 }\n.extern .shared .align 16 .b8 smem[];\n\
            .visible .func (.param .b32 r) f(.param .b64 a)\n{\n/* } */ ret;\n}\n.entry k() { exit; }\n";
        let sc = scan(src);
        assert_eq!(
            sc.symbols.get("$str").map(|s| s.space.as_str()),
            Some("global")
        );
        assert_eq!(
            sc.symbols.get("smem").map(|s| (s.space.as_str(), s.line)),
            Some(("shared", 3))
        );
        let names: Vec<(&str, FunctionKind, usize)> = sc
            .bodies
            .iter()
            .map(|b| (b.name.as_str(), b.kind, b.stmts.len()))
            .collect();
        assert_eq!(
            names,
            vec![("f", FunctionKind::Func, 1), ("k", FunctionKind::Entry, 1)]
        );
        assert_eq!(sc.bodies[0].stmts[0].line, 6);
    }

    // Stores into the vprintf buffer are collected per call with offsets from the depot.
    #[test]
    fn stores_before_a_vprintf_call() {
        let body = ".local .align 8 .b8 __local_depot0[16];\nmov.u64 %SPL, __local_depot0;\ncvta.local.u64 %SP, %SPL;\n\
            add.u64 %rd4, %SP, 0;\nadd.u64 %rd5, %SPL, 0;\nst.local.u32 [%rd5], %r1;\nst.local.v2.u32 [%rd5+8], {%r1, %r2};\n"
            .to_string()
            + &VPRINTF_CALL.replace("[p1+0], %rd2", "[p1+0], %rd4");
        let src = m64(&Syscall::Vprintf.prototype(AddressSize::A64), &body);
        let c = call_sites(&src);
        assert_eq!(c.len(), 1);
        let slots: Vec<(Option<i64>, u32, u32)> = c[0]
            .stores
            .iter()
            .map(|s| (s.offset, s.bytes, s.count))
            .collect();
        assert_eq!(slots, vec![(Some(0), 4, 1), (Some(8), 4, 2)]);
        assert!(
            matches!(&c[0].args[1].value, Some(Val::Addr { sym, generic: true, offset: Some(0), .. }) if sym == "__local_depot0")
        );
    }
}
