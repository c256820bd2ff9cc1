//! Itanium mangling across the C++ front ends (ptx-interop 13.2 ch. 7): NVRTC and clang-19
//! compile the same declarations of every generated signature, and their mangled names must
//! be the same.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::sig::Signature;
use super::{all_signatures, cache, emit, generated_signatures, OPTIONS};
use crate::area::{BatchCache, BatchUser, CaseContext};
use crate::backend::producer::{Language, Producer, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::outcome::CaseStatus;

/// Mangled names per seed from a PTX module: `_ZN13gpucts_mangle<len>xm<seed>...`.
pub fn mangled_names(ptx: &str) -> BTreeMap<u64, Vec<String>> {
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    let Ok(m) = crate::ptx::module::PtxModule::parse(ptx) else {
        return out;
    };
    for f in m.functions.iter().filter(|f| f.is_definition) {
        let Some(rest) = f.name.strip_prefix("_ZN13gpucts_mangle") else {
            continue;
        };
        // <len>xm<seed>
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let Ok(len) = digits.parse::<usize>() else {
            continue;
        };
        let Some(comp) = rest.get(digits.len()..digits.len() + len) else {
            continue;
        };
        if let Some(seed) = comp.strip_prefix("xm").and_then(|s| s.parse().ok()) {
            out.entry(seed).or_default().push(f.name.clone());
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    out
}

/// Why a producer gave no mangled names (its compilation failed).
#[derive(Debug, thiserror::Error)]
#[error("{producer}: {source}")]
pub struct MangleError {
    pub producer: &'static str,
    pub source: ToolError,
}

type Mangled = Result<BTreeMap<u64, Vec<String>>, MangleError>;

/// The two C++ front ends whose manglings must agree: the first producer that reads CUDA C++
/// with CUDA's headers (NVRTC) and the first that reads it without (clang-19).
pub(super) fn front_ends() -> Option<(Producer, Producer)> {
    let first = |l: Language| Producer::accepting(&[l]).into_iter().next();
    Some((first(Language::CudaCpp)?, first(Language::ClangCuda)?))
}

pub(super) fn batch(user: &dyn BatchUser, tc: &Toolchain, p: Producer) -> Arc<OnceLock<Mangled>> {
    static C: OnceLock<BatchCache<Producer, Mangled>> = OnceLock::new();
    C.get_or_init(BatchCache::new).get_or_compute(user, &p, || {
        let sigs: Vec<&Signature> = generated_signatures().iter().collect();
        let text = emit::cpp_mangle(p, &sigs);
        let language = p
            .language_of(&[Language::CudaCpp, Language::ClangCuda])
            .unwrap_or(Language::CudaCpp);
        let src = Source::new(language, &text)
            .file_name("xcall_mangle.cu")
            .options(OPTIONS);
        let id = p.tool_identity(tc);
        let key: [&[u8]; 3] = [id.as_bytes(), b"mangle", text.as_bytes()];
        let ptx = cache::run_text(&key, cache::Phase::Compile, || p.compile(tc, &src)).map_err(
            |source| MangleError {
                producer: p.describe(),
                source,
            },
        )?;
        Ok(mangled_names(&ptx))
    })
}

/// NVRTC and clang-19 give the same declarations the same mangled names.
pub fn mangle_case(ctx: &CaseContext, seed: u64) -> CaseStatus {
    let tc = ctx.toolchain;
    // The two compilations side by side (not the whole suite's prefetch: a run selecting
    // only mangling cases compiles nothing else).
    let Some((nvrtc, clang)) = front_ends() else {
        return CaseStatus::error("no two C++ front ends are registered");
    };
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| batch(ctx, tc, nvrtc));
        let b = batch(ctx, tc, clang);
        (a.join(), b)
    });
    let Ok(a) = a else {
        return CaseStatus::error("the NVRTC mangling batch panicked");
    };
    let (a, b) = match (a.get(), b.get()) {
        (Some(Ok(a)), Some(Ok(b))) => (a, b),
        (Some(Err(e)), _) | (_, Some(Err(e))) => return CaseStatus::error(e),
        _ => return CaseStatus::error("mangling batch not computed"),
    };
    let na = a.get(&seed).cloned().unwrap_or_default();
    let nb = b.get(&seed).cloned().unwrap_or_default();
    if na.is_empty() || nb.is_empty() {
        return CaseStatus::fail(
            format!("both producers emit gpucts_mangle::xm{seed}::f<{seed}>"),
            format!("NVRTC: {na:?}, clang-19: {nb:?}"),
        );
    }
    if na == nb {
        CaseStatus::pass()
    } else {
        CaseStatus::fail_detail(
            "the same Itanium mangled name from NVRTC and clang-19 (ptx-interop 13.2 ch. 7)",
            format!("NVRTC: {}, clang-19: {}", na.join(" "), nb.join(" ")),
            all_signatures()
                .iter()
                .find(|s| s.seed == seed)
                .map(Signature::describe)
                .unwrap_or_default(),
        )
    }
}
