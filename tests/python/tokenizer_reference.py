#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The tokenizer tests' data: a corpus of lines and python3-sentencepiece's ids for each.

  /usr/bin/python3 tests/python/tokenizer_reference.py --out-dir DIR [--llama-model FILE]
      [--fortunes DIR] [--seeds DIR]

Writes into DIR, for each SentencePiece BPE model: NAME.model (the trained ones), NAME.mat
(tools/tokenizer.py's tokenizer file) and NAME.ref (little-endian: "TKR1", u32 lines, then per
line u32 text bytes, the bytes, u32 ids, int32 ids: SentencePieceProcessor.encode of the line's
bytes, no BOS). The models:
- llama2: the Llama 2 tokenizer (--llama-model; 32 000 pieces, byte fallback, dummy prefix);
- bpe512: a 512-piece BPE trained here on the corpus (identity normaliser, byte fallback,
  SentencePiece's default removal of extra spaces);
- bpe512_unk: the same without byte fallback and without the dummy prefix, extra spaces kept
  (unknown pieces);
- bytelevel, bytelevel_digits: a byte-level BPE of 768 merges trained here (bytelevel_bpe.py)
  on every 4th fortunes line, written as Hugging Face tokenizer.json files (NAME/tokenizer.json:
  GPT-2's pre-tokenizer, with a tokenizer_config.json naming BOS and EOS; SmolLM2's Digits
  before it, with ByteLevel's prefix space), the ids bytelevel_bpe.py's GPT-2 encoder's.
The corpus: every line of the fortunes files (Debian's fortunes / fortunes-min, text files of
--fortunes), the teaching notes' lines (--seeds), and generated lines: digits, whitespace runs,
non-ASCII letters, emoji (with joiners and flags), control characters and invalid UTF-8 bytes
(a seeded generator). Exits 77 without sentencepiece, regex or the fortunes files.
"""
import argparse
import io
import json
import os
import random
import struct
import subprocess
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def fortunes(folder):
    out = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if "." in name or not os.path.isfile(path):  # the .dat indexes and .u8 links
            continue
        with open(path, "rb") as f:
            out += [line for line in f.read().split(b"\n") if line != b"%"]
    return out


def seeds(folder):
    out = []
    if folder and os.path.isdir(folder):
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as f:
                out += f.read().split(b"\n")
    return out


def generated():
    rng = random.Random(49)
    out = [b"", b" ", b"  ", b"\t", b" \t \n", b"a", b" a", b"a ", b"  a  b   c  "]
    out += [str(i).encode() for i in range(0, 3000, 7)]
    out += [f"{rng.uniform(-1e6, 1e6):.{rng.randint(0, 6)}f}".encode() for _ in range(300)]
    out += [(" " * rng.randint(1, 12)).join(rng.choice(["the", "cat", "12", "x", "é"])
                                           for _ in range(rng.randint(1, 6))).encode()
            for _ in range(300)]
    letters = "éüßøñçÅÆŒ αβγδ Ωμ привет мир 日本語のテキスト 中文 한국어 עברית العربية हिन्दी ไทย"
    out += [" ".join(rng.sample(letters.split(), 3)).encode() for _ in range(300)]
    emoji = ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🇩🇪", "🏳️‍🌈", "❤️", "🤖", "🦀", "∑", "€", "\u2581", "\ufeff"]
    out += ["".join(rng.choice(emoji) for _ in range(rng.randint(1, 5))).encode() +
            b" ok" for _ in range(300)]
    out += [bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 24))) for _ in range(600)]
    out += [b"caf\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\x80",
            b"x\x00y", b"\x01\x02\x7f", b"\xef\xbb\xbfbom"]
    return out


def train(corpus_path, name, **options):
    import sentencepiece as spm
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        input=corpus_path, model_writer=model, model_type="bpe", vocab_size=512,
        normalization_rule_name="identity", num_threads=1, minloglevel=2, **options)
    return model.getvalue()


def write_ref(path, encode, lines):
    with open(path, "wb") as f:
        f.write(b"TKR1" + struct.pack("<I", len(lines)))
        for line in lines:
            ids = encode(line)
            f.write(struct.pack("<I", len(line)) + line + struct.pack(f"<I{len(ids)}i", len(ids),
                                                                      *ids))


def tool(out_dir, name, *source):
    subprocess.run([sys.executable, os.path.join(ROOT, "tools", "tokenizer.py"), *source,
                    "--out", os.path.join(out_dir, name + ".mat")], check=True)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--llama-model",
                    default=os.path.join(ROOT, "..", "shared", "models", "llama2-tokenizer",
                                         "tokenizer.model"))
    ap.add_argument("--fortunes", default="/usr/share/games/fortunes")
    ap.add_argument("--seeds", default=os.path.join(ROOT, "..", "shared", "seeds"))
    a = ap.parse_args(argv)
    try:
        import sentencepiece as spm
        import bytelevel_bpe
    except ImportError as e:
        print(f"SKIP: {sys.executable} cannot import {e.name} ({e}): python3-sentencepiece, "
              "python3-regex")
        return SKIP
    if not os.path.isdir(a.fortunes):
        print(f"SKIP: {a.fortunes} not found (Debian's fortunes and fortunes-min)")
        return SKIP
    os.makedirs(a.out_dir, exist_ok=True)
    lines = fortunes(a.fortunes) + seeds(a.seeds) + generated()
    corpus = os.path.join(a.out_dir, "corpus.txt")
    with open(corpus, "wb") as f:
        f.write(b"\n".join(line for line in fortunes(a.fortunes) if line.strip()))
    models = {"bpe512": train(corpus, "bpe512", byte_fallback=True),
              "bpe512_unk": train(corpus, "bpe512_unk", byte_fallback=False,
                                  add_dummy_prefix=False, remove_extra_whitespaces=False)}
    if os.path.exists(a.llama_model):
        with open(a.llama_model, "rb") as f:
            models["llama2"] = f.read()
    for name, data in models.items():
        path = os.path.join(a.out_dir, name + ".model")
        with open(path, "wb") as f:
            f.write(data)
        tool(a.out_dir, name, "--sentencepiece", path)
        write_ref(os.path.join(a.out_dir, name + ".ref"),
                  spm.SentencePieceProcessor(model_proto=data).encode, lines)
    vocab, merges, special = bytelevel_bpe.train(
        [line for line in fortunes(a.fortunes)[::4] if line.strip()], 768)
    for name, digits in (("bytelevel", False), ("bytelevel_digits", True)):
        bl = bytelevel_bpe.Model(vocab, merges, special, digits=digits, prefix_space=digits)
        folder = os.path.join(a.out_dir, name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            f.write(bl.tokenizer_json())
        config = os.path.join(folder, "tokenizer_config.json")
        if not digits:
            with open(config, "w", encoding="utf-8") as f:
                json.dump({"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}, f)
        elif os.path.exists(config):
            os.remove(config)
        tool(a.out_dir, name, "--hf-tokenizer", os.path.join(folder, "tokenizer.json"))
        write_ref(os.path.join(a.out_dir, name + ".ref"), bl.encode, lines)
        models[name] = None
    print(f"tokenizer_reference.py: {len(lines)} lines, models {', '.join(models)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
