//! The `xcall` area: a caller compiled by one PTX producer calls a callee compiled by another,
//! and the two must agree on the calling sequence (ptx-interop 13.2 ch. 2, §2.3) and on C++
//! names (ch. 7, Itanium ABI).
//!
//! For every ordered producer pair and every generated signature ([`sig`]): both sides
//! assemble with ptxas, the caller's `.extern` prototype and call site agree with the callee's
//! definition ([`check`], the `gpucts xcall check` command), and nvJitLink links the two into
//! an sm_90 cubin holding the kernel. On a GPU ([`gpu`]) the driver's JIT linker links the
//! pair from PTX, the kernel calls across, and the bytes both sides saw are compared.
//!
//! Batching: each producer compiles all the signatures of one role (caller or callee) in one
//! program, ptxas assembles each batch once, and each pair is checked and linked once; cases
//! read the batch's result ([`crate::area::BatchCache`]).

pub mod bytes;
pub mod cache;
pub mod check;
pub mod corpus;
pub mod emit;
pub(crate) mod emit_rust;
pub mod gpu;
pub mod mangle;
pub mod sig;
pub mod values;
pub mod values_gpu;

use crate::vocab::Vocabulary;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use crate::area::{BatchCache, BatchUser, CaseContext, Check, RunScope};
use crate::backend::producer::{Options, Producer, Source};
use crate::backend::toolchain::{LinkInputKind, ToolError, Toolchain};
use crate::capability::Capability;
use crate::cubin::Cubin;
use crate::outcome::CaseStatus;
use cache::PhaseClock;
use sig::Role;
use sig::Signature;

/// This area's view of the producer vocabulary: every producer that reads a language the
/// batches are written in ([`emit::LANGUAGES`]), and the hand-written corpus (only for its own
/// signatures, [`corpus`]), in registry order.
pub fn producers() -> &'static [Producer] {
    static VIEW: OnceLock<Vec<Producer>> = OnceLock::new();
    VIEW.get_or_init(|| {
        let mut v = Producer::accepting(&emit::LANGUAGES);
        v.extend(Producer::hand_written());
        v.sort();
        v
    })
}

/// The set of producers (bits in [`producers`] order) that can express a signature.
pub(crate) type Mask = u32;

/// The generated signatures the suite runs: seeds `0..SIGNATURES` (the corpus's follow).
pub(crate) const SIGNATURES: u64 = 240;

/// The target every pair links for.
pub(crate) const ARCH: &str = "sm_90";

/// The oldest target each producer supports, measured with the installed tools (the unit
/// test `oldest_targets_are_measured` repeats the measurement; each producer's file says what
/// its tool answers below it).
pub fn oldest_target(p: Producer) -> &'static str {
    p.oldest_target()
}

/// The oldest target ptxas 12.9 and nvJitLink 12.9 accept ("Value 'sm_37' is not defined
/// for option 'gpu-name'" below it, for both).
pub const OLDEST_LINKABLE: &str = "sm_50";

/// The target an ordered pair links for in the oldest-target cases: the newest of the two
/// producers' oldest targets and the linker's.
pub fn pair_oldest(a: Producer, b: Producer) -> &'static str {
    let n = |t: &str| t.trim_start_matches("sm_").parse::<u32>().unwrap_or(0);
    [oldest_target(a), oldest_target(b), OLDEST_LINKABLE]
        .into_iter()
        .max_by_key(|t| n(t))
        .unwrap_or(OLDEST_LINKABLE)
}

/// Every pair's oldest target (one set of oldest-target batches serves them all; the test
/// `every_pair_has_one_oldest_target` keeps it so).
pub(crate) const OLDEST: &str = "sm_50";

/// The generated signatures linked for the oldest target too: seeds `0..OLDEST_SEEDS` (every
/// class of the cycle twice), beside the corpus's.
pub(crate) const OLDEST_SEEDS: u64 = 24;

/// A Jetson's GPU, a target the pairs link for too: the ABI does not depend on the target, so
/// what links for sm_90 must link for the integrated GPUs of the boards users have. Thor's
/// sm_110 is not among them: CUDA 12.9's tools call it sm_101 and CUDA 13's are not the
/// pinned toolchain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
pub enum Jetson {
    /// Xavier (Volta): CUDA 13 dropped it, the pinned 12.9 tools build for it.
    #[serde(rename = "sm_72")]
    Xavier,
    /// Orin (Ampere).
    #[serde(rename = "sm_87")]
    Orin,
}

/// Which target a batch is compiled, assembled and linked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// [`ARCH`], every signature.
    Current,
    /// [`OLDEST`], the signatures of [`Target::has`].
    Oldest,
    /// A Jetson's GPU, the signatures of [`Target::has`].
    Jetson(Jetson),
}

impl Target {
    /// Every target, in the order batches are compiled.
    pub(crate) const ALL: [Target; 4] = [
        Target::Current,
        Target::Oldest,
        Target::Jetson(Jetson::Xavier),
        Target::Jetson(Jetson::Orin),
    ];

    pub fn arch(self) -> &'static str {
        match self {
            Target::Current => ARCH,
            Target::Oldest => OLDEST,
            Target::Jetson(Jetson::Xavier) => "sm_72",
            Target::Jetson(Jetson::Orin) => "sm_87",
        }
    }

    /// Whether the target's batches hold signature `seed`.
    pub fn has(self, seed: u64) -> bool {
        match self {
            Target::Current => true,
            Target::Oldest | Target::Jetson(_) => seed < OLDEST_SEEDS || corpus::is_corpus(seed),
        }
    }

    /// The id of the suite's case for signature `seed` from `caller` to `callee` on this
    /// target: `xcall.pair` / `xcall.oldest` / `xcall.sm_87` between two producers,
    /// `xcall.self` / `xcall.self-oldest` / `xcall.self-sm_87` for a producer with itself
    /// (reported apart: that agreement is not between producers).
    pub fn case_id(self, caller: Producer, callee: Producer, seed: u64) -> String {
        let kind = self.kind();
        if caller == callee {
            let kind = if kind == "pair" {
                "self".to_string()
            } else {
                format!("self-{kind}")
            };
            format!("xcall.{kind}.{caller}.{seed}")
        } else {
            format!("xcall.{kind}.{caller}.{callee}.{seed}")
        }
    }

    /// The second part of this target's case ids between two producers.
    fn kind(self) -> &'static str {
        match self {
            Target::Current => "pair",
            Target::Oldest => "oldest",
            Target::Jetson(_) => self.arch(),
        }
    }

    /// The target of a case id's second part (`pair`, `self-oldest`, `sm_87`, ...).
    fn of_kind(kind: &str) -> Option<Target> {
        let kind = match kind {
            "self" => "pair",
            k => k.strip_prefix("self-").unwrap_or(k),
        };
        Target::ALL.into_iter().find(|t| t.kind() == kind)
    }

    /// The masks of the target's signatures.
    pub(crate) fn masks(self) -> std::collections::BTreeSet<Mask> {
        all_signatures()
            .iter()
            .filter(|s| self.has(s.seed))
            .map(mask)
            .collect()
    }

    /// The target's signatures of mask `m`.
    pub(crate) fn sigs(self, m: Mask) -> Vec<&'static Signature> {
        all_signatures()
            .iter()
            .filter(|s| mask(s) == m && self.has(s.seed))
            .collect()
    }
}

/// NVRTC options but the architecture.
const NVRTC_RDC: &[&str] = &["--relocatable-device-code=true", "-std=c++17"];
/// clang-19 (CUDA device code) options.
pub(crate) const CLANG_ARGS: &[&str] = &["-fgpu-rdc", "-O2", "-std=c++17"];
/// llc-19 options.
pub(crate) const LLC_ARGS: &[&str] = &["-O2"];

/// The `check:` vocabulary of `suites/xcall.yaml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum XcallCheck {
    /// Signature `seed` from `caller`'s kernel to `callee`'s function: both assemble, the
    /// prototypes and call site agree with the definition, nvJitLink links them.
    Pair {
        caller: Producer,
        callee: Producer,
        seed: u64,
    },
    /// NVRTC and clang-19 mangle the C++ declarations of signature `seed` identically.
    Mangle { seed: u64 },
    /// NVRTC's device names for signature `seed` are the host g++'s names.
    MangleHost { seed: u64 },
    /// On a GPU: every signature of the pair linked by the driver's JIT linker, launched,
    /// and the bytes received and returned compared with what was sent.
    Gpu { caller: Producer, callee: Producer },
    /// Signature `seed` of the pair compiled for the oldest target both producers, ptxas and
    /// nvJitLink support ([`OLDEST`]): both sides assemble and nvJitLink links them.
    Oldest {
        caller: Producer,
        callee: Producer,
        seed: u64,
    },
    /// Signature `seed` of the pair compiled for a Jetson's GPU ([`Jetson`]): both sides
    /// assemble and nvJitLink links them.
    Jetson {
        caller: Producer,
        callee: Producer,
        seed: u64,
        target: Jetson,
    },
    /// What one producer's code puts into a call's `.param`s, executed offline
    /// ([`values`]: §2.3 notes A and B).
    Values {
        #[serde(deserialize_with = "values::producer_in_view")]
        producer: Producer,
        subject: values::Subject,
    },
    /// On a GPU: the value kernels of `caller` linked with the callee functions of `callee`
    /// by the driver's JIT linker, each launched, and the `int` it stores compared with C's
    /// value ([`values_gpu`]: §2.3 notes A and B on the device).
    GpuValues {
        #[serde(deserialize_with = "values_gpu::producer_in_view")]
        caller: Producer,
        #[serde(deserialize_with = "values_gpu::producer_in_view")]
        callee: Producer,
    },
    /// Every signature of the pair, offline: the bytes each of the call's four moves covers
    /// against the significance mask of the value moved ([`bytes`]).
    Bytes { caller: Producer, callee: Producer },
    /// A caller of one producer run against a callee of another through narrow integers
    /// both ways and pointers to each state space ([`values::pair`]).
    ValuesPair {
        #[serde(deserialize_with = "values::producer_in_view")]
        caller: Producer,
        #[serde(deserialize_with = "values::producer_in_view")]
        callee: Producer,
    },
}

impl Check for XcallCheck {
    fn requires(&self) -> Vec<Capability> {
        let mut v = match self {
            XcallCheck::Pair { caller, callee, .. }
            | XcallCheck::Oldest { caller, callee, .. }
            | XcallCheck::Jetson { caller, callee, .. } => {
                let mut v = caller.requires();
                v.extend(callee.requires());
                v.extend([Capability::Ptxas, Capability::Nvjitlink]);
                v
            }
            XcallCheck::Mangle { .. } => vec![Capability::Nvrtc, Capability::Clang],
            XcallCheck::Values { producer, .. } => producer.requires(),
            XcallCheck::ValuesPair { caller, callee } | XcallCheck::Bytes { caller, callee } => {
                let mut v = caller.requires();
                v.extend(callee.requires());
                v
            }
            XcallCheck::MangleHost { .. } => vec![Capability::Nvrtc, Capability::Gxx],
            XcallCheck::Gpu { caller, callee } | XcallCheck::GpuValues { caller, callee } => {
                let mut v = vec![Capability::Gpu];
                v.extend(caller.requires());
                v.extend(callee.requires());
                v
            }
        };
        v.sort();
        v.dedup();
        v
    }

    fn isolate(&self) -> bool {
        matches!(self, XcallCheck::Gpu { .. } | XcallCheck::GpuValues { .. })
    }

    /// A seed outside the suite's signatures is refused before the run: the
    /// generated ones (0..SIGNATURES) or the hand-written corpus's, which are the only ones a
    /// pair with the corpus on one side can take.
    fn validate(
        &self,
        _ctx: &crate::area::ValidateContext,
    ) -> Result<(), Vec<crate::area::CaseError>> {
        let corpus_seeds = corpus::FIRST_SEED..corpus::FIRST_SEED + corpus::COUNT;
        let refuse = |seed: u64, allowed: String| {
            Err(vec![crate::area::CaseError::new(
                "seed",
                seed.to_string(),
                format!("seed {seed} is outside the suite's signatures; `seed:` is in {allowed}"),
            )])
        };
        match self {
            XcallCheck::Pair {
                caller,
                callee,
                seed,
            }
            | XcallCheck::Oldest {
                caller,
                callee,
                seed,
            }
            | XcallCheck::Jetson {
                caller,
                callee,
                seed,
                ..
            } => {
                // A producer outside the view (one reading none of the batches' languages)
                // has no batch to compile.
                for (field, p) in [("caller", caller), ("callee", callee)] {
                    if let Err(e) = crate::backend::producer::in_view(*p, "xcall", producers()) {
                        return Err(vec![crate::area::CaseError::new(
                            field,
                            p.name(),
                            e.to_string(),
                        )]);
                    }
                }
                if caller.is_hand_written() || callee.is_hand_written() {
                    if !corpus::is_corpus(*seed) {
                        return refuse(
                            *seed,
                            format!("{corpus_seeds:?} (the hand-written corpus's signatures)"),
                        );
                    }
                } else if *seed >= SIGNATURES && !corpus::is_corpus(*seed) {
                    return refuse(*seed, format!("0..{SIGNATURES} or {corpus_seeds:?}"));
                }
                Ok(())
            }
            XcallCheck::Mangle { seed } | XcallCheck::MangleHost { seed }
                if *seed >= SIGNATURES =>
            {
                refuse(*seed, format!("0..{SIGNATURES}"))
            }
            _ => Ok(()),
        }
    }

    fn run(&self, ctx: &CaseContext) -> CaseStatus {
        match self {
            XcallCheck::Pair {
                caller,
                callee,
                seed,
            } => pair_case(ctx, *caller, *callee, *seed, Target::Current),
            XcallCheck::Oldest {
                caller,
                callee,
                seed,
            } => pair_case(ctx, *caller, *callee, *seed, Target::Oldest),
            XcallCheck::Jetson {
                caller,
                callee,
                seed,
                target,
            } => pair_case(ctx, *caller, *callee, *seed, Target::Jetson(*target)),
            XcallCheck::Mangle { seed } => mangle::mangle_case(ctx, *seed),
            XcallCheck::MangleHost { seed } => mangle::host_mangle_case(ctx, *seed),
            XcallCheck::Gpu { caller, callee } => gpu::gpu_case(ctx, *caller, *callee),
            XcallCheck::Values { producer, subject } => {
                values::producer_case(ctx, *producer, *subject)
            }
            XcallCheck::ValuesPair { caller, callee } => values::pair_case(ctx, *caller, *callee),
            XcallCheck::Bytes { caller, callee } => bytes::case(ctx, *caller, *callee),
            XcallCheck::GpuValues { caller, callee } => values_gpu::case(ctx, *caller, *callee),
        }
    }
}

/// The set of producers that can express a signature, as a bit mask over [`PRODUCERS`]:
/// signatures are batched by it, so every extern in a caller batch has its callee in the
/// callee batch of the same mask.
pub(crate) fn mask(sig: &Signature) -> Mask {
    producers()
        .iter()
        .enumerate()
        .filter(|(_, p)| emit::expresses(**p, sig).is_ok())
        .fold(0, |m, (i, _)| m | (1 << i))
}

fn bit(p: Producer) -> Mask {
    producers()
        .iter()
        .position(|q| *q == p)
        .map_or(0, |i| 1 << i)
}

/// The suite's signatures: the generated ones (seeds `0..SIGNATURES`), then the corpus's.
pub(crate) fn all_signatures() -> &'static [Signature] {
    static SIGS: OnceLock<Vec<Signature>> = OnceLock::new();
    SIGS.get_or_init(|| {
        let mut v = sig::signatures(0, SIGNATURES);
        v.extend(corpus::signatures());
        v
    })
}

/// The generated signatures only.
pub(crate) fn generated_signatures() -> &'static [Signature] {
    &all_signatures()[..SIGNATURES as usize]
}

/// What the batches ask of each tool: relocatable device code, so externs stay unresolved
/// until the link (NVRTC `--relocatable-device-code=true`, clang `-fgpu-rdc`); C++17; `-O2`.
pub(crate) const OPTIONS: Options<'static> = Options {
    nvrtc: NVRTC_RDC,
    clang: CLANG_ARGS,
    nvvm: &[],
    llc: LLC_ARGS,
    rustc: RUSTC_ARGS,
};

/// rustc options (opt-level 2, as clang's and llc's `-O2`).
pub(crate) const RUSTC_ARGS: &[&str] = &["-Copt-level=2"];

/// Compile one role's source with a producer for a target (through the disk cache).
pub fn compile(
    tc: &Toolchain,
    clock: &PhaseClock,
    p: Producer,
    role: Role,
    sigs: &[&Signature],
    target: Target,
) -> Result<String, ToolError> {
    if p.is_hand_written() {
        // Hand-written: every corpus signature in one module whatever the subset asked.
        return Ok(corpus::source(role));
    }
    let Some((language, text)) = emit::source(p, role, sigs) else {
        return Err(ToolError::Failed {
            tool: p.name().into(),
            log: "no generated source for this producer".into(),
        });
    };
    let arch = target.arch();
    let name = format!("xcall_{}.cu", role.name());
    let src = Source::new(language, &text)
        .file_name(&name)
        .arch(arch)
        .options(OPTIONS);
    cache::compile(tc, clock, p, &src)
}

/// ptxas on a batch for `arch` (`-c`: relocatable, externs resolved at the link), through the
/// disk cache.
fn assemble(
    tc: &Toolchain,
    clock: &PhaseClock,
    ptx: &str,
    arch: &str,
) -> Result<Vec<u8>, ToolError> {
    let id = tc
        .component(Capability::Ptxas)
        .map(|c| format!("ptxas {} {}", c.version, c.path.display()))
        .unwrap_or_default();
    let key: [&[u8]; 4] = [id.as_bytes(), arch.as_bytes(), b"-c", ptx.as_bytes()];
    cache::run(tc, clock, &key, cache::Phase::Ptxas, || {
        tc.ptxas(ptx, arch, &["-c"])
    })
}

/// One producer's compiled batch for one role and mask.
#[derive(Debug)]
pub struct Batch {
    /// The PTX, and the file name messages give it.
    pub ptx: String,
    pub name: String,
    /// Seeds the producer rejected, with its log (found by bisection).
    pub rejected: BTreeMap<u64, String>,
    /// Seeds whose functions ptxas rejected in the producer's PTX, with ptxas's lines for
    /// them; the batch was compiled again without them.
    pub unassembled: BTreeMap<u64, String>,
    /// The relocatable cubin, or why there is none (ptxas's log).
    pub cubin: Result<Vec<u8>, CubinError>,
    pub parsed: Result<check::PtxFile, check::InputError>,
}

/// Why a batch has no relocatable cubin (shared by the pairs that link it, hence `Arc`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum CubinError {
    /// ptxas rejected the producer's PTX; its log.
    #[error(transparent)]
    Ptxas(Arc<ToolError>),
    /// The producer gave no PTX to assemble.
    #[error("{producer} rejected the batch: {source}")]
    Producer {
        producer: &'static str,
        source: Arc<BatchFailure>,
    },
    /// ptxas rejected the functions of some seeds, and compiling the batch again without them
    /// did not run to an answer (a prebuilt store lacking that input, a killed compiler): the
    /// other seeds are unjudged, not failed.
    #[error(
        "ptxas rejected the functions of seed(s) {seeds:?} in {batch}; compiling the batch again \
         without them did not run: {source}{why}"
    )]
    Reassembly {
        batch: String,
        seeds: Vec<u64>,
        source: Arc<ToolError>,
        /// What the store's manifest says of the ptxas it was prebuilt with, when replaying.
        why: String,
    },
}

impl CubinError {
    /// The tool run that did not give an answer on the input, when that is why there is no
    /// cubin: a case meeting it is an error of the run, never a failure a waiver could excuse.
    pub(crate) fn did_not_run(&self) -> Option<&ToolError> {
        let unanswered = |e: &ToolError| {
            !matches!(
                e,
                ToolError::Failed { .. } | ToolError::UnknownTarget { .. }
            )
        };
        match self {
            CubinError::Reassembly { source, .. } => Some(source),
            CubinError::Ptxas(e) => Some(&**e).filter(|e| unanswered(e)),
            CubinError::Producer { source, .. } => match &**source {
                BatchFailure::Tool(e) => Some(e).filter(|e| unanswered(e)),
                BatchFailure::Rejected { .. } => None,
            },
        }
    }
}

/// Why a pair's batches did not link into one cubin (each pair case fails on it).
#[derive(Debug, Clone, thiserror::Error)]
pub enum LinkError {
    #[error(transparent)]
    NvJitLink(Arc<ToolError>),
    /// The linked image does not read as an ELF file.
    #[error(transparent)]
    Unreadable(crate::cubin::CubinError),
    #[error("ptxas rejected the caller batch: {0}")]
    Caller(CubinError),
    #[error("ptxas rejected the callee batch: {0}")]
    Callee(CubinError),
}

/// Why a producer gave no PTX for a batch.
#[derive(Debug, thiserror::Error)]
pub enum BatchFailure {
    /// The producer ran and rejected every signature of the batch; its log.
    #[error("{log}")]
    Rejected { log: String },
    /// The producer could not be run, or failed on the batch without the rejected signatures.
    #[error(transparent)]
    Tool(#[from] ToolError),
}

/// Compile `sigs`; when the producer rejects the batch, bisect to find the signatures it
/// rejects and compile the rest once more.
fn compile_bisect(
    tc: &Toolchain,
    clock: &PhaseClock,
    p: Producer,
    role: Role,
    sigs: &[&Signature],
    target: Target,
) -> (Result<String, BatchFailure>, BTreeMap<u64, String>) {
    match compile(tc, clock, p, role, sigs, target) {
        Ok(ptx) => (Ok(ptx), BTreeMap::new()),
        Err(ToolError::Failed { log, .. }) => {
            let mut rejected = BTreeMap::new();
            find_rejected(tc, clock, p, role, sigs, &log, &mut rejected, target);
            let rest: Vec<&Signature> = sigs
                .iter()
                .copied()
                .filter(|s| !rejected.contains_key(&s.seed))
                .collect();
            if rest.len() == sigs.len() {
                return (Err(BatchFailure::Rejected { log }), rejected);
            }
            let again = compile(tc, clock, p, role, &rest, target).map_err(BatchFailure::Tool);
            (again, rejected)
        }
        Err(e) => (Err(BatchFailure::Tool(e)), BTreeMap::new()),
    }
}

#[allow(clippy::too_many_arguments)]
fn find_rejected(
    tc: &Toolchain,
    clock: &PhaseClock,
    p: Producer,
    role: Role,
    sigs: &[&Signature],
    log: &str,
    out: &mut BTreeMap<u64, String>,
    target: Target,
) {
    if let [one] = sigs {
        out.insert(one.seed, log.to_string());
        return;
    }
    let (a, b) = sigs.split_at(sigs.len() / 2);
    for half in [a, b] {
        if half.is_empty() {
            continue;
        }
        if let Err(ToolError::Failed { log, .. }) = compile(tc, clock, p, role, half, target) {
            find_rejected(tc, clock, p, role, half, &log, out, target);
        }
    }
}

/// The seeds whose functions ptxas's error `log` names, by the lines it gives (`input.ptx,
/// line N; error ...`) and the function definitions of `ptx` holding them; `None` when a
/// line falls outside every generated function.
pub(crate) fn seeds_at_error_lines(
    name: &str,
    ptx: &str,
    log: &str,
    sigs: &[&Signature],
) -> Option<BTreeMap<u64, String>> {
    let module = crate::ptx::module::PtxModule::parse(ptx).ok()?;
    let mut starts: Vec<(u32, &str)> = module
        .functions
        .iter()
        .filter(|f| f.is_definition)
        .map(|f| (f.line, f.name.as_str()))
        .collect();
    starts.sort_unstable();
    let seed_of: HashMap<String, u64> = sigs
        .iter()
        .flat_map(|s| [(s.kernel(), s.seed), (s.callee(), s.seed)])
        .collect();
    let mut out: BTreeMap<u64, String> = BTreeMap::new();
    // Other lines (`ptxas fatal : Ptx assembly aborted due to errors`) name no function.
    for l in log
        .lines()
        .filter(|l| l.contains(", line ") && l.contains("error"))
    {
        let line: u32 = l
            .split(", line ")
            .nth(1)?
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()?;
        let at = starts.partition_point(|(start, _)| *start <= line);
        let function = starts.get(at.checked_sub(1)?)?.1;
        let seed = *seed_of.get(function)?;
        // `ptxas /tmp/.../input.ptx, line N; error   : what` -> `batch.ptx:N: ptxas: what`.
        let what = l.split_once("; ").map_or(l, |(_, w)| w);
        let what = what.split_once(':').map_or(what, |(_, w)| w).trim();
        let shown = format!("{name}:{line}: ptxas: {what} (in {function})\n");
        let e = out.entry(seed).or_default();
        if !e.contains(&shown) {
            e.push_str(&shown);
        }
    }
    (!out.is_empty()).then_some(out)
}

/// A batch's relocatable cubin, or why there is none.
type Assembled = Result<Vec<u8>, CubinError>;

/// ptxas rejected the functions of signatures `bad` in a batch: compile the batch again
/// without them and assemble that. `Ok(None)` when a tool refuses the rest (the whole batch
/// then fails as before); an error when a tool did not answer (replaying a prebuilt store:
/// the build machine's ptxas rejected other functions, so it never compiled this input).
#[allow(clippy::too_many_arguments)]
fn reassemble(
    tc: &Toolchain,
    clock: &PhaseClock,
    p: Producer,
    role: Role,
    sigs: &[&Signature],
    rejected: &BTreeMap<u64, String>,
    bad: &BTreeMap<u64, String>,
    target: Target,
) -> Result<Option<(String, Assembled)>, ToolError> {
    let rest: Vec<&Signature> = sigs
        .iter()
        .copied()
        .filter(|s| !rejected.contains_key(&s.seed) && !bad.contains_key(&s.seed))
        .collect();
    let refused = |e: ToolError| match e {
        ToolError::Failed { .. } | ToolError::UnknownTarget { .. } => Ok(None),
        e => Err(e),
    };
    let again = match compile(tc, clock, p, role, &rest, target) {
        Ok(ptx) => ptx,
        Err(e) => return refused(e),
    };
    match assemble(tc, clock, &again, target.arch()) {
        Ok(cubin) => Ok(Some((again, Ok(cubin)))),
        Err(e) => refused(e),
    }
}

/// Why a replayed recompilation may be missing from the store: the ptxas the store was
/// prebuilt with against this machine's (empty when not replaying or the same).
fn store_ptxas_note(tc: &Toolchain) -> String {
    let Some(store) = tc.replaying() else {
        return String::new();
    };
    let here = tc
        .component(Capability::Ptxas)
        .map_or("none", |c| c.version.as_str());
    match store.ptxas() {
        Some(built) if built == here => String::new(),
        Some(built) => format!(
            "; the store {} was prebuilt where ptxas {built} ran and this machine's ptxas is \
             {here}, which rejects other functions, so the build machine never compiled this \
             input: run `gpucts prebuild` with ptxas {here}",
            store.dir().display()
        ),
        None => format!(
            "; the store {} does not say which ptxas it was prebuilt with (this machine's is \
             {here})",
            store.dir().display()
        ),
    }
}

type BatchKey = (Producer, Role, Mask, Target);

fn batch_cache() -> &'static BatchCache<BatchKey, Batch> {
    static C: OnceLock<BatchCache<BatchKey, Batch>> = OnceLock::new();
    C.get_or_init(BatchCache::new)
}

/// The batch of `p` for `role` over the target's signatures of mask `m` (computed once per
/// run).
pub fn batch(
    user: &dyn BatchUser,
    tc: &Toolchain,
    p: Producer,
    role: Role,
    m: Mask,
    target: Target,
) -> Arc<OnceLock<Batch>> {
    batch_cache().get_or_compute(user, &(p, role, m, target), || {
        let clock = PhaseClock::of(user.run_scope());
        let sigs = target.sigs(m);
        let arch = target.arch();
        let name = format!("{}-{}-m{m}-{arch}.ptx", p.name(), role.name());
        let (ptx, rejected) = compile_bisect(tc, &clock, p, role, &sigs, target);
        // GPUCTS_XCALL_DUMP=DIR keeps every batch's source and PTX for investigation.
        if let Some(dir) = &tc.settings().xcall_dump {
            let _ = std::fs::create_dir_all(dir);
            if let Some((_, src)) = emit::source(p, role, &sigs) {
                let _ = std::fs::write(dir.join(format!("{name}.src")), src);
            }
            if let Ok(ptx) = &ptx {
                let _ = std::fs::write(dir.join(&name), ptx);
            }
        }
        let (ptx, cubin, unassembled) = match ptx {
            Ok(ptx) => {
                let cubin =
                    assemble(tc, &clock, &ptx, arch).map_err(|e| CubinError::Ptxas(Arc::new(e)));
                // ptxas rejecting some functions fails only their signatures' cases.
                let bad = cubin
                    .as_ref()
                    .err()
                    .and_then(|e| seeds_at_error_lines(&name, &ptx, &e.to_string(), &sigs));
                match bad.map(|bad| {
                    let again = reassemble(tc, &clock, p, role, &sigs, &rejected, &bad, target);
                    (again, bad)
                }) {
                    Some((Ok(Some((a, c))), bad)) => (a, c, bad),
                    Some((Err(e), bad)) => {
                        let failed = CubinError::Reassembly {
                            batch: name.clone(),
                            seeds: bad.keys().copied().collect(),
                            source: Arc::new(e),
                            why: store_ptxas_note(tc),
                        };
                        (ptx, Err(failed), BTreeMap::new())
                    }
                    Some((Ok(None), _)) | None => (ptx, cubin, BTreeMap::new()),
                }
            }
            Err(failure) => (
                String::new(),
                Err(CubinError::Producer {
                    producer: p.describe(),
                    source: Arc::new(failure),
                }),
                BTreeMap::new(),
            ),
        };
        let parsed = clock.timed(cache::Phase::Check, || check::PtxFile::parse(&name, &ptx));
        Batch {
            ptx,
            name,
            rejected,
            unassembled,
            cubin,
            parsed,
        }
    })
}

/// A pair's result for every signature of one mask.
#[derive(Debug)]
pub struct PairResult {
    /// Checker findings per callee function name.
    pub mismatches: HashMap<String, Vec<String>>,
    /// The functions found in the linked cubin (kernels and callees of the batch), or
    /// nvJitLink's log.
    pub linked: Result<std::collections::BTreeSet<String>, LinkError>,
}

/// Why a pair could not be checked and linked (an error of the run, not a divergence).
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    #[error("batch not computed")]
    BatchNotComputed,
    #[error("gpucts cannot read the PTX: {0}")]
    Unreadable(check::InputError),
    /// The checker refused the pair's files.
    #[error(transparent)]
    Check(check::InputError),
    /// ptxas refused the stand-ins for the callees the callee producer rejected.
    #[error(transparent)]
    StandIns(ToolError),
}

type PairCache = BatchCache<(Producer, Producer, Mask, Target), Result<PairResult, PairError>>;

fn pair_cache() -> &'static PairCache {
    static C: OnceLock<PairCache> = OnceLock::new();
    C.get_or_init(BatchCache::new)
}

/// Check and link one pair's batches of mask `m` for a target (once per run).
pub fn pair(
    user: &dyn BatchUser,
    tc: &Toolchain,
    caller: Producer,
    callee: Producer,
    m: Mask,
    target: Target,
) -> Arc<OnceLock<Result<PairResult, PairError>>> {
    pair_cache().get_or_compute(user, &(caller, callee, m, target), || {
        let clock = PhaseClock::of(user.run_scope());
        let arch = target.arch();
        let a = batch(user, tc, caller, Role::Caller, m, target);
        let b = batch(user, tc, callee, Role::Callee, m, target);
        let (Some(a), Some(b)) = (a.get(), b.get()) else {
            return Err(PairError::BatchNotComputed);
        };
        let (fa, fb) = match (&a.parsed, &b.parsed) {
            (Ok(x), Ok(y)) => (x, y),
            (Err(e), _) | (_, Err(e)) => return Err(PairError::Unreadable(e.clone())),
        };
        let report = clock.timed(cache::Phase::Check, || {
            check::check(&[fa.clone(), fb.clone()]).map_err(PairError::Check)
        })?;
        let mut mismatches: HashMap<String, Vec<String>> = HashMap::new();
        for mm in report.mismatches {
            let key = mm.function.clone();
            mismatches.entry(key).or_default().push(mm.to_string());
        }
        // Callees the callee producer or ptxas rejected (their cases fail on that) get reference
        // stand-ins, so the rest of the batch still links.
        let missing: Vec<&Signature> = target
            .sigs(m)
            .into_iter()
            .filter(|s| {
                (b.rejected.contains_key(&s.seed) || b.unassembled.contains_key(&s.seed))
                    && !a.rejected.contains_key(&s.seed)
                    && !a.unassembled.contains_key(&s.seed)
            })
            .collect();
        let stub = if missing.is_empty() {
            None
        } else {
            let ptx = emit::ptx_callee(&missing)
                .replace(
                    &format!(".visible .global .align 8 .b8 {}", sig::REC),
                    &format!(".extern .global .align 8 .b8 {}", sig::REC),
                )
                .replace(".target sm_90\n", &format!(".target {arch}\n"));
            Some(assemble(tc, &clock, &ptx, arch).map_err(PairError::StandIns)?)
        };
        let linked = match (&a.cubin, &b.cubin) {
            (Ok(x), Ok(y)) => clock
                .timed(cache::Phase::Link, || {
                    tc.nvjitlink(
                        &[
                            (LinkInputKind::Cubin, "caller.cubin", x.as_slice()),
                            (LinkInputKind::Cubin, "callee.cubin", y.as_slice()),
                        ]
                        .into_iter()
                        .chain(
                            stub.as_deref()
                                .map(|s| (LinkInputKind::Cubin, "stand-ins.cubin", s)),
                        )
                        .collect::<Vec<_>>(),
                        &[&format!("-arch={arch}")],
                    )
                })
                .map_err(|e| LinkError::NvJitLink(Arc::new(e)))
                .and_then(|c| {
                    let elf = Cubin::parse(&c).map_err(LinkError::Unreadable)?;
                    Ok(target
                        .sigs(m)
                        .into_iter()
                        .flat_map(|s| [s.kernel(), s.callee()])
                        .filter(|n| elf.has_function(n))
                        .collect())
                }),
            (Err(e), _) => Err(LinkError::Caller(e.clone())),
            (_, Err(e)) => Err(LinkError::Callee(e.clone())),
        };
        Ok(PairResult { mismatches, linked })
    })
}

/// A tool's log or a check's report as findings: its non-empty lines.
fn log_lines(log: &str) -> Vec<String> {
    log.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join("\n")
}

/// The producers of [`producers`] whose tools this machine has.
fn available(tc: &Toolchain) -> Vec<Producer> {
    producers()
        .iter()
        .copied()
        .filter(|p| p.requires().iter().all(|c| tc.has(*c)))
        .collect()
}

/// What the run's selected cases need (a filtered run pays for what it runs):
/// the (caller, callee, mask, target) of every selected pair or oldest-target case and
/// whether a mangling case is selected. `None` pairs: no selection was recorded, everything
/// is wanted.
#[derive(Debug)]
struct Wanted {
    pairs: Option<std::collections::HashSet<(Producer, Producer, Mask, Target)>>,
    mangle: bool,
}

impl Wanted {
    fn from_selection(scope: &RunScope) -> Wanted {
        let Some(ids) = scope.selected_ids() else {
            return Wanted {
                pairs: None,
                mangle: true,
            };
        };
        let mut pairs = std::collections::HashSet::new();
        let mut mangle = false;
        for id in ids.iter() {
            let parts: Vec<&str> = id.split('.').collect();
            let (kind, a, b, seed) = match parts.as_slice() {
                ["xcall", "mangle", ..] => {
                    mangle = true;
                    continue;
                }
                // A byte-coverage case reads every batch of its pair on the current target.
                ["xcall", "bytes", a, b] => {
                    if let (Some(a), Some(b)) = (Producer::parse(a), Producer::parse(b)) {
                        for m in Target::Current.masks() {
                            if pair_runs(a, b, m) {
                                pairs.insert((a, b, m, Target::Current));
                            }
                        }
                    }
                    continue;
                }
                ["xcall", kind, p, seed] if kind.starts_with("self") => (*kind, *p, *p, *seed),
                ["xcall", kind, a, b, seed] => (*kind, *a, *b, *seed),
                _ => continue,
            };
            let (Some(a), Some(b), Ok(seed), Some(target)) = (
                Producer::parse(a),
                Producer::parse(b),
                seed.parse::<u64>(),
                Target::of_kind(kind),
            ) else {
                continue;
            };
            if let Some(sig) = all_signatures().iter().find(|s| s.seed == seed) {
                pairs.insert((a, b, mask(sig), target));
            }
        }
        Wanted {
            pairs: Some(pairs),
            mangle,
        }
    }

    fn pair(&self, a: Producer, b: Producer, m: Mask, t: Target) -> bool {
        self.pairs
            .as_ref()
            .is_none_or(|s| s.contains(&(a, b, m, t)))
    }

    /// A batch is wanted when a wanted pair has `p` in that role for mask `m` and target `t`.
    fn batch(&self, p: Producer, role: Role, m: Mask, t: Target) -> bool {
        self.pairs.as_ref().is_none_or(|s| {
            s.iter().any(|&(a, b, mm, tt)| {
                mm == m
                    && tt == t
                    && match role {
                        Role::Caller => a == p,
                        Role::Callee => b == p,
                    }
            })
        })
    }
}

/// Whether the suite has cases for the ordered pair on mask `m`: both producers express the
/// mask's signatures, and the corpus's signatures pair only with the corpus on one side.
pub(crate) fn pair_runs(a: Producer, b: Producer, m: Mask) -> bool {
    let corpus = Producer::hand_written()
        .into_iter()
        .fold(0, |m, p| m | bit(p));
    m & bit(a) != 0
        && m & bit(b) != 0
        && (m & corpus == 0 || a.is_hand_written() || b.is_hand_written())
}

/// Compute every batch, pair and mangling batch of the suite at once, on as many threads as
/// the machine has (at most 4), largest batches first: cases then only read results. The
/// runner's threads would otherwise wait together on the one batch the next case needs, so
/// the compilations would run one at a time. Runs once per run, on the run's behalf: the
/// batches' costs are charged to the cases that read them, not to the case that waited here.
pub(crate) fn prefetch(scope: &RunScope, tc: &Toolchain) {
    static DONE: OnceLock<BatchCache<(), ()>> = OnceLock::new();
    DONE.get_or_init(BatchCache::new).get_or_compute(scope, &(), || {
        let t0 = std::time::Instant::now();
        let producers = available(tc);
        let wanted = Wanted::from_selection(scope);
        type Job<'a> = Box<dyn Fn() + Send + Sync + 'a>;
        let mut jobs: Vec<(usize, String, Job)> = Vec::new();
        let mut pair_jobs: Vec<(usize, String, Job)> = Vec::new();
        for target in Target::ALL {
            let masks = target.masks();
            let arch = target.arch();
            for &m in &masks {
                let n = target.sigs(m).len();
                for &p in producers.iter().filter(|p| m & bit(**p) != 0) {
                    for role in [Role::Callee, Role::Caller] {
                        if !wanted.batch(p, role, m, target) {
                            continue;
                        }
                        // The PTX producers cost only their ptxas run.
                        let weight = if p.capability().is_none() { n } else { 2 * n };
                        jobs.push((
                            weight,
                            format!("{p} {} m{m} {arch}", role.name()),
                            Box::new(move || drop(batch(scope, tc, p, role, m, target))),
                        ));
                    }
                }
                for &a in &producers {
                    for &b in &producers {
                        if !pair_runs(a, b, m) || !wanted.pair(a, b, m, target) {
                            continue;
                        }
                        pair_jobs.push((
                            0,
                            format!("pair {a} {b} m{m} {arch}"),
                            Box::new(move || drop(pair(scope, tc, a, b, m, target))),
                        ));
                    }
                }
            }
        }
        let front_ends = mangle::front_ends().filter(|(a, b)| {
            a.requires().iter().chain(&b.requires()).all(|c| tc.has(*c))
        });
        if let Some((a, b)) = front_ends.filter(|_| wanted.mangle) {
            for p in [a, b] {
                jobs.push((
                    SIGNATURES as usize,
                    format!("{p} mangle"),
                    Box::new(move || drop(mangle::batch(scope, tc, p))),
                ));
            }
        }
        // Heaviest first; pairs (one check and one link each) after every batch.
        jobs.sort_by_key(|(w, _, _)| std::cmp::Reverse(*w));
        jobs.extend(pair_jobs);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 4);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let times = tc.settings().xcall_times;
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some((_, what, job)) = jobs.get(i) else {
                        break;
                    };
                    let t = std::time::Instant::now();
                    job();
                    // GPUCTS_XCALL_TIMES=1: each job's wall time, for tuning the batching.
                    if times {
                        eprintln!("xcall: {what}: {:.2} s", t.elapsed().as_secs_f64());
                    }
                });
            }
        });
        if times {
            eprintln!(
                "{}; {} jobs on {workers} threads in {:.1} s",
                PhaseClock::of(scope).summary(),
                jobs.len(),
                t0.elapsed().as_secs_f64()
            );
        }
        let lines = tc.nvjitlink_prototype_lines();
        if lines > 0 {
            eprintln!(
                "xcall: nvJitLink wrote {lines} \"Prototype doesn't match\" lines to stderr for links it completed (not shown; floats passed as .b32/.b64: W-XCALL-FLOAT-PARAMS-AS-BITS)"
            );
        }
    });
}

/// One pair case (or oldest-target case): judge signature `seed` from the pair's batch
/// results. The oldest-target case judges assembly and the link; the agreement of the
/// prototypes is the pair case's (the same declarations, compiled for sm_90).
pub(crate) fn pair_case(
    ctx: &CaseContext,
    caller: Producer,
    callee: Producer,
    seed: u64,
    target: Target,
) -> CaseStatus {
    let Some(sig) = all_signatures().iter().find(|s| s.seed == seed) else {
        return CaseStatus::error(format!(
            "seed {seed} is neither generated (0..{SIGNATURES}) nor the corpus's ({}..{})",
            corpus::FIRST_SEED,
            corpus::FIRST_SEED + corpus::COUNT
        ));
    };
    if !target.has(seed) {
        return CaseStatus::error(format!(
            "seed {seed} is not linked for {} (generated seeds 0..{OLDEST_SEEDS} and the corpus are)",
            target.arch()
        ));
    }
    for p in [caller, callee] {
        if let Err(why) = emit::expresses(p, sig) {
            return CaseStatus::skip(Capability::ProducerFeature, why.to_string());
        }
    }
    let arch = target.arch();
    let tc = ctx.toolchain;
    prefetch(ctx.scope, tc);
    let m = mask(sig);
    debug_assert!(m & bit(caller) != 0 && m & bit(callee) != 0);
    for (p, role) in [(caller, Role::Caller), (callee, Role::Callee)] {
        let b = batch(ctx, tc, p, role, m, target);
        if let Some(log) = b.get().and_then(|b| b.rejected.get(&seed)) {
            return CaseStatus::fail_findings(
                format!(
                    "{} compiles the generated {} for {arch}",
                    p.describe(),
                    role.name()
                ),
                "the producer rejected it",
                &sig.describe(),
                log_lines(log),
            );
        }
        if let Some(log) = b.get().and_then(|b| b.unassembled.get(&seed)) {
            return CaseStatus::fail_findings(
                format!(
                    "ptxas assembles the {} {} PTX for {arch}",
                    p.describe(),
                    role.name()
                ),
                format!("ptxas rejected it: {}", first_lines(log, 1)),
                &sig.describe(),
                log_lines(log),
            );
        }
        if let Some(e) = b.get().and_then(|b| b.cubin.as_ref().err()) {
            if e.did_not_run().is_some() {
                return CaseStatus::error(format!(
                    "the {} {} batch for {arch}: {e}",
                    p.describe(),
                    role.name()
                ));
            }
        }
    }
    let slot = pair(ctx, tc, caller, callee, m, target);
    let r = match slot.get() {
        Some(Ok(r)) => r,
        Some(Err(e)) => return CaseStatus::error(e),
        None => return CaseStatus::error("pair not computed"),
    };
    if let (Target::Current, Some(ms)) = (target, r.mismatches.get(&sig.callee())) {
        return CaseStatus::fail_findings(
            "the caller's prototype and call site agree with the callee's definition (§2.3)",
            first_lines(&ms.join("\n"), 1),
            &sig.describe(),
            ms.iter().flat_map(|m| log_lines(m)).collect(),
        );
    }
    match &r.linked {
        Err(e) => CaseStatus::fail_findings(
            format!("nvJitLink links the pair for {arch}"),
            "the link failed",
            &sig.describe(),
            // Every line is a finding a waiver must name, not only the first screenful.
            log_lines(&e.to_string()),
        ),
        Ok(names) if names.contains(&sig.kernel()) && names.contains(&sig.callee()) => {
            CaseStatus::pass()
        }
        Ok(_) => CaseStatus::fail(
            format!(
                "a {arch} cubin holding {} and {}",
                sig.kernel(),
                sig.callee()
            ),
            "a function is missing from the linked cubin",
        ),
    }
}

/// `gpucts bench xcall`: signatures linked per second over every ordered pair, from cold
/// caches (this process compiles every batch, as the suite does: [`prefetch`]; the caller
/// passes a toolchain without the disk cache, `ToolSettings::output_cache` off).
pub fn bench(tc: &Toolchain) -> String {
    let t0 = std::time::Instant::now();
    // As the suite does: every batch, pair and mangling batch on the machine's threads.
    let scope = RunScope::new();
    prefetch(&scope, tc);
    let mut linked = 0usize;
    let mut pairs = std::collections::BTreeSet::new();
    let producers = available(tc);
    for target in Target::ALL {
        let masks = target.masks();
        for &caller in &producers {
            for &callee in &producers {
                for &m in masks.iter().filter(|m| pair_runs(caller, callee, **m)) {
                    pairs.insert((caller, callee));
                    if let Some(Ok(r)) = pair(&scope, tc, caller, callee, m, target).get() {
                        if let Ok(names) = &r.linked {
                            linked += target
                                .sigs(m)
                                .iter()
                                .filter(|s| names.contains(&s.kernel()))
                                .count();
                        }
                    }
                }
            }
        }
    }
    let pairs = pairs.len();
    let secs = t0.elapsed().as_secs_f64();
    format!(
        "xcall: {linked} signatures linked over {pairs} ordered producer pairs in {secs:.1} s = {:.0} signatures/s (sm_90, {OLDEST}, sm_72 and sm_87 links; one compile per producer, role, target and batch; one link per pair and batch)\n",
        linked as f64 / secs.max(1e-9)
    )
}

#[cfg(test)]
mod tests;
