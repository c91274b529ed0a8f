#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/export_pytorch.py --kind decoder on the committed tiny language model
(examples/tiny_lm/tiny_lm.pt): the model blob, the PyTorch reference and the vocabulary header.

  /usr/bin/python3 tests/python/test_tiny_lm_export.py [--source-dir DIR] [unittest options]

- a fresh export (fp32 blob, reference and vocabulary from --tiny-lm; int8 blob from --module,
  which detects the checkpoint) is byte for byte each committed file
  (examples/tiny_lm/tiny_lm_f32.bin, tiny_lm_q8.bin, tiny_lm_vocab.h,
  tests/data/tiny_lm_reference.h);
- the blob's header words are the config's, and the tensors, read at the offsets that
  docs/model-format.md gives (computed here from its rules, not by the exporter's code), are the
  state dict: fp32 bit for bit; int8 with scales max |row| / 127 in float32 and every weight
  within scale * (1/2 + 2^-17) of scale * q (microattn::quantize_int8's bound), the tied head
  stored once;
- the reference's logits equal a plain float64 computation of the model written here (numpy,
  no torch modules) within 1e-4 absolute (the logits reach 17; PyTorch's fp32 forward differs
  from float64 by less than 1e-5 here, so the bound leaves room for another BLAS's summation
  order without hiding a wrong formula, which moves logits by far more), its tokens are the prompt's encoding and then the greedy argmax of
  that float64 computation;
- the vocabulary header's strings are the vocab's characters;
- a module named like Hugging Face's LlamaForCausalLM (tests/python/hf_llama_like.py: the
  same names, config fields and forward, as transformers is not installed), tied and untied:
  its blob's words (half-split RoPE) and tensors, and the float64 model of the blob equals its
  forward;
- refusals: a module with a bias and a module whose tensor has a shape the config does not give
  exit with status 2 and a one-line message.
Exits 77 (ctest: skipped) without torch.
"""
import os
import re
import struct
import subprocess
import sys
import tempfile
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

EXPORTER = os.path.join(ROOT, "tools", "export_pytorch.py")
WEIGHTS = os.path.join(ROOT, "examples", "tiny_lm", "tiny_lm.pt")
COMMITTED = {"f32": os.path.join(ROOT, "examples", "tiny_lm", "tiny_lm_f32.bin"),
             "q8": os.path.join(ROOT, "examples", "tiny_lm", "tiny_lm_q8.bin"),
             "vocab": os.path.join(ROOT, "examples", "tiny_lm", "tiny_lm_vocab.h"),
             "ref": os.path.join(ROOT, "tests", "data", "tiny_lm_reference.h")}
PROMPT = "The artist painted the portrait of a woman with a brush"
LOGIT_TOL = 1e-4  # absolute, on logits of order 10
MODEL = tl.load(WEIGHTS)
SD = {k: v.detach().numpy() for k, v in MODEL.state_dict().items()}


def export(*args):
    """Runs the exporter (this folder on PYTHONPATH: hf_llama_like's classes); (exit status,
    stderr)."""
    env = dict(os.environ, PYTHONPATH=setup.HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, EXPORTER, "--kind", "decoder", *args],
                       capture_output=True, text=True, timeout=120, env=env)
    return r.returncode, r.stderr


def read(path):
    with open(path, "rb") as f:
        return f.read()


def blob_order(c):
    """[(key, is_matrix)] in docs/model-format.md's order."""
    out = [("embed.weight", True)]
    for i in range(c["n_layers"]):
        p = f"layers.{i}."
        out += [(p + "attn_norm.weight", False)] + [
            (p + f"attn.{r}_proj.weight", True) for r in "qkvo"] + [
            (p + "mlp_norm.weight", False)] + [
            (p + f"mlp.{r}_proj.weight", True) for r in ("gate", "up", "down")]
    out.append(("norm.weight", False))
    if not c["tied_head"]:
        out.append(("lm_head.weight", True))
    return out


def read_blob(data, int8, c=MODEL.config, sd=SD):
    """key -> float32 array (fp32 blob) or (int8 [out][in], float32 scales [out]), read at the
    documented offsets for config c, shapes from the state dict sd (the blob's names); also
    returns the end and the gaps (padding) between tensors."""
    pos, out, gaps = 64, {}, []

    def take(n, dtype, shape):
        nonlocal pos
        start = -(-pos // 16) * 16
        gaps.append(data[pos:start])
        pos = start + n * np.dtype(dtype).itemsize
        return np.frombuffer(data[start:pos], dtype=dtype).reshape(shape)

    for key, is_matrix in blob_order(c):
        shape = sd[key].shape
        if int8 and is_matrix:
            out[key] = (take(sd[key].size, np.int8, shape), take(shape[0], "<f4", (shape[0],)))
        else:
            out[key] = take(sd[key].size, "<f4", shape)
    end = -(-pos // 16) * 16
    gaps.append(data[pos:end])
    return out, end, gaps


def reference_logits64(ids, c=MODEL.config, sd=SD):
    """The model of config c (train_tiny_lm's keys) and state dict sd (its names) in float64
    with numpy (RMSNorm, RoPE by pairing, GQA causal softmax, SwiGLU, tied or separate head)."""
    w = {k: v.astype(np.float64) for k, v in sd.items()}
    H, K, dh, T = c["n_heads"], c["n_kv_heads"], c["d_head"], len(ids)
    ang = np.arange(T)[:, None] * c["rope_base"] ** (-2.0 * np.arange(dh // 2) / dh)
    cos, sin = np.cos(ang), np.sin(ang)

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + c["norm_eps"]) * g

    def rope(x):  # x [T][dh]
        a, b = (x[:, 0::2], x[:, 1::2]) if c["rope_pairing"] == "adjacent" else (
            x[:, :dh // 2], x[:, dh // 2:])
        y = np.empty_like(x)
        ra, rb = a * cos - b * sin, a * sin + b * cos
        if c["rope_pairing"] == "adjacent":
            y[:, 0::2], y[:, 1::2] = ra, rb
        else:
            y[:, :dh // 2], y[:, dh // 2:] = ra, rb
        return y

    future = np.triu(np.ones((T, T), bool), 1)
    x = w["embed.weight"][ids]
    for li in range(c["n_layers"]):
        p = f"layers.{li}."
        h = rms(x, w[p + "attn_norm.weight"])
        q, k, v = (h @ w[p + f"attn.{r}_proj.weight"].T for r in "qkv")
        heads = []
        for j in range(H):
            g = j // (H // K)
            s = rope(q[:, j * dh:(j + 1) * dh]) @ rope(k[:, g * dh:(g + 1) * dh]).T / np.sqrt(dh)
            s = np.where(future, -np.inf, s)
            e = np.exp(s - s.max(-1, keepdims=True))
            heads.append(e / e.sum(-1, keepdims=True) @ v[:, g * dh:(g + 1) * dh])
        x = x + np.concatenate(heads, 1) @ w[p + "attn.o_proj.weight"].T
        h = rms(x, w[p + "mlp_norm.weight"])
        gate, up = h @ w[p + "mlp.gate_proj.weight"].T, h @ w[p + "mlp.up_proj.weight"].T
        x = x + (gate / (1.0 + np.exp(-gate)) * up) @ w[p + "mlp.down_proj.weight"].T
    head = w["embed.weight"] if c["tied_head"] else w["lm_head.weight"]
    return rms(x, w["norm.weight"]) @ head.T


def c_unescape(lit):
    """The bytes of a C string literal's body as the exporter writes them."""
    named = {"n": 10, "t": 9, "a": 7, "b": 8, "r": 13, '"': 34, "\\": 92, "?": 63}
    out, i = bytearray(), 0
    while i < len(lit):
        if lit[i] != "\\":
            out.append(ord(lit[i]))
            i += 1
        elif lit[i + 1] in named:
            out.append(named[lit[i + 1]])
            i += 2
        else:
            out.append(int(lit[i + 1:i + 4], 8))
            i += 4
    return bytes(out)


def parse_reference(text):
    """(macros {name: value text}, tokens list, logits float32 [P][V])."""
    macros = dict(re.findall(r"^#define TINY_LM_REF_(\w+) (.*)$", text, re.M))
    tok = re.search(r"int32_t tiny_lm_ref_tokens\[\w+\] = \{(.*?)\};", text, re.S).group(1)
    body = re.search(r"float tiny_lm_ref_logits\[\w+\]\[\w+\] = \{(.*?)\n\};", text, re.S)
    vals = re.findall(r"([-+]?[0-9.]+(?:e[-+]?[0-9]+)?)f", body.group(1))
    P, V = int(macros["POSITIONS"]), int(macros["VOCAB"])
    logits = np.array([float(s) for s in vals], dtype=np.float32).reshape(P, V)
    return macros, [int(s) for s in tok.replace(",", " ").split()], logits


class TinyLmExport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.fresh = {k: os.path.join(d, os.path.basename(p)) for k, p in COMMITTED.items()}
        rc, err = export("--tiny-lm", WEIGHTS, "--name", "tiny_lm", "--blob", cls.fresh["f32"],
                         "--reference", cls.fresh["ref"], "--vocab-header", cls.fresh["vocab"])
        assert rc == 0, err
        rc, err = export("--module", WEIGHTS, "--quant", "int8", "--blob", cls.fresh["q8"])
        assert rc == 0, err
        cls.data = {k: read(p) for k, p in COMMITTED.items()}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_fresh_export_is_committed_files(self):
        for k, p in COMMITTED.items():
            self.assertTrue(read(self.fresh[k]) == self.data[k], f"{p} differs from a fresh "
                            "export")

    def test_blob_header(self):
        c = MODEL.config
        flags = int(c["tied_head"]) | (int(c["rope_pairing"] == "adjacent") << 1)
        for key, wtype in (("f32", 0), ("q8", 1)):
            data = self.data[key]
            words = struct.unpack("<16I", data[:64])
            f32 = [struct.unpack("<f", struct.pack("<I", words[i]))[0] for i in (13, 14)]
            self.assertEqual(words[:13], (0x4D4C414D, 1, 64, wtype, len(MODEL.vocab),
                                          c["d_model"], c["n_layers"], c["n_heads"],
                                          c["n_kv_heads"], c["d_head"], c["d_hidden"],
                                          c["t_max"], flags))
            self.assertEqual(data[:4], b"MALM")
            self.assertEqual(f32, [np.float32(c["rope_base"]), np.float32(c["norm_eps"])])
            self.assertEqual(words[15], len(data))

    def test_fp32_blob_tensors_are_state_dict(self):
        got, end, gaps = read_blob(self.data["f32"], int8=False)
        self.assertEqual(end, len(self.data["f32"]))
        self.assertTrue(all(set(g) <= {0} for g in gaps))
        self.assertEqual(set(got), set(SD))  # tied: no lm_head
        for k, a in got.items():
            self.assertEqual(a.tobytes(), SD[k].astype("<f4").tobytes(), k)

    def test_int8_blob_tensors_dequantise_to_state_dict(self):
        got, end, gaps = read_blob(self.data["q8"], int8=True)
        self.assertEqual(end, len(self.data["q8"]))
        self.assertTrue(all(set(g) <= {0} for g in gaps))
        for k, v in got.items():
            w = SD[k]
            if w.ndim == 1:  # norms stay fp32
                self.assertEqual(v.tobytes(), w.astype("<f4").tobytes(), k)
                continue
            q, s = v
            amax = np.abs(w).max(axis=1).astype(np.float32)
            self.assertEqual(s.tobytes(), (amax / np.float32(127)).astype("<f4").tobytes(), k)
            self.assertLessEqual(int(np.abs(q.astype(np.int32)).max()), 127)
            err = np.abs(w.astype(np.float64) - s.astype(np.float64)[:, None] * q)
            bound = s.astype(np.float64)[:, None] * (0.5 + 2.0 ** -17)
            self.assertTrue((err <= bound).all(), f"{k}: max excess {(err - bound).max()}")

    def test_reference_logits_equal_float64_model(self):
        macros, tokens, logits = parse_reference(self.data["ref"].decode("ascii"))
        n_prompt, n = int(macros["PROMPT_TOKENS"]), int(macros["CONTINUATION"])
        self.assertEqual(c_unescape(macros["PROMPT"][1:-1]), PROMPT.encode())
        self.assertEqual((n_prompt, n, len(tokens)), (len(PROMPT), 64, len(PROMPT) + 64))
        self.assertEqual(tokens[:n_prompt], tl.encode(PROMPT, MODEL.vocab))
        ref = reference_logits64(tokens)
        err = float(np.abs(logits - ref).max())
        self.assertLess(err, LOGIT_TOL, f"max |logit - float64| {err}")
        for p in range(n_prompt - 1, len(tokens) - 1):  # greedy, also in float64
            self.assertEqual(int(np.argmax(logits[p])), tokens[p + 1], p)
            self.assertEqual(int(np.argmax(ref[p])), tokens[p + 1], p)
        self.assertEqual(tl.decode(tokens[n_prompt:], MODEL.vocab),
                         MODEL.generate(PROMPT, 64, greedy=True))

    def test_vocab_header_is_vocab(self):
        text = self.data["vocab"].decode("ascii")
        self.assertRegex(text, rf"#define TINY_LM_VOCAB_SIZE {len(MODEL.vocab)}\n")
        body = re.search(r"tiny_lm_vocab\[\w+\] = \{(.*?)\n\};", text, re.S).group(1)
        strings = re.findall(r'^  "((?:[^"\\]|\\.)*)",', body, re.M)
        self.assertEqual([c_unescape(s).decode("utf-8") for s in strings], list(MODEL.vocab))

    def test_hugging_face_llama_names(self):
        """A module named like LlamaForCausalLM (tests/python/hf_llama_like.py), tied and not:
        header words (half-split RoPE: flag bit 1 clear), tensors under the blob's names, and
        the float64 model of the blob's config on those tensors equals the module's forward."""
        import hf_llama_like as hf
        rename = (("model.embed_tokens.", "embed."), ("model.norm.", "norm."),
                  ("model.layers.", "layers."), (".input_layernorm.", ".attn_norm."),
                  (".post_attention_layernorm.", ".mlp_norm."), (".self_attn.", ".attn."))
        for tied in (True, False):
            torch.manual_seed(5)
            m = hf.LlamaForCausalLM(hf.config(tie_word_embeddings=tied)).eval()
            c = m.config
            cfg = {"n_layers": c.num_hidden_layers, "n_heads": c.num_attention_heads,
                   "n_kv_heads": c.num_key_value_heads, "d_head": c.head_dim,
                   "rope_base": c.rope_theta, "rope_pairing": "half",
                   "norm_eps": c.rms_norm_eps, "tied_head": tied}
            sd = {}
            for k, v in m.state_dict().items():
                if k.endswith("inv_freq") or (tied and k == "lm_head.weight"):
                    continue
                for a, b in rename:
                    k = k.replace(a, b)
                sd[k] = v.numpy()
            with tempfile.TemporaryDirectory() as d:
                pt, out = os.path.join(d, "hf.pt"), os.path.join(d, "hf.bin")
                torch.save(m, pt)
                rc, err = export("--module", pt, "--blob", out)
                self.assertEqual(rc, 0, err)
                data = read(out)
                rc, err = export("--module", pt, "--reference", os.path.join(d, "r.h"))
                self.assertEqual(rc, 2, err)  # no vocab string: nothing to encode a prompt
                self.assertIn("vocab", err)
            words = struct.unpack("<16I", data[:64])
            self.assertEqual(words[3:13], (0, c.vocab_size, c.hidden_size, c.num_hidden_layers,
                                           c.num_attention_heads, c.num_key_value_heads,
                                           c.head_dim, c.intermediate_size,
                                           c.max_position_embeddings, int(tied)))
            got, end, _ = read_blob(data, False, cfg, sd)
            self.assertEqual(end, len(data))
            self.assertEqual(set(got), set(sd))
            for k, a in got.items():
                self.assertEqual(a.tobytes(), sd[k].astype("<f4").tobytes(), k)
            ids = [int(i) for i in torch.randint(0, c.vocab_size, (20,))]
            with torch.no_grad():
                want = m(torch.tensor(ids)[None]).logits[0].double().numpy()
            err = float(np.abs(reference_logits64(ids, cfg, got) - want).max())
            self.assertLess(err, 1e-4 * float(np.abs(want).max()), tied)

    def refused(self, module, word):
        """Saves module, exports it; asserts exit 2 with a one-line message containing word."""
        with tempfile.TemporaryDirectory() as d:
            pt, out = os.path.join(d, "m.pt"), os.path.join(d, "m.bin")
            torch.save(module, pt)
            rc, err = export("--module", pt, "--blob", out)
            self.assertEqual(rc, 2, err)
            self.assertIn(word, err)
            self.assertEqual(len(err.strip().split("\n")), 1, err)
            self.assertFalse(os.path.exists(out))

    def test_refusals(self):
        cfg = dict(MODEL.config, vocab_size=3, d_model=8, n_heads=2, n_kv_heads=1, d_head=4,
                   d_hidden=16, n_layers=1, t_max=8)
        m = tl.TinyLM(cfg, "\ufffdab")
        m.layers[0].attn.q_proj = torch.nn.Linear(8, 8, bias=True)
        self.refused(m, "bias")
        m = tl.TinyLM(cfg, "\ufffdab")
        m.layers[0].mlp.up_proj = torch.nn.Linear(8, 12, bias=False)
        self.refused(m, "shape")


if __name__ == "__main__":
    prog = unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
