#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest c_api_generator: tools/microattn_c.py for the host compiler (every kind), clang++ and
arm-none-eabi-g++ when installed. Each generated header must compile as C11 with -Wall -Wextra
-Werror -pedantic (with the C compiler of that target) and its generated C++ file with the same
compiler and flags plus the documented -fno-exceptions -fno-rtti (-Werror too; without
-fno-exceptions the generated file stops with the reason). A header made for another
configuration (any Config parameter: mask, window, bias, T_max, ...; the kind; the KV chunk:
NAME_CONFIG_ID) or other kernel flags (or for fp32 weights where the Config has
WeightType::kInt8) must stop the C++ file with an error that names the layer; headers describe
their mask and window (NAME_MASK, NAME_WINDOW, a ring's comments); int8 headers declare
set_weights with microattn_weights_q8 and give the int8 cache's bytes; --kind latent (a
LatentConfig: the shape, the latent cache's bytes, its functions; a header for another
LatentConfig or chunk, or of another kind, stops the C++ file naming the layer; with
WeightType::kInt8 and CacheType::kInt8 set_weights takes microattn_latent_weights_q8 and the
cache is int8, for the host and arm-none-eabi); the building blocks (--kind linear, mlp,
rmsnorm, layernorm: their shape, their functions and no softmax scale; fp32 and int8 weight
structs; a header for another block configuration, MLP rows per pass, norm kind or weight type
stops the C++ file naming the block; --cpp-from takes their headers; for the host and
arm-none-eabi); options are
accepted as --help spells them (a --cxxflags value starting with '-', bare Mask::, SlidingWindow{},
MaxWorkers{}); --cpp-from writes one C++ file for several layers, and on Cortex-M its image,
linked by arm-none-eabi-gcc with no C++ runtime, is smaller than one file per layer; the tool
must refuse bad arguments with exit status 2 and the reason (for a bad Config: the library's
static_assert message).

  test_generator.py --source-dir DIR --work-dir DIR --cxx C++ --cc CC [--cxxflags FLAGS]
                    [--xsimd-include DIR] [--clang CLANG++] [--arm-cxx arm-none-eabi-g++]
Exit status 0 when every check passed.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

ARM_FLAGS = "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16"

failures = []


def log(msg):
    print(msg, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, env=dict(os.environ, LC_ALL="C"), **kw)


def check(ok, what, detail=""):
    log("%s %s" % ("ok  " if ok else "FAIL", what))
    if not ok:
        failures.append(what)
        if detail:
            log(detail.rstrip())


class Setup:
    def __init__(self, args):
        self.args = args
        self.tool = os.path.join(args.source_dir, "tools", "microattn_c.py")
        self.include = os.path.join(args.source_dir, "include")
        self.work = args.work_dir
        os.makedirs(self.work, exist_ok=True)

    def generate(self, tag, name, kind, config, cxx, flags, extra=(), include_dirs=()):
        """Runs the tool; returns (rc, output, header, cpp, values dict from the header)."""
        d = os.path.join(self.work, tag)
        os.makedirs(d, exist_ok=True)
        h, cpp = os.path.join(d, name + ".h"), os.path.join(d, name + ".cpp")
        for f in (h, cpp):
            if os.path.exists(f):
                os.remove(f)
        cmd = [sys.executable, self.tool, "--name", name, "--kind", kind, "--config", config,
               "--cxx", cxx, "--cxxflags=" + flags, "--out", h, "--cpp-out", cpp] + list(extra)
        for i in include_dirs:
            cmd += ["-I", i]
        r = run(cmd)
        values = {}
        if r.returncode == 0 and os.path.exists(h):
            for line in open(h):
                p = line.split()
                if len(p) >= 3 and p[0] == "#define" and p[1].startswith(name.upper() + "_"):
                    values[p[1][len(name) + 1:]] = p[2]
        return r.returncode, r.stdout, h, cpp, values

    def compile_c_header(self, cc, flags, h):
        # The header alone, then used: an object of the type and a call (init: every kind has it).
        d = os.path.dirname(h)
        name = os.path.splitext(os.path.basename(h))[0]
        src = os.path.join(d, name + "_use.c")
        with open(src, "w") as f:
            f.write('#include "%s.h"\n#include "%s.h"\nstatic %s g_obj;\n'
                    "void %s_use(void);\nvoid %s_use(void) { %s_init(&g_obj); }\n"
                    % (name, name, name, name, name, name))
        cmd = ([cc] + shlex.split(flags) + ["-std=c11", "-Wall", "-Wextra", "-Werror",
                                            "-pedantic", "-I" + self.include, "-I" + d, "-c",
                                            src, "-o", src + ".o"])
        return run(cmd)

    def compile_cpp(self, cxx, flags, cpp, include_dirs=(), no_exceptions=True):
        # The documented flags of the C glue: -fno-exceptions -fno-rtti (a C link has no C++
        # runtime; the generated file refuses to compile without).
        extra = ["-fno-exceptions", "-fno-rtti"] if no_exceptions else []
        cmd = ([cxx, "-std=c++17"] + shlex.split(flags) + extra +
               ["-O0", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-I" + self.include,
                "-I" + os.path.dirname(cpp)] + ["-I" + i for i in include_dirs] +
               ["-c", cpp, "-o", cpp + ".o"])
        return run(cmd)


def target_checks(s, tag, cxx, cc, flags, kinds, include_dirs=(), cflags=None):
    """Generate, compile the header as C11 (with cflags, default flags), compile the C++ file:
    for each kind."""
    cases = {
        "layer": ("glayer", "layer", "24, 32, 4, 2, 8, microattn::Bias::kYes", ()),
        "kv": ("gkv", "kv", "24, 32, 4, 2, 8, Rope::kYes", ("--chunk", "5")),
        "core": ("gcore", "core", "24, 32, 4, 2, 8", ()),
        # int8 weights (set_weights takes microattn_weights_q8) and an int8 KV cache.
        "layer_q8": ("glayer_q8", "layer", "24, 32, 4, 2, 8, microattn::WeightType::kInt8", ()),
        "kv_q8": ("gkv_q8", "kv", "24, 32, 2, 1, 16, Rope::kYes, WeightType::kInt8, "
                  "CacheType::kInt8", ("--chunk", "5")),
        # integer compute (Compute::kInt8) on int8 weights.
        "kv_qd8": ("gkv_qd8", "kv", "24, 32, 2, 1, 16, Rope::kYes, WeightType::kInt8, "
                   "Compute::kInt8, CacheType::kInt8", ("--chunk", "5")),
        # multi-head latent attention (a LatentConfig) with a query latent.
        "latent": ("glatent", "latent", "24, 32, 3, 20, 6, 10, 12, QueryLatent{12}, MaxWorkers{2}",
                   ("--chunk", "5")),
        # ... with int8 weights (microattn_latent_weights_q8) and an int8 latent cache.
        "latent_q8": ("glatent_q8", "latent", "24, 32, 3, 20, 6, 10, 12, QueryLatent{12}, "
                      "WeightType::kInt8, CacheType::kInt8", ("--chunk", "5")),
        # a whole decoder model (DecoderConfig): tokens in, logits out, weights from a model file.
        "decoder": ("gdecoder", "decoder", "11, 16, 2, 4, 2, 4, 24, 12, LmHead::kTied, "
                    "WeightType::kInt8, CacheType::kInt8", ("--chunk", "5")),
        # the building blocks: a linear layer with a bias, and int8 with 2 workers; a SwiGLU MLP
        # with 5 rows a pass, a GELU one with int8 weights and biases; the norms.
        "linear": ("glinear", "linear", "32, 24, Bias::kYes", ()),
        "linear_q8": ("glinear_q8", "linear", "32, 48, WeightType::kInt8, MaxWorkers{2}", ()),
        "mlp": ("gmlp", "mlp", "32, 48, Activation::kSwiGlu", ("--chunk", "5")),
        "mlp_q8": ("gmlp_q8", "mlp", "32, 48, Activation::kGelu, WeightType::kInt8, Bias::kYes",
                   ()),
        "rmsnorm": ("grmsnorm", "rmsnorm", "32", ()),
        "layernorm": ("glayernorm", "layernorm", "32, Bias::kNo", ()),
    }
    for kind in kinds:
        name, k, config, extra = cases[kind]
        t0 = time.time()
        rc, out, h, cpp, v = s.generate(tag, name, k, config, cxx, flags, extra, include_dirs)
        check(rc == 0 and "BYTES" in v and "ALIGN" in v,
              "%s: generate %s (%s bytes, align %s)" % (tag, kind, v.get("BYTES"), v.get("ALIGN")),
              out)
        if rc != 0:
            continue
        if cc:
            r = s.compile_c_header(cc, flags if cflags is None else cflags, h)
            check(r.returncode == 0,
                  "%s: %s header compiles as C11 (-pedantic -Werror)" % (tag, kind), r.stdout)
        r = s.compile_cpp(cxx, flags, cpp, include_dirs)
        check(r.returncode == 0,
              "%s: %s C++ file compiles with the same compiler and flags (%.1f s)"
              % (tag, kind, time.time() - t0), r.stdout)
        if kind in BLOCK_CASES:
            block_header_checks(tag, kind, h, v)
        elif kind == "latent_q8":
            latent_int8_checks(s, tag, cxx, flags, include_dirs, h, v)
        elif kind.endswith("_q8"):
            int8_checks(s, tag, kind, cxx, flags, include_dirs, h, v)
        if kind == "kv_qd8":
            qd8_checks(s, tag, cxx, flags, include_dirs, h, v)
        if kind == "latent":
            latent_header_checks(tag, h, v)
        if kind == "decoder":
            decoder_header_checks(tag, h, v)


# What each block header of target_checks must say: its values, the declarations it has.
BLOCK_CASES = {
    "linear": ({"IN": "32", "OUT": "24", "BIAS": "1", "INT8_WEIGHTS": "0", "MAX_WORKERS": "1"},
               ["%s_set_weights(%s* obj, const microattn_linear_weights* w);",
                "%s_set_executor(%s* obj, const microattn_executor* ex);",
                "%s_forward(%s* obj, const float* x, size_t M, float* y);"]),
    "linear_q8": ({"IN": "32", "OUT": "48", "BIAS": "0", "INT8_WEIGHTS": "1", "MAX_WORKERS": "2"},
                  ["%s_set_weights(%s* obj, const microattn_linear_weights_q8* w);",
                   "%s_forward(%s* obj, const float* x, size_t M, float* y);"]),
    "mlp": ({"D_MODEL": "32", "D_HIDDEN": "48", "ACTIVATION": "0", "GATED": "1", "BIAS": "0",
             "MAX_ROWS": "5", "INT8_WEIGHTS": "0"},
            ["%s_set_weights(%s* obj, const microattn_mlp_weights* w);",
             "%s_set_executor(%s* obj, const microattn_executor* ex);",
             "%s_forward(%s* obj, const float* x, size_t M, float* y);"]),
    "mlp_q8": ({"D_MODEL": "32", "D_HIDDEN": "48", "ACTIVATION": "2", "GATED": "0", "BIAS": "1",
                "MAX_ROWS": "16", "INT8_WEIGHTS": "1"},
               ["%s_set_weights(%s* obj, const microattn_mlp_weights_q8* w);"]),
    "rmsnorm": ({"D": "32"},
                ["%s_set_weight(%s* obj, const float* g);", "%s_set_eps(%s* obj, float eps);",
                 "%s_eps(const %s* obj);",
                 "%s_forward(%s* obj, const float* x, size_t M, float* y);"]),
    "layernorm": ({"D": "32", "BIAS": "0"},
                  ["%s_set_weights(%s* obj, const float* g, const float* b);",
                   "%s_set_eps(%s* obj, float eps);",
                   "%s_forward(%s* obj, const float* x, size_t M, float* y);"]),
}


def block_header_checks(tag, kind, h, v):
    """A block header gives its shape and declares its functions, without a softmax scale (and a
    norm without an executor)."""
    text = open(h).read()
    name = os.path.splitext(os.path.basename(h))[0]
    want, decls = BLOCK_CASES[kind]
    got = {k: v.get(k) for k in want}
    missing = [d % ((name,) * d.count("%s")) for d in decls
               if d % ((name,) * d.count("%s")) not in text]
    norm = kind in ("rmsnorm", "layernorm")
    check(got == want and not missing and "_scale(" not in text and "T_MAX" not in text and
          (not norm or "_set_executor(" not in text),
          "%s: %s header: the shape, its functions, no scale%s" % (tag, kind, ", no executor"
                                                                  if norm else ""),
          "got %s, missing %s" % (got, missing))


def decoder_header_checks(tag, h, v):
    """A decoder header gives the DecoderConfig's shape and declares token and logit functions."""
    text = open(h).read()
    name = os.path.splitext(os.path.basename(h))[0]
    want = {"VOCAB": "11", "D_MODEL": "16", "LAYERS": "2", "HEADS": "4", "KV_HEADS": "2",
            "D_HEAD": "4", "D_HIDDEN": "24", "T_MAX": "12", "PREFILL_CHUNK": "5",
            "INT8_WEIGHTS": "1", "INT8_CACHE": "1", "TIED_HEAD": "1"}
    got = {k: v.get(k) for k in want}
    decls = ["%s_set_weights_blob(%s* obj, const void* blob, size_t bytes);",
             "%s_check_blob(const void* blob, size_t bytes, microattn_model_check* why);",
             "%s_prefill(%s* obj, const int32_t* tokens, size_t T, float* logits);",
             "%s_decode(%s* obj, int32_t token, float* logits);"]
    missing = [d % ((name,) * d.count("%s")) for d in decls
               if d % ((name,) * d.count("%s")) not in text]
    check(got == want and not missing and 0 < int(v.get("CACHE_BYTES", 0)) < int(v.get("BYTES", 0)),
          "%s: decoder header: the shape, CACHE_BYTES %s, the token/logit functions"
          % (tag, v.get("CACHE_BYTES")), "got %s, missing %s" % (got, missing))


def latent_header_checks(tag, h, v):
    """A latent header gives the LatentConfig's shape, the latent cache's bytes (d_c + d_R
    floats a token) and declares its functions with microattn_latent_weights and latent rows."""
    text = open(h).read()
    name = os.path.splitext(os.path.basename(h))[0]
    want = {"T_MAX": "24", "D_MODEL": "32", "HEADS": "3", "D_LATENT": "20", "D_ROPE": "6",
            "D_NOPE": "10", "D_V": "12", "D_Q_LATENT": "12", "D_CACHE": "26", "Q_DIM": "48",
            "UKV_DIM": "66", "V_DIM": "36", "MAX_WORKERS": "2", "PREFILL_CHUNK": "5",
            "CACHE_BYTES_PER_TOKEN": "104"}
    got = {k: v.get(k) for k in want}
    check(got == want and 24 * 104 <= int(v.get("CACHE_BYTES", 0)) < int(v.get("BYTES", 0)),
          "%s: latent header: the shape and CACHE_BYTES %s (>= 24 tokens x 104 B)"
          % (tag, v.get("CACHE_BYTES")), "got %s" % got)
    decls = ["%s_set_weights(%s* obj, const microattn_latent_weights* w);",
             "%s_set_rms_eps(%s* obj, float eps);",
             "%s_export_cache(const %s* obj, size_t first, size_t n, float* rows,",
             "%s_import_cache(%s* obj, const microattn_cache_slice* info,",
             "%s_decode(%s* obj, const float* x, float* y);"]
    missing = [d % ((name,) * d.count("%s")) for d in decls
               if d % ((name,) * d.count("%s")) not in text]
    check(not missing and "_oldest(" not in text and "microattn_weights*" not in text,
          "%s: latent header declares set_weights (microattn_latent_weights), set_rms_eps, "
          "export/import of latent rows" % tag, "\n".join(missing))


def latent_int8_checks(s, tag, cxx, flags, include_dirs, h, v):
    """An int8 latent header declares set_weights with microattn_latent_weights_q8 and says so
    (NAME_INT8_WEIGHTS, NAME_INT8_CACHE, the weights and cache lines); a token of its cache is
    d_c + d_R int8 values and two fp32 scales, and its CACHE_BYTES less than half its
    fp32-cache twin's, whose fingerprint differs; a header for fp32 weights with this
    LatentConfig's line is a compile error naming the layer."""
    text = open(h).read()
    name = os.path.splitext(os.path.basename(h))[0]
    check("%s_set_weights(%s* obj, const microattn_latent_weights_q8* w);" % (name, name) in text
          and v.get("INT8_WEIGHTS") == "1" and v.get("INT8_CACHE") == "1" and
          "weights: int8 + fp32 scales (microattn_latent_weights_q8)" in text and
          "int8 values and two fp32 scales" in text and v.get("CACHE_BYTES_PER_TOKEN") == "34",
          "%s: latent_q8 header: set_weights takes microattn_latent_weights_q8, int8 cache of "
          "26 + 8 bytes a token (%s)" % (tag, v.get("CACHE_BYTES_PER_TOKEN")))
    base = "24, 32, 3, 20, 6, 10, 12, QueryLatent{12}%s"
    rc, out, fh, fcpp, f = s.generate(tag, name + "_f32", "latent", base % ", WeightType::kInt8",
                                      cxx, flags, ("--chunk", "5"), include_dirs)
    ok = rc == 0 and f.get("INT8_CACHE") == "0" and f.get("CACHE_BYTES_PER_TOKEN") == "104"
    if ok:
        ok = (2 * int(v["CACHE_BYTES"]) < int(f["CACHE_BYTES"]) and
              v["CONFIG_ID"] != f["CONFIG_ID"])
    check(ok, "%s: latent_q8 header: CACHE_BYTES %s (int8) vs %s (fp32), CONFIG_ID %s vs %s"
          % (tag, v.get("CACHE_BYTES"), f.get("CACHE_BYTES"), v.get("CONFIG_ID"),
             f.get("CONFIG_ID")), out)
    # The option LatentPrefill::kAbsorbed: a smaller object (no unabsorbed staging), said in
    # the header, and another fingerprint.
    rc, out, ah, acpp, a = s.generate(tag, name + "_abs", "latent",
                                      base % ", WeightType::kInt8, CacheType::kInt8, "
                                      "LatentPrefill::kAbsorbed", cxx, flags, ("--chunk", "5"),
                                      include_dirs)
    ok = (rc == 0 and a.get("ABSORBED_ONLY") == "1" and v.get("ABSORBED_ONLY") == "0" and
          int(a["BYTES"]) < int(v["BYTES"]) and a["CONFIG_ID"] != v["CONFIG_ID"])
    check(ok, "%s: latent header with LatentPrefill::kAbsorbed: BYTES %s vs %s, CONFIG_ID %s vs %s"
          % (tag, a.get("BYTES"), v.get("BYTES"), a.get("CONFIG_ID"), v.get("CONFIG_ID")), out)
    rc, out, wh, wcpp, _ = s.generate(tag, name + "_w32", "latent", base % ", CacheType::kInt8",
                                      cxx, flags, ("--chunk", "5"), include_dirs)
    if rc == 0:
        write_line(wcpp, name + "_w32.h", "MICROATTN_C_LATENT_CHUNKED(%s_w32, 5, microattn::"
                   "LatentConfig<24, 32, 3, 20, 6, 10, 12, microattn::QueryLatent{12}, "
                   "microattn::WeightType::kInt8, microattn::CacheType::kInt8>);" % name)
        r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", wcpp,
                          include_dirs)
        check(r.returncode != 0 and "layer '%s_w32'" % name in r.stdout and
              "SetWeightsCheck<" in r.stdout,
              "%s: a latent header for fp32 weights used with WeightType::kInt8 is a compile "
              "error naming the layer" % tag, r.stdout[-3000:])


def qd8_checks(s, tag, cxx, flags, include_dirs, h, v):
    """An integer-compute header says so, takes int8 weights, and has another fingerprint than
    its fp32-compute twin (same object otherwise): a header made for one compiled with the other
    Config is a compile error naming the layer."""
    text = open(h).read()
    name = os.path.splitext(os.path.basename(h))[0]
    check(v.get("INT8_COMPUTE") == "1" and v.get("INT8_WEIGHTS") == "1" and
          "%s_set_weights(%s* obj, const microattn_weights_q8* w);" % (name, name) in text,
          "%s: kv_qd8 header: INT8_COMPUTE 1, set_weights takes microattn_weights_q8" % tag)
    twin = "24, 32, 2, 1, 16, Rope::kYes, WeightType::kInt8, CacheType::kInt8"
    rc, out, th, tcpp, f = s.generate(tag, name + "_f32c", "kv", twin, cxx, flags,
                                      ("--chunk", "5"), include_dirs)
    check(rc == 0 and f.get("INT8_COMPUTE") == "0" and
          f.get("CONFIG_ID") != v.get("CONFIG_ID"),
          "%s: kv_qd8 and its fp32-compute twin: CONFIG_ID %s vs %s"
          % (tag, v.get("CONFIG_ID"), f.get("CONFIG_ID")), out)
    if rc == 0:
        with open(tcpp, "w") as fh:
            fh.write('#include "%s.h"\n#include "microattn/c_api.hpp"\n'
                     "MICROATTN_C_KV_LAYER_CHUNKED(%s, 5, microattn::Config<24, 32, 2, 1, 16, "
                     "microattn::Rope::kYes, microattn::WeightType::kInt8, "
                     "microattn::Compute::kInt8, microattn::CacheType::kInt8>);\n"
                     % (name + "_f32c", name + "_f32c"))
        r = s.compile_cpp(cxx, flags, tcpp, include_dirs)
        check(r.returncode != 0 and "'%s'" % (name + "_f32c") in r.stdout,
              "%s: a header for fp32 compute used with Compute::kInt8 is a compile error naming "
              "the layer" % tag, r.stdout[-3000:])


def int8_checks(s, tag, kind, cxx, flags, include_dirs, h, v):
    """An int8 header declares set_weights with microattn_weights_q8 and says so; a KV header's
    CACHE_BYTES is the int8 cache's: the fp32-cache twin's object is larger by exactly the
    difference of the two caches, and its cache more than twice as large."""
    text = open(h).read()
    name = os.path.splitext(os.path.basename(h))[0]
    check("%s_set_weights(%s* obj, const microattn_weights_q8* w);" % (name, name) in text and
          v.get("INT8_WEIGHTS") == "1",
          "%s: %s header: set_weights takes microattn_weights_q8" % (tag, kind))
    if kind != "kv_q8":
        return
    rc, out, _, _, f = s.generate(tag, name + "_f32", "kv",
                                  "24, 32, 2, 1, 16, Rope::kYes, WeightType::kInt8", cxx, flags,
                                  ("--chunk", "5"), include_dirs)
    ok = (rc == 0 and v.get("INT8_CACHE") == "1" and f.get("INT8_CACHE") == "0" and
          "CACHE_BYTES" in v and "CACHE_BYTES" in f)
    if ok:
        q_cache, f_cache = int(v["CACHE_BYTES"]), int(f["CACHE_BYTES"])
        ok = (2 * q_cache < f_cache and
              int(f["BYTES"]) - int(v["BYTES"]) == f_cache - q_cache)
    check(ok, "%s: %s header: CACHE_BYTES %s (int8) vs %s (fp32), BYTES %s vs %s"
          % (tag, kind, v.get("CACHE_BYTES"), f.get("CACHE_BYTES"), v.get("BYTES"),
             f.get("BYTES")), out)


def mismatch_checks(s, cxx, flags, include_dirs):
    # 1. A header for another Config (T_max 32) with the macro line of T_max 24.
    rc, out, h, cpp, v = s.generate("mismatch_cfg", "mlayer", "layer", "32, 32, 4, 2, 8", cxx,
                                    flags, (), include_dirs)
    check(rc == 0, "mismatch: generate for T_max 32", out)
    if rc == 0:
        with open(cpp, "w") as f:
            f.write('#include "mlayer.h"\n#include "microattn/c_api.hpp"\n'
                    "MICROATTN_C_LAYER(mlayer, microattn::Config<24, 32, 4, 2, 8>);\n")
        r = s.compile_cpp(cxx, flags, cpp, include_dirs)
        check(r.returncode != 0 and "layer 'mlayer'" in r.stdout and "StorageCheck<" in r.stdout,
              "mismatch: a header for another Config is a compile error naming the layer",
              r.stdout[-3000:])
        # MICROATTN_C_ALLOW_LARGER_STORAGE: a header of the same configuration with a larger
        # storage struct (e.g. hand-written for two targets) is accepted; without it, not.
        rc, out, h, cpp, v = s.generate("mismatch_larger", "mlayer", "layer", "24, 32, 4, 2, 8",
                                        cxx, flags, (), include_dirs)
        check(rc == 0, "mismatch: generate for T_max 24", out)
        if rc == 0:
            text = open(h).read()
            larger = int(v["BYTES"]) + 2 * int(v["ALIGN"])
            with open(h, "w") as f:
                f.write(text.replace("#define MLAYER_BYTES %s" % v["BYTES"],
                                     "#define MLAYER_BYTES %d" % larger))
            r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp,
                              include_dirs)
            check(r.returncode == 0, "mismatch: ... a larger storage struct (%d bytes for %s) is "
                  "accepted with MICROATTN_C_ALLOW_LARGER_STORAGE" % (larger, v["BYTES"]),
                  r.stdout[-3000:])
            r = s.compile_cpp(cxx, flags, cpp, include_dirs)
            check(r.returncode != 0 and "StorageCheck<" in r.stdout and
                  "layer 'mlayer'" in r.stdout,
                  "mismatch: ... and refused without it", r.stdout[-3000:])
    # 2. A header for fp32 weights with the macro line of an int8-weight Config: set_weights
    #    would take another struct than the header declares.
    rc, out, h, cpp, v = s.generate("mismatch_wt", "wlayer", "layer", "24, 32, 4, 2, 8", cxx,
                                    flags, (), include_dirs)
    check(rc == 0, "mismatch: generate for fp32 weights", out)
    if rc == 0:
        with open(cpp, "w") as f:
            f.write('#include "wlayer.h"\n#include "microattn/c_api.hpp"\n'
                    "MICROATTN_C_LAYER(wlayer, microattn::Config<24, 32, 4, 2, 8, "
                    "microattn::WeightType::kInt8>);\n")
        r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp, include_dirs)
        check(r.returncode != 0 and "layer 'wlayer'" in r.stdout and
              "SetWeightsCheck<" in r.stdout,
              "mismatch: a header for fp32 weights used with WeightType::kInt8 is a compile "
              "error naming the layer", r.stdout[-3000:])
    # 3. A header for the scalar kernels, used where the SIMD ones are compiled (when their
    #    objects differ: they do wherever xsimd has an arch for the host).
    scalar = flags + " -DMICROATTN_FORCE_SCALAR=1"
    rc1, out1, _, _, v1 = s.generate("mismatch_arch_simd", "alayer", "layer", "24, 32, 4, 2, 8",
                                     cxx, flags, (), include_dirs)
    rc2, out2, h2, cpp2, v2 = s.generate("mismatch_arch", "alayer", "layer", "24, 32, 4, 2, 8",
                                         cxx, scalar, (), include_dirs)
    check(rc1 == 0 and rc2 == 0, "mismatch: generate for scalar and default kernels", out1 + out2)
    if rc1 == 0 and rc2 == 0:
        if v1.get("BYTES") == v2.get("BYTES") and v1.get("ALIGN") == v2.get("ALIGN"):
            log("skip mismatch: scalar and default kernels have the same object here")
        else:
            r = s.compile_cpp(cxx, flags, cpp2, include_dirs)
            check(r.returncode != 0 and "layer 'alayer'" in r.stdout,
                  "mismatch: a header for the scalar kernels (%s bytes) does not compile with the "
                  "SIMD ones (%s bytes)" % (v2.get("BYTES"), v1.get("BYTES")), r.stdout[-3000:])


def header_values(h, name):
    values = {}
    for line in open(h):
        p = line.split()
        if len(p) >= 3 and p[0] == "#define" and p[1].startswith(name.upper() + "_"):
            values[p[1][len(name) + 1:]] = p[2]
    return values


def write_line(cpp, header, macro):
    with open(cpp, "w") as f:
        f.write('#include "%s"\n#include "microattn/c_api.hpp"\n%s\n' % (header, macro))


def config_checks(s, cxx, flags, include_dirs):
    """A header made for one Config stops a MICROATTN_C_* line of any other: the mask, the
    window and the bias flags leave the object's size as it is, so only the header's
    NAME_CONFIG_ID (ConfigCheck) can tell; the matching line compiles. Also another kind and
    another KV chunk. With MICROATTN_C_ALLOW_LARGER_STORAGE the size check is relaxed, so the
    error must come from the configuration check."""
    rc, out, h, cpp, v = s.generate("config", "clayer", "layer", "24, 32, 4, 2, 8", cxx, flags,
                                    (), include_dirs)
    check(rc == 0 and v.get("CONFIG_ID", "").endswith("u"), "config: generate for the causal "
          "Config<24, 32, 4, 2, 8> (CONFIG_ID %s)" % v.get("CONFIG_ID"), out)
    if rc != 0:
        return
    base = "microattn::Config<24, 32, 4, 2, 8%s>"
    cases = [
        ("", True, False),
        (", microattn::Mask::kCausal", True, False),  # the default, spelled out: the same layer
        (", microattn::Mask::kNone", False, True),
        (", microattn::SlidingWindow{8}", False, True),
        (", microattn::SlidingWindow{24}", False, True),  # a window as long as T_max: other type
        (", microattn::Bias::kYes", False, True),
        (", microattn::Bias::kO", False, True),
        (", microattn::OutProj::kNo", False, False),
        (", microattn::Rope::kYes", False, False),
        (", microattn::MaxWorkers{2}", False, False),
    ]
    for opt, ok, same_size in cases:
        write_line(cpp, "clayer.h", "MICROATTN_C_LAYER(clayer, %s);" % (base % opt))
        r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp, include_dirs)
        if ok:
            check(r.returncode == 0, "config: the header's Config%s compiles" % opt,
                  r.stdout[-3000:])
            continue
        check(r.returncode != 0 and "layer 'clayer'" in r.stdout and "ConfigCheck<" in r.stdout
              and "regenerate" in r.stdout,
              "config: a header for the causal Config does not compile with Config<24, 32, 4, 2, "
              "8%s> (ConfigCheck names the layer)" % opt, r.stdout[-3000:])
        if same_size:
            # Without the relaxation too, and the storage check has nothing to say.
            r = s.compile_cpp(cxx, flags, cpp, include_dirs)
            check(r.returncode != 0 and "ConfigCheck<" in r.stdout and
                  "StorageCheck<" not in r.stdout,
                  "config: ... %s: the object's size is the same, the fingerprint tells"
                  % opt.lstrip(", "), r.stdout[-3000:])
    # Another T_max: both checks fire.
    write_line(cpp, "clayer.h", "MICROATTN_C_LAYER(clayer, %s);" % "microattn::Config<32, 32, 4, "
               "2, 8>")
    r = s.compile_cpp(cxx, flags, cpp, include_dirs)
    check(r.returncode != 0 and "ConfigCheck<" in r.stdout and "layer 'clayer'" in r.stdout,
          "config: ... nor with Config<32, 32, 4, 2, 8> (another T_max)", r.stdout[-3000:])
    # Another kind on the same Config.
    write_line(cpp, "clayer.h", "MICROATTN_C_CORE(clayer, %s);" % (base % ""))
    r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp, include_dirs)
    check(r.returncode != 0 and "ConfigCheck<" in r.stdout,
          "config: a layer header does not compile with MICROATTN_C_CORE", r.stdout[-3000:])
    # A KV header with chunk 5: another chunk does not compile, chunk 5 does; without --chunk the
    # header is for MICROATTN_C_KV_LAYER (chunk T_max), which MICROATTN_C_KV_LAYER_CHUNKED with
    # T_max matches too.
    kv_cfg = "microattn::Config<24, 32, 4, 2, 8, microattn::SlidingWindow{6}>"
    rc, out, h, cpp, v = s.generate("config", "ckvc", "kv", "24, 32, 4, 2, 8, SlidingWindow{6}",
                                    cxx, flags, ("--chunk", "5"), include_dirs)
    check(rc == 0, "config: generate a sliding-window KV layer with chunk 5", out)
    if rc == 0:
        for line, ok in (("MICROATTN_C_KV_LAYER_CHUNKED(ckvc, 5, %s);" % kv_cfg, True),
                         ("MICROATTN_C_KV_LAYER_CHUNKED(ckvc, 4, %s);" % kv_cfg, False),
                         ("MICROATTN_C_KV_LAYER(ckvc, %s);" % kv_cfg, False)):
            write_line(cpp, "ckvc.h", line)
            r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp,
                              include_dirs)
            if ok:
                check(r.returncode == 0, "config: %s compiles" % line, r.stdout[-3000:])
            else:
                check(r.returncode != 0 and "ConfigCheck<" in r.stdout,
                      "config: %s does not (chunk 5 header)" % line, r.stdout[-3000:])
    rc, out, h, cpp, v = s.generate("config", "ckvt", "kv", "24, 32, 4, 2, 8", cxx, flags, (),
                                    include_dirs)
    if rc == 0:
        write_line(cpp, "ckvt.h", "MICROATTN_C_KV_LAYER_CHUNKED(ckvt, 24, microattn::Config<24, "
                   "32, 4, 2, 8>);")
        r = s.compile_cpp(cxx, flags, cpp, include_dirs)
        check(r.returncode == 0, "config: a header without --chunk matches "
              "MICROATTN_C_KV_LAYER_CHUNKED(.., T_max, ..)", r.stdout[-3000:])
    # A header without the fingerprint (made by an older tool) does not compile either.
    h = os.path.join(s.work, "config", "clayer.h")
    old = os.path.join(s.work, "config", "cold.h")
    with open(old, "w") as f:
        f.write("".join(l.replace("clayer", "cold").replace("CLAYER", "COLD")
                        for l in open(h) if "CONFIG_ID" not in l))
    cpp = os.path.join(s.work, "config", "cold.cpp")
    write_line(cpp, "cold.h", "MICROATTN_C_LAYER(cold, %s);" % (base % ""))
    r = s.compile_cpp(cxx, flags, cpp, include_dirs)
    check(r.returncode != 0 and "MICROATTN_C_CONFIG_ID_cold" in r.stdout,
          "config: a header without MICROATTN_C_CONFIG_ID_NAME does not compile", r.stdout[-3000:])


def block_config_checks(s, cxx, flags, include_dirs):
    """A block header made for one configuration compiles with its own line and with no other:
    a bias or the rows per pass leave the object's size as it is, so only NAME_CONFIG_ID can tell
    (ConfigCheck, naming the block; MICROATTN_C_ALLOW_LARGER_STORAGE relaxes the size check); an
    fp32 header with an int8 line also fails SetWeightsCheck; an RMSNorm header with a LayerNorm
    line fails. --cpp-from takes block headers."""
    cases = [
        ("blin", "linear", "32, 24, Bias::kYes", (),
         [("MICROATTN_C_LINEAR(blin, microattn::LinearConfig<32, 24, microattn::Bias::kYes>);",
           None),
          ("MICROATTN_C_LINEAR(blin, microattn::LinearConfig<32, 24>);", "ConfigCheck<"),
          ("MICROATTN_C_LINEAR(blin, microattn::LinearConfig<32, 24, microattn::Bias::kYes, "
           "microattn::WeightType::kInt8>);", "SetWeightsCheck<")]),
        ("bmlp", "mlp", "32, 48, Activation::kSwiGlu", ("--chunk", "5"),
         [("MICROATTN_C_MLP_CHUNKED(bmlp, 5, microattn::MlpConfig<32, 48, "
           "microattn::Activation::kSwiGlu>);", None),
          ("MICROATTN_C_MLP(bmlp, microattn::MlpConfig<32, 48, microattn::Activation::kSwiGlu>);",
           "ConfigCheck<"),
          ("MICROATTN_C_MLP_CHUNKED(bmlp, 5, microattn::MlpConfig<32, 48, "
           "microattn::Activation::kGeGlu>);", "ConfigCheck<")]),
        ("bln", "layernorm", "32", (),
         [("MICROATTN_C_LAYERNORM(bln, 32);", None),
          ("MICROATTN_C_LAYERNORM(bln, 32, microattn::Bias::kYes);", None),
          ("MICROATTN_C_LAYERNORM(bln, 32, microattn::Bias::kNo);", "ConfigCheck<"),
          ("MICROATTN_C_RMSNORM(bln, 32);", "ConfigCheck<")]),
        ("brms", "rmsnorm", "32", (),
         [("MICROATTN_C_RMSNORM(brms, 32);", None),
          ("MICROATTN_C_RMSNORM(brms, 16);", "ConfigCheck<")]),
    ]
    headers = []
    for name, kind, config, extra, lines in cases:
        rc, out, h, cpp, v = s.generate("blocks", name, kind, config, cxx, flags, extra,
                                        include_dirs)
        check(rc == 0, "blocks: generate %s %s (CONFIG_ID %s)" % (kind, config,
                                                                  v.get("CONFIG_ID")), out)
        if rc != 0:
            continue
        headers.append(h)
        for line, error in lines:
            write_line(cpp, name + ".h", line)
            r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp,
                              include_dirs)
            if error is None:
                check(r.returncode == 0, "blocks: %s compiles" % line, r.stdout[-3000:])
            else:
                check(r.returncode != 0 and error in r.stdout and "layer '%s'" % name in r.stdout,
                      "blocks: %s does not (%s names the block)" % (line, error.rstrip("<")),
                      r.stdout[-3000:])
    if len(headers) == len(cases):
        cpp = os.path.join(s.work, "blocks", "blocks.cpp")
        r = run([sys.executable, s.tool, "--cpp-from"] + headers + ["--cpp-out", cpp])
        text = open(cpp).read() if r.returncode == 0 else ""
        check(r.returncode == 0 and "MICROATTN_C_MLP_CHUNKED(bmlp, 5," in text and
              "MICROATTN_C_LAYERNORM(bln, 32);" in text and "MICROATTN_C_RMSNORM(brms, 32);" in text,
              "blocks: --cpp-from writes the blocks' lines", r.stdout + text)
        if text:
            r = s.compile_cpp(cxx, flags, cpp, include_dirs)
            check(r.returncode == 0, "blocks: ... and that file compiles", r.stdout[-3000:])


def latent_config_checks(s, cxx, flags, include_dirs):
    """A latent header made for one LatentConfig and chunk compiles with its own line and with
    no other (d_c, the query latent, MaxWorkers, the chunk: NAME_CONFIG_ID; with
    MICROATTN_C_ALLOW_LARGER_STORAGE so that only the fingerprint can tell); a KV header with a
    MICROATTN_C_LATENT line stops naming the layer; bare and qualified spellings give one
    header."""
    rc, out, h, cpp, v = s.generate("latent", "lcfg", "latent", "24, 32, 4, 16, 8, 8, 8, "
                                    "QueryLatent{12}", cxx, flags, ("--chunk", "6"), include_dirs)
    check(rc == 0, "latent: generate LatentConfig<24, 32, 4, 16, 8, 8, 8, QueryLatent{12}>, "
          "chunk 6 (CONFIG_ID %s)" % v.get("CONFIG_ID"), out)
    if rc != 0:
        return
    cfg = "microattn::LatentConfig<24, 32, 4, 16, 8, 8, 8%s>"
    q = ", microattn::QueryLatent{12}"
    cases = [("MICROATTN_C_LATENT_CHUNKED(lcfg, 6, %s);" % (cfg % q), True),
             ("MICROATTN_C_LATENT_CHUNKED(lcfg, 5, %s);" % (cfg % q), False),
             ("MICROATTN_C_LATENT(lcfg, %s);" % (cfg % q), False),
             ("MICROATTN_C_LATENT_CHUNKED(lcfg, 6, %s);" % (cfg % ""), False),
             ("MICROATTN_C_LATENT_CHUNKED(lcfg, 6, %s);" % (cfg % ", microattn::QueryLatent{16}"),
              False),
             ("MICROATTN_C_LATENT_CHUNKED(lcfg, 6, %s);"
              % (cfg % (q + ", microattn::MaxWorkers{2}")), False),
             ("MICROATTN_C_LATENT_CHUNKED(lcfg, 6, microattn::LatentConfig<24, 32, 4, 20, 8, 8, 8"
              "%s>);" % q, False)]
    for line, ok in cases:
        write_line(cpp, "lcfg.h", line)
        r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp, include_dirs)
        if ok:
            check(r.returncode == 0, "latent: %s compiles" % line, r.stdout[-3000:])
        else:
            check(r.returncode != 0 and "ConfigCheck<" in r.stdout and "layer 'lcfg'" in r.stdout,
                  "latent: %s does not (ConfigCheck names the layer)" % line, r.stdout[-3000:])
    # The same layer spelled with microattn:: and as the type: the same header.
    rc, out, h2, _, _ = s.generate("latent_q", "lcfg", "latent", cfg % q, cxx, flags,
                                   ("--chunk", "6"), include_dirs)
    check(rc == 0 and open(h2).read() == open(h).read(), "latent: '%s' gives the same header "
          "as the bare arguments" % (cfg % q), out)
    # A KV header used with a latent line: another kind, set_weights of another struct.
    rc, out, h, cpp, v = s.generate("latent", "lkv", "kv", "24, 32, 4, 2, 8", cxx, flags, (),
                                    include_dirs)
    if rc == 0:
        write_line(cpp, "lkv.h", "MICROATTN_C_LATENT(lkv, %s);" % (cfg % ""))
        r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp, include_dirs)
        check(r.returncode != 0 and "layer 'lkv'" in r.stdout and "ConfigCheck<" in r.stdout,
              "latent: a KV header with a MICROATTN_C_LATENT line is a compile error naming the "
              "layer", r.stdout[-3000:])


def comment_before(text, decl):
    """The C comment right above the line that contains decl."""
    i = text.find(decl)
    if i < 0:
        return ""
    j = text.rfind("/*", 0, i)
    return text[j:i]


def description_checks(s, cxx, cc, flags, include_dirs):
    """The header says what the layer is: NAME_MASK / NAME_WINDOW, and comments that follow the
    configuration (a bidirectional layer is not called causal; a sliding-window KV layer's ring
    has no token limit and no MICROATTN_CACHE_FULL). Each header compiles as C11, its C++ file
    with the documented flags."""
    cases = [
        ("dnone", "layer", "24, 32, 4, 2, 8, Mask::kNone", (), "0", "1"),
        ("dwin", "layer", "24, 32, 4, 2, 8, SlidingWindow{8}", (), "8", "0"),
        ("dcausal", "layer", "24, 32, 4, 2, 8", (), "0", "0"),
        ("dkv", "kv", "24, 32, 4, 2, 8", (), "0", "0"),
        ("dkvwin", "kv", "24, 32, 4, 2, 8, SlidingWindow{8}, CacheType::kInt8", ("--chunk", "4"),
         "8", "0"),
        ("dcore", "core", "24, 32, 4, 2, 8, Mask::kNone", (), "0", "1"),
        ("dcorewin", "core", "24, 32, 4, 2, 8, SlidingWindow{3}", (), "3", "0"),
    ]
    for name, kind, config, extra, window, mask in cases:
        rc, out, h, cpp, v = s.generate("describe", name, kind, config, cxx, flags, extra,
                                        include_dirs)
        check(rc == 0 and v.get("WINDOW") == window and v.get("MASK") == mask,
              "describe: %s (%s): %s_MASK %s, %s_WINDOW %s" %
              (name, config, name.upper(), v.get("MASK"), name.upper(), v.get("WINDOW")), out)
        if rc != 0:
            continue
        text = open(h).read()
        fwd = comment_before(text, "%s_forward(" % name)
        if name in ("dnone", "dcore"):
            check("bidirectional" in text and "every token sees all T tokens" in text and
                  "causal" not in fwd and ("bidirectional" in fwd or "no mask" in fwd),
                  "describe: %s: a Mask::kNone %s is described as bidirectional, not causal"
                  % (name, kind), fwd)
        elif name in ("dwin", "dcorewin"):
            check("sliding" in fwd and "SlidingWindow{%s}" % window in text,
                  "describe: %s: a sliding-window %s says so" % (name, kind), fwd)
        elif name == "dcausal":
            check("causal" in fwd and "sliding" not in text and "bidirectional" not in text,
                  "describe: dcausal: a causal layer says causal", fwd)
        elif name == "dkv":
            check("MICROATTN_CACHE_FULL past DKV_T_MAX" in comment_before(text, "dkv_prefill(")
                  and "MICROATTN_CACHE_FULL" in comment_before(text, "dkv_decode(")
                  and not re.search(r"\bring\b", text),
                  "describe: dkv: a causal KV layer fills up at T_max")
        elif name == "dkvwin":
            pre = comment_before(text, "dkvwin_prefill(")
            dec = comment_before(text, "dkvwin_decode(")
            imp, trunc = (comment_before(text, "dkvwin_import_cache("),
                          comment_before(text, "dkvwin_truncate("))
            check(re.search(r"\bring\b", text) and "for the KV cache: in total" not in text and
                  "past DKVWIN_T_MAX" not in pre and
                  "MICROATTN_CACHE_FULL past" not in imp and "once" not in dec and
                  "no MICROATTN_CACHE_FULL" in pre and "dkvwin_oldest(obj)" in trunc and
                  "size_t dkvwin_oldest(const dkvwin* obj);" in text and
                  "a ring of the last 11 tokens" in text,
                  "describe: dkvwin: a sliding-window KV layer: a ring without a token limit or "
                  "MICROATTN_CACHE_FULL, truncate bounded by dkvwin_oldest()", text)
        if cc:
            r = s.compile_c_header(cc, flags, h)
            check(r.returncode == 0, "describe: %s header compiles as C11" % name, r.stdout)
        r = s.compile_cpp(cxx, flags, cpp, include_dirs)
        check(r.returncode == 0, "describe: %s C++ file compiles" % name, r.stdout[-3000:])


def cli_checks(s, cxx, flags, include_dirs):
    """Options as the --help writes them: a --cxxflags value that starts with '-' as a separate
    argument, and bare Mask::, SlidingWindow{}, MaxWorkers{} like the other options."""
    d = os.path.join(s.work, "cli")
    os.makedirs(d, exist_ok=True)
    h = os.path.join(d, "cflag.h")
    inc = [a for i in include_dirs for a in ("-I", i)]
    value = (flags + " -DMICROATTN_CLI_TEST=1").strip()
    r = run([sys.executable, s.tool, "--name", "cflag", "--config", "24, 32, 4, 2, 8",
             "--cxx", cxx, "--cxxflags", value, "--out", h] + inc)
    check(r.returncode == 0 and os.path.exists(h) and "-DMICROATTN_CLI_TEST=1" in open(h).read(),
          "cli: --cxxflags '%s' (a value starting with '-', as a separate argument)" % value,
          r.stdout)
    r = run([sys.executable, s.tool, "--help"])
    check(r.returncode == 0 and "--cpp-from" in r.stdout and "Mask::kNone" in r.stdout,
          "cli: --help lists --cpp-from and the bare option names", r.stdout)
    for config, key, want in (("24, 32, 4, 2, 8, Mask::kNone", "MASK", "1"),
                              ("24, 32, 4, 2, 8, SlidingWindow{5}", "WINDOW", "5"),
                              ("24, 32, 4, 2, 8, MaxWorkers{2}", "MAX_WORKERS", "2"),
                              ("Config<24, 32, 4, 2, 8, Mask::kNone, Bias::kYes>", "BIAS_O", "1"),
                              ("24, 32, 4, 2, 8, SlidingWindow {5}", "WINDOW", "5"),
                              ("24, 32, 4, 2, 8, microattn::Mask::kNone", "MASK", "1")):
        rc, out, _, _, v = s.generate("cli", "cbare", "layer", config, cxx, flags, (),
                                      include_dirs)
        check(rc == 0 and v.get(key) == want, "cli: --config '%s' (%s_%s %s)"
              % (config, "CBARE", key, v.get(key)), out)


def exceptions_checks(s, cxx, flags, include_dirs):
    """The generated C++ file needs -fno-exceptions (a C link has no __gxx_personality_v0): it
    says so at compile time, and MICROATTN_C_ALLOW_EXCEPTIONS (a C++ link) lets it through."""
    rc, out, h, cpp, v = s.generate("exceptions", "elayer", "layer", "24, 32, 4, 2, 8", cxx,
                                    flags, (), include_dirs)
    if rc != 0:
        check(False, "exceptions: generate", out)
        return
    text = open(cpp).read()
    check("-fno-exceptions -fno-rtti" in text, "exceptions: the C++ file gives its compile line "
          "with -fno-exceptions -fno-rtti", text)
    r = s.compile_cpp(cxx, flags, cpp, include_dirs, no_exceptions=False)
    check(r.returncode != 0 and "-fno-exceptions" in r.stdout and
          "__gxx_personality_v0" in r.stdout,
          "exceptions: with exceptions on the generated file stops with the reason",
          r.stdout[-3000:])
    r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_EXCEPTIONS=1", cpp, include_dirs,
                      no_exceptions=False)
    check(r.returncode == 0, "exceptions: ... and compiles with MICROATTN_C_ALLOW_EXCEPTIONS",
          r.stdout[-3000:])
    # The README's own three lines, hand-written (the guard is in c_api.hpp's macros, not only in
    # the generated file): the same refusal with exceptions on, compiles without.
    own = os.path.join(os.path.dirname(h), "elayer_own.cpp")
    with open(own, "w") as f:
        f.write('#include "elayer.h"\n#include "microattn/c_api.hpp"\n\n'
                "MICROATTN_C_LAYER(elayer, microattn::Config<24, 32, 4, 2, 8>);\n")
    r = s.compile_cpp(cxx, flags, own, include_dirs, no_exceptions=False)
    check(r.returncode != 0 and "-fno-exceptions" in r.stdout and
          "__gxx_personality_v0" in r.stdout,
          "exceptions: a hand-written glue file with exceptions on stops with the reason",
          r.stdout[-3000:])
    r = s.compile_cpp(cxx, flags, own, include_dirs)
    check(r.returncode == 0, "exceptions: ... and compiles with -fno-exceptions -fno-rtti",
          r.stdout[-3000:])


def merge_checks(s, tag, cxx, flags, include_dirs, other_flags):
    """--cpp-from: one C++ file for the layers of several headers (every kind), which compiles;
    refused for headers of other flags, a layer twice, a header the tool did not write."""
    layers = [("mg_a", "layer", "24, 32, 4, 2, 8, Bias::kYes", ()),
              ("mg_b", "kv", "48, 32, 4, 1, 8, Rope::kYes", ("--chunk", "8")),
              ("mg_c", "core", "24, 32, 4, 2, 8, Mask::kNone", ()),
              ("mg_d", "latent", "24, 32, 4, 16, 8, 8, 8", ("--chunk", "8"))]
    headers = []
    for name, kind, config, extra in layers:
        rc, out, h, _, _ = s.generate(tag, name, kind, config, cxx, flags, extra, include_dirs)
        check(rc == 0, "%s: merge: generate %s" % (tag, name), out)
        headers.append(h)
    d = os.path.dirname(headers[0])
    cpp = os.path.join(d, "mg_layers.cpp")
    r = run([sys.executable, s.tool, "--cpp-from"] + headers + ["--cpp-out", cpp])
    ok = r.returncode == 0 and os.path.exists(cpp)
    text = open(cpp).read() if ok else ""
    check(ok and all('#include "%s.h"' % l[0] in text for l in layers) and
          "MICROATTN_C_KV_LAYER_CHUNKED(mg_b, 8," in text and "MICROATTN_C_CORE(mg_c," in text and
          "MICROATTN_C_LATENT_CHUNKED(mg_d, 8," in text and
          text.count("#include \"microattn/c_api.hpp\"") == 1,
          "%s: merge: --cpp-from writes one C++ file with the four layers" % tag,
          r.stdout + text)
    if ok:
        r = s.compile_cpp(cxx, flags, cpp, include_dirs)
        check(r.returncode == 0, "%s: merge: the merged C++ file compiles (-Werror)" % tag,
              r.stdout[-3000:])
    # Refusals.
    rc, out, other, _, _ = s.generate(tag + "_other", "mg_o", "layer", "24, 32, 4, 2, 8", cxx,
                                      other_flags, (), include_dirs)
    plain = os.path.join(d, "plain.h")
    with open(plain, "w") as f:
        f.write("/* not generated */\n")
    for args, expect in (([headers[0], other], "different compilers or flags"),
                         ([headers[0], headers[0]], "the layer 'mg_a' is in"),
                         ([headers[0], plain], "is not a header written by tools/microattn_c.py"),
                         ([headers[0], os.path.join(d, "missing.h")], "cannot read")):
        r = run([sys.executable, s.tool, "--cpp-from"] + args + ["--cpp-out", cpp + ".x"])
        check(r.returncode == 2 and expect in r.stdout and not os.path.exists(cpp + ".x"),
              "%s: merge refused (exit 2): %s" % (tag, expect), r.stdout)
    r = run([sys.executable, s.tool, "--cpp-from", headers[0]])
    check(r.returncode == 2 and "--cpp-from needs --cpp-out" in r.stdout,
          "%s: merge refused without --cpp-out" % tag, r.stdout)
    return headers, cpp


# What a C link must not need: the C++ runtime's exception support and allocation.
CXX_RUNTIME = ("__gxx_personality_v0", "__cxa_", "_Unwind_", "__aeabi_unwind_cpp_pr",
               "__gnu_unwind", "_Znw", "_Zna", "_Zdl", "_Zda", "__cxa_pure_virtual")


def arm_image_checks(s, cxx, cc, headers, merged):
    """A Cortex-M image linked by the C compiler (arm-none-eabi-gcc, as a C firmware links): the
    four layers of merge_checks in one generated C++ file, and each in its own; both link, hold
    no C++ runtime symbol, and the one-file image is the smaller (the kernels the layers share
    are compiled once). Prints both sizes."""
    if not cc:
        log("skip arm image: no arm-none-eabi-gcc")
        return
    d = os.path.dirname(merged)
    size = shutil.which(os.path.join(os.path.dirname(cxx), "arm-none-eabi-size")) or \
        shutil.which("arm-none-eabi-size")
    nm = shutil.which(os.path.join(os.path.dirname(cxx), "arm-none-eabi-nm")) or \
        shutil.which("arm-none-eabi-nm")
    main_c = os.path.join(d, "mg_main.c")
    with open(main_c, "w") as f:
        f.write("""#include "mg_a.h"
#include "mg_b.h"
#include "mg_c.h"
#include "mg_d.h"
static mg_a g_a;
static mg_b g_b;
static mg_c g_c;
static mg_d g_d;
static float g_x[24 * 32], g_y[24 * 32];
int main(void) {
  int s = mg_a_forward(&g_a, g_x, 24, g_y);
  s |= mg_b_prefill(&g_b, g_x, 8, g_y);
  s |= mg_b_decode(&g_b, g_x, g_y);
  s |= mg_c_forward(&g_c, g_x, 32, g_x, 16, g_x, 16, 24, g_y, 32);
  s |= mg_d_prefill(&g_d, g_x, 8, g_y);
  s |= mg_d_decode(&g_d, g_x, g_y);
  return s;
}
""")
    cxxflags = ["-std=c++17", "-O2", "-DNDEBUG"] + shlex.split(ARM_FLAGS) + [
        "-fno-exceptions", "-fno-rtti", "-ffunction-sections", "-fdata-sections",
        "-I" + s.include, "-I" + d]
    objs = {}
    lib = [os.path.join(s.args.source_dir, "lib", f) for f in ("status.cpp", "c_api.cpp")]
    sources = lib + [merged] + [h[:-2] + ".cpp" for h in headers]
    for src in sources:
        o = os.path.join(d, "img_" + os.path.basename(src) + ".o")
        r = run([cxx] + cxxflags + ["-c", src, "-o", o])
        if r.returncode != 0:
            check(False, "arm image: compile %s" % os.path.basename(src), r.stdout[-3000:])
            return
        objs[src] = o
    r = run([cc, "-std=c11", "-O2"] + shlex.split(ARM_FLAGS) +
            ["-Wall", "-Wextra", "-Werror", "-pedantic", "-I" + s.include, "-I" + d, "-c", main_c,
             "-o", main_c + ".o"])
    if r.returncode != 0:
        check(False, "arm image: compile mg_main.c", r.stdout)
        return
    link = [cc] + shlex.split(ARM_FLAGS) + ["--specs=nano.specs", "--specs=nosys.specs",
                                            "-Wl,--gc-sections"]
    texts = {}
    for tag, layer_objs in (("one", [objs[merged]]),
                            ("four", [objs[h[:-2] + ".cpp"] for h in headers])):
        elf = os.path.join(d, "img_%s.elf" % tag)
        r = run(link + [main_c + ".o"] + layer_objs + [objs[x] for x in lib] + ["-lm", "-o", elf])
        check(r.returncode == 0, "arm image: %s file(s) of layers link with %s (a C link)"
              % (tag, os.path.basename(cc)), r.stdout[-3000:])
        if r.returncode != 0:
            return
        if nm:
            syms = run([nm, elf]).stdout
            bad = sorted({l.split()[-1] for l in syms.splitlines()
                          if any(l.split()[-1].startswith(c) for c in CXX_RUNTIME)})
            check(not bad, "arm image (%s): no C++ runtime symbol (personality, unwinder, "
                  "new/delete)" % tag, " ".join(bad))
        if size:
            out = run([size, elf]).stdout.splitlines()
            texts[tag] = int(out[1].split()[0]) if len(out) > 1 else 0
    if len(texts) == 2:
        check(texts["one"] < texts["four"],
              "arm image: the four layers in one C++ file (--cpp-from): text %d B, in four "
              "files: %d B (%d B more)" % (texts["one"], texts["four"],
                                            texts["four"] - texts["one"]))


def refusal_checks(s, cxx, flags, include_dirs):
    cases = [
        (["--name", "x", "--config", "24, 32, 3, 2, 8"], "H_kv (key/value heads) must divide H"),
        (["--name", "1x", "--config", "24, 32, 4, 2, 8"], "is not a C identifier"),
        (["--name", "x", "--kind", "layer", "--chunk", "4", "--config", "24, 32, 4, 2, 8"],
         "--chunk applies to --kind kv, latent, decoder and mlp only"),
        (["--name", "x", "--kind", "linear", "--chunk", "4", "--config", "32, 24"],
         "--chunk applies to --kind kv, latent, decoder and mlp only"),
        (["--name", "x", "--kind", "linear", "--config", "0, 24"],
         "kIn and kOut must be >= 1"),
        (["--name", "x", "--kind", "mlp", "--config", "32, 48, Activation::kSwiGlu, Rope::kYes"],
         "a building block's option is not a Bias, WeightType, Compute or"),
        (["--name", "x", "--kind", "mlp", "--chunk", "0", "--config", "32, 48, Activation::kGelu"],
         "--chunk must be at least 1"),
        (["--name", "x", "--kind", "rmsnorm", "--config", "0"], "kDim must be at least 1"),
        (["--name", "x", "--kind", "rmsnorm", "--config", "LayerNorm<32>"],
         "--config: for --kind rmsnorm give the RmsNorm's arguments"),
        (["--name", "x", "--kind", "layernorm", "--config", "Config<24, 32, 4, 2, 8>"],
         "--config: for --kind layernorm give the LayerNorm's arguments"),
        (["--name", "x", "--kind", "kv", "--chunk", "25", "--config", "24, 32, 4, 2, 8"],
         "kPrefillChunk must be in 1 .. T_max"),
        (["--name", "x", "--config", "float"], "--config: give the Config's arguments"),
        (["--name", "x", "--config", "24, 32, 4, 2, 8", "--cxx", "/nonexistent/c++"],
         "cannot run the compiler"),
        (["--config", "24, 32, 4, 2, 8"], "--name and --config are needed"),
        (["--name", "x", "--config", "24, 32, 4, 2, 8, Mask::kNone, SlidingWindow{4}"],
         "SlidingWindow is causal"),
        (["--name", "x", "--kind", "kv", "--config", "24, 32, 4, 2, 8, Mask::kNone"],
         "Mask::kNone"),
        (["--name", "x", "--kind", "latent", "--config", "24, 32, 4, 16, 7, 8, 8"],
         "d_R (the rotated part) must be even"),
        (["--name", "x", "--kind", "latent", "--config", "24, 32, 4, 16, 8, 8, 8, Bias::kYes"],
         "an option is not a QueryLatent, MaxWorkers, WeightType, CacheType or LatentPrefill"),
        (["--name", "x", "--kind", "latent", "--chunk", "25", "--config", "24, 32, 4, 16, 8, 8, 8"],
         "kPrefillChunk must be in 1 .. T_max"),
        (["--name", "x", "--kind", "latent", "--config", "Config<24, 32, 4, 2, 8>"],
         "--config: for --kind latent give the LatentConfig's arguments"),
        (["--name", "x", "--kind", "decoder", "--config", "Config<24, 32, 4, 2, 8>"],
         "--config: for --kind decoder give the DecoderConfig's arguments"),
        (["--name", "x", "--kind", "decoder", "--config", "11, 16, 2, 4, 2, 4, 24, 12, Bias::kYes"],
         "an option is not a WeightType, CacheType, Compute"),
        (["--name", "x", "--kind", "layer", "--config", "LatentConfig<24, 32, 4, 16, 8, 8, 8>"],
         "--config: give the Config's arguments"),
    ]
    out = os.path.join(s.work, "refused.h")
    for args, expect in cases:
        cmd = [sys.executable, s.tool, "--out", out] + args
        if "--cxx" not in args:
            cmd += ["--cxx", cxx, "--cxxflags=" + flags]
        cmd += [a for i in include_dirs for a in ("-I", i)]
        r = run(cmd)
        check(r.returncode == 2 and expect in r.stdout, "refused (exit 2): %s" % expect,
              "exit %d:\n%s" % (r.returncode, r.stdout[-2000:]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source-dir", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--cxx", required=True)
    p.add_argument("--cc", default="")
    p.add_argument("--cxxflags", default="")
    p.add_argument("--xsimd-include", default="")
    p.add_argument("--clang", default="")
    p.add_argument("--arm-cxx", default="")
    args = p.parse_args()
    s = Setup(args)
    inc = [args.xsimd_include] if args.xsimd_include else []
    t0 = time.time()

    target_checks(s, "host", args.cxx, args.cc, args.cxxflags,
                  ["layer", "kv", "core", "layer_q8", "kv_q8", "kv_qd8", "latent", "latent_q8",
                   "decoder", "linear", "linear_q8", "mlp", "mlp_q8", "rmsnorm", "layernorm"], inc)
    mismatch_checks(s, args.cxx, args.cxxflags, inc)
    latent_config_checks(s, args.cxx, args.cxxflags, inc)
    block_config_checks(s, args.cxx, args.cxxflags, inc)
    config_checks(s, args.cxx, args.cxxflags, inc)
    description_checks(s, args.cxx, args.cc, args.cxxflags, inc)
    cli_checks(s, args.cxx, args.cxxflags, inc)
    exceptions_checks(s, args.cxx, args.cxxflags, inc)
    merge_checks(s, "host", args.cxx, args.cxxflags, inc,
                 (args.cxxflags + " -DMICROATTN_FORCE_SCALAR=1").strip())
    refusal_checks(s, args.cxx, args.cxxflags, inc)

    if args.clang:
        clang_cc = shutil.which("clang") if os.path.basename(args.clang).startswith("clang++") \
            else ""
        target_checks(s, "clang", args.clang, clang_cc or args.cc, args.cxxflags, ["layer"], inc)
    else:
        log("skip clang++: not found")

    if args.arm_cxx:
        arm_cc = os.path.join(os.path.dirname(args.arm_cxx),
                              os.path.basename(args.arm_cxx).replace("g++", "gcc"))
        if not shutil.which(arm_cc):
            arm_cc = ""
        flags = ARM_FLAGS + " -fno-exceptions -fno-rtti"
        target_checks(s, "arm-none-eabi", args.arm_cxx, arm_cc, flags,
                      ["layer", "kv", "core", "kv_q8", "kv_qd8", "latent", "latent_q8",
                       "decoder", "linear", "linear_q8", "mlp", "mlp_q8", "rmsnorm", "layernorm"],
                      cflags=ARM_FLAGS)
        # The Cortex-M header: 32-bit pointers, scalar kernels.
        h = os.path.join(s.work, "arm-none-eabi", "glayer.h")
        if os.path.exists(h):
            text = open(h).read()
            check("(kernels: scalar)" in text and ARM_FLAGS in text,
                  "arm-none-eabi: the header records the scalar kernels and the target's flags")
            # The fingerprint is the configuration's, whatever the target.
            host = os.path.join(s.work, "host", "glayer.h")
            if os.path.exists(host):
                a, b = header_values(h, "glayer"), header_values(host, "glayer")
                check(a.get("CONFIG_ID") and a.get("CONFIG_ID") == b.get("CONFIG_ID") and
                      a.get("BYTES") != b.get("BYTES"),
                      "arm-none-eabi: CONFIG_ID %s as on the host (%s), BYTES %s vs %s"
                      % (a.get("CONFIG_ID"), b.get("CONFIG_ID"), a.get("BYTES"), b.get("BYTES")))
        config_checks_arm = ARM_FLAGS + " -fno-exceptions -fno-rtti"
        headers, merged = merge_checks(s, "arm-merge", args.arm_cxx, config_checks_arm, (),
                                       config_checks_arm + " -DMICROATTN_ARM_OTHER=1")
        arm_image_checks(s, args.arm_cxx, arm_cc, headers, merged)
    else:
        log("skip arm-none-eabi-g++: not found")

    log("%d failure(s) in %.1f s" % (len(failures), time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
