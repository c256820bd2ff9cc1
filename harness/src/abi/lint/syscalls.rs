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

use crate::vocab::Vocabulary;
use std::collections::HashMap;
use strum::VariantArray;

use serde::Deserialize;

use super::{Rule, Violation};
use crate::ptx::instr::{parse_instruction, strip_comments, Instruction};
use crate::ptx::module::{AddressSize, FunctionDecl, FunctionKind, ParamDecl, PtxModule, PtxType};

/// The four system calls of ch. 3.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Deserialize,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
#[serde(rename_all = "snake_case")]
pub enum Syscall {
    #[strum(serialize = "vprintf")]
    Vprintf,
    #[strum(serialize = "malloc")]
    Malloc,
    #[strum(serialize = "free")]
    Free,
    #[serde(rename = "__assertfail")]
    #[strum(serialize = "__assertfail")]
    Assertfail,
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

    pub(crate) fn is_pointer(self) -> bool {
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
    pub(crate) fn prototype(self, addr: AddressSize) -> String {
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
pub(crate) struct Stmt {
    pub line: u32,
    pub text: String,
}

/// A function definition's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Body {
    pub name: String,
    pub kind: FunctionKind,
    pub stmts: Vec<Stmt>,
}

/// A variable's state space and the line that declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    pub space: String,
    pub line: u32,
}

/// Module-scope variables and the bodies of every defined function.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scan {
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
pub(crate) fn scan(src: &str) -> Scan {
    let text = strip_comments(src);
    let mut s = Scanner {
        line: 1,
        ..Scanner::default()
    };
    for c in text.chars() {
        s.push(c);
    }
    s.finish();
    if let Some(b) = s.body.take() {
        s.out.bodies.push(b);
    }
    s.out
}

/// [`scan`]'s state between characters.
#[derive(Default)]
struct Scanner {
    out: Scan,
    line: u32,
    /// The statement read so far, and the line it starts on.
    cur: String,
    cur_line: u32,
    /// Braces of bodies and nested scopes.
    depth: usize,
    /// Braces of an initializer `= { … }`.
    init: usize,
    paren: usize,
    in_string: bool,
    body: Option<Body>,
    /// Inside a `.section … { … }` at module scope.
    skip_block: bool,
}

impl Scanner {
    /// Ends the current statement: a body's statement, or a module-scope variable.
    fn finish(&mut self) {
        let t = self.cur.trim();
        if !t.is_empty() {
            let stmt = Stmt {
                line: self.cur_line,
                text: t.to_string(),
            };
            match self.body.as_mut() {
                Some(b) => b.stmts.push(stmt),
                None => {
                    if let Some((space, name)) = variable(t) {
                        self.out.symbols.insert(
                            name,
                            Symbol {
                                space,
                                line: self.cur_line,
                            },
                        );
                    }
                }
            }
        }
        self.cur.clear();
    }

    fn push(&mut self, c: char) {
        if self.in_string {
            self.cur.push(c);
            if c == '"' {
                self.in_string = false;
            }
            if c == '\n' {
                self.line += 1;
            }
            return;
        }
        match c {
            '\n' => {
                self.line += 1;
                self.cur.push(c);
                return;
            }
            '"' => self.in_string = true,
            '(' => self.paren += 1,
            ')' => self.paren = self.paren.saturating_sub(1),
            _ => {}
        }
        if self.skip_block {
            match c {
                '{' => self.depth += 1,
                '}' => {
                    self.depth = self.depth.saturating_sub(1);
                    if self.depth == 0 {
                        self.skip_block = false;
                        self.cur.clear();
                    }
                }
                _ => {}
            }
            return;
        }
        let consumed = match c {
            ';' if self.paren == 0 && self.init == 0 => {
                self.finish();
                true
            }
            '{' if self.paren == 0 => self.open_brace(),
            '}' if self.paren == 0 => self.close_brace(),
            _ => false,
        };
        if consumed {
            return;
        }
        if self.cur.trim().is_empty() && !c.is_whitespace() {
            self.cur_line = self.line;
        }
        self.cur.push(c);
    }

    /// A `{`: an initializer's or a vector operand's (kept in the statement), a function
    /// body's or skipped block's at module scope, or a nested scope's. True when consumed.
    fn open_brace(&mut self) -> bool {
        let operand = self.depth > 0 && {
            // `{%r1, %r2}` of a vector instruction, not a nested scope.
            let t = self.cur.trim();
            !t.is_empty() && !t.ends_with(':')
        };
        if self.init > 0 || self.cur.contains('=') || operand {
            self.init += 1;
            false
        } else if self.depth == 0 {
            match header(&self.cur) {
                Some((kind, name)) => {
                    self.body = Some(Body {
                        name,
                        kind,
                        stmts: Vec::new(),
                    });
                }
                None => self.skip_block = true,
            }
            self.cur.clear();
            self.depth = 1;
            true
        } else {
            self.finish();
            self.depth += 1;
            true
        }
    }

    /// A `}`: an initializer's (kept in the statement) or a scope's, which may end a body.
    /// True when consumed.
    fn close_brace(&mut self) -> bool {
        if self.init > 0 {
            self.init -= 1;
            return false;
        }
        self.finish();
        self.depth = self.depth.saturating_sub(1);
        if self.depth == 0 {
            if let Some(b) = self.body.take() {
                self.out.bodies.push(b);
            }
        }
        true
    }
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

/// Writes `v` to the destination register, or clears each register of a vector
/// destination `{%r1, %r2}`.
fn set_reg(regs: &mut HashMap<String, Val>, dest: &str, v: Val) {
    let d = dest.trim();
    if d.starts_with('{') {
        for r in d.trim_matches(['{', '}']).split(',') {
            regs.insert(r.trim().to_string(), Val::Other);
        }
    } else {
        regs.insert(d.to_string(), v);
    }
}

/// `add`/`sub` (`sub`: subtract) on values: an address moved by a known immediate keeps its
/// symbol (with the offset unknown when the other operand is not an immediate).
fn address_arithmetic(sub: bool, va: Val, vb: Val) -> Val {
    let sign = if sub { -1 } else { 1 };
    match (va, vb) {
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
        ) if !sub => Val::Addr {
            sym,
            space,
            generic,
            offset: offset.map(|o| o + k),
            line,
        },
        _ => Val::Other,
    }
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
        match op {
            "st" => self.store(ins, line),
            "call" | "bra" | "ret" | "exit" | "bar" | "barrier" | "membar" | "fence" | "red"
            | "prefetch" | "trap" | "brkpt" => {}
            "mov" => {
                if let (Some(d), Some(s)) = (ops.first(), ops.get(1)) {
                    let v = self.value(s, line);
                    set_reg(&mut self.regs, d, v);
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
                    set_reg(&mut self.regs, d, v);
                }
            }
            "add" | "sub" => {
                if let (Some(d), Some(a), Some(b)) = (ops.first(), ops.get(1), ops.get(2)) {
                    let (va, vb) = (self.value(a, line), self.value(b, line));
                    let v = address_arithmetic(op == "sub", va, vb);
                    set_reg(&mut self.regs, d, v);
                }
            }
            _ => {
                if let Some(d) = ops.first() {
                    set_reg(&mut self.regs, d, Val::Other);
                }
            }
        }
    }

    /// `st`: into a `.param` name (an argument being passed), or a store through an address.
    fn store(&mut self, ins: &Instruction, line: u32) {
        let ops = &ins.operands;
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
pub(crate) fn call_sites(src: &str) -> Vec<CallSite> {
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
    if !Syscall::VARIANTS.iter().any(|c| src.contains(c.name())) {
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
mod tests;
