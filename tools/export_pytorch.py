#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Export PyTorch attention weights as a C/C++ header of const float arrays for microattn
(or int8 arrays with fp32 scales: --quant int8).

  /usr/bin/python3 tools/export_pytorch.py --module model.pt [--path encoder.layers.0] \\
      --mask none --name layer0 --out layer0_weights.h [--layout panel16] [--quant int8]

--mask (required) says how the module is called, which its weights cannot tell:
  causal     token i sees tokens 0 .. i (a decoder; attn_mask = causal, is_causal=True);
             microattn::Mask::kCausal, the Config's default
  none       every token sees every token (an encoder: BERT, ViT, Whisper's encoder, an
             nn.TransformerEncoderLayer called without a mask); microattn::Mask::kNone
  window:W   causal, token i sees tokens i - W + 1 .. i (Mistral, a Hugging Face config's
             sliding_window); microattn::SlidingWindow{W}, W a whole number >= 1
The header records it (NAME_MASK, NAME_WINDOW, the Config line) and name_weights<Cfg>() is a
compile error when Cfg's Mask or SlidingWindow differs. Where the module hints at another
choice (a config with sliding_window, is_causal, an encoder or decoder layer) a one-line note
goes to stderr and into the header; the choice stays yours. MultiHeadAttention computes every
mask; KvAttention (KV cache, decode) causal and window only; ScaledDotProductAttention (your own
Q, K, V) every mask.

reads a whole pickled module (torch.save(module)) and takes every shape from it: heads,
key/value heads, head width, which projections have a bias, W_O's output width. It accepts
nn.MultiheadAttention, the self-attention of nn.TransformerEncoderLayer /
nn.TransformerDecoderLayer, and LLaMA/Hugging Face-style attention modules with nn.Linear
children q_proj, k_proj, v_proj and o_proj (LLaMA, Qwen2) or out_proj (Whisper, BART), or
W_query, W_key, W_value and out_proj (the teaching notes' MultiHeadAttention); heads from
num_heads, num_key_value_heads, head_dim, or from .config.num_attention_heads,
.num_key_value_heads, .head_dim, cross-checked against the Linear shapes. Any subset of the four
projections may have a bias (Qwen2: Q, K, V; Whisper: all but K), and W_O may map to another
width than d_model (the teaching notes' out_proj = Linear(d_out, d_out)). --path picks a
submodule.

  /usr/bin/python3 tools/export_pytorch.py --state-dict model.pt --heads 8 [--kv-heads 2] \\
      [--prefix layers.0.attn.] --mask causal --name layer0 --out layer0_weights.h

reads a state dict instead: nn.MultiheadAttention keys (in_proj_weight, in_proj_bias,
out_proj.weight, out_proj.bias) or LLaMA-style ones (q_proj.weight, k_proj.weight, v_proj.weight,
o_proj.weight or out_proj.weight, or W_query/W_key/W_value.weight and out_proj.weight; each
with an optional .bias). A state dict does not record the number of heads, so --heads is
required (and cannot be checked beyond d_head = query rows / heads being whole); key/value heads
follow from the key rows. Keys saved with a prefix (layers.0.self_attn.q_proj.weight) need
--prefix; without it the error names the prefixes found. Prefer --module.

Anything microattn cannot compute exactly as the module does is refused with a one-line message
and exit status 2 (add_bias_kv, add_zero_attn, kdim/vdim != embed_dim, unknown parameters,
non-finite weights, shapes that disagree, a missing --mask, an --out folder that does not exist,
a Python without torch ...).

A LLaMA-style layer's rotary embedding (RoPE) is applied in its forward, not stored in its
weights: give the Config microattn::Rope::kYes and call set_rope() on MultiHeadAttention or
KvAttention (docs/inference.md). When the module states it (rope_theta on the module or its
.config, or an older transformers' rotary_emb.base; partial_rotary_factor; rope_pairing, as
tools/train_tiny_lm.py's attention has: else half-split, transformers' rotate_half), the header
carries it as the latent header does: NAME_ROPE_BASE, NAME_ROPE_PAIRING (the
microattn::RopePairing value: 0 kAdjacent, 1 kHalfSplit), NAME_ROPE_DIMS (the rotated leading
dimensions of each head), name_shape::kRopeBase, kRopePairing, kRopeDims and name_rope() for
attn.set_rope(), and the Config line gains microattn::Rope::kYes; rope_scaling other than None
is refused (microattn's RoPE has no scaling). Otherwise the header notes it for modules with
o_proj.

The header is valid C11 and C++17 and can be included by several translation units (the arrays
are static). It defines NAME_D_MODEL, NAME_HEADS, NAME_KV_HEADS, NAME_D_HEAD, NAME_OUT_DIM
(W_O's output width: the row length of y), NAME_BIAS_Q, NAME_BIAS_K, NAME_BIAS_V, NAME_BIAS_O
(0/1), NAME_HAS_OUT_PROJ, NAME_MASK (the microattn::Mask value: 0 kCausal, also with a sliding
window, 1 kNone), NAME_WINDOW (W of --mask window:W, 0 without a window), NAME_LAYOUT (the
microattn::WeightLayout value: 0 kInOut, 1 kOutIn, 2 kPanel16), NAME_LAYOUT_NAME,
NAME_WEIGHT_TYPE (the microattn::WeightType value: 0 kF32, 1 kInt8) and NAME_SCALE (the module's
softmax scale) for C users, the arrays name_wq, name_wk, name_wv, name_wo (and name_bq, name_bk,
name_bv, name_bo for the biases the module has), and in C++ the shape struct name_shape and
name_weights<Cfg>(), so that

  attn.set_weights(layer0_weights<Cfg>());

sets layout and pointers, and a Cfg that differs from the exported shape (heads, widths, Bias
flags, OutDim, Mask, SlidingWindow) is a compile error. Its first lines name the Config to use,
e.g. Config<T_max, 896, 14, 2, 64, microattn::Bias::kQkv, microattn::OutProj::kYes> for a Qwen2
layer exported with --mask causal (..., microattn::Mask::kNone> with --mask none,
..., microattn::SlidingWindow{4096}> with --mask window:4096). When the module scales scores by
something else than 1/sqrt(d_head), the header says so: call attn.set_scale(NAME_SCALE) once
(MultiHeadAttention, KvAttention and ScaledDotProductAttention each keep their scale).

By default the arrays keep PyTorch's own layout ([out][in], microattn::WeightLayout::kOutIn),
so nothing is transposed: a microcontroller uses them straight from flash. --layout panel16
writes microattn::WeightLayout::kPanel16 instead (panels of 16 output columns, each [in][16]):
the fastest layout for the decode step and for prefill on AVX2/AArch64; it needs d_head and
W_O's output width (d_model unless the module says otherwise) to be multiples of 16.

--quant int8 writes the four matrices as `static const int8_t` arrays (in the chosen layout)
and, for each, `static const float` scales name_sq, name_sk, name_sv, name_so, one per output
column: W(i, o) = s[o] * q(i, o), symmetric, s[o] = max_i |W(i, o)| / 127, q rounded half away
from zero (nn.MultiheadAttention's packed in_proj_weight is quantised as three matrices, Q, K
and V). The arrays are bit for bit what microattn::quantize_int8() makes of the same weights;
biases stay fp32. Use the header with a Config that says microattn::WeightType::kInt8 (its
first lines name it; an fp32 Config is a compile error, and an int8 Config with an fp32
header too). The quantisation error of each matrix (max |w - s*q|, rms, ||W - Wq||_F / ||W||_F)
goes to stderr and into the header's comment, and so does the layer's: its output on 32
random tokens with the int8 weights, and with integer compute (microattn::Compute::kInt8: x and
the attended heads quantised per row at run time), against the fp32 layer. --compute int8 (with
--quant int8) names Compute::kInt8 in the header's Config line; the arrays are the same. The
default, --quant none, writes fp32 arrays.

Multi-head latent attention (DeepSeek-V2's MLA) for microattn::LatentAttention:

  /usr/bin/python3 tools/export_pytorch.py --module mla.pt --mask causal --name mla \\
      --out mla_weights.h

takes a module shaped like Hugging Face's DeepseekV2Attention (recognised by its
kv_a_proj_with_mqa / kv_b_proj children): q_proj, or q_a_proj + q_a_layernorm + q_b_proj (a
query latent, q_lora_rank), kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj and o_proj, with
num_heads, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim, q_lora_rank,
q_head_dim, hidden_size (on the module or its .config; where one is missing the nn.Linear
shapes give it, and they are cross-checked), rope_theta, softmax_scale (default
q_head_dim**-0.5) and the RMSNorms' variance_epsilon (or eps). The header holds the arrays as
nn.Linear holds them (kOutIn): NAME_wq or NAME_wdq, NAME_gq, NAME_wuq; NAME_wdkv, NAME_gkv,
NAME_wukv, NAME_wo; the macros NAME_LATENT (1), NAME_D_MODEL, NAME_HEADS, NAME_D_LATENT (d_c),
NAME_D_ROPE (d_R), NAME_D_NOPE, NAME_D_V, NAME_D_QLATENT (0 without a query latent),
NAME_LAYOUT, NAME_WEIGHT_TYPE, NAME_MASK, NAME_SCALE, NAME_ROPE_BASE, NAME_ROPE_PAIRING (0:
microattn::RopePairing::kAdjacent) and NAME_RMS_EPS; in C++ name_shape, name_weights<LCfg>()
(microattn::exported_latent_weights: a LatentConfig of another shape is a compile error naming
the parameter) and name_rope(). Its first lines name the LatentConfig and the four set-up calls
(set_weights, set_rope, set_rms_eps, set_scale). --quant int8 writes the six matrices as int8
arrays (kOutIn) with their scales, one per output column, NAME_sq or NAME_sdq and NAME_suq,
NAME_sdkv, NAME_sukv, NAME_so, bit for bit what microattn::quantize_int8() makes; the RMSNorm
weights stay fp32, the LatentConfig line gains microattn::WeightType::kInt8 (an fp32
LatentConfig with that header is a compile error, and the reverse), and each matrix's
quantisation error and the layer's output error on 32 random tokens (numpy, no RoPE) go to
stderr and into the header's comment. The RoPE pairing is kAdjacent: Hugging Face's
code permutes q_pe and k_pe from interleaved pairs to halves before rotate_half, which in every
score is the adjacent-pair rotation of the weights' own outputs. Refused (one line, exit 2):
biases, rope_scaling other than None (YaRN), an RMSNorm without a weight (or not an RMSNorm,
or two different epsilons), an odd qk_rope_head_dim, v_head_dim > kv_lora_rank +
qk_rope_head_dim, shapes that disagree, --compute int8 (LatentAttention has no integer compute),
--layout panel16, --kv-heads, a mask other than causal, and a state dict of such a module (it
does not record the head widths: use --module).

A whole LLaMA-style decoder (--kind decoder) as one binary "model blob" for microattn::Decoder
(docs/model-format.md), with the PyTorch reference and the vocabulary as C headers:

  /usr/bin/python3 tools/export_pytorch.py --kind decoder --tiny-lm examples/tiny_lm/tiny_lm.pt \
      --name tiny_lm --blob tiny_lm_f32.bin --reference tiny_lm_reference.h \
      --vocab-header tiny_lm_vocab.h
  /usr/bin/python3 tools/export_pytorch.py --kind decoder --tiny-lm examples/tiny_lm/tiny_lm.pt \
      --quant int8 --blob tiny_lm_q8.bin

reads a checkpoint of tools/train_tiny_lm.py (--tiny-lm; --module detects one too: a dict with
config, vocab, state_dict) or a pickled TinyLM (--module; that class): embed (nn.Embedding),
layers[i].attn_norm, layers[i].attn.{q,k,v,o}_proj, layers[i].mlp_norm,
layers[i].mlp.{gate,up,down}_proj (SwiGLU), norm, lm_head unless the head is tied; the shape
from module.config (d_model, n_layers, n_heads, n_kv_heads, d_head, d_hidden, t_max, rope_base,
rope_pairing "adjacent" or "half"/"half_split", norm_eps, tied_head), every tensor's shape
checked against it. Hugging Face's LlamaForCausalLM is read too: model.embed_tokens,
model.layers[i].input_layernorm, .self_attn.{q,k,v,o}_proj, .post_attention_layernorm,
.mlp.{gate,up,down}_proj, model.norm, lm_head (tied when config.tie_word_embeddings, and then
the embedding's own Parameter); the shape from its config (hidden_size, num_hidden_layers,
num_attention_heads, num_key_value_heads, head_dim, intermediate_size,
max_position_embeddings, rope_theta, rms_norm_eps), RoPE half-split (rotate_half). It has no
vocab string, so --reference and --vocab-header are refused for it. The family is read from the
module's class name (DECODER_CLASSES: TinyLM, LlamaForCausalLM), never from its parameter
names: MistralForCausalLM, GraniteForCausalLM, Qwen2ForCausalLM ... are refused by name. Every
config field is in its family's table (TINY_LM_FIELDS, HF_LLAMA_FIELDS): carried into the file,
allowed at one value only (rope_scaling None, sliding_window None, partial_rotary_factor 1,
attention_bias and mlp_bias False, hidden_act silu, pretraining_tp 1, model_type llama ...) or
ignored with a reason (architectures, torch_dtype, bos_token_id, use_cache ...); any other
field or value is refused, naming it (e.g. Granite's embedding_multiplier). Refused (one line,
exit 2) too: biases, missing or unknown parameters, a shape the config does not give, a head
tied in the config and not in the module (or the reverse), a file over the format's 4 GiB, and
the attention-only options (--mask, --path, --layout, --compute, --out ...).
  --blob FILE       the blob: fp32, or with --quant int8 every matrix (the embedding too: one
                    scale per token, which the tied head shares) int8 with one fp32 scale per
                    output row, bit for bit microattn::quantize_int8(); with --quant fp16 or
                    bf16 every matrix 16-bit float (rounded to nearest even, as microattn's
                    to_f16 / to_bf16; version 2 only); the norms stay fp32.
  --blob-version V  2 (default): keyed fields and a tensor directory with each tensor's format
                    code; 1: the fixed 16-word header of microattn 0.2 (docs/model-format.md).
  --reference FILE  a C header (C11 and C++17) of the module's own fp32 forward (one thread,
                    deterministic): --prompt (default the TRAINING.md prompt) encoded one
                    character to one id, --n (default 64) greedy tokens after it, and the logits
                    at every position of one forward over the whole sequence (%.9g: they read
                    back to the same float32): NAME_REF_PROMPT, NAME_REF_PROMPT_TOKENS,
                    NAME_REF_CONTINUATION, NAME_REF_POSITIONS, NAME_REF_VOCAB,
                    name_ref_tokens[], name_ref_logits[][]. Refused when the whole-sequence
                    argmax differs from a greedy token (a near-tie: the reference would
                    contradict itself); the smallest top-1/top-2 margin goes to stderr and into
                    the header.
  --vocab-header FILE  NAME_VOCAB_SIZE and name_vocab[] (each id's character as a UTF-8 C
                    string; id 0 is the unknown character U+FFFD).
--name (default tiny_lm here) prefixes the macros and arrays of both headers.

From Python (e.g. when the module's class lives in a script, where torch.load cannot find it):
export_module(module, name=..., mask=...) and export_state_dict(sd, heads=..., name=...,
mask=...) return the text (mask: "causal", "none" or "window:W", required there too).

  /usr/bin/python3 tools/export_pytorch.py --fixtures tests/data/pytorch_fixtures.h

regenerates the test fixtures: small layers run by PyTorch itself (nn.MultiheadAttention with a
causal mask; a LLaMA-style GQA layer written with torch ops), with inputs and outputs, that
tests/test_pytorch_fixtures.cpp compares microattn against (their masks are fixed: no --mask).

Needs PyTorch and numpy: Debian's python3-torch, run with /usr/bin/python3 (a pyenv or venv
python3 earlier on PATH does not see it); the generated header is committed, so the tests do not
need torch.
"""
import argparse
import math
import numbers
import os
import re
import sys

# microattn::WeightLayout values (include/microattn/weights.hpp); the C++ part of every header
# static_asserts that the number still matches the enumerator, so a renumbering cannot go unseen.
LAYOUTS = {"outin": ("kOutIn", 1), "panel16": ("kPanel16", 2)}
PANEL = 16  # microattn::kWeightPanel
ROLES = ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo")
MODULE_KINDS = ("nn.MultiheadAttention, nn.TransformerEncoderLayer/TransformerDecoderLayer "
                "(their self_attn), a LLaMA-style module with q_proj/k_proj/v_proj/o_proj "
                "nn.Linear children, or a DeepSeek-V2-style latent attention module "
                "(kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj, o_proj)")
ROPE_NOTE = ("LLaMA-style layers usually apply RoPE to Q and K in their forward, which is not "
             "part of the weights: for that, give the Config microattn::Rope::kYes and call "
             "set_rope() on MultiHeadAttention or KvAttention (docs/inference.md)")
MASK_REQUIRED = ("--mask is required: causal (a decoder: token i sees tokens 0 .. i), none (an "
                 "encoder: every token sees every token) or window:W (causal, the last W "
                 "tokens); the weights do not say how the module is called")
# Names of the four projections in the module kinds read as "LLaMA-style": role -> candidates.
# LLaMA/Qwen2: q_proj ... o_proj; Whisper/BART: q_proj ... out_proj; the teaching notes'
# MultiHeadAttention: W_query, W_key, W_value, out_proj.
PROJ_NAMES = {"q": ("q_proj", "W_query"), "k": ("k_proj", "W_key"), "v": ("v_proj", "W_value"),
              "o": ("o_proj", "out_proj")}
BIAS_ROLES = ("bq", "bk", "bv", "bo")
MATRIX_ROLES = ("wq", "wk", "wv", "wo")
MATRIX_NAMES = {"wq": "W_Q", "wk": "W_K", "wv": "W_V", "wo": "W_O"}
# --quant: the microattn::WeightType enumerator and value of each (the C++ part of every header
# static_asserts the value, like the layout's).
QUANTS = {"none": ("kF32", 0), "int8": ("kInt8", 1)}
# Model files (--kind decoder --blob, version 2) also store 16-bit floats (WeightType::kF16,
# kBF16): every matrix and the embedding rounded to nearest even, the norms fp32.
# Group-wise int8 (kInt8G32 / G64 / G128): a scale per output row and group of inputs
# (quantize_int8_groups), also model files only.
BLOB_QUANTS = dict(QUANTS, fp16=("kF16", 2), bf16=("kBF16", 3), **{
    "int8-g32": ("kInt8G32", 4), "int8-g64": ("kInt8G64", 5), "int8-g128": ("kInt8G128", 6)})
GROUP_QUANTS = {"int8-g32": 32, "int8-g64": 64, "int8-g128": 128}


class Refusal(Exception):
    """Something the exporter cannot represent; main() prints it as one line, exit status 2."""


class Mask:
    """The attention mask a header is exported for (--mask): kind "causal", "none" or
    "window" (causal and banded: token i sees i - W + 1 .. i), and W (0 unless a window)."""

    def __init__(self, kind, window=0):
        self.kind, self.window = kind, window

    @classmethod
    def parse(cls, text):
        """"causal", "none" or "window:W" (W a whole number >= 1, decimal digits only); a Mask
        passes through. None (not given) and anything else are refused."""
        if isinstance(text, cls):
            return text
        if text is None:
            raise Refusal(MASK_REQUIRED)
        if text in ("causal", "none"):
            return cls(text)
        m = re.fullmatch(r"window:([0-9]+)", text) if isinstance(text, str) else None
        if m and int(m.group(1)) >= 1:
            return cls("window", int(m.group(1)))
        raise Refusal(f"--mask {text!r}: not one of causal, none, window:W (W a whole number "
                      ">= 1)")

    @property
    def arg(self):
        """As given on the command line: causal, none, window:W."""
        return f"window:{self.window}" if self.kind == "window" else self.kind

    @property
    def enum(self):
        """The microattn::Mask enumerator (a sliding window is causal)."""
        return "kNone" if self.kind == "none" else "kCausal"

    @property
    def value(self):
        """The microattn::Mask value: 0 kCausal, 1 kNone."""
        return int(self.kind == "none")

    @property
    def cfg_option(self):
        """What the Config line adds for it (the causal default needs nothing)."""
        return {"causal": "", "none": ", microattn::Mask::kNone"}.get(
            self.kind, f", microattn::SlidingWindow{{{self.window}}}")

    def describe(self):
        """The header comment's lines: what each token sees, and which entry points fit."""
        if self.kind == "none":
            return ["every token sees every token (microattn::Mask::kNone: an encoder).",
                    "  Use MultiHeadAttention (or ScaledDotProductAttention on your own Q, K, V); "
                    "KvAttention is causal only."]
        if self.kind == "window":
            W = self.window
            return [f"token i sees tokens i - {W - 1} .. i (microattn::SlidingWindow{{{W}}}: "
                    "causal, a window of " + (f"{W} tokens)." if W > 1 else "1 token)."),
                    "  Use MultiHeadAttention, or KvAttention (prefill and decode; a ring-buffer "
                    "KV cache of O(W) tokens, streams of any length)."]
        return ["token i sees tokens 0 .. i (microattn::Mask::kCausal, the Config's default: "
                "a decoder).",
                "  Use MultiHeadAttention, or KvAttention (prefill and decode with a KV cache)."]


def one_line(text):
    return " ".join(str(text).split())


# --- literals ------------------------------------------------------------------------------

def c_literals(values):
    """Float literals, valid C and C++, that round-trip bit-exactly: the shortest decimal that
    identifies each float32 (numpy's Dragon4 with unique=True, which assumes the correctly
    rounded conversion that GCC and Clang do), always with a '.' or an exponent so that '0',
    '1', '-0' become 0.0f, 1.0f, -0.0f (the old f"{v:.9g}f" wrote 0f, an invalid literal).
    values: 1-D float32 numpy array, all finite (checked before)."""
    import numpy as np
    out = []
    for v in values:
        a = abs(v)
        if a == 0 or 1e-4 <= a < 1e16:
            s = np.format_float_positional(v, unique=True, trim="0")
        else:
            s = np.format_float_scientific(v, unique=True, trim="-")
        out.append(s)
    # Guard: reading the text back must give the same bits. Through a double this could in
    # theory differ from a direct decimal -> float rounding only on an exact float midpoint,
    # which a shortest-unique string never is; anything that still differs (a numpy bug) is
    # written as the double's repr, which is within half a double ulp of the value and so
    # rounds to it directly.
    back = np.array([float(s) for s in out], dtype=np.float64).astype(np.float32)
    bad = np.nonzero(back.view(np.uint32) != values.view(np.uint32))[0]
    for i in bad:
        out[i] = repr(float(values[i]))
    return [s + "f" for s in out]


def c_array(name, values, per_line=8):
    """`MICROATTN_EXPORT_ALIGN16 static const float name[n] = {...};` (static: every
    translation unit that includes the header gets its own copy, as C requires). An int8
    numpy array gives `static const int8_t name[n]` of plain decimal integers."""
    import numpy as np
    if values.dtype == np.int8:
        ctype, per_line = "int8_t", 16
        lits = [str(int(v)) for v in values]
    else:
        ctype, lits = "float", c_literals(values)
    rows = [", ".join(lits[i:i + per_line]) for i in range(0, len(lits), per_line)]
    body = ",\n  ".join(rows)
    return (f"MICROATTN_EXPORT_ALIGN16 static const {ctype} {name}[{len(lits)}] = "
            f"{{\n  {body}\n}};\n")


# --- int8 quantisation ------------------------------------------------------------------------

def quantize_int8(w):
    """Symmetric per-output-column int8 quantisation of one weight matrix in PyTorch's [out][in]
    layout (one scale per row here = per output column o of W(i, o)), bit for bit what
    microattn::quantize_int8() computes in C++ (include/microattn/weights.hpp), in float32
    (float64 only to compare exact products):
      scale[o] = max_i |W(i, o)| / 127, then (microattn::column_scale) a subnormal scale one
        float up if 127 * scale < max (it has few bits: the largest weight would clamp by many
        scales), and one float down if 127 * scale is not a finite float32;  scale 0 (an
        all-zero column): q = 0;
      r = w / scale;  a = |r|;  f = trunc(min(a, 127));  a = f + 1 if a - f >= 0.5 and f < 127
        else f;  q = -a if r < 0 else a  (round half away from zero, clamped to [-127, 127]).
    w: finite float32 [out][in]. Returns (q int8 [out][in], scale float32 [out])."""
    import numpy as np
    w = np.ascontiguousarray(w, dtype=np.float32)
    f32 = np.float32
    amax = np.abs(w).max(axis=1) if w.shape[1] else np.zeros(w.shape[0], dtype=f32)
    scale = (amax / f32(127.0)).astype(f32)
    f64 = np.float64
    up = (scale < np.finfo(f32).tiny) & (scale.astype(f64) * 127.0 < amax.astype(f64))
    scale = np.where(up, np.nextafter(scale, f32(np.inf)), scale).astype(f32)
    down = scale.astype(f64) * 127.0 > f64(np.finfo(f32).max)
    scale = np.where(down, np.nextafter(scale, f32(0.0)), scale).astype(f32)
    zero = scale == f32(0.0)
    div = np.where(zero, f32(1.0), scale).astype(f32)[:, None]
    r = w / div
    a = np.abs(r)
    f = np.trunc(np.minimum(a, f32(127.0)))
    a = np.where((a - f >= f32(0.5)) & (f < f32(127.0)), f + f32(1.0), f)
    q = np.where(r < f32(0.0), -a, a).astype(np.int8)
    q[zero, :] = 0
    assert r.dtype == a.dtype == f.dtype == np.float32
    return q, scale


def quantize_int8_groups(w, group):
    """quantize_int8 per group of `group` consecutive inputs of each output row (the last group
    may be shorter), bit for bit microattn::quantize_int8_groups() with `to` kOutIn: each
    group is quantize_int8 of its columns of w. w: finite float32 [out][in]. Returns
    (q int8 [out][in], scales float32 [out][groups]: a row's groups beside each other, the
    model file's kOutIn order)."""
    import numpy as np
    w = np.ascontiguousarray(w, dtype=np.float32)
    q = np.empty(w.shape, dtype=np.int8)
    groups = -(-w.shape[1] // group)
    scales = np.empty((w.shape[0], groups), dtype=np.float32)
    for g in range(groups):
        q[:, g * group:(g + 1) * group], scales[:, g] = quantize_int8(
            w[:, g * group:(g + 1) * group])
    return q, scales


def dequantize_groups(q, scales, group):
    """float32 [out][in] of quantize_int8_groups' output."""
    import numpy as np
    return (q.astype(np.float32) * np.repeat(scales, group, axis=1)[:, :q.shape[1]]).astype(
        np.float32)


def layer_output_error(L, mask, deq, tokens=32, seed=0):
    """The layer's output error from int8 weights alone and with integer compute
    (microattn::Compute::kInt8: x's rows and the attended heads' rows quantised to int8 per row
    at run time, max |row| / 127, to nearest with ties to even), each against the fp32 layer,
    on `tokens` random N(0, 1) input rows (seeded), in float64, without RoPE; deq: role ->
    dequantised [out][in] matrix. Returns ((rel_w8, max_w8), (rel_int, max_int)):
    ||y - y_fp32||_F / ||y_fp32||_F and max |y - y_fp32| / max |y_fp32|. A check of what
    these weights lose, not of a trained model's real activations (outliers cost more)."""
    import numpy as np
    x = np.random.default_rng(seed).standard_normal((tokens, L.d_model))
    H, K, dh = L.heads, L.kv_heads, L.d_head
    scale = L.scale if L.scale is not None else 1.0 / math.sqrt(dh)
    i, j = np.arange(tokens)[:, None], np.arange(tokens)[None, :]
    sees = {"none": np.ones((tokens, tokens), bool), "causal": j <= i}.get(
        mask.kind, (j <= i) & (j > i - mask.window))

    def rows8(a):
        s = np.abs(a).max(axis=1, keepdims=True) / 127.0
        return np.rint(a / np.where(s > 0, s, 1.0)) * s

    def forward(w, quant_rows):
        def lin(a, r):
            b = L.t.get("b" + r[1])
            return (rows8(a) if quant_rows else a) @ w[r].astype(np.float64).T + (
                0.0 if b is None else b.astype(np.float64))
        q, k, v = lin(x, "wq"), lin(x, "wk"), lin(x, "wv")
        heads = []
        for h in range(H):
            g = h // (H // K)
            sc = q[:, h * dh:(h + 1) * dh] @ k[:, g * dh:(g + 1) * dh].T * scale
            sc = np.where(sees, sc, -np.inf)
            p = np.exp(sc - sc.max(axis=1, keepdims=True))
            heads.append((p / p.sum(axis=1, keepdims=True)) @ v[:, g * dh:(g + 1) * dh])
        return lin(np.concatenate(heads, axis=1), "wo")

    y = forward(L.t, False)
    return relative_errors(y, forward(deq, False)), relative_errors(y, forward(deq, True))


def quantize_matrices(t, roles, names):
    """Each [out][in] matrix t[r] of roles -> int8 [out][in] + one scale per row (output column):
    ({r: q, scale_role(r): scale}, {r: quant_error}, report lines naming each matrix by
    names[r])."""
    arrays, qerr, report = {}, {}, []
    for r in roles:
        q, s = quantize_int8(t[r])
        qerr[r] = quant_error(t[r], q, s)
        arrays[r], arrays[scale_role(r)] = q, s
        rows, cols = t[r].shape
        m, rms, rel = qerr[r]
        report.append(f"int8 {names[r]} (out {rows}, in {cols}): max |w - s*q| {m:.3e}, "
                      f"rms {rms:.3e}, ||W - Wq||_F/||W||_F {rel:.3e}")
    return arrays, qerr, report


def scale_role(r):
    """The scales' array of matrix role r: wq -> sq, wdkv -> sdkv."""
    return "s" + r[1:]


def dequantized(arrays, roles):
    """role -> the float64 [out][in] matrix s[o] * q(o, i) of quantize_matrices' arrays."""
    import numpy as np
    return {r: arrays[scale_role(r)].astype(np.float64)[:, None] * arrays[r] for r in roles}


def relative_errors(y, z):
    """(||z - y||_F / ||y||_F, max |z - y| / max |y|), 0 where y is all zero."""
    import numpy as np
    ny, my = float(np.linalg.norm(y)), float(np.abs(y).max())
    return (float(np.linalg.norm(z - y)) / ny if ny > 0 else 0.0,
            float(np.abs(z - y).max()) / my if my > 0 else 0.0)


def quant_error(w, q, scale):
    """(max |w - s q|, rms of w - s q, ||W - Wq||_F / ||W||_F) of one quantised matrix, as
    microattn::QuantError reports them, computed in float64, where s * q is exact (a report,
    not part of the bit-exact quantisation; microattn's float version agrees to rounding)."""
    import numpy as np
    w64 = np.asarray(w, dtype=np.float64)
    e = w64 - scale.astype(np.float64)[:, None] * q.astype(np.float64)
    if not e.size:
        return 0.0, 0.0, 0.0
    e2, w2 = float((e * e).sum()), float((w64 * w64).sum())
    return float(np.abs(e).max()), math.sqrt(e2 / e.size), (math.sqrt(e2 / w2) if w2 > 0
                                                            else 0.0)


ALIGN_MACRO = """\
/* 16-byte alignment for the arrays: alignas in C++, _Alignas in C11. Shared by every header
   this tool writes, hence the guard. */
#ifndef MICROATTN_EXPORT_ALIGN16
#ifdef __cplusplus
#define MICROATTN_EXPORT_ALIGN16 alignas(16)
#else
#define MICROATTN_EXPORT_ALIGN16 _Alignas(16)
#endif
#endif
"""


# --- reading tensors ------------------------------------------------------------------------

def to_float32(label, t):
    """A floating tensor as a float32 numpy array, refusing what a float array cannot hold."""
    import numpy as np
    import torch
    if not isinstance(t, torch.Tensor):
        raise Refusal(f"{label} is a {type(t).__name__}, not a tensor")
    if t.is_quantized or t.is_complex() or not t.is_floating_point():
        raise Refusal(f"{label} has dtype {t.dtype}; microattn takes real floating weights "
                      "(float32, float16, bfloat16, float64)")
    src = t.detach().to("cpu")
    fin = torch.isfinite(src)
    if not bool(fin.all()):
        idx = tuple(int(i) for i in (~fin).nonzero()[0].tolist())
        raise Refusal(f"{label}[{', '.join(map(str, idx))}] is {src[idx].item()}: "
                      "microattn weights must be finite")
    a = src.float().numpy().astype(np.float32, copy=True)
    fin = np.isfinite(a)
    if not fin.all():  # float64 values beyond float32's range
        idx = tuple(int(i) for i in np.argwhere(~fin)[0])
        raise Refusal(f"{label}[{', '.join(map(str, idx))}] is {src[idx].item()!r}, beyond "
                      "float32's range")
    return a


class Layer:
    """One attention layer's weights in PyTorch's [out][in] layout, with its shape."""

    def __init__(self, source, kind):
        self.source = source  # what it was exported from, for the header comment
        self.kind = kind
        self.t = {}           # role -> float32 numpy array
        self.heads = self.kv_heads = self.d_head = self.d_model = None  # check_shapes fills in
        self.out_dim = None   # W_O's output width (check_shapes: o_proj's rows)
        self.biases = ()      # the bias roles present, in BIAS_ROLES order (check_shapes)
        self.scale = None     # the module's score scale when it says so
        self.rope = None      # the RoPE the module states (llama_rope), None when it does not
        self.notes = []
        # What the module says about how it is called, [(kind, why)]: kind "causal", "none" or
        # a window W (int); mask_hints() compares it with --mask. (A state dict says nothing.)
        self.evidence = []

    def put(self, role, label, tensor):
        self.t[role] = to_float32(label, tensor)


def pick(what, candidates):
    """The one value that every source that states it agrees on (None if none states it)."""
    given = [(src, v) for src, v in candidates if v is not None]
    if len({v for _, v in given}) > 1:
        raise Refusal(f"conflicting {what}: " + ", ".join(f"{s} = {v}" for s, v in given))
    return given[0][1] if given else None


def int_attr(obj, name, where):
    if obj is None:
        return None
    v = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise Refusal(f"{where}{name} is {v!r}, not a whole number")
    return int(v)


def check_shapes(L, layout):
    """Every array against heads, kv heads, d_head: the header's shape is what the arrays hold."""
    t = L.t
    for r in ("wq", "wk", "wv", "wo"):
        if r not in t:
            raise Refusal(f"no {r[1].upper()} projection weight found ({L.source})")
    if t["wq"].ndim != 2:
        raise Refusal(f"the query weight has shape {list(t['wq'].shape)}, not [out][in]")
    q_rows, d_model = t["wq"].shape
    H = L.heads
    if H is None or H < 1:
        raise Refusal(f"the number of heads is unknown ({L.source}); pass --heads")
    if L.d_head is None:
        if q_rows % H:
            raise Refusal(f"the query projection has {q_rows} rows, not a whole number of "
                          f"{H} heads (d_head would be {q_rows / H:g})")
        L.d_head = q_rows // H
    dh = L.d_head
    if dh < 1 or H * dh != q_rows:
        raise Refusal(f"the query projection has {q_rows} rows but heads {H} x head_dim {dh} "
                      f"= {H * dh}")
    k_rows = t["wk"].shape[0]
    if L.kv_heads is None:
        if k_rows % dh:
            raise Refusal(f"the key projection has {k_rows} rows, not a whole number of heads "
                          f"of {dh}")
        L.kv_heads = k_rows // dh
    K = L.kv_heads
    if K < 1 or H % K:
        raise Refusal(f"{K} key/value heads do not divide {H} query heads")
    if t["wo"].ndim != 2:
        raise Refusal(f"the output weight has shape {list(t['wo'].shape)}, not [out][in]")
    # W_O's output width is its own (microattn::OutDim): the teaching notes' out_proj maps
    # d_out to d_out, not back to d_in. Its input width must still be H * d_head.
    od = L.out_dim if L.out_dim is not None else t["wo"].shape[0]
    want = {"wq": (H * dh, d_model), "wk": (K * dh, d_model), "wv": (K * dh, d_model),
            "wo": (od, H * dh), "bq": (H * dh,), "bk": (K * dh,), "bv": (K * dh,),
            "bo": (od,)}
    names = {"wq": "query weight", "wk": "key weight", "wv": "value weight",
             "wo": "output weight", "bq": "query bias", "bk": "key bias", "bv": "value bias",
             "bo": "output bias"}
    for r, a in t.items():
        if tuple(a.shape) != want[r]:
            raise Refusal(f"the {names[r]} has shape {list(a.shape)} but heads {H}, key/value "
                          f"heads {K}, head_dim {dh}, d_model {d_model}, W_O width {od} need "
                          f"{list(want[r])}")
    if od < 1:
        raise Refusal(f"the output weight has shape {list(t['wo'].shape)}: no output columns")
    if layout == "panel16" and (dh % PANEL or od % PANEL):
        width = f"d_model {od}" if od == d_model else f"W_O width (OutDim) {od}"
        raise Refusal(f"--layout panel16 needs d_head and W_O's output width multiples of "
                      f"{PANEL} (d_head {dh}, {width}); use --layout outin")
    if d_model > 1 << 20 or H * dh > 1 << 20 or od > 1 << 20:
        raise Refusal(f"d_model {d_model}, H*d_head {H * dh} or W_O width {od} exceeds "
                      "microattn's limit 2^20")
    L.d_model, L.out_dim = d_model, od
    L.biases = tuple(r for r in BIAS_ROLES if r in t)


# --- nn.MultiheadAttention ------------------------------------------------------------------

def from_mha(m, where, subj, heads_arg, kv_arg):
    """where: the parameter-name prefix ("layers.0.self_attn."); subj: the module in words."""
    import torch
    L = Layer(f"nn.MultiheadAttention from {subj}", "nn.MultiheadAttention")
    E = int(m.embed_dim)
    if getattr(m, "bias_k", None) is not None or getattr(m, "bias_v", None) is not None:
        raise Refusal(f"{subj} was built with add_bias_kv=True (bias_k/bias_v append a learned "
                      "key/value token), which microattn cannot compute")
    if getattr(m, "add_zero_attn", False):
        raise Refusal(f"{subj} was built with add_zero_attn=True (a zero key/value token), "
                      "which microattn cannot compute")
    if int(m.kdim) != E or int(m.vdim) != E:
        raise Refusal(f"{subj} has kdim {m.kdim}, vdim {m.vdim} != embed_dim {E}: microattn "
                      "projects keys and values from the same input as queries")
    known = {"in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight",
             "in_proj_bias", "out_proj.weight", "out_proj.bias"}
    for n, _ in m.named_parameters():
        if n not in known:
            raise Refusal(f"{subj} has a parameter {where}{n} that microattn cannot represent")
    H = pick("number of heads", [("num_heads", int(m.num_heads)), ("--heads", heads_arg)])
    pick("number of key/value heads (nn.MultiheadAttention has no GQA)",
         [("num_heads", H), ("--kv-heads", kv_arg)])
    L.heads, L.kv_heads = H, H
    L.d_head = pick("head width", [("head_dim", int(m.head_dim)),
                                    ("embed_dim / num_heads", E // H if E % H == 0 else None)])
    if getattr(m, "in_proj_weight", None) is not None:
        w = to_float32(f"{where}in_proj_weight", m.in_proj_weight)
        if w.shape != (3 * E, E):
            raise Refusal(f"{where}in_proj_weight has shape {list(w.shape)}, not [{3 * E}, {E}]")
        L.t.update(wq=w[:E], wk=w[E:2 * E], wv=w[2 * E:])
    else:
        for r, n in (("wq", "q_proj_weight"), ("wk", "k_proj_weight"), ("wv", "v_proj_weight")):
            if getattr(m, n, None) is None:
                raise Refusal(f"{subj} has neither in_proj_weight nor {n}")
            L.put(r, f"{where}{n}", getattr(m, n))
    out = getattr(m, "out_proj", None)
    if not isinstance(out, torch.nn.Linear):
        raise Refusal(f"{where}out_proj is {type(out).__name__}, not an nn.Linear")
    L.put("wo", f"{where}out_proj.weight", out.weight)
    L.out_dim = E  # nn.MultiheadAttention's out_proj maps back to embed_dim
    # in_proj_bias holds Q, K and V's biases (all three or none); out_proj.bias is O's, on its
    # own (bias=False and then setting one of them gives Bias::kQkv or Bias::kO).
    b_in = getattr(m, "in_proj_bias", None)
    if b_in is not None:
        b = to_float32(f"{where}in_proj_bias", b_in)
        if b.shape != (3 * E,):
            raise Refusal(f"{where}in_proj_bias has shape {list(b.shape)}, not [{3 * E}]")
        L.t.update(bq=b[:E], bk=b[E:2 * E], bv=b[2 * E:])
    if out.bias is not None:
        L.put("bo", f"{where}out_proj.bias", out.bias)
    return L


# --- LLaMA / Hugging Face style ---------------------------------------------------------------

PROJ_NEEDS = ("q_proj, k_proj, v_proj and o_proj (or out_proj), or W_query, W_key, W_value and "
              "out_proj")


def proj_names(present, missing, subj):
    """role -> the name its projection has (PROJ_NAMES), given present(name) -> bool; refuses a
    missing projection (missing(role) words it) or one under two names."""
    names = {}
    for r, cands in PROJ_NAMES.items():
        found = [n for n in cands if present(n)]
        if len(found) > 1:
            word = {"q": "query", "k": "key", "v": "value", "o": "output"}[r]
            raise Refusal(f"{subj} has both {found[0]} and {found[1]}: which one is the {word} "
                          "projection is unclear")
        if not found:
            raise Refusal(missing(r))
        names[r] = found[0]
    return names


def from_llama(m, where, subj, heads_arg, kv_arg):
    import torch
    names = proj_names(lambda n: getattr(m, n, None) is not None,
                       lambda r: f"{subj} has no {' or '.join(PROJ_NAMES[r])} (a LLaMA-style "
                                 f"module needs {PROJ_NEEDS})", subj)
    L = Layer(f"{type(m).__name__} ({'/'.join(names.values())}) from {subj}", "llama")
    lin = {}
    for r, n in names.items():
        c = getattr(m, n)
        if not isinstance(c, torch.nn.Linear):
            raise Refusal(f"{where}{n} is a {type(c).__name__}, not an nn.Linear")
        lin[r] = c
    known = {f"{n}.{p}" for n in names.values() for p in ("weight", "bias")}
    for n, _ in m.named_parameters():
        if n not in known:
            raise Refusal(f"{subj} has a parameter {where}{n} that microattn cannot represent "
                          "(it computes only the q/k/v/o projections and attention)")
    cfg = getattr(m, "config", None)
    H = pick("number of heads", [
        ("num_heads", int_attr(m, "num_heads", where)),
        ("config.num_attention_heads", int_attr(cfg, "num_attention_heads", where + "config.")),
        ("--heads", heads_arg)])
    if H is None:
        raise Refusal(f"{subj} does not say its number of heads (no num_heads attribute, no "
                      "config.num_attention_heads); pass --heads")
    K = pick("number of key/value heads", [
        ("num_key_value_heads", int_attr(m, "num_key_value_heads", where)),
        ("config.num_key_value_heads", int_attr(cfg, "num_key_value_heads", where + "config.")),
        ("--kv-heads", kv_arg)])
    dh = pick("head width", [("head_dim", int_attr(m, "head_dim", where)),
                              ("config.head_dim", int_attr(cfg, "head_dim", where + "config."))])
    L.heads, L.kv_heads, L.d_head = H, K, dh
    for r, n in names.items():  # any subset of the four may have a bias
        L.put(f"w{r}", f"{where}{n}.weight", lin[r].weight)
        if lin[r].bias is not None:
            L.put(f"b{r}", f"{where}{n}.bias", lin[r].bias)
    L.out_dim = int(lin["o"].out_features)  # W_O's width: microattn::OutDim when != d_model
    # Cross-checks against what the module also states (check_shapes does the Linear shapes).
    d_model = lin["q"].in_features
    pick("d_model", [(f"{names['q']}.in_features", d_model),
                     ("hidden_size", int_attr(m, "hidden_size", where)),
                     ("config.hidden_size", int_attr(cfg, "hidden_size", where + "config."))])
    groups = int_attr(m, "num_key_value_groups", where)
    if groups is not None and K is not None and K * groups != H:
        raise Refusal(f"{where}num_key_value_groups {groups} != heads {H} / key/value heads {K}")
    causal = getattr(m, "is_causal", None)
    if isinstance(causal, bool):
        L.evidence.append(("causal" if causal else "none", f"{subj} says is_causal={causal}"))
    window = module_window(m, cfg, subj)
    if window is not None:
        L.evidence.append(window)
    scaling = getattr(m, "scaling", None)
    if isinstance(scaling, numbers.Real) and not isinstance(scaling, bool):
        L.scale = float(scaling)
    L.rope = llama_rope(m, cfg, subj)
    if names["o"] == "o_proj" and L.rope is None:  # LLaMA, Qwen2 ...; Whisper has no RoPE
        L.notes.append(ROPE_NOTE)
    return L


def llama_rope(m, cfg, subj):
    """The RoPE a LLaMA-style module states, for the header (the latent header's names): None
    when neither it nor its config says rope_theta (nor an older transformers' rotary_emb.base),
    else {base, pairing ("adjacent" or "half"), factor (partial_rotary_factor)}. The pairing is
    the module's rope_pairing (tools/train_tiny_lm.py's attention), else half-split: Hugging
    Face's rotate_half, which every transformers q_proj/o_proj attention uses. Refused:
    rope_scaling other than None (the layers' RoPE has no scaling), sources that disagree, a
    base or factor that is not a number in range, an unknown rope_pairing."""
    def real(obj, name):
        v = getattr(obj, name, None) if obj is not None else None
        if v is not None and (isinstance(v, bool) or not isinstance(v, numbers.Real)):
            raise Refusal(f"{subj} has {name} {v!r}, not a number")
        return None if v is None else float(v)
    for obj, where in ((m, ""), (cfg, "config.")):
        rs = getattr(obj, "rope_scaling", None) if obj is not None else None
        if rs is not None:
            kind = rs.get("rope_type", rs.get("type")) if isinstance(rs, dict) else rs
            raise Refusal(f"{subj} has {where}rope_scaling {kind!r}: microattn's RoPE has no "
                          "scaling (rope_scaling must be None)")
    base = pick("RoPE base", [("rope_theta", real(m, "rope_theta")),
                              ("config.rope_theta", real(cfg, "rope_theta")),
                              ("rotary_emb.base", real(getattr(m, "rotary_emb", None), "base"))])
    if base is None:
        return None
    factor = pick("partial_rotary_factor", [
        ("partial_rotary_factor", real(m, "partial_rotary_factor")),
        ("config.partial_rotary_factor", real(cfg, "partial_rotary_factor"))])
    factor = 1.0 if factor is None else factor
    pairing = getattr(m, "rope_pairing", None)
    if pairing is not None and pairing not in ROPE_PAIRINGS:
        raise Refusal(f"{subj} has rope_pairing {pairing!r}: not one of "
                      f"{', '.join(ROPE_PAIRINGS)}")
    if not 0 < base < math.inf or not 0 < factor <= 1:
        raise Refusal(f"{subj} has rope_theta {base!r} and partial_rotary_factor {factor!r}: "
                      "need a finite base > 0 and a factor in (0, 1]")
    return {"base": base, "factor": factor,
            "pairing": "adjacent" if pairing == "adjacent" else "half",
            "stated": pairing is not None}


def module_window(m, cfg, subj):
    """(W, why) when a Hugging Face-style module says its layer attends through a sliding window
    of W tokens, else None. The module's own sliding_window attribute decides when it has one
    (newer transformers set it per layer, None for full-attention layers); else its config's
    sliding_window, unless use_sliding_window is False (Qwen2's default), config.layer_types
    names this layer (layer_idx) "full_attention", or layer_idx < max_window_layers (Qwen2:
    the first max_window_layers layers attend fully)."""
    def whole(v):
        return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1
    if "sliding_window" in vars(m):
        w = vars(m)["sliding_window"]
        return (int(w), f"{subj} has sliding_window {w}") if whole(w) else None
    w = getattr(cfg, "sliding_window", None) if cfg is not None else None
    if not whole(w) or getattr(cfg, "use_sliding_window", True) is False:
        return None
    idx = getattr(m, "layer_idx", None)
    types = getattr(cfg, "layer_types", None)
    if whole(idx) or (isinstance(idx, numbers.Integral) and not isinstance(idx, bool) and
                      idx == 0):
        if isinstance(types, (list, tuple)) and idx < len(types):
            if types[idx] != "sliding_attention":
                return None
        elif whole(getattr(cfg, "max_window_layers", None)) and idx < cfg.max_window_layers:
            return None
    use = " and use_sliding_window True" if getattr(cfg, "use_sliding_window", None) else ""
    return int(w), f"{subj}'s config has sliding_window {w}{use}"


def mask_hints(L, mask):
    """One line for each hint of the module that disagrees with --mask (for stderr and the
    header; never a refusal: the module's own forward may be called either way)."""
    out = []
    for kind, why in L.evidence:
        if isinstance(kind, int):
            if mask.kind != "window" or mask.window != kind:
                out.append(f"{why}: if this layer attends through that window, pass --mask "
                           f"window:{kind} (this header: --mask {mask.arg})")
        elif kind == "causal" and mask.kind == "none":
            out.append(f"{why}, so it is probably called with a causal mask: if so, pass --mask "
                       "causal (this header: --mask none, every token sees every token)")
        elif kind == "none" and mask.kind != "none":
            out.append(f"{why}, so it probably attends to every token (no mask): if so, pass "
                       f"--mask none (this header: --mask {mask.arg})")
    return out


# --- modules ----------------------------------------------------------------------------------

def module_kind(m):
    import torch.nn as nn
    if isinstance(m, nn.MultiheadAttention):
        return "mha"
    if isinstance(m, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        return "tlayer"
    if any(isinstance(getattr(m, n, None), nn.Module) for n in LATENT_MARKS):
        return "latent"  # before "llama": it has q_proj and o_proj too
    if any(isinstance(getattr(m, n, None), nn.Module) for n in ("q_proj", "k_proj", "v_proj",
                                                               "o_proj", "W_query", "W_key",
                                                               "W_value")):
        return "llama"
    return None


def candidates(root):
    found = []
    for n, c in root.named_modules():
        k = module_kind(c)
        if k and not (k == "mha" and n.endswith("self_attn") and
                      module_kind(root.get_submodule(n.rpartition(".")[0])) == "tlayer"):
            found.append(f"{n or '(top)'} ({type(c).__name__})")
    return found


def quoted(path, origin):
    """A submodule in words: "'layers.0' of model.pt", or "model.pt" for the top."""
    return f"'{path}' of {origin}" if path else origin


def layer_from_module(root, path=None, heads=None, kv_heads=None, origin="the module"):
    import torch
    if not isinstance(root, torch.nn.Module):
        raise Refusal(f"{origin} holds a {type(root).__name__}, not an nn.Module"
                      + (" (a state dict? use --state-dict with --heads)"
                         if isinstance(root, dict) else ""))
    m, where = root, ""
    if path:
        try:
            m = root.get_submodule(path)
        except AttributeError:
            found = candidates(root)
            raise Refusal(f"{origin} has no submodule '{path}'; attention modules in it: "
                          f"{summary(found)}") from None
        where = path + "."
    kind = module_kind(m)
    if kind is None:
        found = candidates(m)
        raise Refusal(f"{quoted(path, origin)} is a {type(m).__name__}, not {MODULE_KINDS}"
                      + (f"; attention modules in it: {summary(found)} (pass one with --path)"
                         if found else ""))
    if kind == "tlayer":
        L = from_mha(m.self_attn, where + "self_attn.",
                     quoted(where + "self_attn", origin), heads, kv_heads)
        L.source = f"the self_attn of {type(m).__name__} {quoted(path, origin)}"
        decoder = isinstance(m, torch.nn.TransformerDecoderLayer)
        L.notes.append(f"{type(m).__name__}: only its self-attention is exported (not the "
                       "feed-forward, norms" + (", cross-attention" if decoder else "") +
                       "); the mask is --mask's, not part of the weights")
        if decoder:
            L.evidence.append(("causal", f"{quoted(path, origin)} is a "
                                         "TransformerDecoderLayer"))
        else:
            L.evidence.append(("none", f"{quoted(path, origin)} is a TransformerEncoderLayer"))
    elif kind == "mha":
        L = from_mha(m, where, quoted(path, origin), heads, kv_heads)
    elif kind == "latent":
        L = from_latent(m, where, quoted(path, origin), heads, kv_heads)
    else:
        L = from_llama(m, where, quoted(path, origin), heads, kv_heads)
    return L


# --- state dicts ------------------------------------------------------------------------------

def layer_from_state_dict(sd, heads, kv_heads=None, prefix="", origin="the state dict"):
    import torch
    if heads is None:
        raise Refusal("--heads is required with --state-dict: a state dict does not record the "
                      "number of heads (or use --module, which reads it)")
    if not isinstance(sd, dict) or not all(isinstance(v, torch.Tensor) for v in sd.values()):
        raise Refusal(f"{origin} is not a state dict (a dict of tensors)")
    p = prefix
    under = sorted(k[len(p):] for k in sd if k.startswith(p))
    if not under:
        raise Refusal(f"{origin} has no keys under prefix '{p}' (it has {summary(sd)})"
                      + prefix_hint(sd, p))

    def need(key):
        if p + key not in sd:
            raise Refusal(f"{origin} has no '{p}{key}' (keys under '{p}': "
                          f"{summary(under)})")
        return sd[p + key]

    for k in ("bias_k", "bias_v"):
        if p + k in sd:
            raise Refusal(f"{origin} has '{p}{k}': the module was built with add_bias_kv=True, "
                          "which microattn cannot compute")
    if p + "kv_a_proj_with_mqa.weight" in sd:
        raise Refusal(f"{origin} holds latent attention weights ('{p}kv_a_proj_with_mqa.weight'"
                      "): a state dict does not record their heads and head widths; export the "
                      "module with --module")
    if p + "in_proj_weight" in sd or p + "q_proj_weight" in sd:
        L = Layer(f"state dict {origin}, nn.MultiheadAttention keys under '{p}', "
                  f"--heads {heads}", "nn.MultiheadAttention")
        if p + "in_proj_weight" in sd:
            w = to_float32(p + "in_proj_weight", sd[p + "in_proj_weight"])
            if w.ndim != 2 or w.shape[0] != 3 * w.shape[1]:
                raise Refusal(f"{p}in_proj_weight has shape {list(w.shape)}, not [3*E, E]")
            E = w.shape[1]
            L.t.update(wq=w[:E], wk=w[E:2 * E], wv=w[2 * E:])
        else:
            for r, n in (("wq", "q_proj_weight"), ("wk", "k_proj_weight"),
                         ("wv", "v_proj_weight")):
                L.put(r, p + n, need(n))
            E = L.t["wq"].shape[1]
            if L.t["wk"].shape[1] != E or L.t["wv"].shape[1] != E:
                raise Refusal(f"{origin}: kdim/vdim ({L.t['wk'].shape[1]}, "
                              f"{L.t['wv'].shape[1]}) differ from embed_dim {E}: microattn "
                              "projects keys and values from the same input as queries")
        L.put("wo", p + "out_proj.weight", need("out_proj.weight"))
        L.out_dim = E  # nn.MultiheadAttention's out_proj maps back to embed_dim
        b_in, b_out = sd.get(p + "in_proj_bias"), sd.get(p + "out_proj.bias")
        if b_in is not None:  # Q, K and V's biases, all three or none
            b = to_float32(p + "in_proj_bias", b_in)
            if b.shape != (3 * E,):
                raise Refusal(f"{p}in_proj_bias has shape {list(b.shape)}, not [{3 * E}]")
            L.t.update(bq=b[:E], bk=b[E:2 * E], bv=b[2 * E:])
        if b_out is not None:
            L.put("bo", p + "out_proj.bias", b_out)
    elif any(p + f"{n}.weight" in sd for n in ("q_proj", "k_proj", "v_proj", "o_proj",
                                                "W_query", "W_key", "W_value")):
        names = proj_names(
            lambda n: p + f"{n}.weight" in sd,
            lambda r: f"{origin} has no " + " or ".join(f"'{p}{n}.weight'" for n in PROJ_NAMES[r])
                      + f" (keys under '{p}': {summary(under)})", origin)
        L = Layer(f"state dict {origin}, LLaMA-style keys ({'/'.join(names.values())}) under "
                  f"'{p}', --heads {heads}", "llama")
        for r, n in names.items():  # any subset of the four may have a bias
            L.put(f"w{r}", f"{p}{n}.weight", sd[p + f"{n}.weight"])
            if p + f"{n}.bias" in sd:
                L.put(f"b{r}", f"{p}{n}.bias", sd[p + f"{n}.bias"])
        if names["o"] == "o_proj":
            L.notes.append(ROPE_NOTE)
    else:
        hint = prefix_hint(sd, p)
        if hint:  # the weights are there, under another prefix: say which
            raise Refusal(f"{origin} has no attention weights under '{p}'{hint} (keys there: "
                          f"{summary(under)})")
        raise Refusal(f"{origin} has no attention weights under '{p}': expected in_proj_weight "
                      "+ out_proj.weight (nn.MultiheadAttention) or q_proj.weight, "
                      "k_proj.weight, v_proj.weight, o_proj.weight or out_proj.weight "
                      "(LLaMA-style; or W_query/W_key/W_value.weight); keys there: "
                      f"{summary(under)}")
    q_rows = L.t["wq"].shape[0]
    if q_rows % heads:
        raise Refusal(f"the query projection has {q_rows} rows, not a whole number of --heads "
                      f"{heads} (d_head would be {q_rows / heads:g})")
    L.heads, L.d_head = heads, q_rows // heads
    k_rows = L.t["wk"].shape[0]
    derived = k_rows // L.d_head if k_rows % L.d_head == 0 else None
    if derived is None:
        raise Refusal(f"the key projection has {k_rows} rows, not a whole number of heads of "
                      f"d_head {L.d_head} (= {q_rows} query rows / --heads {heads})")
    if kv_heads is not None and kv_heads != derived:
        raise Refusal(f"--kv-heads {kv_heads} disagrees with the weights: {k_rows} key rows / "
                      f"d_head {L.d_head} = {derived} key/value heads")
    L.kv_heads = derived
    return L


# Keys that end a layer's attention weights in a state dict: what comes before one is a prefix.
QUERY_KEYS = ("in_proj_weight", "q_proj_weight", "q_proj.weight", "W_query.weight")


def prefix_hint(sd, prefix, limit=4):
    """"; keys look like they have the prefix 'X': pass --prefix X" (or a few candidates) for a
    state dict whose attention keys sit under other prefixes than --prefix; "" when none does."""
    found = []
    for k in sd:
        for q in QUERY_KEYS:
            if k.endswith(q) and (len(k) == len(q) or k[-len(q) - 1] == "."):
                c = k[:-len(q)]
                if c != prefix and c not in found:
                    found.append(c)
    if not found:
        return ""
    if found == [""]:
        return "; its attention keys have no prefix: leave out --prefix"
    if len(found) == 1:
        return f"; keys look like they have the prefix '{found[0]}': pass --prefix {found[0]}"
    more = f", ... ({len(found)} in all)" if len(found) > limit else ""
    return ("; keys look like they have a prefix: pass --prefix with one of "
            + ", ".join(f"'{c}'" for c in found[:limit]) + more)


def summary(keys, limit=12):
    keys = list(keys)
    if len(keys) <= limit:
        return ", ".join(keys) if keys else "none"
    return ", ".join(keys[:limit]) + f", ... ({len(keys) - limit} more)"


# --- the header -------------------------------------------------------------------------------

def to_panel16(w):
    """PyTorch [out][in] weight -> kPanel16: W(i, o) at [(o // 16) * in * 16 + i * 16 + o % 16]
    (the last panel zero-padded when out is not a multiple of 16)."""
    import torch
    if not isinstance(w, torch.Tensor):
        w = torch.from_numpy(w)
    out_dim, in_dim = w.shape
    pad = (-out_dim) % 16
    if pad:
        w = torch.cat([w, torch.zeros(pad, in_dim, dtype=w.dtype)], dim=0)
    return w.reshape(-1, 16, in_dim).permute(0, 2, 1).contiguous().reshape(-1)


def export_dict_panel16(d):
    return {k: to_panel16(w) if k.startswith("w") else w for k, w in d.items()}


def check_name(name):
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
        raise Refusal(f"--name {name!r} is not a C identifier")


def bias_expr(biases):
    """The microattn::Bias value for the bias roles present ("bq", ... in BIAS_ROLES order)."""
    named = {(): "kNo", ("bq", "bk", "bv"): "kQkv", BIAS_ROLES: "kYes"}
    if tuple(biases) in named:
        return f"microattn::Bias::{named[tuple(biases)]}"
    return " | ".join(f"microattn::Bias::k{r[1].upper()}" for r in biases)


def bias_words(biases):
    """The biases in words for the header comment: "biases on Q, K and V (none on O)"."""
    letters = [r[1].upper() for r in biases]
    if not letters:
        return "no biases"
    if len(letters) == 4:
        return "biases on Q, K, V and O"
    missing = [r[1].upper() for r in BIAS_ROLES if r not in biases]
    def listed(xs):
        return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]
    return f"biases on {listed(letters)} (none on {listed(missing)})"


def mask_words(mask):
    return f"microattn::Mask::{mask.enum}" + (", a sliding window" if mask.window else "")


def window_words(mask):
    return f"microattn::SlidingWindow{{{mask.window}}}" if mask.window else "no SlidingWindow"


def rope_header(L, name):
    """The header's lines for the RoPE a LLaMA-style module states (L.rope; named as the latent
    header names them): {} when it states none, else the comment, macros NAME_ROPE_BASE,
    NAME_ROPE_PAIRING (the microattn::RopePairing value), NAME_ROPE_DIMS (the rotated leading
    dimensions of each head), the shape struct's kRopeBase, kRopePairing, kRopeDims, their
    static_assert and name_rope(). Refuses rotary dimensions that are odd or none."""
    if L.rope is None:
        return {}
    N, r, dh = name.upper(), L.rope, L.d_head
    dims = int(dh * r["factor"])  # transformers: int(head_dim * partial_rotary_factor)
    if dims < 2 or dims % 2:
        raise Refusal(f"partial_rotary_factor {r['factor']!r} of head_dim {dh} rotates {dims} "
                      "dimensions: RoPE needs an even number >= 2")
    enum, num = ("kAdjacent", 0) if r["pairing"] == "adjacent" else ("kHalfSplit", 1)
    why = ("the module's rope_pairing" if r["stated"] else
           "Hugging Face's rotate_half: the module states no rope_pairing")
    part = f"all {dh}" if dims == dh else f"the first {dims} of {dh}"
    return {
        "cfg": ", microattn::Rope::kYes",
        "comment": [f"// RoPE (the module's): base {N}_ROPE_BASE = {r['base']!r}, "
                    f"RopePairing::{enum} ({why}),",
                    f"//   {part} dimensions of each head ({N}_ROPE_DIMS), positions from 0:",
                    f"//   attn.set_rope({name}_rope()) once (the Config above has "
                    "microattn::Rope::kYes)."],
        "macros": [f"#define {N}_ROPE_BASE {f32_lit(r['base'])}",
                   f"#define {N}_ROPE_PAIRING {num} /* microattn::RopePairing::{enum} */",
                   f"#define {N}_ROPE_DIMS {dims} /* rotated dimensions of each head */"],
        "members": [f"  static constexpr float kRopeBase = {N}_ROPE_BASE;",
                    "  static constexpr microattn::RopePairing kRopePairing = "
                    f"microattn::RopePairing::{enum};",
                    f"  static constexpr std::size_t kRopeDims = {N}_ROPE_DIMS;"],
        "asserts": [f"static_assert(static_cast<int>({name}_shape::kRopePairing) == "
                    f"{N}_ROPE_PAIRING,",
                    f"              \"{N}_ROPE_PAIRING no longer matches "
                    "microattn::RopePairing\");"],
        "function": [
            f"/// The module's RoPE for set_rope(): base {N}_ROPE_BASE, {enum}, the first "
            f"{N}_ROPE_DIMS",
            "/// dimensions of each head, positions from 0 (the layer needs Rope::kYes).",
            f"static inline microattn::RopeConfig {name}_rope() noexcept {{",
            "  microattn::RopeConfig r;",
            "  r.enabled = true;",
            f"  r.base = {name}_shape::kRopeBase;",
            f"  r.pairing = {name}_shape::kRopePairing;",
            f"  r.rotary_dims = {name}_shape::kRopeDims;",
            "  return r;",
            "}"],
        "include": ['#include "microattn/rope_config.hpp"']}


def render(L, name, layout="outin", quant="none", report=None, mask=None, compute="f32"):
    """The header text. mask: "causal", "none", "window:W" or a Mask (required: the weights do
    not say how the module is called). quant "int8": the four matrices quantised per output
    column (quantize_int8), with their scales; report (a list) receives the notes on the mask
    (mask_hints), one line per matrix with the quantisation error and one with the layer's
    output error (layer_output_error), for stderr. compute "int8" (needs quant "int8"): the
    Config line names microattn::Compute::kInt8 (the arrays are the same)."""
    import torch
    mask = Mask.parse(mask)
    check_name(name)
    check_shapes(L, layout)
    if quant not in QUANTS:
        raise Refusal(f"--quant {quant!r}: not one of {', '.join(QUANTS)}")
    check_compute(compute, quant)
    hints = mask_hints(L, mask)
    rope = rope_header(L, name)
    int8 = quant == "int8"
    arrays, qerr, qreport, out_err = attention_arrays(L, mask, layout, int8)
    cfg = attention_config(L, rope, mask, int8, compute)
    g = f"MICROATTN_EXPORTED_{name.upper()}_H"
    lines = [
        f"// Generated by tools/export_pytorch.py (torch {torch.__version__}) -- do not edit.",
        *attention_comment(L, name, cfg, mask, layout, compute, qerr, out_err),
        *rope.get("comment", []),
        *(f"// Note: {n}." for n in L.notes + hints),
        "", f"#ifndef {g}", f"#define {g}", "",
        *attention_macros(L, name, mask, layout, quant, rope),
        "", *(["#include <stdint.h>", ""] if int8 else []), ALIGN_MACRO,
        *attention_array_lines(name, arrays),
        *attention_cxx(L, name, mask, layout, quant, rope, arrays),
        "",
        f"#endif  // {g}",
        ""]
    if report is not None:
        report.extend(f"note: {h}" for h in hints)
        report.extend(qreport)
        if int8:
            report.append(f"int8 {out_err}")
    return "\n".join(lines)


def attention_scale(L):
    """The layer's softmax scale (the module's, else 1/sqrt(d_head)) and whether it is that
    default."""
    scale = L.scale if L.scale is not None else 1.0 / math.sqrt(L.d_head)
    return scale, abs(scale * math.sqrt(L.d_head) - 1.0) < 1e-6


def attention_arrays(L, mask, layout, int8):
    """The header's arrays by role (L.t; int8: the matrices quantised, with their scales), as
    kPanel16 for layout "panel16"; int8's errors: per matrix (qerr, with its report lines
    qreport) and the layer output's sentence out_err (None for fp32)."""
    arrays = dict(L.t)
    qerr, qreport, out_err = {}, [], None
    if int8:  # each [out][in] matrix -> int8 [out][in] + one scale per row (output column)
        quantized, qerr, qreport = quantize_matrices(L.t, MATRIX_ROLES, MATRIX_NAMES)
        arrays.update(quantized)
        (w8_rel, w8_max), (int_rel, int_max) = layer_output_error(
            L, mask, dequantized(arrays, MATRIX_ROLES))
        out_err = (f"layer output on 32 random N(0, 1) tokens, against fp32 (||e||/||y||, "
                   f"max |e| / max |y|): int8 weights {w8_rel:.2e}, {w8_max:.2e}; with integer "
                   f"compute (Compute::kInt8) {int_rel:.2e}, {int_max:.2e}")
    if layout == "panel16":
        arrays = {r: (to_panel16(a).numpy() if r.startswith("w") else a)
                  for r, a in arrays.items()}
    return arrays, qerr, qreport, out_err


def attention_config(L, rope, mask, int8, compute):
    """The Config the header names for the layer, T_max left as a name."""
    D, OD = L.d_model, L.out_dim
    return (f"microattn::Config<T_max, {D}, {L.heads}, {L.kv_heads}, {L.d_head}, "
            f"{bias_expr(L.biases)}, microattn::OutProj::kYes"
            + (f", microattn::OutDim{{{OD}}}" if OD != D else "") + rope.get("cfg", "")
            + (", microattn::WeightType::kInt8" if int8 else "")
            + (", microattn::Compute::kInt8" if compute == "int8" else "") + mask.cfg_option + ">")


def attention_comment(L, name, cfg, mask, layout, compute, qerr, out_err):
    """The header's comment after its first line, up to the RoPE's: the module, its shape and
    mask, the Config to use, the arrays (int8: their scales and errors), out_dim and a scale
    that is not the default. qerr and out_err: attention_arrays' (empty, None: fp32)."""
    int8 = out_err is not None
    N = name.upper()
    H, K, dh, D, OD = L.heads, L.kv_heads, L.d_head, L.d_model, L.out_dim
    scale, default_scale = attention_scale(L)
    od = "d_model" if OD == D else "out_dim"
    shapes = {"outin": ("[H*d_head][d_model]", "[H_kv*d_head][d_model]", f"[{od}][H*d_head]"),
              "panel16": ("[H*d_head/16][d_model][16]", "[H_kv*d_head/16][d_model][16]",
                          f"[{od}/16][H*d_head][16]")}[layout]
    bshape = {"bq": "[H*d_head]", "bk": "[H_kv*d_head]", "bv": "[H_kv*d_head]", "bo": f"[{od}]"}
    lines = [
        f"// {name}: {L.source}.",
        f"// d_model {D}, {H} query head{'s' * (H > 1)}, {K} key/value head{'s' * (K > 1)}, "
        f"d_head {dh}, {bias_words(L.biases)}, output projection"
        + (f" to out_dim {OD} (microattn::OutDim; not d_model)" if OD != D else "")
        + f"; layout microattn::WeightLayout::{LAYOUTS[layout][0]}"
        + ("; int8 weights (--quant int8)." if int8 else "."),
        f"// Mask (--mask {mask.arg}): {mask.describe()[0]}",
        f"// {mask.describe()[1]}",
        "//   The weights do not say how the module is called: this is what --mask said.",
        f"// Use with {cfg}",
        f"//   (T_max: your largest token count). In C++ `attn.set_weights({name}_weights<Cfg>())`",
        "//   sets the layout and every pointer, and a Cfg that differs from this shape or mask",
        "//   is a compile error that names the parameter.",
        f"// C: {N}_LAYOUT is the microattn::WeightLayout value (0 kInOut, 1 kOutIn, 2 kPanel16);",
    ]
    if int8:
        lines += [
            f"//   {N}_WEIGHT_TYPE 1 (microattn::WeightType::kInt8): int8_t matrices {name}_wq "
            f"{shapes[0]},",
            f"//   {name}_wk and {name}_wv {shapes[1]}, {name}_wo {shapes[2]}; float scales, one "
            "per output column,",
            f"//   {name}_sq [H*d_head], {name}_sk and {name}_sv [H_kv*d_head], {name}_so [{od}]: "
            "W(i, o) = s[o] * q(i, o)"
            + (";\n//   " + ", ".join(f"{name}_{r} {bshape[r]}" for r in L.biases)
               + " (fp32)." if L.biases else "."),
            ("// Integer compute (--compute int8): microattn::Compute::kInt8 in the Config above"
             if compute == "int8" else "// Integer compute: the same arrays with "
             "microattn::Compute::kInt8 added to the Config"),
            "//   (activations quantised per row at run time, int32 sums: docs/quantization.md).",
            "// int8 quantisation error (max |w - s*q|, rms, ||W - Wq||_F / ||W||_F):"]
        for r in MATRIX_ROLES:
            lines.append(f"//   {MATRIX_NAMES[r]} " + ", ".join(f"{v:.3e}" for v in qerr[r]))
        lines.append(f"// The {out_err} (no RoPE).")
    else:
        lines.append(
            f"//   {name}_wq {shapes[0]}, {name}_wk and {name}_wv {shapes[1]}, {name}_wo "
            f"{shapes[2]}"
            + (";\n//   " + ", ".join(f"{name}_{r} {bshape[r]}" for r in L.biases) + "."
               if L.biases else "."))
    if OD != D:
        lines.append(f"//   y has rows of {N}_OUT_DIM = {OD} floats, x of {N}_D_MODEL = {D}.")
    if not default_scale:
        lines.append(f"// Scores are scaled by {N}_SCALE = {scale!r}, not 1/sqrt(d_head): call "
                     f"attn.set_scale({N}_SCALE) once")
        lines.append("//   before forward (MultiHeadAttention, KvAttention and "
                     "ScaledDotProductAttention keep the scale they are given).")
    return lines


def attention_macros(L, name, mask, layout, quant, rope):
    """The header's C macros: NAME_D_MODEL .. NAME_SCALE, then the RoPE's."""
    N = name.upper()
    lay, lay_num = LAYOUTS[layout]
    wtype, wtype_num = QUANTS[quant]
    return [f"#define {N}_D_MODEL {L.d_model}", f"#define {N}_HEADS {L.heads}",
            f"#define {N}_KV_HEADS {L.kv_heads}", f"#define {N}_D_HEAD {L.d_head}",
            f"#define {N}_OUT_DIM {L.out_dim}",
            *(f"#define {N}_BIAS_{r[1].upper()} {int(r in L.biases)}" for r in BIAS_ROLES),
            f"#define {N}_HAS_OUT_PROJ 1",
            f"#define {N}_MASK {mask.value} /* microattn::Mask::{mask.enum} */",
            f"#define {N}_WINDOW {mask.window} /* "
            + (f"microattn::SlidingWindow{{{mask.window}}}" if mask.window else
               "no sliding window") + " */",
            f"#define {N}_LAYOUT {lay_num} /* microattn::WeightLayout::{lay} */",
            f'#define {N}_LAYOUT_NAME "{lay}"',
            f"#define {N}_WEIGHT_TYPE {wtype_num} /* microattn::WeightType::{wtype} */",
            f"#define {N}_SCALE {f32_lit(attention_scale(L)[0])}",
            *rope.get("macros", [])]


def attention_array_lines(name, arrays):
    """The header's arrays (attention_arrays'), each matrix followed by its scales, then the
    biases: one c_array each, int8_t or float."""
    import numpy as np
    order = [x for r in MATRIX_ROLES for x in (r, scale_role(r))] + list(BIAS_ROLES)
    lines = []
    for r in [r for r in order if r in arrays]:
        a = arrays[r]
        dtype = np.int8 if a.dtype == np.int8 else np.float32
        lines.append(c_array(f"{name}_{r}", np.ascontiguousarray(a, dtype=dtype).reshape(-1)))
    return lines


def attention_size_checks(L, name, int8):
    """The static_asserts that each array's size is its shape's: the matrices (as the layout
    stores them), their scales (int8) and the biases."""
    N = name.upper()
    dims = {"wq": (f"{N}_D_MODEL", f"{N}_HEADS * {N}_D_HEAD"),
            "wk": (f"{N}_D_MODEL", f"{N}_KV_HEADS * {N}_D_HEAD"),
            "wv": (f"{N}_D_MODEL", f"{N}_KV_HEADS * {N}_D_HEAD"),
            "wo": (f"{N}_HEADS * {N}_D_HEAD", f"{N}_OUT_DIM")}
    elem = "int8_t" if int8 else "float"
    size_checks = []
    for r in MATRIX_ROLES:
        in_dim, out_dim = dims[r]
        size_checks.append(
            f"static_assert(sizeof({name}_{r}) == sizeof({elem}) * microattn::weight_floats("
            f"{name}_shape::kLayout, {in_dim}, {out_dim}),\n"
            f"              \"{name}_{r}: array size and shape differ\");")
    if int8:
        for r in MATRIX_ROLES:
            size_checks.append(
                f"static_assert(sizeof({name}_s{r[1]}) == sizeof(float) * {dims[r][1]},\n"
                f"              \"{name}_s{r[1]}: array size and shape differ\");")
    blen = {"bq": f"{N}_HEADS * {N}_D_HEAD", "bk": f"{N}_KV_HEADS * {N}_D_HEAD",
            "bv": f"{N}_KV_HEADS * {N}_D_HEAD", "bo": f"{N}_OUT_DIM"}
    for r in L.biases:
        size_checks.append(f"static_assert(sizeof({name}_{r}) == sizeof(float) * {blen[r]},\n"
                           f"              \"{name}_{r}: array size and shape differ\");")
    return size_checks


def weights_call_lines(name, arrays, int8):
    """The arguments of name_weights()'s exported_weights() call, one line or (int8) two."""
    # exported_weights(w_q, w_k, w_v, w_o, b_q, b_k, b_v, b_o): positional, so a bias the
    # module does not have is an explicit nullptr (Qwen2's missing b_o, Whisper's b_k). The
    # int8 overload takes each matrix followed by its scales: (w_q, s_q, ..., w_o, s_o, b_q ...).
    call_roles = ([x for r in MATRIX_ROLES for x in (r, scale_role(r))] if int8
                  else list(MATRIX_ROLES)) + list(BIAS_ROLES)
    ptrs = ", ".join(f"{name}_{r}" if r in arrays else "nullptr" for r in call_roles)
    call = [f"      {ptrs});"]
    if len(call[0]) > 100:  # int8: two lines
        cut = ptrs.index(f"{name}_wv")
        call = [f"      {ptrs[:cut].rstrip()}", f"      {ptrs[cut:]});"]
    return call


def attention_cxx(L, name, mask, layout, quant, rope, arrays):
    """The C++ part: the shape struct, its static_asserts and the arrays' size checks,
    name_weights<Cfg>() and (RoPE) name_rope()."""
    N = name.upper()
    lay, wtype = LAYOUTS[layout][0], QUANTS[quant][0]
    default_scale = attention_scale(L)[1]
    return [
        "#ifdef __cplusplus",
        "#include <cstddef>",
        "",
        *rope.get("include", []),
        '#include "microattn/weights.hpp"',
        "",
        f"/// The shape {name}'s arrays were exported with; microattn::exported_weights() compares",
        "/// it with a Config at compile time.",
        f"struct {name}_shape {{",
        f"  static constexpr std::size_t kDModel = {N}_D_MODEL;",
        f"  static constexpr std::size_t kHeads = {N}_HEADS;",
        f"  static constexpr std::size_t kKvHeads = {N}_KV_HEADS;",
        f"  static constexpr std::size_t kDHead = {N}_D_HEAD;",
        f"  static constexpr std::size_t kOutDim = {N}_OUT_DIM;",
        f"  static constexpr bool kBiasQ = {N}_BIAS_Q != 0;",
        f"  static constexpr bool kBiasK = {N}_BIAS_K != 0;",
        f"  static constexpr bool kBiasV = {N}_BIAS_V != 0;",
        f"  static constexpr bool kBiasO = {N}_BIAS_O != 0;",
        "  static constexpr bool kHasOutProj = true;",
        f"  static constexpr microattn::WeightLayout kLayout = microattn::WeightLayout::{lay};",
        f"  static constexpr microattn::WeightType kWeightType = microattn::WeightType::{wtype};",
        f"  /// The mask it was exported for (--mask {mask.arg}); {name}_weights<Cfg>() checks it.",
        f"  static constexpr microattn::Mask kMask = microattn::Mask::{mask.enum};",
        "  /// SlidingWindow{W}'s W; 0: no window.",
        f"  static constexpr std::size_t kWindow = {N}_WINDOW;",
        "  /// The module's softmax scale"
        + (" (1/sqrt(d_head), the layers' default)." if default_scale else
           ": not the layers' default 1/sqrt(d_head), so"),
        *([] if default_scale else ["  /// call attn.set_scale(kScale) once before forward."]),
        f"  static constexpr float kScale = {N}_SCALE;",
        *rope.get("members", []),
        "};",
        f"static_assert(static_cast<int>({name}_shape::kLayout) == {N}_LAYOUT,",
        f"              \"{N}_LAYOUT no longer matches microattn::WeightLayout\");",
        f"static_assert(static_cast<int>({name}_shape::kWeightType) == {N}_WEIGHT_TYPE,",
        f"              \"{N}_WEIGHT_TYPE no longer matches microattn::WeightType\");",
        f"static_assert(static_cast<int>({name}_shape::kMask) == {N}_MASK,",
        f"              \"{N}_MASK no longer matches microattn::Mask\");",
        *rope.get("asserts", []),
        *attention_size_checks(L, name, quant == "int8"),
        "",
        f"/// Weights view of {name}'s arrays for Cfg (a compile error when Cfg differs from",
        f"/// {name}_shape; exported_weights() checks the shape, the mask is checked here).",
        "/// static, like the arrays it points at: an inline function with external linkage that",
        "/// names internal-linkage arrays would break the one-definition rule when two",
        "/// translation units include this header.",
        "template <class Cfg>",
        f"static inline microattn::Weights<Cfg> {name}_weights() noexcept {{",
        f"  static_assert(Cfg::kMask == {name}_shape::kMask,",
        "                \"microattn: the exported weights' mask differs from the Config's Mask "
        f"(exported with --mask {mask.arg}: {mask_words(mask)})\");",
        f"  static_assert(Cfg::kSliding == ({name}_shape::kWindow != 0) &&",
        f"                    Cfg::kWindow == {name}_shape::kWindow,",
        "                \"microattn: the exported weights' sliding window differs from the "
        f"Config's SlidingWindow (exported with --mask {mask.arg}: {window_words(mask)})\");",
        f"  return microattn::exported_weights<Cfg, {name}_shape>(",
        *weights_call_lines(name, arrays, quant == "int8"),
        "}",
        *rope.get("function", []),
        "#endif  // __cplusplus"]


# --- multi-head latent attention (DeepSeek-V2's MLA) -------------------------------------------

# Children that only a latent attention module has (Hugging Face's DeepseekV2Attention).
LATENT_MARKS = ("kv_a_proj_with_mqa", "kv_b_proj")
# role -> (child, what it is); the query path is q_proj, or q_a_proj + q_a_layernorm + q_b_proj.
LATENT_LINEARS = {"wq": "q_proj", "wdq": "q_a_proj", "wuq": "q_b_proj",
                  "wdkv": "kv_a_proj_with_mqa", "wukv": "kv_b_proj", "wo": "o_proj"}
LATENT_NORMS = {"gq": "q_a_layernorm", "gkv": "kv_a_layernorm"}
# The header's arrays in LatentWeights' order (w_q, w_dq, g_q, w_uq, w_dkv, g_kv, w_ukv, w_o).
LATENT_ROLES = ("wq", "wdq", "gq", "wuq", "wdkv", "gkv", "wukv", "wo")
# The matrices (--quant int8 quantises these; the RMSNorm weights stay fp32), and their names.
LATENT_MATRICES = ("wq", "wdq", "wuq", "wdkv", "wukv", "wo")
LATENT_MATRIX_NAMES = {"wq": "W_Q", "wdq": "W_DQ", "wuq": "W_UQ", "wdkv": "W_DKV",
                       "wukv": "W_UKV", "wo": "W_O"}


class LatentLayer:
    """A latent attention layer's weights ([out][in], as nn.Linear holds them) and settings."""

    def __init__(self, source):
        self.source = source
        self.t = {}  # role (LATENT_ROLES) -> float32 numpy array
        self.d_model = self.heads = self.d_c = self.d_r = self.d_nope = self.d_v = None
        self.d_cq = 0  # q_lora_rank; 0 without a query latent
        self.scale = self.theta = self.eps = None


def stated(m, cfg, name, where, cfg_name=None):
    """[(source, value)] of an integer attribute on the module and on its .config."""
    cfg_name = cfg_name or name
    return [(name, int_attr(m, name, where)),
            (f"config.{cfg_name}", int_attr(cfg, cfg_name, where + "config."))]


def real_attr(m, cfg, name):
    """A real-valued attribute of the module, else of its .config (None when neither has it)."""
    for obj in (m, cfg):
        v = getattr(obj, name, None) if obj is not None else None
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, numbers.Real):
                raise Refusal(f"{name} is {v!r}, not a number")
            return float(v)
    return None


def latent_children(m, where, subj):
    """role -> nn.Linear or norm module; refuses a missing, doubled or biased child."""
    import torch
    has = {r: getattr(m, n, None) is not None for r, n in {**LATENT_LINEARS,
                                                           **LATENT_NORMS}.items()}
    if has["wq"] and (has["wdq"] or has["wuq"] or has["gq"]):
        raise Refusal(f"{subj} has both q_proj and q_a_proj/q_a_layernorm/q_b_proj: which one "
                      "is the query path is unclear")
    need = ["wdkv", "gkv", "wukv", "wo"] + (["wq"] if has["wq"] else ["wdq", "gq", "wuq"])
    names = {**LATENT_LINEARS, **LATENT_NORMS}
    for r in need:
        if not has[r]:
            raise Refusal(f"{subj} has no {names[r]} (a latent attention module needs q_proj or "
                          "q_a_proj + q_a_layernorm + q_b_proj, kv_a_proj_with_mqa, "
                          "kv_a_layernorm, kv_b_proj and o_proj)")
    out = {r: getattr(m, names[r]) for r in need}
    for r, c in out.items():
        if r in LATENT_NORMS:
            continue  # rms_norm_eps checks them
        if not isinstance(c, torch.nn.Linear):
            raise Refusal(f"{where}{names[r]} is a {type(c).__name__}, not an nn.Linear")
        if c.bias is not None:
            raise Refusal(f"{subj} has a bias {where}{names[r]}.bias: LatentAttention has no "
                          "biases (DeepSeek-V2's attention_bias = False)")
    return out


def rms_norm_eps(norm, label):
    """The epsilon of an RMSNorm with a learned weight (Hugging Face's DeepseekV2RMSNorm:
    variance_epsilon; torch's nn.RMSNorm: eps); refuses other norms and a missing weight."""
    if "rmsnorm" not in type(norm).__name__.lower() and not hasattr(norm, "variance_epsilon"):
        raise Refusal(f"{label} is a {type(norm).__name__}, not an RMSNorm")
    if getattr(norm, "weight", None) is None:
        raise Refusal(f"{label} is an RMSNorm without a weight: LatentAttention's RMSNorms "
                      "multiply by a learned weight (g_q, g_kv)")
    if getattr(norm, "bias", None) is not None:
        raise Refusal(f"{label} has a bias: LatentAttention's RMSNorms have none")
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not 0 < eps < math.inf:
        raise Refusal(f"{label} has epsilon {eps!r}: need a finite number > 0")
    return float(eps)


def from_latent(m, where, subj, heads_arg, kv_arg):
    """A LatentLayer from a DeepseekV2Attention-style module: every shape from the module's
    attributes (or its .config's) where it states them, else from the Linear shapes, and
    cross-checked against them."""
    if kv_arg is not None:
        raise Refusal("--kv-heads does not apply to latent attention (every head reads the "
                      "same latent rows)")
    kids = latent_children(m, where, subj)
    names = {**LATENT_LINEARS, **LATENT_NORMS}
    eps = [(f"{names[r]}", rms_norm_eps(kids[r], where + names[r])) for r in ("gq", "gkv")
           if r in kids]
    known = {f"{names[r]}.weight" for r in kids}
    for n, _ in m.named_parameters():
        if n not in known:
            raise Refusal(f"{subj} has a parameter {where}{n} that microattn cannot represent")
    L = LatentLayer(f"{type(m).__name__} (multi-head latent attention) from {subj}")
    for r, c in kids.items():
        L.t[r] = to_float32(f"{where}{names[r]}.weight", c.weight)
    if len({e for _, e in eps}) > 1:
        raise Refusal("conflicting RMSNorm epsilons: " + ", ".join(f"{n} {e!r}" for n, e in eps)
                      + " (LatentAttention has one epsilon for both)")
    L.eps = eps[0][1]
    latent_dims(L, m, heads_arg, where, subj)
    latent_rope(L, m, subj)
    return L


def latent_dims(L, m, heads_arg, where, subj):
    """H, d_c, d_R, d_nope, d_v, d_cq and d_model from the attributes and the weights."""
    cfg, t = getattr(m, "config", None), L.t
    H = pick("number of heads", stated(m, cfg, "num_heads", where, "num_attention_heads")
             + [("--heads", heads_arg)])
    if H is None or H < 1:
        raise Refusal(f"{subj} does not say its number of heads (no num_heads attribute, no "
                      "config.num_attention_heads); pass --heads")
    q_rows = (t["wq"] if "wq" in t else t["wuq"]).shape[0]
    L.heads, L.d_model = H, t["wdkv"].shape[1]
    L.d_c = pick("kv_lora_rank", stated(m, cfg, "kv_lora_rank", where)
                 + [("kv_a_layernorm.weight's width", t["gkv"].shape[0])])
    L.d_r = pick("qk_rope_head_dim", stated(m, cfg, "qk_rope_head_dim", where)
                 + [("kv_a_proj_with_mqa rows - kv_lora_rank", t["wdkv"].shape[0] - L.d_c)])
    L.d_nope = pick("qk_nope_head_dim", stated(m, cfg, "qk_nope_head_dim", where)
                    + [("query rows / heads - qk_rope_head_dim",
                        q_rows // H - L.d_r if q_rows % H == 0 else None)])
    L.d_v = pick("v_head_dim", stated(m, cfg, "v_head_dim", where)
                 + [("o_proj.in_features / heads", t["wo"].shape[1] // H
                     if t["wo"].shape[1] % H == 0 else None)])
    if L.d_nope is None or L.d_v is None:
        raise Refusal(f"the query rows ({q_rows}) or o_proj's inputs ({t['wo'].shape[1]}) are "
                      f"not a whole number of {H} heads")
    pick("q_head_dim", stated(m, cfg, "q_head_dim", where)
         + [("qk_nope_head_dim + qk_rope_head_dim", L.d_nope + L.d_r)])
    pick("d_model", stated(m, cfg, "hidden_size", where)
         + [("kv_a_proj_with_mqa.in_features", L.d_model)])
    q_lora = stated(m, cfg, "q_lora_rank", where)
    if "wq" in t and any(v is not None for _, v in q_lora):
        raise Refusal(f"{subj} has q_proj but q_lora_rank "
                      f"{next(v for _, v in q_lora if v is not None)}: which one is the query "
                      "path is unclear")
    if "wdq" in t:
        L.d_cq = pick("q_lora_rank", q_lora + [("q_a_proj.out_features", t["wdq"].shape[0])])
    check_latent_shapes(L)


def check_latent_shapes(L):
    """Every array against the dimensions, and what LatentConfig needs of them."""
    H, D, dc, dr, dn, dv, dcq = (L.heads, L.d_model, L.d_c, L.d_r, L.d_nope, L.d_v, L.d_cq)
    if dr < 2 or dr % 2:
        raise Refusal(f"qk_rope_head_dim {dr} is {'odd' if dr % 2 else 'below 2'}: RoPE rotates "
                      "pairs of dimensions (LatentConfig needs an even d_R >= 2)")
    if min(dc, dn + 1, dv) < 1:
        raise Refusal(f"kv_lora_rank {dc}, qk_nope_head_dim {dn}, v_head_dim {dv}: need "
                      "kv_lora_rank and v_head_dim >= 1, qk_nope_head_dim >= 0")
    if dv > dc + dr:
        raise Refusal(f"v_head_dim {dv} exceeds kv_lora_rank + qk_rope_head_dim = {dc + dr}: "
                      "LatentAttention's absorbed decode reads the values inside the latent rows")
    want = {"wq": (H * (dn + dr), D), "wdq": (dcq, D), "gq": (dcq,), "wuq": (H * (dn + dr), dcq),
            "wdkv": (dc + dr, D), "gkv": (dc,), "wukv": (H * (dn + dv), dc), "wo": (D, H * dv)}
    for r, a in L.t.items():
        if tuple(a.shape) != want[r]:
            n = {**LATENT_LINEARS, **LATENT_NORMS}[r]
            raise Refusal(f"{n}.weight has shape {list(a.shape)} but d_model {D}, heads {H}, "
                          f"kv_lora_rank {dc}, qk_rope_head_dim {dr}, qk_nope_head_dim {dn}, "
                          f"v_head_dim {dv}" + (f", q_lora_rank {dcq}" if dcq else "")
                          + f" need {list(want[r])}")
    if max(D, H * (dn + dr), H * (dn + dv), dc + dr) > 1 << 20:
        raise Refusal("a width exceeds microattn's limit 2^20")


def latent_rope(L, m, subj):
    """rope_theta, no rope_scaling (YaRN), and the softmax scale."""
    cfg = getattr(m, "config", None)
    for obj in (m, cfg):
        rs = getattr(obj, "rope_scaling", None) if obj is not None else None
        if rs is not None:
            kind = rs.get("type", rs.get("rope_type")) if isinstance(rs, dict) else rs
            raise Refusal(f"{subj} has rope_scaling {kind!r} (e.g. YaRN): LatentAttention's RoPE "
                          "has no scaling (rope_scaling must be None)")
    L.theta = real_attr(m, cfg, "rope_theta")
    if L.theta is None or not 0 < L.theta < math.inf:
        raise Refusal(f"{subj} has rope_theta {L.theta!r}: need a finite number > 0 (the "
                      "module's or its config's rope_theta)")
    L.scale = real_attr(m, cfg, "softmax_scale")
    if L.scale is None:
        L.scale = (L.d_nope + L.d_r) ** -0.5
    if not 0 < L.scale < math.inf:
        raise Refusal(f"{subj} has softmax_scale {L.scale!r}: need a finite number > 0")


def check_latent_options(layout, quant, mask, compute):
    """What LatentAttention cannot take yet: refused before any rendering."""
    if layout != "outin":
        raise Refusal(f"--layout {layout}: latent attention is exported as outin only "
                      "(the exporter does not write latent panels yet)")
    if quant not in QUANTS:
        raise Refusal(f"--quant {quant!r}: not one of {', '.join(QUANTS)}")
    if compute != "f32":
        raise Refusal(f"--compute {compute}: latent attention has no integer compute "
                      "(LatentAttention takes int8 weights, --quant int8, with float arithmetic)")
    if mask.kind != "causal":
        raise Refusal(f"--mask {mask.arg}: latent attention is causal only (LatentAttention "
                      "has no other mask); pass --mask causal")


def latent_output_error(L, deq, tokens=32, seed=0):
    """The latent layer's output error from int8 weights: its output on `tokens` random N(0, 1)
    rows (seeded), causal, in float64, without RoPE (q_R . k_R still counts), with deq (role ->
    dequantised [out][in] matrix) against the fp32 weights: relative_errors(). A check of what
    these weights lose, not of a trained model's real activations."""
    import numpy as np
    x = np.random.default_rng(seed).standard_normal((tokens, L.d_model))
    H, dc, dn, dr, dv = L.heads, L.d_c, L.d_nope, L.d_r, L.d_v
    causal = np.arange(tokens)[None, :] <= np.arange(tokens)[:, None]

    def norm(a, g):
        return a / np.sqrt((a * a).mean(axis=1, keepdims=True) + L.eps) * g.astype(np.float64)

    def forward(w):
        def lin(a, r):
            return a @ w[r].astype(np.float64).T
        q = lin(x, "wq") if "wq" in w else lin(norm(lin(x, "wdq"), L.t["gq"]), "wuq")
        ckr = lin(x, "wdkv")
        kv = lin(norm(ckr[:, :dc], L.t["gkv"]), "wukv")
        heads = []
        for h in range(H):
            qh = q[:, h * (dn + dr):(h + 1) * (dn + dr)]
            kvh = kv[:, h * (dn + dv):(h + 1) * (dn + dv)]
            sc = (qh[:, :dn] @ kvh[:, :dn].T + qh[:, dn:] @ ckr[:, dc:].T) * L.scale
            sc = np.where(causal, sc, -np.inf)
            p = np.exp(sc - sc.max(axis=1, keepdims=True))
            heads.append((p / p.sum(axis=1, keepdims=True)) @ kvh[:, dn:])
        return lin(np.concatenate(heads, axis=1), "wo")

    return relative_errors(forward(L.t), forward({**L.t, **deq}))


def f32_lit(v):
    import numpy as np
    return c_literals(np.array([v], dtype=np.float32))[0]


def latent_comment(L, name, cfg, int8=False):
    """The header's opening comment: what it holds and how to set the layer up."""
    N = name.upper()
    q = (f"query latent d_cq {L.d_cq} (q_lora_rank: q_a_proj, q_a_layernorm, q_b_proj)"
         if L.d_cq else "no query latent (q_proj)")
    default = abs(L.scale * math.sqrt(L.d_nope + L.d_r) - 1.0) < 1e-6
    return [
        f"// {name}: {L.source}.",
        f"// d_model {L.d_model}, {L.heads} head{'s' * (L.heads > 1)}, d_c {L.d_c} "
        f"(kv_lora_rank), d_R {L.d_r} (qk_rope_head_dim), d_nope {L.d_nope}, d_v {L.d_v}, {q};",
        "//   no biases; layout microattn::WeightLayout::kOutIn (nn.Linear's [out][in]); "
        + ("int8 weights (--quant int8)." if int8 else "fp32."),
        "// Mask (--mask causal): token i sees tokens 0 .. i (LatentAttention is causal).",
        f"// Use with {cfg}",
        "//   (T_max: the most tokens the cache holds) and microattn::LatentAttention<LCfg>,",
        "//   set up once while the cache is empty (microattn/latent_export.hpp):",
        f"//     attn.set_weights({name}_weights<LCfg>());  // another shape: a compile error",
        f"//     attn.set_rope({name}_rope());  // base {N}_ROPE_BASE = {L.theta!r}, "
        "RopePairing::kAdjacent",
        f"//     attn.set_rms_eps({N}_RMS_EPS);  // {L.eps!r}, both RMSNorms",
        f"//     attn.set_scale({N}_SCALE);  // {L.scale!r}"
        + (", 1/sqrt(d_nope + d_R), the default" if default else
           ", the module's softmax_scale, not 1/sqrt(d_nope + d_R)"),
        "// RoPE pairing: Hugging Face's DeepseekV2Attention permutes q_pe and k_pe from",
        "//   interleaved pairs to halves and then applies rotate_half, which gives every score",
        "//   the rotation of adjacent pairs of the weights' own output columns: kAdjacent",
        "//   (kHalfSplit would be wrong with these arrays).",
        f"// C: {name}_wdkv [d_c + d_R][d_model], {name}_gkv [d_c], {name}_wukv "
        "[H*(d_nope + d_v)][d_c],",
        f"//   {name}_wo [d_model][H*d_v], "
        + (f"{name}_wdq [d_cq][d_model], {name}_gq [d_cq],\n//   {name}_wuq "
           "[H*(d_nope + d_R)][d_cq]." if L.d_cq else f"{name}_wq [H*(d_nope + d_R)][d_model]."),
        *([f"//   int8 (--quant int8): the matrices int8_t, each with float scales "
           f"{name}_s<matrix>",
           f"//   ({', '.join(f'{name}_' + scale_role(r) for r in LATENT_MATRICES if r in L.t)}),",
           "//   one per output column (row of the array): W(i, o) = s[o] * q(o, i); the RMSNorm",
           "//   weights stay float. The LatentConfig needs microattn::WeightType::kInt8."]
          if int8 else [])]


def latent_macros(L, name, int8=False):
    N = name.upper()
    wtype, wtype_num = QUANTS["int8" if int8 else "none"]
    return [f"#define {N}_LATENT 1 /* a microattn::LatentAttention header */",
            f"#define {N}_D_MODEL {L.d_model}", f"#define {N}_HEADS {L.heads}",
            f"#define {N}_D_LATENT {L.d_c}", f"#define {N}_D_ROPE {L.d_r}",
            f"#define {N}_D_NOPE {L.d_nope}", f"#define {N}_D_V {L.d_v}",
            f"#define {N}_D_QLATENT {L.d_cq} /* 0: no query latent */",
            f"#define {N}_LAYOUT 1 /* microattn::WeightLayout::kOutIn */",
            f'#define {N}_LAYOUT_NAME "kOutIn"',
            f"#define {N}_WEIGHT_TYPE {wtype_num} /* microattn::WeightType::{wtype} */",
            f"#define {N}_MASK 0 /* microattn::Mask::kCausal */",
            f"#define {N}_SCALE {f32_lit(L.scale)}",
            f"#define {N}_ROPE_BASE {f32_lit(L.theta)}",
            f"#define {N}_ROPE_PAIRING 0 /* microattn::RopePairing::kAdjacent */",
            f"#define {N}_RMS_EPS {f32_lit(L.eps)}"]


def latent_cxx(L, name, int8=False):
    """The C++ part: the shape struct, size checks, name_weights<LCfg>() and name_rope()."""
    N, n = name.upper(), name
    wtype = QUANTS["int8" if int8 else "none"][0]
    sizes = {"wq": f"{N}_HEADS * ({N}_D_NOPE + {N}_D_ROPE) * {N}_D_MODEL",
             "wdq": f"{N}_D_QLATENT * {N}_D_MODEL", "gq": f"{N}_D_QLATENT",
             "wuq": f"{N}_HEADS * ({N}_D_NOPE + {N}_D_ROPE) * {N}_D_QLATENT",
             "wdkv": f"({N}_D_LATENT + {N}_D_ROPE) * {N}_D_MODEL", "gkv": f"{N}_D_LATENT",
             "wukv": f"{N}_HEADS * ({N}_D_NOPE + {N}_D_V) * {N}_D_LATENT",
             "wo": f"{N}_D_MODEL * {N}_HEADS * {N}_D_V"}
    # An int8 matrix's scales: one per output column (row of the [out][in] array).
    outs = {"wq": f"{N}_HEADS * ({N}_D_NOPE + {N}_D_ROPE)", "wdq": f"{N}_D_QLATENT",
            "wuq": f"{N}_HEADS * ({N}_D_NOPE + {N}_D_ROPE)", "wdkv": f"{N}_D_LATENT + {N}_D_ROPE",
            "wukv": f"{N}_HEADS * ({N}_D_NOPE + {N}_D_V)", "wo": f"{N}_D_MODEL"}
    quantized = int8 and [r for r in LATENT_MATRICES if r in L.t] or []
    elem = {r: "int8_t" if r in quantized else "float" for r in LATENT_ROLES}
    checks = [f"static_assert(sizeof({n}_{r}) == sizeof({elem[r]}) * {sizes[r]},\n"
              f"              \"{n}_{r}: array size and shape differ\");"
              for r in LATENT_ROLES if r in L.t]
    checks += [f"static_assert(sizeof({n}_{scale_role(r)}) == sizeof(float) * ({outs[r]}),\n"
               f"              \"{n}_{scale_role(r)}: array size and shape differ\");"
               for r in quantized]
    # exported_latent_weights' arguments: LatentWeights' order, an int8 matrix followed by its
    # scales; what the module does not have is nullptr.
    call = [x for r in LATENT_ROLES
            for x in ((r, scale_role(r)) if int8 and r in LATENT_MATRICES else (r,))]
    have = set(L.t) | {scale_role(r) for r in quantized}
    ptrs = [f"{n}_{r}" if r in have else "nullptr" for r in call]
    per_line = 5 if int8 else 4
    return [
        "#ifdef __cplusplus",
        "#include <cstddef>",
        "",
        '#include "microattn/latent_export.hpp"',
        "",
        f"/// The shape and settings {n}'s arrays were exported with; exported_latent_weights()",
        "/// compares them with a LatentConfig at compile time.",
        f"struct {n}_shape {{",
        *(f"  static constexpr std::size_t {k} = {N}_{v};" for k, v in (
            ("kDModel", "D_MODEL"), ("kHeads", "HEADS"), ("kDLatent", "D_LATENT"),
            ("kDRope", "D_ROPE"), ("kDNope", "D_NOPE"), ("kDV", "D_V"),
            ("kDQLatent", "D_QLATENT"))),
        "  static constexpr microattn::WeightLayout kLayout = microattn::WeightLayout::kOutIn;",
        f"  static constexpr microattn::WeightType kWeightType = microattn::WeightType::{wtype};",
        f"  static constexpr float kScale = {N}_SCALE;",
        f"  static constexpr float kRopeBase = {N}_ROPE_BASE;",
        "  static constexpr microattn::RopePairing kRopePairing = "
        "microattn::RopePairing::kAdjacent;",
        f"  static constexpr float kRmsEps = {N}_RMS_EPS;",
        "};",
        f"static_assert(static_cast<int>({n}_shape::kLayout) == {N}_LAYOUT,",
        f"              \"{N}_LAYOUT no longer matches microattn::WeightLayout\");",
        f"static_assert(static_cast<int>({n}_shape::kWeightType) == {N}_WEIGHT_TYPE,",
        f"              \"{N}_WEIGHT_TYPE no longer matches microattn::WeightType\");",
        f"static_assert(static_cast<int>({n}_shape::kRopePairing) == {N}_ROPE_PAIRING,",
        f"              \"{N}_ROPE_PAIRING no longer matches microattn::RopePairing\");",
        *checks,
        "",
        f"/// LatentWeights view of {n}'s arrays for LCfg (a compile error naming the parameter",
        f"/// when LCfg differs from {n}_shape). static, like the arrays it points at.",
        "template <class LCfg>",
        f"static inline microattn::LatentWeights<LCfg> {n}_weights() noexcept {{",
        f"  return microattn::exported_latent_weights<LCfg, {n}_shape>(",
        *(f"      {', '.join(ptrs[i:i + per_line])}" + (");" if i + per_line >= len(ptrs) else ",")
          for i in range(0, len(ptrs), per_line)),
        "}",
        f"/// The module's RoPE: base {N}_ROPE_BASE, adjacent pairs, all d_R dimensions.",
        f"static inline microattn::RopeConfig {n}_rope() noexcept {{",
        f"  return microattn::exported_latent_rope<{n}_shape>();",
        "}",
        "#endif  // __cplusplus"]


def render_latent(L, name, layout="outin", quant="none", mask=None, compute="f32", report=None):
    """The header text of a latent attention layer (see the module docstring). quant "int8":
    the six matrices quantised per output column (quantize_int8) with their scales, the RMSNorm
    weights fp32; report (a list) receives one line per matrix with its quantisation error and
    one with the layer's output error (latent_output_error), for stderr."""
    import numpy as np
    import torch
    mask = Mask.parse(mask)
    check_name(name)
    check_latent_options(layout, quant, mask, compute)
    int8 = quant == "int8"
    arrays, qerr, qreport = dict(L.t), {}, []
    if int8:
        roles = [r for r in LATENT_MATRICES if r in L.t]
        quantized, qerr, qreport = quantize_matrices(L.t, roles, LATENT_MATRIX_NAMES)
        arrays.update(quantized)
        rel, mx = latent_output_error(L, dequantized(arrays, roles))
        qreport.append(f"int8 layer output on 32 random N(0, 1) tokens, against fp32 (||e||/||y||, "
                       f"max |e| / max |y|; no RoPE): {rel:.2e}, {mx:.2e}")
    cfg = (f"microattn::LatentConfig<T_max, {L.d_model}, {L.heads}, {L.d_c}, {L.d_r}, "
           f"{L.d_nope}, {L.d_v}" + (f", microattn::QueryLatent{{{L.d_cq}}}" if L.d_cq else "")
           + (", microattn::WeightType::kInt8" if int8 else "") + ">")
    g = f"MICROATTN_EXPORTED_{name.upper()}_H"
    lines = [f"// Generated by tools/export_pytorch.py (torch {torch.__version__}) -- do not edit.",
             *latent_comment(L, name, cfg, int8)]
    if int8:
        lines.append("// int8 quantisation error (max |w - s*q|, rms, ||W - Wq||_F / ||W||_F):")
        lines += [f"//   {LATENT_MATRIX_NAMES[r]} " + ", ".join(f"{v:.3e}" for v in qerr[r])
                  for r in LATENT_MATRICES if r in qerr]
        lines.append(f"// The {qreport[-1][len('int8 '):]}.")
    lines += ["", f"#ifndef {g}", f"#define {g}", "", *latent_macros(L, name, int8), "",
              *(["#include <stdint.h>", ""] if int8 else []), ALIGN_MACRO]
    for r in LATENT_ROLES:
        for a in (r, scale_role(r)) if r in qerr else (r,):
            if a in arrays:
                lines.append(c_array(f"{name}_{a}", np.ascontiguousarray(arrays[a]).reshape(-1)))
    lines += [*latent_cxx(L, name, int8), "", f"#endif  // {g}", ""]
    if report is not None:
        report.extend(qreport)
    return "\n".join(lines)


def export_module(module, name="attn", layout="outin", path=None, heads=None, kv_heads=None,
                  origin="the module", quant="none", report=None, mask=None, compute="f32"):
    """The header text for an nn.Module (see the module docstring); raises Refusal. mask:
    "causal", "none" or "window:W", required (as --mask); quant: "none" (fp32) or "int8";
    report: an optional list that receives the notes and the int8 error lines (stderr's);
    compute: "f32" or "int8" (as --compute)."""
    mask = Mask.parse(mask)  # before the work, like the command line
    check_compute(compute, quant)
    L = layer_from_module(module, path, heads, kv_heads, origin)
    if isinstance(L, LatentLayer):
        return render_latent(L, name, layout, quant, mask, compute, report)
    return render(L, name, layout, quant, report, mask, compute)


def export_state_dict(sd, heads, kv_heads=None, prefix="", name="attn", layout="outin",
                      origin="the state dict", quant="none", report=None, mask=None,
                      compute="f32"):
    """The header text for a state dict with --heads (see the module docstring); raises
    Refusal. mask, quant, report, compute: as export_module."""
    mask = Mask.parse(mask)
    check_compute(compute, quant)
    return render(layer_from_state_dict(sd, heads, kv_heads, prefix, origin), name, layout,
                  quant, report, mask, compute)


def check_compute(compute, quant):
    """--compute: "f32", or "int8" with --quant int8 (integer compute needs int8 weights)."""
    if compute not in ("f32", "int8"):
        raise Refusal(f"--compute {compute!r}: not one of f32, int8")
    if compute == "int8" and quant != "int8":
        raise Refusal("--compute int8 needs --quant int8 (integer compute multiplies int8 "
                      "weights)")


# --- whole decoder (--kind decoder): the model blob, the PyTorch reference, the vocabulary ------

BLOB_MAGIC = 0x4D4C414D  # the bytes "MALM" read as a little-endian uint32
BLOB_VERSION = 1
BLOB_HEADER_BYTES = 64
BLOB_ALIGN = 16
BLOB_MAX_BYTES = 2 ** 32 - 1  # header word 15, the total size, is a uint32
DEFAULT_PROMPT = "The artist painted the portrait of a woman with a brush"
# module.config's keys that the blob needs (vocab comes from the embedding); rope_pairing is
# "adjacent" (pairs 2i, 2i+1) or "half"/"half_split" (pairs i, i + d_head/2).
DECODER_KEYS = ("d_model", "n_layers", "n_heads", "n_kv_heads", "d_head", "d_hidden", "t_max",
                "rope_base", "rope_pairing", "norm_eps", "tied_head")
ROPE_PAIRINGS = {"adjacent": True, "half": False, "half_split": False}


class Decoder:
    """A LLaMA-style decoder's weights in the blob's order: tensors [(state-dict key, float32
    array, is_matrix)], the shape (cfg: DECODER_KEYS plus vocab), the vocabulary string (or
    None) and the module itself (for the reference)."""

    def __init__(self, module, cfg, tensors, vocab):
        self.module, self.cfg, self.tensors, self.vocab = module, cfg, tensors, vocab


# --- what a decoder's config may say: the one table every converter reads -------------------
# How each config field is handled (DESIGN.md section 11: loaders refuse by name). A field that
# is not in its family's table is refused, naming it: the model file carries only what its
# header and tensors say (docs/model-format.md), and a field nobody has read may change the
# computation (Granite's multipliers, Mistral's sliding_window ...). Entries:
#   carry(key, default)   the value goes into the file (the header word of Decoder.cfg[key]);
#                         absent or None: default (REQUIRED: refused as missing)
#   only(why, *values)    allowed at one of values only (absent: the family's default, which is
#                         one of them); another value is refused by name, with why
#   ignore(why)           does not change the logits (bookkeeping, training, decoding settings)
# Hugging Face names are the ones a safetensors config.json and transformers' PretrainedConfig
# use, so the later loaders (llama2.c, safetensors, GGUF: their keys mapped to these) share
# HF_LLAMA_FIELDS and read_config().
REQUIRED = object()


def carry(key, default=REQUIRED):
    return ("carry", key, default)


def only(why, *values):
    return ("only", values, why)


def ignore(why):
    return ("ignore", why)


def ignored(why, *names):
    return {n: ignore(why) for n in names}


NO_BIASES = "the model file has no biases"
TINY_LM_FIELDS = {
    "vocab_size": carry("vocab", None), "d_model": carry("d_model"),
    "n_layers": carry("n_layers"), "n_heads": carry("n_heads"),
    "n_kv_heads": carry("n_kv_heads"), "d_head": carry("d_head"),
    "d_hidden": carry("d_hidden"), "t_max": carry("t_max"), "rope_base": carry("rope_base"),
    "rope_pairing": carry("rope_pairing"), "norm_eps": carry("norm_eps"),
    "tied_head": carry("tied_head"),
    "activation": only("the model file's MLPs are SwiGLU", None, "silu", "swiglu", "SwiGLU"),
}
HF_LLAMA_FIELDS = {
    "vocab_size": carry("vocab", None), "hidden_size": carry("d_model"),
    "num_hidden_layers": carry("n_layers"), "num_attention_heads": carry("n_heads"),
    "num_key_value_heads": carry("n_kv_heads", None),  # None: num_attention_heads (no GQA)
    "head_dim": carry("d_head", None),  # None: hidden_size / num_attention_heads
    "intermediate_size": carry("d_hidden"), "max_position_embeddings": carry("t_max"),
    "rope_theta": carry("rope_base", 10000.0), "rms_norm_eps": carry("norm_eps"),
    "tie_word_embeddings": carry("tied_head", False),  # checked against lm_head
    "model_type": only("another family's config", "llama"),
    "hidden_act": only("the model file's MLPs are SwiGLU: silu(gate_proj) * up_proj", "silu"),
    "rope_scaling": only("the model file's RoPE has no scaling (linear, dynamic, YaRN, llama3)",
                         None),
    "partial_rotary_factor": only("the model file's RoPE turns every dimension of a head",
                                  1.0),
    "sliding_window": only("the model file's attention sees the whole causal context", None),
    "attention_bias": only(NO_BIASES, False), "mlp_bias": only(NO_BIASES, False),
    # SmolLM2's config.json (written by nanotron's converter): transformers' Llama reads
    # neither; rope_interleaved true would claim adjacent pairs that transformers does not use.
    "rope_interleaved": only("transformers' Llama rotates halves (rotate_half)", False),
    "is_llama_config": only("a converter's marker", True),
    "pretraining_tp": only("LlamaMLP and LlamaAttention then compute in pretraining_tp slices",
                           1),
    "is_encoder_decoder": only("the model file is a decoder only", False),
    "add_cross_attention": only("the model file has no cross-attention", False),
    "cross_attention_hidden_size": only("the model file has no cross-attention", None),
    "tie_encoder_decoder": only("the model file is a decoder only", False),
    "pruned_heads": only("every layer has all its heads", None, {}),
    **ignored("bookkeeping (names, versions, where it came from); the class is checked",
              "architectures", "transformers_version", "_name_or_path", "name_or_path",
              "_commit_hash"),
    **ignored("the weights' storage type: they are read and converted to float32 exactly",
              "torch_dtype", "dtype", "use_bfloat16"),
    **ignored("token ids for the tokenizer and the decoding loop", "bos_token_id",
              "eos_token_id", "pad_token_id", "sep_token_id", "decoder_start_token_id"),
    **ignored("what the forward returns besides the logits", "use_cache", "output_attentions",
              "_output_attentions", "output_hidden_states", "return_dict", "torchscript",
              "output_scores", "return_dict_in_generate"),
    **ignored("which kernel computes the attention (eager, sdpa, flash: the same attention)",
              "_attn_implementation_internal", "_attn_implementation",
              "_attn_implementation_autoset", "attn_implementation"),
    **ignored("training only (initialisation; dropout is off in eval)", "initializer_range",
              "attention_dropout", "tf_legacy_loss"),
    **ignored("generate()'s decoding settings: the caller's loop chooses", "max_length",
              "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
              "diversity_penalty", "temperature", "top_k", "top_p", "typical_p",
              "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
              "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
              "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
              "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens"),
    **ignored("task heads and tokenizer loading, not the causal LM", "finetuning_task",
              "id2label", "label2id", "num_labels", "problem_type", "tokenizer_class", "prefix",
              "task_specific_params"),
    **ignored("not read by LLaMA's layers (encoder models' settings)", "is_decoder",
              "chunk_size_feed_forward"),
}
# The module classes a decoder is read from (by class name: a family is never guessed from
# parameter names) -> (how its state dict is read, its config's table).
DECODER_CLASSES = {"TinyLM": ("tiny", TINY_LM_FIELDS),
                   "LlamaForCausalLM": ("hf", HF_LLAMA_FIELDS)}
# Families that look like LLaMA but compute something else (said in their refusal).
LLAMA_LOOKALIKES = {
    "MistralForCausalLM": "sliding-window attention",
    "MixtralForCausalLM": "mixture-of-experts MLPs",
    "GraniteForCausalLM": "embedding, residual, attention and logit multipliers",
    "Qwen2ForCausalLM": "biases on Q, K and V",
    "GemmaForCausalLM": "GeGLU MLPs, (1 + w) norms and a scaled embedding",
    "Phi3ForCausalLM": "fused qkv_proj and gate_up_proj, partial or scaled RoPE",
}


def config_fields(c):
    """A config's fields: a dict as it is, Hugging Face's PretrainedConfig.to_dict() (every
    field, defaults included: to_diff_dict would drop a Mistral's default sliding_window), or an
    object's attributes."""
    if isinstance(c, dict):
        return dict(c)
    to_dict = getattr(c, "to_dict", None)
    return dict(to_dict()) if callable(to_dict) else dict(vars(c))


def same_value(v, allowed):
    """v is allowed: None and booleans by identity (0 is not False), numbers by value (1 is
    1.0), the rest by ==."""
    if allowed is None or isinstance(allowed, bool) or isinstance(v, bool):
        return v is allowed
    if isinstance(allowed, numbers.Number):
        return isinstance(v, numbers.Number) and v == allowed
    return type(v) is type(allowed) and v == allowed


def short_repr(v, limit=60):
    s = one_line(repr(v))
    return s if len(s) <= limit else s[:limit - 3] + "..."


def read_config(c, table, subj):
    """{Decoder.cfg key: value} of config c's carried fields (defaults for absent ones), or a
    one-line Refusal naming every field the table refuses: unknown, or set to a value that
    changes the computation, or required and missing."""
    fields = config_fields(c)
    bad = []
    for k in sorted(fields, key=str):
        how, v = table.get(k), fields[k]
        if how is None:
            bad.append(f"{k} = {short_repr(v)} (a field the model file cannot carry)")
        elif how[0] == "only" and not any(same_value(v, a) for a in how[1]):
            bad.append(f"{k} = {short_repr(v)} (must be {' or '.join(map(repr, how[1]))}: "
                       f"{how[2]})")
    missing = [k for k, how in table.items() if how[0] == "carry" and how[2] is REQUIRED
               and fields.get(k) is None]
    if missing:
        bad.append(f"lacks {', '.join(missing)}")
    if bad:
        raise Refusal(f"{subj}.config: " + "; ".join(bad))
    out = {}
    for k, how in table.items():
        if how[0] == "carry":
            out[how[1]] = how[2] if fields.get(k) is None else fields[k]
    return out


def decoder_class(m, subj, name=None):
    """(reader, table) of the module's class (DECODER_CLASSES; name: a class name given
    instead, as a config.json's architectures), or a Refusal naming it."""
    name = name or type(m).__name__
    if name in DECODER_CLASSES:
        return DECODER_CLASSES[name]
    why = f" ({LLAMA_LOOKALIKES[name]})" if name in LLAMA_LOOKALIKES else ""
    raise Refusal(f"{subj} is a {name}{why}: the model file is read from a "
                  f"{' or a '.join(DECODER_CLASSES)} only (a family is read by its class, not "
                  "guessed from its parameter names)")


def decoder_config(cfg, subj, table):
    """Checks the carried config (read_config's dict: DECODER_KEYS and vocab) and returns it
    with ints, floats and a bool; a refusal names the config field (table's name for it)."""
    field = {how[1]: k for k, how in table.items() if how[0] == "carry"}
    name = lambda k: f"{subj}.config {field.get(k, k)}"  # noqa: E731
    for k in DECODER_KEYS[:7]:
        v = cfg[k]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise Refusal(f"{name(k)} = {v!r}: not a whole number >= 1")
        cfg[k] = int(v)
    if cfg["n_heads"] % cfg["n_kv_heads"] or cfg["d_head"] % 2:
        raise Refusal(f"{subj}.config: {field['n_heads']} {cfg['n_heads']} is not a multiple of "
                      f"{field['n_kv_heads']} {cfg['n_kv_heads']}, or {field['d_head']} "
                      f"{cfg['d_head']} is odd")
    if cfg["rope_pairing"] not in ROPE_PAIRINGS:
        raise Refusal(f"{name('rope_pairing')} {cfg['rope_pairing']!r}: not one of "
                      f"{', '.join(ROPE_PAIRINGS)}")
    for k in ("rope_base", "norm_eps"):
        v = cfg[k]
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0 < v < math.inf:
            raise Refusal(f"{name(k)} = {v!r}: not a positive finite number")
        cfg[k] = float(v)
    if not isinstance(cfg["tied_head"], (bool, int)) or cfg["tied_head"] not in (0, 1):
        raise Refusal(f"{name('tied_head')} = {cfg['tied_head']!r}: not True or False")
    cfg["tied_head"] = bool(cfg["tied_head"])
    return cfg


def decoder_expected(cfg, vocab_size):
    """The state dict the blob holds, in blob order: [(key, shape, is_matrix)]."""
    D, H, K, dh, F = (cfg["d_model"], cfg["n_heads"], cfg["n_kv_heads"], cfg["d_head"],
                      cfg["d_hidden"])
    out = [("embed.weight", (vocab_size, D), True)]
    for i in range(cfg["n_layers"]):
        p = f"layers.{i}."
        out += [(p + "attn_norm.weight", (D,), False),
                (p + "attn.q_proj.weight", (H * dh, D), True),
                (p + "attn.k_proj.weight", (K * dh, D), True),
                (p + "attn.v_proj.weight", (K * dh, D), True),
                (p + "attn.o_proj.weight", (D, H * dh), True),
                (p + "mlp_norm.weight", (D,), False),
                (p + "mlp.gate_proj.weight", (F, D), True),
                (p + "mlp.up_proj.weight", (F, D), True),
                (p + "mlp.down_proj.weight", (D, F), True)]
    out.append(("norm.weight", (D,), False))
    if not cfg["tied_head"]:
        out.append(("lm_head.weight", (vocab_size, D), True))
    return out


def decoder_from_module(m, subj="the module"):
    """The Decoder of a tools/train_tiny_lm.py TinyLM or a Hugging Face LlamaForCausalLM (by
    class name: DECODER_CLASSES; see the module docstring's --kind decoder); raises Refusal on
    another class, a config field the model file cannot carry (read_config), biases, missing or
    unknown parameters, wrong shapes, a head that is tied in one place and not the other,
    non-finite weights."""
    import torch
    if not isinstance(m, torch.nn.Module):
        raise Refusal(f"{subj} is a {type(m).__name__}, not an nn.Module")
    reader, table = decoder_class(m, subj)
    c = getattr(m, "config", None)
    if c is None:
        raise Refusal(f"{subj} has no .config: a decoder's shape is read from it")
    parts = hf_decoder_parts if reader == "hf" else tiny_decoder_parts
    cfg, sd, emb = parts(m, read_config(c, table, subj), subj)
    cfg = decoder_config(cfg, subj, table)
    tensors = decoder_state(cfg, sd, emb.weight.shape[0], subj, to_float32)
    vs = getattr(m, "vocab", None)
    if vs is not None and (not isinstance(vs, str) or len(vs) != cfg["vocab"]):
        raise Refusal(f"{subj}.vocab is not a string of {cfg['vocab']} characters (one per "
                      "embedding row)")
    return Decoder(m, cfg, tensors, vs)


def decoder_state(cfg, sd, rows, subj, to_array):
    """The tensors [(key, float32 array, is_matrix)] in blob order of state dict sd (the
    blob's names; rows: the embedding's), each converted by to_array(key, value); sets
    cfg["vocab"]. Refuses biases, missing or unknown parameters, wrong shapes, a vocabulary
    the embedding does not have."""
    biases = sorted(k for k in sd if k.endswith("bias"))
    if biases:
        raise Refusal(f"{subj} has biases ({summary(biases, 4)}): the model blob has no biases "
                      "(LLaMA-style decoders have none)")
    want = decoder_expected(cfg, rows)
    extra = sorted(set(sd) - {k for k, _, _ in want})
    missing = [k for k, _, _ in want if k not in sd]
    if missing or extra:
        raise Refusal(f"{subj}: " + "; ".join(
            s for s in (f"missing {summary(missing, 4)}" if missing else "",
                        f"unknown parameters {summary(extra, 4)}" if extra else "") if s))
    tensors = []
    for k, shape, is_matrix in want:
        if tuple(sd[k].shape) != shape:
            raise Refusal(f"{subj}: {k} has shape {tuple(sd[k].shape)}, the config says {shape}")
        tensors.append((k, to_array(k, sd[k]), is_matrix))
    if cfg["vocab"] is not None and cfg["vocab"] != rows:
        raise Refusal(f"{subj}.config says a vocabulary of {cfg['vocab']!r}, the embedding has "
                      f"{rows} rows")
    cfg["vocab"] = rows
    return tensors


def tiny_decoder_parts(m, cfg, subj):
    """(config, state dict without a tied lm_head, the embedding) of a TinyLM; cfg: its
    carried config (read_config)."""
    import torch
    emb = getattr(m, "embed", None)
    if not isinstance(emb, torch.nn.Embedding):
        raise Refusal(f"{subj} has no nn.Embedding child named embed")
    head = getattr(m, "lm_head", None)
    if cfg["tied_head"] and head is not None and head.weight is not emb.weight:
        raise Refusal(f"{subj}.config says tied_head but the module has its own lm_head")
    if not cfg["tied_head"] and head is None:
        raise Refusal(f"{subj}.config says tied_head False but the module has no lm_head")
    sd = {k: v for k, v in m.state_dict().items()
          if not (cfg["tied_head"] and k == "lm_head.weight")}
    return cfg, sd, emb


# Hugging Face LlamaForCausalLM's names -> the blob's (tools/train_tiny_lm.py's).
HF_RENAMES = (("model.embed_tokens.", "embed."), ("model.norm.", "norm."),
              ("model.layers.", "layers."), (".input_layernorm.", ".attn_norm."),
              (".post_attention_layernorm.", ".mlp_norm."), (".self_attn.", ".attn."))


def hf_decoder_parts(m, cfg, subj):
    """(config, renamed state dict, the embedding) of a Hugging Face LlamaForCausalLM; cfg: its
    carried config (read_config of HF_LLAMA_FIELDS), completed here: num_key_value_heads
    defaults to the heads, head_dim to hidden_size / heads, RoPE half-split (rotate_half). The
    rotary inv_freq buffer is not a weight and is dropped."""
    import torch
    emb = getattr(getattr(m, "model", None), "embed_tokens", None)
    if not isinstance(emb, torch.nn.Embedding):
        raise Refusal(f"{subj} has no nn.Embedding model.embed_tokens")
    cfg = default_heads(cfg)
    cfg["rope_pairing"] = "half"
    head = getattr(m, "lm_head", None)
    if head is None:
        raise Refusal(f"{subj} (Hugging Face names) has no lm_head")
    if bool(cfg["tied_head"]) != (head.weight is emb.weight):
        raise Refusal(f"{subj}.config tie_word_embeddings is {cfg['tied_head']} but lm_head "
                      f"{'is not' if cfg['tied_head'] else 'is'} the embedding")
    sd = {}
    for k, v in m.state_dict().items():
        if k.endswith("rotary_emb.inv_freq") or (cfg["tied_head"] and k == "lm_head.weight"):
            continue
        for a, b in HF_RENAMES:
            k = k.replace(a, b)
        sd[k] = v
    return cfg, sd, emb


def blob_flags(cfg):
    """Header word 12: bit 0 tied head, bit 1 adjacent RoPE pairs, bits 8..15 activation
    (0 = SwiGLU, the only one)."""
    return int(cfg["tied_head"]) | (int(ROPE_PAIRINGS[cfg["rope_pairing"]]) << 1)


def blob_total(dec, quant="none", version=1):
    """The blob's size in bytes, from the tensors' shapes alone (blob_bytes' layout, or
    blob_v2_bytes': the same arrays after the field and tensor tables)."""
    pos = BLOB_HEADER_BYTES
    if version == 2:
        pos += 16 * len(blob_v2_fields(dec.cfg)) + 32 * len(dec.tensors)
    for _, a, is_matrix in dec.tensors:
        sizes = (4 * a.size,)
        if quant == "int8" and is_matrix:
            sizes = (a.size, 4 * a.shape[0])
        elif quant in GROUP_QUANTS and is_matrix:
            sizes = (a.size, 4 * a.shape[0] * -(-a.shape[1] // GROUP_QUANTS[quant]))
        elif quant in ("fp16", "bf16") and is_matrix:
            sizes = (2 * a.size,)
        for n in sizes:
            pos = -(-pos // BLOB_ALIGN) * BLOB_ALIGN + n
    if version == 2 and dec.cfg.get("tokenizer"):
        pos = -(-pos // BLOB_ALIGN) * BLOB_ALIGN + len(dec.cfg["tokenizer"])
    return -(-pos // BLOB_ALIGN) * BLOB_ALIGN


def check_blob_size(total):
    """Refuses a blob whose size does not fit header word 15 (a uint32; struct.pack would
    raise an uncaught struct.error), before any of it is built."""
    if total > BLOB_MAX_BYTES:
        raise Refusal(f"the model file would be {total} bytes ({total / 2 ** 30:.2f} GiB): over "
                      f"the format's limit of 4 GiB ({BLOB_MAX_BYTES} bytes; the file's size "
                      "in its header is a 32-bit unsigned integer)")


def blob_bytes(dec, quant="none", report=None):
    """The model blob (docs/model-format.md): a 64-byte header of 16 little-endian uint32
    words, then every tensor at the next 16-byte boundary; with quant "int8" each matrix as
    int8 [out][in] followed by its float32 scales (quantize_int8: bit for bit
    microattn::quantize_int8), the norms fp32. report receives the int8 error lines. Refuses
    a blob over 4 GiB (check_blob_size) before building it."""
    import struct
    import numpy as np
    if quant not in QUANTS:
        raise Refusal(f"--quant {quant}: version 1 model files are fp32 or int8; fp16, bf16 "
                      "and the group-wise int8 formats need --blob-version 2 (the default)")
    total = blob_total(dec, quant)
    check_blob_size(total)
    c = dec.cfg
    body = bytearray(BLOB_HEADER_BYTES)

    def put(raw):
        body.extend(b"\0" * (-len(body) % BLOB_ALIGN))
        body.extend(raw)

    worst = (0.0, "")
    for key, a, is_matrix in dec.tensors:
        if quant == "int8" and is_matrix:
            q, s = quantize_int8(a)
            put(q.tobytes())
            put(s.astype("<f4").tobytes())
            rel = quant_error(a, q, s)[2]
            worst = max(worst, (rel, key))
        else:
            put(np.ascontiguousarray(a, dtype="<f4").tobytes())
    body.extend(b"\0" * (-len(body) % BLOB_ALIGN))
    f32 = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]  # noqa: E731
    words = [BLOB_MAGIC, BLOB_VERSION, BLOB_HEADER_BYTES, QUANTS[quant][1], c["vocab"],
             c["d_model"], c["n_layers"], c["n_heads"], c["n_kv_heads"], c["d_head"],
             c["d_hidden"], c["t_max"], blob_flags(c), f32(c["rope_base"]), f32(c["norm_eps"]),
             len(body)]
    assert len(body) == total, (len(body), total)
    body[:BLOB_HEADER_BYTES] = struct.pack("<16I", *words)
    if report is not None:
        report.append(f"blob: {len(body)} bytes, {quant_label(quant)}" + (
            f"; largest int8 ||W - Wq||_F/||W||_F {worst[0]:.3e} ({worst[1]})"
            if quant == "int8" else ""))
    return bytes(body)


# Version 2 (docs/model-format.md): keyed fields and a tensor directory with a format code each.
BLOB_V2_KEYS = {"architecture": 1, "vocab": 2, "d_model": 3, "n_layers": 4, "n_heads": 5,
                "n_kv_heads": 6, "d_head": 7, "d_hidden": 8, "t_max": 9, "tied_head": 10,
                "activation": 11, "rope_pairing": 12, "rope_base": 13, "norm_eps": 14}
BLOB_V2_CONTEXT = 17
BLOB_V2_TOKENIZER = 0x80000001  # a described byte range: tools/tokenizer.py's file
BLOB_V2_ROLES = {"embed": 1, "attn_norm": 2, "q_proj": 3, "k_proj": 4, "v_proj": 5, "o_proj": 6,
                 "mlp_norm": 7, "gate_proj": 8, "up_proj": 9, "down_proj": 10, "norm": 11,
                 "lm_head": 12}
BLOB_NO_LAYER = 0xFFFF
# microattn::StorageFormat::code() of each --quant (format.hpp): fp32 0; int8 with one fp32
# scale per output row: elem 1 | bits 8 << 8 | per-column 1 << 16 | fp32 scales 0 << 20.
# fp16 / bf16: elem 2 / 3 | bits 16 << 8, unscaled. Group-wise int8: elem 1 | bits 8 << 8 |
# per-group 2 << 16 | fp32 scales | log2(group) << 24.
FORMAT_CODES = {"none": 0, "int8": 0x10801, "fp16": 0x1002, "bf16": 0x1003,
                "int8-g32": 0x5020801, "int8-g64": 0x6020801, "int8-g128": 0x7020801}


def round_half(a, quant):
    """a (float32) rounded to fp16 or bf16 (to nearest, ties to even, as microattn's to_f16 /
    to_bf16: NumPy's float16 cast does that; bf16 on the bits, a NaN kept quiet) as uint16."""
    import numpy as np
    a = np.ascontiguousarray(a, dtype="<f4")
    if quant == "fp16":
        with np.errstate(over="ignore"):
            return a.astype("<f2").view("<u2")
    u = a.view("<u4").astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r[nan] = ((u[nan] >> 16) | 0x40).astype("<u2")
    return r


def widen_half(h, quant):
    """The float32 values of fp16 / bf16 bits h (exact)."""
    if quant == "fp16":
        return h.view("<f2").astype("<f4")
    return (h.astype("<u4") << 16).view("<f4")


def blob_tensor_id(key):
    """A state-dict key ("layers.3.attn.q_proj.weight") as role | layer << 16."""
    parts = key.split(".")
    if parts[0] == "layers":
        return BLOB_V2_ROLES[parts[-2]] | int(parts[1]) << 16
    return BLOB_V2_ROLES[parts[0]] | BLOB_NO_LAYER << 16


def blob_v2_fields(c):
    """The fields of a version-2 file: [(key, type, value word)], type 0 uint32, 1 float32."""
    import struct
    f32 = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]  # noqa: E731
    u = {"architecture": 1, "vocab": c["vocab"], "activation": 0,
         "tied_head": int(c["tied_head"]), "rope_pairing": int(ROPE_PAIRINGS[c["rope_pairing"]])}
    out = []
    for name, key in BLOB_V2_KEYS.items():
        if name in ("rope_base", "norm_eps"):
            out.append((key, 1, f32(c[name])))
        else:
            out.append((key, 0, int(u[name] if name in u else c[name])))
    if c.get("context"):  # --context: the T_max exported for (<= the trained t_max)
        out.append((BLOB_V2_CONTEXT, 0, int(c["context"])))
    if c.get("tokenizer"):  # --tokenizer: a byte range, placed by blob_v2_bytes
        out.append((BLOB_V2_TOKENIZER, 2, 0))
    return out


def blob_v2_bytes(dec, quant="none", report=None):
    """A version-2 model file (docs/model-format.md): the 64-byte header, the field table
    (16 bytes a field), the tensor directory (32 bytes a tensor: id, format code, rows, cols,
    data offset and bytes, scales offset and bytes), then the tensors as version 1 stores them,
    each array at the next 16-byte boundary. Same quantisation and report as blob_bytes."""
    import struct
    import numpy as np
    total = blob_total(dec, quant, 2)
    check_blob_size(total)
    c = dec.cfg
    fields = blob_v2_fields(c)
    n = len(dec.tensors)
    field_at = BLOB_HEADER_BYTES
    tensor_at = field_at + 16 * len(fields)
    body = bytearray(tensor_at + 32 * n)
    records, worst = [], (0.0, "")

    def put(raw):
        body.extend(b"\0" * (-len(body) % BLOB_ALIGN))
        at = len(body)
        body.extend(raw)
        return at, len(raw)

    for key, a, is_matrix in dec.tensors:
        rows, cols = (a.shape[0], a.shape[1]) if a.ndim == 2 else (a.shape[0], 1)
        if quant == "int8" and is_matrix:
            q, s = quantize_int8(a)
            data, scales = put(q.tobytes()), put(s.astype("<f4").tobytes())
            worst = max(worst, (quant_error(a, q, s)[2], key))
            code = FORMAT_CODES[quant]
        elif quant in GROUP_QUANTS and is_matrix:
            q, s = quantize_int8_groups(a, GROUP_QUANTS[quant])
            data, scales = put(q.tobytes()), put(s.astype("<f4").tobytes())
            w = np.asarray(a, dtype=np.float64)
            err = np.linalg.norm(dequantize_groups(q, s, GROUP_QUANTS[quant]) - w) / max(
                np.linalg.norm(w), 1e-30)
            worst = max(worst, (float(err), key))
            code = FORMAT_CODES[quant]
        elif quant in ("fp16", "bf16") and is_matrix:
            h = round_half(a, quant)
            data, scales = put(h.tobytes()), (0, 0)
            w = np.asarray(a, dtype=np.float64)
            err = np.linalg.norm(widen_half(h, quant) - w) / max(np.linalg.norm(w), 1e-30)
            worst = max(worst, (float(err), key))
            code = FORMAT_CODES[quant]
        else:
            data, scales = put(np.ascontiguousarray(a, dtype="<f4").tobytes()), (0, 0)
            code = 0
        records.append((blob_tensor_id(key), code, rows, cols) + data + scales)
    ranges = {}
    if c.get("tokenizer"):
        ranges[BLOB_V2_TOKENIZER] = put(c["tokenizer"])
    body.extend(b"\0" * (-len(body) % BLOB_ALIGN))
    assert len(body) == total, (len(body), total)
    body[:BLOB_HEADER_BYTES] = struct.pack("<16I", BLOB_MAGIC, 2, BLOB_HEADER_BYTES, len(body),
                                           len(fields), field_at, n, tensor_at, *([0] * 8))
    for i, (key, typ, v) in enumerate(fields):
        v, b = ranges.get(key, (v, 0))
        body[field_at + 16 * i:field_at + 16 * i + 16] = struct.pack("<4I", key, typ, v, b)
    for i, r in enumerate(records):
        body[tensor_at + 32 * i:tensor_at + 32 * i + 32] = struct.pack("<8I", *r)
    if report is not None:
        report.append(f"blob (version 2): {len(body)} bytes, {quant_label(quant)}" + (
            f"; largest {BLOB_QUANTS[quant][0][1:].lower()} ||W - Wq||_F/||W||_F "
            f"{worst[0]:.3e} ({worst[1]})" if quant != "none" else ""))
    return bytes(body)


def quant_label(quant):
    return f"{BLOB_QUANTS[quant][0][1:].lower()} matrices, fp32 norms" if quant != "none" else "fp32"


def c_string(text):
    """A C string literal (valid C11 and C++17) of text's UTF-8: printable ASCII as it is,
    quotes and backslash escaped, everything else as three-digit octal escapes (a hex escape
    would swallow a following hex digit; '?' is escaped so that no trigraph can form)."""
    named = {ord('"'): '\\"', ord("\\"): "\\\\", ord("?"): "\\?", ord("\n"): "\\n",
             ord("\t"): "\\t", 7: "\\a", 8: "\\b", ord("\r"): "\\r"}
    out = []
    for b in text.encode("utf-8"):
        out.append(named.get(b, chr(b) if 0x20 <= b < 0x7F else f"\\{b:03o}"))
    return '"' + "".join(out) + '"'


def f32_text(v):
    """printf %.9g of a float32 (nine significant digits identify every float32), as a float
    literal: '.0' added where %.9g wrote an integer, then 'f'."""
    s = "%.9g" % float(v)
    if not any(ch in s for ch in ".e"):
        s += ".0"
    return s + "f"


def encode_ids(text, vocab):
    """Character ids as tools/train_tiny_lm.py's encode: index in vocab, 0 when absent."""
    index = {ch: i for i, ch in enumerate(vocab)}
    return [index.get(ch, 0) for ch in text]


def module_logits(m, ids):
    """The module's own fp32 forward over ids (one sequence) -> float32 numpy [T][vocab]."""
    import torch
    with torch.no_grad():
        out = m(torch.tensor(ids, dtype=torch.long)[None])
    out = getattr(out, "logits", out)  # a Hugging Face model returns an output object
    return out[0].float().numpy()


def reference_data(dec, prompt, n):
    """(prompt ids, all ids, logits [len(all)][vocab], smallest greedy margin, torch version):
    greedy continuation by the module's forward one token at a time (argmax, the lowest id on
    a tie), then one forward over the whole sequence; refuses a sequence longer than t_max and
    a full forward whose argmax disagrees with the greedy token at any continuation position."""
    import numpy as np
    import torch
    if dec.vocab is None:
        raise Refusal("--reference needs the module's vocab (a string: id = index) to encode "
                      "--prompt")
    prompt_ids = encode_ids(prompt, dec.vocab)
    if not prompt_ids or len(prompt_ids) + n > dec.cfg["t_max"]:
        raise Refusal(f"--prompt of {len(prompt_ids)} characters and --n {n}: prompt + n must "
                      f"be 1 .. t_max = {dec.cfg['t_max']} positions")
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    dec.module.eval()
    ids = list(prompt_ids)
    for _ in range(n):
        ids.append(int(np.argmax(module_logits(dec.module, ids)[-1])))
    logits = module_logits(dec.module, ids)
    margin = math.inf
    for p in range(len(prompt_ids) - 1, len(ids) - 1):
        top = np.sort(logits[p].astype(np.float64))[::-1]
        if int(np.argmax(logits[p])) != ids[p + 1]:
            raise Refusal(f"the whole-sequence forward's argmax at position {p} is "
                          f"{int(np.argmax(logits[p]))}, the greedy step chose {ids[p + 1]}: a "
                          "tie or a near-tie, choose another --prompt or --n")
        margin = min(margin, float(top[0] - top[1]))
    return prompt_ids, ids, logits, margin, torch.__version__


def reference_header(dec, name, prompt, n, source, report=None):
    """The C header of the PyTorch reference (see the module docstring, --reference)."""
    prompt_ids, ids, logits, margin, tv = reference_data(dec, prompt, n)
    N, g = name.upper(), f"{name.upper()}_REFERENCE_H"
    cont = "".join(dec.vocab[i] for i in ids[len(prompt_ids):])
    c = dec.cfg
    lines = [
        "/* SPDX-License-Identifier: Apache-2.0 */",
        "/* Generated by tools/export_pytorch.py --kind decoder --reference -- do not edit.",
        f"   The PyTorch reference of {source} (vocab {c['vocab']}, d_model {c['d_model']}, "
        f"{c['n_layers']} layers): the module's own",
        f"   forward in fp32 (torch {tv}, one thread, deterministic algorithms).",
        f"   {N}_REF_PROMPT is encoded one character to one id ({name}_ref_tokens' first",
        f"   {N}_REF_PROMPT_TOKENS entries); the next {N}_REF_CONTINUATION ids are the greedy",
        "   continuation (argmax of the last position's logits, one token at a time).",
        f"   {name}_ref_logits[p] are the logits at position p of ONE forward over the whole",
        f"   sequence {name}_ref_tokens (causal: they depend on tokens 0 .. p only). Checked by",
        "   the exporter: argmax(logits[p]) == tokens[p + 1] at every continuation position",
        f"   (p = {N}_REF_PROMPT_TOKENS - 1 .. {N}_REF_POSITIONS - 2); the smallest top-1 minus",
        f"   top-2 logit there is {margin:.6g}. Values printed with %.9g: they read back to the",
        "   same float32.",
        f"   Greedy continuation: {json_text(cont)} */",
        f"#ifndef {g}", f"#define {g}", "", "#include <stdint.h>", "",
        f"#define {N}_REF_PROMPT {c_string(prompt)}",
        f"#define {N}_REF_PROMPT_TOKENS {len(prompt_ids)}",
        f"#define {N}_REF_CONTINUATION {n}",
        f"#define {N}_REF_POSITIONS {len(ids)}",
        f"#define {N}_REF_VOCAB {c['vocab']}", "",
        f"static const int32_t {name}_ref_tokens[{N}_REF_POSITIONS] = {{"]
    lines += ["  " + ", ".join(str(v) for v in ids[i:i + 16]) + ","
              for i in range(0, len(ids), 16)]
    lines += ["};", "", f"static const float {name}_ref_logits[{N}_REF_POSITIONS][{N}_REF_VOCAB] = {{"]
    for p, row in enumerate(logits):
        vals = [f32_text(v) for v in row]
        lines.append(f"  {{ /* {p} */")
        lines += ["    " + ", ".join(vals[i:i + 6]) + "," for i in range(0, len(vals), 6)]
        lines.append("  },")
    lines += ["};", "", f"#endif /* {g} */", ""]
    if report is not None:
        report.append(f"reference: {len(prompt_ids)} prompt + {n} greedy tokens, continuation "
                      f"{json_text(cont)}; smallest greedy top-1/top-2 margin {margin:.6g}")
    return "\n".join(lines)


def json_text(s):
    """A string quoted for a comment (control characters escaped, no '*/' can appear)."""
    import json
    return json.dumps(s, ensure_ascii=True).replace("*/", "*\\/")


def vocab_header(dec, name):
    """The C header of the vocabulary (see the module docstring, --vocab-header)."""
    if dec.vocab is None:
        raise Refusal("--vocab-header needs the module's vocab (a string: id = index)")
    N, g = name.upper(), f"{name.upper()}_VOCAB_H"
    lines = [
        "/* SPDX-License-Identifier: Apache-2.0 */",
        "/* Generated by tools/export_pytorch.py --kind decoder --vocab-header -- do not edit.",
        f"   {name}_vocab[id] is the UTF-8 text of token id (one character each; id 0 is the",
        "   unknown character, printed U+FFFD). Encoding: at each point of the text, the id whose",
        "   string matches the text there (each is one whole UTF-8 character, so at most one",
        "   matches), else id 0 for that character. */",
        f"#ifndef {g}", f"#define {g}", "",
        f"#define {N}_VOCAB_SIZE {len(dec.vocab)}", "",
        f"static const char* const {name}_vocab[{N}_VOCAB_SIZE] = {{"]
    for i, ch in enumerate(dec.vocab):
        lines.append(f"  {c_string(ch)}, /* {i}: U+{ord(ch):04X} */")
    lines += ["};", "", f"#endif /* {g} */", ""]
    return "\n".join(lines)


def load_decoder(path, tiny_lm):
    """The Decoder of --module FILE (a pickled module, or a checkpoint dict) or --tiny-lm FILE
    (tools/train_tiny_lm.py's checkpoint: config, vocab, state_dict)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # train_tiny_lm's classes
    obj = None if tiny_lm else load(path, weights_only=False)
    if tiny_lm or (isinstance(obj, dict) and {"config", "vocab", "state_dict"} <= set(obj)):
        import train_tiny_lm
        try:
            obj = train_tiny_lm.load(path)
        except FileNotFoundError:
            raise Refusal(f"{path}: no such file") from None
        except (KeyError, AssertionError, RuntimeError, TypeError) as e:
            raise Refusal(f"{path}: not a tools/train_tiny_lm.py checkpoint ({one_line(e)[:300]})"
                          ) from None
    return decoder_from_module(obj, os.path.basename(path))


def llama2c_decoder(path):
    """The Decoder of a llama2.c checkpoint (tools/llama2c.py: numpy only)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import llama2c
    try:
        cfg, tensors = llama2c.read_checkpoint(path)
    except llama2c.Llama2cError as e:
        raise Refusal(str(e)) from None
    return Decoder(None, cfg, tensors, None)


def default_heads(cfg):
    """A Hugging Face / GGUF config's defaults: key/value heads = heads, d_head = d_model /
    heads (left None when those are not numbers: decoder_config refuses them by name)."""
    heads = cfg["n_heads"]
    cfg["n_kv_heads"] = heads if cfg["n_kv_heads"] is None else cfg["n_kv_heads"]
    if cfg["d_head"] is None and isinstance(cfg["d_model"], int) and isinstance(heads, int):
        cfg["d_head"] = cfg["d_model"] // heads if heads else None
    return cfg


def finite_array(subj):
    """decoder_state's to_array for NumPy tensors: float32, refusing a non-finite value."""
    import numpy as np

    def convert(k, a):
        if not np.isfinite(a).all():
            idx = tuple(int(i) for i in np.argwhere(~np.isfinite(a))[0])
            raise Refusal(f"{subj}: {k}[{', '.join(map(str, idx))}] is {a[idx]!r}: microattn "
                          "weights must be finite")
        return np.ascontiguousarray(a, dtype=np.float32)
    return convert


def hf_dir_decoder(path):
    """The Decoder of a Hugging Face directory (tools/hf_model.py: config.json and safetensors,
    NumPy only): the family from config.json's architectures (DECODER_CLASSES), every field
    through its table (read_config), the tensors by Hugging Face's names as for a module."""
    import numpy as np
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import hf_model
    try:
        fields, sd, _ = hf_model.read_dir(path)
    except hf_model.FormatError as e:
        raise Refusal(str(e)) from None
    subj = os.path.basename(os.path.normpath(path))
    archs = fields.get("architectures")
    if not (isinstance(archs, list) and len(archs) == 1 and isinstance(archs[0], str)):
        raise Refusal(f"{subj}/config.json: architectures = {short_repr(archs)}: one class name "
                      "is needed (the family is read from it)")
    reader, table = decoder_class(None, subj, archs[0])
    if reader != "hf":
        raise Refusal(f"{subj}/config.json: {archs[0]} is not a Hugging Face family")
    cfg = default_heads(read_config(fields, table, subj))
    cfg["rope_pairing"] = "half"  # transformers' rotate_half
    renamed = {}
    for k, v in sd.items():
        if k.endswith("rotary_emb.inv_freq"):  # a buffer some exports keep: not a weight
            continue
        for a_, b_ in HF_RENAMES:
            k = k.replace(a_, b_)
        renamed[k] = v
    emb = renamed.get("embed.weight")
    if emb is None or emb.ndim != 2:
        raise Refusal(f"{subj}: no 2-D model.embed_tokens.weight")
    if cfg["tied_head"] and "lm_head.weight" in renamed:
        if not np.array_equal(renamed.pop("lm_head.weight"), emb):
            raise Refusal(f"{subj}: tie_word_embeddings is true but lm_head.weight is not "
                          "model.embed_tokens.weight")
    cfg = decoder_config(cfg, subj, table)
    return Decoder(None, cfg, decoder_state(cfg, renamed, emb.shape[0], subj, finite_array(subj)),
                   None)


# A GGUF file's llama.* metadata (llama.cpp's keys) -> the model file, as HF_LLAMA_FIELDS does
# for a config.json. general.* (names, licences, the file type; general.alignment is the file's
# layout) and tokenizer.* (tools/tokenizer.py --gguf reads them) do not change the logits.
GGUF_LLAMA_FIELDS = {
    "general.architecture": only("another family's file", "llama"),
    "llama.context_length": carry("t_max"), "llama.embedding_length": carry("d_model"),
    "llama.block_count": carry("n_layers"), "llama.feed_forward_length": carry("d_hidden"),
    "llama.attention.head_count": carry("n_heads"),
    "llama.attention.head_count_kv": carry("n_kv_heads", None),
    "llama.attention.key_length": carry("d_head", None),
    "llama.attention.value_length": carry("d_head_v", None),  # = key_length
    "llama.rope.dimension_count": carry("rope_dims", None),  # = d_head: every dimension turns
    "llama.attention.layer_norm_rms_epsilon": carry("norm_eps"),
    "llama.rope.freq_base": carry("rope_base", 10000.0), "llama.vocab_size": carry("vocab", None),
    "llama.rope.scaling.type": only("the model file's RoPE has no scaling", "none"),
    "llama.rope.scaling.factor": only("the model file's RoPE has no scaling", 1.0),
    "llama.expert_count": only("the model file's MLPs are dense", 0),
    "llama.expert_used_count": only("the model file's MLPs are dense", 0),
}
GGUF_RENAMES = (("token_embd.", "embed."), ("output_norm.", "norm."), ("output.", "lm_head."),
                ("blk.", "layers."), (".attn_q.", ".attn.q_proj."), (".attn_k.", ".attn.k_proj."),
                (".attn_v.", ".attn.v_proj."), (".attn_output.", ".attn.o_proj."),
                (".ffn_norm.", ".mlp_norm."), (".ffn_gate.", ".mlp.gate_proj."),
                (".ffn_up.", ".mlp.up_proj."), (".ffn_down.", ".mlp.down_proj."))


def gguf_decoder(path):
    """The Decoder of a GGUF file (tools/gguf.py; llama architecture, F32/F16/BF16/Q8_0 tensors
    widened or dequantised to float32 exactly). llama.cpp's converter permutes the Q and K rows
    of Hugging Face's half-split RoPE into adjacent pairs, which llama.cpp's llama rotates: the
    rows are kept as stored and the file says adjacent pairs."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gguf
    subj = os.path.basename(path)
    try:
        meta, sd, _ = gguf.read_gguf(path)
    except OSError as e:
        raise Refusal(f"{path}: {e.strerror}") from None
    except gguf.GgufError as e:
        raise Refusal(str(e)) from None
    fields = {k: v for k, v in meta.items()
              if k == "general.architecture" or not k.startswith(("general.", "tokenizer."))}
    if "general.architecture" not in fields:
        raise Refusal(f"{subj}: no general.architecture")
    cfg = default_heads(read_config(fields, GGUF_LLAMA_FIELDS, subj))
    for k, key in (("d_head_v", "value_length"), ("rope_dims", "rope.dimension_count")):
        v = cfg.pop(k)
        if v is not None and v != cfg["d_head"]:
            raise Refusal(f"{subj}: llama.{key} {v} is not the head size {cfg['d_head']} (the "
                          "model file's heads have one size and turn every dimension)")
    cfg["rope_pairing"] = "adjacent"
    renamed = {}
    for k, v in sd.items():
        for a_, b_ in GGUF_RENAMES:
            k = k.replace(a_, b_) if k.startswith(a_) or a_.startswith(".") else k
        renamed[k] = v
    emb = renamed.get("embed.weight")
    if emb is None or emb.ndim != 2:
        raise Refusal(f"{subj}: no 2-D token_embd.weight")
    cfg["tied_head"] = "lm_head.weight" not in renamed  # llama.cpp: no output.weight = tied
    cfg = decoder_config(cfg, subj, GGUF_LLAMA_FIELDS)
    return Decoder(None, cfg, decoder_state(cfg, renamed, emb.shape[0], subj, finite_array(subj)),
                   None)


def read_tokenizer_file(path, vocab):
    """--tokenizer's bytes: a tools/tokenizer.py file as it is, or a tokenizer in a source format
    converted by tools/tokenizer.py (a .json: Hugging Face's tokenizer.json; a .model:
    SentencePiece's; a GGUF file; another .bin: llama2.c's tokenizer.bin). Refused unless it
    holds vocab pieces."""
    import struct
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Refusal(f"--tokenizer {path}: {e.strerror}") from None
    if data[:4] != b"MATK":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import tokenizer as tk
        reader = (tk.read_gguf if data[:4] == b"GGUF" else
                  tk.read_hf_tokenizer if path.endswith(".json") else
                  tk.read_sentencepiece if path.endswith(".model") else
                  tk.read_llama2c if path.endswith(".bin") else None)
        if reader is None:
            raise Refusal(f"--tokenizer {path}: not a tokenizer file of tools/tokenizer.py, a "
                          "tokenizer.json, a SentencePiece .model, a GGUF or llama2.c's "
                          "tokenizer.bin")
        try:
            data = tk.blob(reader(path))
        except tk.TokenizerError as e:
            raise Refusal(f"--tokenizer {path}: {e}") from None
    if len(data) < 80 or struct.unpack_from("<I", data, 8)[0] != len(data):
        raise Refusal(f"--tokenizer {path}: not a tokenizer file of tools/tokenizer.py")
    n = struct.unpack_from("<I", data, 16)[0]
    if n != vocab:
        raise Refusal(f"--tokenizer {path}: {n} pieces, the model's vocabulary is {vocab}")
    return data


def run_decoder(a):
    """--kind decoder: writes --blob, --reference and --vocab-header (at least one)."""
    unused = [f for f, v in (("--state-dict", a.state_dict), ("--fixtures", a.fixtures),
                             ("--path", a.path), ("--prefix", a.prefix), ("--heads", a.heads),
                             ("--kv-heads", a.kv_heads), ("--mask", a.mask),
                             ("--out", a.out != "-"), ("--layout", a.layout != "outin"),
                             ("--compute", a.compute != "f32")) if v]
    if unused:
        raise Refusal(f"{', '.join(unused)}: not with --kind decoder (a whole causal decoder; "
                      "give --blob, --reference, --vocab-header)")
    if not (a.module or a.tiny_lm or a.llama2c or a.hf or a.gguf):
        raise Refusal("--kind decoder needs --module FILE, --tiny-lm FILE, --llama2c FILE, "
                      "--hf DIR or --gguf FILE")
    if a.llama2c and (a.reference or a.vocab_header):
        raise Refusal("--llama2c: --blob only (a llama2.c checkpoint has no vocabulary string, "
                      "and its reference is computed by the tests' NumPy model)")
    if (a.hf or a.gguf) and (a.reference or a.vocab_header):
        flag = "--hf" if a.hf else "--gguf"
        raise Refusal(f"{flag}: --blob only (no torch: the reference needs the module; the "
                      "tokenizer is tools/tokenizer.py's)")
    outs = [(f, v) for f, v in (("--blob", a.blob), ("--reference", a.reference),
                                ("--vocab-header", a.vocab_header)) if v]
    if not outs:
        raise Refusal("--kind decoder writes --blob FILE, --reference FILE and/or "
                      "--vocab-header FILE: give at least one")
    name = a.name or "tiny_lm"
    check_name(name)
    if a.n < 0:
        raise Refusal(f"--n {a.n}: must be at least 0")
    for flag, dest in outs:
        check_out(dest, flag)
    for flag, v in (("--context", a.context is not None), ("--tokenizer", a.tokenizer)):
        if v and (a.blob_version != 2 or not a.blob):
            raise Refusal(f"{flag}: with --blob of version 2 (a field of the model file)")
    src = a.module or a.tiny_lm or a.llama2c or a.hf or a.gguf
    if a.gguf:
        dec = gguf_decoder(a.gguf)
    elif a.llama2c:
        dec = llama2c_decoder(a.llama2c)
    elif a.hf:
        dec = hf_dir_decoder(a.hf)
    else:
        need_torch()
        dec = load_decoder(src, bool(a.tiny_lm))
    report, files = [], []
    if a.tokenizer:
        dec.cfg["tokenizer"] = read_tokenizer_file(a.tokenizer, dec.cfg["vocab"])
    if a.context is not None:
        if not 1 <= a.context <= dec.cfg["t_max"]:
            raise Refusal(f"--context {a.context}: 1 .. the trained context {dec.cfg['t_max']}")
        dec.cfg["context"] = a.context
    if a.blob:
        write = blob_v2_bytes if a.blob_version == 2 else blob_bytes
        files.append((a.blob, write(dec, a.quant, report)))
    if a.reference:
        files.append((a.reference, reference_header(dec, name, a.prompt, a.n,
                                                    os.path.basename(src), report).encode()))
    if a.vocab_header:
        files.append((a.vocab_header, vocab_header(dec, name).encode()))
    for dest, data in files:  # after all the work: a refusal leaves no file behind
        write_out(dest, data)
    return report


# --- test fixtures ----------------------------------------------------------------------------

def fixtures_header(entries, comment):
    import numpy as np
    out = ["// Generated by tools/export_pytorch.py -- do not edit.", f"// {comment}",
           "#pragma once", "", ALIGN_MACRO]
    for name, t in entries:
        out.append(c_array(name, np.ascontiguousarray(
            t.detach().to("cpu").float().numpy(), dtype=np.float32).reshape(-1)))
    return "\n".join(out)


def fixtures():
    import torch
    torch.manual_seed(1234)
    entries = []
    # 1. nn.MultiheadAttention, E = 16, 4 heads, biases, causal, T = 11.
    E, H, T = 16, 4, 11
    mha = torch.nn.MultiheadAttention(E, H, bias=True, batch_first=True)
    with torch.no_grad():
        mha.in_proj_bias.uniform_(-0.3, 0.3)
        mha.out_proj.bias.uniform_(-0.3, 0.3)
    x = torch.rand(1, T, E) * 2 - 1
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = masked
    y, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
    sd = mha.state_dict()
    entries += [("mha_in_proj_weight", sd["in_proj_weight"]), ("mha_in_proj_bias", sd["in_proj_bias"]),
                ("mha_out_proj_weight", sd["out_proj.weight"]), ("mha_out_proj_bias", sd["out_proj.bias"]),
                ("mha_x", x), ("mha_y", y)]
    # 2. LLaMA-style GQA: d_model 24, 6 query heads, 2 key/value heads, d_head 5, no bias.
    D, Hq, Hkv, dh, T2 = 24, 6, 2, 5, 13
    q_proj = torch.nn.Linear(D, Hq * dh, bias=False)
    k_proj = torch.nn.Linear(D, Hkv * dh, bias=False)
    v_proj = torch.nn.Linear(D, Hkv * dh, bias=False)
    o_proj = torch.nn.Linear(Hq * dh, D, bias=False)
    x2 = torch.rand(T2, D) * 2 - 1
    q = q_proj(x2).view(T2, Hq, dh).transpose(0, 1)
    k = k_proj(x2).view(T2, Hkv, dh).transpose(0, 1).repeat_interleave(Hq // Hkv, dim=0)
    v = v_proj(x2).view(T2, Hkv, dh).transpose(0, 1).repeat_interleave(Hq // Hkv, dim=0)
    s = q @ k.transpose(1, 2) / dh ** 0.5
    s = s.masked_fill(torch.triu(torch.ones(T2, T2, dtype=torch.bool), 1), float("-inf"))
    ctx = (torch.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(T2, Hq * dh)
    y2 = o_proj(ctx)
    entries += [("gqa_q_proj", q_proj.weight), ("gqa_k_proj", k_proj.weight),
                ("gqa_v_proj", v_proj.weight), ("gqa_o_proj", o_proj.weight),
                ("gqa_x", x2), ("gqa_y", y2)]
    # 3. The same kind of layer with d_head 16, exported as kPanel16 by this tool's own code
    #    path (to_panel16): d_model 32, 4 query heads, 2 key/value heads, 9 tokens.
    D3, H3, K3, dh3, T3 = 32, 4, 2, 16, 9
    lin = [torch.nn.Linear(D3, H3 * dh3, bias=False), torch.nn.Linear(D3, K3 * dh3, bias=False),
           torch.nn.Linear(D3, K3 * dh3, bias=False), torch.nn.Linear(H3 * dh3, D3, bias=False)]
    x3 = torch.rand(T3, D3) * 2 - 1
    q = lin[0](x3).view(T3, H3, dh3).transpose(0, 1)
    k = lin[1](x3).view(T3, K3, dh3).transpose(0, 1).repeat_interleave(H3 // K3, dim=0)
    v = lin[2](x3).view(T3, K3, dh3).transpose(0, 1).repeat_interleave(H3 // K3, dim=0)
    s = q @ k.transpose(1, 2) / dh3 ** 0.5
    s = s.masked_fill(torch.triu(torch.ones(T3, T3, dtype=torch.bool), 1), float("-inf"))
    y3 = lin[3]((torch.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(T3, H3 * dh3))
    d3 = export_dict_panel16({"wq": lin[0].weight, "wk": lin[1].weight, "wv": lin[2].weight,
                              "wo": lin[3].weight})
    entries += [("p16_wq", d3["wq"]), ("p16_wk", d3["wk"]), ("p16_wv", d3["wv"]),
                ("p16_wo", d3["wo"]), ("p16_x", x3), ("p16_y", y3)]
    return fixtures_header(entries, f"Test fixtures computed by PyTorch {torch.__version__} "
                                    "(seed 1234)")


# --- command line -----------------------------------------------------------------------------

def load(path, weights_only):
    import pickle
    import torch
    try:
        return torch.load(path, map_location="cpu", weights_only=weights_only)
    except FileNotFoundError:
        raise Refusal(f"{path}: no such file") from None
    except (AttributeError, ModuleNotFoundError) as e:  # a class torch.load cannot import
        if "module '__main__'" in str(e):  # defined in the saving script: PYTHONPATH cannot help
            raise Refusal(f"{path}: cannot unpickle the module here ({one_line(e)}): its class "
                          "was defined in the script that saved it; move the class into an "
                          "importable file, or call export_module(module, name=...) from that "
                          "script") from None
        raise Refusal(f"{path}: cannot unpickle the module here ({one_line(e)}); put the "
                      "folder of its class's source on PYTHONPATH, or call export_module() "
                      "from your own script") from None
    except (pickle.UnpicklingError, RuntimeError, EOFError, OSError) as e:
        msg = one_line(e)
        if weights_only and "WeightsUnpickler error:" in msg:  # torch's own text is a paragraph
            why = msg.split("WeightsUnpickler error:")[-1].strip()
            raise Refusal(f"{path} is not a plain state dict ({why}); if it is a pickled module, "
                          "use --module") from None
        raise Refusal(f"{path}: torch.load failed: {msg[:300]}") from None


def parser():
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group()
    src.add_argument("--module", metavar="FILE", help="a pickled nn.Module (torch.save(module))")
    src.add_argument("--state-dict", metavar="FILE", help="a state dict (needs --heads)")
    src.add_argument("--fixtures", metavar="HEADER", help="regenerate the test fixtures")
    ap.add_argument("--path", help="with --module: the submodule to export (e.g. layers.0)")
    ap.add_argument("--prefix", default="",
                    help="with --state-dict: key prefix (e.g. layers.0.attn.)")
    src.add_argument("--tiny-lm", metavar="FILE", help="with --kind decoder: a checkpoint of "
                     "tools/train_tiny_lm.py (a dict: config, vocab, state_dict)")
    src.add_argument("--gguf", metavar="FILE", help="with --kind decoder: a GGUF file "
                     "(version 3, llama architecture; F32, F16, BF16, Q8_0; no torch needed; "
                     "--blob only)")
    src.add_argument("--hf", metavar="DIR", help="with --kind decoder: a Hugging Face "
                     "directory (config.json + model.safetensors or its sharded index; F32, "
                     "F16, BF16; no torch needed; --blob only)")
    src.add_argument("--llama2c", metavar="FILE", help="with --kind decoder: a llama2.c "
                     "checkpoint (run.c's version-0 layout, e.g. stories15M.bin; no torch "
                     "needed; --blob only)")
    ap.add_argument("--kind", metavar="{attention,decoder}", default="attention",
                    help="attention: one attention layer as a header (default); decoder: a "
                    "whole LLaMA-style decoder as a model blob (--blob), its PyTorch reference "
                    "(--reference) and its vocabulary (--vocab-header)")
    ap.add_argument("--blob", metavar="FILE", help="with --kind decoder: the model blob "
                    "(docs/model-format.md; fp32, or int8 / fp16 / bf16 with --quant)")
    ap.add_argument("--blob-version", type=int, choices=(1, 2), default=2,
                    help="with --blob: the model file's version (default 2; 1 for readers "
                    "older than microattn 0.9, e.g. bench/tiny_lm_naive.c)")
    ap.add_argument("--tokenizer", metavar="FILE", help="with --blob (version 2): a "
                    "tokenizer file of tools/tokenizer.py, or a tokenizer.json, SentencePiece "
                    ".model, GGUF or llama2.c tokenizer.bin it converts, stored inside the "
                    "model file (its pieces must be the model's vocabulary)")
    ap.add_argument("--context", type=int, metavar="N", help="with --blob (version 2): the "
                    "context to deploy for, at most the trained one (the file's t_max stays "
                    "the trained context; a Decoder with T_max above N refuses the file)")
    ap.add_argument("--reference", metavar="FILE", help="with --kind decoder: a C header of "
                    "the module's greedy continuation of --prompt and its logits")
    ap.add_argument("--vocab-header", metavar="FILE", help="with --kind decoder: a C header of "
                    "the vocabulary (UTF-8 of each id)")
    ap.add_argument("--prompt", default=DEFAULT_PROMPT, help="with --reference: the prompt "
                    f"(default {DEFAULT_PROMPT!r})")
    ap.add_argument("--n", type=int, default=64, help="with --reference: greedy tokens after "
                    "the prompt (default 64)")
    ap.add_argument("--name", help="prefix of the arrays and macros (default attn; tiny_lm "
                    "with --kind decoder)")
    ap.add_argument("--heads", type=int, help="query heads (required with --state-dict; with "
                    "--module, checked against the module)")
    ap.add_argument("--kv-heads", type=int, help="key/value heads (optional; checked)")
    ap.add_argument("--mask", metavar="{causal,none,window:W}",
                    help="required with --module and --state-dict: the mask the module is "
                    "called with (causal: a decoder; none: an encoder, every token sees every "
                    "token; window:W: causal, the last W tokens, microattn::SlidingWindow{W})")
    ap.add_argument("--out", default="-", help="output header (default stdout; its folder must "
                    "exist)")
    ap.add_argument("--layout", choices=("outin", "panel16"), default="outin",
                    help="outin: PyTorch's [out][in] as it is (default); panel16: kPanel16")
    ap.add_argument("--quant", metavar="{none,int8,fp16,bf16,int8-g32,int8-g64,int8-g128}",
                    default="none",
                    help="none: fp32 weights (default); int8: int8 matrices with one fp32 scale "
                    "per output column (microattn::WeightType::kInt8), the error on stderr; "
                    "fp16, bf16: 16-bit float matrices (WeightType::kF16, kBF16; model files "
                    "only); int8-g32, int8-g64, int8-g128: int8 with a scale per output column "
                    "and group of 32 / 64 / 128 inputs (WeightType::kInt8G32 / G64 / G128; "
                    "model files only)")
    ap.add_argument("--compute", metavar="{f32,int8}", default="f32",
                    help="f32: float arithmetic (default); int8: with --quant int8, the Config "
                    "line names microattn::Compute::kInt8 (integer projections)")
    return ap


def run(argv):
    a = parser().parse_args(argv)
    if a.quant not in BLOB_QUANTS:  # checked here, not by argparse: one line and exit 2
        raise Refusal(f"--quant {a.quant!r}: not one of {', '.join(BLOB_QUANTS)}")
    if a.quant not in QUANTS and (a.kind != "decoder" or a.reference or a.vocab_header):
        raise Refusal(f"--quant {a.quant}: model files only (--kind decoder --blob); a header's "
                      "arrays are fp32 or int8")
    if a.kind not in ("attention", "decoder"):
        raise Refusal(f"--kind {a.kind!r}: not one of attention, decoder")
    if a.kind == "decoder":
        for line in run_decoder(a):
            print(f"export_pytorch.py: {line}", file=sys.stderr)
        return 0
    decoder_only = [f for f, v in (("--tiny-lm", a.tiny_lm), ("--llama2c", a.llama2c),
                                   ("--hf", a.hf), ("--gguf", a.gguf),
                                   ("--blob", a.blob), ("--context", a.context is not None),
                                   ("--tokenizer", a.tokenizer),
                                   ("--reference", a.reference),
                                   ("--vocab-header", a.vocab_header),
                                   ("--prompt", a.prompt != DEFAULT_PROMPT), ("--n", a.n != 64))
                    if v]
    if decoder_only:
        raise Refusal(f"{', '.join(decoder_only)}: only with --kind decoder")
    a.name = a.name or "attn"
    check_compute(a.compute, a.quant)
    # Everything that needs no file is checked before torch loads one (it may be large).
    if a.fixtures and a.mask is not None:
        raise Refusal("--mask goes with --module or --state-dict; --fixtures writes layers "
                      "with their own masks")
    if a.module or a.state_dict:
        mask = Mask.parse(a.mask)
    dest = a.fixtures or a.out
    check_out(dest, "--fixtures" if a.fixtures else "--out")
    report = []
    if a.fixtures:
        need_torch()
        text = fixtures()
    else:
        check_name(a.name)
        for flag, v in (("--heads", a.heads), ("--kv-heads", a.kv_heads)):
            if v is not None and v < 1:
                raise Refusal(f"{flag} {v}: must be at least 1")
        if a.module:
            if a.prefix:
                raise Refusal("--prefix goes with --state-dict; with --module use --path")
            need_torch()
            root = load(a.module, weights_only=False)
            text = export_module(root, a.name, a.layout, a.path, a.heads, a.kv_heads, a.module,
                                 a.quant, report, mask, a.compute)
        elif a.state_dict:
            if a.path:
                raise Refusal("--path goes with --module; with --state-dict use --prefix")
            if a.heads is None:  # before loading: the file may be large
                raise Refusal("--heads is required with --state-dict: a state dict does not "
                              "record the number of heads (or use --module, which reads it)")
            need_torch()
            sd = load(a.state_dict, weights_only=True)
            text = export_state_dict(sd, a.heads, a.kv_heads, a.prefix, a.name, a.layout,
                                     a.state_dict, a.quant, report, mask, a.compute)
        else:
            raise Refusal("give --module FILE or --state-dict FILE --heads H (each with --mask "
                          "causal|none|window:W), or --fixtures HEADER")
    if dest == "-":
        sys.stdout.write(text)
    else:
        write_out(dest, text)
    for line in report:  # notes on the mask; --quant int8: the error of each matrix
        print(f"export_pytorch.py: {line}", file=sys.stderr)
    return 0


def write_out(dest, data):
    """Writes text (str) or bytes to the file dest; a failed write leaves no half file behind."""
    try:  # check_out looked at the folder, but the disk may still refuse
        f = open(dest, "wb" if isinstance(data, bytes) else "w")
    except OSError as e:
        raise Refusal(f"cannot write {dest}: {e.strerror or one_line(e)}") from None
    try:
        with f:
            f.write(data)
    except OSError as e:  # a full disk: no half header left behind (only a plain file)
        if os.path.isfile(dest) and not os.path.islink(dest):
            try:
                os.remove(dest)
            except OSError:
                pass
        raise Refusal(f"cannot write {dest}: {e.strerror or one_line(e)}") from None


def check_out(dest, flag):
    """Refuses an output path whose folder does not exist (or is not a folder) before any work.
    A refusal, not os.makedirs: a mistyped path should not silently grow a folder tree, and a
    build that writes headers has made its output folder already."""
    if dest == "-":
        return
    folder = os.path.dirname(dest) or "."
    if not os.path.isdir(folder):
        raise Refusal(f"{flag} {dest}: the folder {folder} does not exist (create it first)")
    if os.path.isdir(dest):
        raise Refusal(f"{flag} {dest} is a folder; give a file name")


def need_torch():
    """PyTorch and numpy, or a one-line refusal saying how to get them (a traceback from deep
    inside torch.load otherwise)."""
    import importlib
    try:
        for m in ("numpy", "torch"):
            importlib.import_module(m)
    except ImportError as e:
        raise Refusal(f"{sys.executable} cannot import torch/numpy ({one_line(e)}): install "
                      "Debian's python3-torch (apt-get install python3-torch) and run this tool "
                      "with /usr/bin/python3") from None


def main(argv=None):
    """Exit status: 0 written; 2 refused (one line on stderr, nothing written) or a usage error."""
    try:
        return run(argv)
    except Refusal as e:
        print(f"export_pytorch.py: error: {one_line(e)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
