# SPDX-License-Identifier: Apache-2.0
"""A stand-in for Hugging Face's LlamaForCausalLM (transformers is not installed here): the
same module names, config fields and forward (RMSNorm in float32, rotate_half RoPE on halves,
repeat_kv GQA, causal softmax, SiLU-gated MLP, lm_head tied or not), for the exporter's
--kind decoder test. Its own importable file because torch.save(module) pickles the classes by
reference and the exporter, run as its own process, must import them (the test puts this
folder on PYTHONPATH).

  LlamaForCausalLM(config)   config: a types.SimpleNamespace with LlamaConfig's field names
                             (config()), or a LlamaConfig (full_config(): to_dict() with every
                             field transformers' PretrainedConfig.to_dict() gives)
  MistralForCausalLM, GraniteForCausalLM, Qwen2ForCausalLM
                             the same module under those families' class names, for the
                             refusals: the exporter reads a family by its class, so it must
                             refuse them (by name) before it looks at a weight, and their
                             forward (LLaMA's here) never runs
"""
import math
import types

import torch
from torch import nn
import torch.nn.functional as F


class LlamaRMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.variance_epsilon = eps

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(v + self.variance_epsilon))


class LlamaRotaryEmbedding(nn.Module):
    """inv_freq as older transformers releases kept it: a persistent buffer (the exporter must
    drop it, it is not a weight)."""

    def __init__(self, dim, base):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / base ** (torch.arange(0, dim, 2).float() / dim))

    def forward(self, T):
        freqs = torch.arange(T, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads, self.num_key_value_heads = c.num_attention_heads, c.num_key_value_heads
        self.head_dim = c.head_dim
        d, dh = c.hidden_size, c.head_dim
        self.q_proj = nn.Linear(d, self.num_heads * dh, bias=c.attention_bias)
        self.k_proj = nn.Linear(d, self.num_key_value_heads * dh, bias=c.attention_bias)
        self.v_proj = nn.Linear(d, self.num_key_value_heads * dh, bias=c.attention_bias)
        self.o_proj = nn.Linear(self.num_heads * dh, d, bias=c.attention_bias)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        H, K, dh = self.num_heads, self.num_key_value_heads, self.head_dim
        q = self.q_proj(x).view(B, T, H, dh).transpose(1, 2)
        k = self.k_proj(x).view(B, T, K, dh).transpose(1, 2)
        v = self.v_proj(x).view(B, T, K, dh).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(H // K, dim=1), v.repeat_interleave(H // K, dim=1)
        s = q @ k.transpose(2, 3) / math.sqrt(dh)
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        o = torch.softmax(s.float(), dim=-1) @ v
        return self.o_proj(o.transpose(1, 2).reshape(B, T, H * dh))


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(LlamaDecoderLayer(c) for _ in range(c.num_hidden_layers))
        self.norm = LlamaRMSNorm(c.hidden_size, c.rms_norm_eps)
        self.rotary_emb = LlamaRotaryEmbedding(c.head_dim, c.rope_theta)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        cos, sin = self.rotary_emb(ids.shape[1])
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        for n, p in self.named_parameters():  # away from 1 for the norms: a swap would show
            nn.init.normal_(p, 1.0 if n.endswith("norm.weight") else 0.0, 0.2)

    def forward(self, ids):
        return types.SimpleNamespace(logits=self.lm_head(self.model(ids)))


class MistralForCausalLM(LlamaForCausalLM):
    """LLaMA's names and forward under Mistral's class name (Mistral: sliding_window)."""


class GraniteForCausalLM(LlamaForCausalLM):
    """LLaMA's names and forward under Granite's class name (Granite: embedding_multiplier,
    residual_multiplier, attention_multiplier, logits_scaling)."""


class Qwen2ForCausalLM(LlamaForCausalLM):
    """LLaMA's names and forward under Qwen2's class name (Qwen2: biases on Q, K, V)."""


def config(**kw):
    """A small LlamaConfig-like namespace; kw overrides."""
    c = dict(vocab_size=11, hidden_size=16, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, head_dim=4, intermediate_size=24,
             max_position_embeddings=32, rope_theta=500.0, rms_norm_eps=1e-6,
             tie_word_embeddings=True, hidden_act="silu", rope_scaling=None,
             attention_bias=False)
    c.update(kw)
    return types.SimpleNamespace(**c)


class LlamaConfig(types.SimpleNamespace):
    """Where the exporter looks at transformers' LlamaConfig: its attributes, and to_dict(),
    which adds model_type and transformers_version as PretrainedConfig.to_dict() does."""
    model_type = "llama"

    def to_dict(self):
        return dict(vars(self), model_type=self.model_type, transformers_version="4.46.3")


# What transformers 4.4x's PretrainedConfig.__init__ sets on every config (to_dict() lists
# them all, at their defaults here) besides the model's own fields: bookkeeping, outputs,
# generate() settings, task heads, token ids.
PRETRAINED_DEFAULTS = dict(
    return_dict=True, output_hidden_states=False, output_attentions=False, torchscript=False,
    torch_dtype="float32", use_bfloat16=False, tf_legacy_loss=False, pruned_heads={},
    chunk_size_feed_forward=0, is_encoder_decoder=False, is_decoder=False,
    cross_attention_hidden_size=None, add_cross_attention=False, tie_encoder_decoder=False,
    max_length=20, min_length=0, do_sample=False, early_stopping=False, num_beams=1,
    num_beam_groups=1, diversity_penalty=0.0, temperature=1.0, top_k=50, top_p=1.0,
    typical_p=1.0, repetition_penalty=1.0, length_penalty=1.0, no_repeat_ngram_size=0,
    encoder_no_repeat_ngram_size=0, bad_words_ids=None, num_return_sequences=1,
    output_scores=False, return_dict_in_generate=False, forced_bos_token_id=None,
    forced_eos_token_id=None, remove_invalid_values=False,
    exponential_decay_length_penalty=None, suppress_tokens=None, begin_suppress_tokens=None,
    architectures=["LlamaForCausalLM"], finetuning_task=None,
    id2label={0: "LABEL_0", 1: "LABEL_1"}, label2id={"LABEL_0": 0, "LABEL_1": 1},
    tokenizer_class=None, prefix=None, bos_token_id=1, pad_token_id=None, eos_token_id=2,
    sep_token_id=None, decoder_start_token_id=None, task_specific_params=None,
    problem_type=None, _name_or_path="", _attn_implementation_autoset=True)


def full_config(**kw):
    """config()'s model as a LlamaConfig with every field LlamaConfig has (its own at their
    defaults: initializer_range, pretraining_tp 1, use_cache, attention_dropout, mlp_bias
    False) and PRETRAINED_DEFAULTS; kw overrides."""
    c = dict(vars(config()), initializer_range=0.02, pretraining_tp=1, use_cache=True,
             attention_dropout=0.0, mlp_bias=False, **PRETRAINED_DEFAULTS)
    c.update(kw)
    return LlamaConfig(**c)
