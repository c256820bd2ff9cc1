//! The kernel's frame around the roles' code: the module header and entry parameters, the
//! prologue's registers and loads, the location views, the per-role addresses and the
//! shared-memory copies in and out.

use std::fmt::Write as _;

use super::instr::Regs;
use super::{KERNEL, PTX_VERSION, SMEM, TARGET};
use crate::atomics::gpu::binding::{Binding, Bindings};
use crate::atomics::gpu::count;
use crate::atomics::gpu::layout::Geometry;
use crate::atomics::litmus::LitmusTest;

/// The module header, the entry's parameters and the kernel's own registers. A cluster launch
/// is `.explicitcluster` (PTX ISA "Cluster dimension directives": the cluster dimensions must
/// be given at launch; the runner launches with the cluster-dimension attribute). `counting`
/// adds the outcome counters' parameter.
pub(super) fn header(
    s: &mut String,
    test: &LitmusTest,
    g: &Geometry,
    counting: bool,
    views: &Bindings,
) {
    let cp = format!(
        "{}{}",
        if counting { count::PARAM } else { "" },
        view_params(views)
    );
    let _ = write!(
        s,
        "// gpucts litmus kernel for `{name}` ({place:?}, {roles} roles, {nl} locations{cl})\n\
         .version {PTX_VERSION}\n.target {TARGET}\n.address_size 64\n\n{smem}\
         .visible .entry {KERNEL}(\n\t.param .u64 p_locs,\n\t.param .u64 p_results,\n\
         \t.param .u64 p_roles,\n\t.param .u64 p_addrs,\n\t.param .u64 p_barrier,\n\
         \t.param .u64 p_scratch,\n\t.param .u64 p_stress,\n\t.param .u32 p_testing{cp}\n)\n{cluster}{{\n\
         \t.reg .pred %k_p, %k_none;\n\
         \t.reg .b32 %k_b, %k_l, %k_nt, %k_g, %k_i, %k_sv, %k_sl, %k_tmp, %k_bar, %k_spin, %k_testing, %k_neg;\n\
         \t.reg .b64 %k_locs, %k_results, %k_roles, %k_addrs, %k_barrier, %k_scratch, %k_stress, %k_ra, %k_aa, %k_sa, %k_w;\n",
        name = test.name,
        place = g.placement,
        roles = test.threads.len(),
        nl = g.locations.len(),
        cl = if g.cluster > 1 {
            format!(", clusters of {} CTAs", g.cluster)
        } else {
            String::new()
        },
        cluster = if g.cluster > 1 {
            ".explicitcluster\n"
        } else {
            ""
        },
        smem = if g.shared {
            format!(
                ".shared .align 4 .b32 {SMEM}[{}];\n\n",
                g.cta_location_words()
            )
        } else {
            String::new()
        },
    );
    if g.shared {
        let own = if g.cluster > 1 { ", %k_own" } else { "" };
        let _ = writeln!(
            s,
            "\t.reg .b32 %k_slab, %k_cw, %k_cv{own};\n\t.reg .b64 %k_sm, %k_cg, %k_cs;"
        );
    }
}

/// The CTA's block of locations (the words of the instances it holds: all of its threads
/// test, and every instance whose P0 it plays sits in it) copied into its shared memory, then
/// a barrier: `bar.sync` within a CTA; in a cluster, `barrier.cluster.arrive` (release) and
/// `barrier.cluster.wait` (acquire), so that every CTA of the cluster has its block in place,
/// and has started, before any reaches into it (PTX ISA "Distributed shared memory": a CTA's
/// shared memory may be accessed only while it runs).
pub(super) fn copy_in(s: &mut String, g: &Geometry) {
    let _ = write!(
        s,
        "\t// the CTA's locations into shared memory\n\
         \tdiv.u32 %k_slab, %k_inst0, {w};\n\tmul.lo.u32 %k_slab, %k_slab, {cw};\n\
         \tmov.u64 %k_sm, {SMEM};\n\tmov.u32 %k_cw, %k_l;\n\
         SMEM_IN:\n\tsetp.ge.u32 %k_p, %k_cw, {cw};\n\t@%k_p bra SMEM_IN_DONE;\n\
         \tadd.u32 %k_tmp, %k_slab, %k_cw;\n\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
         \tadd.s64 %k_cg, %k_locs, %k_w;\n\tld.global.u32 %k_cv, [%k_cg];\n\
         \tmul.wide.u32 %k_w, %k_cw, 4;\n\tadd.s64 %k_cs, %k_sm, %k_w;\n\
         \tst.shared.u32 [%k_cs], %k_cv;\n\tadd.u32 %k_cw, %k_cw, %k_nt;\n\tbra SMEM_IN;\n\
         SMEM_IN_DONE:\n{barrier}",
        w = g.params.workgroup_size,
        cw = g.cta_location_words(),
        barrier = sync_line(g),
    );
}

/// The barrier around the shared-memory copies: the CTA's, or the cluster's.
fn sync_line(g: &Geometry) -> &'static str {
    if g.cluster > 1 {
        "\tbarrier.cluster.arrive;\n\tbarrier.cluster.wait;\n"
    } else {
        "\tbar.sync 0;\n"
    }
}

/// Final values back to the location buffer, once every thread of the CTA (of the cluster:
/// those reaching into this CTA's shared memory) is done.
pub(super) fn copy_out(s: &mut String, g: &Geometry) {
    let _ = write!(
        s,
        "\t// the CTA's final values back to the location buffer\n{barrier}\
         \tmov.u32 %k_cw, %k_l;\n\
         SMEM_OUT:\n\tsetp.ge.u32 %k_p, %k_cw, {cw};\n\t@%k_p bra SMEM_OUT_DONE;\n\
         \tmul.wide.u32 %k_w, %k_cw, 4;\n\tadd.s64 %k_cs, %k_sm, %k_w;\n\
         \tld.shared.u32 %k_cv, [%k_cs];\n\
         \tadd.u32 %k_tmp, %k_slab, %k_cw;\n\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
         \tadd.s64 %k_cg, %k_locs, %k_w;\n\tst.global.u32 [%k_cg], %k_cv;\n\
         \tadd.u32 %k_cw, %k_cw, %k_nt;\n\tbra SMEM_OUT;\nSMEM_OUT_DONE:\n",
        barrier = sync_line(g),
        cw = g.cta_location_words(),
    );
}

/// Each role's instance and the addresses of its locations, `%a<t>_<j>`: in the location
/// buffer; in shared memory, the word's offset in its CTA's block; in a cluster's distributed
/// shared memory, that offset in the block of the CTA playing the instance's P0 (logical CTA
/// `inst / workgroup_size`, whose rank in its cluster is that number mod the cluster size, as
/// the tables keep ranks), mapped into that CTA with `mapa`.
pub(super) fn role_addresses(s: &mut String, g: &Geometry, b: &Bindings, roles: usize, nl: usize) {
    let (w, cw) = (g.params.workgroup_size, g.cta_location_words());
    for t in 0..roles {
        if t > 0 {
            let _ = writeln!(s, "\tld.global.u32 %k_inst{t}, [%k_ra+{}];", 4 * t);
        }
        let _ = writeln!(
            s,
            "\tmul.wide.u32 %k_w, %k_inst{t}, {};\n\tadd.s64 %k_aa, %k_addrs, %k_w;",
            4 * nl.max(1)
        );
        for j in 0..nl {
            let (sub, base, map) = match (g.shared, g.cluster > 1) {
                (false, _) => (String::new(), "%k_locs", String::new()),
                (true, false) => (
                    "\tsub.u32 %k_tmp, %k_tmp, %k_slab;\n".into(),
                    "%k_sm",
                    String::new(),
                ),
                (true, true) => (
                    format!(
                        "\tdiv.u32 %k_own, %k_inst{t}, {w};\n\tmul.lo.u32 %k_cv, %k_own, {cw};\n\
                         \tsub.u32 %k_tmp, %k_tmp, %k_cv;\n"
                    ),
                    "%k_sm",
                    format!(
                        "\trem.u32 %k_own, %k_own, {c};\n\
                         \tmapa.shared::cluster.u64 %a{t}_{j}, %a{t}_{j}, %k_own;\n",
                        c = g.cluster
                    ),
                ),
            };
            if b.per_location[j] != Binding::Linear {
                // Only the location buffer has other views (the geometry keeps such a test's
                // locations out of shared memory).
                location_view(s, b.per_location[j], t, j);
                continue;
            }
            let _ = write!(
                s,
                "\tld.global.u32 %k_tmp, [%k_aa+{}];\n{sub}\tmul.wide.u32 %k_w, %k_tmp, 4;\n\
                 \tadd.s64 %a{t}_{j}, {base}, %k_w;\n{map}",
                4 * j
            );
        }
    }
}

/// `%a<t>_<j>` of a location reached through a view ([`Binding`]): a generic alias's address
/// in the second mapping (`%k_alias`) of its physical location's word; a surface name's byte
/// offset of that word in the array (the surface instruction's x coordinate). The address
/// table `%k_aa` points at the instance's row.
pub(super) fn location_view(s: &mut String, b: Binding, t: usize, j: usize) {
    let (of, base) = match b {
        Binding::Linear => (j, Some("%k_locs")),
        Binding::GenericAlias { of } => (of, Some("%k_alias")),
        Binding::Surface { of, .. } => (of, None),
    };
    let _ = writeln!(s, "\tld.global.u32 %k_tmp, [%k_aa+{}];", 4 * of);
    match base {
        Some(base) => {
            let _ = writeln!(
                s,
                "\tmul.wide.u32 %k_w, %k_tmp, 4;\n\tadd.s64 %a{t}_{j}, {base}, %k_w;"
            );
        }
        None => {
            let _ = writeln!(s, "\tmul.wide.u32 %a{t}_{j}, %k_tmp, 4;");
        }
    }
}

/// The kernel parameters of the views a test's locations need ([`Binding`]), after the
/// others: the second mapping of the location buffer, then one surface object per surface
/// name.
pub(super) fn view_params(b: &Bindings) -> String {
    let mut s = String::new();
    if b.alias() {
        s.push_str(",\n\t.param .u64 p_alias");
    }
    for k in 0..b.surfaces {
        let _ = write!(s, ",\n\t.param .u64 p_surf{k}");
    }
    s
}

/// The views' registers, loaded from their parameters.
pub(super) fn view_prologue(s: &mut String, b: &Bindings) {
    if b.alias() {
        s.push_str(
            "\t.reg .b64 %k_alias;\n\tld.param.u64 %k_w, [p_alias];\n\tcvta.to.global.u64 %k_alias, %k_w;\n",
        );
    }
    if b.surfaces > 0 {
        let _ = writeln!(
            s,
            "\t.reg .b32 %k_sx;\n\t.reg .b64 %k_surf<{}>;",
            b.surfaces
        );
        for k in 0..b.surfaces {
            let _ = writeln!(s, "\tld.param.u64 %k_surf{k}, [p_surf{k}];");
        }
    }
}

/// The part of the prologue both layouts share: register declarations for the test's
/// registers, constants and per-role addresses, the kernel parameters in global space, this
/// thread's ids and its CTA's stress word.
///
/// In a cluster launch the thread's block is found from its cluster's id and its rank in it
/// (`%clusterid.x`, `%cluster_ctarank`, PTX ISA "Special registers"), the numbering the
/// tables place roles by, so that roles meant for one cluster run in one.
pub(super) fn prologue_common(s: &mut String, regs: &Regs, roles: usize, nl: usize, cluster: u32) {
    let _ = writeln!(s, "\t.reg .b32 %v<{}>;", regs.vars.len().max(1));
    let _ = writeln!(s, "\t.reg .b32 %c<{}>;", regs.consts.len().max(1));
    for t in 0..roles {
        let _ = writeln!(s, "\t.reg .b32 %k_inst{t};");
        for j in 0..nl {
            let _ = writeln!(s, "\t.reg .b64 %a{t}_{j};");
        }
    }
    for (p, r) in [
        ("p_locs", "%k_locs"),
        ("p_results", "%k_results"),
        ("p_roles", "%k_roles"),
        ("p_addrs", "%k_addrs"),
        ("p_barrier", "%k_barrier"),
        ("p_scratch", "%k_scratch"),
        ("p_stress", "%k_stress"),
    ] {
        let _ = writeln!(
            s,
            "\tld.param.u64 %k_w, [{p}];\n\tcvta.to.global.u64 {r}, %k_w;"
        );
    }
    let block = if cluster > 1 {
        format!(
            "\tmov.u32 %k_b, %clusterid.x;\n\tmov.u32 %k_tmp, %cluster_ctarank;\n\
             \tmad.lo.u32 %k_b, %k_b, {cluster}, %k_tmp;\n"
        )
    } else {
        "\tmov.u32 %k_b, %ctaid.x;\n".to_string()
    };
    let _ = write!(
        s,
        "\tld.param.u32 %k_testing, [p_testing];\n{block}\
         \tmov.u32 %k_l, %tid.x;\n\tmov.u32 %k_nt, %ntid.x;\n\
         \tmad.lo.u32 %k_g, %k_b, %k_nt, %k_l;\n\
         \t// this CTA's stress word\n\
         \tmul.wide.u32 %k_w, %k_b, 4;\n\tadd.s64 %k_w, %k_stress, %k_w;\n\
         \tld.global.u32 %k_sl, [%k_w];\n\tmul.wide.u32 %k_w, %k_sl, 4;\n\
         \tadd.s64 %k_sa, %k_scratch, %k_w;\n"
    );
}

/// Each test register's initial value (default 0) and each constant, into its PTX register.
pub(super) fn initial_registers(s: &mut String, test: &LitmusTest, regs: &Regs) {
    for ((t, r), k) in &regs.vars {
        let init = test.threads[*t].regs.get(r).copied().unwrap_or(0);
        let _ = writeln!(s, "\tmov.b32 %v{k}, {};", init as u32);
    }
    for (v, k) in &regs.consts {
        let _ = writeln!(s, "\tmov.b32 %c{k}, {v};");
    }
}
