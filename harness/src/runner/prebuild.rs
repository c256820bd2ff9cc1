//! `gpucts prebuild`: run the compilations of the cases that need clang-19 / llc-19, here,
//! with the prebuilt store recording ([`crate::backend::toolchain::prebuilt`]), so that a rig
//! without clang runs those cases from the store (issue 26 item 4).
//!
//! A case is compiled in this process with [`CaseContext::compile_only`](crate::area::CaseContext):
//! an offline case runs whole (its clang runs are its compilations), a device case stops
//! before opening the device. Device capabilities are not asked for here (the rig has them);
//! every other capability a case needs must be here, or its compilations could not all run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::backend::toolchain::Toolchain;
use crate::capability::{Capabilities, Capability};
use crate::outcome::CaseStatus;
use crate::suite::Case;

/// Capabilities of the rig, not of the build machine: not needed to compile.
pub(crate) const DEVICE_CAPABILITIES: &[Capability] = &[
    Capability::Gpu,
    Capability::Kmod,
    Capability::Rdma,
    Capability::Testprov,
    Capability::Peermem,
    Capability::Dmabuf,
];

/// What a prebuild did with each selected case that needs a recorded tool.
#[derive(Debug, Default)]
pub struct Prebuilt {
    /// Compiled whole: the store holds every output of a recorded tool the case asks for.
    pub compiled: Vec<String>,
    /// Not compiled, and why (a capability this machine lacks; a skip at run time).
    pub not_prebuilt: Vec<(String, String)>,
    /// The compilation itself went wrong (an error, a panic): a bug to report.
    pub errors: Vec<(String, String)>,
    /// Selected cases that use no recorded tool (nothing to prebuild).
    pub without_recorded: usize,
}

/// Compile those of `cases` (already selected) that need one of the `recorded` tools'
/// capabilities, with `jobs` threads.
#[allow(clippy::too_many_arguments)]
pub fn prebuild(
    cases: &[Case],
    recorded: &[Capability],
    config: &crate::config::RunConfig,
    caps: &Capabilities,
    toolchain: &Toolchain,
    data: &crate::data::DataRoot,
    jobs: usize,
) -> Prebuilt {
    let (clang, without): (Vec<&Case>, Vec<&Case>) = cases
        .iter()
        .partition(|c| c.requires.iter().any(|r| recorded.contains(r)));
    let out = Mutex::new(Prebuilt {
        without_recorded: without.len(),
        ..Default::default()
    });
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    // The batches these cases need, each compiled whole: the input a rig's run replays.
    let scope = crate::area::RunScope::selecting(clang.iter().map(|c| c.id.clone()), true);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = clang.get(i) else { break };
                let needed: Vec<Capability> = case
                    .requires
                    .iter()
                    .copied()
                    .filter(|c| !DEVICE_CAPABILITIES.contains(c))
                    .collect();
                let verdict = match caps.first_missing(&needed) {
                    Some((cap, why)) => Err((false, format!("{cap} missing here: {why}"))),
                    None => {
                        match crate::runner::compile_in_process(
                            case, config, &scope, caps, toolchain, data,
                        ) {
                            s if s.is_compiled_only() => Ok(()),
                            CaseStatus::Pass { .. } | CaseStatus::Fail { .. } => Ok(()),
                            // A device check that stopped at its device (not at its compilations)
                            // compiled nothing a rig could use.
                            CaseStatus::Skip { capability, reason }
                                if DEVICE_CAPABILITIES.contains(&capability) =>
                            {
                                Err((false, format!("skipped here ({capability}): {reason}")))
                            }
                            // Any other skip at run time (a producer feature, a target this
                            // ptxas lacks) comes after or instead of the compilations: the rig,
                            // replaying them, reaches the same skip.
                            CaseStatus::Skip { .. } => Ok(()),
                            other => Err((true, other.summary())),
                        }
                    }
                };
                let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
                match verdict {
                    Ok(()) => o.compiled.push(case.id.clone()),
                    Err((false, why)) => o.not_prebuilt.push((case.id.clone(), why)),
                    Err((true, why)) => o.errors.push((case.id.clone(), why)),
                }
                drop(o);
                let n = done.fetch_add(1, Ordering::Relaxed) + 1;
                if n.is_multiple_of(500) {
                    eprintln!("gpucts prebuild: {n} of {} cases", clang.len());
                }
            });
        }
    });
    let mut o = out.into_inner().unwrap_or_else(|e| e.into_inner());
    o.compiled.sort();
    o.not_prebuilt.sort();
    o.errors.sort();
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every shipped case that needs a device and clang-19 compiles without the device under
    /// `compile_only` and says so: a device check that opened the device first (or ignored
    /// the flag) would end in an error here, and its clang outputs would never reach a rig.
    #[test]
    fn every_device_case_that_needs_clang_compiles_without_the_device() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Clang), "clang-19");
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        let data = crate::data::DataRoot::at(&root);
        let files = crate::suite::resolve_suite_arg("all", &root.join("suites")).unwrap();
        let suites = crate::suite::load_suites(&files, &crate::areas::all()).unwrap();
        let (_, caps) = crate::probe::probe(&tc);
        let cases: Vec<Case> = suites
            .into_iter()
            .flat_map(|s| s.cases)
            .filter(|c| {
                c.requires.contains(&Capability::Clang)
                    && c.requires.iter().any(|r| DEVICE_CAPABILITIES.contains(r))
            })
            .collect();
        // syscalls.gpu.assert.{clang,llc}, dwarf.gpu.jit_load.{clang_g,llc_g}, xcall.gpu.*
        // with clang or llvm on either side (issue 26: 24 such cases in the shipped suites).
        assert!(cases.len() >= 24, "{} device cases need clang", cases.len());
        let needed: Vec<Capability> = cases
            .iter()
            .flat_map(|c| c.requires.iter().copied())
            .filter(|c| !DEVICE_CAPABILITIES.contains(c))
            .collect();
        if let Some((cap, why)) = caps.first_missing(&needed) {
            crate::require!(false, &format!("{cap} ({why})"));
        }
        let config = crate::config::RunConfig::default();
        let done = prebuild(&cases, &[Capability::Clang], &config, &caps, &tc, &data, 2);
        assert!(done.errors.is_empty(), "{:?}", done.errors);
        assert!(done.not_prebuilt.is_empty(), "{:?}", done.not_prebuilt);
        assert_eq!(done.compiled.len(), cases.len());
        let scope = crate::area::RunScope::new();
        for c in &cases {
            let s = crate::runner::compile_in_process(c, &config, &scope, &caps, &tc, &data);
            assert!(s.is_compiled_only(), "{}: {s:?}", c.id);
        }
    }
}
