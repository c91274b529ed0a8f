#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""No function in include/ is longer than LIMIT lines (issue 32: a function past ~80 lines is a
sign to split it). A function is a brace block whose signature (up to five lines before the
brace) has a parameter list and no control keyword; lambdas are part of their function.
No Python function in tools/*.py or scripts/*.py is longer than PY_LIMIT (120) lines, counted
by Python's ast from its def line to its last (end_lineno - lineno + 1); nested functions and
methods are counted on their own too (and inside their enclosing function).
Usage: check_function_length.py <repo> [limit]"""
import ast
import glob
import os
import re
import sys

PY_LIMIT = 120
PY_DIRS = ("tools", "scripts")
CTRL = re.compile(r"^(if|for|while|switch|else|do|namespace|struct|class|union|enum|extern|case|try)\b")


def long_functions(path, limit):
    lines = open(path, encoding="utf-8").read().split("\n")
    for i, line in enumerate(lines):
        s = line.strip()
        if not s.endswith("{") or s.startswith("//") or CTRL.match(s):
            continue
        sig, k = s, i - 1
        while (k >= 0 and k > i - 6 and lines[k].strip() and not lines[k].strip().startswith("//")
               and not re.search(r"[;{}]\s*$", lines[k].strip())):
            sig, k = lines[k].strip() + " " + sig, k - 1
        if "(" not in sig or CTRL.match(sig) or re.search(r"\[[&=]?\]\s*\(", sig):
            continue
        depth, j = 0, i
        while j < len(lines):
            depth += lines[j].count("{") - lines[j].count("}")
            if depth <= 0:
                break
            j += 1
        if j - i > limit:
            yield i + 1, j - i, sig


def long_python_functions(path, limit):
    """(line, lines, name) of each function or method in the Python file path longer than
    limit lines, in the file's order."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=path)
    funcs = [node for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for node in sorted(funcs, key=lambda node: node.lineno):
        n = node.end_lineno - node.lineno + 1
        if n > limit:
            yield node.lineno, n, node.name


def main():
    repo, limit = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 80
    bad = []
    for root, _, names in os.walk(os.path.join(repo, "include")):
        for n in sorted(names):
            if n.endswith((".hpp", ".h")):
                p = os.path.join(root, n)
                bad += [f"{os.path.relpath(p, repo)}:{ln}: {cnt} lines: {sig[:80]}"
                        for ln, cnt, sig in long_functions(p, limit)]
    py_bad = []
    for d in PY_DIRS:
        for p in sorted(glob.glob(os.path.join(repo, d, "*.py"))):
            py_bad += [f"{os.path.relpath(p, repo)}:{ln}: {cnt} lines: def {name}"
                       for ln, cnt, name in long_python_functions(p, PY_LIMIT)]
    if bad:
        print("functions over %d lines (split them):\n  " % limit + "\n  ".join(bad))
    if py_bad:
        print("Python functions over %d lines in %s (split them):\n  "
              % (PY_LIMIT, " and ".join(d + "/" for d in PY_DIRS)) + "\n  ".join(py_bad))
    if bad or py_bad:
        return 1
    print("no function in include/ over %d lines; none in %s over %d"
          % (limit, " or ".join(d + "/*.py" for d in PY_DIRS), PY_LIMIT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
