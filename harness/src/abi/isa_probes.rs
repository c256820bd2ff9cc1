//! ptxas as the independent oracle for what the PTX ISA lets a producer write for ch. 1's data
//! and ch. 3's 32-bit forms: each probe is a small module, its expected verdict is the PTX
//! ISA's rule (cited on the probe), and the case passes when ptxas 12.9 agrees. A probe whose
//! rule and ptxas disagree is a finding about one of them, recorded on the probe.
//!
//! - ptx-interop 13.2 §1.1 "addresses of the local and shared memory spaces are always 32
//!   bits": a `.shared`/`.local` variable's address fits a 32-bit register and `ld.shared` /
//!   `ld.local` take a 32-bit register address under `.address_size 64`, where a `.global`
//!   access through a 32-bit register is refused.
//! - §1.2 vector element counts: the ISA's vectors are `.v2` and `.v4` of any scalar up to 128
//!   bits in all (ISA §5.4.3 "Vectors": "Vectors cannot exceed 128-bits in length"); there is
//!   no `.v3`; `.v8` exists only on `ld`/`st` of 32-bit elements with PTX 8.8 and sm_100
//!   (ISA 8.8, "256-bit wide load/store").
//! - ch. 3 32-bit forms: `.address_size 32` (the chapter's 32-bit call) is refused by ptxas
//!   12.9 on every target and every PTX version that still has a target it builds for.

use crate::area::CaseContext;
use crate::capability::Capability;
use crate::outcome::CaseStatus;

/// What the ISA's rule says of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Accepts,
    /// Refused, with a part of ptxas 12.9's message (the measured wording).
    Refuses(&'static str),
}

/// One module against ptxas.
#[derive(Debug, Clone, Copy)]
pub struct IsaProbe {
    pub id: &'static str,
    pub version: &'static str,
    pub target: &'static str,
    pub address_size: u32,
    /// Module body after the header.
    pub body: &'static str,
    /// The ISA's verdict.
    pub isa: Verdict,
    /// The ISA rule the verdict comes from.
    pub rule: &'static str,
}

macro_rules! entry {
    ($body:expr) => {
        concat!(
            ".visible .entry k(.param .u64 p)\n{\n\t.reg .b32 %r<9>;\n\t.reg .b64 %rd<4>;\n\t.reg .f32 %f<9>;\n\t.reg .f64 %fd<9>;\n\tld.param.u64 %rd1, [p];\n",
            $body,
            "\tret;\n}\n"
        )
    };
}

const TOO_LARGE: &str = "Vector type too large, exceeds 128 bit limit";
const NO_SUCH_VECTOR: &str = "syntax error";
const BITS32_ABI: &str = "32-Bit ABI";

/// The probes (ISA 8.5 under sm_90 unless a probe needs another).
pub(crate) const PROBES: &[IsaProbe] = &[
    // §1.1: shared and local addresses are 32 bits.
    IsaProbe { id: "shared_address_u32", version: "8.5", target: "sm_90", address_size: 64,
        body: concat!(".shared .align 4 .b32 s;\n", entry!("\tmov.u32 %r1, s;\n\tld.shared.u32 %r2, [%r1];\n")),
        isa: Verdict::Accepts,
        rule: "ISA §6.4.1: a .shared variable's address is a window offset; mov.u32 takes it and ld.shared takes a 32-bit register address" },
    IsaProbe { id: "local_address_u32", version: "8.5", target: "sm_90", address_size: 64,
        body: entry!("\t.local .align 4 .b32 l;\n\tmov.u32 %r1, l;\n\tst.local.u32 [%r1], %r2;\n"),
        isa: Verdict::Accepts,
        rule: "ISA §6.4.1: a .local variable's address is a window offset; st.local takes a 32-bit register address" },
    IsaProbe { id: "shared_window_offset_from_generic", version: "8.5", target: "sm_90", address_size: 64,
        body: concat!(".shared .align 4 .b32 s;\n", entry!("\tmov.u64 %rd2, s;\n\tcvta.shared.u64 %rd3, %rd2;\n\tcvta.to.shared.u64 %rd2, %rd3;\n\tcvt.u32.u64 %r1, %rd2;\n\tld.shared.u32 %r2, [%r1];\n")),
        isa: Verdict::Accepts,
        rule: "ISA cvta: a generic address converted to .shared is a window offset that fits 32 bits" },
    IsaProbe { id: "global_address_u32", version: "8.5", target: "sm_90", address_size: 64,
        body: entry!("\tld.global.u32 %r2, [%r1];\n"),
        isa: Verdict::Refuses(BITS32_ABI),
        rule: "§1.1: global addresses are as wide as .address_size; a 32-bit register address is a 32-bit-addressing program" },
    // §1.2: the vectors that exist.
    IsaProbe { id: "v2_b64", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 16 .v2 .b64 g;\n", isa: Verdict::Accepts,
        rule: "ISA §5.4.3: .v2 of a 64-bit scalar is 128 bits" },
    IsaProbe { id: "v2_f64", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 16 .v2 .f64 g;\n", isa: Verdict::Accepts,
        rule: "ISA §5.4.3: .v2 of a 64-bit scalar is 128 bits" },
    IsaProbe { id: "v4_f64", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 32 .v4 .f64 g;\n", isa: Verdict::Refuses(TOO_LARGE),
        rule: "ISA §5.4.3: vectors cannot exceed 128 bits (\".v4 .f64 is not allowed\")" },
    IsaProbe { id: "v4_b64", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 32 .v4 .b64 g;\n", isa: Verdict::Refuses(TOO_LARGE),
        rule: "ISA §5.4.3: vectors cannot exceed 128 bits" },
    IsaProbe { id: "v4_u32", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 16 .v4 .u32 g;\n", isa: Verdict::Accepts,
        rule: "ISA §5.4.3: .v4 of a 32-bit scalar is 128 bits" },
    IsaProbe { id: "v4_f32", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 16 .v4 .f32 g;\n", isa: Verdict::Accepts,
        rule: "ISA §5.4.3: .v4 of a 32-bit scalar is 128 bits" },
    IsaProbe { id: "v4_s16", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 8 .v4 .s16 g;\n", isa: Verdict::Accepts,
        rule: "ISA §5.4.3: .v4 of a 16-bit scalar" },
    IsaProbe { id: "v4_b8", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .align 4 .v4 .b8 g;\n", isa: Verdict::Accepts,
        rule: "ISA §5.4.3: .v4 of a byte" },
    IsaProbe { id: "v3_f32", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .v3 .f32 g;\n", isa: Verdict::Refuses(NO_SUCH_VECTOR),
        rule: "ISA §5.4.3: the vector suffixes are .v2 and .v4 (a 3-element vector is an aggregate in PTX)" },
    IsaProbe { id: "v8_u32_variable", version: "8.8", target: "sm_100", address_size: 64,
        body: ".global .v8 .u32 g;\n", isa: Verdict::Refuses(NO_SUCH_VECTOR),
        rule: "ISA 8.8 §5.4.3: .v8 is an ld/st operand form, not a variable type" },
    IsaProbe { id: "v8_f32_load_sm100", version: "8.8", target: "sm_100", address_size: 64,
        body: entry!("\tld.global.v8.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, [%rd1];\n"),
        isa: Verdict::Accepts,
        rule: "ISA 8.8 ld: .v8 of 32-bit elements (256-bit load) on sm_100 and later" },
    IsaProbe { id: "v8_f32_load_sm90", version: "8.5", target: "sm_90", address_size: 64,
        body: entry!("\tld.global.v8.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, [%rd1];\n"),
        isa: Verdict::Refuses("256 bit wide load/store"),
        rule: "ISA 8.8 ld: .v8 needs PTX 8.8 and sm_100" },
    IsaProbe { id: "v8_f64_load_sm100", version: "8.8", target: "sm_100", address_size: 64,
        body: entry!("\tld.global.v8.f64 {%fd1,%fd2,%fd3,%fd4,%fd5,%fd6,%fd7,%fd8}, [%rd1];\n"),
        isa: Verdict::Refuses(TOO_LARGE),
        rule: "ISA 8.8 ld: .v8 only of 32-bit elements (256 bits at most)" },
    // §1.4 and §2.3 note E: a texture or surface handle crosses a call as a .b64 and the
    // callee reads through it (tex, suld, sust); a handle returned as .b64 is used by the
    // caller. (ptxas 12.9 takes the handle out of a .texref/.surfref only with `mov.u64`:
    // `mov.b64` is refused with "Indirect access to texture requires .u64 type".)
    IsaProbe { id: "handle_b64_param_tex_suld_sust", version: "8.5", target: "sm_90", address_size: 64,
        body: ".global .texref t;\n.global .surfref s;\n\
.visible .func (.param .b32 r) sample(.param .b64 h, .param .b64 sf)\n{\n\t.reg .b64 %rd<3>;\n\t.reg .f32 %f<9>;\n\t.reg .b32 %r<5>;\n\
\tld.param.b64 %rd1, [h];\n\tld.param.b64 %rd2, [sf];\n\tmov.f32 %f5, 0f00000000;\n\
\ttex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd1, {%f5, %f5}];\n\tmov.u32 %r2, 0;\n\
\tsuld.b.2d.b32.trap {%r1}, [%rd2, {%r2, %r2}];\n\tsust.b.2d.b32.trap [%rd2, {%r2, %r2}], {%r1};\n\
\tcvt.rzi.s32.f32 %r3, %f1;\n\tadd.s32 %r4, %r3, %r1;\n\tst.param.b32 [r], %r4;\n\tret;\n}\n\
.visible .entry k(.param .u64 o)\n{\n\t.reg .b64 %rd<4>;\n\t.reg .b32 %r<2>;\n\tmov.u64 %rd1, t;\n\tmov.u64 %rd2, s;\n\
\t{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd1;\n\t.param .b64 p1;\n\tst.param.b64 [p1], %rd2;\n\
\t.param .b32 r0;\n\tcall.uni (r0), sample, (p0, p1);\n\tld.param.b32 %r1, [r0];\n\t}\n\
\tld.param.u64 %rd3, [o];\n\tst.global.u32 [%rd3], %r1;\n\tret;\n}\n",
        isa: Verdict::Accepts,
        rule: "§2.3 note E, §1.4: handles pass to functions as .b64 and carry what tex, suld and sust need" },
    IsaProbe { id: "handle_b64_returned", version: "8.5", target: "sm_90", address_size: 64,
        body: ".visible .func (.param .b64 r) pass(.param .b64 h)\n{\n\t.reg .b64 %rd<2>;\n\
\tld.param.b64 %rd1, [h];\n\tst.param.b64 [r], %rd1;\n\tret;\n}\n\
.visible .entry k(.param .texref t, .param .u64 o)\n{\n\t.reg .b64 %rd<4>;\n\t.reg .f32 %f<9>;\n\tmov.u64 %rd1, t;\n\
\t{\n\t.param .b64 p0;\n\tst.param.b64 [p0], %rd1;\n\t.param .b64 r0;\n\tcall.uni (r0), pass, (p0);\n\tld.param.b64 %rd2, [r0];\n\t}\n\
\tmov.f32 %f5, 0f00000000;\n\ttex.2d.v4.f32.f32 {%f1, %f2, %f3, %f4}, [%rd2, {%f5, %f5}];\n\
\tld.param.u64 %rd3, [o];\n\tst.global.f32 [%rd3], %f1;\n\tret;\n}\n",
        isa: Verdict::Accepts,
        rule: "§2.3 note E, §1.4: a handle is returned from a function as .b64 and used by the caller" },
    // ch. 3: the 32-bit forms.
    IsaProbe { id: "address_size_32_sm90", version: "8.5", target: "sm_90", address_size: 32,
        body: ".visible .entry k()\n{\n\tret;\n}\n", isa: Verdict::Accepts,
        rule: "ISA .address_size: 32 is a valid operand (ch. 3 writes its 32-bit call under it)" },
    IsaProbe { id: "address_size_32_sm50", version: "7.0", target: "sm_50", address_size: 32,
        body: ".visible .entry k()\n{\n\tret;\n}\n", isa: Verdict::Accepts,
        rule: "ISA .address_size: 32 is a valid operand (ch. 3 writes its 32-bit call under it)" },
];

/// The probe named `id`.
pub fn probe(id: &str) -> Option<&'static IsaProbe> {
    PROBES.iter().find(|p| p.id == id)
}

/// Where ptxas 12.9 departs from the ISA's verdict (measured): none of the vector and address
/// forms, but the 32-bit address size, which it refuses ("32-Bit ABI (--machine 32 or 32-Bit
/// addressing) is not supported on sm_90 or higher", "32-Bit compilation is no longer
/// supported" below sm_90); a case meeting that refusal skips naming the ptxas version, as
/// the ch. 3 32-bit prototype cases do.
pub const PTXAS_REFUSES_32_BIT: &[&str] = &["address_size_32_sm90", "address_size_32_sm50"];

/// The probe's module.
pub fn module(p: &IsaProbe) -> String {
    format!(
        ".version {}\n.target {}\n.address_size {}\n\n{}",
        p.version, p.target, p.address_size, p.body
    )
}

fn ptxas_version(ctx: &CaseContext) -> String {
    ctx.toolchain
        .component(Capability::Ptxas)
        .map_or("?".to_string(), |c| c.version.clone())
}

/// ptxas on the probe against the ISA's verdict.
pub fn case(ctx: &CaseContext, p: &IsaProbe) -> CaseStatus {
    let ptx = module(p);
    let got = ctx.toolchain.ptxas(&ptx, p.target, &[]);
    let expected = match p.isa {
        Verdict::Accepts => format!("ptxas assembles it ({})", p.rule),
        Verdict::Refuses(m) => format!("ptxas refuses it with \"{m}\" ({})", p.rule),
    };
    match (got, p.isa) {
        (Ok(_), Verdict::Accepts) => CaseStatus::pass_with(p.rule),
        (Err(e), Verdict::Refuses(m)) if e.to_string().contains(m) => {
            CaseStatus::pass_with(format!("refused: {m} ({})", p.rule))
        }
        (Err(crate::backend::toolchain::ToolError::UnknownTarget { log, .. }), _) => {
            CaseStatus::skip(
                Capability::ProducerFeature,
                format!(
                    "ptxas {} has no target {}: {log}",
                    ptxas_version(ctx),
                    p.target
                ),
            )
        }
        (Err(e), Verdict::Accepts) if p.address_size == 32 && e.to_string().contains("32-Bit") => {
            let log = e.to_string();
            let first = log
                .lines()
                .find(|l| l.contains("32-Bit"))
                .unwrap_or("")
                .trim();
            CaseStatus::skip(
                Capability::ProducerFeature,
                format!(
                    "ptxas {} no longer assembles `.address_size 32` for {}: {first}",
                    ptxas_version(ctx),
                    p.target
                ),
            )
        }
        (Ok(_), _) => CaseStatus::fail_detail(expected, "assembles", ptx),
        (Err(e), _) => {
            CaseStatus::fail_detail(expected, format!("refused: {}", e.to_string().trim()), ptx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::toolchain::Toolchain;

    #[test]
    fn probe_ids_are_unique_and_modules_read() {
        let mut ids: Vec<&str> = PROBES.iter().map(|p| p.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), PROBES.len());
        for p in PROBES {
            crate::ptx::PtxModule::parse(&module(p)).unwrap_or_else(|e| panic!("{}: {e}", p.id));
        }
    }

    /// ptxas 12.9 agrees with the ISA on every probe but the 32-bit address size.
    #[test]
    fn ptxas_agrees_with_the_isa() {
        let tc = Toolchain::discover_system();
        crate::require!(tc.has(Capability::Ptxas), "ptxas");
        for p in PROBES {
            let got = tc.ptxas(&module(p), p.target, &[]);
            let agrees = match (&got, p.isa) {
                (Ok(_), Verdict::Accepts) => true,
                (Err(e), Verdict::Refuses(m)) => e.to_string().contains(m),
                _ => false,
            };
            assert_eq!(
                agrees,
                !PTXAS_REFUSES_32_BIT.contains(&p.id),
                "{}: {got:?}",
                p.id
            );
        }
    }
}
