#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the size figures in README.md and docs/ from real builds, instead of typing them.

Reads the Cortex-M builds (build/cortex-m4, -m7, -m55: `cmake --workflow --preset cortex-m4`
etc. first): the fp32 and int8-weight example images' sizes with arm-none-eabi-size, their
weights and layer objects with arm-none-eabi-nm, the worst-case stacks with the
microattn_cm_stack_report target and stack_usage.py on each example image, and the benchmark's
QEMU -icount instruction counts by running microattn_cm_bench exactly as its ctest does
(qemu-system-arm; deterministic: the same build gives the same counts). Compiles and
runs a probe on the host for the x86-64-v3 (AVX2) figures (KvAttention memory of D1/D2, the
demo layer). Then rewrites each region between `<!-- figures:NAME -->` and `<!-- /figures -->`.

  python3 scripts/update_figures.py           # rewrite the files
  python3 scripts/update_figures.py --check   # exit 1 (and show the difference) if stale
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOARDS = [("cortex-m4", "mps2-an386 (Cortex-M4F)"), ("cortex-m7", "mps2-an500 (Cortex-M7)"),
          ("cortex-m55", "mps3-an547 (Cortex-M55)")]
WEIGHT_SYMBOLS = ("kWq", "kWk", "kWv", "kWo")  # both examples (int8: the matrix + its scales)
# (image, label): the fp32 example and the int8-weight one (ports/cortex-m/example_q8.cpp).
EXAMPLES = (("microattn_cm_example", "fp32"), ("microattn_cm_example_q8", "int8"))
# Benchmark cases in the instruction-count tables: (name, what).
ICOUNT_CASES = (
    ("M1", "layer forward, T=64, fp32 weights (`kInOut`)"),
    ("M1_panel16", "the same, fp32 `kPanel16`"),
    ("M1_q8", "the same, int8 weights (`kPanel16`)"),
    ("MD1", "one decode step over 63 cached tokens, fp32 weights (`kInOut`), fp32 cache"),
    ("MD1_panel16", "the same, fp32 `kPanel16`"),
    ("MD1_q8", "the same, int8 weights (`kPanel16`), fp32 cache"),
    ("MD1_q8_kv8", "the same, int8 weights (`kPanel16`), int8 cache"),
)
STACK_RESERVE = 8192  # ports/cortex-m/linker/firmware.ld

PROBE = r"""
#include <cstdio>
#include "microattn/microattn.hpp"
int main() {
  using D1 = microattn::Config<1024, 512, 8, 8, 64, microattn::Rope::kYes>;
  using D2 = microattn::Config<1024, 512, 8, 2, 64, microattn::Rope::kYes>;
  using Demo = microattn::Config<64, 64, 4, 2, 16>;
  using K1 = microattn::KvAttention<D1>;
  using K2 = microattn::KvAttention<D2>;
  std::printf("d1_cache %zu\nd1_rope %zu\nd1_work %zu\n", K1::kCacheBytes, K1::kRopeBytes,
              K1::kWorkspaceBytes);
  std::printf("d2_cache %zu\nd2_rope %zu\nd2_work %zu\n", K2::kCacheBytes, K2::kRopeBytes,
              K2::kWorkspaceBytes);
  std::printf("demo_ram %zu\n", microattn::MultiHeadAttention<Demo>::ram_bytes());
}
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def n(v, sep=","):
    return f"{v:,}".replace(",", sep)


def stack_table(out):
    """{entry name: bytes} from stack_usage.py --markdown output."""
    stacks = {}
    for line in out.splitlines():
        m = re.match(r"\| `(.*?)` \| (\d+) \|", line)
        if m:
            stacks[m.group(1)] = int(m.group(2))
    return stacks


def bench_icounts(preset, board):
    """{case: instructions} from one run of microattn_cm_bench, with its ctest's command line."""
    build = os.path.join(ROOT, "build", preset)
    tests = json.loads(run(["ctest", "--test-dir", build, "--show-only=json-v1"]))["tests"]
    cmd = next((t["command"] for t in tests if t["name"] == f"cortex_m.{board}.bench"), None)
    if not cmd:
        sys.exit(f"update_figures: no cortex_m.{board}.bench test in {build}")
    out = run(cmd, timeout=600)
    result = json.loads(out[out.index("{"):])
    counts = {}
    for b in result["benchmarks"]:
        if "instructions" not in b:
            sys.exit(f"update_figures: {preset} bench case {b.get('name')}: no instruction count "
                     f"({b.get('error_message') or b.get('label') or 'not run under -icount'})")
        counts[b["name"]] = round(float(b["instructions"]))
    return counts


def cortex_m_figures():
    images, layer_ram, stacks, icounts = [], {}, None, {}
    for preset, label in BOARDS:
        cm = os.path.join(ROOT, "build", preset, "ports", "cortex-m")
        board = label.split()[0]
        for image, kind in EXAMPLES:
            elf = os.path.join(cm, image + ".elf")
            if not os.path.exists(elf):
                sys.exit(f"update_figures: {elf} missing: run `cmake --workflow --preset {preset}` first")
            text, data, bss = (int(x) for x in run(["arm-none-eabi-size", elf]).splitlines()[1].split()[:3])
            syms = {}
            for line in run(["arm-none-eabi-nm", "-S", "-C", elf]).splitlines():
                parts = line.split()
                if len(parts) >= 4:
                    syms[parts[-1].split("::")[-1]] = int(parts[1], 16)
            weights = sum(syms[s] for s in WEIGHT_SYMBOLS)
            # Worst-case stack from the image's main, as its ctest stack_usage_<example> measures.
            main_stack = stack_table(run(
                [sys.executable, os.path.join(ROOT, "ports", "cortex-m", "stack_usage.py"),
                 "--dir", os.path.join(cm, "CMakeFiles", image + ".dir"),
                 "--dir", os.path.join(cm, "CMakeFiles", "microattn_cm_port.dir"),
                 "--dir", os.path.join(ROOT, "build", preset, "CMakeFiles", "microattn.dir"),
                 "--entry", "int main(*", "--markdown"]))
            images.append((label, kind, text + data, weights, data + bss, stack_of(main_stack, "int main(")))
            if preset == "cortex-m4":
                layer_ram[kind] = syms["g_layer"]
        if preset == "cortex-m4":
            stacks = stack_table(run(["cmake", "--build", os.path.join(ROOT, "build", preset),
                                      "--target", "microattn_cm_stack_report"]))
        icounts[preset] = bench_icounts(preset, board)
    return images, layer_ram, stacks, icounts


def stack_of(stacks, pattern):
    for name, v in stacks.items():
        if pattern in name:
            return v
    sys.exit(f"update_figures: no stack figure for {pattern}")


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
                sys.exit(f"update_figures: {preset} bench has no case {case}")
            row += f" {n(icounts[preset][case])} |"
        lines.append(row)
    return lines


def host_figures():
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "probe.cpp"), os.path.join(d, "probe")
        with open(src, "w") as f:
            f.write(PROBE)
        run(["g++", "-std=c++17", "-O1", "-march=x86-64-v3", "-I", os.path.join(ROOT, "include"),
             src, os.path.join(ROOT, "lib", "status.cpp"), "-o", exe])
        return {k: int(v) for k, v in (l.split() for l in run([exe]).splitlines())}


def regions(images, layer_ram, stacks, icounts, host):
    readme_images = ["| board | weights | flash (text + data) | of which weights | RAM (data + bss) | of which stack reserve | stack used (worst case) |",
                     "|---|---|---:|---:|---:|---:|---:|"]
    for label, kind, flash, weights, ram, stack in images:
        readme_images.append(f"| {label} | {kind} | {n(flash)} B | {n(weights)} B | {n(ram)} B | {n(STACK_RESERVE)} B | {n(stack)} B |")
    readme_images += ["", "| library working memory and stack (scalar kernels, Cortex-M4) | bytes |", "|---|---:|",
                      f"| `MultiHeadAttention<Cfg>::ram_bytes()` (all working buffers) | {n(layer_ram['fp32'])} |",
                      f"| the same with int8 weights (`WeightType::kInt8`) | {n(layer_ram['int8'])} |",
                      f"| worst-case stack, `MultiHeadAttention::forward` | {stack_of(stacks, 'entry_layer_forward(')} |",
                      f"| worst-case stack, `MultiHeadAttention::forward`, int8 weights | {stack_of(stacks, 'entry_layer_forward_q8(')} |",
                      f"| worst-case stack, `ScaledDotProductAttention::forward` | {stack_of(stacks, 'entry_sdpa_forward')} |",
                      f"| worst-case stack, `KvAttention::decode` | {stack_of(stacks, 'entry_decode_step(')} |",
                      f"| worst-case stack, `KvAttention::decode`, int8 weights | {stack_of(stacks, 'entry_decode_step_q8(')} |",
                      f"| worst-case stack, `KvAttention::decode`, int8 weights and int8 cache | {stack_of(stacks, 'entry_decode_step_q8_kv8(')} |",
                      f"| worst-case stack, `KvAttention::prefill` (from `main`) | {stack_of(stacks, 'int main')} |"]
    readme_images += [""] + icount_table(icounts)
    targets_images = ["| board | weights | flash: text + data | of which weights | of which code | RAM: data + bss (incl. stack) | of which stack | stack used (worst case, from `main`) |",
                      "|---|---|---:|---:|---:|---:|---:|---:|"]
    for label, kind, flash, weights, ram, stack in images:
        short = label.replace("Cortex-", "").replace("M4F", "M4")
        targets_images.append(f"| {short} | {kind} | {n(flash)} B | {n(weights)} B | {n(flash - weights)} B | {n(ram)} B | {n(STACK_RESERVE)} B | {n(stack)} B |")
    kv = ["| constant | bytes | D1 (1024, 512, 8, 8, 64) | D2 (H_kv = 2) |", "|---|---|---|---|",
          f"| `kCacheBytes` | `4 H_kv T_pad (d_head + d_pad)`, `T_pad` = `T_max` rounded up to the key tile (64 on AVX2, 16 scalar), `d_pad` = `d_head` rounded up to the GEMM panel | {n(host['d1_cache'], ' ')} | {n(host['d2_cache'], ' ')} |",
          f"| `kRopeBytes` | with `Rope::kYes`: `8 T_max floor(d_head/2)` (cos and sin; present even if RoPE stays off), without: a few bytes | {n(host['d1_rope'], ' ')} | {n(host['d2_rope'], ' ')} |",
          f"| `kWorkspaceBytes` | prefill: `4 kPrefillChunk ((H/H_kv) d_head + H d_head)` + GEMM panels + tile scratch; decode: one score row per query head of a group (`4 (H/H_kv) T_pad`) + a few vectors | {n(host['d1_work'], ' ')} | {n(host['d2_work'], ' ')} |"]
    demo = [f"Example: the demo's layer (T_max 64, d_model 64, H 4, H_kv 2, d_head 16) takes "
            f"{n(host['demo_ram'], ' ')} bytes with AVX2 kernels (`microattn_demo` prints it)."]
    return {("README.md", "cortex-m"): readme_images, ("docs/targets.md", "cortex-m-images"): targets_images,
            ("docs/targets.md", "cortex-m-icount"): icount_table(icounts),
            ("docs/inference.md", "kv-memory"): kv, ("README.md", "demo-ram"): demo}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="report stale figures, change nothing")
    a = ap.parse_args()
    new = regions(*cortex_m_figures(), host_figures())
    stale = False
    for path in sorted({p for p, _ in new}):
        full = os.path.join(ROOT, path)
        text = open(full).read()
        out = text
        for (p, name), lines in new.items():
            if p != path:
                continue
            pat = re.compile(rf"(<!-- figures:{name} -->\n).*?(<!-- /figures -->)", re.S)
            if not pat.search(out):
                sys.exit(f"update_figures: {path} has no <!-- figures:{name} --> region")
            out = pat.sub(lambda m: m.group(1) + "\n".join(lines) + "\n" + m.group(2), out)
        if out != text:
            stale = True
            if a.check:
                sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), out.splitlines(True), path, path))
            else:
                open(full, "w").write(out)
                print(f"update_figures: {path} updated")
    if a.check and stale:
        print("update_figures: figures are stale; run python3 scripts/update_figures.py")
        return 1
    if not stale:
        print("update_figures: figures are current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
