#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads a llama2.c checkpoint (Karpathy's llama2.c, run.c's "version 0" layout, as
stories260K/15M/42M/110M ship) into the decoder the model file holds: numpy only, no torch.

The file: 7 little-endian int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
seq_len; vocab_size negative: the classifier is a matrix of its own), then float32 arrays, each
stacked over the layers: token embedding [vocab][dim], attention RMSNorm [L][dim], wq [L][dim]
[dim], wk [L][kv_dim][dim], wv, wo [L][dim][dim] (all [out][in]), FFN RMSNorm [L][dim], w1
[L][hidden][dim] (gate), w2 [L][dim][hidden] (down), w3 [L][hidden][dim] (up), the final RMSNorm
[dim], the old RoPE tables freq_cis_real and freq_cis_imag [seq_len][head_size / 2] (skipped:
microattn computes RoPE), then wcls [vocab][dim] when vocab_size is negative. run.c's fixed
settings go into the model file: RMSNorm epsilon 1e-5, RoPE base 10000 on adjacent pairs, SwiGLU.

llama2.c's later export versions (export.py --version 1 / 2: the magic "ak42", a 256-byte
header, int8 Q8_0 groups in version 2) are refused by name, as is a file whose size is not the
one its header's shapes give.
"""
import struct

HEADER_BYTES = 28
MAGIC_AK42 = 0x616B3432  # llama2.c export.py version 1 and 2 files start with "ak42"


class Llama2cError(ValueError):
    """A file this reader refuses; the message is one line naming why."""


def read_header(data, name):
    """The 7 header ints as a dict (vocab positive, tied from its sign)."""
    if len(data) < HEADER_BYTES:
        raise Llama2cError(f"{name}: {len(data)} bytes, shorter than llama2.c's 28-byte header")
    if struct.unpack_from("<I", data, 0)[0] == MAGIC_AK42:
        version = struct.unpack_from("<i", data, 4)[0] if len(data) >= 8 else -1
        raise Llama2cError(f"{name}: a llama2.c export of version {version} (magic 'ak42'); "
                           "only run.c's version-0 layout (export.py --version 0, the "
                           "published stories*.bin) is read")
    dim, hidden, layers, heads, kv_heads, vocab, seq = struct.unpack_from("<7i", data, 0)
    for key, v in (("dim", dim), ("hidden_dim", hidden), ("n_layers", layers),
                   ("n_heads", heads), ("n_kv_heads", kv_heads), ("seq_len", seq)):
        if v <= 0:
            raise Llama2cError(f"{name}: header {key} = {v}: not a llama2.c checkpoint")
    if vocab == 0 or dim % heads or heads % kv_heads or (dim // heads) % 2:
        raise Llama2cError(f"{name}: header dim {dim}, n_heads {heads}, n_kv_heads {kv_heads}, "
                           f"vocab_size {vocab}: not a llama2.c shape (dim a multiple of "
                           "n_heads, n_heads of n_kv_heads, an even head size, vocab not 0)")
    return dict(dim=dim, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads,
                vocab=abs(vocab), tied=vocab > 0, seq=seq, head_size=dim // heads)


def layout(h):
    """[(name, shape)] of the arrays after the header, in file order (the RoPE tables too)."""
    L, D, F, V = h["layers"], h["dim"], h["hidden"], h["vocab"]
    kv = h["kv_heads"] * h["head_size"]
    out = [("embed", (V, D)), ("rms_att", (L, D)), ("wq", (L, D, D)), ("wk", (L, kv, D)),
           ("wv", (L, kv, D)), ("wo", (L, D, D)), ("rms_ffn", (L, D)), ("w1", (L, F, D)),
           ("w2", (L, D, F)), ("w3", (L, F, D)), ("rms_final", (D,)),
           ("freq_cis_real", (h["seq"], h["head_size"] // 2)),
           ("freq_cis_imag", (h["seq"], h["head_size"] // 2))]
    if not h["tied"]:
        out.append(("wcls", (V, D)))
    return out


def read_arrays(data, name):
    """(header dict, {name: float32 array}) of a version-0 checkpoint; refuses a size that is
    not the header's."""
    import numpy as np
    h = read_header(data, name)
    parts = layout(h)
    need = HEADER_BYTES + 4 * sum(int(np.prod(s)) for _, s in parts)
    if len(data) != need:
        raise Llama2cError(f"{name}: {len(data)} bytes, but its header's shapes "
                           f"({'untied' if not h['tied'] else 'tied'} classifier) give {need}")
    arrays, pos = {}, HEADER_BYTES
    for key, shape in parts:
        n = int(np.prod(shape))
        arrays[key] = np.frombuffer(data, "<f4", n, pos).reshape(shape)
        pos += 4 * n
    return h, arrays


def read_checkpoint(path):
    """(config, tensors) for the model file: config in tools/export_pytorch.py's decoder keys,
    tensors [(state-dict key, float32 array, is_matrix)] in the model file's order (w1 gate,
    w3 up, w2 down)."""
    import os
    name = os.path.basename(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Llama2cError(f"{path}: {e.strerror}") from None
    h, a = read_arrays(data, name)
    cfg = dict(vocab=h["vocab"], d_model=h["dim"], n_layers=h["layers"], n_heads=h["heads"],
               n_kv_heads=h["kv_heads"], d_head=h["head_size"], d_hidden=h["hidden"],
               t_max=h["seq"], rope_base=10000.0, rope_pairing="adjacent", norm_eps=1e-5,
               tied_head=h["tied"])
    t = [("embed.weight", a["embed"], True)]
    for i in range(h["layers"]):
        p = f"layers.{i}."
        t += [(p + "attn_norm.weight", a["rms_att"][i], False),
              (p + "attn.q_proj.weight", a["wq"][i], True),
              (p + "attn.k_proj.weight", a["wk"][i], True),
              (p + "attn.v_proj.weight", a["wv"][i], True),
              (p + "attn.o_proj.weight", a["wo"][i], True),
              (p + "mlp_norm.weight", a["rms_ffn"][i], False),
              (p + "mlp.gate_proj.weight", a["w1"][i], True),
              (p + "mlp.up_proj.weight", a["w3"][i], True),
              (p + "mlp.down_proj.weight", a["w2"][i], True)]
    t.append(("norm.weight", a["rms_final"], False))
    if not h["tied"]:
        t.append(("lm_head.weight", a["wcls"], True))
    return cfg, t
