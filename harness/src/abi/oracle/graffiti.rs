//! Graffiti, after abi-cafe: a kernel writes through every member of every type (the compiler
//! picks the addresses and bit positions), and the host compares the bytes with the engine's
//! placement. Each leaf member (a scalar, a native vector, one array element, one bit field)
//! gets a field index; each byte it writes carries that index in its high nibble and the byte's
//! index within the member in its low nibble, so a wrong byte names the fields involved.
//! Padding stays 0; field indices run 1..=15 (cycling) so a written byte is never 0.
//!
//! The GPU run belongs to the cuda backend: launch `gpucts_graffiti(out)` with one thread on a
//! buffer of [`buffer_len`] bytes, then hand each type's slice (at [`offsets`]) to [`compare`].

use std::fmt::Write as _;

use crate::abi::layout::{layout, size_align, AddressSize, LayoutError};
use crate::abi::render::render_c;
use crate::abi::types::{Dialect, Ty, TypeDef};

/// The kernel's entry point name.
pub(crate) const KERNEL: &str = "gpucts_graffiti";
/// Each type's object starts at a multiple of this in the output buffer.
const SLOT_ALIGN: u64 = 256;

/// One member the kernel writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    /// C access path from `p->`, e.g. `f0.f2[3]`.
    pub path: String,
    pub index: u8,
    pub place: Place,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `size` bytes at byte `offset` (engine's placement).
    Bytes { offset: u64, size: u64 },
    /// A bit field: `width` bits at absolute bit `bit`.
    Bits { bit: u64, width: u32 },
}

/// The graffiti byte for field `index`, byte `j`.
fn graffiti(index: u8, j: u64) -> u8 {
    (index << 4) | (j as u8 & 0xf)
}

/// The value a bit field of `width` bits is assigned: its bytes carry graffiti, truncated.
fn bit_value(index: u8, width: u32) -> u64 {
    let mut v = 0u64;
    for j in 0..8u64 {
        v |= u64::from(graffiti(index, j)) << (8 * j);
    }
    if width >= 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    }
}

/// The leaves of a type in declaration order, placed by the engine.
pub fn leaves(t: &TypeDef) -> Result<Vec<Leaf>, LayoutError> {
    let mut out = Vec::new();
    let mut next = 0u32;
    record_leaves(t, "", 0, &mut next, &mut out)?;
    Ok(out)
}

fn record_leaves(
    t: &TypeDef,
    prefix: &str,
    base: u64,
    next: &mut u32,
    out: &mut Vec<Leaf>,
) -> Result<(), LayoutError> {
    let l = layout(t, AddressSize::A64)?;
    for (f, m) in t.fields.iter().zip(&l.members) {
        let Some(name) = &f.name else { continue }; // unnamed bit fields cannot be written
        let path = format!("{prefix}{name}");
        match f.bits {
            Some(w) => {
                out.push(Leaf {
                    path,
                    index: take_index(next),
                    place: Place::Bits {
                        bit: base * 8 + m.bit_offset.unwrap_or(0),
                        width: w,
                    },
                });
            }
            None => ty_leaves(&f.ty, &path, base + m.offset, next, out)?,
        }
    }
    Ok(())
}

fn ty_leaves(
    ty: &Ty,
    path: &str,
    offset: u64,
    next: &mut u32,
    out: &mut Vec<Leaf>,
) -> Result<(), LayoutError> {
    match ty {
        Ty::Scalar(_) | Ty::Vector(..) => {
            let (size, _) = size_align(ty, AddressSize::A64)?;
            out.push(Leaf {
                path: path.to_string(),
                index: take_index(next),
                place: Place::Bytes { offset, size },
            });
        }
        Ty::Array(e, n) => {
            let (es, _) = size_align(e, AddressSize::A64)?;
            for i in 0..*n {
                ty_leaves(e, &format!("{path}[{i}]"), offset + i * es, next, out)?;
            }
        }
        Ty::Record(r) => record_leaves(r, &format!("{path}."), offset, next, out)?,
    }
    Ok(())
}

fn take_index(next: &mut u32) -> u8 {
    let i = (*next % 15) as u8 + 1;
    *next += 1;
    i
}

/// Offsets of each type's object in the output buffer.
pub(crate) fn offsets(types: &[TypeDef]) -> Result<Vec<u64>, LayoutError> {
    let mut at = 0;
    let mut out = Vec::with_capacity(types.len());
    for t in types {
        out.push(at);
        let l = layout(t, AddressSize::A64)?;
        at += l.size.div_ceil(SLOT_ALIGN).max(1) * SLOT_ALIGN;
    }
    Ok(out)
}

/// Size of the output buffer for `types`.
pub(crate) fn buffer_len(types: &[TypeDef]) -> Result<u64, LayoutError> {
    let offs = offsets(types)?;
    match (offs.last(), types.last()) {
        (Some(o), Some(t)) => Ok(o + layout(t, AddressSize::A64)?.size),
        _ => Ok(0),
    }
}

/// The CUDA C++ source of the graffiti kernel for a batch (compile with NVRTC).
pub(crate) fn graffiti_source(types: &[TypeDef]) -> Result<String, LayoutError> {
    writer_source(types, Dialect::Cuda)
}

/// The writer as a kernel (CUDA) or as a plain C function (for a host compiler, whose
/// System V bit-field rules are those §1.3 illustrates; used to test this module end to end).
fn writer_source(types: &[TypeDef], dialect: Dialect) -> Result<String, LayoutError> {
    let mut s = render_c(types, dialect);
    let offs = offsets(types)?;
    let _ = match dialect {
        Dialect::Cuda => writeln!(
            s,
            "extern \"C\" __global__ void {KERNEL}(unsigned char *out) {{\n  if (threadIdx.x != 0 || blockIdx.x != 0) return;"
        ),
        Dialect::C => writeln!(s, "void {KERNEL}(unsigned char *out) {{"),
    };
    for (t, off) in types.iter().zip(offs) {
        let _ = writeln!(s, "  {{\n    {0} *p = ({0} *)(out + {off});", t.name);
        let _ = writeln!(
            s,
            "    for (unsigned long long i = 0; i < sizeof({}); ++i) ((unsigned char *)p)[i] = 0;",
            t.name
        );
        for leaf in leaves(t)? {
            match leaf.place {
                Place::Bytes { size, .. } => {
                    let _ = write!(
                        s,
                        "    {{ unsigned char *q = (unsigned char *)&p->{};",
                        leaf.path
                    );
                    for j in 0..size {
                        let _ = write!(s, " q[{j}] = {:#04x};", graffiti(leaf.index, j));
                    }
                    s.push_str(" }\n");
                }
                Place::Bits { width, .. } => {
                    let _ = writeln!(
                        s,
                        "    p->{} = {:#x}ULL;",
                        leaf.path,
                        bit_value(leaf.index, width)
                    );
                }
            }
        }
        s.push_str("  }\n");
    }
    s.push_str("}\n");
    Ok(s)
}

/// The bytes the kernel must leave in a type's object if the producer follows the engine.
pub(crate) fn expected_bytes(t: &TypeDef) -> Result<Vec<u8>, LayoutError> {
    let size = layout(t, AddressSize::A64)?.size as usize;
    let mut img = vec![0u8; size];
    for leaf in leaves(t)? {
        paint(&mut img, &leaf, |_, v| v);
    }
    Ok(img)
}

/// Apply one leaf's writes (in order: in a union a later member overwrites an earlier one).
fn paint(img: &mut [u8], leaf: &Leaf, mut f: impl FnMut(usize, u8) -> u8) {
    match leaf.place {
        Place::Bytes { offset, size } => {
            for j in 0..size {
                let at = (offset + j) as usize;
                img[at] = f(at, graffiti(leaf.index, j));
            }
        }
        Place::Bits { bit, width } => {
            let v = bit_value(leaf.index, width);
            for k in 0..u64::from(width) {
                let b = bit + k;
                let at = (b / 8) as usize;
                let mask = 1u8 << (b % 8);
                let new = if (v >> k) & 1 == 1 {
                    img[at] | mask
                } else {
                    img[at] & !mask
                };
                img[at] = f(at, new);
            }
        }
    }
}

/// Judge a whole output buffer of the kernel built by [`graffiti_source`] for `types`.
pub fn judge(types: &[TypeDef], buffer: &[u8]) -> Vec<super::TypeResult> {
    let offs = match offsets(types) {
        Ok(o) => o,
        Err(e) => return super::all_error(types, &format!("engine: {e}")),
    };
    types
        .iter()
        .zip(offs)
        .map(|(t, off)| super::TypeResult {
            name: t.name.clone(),
            verdict: match buffer.get(off as usize..) {
                None => super::Agreement::Error(format!(
                    "buffer of {} bytes ends before `{}` at {off}",
                    buffer.len(),
                    t.name
                )),
                Some(b) => match compare(t, b) {
                    Ok(()) => super::Agreement::Agree,
                    // No layout to compare with is the engine's error, not a divergence.
                    Err(GraffitiDivergence::Engine(e)) => {
                        super::Agreement::Error(format!("engine: {e}"))
                    }
                    Err(e) => super::Agreement::Mismatch(e.to_string()),
                },
            },
        })
        .collect()
}

/// One byte the kernel left differently from the engine's placement: the field the engine
/// expected there (or `padding`) and the field(s) whose graffiti arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ByteDiff {
    pub at: usize,
    pub expected: u8,
    pub observed: u8,
    pub expected_field: String,
    pub observed_field: String,
}

impl std::fmt::Display for ByteDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "  byte {}: expected {:#04x} ({}), observed {:#04x} ({})",
            self.at, self.expected, self.expected_field, self.observed, self.observed_field
        )
    }
}

/// How the bytes a producer's kernel wrote for a type diverge from the engine's layout
/// (ptx-interop 13.2 ch. 1), or why they could not be judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GraffitiDivergence {
    /// The engine has no layout for the type: nothing to compare with.
    #[error(transparent)]
    Engine(#[from] LayoutError),
    #[error("`{name}`: {observed} bytes observed, {expected} expected")]
    Short {
        name: String,
        observed: usize,
        expected: usize,
    },
    /// `c` is the type in C, for the reader.
    #[error("graffiti of `{name}` differs from the engine's layout:\n{}--- type (C) ---\n{c}", bytes.iter().map(ToString::to_string).collect::<String>())]
    Bytes {
        name: String,
        bytes: Vec<ByteDiff>,
        c: String,
    },
}

/// Compare what the kernel wrote for `t` with the engine's placement; on a difference, name
/// the field the engine expected at each wrong byte and the field(s) whose graffiti arrived.
pub(crate) fn compare(t: &TypeDef, observed: &[u8]) -> Result<(), GraffitiDivergence> {
    let expected = expected_bytes(t)?;
    if observed.len() < expected.len() {
        return Err(GraffitiDivergence::Short {
            name: t.name.clone(),
            observed: observed.len(),
            expected: expected.len(),
        });
    }
    let leaves = leaves(t)?;
    // Which leaf wrote each byte last, by the engine's placement.
    let mut owner: Vec<Option<usize>> = vec![None; expected.len()];
    let mut scratch = vec![0u8; expected.len()];
    for (i, leaf) in leaves.iter().enumerate() {
        paint(&mut scratch, leaf, |at, v| {
            owner[at] = Some(i);
            v
        });
    }
    let mut bytes = Vec::new();
    for (at, (&e, &o)) in expected.iter().zip(observed).enumerate() {
        if e == o {
            continue;
        }
        let want = owner[at].map_or("padding".to_string(), |i| leaves[i].path.clone());
        let got: Vec<&str> = leaves
            .iter()
            .filter(|l| o != 0 && l.index == o >> 4)
            .map(|l| l.path.as_str())
            .collect();
        let got = if o == 0 {
            "nothing (padding)".to_string()
        } else {
            format!("{} byte {}", got.join(" or "), o & 0xf)
        };
        bytes.push(ByteDiff {
            at,
            expected: e,
            observed: o,
            expected_field: want,
            observed_field: got,
        });
    }
    if bytes.is_empty() {
        Ok(())
    } else {
        Err(GraffitiDivergence::Bytes {
            name: t.name.clone(),
            bytes,
            c: render_c(std::slice::from_ref(t), Dialect::C),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::type_file::parse_types;

    fn fig4() -> Vec<TypeDef> {
        // §1.3 storage-unit sharing: struct { char c; short s:8; } — s occupies byte 1.
        parse_types(
            "types:\n  - name: S\n    members: [{name: c, type: char}, {name: s, type: short, bits: 8}, {name: v, type: short2}]\n",
            "t",
        )
        .unwrap()
    }

    #[test]
    fn expected_image_follows_the_spec_placement() {
        let t = &fig4()[0];
        // c: field 1 byte 0 → 0x10 at 0; s: field 2, 8 bits → 0x20 at byte 1; v (short2,
        // align 4 by §1.2) at 4..8 → field 3 bytes 0..3; bytes 2, 3 padding.
        assert_eq!(
            expected_bytes(t).unwrap(),
            vec![0x10, 0x20, 0, 0, 0x30, 0x31, 0x32, 0x33]
        );
        assert!(compare(t, &[0x10, 0x20, 0, 0, 0x30, 0x31, 0x32, 0x33]).is_ok());
        // A producer that put v at offset 2 would leave v's graffiti in padding.
        let err = compare(t, &[0x10, 0x20, 0x30, 0x31, 0x32, 0x33, 0, 0]).unwrap_err();
        let GraffitiDivergence::Bytes { bytes, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!(
            bytes[0],
            ByteDiff {
                at: 2,
                expected: 0,
                observed: 0x30,
                expected_field: "padding".into(),
                observed_field: "v byte 0".into()
            }
        );
        let err = err.to_string();
        assert!(
            err.contains("byte 2: expected 0x00 (padding), observed 0x30 (v byte 0)"),
            "{err}"
        );
        assert!(err.contains("byte 4: expected 0x30 (v)"), "{err}");
    }

    #[test]
    fn kernel_source_writes_every_leaf() {
        let src = graffiti_source(&fig4()).unwrap();
        assert!(src.contains("p->s = 0x20ULL;"), "{src}");
        assert!(
            src.contains("(unsigned char *)&p->v; q[0] = 0x30;"),
            "{src}"
        );
        assert!(src.contains("short2 v;"), "{src}");
    }

    #[test]
    fn kernel_compiles_with_nvrtc() {
        let tc = crate::backend::toolchain::Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Nvrtc), "nvrtc");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../suites/abi/types.yaml");
        let mut types = parse_types(&std::fs::read_to_string(path).unwrap(), path).unwrap();
        types.extend(crate::abi::random::random_batch(0, 100));
        let src = graffiti_source(&types).unwrap();
        let ptx = tc
            .nvrtc(&src, "graffiti.cu", &["--gpu-architecture=compute_90"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            ptx.contains(&format!(".entry {KERNEL}(")),
            "entry point in the PTX"
        );
        // Every object lies inside the buffer and the slots do not overlap.
        let offs = offsets(&types).unwrap();
        let len = buffer_len(&types).unwrap();
        for (w, t) in offs.windows(2).zip(&types) {
            assert!(w[0] + expected_bytes(t).unwrap().len() as u64 <= w[1]);
        }
        assert!(*offs.last().unwrap() < len);
    }

    /// End to end without a GPU: the same writer compiled by clang-19 for the x86-64 host
    /// (System V, whose bit-field rules are the ones §1.3's figures show), run, and its bytes
    /// compared with the engine's images for 150 random types and the hand-written ones.
    #[test]
    fn host_compiled_writer_matches_the_engine() {
        let tc = crate::backend::toolchain::Toolchain::discover_system();
        crate::require!(tc.has(crate::capability::Capability::Clang), "clang");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../suites/abi/types.yaml");
        let mut types = parse_types(&std::fs::read_to_string(path).unwrap(), path).unwrap();
        types.extend(crate::abi::random::random_batch(0, 150));
        let len = buffer_len(&types).unwrap();
        let mut src = writer_source(&types, Dialect::C).unwrap();
        src.push_str(&format!(
            "#include <stdio.h>\n#include <stdlib.h>\nint main(void) {{ unsigned char *b = aligned_alloc(256, {len} + 256); {KERNEL}(b); fwrite(b, 1, {len}, stdout); return 0; }}\n"
        ));
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("graffiti");
        let exe_s = exe.to_str().unwrap();
        tc.clang_stdout(
            &src,
            crate::backend::toolchain::ClangLang::C,
            &["--target=x86_64-linux-gnu", "-w", "-o", exe_s],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let out = std::process::Command::new(&exe).output().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout.len() as u64, len);
        let mut bad = String::new();
        for r in judge(&types, &out.stdout) {
            if r.verdict != super::super::Agreement::Agree {
                bad.push_str(&format!("{}: {:?}\n", r.name, r.verdict));
            }
        }
        assert!(bad.is_empty(), "{bad}");
        // And the comparison has teeth: flip one written byte.
        let t = &types[0];
        let mut img = expected_bytes(t).unwrap();
        img[0] ^= 0x01;
        assert!(matches!(
            compare(t, &img),
            Err(GraffitiDivergence::Bytes { bytes, .. }) if bytes.len() == 1 && bytes[0].at == 0
        ));
    }
}
