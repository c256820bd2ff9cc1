use super::*;

/// `litmus export | import` is the identity, on every catalogue test and every shipped test:
/// export writes no name its own import rejects.
#[test]
fn export_then_import_is_the_identity() {
    let mut tests = crate::atomics::catalog::catalog();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../suites/litmus");
    for e in std::fs::read_dir(&dir).unwrap() {
        tests.push(load_file(&e.unwrap().path()).unwrap());
    }
    assert!(tests.len() > 100);
    // Names and descriptions of every awkward kind, on a few catalogue tests: each either
    // survives export | import, or the test is refused for it (an empty or multi-line
    // name was exported as text the import refused).
    let names = [
        "",
        " ",
        "\n",
        "a\nb",
        "a\n",
        " a",
        "a ",
        "a\rb",
        "a\r",
        "a\tb",
        "a\u{7}b",
        "a b",
        "é",
        "a\"b",
        "a\\b",
        "PTX",
        "PTX x",
        "{",
        "}",
        "|",
        ";",
        "exists (x == 1)",
        "\"quoted\"",
        "P0@cta 0",
    ];
    let descriptions = [
        None,
        Some(""),
        Some(" "),
        Some("a\nb"),
        Some("\n"),
        Some("a\rb"),
        Some("a\tb"),
        Some("a\u{0}b"),
        Some("\""),
        Some("\\"),
        Some("a\\"),
        Some("\\\""),
        Some("{ x=1; }"),
        Some("line\n{\n}"),
        Some("line\n\"PTX y\""),
        Some(" padded "),
    ];
    let catalogue = tests.len();
    for base in tests[..catalogue]
        .iter()
        .step_by(37)
        .take(4)
        .cloned()
        .collect::<Vec<_>>()
    {
        for n in names {
            let mut t = base.clone();
            t.name = n.to_string();
            match t.validate() {
                Ok(()) => tests.push(t),
                Err(InvalidTest::Name(m)) => assert!(
                    m.contains(&format!("{n:?}")) && m.contains("one line of text"),
                    "{m}"
                ),
                Err(e) => panic!("name {n:?}: {e}"),
            }
        }
        for d in descriptions {
            let mut t = base.clone();
            t.description = d.map(str::to_string);
            match t.validate() {
                Ok(()) => tests.push(t),
                Err(InvalidTest::Description(m)) => assert!(m.contains("control"), "{m}"),
                Err(e) => panic!("description {d:?}: {e}"),
            }
        }
    }
    assert!(tests.len() > catalogue + 40, "{}", tests.len() - catalogue);
    let mut differ = Vec::new();
    for t in &tests {
        let text = dat3m::export(t);
        match dat3m::import(&text) {
            Ok(back) if back == *t && dat3m::export(&back) == text => {}
            Ok(back) => differ.push(format!("{}: {:?}\n  vs {:?}", t.name, back, t)),
            Err(e) => differ.push(format!(
                "{}: import refused its export: {e}\n{text}",
                t.name
            )),
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {}:\n{}",
        differ.len(),
        tests.len(),
        differ
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
