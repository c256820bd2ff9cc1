use super::*;
use std::collections::BTreeSet;

const MP: &str = "name: MP\nthreads:\n  - cta: 0\n    ops:\n      - st: {loc: data, val: 42, sem: relaxed, scope: gpu}\n      - st: {loc: flag, val: 1, sem: release, scope: gpu}\n  - cta: 1\n    ops:\n      - ld: {reg: r0, loc: flag, sem: acquire, scope: gpu}\n      - ld: {reg: r1, loc: data, sem: relaxed, scope: gpu}\ncondition: 'exists (P1:r0 == 1 /\\ P1:r1 == 0)'\n";

#[test]
fn deep_conditions_are_refused_without_overflowing_the_stack() {
    // 10,000 nested parentheses or `~` would overflow the stack of a recursive parser.
    for deep in [
        format!(
            "exists {}P1:r0 == 1{}",
            "(".repeat(10_000),
            ")".repeat(10_000)
        ),
        format!("exists ({}P1:r0 == 1)", "~".repeat(10_000)),
    ] {
        assert_eq!(parse_condition(&deep), Err(ConditionError::TooDeep));
        let e = parse_condition(&deep).unwrap_err().to_string();
        assert!(e.contains("more than 100 deep"), "{e}");
    }
    let ok = format!("exists {}P1:r0 == 1{}", "(".repeat(50), ")".repeat(50));
    assert!(parse_condition(&ok).is_ok());
}

#[test]
fn operands_and_addresses_must_be_names_or_integers() {
    // `1+1` as an operand or an empty address, if accepted, would change the verdict.
    let e = from_yaml(&MP.replace("val: 42", "val: 1+1"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("5:9:") && e.contains("`1+1`"), "{e}");
    let e = from_yaml(&MP.replace("loc: data, val: 42", "loc: \"\", val: 42"))
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("5:9:") && e.contains("address `[]`"), "{e}");
    let e =
        dat3m::import("PTX t\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak [], 1 ;\nexists (x == 1)\n")
            .unwrap_err();
    assert_eq!(e.line, 4, "{e}");
    let e =
        dat3m::import("PTX t\n{ x=0; }\n P0@cta 0,gpu 0 ;\n st.weak x, 1+1 ;\nexists (x == 1)\n")
            .unwrap_err();
    assert_eq!(e.line, 4, "{e}");
}

#[test]
fn ld_release_in_yaml_is_reported_at_its_line() {
    // Errors found after parsing carry the line of what they name.
    let e = from_yaml(&MP.replace("flag, sem: acquire", "flag, sem: release")).unwrap_err();
    // The error names the operation (P1's first), which the reader places at its line.
    assert!(
        matches!(
            &e,
            YamlError::Invalid {
                line: 9,
                column: 9,
                source: InvalidTest::Op {
                    thread: 1,
                    op: 1,
                    ..
                }
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(
        e.starts_with("9:9:") && e.contains("`ld` cannot be .release"),
        "{e}"
    );
    let e = from_yaml(&MP.replace("P1:r1 == 0", "P1:r9 == 0")).unwrap_err();
    assert!(
        matches!(
            &e,
            YamlError::Invalid {
                line: 11,
                column: 12,
                source: InvalidTest::Condition(_)
            }
        ),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.starts_with("11:12:") && e.contains("P1:r9"), "{e}");
}

#[test]
fn an_unlisted_location_in_a_test_that_lists_its_locations_is_refused() {
    // P0's second operation (line 7 once `locations:` is line 2) stores to `flgx`,
    // which the list omits.
    let listed = MP.replacen(
        "threads:",
        "locations: [{name: data}, {name: flag}]\nthreads:",
        1,
    );
    assert!(from_yaml(&listed).is_ok());
    let e = from_yaml(&listed.replacen("loc: flag", "loc: flgx", 1)).unwrap_err();
    assert!(
        matches!(
            &e,
            YamlError::Invalid {
                line: 7,
                source: InvalidTest::Op {
                    thread: 0,
                    op: 2,
                    ..
                },
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("`flgx` is not listed"), "{e}");
    // Without a `locations:` list every location is implicit, as in Dat3M's format.
    assert!(from_yaml(&MP.replacen("loc: flag", "loc: flgx", 1)).is_ok());
}

#[test]
fn a_register_initialised_twice_is_refused() {
    let e = dat3m::import("PTX t\n{ x=0; P0:r0=1; P0:r0=2; }\n P0@cta 0,gpu 0 ;\n ld.weak r0, x ;\nexists (P0:r0 == 1)\n")
        .unwrap_err();
    assert!(
        e.line == 2 && e.msg.contains("`P0:r0` initialised twice"),
        "{e}"
    );
    // YAML: a map key given twice.
    let e = from_yaml(&MP.replace("  - cta: 1\n", "  - cta: 1\n    regs: {r0: 1, r0: 2}\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`r0` is given twice"), "{e}");
}

#[test]
fn integers_are_exactly_the_i64_range() {
    // The bounds are exactly i64's: i64::MIN is accepted, one past either end refused.
    assert_eq!(parse_int("-9223372036854775808"), Some(i64::MIN));
    assert_eq!(parse_int("9223372036854775807"), Some(i64::MAX));
    assert_eq!(parse_int("9223372036854775808"), None);
    assert_eq!(parse_int("-9223372036854775809"), None);
    assert_eq!(parse_int("0xffffffffffffffff"), None);
    assert_eq!(parse_int("-0x8000000000000000"), Some(i64::MIN));
    assert_eq!(parse_int("--1"), None);
    assert_eq!(parse_int("010"), Some(8), "PTX octal");
}

/// A huge init block is refused at its first location past [`MAX_LOCATIONS`], before the
/// rest is read (100,000 locations would take minutes in the checker); up to the bound it reads.
#[test]
fn an_init_block_past_the_location_bound_is_refused_at_the_entry() {
    let block = |n: usize| -> String {
        let locs: String = (0..n).map(|i| format!("l{i}=0; ")).collect();
        format!("PTX t\n{{ {locs} }}\n P0@cta 0,gpu 0 ;\n st.weak l0, 1 ;\nexists (l0 == 1)\n")
    };
    let text = block(100_000);
    let e = dat3m::import(&text).unwrap_err();
    let col = text.find(&format!("l{MAX_LOCATIONS}=")).unwrap() - "PTX t\n".len() + 1;
    assert_eq!((e.line, e.col), (2, col), "{e}");
    assert!(
        e.msg
            .contains("more than 1024 locations; a litmus test has at most 1024"),
        "{e}"
    );
    let t = dat3m::import(&block(MAX_LOCATIONS)).unwrap();
    assert_eq!(t.locations.len(), MAX_LOCATIONS);
    // The checker refuses it for its events, having built them in linear time.
    let e = crate::model::try_check(&t).unwrap_err();
    assert!(e.to_string().contains("1025 events"), "{e}");
}

/// A name `litmus export` cannot write on one `PTX NAME` line is refused at `name:`.
#[test]
fn yaml_names_and_descriptions_export_cannot_write_are_refused_at_their_key() {
    for (name, at, why) in [
        ("\"\"", "1:7", "is empty"),
        ("\"a\\nb\"", "1:7", "line break"),
        // A block scalar's position is its first line of text.
        ("|\n  a\n  b", "2:3", "line break"),
        ("\" a\"", "1:7", "blank"),
    ] {
        let text = MP.replacen("name: MP", &format!("name: {name}"), 1);
        let e = from_yaml(&text).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{at}: test name ")) && e.contains(why),
            "{name}: {e}"
        );
    }
    let text = MP.replacen("name: MP\n", "name: MP\ndescription: \"a\\rb\"\n", 1);
    let e = from_yaml(&text).unwrap_err().to_string();
    assert!(e.starts_with("2:14: ") && e.contains("'\\r'"), "{e}");
}

/// A location listed twice is refused at the second listing (export wrote it twice, and
/// its import refused that).
#[test]
fn a_location_listed_twice_is_refused_at_the_second() {
    let text = "name: dup\nlocations:\n  - {name: x, init: 0}\n  - {name: x, init: 1}\nthreads:\n  - cta: 0\n    ops:\n      - st: {loc: x, val: 1}\ncondition: 'exists (x == 1)'\n";
    let e = from_yaml(text).unwrap_err().to_string();
    assert!(e.starts_with("4:5: location `x` listed twice"), "{e}");
}

/// The same bounds in YAML, each at the first location, thread or operation past it.
#[test]
fn yaml_tests_past_the_size_bounds_are_refused_where_the_bound_is_crossed() {
    let mut text = "name: big\nlocations:\n".to_string();
    for i in 0..=MAX_LOCATIONS {
        text += &format!("  - {{name: l{i}, init: 0}}\n");
    }
    text += "threads:\n  - cta: 0\n    ops:\n      - st: {loc: l0, val: 1}\ncondition: 'exists (l0 == 1)'\n";
    let e = from_yaml(&text).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}:5: ", MAX_LOCATIONS + 3))
            && e.contains("lists 1025 locations; a litmus test has at most 1024"),
        "{e}"
    );
    let mut text = "name: wide\nthreads:\n".to_string();
    for i in 0..=MAX_THREADS {
        text += &format!("  - cta: {i}\n    ops:\n      - st: {{loc: x, val: 1}}\n");
    }
    text += "condition: 'exists (x == 1)'\n";
    let e = from_yaml(&text).unwrap_err().to_string();
    let line = 3 + 3 * MAX_THREADS;
    assert!(
        e.starts_with(&format!("{line}:5: "))
            && e.contains("257 threads; a litmus test has at most 256"),
        "{e}"
    );
    let mut text = "name: long\nthreads:\n  - cta: 0\n    ops:\n".to_string();
    for _ in 0..=MAX_OPS {
        text += "      - st: {loc: x, val: 1}\n";
    }
    text += "condition: 'exists (x == 1)'\n";
    let e = from_yaml(&text).unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("{}:9: ", 5 + MAX_OPS)) && e.contains("more than 4096 operations"),
        "{e}"
    );
}

#[test]
fn condition_forms_parse_alike() {
    // Dat3M writes `P1:r0 == 1`; herd-style tests write `1:r0 = 1`.
    let a = parse_condition("exists (P1:r0 == 1 /\\ P1:r1 == 0)").unwrap();
    let b = parse_condition("exists (1:r0 = 1 /\\ 1:r1 = 0)").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.to_string(), "exists (P1:r0 == 1 /\\ P1:r1 == 0)");
}

#[test]
fn percent_registers() {
    // Some generated PTX litmus tests name registers `%r1`.
    let c = parse_condition("~exists (P1:%r1 == 1 /\\ 1:%r2 = 1)").unwrap();
    let mut terms = BTreeSet::new();
    c.prop.terms(&mut terms);
    assert!(terms.contains(&Term::Reg {
        thread: 1,
        reg: "%r2".into()
    }));
    assert_eq!(parse_condition(&c.to_string()).unwrap(), c);
}

#[test]
fn condition_precedence_and_roundtrip() {
    let c = parse_condition("~exists (x == 1 \\/ P0:r0 != 2 /\\ ~(y == 3 \\/ y == 4))").unwrap();
    assert_eq!(c.quantifier, Quantifier::NotExists);
    match &c.prop {
        Prop::Or(v) => {
            assert_eq!(v.len(), 2);
            assert!(matches!(&v[1], Prop::And(a) if a.len() == 2));
        }
        other => panic!("expected an or, got {other:?}"),
    }
    assert_eq!(parse_condition(&c.to_string()).unwrap(), c);
}

#[test]
fn condition_errors_name_the_problem() {
    let e = parse_condition("exists (P1:r0 == )")
        .unwrap_err()
        .to_string();
    assert!(e.contains("expected a number"), "{e}");
    let e = parse_condition("exists (P1:r0 == 1 @)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unexpected character"), "{e}");
}

const MP_YAML: &str = r#"
name: MP
locations: [{name: x}, {name: y}]
threads:
  - cta: 0
    ops:
      - st: {loc: x, val: 1, sem: relaxed, scope: gpu}
      - st: {loc: y, val: 1, sem: release, scope: gpu}
  - cta: 1
    ops:
      - ld: {reg: r0, loc: y, sem: acquire, scope: gpu}
      - ld: {reg: r1, loc: x}
condition: 'exists (P1:r0 == 1 /\ P1:r1 == 0)'
"#;

#[test]
fn yaml_register_operands_and_moves() {
    let t = from_yaml(
        "name: dep\nthreads:\n  - cta: 0\n    regs: {r9: 3}\n    ops:\n      - ld: {reg: r0, loc: x}\n      - st: {loc: y, val: r0}\n      - mov: {reg: r1, val: r9}\ncondition: 'exists (y == 0)'\n",
    )
    .unwrap();
    assert_eq!(
        t.threads[0].ops[1],
        Op::St {
            loc: "y".into(),
            val: Operand::Reg("r0".into()),
            sem: Sem::Weak,
            scope: None
        }
    );
    assert_eq!(t.threads[0].regs.get("r9"), Some(&3));
    assert_eq!(from_yaml(&to_yaml(&t).unwrap()).unwrap(), t);
}

#[test]
fn yaml_roundtrip() {
    let t = from_yaml(MP_YAML).unwrap();
    assert_eq!(t.threads.len(), 2);
    assert_eq!(
        t.threads[1].ops[1],
        Op::Ld {
            reg: "r1".into(),
            loc: "x".into(),
            sem: Sem::Weak,
            scope: None
        }
    );
    let again = from_yaml(&to_yaml(&t).unwrap()).unwrap();
    assert_eq!(again, t);
}

#[test]
fn yaml_rejects_unknown_keys_and_bad_semantics() {
    let bad = MP_YAML.replace("sem: release", "sem: release, scop: gpu");
    assert!(from_yaml(&bad).is_err());
    let bad = MP_YAML.replace(
        "{reg: r0, loc: y, sem: acquire",
        "{reg: r0, loc: y, sem: release",
    );
    let e = from_yaml(&bad).unwrap_err().to_string();
    assert!(e.contains("P1 op 1"), "{e}");
    let bad = MP_YAML.replace("P1:r1 == 0", "P2:r1 == 0");
    assert!(from_yaml(&bad)
        .unwrap_err()
        .to_string()
        .contains("no thread P2"));
}

#[test]
fn scope_inclusion_follows_placement() {
    let t = |cta, cluster, gpu| Thread {
        cta,
        cluster,
        gpu,
        warp: None,
        regs: BTreeMap::new(),
        ops: vec![],
    };
    let a = t(0, Some(0), 0);
    let b = t(1, Some(0), 0);
    let c = t(2, None, 1);
    assert!(!a.scope_includes(Scope::Cta, &b));
    assert!(a.scope_includes(Scope::Cluster, &b));
    assert!(!a.scope_includes(Scope::Gpu, &c));
    assert!(a.scope_includes(Scope::Sys, &c));
}

/// The names each vocabulary reads and writes, as Dat3M's PTX litmus syntax and the PTX ISA
/// spell them, and every name parses back to its value.
#[test]
fn vocabulary_names_round_trip() {
    use strum::VariantArray;
    let mnemonics: Vec<&str> = BranchCond::VARIANTS.iter().map(|c| c.mnemonic()).collect();
    assert_eq!(mnemonics, ["beq", "bne", "blt", "ble", "bgt", "bge"]);
    let local: Vec<&str> = LocalOp::VARIANTS.iter().map(|o| o.name()).collect();
    assert_eq!(local, ["add", "sub", "mul", "div", "and", "or", "xor"]);
    let proxies: Vec<&str> = Proxy::VARIANTS.iter().map(|p| p.name()).collect();
    assert_eq!(
        proxies,
        ["generic", "texture", "surface", "constant", "async"]
    );
    let fences: Vec<&str> = ProxyFenceKind::VARIANTS.iter().map(|k| k.name()).collect();
    assert_eq!(fences, ["texture", "surface", "constant", "alias", "async"]);
    let placements: Vec<&str> = Placement::VARIANTS.iter().map(|p| p.name()).collect();
    assert_eq!(
        placements,
        ["intra_cta", "inter_cta", "intra_cluster", "inter_cluster"]
    );
    assert_eq!(Quantifier::NotExists.keyword(), "~exists");
    for &c in BranchCond::VARIANTS {
        assert_eq!(BranchCond::from_mnemonic(c.mnemonic()), Some(c));
    }
    for &o in LocalOp::VARIANTS {
        assert_eq!(LocalOp::parse(o.name()), Some(o));
    }
    for &p in Proxy::VARIANTS {
        assert_eq!(Proxy::parse(p.name()), Some(p));
    }
    for &k in ProxyFenceKind::VARIANTS {
        assert_eq!(ProxyFenceKind::parse(k.name()), Some(k));
    }
    assert_eq!(Proxy::parse("Generic"), None);
}
