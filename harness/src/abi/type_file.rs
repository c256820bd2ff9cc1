//! Type description files: the YAML syntax suites use to name C types, read into the model of
//! [`super::types`] with every C rule and every layout error placed at `file:line:column`.
//!
//! ```yaml
//! types:
//!   - name: S                          # kind: struct (default) or union
//!     members:
//!       - {name: c, type: char}
//!       - {name: v, type: float4}                  # CUDA vector shorthand
//!       - {name: w, type: {vector: float, count: 3}}
//!       - {name: a, type: {array: short, count: 3}}
//!       - {name: n, type: Other}                   # a type defined earlier in the file
//!       - {name: i, type: {union: [{name: x, type: int}, {name: y, type: char}]}}
//!       - {name: b, type: unsigned int, bits: 3}   # bit field
//!       - {type: int, bits: 0}                     # unnamed, zero-width
//!       - {name: d, bits: 6}                       # bit field type defaults to int (§1.3)
//! ```

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

use super::layout::{layout, validate_field, Layout, LayoutError};
use super::types::{Field, RecordKind, Scalar, Ty, TypeDef};

// ---------------------------------------------------------------------------------------------
// YAML model

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    /// `.address_size` of the module the types live in: 32 or 64 (the default).
    #[serde(default)]
    address_size: Option<u32>,
    types: Vec<Spanned<TypeDefRepr>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TypeDefRepr {
    name: String,
    #[serde(default)]
    kind: Option<String>,
    members: Vec<Spanned<MemberRepr>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberRepr {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "type", default)]
    ty: Option<TyRepr>,
    #[serde(default)]
    bits: Option<u32>,
}

/// A member's `type:` — a name (scalar, vector shorthand, earlier type) or one of the maps
/// `{vector: T, count: N}`, `{array: TYPE, count: N}`, `{struct: [MEMBERS]}`,
/// `{union: [MEMBERS]}`. Deserialized by hand so a wrong key is reported by name.
#[derive(Debug)]
enum TyRepr {
    Name(String),
    Vector { vector: String, count: u32 },
    Array { array: Box<TyRepr>, count: u64 },
    Struct(Vec<Spanned<MemberRepr>>),
    Union(Vec<Spanned<MemberRepr>>),
}

impl<'de> Deserialize<'de> for TyRepr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = TyRepr;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a type name or a map with `vector`, `array`, `struct` or `union`")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TyRepr, E> {
                Ok(TyRepr::Name(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<TyRepr, A::Error> {
                use serde::de::Error;
                let mut vector = None;
                let mut array = None;
                let mut count: Option<u64> = None;
                let mut record = None;
                while let Some(k) = m.next_key::<String>()? {
                    match k.as_str() {
                        "vector" => vector = Some(m.next_value::<String>()?),
                        "array" => array = Some(Box::new(m.next_value::<TyRepr>()?)),
                        "count" => count = Some(m.next_value()?),
                        "struct" => record = Some(TyRepr::Struct(m.next_value()?)),
                        "union" => record = Some(TyRepr::Union(m.next_value()?)),
                        other => {
                            return Err(A::Error::unknown_field(
                                other,
                                &["vector", "array", "count", "struct", "union"],
                            ))
                        }
                    }
                }
                match (vector, array, count, record) {
                    (Some(v), None, Some(n), None) => Ok(TyRepr::Vector {
                        vector: v,
                        count: u32::try_from(n).map_err(A::Error::custom)?,
                    }),
                    (None, Some(a), Some(n), None) => Ok(TyRepr::Array { array: a, count: n }),
                    (None, None, None, Some(r)) => Ok(r),
                    _ => Err(A::Error::custom(
                        "expected {vector: T, count: N}, {array: TYPE, count: N}, {struct: [...]} or {union: [...]}",
                    )),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A type file that does not read: `file:line:column: message`, or `file: message` where no
/// position is known (`line` 0); the message names the type and member at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", if *line == 0 { format!("{file}: {message}") } else { format!("{file}:{line}:{column}: {message}") })]
pub(crate) struct TypeFileError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

/// Parse a type file. Errors name the file, the line where serde_saphyr knows it, and the type
/// and member at fault.
pub(crate) fn parse_types(text: &str, origin: &str) -> Result<Vec<TypeDef>, TypeFileError> {
    parse_type_file(text, origin).map(|(_, t)| t)
}

/// [`parse_types`], also returning the file's `address_size:` (64 when absent).
pub(crate) fn parse_type_file(
    text: &str,
    origin: &str,
) -> Result<(crate::ptx::AddressSize, Vec<TypeDef>), TypeFileError> {
    use crate::ptx::AddressSize;
    let file: FileRepr = crate::suite::from_yaml(text).map_err(|(l, c, m)| TypeFileError {
        file: origin.to_string(),
        line: l,
        column: c,
        message: m,
    })?;
    let address_size = match file.address_size {
        None | Some(64) => AddressSize::A64,
        Some(32) => AddressSize::A32,
        Some(n) => {
            return Err(TypeFileError {
                file: origin.to_string(),
                line: 0,
                column: 0,
                message: format!("address_size {n}: PTX's .address_size is 32 or 64"),
            })
        }
    };
    Ok((address_size, parse_type_defs(file, origin, address_size)?))
}

/// The most members one type may hold once every use of an earlier type is counted again
/// (a type used twice in each of 24 nested types is 2^24 members: gigabytes). Checked while
/// resolving, before a type is copied into another.
pub(crate) const MAX_TYPE_MEMBERS: u64 = 100_000;

/// The same count over all the types of one file.
pub(crate) const MAX_FILE_MEMBERS: u64 = 1_000_000;

/// A reading error: line, column (0 when unknown) and message.
type At = (u64, u64, String);

/// Every aggregate name of the file so far, defined or derived (a nested anonymous aggregate
/// is named OUTER_MEMBER), with where it comes from: `abi layout`, the renderings and the
/// oracles key aggregates by name, so two aggregates with one name would merge into one and
/// the other would vanish from the output.
type Names = BTreeMap<String, (u64, u64, String)>;

/// Claim `name` for the aggregate that `what` describes, at `at`; `subject` starts the
/// error, which says which aggregate already has the name, and where.
fn claim(
    names: &mut Names,
    name: &str,
    subject: &str,
    what: String,
    at: (u64, u64),
) -> Result<(), At> {
    if let Some((l, c, prev)) = names.get(name) {
        return Err((
            at.0,
            at.1,
            format!("{subject} already the name of {prev} (line {l}, column {c}); a nested anonymous struct or union is named OUTER_MEMBER, so rename one of them"),
        ));
    }
    names.insert(name.to_string(), (at.0, at.1, what));
    Ok(())
}

/// Why `name` cannot name a type of the file although it is an identifier and no keyword: a
/// member `type:` naming it would mean the built-in (the reader tries scalars and vector
/// shorthands first), so the user's type would be silently shadowed; and the renderings and
/// oracles define `gpucts_*` names of their own.
fn reserved_type_name(name: &str) -> Option<String> {
    if let Some(s) = Scalar::parse(name) {
        return Some(format!(
            "names the built-in scalar `{}` (ptx-interop 13.2 §1.1): a member's `type: {name}` means the scalar",
            s.yaml_name()
        ));
    }
    if let Some(Ty::Vector(s, n)) = parse_vector_shorthand(name) {
        return Some(format!(
            "names the built-in vector type `{name}` ({n} × {}, ptx-interop 13.2 §1.2): a member's `type: {name}` means the vector",
            s.yaml_name()
        ));
    }
    if name.starts_with("gpucts_") {
        return Some(
            "starts with `gpucts_`, which the renderings and oracles use for names of their own"
                .into(),
        );
    }
    None
}

fn pos<T>(s: &Spanned<T>) -> (u64, u64) {
    (s.referenced.line(), s.referenced.column())
}

fn parse_type_defs(
    file: FileRepr,
    origin: &str,
    address_size: crate::ptx::AddressSize,
) -> Result<Vec<TypeDef>, TypeFileError> {
    let show = |(line, column, message): At| TypeFileError {
        file: origin.to_string(),
        line,
        column,
        message,
    };
    let mut defined: Vec<TypeDef> = Vec::new();
    // Members of each defined type, every nested use counted (see MAX_TYPE_MEMBERS).
    let mut sizes: BTreeMap<String, u64> = BTreeMap::new();
    let mut total = 0u64;
    let mut names = Names::new();
    for st in file.types {
        let (l, c) = pos(&st);
        let t = st.value;
        let kind = match t.kind.as_deref() {
            None | Some("struct") => RecordKind::Struct,
            Some("union") => RecordKind::Union,
            Some(k) => {
                return Err(show((
                    l,
                    c,
                    format!(
                        "type `{}`: unknown kind `{k}`; `kind:` is struct or union",
                        t.name
                    ),
                )))
            }
        };
        check_name(&t.name, "type name").map_err(|m| show((l, c, m.to_string())))?;
        if let Some(why) = reserved_type_name(&t.name) {
            return Err(show((
                l,
                c,
                format!("type name `{}` {why}; choose another name", t.name),
            )));
        }
        if defined.iter().any(|d| d.name == t.name) {
            return Err(show((
                l,
                c,
                format!("type `{}` defined twice; type names are unique", t.name),
            )));
        }
        claim(
            &mut names,
            &t.name,
            &format!("type name `{}` is", t.name),
            format!("type `{}`", t.name),
            (l, c),
        )
        .map_err(show)?;
        let mut budget = 0u64;
        let def = resolve_record(
            &t.name,
            kind,
            &t.members,
            &defined,
            &sizes,
            &mut budget,
            &mut names,
            (l, c),
        )
        .map_err(show)?;
        // What only laying the type out finds (a vector PTX does not have, an object past
        // the size limit) is reported here, at the member it is about, while the positions
        // are at hand (issue 10: errors found after parsing had no line).
        if let Err((i, e)) = crate::abi::layout::layout_at(&def, address_size) {
            let (ml, mc) = t.members.get(i).map(pos).unwrap_or((l, c));
            return Err(show((ml, mc, e.to_string())));
        }
        total = total.saturating_add(budget);
        if total > MAX_FILE_MEMBERS {
            return Err(show((
                l,
                c,
                format!(
                    "the types up to `{}` add up to {total} members when each use of a type is counted; at most {MAX_FILE_MEMBERS} per file",
                    def.name
                ),
            )));
        }
        sizes.insert(def.name.clone(), budget);
        defined.push(def);
    }
    Ok(defined)
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// C11 and C++17 keywords (and the alternative operator spellings): the oracles compile the
/// types as C (clang) and C++ (NVRTC), where a keyword cannot name a type or member.
const KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "compl",
    "concept",
    "const",
    "const_cast",
    "consteval",
    "constexpr",
    "constinit",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_Bool",
    "_Complex",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
];

/// Why a type or member name is refused; `what` is `type name` or `member name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NameError {
    #[error("{what} `{name}` is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)")]
    NotIdentifier { what: &'static str, name: String },
    #[error("{what} `{name}` is a C/C++ keyword; names must be identifiers that are not keywords")]
    Keyword { what: &'static str, name: String },
}

/// A type or member name must be a C identifier and no C/C++ keyword.
fn check_name(n: &str, what: &'static str) -> Result<(), NameError> {
    if !is_identifier(n) {
        return Err(NameError::NotIdentifier {
            what,
            name: n.to_string(),
        });
    }
    if KEYWORDS.contains(&n) {
        return Err(NameError::Keyword {
            what,
            name: n.to_string(),
        });
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn resolve_record(
    name: &str,
    kind: RecordKind,
    members: &[Spanned<MemberRepr>],
    defined: &[TypeDef],
    sizes: &BTreeMap<String, u64>,
    budget: &mut u64,
    names: &mut Names,
    at: (u64, u64),
) -> Result<TypeDef, At> {
    let mut fields = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, sm) in members.iter().enumerate() {
        let (l, c) = pos(sm);
        let m = &sm.value;
        let what = match &m.name {
            Some(n) => format!("type `{name}` member `{n}`"),
            None => format!("type `{name}` member #{i}"),
        };
        let fail = |e: String| (l, c, format!("{what}: {e}"));
        *budget += 1;
        if *budget > MAX_TYPE_MEMBERS {
            return Err(fail(format!(
                "type `{name}` grows past {MAX_TYPE_MEMBERS} members when each use of a type is counted; at most {MAX_TYPE_MEMBERS}"
            )));
        }
        if let Some(n) = &m.name {
            check_name(n, "member name").map_err(|e| (l, c, format!("type `{name}`: {e}")))?;
            if !seen.insert(n.clone()) {
                return Err(fail("duplicate member name".into()));
            }
        }
        let ty = match (&m.ty, m.bits) {
            // §1.3: when no type is provided the bit field's type defaults to int.
            (None, Some(_)) => Ty::Scalar(Scalar::Int),
            (None, None) => return Err(fail("needs `type` (or `bits`)".into())),
            (Some(t), _) => resolve_ty(
                t,
                &AnonName {
                    name: &format!("{name}_{}", field_tag(m, i)),
                    what: &what,
                },
                defined,
                sizes,
                budget,
                names,
                (l, c),
            )
            .map_err(|(el, ec, e)| {
                if el == l && ec == c {
                    (l, c, format!("{what}: {e}"))
                } else {
                    (el, ec, e)
                }
            })?,
        };
        let field = Field {
            name: m.name.clone(),
            ty,
            bits: m.bits,
        };
        validate_field(&field).map_err(|e| fail(e.to_string()))?;
        fields.push(field);
    }
    if fields.is_empty() {
        return Err((
            at.0,
            at.1,
            format!("type `{name}`: has no members (empty aggregates are not C)"),
        ));
    }
    if !fields.iter().any(|f| f.name.is_some()) {
        return Err((
            at.0,
            at.1,
            format!("type `{name}`: has no named member (C requires at least one)"),
        ));
    }
    Ok(TypeDef {
        name: name.to_string(),
        kind,
        fields,
    })
}

fn field_tag(m: &MemberRepr, i: usize) -> String {
    m.name.clone().unwrap_or_else(|| format!("m{i}"))
}

/// The name a nested anonymous aggregate gets, and the member it is the type of.
struct AnonName<'a> {
    name: &'a str,
    what: &'a str,
}

fn resolve_ty(
    t: &TyRepr,
    anon: &AnonName,
    defined: &[TypeDef],
    sizes: &BTreeMap<String, u64>,
    budget: &mut u64,
    names: &mut Names,
    at: (u64, u64),
) -> Result<Ty, At> {
    let fail = |m: String| (at.0, at.1, m);
    Ok(match t {
        TyRepr::Name(n) => {
            if let Some(s) = Scalar::parse(n) {
                Ty::Scalar(s)
            } else if let Some(v) = parse_vector_shorthand(n) {
                v
            } else if let Some(d) = defined.iter().find(|d| d.name == *n) {
                // Checked before the copy: the copy is what grows exponentially.
                *budget = budget.saturating_add(sizes.get(n).copied().unwrap_or(0));
                if *budget > MAX_TYPE_MEMBERS {
                    return Err(fail(format!(
                        "using `{n}` here grows the type past {MAX_TYPE_MEMBERS} members when each use of a type is counted; at most {MAX_TYPE_MEMBERS}"
                    )));
                }
                Ty::Record(Box::new(d.clone()))
            } else {
                return Err(fail(format!("unknown type `{n}`; a type is a scalar (int, float, ...), a vector like float4, or a type defined above")));
            }
        }
        TyRepr::Vector { vector, count } => {
            let s = Scalar::parse(vector)
                .ok_or_else(|| fail(format!("unknown vector element type `{vector}`")))?;
            Ty::Vector(s, *count)
        }
        TyRepr::Array { array, count } => {
            if *count == 0 {
                return Err(fail("array count must be at least 1".into()));
            }
            Ty::Array(
                Box::new(resolve_ty(array, anon, defined, sizes, budget, names, at)?),
                *count,
            )
        }
        TyRepr::Struct(m) => {
            claim(
                names,
                anon.name,
                &format!("its anonymous struct is named `{}`,", anon.name),
                format!("the anonymous struct of {}", anon.what),
                at,
            )?;
            Ty::Record(Box::new(resolve_record(
                anon.name,
                RecordKind::Struct,
                m,
                defined,
                sizes,
                budget,
                names,
                at,
            )?))
        }
        TyRepr::Union(m) => {
            claim(
                names,
                anon.name,
                &format!("its anonymous union is named `{}`,", anon.name),
                format!("the anonymous union of {}", anon.what),
                at,
            )?;
            Ty::Record(Box::new(resolve_record(
                anon.name,
                RecordKind::Union,
                m,
                defined,
                sizes,
                budget,
                names,
                at,
            )?))
        }
    })
}

/// `float4`, `uchar2`, `longlong1`, `half2` → a native vector.
fn parse_vector_shorthand(n: &str) -> Option<Ty> {
    let digit = n.chars().last()?.to_digit(10)?;
    let stem = &n[..n.len() - 1];
    let s = match stem {
        "half" => Scalar::Half,
        _ => *Scalar::ALL
            .iter()
            .find(|s| s.cuda_vector_stem() == Some(stem) && **s != Scalar::SChar)?,
    };
    Some(Ty::Vector(s, digit))
}

/// Why `gpucts abi layout FILE` has no layout to print.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LayoutFileError {
    #[error(transparent)]
    Read(#[from] crate::suite::SuiteError),
    #[error(transparent)]
    Types(#[from] TypeFileError),
    #[error("{origin}: {source}")]
    Layout { origin: String, source: LayoutError },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

/// The engine's layout of every type in a YAML type file (nested anonymous aggregates
/// included, under their derived names), as JSON for `gpucts abi layout FILE`:
/// `{"address_size": 64, "types": [{"name", "kind", "size", "align", "members": [{"name",
/// "offset", "bit_offset"?, "bit_width"?, "size", "align"}]}]}`.
pub(crate) fn layout_file_json(path: &std::path::Path) -> Result<String, LayoutFileError> {
    let text = crate::suite::input::read_text(path)?;
    layout_text_json(&text, &path.display().to_string())
}

/// [`layout_file_json`] on a type file's text; `origin` names it in messages.
pub(crate) fn layout_text_json(text: &str, origin: &str) -> Result<String, LayoutFileError> {
    let (a, types) = parse_type_file(text, origin)?;
    #[derive(Serialize)]
    struct Entry<'a> {
        name: &'a str,
        kind: &'a str,
        #[serde(flatten)]
        layout: Layout,
    }
    #[derive(Serialize)]
    struct Out<'a> {
        address_size: u64,
        types: Vec<Entry<'a>>,
    }
    let mut out = Out {
        address_size: a.bytes() * 8,
        types: Vec::new(),
    };
    for t in super::types::all_records(&types) {
        let l = layout(t, a).map_err(|source| LayoutFileError::Layout {
            origin: origin.to_string(),
            source,
        })?;
        out.types.push(Entry {
            name: &t.name,
            kind: t.kind.keyword(),
            layout: l,
        });
    }
    Ok(serde_json::to_string_pretty(&out)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::render::render_c;
    use crate::abi::types::Dialect;

    fn err(text: &str) -> String {
        parse_types(text, "t.yaml").unwrap_err().to_string()
    }

    #[test]
    fn doubly_nested_types_are_bounded_before_they_are_copied() {
        // Issue 10: 24 types each holding two of the previous one took 4 GB in `abi layout`.
        let mut text =
            "types:\n  - name: T0\n    members: [{name: a, type: int}, {name: b, type: int}]\n"
                .to_string();
        for i in 1..24 {
            text += &format!(
                "  - name: T{i}\n    members: [{{name: a, type: T{p}}}, {{name: b, type: T{p}}}]\n",
                p = i - 1
            );
        }
        let t0 = std::time::Instant::now();
        let e = err(&text);
        assert!(t0.elapsed().as_secs() < 5);
        assert!(
            e.contains("at most 100000") && e.starts_with("t.yaml:"),
            "{e}"
        );
        // Ten levels (2^11 members) are fine.
        let ten: String = text.lines().take(21).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse_types(&ten, "t.yaml").unwrap().len(), 10);
    }

    #[test]
    fn names_must_be_unique_identifiers_and_no_keywords() {
        let e = err("types:\n  - name: S\n    members: [{name: a, type: int}]\n  - name: S\n    members: [{name: b, type: int}]\n");
        assert!(
            e.starts_with("t.yaml:4:5:") && e.contains("`S` defined twice"),
            "{e}"
        );
        let e = err("types:\n  - name: struct\n    members: [{name: a, type: int}]\n");
        assert!(e.starts_with("t.yaml:2:5:") && e.contains("keyword"), "{e}");
        let e = err("types:\n  - name: S\n    members:\n      - {name: a, type: int}\n      - {name: class, type: int}\n");
        assert!(
            e.starts_with("t.yaml:5:9:") && e.contains("`class` is a C/C++ keyword"),
            "{e}"
        );
    }

    #[test]
    fn a_type_named_like_a_derived_anonymous_name_is_refused_in_either_order() {
        // `A.b`'s anonymous struct is named `A_b`: a user type `A_b` used to vanish from
        // `abi layout` (both were keyed by one name). Defined first: refused at `A.b`.
        let e = err("types:\n  - name: A_b\n    members: [{name: y, type: char}]\n  - name: A\n    members:\n      - {name: b, type: {struct: [{name: x, type: int}]}}\n");
        assert!(
            e.starts_with("t.yaml:6:9: type `A` member `b`: its anonymous struct is named `A_b`")
                && e.contains("type `A_b` (line 2, column 5)"),
            "{e}"
        );
        // Defined after: refused at the user type, even when the two are identical.
        let e = err("types:\n  - name: A\n    members:\n      - {name: b, type: {union: [{name: x, type: int}]}}\n  - name: A_b\n    members: [{name: x, type: int}]\n");
        assert!(
            e.starts_with("t.yaml:5:5: type name `A_b` is already the name of the anonymous union of type `A` member `b` (line 4, column 9)"),
            "{e}"
        );
        // Two derived names: `A.b.c` and `A.b_c` are both `A_b_c`; so are `A_b.c` (inside
        // an array) and `A.b_c`.
        let e = err("types:\n  - name: A\n    members:\n      - {name: b, type: {struct: [{name: c, type: {struct: [{name: x, type: int}]}}]}}\n      - {name: b_c, type: {struct: [{name: y, type: int}]}}\n");
        assert!(e.starts_with("t.yaml:5:9:") && e.contains("`A_b_c`"), "{e}");
        let e = err("types:\n  - name: A_b\n    members:\n      - {name: c, type: {array: {struct: [{name: x, type: int}]}, count: 2}}\n  - name: A\n    members:\n      - {name: b_c, type: {struct: [{name: y, type: int}]}}\n");
        assert!(e.starts_with("t.yaml:7:9:") && e.contains("`A_b_c`"), "{e}");
        // Using a defined type twice is no clash: its nested records are the same ones.
        let t = parse_types("types:\n  - name: In\n    members: [{name: u, type: {union: [{name: x, type: int}]}}]\n  - name: S\n    members: [{name: a, type: In}, {name: b, type: In}]\n", "t.yaml").unwrap();
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_type_named_like_a_built_in_is_refused_naming_the_built_in() {
        // A member's `type: float4` is the §1.2 vector, so a struct `float4` would be
        // silently shadowed by it.
        for (name, want) in [
            ("float4", "built-in vector type `float4` (4 × float"),
            ("char3", "built-in vector type `char3` (3 × char"),
            (
                "ulonglong2",
                "built-in vector type `ulonglong2` (2 × unsigned long long",
            ),
            ("half2", "built-in vector type `half2` (2 × half"),
            ("float5", "built-in vector type `float5` (5 × float"),
            ("uchar", "built-in scalar `unsigned char`"),
            ("half", "built-in scalar `half`"),
            ("pointer", "built-in scalar `pointer`"),
            ("texture_handle", "built-in scalar `texture_handle`"),
            ("gpucts_vec_float_4", "starts with `gpucts_`"),
        ] {
            let e = err(&format!(
                "types:\n  - name: ok\n    members: [{{name: a, type: int}}]\n  - name: {name}\n    members: [{{name: x, type: char}}]\n"
            ));
            assert!(
                e.starts_with(&format!("t.yaml:4:5: type name `{name}` names the"))
                    || e.starts_with(&format!("t.yaml:4:5: type name `{name}` starts")),
                "{e}"
            );
            assert!(e.contains(want), "{name}: {e}");
        }
        // Names that only look alike are types like any other.
        for name in ["float4x", "floaty4", "Float4", "vec4"] {
            let text = format!(
                "types:\n  - name: {name}\n    members: [{{name: x, type: char}}]\n  - name: S\n    members: [{{name: m, type: {name}}}]\n"
            );
            let t = parse_types(&text, "t.yaml").unwrap();
            assert!(matches!(&t[1].fields[0].ty, Ty::Record(r) if r.name == name));
        }
    }

    #[test]
    fn an_unknown_type_is_reported_at_its_member() {
        let e = err("types:\n  - name: S\n    members:\n      - {name: a, type: int}\n      - {name: b, type: Nope}\n");
        assert!(
            e.starts_with("t.yaml:5:9:") && e.contains("unknown type `Nope`"),
            "{e}"
        );
    }

    #[test]
    fn parses_every_member_form() {
        let text = "types:\n  - name: In\n    members:\n      - {name: a, type: char}\n  - name: S\n    members:\n      - {name: c, type: unsigned char}\n      - {name: v, type: float4}\n      - {name: w, type: {vector: float, count: 3}}\n      - {name: a, type: {array: {array: short, count: 2}, count: 3}}\n      - {name: n, type: In}\n      - {name: u, type: {union: [{name: x, type: int}, {name: y, type: char}]}}\n      - {name: b, type: unsigned int, bits: 3}\n      - {type: int, bits: 0}\n      - {name: d, bits: 6}\n";
        let t = parse_types(text, "t.yaml").unwrap();
        assert_eq!(t.len(), 2);
        let s = &t[1];
        assert_eq!(s.fields[1].ty, Ty::Vector(Scalar::Float, 4));
        assert_eq!(s.fields[2].ty, Ty::Vector(Scalar::Float, 3));
        assert_eq!(
            s.fields[3].ty,
            Ty::Array(
                Box::new(Ty::Array(Box::new(Ty::Scalar(Scalar::Short)), 2)),
                3
            )
        );
        assert!(matches!(&s.fields[4].ty, Ty::Record(r) if r.name == "In"));
        assert!(
            matches!(&s.fields[5].ty, Ty::Record(r) if r.name == "S_u" && r.kind == RecordKind::Union)
        );
        assert_eq!(s.fields[7].name, None);
        assert_eq!(s.fields[7].bits, Some(0));
        // §1.3: no type → int.
        assert_eq!(s.fields[8].ty, Ty::Scalar(Scalar::Int));
        let c = render_c(&t, Dialect::C);
        assert!(c.contains("short a[3][2];"), "{c}");
        assert!(c.contains("int : 0;"), "{c}");
        assert!(c.contains("unsigned int b : 3;"), "{c}");
        let cu = render_c(&t, Dialect::Cuda);
        assert!(cu.contains("float4 v;") && cu.contains("float3 w;"), "{cu}");
    }

    #[test]
    fn rejects_invalid_c() {
        let cases = [
            ("{name: a, type: int, bits: 33}", "exceeds"),
            ("{name: a, type: int, bits: 0}", "zero-width"),
            ("{name: a, type: float, bits: 3}", "bit-field type"),
            ("{type: int}", "unnamed"),
            ("{name: a, type: nosuch}", "unknown type"),
        ];
        for (m, want) in cases {
            let text = format!(
                "types:\n  - name: S\n    members:\n      - {{name: z, type: int}}\n      - {m}\n"
            );
            let e = parse_types(&text, "t.yaml").unwrap_err();
            assert_eq!((e.file.as_str(), e.line), ("t.yaml", 5), "{m}: {e}");
            assert!(e.message.contains(want), "{m}: {e}");
        }
        let e = parse_types(
            "types:\n  - name: S\n    bogus: 1\n    members: []\n",
            "t.yaml",
        )
        .unwrap_err();
        assert!(e.line > 0 && e.message.contains("bogus"), "{e}");
        assert!(e.to_string().starts_with("t.yaml:"), "{e}");
    }

    #[test]
    fn example_file_lays_out() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/abi/types.yaml");
        let json = layout_file_json(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["address_size"], 64);
        let fig3 = v["types"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "fig3_boundary_alignment")
            .expect("fig3 in the example file");
        assert_eq!(fig3["size"], 12);
        assert_eq!(fig3["members"][4]["bit_offset"], 48);
        assert_eq!(fig3["members"][4]["bit_width"], 9);
        assert_eq!(fig3["members"][5]["offset"], 8);
        assert!(fig3["members"][5].get("bit_offset").is_none());
    }

    #[test]
    fn file_address_size_32_narrows_long_and_pointers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.yaml");
        std::fs::write(
            &path,
            "address_size: 32\ntypes:\n  - name: T\n    members: [{name: c, type: char}, {name: p, type: pointer}]\n",
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&layout_file_json(&path).unwrap()).unwrap();
        assert_eq!(v["address_size"], 32);
        // §1.1: a 32-bit host's pointers are 4 bytes.
        assert_eq!(v["types"][0]["members"][1]["offset"], 4);
        assert_eq!(v["types"][0]["size"], 8);
        std::fs::write(&path, "address_size: 16\ntypes: []\n").unwrap();
        let e = layout_file_json(&path).unwrap_err().to_string();
        assert!(e.contains("t.yaml") && e.contains("32 or 64"), "{e}");
        // A YAML error names the file and the line.
        std::fs::write(&path, "types:\n  - name: T\n    memberz: []\n").unwrap();
        let e = layout_file_json(&path).unwrap_err().to_string();
        assert!(e.contains("t.yaml:3:"), "{e}");
    }
}
