#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the size, stack and instruction-count figures in README.md and docs/ from real
builds, instead of typing them; --check (run by scripts/test_targets.sh after the Cortex-M
presets) says whether the checked-in ones are stale.

Reads the Cortex-M builds build/cortex-m4, -m7, -m55 (`cmake --workflow --preset cortex-m4` etc.
first; nothing in them is rebuilt, and a build that is missing or older than its sources is an
error naming the preset):
  - the fp32 and int8-weight example images: sizes (arm-none-eabi-size), weights and layer
    objects (arm-none-eabi-nm), worst-case stack from main (ports/cortex-m/stack_usage.py, as
    the ctests stack_usage_example*), and what they print under QEMU (their ctests' commands);
  - the benchmark image: the worst-case stack of each entry point (stack_usage.py on its call
    graphs, as the ctest stack_usage) and its QEMU -icount instruction counts (run exactly as its
    ctest; deterministic: the same build gives the same counts);
  - the benchmark's size for each MICROATTN_CM_BENCH_CASES selection (docs/porting.md): bench.cpp
    compiled and linked again per selection into a temporary folder, with the Cortex-M7 build's
    own compile and link commands (ninja -t commands; ~1 s each, --jobs in parallel).
Compiles two probes (nothing else): one for the Cortex-M4 with its build's flags (the layer
objects' sizeof and their parts, read from the object file's symbol sizes, nothing runs) and one
for the host with -march=x86-64-v3 (AVX2 kernels: KvAttention memory of D1/D2, the demo layer).
Also writes README.md's results table from a checked-in Google Benchmark JSON (RESULTS_JSON; no
benchmark runs here: how to make the file is in docs/benchmarks.md, "The README's results
table"). Without that file the region is left as it is, saying so.
Then rewrites each region between `<!-- figures:NAME -->` and `<!-- /figures -->` (regions() below).
The figures are exact for one compiler (GCC 12.2 from Debian 12's gcc-arm-none-eabi, as in CI).

  python3 scripts/update_figures.py           # rewrite the files
  python3 scripts/update_figures.py --check   # exit 1 (and show the difference) if stale
  python3 scripts/update_figures.py --results-only          # only the results table (no builds)
  python3 scripts/update_figures.py --results-from x.json   # print the results table of x.json
  python3 scripts/update_figures.py --results-filter        # the benchmark filter of its cases
  python3 scripts/update_figures.py --self-test             # check the results table on a sample
"""
import argparse
import concurrent.futures
import difflib
import fnmatch
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOARDS = [("cortex-m4", "mps2-an386 (Cortex-M4F)"), ("cortex-m7", "mps2-an500 (Cortex-M7)"),
          ("cortex-m55", "mps3-an547 (Cortex-M55)")]
WEIGHT_SYMBOLS = ("kWq", "kWk", "kWv", "kWo")  # both examples (int8: the matrix + its scales)
# (image, label): the fp32 example and the int8-weight one (ports/cortex-m/example_q8.cpp).
EXAMPLES = (("microattn_cm_example", "fp32"), ("microattn_cm_example_q8", "int8"))
BENCH = "microattn_cm_bench"
# Benchmark cases in the instruction-count tables: (name, what).
ICOUNT_CASES = (
    ("M1", "layer forward, T=64, fp32 weights (`kInOut`)"),
    ("M1_panel16", "the same, fp32 `kPanel16`"),
    ("M1_q8", "the same, int8 weights (`kPanel16`)"),
    ("MD1", "one decode step over 63 cached tokens, fp32 weights (`kInOut`), fp32 cache"),
    ("MD1_panel16", "the same, fp32 `kPanel16`"),
    ("MD1_q8", "the same, int8 weights (`kPanel16`), fp32 cache"),
    ("MD1_q8_kv8", "the same, int8 weights (`kPanel16`), int8 cache"),
    ("M1_qd8", "layer forward, T=64, int8 weights (`kPanel16`), integer compute"),
    ("MD1_qd8", "one decode step, int8 weights (`kPanel16`), integer compute, fp32 cache"),
    ("MD1_qd8_kv8", "the same, int8 cache (integer scores)"),
    ("MLD1", "one decode step over 63 cached tokens, latent attention (d_c 32, d_R 16), fp32 "
             "weights (`kInOut`), absorbed"),
    ("MLD1_panel16", "the same, fp32 `kPanel16`"),
    ("MLF1", "latent attention, 64-token prefill into the empty cache, fp32 `kInOut`, unabsorbed"),
)
# The bench's entry points (bench.cpp's noinline entry_* wrappers; stack_usage.py globs, as
# microattn_cm_bench_entries in ports/cortex-m/CMakeLists.txt) and what they stand for.
STACK_ENTRIES = (
    ("*entry_layer_forward(*", "`MultiHeadAttention<Cfg>::forward`"),
    ("*entry_layer_forward_q8(*", "`MultiHeadAttention<Cfg>::forward`, int8 weights"),
    ("*entry_sdpa_forward(*", "`ScaledDotProductAttention<Cfg>::forward`"),
    ("*entry_decode_step(*", "`KvAttention<Cfg>::decode`"),
    ("*entry_decode_step_q8(*", "`KvAttention<Cfg>::decode`, int8 weights"),
    ("*entry_decode_step_q8_kv8(*", "`KvAttention<Cfg>::decode`, int8 weights and int8 cache"),

    ("int main(*", "`KvAttention<Cfg>::prefill` (from `main`)"),
    ("*entry_layer_forward_qd8(*", "`MultiHeadAttention<Cfg>::forward`, integer compute"),
    ("*entry_decode_step_qd8(*", "`KvAttention<Cfg>::decode`, integer compute"),
    ("*entry_decode_step_qd8_kv8(*", "`KvAttention<Cfg>::decode`, integer compute, int8 cache"),
    ("*entry_latent_decode_step(*", "`LatentAttention<LCfg>::decode`"),
    ("*entry_latent_prefill(*", "`LatentAttention<LCfg>::prefill`"),
)
# The integer-compute cases' own bench image (ports/cortex-m/CMakeLists.txt says why) and the
# entries found in it.
BENCH_QD8 = "microattn_cm_bench_qd8"
QD8_ENTRIES = ("*entry_layer_forward_qd8(*", "*entry_decode_step_qd8(*",
               "*entry_decode_step_qd8_kv8(*")
# The latent attention cases' own image (idem) and its entries.
BENCH_LATENT = "microattn_cm_bench_latent"
LATENT_ENTRIES = ("*entry_latent_decode_step(*", "*entry_latent_prefill(*")
# Benchmark case selections sized for docs/porting.md (built on BENCH_SIZES_PRESET); "all" is
# the preset's own microattn_cm_bench.
BENCH_SELECTIONS = ("M1", "M2", "M3", "MD1", "M1_panel16", "MD1_panel16", "M1_q8", "MD1_q8",
                    "MD1_q8_kv8", "MLD1", "MLD1_panel16", "MLF1", "M1;MD1_q8")
BENCH_SIZES_PRESET = "cortex-m7"
STACK_RESERVE = 8192  # ports/cortex-m/linker/firmware.ld

# Host probe (AVX2 kernels): KvAttention memory (docs/inference.md), the demo's layer (README.md,
# docs/memory.md).
PROBE = r"""
#include <cstdio>
#include "microattn/microattn.hpp"
int main() {
  using namespace microattn;
  using D1 = Config<1024, 512, 8, 8, 64, Rope::kYes>;
  using D2 = Config<1024, 512, 8, 2, 64, Rope::kYes>;
  using D1c8 = Config<1024, 512, 8, 8, 64, Rope::kYes, CacheType::kInt8>;
  using D2c8 = Config<1024, 512, 8, 2, 64, Rope::kYes, CacheType::kInt8>;
  using Demo = Config<64, 64, 4, 2, 16>;
  using K1 = KvAttention<D1>;
  using K2 = KvAttention<D2>;
  // docs/inference.md's kPrefillChunk example: scalar kernels, chunks of 16 against whole prompts.
  using Small = Config<128, 64, 4, 1, 16>;
  using C16 = KvAttention<Small, ScalarArch, 16>;
  using CAll = KvAttention<Small, ScalarArch>;
  std::printf("d1_cache %zu\nd1_rope %zu\nd1_work %zu\n", K1::kCacheBytes, K1::kRopeBytes,
              K1::kWorkspaceBytes);
  std::printf("d2_cache %zu\nd2_rope %zu\nd2_work %zu\n", K2::kCacheBytes, K2::kRopeBytes,
              K2::kWorkspaceBytes);
  std::printf("d1_cache_int8 %zu\nd2_cache_int8 %zu\n", KvAttention<D1c8>::kCacheBytes,
              KvAttention<D2c8>::kCacheBytes);
  std::printf("chunk16_work %zu\nchunk16_ram %zu\nchunkall_work %zu\n", C16::kWorkspaceBytes,
              C16::ram_bytes(), CAll::kWorkspaceBytes);
  std::printf("demo_ram %zu\ndemo_weights %zu\n", MultiHeadAttention<Demo>::ram_bytes(),
              sizeof(Weights<Demo>));
}
"""

# Cortex-M4 probe: each value is the size of a char array (+1: no zero-sized arrays), read back
# with arm-none-eabi-nm -S from the object file. The example's layer (ports/cortex-m/example.cpp).
CM_PROBE = r"""
#include "microattn/microattn.hpp"
namespace {
using Cfg = microattn::Config<64, 64, 4, 4, 16>;
using Mha = microattn::MultiHeadAttention<Cfg>;
using MhaQ8 = microattn::MultiHeadAttention<microattn::Config<64, 64, 4, 4, 16, microattn::WeightType::kInt8>>;
using Sdpa = microattn::ScaledDotProductAttention<Cfg>;
using Kv = microattn::KvAttention<Cfg>;
using LCfg = microattn::LatentConfig<64, 64, 4, 32, 16, 16, 16>;  // bench.cpp's MLD1
using Mla = microattn::LatentAttention<LCfg>;
// docs/latent-attention.md: both layers prefilling 8 tokens at a time, at T_max 64 and 256.
using Arch = microattn::DefaultArch;
using Kv8 = microattn::KvAttention<Cfg, Arch, 8>;
using Mla8 = microattn::LatentAttention<LCfg, Arch, 8>;
using Kv256 = microattn::KvAttention<microattn::Config<256, 64, 4, 4, 16>, Arch, 8>;
using Mla256 = microattn::LatentAttention<microattn::LatentConfig<256, 64, 4, 32, 16, 16, 16>, Arch, 8>;
// ... with the option LatentPrefill::kAbsorbed (no unabsorbed staging), and with int8 caches.
constexpr auto kAbs = microattn::LatentPrefill::kAbsorbed;
constexpr auto kC8 = microattn::CacheType::kInt8;
using MlaAbs8 = microattn::LatentAttention<microattn::LatentConfig<64, 64, 4, 32, 16, 16, 16, kAbs>, Arch, 8>;
using MlaAbs256 = microattn::LatentAttention<microattn::LatentConfig<256, 64, 4, 32, 16, 16, 16, kAbs>, Arch, 8>;
using Kv256c8 =
    microattn::KvAttention<microattn::Config<256, 64, 4, 4, 16, kC8, microattn::Rope::kYes>, Arch, 8>;
using MlaAbs256c8 =
    microattn::LatentAttention<microattn::LatentConfig<256, 64, 4, 32, 16, 16, 16, kAbs, kC8>, Arch, 8>;
}  // namespace
#define FIG(name, value) extern "C" { char microattn_fig_##name[(value) + 1]; }
FIG(q, Mha::kQFloats * sizeof(float))
FIG(ctx, Mha::kCtxFloats * sizeof(float))
FIG(pack, Mha::kPackFloats * sizeof(float))
FIG(core, Mha::kCoreBytes)
FIG(mha, Mha::ram_bytes())
FIG(mha_q8, MhaQ8::ram_bytes())
FIG(sdpa, Sdpa::ram_bytes())
FIG(kv, Kv::ram_bytes())
FIG(kv_cache, Kv::kCacheBytes)
FIG(kv_work, Kv::kWorkspaceBytes)
FIG(kv_weights, (2 * Cfg::kDModel * Cfg::kQDim + 2 * Cfg::kDModel * Cfg::kKvDim) * sizeof(float))
FIG(mla, Mla::ram_bytes())
FIG(mla_cache, Mla::kCacheBytes)
FIG(mla_cache_token, Mla::kCacheBytesPerToken)
FIG(mla_work, Mla::kWorkspaceBytes)
FIG(kv_chunk8, Kv8::ram_bytes())
FIG(mla_chunk8, Mla8::ram_bytes())
FIG(kv_256_chunk8, Kv256::ram_bytes())
FIG(kv_256_cache, Kv256::kCacheBytes)
FIG(mla_256_chunk8, Mla256::ram_bytes())
FIG(mla_256_cache, Mla256::kCacheBytes)
FIG(mla_abs_chunk8, MlaAbs8::ram_bytes())
FIG(mla_abs_256_chunk8, MlaAbs256::ram_bytes())
FIG(kv_256c8_chunk8, Kv256c8::ram_bytes())
FIG(kv_256c8_cache, Kv256c8::kCacheBytes)
FIG(mla_abs_256c8_chunk8, MlaAbs256c8::ram_bytes())
FIG(mla_abs_256c8_cache, MlaAbs256c8::kCacheBytes)
FIG(mla_weights, (LCfg::kDModel * (LCfg::kQDim + LCfg::kDCache) + LCfg::kDLatent +
                  LCfg::kDLatent * LCfg::kUkvDim + LCfg::kVDim * LCfg::kDModel) * sizeof(float))
"""


def fail(msg):
    sys.exit(f"update_figures: {msg}")


def run(cmd, **kw):
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout
    except subprocess.CalledProcessError as e:
        last = (e.stderr or e.stdout or "").strip().splitlines()[-1:]
        fail(f"`{' '.join(shlex.quote(c) for c in cmd)}` failed ({e.returncode})"
             + (f": {last[0]}" if last else ""))
    except subprocess.TimeoutExpired:
        fail(f"`{' '.join(shlex.quote(c) for c in cmd)}` timed out")
    except FileNotFoundError as e:
        fail(f"{e.filename} not found (scripts/setup.sh --cross installs the cross tools)")


def n(v, sep=","):
    return f"{v:,}".replace(",", sep)


def build_dir(preset):
    return os.path.join(ROOT, "build", preset)


def cm_dir(preset):
    return os.path.join(build_dir(preset), "ports", "cortex-m")


def check_builds():
    """One line per preset whose build is missing, incomplete or older than its sources."""
    problems = []
    for preset, _ in BOARDS:
        build = build_dir(preset)
        hint = f"run `cmake --workflow --preset {preset}` first"
        images = [image for image, _ in EXAMPLES] + [BENCH, BENCH_QD8, BENCH_LATENT]
        missing = [i for i in images if not os.path.exists(os.path.join(cm_dir(preset), i + ".elf"))]
        if not os.path.exists(os.path.join(build, "build.ninja")):
            problems.append(f"build/{preset} missing (no build.ninja): {hint}")
            continue
        if missing:
            problems.append(f"build/{preset} has no {', '.join(m + '.elf' for m in missing)}: {hint}")
            continue
        cache = open(os.path.join(build, "CMakeCache.txt")).read()
        m = re.search(r"^MICROATTN_CM_BENCH_CASES:\w+=(.*)$", cache, re.M)
        if m and m.group(1) not in ("all", ""):
            problems.append(f"build/{preset} was configured with MICROATTN_CM_BENCH_CASES={m.group(1)}, "
                            f"the figures need all cases: {hint}")
            continue
        # A dry run: would ninja rebuild any image the figures come from?
        targets = [os.path.join("ports", "cortex-m", i + ".elf") for i in images]
        try:
            r = subprocess.run(["ninja", "-C", build, "-n"] + targets, capture_output=True, text=True)
        except FileNotFoundError:
            fail("ninja not found (apt-get install ninja-build)")
        if r.returncode != 0 or "no work to do" not in r.stdout:
            steps = [l.split("] ", 1)[1] for l in r.stdout.splitlines() if re.match(r"\[\d+/\d+\] ", l)]
            problems.append(f"build/{preset} is older than its sources (ninja would start with: "
                            f"{steps[0] if steps else (r.stderr.strip() or '?').splitlines()[-1]}): {hint}")
    if problems:
        sys.exit("\n".join(f"update_figures: {p}" for p in problems))


_ctests = {}


def ctest_command(preset, name):
    """The command line of ctest `name` in a preset's build."""
    if preset not in _ctests:
        tests = json.loads(run(["ctest", "--test-dir", build_dir(preset), "--show-only=json-v1"]))["tests"]
        _ctests[preset] = {t["name"]: t.get("command") for t in tests}
    cmd = _ctests[preset].get(name)
    if not cmd:
        fail(f"build/{preset} has no ctest {name}: run `cmake --workflow --preset {preset}` first")
    return cmd


def stack_table(out):
    """{entry name: (bytes, chain)} from stack_usage.py --markdown output."""
    stacks = {}
    for line in out.splitlines():
        m = re.match(r"\| `(.*?)` \| (\d+) \| (.*) \|$", line)
        if m:
            stacks[m.group(1)] = (int(m.group(2)), m.group(3))
    return stacks


def stack_usage(dirs, entries):
    args = [sys.executable, os.path.join(ROOT, "ports", "cortex-m", "stack_usage.py"), "--markdown"]
    for d in dirs:
        args += ["--dir", d]
    for e in entries:
        args += ["--entry", e]
    return stack_table(run(args))


def stack_of(stacks, pattern, preset):
    """The stack entry whose name matches an STACK_ENTRIES glob: (bytes, chain)."""
    hits = [v for k, v in stacks.items() if fnmatch.fnmatchcase(k, pattern)]
    if len(hits) != 1:
        fail(f"build/{preset}: {len(hits)} stack figures for {pattern} (expected 1)")
    return hits[0]


def short_name(fn):
    """'void microattn::KvAttention<Cfg, ...>::run_prefill' -> 'KvAttention::run_prefill'."""
    while True:
        s = re.sub(r"<[^<>]*>", "", fn)
        if s == fn:
            break
        fn = s
    parts = fn.split()[-1].split("::")
    if len(parts) >= 2 and parts[-2][:1].isupper():
        return "::".join(parts[-2:])
    return parts[-1]


def short_chain(chain):
    """stack_usage.py's chain with short names; consecutive frames of one function (its lambdas,
    its clones) shown together, `f32_attn_rows` (368 + 12)."""
    out = []
    # Links end in "(bytes)"; a template's "> >" inside a name is not a separator.
    for link in re.split(r"(?<=\)) > ", chain):
        m = re.match(r"(.*) \((\d+)\)$", link)
        name, size = short_name(m.group(1)), m.group(2)
        if out and out[-1][0] == name:
            out[-1][1].append(size)
        else:
            out.append((name, [size]))
    return " > ".join(f"`{name}` ({' + '.join(sizes)})" for name, sizes in out)


def bench_icounts(preset, board):
    """{case: instructions} from one run of microattn_cm_bench, microattn_cm_bench_qd8 and
    microattn_cm_bench_latent, with their ctests' command lines."""
    benchmarks = []
    for test in ("bench", "bench_qd8", "bench_latent"):
        out = run(ctest_command(preset, f"cortex_m.{board}.{test}"), timeout=600)
        benchmarks += json.loads(out[out.index("{"):])["benchmarks"]
    counts = {}
    for b in benchmarks:
        if "instructions" not in b:
            fail(f"{preset} bench case {b.get('name')}: no instruction count "
                 f"({b.get('error_message') or b.get('label') or 'not run under -icount'})")
        counts[b["name"]] = round(float(b["instructions"]))
    return counts


def size_of(elf):
    """(text + data, data + bss) of an image: flash and RAM."""
    text, data, bss = (int(x) for x in run(["arm-none-eabi-size", elf]).splitlines()[1].split()[:3])
    return text + data, data + bss


def ninja_command(build, target):
    """The last command ninja runs for `target` (its own compile or link line), as argv."""
    line = run(["ninja", "-C", build, "-t", "commands", target]).splitlines()[-1]
    # Link lines are `: && g++ ... && cd ... && arm-none-eabi-size ...`: keep the g++ part.
    for part in line.split(" && "):
        argv = shlex.split(part)
        if argv and argv[0] != ":" and "-o" in argv:
            return argv
    fail(f"cannot read the command for {target} in {build}")


def bench_variant_sizes(preset, jobs):
    """{selection: (flash, ram)} of microattn_cm_bench compiled for each BENCH_SELECTIONS entry
    with the build's own compile and link commands (in a temporary folder; the build is untouched)."""
    build = build_dir(preset)
    obj_target = f"ports/cortex-m/CMakeFiles/{BENCH}.dir/bench.cpp.obj"
    cc = ninja_command(build, obj_target)
    ld = ninja_command(build, f"ports/cortex-m/{BENCH}.elf")

    def strip(argv, drop_with_value, drop_prefixes):
        out, skip = [], False
        for a in argv:
            if skip:
                skip = False
            elif a in drop_with_value:
                skip = True
            elif not any(a.startswith(p) for p in drop_prefixes):
                out.append(a)
        return out

    cc = strip(cc, {"-MT", "-MF", "-o"}, ("-MD", "-DMICROATTN_CM_BENCH_"))
    ld = strip(ld, {"-o"}, ("-Wl,-Map=", "-Wl,--print-memory-usage"))
    if obj_target not in ld:
        fail(f"build/{preset}: the link line of {BENCH} does not name {obj_target}")

    with tempfile.TemporaryDirectory() as tmp:
        def one(i_sel):
            i, sel = i_sel
            obj, elf = os.path.join(tmp, f"bench{i}.o"), os.path.join(tmp, f"bench{i}.elf")
            defs = ["-DMICROATTN_CM_BENCH_CASES_SELECTED=1"] + [f"-DMICROATTN_CM_BENCH_{c}=1" for c in sel.split(";")]
            run(cc[:1] + defs + cc[1:] + ["-o", obj], cwd=build)
            run([obj if a == obj_target else a for a in ld] + ["-o", elf], cwd=build)
            return sel, size_of(elf)

        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            sizes = dict(ex.map(one, enumerate(BENCH_SELECTIONS)))
    sizes["all"] = size_of(os.path.join(cm_dir(preset), BENCH + ".elf"))
    return sizes


def compiler_version():
    return run(["arm-none-eabi-g++", "-dumpfullversion"]).strip()


def cm_probe():
    """{name: bytes} for the Cortex-M4 (scalar kernels), compiled with that build's flags."""
    build = build_dir("cortex-m4")
    cc = ninja_command(build, "CMakeFiles/microattn.dir/lib/status.cpp.obj")
    keep, skip = [], False
    for a in cc:
        if skip:
            skip = False
        elif a in ("-MT", "-MF", "-o", "-c"):
            skip = True
        elif a != "-MD" and not a.startswith(("-fstack-usage", "-fcallgraph-info")):
            keep.append(a)
    with tempfile.TemporaryDirectory() as tmp:
        src, obj = os.path.join(tmp, "cm_probe.cpp"), os.path.join(tmp, "cm_probe.o")
        with open(src, "w") as f:
            f.write(CM_PROBE)
        run(keep + ["-c", src, "-o", obj], cwd=build)
        figs = {}
        for line in run(["arm-none-eabi-nm", "-S", obj]).splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[3].startswith("microattn_fig_"):
                figs[parts[3][len("microattn_fig_"):]] = int(parts[1], 16) - 1
    missing = set(re.findall(r"^FIG\((\w+),", CM_PROBE, re.M)) - set(figs)
    if missing:
        fail(f"the Cortex-M4 probe's object file has no size for {', '.join(sorted(missing))}")
    return figs


def example_output(preset, board, image):
    """What an example image prints under QEMU (its ctest's command line)."""
    return [l.rstrip() for l in run(ctest_command(preset, f"cortex_m.{board}.{image.replace('microattn_cm_', '')}"),
                                    timeout=120).splitlines() if l.strip()]


def cortex_m_figures(jobs):
    check_builds()
    f = {"images": [], "layer_ram": {}, "stacks": {}, "icounts": {}, "outputs": {}}
    for preset, label in BOARDS:
        cm = cm_dir(preset)
        board = label.split()[0]
        for image, kind in EXAMPLES:
            elf = os.path.join(cm, image + ".elf")
            flash, ram = size_of(elf)
            syms = {}
            for line in run(["arm-none-eabi-nm", "-S", "-C", elf]).splitlines():
                parts = line.split()
                if len(parts) >= 4:
                    syms[parts[-1].split("::")[-1]] = int(parts[1], 16)
            weights = sum(syms[s] for s in WEIGHT_SYMBOLS)
            # Worst-case stack from the image's main, as its ctest stack_usage_<example> measures.
            main_stack = stack_usage([os.path.join(cm, "CMakeFiles", image + ".dir"),
                                      os.path.join(cm, "CMakeFiles", "microattn_cm_port.dir"),
                                      os.path.join(build_dir(preset), "CMakeFiles", "microattn.dir")],
                                     ["int main(*"])
            f["images"].append((label, kind, flash, weights, ram, stack_of(main_stack, "int main(*", preset)[0]))
            f["layer_ram"][(preset, kind)] = syms["g_layer"]
            f["outputs"][(preset, kind)] = example_output(preset, board, image)
        # Every entry point of the bench image, as the ctest stack_usage (and the
        # microattn_cm_stack_report target) measure them.
        f["stacks"][preset] = {}
        for image, entries in ((BENCH, [e for e, _ in STACK_ENTRIES
                                        if e not in QD8_ENTRIES + LATENT_ENTRIES]),
                               (BENCH_QD8, list(QD8_ENTRIES)), (BENCH_LATENT, list(LATENT_ENTRIES))):
            stacks = stack_usage([os.path.join(cm, "CMakeFiles", image + ".dir"),
                                  os.path.join(cm, "CMakeFiles", "microattn_cm_port.dir"),
                                  os.path.join(build_dir(preset), "CMakeFiles", "microattn.dir")],
                                 entries)
            f["stacks"][preset].update({e: stack_of(stacks, e, preset) for e in entries})
        f["icounts"][preset] = bench_icounts(preset, board)
    f["bench_sizes"] = bench_variant_sizes(BENCH_SIZES_PRESET, jobs)
    f["bench_all"] = {p: size_of(os.path.join(cm_dir(p), BENCH + ".elf")) for p, _ in BOARDS}
    f["bench_own"] = {(p, image): size_of(os.path.join(cm_dir(p), image + ".elf"))
                      for p, _ in BOARDS for image in (BENCH_QD8, BENCH_LATENT)}
    f["probe"] = cm_probe()
    f["gcc"] = compiler_version()
    for kind, key in (("fp32", "mha"), ("int8", "mha_q8")):
        if f["probe"][key] != f["layer_ram"][("cortex-m4", kind)]:
            fail(f"the Cortex-M4 probe's ram_bytes() ({f['probe'][key]}) is not the {kind} example's "
                 f"g_layer ({f['layer_ram'][('cortex-m4', kind)]}): rebuild build/cortex-m4")
    return f


def host_figures():
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "probe.cpp"), os.path.join(d, "probe")
        with open(src, "w") as f:
            f.write(PROBE)
        run(["g++", "-std=c++17", "-O1", "-march=x86-64-v3", "-I", os.path.join(ROOT, "include"),
             src, os.path.join(ROOT, "lib", "status.cpp"), "-o", exe])
        return {k: int(v) for k, v in (l.split() for l in run([exe]).splitlines())}


def icount_table(icounts):
    head = "| case (QEMU -icount instructions per call, NOT cycles) |"
    rule = "|---|"
    for preset, label in BOARDS:
        head += f" {label} |"
        rule += "---:|"
    lines = [head, rule]
    for case, what in ICOUNT_CASES:
        row = f"| `{case}`: {what} |"
        for preset, _ in BOARDS:
            if case not in icounts[preset]:
                fail(f"{preset} bench has no case {case}")
            row += f" {n(icounts[preset][case])} |"
        lines.append(row)
    return lines


def example_block(f, kind):
    """The M4's output of an example, then how the other boards' checksum lines compare."""
    out = f["outputs"][("cortex-m4", kind)]

    def checksum(lines):
        return next((l for l in lines if l.startswith("checksum:")), None)

    ref = checksum(out)
    if ref is None:
        fail(f"the Cortex-M4 {kind} example printed no checksum line")
    same, other = [], []
    for preset, label in BOARDS[1:]:
        lines = f["outputs"][(preset, kind)]
        c = checksum(lines)
        core = label[label.index("(") + 1:-1]
        kernels = re.search(r"kernels (\w+)", lines[0])
        if c == ref:
            same.append(f"the {core}")
        else:
            other.append(f"the {core} (`kernels {kernels.group(1) if kernels else '?'}`) prints "
                         f"`{c[len('checksum: '):] if c else 'no checksum line'}`")
    note = []
    if same:
        note.append(f"{' and '.join(same)} print{'s' if len(same) == 1 else ''} the same checksum line")
    note += other
    text = "; ".join(note)
    return ["```"] + out + ["```", "", text[0].upper() + text[1:] + "."]


# README.md's results table (region "results"): the medians of one headline run of
# microattn_bench, saved as Google Benchmark JSON (docs/benchmarks.md, "The README's results
# table", has the command). Missing file: the region is left as it is.
RESULTS_JSON = os.path.join("bench", "results", "readme.json")
# Rows: (case, what, peer prefix, counter). Peers are the cases named <prefix>_eigen and
# <prefix>_openblas; the counter is read as the number the JSON holds, whatever its flags
# (a rate counter's value there is already divided by the time).
RESULT_ROWS = (
    ("P1_panel16", "P1 prefill T=64 (`kPanel16` weights)", "P1", "pct_peak"),
    ("P2_panel16", "P2 prefill T=256 (`kPanel16`)", "P2", "pct_peak"),
    ("P3_panel16", "P3 prefill T=1024 (`kPanel16`)", "P3", "pct_peak"),
    ("P4_panel16", "P4 GQA prefill T=512 (`kPanel16`)", "P4", "pct_peak"),
    ("A1", "A1 attention core T=1024", "A1", "pct_peak"),
    ("E1", "E1 encoder layer T=256 (no mask)", "E1", "pct_peak"),
    ("D1", "D1 decode, 1023 cached tokens", "D1", "pct_bw"),
    ("M1_panel16", "M1 Cortex-M example's layer (`kPanel16`)", "M1", "pct_peak"),
    ("S1", "S1 teaching notes' layer (11 tokens)", "S1", None),
)
RESULT_PEERS = (("eigen", "Eigen"), ("openblas", "OpenBLAS"))
# Two-worker speed-ups, <case>/threads:1 against <case>/threads:2 (wall-clock), when the file has them.
RESULT_THREAD_CASES = ("P2", "P3", "P4", "A1", "D1")
# Integer compute (Compute::kInt8) against fp32, when the file has them: (label, case, fp32 case).
RESULT_QD8_CASES = (("P1", "P1_qd8_panel16", "P1_panel16"), ("P2", "P2_qd8_panel16", "P2_panel16"),
                    ("P4", "P4_qd8_panel16", "P4_panel16"))
UNIT_S = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def results_cases():
    """Every benchmark case results_table reads, in the table's order: the rows' cases, their
    peers, the thread and integer-compute cases (scripts/run_main.sh runs exactly these)."""
    cases = []
    for c, _, prefix, _ in RESULT_ROWS:
        cases += [c] + [f"{prefix}_{suffix}" for suffix, _ in RESULT_PEERS]
    cases += [f"{c}/threads:{n}" for c in RESULT_THREAD_CASES for n in (1, 2)]
    cases += [name for _, q, f in RESULT_QD8_CASES for name in (q, f)]
    cases += ["D1_qd8_kv8", "D1_q8_kv8"]
    return list(dict.fromkeys(cases))


def results_filter():
    """A --benchmark_filter for results_cases(): each name whole, with whatever suffixes Google
    Benchmark adds for how it ran (/real_time, /min_time:...)."""
    return "^(" + "|".join(re.escape(c) for c in results_cases()) + ")(/.*)?$"


def counter_value(v):
    """A user counter as the JSON holds it: a number (or, defensively, {"value": n})."""
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def bench_medians(data, where):
    """{run name: {"time": seconds, counter: value, ..., "repetitions": n}} from Google Benchmark
    JSON: each case's median aggregate, or the median of its runs if it has no aggregate.
    CPU time, as the counters use, except for the cases timed in wall-clock time (UseRealTime:
    their names have /real_time, e.g. the /threads:2 cases). Keyed by the case's name without
    such suffixes (P2/threads:2/real_time -> P2/threads:2). Failed runs are left out."""
    if not isinstance(data, dict) or not isinstance(data.get("benchmarks"), list):
        fail(f"{where}: not Google Benchmark JSON (no \"benchmarks\" list)")
    medians, runs = {}, {}
    for b in data["benchmarks"]:
        name = b.get("run_name") or b.get("name")
        if not name or b.get("error_occurred"):
            continue
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = [b]
        else:
            runs.setdefault(name, []).append(b)
    for name, entries in runs.items():
        medians.setdefault(name, entries)
    out = {}
    for name, entries in medians.items():
        key = "real_time" if "/real_time" in name else "cpu_time"
        times, counters = [], {}
        for b in entries:
            if b.get(key) is None or b.get("time_unit", "ns") not in UNIT_S:
                fail(f"{where}: {name} has no {key} in a known time_unit")
            times.append(float(b[key]) * UNIT_S[b.get("time_unit", "ns")])
            for k, v in b.items():
                if k.startswith(("pct_", "gflops", "gbps")) and counter_value(v) is not None:
                    counters.setdefault(k, []).append(counter_value(v))
        rec = {k: statistics.median(v) for k, v in counters.items()}
        rec["time"] = statistics.median(times)
        rec["repetitions"] = entries[0].get("repetitions", len(entries)) if entries[0].get(
            "run_type") == "aggregate" else len(entries)
        # The case's own name: without the suffixes Google Benchmark adds for how it was run.
        out[re.sub(r"/(real_time|process_time|manual_time|min_time:[0-9.e+-]+s?|repeats:\d+|iterations:\d+)(?=/|$)",
                   "", name)] = rec
    return out


def fmt_time(sec):
    """330 us, 5.71 ms, 1.22 us: three significant digits, the unit that keeps 1 <= value < 1000."""
    for unit in ("s", "ms", "us", "ns"):
        v = float(f"{sec / UNIT_S[unit]:.3g}")
        if v >= 1 or unit == "ns":
            return f"{v:g} {unit}"


def results_table(data, where):
    """The results region's lines from one microattn_bench JSON."""
    m = bench_medians(data, where)
    ctx = data.get("context", {})

    def case(name):
        return m.get(name)

    missing = [c for c, *_ in RESULT_ROWS if case(c) is None]
    if missing:
        fail(f"{where} has no result for {', '.join(missing)} (run the command in docs/benchmarks.md, "
             f"\"The README's results table\")")
    rows = ["| case | microattn | % of peak | best peer | ratio |", "|---|---:|---:|---|---:|"]
    for c, what, prefix, counter in RESULT_ROWS:
        r = case(c)
        pct = ""
        if counter and counter in r:
            pct = f"{r[counter]:.1f} %" + (" of read bw" if counter == "pct_bw" else "")
        peers = [(case(f"{prefix}_{suffix}"), label) for suffix, label in RESULT_PEERS]
        peers = [(p["time"], label) for p, label in peers if p is not None]
        best, ratio = "", ""
        if peers:
            t, label = min(peers)
            best, ratio = f"{label} {fmt_time(t)}", f"{r['time'] / t:.2f}"
        rows.append("|" + "|".join(f" {cell} " if cell else " " for cell in (what, fmt_time(r["time"]), pct, best, ratio)) + "|")
    speedups = []
    for c in RESULT_THREAD_CASES:
        one, two = case(f"{c}/threads:1"), case(f"{c}/threads:2")
        if one and two:
            speedups.append((c, one["time"] / two["time"]))
    if speedups:
        rows.append(f"| {' / '.join(c for c, _ in speedups)} on 2 cores | "
                    f"{' / '.join(f'{x:.2f}x' for _, x in speedups)} faster than on 1 (wall-clock, same run) | | | |")
    qd8 = [(label, case(q)["time"] / case(f)["time"]) for label, q, f in RESULT_QD8_CASES
           if case(q) and case(f)]
    if qd8:
        rows.append(f"| {' / '.join(c for c, _ in qd8)} with integer compute (`Compute::kInt8`, int8 "
                    f"weights) | {' / '.join(f'{x:.2f}x' for _, x in qd8)} the fp32 time (same run) | | | |")
    dq, d8, d1 = case("D1_qd8_kv8"), case("D1_q8_kv8"), case("D1")
    if dq and d8 and d1:
        rows.append(f"| D1 with integer compute and the int8 cache (`D1_qd8_kv8`) | {fmt_time(dq['time'])}: "
                    f"{dq['time'] / d8['time']:.2f}x `D1_q8_kv8` (int8 weights and cache), "
                    f"{dq['time'] / d1['time']:.2f}x fp32 D1 (same run) | | | |")
    machine = ctx.get("machine") or f"{ctx.get('host_name', '?')} ({ctx.get('num_cpus', '?')} CPUs)"
    when = re.match(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d)", str(ctx.get("date", "")))
    when = f"{when.group(1)} {when.group(2)}{' UTC' if str(ctx.get('date')).endswith(('+00:00', 'Z')) else ''}" if when else "?"
    peak = ctx.get("fma_peak_gflops")
    reps = max((r["repetitions"] for r in m.values()), default=1)
    head = (f"{machine}, kernels `{ctx.get('microattn_arch', '?')}`"
            + (f", FMA peak {float(peak):.1f} GFLOP/s at start-up" if peak is not None else "")
            + (f"; commit {ctx['commit']}" if ctx.get("commit") else "") + f", {when}. "
            + (f"Medians of {reps} repetitions" if reps > 1 else "One repetition")
            + " (CPU time), one core unless said; % of the FMA peak (D1: of the read bandwidth) "
              "measured at start-up; ratio = microattn's time / the best peer's, same run:")
    return [head, ""] + rows


def results_region():
    """The results region, or None (with the reason) when RESULTS_JSON is not there."""
    path = os.path.join(ROOT, RESULTS_JSON)
    if not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{RESULTS_JSON}: {e}")
    return results_table(data, RESULTS_JSON)


def results_self_test():
    """results_table on a built-in sample in Google Benchmark's JSON shape."""
    def agg(name, t, unit, **counters):
        return dict(name=name + "_median", run_name=name, run_type="aggregate", repetitions=5,
                    aggregate_name="median", real_time=t * 1.01, cpu_time=t, time_unit=unit, **counters)
    data = {"context": {"date": "2026-11-25T01:25:13+00:00", "host_name": "vm", "num_cpus": 2,
                        "machine": "Sample Zen 4 VM", "commit": "abc1234",
                        "microattn_arch": "avx512bw", "fma_peak_gflops": "117.3"},
            "benchmarks": [agg(c, 330.4, "us", pct_peak=92.14, gflops=108.0) for c, *_ in RESULT_ROWS if c != "D1"]
            + [agg("D1", 92.1, "us", pct_peak=40.0, pct_bw=91.6),
               agg("A1/threads:1/real_time", 11.9, "ms"), agg("A1/threads:2/real_time", 5.99, "ms"),
               agg("P1_eigen", 473.0, "us", pct_peak=60.0), agg("P1_openblas", 0.5, "ms"),
               agg("A1_openblas", 18.2, "ms"), agg("A1_eigen", 17.8, "ms"),
               {"name": "P3_eigen", "run_name": "P3_eigen", "run_type": "iteration",
                "error_occurred": True, "error_message": "x", "real_time": 1, "cpu_time": 1, "time_unit": "ms"},
               dict(agg("P2/threads:1/real_time", 5.84, "ms"), real_time=5.84),
               dict(agg("P2/threads:2/real_time", 3.03, "ms"), real_time=3.03)]}
    lines = results_table(data, "sample")
    flt = re.compile(results_filter())
    for name in ("P1_panel16", "P1_eigen", "S1_openblas", "P2/threads:2/real_time", "D1_q8_kv8",
                 "P4_qd8_panel16", "E1/min_time:0.300"):
        if not flt.match(name):
            sys.exit(f"update_figures: --self-test FAILED, --results-filter misses {name}")
    for name in ("P1", "P1_panel16x", "P2/threads:4/real_time", "D2", "TLM_decode"):
        if flt.match(name):
            sys.exit(f"update_figures: --self-test FAILED, --results-filter takes {name}")
    expect = [
        "Sample Zen 4 VM, kernels `avx512bw`, FMA peak 117.3 GFLOP/s at start-up; commit abc1234, 2026-11-25 01:25 UTC. Medians of 5 repetitions",
        "| P1 prefill T=64 (`kPanel16` weights) | 330 us | 92.1 % | Eigen 473 us | 0.70 |",
        "| A1 attention core T=1024 | 330 us | 92.1 % | Eigen 17.8 ms | 0.02 |",
        "| P3 prefill T=1024 (`kPanel16`) | 330 us | 92.1 % | | |",
        "| D1 decode, 1023 cached tokens | 92.1 us | 91.6 % of read bw | | |",
        "| S1 teaching notes' layer (11 tokens) | 330 us | | | |",
        "| P2 / A1 on 2 cores | 1.93x / 1.99x faster than on 1 (wall-clock, same run) | | | |",
    ]
    text = "\n".join(lines)
    bad = [e for e in expect if e not in text]
    assert fmt_time(0.000999996) == "1 ms" and fmt_time(1.5e-9) == "1.5 ns" and fmt_time(2.0) == "2 s"
    # A frame whose name ends in nested templates ("1> > (72)") is one link of the chain.
    chain = ("entry_sdpa_forward (256) > microattn::internal::attend_call<C, A, false, G<C, "
             "S<C, A, 1> >, S<C, A, 1> > (72) > void microattn::kernels::f32_attn_rows (240)")
    got = short_chain(chain)
    if "attend_call` (72)" not in got or got.count("(") != 3:
        sys.exit(f"update_figures: --self-test FAILED, short_chain gave {got!r}")
    if bad:
        print(text)
        sys.exit("update_figures: --self-test FAILED, missing:\n" + "\n".join(bad))
    print("update_figures: results self-test passed")


def latent_region(f):
    """docs/latent-attention.md: MD1's KvAttention against MLD1's LatentAttention on the boards."""
    probe, ic = f["probe"], f["icounts"]
    kv_token = probe["kv_cache"] // 64

    def counts(case):
        return " / ".join(n(ic[p][case]) for p, _ in BOARDS)

    boards = " / ".join(label[label.index("(") + 1:-1].replace("Cortex-", "") for _, label in BOARDS)
    return [f"Flash and RAM from the Cortex-M4 build (scalar kernels, GCC {f['gcc']}); instructions are QEMU "
            f"-icount instruction counts per call, NOT cycles, on {boards}:", "",
            "| | MHA with its KV cache (`KvAttention`, MD1's layer) | MLA (`LatentAttention`, MLD1's layer) |",
            "|---|---:|---:|",
            f"| weights in flash (fp32) | {n(probe['kv_weights'])} B | {n(probe['mla_weights'])} B |",
            f"| cache for 64 tokens (`kCacheBytes`) | {n(probe['kv_cache'])} B ({n(kv_token)} B a token) | "
            f"{n(probe['mla_cache'])} B ({n(probe['mla_cache_token'])} B a token) |",
            f"| working memory (`kWorkspaceBytes`, mostly prefill's) | {n(probe['kv_work'])} B | {n(probe['mla_work'])} B |",
            f"| the layer object, cache included (`ram_bytes()`) | {n(probe['kv'])} B | {n(probe['mla'])} B |",
            f"| the same with `kPrefillChunk` 8 (template argument) | {n(probe['kv_chunk8'])} B | {n(probe['mla_chunk8'])} B |",
            f"| the same at T_max 256 (`kPrefillChunk` 8; of which cache) | {n(probe['kv_256_chunk8'])} B "
            f"({n(probe['kv_256_cache'])} B) | {n(probe['mla_256_chunk8'])} B ({n(probe['mla_256_cache'])} B) |",
            f"| MLA with the option `LatentPrefill::kAbsorbed` (no unabsorbed staging), `kPrefillChunk` 8, "
            f"T_max 64 / 256 | | {n(probe['mla_abs_chunk8'])} B / {n(probe['mla_abs_256_chunk8'])} B |",
            f"| T_max 256, `kPrefillChunk` 8, int8 caches (`CacheType::kInt8`), RoPE tables in both (MLA with "
            f"the option; of which cache) | {n(probe['kv_256c8_chunk8'])} B ({n(probe['kv_256c8_cache'])} B) | "
            f"{n(probe['mla_abs_256c8_chunk8'])} B ({n(probe['mla_abs_256c8_cache'])} B) |",
            f"| one decode step over 63 cached tokens, `kInOut` (`MD1` / `MLD1`) | {counts('MD1')} | {counts('MLD1')} |",
            f"| the same, `kPanel16` (`MD1_panel16` / `MLD1_panel16`) | {counts('MD1_panel16')} | {counts('MLD1_panel16')} |",
            f"| 64 tokens in one call, `kInOut` (`M1`: `MultiHeadAttention::forward`, no cache; `MLF1`: "
            f"`prefill` into the empty cache) | {counts('M1')} | {counts('MLF1')} |"]


def regions(f, host):
    gcc = f"GCC {f['gcc']} (`arm-none-eabi-g++`), Release (`-O3`)"
    stacks, probe = f["stacks"], f["probe"]
    m4 = stacks["cortex-m4"]
    readme = [f"{gcc}:", "",
              "| board | weights | flash (text + data) | of which weights | RAM (data + bss) | of which stack reserve | stack used (worst case) |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for label, kind, flash, weights, ram, stack in f["images"]:
        readme.append(f"| {label} | {kind} | {n(flash)} B | {n(weights)} B | {n(ram)} B | {n(STACK_RESERVE)} B | {n(stack)} B |")
    readme += ["", "| library working memory and stack (scalar kernels, Cortex-M4) | bytes |", "|---|---:|",
               f"| `MultiHeadAttention<Cfg>::ram_bytes()` (all working buffers) | {n(f['layer_ram'][('cortex-m4', 'fp32')])} |",
               f"| the same with int8 weights (`WeightType::kInt8`) | {n(f['layer_ram'][('cortex-m4', 'int8')])} |"]
    for pattern, what in STACK_ENTRIES:
        readme.append(f"| worst-case stack, {what} | {n(m4[pattern][0])} |")
    readme += [""] + icount_table(f["icounts"])

    targets_images = [f"{gcc}:", "",
                      "| board | weights | flash: text + data | of which weights | of which code | RAM: data + bss (incl. stack) | of which stack | stack used (worst case, from `main`) |",
                      "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, kind, flash, weights, ram, stack in f["images"]:
        short = label.replace("Cortex-", "").replace("M4F", "M4")
        targets_images.append(f"| {short} | {kind} | {n(flash)} B | {n(weights)} B | {n(flash - weights)} B | {n(ram)} B | {n(STACK_RESERVE)} B | {n(stack)} B |")

    parts = (("Q of one key/value group (`kQFloats`)", probe["q"]),
             ("concatenated heads for W_O (`kCtxFloats`)", probe["ctx"]),
             ("GEMM B panel (`kPackFloats`)", probe["pack"]),
             ("K^T and V of one head + attention tile scratch (`kCoreBytes`)", probe["core"]))
    rest = probe["mha"] - sum(v for _, v in parts)
    ram = ["| part | bytes |", "|---|---:|"] + [f"| {what} | {n(v)} |" for what, v in parts]
    ram += [f"| weight views, scale, RoPE and executor settings, alignment | {n(rest)} |",
            f"| **total `ram_bytes()`** | **{n(probe['mha'])}** |", "",
            f"(`ScaledDotProductAttention<Cfg>::ram_bytes()` alone is {n(probe['sdpa'])} B; the decode path "
            f"`KvAttention<Cfg>::ram_bytes()` is {n(probe['kv'])} B, of which {n(probe['kv_cache'])} B K/V cache "
            f"for 64 tokens and {n(probe['kv_work'])} B prefill + decode workspace.)"]

    stack = ["| entry point | " + " | ".join(label for _, label in BOARDS) + " | deepest chain on the Cortex-M4 (frame bytes) |",
             "|---|" + "---:|" * len(BOARDS) + "---|"]
    for pattern, what in STACK_ENTRIES:
        stack.append(f"| {what} | " + " | ".join(f"{n(stacks[p][pattern][0])} B" for p, _ in BOARDS)
                     + f" | {short_chain(m4[pattern][1])} |")

    core = BOARDS[[p for p, _ in BOARDS].index(BENCH_SIZES_PRESET)][1]
    core = core[core.index("(") + 1:-1]
    sizes, total = f["bench_sizes"], f["bench_all"]
    others = "; ".join(f"on the {label[label.index('(') + 1:-1]} {n(total[p][0])} B and {n(total[p][1])} B"
                       for p, label in BOARDS if p != BENCH_SIZES_PRESET)
    porting = [f"{core}, {gcc}. Every case together (`all`, the default) needs "
               f"**{n(sizes['all'][0])} B of flash and {n(sizes['all'][1])} B of RAM** "
               f"({others}). RAM includes the {n(STACK_RESERVE)} B stack:", "",
               "| `MICROATTN_CM_BENCH_CASES` | flash (text + data) | RAM (data + bss) |", "|---|---:|---:|"]
    for sel in BENCH_SELECTIONS + ("all",):
        porting.append(f"| `{sel}`{' (the default)' if sel == 'all' else ''} | {n(sizes[sel][0])} B | {n(sizes[sel][1])} B |")
    own = f["bench_own"]
    porting += ["", "The integer-compute and latent attention cases are not in `all`; each group is an image "
                "of its own, flash and RAM:", "",
                "| image | " + " | ".join(label for _, label in BOARDS) + " |", "|---|" + "---:|" * len(BOARDS)]
    for image, cases in ((BENCH_QD8, "M1_qd8;MD1_qd8;MD1_qd8_kv8"), (BENCH_LATENT, "MLD1;MLD1_panel16;MLF1")):
        porting.append(f"| `{image}` (`{cases}`) | "
                       + " | ".join(f"{n(own[(p, image)][0])} B, {n(own[(p, image)][1])} B" for p, _ in BOARDS) + " |")

    kv = ["| constant | bytes | D1 (1024, 512, 8, 8, 64) | D2 (H_kv = 2) |", "|---|---|---|---|",
          f"| `kCacheBytes` | `4 H_kv T_pad (d_head + d_pad)`, `T_pad` = `T_max` rounded up to the key tile (64 on AVX2, 16 scalar), `d_pad` = `d_head` rounded up to the GEMM panel (under a panel: to whole vectors, [memory.md](memory.md#the-kv-caches-bytes)) | {n(host['d1_cache'], ' ')} | {n(host['d2_cache'], ' ')} |",
          f"| `kCacheBytes` with `CacheType::kInt8` | `H_kv T_pad (d_head + d_pad + 8)` (int8 K and V, an fp32 scale each per token and head) | {n(host['d1_cache_int8'], ' ')} | {n(host['d2_cache_int8'], ' ')} |",
          f"| `kRopeBytes` | with `Rope::kYes`: `8 T_max floor(d_head/2)` (cos and sin; present even if RoPE stays off), without: a few bytes | {n(host['d1_rope'], ' ')} | {n(host['d2_rope'], ' ')} |",
          f"| `kWorkspaceBytes` | prefill: `4 kPrefillChunk ((H/H_kv) d_head + H d_head)` + GEMM panels + tile scratch; decode: one score row per query head of a group (`4 (H/H_kv) T_pad`) + a few vectors | {n(host['d1_work'], ' ')} | {n(host['d2_work'], ' ')} |"]
    chunk = [f"`KvAttention<Config<128, 64, 4, 1, 16>, ScalarArch, 16>` needs {n(host['chunk16_work'], ' ')} B of "
             f"workspace instead of {n(host['chunkall_work'], ' ')} B with the default chunk (`T_max`), "
             f"{n(host['chunk16_ram'], ' ')} B in all, cache included (x86-64)."]
    demo = [f"Example: the demo's layer (T_max 64, d_model 64, H 4, H_kv 2, d_head 16) takes "
            f"{n(host['demo_ram'], ' ')} bytes with AVX2 kernels (`microattn_demo` prints it), of which "
            f"{host['demo_weights']} bytes are the weight view (`sizeof(Weights<Cfg>)`, x86-64)."]
    return {("docs/memory.md", "cortex-m"): readme,
            ("docs/latent-attention.md", "cortex-m-latent"): latent_region(f), ("README.md", "demo-ram"): demo,
            ("docs/memory.md", "demo-ram"): demo,
            ("docs/targets.md", "cortex-m-images"): targets_images,
            ("docs/targets.md", "cortex-m-example"): example_block(f, "fp32"),
            ("docs/targets.md", "cortex-m-example-q8"): example_block(f, "int8"),
            ("docs/targets.md", "cortex-m-ram"): ram,
            ("docs/targets.md", "cortex-m-stack"): stack,
            ("docs/targets.md", "cortex-m-icount"): icount_table(f["icounts"]),
            ("docs/porting.md", "cortex-m-bench-images"): porting,
            ("docs/inference.md", "kv-memory"): kv,
            ("docs/inference.md", "kv-chunk"): chunk}


# Regions generated when their file has them, skipped (saying so) when not. Every other region
# must exist.
OPTIONAL = set()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="report stale figures, change nothing")
    ap.add_argument("--jobs", type=int, default=int(os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or os.cpu_count() or 1),
                    help="parallel compiles of the bench variants (default: CMAKE_BUILD_PARALLEL_LEVEL or the CPUs)")
    ap.add_argument("--results-from", metavar="JSON",
                    help="print the results table of a microattn_bench JSON file and exit (no builds needed)")
    ap.add_argument("--results-only", action="store_true",
                    help="only README.md's results region, from RESULTS_JSON (no builds needed; with or without --check)")
    ap.add_argument("--results-filter", action="store_true",
                    help="print the --benchmark_filter of the cases the results table reads and exit")
    ap.add_argument("--self-test", action="store_true", help="check the results table on a built-in sample")
    a = ap.parse_args()
    if a.self_test:
        results_self_test()
        return 0
    if a.results_filter:
        print(results_filter())
        return 0
    if a.results_from:
        try:
            with open(a.results_from) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"{a.results_from}: {e}")
        print("\n".join(results_table(data, a.results_from)))
        return 0
    new = {} if a.results_only else regions(cortex_m_figures(a.jobs), host_figures())
    new[("README.md", "results")] = results_region()
    stale = []
    for path in sorted({p for p, _ in new}):
        full = os.path.join(ROOT, path)
        text = open(full).read()
        out = text
        for (p, name), lines in new.items():
            if p != path:
                continue
            if lines is None:
                print(f"update_figures: {RESULTS_JSON} not found: {path}'s <!-- figures:{name} --> region "
                      f"left as it is (not written, not checked)")
                continue
            pat = re.compile(rf"(<!-- figures:{re.escape(name)} -->\n).*?(<!-- /figures -->)", re.S)
            if not pat.search(out):
                if (p, name) in OPTIONAL:
                    print(f"update_figures: {path} has no <!-- figures:{name} --> region (optional: not written, not checked)")
                    continue
                fail(f"{path} has no <!-- figures:{name} --> region")
            out = pat.sub(lambda m: m.group(1) + "\n".join(lines) + "\n" + m.group(2), out)
        if out != text:
            stale.append(path)
            if a.check:
                sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), out.splitlines(True), path, path))
            else:
                with open(full, "w") as fh:
                    fh.write(out)
                print(f"update_figures: {path} updated")
    if a.check and stale:
        print(f"update_figures: STALE figures in {', '.join(stale)} (diff above): run python3 scripts/update_figures.py")
        return 1
    if not stale:
        print("update_figures: figures are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
