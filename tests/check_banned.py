#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The library's code (include/, lib/) uses no heap and no heap-backed standard types: no `new`,
`malloc`/`calloc`/`realloc`/`free`, `std::vector`, `std::function`, `std::string` outside
comments and string literals. (test_no_heap proves at run time that no entry point allocates;
this keeps the source honest where a path is not exercised.) Usage: check_banned.py <repo>"""
import os
import re
import sys

BANNED = re.compile(r"\bnew\b|\b(malloc|calloc|realloc|free)\s*\(|std::(vector|function|string)\b")


def code_only(text):
    """text without // and /* */ comments and string/char literals (kept line for line)."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"\"(\\.|[^\"\\\n])*\"|'(\\.|[^'\\\n])*'", '""', text)


def main():
    repo, bad = sys.argv[1], []
    for top in ("include", "lib"):
        for root, _, names in os.walk(os.path.join(repo, top)):
            for n in sorted(names):
                if n.endswith((".hpp", ".h", ".cpp")):
                    p = os.path.join(root, n)
                    for ln, line in enumerate(code_only(open(p, encoding="utf-8").read()).split("\n"), 1):
                        if BANNED.search(line):
                            bad.append(f"{os.path.relpath(p, repo)}:{ln}: {line.strip()}")
    if bad:
        print("heap or heap-backed types in the library:\n  " + "\n  ".join(bad))
        return 1
    print("include/ and lib/: no new, malloc family, std::vector, std::function, std::string")
    return 0


if __name__ == "__main__":
    sys.exit(main())
