#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Draws every attention map of the trained tiny LM that examples/tiny_lm/tiny_lm_heads.cpp
computes: one PNG, one row per (text, layer), one column per head, each a heatmap with the
characters on both axes (rows: query characters, columns: key characters; causal, so the
upper triangle, the future, is empty).

    python3 examples/tiny_lm/plot_heads.py maps.csv --out docs/tiny_lm_heads.png
    python3 examples/tiny_lm/plot_heads.py build/host/examples/microattn_tiny_lm_heads \
        --out heads.png [--check-torch]

The input is the CSV that `microattn_tiny_lm_heads --csv FILE` writes, or the program itself
(run with --csv into a temporary file). --check-torch also computes the maps with PyTorch
from examples/tiny_lm/tiny_lm.pt (tools/train_tiny_lm.py's TinyLM.attention_maps: the
attention's own probabilities, return_maps=True) and requires the C++ maps to equal them
within 1e-5. Needs matplotlib (Debian: python3-matplotlib, in /usr/bin/python3) and, for
--check-torch, torch (python3-torch). Exit status: 0; 1 on bad input, a failing program or
a failed check; 2 on bad arguments; 77 when matplotlib or torch is missing (after what could
be done without it; ctest reports 77 as skipped).
"""
import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile

EXIT_SKIP = 77
TORCH_TOL = 1e-5
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))


def read_maps(path):
    """(meta, texts): texts[k] = (chars, maps), maps[l][h][i][j] = weight of query i on key j."""
    meta, lines = {}, []
    with open(path, newline="", encoding="utf-8") as f:
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                meta[key.strip()] = value.strip()
            elif line.strip():
                lines.append(line)
    rows = list(csv.DictReader(lines))
    need = {"text", "layer", "head", "query", "key", "query_token", "key_token", "weight"}
    if not rows or not need.issubset(rows[0].keys()):
        raise ValueError(f"{path}: expected the columns {sorted(need)}")
    by_text = {}
    for r in rows:
        by_text.setdefault(int(r["text"]), []).append(r)
    texts = []
    for k in sorted(by_text):
        rs = by_text[k]
        layers = 1 + max(int(r["layer"]) for r in rs)
        heads = 1 + max(int(r["head"]) for r in rs)
        n = 1 + max(int(r["query"]) for r in rs)
        if len(rs) != layers * heads * n * n:
            raise ValueError(f"{path}: text {k}: {len(rs)} rows, expected {layers} layers x "
                             f"{heads} heads x {n} x {n}")
        chars = [""] * n
        maps = [[[[0.0] * n for _ in range(n)] for _ in range(heads)] for _ in range(layers)]
        for r in rs:
            maps[int(r["layer"])][int(r["head"])][int(r["query"])][int(r["key"])] = float(
                r["weight"])
            chars[int(r["key"])] = r["key_token"]
        for l in range(layers):
            for h in range(heads):
                for i in range(n):
                    s = sum(maps[l][h][i])
                    if abs(s - 1.0) > 1e-5 or any(maps[l][h][i][j] != 0.0 for j in range(i + 1, n)):
                        raise ValueError(f"{path}: text {k}, layer {l}, head {h}, row {i}: sums "
                                         f"to {s} or sees the future")
        texts.append(("".join(chars), maps))
    return meta, texts


def run_program(exe, csv_path):
    cmd = [exe, "--csv", csv_path]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(p.stdout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited with {p.returncode}")


def check_torch(texts, model_path):
    """True/False: the maps equal PyTorch's; None when torch is missing."""
    try:
        import torch
    except ImportError:
        print(f"SKIP (--check-torch): torch is not installed for {sys.executable} "
              "(Debian: apt-get install python3-torch)")
        return None
    sys.path.insert(0, os.path.join(SOURCE_DIR, "tools"))
    import train_tiny_lm as tl
    torch.set_num_threads(1)
    model = tl.load(model_path)
    ok = True
    for k, (text, maps) in enumerate(texts):
        with torch.no_grad():
            ref = model.attention_maps(torch.tensor(tl.encode(text, model.vocab)))
        got = torch.tensor(maps, dtype=torch.float64)
        want = torch.stack([p.double() for p in ref])
        if got.shape != want.shape:
            print(f"text {k}: maps of shape {tuple(got.shape)}, PyTorch's {tuple(want.shape)}")
            ok = False
            continue
        diff = float((got - want).abs().max())
        good = diff <= TORCH_TOL
        ok &= good
        print(f"text {k}: maps vs PyTorch's attention probabilities (return_maps): max |diff| "
              f"{diff:.2g} (limit {TORCH_TOL:.0e}): {'OK' if good else 'FAIL'}")
    return ok


def shown(c):
    return {" ": "\u2423", "\n": "\u23ce"}.get(c, c)  # a visible space, a visible newline


def plot(meta, texts, out):
    try:
        import matplotlib
    except ImportError:
        print(f"SKIP: matplotlib is not installed for {sys.executable} (Debian: apt-get install "
              "python3-matplotlib, then run this script with /usr/bin/python3)")
        return EXIT_SKIP
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import PowerNorm
    import numpy as np  # a dependency of matplotlib

    layers, heads = len(texts[0][1]), len(texts[0][1][0])
    kv = re.search(r"(\d+) key/value heads", meta.get("shape", ""))
    group = heads // int(kv.group(1)) if kv else 1  # query head h reads kv head h / group
    nrows = len(texts) * layers
    fig, axes = plt.subplots(nrows, heads, figsize=(5.4 * heads + 1.2, 5.6 * nrows),
                             squeeze=False, constrained_layout=True)
    cmap = plt.get_cmap("magma_r").copy()
    cmap.set_bad("#e4e4e4")  # the future, which the causal mask hides
    norm = PowerNorm(gamma=0.5, vmin=0.0, vmax=1.0)  # small weights stay visible
    for k, (text, maps) in enumerate(texts):
        n = len(text)
        labels = [shown(c) for c in text]
        future = np.triu(np.ones((n, n), dtype=bool), 1)
        for l in range(layers):
            r = k * layers + l
            for h in range(heads):
                ax = axes[r][h]
                im = ax.imshow(np.ma.masked_array(maps[l][h], mask=future), cmap=cmap, norm=norm,
                               interpolation="nearest")
                ax.set_xticks(range(n))
                ax.set_yticks(range(n))
                ax.set_xticklabels(labels, fontsize=6.5, family="DejaVu Sans Mono")
                ax.set_yticklabels(labels, fontsize=6.5, family="DejaVu Sans Mono")
                ax.tick_params(length=0, pad=1)
                ax.set_title(f"text {k}, layer {l}, head {h} (kv head {h // group})", fontsize=11)
                if h == 0:
                    ax.set_ylabel("query character", fontsize=9)
                if l == layers - 1:
                    ax.set_xlabel("key character (attended to)", fontsize=9)
    fig.colorbar(im, ax=axes, shrink=0.3, aspect=30, pad=0.01,
                 label="attention weight (square-root colour scale; each row sums to 1)")
    quoted = "; ".join(f"text {k}: \u201c{t}\u201d" for k, (t, _) in enumerate(texts))
    fig.suptitle("The trained tiny LM (examples/tiny_lm): every head of both layers, from each "
                 f"layer's forward_with_maps\n{quoted}  (\u2423 = space; gray = future, masked)",
                 fontsize=14)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    try:  # a 256-colour palette: the same picture at a fraction of the bytes
        from PIL import Image
        with Image.open(out) as im:
            im.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(out,
                                                                                 optimize=True)
    except (ImportError, AttributeError):
        pass
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", help="CSV from microattn_tiny_lm_heads --csv, or the program itself")
    ap.add_argument("--out", default="tiny_lm_heads.png", help="PNG to write")
    ap.add_argument("--check-torch", action="store_true",
                    help="require the maps to equal PyTorch's within 1e-5")
    ap.add_argument("--torch-model", default=os.path.join(HERE, "tiny_lm.pt"),
                    help="the PyTorch model for --check-torch (default: %(default)s)")
    args = ap.parse_args()

    try:
        if args.input.endswith(".csv") or not os.access(args.input, os.X_OK):
            meta, texts = read_maps(args.input)
        else:
            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "maps.csv")
                run_program(os.path.abspath(args.input), path)
                meta, texts = read_maps(path)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    skip = False
    if args.check_torch:
        ok = check_torch(texts, args.torch_model)
        if ok is False:
            return 1
        skip = ok is None
    status = plot(meta, texts, args.out)
    return EXIT_SKIP if skip and status == 0 else status


if __name__ == "__main__":
    sys.exit(main())
