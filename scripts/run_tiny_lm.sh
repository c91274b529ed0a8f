#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The trained tiny language model (examples/tiny_lm) with the committed weights:
#   bash scripts/run_tiny_lm.sh              set up, build for this CPU, run it on the host:
#                                            greedy and sampled text, tokens/s on 1 and 2 threads,
#                                            its logits against PyTorch's (--check)
#   bash scripts/run_tiny_lm.sh --cortex-m4  set up the Cortex-M tools only (setup.sh --cortex-m:
#                                            arm-none-eabi GCC, newlib, qemu-system-arm), build
#                                            the Cortex-M4 firmware (int8 model in flash) and
#                                            run it under QEMU
# Extra arguments go to the program (e.g. --prompt "Love is" --sample --seed 3).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--cortex-m4" ]; then
  shift
  bash scripts/setup.sh --cortex-m
  cmake --preset cortex-m4 > /dev/null
  cmake --build build/cortex-m4 --parallel --target microattn_cm_tiny_lm
  elf=build/cortex-m4/ports/cortex-m/microattn_cm_tiny_lm.elf
  semi="enable=on,target=native,arg=tiny_lm"
  for a in "$@"; do semi="$semi,arg=${a//,/,,}"; done
  # -icount shift=0: QEMU counts guest instructions (the firmware reports them; NOT cycles).
  qemu-system-arm -M mps2-an386 -nographic -monitor none -serial null -icount shift=0 \
      -semihosting-config "$semi" -kernel "$elf"
  arm-none-eabi-size "$elf"
  exit 0
fi
bash scripts/setup.sh
# build/main, as run_main.sh: the test presets own build/<preset>.
build=build/main
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMICROATTN_NATIVE=ON \
      -DMICROATTN_BUILD_TESTS=OFF -DMICROATTN_BUILD_BENCH=ON > /dev/null
cmake --build "$build" --parallel --target microattn_tiny_lm
tlm="$build/examples/microattn_tiny_lm"
if [ "$#" -gt 0 ]; then exec "$tlm" "$@"; fi
"$tlm" --fp32
"$tlm" --fp32 --threads 2 | tail -2
"$tlm" --prompt "Love is" --sample --seed 3
"$tlm" --check
