//! The errata the catalogue records, checked against the specification's own text and the
//! headers NVIDIA released: an example the catalogue calls wrong must fail to compile against
//! every released `nv-p2p.h`, and its corrected form must compile, so the verdict is the
//! compiler's and the header's, not the catalogue's.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Catalogue;

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// The C function of the specification's example that begins with `signature`: its lines up
/// to the first line that is a lone `}`, each stripped of the text's indentation.
fn example(text: &str, signature: &str) -> String {
    let mut lines = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with(signature));
    let mut out = String::new();
    for l in lines.by_ref() {
        out.push_str(l.trim());
        out.push('\n');
        if l.trim() == "}" {
            return out;
        }
    }
    panic!("the specification has no example beginning `{signature}`")
}

/// What gcc says of `body` after the prelude, against the header in `release`: `Ok(())` when
/// it compiles, else its diagnostics.
fn compile(release: &Path, body: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("example.c");
    // The header includes nothing itself: it expects the kernel's fixed-width types.
    let prelude = "#include <stdint.h>\n#include <stddef.h>\n#include <nv-p2p.h>\n\
                   typedef struct { nvidia_p2p_page_table_t *page_table; } my_state;\n\
                   static void wait_for_pending_transfers(my_state *s) { (void)s; }\n";
    std::fs::write(&file, format!("{prelude}{body}")).expect("write the example");
    let out = Command::new("gcc")
        .env("LC_ALL", "C")
        .args([
            "-fsyntax-only",
            "-Werror=implicit-function-declaration",
            "-Werror=int-conversion",
        ])
        .arg("-I")
        .arg(release)
        .arg(&file)
        .output()
        .expect("run gcc");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn the_gpudirect_examples_recorded_as_errata_fail_against_every_released_header() {
    let spec = shared().join("spec/gpudirect-rdma.txt");
    let headers = shared().join("corpora/nv-p2p");
    crate::require!(corpus: spec.is_file(), "../shared/spec/gpudirect-rdma.txt");
    crate::require!(corpus: headers.is_dir(), "../shared/corpora/nv-p2p");
    crate::require!(Command::new("gcc").arg("--version").output().is_ok(), "gcc");
    let text = std::fs::read_to_string(&spec).expect("read the specification");
    let unpin = example(&text, "void unpin_memory(");
    let callback = example(&text, "void free_callback(");
    // The same functions as the Kernel API section declares the calls (§4.3).
    let unpin_fixed = unpin.replace(
        "nvidia_p2p_put_pages(0, 0, address, size, page_table)",
        "nvidia_p2p_put_pages(0, 0, (uint64_t)(uintptr_t)address, page_table)",
    );
    let callback_fixed = callback.replace("nvidia_p2p_free_pages(", "nvidia_p2p_free_page_table(");
    assert_ne!(unpin, unpin_fixed, "the §3.3 example changed: {unpin}");
    assert_ne!(
        callback, callback_fixed,
        "the §3.4 example changed: {callback}"
    );

    let mut releases: Vec<PathBuf> = std::fs::read_dir(&headers)
        .expect("list the releases")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("nv-p2p.h").is_file())
        .collect();
    releases.sort();
    assert!(releases.len() >= 8, "releases: {releases:?}");
    for r in &releases {
        let e = compile(r, &unpin).expect_err("the §3.3 example compiled");
        assert!(
            e.contains("too many arguments to function 'nvidia_p2p_put_pages'"),
            "{}: {e}",
            r.display()
        );
        let e = compile(r, &callback).expect_err("the §3.4 example compiled");
        assert!(
            e.contains("implicit declaration of function 'nvidia_p2p_free_pages'"),
            "{}: {e}",
            r.display()
        );
        compile(r, &unpin_fixed).unwrap_or_else(|e| panic!("{}: {e}", r.display()));
        compile(r, &callback_fixed).unwrap_or_else(|e| panic!("{}: {e}", r.display()));
    }

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let catalogue = Catalogue::load(&root).unwrap_or_else(|e| panic!("{e}"));
    for (id, names) in [
        ("gpudirect-rdma §3.3 put_pages", "nvidia_p2p_put_pages"),
        (
            "gpudirect-rdma §3.4 callback waits",
            "nvidia_p2p_free_pages",
        ),
    ] {
        let erratum = catalogue
            .get(id)
            .and_then(|c| c.erratum.as_deref())
            .unwrap_or_else(|| panic!("`{id}` records no erratum"));
        assert!(erratum.contains(names), "{id}: {erratum}");
    }
}
