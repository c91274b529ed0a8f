#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/export_pytorch.py --kind decoder --llama2c (tools/llama2c.py): llama2.c checkpoints
into the model file, with NumPy only.

  /usr/bin/python3 tests/python/test_llama2c.py [--source-dir DIR] [unittest options]

- checkpoints written here from llama2.c's layout (run.c's version 0: the 7-int header, the
  arrays stacked over layers, the old RoPE tables, wcls when vocab_size < 0), tied and untied,
  with random values: the model file's fields are the header's and run.c's fixed settings
  (RMSNorm epsilon 1e-5, RoPE base 10000 on adjacent pairs, SwiGLU, trained context seq_len),
  and every tensor of its directory, read at its offset, is bit for bit the checkpoint's array
  for that role and layer (w1 the gate, w3 up, w2 down; the RoPE tables not stored);
- the published stories260K (../shared/models/stories260K, when present): its fields;
- refusals, exit status 2 and one line naming the reason: the 'ak42' magic of llama2.c's
  export versions 1 and 2, a file shorter than its header or than its shapes, extra bytes, a
  zero or negative dimension, dim not a multiple of n_heads, n_heads not of n_kv_heads, an odd
  head size, a missing file, and --reference or --vocab-header with --llama2c;
- --tokenizer FILE: the tokenizer file inside the model file (its byte range field); a
  tokenizer.bin or tokenizer.model given instead converted (../shared's Llama 2 tokenizer);
- --context N: the model file's field 17 (the context exported for), t_max still the trained
  context; N outside 1 .. t_max and version 1 refused.
Exits 77 (ctest: skipped) without NumPy.
"""
import os
import struct
import sys
import tempfile
import unittest

import export_test_setup as setup

ARGS, UNITTEST_ARGS = setup.parser(__doc__).parse_known_args()
ROOT = os.path.abspath(ARGS.source_dir)
try:
    import numpy as np
except ImportError as e:
    print(f"SKIP: {sys.executable} cannot import numpy ({e}); apt-get install python3-numpy")
    sys.exit(setup.SKIP)

sys.path.insert(0, os.path.join(ROOT, "tools"))
import export_pytorch as ex  # noqa: E402

SHARED = os.path.join(ROOT, "..", "shared", "models", "stories260K", "stories260K.bin")
# docs/model-format.md: field keys and tensor roles of version 2.
FIELDS = {1: "architecture", 2: "vocab", 3: "d_model", 4: "layers", 5: "heads", 6: "kv_heads",
          7: "d_head", 8: "d_hidden", 9: "t_max", 10: "tied_head", 11: "activation",
          12: "rope_pairing", 13: "rope_base", 14: "norm_eps", 17: "context"}
ROLES = {1: "embed", 2: "attn_norm", 3: "q_proj", 4: "k_proj", 5: "v_proj", 6: "o_proj",
         7: "mlp_norm", 8: "gate_proj", 9: "up_proj", 10: "down_proj", 11: "norm", 12: "lm_head"}
FLOAT_FIELDS = (13, 14)


LLAMA_TOK = os.path.join(ROOT, "..", "shared", "models", "llama2-tokenizer")


def checkpoint(dim=16, hidden=40, layers=2, heads=4, kv_heads=2, vocab=32, seq=24, tied=True,
               seed=0):
    """(bytes, {llama2.c array name: float32 array}) of a version-0 checkpoint."""
    rng = np.random.default_rng(seed)
    hs, kv = dim // heads, kv_heads * dim // heads
    shapes = [("token_embedding_table", (vocab, dim)), ("rms_att_weight", (layers, dim)),
              ("wq", (layers, dim, dim)), ("wk", (layers, kv, dim)), ("wv", (layers, kv, dim)),
              ("wo", (layers, dim, dim)), ("rms_ffn_weight", (layers, dim)),
              ("w1", (layers, hidden, dim)), ("w2", (layers, dim, hidden)),
              ("w3", (layers, hidden, dim)), ("rms_final_weight", (dim,)),
              ("freq_cis_real", (seq, hs // 2)), ("freq_cis_imag", (seq, hs // 2))]
    if not tied:
        shapes.append(("wcls", (vocab, dim)))
    arrays = {k: rng.standard_normal(s).astype("<f4") for k, s in shapes}
    head = struct.pack("<7i", dim, hidden, layers, heads, kv_heads, vocab if tied else -vocab,
                       seq)
    return head + b"".join(arrays[k].tobytes() for k, _ in shapes), arrays


def read_model_file(data):
    """(fields {name: value}, tensors {(role, layer or None): float32 array}) of a version-2
    file, read by docs/model-format.md's rules (64-byte header, 16-byte fields, 32-byte
    directory entries)."""
    magic, version, hb, total, nf, fa, nt, ta, *rest = struct.unpack("<16I", data[:64])
    assert (magic, version, hb, total, rest) == (0x4D4C414D, 2, 64, len(data), [0] * 8)
    fields, tensors = {}, {}
    for i in range(nf):
        key, typ, v, b = struct.unpack_from("<4I", data, fa + 16 * i)
        if key == 0x80000001:  # the tokenizer: a byte range
            assert typ == 2 and v % 16 == 0 and v + b <= len(data)
            fields["tokenizer"] = data[v:v + b]
            continue
        assert b == 0 and typ == (1 if key in FLOAT_FIELDS else 0)
        fields[FIELDS[key]] = struct.unpack("<f", struct.pack("<I", v))[0] if typ else v
    for i in range(nt):
        tid, code, rows, cols, d, db, sc, sb = struct.unpack_from("<8I", data, ta + 32 * i)
        assert (code, db, sc, sb) == (0, 4 * rows * cols, 0, 0) and d % 16 == 0
        layer = None if tid >> 16 == 0xFFFF else tid >> 16
        a = np.frombuffer(data[d:d + db], "<f4").reshape(rows, cols)
        tensors[(ROLES[tid & 0xFFFF], layer)] = a if cols > 1 else a[:, 0]
    return fields, tensors


def export(*argv):
    return setup.run_exporter(ex, *argv)


class Llama2c(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def convert(self, data):
        """Writes data as a checkpoint and converts it: (status, stderr, model file bytes)."""
        with open(self.path("in.bin"), "wb") as f:
            f.write(data)
        out = self.path("out.bin")
        rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--blob", out)
        if rc != 0:
            return rc, err, None
        with open(out, "rb") as f:
            return rc, err, f.read()

    def check_model(self, tied):
        data, a = checkpoint(tied=tied, seed=1 + tied)
        rc, err, blob = self.convert(data)
        self.assertEqual(rc, 0, err)
        fields, t = read_model_file(blob)
        self.assertEqual(fields, dict(architecture=1, vocab=32, d_model=16, layers=2, heads=4,
                                      kv_heads=2, d_head=4, d_hidden=40, t_max=24,
                                      tied_head=int(tied), activation=0, rope_pairing=1,
                                      rope_base=10000.0, norm_eps=np.float32(1e-5)))
        want = {("embed", None): a["token_embedding_table"], ("norm", None): a["rms_final_weight"]}
        if not tied:
            want[("lm_head", None)] = a["wcls"]
        for i in range(2):
            for role, name in (("attn_norm", "rms_att_weight"), ("q_proj", "wq"),
                               ("k_proj", "wk"), ("v_proj", "wv"), ("o_proj", "wo"),
                               ("mlp_norm", "rms_ffn_weight"), ("gate_proj", "w1"),
                               ("up_proj", "w3"), ("down_proj", "w2")):
                want[(role, i)] = a[name][i]
        self.assertEqual(sorted(t, key=str), sorted(want, key=str))
        for k, v in want.items():
            self.assertEqual(t[k].tobytes(), v.tobytes(), k)

    def test_tied(self):
        self.check_model(tied=True)

    def test_untied(self):
        self.check_model(tied=False)

    @unittest.skipUnless(os.path.exists(SHARED), f"{SHARED} not found")
    def test_stories260k_fields(self):
        with open(SHARED, "rb") as f:
            rc, err, blob = self.convert(f.read())
        self.assertEqual(rc, 0, err)
        fields, t = read_model_file(blob)
        self.assertEqual((fields["vocab"], fields["d_model"], fields["layers"], fields["heads"],
                          fields["kv_heads"], fields["d_hidden"], fields["t_max"],
                          fields["tied_head"]), (512, 64, 5, 8, 4, 172, 512, 1))
        self.assertEqual(len(t), 2 + 5 * 9)
        self.assertEqual(len(blob), 1041920)

    def refused(self, data, *needles):
        rc, err, _ = self.convert(data)
        self.assertEqual(rc, 2, err)
        lines = err.strip().splitlines()
        self.assertEqual(len(lines), 1, err)
        for n in needles:
            self.assertIn(n, lines[0])

    def test_refusals(self):
        good, _ = checkpoint()
        head = list(struct.unpack_from("<7i", good))

        def with_header(**kw):
            h = head[:]
            for i, k in enumerate(("dim", "hidden", "layers", "heads", "kv", "vocab", "seq")):
                h[i] = kw.get(k, h[i])
            return struct.pack("<7i", *h) + good[28:]

        # export.py writes the magic as struct.pack("I", 0x616b3432): bytes "24ka" on disk.
        self.refused(struct.pack("<Ii", 0x616B3432, 2) + good[8:], "'ak42'", "version 2")
        self.refused(good[:20], "shorter than llama2.c's 28-byte header")
        self.refused(good[:-4], "header's shapes", "give")
        self.refused(good + b"\0" * 4, "header's shapes")
        self.refused(with_header(layers=0), "n_layers = 0")
        self.refused(with_header(seq=-3), "seq_len = -3")
        self.refused(with_header(vocab=0), "vocab_size 0")
        self.refused(with_header(heads=3), "n_heads 3")
        self.refused(with_header(kv=3), "n_kv_heads 3")
        self.refused(with_header(dim=8, heads=8, kv=8), "even head size")
        # The sign of vocab_size says whether wcls follows: a tied file read as untied is short.
        self.refused(with_header(vocab=-32), "untied classifier")

    def test_context(self):
        """--context N: field 17 (the T_max exported for), t_max stays the trained 24."""
        data, _ = checkpoint()
        with open(self.path("in.bin"), "wb") as f:
            f.write(data)
        out = self.path("c.bin")
        rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--blob", out,
                         "--context", "12")
        self.assertEqual(rc, 0, err)
        with open(out, "rb") as f:
            fields, _ = read_model_file(f.read())
        self.assertEqual((fields["t_max"], fields["context"]), (24, 12))
        for argv, needle in ((["--blob", out, "--context", "25"], "--context 25: 1 .. the "
                              "trained context 24"),
                             (["--blob", out, "--context", "0"], "--context 0"),
                             (["--blob", out, "--blob-version", "1", "--context", "8"],
                              "--context: with --blob of version 2")):
            rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), *argv)
            self.assertEqual(rc, 2, err)
            self.assertIn(needle, err)

    def test_tokenizer_inside(self):
        """--tokenizer FILE: tools/tokenizer.py's file stored whole as the 0x80000001 range;
        one of another vocabulary size, or not a tokenizer file, refused."""
        import tokenizer as tk
        pieces = [(b"<unk>", 0.0, tk.UNKNOWN), (b"<s>", 0.0, tk.CONTROL),
                  (b"</s>", 0.0, tk.CONTROL)]
        pieces += [(f"p{i}".encode(), -float(i), tk.NORMAL) for i in range(29)]
        tok = tk.blob(dict(name="t", pieces=pieces, unk=0, bos=1, eos=2,
                           flags=tk.FLAG_DUMMY_PREFIX | tk.FLAG_ESCAPE_WS))
        data, _ = checkpoint()  # vocab 32
        for name, raw in (("in.bin", data), ("t.mat", tok), ("short.mat", tok[:-16]),
                          ("big.mat", tk.blob(dict(name="t", pieces=pieces + [(b"x", 0.0, 1)],
                                                   flags=0, unk=0, bos=1, eos=2)))):
            with open(self.path(name), "wb") as f:
                f.write(raw)
        out = self.path("t.bin")
        rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--blob", out,
                         "--tokenizer", self.path("t.mat"), "--context", "8")
        self.assertEqual(rc, 0, err)
        with open(out, "rb") as f:
            fields, _ = read_model_file(f.read())
        self.assertEqual(fields["tokenizer"], tok)
        self.assertEqual(fields["context"], 8)
        for name, needle in (("short.mat", "not a tokenizer file"),
                             ("big.mat", "33 pieces, the model's vocabulary is 32")):
            rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--blob",
                             out, "--tokenizer", self.path(name))
            self.assertEqual(rc, 2, err)
            self.assertIn(needle, err)

    @unittest.skipUnless(os.path.isdir(LLAMA_TOK), f"{LLAMA_TOK} not found")
    def test_tokenizer_from_its_source(self):
        """--tokenizer with llama2.c's tokenizer.bin and SentencePiece's tokenizer.model
        (../shared's Llama 2 tokenizer) converts them: the same bytes as tools/tokenizer.py's
        file; a file of no tokenizer format refused, and tools/tokenizer.py's own refusals
        reported."""
        import tokenizer as tk
        data, _ = checkpoint(vocab=32000)
        with open(self.path("in.bin"), "wb") as f:
            f.write(data)
        want = tk.blob(tk.read_sentencepiece(os.path.join(LLAMA_TOK, "tokenizer.model")))
        out = self.path("t.bin")
        for name in ("tokenizer.bin", "tokenizer.model"):
            rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--blob", out,
                             "--tokenizer", os.path.join(LLAMA_TOK, name))
            self.assertEqual(rc, 0, err)
            with open(out, "rb") as f:
                fields, _ = read_model_file(f.read())
            self.assertEqual(fields["tokenizer"], want, name)
        with open(self.path("bad.txt"), "wb") as f:
            f.write(b"not a tokenizer")
        with open(self.path("bad.bin"), "wb") as f:
            f.write(b"\x08\x00\x00\x00\x00")
        for name, needle in (("bad.txt", "not a tokenizer file of tools/tokenizer.py, a "
                                         "tokenizer.json"),
                             ("bad.bin", "truncated at byte 4")):
            rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--blob",
                             out, "--tokenizer", self.path(name))
            self.assertEqual(rc, 2, err)
            self.assertIn(needle, err)

    def export_quant(self, quant):
        """in.bin exported with --quant quant; the model file's bytes."""
        out = self.path(quant + ".bin")
        rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--quant", quant,
                         "--blob", out)
        self.assertEqual(rc, 0, err)
        with open(out, "rb") as f:
            return f.read()

    def matrix_records(self, blob):
        """The directory records (id, code, rows, cols, data, bytes, scales, bytes) of a version-2
        file's matrices; its norms (attn_norm, mlp_norm, norm) checked to be fp32 on the way."""
        nt, ta = struct.unpack_from("<2I", blob, 24)
        for i in range(nt):
            r = struct.unpack_from("<8I", blob, ta + 32 * i)
            if r[0] & 0xFFFF in (2, 7, 11):
                self.assertEqual((r[1], r[5]), (0, 4 * r[2] * r[3]))
                continue
            yield r

    def test_half_formats(self):
        """--quant fp16 / bf16: every matrix (embedding included) 16-bit with its format code,
        rounded to nearest even (fp16: NumPy's cast; bf16: the nearer of the two neighbours,
        ties to the even one, decided here in float64), the norms fp32; refused by name for
        version 1 files and for headers."""
        data, a = checkpoint(seed=5)
        a["token_embedding_table"][0, :3] = [1.0 + 2.0 ** -8, -(1.0 + 3 * 2.0 ** -8), 7e-40]
        data = data[:28] + a["token_embedding_table"].tobytes() + data[28 + 4 * 32 * 16:]
        with open(self.path("in.bin"), "wb") as f:
            f.write(data)
        for quant, code in (("fp16", 0x1002), ("bf16", 0x1003)):
            blob = self.export_quant(quant)
            seen = 0
            for tid, c, rows, cols, d, db, sc, sb in self.matrix_records(blob):
                self.assertEqual((c, db, sc, sb), (code, 2 * rows * cols, 0, 0))
                h = np.frombuffer(blob[d:d + db], "<u2")
                if tid == 1 | 0xFFFF << 16:
                    w = a["token_embedding_table"].reshape(-1)
                    if quant == "fp16":
                        want = w.astype("<f2").view("<u2")
                    else:
                        u = w.view("<u4").astype(np.int64)
                        lo = (u >> 16).astype(np.int64)
                        f_lo = ((lo << 16) & 0xFFFFFFFF).astype("<u4").view("<f4")
                        f_hi = (((lo + 1) << 16) & 0xFFFFFFFF).astype("<u4").view("<f4")
                        d_lo = np.abs(w.astype(np.float64) - f_lo.astype(np.float64))
                        d_hi = np.abs(f_hi.astype(np.float64) - w.astype(np.float64))
                        up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo % 2 == 1))
                        want = np.where(up, lo + 1, lo).astype("<u2")
                    self.assertEqual(h.tobytes(), want.tobytes(), quant)
                seen += 1
            self.assertEqual(seen, 1 + 2 * 7, quant)
        rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--quant", "bf16",
                         "--blob", self.path("v1.bin"), "--blob-version", "1")
        self.assertEqual(rc, 2, err)
        self.assertIn("version 1 model files are fp32 or int8", err)
        self.assertFalse(os.path.exists(self.path("v1.bin")))
        rc, err = export("--kind", "attention", "--quant", "fp16", "--module", self.path("in.bin"))
        self.assertEqual(rc, 2, err)
        self.assertIn("--quant fp16: model files only", err)

    def test_group_int8_formats(self):
        """--quant int8-g32 / g64 / g128: every matrix (embedding included) int8 with a scale
        per output row and group of inputs ([rows][groups] after the data; the code names the
        group), rebuilt here from the rule alone (max |w| / 127 in float32, w / scale rounded
        half away from zero in float32, clamped to 127), the norms fp32."""
        data, a = checkpoint(dim=80, seed=6)  # rows of 80: 3 groups of 32 (the last partial)
        with open(self.path("in.bin"), "wb") as f:
            f.write(data)
        for quant, group, code in (("int8-g32", 32, 0x5020801), ("int8-g64", 64, 0x6020801),
                                   ("int8-g128", 128, 0x7020801)):
            blob = self.export_quant(quant)
            seen = 0
            for tid, c, rows, cols, d, db, sc, sb in self.matrix_records(blob):
                groups = -(-cols // group)
                self.assertEqual((c, db, sb), (code, rows * cols, 4 * rows * groups), quant)
                q = np.frombuffer(blob[d:d + db], np.int8).reshape(rows, cols)
                s = np.frombuffer(blob[sc:sc + sb], "<f4").reshape(rows, groups)
                if tid == 1 | 0xFFFF << 16:
                    w = a["token_embedding_table"].reshape(rows, cols)
                    for r in range(rows):
                        for g in range(groups):
                            part = w[r, g * group:(g + 1) * group]
                            scale = np.float32(np.abs(part).max()) / np.float32(127)
                            self.assertEqual(s[r, g], scale, (quant, r, g))
                            x = part / scale
                            f = np.floor(np.abs(x))  # |x| - f is exact: no rounding up
                            want = np.minimum(np.where(np.abs(x) - f >= 0.5, f + 1, f), 127)
                            want = np.where(x < 0, -want, want).astype(np.int8)
                            got = q[r, g * group:(g + 1) * group]
                            self.assertEqual(got.tobytes(), want.tobytes(), (quant, r, g))
                            err = np.abs(part.astype(np.float64) - np.float64(scale) * got)
                            self.assertLessEqual(err.max(), scale * (0.5 + 2 ** -17))
                seen += 1
            self.assertEqual(seen, 1 + 2 * 7, quant)
        rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--quant",
                         "int8-g32", "--blob", self.path("v1.bin"), "--blob-version", "1")
        self.assertEqual(rc, 2, err)
        self.assertIn("the group-wise int8 formats need --blob-version 2", err)
        rc, err = export("--kind", "attention", "--quant", "int8-g32", "--module",
                         self.path("in.bin"))
        self.assertEqual(rc, 2, err)
        self.assertIn("--quant int8-g32: model files only", err)
        rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), "--quant",
                         "int8-g32", "--compute", "int8", "--blob", self.path("c.bin"))
        self.assertEqual(rc, 2, err)
        self.assertIn("--compute: not with --kind decoder", err)  # a decoder has no --compute
        self.assertFalse(os.path.exists(self.path("c.bin")))

    def test_refused_options(self):
        data, _ = checkpoint()
        with open(self.path("in.bin"), "wb") as f:
            f.write(data)
        for flag in ("--reference", "--vocab-header"):
            rc, err = export("--kind", "decoder", "--llama2c", self.path("in.bin"), flag,
                             self.path("x.h"))
            self.assertEqual(rc, 2, err)
            self.assertIn("--llama2c: --blob only", err)
        rc, err = export("--kind", "decoder", "--llama2c", self.path("missing.bin"), "--blob",
                         self.path("o.bin"))
        self.assertEqual(rc, 2, err)
        self.assertIn("missing.bin", err)
        rc, err = export("--llama2c", self.path("in.bin"), "--blob", self.path("o.bin"))
        self.assertEqual(rc, 2, err)
        self.assertIn("--llama2c", err)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS)
