//! The `-G` NVRTC (a private copy of the library, see nvrtc_isolation.rs) compiles when it is
//! the first NVRTC of the process to compile anything. It opens `libnvrtc-builtins` from its
//! own directory at that compile; a copy without its siblings failed with
//! NVRTC_ERROR_BUILTIN_OPERATION_FAILURE ("failed to open libnvrtc-builtins.so.12.9") unless an
//! earlier compile of the shared NVRTC had loaded the builtins already (CI, 11-23). This file
//! is its own test binary, so nothing compiled before.

use gpucts::backend::toolchain::{Policy, ToolSettings, Toolchain};
use gpucts::capability::Capability;

#[test]
fn a_device_debug_compile_works_first_in_a_process() {
    let tc = Toolchain::provision(Policy::Auto, ToolSettings::from_environment());
    gpucts::require!(tc.has(Capability::Nvrtc), "nvrtc");
    let src = "__device__ int g;\nextern \"C\" __global__ void k(int v) { g = v + 1; }\n";
    let ptx = tc
        .nvrtc(src, "first.cu", &["--gpu-architecture=compute_90", "-G"])
        .unwrap_or_else(|e| panic!("the first compile of the process, with -G: {e}"));
    assert!(ptx.contains(".debug_info"), "-G gives full DWARF");
    assert!(ptx.contains(".entry k("), "the kernel is in the PTX");
}
