#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ctest c_api_integration: docs/integration.md's build recipe, run as the page writes it (the
sh block between its integration-build markers, no CMake) with tests/c/integration_main.c as
the page's main.c:
  host             the host's C++ and C compilers; the program is linked by the C compiler and
                   run (every call MICROATTN_OK, a ring decoding past T_max);
  arm-none-eabi    (when installed) the Cortex-M4F flags of the page, linked by
                   arm-none-eabi-gcc with newlib's nano/nosys specs standing in for a firmware's
                   start-up and linker script.
Both images must hold no C++ runtime symbol (personality routine, unwinder, __cxa_*,
operator new/delete): a C firmware's link has none.

  test_integration.py --source-dir DIR --work-dir DIR --cxx C++ --cc CC [--target-flags F]
                      [--arm-cxx arm-none-eabi-g++]
Exit status 0 when every check passed.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

ARM_TARGET = "-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard"
ARM_LDFLAGS = "--specs=nano.specs --specs=nosys.specs"
CXX_RUNTIME = re.compile(r"__gxx_personality\w*|__cxa_\w+|_Unwind_\w+|__aeabi_unwind_cpp_pr\w+|"
                         r"__gnu_unwind\w*|_Znw\w+|_Zna\w+|_Zdl\w+|_Zda\w+")

failures = []


def check(ok, what, detail=""):
    print("%s %s" % ("ok  " if ok else "FAIL", what), flush=True)
    if not ok:
        failures.append(what)
        if detail:
            print(detail.rstrip(), flush=True)


def page_block(source_dir):
    text = open(os.path.join(source_dir, "docs", "integration.md")).read()
    m = re.search(r"<!-- integration-build-begin -->\n```sh\n(.*?)```\n"
                  r"<!-- integration-build-end -->", text, re.S)
    return m.group(1) if m else None


def build(tag, args, block, env_vars, nm, run_it):
    d = os.path.join(args.work_dir, tag)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    shutil.copy(os.path.join(args.source_dir, "tests", "c", "integration_main.c"),
                os.path.join(d, "main.c"))
    env = dict(os.environ, LC_ALL="C", MICROATTN=args.source_dir, **env_vars)
    r = subprocess.run(["sh", "-e", "-x", "-c", block], cwd=d, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    elf = os.path.join(d, "firmware.elf")
    check(r.returncode == 0 and os.path.isfile(elf),
          "%s: the page's commands build firmware.elf (C++ with -fno-exceptions -fno-rtti, "
          "linked by %s)" % (tag, env_vars["CC"]), r.stdout[-6000:])
    if r.returncode != 0 or not os.path.isfile(elf):
        return
    layers = open(os.path.join(d, "microattn_layers.cpp")).read()
    check("MICROATTN_C_LAYER(enc," in layers and "MICROATTN_C_KV_LAYER_CHUNKED(dec, 16," in layers,
          "%s: one generated C++ file defines both layers" % tag, layers)
    if nm:
        syms = subprocess.run([nm, elf], stdout=subprocess.PIPE, universal_newlines=True).stdout
        # glibc's own __cxa_atexit / __cxa_finalize (crt files of every C program) are not the
        # C++ runtime's.
        names = [l.split()[-1] for l in syms.splitlines() if l.strip()]
        bad = sorted({n for n in names if CXX_RUNTIME.fullmatch(n.split("@")[0]) and
                      "@GLIBC_" not in n})
        check(not bad, "%s: no C++ runtime symbol in the image" % tag, " ".join(bad))
    if run_it:
        r = subprocess.run([elf], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True)
        check(r.returncode == 0 and "integration: ok" in r.stdout,
              "%s: the program runs: every call MICROATTN_OK, the ring decodes past T_max" % tag,
              r.stdout)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source-dir", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--cxx", required=True)
    p.add_argument("--cc", required=True)
    p.add_argument("--target-flags", default="",
                   help="the host's TARGET flags (-march=native, xsimd's folder)")
    p.add_argument("--arm-cxx", default="")
    args = p.parse_args()
    block = page_block(args.source_dir)
    check(block is not None and "-fno-exceptions -fno-rtti" in (block or "") and
          "--cpp-from" in (block or ""),
          "docs/integration.md has the build block (integration-build markers) with "
          "-fno-exceptions -fno-rtti and --cpp-from")
    if block is None:
        return 1
    build("host", args, block, {"CXX": args.cxx, "CC": args.cc, "TARGET": args.target_flags,
                                "LDFLAGS": ""}, shutil.which("nm"), True)
    if args.arm_cxx:
        arm_cc = os.path.join(os.path.dirname(args.arm_cxx),
                              os.path.basename(args.arm_cxx).replace("g++", "gcc"))
        arm_nm = os.path.join(os.path.dirname(args.arm_cxx),
                              os.path.basename(args.arm_cxx).replace("g++", "nm"))
        if shutil.which(arm_cc):
            build("arm-none-eabi", args, block,
                  {"CXX": args.arm_cxx, "CC": arm_cc, "TARGET": ARM_TARGET,
                   "LDFLAGS": ARM_LDFLAGS}, shutil.which(arm_nm), False)
        else:
            print("skip arm-none-eabi: no %s" % arm_cc)
    else:
        print("skip arm-none-eabi: arm-none-eabi-g++ not found")
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
