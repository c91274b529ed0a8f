#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads a Hugging Face model directory without transformers or torch (NumPy only): config.json
and model.safetensors, or model.safetensors.index.json and its shards. Used by
tools/export_pytorch.py --kind decoder --hf DIR.

safetensors (the format's document, huggingface/safetensors): an 8-byte little-endian uint64 N,
N bytes of a UTF-8 JSON object {name: {"dtype", "shape", "data_offsets": [begin, end]}, optional
"__metadata__": {str: str}} (space-padded), then the byte buffer; offsets are relative to the
buffer, the tensors row-major little-endian, covering the buffer without holes or overlaps.
Read here: F32, F16 and BF16 (widened to float32 exactly); any other dtype is refused by name,
as are a header that breaks those rules and a shard index that names a missing file.
"""
import json
import os
import struct

DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2)}
# Also in the format, refused here: F64, the integers, booleans and the float8 types.
KNOWN = {"F64", "I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8", "BOOL", "F8_E4M3",
         "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64"}
MAX_HEADER = 100 * 1024 * 1024  # the format's own limit on N


class FormatError(ValueError):
    """A file this reader refuses; the message is one line naming why."""


def read_safetensors(path, want=None):
    """{name: float32 array} of a safetensors file (only the names in want, if given) and the
    dtype of each: ({name: array}, {name: dtype})."""
    import numpy as np
    name = os.path.basename(path)
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise FormatError(f"{name}: {len(data)} bytes, shorter than safetensors' 8-byte length")
    n = struct.unpack_from("<Q", data)[0]
    if n > MAX_HEADER or 8 + n > len(data):
        raise FormatError(f"{name}: header length {n} runs past the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise FormatError(f"{name}: the header is not UTF-8 JSON ({e})") from None
    if not isinstance(header, dict):
        raise FormatError(f"{name}: the header is not a JSON object")
    header.pop("__metadata__", None)
    buf = memoryview(data)[8 + n:]
    spans, out, dtypes = [], {}, {}
    for key, h in header.items():
        if not isinstance(h, dict) or set(h) != {"dtype", "shape", "data_offsets"}:
            raise FormatError(f"{name}: {key}: an entry needs dtype, shape and data_offsets")
        dt, shape, (a, b) = h["dtype"], h["shape"], h["data_offsets"]
        if dt not in DTYPES:
            kind = "a safetensors dtype" if dt in KNOWN else "not a safetensors dtype"
            raise FormatError(f"{name}: {key} has dtype {dt} ({kind}); read are "
                              f"{', '.join(DTYPES)}")
        count = 1
        for d in shape:
            if not isinstance(d, int) or d < 0:
                raise FormatError(f"{name}: {key} has shape {shape}")
            count *= d
        if not 0 <= a <= b <= len(buf) or b - a != count * DTYPES[dt][1]:
            raise FormatError(f"{name}: {key}: data_offsets [{a}, {b}] do not hold {dt} "
                              f"{shape} inside the {len(buf)}-byte buffer")
        spans.append((a, b, key))
        dtypes[key] = dt
        if want is None or key in want:
            raw = np.frombuffer(buf[a:b], DTYPES[dt][0]).reshape(shape)
            out[key] = (raw.astype(np.uint32) << 16).view(np.float32) if dt == "BF16" else \
                raw.astype(np.float32)
    at = 0
    for a, b, key in sorted(spans):
        if a != at:
            raise FormatError(f"{name}: {key} starts at {a}, the previous tensor ends at {at} "
                              "(the tensors must cover the buffer without holes or overlaps)")
        at = b
    if at != len(buf):
        raise FormatError(f"{name}: the tensors end at {at} of the {len(buf)}-byte buffer")
    return out, dtypes


def read_dir(folder):
    """(config dict, {tensor name: float32 array}, {name: dtype}) of a Hugging Face directory."""
    def load_json(p):
        try:
            with open(p, encoding="utf-8") as f:
                return json.load(f)
        except OSError as e:
            raise FormatError(f"{p}: {e.strerror}") from None
        except ValueError as e:
            raise FormatError(f"{p}: not JSON ({e})") from None

    cfg = load_json(os.path.join(folder, "config.json"))
    if not isinstance(cfg, dict):
        raise FormatError(f"{folder}/config.json: not a JSON object")
    single = os.path.join(folder, "model.safetensors")
    index = single + ".index.json"
    if os.path.exists(single):
        tensors, dtypes = read_safetensors(single)
        return cfg, tensors, dtypes
    if not os.path.exists(index):
        raise FormatError(f"{folder}: neither model.safetensors nor model.safetensors.index.json "
                          "(pytorch_model.bin and other formats are not read)")
    wmap = load_json(index).get("weight_map")
    if not isinstance(wmap, dict):
        raise FormatError(f"{index}: no weight_map")
    tensors, dtypes = {}, {}
    for shard in sorted(set(wmap.values())):
        path = os.path.join(folder, shard)
        if os.path.basename(shard) != shard or not os.path.exists(path):
            raise FormatError(f"{index}: shard {shard!r} not found in {folder}")
        names = {k for k, v in wmap.items() if v == shard}
        t, d = read_safetensors(path, names)
        missing, unmapped = sorted(names - set(t)), sorted(set(d) - names)
        if missing:
            raise FormatError(f"{index}: {missing[0]} is not in {shard}")
        if unmapped:
            raise FormatError(f"{shard}: {unmapped[0]} is not in the index's weight_map")
        tensors.update(t)
        dtypes.update({k: d[k] for k in names})
    return cfg, tensors, dtypes
