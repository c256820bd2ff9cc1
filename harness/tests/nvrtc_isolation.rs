//! A compile's output depends on its input and options only, not on what the process compiled
//! before. NVRTC 12.9 breaks this in one process: after any `-G` compile, later compiles of
//! the same source without `-G` give different PTX (measured; also with a bare ctypes driver
//! of libnvrtc.so.12). The toolchain backend keeps `-G` compiles in a second NVRTC of their
//! own; this test holds it to that. The reference is the first compile in a fresh process.

use gpucts::abi::random::random_batch;
use gpucts::abi::types::Dialect;
use gpucts::backend::toolchain::{Policy, ToolSettings, Toolchain};
use gpucts::capability::Capability;
use gpucts::dwarf::producers::{source, BATCH};

#[test]
fn a_device_debug_compile_does_not_change_later_compiles() {
    let tc = Toolchain::provision(Policy::Auto, ToolSettings::from_environment());
    gpucts::require!(tc.has(Capability::Nvrtc), "nvrtc");
    // The dwarf suite's first NVRTC batch: 25 random aggregates passed by value (the source
    // on which the difference was measured).
    let src = source(&random_batch(0, BATCH as usize), Dialect::Cuda);
    let arch = "--gpu-architecture=compute_90";
    let compile = |opts: &[&str]| {
        tc.nvrtc(&src, "gpucts_dwarf.cu", opts)
            .unwrap_or_else(|e| panic!("nvrtc {opts:?}: {e}"))
    };
    let lineinfo = [arch, "-std=c++17", "-lineinfo"];
    let plain = [arch, "-std=c++17"];
    let first_lineinfo = compile(&lineinfo);
    let first_plain = compile(&plain);
    let device_debug = compile(&[arch, "-std=c++17", "-G"]);
    assert!(
        device_debug.contains(".debug_info"),
        "-G gives full DWARF (the compile really was a -G one)"
    );
    assert_eq!(
        compile(&lineinfo),
        first_lineinfo,
        "-lineinfo PTX changed after a -G compile in the same process"
    );
    assert_eq!(
        compile(&plain),
        first_plain,
        "PTX changed after a -G compile in the same process"
    );
    // And -G itself is stable across the two instances' histories.
    assert_eq!(compile(&[arch, "-std=c++17", "-G"]), device_debug);
}
