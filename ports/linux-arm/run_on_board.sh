#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the cross-built Google Benchmark suite on an ARM Linux board and fetches its JSON.
#
#   ports/linux-arm/run_on_board.sh [options] user@host [binary] [-- benchmark flags...]
#   ports/linux-arm/run_on_board.sh [options] qemu      [binary] [-- benchmark flags...]
#
# options:
#   -r, --repetitions N  repetitions of every benchmark, in random order, medians reported
#                        (default 5; 1 = one run). Google Benchmark flags after -- win.
#   -c, --cpu N          pin the benchmark to CPU N with taskset (default: the board's last CPU,
#                        on big.LITTLE boards usually a big core)
#       --no-pin         do not pin
#   -f, --filter REGEX   only these benchmarks (--benchmark_filter), e.g. '^(M|P1$|D1$)'
#
# binary: default build/aarch64/bench/microattn_bench (build it with
#         `cmake --workflow --preset aarch64`, or the armv7 preset for 32-bit boards).
# Copies the binary and the shared libraries it needs that a stock board lacks (Debian's
# libbenchmark.so.1debian) to a temporary folder on the board over ssh/scp, reads the CPU's
# frequency governor (and says how to set `performance` when it is not), runs the binary pinned
# to one CPU with --benchmark_format=json --benchmark_out=..., copies the JSON back to
# ./microattn_bench-<host>-<UTC time>.json (its context gains microattn_pinned_cpu,
# microattn_governor, microattn_repetitions) and removes the folder.
# `qemu` instead of user@host runs the same steps locally under qemu-user: that proves the
# binary and the script work, but timings under emulation mean nothing.
# The board needs a glibc/libstdc++ at least as new as Debian 12's (e.g. Raspberry Pi OS bookworm).
# Compare boards and the host with tools/compare_bench.py.
set -euo pipefail

die() { echo "run_on_board: $*" >&2; exit 2; }
usage="usage: $0 [-r N] [-c CPU|--no-pin] [-f REGEX] user@host|qemu [binary] [-- benchmark flags...]"
reps=5 cpu=auto filter=""
while [ $# -ge 1 ]; do
  case "$1" in
    -r|--repetitions) [ $# -ge 2 ] || die "$usage"; reps=$2; shift 2 ;;
    --repetitions=*) reps=${1#*=}; shift ;;
    -c|--cpu) [ $# -ge 2 ] || die "$usage"; cpu=$2; shift 2 ;;
    --cpu=*) cpu=${1#*=}; shift ;;
    --no-pin) cpu=none; shift ;;
    -f|--filter) [ $# -ge 2 ] || die "$usage"; filter=$2; shift 2 ;;
    --filter=*) filter=${1#*=}; shift ;;
    -h|--help) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1; $usage" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || die "$usage"
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || die "--repetitions wants a positive number, not '$reps'"
[[ "$cpu" =~ ^([0-9]+|auto|none)$ ]] || die "--cpu wants a CPU number, not '$cpu'"
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
# Ours first: Google Benchmark takes the last of a repeated flag, so the user's flags win.
flags=(--benchmark_format=json --benchmark_out=result.json --benchmark_out_format=json)
if [ "$reps" -gt 1 ]; then
  flags+=(--benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true
          --benchmark_display_aggregates_only=true)
fi
[ -n "$filter" ] && flags+=(--benchmark_filter="$filter")
flags+=("$@")

# Runs on the board (or locally for qemu): prints "cpus=<n> pin=<cpu|none> governor=<name>",
# pinning to CPU $1 (auto: the last one; none: no pinning). taskset is util-linux, on every
# stock image; without it the run is not pinned, and says so.
probe='
n=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || echo 1)
pin=$1
[ "$pin" = auto ] && pin=$((n - 1))
if [ "$pin" != none ] && ! command -v taskset >/dev/null 2>&1; then pin=none-no-taskset; fi
g=/sys/devices/system/cpu/cpu${pin%%[!0-9]*}/cpufreq/scaling_governor
[ -r "$g" ] || g=/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor
gov=$(cat "$g" 2>/dev/null || echo unknown)
echo "cpus=$n pin=$pin governor=$gov"'

# Says what the governor means for the numbers and how to fix it ($1 = how to reach the board).
governor_advice() {
  local gov=$1 how=$2
  case "$gov" in
    performance) ;;
    unknown) echo "run_on_board: no cpufreq governor to read (no /sys/devices/system/cpu/*/cpufreq):" \
                  "the clock is fixed or firmware-managed; check it does not throttle" >&2 ;;
    *) cat >&2 <<EOF
run_on_board: the CPU frequency governor is '$gov', not 'performance': the clock moves with the
  load, so the first iterations (and whole benchmarks) run at a lower clock than the rest.
  Fix it for this boot, then run again:
    ${how:+$how '}echo performance | sudo tee /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor${how:+'}
  (or \`sudo cpupower frequency-set -g performance\`; put '$gov' back the same way afterwards).
  Also keep the board cool: a throttling SoC lowers its clock whatever the governor says
  (Raspberry Pi: \`vcgencmd get_throttled\` should print 0x0).
EOF
    ;;
  esac
}

if [ "$target" = qemu ]; then
  host_label=qemu-${qemu#qemu-}
  out="$PWD/${name}-${host_label}-${stamp}.json"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp "$binary" "${libs[@]}" "$work/"
  info=$(sh -s -- "$cpu" <<<"$probe")
  pin=$(sed 's/.* pin=\([^ ]*\).*/\1/' <<<"$info"); gov=${info##*governor=}
  governor_advice "$gov" ""
  runner=()
  [[ "$pin" =~ ^[0-9]+$ ]] && runner=(taskset -c "$pin")
  echo "run_on_board: running $name under $qemu ($info, $reps repetitions; emulated: the timings mean nothing)" >&2
  (cd "$work" && LD_LIBRARY_PATH="$work" "${runner[@]}" "$qemu" -L "/usr/$triple" "./$name" "${flags[@]}" > /dev/null)
  cp "$work/result.json" "$out"
else
  host_label=${target#*@}
  out="$PWD/${name}-${host_label}-${stamp}.json"
  remote=$(ssh "$target" 'mktemp -d /tmp/microattn-bench.XXXXXX')
  trap 'ssh "$target" "rm -rf $remote" || true' EXIT
  scp -q "$binary" "${libs[@]}" "$target:$remote/"
  info=$(ssh "$target" sh -s -- "$cpu" <<<"$probe")
  pin=$(sed 's/.* pin=\([^ ]*\).*/\1/' <<<"$info"); gov=${info##*governor=}
  governor_advice "$gov" "ssh $target"
  runner=""
  [[ "$pin" =~ ^[0-9]+$ ]] && runner="taskset -c $pin "
  quoted=$(printf ' %q' "${flags[@]}")
  echo "run_on_board: running $name on $target ($info, $reps repetitions)" >&2
  ssh "$target" "cd $remote && LD_LIBRARY_PATH=$remote $runner./$name$quoted > /dev/null"
  scp -q "$target:$remote/result.json" "$out"
fi
[[ "$pin" =~ ^[0-9]+$ ]] || echo "run_on_board: not pinned to a CPU ($pin): the scheduler may move the benchmark between cores" >&2

# Record how it ran in the JSON's context, where tools/compare_bench.py shows it.
if command -v python3 >/dev/null 2>&1; then
  python3 - "$out" "$pin" "$gov" "$reps" <<'EOF' || echo "run_on_board: could not annotate $out" >&2
import json, sys
path, pin, gov, reps = sys.argv[1:]
with open(path) as f:
    data = json.load(f)
ctx = data.setdefault("context", {})
ctx["microattn_pinned_cpu"] = int(pin) if pin.isdigit() else None
ctx["microattn_governor"] = gov
ctx["microattn_repetitions"] = int(reps)
with open(path, "w") as f:
    json.dump(data, f, indent=2)
    f.write("\n")
EOF
fi
echo "run_on_board: wrote $out" >&2
echo "$out"
