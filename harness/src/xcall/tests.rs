use super::*;
use crate::abi::types::Scalar;
use sig::{Class, Val};

/// NVRTC 12.9, libNVVM 2.0 and clang 19.1.7: the producer versions the waivers pin.
const PINS: [(&str, &str); 3] = [
    ("libnvvm", "2.0"),
    ("nvrtc", "12.9"),
    ("clang", "Debian clang version 19.1.7 (3+b1)"),
];

/// The repository's waiver file and a fingerprint of the producers `names` (of [`PINS`]).
fn waiver_file(
    names: &[&str],
) -> (
    crate::waivers::Waivers,
    std::collections::BTreeMap<String, String>,
) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let waivers = crate::waivers::Waivers::load(&root.join(crate::waivers::DEFAULT_FILE)).unwrap();
    let fingerprint = PINS
        .into_iter()
        .filter(|(k, _)| names.contains(k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (waivers, fingerprint)
}

/// A value libNVVM passes as a `byval` aggregate (emit.rs: everything but the integer,
/// float and pointer scalars) with an alignment of 1 or 2.
fn byval_below_4(v: &Val) -> bool {
    match v {
        Val::Scalar(Scalar::Half) => true,
        Val::Scalar(_) => false,
        _ => v.size_align().1 < 4,
    }
}

/// The waiver file is the record of the xcall divergences; its seed lists (taken from a
/// run) must be exactly what each divergence's rule predicts from the signature types:
/// libNVVM raises byval alignment 1/2 to 4 (every pair with libNVVM on one side), and
/// ptxas rejects its indirect calls with such a parameter (its `.callprototype` keeps the
/// old alignment). clang's return alignment comes from its IR types, so only its shape is
/// checked: the signature returns an aggregate.
#[test]
fn waivers_follow_the_rules() {
    let (waivers, fingerprint) = waiver_file(&["libnvvm", "clang"]);
    // Every tool key constrains (the test names the tools the file's keys need).
    let waived = |id: String| {
        waivers
            .find(&id, Capability::ALL, &fingerprint)
            .map(|w| w.waiver().id.clone())
    };
    let (mut raised, mut rejected, mut clang_returns) = (0, 0, 0);
    for s in generated_signatures() {
        // Signatures libNVVM cannot express skip (no waiver needed).
        let byval = emit::expresses(Producer::named("libnvvm"), s).is_ok()
            && s.params.iter().any(byval_below_4);
        for other in ["gpucts", "nvrtc", "llvm"] {
            for id in [
                format!("xcall.pair.{other}.libnvvm.{}", s.seed),
                format!("xcall.pair.libnvvm.{other}.{}", s.seed),
            ] {
                let w = waived(id.clone());
                let want = if byval && s.indirect && id.starts_with("xcall.pair.libnvvm") {
                    Some("W-XCALL-LIBNVVM-CALLPROTOTYPE-ALIGN")
                } else if byval {
                    Some("W-XCALL-LIBNVVM-BYVAL-ALIGN4")
                } else {
                    None
                };
                assert_eq!(w.as_deref(), want, "{id}: {}", s.describe());
            }
        }
        let self_pair = waived(format!("xcall.self.libnvvm.{}", s.seed));
        assert_eq!(
            self_pair.is_some(),
            byval && s.indirect,
            "seed {}: {}",
            s.seed,
            s.describe()
        );
        if waived(format!("xcall.pair.nvrtc.clang.{}", s.seed)).as_deref()
            == Some("W-XCALL-CLANG-RETURN-ALIGN")
        {
            clang_returns += 1;
            let ret = s.ret.as_ref().map(Val::class);
            assert!(
                matches!(ret, Some(Class::Aggregate { .. })),
                "seed {}: {}",
                s.seed,
                s.describe()
            );
        }
        raised += usize::from(byval);
        rejected += usize::from(byval && s.indirect);
    }
    assert!(raised > 0 && rejected > 0 && clang_returns > 0);
}

/// A type whose alignment attribute raises it above its members' (CUDA's vector structs,
/// the `__align__(N)` wrappers): what clang-19's returns lose (W-XCALL-CLANG-RETURN-ALIGN).
fn attribute_aligned(v: &Val) -> bool {
    use crate::abi::layout::{scalar_align, vector_align, AddressSize};
    match v {
        Val::Vector(s, n) => {
            vector_align(*s, *n, AddressSize::A64) > scalar_align(*s, AddressSize::A64)
        }
        Val::Agg(g) => g.align_attr.is_some(),
        _ => false,
    }
}

/// The corpus pairs' waivers follow each divergence's rule from the signature types: the
/// corpus writes the §2.3 table, so a compiler's divergence shows against it as against
/// the reference emitter (the first divergence in the file's order where two apply).
/// The oldest-target cases carry only ptxas's rejection of libNVVM's indirect calls.
/// clang-19's CUDA front end, at any optimisation level.
fn clang_cuda(p: Producer) -> bool {
    p.language_of(&emit::LANGUAGES) == Some(crate::backend::producer::Language::ClangCuda)
}

#[test]
fn corpus_and_oldest_waivers_follow_the_rules() {
    let (waivers, fingerprint) = waiver_file(&["libnvvm", "nvrtc", "clang"]);
    let waived = |id: &str| {
        waivers
            .find(id, Capability::ALL, &fingerprint)
            .map(|w| w.waiver().id.clone())
    };
    let (c, l) = (Producer::named("corpus"), Producer::named("libnvvm"));
    // The producers the suite pairs (its `xcall.self.<producer>.<seed>` ids), whose
    // waivers these rules predict.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite =
        crate::suite::load_file(&root.join("suites/xcall.yaml"), &crate::areas::all()).unwrap();
    let in_suite: Vec<Producer> = producers()
        .iter()
        .copied()
        .filter(|p| {
            let prefix = format!("xcall.self.{}.", p.name());
            suite.cases.iter().any(|k| k.id.starts_with(&prefix))
        })
        .collect();
    assert_eq!(in_suite.len(), 7, "{in_suite:?}");
    let mut seen = std::collections::BTreeSet::new();
    for s in all_signatures()
        .iter()
        .filter(|s| Target::Oldest.has(s.seed))
    {
        let byval = s.params.iter().any(byval_below_4);
        let floats = s.ret.iter().chain(&s.params).any(float);
        let over = s.ret.as_ref().is_some_and(attribute_aligned);
        let corpus_sig = corpus::is_corpus(s.seed);
        let generating: Vec<Producer> = in_suite
            .iter()
            .copied()
            .filter(|p| !p.is_hand_written())
            .collect();
        let others: &[Producer] = if corpus_sig { &in_suite } else { &generating };
        for &o in others {
            let pairs: Vec<(Producer, Producer)> = if corpus_sig {
                vec![(c, o), (o, c)]
            } else {
                generating.iter().map(|&b| (o, b)).collect()
            };
            for (a, b) in pairs {
                let nvvm = a == l || b == l;
                // The compilers, not the table-literal emitters.
                let compiler = o.capability().is_some();
                let proto = (a == l && byval && s.indirect && emit::expresses(l, s).is_ok())
                    .then_some("W-XCALL-LIBNVVM-CALLPROTOTYPE-ALIGN");
                let want = if proto.is_some() {
                    proto
                } else if nvvm && byval {
                    Some("W-XCALL-LIBNVVM-BYVAL-ALIGN4")
                } else if clang_cuda(o) && over {
                    Some("W-XCALL-CLANG-RETURN-ALIGN")
                } else if compiler && floats {
                    Some("W-XCALL-FLOAT-PARAMS-AS-BITS")
                } else {
                    None
                };
                // the oldest target and the Jetson ones link the same signatures
                for t in Target::ALL.into_iter().filter(|t| *t != Target::Current) {
                    let id = t.case_id(a, b, s.seed);
                    assert_eq!(waived(&id).as_deref(), proto, "{id}: {}", s.describe());
                }
                if corpus_sig {
                    let id = Target::Current.case_id(a, b, s.seed);
                    assert_eq!(waived(&id).as_deref(), want, "{id}: {}", s.describe());
                    seen.extend(want);
                }
            }
        }
    }
    // Every divergence shows against the hand-written corpus.
    assert_eq!(seen.len(), 4, "{seen:?}");
}

/// One set of oldest-target batches serves every pair: each pair's oldest target (the
/// newer of the two producers' and the linker's) is [`OLDEST`].
#[test]
fn every_pair_has_one_oldest_target() {
    for &a in producers() {
        for &b in producers() {
            assert_eq!(pair_oldest(a, b), OLDEST, "{a} {b}");
        }
    }
    assert_eq!(
        pair_oldest(Producer::named("clang"), Producer::named("llvm")),
        OLDEST_LINKABLE
    );
}

/// The limits `oldest_target` records, measured again with the installed tools: each
/// producer compiles for its oldest target and refuses the one before it; ptxas and
/// nvJitLink assemble and link for sm_50 and refuse sm_37.
#[test]
fn oldest_targets_are_measured() {
    let tc = Toolchain::discover_system();
    crate::require!(tc.has(Capability::Nvrtc), "nvrtc");
    crate::require!(tc.has(Capability::Libnvvm), "libnvvm");
    crate::require!(tc.has(Capability::Ptxas), "ptxas");
    crate::require!(tc.has(Capability::Nvjitlink), "nvjitlink");
    crate::require!(tc.has(Capability::Clang), "clang");
    let cu = "extern \"C\" __device__ int f(int x) { return x + 1; }\n";
    let target = |ptx: &str| {
        ptx.lines()
            .find(|l| l.starts_with(".target"))
            .map(|l| l.trim().to_string())
            .unwrap_or_default()
    };
    let ok = tc
        .nvrtc(
            cu,
            "t.cu",
            &[
                "--gpu-architecture=compute_50",
                "--relocatable-device-code=true",
            ],
        )
        .unwrap();
    assert_eq!(target(&ok), ".target sm_50");
    let e = tc
        .nvrtc(
            cu,
            "t.cu",
            &[
                "--gpu-architecture=compute_37",
                "--relocatable-device-code=true",
            ],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid value for --gpu-architecture"), "{e}");
    let ir = emit::ir_callee(emit::IrDialect::Nvvm, &[&corpus::signatures()[0]]);
    let ok = tc.nvvm(&ir, &["-arch=compute_50"]).unwrap();
    assert_eq!(target(&ok), ".target sm_50");
    let e = tc.nvvm(&ir, &["-arch=compute_37"]).unwrap_err().to_string();
    assert!(e.contains("compute_37 is an unsupported option"), "{e}");
    let lang = crate::backend::toolchain::ClangLang::Cuda;
    // clang-19 without CUDA's headers (-nocudainc): the attribute `__device__` stands for.
    let cu = cu.replace("__device__", "__attribute__((device))");
    let ok = tc.clang_ptx_for(&cu, lang, "sm_20", CLANG_ARGS).unwrap();
    assert_eq!(target(&ok), ".target sm_20");
    let e = tc
        .clang_ptx_for(&cu, lang, "sm_10", CLANG_ARGS)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("unsupported CUDA gpu architecture: sm_10"),
        "{e}"
    );
    let ll = "target triple = \"nvptx64-nvidia-cuda\"\ndefine void @f() {\n  ret void\n}\n";
    let ok = crate::backend::toolchain::llc::llc_ptx(&tc, ll, "sm_20", &[]).unwrap();
    assert_eq!(target(&ok), ".target sm_20");
    // ptxas 12.9 and nvJitLink 12.9 (which runs it): sm_50 and not below.
    let ptx = corpus::source(Role::Callee);
    let cubin = tc.ptxas(&ptx, "sm_50", &["-c"]).unwrap();
    let e = tc.ptxas(&ptx, "sm_37", &["-c"]).unwrap_err().to_string();
    assert!(
        e.contains("Value 'sm_37' is not defined for option 'gpu-name'"),
        "{e}"
    );
    let inputs = [(LinkInputKind::Cubin, "c.cubin", cubin.as_slice())];
    tc.nvjitlink(&inputs, &["-arch=sm_50"]).unwrap();
    let p = [(LinkInputKind::Ptx, "c.ptx", ptx.as_bytes())];
    let e = tc.nvjitlink(&p, &["-arch=sm_37"]).unwrap_err().to_string();
    assert!(e.contains("Value 'sm_37' is not defined"), "{e}");
}

/// A `float`/`double` parameter or return value.
fn float(v: &Val) -> bool {
    matches!(v, Val::Scalar(Scalar::Float) | Val::Scalar(Scalar::Double))
}

/// The driver's JIT refuses a pair with "Prototype doesn't match" for the float signatures
/// (W-XCALL-DRIVER-JIT-FLOAT-PROTOTYPE): the waiver excuses that line for exactly the
/// generated and corpus signatures with a float or double parameter or return value, and for
/// no other function, and never the link failure's header alone.
#[test]
fn driver_jit_float_waiver_names_only_float_signatures() {
    let (waivers, mut fingerprint) = waiver_file(&["libnvvm", "nvrtc", "clang"]);
    fingerprint.insert("driver".into(), "580.159.04".into());
    let applied = waivers
        .find("xcall.gpu.gpucts.nvrtc", Capability::ALL, &fingerprint)
        .expect("the waiver lists the pair on driver 580");
    assert_eq!(applied.waiver().id, "W-XCALL-DRIVER-JIT-FLOAT-PROTOTYPE");
    let all: Vec<sig::Signature> = generated_signatures()
        .iter()
        .cloned()
        .chain(corpus::signatures().iter().cloned())
        .collect();
    let mut wrong = Vec::new();
    for s in &all {
        let has_float = s.ret.iter().chain(&s.params).any(float);
        let line = format!(
            "error   : Prototype doesn't match for 'xcall_f{}' in 'nvrtc-callee.ptx', first defined in 'gpucts-caller.ptx'",
            s.seed
        );
        if applied.excuses(&line) != has_float {
            wrong.push(format!("{} (float: {has_float})", s.seed));
        }
    }
    assert!(
        wrong.is_empty(),
        "seeds the waiver judges wrongly: {wrong:?}"
    );
    assert!(all.iter().any(|s| s.ret.iter().chain(&s.params).any(float)));
    assert!(all
        .iter()
        .any(|s| !s.ret.iter().chain(&s.params).any(float)));
    let header = "nvrtc calling gpucts: cuLink* failed";
    assert!(!applied.excuses(header) && applied.allows(header));
}

/// The producers' `.b32`/`.b64` for floats against the table's `.f32`/`.f64`: waived
/// for exactly the signatures with a float parameter or return value, on every pair of
/// the table-literal emitter with a producer.
#[test]
fn float_waiver_follows_the_rule() {
    let (waivers, fingerprint) = waiver_file(&["libnvvm", "nvrtc", "clang"]);
    let predicted: Vec<u64> = generated_signatures()
        .iter()
        .filter(|s| s.ret.iter().chain(&s.params).any(float))
        .map(|s| s.seed)
        .collect();
    let listed: Vec<u64> = generated_signatures()
        .iter()
        .map(|s| s.seed)
        .filter(|seed| {
            [
                format!("xcall.pair.gpucts.nvrtc.{seed}"),
                format!("xcall.pair.nvrtc.gpucts.{seed}"),
            ]
            .iter()
            .all(|id| {
                waivers
                    .find(id, Capability::ALL, &fingerprint)
                    .map(|w| w.waiver().id.as_str())
                    == Some("W-XCALL-FLOAT-PARAMS-AS-BITS")
            })
        })
        .collect();
    let text: Vec<String> = predicted.iter().map(u64::to_string).collect();
    assert_eq!(listed, predicted, "predicted seeds: {}", text.join(","));
}

/// A value passed or returned by value whose alignment is above 16 (the `__align__(32|64|128)`
/// wrappers): what rustc 1.95's nvptx64 calling convention crashes on.
fn aligned_over_16(v: &Val) -> bool {
    v.size_align().1 > 16
}

/// rustc's seed lists, taken from a run, follow their rules: rustc crashes on exactly the
/// signatures it can write that pass or return an aggregate aligned above 16
/// (W-XCALL-RUSTC-ICE-OVERALIGNED-AGGREGATE, with every producer and itself); its pairs with
/// the table-literal emitter differ on exactly its float signatures
/// (W-XCALL-FLOAT-PARAMS-AS-BITS); its pairs with libNVVM on exactly the by-value aggregates
/// aligned 1 or 2 (W-XCALL-LIBNVVM-BYVAL-ALIGN4), unless it crashed there first.
#[test]
fn rustc_waivers_follow_the_rules() {
    let (waivers, mut fingerprint) = waiver_file(&["libnvvm", "nvrtc", "clang"]);
    fingerprint.insert(
        "rustc".into(),
        "rustc 1.95.0 (59807616e 2026-04-14), LLVM 22.1.2".into(),
    );
    let rustc = Producer::named("rustc");
    let ids = |id: &str| -> Vec<String> {
        waivers
            .applicable(id, Capability::ALL, &fingerprint)
            .iter()
            .map(|a| a.waiver().id.clone())
            .collect()
    };
    let (mut crashes, mut floats, mut byval) = (0, 0, 0);
    for s in generated_signatures() {
        if emit::expresses(rustc, s).is_err() {
            for id in [
                format!("xcall.self.rustc.{}", s.seed),
                format!("xcall.pair.rustc.nvrtc.{}", s.seed),
            ] {
                assert_eq!(ids(&id), Vec::<String>::new(), "{id}: rustc skips it");
            }
            continue;
        }
        let crash = s.ret.iter().chain(&s.params).any(aligned_over_16);
        let ice = "W-XCALL-RUSTC-ICE-OVERALIGNED-AGGREGATE".to_string();
        for id in [
            format!("xcall.self.rustc.{}", s.seed),
            format!("xcall.pair.rustc.nvrtc.{}", s.seed),
            format!("xcall.pair.nvrtc.rustc.{}", s.seed),
            format!("xcall.pair.gpucts.rustc.{}", s.seed),
        ] {
            assert_eq!(ids(&id).contains(&ice), crash, "{id}: {}", s.describe());
        }
        crashes += usize::from(crash);
        let has_float = s.ret.iter().chain(&s.params).any(float);
        let id = format!("xcall.pair.rustc.gpucts.{}", s.seed);
        assert_eq!(
            ids(&id).contains(&"W-XCALL-FLOAT-PARAMS-AS-BITS".to_string()),
            has_float && !crash,
            "{id}: {}",
            s.describe()
        );
        floats += usize::from(has_float && !crash);
        let nvvm = emit::expresses(Producer::named("libnvvm"), s).is_ok();
        let below_4 = nvvm && s.params.iter().any(byval_below_4);
        let id = format!("xcall.pair.rustc.libnvvm.{}", s.seed);
        assert_eq!(
            ids(&id).contains(&"W-XCALL-LIBNVVM-BYVAL-ALIGN4".to_string()),
            below_4 && !crash,
            "{id}: {}",
            s.describe()
        );
        byval += usize::from(below_4 && !crash);
    }
    assert!(crashes > 0 && floats > 0 && byval > 0);
}

/// Each target's case ids name it, and the id's second part leads back to it (the selection
/// computes only the batches of the targets whose cases run).
#[test]
fn target_case_ids_round_trip() {
    let (a, b) = (Producer::named("nvrtc"), Producer::named("clang"));
    let ids: Vec<String> = Target::ALL.iter().map(|t| t.case_id(a, b, 3)).collect();
    assert_eq!(
        ids,
        [
            "xcall.pair.nvrtc.clang.3",
            "xcall.oldest.nvrtc.clang.3",
            "xcall.sm_72.nvrtc.clang.3",
            "xcall.sm_87.nvrtc.clang.3"
        ]
    );
    assert_eq!(
        Target::Jetson(Jetson::Orin).case_id(a, a, 3),
        "xcall.self-sm_87.nvrtc.3"
    );
    assert_eq!(Target::Current.case_id(a, a, 3), "xcall.self.nvrtc.3");
    for t in Target::ALL {
        for id in [t.case_id(a, b, 3), t.case_id(a, a, 3)] {
            let kind = id.split('.').nth(1).unwrap();
            assert_eq!(Target::of_kind(kind), Some(t), "{id}");
        }
    }
    assert_eq!(Target::of_kind("values"), None);
    assert_eq!(Target::of_kind("self-sm_90"), None);
}
