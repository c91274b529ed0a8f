# SPDX-License-Identifier: Apache-2.0
"""Attention modules shaped like the ones users export, for the exporter tests.

They live in their own importable file (not in the test script) because torch.save(module)
pickles the class by reference: the exporter, run as its own process, must be able to import it
(the tests put this folder on PYTHONPATH).

  LlamaStyleAttention      q_proj/k_proj/v_proj/o_proj (LLaMA, Qwen2: biases on Q, K, V only)
  WhisperStyleAttention    q_proj/k_proj/v_proj/out_proj, no bias on K (Hugging Face Whisper)
  TeachingNotesAttention   W_query/W_key/W_value/out_proj, d_in -> d_out and out_proj
                           d_out -> d_out (the teaching notes' MultiHeadAttention)

Each computes attention without RoPE (exported layers are compared with MultiHeadAttention
without set_rope()) unless LlamaStyleAttention(rope_theta=...) says otherwise: causal by default;
LlamaStyleAttention(window=W) causal with a sliding window of W tokens (token i sees
i - W + 1 .. i), WhisperStyleAttention(causal=False) an encoder's, every token sees every token.
"""
import types

import torch
from torch import nn


def banned(T, causal=True, window=None):
    """[T][T] bool, True where query i must not see key j: j > i (causal), and j <= i - W with
    a window of W; all False for causal=False."""
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    out = (j > i) if causal else torch.zeros(T, T, dtype=torch.bool)
    if window is not None:
        out = out | (j <= i - window)
    return out


def causal_attention(q, k, v, scale, causal=True, window=None):
    """q [H][T][dh], k and v [H][T][dh] (already repeated for GQA) -> [T][H * dh]; the mask as
    banned() makes it."""
    H, T, dh = q.shape
    s = q @ k.transpose(1, 2) * scale
    s = s.masked_fill(banned(T, causal, window), float("-inf"))
    return (torch.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(T, H * dh)


class LlamaStyleAttention(nn.Module):
    """q_proj/k_proj/v_proj/o_proj like Hugging Face's LlamaAttention and Qwen2Attention, on x of
    shape [T][d_model].

    bias: every projection has a bias (or none); o_bias overrides it for o_proj (Qwen2: bias=True,
    o_bias=False); biases, a string like "qkv" or "qvo", overrides both. out_dim: o_proj's
    output width (default d_model). scaling: a Hugging Face-style `scaling` attribute, used by
    the forward (default: none, 1/sqrt(head_dim)). window: a sliding window of W tokens, in the
    forward and stated like Hugging Face does (config.sliding_window with attrs="config", a
    sliding_window attribute with attrs="module").

    attrs says where the shape is stated: "module" (num_heads, num_key_value_heads, head_dim as
    attributes, like older transformers releases), "config" (a .config with
    num_attention_heads, num_key_value_heads, head_dim, hidden_size, like newer ones) or "none".

    rope_theta: the forward rotates Q and K (positions 0 .. T-1) like transformers' Llama (half
    split: rotate_half on the first rotary_dims = head_dim * partial_rotary_factor dimensions)
    or, with rope_pairing="adjacent", like tools/train_tiny_lm.py (pairs 2i, 2i + 1); stated
    where attrs says (rope_theta, partial_rotary_factor on the config or the module; a
    rope_pairing attribute on the module).
    """

    def __init__(self, d_model, heads, kv_heads, head_dim, bias=False, o_bias=None,
                 attrs="module", biases=None, out_dim=None, scaling=None, window=None,
                 rope_theta=None, partial_rotary_factor=None, rope_pairing=None):
        super().__init__()
        if biases is None:
            biases = "qkv" * bool(bias) + "o" * bool(bias if o_bias is None else o_bias)
        self.q_proj = nn.Linear(d_model, heads * head_dim, bias="q" in biases)
        self.k_proj = nn.Linear(d_model, kv_heads * head_dim, bias="k" in biases)
        self.v_proj = nn.Linear(d_model, kv_heads * head_dim, bias="v" in biases)
        self.o_proj = nn.Linear(heads * head_dim, out_dim or d_model, bias="o" in biases)
        if attrs == "module":
            self.num_heads, self.num_key_value_heads, self.head_dim = heads, kv_heads, head_dim
            self.num_key_value_groups = heads // kv_heads
            if window is not None:
                self.sliding_window = window
        elif attrs == "config":
            self.config = types.SimpleNamespace(num_attention_heads=heads,
                                                num_key_value_heads=kv_heads, head_dim=head_dim,
                                                hidden_size=d_model)
            if window is not None:
                self.config.sliding_window = window
        if scaling is not None:
            self.scaling = scaling
        if rope_theta is not None:
            where = self.config if attrs == "config" else self
            where.rope_theta = rope_theta
            if partial_rotary_factor is not None:
                where.partial_rotary_factor = partial_rotary_factor
            if rope_pairing is not None:
                self.rope_pairing = rope_pairing
        # The forward's own copy, under names the exporter does not read.
        self._shape = (heads, kv_heads, head_dim)
        self._window = window
        self._rope = None if rope_theta is None else (
            rope_theta, int(head_dim * (partial_rotary_factor or 1.0)), rope_pairing or "half")

    def forward(self, x):
        H, K, dh = self._shape
        T = x.shape[0]
        q = rope(self.q_proj(x).view(T, H, dh).transpose(0, 1), self._rope)
        k = rope(self.k_proj(x).view(T, K, dh).transpose(0, 1), self._rope)
        k = k.repeat_interleave(H // K, dim=0)
        v = self.v_proj(x).view(T, K, dh).transpose(0, 1).repeat_interleave(H // K, dim=0)
        scale = getattr(self, "scaling", dh ** -0.5)
        return self.o_proj(causal_attention(q, k, v, scale, window=self._window))


def rope(x, settings):
    """x [heads][T][d_head] with positions 0 .. T-1 rotated by settings = (base, rotary dims
    n, pairing "half" or "adjacent"), the first n dimensions: pair i turns by
    p * base^(-2i/n), pairs (i, i + n/2) or (2i, 2i + 1); the angles in float64 and rounded
    once, as microattn's tables. settings None: x as it is."""
    if settings is None:
        return x
    base, n, pairing = settings
    ang = torch.arange(x.shape[1], dtype=torch.float64)[:, None] * (
        base ** (-2.0 * torch.arange(n // 2, dtype=torch.float64) / n))[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    r, rest = x[..., :n], x[..., n:]
    a, b = (r[..., 0::2], r[..., 1::2]) if pairing == "adjacent" else (r[..., :n // 2],
                                                                        r[..., n // 2:])
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if pairing == "adjacent":
        rot = torch.stack((ra, rb), dim=-1).flatten(-2)
    else:
        rot = torch.cat((ra, rb), dim=-1)
    return torch.cat((rot, rest), dim=-1)


class WhisperStyleAttention(nn.Module):
    """Hugging Face's WhisperAttention as a decoder self-attention: k_proj has no bias, q_proj,
    v_proj and out_proj have one; Q is multiplied by `scaling` (head_dim ** -0.5) before the
    scores. x of shape [T][embed_dim]. causal=False: the encoder's self-attention (is_decoder
    and is_causal False, every token sees every token)."""

    def __init__(self, embed_dim, num_heads, causal=True):
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim = embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.is_decoder, self.is_causal = causal, causal
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)

    def forward(self, x):
        T, H, dh = x.shape[0], self.num_heads, self.head_dim
        q = (self.q_proj(x) * self.scaling).view(T, H, dh).transpose(0, 1)
        k = self.k_proj(x).view(T, H, dh).transpose(0, 1)
        v = self.v_proj(x).view(T, H, dh).transpose(0, 1)
        return self.out_proj(causal_attention(q, k, v, 1.0, causal=self.is_causal))


class TeachingNotesAttention(nn.Module):
    """The teaching notes' MultiHeadAttention: W_query, W_key, W_value map d_in to d_out
    (bias: qkv_bias), num_heads heads of head_dim = d_out // num_heads, and out_proj maps d_out
    to d_out (with a bias), so the output is d_out wide, not d_in. Causal through a `mask`
    buffer, dropout on the attention weights; x of shape [batch][T][d_in]."""

    def __init__(self, d_in, d_out, context_length, dropout, num_heads, qkv_bias=False):
        super().__init__()
        assert d_out % num_heads == 0, "d_out must be divisible by num_heads"
        self.d_out = d_out
        self.num_heads = num_heads
        self.head_dim = d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length),
                                                diagonal=1))

    def forward(self, x):
        b, num_tokens, d_in = x.shape
        keys = self.W_key(x).view(b, num_tokens, self.num_heads, self.head_dim).transpose(1, 2)
        queries = self.W_query(x).view(b, num_tokens, self.num_heads,
                                       self.head_dim).transpose(1, 2)
        values = self.W_value(x).view(b, num_tokens, self.num_heads,
                                      self.head_dim).transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        mask_bool = self.mask.bool()[:num_tokens, :num_tokens]
        attn_scores.masked_fill_(mask_bool, -torch.inf)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        attn_weights = self.dropout(attn_weights)
        context_vec = (attn_weights @ values).transpose(1, 2)
        context_vec = context_vec.contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)
