#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/export_pytorch.py --kind decoder on the committed tiny language model
(examples/tiny_lm/tiny_lm.pt): the model blob, the PyTorch reference and the vocabulary header.

  /usr/bin/python3 tests/python/test_tiny_lm_export.py [--source-dir DIR] [unittest options]

- a fresh export (fp32 blob, reference and vocabulary from --tiny-lm; int8 blob from --module,
  which detects the checkpoint) is byte for byte each committed file
  (examples/tiny_lm/tiny_lm_f32.bin, tiny_lm_q8.bin, tiny_lm_vocab.h,
  tests/data/tiny_lm_reference.h), except the reference's logits, which agree within a few
  fp32 rounding errors (reference_tolerance: PyTorch's kernels sum in a CPU-dependent order;
  its tokens and every other line are byte for byte);
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
  exit with status 2 and a one-line message; so does every config field the model file cannot
  carry, by name (Granite's multipliers, sliding_window, partial_rotary_factor, a made-up field,
  values other than the allowed one), and every module class but TinyLM and LlamaForCausalLM
  (GraniteForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, a TinyLM lookalike), while a
  LlamaForCausalLM with every field of transformers' config still exports (DecoderConfigFields);
  a model file over 4 GiB is refused with its size (BlobSizeLimit).
Exits 77 (ctest: skipped) without torch.
"""
import contextlib
import io
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
import export_pytorch as ex  # noqa: E402

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


# Version 2 (docs/model-format.md, "Version 2"), written here from the document: field keys and
# tensor roles, and the two format codes the exporter writes.
V2_FIELDS = {1: "architecture", 2: "vocab", 3: "d_model", 4: "n_layers", 5: "n_heads",
             6: "n_kv_heads", 7: "d_head", 8: "d_hidden", 9: "t_max", 10: "tied_head",
             11: "activation", 12: "rope_pairing", 13: "rope_base", 14: "norm_eps"}
V2_ROLES = {1: "embed", 2: "attn_norm", 3: "attn.q_proj", 4: "attn.k_proj", 5: "attn.v_proj",
            6: "attn.o_proj", 7: "mlp_norm", 8: "mlp.gate_proj", 9: "mlp.up_proj",
            10: "mlp.down_proj", 11: "norm", 12: "lm_head"}
V2_F32, V2_QC8 = 0, 1 | 8 << 8 | 1 << 16  # fp32; int8, one fp32 scale per output row


def read_v2(data, sd=SD):
    """A version-2 file: (fields {name: value}, tensors as read_blob gives them, the byte
    ranges [(start, end)] of the header, tables and arrays); sd None: the fields only."""
    magic, version, hb, total, nf, fa, nt, ta, *rest = struct.unpack("<16I", data[:64])
    assert (magic, version, hb, total, rest) == (0x4D4C414D, 2, 64, len(data), [0] * 8)
    used, fields, out = [(0, 64), (fa, fa + 16 * nf), (ta, ta + 32 * nt)], {}, {}
    for i in range(nf):
        key, typ, a, b = struct.unpack_from("<4I", data, fa + 16 * i)
        assert b == 0 and typ in (0, 1) and key not in fields
        fields[V2_FIELDS[key]] = struct.unpack("<f", struct.pack("<I", a))[0] if typ else a
    if sd is None:
        return fields, None, None
    for i in range(nt):
        tid, code, rows, cols, d, db, sc, sb = struct.unpack_from("<8I", data, ta + 32 * i)
        role, layer = V2_ROLES[tid & 0xFFFF], tid >> 16
        key = (role if layer == 0xFFFF else f"layers.{layer}.{role}") + ".weight"
        shape = sd[key].shape
        assert (rows, cols) == (shape[0], shape[1] if len(shape) == 2 else 1), key
        assert d % 16 == 0 and sc % 16 == 0 and key not in out, key
        if code == V2_QC8:
            assert (db, sb) == (rows * cols, 4 * rows), key
            out[key] = (np.frombuffer(data[d:d + db], np.int8).reshape(shape),
                        np.frombuffer(data[sc:sc + sb], "<f4"))
            used.append((sc, sc + sb))
        else:
            assert (code, db, sc, sb) == (V2_F32, 4 * rows * cols, 0, 0), key
            out[key] = np.frombuffer(data[d:d + db], "<f4").reshape(shape)
        used.append((d, d + db))
    return fields, out, sorted(used)


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


REF_LOGITS = re.compile(r"float tiny_lm_ref_logits\[\w+\]\[\w+\] = \{(.*?)\n\};", re.S)
LOGIT_LITERAL = re.compile(r"[-+]?[0-9.]+(?:e[-+]?[0-9]+)?f")
REF_MARGIN = re.compile(r"(top-2 logit there is )([-+0-9.e]+)\. ")


def reference_tolerance(logits, c=MODEL.config):
    """How far two fp32 runs of the same forward may put a logit apart: ulp(logit scale) times
    the longest sum in the forward. The summation order of PyTorch's fp32 kernels depends on
    the CPU (vector width, blocking: AVX2 here, AVX-512 on a Zen 4), and a sum of n terms
    reordered moves by up to about n rounding errors of its size; the logits' size is their
    scale max |logit| (17 here: ulp 2^-19), the longest sum is d_hidden = 256 terms (down_proj;
    d_model 128, attention over at most t_max 128 positions): 2^-19 * 256 = 4.9e-4. Far below
    what a changed weight, formula or prompt does to a logit (the model differs from a float64
    computation by less than 1e-5: test_reference_logits_equal_float64_model)."""
    scale = np.float32(np.abs(logits).max())
    return float(np.spacing(scale)) * max(c["d_model"], c["d_hidden"], c["t_max"])


def reference_differences(fresh, committed):
    """What differs between two reference headers, as lines: the text byte for byte with every
    logit and the margin taken out (the tokens, the prompt, the torch version ...); the logits
    within reference_tolerance(), the margin (a difference of two logits) within twice it."""
    def parts(text):
        body = REF_LOGITS.search(text)
        head = REF_MARGIN.sub(r"\1#. ", text[:body.start(1)])
        skeleton = head + LOGIT_LITERAL.sub("#", body.group(1)) + text[body.end(1):]
        return skeleton, parse_reference(text)[2], float(REF_MARGIN.search(text).group(2))
    (sa, la, ma), (sb, lb, mb) = parts(fresh), parts(committed)
    out = []
    if sa != sb:
        a, b = sa.split("\n"), sb.split("\n")
        line = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        out.append(f"the text differs at line {line + 1}, not only in the logits")
    tol = reference_tolerance(lb)
    if la.shape != lb.shape:
        return out + [f"logits of shape {la.shape}, committed {lb.shape}"]
    err = np.abs(la.astype(np.float64) - lb)
    if err.max() > tol:
        p, v = np.unravel_index(int(np.argmax(err)), err.shape)
        out.append(f"{int((err > tol).sum())} logits differ by more than {tol:.3g}, the most "
                   f"logits[{p}][{v}] by {err.max():.3g}")
    if abs(ma - mb) > 2 * tol:
        out.append(f"the margin {ma} differs from {mb} by more than {2 * tol:.3g}")
    return out


class TinyLmExport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.fresh = {k: os.path.join(d, os.path.basename(p)) for k, p in COMMITTED.items()}
        # The committed blobs are version 1 (the version-1 readers' test input); version 2
        # of the same model is checked against them.
        rc, err = export("--tiny-lm", WEIGHTS, "--name", "tiny_lm", "--blob", cls.fresh["f32"],
                         "--blob-version", "1", "--reference", cls.fresh["ref"],
                         "--vocab-header", cls.fresh["vocab"])
        assert rc == 0, err
        rc, err = export("--module", WEIGHTS, "--quant", "int8", "--blob", cls.fresh["q8"],
                         "--blob-version", "1")
        assert rc == 0, err
        cls.v2 = {}
        for k, q in (("f32", ()), ("q8", ("--quant", "int8"))):
            out = os.path.join(d, f"v2_{k}.bin")
            rc, err = export("--tiny-lm", WEIGHTS, *q, "--blob", out)
            assert rc == 0, err
            cls.v2[k] = read(out)
        cls.data = {k: read(p) for k, p in COMMITTED.items()}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_fresh_export_is_committed_files(self):
        """The blobs and the vocabulary byte for byte; the reference too, but for its logits
        (and the margin computed from them), which must agree within reference_tolerance():
        PyTorch's fp32 kernels sum in an order that depends on the CPU."""
        for k, p in COMMITTED.items():
            if k != "ref":
                self.assertTrue(read(self.fresh[k]) == self.data[k], f"{p} differs from a "
                                "fresh export")
        fresh, committed = (d.decode("ascii") for d in (read(self.fresh["ref"]),
                                                        self.data["ref"]))
        self.assertEqual(reference_differences(fresh, committed), [],
                         f"{COMMITTED['ref']} differs from a fresh export")

    def test_reference_comparison_sees_real_changes(self):
        """reference_differences() itself: a logit moved by half the tolerance passes, one
        moved by twice the tolerance, a token, the prompt or the margin beyond it do not."""
        text = self.data["ref"].decode("ascii")
        tol = reference_tolerance(parse_reference(text)[2])
        self.assertEqual(reference_differences(text, text), [])
        body = REF_LOGITS.search(text)
        first = LOGIT_LITERAL.search(text, body.start(1))
        v = float(first.group(0)[:-1])

        def moved(by):
            return text[:first.start()] + f"{float(np.float32(v + by))!r}f" + text[first.end():]
        self.assertEqual(reference_differences(moved(0.5 * tol), text), [])
        bad = reference_differences(moved(2 * tol), text)
        self.assertEqual(len(bad), 1, bad)
        self.assertIn("logits[0][0]", bad[0])
        tok = text.replace("static const int32_t tiny_lm_ref_tokens[TINY_LM_REF_POSITIONS] = {\n"
                           "  56,", "static const int32_t tiny_lm_ref_tokens[TINY_LM_REF_POSITIONS]"
                           " = {\n  57,")
        self.assertNotEqual(tok, text)
        self.assertEqual(len(reference_differences(tok, text)), 1)
        prompt = text.replace('"The artist', '"the artist')
        self.assertEqual(len(reference_differences(prompt, text)), 1)
        m = REF_MARGIN.search(text)
        margin = text[:m.start(2)] + repr(float(m.group(2)) + 3 * tol) + text[m.end(2):]
        self.assertIn("margin", " ".join(reference_differences(margin, text)))

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

    def test_version2_holds_version1s_tensors(self):
        """The default export (version 2) of the committed model: its fields are the config's,
        its directory names every tensor once, each with the format code of its array, and
        every array is version 1's bit for bit; the arrays, tables and header do not overlap
        and only zeros lie between them."""
        c = MODEL.config
        want = dict(architecture=1, vocab=len(MODEL.vocab), activation=0,
                    tied_head=int(c["tied_head"]),
                    rope_pairing=int(c["rope_pairing"] == "adjacent"),
                    rope_base=float(np.float32(c["rope_base"])),
                    norm_eps=float(np.float32(c["norm_eps"])),
                    **{k: c[k] for k in ("d_model", "n_layers", "n_heads", "n_kv_heads", "d_head",
                                         "d_hidden", "t_max")})
        for key, int8 in (("f32", False), ("q8", True)):
            fields, got, used = read_v2(self.v2[key])
            self.assertEqual(fields, want)
            v1, _, _ = read_blob(self.data[key], int8)
            self.assertEqual(set(got), set(v1))
            for k, a in got.items():
                pair = a if isinstance(a, tuple) else (a,)
                ref = v1[k] if isinstance(v1[k], tuple) else (v1[k],)
                self.assertEqual([x.tobytes() for x in pair], [x.tobytes() for x in ref], k)
            data = self.v2[key]
            for (s0, e0), (s1, _) in zip(used, used[1:]):
                self.assertLessEqual(e0, s1)
                self.assertEqual(set(data[e0:s1]), set() if e0 == s1 else {0})
            self.assertEqual(set(data[used[-1][1]:]), set() if used[-1][1] == len(data) else {0})
            self.assertLess(len(data) - used[-1][1], 16)

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
            fields, got, _ = read_v2(data, sd)
            self.assertEqual([fields[k] for k in ("vocab", "d_model", "n_layers", "n_heads",
                                                  "n_kv_heads", "d_head", "d_hidden", "t_max",
                                                  "tied_head", "rope_pairing")],
                             [c.vocab_size, c.hidden_size, c.num_hidden_layers,
                              c.num_attention_heads, c.num_key_value_heads, c.head_dim,
                              c.intermediate_size, c.max_position_embeddings, int(tied), 0])
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


def export_here(*args):
    """The exporter's main() in this process (faster than a process per case; main() is what
    the command line runs): (exit status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = ex.main(["--kind", "decoder", *args])
    return rc, err.getvalue()


class DecoderConfigFields(unittest.TestCase):
    """The decoder's family is read by its class name and every config field by its table
    (export_pytorch.py's DECODER_CLASSES, HF_LLAMA_FIELDS, TINY_LM_FIELDS): what the model file
    cannot carry is refused, naming it, exit status 2, one line and no file; what it can still
    exports."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def export_module(self, module, name):
        """Saves module as NAME.pt and exports NAME.bin: (exit status, stderr, blob path)."""
        pt, out = (os.path.join(self.tmp.name, name + e) for e in (".pt", ".bin"))
        torch.save(module, pt)
        rc, err = export_here("--module", pt, "--blob", out)
        return rc, err, out

    def assert_refused(self, module, name, *words):
        rc, err, out = self.export_module(module, name)
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.strip().split("\n")), 1, err)
        self.assertTrue(err.startswith("export_pytorch.py: error: "), err)
        for w in words:
            self.assertIn(w, err)
        self.assertFalse(os.path.exists(out))
        return err

    @staticmethod
    def llama(cls_name="LlamaForCausalLM", **fields):
        """hf_llama_like's module (under cls_name) with config() and fields added."""
        import hf_llama_like as hf
        torch.manual_seed(3)
        return getattr(hf, cls_name)(hf.config(**fields)).eval()

    def test_plain_llama_with_every_pretrained_config_field_exports(self):
        """A LlamaForCausalLM whose config has every field transformers' LlamaConfig.to_dict()
        lists (bookkeeping, generate() settings, the allowed values: sliding_window absent,
        pretraining_tp 1, mlp_bias False ...) exports, and its blob is the one a bare config
        gives."""
        import hf_llama_like as hf
        torch.manual_seed(3)
        m = hf.LlamaForCausalLM(hf.full_config()).eval()
        self.assertIn("transformers_version", m.config.to_dict())
        rc, err, out = self.export_module(m, "full")
        self.assertEqual(rc, 0, err)
        m.config = hf.config()  # the same weights with only the model's own fields
        rc, err, bare = self.export_module(m, "bare")
        self.assertEqual(rc, 0, err)
        self.assertEqual(read(out), read(bare))
        fields = read_v2(read(out), None)[0]
        self.assertEqual([fields[k] for k in ("vocab", "d_model", "n_layers", "n_heads",
                                              "n_kv_heads", "d_head", "d_hidden", "t_max")],
                         [11, 16, 2, 4, 2, 4, 24, 32])
        for extra in ({"sliding_window": None}, {"partial_rotary_factor": 1.0},
                      {"pretraining_tp": 1}, {"rope_scaling": None}):
            m.config = hf.full_config(**extra)  # the allowed value, said explicitly
            rc, err, again = self.export_module(m, "allowed")
            self.assertEqual((rc, read(again)), (0, read(out)), (extra, err))

    def test_granite_multipliers_are_refused_by_name(self):
        granite = {"embedding_multiplier": 12.0, "residual_multiplier": 0.22,
                   "attention_multiplier": 0.0078125, "logits_scaling": 8.0}
        for k, v in granite.items():  # each on its own, under the LLaMA class name
            with self.subTest(field=k):
                self.assert_refused(self.llama(**{k: v}), "g1", f"{k} = {v!r}",
                                    "cannot carry")
        err = self.assert_refused(self.llama(**granite), "g4", *granite)  # all four, one line
        self.assertEqual(err.count("cannot carry"), 4, err)

    def test_granite_class_is_refused_by_name(self):
        """Refused by its class before any field or weight is read; as a process too."""
        granite = self.llama("GraniteForCausalLM", embedding_multiplier=12.0)
        self.assert_refused(granite, "gc", "GraniteForCausalLM", "multipliers")
        with tempfile.TemporaryDirectory() as d:
            pt, out = os.path.join(d, "g.pt"), os.path.join(d, "g.bin")
            torch.save(granite, pt)
            rc, err = export("--module", pt, "--blob", out)
        self.assertEqual(rc, 2, err)
        self.assertIn("GraniteForCausalLM", err)
        self.assertEqual(len(err.strip().split("\n")), 1, err)

    def test_mistral_sliding_window_is_refused(self):
        self.assert_refused(self.llama(sliding_window=4096), "sw", "sliding_window = 4096",
                            "must be None")
        self.assert_refused(self.llama("MistralForCausalLM", sliding_window=4096), "mc",
                            "MistralForCausalLM", "sliding-window")

    def test_partial_rotary_factor_is_refused(self):
        self.assert_refused(self.llama(partial_rotary_factor=0.5), "pr",
                            "partial_rotary_factor = 0.5", "must be 1.0")

    def test_other_classes_are_refused_by_name(self):
        """Qwen2's class with LLaMA's names, and a TinyLM-shaped module of another class: the
        parameter names alone do not make a family."""
        self.assert_refused(self.llama("Qwen2ForCausalLM"), "qw", "Qwen2ForCausalLM",
                            "TinyLM or a LlamaForCausalLM")
        cfg = dict(MODEL.config, vocab_size=3, d_model=8, n_heads=2, n_kv_heads=1, d_head=4,
                   d_hidden=16, n_layers=1, t_max=8)
        self.assert_refused(TinyLMLookalike(cfg, "\ufffdab"), "tl", "TinyLMLookalike")

    def test_unknown_and_other_values_are_refused_by_name(self):
        cases = [({"frobnication_factor": 3}, "frobnication_factor = 3"),
                 ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_scaling"),
                 ({"attention_bias": True}, "attention_bias = True"),
                 ({"mlp_bias": True}, "mlp_bias = True"),
                 ({"hidden_act": "gelu"}, "hidden_act = 'gelu'"),
                 ({"pretraining_tp": 2}, "pretraining_tp = 2"),
                 ({"model_type": "mistral"}, "model_type = 'mistral'")]
        for fields, word in cases:
            with self.subTest(fields=fields):
                self.assert_refused(self.llama(**fields), "u", word)
        cfg = dict(MODEL.config, vocab_size=3, d_model=8, n_heads=2, n_kv_heads=1, d_head=4,
                   d_hidden=16, n_layers=1, t_max=8)
        m = tl.TinyLM(cfg, "\ufffdab")
        m.config = dict(m.config, dropout=0.1)  # the tiny LM's own table too
        self.assert_refused(m, "td", "dropout = 0.1", "cannot carry")
        m.config = dict(cfg, vocab_size=4)
        self.assert_refused(m, "tv", "vocabulary of 4", "3 rows")


class BlobSizeLimit(unittest.TestCase):
    """A model file over 4 GiB (its size in the header is a uint32) is refused with its size
    and the limit, before any of it is built (the exporter raised struct.error after building
    it): the tensors here are broadcast views, which take no memory."""

    @staticmethod
    def decoder(vocab, d_model):
        """An embedding [vocab][d_model] and a norm [d_model]: fp32 size 64 + 4 vocab d_model
        + 4 d_model (d_model a multiple of 4: no padding)."""
        emb = np.broadcast_to(np.float32(0.5), (vocab, d_model))
        norm = np.ones(d_model, np.float32)
        cfg = dict(MODEL.config, vocab=vocab, d_model=d_model, n_layers=0)
        return ex.Decoder(None, cfg, [("embed.weight", emb, True), ("norm.weight", norm, False)],
                          None)

    def test_over_4_gib_is_refused_by_size(self):
        D = 4096
        fits, over = self.decoder(262142, D), self.decoder(262144, D)
        self.assertEqual(ex.blob_total(fits), 64 + 4 * 262142 * D + 4 * D)
        self.assertLessEqual(ex.blob_total(fits), 2 ** 32 - 1)
        ex.check_blob_size(ex.blob_total(fits))  # the largest multiple of 16 that fits
        ex.check_blob_size(2 ** 32 - 16)
        total = 64 + 4 * 262144 * D + 4 * D
        for dec, quant in ((over, "none"), (self.decoder(2 ** 20 + 8, D), "int8")):
            with self.subTest(quant=quant):
                with self.assertRaises(ex.Refusal) as e:
                    ex.blob_bytes(dec, quant)
                msg = str(e.exception)
                if quant == "none":
                    self.assertIn(f"{total} bytes", msg)
                self.assertIn("4 GiB (4294967295 bytes", msg)
                self.assertIn("32-bit", msg)
        with self.assertRaises(ex.Refusal):
            ex.check_blob_size(2 ** 32)
        # int8: one byte a weight and 4 bytes of scale a row, 64 + V D + 4 V + 4 D: this one
        # fits as int8 and not as fp32.
        big = self.decoder(600000, D)
        self.assertEqual(ex.blob_total(big, "int8"), 64 + 600000 * D + 4 * 600000 + 4 * D)
        ex.check_blob_size(ex.blob_total(big, "int8"))
        with self.assertRaises(ex.Refusal):
            ex.check_blob_size(ex.blob_total(big))

    def test_refusal_from_the_command_line(self):
        """main() with the limit lowered below the tiny model's 1 233 472 bytes (version 1;
        version 2 adds its tables, 16 bytes a field and 32 a tensor, and moves every array by
        that much): exit status 2, one line with the size, no file."""
        saved = ex.BLOB_MAX_BYTES
        for version, size in ((1, 1233472), (2, 1233472 + 16 * 14 + 32 * 20)):
            with tempfile.TemporaryDirectory() as d, self.subTest(version=version):
                out = os.path.join(d, "t.bin")
                args = ("--tiny-lm", WEIGHTS, "--blob", out, "--blob-version", str(version))
                try:
                    ex.BLOB_MAX_BYTES = size - 16
                    rc, err = export_here(*args)
                finally:
                    ex.BLOB_MAX_BYTES = saved
                self.assertEqual(rc, 2, err)
                self.assertIn(f"{size} bytes", err)
                self.assertEqual(len(err.strip().split("\n")), 1, err)
                self.assertFalse(os.path.exists(out))
                rc, err = export_here(*args)
                self.assertEqual((rc, os.path.getsize(out)), (0, size), err)


class TinyLMLookalike(tl.TinyLM):
    """TinyLM's parameters and config under another class name (refused: not a TinyLM)."""


if __name__ == "__main__":
    prog = unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
