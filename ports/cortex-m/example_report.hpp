// SPDX-License-Identifier: Apache-2.0
// What the Cortex-M examples (example.cpp, example_q8.cpp) print about their forward pass, in
// one function so that both images print the same lines: the ctests match them (the example's
// fnv1a= checksum, check_example_q8.cmake's "checksum: " line) and scripts/update_figures.py
// copies them into the docs (the "checksum:" line, "kernels <arch>").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/arch.hpp"
#include "microattn/status.hpp"
#include "port.hpp"

namespace example {

/// The example's own words in the report.
struct Report {
  const char* title;         ///< "microattn example": then " on <board> (<cpu>, kernels <arch>)"
  const char* config;        ///< the Config, after "config "
  std::size_t tokens;        ///< T of the forward pass
  std::size_t layer_ram;     ///< the layer's ram_bytes()
  std::size_t weight_bytes;  ///< the weights' bytes in flash
  const char* weights_note;  ///< after "bytes in flash" ("" or e.g. " (int8 + scales)")
};

/// Prints the report of a forward pass that returned `status` with output y[0 .. n):
///   <title> on <board> (<cpu>, kernels <arch>)
///   config <config>, T=<tokens>, layer RAM <layer_ram> bytes, weights <weight_bytes> bytes in
///   flash<note> status: <status> checksum: sum=<sum> sum_abs=<sum of |y|> fnv1a=<FNV-1a over y's
///   bytes> y[0][0..3] = <y[0]> <y[1]> <y[2]> <y[3]>
/// (the last two lines only for kOk; n >= 4). Returns the example's exit status: 0, 1 when
/// `status` is not kOk, 2 when the output is all zero (or NaN).
inline int report(const Report& r, microattn::Status status, const float* y, std::size_t n) {
  using namespace microattn::port;
  write(r.title);
  write(" on ");
  write(board_name());
  write(" (");
  write(cpu_name());
  write(", kernels ");
  write(microattn::arch_name<>());
  write(")\nconfig ");
  write(r.config);
  write(", T=");
  write_u64(r.tokens);
  write(", layer RAM ");
  write_u64(r.layer_ram);
  write(" bytes, weights ");
  write_u64(r.weight_bytes);
  write(" bytes in flash");
  write(r.weights_note);
  write("\nstatus: ");
  write(microattn::to_string(status));
  write("\n");
  if (status != microattn::Status::kOk) return 1;

  double sum = 0, sum_abs = 0;
  std::uint32_t fnv = 2166136261u;  // FNV-1a over the output's bytes: any bit change shows
  for (std::size_t i = 0; i < n; ++i) {
    const float v = y[i];
    sum += v;
    sum_abs += v < 0 ? -v : v;
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    for (int b = 0; b < 4; ++b) fnv = (fnv ^ ((bits >> (8 * b)) & 0xffu)) * 16777619u;
  }
  write("checksum: sum=");
  write_double(sum, 9);
  write(" sum_abs=");
  write_double(sum_abs, 9);
  write(" fnv1a=");
  write_hex32(fnv);
  write("\ny[0][0..3] = ");
  for (int i = 0; i < 4; ++i) {
    write_double(y[i], 9);
    write(i < 3 ? " " : "\n");
  }
  return sum_abs > 0 ? 0 : 2;
}

}  // namespace example
