#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Modelled Cortex-M4 cycles of the Cortex-M bench cases: every instruction a case executes
under QEMU, costed with the Cortex-M4 Technical Reference Manual's cycle table. A MODEL
ESTIMATE, not a measurement (no board here; QEMU's own timing means nothing).

How: runs a bench image of a Cortex-M4 build (build/cortex-m4: microattn_cm_bench,
microattn_cm_bench_qd8, microattn_cm_bench_latent, microattn_cm_bench_tiny_lm,
microattn_cm_bench_stories) under QEMU with its ctest command line
plus `-d in_asm,exec,nochain` (every translated block's instructions, and every block executed,
in order), streamed through a pipe. A case's instructions are those from its entry function's first block (the bench
calls each case through a noinline `entry_*` function) to that function's return; each is
costed by tools/mca_report.py's m4_trm_insn_cycles (the TRM's Table 3-1 and the FPU's
Table 7-1: loads 2 cycles or 1 when pipelined after a load or store, VFMA 3, SMLAD 1, a
branch 1 + P with P = 2 when taken, 1 when not). Per call: the totals over the bench's calls
divided by their number. The instruction counts must agree with the bench's own -icount
figures within 1 % (they differ by the harness's counter reads, under 0.1 %): the check that
the right instructions were counted (exit status 1 otherwise).

Usage:
  python3 tools/cm_cycle_model.py                       # every case of the three images
  python3 tools/cm_cycle_model.py --case M1_qd8 --case M1_panel16 --functions 8
  python3 tools/cm_cycle_model.py --markdown            # the table in docs/targets.md
  python3 tools/cm_cycle_model.py --image bench_tiny_lm # the tiny language model's TLD1
  python3 tools/cm_cycle_model.py --image bench_stories # stories260K's STD1, STD1_qd8

Only the Python 3 standard library, QEMU (qemu-system-arm) and a configured, built
build/cortex-m4 (`cmake --workflow --preset cortex-m4`) are needed.
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import mca_report  # noqa: E402  (m4_trm_insn_cycles: the TRM table, shared with mca_report)

BOARD_TESTS = ("bench", "bench_qd8", "bench_latent", "bench_tiny_lm", "bench_stories")
# QEMU's in_asm lines: "0x000055e0:  fa2f f181  sxtb16   r1, r1"
ASM = re.compile(r"^0x([0-9a-f]+):\s+((?:[0-9a-f]{4}\s)+)\s*(\S.*)$")
TRACE = re.compile(r"^Trace \d+: \S+ \[[0-9a-f]+/([0-9a-f]+)/([0-9a-f]+)/([0-9a-f]+)\] (\S+)")
RETURN = re.compile(r"^(pop|ldm\w*(\.w)? sp!|ldr(\.w)? pc, \[sp\])|^bx lr$")


class Block:
    """A translated block: its instructions, where it falls through to, and its cost."""

    def __init__(self, insns, end):
        self.insns = insns
        self.end = end  # address after its last instruction
        self.n = len(insns)
        last = insns[-1]
        self.branch = mca_report.m4_is_jump(mca_report.m4_op(last))
        self.returns = RETURN.match(last) is not None and ("pc" in last or last == "bx lr")
        # cycles with the final branch not taken; taken adds 2 (P)
        self.cycles = mca_report.m4_trm_cycles(insns, last_taken=False)


def ctest_commands(build):
    tests = json.loads(subprocess.run(
        ["ctest", "--test-dir", build, "--show-only=json-v1"], check=True,
        stdout=subprocess.PIPE, text=True).stdout)["tests"]
    out = {}
    for t in tests:
        for name in BOARD_TESTS:
            if t["name"].endswith("." + name):
                out[name] = t["command"]
    return out


def entry_name(sym):
    """The bench entry function (in ports/cortex-m/bench.cpp's anonymous namespace) a mangled
    symbol is, or None (a symbol naming one as a template argument is not one)."""
    m = re.match(r"_ZN12_GLOBAL__N_1(\d+)(entry_\w+)", sym)
    return m.group(2)[:int(m.group(1))] if m else None


def trace(cmd):
    """[(entry, calls, instructions, cycles, {function: [insns, cycles]})] for each run of
    calls of an entry function in one run of a bench image (cmd: its QEMU command line), in
    order, and the image's JSON bench records. A run ends at the harness's next semihosting
    write (each case writes its name before its calls and its figures after them)."""
    tmp = tempfile.mkdtemp(prefix="cm_cycle_model.")
    fifo = os.path.join(tmp, "trace")
    os.mkfifo(fifo)
    qemu = subprocess.Popen(cmd + ["-d", "in_asm,exec,nochain", "-D", fifo],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = []
    reader = threading.Thread(target=lambda: out.append(qemu.stdout.read()))
    reader.start()
    blocks, runs = {}, []
    pending, pending_end = None, 0  # the block being translated
    inside = None  # the entry symbol of the call being counted
    written = True  # a semihosting write since the last call: the next call starts a run
    prev, prev_sym = None, None  # the block executed before this one
    with open(fifo, errors="replace") as f:
        for line in f:
            m = ASM.match(line)
            if m:
                pending = (pending or []) + [" ".join(m.group(3).split(";")[0].split())]
                pending_end = int(m.group(1), 16) + 2 * len(m.group(2).split())
                continue
            m = TRACE.match(line)
            if not m:
                continue
            key = m.group(1, 2, 3)
            if pending:
                blocks[key] = Block(pending, pending_end)
                pending = None
            b = blocks.get(key)
            if b is None:
                continue
            pc, sym = int(m.group(1), 16), m.group(4)
            if inside is not None:  # cost the previous block, now that its branch is known
                r = runs[-1]
                c = prev.cycles + (2 if prev.branch and pc != prev.end else 0)
                r[2] += prev.n
                r[3] += c
                r[4][prev_sym][0] += prev.n
                r[4][prev_sym][1] += c
                if prev.returns and prev_sym == inside:
                    inside = None
            if inside is None:
                if "semihosting5write" in sym:
                    written = True
                e = entry_name(sym)
                if e:
                    if written or runs[-1][0] != e:
                        runs.append([e, 0, 0, 0.0, collections.defaultdict(lambda: [0, 0.0])])
                        written = False
                    runs[-1][1] += 1
                    inside = sym
            prev, prev_sym = b, sym
    qemu.wait()
    reader.join()
    os.unlink(fifo)
    os.rmdir(tmp)
    if qemu.returncode != 0:
        raise SystemExit("qemu failed (%d):\n%s" % (qemu.returncode, out[0][-2000:]))
    return runs, json.loads(out[0][out[0].index("{"):])["benchmarks"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "cortex-m4"),
                    help="a built Cortex-M4 build folder (default build/cortex-m4)")
    ap.add_argument("--case", action="append", help="cases to model (default: all)")
    ap.add_argument("--functions", type=int, default=0,
                    help="also list each case's N costliest functions")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--image", action="append", choices=BOARD_TESTS,
                    help="bench images to run (default: every one that is built)")
    args = ap.parse_args()
    cmds = ctest_commands(args.build)
    if not cmds:
        raise SystemExit("no bench ctests in %s: cmake --workflow --preset cortex-m4" % args.build)
    rows = {}
    for name in BOARD_TESTS:
        if name not in cmds or (args.image and name not in args.image):
            continue
        kernel = cmds[name][cmds[name].index("-kernel") + 1]
        if not os.path.exists(kernel):
            print("skipped %s: %s is not built" % (name, kernel))
            continue
        runs, bench = trace(cmds[name])
        cases = [b for b in bench if not b.get("error_occurred")]
        if len(runs) != len(cases):
            raise SystemExit("%s: %d runs of entry calls for %d bench cases" % (
                name, len(runs), len(cases)))
        for (entry, calls, n, cyc, funcs), b in zip(runs, cases):
            if args.case and b["name"] not in args.case:
                continue
            rows[b["name"]] = (calls, n / calls, cyc / calls, b.get("instructions"), funcs)
            ic = float(b.get("instructions") or 0)
            if ic and abs(n / calls - ic) > 0.01 * ic:
                print("FAIL: %s: %.0f instructions per call counted, the bench's -icount says "
                      "%.0f" % (b["name"], n / calls, ic))
                return 1
    head = ["case", "instructions per call", "(bench -icount)", "modelled M4 cycles per call",
            "cycles per instruction", "vs fp32"]
    lines = []
    for case, (calls, n, cyc, ic, funcs) in rows.items():
        # An int8 case against the fp32 case with the same weight layout (kPanel16).
        base = re.sub(r"_(q8|q8_kv8|qd8|qd8_kv8)$", "_panel16", case)
        ratio = ("%.2fx %s" % (cyc / rows[base][2], base)
                 if base != case and base in rows else "")
        lines.append([case, "{:,.0f}".format(n), "{:,.0f}".format(float(ic)) if ic else "-",
                      "{:,.0f}".format(cyc), "%.2f" % (cyc / n), ratio])
    print("Cortex-M4 TRM cycle model over QEMU's executed instructions: MODEL ESTIMATES")
    print(mca_report.table_text(head, lines, args.markdown))
    if args.functions:
        for case, (calls, n, cyc, ic, funcs) in rows.items():
            print("\n%s: the %d costliest functions (modelled cycles per call)" % (case, args.functions))
            top = sorted(funcs.items(), key=lambda kv: -kv[1][1])[:args.functions]
            for sym, (fn, fc) in top:
                name = subprocess.run(["c++filt", sym], stdout=subprocess.PIPE, text=True).stdout
                print("  %10.0f cycles  %10.0f instructions  %5.1f %%  %s" % (
                    fc / calls, fn / calls, 100 * fc / calls / cyc, name.strip()[:110]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
