//! The one literal grammar of the crate's PTX readers (the module reader, the instruction
//! reader, the Dat3M litmus importer and the test emulator), as the PTX ISA gives it
//! ("Constants", §4.5 of the ISA: integer constants are 64-bit, written
//!
//! * hexadecimal `0[xX][0-9a-fA-F]+U?`,
//! * octal `0[0-7]+U?` (a leading zero means octal: `010` is eight),
//! * binary `0[bB][01]+U?`,
//! * decimal `[1-9][0-9]*U?` or `0`;
//!
//! floating-point constants given bit-exactly as `0[fF]` + 8 hex digits (`.f32`) or `0[dD]` +
//! 16 hex digits (`.f64`)). A sign is not part of a PTX literal (it is the unary `-`
//! operator); [`parse_signed`] accepts one for the litmus syntax, where `-1` is a value.

use std::fmt;

/// A literal as the ISA reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Literal {
    /// An integer constant; `unsigned` when written with the `U` suffix.
    Int { value: u64, unsigned: bool },
    /// `0fXXXXXXXX`: the bits of an `.f32`.
    F32(u32),
    /// `0dXXXXXXXXXXXXXXXX`: the bits of an `.f64`.
    F64(u64),
}

/// Why a text is not a literal.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a PTX literal: {why} (allowed: decimal, 0x hex, 0b binary, 0-prefixed octal, 0f/0d float bits)")]
pub(crate) struct LiteralError {
    pub text: String,
    pub why: &'static str,
}

fn bad(text: &str, why: &'static str) -> LiteralError {
    LiteralError {
        text: text.to_string(),
        why,
    }
}

/// Reads one literal.
pub(crate) fn parse_literal(text: &str) -> Result<Literal, LiteralError> {
    let s = text;
    if s.is_empty() {
        return Err(bad(text, "empty"));
    }
    // Float bits: exactly 8 / 16 hex digits after 0f / 0d.
    for (prefix, digits) in [("0f", 8usize), ("0F", 8), ("0d", 16), ("0D", 16)] {
        if let Some(h) = s.strip_prefix(prefix) {
            if h.len() != digits || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad(
                    text,
                    "a float constant needs 8 (0f) or 16 (0d) hex digits",
                ));
            }
            return if digits == 8 {
                u32::from_str_radix(h, 16)
                    .map(Literal::F32)
                    .map_err(|_| bad(text, "bad hex digits"))
            } else {
                u64::from_str_radix(h, 16)
                    .map(Literal::F64)
                    .map_err(|_| bad(text, "bad hex digits"))
            };
        }
    }
    let (body, unsigned) = match s.strip_suffix('U') {
        Some(b) => (b, true),
        None => (s, false),
    };
    let (digits, radix, what) =
        if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (h, 16, "bad hex digit")
        } else if let Some(b) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (b, 2, "bad binary digit")
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8, "bad octal digit (a leading 0 means octal)")
        } else {
            (body, 10, "bad decimal digit")
        };
    if digits.is_empty() {
        return Err(bad(text, "no digits"));
    }
    // from_str_radix accepts a sign; the grammar does not.
    if !digits.bytes().all(|b| (b as char).is_digit(radix)) {
        return Err(bad(text, what));
    }
    u64::from_str_radix(digits, radix)
        .map(|value| Literal::Int { value, unsigned })
        .map_err(|_| bad(text, "does not fit in 64 bits"))
}

/// An integer literal's 64 bits (`None` for floats and non-literals).
pub fn parse_int(text: &str) -> Option<u64> {
    match parse_literal(text) {
        Ok(Literal::Int { value, .. }) => Some(value),
        _ => None,
    }
}

/// An integer value with an optional leading `-` (the litmus syntax's values), as an `i64`
/// (two's complement: `0xffffffffffffffff` is -1, as PTX's 64-bit constants wrap).
pub fn parse_signed(text: &str) -> Option<i64> {
    let t = text.trim();
    match t.strip_prefix('-') {
        Some(rest) => parse_int(rest).map(|v| (v as i64).wrapping_neg()),
        None => parse_int(t).map(|v| v as i64),
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Int { value, unsigned } => {
                write!(f, "{value}{}", if *unsigned { "U" } else { "" })
            }
            Literal::F32(b) => write!(f, "0f{b:08X}"),
            Literal::F64(b) => write!(f, "0d{b:016X}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from the PTX ISA's constant grammar (§4.5), worked by hand.
    #[test]
    fn integer_forms() {
        assert_eq!(parse_int("010"), Some(8), "leading zero is octal");
        assert_eq!(parse_int("0"), Some(0));
        assert_eq!(parse_int("10"), Some(10));
        assert_eq!(parse_int("0x1F"), Some(31));
        assert_eq!(parse_int("0X1f"), Some(31));
        assert_eq!(parse_int("0b101"), Some(5));
        assert_eq!(parse_int("0777U"), Some(511));
        assert_eq!(
            parse_literal("7U"),
            Ok(Literal::Int {
                value: 7,
                unsigned: true
            })
        );
        assert_eq!(parse_int("0xffffffffffffffff"), Some(u64::MAX));
    }

    #[test]
    fn rejects_what_the_grammar_does_not_have() {
        for t in [
            "", "08", "0b2", "0x", "0xg", "+1", "-1", "1.5", "r0", "0x+1", "00x1",
        ] {
            assert!(parse_literal(t).is_err(), "{t}");
        }
        let e = parse_literal("09").unwrap_err();
        assert!(e.to_string().contains("octal"), "{e}");
        assert!(parse_literal("0x10000000000000000").is_err());
    }

    #[test]
    fn float_bits() {
        // 1.0f32 is 0x3F800000; 1.0f64 is 0x3FF0000000000000 (IEEE 754).
        assert_eq!(parse_literal("0f3F800000"), Ok(Literal::F32(0x3F80_0000)));
        assert_eq!(
            parse_literal("0d3FF0000000000000"),
            Ok(Literal::F64(0x3FF0_0000_0000_0000))
        );
        assert_eq!(f32::from_bits(0x3F80_0000), 1.0);
        assert!(parse_literal("0f3F8").is_err());
        assert_eq!(parse_int("0f3F800000"), None);
        assert_eq!(Literal::F32(0x3F80_0000).to_string(), "0f3F800000");
    }

    #[test]
    fn signed_values() {
        assert_eq!(parse_signed("-1"), Some(-1));
        assert_eq!(parse_signed("-010"), Some(-8));
        assert_eq!(parse_signed("0xffffffffffffffff"), Some(-1));
        assert_eq!(parse_signed("--1"), None);
    }
}
