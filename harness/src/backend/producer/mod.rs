//! The PTX producers gpucts compiles with or reads, as plug-ins every area shares.
//!
//! ptx-interop 13.2 §2.3 binds every generator of PTX: a caller from one producer and a callee
//! from another must agree on the calling sequence. Each producer is one file here holding one
//! [`ProducerDef`]: its names, the capability it needs, the source [`Language`]s it accepts
//! and how it compiles a [`Source`] of each. An area writes sources in the languages it knows
//! and asks [`Producer::accepting`] which producers take them; it never matches producer names,
//! so a producer registered in [`REGISTRY`] runs in every area that writes one of its
//! languages.
//!
//! Spellings: [`Producer::name`] is the spelling suites and case ids use; [`Producer::parse`]
//! also takes each producer's aliases (`llc` for the LLVM IR producer, `reference` for gpucts's
//! own emitter, `hand` for the corpus). Every area parses producer names through it.

mod clang;
mod clang_o1;
mod corpus;
mod gpucts;
mod libnvvm;
mod llc;
mod numba;
mod nvrtc;
mod rustc;
mod triton;
pub mod user;

use std::fmt;

use crate::backend::toolchain::{output_cache, ToolError, Toolchain};
use crate::capability::Capability;

/// Every producer, in a stable order (the order of reports and of [`Producer`]'s `Ord`). Adding
/// a producer: one file in this directory with its [`ProducerDef`], and one line here.
pub(crate) static REGISTRY: &[&ProducerDef] = &[
    &nvrtc::DEF,
    &libnvvm::DEF,
    &clang::DEF,
    &llc::DEF,
    &gpucts::DEF,
    &corpus::DEF,
    &clang_o1::DEF,
    &rustc::DEF,
    &triton::DEF,
    &numba::DEF,
];

/// A source language a producer reads. The two C++ dialects differ in what the source must
/// declare itself: NVRTC builds in CUDA's headers, clang-19 is run without the CUDA SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Language {
    /// CUDA C++ with CUDA's built-in declarations (`__device__`, `printf`, `assert`, vector
    /// types), as NVRTC reads it.
    CudaCpp,
    /// CUDA device C++ without the CUDA headers (`-nocudainc`): the source defines
    /// `__device__` and friends as clang attributes and declares what it calls.
    ClangCuda,
    /// C for `nvptx64-nvidia-cuda`.
    C,
    /// NVVM IR: the LLVM 7 dialect with typed pointers that libNVVM reads.
    NvvmIr,
    /// LLVM IR of LLVM 19 (opaque pointers).
    LlvmIr,
    /// PTX the area writes itself (gpucts's reference emitter).
    Ptx,
    /// Rust for `nvptx64-nvidia-cuda`: a `#![no_std]` crate of `#[no_mangle] extern "C"`
    /// functions and `extern "ptx-kernel"` kernels.
    Rust,
    /// Python for Triton: `@triton.jit` kernels and the list `GPUCTS_KERNELS` of
    /// `(kernel, signature, constexprs)` to compile ([`crate::backend::toolchain::python`]).
    Triton,
    /// Python for numba-cuda: functions and the list `GPUCTS_FUNCTIONS` of `(function,
    /// signature, abi_name)` to compile as C ABI device functions.
    Numba,
}

/// What an area asks of each tool when it compiles, beside the target: the same source may
/// need `-rdc=true` in one area and `-std=c++17` in another. A producer passes the options of
/// the tool it runs, then its own.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options<'a> {
    /// NVRTC options after `--gpu-architecture=compute_NN`.
    pub nvrtc: &'a [&'a str],
    /// clang-19 arguments after the target arguments.
    pub clang: &'a [&'a str],
    /// libNVVM options after `-arch=compute_NN`.
    pub nvvm: &'a [&'a str],
    /// llc-19 arguments after `-mcpu=sm_NN`.
    pub llc: &'a [&'a str],
    /// rustc arguments after `-Ctarget-cpu=sm_NN`.
    pub rustc: &'a [&'a str],
}

/// One source an area hands to a producer.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    pub language: Language,
    pub text: &'a str,
    /// The program's file name where a front end takes one (NVRTC: it is what `__FILE__` and
    /// `__assertfail` see).
    pub file_name: &'a str,
    /// The GPU target, `sm_NN`.
    pub arch: &'a str,
    pub options: Options<'a>,
}

impl<'a> Source<'a> {
    /// A source for `sm_90` with no area options.
    pub fn new(language: Language, text: &'a str) -> Source<'a> {
        Source {
            language,
            text,
            file_name: "gpucts.cu",
            arch: "sm_90",
            options: Options::default(),
        }
    }

    pub fn file_name(mut self, name: &'a str) -> Source<'a> {
        self.file_name = name;
        self
    }

    pub fn arch(mut self, arch: &'a str) -> Source<'a> {
        self.arch = arch;
        self
    }

    pub fn options(mut self, options: Options<'a>) -> Source<'a> {
        self.options = options;
        self
    }

    /// `compute_NN` for the target `sm_NN` (NVRTC's and libNVVM's spelling).
    pub(crate) fn compute(&self) -> String {
        self.arch.replacen("sm_", "compute_", 1)
    }
}

/// One producer: its row of the vocabulary and its compiler.
#[derive(Debug)]
pub struct ProducerDef {
    /// The spelling in suites, case ids and reports.
    pub name: &'static str,
    /// Other spellings [`Producer::parse`] accepts.
    pub aliases: &'static [&'static str],
    /// What the producer is, for reports.
    pub describe: &'static str,
    /// The tool's short name, for messages ("clang-19", "libNVVM").
    pub tool: &'static str,
    /// The capability it needs to run; `None` for those that run no tool.
    pub capability: Option<Capability>,
    /// Other tools it runs, which its cases require too (numba-cuda's libNVVM).
    pub also_requires: &'static [Capability],
    /// The languages it compiles, the one it prefers first.
    pub accepts: &'static [Language],
    /// Hand-written PTX read from `ptx-corpus/`: nothing is compiled, the area reads the files.
    pub hand_written: bool,
    /// The oldest target it compiles for, measured with the installed tool (see each file).
    pub oldest_target: &'static str,
    /// The version on this machine; `None` when its tool is missing.
    pub version: fn(&ProducerDef, &Toolchain) -> Option<String>,
    /// Compile a source in one of [`ProducerDef::accepts`] to PTX.
    pub compile: fn(&Toolchain, &Source<'_>) -> Result<String, ToolError>,
    /// A second tool the producer runs (llc-19 beside clang-19) or headers it reads (CCCL for
    /// NVRTC): its path, for cache keys.
    pub extra_tool: Option<fn(&Toolchain) -> Option<std::path::PathBuf>>,
    /// A producer read from a file (`--producer-file`): the command that compiles instead of
    /// [`ProducerDef::compile`].
    pub user: Option<&'static user::UserCommand>,
}

/// Whether anything has asked for the producers yet (after that, none may be added).
static IN_USE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The built-in producers, then those read from files ([`user::register`]).
fn registry() -> impl Iterator<Item = &'static ProducerDef> {
    IN_USE.store(true, std::sync::atomic::Ordering::Relaxed);
    REGISTRY
        .iter()
        .copied()
        .chain(user::registered().iter().copied())
}

/// The version of the producer's capability's component (the default [`ProducerDef::version`]).
pub(crate) fn tool_version(def: &ProducerDef, tc: &Toolchain) -> Option<String> {
    def.capability
        .and_then(|c| tc.component(c))
        .map(|c| c.version.clone())
}

/// The error for a source a producer does not read.
pub(super) fn refuses(def: &ProducerDef, src: &Source<'_>) -> ToolError {
    ToolError::Failed {
        tool: def.name.to_string(),
        log: format!(
            "{} does not read {:?} (it reads {:?})",
            def.name, src.language, def.accepts
        ),
    }
}

/// One producer of PTX: a handle on its [`REGISTRY`] entry.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Producer(u8);

impl fmt::Debug for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Producer({})", self.name())
    }
}

impl Producer {
    /// Every registered producer, in [`REGISTRY`] order, then those read from files.
    pub fn all() -> impl Iterator<Item = Producer> {
        (0..registry().count()).map(|i| Producer(i as u8))
    }

    /// The names of the producers read from files (`--producer-file`), in their order.
    pub fn from_files() -> Vec<&'static str> {
        user::registered().iter().map(|d| d.name).collect()
    }

    /// Whether the producers have been asked for (user producers come before that).
    pub(crate) fn in_use() -> bool {
        IN_USE.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The producers that compile at least one of `languages`, in registry order: an area's
    /// view of the vocabulary.
    pub(crate) fn accepting(languages: &[Language]) -> Vec<Producer> {
        Producer::all()
            .filter(|p| p.language_of(languages).is_some())
            .collect()
    }

    /// The hand-written producers (nothing to compile).
    pub fn hand_written() -> Vec<Producer> {
        Producer::all().filter(|p| p.def().hand_written).collect()
    }

    pub(crate) fn def(self) -> &'static ProducerDef {
        let i = usize::from(self.0);
        REGISTRY
            .get(i)
            .copied()
            .unwrap_or_else(|| user::registered()[i - REGISTRY.len()])
    }

    /// The spelling in suites, case ids and reports.
    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The registered producer `name` names; panics on a name no producer has (for tests and
    /// fixed fixtures; user input goes through [`Producer::parse`]).
    pub fn named(name: &str) -> Producer {
        Producer::parse(name).unwrap_or_else(|| panic!("no producer is named `{name}`"))
    }

    /// The canonical name or an accepted alias.
    pub fn parse(s: &str) -> Option<Producer> {
        Producer::all().find(|p| p.name() == s || p.def().aliases.contains(&s))
    }

    /// What the producer reads, for reports.
    pub(crate) fn describe(self) -> &'static str {
        self.def().describe
    }

    /// The tool's short name, for messages.
    pub fn tool(self) -> &'static str {
        self.def().tool
    }

    /// The capability the producer needs to run; `None` for those that need no tool.
    pub fn capability(self) -> Option<Capability> {
        self.def().capability
    }

    /// The capabilities its cases require: its own and [`ProducerDef::also_requires`] (empty
    /// for the tool-less producers).
    pub fn requires(self) -> Vec<Capability> {
        self.capability()
            .into_iter()
            .chain(self.def().also_requires.iter().copied())
            .collect()
    }

    /// The languages it reads, preferred first.
    pub fn accepts(self) -> &'static [Language] {
        self.def().accepts
    }

    /// The first language of the producer's that an area writes (one of `written`).
    pub(crate) fn language_of(self, written: &[Language]) -> Option<Language> {
        self.accepts().iter().copied().find(|l| written.contains(l))
    }

    pub(crate) fn is_hand_written(self) -> bool {
        self.def().hand_written
    }

    pub fn oldest_target(self) -> &'static str {
        self.def().oldest_target
    }

    /// The version the producer reports on this machine, for waivers' `platform:` pins and
    /// reports; `None` when its tool is missing.
    pub fn version(self, tc: &Toolchain) -> Option<String> {
        (self.def().version)(self.def(), tc)
    }

    /// Compile `src` to PTX; an error naming the producer if it does not read the language.
    pub fn compile(self, tc: &Toolchain, src: &Source<'_>) -> Result<String, ToolError> {
        if !self.accepts().contains(&src.language) {
            return Err(refuses(self.def(), src));
        }
        match self.def().user {
            Some(u) => u.compile(self.name(), tc, src),
            None => (self.def().compile)(tc, src),
        }
    }

    /// [`Producer::compile`] answered from the toolchain's disk cache of tool runs when it
    /// holds this producer's output for this very source ([`output_cache`]); `run` wraps the
    /// compilation when it happens (a caller's clock). The key is the tool's identity and
    /// every field of `src`: language, file name, target, each tool's options, text.
    pub fn compile_cached(
        self,
        tc: &Toolchain,
        src: &Source<'_>,
        run: impl FnOnce(&dyn Fn() -> Result<String, ToolError>) -> Result<String, ToolError>,
    ) -> (Result<String, ToolError>, output_cache::Answered) {
        if self.is_hand_written() {
            return (self.compile(tc, src), output_cache::Answered::ByTool);
        }
        let id = self.tool_identity(tc);
        let o = &src.options;
        let options = [o.nvrtc, o.clang, o.nvvm, o.llc, o.rustc]
            .iter()
            .map(|args| args.join(" "))
            .collect::<Vec<_>>()
            .join("\0");
        let language = format!("{:?}", src.language);
        let parts: [&[u8]; 6] = [
            id.as_bytes(),
            language.as_bytes(),
            src.file_name.as_bytes(),
            src.arch.as_bytes(),
            options.as_bytes(),
            src.text.as_bytes(),
        ];
        output_cache::run_text(tc, &parts, || run(&|| self.compile(tc, src)))
    }

    /// What identifies the tools the producer runs, for disk caches: name, version, path.
    pub(crate) fn tool_identity(self, tc: &Toolchain) -> String {
        if let Some(u) = self.def().user {
            return format!("{} {}", self.name(), u.identity());
        }
        let Some(cap) = self.capability() else {
            return self.name().to_string();
        };
        let c = tc.component(cap);
        let extra = self
            .def()
            .extra_tool
            .and_then(|f| f(tc))
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        format!(
            "{} {} {} {extra}",
            self.name(),
            c.map_or("", |c| c.version.as_str()),
            c.map_or(String::new(), |c| c.path.display().to_string())
        )
    }
}

impl fmt::Display for Producer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Producer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Producer::parse(&s).ok_or_else(|| {
            let names: Vec<&str> = Producer::all().map(|p| p.name()).collect();
            serde::de::Error::custom(format!(
                "unknown producer `{s}`; expected one of {}",
                names.join(", ")
            ))
        })
    }
}

/// A producer an area does not drive, named where the area was asked for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("producer `{producer}` is not one {area} compiles with (it uses {allowed})")]
pub(crate) struct NotInView {
    pub producer: Producer,
    pub area: &'static str,
    pub allowed: String,
}

/// Check that `p` is in an area's view; the error names the view.
pub(crate) fn in_view(
    p: Producer,
    area: &'static str,
    view: &[Producer],
) -> Result<Producer, NotInView> {
    if view.contains(&p) {
        Ok(p)
    } else {
        Err(NotInView {
            producer: p,
            area,
            allowed: view.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
        })
    }
}

/// Parse a name that must be in an area's view.
pub(crate) fn parse_in_view(s: &str, view: &[Producer]) -> Option<Producer> {
    Producer::parse(s).filter(|p| view.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str) -> Producer {
        Producer::parse(name).unwrap()
    }

    #[test]
    fn names_round_trip_and_aliases_resolve() {
        for p in Producer::all() {
            assert_eq!(Producer::parse(p.name()), Some(p));
            assert_eq!(p.to_string(), p.name());
        }
        // The spellings suites already use: abi (nvrtc, clang, libnvvm), atomics (llvm),
        // syscalls (llc).
        assert_eq!(p("llvm").name(), "llvm");
        assert_eq!(p("llc"), p("llvm"));
        assert_eq!(p("llc-19"), p("llvm"));
        assert_eq!(p("reference").name(), "gpucts");
        assert_eq!(p("hand").name(), "corpus");
        assert_eq!(Producer::parse("gcc"), None);
        let mut names: Vec<&str> = Producer::all()
            .flat_map(|p| std::iter::once(p.name()).chain(p.def().aliases.iter().copied()))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "names and aliases are distinct");
    }

    #[test]
    fn capabilities_follow_the_tools() {
        assert_eq!(p("nvrtc").capability(), Some(Capability::Nvrtc));
        assert_eq!(p("libnvvm").capability(), Some(Capability::Libnvvm));
        // llc-19 ships with clang-19 (Debian's llvm-19); the Clang probe checks both.
        assert_eq!(p("llvm").capability(), Some(Capability::Clang));
        assert_eq!(p("clang-o1").capability(), Some(Capability::Clang));
        assert!(p("gpucts").requires().is_empty());
        assert!(p("corpus").requires().is_empty());
        let tc = Toolchain::default();
        assert_eq!(p("nvrtc").version(&tc), None, "no tool, no version");
        assert!(p("gpucts").version(&tc).is_some());
    }

    #[test]
    fn areas_find_producers_by_language() {
        let names = |l: &[Language]| {
            Producer::accepting(l)
                .into_iter()
                .map(Producer::name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&[Language::CudaCpp]), ["nvrtc"]);
        assert_eq!(names(&[Language::C]), ["clang", "clang-o1"]);
        assert_eq!(
            names(&[Language::NvvmIr, Language::LlvmIr]),
            ["libnvvm", "llvm"]
        );
        assert_eq!(names(&[Language::Ptx]), ["gpucts"]);
        assert_eq!(
            Producer::hand_written()
                .iter()
                .map(|p| p.name())
                .collect::<Vec<_>>(),
            ["corpus"]
        );
        // clang prefers CUDA device C++ where an area writes both.
        assert_eq!(
            p("clang").language_of(&[Language::C, Language::ClangCuda]),
            Some(Language::ClangCuda)
        );
    }

    #[test]
    fn a_producer_refuses_a_language_it_does_not_read() {
        let tc = Toolchain::default();
        let e = p("libnvvm")
            .compile(&tc, &Source::new(Language::C, "int x;"))
            .unwrap_err();
        assert!(e.to_string().contains("libnvvm does not read C"), "{e}");
        // clang's own entry (clang_o1 calls it directly) names what it does not read rather
        // than compiling NVRTC's dialect or IR as clang CUDA
        for language in [
            Language::CudaCpp,
            Language::NvvmIr,
            Language::LlvmIr,
            Language::Ptx,
        ] {
            let e = clang::compile_with(&tc, &Source::new(language, "x"), &[]).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("clang does not read {language:?}")),
                "{e}"
            );
        }
        // The reference emitter's PTX is retargeted, not compiled.
        let ptx = p("gpucts")
            .compile(
                &tc,
                &Source::new(Language::Ptx, ".version 8.0\n.target sm_90\n").arch("sm_50"),
            )
            .unwrap();
        assert_eq!(ptx, ".version 8.0\n.target sm_50\n");
    }

    #[test]
    fn deserializes_with_a_clear_error() {
        let q: Producer = serde_json::from_value(serde_json::json!("llvm")).unwrap();
        assert_eq!(q, p("llc"));
        let e = serde_json::from_value::<Producer>(serde_json::json!("gcc")).unwrap_err();
        assert!(e.to_string().contains("unknown producer `gcc`"), "{e}");
    }

    #[test]
    fn views_name_what_they_allow() {
        let view = [p("nvrtc"), p("clang")];
        assert_eq!(in_view(p("clang"), "x", &view), Ok(p("clang")));
        let e = in_view(p("llvm"), "abi", &view).unwrap_err();
        assert_eq!(
            e.to_string(),
            "producer `llvm` is not one abi compiles with (it uses nvrtc, clang)"
        );
        assert_eq!(parse_in_view("llvm", &view), None);
        assert_eq!(parse_in_view("clang", &view), Some(p("clang")));
    }
}
