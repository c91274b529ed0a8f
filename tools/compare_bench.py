#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Puts benchmark results from several machines side by side: one table, one row per case.

Reads Google Benchmark JSON (microattn_bench --benchmark_out=x.json --benchmark_out_format=json,
or --benchmark_format=json > x.json; ports/linux-arm/run_on_board.sh fetches one from a board)
and the Cortex-M bench's output, which prints the same shape (ports/cortex-m/bench.cpp): a
saved console or UART log is fine, the text around the JSON object is ignored.

  python3 tools/compare_bench.py board.json host.json
  python3 tools/compare_bench.py board.log host.json --filter '^M' --format csv
  python3 tools/compare_bench.py pi5.json pi4.json host.json --baseline 1

Rows: the cases of the first file (--all: of every file), in its order; --filter keeps the
names a regular expression finds. Columns: each file's time per iteration (--metric, default
cpu_time; the Cortex-M bench reports the same value for both), its DWT cycle or QEMU instruction
count when it has one, then each file's time divided by the baseline file's (default the last:
"how many times slower than the host"). With repetitions (--benchmark_repetitions=N) the
median is used: Google Benchmark's median aggregate if it printed one, else the median of the
repetitions. Notes under the table say what each file's numbers are (cycles at which clock,
QEMU's instruction counts, which are NOT cycles, CPU frequency scaling).

python3 tools/compare_bench.py --self-test checks the script on built-in samples.
"""
import argparse
import json
import math
import re
import statistics
import sys

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


class Result:
    """One file: label, context, and {case: Case} in the file's order."""

    def __init__(self, path, data):
        self.path = path
        self.context = data.get("context", {})
        self.cases = {}
        runs = {}  # case -> [entries of run_type iteration]
        medians = {}  # case -> the median aggregate
        for b in data.get("benchmarks", []):
            name = b.get("run_name") or b.get("name")
            if not name:
                continue
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    medians[name] = b
                runs.setdefault(name, [])
                continue
            runs.setdefault(name, []).append(b)
        for name, entries in runs.items():
            self.cases[name] = Case(name, entries, medians.get(name))
        ctx = self.context
        self.icount = "instructions" in str(ctx.get("microattn_counter", "")) or any(
            c.instructions is not None for c in self.cases.values())
        self.cycles = any(c.cycles is not None for c in self.cases.values())
        # Times that are no machine's time: QEMU's virtual clock, or SysTick under QEMU.
        self.emulated = self.icount or "QEMU" in str(ctx.get("microattn_counter", ""))

    def default_label(self):
        ctx = self.context
        host = ctx.get("host_name") or self.path
        if ctx.get("microattn_cpu"):
            return f"{host} ({ctx['microattn_cpu']})"
        if ctx.get("microattn_arch"):
            return f"{host} ({ctx['microattn_arch']})"
        return str(host)


class Case:
    """One case of one file: its time in ns (the median over repetitions) and counters."""

    def __init__(self, name, entries, median):
        self.name = name
        self.error = next((e.get("error_message") or "error" for e in entries
                           if e.get("error_occurred")), None)
        if median and median.get("error_occurred"):
            self.error = median.get("error_message") or "error"
        self.repetitions = len(entries)
        self.entries = entries
        self.median = median
        self.cycles = self._counter("cycles")
        self.instructions = self._counter("instructions")

    def time_ns(self, metric):
        if self.error:
            return None
        if self.median is not None and metric in self.median:
            return float(self.median[metric]) * UNIT_NS[self.median.get("time_unit", "ns")]
        times = [float(e[metric]) * UNIT_NS[e.get("time_unit", "ns")]
                 for e in self.entries if metric in e]
        return statistics.median(times) if times else None

    def _counter(self, key):
        if self.error:
            return None
        if self.median is not None and key in self.median:
            return float(self.median[key])
        vals = [float(e[key]) for e in self.entries if key in e]
        return statistics.median(vals) if vals else None


def load(path):
    """The first JSON object with a "benchmarks" list in the file (text around it ignored)."""
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8", errors="replace").read()
    dec = json.JSONDecoder()
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = dec.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("benchmarks"), list):
            return Result(path, obj)
    raise ValueError(f"{path}: no Google Benchmark JSON object (with a \"benchmarks\" list) in it")


def fmt_time(ns):
    if ns is None:
        return "–"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_count(v):
    return "–" if v is None else f"{round(v):,}"


def fmt_ratio(r):
    if r is None or not math.isfinite(r):
        return "–"
    if r >= 100:
        return f"{r:.0f}x"
    if r >= 10:
        return f"{r:.1f}x"
    return f"{r:.3g}x" if r < 1 else f"{r:.2f}x"


def build_table(results, labels, metric, baseline, names):
    """(header, rows of cells, rows of raw values) for the chosen cases."""
    header, raw_header = ["case"], ["case"]
    for r, lab in zip(results, labels):
        if not r.icount:  # QEMU -icount's "time" is its instruction count again
            header.append(f"{lab} time")
            raw_header.append(f"{lab} {metric}_ns")
        if r.cycles:
            header.append(f"{lab} cycles")
            raw_header.append(f"{lab} cycles")
        if r.icount:
            header.append(f"{lab} QEMU instructions")
            raw_header.append(f"{lab} instructions")
    # Ratios of times, between real machines only: an emulator's time is not a time.
    ratio_of = [i for i in range(len(results))
                if i != baseline and not results[i].emulated and not results[baseline].emulated]
    for i in ratio_of:
        header.append(f"{labels[i]} / {labels[baseline]}")
        raw_header.append(f"{labels[i]} / {labels[baseline]}")
    rows, raw = [], []
    for name in names:
        row, rrow = [name], [name]
        times = []
        for r in results:
            c = r.cases.get(name)
            t = c.time_ns(metric) if c else None
            times.append(t)
            if not r.icount:
                row.append(("error: " + c.error) if c and c.error else fmt_time(t))
                rrow.append("" if t is None else f"{t:.6g}")
            elif c and c.error:  # the error in the count column
                if r.cycles:
                    row.append("–")
                    rrow.append("")
                row.append("error: " + c.error)
                rrow.append("")
                continue
            if r.cycles:
                row.append(fmt_count(c.cycles if c else None))
                rrow.append("" if not c or c.cycles is None else f"{c.cycles:.0f}")
            if r.icount:
                row.append(fmt_count(c.instructions if c else None))
                rrow.append("" if not c or c.instructions is None else f"{c.instructions:.0f}")
        tb = times[baseline]
        for i in ratio_of:
            t = times[i]
            ratio = t / tb if t is not None and tb else None
            row.append(fmt_ratio(ratio))
            rrow.append("" if ratio is None else f"{ratio:.6g}")
        rows.append(row)
        raw.append(rrow)
    return header, raw_header, rows, raw


def notes(results, labels, metric):
    out = []
    for r, lab in zip(results, labels):
        ctx = r.context
        reps = sorted({c.repetitions for c in r.cases.values() if c.repetitions})
        what = []
        if r.icount:
            what.append("QEMU -icount: counts are guest instructions, NOT cycles, and its 'time' is "
                        "QEMU's virtual clock (1 ns per instruction), not a time, so no time or ratio "
                        "column; a regression signal only")
        elif r.cycles:
            clock = ctx.get("microattn_core_clock_hz") or (ctx.get("mhz_per_cpu", 0) * 1e6)
            what.append(f"DWT cycle counts; time = cycles / {float(clock) / 1e6:g} MHz, the core "
                        f"clock the board file reports")
            if ctx.get("microattn_caches"):
                what.append(f"caches: {ctx['microattn_caches']}")
        else:
            what.append(f"{metric.replace('_', ' ')}")
            if reps and max(reps) > 1:
                what.append(f"median of {max(reps)} repetitions")
            if ctx.get("microattn_governor"):  # ports/linux-arm/run_on_board.sh
                gov = ctx["microattn_governor"]
                pin = ctx.get("microattn_pinned_cpu")
                what.append(f"governor {gov}" + ("" if gov in ("performance", "unknown")
                                                 else " (not performance: the clock moved)")
                            + (f", pinned to CPU {pin}" if pin is not None else ", not pinned"))
            elif ctx.get("cpu_scaling_enabled"):
                what.append("CPU frequency scaling was on (see docs/targets.md: fix the governor)")
        if ctx.get("microattn_counter") and "noise" in str(ctx["microattn_counter"]):
            what.append("SysTick under QEMU without -icount: host time, noise")
        extra = [str(ctx[k]) for k in ("executable", "date") if ctx.get(k) and ctx[k] != "n/a"]
        out.append(f"- {lab} ({r.path}{', ' + ', '.join(extra) if extra else ''}): "
                   + "; ".join(what) + ".")
    return out


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="*", help="Google Benchmark JSON files or Cortex-M bench logs ('-': stdin)")
    ap.add_argument("--baseline", type=int, default=-1,
                    help="index (0 = first file) of the file others are divided by; default the last")
    ap.add_argument("--metric", choices=("cpu_time", "real_time"), default="cpu_time")
    ap.add_argument("--filter", help="keep the cases whose name this regular expression finds")
    ap.add_argument("--all", action="store_true", help="rows for the cases of every file, not only the first's")
    ap.add_argument("--label", action="append", default=[],
                    help="column label for each file, in order (default: host name and CPU / arch)")
    ap.add_argument("--format", choices=("markdown", "csv"), default="markdown")
    ap.add_argument("--self-test", action="store_true", help="check the script on built-in samples")
    a = ap.parse_args(argv)
    if a.self_test:
        return self_test()
    if not a.files:
        ap.error("give one or more result files")
    try:
        results = [load(f) for f in a.files]
    except (OSError, ValueError) as e:
        print(f"compare_bench: {e}", file=sys.stderr)
        return 2
    labels = [a.label[i] if i < len(a.label) else r.default_label() for i, r in enumerate(results)]
    seen = {}
    for i, lab in enumerate(labels):  # two runs on one machine: make the columns distinct
        seen[lab] = seen.get(lab, 0) + 1
        if seen[lab] > 1:
            labels[i] = f"{lab} #{seen[lab]}"
    baseline = a.baseline if a.baseline >= 0 else len(results) + a.baseline
    if not 0 <= baseline < len(results):
        ap.error(f"--baseline {a.baseline}: there are {len(results)} files")
    names = list(results[0].cases)
    if a.all:
        for r in results[1:]:
            names += [n for n in r.cases if n not in names]
    if a.filter:
        rx = re.compile(a.filter)
        names = [n for n in names if rx.search(n)]
    if not names:
        print("compare_bench: no case to show", file=sys.stderr)
        return 1
    header, raw_header, rows, raw = build_table(results, labels, a.metric, baseline, names)
    if a.format == "csv":
        import csv
        w = csv.writer(sys.stdout)
        w.writerow(raw_header)
        w.writerows(raw)
        return 0
    print(markdown(header, rows))
    print()
    print("\n".join(notes(results, labels, a.metric)))
    return 0


# ---------------------------------------------------------------- self-test

_BOARD_LOG = """\
Debugger: semihosting enabled
{
  "context": {
    "date": "n/a",
    "host_name": "nucleo-h743zi",
    "executable": "microattn_cm_bench",
    "num_cpus": 1,
    "mhz_per_cpu": 400,
    "cpu_scaling_enabled": false,
    "caches": [],
    "microattn_cpu": "cortex-m7",
    "microattn_arch": "scalar",
    "microattn_core_clock_hz": 400000000,
    "microattn_caches": "I-cache on, D-cache on",
    "microattn_counter": "DWT CYCCNT (core cycles)"
  },
  "benchmarks": [
    {"name": "M1", "run_name": "M1", "run_type": "iteration", "iterations": 3, "real_time": 4000000, "cpu_time": 4000000, "time_unit": "ns", "cycles": 1600000},
    {"name": "MD1_q8", "run_type": "iteration", "error_occurred": true, "error_message": "status not ok"},
    {"name": "MD1", "run_name": "MD1", "run_type": "iteration", "iterations": 10, "real_time": 250000, "cpu_time": 250000, "time_unit": "ns", "cycles": 100000}
  ]
}
microattn exit 0
"""

_QEMU = {"context": {"host_name": "mps2-an386", "microattn_cpu": "cortex-m4", "mhz_per_cpu": 25,
                     "microattn_counter": "DWT CYCCNT does not advance (QEMU); SysTick under -icount: instructions, NOT cycles"},
         "benchmarks": [{"name": "M1", "run_type": "iteration", "iterations": 3, "real_time": 2882160,
                         "cpu_time": 2882160, "time_unit": "ns", "instructions": 2882160,
                         "label": "QEMU -icount instruction count, NOT cycles; time is virtual"},
                        {"name": "MD1", "run_type": "iteration", "error_occurred": True,
                         "error_message": "status not ok"}]}

_HOST = {"context": {"host_name": "buildbox", "executable": "./microattn_bench", "microattn_arch": "fma3+avx2",
                     "cpu_scaling_enabled": True, "date": "2026-11-22T10:00:00+00:00"},
         "benchmarks": [
             {"name": "M1", "run_name": "M1", "run_type": "iteration", "repetitions": 3, "repetition_index": 0,
              "real_time": 41.0, "cpu_time": 40.0, "time_unit": "us"},
             {"name": "M1", "run_name": "M1", "run_type": "iteration", "repetitions": 3, "repetition_index": 1,
              "real_time": 51.0, "cpu_time": 50.0, "time_unit": "us"},
             {"name": "M1", "run_name": "M1", "run_type": "iteration", "repetitions": 3, "repetition_index": 2,
              "real_time": 61.0, "cpu_time": 60.0, "time_unit": "us"},
             {"name": "M1_mean", "run_name": "M1", "run_type": "aggregate", "aggregate_name": "mean",
              "real_time": 51.0, "cpu_time": 50.0, "time_unit": "us"},
             {"name": "M1_median", "run_name": "M1", "run_type": "aggregate", "aggregate_name": "median",
              "real_time": 51.0, "cpu_time": 50.0, "time_unit": "us"},
             {"name": "MD1", "run_name": "MD1", "run_type": "iteration", "real_time": 2.1, "cpu_time": 2.0,
              "time_unit": "us"},
             {"name": "P1", "run_name": "P1", "run_type": "iteration", "real_time": 555, "cpu_time": 550,
              "time_unit": "us"}]}


def self_test():
    import contextlib
    import io
    import os
    import tempfile

    def run(args):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rc = main(args)
        return rc, buf.getvalue()

    def check(cond, what):
        if not cond:
            raise SystemExit(f"compare_bench: self-test FAILED: {what}")

    with tempfile.TemporaryDirectory() as d:
        board, qemu, host = (os.path.join(d, n) for n in ("board.log", "qemu.json", "host.json"))
        with open(board, "w") as f:
            f.write(_BOARD_LOG)
        with open(qemu, "w") as f:
            json.dump(_QEMU, f)
        with open(host, "w") as f:
            json.dump(_HOST, f, indent=1)

        rc, out = run([board, host])
        check(rc == 0, f"board + host exit {rc}")
        lines = out.splitlines()
        check(lines[0] == "| case | nucleo-h743zi (cortex-m7) time | nucleo-h743zi (cortex-m7) cycles | "
                          "buildbox (fma3+avx2) time | nucleo-h743zi (cortex-m7) / buildbox (fma3+avx2) |",
              f"header: {lines[0]}")
        # M1: 4 ms on the board, median 50 us CPU time on the host: 80x.
        check("| M1 | 4 ms | 1,600,000 | 50 us | 80.0x |" in lines, f"M1 row in\n{out}")
        check("| MD1 | 250 us | 100,000 | 2 us | 125x |" in lines, f"MD1 row in\n{out}")
        check("| MD1_q8 | error: status not ok | – | – | – |" in lines, f"error row in\n{out}")
        check(not any(l.startswith("| P1 ") for l in lines), "P1 is not a board case")
        check("time = cycles / 400 MHz" in out and "median of 3 repetitions" in out
              and "CPU frequency scaling was on" in out, f"notes in\n{out}")

        rc, out = run([board, host, "--all", "--filter", "^(M1|P1)$", "--metric", "real_time"])
        check(rc == 0 and "| P1 | – | – | 555 us | – |" in out and "| M1 | 4 ms | 1,600,000 | 51 us | 78.4x |" in out,
              f"--all --filter --metric real_time:\n{out}")

        rc, out = run([qemu, board, host, "--baseline", "1", "--label", "qemu-m4"])
        check(rc == 0 and "QEMU instructions" in out and "NOT cycles" in out
              and "| M1 | 2,882,160 | 4 ms | 1,600,000 | 50 us | 0.0125x |" in out,
              f"three files, baseline 1:\n{out}")
        rc, out = run([qemu, host])
        check(rc == 0 and "| MD1 | error: status not ok | 2 us |" in out
              and "/" not in out.splitlines()[0], f"QEMU + host (no ratio column):\n{out}")

        rc, out = run([board, host, "--format", "csv"])
        check(rc == 0 and out.splitlines()[1] == "M1,4e+06,1600000,50000,80", f"csv:\n{out}")

        rc, out = run([board, board])
        check(rc == 0 and "nucleo-h743zi (cortex-m7) #2 time" in out and "| M1 | 4 ms | 1,600,000 | 4 ms | 1,600,000 | 1.00x |" in out,
              f"same file twice:\n{out}")

        pi = os.path.join(d, "pi.json")  # as ports/linux-arm/run_on_board.sh annotates it
        with open(pi, "w") as f:
            json.dump({"context": {"host_name": "raspberrypi", "microattn_arch": "arm64+neon",
                                   "microattn_governor": "ondemand", "microattn_pinned_cpu": 3},
                       "benchmarks": [{"name": "M1", "run_type": "iteration", "cpu_time": 0.2,
                                       "real_time": 0.2, "time_unit": "ms"}]}, f)
        rc, out = run([pi, host])
        check(rc == 0 and "| M1 | 200 us | 50 us | 4.00x |" in out
              and "governor ondemand (not performance: the clock moved), pinned to CPU 3" in out,
              f"run_on_board JSON:\n{out}")

        empty = os.path.join(d, "empty.txt")
        with open(empty, "w") as f:
            f.write("no json here {not json}\n")
        with contextlib.redirect_stderr(io.StringIO()):
            check(run([empty])[0] == 2, "a file without JSON is an error")
            check(run([board, "--filter", "^nothing$"])[0] == 1, "no rows is an error")
    print("compare_bench: self-test passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
