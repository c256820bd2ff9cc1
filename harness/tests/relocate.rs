//! A `gpucts` binary carried away from the tree it was built in: copied into an empty
//! directory (the suites embedded in it are used), and run inside a copy of the repository at
//! another path (the copy's suites are used). Either way the case ids and verdicts are those of
//! the same binary run in the checkout; nothing is read from the build tree.

mod common;

use common::{text, tmp, verdicts};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The binary, copied to `dir` (a rig gets the file, not the build tree).
fn copied_binary(dir: &Path) -> PathBuf {
    let to = dir.join("gpucts");
    std::fs::copy(env!("CARGO_BIN_EXE_gpucts"), &to).unwrap();
    to
}

/// Run `exe` in `cwd` with no GPUCTS_ROOT and a private cache (so the embedded copy is written
/// afresh, not found from an earlier run).
fn run_in(exe: &Path, cwd: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(exe)
        .args(args)
        .current_dir(cwd)
        .env_remove("GPUCTS_ROOT")
        .env("GPUCTS_CACHE", cache)
        .output()
        .expect("gpucts runs")
}

/// The in-tree run: the test binary where cargo built it, rooted at the checkout.
fn run_in_tree(cache: &Path, args: &[&str]) -> Output {
    run_in(
        Path::new(env!("CARGO_BIN_EXE_gpucts")),
        &checkout(),
        cache,
        args,
    )
}

/// Copy the repository's tracked folders that a run reads (and `harness/`, which marks a
/// checkout) to `to`.
fn copy_repository(to: &Path) {
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if p.is_dir() {
                copy_dir(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).unwrap();
            }
        }
    }
    for d in [
        "suites",
        "ptx-corpus",
        "harness/src",
        "harness/tests/fixtures",
    ] {
        copy_dir(&checkout().join(d), &to.join(d));
    }
}

#[test]
fn a_copied_binary_lists_the_same_cases_anywhere() {
    let cache = tmp("reloc-cache");
    let bin_dir = tmp("reloc-bin");
    let empty = tmp("reloc-empty");
    let repo = tmp("reloc-repo");
    copy_repository(repo.path());
    let exe = copied_binary(bin_dir.path());
    let args = ["--suite", "all", "--list"];
    let in_tree = run_in_tree(cache.path(), &args);
    let (want, err) = text(&in_tree);
    assert_eq!(in_tree.status.code(), Some(0), "{err}");
    assert!(want.lines().count() > 10_000, "the in-tree list: {want}");
    for (cwd, what) in [
        (empty.path(), "an empty directory"),
        (repo.path(), "a copy of the repository"),
        (
            &repo.path().join("harness/src"),
            "a subdirectory of the copy",
        ),
    ] {
        let o = run_in(&exe, cwd, cache.path(), &args);
        let (got, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{what}: {err}");
        assert!(got == want, "{what}: the list differs from the in-tree one");
    }
    // `probe` says which suites were used.
    let o = run_in(&exe, empty.path(), cache.path(), &["probe"]);
    let (out, _) = text(&o);
    assert!(out.contains("(embedded in the binary"), "{out}");
    let o = run_in(&exe, repo.path(), cache.path(), &["probe"]);
    let (out, _) = text(&o);
    let line = out.lines().find(|l| l.starts_with("suites ")).unwrap();
    assert!(
        line.contains(&repo.path().display().to_string())
            && line.contains("checkout found from the working directory"),
        "{line}"
    );
}

/// Cases that read files of the data root (suites/litmus/, ptx-corpus/) and the public corpora
/// give the in-tree verdicts from an empty directory and from a copy of the repository;
/// without `--corpora` the corpus cases skip, naming it.
#[test]
fn a_copied_binary_gives_the_in_tree_verdicts() {
    let cache = tmp("reloc-cache");
    let bin_dir = tmp("reloc-bin");
    let empty = tmp("reloc-empty");
    let repo = tmp("reloc-repo");
    let reports = tmp("reloc-reports");
    copy_repository(repo.path());
    let exe = copied_binary(bin_dir.path());
    let corpora = checkout().join("../shared/corpora");
    for (suite, filter) in [
        ("atomics", "atomics.litmus"),
        ("ptx", "abi.corpus"),
        ("atomics", "atomics.corpus"),
    ] {
        let run = |name: &str, exe: &Path, cwd: &Path, extra: &[&str]| {
            let junit = reports
                .path()
                .join(name)
                .join(suite)
                .join(filter)
                .join("junit.xml");
            let mut args = vec![
                "--suite",
                suite,
                filter,
                "--toolchain",
                "system",
                "--junit",
                junit.to_str().unwrap(),
            ];
            args.extend_from_slice(extra);
            let o = run_in(exe, cwd, cache.path(), &args);
            let (out, err) = text(&o);
            assert!(
                o.status.code() == Some(0),
                "{name} {suite} {filter}: exit {:?}\n{out}\n{err}",
                o.status.code()
            );
            (verdicts(&junit.with_file_name("results.json")), out)
        };
        let in_tree_exe = PathBuf::from(env!("CARGO_BIN_EXE_gpucts"));
        let (want, _) = run("tree", &in_tree_exe, &checkout(), &[]);
        assert!(!want.is_empty(), "{suite} {filter}: no case ran");
        // The copy has no ../shared/corpora beside it: it is named, as a rig would.
        let c = corpora.to_str().unwrap();
        let named: &[&str] = if corpora.is_dir() {
            &["--corpora", c]
        } else {
            &[]
        };
        let (in_copy, _) = run("copy", &exe, repo.path(), named);
        assert_eq!(in_copy, want, "{suite} {filter}: a copy of the repository");
        if filter == "atomics.corpus" {
            // Away from a checkout, no corpora folder is guessed: the cases skip and say how
            // to give one; with --corpora they give the in-tree verdicts.
            let (away, _) = run("empty", &exe, empty.path(), &[]);
            assert!(away.values().all(|v| v == "skip"), "{away:?}");
            let results = reports
                .path()
                .join("empty/atomics/atomics.corpus/results.json");
            let stored = std::fs::read_to_string(results).unwrap();
            assert!(stored.contains("give --corpora DIR"), "{stored}");
            if corpora.is_dir() {
                let (given, _) = run("empty-corpora", &exe, empty.path(), &["--corpora", c]);
                assert_eq!(given, want, "with --corpora {c}");
            }
        } else {
            let (away, _) = run("empty", &exe, empty.path(), &[]);
            assert_eq!(away, want, "{suite} {filter}: an empty directory");
            assert!(
                want.values().all(|v| v == "pass"),
                "{suite} {filter}: {want:?}"
            );
        }
    }
}

/// Isolated cases run in children that get the parent's data root and corpora, also when
/// there are none: a copied binary in an empty directory runs the fixture's child case.
#[test]
fn isolated_children_run_away_from_a_checkout() {
    let cache = tmp("reloc-cache");
    let bin_dir = tmp("reloc-bin");
    let empty = tmp("reloc-empty");
    let exe = copied_binary(bin_dir.path());
    let fixture = checkout().join("harness/tests/fixtures/selftest.yaml");
    let junit = empty.path().join("r/junit.xml");
    let o = run_in(
        &exe,
        empty.path(),
        cache.path(),
        &[
            "--suite",
            fixture.to_str().unwrap(),
            "selftest.isolated.child_equal",
            "--exact",
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let v = verdicts(&junit.with_file_name("results.json"));
    assert_eq!(
        v.get("selftest.isolated.child_equal").map(String::as_str),
        Some("pass"),
        "{out}"
    );
}

/// A `--root` without suites is refused before anything runs, naming the flag and the path.
#[test]
fn a_root_without_suites_is_refused() {
    let cache = tmp("reloc-cache");
    let empty = tmp("reloc-empty");
    let o = run_in_tree(
        cache.path(),
        &[
            "--root",
            empty.path().to_str().unwrap(),
            "--suite",
            "atomics",
            "--list",
        ],
    );
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--root") && err.contains(&empty.path().display().to_string()),
        "{err}"
    );
}
