#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of tools/export_pytorch.py (unittest; ctest runs it as `export_pytorch`).

Exports real PyTorch modules (fresh ones, whose biases PyTorch initialises to zero, and ones with
chosen values), then checks, for every header:
  - it compiles as C11 and as C++17 with -Wall -Wextra -Wpedantic -Werror, included by two
    translation units linked together (gcc and g++; clang and clang++ too when installed), and
    the compiled arrays hold exactly the module's float32 bits;
  - every literal is a valid C/C++ float literal that rounds to the module's value (checked in
    Python with exact rational arithmetic, not through a double);
  - microattn's MultiHeadAttention<Cfg> with `<name>_weights<Cfg>()` and the Config the header
    names computes what the module computes with the mask given by --mask (causal; none for a
    TransformerEncoderLayer and a Whisper-style encoder; window:W against a banded mask);
  - a Config that differs from the header's shape, mask or sliding window fails to compile,
    naming the parameter (and tests/compile_fail_exported_mask.cpp, which ctest compiles
    without torch, still holds the exporter's own output);
  - a LLaMA-style module that states its RoPE (rope_theta, partial_rotary_factor, rope_pairing)
    gets it in the header (NAME_ROPE_BASE, NAME_ROPE_PAIRING, NAME_ROPE_DIMS, name_rope(),
    Rope::kYes), and MultiHeadAttention with set_rope(name_rope()) computes its forward;
and that everything the exporter cannot represent is refused with exit status 2 and one line
(a missing or bad --mask, an --out folder that does not exist, a Python without torch, a state
dict's key prefix, which the message names), and that --mask's notes reach stderr.

--quant int8 (class Int8 and the q_* cases, which also go through every check above): the
exporter's quantiser agrees bit for bit with microattn::quantize_int8() (random matrices, an
all-zero column, a huge weight, exact .5 steps, saturation, denormal and FLT_MAX columns), every
int8 header holds exactly what quantize_int8() makes of the module's weights, its error report
(stderr, header comment) matches QuantError, MultiHeadAttention<Config<..., WeightType::kInt8>>
computes what the module with the dequantised weights s*q computes (the fp32 tolerance), and
the error against the original fp32 module is printed; an int8 header with an fp32 Config (and
the reverse) fails to compile with the WeightType static_assert.

Without python3-torch it prints the reason and exits 77 (ctest SKIP_RETURN_CODE).

  /usr/bin/python3 tests/python/test_export_pytorch.py [--cc gcc] [--cxx g++]
      [--xsimd-include /usr/include] [--work-dir DIR] [unittest options]
"""
import collections
import contextlib
import copy
import io
import math
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (tools/, tests/python/)
import export_test_setup as setup  # noqa: E402

HERE = setup.HERE
OPT, UNITTEST_ARGS = setup.options(__doc__)
setup.require_torch()
import torch  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(OPT.source_dir, "tools"))
import export_pytorch as ex  # noqa: E402
import llama_like  # noqa: E402

TOOL = os.path.join(OPT.source_dir, "tools", "export_pytorch.py")
INCLUDE = os.path.join(OPT.source_dir, "include")
WARN = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
EPS = 2.0 ** -24  # float's unit roundoff
WORK = None       # set up in setUpModule
RESULTS = {}      # what setUpModule compiled and ran, checked by the tests


# --- exact float32 literal semantics ----------------------------------------------------------

LITERAL = re.compile(r"-?(?:\d+\.\d*(?:e[+-]?\d+)?|\d+e[+-]?\d+)f")
F32_MAX_BITS = 0x7F7FFFFF


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f32_exact(bits):
    return Fraction(struct.unpack("<f", struct.pack("<I", bits))[0])


# At or beyond FLT_MAX + half its ulp (2^104 / 2), a literal rounds to infinity.
F32_OVERFLOW = f32_exact(F32_MAX_BITS) + Fraction(2) ** 103


def literal_bits(lit):
    """The float32 bits a C/C++ compiler gives `lit`: its decimal value rounded to nearest, ties
    to even, computed exactly (Python's float() would round to a double first)."""
    text = lit[:-1]
    neg = text.startswith("-")
    q = Fraction(text.lstrip("-"))
    if q >= F32_OVERFLOW:
        bits = 0x7F800000
    else:
        c = f32_bits(min(float(q), 3.4028234663852886e38))  # nearest or next to it
        best = None
        for b in (c - 1, c, c + 1):
            if 0 <= b <= F32_MAX_BITS:
                d = abs(f32_exact(b) - q)
                if best is None or d < best[0] or (d == best[0] and b % 2 == 0):
                    best = (d, b)
        bits = best[1]
    return bits | (0x80000000 if neg else 0)


ARRAY = re.compile(r"MICROATTN_EXPORT_ALIGN16 static const (?:float|int8_t) (\w+)\[(\d+)\] = "
                   r"\{([^}]*)\};")
INT8_LITERAL = re.compile(r"-?(?:0|[1-9]\d*)")


def parse_arrays(text):
    """{name: [literal, ...]} from a generated header (float and int8_t arrays), checking each
    declared length."""
    out = {}
    for name, n, body in ARRAY.findall(text):
        lits = [s.strip() for s in body.split(",")]
        assert len(lits) == int(n), f"{name}: {len(lits)} literals, declared {n}"
        out[name] = lits
    return out


def parse_macros(text):
    return dict(re.findall(r"^#define (\w+) (.*?)(?: /\*.*\*/)?$", text, re.M))


# --- the modules ------------------------------------------------------------------------------

def causal(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = masked


def argv_mask(argv):
    """(causal, window) of a case's --mask: causal=False for none, window W or None (and
    causal for a case without --mask yet: make_cases adds --mask causal)."""
    if "--mask" not in argv:
        return True, None
    m = argv[argv.index("--mask") + 1]
    if m.startswith("window:"):
        return True, int(m.split(":")[1])
    return m == "causal", None


def randomise_biases(m, lo=-0.3, hi=0.3):
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n.endswith("bias"):
                p.uniform_(lo, hi)
    return m


# float32 values that broke the old "%.9g" literals or sit at the edges of the format:
# zero, whole numbers, -0.0, the largest float, the smallest denormal, ...
SPECIAL = [0.0, 1.0, -0.0, -2.0, 3.4e38, 1e-45, 3.4028234663852886e38, -3.4028234663852886e38,
           1.1754943508222875e-38, 1e-40, 0.1, 1.0 / 3.0, 16777217.0, 1e16, 1e-4, 123456.789,
           -1e-7, 2.0 ** -149 * 3, 65504.0, 1e15]


def special_mha():
    m = torch.nn.MultiheadAttention(16, 2)
    with torch.no_grad():
        for p in m.parameters():
            flat = p.view(-1)
            for i in range(flat.numel()):
                flat[i] = SPECIAL[(i * 7 + p.numel()) % len(SPECIAL)]
    return m


def attention_of(obj):
    """The module whose parameters the header holds (self_attn of a Transformer layer)."""
    if isinstance(obj, (torch.nn.TransformerEncoderLayer, torch.nn.TransformerDecoderLayer)):
        return obj.self_attn
    return obj


def pytorch_arrays(m):
    """role -> float32 numpy array in PyTorch's [out][in] layout, read from the module."""
    def arr(t):
        return t.detach().float().numpy()
    if isinstance(m, torch.nn.MultiheadAttention):
        E = m.embed_dim
        w = arr(m.in_proj_weight)
        d = {"wq": w[:E], "wk": w[E:2 * E], "wv": w[2 * E:], "wo": arr(m.out_proj.weight)}
        if m.in_proj_bias is not None:
            b = arr(m.in_proj_bias)
            d.update(bq=b[:E], bk=b[E:2 * E], bv=b[2 * E:])
        if m.out_proj.bias is not None:
            d["bo"] = arr(m.out_proj.bias)
        return d
    d = {}
    names = {"q": ("q_proj", "W_query"), "k": ("k_proj", "W_key"), "v": ("v_proj", "W_value"),
             "o": ("o_proj", "out_proj")}
    for r, cands in names.items():
        lin = next(getattr(m, n) for n in cands if hasattr(m, n))
        d[f"w{r}"] = arr(lin.weight)
        if lin.bias is not None:
            d[f"b{r}"] = arr(lin.bias)
    return d


def panel16(w):
    """[out][in] -> kPanel16 by weights.hpp's formula: W(i, o) at (o/16)*in*16 + i*16 + o%16,
    the last panel padded with zeros (same dtype as w: float32 or int8)."""
    out_dim, in_dim = w.shape
    dst = np.zeros((out_dim + 15) // 16 * 16 * in_dim, dtype=w.dtype)
    o = np.arange(out_dim)[:, None]
    i = np.arange(in_dim)[None, :]
    dst[(o // 16) * in_dim * 16 + i * 16 + o % 16] = w
    return dst


class Shape(collections.namedtuple("Shape", "d_model heads kv_heads d_head bias layout out_dim")):
    """What a header must state. bias: the projections with a bias, a subset of "qkvo" in that
    order ("qkvo", "qkv", "qvo", "o", ""); out_dim: W_O's width (None: d_model)."""

    def __new__(cls, d_model, heads, kv_heads, d_head, bias, layout, out_dim=None):
        assert bias in ("qkvo", "qkv", "qvo", "qko", "qk", "o", ""), bias
        return super().__new__(cls, d_model, heads, kv_heads, d_head, bias, layout,
                               out_dim or d_model)


def flags_expr(bias):
    """The Bias flags spelled one by one: kQ | kK | kV | kO (kNo for none)."""
    if not bias:
        return "microattn::Bias::kNo"
    return " | ".join(f"microattn::Bias::k{r.upper()}" for r in bias)


def suggested_bias(bias):
    """How the header's `// Use with` line spells the flags (kYes, kQkv, kNo, else with |)."""
    return {"qkvo": "microattn::Bias::kYes", "qkv": "microattn::Bias::kQkv",
            "": "microattn::Bias::kNo"}.get(bias, flags_expr(bias))


def mha_call(m, x):
    return m(x, x, x, attn_mask=causal(x.shape[0]), need_weights=False)[0]


def run_mha(module, x):
    """Forward of an nn.MultiheadAttention (or a Transformer layer's self_attn), causal."""
    return mha_call(attention_of(module), x)


def run_mha_unmasked(module, x):
    """The same without a mask: every token sees every token (an encoder's call)."""
    return attention_of(module)(x, x, x, need_weights=False)[0]


def mha_window(W):
    """run(module, x) of an nn.MultiheadAttention with a banded causal mask: token i sees
    i - W + 1 .. i (attn_mask True = masked)."""
    def run(module, x):
        return attention_of(module)(x, x, x, attn_mask=llama_like.banned(x.shape[0], True, W),
                                    need_weights=False)[0]
    return run


def run_plain(module, x):
    """Forward of a module taking x [T][d_model] (LlamaStyle, WhisperStyle)."""
    return module(x)


def run_batched(module, x):
    """Forward of a module taking x [batch][T][d_in] (the teaching notes' layer)."""
    return module(x.unsqueeze(0))[0]


def dequantised(module):
    """A copy of the module whose four weight matrices are replaced by their int8
    dequantisation s[o] * q(i, o) (float32), what an int8 header's layer must compute with."""
    m = copy.deepcopy(module)
    att = attention_of(m)

    def deq(w):
        q, s = ex.quantize_int8(w.detach().float().numpy())
        return torch.from_numpy(s[:, None] * q.astype(np.float32))

    with torch.no_grad():
        if isinstance(att, torch.nn.MultiheadAttention):
            E = att.embed_dim
            w = att.in_proj_weight
            att.in_proj_weight.copy_(torch.cat([deq(w[:E]), deq(w[E:2 * E]), deq(w[2 * E:])]))
            att.out_proj.weight.copy_(deq(att.out_proj.weight))
        else:
            for cands in (("q_proj", "W_query"), ("k_proj", "W_key"), ("v_proj", "W_value"),
                          ("o_proj", "out_proj")):
                lin = next(getattr(att, n) for n in cands if hasattr(att, n))
                lin.weight.copy_(deq(lin.weight))
    return m


class Case:
    """One module exported through the command line: argv (without --name/--out; with its
    --mask), the Shape the header must state, and for the forward run T and run(module, x) -> y
    (the module's own forward with the mask --mask names). With `--quant int8` in argv, an int8
    header (self.int8)."""

    def __init__(self, name, module, argv, shape, T=None, run=None, rope=None):
        self.name, self.module, self.argv, self.shape, self.T = name, module, argv, shape, T
        self.run = run
        self.rope = rope  # the RoPE the header must state: (base, RopePairing value, dims)
        self.header = self.text = self.err = None
        self.int8 = "--quant" in argv and argv[argv.index("--quant") + 1] == "int8"
        self.causal, self.window = argv_mask(argv)
        self._expected = None

    def wtype(self):
        """The Config options an int8 header and the mask need (nothing for fp32, causal)."""
        return (", microattn::WeightType::kInt8" if self.int8 else "") + self.mask_option()

    def mask_option(self):
        if self.window is not None:
            return f", microattn::SlidingWindow{{{self.window}}}"
        return "" if self.causal else ", microattn::Mask::kNone"

    def cfg(self, t_max=None, out_dim=False):
        """The matching Config with the Bias flags spelled one by one (the header suggests
        kYes/kQkv/kNo: both must be accepted); OutDim only when it differs from d_model, and
        the causal default Mask::kCausal unsaid, or both always with out_dim=True."""
        s = self.shape
        od = f", microattn::OutDim{{{s.out_dim}}}" if out_dim or s.out_dim != s.d_model else ""
        if out_dim and self.causal and self.window is None:
            od += ", microattn::Mask::kCausal"
        return (f"microattn::Config<{t_max or self.T or 1}, {s.d_model}, {s.heads}, "
                f"{s.kv_heads}, {s.d_head}, {flags_expr(s.bias)}{od}{self.wtype()}>")

    def suggested_cfg(self):
        """The Config line the header must suggest, with T_max left as a name."""
        s = self.shape
        od = f", microattn::OutDim{{{s.out_dim}}}" if s.out_dim != s.d_model else ""
        rope = ", microattn::Rope::kYes" if self.rope else ""
        return (f"microattn::Config<T_max, {s.d_model}, {s.heads}, {s.kv_heads}, {s.d_head}, "
                f"{suggested_bias(s.bias)}, microattn::OutProj::kYes{od}{rope}{self.wtype()}>")

    def expected(self):
        """role -> the array the header must hold (layout applied): float32, or for an int8
        header int8 matrices wq ... wo and float32 scales sq ... so (the exporter's quantiser,
        which class Int8 checks against microattn::quantize_int8)."""
        if self._expected is None:
            d = pytorch_arrays(attention_of(self.module))
            if self.int8:
                for r in ("wq", "wk", "wv", "wo"):
                    d[r], d["s" + r[1]] = ex.quantize_int8(d[r])
            if self.shape.layout == "kPanel16":
                d = {r: panel16(a) if r.startswith("w") else a for r, a in d.items()}
            order = ["wq", "sq", "wk", "sk", "wv", "sv", "wo", "so", "bq", "bk", "bv", "bo"]
            self._expected = {r: np.ascontiguousarray(d[r], dtype=np.int8 if d[r].dtype == np.int8
                                                      else np.float32).reshape(-1)
                              for r in order if r in d}
        return self._expected


def save(obj, name):
    path = os.path.join(WORK, name)
    torch.save(obj, path)
    return path


def prefixed(sd, prefix):
    return {prefix + k: v for k, v in sd.items()}


def make_cases():
    torch.manual_seed(20240611)
    cases = []
    # Fresh nn.MultiheadAttention: PyTorch zero-initialises both biases (the old exporter wrote
    # `0f` for them, which does not compile).
    mha = torch.nn.MultiheadAttention(64, 4)
    cases.append(Case("l_mha", mha, ["--module", save(mha, "mha.pt")],
                      Shape(64, 4, 4, 16, "qkvo", "kOutIn"), T=9, run=run_mha))
    mha_rb = randomise_biases(torch.nn.MultiheadAttention(64, 4))
    cases.append(Case("l_mha_sd", mha_rb,
                      ["--state-dict", save(mha_rb.state_dict(), "mha_rb_sd.pt"), "--heads", "4"],
                      Shape(64, 4, 4, 16, "qkvo", "kOutIn"), T=9, run=run_mha))
    nob = torch.nn.MultiheadAttention(32, 2, bias=False)
    cases.append(Case("l_mha_nobias", nob, ["--module", save(nob, "mha_nobias.pt")],
                      Shape(32, 2, 2, 16, "", "kOutIn"), T=5, run=run_mha))
    p16 = randomise_biases(torch.nn.MultiheadAttention(32, 2))
    cases.append(Case("l_mha_p16", p16, ["--module", save(p16, "mha_p16.pt"), "--layout",
                                         "panel16"],
                      Shape(32, 2, 2, 16, "qkvo", "kPanel16"), T=5, run=run_mha))
    # nn.MultiheadAttention's two bias tensors on their own: in_proj_bias without out_proj.bias
    # (Bias::kQkv), and out_proj.bias alone (Bias::kO), from a state dict.
    mqkv = randomise_biases(torch.nn.MultiheadAttention(32, 4))
    mqkv.out_proj.bias = None
    cases.append(Case("l_mha_qkv", mqkv, ["--module", save(mqkv, "mha_qkv.pt")],
                      Shape(32, 4, 4, 8, "qkv", "kOutIn"), T=6, run=run_mha))
    mo = torch.nn.MultiheadAttention(32, 2, bias=False)
    mo.out_proj.bias = torch.nn.Parameter(torch.rand(32) - 0.5)
    cases.append(Case("l_mha_o_sd", mo,
                      ["--state-dict", save(mo.state_dict(), "mha_o_sd.pt"), "--heads", "2"],
                      Shape(32, 2, 2, 16, "o", "kOutIn"), T=6, run=run_mha))
    # A stock TransformerEncoderLayer, its self_attn exported with --mask none and compared with
    # the unmasked call an encoder makes (the old exporter named a causal Config for it: relative
    # error 1.7). Biases randomised, so that they count too.
    enc = randomise_biases(torch.nn.TransformerEncoderLayer(32, 2, dim_feedforward=64))
    cases.append(Case("l_enc", enc, ["--module", save(enc, "enc.pt"), "--mask", "none"],
                      Shape(32, 2, 2, 16, "qkvo", "kOutIn"), T=7, run=run_mha_unmasked))
    # The same kind of layer fresh (zero biases), from a state dict, as kPanel16.
    enc16 = torch.nn.TransformerEncoderLayer(32, 2, dim_feedforward=64)
    cases.append(Case("l_enc_sd_p16", enc16,
                      ["--state-dict", save(enc16.state_dict(), "enc16_sd.pt"),
                       "--prefix", "self_attn.", "--heads", "2", "--layout", "panel16",
                       "--mask", "none"],
                      Shape(32, 2, 2, 16, "qkvo", "kPanel16"), T=12, run=run_mha_unmasked))
    # A Whisper-style encoder self-attention (is_causal False; biases on Q, V, O).
    wenc = randomise_biases(llama_like.WhisperStyleAttention(32, 4, causal=False))
    cases.append(Case("l_whisper_enc", wenc, ["--module", save(wenc, "whisper_enc.pt"),
                                              "--mask", "none"],
                      Shape(32, 4, 4, 8, "qvo", "kOutIn"), T=9, run=run_plain))
    # Sliding windows: a Mistral-style GQA layer whose config says sliding_window 4, T 13 (so
    # most rows see only part of the causal triangle), against its own banded forward; the
    # module-attribute style with W 1 (each token sees itself only); nn.MultiheadAttention's
    # state dict with window 3, against attn_mask = the band; and int8 with a window.
    win = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="config", window=4)
    cases.append(Case("l_window", win, ["--module", save(win, "window.pt"), "--mask", "window:4"],
                      Shape(32, 4, 2, 8, "", "kOutIn"), T=13, run=run_plain))
    win1 = llama_like.LlamaStyleAttention(16, 2, 1, 8, attrs="module", window=1, bias=True)
    randomise_biases(win1)
    cases.append(Case("l_window1", win1, ["--module", save(win1, "window1.pt"),
                                          "--mask", "window:1"],
                      Shape(16, 2, 1, 8, "qkvo", "kOutIn"), T=6, run=run_plain))
    mwin = randomise_biases(torch.nn.MultiheadAttention(32, 4))
    cases.append(Case("l_mha_window_sd", mwin,
                      ["--state-dict", save(mwin.state_dict(), "mha_window_sd.pt"), "--heads", "4",
                       "--mask", "window:3"],
                      Shape(32, 4, 4, 8, "qkvo", "kOutIn"), T=10, run=mha_window(3)))
    q_win = llama_like.LlamaStyleAttention(32, 2, 1, 16, attrs="config", window=5)
    cases.append(Case("q_window_p16", q_win, ["--module", save(q_win, "q_window.pt"),
                                              "--mask", "window:5", "--quant", "int8",
                                              "--layout", "panel16"],
                      Shape(32, 2, 1, 16, "", "kPanel16"), T=11, run=run_plain))
    # A decoder stack: --path picks one layer.
    dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(32, 4, 64), 2)
    randomise_biases(dec)
    layer1 = dec.layers[1]
    cases.append(Case("l_dec", layer1, ["--module", save(dec, "dec.pt"), "--path", "layers.1"],
                      Shape(32, 4, 4, 8, "qkvo", "kOutIn"), T=6, run=run_mha))
    # LLaMA-style GQA, shape as attributes; d_head 10 != d_model / H.
    gqa = llama_like.LlamaStyleAttention(48, 6, 2, 10, attrs="module")
    cases.append(Case("l_gqa", gqa, ["--module", save(gqa, "gqa.pt")],
                      Shape(48, 6, 2, 10, "", "kOutIn"), T=11, run=run_plain))
    # Its state dict inside a bigger one: --heads only, key/value heads from the key rows.
    cases.append(Case("l_gqa_sd", gqa,
                      ["--state-dict", save(prefixed(gqa.state_dict(), "model.layers.0.self_attn."),
                                            "gqa_sd.pt"),
                       "--prefix", "model.layers.0.self_attn.", "--heads", "6"],
                      Shape(48, 6, 2, 10, "", "kOutIn"), T=11, run=run_plain))
    # Shape in a .config, all four biases, MQA, kPanel16.
    cfg = randomise_biases(llama_like.LlamaStyleAttention(32, 4, 1, 16, bias=True,
                                                          attrs="config"))
    cases.append(Case("l_cfg_p16", cfg, ["--module", save(cfg, "cfg.pt"), "--layout", "panel16"],
                      Shape(32, 4, 1, 16, "qkvo", "kPanel16"), T=8, run=run_plain))
    # No shape attributes at all: --heads supplies it.
    bare = llama_like.LlamaStyleAttention(24, 3, 3, 8, attrs="none")
    cases.append(Case("l_bare", bare, ["--module", save(bare, "bare.pt"), "--heads", "3"],
                      Shape(24, 3, 3, 8, "", "kOutIn"), T=4, run=run_plain))
    # Qwen2-style: biases on q/k/v, none on o_proj (Bias::kQkv), GQA, shape in a .config, and
    # Hugging Face's `scaling` attribute (the default 1/sqrt(d_head)); then its state dict.
    qwen = randomise_biases(llama_like.LlamaStyleAttention(32, 4, 2, 8, biases="qkv",
                                                           attrs="config", scaling=8 ** -0.5))
    cases.append(Case("l_qwen2", qwen, ["--module", save(qwen, "qwen2.pt")],
                      Shape(32, 4, 2, 8, "qkv", "kOutIn"), T=10, run=run_plain))
    cases.append(Case("l_qwen2_sd", qwen,
                      ["--state-dict",
                       save(prefixed(qwen.state_dict(), "model.layers.3.self_attn."), "qwen2_sd.pt"),
                       "--prefix", "model.layers.3.self_attn.", "--heads", "4"],
                      Shape(32, 4, 2, 8, "qkv", "kOutIn"), T=10, run=run_plain))
    # Whisper-style: q_proj, v_proj, out_proj with biases, k_proj without (kQ | kV | kO); the
    # module as it is, and its state dict as kPanel16.
    wh = randomise_biases(llama_like.WhisperStyleAttention(32, 4))
    cases.append(Case("l_whisper", wh, ["--module", save(wh, "whisper.pt")],
                      Shape(32, 4, 4, 8, "qvo", "kOutIn"), T=7, run=run_plain))
    wh16 = randomise_biases(llama_like.WhisperStyleAttention(32, 2))
    cases.append(Case("l_whisper_sd_p16", wh16,
                      ["--state-dict", save(wh16.state_dict(), "whisper_sd.pt"), "--heads", "2",
                       "--layout", "panel16"],
                      Shape(32, 2, 2, 16, "qvo", "kPanel16"), T=7, run=run_plain))
    # The teaching notes' MultiHeadAttention(d_in 8, d_out 4, 2 heads of 2): W_query, W_key,
    # W_value Linear(8, 4) without bias, out_proj Linear(4, 4) with one: OutDim{4}, Bias::kO.
    notes = randomise_biases(llama_like.TeachingNotesAttention(8, 4, 16, 0.0, 2))
    cases.append(Case("l_notes", notes, ["--module", save(notes, "notes.pt")],
                      Shape(8, 2, 2, 2, "o", "kOutIn", out_dim=4), T=11, run=run_batched))
    # With qkv_bias, from its state dict (which also holds the `mask` buffer).
    notes_b = randomise_biases(llama_like.TeachingNotesAttention(8, 4, 16, 0.0, 2,
                                                                 qkv_bias=True))
    cases.append(Case("l_notes_sd", notes_b,
                      ["--state-dict", save(notes_b.state_dict(), "notes_sd.pt"), "--heads", "2"],
                      Shape(8, 2, 2, 2, "qkvo", "kOutIn", out_dim=4), T=11, run=run_batched))
    # kPanel16 with W_O wider than d_model (24 -> 32, not a multiple of 16: only d_head and
    # W_O's width need to be).
    notes16 = randomise_biases(llama_like.TeachingNotesAttention(24, 32, 16, 0.0, 2,
                                                                 qkv_bias=True))
    cases.append(Case("l_notes_p16", notes16, ["--module", save(notes16, "notes_p16.pt"),
                                               "--layout", "panel16"],
                      Shape(24, 2, 2, 16, "qkvo", "kPanel16", out_dim=32), T=6,
                      run=run_batched))
    # A module that scales scores itself (`scaling` 0.125, not 1/sqrt(16)): the forward program
    # calls attn.set_scale(kScale), as the header says to.
    scaled = llama_like.LlamaStyleAttention(32, 2, 2, 16, attrs="module", scaling=0.125)
    cases.append(Case("l_scaled", scaled, ["--module", save(scaled, "scaled.pt")],
                      Shape(32, 2, 2, 16, "", "kOutIn"), T=5, run=run_plain))
    # RoPE stated by the module, applied in its forward: transformers-style (config.rope_theta,
    # partial_rotary_factor 0.5: the first 4 of 8 dimensions, half-split), in fp32 and int8;
    # tools/train_tiny_lm.py-style (rope_theta and rope_pairing "adjacent" on the module). A
    # small base, so that the rotation turns far within T tokens.
    rope_h = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="config", rope_theta=50.0,
                                            partial_rotary_factor=0.5)
    cases.append(Case("l_rope_half", rope_h, ["--module", save(rope_h, "rope_half.pt")],
                      Shape(32, 4, 2, 8, "", "kOutIn"), T=9, run=run_plain, rope=(50.0, 1, 4)))
    rope_a = llama_like.LlamaStyleAttention(32, 2, 1, 16, attrs="module", rope_theta=10000.0,
                                            rope_pairing="adjacent")
    cases.append(Case("l_rope_adj", rope_a, ["--module", save(rope_a, "rope_adj.pt")],
                      Shape(32, 2, 1, 16, "", "kOutIn"), T=12, run=run_plain,
                      rope=(10000.0, 0, 16)))
    cases.append(Case("q_rope_half", rope_h, ["--module", save(rope_h, "rope_half.pt"),
                                              "--quant", "int8"],
                      Shape(32, 4, 2, 8, "", "kOutIn"), T=9, run=run_plain, rope=(50.0, 1, 4)))
    # Values at the edges of the literal format (compiled and compared bit for bit, not run).
    sp = special_mha()
    cases.append(Case("l_special", sp, ["--module", save(sp, "special.pt")],
                      Shape(16, 2, 2, 8, "qkvo", "kOutIn")))
    # float16 weights are exact in float32.
    half = llama_like.LlamaStyleAttention(16, 2, 1, 8, attrs="module").half()
    cases.append(Case("l_half", half, ["--module", save(half, "half.pt")],
                      Shape(16, 2, 1, 8, "", "kOutIn")))
    # --quant int8: fresh nn.MultiheadAttention (zero biases) as kOutIn, one with biases as
    # kPanel16, the LLaMA-style GQA layer above as kOutIn and one with d_head 16 as kPanel16,
    # a Qwen2-style state dict (biases on Q, K, V only); each run forward against the module
    # with the dequantised weights.
    q_mha = torch.nn.MultiheadAttention(64, 4)
    cases.append(Case("q_mha", q_mha, ["--module", save(q_mha, "q_mha.pt"), "--quant", "int8"],
                      Shape(64, 4, 4, 16, "qkvo", "kOutIn"), T=9, run=run_mha))
    q_p16 = randomise_biases(torch.nn.MultiheadAttention(32, 2))
    cases.append(Case("q_mha_p16", q_p16, ["--module", save(q_p16, "q_mha_p16.pt"), "--layout",
                                           "panel16", "--quant", "int8"],
                      Shape(32, 2, 2, 16, "qkvo", "kPanel16"), T=5, run=run_mha))
    cases.append(Case("q_gqa", gqa, ["--module", save(gqa, "gqa.pt"), "--quant", "int8"],
                      Shape(48, 6, 2, 10, "", "kOutIn"), T=11, run=run_plain))
    q_gqa16 = llama_like.LlamaStyleAttention(64, 4, 2, 16, attrs="config")
    cases.append(Case("q_gqa_p16", q_gqa16, ["--module", save(q_gqa16, "q_gqa_p16.pt"),
                                             "--layout", "panel16", "--quant", "int8"],
                      Shape(64, 4, 2, 16, "", "kPanel16"), T=7, run=run_plain))
    cases.append(Case("q_qwen2_sd", qwen,
                      ["--state-dict", save(qwen.state_dict(), "q_qwen2_sd.pt"), "--heads", "4",
                       "--quant", "int8"],
                      Shape(32, 4, 2, 8, "qkv", "kOutIn"), T=10, run=run_plain))
    # The literal-edge values (zeros, FLT_MAX, denormals) quantised: compiled and compared with
    # quantize_int8, not run.
    cases.append(Case("q_special", sp, ["--module", save(sp, "special.pt"), "--quant", "int8"],
                      Shape(16, 2, 2, 8, "qkvo", "kOutIn")))
    for c in cases:  # the others are decoders' layers, run causally: --mask causal
        if "--mask" not in c.argv:
            c.argv += ["--mask", "causal"]
    return cases


# --- running things ---------------------------------------------------------------------------

def run_exporter(argv):
    """ex.main(argv) in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = ex.main(argv)
        except SystemExit as e:  # argparse usage errors
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def sh(cmd, timeout=600):
    r = subprocess.run(cmd, cwd=WORK, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def compilers(primary, others):
    """The given compiler plus the other family when installed, each binary once."""
    seen, out = set(), []
    for c in [primary] + others:
        p = shutil.which(c)
        if p and os.path.realpath(p) not in seen:
            seen.add(os.path.realpath(p))
            out.append(c)
    return out


def cxx_base(werror=True):
    flags = ["-std=c++17", *(WARN if werror else WARN[:-1]), "-I", INCLUDE]
    if OPT.xsimd_include:
        # After the system folders, not -isystem: xsimd's folder is often /usr/include itself,
        # and putting that first breaks libstdc++'s #include_next <math.h>.
        flags += ["-idirafter", OPT.xsimd_include]
    else:
        flags.append("-DMICROATTN_FORCE_SCALAR=1")
    return flags


def write(name, text):
    with open(os.path.join(WORK, name), "w") as f:
        f.write(text)
    return name


def c_programs(cases, fixture_header):
    """Two C translation units including every header; the program writes every array's bytes
    (compared with the module's float32 bits, or the int8 values and scales) and checks 16-byte
    alignment."""
    incs = "".join(f'#include "{c.header}"\n' for c in cases) + f'#include "{fixture_header}"\n'
    arrays = [(c, f"{c.name}_{r}") for c in cases for r in c.expected()]
    a = ["#include <stdint.h>", "#include <stdio.h>", incs,
         "const float* tu_b_first(void);",
         "static int dump(FILE* f, const void* p, size_t bytes, const char* name) {",
         "  if ((uintptr_t)p % 16) { printf(\"%s not 16-byte aligned\\n\", name); return 1; }",
         "  return fwrite(p, 1, bytes, f) != bytes;",
         "}",
         "int main(int argc, char** argv) {",
         "  FILE* f;",
         "  int bad = 0;",
         "  if (argc < 2 || !(f = fopen(argv[1], \"wb\"))) return 2;"]
    for _, n in arrays:
        a.append(f"  bad |= dump(f, {n}, sizeof {n}, \"{n}\");")
    a += ["  bad |= fclose(f) != 0;",
          f"  bad |= tu_b_first() == 0 || tu_b_first()[0] != {arrays[0][1]}[0];",
          "  return bad;", "}", ""]
    b = [incs, "const float* tu_b_first(void);",
         f"const float* tu_b_first(void) {{ return {arrays[0][1]}; }}", ""]
    return write("tu_a.c", "\n".join(a)), write("tu_b.c", "\n".join(b)), arrays


def cxx_programs(cases, fixture_header):
    """Two C++ translation units, each including every header (twice: include guards) and
    calling <name>_weights<Cfg>() with the matching Config."""
    incs = '#include "microattn/config.hpp"\n'
    incs += "".join(f'#include "{c.header}"\n#include "{c.header}"\n' for c in cases)
    incs += f'#include "{fixture_header}"\n'

    def checks(fn, out_dim):
        lines = [f"int {fn}() {{", "  int bad = 0;"]
        for c in cases:
            lines += [f"  {{ const auto w = {c.name}_weights<{c.cfg(out_dim=out_dim)}>();",
                      "    bad |= w.check() != microattn::Status::kOk;",
                      f"    bad |= w.layout != microattn::WeightLayout::{c.shape.layout};",
                      f"    bad |= w.w_q != {c.name}_wq || w.w_k != {c.name}_wk;",
                      f"    bad |= w.w_v != {c.name}_wv || w.w_o != {c.name}_wo;"]
            if c.int8:
                lines += [f"    bad |= w.s_q != {c.name}_sq || w.s_k != {c.name}_sk;",
                          f"    bad |= w.s_v != {c.name}_sv || w.s_o != {c.name}_so;"]
            for r in "qkvo":  # each bias the module has, and null for the others
                want = f"{c.name}_b{r}" if r in c.shape.bias else "nullptr"
                lines.append(f"    bad |= w.b_{r} != {want};")
            lines[-1] += " }"
        lines += ["  return bad;", "}"]
        return lines

    # tu_a names OutDim only where it differs from d_model, tu_b always (OutDim{d_model} is
    # the default spelled out, and Mask::kCausal for the causal headers).
    a = [incs, "int tu_b();", *checks("tu_a", False), "int main() { return tu_a() | tu_b(); }",
         ""]
    b = [incs, *checks("tu_b", True), ""]
    # A third that includes them all and uses nothing: no unused-variable/function warnings.
    c = [incs, "int tu_c();", "int tu_c() { return 0; }", ""]
    return (write("tu_a.cpp", "\n".join(a)), write("tu_b.cpp", "\n".join(b)),
            write("tu_c.cpp", "\n".join(c)))


def forward_program(cases):
    """One program running MultiHeadAttention<Cfg> over every forward case's header, with the
    Config each header suggests (its `// Use with` line, T_max = the case's T), the scale it
    states (attn.set_scale(name_shape::kScale), as the header tells a user to when the module
    does not use 1/sqrt(d_head)) and the RoPE it states (attn.set_rope(name_rope()))."""
    lines = ["#include <cstdio>", "", '#include "microattn/microattn.hpp"']
    lines += [f'#include "{c.header}"' for c in cases]
    lines += [
        "",
        "// x [T][d_model] from <dir>/<name>.x, y [T][out_dim] to <dir>/<name>.y; T = Cfg::kTMax.",
        "template <class Cfg>",
        "static int run(const microattn::Weights<Cfg>& w, float scale,",
        "               const microattn::RopeConfig& rope, const char* name, const char* dir) {",
        "  static microattn::MultiHeadAttention<Cfg> attn;",
        "  static float x[Cfg::kTMax * Cfg::kDModel], y[Cfg::kTMax * Cfg::kOutDim];",
        "  constexpr std::size_t nx = Cfg::kTMax * Cfg::kDModel, ny = Cfg::kTMax * Cfg::kOutDim;",
        "  char path[4096];",
        '  std::snprintf(path, sizeof path, "%s/%s.x", dir, name);',
        '  std::FILE* f = std::fopen(path, "rb");',
        "  if (!f || std::fread(x, sizeof(float), nx, f) != nx) return 1;",
        "  std::fclose(f);",
        "  microattn::Status s = attn.set_weights(w);",
        "  if (s == microattn::Status::kOk) s = attn.set_scale(scale);",
        "  if (s == microattn::Status::kOk) s = attn.set_rope(rope);",
        "  if (s == microattn::Status::kOk) s = attn.forward(x, Cfg::kTMax, y);",
        "  if (s != microattn::Status::kOk) {",
        '    std::printf("%s: %s\\n", name, microattn::to_string(s));',
        "    return 1;",
        "  }",
        '  std::snprintf(path, sizeof path, "%s/%s.y", dir, name);',
        '  f = std::fopen(path, "wb");',
        "  if (!f || std::fwrite(y, sizeof(float), ny, f) != ny) return 1;",
        "  return std::fclose(f) != 0;",
        "}",
        "",
        "int main(int argc, char** argv) {",
        "  if (argc < 2) return 2;",
        "  int bad = 0;"]
    for c in cases:
        cfg = header_cfg(c.text).replace("T_max", str(c.T))
        rope = f"{c.name}_rope()" if c.rope else "microattn::RopeConfig{}"  # {}: RoPE off
        lines.append(f"  bad |= run({c.name}_weights<{cfg}>(), {c.name}_shape::kScale, {rope},")
        lines.append(f'              "{c.name}", argv[1]);')
    lines += ["  return bad;", "}", ""]
    return write("forward.cpp", "\n".join(lines))


QUANT_CHECK = r"""// microattn::quantize_int8 on the matrices of a file, for the exporter's quantiser.
// quant_check IN OUT. IN: uint32 count, then per matrix uint32 out, uint32 in, float [out][in].
// OUT: per matrix, for from = kOutIn, kInOut and to = kInOut, kOutIn, kPanel16: int32 status,
// int8 q[weight_floats(to, in, out)], float scales[out], float max_abs, rms, rel.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "microattn/weights.hpp"

int main(int argc, char** argv) {
  using microattn::WeightLayout;
  if (argc < 3) return 2;
  std::FILE* f = std::fopen(argv[1], "rb");
  std::FILE* g = std::fopen(argv[2], "wb");
  std::uint32_t count = 0;
  if (!f || !g || std::fread(&count, 4, 1, f) != 1) return 2;
  for (std::uint32_t m = 0; m < count; ++m) {
    std::uint32_t dims[2];
    if (std::fread(dims, 4, 2, f) != 2) return 2;
    const std::size_t out = dims[0], in = dims[1];
    std::vector<float> w(out * in), t(out * in);
    if (std::fread(w.data(), sizeof(float), w.size(), f) != w.size()) return 2;
    for (std::size_t o = 0; o < out; ++o)
      for (std::size_t i = 0; i < in; ++i) t[i * out + o] = w[o * in + i];
    for (const WeightLayout from : {WeightLayout::kOutIn, WeightLayout::kInOut})
      for (const WeightLayout to :
           {WeightLayout::kInOut, WeightLayout::kOutIn, WeightLayout::kPanel16}) {
        std::vector<std::int8_t> q(microattn::weight_floats(to, in, out), 0x55);  // poisoned
        std::vector<float> s(out, -1.0f);
        microattn::QuantError e;
        const auto st = static_cast<std::int32_t>(microattn::quantize_int8(
            from == WeightLayout::kOutIn ? w.data() : t.data(), from, in, out, to, q.data(),
            s.data(), &e));
        const float err[3] = {e.max_abs, e.rms, e.rel};
        std::fwrite(&st, 4, 1, g);
        std::fwrite(q.data(), 1, q.size(), g);
        std::fwrite(s.data(), sizeof(float), s.size(), g);
        std::fwrite(err, sizeof(float), 3, g);
      }
  }
  std::fclose(f);
  return std::fclose(g) != 0;
}
"""


def int8_check_program(cases):
    """A C++ program that quantises each int8 case's original matrices (<dir>/<name>_<role>.f32,
    [out][in]) with microattn::quantize_int8 into the header's layout and compares the result
    with the header's int8 arrays and scales byte for byte; it prints
    `name role same|DIFFERENT max_abs rms rel` (QuantError) per matrix."""
    lines = ["#include <cstdint>", "#include <cstdio>", "#include <cstring>", "#include <vector>",
             "", '#include "microattn/weights.hpp"']
    lines += [f'#include "{c.header}"' for c in cases]
    lines += [
        "",
        "static int check(const char* dir, const char* name, const char* role, std::size_t in,",
        "                 std::size_t out, microattn::WeightLayout layout, const std::int8_t* q,",
        "                 std::size_t q_bytes, const float* s, std::size_t s_bytes) {",
        "  char path[4096];",
        '  std::snprintf(path, sizeof path, "%s/%s_%s.f32", dir, name, role);',
        "  std::vector<float> w(in * out);",
        '  std::FILE* f = std::fopen(path, "rb");',
        "  if (!f || std::fread(w.data(), sizeof(float), w.size(), f) != w.size()) {",
        '    std::printf("%s %s: cannot read %s\\n", name, role, path);',
        "    return 1;",
        "  }",
        "  std::fclose(f);",
        "  std::vector<std::int8_t> dq(microattn::weight_floats(layout, in, out), 0x55);",
        "  std::vector<float> ds(out, -1.0f);",
        "  microattn::QuantError e;",
        "  const microattn::Status st = microattn::quantize_int8(",
        "      w.data(), microattn::WeightLayout::kOutIn, in, out, layout, dq.data(), ds.data(), &e);",
        "  const bool same = st == microattn::Status::kOk && dq.size() == q_bytes &&",
        "                    ds.size() * sizeof(float) == s_bytes &&",
        "                    std::memcmp(dq.data(), q, q_bytes) == 0 &&",
        "                    std::memcmp(ds.data(), s, s_bytes) == 0;",
        '  std::printf("%s %s %s %.9g %.9g %.9g\\n", name, role, same ? "same" : "DIFFERENT",',
        "              static_cast<double>(e.max_abs), static_cast<double>(e.rms),",
        "              static_cast<double>(e.rel));",
        "  return !same;",
        "}",
        "",
        "int main(int argc, char** argv) {",
        "  if (argc < 2) return 2;",
        "  int bad = 0;"]
    for c in cases:
        n, N = c.name, c.name.upper()
        dims = {"q": (f"{N}_D_MODEL", f"{N}_HEADS * {N}_D_HEAD"),
                "k": (f"{N}_D_MODEL", f"{N}_KV_HEADS * {N}_D_HEAD"),
                "v": (f"{N}_D_MODEL", f"{N}_KV_HEADS * {N}_D_HEAD"),
                "o": (f"{N}_HEADS * {N}_D_HEAD", f"{N}_OUT_DIM")}
        for r, (i, o) in dims.items():
            lines.append(f'  bad |= check(argv[1], "{n}", "w{r}", {i}, {o}, {n}_shape::kLayout,')
            lines.append(f"               {n}_w{r}, sizeof {n}_w{r}, {n}_s{r}, sizeof {n}_s{r});")
    lines += ["  return bad;", "}", ""]
    return write("int8_check.cpp", "\n".join(lines))


def header_cfg(text):
    """The Config a header's `// Use with` line suggests."""
    m = re.search(r"^// Use with (microattn::Config<.*>)$", text, re.M)
    assert m, "no `// Use with microattn::Config<...>` line"
    return m.group(1)


# The exporter's layer output error line (--quant int8): int8 weights, then integer compute,
# each ||e|| / ||y|| and max |e| / max |y|.
LAYER_ERROR = (r"export_pytorch\.py: int8 layer output on 32 random N\(0, 1\) tokens, against "
               r"fp32 \(\|\|e\|\|/\|\|y\|\|, max \|e\| / max \|y\|\): int8 weights (\S+), (\S+); "
               r"with integer compute \(Compute::kInt8\) (\S+), (\S+)")
BIASES = "the exported weights' biases differ from the Config's Bias flags"
OUT_DIM = "the exported weights' W_O width differs from the Config's OutDim"
WEIGHT_TYPE = ("the exported weights' WeightType (fp32 / int8) differs from the Config's "
               "WeightType")
MASK = "the exported weights' mask differs from the Config's Mask"
WINDOW = "the exported weights' sliding window differs from the Config's SlidingWindow"
MISMATCHES = [
    # (what, header, Config, expected static_assert text)
    ("query heads", "l_mha", "Config<9, 64, 8, 4, 16, microattn::Bias::kYes>",
     "the exported weights' H (query heads) differs from the Config's H"),
    ("key/value heads (GQA header)", "l_gqa", "Config<11, 48, 6, 3, 10>",
     "the exported weights' H_kv (key/value heads) differs from the Config's H_kv"),
    ("key/value heads (MHA header)", "l_mha", "Config<9, 64, 4, 2, 16, microattn::Bias::kYes>",
     "the exported weights' H_kv (key/value heads) differs from the Config's H_kv"),
    ("d_head", "l_mha", "Config<9, 64, 4, 4, 8, microattn::Bias::kYes>",
     "the exported weights' d_head differs from the Config's d_head"),
    ("bias (Config without)", "l_mha", "Config<9, 64, 4, 4, 16, microattn::Bias::kNo>", BIASES),
    ("bias (Config with)", "l_gqa", "Config<11, 48, 6, 2, 10, microattn::Bias::kYes>", BIASES),
    ("bias (Qwen2 header, Config kYes)", "l_qwen2",
     "Config<10, 32, 4, 2, 8, microattn::Bias::kYes>", BIASES),
    ("bias (Qwen2 header, Config kNo)", "l_qwen2", "Config<10, 32, 4, 2, 8>", BIASES),
    ("bias (kQkv header, Config kQ | kK | kV | kO)", "l_mha_qkv",
     "Config<6, 32, 4, 4, 8, microattn::Bias::kQ | microattn::Bias::kK | microattn::Bias::kV | "
     "microattn::Bias::kO>", BIASES),
    ("bias (Whisper header, Config kYes)", "l_whisper",
     "Config<7, 32, 4, 4, 8, microattn::Bias::kYes>", BIASES),
    ("bias (Whisper header, Config kQkv)", "l_whisper",
     "Config<7, 32, 4, 4, 8, microattn::Bias::kQkv>", BIASES),
    ("bias (notes header, Config kQkv)", "l_notes",
     "Config<11, 8, 2, 2, 2, microattn::Bias::kQkv, microattn::OutDim{4}>", BIASES),
    ("W_O width (notes header, Config without OutDim)", "l_notes",
     "Config<11, 8, 2, 2, 2, microattn::Bias::kO>", OUT_DIM),
    ("W_O width (notes header, OutDim 8)", "l_notes",
     "Config<11, 8, 2, 2, 2, microattn::OutDim{8}, microattn::Bias::kO>", OUT_DIM),
    ("W_O width (MHA header, OutDim 32)", "l_mha",
     "Config<9, 64, 4, 4, 16, microattn::Bias::kYes, microattn::OutDim{32}>", OUT_DIM),
    ("d_model", "l_mha", "Config<9, 32, 4, 4, 16, microattn::Bias::kYes>",
     "the exported weights' d_model differs from the Config's d_model"),
    ("output projection", "l_gqa",
     "Config<11, 48, 6, 2, 10, microattn::Bias::kNo, microattn::OutProj::kNo>",
     "the exported weights' output projection (OutProj) differs from the Config's"),
    ("WeightType (int8 header, fp32 Config)", "q_mha",
     "Config<9, 64, 4, 4, 16, microattn::Bias::kYes>", WEIGHT_TYPE),
    ("WeightType (int8 kPanel16 header, Config WeightType::kF32)", "q_gqa_p16",
     "Config<7, 64, 4, 2, 16, microattn::WeightType::kF32>", WEIGHT_TYPE),
    ("WeightType (fp32 header, int8 Config)", "l_mha",
     "Config<9, 64, 4, 4, 16, microattn::Bias::kYes, microattn::WeightType::kInt8>", WEIGHT_TYPE),
    ("WeightType (fp32 GQA header, int8 Config)", "l_gqa",
     "Config<11, 48, 6, 2, 10, microattn::WeightType::kInt8>", WEIGHT_TYPE),
    # --mask: the weights fit any mask, so only the header's own static_asserts catch these.
    ("Mask (--mask none header, causal Config)", "l_enc",
     "Config<7, 32, 2, 2, 16, microattn::Bias::kYes>", MASK),
    ("Mask (--mask causal header, Mask::kNone Config)", "l_mha",
     "Config<9, 64, 4, 4, 16, microattn::Bias::kYes, microattn::Mask::kNone>", MASK),
    ("Mask (--mask window:4 header, Mask::kNone Config)", "l_window",
     "Config<13, 32, 4, 2, 8, microattn::Mask::kNone>", MASK),
    ("Mask (int8 --mask causal header, int8 Mask::kNone Config)", "q_mha",
     "Config<9, 64, 4, 4, 16, microattn::Bias::kYes, microattn::WeightType::kInt8, "
     "microattn::Mask::kNone>", MASK),
    ("SlidingWindow (--mask window:4 header, Config without)", "l_window",
     "Config<13, 32, 4, 2, 8>", WINDOW),
    ("SlidingWindow (--mask window:4 header, SlidingWindow{5})", "l_window",
     "Config<13, 32, 4, 2, 8, microattn::SlidingWindow{5}>", WINDOW),
    ("SlidingWindow (--mask causal header, SlidingWindow{4})", "l_gqa",
     "Config<11, 48, 6, 2, 10, microattn::SlidingWindow{4}>", WINDOW),
    ("SlidingWindow (--mask none header, SlidingWindow{7})", "l_enc",
     "Config<7, 32, 2, 2, 16, microattn::Bias::kYes, microattn::SlidingWindow{7}>", WINDOW),
]


def setUpModule():
    global WORK
    t0 = time.time()
    if OPT.work_dir:
        WORK = os.path.abspath(OPT.work_dir)
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
    else:
        WORK = tempfile.mkdtemp(prefix="export_pytorch_test_")
    cases = make_cases()
    for c in cases:
        c.header = f"{c.name}.h"
        rc, out, err = run_exporter(c.argv + ["--name", c.name, "--out",
                                              os.path.join(WORK, c.header)])
        if rc != 0:
            raise AssertionError(f"{c.name}: exporter failed ({rc}): {err}")
        c.err = err
        with open(os.path.join(WORK, c.header)) as f:
            c.text = f.read()
    with open(os.path.join(WORK, "fixtures.h"), "w") as f:
        f.write(ex.fixtures())
    RESULTS["cases"] = cases
    fwd = [c for c in cases if c.run is not None]
    for c in fwd:  # inputs in [-1, 1), and PyTorch's outputs for them
        c.module.eval()  # Transformer layers' self_attn has dropout 0.1 while training
        x = torch.rand(c.T, c.shape.d_model) * 2 - 1
        x.numpy().astype("<f4").tofile(os.path.join(WORK, f"{c.name}.x"))
        # An int8 header's layer is the module with the dequantised weights s * q.
        ref = dequantised(c.module) if c.int8 else c.module
        with torch.no_grad():
            c.y32 = c.run(ref, x).numpy().astype(np.float64)
            c.y64 = c.run(copy.deepcopy(ref).double(), x.double()).numpy()
            if c.int8:  # the original fp32 module, for the error int8 introduces
                c.y_fp32 = c.run(copy.deepcopy(c.module).double(), x.double()).numpy()
    q8 = [c for c in cases if c.int8]
    for c in q8:  # the module's own [out][in] matrices, for int8_check.cpp
        for r, w in pytorch_arrays(attention_of(c.module)).items():
            if r.startswith("w"):
                np.ascontiguousarray(w, dtype="<f4").tofile(os.path.join(WORK, f"{c.name}_{r}.f32"))

    # Every compile below, two at a time (the machine is shared).
    ccs = compilers(OPT.cc, ["gcc", "clang"])
    cxxs = compilers(OPT.cxx, ["g++", "clang++"])
    ca, cb, arrays = c_programs(cases, "fixtures.h")
    pa, pb, pc = cxx_programs(cases, "fixtures.h")
    fw = forward_program(fwd)
    qc, ic = write("quant_check.cpp", QUANT_CHECK), int8_check_program(q8)
    jobs = {}
    for i, cc in enumerate(ccs):
        jobs[("c", cc)] = [cc, "-std=c11", *WARN, "-O0", ca, cb, "-o", f"c_prog{i}"]
    for i, cxx in enumerate(cxxs):
        jobs[("cxx", cxx)] = [cxx, *cxx_base(), "-O0", pa, pb, pc, "-o", f"cxx_prog{i}"]
    # Without -Werror, like the project's own tests: GCC 12 warns (-Wmaybe-uninitialized) inside
    # its AVX-512 intrinsics as the kernels use them, which is not the header's doing; the header
    # itself is held to -Werror by the two-translation-unit builds above.
    jobs[("forward", OPT.cxx)] = [OPT.cxx, *cxx_base(werror=False), *shlex.split(OPT.cxx_flags),
                                  "-O1", fw,
                                  os.path.join(OPT.source_dir, "lib", "status.cpp"), "-o",
                                  "forward"]
    # The quantiser programs with the forward program's flags (-march=native in the project's
    # build: what a user's host build would quantise with).
    for key, src in (("quant_check", qc), ("int8_check", ic)):
        jobs[(key, OPT.cxx)] = [OPT.cxx, *cxx_base(), *shlex.split(OPT.cxx_flags), "-O2", src,
                                "-o", key]
    for i, (what, hdr, cfg, _) in enumerate(MISMATCHES):
        src = write(f"mismatch{i}.cpp", f'#include "microattn/config.hpp"\n#include "{hdr}.h"\n\n'
                    f"int main() {{ return {hdr}_weights<microattn::{cfg}>().w_q != nullptr; }}\n")
        jobs[("mismatch", i)] = [OPT.cxx, *cxx_base(), "-fsyntax-only", src]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(jobs, pool.map(sh, jobs.values())))
    RESULTS.update(compiled=done, ccs=ccs, cxxs=cxxs, arrays=arrays, forward_cases=fwd)
    for i, cc in enumerate(ccs):
        if done[("c", cc)][0] == 0:
            RESULTS[("c_run", cc)] = sh([f"./c_prog{i}", f"c_dump{i}.bin"])
    for i, cxx in enumerate(cxxs):
        if done[("cxx", cxx)][0] == 0:
            RESULTS[("cxx_run", cxx)] = sh([f"./cxx_prog{i}"])
    if done[("forward", OPT.cxx)][0] == 0:
        RESULTS["forward_run"] = sh(["./forward", WORK])
    if done[("int8_check", OPT.cxx)][0] == 0:
        RESULTS["int8_check_run"] = sh(["./int8_check", WORK])
    RESULTS["int8_cases"] = q8
    print(f"\n[setup: {len(cases)} headers exported, {len(jobs)} compiles "
          f"(C: {', '.join(ccs)}; C++: {', '.join(cxxs)}) in {time.time() - t0:.1f} s; "
          f"work dir {WORK}]", file=sys.stderr)


def byte_image(a):
    """An expected array's bytes as the compiled header holds them (little-endian float32, or
    int8)."""
    return a.tobytes() if a.dtype == np.int8 else a.astype("<f4").tobytes()


def compile_ok(key):
    rc, out = RESULTS["compiled"][key]
    assert rc == 0, f"{key} failed to compile:\n{out[:6000]}"


# --- the tests ----------------------------------------------------------------------------------

class HeaderShape(unittest.TestCase):
    def test_macros_state_the_module_shape(self):
        for c in RESULTS["cases"]:
            with self.subTest(case=c.name):
                s = c.shape
                N = c.name.upper()
                m = parse_macros(c.text)
                self.assertEqual(m[f"{N}_D_MODEL"], str(s.d_model))
                self.assertEqual(m[f"{N}_HEADS"], str(s.heads))
                self.assertEqual(m[f"{N}_KV_HEADS"], str(s.kv_heads))
                self.assertEqual(m[f"{N}_D_HEAD"], str(s.d_head))
                self.assertEqual(m[f"{N}_OUT_DIM"], str(s.out_dim))
                for r in "QKVO":
                    self.assertEqual(m[f"{N}_BIAS_{r}"], str(int(r.lower() in s.bias)), r)
                self.assertNotIn(f"{N}_HAS_BIAS", m)
                self.assertEqual(m[f"{N}_HAS_OUT_PROJ"], "1")
                self.assertEqual(m[f"{N}_LAYOUT"], {"kOutIn": "1", "kPanel16": "2"}[s.layout])
                self.assertEqual(m[f"{N}_LAYOUT_NAME"], f'"{s.layout}"')
                self.assertEqual(m[f"{N}_WEIGHT_TYPE"], "1" if c.int8 else "0")
                wt = "kInt8" if c.int8 else "kF32"
                self.assertIn(f"#define {N}_WEIGHT_TYPE {int(c.int8)} /* microattn::WeightType::"
                              f"{wt} */", c.text)
                self.assertIn("  static constexpr microattn::WeightType kWeightType = "
                              f"microattn::WeightType::{wt};", c.text)
                self.assertEqual("#include <stdint.h>" in c.text, c.int8)
                self.assertEqual(header_cfg(c.text), c.suggested_cfg())
                self.assertIn(f"static inline microattn::Weights<Cfg> {c.name}_weights()", c.text)
                self.assertNotIn("kHasBias", c.text)
                # The mask --mask chose: C macros, the shape struct, the comment.
                enum = "kCausal" if c.causal else "kNone"
                self.assertIn(f"#define {N}_MASK {int(not c.causal)} /* microattn::Mask::{enum} "
                              "*/", c.text)
                self.assertEqual(m[f"{N}_WINDOW"], str(c.window or 0))
                self.assertIn("  static constexpr microattn::Mask kMask = "
                              f"microattn::Mask::{enum};", c.text)
                self.assertIn(f"  static constexpr std::size_t kWindow = {N}_WINDOW;", c.text)
                arg = c.argv[c.argv.index("--mask") + 1]
                self.assertIn(f"// Mask (--mask {arg}): ", c.text)
                self.assertIn(f"(exported with --mask {arg}: ", c.text)

    def test_mask_comment_names_what_fits(self):
        """Each header says what token i sees and which entry points take that mask: KvAttention
        is offered for causal and window headers only (it does not compile with Mask::kNone)."""
        for c in RESULTS["cases"]:
            with self.subTest(case=c.name):
                comment = c.text.split("#ifndef")[0]
                self.assertIn("MultiHeadAttention", comment)
                if not c.causal:
                    self.assertIn("every token sees every token (microattn::Mask::kNone", comment)
                    self.assertIn("KvAttention is causal only", comment)
                    self.assertIn("ScaledDotProductAttention", comment)
                elif c.window:
                    self.assertIn(f"token i sees tokens i - {c.window - 1} .. i "
                                  f"(microattn::SlidingWindow{{{c.window}}}", comment)
                    self.assertIn("or KvAttention (prefill and decode; a ring-buffer", comment)
                else:
                    self.assertIn("token i sees tokens 0 .. i (microattn::Mask::kCausal", comment)
                    self.assertIn("or KvAttention (prefill and decode with a KV cache)", comment)
                self.assertNotIn("microattn computes causal attention", comment)
                self.assertNotIn("MultiHeadAttention applies none", comment)

    def test_suggested_bias_spelling(self):
        """kYes, kQkv and kNo by name; any other set as flags joined with |."""
        spell = {(): "microattn::Bias::kNo", ("bq", "bk", "bv"): "microattn::Bias::kQkv",
                 ("bq", "bk", "bv", "bo"): "microattn::Bias::kYes",
                 ("bq", "bv", "bo"): "microattn::Bias::kQ | microattn::Bias::kV | "
                                     "microattn::Bias::kO",
                 ("bo",): "microattn::Bias::kO", ("bk",): "microattn::Bias::kK"}
        for biases, want in spell.items():
            self.assertEqual(ex.bias_expr(biases), want)
        self.assertEqual(ex.bias_words(("bq", "bk", "bv")), "biases on Q, K and V (none on O)")
        self.assertEqual(ex.bias_words(("bq", "bv", "bo")), "biases on Q, V and O (none on K)")
        self.assertEqual(ex.bias_words(("bo",)), "biases on O (none on Q, K and V)")

    def test_partial_biases_and_out_dim_are_described(self):
        qwen = next(c for c in RESULTS["cases"] if c.name == "l_qwen2")
        self.assertIn("biases on Q, K and V (none on O)", qwen.text)
        self.assertIn("// Note: LLaMA-style layers usually apply RoPE", qwen.text)
        self.assertNotRegex(qwen.text, r"static const float l_qwen2_bo\b")
        wh = next(c for c in RESULTS["cases"] if c.name == "l_whisper")
        self.assertIn("biases on Q, V and O (none on K)", wh.text)
        self.assertIn("(q_proj/k_proj/v_proj/out_proj)", wh.text)
        self.assertNotIn("RoPE", wh.text)  # Whisper has no rotary embedding
        notes = next(c for c in RESULTS["cases"] if c.name == "l_notes")
        self.assertIn("(W_query/W_key/W_value/out_proj)", notes.text)
        self.assertIn("output projection to out_dim 4 (microattn::OutDim; not d_model)",
                      notes.text)
        self.assertIn("l_notes_wo [out_dim][H*d_head]", notes.text)
        self.assertIn("l_notes_bo [out_dim].", notes.text)
        self.assertIn("y has rows of L_NOTES_OUT_DIM = 4 floats, x of L_NOTES_D_MODEL = 8",
                      notes.text)
        self.assertIn("static_assert(sizeof(l_notes_bo) == sizeof(float) * L_NOTES_OUT_DIM",
                      notes.text)

    def test_module_scale_and_non_causal_are_stated(self):
        """A module that scales scores itself (Hugging Face's `scaling`) gets NAME_SCALE and a
        note to set it with attn.set_scale(); is_causal=False with --mask causal is pointed
        out."""
        m = llama_like.LlamaStyleAttention(32, 2, 2, 16)
        m.scaling, m.is_causal = 0.125, False
        text = ex.export_module(m, name="scaled", mask="causal")
        self.assertIn("#define SCALED_SCALE 0.125f", text)
        self.assertIn("not 1/sqrt(d_head): call attn.set_scale(SCALED_SCALE) once", text)
        self.assertIn("call attn.set_scale(kScale) once before forward.", text)
        self.assertNotIn("forward(x, T, y, SCALED_SCALE)", text)
        self.assertIn("is_causal=False", text)
        self.assertIn("if so, pass --mask none (this header: --mask causal)", text)
        plain = ex.export_module(llama_like.LlamaStyleAttention(32, 2, 2, 16), name="plain",
                                 mask="causal")
        self.assertIn("#define PLAIN_SCALE 0.25f", plain)
        self.assertNotIn("not 1/sqrt(d_head)", plain)
        self.assertNotIn("set_scale", plain)

    def test_transformer_layers_say_what_is_exported_and_their_mask(self):
        """The encoder exported with --mask none names Mask::kNone, the decoder with --mask
        causal the default; both say the mask is --mask's, not part of the weights."""
        for c in RESULTS["cases"]:
            if c.name in ("l_enc", "l_dec"):
                self.assertRegex(c.text, r"// Note: Transformer(Encoder|Decoder)Layer: only its "
                                         r"self-attention is exported.*the mask is --mask's")
        enc = next(c for c in RESULTS["cases"] if c.name == "l_enc")
        self.assertIn("// Mask (--mask none): every token sees every token", enc.text)
        self.assertTrue(header_cfg(enc.text).endswith(", microattn::Mask::kNone>"))
        dec = next(c for c in RESULTS["cases"] if c.name == "l_dec")
        self.assertIn("cross-attention", dec.text)
        self.assertIn("// Mask (--mask causal): token i sees tokens 0 .. i", dec.text)
        self.assertNotIn("Mask::kNone>", header_cfg(dec.text))

    def test_rope_settings_are_stated(self):
        """A module that states its RoPE (rope_theta, partial_rotary_factor, rope_pairing) gets
        it in the header as the latent header writes it: NAME_ROPE_BASE, NAME_ROPE_PAIRING,
        NAME_ROPE_DIMS, the shape struct's kRopeBase, kRopePairing, kRopeDims, name_rope(),
        Rope::kYes in the Config line and the set_rope call in the comment (the forward run
        uses them); a module that states none gets none of it, and the general note."""
        for c in RESULTS["cases"]:
            with self.subTest(case=c.name):
                N, m = c.name.upper(), parse_macros(c.text)
                if not c.rope:
                    self.assertNotIn(f"{N}_ROPE", c.text)
                    self.assertNotIn(f"{c.name}_rope()", c.text)
                    self.assertNotIn("Rope::kYes>", c.text)
                    continue
                base, pairing, dims = c.rope
                enum = ("kAdjacent", "kHalfSplit")[pairing]
                lit = m[f"{N}_ROPE_BASE"]
                self.assertTrue(lit.endswith("f") and np.float32(float(lit[:-1])) ==
                                np.float32(base), lit)
                self.assertEqual((m[f"{N}_ROPE_PAIRING"], m[f"{N}_ROPE_DIMS"]),
                                 (str(pairing), str(dims)))
                self.assertIn(f"#define {N}_ROPE_PAIRING {pairing} /* microattn::RopePairing::"
                              f"{enum} */", c.text)
                for line in (f"  static constexpr float kRopeBase = {N}_ROPE_BASE;",
                             "  static constexpr microattn::RopePairing kRopePairing = "
                             f"microattn::RopePairing::{enum};",
                             f"  static constexpr std::size_t kRopeDims = {N}_ROPE_DIMS;",
                             f"static inline microattn::RopeConfig {c.name}_rope() noexcept {{",
                             f"//   attn.set_rope({c.name}_rope()) once (the Config above has "
                             "microattn::Rope::kYes)."):
                    self.assertIn(line, c.text)
                self.assertIn(", microattn::Rope::kYes", header_cfg(c.text))
                self.assertNotIn("LLaMA-style layers usually apply RoPE", c.text)
        adj = next(c for c in RESULTS["cases"] if c.name == "l_rope_adj")
        self.assertIn("RopePairing::kAdjacent (the module's rope_pairing)", adj.text)
        self.assertIn("all 16 dimensions of each head", adj.text)
        half = next(c for c in RESULTS["cases"] if c.name == "l_rope_half")
        self.assertIn("RopePairing::kHalfSplit (Hugging Face's rotate_half", half.text)
        self.assertIn("the first 4 of 8 dimensions of each head", half.text)

    def test_rope_note_names_the_classes_that_have_set_rope(self):
        """MultiHeadAttention and KvAttention both have set_rope() (with Rope::kYes)."""
        qwen = next(c for c in RESULTS["cases"] if c.name == "l_qwen2")
        self.assertIn("give the Config microattn::Rope::kYes and call set_rope() on "
                      "MultiHeadAttention or KvAttention", qwen.text)
        for where in (ex.__doc__, ex.ROPE_NOTE):
            self.assertNotIn("applies none", where)
            self.assertNotIn("attention is causal", where)


class Literals(unittest.TestCase):
    def test_every_literal_round_trips_bit_exactly(self):
        """Parse each header's text and compare every literal, rounded as a compiler does, with
        struct.pack of the module's float32 values."""
        for c in RESULTS["cases"]:
            arrays = parse_arrays(c.text)
            exp = c.expected()
            self.assertEqual(sorted(arrays), sorted(f"{c.name}_{r}" for r in exp), c.name)
            for r, want in exp.items():
                lits = arrays[f"{c.name}_{r}"]
                with self.subTest(array=f"{c.name}_{r}"):
                    self.assertEqual(len(lits), want.size)
                    if want.dtype == np.int8:  # plain decimal integers in [-127, 127]
                        self.assertIn(f"static const int8_t {c.name}_{r}[", c.text)
                        for lit in lits:
                            self.assertRegex(lit, INT8_LITERAL)
                        self.assertEqual([int(v) for v in lits], want.tolist())
                        self.assertGreaterEqual(min(want), -127)
                        continue
                    for i, (lit, v) in enumerate(zip(lits, want)):
                        self.assertRegex(lit, LITERAL)
                        want_bits = struct.unpack("<I", struct.pack("<f", v))[0]
                        self.assertEqual(literal_bits(lit), want_bits,
                                         f"{c.name}_{r}[{i}] = {lit}, want {v!r}")

    def test_special_values(self):
        sp = next(c for c in RESULTS["cases"] if c.name == "l_special")
        lits = {lit for a in parse_arrays(sp.text).values() for lit in a}
        for lit in ("0.0f", "1.0f", "-0.0f", "-2.0f", "3.4e+38f", "1e-45f", "3.4028235e+38f",
                    "-3.4028235e+38f", "1e-40f"):
            self.assertIn(lit, lits)
        for bad in ("0f", "1f", "-0f", "inff", "-inff", "nanf"):
            self.assertNotIn(bad, lits)

    def test_random_bit_patterns(self):
        """20000 random finite float32 (a fifth of them denormal) through c_literals."""
        rng = np.random.default_rng(7)
        bits = rng.integers(0, 2 ** 32, 20000, dtype=np.uint64).astype(np.uint32)
        bits[::5] &= 0x807FFFFF  # denormals (and zeros)
        vals = bits.view(np.float32)
        vals = vals[np.isfinite(vals)]
        for lit, v in zip(ex.c_literals(vals), vals):
            self.assertRegex(lit, LITERAL)
            self.assertEqual(literal_bits(lit), int(v.view(np.uint32)), lit)

    def test_literal_checker_itself(self):
        """literal_bits really rounds to nearest-even without a detour through double."""
        self.assertEqual(literal_bits("1.0f"), 0x3F800000)
        self.assertEqual(literal_bits("-0.0f"), 0x80000000)
        self.assertEqual(literal_bits("1e-45f"), 1)
        self.assertEqual(literal_bits("7e-46f"), 0)          # below half the smallest denormal
        self.assertEqual(literal_bits("8e-46f"), 1)
        self.assertEqual(literal_bits("3.4028235e+38f"), 0x7F7FFFFF)
        # FLT_MAX + half an ulp - 1 is still FLT_MAX; the tie itself overflows (odd mantissa).
        self.assertEqual(literal_bits("340282356779733661637539395458142568447.0f"), 0x7F7FFFFF)
        self.assertEqual(literal_bits("340282356779733661637539395458142568448.0f"), 0x7F800000)
        self.assertEqual(literal_bits("3.40282357e+38f"), 0x7F800000)
        # 1 + 2^-24 is a tie between 1 and 1 + 2^-23: even wins (1.0).
        self.assertEqual(literal_bits("1.000000059604644775390625f"), 0x3F800000)
        self.assertEqual(literal_bits("1.000000059604644775390626f"), 0x3F800001)


class Compiles(unittest.TestCase):
    def test_c11_two_translation_units_and_exact_bits(self):
        for i, cc in enumerate(RESULTS["ccs"]):
            with self.subTest(compiler=cc):
                compile_ok(("c", cc))
                rc, out = RESULTS[("c_run", cc)]
                self.assertEqual(rc, 0, out)
                with open(os.path.join(WORK, f"c_dump{i}.bin"), "rb") as f:
                    dump = f.read()
                want = b"".join(byte_image(c.expected()[n[len(c.name) + 1:]])
                                for c, n in RESULTS["arrays"])
                self.assertEqual(len(dump), len(want))
                self.assertTrue(dump == want, "compiled arrays differ from the module's bits")

    def test_cxx17_two_translation_units(self):
        self.assertIn("g++", " ".join(RESULTS["cxxs"]) + " " + os.path.basename(OPT.cxx))
        for cxx in RESULTS["cxxs"]:
            with self.subTest(compiler=cxx):
                compile_ok(("cxx", cxx))
                rc, out = RESULTS[("cxx_run", cxx)]
                self.assertEqual(rc, 0, out)

    def test_mismatching_config_is_a_compile_error_naming_the_parameter(self):
        for i, (what, hdr, cfg, msg) in enumerate(MISMATCHES):
            with self.subTest(mismatch=what):
                rc, out = RESULTS["compiled"][("mismatch", i)]
                self.assertNotEqual(rc, 0, f"{hdr} with {cfg} compiled")
                self.assertIn(msg, out)


class Forward(unittest.TestCase):
    def test_matches_pytorch_with_the_exported_mask(self):
        """microattn's y, with the Config the header names (its --mask: causal, Mask::kNone or
        SlidingWindow{W}), against the module's own forward with that mask (causal; none for
        the encoders; the band for the windows), in float64 and float32.

        Tolerance, derived like tests/support/check.hpp: each output is a chain of about
        n = d_model (Q/K/V projection) + d_head (scores) + 2T (softmax sum, P·V) + H·d_head
        (output projection) float operations on terms of magnitude <= max(1, max|y|) (inputs in
        [-1, 1), PyTorch's default init), so |y - y64| <= 4·n·u·max(1, max|y|) with
        u = 2^-24; against PyTorch's own float32 run, twice that (both sides round)."""
        compile_ok(("forward", OPT.cxx))
        rc, out = RESULTS["forward_run"]
        self.assertEqual(rc, 0, out)
        for c in RESULTS["forward_cases"]:
            with self.subTest(case=c.name):
                D, H, dh = c.shape.d_model, c.shape.heads, c.shape.d_head
                y = np.fromfile(os.path.join(WORK, f"{c.name}.y"), dtype="<f4").astype(np.float64)
                self.assertEqual(c.y64.shape, (c.T, c.shape.out_dim))
                y = y.reshape(c.T, c.shape.out_dim)
                n = D + dh + 2 * c.T + H * dh
                tol = 4 * n * EPS * max(1.0, float(np.abs(c.y64).max()))
                e64 = float(np.abs(y - c.y64).max())
                e32 = float(np.abs(y - c.y32).max())
                print(f"  {c.name}: T {c.T}, max|y| {np.abs(c.y64).max():.3g}, "
                      f"|y - y64| {e64:.2e}, |y - y32| {e32:.2e}, tolerance {tol:.2e}"
                      + (" (int8: against the module with the dequantised weights)"
                         if c.int8 else ""), file=sys.stderr)
                self.assertLessEqual(e64, tol)
                self.assertLessEqual(e32, 2 * tol)
                self.assertGreater(float(np.abs(y).max()), 0.0)
                if c.int8:  # what int8 costs: against the original fp32 module (float64)
                    d = y - c.y_fp32
                    rel = float(np.linalg.norm(d) / np.linalg.norm(c.y_fp32))
                    mx = float(np.abs(d).max())
                    print(f"  {c.name}: int8 vs the fp32 layer: ||y - y_fp32||_F/||y_fp32||_F "
                          f"{rel:.2e}, max|y - y_fp32| {mx:.2e} (max|y_fp32| "
                          f"{np.abs(c.y_fp32).max():.3g})", file=sys.stderr)
                    self.assertLess(rel, 0.05)  # a sanity bound: 8-bit weights, not garbage

    def test_the_rope_matters(self):
        """The forward test has teeth for RoPE too: each RoPE case's module without its RoPE
        (what a header without the settings would have run) differs from its own forward by
        far more than the tolerance."""
        for c in RESULTS["forward_cases"]:
            if not c.rope:
                continue
            with self.subTest(case=c.name):
                plain = copy.deepcopy(dequantised(c.module) if c.int8 else c.module).double()
                plain._rope = None
                x = np.fromfile(os.path.join(WORK, f"{c.name}.x"), dtype="<f4")
                x = torch.from_numpy(x.reshape(c.T, c.shape.d_model)).double()
                with torch.no_grad():
                    y = c.run(plain, x).numpy()
                s = c.shape
                n = s.d_model + s.d_head + 2 * c.T + s.heads * s.d_head
                tol = 4 * n * EPS * max(1.0, float(np.abs(c.y64).max()))
                self.assertGreater(float(np.abs(y - c.y64).max()), 100 * tol)

    def test_the_mask_matters(self):
        """The test above has teeth: for every non-causal and window case, PyTorch's causal
        forward of the same weights (what a causal Config computes) differs from the module's
        own by far more than the tolerance (the issue: relative error 1.7 for an encoder), and
        every window case has rows that see less than the causal triangle (T > W)."""
        for c in RESULTS["forward_cases"]:
            if c.causal and c.window is None:
                continue
            with self.subTest(case=c.name):
                if c.window is not None:
                    self.assertGreater(c.T, c.window + 1)
                x = torch.from_numpy(np.fromfile(os.path.join(WORK, f"{c.name}.x"), dtype="<f4")
                                     .reshape(c.T, c.shape.d_model)).double()
                m = copy.deepcopy(dequantised(c.module) if c.int8 else c.module).double()
                att = attention_of(m)
                with torch.no_grad():
                    if isinstance(att, torch.nn.MultiheadAttention):
                        y_causal = mha_call(att, x).numpy()
                    else:
                        att._window = None  # llama_like's forward: causal, no band
                        att.is_causal = True
                        y_causal = c.run(m, x).numpy()
                H, dh = c.shape.heads, c.shape.d_head
                tol = 4 * (c.shape.d_model + dh + 2 * c.T + H * dh) * EPS * \
                    max(1.0, float(np.abs(c.y64).max()))
                diff = float(np.abs(y_causal - c.y64).max())
                rel = float(np.linalg.norm(y_causal - c.y64) / np.linalg.norm(c.y64))
                print(f"  {c.name}: a causal Config would be off by max {diff:.2e} "
                      f"(relative {rel:.2f}); tolerance {tol:.2e}", file=sys.stderr)
                self.assertGreater(diff, 1000 * tol)


# --- int8 ------------------------------------------------------------------------------------

TINY = 2.0 ** -149  # the smallest denormal


def saturating_amax(rng, n):
    """float32 values c > 0 for which c / float32(c / 127) > 127 in float32: the largest weight
    of such a column divides to more than 127 and must be clamped."""
    found = []
    while len(found) < n:
        c = rng.uniform(1.0, 2.0, 4096).astype(np.float32)
        r = c / (c / np.float32(127.0))
        found += [float(v) for v in c[r > np.float32(127.0)]]
    return found[:n]


def quant_matrices():
    """[out][in] float32 matrices on which the exporter's quantiser and
    microattn::quantize_int8 must agree bit for bit; rows are W's output columns."""
    rng = np.random.default_rng(2024)
    f32 = np.float32
    mats = []
    w = rng.standard_normal((37, 29)).astype(f32)  # 37 outputs: kPanel16 pads the last panel
    w[3] = 0.0                                     # an all-zero column: scale 0, q 0
    w[4] = -0.0                                    # all -0.0: scale +0
    w[5, 11] = 1e30                                # one huge weight: the rest round to 0
    w[6] = rng.uniform(-1e-3, 1e-3, 29)
    w[6, 2] = -3e4                                 # a huge negative one
    # Exact .5 steps: amax 127 gives scale 1 (r = w), 254 scale 2, 381 scale 3.
    halves = [127.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 126.5, -126.5, 63.5, -63.5, 100.5,
              -99.5, 0.49999997, -0.49999997, float(np.nextafter(f32(2.5), f32(0))),
              float(np.nextafter(f32(2.5), f32(9))), float(np.nextafter(f32(-126.5), f32(0))),
              -127.0, 0.0, -0.0, 3.0, 1.0, -1.0, 126.49999, 125.5, -125.5, 7.5, -7.5]
    w[7] = halves
    w[8] = [254.0] + [float(2 * k + 1) for k in range(-14, 14)]
    w[9] = [381.0] + [3.0 * (k + 0.5) for k in range(-14, 14)]
    # Saturation: columns whose largest weight divides to just above 127.
    sat = saturating_amax(rng, 6)
    for j, c in enumerate(sat[:4]):
        w[10 + j] = rng.uniform(-c, c, 29)
        w[10 + j, j] = c if j % 2 else -c
        w[10 + j, j + 5] = float(np.nextafter(f32(c), f32(0)))
    # Denormal scales: 200 tiny -> scale 2 tiny (r = k / 2: ties); 190 tiny -> 1.5 rounds to 1
    # tiny, too small (127 tiny < 190 tiny: the largest weight would clamp by 63 scales), so 2
    # tiny; 64 tiny -> scale 1 tiny; 63 tiny and 1 tiny -> 0 rounds to 0, too small, 1 tiny.
    for j, top in enumerate((200, 190, 64, 63, 1)):
        k = rng.integers(-top, top + 1, 29)
        k[0] = top
        w[14 + j] = k.astype(np.float64) * TINY
    w[19] = rng.uniform(-1.0, 1.0, 29) * 1.2e-38  # around the smallest normal
    w[19, 4] = 1.17549435e-38
    fmax = float(np.finfo(f32).max)
    w[20] = rng.uniform(-1.0, 1.0, 29) * 1e38
    w[20, 0], w[20, 1] = fmax, -fmax             # FLT_MAX / 127 as the scale
    w[21] = -w[7]
    mats.append(w)
    mats.append(rng.uniform(-0.2, 0.2, (16, 64)).astype(f32))  # whole panels
    for shape in ((1, 1), (1, 5), (5, 1), (33, 17)):
        mats.append(rng.standard_normal(shape).astype(f32))
    mats.append(np.array([[2.5], [-0.0], [sat[4]], [-sat[5]]], dtype=f32))
    # Random bit patterns (every finite float32, a fifth of them denormal) ...
    bits = rng.integers(0, 2 ** 32, 48 * 33, dtype=np.uint64).astype(np.uint32)
    bits[::5] &= 0x807FFFFF
    v = bits.view(f32)
    v[~np.isfinite(v)] = 1.0
    mats.append(v.reshape(48, 33).copy())
    # ... and magnitudes spread over 2^-20 .. 2^20 (most q neither 0 nor saturated).
    mag = np.exp2(rng.uniform(-20, 20, (20, 40))) * rng.choice([-1.0, 1.0], (20, 40))
    mats.append(mag.astype(f32))
    return mats


def expected_layout(q, layout):
    """An int8 [out][in] matrix in layout kInOut, kOutIn or kPanel16, flattened."""
    if layout == "kInOut":
        return np.ascontiguousarray(q.T).reshape(-1)
    if layout == "kOutIn":
        return q.reshape(-1)
    return panel16(q)


class Int8(unittest.TestCase):
    """--quant int8: the quantiser against microattn::quantize_int8, the headers against the
    module's weights, the error report, refusals. (The forward runs are in Forward, the
    WeightType compile errors in Compiles, the literals in Literals.)"""

    def test_python_quantiser_matches_cpp_quantize_int8_bit_for_bit(self):
        compile_ok(("quant_check", OPT.cxx))
        mats = quant_matrices()
        src, dst = os.path.join(WORK, "quant_in.bin"), os.path.join(WORK, "quant_out.bin")
        with open(src, "wb") as f:
            f.write(struct.pack("<I", len(mats)))
            for m in mats:
                f.write(struct.pack("<II", *m.shape))
                f.write(np.ascontiguousarray(m, dtype="<f4").tobytes())
        rc, out = sh(["./quant_check", src, dst])
        self.assertEqual(rc, 0, out)
        with open(dst, "rb") as f:
            data = f.read()
        pos, compared = 0, 0
        for mi, m in enumerate(mats):
            q, s = ex.quantize_int8(m)
            self.assertEqual((q.dtype, s.dtype), (np.int8, np.float32))
            err = ex.quant_error(m, q, s)
            out_dim, in_dim = m.shape
            for frm in ("kOutIn", "kInOut"):
                for to in ("kInOut", "kOutIn", "kPanel16"):
                    want_q = expected_layout(q, to)
                    st, = struct.unpack_from("<i", data, pos)
                    pos += 4
                    got_q = np.frombuffer(data, np.int8, want_q.size, pos)
                    pos += want_q.size
                    got_s = np.frombuffer(data, "<f4", out_dim, pos)
                    pos += 4 * out_dim
                    got_e = struct.unpack_from("<3f", data, pos)
                    pos += 12
                    with self.subTest(matrix=mi, shape=m.shape, frm=frm, to=to):
                        self.assertEqual(st, 0)
                        np.testing.assert_array_equal(got_q, want_q)
                        np.testing.assert_array_equal(got_s.view("<u4"), s.view(np.uint32))
                        # The error is a report, not bit-exact: the exporter computes it in
                        # float64, quantize_int8 in float (w - s*q rounded, or fused).
                        self.assert_error_close(got_e, err, float(np.abs(m).max()))
                    compared += want_q.size
        self.assertEqual(pos, len(data))
        print(f"  quantize_int8: {len(mats)} matrices x 6 layout pairs, {compared} int8 values "
              "and their scales identical", file=sys.stderr)

    def assert_error_close(self, cpp, py, wmax):
        """QuantError (float, from C++) against the exporter's float64 figures: within 1e-4
        relative plus a rounding of the largest weight (2^-23 wmax; 1e-6 for the relative
        norm); a C++ figure that overflowed (s * 127 > FLT_MAX for a weight at FLT_MAX, when
        w - s*q is not fused) is not compared."""
        for i, (got, want) in enumerate(zip(cpp, py)):
            if not math.isfinite(got):
                continue
            atol = 1e-6 if i == 2 else 2.0 ** -23 * wmax
            self.assertAlmostEqual(got, want, delta=1e-4 * want + atol, msg=f"{cpp} vs {py}")

    def test_quantiser_semantics(self):
        """What the cases of quant_matrices() must give, stated independently of the C++."""
        w = quant_matrices()[0]
        q, s = ex.quantize_int8(w)
        self.assertEqual(s[3], 0.0)
        self.assertEqual(q[3].tolist(), [0] * 29)
        self.assertEqual(s[4].view(np.uint32), 0)  # +0.0 for a column of -0.0
        self.assertEqual(q[5, 11], 127)
        self.assertEqual(np.count_nonzero(q[5]), 1)
        self.assertEqual(q[6, 2], -127)
        self.assertEqual(s[7], 1.0)
        self.assertEqual(q[7].tolist(), [127, 1, -1, 2, -2, 3, -3, 127, -127, 64, -64, 101, -100,
                                         0, 0, 2, 3, -126, -127, 0, 0, 3, 1, -1, 126, 126, -126,
                                         8, -8])
        self.assertEqual(q[21].tolist(), (-q[7]).tolist())
        self.assertEqual((s[8], s[9]), (2.0, 3.0))
        self.assertEqual(q[8].tolist(), [127] + [k + 1 if k >= 0 else k for k in range(-14, 14)])
        self.assertEqual(q[9].tolist(), [127] + [k + 1 if k >= 0 else k for k in range(-14, 14)])
        for j in range(4):  # saturation: the largest weight is clamped to +-127
            self.assertGreater(np.float32(abs(w[10 + j, j])) / s[10 + j], 127.0)
            self.assertEqual(abs(int(q[10 + j, j])), 127)
            self.assertLessEqual(int(np.abs(q[10 + j]).max()), 127)
        self.assertEqual((s[14], s[15], s[16]), (np.float32(2 * TINY), np.float32(2 * TINY),
                                                 np.float32(TINY)))
        self.assertEqual(q[15, 0], 95)  # 190 tiny / 2 tiny
        self.assertEqual((s[17], s[18]), (np.float32(TINY), np.float32(TINY)))
        self.assertEqual((q[17, 0], q[18, 0]), (63, 1))
        self.assertEqual(q[20, 0], 127)
        self.assertEqual(q[20, 1], -127)
        self.assertTrue(np.isfinite(s).all())
        self.assertTrue(np.isfinite(s * np.float32(127)).all())  # dequantises to a finite float
        self.assertLessEqual(int(np.abs(q.astype(np.int32)).max()), 127)  # never -128
        # |w - s q| <= s (1/2 + 2^-17) for every weight (the 2^-17: the rounding of w / s; a
        # clamped largest weight is off by at most 64 ulps of s), denormal scales included, all-
        # zero columns apart.
        e = np.abs(w.astype(np.float64) - s[:, None].astype(np.float64) * q.astype(np.float64))
        bound = s[:, None].astype(np.float64) * (0.5 + 2.0 ** -17)
        nz = s[:, None] > 0
        self.assertTrue(np.all((e <= bound)[np.broadcast_to(nz, e.shape)]))

    def test_headers_hold_what_quantize_int8_makes_of_the_module(self):
        """int8_check.cpp quantises each case's original matrices with
        microattn::quantize_int8 into the header's layout: the header's int8 arrays and scales
        are byte for byte the same; the errors it reports are the ones in the header comment
        and on the exporter's stderr."""
        compile_ok(("int8_check", OPT.cxx))
        rc, out = RESULTS["int8_check_run"]
        self.assertEqual(rc, 0, out)
        rows = [ln.split() for ln in out.splitlines()]
        cases = RESULTS["int8_cases"]
        self.assertEqual(len(rows), 4 * len(cases), out)
        names = {"wq": "W_Q", "wk": "W_K", "wv": "W_V", "wo": "W_O"}
        for c in cases:
            comment = {m[0]: m[1:] for m in re.findall(
                r"^//   (W_[QKVO]) (\S+), (\S+), (\S+)$", c.text, re.M)}
            report = {m[0]: m[1:] for m in re.findall(
                r"^export_pytorch\.py: int8 (W_[QKVO]) \(out \d+, in \d+\): max \|w - s\*q\| "
                r"(\S+), rms (\S+), \|\|W - Wq\|\|_F/\|\|W\|\|_F (\S+)$", c.err, re.M)}
            self.assertEqual(len(c.err.splitlines()), 5, c.err)  # 4 matrices, the layer
            self.assertRegex(c.err.splitlines()[4], LAYER_ERROR)
            for r, nm in names.items():
                row = next(x for x in rows if x[:2] == [c.name, r])
                with self.subTest(case=c.name, matrix=nm):
                    self.assertEqual(row[2], "same", out)
                    cpp = [float(v) for v in row[3:6]]
                    self.assertEqual([float(v) for v in comment[nm]],
                                     [float(v) for v in report[nm]])
                    w = pytorch_arrays(attention_of(c.module))[r]
                    want = ex.quant_error(w, *ex.quantize_int8(w))
                    for got, v in zip((float(x) for x in comment[nm]), want):  # 4 digits
                        self.assertAlmostEqual(got, v, delta=5e-4 * v)
                    self.assert_error_close(cpp, want, float(np.abs(w).max()))
                    if c.name != "q_special":  # FLT_MAX weights: s * 127 overflows, error inf
                        self.assertLess(cpp[2], 0.01)

    def test_report_and_fp32_headers(self):
        """Only --quant int8 writes to stderr; an fp32 header states WeightType kF32."""
        for c in RESULTS["cases"]:
            if not c.int8:
                self.assertEqual(c.err, "", c.name)
                self.assertNotIn("int8", c.text.split("#ifndef")[0], c.name)

    def test_default_is_quant_none(self):
        """--quant none is the default: the same text as without the option."""
        c = next(c for c in RESULTS["cases"] if c.name == "l_gqa")
        rc, out, err = run_exporter(c.argv + ["--name", c.name, "--quant", "none"])
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out, c.text)
        m = llama_like.LlamaStyleAttention(32, 2, 2, 16)
        self.assertEqual(ex.export_module(m, name="a", mask="causal"),
                         ex.export_module(m, name="a", quant="none", mask="causal"))
        report = []
        text = ex.export_module(m, name="a", quant="int8", report=report, mask="causal")
        self.assertIn("static const int8_t a_wq[1024]", text)
        self.assertEqual([ln.split(" ")[1] for ln in report],
                         ["W_Q", "W_K", "W_V", "W_O", "layer"])

    def test_layer_output_error_and_compute_option(self):
        """--quant int8 reports the layer's output error with int8 weights and with integer
        compute (stderr and the header comment, the same numbers); it is zero for unquantised
        weights and grows with the rows' quantisation. --compute int8 names Compute::kInt8 in
        the Config line, which compiles with the header; without --quant int8 it is refused."""
        torch.manual_seed(7)
        m = torch.nn.MultiheadAttention(64, 4, batch_first=True)
        report = []
        text = ex.export_module(m, name="lc", quant="int8", report=report, mask="causal",
                                compute="int8")
        got = re.fullmatch(LAYER_ERROR, "export_pytorch.py: " + report[4])
        self.assertIsNotNone(got, report[4])
        w8_rel, w8_max, int_rel, int_max = (float(v) for v in got.groups())
        self.assertIn(f"int8 weights {got.group(1)}, {got.group(2)}; with integer compute "
                      f"(Compute::kInt8) {got.group(3)}, {got.group(4)} (no RoPE).", text)
        # Per-column int8 weights of U(+-1/sqrt(64)) lose about 0.4 % per matrix; quantising
        # the rows too adds about as much again (Int8Compute.* in the C++ tests: 0.4 %).
        self.assertTrue(1e-3 < w8_rel < 0.02 and w8_rel < int_rel < 0.03, report[4])
        self.assertTrue(w8_max < 0.03 and int_max < 0.03, report[4])
        L = ex.layer_from_module(m, None, None, None, "m")
        ex.check_shapes(L, "outin")
        (e0, e1), (i0, i1) = ex.layer_output_error(L, ex.Mask.parse("causal"), dict(L.t))
        self.assertEqual((e0, e1), (0.0, 0.0))  # the fp32 weights themselves
        self.assertGreater(i0, 1e-3)            # only the rows' rounding
        cfg = header_cfg(text).replace("T_max", "8")
        self.assertIn("microattn::WeightType::kInt8, microattn::Compute::kInt8", cfg)
        src = write("compute_int8.cpp", "".join([
            f'#include "compute_int8.h"\n#include "microattn/microattn.hpp"\n',
            f"using Cfg = {cfg};\n",
            "static_assert(Cfg::kInt8Compute, \"the Config line asks for integer compute\");\n",
            "int main() {\n  static microattn::MultiHeadAttention<Cfg> a;\n",
            "  return a.set_weights(lc_weights<Cfg>()) == microattn::Status::kOk ? 0 : 1;\n}\n"]))
        write("compute_int8.h", text)
        rc, out = sh([OPT.cxx, *cxx_base(), "-O1", src, "-o", "compute_int8"])
        self.assertEqual(rc, 0, out)
        rc, out = sh(["./compute_int8"])
        self.assertEqual(rc, 0, out)
        with self.assertRaisesRegex(ex.Refusal, "--compute int8 needs --quant int8"):
            ex.export_module(m, name="lc", mask="causal", compute="int8")
        path = os.path.join(WORK, "compute_mha.pt")
        torch.save(m, path)
        rc, out, err = run_exporter(["--module", path, "--mask", "causal", "--compute", "int8"])
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, "export_pytorch.py: error: --compute int8 needs --quant int8 "
                              "(integer compute multiplies int8 weights)\n")


class Fixtures(unittest.TestCase):
    def test_fixtures_still_generate_the_committed_values(self):
        """--fixtures keeps working: same seed, same weights and inputs as the committed
        tests/data/pytorch_fixtures.h (PyTorch's outputs within float rounding)."""
        with open(os.path.join(OPT.source_dir, "tests", "data", "pytorch_fixtures.h")) as f:
            old = re.findall(r"const float (\w+)\[(\d+)\] = \{([^}]*)\};", f.read())
        with open(os.path.join(WORK, "fixtures.h")) as f:
            new = parse_arrays(f.read())
        self.assertEqual(sorted(n for n, _, _ in old), sorted(new))
        for name, _, body in old:
            a = np.array([float(s.strip().rstrip("f")) for s in body.split(",")])
            b = np.array([float(s[:-1]) for s in new[name]])
            with self.subTest(array=name):
                if name.endswith("_y"):
                    np.testing.assert_allclose(b, a, rtol=0, atol=1e-6)
                else:
                    np.testing.assert_array_equal(b.astype(np.float32), a.astype(np.float32))


class Refusals(unittest.TestCase):
    """Each: exit status 2, one line on stderr, nothing on stdout, no --out file."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(5)
        cls.d = os.path.join(WORK, "refusals")
        os.makedirs(cls.d, exist_ok=True)

    def file(self, obj, name):
        path = os.path.join(self.d, name)
        torch.save(obj, path)
        return path

    def refused(self, argv, *needles):
        """argv without --mask gets --mask causal (the refusals are about something else)."""
        out_path = os.path.join(self.d, "should_not_exist.h")
        if "--mask" not in argv:
            argv = argv + ["--mask", "causal"]
        rc, out, err = run_exporter(argv + ["--out", out_path])
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertFalse(os.path.exists(out_path))
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("export_pytorch.py: error: "), err)
        self.assertNotIn("Traceback", err)
        for n in needles:
            self.assertIn(n, err)
        return err

    def test_gqa_state_dict_with_wrong_kv_heads(self):
        gqa = llama_like.LlamaStyleAttention(48, 6, 2, 10)
        sd = self.file(gqa.state_dict(), "gqa_sd.pt")
        self.refused(["--state-dict", sd, "--heads", "6", "--kv-heads", "3"],
                     "--kv-heads 3 disagrees", "= 2 key/value heads")
        # Without --kv-heads the key rows give 2 (the old exporter assumed H_kv = H).
        rc, out, _ = run_exporter(["--state-dict", sd, "--heads", "6", "--mask", "causal"])
        self.assertEqual(rc, 0)
        self.assertIn("#define ATTN_KV_HEADS 2", out)

    def test_gqa_module_with_wrong_kv_heads(self):
        gqa = self.file(llama_like.LlamaStyleAttention(48, 6, 2, 10), "gqa.pt")
        self.refused(["--module", gqa, "--kv-heads", "6"], "num_key_value_heads = 2",
                     "--kv-heads = 6")

    def test_three_heads_on_a_four_head_module(self):
        mha = torch.nn.MultiheadAttention(64, 4)
        self.refused(["--state-dict", self.file(mha.state_dict(), "mha_sd.pt"), "--heads", "3"],
                     "64 rows, not a whole number of --heads 3")
        self.refused(["--module", self.file(mha, "mha.pt"), "--heads", "3"],
                     "num_heads = 4", "--heads = 3")

    def test_module_attributes_that_disagree_with_the_linears(self):
        m = llama_like.LlamaStyleAttention(48, 6, 2, 10)
        m.num_heads, m.num_key_value_groups = 4, 2  # 4 x head_dim 10 = 40 != 60 query rows
        self.refused(["--module", self.file(m, "wrong_heads.pt")], "60 rows",
                     "heads 4 x head_dim 10")
        m = llama_like.LlamaStyleAttention(48, 6, 2, 10, attrs="config")
        m.num_heads = 3  # attribute and config disagree
        self.refused(["--module", self.file(m, "two_heads.pt")], "num_heads = 3",
                     "config.num_attention_heads = 6")
        m = llama_like.LlamaStyleAttention(48, 6, 2, 10)
        m.num_key_value_heads = 3  # 3 does not divide 6... and 3 x 10 != 20 key rows
        self.refused(["--module", self.file(m, "wrong_kv.pt")], "key")
        m = llama_like.LlamaStyleAttention(48, 6, 2, 10, attrs="none")
        self.refused(["--module", self.file(m, "no_heads.pt")], "pass --heads")

    def test_rope_settings_the_header_cannot_state(self):
        """rope_scaling (YaRN, llama3 ...: microattn's RoPE has none), rope_theta stated twice
        differently, a partial_rotary_factor that rotates an odd number of dimensions, an
        unknown rope_pairing."""
        m = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="config", rope_theta=1e4)
        m.config.rope_scaling = {"rope_type": "llama3", "factor": 8.0}
        self.refused(["--module", self.file(m, "rope_scaling.pt")], "rope_scaling 'llama3'",
                     "no scaling")
        m = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="config", rope_theta=1e4)
        m.rope_theta = 5e5
        self.refused(["--module", self.file(m, "two_thetas.pt")], "conflicting RoPE base",
                     "config.rope_theta = 10000.0")
        m = llama_like.LlamaStyleAttention(32, 4, 2, 6, attrs="config", rope_theta=1e4,
                                           partial_rotary_factor=0.5)
        self.refused(["--module", self.file(m, "odd_dims.pt")], "partial_rotary_factor 0.5",
                     "rotates 3 dimensions")
        m = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="module", rope_theta=1e4,
                                           rope_pairing="interleaved")
        self.refused(["--module", self.file(m, "pairing.pt")], "rope_pairing 'interleaved'")

    def test_add_bias_kv(self):
        m = torch.nn.MultiheadAttention(32, 2, add_bias_kv=True)
        self.refused(["--module", self.file(m, "bias_kv.pt")], "add_bias_kv")
        self.refused(["--state-dict", self.file(m.state_dict(), "bias_kv_sd.pt"), "--heads", "2"],
                     "bias_k", "add_bias_kv")

    def test_add_zero_attn(self):
        m = torch.nn.MultiheadAttention(32, 2, add_zero_attn=True)
        self.refused(["--module", self.file(m, "zero_attn.pt")], "add_zero_attn")

    def test_kdim_differs_from_embed_dim(self):
        m = torch.nn.MultiheadAttention(32, 2, kdim=16, vdim=16)
        self.refused(["--module", self.file(m, "kdim.pt")], "kdim 16", "embed_dim 32")
        self.refused(["--state-dict", self.file(m.state_dict(), "kdim_sd.pt"), "--heads", "2"],
                     "kdim/vdim")

    def test_non_finite_weights_name_tensor_and_index(self):
        for bad, word in ((float("inf"), "inf"), (float("-inf"), "-inf"), (float("nan"), "nan")):
            m = torch.nn.MultiheadAttention(32, 2)
            with torch.no_grad():
                m.in_proj_weight[40, 7] = bad
            self.refused(["--module", self.file(m, "nonfinite.pt")],
                         f"in_proj_weight[40, 7] is {word}")
        g = llama_like.LlamaStyleAttention(48, 6, 2, 10)
        with torch.no_grad():
            g.o_proj.weight[3, 5] = float("nan")
        self.refused(["--state-dict", self.file(prefixed(g.state_dict(), "l.0."), "nan_sd.pt"),
                      "--prefix", "l.0.", "--heads", "6"], "l.0.o_proj.weight[3, 5] is nan")
        d = llama_like.LlamaStyleAttention(16, 2, 1, 8).double()
        with torch.no_grad():
            d.k_proj.bias = None
            d.q_proj.weight[1, 2] = 1e39  # finite in float64, not in float32
        self.refused(["--module", self.file(d, "f64.pt")], "q_proj.weight[1, 2]",
                     "beyond float32's range")

    def test_invalid_quant(self):
        m = self.file(torch.nn.MultiheadAttention(32, 2), "quant.pt")
        for bad in ("int4", "INT8", "", "int8 "):
            self.refused(["--module", m, "--quant", bad], f"--quant {bad!r}",
                         "none, int8, fp16, bf16")
        for half in ("fp16", "bf16"):  # model files only: a layer header's arrays are fp32 / int8
            self.refused(["--module", m, "--quant", half], f"--quant {half}: model files only")
        sd = self.file(torch.nn.MultiheadAttention(32, 2).state_dict(), "quant_sd.pt")
        self.refused(["--state-dict", sd, "--heads", "2", "--quant", "uint8"], "--quant 'uint8'")
        # Checked before anything is loaded: a missing file is not what is reported.
        self.refused(["--module", os.path.join(self.d, "missing.pt"), "--quant", "q4"],
                     "--quant 'q4'")
        # And the refusals of the fp32 export hold for int8 too.
        self.refused(["--module", self.file(llama_like.LlamaStyleAttention(48, 6, 2, 10),
                                            "gqa_q8_p16.pt"),
                      "--layout", "panel16", "--quant", "int8"], "d_head 10", "panel16")
        nan = torch.nn.MultiheadAttention(32, 2)
        with torch.no_grad():
            nan.out_proj.weight[1, 2] = float("nan")
        self.refused(["--module", self.file(nan, "nan_q8.pt"), "--quant", "int8"],
                     "out_proj.weight[1, 2] is nan")
        with self.assertRaises(ex.Refusal):
            ex.export_module(torch.nn.MultiheadAttention(32, 2), quant="int4", mask="causal")

    def test_panel16_needs_multiples_of_16(self):
        gqa = self.file(llama_like.LlamaStyleAttention(48, 6, 2, 10), "gqa_p16.pt")
        self.refused(["--module", gqa, "--layout", "panel16"], "d_head 10", "panel16")
        m = self.file(llama_like.LlamaStyleAttention(40, 2, 2, 16), "dmodel_p16.pt")
        self.refused(["--module", m, "--layout", "panel16"], "d_model 40")
        m = self.file(llama_like.LlamaStyleAttention(32, 2, 2, 16, out_dim=40), "odim_p16.pt")
        self.refused(["--module", m, "--layout", "panel16"], "W_O width (OutDim) 40")

    def test_output_projection_shapes(self):
        """W_O may be of any width (OutDim), but must take H * d_head inputs; nn.MultiheadAttention
        maps back to embed_dim; o_proj and out_proj together are ambiguous."""
        m = torch.nn.MultiheadAttention(32, 2)
        m.out_proj = torch.nn.Linear(32, 16)
        self.refused(["--module", self.file(m, "mha_out16.pt")], "output weight", "[16, 32]",
                     "[32, 32]")
        m = llama_like.LlamaStyleAttention(32, 4, 2, 8)
        m.o_proj = torch.nn.Linear(30, 32, bias=False)
        self.refused(["--module", self.file(m, "o_in30.pt")], "output weight", "[32, 30]",
                     "[32, 32]")
        m = llama_like.LlamaStyleAttention(32, 4, 2, 8)
        m.out_proj = torch.nn.Linear(32, 32)
        self.refused(["--module", self.file(m, "o_and_out.pt")], "both o_proj and out_proj")
        sd = llama_like.LlamaStyleAttention(32, 4, 2, 8).state_dict()
        sd["out_proj.weight"] = sd["o_proj.weight"]
        self.refused(["--state-dict", self.file(sd, "o_and_out_sd.pt"), "--heads", "4"],
                     "both o_proj and out_proj")
        notes = llama_like.TeachingNotesAttention(8, 4, 16, 0.0, 2)
        del notes.W_value
        self.refused(["--module", self.file(notes, "notes_no_v.pt")], "no v_proj or W_value")
        sd = llama_like.TeachingNotesAttention(8, 4, 16, 0.0, 2).state_dict()
        del sd["out_proj.weight"]
        self.refused(["--state-dict", self.file(sd, "notes_no_out_sd.pt"), "--heads", "2"],
                     "no 'o_proj.weight' or 'out_proj.weight'", "W_query.weight")


    def test_missing_keys_list_what_was_found(self):
        sd = llama_like.LlamaStyleAttention(48, 6, 2, 10).state_dict()
        del sd["o_proj.weight"]
        self.refused(["--state-dict", self.file(sd, "no_o.pt"), "--heads", "6"],
                     "no 'o_proj.weight'", "k_proj.weight, q_proj.weight, v_proj.weight")
        sd = torch.nn.MultiheadAttention(32, 2).state_dict()
        del sd["out_proj.weight"]
        self.refused(["--state-dict", self.file(sd, "no_out.pt"), "--heads", "2"],
                     "no 'out_proj.weight'", "in_proj_weight")
        full = self.file(prefixed(torch.nn.MultiheadAttention(32, 2).state_dict(), "enc.0."),
                         "prefixed.pt")
        self.refused(["--state-dict", full, "--heads", "2", "--prefix", "enc.1."],
                     "no keys under prefix 'enc.1.'", "enc.0.in_proj_weight")
        self.refused(["--state-dict", full, "--heads", "2", "--prefix", "enc."],
                     "no attention weights under 'enc.'", "0.in_proj_weight")

    def test_other_unrepresentable_modules_and_arguments(self):
        stack = self.file(torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(32, 2, 64), 2), "stack.pt")
        self.refused(["--module", stack], "TransformerEncoder",
                     "layers.0 (TransformerEncoderLayer)", "--path")
        self.refused(["--module", stack, "--path", "layers.7"], "no submodule 'layers.7'")
        normed = llama_like.LlamaStyleAttention(32, 4, 2, 8)
        normed.q_norm = torch.nn.LayerNorm(8)  # Qwen3/OLMo-style q/k norm
        self.refused(["--module", self.file(normed, "qnorm.pt")], "q_norm.weight",
                     "cannot represent")
        self.refused(["--module", self.file(torch.nn.Linear(4, 4), "linear.pt")], "Linear")
        self.refused(["--module", self.file(torch.nn.MultiheadAttention(32, 2).state_dict(),
                                            "sd_as_module.pt")], "--state-dict")
        self.refused(["--state-dict", self.file(torch.nn.MultiheadAttention(32, 2), "m.pt"),
                      "--heads", "2"], "not a plain state dict", "--module")
        self.refused(["--state-dict", self.file({}, "empty.pt")], "--heads is required")
        self.refused(["--module", os.path.join(self.d, "missing.pt")], "no such file")
        self.refused(["--module", self.file(torch.nn.MultiheadAttention(32, 2), "m2.pt"),
                      "--name", "2bad"], "not a C identifier")


class PartialBiases(unittest.TestCase):
    """Any subset of the four projections may have a bias (the exporter refused anything but all
    or none before Bias became a flag set); the header states exactly the ones present."""

    def check(self, argv, bias, out_dim=None):
        rc, out, err = run_exporter(argv + ["--name", "pb", "--mask", "causal"])
        self.assertEqual((rc, err), (0, ""))
        m = parse_macros(out)
        self.assertEqual("".join(r.lower() for r in "QKVO" if m[f"PB_BIAS_{r}"] == "1"), bias)
        self.assertEqual(sorted(n[4:] for n in parse_arrays(out) if n.startswith("pb_b")),
                         sorted(bias))
        if out_dim is not None:
            self.assertEqual(m["PB_OUT_DIM"], str(out_dim))
        return out

    def test_every_subset_of_llama_style_biases(self):
        torch.manual_seed(11)
        d = os.path.join(WORK, "partial")
        os.makedirs(d, exist_ok=True)
        for i in range(16):
            bias = "".join(r for j, r in enumerate("qkvo") if i >> j & 1)
            with self.subTest(bias=bias):
                m = llama_like.LlamaStyleAttention(16, 2, 1, 8, biases=bias)
                path = os.path.join(d, f"b{i}.pt")
                torch.save(m, path)
                text = self.check(["--module", path], bias)
                self.assertIn(f"// Use with microattn::Config<T_max, 16, 2, 1, 8, "
                              f"{suggested_bias(bias)}, microattn::OutProj::kYes>", text)
                torch.save(m.state_dict(), path)
                self.check(["--state-dict", path, "--heads", "2"], bias)

    def test_multihead_attention_bias_tensors_on_their_own(self):
        d = os.path.join(WORK, "partial")
        os.makedirs(d, exist_ok=True)
        m = torch.nn.MultiheadAttention(32, 2)
        m.out_proj.bias = None
        path = os.path.join(d, "mha_in_bias.pt")
        torch.save(m, path)
        self.check(["--module", path], "qkv", 32)
        torch.save(m.state_dict(), path)
        self.check(["--state-dict", path, "--heads", "2"], "qkv", 32)

    def test_out_dim_from_o_proj(self):
        d = os.path.join(WORK, "partial")
        os.makedirs(d, exist_ok=True)
        m = llama_like.LlamaStyleAttention(16, 2, 2, 8, out_dim=24, biases="qkvo")
        path = os.path.join(d, "odim.pt")
        torch.save(m, path)
        text = self.check(["--module", path], "qkvo", 24)
        self.assertIn("microattn::Bias::kYes, microattn::OutProj::kYes, microattn::OutDim{24}>",
                      text)


def cli(*argv, cwd=None):
    """The exporter as its own process: (exit status, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=HERE, PYTHONDONTWRITEBYTECODE="1")  # llama_like
    r = subprocess.run([sys.executable, TOOL, *argv], capture_output=True, text=True, env=env,
                       timeout=300, cwd=cwd)
    return r.returncode, r.stdout, r.stderr


def assert_one_line_refusal(tc, rc, out, err, *needles):
    """Exit status 2, nothing on stdout, one `export_pytorch.py: error:` line holding each
    needle, no traceback."""
    tc.assertEqual(rc, 2, err)
    tc.assertEqual(out, "")
    tc.assertEqual(len(err.splitlines()), 1, err)
    tc.assertTrue(err.startswith("export_pytorch.py: error: "), err)
    tc.assertNotIn("Traceback", err)
    for n in needles:
        tc.assertIn(n, err)


class CommandLine(unittest.TestCase):
    """The real process: exit statuses and output as a user sees them."""

    def cli(self, *argv):
        return cli(*argv)

    def test_export_and_refusal_as_processes(self):
        c = next(c for c in RESULTS["cases"] if c.name == "l_gqa")
        rc, out, err = self.cli(*c.argv, "--name", c.name)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out, c.text)  # stdout = the --out file of the in-process run
        bias_kv = os.path.join(WORK, "bias_kv_cli.pt")
        torch.save(torch.nn.MultiheadAttention(32, 2, add_bias_kv=True), bias_kv)
        rc, out, err = self.cli("--module", bias_kv, "--mask", "causal")
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("add_bias_kv", err)

    def test_int8_export_and_bad_quant_as_processes(self):
        c = next(c for c in RESULTS["cases"] if c.name == "q_gqa_p16")
        rc, out, err = self.cli(*c.argv, "--name", c.name)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, c.text)
        self.assertEqual(err, c.err)  # the error report, one line per matrix and the layer's
        self.assertEqual(len(err.splitlines()), 5)
        bad = list(c.argv)
        bad[bad.index("--quant") + 1] = "int4"
        rc, out, err = self.cli(*bad, "--name", c.name)
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err, "export_pytorch.py: error: --quant 'int4': not one of none, int8, "
                         "fp16, bf16, int8-g32, int8-g64, int8-g128\n")
        rc, out, _ = self.cli("--help")
        self.assertEqual(rc, 0)
        self.assertIn("--quant {none,int8,fp16,bf16,int8-g32,int8-g64,int8-g128}", out)
        self.assertIn("WeightType::kInt8", out)


class MaskOption(unittest.TestCase):
    """--mask: required, parsed strictly, recorded; the module's hints are notes, never
    refusals, and never override the choice."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(31)
        cls.d = os.path.join(WORK, "mask")
        os.makedirs(cls.d, exist_ok=True)

    def file(self, obj, name):
        path = os.path.join(self.d, name)
        torch.save(obj, path)
        return path

    def one_line_refusal(self, rc, out, err, *needles):
        assert_one_line_refusal(self, rc, out, err, *needles)

    def test_mask_is_required(self):
        """Without --mask nothing is written: one line, exit 2, as a process and in-process,
        checked before the file is loaded; the Python functions refuse too."""
        m = torch.nn.MultiheadAttention(32, 2)
        mod, sd = self.file(m, "req.pt"), self.file(m.state_dict(), "req_sd.pt")
        out_path = os.path.join(self.d, "should_not_exist.h")
        for argv in (["--module", mod], ["--state-dict", sd, "--heads", "2"],
                     ["--module", os.path.join(self.d, "missing.pt")]):
            with self.subTest(argv=argv):
                rc, out, err = cli(*argv, "--out", out_path)
                self.one_line_refusal(rc, out, err, "--mask is required: causal", "none",
                                      "window:W")
                self.assertFalse(os.path.exists(out_path))
                self.assertEqual(run_exporter(argv), (rc, out, err))
        for call in (lambda: ex.export_module(m, name="a"),
                     lambda: ex.export_state_dict(m.state_dict(), 2, name="a")):
            with self.assertRaises(ex.Refusal) as cm:
                call()
            self.assertIn("--mask is required", str(cm.exception))
        rc, out, err = run_exporter([])
        self.one_line_refusal(rc, out, err, "--mask causal|none|window:W", "--fixtures")

    def test_bad_mask_values(self):
        mod = self.file(torch.nn.MultiheadAttention(32, 2), "bad.pt")
        for bad in ("window:0", "window:", "window", "window:-2", "window:2.5", "window:4x",
                    "window: 4", "window:\u0663", "Causal", "NONE", "", "causal ", "window:4:4"):
            with self.subTest(mask=bad):
                rc, out, err = run_exporter(["--module", mod, "--mask", bad])
                self.one_line_refusal(rc, out, err, f"--mask {bad!r}: not one of causal, none, "
                                                    "window:W (W a whole number >= 1)")
        for good, want in (("causal", (0, 0)), ("none", (1, 0)), ("window:1", (0, 1)),
                           ("window:4096", (0, 4096)), ("window:007", (0, 7))):
            rc, out, err = run_exporter(["--module", mod, "--mask", good, "--name", "g"])
            self.assertEqual((rc, err), (0, ""), good)
            m = parse_macros(out)
            self.assertEqual((int(m["G_MASK"]), int(m["G_WINDOW"])), want, good)

    def test_fixtures_take_no_mask(self):
        """--fixtures (its layers have their own masks) runs without --mask, and refuses one."""
        path = os.path.join(self.d, "fixtures.h")
        rc, out, err = run_exporter(["--fixtures", path])
        self.assertEqual((rc, out, err), (0, "", ""))
        with open(path) as f, open(os.path.join(WORK, "fixtures.h")) as g:
            self.assertEqual(f.read(), g.read())
        rc, out, err = run_exporter(["--fixtures", path + "2", "--mask", "causal"])
        self.one_line_refusal(rc, out, err, "--mask goes with --module or --state-dict")
        self.assertFalse(os.path.exists(path + "2"))

    def export(self, module, mask, name="n", extra=()):
        """(header, stderr lines) of exporting module with --mask mask; must succeed."""
        path = self.file(module, f"{name}.pt")
        rc, out, err = run_exporter(["--module", path, "--mask", mask, "--name", "n", *extra])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("Traceback", err)
        return out, err.splitlines(), path

    def assert_note(self, module, mask, *needles, name="n", extra=()):
        """Exactly one note, on stderr and in the header, holding each needle; the header keeps
        the chosen mask."""
        out, err, path = self.export(module, mask, name, extra)
        self.assertEqual(len(err), 1, err)
        self.assertTrue(err[0].startswith("export_pytorch.py: note: "), err)
        note = err[0][len("export_pytorch.py: note: "):]
        for n in needles:
            self.assertIn(n.replace("{path}", path), note)
        self.assertIn(f"// Note: {note}.", out)
        self.assertIn(f"// Mask (--mask {mask}): ", out)
        return note

    def assert_no_note(self, module, mask, name="n", extra=()):
        out, err, _ = self.export(module, mask, name, extra)
        self.assertEqual(err, [])
        self.assertIn(f"// Mask (--mask {mask}): ", out)

    def test_sliding_window_config_suggests_window(self):
        win = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="config", window=4)
        for other in ("causal", "none", "window:8"):
            with self.subTest(mask=other):
                self.assert_note(win, other, "{path}'s config has sliding_window 4: if this "
                                 "layer attends through that window, pass --mask window:4 (this "
                                 f"header: --mask {other})")
        self.assert_no_note(win, "window:4")
        # The choice is the user's: --mask causal writes a causal header.
        out, _, _ = self.export(win, "causal")
        self.assertEqual(parse_macros(out)["N_WINDOW"], "0")
        self.assertNotIn("SlidingWindow{", header_cfg(out))
        # Hugging Face's per-layer attribute (newer transformers) decides over the config.
        attr = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="module", window=6)
        self.assert_note(attr, "causal", "{path} has sliding_window 6", "--mask window:6")
        full = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="config", window=6)
        full.sliding_window = None  # a full-attention layer of a model with windows
        self.assert_no_note(full, "causal")

    def test_qwen2_style_window_switches(self):
        """use_sliding_window False (Qwen2's default), layer_types and max_window_layers say
        when a config's sliding_window does not apply to this layer."""
        def qwen(**cfg):
            m = llama_like.LlamaStyleAttention(32, 4, 2, 8, attrs="config", window=4096)
            m.layer_idx = cfg.pop("layer_idx", 0)
            for k, v in cfg.items():
                setattr(m.config, k, v)
            return m
        self.assert_no_note(qwen(use_sliding_window=False), "causal")
        self.assert_note(qwen(use_sliding_window=True), "causal",
                         "sliding_window 4096 and use_sliding_window True", "window:4096")
        types = ["sliding_attention", "full_attention"]
        self.assert_note(qwen(layer_types=types, layer_idx=0), "causal", "window:4096")
        self.assert_no_note(qwen(layer_types=types, layer_idx=1), "causal")
        self.assert_no_note(qwen(use_sliding_window=True, max_window_layers=2, layer_idx=1),
                            "causal")
        self.assert_note(qwen(use_sliding_window=True, max_window_layers=2, layer_idx=2),
                         "causal", "window:4096")

    def test_encoder_and_decoder_hints(self):
        """An encoder layer exported causal, a decoder layer or is_causal=True module exported
        with none: a note, exit 0, the chosen mask in the header."""
        enc = torch.nn.TransformerEncoderLayer(32, 2, 64)
        for mask in ("causal", "window:3"):
            self.assert_note(enc, mask, "{path} is a TransformerEncoderLayer, so it probably "
                             "attends to every token (no mask): if so, pass --mask none (this "
                             f"header: --mask {mask})")
        self.assert_no_note(enc, "none")
        dec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(32, 4, 64), 2)
        self.assert_note(dec, "none", "'layers.1' of {path} is a TransformerDecoderLayer, so it "
                         "is probably called with a causal mask: if so, pass --mask causal",
                         extra=("--path", "layers.1"))
        for mask in ("causal", "window:5"):
            self.assert_no_note(dec, mask, extra=("--path", "layers.1"))
        wdec = llama_like.WhisperStyleAttention(32, 4)
        self.assert_note(wdec, "none", "{path} says is_causal=True", "pass --mask causal")
        self.assert_no_note(wdec, "causal")
        wenc = llama_like.WhisperStyleAttention(32, 4, causal=False)
        self.assert_note(wenc, "causal", "{path} says is_causal=False", "pass --mask none")
        self.assert_no_note(wenc, "none")
        mha = torch.nn.MultiheadAttention(32, 2)  # says nothing either way
        for mask in ("causal", "none", "window:2"):
            self.assert_no_note(mha, mask)

    def test_note_as_a_process(self):
        """Exit 0, the header on stdout, the note alone on stderr."""
        enc = self.file(torch.nn.TransformerEncoderLayer(32, 2, 64), "enc_cli.pt")
        rc, out, err = cli("--module", enc, "--mask", "causal", "--name", "e")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("pass --mask none", err)
        self.assertIn("#define E_MASK 0 /* microattn::Mask::kCausal */", out)


class ToolErrors(unittest.TestCase):
    """The exporter's last tracebacks (an --out folder that does not exist, a Python without
    torch) are one-line refusals, and a state dict saved with a key prefix names it."""

    @classmethod
    def setUpClass(cls):
        torch.manual_seed(15)
        cls.d = os.path.join(WORK, "tool_errors")
        os.makedirs(cls.d, exist_ok=True)
        cls.mod = os.path.join(cls.d, "mha.pt")
        torch.save(torch.nn.MultiheadAttention(32, 2), cls.mod)

    def assert_refused(self, rc, out, err, *needles):
        assert_one_line_refusal(self, rc, out, err, *needles)

    def test_out_folder_that_does_not_exist(self):
        """Refused before any work (a mistyped path must not grow folders); --out a folder
        and --fixtures into a missing folder too."""
        missing = os.path.join(self.d, "no_such_folder", "sub")
        dest = os.path.join(missing, "x.h")
        rc, out, err = cli("--module", self.mod, "--mask", "causal", "--out", dest)
        self.assert_refused(rc, out, err, f"--out {dest}: the folder {missing} does not exist")
        self.assertFalse(os.path.exists(os.path.dirname(missing)))
        self.assertEqual(run_exporter(["--module", self.mod, "--mask", "causal", "--out", dest]),
                         (rc, out, err))
        rc, out, err = cli("--module", self.mod, "--mask", "causal", "--out", self.d)
        self.assert_refused(rc, out, err, f"--out {self.d} is a folder")
        rc, out, err = cli("--fixtures", dest)
        self.assert_refused(rc, out, err, f"--fixtures {dest}: the folder {missing} does not "
                                          "exist")
        # A bare file name (the current folder) is fine.
        rc, out, err = cli("--module", self.mod, "--mask", "causal", "--out", "rel_out.h",
                           cwd=self.d)
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(os.path.isfile(os.path.join(self.d, "rel_out.h")))

    def without_torch(self, *argv):
        """The tool as a process whose `import torch` fails (sys.modules['torch'] = None: what
        a python3 without torch gives, on any machine that has one with it)."""
        code = ("import runpy, sys; sys.modules['torch'] = None; sys.argv = sys.argv[1:]; "
                "runpy.run_path(sys.argv[0], run_name='__main__')")
        r = subprocess.run([sys.executable, "-c", code, TOOL, *argv], capture_output=True,
                           text=True, timeout=300, cwd=self.d)
        return r.returncode, r.stdout, r.stderr

    def test_python_without_torch(self):
        dest = os.path.join(self.d, "no_torch.h")
        sd = os.path.join(self.d, "mha_sd.pt")
        torch.save(torch.nn.MultiheadAttention(32, 2).state_dict(), sd)
        for argv in (["--module", self.mod, "--mask", "causal", "--out", dest],
                     ["--state-dict", sd, "--heads", "2", "--mask", "none"],
                     ["--fixtures", dest]):
            with self.subTest(argv=argv[0]):
                rc, out, err = self.without_torch(*argv)
                self.assert_refused(rc, out, err, "cannot import torch/numpy",
                                    "install Debian's python3-torch", "/usr/bin/python3")
                self.assertFalse(os.path.exists(dest))
        rc, out, err = self.without_torch("--help")  # needs no torch
        self.assertEqual((rc, err), (0, ""))
        self.assertIn("--mask {causal,none,window:W}", out)

    def test_state_dict_prefix_is_named(self):
        gqa = llama_like.LlamaStyleAttention(48, 6, 2, 10)
        plain = os.path.join(self.d, "plain_sd.pt")
        torch.save(gqa.state_dict(), plain)
        one = os.path.join(self.d, "prefixed_sd.pt")
        torch.save(prefixed(gqa.state_dict(), "layers.0.self_attn."), one)
        base = ["--heads", "6", "--mask", "causal"]
        rc, out, err = run_exporter(["--state-dict", one, *base])
        self.assert_refused(rc, out, err, "keys look like they have the prefix "
                            "'layers.0.self_attn.': pass --prefix layers.0.self_attn.")
        # Following the hint works, and gives the unprefixed dict's header.
        rc, out, err = run_exporter(["--state-dict", one, *base, "--prefix",
                                     "layers.0.self_attn."])
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(parse_arrays(out), parse_arrays(run_exporter(
            ["--state-dict", plain, *base])[1]))
        # A wrong prefix names the right one; a prefix where there is none says so.
        rc, out, err = run_exporter(["--state-dict", one, *base, "--prefix",
                                     "layers.1.self_attn."])
        self.assert_refused(rc, out, err, "no keys under prefix 'layers.1.self_attn.'",
                            "pass --prefix layers.0.self_attn.")
        rc, out, err = run_exporter(["--state-dict", plain, *base, "--prefix", "model."])
        self.assert_refused(rc, out, err, "no keys under prefix 'model.'",
                            "its attention keys have no prefix: leave out --prefix")
        # A whole stack: a few of the candidates, and how many.
        stack = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(32, 2, 64), 6)
        sd = os.path.join(self.d, "stack_sd.pt")
        torch.save(stack.state_dict(), sd)
        rc, out, err = run_exporter(["--state-dict", sd, "--heads", "2", "--mask", "none"])
        self.assert_refused(rc, out, err, "pass --prefix with one of 'layers.0.self_attn.', "
                            "'layers.1.self_attn.', 'layers.2.self_attn.', "
                            "'layers.3.self_attn.', ... (6 in all)")
        rc, out, err = run_exporter(["--state-dict", sd, "--heads", "2", "--mask", "none",
                                     "--prefix", "layers.5.self_attn."])
        self.assertEqual((rc, err), (0, ""))
        two = os.path.join(self.d, "two_sd.pt")
        torch.save({**prefixed(gqa.state_dict(), "a."), **prefixed(gqa.state_dict(), "b.")}, two)
        rc, out, err = cli("--state-dict", two, *base)
        self.assert_refused(rc, out, err, "pass --prefix with one of 'a.', 'b.' (keys there:")


class Documentation(unittest.TestCase):
    def test_documented_command_lines_pass_mask(self):
        """Every export command line in README.md, docs/ and the tool's --help passes --mask
        (required: a copied line without it fails)."""
        texts = {"--help": ex.__doc__}
        for rel in ["README.md"] + [os.path.join("docs", n) for n in
                                    sorted(os.listdir(os.path.join(OPT.source_dir, "docs")))]:
            if rel.endswith(".md"):
                with open(os.path.join(OPT.source_dir, rel)) as f:
                    texts[rel] = f.read()
        found = collections.Counter()
        for where, text in texts.items():
            flat = re.sub(r"\\\n", " ", text)  # shell line continuations
            for m in re.finditer(r"tools/export_pytorch\.py (--module|--state-dict)", flat):
                cmd = re.split(r"`|\n\n", flat[m.start():])[0]  # to the end of the code
                self.assertRegex(cmd, r"--mask (causal|none|window:W)\b", f"{where}: {cmd}")
                found[where] += 1
        self.assertGreaterEqual(found["--help"], 2)
        self.assertGreaterEqual(found["README.md"], 1)
        self.assertGreaterEqual(found[os.path.join("docs", "quantization.md")], 1)

def tiny_state_dict():
    """The layer of tests/compile_fail_exported_mask.cpp: LLaMA-style keys, d_model 2, one
    head of 2, exact values (k/4 steps), so that its header is the same on every machine."""
    return {f"{n}.weight": (torch.arange(4, dtype=torch.float32).reshape(2, 2) - k) / 4
            for k, n in enumerate(("q_proj", "k_proj", "v_proj", "o_proj"))}


class CompileFailSource(unittest.TestCase):
    def test_compile_fail_exported_mask_holds_the_exporters_output(self):
        """ctest compiles tests/compile_fail_exported_mask.cpp without torch; the headers in it
        must be what the exporter writes today (all but the torch version line), or that test
        would check an old header's static_asserts."""
        path = os.path.join(OPT.source_dir, "tests", "compile_fail_exported_mask.cpp")
        with open(path) as f:
            text = f.read()
        blocks = re.findall(r'^// >>> export_state_dict\(tiny_state_dict\(\), 1, name="(\w+)", '
                            r'origin="tiny.pt", mask="([\w:]+)"\)\n(.*?)^// <<< \1$', text,
                            re.M | re.S)
        self.assertEqual([(n, m) for n, m, _ in blocks], [("m_none", "none"),
                                                           ("m_win", "window:4")])
        for name, mask, body in blocks:
            want = ex.export_state_dict(tiny_state_dict(), 1, name=name, origin="tiny.pt",
                                        mask=mask)
            with self.subTest(header=name):
                self.assertTrue(body.startswith("// Generated by tools/export_pytorch.py "
                                                "(torch "), body[:80])
                self.assertEqual(body.splitlines()[1:], want.splitlines()[1:],
                                 f"{path}: replace the {name} block with\n{want}")


if __name__ == "__main__":
    t0 = time.time()
    prog = unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS, verbosity=2, exit=False)
    print(f"export_pytorch tests: {time.time() - t0:.1f} s", file=sys.stderr)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
