#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads GGUF files (llama.cpp's format, version 3; ggml's docs/gguf.md) with NumPy: the typed
metadata and the tensors. Used by tools/export_pytorch.py --kind decoder --gguf FILE (the
model) and tools/tokenizer.py --gguf FILE (its tokenizer.ggml.* vocabulary).

The file: "GGUF", uint32 version, uint64 tensor count, uint64 metadata count; metadata as
{string key, uint32 type, value} (strings: uint64 length + UTF-8; arrays: uint32 element type,
uint64 count, elements); tensor infos {name, uint32 n_dims, uint64 ne[n_dims] (ne[0] the
contiguous dimension), uint32 ggml type, uint64 offset}; then, at the next multiple of
general.alignment (default 32), the data, each tensor at its offset from there.
Tensors read: F32, F16, BF16 and Q8_0 (blocks of 32: a float16 scale d and 32 int8 q, value
d * q), returned as float32 arrays [ne[n-1]]...[ne[0]] (a matrix [out][in]); every other type is
refused by its ggml name, as are versions 1 and 2 and a file whose tables run past its end.
"""
import os
import struct

MAGIC = b"GGUF"
# gguf_type: the metadata value types.
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q",
           11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9
# ggml_type names (ggml.h), for what is read and what is refused by name.
GGML_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0",
              9: "Q8_1", 10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
              16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL",
              21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32",
              27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16", 34: "TQ1_0", 35: "TQ2_0",
              39: "MXFP4"}
READ = {"F32", "F16", "BF16", "Q8_0"}


class GgufError(ValueError):
    """A file this reader refuses; the message is one line naming why."""


class Reader:
    def __init__(self, data, name):
        self.data, self.pos, self.name = data, 0, name

    def take(self, fmt):
        n = struct.calcsize(fmt)
        if self.pos + n > len(self.data):
            raise GgufError(f"{self.name}: ends inside its tables (at byte {self.pos})")
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return v[0] if len(v) == 1 else v

    def string(self):
        n = self.take("<Q")
        if self.pos + n > len(self.data):
            raise GgufError(f"{self.name}: a string of {n} bytes runs past the file")
        s = self.data[self.pos:self.pos + n]
        self.pos += n
        try:
            return s.decode("utf-8")
        except UnicodeDecodeError:
            raise GgufError(f"{self.name}: a string at byte {self.pos - n} is not UTF-8") from None

    def value(self, t):
        if t in SCALARS:
            return self.take(SCALARS[t])
        if t == STRING:
            return self.string()
        if t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            if et in SCALARS and et != 7:  # numbers in one read
                fmt = SCALARS[et]
                size = struct.calcsize(fmt) * n
                if self.pos + size > len(self.data):
                    raise GgufError(f"{self.name}: an array of {n} runs past the file")
                out = list(struct.unpack_from(f"<{n}{fmt[1]}", self.data, self.pos))
                self.pos += size
                return out
            return [self.value(et) for _ in range(n)]
        raise GgufError(f"{self.name}: metadata value type {t} at byte {self.pos}: not GGUF's")


def read_gguf(path, tensors=True):
    """(metadata {key: value}, {tensor name: float32 array}, {name: ggml type name})."""
    import numpy as np
    name = os.path.basename(path)
    with open(path, "rb") as f:
        data = f.read()
    r = Reader(data, name)
    if data[:4] != MAGIC:
        raise GgufError(f"{name}: no GGUF magic")
    r.pos = 4
    version = r.take("<I")
    if version != 3:
        raise GgufError(f"{name}: GGUF version {version}: only version 3 is read")
    n_tensors, n_kv = r.take("<Q"), r.take("<Q")
    meta = {}
    for _ in range(n_kv):
        key = r.string()
        if key in meta:
            raise GgufError(f"{name}: metadata key {key} given twice")
        meta[key] = r.value(r.take("<I"))
    infos = []
    for _ in range(n_tensors):
        tname = r.string()
        dims = [r.take("<Q") for _ in range(r.take("<I"))]
        infos.append((tname, dims, r.take("<I"), r.take("<Q")))
    align = meta.get("general.alignment", 32)
    if not isinstance(align, int) or align < 1 or align & (align - 1):
        raise GgufError(f"{name}: general.alignment {align!r} is not a power of two")
    base = -(-r.pos // align) * align
    out, types = {}, {}
    for tname, dims, t, off in infos:
        tn = GGML_TYPES.get(t, f"type {t}")
        types[tname] = tn
        if tn not in READ:
            raise GgufError(f"{name}: {tname} is {tn}: read are {', '.join(sorted(READ))}")
        if off % align:
            raise GgufError(f"{name}: {tname} at offset {off}: not a multiple of {align}")
        count = 1
        for d in dims:
            count *= d
        if tn == "Q8_0" and dims[0] % 32:
            raise GgufError(f"{name}: {tname} is Q8_0 with rows of {dims[0]}: not blocks of 32")
        size = {"F32": 4 * count, "F16": 2 * count, "BF16": 2 * count,
                "Q8_0": count // 32 * 34}[tn]
        at = base + off
        if at + size > len(data):
            raise GgufError(f"{name}: {tname} ({tn}, {size} bytes at {at}) runs past the file")
        if tensors:
            out[tname] = decode(np, data[at:at + size], tn, count).reshape(dims[::-1])
    return meta, out, types


def decode(np, raw, tn, count):
    if tn == "F32":
        return np.frombuffer(raw, "<f4").copy()
    if tn == "F16":
        return np.frombuffer(raw, "<f2").astype(np.float32)
    if tn == "BF16":
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    blocks = np.frombuffer(raw, np.dtype([("d", "<f2"), ("q", "i1", 32)]))
    return (blocks["d"].astype(np.float32)[:, None] * blocks["q"].astype(np.float32)).reshape(-1)
