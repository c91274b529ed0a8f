# SPDX-License-Identifier: Apache-2.0
"""A GGUF version-3 writer for the loaders' tests, written from ggml's docs/gguf.md (not from
tools/gguf.py): header, typed metadata, tensor infos (ne[0] the contiguous dimension), padding
to general.alignment, the data at aligned offsets; and a Q8_0 quantiser (blocks of 32 along a
row: float16 d = max |x| / 127, int8 q = round(x / d)).

  write_gguf(path, metadata, tensors, alignment=32)
    metadata: [(key, gguf type, value)], arrays as (ARRAY, (element type, [values]))
    tensors: [(name, ggml type, ne, raw bytes)]
"""
import struct

import numpy as np

UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64 = 4, 5, 6, 7, 8, 9, 10
F32, F16, Q8_0, BF16, Q4_0 = 0, 1, 8, 30, 2
FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f", BOOL: "<?",
       UINT64: "<Q", 11: "<q", 12: "<d"}


def string(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STRING:
        return string(v)
    if t == ARRAY:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, x) for x in items)
    return struct.pack(FMT[t], v)


def write_gguf(path, metadata, tensors, alignment=32):
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, t, v in metadata:
        out += string(key) + struct.pack("<I", t) + value(t, v)
    at = 0
    for name, t, ne, raw in tensors:
        out += string(name) + struct.pack(f"<I{len(ne)}QIQ", len(ne), *ne, t, at)
        at = -(-(at + len(raw)) // alignment) * alignment
    out += b"\0" * (-len(out) % alignment)
    for _, _, _, raw in tensors:
        out += raw + b"\0" * (-len(raw) % alignment)
    with open(path, "wb") as f:
        f.write(out)


def q8_0(a):
    """(raw Q8_0 bytes of float32 rows a [rows][cols], cols % 32 == 0; the dequantised values)."""
    x = np.ascontiguousarray(a, np.float32).reshape(-1, 32)
    d = (np.abs(x).max(1) / 127).astype(np.float16)
    df = d.astype(np.float32)
    q = np.where(df[:, None] > 0, np.round(x / np.where(df > 0, df, 1)[:, None]), 0)
    q = np.clip(q, -128, 127).astype(np.int8)
    blocks = np.zeros(len(x), np.dtype([("d", "<f2"), ("q", "i1", 32)]))
    blocks["d"], blocks["q"] = d, q
    return blocks.tobytes(), (df[:, None] * q.astype(np.float32)).reshape(a.shape)
