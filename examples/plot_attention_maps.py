#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws the attention maps of examples/attention_maps.cpp as heatmaps: one figure, one
subplot per head, token names on both axes (rows: query tokens, columns: key tokens).

    python3 examples/plot_attention_maps.py maps.csv --out attention_maps.png
    python3 examples/plot_attention_maps.py build/host/examples/microattn_attention_maps \
        [--causal] [--seed N] --out attention_maps.png

The input is the CSV that `microattn_attention_maps --csv FILE` writes, or the program
itself (given its path, it is run with --csv into a temporary file; --causal and --seed are
passed on). The weights behind the maps are random with a fixed seed, not a trained model
(see docs/attention_maps.md). Needs matplotlib (Debian: apt-get install python3-matplotlib;
it installs into the system Python, /usr/bin/python3). Exit status: 0, 1 on bad input or a
failing program, 2 on bad arguments, 77 when matplotlib is missing (after the CSV was read
and checked; ctest reports 77 as skipped).
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

EXIT_NO_MATPLOTLIB = 77


def read_maps(path):
    """Returns (meta, tokens, maps) from the CSV: maps[h][i][j] = weight of query i over key j."""
    meta = {}
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        lines = []
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                meta[key.strip()] = value.strip()
            elif line.strip():
                lines.append(line)
        for r in csv.DictReader(lines):
            rows.append(r)
    need = {"head", "query", "key", "query_token", "key_token", "weight"}
    if not rows or not need.issubset(rows[0].keys()):
        raise ValueError(f"{path}: expected the columns {sorted(need)}")
    heads = 1 + max(int(r["head"]) for r in rows)
    n = 1 + max(int(r["query"]) for r in rows)
    if len(rows) != heads * n * n:
        raise ValueError(f"{path}: {len(rows)} rows, expected {heads} heads x {n} x {n}")
    tokens = [""] * n
    maps = [[[0.0] * n for _ in range(n)] for _ in range(heads)]
    for r in rows:
        h, i, j = int(r["head"]), int(r["query"]), int(r["key"])
        maps[h][i][j] = float(r["weight"])
        tokens[j] = r["key_token"]
    for h in range(heads):
        for i in range(n):
            s = sum(maps[h][i])
            if abs(s - 1.0) > 1e-5:
                raise ValueError(f"{path}: head {h}, row {i} sums to {s}, not 1")
    return meta, tokens, maps


def run_program(exe, causal, seed, csv_path):
    cmd = [exe, "--csv", csv_path]
    if causal:
        cmd.append("--causal")
    if seed is not None:
        cmd += ["--seed", str(seed)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stdout)
        raise RuntimeError(f"{' '.join(cmd)} exited with {p.returncode}")


def plot(meta, tokens, maps, out):
    try:
        import matplotlib
    except ImportError:
        print(f"SKIP: matplotlib is not installed for {sys.executable} (Debian: apt-get install "
              "python3-matplotlib, then run this script with /usr/bin/python3)")
        return EXIT_NO_MATPLOTLIB
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np  # a dependency of matplotlib

    heads, n = len(maps), len(tokens)
    causal = meta.get("mask") == "causal"
    labels = [f"{t} ({i})" for i, t in enumerate(tokens)]  # "a" and "the" occur twice
    fig, axes = plt.subplots(1, heads, figsize=(5.6 * heads + 1.2, 6.0), squeeze=False,
                             constrained_layout=True)
    vmax = max(max(max(row) for row in m) for m in maps)
    cmap = plt.get_cmap("viridis").copy()
    cmap.set_bad("lightgray")  # keys the causal mask hides
    hidden = np.array([[causal and j > i for j in range(n)] for i in range(n)])
    for h, ax in enumerate(axes[0]):
        im = ax.imshow(np.ma.masked_array(maps[h], mask=hidden), cmap=cmap, vmin=0.0, vmax=vmax)
        ax.set_title(f"head {h}")
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xticklabels(labels, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
        ax.set_yticklabels(labels, fontsize=8)
        ax.set_xlabel("key token (attended to)")
        ax.set_ylabel("query token")
        for i in range(n):
            for j in range(n):
                if hidden[i][j]:
                    continue
                w = maps[h][i][j]
                ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=6,
                        color="black" if w > 0.6 * vmax else "white")
    fig.colorbar(im, ax=list(axes[0]), shrink=0.8, label="attention weight (each row sums to 1)")
    mask = meta.get("mask", "?") + (" (gray: future keys, hidden)" if causal else "")
    fig.suptitle(f"microattn attention maps, mask: {mask}, seed {meta.get('seed', '?')}: "
                 "random weights, not a trained model (mechanics, not linguistics)", fontsize=10)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"wrote {out}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="CSV from microattn_attention_maps --csv, or the program itself")
    ap.add_argument("--out", default="attention_maps.png", help="PNG to write")
    ap.add_argument("--causal", action="store_true", help="(program input) causal mask")
    ap.add_argument("--seed", type=int, help="(program input) seed of the random inputs")
    args = ap.parse_args()

    try:
        is_csv = not (os.path.isfile(args.input) and os.access(args.input, os.X_OK)
                      and not args.input.endswith(".csv"))
        if is_csv:
            if args.causal or args.seed is not None:
                ap.error("--causal and --seed apply when the input is the program, not a CSV")
            meta, tokens, maps = read_maps(args.input)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "maps.csv")
                run_program(os.path.abspath(args.input), args.causal, args.seed, path)
                meta, tokens, maps = read_maps(path)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return plot(meta, tokens, maps, args.out)


if __name__ == "__main__":
    sys.exit(main())
