//! `--producer-file FILE`: a compiler gpucts was not built with, described in a file, runs as
//! a producer in abi.params and in xcall's pairs without a rebuild. The compiler here is
//! clang-19 at `-O3` behind the file's command line; the independent reference for its
//! verdicts is the waiver file's investigated record of clang-19 (W-ABI-FLOAT-PARAMS-AS-BITS,
//! W-ABI-VEC3-PADDED, ...): at -O3 it must diverge exactly where the built-in `clang` producer
//! (-O2) is waived, and those divergences fail for the new producer, which no waiver names.

mod common;

use common::{gpucts, text, tmp, verdicts};
use gpucts::backend::toolchain::Toolchain;
use gpucts::capability::Capability;

const FILE: &str = "\
# clang-19 at -O3: as a C compiler (abi.params) and as a CUDA device compiler (xcall)
producers:
  - name: clang-o3
    language: c
    command: [clang-19, --target=nvptx64-nvidia-cuda, \"-march={arch}\", -O3, -S, -o, \"{output}\", \"{input}\"]
    version: [clang-19, --version]
  - name: clang-o3-cuda
    language: cuda-no-headers
    command: [clang-19, -x, cuda, --cuda-device-only, \"--cuda-gpu-arch={arch}\", -nocudainc, -nocudalib, -O3, -S, -o, \"{output}\", \"{input}\"]
    version: [clang-19, --version]
";

#[test]
fn a_described_compiler_runs_in_abi_params_and_xcall_pairs() {
    let tc = Toolchain::discover_system();
    gpucts::require!(tc.has(Capability::Clang), "clang-19");
    gpucts::require!(tc.has(Capability::Nvrtc), "NVRTC");
    let dir = tmp("producer-file");
    let file = dir.path().join("producers.yaml");
    std::fs::write(&file, FILE).unwrap();
    let f = file.to_str().unwrap();

    // What the file adds: each producer where its language is written, never paired with
    // itself in xcall.pair, the C one nowhere in xcall (xcall writes no C).
    let o = gpucts(&["--producer-file", f, "--suite", "all", "--list"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let ids: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    let count = |prefix: &str| ids.iter().filter(|i| i.starts_with(prefix)).count();
    assert_eq!(count("abi.params.clang-o3."), 76);
    assert_eq!(count("abi.params.clang-o3-cuda."), 0);
    assert_eq!(count("xcall.pair.clang-o3-cuda.nvrtc."), 240);
    assert_eq!(count("xcall.pair.rustc.clang-o3-cuda."), 240);
    assert_eq!(count("xcall.self.clang-o3-cuda."), 240);
    assert_eq!(count("xcall.pair.clang-o3."), 0);
    assert_eq!(count("xcall.pair.clang-o3-cuda.clang-o3-cuda."), 0);

    // abi.params: the new producer fails exactly where clang-19's divergences are waived.
    let run = |name: &str, filter: &str| {
        let junit = dir.path().join(name).join("junit.xml");
        let o = gpucts(&[
            "--producer-file",
            f,
            "--suite",
            filter.split('.').next().unwrap(),
            filter,
            "--junit",
            junit.to_str().unwrap(),
        ]);
        let (out, err) = text(&o);
        assert!(matches!(o.status.code(), Some(0 | 101)), "{out}{err}");
        verdicts(&junit.with_file_name("results.json"))
    };
    let o3 = run("o3", "abi.params.clang-o3.");
    let o2 = run("o2", "abi.params.clang.");
    assert_eq!(o3.len(), 76);
    let failing: Vec<String> = o3
        .iter()
        .filter(|(_, v)| *v == "fail")
        .map(|(id, _)| id.replacen("clang-o3", "clang", 1))
        .collect();
    let waived: Vec<String> = o2
        .iter()
        .filter(|(_, v)| *v == "waived")
        .map(|(id, _)| id.clone())
        .collect();
    assert!(!failing.is_empty());
    assert_eq!(failing, waived);
    assert!(o3.values().all(|v| v == "pass" || v == "fail"), "{o3:?}");

    // xcall: a pair with NVRTC has the verdict the built-in clang-19 producer's pair has,
    // pass or (waived there, failing here) a known divergence.
    let mine = run("pair", "xcall.pair.clang-o3-cuda.nvrtc.7");
    let theirs = run("pair-clang", "xcall.pair.clang.nvrtc.7");
    assert!(!mine.is_empty());
    for (id, v) in &mine {
        let reference = &theirs[&id.replacen("clang-o3-cuda", "clang", 1)];
        let expected = if reference == "waived" {
            "fail"
        } else {
            reference
        };
        assert_eq!(v, expected, "{id}");
    }
}

/// A producer file that does not read is a usage error at its place, before any case runs.
#[test]
fn a_bad_producer_file_is_refused_where_it_is_wrong() {
    let dir = tmp("producer-file-bad");
    let file = dir.path().join("p.yaml");
    std::fs::write(
        &file,
        "producers:\n  - name: cc\n    language: fortran\n    command: [cc]\n    version: [cc]\n",
    )
    .unwrap();
    let o = gpucts(&[
        "--producer-file",
        file.to_str().unwrap(),
        "--suite",
        "abi",
        "--list",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert!(err.contains("p.yaml:3:"), "{err}");
    assert!(err.contains("fortran"), "{err}");
    assert!(out.is_empty(), "{out}");
}
