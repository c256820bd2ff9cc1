//! The layout engine: size, alignment and member placement of C types as ptx-interop 13.2
//! chapter 1 defines them. Every rule cites its clause; the oracles in `oracle/` check the
//! answers against compilers and, on a GPU, against the bytes a kernel writes.

use serde::Serialize;

use super::types::{Field, FieldError, RecordKind, Scalar, Ty, TypeDef};

/// Pointer width: one definition, in the PTX reader (the module's `.address_size`).
pub use crate::ptx::AddressSize;

/// The placement of one member inside its struct or union.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberLayout {
    /// `None` for an unnamed bit field.
    pub name: Option<String>,
    /// Byte offset. For a bit field: the byte that holds its lowest bit (`bit_offset / 8`).
    pub offset: u64,
    /// For a bit field: offset of its least significant bit from the start of the aggregate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bit_offset: Option<u64>,
    /// For a bit field: its width (0 for a zero-width bit field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bit_width: Option<u32>,
    /// Size of the member's type (for a bit field, of its declared type: its storage unit).
    pub size: u64,
    /// Alignment of the member's type (for a bit field, of its declared type).
    pub align: u64,
}

/// The layout of a struct or union.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Layout {
    pub size: u64,
    pub align: u64,
    pub members: Vec<MemberLayout>,
}

/// Size of a scalar (ptx-interop 13.2 §1.1 table).
pub(crate) fn scalar_size(s: Scalar, a: AddressSize) -> u64 {
    match s {
        // .b8/.s8/.u8: 1 byte.
        Scalar::Char | Scalar::SChar | Scalar::UChar => 1,
        // .s16/.u16: 2 bytes; .f16 (IEEE half): 2 bytes.
        Scalar::Short | Scalar::UShort | Scalar::Half => 2,
        // .s32/.u32/.f32: 4 bytes.
        Scalar::Int | Scalar::UInt | Scalar::Float => 4,
        // .s64/.u64/.f64: 8 bytes.
        Scalar::LongLong | Scalar::ULongLong | Scalar::Double => 8,
        // §1.1: long and pointers follow the host, i.e. `.address_size` (32 or 64 bits).
        Scalar::Long | Scalar::ULong | Scalar::Pointer => a.bytes(),
        // §1.4: an opaque texture/sampler/surface reference is held in a `.b64` handle.
        Scalar::TextureHandle | Scalar::SurfaceHandle => 8,
    }
}

/// Alignment of a scalar: every row of the §1.1 table has alignment equal to its size.
pub(crate) fn scalar_align(s: Scalar, a: AddressSize) -> u64 {
    scalar_size(s, a)
}

/// Whether a native vector of `n` elements of `s` exists (§1.2): 1–4 elements for scalars of
/// at most four bytes, 1–2 elements for all other types.
pub(crate) fn vector_exists(s: Scalar, n: u32, a: AddressSize) -> bool {
    if matches!(
        s,
        Scalar::Pointer | Scalar::TextureHandle | Scalar::SurfaceHandle
    ) {
        return false; // not a vector element type in CUDA or in the §1.1 table's vector syntax
    }
    let max = if scalar_size(s, a) <= 4 { 4 } else { 2 };
    (1..=max).contains(&n)
}

/// Alignment of a native vector (§1.2): odd element count → alignof(t); even → n × alignof(t).
pub(crate) fn vector_align(s: Scalar, n: u32, a: AddressSize) -> u64 {
    if n % 2 == 1 {
        scalar_align(s, a)
    } else {
        u64::from(n) * scalar_align(s, a)
    }
}

/// Objects larger than this are refused, so that offset arithmetic cannot overflow.
pub(crate) const MAX_OBJECT: u64 = 1 << 40;

fn round_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Why a type has no layout (ptx-interop 13.2 ch. 1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// §1.2: vectors have 1–4 elements of at most 4 bytes, 1–2 of larger ones.
    #[error("no native vector of {count} × {scalar} (ptx-interop 13.2 §1.2: 1–4 elements for types of at most 4 bytes, 1–2 otherwise)")]
    NoVector { scalar: &'static str, count: u32 },
    /// Past [`MAX_OBJECT`].
    #[error("array of {count} elements of {element} bytes is too large")]
    ArrayTooLarge { count: u64, element: u64 },
    /// The aggregate grows past [`MAX_OBJECT`] at this member.
    #[error("the aggregate is too large")]
    AggregateTooLarge,
    /// A member breaks a C rule for members.
    #[error(transparent)]
    Field(#[from] FieldError),
    /// The member of `record` at fault (`member` is `None` for an unnamed bit field).
    #[error("type `{record}` {}: {source}", match member { Some(n) => format!("member `{n}`"), None => "unnamed member".to_string() })]
    Member {
        record: String,
        member: Option<String>,
        source: Box<LayoutError>,
    },
}

/// Size and alignment of any type.
pub(crate) fn size_align(t: &Ty, a: AddressSize) -> Result<(u64, u64), LayoutError> {
    Ok(match t {
        Ty::Scalar(s) => (scalar_size(*s, a), scalar_align(*s, a)),
        Ty::Vector(s, n) => {
            if !vector_exists(*s, *n, a) {
                return Err(LayoutError::NoVector {
                    scalar: s.yaml_name(),
                    count: *n,
                });
            }
            // The elements are contiguous; n × size is a multiple of the §1.2 alignment
            // (odd n: of the element's; even n: n × size), so no tail padding arises.
            (u64::from(*n) * scalar_size(*s, a), vector_align(*s, *n, a))
        }
        // An array is its elements back to back (C); alignment of the element.
        Ty::Array(e, n) => {
            let (s, al) = size_align(e, a)?;
            let total = s.checked_mul(*n).filter(|t| *t <= MAX_OBJECT).ok_or(
                LayoutError::ArrayTooLarge {
                    count: *n,
                    element: s,
                },
            )?;
            (total, al)
        }
        Ty::Record(r) => {
            let l = layout(r, a)?;
            (l.size, l.align)
        }
    })
}

/// Lay out a struct or union.
pub fn layout(t: &TypeDef, a: AddressSize) -> Result<Layout, LayoutError> {
    layout_at(t, a).map_err(|(_, e)| e)
}

/// [`layout`], the error also giving the index of the member at fault (the type reader turns
/// it into the member's `file:line:column`).
pub(crate) fn layout_at(t: &TypeDef, a: AddressSize) -> Result<Layout, (usize, LayoutError)> {
    let mut members = Vec::with_capacity(t.fields.len());
    // Current end of the allocated bits (structs) and the largest extent (unions).
    let mut bit: u64 = 0;
    let mut extent_bits: u64 = 0;
    let mut align: u64 = 1;
    for (i, f) in t.fields.iter().enumerate() {
        validate_field(f).map_err(|e| (i, member_err(t, f, e.into())))?;
        let (size, falign) = size_align(&f.ty, a).map_err(|e| (i, member_err(t, f, e)))?;
        let m = match f.bits {
            None => {
                // §1.2: "each member is assigned to the lowest available offset with the
                // appropriate alignment" (a union's members all start at 0). A member after a
                // bit field starts at the next aligned byte: §1.3 lets it share the bit
                // field's storage unit "as long as there is enough space".
                let off = match t.kind {
                    RecordKind::Struct => round_up(bit.div_ceil(8), falign),
                    RecordKind::Union => 0,
                };
                if off + size > MAX_OBJECT {
                    return Err((i, member_err(t, f, LayoutError::AggregateTooLarge)));
                }
                bit = (off + size) * 8;
                extent_bits = extent_bits.max(bit);
                // §1.2: the aggregate is aligned as its most strictly aligned member.
                align = align.max(falign);
                MemberLayout {
                    name: f.name.clone(),
                    offset: off,
                    bit_offset: None,
                    bit_width: None,
                    size,
                    align: falign,
                }
            }
            Some(w) => {
                let w64 = u64::from(w);
                let unit = size * 8;
                let start = match t.kind {
                    RecordKind::Union => 0,
                    RecordKind::Struct if w == 0 => {
                        // §1.3: a zero-length bit field forces the following member to the
                        // next alignment boundary of the bit field's type.
                        round_up(bit, falign * 8)
                    }
                    RecordKind::Struct => {
                        // §1.3: allocated right to left (least significant bits first, so the
                        // next free bit is the next higher one), and a bit field must reside
                        // entirely in one storage unit of its declared type: if it would cross
                        // the unit boundary it starts at the next unit.
                        if bit / unit != (bit + w64 - 1) / unit {
                            round_up(bit, unit)
                        } else {
                            bit
                        }
                    }
                };
                if t.kind == RecordKind::Struct {
                    bit = start + w64;
                }
                extent_bits = extent_bits.max(start + w64);
                // §1.3: bit fields follow the alignment rules of other members (a named bit
                // field aligns the aggregate as its declared type), except that unnamed bit
                // fields — zero-width ones included — do not affect the aggregate's alignment.
                if f.name.is_some() {
                    align = align.max(falign);
                }
                MemberLayout {
                    name: f.name.clone(),
                    offset: start / 8,
                    bit_offset: Some(start),
                    bit_width: Some(w),
                    size,
                    align: falign,
                }
            }
        };
        members.push(m);
    }
    // A struct's extent is where allocation ended (a trailing zero-width bit field has
    // advanced it); a union's is its largest member.
    let used = match t.kind {
        RecordKind::Struct => bit.div_ceil(8),
        RecordKind::Union => extent_bits.div_ceil(8),
    };
    // §1.2: the size is increased to a multiple of the alignment (tail padding).
    Ok(Layout {
        size: round_up(used, align),
        align,
        members,
    })
}

fn member_err(t: &TypeDef, f: &Field, e: LayoutError) -> LayoutError {
    LayoutError::Member {
        record: t.name.clone(),
        member: f.name.clone(),
        source: Box::new(e),
    }
}

/// The C constraints on one member, shared by the parser and the random generator.
pub(crate) fn validate_field(f: &Field) -> Result<(), FieldError> {
    match f.bits {
        None => {
            if f.name.is_none() {
                return Err(FieldError::Unnamed);
            }
        }
        Some(w) => {
            let Ty::Scalar(s) = f.ty else {
                return Err(FieldError::NotScalar);
            };
            if !s.is_bit_field_type() {
                return Err(FieldError::NotBitFieldType {
                    scalar: s.yaml_name(),
                });
            }
            let max = crate::abi::layout::scalar_size(s, crate::ptx::AddressSize::A64) * 8;
            if u64::from(w) > max {
                return Err(FieldError::TooWide { width: w, max });
            }
            if w == 0 && f.name.is_some() {
                return Err(FieldError::NamedZeroWidth);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::type_file::{layout_text_json, parse_types};

    /// The same type with every record renamed (nested ones included).
    fn renamed(t: &TypeDef) -> TypeDef {
        fn ty(t: &crate::abi::types::Ty) -> crate::abi::types::Ty {
            use crate::abi::types::Ty;
            match t {
                Ty::Record(r) => Ty::Record(Box::new(renamed(r))),
                Ty::Array(e, n) => Ty::Array(Box::new(ty(e)), *n),
                other => other.clone(),
            }
        }
        TypeDef {
            name: format!("zz_{}_renamed", t.name),
            kind: t.kind,
            fields: t
                .fields
                .iter()
                .map(|f| crate::abi::types::Field {
                    name: f.name.clone(),
                    ty: ty(&f.ty),
                    bits: f.bits,
                })
                .collect(),
        }
    }

    /// Issue 10 item 5: a layout depends on the members, never on the names of the types.
    #[test]
    fn layout_does_not_depend_on_type_names() {
        let mut types = crate::abi::random::random_batch(1, 500);
        let shipped = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/abi/types.yaml"),
        )
        .unwrap();
        types.extend(parse_types(&shipped, "types.yaml").unwrap());
        for t in &types {
            let r = renamed(t);
            assert_ne!(r.name, t.name);
            for a in [AddressSize::A64, AddressSize::A32] {
                assert_eq!(layout(t, a), layout(&r, a), "{}", t.name);
            }
        }
    }

    fn one(yaml_members: &str) -> Layout {
        let text = format!("types:\n  - name: T\n    members: {yaml_members}\n");
        let t = parse_types(&text, "test").unwrap();
        layout(t.last().unwrap(), AddressSize::A64).unwrap()
    }

    fn union(yaml_members: &str) -> Layout {
        let text = format!("types:\n  - name: T\n    kind: union\n    members: {yaml_members}\n");
        let t = parse_types(&text, "test").unwrap();
        layout(t.last().unwrap(), AddressSize::A64).unwrap()
    }

    /// (offset, bit_offset) of each member.
    fn places(l: &Layout) -> Vec<(u64, Option<u64>)> {
        l.members.iter().map(|m| (m.offset, m.bit_offset)).collect()
    }

    #[test]
    fn fundamental_types_follow_the_table() {
        // §1.1 table: (.b8/.s8/.u8 1/1), (.b16/.s16/.u16/.f16 2/2), (.b32/.s32/.u32/.f32 4/4),
        // (.b64/.s64/.u64/.f64 8/8).
        let expect = [
            ("char", 1),
            ("unsigned char", 1),
            ("short", 2),
            ("half", 2),
            ("int", 4),
            ("float", 4),
            ("long long", 8),
            ("double", 8),
            ("texture_handle", 8), // §1.4: a .b64 handle
        ];
        for (t, n) in expect {
            let s = Scalar::parse(t).unwrap();
            assert_eq!(
                (
                    scalar_size(s, AddressSize::A64),
                    scalar_align(s, AddressSize::A64)
                ),
                (n, n),
                "{t}"
            );
        }
        // §1.1: pointers are 32 bits on a 32-bit host and 64 on a 64-bit host; long likewise.
        for s in [Scalar::Pointer, Scalar::Long, Scalar::ULong] {
            assert_eq!(scalar_size(s, AddressSize::A32), 4);
            assert_eq!(scalar_size(s, AddressSize::A64), 8);
        }
    }

    #[test]
    fn native_vectors() {
        let a = AddressSize::A64;
        // §1.2: odd count → alignof(t); even → n * alignof(t).
        assert_eq!(
            size_align(&Ty::Vector(Scalar::Float, 3), a).unwrap(),
            (12, 4)
        );
        assert_eq!(
            size_align(&Ty::Vector(Scalar::Float, 4), a).unwrap(),
            (16, 16)
        );
        assert_eq!(
            size_align(&Ty::Vector(Scalar::Float, 2), a).unwrap(),
            (8, 8)
        );
        assert_eq!(size_align(&Ty::Vector(Scalar::Char, 3), a).unwrap(), (3, 1));
        assert_eq!(
            size_align(&Ty::Vector(Scalar::Short, 1), a).unwrap(),
            (2, 2)
        );
        assert_eq!(
            size_align(&Ty::Vector(Scalar::Double, 2), a).unwrap(),
            (16, 16)
        );
        // §1.2: 8-byte types have only 1- and 2-element vectors.
        assert!(size_align(&Ty::Vector(Scalar::Double, 3), a).is_err());
        assert!(size_align(&Ty::Vector(Scalar::Long, 4), a).is_err());
        // ... but `long` is 4 bytes at .address_size 32, so long4 exists there.
        assert_eq!(
            size_align(&Ty::Vector(Scalar::Long, 4), AddressSize::A32).unwrap(),
            (16, 16)
        );
        assert!(size_align(&Ty::Vector(Scalar::Int, 5), a).is_err());
    }

    #[test]
    fn aggregates_pad_internally_and_at_the_tail() {
        // §1.2: lowest aligned offset, strictest member alignment, size a multiple of it.
        let l = one("[{name: c, type: char}, {name: d, type: double}, {name: s, type: short}]");
        assert_eq!(places(&l), vec![(0, None), (8, None), (16, None)]);
        assert_eq!((l.size, l.align), (24, 8));
        // A vector member carries its §1.2 alignment into the aggregate.
        let l = one("[{name: c, type: char}, {name: v, type: float4}, {name: w, type: float3}]");
        assert_eq!(places(&l), vec![(0, None), (16, None), (32, None)]);
        assert_eq!((l.size, l.align), (48, 16));
        // Arrays: element alignment; nesting: the nested aggregate's alignment and size.
        let l = one("[{name: c, type: char}, {name: a, type: {array: short, count: 3}}, {name: n, type: {struct: [{name: x, type: char}, {name: y, type: int}]}}]");
        assert_eq!(places(&l), vec![(0, None), (2, None), (8, None)]);
        assert_eq!((l.size, l.align), (16, 4));
        // Unions: every member at 0, size of the largest rounded to the strictest alignment.
        let l = union("[{name: c, type: {array: char, count: 5}}, {name: i, type: int}]");
        assert_eq!(places(&l), vec![(0, None), (0, None)]);
        assert_eq!((l.size, l.align), (8, 4));
    }

    // The §1.3 figures (bit-field allocation, boundary alignment, storage-unit sharing, union
    // allocation, unnamed bit fields) are the classic System V examples; the expected values
    // below are worked from the §1.3 rules by hand.

    #[test]
    fn bit_field_allocation_right_to_left() {
        // struct { int j:5; int k:6; int m:7; }: j bits 0–4, k 5–10, m 11–17; one int unit.
        let l = one("[{name: j, type: int, bits: 5}, {name: k, type: int, bits: 6}, {name: m, type: int, bits: 7}]");
        let bits: Vec<_> = l.members.iter().map(|m| m.bit_offset.unwrap()).collect();
        assert_eq!(bits, vec![0, 5, 11]);
        assert_eq!((l.size, l.align), (4, 4));
    }

    #[test]
    fn bit_field_boundary_alignment() {
        // struct { short s:9; int j:9; char c; short t:9; short u:9; char d; }:
        // s 0–8; j 9–17 (fits its int unit); c byte 3; t in the short at byte 4; u would cross
        // that short's boundary (bit 41+9 > 48) so starts the next one, byte 6; d byte 8;
        // size 12 (int alignment 4).
        let l = one("[{name: s, type: short, bits: 9}, {name: j, type: int, bits: 9}, {name: c, type: char}, {name: t, type: short, bits: 9}, {name: u, type: short, bits: 9}, {name: d, type: char}]");
        assert_eq!(
            places(&l),
            vec![
                (0, Some(0)),
                (1, Some(9)),
                (3, None),
                (4, Some(32)),
                (6, Some(48)),
                (8, None)
            ]
        );
        assert_eq!((l.size, l.align), (12, 4));
    }

    #[test]
    fn bit_field_storage_unit_sharing_and_union() {
        // struct { char c; short s:8; }: s shares the short unit holding c, bits 8–15.
        let l = one("[{name: c, type: char}, {name: s, type: short, bits: 8}]");
        assert_eq!(places(&l), vec![(0, None), (1, Some(8))]);
        assert_eq!((l.size, l.align), (2, 2));
        // union { char c; short s:8; }: both at 0; alignment of short.
        let l = union("[{name: c, type: char}, {name: s, type: short, bits: 8}]");
        assert_eq!(places(&l), vec![(0, None), (0, Some(0))]);
        assert_eq!((l.size, l.align), (2, 2));
    }

    #[test]
    fn unnamed_and_zero_width_bit_fields() {
        // struct { char c; int :0; char d; short :9; char e; char :0; }:
        // `int :0` moves d to byte 4; `short :9` cannot fit the short unit at byte 4 after d
        // (bit 40+9 > 48) so takes bits 48–56; e at byte 8; `char :0` changes nothing.
        // Unnamed bit fields leave the alignment at 1 (char), so the size is 9.
        let l = one("[{name: c, type: char}, {type: int, bits: 0}, {name: d, type: char}, {type: short, bits: 9}, {name: e, type: char}, {type: char, bits: 0}]");
        assert_eq!(
            places(&l),
            vec![
                (0, None),
                (4, Some(32)),
                (4, None),
                (6, Some(48)),
                (8, None),
                (9, Some(72))
            ]
        );
        assert_eq!((l.size, l.align), (9, 1));
        // A named bit field does align the aggregate as its declared type.
        let l = one("[{name: c, type: char}, {name: b, type: int, bits: 3}]");
        assert_eq!((l.size, l.align), (4, 4));
    }

    #[test]
    fn long_and_pointers_follow_address_size() {
        let text = "types:\n  - name: T\n    members: [{name: c, type: char}, {name: p, type: pointer}, {name: l, type: long}]\n";
        let t = parse_types(text, "test").unwrap();
        let l32 = layout(&t[0], AddressSize::A32).unwrap();
        let l64 = layout(&t[0], AddressSize::A64).unwrap();
        assert_eq!(places(&l32), vec![(0, None), (4, None), (8, None)]);
        assert_eq!((l32.size, l32.align), (12, 4));
        assert_eq!(places(&l64), vec![(0, None), (8, None), (16, None)]);
        assert_eq!((l64.size, l64.align), (24, 8));
    }

    #[test]
    fn huge_arrays_are_refused_not_overflowed() {
        let text = "types:\n  - name: T\n    members: [{name: a, type: {array: {array: double, count: 4294967296}, count: 4294967296}}]\n";
        // Refused while reading, at the member at fault (line 3; its `{` is column 15).
        let e = parse_types(text, "test").unwrap_err().to_string();
        assert!(
            e.starts_with("test:3:15: ") && e.contains("too large"),
            "{e}"
        );
        let text = "types:\n  - name: T\n    members: [{name: a, type: {array: char, count: 1099511627776}}, {name: b, type: {array: char, count: 1099511627776}}]\n";
        // Each member alone is at the limit; the second one overflows the aggregate.
        let col = text.lines().nth(2).unwrap().find("{name: b").unwrap() + 1;
        let e = parse_types(text, "test").unwrap_err();
        assert_eq!((e.line, e.column), (3, col as u64), "{e}");
        assert!(e.message.contains("too large"), "{e}");
        let e = e.to_string();
        assert!(
            e.starts_with(&format!("test:3:{col}: ")) && e.contains("too large"),
            "{e}"
        );
    }

    #[test]
    fn layout_errors_found_after_parsing_name_the_member_line() {
        // ptx-interop 13.2 §1.2: no native vector of three doubles. The member is on line 5,
        // its `{` in column 9.
        let text = "types:\n  - name: T\n    members:\n      - {name: a, type: int}\n      - {name: b, type: double3}\n";
        let e = layout_text_json(text, "t.yaml").unwrap_err().to_string();
        assert!(e.starts_with("t.yaml:5:9: ") && e.contains("double"), "{e}");
        // In a nested anonymous struct: the outer member that holds it (line 4).
        let text = "types:\n  - name: T\n    members:\n      - name: inner\n        type:\n          struct:\n            - {name: v, type: double4}\n";
        let e = layout_text_json(text, "t.yaml").unwrap_err().to_string();
        assert!(e.starts_with("t.yaml:4:9: ") && e.contains("double"), "{e}");
    }
}
