# SPDX-License-Identifier: Apache-2.0
"""A multi-head latent attention module (DeepSeek-V2's MLA, section 2.1 of its paper) in the
structure of Hugging Face's DeepseekV2Attention, for the exporter tests.

It lives in its own importable file for the same reason as llama_like.py: torch.save(module)
pickles the class by reference, and the exporter run as its own process must import it.

  c_KV, k_R = split(x W_DKV)            kv_a_proj_with_mqa: d_model -> kv_lora_rank + d_R
  c_KV = RMSNorm(c_KV)                  kv_a_layernorm (learned weight)
  [k_nope_h | v_h] = c_KV W_UKV_h       kv_b_proj: kv_lora_rank -> H (d_nope + d_v)
  q = x W_Q, or RMSNorm(x W_DQ) W_UQ    q_proj, or q_a_proj + q_a_layernorm + q_b_proj
  [q_nope_h | q_R_h] = q_h              widths qk_nope_head_dim, qk_rope_head_dim
  k_h = [k_nope_h | RoPE(k_R)]          k_R shared by every head
  o_h = softmax(q_h k_h^T * softmax_scale, causal) v_h,  y = concat_h(o_h) W_O   (o_proj)

RoPE the Hugging Face way: q_R and k_R are permuted from interleaved pairs to halves
(dimensions 0, 2, 4, ... then 1, 3, 5, ...), then rotated with rotate_half. No biases
(DeepSeek's attention_bias = False), rope_scaling None (no YaRN), eval only (no dropout).
"""
import torch
from torch import nn


class RMSNorm(nn.Module):
    """Hugging Face's DeepseekV2RMSNorm: x / sqrt(mean(x^2) + eps) * weight, in float32."""

    def __init__(self, width, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.variance_epsilon = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.float() if dtype != torch.float64 else x
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_hf(x, theta):
    """x [..., T, d]: Hugging Face's DeepSeek-V2 RoPE at positions 0 .. T-1 (interleaved ->
    half permutation, then rotate_half with frequencies theta^(-2i/d))."""
    T, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    ang = torch.cat((ang, ang), dim=-1)
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x = x.reshape(*x.shape[:-1], d // 2, 2).transpose(-1, -2).reshape(x.shape)
    return x * cos + rotate_half(x) * sin


class DeepseekStyleAttention(nn.Module):
    """DeepseekV2Attention's parameters and attributes; forward(x) with x [T][d_model].

    q_lora_rank None: q_proj; else q_a_proj, q_a_layernorm, q_b_proj. eps: both RMSNorms'.
    """

    def __init__(self, d_model, heads, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim,
                 v_head_dim, q_lora_rank=None, rope_theta=10000.0, eps=1e-6):
        super().__init__()
        self.hidden_size, self.num_heads = d_model, heads
        self.q_lora_rank, self.kv_lora_rank = q_lora_rank, kv_lora_rank
        self.qk_rope_head_dim, self.qk_nope_head_dim = qk_rope_head_dim, qk_nope_head_dim
        self.v_head_dim = v_head_dim
        self.q_head_dim = qk_nope_head_dim + qk_rope_head_dim
        self.rope_theta, self.rope_scaling = rope_theta, None
        self.is_causal = True
        q_out = heads * self.q_head_dim
        if q_lora_rank is None:
            self.q_proj = nn.Linear(d_model, q_out, bias=False)
        else:
            self.q_a_proj = nn.Linear(d_model, q_lora_rank, bias=False)
            self.q_a_layernorm = RMSNorm(q_lora_rank, eps)
            self.q_b_proj = nn.Linear(q_lora_rank, q_out, bias=False)
        self.kv_a_proj_with_mqa = nn.Linear(d_model, kv_lora_rank + qk_rope_head_dim, bias=False)
        self.kv_a_layernorm = RMSNorm(kv_lora_rank, eps)
        self.kv_b_proj = nn.Linear(kv_lora_rank, heads * (qk_nope_head_dim + v_head_dim),
                                   bias=False)
        self.o_proj = nn.Linear(heads * v_head_dim, d_model, bias=False)
        self.softmax_scale = self.q_head_dim ** -0.5

    def queries(self, x):
        if self.q_lora_rank is None:
            q = self.q_proj(x)
        else:
            q = self.q_b_proj(self.q_a_layernorm(self.q_a_proj(x)))
        return q.view(x.shape[0], self.num_heads, self.q_head_dim).transpose(0, 1)

    def forward(self, x):
        T, H = x.shape[0], self.num_heads
        dn, dr, dv = self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim
        q_nope, q_pe = torch.split(self.queries(x), [dn, dr], dim=-1)
        c_kv, k_pe = torch.split(self.kv_a_proj_with_mqa(x), [self.kv_lora_rank, dr], dim=-1)
        kv = self.kv_b_proj(self.kv_a_layernorm(c_kv)).view(T, H, dn + dv).transpose(0, 1)
        k_nope, v = torch.split(kv, [dn, dv], dim=-1)
        q_pe = rope_hf(q_pe, self.rope_theta)
        k_pe = rope_hf(k_pe[None], self.rope_theta).expand(H, T, dr)
        q = torch.cat((q_nope, q_pe), dim=-1)
        k = torch.cat((k_nope, k_pe), dim=-1)
        s = q @ k.transpose(1, 2) * self.softmax_scale
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        return self.o_proj(o.transpose(0, 1).reshape(T, H * dv))
