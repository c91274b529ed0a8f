#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/run_main.sh's summary on a saved run: the README results table that
scripts/update_figures.py --results-from makes of tests/data/run_main_results.json (the Google
Benchmark JSON of one run_main.sh run, trimmed to the medians) is tests/data/run_main_results.md,
line for line; the cases --results-filter selects are the ones the table reads.
Usage: check_results_table.py <repo>"""
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = os.path.join(root, "scripts", "update_figures.py")
    data_path = os.path.join(root, "tests", "data", "run_main_results.json")
    want = open(os.path.join(root, "tests", "data", "run_main_results.md")).read().splitlines()
    bad = []

    # The command run_main.sh runs, as it runs it.
    got = subprocess.run([sys.executable, script, "--results-from", data_path], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    if got != want:
        bad.append("the table differs from tests/data/run_main_results.md:\n" +
                   "\n".join(f"  got:  {g}\n  want: {w}" for g, w in zip(got + [""] * len(want), want + [""] * len(got))
                             if g != w))

    spec = importlib.util.spec_from_file_location("update_figures", script)
    uf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(uf)
    flt = subprocess.run([sys.executable, script, "--results-filter"], check=True,
                         capture_output=True, text=True).stdout.strip()
    if flt != uf.results_filter():
        bad.append(f"--results-filter printed {flt!r}, not results_filter()")
    names = {b["run_name"] for b in json.load(open(data_path))["benchmarks"]}
    # The saved run ran exactly the filter's cases: each one the table reads, none it does not.
    bad += [f"--results-filter does not select {n}, a case of the saved run" for n in sorted(names)
            if not re.match(flt, n)]
    medians = uf.bench_medians(json.load(open(data_path)), data_path)
    bad += [f"the saved run has no {c}, a case of the table" for c, *_ in uf.RESULT_ROWS if c not in medians]
    bad += [f"results_cases() has no {n}" for n in sorted(medians) if n not in uf.results_cases()]
    # A case missing from the JSON is an error naming it, not a table without the row.
    trimmed = json.load(open(data_path))
    trimmed["benchmarks"] = [b for b in trimmed["benchmarks"] if b["run_name"] != "E1"]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "no_e1.json")
        with open(path, "w") as f:
            json.dump(trimmed, f)
        r = subprocess.run([sys.executable, script, "--results-from", path], capture_output=True, text=True)
    if r.returncode == 0 or "E1" not in r.stderr + r.stdout:
        bad.append(f"a run without E1 gave rc {r.returncode}: {r.stderr.strip()}")

    if bad:
        sys.exit("check_results_table: FAILED\n" + "\n".join(bad))
    print("check_results_table: results table test passed")


if __name__ == "__main__":
    main()
