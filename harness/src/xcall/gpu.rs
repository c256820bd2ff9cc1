//! The xcall pairs on a GPU (abi-cafe's method): the driver's JIT linker (`cuLink*`) links a
//! pair's caller and callee batches from PTX, each kernel `xcall_k<seed>` runs once, and the
//! bytes are compared on both sides: what the callee recorded in `gpucts_xcall_rec` against
//! the graffiti the caller passed, and what the caller got back against the value the callee
//! built. Padding is unspecified (ptx-interop 13.2 §1.2), so only the bits each type defines
//! are compared. A failure names the pair, the signature, the first differing byte and the
//! field it belongs to.

use super::sig::Role;
use super::sig::{graffiti, ret_const, ret_key, Signature, Val, REC};
use crate::abi::layout::{layout, size_align, AddressSize};
use crate::abi::types::{Ty, TypeDef};
use crate::area::CaseContext;
use crate::backend::cuda::{self, KernelArg, LaunchConfig};
use crate::backend::producer::Producer;
use crate::outcome::CaseStatus;

/// What the callee should have recorded (bytes and significance mask) and what the caller
/// should have got back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub rec: Vec<u8>,
    pub rec_mask: Vec<u8>,
    pub ret: Vec<u8>,
    pub ret_mask: Vec<u8>,
}

/// The bytes a run must show, from the signature alone (the graffiti formula and the
/// callee's return rule), never from a producer's output.
pub fn expected(sig: &Signature) -> Expected {
    let mut rec = Vec::new();
    let mut rec_mask = Vec::new();
    for (i, p) in sig.params.iter().enumerate() {
        let m = p.mask();
        for j in 0..p.size() {
            rec.push(graffiti(sig.seed, i, j));
        }
        rec_mask.extend(m);
    }
    let (ret, ret_mask) = match &sig.ret {
        None => (Vec::new(), Vec::new()),
        Some(r) => {
            let src = sig.ret_sources();
            let bytes = (0..r.size())
                .map(|j| match src.get(j as usize) {
                    Some(i) => rec.get(*i as usize).copied().unwrap_or(0) ^ ret_key(j),
                    None => ret_const(j),
                })
                .collect();
            (bytes, r.mask())
        }
    };
    Expected {
        rec,
        rec_mask,
        ret,
        ret_mask,
    }
}

/// The member of `t` holding byte `b` (offset from the type's start), as a path.
fn field_in_ty(t: &Ty, b: u64) -> String {
    match t {
        Ty::Record(r) => field_in_record(r, b).map_or(String::new(), |p| format!(".{p}")),
        Ty::Array(e, n) => {
            let (es, _) = size_align(e, AddressSize::A64).unwrap_or((1, 1));
            let i = (b / es.max(1)).min(n.saturating_sub(1));
            format!("[{i}]{}", field_in_ty(e, b - i * es))
        }
        _ => String::new(),
    }
}

fn field_in_record(r: &TypeDef, b: u64) -> Option<String> {
    let l = layout(r, AddressSize::A64).ok()?;
    for (f, m) in r.fields.iter().zip(&l.members) {
        let name = f.name.clone().unwrap_or_else(|| "(unnamed bits)".into());
        match (m.bit_offset, m.bit_width) {
            (Some(bo), Some(w)) if w > 0 => {
                if (bo / 8..=(bo + u64::from(w) - 1) / 8).contains(&b) {
                    return Some(name);
                }
            }
            (Some(_), _) => {}
            _ => {
                if (m.offset..m.offset + m.size).contains(&b) {
                    return Some(format!("{name}{}", field_in_ty(&f.ty, b - m.offset)));
                }
            }
        }
    }
    None
}

/// `parameter 2 (struct r5 ...) byte 7 (field .f3.x)`.
pub(crate) fn field_name(v: &Val, byte: u64) -> String {
    match v {
        Val::Agg(g) => field_in_record(&g.def, byte).map_or("padding".into(), |p| format!(".{p}")),
        Val::Vector(_, _) => {
            let (s, _) = v.size_align();
            let n = match v {
                Val::Vector(_, n) => u64::from(*n),
                _ => 1,
            };
            let es = s / n.max(1);
            [".x", ".y", ".z", ".w"]
                .get((byte / es.max(1)) as usize)
                .copied()
                .unwrap_or("?")
                .to_string()
        }
        _ => "(the value)".into(),
    }
}

/// The first byte a run delivered differently from what the other side passed (ptx-interop
/// 13.2 §2.3): where (parameter or return value, byte, field) and the significant bits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ByteMismatch {
    /// `index` counts parameters from 1; `param` is the parameter's description.
    #[error("parameter {index} ({param}), byte {byte} (field {field}): caller passed {passed:#04x}, callee received {received:#04x} (significant bits {mask:#04x})")]
    Parameter {
        index: usize,
        param: String,
        byte: u64,
        field: String,
        passed: u8,
        received: u8,
        mask: u8,
    },
    #[error("return value ({ret}), byte {byte} (field {field}): callee returned {returned:#04x}, caller received {received:#04x} (significant bits {mask:#04x})")]
    Return {
        ret: String,
        byte: usize,
        field: String,
        returned: u8,
        received: u8,
        mask: u8,
    },
}

/// Compare one run; `Err` names the first differing byte and its field.
pub fn judge(sig: &Signature, rec: &[u8], out: &[u8]) -> Result<(), ByteMismatch> {
    let e = expected(sig);
    let offsets = sig.rec_offsets();
    for (k, (want, m)) in e.rec.iter().zip(&e.rec_mask).enumerate() {
        let got = rec.get(k).copied().unwrap_or(0);
        if (got ^ want) & m != 0 {
            let i = offsets.iter().rposition(|o| *o <= k as u64).unwrap_or(0);
            let p = &sig.params[i];
            let j = k as u64 - offsets[i];
            return Err(ByteMismatch::Parameter {
                index: i + 1,
                param: p.describe(),
                byte: j,
                field: field_name(p, j),
                passed: *want,
                received: got,
                mask: *m,
            });
        }
    }
    if let Some(r) = &sig.ret {
        for (j, (want, m)) in e.ret.iter().zip(&e.ret_mask).enumerate() {
            let got = out.get(j).copied().unwrap_or(0);
            if (got ^ want) & m != 0 {
                return Err(ByteMismatch::Return {
                    ret: r.describe(),
                    byte: j,
                    field: field_name(r, j as u64),
                    returned: *want,
                    received: got,
                    mask: *m,
                });
            }
        }
    }
    Ok(())
}

/// `gpucts prebuild`: the batches this pair links on the GPU, compiled (and so recorded)
/// without one.
fn compile_only(ctx: &CaseContext, caller: Producer, callee: Producer) -> CaseStatus {
    for m in super::Target::Current.masks() {
        if super::pair_runs(caller, callee, m) {
            for (p, role) in [(caller, Role::Caller), (callee, Role::Callee)] {
                let batch = super::batch(ctx, ctx.toolchain, p, role, m, super::Target::Current);
                if batch.get().is_none() {
                    return CaseStatus::error("batch not computed");
                }
            }
        }
    }
    CaseStatus::compiled_only()
}

/// Run every signature of the pair on the GPU; one case per pair (a child process).
pub(crate) fn gpu_case(ctx: &CaseContext, caller: Producer, callee: Producer) -> CaseStatus {
    let tc = ctx.toolchain;
    if ctx.compile_only {
        return compile_only(ctx, caller, callee);
    }
    let session = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(format!("no CUDA context: {e}")),
    };
    let sigs = super::all_signatures();
    let masks = super::Target::Current.masks();
    let (mut ran, mut failures, mut skipped) = (0usize, Vec::new(), 0usize);
    let mut unassembled = 0usize;
    for m in masks {
        if !super::pair_runs(caller, callee, m) {
            skipped += sigs.iter().filter(|s| super::mask(s) == m).count();
            continue;
        }
        let a = super::batch(ctx, tc, caller, Role::Caller, m, super::Target::Current);
        let b = super::batch(ctx, tc, callee, Role::Callee, m, super::Target::Current);
        let (Some(a), Some(b)) = (a.get(), b.get()) else {
            return CaseStatus::error("batch not computed");
        };
        if a.ptx.is_empty() || b.ptx.is_empty() {
            return CaseStatus::error(format!(
                "a producer rejected a batch: {}",
                [&a.cubin, &b.cubin]
                    .iter()
                    .filter_map(|c| c.as_ref().err())
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        let module = match session.link_ptx(&[(&a.name, &a.ptx), (&b.name, &b.ptx)]) {
            Ok(m) => m,
            Err(e) => {
                return CaseStatus::fail_detail(
                    "the driver's JIT linker links the pair from PTX",
                    format!("{caller} calling {callee}: cuLink* failed"),
                    e.to_string(),
                )
            }
        };
        let (rec_ptr, rec_len) = match session.global(&module, REC) {
            Ok(g) => g,
            Err(e) => return CaseStatus::error(format!("{REC}: {e}")),
        };
        let out = match session.buffer(4096) {
            Ok(b) => b,
            Err(e) => return CaseStatus::error(e.to_string()),
        };
        for sig in sigs.iter().filter(|s| super::mask(s) == m) {
            // A seed the producer or ptxas refused is not in the linked module (the batch was
            // compiled again without it); its pair case reports that offline.
            if a.rejected.contains_key(&sig.seed)
                || b.rejected.contains_key(&sig.seed)
                || a.unassembled.contains_key(&sig.seed)
                || b.unassembled.contains_key(&sig.seed)
            {
                unassembled += 1;
                continue;
            }
            let run = (|| -> Result<(Vec<u8>, Vec<u8>), cuda::DriverCallError> {
                session.memset(rec_ptr, 0, rec_len)?;
                session.memset(out.ptr, 0, out.bytes)?;
                let f = session.function(&module, &sig.kernel())?;
                let cfg = LaunchConfig {
                    grid: 1,
                    block: 1,
                    shared_bytes: 0,
                };
                // SAFETY: each signature's kernel takes one `.param .u64` (the output buffer).
                unsafe { session.launch(f, cfg, &[KernelArg::Ptr(out.ptr)]) }?;
                session.synchronize()?;
                let mut rec = vec![0u8; rec_len];
                session.copy_to_host(&mut rec, rec_ptr)?;
                let mut o = vec![0u8; out.bytes];
                session.copy_to_host(&mut o, out.ptr)?;
                Ok((rec, o))
            })();
            ran += 1;
            match run {
                Ok((rec, o)) => {
                    if let Err(why) = judge(sig, &rec, &o) {
                        failures.push(format!("{caller} -> {callee}, {}: {why}", sig.describe()));
                    }
                }
                Err(e) => {
                    // A fault poisons the context: report it and stop.
                    failures.push(format!("{caller} -> {callee}, {}: {e}", sig.describe()));
                    break;
                }
            }
        }
    }
    if failures.is_empty() {
        CaseStatus::pass_with(format!(
            "{ran} signatures ran; {skipped} not expressible by both producers; \
             {unassembled} refused by a producer or ptxas (see the pair cases)"
        ))
    } else {
        CaseStatus::fail_detail(
            "every byte the caller passed reaches the callee, and every byte returned reaches the caller",
            failures[0].clone(),
            format!("{} of {ran} signatures differ:\n{}", failures.len(), failures.join("\n")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xcall::sig::signature;

    /// A faithful run (bytes from the graffiti formula) passes; a flipped significant bit is
    /// named by parameter, byte and field; a changed padding byte is not a failure.
    #[test]
    fn judging_names_the_first_differing_byte_and_field() {
        // Seed 13 is a fixed aggregate (padded: char then double) and a small second param.
        let sig = (0..240)
            .map(signature)
            .find(|s| matches!(&s.params[0], Val::Agg(g) if g.what == "padded: char then double"))
            .expect("a signature with the padded aggregate first");
        let e = expected(&sig);
        let mut out = e.ret.clone();
        out.resize(64, 0);
        judge(&sig, &e.rec, &out).unwrap();
        // Padding (bytes 1..8 of the first parameter) carries nothing.
        let mut rec = e.rec.clone();
        rec[3] ^= 0xFF;
        judge(&sig, &rec, &out).unwrap();
        let mut rec = e.rec.clone();
        rec[9] ^= 0x10;
        let why = judge(&sig, &rec, &out).unwrap_err();
        assert!(
            matches!(&why, ByteMismatch::Parameter { index: 1, byte: 9, field, passed, received, mask: 0xff, .. }
                if field == ".d" && passed ^ received == 0x10),
            "{why}"
        );
        let text = why.to_string();
        assert!(
            text.starts_with("parameter 1 (struct xa") && text.contains("byte 9 (field .d)"),
            "{text}"
        );
        // The return value: first significant byte wrong.
        let r = sig.ret.clone().unwrap();
        let first = r.mask().iter().position(|m| *m != 0).unwrap();
        out[first] ^= 0x01;
        let why = judge(&sig, &e.rec, &out).unwrap_err();
        assert!(
            matches!(&why, ByteMismatch::Return { byte, .. } if *byte == first),
            "{why}"
        );
        assert!(why.to_string().starts_with("return value"), "{why}");
    }

    /// The expected bytes come from the formula: an independent recomputation for one
    /// scalar signature (seed 0: `char` first).
    #[test]
    fn expected_bytes_follow_the_graffiti_formula() {
        let sig = signature(0);
        let e = expected(&sig);
        // seed 0, parameter 0, byte 0: (0 * 31 + 0x11) & 0xFF.
        let k = 0x11u8;
        assert_eq!(e.rec[0], k);
        assert_eq!(
            e.rec.len() as u64,
            sig.params.iter().map(Val::size).sum::<u64>()
        );
        let src = sig.ret_sources();
        assert_eq!(e.ret[0], e.rec[src[0] as usize] ^ 0x5A);
    }
}
