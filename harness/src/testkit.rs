//! Support for tests that need an external tool or device.
//!
//! libtest cannot ignore a test at run time, so a test whose compiler, driver or device is
//! missing calls [`tool_missing`] (through [`require!`](crate::require)) and returns early.
//! With `GPUCTS_REQUIRE_TOOLS=1` (CI sets it) a missing tool fails the test instead, so a CI
//! machine that silently lost a compiler goes red; a missing GPU fails it only with
//! `GPUCTS_REQUIRE_GPU=1` (rigs), since CI machines have none.

/// What kind of thing a test needs; decides which variable makes its absence fatal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// A compiler or tool CI installs (ptxas, NVRTC, clang-19, ...).
    Tool,
    /// A GPU, the companion module, an RDMA device: present on rigs only.
    Device,
    /// A public corpus under `../shared/corpora/`, read in place: a checkout beside the
    /// repository, which a clean CI clone need not have; fatal only with
    /// `GPUCTS_REQUIRE_CORPUS=1`.
    Corpus,
}

/// Reports a test that cannot run here: panics when the environment requires `need`, else
/// prints `ignored (missing: WHAT)` on stderr so `--nocapture` runs show it.
pub fn tool_missing(need: Need, what: &str) {
    let required = crate::config::RunConfig::outside_any_run().test_requires;
    let (var, kind, set) = match need {
        Need::Tool => ("GPUCTS_REQUIRE_TOOLS", "tool", required.tools),
        Need::Device => ("GPUCTS_REQUIRE_GPU", "device", required.gpu),
        Need::Corpus => ("GPUCTS_REQUIRE_CORPUS", "corpus", required.corpus),
    };
    assert!(!set, "required {kind} missing: {what} ({var} is set)");
    eprintln!("ignored (missing: {what})");
}

/// `require!(tc.has(Capability::Ptxas), "ptxas")` returns from the test when the condition is
/// false, after [`tool_missing`]; `require!(device: cond, "a GPU")` for devices,
/// `require!(corpus: cond, "../shared/corpora/x")` for public corpora.
#[macro_export]
macro_rules! require {
    (corpus: $present:expr, $what:expr) => {
        if !$present {
            $crate::testkit::tool_missing($crate::testkit::Need::Corpus, $what);
            return;
        }
    };
    (device: $present:expr, $what:expr) => {
        if !$present {
            $crate::testkit::tool_missing($crate::testkit::Need::Device, $what);
            return;
        }
    };
    ($present:expr, $what:expr) => {
        if !$present {
            $crate::testkit::tool_missing($crate::testkit::Need::Tool, $what);
            return;
        }
    };
}

/// Assert that the cases of `suites/<suite>.yaml` that `select` picks need the GPU and, with
/// every other capability present and no GPU, skip naming `gpu` (a skip without
/// requirements, a failure under `--require gpu`), never running or crashing. Returns the
/// ids it checked, for the caller's counts.
#[cfg(test)]
pub(crate) fn assert_gpu_cases_skip_naming_the_gpu(
    suite: &str,
    select: impl Fn(&crate::suite::Case) -> bool,
) -> Vec<String> {
    use crate::capability::{Capability, Missing, Requirement};
    use crate::outcome::{CaseStatus, Verdict};
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let file = root.join(format!("suites/{suite}.yaml"));
    let suite = crate::suite::load_file(&file, &crate::areas::all()).unwrap();
    let data = crate::data::DataRoot::at(&root);
    let mut env = crate::runner::RunEnv::empty(&data);
    for &c in Capability::ALL {
        env.caps.set(c, Ok("present (test)".into()));
    }
    let why = "no GPU: cuInit returned CUDA_ERROR_NO_DEVICE (test)";
    env.caps.set(Capability::Gpu, Err(Missing::new(why)));
    let required = [Requirement::parse("gpu").unwrap()];
    let mut ids = Vec::new();
    for case in suite.cases.iter().filter(|c| select(c)) {
        assert!(case.requires.contains(&Capability::Gpu), "{}", case.id);
        let status = crate::runner::execute(case, &env).0.status;
        match &status {
            CaseStatus::Skip { capability, reason } => {
                assert_eq!(*capability, Capability::Gpu, "{}", case.id);
                assert!(reason.contains(why), "{}: {reason}", case.id);
            }
            other => panic!("{}: {other:?}", case.id),
        }
        assert_eq!(
            crate::runner::judge(&status, &required, None),
            Verdict::RequiredMissing,
            "{}",
            case.id
        );
        assert_eq!(crate::runner::judge(&status, &[], None), Verdict::Skip);
        ids.push(case.id.clone());
    }
    ids
}
