#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What a weight format does to a trained model's answers, before any kernel exists for it: the
llama2.c checkpoint (stories260K) run in float64 NumPy with every matrix (the tied embedding and
head too) rounded to a format and, for integer compute, every matrix product's input rounded to
int8 as well; compared with the fp32 model teacher-forced on its own greedy sequence.

  /usr/bin/python3 tools/quant_study.py ../shared/models/stories260K/stories260K.bin
      [--steps 256] [--markdown] [--per-matrix FORMAT]
  /usr/bin/python3 tools/quant_study.py --tiny-lm examples/tiny_lm/tiny_lm.pt [--markdown]

--tiny-lm: the trained tiny LM (tools/train_tiny_lm.py, PyTorch in float64) the same way,
teacher-forced on "The " and its greedy continuation (t_max, 128 characters), plus each format's
validation loss (nats per character on the held-out 5 % of Debian's fortunes, 200 windows of
128); activations rounded at every nn.Linear's input (the tied head's too).

Formats (w = scale * q, symmetric unless said; rounding to nearest, ties away from zero):
  int8 col       one scale per output column (microattn's WeightType::kInt8 today)
  int8 gG        one scale per output column and group of G consecutive inputs (G 32, 64, 128)
  int4 gG        q in [-7, 7], a scale per group of G
  int4 gG asym   q in [0, 15] with a per-group offset (min and max of the group)
  ... mse        the group's scale searched for the least squared error (llama.cpp's k-quants)
  fp16, bf16     the weights rounded to those types (round to nearest even)
Activations (the integer-compute rows, "+ act"): each product's input row in int8, one scale per
row (microattn's Compute::kInt8 today) or per group of G.

Metrics over the steps' positions: max |logit - fp32 logit| / max |fp32 logit| (the share of the
logit range), the positions whose top choice is the fp32 model's, and the mean
KL(fp32 || format) of the softmax in nats. Numbers of the rounding alone: a kernel computing a
format exactly gives these; microattn's int8 kernels do (docs/quantization.md).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "python"))
import llama2c_reference as ref  # noqa: E402


def round_away(v):
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def groups(w, group):
    """w [out][in] as [out][groups][group] (0: the whole row), the last group padded with
    zeros when group does not divide the inputs (172 of stories260K's down projection)."""
    out, k = w.shape
    g = group or k
    pad = -k % g
    return np.pad(w, ((0, 0), (0, pad))).reshape(out, (k + pad) // g, g), k


def quant_sym(w, levels, group):
    """w [out][in] rounded to q in [-levels, levels] with a scale per output row and group of
    `group` inputs (0: the whole row)."""
    wg, k = groups(w, group)
    scale = np.abs(wg).max(axis=2, keepdims=True) / levels
    safe = np.where(scale > 0, scale, 1.0)
    q = np.clip(round_away(wg / safe), -levels, levels)
    return (q * scale).reshape(w.shape[0], -1)[:, :k]


def quant_sym_mse(w, levels, group):
    """quant_sym with each group's scale searched (max / levels times 0.50 .. 1.00 in steps of
    0.01) for the least squared error of the group, as llama.cpp's k-quants do."""
    wg, k = groups(w, group)
    amax = np.abs(wg).max(axis=2, keepdims=True)
    best, best_err = None, None
    for f in (k / 100 for k in range(50, 101)):  # 1.0 exactly last
        scale = amax * f / levels
        safe = np.where(scale > 0, scale, 1.0)
        deq = np.clip(round_away(wg / safe), -levels, levels) * scale
        err = ((deq - wg) ** 2).sum(axis=2, keepdims=True)
        if best is None:
            best, best_err = deq, err
        else:
            better = err < best_err
            best = np.where(better, deq, best)
            best_err = np.where(better, err, best_err)
    return best.reshape(w.shape[0], -1)[:, :k]


def quant_asym(w, levels, group):
    """w rounded to q in [0, levels] with a per-group scale and offset (the group's minimum;
    a padded last group's range is its real inputs')."""
    wg, k = groups(w, group)
    real = np.pad(np.ones_like(w, dtype=bool), ((0, 0), (0, wg.size // w.shape[0] - k)))
    real = real.reshape(wg.shape)
    lo = np.where(real, wg, np.inf).min(axis=2, keepdims=True)
    hi = np.where(real, wg, -np.inf).max(axis=2, keepdims=True)
    scale = (hi - lo) / levels
    safe = np.where(scale > 0, scale, 1.0)
    q = np.clip(round_away((wg - lo) / safe), 0, levels)
    return (q * scale + lo).reshape(w.shape[0], -1)[:, :k]


def to_f16(w):
    return w.astype(np.float16).astype(np.float64)


def to_bf16(w):
    bits = w.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16  # round to nearest even
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


FORMATS = {
    "fp32": lambda w: w.astype(np.float32).astype(np.float64),
    "fp16": to_f16,
    "bf16": to_bf16,
    "int8 col": lambda w: quant_sym(w, 127, 0),
    "int8 g128": lambda w: quant_sym(w, 127, 128),
    "int8 g64": lambda w: quant_sym(w, 127, 64),
    "int8 g32": lambda w: quant_sym(w, 127, 32),
    "int8 g32 mse": lambda w: quant_sym_mse(w, 127, 32),
    "int4 g32": lambda w: quant_sym(w, 7, 32),
    "int4 g32 mse": lambda w: quant_sym_mse(w, 7, 32),
    "int4 g32 asym": lambda w: quant_asym(w, 15, 32),
    "int4 g64": lambda w: quant_sym(w, 7, 64),
}
MATRICES = ("wq", "wk", "wv", "wo", "w1", "w2", "w3")


def weights(w, fmt, only=None):
    """The checkpoint's arrays with every matrix (per layer) and the embedding in format fmt
    (only: just that one, the others fp32)."""
    out = dict(w)
    f = FORMATS[fmt]
    for name in MATRICES:
        if only in (None, name):
            out[name] = np.array([f(m) for m in w[name]])
    if only in (None, "emb"):
        out["emb"] = out["wcls"] = f(w["emb"])
    return out


class ActModel(ref.Model):
    """ref.Model with every matrix product's input rounded to int8 (a scale per row, or per
    group of `group`): its act() hook."""

    def __init__(self, cfg, w, group):
        super().__init__(cfg, w)
        self.group = group

    def act(self, x):
        return quant_sym(x[None], 127, self.group)[0]


def forced(model, tokens):
    return np.array([model.step(t, pos) for pos, t in enumerate(tokens)])


def log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def compare(base, z):
    lp, lq = log_softmax(base), log_softmax(z)
    kl = (np.exp(lp) * (lp - lq)).sum(axis=1).mean()
    return (np.abs(z - base).max() / np.abs(base).max(),
            int((z.argmax(axis=1) == base.argmax(axis=1)).sum()), kl)


def tiny_lm_rows(path, steps):
    """[(format, error, top kept, KL, validation loss)] of the tiny LM (--tiny-lm)."""
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import train_tiny_lm as tl
    model = tl.load(path).double()
    ids = tl.encode("The ", model.vocab)
    ids += tl.encode(model.generate("The ", steps - len(ids)), model.vocab)
    tokens = torch.tensor(ids[:steps])[None]
    val = torch.tensor(tl.encode(tl.split_corpus(tl.read_fortunes())[1], model.vocab))
    fp32 = {k: v.clone() for k, v in model.state_dict().items()}
    mats = [k for k, v in fp32.items() if v.dim() == 2]  # the projections and the embedding
    t = model.config["t_max"]

    def run(state, act):
        model.load_state_dict(state)
        hooks = []
        if act is not None:
            def round_input(_, args):
                x = args[0]
                q = quant_sym(x.reshape(-1, x.shape[-1]).numpy(), 127, act)
                return (torch.from_numpy(q).reshape(x.shape),)
            hooks = [m.register_forward_pre_hook(round_input) for m in model.modules()
                     if isinstance(m, torch.nn.Linear)]
            model.norm.register_forward_hook(lambda _, __, y: round_input(None, (y,))[0])
        try:
            with torch.no_grad():
                z = model(tokens[:, -t:])[0].numpy() if steps <= t else None
                loss = tl.eval_loss(model, val, t, max_windows=200)
        finally:
            for h in hooks:
                h.remove()
            model.norm._forward_hooks.clear()
        return z, loss

    base, base_loss = run(fp32, None)
    rows = [("fp32 (validation loss %.4f)" % base_loss, 0.0, steps, 0.0, base_loss)]
    for fmt in FORMATS:
        if fmt == "fp32":
            continue
        state = dict(fp32)
        for k in mats:
            state[k] = torch.from_numpy(FORMATS[fmt](fp32[k].numpy()))
        for tag, act in [("", None)] + ([(" + act row", 0), (" + act g32", 32)]
                                        if fmt.startswith("int") else []):
            z, loss = run(state, act)
            err, top, kl = compare(base, z)
            rows.append((fmt + tag, err, top, kl, loss))
            print(f"{fmt + tag:24s} {100 * err:7.2f} % {top:4d}/{steps} {kl:.2e} {loss:.4f}",
                  file=sys.stderr)
    model.load_state_dict(fp32)
    return rows


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint", nargs="?")
    ap.add_argument("--tiny-lm", metavar="PT", help="tools/train_tiny_lm.py's model instead")
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--per-matrix", metavar="FORMAT", choices=FORMATS,
                    help="each matrix alone in FORMAT (the others fp32)")
    a = ap.parse_args(argv)
    if a.tiny_lm:
        rows = tiny_lm_rows(a.tiny_lm, min(a.steps, 128))
        if a.markdown:
            print("| format | max \\|Δ logit\\| / max \\|logit\\| | top choice kept | "
                  "mean KL (nats) | validation loss (nats/char) |")
            print("|---|---:|---:|---:|---:|")
            for name, err, top, kl, loss in rows:
                print(f"| {name} | {100 * err:.2f} % | {top} | {kl:.2e} | {loss:.4f} |")
        return 0
    if not a.checkpoint:
        ap.error("a llama2.c checkpoint, or --tiny-lm PT")
    cfg, w = ref.load(a.checkpoint)
    tokens, base, _ = ref.greedy(cfg, w, a.steps)
    tokens = tokens[:a.steps]  # BOS and the greedy choices: position i sees tokens[0..i]
    rows = []
    if a.per_matrix:
        for name in MATRICES + ("emb",):
            err, top, kl = compare(base, forced(ref.Model(cfg, weights(w, a.per_matrix, name)),
                                                tokens))
            print(f"{a.per_matrix} {name:4s} alone {100 * err:7.2f} % {top:4d}/{a.steps} {kl:.2e}")
        return 0
    for fmt in FORMATS:
        wf = weights(w, fmt)
        runs = [("", ref.Model(cfg, wf))]
        if fmt.startswith("int"):
            runs += [(" + act row", ActModel(cfg, wf, 0)), (" + act g32", ActModel(cfg, wf, 32))]
        for tag, model in runs:
            err, top, kl = compare(base, forced(model, tokens))
            rows.append((fmt + tag, err, top, kl))
            print(f"{fmt + tag:24s} {100 * err:7.2f} % {top:4d}/{a.steps} {kl:.2e}",
                  file=sys.stderr)
    if a.markdown:
        print(f"| format | max \\|Δ logit\\| / max \\|logit\\| | top choice kept (of {a.steps}) "
              "| mean KL (nats) |")
        print("|---|---:|---:|---:|")
        for name, err, top, kl in rows:
            print(f"| {name} | {100 * err:.2f} % | {top} | {kl:.2e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
