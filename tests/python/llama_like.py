"""A LLaMA/Hugging Face-style attention module for the exporter tests.

It lives in its own importable file (not in the test script) because torch.save(module) pickles
the class by reference: the exporter, run as its own process, must be able to import it
(the tests put this folder on PYTHONPATH).
"""
import types

import torch
from torch import nn


class LlamaStyleAttention(nn.Module):
    """q_proj/k_proj/v_proj/o_proj like Hugging Face's LlamaAttention, without RoPE (which
    microattn's MultiHeadAttention does not apply either), causal, on x of shape [T][d_model].

    attrs says where the shape is stated: "module" (num_heads, num_key_value_heads, head_dim as
    attributes, like older transformers releases), "config" (a .config with
    num_attention_heads, num_key_value_heads, head_dim, hidden_size, like newer ones) or "none".
    """

    def __init__(self, d_model, heads, kv_heads, head_dim, bias=False, o_bias=None,
                 attrs="module"):
        super().__init__()
        self.q_proj = nn.Linear(d_model, heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(heads * head_dim, d_model, bias=bias if o_bias is None else o_bias)
        if attrs == "module":
            self.num_heads, self.num_key_value_heads, self.head_dim = heads, kv_heads, head_dim
            self.num_key_value_groups = heads // kv_heads
        elif attrs == "config":
            self.config = types.SimpleNamespace(num_attention_heads=heads,
                                                num_key_value_heads=kv_heads, head_dim=head_dim,
                                                hidden_size=d_model)
        # The forward's own copy, under names the exporter does not read.
        self._shape = (heads, kv_heads, head_dim)

    def forward(self, x):
        H, K, dh = self._shape
        T = x.shape[0]
        q = self.q_proj(x).view(T, H, dh).transpose(0, 1)
        k = self.k_proj(x).view(T, K, dh).transpose(0, 1).repeat_interleave(H // K, dim=0)
        v = self.v_proj(x).view(T, K, dh).transpose(0, 1).repeat_interleave(H // K, dim=0)
        s = q @ k.transpose(1, 2) / dh ** 0.5
        s = s.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        ctx = (torch.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(T, H * dh)
        return self.o_proj(ctx)
