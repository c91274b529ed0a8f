# SPDX-License-Identifier: Apache-2.0
"""What the exporter's and the tiny model's test scripts (test_export_*.py, test_tiny_lm_*.py)
share: their command line, and the skip (exit 77, ctest SKIP_RETURN_CODE) without
python3-torch."""
import argparse
import os
import sys

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))


def parser(doc):
    """The option every script has (--source-dir: the repository)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(HERE)))
    return ap


def options(doc):
    """The exporter scripts' own options; the rest of the command line goes to unittest."""
    ap = parser(doc)
    ap.add_argument("--cc", default="cc", help="C compiler (C11 checks)")
    ap.add_argument("--cxx", default="c++", help="C++ compiler (C++17 checks, the forward run)")
    ap.add_argument("--xsimd-include", default="",
                    help="folder holding xsimd/; empty: compile with MICROATTN_FORCE_SCALAR=1")
    ap.add_argument("--cxx-flags", default="", help="extra flags for the forward program")
    ap.add_argument("--work-dir", help="scratch folder (emptied first; default: a temp dir)")
    return ap.parse_known_args()


def require_torch():
    """Exits with SKIP, saying why, when this interpreter cannot import torch and numpy."""
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        print(f"SKIP: {sys.executable} cannot import torch/numpy ({e}); this test needs "
              "Debian's python3-torch (apt-get install python3-torch, run with /usr/bin/python3)")
        sys.exit(SKIP)


def run_exporter(ex, *argv):
    """(exit status, stderr) of tools/export_pytorch.py's main (module ex) with argv, its
    output captured."""
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = ex.main(list(argv))
        except SystemExit as e:
            rc = e.code
    return rc, err.getvalue()
