//! Prototypes of ch. 3 against ptxas and the driver JIT: the guide's 32- and 64-bit forms, and
//! wrong forms whose acceptance was measured (the acceptance is what the tool does, recorded
//! with the version it was measured on; the chapter's verdict on the same module is the lint's
//! expected findings).

use crate::abi::lint::lint_source;
use crate::abi::lint::syscalls::Syscall;
use crate::area::CaseContext;
use crate::backend::toolchain::ToolError;
use crate::capability::Capability;
use crate::cubin::Cubin;
use crate::outcome::CaseStatus;
use crate::ptx::AddressSize;
use crate::vocab::Vocabulary;

/// The ptxas release the acceptances below were measured with.
pub(crate) const MEASURED_WITH: &str = "ptxas 12.9.86 (cuda_12.9.r12.9/compiler.36037853_0)";

/// A module that declares `call` with the chapter's prototype for `addr` and calls it once from
/// a kernel, pointers generic.
pub(crate) fn guide_module(call: Syscall, addr: AddressSize, arch: &str) -> String {
    let (w, r, cv) = if addr == AddressSize::A64 {
        ("b64", "%rd", "u64")
    } else {
        ("b32", "%r", "u32")
    };
    let args: Vec<String> = call
        .params()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let ty = s.ty(addr);
            let v = match s.name() {
                "line" => "7".to_string(),
                "charSize" => "1".to_string(),
                "size" => "64".to_string(),
                "valist" => "0".to_string(),
                _ => format!("{r}2"),
            };
            format!(".param {ty} a{i}; st.param{ty} [a{i}], {v};")
        })
        .collect();
    let rets: Vec<String> = call
        .returns()
        .iter()
        .enumerate()
        .map(|(i, s)| format!(".param {} r{i};", s.ty(addr)))
        .collect();
    let names = |p: &str, n: usize| {
        (0..n)
            .map(|i| format!("{p}{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ret = if rets.is_empty() {
        String::new()
    } else {
        format!("({}), ", names("r", rets.len()))
    };
    format!(
        ".version 8.0\n.target {arch}\n.address_size {addr}\n{}\n\
         .global .align 1 .b8 gpucts_text[3] = {{103, 112, 0}};\n\
         .visible .entry gpucts_k()\n{{\n.reg .{w} {r}<4>;\nmov.{cv} {r}1, gpucts_text;\ncvta.global.{cv} {r}2, {r}1;\n\
         {{ {} {} call.uni {ret}{}, ({}); }}\nret;\n}}\n",
        call.prototype(addr),
        args.join(" "),
        rets.join(" "),
        call.name(),
        names("a", call.params().len()),
    )
}

/// The guide's prototype assembles for `arch`, and the cubin leaves the function undefined for
/// the driver. Under `.address_size 32` a ptxas that no longer supports 32-bit addressing is a
/// skip naming the ptxas version and the target.
pub fn guide_prototype(
    ctx: &CaseContext,
    call: Syscall,
    addr: AddressSize,
    arch: &str,
) -> CaseStatus {
    let ptx = guide_module(call, addr, arch);
    // The module follows the chapter, so the linter must agree before ptxas is asked.
    match lint_source(&ptx, "guide.ptx") {
        Ok(v) if v.is_empty() => {}
        Ok(v) => {
            let v: Vec<String> = v.iter().map(|x| x.to_string()).collect();
            return CaseStatus::error(format!(
                "the generated guide module is not clean under the lint: {}",
                v.join("; ")
            ));
        }
        Err(e) => return CaseStatus::error(e.at("guide.ptx")),
    }
    let ptxas_version = || {
        ctx.toolchain
            .component(Capability::Ptxas)
            .map_or("?".to_string(), |c| c.version.clone())
    };
    let cubin = match ctx.toolchain.ptxas(&ptx, arch, &[]) {
        Ok(c) => c,
        Err(ToolError::UnknownTarget { log, .. }) => {
            return CaseStatus::skip(
                Capability::ProducerFeature,
                format!("ptxas {} has no target {arch}: {log}", ptxas_version()),
            )
        }
        // only ptxas's own answer on the input is a rejection; a timeout, a kill from outside
        // or a failure to start it is the run's problem (an error), never the prototype's
        Err(e @ ToolError::Failed { .. }) => {
            let log = e.to_string();
            if addr == AddressSize::A32 && log.contains("32-Bit") {
                let version = ptxas_version();
                let first = log
                    .lines()
                    .find(|l| l.contains("32-Bit"))
                    .unwrap_or("")
                    .trim();
                return CaseStatus::skip(
                    Capability::ProducerFeature,
                    format!(
                        "ptxas {version} no longer assembles `.address_size 32` for {arch}: {first}"
                    ),
                );
            }
            return CaseStatus::fail_detail(
                "ptxas accepts the guide's prototype and a call through it",
                "ptxas rejected it",
                format!("{log}\n{ptx}"),
            );
        }
        Err(e) => return CaseStatus::error(format!("ptxas: {e}")),
    };
    match Cubin::parse(&cubin) {
        Ok(elf)
            if elf
                .symbol(call.name())
                .is_some_and(|s| s.section.is_empty()) =>
        {
            CaseStatus::pass()
        }
        Ok(_) => CaseStatus::fail(
            format!(
                "`{}` left undefined in the cubin for the driver to provide",
                call.name()
            ),
            "no undefined symbol of that name",
        ),
        Err(e) => CaseStatus::error(e),
    }
}

/// A prototype or call shape probed against ptxas.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    pub id: &'static str,
    pub call: Syscall,
    /// The declaration as written in the module (`None`: no declaration).
    pub decl: Option<&'static str>,
    /// Types of the `.param` arguments the call passes, in order.
    pub args: &'static [&'static str],
    /// Types of the return `.param`s the call receives.
    pub rets: &'static [&'static str],
    /// The pointer arguments take the `.global` address without `cvta`.
    pub raw_pointer: bool,
    /// Whether ptxas assembles the module ([`MEASURED_WITH`]).
    pub ptxas_accepts: bool,
    /// For a rejection: the words of ptxas's message.
    pub ptxas_says: &'static str,
    /// The chapter's verdict: the lint's rule ids, in line order (declaration, then call).
    pub lint: &'static [&'static str],
}

const V_ARGS: &[&str] = &[".b64", ".b64"];
const A_ARGS: &[&str] = &[".b64", ".b64", ".b32", ".b64", ".b64"];
const DECL_WIDTH_CALL_WIDTH: &[&str] = &["syscall-decl-width", "syscall-call-width"];
const DECL_COUNT_CALL_COUNT: &[&str] = &["syscall-decl-count", "syscall-call-count"];

macro_rules! probe {
    ($id:expr, $call:ident, $decl:expr, $args:expr, $rets:expr, $raw:expr, $acc:expr, $says:expr, $lint:expr) => {
        Probe {
            id: $id,
            call: Syscall::$call,
            decl: $decl,
            args: $args,
            rets: $rets,
            raw_pointer: $raw,
            ptxas_accepts: $acc,
            ptxas_says: $says,
            lint: $lint,
        }
    };
}

/// Every probe. The acceptances were measured with [`MEASURED_WITH`] on 2026-11-23 (the BRIEF
/// records the same for a `.b32` format pointer, a `.b32` malloc size and a missing charSize):
/// ptxas checks a call against the module's own prototype (count, type, alignment) but not the
/// prototype against ch. 3, so every self-consistent wrong prototype assembles.
pub(crate) const PROBES: &[Probe] = &[
    probe!("vprintf_guide", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[".s32"], false, true, "", &[]),
    probe!("vprintf_status_b32", Vprintf, Some(".extern .func (.param .b32 status) vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[".b32"], false, true, "", &["syscall-decl-type"]),
    probe!("vprintf_status_u32", Vprintf, Some(".extern .func (.param .u32 status) vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[".u32"], false, true, "", &["syscall-decl-type"]),
    probe!("vprintf_status_b64", Vprintf, Some(".extern .func (.param .b64 status) vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[".b64"], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("vprintf_no_status", Vprintf, Some(".extern .func vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[], false, true, "", DECL_COUNT_CALL_COUNT),
    probe!("vprintf_format_b32", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b32 format, .param .b64 valist);"), &[".b32", ".b64"], &[".s32"], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("vprintf_valist_b32", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b32 valist);"), &[".b64", ".b32"], &[".s32"], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("vprintf_format_f64", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .f64 format, .param .b64 valist);"), &[".f64", ".b64"], &[".s32"], false, true, "", &["syscall-decl-type"]),
    probe!("vprintf_pointers_u64", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .u64 format, .param .u64 valist);"), &[".u64", ".u64"], &[".s32"], false, true, "", &["syscall-decl-type", "syscall-decl-type"]),
    probe!("vprintf_one_param", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format);"), &[".b64"], &[".s32"], false, true, "", DECL_COUNT_CALL_COUNT),
    probe!("vprintf_three_params", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist, .param .b64 extra);"), &[".b64", ".b64", ".b64"], &[".s32"], false, true, "", DECL_COUNT_CALL_COUNT),
    probe!("vprintf_defined", Vprintf, Some(".visible .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist) { st.param.s32 [status], 0; ret; }"), V_ARGS, &[".s32"], false, true, "", &["syscall-definition"]),
    probe!("vprintf_not_extern", Vprintf, Some(".func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[".s32"], false, true, "", &["syscall-definition"]),
    probe!("vprintf_format_not_generic", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[".s32"], true, true, "", &["syscall-non-generic", "syscall-non-generic"]),
    probe!("vprintf_call_b32_format", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);"), &[".b32", ".b64"], &[".s32"], false, false, "Type of argument does not match formal parameter", &["syscall-call-width"]),
    probe!("vprintf_call_one_arg", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);"), &[".b64"], &[".s32"], false, false, "Call has wrong number of parameters", &["syscall-call-count"]),
    probe!("vprintf_call_no_status", Vprintf, Some(".extern .func (.param .s32 status) vprintf (.param .b64 format, .param .b64 valist);"), V_ARGS, &[], false, false, "Call has wrong number of parameters", &["syscall-call-count"]),
    probe!("vprintf_undeclared", Vprintf, None, V_ARGS, &[".s32"], false, false, "requires call prototype", &["undeclared-name"]),
    probe!("malloc_guide", Malloc, Some(".extern .func (.param .b64 ptr) malloc (.param .b64 size);"), &[".b64"], &[".b64"], false, true, "", &[]),
    probe!("malloc_size_b32", Malloc, Some(".extern .func (.param .b64 ptr) malloc (.param .b32 size);"), &[".b32"], &[".b64"], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("malloc_ptr_b32", Malloc, Some(".extern .func (.param .b32 ptr) malloc (.param .b64 size);"), &[".b64"], &[".b32"], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("malloc_no_ptr", Malloc, Some(".extern .func malloc (.param .b64 size);"), &[".b64"], &[], false, true, "", DECL_COUNT_CALL_COUNT),
    probe!("free_guide", Free, Some(".extern .func free (.param .b64 ptr);"), &[".b64"], &[], false, true, "", &[]),
    probe!("free_ptr_b32", Free, Some(".extern .func free (.param .b32 ptr);"), &[".b32"], &[], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("free_with_status", Free, Some(".extern .func (.param .b32 status) free (.param .b64 ptr);"), &[".b64"], &[".b32"], false, true, "", DECL_COUNT_CALL_COUNT),
    probe!("free_ptr_not_generic", Free, Some(".extern .func free (.param .b64 ptr);"), &[".b64"], &[], true, true, "", &["syscall-non-generic"]),
    probe!("assertfail_guide", Assertfail, Some(".extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b64 charSize);"), A_ARGS, &[], false, true, "", &[]),
    probe!("assertfail_no_charsize", Assertfail, Some(".extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function);"), &[".b64", ".b64", ".b32", ".b64"], &[], false, true, "", DECL_COUNT_CALL_COUNT),
    probe!("assertfail_charsize_b32", Assertfail, Some(".extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b32 charSize);"), &[".b64", ".b64", ".b32", ".b64", ".b32"], &[], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("assertfail_line_b64", Assertfail, Some(".extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b64 line, .param .b64 function, .param .b64 charSize);"), &[".b64", ".b64", ".b64", ".b64", ".b64"], &[], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("assertfail_message_b32", Assertfail, Some(".extern .func __assertfail (.param .b32 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b64 charSize);"), &[".b32", ".b64", ".b32", ".b64", ".b64"], &[], false, true, "", DECL_WIDTH_CALL_WIDTH),
    probe!("assertfail_with_status", Assertfail, Some(".extern .func (.param .b32 status) __assertfail (.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b64 charSize);"), A_ARGS, &[".b32"], false, true, "", DECL_COUNT_CALL_COUNT),
    probe!("assertfail_strings_not_generic", Assertfail, Some(".extern .func __assertfail (.param .b64 message, .param .b64 file, .param .b32 line, .param .b64 function, .param .b64 charSize);"), A_ARGS, &[], true, true, "", &["syscall-non-generic", "syscall-non-generic", "syscall-non-generic"]),
];

pub fn probe(id: &str) -> Option<&'static Probe> {
    PROBES.iter().find(|p| p.id == id)
}

/// The probe's module: its declaration and one call from a kernel, each argument a register
/// (or immediate) of the argument's type.
pub(crate) fn probe_module(p: &Probe) -> String {
    let pointer = if p.raw_pointer { "%rd1" } else { "%rd2" };
    let slots = p.call.params();
    let args: Vec<String> = p
        .args
        .iter()
        .enumerate()
        .map(|(i, ty)| {
            let is_ptr = slots.get(i).is_some_and(|s| s.is_pointer());
            let v = match *ty {
                ".b64" | ".u64" if is_ptr => pointer.to_string(),
                ".b64" | ".u64" => "1".to_string(),
                ".f64" => "0d0000000000000000".to_string(),
                _ if is_ptr => "%r2".to_string(),
                _ => "7".to_string(),
            };
            format!(".param {ty} a{i};\nst.param{ty} [a{i}], {v};")
        })
        .collect();
    let rets: Vec<String> = p
        .rets
        .iter()
        .enumerate()
        .map(|(i, ty)| format!(".param {ty} r{i};"))
        .collect();
    let list = |pre: &str, n: usize| {
        (0..n)
            .map(|i| format!("{pre}{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let ret = if p.rets.is_empty() {
        String::new()
    } else {
        format!("({}), ", list("r", p.rets.len()))
    };
    format!(
        ".version 8.0\n.target sm_90\n.address_size 64\n{}\n\
         .global .align 1 .b8 gpucts_text[3] = {{103, 112, 0}};\n\
         .visible .entry gpucts_k()\n{{\n.reg .b64 %rd<4>;\n.reg .b32 %r<4>;\n\
         mov.u64 %rd1, gpucts_text;\ncvta.global.u64 %rd2, %rd1;\ncvt.u32.u64 %r2, %rd2;\n{{\n{}\n{}\ncall.uni {ret}{}, ({});\n}}\nret;\n}}\n",
        p.decl.unwrap_or("// no prototype"),
        args.join("\n"),
        rets.join("\n"),
        p.call.name(),
        list("a", p.args.len())
    )
}

/// ptxas's acceptance of the probe is the one measured.
pub(crate) fn ptxas_probe(ctx: &CaseContext, p: &Probe) -> CaseStatus {
    let ptx = probe_module(p);
    let got = ctx.toolchain.ptxas(&ptx, "sm_90", &[]);
    let expected = if p.ptxas_accepts {
        "assembles".to_string()
    } else {
        format!("rejected: {}", p.ptxas_says)
    };
    let evidence = format!("measured with {MEASURED_WITH}");
    match got {
        Ok(_) if p.ptxas_accepts => {
            CaseStatus::pass_with(format!("ptxas assembles it ({evidence})"))
        }
        Err(e) if !p.ptxas_accepts && e.to_string().contains(p.ptxas_says) => {
            CaseStatus::pass_with(format!("ptxas rejects it: {} ({evidence})", p.ptxas_says))
        }
        Ok(_) => CaseStatus::fail_detail(expected, "assembles", format!("{evidence}\n{ptx}")),
        Err(e) => CaseStatus::fail_detail(
            expected,
            format!("rejected: {}", e.to_string().trim()),
            format!("{evidence}\n{ptx}"),
        ),
    }
}

/// The lint's findings on the probe are the chapter's verdict.
pub(crate) fn lint_probe(p: &Probe) -> CaseStatus {
    let ptx = probe_module(p);
    let got = match lint_source(&ptx, "probe.ptx") {
        Ok(v) => v,
        Err(e) => return CaseStatus::error(e.at("probe.ptx")),
    };
    let ids: Vec<&str> = got.iter().map(|v| v.rule.id()).collect();
    if ids == p.lint {
        CaseStatus::pass()
    } else {
        let shown: Vec<String> = got.iter().map(|v| v.to_string()).collect();
        CaseStatus::fail_detail(
            format!("findings {:?}", p.lint),
            format!("findings {ids:?}"),
            format!("{}\n{ptx}", shown.join("\n")),
        )
    }
}

/// The driver JIT loads the probe module exactly when ptxas assembles it (the driver's JIT and
/// ptxas share the PTX front end; a difference is a finding to record).
pub(crate) fn jit_probe(ctx: &CaseContext, p: &Probe) -> CaseStatus {
    let ptx = probe_module(p);
    let s = match ctx.open_gpu() {
        Ok(s) => s,
        Err(e) => return CaseStatus::error(e),
    };
    let loaded = s.load_ptx(&ptx);
    match (loaded, p.ptxas_accepts) {
        (Ok(_), true) => CaseStatus::pass_with("the driver JIT loads it, as ptxas assembles it"),
        (Err(e), false) => CaseStatus::pass_with(format!(
            "the driver JIT refuses it, as ptxas does: {}",
            e.log.lines().next().unwrap_or("")
        )),
        (Ok(_), false) => CaseStatus::fail_detail(
            format!("refused, as ptxas refuses it ({})", p.ptxas_says),
            "the driver JIT loads it",
            ptx,
        ),
        (Err(e), true) => CaseStatus::fail_detail(
            "loaded, as ptxas assembles it",
            format!("the driver JIT refuses it: {e}"),
            ptx,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strum::VariantArray;

    // Every probe's module parses, and its lint verdict is the one the table gives from the
    // chapter (the table, not the lint, is the source: see the rule each entry breaks).
    #[test]
    fn probe_table_lint_verdicts() {
        let mut ids = std::collections::HashSet::new();
        for p in PROBES {
            assert!(ids.insert(p.id), "duplicate {}", p.id);
            assert!(
                matches!(lint_probe(p), CaseStatus::Pass { .. }),
                "{}: {:?}",
                p.id,
                lint_probe(p)
            );
        }
    }

    /// The `syscalls.observe.*` clauses say what was measured: "accepts" exactly for the
    /// probes ptxas 12.9 assembled, "rejects … (its words)" for the others; and every probe
    /// has an observation and a lint case.
    #[test]
    fn observation_clauses_say_what_ptxas_did() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let suite =
            crate::suite::load_file(&root.join("suites/syscalls.yaml"), &crate::areas::all())
                .unwrap();
        for p in PROBES {
            for tool in ["ptxas", "jit"] {
                let id = format!("syscalls.observe.{tool}.{}", p.id);
                let c = suite.cases.iter().find(|c| c.id == id).expect(&id);
                let verb = if p.ptxas_accepts {
                    "accepts"
                } else {
                    "rejects"
                };
                assert!(
                    c.clause.contains(&format!("(ptxas 12.9 {verb} ")),
                    "{id}: {}",
                    c.clause
                );
                assert!(c.clause.contains(p.ptxas_says), "{id}: {}", c.clause);
            }
            let lint = format!("syscalls.probe.lint.{}", p.id);
            assert!(suite.cases.iter().any(|c| c.id == lint), "{lint}");
        }
    }

    /// A ptxas killed from outside (the OOM killer; in ci/aarch64 a qemu-user child the
    /// watchdog killed) answered nothing about the prototype: the case is an error naming the
    /// kill, not a rejection of the guide's prototype.
    #[test]
    fn a_ptxas_killed_from_outside_is_an_error_not_a_rejection() {
        use crate::backend::toolchain::Toolchain;
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let bin = root.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let ptxas = bin.join("ptxas");
        std::fs::write(
            &ptxas,
            "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'Cuda compilation tools, release 12.9, V12.9.86'; exit 0; }\nkill -9 $$\n",
        )
        .unwrap();
        std::fs::set_permissions(&ptxas, std::fs::Permissions::from_mode(0o755)).unwrap();
        let tc = Toolchain::discover_with(crate::backend::toolchain::ToolSettings {
            cuda_roots: vec![root.path().to_path_buf()],
            cache_root: None,
            output_cache: false,
            ..Default::default()
        });
        let found = tc.component(Capability::Ptxas).map(|c| c.path.clone());
        crate::require!(
            found.as_deref() == Some(ptxas.as_path()),
            "ptxas from the test's CUDA root (a ptxas on PATH comes first)"
        );
        let (config, scope, caps) = Default::default();
        let ctx = CaseContext::new(&config, &scope, "t", &caps, &tc, ".".as_ref());
        let status = guide_prototype(&ctx, Syscall::VARIANTS[0], AddressSize::A64, "sm_90");
        match status {
            CaseStatus::Error { message } => {
                assert!(message.contains("SIGKILL"), "{message}")
            }
            other => panic!("a killed ptxas must be an error: {other:?}"),
        }
    }

    #[test]
    fn guide_modules_are_clean() {
        for call in Syscall::VARIANTS.iter().copied() {
            for addr in [AddressSize::A32, AddressSize::A64] {
                let m = guide_module(call, addr, "sm_90");
                assert_eq!(lint_source(&m, "g").unwrap(), vec![], "{m}");
            }
        }
    }
}
