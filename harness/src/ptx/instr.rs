//! PTX instruction statements: guard, opcode, ordered modifiers and operands, and a structured
//! view of the memory-model instructions (`ld`, `st`, `atom`, `red`, `fence`, `membar`,
//! barriers) so that checks compare parsed parts, never text. Producers order modifiers
//! differently (`atom.add.acquire.gpu.s32` from libcu++ against the PTX ISA's
//! `atom{.sem}{.scope}{.space}.op.type`), and the PTX ISA gives defaults for omitted
//! qualifiers; [`MemOp::effective`] applies them.

use std::fmt;

use super::lexer::{Token, TokenKind};

/// A parse failure, with the 1-based line of the PTX text it comes from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct InstrError {
    pub line: usize,
    pub message: String,
}

/// A guard predicate: `@%p1` or `@!%p1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    pub negated: bool,
    pub predicate: String,
}

/// One instruction statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// 1-based line in the PTX text where the statement starts (0 when parsed standalone).
    pub line: usize,
    pub guard: Option<Guard>,
    /// `atom`, `ld`, `fence`, ...
    pub opcode: String,
    /// Modifiers in source order, without the leading dot: `["add", "acquire", "gpu", "s32"]`.
    pub modifiers: Vec<String>,
    /// Operands split at top-level commas, trimmed: `["%r1", "[%rd1]", "%r2"]`.
    pub operands: Vec<String>,
}

impl Instruction {
    pub fn has(&self, modifier: &str) -> bool {
        self.modifiers.iter().any(|m| m == modifier)
    }

    /// The structured view when this is a memory-model instruction.
    pub fn mem_op(&self) -> Option<MemOp> {
        MemOp::from_instruction(self)
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(g) = &self.guard {
            write!(f, "@{}{} ", if g.negated { "!" } else { "" }, g.predicate)?;
        }
        f.write_str(&self.opcode)?;
        for m in &self.modifiers {
            write!(f, ".{m}")?;
        }
        if !self.operands.is_empty() {
            write!(f, " {}", self.operands.join(", "))?;
        }
        f.write_str(";")
    }
}

/// Parse one statement (without its `;`), e.g. `@!%p1 atom.add.acquire.gpu.s32 %r1,[%rd1],%r2`.
/// The statement is read by the one statement grammar, [`read_statement`], that the module
/// reader also holds every function body to.
pub fn parse_instruction(stmt: &str, line: usize) -> Result<Instruction, InstrError> {
    let text = stmt.trim().trim_end_matches(';').trim();
    if text.is_empty() {
        return Err(InstrError {
            line,
            message: "empty statement".into(),
        });
    }
    let toks = super::lexer::tokenize(text);
    let mut names = Vec::new();
    let shape = read_statement(&toks, &mut names).map_err(|e| InstrError {
        line,
        message: format!("{} in `{stmt}`", e.message),
    })?;
    // Tokens borrow from `text`: their byte offsets give the exact source of each part.
    let offset = |t: &Token<'_>| t.text.as_ptr() as usize - text.as_ptr() as usize;
    let span = |(a, b): (usize, usize)| {
        let (s, e) = (offset(&toks[a]), offset(&toks[b]) + toks[b].text.len());
        text[s..e].to_string()
    };
    let guard = shape.guard.map(|(negated, i)| Guard {
        negated,
        predicate: toks[i].text.to_string(),
    });
    Ok(Instruction {
        line,
        guard,
        opcode: toks[shape.opcode].text.to_string(),
        modifiers: shape
            .modifiers
            .iter()
            .map(|&(a, b)| span((a, b)).trim_start_matches('.').to_string())
            .collect(),
        operands: shape.operands.iter().map(|&r| span(r)).collect(),
    })
}

// ---------------------------------------------------------------------------------------------
// The statement grammar (PTX ISA §9.2 "PTX instructions"): an optional guard `@p` or `@!p`, an
// opcode with dot-modifiers, and comma-separated operands; the `;` is the caller's.

/// Where a statement breaks the grammar: the index of the offending token (`tokens.len()` for
/// the end of the statement) and what was expected there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShapeError {
    pub at: usize,
    pub message: String,
}

/// The parts of one statement, as token indices (inclusive ranges) into the tokens read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shape {
    /// `(negated, predicate token)`.
    pub guard: Option<(bool, usize)>,
    pub opcode: usize,
    /// One range per modifier: `.shared::cta`, `.L2::128B` (`.L2`, `:`, `:`, `128B`), `.2d`.
    pub modifiers: Vec<(usize, usize)>,
    pub operands: Vec<(usize, usize)>,
}

/// Bracket nesting one statement may use (deeper is refused, never a stack overflow).
const MAX_NESTING: usize = 64;

/// Read one statement (without `;`) from its tokens. Every identifier in an operand (registers,
/// labels, variables, functions) and the guard predicate are appended to `names` as token
/// indices, so a caller can check that each is declared.
pub fn read_statement(t: &[Token<'_>], names: &mut Vec<usize>) -> Result<Shape, ShapeError> {
    let mut c = Cursor { t, i: 0, names };
    let mut shape = Shape::default();
    if c.punct('@') {
        c.i += 1;
        let negated = c.punct('!');
        if negated {
            c.i += 1;
        }
        match c.peek() {
            Some(p) if p.kind == TokenKind::Ident => {
                shape.guard = Some((negated, c.i));
                c.names.push(c.i);
                c.i += 1;
            }
            _ => return Err(c.err("a predicate after `@` (`@%p1`, `@!%p1`)")),
        }
    }
    match c.peek() {
        Some(o) if o.kind == TokenKind::Ident && !o.text.starts_with(['%', '$']) => {
            shape.opcode = c.i;
            c.i += 1;
        }
        _ if shape.guard.is_some() => return Err(c.err("an instruction after the guard")),
        _ => return Err(c.err("an instruction opcode")),
    }
    // Modifiers: `.name`, `.name::sub` (`::` may be followed by a number: `.L2::128B`,
    // `.cta_group::1`), and `.2d`-style names that start with a digit.
    loop {
        let start = c.i;
        match c.peek() {
            Some(d) if d.kind == TokenKind::Directive => c.i += 1,
            Some(d) if d.is_punct('.') => {
                if c.t
                    .get(c.i + 1)
                    .is_some_and(|n| n.kind == TokenKind::Number)
                {
                    c.i += 2;
                } else {
                    return Err(c.err("a modifier name after `.`"));
                }
            }
            _ => break,
        }
        while c.punct(':')
            && c.t.get(c.i + 1).is_some_and(|n| n.is_punct(':'))
            && c.t
                .get(c.i + 2)
                .is_some_and(|n| matches!(n.kind, TokenKind::Ident | TokenKind::Number))
        {
            c.i += 3;
        }
        shape.modifiers.push((start, c.i - 1));
    }
    if c.i < t.len() {
        shape.operands = c.list(None, 0)?;
    }
    if let Some(x) = c.peek() {
        let what = if c.t.get(c.i.wrapping_sub(1)).is_some_and(ends_operand) && starts_operand(x) {
            "`,` between operands or `;` at the end of the statement"
        } else {
            "`,` or `;` after an operand"
        };
        return Err(c.err(what));
    }
    Ok(shape)
}

fn ends_operand(t: &Token<'_>) -> bool {
    matches!(
        t.kind,
        TokenKind::Ident | TokenKind::Number | TokenKind::Directive
    ) || t.is_punct(']')
        || t.is_punct('}')
        || t.is_punct(')')
}

fn starts_operand(t: &Token<'_>) -> bool {
    matches!(t.kind, TokenKind::Ident | TokenKind::Number)
        || t.is_punct('[')
        || t.is_punct('{')
        || t.is_punct('(')
}

struct Cursor<'t, 'a, 'n> {
    t: &'t [Token<'a>],
    i: usize,
    names: &'n mut Vec<usize>,
}

impl Cursor<'_, '_, '_> {
    fn peek(&self) -> Option<&Token<'_>> {
        self.t.get(self.i)
    }

    fn punct(&self, c: char) -> bool {
        self.peek().is_some_and(|t| t.is_punct(c))
    }

    fn err(&self, expected: &str) -> ShapeError {
        let found = match self.peek() {
            Some(t) => format!("`{}`", t.text),
            None => "the end of the statement".to_string(),
        };
        ShapeError {
            at: self.i,
            message: format!("expected {expected}, found {found}"),
        }
    }

    /// `operand (, operand)*`, up to `close` (not consumed) or the end; an empty list only
    /// inside brackets (`call f, ();`).
    fn list(
        &mut self,
        close: Option<char>,
        depth: usize,
    ) -> Result<Vec<(usize, usize)>, ShapeError> {
        let mut out = Vec::new();
        if close.is_some_and(|c| self.punct(c)) {
            return Ok(out);
        }
        loop {
            let start = self.i;
            self.expr(depth)?;
            out.push((start, self.i - 1));
            if self.punct(',') {
                self.i += 1;
                continue;
            }
            return Ok(out);
        }
    }

    /// `unary* primary suffix* (binop unary* primary suffix*)*`: registers `%r1`, `%tid.x`,
    /// predicates `!%p`, pairs `%r1|%p1`, immediates `-1`, `0f3F800000`, addresses
    /// `[%rd1+-8]`, vectors `{%f1, _}`, call lists `(param0, param1)`, `sym+4`.
    fn expr(&mut self, depth: usize) -> Result<(), ShapeError> {
        loop {
            while self.punct('-') || self.punct('!') || self.punct('~') || self.punct('+') {
                self.i += 1;
            }
            self.primary(depth)?;
            while self.peek().is_some_and(|t| t.kind == TokenKind::Directive) {
                self.i += 1;
            }
            let two =
                |a: char, s: &Self| s.punct(a) && s.t.get(s.i + 1).is_some_and(|n| n.is_punct(a));
            if two('<', self) || two('>', self) {
                self.i += 2;
            } else if ['+', '-', '*', '/', '|', '&', '^']
                .iter()
                .any(|&c| self.punct(c))
            {
                self.i += 1;
            } else {
                return Ok(());
            }
        }
    }

    fn primary(&mut self, depth: usize) -> Result<(), ShapeError> {
        let Some(t) = self.peek() else {
            return Err(self.err("an operand"));
        };
        match t.kind {
            TokenKind::Ident => {
                self.names.push(self.i);
                self.i += 1;
                // PTX ISA §6.4.2 (arrays as operands): an array element by index, `a[0]`,
                // `a[%r1]`, `a[%r1+4]`; each index is a bracketed expression.
                let mut indices = 0usize;
                while self.punct('[') {
                    indices += 1;
                    if depth + indices > MAX_NESTING {
                        return Err(self.err(&format!("at most {MAX_NESTING} nested brackets")));
                    }
                    self.i += 1;
                    self.expr(depth + indices)?;
                    if self.punct(']') {
                        self.i += 1;
                    } else {
                        return Err(self.err("`]` closing the array index"));
                    }
                }
                Ok(())
            }
            TokenKind::Number => {
                self.i += 1;
                Ok(())
            }
            TokenKind::Punct if t.is_punct('[') || t.is_punct('{') || t.is_punct('(') => {
                let close = match t.text {
                    "[" => ']',
                    "{" => '}',
                    _ => ')',
                };
                if depth >= MAX_NESTING {
                    return Err(self.err(&format!("at most {MAX_NESTING} nested brackets")));
                }
                self.i += 1;
                self.list(Some(close), depth + 1)?;
                if self.punct(close) {
                    self.i += 1;
                    Ok(())
                } else {
                    Err(self.err(&format!("`,` or `{close}` in the bracketed operand")))
                }
            }
            _ => Err(self.err(
                "an operand (a register, a name, a number, `[address]`, `{vector}` or `(list)`)",
            )),
        }
    }
}

/// The base opcode (the name before the first `.`) of every instruction of the PTX ISA,
/// ch. 9.7 "Instructions", by section of that chapter (ISA 9.0). Each one was measured with
/// ptxas 12.9.86 and 13.0.48: none of them is "Not a name of any known instruction" in a
/// form its section gives (`mul24.lo`, `cp.async`, `brx.idx`, `tcgen05.alloc`, …).
pub const OPCODES: &[(&str, &str)] = &[
    ("9.7.1 integer arithmetic", "add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi szext bmsk dp4a dp2a"),
    ("9.7.2 extended-precision integer arithmetic", "addc subc madc"),
    ("9.7.3-9.7.5 floating point, half and mixed precision", "testp copysign fma rcp sqrt rsqrt sin cos lg2 ex2 tanh"),
    ("9.7.6-9.7.7 comparison and selection", "set setp selp slct"),
    ("9.7.8 logic and shift", "and or xor not cnot lop3 shf shl shr"),
    ("9.7.9 data movement and conversion", "mov shfl prmt ld ldu st multimem prefetch prefetchu applypriority discard createpolicy isspacep cvta cvt mapa getctarank cp tensormap"),
    ("9.7.10 texture", "tex tld4 txq istypep"),
    ("9.7.11 surface", "suld sust sured suq"),
    ("9.7.12 control flow", "bra brx call ret exit"),
    ("9.7.13 parallel synchronization and communication", "bar barrier membar fence atom red vote match activemask redux griddepcontrol elect mbarrier clusterlaunchcontrol"),
    ("9.7.14 warp-level matrix multiply-accumulate", "wmma mma ldmatrix stmatrix movmatrix"),
    ("9.7.15 warpgroup matrix multiply-accumulate", "wgmma"),
    ("9.7.16 TensorCore 5th generation", "tcgen05"),
    ("9.7.17 stack manipulation", "stacksave stackrestore alloca"),
    ("9.7.18 video", "vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2 vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4"),
    ("9.7.19 miscellaneous", "brkpt nanosleep pmevent trap setmaxnreg"),
];

/// Whether `name` is the base opcode of a PTX ISA instruction ([`OPCODES`]).
pub fn is_opcode(name: &str) -> bool {
    static SET: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    SET.get_or_init(|| {
        OPCODES
            .iter()
            .flat_map(|(_, ops)| ops.split_whitespace())
            .collect()
    })
    .contains(name)
}

/// The special registers of PTX ISA ch. 10 ("Special Registers") with a fixed name; the
/// numbered families (`%pm0`-`%pm7`, `%pm0_64`-`%pm7_64`, `%envreg0`-`%envreg31`,
/// `%reserved_smem_offset_0`-`_1`) are matched by [`is_special_register`]. Measured with
/// ptxas 12.9.86 and 13.0.48: each reads without "Unknown symbol"; `%pm8`, `%envreg32` do not.
pub const SPECIAL_REGISTERS: &[&str] = &[
    "%tid",
    "%ntid",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%ctaid",
    "%nctaid",
    "%smid",
    "%nsmid",
    "%gridid",
    "%is_explicit_cluster",
    "%clusterid",
    "%nclusterid",
    "%cluster_ctaid",
    "%cluster_nctaid",
    "%cluster_ctarank",
    "%cluster_nctarank",
    "%lanemask_eq",
    "%lanemask_le",
    "%lanemask_lt",
    "%lanemask_ge",
    "%lanemask_gt",
    "%clock",
    "%clock_hi",
    "%clock64",
    "%globaltimer",
    "%globaltimer_lo",
    "%globaltimer_hi",
    "%reserved_smem_offset_begin",
    "%reserved_smem_offset_end",
    "%reserved_smem_offset_cap",
    "%total_smem_size",
    "%aggr_smem_size",
    "%dynamic_smem_size",
    "%current_graph_exec",
];

/// Whether `name` is a special register of PTX ISA ch. 10.
pub fn is_special_register(name: &str) -> bool {
    if SPECIAL_REGISTERS.contains(&name) {
        return true;
    }
    let n = |s: &str, max: u32| {
        !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0'))
            && s.parse::<u32>().is_ok_and(|v| v <= max)
    };
    if let Some(r) = name.strip_prefix("%pm") {
        return n(r.strip_suffix("_64").unwrap_or(r), 7);
    }
    if let Some(r) = name.strip_prefix("%envreg") {
        return n(r, 31);
    }
    name.strip_prefix("%reserved_smem_offset_")
        .is_some_and(|r| n(r, 1))
}

/// The modifiers (without the dot) each instruction's syntax block in PTX ISA ch. 9.7 gives
/// it, by section, as `(section, opcodes, modifiers)`: an opcode's allowed set is the union of
/// every row that names it, over all its forms and ISA versions (a modifier one form allows
/// is never a finding on another form; which combinations go together is not checked).
/// Opcodes with no row (`cp`, `mma`, `wgmma`, `tcgen05`, `tex`, video, ...) are not checked.
/// Checked entry by entry against ptxas 12.9 by `ptx-corpus/gen/modifiers.py`: every modifier
/// ptxas accepts on an opcode in one of the script's forms is in the opcode's set, and every
/// one outside the set is refused ("Unknown modifier", "Illegal modifier", ...); the test
/// `modifier_table_agrees_with_ptxas` compares the table with that recorded verdict.
pub const MODIFIERS: &[(&str, &str, &str)] = &[
    ("9.7.1 integer arithmetic", "add sub", "s16 u16 s32 u32 s64 u64 s16x2 u16x2 sat cc"),
    ("9.7.1 integer arithmetic", "mul mad", "s16 u16 s32 u32 s64 u64 hi lo wide sat cc"),
    ("9.7.1 integer arithmetic", "mul24 mad24", "s32 u32 hi lo sat"),
    ("9.7.1 integer arithmetic", "sad div rem", "s16 u16 s32 u32 s64 u64"),
    ("9.7.1 integer arithmetic", "abs neg", "s16 s32 s64"),
    ("9.7.1 integer arithmetic", "min max", "s16 u16 s32 u32 s64 u64 s16x2 u16x2 relu"),
    ("9.7.1 integer arithmetic", "popc clz brev", "b32 b64"),
    ("9.7.1 integer arithmetic", "bfind", "s32 u32 s64 u64 shiftamt"),
    ("9.7.1 integer arithmetic", "fns", "b32"),
    ("9.7.1 integer arithmetic", "bfe", "s32 u32 s64 u64"),
    ("9.7.1 integer arithmetic", "bfi", "b32 b64"),
    ("9.7.1 integer arithmetic", "szext", "clamp wrap s32 u32"),
    ("9.7.1 integer arithmetic", "bmsk", "clamp wrap b32"),
    ("9.7.1 integer arithmetic", "dp4a dp2a", "s32 u32 lo hi"),
    ("9.7.2 extended-precision integer arithmetic", "addc subc", "cc s32 u32 s64 u64"),
    ("9.7.2 extended-precision integer arithmetic", "madc", "cc hi lo s32 u32 s64 u64"),
    (
        "9.7.3-9.7.5 floating point, half and mixed precision",
        "add sub mul fma mad",
        "f16 f16x2 bf16 bf16x2 f32 f32x2 f64 rn rz rm rp rna ftz sat relu oob",
    ),
    ("9.7.3 floating point", "div", "f32 f64 approx full rn rz rm rp ftz"),
    ("9.7.3-9.7.4 floating point, half precision", "abs neg", "f16 f16x2 bf16 bf16x2 f32 f64 ftz"),
    (
        "9.7.3-9.7.4 floating point, half precision",
        "min max",
        "f16 f16x2 bf16 bf16x2 f32 f64 ftz NaN xorsign abs",
    ),
    (
        "9.7.3 floating point",
        "testp",
        "finite infinite number notanumber normal subnormal f32 f64",
    ),
    ("9.7.3 floating point", "copysign", "f32 f64"),
    ("9.7.3 floating point", "rcp sqrt", "f32 f64 approx rn rz rm rp ftz"),
    ("9.7.3 floating point", "rsqrt", "f32 f64 approx ftz"),
    ("9.7.3 floating point", "sin cos lg2", "f32 approx ftz"),
    ("9.7.3-9.7.4 floating point, half precision", "ex2", "f32 f16 f16x2 bf16 bf16x2 approx ftz"),
    ("9.7.3-9.7.4 floating point, half precision", "tanh", "f32 f16 f16x2 bf16 bf16x2 approx"),
    (
        "9.7.6-9.7.7 comparison and selection",
        "set setp",
        "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan and or xor ftz \
         b16 b32 b64 u16 u32 u64 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "9.7.6-9.7.7 comparison and selection",
        "selp slct",
        "b16 b32 b64 u16 u32 u64 s16 s32 s64 f32 f64 ftz",
    ),
    ("9.7.8 logic and shift", "and or xor not cnot", "pred b16 b32 b64"),
    ("9.7.8 logic and shift", "lop3", "b32 and or"),
    ("9.7.8 logic and shift", "shf", "l r clamp wrap b32"),
    ("9.7.8 logic and shift", "shl", "b16 b32 b64"),
    ("9.7.8 logic and shift", "shr", "b16 b32 b64 u16 u32 u64 s16 s32 s64"),
    (
        "9.7.9.1 mov",
        "mov",
        "pred b16 b32 b64 b128 u16 u32 u64 s16 s32 s64 f16 f32 f64 v2 v4",
    ),
    ("9.7.9.6 shfl", "shfl", "sync up down bfly idx b32"),
    ("9.7.9.7 prmt", "prmt", "b32 f4e b4e rc8 ecl ecr rc16"),
    (
        "9.7.9.8-9.7.9.10 ld, ld.global.nc, ldu, st",
        "ld ldu st",
        "global shared shared::cta shared::cluster local const param param::entry param::func \
         weak volatile relaxed acquire release mmio cta cluster gpu sys \
         ca cg cs lu cv wb wt nc unified \
         L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate \
         L2::evict_normal L2::evict_first L2::evict_last L2::cache_hint L2::64B L2::128B L2::256B \
         v2 v4 v8 b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "9.7.9.11-9.7.9.12 st.async, st.bulk; 9.7.13.7 red.async",
        "st red",
        "async bulk weak mbarrier::complete_tx::bytes",
    ),
    ("9.7.9.12 prefetch", "prefetch prefetchu", "global local const param L1 L2 L2::evict_last L2::evict_normal tensormap"),
    ("9.7.9.18 cvta", "cvta", "to global shared shared::cta shared::cluster local const param param::entry u32 u64"),
    (
        "9.7.9.21 cvt",
        "cvt",
        "rni rzi rmi rpi rn rz rm rp rna rs ftz sat relu satfinite pack \
         u8 u16 u32 u64 s8 s16 s32 s64 b32 f16 f16x2 bf16 bf16x2 f32 f64 tf32 \
         e4m3x2 e5m2x2 e2m3x2 e3m2x2 e2m1x2 ue8m0x2 e4m3x4 e5m2x4 e2m3x4 e3m2x4 e2m1x4",
    ),
    (
        "9.7.9.17 isspacep",
        "isspacep",
        "global shared shared::cta shared::cluster local const param param::entry",
    ),
    // ptxas 12.9 also assembles `.s32`/`.s64` here (measured).
    ("9.7.9.19-9.7.9.20 mapa, getctarank", "mapa getctarank", "shared::cluster u32 u64 s32 s64"),
    (
        "9.7.9.16 createpolicy",
        "createpolicy",
        "fractional range L2::evict_last L2::evict_normal L2::evict_first L2::evict_unchanged b64",
    ),
    ("9.7.9.14 applypriority", "applypriority", "global L2::evict_normal"),
    ("9.7.9.15 discard", "discard", "global L2"),
    ("9.7.12 control flow", "bra call ret", "uni"),
    (
        "9.7.13.1-9.7.13.2 bar, barrier",
        "bar barrier",
        "sync arrive red popc and or u32 pred cta warp cluster wait aligned relaxed release acquire \
         all any",
    ),
    ("9.7.13.4 membar", "membar", "cta gl sys proxy alias"),
    (
        "9.7.13.4 fence",
        "fence",
        "sc acq_rel acquire release cta cluster gpu sys proxy alias async async::global \
         async::shared::cta async::shared::cluster global shared::cta shared::cluster \
         tensormap::generic mbarrier_init op_restrict sync_restrict::shared::cta \
         sync_restrict::shared::cluster",
    ),
    (
        "9.7.13.5-9.7.13.6 atom, red",
        "atom red",
        "relaxed acquire release acq_rel cta cluster gpu sys global shared shared::cta \
         shared::cluster and or xor cas exch add inc dec min max noftz \
         b16 b32 b64 b128 u32 u64 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64 v2 v4 v8 L2::cache_hint",
    ),
    ("9.7.13.8 vote", "vote", "all any uni ballot sync pred b32"),
    ("9.7.13.9 match", "match", "any all sync b32 b64"),
    ("9.7.13.10 activemask", "activemask", "b32"),
    ("9.7.13.11 redux", "redux", "sync add min max and or xor u32 s32 b32 f32 abs NaN"),
    ("9.7.13.12 griddepcontrol", "griddepcontrol", "launch_dependents wait"),
    ("9.7.13.13 elect", "elect", "sync"),
    ("9.7.17 stack manipulation", "stacksave stackrestore alloca", "u32 u64"),
    ("9.7.19 miscellaneous", "nanosleep", "u32"),
    ("9.7.19 miscellaneous", "pmevent", "mask"),
    ("9.7.19 miscellaneous", "exit trap brkpt", ""),
    ("9.7.19 miscellaneous", "setmaxnreg", "inc dec sync aligned u32 s32"),
];

/// Modifiers ptxas 12.9 assembles on every instruction of the table, though no syntax block
/// gives them there (measured by `ptx-corpus/gen/modifiers.py`: `add.finite.s32` and
/// `add.pred.s32` assemble): never a finding, so that the lint stays within what ptxas reads.
pub const PTXAS_TOLERATED: &[&str] = &[
    "finite",
    "infinite",
    "number",
    "notanumber",
    "normal",
    "subnormal",
    "pred",
];

/// Whether `modifier` (without the dot; `shared::cta` as one) may appear on `opcode`: one of
/// the opcode's row in [`MODIFIERS`] or of [`PTXAS_TOLERATED`]; `None` where the table has no
/// row for the opcode (not checked).
pub fn modifier_allowed(opcode: &str, modifier: &str) -> Option<bool> {
    type Table = std::collections::HashMap<&'static str, std::collections::HashSet<&'static str>>;
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = Table::new();
        for (_, ops, mods) in MODIFIERS {
            for op in ops.split_whitespace() {
                t.entry(op).or_default().extend(mods.split_whitespace());
            }
        }
        t
    });
    table
        .get(opcode)
        .map(|set| set.contains(modifier) || PTXAS_TOLERATED.contains(&modifier))
}

/// Replace comments by spaces, keeping newlines so line numbers stay right. String literals
/// are rare in PTX (`.file 1 "x.cu"`) and are copied through.
pub fn strip_comments(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len());
    let mut chars = ptx.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                    }
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// The names of the functions (`.entry` and `.func`) defined (with a body) in `ptx`.
pub fn function_names(ptx: &str) -> Vec<String> {
    let text = strip_comments(ptx);
    find_functions(&text)
        .into_iter()
        .filter(|f| f.body.is_some())
        .map(|f| f.name.to_string())
        .collect()
}

/// The instruction statements of the body of function `name` (a kernel `.entry` or a `.func`),
/// in order; labels, braces, directives (`.reg`, `.loc`, `.pragma`, ...) are skipped.
pub fn function_body(ptx: &str, name: &str) -> Result<Vec<Instruction>, InstrError> {
    let text = strip_comments(ptx);
    let funcs = find_functions(&text);
    let f = funcs
        .iter()
        .find(|f| f.name == name && f.body.is_some())
        .ok_or_else(|| InstrError {
            line: 0,
            message: format!("no definition of function `{name}` in the PTX"),
        })?;
    let (start, end) = f.body.expect("filtered above");
    body_statements(&text, start, end)
}

struct FoundFunction<'a> {
    name: &'a str,
    /// Byte range of the body between its outer braces, when defined here.
    body: Option<(usize, usize)>,
}

fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'%')
}

fn find_functions(text: &str) -> Vec<FoundFunction<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        // A directive token `.entry` or `.func` at a token boundary.
        // Bytes, not `text[i..]`: `i` steps through bytes and may sit inside a multi-byte
        // character (a comment in UTF-8), where slicing the str would panic.
        let kw = if bytes[i..].starts_with(b".entry") {
            6
        } else if bytes[i..].starts_with(b".func") {
            5
        } else {
            i += 1;
            continue;
        };
        let boundary_before = i == 0 || !is_ident_char(bytes[i - 1]);
        let after = i + kw;
        let boundary_after = after >= bytes.len() || !is_ident_char(bytes[after]);
        if !boundary_before || !boundary_after {
            i += 1;
            continue;
        }
        let mut j = skip_ws(bytes, after);
        // Optional return parameter list of a .func.
        if j < bytes.len() && bytes[j] == b'(' {
            j = match matching(bytes, j, b'(', b')') {
                Some(k) => skip_ws(bytes, k + 1),
                None => break,
            };
        }
        let name_start = j;
        while j < bytes.len() && is_ident_char(bytes[j]) {
            j += 1;
        }
        let name = &text[name_start..j];
        // Skip parameter list and performance directives up to `{` (definition) or `;`.
        let mut k = j;
        let mut body = None;
        while k < bytes.len() {
            match bytes[k] {
                b'(' => match matching(bytes, k, b'(', b')') {
                    Some(e) => k = e + 1,
                    None => {
                        k = bytes.len();
                    }
                },
                b';' => break,
                b'{' => {
                    if let Some(e) = matching(bytes, k, b'{', b'}') {
                        body = Some((k + 1, e));
                        k = e;
                    } else {
                        k = bytes.len();
                    }
                    break;
                }
                _ => k += 1,
            }
        }
        if !name.is_empty() {
            out.push(FoundFunction { name, body });
        }
        i = k.max(i + 1);
    }
    out
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn matching(bytes: &[u8], open_at: usize, open: u8, close: u8) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &b) in bytes.iter().enumerate().skip(open_at) {
        if b == open {
            depth += 1;
        } else if b == close {
            depth -= 1;
            if depth == 0 {
                return Some(k);
            }
        }
    }
    None
}

fn body_statements(text: &str, start: usize, end: usize) -> Result<Vec<Instruction>, InstrError> {
    let body = &text[start..end];
    let mut line = text[..start].matches('\n').count() + 1;
    let mut out = Vec::new();
    for raw in body.split(';') {
        // The statement starts after the whitespace (and braces/labels) that precede it.
        let lead = raw.len()
            - raw
                .trim_start_matches(|c: char| c.is_whitespace() || c == '{' || c == '}')
                .len();
        let first_line = line + raw[..lead].matches('\n').count();
        line += raw.matches('\n').count();
        // Drop braces of nested scopes and leading labels (`$L__BB0_2:`).
        let mut s = raw.trim().trim_start_matches(['{', '}']).trim();
        loop {
            let s2 = s.trim_start_matches(['{', '}']).trim_start();
            let colon = s2.find(':');
            let label_end = colon.filter(|&c| {
                let lab = &s2[..c];
                !lab.is_empty() && lab.bytes().all(is_ident_char) && !s2[c..].starts_with("::")
            });
            match label_end {
                Some(c) => s = s2[c + 1..].trim_start(),
                None => {
                    s = s2;
                    break;
                }
            }
        }
        let s = s.trim_end_matches(['{', '}']).trim();
        if s.is_empty() || s.starts_with('.') {
            continue;
        }
        out.push(parse_instruction(s, first_line)?);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Structured view of memory-model instructions.

/// Kinds of instruction the memory consistency model gives meaning to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemOpKind {
    Ld,
    St,
    Atom,
    Red,
    /// `fence` (thread fence; proxy fences are [`MemOpKind::ProxyFence`]).
    Fence,
    /// Legacy `membar.{cta,gl,sys}`.
    Membar,
    /// `fence.proxy.*` / `membar.proxy.*`: orders proxies, not threads.
    ProxyFence,
    /// `bar`, `barrier`, `bar.warp.sync` and friends.
    Barrier,
}

impl MemOpKind {
    pub fn name(self) -> &'static str {
        match self {
            MemOpKind::Ld => "ld",
            MemOpKind::St => "st",
            MemOpKind::Atom => "atom",
            MemOpKind::Red => "red",
            MemOpKind::Fence => "fence",
            MemOpKind::Membar => "membar",
            MemOpKind::ProxyFence => "fence.proxy",
            MemOpKind::Barrier => "bar",
        }
    }
}

/// Memory-synchronising semantics (`.sem`), plus the two non-`.sem` qualifiers that decide
/// strength: `.weak` (explicit or by default on `ld`/`st`) and `.volatile`. The crate's one
/// definition: the instruction reader, the mapping tables and the litmus tests all use it
/// (a litmus test accepts every value but `volatile`, see `atomics::litmus`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Sem {
    Weak,
    Volatile,
    Relaxed,
    Acquire,
    Release,
    AcqRel,
    Sc,
}

impl Sem {
    pub fn name(self) -> &'static str {
        match self {
            Sem::Weak => "weak",
            Sem::Volatile => "volatile",
            Sem::Relaxed => "relaxed",
            Sem::Acquire => "acquire",
            Sem::Release => "release",
            Sem::AcqRel => "acq_rel",
            Sem::Sc => "sc",
        }
    }

    /// The semantic a PTX modifier names (`acq_rel` for `.acq_rel`).
    pub fn parse(m: &str) -> Option<Sem> {
        Some(match m {
            "weak" => Sem::Weak,
            "volatile" => Sem::Volatile,
            "relaxed" => Sem::Relaxed,
            "acquire" => Sem::Acquire,
            "release" => Sem::Release,
            "acq_rel" => Sem::AcqRel,
            "sc" => Sem::Sc,
            _ => return None,
        })
    }

    /// `self` is at least as strong as `other` in the order the ptx-interop 13.2 ch. 4 note
    /// lets a mapping strengthen: relaxed < acquire, release < acq_rel < sc. `weak` and
    /// `volatile` are below or beside all of these and only equal themselves (volatile is
    /// normalised to relaxed.sys by [`MemOp::effective`] before comparing).
    pub fn at_least(self, other: Sem) -> bool {
        use Sem::*;
        if self == other {
            return true;
        }
        matches!(
            (self, other),
            (Acquire | Release | AcqRel | Sc, Relaxed)
                | (AcqRel | Sc, Acquire | Release)
                | (Sc, AcqRel)
        )
    }
}

/// Thread scopes of the PTX memory model (`.cta`, `.cluster`, `.gpu`, `.sys`): the set of
/// threads a strong operation is morally strong with. Shared by the instruction reader and the
/// litmus model.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Cta,
    Cluster,
    Gpu,
    Sys,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Cta, Scope::Cluster, Scope::Gpu, Scope::Sys];

    pub fn name(self) -> &'static str {
        match self {
            Scope::Cta => "cta",
            Scope::Cluster => "cluster",
            Scope::Gpu => "gpu",
            Scope::Sys => "sys",
        }
    }

    /// The scope a PTX modifier names (`gpu` for `.gpu`).
    pub fn parse(m: &str) -> Option<Scope> {
        Some(match m {
            "cta" => Scope::Cta,
            "cluster" => Scope::Cluster,
            "gpu" => Scope::Gpu,
            "sys" => Scope::Sys,
            _ => return None,
        })
    }
}

/// State spaces a memory instruction may name (`.shared::cta` and `.shared::cluster` keep
/// their sub-qualifier). The crate's one definition; a litmus location uses `global`,
/// `shared` or `const`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Space {
    #[default]
    Global,
    Shared,
    SharedCta,
    SharedCluster,
    Local,
    Param,
    Const,
}

impl Space {
    /// The state space a PTX modifier names.
    pub fn parse(m: &str) -> Option<Space> {
        Some(match m {
            "global" => Space::Global,
            "shared" => Space::Shared,
            "shared::cta" => Space::SharedCta,
            "shared::cluster" => Space::SharedCluster,
            "local" => Space::Local,
            "const" => Space::Const,
            _ if m == "param" || m.starts_with("param::") => Space::Param,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Space::Global => "global",
            Space::Shared => "shared",
            Space::SharedCta => "shared::cta",
            Space::SharedCluster => "shared::cluster",
            Space::Local => "local",
            Space::Param => "param",
            Space::Const => "const",
        }
    }
}

/// Atomic operations of `atom`/`red`: the crate's one definition (the instruction reader, the
/// mapping tables via `mapping::table::RmwOp::ptx_op`, and the litmus tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomOp {
    Add,
    /// Not a PTX `atom` operation, but Dat3M's PTX litmus tests use it (`atom.acq_rel.sys.sub`).
    Sub,
    Exch,
    Cas,
    And,
    Or,
    Xor,
    Min,
    Max,
    Inc,
    Dec,
}

impl AtomOp {
    pub fn name(self) -> &'static str {
        match self {
            AtomOp::Add => "add",
            AtomOp::Sub => "sub",
            AtomOp::Exch => "exch",
            AtomOp::Cas => "cas",
            AtomOp::And => "and",
            AtomOp::Or => "or",
            AtomOp::Xor => "xor",
            AtomOp::Min => "min",
            AtomOp::Max => "max",
            AtomOp::Inc => "inc",
            AtomOp::Dec => "dec",
        }
    }

    /// The operation a PTX modifier names.
    pub fn parse(m: &str) -> Option<AtomOp> {
        Some(match m {
            "add" => AtomOp::Add,
            "sub" => AtomOp::Sub,
            "exch" => AtomOp::Exch,
            "cas" => AtomOp::Cas,
            "and" => AtomOp::And,
            "or" => AtomOp::Or,
            "xor" => AtomOp::Xor,
            "min" => AtomOp::Min,
            "max" => AtomOp::Max,
            "inc" => AtomOp::Inc,
            "dec" => AtomOp::Dec,
            _ => return None,
        })
    }

    /// The value written, given the value read and the operand, on 64-bit values (the PTX ISA
    /// `atom` descriptions; `inc`/`dec` wrap at the operand as the ISA says, `cas` is decided
    /// by the caller: this gives the value written when the comparison succeeds).
    pub fn apply(self, old: i64, val: i64) -> i64 {
        match self {
            AtomOp::Exch | AtomOp::Cas => val,
            AtomOp::Add => old.wrapping_add(val),
            AtomOp::Sub => old.wrapping_sub(val),
            AtomOp::And => old & val,
            AtomOp::Or => old | val,
            AtomOp::Xor => old ^ val,
            AtomOp::Min => old.min(val),
            AtomOp::Max => old.max(val),
            // inc: (old >= val) ? 0 : old + 1; dec: (old == 0 || old > val) ? val : old - 1
            AtomOp::Inc => {
                if old >= val {
                    0
                } else {
                    old + 1
                }
            }
            AtomOp::Dec => {
                if old == 0 || old > val {
                    val
                } else {
                    old - 1
                }
            }
        }
    }
}

/// A memory-model instruction taken apart. `sem` and `scope` are what the text says; use
/// [`MemOp::effective`] for what the PTX ISA says they mean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemOp {
    pub kind: MemOpKind,
    pub sem: Option<Sem>,
    pub scope: Option<Scope>,
    pub space: Option<Space>,
    pub op: Option<AtomOp>,
    /// The data type modifier (`s32`, `b64`, ...), the last one given.
    pub ty: Option<String>,
    /// `membar` level as written (`cta`, `gl`, `sys`).
    pub level: Option<String>,
}

impl MemOp {
    pub fn from_instruction(ins: &Instruction) -> Option<MemOp> {
        let kind = match ins.opcode.as_str() {
            "ld" | "ldu" => MemOpKind::Ld,
            "st" => MemOpKind::St,
            "atom" => MemOpKind::Atom,
            "red" => MemOpKind::Red,
            "fence" | "membar" if ins.has("proxy") => MemOpKind::ProxyFence,
            "fence" => MemOpKind::Fence,
            "membar" => MemOpKind::Membar,
            "bar" | "barrier" => MemOpKind::Barrier,
            _ => return None,
        };
        let mut m = MemOp {
            kind,
            sem: None,
            scope: None,
            space: None,
            op: None,
            ty: None,
            level: None,
        };
        for md in &ins.modifiers {
            if let Some(s) = Sem::parse(md) {
                m.sem = Some(s);
            } else if let Some(s) = Scope::parse(md) {
                m.scope = Some(s);
            } else if let Some(s) = Space::parse(md) {
                m.space = Some(s);
            } else if let (Some(o), MemOpKind::Atom | MemOpKind::Red) = (AtomOp::parse(md), kind) {
                m.op = Some(o);
            } else if is_type(md) {
                m.ty = Some(md.clone());
            } else if kind == MemOpKind::Membar && matches!(md.as_str(), "gl") {
                m.level = Some(md.clone());
            }
        }
        if kind == MemOpKind::Membar {
            m.level = m.level.or_else(|| m.scope.map(|s| s.name().to_string()));
        }
        Some(m)
    }

    /// Semantics and scope with the PTX ISA's defaults and synonyms applied:
    /// - `atom`/`red` without `.sem` are `.relaxed`, without `.scope` are `.gpu` (PTX ISA
    ///   §9.7.13.5 atom, §9.7.13.6 red);
    /// - `fence` without `.sem` is `.acq_rel` (PTX ISA §9.7.13.4 membar/fence);
    /// - `membar.{cta,gl,sys}` is `fence.sc.{cta,gpu,sys}` on sm_70 and later (same clause);
    /// - `.volatile` `ld`/`st` are relaxed at system scope (PTX ISA §8.4.2);
    /// - `ld`/`st` with neither `.sem` nor `.volatile` are weak, without a scope.
    pub fn effective(&self) -> Effective {
        let (kind, sem, scope) = match self.kind {
            MemOpKind::Atom | MemOpKind::Red => (
                self.kind,
                Some(self.sem.unwrap_or(Sem::Relaxed)),
                Some(self.scope.unwrap_or(Scope::Gpu)),
            ),
            MemOpKind::Fence => (
                MemOpKind::Fence,
                Some(self.sem.unwrap_or(Sem::AcqRel)),
                self.scope,
            ),
            MemOpKind::Membar => {
                let scope = match self.level.as_deref() {
                    Some("cta") => Some(Scope::Cta),
                    Some("gl") => Some(Scope::Gpu),
                    Some("sys") => Some(Scope::Sys),
                    _ => None,
                };
                (MemOpKind::Fence, Some(Sem::Sc), scope)
            }
            MemOpKind::Ld | MemOpKind::St => match self.sem {
                Some(Sem::Volatile) => (self.kind, Some(Sem::Relaxed), Some(Scope::Sys)),
                None | Some(Sem::Weak) => (self.kind, Some(Sem::Weak), None),
                Some(s) => (self.kind, Some(s), self.scope),
            },
            MemOpKind::ProxyFence | MemOpKind::Barrier => (self.kind, self.sem, self.scope),
        };
        Effective {
            kind,
            sem,
            scope,
            op: self.op,
        }
    }
}

/// A memory instruction's meaning after defaults: what the mapping check compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    /// `Membar` becomes `Fence`.
    pub kind: MemOpKind,
    pub sem: Option<Sem>,
    pub scope: Option<Scope>,
    pub op: Option<AtomOp>,
}

impl fmt::Display for Effective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(s) = self.sem {
            write!(f, ".{}", s.name())?;
        }
        if let Some(s) = self.scope {
            write!(f, ".{}", s.name())?;
        }
        if let Some(o) = self.op {
            write!(f, ".{}", o.name())?;
        }
        Ok(())
    }
}

fn is_type(m: &str) -> bool {
    let b = m.as_bytes();
    if b.len() < 2 {
        return false;
    }
    matches!(b[0], b'b' | b'u' | b's' | b'f') && m[1..].bytes().all(|c| c.is_ascii_digit())
        || matches!(m, "pred" | "bf16" | "bf16x2" | "f16x2")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines below are verbatim producer output: libcu++ 2.8 via NVRTC 12.9 (compute_90) and
    // clang 19.1.7 (sm_90), compiled from the sources in `atomics::mapping::source`.

    #[test]
    fn parses_nvrtc_atom_with_modifiers_in_producer_order() {
        let i = parse_instruction("atom.add.acquire.gpu.s32 %r1,[%rd1],%r2", 7).unwrap();
        assert_eq!(i.opcode, "atom");
        assert_eq!(i.modifiers, ["add", "acquire", "gpu", "s32"]);
        assert_eq!(i.operands, ["%r1", "[%rd1]", "%r2"]);
        assert_eq!(i.line, 7);
        let m = i.mem_op().unwrap();
        assert_eq!(m.kind, MemOpKind::Atom);
        assert_eq!(m.sem, Some(Sem::Acquire));
        assert_eq!(m.scope, Some(Scope::Gpu));
        assert_eq!(m.op, Some(AtomOp::Add));
        assert_eq!(m.ty.as_deref(), Some("s32"));
        assert_eq!(m.space, None);
    }

    #[test]
    fn modifier_order_does_not_change_the_parsed_parts() {
        // The PTX ISA's own order `atom{.sem}{.scope}{.space}.op.type` against libcu++'s.
        let a = parse_instruction("atom.acquire.gpu.global.add.s32 %r1, [%rd1], %r2", 0)
            .unwrap()
            .mem_op()
            .unwrap();
        let b = parse_instruction("atom.global.add.acquire.gpu.s32 %r1,[%rd1],%r2", 0)
            .unwrap()
            .mem_op()
            .unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn fences_as_libcudacxx_writes_them() {
        let f = parse_instruction("fence.cta.acq_rel", 0)
            .unwrap()
            .mem_op()
            .unwrap();
        assert_eq!(
            (f.kind, f.sem, f.scope),
            (MemOpKind::Fence, Some(Sem::AcqRel), Some(Scope::Cta))
        );
        let f = parse_instruction("fence.gpu.sc", 0)
            .unwrap()
            .mem_op()
            .unwrap();
        assert_eq!((f.sem, f.scope), (Some(Sem::Sc), Some(Scope::Gpu)));
    }

    #[test]
    fn ptx_isa_defaults_apply_to_clang_atoms() {
        // clang 19 emits `atom.add.u32` with no .sem/.scope: PTX ISA atom defaults.
        let e = parse_instruction("atom.add.u32 \t%r2, [%rd1], %r1", 0)
            .unwrap()
            .mem_op()
            .unwrap()
            .effective();
        assert_eq!(e.sem, Some(Sem::Relaxed));
        assert_eq!(e.scope, Some(Scope::Gpu));
        assert_eq!(e.to_string(), "atom.relaxed.gpu.add");
    }

    #[test]
    fn volatile_is_relaxed_sys_and_plain_ld_is_weak() {
        let e = parse_instruction("ld.volatile.u32 \t%r1, [%rd1]", 0)
            .unwrap()
            .mem_op()
            .unwrap()
            .effective();
        assert_eq!((e.sem, e.scope), (Some(Sem::Relaxed), Some(Scope::Sys)));
        let e = parse_instruction("ld.global.u32 %r1, [%rd1]", 0)
            .unwrap()
            .mem_op()
            .unwrap()
            .effective();
        assert_eq!((e.sem, e.scope), (Some(Sem::Weak), None));
    }

    #[test]
    fn membar_levels_are_fence_sc_scopes() {
        for (text, scope) in [
            ("membar.cta", Scope::Cta),
            ("membar.gl", Scope::Gpu),
            ("membar.sys", Scope::Sys),
        ] {
            let e = parse_instruction(text, 0)
                .unwrap()
                .mem_op()
                .unwrap()
                .effective();
            assert_eq!(e.kind, MemOpKind::Fence, "{text}");
            assert_eq!((e.sem, e.scope), (Some(Sem::Sc), Some(scope)), "{text}");
        }
        // fence without .sem is acq_rel.
        let e = parse_instruction("fence.gpu", 0)
            .unwrap()
            .mem_op()
            .unwrap()
            .effective();
        assert_eq!(e.sem, Some(Sem::AcqRel));
    }

    #[test]
    fn guards_and_param_space() {
        let i = parse_instruction("@!%p1 bra $L__BB0_2", 0).unwrap();
        assert_eq!(
            i.guard,
            Some(Guard {
                negated: true,
                predicate: "%p1".into()
            })
        );
        assert_eq!(i.opcode, "bra");
        assert!(i.mem_op().is_none());
        let m = parse_instruction("st.param.b32 \t[func_retval0+0], %r2", 0)
            .unwrap()
            .mem_op()
            .unwrap();
        assert_eq!(m.space, Some(Space::Param));
        let m = parse_instruction("ld.shared::cluster.u32 %r1, [%r2]", 0)
            .unwrap()
            .mem_op()
            .unwrap();
        assert_eq!(m.space, Some(Space::SharedCluster));
    }

    #[test]
    fn array_elements_are_operands() {
        // PTX ISA §6.4.2's own forms (`ld.global.u32 s, a[0];`, `mov.u32 s, a[1];`) and a
        // register index; ptxas 12.9 assembles `ld.const.b16 t, c[0]` and `mov.u64 a, c[1]`.
        for text in [
            "ld.global.u32 s, a[0]",
            "mov.u32 s, a[1]",
            "ld.const.b16 temp1, constparams[0]",
            "ld.shared.f32 %f1, tile[%r1]",
            "ld.shared.f32 %f1, tile[%r1+4]",
        ] {
            let i = parse_instruction(text, 1).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(i.operands.len(), 2, "{text}: {:?}", i.operands);
        }
        let e = parse_instruction("mov.u32 s, a[1", 4).unwrap_err();
        assert_eq!(e.line, 4);
        assert!(e.to_string().contains("`]` closing the array index"), "{e}");
        // Deep index chains are refused, never a stack overflow.
        let deep = format!("mov.u32 s, a{}", "[a".repeat(10_000));
        assert!(parse_instruction(&deep, 1).is_err());
    }

    /// The table against ptxas 12.9's recorded verdicts (ptx-corpus/gen/modifiers.py tried
    /// each opcode of the table with each modifier any row names, and misspellings): every
    /// modifier ptxas assembles in one form is allowed, so every one the table refuses is one
    /// ptxas refused in every form tried.
    #[test]
    fn modifier_table_agrees_with_ptxas() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../ptx-corpus/gen/out/modifiers-ptxas-12.9.txt"
        );
        let text = std::fs::read_to_string(path).expect("the recorded ptxas verdicts");
        let mut probed = std::collections::HashSet::new();
        let (mut accepted, mut refused_both, mut refused_by_ptxas_only) = (0, 0, 0);
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (head, mods) = line.split_once(" | ").expect("`... | modifiers`");
            let mut words = head.split_whitespace();
            let (verdict, op) = (words.next().unwrap(), words.next().unwrap());
            assert_ne!(verdict, "noform", "{op}: no form was tried");
            for m in mods.split_whitespace() {
                probed.insert((op.to_string(), m.to_string()));
                let allowed = modifier_allowed(op, m);
                assert!(allowed.is_some(), "{op} is probed but not in the table");
                match (verdict, allowed == Some(true)) {
                    ("accept", true) => accepted += 1,
                    ("accept", false) => {
                        panic!("ptxas 12.9 assembles `{op}.{m}`; the table refuses it")
                    }
                    (_, false) => refused_both += 1,
                    (_, true) => refused_by_ptxas_only += 1,
                }
            }
        }
        // Every modifier of every row was tried on its opcode.
        for (_, ops, mods) in MODIFIERS {
            for op in ops.split_whitespace() {
                for m in mods.split_whitespace() {
                    assert!(
                        probed.contains(&(op.into(), m.into())),
                        "{op}.{m} not tried"
                    );
                }
            }
        }
        // Both sides say something: a table or a recording that allowed (or refused)
        // everything would not be a check.
        assert!(
            accepted > 500 && refused_both > 5000,
            "{accepted} {refused_both}"
        );
        eprintln!(
            "modifier table vs ptxas 12.9: {} pairs tried; agree {} (assembled and allowed {accepted}, refused by both {refused_both}); allowed but refused in every form tried {refused_by_ptxas_only}",
            probed.len(),
            accepted + refused_both
        );
    }

    #[test]
    fn modifiers_outside_the_table_are_found() {
        assert_eq!(modifier_allowed("add", "foo"), Some(false));
        assert_eq!(modifier_allowed("ld", "relaxd"), Some(false));
        assert_eq!(modifier_allowed("ld", "L1::no_allocate"), Some(true));
        assert_eq!(modifier_allowed("add", "finite"), Some(true));
        // Opcodes without a row are not judged.
        assert_eq!(modifier_allowed("wgmma", "anything"), None);
    }

    #[test]
    fn rejects_malformed_statements() {
        assert!(parse_instruction("", 3).is_err());
        assert!(parse_instruction("@%p1", 3).is_err());
        assert!(parse_instruction("atom..add %r1", 3).is_err());
        let e = parse_instruction("@ x", 9).unwrap_err();
        assert_eq!(e.line, 9);
    }

    const CLANG_PTX: &str = r#"
//
// Generated by LLVM NVPTX Back-End
//

.version 7.8
.target sm_90
.address_size 64

	// .globl	f_cas_acq_dev           // -- Begin function f_cas_acq_dev
.visible .func  (.param .b32 func_retval0) f_cas_acq_dev(
	.param .b64 f_cas_acq_dev_param_0,
	.param .b32 f_cas_acq_dev_param_1,
	.param .b32 f_cas_acq_dev_param_2
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<2>;

// %bb.0:                               // %entry
	ld.param.u64 	%rd1, [f_cas_acq_dev_param_0];
	ld.param.u32 	%r1, [f_cas_acq_dev_param_1];
	ld.param.u32 	%r2, [f_cas_acq_dev_param_2];
	atom.cas.b32 	%r3, [%rd1], %r1, %r2;
	setp.eq.s32 	%p1, %r3, %r1;
$L__BB0_1: /* a label */
	selp.u32 	%r4, 1, 0, %p1;
	st.param.b32 	[func_retval0+0], %r4;
	ret;
                                        // -- End function
}
.visible .entry k_fence_acquire_cta()
{
	// begin inline asm
	fence.cta.acq_rel;
	// end inline asm
	ret;

}
"#;

    #[test]
    fn function_body_skips_directives_labels_and_comments() {
        let body = function_body(CLANG_PTX, "f_cas_acq_dev").unwrap();
        let ops: Vec<&str> = body.iter().map(|i| i.opcode.as_str()).collect();
        assert_eq!(ops, ["ld", "ld", "ld", "atom", "setp", "selp", "st", "ret"]);
        assert_eq!(body[3].to_string(), "atom.cas.b32 %r3, [%rd1], %r1, %r2;");
        // Line numbers point into the original text.
        let line = CLANG_PTX
            .lines()
            .position(|l| l.contains("atom.cas"))
            .unwrap()
            + 1;
        assert_eq!(body[3].line, line);
        let k = function_body(CLANG_PTX, "k_fence_acquire_cta").unwrap();
        assert_eq!(k.len(), 2);
        assert_eq!(k[0].modifiers, ["cta", "acq_rel"]);
        assert_eq!(
            function_names(CLANG_PTX),
            ["f_cas_acq_dev", "k_fence_acquire_cta"]
        );
        assert!(function_body(CLANG_PTX, "missing").is_err());
    }
}
