//! Where each name of a litmus test's locations lives in a kernel: the location buffer, the
//! second virtual mapping of it (a generic alias), or a surface over a CUDA array.
//!
//! PTX ISA 7.5 "Proxies": a memory location may be reached through several virtual addresses
//! (`y @ generic aliases x`) and through non-generic proxies (`s @ surface aliases x`). A
//! kernel realises these as follows:
//! - a generic alias is the same word in a second virtual mapping of the location buffer's
//!   physical memory (the runner maps the buffer twice; the kernel receives the second base
//!   as `p_alias`), so its generic accesses name other virtual addresses of the same bytes;
//! - a surface name is a surface object over a CUDA array that mirrors the location buffer
//!   (the kernel receives one object per name, `p_surf<k>`, all over the one array), accessed
//!   with `sust.b.1d.b32.trap` / `suld.b.1d.b32.trap` at the word's byte offset. CUDA creates
//!   a surface object only over a CUDA array (`cuSurfObjectCreate`: the resource type must be
//!   `CU_RESOURCE_TYPE_ARRAY`, the array created with `CUDA_ARRAY3D_SURFACE_LDST`), and a CUDA
//!   array has no generic address; so a physical location the test reaches through a surface
//!   lives in the array, and a generic access to it cannot be expressed.

use crate::atomics::litmus::{LitmusTest, Op, Proxy};

/// Why a surface location cannot also be reached generically.
pub(crate) const SURFACE_AND_GENERIC_WHY: &str =
    "the test reaches this physical location both through the surface proxy and generically; \
     CUDA binds a surface object only to a CUDA array (cuSurfObjectCreate: \
     CU_RESOURCE_TYPE_ARRAY), whose storage has no generic address, so no kernel can give \
     both kinds of access the same bytes";

/// How a kernel reaches one name of the test's locations ([`crate::atomics::gpu::layout::Geometry::locations`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    /// Its own word of the location buffer.
    Linear,
    /// The word of location `of` (its physical location) in the buffer's second mapping.
    GenericAlias { of: usize },
    /// Surface object `object`, at the byte offset of location `of`'s word.
    Surface { object: usize, of: usize },
}

/// The bindings of every location of a test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bindings {
    pub per_location: Vec<Binding>,
    /// Surface objects the kernel takes (`p_surf0..`).
    pub surfaces: usize,
}

impl Bindings {
    /// Whether the kernel takes the second mapping's base (`p_alias`).
    pub(crate) fn alias(&self) -> bool {
        self.per_location
            .iter()
            .any(|b| matches!(b, Binding::GenericAlias { .. }))
    }
    /// Whether some location is not a plain word of the buffer.
    pub(crate) fn any(&self) -> bool {
        self.per_location.iter().any(|b| *b != Binding::Linear)
    }
    /// The locations whose words live in the surface array (their physical indices).
    pub(crate) fn surface_backed(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .per_location
            .iter()
            .filter_map(|b| match b {
                Binding::Surface { of, .. } => Some(*of),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// A construct the bindings cannot give: the operation (`at`), its text and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub at: String,
    pub construct: String,
    pub why: String,
}

fn is_surface_access(op: &Op) -> bool {
    matches!(
        op,
        Op::ProxyLd {
            proxy: Proxy::Surface,
            ..
        } | Op::ProxySt {
            proxy: Proxy::Surface,
            ..
        }
    )
}

/// Whether `op` is a generic-proxy access (ld, st, atom, red) of a location.
fn is_generic_access(op: &Op) -> bool {
    matches!(
        op,
        Op::Ld { .. } | Op::St { .. } | Op::Atom { .. } | Op::Red { .. }
    )
}

/// The bindings of `locations` (the test's, in geometry order) for `test`.
pub(crate) fn bindings(test: &LitmusTest, locations: &[String]) -> Result<Bindings, Refusal> {
    let index = |name: &str| locations.iter().position(|l| l == name);
    let physical = |name: &str| index(test.physical(name));
    // Physical locations some surface access reaches, and the surface names, in order of
    // first use.
    let mut backed = std::collections::BTreeSet::new();
    let mut surface_names: Vec<&str> = Vec::new();
    for th in &test.threads {
        for op in th.ops.iter().filter(|o| is_surface_access(o)) {
            let loc = op.loc().unwrap_or_default();
            backed.extend(physical(loc));
            if !surface_names.contains(&loc) {
                surface_names.push(loc);
            }
        }
    }
    let generic_alias = |name: &str| {
        test.locations
            .iter()
            .any(|l| l.name == name && l.alias.as_ref().is_some_and(|a| a.proxy == Proxy::Generic))
    };
    for (t, th) in test.threads.iter().enumerate() {
        for (oi, op) in th.ops.iter().enumerate() {
            let Some(loc) = op.loc().filter(|_| is_generic_access(op)) else {
                continue;
            };
            if physical(loc).is_some_and(|p| backed.contains(&p)) {
                return Err(Refusal {
                    at: format!("`{}` P{t} op {}", test.name, oi + 1),
                    construct: format!(
                        "{} (generic) and a surface access of {}",
                        crate::atomics::litmus::dat3m::instr_text(op),
                        test.physical(loc)
                    ),
                    why: SURFACE_AND_GENERIC_WHY.to_string(),
                });
            }
        }
    }
    let per_location = locations
        .iter()
        .enumerate()
        .map(|(j, name)| {
            let of = physical(name).unwrap_or(j);
            if let Some(object) = surface_names.iter().position(|s| s == name) {
                Binding::Surface { object, of }
            } else if of != j && generic_alias(name) {
                Binding::GenericAlias { of }
            } else {
                Binding::Linear
            }
        })
        .collect();
    Ok(Bindings {
        per_location,
        surfaces: surface_names.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::litmus::dat3m;

    fn test_of(src: &str) -> LitmusTest {
        dat3m::import(src).expect("a Dat3M test")
    }

    /// PTX ISA 7.5 "Proxies": `y @ generic aliases x` is another virtual address of x's
    /// physical location, so y reads and writes x's word through the second mapping; a
    /// surface name `s` of `y` reaches x's word (aliases chain to one physical location).
    #[test]
    fn aliases_chain_to_the_physical_word() {
        let t = test_of(
            "PTX chain\n{\nx = 0;\ny @ generic aliases x;\ns2 @ surface aliases y;\nflag = 0;\n}\n\
             P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n st.weak y, 1 | ld.acquire.cta r0, flag ;\n\
             st.release.cta flag, 1 | ld.weak r1, x ;\nexists (P1:r0 == 1)\n",
        );
        let locs = t.all_locations();
        let b = bindings(&t, &locs).expect("expressible");
        let x = locs.iter().position(|l| l == "x").unwrap();
        let y = locs.iter().position(|l| l == "y").unwrap();
        assert_eq!(b.per_location[y], Binding::GenericAlias { of: x });
        assert_eq!(b.per_location[x], Binding::Linear);
        assert!(b.alias());
        assert_eq!(b.surfaces, 0);
    }

    /// Two surface names of one physical location are two surface objects over the one
    /// array, each at that location's word.
    #[test]
    fn surface_names_are_objects_over_the_physical_word() {
        let t = test_of(
            "PTX syn\n{\nx = 0;\ny @ generic aliases x;\ns1 @ surface aliases x;\n\
             s2 @ surface aliases y;\nflag = 0;\n}\n\
             P0@cta 0,gpu 0 | P1@cta 0,gpu 0 ;\n sust.weak s1, 2 | ld.acquire.cta r0, flag ;\n\
             st.release.cta flag, 1 | suld.weak r1, s2 ;\nexists (P1:r0 == 1 /\\ P1:r1 != 2)\n",
        );
        let locs = t.all_locations();
        let b = bindings(&t, &locs).expect("expressible");
        let x = locs.iter().position(|l| l == "x").unwrap();
        let s1 = locs.iter().position(|l| l == "s1").unwrap();
        let s2 = locs.iter().position(|l| l == "s2").unwrap();
        assert_eq!(b.per_location[s1], Binding::Surface { object: 0, of: x });
        assert_eq!(b.per_location[s2], Binding::Surface { object: 1, of: x });
        assert_eq!(b.surfaces, 2);
        assert_eq!(b.surface_backed(), vec![x]);
    }

    /// cuSurfObjectCreate takes only a CUDA array, which has no generic address: a test
    /// that writes x generically and reads it through a surface is refused naming both.
    #[test]
    fn a_surface_location_read_generically_is_refused() {
        let t = test_of(
            "PTX gs\n{\nx = 0;\ns @ surface aliases x;\n}\nP0@cta 0,gpu 0 ;\n st.weak x, 1 ;\n\
             suld.weak r0, s ;\nexists (P0:r0 != 1)\n",
        );
        let e = bindings(&t, &t.all_locations()).expect_err("refused");
        assert_eq!(e.at, "`gs` P0 op 1");
        assert!(
            e.construct.contains("surface access of x"),
            "{}",
            e.construct
        );
        assert!(e.why.contains("CU_RESOURCE_TYPE_ARRAY"));
    }
}
