//! C and CUDA C++ renderings of the type model, which the oracles compile. Both dialects give every aggregate (anonymous nested ones included) its own
//! tag name, so every oracle reports each aggregate separately. Native vectors (§1.2) are
//! rendered for NVRTC as CUDA's own vector types (`float3`, `double2`, ...) where CUDA has one,
//! so NVRTC checks the vector rule independently; for clang they are rendered as structs with
//! an explicit `aligned` attribute, because clang's `ext_vector_type` is not the PTX native
//! vector (a 3-element `ext_vector_type(3)` float has size 16 and alignment 16, where §1.2 gives
//! the 3-element vector the alignment of its element). The clang oracle therefore checks every
//! rule around vectors (placement, padding, nesting), not the vector alignment rule itself.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::types::{all_records, vector_type_name, Dialect, Field, Scalar, Ty, TypeDef};

fn collect_vectors(t: &Ty, out: &mut BTreeSet<(Scalar, u32)>) {
    match t {
        Ty::Vector(s, n) => {
            out.insert((*s, *n));
        }
        Ty::Array(e, _) => collect_vectors(e, out),
        _ => {}
    }
}

/// The declaration of one member: `float4 v`, `short a[3][2]`, `int b : 3`, `int : 0`.
pub(crate) fn render_field(f: &Field, dialect: Dialect) -> String {
    let mut dims = String::new();
    let mut ty = &f.ty;
    while let Ty::Array(e, n) = ty {
        let _ = write!(dims, "[{n}]");
        ty = e;
    }
    let base = match ty {
        Ty::Scalar(s) => s.c_name(dialect).to_string(),
        Ty::Vector(s, n) => vector_type_name(*s, *n, dialect),
        Ty::Record(r) => r.name.clone(),
        Ty::Array(..) => unreachable!("arrays unwrapped above"),
    };
    let name = f.name.as_deref().unwrap_or("");
    match f.bits {
        Some(w) => format!("{base} {name} : {w}").replace("  ", " "),
        None => format!("{base} {name}{dims}"),
    }
}

/// C or CUDA C++ definitions of every record in `types` (nested ones hoisted and named), each
/// as `typedef struct NAME NAME; struct NAME { ... };`, preceded by the vector types used.
pub(crate) fn render_c(types: &[TypeDef], dialect: Dialect) -> String {
    render_c_at(types, dialect, crate::ptx::AddressSize::A64)
}

/// [`render_c`] for a given `.address_size` (it fixes the alignment of `long` vectors).
pub(crate) fn render_c_at(
    types: &[TypeDef],
    dialect: Dialect,
    address_size: crate::ptx::AddressSize,
) -> String {
    let records = all_records(types);
    let mut vectors = BTreeSet::new();
    for r in &records {
        for f in &r.fields {
            collect_vectors(&f.ty, &mut vectors);
        }
    }
    let mut out = String::new();
    for (s, n) in vectors {
        let name = vector_type_name(s, n, dialect);
        if !name.starts_with("gpucts_vec_") {
            continue; // a CUDA built-in vector type
        }
        // §1.2's rule written here, not the layout engine's answer: the oracle compiling this
        // source must be able to disagree with the engine's vector alignment (an engine
        // flipping the rule was not caught by the clang oracles when this called
        // `layout::vector_align`).
        let elem = crate::abi::layout::scalar_align(s, address_size);
        let align = if n % 2 == 1 {
            elem
        } else {
            u64::from(n) * elem
        };
        let elems = ["x", "y", "z", "w"][..n.min(4) as usize].join(", ");
        let attr = match dialect {
            Dialect::C => format!("__attribute__((aligned({align})))"),
            Dialect::Cuda => format!("__align__({align})"),
        };
        let _ = writeln!(
            out,
            "typedef struct {attr} {name} {{ {} {elems}; }} {name};",
            s.c_name(dialect)
        );
    }
    for r in records {
        let kw = r.kind.keyword();
        let _ = writeln!(out, "typedef {kw} {0} {0};", r.name);
        let _ = writeln!(out, "{kw} {} {{", r.name);
        for f in &r.fields {
            let _ = writeln!(out, "  {};", render_field(f, dialect));
        }
        out.push_str("};\n");
    }
    out
}
