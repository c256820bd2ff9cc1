//! `gpucts xcall check FILE...`: PTX files meant to be linked together must agree on every
//! cross-module call (ptx-interop 13.2 ch. 2, §2.3). For every `.extern .func` declaration
//! and every call site (direct, or indirect through a `.callprototype` whose target is known)
//! the caller's parameters are compared with the definition found in the files: number of
//! parameters, state space, type, size and alignment of each, and the return parameter.
//!
//! Exit status: 0 all agree, 1 a mismatch, 2 a file that cannot be read or parsed. Functions
//! defined in none of the files are listed, not failed; the ch. 3 system calls (`vprintf`,
//! `malloc`, `free`, `__assertfail`) are the driver's and are not listed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;

use crate::ptx::lexer::{tokenize, Token, TokenKind};
use crate::ptx::module::{FunctionDecl, ParamDecl, ParamSpace, PtxModule, PtxType};

/// The ch. 3 system calls: the driver defines them.
pub(crate) const SYSCALLS: &[&str] = &["vprintf", "malloc", "free", "__assertfail"];

/// Files larger than this are refused before reading.
pub(crate) const MAX_FILE_BYTES: u64 = 256 << 20;

/// A file that cannot be checked: `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {message}")]
pub struct InputError {
    pub file: String,
    pub line: u32,
    pub message: String,
}

/// A call site inside a function body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallSite {
    /// The function whose body holds the call.
    pub caller: String,
    pub line: u32,
    /// The direct target, or the function a register was loaded from (`mov.u64 %rd, f`).
    pub target: Option<String>,
    /// The `.callprototype` label of an indirect call.
    pub prototype: Option<String>,
    /// The declarations of the argument names, `None` where the name is not a `.param`
    /// declared in the body.
    pub args: Vec<Option<ParamDecl>>,
    pub rets: Vec<Option<ParamDecl>>,
    /// The argument and return names as written at the call.
    pub arg_names: Vec<String>,
    pub ret_names: Vec<String>,
    /// Position among the body's statements, to order the call against [`ParamAccess`]es.
    pub seq: usize,
}

/// A `ld.param` or `st.param` whose address is a `.param` variable plus a constant: how a
/// calling sequence moves bytes into and out of the parameter space (ptx-interop 13.2 §2.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamAccess {
    /// The function whose body holds the instruction.
    pub function: String,
    pub line: u32,
    /// Position among the body's statements.
    pub seq: usize,
    /// The `.param` variable addressed.
    pub name: String,
    /// The constant byte offset and the bytes moved (element size times vector length).
    pub offset: u64,
    pub bytes: u64,
    /// `st.param` (true) or `ld.param`.
    pub store: bool,
}

/// A `.param` variable whose address a body takes (`mov` or `cvta` of its name): its bytes
/// may then move through generic addresses, which a scan of `ld.param`/`st.param` cannot see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamAddressTaken {
    pub function: String,
    pub name: String,
    pub line: u32,
}

/// A `.callprototype` in a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prototype {
    pub line: u32,
    pub returns: Vec<ParamDecl>,
    pub params: Vec<ParamDecl>,
}

/// One PTX file as the checker reads it.
#[derive(Debug, Clone)]
pub struct PtxFile {
    pub name: String,
    pub module: PtxModule,
    pub calls: Vec<CallSite>,
    pub prototypes: HashMap<String, Prototype>,
    /// Every `ld.param`/`st.param` of a `.param` variable in a body, in text order.
    pub accesses: Vec<ParamAccess>,
    pub address_taken: Vec<ParamAddressTaken>,
}

impl PtxFile {
    /// Read and parse one file, with the limits checked first.
    pub fn read(path: &Path) -> Result<PtxFile, InputError> {
        let name = path.display().to_string();
        let err = |line, message: String| InputError {
            file: name.clone(),
            line,
            message,
        };
        let meta = std::fs::metadata(path).map_err(|e| err(0, format!("cannot read: {e}")))?;
        if meta.len() > MAX_FILE_BYTES {
            return Err(err(
                0,
                format!("{} bytes; at most {MAX_FILE_BYTES} are read", meta.len()),
            ));
        }
        let bytes = std::fs::read(path).map_err(|e| err(0, format!("cannot read: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            err(
                0,
                format!(
                    "not UTF-8 text (byte {}); PTX is ASCII",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        PtxFile::parse(&name, &text)
    }

    /// Parse PTX text named `name` (for messages).
    pub fn parse(name: &str, text: &str) -> Result<PtxFile, InputError> {
        let err = |line, message: String| InputError {
            file: name.to_string(),
            line,
            message,
        };
        let toks = tokenize(text);
        let Some(first) = toks.first() else {
            return Err(err(
                1,
                "empty file; a PTX module starts with `.version`".into(),
            ));
        };
        // PTX ISA: every module begins with `.version` (comments aside).
        if !first.is_directive(".version") {
            return Err(err(
                first.line,
                format!(
                    "expected `.version` (a PTX module starts with it), found `{}`",
                    first.text
                ),
            ));
        }
        let module = PtxModule::parse(text).map_err(|e| err(e.line, e.message))?;
        let mut seen: HashMap<&str, u32> = HashMap::new();
        for f in module.functions.iter().filter(|f| f.is_definition) {
            if let Some(first) = seen.insert(&f.name, f.line) {
                return Err(err(
                    f.line,
                    format!("function `{}` defined twice (first at line {first}); a module defines a function once", f.name),
                ));
            }
        }
        let scan = scan_bodies(&toks).map_err(|(l, m)| err(l, m))?;
        Ok(PtxFile {
            name: name.to_string(),
            module,
            calls: scan.calls,
            prototypes: scan.prototypes,
            accesses: scan.accesses,
            address_taken: scan.address_taken,
        })
    }
}

/// Parse a parameter declaration at `toks[*i]` (`.param`/`.reg`): `[.align N] .type [name]
/// [\[N\]]`. Returns `None` when it is not one.
fn param_at(toks: &[Token], i: &mut usize) -> Option<ParamDecl> {
    let start = toks.get(*i)?;
    let space = match start.text {
        ".param" => ParamSpace::Param,
        ".reg" => ParamSpace::Reg,
        _ => return None,
    };
    let line = start.line;
    let mut j = *i + 1;
    let mut align = None;
    let mut ty = None;
    while let Some(t) = toks.get(j) {
        if t.kind != TokenKind::Directive {
            break;
        }
        if t.text == ".align" {
            align = toks.get(j + 1).and_then(|n| n.text.parse::<u32>().ok());
            j += 2;
            continue;
        }
        match PtxType::from_directive(t.text) {
            Some(x) if ty.is_none() => ty = Some(x),
            _ => {}
        }
        j += 1;
    }
    let ty = ty?;
    let mut name = String::new();
    if let Some(t) = toks.get(j).filter(|t| t.kind == TokenKind::Ident) {
        name = t.text.to_string();
        j += 1;
    }
    let mut array = None;
    if toks.get(j).is_some_and(|t| t.is_punct('[')) {
        if toks.get(j + 1).is_some_and(|t| t.is_punct(']')) {
            array = Some(None);
            j += 2;
        } else {
            let n = toks.get(j + 1).and_then(|t| t.text.parse::<u64>().ok());
            array = Some(n);
            j += 3;
        }
    }
    *i = j;
    Some(ParamDecl {
        space,
        align,
        ty,
        vector: None,
        array,
        ptr: None,
        name,
        line,
    })
}

/// The items of a parenthesised, comma-separated list at `toks[*i]` (the `(`): `item` reads
/// one at `toks[*i]` and advances, or returns `None` (the token is skipped).
fn paren_list<T>(
    toks: &[Token],
    i: &mut usize,
    mut item: impl FnMut(&[Token], &mut usize) -> Option<T>,
) -> Vec<T> {
    let mut out = Vec::new();
    if !toks.get(*i).is_some_and(|t| t.is_punct('(')) {
        return out;
    }
    *i += 1;
    while let Some(t) = toks.get(*i) {
        if t.is_punct(')') {
            *i += 1;
            break;
        }
        if t.is_punct(',') {
            *i += 1;
            continue;
        }
        match item(toks, i) {
            Some(x) => out.push(x),
            None => *i += 1,
        }
    }
    out
}

/// `( decl, decl )` at `toks[*i]` (the `(`), for `.callprototype`.
fn decl_list(toks: &[Token], i: &mut usize) -> Vec<ParamDecl> {
    paren_list(toks, i, param_at)
}

/// Identifiers inside `( a, b )` at `toks[*i]`.
fn name_list(toks: &[Token], i: &mut usize) -> Vec<String> {
    paren_list(toks, i, |toks, i| {
        let t = toks.get(*i).filter(|t| t.kind == TokenKind::Ident)?;
        *i += 1;
        Some(t.text.to_string())
    })
}

#[derive(Default)]
struct Scan {
    calls: Vec<CallSite>,
    prototypes: HashMap<String, Prototype>,
    accesses: Vec<ParamAccess>,
    address_taken: Vec<ParamAddressTaken>,
}

/// Walk the function bodies: `.param` declarations, `.callprototype` labels, `mov` of a
/// function's address into a register, and `call` instructions.
fn scan_bodies(toks: &[Token]) -> Result<Scan, (u32, String)> {
    let mut scan = Scan::default();
    let mut depth = 0usize;
    let mut func: Option<String> = None;
    let mut pending: Option<String> = None;
    let mut decls: HashMap<String, ParamDecl> = HashMap::new();
    let mut reg_fn: HashMap<String, String> = HashMap::new();
    let mut seq = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if depth == 0 {
            if t.is_directive(".func") || t.is_directive(".entry") {
                if let Some(name) = function_name(toks, i + 1) {
                    pending = Some(name);
                }
            } else if t.is_punct(';') {
                pending = None;
            } else if t.is_punct('{') {
                depth = 1;
                func = pending.take();
                decls.clear();
                reg_fn.clear();
            }
            i += 1;
            continue;
        }
        if t.is_punct('{') || t.is_punct('}') {
            if t.is_punct('{') {
                depth += 1;
            } else {
                depth -= 1;
                func = func.filter(|_| depth > 0);
            }
            i += 1;
            continue;
        }
        let Some(caller) = func.clone() else {
            i += 1;
            continue;
        };
        if t.is_punct(';') {
            seq += 1;
        }
        if t.is_directive(".param") {
            let mut j = i;
            if let Some(p) = param_at(toks, &mut j) {
                decls.insert(p.name.clone(), p);
                i = j;
                continue;
            }
        }
        if let Some((name, proto, j)) = call_prototype(toks, i) {
            scan.prototypes.insert(name, proto);
            i = j;
        } else if t.kind == TokenKind::Ident && matches!(t.text, "mov" | "cvta") {
            if let Some(name) = address_operand(toks, i) {
                scan.address_taken.push(ParamAddressTaken {
                    function: caller.clone(),
                    name,
                    line: t.line,
                });
            }
            i = if t.text == "mov" {
                mov_function(toks, i, &mut reg_fn)
            } else {
                i + 1
            };
        } else if let Some((access, j)) = param_access(toks, i, &caller, seq) {
            scan.accesses.push(access);
            i = j;
        } else if t.kind == TokenKind::Ident && t.text == "call" {
            let (site, j) = call_site(toks, i, caller, &decls, &reg_fn, seq)?;
            scan.calls.push(site);
            i = j;
        } else {
            i += 1;
        }
    }
    Ok(scan)
}

/// The source operand of `mov`/`cvta` at `toks[i]` when it names a variable (not a register
/// or a number): `mov.b64 %rd1, f_param_0;` takes the address of `f_param_0`.
fn address_operand(toks: &[Token], i: usize) -> Option<String> {
    let mut j = i + 1;
    while toks.get(j).is_some_and(|n| n.kind == TokenKind::Directive) {
        j += 1;
    }
    let (d, c, s, e) = (
        toks.get(j)?,
        toks.get(j + 1)?,
        toks.get(j + 2)?,
        toks.get(j + 3)?,
    );
    (d.kind == TokenKind::Ident
        && c.is_punct(',')
        && s.kind == TokenKind::Ident
        && !s.text.starts_with('%')
        && e.is_punct(';'))
    .then(|| s.text.to_string())
}

/// `ld.param[.vN].T dst, [name+off]` or `st.param[.vN].T [name+off], src` at `toks[i]`: the
/// access and the index after the address. `None` for any other instruction, and for an
/// address that is not a name plus a constant (a register: the bytes moved are not known).
fn param_access(
    toks: &[Token],
    i: usize,
    function: &str,
    seq: usize,
) -> Option<(ParamAccess, usize)> {
    let t = &toks[i];
    let store = match t.text {
        "st" if t.kind == TokenKind::Ident => true,
        "ld" if t.kind == TokenKind::Ident => false,
        _ => return None,
    };
    let mut j = i + 1;
    let mut param = false;
    let mut lanes = 1u64;
    let mut elem = None;
    while let Some(d) = toks.get(j).filter(|n| n.kind == TokenKind::Directive) {
        match d.text {
            ".param" => param = true,
            ".v2" => lanes = 2,
            ".v4" => lanes = 4,
            ".v8" => lanes = 8,
            other => {
                if let Some(ty) = PtxType::from_directive(other) {
                    elem = Some(elem_bytes(ty));
                }
            }
        }
        j += 1;
    }
    if !param {
        return None;
    }
    let elem = elem?;
    // The address is the first `[ ... ]` of the statement.
    while let Some(n) = toks.get(j) {
        if n.is_punct('[') || n.is_punct(';') {
            break;
        }
        j += 1;
    }
    if !toks.get(j)?.is_punct('[') {
        return None;
    }
    let name = toks
        .get(j + 1)
        .filter(|n| n.kind == TokenKind::Ident && !n.text.starts_with('%'))?;
    let (offset, end) = match (toks.get(j + 2), toks.get(j + 3), toks.get(j + 4)) {
        (Some(c), _, _) if c.is_punct(']') => (0, j + 3),
        (Some(plus), Some(n), Some(c)) if plus.is_punct('+') && c.is_punct(']') => {
            (crate::ptx::literal::parse_int(n.text)?, j + 5)
        }
        _ => return None,
    };
    Some((
        ParamAccess {
            function: function.to_string(),
            line: t.line,
            seq,
            name: name.text.to_string(),
            offset,
            bytes: elem * lanes,
            store,
        },
        end,
    ))
}

/// The name of the function whose `.func`/`.entry` directive precedes `toks[j]`: the first
/// identifier after an optional return list.
fn function_name(toks: &[Token], mut j: usize) -> Option<String> {
    let mut paren = 0usize;
    while let Some(n) = toks.get(j) {
        if n.is_punct('(') {
            paren += 1;
        } else if n.is_punct(')') {
            paren = paren.saturating_sub(1);
        } else if paren == 0 && n.kind == TokenKind::Ident {
            return Some(n.text.to_string());
        }
        j += 1;
    }
    None
}

/// `LABEL: .callprototype (RETURNS) _ (PARAMS);` at `toks[i]` (PTX ISA `.callprototype`,
/// the signature of an indirect call): the label, the prototype and the index after it.
fn call_prototype(toks: &[Token], i: usize) -> Option<(String, Prototype, usize)> {
    let t = &toks[i];
    if !(t.kind == TokenKind::Ident
        && toks.get(i + 1).is_some_and(|n| n.is_punct(':'))
        && toks
            .get(i + 2)
            .is_some_and(|n| n.is_directive(".callprototype")))
    {
        return None;
    }
    let mut j = i + 3;
    let returns = if toks.get(j).is_some_and(|n| n.is_punct('(')) {
        decl_list(toks, &mut j)
    } else {
        Vec::new()
    };
    // `_` stands for the function name.
    if toks.get(j).is_some_and(|n| n.text == "_") {
        j += 1;
    }
    let params = decl_list(toks, &mut j);
    let proto = Prototype {
        line: t.line,
        returns,
        params,
    };
    Some((t.text.to_string(), proto, j))
}

/// `mov.u64 %rd2, f;` at `toks[i]`: register `%rd2` now holds function `f`'s address (what an
/// indirect `call %rd2` resolves to); any other `mov` to a register forgets it. Returns the
/// index after the modifiers.
fn mov_function(toks: &[Token], i: usize, reg_fn: &mut HashMap<String, String>) -> usize {
    let mut j = i + 1;
    while toks.get(j).is_some_and(|n| n.kind == TokenKind::Directive) {
        j += 1;
    }
    if let (Some(d), Some(c), Some(s), Some(e)) = (
        toks.get(j),
        toks.get(j + 1),
        toks.get(j + 2),
        toks.get(j + 3),
    ) {
        if d.kind == TokenKind::Ident
            && c.is_punct(',')
            && s.kind == TokenKind::Ident
            && !s.text.starts_with('%')
            && e.is_punct(';')
        {
            reg_fn.insert(d.text.to_string(), s.text.to_string());
        } else if d.kind == TokenKind::Ident {
            reg_fn.remove(d.text);
        }
    }
    j
}

/// `call (RETS), TARGET, (ARGS), PROTOTYPE;` at `toks[i]` in `caller`'s body: the call site with
/// its arguments' and returns' `.param` declarations, an indirect target resolved through the
/// `mov` that loaded it, and the index after it.
fn call_site(
    toks: &[Token],
    i: usize,
    caller: String,
    decls: &HashMap<String, ParamDecl>,
    reg_fn: &HashMap<String, String>,
    seq: usize,
) -> Result<(CallSite, usize), (u32, String)> {
    let line = toks[i].line;
    let mut j = i + 1;
    while toks.get(j).is_some_and(|n| n.kind == TokenKind::Directive) {
        j += 1;
    }
    let mut rets = Vec::new();
    if toks.get(j).is_some_and(|n| n.is_punct('(')) {
        rets = name_list(toks, &mut j);
        if toks.get(j).is_some_and(|n| n.is_punct(',')) {
            j += 1;
        }
    }
    let Some(target) = toks.get(j).filter(|n| n.kind == TokenKind::Ident) else {
        return Err((line, "expected a call target after `call`".into()));
    };
    j += 1;
    let mut args = Vec::new();
    if toks.get(j).is_some_and(|n| n.is_punct(',')) {
        j += 1;
        if toks.get(j).is_some_and(|n| n.is_punct('(')) {
            args = name_list(toks, &mut j);
        }
    }
    let mut prototype = None;
    if toks.get(j).is_some_and(|n| n.is_punct(',')) {
        if let Some(p) = toks.get(j + 1).filter(|n| n.kind == TokenKind::Ident) {
            prototype = Some(p.text.to_string());
            j += 2;
        }
    }
    let direct = !target.text.starts_with('%');
    let resolved = if direct {
        Some(target.text.to_string())
    } else {
        reg_fn.get(target.text).cloned()
    };
    let site = CallSite {
        caller,
        line,
        target: resolved,
        prototype,
        args: args.iter().map(|a| decls.get(a).cloned()).collect(),
        rets: rets.iter().map(|a| decls.get(a).cloned()).collect(),
        arg_names: args,
        ret_names: rets,
        seq,
    };
    Ok((site, j))
}

/// A declaration as the messages show it: `.b64`, `.align 8 .b8[16]`, `.reg .b32`.
pub(crate) fn show(p: &ParamDecl) -> String {
    let mut s = String::new();
    if p.space == ParamSpace::Reg {
        s += ".reg ";
    }
    if let Some(a) = p.align {
        s += &format!(".align {a} ");
    }
    s += p.ty.name();
    match p.array {
        Some(Some(n)) => s += &format!("[{n}]"),
        Some(None) => s += "[]",
        None => {}
    }
    s
}

fn elem_bytes(t: PtxType) -> u64 {
    u64::from(t.bits().unwrap_or(8)).div_ceil(8).max(1)
}

/// Whether two declarations of one parameter agree (§2.3): the same state space; scalars
/// judged by `ptx::table::judge_pair`, the judge `abi.params` uses against the source type
/// (`.bN` is the untyped form of an integer; the other signedness departs from note A's
/// extension; `.bN` against `.fN` departs from row C: nvJitLink 12.9 links a `.b64` extern
/// against a `.f64` definition but reports "Prototype doesn't match"); arrays of one byte size
/// and alignment (an absent `.align` is the element's).
pub fn agree(a: &ParamDecl, b: &ParamDecl) -> bool {
    if a.space != b.space || a.array.is_some() != b.array.is_some() {
        return false;
    }
    if a.array.is_some() {
        let size = |p: &ParamDecl| p.array_len().map(|n| n * elem_bytes(p.ty));
        let align = |p: &ParamDecl| u64::from(p.align.unwrap_or(0)).max(elem_bytes(p.ty));
        return size(a) == size(b) && align(a) == align(b);
    }
    a.vector == b.vector && crate::ptx::table::judge_pair(a.ty, b.ty).conforms()
}

/// One disagreement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub file: String,
    pub line: u32,
    /// The callee.
    pub function: String,
    pub message: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: function {}, {}",
            self.file, self.line, self.function, self.message
        )
    }
}

/// A function called or declared but defined in none of the files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    pub file: String,
    pub line: u32,
    pub function: String,
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: function {}: not defined in the files given (not checked)",
            self.file, self.line, self.function
        )
    }
}

/// The result of checking a set of files.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub mismatches: Vec<Mismatch>,
    pub unresolved: Vec<Unresolved>,
    /// How many declarations and call sites were compared with a definition.
    pub compared: usize,
}

struct Def<'a> {
    file: &'a str,
    f: &'a FunctionDecl,
}

/// Compare `who`'s lists with the definition; push mismatches.
fn compare_lists(
    out: &mut Vec<Mismatch>,
    site: (&str, u32, &str),
    verb: &str,
    rets: &[Option<ParamDecl>],
    params: &[Option<ParamDecl>],
    def: &Def,
) {
    let (file, line, function) = site;
    let at = format!("{}:{}", def.file, def.f.line);
    let push = |out: &mut Vec<Mismatch>, message: String| {
        out.push(Mismatch {
            file: file.to_string(),
            line,
            function: function.to_string(),
            message,
        })
    };
    if params.len() != def.f.params.len() {
        push(
            out,
            format!(
                "caller {verb} {} parameters, callee ({at}) takes {}",
                params.len(),
                def.f.params.len()
            ),
        );
    } else {
        for (k, (a, b)) in params.iter().zip(&def.f.params).enumerate() {
            if let Some(a) = a {
                if !agree(a, b) {
                    push(
                        out,
                        format!(
                            "parameter {}: caller {verb} {}, callee ({at}) takes {}",
                            k + 1,
                            show(a),
                            show(b)
                        ),
                    );
                }
            }
        }
    }
    match (rets, def.f.returns.as_slice()) {
        ([], []) => {}
        ([Some(a)], [b]) => {
            if !agree(a, b) {
                push(
                    out,
                    format!(
                        "return value: caller expects {}, callee ({at}) returns {}",
                        show(a),
                        show(b)
                    ),
                );
            }
        }
        ([None], [_]) => {}
        (r, d) => push(
            out,
            format!(
                "return value: caller expects {} return parameters, callee ({at}) returns {}",
                r.len(),
                d.len()
            ),
        ),
    }
}

/// Declarations all known (a prototype's, unlike a call site's argument names).
fn known(decls: &[ParamDecl]) -> Vec<Option<ParamDecl>> {
    decls.iter().cloned().map(Some).collect()
}

/// Check a set of parsed files against each other. Two non-weak definitions of one function
/// in different files are an input error (the link would fail with a duplicate symbol).
pub fn check(files: &[PtxFile]) -> Result<Report, InputError> {
    let defs = definitions(files)?;
    let mut report = Report::default();
    let mut listed = BTreeSet::new();
    let mut unresolved = |report: &mut Report, file: &str, line: u32, name: &str| {
        if !SYSCALLS.contains(&name) && listed.insert((file.to_string(), name.to_string())) {
            report.unresolved.push(Unresolved {
                file: file.to_string(),
                line,
                function: name.to_string(),
            });
        }
    };
    for file in files {
        // Prototypes: each declaration against the definition.
        for f in file.module.functions.iter().filter(|f| !f.is_definition) {
            match defs.get(f.name.as_str()) {
                Some(def) => {
                    report.compared += 1;
                    compare_lists(
                        &mut report.mismatches,
                        (&file.name, f.line, &f.name),
                        "declares",
                        &known(&f.returns),
                        &known(&f.params),
                        def,
                    );
                }
                None => unresolved(&mut report, &file.name, f.line, &f.name),
            }
        }
        for c in &file.calls {
            let proto = c.prototype.as_ref().and_then(|p| file.prototypes.get(p));
            if let Some(p) = proto {
                against_prototype(&mut report.mismatches, file, c, p);
            }
            let Some(target) = &c.target else { continue };
            match defs.get(target.as_str()) {
                Some(def) => {
                    report.compared += 1;
                    compare_lists(
                        &mut report.mismatches,
                        (&file.name, c.line, target),
                        "passes",
                        &c.rets,
                        &c.args,
                        def,
                    );
                    if let Some(p) = proto {
                        compare_lists(
                            &mut report.mismatches,
                            (&file.name, p.line, target),
                            "(.callprototype) declares",
                            &known(&p.returns),
                            &known(&p.params),
                            def,
                        );
                    }
                }
                None => {
                    let declared = file.module.functions.iter().any(|f| f.name == *target);
                    if !declared || c.prototype.is_none() {
                        unresolved(&mut report, &file.name, c.line, target)
                    }
                }
            }
        }
    }
    report
        .mismatches
        .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    report.mismatches.dedup();
    Ok(report)
}

/// Every function defined in `files`, by name, with the file defining it; a name defined twice
/// is an error unless both definitions are `.weak`.
fn definitions(files: &[PtxFile]) -> Result<BTreeMap<&str, Def<'_>>, InputError> {
    let mut defs: BTreeMap<&str, Def> = BTreeMap::new();
    for file in files {
        for f in file.module.functions.iter().filter(|f| f.is_definition) {
            if let Some(prev) = defs.get(f.name.as_str()) {
                if !(f.linkage.is_weak && prev.f.linkage.is_weak) {
                    return Err(InputError {
                        file: file.name.clone(),
                        line: f.line,
                        message: format!(
                            "function `{}` defined twice (first at {}:{}); only .weak definitions may repeat",
                            f.name, prev.file, prev.f.line
                        ),
                    });
                }
                continue;
            }
            defs.insert(
                &f.name,
                Def {
                    file: &file.name,
                    f,
                },
            );
        }
    }
    Ok(defs)
}

/// An indirect call against its own `.callprototype`: as many arguments as it declares, each
/// agreeing with its parameter.
fn against_prototype(out: &mut Vec<Mismatch>, file: &PtxFile, c: &CallSite, p: &Prototype) {
    let pname = c.prototype.as_deref().unwrap_or("");
    let mismatch = |message: String| Mismatch {
        file: file.name.clone(),
        line: c.line,
        function: format!("(indirect, .callprototype {pname})"),
        message,
    };
    if c.args.len() != p.params.len() {
        out.push(mismatch(format!(
            "caller passes {} parameters, prototype (line {}) declares {}",
            c.args.len(),
            p.line,
            p.params.len()
        )));
        return;
    }
    for (k, (a, b)) in c.args.iter().zip(&p.params).enumerate() {
        if let Some(a) = a.as_ref().filter(|a| !agree(a, b)) {
            out.push(mismatch(format!(
                "parameter {}: caller passes {}, prototype (line {}) declares {}",
                k + 1,
                show(a),
                p.line,
                show(b)
            )));
        }
    }
}

/// What `gpucts xcall check` found: the files compared and the report, or why they could not be.
#[derive(Debug)]
pub enum CheckRun {
    /// Every file read and the calls compared with their definitions.
    Compared { files: usize, report: Report },
    /// Files that could not be read or that break the input rules (each with file and line).
    Unusable(Vec<InputError>),
}

impl CheckRun {
    /// The contract's exit status: 0 when every declaration and call site agrees with its
    /// definition, 1 on a mismatch, 2 when the input was unusable.
    pub(crate) fn exit_code(&self) -> i32 {
        match self {
            CheckRun::Compared { report, .. } if report.mismatches.is_empty() => 0,
            CheckRun::Compared { .. } => 1,
            CheckRun::Unusable(_) => 2,
        }
    }

    /// The standard output: each mismatch and unresolved function, or the agreement summary.
    pub fn stdout(&self) -> String {
        let CheckRun::Compared { files, report } = self else {
            return String::new();
        };
        let mut out = String::new();
        for m in &report.mismatches {
            out += &format!("{m}\n");
        }
        for u in &report.unresolved {
            out += &format!("{u}\n");
        }
        if report.mismatches.is_empty() {
            out += &format!(
                "{files} files agree: {} declarations and call sites compared with their definitions\n",
                report.compared
            );
        }
        out
    }

    /// The standard error: one line per unusable input.
    pub fn stderr(&self) -> String {
        match self {
            CheckRun::Unusable(errors) => errors.iter().map(|e| format!("{e}\n")).collect(),
            CheckRun::Compared { .. } => String::new(),
        }
    }
}

/// The command: read the files and compare every call with its definition.
pub fn run(paths: &[std::path::PathBuf]) -> CheckRun {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        match PtxFile::read(p) {
            Ok(f) => files.push(f),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return CheckRun::Unusable(errors);
    }
    match check(&files) {
        Ok(report) => CheckRun::Compared {
            files: files.len(),
            report,
        },
        Err(e) => CheckRun::Unusable(vec![e]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CALLEE: &str = ".version 8.5\n.target sm_90\n.address_size 64\n\n.visible .func (.param .b32 func_retval0) f(\n\t.param .b32 f_param_0,\n\t.param .align 8 .b8 f_param_1[16]\n)\n{\n\tret;\n}\n";

    fn caller(second: &str) -> String {
        let (ty, arr) = match second.strip_suffix("[16]") {
            Some(t) => (t, "[16]"),
            None => (second, ""),
        };
        format!(".version 8.5\n.target sm_90\n.address_size 64\n.extern .func (.param .b32 func_retval0) f(.param .b32 a, {ty} b{arr});\n.visible .entry k()\n{{\n\t{{\n\t.param .b32 param0;\n\t{ty} param1{arr};\n\t.param .b32 retval0;\n\tcall.uni (retval0), f, (param0, param1);\n\t}}\n\tret;\n}}\n")
    }

    fn run_on(a: &str, b: &str) -> Result<Report, InputError> {
        check(&[
            PtxFile::parse("caller.ptx", a)?,
            PtxFile::parse("other.ptx", b)?,
        ])
    }

    /// The command's exit status follows the contract: 0 agree, 1 mismatch, 2 unusable input.
    #[test]
    fn the_command_exits_by_the_contract() {
        let d = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let p = d.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let callee = write("callee.ptx", CALLEE);
        let good = write("good.ptx", &caller(".param .align 8 .b8[16]"));
        let bad = write("bad.ptx", &caller(".param .b64"));
        let agree = run(&[good, callee.clone()]);
        assert_eq!(agree.exit_code(), 0);
        assert!(
            agree.stdout().starts_with("2 files agree: 2 declarations"),
            "{}",
            agree.stdout()
        );
        assert_eq!(agree.stderr(), "");
        let differ = run(&[bad, callee.clone()]);
        assert_eq!(differ.exit_code(), 1);
        assert_eq!(differ.stdout().lines().count(), 2, "{}", differ.stdout());
        let missing = d.path().join("absent.ptx");
        let unusable = run(&[missing, callee]);
        assert_eq!(unusable.exit_code(), 2);
        assert_eq!(unusable.stdout(), "");
        assert!(
            unusable.stderr().contains("absent.ptx:0: cannot read"),
            "{}",
            unusable.stderr()
        );
    }

    /// `abi.params` (a producer's declaration against its source type) and `xcall` (the
    /// table's declaration against a producer's, either side the caller) give one verdict on
    /// the same pairs. Expected verdicts are the §2.3 table's: integral types `.u32` if
    /// unsigned or `.s32` if signed (64-bit: `.u64`/`.s64`), pointers `.u64`, floating-point
    /// `.f32`/`.f64`; `.bN` of the width is accepted for the integer and pointer rows only.
    #[test]
    fn abi_params_and_xcall_judge_scalars_alike() {
        use crate::abi::paramgen::{check_decl, expected_decl, signatures};
        use crate::ptx::AddressSize;
        let table = [
            // (source type, the table's PTX type, declared type, conforms)
            ("uint", ".u32", ".u32", true),
            ("uint", ".u32", ".b32", true),
            ("uint", ".u32", ".s32", false),
            ("ushort", ".u32", ".s32", false),
            ("uchar", ".u32", ".s32", false),
            ("int", ".s32", ".s32", true),
            ("int", ".s32", ".b32", true),
            ("int", ".s32", ".u32", false),
            ("int", ".s32", ".f32", false),
            ("ullong", ".u64", ".s64", false),
            ("ullong", ".u64", ".b64", true),
            ("llong", ".s64", ".b32", false),
            ("ptr", ".u64", ".u64", true),
            ("ptr", ".u64", ".b64", true),
            ("ptr", ".u64", ".s64", false),
            ("ptr", ".u64", ".u32", false),
            ("float", ".f32", ".f32", true),
            ("float", ".f32", ".b32", false),
            ("float", ".f32", ".u32", false),
            ("float", ".f32", ".f64", false),
            ("double", ".f64", ".f64", true),
            ("double", ".f64", ".b64", false),
            ("double", ".f64", ".s64", false),
        ];
        let sigs = signatures();
        let decl = |ty: &str| {
            let m =
                PtxModule::parse(&format!(".address_size 64\n.func f(.param {ty} x);")).unwrap();
            m.functions[0].params[0].clone()
        };
        for (source, table_ty, declared, conforms) in table {
            let class = sigs.iter().find(|s| s.id == source).unwrap().class;
            assert_eq!(
                expected_decl(class, AddressSize::A64),
                format!(".param {table_ty}"),
                "{source}"
            );
            let abi = check_decl(class, &decl(declared), AddressSize::A64);
            assert_eq!(
                abi.is_empty(),
                conforms,
                "abi.params: {source} as {declared}: {abi:?}"
            );
            let (row, d) = (decl(table_ty), decl(declared));
            assert_eq!(
                agree(&row, &d),
                conforms,
                "xcall: {table_ty} calls {declared}"
            );
            assert_eq!(
                agree(&d, &row),
                conforms,
                "xcall: {declared} calls {table_ty}"
            );
        }
    }

    #[test]
    fn matching_pair_agrees() {
        let r = run_on(&caller(".param .align 8 .b8[16]"), CALLEE).unwrap();
        assert!(r.mismatches.is_empty(), "{:?}", r.mismatches);
        assert_eq!(r.compared, 2);
    }

    /// The message format of the issue, for the declaration and for the call site.
    #[test]
    fn mismatch_names_both_sides() {
        let text = caller(".param .b64");
        let r = run_on(&text, CALLEE).unwrap();
        let got: Vec<String> = r.mismatches.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            got,
            vec![
                "caller.ptx:4: function f, parameter 2: caller declares .b64, callee (other.ptx:5) takes .align 8 .b8[16]",
                "caller.ptx:11: function f, parameter 2: caller passes .b64, callee (other.ptx:5) takes .align 8 .b8[16]",
            ]
        );
    }

    #[test]
    fn alignment_and_class_matter_untyped_bits_do_not() {
        let r = run_on(&caller(".param .align 4 .b8[16]"), CALLEE).unwrap();
        assert_eq!(r.mismatches.len(), 2, "{:?}", r.mismatches);
        let d = |t: &str| {
            PtxModule::parse(&format!(".version 8.5\n.func f({t});"))
                .unwrap()
                .functions[0]
                .params[0]
                .clone()
        };
        assert!(agree(&d(".param .b32 x"), &d(".param .s32 x")));
        assert!(!agree(&d(".param .f32 x"), &d(".param .b32 x")));
        assert!(!agree(&d(".param .b64 x"), &d(".param .f64 x")));
        assert!(agree(&d(".param .b64 x"), &d(".param .u64 x")));
        assert!(!agree(&d(".param .f32 x"), &d(".param .s32 x")));
        assert!(!agree(&d(".param .s32 x"), &d(".param .u32 x")));
        assert!(!agree(&d(".param .b32 x"), &d(".param .b64 x")));
        assert!(!agree(&d(".param .b32 x"), &d(".reg .b32 x")));
        assert!(agree(&d(".param .b8 x[4]"), &d(".param .align 1 .b8 x[4]")));
        assert!(!agree(
            &d(".param .align 2 .b8 x[4]"),
            &d(".param .align 1 .b8 x[4]")
        ));
    }

    #[test]
    fn unresolved_is_listed_syscalls_are_not() {
        let text = ".version 8.5\n.address_size 64\n.extern .func (.param .b32 s) vprintf(.param .b64 a, .param .b64 b);\n.extern .func g(.param .b32 x);\n.visible .entry k()\n{\n\t{\n\t.param .b32 param0;\n\tcall.uni g, (param0);\n\t}\n\tret;\n}\n";
        let r = check(&[PtxFile::parse("a.ptx", text).unwrap()]).unwrap();
        assert!(r.mismatches.is_empty());
        let got: Vec<String> = r.unresolved.iter().map(|u| u.to_string()).collect();
        assert_eq!(
            got,
            vec!["a.ptx:4: function g: not defined in the files given (not checked)"]
        );
    }

    #[test]
    fn indirect_calls_are_checked_through_the_prototype() {
        let text = ".version 8.5\n.address_size 64\n.extern .func f(.param .b32 x);\n.visible .entry k()\n{\n\t.reg .b64 %rd<3>;\n\t{\n\t.param .b64 param0;\n\tp0: .callprototype _ (.param .b64 _);\n\tmov.u64 %rd1, f;\n\tcall %rd1, (param0), p0;\n\t}\n\tret;\n}\n";
        let callee =
            ".version 8.5\n.address_size 64\n.visible .func f(.param .b32 x)\n{\n\tret;\n}\n";
        let r = run_on(text, callee).unwrap();
        let got: Vec<String> = r.mismatches.iter().map(|m| m.to_string()).collect();
        assert_eq!(
            got,
            vec![
                "caller.ptx:9: function f, parameter 1: caller (.callprototype) declares .b64, callee (other.ptx:3) takes .b32",
                "caller.ptx:11: function f, parameter 1: caller passes .b64, callee (other.ptx:3) takes .b32",
            ]
        );
    }

    #[test]
    fn bad_input_is_an_error_with_a_line() {
        let e = PtxFile::parse("e.ptx", "").unwrap_err();
        assert_eq!(
            e.to_string(),
            "e.ptx:1: empty file; a PTX module starts with `.version`"
        );
        let e = PtxFile::parse("g.ptx", "\n\nhello world\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let e = PtxFile::parse("u.ptx", ".version 8.5\n.func f()\n{\n\tret;\n").unwrap_err();
        // The body is still open at the end of the file, which is line 5 (after four lines).
        assert!(e.to_string().starts_with("u.ptx:5: expected `}`"), "{e}");
        let twice = ".version 8.5\n.func f()\n{\n}\n.func f()\n{\n}\n";
        let e = PtxFile::parse("d.ptx", twice).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("d.ptx:5: function `f` defined twice"),
            "{e}"
        );
        let one = ".version 8.5\n.visible .func f()\n{\n}\n";
        let e = check(&[
            PtxFile::parse("a.ptx", one).unwrap(),
            PtxFile::parse("b.ptx", one).unwrap(),
        ])
        .unwrap_err();
        assert_eq!(e.to_string(), "b.ptx:2: function `f` defined twice (first at a.ptx:2); only .weak definitions may repeat");
    }
}
