#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a tokenizer file for microattn::Tokenizer (include/microattn/tokenizer.hpp;
docs/model-format.md, "Tokenizer file"): the vocabulary as one flash-resident table with the
lookup index precomputed here, so a device neither sorts nor hashes. Standard library only.

  python3 tools/tokenizer.py --sentencepiece tokenizer.model --out tokenizer.mat
  python3 tools/tokenizer.py --llama2c tokenizer.bin --out tokenizer.mat
  python3 tools/tokenizer.py --gguf model.gguf --out tokenizer.mat
  python3 tools/tokenizer.py --hf-tokenizer tokenizer.json --out tokenizer.mat

--sentencepiece reads a SentencePiece model (its protobuf, parsed here: the pieces with score
and type, trainer_spec's model type, byte fallback and special ids, normalizer_spec's flags).
--llama2c reads llama2.c's tokenizer.bin (int32 max_token_length, then per piece float32
score, int32 length, bytes), which keeps no settings: it is the Llama 2 tokenizer's export, so
the Llama 2 settings apply (unk 0, BOS 1, EOS 2, pieces 3-258 the bytes, a dummy prefix,
whitespace as U+2581, byte fallback). --gguf reads tokenizer.ggml.* of a GGUF file whose
tokenizer.ggml.model is "llama" (tools/gguf.py), or "gpt2" (byte-level BPE) with
tokenizer.ggml.pre "gpt-2", "smollm" or "starcoder". --hf-tokenizer reads a Hugging Face
tokenizer.json whose model is byte-level BPE by merge ranks (GPT-2, SmolLM/SmolLM2, StarCoder):
the pre-tokenizer ByteLevel with GPT-2's split, alone or after Digits(individual_digits); BOS
and EOS from a tokenizer_config.json beside it (bos_token, eos_token) when there is one.

Refused, by name, with exit status 2: model types other than BPE (unigram, word, char), a
normalizer with rules (a precompiled charsmap, e.g. nmt_nfkc: only the identity normalizer is
computed on the device), treat_whitespace_as_suffix, user-defined and unused pieces, duplicate
pieces, a piece over 255 bytes, and more than 2^24 pieces; from tokenizer.json any model but
BPE, a normalizer (Qwen2's NFC), a pre-tokenizer other than the two above (Llama 3's and Qwen2's
Split regexes, Metaspace), ignore_merges, dropout, subword prefixes or suffixes, byte fallback,
a decoder other than ByteLevel, a post-processor other than ByteLevel or a BOS template, and an
added token that is not special (Hugging Face matches those in the text).
"""
import argparse
import json
import os
import struct
import sys
import unicodedata

MAGIC = 0x4B54414D  # "MATK"
VERSION = 1
HEADER_WORDS = 20
KIND_SPM_BPE, KIND_BYTE_BPE = 1, 2
PRE_GPT2 = 1  # the byte-level block's pre-tokenizer: GPT-2's split
OPT_DIGITS, OPT_PREFIX_SPACE = 1, 2  # Digits(individual_digits) first; ByteLevel's prefix space
CLASS_LETTER, CLASS_NUMBER, CLASS_SPACE = 1, 2, 3  # \p{L}, \p{N}, \s (White_Space)
WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680),
               (0x2000, 0x200A), (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F),
               (0x3000, 0x3000)]  # Unicode's White_Space property (PropList.txt)
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
    if model == "gpt2":
        return read_gguf_gpt2(name, meta)
    if model != "llama":
        raise TokenizerError(f"{name}: tokenizer.ggml.model {model!r}: only 'llama' "
                             "(SentencePiece BPE) and 'gpt2' (byte-level BPE) are computed")
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


# tokenizer.ggml.pre values whose split microattn computes: llama.cpp's names for GPT-2's
# pattern, alone or after every \p{N} character split off.
GGUF_PRE = {"gpt-2": 0, "smollm": OPT_DIGITS, "starcoder": OPT_DIGITS}


def read_gguf_gpt2(name, meta):
    """The tokenizer dict of a GGUF's tokenizer.ggml.* with model "gpt2" (byte-level BPE):
    tokens in GPT-2's byte-to-character map, token_type 1 normal or 3 control, the merges in
    rank order, tokenizer.ggml.pre one of GGUF_PRE's splits."""
    pre = meta.get("tokenizer.ggml.pre", "default")
    if pre not in GGUF_PRE:
        raise TokenizerError(f"{name}: tokenizer.ggml.pre {pre!r}: only "
                             f"{', '.join(repr(p) for p in GGUF_PRE)} (GPT-2's split) are "
                             "computed")
    tokens = meta.get("tokenizer.ggml.tokens")
    n = len(tokens) if isinstance(tokens, list) else 0
    types = meta.get("tokenizer.ggml.token_type", [NORMAL] * n)
    if not n or len(types) != n:
        raise TokenizerError(f"{name}: tokenizer.ggml.tokens and token_type differ in length or "
                             "are missing")
    for i, t in enumerate(types):
        if t not in (NORMAL, CONTROL):
            kind = {USER_DEFINED: "user-defined", UNUSED: "unused", BYTE: "byte"}.get(t, str(t))
            raise TokenizerError(f"{name}: token {i} {tokens[i]!r} is {kind}: not computed")
    options = GGUF_PRE[pre] | (OPT_PREFIX_SPACE if meta.get("tokenizer.ggml.add_space_prefix",
                                                            False) else 0)
    merges = [split_merge(m) for m in meta.get("tokenizer.ggml.merges", [])]
    special = [meta.get(f"tokenizer.ggml.{k}_token_id", -1) for k in ("bos", "eos")]
    return byte_level(name, {i: (t, ty) for i, (t, ty) in enumerate(zip(tokens, types))},
                      merges, options, special[0], special[1])


def byte_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters (the pieces' text in tokenizer.json):
    the printable Latin-1 bytes as themselves, the others to U+0100 onwards in byte order."""
    keep = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(0x100 + extra)
            extra += 1
    return out


def unicode_classes():
    """[(first, last, class)] of the code points the GPT-2 split tells apart (Python's unicodedata;
    every other code point is 'other'), merged into runs."""
    space = set()
    for a, b in WHITE_SPACE:
        space.update(range(a, b + 1))
    runs = []
    for cp in range(0x110000):
        if cp in space:
            c = CLASS_SPACE
        else:
            cat = unicodedata.category(chr(cp))[0]
            c = CLASS_LETTER if cat == "L" else CLASS_NUMBER if cat == "N" else 0
        if c and runs and runs[-1][2] == c and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        elif c:
            runs.append([cp, cp, c])
    return [tuple(r) for r in runs]


def token_text(t):
    """An added token's or template's token name: a string or {"content": ...}."""
    return t.get("content") if isinstance(t, dict) else t


def hf_pre_tokenizer(name, pre):
    """The byte-level options of a tokenizer.json pre_tokenizer, or a refusal naming it."""
    steps = pre.get("pretokenizers", []) if pre and pre.get("type") == "Sequence" else [pre]
    options = 0
    if len(steps) == 2 and steps[0] and steps[0].get("type") == "Digits":
        if not steps[0].get("individual_digits"):
            raise TokenizerError(f"{name}: pre_tokenizer Digits without individual_digits: not "
                                 "computed")
        options |= OPT_DIGITS
        steps = steps[1:]
    if len(steps) != 1 or not steps[0] or steps[0].get("type") != "ByteLevel":
        kinds = "+".join(str(s.get("type")) if s else "null" for s in steps)
        hint = (" (SentencePiece-style: export its tokenizer.model with --sentencepiece)"
                if "Metaspace" in kinds else " (a family's own regex)" if "Split" in kinds else "")
        raise TokenizerError(f"{name}: pre_tokenizer {kinds}{hint}: only ByteLevel with GPT-2's "
                             "split, alone or after Digits(individual_digits), is computed")
    if not steps[0].get("use_regex", True):
        raise TokenizerError(f"{name}: pre_tokenizer ByteLevel with use_regex false: not computed")
    if steps[0].get("add_prefix_space", False):
        options |= OPT_PREFIX_SPACE
    return options


def hf_check_model(name, j):
    """Refuses, by name, the tokenizer.json settings the device does not compute."""
    model = j.get("model") or {}
    if model.get("type") != "BPE":
        raise TokenizerError(f"{name}: model type {model.get('type')}: only BPE is computed")
    for key in ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback",
                "ignore_merges"):
        if model.get(key):
            raise TokenizerError(f"{name}: model.{key} {model.get(key)!r}: not computed")
    if j.get("normalizer") is not None:
        raise TokenizerError(f"{name}: normalizer {j['normalizer'].get('type')}: only byte-level "
                             "BPE without a normalizer is computed")
    dec = j.get("decoder") or {}
    if dec.get("type") != "ByteLevel":
        raise TokenizerError(f"{name}: decoder {dec.get('type')}: only ByteLevel is computed")
    post = j.get("post_processor")
    if post is not None and post.get("type") not in ("ByteLevel", "TemplateProcessing"):
        raise TokenizerError(f"{name}: post_processor {post.get('type')}: not computed")


def hf_bos(name, j, ids):
    """The BOS a TemplateProcessing post-processor puts before a single text, or -1; refuses
    a template that does more."""
    post = j.get("post_processor") or {}
    if post.get("type") != "TemplateProcessing":
        return -1
    single = post.get("single", [])
    shape = [next(iter(s)) for s in single]
    if shape not in (["Sequence"], ["SpecialToken", "Sequence"]):
        raise TokenizerError(f"{name}: post_processor template {shape}: only an optional BOS "
                             "before the text is computed")
    return ids[single[0]["SpecialToken"]["id"]] if len(shape) == 2 else -1


def byte_level(name, text, merges, options, bos, eos):
    """The tokenizer dict of a byte-level BPE: text {id: (string, NORMAL or CONTROL)} (a normal
    piece's string in GPT-2's byte-to-character map, a control piece's as itself), merges
    [(left string, right string)] in rank order."""
    to_byte = {c: b for b, c in byte_to_unicode().items()}
    n = len(text)
    if sorted(text) != list(range(n)):
        raise TokenizerError(f"{name}: the ids are not 0 .. {n - 1}")
    pieces = []
    for i in range(n):
        s, t = text[i]
        if t == NORMAL and any(c not in to_byte for c in s):
            raise TokenizerError(f"{name}: piece {i} {s!r} is not byte-level text")
        pieces.append((bytes(to_byte[c] for c in s) if t == NORMAL else s.encode(), 0.0, t))
    ids = {p: i for i, (p, _, t) in enumerate(pieces) if t == NORMAL}
    byte_ids = [ids.get(bytes([b]), -1) for b in range(256)]
    if -1 in byte_ids:
        raise TokenizerError(f"{name}: no piece for byte {byte_ids.index(-1):#04x}: a byte-level "
                             "vocabulary holds all 256")
    table = []
    for rank, (a, b) in enumerate(merges):
        try:
            pa, pb = (bytes(to_byte[c] for c in x) for x in (a, b))
        except KeyError:
            raise TokenizerError(f"{name}: merge {rank} {a + ' ' + b!r} is not byte-level "
                                 "text") from None
        if pa not in ids or pb not in ids or pa + pb not in ids:
            raise TokenizerError(f"{name}: merge {rank} {a + ' ' + b!r}: a side or the result "
                                 "is not a piece")
        table.append((ids[pa], ids[pb], rank))
    if len({(a, b) for a, b, _ in table}) != len(table):
        raise TokenizerError(f"{name}: a merge is listed twice")
    return dict(name=name, pieces=pieces, flags=0, unk=-1, bos=bos, eos=eos, kind=KIND_BYTE_BPE,
                options=options, merges=table, byte_ids=byte_ids)


def split_merge(m):
    """A merge of tokenizer.json or tokenizer.ggml.merges: "a b" or [a, b]."""
    return tuple(m.split(" ")) if isinstance(m, str) else tuple(m)


def read_hf_tokenizer(path):
    """The tokenizer dict of a Hugging Face tokenizer.json (byte-level BPE by merge ranks)."""
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    except ValueError as e:
        raise TokenizerError(f"{name}: not JSON ({e})") from None
    hf_check_model(name, j)
    options = hf_pre_tokenizer(name, j.get("pre_tokenizer"))
    model = j["model"]
    text = {i: (s, NORMAL) for s, i in model.get("vocab", {}).items()}
    for t in j.get("added_tokens", []):
        if not t.get("special"):
            raise TokenizerError(f"{name}: added token {t.get('id')} {t.get('content')!r} is not "
                                 "special (matched in the text by Hugging Face): not computed")
        text[t["id"]] = (t["content"], CONTROL)
    names = {s: i for i, (s, _) in text.items()}
    bos, eos = hf_bos(name, j, names), -1
    config = os.path.join(os.path.dirname(os.path.abspath(path)), "tokenizer_config.json")
    if os.path.exists(config):
        with open(config, encoding="utf-8") as f:
            c = json.load(f)
        bos = names.get(token_text(c.get("bos_token")), bos)
        eos = names.get(token_text(c.get("eos_token")), eos)
    merges = [split_merge(m) for m in model.get("merges", [])]
    return byte_level(name, text, merges, options, bos, eos)


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
    if tok.get("kind", KIND_SPM_BPE) == KIND_SPM_BPE and (tok["unk"] < 0 or
                                                          pieces[tok["unk"]][2] != UNKNOWN):
        raise TokenizerError(f"{name}: unk_id {tok['unk']} is not an unknown piece")


def blob(tok):
    """The tokenizer file's bytes (docs/model-format.md, "Tokenizer file")."""
    check(tok)
    pieces = tok["pieces"]
    n = len(pieces)
    index = sorted((i for i, p in enumerate(pieces) if p[2] == NORMAL), key=lambda i: pieces[i][0])
    byte_ids = tok.get("byte_ids", [NONE] * 256)
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
    block_at, block_len = 0, 0
    if tok.get("kind") == KIND_BYTE_BPE:
        merges = sorted(tok["merges"])
        ranges = unicode_classes()
        merges_at = put(b"".join(struct.pack("<3I", *m) for m in merges))
        ranges_at = put(b"".join(struct.pack("<2I", a, b | c << 24) for a, b, c in ranges))
        block_at = put(struct.pack("<8I", PRE_GPT2, tok["options"], len(merges), merges_at,
                                   len(ranges), ranges_at, 0, 0))
        block_len = 32
    body.extend(b"\0" * (-len(body) % 16))
    u = lambda v: v & 0xFFFFFFFF  # noqa: E731  (-1: none)
    body[:4 * HEADER_WORDS] = struct.pack(
        f"<{HEADER_WORDS}I", MAGIC, VERSION, len(body), tok.get("kind", KIND_SPM_BPE), n,
        tok["flags"],
        u(tok["unk"]), u(tok["bos"]), u(tok["eos"]), max(len(p[0]) for p in pieces),
        offsets_at, scores_at, types_at, index_at, len(index), bytes_at, pool_at, len(pool),
        block_at, block_len)
    return bytes(body)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--sentencepiece", metavar="FILE", help="a SentencePiece .model (BPE)")
    src.add_argument("--llama2c", metavar="FILE", help="llama2.c's tokenizer.bin")
    src.add_argument("--gguf", metavar="FILE", help="a GGUF file's tokenizer.ggml.* (llama)")
    src.add_argument("--hf-tokenizer", metavar="FILE",
                     help="a Hugging Face tokenizer.json (byte-level BPE)")
    ap.add_argument("--out", required=True, help="the tokenizer file to write")
    a = ap.parse_args(argv)
    try:
        if a.gguf:
            tok = read_gguf(a.gguf)
        elif a.hf_tokenizer:
            tok = read_hf_tokenizer(a.hf_tokenizer)
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
