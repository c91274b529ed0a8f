#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/setup.sh and scripts/run_tiny_lm.sh --cortex-m4 against stand-ins for apt-get,
dpkg, dpkg-query, sudo, sleep, cmake, qemu-system-arm and arm-none-eabi-size (first on PATH;
each logs its arguments): nothing is installed, built or run.

  python3 tests/python/test_setup_scripts.py [--source-dir DIR] [unittest options]

- run_tiny_lm.sh --cortex-m4 asks apt for the Cortex-M packages only (CMake, Ninja, Python 3,
  arm-none-eabi GCC and newlib, qemu-system-arm): no host or Linux cross compilers, no
  qemu-user, no foreign architectures; then builds the cortex-m4 preset and runs QEMU;
- setup.sh with no option, --cortex-m and --cross install what each says (--cross: everything
  it installed before --cortex-m existed, the Cortex-M packages among it);
- every apt-get call waits for another apt's dpkg lock (-o DPkg::Lock::Timeout=600), and an
  apt-get update that finds the lists locked (which that option does not cover) is retried
  until the lock is free; other update failures are retried 3 times, then the install goes on;
- an unknown option is a usage error (exit status 2).
Needs bash; ctest `setup_scripts`.
"""
import os
import stat
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import export_test_setup as setup  # noqa: E402

ARGS, UNITTEST_ARGS = setup.parser(__doc__).parse_known_args()
ROOT = os.path.abspath(ARGS.source_dir)

HOST = {"build-essential", "cmake", "ninja-build", "clang", "libclang-rt-14-dev", "clang-format",
        "clang-tidy", "python3", "libxsimd-dev", "libgtest-dev", "libbenchmark-dev"}
CORTEX_M = {"gcc-arm-none-eabi", "libnewlib-arm-none-eabi", "libstdc++-arm-none-eabi-newlib",
            "binutils-arm-none-eabi", "qemu-system-arm"}
CROSS = CORTEX_M | {"g++-aarch64-linux-gnu", "g++-arm-linux-gnueabihf", "qemu-user", "llvm-19",
                    "libgtest-dev:arm64", "libbenchmark-dev:arm64", "libgtest-dev:armhf",
                    "libbenchmark-dev:armhf", "python3-torch", "python3-numpy",
                    "python3-matplotlib", "python3-sentencepiece", "python3-regex", "fortunes",
                    "fortunes-min"}
LOCK = "-o DPkg::Lock::Timeout=600"

# Each stand-in appends "name args..." to $STUB_LOG. apt-get update fails $APT_LOCKED times
# with apt's lock message (then succeeds), or always with $APT_UPDATE_FAILS set.
STUBS = {
    "apt-get": r'''
echo "apt-get $*" >> "$STUB_LOG"
case " $* " in
  *" update "*)
    n=$(grep -c '^apt-get .* update$' "$STUB_LOG")
    if [ -n "${APT_UPDATE_FAILS:-}" ]; then
      echo "E: Failed to fetch http://x/InRelease"; exit 100
    fi
    if [ "$n" -le "${APT_LOCKED:-0}" ]; then
      echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)"
      exit 100
    fi ;;
esac
exit 0''',
    "dpkg-query": 'echo "dpkg-query $*" >> "$STUB_LOG"; exit 1',
    "dpkg": 'echo "dpkg $*" >> "$STUB_LOG"; exit 0',
    "sudo": 'exec "$@"',
    "sleep": 'echo "sleep $*" >> "$STUB_LOG"',
    "cmake": 'echo "cmake $*" >> "$STUB_LOG"',
    "qemu-system-arm": 'echo "qemu-system-arm $*" >> "$STUB_LOG"',
    "arm-none-eabi-size": 'echo "arm-none-eabi-size $*" >> "$STUB_LOG"',
}


class Scripts(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.bin = os.path.join(self.tmp.name, "bin")
        os.mkdir(self.bin)
        for name, body in STUBS.items():
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write("#!/bin/sh\n" + body.lstrip("\n") + "\n")
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        self.log = os.path.join(self.tmp.name, "log")
        open(self.log, "w").close()

    def tearDown(self):
        self.tmp.cleanup()

    def run_script(self, script, *args, **env):
        e = dict(os.environ, PATH=self.bin + os.pathsep + os.environ["PATH"],
                 STUB_LOG=self.log, **env)
        r = subprocess.run(["bash", os.path.join(ROOT, "scripts", script), *args], env=e,
                           capture_output=True, text=True, timeout=120)
        with open(self.log) as f:
            calls = f.read().splitlines()
        return r, calls

    @staticmethod
    def installed(calls):
        """The packages of the one apt-get install call (asserting it is the only one)."""
        inst = [c for c in calls if c.startswith("apt-get ") and " install " in c]
        assert len(inst) == 1, inst
        return {w for w in inst[0].split()[1:] if not w.startswith("-") and
                w not in ("install", "DPkg::Lock::Timeout=600")}

    def test_run_tiny_lm_cortex_m4_installs_only_the_cortex_m_tools(self):
        r, calls = self.run_script("run_tiny_lm.sh", "--cortex-m4")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.installed(calls), {"cmake", "ninja-build", "python3"} | CORTEX_M)
        self.assertFalse([c for c in calls if c.startswith("dpkg --add-architecture")])
        self.assertIn("cmake --preset cortex-m4", calls)
        self.assertTrue(any(c.startswith("qemu-system-arm -M mps2-an386") for c in calls))

    def test_each_mode_installs_what_it_says(self):
        for args, want, foreign in (((), HOST, False), (("--cortex-m",), None, False),
                                    (("--cross",), HOST | CROSS, True),
                                    (("--cross", "--cortex-m"), HOST | CROSS, True),
                                    (("--cortex-m", "--peers"),
                                     HOST | CORTEX_M | {"libeigen3-dev", "libopenblas-dev"},
                                     False)):
            with self.subTest(args=args):
                open(self.log, "w").close()
                r, calls = self.run_script("setup.sh", *args)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = self.installed(calls)
                self.assertEqual(got, want or {"cmake", "ninja-build", "python3"} | CORTEX_M)
                arch = [c for c in calls if c.startswith("dpkg --add-architecture")]
                self.assertEqual(arch, ["dpkg --add-architecture arm64",
                                        "dpkg --add-architecture armhf"] if foreign else [])

    def test_apt_waits_for_other_apts(self):
        """DPkg::Lock::Timeout on update and install; a locked lists folder (another apt-get
        update: the option does not cover it) is waited for, 5 s at a time."""
        r, calls = self.run_script("setup.sh", "--cortex-m", APT_LOCKED="3")
        self.assertEqual(r.returncode, 0, r.stderr)
        apt = [c for c in calls if c.startswith("apt-get ")]
        self.assertEqual([c.split()[-1] for c in apt][:4], ["update"] * 4)
        self.assertTrue(all(LOCK in c for c in apt), apt)
        self.assertEqual([c for c in calls if c.startswith("sleep")], ["sleep 5"] * 3)
        self.assertIn("waiting for another apt-get update", r.stderr)
        self.assertEqual(len(self.installed(calls)), 8)

    def test_other_update_failures_are_retried_three_times(self):
        r, calls = self.run_script("setup.sh", "--cortex-m", APT_UPDATE_FAILS="1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len([c for c in calls if c.endswith(" update")]), 3)
        self.assertIn("apt-get update failed (try 3 of 3)", r.stderr)
        self.assertIn("Failed to fetch", r.stderr)
        self.assertEqual(len(self.installed(calls)), 8)  # goes on with what was fetched

    def test_unknown_option_is_a_usage_error(self):
        r, calls = self.run_script("setup.sh", "--cortex-m4")
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage:", r.stderr)
        self.assertEqual(calls, [])


if __name__ == "__main__":
    prog = unittest.main(argv=[sys.argv[0]] + UNITTEST_ARGS, verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() else 1)
