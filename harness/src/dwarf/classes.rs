//! §5.2's address classes that only particular storage reaches: `ADDR_code_space` (1),
//! `ADDR_surf_space` (9), `ADDR_tex_space` (10) and `ADDR_tex_sampler_space` (11). Each case
//! gives a producer of this machine source whose variables live in that storage and asks
//! whether its DWARF says so: a function pointer (a global and a local) for code; for the
//! opaque classes, NVVM IR globals annotated `texture`, `surface` and `sampler`, which
//! libNVVM declares `.texref`/`.surfref`/`.samplerref` (CUDA 12 removed texture and surface
//! references from CUDA C++, so NVRTC and clang have no source for them).

use super::check::check_ptx;
use super::producers::{compile_src, DebugProducer, CLANG_PRELUDE};
use crate::backend::producer::Language;
use crate::backend::toolchain::Toolchain;
use crate::vocab::Vocabulary;

/// The storage a case asks a producer to describe.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
    strum::Display,
)]
pub enum Storage {
    #[strum(serialize = "code")]
    Code,
    #[strum(serialize = "surf")]
    Surface,
    #[strum(serialize = "tex")]
    Texture,
    #[strum(serialize = "sampler")]
    Sampler,
}

impl<'de> serde::Deserialize<'de> for Storage {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Storage, D::Error> {
        let s = String::deserialize(d)?;
        Storage::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown storage `{s}`, expected one of code, surf, tex, sampler"
            ))
        })
    }
}

impl Storage {
    /// The §5.2 code of the class.
    pub fn class(self) -> u64 {
        match self {
            Storage::Code => 1,
            Storage::Surface => 9,
            Storage::Texture => 10,
            Storage::Sampler => 11,
        }
    }

    /// The §5.2 name of the class.
    pub(crate) fn class_name(self) -> &'static str {
        match self {
            Storage::Code => "ADDR_code_space",
            Storage::Surface => "ADDR_surf_space",
            Storage::Texture => "ADDR_tex_space",
            Storage::Sampler => "ADDR_tex_sampler_space",
        }
    }

    /// The variable the source puts in this storage (`None` for code: any variable will do).
    fn variable(self) -> Option<&'static str> {
        match self {
            Storage::Code => None,
            Storage::Surface => Some("gpucts_surf"),
            Storage::Texture => Some("gpucts_tex"),
            Storage::Sampler => Some("gpucts_samp"),
        }
    }
}

/// CUDA C++ with a function pointer in `.global` and one in a local: what code-space data a
/// CUDA source can hold.
const CODE_CU: &str = "__device__ int gpucts_f(int x) { return x + 1; }\n\
__device__ int (*gpucts_fp)(int) = gpucts_f;\n\
extern \"C\" __global__ void gpucts_k(int *out) {\n\
\x20 int (*gpucts_lp)(int) = gpucts_fp;\n  out[0] = gpucts_lp(out[1]);\n}\n";

/// The source for `storage` in `p`'s language; `None` where the language has none.
fn source(p: DebugProducer, storage: Storage) -> Option<String> {
    match (p.language(), storage) {
        (Language::CudaCpp, Storage::Code) => Some(CODE_CU.to_string()),
        (Language::ClangCuda | Language::LlvmIr, Storage::Code) => {
            Some(format!("{CLANG_PRELUDE}{CODE_CU}"))
        }
        (Language::NvvmIr, Storage::Surface | Storage::Texture | Storage::Sampler) => {
            Some(super::nvvm_ir::opaque_globals())
        }
        _ => None,
    }
}

/// Whether `p`'s DWARF for `storage`'s source gives that storage's class: Ok(note), or
/// Err(what it gave instead and the checker's findings, one line each).
pub fn check(tc: &Toolchain, p: DebugProducer, storage: Storage) -> Result<String, String> {
    let Some(src) = source(p, storage) else {
        return Err(format!(
            "no {} source for {} (a {:?} producer)",
            storage.name(),
            p.name(),
            p.language()
        ));
    };
    let ptx = compile_src(tc, p, &src).map_err(|e| format!("the producer failed: {e}"))?;
    // The PTX's own DWARF (the producer's, §5.1); ptxas is not asked, as it refuses an
    // initialised `.samplerref` under the default `texmode_unified`.
    let r = check_ptx(&format!("{}-{}.ptx", p.name(), storage.name()), &ptx, None)
        .map_err(|e| e.to_string())?;
    let want = storage.class();
    let found = match storage.variable() {
        Some(v) => r.classes.get(v) == Some(&want),
        None => r.classes.values().any(|&c| c == want),
    };
    let listed: Vec<String> = r.classes.iter().map(|(n, c)| format!("{n} {c}")).collect();
    let mut problems: Vec<String> = r.findings.iter().map(|f| f.to_string()).collect();
    if !found {
        let whose = storage
            .variable()
            .map_or("no variable or parameter DIE".to_string(), |v| {
                format!("DW_TAG_variable `{v}` does not")
            });
        let verb = if storage.variable().is_some() {
            "have"
        } else {
            "has"
        };
        problems.insert(
            0,
            format!(
                "{whose} {verb} DW_AT_address_class {want} ({}); classes: {}",
                storage.class_name(),
                listed.join(", ")
            ),
        );
    }
    if problems.is_empty() {
        Ok(format!(
            "DW_AT_address_class {want} ({}) given; classes: {}",
            storage.class_name(),
            listed.join(", ")
        ))
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::Capability;

    /// A function pointer's type carries a parameter list of DW_TAG_formal_parameter DIEs
    /// (types, not storage): clang-19 -g writes one, and the check asks no class of it while
    /// still asking one of every real variable (the pointers' own classes are read).
    #[test]
    fn subroutine_type_parameters_need_no_class() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Clang), "clang");
        let p = DebugProducer::parse("clang_g").unwrap();
        let ptx = compile_src(&tc, p, &source(p, Storage::Code).unwrap()).unwrap();
        assert!(
            ptx.contains("DW_TAG_subroutine_type"),
            "no function pointer type"
        );
        let r = check_ptx("code.ptx", &ptx, None).unwrap();
        let findings: Vec<String> = r.findings.iter().map(|f| f.to_string()).collect();
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(r.classes.get("gpucts_fp"), Some(&5));
        assert_eq!(r.classes.get("gpucts_lp"), Some(&6));
    }
}
