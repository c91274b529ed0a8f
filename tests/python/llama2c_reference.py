#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A float64 reference of llama2.c's forward (run.c, checkpoint "version 0"), written from the
format and run.c's arithmetic, independent of tools/llama2c.py and the exporter: numpy only.

  /usr/bin/python3 tests/python/llama2c_reference.py CHECKPOINT OUT [--steps N]

Greedy from BOS (token 1): writes OUT, the reference the ctest real_model.* compares with
(little-endian): u32 magic "RMR1", u32 steps N, u32 vocab V, i32 tokens[N + 1] (BOS, then the
greedy choices), f32 logits[N][V] (position i's logits, from tokens[0..i]), f32 margin (the
smallest gap between a step's top two logits over its largest |logit|: a test with a tolerance
under it sees the same argmax). Prints the margin.

run.c's forward per position: x = embedding[token]; per layer: xb = rmsnorm(x) * w (eps 1e-5,
mean of squares), q, k, v = Wq xb, Wk xb, Wv xb; RoPE on adjacent pairs (j, j + 1) of each
head with angle pos * 10000^(-(j mod head_size) / head_size); head h attends kv head
h / (n_heads / n_kv_heads), scores q.k / sqrt(head_size) over positions 0..pos, softmax;
x += Wo att; xb = rmsnorm(x) * w; x += W2 (silu(W1 xb) * W3 xb); logits = Wcls rmsnorm(x) * w
(Wcls the embedding when vocab_size > 0).
"""
import argparse
import struct
import sys

import numpy as np

BOS = 1
EPS = 1e-5


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", data, 0)
    tied = vocab > 0
    vocab = abs(vocab)
    hs = dim // heads
    kv = kv_heads * hs
    shapes = [("emb", (vocab, dim)), ("rms_att", (layers, dim)), ("wq", (layers, dim, dim)),
              ("wk", (layers, kv, dim)), ("wv", (layers, kv, dim)), ("wo", (layers, dim, dim)),
              ("rms_ffn", (layers, dim)), ("w1", (layers, hidden, dim)),
              ("w2", (layers, dim, hidden)), ("w3", (layers, hidden, dim)),
              ("rms_final", (dim,)), ("freq_real", (seq, hs // 2)), ("freq_imag", (seq, hs // 2))]
    if not tied:
        shapes.append(("wcls", (vocab, dim)))
    w, pos = {}, 28
    for name, shape in shapes:
        n = int(np.prod(shape))
        w[name] = np.frombuffer(data, "<f4", n, pos).reshape(shape).astype(np.float64)
        pos += 4 * n
    if pos != len(data):
        sys.exit(f"{path}: {len(data)} bytes, the header's shapes give {pos}")
    if tied:
        w["wcls"] = w["emb"]
    cfg = dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
               vocab=vocab, seq=seq, hs=hs)
    return cfg, w


def rmsnorm(x, g):
    return g * x / np.sqrt(np.mean(x * x) + EPS)


def rope(v, pos, hs):
    out = v.copy()
    for j in range(0, v.shape[0], 2):
        angle = pos * 10000.0 ** (-((j % hs) / hs))
        c, s = np.cos(angle), np.sin(angle)
        out[j] = v[j] * c - v[j + 1] * s
        out[j + 1] = v[j] * s + v[j + 1] * c
    return out


class Model:
    def __init__(self, cfg, w):
        self.c, self.w = cfg, w
        L, S, kv = cfg["layers"], cfg["seq"], cfg["kv_heads"] * cfg["hs"]
        self.k = np.zeros((L, S, kv))
        self.v = np.zeros((L, S, kv))

    def act(self, x):
        """A matrix product's input (tools/quant_study.py rounds it here); itself."""
        return x

    def step(self, token, pos):
        c, w = self.c, self.w
        hs, group = c["hs"], c["heads"] // c["kv_heads"]
        x = w["emb"][token].copy()
        for l in range(c["layers"]):
            xb = self.act(rmsnorm(x, w["rms_att"][l]))
            q = rope(w["wq"][l] @ xb, pos, hs)
            self.k[l, pos] = rope(w["wk"][l] @ xb, pos, hs)
            self.v[l, pos] = w["wv"][l] @ xb
            att = np.empty(c["dim"])
            for h in range(c["heads"]):
                g = h // group
                qh = q[h * hs:(h + 1) * hs]
                keys = self.k[l, :pos + 1, g * hs:(g + 1) * hs]
                s = keys @ qh / np.sqrt(hs)
                p = np.exp(s - s.max())
                p /= p.sum()
                att[h * hs:(h + 1) * hs] = p @ self.v[l, :pos + 1, g * hs:(g + 1) * hs]
            x = x + w["wo"][l] @ self.act(att)
            xb = self.act(rmsnorm(x, w["rms_ffn"][l]))
            a = w["w1"][l] @ xb
            x = x + w["w2"][l] @ self.act(a / (1.0 + np.exp(-a)) * (w["w3"][l] @ xb))
        return w["wcls"] @ self.act(rmsnorm(x, w["rms_final"]))


def greedy(cfg, w, steps):
    m = Model(cfg, w)
    tokens, logits, margin = [BOS], [], np.inf
    for pos in range(steps):
        z = m.step(tokens[-1], pos)
        top = np.sort(z)[-2:]
        margin = min(margin, (top[1] - top[0]) / np.abs(z).max())
        logits.append(z)
        tokens.append(int(np.argmax(z)))
    return tokens, np.array(logits), margin


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("checkpoint")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=256)
    a = ap.parse_args(argv)
    cfg, w = load(a.checkpoint)
    if not 1 <= a.steps <= cfg["seq"]:
        sys.exit(f"--steps {a.steps}: 1 .. seq_len {cfg['seq']}")
    tokens, logits, margin = greedy(cfg, w, a.steps)
    with open(a.out, "wb") as f:
        f.write(struct.pack("<4sII", b"RMR1", a.steps, cfg["vocab"]))
        f.write(np.array(tokens, "<i4").tobytes())
        f.write(logits.astype("<f4").tobytes())
        f.write(struct.pack("<f", margin))
    print(f"llama2c_reference.py: {a.steps} greedy steps from BOS, smallest top-2 margin "
          f"{margin:.3g} of the logit scale")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
