#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the C header of one microattn layer for C programs (and, optionally, the C++ file
that defines its functions, also for several layers at once).

A C program cannot instantiate a C++ template, so each layer it uses is one macro line in a
C++ file of the project (microattn/c_api.hpp):

    #include "mylayer.h"
    #include "microattn/c_api.hpp"
    MICROATTN_C_LAYER(mylayer, microattn::Config<64, 64, 4, 2, 16>);

and this tool writes mylayer.h: the object type `mylayer` (an aligned byte array that C code
places where it likes: static, a RAM section, the stack), MYLAYER_BYTES and MYLAYER_ALIGN,
the shape and mask constants (MYLAYER_MASK, MYLAYER_WINDOW, ...), the fingerprint of the
configuration (MYLAYER_CONFIG_ID) and the function prototypes. The object's size and alignment
depend on the target (tile sizes of the kernels' arch, pointer width), so the tool compiles a
probe with the TARGET's compiler and flags and reads them from the object file; nothing is run,
so a cross compiler works. The C++ file must then be built with the same compiler and flags,
as C++17 with -fno-exceptions -fno-rtti (a C program's linker has no C++ runtime): if its
object differs from the header's storage, or its Config from the one the header was made for
(any parameter: shape, mask, window, bias, options), it does not compile (a static_assert
names the layer).

    python3 tools/microattn_c.py --name mylayer --kind layer --config "64, 64, 4, 2, 16" \\
        --cxx arm-none-eabi-g++ \\
        --cxxflags="-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16" \\
        --out mylayer.h --cpp-out mylayer.cpp

Several layers in one C++ file (the kernels they share are compiled once; one file per layer
compiles them once per file): generate each header without --cpp-out, then

    python3 tools/microattn_c.py --cpp-from mylayer.h mykv.h --cpp-out microattn_layers.cpp

Kinds: layer (MultiHeadAttention: forward), kv (KvAttention: prefill, decode, truncate, reset,
length, oldest, RoPE; --chunk sets its prefill chunk), core (ScaledDotProductAttention: forward
on q, k, v), latent (LatentAttention, DeepSeek-V2's multi-head latent attention: set_weights takes
a microattn_latent_weights, set_rms_eps, prefill, decode, truncate, reset, length, export/import
of the latent rows; --config gives a LatentConfig's arguments, T_max, d_model, H, d_c, d_R,
d_nope, d_v, then QueryLatent{d_cq}, MaxWorkers{n}, WeightType::kInt8 (set_weights takes a
microattn_latent_weights_q8), CacheType::kInt8 (an int8 latent cache, NAME_CACHE_BYTES its
size) and LatentPrefill::kAbsorbed (prefill always absorbed: a smaller object), bare or with
microattn::; --chunk as kv) and decoder (Decoder: a whole LLaMA-style model from a model file, tokens in and logits out). The
building blocks, without a softmax scale, forward on M rows of any number: linear (Linear,
--config gives a LinearConfig's arguments: in, out, options; set_weights takes a
microattn_linear_weights, _q8 with WeightType::kInt8), mlp (Mlp, an MlpConfig's: d_model,
d_hidden, Activation::kSwiGlu | kGeGlu | kGelu | kGeluTanh | kRelu, options; set_weights takes a
microattn_mlp_weights or _q8; --chunk sets its rows per pass, default 16), rmsnorm (RmsNorm<d>:
--config "d"; set_weight, set_eps, eps) and layernorm (LayerNorm<d, Bias>: "d" or "d, Bias::kNo";
set_weights(g, b), set_eps, eps).
The Config may hold any option, bare or with microattn:: (Bias::kYes, Mask::kNone,
SlidingWindow{8}, MaxWorkers{2}, ...): with WeightType::kInt8 set_weights takes a
microattn_weights_q8 (int8 matrices + scales; NAME_INT8_WEIGHTS 1; with Compute::kInt8 as well
the projections run in integer arithmetic, NAME_INT8_COMPUTE 1), and a kv layer with
CacheType::kInt8 caches int8 (NAME_INT8_CACHE 1; NAME_BYTES is its smaller RAM). Pass every
flag that selects the kernels' arch: -march=... / -mcpu=... / -mfpu=...,
-DMICROATTN_FORCE_SCALAR=1, and the include folder of xsimd where it is not on the default
path (host and Linux ARM builds; bare metal needs none). A value of --cxxflags may start with
'-' (--cxxflags -march=native, or --cxxflags=-march=native).

Exit status: 0 written, 2 refused (bad arguments, or the probe does not compile: the
compiler's messages are printed, e.g. a Config's static_assert naming the parameter).
Only the Python 3 standard library is needed.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import textwrap

KINDS = {
    # kind: (ObjectOf kind, C++ class, macro)
    "layer": ("kLayer", "microattn::MultiHeadAttention", "MICROATTN_C_LAYER"),
    "kv": ("kKv", "microattn::KvAttention", "MICROATTN_C_KV_LAYER"),
    "core": ("kCore", "microattn::ScaledDotProductAttention", "MICROATTN_C_CORE"),
    "latent": ("kLatent", "microattn::LatentAttention", "MICROATTN_C_LATENT"),
    "decoder": ("kDecoder", "microattn::Decoder", "MICROATTN_C_DECODER"),
    "linear": ("kLinear", "microattn::Linear", "MICROATTN_C_LINEAR"),
    "mlp": ("kMlp", "microattn::Mlp", "MICROATTN_C_MLP"),
    "rmsnorm": ("kRmsNorm", "microattn::RmsNorm", "MICROATTN_C_RMSNORM"),
    "layernorm": ("kLayerNorm", "microattn::LayerNorm", "MICROATTN_C_LAYERNORM"),
}

# The building blocks around attention (no softmax scale, forward on M rows of any number).
BLOCK_KINDS = ("linear", "mlp", "rmsnorm", "layernorm")
# Kinds whose --chunk means something: a prefill chunk, an MLP's rows per pass.
CHUNK_KINDS = ("kv", "latent", "decoder", "mlp")
# An MLP's rows per pass without --chunk (Mlp's default kMaxRows).
MLP_DEFAULT_ROWS = 16

# The probe: the values the header needs as decimal text in a constant char array, which the
# object file stores verbatim (CMake's CheckTypeSize reads type sizes the same way). Text, not a
# compiler diagnostic, so nothing depends on the compiler's message format or locale.
PROBE = r"""
#include <cstddef>
#include "microattn/c_api.hpp"
namespace microattn_probe {
using Cfg = @CONFIG@;
using Object = ::microattn::c_api::ObjectOf<::microattn::c_api::Kind::@KIND@, Cfg, (@CHUNK@)>::type;
constexpr std::size_t kValues[] = {
    sizeof(Object), alignof(Object), @VALUES@,
    ::microattn::c_api::config_id<::microattn::c_api::Kind::@KIND@, Cfg, (@CHUNK@)>()};
struct Text {
  char c[64 + sizeof(kValues) / sizeof(kValues[0]) * 21];
};
constexpr Text make() {
  Text t{};
  std::size_t n = 0;
  for (const char* p = "MICROATTN_PROBE["; *p; ++p) t.c[n++] = *p;
  for (std::size_t i = 0; i < sizeof(kValues) / sizeof(kValues[0]); ++i) {
    char d[21] = {};
    std::size_t k = 0, v = kValues[i];
    do {
      d[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0);
    while (k > 0) t.c[n++] = d[--k];
    t.c[n++] = i + 1 < sizeof(kValues) / sizeof(kValues[0]) ? ',' : ';';
  }
  const char* a = ::microattn::arch_name();
  for (std::size_t i = 0; a[i] != '\0' && i < 32; ++i) t.c[n++] = a[i];
  t.c[n++] = ']';
  return t;
}
}  // namespace microattn_probe
extern "C" const microattn_probe::Text microattn_probe_text = microattn_probe::make();
"""

# The probe's values of each kind after sizeof and alignof (then config_id): the header's
# field name and the C++ expression.
ATTENTION_VALUES = [
    ("t_max", "Cfg::kTMax"), ("d_model", "Cfg::kDModel"), ("heads", "Cfg::kHeads"),
    ("kv_heads", "Cfg::kKvHeads"), ("d_head", "Cfg::kDHead"), ("q_dim", "Cfg::kQDim"),
    ("kv_dim", "Cfg::kKvDim"), ("out_dim", "Cfg::kOutDim"),
    ("has_out_proj", "Cfg::kHasOutProj ? 1u : 0u"), ("bias_q", "Cfg::kBiasQ ? 1u : 0u"),
    ("bias_k", "Cfg::kBiasK ? 1u : 0u"), ("bias_v", "Cfg::kBiasV ? 1u : 0u"),
    ("bias_o", "Cfg::kBiasO ? 1u : 0u"), ("has_rope", "Cfg::kHasRope ? 1u : 0u"),
    ("chunk", "(@CHUNK@)"), ("int8_weights", "Cfg::kInt8Weights ? 1u : 0u"),
    ("int8_cache", "Cfg::kInt8Cache ? 1u : 0u"), ("cache_bytes", "@CACHE_BYTES@"),
    ("max_workers", "Cfg::kMaxWorkers"), ("mask", "static_cast<std::size_t>(Cfg::kMask)"),
    ("window", "Cfg::kWindow"), ("int8_compute", "Cfg::kInt8Compute ? 1u : 0u"),
    ("weight_format", "Cfg::WeightFormat::kDesc.code()")]
LATENT_VALUES = [
    ("t_max", "Cfg::kTMax"), ("d_model", "Cfg::kDModel"), ("heads", "Cfg::kHeads"),
    ("d_latent", "Cfg::kDLatent"), ("d_rope", "Cfg::kDRope"), ("d_nope", "Cfg::kDNope"),
    ("d_v", "Cfg::kDV"), ("d_q_latent", "Cfg::kDQLatent"), ("d_qk", "Cfg::kDQk"),
    ("d_cache", "Cfg::kDCache"), ("q_dim", "Cfg::kQDim"), ("ukv_dim", "Cfg::kUkvDim"),
    ("v_dim", "Cfg::kVDim"), ("out_dim", "Cfg::kOutDim"), ("chunk", "(@CHUNK@)"),
    ("cache_bytes", "Object::kCacheBytes"),
    ("cache_bytes_per_token", "Object::kCacheBytesPerToken"),
    ("max_workers", "Cfg::kMaxWorkers"), ("int8_weights", "Cfg::kInt8Weights ? 1u : 0u"),
    ("int8_cache", "Cfg::kInt8Cache ? 1u : 0u"),
    ("absorbed_only", "Cfg::kAbsorbedOnly ? 1u : 0u"),
    ("panel16", "::microattn::LatentWeights<Cfg>::panel_fits() ? 1u : 0u"),
    ("weight_format", "Cfg::WeightFormat::kDesc.code()")]

DECODER_VALUES = [
    ("vocab", "Cfg::kVocab"), ("d_model", "Cfg::kDModel"), ("layers", "Cfg::kLayers"),
    ("heads", "Cfg::Attn::kHeads"), ("kv_heads", "Cfg::Attn::kKvHeads"),
    ("d_head", "Cfg::Attn::kDHead"), ("d_hidden", "Cfg::kDHidden"), ("t_max", "Cfg::kTMax"),
    ("chunk", "(@CHUNK@)"), ("int8_weights", "Cfg::kInt8Weights ? 1u : 0u"),
    ("int8_cache", "Cfg::Attn::kInt8Cache ? 1u : 0u"), ("tied_head", "Cfg::kTiedHead ? 1u : 0u"),
    ("max_workers", "Cfg::kMaxWorkers"), ("cache_bytes", "Object::kCacheBytes")]


LINEAR_VALUES = [
    ("in", "Cfg::kIn"), ("out", "Cfg::kOut"), ("bias", "Cfg::kBias ? 1u : 0u"),
    ("int8_weights", "Cfg::kInt8Weights ? 1u : 0u"), ("max_workers", "Cfg::kMaxWorkers"),
    ("weight_format", "Cfg::WeightFormat::kDesc.code()")]

MLP_VALUES = [
    ("d_model", "Cfg::kDModel"), ("d_hidden", "Cfg::kDHidden"),
    ("activation", "static_cast<std::size_t>(Cfg::kAct)"), ("gated", "Cfg::kGated ? 1u : 0u"),
    ("bias", "Cfg::kBias ? 1u : 0u"), ("int8_weights", "Cfg::kInt8Weights ? 1u : 0u"),
    ("max_workers", "Cfg::kMaxWorkers"), ("max_rows", "(@CHUNK@)"),
    ("weight_format", "Cfg::WeightFormat::kDesc.code()")]

NORM_VALUES = [
    ("d", "::microattn::c_api::NormShape<Cfg>::kDim"),
    ("bias", "::microattn::c_api::NormShape<Cfg>::kBias ? 1u : 0u")]

# microattn::Activation's values, as the MLP header names them.
ACTIVATIONS = ["SwiGLU (silu(x W_gate) * x W_up)", "GeGLU (gelu(x W_gate) * x W_up)",
               "GELU (erf)", "GELU (tanh approximation)", "ReLU"]


def probe_values(kind):
    return {"latent": LATENT_VALUES, "decoder": DECODER_VALUES, "linear": LINEAR_VALUES,
            "mlp": MLP_VALUES, "rmsnorm": NORM_VALUES,
            "layernorm": NORM_VALUES}.get(kind, ATTENTION_VALUES)


def probe_fields(kind):
    return ["bytes", "align"] + [f for f, _ in probe_values(kind)] + ["config_id"]


class Refused(Exception):
    pass


# Config's option names as a user writes them inside `using namespace microattn;`.
OPTION_NAMES = (r"Bias\s*::|OutProj\s*::|OutDim\s*\{|Rope\s*::|WeightType\s*::|Compute\s*::|"
                r"CacheType\s*::|Mask\s*::|SlidingWindow\s*\{|MaxWorkers\s*\{")


def normalize_config(text, kind="layer"):
    """'64, 64, 4, 2, 16, Bias::kYes' or 'Config<...>' -> 'microattn::Config<...>'; for --kind
    latent '32, 64, 4, 32, 8, 16, 16, QueryLatent{24}' or 'LatentConfig<...>' ->
    'microattn::LatentConfig<...>'."""
    c = " ".join(text.split())
    if not c:
        raise Refused("--config is empty")
    if kind == "latent":
        return normalize_latent_config(c, text)
    if kind == "decoder":
        return normalize_decoder_config(c, text)
    if kind in BLOCK_KINDS:
        return normalize_block_config(c, text, kind)
    if c[0].isdigit():
        c = "microattn::Config<%s>" % c
    c = re.sub(r"(?<![\w:])(Config\s*<|" + OPTION_NAMES + ")", r"microattn::\1", c)
    if not c.startswith("microattn::Config<") or not c.endswith(">"):
        raise Refused("--config: give the Config's arguments ('64, 64, 4, 2, 16, "
                      "microattn::Bias::kYes') or the type 'microattn::Config<...>', not %r" % text)
    return c


def normalize_latent_config(c, text):
    if c[0].isdigit():
        c = "microattn::LatentConfig<%s>" % c
    # The other kinds' option names too, so that one given here meets LatentConfig's own
    # static_assert (which names the options it takes) rather than an unknown name.
    c = re.sub(r"(?<![\w:])(LatentConfig\s*<|QueryLatent\s*\{|LatentPrefill\s*::|" + OPTION_NAMES +
               ")",
               r"microattn::\1", c)
    if not c.startswith("microattn::LatentConfig<") or not c.endswith(">"):
        raise Refused("--config: for --kind latent give the LatentConfig's arguments ('32, 64, "
                      "4, 32, 8, 16, 16, QueryLatent{24}': T_max, d_model, H, d_c, d_R, d_nope, "
                      "d_v, options) or the type 'microattn::LatentConfig<...>', not %r" % text)
    return c


def normalize_decoder_config(c, text):
    if c[0].isdigit():
        c = "microattn::DecoderConfig<%s>" % c
    c = re.sub(r"(?<![\w:])(DecoderConfig\s*<|LmHead\s*::|Activation\s*::|" + OPTION_NAMES +
               ")", r"microattn::\1", c)
    if not c.startswith("microattn::DecoderConfig<") or not c.endswith(">"):
        raise Refused("--config: for --kind decoder give the DecoderConfig's arguments ('100, "
                      "128, 2, 4, 2, 32, 256, 128, LmHead::kTied': vocab, d_model, layers, H, "
                      "H_kv, d_head, d_hidden, T_max, options) or the type "
                      "'microattn::DecoderConfig<...>', not %r" % text)
    return c


# Each block kind: its configuration type, extra names to qualify, and what --config takes.
BLOCK_CONFIGS = {
    "linear": ("LinearConfig", "", "'64, 32, Bias::kYes': in, out, options (Bias, WeightType, "
               "MaxWorkers)"),
    "mlp": ("MlpConfig", r"Activation\s*::|", "'64, 256, Activation::kSwiGlu': d_model, "
            "d_hidden, activation (kSwiGlu, kGeGlu, kGelu, kGeluTanh, kRelu), options (Bias, "
            "WeightType, MaxWorkers)"),
    "rmsnorm": ("RmsNorm", "", "'64': the width d"),
    "layernorm": ("LayerNorm", "", "'64' or '64, Bias::kNo': the width d and the bias "
                  "(default Bias::kYes)"),
}


def normalize_block_config(c, text, kind):
    cls, extra, what = BLOCK_CONFIGS[kind]
    if c[0].isdigit():
        c = "microattn::%s<%s>" % (cls, c)
    c = re.sub(r"(?<![\w:])(%s\s*<|%s%s)" % (cls, extra, OPTION_NAMES), r"microattn::\1", c)
    if not c.startswith("microattn::%s<" % cls) or not c.endswith(">"):
        raise Refused("--config: for --kind %s give the %s's arguments (%s) or the type "
                      "'microattn::%s<...>', not %r" % (kind, cls, what, cls, text))
    return c


def default_include_dir():
    """microattn's include folder: beside the source tree's tools/ (../include), or an installed
    package's (this file in <prefix>/share/microattn/tools, the headers in <prefix>/include)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for up in (("..",), ("..", "..", "..")):
        d = os.path.normpath(os.path.join(here, *up, "include"))
        if os.path.isfile(os.path.join(d, "microattn", "c_api.hpp")):
            return d
    return None


def probe(args, config, chunk_expr):
    """Compiles the probe for the target and returns its values as a dict (+ 'arch')."""
    kind = KINDS[args.kind][0]
    values_expr = ", ".join(e for _, e in probe_values(args.kind))
    src = (PROBE.replace("@VALUES@", values_expr).replace("@CONFIG@", config)
           .replace("@KIND@", kind).replace("@CHUNK@", chunk_expr)
           .replace("@CACHE_BYTES@", "Object::kCacheBytes" if args.kind == "kv" else "0"))
    includes = []
    if args.microattn_include:
        includes.append("-I" + args.microattn_include)
    includes += ["-I" + d for d in args.include]
    with tempfile.TemporaryDirectory(prefix="microattn_c_") as tmp:
        cpp = os.path.join(tmp, "probe.cpp")
        obj = os.path.join(tmp, "probe.o")
        with open(cpp, "w") as f:
            f.write(src)
        # -std first so the user's flags may change it; -fno-lto last: an LTO object holds
        # compiler IR (compressed), not the array's bytes. -w: the probe's own warnings are
        # nobody's business (-Werror in the user's flags must not stop it).
        cmd = ([args.cxx, "-std=c++17"] + shlex.split(args.cxxflags) + includes +
               ["-fno-lto", "-w", "-c", cpp, "-o", obj])
        env = dict(os.environ, LC_ALL="C")
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                               universal_newlines=True)
        except OSError as e:
            raise Refused("cannot run the compiler %r: %s" % (args.cxx, e))
        if r.returncode != 0 or not os.path.isfile(obj):
            raise Refused("the probe for %s does not compile with\n  %s\n%s" %
                          (config, " ".join(shlex.quote(c) for c in cmd), r.stdout.rstrip()))
        with open(obj, "rb") as f:
            data = f.read()
    m = re.search(rb"MICROATTN_PROBE\[([0-9,]+);([\x21-\x7e]{0,32})\]", data)
    if not m:
        raise Refused("compiled the probe with %s, but its object file holds no "
                      "MICROATTN_PROBE text (an unusual object format?)" % args.cxx)
    values = [int(v) for v in m.group(1).decode().split(",")]
    fields = probe_fields(args.kind)
    if len(values) != len(fields):
        raise Refused("probe: %d values, expected %d" % (len(values), len(fields)))
    out = dict(zip(fields, values))
    out["arch"] = m.group(2).decode()
    if out["bytes"] == 0 or out["align"] == 0 or out["bytes"] % out["align"] != 0:
        raise Refused("probe: implausible size %d / alignment %d" % (out["bytes"], out["align"]))
    return out


def compiler_version(cxx):
    try:
        r = subprocess.run([cxx, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           universal_newlines=True, env=dict(os.environ, LC_ALL="C"))
        lines = r.stdout.splitlines()
        return lines[0].strip() if lines else ""
    except OSError:
        return ""


def macro_line(args, config):
    if args.kind == "kv" and args.chunk is not None:
        return "MICROATTN_C_KV_LAYER_CHUNKED(%s, %d, %s);" % (args.name, args.chunk, config)
    if args.kind == "latent" and args.chunk is not None:
        return "MICROATTN_C_LATENT_CHUNKED(%s, %d, %s);" % (args.name, args.chunk, config)
    if args.kind == "decoder" and args.chunk is not None:
        return "MICROATTN_C_DECODER_CHUNKED(%s, %d, %s);" % (args.name, args.chunk, config)
    if args.kind == "mlp" and args.chunk is not None:
        return "MICROATTN_C_MLP_CHUNKED(%s, %d, %s);" % (args.name, args.chunk, config)
    if args.kind in ("rmsnorm", "layernorm"):
        # The norm's macro takes the class's template arguments: d (, Bias).
        config = config[config.index("<") + 1:-1]
    return "%s(%s, %s);" % (KINDS[args.kind][2], args.name, config)


def c_comment_safe(s):
    return s.replace("*/", "* /")


def attends(args, v, N):
    """What each token sees, in words, for the header's comments."""
    if v["mask"] == 1:
        return "bidirectional (Mask::kNone): every token sees all T tokens"
    if v["window"]:
        return ("causal sliding window (SlidingWindow{%d}): token i sees tokens i - %s_WINDOW + 1"
                " .. i" % (v["window"], N))
    return "causal: token i sees tokens 0 .. i"


def comment(w, text):
    """One C comment, wrapped to the width of the rest of the header."""
    lines = textwrap.wrap(text, 90)
    for i, line in enumerate(lines):
        w(("/* " if i == 0 else " * ") + line + (" */" if i == len(lines) - 1 else ""))


def target_and_glue(w, args, config, v, header_name):
    """The end of a header's first comment (the target, the C++ line that defines the
    functions, the status rules), its include guard and its includes."""
    N = args.name.upper()
    # Quoted where a flag needs it, so that --cpp-from reads the same flags back.
    flags = " ".join(shlex.quote(f) for f in shlex.split(args.cxxflags))
    version = compiler_version(args.cxx)
    w(" *   target:  %s%s (kernels: %s)" % (c_comment_safe(shlex.quote(args.cxx)),
                                             (" " + c_comment_safe(flags)) if flags else "",
                                             v["arch"]))
    if version:
        w(" *            %s" % c_comment_safe(version))
    w(" * The functions are defined by this line in a C++ file built with that compiler and")
    w(" * those flags (C++17, -fno-exceptions -fno-rtti), which does not compile if this header")
    w(" * does not match its object or its configuration:")
    w(" *   #include \"%s\"" % header_name)
    w(" *   #include \"microattn/c_api.hpp\"")
    w(" *   %s" % c_comment_safe(macro_line(args, config)))
    w(" * Statuses as the C++ methods (README.md: Status codes; docs/numeric-contract.md: Buffer")
    w(" * overlap); on anything but MICROATTN_OK nothing was written. A NULL obj is")
    w(" * MICROATTN_NULL_POINTER, one not aligned to %s_ALIGN MICROATTN_BAD_ARGUMENT. */" % N)
    guard = "MICROATTN_C_%s_H" % N
    w("#ifndef %s" % guard)
    w("#define %s" % guard)
    w("")


def storage_struct_and_extern_c(w, n, N):
    """The object's storage struct (NAME_BYTES, NAME_ALIGN) and the opening of the functions'
    extern "C" block."""
    w("typedef struct %s {" % n)
    w("  MICROATTN_ALIGNAS(%s_ALIGN) unsigned char opaque[%s_BYTES];" % (N, N))
    w("} %s;" % n)
    w("")
    w("#ifdef __cplusplus")
    w("extern \"C\" {")
    w("#endif")
    w("")


def close_header(L, N):
    """Closes the extern "C" block and the include guard MICROATTN_C_<N>_H; the header's text."""
    L += ["", "#ifdef __cplusplus", "} /* extern \"C\" */", "#endif", "",
          "#endif /* MICROATTN_C_%s_H */" % N]
    return "\n".join(L) + "\n"


def header_opening(w, header_name, what, n):
    """The first two lines of a header's comment: its file, what it is the C interface of (a
    layer, model or block) and its name, and that it is generated."""
    w("/* %s: C interface of the microattn %s '%s'. Generated by tools/microattn_c.py;"
      % (header_name, what, n))
    w(" * do not edit: regenerate it when the configuration, the target or its flags change.")


def includes_and_size(w, N, v, what, stdint=False):
    """The header's includes (stdint.h too with stdint) and NAME_BYTES, NAME_ALIGN: all the RAM
    the object of a `what` (layer, model, block) uses."""
    w("#include <stddef.h>")
    if stdint:
        w("#include <stdint.h>")
    w("")
    w("#include \"microattn/microattn.h\"")
    w("")
    w("/* Bytes and alignment of the object: all the RAM the %s uses (weights are views). */"
      % what)
    w("#define %s_BYTES %d" % (N, v["bytes"]))
    w("#define %s_ALIGN %d" % (N, v["align"]))


def config_id_macros(w, n, N, v):
    """NAME_CONFIG_ID, the configuration's fingerprint, and MICROATTN_C_CONFIG_ID_name, which
    the C++ line checks; then a blank line."""
    w("#define %s_CONFIG_ID %du" % (N, v["config_id"]))
    w("#define MICROATTN_C_CONFIG_ID_%s %s_CONFIG_ID" % (n, N))
    w("")


def init_prototype(w, n):
    """The prototype of name_init (zeroes an object), then a blank line."""
    w("/* Zeroes *obj (for an object on the stack or one to reuse; NULL: nothing). */")
    w("void %s_init(%s* obj);" % (n, n))
    w("")


def header_text(args, config, v, header_name):
    """The header of any --kind: here the attention layers (layer, kv, core); the others in
    latent_header_text, decoder_header_text and block_header_text."""
    if args.kind in BLOCK_KINDS:
        return block_header_text(args, config, v, header_name)
    if args.kind == "latent":
        return latent_header_text(args, config, v, header_name)
    if args.kind == "decoder":
        return decoder_header_text(args, config, v, header_name)
    n, N = args.name, args.name.upper()
    ring = args.kind == "kv" and v["window"] > 0
    L = []
    w = L.append
    attention_intro(w, args, config, v, header_name, ring)
    includes_and_size(w, N, v, "layer")
    if args.kind == "kv":
        w("#define %s_CACHE_BYTES %d /* of which the K/V cache%s */"
          % (N, v["cache_bytes"], " (int8 values + scales)" if v["int8_cache"] else ""))
    w("")
    w("/* Fingerprint of the configuration (kind, every Config parameter, prefill chunk; the same")
    w(" * on every target): the C++ line checks it, so another Config does not compile. */")
    config_id_macros(w, n, N, v)
    attention_shape(w, args, N, v, ring)
    w("")
    w("/* The object. Place it anywhere (static, a RAM section, the stack) aligned to %s_ALIGN:"
      % N)
    w(" * all-zero bytes are a ready object (default scale 1/sqrt(d_head)%s), so a static" %
      ("" if args.kind == "core" else
       ", no weights, RoPE off, empty cache" if args.kind == "kv" else ", no weights, RoPE off"))
    w(" * needs no init call. */")
    storage_struct_and_extern_c(w, n, N)
    attention_settings(w, args, n, N, v)
    if args.kind == "layer":
        layer_forward(w, n, N, v)
    elif args.kind == "kv":
        kv_functions(w, n, N, v, ring)
    else:
        core_forward(w, n, N, v)
    return close_header(L, N)


def attention_intro(w, args, config, v, header_name, ring):
    """An attention layer's first comment (its object, what it attends, its cache and weights,
    then target_and_glue's end of it) and its include guard."""
    n, N = args.name, args.name.upper()
    header_opening(w, header_name, "layer", n)
    w(" *   object:  %s<%s%s>" % (KINDS[args.kind][1], config,
                                 ", DefaultArch, %d" % v["chunk"] if args.kind == "kv" else ""))
    w(" *   attends: %s" % attends(args, v, N))
    if args.kind == "kv":
        if ring:
            w(" *   cache:   a ring of the last %d tokens (W + prefill chunk - 1): a stream of any"
              % (v["window"] + v["chunk"] - 1))
            w(" *            length, never MICROATTN_CACHE_FULL%s" %
              (", int8" if v["int8_cache"] else ""))
        else:
            w(" *   cache:   %d tokens in total (then MICROATTN_CACHE_FULL)%s"
              % (v["t_max"], ", int8" if v["int8_cache"] else ""))
    if args.kind != "core":
        w(" *   weights: %s" % ("int8 + fp32 scales (microattn_weights_q8)" if v["int8_weights"]
                                else "fp32 (microattn_weights)"))
    target_and_glue(w, args, config, v, header_name)


def attention_shape(w, args, N, v, ring):
    """An attention layer's shape and option macros (NAME_T_MAX .. NAME_PREFILL_CHUNK), under
    their comment."""
    if ring:
        w("/* Shape. A call takes T = 1 .. %s_T_MAX tokens; the cache, a ring, takes any number"
          % N)
        w(" * in total. */")
    elif args.kind == "kv":
        w("/* Shape. Token counts T are 1 .. %s_T_MAX (for the KV cache: in total). */" % N)
    else:
        w("/* Shape. Token counts T are 1 .. %s_T_MAX. */" % N)
    w("#define %s_T_MAX %d" % (N, v["t_max"]))
    w("#define %s_MAX_WORKERS %d /* most workers set_executor takes (Config option MaxWorkers) */"
      % (N, v["max_workers"]))
    if args.kind != "core":
        w("#define %s_D_MODEL %d /* row length of x */" % (N, v["d_model"]))
    w("#define %s_HEADS %d" % (N, v["heads"]))
    w("#define %s_KV_HEADS %d" % (N, v["kv_heads"]))
    w("#define %s_D_HEAD %d" % (N, v["d_head"]))
    if args.kind == "core":
        w("#define %s_Q_DIM %d /* H * d_head: width of q and out */" % (N, v["q_dim"]))
        w("#define %s_KV_DIM %d /* H_kv * d_head: width of k and v */" % (N, v["kv_dim"]))
    else:
        w("#define %s_Q_DIM %d /* H * d_head: outputs of w_q, length of b_q */" % (N, v["q_dim"]))
        w("#define %s_KV_DIM %d /* H_kv * d_head: outputs of w_k and w_v */" % (N, v["kv_dim"]))
        w("#define %s_OUT_DIM %d /* row length of y */" % (N, v["out_dim"]))
        w("#define %s_HAS_OUT_PROJ %d /* w_o needed */" % (N, v["has_out_proj"]))
        w("#define %s_BIAS_Q %d /* b_q needed */" % (N, v["bias_q"]))
        w("#define %s_BIAS_K %d" % (N, v["bias_k"]))
        w("#define %s_BIAS_V %d" % (N, v["bias_v"]))
        w("#define %s_BIAS_O %d" % (N, v["bias_o"]))
        w("#define %s_HAS_ROPE %d /* set_rope can enable RoPE (Config option Rope::kYes) */"
          % (N, v["has_rope"]))
        w("#define %s_INT8_WEIGHTS %d /* WeightType::kInt8: set_weights takes "
          "microattn_weights_q8 */" % (N, v["int8_weights"]))
        w("#define %s_INT8_COMPUTE %d /* Compute::kInt8: projections in integer arithmetic */"
          % (N, v["int8_compute"]))
        weight_format_define(w, N, v)
    w("#define %s_MASK %d /* microattn::Mask: 0 causal (a window is causal), 1 none */"
      % (N, v["mask"]))
    w("#define %s_WINDOW %d /* SlidingWindow{W}: token i sees i - W + 1 .. i; 0: no window */"
      % (N, v["window"]))
    if args.kind == "kv":
        w("#define %s_INT8_CACHE %d /* CacheType::kInt8: K and V cached as int8 + scales */"
          % (N, v["int8_cache"]))
        w("#define %s_PREFILL_CHUNK %d /* tokens prefill processes at a time */"
          % (N, v["chunk"]))


FORMAT_NAMES = {0x0: "MICROATTN_FORMAT_F32", 0x10801: "MICROATTN_FORMAT_QC8",
                0x1002: "MICROATTN_FORMAT_F16", 0x1003: "MICROATTN_FORMAT_BF16",
                0x5020801: "MICROATTN_FORMAT_QG8_32", 0x6020801: "MICROATTN_FORMAT_QG8_64",
                0x7020801: "MICROATTN_FORMAT_QG8_128"}


def weight_format_define(w, N, v):
    """NAME_WEIGHT_FORMAT: the format every microattn_matrix given to NAME_set_matrices has."""
    code = v["weight_format"]
    w("#define %s_WEIGHT_FORMAT 0x%xu /* %s: each microattn_matrix's format */"
      % (N, code, FORMAT_NAMES.get(code, "microattn::StorageFormat::code()")))


def set_matrices_prototype(w, n, N, struct):
    """NAME_set_matrices: the weights as one microattn_matrix per matrix, in any format."""
    comment(w, "The same from one microattn_matrix per matrix (%s): MICROATTN_OK, the "
            "statuses above, or MICROATTN_BAD_ARGUMENT when a matrix the layer uses has "
            "another format than %s_WEIGHT_FORMAT." % (struct, N))
    w("microattn_status %s_set_matrices(%s* obj, const %s* w);" % (n, n, struct))


def attention_settings(w, args, n, N, v):
    """An attention layer's init, scale and executor prototypes, and (not core) its weights and
    RoPE ones."""
    init_prototype(w, n)
    w("/* Softmax scale for every later call (default 1/sqrt(d_head)): MICROATTN_OK or")
    w(" * MICROATTN_BAD_SCALE (not finite, or |scale| > FLT_MAX / log2(e)). */")
    w("microattn_status %s_set_scale(%s* obj, float scale);" % (n, n))
    w("/* The scale in use (0 for a NULL obj). */")
    w("float %s_scale(const %s* obj);" % (n, n))
    w("")
    w("/* Splits every later call over ex's workers (microattn_executor; copied): MICROATTN_OK,")
    w(" * MICROATTN_NULL_POINTER (ex NULL) or MICROATTN_BAD_ARGUMENT (more than %s_MAX_WORKERS"
      % N)
    w(" * workers, or workers > 1 without run; nothing changed). MICROATTN_EXECUTOR_NONE: the")
    w(" * calling thread only. */")
    w("microattn_status %s_set_executor(%s* obj, const microattn_executor* ex);" % (n, n))
    w("")
    if args.kind == "core":
        return
    if v["int8_weights"]:
        w("/* Points the layer at int8 weights and their scales (views: the arrays must")
        w(" * outlive its use; microattn_quantize_int8() makes them). MICROATTN_OK,")
        w(" * MICROATTN_NULL_POINTER (w or a pointer the layer needs is NULL, a scale array")
        w(" * included) or MICROATTN_BAD_ARGUMENT (an unknown layout, or PANEL16 where d_head")
        w(" * or W_O's width is not a multiple of 16). */")
        w("microattn_status %s_set_weights(%s* obj, const microattn_weights_q8* w);"
          % (n, n))
    else:
        w("/* Points the layer at weights (views: the arrays must outlive its use). "
          "MICROATTN_OK,")
        w(" * MICROATTN_NULL_POINTER (w or a pointer the layer needs is NULL) or")
        w(" * MICROATTN_BAD_ARGUMENT (an unknown layout, or PANEL16 where d_head or W_O's "
          "width")
        w(" * is not a multiple of 16). */")
        w("microattn_status %s_set_weights(%s* obj, const microattn_weights* w);" % (n, n))
    set_matrices_prototype(w, n, N, "microattn_layer_matrices")
    w("")
    if args.kind == "kv":
        w("/* Rotary embeddings on Q and K, only while the cache is empty. MICROATTN_OK, or")
    else:
        w("/* Rotary embeddings on Q and K for every later forward. MICROATTN_OK, or")
    w(" * MICROATTN_BAD_ARGUMENT: enabled without %s_HAS_ROPE, an odd or too large" % N)
    w(" * rotary_dims, a base not finite or <= 0, an unknown pairing%s. */"
      % (", a cache that is not empty" if args.kind == "kv" else ""))
    w("microattn_status %s_set_rope(%s* obj, const microattn_rope* rope);" % (n, n))
    w("/* The RoPE setting in use (off for a NULL obj). */")
    w("microattn_rope %s_rope(const %s* obj);" % (n, n))
    w("")


def layer_forward(w, n, N, v):
    """The prototype of a --kind layer's forward, under its comment."""
    w("/* y[T][%s_OUT_DIM] = attention of x[T][%s_D_MODEL], T = 1 .. %s_T_MAX, %s."
      % (N, N, N, "bidirectional" if v["mask"] == 1 else
         "causal sliding window" if v["window"] else "causal"))
    w(" * With W_O y may alias x; y must not overlap a weight array. */")
    w("microattn_status %s_forward(%s* obj, const float* x, size_t T, float* y);" % (n, n))


def kv_functions(w, n, N, v, ring):
    """A --kind kv layer's cache functions (prefill, decode, truncate, reset, length, oldest,
    export and import of the cache); ring: a sliding window's ring cache."""
    if ring:
        w("/* Appends T = 1 .. %s_T_MAX tokens x[T][%s_D_MODEL] and writes their outputs"
          % (N, N))
        w(" * y[T][%s_OUT_DIM]; token p sees tokens p - %s_WINDOW + 1 .. p. The ring never"
          % (N, N))
        w(" * fills: no MICROATTN_CACHE_FULL. */")
    else:
        w("/* Appends T tokens x[T][%s_D_MODEL] to the cache and writes their outputs" % N)
        w(" * y[T][%s_OUT_DIM]: MICROATTN_CACHE_FULL past %s_T_MAX tokens in total. */"
          % (N, N))
    w("microattn_status %s_prefill(%s* obj, const float* x, size_t T, float* y);" % (n, n))
    if ring:
        w("/* Appends one token x[%s_D_MODEL], writes y[%s_OUT_DIM] (positions grow without" %
          (N, N))
        w(" * limit). */")
    else:
        w("/* Appends one token x[%s_D_MODEL], writes y[%s_OUT_DIM]: MICROATTN_CACHE_FULL once"
          % (N, N))
        w(" * %s_T_MAX tokens are cached. */" % N)
    w("microattn_status %s_decode(%s* obj, const float* x, float* y);" % (n, n))
    if ring:
        comment(w, "Forgets the tokens at positions >= length. MICROATTN_BAD_ARGUMENT if "
                "length > the current length, or if the ring has overwritten a token position "
                "`length` would see (0 < length and length - %s_WINDOW + 1 < %s_oldest(obj)): "
                "a rollback reaches back at most %s_PREFILL_CHUNK tokens from the furthest "
                "position written, fewer after earlier truncates. length 0 is always "
                "accepted (as reset)." % (N, n, N))
    else:
        w("/* Forgets the tokens at positions >= length (MICROATTN_BAD_ARGUMENT if length >")
        w(" * the current length). */")
    w("microattn_status %s_truncate(%s* obj, size_t length);" % (n, n))
    w("/* Empties the cache (weights, RoPE and scale stay). */")
    w("microattn_status %s_reset(%s* obj);" % (n, n))
    w("/* Tokens in the cache: the position of the next one (0 for a NULL obj). */")
    w("size_t %s_length(const %s* obj);" % (n, n))
    if ring:
        w("/* The oldest position the ring still holds (positions oldest .. length - 1 are")
        w(" * held; 0 for a NULL obj). */")
    else:
        w("/* The oldest position held: 0 (a layer without a window keeps every token). */")
    w("size_t %s_oldest(const %s* obj);" % (n, n))
    w("/* Copies the cached keys and values of tokens first .. first + n - 1 out, k and v")
    w(" * [n][%s_KV_DIM] each, and describes them in *info (MICROATTN_BAD_ARGUMENT: n == 0"
      % N)
    w(" * or past length()%s)%s. */" % (", or first < %s_oldest(obj)" % n if ring else "",
                                       ": an int8 cache's values dequantised (scale * q)"
                                       if v["int8_cache"] else ""))
    w("microattn_status %s_export_cache(const %s* obj, size_t first, size_t n, float* k,"
      % (n, n))
    w("    float* v, microattn_cache_slice* info);")
    comment(w, "Appends an exported slice as if it had been prefilled; only where it "
            "continues this cache (info->first == length()) with this shape and RoPE "
            "(MICROATTN_BAD_ARGUMENT)%s.%s" %
            ("" if ring else ", MICROATTN_CACHE_FULL past T_max",
             " An int8 cache quantises the rows as it does new tokens."
             if v["int8_cache"] else ""))
    w("microattn_status %s_import_cache(%s* obj, const microattn_cache_slice* info," % (n, n))
    w("    const float* k, const float* v);")


def core_forward(w, n, N, v):
    """The prototype of a --kind core's forward on q, k and v, under its comment."""
    mask = ("(no mask: every query sees all T keys)" if v["mask"] == 1 else
            "+ sliding-window mask (query i sees keys i - %s_WINDOW + 1 .. i)" % N
            if v["window"] else "+ causal mask")
    comment(w, "out = softmax(scale * Q_h K_g^T %s) V_g for every query head h, g = h / "
            "(H / H_kv): q[T][ldq], k[T][ldk], v[T][ldv], out[T][ldo] floats, head h at "
            "columns h * %s_D_HEAD ..; ldq, ldo >= %s_Q_DIM, ldk, ldv >= %s_KV_DIM. out must "
            "not overlap q, k or v." % (mask, N, N, N))
    w("microattn_status %s_forward(%s* obj, const float* q, size_t ldq, const float* k,"
      % (n, n))
    w("    size_t ldk, const float* v, size_t ldv, size_t T, float* out, size_t ldo);")


def latent_header_text(args, config, v, header_name):
    """The header of a --kind latent layer (LatentAttention)."""
    n, N = args.name, args.name.upper()
    L = []
    w = L.append
    header_opening(w, header_name, "layer", n)
    w(" *   object:  %s<%s, DefaultArch, %d>" % (KINDS["latent"][1], config, v["chunk"]))
    w(" *   attends: causal multi-head latent attention (DeepSeek-V2's MLA): token i sees tokens"
      " 0 .. i")
    w(" *   cache:   %d tokens in total (then MICROATTN_CACHE_FULL), one latent row [c_KV | k_R]"
      % v["t_max"])
    w(" *            of %s a token" % ("%s_D_CACHE int8 values and two fp32 scales (c_KV's, k_R's)"
                                     % N if v["int8_cache"] else "%s_D_CACHE floats" % N))
    w(" *   weights: %s" % ("int8 + fp32 scales (microattn_latent_weights_q8)" if v["int8_weights"]
                            else "fp32 (microattn_latent_weights)"))
    target_and_glue(w, args, config, v, header_name)
    includes_and_size(w, N, v, "layer")
    w("#define %s_CACHE_BYTES %d /* of which the latent cache%s */"
      % (N, v["cache_bytes"], " (int8 values + scales)" if v["int8_cache"] else ""))
    w("#define %s_CACHE_BYTES_PER_TOKEN %d /* %s */"
      % (N, v["cache_bytes_per_token"], "d_c + d_R + 8" if v["int8_cache"] else "4 * (d_c + d_R)"))
    w("")
    w("/* Fingerprint of the configuration (kind, every LatentConfig parameter, prefill chunk; the")
    w(" * same on every target): the C++ line checks it, so another LatentConfig does not"
      " compile. */")
    config_id_macros(w, n, N, v)
    latent_shape(w, N, v)
    w("")
    w("/* The object. Place it anywhere (static, a RAM section, the stack) aligned to %s_ALIGN:"
      % N)
    w(" * all-zero bytes are a ready object (default scale 1/sqrt(d_nope + d_R), RMSNorm epsilon")
    w(" * 1e-6, no weights, RoPE off, empty cache), so a static needs no init call. */")
    storage_struct_and_extern_c(w, n, N)
    latent_settings(w, n, N, v)
    latent_cache_functions(w, n, N, v)
    return close_header(L, N)


def latent_shape(w, N, v):
    w("/* Shape (LatentConfig<T_max, d_model, H, d_c, d_R, d_nope, d_v, options>). Token counts")
    w(" * T are 1 .. %s_T_MAX (for the cache: in total). */" % N)
    for key, name, what in (
            ("t_max", "T_MAX", ""),
            ("max_workers", "MAX_WORKERS", "most workers set_executor takes (MaxWorkers)"),
            ("d_model", "D_MODEL", "row length of x and y"),
            ("heads", "HEADS", "query heads H"),
            ("d_latent", "D_LATENT", "d_c: width of the key/value latent c_KV, of g_kv"),
            ("d_rope", "D_ROPE", "d_R: the rotated key k_R (shared) and each head's q_R"),
            ("d_nope", "D_NOPE", "d_nope: each head's unrotated query/key width"),
            ("d_v", "D_V", "d_v: each head's value width"),
            ("d_q_latent", "D_Q_LATENT", "d_cq (QueryLatent{d_cq}): w_dq, g_q, w_uq needed; "
             "0: w_q"),
            ("d_qk", "D_QK", "d_nope + d_R: the softmax scale's d"),
            ("d_cache", "D_CACHE", "d_c + d_R: a cached row, floats"),
            ("q_dim", "Q_DIM", "H * (d_nope + d_R): outputs of w_q / w_uq"),
            ("ukv_dim", "UKV_DIM", "H * (d_nope + d_v): outputs of w_ukv"),
            ("v_dim", "V_DIM", "H * d_v: inputs of w_o"),
            ("out_dim", "OUT_DIM", "row length of y (d_model)"),
            ("chunk", "PREFILL_CHUNK", "tokens prefill processes at a time"),
            ("int8_weights", "INT8_WEIGHTS", "WeightType::kInt8: set_weights takes "
             "microattn_latent_weights_q8"),
            ("int8_cache", "INT8_CACHE", "CacheType::kInt8: latent rows cached as int8 + scales"),
            ("absorbed_only", "ABSORBED_ONLY", "LatentPrefill::kAbsorbed: prefill always absorbed, "
             "no unabsorbed staging in NAME_BYTES"),
            ("panel16", "PANEL16", "set_weights takes PANEL16 (widths in panels of 16)")):
        w("#define %s_%s %d%s" % (N, name, v[key], " /* %s */" % what if what else ""))
    weight_format_define(w, N, v)


def latent_settings(w, n, N, v):
    init_prototype(w, n)
    w("/* Softmax scale for every later call (default 1/sqrt(%s_D_QK), the head width before" % N)
    w(" * absorption): MICROATTN_OK or MICROATTN_BAD_SCALE (not finite, or too large). */")
    w("microattn_status %s_set_scale(%s* obj, float scale);" % (n, n))
    w("/* The scale in use (0 for a NULL obj). */")
    w("float %s_scale(const %s* obj);" % (n, n))
    w("")
    comment(w, "Splits every later call over ex's workers (microattn_executor; copied): "
            "MICROATTN_OK, MICROATTN_NULL_POINTER (ex NULL) or MICROATTN_BAD_ARGUMENT (more than "
            "%s_MAX_WORKERS workers, or workers > 1 without run; nothing changed). "
            "MICROATTN_EXECUTOR_NONE: the calling thread only." % N)
    w("microattn_status %s_set_executor(%s* obj, const microattn_executor* ex);" % (n, n))
    w("")
    q8 = v["int8_weights"]
    comment(w, "Points the layer at %s (views: the arrays must outlive its use; allowed at any "
            "time, cached rows stay%s). MICROATTN_OK, MICROATTN_NULL_POINTER (w or a pointer the "
            "layer needs is NULL: w_q, or w_dq, g_q and w_uq when %s_D_Q_LATENT > 0; w_dkv, g_kv, "
            "w_ukv, w_o%s) or MICROATTN_BAD_ARGUMENT (an unknown layout%s)."
            % ("int8 weights and their scales" if q8 else "weights",
               "; microattn_quantize_int8() makes them" if q8 else "", N,
               "; the scales of those matrices" if q8 else "",
               ", or PANEL16: %s_PANEL16 is 0" % N if not v["panel16"] else ""))
    w("microattn_status %s_set_weights(%s* obj, const microattn_latent_weights%s* w);"
      % (n, n, "_q8" if q8 else ""))
    set_matrices_prototype(w, n, N, "microattn_latent_matrices")
    w("")
    comment(w, "Rotary embeddings on k_R and each head's q_R (rotary_dims 0 = %s_D_ROPE), only "
            "while the cache is empty. DeepSeek's checkpoints rotate adjacent pairs "
            "(MICROATTN_ROPE_ADJACENT, also with Hugging Face's weights). MICROATTN_OK, or "
            "MICROATTN_BAD_ARGUMENT: an odd or too large rotary_dims, a base not finite or <= 0, "
            "an unknown pairing, a cache that is not empty." % N)
    w("microattn_status %s_set_rope(%s* obj, const microattn_rope* rope);" % (n, n))
    w("/* The RoPE setting in use (off for a NULL obj). */")
    w("microattn_rope %s_rope(const %s* obj);" % (n, n))
    w("")
    comment(w, "Epsilon of both RMSNorms (c_KV's and c_Q's; default 1e-6), only while the cache "
            "is empty: MICROATTN_OK, or MICROATTN_BAD_ARGUMENT (eps not finite or not > 0, "
            "a cache that is not empty).")
    w("microattn_status %s_set_rms_eps(%s* obj, float eps);" % (n, n))
    w("/* The epsilon in use (0 for a NULL obj). */")
    w("float %s_rms_eps(const %s* obj);" % (n, n))
    w("")


def latent_cache_functions(w, n, N, v):
    comment(w, "Appends T tokens x[T][%s_D_MODEL] to the cache and writes their outputs "
            "y[T][%s_OUT_DIM] (absorbed, or unabsorbed: each head's keys and values expanded "
            "from the cached latents, whichever takes fewer flops for the call, "
            "LatentPrefill::kAuto): MICROATTN_CACHE_FULL past %s_T_MAX tokens in total; y must "
            "not overlap x or a weight array." % (N, N, N))
    w("microattn_status %s_prefill(%s* obj, const float* x, size_t T, float* y);" % (n, n))
    comment(w, "Appends one token x[%s_D_MODEL], writes y[%s_OUT_DIM] (the absorbed form: an "
            "MQA over the cached latent rows): MICROATTN_CACHE_FULL once %s_T_MAX tokens are "
            "cached." % (N, N, N))
    w("microattn_status %s_decode(%s* obj, const float* x, float* y);" % (n, n))
    w("/* Forgets the tokens at positions >= length (MICROATTN_BAD_ARGUMENT if length >")
    w(" * the current length). */")
    w("microattn_status %s_truncate(%s* obj, size_t length);" % (n, n))
    w("/* Empties the cache (weights, RoPE, scale and epsilon stay). */")
    w("microattn_status %s_reset(%s* obj);" % (n, n))
    w("/* Tokens in the cache: the position of the next one (0 for a NULL obj). */")
    w("size_t %s_length(const %s* obj);" % (n, n))
    comment(w, "Copies the cached latent rows of tokens first .. first + n - 1 out, rows[n]"
            "[%s_D_CACHE] floats ([c_KV normalised | k_R rotated]%s), and describes them in "
            "*info (kv_heads 1, d_head %s_D_CACHE): MICROATTN_NULL_POINTER, "
            "MICROATTN_BAD_ARGUMENT (n == 0 or past length())."
            % (N, "; the int8 cache's values dequantised, scale * q" if v["int8_cache"] else "",
               N))
    w("microattn_status %s_export_cache(const %s* obj, size_t first, size_t n, float* rows,"
      % (n, n))
    w("    microattn_cache_slice* info);")
    comment(w, "Appends exported rows as if they had been prefilled; only where they continue "
            "this cache (info->first == length()) with this shape and RoPE "
            "(MICROATTN_BAD_ARGUMENT), MICROATTN_CACHE_FULL past %s_T_MAX.%s"
            % (N, " The int8 cache quantises the rows as it does new tokens."
               if v["int8_cache"] else ""))
    w("microattn_status %s_import_cache(%s* obj, const microattn_cache_slice* info,"
      % (n, n))
    w("    const float* rows);")


def decoder_header_text(args, config, v, header_name):
    """The header of a --kind decoder model (Decoder)."""
    n, N = args.name, args.name.upper()
    L = []
    w = L.append
    header_opening(w, header_name, "model", n)
    w(" *   object:  %s<%s, DefaultArch, %d>" % (KINDS["decoder"][1], config, v["chunk"]))
    w(" *   model:   a LLaMA-style decoder: tokens in, next-token logits out; a KV cache of %d"
      % v["t_max"])
    w(" *            tokens per layer%s (then MICROATTN_CACHE_FULL)"
      % (", int8" if v["int8_cache"] else ""))
    w(" *   weights: a model file (docs/model-format.md), %s" %
      ("int8 + fp32 scales" if v["int8_weights"] else "fp32"))
    target_and_glue(w, args, config, v, header_name)
    includes_and_size(w, N, v, "model", stdint=True)
    w("#define %s_CACHE_BYTES %d /* of which the KV caches of all layers */"
      % (N, v["cache_bytes"]))
    w("")
    w("/* Fingerprint of the configuration (every DecoderConfig parameter, prefill chunk; the same")
    w(" * on every target): the C++ line checks it, so another DecoderConfig does not compile. */")
    config_id_macros(w, n, N, v)
    for key, name, what in (
            ("vocab", "VOCAB", "token ids 0 .. VOCAB - 1; logits rows of VOCAB floats"),
            ("d_model", "D_MODEL", ""), ("layers", "LAYERS", ""), ("heads", "HEADS", ""),
            ("kv_heads", "KV_HEADS", ""), ("d_head", "D_HEAD", ""), ("d_hidden", "D_HIDDEN", ""),
            ("t_max", "T_MAX", "tokens the cache holds"),
            ("chunk", "PREFILL_CHUNK", "tokens prefill processes at a time"),
            ("int8_weights", "INT8_WEIGHTS", "the model file must be int8"),
            ("int8_cache", "INT8_CACHE", ""), ("tied_head", "TIED_HEAD", "LmHead::kTied"),
            ("max_workers", "MAX_WORKERS", "most workers set_executor takes")):
        w("#define %s_%s %d%s" % (N, name, v[key], " /* %s */" % what if what else ""))
    w("")
    w("/* The object. Place it anywhere (static, a RAM section) aligned to %s_ALIGN: all-zero" % N)
    w(" * bytes are a ready object without weights, so a static needs no init call. */")
    storage_struct_and_extern_c(w, n, N)
    decoder_functions(w, n, N)
    return close_header(L, N)


def decoder_functions(w, n, N):
    w("/* Zeroes *obj (NULL: nothing). */")
    w("void %s_init(%s* obj);" % (n, n))
    comment(w, "Points the model at a model file (tools/export_pytorch.py --kind decoder; views "
            "into it, which must stay, e.g. in flash; 16-byte aligned) and takes its RoPE and "
            "RMSNorm epsilon: MICROATTN_OK, MICROATTN_NULL_POINTER, MICROATTN_BAD_ARGUMENT (a file "
            "for another configuration or weight type, or trained for a context shorter than "
            "%s_T_MAX, short, misaligned; or another RoPE while tokens are cached)." % N)
    w("microattn_status %s_set_weights_blob(%s* obj, const void* blob, size_t bytes);" % (n, n))
    comment(w, "Whether a model file fits this configuration (the checks of "
            "%s_set_weights_blob, no object needed): MICROATTN_OK, MICROATTN_NULL_POINTER, "
            "MICROATTN_BAD_ARGUMENT; *why (unless NULL) says which field or tensor differs and "
            "how; microattn_model_check_text() words it." % n)
    w("microattn_status %s_check_blob(const void* blob, size_t bytes, microattn_model_check* why);"
      % n)
    w("/* Softmax scale of every layer (default 1/sqrt(%s_D_HEAD)). */" % N)
    w("microattn_status %s_set_scale(%s* obj, float scale);" % (n, n))
    w("float %s_scale(const %s* obj);" % (n, n))
    comment(w, "Splits every later call over ex's workers (copied): MICROATTN_OK, "
            "MICROATTN_NULL_POINTER, MICROATTN_BAD_ARGUMENT (more than %s_MAX_WORKERS)." % N)
    w("microattn_status %s_set_executor(%s* obj, const microattn_executor* ex);" % (n, n))
    w("")
    comment(w, "Appends T token ids and writes the logits of the last: logits[%s_VOCAB]. "
            "MICROATTN_BAD_TOKEN_COUNT (T == 0), MICROATTN_CACHE_FULL (past %s_T_MAX tokens), "
            "MICROATTN_BAD_ARGUMENT (an id outside 0 .. %s_VOCAB - 1), MICROATTN_OVERLAP "
            "(logits over the tokens or a weight array); nothing changes on error." % (N, N, N))
    w("microattn_status %s_prefill(%s* obj, const int32_t* tokens, size_t T, float* logits);"
      % (n, n))
    w("/* The same, writing the logits of every token: logits[T][%s_VOCAB]. */" % N)
    w("microattn_status %s_prefill_all(%s* obj, const int32_t* tokens, size_t T, float* logits);"
      % (n, n))
    w("/* Appends one token id and writes its logits[%s_VOCAB]. */" % N)
    w("microattn_status %s_decode(%s* obj, int32_t token, float* logits);" % (n, n))
    w("/* Forgets the tokens at positions >= length (MICROATTN_BAD_ARGUMENT past length()). */")
    w("microattn_status %s_truncate(%s* obj, size_t length);" % (n, n))
    w("/* Empties the caches (weights and settings stay). */")
    w("microattn_status %s_reset(%s* obj);" % (n, n))
    w("/* Tokens in the cache: the position of the next one (0 for a NULL obj). */")
    w("size_t %s_length(const %s* obj);" % (n, n))


def block_header_text(args, config, v, header_name):
    """The header of a building block: --kind linear, mlp, rmsnorm or layernorm."""
    n, N, kind = args.name, args.name.upper(), args.kind
    norm = kind in ("rmsnorm", "layernorm")
    L = []
    w = L.append
    header_opening(w, header_name, "block", n)
    block_intro(w, kind, config, v, N)
    target_and_glue(w, args, config, v, header_name)
    includes_and_size(w, N, v, "block")
    w("")
    comment(w, "Fingerprint of the configuration (kind, every parameter and option%s; the same "
            "on every target): the C++ line checks it, so another configuration does not compile."
            % (", rows per pass" if kind == "mlp" else ""))
    config_id_macros(w, n, N, v)
    w("/* Shape. Row counts M are 1 or more (no upper bound: the block keeps no rows). */")
    for key, name, what in block_shape_rows(kind, v):
        w("#define %s_%s %d /* %s */" % (N, name, v[key], what))
    if not norm:
        weight_format_define(w, N, v)
    w("")
    w("/* The object. Place it anywhere (static, a RAM section, the stack) aligned to %s_ALIGN:"
      % N)
    w(" * all-zero bytes are a ready object (no weights%s), so a static needs no init call. */"
      % (", default epsilon" if norm else ""))
    storage_struct_and_extern_c(w, n, N)
    init_prototype(w, n)
    if norm:
        norm_functions(w, n, N, kind, v)
    else:
        weighted_block_functions(w, n, N, kind, v)
    return close_header(L, N)


def block_intro(w, kind, config, v, N):
    """A building block's lines of the first comment: its object, what it computes and (linear,
    mlp) its weights' type."""
    if kind == "linear":
        w(" *   object:  %s<%s, DefaultArch>" % (KINDS[kind][1], config))
        w(" *   block:   y = x W%s, rows of %s_IN floats in, %s_OUT out"
          % (" + b" if v["bias"] else "", N, N))
    elif kind == "mlp":
        w(" *   object:  %s<%s, DefaultArch, %d>" % (KINDS[kind][1], config, v["max_rows"]))
        w(" *   block:   %s" % ("y = act(x W_gate%s) * (x W_up%s) W_down%s"
                               % ((" + b_gate", " + b_up", " + b_down") if v["bias"] else
                                  ("", "", "")) if v["gated"] else
                               "y = act(x W_up%s) W_down%s"
                               % ((" + b_up", " + b_down") if v["bias"] else ("", ""))))
        w(" *            act: %s" % ACTIVATIONS[v["activation"]])
    elif kind == "rmsnorm":
        w(" *   object:  %s" % config)
        w(" *   block:   y = x / sqrt(mean(x^2) + eps) * g over rows of %s_D floats (LLaMA's)" % N)
    else:
        w(" *   object:  %s" % config)
        w(" *   block:   y = (x - mean) / sqrt(var + eps) * g%s over rows of %s_D floats"
          % (" + b" if v["bias"] else "", N))
    if kind not in ("rmsnorm", "layernorm"):
        w(" *   weights: %s" % ("int8 + fp32 scales (microattn_%s_weights_q8)" % kind
                                if v["int8_weights"] else "fp32 (microattn_%s_weights)" % kind))


def block_shape_rows(kind, v):
    """A building block's shape macros: (probe field, macro name after NAME_, comment) each."""
    if kind == "linear":
        rows = (("in", "IN", "row length of x; inputs of w"),
                ("out", "OUT", "row length of y; outputs of w, length of b%s"
                 % (" and s" if v["int8_weights"] else "")),
                ("bias", "BIAS", "b needed (Bias::kYes)"))
    elif kind == "mlp":
        rows = (("d_model", "D_MODEL", "row length of x and y"),
                ("d_hidden", "D_HIDDEN", "outputs of w_gate and w_up, inputs of w_down"),
                ("activation", "ACTIVATION", "microattn::Activation: 0 SwiGLU, 1 GeGLU, 2 GELU, "
                 "3 tanh GELU, 4 ReLU"),
                ("gated", "GATED", "w_gate needed (SwiGLU, GeGLU)"),
                ("bias", "BIAS", "b_gate, b_up, b_down needed (Bias::kYes)"),
                ("max_rows", "MAX_ROWS", "rows per pass through the hidden buffers"))
    elif kind == "rmsnorm":
        return (("d", "D", "row length of x, y and g"),)
    else:
        return (("d", "D", "row length of x, y, g and b"),
                ("bias", "BIAS", "b needed (Bias::kYes)"))
    return rows + (("int8_weights", "INT8_WEIGHTS", "WeightType::kInt8: set_weights takes "
                    "microattn_%s_weights_q8" % kind),
                   ("max_workers", "MAX_WORKERS", "most workers set_executor takes (MaxWorkers)"))


def norm_functions(w, n, N, kind, v):
    """The prototypes of a norm (rmsnorm, layernorm) after init: its weights, epsilon and
    forward."""
    if kind == "rmsnorm":
        comment(w, "Points the norm at its weight g[%s_D] (a view: the array must outlive "
                "its use; nn.RMSNorm.weight): MICROATTN_OK or MICROATTN_NULL_POINTER." % N)
        w("microattn_status %s_set_weight(%s* obj, const float* g);" % (n, n))
    else:
        comment(w, "Points the norm at its weights g[%s_D] and b[%s_D] (views: the arrays "
                "must outlive their use; nn.LayerNorm.weight, .bias%s): MICROATTN_OK or "
                "MICROATTN_NULL_POINTER." % (N, N, "" if v["bias"] else
                                             "; b is ignored and may be NULL: Bias::kNo"))
        w("microattn_status %s_set_weights(%s* obj, const float* g, const float* b);"
          % (n, n))
    comment(w, "Epsilon for every later call (default %s): MICROATTN_OK, or "
            "MICROATTN_BAD_ARGUMENT (not finite or not > 0; nothing changed)."
            % ("1e-6, Hugging Face LLaMA's rms_norm_eps" if kind == "rmsnorm" else
               "1e-5, nn.LayerNorm's"))
    w("microattn_status %s_set_eps(%s* obj, float eps);" % (n, n))
    w("/* The epsilon in use (0 for a NULL obj). */")
    w("float %s_eps(const %s* obj);" % (n, n))
    w("")
    comment(w, "y[M][%s_D] = the norm of x[M][%s_D], row by row; y may be x (in place). "
            "MICROATTN_NULL_POINTER (x, y or the weights NULL), MICROATTN_BAD_TOKEN_COUNT "
            "(M == 0), MICROATTN_OVERLAP (y partly over x, or over a weight array)." % (N, N))
    w("microattn_status %s_forward(%s* obj, const float* x, size_t M, float* y);" % (n, n))


def weighted_block_functions(w, n, N, kind, v):
    """The prototypes of a linear or mlp block after init: its weights, executor and forward."""
    q8 = "_q8" if v["int8_weights"] else ""
    comment(w, "Points the block at %s (views: the arrays must outlive its use%s). "
            "MICROATTN_OK, MICROATTN_NULL_POINTER (w or a pointer the block needs is NULL%s) "
            "or MICROATTN_BAD_ARGUMENT (an unknown layout)."
            % ("int8 weights and their scales" if q8 else "weights",
               "; microattn_quantize_int8() makes them" if q8 else "",
               ", a scale array included" if q8 else ""))
    w("microattn_status %s_set_weights(%s* obj, const microattn_%s_weights%s* w);"
      % (n, n, kind, q8))
    set_matrices_prototype(w, n, N, "microattn_%s_matrices" % kind)
    w("")
    comment(w, "Splits every later call over ex's workers (microattn_executor; copied): "
            "MICROATTN_OK, MICROATTN_NULL_POINTER (ex NULL) or MICROATTN_BAD_ARGUMENT (more "
            "than %s_MAX_WORKERS workers, or workers > 1 without run; nothing changed). "
            "MICROATTN_EXECUTOR_NONE: the calling thread only; the results are the same "
            "bits for every worker count." % N)
    w("microattn_status %s_set_executor(%s* obj, const microattn_executor* ex);" % (n, n))
    w("")
    if kind == "linear":
        comment(w, "y[M][%s_OUT] = x[M][%s_IN] W%s (one row: the GEMV, several: the GEMM). "
                "MICROATTN_NULL_POINTER (x, y or the weights NULL), MICROATTN_BAD_TOKEN_COUNT "
                "(M == 0), MICROATTN_OVERLAP (y overlaps x or a weight array)."
                % (N, N, " + b" if v["bias"] else ""))
    else:
        comment(w, "y[M][%s_D_MODEL] = the MLP of x[M][%s_D_MODEL], %s_MAX_ROWS rows at a "
                "time. MICROATTN_NULL_POINTER (x, y or the weights NULL), "
                "MICROATTN_BAD_TOKEN_COUNT (M == 0), MICROATTN_OVERLAP (y overlaps x or a "
                "weight array)." % (N, N, N))
    w("microattn_status %s_forward(%s* obj, const float* x, size_t M, float* y);" % (n, n))


def compile_line(cxx, flags, cpp_name):
    """The command that builds a generated C++ file: its header's compiler and flags (a list)
    plus what a C link needs."""
    f = flags
    extra = [x for x in ("-fno-exceptions", "-fno-rtti") if x not in f]
    return " ".join([shlex.quote(cxx), "-std=c++17"] + [shlex.quote(x) for x in f] + extra +
                    ["-I<microattn>/include", "-c", cpp_name])


def cpp_text(layers, cpp_name):
    """layers: [(name, header include, macro line, cxx, [flags])], all for one target."""
    names = ", ".join("'%s'" % l[0] for l in layers)
    cxx, flags = layers[0][3], layers[0][4]
    L = ["// The C functions of the microattn layer%s %s, written by tools/microattn_c.py."
         % ("s" if len(layers) > 1 else "", names),
         "// Build it with the compiler and flags the header%s made for, as C++17 without"
         % ("s were" if len(layers) > 1 else " was"),
         "// exceptions and RTTI, with lib/c_api.cpp and lib/status.cpp built the same way; a C",
         "// compiler then links the program (docs/integration.md):",
         "//   %s" % compile_line(cxx, flags, cpp_name)]
    if len(layers) > 1:
        L.append("// The layers share the kernels they have in common (one file per layer would "
                 "compile")
        L.append("// them once per file).")
    for i, l in enumerate(layers):
        L.append("#include \"%s\"%s" % (l[1], "  // written by tools/microattn_c.py for this "
                                        "target" if i == 0 else ""))
    L.append("#include \"microattn/c_api.hpp\"")
    L.append("")
    L += [l[2] for l in layers]
    return "\n".join(L) + "\n"


HEADER_LINE = re.compile(r"^ \*   (MICROATTN_C_(?:LAYER|KV_LAYER|KV_LAYER_CHUNKED|CORE|LATENT|"
                         r"LATENT_CHUNKED|DECODER|DECODER_CHUNKED|LINEAR|MLP|MLP_CHUNKED|"
                         r"RMSNORM|LAYERNORM)\("
                         r"([A-Za-z_][A-Za-z0-9_]*),.*\);)$", re.M)
HEADER_TARGET = re.compile(r"^ \*   target:  (.*) \(kernels: ([^)]*)\)$", re.M)


def read_header(path):
    """The layer name, macro line and target (compiler, flags) a generated header records."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise Refused("--cpp-from: cannot read %s: %s" % (path, e))
    line, target = HEADER_LINE.search(text), HEADER_TARGET.search(text)
    if "Generated by tools/microattn_c.py" not in text or not line or not target:
        raise Refused("--cpp-from: %s is not a header written by tools/microattn_c.py "
                      "(regenerate it)" % path)
    cxx_flags = shlex.split(target.group(1))
    return line.group(2), line.group(1), cxx_flags[0], cxx_flags[1:], target.group(0)


def write_if_changed(path, text):
    """Leaves an unchanged file alone (its timestamp too, so builds do not redo work)."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def join_dash_values(argv):
    """`--cxxflags -march=native`: argparse reads a value that starts with '-' as an option, so
    the value is joined to its option (`--cxxflags=-march=native`) first."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        if a == "--cxxflags" and i + 1 < len(argv):
            out.append("--cxxflags=" + argv[i + 1])
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def model_file_config(path, context=None):
    """--from-model: the DecoderConfig arguments of a version-2 model file (docs/model-format.md):
    its shapes, T_max its exported-for context (field 17) or the trained t_max (or context, at
    most either), the tied head, int8 weights when its matrices are (format code 0x10801)."""
    import struct
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Refused("--from-model %s: %s" % (path, e.strerror))
    if len(data) < 64 or data[:4] != b"MALM" or struct.unpack_from("<I", data, 4)[0] != 2:
        raise Refused("--from-model %s: not a version-2 model file" % path)
    _, _, _, total, nf, fa, nt, ta = struct.unpack_from("<8I", data)
    if total != len(data) or fa + 16 * nf > total or ta + 32 * nt > total or nt == 0:
        raise Refused("--from-model %s: its tables run past the file" % path)
    f = {}
    for i in range(nf):
        key, _, a, _ = struct.unpack_from("<4I", data, fa + 16 * i)
        f[key] = a
    need = (2, 3, 4, 5, 6, 7, 8, 9, 10)
    if any(k not in f for k in need):
        raise Refused("--from-model %s: a required field is missing" % path)
    t_max = f.get(17, f[9])
    if context is not None:
        if not 1 <= context <= t_max:
            raise Refused("--context %d: 1 .. %d (the file's context)" % (context, t_max))
        t_max = context
    code = struct.unpack_from("<I", data, ta + 4)[0]  # the embedding's format
    if code not in (0, 0x10801):
        raise Refused("--from-model %s: tensor format code %#x is not computed" % (path, code))
    parts = [str(f[k]) for k in (2, 3, 4, 5, 6, 7, 8)] + [str(t_max)]
    parts.append("LmHead::kTied" if f[10] else "LmHead::kSeparate")
    if code:
        parts.append("WeightType::kInt8")
    return ", ".join(parts)


def main(argv=None):
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: %(prog)s --name mylayer --kind layer --config '64, 64, 4, 2, 16' "
               "--cxx arm-none-eabi-g++ --cxxflags='-mcpu=cortex-m4 -mthumb -mfloat-abi=hard "
               "-mfpu=fpv4-sp-d16' --out mylayer.h --cpp-out mylayer.cpp; then build "
               "mylayer.cpp with that compiler and those flags plus -std=c++17 -fno-exceptions "
               "-fno-rtti (docs/integration.md). Several layers in one C++ file: "
               "%(prog)s --cpp-from a.h b.h --cpp-out layers.cpp")
    p.add_argument("--name",
                   help="C name of the layer: its type, and the prefix of its functions "
                        "(NAME_forward) and, in capitals, of its macros (NAME_BYTES)")
    p.add_argument("--kind", choices=sorted(KINDS), default="layer",
                   help="layer: MultiHeadAttention (default); kv: KvAttention; "
                        "core: ScaledDotProductAttention; latent: LatentAttention (multi-head "
                        "latent attention, --config gives a LatentConfig's arguments: '24, 32, "
                        "4, 16, 8, 8, 8, QueryLatent{12}, MaxWorkers{2}', also with "
                        "WeightType::kInt8, CacheType::kInt8); decoder: Decoder (a whole "
                        "LLaMA-style model, --config gives a DecoderConfig's arguments: '100, "
                        "128, 2, 4, 2, 32, 256, 128, LmHead::kTied'); the building blocks: "
                        "linear (Linear, a LinearConfig's arguments: '64, 32, Bias::kYes'), mlp "
                        "(Mlp, an MlpConfig's: '64, 256, Activation::kSwiGlu, "
                        "WeightType::kInt8'), rmsnorm (RmsNorm<d>: '64'), layernorm "
                        "(LayerNorm<d, Bias>: '64' or '64, Bias::kNo')")
    p.add_argument("--config",
                   help="the Config's arguments, e.g. '64, 64, 4, 2, 16, Bias::kYes', "
                        "'64, 64, 4, 2, 16, WeightType::kInt8, CacheType::kInt8', "
                        "'64, 64, 4, 2, 16, Mask::kNone', '64, 64, 4, 2, 16, SlidingWindow{8}' "
                        "(options with or without microattn::), or the type "
                        "microattn::Config<...>")
    p.add_argument("--from-model", metavar="FILE",
                   help="decoder: the DecoderConfig from a model file (its shapes; T_max its "
                        "exported-for context or trained context), instead of --config")
    p.add_argument("--context", type=int, metavar="N",
                   help="with --from-model: T_max N (at most the file's context)")
    p.add_argument("--chunk", type=int, default=None,
                   help="kv, latent and decoder: tokens prefill processes at a time, 1 .. T_max "
                        "(default T_max; decoder min(16, T_max)); mlp: rows per pass, the "
                        "height of its hidden buffers (default 16)")
    p.add_argument("--cxx", default=os.environ.get("CXX", "c++"),
                   help="the target's C++ compiler (default: $CXX, else c++)")
    p.add_argument("--cxxflags", default="",
                   help="the target's compiler flags, one string (e.g. '-mcpu=cortex-m4 -mthumb "
                        "-mfloat-abi=hard -mfpu=fpv4-sp-d16', '-march=native'; "
                        "--cxxflags=-march=native works too)")
    p.add_argument("-I", "--include", action="append", default=[], metavar="DIR",
                   help="another include folder for the probe (e.g. xsimd's); repeatable")
    p.add_argument("--microattn-include", default=default_include_dir(), metavar="DIR",
                   help="microattn's include folder (default: the one next to this tool)")
    p.add_argument("--out", help="the C header to write (default: NAME.h)")
    p.add_argument("--cpp-out", help="also write the C++ file with the MICROATTN_C_* line "
                   "(with --cpp-from: the lines of every header given)")
    p.add_argument("--header-include", metavar="PATH",
                   help="how --cpp-out includes the header (default: the header's file name)")
    p.add_argument("--cpp-from", nargs="+", metavar="HEADER",
                   help="write one C++ file (--cpp-out) defining the layers of these generated "
                        "headers, made for one compiler and flags: the kernels they share are "
                        "compiled once (one file per layer compiles them once per file)")
    args = p.parse_args(join_dash_values(sys.argv[1:] if argv is None else list(argv)))
    try:
        if args.cpp_from:
            return merge(args)
        if args.from_model:
            if args.kind != "decoder" or args.config:
                raise Refused("--from-model: with --kind decoder, instead of --config")
            args.config = model_file_config(args.from_model, args.context)
        elif args.context is not None:
            raise Refused("--context: with --from-model")
        if not args.name or not args.config:
            raise Refused("--name and --config are needed (or --cpp-from HEADER... --cpp-out)")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", args.name):
            raise Refused("--name %r is not a C identifier" % args.name)
        if args.chunk is not None and args.kind not in CHUNK_KINDS:
            raise Refused("--chunk applies to --kind kv, latent, decoder and mlp only")
        if args.chunk is not None and args.chunk < 1:
            raise Refused("--chunk must be at least 1")
        if not args.microattn_include:
            raise Refused("microattn's include folder not found: pass --microattn-include")
        config = normalize_config(args.config, args.kind)
        chunk_expr = ("Cfg::kTMax" if args.chunk is None else str(args.chunk)) \
            if args.kind in ("kv", "latent") else "0"
        if args.kind == "decoder":
            chunk_expr = ("(Cfg::kTMax < 16 ? Cfg::kTMax : 16)" if args.chunk is None
                          else str(args.chunk))
        if args.kind == "mlp":
            chunk_expr = str(MLP_DEFAULT_ROWS if args.chunk is None else args.chunk)
        values = probe(args, config, chunk_expr)
        if args.chunk is not None and "t_max" in values and args.chunk > values["t_max"]:
            raise Refused("--chunk %d is larger than T_max %d" % (args.chunk, values["t_max"]))
        out = args.out or (args.name + ".h")
        header_name = os.path.basename(out)
        write_if_changed(out, header_text(args, config, values, header_name))
        if args.cpp_out:
            write_if_changed(args.cpp_out, cpp_text(
                [(args.name, args.header_include or header_name, macro_line(args, config),
                  args.cxx, shlex.split(args.cxxflags))], os.path.basename(args.cpp_out)))
    except Refused as e:
        print("microattn_c.py: %s" % e, file=sys.stderr)
        return 2
    print("microattn_c.py: %s: %s %d bytes, align %d (kernels %s)" %
          (out, args.name, values["bytes"], values["align"], values["arch"]))
    return 0


def merge(args):
    """--cpp-from: one C++ file for the layers of several generated headers."""
    if not args.cpp_out:
        raise Refused("--cpp-from needs --cpp-out (the C++ file to write)")
    if args.name or args.config or args.out or args.chunk is not None or args.header_include:
        raise Refused("--cpp-from takes the layers from the headers: no --name, --config, "
                      "--chunk, --out or --header-include")
    layers, seen = [], {}
    for h in args.cpp_from:
        name, line, cxx, flags, target = read_header(h)
        if name in seen:
            raise Refused("--cpp-from: the layer '%s' is in %s and %s" % (name, seen[name], h))
        seen[name] = h
        if layers and target != layers[0][5]:
            raise Refused("--cpp-from: %s and %s were made for different compilers or flags "
                          "(one C++ file is built one way):\n  %s\n  %s"
                          % (args.cpp_from[0], h, layers[0][5].strip(), target.strip()))
        layers.append((name, os.path.basename(h), line, cxx, flags, target))
    write_if_changed(args.cpp_out, cpp_text([l[:5] for l in layers],
                                            os.path.basename(args.cpp_out)))
    print("microattn_c.py: %s: %s" % (args.cpp_out, ", ".join(l[0] for l in layers)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
