#!/usr/bin/env python3
"""Generate ptx-corpus/gen/out/*.ptx from the sources in src/ with every producer available
here, and write a manifest beside each file (NAME.ptx.manifest): producer, version, command
line, and the verdict of ptxas on the file (measured, not assumed).

Producers: NVRTC and libNVVM from the managed CUDA wheels (driven through their C APIs with
ctypes, as the harness's backend::toolchain does), clang-19/clang-14 and llc-19/llc-14 from
Debian, GCC's nvptx offload compiler (gcc-12-offload-nvptx). A producer that is missing is
skipped with a line on stderr. Every tool runs with a time limit.

Run from the repository root:  python3 ptx-corpus/gen/generate.py
(`--hand` instead writes the manifests of the hand-written files in ptx-corpus/hand/;
`--manifests` measures ptxas again for every corpus file without making the PTX again.
With PTXAS13=PATH set, each manifest also records CUDA 13's ptxas verdict: `ptxas13*` lines.)
"""
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
OUT = os.path.join(HERE, "out")
TIMEOUT = 120
CACHE = os.path.expanduser("~/.cache/gpucts/toolchain/cu12.9-r1/nvidia")
PTXAS = os.path.join(CACHE, "cuda_nvcc/bin/ptxas")
NVRTC = os.path.join(CACHE, "cuda_nvrtc/lib/libnvrtc.so.12")
NVVM = os.path.join(CACHE, "cuda_nvcc/nvvm/lib64/libnvvm.so")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, **kw)


def version_of(cmd):
    try:
        r = run(cmd)
        return (r.stdout or r.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


# A second verdict source: CUDA 13's ptxas (the PyPI wheel nvidia-cuda-nvcc 13.x, unpacked;
# its ptxas is nvidia/cu13/bin/ptxas), given by PTXAS13=PATH. Optional: the manifests record
# it when it was there, and the suite holds the lint to each verdict recorded.
PTXAS13 = os.environ.get("PTXAS13")


def ptxas_verdict(path, ptxas=PTXAS, oldest="sm_52", release="12.9"):
    """ptxas on the file, for the arch its .target names (compile-only where the ISA allows);
    a .target the ptxas no longer has is judged for `oldest` (12.9: sm_52; 13.0 dropped
    sm_5x-sm_7x below sm_75)."""
    text = open(path, encoding="ascii", errors="replace").read()
    m = re.search(r"\.target\s+(sm_\d+[a-z]?)", text)
    arch = m.group(1) if m else oldest
    v = re.search(r"\.version\s+(\d+)\.(\d+)", text)
    compile_only = v is None or (int(v.group(1)), int(v.group(2))) >= (3, 1)
    cmd = [ptxas, f"-arch={arch}", "-O0"] + (["-c"] if compile_only else []) + [path, "-o", os.devnull]
    try:
        r = run(cmd)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    msg = " ".join(l.strip() for l in r.stderr.splitlines() if "error" in l or "fatal" in l)
    if "is not defined for option 'gpu-name'" in msg and arch != oldest:
        # ptxas has dropped the .target (sm_30 of GCC 12): judge the text for `oldest`.
        cmd[1] = f"-arch={oldest}"
        r = run(cmd)
        msg = f"(.target {arch} unknown to ptxas {release}; assembled with -arch={oldest}) " + " ".join(
            l.strip() for l in r.stderr.splitlines() if "error" in l or "fatal" in l)
    msg = msg.replace(path, os.path.basename(path))
    if r.returncode == 0:
        return "accepts", msg
    if "no longer supported" in msg or "Unsupported .version" in msg:
        # ptxas 12.9 cannot assemble 32-bit PTX at all, nor PTX newer than ISA 8.8: no
        # verdict on the text.
        return "unsupported", msg
    return "rejects", msg


def reason(verdict, msg):
    """Why ptxas refused: syntax (the text is not PTX), version (a feature newer than the
    module's .version), name (an opcode or symbol it does not know), semantic (well-formed PTX that does not assemble), internal (a ptxas
    internal error)."""
    if verdict != "rejects":
        return "-"
    if "Internal error" in msg:
        return "internal"
    if "requires PTX ISA" in msg:
        return "version"
    if ("Not a name of any known instruction" in msg or "Unknown symbol" in msg
            or "Unknown modifier" in msg or "Illegal modifier" in msg):
        # An opcode, a modifier of an opcode or a symbol ptxas does not know (after parsing):
        # the text is not PTX it can read either.
        return "name"
    syntax = ["Parsing error", "Missing .version", "Missing .target", "non-ASCII",
              "unexpected EOF", "syntax error"]
    if any(s in msg for s in syntax) or msg.startswith("ptxas fatal   : Unexpected"):
        return "syntax"
    return "semantic"


def write(name, ptx, producer, version, command):
    path = os.path.join(OUT, name + ".ptx")
    with open(path, "w") as f:
        f.write(ptx)
    manifest(path, producer, version, command)


def manifest(path, producer, version, command):
    """NAME.ptx.manifest beside the file, with ptxas's verdict measured now."""
    name = os.path.basename(path)[: -len(".ptx")]
    verdict, msg = ptxas_verdict(path)
    rel = os.path.relpath(path, os.path.join(HERE, "..", ".."))
    with open(path + ".manifest", "w") as f:
        f.write(f"file: {rel}\nproducer: {producer}\nversion: {version}\n")
        f.write(f"command: {command}\n")
        f.write(f"ptxas: {verdict}\nptxas_reason: {reason(verdict, msg)}\n")
        # The reason is judged on the whole message; the manifest keeps its first 300 bytes.
        f.write(f"ptxas_version: 12.9.86\nptxas_message: {msg[:300]}\n")
        if PTXAS13:
            v13, m13 = ptxas_verdict(path, PTXAS13, "sm_75", "13.0")
            f.write(f"ptxas13: {v13}\nptxas13_reason: {reason(v13, m13)}\n")
            f.write(f"ptxas13_version: {version_of([PTXAS13, '--version'])}\n")
            f.write(f"ptxas13_message: {m13[:300]}\n")
    print(f"{name:40} {producer:8} {verdict}", file=sys.stderr)


def nvrtc(name, src, opts):
    if not os.path.exists(NVRTC):
        print("skip NVRTC: not installed (cargo run -- toolchain install)", file=sys.stderr)
        return
    lib = ctypes.CDLL(NVRTC)
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    prog = ctypes.c_void_p()
    code = open(os.path.join(SRC, src)).read().encode()
    lib.nvrtcCreateProgram(ctypes.byref(prog), code, src.encode(), 0, None, None)
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        print(f"NVRTC failed on {src} {opts}: {log.value.decode()}", file=sys.stderr)
        return
    lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetPTX(prog, buf)
    write(name, buf.value.decode(), "NVRTC", f"{major.value}.{minor.value}",
          f"nvrtcCompileProgram(gen/src/{src}, {' '.join(opts)})")


def nvvm(name, src, opts):
    if not os.path.exists(NVVM):
        print("skip libNVVM: not installed", file=sys.stderr)
        return
    lib = ctypes.CDLL(NVVM)
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvvmVersion(ctypes.byref(major), ctypes.byref(minor))
    ir_major, ir_minor, dbg_major, dbg_minor = (ctypes.c_int() for _ in range(4))
    prog = ctypes.c_void_p()
    lib.nvvmCreateProgram(ctypes.byref(prog))
    code = open(os.path.join(SRC, src), "rb").read()
    lib.nvvmAddModuleToProgram(prog, code, ctypes.c_size_t(len(code)), src.encode())
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvvmCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    if rc != 0:
        lib.nvvmGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvvmGetProgramLog(prog, log)
        print(f"libNVVM failed on {src}: {log.value.decode()}", file=sys.stderr)
        return
    lib.nvvmGetCompiledResultSize(prog, ctypes.byref(size))
    buf = ctypes.create_string_buffer(size.value)
    lib.nvvmGetCompiledResult(prog, buf)
    write(name, buf.value.decode(), "libNVVM", f"{major.value}.{minor.value}",
          f"nvvmCompileProgram(gen/src/{src}, {' '.join(opts)})")


def tool(name, producer, exe, args, src):
    path = shutil.which(exe)
    if path is None:
        print(f"skip {exe}: not installed", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.ptx")
        cmd = [exe] + args + ["-o", out, os.path.join(SRC, src)]
        r = run(cmd)
        if r.returncode != 0 or not os.path.exists(out):
            print(f"{exe} failed: {r.stderr[:500]}", file=sys.stderr)
            return
        ptx = open(out).read()
    version = version_of([exe, "--version"]) or "?"
    shown = " ".join([exe] + args + ["-o", name + ".ptx", "gen/src/" + src])
    write(name, ptx, producer, version, shown)


def remeasure():
    """`--manifests`: measure ptxas again (and PTXAS13 when given) for every corpus file,
    keeping the producer, version and command its manifest records; the PTX is not made
    again."""
    files = sorted(glob.glob(os.path.join(OUT, "*.ptx")))
    files += sorted(glob.glob(os.path.join(HERE, "..", "hand", "*.ptx")))
    files += sorted(glob.glob(os.path.join(HERE, "..", "*.ptx")))
    for path in files:
        path = os.path.normpath(path)
        if not os.path.exists(path + ".manifest"):
            continue
        kv = dict(l.split(": ", 1) for l in open(path + ".manifest").read().splitlines() if ": " in l)
        manifest(path, kv.get("producer", "-"), kv.get("version", "-"), kv.get("command", "-"))


def hand_manifests():
    """Manifests of the hand-written files in ptx-corpus/hand/ (ptxas verdict measured)."""
    for path in sorted(glob.glob(os.path.join(HERE, "..", "hand", "*.ptx"))):
        manifest(os.path.normpath(path), "hand-written", "-", "-")


def main():
    if sys.argv[1:] == ["--hand"]:
        hand_manifests()
        return
    if sys.argv[1:] == ["--manifests"]:
        remeasure()
        return
    os.makedirs(OUT, exist_ok=True)
    for old in glob.glob(os.path.join(OUT, "*.ptx*")):
        os.remove(old)
    for arch in ["compute_52", "compute_90"]:
        nvrtc(f"nvrtc-12.9_{arch}", "abi.cu", ["-rdc=true", f"--gpu-architecture={arch}"])
    nvrtc("nvrtc-12.9_compute_90_G", "abi.cu", ["-rdc=true", "--gpu-architecture=compute_90", "-G"])
    nvrtc("nvrtc-12.9_compute_90_lineinfo", "abi.cu",
          ["-rdc=true", "--gpu-architecture=compute_90", "-lineinfo"])
    nvrtc("nvrtc-12.9_compute_75_wholeprogram", "abi.cu", ["--gpu-architecture=compute_75"])
    for arch in ["compute_52", "compute_90"]:
        nvvm(f"libnvvm-12.9_{arch}", "abi_nvvm.ll", [f"-arch={arch}"])
    nvvm("libnvvm-12.9_compute_90_g", "abi_nvvm.ll", ["-arch=compute_90", "-g"])
    for clang in ["clang-19", "clang-14"]:
        for tgt, arch, opt in [("nvptx64", "sm_52", "-O0"), ("nvptx64", "sm_90", "-O2"),
                               ("nvptx", "sm_52", "-O2"), ("nvptx64", "sm_70", "-g")]:
            if clang == "clang-14" and arch == "sm_90":
                arch = "sm_86"
            if clang == "clang-14" and opt == "-g":
                continue  # clang 14.0.6 crashes on -g for nvptx64 (measured): no output
            args = [f"--target={tgt}-nvidia-cuda", f"-march={arch}", opt, "-S",
                    "-Wno-unknown-cuda-version"]
            if opt == "-g":
                args = args + ["-O1"]
            tool(f"{clang}_{tgt}_{arch}{opt}", "clang", clang, args, "abi.c")
    for llc, attr, src in [("llc-19", "+ptx64", "abi_llvm.ll"), ("llc-19", "+ptx80", "abi_llvm.ll"),
                           ("llc-14", "+ptx64", "abi_llvm14.ll")]:
        for arch in ["sm_52", "sm_80"]:
            tool(f"{llc}_{arch}_{attr[1:]}", "llc", llc,
                 [f"-mcpu={arch}", f"-mattr={attr}", "-O2"], src)
    for opt in ["-O0", "-O2"]:
        gcc_offload(f"gcc-12-nvptx-offload{opt}", opt, "omp.c")


def gcc_offload(name, opt, src):
    """GCC's nvptx offload compiler has no cc1 of its own: it runs at link time (LTO) under
    mkoffload. `-save-temps` keeps the PTX it writes (*.xnvptx-none.mkoffload.s)."""
    if shutil.which("gcc-12") is None or shutil.which("x86_64-linux-gnu-accel-nvptx-none-gcc-12") is None:
        print("skip GCC nvptx offload: apt-get install gcc-12-offload-nvptx", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as d:
        cmd = ["gcc-12", opt, "-fopenmp", "-foffload=nvptx-none", "-save-temps",
               os.path.join(SRC, src), "-o", "a.out"]
        run(cmd, cwd=d)  # the final link may fail (no libgomp plugin here); the PTX is kept
        found = glob.glob(os.path.join(d, "*.xnvptx-none.mkoffload.s"))
        if not found:
            print(f"GCC nvptx offload wrote no PTX for {src}", file=sys.stderr)
            return
        ptx = open(found[0]).read()
    version = version_of(["x86_64-linux-gnu-accel-nvptx-none-gcc-12", "--version"]) or "?"
    write(name, ptx, "gcc", version,
          f"gcc-12 {opt} -fopenmp -foffload=nvptx-none -save-temps gen/src/{src} "
          "(PTX from *.xnvptx-none.mkoffload.s)")


if __name__ == "__main__":
    main()
