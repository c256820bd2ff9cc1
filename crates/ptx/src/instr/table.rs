//! The PTX ISA's instruction vocabulary as tables: every base opcode (ch. 9.7), the special
//! registers (ch. 10), and the modifiers each opcode's syntax allows, held to ptxas's verdicts.

/// The base opcode (the name before the first `.`) of every instruction of the PTX ISA,
/// ch. 9.7 "Instructions", by section of that chapter (ISA 9.0). Each one was measured with
/// ptxas 12.9.86 and 13.0.48: none of them is "Not a name of any known instruction" in a
/// form its section gives (`mul24.lo`, `cp.async`, `brx.idx`, `tcgen05.alloc`, …).
pub(crate) const OPCODES: &[(&str, &str)] = &[
    ("9.7.1 integer arithmetic", "add sub mul mad mul24 mad24 sad div rem abs neg min max popc clz bfind fns brev bfe bfi szext bmsk dp4a dp2a"),
    ("9.7.2 extended-precision integer arithmetic", "addc subc madc"),
    ("9.7.3-9.7.5 floating point, half and mixed precision", "testp copysign fma rcp sqrt rsqrt sin cos lg2 ex2 tanh"),
    ("9.7.6-9.7.7 comparison and selection", "set setp selp slct"),
    ("9.7.8 logic and shift", "and or xor not cnot lop3 shf shl shr"),
    ("9.7.9 data movement and conversion", "mov shfl prmt ld ldu st multimem prefetch prefetchu applypriority discard createpolicy isspacep cvta cvt mapa getctarank cp tensormap"),
    ("9.7.10 texture", "tex tld4 txq istypep"),
    ("9.7.11 surface", "suld sust sured suq"),
    ("9.7.12 control flow", "bra brx call ret exit"),
    ("9.7.13 parallel synchronization and communication", "bar barrier membar fence atom red vote match activemask redux griddepcontrol elect mbarrier clusterlaunchcontrol"),
    ("9.7.14 warp-level matrix multiply-accumulate", "wmma mma ldmatrix stmatrix movmatrix"),
    ("9.7.15 warpgroup matrix multiply-accumulate", "wgmma"),
    ("9.7.16 TensorCore 5th generation", "tcgen05"),
    ("9.7.17 stack manipulation", "stacksave stackrestore alloca"),
    ("9.7.18 video", "vadd vsub vabsdiff vmin vmax vshl vshr vmad vset vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2 vadd4 vsub4 vavrg4 vabsdiff4 vmin4 vmax4 vset4"),
    ("9.7.19 miscellaneous", "brkpt nanosleep pmevent trap setmaxnreg"),
];

/// Whether `name` is the base opcode of a PTX ISA instruction ([`OPCODES`]).
pub(crate) fn is_opcode(name: &str) -> bool {
    static SET: std::sync::OnceLock<std::collections::HashSet<&'static str>> =
        std::sync::OnceLock::new();
    SET.get_or_init(|| {
        OPCODES
            .iter()
            .flat_map(|(_, ops)| ops.split_whitespace())
            .collect()
    })
    .contains(name)
}

/// The special registers of PTX ISA ch. 10 ("Special Registers") with a fixed name; the
/// numbered families (`%pm0`-`%pm7`, `%pm0_64`-`%pm7_64`, `%envreg0`-`%envreg31`,
/// `%reserved_smem_offset_0`-`_1`) are matched by [`is_special_register`]. Measured with
/// ptxas 12.9.86 and 13.0.48: each reads without "Unknown symbol"; `%pm8`, `%envreg32` do not.
pub(crate) const SPECIAL_REGISTERS: &[&str] = &[
    "%tid",
    "%ntid",
    "%laneid",
    "%warpid",
    "%nwarpid",
    "%ctaid",
    "%nctaid",
    "%smid",
    "%nsmid",
    "%gridid",
    "%is_explicit_cluster",
    "%clusterid",
    "%nclusterid",
    "%cluster_ctaid",
    "%cluster_nctaid",
    "%cluster_ctarank",
    "%cluster_nctarank",
    "%lanemask_eq",
    "%lanemask_le",
    "%lanemask_lt",
    "%lanemask_ge",
    "%lanemask_gt",
    "%clock",
    "%clock_hi",
    "%clock64",
    "%globaltimer",
    "%globaltimer_lo",
    "%globaltimer_hi",
    "%reserved_smem_offset_begin",
    "%reserved_smem_offset_end",
    "%reserved_smem_offset_cap",
    "%total_smem_size",
    "%aggr_smem_size",
    "%dynamic_smem_size",
    "%current_graph_exec",
];

/// Whether `name` is a special register of PTX ISA ch. 10.
pub(crate) fn is_special_register(name: &str) -> bool {
    if SPECIAL_REGISTERS.contains(&name) {
        return true;
    }
    let n = |s: &str, max: u32| {
        !s.is_empty()
            && s.bytes().all(|b| b.is_ascii_digit())
            && (s == "0" || !s.starts_with('0'))
            && s.parse::<u32>().is_ok_and(|v| v <= max)
    };
    if let Some(r) = name.strip_prefix("%pm") {
        return n(r.strip_suffix("_64").unwrap_or(r), 7);
    }
    if let Some(r) = name.strip_prefix("%envreg") {
        return n(r, 31);
    }
    name.strip_prefix("%reserved_smem_offset_")
        .is_some_and(|r| n(r, 1))
}

/// The modifiers (without the dot) each instruction's syntax block in PTX ISA ch. 9.7 gives
/// it, by section, as `(section, opcodes, modifiers)`: an opcode's allowed set is the union of
/// every row that names it, over all its forms and ISA versions (a modifier one form allows
/// is never a finding on another form; which combinations go together is not checked).
/// Opcodes with no row (`cp`, `mma`, `wgmma`, `tcgen05`, `tex`, video, ...) are not checked.
/// Checked entry by entry against ptxas 12.9 by `ptx-corpus/gen/modifiers.py`: every modifier
/// ptxas accepts on an opcode in one of the script's forms is in the opcode's set, and every
/// one outside the set is refused ("Unknown modifier", "Illegal modifier", ...); the test
/// `modifier_table_agrees_with_ptxas` compares the table with that recorded verdict.
pub(crate) const MODIFIERS: &[(&str, &str, &str)] = &[
    ("9.7.1 integer arithmetic", "add sub", "s16 u16 s32 u32 s64 u64 s16x2 u16x2 sat cc"),
    ("9.7.1 integer arithmetic", "mul mad", "s16 u16 s32 u32 s64 u64 hi lo wide sat cc"),
    ("9.7.1 integer arithmetic", "mul24 mad24", "s32 u32 hi lo sat"),
    ("9.7.1 integer arithmetic", "sad div rem", "s16 u16 s32 u32 s64 u64"),
    ("9.7.1 integer arithmetic", "abs neg", "s16 s32 s64"),
    ("9.7.1 integer arithmetic", "min max", "s16 u16 s32 u32 s64 u64 s16x2 u16x2 relu"),
    ("9.7.1 integer arithmetic", "popc clz brev", "b32 b64"),
    ("9.7.1 integer arithmetic", "bfind", "s32 u32 s64 u64 shiftamt"),
    ("9.7.1 integer arithmetic", "fns", "b32"),
    ("9.7.1 integer arithmetic", "bfe", "s32 u32 s64 u64"),
    ("9.7.1 integer arithmetic", "bfi", "b32 b64"),
    ("9.7.1 integer arithmetic", "szext", "clamp wrap s32 u32"),
    ("9.7.1 integer arithmetic", "bmsk", "clamp wrap b32"),
    ("9.7.1 integer arithmetic", "dp4a dp2a", "s32 u32 lo hi"),
    ("9.7.2 extended-precision integer arithmetic", "addc subc", "cc s32 u32 s64 u64"),
    ("9.7.2 extended-precision integer arithmetic", "madc", "cc hi lo s32 u32 s64 u64"),
    (
        "9.7.3-9.7.5 floating point, half and mixed precision",
        "add sub mul fma mad",
        "f16 f16x2 bf16 bf16x2 f32 f32x2 f64 rn rz rm rp rna ftz sat relu oob",
    ),
    ("9.7.3 floating point", "div", "f32 f64 approx full rn rz rm rp ftz"),
    ("9.7.3-9.7.4 floating point, half precision", "abs neg", "f16 f16x2 bf16 bf16x2 f32 f64 ftz"),
    (
        "9.7.3-9.7.4 floating point, half precision",
        "min max",
        "f16 f16x2 bf16 bf16x2 f32 f64 ftz NaN xorsign abs",
    ),
    (
        "9.7.3 floating point",
        "testp",
        "finite infinite number notanumber normal subnormal f32 f64",
    ),
    ("9.7.3 floating point", "copysign", "f32 f64"),
    ("9.7.3 floating point", "rcp sqrt", "f32 f64 approx rn rz rm rp ftz"),
    ("9.7.3 floating point", "rsqrt", "f32 f64 approx ftz"),
    ("9.7.3 floating point", "sin cos lg2", "f32 approx ftz"),
    ("9.7.3-9.7.4 floating point, half precision", "ex2", "f32 f16 f16x2 bf16 bf16x2 approx ftz"),
    ("9.7.3-9.7.4 floating point, half precision", "tanh", "f32 f16 f16x2 bf16 bf16x2 approx"),
    (
        "9.7.6-9.7.7 comparison and selection",
        "set setp",
        "eq ne lt le gt ge lo ls hi hs equ neu ltu leu gtu geu num nan and or xor ftz \
         b16 b32 b64 u16 u32 u64 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "9.7.6-9.7.7 comparison and selection",
        "selp slct",
        "b16 b32 b64 u16 u32 u64 s16 s32 s64 f32 f64 ftz",
    ),
    ("9.7.8 logic and shift", "and or xor not cnot", "pred b16 b32 b64"),
    ("9.7.8 logic and shift", "lop3", "b32 and or"),
    ("9.7.8 logic and shift", "shf", "l r clamp wrap b32"),
    ("9.7.8 logic and shift", "shl", "b16 b32 b64"),
    ("9.7.8 logic and shift", "shr", "b16 b32 b64 u16 u32 u64 s16 s32 s64"),
    (
        "9.7.9.1 mov",
        "mov",
        "pred b16 b32 b64 b128 u16 u32 u64 s16 s32 s64 f16 f32 f64 v2 v4",
    ),
    ("9.7.9.6 shfl", "shfl", "sync up down bfly idx b32"),
    ("9.7.9.7 prmt", "prmt", "b32 f4e b4e rc8 ecl ecr rc16"),
    (
        "9.7.9.8-9.7.9.10 ld, ld.global.nc, ldu, st",
        "ld ldu st",
        "global shared shared::cta shared::cluster local const param param::entry param::func \
         weak volatile relaxed acquire release mmio cta cluster gpu sys \
         ca cg cs lu cv wb wt nc unified \
         L1::evict_normal L1::evict_unchanged L1::evict_first L1::evict_last L1::no_allocate \
         L2::evict_normal L2::evict_first L2::evict_last L2::cache_hint L2::64B L2::128B L2::256B \
         v2 v4 v8 b8 b16 b32 b64 b128 u8 u16 u32 u64 s8 s16 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64",
    ),
    (
        "9.7.9.11-9.7.9.12 st.async, st.bulk; 9.7.13.7 red.async",
        "st red",
        "async bulk weak mbarrier::complete_tx::bytes",
    ),
    ("9.7.9.12 prefetch", "prefetch prefetchu", "global local const param L1 L2 L2::evict_last L2::evict_normal tensormap"),
    ("9.7.9.18 cvta", "cvta", "to global shared shared::cta shared::cluster local const param param::entry u32 u64"),
    (
        "9.7.9.21 cvt",
        "cvt",
        "rni rzi rmi rpi rn rz rm rp rna rs ftz sat relu satfinite pack \
         u8 u16 u32 u64 s8 s16 s32 s64 b32 f16 f16x2 bf16 bf16x2 f32 f64 tf32 \
         e4m3x2 e5m2x2 e2m3x2 e3m2x2 e2m1x2 ue8m0x2 e4m3x4 e5m2x4 e2m3x4 e3m2x4 e2m1x4",
    ),
    (
        "9.7.9.17 isspacep",
        "isspacep",
        "global shared shared::cta shared::cluster local const param param::entry",
    ),
    // ptxas 12.9 also assembles `.s32`/`.s64` here (measured).
    ("9.7.9.19-9.7.9.20 mapa, getctarank", "mapa getctarank", "shared::cluster u32 u64 s32 s64"),
    (
        "9.7.9.16 createpolicy",
        "createpolicy",
        "fractional range L2::evict_last L2::evict_normal L2::evict_first L2::evict_unchanged b64",
    ),
    ("9.7.9.14 applypriority", "applypriority", "global L2::evict_normal"),
    ("9.7.9.15 discard", "discard", "global L2"),
    ("9.7.12 control flow", "bra call ret", "uni"),
    (
        "9.7.13.1-9.7.13.2 bar, barrier",
        "bar barrier",
        "sync arrive red popc and or u32 pred cta warp cluster wait aligned relaxed release acquire \
         all any",
    ),
    ("9.7.13.4 membar", "membar", "cta gl sys proxy alias"),
    (
        "9.7.13.4 fence",
        "fence",
        "sc acq_rel acquire release cta cluster gpu sys proxy alias async async::global \
         async::shared::cta async::shared::cluster global shared::cta shared::cluster \
         tensormap::generic mbarrier_init op_restrict sync_restrict::shared::cta \
         sync_restrict::shared::cluster",
    ),
    (
        "9.7.13.5-9.7.13.6 atom, red",
        "atom red",
        "relaxed acquire release acq_rel cta cluster gpu sys global shared shared::cta \
         shared::cluster and or xor cas exch add inc dec min max noftz \
         b16 b32 b64 b128 u32 u64 s32 s64 f16 f16x2 bf16 bf16x2 f32 f64 v2 v4 v8 L2::cache_hint",
    ),
    ("9.7.13.8 vote", "vote", "all any uni ballot sync pred b32"),
    ("9.7.13.9 match", "match", "any all sync b32 b64"),
    ("9.7.13.10 activemask", "activemask", "b32"),
    ("9.7.13.11 redux", "redux", "sync add min max and or xor u32 s32 b32 f32 abs NaN"),
    ("9.7.13.12 griddepcontrol", "griddepcontrol", "launch_dependents wait"),
    ("9.7.13.13 elect", "elect", "sync"),
    ("9.7.17 stack manipulation", "stacksave stackrestore alloca", "u32 u64"),
    ("9.7.19 miscellaneous", "nanosleep", "u32"),
    ("9.7.19 miscellaneous", "pmevent", "mask"),
    ("9.7.19 miscellaneous", "exit trap brkpt", ""),
    ("9.7.19 miscellaneous", "setmaxnreg", "inc dec sync aligned u32 s32"),
];

/// Modifiers ptxas 12.9 assembles on every instruction of the table, though no syntax block
/// gives them there (measured by `ptx-corpus/gen/modifiers.py`: `add.finite.s32` and
/// `add.pred.s32` assemble): never a finding, so that the lint stays within what ptxas reads.
pub(crate) const PTXAS_TOLERATED: &[&str] = &[
    "finite",
    "infinite",
    "number",
    "notanumber",
    "normal",
    "subnormal",
    "pred",
];

/// Whether `modifier` (without the dot; `shared::cta` as one) may appear on `opcode`: one of
/// the opcode's row in [`MODIFIERS`] or of [`PTXAS_TOLERATED`]; `None` where the table has no
/// row for the opcode (not checked).
pub(crate) fn modifier_allowed(opcode: &str, modifier: &str) -> Option<bool> {
    type Table = std::collections::HashMap<&'static str, std::collections::HashSet<&'static str>>;
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = Table::new();
        for (_, ops, mods) in MODIFIERS {
            for op in ops.split_whitespace() {
                t.entry(op).or_default().extend(mods.split_whitespace());
            }
        }
        t
    });
    table
        .get(opcode)
        .map(|set| set.contains(modifier) || PTXAS_TOLERATED.contains(&modifier))
}
