#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a tokenizer file for microattn::Tokenizer (include/microattn/tokenizer.hpp;
docs/model-format.md, "Tokenizer file"): the vocabulary as one flash-resident table with the
lookup index precomputed here, so a device neither sorts nor hashes. Standard library only.

  python3 tools/tokenizer.py --sentencepiece tokenizer.model --out tokenizer.mat
  python3 tools/tokenizer.py --llama2c tokenizer.bin --out tokenizer.mat
  python3 tools/tokenizer.py --gguf model.gguf --out tokenizer.mat

--sentencepiece reads a SentencePiece model (its protobuf, parsed here: the pieces with score
and type, trainer_spec's model type, byte fallback and special ids, normalizer_spec's flags).
--llama2c reads llama2.c's tokenizer.bin (int32 max_token_length, then per piece float32
score, int32 length, bytes), which keeps no settings: it is the Llama 2 tokenizer's export, so
the Llama 2 settings apply (unk 0, BOS 1, EOS 2, pieces 3-258 the bytes, a dummy prefix,
whitespace as U+2581, byte fallback). --gguf reads tokenizer.ggml.* of a GGUF file whose
tokenizer.ggml.model is "llama" (tools/gguf.py).

Refused, by name, with exit status 2: model types other than BPE (unigram, word, char), a
normalizer with rules (a precompiled charsmap, e.g. nmt_nfkc: only the identity normalizer is
computed on the device), treat_whitespace_as_suffix, user-defined and unused pieces, duplicate
pieces, a piece over 255 bytes, and more than 2^24 pieces.
"""
import argparse
import os
import struct
import sys

MAGIC = 0x4B54414D  # "MATK"
VERSION = 1
HEADER_WORDS = 20
KIND_SPM_BPE = 1
NONE = 0xFFFFFFFF
# SentencePiece's piece types (sentencepiece_model.proto).
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
FLAG_DUMMY_PREFIX, FLAG_REMOVE_EXTRA_WS, FLAG_ESCAPE_WS, FLAG_BYTE_FALLBACK = 1, 2, 4, 8
SPACE_MARK = "\u2581".encode()  # SentencePiece's visible space


class TokenizerError(ValueError):
    """A model this tool refuses; the message is one line naming why."""


def varint(data, pos):
    v, shift = 0, 0
    while True:
        if pos >= len(data):
            raise TokenizerError("truncated protobuf varint")
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            return v, pos
        shift += 7


def fields(data):
    """[(field number, wire type, value)] of one protobuf message: ints for varints, bytes for
    length-delimited fields, raw 4/8 bytes for fixed ones."""
    out, pos = [], 0
    while pos < len(data):
        key, pos = varint(data, pos)
        num, wire = key >> 3, key & 7
        if wire == 0:
            v, pos = varint(data, pos)
        elif wire == 2:
            n, pos = varint(data, pos)
            v, pos = data[pos:pos + n], pos + n
            if len(v) != n:
                raise TokenizerError("truncated protobuf field")
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            v, pos = data[pos:pos + n], pos + n
        else:
            raise TokenizerError(f"protobuf wire type {wire}: not a SentencePiece model")
        out.append((num, wire, v))
    return out


def signed32(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def read_sentencepiece(path):
    """The tokenizer dict of a SentencePiece .model file."""
    with open(path, "rb") as f:
        data = f.read()
    pieces, trainer, norm = [], {}, {}
    for num, wire, v in fields(data):
        if num == 1 and wire == 2:
            p = {1: b"", 2: 0.0, 3: NORMAL}
            for n, w, x in fields(v):
                p[n] = struct.unpack("<f", x)[0] if n == 2 and w == 5 else x
            pieces.append((bytes(p[1]), p[2], p[3]))
        elif num == 2 and wire == 2:
            trainer = {n: x for n, _, x in fields(v)}
        elif num == 3 and wire == 2:
            norm = {n: x for n, _, x in fields(v)}
    name = os.path.basename(path)
    if not pieces:
        raise TokenizerError(f"{name}: no pieces (not a SentencePiece model)")
    model_type = trainer.get(3, 1)
    if model_type != 2:
        kind = {1: "unigram", 3: "word", 4: "char"}.get(model_type, str(model_type))
        raise TokenizerError(f"{name}: model_type {kind}: only SentencePiece BPE is computed")
    if trainer.get(24, 0):
        raise TokenizerError(f"{name}: treat_whitespace_as_suffix: not computed")
    if norm.get(2, b""):
        rule = bytes(norm.get(1, b"")).decode("utf-8", "replace") or "custom"
        raise TokenizerError(f"{name}: normalizer '{rule}' has rules (a precompiled charsmap): "
                             "only the identity normalizer is computed")
    flags = ((FLAG_DUMMY_PREFIX if norm.get(3, 1) else 0) |
             (FLAG_REMOVE_EXTRA_WS if norm.get(4, 1) else 0) |
             (FLAG_ESCAPE_WS if norm.get(5, 1) else 0) |
             (FLAG_BYTE_FALLBACK if trainer.get(35, 0) else 0))
    special = [signed32(trainer.get(k, d)) for k, d in ((40, 0), (41, 1), (42, 2))]
    return dict(name=name, pieces=pieces, flags=flags, unk=special[0], bos=special[1],
                eos=special[2])


def read_llama2c(path):
    """The tokenizer dict of llama2.c's tokenizer.bin (the Llama 2 settings)."""
    with open(path, "rb") as f:
        data = f.read()
    name = os.path.basename(path)
    if len(data) < 4:
        raise TokenizerError(f"{name}: {len(data)} bytes: not a llama2.c tokenizer.bin")
    pos, raw = 4, []
    while pos < len(data):
        if pos + 8 > len(data):
            raise TokenizerError(f"{name}: truncated at byte {pos}")
        score, n = struct.unpack_from("<fi", data, pos)
        if n < 0 or pos + 8 + n > len(data):
            raise TokenizerError(f"{name}: piece {len(raw)} of {n} bytes runs past the file")
        raw.append((data[pos + 8:pos + 8 + n], score))
        pos += 8 + n
    if len(raw) < 259:
        raise TokenizerError(f"{name}: {len(raw)} pieces: llama2.c's layout needs <unk>, <s>, "
                             "</s> and the 256 byte pieces")
    pieces = []
    for i, (text, score) in enumerate(raw):
        if i == 0:
            t = UNKNOWN
        elif i < 3:
            t = CONTROL
        elif i < 259:
            if text != f"<0x{i - 3:02X}>".encode():
                raise TokenizerError(f"{name}: piece {i} is {text!r}, not <0x{i - 3:02X}>")
            t = BYTE
        else:
            t = NORMAL
        # llama2.c's export wrote U+2581 as a space and "<s>" as "\n<s>\n"; the table keeps
        # SentencePiece's form.
        if t == NORMAL:
            text = text.replace(b" ", SPACE_MARK)
        elif t == CONTROL:
            text = text.strip()
        pieces.append((text, score, t))
    return dict(name=name, pieces=pieces, unk=0, bos=1, eos=2,
                flags=FLAG_DUMMY_PREFIX | FLAG_ESCAPE_WS | FLAG_BYTE_FALLBACK)


def read_gguf(path):
    """The tokenizer dict of a GGUF file's tokenizer.ggml.* metadata (tokenizer.ggml.model
    "llama": SentencePiece BPE; llama.cpp's settings: spaces as U+2581, extra spaces kept, a
    dummy prefix unless tokenizer.ggml.add_space_prefix is false, byte fallback when byte pieces
    exist)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gguf
    name = os.path.basename(path)
    try:
        meta = gguf.read_gguf(path, tensors=False)[0]
    except gguf.GgufError as e:
        raise TokenizerError(str(e)) from None
    model = meta.get("tokenizer.ggml.model")
    if model != "llama":
        raise TokenizerError(f"{name}: tokenizer.ggml.model {model!r}: only 'llama' "
                             "(SentencePiece BPE) is computed")
    tokens = meta.get("tokenizer.ggml.tokens")
    n = len(tokens) if isinstance(tokens, list) else 0
    scores = meta.get("tokenizer.ggml.scores", [0.0] * n)
    types = meta.get("tokenizer.ggml.token_type", [NORMAL] * n)
    if not n or len(scores) != n or len(types) != n:
        raise TokenizerError(f"{name}: tokenizer.ggml.tokens, scores and token_type differ in "
                             "length or are missing")
    pieces = [(t.encode(), float(sc), int(ty)) for t, sc, ty in zip(tokens, scores, types)]
    flags = FLAG_ESCAPE_WS | (FLAG_DUMMY_PREFIX if meta.get("tokenizer.ggml.add_space_prefix",
                                                            True) else 0)
    if any(p[2] == BYTE for p in pieces):
        flags |= FLAG_BYTE_FALLBACK
    special = [meta.get(f"tokenizer.ggml.{k}_token_id", -1) for k in ("unknown", "bos", "eos")]
    return dict(name=name, pieces=pieces, flags=flags, unk=special[0], bos=special[1],
                eos=special[2])


def check(tok):
    name, pieces = tok["name"], tok["pieces"]
    if len(pieces) >= 1 << 24:
        raise TokenizerError(f"{name}: {len(pieces)} pieces: at most 2^24")
    seen = {}
    for i, (text, _, t) in enumerate(pieces):
        if t in (USER_DEFINED, UNUSED):
            kind = "user-defined" if t == USER_DEFINED else "unused"
            raise TokenizerError(f"{name}: piece {i} {text!r} is {kind}: not computed")
        if t not in (NORMAL, UNKNOWN, CONTROL, BYTE):
            raise TokenizerError(f"{name}: piece {i} has type {t}: not a SentencePiece type")
        if len(text) > 255 or not text:
            raise TokenizerError(f"{name}: piece {i} is {len(text)} bytes: 1 .. 255")
        if t == NORMAL and text in seen:
            raise TokenizerError(f"{name}: pieces {seen[text]} and {i} are both {text!r}")
        seen[text] = i
    for key in ("unk", "bos", "eos"):
        if not -1 <= tok[key] < len(pieces):
            raise TokenizerError(f"{name}: {key}_id {tok[key]} outside the vocabulary")
    if tok["unk"] < 0 or pieces[tok["unk"]][2] != UNKNOWN:
        raise TokenizerError(f"{name}: unk_id {tok['unk']} is not an unknown piece")


def blob(tok):
    """The tokenizer file's bytes (docs/model-format.md, "Tokenizer file")."""
    check(tok)
    pieces = tok["pieces"]
    n = len(pieces)
    index = sorted((i for i, p in enumerate(pieces) if p[2] == NORMAL), key=lambda i: pieces[i][0])
    byte_ids = [NONE] * 256
    for i, (text, _, t) in enumerate(pieces):
        if t == BYTE:
            byte_ids[int(text[3:5], 16)] = i
    pool = b"".join(p[0] for p in pieces)
    offsets, at = [], 0
    for p in pieces:
        offsets.append(at)
        at += len(p[0])
    offsets.append(at)

    body = bytearray(4 * HEADER_WORDS)
    def put(raw):
        body.extend(b"\0" * (-len(body) % 16))
        start = len(body)
        body.extend(raw)
        return start
    offsets_at = put(struct.pack(f"<{n + 1}I", *offsets))
    scores_at = put(struct.pack(f"<{n}f", *(p[1] for p in pieces)))
    types_at = put(bytes(p[2] for p in pieces))
    index_at = put(struct.pack(f"<{len(index)}I", *index))
    bytes_at = put(struct.pack("<256I", *byte_ids))
    pool_at = put(pool)
    body.extend(b"\0" * (-len(body) % 16))
    u = lambda v: v & 0xFFFFFFFF  # noqa: E731  (-1: none)
    body[:4 * HEADER_WORDS] = struct.pack(
        f"<{HEADER_WORDS}I", MAGIC, VERSION, len(body), KIND_SPM_BPE, n, tok["flags"],
        u(tok["unk"]), u(tok["bos"]), u(tok["eos"]), max(len(p[0]) for p in pieces),
        offsets_at, scores_at, types_at, index_at, len(index), bytes_at, pool_at, len(pool), 0, 0)
    return bytes(body)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--sentencepiece", metavar="FILE", help="a SentencePiece .model (BPE)")
    src.add_argument("--llama2c", metavar="FILE", help="llama2.c's tokenizer.bin")
    src.add_argument("--gguf", metavar="FILE", help="a GGUF file's tokenizer.ggml.* (llama)")
    ap.add_argument("--out", required=True, help="the tokenizer file to write")
    a = ap.parse_args(argv)
    try:
        if a.gguf:
            tok = read_gguf(a.gguf)
        else:
            tok = read_sentencepiece(a.sentencepiece) if a.sentencepiece else \
                read_llama2c(a.llama2c)
        data = blob(tok)
    except OSError as e:
        print(f"tokenizer.py: error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except TokenizerError as e:
        print(f"tokenizer.py: error: {e}", file=sys.stderr)
        return 2
    with open(a.out, "wb") as f:
        f.write(data)
    print(f"tokenizer.py: {a.out}: {len(tok['pieces'])} pieces, {len(data)} bytes",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
