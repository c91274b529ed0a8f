#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""examples/run/microattn_run.c (ctest runner) on stories260K's model file (tests/real_model.cmake):

  test_runner.py --runner BIN --model MODEL.bin --reference REF.bin --work-dir DIR
                 [--tokenizer-dir DIR] [--source-dir DIR]

- greedy from BOS (-i 1 -t 0 --ids): the 128 ids of the float64 llama2.c reference
  (tests/python/llama2c_reference.py);
- seeded sampling (-t 1 -s S): the same ids for the same seed, others for another seed;
  --top-k 1 is greedy; --top-p 0 is greedy (the smallest set reaching it is the top token);
- with a tokenizer stored in the model file (export_pytorch.py --tokenizer; a 512-piece BPE
  tokenizer of tests/python/tokenizer_reference.py: stories260K's own is not available, so the
  text means nothing, but every path runs): the prompt encoded by the file's tokenizer, and the
  printed text is the pieces of the printed ids (U+2581 as a space, <0xNN> as its byte);
- refusals: no tokenizer and no -i; a tokenizer of another vocabulary size; a model file for
  another configuration (its reason printed).
NumPy only.
"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import unittest

ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--runner", required=True)
ap.add_argument("--model", required=True)
ap.add_argument("--reference", required=True)
ap.add_argument("--work-dir", required=True)
ap.add_argument("--tokenizer-dir")
ap.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
ARGS, REST = ap.parse_known_args()
sys.path.insert(0, os.path.join(ARGS.source_dir, "tools"))
import export_pytorch as ex  # noqa: E402
import tokenizer as tk  # noqa: E402


def run(*argv, model=None):
    r = subprocess.run([ARGS.runner, model or ARGS.model] + [str(a) for a in argv],
                       capture_output=True)
    return r.returncode, r.stdout, r.stderr


def ids_of(out):
    return [int(v) for v in out.split(b"\n")[0].split()]


def reference_tokens():
    with open(ARGS.reference, "rb") as f:
        data = f.read()
    magic, steps, _ = struct.unpack_from("<4sII", data)
    assert magic == b"RMR1"
    return list(struct.unpack_from(f"<{steps + 1}i", data, 12))


class Runner(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        shutil.rmtree(ARGS.work_dir, ignore_errors=True)
        os.makedirs(ARGS.work_dir)

    def test_greedy_is_the_reference(self):
        rc, out, err = run("-i", 1, "-n", 128, "-t", 0, "--ids")
        self.assertEqual(rc, 0, err)
        self.assertEqual(ids_of(out), reference_tokens()[1:129])
        self.assertIn(b"prompt: 1 tokens", out)
        self.assertIn(b"decode: 127 tokens", out)

    def test_seeded_sampling(self):
        a = ids_of(run("-i", 1, "-n", 64, "-t", 1, "-s", 7, "--ids")[1])
        b = ids_of(run("-i", 1, "-n", 64, "-t", 1, "-s", 7, "--ids")[1])
        c = ids_of(run("-i", 1, "-n", 64, "-t", 1, "-s", 8, "--ids")[1])
        greedy = reference_tokens()[1:65]
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertNotEqual(a, greedy)
        self.assertEqual(len(a), 64)
        for extra in (("--top-k", 1), ("--top-p", 0)):
            got = ids_of(run("-i", 1, "-n", 64, "-t", 1, "-s", 7, "--ids", *extra)[1])
            self.assertEqual(got, greedy, extra)
        k5 = ids_of(run("-i", 1, "-n", 64, "-t", 1.5, "--top-k", 5, "--top-p", 0.9, "-s", 3,
                        "--ids")[1])
        self.assertEqual(len(k5), 64)

    @unittest.skipUnless(ARGS.tokenizer_dir, "no tokenizer test data (python3-sentencepiece)")
    def test_text_with_the_file_tokenizer(self):
        tok = os.path.join(ARGS.tokenizer_dir, "bpe512.mat")
        model = os.path.join(ARGS.work_dir, "with_tokenizer.bin")
        rc = ex.main(["--kind", "decoder", "--llama2c", os.path.join(
            ARGS.source_dir, "..", "shared", "models", "stories260K", "stories260K.bin"),
            "--blob", model, "--tokenizer", tok])
        self.assertEqual(rc, 0)
        prompt = "Once upon a time"
        rc, ids_out, err = run("-p", prompt, "-n", 40, "-t", 0.8, "-s", 5, "--ids", model=model)
        self.assertEqual(rc, 0, err)
        rc, text_out, err = run("-p", prompt, "-n", 40, "-t", 0.8, "-s", 5, model=model)
        self.assertEqual(rc, 0, err)
        with open(tok, "rb") as f:
            data = f.read()
        h = struct.unpack_from("<20I", data)
        off = struct.unpack_from(f"<{h[4] + 1}I", data, h[10])
        types = data[h[12]:h[12] + h[4]]
        pool = data[h[16]:h[16] + h[17]]
        ids = ids_of(ids_out)
        eos = h[8]
        if eos in ids:
            ids = ids[:ids.index(eos)]
        want = b""
        for i in ids:
            p = pool[off[i]:off[i + 1]]
            want += bytes([int(p[3:5], 16)]) if types[i] == tk.BYTE else b"" \
                if types[i] == tk.CONTROL else p.replace(tk.SPACE_MARK, b" ")
        # (a printed 0 byte ends the console's C string: cut there too)
        got = text_out.split(b"\nprompt: ")[0]
        self.assertEqual(got, want.split(b"\0")[0] if b"\0" in want else want)

    def test_refusals(self):
        rc, out, _ = run("-p", "hello")
        self.assertEqual(rc, 1)
        self.assertIn(b"no tokenizer in the model file", out)
        rc, out, _ = run("-p", "x", "--tokenizer", os.path.join(
            ARGS.source_dir, "..", "shared", "models", "llama2-tokenizer", "tokenizer.bin"))
        self.assertEqual(rc, 1)  # llama2.c's format, not a tokenizer file
        other = os.path.join(ARGS.work_dir, "other.bin")
        with open(ARGS.model, "rb") as f:
            data = bytearray(f.read())
        struct.pack_into("<I", data, 64 + 16 * 7 + 8, 176)  # field 8: d_hidden
        with open(other, "wb") as f:
            f.write(data)
        rc, out, _ = run("-i", 1, model=other)
        self.assertEqual(rc, 1)
        self.assertIn(b"field d_hidden: the file has 176, the configuration 172", out)
        self.assertEqual(subprocess.run([ARGS.runner], capture_output=True).returncode, 2)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + REST)
