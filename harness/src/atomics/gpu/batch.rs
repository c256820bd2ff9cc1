//! Several litmus tests in one launch (MC Mutants' parallel testing, Levine et al.,
//! ASPLOS'23 §5): test k of a batch runs in its own range of CTAs with its own buffers and
//! counters, so the tests share nothing but the launch.
//!
//! The batch kernel is the tests' own counting kernels ([`kernel::generate_counting`]) side by
//! side: each body, its labels prefixed `B<k>_` and its parameters suffixed `_b<k>`, runs in
//! CTAs `start_k .. start_k + max_workgroups_k` and sees `%ctaid.x - start_k` as its CTA id.
//! Register declarations are merged (the bodies are disjoint branches of one thread, so they
//! may reuse registers); the shared-memory array is declared once at the largest test's size,
//! since each CTA runs one test only. What must agree or fit ([`plan`]): threads per CTA (one
//! launch has one block size); shared memory (the largest test's, within
//! [`layout::MAX_STATIC_SHARED`]); named barriers (PTX ISA "bar, barrier": 16 per CTA, and each
//! CTA holds one test, so each test keeps its own ids); CTAs in all, within
//! [`MAX_BATCH_THREADS`] so that every test's CTAs are co-resident for its spin barrier; and
//! kernel parameters (PTX ISA "Kernel parameters": 4,352 bytes up to sm_90's limit; 76 per test).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::count::OutcomeSpace;
use super::kernel::{self, KernelError};
use super::layout::{self, Geometry};

/// The kernel's entry point.
pub(crate) const KERNEL: &str = "gpucts_litmus_batch";
/// Most threads one batch launches: the co-residency bound of one test's random sets
/// ([`layout::MAX_RANDOM_THREADS`]), so every CTA of every test can run at once on an H100.
pub(crate) const MAX_BATCH_THREADS: u32 = layout::MAX_RANDOM_THREADS;
/// Most tests in one batch (kernel parameter space: 76 bytes each, under 4,352 bytes).
pub(crate) const MAX_BATCH_TESTS: usize = 32;
/// The parameters of one test's kernel, in order.
pub(crate) const PARAMS: [&str; 9] = [
    "p_locs",
    "p_results",
    "p_roles",
    "p_addrs",
    "p_barrier",
    "p_scratch",
    "p_stress",
    "p_testing",
    "p_counts",
];

/// One test's part of a batch.
#[derive(Debug, Clone)]
pub struct Part {
    pub geometry: Geometry,
    pub space: OutcomeSpace,
    /// First CTA of the test's range.
    pub start: u32,
}

/// A batch kernel and its tests' parts.
#[derive(Debug, Clone)]
pub struct Batch {
    pub parts: Vec<Part>,
    pub ptx: String,
    /// Threads per CTA (every part's).
    pub block: u32,
    /// CTAs in all.
    pub grid: u32,
    /// CTAs per thread block cluster (every part's; 1: a launch without clusters).
    pub cluster: u32,
}

/// The launch shape of a test: threads per CTA and CTAs per cluster. One launch has one block
/// size and one cluster shape for all its CTAs, so only tests of one shape share a launch.
pub(crate) fn shape(g: &Geometry) -> (u32, u32) {
    (g.params.workgroup_size, g.cluster)
}

/// Which tests go together: tests of one launch shape ([`shape`]) in order, a batch closing
/// when the next test's CTAs would pass [`MAX_BATCH_THREADS`] or [`MAX_BATCH_TESTS`]. Each
/// entry of the result lists indices into `geometries`; every index is in exactly one batch.
pub(crate) fn plan(geometries: &[&Geometry]) -> Vec<Vec<usize>> {
    // Per shape, the open batch (an index into `batches`) and its threads.
    let mut open: BTreeMap<(u32, u32), (usize, u32)> = BTreeMap::new();
    let mut batches: Vec<Vec<usize>> = Vec::new();
    for (i, g) in geometries.iter().enumerate() {
        let t = g.total_threads();
        match open.get_mut(&shape(g)) {
            Some((b, threads))
                if batches[*b].len() < MAX_BATCH_TESTS && *threads + t <= MAX_BATCH_THREADS =>
            {
                batches[*b].push(i);
                *threads += t;
            }
            _ => {
                open.insert(shape(g), (batches.len(), t));
                batches.push(vec![i]);
            }
        }
    }
    batches
}

/// Whether a PTX identifier character.
fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// `line` with each identifier in `labels` prefixed `B<k>_`, each parameter name suffixed
/// `_b<k>`, and `%ctaid.x` read from `%k_bcta`, `%clusterid.x` from `%k_bclu` (the part's own
/// numbering). Register names (after `%`) and modifiers (after `.`) are left alone.
fn rename(line: &str, k: usize, labels: &BTreeSet<String>) -> String {
    let line = line
        .replace("%ctaid.x", "%k_bcta")
        .replace("%clusterid.x", "%k_bclu");
    let mut out = String::with_capacity(line.len() + 16);
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if !ident(chars[i]) {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let before = start.checked_sub(1).map(|j| chars[j]);
        if matches!(before, Some('%') | Some('.')) {
            out.push_str(&word);
        } else if labels.contains(&word) {
            let _ = write!(out, "B{k}_{word}");
        } else if PARAMS.contains(&word.as_str()) {
            let _ = write!(out, "{word}_b{k}");
        } else {
            out.push_str(&word);
        }
    }
    out
}

/// Merge one `.reg` declaration into `regs`: (type, name) → count for `%v<N>` forms, or 0 for
/// a plain name.
fn merge_reg(line: &str, regs: &mut BTreeMap<(String, String), u32>) {
    let body = line
        .trim()
        .trim_start_matches(".reg")
        .trim()
        .trim_end_matches(';');
    let Some((ty, names)) = body.split_once(' ') else {
        return;
    };
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let (n, count) = match name.split_once('<') {
            Some((n, c)) => (n, c.trim_end_matches('>').parse().unwrap_or(1)),
            None => (name, 0),
        };
        let e = regs.entry((ty.to_string(), n.to_string())).or_insert(0);
        *e = (*e).max(count);
    }
}

/// The CTA dispatch of a batch whose part k ends before CTA `ends[k]`: a complete binary
/// search over [`MAX_BATCH_TESTS`] slots, each level `setp`, a guarded `bra` and one `bra.uni`
/// whichever way it goes, so that every CTA of every part runs the same dispatch instructions
/// whatever the batch's size and the part's place in it. A part then runs exactly as it runs
/// alone (in the emulator, the same seed gives the same interleaving and counts), and on a GPU
/// the dispatch costs 15 instructions per thread at most. Slots past the last part are never
/// reached (no CTA id is at or past the grid) and lead to `ret`.
fn dispatch(ends: &[u32]) -> String {
    let mut s = String::new();
    if ends.is_empty() {
        s.push_str("\tret;\n");
        return s;
    }
    dispatch_node(0, MAX_BATCH_TESTS, ends, &mut s);
    s.push_str("K_DONE:\n\tret;\n");
    s
}

/// The label of dispatch slots `lo..hi` (one slot: its part's entry).
fn dispatch_target(lo: usize, hi: usize, parts: usize) -> String {
    if lo >= parts {
        "K_DONE".into()
    } else if hi - lo == 1 {
        format!("B{lo}_ENTRY")
    } else {
        format!("K_D{lo}_{hi}")
    }
}

fn dispatch_node(lo: usize, hi: usize, ends: &[u32], s: &mut String) {
    let n = ends.len();
    let mid = (lo + hi) / 2;
    // CTAs before the end of slot mid-1 go left (a slot past the last part ends at the grid).
    let bound = ends[(mid - 1).min(n - 1)];
    let (left, right) = (dispatch_target(lo, mid, n), dispatch_target(mid, hi, n));
    let _ = write!(
        s,
        "K_D{lo}_{hi}:\n\tsetp.lt.u32 %k_bp, %k_bid, {bound};\n\t@%k_bp bra K_L{lo}_{hi};\n\
         \tbra.uni {right};\nK_L{lo}_{hi}:\n\tbra.uni {left};\n"
    );
    for (a, b) in [(lo, mid), (mid, hi)] {
        if b - a > 1 && a < n {
            dispatch_node(a, b, ends, s);
        }
    }
}

const _: () = assert!(MAX_BATCH_TESTS.is_power_of_two());

/// A batch launches one block size and one cluster shape: `test` must have both.
fn same_shape(
    test: &crate::atomics::litmus::LitmusTest,
    g: &Geometry,
    block: u32,
    cluster: u32,
) -> Result<(), KernelError> {
    if g.cluster != cluster {
        // A cluster launch gives every block of the grid one cluster shape.
        return Err(KernelError::Inexpressible {
            at: format!("`{}`", test.name),
            construct: "batch".into(),
            why: format!(
                "a batch launches one cluster shape ({cluster} CTAs), this test needs \
                 clusters of {} CTAs",
                g.cluster
            ),
        });
    }
    if g.params.workgroup_size != block {
        return Err(KernelError::Inexpressible {
            at: format!("`{}`", test.name),
            construct: "batch".into(),
            why: format!(
                "a batch launches one block size ({block} threads), this test needs {}",
                g.params.workgroup_size
            ),
        });
    }
    Ok(())
}

/// The batch kernel of `tests` (each with its geometry and outcome space), every part with
/// the same launch shape ([`shape`]). With clusters, part k starts at a CTA that is a multiple
/// of the cluster size and holds whole clusters (`Geometry::new` makes `max_workgroups` a
/// multiple of it), so each cluster of the launch (PTX ISA: the grid is tiled into clusters
/// along x) belongs to one part, which sees `%clusterid.x` less its first cluster.
pub fn generate(
    tests: &[(
        &crate::atomics::litmus::LitmusTest,
        &Geometry,
        &OutcomeSpace,
    )],
) -> Result<Batch, KernelError> {
    let block = tests
        .first()
        .map_or(32, |(_, g, _)| g.params.workgroup_size);
    let cluster = tests.first().map_or(1, |(_, g, _)| g.cluster);
    let mut regs: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut bodies = String::new();
    let mut parts = Vec::new();
    let mut shared_words = 0u32;
    let mut start = 0u32;
    let mut ends = Vec::new();
    let mut params = Vec::new();
    for (k, (test, g, space)) in tests.iter().enumerate() {
        same_shape(test, g, block, cluster)?;
        let ptx = kernel::generate_counting(test, g, space)?;
        if g.shared {
            shared_words = shared_words.max(g.cta_location_words());
        }
        let open = ptx
            .find(")\n{\n")
            .map(|i| i + 4)
            .or_else(|| ptx.find(")\n.explicitcluster\n{\n").map(|i| i + 21))
            .unwrap_or(0);
        let close = ptx.rfind('}').unwrap_or(ptx.len());
        let body = &ptx[open..close];
        let labels: BTreeSet<String> = body
            .lines()
            .filter_map(|l| l.strip_suffix(':'))
            .filter(|l| l.chars().all(ident))
            .map(str::to_string)
            .collect();
        let _ = writeln!(bodies, "B{k}_ENTRY:\n\t// `{}`", test.name);
        let _ = writeln!(
            bodies,
            "\tmov.u32 %k_bcta, %ctaid.x;\n\tsub.u32 %k_bcta, %k_bcta, {start};"
        );
        if cluster > 1 {
            let _ = writeln!(
                bodies,
                "\tmov.u32 %k_bclu, %clusterid.x;\n\tsub.u32 %k_bclu, %k_bclu, {};",
                start / cluster
            );
        }
        for line in body.lines() {
            if line.trim_start().starts_with(".reg") {
                merge_reg(line, &mut regs);
            } else {
                bodies.push_str(&rename(line, k, &labels));
                bodies.push('\n');
            }
        }
        let end = start + g.params.max_workgroups;
        ends.push(end);
        for p in PARAMS {
            let ty = if p == "p_testing" { "u32" } else { "u64" };
            params.push(format!("\t.param .{ty} {p}_b{k}"));
        }
        parts.push(Part {
            geometry: (*g).clone(),
            space: (*space).clone(),
            start,
        });
        start = end;
    }
    let mut s = String::new();
    let _ = write!(
        s,
        "// gpucts litmus batch: {} tests\n.version {}\n.target {}\n.address_size 64\n\n",
        tests.len(),
        kernel::PTX_VERSION,
        kernel::TARGET
    );
    if shared_words > 0 {
        let _ = writeln!(
            s,
            ".shared .align 4 .b32 {}[{shared_words}];\n",
            kernel::SMEM
        );
    }
    let _ = write!(
        s,
        ".visible .entry {KERNEL}(\n{}\n)\n{}{{\n\t.reg .pred %k_bp;\n\t.reg .b32 %k_bid, %k_bcta, %k_bclu;\n",
        params.join(",\n"),
        if cluster > 1 { ".explicitcluster\n" } else { "" }
    );
    for ((ty, name), count) in &regs {
        if *count > 0 {
            let _ = writeln!(s, "\t.reg {ty} {name}<{count}>;");
        } else {
            let _ = writeln!(s, "\t.reg {ty} {name};");
        }
    }
    let _ = write!(
        s,
        "\tmov.u32 %k_bid, %ctaid.x;\n{}{bodies}}}\n",
        dispatch(&ends)
    );
    Ok(Batch {
        parts,
        ptx: s,
        block,
        grid: start,
        cluster,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::catalog;
    use crate::atomics::gpu::StressParams;

    fn geometry(name: &str, workgroup_size: u32, max_workgroups: u32) -> Geometry {
        let p = StressParams {
            workgroup_size,
            max_workgroups,
            ..StressParams::default()
        };
        Geometry::new(&catalog::by_name(name).unwrap(), &p).unwrap()
    }

    // The default set launches 128 x 256 = 32 Ki threads: four fill the 128 Ki budget and the
    // fifth opens a second batch of that block size; a test of another block size gets a batch
    // of its own, and a later small test of the first size (32 x 256 = 8 Ki threads) joins the
    // open batch of its shape, whatever came between.
    #[test]
    fn the_planner_packs_by_launch_shape_and_thread_budget() {
        let mp = "MP.rel_acq.gpu.inter_cta";
        let g: Vec<Geometry> = (0..5)
            .map(|_| geometry(mp, 256, 128))
            .chain([geometry(mp, 128, 64), geometry(mp, 256, 32)])
            .collect();
        let refs: Vec<&Geometry> = g.iter().collect();
        assert_eq!(plan(&refs), vec![vec![0, 1, 2, 3], vec![4, 6], vec![5]]);
    }

    #[test]
    fn a_batch_of_mixed_block_sizes_is_refused_by_name() {
        let t = catalog::by_name("SB.relaxed.gpu.inter_cta").unwrap();
        let (a, b) = (geometry(&t.name, 256, 128), geometry(&t.name, 128, 64));
        let s = OutcomeSpace::new(&t, &crate::atomics::model::check(&t).terms);
        let e = generate(&[(&t, &a, &s), (&t, &b, &s)]).unwrap_err();
        assert!(e.to_string().contains("`batch`"), "{e}");
    }

    #[test]
    fn renaming_leaves_registers_and_modifiers_alone() {
        let labels = BTreeSet::from(["SPIN".to_string(), "GO".to_string()]);
        assert_eq!(
            rename(
                "\t@%k_p bra.uni SPIN; ld.param.u64 %k_w, [p_locs];",
                3,
                &labels
            ),
            "\t@%k_p bra.uni B3_SPIN; ld.param.u64 %k_w, [p_locs_b3];"
        );
        assert_eq!(rename("GO:", 0, &labels), "B0_GO:");
        assert_eq!(
            rename("mov.u32 %k_b, %ctaid.x;", 0, &labels),
            "mov.u32 %k_b, %k_bcta;"
        );
    }

    /// A batch of the catalogue's tests assembles (ptxas: the GPU could load it).
    #[test]
    fn a_batch_kernel_assembles() {
        use crate::backend::toolchain::Toolchain;
        use crate::capability::Capability;
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Ptxas), "ptxas");
        let tests: Vec<_> = catalog::entries()
            .into_iter()
            .take(8)
            .map(|e| e.test)
            .collect();
        let prepared: Vec<_> = tests
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let p = StressParams {
                    intra_cta_shared: i % 2 == 0,
                    max_workgroups: 32,
                    ..StressParams::default()
                };
                let g = Geometry::new(t, &p).unwrap();
                let s = OutcomeSpace::new(t, &crate::atomics::model::check(t).terms);
                (t, g, s)
            })
            .collect();
        let refs: Vec<_> = prepared.iter().map(|(t, g, s)| (*t, g, s)).collect();
        let b = generate(&refs).unwrap();
        tc.ptxas(&b.ptx, kernel::TARGET, &[]).unwrap();
    }
}
