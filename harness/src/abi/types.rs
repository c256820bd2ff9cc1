//! The resolved model of C types the layout engine works on: scalars (ptx-interop 13.2 §1.1),
//! native vectors (§1.2), arrays and records with bit fields (§1.3). Read from YAML by
//! [`super::type_file`], laid out by [`super::layout`], rendered to C by [`super::render`].

use std::collections::BTreeSet;

/// The C scalar types the engine knows, each mapped to a row of the fundamental-types table
/// (ptx-interop 13.2 §1.1) or, for `long` and pointers, to the host's `.address_size`.
/// Types with no row in that table (`__int128`, `_Bool`, `long double`) are not described:
/// the spec gives them no size or alignment to check against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    Char,
    SChar,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    LongLong,
    ULongLong,
    Half,
    Float,
    Double,
    Pointer,
    /// A texture, sampler or surface reference passed as its `.b64` handle (§1.4).
    TextureHandle,
    SurfaceHandle,
}

impl Scalar {
    pub(crate) const ALL: &'static [Scalar] = &[
        Scalar::Char,
        Scalar::SChar,
        Scalar::UChar,
        Scalar::Short,
        Scalar::UShort,
        Scalar::Int,
        Scalar::UInt,
        Scalar::Long,
        Scalar::ULong,
        Scalar::LongLong,
        Scalar::ULongLong,
        Scalar::Half,
        Scalar::Float,
        Scalar::Double,
        Scalar::Pointer,
        Scalar::TextureHandle,
        Scalar::SurfaceHandle,
    ];

    /// Parse the C spelling used in YAML (`unsigned int`, `long long`, ...).
    pub fn parse(s: &str) -> Option<Scalar> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let norm = words.join(" ");
        Some(match norm.as_str() {
            "char" => Scalar::Char,
            "signed char" => Scalar::SChar,
            "unsigned char" | "uchar" => Scalar::UChar,
            "short" | "signed short" | "short int" => Scalar::Short,
            "unsigned short" | "ushort" => Scalar::UShort,
            // §1.3: "signed" alone and a bit field with no type both mean int.
            "int" | "signed" | "signed int" => Scalar::Int,
            "unsigned" | "unsigned int" | "uint" => Scalar::UInt,
            "long" | "signed long" | "long int" => Scalar::Long,
            "unsigned long" | "ulong" => Scalar::ULong,
            "long long" | "signed long long" | "longlong" => Scalar::LongLong,
            "unsigned long long" | "ulonglong" => Scalar::ULongLong,
            "half" | "__half" | "_Float16" => Scalar::Half,
            "float" => Scalar::Float,
            "double" => Scalar::Double,
            "pointer" | "void*" | "void *" => Scalar::Pointer,
            "texture_handle" | "sampler_handle" => Scalar::TextureHandle,
            "surface_handle" => Scalar::SurfaceHandle,
            _ => return None,
        })
    }

    pub(crate) fn is_integer(self) -> bool {
        matches!(
            self,
            Scalar::Char
                | Scalar::SChar
                | Scalar::UChar
                | Scalar::Short
                | Scalar::UShort
                | Scalar::Int
                | Scalar::UInt
                | Scalar::Long
                | Scalar::ULong
                | Scalar::LongLong
                | Scalar::ULongLong
        )
    }

    /// The bit-field types of the §1.3 table (plain char/short/int/long long are signed).
    /// `long` is not in the table, so it is not a bit-field type here.
    pub(crate) fn is_bit_field_type(self) -> bool {
        self.is_integer() && !matches!(self, Scalar::Long | Scalar::ULong)
    }

    /// The C spelling, for clang and for NVRTC.
    pub(crate) fn c_name(self, dialect: Dialect) -> &'static str {
        match self {
            Scalar::Char => "char",
            Scalar::SChar => "signed char",
            Scalar::UChar => "unsigned char",
            Scalar::Short => "short",
            Scalar::UShort => "unsigned short",
            Scalar::Int => "int",
            Scalar::UInt => "unsigned int",
            Scalar::Long => "long",
            Scalar::ULong => "unsigned long",
            Scalar::LongLong => "long long",
            Scalar::ULongLong => "unsigned long long",
            // NVRTC has no 16-bit float type without the CUDA runtime's cuda_fp16.h (not
            // part of the toolchain gpucts relies on); its storage, .b16, is what layout needs.
            Scalar::Half => match dialect {
                Dialect::C => "_Float16",
                Dialect::Cuda => "unsigned short",
            },
            Scalar::Float => "float",
            Scalar::Double => "double",
            Scalar::Pointer => "void *",
            // CUDA's object handles are `unsigned long long` typedefs; use CUDA's own names
            // where NVRTC compiles.
            Scalar::TextureHandle => match dialect {
                Dialect::C => "unsigned long long",
                Dialect::Cuda => "cudaTextureObject_t",
            },
            Scalar::SurfaceHandle => match dialect {
                Dialect::C => "unsigned long long",
                Dialect::Cuda => "cudaSurfaceObject_t",
            },
        }
    }

    /// The YAML spelling (round-trips through [`Scalar::parse`]).
    pub(crate) fn yaml_name(self) -> &'static str {
        match self {
            Scalar::Half => "half",
            Scalar::Pointer => "pointer",
            Scalar::TextureHandle => "texture_handle",
            Scalar::SurfaceHandle => "surface_handle",
            s => s.c_name(Dialect::C),
        }
    }

    /// The element name CUDA uses in its vector type names (`uchar4`, `longlong2`), if any.
    pub(super) fn cuda_vector_stem(self) -> Option<&'static str> {
        Some(match self {
            Scalar::Char | Scalar::SChar => "char",
            Scalar::UChar => "uchar",
            Scalar::Short => "short",
            Scalar::UShort => "ushort",
            Scalar::Int => "int",
            Scalar::UInt => "uint",
            Scalar::Long => "long",
            Scalar::ULong => "ulong",
            Scalar::LongLong => "longlong",
            Scalar::ULongLong => "ulonglong",
            Scalar::Float => "float",
            Scalar::Double => "double",
            _ => return None,
        })
    }
}

/// Which compiler a rendering is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// C for clang-19 `--target=nvptx64-nvidia-cuda`.
    C,
    /// CUDA C++ for NVRTC.
    Cuda,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    Struct,
    Union,
}

impl RecordKind {
    pub fn keyword(self) -> &'static str {
        match self {
            RecordKind::Struct => "struct",
            RecordKind::Union => "union",
        }
    }
}

/// A resolved type.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Scalar(Scalar),
    /// A native vector (§1.2): element type and element count.
    Vector(Scalar, u32),
    Array(Box<Ty>, u64),
    Record(Box<TypeDef>),
}

/// One member of a struct or union.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: Option<String>,
    pub ty: Ty,
    /// Bit-field width (`Some(0)` for a zero-width bit field).
    pub bits: Option<u32>,
}

/// A named struct or union: the unit the engine lays out and the oracles check.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    pub name: String,
    pub kind: RecordKind,
    pub fields: Vec<Field>,
}

/// A member that breaks a C rule for members (ptx-interop 13.2 §1.3 for bit fields).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("only bit fields may be unnamed")]
    Unnamed,
    #[error("a bit field needs an integer type")]
    NotScalar,
    #[error("`{scalar}` is not a bit-field type of ptx-interop 13.2 §1.3")]
    NotBitFieldType { scalar: &'static str },
    #[error("width {width} exceeds the {max} bits of its type")]
    TooWide { width: u32, max: u64 },
    #[error("a zero-width bit field must be unnamed")]
    NamedZeroWidth,
}

/// Every record reachable from `types`, nested ones first, each once (by name).
pub(crate) fn all_records(types: &[TypeDef]) -> Vec<&TypeDef> {
    fn visit<'a>(t: &'a TypeDef, seen: &mut BTreeSet<String>, out: &mut Vec<&'a TypeDef>) {
        for f in &t.fields {
            let mut ty = &f.ty;
            while let Ty::Array(e, _) = ty {
                ty = e;
            }
            if let Ty::Record(r) = ty {
                visit(r, seen, out);
            }
        }
        if seen.insert(t.name.clone()) {
            out.push(t);
        }
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for t in types {
        visit(t, &mut seen, &mut out);
    }
    out
}

/// The name the rendering uses for a native vector type.
pub(crate) fn vector_type_name(s: Scalar, n: u32, dialect: Dialect) -> String {
    match (dialect, s.cuda_vector_stem(), s) {
        (Dialect::Cuda, Some(stem), _) => format!("{stem}{n}"),
        _ => format!("gpucts_vec_{}_{n}", s.yaml_name().replace(' ', "_")),
    }
}
