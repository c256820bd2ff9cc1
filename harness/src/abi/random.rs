//! Seeded random types in the spirit of GCC's struct-layout-1 generator: scalars, native
//! vectors, arrays, nested structs and unions, and bit fields of random widths (zero-width and
//! unnamed ones included). One seed gives one type, the same on every machine; every type is
//! valid C (bit-field widths within their type, zero-width bit fields unnamed, at least one
//! named member).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::layout::validate_field;
use super::layout::{vector_exists, AddressSize};
use super::types::{Field, RecordKind, Scalar, Ty, TypeDef};

/// The types for seeds `seed_start .. seed_start + count`, named `r<seed>`.
pub fn random_batch(seed_start: u64, count: usize) -> Vec<TypeDef> {
    (seed_start..seed_start + count as u64)
        .map(random_type)
        .collect()
}

/// The type for one seed.
pub fn random_type(seed: u64) -> TypeDef {
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed),
        next_nested: 0,
    };
    let kind = if g.rng.random_ratio(1, 6) {
        RecordKind::Union
    } else {
        RecordKind::Struct
    };
    g.record(format!("r{seed}"), kind, 0)
}

struct Gen {
    rng: ChaCha8Rng,
    next_nested: u32,
}

const BIT_FIELD_TYPES: &[Scalar] = &[
    Scalar::Char,
    Scalar::SChar,
    Scalar::UChar,
    Scalar::Short,
    Scalar::UShort,
    Scalar::Int,
    Scalar::UInt,
    Scalar::LongLong,
    Scalar::ULongLong,
];

impl Gen {
    fn record(&mut self, name: String, kind: RecordKind, depth: u32) -> TypeDef {
        let n = self.rng.random_range(1..=if depth == 0 { 12 } else { 5 });
        let mut fields = Vec::with_capacity(n);
        for i in 0..n {
            fields.push(self.field(&name, i, depth));
        }
        if !fields.iter().any(|f| f.name.is_some()) {
            // C needs a named member; add a plain one.
            fields.push(Field {
                name: Some(format!("f{n}")),
                ty: Ty::Scalar(self.scalar()),
                bits: None,
            });
        }
        for f in &fields {
            debug_assert!(validate_field(f).is_ok(), "{f:?}");
        }
        TypeDef { name, kind, fields }
    }

    fn field(&mut self, owner: &str, i: usize, depth: u32) -> Field {
        let name = Some(format!("f{i}"));
        // Bit fields come in runs in real code; struct-layout-1 weights them heavily too.
        if self.rng.random_ratio(1, 3) {
            let t = BIT_FIELD_TYPES[self.rng.random_range(0..BIT_FIELD_TYPES.len())];
            let max = super::layout::scalar_size(t, AddressSize::A64) as u32 * 8;
            let roll = self.rng.random_range(0..10);
            let (w, named) = match roll {
                0 => (0, false),                                     // zero-width, unnamed
                1 => (self.rng.random_range(1..=max), false),        // unnamed padding
                2 => (max, true),                                    // full width
                _ => (self.rng.random_range(1..=max.min(17)), true), // the common case
            };
            return Field {
                name: if named { name } else { None },
                ty: Ty::Scalar(t),
                bits: Some(w),
            };
        }
        let ty = self.member_type(owner, i, depth);
        Field {
            name,
            ty,
            bits: None,
        }
    }

    fn member_type(&mut self, owner: &str, i: usize, depth: u32) -> Ty {
        match self.rng.random_range(0..10) {
            0..=4 => Ty::Scalar(self.scalar()),
            5 | 6 => self.vector(),
            7 => {
                let count = self.rng.random_range(1..=5);
                let elem = match self.rng.random_range(0..4) {
                    0 => self.vector(),
                    1 if depth < 2 => self.nested(owner, i, depth),
                    2 => Ty::Array(
                        Box::new(Ty::Scalar(self.scalar())),
                        self.rng.random_range(1..=3),
                    ),
                    _ => Ty::Scalar(self.scalar()),
                };
                Ty::Array(Box::new(elem), count)
            }
            _ if depth < 2 => self.nested(owner, i, depth),
            _ => Ty::Scalar(self.scalar()),
        }
    }

    fn nested(&mut self, owner: &str, _i: usize, depth: u32) -> Ty {
        self.next_nested += 1;
        // Nested names derive from the top-level one, so a batch has no clashes.
        let top = owner.split('_').next().unwrap_or(owner);
        let name = format!("{top}_{}", self.next_nested);
        let kind = if self.rng.random_ratio(1, 3) {
            RecordKind::Union
        } else {
            RecordKind::Struct
        };
        Ty::Record(Box::new(self.record(name, kind, depth + 1)))
    }

    fn scalar(&mut self) -> Scalar {
        pick_scalar(&mut self.rng)
    }

    fn vector(&mut self) -> Ty {
        let (s, n) = pick_vector(&mut self.rng, pick_scalar);
        Ty::Vector(s, n)
    }
}

/// A member scalar: any of [`Scalar::ALL`] but the two handles, a texture handle once in 30.
pub(crate) fn pick_scalar<R: Rng>(rng: &mut R) -> Scalar {
    // Handles are `.b64` like `unsigned long long`; keep them rarer.
    let pool = &Scalar::ALL[..Scalar::ALL.len() - 2];
    if rng.random_ratio(1, 30) {
        return Scalar::TextureHandle;
    }
    pool[rng.random_range(0..pool.len())]
}

/// A native vector (§1.2): an element from `scalar` and 1..=4 elements, drawn again until the
/// vector exists. Shared by the xcall signature generator (its own element pool).
pub(crate) fn pick_vector<R: Rng>(
    rng: &mut R,
    mut scalar: impl FnMut(&mut R) -> Scalar,
) -> (Scalar, u32) {
    loop {
        let s = scalar(rng);
        let n = rng.random_range(1..=4);
        if vector_exists(s, n, AddressSize::A64) {
            return (s, n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::layout::layout;

    #[test]
    fn deterministic_per_seed() {
        assert_eq!(random_type(42), random_type(42));
        assert_ne!(random_type(42), random_type(43));
        assert_eq!(random_batch(7, 3)[2], random_type(9));
    }

    #[test]
    fn every_generated_type_is_valid_and_lays_out() {
        let mut saw = (false, false, false, false, false);
        for t in random_batch(0, 500) {
            for r in crate::abi::types::all_records(std::slice::from_ref(&t)) {
                assert!(r.fields.iter().any(|f| f.name.is_some()), "{}", r.name);
                for f in &r.fields {
                    validate_field(f).unwrap_or_else(|e| panic!("{}: {e}", r.name));
                    match (f.bits, &f.name, &f.ty) {
                        (Some(0), _, _) => saw.0 = true,
                        (Some(_), None, _) => saw.1 = true,
                        (None, _, Ty::Vector(..)) => saw.2 = true,
                        (None, _, Ty::Record(_)) => saw.3 = true,
                        (None, _, Ty::Array(..)) => saw.4 = true,
                        _ => {}
                    }
                }
                layout(r, AddressSize::A64).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        assert_eq!(
            saw,
            (true, true, true, true, true),
            "every kind of member appears"
        );
    }

    /// The generator must exercise the §1.3 rules that move a bit field: crossing a storage
    /// unit (the field starts past the previous member's end) and zero-width fields that
    /// advance allocation. Counted over the struct records of 500 seeds.
    #[test]
    fn bit_field_rules_are_exercised() {
        let (mut bumped, mut advanced, mut shared) = (0, 0, 0);
        for t in random_batch(0, 500) {
            for r in crate::abi::types::all_records(std::slice::from_ref(&t)) {
                if r.kind != RecordKind::Struct {
                    continue;
                }
                let l = layout(r, AddressSize::A64).unwrap();
                let mut end = 0u64; // end of the previous member, in bits
                for m in &l.members {
                    match (m.bit_offset, m.bit_width) {
                        (Some(b), Some(0)) => {
                            if b > end {
                                advanced += 1;
                            }
                            end = b;
                        }
                        (Some(b), Some(w)) => {
                            if b > end.div_ceil(8) * 8 {
                                bumped += 1;
                            }
                            if b % 8 != 0 {
                                shared += 1;
                            }
                            end = b + u64::from(w);
                        }
                        _ => end = (m.offset + m.size) * 8,
                    }
                }
            }
        }
        assert!(
            bumped > 50 && advanced > 20 && shared > 50,
            "{bumped} {advanced} {shared}"
        );
    }
}
