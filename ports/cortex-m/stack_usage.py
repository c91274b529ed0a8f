#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Worst-case stack depth of firmware entry points, from GCC's -fcallgraph-info=su output.

Each object compiled with `-fstack-usage -fcallgraph-info=su` gets a .ci file (VCG graph): one
node per function with its frame size ("48 bytes (static)") and one edge per direct call. This
script merges the .ci files found under --dir, then for every function whose demangled name
matches an --entry glob sums frames along the deepest call chain.

Not counted, and said so in the output: callees without a frame size (newlib's memcpy, libm,
libgcc helpers: compiled without -fstack-usage; typically a few dozen bytes), indirect calls,
recursion (reported as such), and interrupt frames stacked on top (32 to 104 bytes with FP
state, per nesting level).

  stack_usage.py --dir build/ports/cortex-m/CMakeFiles/microattn_cm_bench.dir --entry main \
                 [--entry 'microattn::MultiHeadAttention<*>::forward(*'] [--limit 65536] [--markdown]
Exit status 1 when an entry's depth exceeds --limit, has dynamic frames or recursion.
"""
import argparse
import fnmatch
import os
import re
import sys

NODE = re.compile(r'node:\s*\{\s*title:\s*"((?:[^"\\]|\\.)*)"\s*label:\s*"((?:[^"\\]|\\.)*)"')
EDGE = re.compile(r'edge:\s*\{\s*sourcename:\s*"((?:[^"\\]|\\.)*)"\s*targetname:\s*"((?:[^"\\]|\\.)*)"')
FRAME = re.compile(r'(\d+) bytes \(([a-z,]+)\)')


def load(dirs):
    frames, kinds, names, calls = {}, {}, {}, {}
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in files:
                if not f.endswith(".ci"):
                    continue
                text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
                for title, label in NODE.findall(text):
                    lines = label.replace("\\n", "\n").split("\n")
                    names.setdefault(title, lines[0])
                    m = FRAME.search(label)
                    if m:
                        size = int(m.group(1))
                        if size >= frames.get(title, -1):
                            frames[title], kinds[title] = size, m.group(2)
                for src, dst in EDGE.findall(text):
                    calls.setdefault(src, set()).add(dst)
    return frames, kinds, names, calls


def deepest(fn, frames, calls, memo, stack, notes):
    """(bytes, chain) of the deepest path from fn."""
    if fn in memo:
        return memo[fn]
    if fn in stack:
        notes["recursion"].add(fn)
        return 0, []
    stack.add(fn)
    best, best_chain = 0, []
    for callee in sorted(calls.get(fn, ())):
        if callee not in frames:
            notes["unknown"].add(callee)
        depth, chain = deepest(callee, frames, calls, memo, stack, notes)
        if depth > best:
            best, best_chain = depth, chain
    stack.discard(fn)
    own = frames.get(fn, 0)
    memo[fn] = (own + best, [fn] + best_chain)
    return memo[fn]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", action="append", required=True, help="folder searched for .ci files")
    ap.add_argument("--entry", action="append", required=True, help="glob on demangled names")
    ap.add_argument("--optional", action="append", default=[], help="an --entry that may be absent")
    ap.add_argument("--limit", type=int, default=0, help="fail above this many bytes")
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()

    frames, kinds, names, calls = load(args.dir)
    if not frames:
        print("no .ci files with frame sizes under", args.dir, "(build with -fcallgraph-info=su)")
        return 1
    status = 0
    rows = []
    for pattern in args.entry:
        # One row per function name: an inline function or template instance compiled into
        # several objects has one title per object; keep the deepest.
        by_name = {}
        for t in frames:
            if fnmatch.fnmatchcase(names.get(t, t), pattern):
                depth = deepest(t, frames, calls, {}, set(), {"recursion": set(), "unknown": set()})[0]
                if names.get(t, t) not in by_name or depth > by_name[names.get(t, t)][0]:
                    by_name[names.get(t, t)] = (depth, t)
        hits = [t for _, t in sorted(by_name.values(), key=lambda v: v[1])]
        if not hits:
            if pattern in args.optional:
                continue
            print(f"entry '{pattern}': no such function in the call graphs")
            status = 1
        for title in hits:
            notes = {"recursion": set(), "unknown": set()}
            depth, chain = deepest(title, frames, calls, {}, set(), notes)
            dynamic = [c for c in chain if kinds.get(c, "static") != "static"]
            rows.append((names.get(title, title), depth, chain, notes, dynamic))
            if (args.limit and depth > args.limit) or notes["recursion"] or dynamic:
                status = 1

    if args.markdown:
        print("| entry point | worst-case stack (bytes) | deepest chain |")
        print("|---|---:|---|")
    for name, depth, chain, notes, dynamic in rows:
        short = " > ".join(f"{names.get(c, c).split('(')[0]} ({frames.get(c, 0)})" for c in chain)
        if args.markdown:
            print(f"| `{name}` | {depth} | {short} |")
            continue
        print(f"{depth:7d} bytes  {name}")
        print(f"               chain: {short}")
        if notes["unknown"]:
            print("               not counted (no frame info):", ", ".join(sorted(notes["unknown"])))
        if notes["recursion"]:
            print("               RECURSION through:", ", ".join(sorted(notes["recursion"])))
        if dynamic:
            print("               DYNAMIC frames:", ", ".join(names.get(c, c) for c in dynamic))
        if args.limit and depth > args.limit:
            print(f"               EXCEEDS the {args.limit}-byte stack")
    return status


if __name__ == "__main__":
    sys.exit(main())
