#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Cycles per loop iteration of the kernels' hot loops on ARM cores and on the x86 cores not at
hand, from LLVM's machine-code analyzer (llvm-mca): a MODEL ESTIMATE, not a measurement (there
is no ARM board here, timings under QEMU mean nothing, and the Zen 3 / Zen 4 boxes are not
always the machine at hand).

For each target (aarch64, armv7, Cortex-M4, Cortex-M7, Cortex-M55, x86-avx2, x86-avx512; and
for the integer loops aarch64+dotprod, aarch64+i8mm and x86-avx512+vnni, the same toolchains
with SDOT's -march=armv8.2-a+dotprod, SMMLA's -march=armv8.2-a+dotprod+i8mm or -mavx512vnni)
the tool compiles
tools/mca/probes.cpp with the project's cross compiler (the host's g++ for x86) and the flags of its toolchain file (read from toolchains/*.cmake
with `cmake -P`, so they cannot drift apart) plus the Release flags (-O3 -DNDEBUG; --opt O2
or Os for a user's RelWithDebInfo or MinSizeRel build), to assembly. Each probe is one
extern "C" function holding one hot loop: the GEMM micro-kernel, the attention tile's Q K^T,
P V and exp2 loops, the whole attention tile kernel (attn_rows), the decode GEMVs, exp. In each probe's assembly (and the functions it
calls) the tool takes the innermost loop with the most multiply-add lanes, and runs llvm-mca
on that loop body for each core:

    llvm-mca -mtriple=<triple> -mcpu=<model cpu> -iterations=500 <loop body>

and prints
  cycles/iter  llvm-mca's Total Cycles / Iterations (steady state, dependencies included)
  RThru        llvm-mca's Block RThroughput (resource bound only)
  FMA bound    multiply-add lanes in the loop / the core's peak multiply-add lanes per cycle
               in the same model (measured by llvm-mca on a block of independent FMAs)
  % bound      FMA bound / cycles per iteration (100 % = the FMA pipes never idle)
  stack        loads/stores to the stack in the loop (register spills)

Models (what LLVM has; the core a row names is not always the model it uses):
  Cortex-A76  LLVM has no Cortex-A76 model (its -mcpu=cortex-a76 uses the Cortex-A57 model,
              in LLVM 14 and 19 alike). The Neoverse N1 is the A76's server derivative (same
              core pipelines: two 128-bit FP/ASIMD pipes, two load pipes); LLVM 19 has an N1
              model (LLVM 14 does not), used here (-mcpu=neoverse-n1). With an llvm-mca
              without it the A76 rows are left out.
  Neoverse N2  LLVM's Neoverse N2 model (LLVM 19 also models the Cortex-A710 with it): the
              FEAT_I8MM core of the integer rows (aarch64+i8mm), with the fp32 and SDOT loops
              on the same model beside it. Without it (older llvm-mca) no N2 rows.
  Cortex-A72  LLVM's Cortex-A57 model (LLVM has no A72 model of its own), AArch64 and AArch32.
  Cortex-A55  LLVM's Cortex-A55 model (AArch64 only: the 32-bit backend has none).
  Cortex-M4   LLVM's Cortex-M4 model, which issues a VFMA every cycle; and the "TRM cycle
              table" rows: the Cortex-M4 Technical Reference Manual's cycle counts summed over
              the loop body (m4_trm_cycles; VFMA 3 cycles, SMLAD 1).
  Cortex-M7   LLVM's Cortex-M7 model.
  Cortex-M55  LLVM's Cortex-M55 model (Helium: MveArch's kernels; LLVM 16 and newer).
  Zen 3       LLVM's znver3 model (x86-avx2: -march=x86-64-v3, kernels fma3+avx2).
  Zen 4, Sapphire Rapids  LLVM's znver4 and sapphirerapids models (x86-avx512: -march=x86-64-v4,
              kernels avx512bw). The Zen 4 model sends a 16-lane broadcast load through an FMA
              pipe too, which puts the 12 x 2 micro-kernel at 67 % there.

Usage:
  python3 tools/mca_report.py                 # the table (text)
  python3 tools/mca_report.py --markdown      # the table as Markdown (docs/targets.md)
  python3 tools/mca_report.py --sweep         # also: candidate GEMM register tiles
  python3 tools/mca_report.py --check         # assert the GEMM targets (the ctest)
  python3 tools/mca_report.py --show gemm_ukernel --target aarch64   # print the loop body

--check: the NEON GEMM micro-kernel reaches >= 85 % of the modelled FMA bound on Cortex-A76
(N1 model) and Cortex-A72 (A57 model), the Helium one >= 60 % on the Cortex-M55 model (67 %
with its A values as VFMA's core-register operand, 50 % with a broadcast each), with no stack
access in the loop (aarch64, armv7, Cortex-M55; on x86 no vector stored to the stack); f32_exp's
loop is found (exp inlined) with no stack access on all of them (armv7 once had a call per
vector at -O2 and 11 stack accesses per vector at -O3, from xsimd's compare and fnma); and no
multiply-add loop of the whole f32_attn_rows stores a vector to the stack (aarch64, M55, x86;
armv7's known q-register spill there is reported, not failed): inlined there, the x86
micro-kernel once stored its B vectors to the stack on every k step. The integer GEMM
micro-tile (qd8_gemm; its table gives MACs per cycle against the fp32 micro-kernel's on the
same core) has no spill (armv7's DSP loop reported) and meets INT_CHECKS: SDOT >= 3x the fp32
MACs per cycle on Cortex-A76 and A55, SMMLA >= 6x on the Neoverse N2, SMULL/SADALP >= 1.3x on
the A72, <= 1.5 cycles per MAC on the Cortex-M7 model and the Cortex-M4 TRM table.
Exit status: 0 ok, 1 a target missed, 2 usage or tool error, 77 skipped (llvm-mca, cmake or
a cross compiler missing, or no llvm-mca with an N1 model).
Only the Python 3 standard library is needed.
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBES = os.path.join(ROOT, "tools", "mca", "probes.cpp")
SKIP = 77
ITERATIONS = 500
CHECK_PCT = 85.0
# Cortex-M55 (Helium) micro-kernel: 67 % with the A value a core-register operand of VFMA,
# 50 % with a broadcast per A value (what Vec::fma_scalar avoids).
CHECK_PCT_M55 = 60.0
# Cortex-M7 scalar micro-kernel: 53 % with the k step's loads before its multiply-adds
# (Vec<ScalarArch>::loads_first), 33 % with GCC's interleaved schedule (in-order write-back).
CHECK_PCT_M7 = 50.0

# (probe function, loop name in the table, what it is)
LOOPS = [
    ("mca_gemm_ukernel", "gemm_ukernel",
     "GEMM micro-kernel, one k step of the kMR x kNR tile (C += A B, packed B panel)"),
    ("mca_attn_qk", "attn_qk", "attention tile, S = Q K^T: the micro-kernel over d_head 64"),
    ("mca_attn_pv", "attn_pv", "attention tile, O += P V: the micro-kernel over the keys"),
    ("mca_attn_rows", "attn_rows",
     "the whole f32_attn_rows (d_head 64): its hottest loop, a micro-kernel inlined there"),
    ("mca_attn_exp2_row", "attn_exp2_row",
     "attention tile, p = 2^(s - m) and its sum: 1 vector (4 weights on the M7: kExpStep)"),
    ("mca_gemv_panel16", "gemv_panel16", "decode GEMV, kPanel16 weights: one k of two panels"),
    ("mca_gemv_axpy", "gemv_axpy", "decode GEMV, kInOut weights: one vector of four rows"),
    ("mca_gemv_dot", "gemv_dot", "decode GEMV, kOutIn weights: two vectors of four rows"),
    ("mca_exp", "exp", "f32_exp: one vector"),
]
# Integer compute (Compute::kInt8): their multiply-accumulates are integer ones (int_lanes).
QD8_LOOPS = [
    ("mca_qd8_gemm", "qd8_gemm", "integer GEMM micro-tile (qd8_ukernel), one step of its loop"),
    ("mca_qd8_gemv_dot", "qd8_gemv_dot", "integer decode GEMV, [out][in] weights: one step of "
     "an output's dot product"),
    ("mca_qd8_gemv_panel16", "qd8_gemv_panel16", "integer decode GEMV, a kPanel16 panel: one "
     "step over its 16 outputs"),
]
QD8_NAMES = [l[1] for l in QD8_LOOPS]


class Target:
    def __init__(self, name, toolchain, cmake_defs, cores, fma_forms, extra_flags=(),
                 loops="all", fp32_of=None):
        self.name = name
        self.toolchain = toolchain  # toolchains/<file>
        self.cmake_defs = cmake_defs
        self.cores = cores  # [(label, llvm cpu, model description)]
        self.fma_forms = fma_forms  # [(asm template with {i}, lanes)]
        # Flags after the toolchain's: an ISA extension the integer kernels use (SDOT, VNNI).
        self.extra_flags = list(extra_flags)
        # "all", "int": only the integer loops (QD8_LOOPS), "fp32": none of them
        self.loops = loops
        self.fp32_of = fp32_of or name  # the target whose fp32 GEMM the integer rows compare to
        self.cxx = None
        self.flags = []
        self.triple = None
        self.arch = ("x86" if name.startswith("x86") else
                     "aarch64" if name.startswith("aarch64") else "arm32")


def make_targets(n1_model, n2_model=False):
    a76 = [("Cortex-A76", "neoverse-n1", "Neoverse N1 model")] if n1_model else []
    # FEAT_I8MM's cores: LLVM 19 models the Cortex-A710 with its Neoverse N2 model (the N2 is
    # the A710's server derivative), so one row stands for both.
    n2 = [("Neoverse N2", "neoverse-n2", "Neoverse N2 model")] if n2_model else []
    a64_fma = [("fmla v{i}.4s, v28.4s, v29.4s", 4), ("fmla v{i}.2s, v28.2s, v29.2s", 2),
               ("fmadd s{i}, s28, s29, s{i}", 1)]
    m_fma = [("vfma.f32 s{i}, s28, s29", 1), ("vmla.f32 s{i}, s28, s29", 1)]
    # The integer kernels of a build for cores with FEAT_I8MM (SMMLA): A710, N2 and later.
    i8mm = [Target("aarch64+i8mm", "aarch64-linux-gnu.cmake", [], n2, a64_fma,
                   extra_flags=["-march=armv8.2-a+dotprod+i8mm"], loops="int",
                   fp32_of="aarch64")] if n2_model else []
    return [
        Target("aarch64", "aarch64-linux-gnu.cmake", [],
               a76 + n2 + [("Cortex-A72", "cortex-a72", "Cortex-A57 model"),
                           ("Cortex-A55", "cortex-a55", "Cortex-A55 model")], a64_fma),
        # The integer kernels of a build for cores with FEAT_DotProd (A55, A76; not the A72).
        Target("aarch64+dotprod", "aarch64-linux-gnu.cmake", [],
               a76 + n2 + [("Cortex-A55", "cortex-a55", "Cortex-A55 model")], a64_fma,
               extra_flags=["-march=armv8.2-a+dotprod"], loops="int", fp32_of="aarch64"),
        *i8mm,
        Target("armv7", "arm-linux-gnueabihf.cmake", [],
               [("Cortex-A72 (AArch32)", "cortex-a72", "Cortex-A57 model")],
               [("vfma.f32 q{i}, q14, q15", 4), ("vmla.f32 q{i}, q14, d0[0]", 4),
                ("vfma.f32 d{i}, d28, d29", 2), ("vfma.f32 s{i}, s28, s29", 1)]),
        # The Cortex-M4: LLVM's model, and the TRM's cycle table (M4_TRM, m4_trm_cycles).
        Target("cortex-m4", "arm-none-eabi.cmake", ["-DMICROATTN_CPU=cortex-m4"],
               [("Cortex-M4", "cortex-m4", "Cortex-M4 model"), M4_TRM], m_fma),
        Target("cortex-m7", "arm-none-eabi.cmake", ["-DMICROATTN_CPU=cortex-m7"],
               [("Cortex-M7", "cortex-m7", "Cortex-M7 model")], m_fma),
        # Helium: eight Q registers, so the peak block has six accumulators (q0-q5).
        Target("cortex-m55", "arm-none-eabi.cmake", ["-DMICROATTN_CPU=cortex-m55"],
               [("Cortex-M55", "cortex-m55", "Cortex-M55 model")],
               [("vfma.f32 q{i6}, q6, q7", 4), ("vfma.f32 q{i6}, q6, r0", 4),
                ("vfma.f32 s{i}, s28, s29", 1)]),
        # x86 (the host's g++ with the x86 toolchain files' -march): the machines the x86
        # presets stand for, including the ones not at hand (Zen 3 for AVX2, Zen 4 for
        # AVX-512). This Xeon (Emerald Rapids) runs the Sapphire Rapids pipeline.
        Target("x86-avx2", "x86_64-avx2.cmake", [],
               [("Zen 3", "znver3", "Zen 3 model")],
               [("vfmadd231ps %ymm14, %ymm15, %ymm{i}", 8)]),
        Target("x86-avx512", "x86_64-avx512.cmake", [],
               [("Zen 4", "znver4", "Zen 4 model"),
                ("Sapphire Rapids", "sapphirerapids", "Sapphire Rapids model")],
               [("vfmadd231ps %zmm30, %zmm31, %zmm{i}", 16)]),
        # The integer kernels with AVX-512 VNNI (Zen 4/5, Intel since Ice Lake; x86-64-v4
        # alone does not include it: its integer path is the AVX2 tile on 32-byte vectors).
        Target("x86-avx512+vnni", "x86_64-avx512.cmake", [],
               [("Zen 4", "znver4", "Zen 4 model"),
                ("Sapphire Rapids", "sapphirerapids", "Sapphire Rapids model")],
               [("vfmadd231ps %zmm30, %zmm31, %zmm{i}", 16)],
               extra_flags=["-mavx512vnni"], loops="int", fp32_of="x86-avx512"),
    ]


class Error(Exception):
    pass


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise Error("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout,
                                                        p.stderr))
    return p.stdout


def find_llvm_mca(explicit):
    if explicit:
        return explicit if shutil.which(explicit) else None
    for v in range(25, 13, -1):
        for c in ("llvm-mca-%d" % v, "/usr/lib/llvm-%d/bin/llvm-mca" % v):
            if shutil.which(c):
                return shutil.which(c)
    return shutil.which("llvm-mca")


def llvm_version(mca):
    out = run([mca, "--version"])
    m = re.search(r"LLVM version (\S+)", out)
    return m.group(1) if m else "?"


def has_model(mca, tmp, cpu, unit):
    """Whether llvm-mca has a model of its own for cpu (its resources are named unit...)."""
    path = os.path.join(tmp, "model.s")
    with open(path, "w") as f:
        f.write("fmla v0.4s, v1.4s, v2.4s\n")
    out = run([mca, "-mtriple=aarch64", "-mcpu=" + cpu, "-iterations=1", path])
    return unit in out


def toolchain_flags(t, tmp):
    """CMAKE_CXX_COMPILER and CMAKE_CXX_FLAGS_INIT of the toolchain file, via cmake -P (in a
    scratch folder: linux-multiarch.cmake stages a folder in CMAKE_BINARY_DIR)."""
    work = tempfile.mkdtemp(dir=tmp)
    script = os.path.join(work, "flags.cmake")
    with open(script, "w") as f:
        f.write('include("%s")\nmessage("MCA_CXX=${CMAKE_CXX_COMPILER}")\n'
                'message("MCA_FLAGS=${CMAKE_CXX_FLAGS_INIT}")\n'
                % os.path.join(ROOT, "toolchains", t.toolchain))
    p = subprocess.run(["cmake"] + t.cmake_defs + ["-P", script], cwd=work,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cxx = re.search(r"^MCA_CXX=(.*)$", p.stdout, re.M)
    flags = re.search(r"^MCA_FLAGS=(.*)$", p.stdout, re.M)
    if p.returncode != 0 or not cxx or not flags:
        raise Error("cannot read %s:\n%s" % (t.toolchain, p.stdout))
    return cxx.group(1).strip(), flags.group(1).split()


def xsimd_dir(tmp, explicit):
    """A folder holding only xsimd/ (never -isystem /usr/include in a cross build)."""
    src = explicit or "/usr/include"
    if not os.path.isfile(os.path.join(src, "xsimd", "xsimd.hpp")):
        raise Error("xsimd not found in %s (scripts/setup.sh installs libxsimd-dev)" % src)
    d = os.path.join(tmp, "xsimd-include")
    if not os.path.isdir(d):
        os.makedirs(d)
        os.symlink(os.path.join(src, "xsimd"), os.path.join(d, "xsimd"))
    return d


def compile_probes(t, tmp, xs, include, defs=(), tag="", opt="-O3"):
    out = os.path.join(tmp, "%s%s.s" % (t.name, tag))
    cmd = ([t.cxx] + t.flags + t.extra_flags + ["-std=c++17", opt, "-DNDEBUG", "-I", include,
                                "-isystem", xs] + list(defs) + ["-S", "-o", out, PROBES])
    run(cmd)
    with open(out) as f:
        return f.read()


# --- assembly ---------------------------------------------------------------------------

LABEL = re.compile(r"^([.\w$]+):")
# (le / letp: Armv8.1-M's low-overhead loop end, which GCC emits for the M55.)
BRANCH = re.compile(r"^(b|b\.\w+|b[a-z]{2}(\.[nw])?|cbn?z|tbn?z|bl|blx|le|letp)\s+(?:.*,\s*)?"
                    r"([.\w$]+)(\(PLT\))?\s*$")
# x86 (AT&T syntax, GCC's -S): jumps and calls to a label.
X86_BRANCH = re.compile(r"^(j[a-z]+|call)\s+([.\w$]+)(@PLT)?\s*$")


def branch(line):
    """(kind, label) of a branch to a label: kind "call" or "jump"; None for anything else."""
    m = X86_BRANCH.match(line)
    if m:
        return ("call" if m.group(1) == "call" else "jump", m.group(2))
    m = BRANCH.match(line)
    if m:
        return ("call" if m.group(1) in ("bl", "blx") else "jump", m.group(3))
    return None


def strip_comment(line, arch):
    """The line without its comment: "@" starts one on 32-bit ARM, "#" on x86 (where it is
    not an immediate's prefix), "//" everywhere."""
    for c in {"arm32": ("@", "//"), "x86": ("#", "//")}.get(arch, ("//",)):
        i = line.find(c)
        if i >= 0:
            line = line[:i]
    return " ".join(line.split())


def functions(asm, arch):
    """{name: [lines]} of the functions in the assembly (from `name:` to `.size name`)."""
    names = set(re.findall(r"^\s*\.type\s+([.\w$]+),\s*[%@#]function", asm, re.M))
    out, cur = {}, None
    for raw in asm.splitlines():
        line = strip_comment(raw, arch)
        m = LABEL.match(line)
        if m and m.group(1) in names:
            cur = m.group(1)
            out[cur] = []
            continue
        if cur is None:
            continue
        if re.match(r"\.size\s+%s\s*," % re.escape(cur), line):
            cur = None
            continue
        out[cur].append(line)
    return out


def is_insn(line):
    return line and not line.startswith(".") and not LABEL.match(line)


def reachable(funcs, start):
    seen, todo = [], [start]
    while todo:
        f = todo.pop()
        if f in seen or f not in funcs:
            continue
        seen.append(f)
        for line in funcs[f]:
            b = branch(line)
            if b and b[1] in funcs:
                todo.append(b[1])
    return seen


def fma_lanes(insn, arch):
    """Multiply-add lanes of one instruction (0: not a multiply-add)."""
    op, _, rest = insn.partition(" ")
    op = op.split(".")[0] if arch == "aarch64" else op
    rest = rest.strip()
    if arch == "x86":
        # vfmadd231ps / vfnmadd213ss ...: the destination (last operand) gives the width.
        m = re.match(r"vfn?m(add|sub)\d{3}(ps|ss)$", op)
        if not m:
            return 0
        if m.group(2) == "ss":
            return 1
        dest = rest.split(",")[-1].strip()
        return {"%z": 16, "%y": 8, "%x": 4}.get(dest[:2], 0)
    if arch == "aarch64":
        if op not in ("fmla", "fmls", "fmadd", "fmsub", "fnmadd", "fnmsub"):
            return 0
        first = rest.split(",")[0].strip()
        m = re.search(r"\.(\d+)s$", first)
        return int(m.group(1)) if m else (1 if first.startswith("s") else 0)
    base = op.split(".")[0]
    if base not in ("vfma", "vfms", "vfnma", "vfnms", "vmla", "vmls", "vnmla", "vnmls"):
        return 0
    if ".f32" not in op:
        return 0
    first = rest.split(",")[0].strip()
    return {"q": 4, "d": 2, "s": 1}.get(first[:1], 0)


# Integer multiply-accumulates: lanes (8-bit or 16-bit products) per instruction. vpmaddwd is
# left out: the AVX2 kernel uses it to add vpmaddubsw's int16 pairs (a multiply by ones).
X86_INT_MAC = {"vpdpbusd": 4, "vpdpbusds": 4, "vpmaddubsw": 2}
A64_INT_MAC = {"sdot": 4, "udot": 4, "smmla": 8, "smull": 1, "smull2": 1, "smlal": 1,
               "smlal2": 1}
A32_DSP_MAC = {"smlad": 2, "smladx": 2, "smlsd": 2, "smuad": 2, "smuadx": 2, "smlabb": 1,
               "smlabt": 1, "smlatb": 1, "smlatt": 1}


def int_lanes(insn, arch):
    """Integer multiply-accumulate lanes of one instruction (0: none)."""
    op, _, rest = insn.partition(" ")
    rest = rest.strip()
    if arch == "x86":
        if op not in X86_INT_MAC:
            return 0
        dest = rest.split(",")[-1].strip()  # 32-bit lanes of the destination, x MACs each
        return {"%z": 16, "%y": 8, "%x": 4}.get(dest[:2], 0) * X86_INT_MAC[op]
    if arch == "aarch64":
        if op not in A64_INT_MAC:
            return 0
        m = re.search(r"\.(\d+)([bhs])$", rest.split(",")[0].strip())  # destination lanes
        return int(m.group(1)) * A64_INT_MAC[op] if m else 0
    base, _, dt = op.partition(".")
    if base in A32_DSP_MAC:
        return A32_DSP_MAC[base]
    # Helium's VMLADAV(A)(X) (a vector's products summed into a core register), NEON's
    # VMULL/VMLAL (widening), VMLA.I<n> (Helium and NEON): the element size sets the lanes.
    m = re.match(r"([su]|i)(8|16|32)$", dt.split(".")[0])
    if not m:
        return 0
    width = {"q": 128, "d": 64}.get(rest[:1], 128 if base.startswith("vmladav") else 0)
    if base in ("vmladav", "vmladava", "vmladavx", "vmladavax", "vmull", "vmlal", "vmla"):
        elem = int(m.group(2))
        # vmull/vmlal name the destination (double width): their source has twice the lanes
        return width // elem if base not in ("vmull", "vmlal") else width // (2 * elem)
    return 0


def reglist_words(operands):
    """Words a register list {r4, r5}, {r4-r7}, {s16-s19}, {d8-d9} moves (0: no list)."""
    if "{" not in operands:
        return 0
    n = 0
    for item in operands[operands.index("{") + 1:operands.index("}")].split(","):
        m = re.match(r"\s*([rsd])(\d+)(?:\s*-\s*[rsd](\d+))?\s*$", item)
        if not m:
            n += 1  # lr, pc, ip, fp
            continue
        count = int(m.group(3)) - int(m.group(2)) + 1 if m.group(3) else 1
        n += count * (2 if m.group(1) == "d" else 1)
    return n


M4_CONDS = ("eq", "ne", "cs", "hs", "cc", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt",
            "gt", "le")
M4_LOADS = re.compile(r"v?ldr(b|h|sb|sh|ex)?$")
M4_STORES = re.compile(r"v?str(b|h|ex)?$")
M4_MULTI = re.compile(r"(v?ldm\w*|v?stm\w*|pop|push|vpop|vpush)$")


def m4_op(insn):
    """The instruction's operation without its width (.w, .n), data type (.f32, .s32) or an
    IT block's condition (ldrhi -> ldr)."""
    op = insn.split(" ", 1)[0].split(".")[0]
    if op[-2:] in M4_CONDS and len(op) > 3:
        bare = op[:-2]
        if (M4_LOADS.match(bare) or M4_STORES.match(bare) or bare in (
                "mov", "add", "adds", "sub", "subs", "ldrd", "strd", "mvn", "orr", "and", "eor",
                "vmov", "b", "bx", "cmp", "vstr", "vldr", "neg", "rsb")):
            return bare
    return op


def m4_is_jump(op):
    """A (conditional) branch to a label: B, B<cond>, CBZ, CBNZ, TBB, TBH."""
    return op in ("b", "cbz", "cbnz", "tbb", "tbh") or (op[:1] == "b" and op[1:] in M4_CONDS)


def m4_trm_insn_cycles(insn, after_ls, last, taken):
    """(cycles, is a load or store) of one instruction on the Cortex-M4 from its Technical
    Reference Manual's cycle tables (ARM DDI 0439B: Table 3-1, processor; Table 7-1, FPU),
    zero wait states, a single-issue pipeline where every instruction takes its table count:
    loads 2 cycles, 1 when they follow a load or store (pipelined); LDRD 3, LDM/VLDM/POP
    1 + N words; stores 1 (STRD 2, STM/VSTM/PUSH 1 + N); VFMA/VMLA and their negated forms 3;
    VDIV and VSQRT 14; SDIV/UDIV 12 (at most); a branch (the block's last instruction, `last`)
    1, plus P = 2 of the TRM's 1 to 3 when taken, as is a write to the PC (POP {.., pc}, BX,
    BL); everything else (ALU, IT, MUL/MLA, SMLAD, SXTB16, VADD, VMUL, VCVT, VMOV) 1. Not
    modelled: the extra cycle of an address computed by the instruction just before, wait
    states (firmware runs hot loops from a cache or TCM)."""
    op = m4_op(insn)
    rest = insn.partition(" ")[2]
    refill = 2 if ((taken and last and m4_is_jump(op)) or
                   (M4_MULTI.match(op) and re.search(r"\bpc\b", rest))) else 0
    if M4_LOADS.match(op):
        return (1 if after_ls else 2) + (2 if re.match(r"pc\b", rest) else 0), True
    if op == "ldrd":
        return 3, True
    if M4_MULTI.match(op):
        return 1 + reglist_words(rest) + refill, True
    if M4_STORES.match(op):
        return 1, True
    if op == "strd":
        return 2, True
    if op in ("vfma", "vfms", "vfnma", "vfnms", "vmla", "vmls", "vnmla", "vnmls"):
        return 3, False
    if op in ("vdiv", "vsqrt"):
        return 14, False
    if op in ("sdiv", "udiv"):
        return 12, False
    if op in ("bl", "blx", "bx"):
        return 3, False
    return 1 + refill, False


def m4_trm_cycles(body, last_taken=True):
    """m4_trm_insn_cycles summed over a loop body or a block (its last instruction a branch,
    taken if last_taken: a loop's closing branch)."""
    cyc, after_ls = 0, False
    for i, l in enumerate(body):
        c, after_ls = m4_trm_insn_cycles(l, after_ls, i == len(body) - 1, last_taken)
        cyc += c
    return float(cyc)


# The Cortex-M4 TRM "core": cores entry whose cycles come from m4_trm_cycles, not llvm-mca.
M4_TRM = ("Cortex-M4", "m4-trm", "TRM cycle table")
M4_TRM_FMA_LANES = 1.0 / 3  # VFMA.F32: 3 cycles


def loops(lines):
    """(start, end) line ranges of the loops: a label and a later branch back to it."""
    pos = {}
    for i, line in enumerate(lines):
        m = LABEL.match(line)
        if m:
            pos[m.group(1)] = i
    res = []
    for i, line in enumerate(lines):
        b = branch(line)
        if b and b[0] == "jump" and b[1] in pos and pos[b[1]] < i:
            res.append((pos[b[1]], i))
    return res


def fma_loops(asm, func, arch, lanes=fma_lanes):
    """[(function, body)] of every innermost loop with multiply-adds (lanes > 0: fma_lanes,
    int_lanes) reachable from func."""
    funcs = functions(asm, arch)
    if func not in funcs:
        raise Error("%s not found in the assembly" % func)
    out = []
    for f in reachable(funcs, func):
        lines = funcs[f]
        ls = loops(lines)
        for (s, e) in ls:
            if any((s2, e2) != (s, e) and s <= s2 and e2 <= e for (s2, e2) in ls):
                continue  # not innermost
            body = [l for l in lines[s:e + 1] if is_insn(l)]
            if any(lanes(l, arch) for l in body):
                out.append((f, body))
    return out


def hot_loop(asm, func, arch, lanes=fma_lanes):
    """Body (instructions) of the innermost loop with the most FMA lanes reachable from func
    (the first of them on a tie; fewer instructions first among equal lanes). For the whole
    f32_attn_rows (mca_attn_rows), among the loops that are at least a third multiply-adds:
    its micro-kernel, not the softmax's exponentials (four weights per step on the Cortex-M7,
    28 multiply-adds in 103 instructions; the Helium ones on the M55)."""
    candidates = fma_loops(asm, func, arch, lanes)
    if not candidates:
        raise Error("no loop with multiply-adds in %s" % func)
    if func == "mca_attn_rows":
        candidates = [fb for fb in candidates
                      if 3 * sum(1 for l in fb[1] if fma_lanes(l, arch)) >= len(fb[1])] or candidates
    return max(candidates, key=lambda fb: (sum(lanes(l, arch) for l in fb[1]), -len(fb[1])))


POST_STORE_A64 = re.compile(r"^(st[a-z0-9]*) (.*), \[(\w+)\], #?(-?\d+)$")
POST_STORE_A32 = re.compile(r"^(vst1\.\d+) \{d(\d+)(?:-d(\d+))?\}, \[(\w+)(?::\d+)?\]!$")


def split_store_writeback(body, arch):
    """The loop with each post-indexed store written as a store and a separate pointer add.
    llvm-mca issues the whole post-indexed store, base update included, when the stored value
    is ready, so a load through the same pointer in the next iteration waits for the previous
    iteration's result: a loop-carried chain the cores do not have (their address update does
    not wait for the data). None if the loop has no such store."""
    out, changed = [], False
    for l in body:
        m = (POST_STORE_A64.match(l) if arch == "aarch64" else
             POST_STORE_A32.match(l) if arch == "arm32" else None)
        if m and arch == "aarch64":
            out += ["%s %s, [%s]" % (m.group(1), m.group(2), m.group(3)),
                    "add %s, %s, #%s" % (m.group(3), m.group(3), m.group(4))]
            changed = True
        elif m:
            lo = int(m.group(2))
            hi = int(m.group(3)) if m.group(3) else lo
            out += [l[:-1], "add %s, %s, #%d" % (m.group(4), m.group(4), 8 * (hi - lo + 1))]
            changed = True
        else:
            out.append(l)
    return out if changed else None


def calls(body):
    return sum(1 for l in body if re.match(r"(blx?|call) ", l))


def stack_ops(body):
    """Loads and stores to the stack: [sp on ARM; (%rsp) or (%rbp) on x86 (GCC keeps %rbp the
    frame pointer in functions that realign the stack for vectors, and otherwise rarely uses it
    for data in these kernels)."""
    return sum(1 for l in body if re.search(r"\[sp\b|\(%r[sb]p\b", l) or
               re.match(r"v?(push|pop)[a-z]?\b", l))


def vector_stack_stores(body, arch):
    """Stores of a vector or FP register to the stack: a value spilled and reloaded in the
    loop. (Loads alone are not counted: x86 GCC keeps a loop-invariant constant it has no
    register for on the stack and reads it as a memory operand, like a constant in .rodata;
    a reloaded pointer is one scalar load.)"""
    if arch == "x86":
        # AT&T: the destination is the last operand.
        return sum(1 for l in body
                   if re.search(r"%[xyz]mm\d+, -?\w*\(%r[sb]p\b[^,]*\)$", l))
    reg = r"\b[qdsv]\d+\b" if arch == "aarch64" else r"\b[qds]\d+\b"
    return sum(1 for l in body
               if re.match(r"(v?st|v?push)", l) and re.search(r"\[sp\b|\{", l) and
               re.search(reg, l) and ("[sp" in l or "push" in l))


def internal_branches(body):
    return sum(1 for l in body[:-1] if branch(l) and branch(l)[0] == "jump")


# --- llvm-mca ---------------------------------------------------------------------------

def mca(mca_bin, triple, cpu, body, tmp, tag, iterations=ITERATIONS):
    path = os.path.join(tmp, "%s.%s.s" % (tag, cpu))
    with open(path, "w") as f:
        f.write("\n".join(body) + "\n")
    cmd = [mca_bin, "-mtriple=" + triple, "-mcpu=" + cpu, "-iterations=%d" % iterations, path]
    skipped = []
    try:
        out = run(cmd)
    except Error as e:
        # An instruction the model has no scheduling data for (the Cortex-M7 model lacks
        # vcmpe.f32): llvm-mca >= 18 can leave it out; the row says so.
        skipped = sorted(set(re.findall(r"note: instruction:\s+(\S+)", str(e))))
        if not skipped:
            raise
        out = run(cmd[:-1] + ["-skip-unsupported-instructions=lack-sched", path])
    it = int(re.search(r"^Iterations:\s+(\d+)", out, re.M).group(1))
    cyc = int(re.search(r"^Total Cycles:\s+(\d+)", out, re.M).group(1))
    rth = float(re.search(r"^Block RThroughput:\s+([\d.]+)", out, re.M).group(1))
    return cyc / it, rth, skipped


def peak_lanes(mca_bin, t, cpu, tmp):
    """Peak multiply-add lanes per cycle of cpu in the model: the best of independent-FMA
    blocks of each form (resource bound: Block RThroughput)."""
    if cpu == M4_TRM[1]:
        return M4_TRM_FMA_LANES
    best = 0.0
    for k, (form, lanes) in enumerate(t.fma_forms):
        n = 12
        body = [form.format(i=i, i6=i % 6) for i in range(1, n + 1)]
        _, rth, _ = mca(mca_bin, t.triple, cpu, body, tmp, "peak%d" % k, iterations=100)
        best = max(best, n * lanes / rth)
    return best


def triple_of(t, asm):
    thumb = re.search(r"^\s*\.thumb\b|^\s*\.code\s+16", asm, re.M) is not None
    if t.arch == "aarch64":
        return "aarch64-linux-gnu"
    if t.name == "armv7":
        return ("thumbv7a" if thumb else "armv7a") + "-linux-gnueabihf"
    if t.name == "cortex-m55":
        return "thumbv8.1m.main-none-eabihf"
    if t.arch == "x86":
        return "x86_64-linux-gnu"
    return "thumbv7em-none-eabihf"


# --- report -----------------------------------------------------------------------------

def analyse(t, asm, mca_bin, tmp, peaks, loops_wanted, tag=""):
    rows = []
    arch = t.arch
    for func, name, _ in loops_wanted:
        count = int_lanes if name in QD8_NAMES else fma_lanes
        try:
            fn, body = hot_loop(asm, func, arch, count)
        except Error as e:
            rows.append({"loop": name, "target": t.name, "error": str(e)})
            continue
        lanes = sum(count(l, arch) for l in body)
        fmas = sum(1 for l in body if count(l, arch))
        for (label, cpu, model) in t.cores:
            stem = ("%s%s.%s" % (t.name, tag, name)).replace("+", "_")
            try:
                if cpu == M4_TRM[1]:
                    cyc = rth = m4_trm_cycles(body)
                    skipped, cyc_wb = [], None
                else:
                    cyc, rth, skipped = mca(mca_bin, t.triple, cpu, body, tmp, stem)
                    split = split_store_writeback(body, arch)
                    cyc_wb = (mca(mca_bin, t.triple, cpu, split, tmp, stem + ".wb")[0] if split
                              else None)
            except Error as e:
                rows.append({"loop": name, "target": t.name,
                             "error": "%s: %s" % (label, str(e).splitlines()[-1])})
                continue
            bound = lanes / peaks[(t.name, cpu)]
            rows.append({"loop": name, "target": t.name, "core": label, "model": model,
                         "cpu": cpu, "insns": len(body), "fmas": fmas, "lanes": lanes,
                         "cycles": cyc, "rthru": rth, "bound": bound,
                         "pct": 100.0 * bound / cyc, "stack": stack_ops(body),
                         "branches": internal_branches(body), "skipped": skipped,
                         "calls": calls(body), "cycles_wb": cyc_wb,
                         "func": fn, "body": body})
    return rows


def row_notes(r):
    """The notes column of a row: what the model could not see or count as is."""
    notes = []
    if r["cycles_wb"] is not None and r["cycles_wb"] < 0.9 * r["cycles"]:
        notes.append("%.2f with the store's pointer update split off" % r["cycles_wb"])
    if r["branches"]:
        notes.append("%d branch(es) inside: every path counted" % r["branches"])
    if r["calls"]:
        notes.append("%d call(s): callee not modelled" % r["calls"])
    if r["skipped"]:
        notes.append("not in the model, left out: %s" % ", ".join(r["skipped"]))
    return "; ".join(notes)


def fmt_table(rows, markdown):
    head = ["loop", "target", "core (LLVM model)", "insns", "FMA insns (lanes)", "cycles/iter",
            "RThru", "FMA bound", "% of bound", "stack", "notes"]
    lines = []
    for r in rows:
        if "error" in r:
            lines.append([r["loop"], r["target"], "-", "-", "-", "error: " + r["error"], "", "", "",
                          "", ""])
            continue
        lines.append([r["loop"], r["target"], "%s (%s)" % (r["core"], r["model"]),
                      str(r["insns"]), "%d (%d)" % (r["fmas"], r["lanes"]),
                      "%.2f" % r["cycles"], "%.2f" % r["rthru"], "%.2f" % r["bound"],
                      "%.0f %%" % r["pct"], str(r["stack"]), row_notes(r)])
    return table_text(head, lines, markdown)


def fmt_int_table(int_rows, rows, fp32_of, markdown):
    """The integer loops' table: MACs per cycle and the ratio to the fp32 GEMM micro-kernel's
    on the same core (a row of `rows`, target fp32_of[target])."""
    fp32 = {(r["target"], r["core"], r["cpu"]): r for r in rows
            if r["loop"] == "gemm_ukernel" and "error" not in r}
    head = ["loop", "target", "core (model)", "insns", "MAC insns (lanes)", "cycles/iter",
            "MACs/cycle", "cycles/MAC", "fp32 MACs/cycle", "int / fp32", "stack", "notes"]
    lines = []
    for r in int_rows:
        if "error" in r:
            lines.append([r["loop"], r["target"], "-", "-", "-", "error: " + r["error"]] +
                         [""] * 6)
            continue
        rate = r["lanes"] / r["cycles"]
        f = fp32.get((fp32_of[r["target"]], r["core"], r["cpu"]))
        frate = f["lanes"] / f["cycles"] if f else None
        lines.append([r["loop"], r["target"], "%s (%s)" % (r["core"], r["model"]),
                      str(r["insns"]), "%d (%d)" % (r["fmas"], r["lanes"]), "%.2f" % r["cycles"],
                      "%.2f" % rate, "%.3f" % (1 / rate), "%.2f" % frate if f else "-",
                      "%.2fx" % (rate / frate) if f else "-", str(r["stack"]), row_notes(r)])
    return table_text(head, lines, markdown)


def table_text(head, lines, markdown):
    if markdown:
        out = ["| " + " | ".join(head) + " |",
               "|" + "|".join(["---"] * 3 + ["---:"] * (len(head) - 4) + ["---"]) + "|"]
        for l in lines:
            out.append("| " + " | ".join(l) + " |")
        return "\n".join(out)
    w = [max(len(h), *(len(l[i]) for l in lines)) if lines else len(h) for i, h in enumerate(head)]
    out = ["  ".join(h.ljust(w[i]) for i, h in enumerate(head))]
    for l in lines:
        out.append("  ".join(c.ljust(w[i]) for i, c in enumerate(l)))
    return "\n".join(out)


# The integer GEMM's targets (issue #33): (target, llvm cpu, "ratio" of its MACs per cycle to
# the fp32 micro-kernel's on the same core, or "cycles" per MAC, and the bound).
INT_CHECKS = [("aarch64+dotprod", "neoverse-n1", "ratio", 3.0),
              ("aarch64+dotprod", "cortex-a55", "ratio", 3.0),
              ("aarch64+i8mm", "neoverse-n2", "ratio", 6.0),
              ("aarch64", "cortex-a72", "ratio", 1.3),
              ("cortex-m7", "cortex-m7", "cycles", 1.5),
              ("cortex-m4", M4_TRM[1], "cycles", 1.5)]


def check_int_rows(int_rows, rows, fp32_of, notes, checked):
    """--check of the integer GEMM micro-tile: no spills (armv7's DSP loop reported, not
    failed), and INT_CHECKS' bounds. Returns the failures."""
    failed = []
    fp32 = {(r["target"], r["cpu"]): r for r in rows
            if r["loop"] == "gemm_ukernel" and "error" not in r}
    for r in int_rows:
        if "error" in r:
            failed.append("%s %s: %s" % (r["loop"], r["target"], r["error"]))
            continue
        n_stack = (vector_stack_stores(r["body"], "x86") if r["target"].startswith("x86")
                   else r["stack"])
        if n_stack and r["target"] == "armv7":
            notes.append("qd8_gemm armv7 (the DSP loop): %d stack accesses (known, not failed)"
                         % n_stack)
        elif n_stack:
            failed.append("qd8_gemm %s %s: %d stack accesses in the loop (spills)" % (
                r["target"], r["core"], n_stack))
        for (target, cpu, kind, bound) in INT_CHECKS:
            if (r["target"], r["cpu"]) != (target, cpu):
                continue
            rate = r["lanes"] / r["cycles"]
            if kind == "cycles":
                ok, what = 1 / rate <= bound, "%.3f cycles per MAC (target <= %.1f)" % (
                    1 / rate, bound)
            else:
                f = fp32.get((fp32_of[target], cpu))
                if f is None:
                    failed.append("qd8_gemm %s %s: no fp32 row to compare" % (target, r["core"]))
                    continue
                ratio = rate / (f["lanes"] / f["cycles"])
                ok, what = ratio >= bound, "%.2fx the fp32 MACs per cycle (target >= %.1fx)" % (
                    ratio, bound)
            checked.append("qd8_gemm %s %s %s" % (target, r["core"], what))
            if not ok:
                failed.append("qd8_gemm %s %s: %s" % (target, r["core"], what))
    return failed


# Register tiles (kMR, kNRVec) --sweep compiles the micro-kernel with.
SWEEP = {"aarch64": [(2, 4), (3, 4), (4, 4), (5, 4), (6, 4), (7, 4), (4, 5), (4, 3), (6, 3),
                     (7, 3), (8, 3), (4, 2), (8, 2), (10, 2), (12, 2)],
         "armv7": [(4, 2), (5, 2), (6, 2), (3, 3), (4, 3), (2, 4), (3, 4)],
         "cortex-m55": [(2, 1), (3, 1), (4, 1), (6, 1), (7, 1), (2, 2), (3, 2), (2, 3)],
         "x86-avx2": [(4, 2), (5, 2), (6, 2), (3, 3), (4, 3), (2, 4), (3, 4)],
         "x86-avx512": [(8, 2), (10, 2), (12, 2), (14, 2), (6, 3), (8, 3), (4, 4), (6, 4)]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="assert the NEON GEMM targets")
    ap.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    ap.add_argument("--sweep", action="store_true", help="also compare GEMM register tiles")
    ap.add_argument("--target", action="append",
                    help="aarch64, aarch64+dotprod, aarch64+i8mm, armv7, cortex-m4, cortex-m7, "
                    "cortex-m55, x86-avx2, x86-avx512, x86-avx512+vnni (default: all)")
    ap.add_argument("--loop", action="append", help="loops to analyse (default: all)")
    ap.add_argument("--show", metavar="LOOP", help="print this loop's body for each target")
    ap.add_argument("--llvm-mca", help="llvm-mca to use (default: the newest llvm-mca-N)")
    ap.add_argument("--xsimd-include", help="folder holding xsimd/ (default /usr/include)")
    ap.add_argument("--include", default=os.path.join(ROOT, "include"),
                    help="microattn include folder (default: this tree's; e.g. a patched copy)")
    ap.add_argument("--keep", metavar="DIR", help="keep the assembly and loop bodies in DIR")
    ap.add_argument("--opt", default="O3", choices=["O2", "O3", "Os"],
                    help="optimisation level -O<OPT> (default O3, the Release flags; O2 is "
                         "what RelWithDebInfo and many firmware builds use)")
    args = ap.parse_args()

    mca_bin = find_llvm_mca(args.llvm_mca)
    if not mca_bin:
        print("SKIP: llvm-mca not found (Debian: llvm-19, which scripts/setup.sh --cross installs)")
        return SKIP
    if not shutil.which("cmake"):
        print("SKIP: cmake not found")
        return SKIP
    tmp = args.keep or tempfile.mkdtemp(prefix="mca_report.")
    os.makedirs(tmp, exist_ok=True)
    try:
        return report(args, mca_bin, tmp)
    except Error as e:
        print("mca_report: %s" % e, file=sys.stderr)
        return 2
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def report(args, mca_bin, tmp):
    """The run main() sets up: picks the targets and loops, compiles the probes and prints the
    tables (or --show's loop; --sweep's tiles too), then with --check the verdict (check_report).
    Returns the exit status."""
    version = llvm_version(mca_bin)
    n1 = has_model(mca_bin, tmp, "neoverse-n1", "N1Unit")
    targets = make_targets(n1, has_model(mca_bin, tmp, "neoverse-n2", "N2Unit"))
    want = wanted_targets(args, targets, version)
    targets = [t for t in targets if t.name in want]
    loops_wanted = wanted_loops(args)
    targets = with_compilers(args, targets, tmp)
    if targets is None:
        return SKIP
    xs = xsimd_dir(tmp, args.xsimd_include)

    print("llvm-mca %s (%s); MODEL ESTIMATES, not measurements" % (version, mca_bin))
    if not n1:
        print("note: this llvm-mca has no Neoverse N1 model: no Cortex-A76 rows (LLVM 19 has it)")
    asms, peaks = compile_targets(args, targets, tmp, xs, mca_bin)
    if args.show:
        show_loop(args, targets, asms)
        return 0
    rows, int_rows = print_tables(args, targets, asms, mca_bin, tmp, peaks, loops_wanted)
    if args.sweep:
        sweep_tiles(args, targets, tmp, xs, mca_bin, peaks)
    if not args.check:
        return 0
    return check_report(targets, asms, rows, int_rows, n1, version)


def wanted_targets(args, targets, version):
    """The names of the targets to run: --target's, --check's list or all of targets; without
    the Cortex-M55 (a note says so) where llvm-mca is older than 18."""
    want = args.target or (["aarch64", "aarch64+dotprod", "aarch64+i8mm", "armv7", "cortex-m4",
                            "cortex-m7", "cortex-m55", "x86-avx2", "x86-avx512", "x86-avx512+vnni"]
                           if args.check else [t.name for t in targets])
    # The Cortex-M55 model is LLVM 16's, and its loops end in `le`, which the model has no data
    # for: llvm-mca 18's -skip-unsupported-instructions leaves it out. Older: no M55 rows.
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else 0
    if major < 18 and "cortex-m55" in want:
        print("note: llvm-mca %s cannot model the Cortex-M55 loops (needs 18 or newer): "
              "no Cortex-M55 rows" % version)
        want = [w for w in want if w != "cortex-m55"]
    return want


def wanted_loops(args):
    """The LOOPS and QD8_LOOPS entries to analyse: --check's, else --loop's (with the fp32 GEMM
    the integer rows compare with) or all."""
    loops_wanted = [l for l in LOOPS + QD8_LOOPS if not args.loop or l[1] in args.loop]
    if args.check:
        loops_wanted = [l for l in LOOPS + QD8_LOOPS
                        if l[1] in ("gemm_ukernel", "exp", "attn_rows", "qd8_gemm")]
    elif any(l[1] in QD8_NAMES for l in loops_wanted) and LOOPS[0] not in loops_wanted:
        loops_wanted.insert(0, LOOPS[0])  # the fp32 GEMM the integer rows compare with
    return loops_wanted


def with_compilers(args, targets, tmp):
    """Sets each target's cxx and flags from its toolchain file; returns the targets whose
    compiler is installed (a note names the others), or None to skip: --check with a compiler
    missing, or none left."""
    missing = []
    for t in targets:
        t.cxx, t.flags = toolchain_flags(t, tmp)
        if not shutil.which(t.cxx):
            missing.append(t)
    if missing:
        msg = "cross compiler missing: %s (scripts/setup.sh --cross)" % ", ".join(
            t.cxx for t in missing)
        if args.check:
            print("SKIP: " + msg)
            return None
        print("note: " + msg + "; those targets are left out")
        targets = [t for t in targets if t not in missing]
        if not targets:
            return None
    return targets


def compile_targets(args, targets, tmp, xs, mca_bin):
    """Compiles the probes for every target (in parallel) and prints each one's command line and
    the cores' peak multiply-add lanes per cycle; returns ({target: assembly},
    {(target, cpu): peak lanes})."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        asms = dict(zip([t.name for t in targets],
                        ex.map(lambda t: compile_probes(t, tmp, xs, args.include, opt="-" + args.opt),
                               targets)))
    for t in targets:
        t.triple = triple_of(t, asms[t.name])
        print("%-9s %s %s -std=c++17 -%s -DNDEBUG  ->  llvm-mca -mtriple=%s -mcpu=%s"
              % (t.name, t.cxx, " ".join(t.flags + t.extra_flags), args.opt, t.triple,
                 "/".join(c[1] for c in t.cores)))
    peaks = {}
    for t in targets:
        for (label, cpu, model) in t.cores:
            peaks[(t.name, cpu)] = peak_lanes(mca_bin, t, cpu, tmp)
    print("peak multiply-add lanes per cycle (model): " + ", ".join(
        "%s %s%s %.3g" % (t.name, label, " (TRM)" if cpu == M4_TRM[1] else "",
                          peaks[(t.name, cpu)]) for t in targets
        for (label, cpu, _) in t.cores))
    return asms, peaks


def show_loop(args, targets, asms):
    """--show: prints the hot loop body of the loop args.show for each target."""
    for t in targets:
        func = [l[0] for l in LOOPS + QD8_LOOPS if l[1] == args.show]
        if not func:
            raise Error("no loop %s" % args.show)
        if t.loops == "int" and args.show not in QD8_NAMES:
            continue
        count = int_lanes if args.show in QD8_NAMES else fma_lanes
        fn, body = hot_loop(asms[t.name], func[0], t.arch, count)
        print("\n== %s, %s (in %s): %d instructions" % (args.show, t.name, fn, len(body)))
        print("\n".join("  " + l for l in body))


def print_tables(args, targets, asms, mca_bin, tmp, peaks, loops_wanted):
    """Analyses the wanted loops of every target and prints the fp32 table, the integer one and
    what each loop's iteration is; returns (fp32 rows, integer rows)."""
    rows = []
    for t in targets:
        rows += analyse(t, asms[t.name], mca_bin, tmp, peaks,
                        [l for l in loops_wanted
                         if t.loops == "all" or (t.loops == "int") == (l[1] in QD8_NAMES)])
    int_rows = [r for r in rows if r["loop"] in QD8_NAMES]
    rows = [r for r in rows if r["loop"] not in QD8_NAMES]
    print()
    print(fmt_table(rows, args.markdown))
    if int_rows:
        print("\nInteger loops (Compute::kInt8): multiply-accumulates per cycle against the fp32 "
              "GEMM micro-kernel's (gemm_ukernel) on the same core and model:\n")
        print(fmt_int_table(int_rows, rows, {t.name: t.fp32_of for t in targets}, args.markdown))
    if not args.markdown:
        print("\nper iteration of:")
        for (_, name, what) in loops_wanted:
            print("  %-14s %s" % (name, what))
    return rows, int_rows


def sweep_tiles(args, targets, tmp, xs, mca_bin, peaks):
    """--sweep: compiles the GEMM micro-kernel with each register tile of SWEEP and prints a
    table per target."""
    for t in targets:
        if t.name not in SWEEP:
            continue
        srows = []
        tiles = SWEEP[t.name]

        def one(tile):
            mr, nrv = tile
            asm = compile_probes(t, tmp, xs, args.include,
                                 ["-DMCA_MR=%d" % mr, "-DMCA_NRV=%d" % nrv],
                                 tag=".%dx%d" % (mr, nrv), opt="-" + args.opt)
            rs = analyse(t, asm, mca_bin, tmp, peaks, [LOOPS[0]], tag=".%dx%d" % (mr, nrv))
            for r in rs:
                r["loop"] = "gemm %dx%d" % (mr, nrv)
            return rs

        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
            for rs in ex.map(one, tiles):
                srows += rs
        print("\nGEMM register tiles, %s (mca_gemm_ukernel with -DMCA_MR/-DMCA_NRV):" % t.name)
        print(fmt_table(srows, args.markdown))


def check_report(targets, asms, rows, int_rows, n1, version):
    """--check: runs every check, prints its notes, failures or PASS lines; returns the exit
    status (0, 1 a check failed, SKIP without the Neoverse N1 model)."""
    failed, checked = check_fp32_rows(rows)
    attn_failed, notes, checked_spills = check_attn_rows_spills(targets, asms)
    moves_failed, moves_checked = check_string_moves(targets, asms)
    failed += attn_failed + moves_failed
    checked_spills += moves_checked
    int_checked = []
    failed += check_int_rows(int_rows, rows, {t.name: t.fp32_of for t in targets}, notes,
                             int_checked)
    print()
    for n in notes:
        print("note: " + n)
    for f in failed:
        print("FAIL: " + f)
    if failed:
        print("(the loop: --show gemm_ukernel --target aarch64; other tiles: --sweep; "
              "docs/targets.md, Cycle estimates)")
        return 1
    print("PASS: GEMM micro-kernel >= %.0f %% of the modelled FMA bound on %s; it and "
          "exp without spills; f32_attn_rows' loops without vector spills on %s"
          % (CHECK_PCT, ", ".join(checked), ", ".join(checked_spills)))
    print("PASS: integer GEMM micro-tile without spills; " + "; ".join(int_checked))
    if not n1:
        print("SKIP: Cortex-A76 not checked: llvm-mca %s has no Neoverse N1 model" % version)
        return SKIP
    return 0


def check_fp32_rows(rows):
    """The fp32 rows' checks: no stack access in a loop (x86: no vector spill), the GEMM
    micro-kernel's share of the FMA bound on the A76, A72, M55 and M7; returns (failures, the
    cores checked)."""
    failed, checked, spilled = [], [], set()
    for r in rows:
        if "error" in r:
            failed.append("%s %s: %s" % (r["loop"], r["target"], r["error"]))
            continue
        if r["loop"] == "attn_rows":
            continue  # every loop of it, in check_attn_rows_spills
        # x86: vector spills only (the 12-row micro-kernel has more row pointers than x86 has
        # general registers: one is reloaded from the stack per k, a load beside 14 others).
        n_stack = (vector_stack_stores(r["body"], "x86") if r["target"].startswith("x86")
                   else r["stack"])
        if n_stack and (r["loop"], r["target"]) not in spilled:
            spilled.add((r["loop"], r["target"]))
            failed.append("%s %s: %d stack accesses in the loop (spills)" % (
                r["loop"], r["target"], n_stack))
        if (r["loop"] == "gemm_ukernel" and r["target"] == "aarch64"
                and r["core"] in ("Cortex-A76", "Cortex-A72")):
            checked.append(r["core"])
            if r["pct"] < CHECK_PCT:
                failed.append("%s %s %s: %.1f %% of the FMA bound (target >= %.0f %%)" % (
                    r["loop"], r["target"], r["core"], r["pct"], CHECK_PCT))
        if r["loop"] == "gemm_ukernel" and r["target"] == "cortex-m55":
            checked.append("%s (>= %.0f %%)" % (r["core"], CHECK_PCT_M55))
            if r["pct"] < CHECK_PCT_M55:
                failed.append("%s %s %s: %.1f %% of the FMA bound (target >= %.0f %%)" % (
                    r["loop"], r["target"], r["core"], r["pct"], CHECK_PCT_M55))
        if r["loop"] == "gemm_ukernel" and r["target"] == "cortex-m7":
            checked.append("%s (>= %.0f %%)" % (r["core"], CHECK_PCT_M7))
            if r["pct"] < CHECK_PCT_M7:
                failed.append("%s %s %s: %.1f %% of the FMA bound (target >= %.0f %%)" % (
                    r["loop"], r["target"], r["core"], r["pct"], CHECK_PCT_M7))
    return failed, checked


def check_attn_rows_spills(targets, asms):
    """f32_attn_rows: no loop of it spills a vector to the stack; returns (failures, notes, the
    targets checked)."""
    # armv7's micro-kernel tile uses all 16 q registers and GCC 12 spills one where it is
    # inlined there (1 store + 1 load per 12 FMAs, a known cost, reported and not failed).
    failed, notes, checked_spills = [], [], []
    for t in targets:
        spills = [vector_stack_stores(body, t.arch)
                  for (_, body) in fma_loops(asms[t.name], "mca_attn_rows", t.arch)]
        bad = [n for n in spills if n]
        if not spills:
            failed.append("attn_rows %s: no loop with multiply-adds found" % t.name)
        elif bad and t.name == "armv7":
            notes.append("attn_rows armv7: %d of %d loops spill a q register to the stack "
                         "(known, not failed)" % (len(bad), len(spills)))
        elif bad:
            failed.append("attn_rows %s: %d of its %d multiply-add loops spill vectors to the "
                          "stack (%s stores)" % (t.name, len(bad), len(spills),
                                                   "+".join(str(n) for n in bad)))
        else:
            checked_spills.append("%s (%d loops)" % (t.name, len(spills)))
    return failed, notes, checked_spills


def check_string_moves(targets, asms):
    """x86: no string move in the projections' GEMM; returns (failures, what was checked)."""
    # A `rep movsq` per row of an edge tile once cost S1, the teaching notes' 11-token layer,
    # 60 % of its GEMM time.
    failed, checked = [], []
    for t in targets:
        if t.arch != "x86":
            continue
        funcs = functions(asms[t.name], t.arch)
        reps = [l for f in reachable(funcs, "mca_gemm") for l in funcs[f]
                if re.match(r"rep\w* movs", l)]
        if reps:
            failed.append("gemm %s: %d string moves (%s) in f32_gemm's code" % (
                t.name, len(reps), reps[0]))
        else:
            checked.append("%s gemm without rep movs" % t.name)
    return failed, checked


if __name__ == "__main__":
    sys.exit(main())
