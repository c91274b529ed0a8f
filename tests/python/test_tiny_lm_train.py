#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The committed tiny language model (examples/tiny_lm/tiny_lm.pt, trained by
tools/train_tiny_lm.py): checks that need neither the corpus nor training.

  /usr/bin/python3 tests/python/test_tiny_lm_train.py [--source-dir DIR] [unittest options]

- the stored config matches every tensor's shape, the state dict holds exactly the model's
  parameters (no biases), the vocabulary is the stored size;
- the model's forward equals a plain reference written here from the documented recipe (RMSNorm
  eps 1e-5, adjacent-pair RoPE base 10000, GQA, causal softmax with 1/sqrt(d_head), SwiGLU,
  tied head), so the C++ side can follow the recipe rather than the PyTorch code;
- the greedy continuations equal the ones recorded in examples/tiny_lm/TRAINING.md;
- tools/export_pytorch.py exports layer 0's attention (fp32 and int8), the header states the
  model's shape and RoPE (base, adjacent pairs, all of d_head) and its W_Q array is the
  weights bit for bit.
Exits 77 (ctest: skipped) without torch.
"""
import json
import math
import os
import re
import sys
import unittest

import export_test_setup as setup

ARGS, UNITTEST_ARGS = setup.parser(__doc__).parse_known_args()
ROOT = os.path.abspath(ARGS.source_dir)

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # as tools/train_tiny_lm.py
setup.require_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools"))
import train_tiny_lm as tl  # noqa: E402

WEIGHTS = os.path.join(ROOT, "examples", "tiny_lm", "tiny_lm.pt")
NOTES = os.path.join(ROOT, "examples", "tiny_lm", "TRAINING.md")
torch.set_num_threads(2)
torch.use_deterministic_algorithms(True)
MODEL = tl.load(WEIGHTS)


def recorded_greedy():
    """The JSON list after the marker line in TRAINING.md: [{prompt, n, continuation}, ...]."""
    text = open(NOTES, encoding="utf-8").read()
    m = re.search(r"<!-- tiny_lm_train:greedy -->\s*```json\n(.*?)```", text, re.S)
    assert m, "TRAINING.md has no <!-- tiny_lm_train:greedy --> json block"
    return json.loads(m.group(1))


def reference_logits(model, ids):
    """The documented recipe in float64 with explicit loops over heads (no PyTorch modules)."""
    c = model.config
    sd = {k: v.double() for k, v in model.state_dict().items()}
    H, K, dh, eps = c["n_heads"], c["n_kv_heads"], c["d_head"], c["norm_eps"]
    T = len(ids)

    def rms(x, g):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g

    def rope(x):  # x [T][dh]; pair (2i, 2i+1) turns by p * base^(-2i/dh)
        y = x.clone()
        for p in range(T):
            for i in range(dh // 2):
                a = p * c["rope_base"] ** (-2.0 * i / dh)
                u, v = x[p, 2 * i], x[p, 2 * i + 1]
                y[p, 2 * i] = u * math.cos(a) - v * math.sin(a)
                y[p, 2 * i + 1] = u * math.sin(a) + v * math.cos(a)
        return y

    x = sd["embed.weight"][ids]
    for li in range(c["n_layers"]):
        pre = f"layers.{li}."
        h = rms(x, sd[pre + "attn_norm.weight"])
        q = h @ sd[pre + "attn.q_proj.weight"].t()
        k = h @ sd[pre + "attn.k_proj.weight"].t()
        v = h @ sd[pre + "attn.v_proj.weight"].t()
        heads = []
        for j in range(H):
            g = j // (H // K)
            qj = rope(q[:, j * dh:(j + 1) * dh])
            kg = rope(k[:, g * dh:(g + 1) * dh])
            s = qj @ kg.t() / math.sqrt(dh)
            s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            heads.append(torch.softmax(s, -1) @ v[:, g * dh:(g + 1) * dh])
        x = x + torch.cat(heads, 1) @ sd[pre + "attn.o_proj.weight"].t()
        h = rms(x, sd[pre + "mlp_norm.weight"])
        gate = h @ sd[pre + "mlp.gate_proj.weight"].t()
        up = h @ sd[pre + "mlp.up_proj.weight"].t()
        x = x + (gate * torch.sigmoid(gate) * up) @ sd[pre + "mlp.down_proj.weight"].t()
    head = sd["embed.weight"] if c["tied_head"] else sd["lm_head.weight"]
    return rms(x, sd["norm.weight"]) @ head.t()


class TinyLmWeights(unittest.TestCase):
    def test_config_matches_shapes(self):
        c, sd = MODEL.config, MODEL.state_dict()
        D, L, H, K, dh, F, V = (c["d_model"], c["n_layers"], c["n_heads"], c["n_kv_heads"],
                                c["d_head"], c["d_hidden"], c["vocab_size"])
        self.assertEqual(len(MODEL.vocab), V)
        self.assertEqual(MODEL.vocab[0], tl.UNK)
        self.assertEqual(len(set(MODEL.vocab)), V)
        want = {"embed.weight": (V, D), "norm.weight": (D,)}
        if not c["tied_head"]:
            want["lm_head.weight"] = (V, D)
        for i in range(L):
            p = f"layers.{i}."
            want.update({p + "attn_norm.weight": (D,), p + "mlp_norm.weight": (D,),
                         p + "attn.q_proj.weight": (H * dh, D),
                         p + "attn.k_proj.weight": (K * dh, D),
                         p + "attn.v_proj.weight": (K * dh, D),
                         p + "attn.o_proj.weight": (D, H * dh),
                         p + "mlp.gate_proj.weight": (F, D), p + "mlp.up_proj.weight": (F, D),
                         p + "mlp.down_proj.weight": (D, F)})
        self.assertEqual({k: tuple(v.shape) for k, v in sd.items()}, want)
        self.assertTrue(all(v.dtype == torch.float32 for v in sd.values()))
        self.assertTrue(all(torch.isfinite(v).all() for v in sd.values()))
        self.assertEqual((c["rope_base"], c["rope_pairing"], c["norm_eps"]),
                         (10000.0, "adjacent", 1e-5))
        self.assertEqual(H % K, 0)
        self.assertEqual(tl.count_params(MODEL), MODEL.info["params"])

    def test_footprint_fits_cortex_m4(self):
        fp = tl.footprint(MODEL.config)
        self.assertLessEqual(fp["flash_model"] + 60 * 1024, 512 * 1024)
        self.assertLessEqual(fp["kv_total"], 128 * 1024 // 2)  # leaves half the RAM

    def test_forward_equals_reference_recipe(self):
        prompt = "The artist painted the portrait of a woman with a brush"
        ids = tl.encode(prompt, MODEL.vocab)
        with torch.no_grad():
            got = MODEL(torch.tensor(ids)[None])[0].double()
        ref = reference_logits(MODEL, ids)
        err = float((got - ref).abs().max() / ref.abs().max())
        self.assertLess(err, 1e-5, f"relative max error {err}")

    def test_greedy_matches_training_md(self):
        rec = recorded_greedy()
        self.assertEqual(len(rec), 3)
        self.assertIn("The artist painted the portrait of a woman with a brush",
                      [r["prompt"] for r in rec])
        for r in rec:
            self.assertEqual(MODEL.generate(r["prompt"], r["n"], greedy=True), r["continuation"],
                             r["prompt"])
            self.assertEqual(MODEL.info["greedy"][r["prompt"]][:r["n"]], r["continuation"])

    def test_layer0_attention_exports(self):
        c = MODEL.config
        w = MODEL.layers[0].attn.q_proj.weight.detach().numpy().reshape(-1)
        for quant in ("none", "int8"):
            rc, text, err = tl.export_check(MODEL, 0, quant)
            self.assertEqual(rc, 0, err)
            for name, v in (("D_MODEL", c["d_model"]), ("HEADS", c["n_heads"]),
                            ("KV_HEADS", c["n_kv_heads"]), ("D_HEAD", c["d_head"]),
                            ("BIAS_Q", 0), ("BIAS_O", 0), ("MASK", 0),
                            ("WEIGHT_TYPE", int(quant == "int8"))):
                self.assertRegex(text, rf"#define TINY_LM_L0_{name} {v}\b")
            self.assertIn("Rope::kYes", text)  # the RoPE note: set_rope() on the C++ side
            # ... and the module's own RoPE, which its forward applies (adjacent pairs, the
            # whole head): the header's name_rope() for set_rope().
            self.assertRegex(text, r"#define TINY_LM_L0_ROPE_BASE 10000\.0f\n")
            self.assertIn("#define TINY_LM_L0_ROPE_PAIRING 0 /* microattn::RopePairing::"
                          "kAdjacent */", text)
            self.assertRegex(text, rf"#define TINY_LM_L0_ROPE_DIMS {c['d_head']}\b")
            self.assertIn("static inline microattn::RopeConfig tiny_lm_l0_rope() noexcept",
                          text)
            if quant == "none":
                m = re.search(r"float tiny_lm_l0_wq\[(\d+)\] = \{(.*?)\};", text, re.S)
                self.assertIsNotNone(m)
                vals = np.array([float(s.strip().rstrip("f")) for s in m.group(2).split(",")],
                                dtype=np.float32)
                self.assertEqual(vals.tobytes(), w.astype(np.float32).tobytes())


if __name__ == "__main__":
    prog = unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
