//! The scalar rows of ptx-interop 13.2 §2.3's parameter-passing table, and the one judge of a
//! declared scalar type against them.
//!
//! Two areas compare scalar `.param` declarations: `abi.params` a producer's declaration with
//! the table row of its source type, `xcall` a caller's declaration with the callee's. Both
//! ask [`judge_scalar`] (or [`judge_pair`], which picks the side that carries a table type), so
//! a `.s32` for an unsigned type or a `.b32`/`.b64` for a `float`/`double` gets one verdict
//! whichever area meets it.
//!
//! The table (§2.3): integral types of 8 to 32 bits are `.u32` if unsigned or `.s32` if signed
//! (note A: narrower values are zero- or sign-extended by that signedness), 64-bit ones
//! `.u64`/`.s64`; pointers `.u32`/`.u64` by address size (note B); floating-point types `.f32`
//! and `.f64` (note C); handles `.b64` (note E).
//! Beyond the table's letter, a `.bN` of the row's width stands for an integer row: PTX's
//! untyped form of the same bits, which every producer here writes for `int` and pointers and
//! which ptxas 12.9 and nvJitLink 12.9 take as the same prototype as `.sN`/`.uN`. They do not
//! take `.bN` for `.fN`: nvJitLink 12.9 reports "Prototype doesn't match" and ptxas 12.9
//! "Inconsistent prototypes ... parameter types differ", so a `.bN` for a float row departs
//! from the table.

use crate::module::{AddressSize, PtxType};

/// How a declared scalar type stands against the type the table gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarVerdict {
    /// Exactly the table's type.
    TableType,
    /// `.bN` where the table gives `.sN`/`.uN` (or `.sN`/`.uN` where it gives `.bN`): the
    /// untyped form of the same integer.
    UntypedInteger,
    /// `.sN` where the table gives `.uN`, or `.uN` where it gives `.sN`: §2.3 chooses by the
    /// source type's signedness, and note A's extension follows it.
    OtherSignedness,
    /// `.bN` where the table gives `.fN` (row C), or `.fN` where it gives `.bN`.
    FloatAsBits,
    /// Another width, a float for an integer, or a type with no scalar row.
    OtherType,
}

impl ScalarVerdict {
    /// Whether the declaration conforms to the row: the table's type or its untyped form.
    pub fn conforms(self) -> bool {
        matches!(
            self,
            ScalarVerdict::TableType | ScalarVerdict::UntypedInteger
        )
    }

    /// The departure in words, for messages; `None` when the declaration conforms.
    pub fn departure(self) -> Option<&'static str> {
        match self {
            ScalarVerdict::TableType | ScalarVerdict::UntypedInteger => None,
            ScalarVerdict::OtherSignedness => {
                Some("the other signedness (§2.3: `.u32` if unsigned, `.s32` if signed; note A)")
            }
            ScalarVerdict::FloatAsBits => {
                Some("untyped bits for a floating-point value (§2.3 row C: `.f32`/`.f64`)")
            }
            ScalarVerdict::OtherType => Some("another type"),
        }
    }
}

/// Type class of a scalar PTX type, as the judge sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Bits,
    Unsigned,
    Signed,
    Float,
    Other,
}

fn class(t: PtxType) -> Class {
    use PtxType::*;
    match t {
        B8 | B16 | B32 | B64 | B128 => Class::Bits,
        U8 | U16 | U32 | U64 => Class::Unsigned,
        S8 | S16 | S32 | S64 => Class::Signed,
        F16 | F16x2 | Bf16 | Bf16x2 | F32 | F64 => Class::Float,
        Pred | TexRef | SamplerRef | SurfRef => Class::Other,
    }
}

/// Judge `declared` against `table`, the type the §2.3 row gives.
pub fn judge_scalar(table: PtxType, declared: PtxType) -> ScalarVerdict {
    if table == declared {
        return ScalarVerdict::TableType;
    }
    if table.bits().is_none() || table.bits() != declared.bits() {
        return ScalarVerdict::OtherType;
    }
    match (class(table), class(declared)) {
        (Class::Signed | Class::Unsigned, Class::Bits)
        | (Class::Bits, Class::Signed | Class::Unsigned) => ScalarVerdict::UntypedInteger,
        (Class::Signed, Class::Unsigned) | (Class::Unsigned, Class::Signed) => {
            ScalarVerdict::OtherSignedness
        }
        (Class::Float, Class::Bits) | (Class::Bits, Class::Float) => ScalarVerdict::FloatAsBits,
        _ => ScalarVerdict::OtherType,
    }
}

/// Judge two declarations of one value (a caller's and a callee's): the side with a typed
/// class (`.sN`, `.uN`, `.fN`) is taken as the row, the other judged against it; two untyped
/// `.bN` agree by width alone.
pub fn judge_pair(a: PtxType, b: PtxType) -> ScalarVerdict {
    if class(a) == Class::Bits {
        judge_scalar(b, a)
    } else {
        judge_scalar(a, b)
    }
}

/// The table's type for an integral source type of `bits` bits (§2.3 rows 1-2; note A widens
/// the narrower ones to 32 bits).
pub fn integer_type(bits: u32, signed: bool) -> PtxType {
    match (bits <= 32, signed) {
        (true, true) => PtxType::S32,
        (true, false) => PtxType::U32,
        (false, true) => PtxType::S64,
        (false, false) => PtxType::U64,
    }
}

/// The table's type for a pointer (§2.3 rows 3-4, note B).
pub fn pointer_type(address_size: AddressSize) -> PtxType {
    match address_size {
        AddressSize::A32 => PtxType::U32,
        AddressSize::A64 => PtxType::U64,
    }
}

/// The table's type for a floating-point source type of `bits` bits (§2.3 rows 5-6; note C:
/// none for 16 bits).
pub fn float_type(bits: u32) -> Option<PtxType> {
    match bits {
        32 => Some(PtxType::F32),
        64 => Some(PtxType::F64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PtxType::*;

    /// The verdicts written from the table's rows, one per kind of departure.
    #[test]
    fn rows_judge_each_departure() {
        let cases = [
            (U32, U32, ScalarVerdict::TableType),
            (U32, B32, ScalarVerdict::UntypedInteger),
            (U32, S32, ScalarVerdict::OtherSignedness),
            (S64, U64, ScalarVerdict::OtherSignedness),
            (F32, B32, ScalarVerdict::FloatAsBits),
            (F64, B64, ScalarVerdict::FloatAsBits),
            (F32, U32, ScalarVerdict::OtherType),
            (S32, F32, ScalarVerdict::OtherType),
            (S64, B32, ScalarVerdict::OtherType),
            (B64, U64, ScalarVerdict::UntypedInteger),
            (B64, TexRef, ScalarVerdict::OtherType),
        ];
        for (table, declared, want) in cases {
            assert_eq!(judge_scalar(table, declared), want, "{table} {declared}");
        }
        assert!(ScalarVerdict::UntypedInteger.conforms());
        assert!(!ScalarVerdict::OtherSignedness.conforms());
        assert!(!ScalarVerdict::FloatAsBits.conforms());
    }

    /// A pair is judged the same whichever side is the caller.
    #[test]
    fn pairs_are_symmetric() {
        let all = [
            B8, B16, B32, B64, U16, U32, U64, S16, S32, S64, F16, F32, F64, Pred, TexRef,
        ];
        for a in all {
            for b in all {
                assert_eq!(judge_pair(a, b), judge_pair(b, a), "{a} {b}");
            }
        }
        assert_eq!(judge_pair(B32, F32), ScalarVerdict::FloatAsBits);
        assert_eq!(judge_pair(B32, B32), ScalarVerdict::TableType);
        assert_eq!(judge_pair(B32, B64), ScalarVerdict::OtherType);
    }
}
