//! End to end: `gpucts dwarf check` exit codes and positions (issue 13 items 2-3, bad input).

use std::process::Command;

fn run(files: &[&std::path::Path]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpucts"))
        .args(["dwarf", "check"])
        .args(files)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The spec's ch. 6 example: exactly the two inconsistencies, with lines and clause.
#[test]
fn spec_example_reports_the_two_inconsistencies() {
    let f = root().join("ptx-corpus/dwarf/spec-ch6-example.ptx");
    let (code, out, _) = run(&[&f]);
    assert_eq!(code, 1, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains("`_Z3fooii` is no function") && lines[0].contains("§5.1"),
        "{out}"
    );
    assert!(
        lines[1].contains("compile unit `call1.cu`") && lines[1].contains("call_example.cu"),
        "{out}"
    );
}

const HEAD: &str =
    ".version 8.0\n.target sm_90, debug\n.address_size 64\n.file 1 \"a.cu\"\n.global .u32 g;\n";
// A CU (name a.cu) with one variable `g`: DW_AT_address_class CLASS, DW_OP_addr g.
fn dwarf(class: u8, label: &str) -> String {
    format!(
        ".section .debug_abbrev {{\n.b8 1, 17, 1, 3, 8, 0, 0, 2, 52, 0, 3, 8, 2, 10, 51, 11, 0, 0, 0\n}}\n\
         .section .debug_info {{\n.b32 28\n.b8 2, 0\n.b32 .debug_abbrev\n.b8 8\n.b8 1, 97, 46, 99, 117, 0\n\
         .b8 2, 103, 0, 9, 3\n.b64 {label}\n.b8 {class}, 0\n}}\n"
    )
}

#[test]
fn address_classes_and_references_are_checked_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = write(
        &dir,
        "good.ptx",
        format!("{HEAD}{}", dwarf(5, "g")).as_bytes(),
    );
    let (code, out, err) = run(&[&good]);
    assert_eq!(code, 0, "{out}{err}");
    // .shared class on a .global symbol: flagged with §5.2 at the DIE's line.
    let wrong = write(
        &dir,
        "wrong.ptx",
        format!("{HEAD}{}", dwarf(8, "g")).as_bytes(),
    );
    let (code, out, _) = run(&[&wrong]);
    assert_eq!(code, 1);
    assert!(
        out.contains("wrong.ptx:15:") && out.contains("ADDR_shared_space") && out.contains("§5.2"),
        "{out}"
    );
    let bad = write(
        &dir,
        "bad.ptx",
        format!("{HEAD}{}", dwarf(5, "nosuch")).as_bytes(),
    );
    let (code, out, _) = run(&[&bad]);
    assert_eq!(code, 1);
    assert!(out.contains("bad.ptx:16:6: `nosuch`"), "{out}");
}

#[test]
fn bad_input_is_a_finding_or_exit_2_with_a_position() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = write(&dir, "garbage.bin", &[0xff, 0xfe, 0x00, 0x13]);
    let (code, _, err) = run(&[&garbage]);
    assert_eq!(code, 2);
    assert!(err.contains("garbage.bin: byte 0"), "{err}");
    // An x86-64 ELF header: another machine's object.
    let mut elf = vec![0u8; 64];
    elf[..4].copy_from_slice(b"\x7fELF");
    elf[4] = 2;
    elf[5] = 1;
    elf[18] = 62;
    let other = write(&dir, "x86.o", &elf);
    let (code, _, err) = run(&[&other]);
    assert_eq!(code, 2);
    assert!(err.contains("e_machine 62"), "{err}");
    // A section length past the end (unit length 200): a finding at the section's line.
    let long = dwarf(5, "g").replace(".b32 28", ".b32 200");
    let f = write(&dir, "long.ptx", format!("{HEAD}{long}").as_bytes());
    let (code, out, _) = run(&[&f]);
    assert_eq!(code, 1);
    assert!(
        out.contains("long.ptx:") && out.contains("unreadable .debug_info"),
        "{out}"
    );
    // An abbreviation code that does not exist, and a DIE cut mid-attribute.
    for (name, from, to) in [
        ("abbrev.ptx", ".b8 2, 103", ".b8 7, 103"),
        ("cut.ptx", ".b32 28", ".b32 20"),
    ] {
        let text = dwarf(5, "g").replace(from, to);
        let f = write(&dir, name, format!("{HEAD}{text}").as_bytes());
        let (code, out, err) = run(&[&f]);
        assert_eq!(code, 1, "{name}: {out}{err}");
        assert!(out.contains("unreadable .debug_info"), "{name}: {out}");
    }
    // A bad label in a .b8 list: exit 2 with line and column.
    let f = write(
        &dir,
        "b8.ptx",
        format!("{HEAD}.section .debug_info {{\n.b8 1, g\n}}\n").as_bytes(),
    );
    let (code, _, err) = run(&[&f]);
    assert_eq!(code, 2);
    assert!(
        err.contains("b8.ptx:7:8") && err.contains("needs .b32 or .b64"),
        "{err}"
    );
}

/// The closing summary counts what the files hold: the eight hand-written files carry one defect
/// each except `conforming` (none; the dangling label is two findings: the reference and the
/// location), seven of them a resolvable location (all but the dangling label); a garbage file
/// is unreadable.
#[test]
fn summary_counts_files_comparisons_and_findings() {
    let neg = root().join("ptx-corpus/dwarf/negative");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&neg)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 8);
    let refs: Vec<&std::path::Path> = files.iter().map(|p| p.as_path()).collect();
    let (code, out, err) = run(&refs);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(out.lines().count(), 8, "{out}");
    assert!(
        err.contains("8 files (0 unreadable), 7 variables' address classes compared with their locations, 8 findings"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let junk = write(&dir, "junk.ptx", b"\x00\x01 not ptx");
    let (code, _, err) = run(&[&junk, refs[0]]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("2 files (1 unreadable)"), "{err}");
}
