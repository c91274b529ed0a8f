#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/tokenizer.py: SentencePiece models and llama2.c's tokenizer.bin into tokenizer files.

  /usr/bin/python3 tests/python/test_tokenizer_tool.py [--source-dir DIR] [unittest options]

- the Llama 2 tokenizer (../shared/models/llama2-tokenizer) from tokenizer.model, from
  llama2.c's tokenizer.bin and from a GGUF file's tokenizer.ggml.* (tests/python/gguf_writer.py)
  gives the same file, byte for byte;
- the file, read by docs/model-format.md's rules: the header, every piece's bytes, score and
  type equal SentencePieceProcessor's, the index lists exactly the normal pieces in byte order,
  the byte table the <0xNN> pieces, the flags the model's settings;
- refusals (exit status 2, one line naming the reason): a unigram model, the nmt_nfkc
  normaliser, user-defined pieces, treat_whitespace_as_suffix, a truncated tokenizer.bin, a
  tokenizer.bin whose piece 3 is not <0x00>, a file that is not a model, a GGUF whose
  tokenizer.ggml.model is bert;
- a Hugging Face tokenizer.json (byte-level BPE, trained here by bytelevel_bpe.py): the pieces
  as their bytes, the special tokens control pieces, the merge table ordered with the ranks of
  tokenizer.json's order, the class table's letters, numbers and spaces, the options; and each
  setting the device does not compute refused by name (a WordPiece model, Qwen2's NFC
  normalizer and Split regex, Metaspace, use_regex false, Digits without individual_digits,
  ignore_merges, dropout, a subword prefix, byte fallback, another decoder or post-processor, a
  template with more than a BOS, a non-special added token, a merge of no pieces, a byte
  without its piece); the same model as a GGUF's tokenizer.ggml.* (model "gpt2", pre "smollm")
  gives the same file, and a GGUF pre-tokenizer other than GPT-2's split, or a user-defined
  token, is refused.
Models are trained here with python3-sentencepiece on a few generated lines; exits 77 without it
(the byte-level cases skip without python3-regex).
"""
import contextlib
import copy
import io
import json
import os
import struct
import sys
import tempfile
import unittest

import export_test_setup as setup

ARGS, UNITTEST_ARGS = setup.parser(__doc__).parse_known_args()
ROOT = os.path.abspath(ARGS.source_dir)
try:
    import sentencepiece as spm
except ImportError as e:
    print(f"SKIP: {sys.executable} cannot import sentencepiece ({e}): python3-sentencepiece")
    sys.exit(setup.SKIP)
sys.path.insert(0, os.path.join(ROOT, "tools"))
import tokenizer as tk  # noqa: E402
sys.path.insert(0, setup.HERE)
import gguf_writer as gw  # noqa: E402
try:
    import bytelevel_bpe as bl
except ImportError:
    bl = None

LLAMA = os.path.join(ROOT, "..", "shared", "models", "llama2-tokenizer")
WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly hum "
         "2026 numbers 12345 and café naïve").split()


def corpus(path):
    lines = [" ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(i % 9 + 1))
             for i in range(400)]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def train(path, **options):
    model = io.BytesIO()
    args = dict(input=path, model_writer=model, model_type="bpe", vocab_size=310,
                normalization_rule_name="identity", num_threads=1, minloglevel=2,
                byte_fallback=True)
    args.update(options)
    spm.SentencePieceTrainer.train(**args)
    return model.getvalue()


def run_tool(*argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = tk.main(list(argv))
    return rc, err.getvalue()


def tool_file(*argv):
    """(exit status, stderr, the written file's bytes or None): tools/tokenizer.py with argv,
    whose last argument is the output."""
    rc, err = run_tool(*argv)
    if rc != 0:
        return rc, err, None
    with open(argv[-1], "rb") as f:
        return rc, err, f.read()


def parse(data):
    """(header words, [(bytes, score, type)], index, byte table) by the document's rules."""
    h = struct.unpack_from("<20I", data)
    n = h[4]
    off = struct.unpack_from(f"<{n + 1}I", data, h[10])
    scores = struct.unpack_from(f"<{n}f", data, h[11])
    types = data[h[12]:h[12] + n]
    pool = data[h[16]:h[16] + h[17]]
    pieces = [(pool[off[i]:off[i + 1]], scores[i], types[i]) for i in range(n)]
    return h, pieces, struct.unpack_from(f"<{h[14]}I", data, h[13]), struct.unpack_from(
        "<256I", data, h[15])


class TokenizerTool(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.corpus = self.path("corpus.txt")
        corpus(self.corpus)

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def convert(self, flag, data):
        src = self.path("in")
        with open(src, "wb") as f:
            f.write(data)
        return tool_file(flag, src, "--out", self.path("out.mat"))

    def check_file(self, data, sp, flags):
        h, pieces, index, byte_ids = parse(data)
        self.assertEqual(h[:4], (0x4B54414D, 1, len(data), 1))
        self.assertEqual((h[4], h[5]), (sp.get_piece_size(), flags))
        self.assertEqual((h[6], h[7], h[8]), (sp.unk_id(), sp.bos_id(), sp.eos_id()))
        for i, (text, score, t) in enumerate(pieces):
            self.assertEqual(text.decode(), sp.id_to_piece(i), i)
            self.assertEqual(score, struct.unpack("<f", struct.pack("<f", sp.get_score(i)))[0])
            want = (2 if sp.is_unknown(i) else 3 if sp.is_control(i) else
                    6 if sp.is_byte(i) else 1)
            self.assertEqual(t, want, i)
        normal = [i for i, p in enumerate(pieces) if p[2] == 1]
        self.assertEqual(list(index), sorted(normal, key=lambda i: pieces[i][0]))
        self.assertEqual(h[9], max(len(p[0]) for p in pieces))
        for v in range(256):
            self.assertEqual(pieces[byte_ids[v]][0], f"<0x{v:02X}>".encode())

    @unittest.skipUnless(os.path.isdir(LLAMA), f"{LLAMA} not found")
    def test_llama2_both_sources_same_file(self):
        with open(os.path.join(LLAMA, "tokenizer.model"), "rb") as f:
            model = f.read()
        with open(os.path.join(LLAMA, "tokenizer.bin"), "rb") as f:
            rc, err, from_bin = self.convert("--llama2c", f.read())
        self.assertEqual(rc, 0, err)
        rc, err, from_model = self.convert("--sentencepiece", model)
        self.assertEqual(rc, 0, err)
        self.assertEqual(from_bin, from_model)
        sp = spm.SentencePieceProcessor(model_proto=model)
        n = sp.get_piece_size()
        types = [2 if sp.is_unknown(i) else 3 if sp.is_control(i) else 6 if sp.is_byte(i) else 1
                 for i in range(n)]
        meta = [("general.architecture", gw.STRING, "llama"),
                ("tokenizer.ggml.model", gw.STRING, "llama"),
                ("tokenizer.ggml.tokens", gw.ARRAY,
                 (gw.STRING, [sp.id_to_piece(i) for i in range(n)])),
                ("tokenizer.ggml.scores", gw.ARRAY,
                 (gw.FLOAT32, [sp.get_score(i) for i in range(n)])),
                ("tokenizer.ggml.token_type", gw.ARRAY, (gw.INT32, types)),
                ("tokenizer.ggml.bos_token_id", gw.UINT32, 1),
                ("tokenizer.ggml.eos_token_id", gw.UINT32, 2),
                ("tokenizer.ggml.unknown_token_id", gw.UINT32, 0)]
        gw.write_gguf(self.path("t.gguf"), meta, [])
        with open(self.path("t.gguf"), "rb") as f:
            rc, err, from_gguf = self.convert("--gguf", f.read())
        self.assertEqual(rc, 0, err)
        self.assertEqual(from_gguf, from_model)
        gw.write_gguf(self.path("t.gguf"), [(k, t, "bert" if k == "tokenizer.ggml.model" else v)
                                            for k, t, v in meta], [])
        with open(self.path("t.gguf"), "rb") as f:
            self.refused("--gguf", f.read(), "tokenizer.ggml.model 'bert'")
        # Llama 2: dummy prefix, spaces escaped, byte fallback; extra spaces kept.
        self.check_file(from_model, spm.SentencePieceProcessor(model_proto=model), 1 | 4 | 8)

    def test_trained_model_file(self):
        model = train(self.corpus)
        rc, err, data = self.convert("--sentencepiece", model)
        self.assertEqual(rc, 0, err)
        self.check_file(data, spm.SentencePieceProcessor(model_proto=model), 1 | 2 | 4 | 8)

    def refused(self, flag, data, *needles):
        rc, err, _ = self.convert(flag, data)
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        for n in needles:
            self.assertIn(n, err)

    def test_refusals(self):
        self.refused("--sentencepiece", train(self.corpus, model_type="unigram"),
                     "model_type unigram")
        self.refused("--sentencepiece", train(self.corpus, normalization_rule_name="nmt_nfkc"),
                     "normalizer 'nmt_nfkc'")
        self.refused("--sentencepiece", train(self.corpus, user_defined_symbols=["<tool>"]),
                     "user-defined")
        self.refused("--sentencepiece", train(self.corpus, treat_whitespace_as_suffix=True),
                     "treat_whitespace_as_suffix")
        self.refused("--sentencepiece", b"\x08\x01", "no pieces")
        self.refused("--sentencepiece", b"\x0a\x05ab", "truncated")
        pieces = [(b"<unk>", 0.0), (b"\n<s>\n", 0.0), (b"\n</s>\n", 0.0)]
        pieces += [(f"<0x{v:02X}>".encode(), 0.0) for v in range(256)] + [(b" a", -1.0)]
        good = struct.pack("<i", 8) + b"".join(struct.pack("<fi", s, len(t)) + t
                                                for t, s in pieces)
        rc, err, _ = self.convert("--llama2c", good)
        self.assertEqual(rc, 0, err)
        self.refused("--llama2c", good[:-1], "runs past the file")
        bad = good.replace(b"<0x00>", b"<0x0Z>", 1)
        self.refused("--llama2c", bad, "piece 3", "<0x00>")
        three = 4 + sum(8 + len(t) for t, _ in pieces[:3])
        self.refused("--llama2c", good[:three], "3 pieces", "the 256 byte pieces")


@unittest.skipIf(bl is None, "no python3-regex (bytelevel_bpe.py)")
class HfTokenizerJson(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        lines = [" ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(i % 9 + 1)).encode()
                 for i in range(400)]
        vocab, merges, special = bl.train(lines, 60, special=("<|endoftext|>", "<|im_end|>"))
        cls.model = bl.Model(vocab, merges, special, digits=True)
        cls.json = json.loads(cls.model.tokenizer_json())

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def convert(self, j, config=None):
        src = os.path.join(self.tmp.name, "tokenizer.json")
        with open(src, "w", encoding="utf-8") as f:
            json.dump(j, f)
        if config is not None:
            with open(os.path.join(self.tmp.name, "tokenizer_config.json"), "w") as f:
                json.dump(config, f)
        return tool_file("--hf-tokenizer", src, "--out", os.path.join(self.tmp.name, "out.mat"))

    def test_file(self):
        rc, err, data = self.convert(self.json, {"bos_token": {"content": "<|endoftext|>"},
                                                 "eos_token": "<|im_end|>"})
        self.assertEqual(rc, 0, err)
        h, pieces, index, byte_ids = parse(data)
        m = self.model
        self.assertEqual(h[:4], (0x4B54414D, 1, len(data), 2))
        self.assertEqual((h[4], h[5]), (len(m.vocab) + 2, 0))
        self.assertEqual((h[6], h[7], h[8]), (0xFFFFFFFF, 0, 1))
        for text, i in m.vocab.items():
            self.assertEqual(pieces[i], (text, 0.0, 1))
        self.assertEqual(pieces[1], (b"<|im_end|>", 0.0, 3))
        self.assertEqual(list(index), sorted(m.vocab.values(), key=lambda i: pieces[i][0]))
        self.assertEqual(list(byte_ids), [m.vocab[bytes([b])] for b in range(256)])
        self.assertEqual((h[18], h[19]), (h[18], 32))
        block = struct.unpack_from("<8I", data, h[18])
        self.assertEqual(block[:3], (1, 1, len(m.merges)))
        table = [struct.unpack_from("<3I", data, block[3] + 12 * k) for k in range(block[2])]
        want = sorted((m.vocab[a], m.vocab[b], r) for r, (a, b) in enumerate(m.merges))
        self.assertEqual(table, want)
        ranges = [struct.unpack_from("<2I", data, block[5] + 8 * k) for k in range(block[4])]

        def cls(cp):
            for first, last in ranges:
                if first <= cp <= last & 0xFFFFFF:
                    return last >> 24
            return 0
        for cp, c in ((ord("a"), 1), (ord("Z"), 1), (0xE9, 1), (0x4E2D, 1), (ord("7"), 2),
                      (0x663, 2), (0xB2, 2), (ord(" "), 3), (ord("\n"), 3), (0x3000, 3),
                      (0x85, 3), (0x1C, 0), (ord("!"), 0), (0x301, 0), (0x1F600, 0)):
            self.assertEqual(cls(cp), c, hex(cp))

    def refused(self, change, *needles):
        j = copy.deepcopy(self.json)
        change(j)
        rc, err, _ = self.convert(j)
        self.assertEqual(rc, 2, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        for n in needles:
            self.assertIn(n, err)

    def test_refusals(self):
        qwen_split = {"type": "Split", "pattern": {"Regex": "(?i:'s|'t)|\\p{N}"},
                      "behavior": "Isolated", "invert": False}
        cases = [
            (lambda j: j["model"].update(type="WordPiece"), "model type WordPiece"),
            (lambda j: j.update(normalizer={"type": "NFC"}), "normalizer NFC"),
            (lambda j: j.update(pre_tokenizer={"type": "Sequence", "pretokenizers": [
                qwen_split, {"type": "ByteLevel", "use_regex": False}]}),
             "pre_tokenizer Split+ByteLevel", "regex"),
            (lambda j: j.update(pre_tokenizer={"type": "Metaspace"}), "Metaspace",
             "--sentencepiece"),
            (lambda j: j.update(pre_tokenizer={"type": "ByteLevel", "use_regex": False}),
             "use_regex false"),
            (lambda j: j["pre_tokenizer"]["pretokenizers"][0].update(individual_digits=False),
             "Digits without individual_digits"),
            (lambda j: j["model"].update(ignore_merges=True), "model.ignore_merges"),
            (lambda j: j["model"].update(dropout=0.1), "model.dropout"),
            (lambda j: j["model"].update(continuing_subword_prefix="##"),
             "model.continuing_subword_prefix"),
            (lambda j: j["model"].update(byte_fallback=True), "model.byte_fallback"),
            (lambda j: j.update(decoder={"type": "Metaspace"}), "decoder Metaspace"),
            (lambda j: j.update(post_processor={"type": "RobertaProcessing"}),
             "post_processor RobertaProcessing"),
            (lambda j: j.update(post_processor={"type": "TemplateProcessing", "single": [
                {"SpecialToken": {"id": "<|endoftext|>"}}, {"Sequence": {"id": "A"}},
                {"SpecialToken": {"id": "<|im_end|>"}}]}), "template"),
            (lambda j: j["added_tokens"][1].update(special=False), "added token 1",
             "not special"),
            (lambda j: j["model"]["merges"].append("\u0120q\u0120 zz"), "merge 60"),
            (lambda j: j["model"]["vocab"].pop("!"), "the ids are not"),
        ]
        for change, *needles in cases:
            with self.subTest(needles[0]):
                self.refused(change, *needles)

    def gguf(self, pre="smollm", types=None):
        """The class's model as a GGUF's tokenizer.ggml.* (tests/python/gguf_writer.py)."""
        j = self.json
        n = len(j["model"]["vocab"])
        tokens = [None] * n
        for s, i in j["model"]["vocab"].items():
            tokens[i] = s
        special = {t["id"] for t in j["added_tokens"]}
        types = types or [3 if i in special else 1 for i in range(n)]
        meta = [("general.architecture", gw.STRING, "llama"),
                ("tokenizer.ggml.model", gw.STRING, "gpt2"),
                ("tokenizer.ggml.pre", gw.STRING, pre),
                ("tokenizer.ggml.tokens", gw.ARRAY, (gw.STRING, tokens)),
                ("tokenizer.ggml.token_type", gw.ARRAY, (gw.INT32, types)),
                ("tokenizer.ggml.merges", gw.ARRAY, (gw.STRING, j["model"]["merges"])),
                ("tokenizer.ggml.bos_token_id", gw.UINT32, 0),
                ("tokenizer.ggml.eos_token_id", gw.UINT32, 1)]
        path = os.path.join(self.tmp.name, "t.gguf")
        gw.write_gguf(path, meta, [])
        return tool_file("--gguf", path, "--out", os.path.join(self.tmp.name, "gguf.mat"))

    def test_gguf_same_file(self):
        rc, err, from_json = self.convert(self.json, {"bos_token": "<|endoftext|>",
                                                      "eos_token": "<|im_end|>"})
        self.assertEqual(rc, 0, err)
        rc, err, from_gguf = self.gguf()
        self.assertEqual(rc, 0, err)
        self.assertEqual(from_gguf, from_json)
        for pre in ("default", "llama-bpe", "qwen2"):
            rc, err, _ = self.gguf(pre=pre)
            self.assertEqual(rc, 2, err)
            self.assertIn(f"tokenizer.ggml.pre '{pre}'", err)
        types = [1] * len(self.json["model"]["vocab"])
        types[5] = 4
        rc, err, _ = self.gguf(types=types)
        self.assertEqual(rc, 2, err)
        self.assertIn("token 5", err)
        self.assertIn("user-defined", err)

    def test_bos_template(self):
        j = copy.deepcopy(self.json)
        j["post_processor"] = {"type": "TemplateProcessing", "single": [
            {"SpecialToken": {"id": "<|im_end|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}}]}
        rc, err, data = self.convert(j)
        self.assertEqual(rc, 0, err)
        self.assertEqual(struct.unpack_from("<I", data, 28)[0], 1)  # word 7: BOS


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS)
