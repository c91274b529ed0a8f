#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/export_pytorch.py --kind decoder --hf DIR (tools/hf_model.py) and --gguf FILE
(tools/gguf.py): Hugging Face directories and GGUF files without transformers, torch or
llama.cpp, run through microattn::Decoder.

  /usr/bin/python3 tests/python/test_model_loaders.py --cxx g++ [--xsimd-include DIR]
      [--cxx-flags FLAGS] [--work-dir DIR] [unittest options]

- a LlamaForCausalLM-shaped module (tests/python/hf_llama_like.py, random weights; GQA, tied
  and untied) written as an HF directory by write_safetensors (written here from the
  safetensors document: 8-byte length, JSON header padded with spaces to 8 bytes, the buffer
  covered without holes), in F32, F16 and BF16, and F32 as two shards with an index: the model
  file's logits from microattn::Decoder (tests/python/decoder_run.cpp, built here) equal a
  float64 NumPy forward of the weights as stored (F16/BF16 widened: exact) within 1e-5 of the
  largest |logit|, and the module's own float32 forward within 1e-4; the sharded export is the
  single file's model file byte for byte;
- the reader against a file spelled out byte by byte from the document;
- refusals (exit status 2, one line naming the reason): F64 and I8 tensors, a header past the
  file, buffer bytes no tensor covers, offsets that do not hold the shape, a missing tensor, a bias, a shard not found, a
  shard tensor missing from the index, an architectures other than LlamaForCausalLM, a config
  field the model file cannot carry (sliding_window), rope_interleaved true, a tied config
  whose lm_head differs.
- GGUF: the same module as a GGUF version-3 file (tests/python/gguf_writer.py, written from
  ggml's docs/gguf.md; llama.cpp's names, Q and K rows permuted into adjacent RoPE pairs as its
  converter does, norms F32) with F32, F16, BF16 and Q8_0 matrices: within 1e-5 of the float64
  forward of the weights as stored (Q8_0 dequantised: exact in float32); refusals: a Q4_0
  tensor, version 2, an unknown llama.* key, RoPE scaling, another architecture, a partial
  rotary dimension count, a rope_freqs tensor, a truncated file.
Exits 77 without torch (the module) or NumPy.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import export_test_setup as setup

ARGS, UNITTEST_ARGS = setup.options(__doc__)
ROOT = os.path.abspath(ARGS.source_dir)
setup.require_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, setup.HERE)
import export_pytorch as ex  # noqa: E402
import hf_llama_like as hf  # noqa: E402
import hf_model  # noqa: E402
import gguf_writer as gw  # noqa: E402

SHAPE = dict(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=8, intermediate_size=64, max_position_embeddings=32,
             rope_theta=10000.0, rms_norm_eps=1e-5)
IDS = [3, 17, 5, 39, 0, 22, 8, 8, 31, 12, 2, 27]


def to_bf16_bits(a):
    """float32 -> bfloat16 bits, rounded to nearest even (as torch and transformers do)."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def stored(a, dtype):
    """(raw little-endian bytes, the float32 values a reader must get back) of a in dtype."""
    if dtype == "F32":
        a = np.ascontiguousarray(a, "<f4")
        return a.tobytes(), a
    if dtype == "F16":
        h = np.ascontiguousarray(a, "<f2")
        return h.tobytes(), h.astype(np.float32)
    b = to_bf16_bits(a)
    return b.astype("<u2").tobytes(), (b.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors, metadata=None):
    """tensors: [(name, dtype, shape, raw bytes)] in buffer order."""
    header, at = {}, 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + len(raw)]}
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(t[3] for t in tensors))


def module(tied, seed):
    torch.manual_seed(seed)
    return hf.LlamaForCausalLM(hf.full_config(**SHAPE, tie_word_embeddings=tied)).eval()


def hf_dir(folder, m, dtype="F32", shards=1, config=None, edit=None):
    """m as an HF directory; returns {name: float32 values as stored}. edit(list) may change
    the tensor list [(name, dtype, shape, raw)] before writing."""
    os.makedirs(folder, exist_ok=True)
    cfg = m.config.to_dict() if config is None else config
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    items, values = [], {}
    for k, v in m.state_dict().items():
        if k.endswith("inv_freq") or (cfg.get("tie_word_embeddings") and k == "lm_head.weight"):
            continue
        raw, back = stored(v.detach().numpy(), dtype)
        items.append((k, dtype, tuple(v.shape), raw))
        values[k] = back
    if edit:
        edit(items)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), items, {"format": "pt"})
        return values
    cut = len(items) // 2
    wmap = {}
    for i, part in enumerate((items[:cut], items[cut:])):
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        write_safetensors(os.path.join(folder, name), part)
        wmap.update({t[0]: name for t in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": wmap}, f)
    return values


def forward64(values, tied, ids):
    """HF LlamaForCausalLM's forward in float64 on the stored values (rotate_half RoPE)."""
    w = {k: v.astype(np.float64) for k, v in values.items()}
    c = SHAPE
    H, K, dh, T = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], len(ids)
    ang = np.arange(T)[:, None] * c["rope_theta"] ** (-np.arange(0, dh, 2) / dh)
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))

    def rms(x, g):
        return g * x / np.sqrt((x * x).mean(-1, keepdims=True) + c["rms_norm_eps"])

    def rope(x):
        return x * cos + np.concatenate([-x[:, dh // 2:], x[:, :dh // 2]], 1) * sin

    x = w["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"])
        q, k, v = (h @ w[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        out = np.empty((T, H * dh))
        for j in range(H):
            g = j // (H // K)
            qh, kh = rope(q[:, j * dh:(j + 1) * dh]), rope(k[:, g * dh:(g + 1) * dh])
            s = qh @ kh.T / np.sqrt(dh) + mask
            e = np.exp(s - s.max(1, keepdims=True))
            out[:, j * dh:(j + 1) * dh] = (e / e.sum(1, keepdims=True)) @ v[:, g * dh:(g + 1) * dh]
        x = x + out @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        a = h @ w[p + "mlp.gate_proj.weight"].T
        x = x + (a / (1 + np.exp(-a)) * (h @ w[p + "mlp.up_proj.weight"].T)) @ \
            w[p + "mlp.down_proj.weight"].T
    head = w["model.embed_tokens.weight"] if tied else w["lm_head.weight"]
    return rms(x, w["model.norm.weight"]) @ head.T


def export(*argv):
    return setup.run_exporter(ex, *argv)


class Programs(unittest.TestCase):
    """decoder_run built once for the shape (tied and untied), shared by the test classes."""
    built = None

    @classmethod
    def setUpClass(cls):
        if Programs.built:
            cls.work, cls.run_bin = Programs.built
            return
        cls.work = ARGS.work_dir or tempfile.mkdtemp(prefix="hf_loader_")
        if ARGS.work_dir:
            shutil.rmtree(cls.work, ignore_errors=True)
        os.makedirs(cls.work, exist_ok=True)
        cls.run_bin = {}
        shape = ",".join(str(SHAPE[k]) for k in (
            "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "head_dim", "intermediate_size", "max_position_embeddings"))
        for tied in (True, False):
            out = os.path.join(cls.work, f"decoder_run_{int(tied)}")
            cmd = [ARGS.cxx, "-std=c++17", "-O1", f"-I{ROOT}/include",
                   f"-DRUN_SHAPE={shape}", f"-DRUN_HEAD={'kTied' if tied else 'kSeparate'}",
                   os.path.join(setup.HERE, "decoder_run.cpp"),
                   os.path.join(ROOT, "lib", "status.cpp"), "-o", out]
            cmd += [f"-I{ARGS.xsimd_include}"] if ARGS.xsimd_include else \
                ["-DMICROATTN_FORCE_SCALAR=1"]
            cmd += ARGS.cxx_flags.split()
            subprocess.run(cmd, check=True)
            cls.run_bin[tied] = out
        Programs.built = (cls.work, cls.run_bin)


    def folder(self, name):
        p = os.path.join(self.work, name)
        shutil.rmtree(p, ignore_errors=True)
        return p

    def logits(self, blob, tied):
        r = subprocess.run([self.run_bin[tied], blob] + [str(i) for i in IDS],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return np.array([[float.fromhex(v) for v in line.split()]
                         for line in r.stdout.splitlines()])



class HfLoader(Programs):
    def test_llama_directories_match_float64(self):
        for tied in (True, False):
            m = module(tied, seed=11 + tied)
            with torch.no_grad():
                fp32 = m(torch.tensor(IDS)[None]).logits[0].double().numpy()
            for dtype in ("F32", "F16", "BF16"):
                d = self.folder(f"m_{int(tied)}_{dtype}")
                values = hf_dir(d, m, dtype)
                blob = d + ".bin"
                rc, err = export("--kind", "decoder", "--hf", d, "--blob", blob)
                self.assertEqual(rc, 0, err)
                got = self.logits(blob, tied)
                want = forward64(values, tied, IDS)
                scale = np.abs(want).max()
                rel = np.abs(got - want).max() / scale
                print(f"hf_loader: tied {tied} {dtype}: max |logit - float64| / max |logit| "
                      f"{rel:.2e}", file=sys.stderr)
                self.assertLess(rel, 1e-5, (tied, dtype))
                if dtype == "F32":
                    self.assertLess(np.abs(got - fp32).max() / scale, 1e-4)
                    d2 = self.folder(f"m_{int(tied)}_sharded")
                    hf_dir(d2, m, dtype, shards=2)
                    rc, err = export("--kind", "decoder", "--hf", d2, "--blob", d2 + ".bin")
                    self.assertEqual(rc, 0, err)
                    with open(blob, "rb") as a, open(d2 + ".bin", "rb") as b:
                        self.assertEqual(a.read(), b.read())

    def test_reader_against_the_document(self):
        # {"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"F16",...}}
        text = (b'{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},'
                b'"b":{"dtype":"F16","shape":[1,1],"data_offsets":[4,6]}}')
        text += b" " * (-len(text) % 8)
        data = struct.pack("<Q", len(text)) + text + bytes([0x80, 0x3F, 0x00, 0xC0, 0x00, 0x3C])
        path = os.path.join(self.work, "doc.safetensors")
        with open(path, "wb") as f:
            f.write(data)
        t, dt = hf_model.read_safetensors(path)
        self.assertEqual(t["a"].tolist(), [1.0, -2.0])
        self.assertEqual(t["b"].tolist(), [[1.0]])
        self.assertEqual(dt, {"a": "BF16", "b": "F16"})

    def refused(self, folder, *needles):
        rc, err = export("--kind", "decoder", "--hf", folder, "--blob", folder + ".bin")
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        for n in needles:
            self.assertIn(n, err)

    def test_refusals(self):
        m = module(True, seed=3)
        cfg = m.config.to_dict()
        q0 = "model.layers.0.self_attn.q_proj.weight"

        def retype(dtype, width):
            def edit(items):
                i = [t[0] for t in items].index(q0)
                n, _, shape, raw = items[i]
                items[i] = (n, dtype, shape, bytes(len(raw) // 4 * width))
            return edit

        def drop(name):
            return lambda items: items.pop([t[0] for t in items].index(name))

        def add(name, shape):
            return lambda items: items.append((name, "F32", shape, bytes(4 * shape[0])))

        cases = [
            (dict(edit=retype("F64", 8)), ("F64", "a safetensors dtype")),
            (dict(edit=retype("I8", 1)), ("I8",)),
            (dict(edit=drop(q0)), ("missing", "q_proj")),
            (dict(edit=add("model.layers.0.self_attn.q_proj.bias", (32,))), ("biases",)),
            (dict(config=dict(cfg, architectures=["Qwen2ForCausalLM"])),
             ("Qwen2ForCausalLM", "biases on Q, K and V")),
            (dict(config=dict(cfg, sliding_window=16)), ("sliding_window",)),
            (dict(config=dict(cfg, rope_interleaved=True)), ("rope_interleaved",)),
            (dict(config=dict(cfg, architectures=None)), ("architectures",)),
        ]
        for i, (kw, needles) in enumerate(cases):
            d = self.folder(f"bad_{i}")
            hf_dir(d, m, **kw)
            with self.subTest(needles=needles):
                self.refused(d, *needles)
        # A tied config whose file has its own, different lm_head.
        d = self.folder("bad_head")
        hf_dir(d, m, edit=add("lm_head.weight", (40 * 32,)))  # (replaced below)
        st = os.path.join(d, "model.safetensors")
        t = hf_model.read_safetensors(st)[0]
        items = [(k, "F32", v.shape, v.astype("<f4").tobytes()) for k, v in t.items()]
        items[-1] = ("lm_head.weight", "F32", (40, 32), bytes(4 * 40 * 32))
        write_safetensors(st, items)
        self.refused(d, "lm_head.weight is not model.embed_tokens.weight")
        # Broken files: the header past the end, a hole, an overlap.
        d = self.folder("bad_file")
        hf_dir(d, m)
        with open(st := os.path.join(d, "model.safetensors"), "rb") as f:
            good = f.read()
        n = struct.unpack_from("<Q", good)[0]
        for data, needle in ((struct.pack("<Q", len(good)) + good[8:], "runs past the file"),
                             (good + b"\0\0\0\0", "tensors end at"),
                             (good[:8] + good[8:8 + n].replace(b'"data_offsets": [0, ',
                                                               b'"data_offsets": [4, ', 1)
                              + good[8 + n:], "data_offsets")):
            with open(st, "wb") as f:
                f.write(data)
            self.refused(d, needle)
        # Shards: one missing, one with a tensor the index does not list.
        d = self.folder("bad_shards")
        hf_dir(d, m, shards=2)
        os.remove(os.path.join(d, "model-00002-of-00002.safetensors"))
        self.refused(d, "model-00002-of-00002.safetensors", "not found")
        d = self.folder("bad_index")
        hf_dir(d, m, shards=2)
        idx = os.path.join(d, "model.safetensors.index.json")
        with open(idx) as f:
            j = json.load(f)
        j["weight_map"].pop(q0)
        with open(idx, "w") as f:
            json.dump(j, f)
        self.refused(d, q0, "weight_map")
        self.refused(self.folder("nothing"), "config.json")


GGUF_NAMES = (("model.embed_tokens.", "token_embd."), ("model.norm.", "output_norm."),
              ("lm_head.", "output."), ("model.layers.", "blk."), (".self_attn.q_proj.", ".attn_q."),
              (".self_attn.k_proj.", ".attn_k."), (".self_attn.v_proj.", ".attn_v."),
              (".self_attn.o_proj.", ".attn_output."), (".input_layernorm.", ".attn_norm."),
              (".post_attention_layernorm.", ".ffn_norm."), (".mlp.gate_proj.", ".ffn_gate."),
              (".mlp.up_proj.", ".ffn_up."), (".mlp.down_proj.", ".ffn_down."))


def gguf_meta(**override):
    c = SHAPE
    meta = {"general.architecture": (gw.STRING, "llama"), "general.name": (gw.STRING, "test"),
            "general.file_type": (gw.UINT32, 7),
            "llama.context_length": (gw.UINT32, c["max_position_embeddings"]),
            "llama.embedding_length": (gw.UINT32, c["hidden_size"]),
            "llama.block_count": (gw.UINT32, c["num_hidden_layers"]),
            "llama.feed_forward_length": (gw.UINT32, c["intermediate_size"]),
            "llama.rope.dimension_count": (gw.UINT32, c["head_dim"]),
            "llama.attention.head_count": (gw.UINT32, c["num_attention_heads"]),
            "llama.attention.head_count_kv": (gw.UINT32, c["num_key_value_heads"]),
            "llama.attention.layer_norm_rms_epsilon": (gw.FLOAT32, c["rms_norm_eps"]),
            "llama.rope.freq_base": (gw.FLOAT32, c["rope_theta"]),
            "tokenizer.ggml.model": (gw.STRING, "llama")}
    meta.update(override)
    return [(k, t, v) for k, (t, v) in meta.items() if t is not None]


def gguf_file(path, m, ggml_type, meta=None, extra=()):
    """m as a GGUF file; returns {HF name: float32 values as stored, HF layout}."""
    tied = m.config.tie_word_embeddings
    heads = {"q_proj": SHAPE["num_attention_heads"], "k_proj": SHAPE["num_key_value_heads"]}
    tensors, values = [], {}
    for k, v in m.state_dict().items():
        if k.endswith("inv_freq") or (tied and k == "lm_head.weight"):
            continue
        a = v.detach().numpy().astype(np.float32)
        if a.ndim == 1:
            t, raw, back = gw.F32, a.astype("<f4").tobytes(), a
        elif ggml_type == gw.Q8_0:
            t, (raw, back) = gw.Q8_0, gw.q8_0(a)
        else:
            dtype = {gw.F32: "F32", gw.F16: "F16", gw.BF16: "BF16"}[ggml_type]
            t, (raw, back) = ggml_type, stored(a, dtype)
        values[k] = back
        proj = k.split(".")[-2]
        if proj in heads:  # llama.cpp's permutation: halves -> adjacent pairs, row-wise
            h, dh = heads[proj], SHAPE["head_dim"]
            rows = np.arange(a.shape[0]).reshape(h, 2, dh // 2).swapaxes(1, 2).reshape(-1)
            width = len(raw) // a.shape[0]
            raw = b"".join(raw[r * width:(r + 1) * width] for r in rows)
        name = k
        for x, y in GGUF_NAMES:
            name = name.replace(x, y)
        tensors.append((name, t, list(a.shape[::-1]), raw))
    gw.write_gguf(path, gguf_meta() if meta is None else meta, tensors + list(extra))
    return values


class GgufLoader(Programs):
    def test_gguf_files_match_float64(self):
        for tied in (True, False):
            m = module(tied, seed=21 + tied)
            for t in (gw.F32, gw.F16, gw.BF16, gw.Q8_0):
                path = os.path.join(self.work, f"g_{int(tied)}_{t}.gguf")
                values = gguf_file(path, m, t)
                rc, err = export("--kind", "decoder", "--gguf", path, "--blob", path + ".bin")
                self.assertEqual(rc, 0, err)
                got = self.logits(path + ".bin", tied)
                want = forward64(values, tied, IDS)
                rel = np.abs(got - want).max() / np.abs(want).max()
                print(f"gguf_loader: tied {tied} type {t}: max |logit - float64| / max |logit| "
                      f"{rel:.2e}", file=sys.stderr)
                self.assertLess(rel, 1e-5, (tied, t))

    def test_gguf_q8_0_to_int8_g32_is_lossless(self):
        """A GGUF's Q8_0 matrices exported with --quant int8-g32 keep their values exactly: each
        block of 32 becomes one group (its max |q| is 127, so max |w| / 127 is the block's d
        again and w / d its q), the norms stay F32."""
        m = module(True, seed=31)
        path = os.path.join(self.work, "q8.gguf")
        values = gguf_file(path, m, gw.Q8_0)
        rc, err = export("--kind", "decoder", "--gguf", path, "--quant", "int8-g32", "--blob",
                         path + ".bin")
        self.assertEqual(rc, 0, err)
        with open(path + ".bin", "rb") as f:
            blob = f.read()
        nt, ta = struct.unpack_from("<2I", blob, 24)
        by_role = {}
        for i in range(nt):
            tid, c, rows, cols, d, db, sc, sb = struct.unpack_from("<8I", blob, ta + 32 * i)
            if c == 0:
                continue
            self.assertEqual(c, 0x5020801)
            q = np.frombuffer(blob[d:d + db], np.int8).reshape(rows, cols).astype(np.float32)
            s = np.frombuffer(blob[sc:sc + sb], "<f4").reshape(rows, -(-cols // 32))
            by_role[(tid & 0xFFFF, tid >> 16)] = q * np.repeat(s, 32, axis=1)[:, :cols]
        roles = {"q_proj": 3, "k_proj": 4, "v_proj": 5, "o_proj": 6, "gate_proj": 8,
                 "up_proj": 9, "down_proj": 10}
        checked = 0
        for k, v in values.items():
            if v.ndim != 2:
                continue
            parts = k.split(".")
            key = (1, 0xFFFF) if "embed_tokens" in k else (roles[parts[-2]], int(parts[2]))
            heads = {"q_proj": SHAPE["num_attention_heads"],
                     "k_proj": SHAPE["num_key_value_heads"]}.get(parts[-2])
            if heads:  # kept in the file's order: llama.cpp's adjacent pairs (gguf_file)
                v = v[np.arange(v.shape[0]).reshape(heads, 2, -1).swapaxes(1, 2).reshape(-1)]
            self.assertTrue(np.array_equal(by_role[key], v), k)
            checked += 1
        self.assertEqual(checked, len(by_role))

    def test_gguf_refusals(self):
        m = module(True, seed=4)

        def refused(path, *needles):
            rc, err = export("--kind", "decoder", "--gguf", path, "--blob", path + ".bin")
            self.assertEqual(rc, 2, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            for n in needles:
                self.assertIn(n, err)

        p = os.path.join(self.work, "bad.gguf")
        gguf_file(p, m, gw.F32, extra=[("blk.0.extra.weight", gw.Q4_0, [32], bytes(18))])
        refused(p, "Q4_0")
        for meta, needles in (
                (gguf_meta(**{"llama.foo": (gw.UINT32, 1)}), ("llama.foo",)),
                (gguf_meta(**{"llama.rope.scaling.type": (gw.STRING, "linear")}),
                 ("llama.rope.scaling.type", "linear")),
                (gguf_meta(**{"general.architecture": (gw.STRING, "qwen2")}), ("qwen2",)),
                (gguf_meta(**{"llama.rope.dimension_count": (gw.UINT32, 4)}),
                 ("rope.dimension_count 4",)),
                (gguf_meta(**{"llama.block_count": (None, None)}), ("llama.block_count",))):
            gguf_file(p, m, gw.F32, meta=meta)
            with self.subTest(needles=needles):
                refused(p, *needles)
        gguf_file(p, m, gw.F32, extra=[("rope_freqs.weight", gw.F32, [4], bytes(16))])
        refused(p, "rope_freqs")
        gguf_file(p, m, gw.F32)
        with open(p, "rb") as f:
            good = f.read()
        with open(p, "wb") as f:
            f.write(good[:4] + struct.pack("<I", 2) + good[8:])
        refused(p, "version 2")
        with open(p, "wb") as f:
            f.write(good[:-64])
        refused(p, "runs past the file")


def tearDownModule():
    if Programs.built and not ARGS.work_dir:
        shutil.rmtree(Programs.built[0], ignore_errors=True)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS)
