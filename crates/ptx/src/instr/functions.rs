//! The functions of a PTX text and their bodies as instructions, found by a scan of the text
//! that needs no full module reader (the mapping and litmus checks read generated code).

use super::{parse_instruction, InstrError, Instruction};

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
        // A trailing brace closes a nested scope, unless it closes a vector operand
        // (`st.local.v4.u8 [%rd1], {%rs1, %rs2, %rs3, %rs4}`).
        let s = if s.matches('{').count() >= s.matches('}').count() {
            s
        } else {
            s.trim_end_matches(['{', '}']).trim()
        };
        if s.is_empty() || s.starts_with('.') {
            continue;
        }
        out.push(parse_instruction(s, first_line)?);
    }
    Ok(out)
}
