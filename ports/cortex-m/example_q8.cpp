// SPDX-License-Identifier: Apache-2.0
// microattn on a Cortex-M with int8 weights: example.cpp's layer (T_max = 64, d_model = 64,
// H = 4, d_head = 16, W_O, no bias) and input, with its four weight matrices stored as int8
// (WeightType::kInt8) in flash: a quarter of the fp32 bytes, plus one fp32 scale per output
// column. The matrices are example.cpp's fp32 weights quantised by the compiler
// (example::quantize_int8, microattn::quantize_int8()'s rule: scale = max|column| / 127, round
// half away from zero) and stored as kPanel16, as `tools/export_pytorch.py --quant int8
// --layout panel16` writes them. One forward pass over 64 tokens; prints status and checksum.
//
// Built twice (ports/cortex-m/CMakeLists.txt):
//   microattn_cm_example_q8        this file as it is: the image whose sizes the docs give.
//   microattn_cm_example_q8_check  + MICROATTN_CM_EXAMPLE_Q8_CHECK=1: after the same forward
//       pass (same checksum line; the ctest requires both images to print the same one) it
//       checks (1) the compile-time int8 arrays and scales against microattn::quantize_int8()
//       run on the device, byte for byte; (2) the output against fp32 math on the dequantised
//       weights s[o] * q(i, o): tests/reference's double oracle, within the tests' fp32
//       tolerance (the int8 layer dequantises and computes in fp32); and reports (3) how far
//       the output is from the layer with the original fp32 weights (the quantisation error),
//       bounded loosely. Exit status 0 only when all pass.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "example_report.hpp"
#include "example_weights.hpp"
#include "microattn/microattn.hpp"
#include "port.hpp"

namespace {

using Cfg = microattn::Config</*T_max=*/64, /*d_model=*/64, /*H=*/4, /*H_kv=*/4, /*d_head=*/16,
                              microattn::WeightType::kInt8>;
constexpr std::size_t kT = 64;
constexpr std::size_t kDM = Cfg::kDModel, kQD = Cfg::kQDim, kKD = Cfg::kKvDim, kOD = Cfg::kOutDim;

// example.cpp's fp32 weights (layout kInOut), only used by the compiler here: nothing of them
// reaches the image (unless the check needs them).
constexpr auto kFq = example::make_weights<kDM * kQD>(1, 0.125f);
constexpr auto kFk = example::make_weights<kDM * kKD>(2, 0.125f);
constexpr auto kFv = example::make_weights<kDM * kKD>(3, 0.125f);
constexpr auto kFo = example::make_weights<kQD * kOD>(4, 0.125f);

// In flash: int8 panels + per-column scales of each matrix.
constexpr auto kWq = example::quantize_int8<kDM, kQD>(kFq, /*panel16=*/true);
constexpr auto kWk = example::quantize_int8<kDM, kKD>(kFk, true);
constexpr auto kWv = example::quantize_int8<kDM, kKD>(kFv, true);
constexpr auto kWo = example::quantize_int8<kQD, kOD>(kFo, true);

microattn::MultiHeadAttention<Cfg> g_layer;  // .bss: the whole RAM budget of the library
float g_x[kT * kDM];
float g_y[kT * kOD];

#if MICROATTN_CM_EXAMPLE_Q8_CHECK
int check();  // below
#endif

}  // namespace

int main(int, char**) {
  example::fill(g_x, kT * kDM, 5, 1.0f);  // the input: 64 tokens of 64 features (as example.cpp)

  const microattn::Weights<Cfg> w(microattn::WeightLayout::kPanel16, kWq.q.data(), kWq.scale.data(),
                                  kWk.q.data(), kWk.scale.data(), kWv.q.data(), kWv.scale.data(),
                                  kWo.q.data(), kWo.scale.data());
  microattn::Status s = g_layer.set_weights(w);
  if (s == microattn::Status::kOk) s = g_layer.forward(g_x, kT, g_y);

  const int status = example::report(
      {"microattn example, int8 weights,", "T_max=64 d_model=64 H=4 H_kv=4 d_head=16 int8 kPanel16",
       kT, microattn::MultiHeadAttention<Cfg>::ram_bytes(),
       sizeof(kWq) + sizeof(kWk) + sizeof(kWv) + sizeof(kWo), " (int8 + scales)"},
      s, g_y, kT * kOD);
  if (status != 0) return status;
#if MICROATTN_CM_EXAMPLE_Q8_CHECK
  return check();
#else
  return 0;
#endif
}

// ------------------------------------------------------------------ the check image only
#if MICROATTN_CM_EXAMPLE_Q8_CHECK
#include <cmath>

#include "reference/attention_ref.hpp"
#include "support/check.hpp"

namespace {

using microattn::port::write;

std::int8_t g_q[kDM * kOD];  // quantize_int8()'s output for one matrix (all are 64 x 64)
float g_s[kOD];
float g_dq[4][kDM * kOD];  // the dequantised matrices, [in][out]
double g_ref[kT * kOD], g_ref32[kT * kOD];
double g_scratch[microattn_ref::layer_scratch(kT, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead)];
int g_failed = 0;

void verdict(bool pass, const char* what) {
  write(pass ? "PASS " : "FAIL ");
  write(what);
  g_failed += pass ? 0 : 1;
}

void write_u64_pair(std::size_t a, std::size_t b) {
  microattn::port::write_u64(a);
  write(" / ");
  microattn::port::write_u64(b);
}

// quantize_int8() divides by values the optimiser cannot see (internal::opaque_divisor), so
// even -Ofast (cortex-m4-ofast) cannot turn max / 127 into max * (1 / 127): the comparison is
// exact in every build.
constexpr bool kExactQuantiser = true;

/// |a - b| in units in the last place, for two positive finite floats.
std::uint32_t ulps(float a, float b) {
  std::uint32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return ia > ib ? ia - ib : ib - ia;
}

/// (1) The compile-time matrix m against microattn::quantize_int8() of the same fp32 weights
/// (kInOut -> kPanel16) on the device: scales bit for bit, int8 values byte for byte (under
/// fast-math: see kExactQuantiser). Then writes the dequantised matrix s[o] * q(i, o) as
/// [in][out] into dq.
template <std::size_t In, std::size_t Out>
void check_matrix(const char* name, const std::array<float, In * Out>& f,
                  const example::Int8Matrix<In, Out>& m, float* dq) {
  static_assert(In * Out <= sizeof(g_q) && Out <= kOD, "check_matrix: buffers too small");
  microattn::QuantError err;
  const microattn::Status s =
      microattn::quantize_int8(f.data(), microattn::WeightLayout::kInOut, In, Out,
                               microattn::WeightLayout::kPanel16, g_q, g_s, &err);
  std::size_t bad_q = 0, bad_s = 0, far = 0;
  for (std::size_t k = 0; k < In * Out; ++k) {
    bad_q += g_q[k] != m.q[k];
    far += g_q[k] - m.q[k] > 1 || m.q[k] - g_q[k] > 1;
  }
  for (std::size_t o = 0; o < Out; ++o) {
    bad_s += std::memcmp(&g_s[o], &m.scale[o], sizeof(float)) != 0;
    far += !(g_s[o] > 0.0f) || !(m.scale[o] > 0.0f) || ulps(g_s[o], m.scale[o]) > 1;
  }
  verdict(s == microattn::Status::kOk && (kExactQuantiser ? bad_q + bad_s == 0 : far == 0), name);
  write(kExactQuantiser ? ": compile-time int8 == quantize_int8() on the device ("
                        : ": compile-time int8 ~ quantize_int8() on the device, fast-math: "
                          "1 ulp / 1 step allowed (");
  write_u64_pair(bad_q, bad_s);
  write(" values / scales differ; rel. rounding error ");
  microattn::port::write_double(err.rel, 3);
  write(")\n");
  for (std::size_t i = 0; i < In; ++i)
    for (std::size_t o = 0; o < Out; ++o)
      dq[i * Out + o] = m.scale[o] * static_cast<float>(m.q[(o / 16) * In * 16 + i * 16 + o % 16]);
}

double max_err(const float* got, const double* ref, std::size_t n, double* max_ref) {
  double e = 0, r = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - ref[i]);
    e = d > e || !(d == d) ? d : e;
    r = std::fabs(ref[i]) > r ? std::fabs(ref[i]) : r;
  }
  *max_ref = r;
  return e;
}

int check() {
  check_matrix("W_q", kFq, kWq, g_dq[0]);
  check_matrix("W_k", kFk, kWk, g_dq[1]);
  check_matrix("W_v", kFv, kWv, g_dq[2]);
  check_matrix("W_o", kFo, kWo, g_dq[3]);

  const double scale = static_cast<double>(microattn::default_scale<Cfg>());
  // (2) fp32 math on the dequantised weights (double oracle, kInOut).
  microattn_ref::layer({kDM, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead, /*out_in=*/false, g_dq[0],
                        g_dq[1], g_dq[2], g_dq[3], nullptr, nullptr, nullptr, nullptr},
                       g_x, kT, scale, g_ref, g_scratch);
  double max_ref = 0;
  const double e = max_err(g_y, g_ref, kT * kOD, &max_ref);
  // The tests' fp32 layer tolerance (tests/test_quant.cpp): 4 u * chain * max(|ref|, 1), chain =
  // d_model per projection, d_head per score, T per P.V row, H * d_head per W_O term.
  const double chain = double(kDM) + 2.0 * Cfg::kDHead + double(kT) + double(kQD) + 4;
  const double tol = microattn_test::tolerance(chain, max_ref);
  verdict(e <= tol, "y vs fp32 math on the dequantised weights (double oracle): max|err| ");
  microattn::port::write_double(e, 3);
  write(", tol ");
  microattn::port::write_double(tol, 3);
  write(", max|ref| ");
  microattn::port::write_double(max_ref, 3);
  write("\n");

  // (3) The quantisation error: the same layer with the original fp32 weights.
  microattn_ref::layer({kDM, Cfg::kHeads, Cfg::kKvHeads, Cfg::kDHead, false, kFq.data(), kFk.data(),
                        kFv.data(), kFo.data(), nullptr, nullptr, nullptr, nullptr},
                       g_x, kT, scale, g_ref32, g_scratch);
  double max_ref32 = 0;
  const double e32 = max_err(g_y, g_ref32, kT * kOD, &max_ref32);
  // Per-column symmetric int8 with 64 inputs per output moves this layer's outputs by ~1 %
  // of their largest magnitude; 5 % would mean something is wrong, not merely rounded.
  verdict(e32 <= 0.05 * max_ref32, "y vs the fp32-weight layer (quantisation error): max|err| ");
  microattn::port::write_double(e32, 3);
  write(" = ");
  microattn::port::write_double(100.0 * e32 / max_ref32, 3);
  write(" % of max|ref| ");
  microattn::port::write_double(max_ref32, 3);
  write(" (bound 5 %)\n");

  write(g_failed ? "int8 example check: FAILED\n" : "int8 example check: all passed\n");
  return g_failed ? 3 : 0;
}

}  // namespace
#endif
