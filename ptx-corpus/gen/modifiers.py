#!/usr/bin/env python3
"""Measure, with ptxas, which instruction modifiers each opcode of the reader's modifier table
takes, and write the verdicts to ptx-corpus/gen/out/modifiers-ptxas-VERSION.txt.

The table under test is `MODIFIERS` in crates/ptx/src/instr/table.rs (the PTX ISA ch. 9.7 syntax
blocks). This script takes from it only *what to try*: its opcodes, and every modifier any row
names (plus modifiers of other instructions and misspellings, below). For each opcode it
writes PTX with one instruction per line, each a form of the opcode known to assemble (FORMS)
with one modifier `.M` put in at `{M}`, and records which lines ptxas accepts. A line ptxas
refuses is recorded with ptxas's message. The test `modifier_table_agrees_with_ptxas`
(crates/ptx/src/instr/table.rs) then holds the table to these verdicts: a modifier outside an
opcode's set must be refused in every form, and one ptxas accepts in some form must be in it.

Each form is tried under two targets (sm_100a with ISA 8.8, and sm_52 for the forms that
sm_70 removed, such as `shfl` and `vote` without `.sync`); a modifier is accepted when one
line with it assembles under one of them. ptxas runs with a time limit. When a line stops
ptxas's parser (a syntax error), the lines after it are tried again in a new file.

Run from the repository root:  python3 ptx-corpus/gen/modifiers.py [PTXAS]
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
TIMEOUT = 120
PTXAS = os.path.expanduser("~/.cache/gpucts/toolchain/cu12.9-r1/nvidia/cuda_nvcc/bin/ptxas")

# Modifiers of instructions outside the table, and misspellings: none may be taken silently.
EXTRA = """foo relaxd acquired wide_ s8x4 u8x4 e4m3 ue8m0 x2 x4 async bulk multicast::cluster
mbarrier::complete_tx::bytes tile im2col 1d 2d 3d b1 u4 s4 m16n8k16 row col aligned_ L3
L2::evict_unchanged_ shared::gpu param::kernel evict_last cache_hint volatile_ approx_ rnd
sat_ lo_ hi_ ftz_ arrive_on expect_tx trans x1 num_ nanf lt_ f8 f128 s128 u128 b256""".split()

TARGETS = [("8.8", "sm_100a"), ("8.8", "sm_52")]

# Forms known to assemble without `{M}`; `{o}` is the opcode.
R3, R4 = "%r1, %r2, %r3", "%r1, %r2, %r3, %r4"
FORMS = {
    "add sub": ["{o}{M}.s32 " + R3, "{o}{M}.f32 " + R3, "{o}{M} " + R3, "{o}{M} %rd1, %rd2, %rd3",
                "{o}{M} %h1, %h2, %h3", "{o}.rn{M} " + R3, "{o}.cc{M} " + R3],
    "mul": ["{o}{M}.lo.s32 " + R3, "{o}{M}.wide.s32 %rd1, %r2, %r3", "{o}{M}.f32 " + R3,
            "{o}.lo{M} " + R3, "{o}{M} " + R3, "{o}.rn{M} " + R3, "{o}.rn{M} %h1, %h2, %h3",
            "{o}{M} %rd1, %rd2, %rd3"],
    "mad": ["{o}{M}.lo.s32 " + R4, "{o}{M}.rn.f32 " + R4, "{o}.lo{M} " + R4, "{o}.rn{M} " + R4,
            "{o}{M} " + R4, "{o}.rn{M} %rd1, %rd2, %rd3, %rd4", "{o}.rn{M} %h1, %h2, %h3, %h4"],
    "fma": ["{o}{M}.rn.f32 " + R4, "{o}.rn{M} " + R4, "{o}.rn{M} %h1, %h2, %h3, %h4",
            "{o}.rn{M} %rd1, %rd2, %rd3, %rd4", "{o}{M} " + R4],
    "mul24 mad24": ["{o}{M}.lo.s32 " + R3, "{o}.lo{M} " + R3, "{o}{M}.lo.s32 " + R4,
                    "{o}.lo{M} " + R4],
    "sad": ["{o}{M} " + R4, "{o}{M}.u32 " + R4],
    "div rem": ["{o}{M} " + R3, "{o}{M}.s32 " + R3, "{o}.rn{M} " + R3, "{o}.approx{M} " + R3,
                "{o}{M} %rd1, %rd2, %rd3", "{o}.rn{M} %rd1, %rd2, %rd3", "{o}{M}.f32 " + R3],
    "abs neg": ["{o}{M} %r1, %r2", "{o}{M}.s32 %r1, %r2", "{o}{M}.f32 %r1, %r2",
                "{o}{M} %h1, %h2", "{o}{M} %rd1, %rd2"],
    "min max": ["{o}{M}.s32 " + R3, "{o}{M}.f32 " + R3, "{o}{M} " + R3, "{o}{M} %rd1, %rd2, %rd3",
                "{o}{M} %h1, %h2, %h3", "{o}.NaN{M} " + R3, "{o}.xorsign.abs{M} %h1, %h2, %h3"],
    "popc clz brev": ["{o}{M} %r1, %r2", "{o}{M} %r1, %rd2", "{o}{M} %rd1, %rd2"],
    "bfind": ["{o}{M} %r1, %r2", "{o}{M}.u32 %r1, %r2", "{o}{M} %r1, %rd2"],
    "fns": ["{o}{M} " + R4],
    "bfe": ["{o}{M} " + R4, "{o}{M} %rd1, %rd2, %r3, %r4"],
    "bfi": ["{o}{M} %r1, %r2, %r3, %r4, %r5", "{o}{M} %rd1, %rd2, %rd3, %r4, %r5"],
    "szext": ["{o}{M}.s32 " + R3, "{o}.clamp{M} " + R3, "{o}{M} " + R3],
    "bmsk": ["{o}{M}.b32 " + R3, "{o}.clamp{M} " + R3, "{o}{M} " + R3],
    "dp4a": ["{o}{M} " + R4, "{o}{M}.u32 " + R4, "{o}.u32{M} " + R4],
    "dp2a": ["{o}{M}.u32.u32 " + R4, "{o}.lo{M} " + R4, "{o}.lo{M}.u32 " + R4,
             "{o}.lo.u32{M} " + R4],
    "addc subc": ["{o}{M}.u32 " + R3, "{o}.cc{M} " + R3, "{o}{M} " + R3, "{o}.cc{M} %rd1, %rd2, %rd3"],
    "madc": ["{o}{M}.lo.u32 " + R4, "{o}.lo{M} " + R4, "{o}{M} " + R4, "{o}.lo.cc{M} " + R4],
    "testp": ["{o}{M} %p1, %r1", "{o}{M}.f32 %p1, %r1", "{o}.finite{M} %p1, %r1",
              "{o}.finite{M} %p1, %rd1"],
    "copysign": ["{o}{M} " + R3, "{o}{M} %rd1, %rd2, %rd3"],
    "rcp sqrt": ["{o}{M} %r1, %r2", "{o}{M}.f32 %r1, %r2", "{o}.rn{M} %r1, %r2",
                 "{o}.approx{M} %r1, %r2", "{o}.rn{M} %rd1, %rd2", "{o}.approx.ftz{M} %rd1, %rd2"],
    "rsqrt": ["{o}.approx{M} %r1, %r2", "{o}{M}.f32 %r1, %r2", "{o}.approx{M} %rd1, %rd2",
              "{o}{M} %r1, %r2"],
    "sin cos lg2": ["{o}.approx{M} %r1, %r2", "{o}{M}.approx.f32 %r1, %r2", "{o}{M} %r1, %r2"],
    "ex2 tanh": ["{o}.approx{M} %r1, %r2", "{o}{M}.approx.f32 %r1, %r2", "{o}{M} %r1, %r2",
                 "{o}.approx{M} %h1, %h2"],
    "setp": ["{o}{M}.s32 %p1, %r1, %r2", "{o}.eq{M} %p1, %r1, %r2", "{o}.eq{M}.s32 %p1, %r1, %r2, %p2",
             "{o}.eq{M}.f32 %p1, %r1, %r2", "{o}.eq{M} %p1, %h1, %h2", "{o}.eq{M} %p1, %rd1, %rd2"],
    "set": ["{o}.eq{M}.s32 " + R3, "{o}.eq.u32{M} " + R3, "{o}{M}.u32.s32 " + R3,
            "{o}.eq{M}.u32.s32 %r1, %r2, %r3, %p1", "{o}.eq.u32{M} %r1, %rd2, %rd3",
            "{o}.eq{M}.f32.f32 " + R3],
    "selp": ["{o}{M} %r1, %r2, %r3, %p1", "{o}{M} %rd1, %rd2, %rd3, %p1", "{o}{M} %h1, %h2, %h3, %p1"],
    "slct": ["{o}{M}.s32 " + R4, "{o}.u32{M} " + R4, "{o}{M}.f32 " + R4, "{o}.ftz{M}.f32 " + R4],
    "and or xor": ["{o}{M} " + R3, "{o}{M} %p1, %p2, %p3", "{o}{M} %rd1, %rd2, %rd3",
                   "{o}{M} %h1, %h2, %h3"],
    "not cnot": ["{o}{M} %r1, %r2", "{o}{M} %p1, %p2", "{o}{M} %rd1, %rd2", "{o}{M} %h1, %h2"],
    "lop3": ["{o}{M} %r1, %r2, %r3, %r4, 0x80", "{o}{M}.b32 %r1, %r2, %r3, %r4, 0x80"],
    "shf": ["{o}{M}.wrap.b32 " + R4, "{o}.l{M}.b32 " + R4, "{o}.l.wrap{M} " + R4],
    "shl shr": ["{o}{M} " + R3, "{o}{M} %rd1, %rd2, %r3", "{o}{M} %h1, %h2, %r3"],
    "mov": ["{o}{M} %r1, %r2", "{o}{M} %rd1, %rd2", "{o}{M} %h1, %h2", "{o}{M} %p1, %p2",
            "{o}{M} %q1, %q2", "{o}{M}.b32 {%r1, %r2}, {%r3, %r4}", "{o}{M} %rd1, {%r1, %r2}"],
    "shfl": ["{o}.sync{M}.b32 %r1, %r2, %r3, %r4, %r5", "{o}{M}.idx.b32 %r1, %r2, %r3, %r4, %r5",
             "{o}.sync.idx{M} %r1, %r2, %r3, %r4, %r5", "{o}{M}.b32 " + R4, "{o}.idx{M} " + R4],
    "prmt": ["{o}{M} " + R4, "{o}.b32{M} " + R3],
    "ld": ["{o}{M}.u32 %r1, [%rd1]", "{o}.global{M}.u32 %r1, [%rd1]", "{o}{M} %r1, [%rd1]",
           "{o}.global{M} %r1, [%rd1]", "{o}.global{M} %rd1, [%rd2]", "{o}.global{M} %h1, [%rd1]",
           "{o}.global{M} %q1, [%rd1]", "{o}.global{M}.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1]",
           "{o}.global.relaxed{M}.u32 %r1, [%rd1]", "{o}.global.nc{M}.u32 %r1, [%rd1]"],
    "ldu": ["{o}.global{M}.u32 %r1, [%rd1]", "{o}{M}.u32 %r1, [%rd1]", "{o}.global{M} %r1, [%rd1]"],
    "st": ["{o}{M}.u32 [%rd1], %r1", "{o}.global{M}.u32 [%rd1], %r1", "{o}.global{M} [%rd1], %r1",
           "{o}.global{M} [%rd1], %rd2", "{o}.global{M} [%rd1], %h1", "{o}.global{M} [%rd1], %q1",
           "{o}.global.relaxed{M}.u32 [%rd1], %r1",
           "{o}.global{M}.v4.u32 [%rd1], {%r1, %r2, %r3, %r4}"],
    "prefetch": ["{o}{M} [%rd1]", "{o}.global{M} [%rd1]", "{o}{M}.L2 [%rd1]"],
    "prefetchu": ["{o}{M} [%rd1]"],
    "cvta": ["{o}{M}.u64 %rd1, %rd2", "{o}.to{M}.u64 %rd1, %rd2", "{o}.global{M} %rd1, %rd2",
             "{o}.to.global{M} %rd1, %rd2"],
    "cvt": ["{o}{M}.f32.s32 %r1, %r2", "{o}.rn{M}.s32 %r1, %r2", "{o}.rn.f32{M} %r1, %r2",
            "{o}{M} %r1, %r2", "{o}{M}.u32.u64 %r1, %rd1", "{o}.u64{M} %rd1, %r1",
            "{o}.rn{M}.f32 %h1, %r2", "{o}.f32{M} %r1, %h1", "{o}{M}.s32.f32 %r1, %r2",
            "{o}.rn.satfinite{M}.f32 %h1, %r1, %r2", "{o}.rn{M}.f32 %r1, %r2, %r3",
            "{o}.u8{M} %h1, %h2", "{o}.u16{M} %h1, %h2"],
    "isspacep": ["{o}{M} %p1, %rd1"],
    "mapa": ["{o}{M}.u64 %rd1, %rd2, %r1", "{o}.shared::cluster{M} %rd1, %rd2, %r1",
             "{o}{M} %rd1, %rd2, %r1"],
    "getctarank": ["{o}{M}.u64 %r1, %rd1", "{o}.shared::cluster{M} %r1, %rd1", "{o}{M} %r1, %rd1"],
    "createpolicy": ["{o}.fractional{M}.b64 %rd1, 1.0", "{o}{M}.L2::evict_last.b64 %rd1, 1.0",
                     "{o}.fractional.L2::evict_last{M} %rd1, 1.0"],
    "applypriority": ["{o}{M}.L2::evict_normal [%rd1], 128", "{o}.global{M} [%rd1], 128"],
    "discard": ["{o}{M}.L2 [%rd1], 128", "{o}.global{M} [%rd1], 128"],
    "bra": ["{o}{M} L1"],
    "call": ["{o}{M} f", "{o}{M} (%r1), g, (%r2)"],
    "ret exit trap brkpt": ["{o}{M}"],
    "bar": ["{o}{M}.sync 0", "{o}{M} 0", "{o}.sync{M} 0", "{o}.red.popc{M} %r1, 0, %p1",
            "{o}.red{M}.pred %p1, 0, %p2", "{o}.red.or{M} %p1, 0, %p2", "{o}.warp{M} 0xffffffff",
            "{o}.cta{M} 0"],
    "barrier": ["{o}{M} 0", "{o}.sync{M} 0", "{o}.cluster{M}", "{o}.cluster.arrive{M}",
                "{o}{M}.sync 0", "{o}.red.popc{M} %r1, 0, %p1"],
    "membar": ["{o}{M}", "{o}.proxy{M}"],
    "fence": ["{o}{M}", "{o}{M}.gpu", "{o}.acq_rel{M}", "{o}.proxy{M}", "{o}{M}.release.cluster",
              "{o}.proxy.tensormap::generic{M}.gpu", "{o}.proxy.async{M}"],
    "atom": ["{o}{M}.add.u32 %r1, [%rd1], %r2", "{o}.global{M}.u32 %r1, [%rd1], %r2",
             "{o}.global.add{M} %r1, [%rd1], %r2", "{o}.relaxed{M}.global.add.u32 %r1, [%rd1], %r2",
             "{o}.global.cas{M} %r1, [%rd1], %r2, %r3", "{o}.global.add{M} %rd1, [%rd2], %rd3",
             "{o}.global.add.noftz{M} %h1, [%rd1], %h2", "{o}{M}.global.add.f32 %r1, [%rd1], %r2"],
    "red": ["{o}{M}.add.u32 [%rd1], %r2", "{o}.global{M}.u32 [%rd1], %r2",
            "{o}.global.add{M} [%rd1], %r2", "{o}.relaxed{M}.global.add.u32 [%rd1], %r2",
            "{o}.global.add{M} [%rd2], %rd3", "{o}.global.add.noftz{M} [%rd1], %h2"],
    "vote": ["{o}.sync{M}.pred %p1, %p2, 0xffffffff", "{o}{M}.all.pred %p1, %p2, 0xffffffff",
             "{o}.sync.ballot{M} %r1, %p1, 0xffffffff", "{o}{M}.pred %p1, %p2", "{o}.all{M} %p1, %p2",
             "{o}.ballot{M} %r1, %p1"],
    "match": ["{o}.any.sync{M} %r1, %r2, 0xffffffff", "{o}{M}.sync.b32 %r1, %r2, 0xffffffff",
              "{o}.any{M}.b32 %r1, %r2, 0xffffffff"],
    "activemask": ["{o}{M} %r1"],
    "redux": ["{o}.sync{M}.u32 %r1, %r2, 0xffffffff", "{o}{M}.add.u32 %r1, %r2, 0xffffffff",
              "{o}.sync.add{M} %r1, %r2, 0xffffffff", "{o}.sync.min{M}.f32 %r1, %r2, 0xffffffff"],
    "griddepcontrol": ["{o}{M}"],
    "elect": ["{o}{M} %r1|%p1, 0xffffffff"],
    "stacksave": ["{o}{M} %rd1"],
    "stackrestore": ["{o}{M} %rd1"],
    "alloca": ["{o}{M} %rd1, %rd2"],
    "nanosleep": ["{o}{M} %r1"],
    "pmevent": ["{o}{M} 1"],
    "setmaxnreg": ["{o}{M}.sync.aligned.u32 64", "{o}.inc{M}.aligned.u32 64",
                   "{o}.inc.sync{M}.u32 64", "{o}.inc.sync.aligned{M} 64"],
}

HEAD = """.version {v}
.target {t}
.address_size 64
.func f() {{ ret; }}
.func (.reg .b32 r) g(.reg .b32 a) {{ mov.b32 r, a; ret; }}
.visible .entry k(.param .u64 p)
{{
.reg .b16 %h<8>;
.reg .b32 %r<8>;
.reg .b64 %rd<8>;
.reg .pred %p<4>;
{b128}
ld.param.u64 %rd1, [p];
"""


def table():
    """(opcodes in table order, every modifier any row names) from crates/ptx/src/instr/table.rs."""
    src = open(os.path.join(ROOT, "crates/ptx/src/instr/table.rs")).read()
    block = src[src.index("const MODIFIERS"):]
    block = block[: block.index("];")]
    # Each row is a tuple of three string literals (the last one may span lines with `\`).
    lits = [re.sub(r"\\\n\s*", "", s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', block, re.S)]
    ops, mods = [], []
    for i in range(0, len(lits) - 2, 3):
        for o in lits[i + 1].split():
            if o not in ops:
                ops.append(o)
        for m in lits[i + 2].split():
            if m not in mods:
                mods.append(m)
    return ops, mods


def forms_of(op):
    for ops, forms in FORMS.items():
        if op in ops.split():
            return forms
    return None


def ptxas_run(ptxas, version, target, lines):
    """Assemble HEAD + lines: (ptxas's exit status, {index: first error message}, the index of
    the first line that stopped ptxas (a fatal error: the lines after it were not judged), or
    None). Raises on a timeout."""
    b128 = ".reg .b128 %q<4>;" if target != "sm_52" else ".reg .b64 %q<4>;"
    head = HEAD.format(v=version, t=target, b128=b128)
    first = head.count("\n") + 1
    body = "".join(f"{l};\n" for l in lines) + "L1:\nret;\n}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(head + body)
        path = f.name
    try:
        r = subprocess.run([ptxas, f"-arch={target}", "-c", path, "-o", os.devnull],
                           capture_output=True, text=True, timeout=TIMEOUT)
    finally:
        os.unlink(path)
    errs, stop = {}, None
    for l in r.stderr.splitlines():
        m = re.match(r"ptxas .*?, line (\d+); (error|fatal)\s*:\s*(.*)", l)
        if not m:
            continue
        i = int(m.group(1)) - first
        if 0 <= i < len(lines):
            errs.setdefault(i, m.group(3).strip())
            if m.group(2) == "fatal":
                stop = i if stop is None else min(stop, i)
    return r.returncode, errs, stop


def judge(ptxas, version, target, lines, out):
    """Set out[i] to None for each line ptxas assembles and to its message otherwise. A line
    counts as assembled only when a run of ptxas over it (and others) exits 0."""
    todo = list(range(len(lines)))
    while todo:
        rc, errs, stop = ptxas_run(ptxas, version, target, [lines[i] for i in todo])
        if rc == 0:
            for i in todo:
                out[i] = None
            return
        upto = len(todo) if stop is None else stop + 1
        refused = [todo[k] for k in range(upto) if k in errs]
        for k in range(upto):
            if k in errs:
                out.setdefault(todo[k], errs[k])
        if not refused:
            if len(todo) == 1:
                out.setdefault(todo[0], "ptxas refused the file without naming the line")
                return
            # No line named: judge each half on its own.
            half = len(todo) // 2
            judge(ptxas, version, target, [lines[i] for i in todo[:half]], sub := {})
            for k, v in sub.items():
                out[todo[k]] = v if out.get(todo[k], v) is not None else None
            rest = todo[half:]
            judge(ptxas, version, target, [lines[i] for i in rest], sub := {})
            for k, v in sub.items():
                out[rest[k]] = v if out.get(rest[k], v) is not None else None
            return
        # The refused lines are out; the others are tried again without them.
        todo = [i for i in todo if i not in set(refused)]


def verdicts(ptxas, lines):
    """{index: None (assembled under one of TARGETS) or the first message} for each line."""
    out = {}
    for version, target in TARGETS:
        got = {}
        judge(ptxas, version, target, lines, got)
        for i, v in got.items():
            if v is None or out.get(i, v) is None:
                out[i] = None
            else:
                out.setdefault(i, v)
    return out


def main():
    ptxas = sys.argv[1] if len(sys.argv) > 1 else PTXAS
    ver = subprocess.run([ptxas, "--version"], capture_output=True, text=True, timeout=TIMEOUT)
    release = re.search(r"V(\d+\.\d+\.\d+)", ver.stdout).group(1)
    ops, mods = table()
    universe = mods + [m for m in EXTRA if m not in mods]
    rows = []
    for op in ops:
        forms = forms_of(op)
        if forms is None:
            rows.append(f"noform {op}")
            continue
        lines, keys = [], []
        for form in forms:
            for m in universe:
                lines.append(form.replace("{o}", op).replace("{M}", "." + m))
                keys.append(m)
        got = verdicts(ptxas, lines)
        accepted, refused = [], {}
        for m in universe:
            idx = [i for i, k in enumerate(keys) if k == m]
            if any(got[i] is None for i in idx):
                accepted.append(m)
            else:
                # ptxas's message on the first form, with the modifier's name as `.M`.
                msg = re.sub(r"\s+", " ", got[idx[0]]).replace("'." + m + "'", "'.M'")
                refused.setdefault(msg, []).append(m)
        rows.append(f"accept {op} | {' '.join(accepted)}")
        for msg, ms in refused.items():
            rows.append(f"refuse {op} {msg} | {' '.join(ms)}")
        print(f"{op:15} {len(accepted):4} accepted of {len(universe)}", file=sys.stderr)
    out = os.path.join(HERE, "out", f"modifiers-ptxas-{release.rsplit('.', 1)[0]}.txt")
    with open(out, "w") as f:
        f.write(f"# ptxas {release}: instruction modifiers, measured by ptx-corpus/gen/modifiers.py\n")
        f.write(f"# targets: {', '.join(f'.version {v} {t}' for v, t in TARGETS)}\n")
        f.write("# accept OPCODE | the modifiers ptxas assembles in one form or more\n")
        f.write("# refuse OPCODE MESSAGE | the modifiers refused in every form (MESSAGE: ptxas's on the first)\n")
        f.write("\n".join(rows) + "\n")
    print(f"wrote {os.path.relpath(out, ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
