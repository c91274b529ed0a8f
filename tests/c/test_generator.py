#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest c_api_generator: tools/microattn_c.py for the host compiler (every kind), clang++ and
arm-none-eabi-g++ when installed. Each generated header must compile as C11 with -Wall -Wextra
-Werror -pedantic (with the C compiler of that target) and its generated C++ file with the same
compiler and flags (-Werror too). A header made for another configuration or other kernel flags
(or for fp32 weights where the Config has WeightType::kInt8) must stop the C++ file with an
error that names the layer; int8 headers declare set_weights with microattn_weights_q8 and give
the int8 cache's bytes; the tool must refuse bad arguments with exit status 2 and the reason
(for a bad Config: the library's static_assert message).

  test_generator.py --source-dir DIR --work-dir DIR --cxx C++ --cc CC [--cxxflags FLAGS]
                    [--xsimd-include DIR] [--clang CLANG++] [--arm-cxx arm-none-eabi-g++]
Exit status 0 when every check passed.
"""

import argparse
import os
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
        # The header alone, then used: an object of the type and a call.
        d = os.path.dirname(h)
        name = os.path.splitext(os.path.basename(h))[0]
        src = os.path.join(d, name + "_use.c")
        with open(src, "w") as f:
            f.write('#include "%s.h"\n#include "%s.h"\nstatic %s g_obj;\n'
                    "float %s_use(void);\nfloat %s_use(void) { return %s_scale(&g_obj); }\n"
                    % (name, name, name, name, name, name))
        cmd = ([cc] + shlex.split(flags) + ["-std=c11", "-Wall", "-Wextra", "-Werror",
                                            "-pedantic", "-I" + self.include, "-I" + d, "-c",
                                            src, "-o", src + ".o"])
        return run(cmd)

    def compile_cpp(self, cxx, flags, cpp, include_dirs=()):
        cmd = ([cxx, "-std=c++17"] + shlex.split(flags) +
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
        if kind.endswith("_q8"):
            int8_checks(s, tag, kind, cxx, flags, include_dirs, h, v)


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
        r = s.compile_cpp(cxx, flags + " -DMICROATTN_C_ALLOW_LARGER_STORAGE=1", cpp, include_dirs)
        check(r.returncode == 0, "mismatch: ... a larger one is accepted with "
              "MICROATTN_C_ALLOW_LARGER_STORAGE", r.stdout[-3000:])
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


def refusal_checks(s, cxx, flags, include_dirs):
    cases = [
        (["--name", "x", "--config", "24, 32, 3, 2, 8"], "H_kv (key/value heads) must divide H"),
        (["--name", "1x", "--config", "24, 32, 4, 2, 8"], "is not a C identifier"),
        (["--name", "x", "--kind", "layer", "--chunk", "4", "--config", "24, 32, 4, 2, 8"],
         "--chunk applies to --kind kv only"),
        (["--name", "x", "--kind", "kv", "--chunk", "25", "--config", "24, 32, 4, 2, 8"],
         "kPrefillChunk must be in 1 .. T_max"),
        (["--name", "x", "--config", "float"], "--config: give the Config's arguments"),
        (["--name", "x", "--config", "24, 32, 4, 2, 8", "--cxx", "/nonexistent/c++"],
         "cannot run the compiler"),
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
                  ["layer", "kv", "core", "layer_q8", "kv_q8"], inc)
    mismatch_checks(s, args.cxx, args.cxxflags, inc)
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
                      ["layer", "kv", "core", "kv_q8"], cflags=ARM_FLAGS)
        # The Cortex-M header: 32-bit pointers, scalar kernels.
        h = os.path.join(s.work, "arm-none-eabi", "glayer.h")
        if os.path.exists(h):
            text = open(h).read()
            check("(kernels: scalar)" in text and ARM_FLAGS in text,
                  "arm-none-eabi: the header records the scalar kernels and the target's flags")
    else:
        log("skip arm-none-eabi-g++: not found")

    log("%d failure(s) in %.1f s" % (len(failures), time.time() - t0))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
