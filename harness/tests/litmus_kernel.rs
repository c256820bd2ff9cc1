//! `gpucts litmus kernel FILE -o OUT.ptx`: the GPU runner's kernel for a test, without a GPU.
//! What it writes must assemble with ptxas (the independent check); a test the generator
//! cannot express exits 2 naming the construct.

mod common;

use common::{gpucts, text, tmp};
use std::path::Path;

use gpucts::backend::toolchain::Toolchain;
use gpucts::capability::Capability;

fn litmus(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../suites/litmus")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn a_kernel_is_written_and_assembles_and_a_refusal_names_the_construct() {
    let dir = tmp("litmus-kernel");
    let out = dir.path().join("mp.ptx");
    let o = gpucts(&[
        "litmus",
        "kernel",
        &litmus("MP+fence-acq_rel-sys.litmus"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("2 threads, 2 locations"), "{stdout}");
    let ptx = std::fs::read_to_string(&out).unwrap();
    assert!(ptx.contains(".entry"), "{ptx}");
    let tc = Toolchain::discover_system();
    if tc.has(Capability::Ptxas) {
        tc.ptxas(&ptx, "sm_90", &[])
            .unwrap_or_else(|e| panic!("ptxas refuses the kernel: {e}"));
    } else {
        gpucts::testkit::tool_missing(gpucts::testkit::Need::Tool, "ptxas");
    }

    // A barrier whose quorum (2) is fewer than its arrivals (3): a hardware barrier would
    // leave the third waiting forever: refused, exit 2, naming the instruction; nothing
    // written.
    let refused = dir.path().join("bar.ptx");
    let o = gpucts(&[
        "litmus",
        "kernel",
        &litmus("mp-barrier-quorum.litmus"),
        "-o",
        refused.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`bar.cta.sync 1, 1, 2`"), "{stderr}");
    assert!(!refused.exists());

    // Bad input: exit 2 with the file's position.
    let bad = dir.path().join("bad.litmus");
    std::fs::write(&bad, "PTX bad\n{\n}\n P0 ;\n nonsense ;\nexists (x=1)\n").unwrap();
    let o = gpucts(&[
        "litmus",
        "kernel",
        bad.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.litmus:"), "{stderr}");
}
