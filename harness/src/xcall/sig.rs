//! Generated signatures for cross-producer calls: seeded and reproducible, built from the abi
//! type generator ([`crate::abi::random`]) and the source type classes of the ptx-interop 13.2
//! §2.3 table (integers of every width and signedness, pointers, 16/32/64-bit floats, handles,
//! aggregates and unions of every alignment 1..128, native vectors, bit-field structs, long
//! mixed lists, indirect calls through `.callprototype`).
//!
//! Every value carries its bytes' *significance mask* (which bits the source type defines;
//! padding is unspecified), so the GPU cases compare only what the ABI must carry.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::abi::layout::{layout, size_align, AddressSize};
use crate::abi::types::{Field, RecordKind, Scalar, Ty, TypeDef};

/// Which half of a pair a batch holds.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum Role {
    #[strum(serialize = "caller")]
    Caller,
    #[strum(serialize = "callee")]
    Callee,
}

/// Signatures whose argument bytes exceed this are trimmed by the generator (kernels keep the
/// arguments in local memory; the record buffer holds every received byte).
pub(crate) const MAX_ARG_BYTES: u64 = 2048;
/// Size of the callee's record buffer `gpucts_xcall_rec`.
pub(crate) const REC_BYTES: u64 = 4096;
/// Name of the callee module's record buffer.
pub(crate) const REC: &str = "gpucts_xcall_rec";

/// One parameter or return value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// Integers, `long`, pointers, `float`, `double`, handles (§1.4 `.b64`), and `__half`
    /// (CUDA's 16-bit float: a 2-byte struct, §2.3 note C forbids a 16-bit float `.param`).
    Scalar(Scalar),
    /// CUDA's `__nv_bfloat16` (a 2-byte struct, as `__half`).
    Bf16,
    /// A native vector (§1.2).
    Vector(Scalar, u32),
    /// A struct or union, optionally with an explicit alignment attribute.
    Agg(Box<Agg>),
}

/// An aggregate: `def`, wrapped in `struct __align__(align) W { def v; }` when `align_attr`
/// is set (alignments 32..128 exist only that way).
#[derive(Debug, Clone, PartialEq)]
pub struct Agg {
    pub def: TypeDef,
    pub align_attr: Option<u64>,
    /// Why it was chosen, for reports (`random r1234`, `3 x char`, `aligned 64`).
    pub what: String,
}

impl Agg {
    /// The C name of the type passed: the wrapper's when there is one.
    pub(crate) fn c_name(&self) -> String {
        match self.align_attr {
            Some(a) => format!("{}_a{a}", self.def.name),
            None => self.def.name.clone(),
        }
    }
}

/// The §2.3 row a value falls in, for reports and for the reference emitter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Int { bytes: u64, signed: bool },
    Pointer,
    Float { bytes: u64 },
    Handle,
    Aggregate { size: u64, align: u64 },
}

impl Val {
    pub(crate) fn size_align(&self) -> (u64, u64) {
        let a = AddressSize::A64;
        match self {
            Val::Scalar(Scalar::Half) | Val::Bf16 => (2, 2),
            Val::Scalar(s) => size_align(&Ty::Scalar(*s), a).unwrap_or((8, 8)),
            Val::Vector(s, n) => size_align(&Ty::Vector(*s, *n), a).unwrap_or((8, 8)),
            Val::Agg(g) => {
                let (s, al) = layout(&g.def, a)
                    .map(|l| (l.size, l.align))
                    .unwrap_or((1, 1));
                let al = al.max(g.align_attr.unwrap_or(1));
                (s.div_ceil(al) * al, al)
            }
        }
    }

    pub fn size(&self) -> u64 {
        self.size_align().0
    }

    pub fn class(&self) -> Class {
        let (size, align) = self.size_align();
        match self {
            Val::Scalar(s) if s.is_integer() => Class::Int {
                bytes: size,
                signed: matches!(
                    s,
                    Scalar::Char | Scalar::SChar | Scalar::Short | Scalar::Int | Scalar::Long
                ) || *s == Scalar::LongLong,
            },
            Val::Scalar(Scalar::Pointer) => Class::Pointer,
            Val::Scalar(Scalar::Float) | Val::Scalar(Scalar::Double) => {
                Class::Float { bytes: size }
            }
            Val::Scalar(Scalar::TextureHandle) | Val::Scalar(Scalar::SurfaceHandle) => {
                Class::Handle
            }
            _ => Class::Aggregate { size, align },
        }
    }

    /// The §2.3 table's `.param` declaration for this value (name omitted):
    /// `.s32`, `.u64`, `.f32`, `.b64`, `.align A .b8 [N]`.
    pub(crate) fn table_decl(&self) -> String {
        match self.class() {
            Class::Int { bytes, signed } => {
                let w = if bytes <= 4 { 32 } else { 64 };
                format!(".{}{w}", if signed { 's' } else { 'u' })
            }
            Class::Pointer => ".u64".into(),
            Class::Float { bytes } => format!(".f{}", bytes * 8),
            Class::Handle => ".b64".into(),
            Class::Aggregate { size, align } => format!(".align {align} .b8 [{size}]"),
        }
    }

    /// Short human description: `int`, `struct r12 (24 B, align 8)`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Val::Scalar(Scalar::Half) => "__half".into(),
            Val::Scalar(s) => s.yaml_name().into(),
            Val::Bf16 => "__nv_bfloat16".into(),
            Val::Vector(s, n) => format!("{} x {n} vector", s.yaml_name()),
            Val::Agg(g) => {
                let (s, a) = self.size_align();
                format!(
                    "{} {} ({s} B, align {a}; {})",
                    g.def.kind.keyword(),
                    g.c_name(),
                    g.what
                )
            }
        }
    }

    /// Per byte, the bits the source type defines (padding bits are 0).
    pub(crate) fn mask(&self) -> Vec<u8> {
        let (size, _) = self.size_align();
        let mut m = vec![0u8; size as usize];
        match self {
            Val::Agg(g) => record_mask(&g.def, 0, &mut m),
            _ => m.iter_mut().for_each(|b| *b = 0xFF),
        }
        m
    }
}

fn set_bits(m: &mut [u8], bit: u64, width: u64) {
    for b in bit..bit + width {
        if let Some(byte) = m.get_mut((b / 8) as usize) {
            *byte |= 1 << (b % 8);
        }
    }
}

fn ty_mask(t: &Ty, off: u64, m: &mut [u8]) {
    match t {
        Ty::Record(r) => record_mask(r, off, m),
        Ty::Array(e, n) => {
            let (es, _) = size_align(e, AddressSize::A64).unwrap_or((0, 1));
            for i in 0..*n {
                ty_mask(e, off + i * es, m);
            }
        }
        _ => {
            let (s, _) = size_align(t, AddressSize::A64).unwrap_or((0, 1));
            set_bits(m, off * 8, s * 8);
        }
    }
}

fn record_mask(r: &TypeDef, off: u64, m: &mut [u8]) {
    let Ok(l) = layout(r, AddressSize::A64) else {
        return;
    };
    for (f, ml) in r.fields.iter().zip(&l.members) {
        match (ml.bit_offset, ml.bit_width) {
            (Some(b), Some(w)) => {
                if f.name.is_some() {
                    set_bits(m, off * 8 + b, u64::from(w));
                }
            }
            _ => ty_mask(&f.ty, off + ml.offset, m),
        }
    }
}

/// One generated signature: `R xcall_f<seed>(P0, P1, ...)`, called from kernel
/// `xcall_k<seed>`, directly or through a function pointer (`.callprototype`).
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    pub seed: u64,
    /// What the seed's slot in the class cycle is meant to exercise.
    pub kind: &'static str,
    pub ret: Option<Val>,
    pub params: Vec<Val>,
    pub indirect: bool,
}

impl Signature {
    pub fn callee(&self) -> String {
        format!("xcall_f{}", self.seed)
    }

    pub fn kernel(&self) -> String {
        format!("xcall_k{}", self.seed)
    }

    /// Every aggregate the signature uses.
    pub(crate) fn aggs(&self) -> impl Iterator<Item = &Agg> {
        self.ret.iter().chain(&self.params).filter_map(|v| match v {
            Val::Agg(g) => Some(g.as_ref()),
            _ => None,
        })
    }

    /// Offset of each parameter's bytes in the record buffer (packed, in order).
    pub(crate) fn rec_offsets(&self) -> Vec<u64> {
        let mut off = 0;
        self.params
            .iter()
            .map(|p| {
                let o = off;
                off += p.size();
                o
            })
            .collect()
    }

    /// The record-buffer indices the return value's bytes are built from: fully significant
    /// received bytes, cycled. Empty when no byte is fully significant.
    pub(crate) fn ret_sources(&self) -> Vec<u64> {
        let mut full = Vec::new();
        for (p, off) in self.params.iter().zip(self.rec_offsets()) {
            for (j, m) in p.mask().iter().enumerate() {
                if *m == 0xFF {
                    full.push(off + j as u64);
                }
            }
        }
        let n = self.ret.as_ref().map_or(0, Val::size) as usize;
        if full.is_empty() {
            return Vec::new();
        }
        (0..n).map(|j| full[(j * 7) % full.len()]).collect()
    }

    /// One line for reports: `seed 12 (mixed, indirect): int (char, struct r.. )`.
    pub(crate) fn describe(&self) -> String {
        let ps: Vec<String> = self.params.iter().map(Val::describe).collect();
        format!(
            "seed {} ({}{}): {} ({})",
            self.seed,
            self.kind,
            if self.indirect { ", indirect" } else { "" },
            self.ret.as_ref().map_or("void".into(), Val::describe),
            ps.join(", ")
        )
    }
}

/// The graffiti byte the caller writes at byte `j` of parameter `i` of signature `seed`.
pub fn graffiti(seed: u64, i: usize, j: u64) -> u8 {
    let k = (seed.wrapping_mul(31) + (i as u64) * 0x47 + 0x11) & 0xFF;
    ((j * 31 + k) & 0xFF) as u8
}

/// The key a callee XORs into return byte `j`.
pub(crate) fn ret_key(j: u64) -> u8 {
    (0x5A + j * 13) as u8
}

/// The constant a callee returns at byte `j` when no received byte is fully significant.
pub(crate) fn ret_const(j: u64) -> u8 {
    (0xC3 ^ j) as u8
}

/// Integer scalars: every width and signedness of §1.1 (plain `char` too, it mangles apart),
/// in the abi type vocabulary's order.
pub(crate) fn ints() -> impl Iterator<Item = Scalar> {
    Scalar::ALL.iter().copied().filter(|s| s.is_integer())
}

/// The scalar-like classes, cycled so each appears as parameter and as return value.
fn scalar_cycle() -> Vec<Val> {
    let mut v: Vec<Val> = ints().map(Val::Scalar).collect();
    v.extend([
        Val::Scalar(Scalar::Pointer),
        Val::Scalar(Scalar::Half),
        Val::Bf16,
        Val::Scalar(Scalar::Float),
        Val::Scalar(Scalar::Double),
        Val::Scalar(Scalar::TextureHandle),
    ]);
    v
}

fn field(name: &str, s: Scalar) -> Field {
    Field {
        name: Some(name.to_string()),
        ty: Ty::Scalar(s),
        bits: None,
    }
}

/// Hand-picked aggregates: 3 × char, padded ones, an empty-ish one, and every alignment
/// 1..128 (the §2.3 note D list).
pub(crate) fn fixed_agg(k: usize, name: String) -> Agg {
    use Scalar::*;
    let st = |fields: Vec<Field>| TypeDef {
        name: name.clone(),
        kind: RecordKind::Struct,
        fields,
    };
    let (def, attr, what) = match k % 12 {
        0 => (
            st(vec![field("a", Char), field("b", Char), field("c", Char)]),
            None,
            "3 x char".to_string(),
        ),
        1 => (
            st(vec![field("c", Char), field("d", Double)]),
            None,
            "padded: char then double".into(),
        ),
        2 => (
            st(vec![field("d", Double), field("c", Char)]),
            None,
            "tail padding".into(),
        ),
        3 => (
            st(vec![
                Field {
                    name: None,
                    ty: Ty::Scalar(Int),
                    bits: Some(0),
                },
                field("c", Char),
            ]),
            None,
            "empty-ish: a zero-width bit field and a char".into(),
        ),
        4 => (
            st(vec![field("s", Short), field("c", Char)]),
            None,
            "align 2, padded".into(),
        ),
        5 => (
            TypeDef {
                name: name.clone(),
                kind: RecordKind::Union,
                fields: vec![field("i", Int), field("c", Char), field("f", Float)],
            },
            None,
            "union".into(),
        ),
        k => {
            // 6..11: alignment 4, 8, 16, 32, 64, 128 by attribute.
            let a = 1u64 << (k - 4);
            (
                st(vec![field("c", Char), field("s", Short)]),
                Some(a),
                format!("aligned {a}"),
            )
        }
    };
    Agg {
        def,
        align_attr: attr,
        what,
    }
}

struct Gen {
    rng: ChaCha8Rng,
    seed: u64,
    next: u64,
}

impl Gen {
    /// A random record from the abi generator, with a unique name in this batch.
    fn random_agg(&mut self, want: impl Fn(&TypeDef) -> bool) -> Agg {
        // Seeds of the abi generator reserved for this signature: seed * 1000 + n.
        for _ in 0..200 {
            self.next += 1;
            let s = 1_000_000 + self.seed * 1000 + self.next;
            let t = crate::abi::random::random_type(s);
            let ok = layout(&t, AddressSize::A64).is_ok_and(|l| l.size <= 256);
            if ok && want(&t) {
                return Agg {
                    what: format!("abi random type r{s}"),
                    def: t,
                    align_attr: None,
                };
            }
        }
        self.fixed(0)
    }

    fn fixed(&mut self, k: usize) -> Agg {
        self.next += 1;
        fixed_agg(k, format!("xa{}_{}", self.seed, self.next))
    }

    fn vector(&mut self) -> Val {
        const POOL: [Scalar; 9] = [
            Scalar::Char,
            Scalar::UChar,
            Scalar::Short,
            Scalar::UShort,
            Scalar::Int,
            Scalar::UInt,
            Scalar::LongLong,
            Scalar::Float,
            Scalar::Double,
        ];
        let (s, n) =
            crate::abi::random::pick_vector(&mut self.rng, |r| POOL[r.random_range(0..POOL.len())]);
        Val::Vector(s, n)
    }

    fn any(&mut self, small: bool) -> Val {
        let cyc = scalar_cycle();
        match self.rng.random_range(0..10) {
            0..=5 => cyc[self.rng.random_range(0..cyc.len())].clone(),
            6 => self.vector(),
            7 => {
                let k = self.rng.random_range(0..12);
                let k = if small && k >= 8 { k - 6 } else { k };
                Val::Agg(Box::new(self.fixed(k)))
            }
            _ if small => Val::Agg(Box::new(self.fixed(0))),
            _ => Val::Agg(Box::new(self.random_agg(|_| true))),
        }
    }
}

fn has_bit_field(t: &TypeDef) -> bool {
    crate::abi::types::all_records(std::slice::from_ref(t))
        .iter()
        .any(|r| r.fields.iter().any(|f| f.bits.is_some_and(|w| w > 0)))
}

/// The class cycle: seed % 12 picks what the signature exercises.
pub(crate) const KINDS: &[&str] = &[
    "scalar",
    "fixed aggregate",
    "random aggregate",
    "random aggregate",
    "union",
    "native vector",
    "bit-field struct",
    "long mixed list",
    "mixed",
    "mixed",
    "void mixed",
    "handles",
];

/// The signature for one seed.
pub fn signature(seed: u64) -> Signature {
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(seed ^ 0x7863_616c_6c00),
        seed,
        next: 0,
    };
    let cyc = scalar_cycle();
    let k = (seed % 12) as usize;
    let round = (seed / 12) as usize;
    let (ret, mut params): (Option<Val>, Vec<Val>) = match k {
        0 => {
            let mut p = vec![cyc[round % cyc.len()].clone()];
            for _ in 0..g.rng.random_range(0..3) {
                p.push(cyc[g.rng.random_range(0..cyc.len())].clone());
            }
            (Some(cyc[(round + 5) % cyc.len()].clone()), p)
        }
        1 => {
            let a = Val::Agg(Box::new(g.fixed(round)));
            let r = Val::Agg(Box::new(g.fixed(round + 7)));
            (Some(r), vec![a, g.any(true)])
        }
        2 | 3 => {
            let a = Val::Agg(Box::new(g.random_agg(|_| true)));
            let r = if g.rng.random_bool(0.5) {
                Val::Agg(Box::new(g.random_agg(|_| true)))
            } else {
                g.any(true)
            };
            (Some(r), vec![a, g.any(false)])
        }
        4 => {
            let u = Val::Agg(Box::new(g.random_agg(|t| t.kind == RecordKind::Union)));
            let r = Val::Agg(Box::new(g.random_agg(|t| t.kind == RecordKind::Union)));
            (Some(r), vec![g.any(true), u])
        }
        5 => (Some(g.vector()), vec![g.vector(), g.any(true), g.vector()]),
        6 => {
            let b = Val::Agg(Box::new(g.random_agg(has_bit_field)));
            let r = Val::Agg(Box::new(g.random_agg(has_bit_field)));
            (Some(r), vec![b])
        }
        7 => {
            let n = g.rng.random_range(32..=40);
            let p = (0..n).map(|_| g.any(true)).collect();
            (Some(g.any(true)), p)
        }
        8 | 9 => {
            let n = g.rng.random_range(1..=8);
            let p = (0..n).map(|_| g.any(false)).collect();
            (Some(g.any(false)), p)
        }
        10 => {
            let n = g.rng.random_range(1..=6);
            (None, (0..n).map(|_| g.any(false)).collect())
        }
        _ => {
            let h = Val::Scalar(Scalar::TextureHandle);
            let s = Val::Scalar(Scalar::SurfaceHandle);
            (Some(h.clone()), vec![h, g.any(true), s])
        }
    };
    // Keep the argument bytes bounded: trim from the end (never below one parameter).
    while params.len() > 1 && params.iter().map(Val::size).sum::<u64>() > MAX_ARG_BYTES {
        params.pop();
    }
    Signature {
        seed,
        kind: KINDS[k],
        ret,
        params,
        indirect: seed % 5 == 2,
    }
}

/// Signatures `start .. start + count`.
pub fn signatures(start: u64, count: u64) -> Vec<Signature> {
    (start..start + count).map(signature).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_per_seed() {
        assert_eq!(signature(17), signature(17));
        assert_ne!(signature(17), signature(29));
        assert_eq!(signatures(5, 3)[1], signature(6));
    }

    /// Over the suite's 240 seeds every class of the §2.3 table appears as a parameter and as
    /// a return value, with the alignments of note D, and the special shapes the issue lists.
    #[test]
    fn every_class_is_covered() {
        let sigs = signatures(0, 240);
        let mut params = std::collections::BTreeSet::new();
        let mut rets = std::collections::BTreeSet::new();
        let mut aligns = std::collections::BTreeSet::new();
        let key = |v: &Val| match v {
            Val::Scalar(s) => format!("{s:?}"),
            Val::Bf16 => "bf16".into(),
            Val::Vector(..) => "vector".into(),
            Val::Agg(g) if g.def.kind == RecordKind::Union => "union".into(),
            Val::Agg(g) if has_bit_field(&g.def) => "bitfield".into(),
            Val::Agg(_) => "struct".into(),
        };
        for s in &sigs {
            for p in &s.params {
                params.insert(key(p));
                aligns.insert(p.size_align().1);
            }
            if let Some(r) = &s.ret {
                rets.insert(key(r));
                aligns.insert(r.size_align().1);
            }
        }
        for want in ints()
            .map(|s| format!("{s:?}"))
            .chain(
                [
                    "Pointer",
                    "Half",
                    "bf16",
                    "Float",
                    "Double",
                    "TextureHandle",
                ]
                .map(String::from),
            )
            .chain(["vector", "union", "bitfield", "struct"].map(String::from))
        {
            assert!(params.contains(&want), "param {want}: {params:?}");
            assert!(rets.contains(&want), "return {want}: {rets:?}");
        }
        for a in [1, 2, 4, 8, 16, 32, 64, 128] {
            assert!(aligns.contains(&a), "alignment {a}: {aligns:?}");
        }
        assert!(sigs.iter().any(|s| s.params.len() >= 32));
        assert!(sigs.iter().filter(|s| s.indirect).count() >= 40);
        assert!(sigs.iter().any(|s| s.ret.is_none()));
        assert!(sigs
            .iter()
            .flat_map(|s| s.aggs())
            .any(|a| a.what == "3 x char" && a.def.fields.len() == 3));
        for s in &sigs {
            let bytes: u64 = s.params.iter().map(Val::size).sum();
            assert!(
                bytes <= MAX_ARG_BYTES.max(s.params[0].size()),
                "{}",
                s.describe()
            );
        }
    }

    /// Masks follow the ch. 1 layout: padding bytes are 0, bit fields set their own bits.
    #[test]
    fn masks_leave_padding_out() {
        let padded = Val::Agg(Box::new(fixed_agg(1, "p".into())));
        let m = padded.mask();
        assert_eq!(m.len(), 16);
        assert_eq!(m[0], 0xFF);
        assert!(m[1..8].iter().all(|b| *b == 0), "{m:?}");
        assert!(m[8..].iter().all(|b| *b == 0xFF));
        let bits = TypeDef {
            name: "b".into(),
            kind: RecordKind::Struct,
            fields: vec![Field {
                name: Some("x".into()),
                ty: Ty::Scalar(Scalar::UInt),
                bits: Some(3),
            }],
        };
        let v = Val::Agg(Box::new(Agg {
            def: bits,
            align_attr: None,
            what: String::new(),
        }));
        // §1.3: allocated from the least significant bit; the rest of the int is padding.
        assert_eq!(v.mask(), vec![0b111, 0, 0, 0]);
        let a64 = Val::Agg(Box::new(fixed_agg(10, "a".into())));
        assert_eq!(a64.size_align(), (64, 64));
        assert_eq!(a64.table_decl(), ".align 64 .b8 [64]");
        assert_eq!(Val::Scalar(Scalar::Char).table_decl(), ".s32");
        assert_eq!(Val::Scalar(Scalar::ULong).table_decl(), ".u64");
        assert_eq!(Val::Scalar(Scalar::Half).table_decl(), ".align 2 .b8 [2]");
        assert_eq!(Val::Scalar(Scalar::TextureHandle).table_decl(), ".b64");
    }
}
