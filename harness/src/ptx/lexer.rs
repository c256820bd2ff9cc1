//! PTX tokenizer: turns PTX text into tokens that carry their 1-based source line.
//!
//! Comments (`//` to end of line, `/* … */`) are dropped. Everything else becomes a token, so
//! the parsers above never see raw text. The lexer never fails: a character it does not know
//! becomes a one-character [`TokenKind::Punct`], and an unterminated string or comment ends at
//! the end of the input; the parser decides whether that is an error.

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
}

impl Token<'_> {
    pub fn is_punct(&self, c: char) -> bool {
        self.kind == TokenKind::Punct && self.text.len() == c.len_utf8() && self.text.starts_with(c)
    }

    pub fn is_directive(&self, name: &str) -> bool {
        self.kind == TokenKind::Directive && self.text == name
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

/// Tokenize all of `src`.
pub fn tokenize(src: &str) -> Vec<Token<'_>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line: u32 = 1;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\n' => {
                line += 1;
                i += 1;
            }
            _ if c.is_ascii_whitespace() => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i = (i + 2).min(b.len());
            }
            b'"' => {
                let start = i;
                let start_line = line;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    if i < b.len() && b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i = (i + 1).min(b.len());
                out.push(Token {
                    kind: TokenKind::Str,
                    text: &src[start..i],
                    line: start_line,
                });
            }
            b'.' if b.get(i + 1).is_some_and(|&n| ident_start(n)) => {
                let start = i;
                i += 1;
                loop {
                    while i < b.len() && ident_continue(b[i]) {
                        i += 1;
                    }
                    // State-space qualifiers such as `.shared::cta` and `.param::entry` are one
                    // directive.
                    if b.get(i) == Some(&b':')
                        && b.get(i + 1) == Some(&b':')
                        && b.get(i + 2).is_some_and(|&n| ident_start(n))
                    {
                        i += 2;
                        continue;
                    }
                    break;
                }
                out.push(Token {
                    kind: TokenKind::Directive,
                    text: &src[start..i],
                    line,
                });
            }
            _ if c.is_ascii_digit() => {
                let start = i;
                // Covers 64, 0x1F, 0b101, 0f3F800000, 0d…, 8.5, 1e-3, 1U.
                while i < b.len() {
                    let d = b[i];
                    let exp_sign = (d == b'-' || d == b'+')
                        && matches!(b[i - 1], b'e' | b'E')
                        && !src[start..i].starts_with("0x")
                        && !src[start..i].starts_with("0X");
                    if d.is_ascii_alphanumeric() || d == b'.' || exp_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                out.push(Token {
                    kind: TokenKind::Number,
                    text: &src[start..i],
                    line,
                });
            }
            _ if ident_start(c) => {
                let start = i;
                i += 1;
                while i < b.len() && ident_continue(b[i]) {
                    i += 1;
                }
                out.push(Token {
                    kind: TokenKind::Ident,
                    text: &src[start..i],
                    line,
                });
            }
            _ => {
                // One character, UTF-8 aware so slicing never splits a code point.
                let len = src[i..].chars().next().map_or(1, char::len_utf8);
                out.push(Token {
                    kind: TokenKind::Punct,
                    text: &src[i..i + len],
                    line,
                });
                i += len;
            }
        }
    }
    out
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
}
