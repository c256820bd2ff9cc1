//! The CUDA array behind a test's surface locations ([`super::binding`]) on the per-test GPU
//! path: how many instances one launch may hold so that the array fits the device's 1-D
//! surface width, and how the array's final image gives the surface locations' final values.
//!
//! The kernel addresses the array with `sust.b.1d.b32` / `suld.b.1d.b32` (PTX ISA "Surface
//! instructions": `.1d` takes one coordinate, in bytes in `.b` mode), so the array is a 1-D
//! CUDA array of 32-bit words laid out like the location buffer. A 1-D surface object's
//! array is at most `CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH` elements wide (CUDA driver
//! API, `cuDeviceGetAttribute`); a launch whose location buffer is wider runs fewer testing
//! CTAs (fewer instances per launch), never a wider array.

use super::layout::{Geometry, Tables};
use super::{kernel, RunError, StressParams};
use crate::atomics::litmus::LitmusTest;

/// The geometry of `test` under `params`, with its testing CTAs cut to the most whose
/// location buffer is at most `max_words` words when the test has surface locations (the
/// array mirrors the buffer word for word). Instances per launch grow with testing CTAs, so
/// the largest count that fits is searched downwards. A test
/// whose smallest launch does not fit is refused naming the width.
pub(crate) fn fit_to_width(
    test: &LitmusTest,
    params: &StressParams,
    max_words: usize,
) -> Result<Geometry, RunError> {
    let g = Geometry::new(test, params)?;
    if g.surface_backed.is_empty() || g.location_words() <= max_words {
        return Ok(g);
    }
    // Testing CTAs are a power of two (`StressParams` validation): halve them until the
    // buffer fits.
    let mut p = params.clone();
    p.testing_workgroups /= 2;
    while p.testing_workgroups > 0 {
        if let Ok(g) = Geometry::new(test, &p) {
            if g.location_words() <= max_words {
                return Ok(g);
            }
        }
        p.testing_workgroups /= 2;
    }
    Err(RunError::Kernel(kernel::KernelError::Inexpressible {
        at: format!("`{}`", test.name),
        construct: format!(
            "a surface array of {} words (the location buffer of one testing CTA)",
            g.location_words() / params.testing_workgroups.max(1) as usize
        ),
        why: format!(
            "the device's widest 1-D surface is {max_words} elements \
             (CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH)"
        ),
    }))
}

/// The location buffer's final image with each surface-backed location's words taken from
/// the array's final image `array` (same layout): a surface location's value lives in the
/// array, and the buffer's word of it is never written.
pub(crate) fn merge_final(g: &Geometry, t: &Tables, array: &[u32], memory: &mut [u32]) {
    let nl = g.locations.len();
    for &j in &g.surface_backed {
        for inst in 0..g.instances() as usize {
            let a = t.addrs[inst * nl + j] as usize;
            memory[a] = array[a];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::atomics::gpu::layout::{self, IterationPlan};
    use crate::atomics::litmus::dat3m;
    use rand::SeedableRng;

    /// x and its surface name s: two locations.
    const SUR: &str = "PTX sur\n{\nx = 0;\ns @ surface aliases x;\nflag = 0;\n}\n\
                       P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n sust.weak s, 1 | ld.acquire.gpu r0, flag ;\n\
                       st.release.gpu flag, 1 | suld.weak r1, s ;\nexists (P1:r0 == 1 /\\ P1:r1 != 1)\n";

    fn default_shape() -> (LitmusTest, StressParams) {
        let t = dat3m::import(SUR).expect("a Dat3M test");
        (t, StressParams::default())
    }

    /// The shared layout (every testing thread one instance, `mem_stride` words per location
    /// per instance) holds `testing CTAs x CTA size x locations x stride` words, and testing
    /// CTAs are a power of two: with 3 locations (x, s, flag), 256-thread CTAs and stride 1,
    /// 10,000 words hold 8 CTAs (8 x 768 = 6,144; 16 x 768 = 12,288).
    #[test]
    fn testing_ctas_are_cut_to_the_width() {
        let (t, p) = default_shape();
        assert_eq!(
            (p.workgroup_size, p.mem_stride, p.testing_workgroups),
            (256, 1, 32)
        );
        let g = fit_to_width(&t, &p, 10_000).expect("fits");
        assert_eq!(g.locations.len(), 3);
        assert_eq!(g.params.testing_workgroups, 8);
        assert_eq!(g.location_words(), 6_144);
        // Wide enough: the geometry is untouched.
        let g = fit_to_width(&t, &p, 1 << 20).expect("fits");
        assert_eq!(g.params.testing_workgroups, 32);
    }

    /// A test without surface locations keeps its launch whatever the width.
    #[test]
    fn no_surface_no_cut() {
        let t = dat3m::import(
            "PTX mp\n{\nx = 0;\nflag = 0;\n}\nP0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n\
             st.weak x, 1 | ld.acquire.gpu r0, flag ;\nst.release.gpu flag, 1 | ld.weak r1, x ;\n\
             exists (P1:r0 == 1 /\\ P1:r1 != 1)\n",
        )
        .unwrap();
        let g = fit_to_width(&t, &StressParams::default(), 16).expect("no array");
        assert_eq!(g.params.testing_workgroups, 32);
    }

    /// One testing CTA of the shared layout already needs 768 words: a 500-element surface
    /// cannot hold it, and the refusal names the width and the attribute.
    #[test]
    fn a_launch_that_cannot_fit_is_refused() {
        let (t, p) = default_shape();
        let e = fit_to_width(&t, &p, 500).expect_err("refused").to_string();
        assert!(e.contains("500 elements"), "{e}");
        assert!(e.contains("MAXIMUM_SURFACE1D_WIDTH"), "{e}");
        assert!(e.contains("768 words"), "{e}");
    }

    /// Binding rule: a surface name's value is the array's word at its physical location's
    /// offset; every other location keeps the buffer's word.
    #[test]
    fn surface_locations_take_the_array_words() {
        let (t, p) = default_shape();
        let g = layout::Geometry::new(&t, &p).unwrap();
        let x = g.location_index("x").unwrap();
        let flag = g.location_index("flag").unwrap();
        assert_eq!(g.surface_backed, vec![x]);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let plan = IterationPlan::random(&g, &mut rng);
        let tab = layout::tables(&g, &plan);
        let n = g.location_words();
        let array: Vec<u32> = (0..n as u32).map(|i| 0x8000_0000 | i).collect();
        let mut mem: Vec<u32> = (0..n as u32).collect();
        merge_final(&g, &tab, &array, &mut mem);
        let nl = g.locations.len();
        for inst in 0..g.instances() as usize {
            let ax = tab.addrs[inst * nl + x] as usize;
            let af = tab.addrs[inst * nl + flag] as usize;
            assert_eq!(mem[ax], 0x8000_0000 | ax as u32);
            assert_eq!(mem[af], af as u32);
        }
    }

    /// The host passes what the generated entry declares, by name and width: the entry's
    /// `.param` list of a test with a generic alias and two surface names is read from the
    /// PTX and each parameter looked up in what [`super::super::kernel_args`] passes.
    #[test]
    fn host_arguments_match_the_entry_parameters() {
        use crate::backend::cuda::KernelArg;
        let syn = "PTX syn\n{\nx = 0;\ny @ generic aliases x;\ns1 @ surface aliases y;\n\
                   s2 @ surface aliases x;\nz = 0;\nflag = 0;\n}\n\
                   P0@cta 0,gpu 0 | P1@cta 1,gpu 0 ;\n sust.weak s1, 2 | ld.acquire.gpu r0, flag ;\n\
                   st.weak z, 1 | suld.weak r1, s2 ;\n fence.proxy.alias | ld.weak r2, z ;\n\
                   st.release.gpu flag, 1 | ;\nexists (P1:r0 == 1 /\\ P1:r1 != 2)\n";
        let t = dat3m::import(syn).unwrap();
        let g = layout::Geometry::new(&t, &StressParams::default()).unwrap();
        let ptx = kernel::generate(&t, &g).unwrap();
        let entry = &ptx[ptx.find(".entry").expect("an entry")..];
        let entry = &entry[..entry.find(')').expect("its parameter list ends")];
        let params: Vec<(&str, &str)> = entry
            .split(".param")
            .skip(1)
            .map(|p| {
                let mut w = p.trim().trim_end_matches(',').split_whitespace();
                (w.next().unwrap(), w.next().unwrap().trim_end_matches(','))
            })
            .collect();
        let args = super::super::kernel_args([1, 2, 3, 4, 5, 6, 7], 99, Some(0xa), &[0x50, 0x51]);
        assert_eq!(args.len(), params.len(), "{params:?}");
        // The seven buffers lead every test kernel's parameters, as in a batch part's.
        let buffers = &crate::atomics::gpu::batch::PARAMS[..7];
        for ((ty, name), arg) in params.iter().zip(&args) {
            let want = if let Some(i) = buffers.iter().position(|b| b == name) {
                KernelArg::Ptr(i as u64 + 1)
            } else {
                match *name {
                    "p_testing" => KernelArg::U32(99),
                    "p_alias" => KernelArg::Ptr(0xa),
                    "p_surf0" => KernelArg::U64(0x50),
                    "p_surf1" => KernelArg::U64(0x51),
                    other => panic!("unexpected parameter {other}"),
                }
            };
            let width = match arg {
                KernelArg::U32(_) => ".u32",
                KernelArg::Ptr(_) | KernelArg::U64(_) => ".u64",
            };
            assert_eq!(*ty, width, "{name}");
            assert_eq!(format!("{arg:?}"), format!("{want:?}"), "{name}");
        }
    }
}
