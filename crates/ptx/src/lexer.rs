//! PTX tokenizer: turns PTX text into tokens that carry their 1-based source line and column.
//!
//! Comments (`//` to end of line, `/* … */`) are dropped. Everything else becomes a token, so
//! the parsers above never see raw text. [`lex`] is the checked entry point: it refuses what
//! ptxas refuses before it parses anything (measured with ptxas 12.9.86): a NUL byte (ptxas
//! stops reading there and silently loses the rest of the file), a byte-order mark or any other
//! non-ASCII byte outside comments and strings ("Unexpected non-ASCII character"), and an
//! unterminated `/* … */` comment or string ("unexpected EOF while scanning"). Non-ASCII bytes
//! inside comments and strings, which ptxas refuses too, are returned as notes so that a linter
//! can report them without losing the rest of the file. [`tokenize`] is the lenient form for
//! callers that read generated text: it never fails.

use std::fmt;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// `.version`, `.param`, `.b32`, `.shared::cta` — a dot followed by a name.
    Directive,
    /// Names, including `%r1`, `$L__BB0_1`, `_Z3fooi`, `sm_90`.
    Ident,
    /// Integer or floating literal as written: `64`, `0x1F`, `8.5`, `0f3F800000`, `1U`.
    Number,
    /// A double-quoted string, quotes included in the text.
    Str,
    /// Any other single character: `( ) { } [ ] , ; : = + - < > @ ! |` …
    Punct,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token<'a> {
    pub kind: TokenKind,
    pub text: &'a str,
    /// 1-based source line of the token's first character.
    pub line: u32,
    /// 1-based column (in bytes) of the token's first character.
    pub col: u32,
}

impl Token<'_> {
    pub fn is_punct(&self, c: char) -> bool {
        self.kind == TokenKind::Punct && self.text.len() == c.len_utf8() && self.text.starts_with(c)
    }

    pub fn is_directive(&self, name: &str) -> bool {
        self.kind == TokenKind::Directive && self.text == name
    }
}

/// Why a text cannot be tokenized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LexErrorKind {
    #[error(
        "NUL byte; PTX is ASCII text (ptxas stops reading at a NUL and loses the rest of the file)"
    )]
    Nul,
    #[error("byte-order mark; PTX is ASCII text (ptxas 12.9: \"Unexpected non-ASCII character\"): save the file without a BOM")]
    ByteOrderMark,
    #[error("non-ASCII byte 0x{0:02X}; PTX is ASCII text (ptxas 12.9: \"Unexpected non-ASCII character\")")]
    NonAscii(u8),
    #[error("control character 0x{0:02X}; PTX allows only printable ASCII, tab and line ends")]
    Control(u8),
    #[error("unterminated `/*` comment: no `*/` before the end of the file (ptxas: unexpected EOF while scanning)")]
    UnterminatedComment,
    #[error("unterminated string: no closing `\"` on its line")]
    UnterminatedString,
}

/// A [`LexErrorKind`] at a 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{col}: {kind}")]
pub struct LexError {
    pub line: u32,
    pub col: u32,
    pub kind: LexErrorKind,
}

/// A non-ASCII byte inside a comment or string: ptxas refuses the file, the reader reads on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NonAsciiNote {
    pub line: u32,
    pub col: u32,
    pub byte: u8,
}

/// The tokens of a text and what [`lex`] noted without failing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lexed<'a> {
    pub tokens: Vec<Token<'a>>,
    /// Non-ASCII bytes inside comments or strings (the first of each line).
    pub non_ascii: Vec<NonAsciiNote>,
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenKind::Directive => "directive",
            TokenKind::Ident => "identifier",
            TokenKind::Number => "number",
            TokenKind::Str => "string",
            TokenKind::Punct => "punctuation",
        })
    }
}

/// PTX identifiers: `[a-zA-Z_$%][a-zA-Z0-9_$]*` (PTX ISA "Identifiers"), plus the `.`
/// that never starts one.
fn ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c == b'$' || c == b'%'
}

fn ident_continue(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// Tokenize all of `src`, leniently: never fails (an unterminated comment or string ends at the
/// end of the input, a byte it does not know is a one-character [`TokenKind::Punct`]).
pub fn tokenize(src: &str) -> Vec<Token<'_>> {
    run(src, false).map(|l| l.tokens).unwrap_or_default()
}

/// Tokenize all of `src`, refusing what ptxas refuses at the character level (see the module
/// documentation).
pub fn lex(src: &str) -> Result<Lexed<'_>, LexError> {
    run(src, true)
}

fn run(src: &str, strict: bool) -> Result<Lexed<'_>, LexError> {
    let mut lx = Lexer::new(src, strict);
    let mut tokens = Vec::with_capacity(src.len() / 4);
    while let Some(t) = lx.next_token()? {
        tokens.push(t);
    }
    Ok(Lexed {
        tokens,
        non_ascii: lx.non_ascii,
    })
}

/// A pull lexer: one token at a time, so a reader's memory does not grow with the file.
#[derive(Debug, Clone)]
pub(crate) struct Lexer<'a> {
    src: &'a str,
    /// The bytes the checks read: `src`'s, or the file's own bytes when they are not UTF-8
    /// (see [`Lexer::with_raw`]).
    raw: &'a [u8],
    i: usize,
    line: u32,
    /// Byte index where the current line starts, for columns.
    line_start: usize,
    strict: bool,
    started: bool,
    /// Non-ASCII bytes inside comments or strings seen so far (strict mode).
    pub non_ascii: Vec<NonAsciiNote>,
}

impl<'a> Lexer<'a> {
    /// A lexer over `src`; `strict` refuses what ptxas refuses (see the module documentation).
    pub fn new(src: &'a str, strict: bool) -> Lexer<'a> {
        Lexer {
            src,
            raw: src.as_bytes(),
            i: 0,
            line: 1,
            line_start: 0,
            strict,
            started: false,
            non_ascii: Vec::new(),
        }
    }

    /// A lexer over `src` whose checks read `raw`, the file's bytes, where `src` is them with
    /// each byte that is not UTF-8 replaced by one ASCII SUB (0x1A) ([`ascii_substitute`]):
    /// offsets and columns agree, and a refused byte is reported with its own value.
    pub fn with_raw(src: &'a str, raw: &'a [u8], strict: bool) -> Lexer<'a> {
        let mut l = Lexer::new(src, strict);
        if raw.len() == src.len() {
            l.raw = raw;
        }
        l
    }

    /// Line and column of the next unread byte (the end of the input once exhausted).
    pub fn position(&self) -> (u32, u32) {
        (self.line, self.col(self.i))
    }

    fn col(&self, i: usize) -> u32 {
        u32::try_from(i - self.line_start + 1).unwrap_or(u32::MAX)
    }

    fn newline(&mut self, next: usize) {
        self.line = self.line.saturating_add(1);
        self.line_start = next;
    }

    /// The next token, `None` at the end of the input.
    pub fn next_token(&mut self) -> Result<Option<Token<'a>>, LexError> {
        let b = self.raw;
        if !self.started {
            self.started = true;
            if self.strict && b.starts_with(&[0xEF, 0xBB, 0xBF]) {
                return Err(fail(1, 1, LexErrorKind::ByteOrderMark));
            }
        }
        while self.i < b.len() {
            let i = self.i;
            let c = b[i];
            match c {
                b'\n' => {
                    self.i += 1;
                    self.newline(self.i);
                }
                b'\r' if b.get(i + 1) != Some(&b'\n') => {
                    // A CR-only line end counts as a line.
                    self.i += 1;
                    self.newline(self.i);
                }
                b' ' | b'\t' | b'\r' | 0x0B | 0x0C => self.i += 1,
                b'/' if b.get(i + 1) == Some(&b'/') => self.line_comment(i)?,
                b'/' if b.get(i + 1) == Some(&b'*') => self.block_comment(i)?,
                b'"' => return self.string(i).map(Some),
                b'.' if b.get(i + 1).is_some_and(|&n| ident_start(n)) => {
                    return Ok(Some(self.directive(i)));
                }
                _ if c.is_ascii_digit() => return Ok(Some(self.number(i))),
                _ if ident_start(c) => {
                    let mut j = i + 1;
                    while j < b.len() && ident_continue(b[j]) {
                        j += 1;
                    }
                    return Ok(Some(self.token(TokenKind::Ident, i, j)));
                }
                _ => return self.other(i, c).map(Some),
            }
        }
        Ok(None)
    }

    /// A `//` comment from `i` to the end of its line.
    fn line_comment(&mut self, i: usize) -> Result<(), LexError> {
        let (b, strict) = (self.raw, self.strict);
        let mut j = i;
        while j < b.len() && b[j] != b'\n' && b[j] != b'\r' {
            if strict && (b[j] == 0 || !b[j].is_ascii()) {
                let (line, col) = (self.line, self.col(j));
                note(&mut self.non_ascii, b[j], line, col)?;
            }
            j += 1;
        }
        self.i = j;
        Ok(())
    }

    /// A `/* */` comment from `i`; it may span lines.
    fn block_comment(&mut self, i: usize) -> Result<(), LexError> {
        let (b, strict) = (self.raw, self.strict);
        let (open_line, open_col) = (self.line, self.col(i));
        let mut j = i + 2;
        while j < b.len() && !(b[j] == b'*' && b.get(j + 1) == Some(&b'/')) {
            if b[j] == b'\n' || (b[j] == b'\r' && b.get(j + 1) != Some(&b'\n')) {
                self.newline(j + 1);
            } else if strict && (b[j] == 0 || !b[j].is_ascii()) {
                let (line, col) = (self.line, self.col(j));
                note(&mut self.non_ascii, b[j], line, col)?;
            }
            j += 1;
        }
        if j >= b.len() && strict {
            return Err(fail(open_line, open_col, LexErrorKind::UnterminatedComment));
        }
        self.i = (j + 2).min(b.len());
        Ok(())
    }

    /// A string literal from its opening quote at `i`.
    fn string(&mut self, i: usize) -> Result<Token<'a>, LexError> {
        let (src, b, strict) = (self.src, self.raw, self.strict);
        let (start_line, start_col) = (self.line, self.col(i));
        let mut j = i + 1;
        while j < b.len() && b[j] != b'"' {
            if b[j] == b'\n' || b[j] == b'\r' {
                if strict {
                    return Err(fail(
                        start_line,
                        start_col,
                        LexErrorKind::UnterminatedString,
                    ));
                }
                self.newline(j + 1);
            } else if b[j] == b'\\' && b.get(j + 1).is_some_and(|&n| n != b'\n') {
                j += 1;
            }
            if strict && j < b.len() && (b[j] == 0 || !b[j].is_ascii()) {
                let (line, col) = (self.line, self.col(j));
                note(&mut self.non_ascii, b[j], line, col)?;
            }
            j += 1;
        }
        if j >= b.len() && strict {
            return Err(fail(
                start_line,
                start_col,
                LexErrorKind::UnterminatedString,
            ));
        }
        // `j` is at the closing quote (ASCII) or at the end: a character boundary.
        self.i = (j + 1).min(b.len());
        Ok(Token {
            kind: TokenKind::Str,
            text: src.get(i..self.i).unwrap_or(""),
            line: start_line,
            col: start_col,
        })
    }

    /// A directive (or modifier) from its `.` at `i`.
    fn directive(&mut self, i: usize) -> Token<'a> {
        let b = self.raw;
        let mut j = i + 1;
        loop {
            while j < b.len() && ident_continue(b[j]) {
                j += 1;
            }
            // State-space qualifiers such as `.shared::cta` and `.param::entry` are
            // one directive.
            if b.get(j) == Some(&b':')
                && b.get(j + 1) == Some(&b':')
                && b.get(j + 2).is_some_and(|&n| ident_start(n))
            {
                j += 2;
                continue;
            }
            break;
        }
        self.token(TokenKind::Directive, i, j)
    }

    /// A number from its first digit at `i`.
    fn number(&mut self, i: usize) -> Token<'a> {
        let (src, b) = (self.src, self.raw);
        // Covers 64, 0x1F, 0b101, 0f3F800000, 0d…, 8.5, 1e-3, 1U.
        let mut j = i;
        while j < b.len() {
            let d = b[j];
            let exp_sign = (d == b'-' || d == b'+')
                && matches!(b[j - 1], b'e' | b'E')
                && !src[i..j].starts_with("0x")
                && !src[i..j].starts_with("0X");
            if d.is_ascii_alphanumeric() || d == b'.' || exp_sign {
                j += 1;
            } else {
                break;
            }
        }
        self.token(TokenKind::Number, i, j)
    }

    /// Any other character at `i`: one punctuation token, or (strict) a refused byte.
    fn other(&mut self, i: usize, c: u8) -> Result<Token<'a>, LexError> {
        let (src, strict) = (self.src, self.strict);
        if strict {
            let at = self.col(i);
            if c == 0 {
                return Err(fail(self.line, at, LexErrorKind::Nul));
            }
            if !c.is_ascii() {
                return Err(fail(self.line, at, LexErrorKind::NonAscii(c)));
            }
            if c.is_ascii_control() {
                return Err(fail(self.line, at, LexErrorKind::Control(c)));
            }
        }
        // One character, UTF-8 aware so slicing never splits a code point.
        let len = src
            .get(i..)
            .and_then(|s| s.chars().next())
            .map_or(1, char::len_utf8);
        Ok(self.token(TokenKind::Punct, i, i + len))
    }

    fn token(&mut self, kind: TokenKind, start: usize, end: usize) -> Token<'a> {
        self.i = end;
        Token {
            kind,
            text: &self.src[start..end],
            line: self.line,
            col: self.col(start),
        }
    }
}

/// `bytes` as text the lexer reads with [`Lexer::with_raw`]: UTF-8 as it is, each byte of an
/// invalid sequence replaced by ASCII SUB (0x1A), so that the text has the bytes' length.
/// `None` when `bytes` is UTF-8 already.
pub(crate) fn ascii_substitute(bytes: &[u8]) -> Option<String> {
    if std::str::from_utf8(bytes).is_ok() {
        return None;
    }
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(std::iter::repeat_n('\u{1a}', chunk.invalid().len()));
    }
    Some(out)
}

fn fail(line: u32, col: u32, kind: LexErrorKind) -> LexError {
    LexError { line, col, kind }
}

/// A byte inside a comment or string: NUL is fatal, non-ASCII is noted once per line.
fn note(notes: &mut Vec<NonAsciiNote>, c: u8, line: u32, col: u32) -> Result<(), LexError> {
    if c == 0 {
        return Err(fail(line, col, LexErrorKind::Nul));
    }
    if !c.is_ascii() && !matches!(notes.last(), Some(n) if n.line == line) {
        notes.push(NonAsciiNote { line, col, byte: c });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(TokenKind, &str, u32)> {
        tokenize(src)
            .into_iter()
            .map(|t| (t.kind, t.text, t.line))
            .collect()
    }

    #[test]
    fn comments_are_dropped_and_lines_counted() {
        let toks = kinds("// head\n.version 8.5 /* a\nb */ .target sm_90\n");
        assert_eq!(
            toks,
            vec![
                (TokenKind::Directive, ".version", 2),
                (TokenKind::Number, "8.5", 2),
                (TokenKind::Directive, ".target", 3),
                (TokenKind::Ident, "sm_90", 3),
            ]
        );
    }

    #[test]
    fn register_label_and_scoped_names() {
        let toks = kinds("ld.param.u32 %r1, [$L__x+4]; .shared::cta");
        let texts: Vec<&str> = toks.iter().map(|t| t.1).collect();
        assert_eq!(
            texts,
            vec![
                "ld",
                ".param",
                ".u32",
                "%r1",
                ",",
                "[",
                "$L__x",
                "+",
                "4",
                "]",
                ";",
                ".shared::cta"
            ]
        );
        assert_eq!(toks[3].0, TokenKind::Ident);
        assert_eq!(toks[11].0, TokenKind::Directive);
    }

    #[test]
    fn numbers_and_strings() {
        let toks = kinds("0f3F800000 0x1F 1e-3 \"a\\\"b\" 12U");
        assert_eq!(
            toks.iter().map(|t| (t.0, t.1)).collect::<Vec<_>>(),
            vec![
                (TokenKind::Number, "0f3F800000"),
                (TokenKind::Number, "0x1F"),
                (TokenKind::Number, "1e-3"),
                (TokenKind::Str, "\"a\\\"b\""),
                (TokenKind::Number, "12U"),
            ]
        );
    }

    #[test]
    fn unterminated_comment_and_string_do_not_panic() {
        assert!(kinds("/* never closed").is_empty());
        assert_eq!(kinds("\"open").len(), 1);
        assert_eq!(kinds("é;").len(), 2);
    }

    // What ptxas 12.9.86 refuses at the character level, measured on one-line files:
    // "Unexpected non-ASCII character encountered on line N" for a BOM and for non-ASCII in a
    // comment or identifier; "unexpected EOF while scanning" for an open comment.
    #[test]
    fn checked_lexing_refuses_what_ptxas_refuses() {
        let kind = |s: &str| lex(s).map(|_| ()).map_err(|e| (e.line, e.col, e.kind));
        assert_eq!(
            kind("\u{feff}.version 8.0"),
            Err((1, 1, LexErrorKind::ByteOrderMark))
        );
        assert_eq!(
            kind(".version 8.0\n.func f\0;"),
            Err((2, 8, LexErrorKind::Nul))
        );
        assert_eq!(
            kind("a\n  /* x\n\n"),
            Err((2, 3, LexErrorKind::UnterminatedComment))
        );
        assert_eq!(
            kind(".pragma \"abc;\n"),
            Err((1, 9, LexErrorKind::UnterminatedString))
        );
        assert_eq!(
            kind(".pragma \"abc"),
            Err((1, 9, LexErrorKind::UnterminatedString))
        );
        assert_eq!(
            kind(".func \u{e9}"),
            Err((1, 7, LexErrorKind::NonAscii(0xC3)))
        );
        assert_eq!(kind("// \0"), Err((1, 4, LexErrorKind::Nul)));
        assert_eq!(kind("a \x07"), Err((1, 3, LexErrorKind::Control(7))));
        // Inside comments and strings: noted, not fatal, one note per line.
        let l = lex("// caf\u{e9} \u{e9}\n.file 1 \"\u{e9}.cu\"\nret;").unwrap();
        assert_eq!(
            l.non_ascii,
            vec![
                NonAsciiNote {
                    line: 1,
                    col: 7,
                    byte: 0xC3
                },
                NonAsciiNote {
                    line: 2,
                    col: 10,
                    byte: 0xC3
                }
            ]
        );
        assert_eq!(l.tokens.len(), 5);
        // Columns are 1-based byte offsets; CR-only line ends count as lines.
        let t = lex("a\r  .b\r\nc").unwrap().tokens;
        assert_eq!(
            t.iter().map(|t| (t.line, t.col)).collect::<Vec<_>>(),
            vec![(1, 1), (2, 3), (3, 1)]
        );
    }
}
