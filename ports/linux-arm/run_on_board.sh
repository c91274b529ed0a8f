#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the cross-built Google Benchmark suite on an ARM Linux board and fetches its JSON.
#
#   ports/linux-arm/run_on_board.sh user@host [binary] [-- benchmark flags...]
#   ports/linux-arm/run_on_board.sh qemu      [binary] [-- benchmark flags...]
#
# binary: default build/aarch64/bench/microattn_bench (build it with
#         `cmake --workflow --preset aarch64`, or the armv7 preset for 32-bit boards).
# Copies the binary and the shared libraries it needs that a stock board lacks (Debian's
# libbenchmark.so.1debian) to a temporary folder on the board over ssh/scp, runs it with
# --benchmark_format=json --benchmark_out=..., copies the JSON back to
# ./microattn_bench-<host>-<UTC time>.json and removes the folder.
# `qemu` instead of user@host runs the same steps locally under qemu-user: that proves the
# binary and the script work, but timings under emulation mean nothing.
# The board needs a glibc/libstdc++ at least as new as Debian 12's (e.g. Raspberry Pi OS bookworm).
set -euo pipefail

die() { echo "run_on_board: $*" >&2; exit 2; }
[ $# -ge 1 ] || die "usage: $0 user@host|qemu [binary] [-- benchmark flags...]"
target=$1; shift
here=$(cd "$(dirname "$0")/../.." && pwd)
binary="$here/build/aarch64/bench/microattn_bench"
if [ $# -ge 1 ] && [ "$1" != "--" ]; then binary=$1; shift; fi
[ $# -ge 1 ] && [ "$1" = "--" ] && shift
[ -x "$binary" ] || die "no executable at $binary (build the aarch64 or armv7 preset first)"

# Which ARM flavour: from the ELF header, so the right libraries and emulator are used.
case "$(file -b "$binary" 2>/dev/null || true)" in
  *aarch64*|*"ARM aarch64"*) triple=aarch64-linux-gnu; qemu=qemu-aarch64 ;;
  *"ARM,"*|*"ARM EABI"*)     triple=arm-linux-gnueabihf; qemu=qemu-arm ;;
  *) if readelf -h "$binary" 2>/dev/null | grep -q AArch64; then triple=aarch64-linux-gnu; qemu=qemu-aarch64
     elif readelf -h "$binary" 2>/dev/null | grep -q "Machine:.*ARM"; then triple=arm-linux-gnueabihf; qemu=qemu-arm
     else die "$binary is not an ARM Linux executable"; fi ;;
esac

# Shared libraries from Debian multiarch that boards do not have by default.
libs=()
for need in $(readelf -d "$binary" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p'); do
  case "$need" in
    libbenchmark*) [ -e "/usr/lib/$triple/$need" ] && libs+=("/usr/lib/$triple/$need") ;;
  esac
done

stamp=$(date -u +%Y%m%dT%H%M%SZ)
name=$(basename "$binary")
flags=(--benchmark_format=json --benchmark_out=result.json --benchmark_out_format=json "$@")

if [ "$target" = qemu ]; then
  host_label=qemu-${qemu#qemu-}
  out="$PWD/${name}-${host_label}-${stamp}.json"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp "$binary" "${libs[@]}" "$work/"
  echo "run_on_board: running $name under $qemu (emulated: the timings mean nothing)" >&2
  (cd "$work" && LD_LIBRARY_PATH="$work" "$qemu" -L "/usr/$triple" "./$name" "${flags[@]}" > /dev/null)
  cp "$work/result.json" "$out"
else
  host_label=${target#*@}
  out="$PWD/${name}-${host_label}-${stamp}.json"
  remote=$(ssh "$target" 'mktemp -d /tmp/microattn-bench.XXXXXX')
  trap 'ssh "$target" "rm -rf $remote" || true' EXIT
  scp -q "$binary" "${libs[@]}" "$target:$remote/"
  quoted=$(printf ' %q' "${flags[@]}")
  echo "run_on_board: running $name on $target" >&2
  ssh "$target" "cd $remote && LD_LIBRARY_PATH=$remote ./$name$quoted > /dev/null"
  scp -q "$target:$remote/result.json" "$out"
fi
echo "run_on_board: wrote $out" >&2
echo "$out"
