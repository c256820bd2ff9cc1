//! §1.3 bit fields read back through their members, offline: each producer's code for
//! `long long get_<f>(const S* p) { return p->f; }` is executed with the PTX interpreter
//! ([`crate::ptx::exec`]) on an object whose every bit is 1, and after the producer's own
//! `set_<f>` stored the field's most negative (signed) or top-bit (unsigned) value into a
//! zeroed object. The expected values are §1.3's table: a signed field of width w holds
//! -2^(w-1)..2^(w-1)-1 (all ones reads -1), an unsigned one 0..2^w-1 (all ones reads 2^w-1),
//! and a plain field is signed.

use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use crate::area::{BatchCache, CaseContext};
use crate::backend::producer::{Language, Options, Producer, Source};
use crate::backend::toolchain::Toolchain;
use crate::outcome::CaseStatus;
use crate::ptx::exec::{generic, Machine, MemSpace, Stop};

/// The languages the bit-field program is written in (bit fields are the C++ front end's:
/// the IR producers never see one).
pub const LANGUAGES: [Language; 2] = [Language::CudaCpp, Language::ClangCuda];

pub fn producers() -> Vec<Producer> {
    Producer::accepting(&LANGUAGES)
}

pub(crate) fn producer_in_view<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Producer, D::Error> {
    let p = Producer::deserialize(d)?;
    crate::backend::producer::in_view(p, "abi bit fields", &producers())
        .map_err(serde::de::Error::custom)
}

/// A member of the struct: name, declared type, width, signed by §1.3 (plain is signed).
pub(crate) const FIELDS: &[(&str, &str, u32, bool)] = &[
    ("sc3", "signed char", 3, true),
    ("uc5", "unsigned char", 5, false),
    ("pc2", "char", 2, true),
    ("ss11", "short", 11, true),
    ("us9", "unsigned short", 9, false),
    ("si1", "signed int", 1, true),
    ("pi7", "int", 7, true),
    ("ui32", "unsigned int", 32, false),
    ("dflt6", "signed", 6, true),
    ("ud4", "unsigned", 4, false),
    ("sll40", "long long", 40, true),
    ("ull33", "unsigned long long", 33, false),
    ("sll64", "signed long long", 64, true),
];

/// The struct's size in bytes is at most this (the object the interpreter fills).
const OBJECT_BYTES: usize = 64;

fn source(clang: bool) -> String {
    let mut s = String::new();
    if clang {
        s += "#define __device__ __attribute__((device))\n#define __noinline__ __attribute__((noinline))\n";
    }
    s += "struct S {\n";
    for (n, t, w, _) in FIELDS {
        s += &format!("  {t} {n} : {w};\n");
    }
    s += "};\n";
    for (n, _, _, _) in FIELDS {
        s += &format!(
            "extern \"C\" __device__ __noinline__ long long get_{n}(const S* p) {{ return p->{n}; }}\n\
             extern \"C\" __device__ __noinline__ void set_{n}(S* p, long long v) {{ p->{n} = v; }}\n"
        );
    }
    s
}

pub(crate) fn compile(tc: &Toolchain, producer: Producer) -> Result<String, String> {
    let language = producer
        .language_of(&LANGUAGES)
        .ok_or_else(|| format!("{} reads neither CUDA dialect", producer.name()))?;
    let text = source(language == Language::ClangCuda);
    let src = Source::new(language, &text).options(Options {
        nvrtc: &["--relocatable-device-code=true", "-std=c++17"],
        clang: &["-fgpu-rdc", "-O2", "-std=c++17"],
        nvvm: &[],
        llc: &[],
        rustc: &[],
    });
    producer
        .compile(tc, &src)
        .map_err(|e| format!("{} rejected the bit-field program: {e}", producer.name()))
}

fn batch(ctx: &CaseContext, producer: Producer) -> Arc<OnceLock<Result<String, String>>> {
    static CACHE: OnceLock<BatchCache<Producer, Result<String, String>>> = OnceLock::new();
    CACHE
        .get_or_init(BatchCache::new)
        .get_or_compute(ctx, &producer, || compile(ctx.toolchain, producer))
}

/// Run `f(p[, v])` of `ptx` on `object`; the object afterwards and the 64-bit return value.
fn run(
    ptx: &str,
    f: &str,
    object: &[u8],
    v: Option<i64>,
) -> Result<(Vec<u8>, Option<i64>), String> {
    let m = crate::ptx::PtxModule::parse(ptx).map_err(|e| e.to_string())?;
    let decl = m
        .function(f)
        .filter(|d| d.is_definition)
        .ok_or_else(|| format!("no definition of `{f}`"))?;
    let mut mach = Machine::new(ptx, f).map_err(|e| e.to_string())?;
    let addr = mach.place(MemSpace::Global, object);
    let names: Vec<&str> = decl.params.iter().map(|p| p.name.as_str()).collect();
    let first = names
        .first()
        .ok_or_else(|| format!("`{f}` takes no pointer"))?;
    mach.set_param(first, &generic(MemSpace::Global, addr).to_le_bytes());
    if let (Some(v), Some(second)) = (v, names.get(1)) {
        mach.set_param(second, &v.to_le_bytes());
    }
    match mach.run().map_err(|e| format!("{f}: {e}"))? {
        Stop::Ret { .. } => {}
        other => return Err(format!("{f} calls: {other:?}")),
    }
    let after: Vec<u8> = mach
        .read(MemSpace::Global, addr, object.len())
        .into_iter()
        .map(|b| b.unwrap_or(0))
        .collect();
    let ret = decl
        .returns
        .first()
        .and_then(|r| mach.param(&r.name))
        .and_then(|b| {
            let b: Option<Vec<u8>> = b.iter().copied().collect();
            b.filter(|b| b.len() == 8)
                .map(|b| i64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
        });
    Ok((after, ret))
}

/// §1.3's value of an all-ones field, and of its lowest (signed) or top-bit (unsigned) value.
pub fn expected(width: u32, signed: bool) -> (i64, i64) {
    match (signed, width) {
        (true, _) => (-1, (-1i64).checked_shl(width - 1).unwrap_or(i64::MIN)),
        (false, 64) => (-1, i64::MIN),
        (false, w) => ((1i64 << w) - 1, 1i64 << (w - 1)),
    }
}

/// Every field of [`FIELDS`] read back as §1.3 says, through the producer's own accessors;
/// the error names every field that did not, one line each.
pub fn check(ptx: &str) -> Result<usize, String> {
    let mut wrong = Vec::new();
    for (n, t, w, signed) in FIELDS {
        let (ones, low) = expected(*w, *signed);
        let (_, got) = run(ptx, &format!("get_{n}"), &[0xff; OBJECT_BYTES], None)?;
        if got != Some(ones) {
            wrong.push(format!(
                "`{t} {n}:{w}` of an all-ones object: expected {ones}, read {got:?}"
            ));
        }
        let (after, _) = run(ptx, &format!("set_{n}"), &[0; OBJECT_BYTES], Some(low))?;
        let (_, got) = run(ptx, &format!("get_{n}"), &after, None)?;
        if got != Some(low) {
            wrong.push(format!(
                "`{t} {n}:{w}` after storing {low}: expected {low}, read {got:?}"
            ));
        }
    }
    if wrong.is_empty() {
        Ok(FIELDS.len())
    } else {
        Err(wrong.join("\n"))
    }
}

/// The producer's PTX of the accessors, compiled once per run.
pub(crate) fn ptx_of(ctx: &CaseContext, producer: Producer) -> Result<String, CaseStatus> {
    match batch(ctx, producer).get() {
        Some(Ok(p)) => Ok(p.clone()),
        Some(Err(e)) => Err(CaseStatus::error(e.clone())),
        None => Err(CaseStatus::error("batch not computed")),
    }
}

pub fn case(ctx: &CaseContext, producer: Producer) -> CaseStatus {
    match batch(ctx, producer).get() {
        Some(Ok(ptx)) => match check(ptx) {
            Ok(n) => CaseStatus::pass_with(format!("{n} bit fields read back as §1.3 says")),
            Err(e) if e.contains("expected") => CaseStatus::fail("§1.3's value range and sign", e),
            Err(e) => CaseStatus::error(e),
        },
        Some(Err(e)) => CaseStatus::error(e.clone()),
        None => CaseStatus::error("batch not computed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_values_are_the_table_s() {
        // §1.3's table, worked by hand.
        assert_eq!(expected(3, true), (-1, -4));
        assert_eq!(expected(5, false), (31, 16));
        assert_eq!(expected(1, true), (-1, -1));
        assert_eq!(expected(32, false), (0xffff_ffff, 0x8000_0000));
        assert_eq!(expected(64, true), (-1, i64::MIN));
    }

    #[test]
    fn producers_read_bit_fields_back() {
        let tc = Toolchain::discover_system();
        for p in producers() {
            crate::require!(p.requires().iter().all(|c| tc.has(*c)), p.name());
            let ptx = compile(&tc, p).unwrap();
            assert_eq!(check(&ptx), Ok(FIELDS.len()), "{}", p.name());
            // The same code with every sign-extending extract made zero-extending is caught.
            let mut unsigned = ptx.clone();
            for (from, to) in [
                ("bfe.s", "bfe.u"),
                ("shr.s", "shr.u"),
                ("cvt.s64.s", "cvt.u64.u"),
                ("cvt.s32.s", "cvt.u32.u"),
                ("ld.param.s", "ld.param.u"),
                ("ld.s", "ld.u"),
            ] {
                unsigned = unsigned.replace(from, to);
            }
            assert_ne!(unsigned, ptx, "{}: no sign extension to undo", p.name());
            assert!(check(&unsigned).is_err(), "{}", p.name());
        }
    }
}
