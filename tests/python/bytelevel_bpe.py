#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Byte-level BPE as GPT-2 defines it, written for the tokenizer tests (tokenizer_reference.py):
a trainer, a tokenizer.json writer and the encoder the device is checked against.

The encoder is GPT-2's: the text split by GPT-2's regex (Python's `regex` module, the pattern
verbatim), each piece's UTF-8 bytes merged by rank (the lowest-ranked adjacent pair, every
occurrence left to right, until no pair is a merge), the merged byte strings looked up in the
vocabulary. The Hugging Face options the device also computes: Digits(individual_digits) before
the split (every \\p{N} character a piece of its own, the regex run on the stretches between)
and ByteLevel's add_prefix_space. Invalid UTF-8 is kept byte for byte (surrogateescape: each
such byte one character outside \\p{L}, \\p{N} and \\s); special tokens are not looked for in
the text.
"""
import collections
import json

import regex

GPT2_SPLIT = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
NUMBER = regex.compile(r"\p{N}")


def byte_chars():
    """GPT-2's bytes_to_unicode: byte -> the printable character tokenizer.json writes for it."""
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return out


def pieces(data, digits=False, prefix_space=False):
    """The pre-tokenizer's pieces of data (bytes), as bytes."""
    text = data.decode("utf-8", "surrogateescape")
    if prefix_space and text and not text.startswith(" "):
        text = " " + text
    stretches = [text]
    if digits:
        stretches, at = [], 0
        for m in NUMBER.finditer(text):
            stretches += [text[at:m.start()], m.group()]
            at = m.end()
        stretches.append(text[at:])
    return [p.encode("utf-8", "surrogateescape") for s in stretches if s
            for p in GPT2_SPLIT.findall(s)]


def merged(word, pair):
    """word (a list of byte strings) with every occurrence of pair joined, left to right."""
    out, i = [], 0
    while i < len(word):
        if i + 1 < len(word) and (word[i], word[i + 1]) == pair:
            out.append(word[i] + word[i + 1])
            i += 2
        else:
            out.append(word[i])
            i += 1
    return out


def bpe(piece, ranks):
    """GPT-2's bpe(): the piece's bytes merged by rank; a list of byte strings."""
    word = [bytes([b]) for b in piece]
    while len(word) > 1:
        pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        word = merged(word, best)
    return word


class Model:
    """A trained byte-level BPE: vocab (bytes -> id), ranks ((bytes, bytes) -> rank)."""

    def __init__(self, vocab, merges, special, digits=False, prefix_space=False):
        self.vocab, self.merges, self.special = vocab, merges, special
        self.ranks = {m: r for r, m in enumerate(merges)}
        self.digits, self.prefix_space = digits, prefix_space
        self.cache = {}  # piece -> ids (GPT-2's encoder keeps one too)

    def encode(self, data):
        out = []
        for p in pieces(data, self.digits, self.prefix_space):
            if p not in self.cache:
                self.cache[p] = [self.vocab[t] for t in bpe(p, self.ranks)]
            out += self.cache[p]
        return out

    def tokenizer_json(self):
        """The model as Hugging Face's tokenizer.json (the form tokenizers 0.13+ writes)."""
        ch = byte_chars()
        text = lambda b: "".join(ch[x] for x in b)  # noqa: E731
        level = {"type": "ByteLevel", "add_prefix_space": self.prefix_space,
                 "trim_offsets": True, "use_regex": True}
        pre = level if not self.digits else {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, level]}
        added = [{"id": i, "content": s, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": True}
                 for s, i in self.special.items()]
        vocab = {text(t): i for t, i in self.vocab.items()}
        vocab.update((s, i) for s, i in self.special.items())
        return json.dumps({
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": None, "pre_tokenizer": pre,
            "post_processor": {"type": "ByteLevel", "add_prefix_space": True,
                               "trim_offsets": False, "use_regex": True},
            "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                        "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None, "end_of_word_suffix": None,
                      "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                      "merges": [f"{text(a)} {text(b)}" for a, b in self.merges]}},
            ensure_ascii=False, indent=1)


def train(lines, n_merges, special=("<|endoftext|>",)):
    """A byte-level BPE trained on lines (bytes) by the GPT-2 split: the most frequent adjacent
    pair (ties: the smallest pair) merged n_merges times. Ids: the special tokens, the 256
    bytes, then the merges' results in rank order."""
    words = collections.Counter(p for line in lines for p in pieces(line))
    words = [[list(bytes([b]) for b in w), c] for w, c in words.items()]
    counts, where = collections.Counter(), collections.defaultdict(set)
    for k, (w, c) in enumerate(words):
        for pair in zip(w, w[1:]):
            counts[pair] += c
            where[pair].add(k)
    merges = []
    for _ in range(n_merges):
        if not counts:
            break
        best = max(counts, key=lambda p: (counts[p], p))
        merges.append(best)
        for k in list(where.pop(best, ())):
            w, c = words[k]
            for pair in zip(w, w[1:]):
                counts[pair] -= c
                if counts[pair] <= 0:
                    del counts[pair]
            out = merged(w, best)
            words[k][0] = out
            for pair in zip(out, out[1:]):
                counts[pair] += c
                where[pair].add(k)
    vocab = {bytes([b]): len(special) + b for b in range(256)}
    for a, b in merges:
        vocab.setdefault(a + b, len(special) + len(vocab))
    return vocab, merges, {s: i for i, s in enumerate(special)}
