#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Tests of tools/export_pytorch.py on multi-head latent attention (unittest; ctest runs it as
`export_pytorch_latent`).

Exports DeepSeek-V2-style modules (tests/python/deepseek_like.py: with and without the query
latent, d_v != d_nope + d_R, random weights and RMSNorm weights, seed fixed), then checks:
  - the header compiles as C11 and C++17 (-Wall -Wextra -Wpedantic -Werror, two translation
    units), states the module's shape and settings, and holds its float32 bits;
  - microattn::LatentAttention<LCfg> with the LatentConfig the header names, set up as the
    header says (name_weights<LCfg>(), name_rope(), NAME_RMS_EPS, NAME_SCALE), computes what
    the module's forward computes: a prompt prefilled then decoded a token at a time, one
    prefill of every token, prefill in chunks of 4, and a stream of decode steps from empty;
  - absorbed decode equals unabsorbed prefill (the same tokens' outputs);
  - a LatentConfig of another shape fails to compile, naming the parameter;
  - --quant int8: the header's int8 arrays and scales are byte for byte what
    microattn::quantize_int8 makes of the module's weights, its error lines are the exporter's
    stderr; LatentAttention with WeightType::kInt8 and that header equals the fp32 layer of the
    dequantised weights within the fp32 tolerance, and PyTorch's forward within a bound
    derived from the quantisation error the exporter reports (relative and max errors and the
    per-row argmax agreement are printed); an fp32 LatentConfig with it is a compile error;
  - the settings matter: PyTorch with half-split pairing of the raw weights, or with the
    scale 1/sqrt(d_c + d_R), is far outside the tolerance;
and that each thing the exporter cannot represent is refused with exit status 2 and one line
(in this process and as the exporter's own process), and that --path finds such a module.

Without python3-torch it prints the reason and exits 77 (ctest SKIP_RETURN_CODE).

  /usr/bin/python3 tests/python/test_export_latent.py [--cc gcc] [--cxx g++]
      [--xsimd-include /usr/include] [--work-dir DIR] [unittest options]
"""
import contextlib
import copy
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (tools/, tests/python/)
import export_test_setup as setup  # noqa: E402

HERE = setup.HERE
OPT, UNITTEST_ARGS = setup.options(__doc__)
setup.require_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.join(OPT.source_dir, "tools"))
import deepseek_like  # noqa: E402
import export_pytorch as ex  # noqa: E402

INCLUDE = os.path.join(OPT.source_dir, "include")
WARN = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"]
EPS = 2.0 ** -24  # float's unit roundoff
T, PROMPT, CHUNK = 11, 4, 4  # tokens, prompt prefilled before decoding, prefill chunk
WORK = None
RESULTS = {}
MODES = ("prompt_decode", "prefill", "prefill_chunked", "decode_stream")


# --- the modules ------------------------------------------------------------------------------

class Case:
    """A module, its header and what PyTorch computes for it (and its --quant int8 header,
    q8_header, with the exporter's stderr in q8_err)."""

    def __init__(self, name, module):
        self.name, self.module, self.header = name, module, f"{name}.h"
        self.q8, self.q8_header = f"{name}_q8", f"{name}_q8.h"


def latent_module(seed, d_model, heads, d_c, d_r, d_nope, d_v, q_lora, theta, eps):
    """A DeepseekStyleAttention with random weights and RMSNorm weights in [0.5, 1.5)."""
    torch.manual_seed(seed)
    m = deepseek_like.DeepseekStyleAttention(d_model, heads, d_c, d_r, d_nope, d_v, q_lora,
                                             theta, eps)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if "layernorm" in n:
                p.uniform_(0.5, 1.5)
    return m.eval()


def make_cases():
    """With the query latent (DeepSeek-V2) and without (V2-Lite); d_v != d_nope + d_R."""
    with_q = latent_module(34, 32, 4, 16, 8, 12, 10, 24, 10000.0, 1e-6)
    no_q = latent_module(35, 24, 3, 12, 6, 8, 7, None, 500.0, 1e-3)  # an eps that matters
    no_q.softmax_scale = 0.3  # not the default: the header must say set_scale
    return [Case("lat_q", with_q), Case("lat_noq", no_q)]


def reference(m, x, pairing="hf", scale=None):
    """The module's forward in float64; pairing "half": RoPE of the raw q_R, k_R with
    rotate_half and no interleaved->half permutation (what kHalfSplit computes); scale: another
    softmax scale."""
    m = copy.deepcopy(m).double()
    if scale is not None:
        m.softmax_scale = scale
    rope = deepseek_like.rope_hf
    if pairing == "half":
        def half(v, theta):
            d = v.shape[-1]
            inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
            ang = torch.arange(v.shape[-2], dtype=torch.float64)[:, None] * inv[None, :]
            ang = torch.cat((ang, ang), dim=-1)
            return v * ang.cos() + deepseek_like.rotate_half(v) * ang.sin()
        deepseek_like.rope_hf = half
    try:
        with torch.no_grad():
            return m(x.double()).numpy()
    finally:
        deepseek_like.rope_hf = rope


# --- running things ---------------------------------------------------------------------------

def run_exporter(argv):
    """ex.main(argv) in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = ex.main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def sh(cmd, timeout=600):
    r = subprocess.run(cmd, cwd=WORK, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


def cxx_base(werror=True):
    flags = ["-std=c++17", *(WARN if werror else WARN[:-1]), "-I", INCLUDE]
    if OPT.xsimd_include:
        flags += ["-idirafter", OPT.xsimd_include]  # after the system folders (see the other test)
    else:
        flags.append("-DMICROATTN_FORCE_SCALAR=1")
    return flags


def write(name, text):
    with open(os.path.join(WORK, name), "w") as f:
        f.write(text)
    return name


def header_cfg(text):
    """The LatentConfig a header's `// Use with` line names."""
    m = re.search(r"^// Use with (microattn::LatentConfig<.*>)$", text, re.M)
    assert m, "no `// Use with microattn::LatentConfig<...>` line"
    return m.group(1)


RUN_TEMPLATE = r"""
// Sets a layer up as the header says; prints the status on failure.
template <class Shape, class Layer, class W>
static bool set_up(Layer& a, const W& w, const microattn::RopeConfig& rope, const char* name) {
  microattn::Status s = a.set_weights(w);
  if (s == microattn::Status::kOk) s = a.set_rope(rope);
  if (s == microattn::Status::kOk) s = a.set_rms_eps(Shape::kRmsEps);
  if (s == microattn::Status::kOk) s = a.set_scale(Shape::kScale);
  if (s != microattn::Status::kOk) std::printf("%s: set-up: %s\n", name, microattn::to_string(s));
  return s == microattn::Status::kOk;
}

static bool ok(microattn::Status s, const char* name, const char* what) {
  if (s != microattn::Status::kOk) std::printf("%s: %s: %s\n", name, what, microattn::to_string(s));
  return s == microattn::Status::kOk;
}

static bool save(const char* dir, const char* name, const char* mode, const float* y,
                 std::size_t n) {
  char path[4096];
  std::snprintf(path, sizeof path, "%s/%s.%s", dir, name, mode);
  std::FILE* f = std::fopen(path, "wb");
  return f && std::fwrite(y, sizeof(float), n, f) == n && std::fclose(f) == 0;
}

// x [T][d_model] from <dir>/<name>.x (T = LCfg::kTMax); y of each mode to <dir>/<name>.<mode>.
template <class LCfg, class Shape>
static int run(const microattn::LatentWeights<LCfg>& w, const microattn::RopeConfig& rope,
               const char* name, const char* dir, std::size_t prompt) {
  constexpr std::size_t T = LCfg::kTMax, D = LCfg::kDModel, n = T * D;
  static microattn::LatentAttention<LCfg> a, b, d;
  static microattn::LatentAttention<LCfg, microattn::DefaultArch, CHUNK> c;
  static float x[n], ya[n], yb[n], yc[n], yd[n];
  char path[4096];
  std::snprintf(path, sizeof path, "%s/%s.x", dir, name);
  std::FILE* f = std::fopen(path, "rb");
  if (!f || std::fread(x, sizeof(float), n, f) != n) return 1;
  std::fclose(f);
  if (!set_up<Shape>(a, w, rope, name) || !set_up<Shape>(b, w, rope, name) ||
      !set_up<Shape>(c, w, rope, name) || !set_up<Shape>(d, w, rope, name))
    return 1;
  bool good = ok(a.prefill(x, prompt, ya), name, "prompt prefill");
  for (std::size_t t = prompt; t < T && good; ++t)
    good = ok(a.decode(x + t * D, ya + t * D), name, "decode");
  good = good && ok(b.prefill(x, T, yb), name, "prefill");
  good = good && ok(c.prefill(x, T, yc), name, "chunked prefill");
  for (std::size_t t = 0; t < T && good; ++t)
    good = ok(d.decode(x + t * D, yd + t * D), name, "decode stream");
  good = good && save(dir, name, "prompt_decode", ya, n) && save(dir, name, "prefill", yb, n) &&
         save(dir, name, "prefill_chunked", yc, n) && save(dir, name, "decode_stream", yd, n);
  return good ? 0 : 1;
}
"""


DEQUANT_TEMPLATE = r"""
// An int8 header's [out][in] matrix as the floats s[o] * q(o, i) (a pool: no heap needed).
static float g_pool[1 << 16];
static std::size_t g_pool_used = 0;
template <std::size_t N, std::size_t M>
static const float* deq(const std::int8_t (&q)[N], const float (&s)[M]) {
  float* d = g_pool + g_pool_used;
  g_pool_used += N;
  for (std::size_t o = 0; o < M; ++o)
    for (std::size_t i = 0; i < N / M; ++i) d[o * (N / M) + i] = s[o] * q[o * (N / M) + i];
  return d;
}
"""


def forward_program(cases):
    """One program running LatentAttention over every case's header in every mode; also the
    --quant int8 header with its WeightType::kInt8 LatentConfig (<name>_q8), and the fp32 layer
    of its dequantised weights (<name>_dq)."""
    lines = ["#include <cstdint>", "#include <cstdio>", "",
             '#include "microattn/latent_attention.hpp"', "",
             *(f'#include "{h}"' for c in cases for h in (c.header, c.q8_header)), "",
             f"#define CHUNK {CHUNK}", RUN_TEMPLATE, DEQUANT_TEMPLATE,
             "int main(int argc, char** argv) {", "  if (argc < 2) return 2;", "  int bad = 0;"]
    for c in cases:
        cfg = header_cfg(c.text).replace("T_max", str(T))
        cfg8 = header_cfg(c.q8_text).replace("T_max", str(T))
        lines += [f"  bad |= run<{cfg}, {c.name}_shape>({c.name}_weights<{cfg}>(), "
                  f"{c.name}_rope(),", f'              "{c.name}", argv[1], {PROMPT});',
                  f"  bad |= run<{cfg8}, {c.q8}_shape>({c.q8}_weights<{cfg8}>(), {c.q8}_rope(),",
                  f'              "{c.q8}", argv[1], {PROMPT});',
                  "  {", f"    microattn::LatentWeights<{cfg}> w;",
                  "    w.layout = microattn::WeightLayout::kOutIn;"]
        for r in c.roles:
            field = f"w.{r[0]}_{r[1:]}"
            lines.append(f"    {field} = deq({c.q8}_{r}, {c.q8}_s{r[1:]});" if r[0] == "w" else
                         f"    {field} = {c.q8}_{r};")
        lines += [f"    bad |= run<{cfg}, {c.q8}_shape>(w, {c.q8}_rope(), \"{c.name}_dq\", "
                  f"argv[1], {PROMPT});", "  }"]
    lines += ["  return bad;", "}", ""]
    return write("forward.cpp", "\n".join(lines))


def quant_check_program(cases):
    """A C++ program that quantises each case's fp32 matrices (its fp32 header's arrays,
    [out][in]) with microattn::quantize_int8 and compares values and scales with the int8
    header's byte for byte; prints `name role same|DIFFERENT` per matrix."""
    lines = ["#include <cstdint>", "#include <cstdio>", "#include <cstring>", "",
             '#include "microattn/weights.hpp"',
             *(f'#include "{h}"' for c in cases for h in (c.header, c.q8_header)), "",
             "template <std::size_t N, std::size_t M>",
             "static int check(const char* name, const char* role, const float (&w)[N],",
             "                 const std::int8_t (&q)[N], const float (&s)[M]) {",
             "  static std::int8_t dq[N];",
             "  static float ds[M];",
             "  const microattn::Status st = microattn::quantize_int8(",
             "      w, microattn::WeightLayout::kOutIn, N / M, M, microattn::WeightLayout::kOutIn,"
             " dq, ds);",
             "  const bool same = st == microattn::Status::kOk && std::memcmp(dq, q, N) == 0 &&",
             "                    std::memcmp(ds, s, sizeof ds) == 0;",
             '  std::printf("%s %s %s\\n", name, role, same ? "same" : "DIFFERENT");',
             "  return !same;", "}", "", "int main() {", "  int bad = 0;"]
    for c in cases:
        for r in c.roles:
            if r[0] == "w":
                lines.append(f'  bad |= check("{c.name}", "{r}", {c.name}_{r}, {c.q8}_{r}, '
                             f"{c.q8}_s{r[1:]});")
    lines += ["  return bad;", "}", ""]
    return write("quant_check.cpp", "\n".join(lines))


def two_units(cases):
    """C11: two translation units including every header, one dumping the arrays' bytes. C++17:
    two including them twice (include guards) and calling name_weights<LCfg>()."""
    incs = "".join(f'#include "{c.header}"\n' for c in cases)
    arrays = [f"{c.name}_{r}" for c in cases for r in ex.LATENT_ROLES if r in c.roles]
    a = ["#include <stdio.h>", incs, "float tu_b(void);", "int main(int argc, char** argv) {",
         "  FILE* f;", "  int bad = 0;",
         "  if (argc < 2 || !(f = fopen(argv[1], \"wb\"))) return 2;",
         *(f"  bad |= fwrite({n}, 1, sizeof {n}, f) != sizeof {n};" for n in arrays),
         f"  return bad | (fclose(f) != 0) | (tu_b() != {arrays[0]}[0]);", "}", ""]
    b = [incs, "float tu_b(void);", f"float tu_b(void) {{ return {arrays[0]}[0]; }}", ""]
    cx = [incs + incs, "int tu_x();", "int tu_x() {", "  int bad = 0;"]
    for c in cases:
        cfg = header_cfg(c.text).replace("T_max", "5")
        cx += [f"  {{ const auto w = {c.name}_weights<{cfg}>();",
               "    bad |= w.check() != microattn::Status::kOk;",
               "    bad |= w.layout != microattn::WeightLayout::kOutIn;",
               f"    bad |= !{c.name}_rope().enabled; }}"]
    cx += ["  return bad;", "}", ""]
    cy = [incs, "int tu_x();", "int main() { return tu_x(); }", ""]
    return (write("tu_a.c", "\n".join(a)), write("tu_b.c", "\n".join(b)),
            write("tu_x.cpp", "\n".join(cx)), write("tu_y.cpp", "\n".join(cy)), arrays)


# (what, LatentConfig for lat_q's header, the static_assert text expected)
MISMATCHES = [
    ("d_model", "LatentConfig<5, 24, 4, 16, 8, 12, 10, microattn::QueryLatent{24}>",
     "the exported weights' d_model differs"),
    ("heads", "LatentConfig<5, 32, 2, 16, 8, 12, 10, microattn::QueryLatent{24}>",
     "the exported weights' H (heads) differs"),
    ("d_c", "LatentConfig<5, 32, 4, 8, 8, 12, 10, microattn::QueryLatent{24}>",
     "the exported weights' d_c (kv_lora_rank) differs"),
    ("d_R", "LatentConfig<5, 32, 4, 16, 4, 12, 10, microattn::QueryLatent{24}>",
     "the exported weights' d_R (qk_rope_head_dim) differs"),
    ("d_nope", "LatentConfig<5, 32, 4, 16, 8, 10, 10, microattn::QueryLatent{24}>",
     "the exported weights' d_nope (qk_nope_head_dim) differs"),
    ("d_v", "LatentConfig<5, 32, 4, 16, 8, 12, 12, microattn::QueryLatent{24}>",
     "the exported weights' d_v (v_head_dim) differs"),
    ("no query latent", "LatentConfig<5, 32, 4, 16, 8, 12, 10>",
     "the exported weights' query latent"),
    ("query latent width", "LatentConfig<5, 32, 4, 16, 8, 12, 10, microattn::QueryLatent{16}>",
     "the exported weights' query latent"),
]


def export_cases(cases):
    for c in cases:
        path = os.path.join(WORK, f"{c.name}.pt")
        torch.save(c.module, path)
        rc, out, err = run_exporter(["--module", path, "--mask", "causal", "--name", c.name,
                                     "--out", os.path.join(WORK, c.header)])
        if rc != 0:
            raise AssertionError(f"{c.name}: exporter failed ({rc}): {err}")
        with open(os.path.join(WORK, c.header)) as f:
            c.text = f.read()
        c.roles = [r for r in ex.LATENT_ROLES if re.search(rf"\b{c.name}_{r}\[", c.text)]
        rc, out, c.q8_err = run_exporter(["--module", path, "--mask", "causal", "--name", c.q8,
                                          "--quant", "int8", "--out",
                                          os.path.join(WORK, c.q8_header)])
        if rc != 0:
            raise AssertionError(f"{c.name}: exporter --quant int8 failed ({rc}): {c.q8_err}")
        with open(os.path.join(WORK, c.q8_header)) as f:
            c.q8_text = f.read()
        x = torch.rand(T, c.module.hidden_size) * 2 - 1
        for n in (c.name, c.q8, f"{c.name}_dq"):
            x.numpy().astype("<f4").tofile(os.path.join(WORK, f"{n}.x"))
        c.x = x
        c.y64 = reference(c.module, x)
        with torch.no_grad():
            c.y32 = c.module(x).numpy().astype(np.float64)


def setUpModule():
    global WORK
    t0 = time.time()
    if OPT.work_dir:
        WORK = os.path.abspath(OPT.work_dir)
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
    else:
        WORK = tempfile.mkdtemp(prefix="export_latent_test_")
    cases = make_cases()
    export_cases(cases)
    ca, cb, px, py, arrays = two_units(cases)
    jobs = {"c": [OPT.cc, "-std=c11", *WARN, "-O0", ca, cb, "-o", "c_prog"],
            "cxx": [OPT.cxx, *cxx_base(), "-O0", px, py, "-o", "cxx_prog"],
            # Without -Werror, like the other exporter test (GCC 12's AVX-512 intrinsics warn).
            "forward": [OPT.cxx, *cxx_base(werror=False), *shlex.split(OPT.cxx_flags), "-O1",
                        forward_program(cases), os.path.join(OPT.source_dir, "lib", "status.cpp"),
                        "-o", "forward"]}
    jobs["quant_check"] = [OPT.cxx, *cxx_base(), "-O0", quant_check_program(cases),
                           os.path.join(OPT.source_dir, "lib", "status.cpp"), "-o", "quant_check"]
    # The int8 header with an fp32 LatentConfig of its shape.
    src = write("mismatch_q8.cpp", '#include "lat_q_q8.h"\n\nint main() { return lat_q_q8_weights<'
                "microattn::LatentConfig<5, 32, 4, 16, 8, 12, 10, microattn::QueryLatent{24}>>()"
                ".w_o == nullptr; }\n")
    jobs["mismatch_q8"] = [OPT.cxx, *cxx_base(), "-fsyntax-only", src]
    for i, (_, cfg, _) in enumerate(MISMATCHES):
        src = write(f"mismatch{i}.cpp", '#include "lat_q.h"\n\nint main() { return '
                    f"lat_q_weights<microattn::{cfg}>().w_o == nullptr; }}\n")
        jobs[("mismatch", i)] = [OPT.cxx, *cxx_base(), "-fsyntax-only", src]
    done = {k: sh(v) for k, v in jobs.items()}
    RESULTS.update(cases=cases, compiled=done, arrays=arrays)
    if done["c"][0] == 0:
        RESULTS["c_run"] = sh(["./c_prog", "c_dump.bin"])
    if done["cxx"][0] == 0:
        RESULTS["cxx_run"] = sh(["./cxx_prog"])
    if done["forward"][0] == 0:
        RESULTS["forward_run"] = sh(["./forward", WORK])
    if done["quant_check"][0] == 0:
        RESULTS["quant_check_run"] = sh(["./quant_check"])
    print(f"\n[setup: {len(cases)} latent headers, {len(jobs)} compiles in "
          f"{time.time() - t0:.1f} s; work dir {WORK}]", file=sys.stderr)


def compile_ok(key):
    rc, out = RESULTS["compiled"][key]
    assert rc == 0, f"{key} failed to compile:\n{out[:6000]}"


def tolerance(c):
    """|y - y64| bound, derived like the other exporter test's: an output is a chain of about
    n = d_model (W_DKV, W_Q or W_DQ) + d_cq (W_UQ) + d_c (W_UKV; decode: the absorbed q~ and the
    lift by W_UV) + d_nope + d_R (scores) + 2T (softmax sum, P V) + H d_v (W_O) float operations
    on terms of magnitude <= max(1, max|y|) (inputs in [-1, 1), PyTorch's default Linear init,
    RMSNorm outputs of rms 1 times weights below 1.5), so 4 n u max(1, max|y|), u = 2^-24."""
    m = c.module
    n = (m.hidden_size + (m.q_lora_rank or 0) + 2 * m.kv_lora_rank + m.q_head_dim + 2 * T
         + m.num_heads * m.v_head_dim)
    return 4 * n * EPS * max(1.0, float(np.abs(c.y64).max()))


def outputs(c, mode, name=None):
    y = np.fromfile(os.path.join(WORK, f"{name or c.name}.{mode}"), dtype="<f4")
    return y.astype(np.float64).reshape(T, c.module.hidden_size)


# The exporter's stderr for --quant int8: one line per matrix, then the layer's output error.
MATRIX_ERROR = (r"^export_pytorch\.py: int8 (W_\w+) \(out \d+, in \d+\): max \|w - s\*q\| (\S+), "
                r"rms (\S+), \|\|W - Wq\|\|_F/\|\|W\|\|_F (\S+)$")
LAYER_ERROR = (r"^export_pytorch\.py: int8 layer output on 32 random N\(0, 1\) tokens, against "
               r"fp32 \(\|\|e\|\|/\|\|y\|\|, max \|e\| / max \|y\|; no RoPE\): (\S+), (\S+)$")


def int8_tolerance(c):
    """|y8 - y64| bound for the int8 layer against the module (float64), from the quantisation
    error the exporter reports. To first order y moves by sum_r dy/dW_r . dW_r, and matrix r's
    error has ||dW_r||_F = rel_r ||W_r||_F (the exporter's ||W - Wq||_F / ||W||_F, 0.37 % for
    each of these matrices). Through W_O and W_UV the output is linear in the weights, so their
    errors move y by about rel_r |y|; W_DKV's and W_DQ's errors partly cancel in the RMSNorms
    that follow them; the query/key matrices reach y through the softmax, whose scores are
    small here (|scale q.k| below 1), so they pass on about rel_r |y| too. The bound is that
    estimate with a factor 4 for the errors' alignment: 4 sum_r rel_r max|y64| (about 7 % of
    max|y| here), plus the fp32 tolerance. An estimate, not a proof: the measured errors (the
    test prints them, 0.7 - 0.9 % of max|y|) and the exporter's own layer error on random
    tokens (1 - 2 %) sit well inside it, and the int8 layer's exact arithmetic is pinned by
    test_equals_the_fp32_layer_of_the_dequantised_weights."""
    rels = [float(m[3]) for m in re.findall(MATRIX_ERROR, c.q8_err, re.M)]
    assert rels, c.q8_err
    return 4 * sum(rels) * float(np.abs(c.y64).max()) + tolerance(c)


# --- the tests ----------------------------------------------------------------------------------

class LatentAttentionHeader(unittest.TestCase):
    def test_states_the_module_shape_and_settings(self):
        want = {"lat_q": dict(D_MODEL=32, HEADS=4, D_LATENT=16, D_ROPE=8, D_NOPE=12, D_V=10,
                              D_QLATENT=24),
                "lat_noq": dict(D_MODEL=24, HEADS=3, D_LATENT=12, D_ROPE=6, D_NOPE=8, D_V=7,
                                D_QLATENT=0)}
        for c in RESULTS["cases"]:
            with self.subTest(case=c.name):
                macros = dict(re.findall(r"^#define (\w+) (.*?)(?: /\*.*\*/)?$", c.text, re.M))
                N, m = c.name.upper(), c.module
                for k, v in want[c.name].items():
                    self.assertEqual(macros[f"{N}_{k}"], str(v), k)
                self.assertEqual(macros[f"{N}_LATENT"], "1")
                self.assertEqual(macros[f"{N}_LAYOUT"], "1")
                self.assertEqual(macros[f"{N}_ROPE_PAIRING"], "0")
                self.assertEqual(float(macros[f"{N}_ROPE_BASE"][:-1]), m.rope_theta)
                self.assertEqual(np.float32(macros[f"{N}_RMS_EPS"][:-1]),
                                 np.float32(m.kv_a_layernorm.variance_epsilon))
                self.assertEqual(np.float32(macros[f"{N}_SCALE"][:-1]),
                                 np.float32(m.softmax_scale))
                q = f", microattn::QueryLatent{{{m.q_lora_rank}}}" if m.q_lora_rank else ""
                self.assertEqual(header_cfg(c.text), "microattn::LatentConfig<T_max, "
                                 + ", ".join(str(want[c.name][k]) for k in (
                                     "D_MODEL", "HEADS", "D_LATENT", "D_ROPE", "D_NOPE", "D_V"))
                                 + q + ">")
                self.assertIn("RopePairing::kAdjacent", c.text)
                default = "the default" in c.text.split(f"set_scale({N}_SCALE)")[1].split("\n")[0]
                self.assertEqual(default, c.name == "lat_q")

    def test_compiles_as_c11_and_cxx17_and_holds_the_module_bits(self):
        compile_ok("c")
        compile_ok("cxx")
        self.assertEqual(RESULTS["c_run"][0], 0, RESULTS["c_run"][1])
        self.assertEqual(RESULTS["cxx_run"][0], 0, RESULTS["cxx_run"][1])
        want = b""
        for c in RESULTS["cases"]:
            names = {**ex.LATENT_LINEARS, **ex.LATENT_NORMS}
            for r in ex.LATENT_ROLES:
                if r in c.roles:
                    w = getattr(c.module, names[r]).weight.detach().numpy()
                    want += np.ascontiguousarray(w, dtype="<f4").tobytes()
        with open(os.path.join(WORK, "c_dump.bin"), "rb") as f:
            self.assertEqual(f.read(), want)

    def test_other_latent_config_is_a_compile_error_naming_the_parameter(self):
        for i, (what, cfg, text) in enumerate(MISMATCHES):
            with self.subTest(what=what):
                rc, out = RESULTS["compiled"][("mismatch", i)]
                self.assertNotEqual(rc, 0, f"{cfg} compiled")
                self.assertIn(text, out)


    def test_path_picks_the_module_inside_a_model(self):
        """A decoder layer holding it as self_attn: --path exports the same header (but for the
        line naming the source); without --path the refusal names the candidate."""
        c = RESULTS["cases"][1]
        layer = torch.nn.ModuleDict({"self_attn": c.module, "mlp": torch.nn.Linear(2, 2)})
        path = os.path.join(WORK, "layer.pt")
        torch.save(torch.nn.ModuleDict({"layers": torch.nn.ModuleList([layer])}), path)
        rc, out, err = run_exporter(["--module", path, "--path", "layers.0.self_attn", "--mask",
                                     "causal", "--name", c.name])
        self.assertEqual(rc, 0, err)
        drop = re.compile(rf"^// {c.name}: .*$", re.M)
        self.assertEqual(drop.sub("", out), drop.sub("", c.text))
        self.assertIn("from 'layers.0.self_attn' of", out)
        rc, out, err = run_exporter(["--module", path, "--mask", "causal"])
        self.assertEqual(rc, 2, err)
        self.assertIn("layers.0.self_attn (DeepseekStyleAttention)", err)


class LatentAttentionForward(unittest.TestCase):
    def test_matches_pytorch_in_every_mode(self):
        """Prefill + decode, one prefill, chunked prefill and a decode stream, each against the
        module's forward in float64 (tolerance()) and in float32 (twice that: both round)."""
        compile_ok("forward")
        rc, out = RESULTS["forward_run"]
        self.assertEqual(rc, 0, out)
        for c in RESULTS["cases"]:
            tol = tolerance(c)
            for mode in MODES:
                with self.subTest(case=c.name, mode=mode):
                    y = outputs(c, mode)
                    e64 = float(np.abs(y - c.y64).max())
                    e32 = float(np.abs(y - c.y32).max())
                    print(f"  {c.name} {mode}: max|y| {np.abs(c.y64).max():.3g}, |y - y64| "
                          f"{e64:.2e}, |y - y32| {e32:.2e}, tolerance {tol:.2e}", file=sys.stderr)
                    self.assertLessEqual(e64, tol)
                    self.assertLessEqual(e32, 2 * tol)
                    self.assertGreater(float(np.abs(y).max()), 0.1)

    def test_absorbed_decode_equals_unabsorbed_prefill(self):
        """The decoded tokens' outputs (absorbed form) against one prefill's (unabsorbed): both
        round, so twice the tolerance against float64."""
        compile_ok("forward")
        for c in RESULTS["cases"]:
            ref = outputs(c, "prefill")
            for mode in ("prompt_decode", "decode_stream"):
                with self.subTest(case=c.name, mode=mode):
                    first = PROMPT if mode == "prompt_decode" else 0
                    d = float(np.abs(outputs(c, mode)[first:] - ref[first:]).max())
                    print(f"  {c.name} {mode} vs prefill: {d:.2e}", file=sys.stderr)
                    self.assertLessEqual(d, 2 * tolerance(c))

    def test_the_settings_matter(self):
        """The tests above have teeth: half-split pairing of the raw weights (the pitfall), or
        the scale 1/sqrt(d_c + d_R), changes the output by far more than the tolerance."""
        for c in RESULTS["cases"]:
            m = c.module
            wrong = {"kHalfSplit": reference(m, c.x, pairing="half"),
                     "1/sqrt(d_c + d_R)": reference(
                         m, c.x, scale=(m.kv_lora_rank + m.qk_rope_head_dim) ** -0.5)}
            for what, y in wrong.items():
                with self.subTest(case=c.name, wrong=what):
                    d = float(np.abs(y - c.y64).max())
                    print(f"  {c.name} with {what}: off by {d:.2e}", file=sys.stderr)
                    self.assertGreater(d, 100 * tolerance(c))


class LatentAttentionInt8(unittest.TestCase):
    """--quant int8: the header, and LatentAttention with WeightType::kInt8 on it."""

    def test_header_holds_what_quantize_int8_makes_of_the_module(self):
        """The int8 arrays and scales are quantize_int8's bytes; the header's error lines are
        the exporter's stderr lines; the Config line says WeightType::kInt8; the RMSNorm weights
        stay the fp32 header's."""
        compile_ok("quant_check")
        rc, out = RESULTS["quant_check_run"]
        self.assertEqual(rc, 0, out)
        for c in RESULTS["cases"]:
            with self.subTest(case=c.name):
                mats = [r for r in c.roles if r[0] == "w"]
                rows = [ln.split() for ln in out.splitlines() if ln.startswith(c.name + " ")]
                self.assertEqual(sorted(r[1] for r in rows), sorted(mats), out)
                self.assertTrue(all(r[2] == "same" for r in rows), out)
                err = c.q8_err.splitlines()
                self.assertEqual(len(err), len(mats) + 1, c.q8_err)
                self.assertRegex(err[-1], LAYER_ERROR)
                report = {m[0]: m[1:] for m in re.findall(MATRIX_ERROR, c.q8_err, re.M)}
                comment = {m[0]: m[1:] for m in re.findall(r"^//   (W_\w+) (\S+), (\S+), (\S+)$",
                                                          c.q8_text, re.M)}
                self.assertEqual(set(report), {ex.LATENT_MATRIX_NAMES[r] for r in mats})
                for nm, v in report.items():
                    self.assertEqual([float(a) for a in comment[nm]], [float(a) for a in v])
                    self.assertLess(float(v[2]), 0.01)  # ||W - Wq|| / ||W||
                self.assertTrue(header_cfg(c.q8_text).endswith(", microattn::WeightType::kInt8>"))
                self.assertEqual(header_cfg(c.q8_text).replace(", microattn::WeightType::kInt8",
                                                               ""), header_cfg(c.text))
                self.assertIn(f"#define {c.q8.upper()}_WEIGHT_TYPE 1", c.q8_text)
                for g in ("gq", "gkv"):
                    if g in c.roles:
                        a = re.search(rf"{c.name}_{g}\[\d+\] = {{(.*?)}};", c.text, re.S)
                        b = re.search(rf"{c.q8}_{g}\[\d+\] = {{(.*?)}};", c.q8_text, re.S)
                        self.assertEqual(a.group(1), b.group(1))

    def test_fp32_latent_config_is_a_compile_error(self):
        rc, out = RESULTS["compiled"]["mismatch_q8"]
        self.assertNotEqual(rc, 0)
        self.assertIn("the exported weights' WeightType (fp32 / int8) differs", out)

    def test_equals_the_fp32_layer_of_the_dequantised_weights(self):
        """Same math, both in float (the int8 kernels scale the sums, the fp32 layer multiplies
        by s[o] * q rounded to float): within twice the fp32 tolerance, in every mode."""
        compile_ok("forward")
        self.assertEqual(RESULTS["forward_run"][0], 0, RESULTS["forward_run"][1])
        for c in RESULTS["cases"]:
            for mode in MODES:
                with self.subTest(case=c.name, mode=mode):
                    d = float(np.abs(outputs(c, mode, c.q8) -
                                     outputs(c, mode, f"{c.name}_dq")).max())
                    print(f"  {c.q8} {mode} vs fp32 of the dequantised weights: {d:.2e} "
                          f"(tolerance {2 * tolerance(c):.2e})", file=sys.stderr)
                    self.assertLessEqual(d, 2 * tolerance(c))

    def test_matches_pytorch_within_the_quantisation_bound(self):
        """Against the module's forward in float64, every mode: within int8_tolerance(), and
        (teeth) further off than the fp32 tolerance. Prints ||e||/||y||, max|e|/max|y| and how
        many rows keep their argmax (a greedy pick) beside the exporter's reported error."""
        compile_ok("forward")
        self.assertEqual(RESULTS["forward_run"][0], 0, RESULTS["forward_run"][1])
        for c in RESULTS["cases"]:
            tol = int8_tolerance(c)
            reported = re.search(LAYER_ERROR, c.q8_err, re.M).groups()
            for mode in MODES:
                with self.subTest(case=c.name, mode=mode):
                    y = outputs(c, mode, c.q8)
                    e = float(np.abs(y - c.y64).max())
                    rel = float(np.linalg.norm(y - c.y64) / np.linalg.norm(c.y64))
                    greedy = int((y.argmax(axis=1) == c.y64.argmax(axis=1)).sum())
                    print(f"  {c.q8} {mode}: ||e||/||y|| {rel:.2e}, max|e|/max|y| "
                          f"{e / float(np.abs(c.y64).max()):.2e} (exporter: {reported[0]}, "
                          f"{reported[1]}), argmax kept {greedy}/{T}, max|e| {e:.2e}, "
                          f"bound {tol:.2e}", file=sys.stderr)
                    self.assertLessEqual(e, tol)
                    self.assertGreater(e, tolerance(c))


class LatentAttentionRefusals(unittest.TestCase):
    """Each: exit status 2, one line on stderr, nothing on stdout, no --out file."""

    def module(self, q_lora=None, **kw):
        dims = dict(d_model=16, heads=2, d_c=8, d_r=4, d_nope=6, d_v=5, q_lora=q_lora,
                    theta=10000.0, eps=1e-6)
        dims.update(kw)
        return latent_module(7, **dims)

    def refused(self, obj, *needles, args=("--mask", "causal"), state_dict=False):
        path = os.path.join(WORK, "refused.pt")
        torch.save(obj, path)
        out_path = os.path.join(WORK, "should_not_exist.h")
        src = "--state-dict" if state_dict else "--module"
        rc, out, err = run_exporter([src, path, *args, "--out", out_path])
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertFalse(os.path.exists(out_path))
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("export_pytorch.py: error: "), err)
        for n in needles:
            self.assertIn(n, err)

    def test_biases(self):
        for child in ("kv_a_proj_with_mqa", "o_proj", "q_a_proj"):
            with self.subTest(child=child):
                m = self.module(q_lora=12)
                old = getattr(m, child)
                setattr(m, child, torch.nn.Linear(old.in_features, old.out_features))
                self.refused(m, f"has a bias {child}.bias", "LatentAttention has no biases")

    def test_rope_scaling(self):
        m = self.module()
        m.rope_scaling = {"type": "yarn", "factor": 40}
        self.refused(m, "rope_scaling 'yarn'", "rope_scaling must be None")

    def test_rms_norm_without_weight_or_not_rms(self):
        m = self.module(q_lora=12)
        m.q_a_layernorm.weight = None
        self.refused(m, "q_a_layernorm is an RMSNorm without a weight")
        m = self.module()
        m.kv_a_layernorm = torch.nn.LayerNorm(8)
        self.refused(m, "kv_a_layernorm is a LayerNorm, not an RMSNorm")

    def test_odd_rope_dim(self):
        self.refused(self.module(d_r=5), "qk_rope_head_dim 5 is odd")

    def test_integer_compute(self):
        self.refused(self.module(), "--compute int8: latent attention has no integer compute",
                     args=["--mask", "causal", "--quant", "int8", "--compute", "int8"])
        self.refused(self.module(), "--compute int8 needs --quant int8",
                     args=["--mask", "causal", "--compute", "int8"])

    def test_options_that_do_not_apply(self):
        for args, needle in ((["--mask", "none"], "latent attention is causal only"),
                             (["--mask", "window:4"], "latent attention is causal only"),
                             (["--mask", "causal", "--layout", "panel16"], "outin only"),
                             (["--mask", "causal", "--kv-heads", "1"], "--kv-heads does not apply"),
                             (["--mask", "causal", "--heads", "3"], "conflicting number of heads")):
            with self.subTest(args=args):
                self.refused(self.module(), needle, args=args)

    def test_inconsistent_shapes(self):
        m = self.module()
        m.num_heads = 3
        self.refused(m, "kv_b_proj.weight has shape [22, 8] but d_model 16, heads 3", "[33, 8]")
        m = self.module()
        m.qk_nope_head_dim = 5
        self.refused(m, "conflicting qk_nope_head_dim: qk_nope_head_dim = 5, query rows / heads "
                     "- qk_rope_head_dim = 6")
        m = self.module()
        m.v_head_dim = 4
        self.refused(m, "conflicting v_head_dim: v_head_dim = 4, o_proj.in_features / heads = 5")
        m = self.module()
        m.kv_b_proj = torch.nn.Linear(8, 2 * 12, bias=False)
        self.refused(m, "kv_b_proj.weight has shape [24, 8]", "need [22, 8]")
        m = self.module(q_lora=12)
        m.q_lora_rank = 10
        self.refused(m, "conflicting q_lora_rank")
        m = self.module(d_v=13)
        self.refused(m, "v_head_dim 13 exceeds kv_lora_rank + qk_rope_head_dim = 12")
        m = self.module(q_lora=12)
        m.kv_a_layernorm.variance_epsilon = 1e-5
        self.refused(m, "conflicting RMSNorm epsilons", "one epsilon for both")

    def test_state_dict_of_a_latent_module(self):
        self.refused(self.module().state_dict(), "latent attention weights", "--module",
                     args=("--mask", "causal", "--heads", "2"), state_dict=True)


class LatentAttentionCommandLine(unittest.TestCase):
    """The exporter as its own process (torch.load imports deepseek_like from PYTHONPATH)."""

    def cli(self, *argv):
        env = dict(os.environ, PYTHONPATH=HERE, PYTHONDONTWRITEBYTECODE="1")
        r = subprocess.run([sys.executable, os.path.join(OPT.source_dir, "tools",
                                                         "export_pytorch.py"), *argv],
                           capture_output=True, text=True, env=env, timeout=300)
        return r.returncode, r.stdout, r.stderr

    def test_export_and_refusal_as_processes(self):
        c = RESULTS["cases"][0]
        pt = os.path.join(WORK, f"{c.name}.pt")
        rc, out, err = self.cli("--module", pt, "--mask", "causal", "--name", c.name)
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(out, c.text)
        rc, out, err = self.cli("--module", pt, "--mask", "causal", "--name", c.q8, "--quant",
                                "int8")
        self.assertEqual((rc, out, err), (0, c.q8_text, c.q8_err))
        rc, out, err = self.cli("--module", pt, "--mask", "causal", "--quant", "int8",
                                "--compute", "int8")
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertIn("export_pytorch.py: error: --compute int8: latent attention has no integer "
                      "compute", err)


if __name__ == "__main__":
    t0 = time.time()
    prog = unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS, verbosity=2, exit=False)
    print(f"export_pytorch latent attention tests: {time.time() - t0:.1f} s", file=sys.stderr)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
