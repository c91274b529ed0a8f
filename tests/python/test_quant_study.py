#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/quant_study.py's formats against their definitions, and its metrics:

  /usr/bin/python3 tests/python/test_quant_study.py [--source-dir DIR] [unittest options]

- symmetric int8/int4 per column and per group (a last group shorter than the others): every
  value on its group's grid (scale = the group's max |w| / levels, ties away from zero), the
  error at most half a step, the group's largest weight exact;
- the per-group offset form: the group's minimum and maximum exact, q in [0, 15];
- the scale search never worse in squared error than the plain scale;
- bf16 as PyTorch's torch.bfloat16 rounds (to nearest even), fp16 as NumPy's float16;
- the metrics: a model against itself 0, 256/256 and KL 0; a known shift of the logits.
Exits 77 without NumPy (the torch comparison skips without PyTorch).
"""
import os
import sys
import unittest

import export_test_setup as setup

ARGS, UNITTEST_ARGS = setup.parser(__doc__).parse_known_args()
try:
    import numpy as np
except ImportError as e:
    print(f"SKIP: {sys.executable} cannot import numpy ({e})")
    sys.exit(setup.SKIP)
sys.path.insert(0, os.path.join(os.path.abspath(ARGS.source_dir), "tools"))
import quant_study as qs  # noqa: E402


class Formats(unittest.TestCase):
    def setUp(self):
        self.w = np.random.default_rng(50).normal(0, 0.1, (6, 72))  # groups 32, 32, 8

    def check_grid(self, deq, levels, group):
        for r in range(self.w.shape[0]):
            for a in range(0, self.w.shape[1], group):
                w, d = self.w[r, a:a + group], deq[r, a:a + group]
                step = np.abs(w).max() / levels
                q = d / step
                self.assertTrue(np.allclose(q, np.round(q), atol=1e-9))
                self.assertLessEqual(np.abs(d - w).max(), step / 2 + 1e-12)
                k = np.abs(w).argmax()
                self.assertAlmostEqual(d[k], w[k], places=12)
                self.assertTrue((np.abs(np.round(q)) <= levels).all())

    def test_symmetric(self):
        self.check_grid(qs.quant_sym(self.w, 127, 32), 127, 32)
        self.check_grid(qs.quant_sym(self.w, 7, 32), 7, 32)
        self.check_grid(qs.quant_sym(self.w, 127, 0), 127, 72)
        # ties away from zero: 0.5 and -1.5 steps
        w = np.array([[1.0, 0.5 / 127, -1.5 / 127]])
        self.assertEqual(list(qs.quant_sym(w, 127, 0)[0] * 127), [127.0, 1.0, -2.0])

    def test_offset(self):
        d = qs.quant_asym(self.w, 15, 32)
        for a in (0, 32, 64):
            w, g = self.w[:, a:a + 32], d[:, a:a + 32]
            self.assertTrue(np.allclose(g.min(axis=1), w.min(axis=1)))
            self.assertTrue(np.allclose(g.max(axis=1), w.max(axis=1)))
            step = (w.max(axis=1) - w.min(axis=1)) / 15
            self.assertLessEqual((np.abs(g - w) / step[:, None]).max(), 0.5 + 1e-9)

    def test_search_not_worse(self):
        for levels in (7, 127):
            plain = ((qs.quant_sym(self.w, levels, 32) - self.w) ** 2).sum()
            searched = ((qs.quant_sym_mse(self.w, levels, 32) - self.w) ** 2).sum()
            self.assertLessEqual(searched, plain)

    def test_half_types(self):
        self.assertTrue((qs.to_f16(self.w) == self.w.astype(np.float16)).all())
        try:
            import torch
        except ImportError:
            self.skipTest("no PyTorch")
        want = torch.tensor(self.w, dtype=torch.float32).to(torch.bfloat16).double().numpy()
        self.assertTrue((qs.to_bf16(self.w) == want).all())
        ties = np.array([1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8])  # halfway: to even
        self.assertEqual(list(qs.to_bf16(ties)), [1.0, 1.0 + 2.0 ** -6])

    def test_metrics(self):
        z = np.random.default_rng(1).normal(0, 3, (20, 11))
        self.assertEqual(qs.compare(z, z), (0.0, 20, 0.0))
        shifted = z + 1.0  # the same softmax, every logit moved by 1
        err, top, kl = qs.compare(z, shifted)
        self.assertAlmostEqual(err, 1.0 / np.abs(z).max())
        self.assertEqual(top, 20)
        self.assertAlmostEqual(kl, 0.0, places=12)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS)
