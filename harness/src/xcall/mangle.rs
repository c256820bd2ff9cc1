//! Itanium mangling across the C++ front ends (ptx-interop 13.2 ch. 7): NVRTC and clang-19
//! compile the same declarations of every generated signature, and their mangled names must
//! be the same. The host's g++ is a third reference, independent of both CUDA front ends: it
//! compiles the same declarations for the host under the same Itanium C++ ABI, and NVRTC's
//! device names must equal its host names.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::sig::Signature;
use super::{all_signatures, cache, emit, generated_signatures, OPTIONS};
use crate::area::{BatchCache, BatchUser, CaseContext};
use crate::backend::producer::{Language, Producer, Source};
use crate::backend::toolchain::{ToolError, Toolchain};
use crate::outcome::CaseStatus;

/// Mangled names per seed from a PTX module: `_ZN13gpucts_mangle<len>xm<seed>...`.
pub(crate) fn mangled_names(ptx: &str) -> BTreeMap<u64, Vec<String>> {
    let Ok(m) = crate::ptx::module::PtxModule::parse(ptx) else {
        return BTreeMap::new();
    };
    by_seed(
        m.functions
            .iter()
            .filter(|f| f.is_definition)
            .map(|f| f.name.as_str()),
    )
}

/// Mangled names per seed from g++'s assembly: the labels of the functions it defined
/// (`_ZN13gpucts_mangle...:` at the start of a line).
pub(crate) fn host_mangled_names(asm: &str) -> BTreeMap<u64, Vec<String>> {
    by_seed(asm.lines().filter_map(|l| {
        l.strip_suffix(':')
            .filter(|n| n.starts_with("_ZN13gpucts_mangle") && !n.contains(char::is_whitespace))
    }))
}

/// The names of `gpucts_mangle::xm<seed>::...` functions, by seed.
fn by_seed<'a>(names: impl Iterator<Item = &'a str>) -> BTreeMap<u64, Vec<String>> {
    let mut out: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for name in names {
        let Some(rest) = name.strip_prefix("_ZN13gpucts_mangle") else {
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
            out.entry(seed).or_default().push(name.to_string());
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
pub(crate) struct MangleError {
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
        let clock = cache::PhaseClock::of(user.run_scope());
        let ptx = cache::compile(tc, &clock, p, &src).map_err(|source| MangleError {
            producer: p.describe(),
            source,
        })?;
        Ok(mangled_names(&ptx))
    })
}

/// NVRTC and clang-19 give the same declarations the same mangled names.
pub(crate) fn mangle_case(ctx: &CaseContext, seed: u64) -> CaseStatus {
    let tc = ctx.toolchain;
    let Some((nvrtc, clang)) = front_ends() else {
        return CaseStatus::error("no two C++ front ends are registered");
    };
    compare_names(
        seed,
        ("NVRTC", || batch(ctx, tc, nvrtc)),
        ("clang-19", || batch(ctx, tc, clang)),
        "the same Itanium mangled name from NVRTC and clang-19 (ptx-interop 13.2 ch. 7)",
    )
}

/// The names two manglers gave signature `seed`'s declarations, compared. The two batches
/// are computed side by side (not the whole suite's prefetch: a run selecting only mangling
/// cases compiles nothing else).
fn compare_names(
    seed: u64,
    (a_name, a): (&str, impl FnOnce() -> Arc<OnceLock<Mangled>> + Send),
    (b_name, b): (&str, impl FnOnce() -> Arc<OnceLock<Mangled>>),
    expected: &str,
) -> CaseStatus {
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(a);
        let b = b();
        (a.join(), b)
    });
    let Ok(a) = a else {
        return CaseStatus::error(format!("the {a_name} mangling batch panicked"));
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
            format!("{a_name} and {b_name} both define gpucts_mangle::xm{seed}::f<{seed}>"),
            format!("{a_name}: {na:?}, {b_name}: {nb:?}"),
        );
    }
    if na == nb {
        CaseStatus::pass()
    } else {
        CaseStatus::fail_detail(
            expected,
            format!("{a_name}: {}, {b_name}: {}", na.join(" "), nb.join(" ")),
            all_signatures()
                .iter()
                .find(|s| s.seed == seed)
                .map(Signature::describe)
                .unwrap_or_default(),
        )
    }
}

/// g++'s names for the declarations clang-19 compiles (the clang flavour defines the CUDA
/// keywords and types itself, so it is plain C++ to g++, which ignores the device attributes).
fn host_batch(user: &dyn BatchUser, tc: &Toolchain) -> Arc<OnceLock<Mangled>> {
    static C: OnceLock<BatchCache<(), Mangled>> = OnceLock::new();
    C.get_or_init(BatchCache::new)
        .get_or_compute(user, &(), || {
            let Some((_, clang)) = front_ends() else {
                return Ok(BTreeMap::new());
            };
            let sigs: Vec<&Signature> = generated_signatures().iter().collect();
            let asm = tc
                .gxx_assembly(&emit::cpp_mangle(clang, &sigs))
                .map_err(|source| MangleError {
                    producer: "g++",
                    source,
                })?;
            Ok(host_mangled_names(&asm))
        })
}

/// NVRTC's device names for signature `seed` are the host g++'s names for the same
/// declarations (one Itanium C++ ABI, ptx-interop 13.2 ch. 7).
pub(crate) fn host_mangle_case(ctx: &CaseContext, seed: u64) -> CaseStatus {
    let tc = ctx.toolchain;
    let Some((nvrtc, _)) = front_ends() else {
        return CaseStatus::error("no CUDA C++ front end is registered");
    };
    compare_names(
        seed,
        ("NVRTC", || batch(ctx, tc, nvrtc)),
        ("g++", || host_batch(ctx, tc)),
        "NVRTC's device name is the host's Itanium name for the same declaration (ptx-interop 13.2 ch. 7; g++ as the reference)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // g++'s assembly of an explicit instantiation, as GNU as reads it (a COMDAT group, a weak
    // symbol, the label): the label is the name; directives naming it are not.
    #[test]
    fn host_names_are_the_function_labels() {
        let asm = "\t.section\t.text._ZN13gpucts_mangle3xm71fILi7EEEvi,\"axG\",@progbits,_ZN13gpucts_mangle3xm71fILi7EEEvi,comdat\n\
                   \t.weak\t_ZN13gpucts_mangle3xm71fILi7EEEvi\n\
                   _ZN13gpucts_mangle3xm71fILi7EEEvi:\n\
                   .LFB0:\n\
                   _ZN5other1fEv:\n";
        let names = host_mangled_names(asm);
        assert_eq!(
            names,
            BTreeMap::from([(7, vec!["_ZN13gpucts_mangle3xm71fILi7EEEvi".to_string()])])
        );
    }
}
