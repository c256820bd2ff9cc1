//! A small reader of what DWARF in PTX depends on (ptx-interop 13.2 §5.1): the `.section`
//! blocks (`.b8/.b16/.b32/.b64` data whose items are numbers or label references), and, outside
//! them, the symbols the DWARF may name (variables with their state space, functions, labels,
//! registers), the `.file` table and the `.loc` directives. It is not a PTX parser: it reads
//! declarations by their directive tokens and nothing else. Limits are checked before work.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ptx::instr::Space;

/// Largest PTX file read (bytes).
pub(crate) const MAX_PTX_BYTES: usize = 64 << 20;
/// Largest section (bytes of data) and the most sections per file.
pub(crate) const MAX_SECTION_BYTES: usize = 16 << 20;
pub(crate) const MAX_SECTIONS: usize = 256;

/// The §5.2 table, one row per class: the variant, its `DW_AT_address_class` code and its
/// name in the guide. Declares [`AddressClass`] with `ALL`, `address_class` and `code_name`.
macro_rules! address_classes {
    ($( $variant:ident = $code:literal, $name:literal; )+) => {
        /// A DWARF address class of ptx-interop 13.2 §5.2 (`DW_AT_address_class`): the PTX
        /// state spaces ([`crate::ptx::instr::Space`], through [`AddressClass::of`]) plus the
        /// classes DWARF adds (code, special registers, surfaces, samplers, generic addresses).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AddressClass {
            $( $variant, )+
        }

        impl AddressClass {
            /// Every class, in code order.
            pub(crate) const ALL: &'static [AddressClass] = &[$(AddressClass::$variant),+];

            /// The §5.2 code: ADDR_code_space 1 .. ADDR_generic_space 12.
            pub(crate) fn address_class(self) -> u8 {
                match self {
                    $( AddressClass::$variant => $code, )+
                }
            }

            /// The §5.2 code name.
            pub(crate) fn code_name(self) -> &'static str {
                match self {
                    $( AddressClass::$variant => $name, )+
                }
            }
        }
    };
}

address_classes! {
    Code = 1, "ADDR_code_space";
    Reg = 2, "ADDR_reg_space";
    Sreg = 3, "ADDR_sreg_space";
    Const = 4, "ADDR_const_space";
    Global = 5, "ADDR_global_space";
    Local = 6, "ADDR_local_space";
    Param = 7, "ADDR_param_space";
    Shared = 8, "ADDR_shared_space";
    Surf = 9, "ADDR_surf_space";
    Tex = 10, "ADDR_tex_space";
    Sampler = 11, "ADDR_tex_sampler_space";
    Generic = 12, "ADDR_generic_space";
}

impl AddressClass {
    /// The class of a variable in state space `space` (§5.2 has one shared class for
    /// `.shared`, `.shared::cta` and `.shared::cluster`).
    pub fn of(space: Space) -> AddressClass {
        match space {
            Space::Global => AddressClass::Global,
            Space::Shared | Space::SharedCta | Space::SharedCluster => AddressClass::Shared,
            Space::Local => AddressClass::Local,
            Space::Param => AddressClass::Param,
            Space::Const => AddressClass::Const,
        }
    }

    pub(crate) fn from_class(c: u64) -> Option<AddressClass> {
        AddressClass::ALL
            .iter()
            .copied()
            .find(|s| u64::from(s.address_class()) == c)
    }
}

/// PTX special registers (the PTX ISA's `%tid`, `%ctaid`, ...): a variable held in one is in
/// `ADDR_sreg_space`.
pub(crate) fn is_special_register(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name);
    matches!(
        base,
        "%tid"
            | "%ntid"
            | "%laneid"
            | "%warpid"
            | "%nwarpid"
            | "%ctaid"
            | "%nctaid"
            | "%smid"
            | "%nsmid"
            | "%gridid"
            | "%clock"
            | "%clock64"
            | "%globaltimer"
            | "%lanemask_eq"
            | "%lanemask_le"
            | "%lanemask_lt"
            | "%lanemask_ge"
            | "%lanemask_gt"
            | "%clusterid"
            | "%nclusterid"
            | "%cluster_ctaid"
            | "%cluster_nctaid"
            | "%dynamic_smem_size"
            | "%total_smem_size"
    ) || base.starts_with("%pm")
        || base.starts_with("%envreg")
}

/// A label or symbol reference inside a `.section` data list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LabelRef {
    /// Byte offset in the section.
    pub offset: usize,
    /// Width of the data item (4 or 8; 1 and 2 are refused at read time).
    pub size: u8,
    pub label: String,
    pub addend: i64,
    pub line: usize,
    pub col: usize,
}

/// One `.section NAME { ... }` block (several blocks of one name are concatenated).
#[derive(Debug, Clone, Default)]
pub(crate) struct Section {
    pub name: String,
    pub line: usize,
    pub bytes: Vec<u8>,
    pub refs: Vec<LabelRef>,
    /// (byte offset, PTX line) at the start of each data directive, ascending.
    pub lines: Vec<(usize, usize)>,
}

impl Section {
    /// The PTX line holding byte `offset`.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        match self.lines.partition_point(|(o, _)| *o <= offset) {
            0 => self.line,
            i => self.lines[i - 1].1,
        }
    }
}

/// A declared variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    pub space: AddressClass,
    pub line: usize,
}

/// A `.loc` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loc {
    pub file: u64,
    pub line: u64,
    pub col: u64,
    pub ptx_line: usize,
    /// Whether an instruction follows before the next `.loc` (only those get a line row).
    pub has_code: bool,
}

/// What [`scan`] finds.
#[derive(Debug, Clone, Default)]
pub(crate) struct PtxDebug {
    pub target_debug: bool,
    pub sections: Vec<Section>,
    pub variables: HashMap<String, Symbol>,
    /// Function names (`.func` and `.entry`), with their line.
    pub functions: BTreeMap<String, usize>,
    pub labels: HashSet<String>,
    /// Register names declared one by one, and `%r<N>` families as (prefix, N).
    pub registers: HashSet<String>,
    pub register_families: HashMap<String, u64>,
    pub files: BTreeMap<u64, (String, usize)>,
    pub locs: Vec<Loc>,
}

impl PtxDebug {
    pub fn section(&self, name: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.name == name)
    }

    /// Whether `%name` is a declared register (`%r3` with `.reg .b32 %r<4>`).
    pub(crate) fn has_register(&self, name: &str) -> bool {
        if self.registers.contains(name) {
            return true;
        }
        let digits = name.len()
            - name
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .count();
        let (prefix, n) = name.split_at(digits);
        match (self.register_families.get(prefix), n.parse::<u64>()) {
            (Some(count), Ok(i)) => i < *count,
            _ => false,
        }
    }
}

/// A PTX text the reader cannot read: where, and what is allowed there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {message}")]
pub(crate) struct ScanError {
    pub line: usize,
    pub col: usize,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Punct(char),
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    line: usize,
    col: usize,
}

fn err(line: usize, col: usize, message: impl Into<String>) -> ScanError {
    ScanError {
        line,
        col,
        message: message.into(),
    }
}

/// The crate's one PTX tokenizer ([`crate::ptx::lexer::lex`]), its tokens joined back into
/// the words this reader matches on: adjacent names, directives and numbers form one word
/// (`ld.global.u8`, `%tid.x`, `.nv.debug_info`), and a `-` right before a number is its sign.
fn tokenize(text: &str) -> Result<Vec<Token>, ScanError> {
    use crate::ptx::lexer::{lex, TokenKind};
    let lexed = lex(text).map_err(|e| err(e.line as usize, e.col as usize, e.kind.to_string()))?;
    let mut out: Vec<Token> = Vec::with_capacity(lexed.tokens.len());
    // Where the last token ended (line, column after it), to tell adjacent tokens apart.
    let mut end = (0u32, 0u32);
    let mut sign: Option<(u32, u32)> = None;
    for t in &lexed.tokens {
        let adjacent = (t.line, t.col) == end;
        let wordish = matches!(
            t.kind,
            TokenKind::Directive | TokenKind::Ident | TokenKind::Number
        );
        match t.kind {
            TokenKind::Number if adjacent && sign.is_some() => {
                let (line, col) = sign.take().unwrap_or_default();
                out.pop();
                out.push(Token {
                    tok: Tok::Word(format!("-{}", t.text)),
                    line: line as usize,
                    col: col as usize,
                });
            }
            _ if wordish
                && adjacent
                && matches!(
                    out.last(),
                    Some(Token {
                        tok: Tok::Word(_),
                        ..
                    })
                ) =>
            {
                if let Some(Token {
                    tok: Tok::Word(w), ..
                }) = out.last_mut()
                {
                    w.push_str(t.text);
                }
            }
            _ if wordish => out.push(Token {
                tok: Tok::Word(t.text.to_string()),
                line: t.line as usize,
                col: t.col as usize,
            }),
            TokenKind::Str => out.push(Token {
                tok: Tok::Str(t.text[1..t.text.len().saturating_sub(1).max(1)].to_string()),
                line: t.line as usize,
                col: t.col as usize,
            }),
            _ => out.push(Token {
                tok: Tok::Punct(t.text.chars().next().unwrap_or(' ')),
                line: t.line as usize,
                col: t.col as usize,
            }),
        }
        sign = (t.is_punct('-')).then_some((t.line, t.col));
        end = (t.line, t.col + t.text.len() as u32);
    }
    Ok(out)
}

/// An integer as PTX writes it, in the crate's one literal grammar ([`crate::ptx::literal`]:
/// decimal, `0x` hex, `0` octal, `0b` binary, `U` suffix), with a leading `-`.
fn parse_int(s: &str) -> Option<i128> {
    match s.strip_prefix('-') {
        Some(body) => crate::ptx::literal::parse_int(body).map(|v| -i128::from(v)),
        None => crate::ptx::literal::parse_int(s).map(i128::from),
    }
}

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || matches!(ch, '_' | '$' | '%' | '.'))
        && s.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '_' | '$' | '%' | '.'))
}

/// The token at `i`.
fn tok_at(toks: &[Token], i: usize) -> Option<&Tok> {
    toks.get(i).map(|t| &t.tok)
}

/// The word at `i`, if that token is one.
fn word(toks: &[Token], i: usize) -> Option<&str> {
    match tok_at(toks, i) {
        Some(Tok::Word(w)) => Some(w.as_str()),
        _ => None,
    }
}

/// Read a PTX text: the directives debug information refers to (ptx-interop 13.2 §5.1:
/// `.target ... debug`, `.file`, `.loc`, the `.section .debug_*` data), the functions, labels,
/// variables and registers it may name, and which `.loc` is followed by code.
pub(crate) fn scan(text: &str) -> Result<PtxDebug, ScanError> {
    if text.len() > MAX_PTX_BYTES {
        return Err(err(
            1,
            1,
            format!(
                "file of {} bytes; at most {MAX_PTX_BYTES} are read",
                text.len()
            ),
        ));
    }
    let toks = tokenize(text)?;
    let mut d = PtxDebug::default();
    let mut i = 0;
    while i < toks.len() {
        let w = match &toks[i].tok {
            Tok::Word(w) => w.as_str(),
            _ => {
                i += 1;
                continue;
            }
        };
        i = match w {
            ".target" => target(&toks, i, &mut d),
            ".section" => read_section(&toks, i, &mut d)?,
            ".file" => file(&toks, i, &mut d)?,
            ".loc" => loc(&toks, i, &mut d)?,
            ".entry" | ".func" => function(&toks, i, &mut d),
            _ if w == ".reg" || state_space(w).is_some() => declaration(&toks, i, w, &mut d),
            _ => {
                if tok_at(&toks, i + 1) == Some(&Tok::Punct(':'))
                    && !w.starts_with('.')
                    && is_identifier(w)
                {
                    d.labels.insert(w.to_string());
                } else if !w.starts_with('.') {
                    // An instruction: the last `.loc` describes code.
                    if let Some(l) = d.locs.last_mut() {
                        l.has_code = true;
                    }
                }
                i + 1
            }
        };
    }
    Ok(d)
}

/// `.target sm_90, debug`: whether `debug` is among the targets. Returns the index after it.
fn target(toks: &[Token], i: usize, d: &mut PtxDebug) -> usize {
    let mut j = i + 1;
    while let Some(x) = word(toks, j) {
        if x == "debug" {
            d.target_debug = true;
        }
        if tok_at(toks, j + 1) != Some(&Tok::Punct(',')) {
            break;
        }
        j += 2;
    }
    j + 1
}

/// `.file N "name"`: file `N` of the `.loc` directives.
fn file(toks: &[Token], i: usize, d: &mut PtxDebug) -> Result<usize, ScanError> {
    let t = &toks[i];
    let n = word(toks, i + 1).and_then(parse_int);
    let name = match tok_at(toks, i + 2) {
        Some(Tok::Str(s)) => Some(s.clone()),
        _ => None,
    };
    match (n, name) {
        (Some(n), Some(name)) if n >= 0 => {
            d.files.insert(n as u64, (name, t.line));
            Ok(i + 3)
        }
        _ => Err(err(
            t.line,
            t.col,
            ".file needs a file number and a quoted name (`.file 1 \"a.cu\"`)",
        )),
    }
}

/// `.loc FILE LINE COLUMN`: a source position of the code that follows.
fn loc(toks: &[Token], i: usize, d: &mut PtxDebug) -> Result<usize, ScanError> {
    let t = &toks[i];
    let n: Vec<Option<i128>> = (1..=3)
        .map(|k| word(toks, i + k).and_then(parse_int))
        .collect();
    match (n[0], n[1], n[2]) {
        (Some(f), Some(l), Some(c)) if f >= 0 && l >= 0 && c >= 0 => {
            d.locs.push(Loc {
                file: f as u64,
                line: l as u64,
                col: c as u64,
                ptx_line: t.line,
                has_code: false,
            });
            Ok(i + 4)
        }
        _ => Err(err(
            t.line,
            t.col,
            ".loc needs a file number, a line and a column (`.loc 1 3 1`)",
        )),
    }
}

/// `.entry NAME` or `.func (RETURN) NAME`: the function's name and line.
fn function(toks: &[Token], i: usize, d: &mut PtxDebug) -> usize {
    let mut j = i + 1;
    if tok_at(toks, j) == Some(&Tok::Punct('(')) {
        // Skip the return parameter list.
        let mut depth = 0usize;
        while let Some(tk) = toks.get(j) {
            match tk.tok {
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        j += 1;
    }
    if let Some(name) = word(toks, j) {
        d.functions.insert(name.to_string(), toks[j].line);
    }
    j + 1
}

/// The state space a declaration directive names (`.shared::cta` too), if it names one.
fn state_space(directive: &str) -> Option<Space> {
    directive.strip_prefix('.').and_then(Space::parse)
}

/// A declaration in state space `w` (`.global .align 4 .b8 g[8]`, `.reg .b32 %r<3>, %p`):
/// variables with their space (`.texref`/`.surfref`/`.samplerref` name theirs), registers and
/// register families. Returns the index after the names.
fn declaration(toks: &[Token], i: usize, w: &str, d: &mut PtxDebug) -> usize {
    let mut space = state_space(w).map_or(AddressClass::Reg, AddressClass::of);
    let mut j = i + 1;
    // Modifiers: `.align 4`, `.b8`, `.v2`, `.ptr`, `.texref`, ...
    while let Some(x) = word(toks, j) {
        if !x.starts_with('.') && parse_int(x).is_none() {
            break;
        }
        match x {
            ".texref" => space = AddressClass::Tex,
            ".surfref" => space = AddressClass::Surf,
            ".samplerref" => space = AddressClass::Sampler,
            _ => {}
        }
        j += 1;
    }
    // Names, comma-separated, each maybe `%r<4>` or `a[8]`.
    while let Some(name) = word(toks, j) {
        if tok_at(toks, j + 1) == Some(&Tok::Punct('<')) {
            // Registers are function-scoped and DIEs are not matched to their
            // function here: a name is declared if some function declares it, so
            // keep the largest family (a later `%rd<2>` must not undeclare `%rd3`).
            let n = word(toks, j + 2).and_then(parse_int).unwrap_or(0).max(0) as u64;
            let count = d.register_families.entry(name.to_string()).or_insert(0);
            *count = (*count).max(n);
            j += 3;
        } else if space == AddressClass::Reg {
            d.registers.insert(name.to_string());
        } else {
            d.variables.insert(
                name.to_string(),
                Symbol {
                    space,
                    line: toks[j].line,
                },
            );
        }
        j += 1;
        while let Some(tk) = toks.get(j) {
            match tk.tok {
                Tok::Punct(',') | Tok::Punct(';') | Tok::Punct(')') => break,
                _ => j += 1,
            }
        }
        if space == AddressClass::Reg && tok_at(toks, j) == Some(&Tok::Punct(',')) {
            j += 1;
            continue;
        }
        break;
    }
    j
}

/// `.section NAME { .b8 ..., .b32 LABEL+4, ... }`: the section's bytes, its label references
/// (each a relocation of `size` bytes) and the PTX line of each data directive. A section named
/// twice continues where it stopped. Returns the index after the `}`.
fn read_section(toks: &[Token], start: usize, d: &mut PtxDebug) -> Result<usize, ScanError> {
    let t = &toks[start];
    let name = match tok_at(toks, start + 1) {
        Some(Tok::Word(n)) => n.clone(),
        _ => {
            return Err(err(
                t.line,
                t.col,
                ".section needs a name (`.section .debug_info { ... }`)",
            ))
        }
    };
    if tok_at(toks, start + 2) != Some(&Tok::Punct('{')) {
        return Err(err(
            t.line,
            t.col,
            format!("`.section {name}` must be followed by `{{`"),
        ));
    }
    let idx = match d.sections.iter().position(|s| s.name == name) {
        Some(i) => i,
        None => {
            if d.sections.len() >= MAX_SECTIONS {
                return Err(err(
                    t.line,
                    t.col,
                    format!("more than {MAX_SECTIONS} sections"),
                ));
            }
            d.sections.push(Section {
                name: name.clone(),
                line: t.line,
                ..Section::default()
            });
            d.sections.len() - 1
        }
    };
    let sec = &mut d.sections[idx];
    let mut i = start + 3;
    loop {
        let Some(tk) = toks.get(i) else {
            return Err(err(
                t.line,
                t.col,
                format!("`.section {name}` is not closed with `}}`"),
            ));
        };
        match &tk.tok {
            Tok::Punct('}') => return Ok(i + 1),
            Tok::Word(w) if matches!(w.as_str(), ".b8" | ".b16" | ".b32" | ".b64") => {
                sec.lines.push((sec.bytes.len(), tk.line));
                i = data_list(toks, i + 1, w, sec)?;
            }
            Tok::Punct(';') => i += 1,
            other => {
                let found = match other {
                    Tok::Word(w) => format!("`{w}`"),
                    Tok::Str(s) => format!("\"{s}\""),
                    Tok::Punct(c) => format!("`{c}`"),
                };
                // PTX ISA 7.2 allows `label:` inside a DWARF section; no producer installed
                // here writes one, and this reader does not read them yet: say so.
                let label =
                    matches!(other, Tok::Word(_)) && tok_at(toks, i + 1) == Some(&Tok::Punct(':'));
                return Err(err(
                    tk.line,
                    tk.col,
                    format!(
                        "{found} in `.section {name}`: expected .b8, .b16, .b32, .b64 or `}}`{}",
                        if label {
                            " (a label inside a DWARF section, PTX ISA 7.2, is not read by gpucts yet)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
    }
}

/// One item of a data list: an integer, or a label with its addend.
enum Item {
    Value(i128),
    Label(String, i64),
}

/// The comma-separated items of a `.bN` data directive `w` from token `i`, appended to `sec`.
/// Returns the index after the last item.
fn data_list(toks: &[Token], mut i: usize, w: &str, sec: &mut Section) -> Result<usize, ScanError> {
    let size: usize = match w {
        ".b8" => 1,
        ".b16" => 2,
        ".b32" => 4,
        _ => 8,
    };
    while let Some(at) = toks.get(i) {
        let item;
        (item, i) = data_item(toks, i, w)?;
        push_item(sec, item, size, w, at)?;
        if tok_at(toks, i) == Some(&Tok::Punct(',')) {
            i += 1;
            continue;
        }
        break;
    }
    Ok(i)
}

/// The item at token `i` of a `w` list (`12`, `0x0`, `L0`, `L0+4`) and the index after it.
fn data_item(toks: &[Token], i: usize, w: &str) -> Result<(Item, usize), ScanError> {
    let item = &toks[i];
    let label = match &item.tok {
        Tok::Word(x) => match parse_int(x) {
            Some(v) => return Ok((Item::Value(v), i + 1)),
            None if is_identifier(x) && !matches!(x.as_str(), ".b8" | ".b16" | ".b32" | ".b64") => {
                x.clone()
            }
            None => {
                return Err(err(
                    item.line,
                    item.col,
                    format!("`{x}` in a {w} list: expected an integer or a label"),
                ))
            }
        },
        other => {
            return Err(err(
                item.line,
                item.col,
                format!("{other:?} in a {w} list: expected an integer or a label"),
            ))
        }
    };
    if tok_at(toks, i + 1) != Some(&Tok::Punct('+')) {
        return Ok((Item::Label(label, 0), i + 1));
    }
    let addend = match word(toks, i + 2).and_then(parse_int) {
        Some(a) => i64::try_from(a).unwrap_or(i64::MAX),
        None => {
            return Err(err(
                item.line,
                item.col,
                "a label's `+` needs an integer offset",
            ))
        }
    };
    Ok((Item::Label(label, addend), i + 3))
}

/// Appends an item of `size` bytes (token `at`) to `sec`: a value must fit the size (signed or
/// unsigned); a label needs `.b32` or `.b64` and becomes a reference, its bytes zero until
/// relocated. The section is capped at [`MAX_SECTION_BYTES`].
fn push_item(
    sec: &mut Section,
    item: Item,
    size: usize,
    w: &str,
    at: &Token,
) -> Result<(), ScanError> {
    if sec.bytes.len() + size > MAX_SECTION_BYTES {
        return Err(err(
            at.line,
            at.col,
            format!("section {} exceeds {MAX_SECTION_BYTES} bytes", sec.name),
        ));
    }
    match item {
        Item::Label(label, addend) => {
            if size < 4 {
                return Err(err(
                    at.line,
                    at.col,
                    format!("label `{label}` in a {w} list: a label needs .b32 or .b64"),
                ));
            }
            sec.refs.push(LabelRef {
                offset: sec.bytes.len(),
                size: size as u8,
                label,
                addend,
                line: at.line,
                col: at.col,
            });
            sec.bytes.extend(std::iter::repeat_n(0u8, size));
        }
        Item::Value(value) => {
            let bits = size * 8;
            let fits = if bits == 64 {
                value >= i128::from(i64::MIN) && value <= i128::from(u64::MAX)
            } else {
                value >= -(1i128 << (bits - 1)) && value < (1i128 << bits)
            };
            if !fits {
                return Err(err(
                    at.line,
                    at.col,
                    format!("{value} does not fit a {w} item"),
                ));
            }
            let v = value as u64;
            sec.bytes.extend_from_slice(&v.to_le_bytes()[..size]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sections_symbols_and_locs() {
        let ptx = ".version 8.0\n.target sm_90, debug\n.address_size 64\n.file 1 \"a.cu\"\n\
            .global .align 4 .b8 g[8];\n.shared .u32 s;\n.global .texref t;\n\
            .visible .func (.param .b32 r) f(\n .param .b32 f_param_0)\n{\n .reg .b32 %r<3>;\n\
            .loc 1 2 3\nL0:\n ld.param.u32 %r1, [f_param_0];\n ret;\n}\n\
            .section .debug_info\n{\n.b32 12 // len\n.b8 2, 0x0\n.b32 .debug_abbrev\n.b64 L0+4\n}\n";
        let d = scan(ptx).unwrap();
        assert!(d.target_debug);
        assert_eq!(d.variables["g"].space, AddressClass::Global);
        assert_eq!(d.variables["s"].space, AddressClass::Shared);
        assert_eq!(d.variables["t"].space, AddressClass::Tex);
        assert_eq!(d.variables["f_param_0"].space, AddressClass::Param);
        assert!(d.functions.contains_key("f"));
        assert!(d.labels.contains("L0"));
        assert!(d.has_register("%r2") && !d.has_register("%r3"));
        assert_eq!(d.files[&1].0, "a.cu");
        assert_eq!(d.locs[0].line, 2);
        let s = d.section(".debug_info").unwrap();
        assert_eq!(s.bytes.len(), 4 + 2 + 4 + 8);
        assert_eq!(&s.bytes[..6], &[12, 0, 0, 0, 2, 0]);
        assert_eq!(s.refs[1].label, "L0");
        assert_eq!(s.refs[1].addend, 4);
        assert_eq!(s.refs[1].offset, 10);
        assert_eq!(s.line_of(10), 22);
    }

    /// PTX ISA §5.1.4 (register declarations are local to a function): `%rd3` declared by the
    /// first function's `%rd<14>` stays declared after a second function's `%rd<2>`. libNVVM
    /// `-g -opt=0` output, whose kernels declare `%rd<N>` of different sizes, was flagged before.
    #[test]
    fn register_families_of_several_functions() {
        let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
            .entry a()\n{\n .reg .b64 %rd<14>;\n ret;\n}\n\
            .entry b()\n{\n .reg .b64 %rd<2>;\n ret;\n}\n";
        let d = scan(ptx).unwrap();
        assert!(d.has_register("%rd3") && d.has_register("%rd13"));
        assert!(!d.has_register("%rd14"));
    }

    #[test]
    fn bad_input_has_a_position() {
        let cases = [
            (
                ".section .debug_info {\n.b8 1, 300\n}",
                (2, 8),
                "does not fit",
            ),
            (
                ".section .debug_info {\n.b8 1, L\n}",
                (2, 8),
                "needs .b32 or .b64",
            ),
            (
                ".section .debug_info {\n.b32 1, +\n}",
                (2, 9),
                "expected an integer or a label",
            ),
            (".section .debug_info {\n.b8 1\n", (1, 1), "not closed"),
            (".section .debug_info\n.b8 1\n", (1, 1), "followed by"),
            (".file x", (1, 1), ".file needs"),
            ("/* open", (1, 1), "unterminated"),
        ];
        for (text, (l, c), want) in cases {
            let e = scan(text).unwrap_err();
            assert_eq!((e.line, e.col), (l, c), "{text}: {e}");
            assert!(e.message.contains(want), "{text}: {e}");
        }
    }

    /// The §5.2 table, read from the spec (not from the enum): each PTX state space's class
    /// code, `.shared::cta`/`.shared::cluster` in the shared class.
    #[test]
    fn state_spaces_convert_to_their_address_class() {
        let table = [
            (Space::Const, 4, "ADDR_const_space"),
            (Space::Global, 5, "ADDR_global_space"),
            (Space::Local, 6, "ADDR_local_space"),
            (Space::Param, 7, "ADDR_param_space"),
            (Space::Shared, 8, "ADDR_shared_space"),
            (Space::SharedCta, 8, "ADDR_shared_space"),
            (Space::SharedCluster, 8, "ADDR_shared_space"),
        ];
        for (space, code, name) in table {
            let c = AddressClass::of(space);
            assert_eq!(
                (c.address_class(), c.code_name()),
                (code, name),
                "{space:?}"
            );
            assert_eq!(AddressClass::from_class(u64::from(code)), Some(c));
        }
        assert_eq!(AddressClass::from_class(0), None);
        assert_eq!(AddressClass::from_class(13), None);
    }

    /// Words are what the old hand tokenizer made of them, now from the one PTX lexer:
    /// instructions and special registers with their modifiers, a signed number, a
    /// `.shared::cta` declaration, octal per the ISA's literal grammar (`010` is eight).
    #[test]
    fn words_and_literals_come_from_the_one_ptx_lexer() {
        let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.file 1 \"a.cu\"\n\
            .shared::cta .align 4 .b8 sc[4];\n.entry k()\n{\n .reg .b32 %r<2>;\n\
            .loc 1 010 0x3\n mov.u32 %r1, %tid.x;\n ret;\n}\n\
            .section .nv.debug_x\n{\n.b8 -1, 0b11\n}\n";
        let d = scan(ptx).unwrap();
        assert_eq!(d.variables["sc"].space, AddressClass::Shared);
        assert_eq!((d.locs[0].line, d.locs[0].col), (8, 3));
        assert!(d.locs[0].has_code);
        let sec = d
            .section(".nv.debug_x")
            .expect("a dotted section name is one word");
        assert_eq!(&sec.bytes[..2], &[0xff, 3]);
        let toks = tokenize(" ld.global.u8 %r1, [x+-4]; %tid.x").unwrap();
        let words: Vec<&str> = toks
            .iter()
            .filter_map(|t| match &t.tok {
                Tok::Word(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(words, ["ld.global.u8", "%r1", "x", "-4", "%tid.x"]);
        assert_eq!((toks[0].line, toks[0].col), (1, 2));
        // What the one lexer refuses is a positioned error here too.
        let e = scan(".version 8.0\n\u{0}").unwrap_err();
        assert_eq!((e.line, e.col), (2, 1), "{e}");
    }

    /// A label inside a section (PTX ISA 7.2) is refused at its position, saying what it is.
    #[test]
    fn a_label_inside_a_section_is_named() {
        let e = scan(".section .debug_str\n{\n$L__info_string0:\n.b8 102, 0\n}\n").unwrap_err();
        assert_eq!((e.line, e.col), (3, 1), "{e}");
        assert!(
            e.message
                .starts_with("`$L__info_string0` in `.section .debug_str`"),
            "{e}"
        );
        assert!(e.message.contains("PTX ISA 7.2"), "{e}");
    }
}
