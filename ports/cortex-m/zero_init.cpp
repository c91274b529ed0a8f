// SPDX-License-Identifier: Apache-2.0
// microattn on a Cortex-M whose start-up code runs no C++ constructors (built with
// MICROATTN_PORT_NO_CONSTRUCTORS: startup.cpp copies .data and clears .bss, then skips
// .preinit_array and .init_array, as many vendor SDK start-ups do). Every public object is a
// static in .bss that nothing constructs, so this image proves the library works on all-zero
// objects: MultiHeadAttention (with and without set_rope), ScaledDotProductAttention and
// KvAttention (prefill, decode, truncate, reset, with and without set_rope, chunked prefill, a
// Config with and one without Rope::kYes), all WITHOUT set_scale, so the default scale
// 1/sqrt(d_head) must be in effect.
//
// Each result is compared with the plain double-precision oracles of tests/reference
// (attention_ref.hpp; rope_ref.hpp for RoPE): PASS when max |got - ref| <= 1e-5 * max |ref|
// over the compared rows (the float kernels are ~1e-6 here; a scale of 0 instead of
// 1/sqrt(d_head) gives errors of tens of percent). Prints one PASS/FAIL line per check and a
// summary, exits 0 when all pass, 1 otherwise.
//
// Deliberately no tiny test runner (it registers its tests through constructors) and nothing
// else that needs dynamic initialisation: weights are constexpr arrays (.rodata, flash), inputs
// are filled at run time into .bss arrays. The ctest cortex_m.<board>.zero_init_static checks
// that the linked image has empty .init_array/.preinit_array and that the layer objects are in
// .bss (check_zero_init.cmake).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "example_weights.hpp"
#include "microattn/microattn.hpp"
#include "port.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rope_ref.hpp"

#if !defined(MICROATTN_PORT_NO_CONSTRUCTORS)
#error \
    "zero_init.cpp must be built with MICROATTN_PORT_NO_CONSTRUCTORS (startup without constructors)"
#endif

namespace zero_init {

constexpr std::size_t kT = 24;  // T_max: two scalar key tiles (BK = 16), a partial second one
// GQA with biases for the layer; GQA without biases for the KV cache (d_head 8: the default
// scale 1/sqrt(8) is not a power of two). Rope::kYes holds the cos/sin tables set_rope fills;
// KvPlainCfg has none (the other variant of the RoPE state).
// (On the Cortex-M55 this file is compiled with -fno-tree-loop-vectorize: see CMakeLists.txt.)
constexpr std::size_t kDM = 32, kH = 4, kHkv = 2, kD = 8;
using MhaCfg =
    microattn::Config<kT, kDM, kH, kHkv, kD, microattn::Bias::kYes, microattn::Rope::kYes>;
using KvCfg = microattn::Config<kT, kDM, kH, kHkv, kD, microattn::Rope::kYes>;
using KvPlainCfg = microattn::Config<kT, kDM, kH, kHkv, kD>;
static_assert(MhaCfg::kDModel == kDM && MhaCfg::kQDim == kH * kD && KvCfg::kKvDim == kHkv * kD,
              "zero_init: shapes");
constexpr std::size_t kChunk = 5;  // a KvAttention whose prefill runs in chunks of 5 tokens

// Weights: constant-initialised, in flash. MhaCfg's in PyTorch's [out][in] layout (kOutIn),
// KvCfg's in [in][out] (kInOut); the values are the same generator either way.
constexpr auto kMq = example::make_weights<kDM * kH * kD>(11, 0.18f);
constexpr auto kMk = example::make_weights<kDM * kHkv * kD>(12, 0.18f);
constexpr auto kMv = example::make_weights<kDM * kHkv * kD>(13, 0.18f);
constexpr auto kMo = example::make_weights<kH * kD * kDM>(14, 0.18f);
constexpr auto kMbq = example::make_weights<kH * kD>(15, 0.1f);
constexpr auto kMbk = example::make_weights<kHkv * kD>(16, 0.1f);
constexpr auto kMbv = example::make_weights<kHkv * kD>(17, 0.1f);
constexpr auto kMbo = example::make_weights<kDM>(18, 0.1f);
constexpr auto kKq = example::make_weights<kDM * kH * kD>(21, 0.18f);
constexpr auto kKk = example::make_weights<kDM * kHkv * kD>(22, 0.18f);
constexpr auto kKv = example::make_weights<kDM * kHkv * kD>(23, 0.18f);
constexpr auto kKo = example::make_weights<kH * kD * kDM>(24, 0.18f);

// The objects under test: namespace-scope, never constructed (the start-up skips constructors),
// so all-zero .bss is their only initial state. check_zero_init.cmake looks for these names.
microattn::MultiHeadAttention<MhaCfg> g_mha;
microattn::ScaledDotProductAttention<MhaCfg> g_sdpa;
microattn::KvAttention<KvCfg> g_kv;
microattn::KvAttention<KvPlainCfg, microattn::DefaultArch, kChunk> g_kv_chunked;

// Inputs (filled at run time), outputs and the oracle's buffers.
float g_xa[kT * kDM], g_xb[kT * kDM], g_xmix[kT * kDM];
float g_q[kT * kH * kD], g_k[kT * kHkv * kD], g_v[kT * kHkv * kD];
float g_y[kT * kDM];
double g_ref[kT * kDM];
double g_rq[kT * kH * kD], g_rk[kT * kHkv * kD], g_rv[kT * kHkv * kD];
double g_scratch[microattn_ref::layer_rope_scratch(kT, kH, kHkv, kD)];

constexpr double kRelTol = 1e-5;
int g_passed = 0, g_failed = 0;

using microattn::Status;
using microattn::port::write;

void fail_status(const char* what, Status s) {
  write("FAIL ");
  write(what);
  write(": status ");
  write(microattn::to_string(s));
  write("\n");
  ++g_failed;
}

/// True (and nothing printed) on kOk; otherwise a FAIL line.
bool ok(const char* what, Status s) {
  if (s == Status::kOk) return true;
  fail_status(what, s);
  return false;
}

void write_double_short(double v) { microattn::port::write_double(v, 3); }

/// Compares rows [r0, r1) of got [.][ld] floats with ref [.][ld] doubles.
void compare(const char* what, const float* got, const double* ref, std::size_t r0, std::size_t r1,
             std::size_t ld) {
  double max_ref = 0, max_err = 0;
  bool finite = true;
  for (std::size_t i = r0 * ld; i < r1 * ld; ++i) {
    const double g = got[i];
    if (!(g == g) || g > 1e300 || g < -1e300) finite = false;
    const double e = std::fabs(g - ref[i]), a = std::fabs(ref[i]);
    max_err = e > max_err ? e : max_err;
    max_ref = a > max_ref ? a : max_ref;
  }
  const bool pass = finite && max_ref > 0 && max_err <= kRelTol * max_ref;
  write(pass ? "PASS " : "FAIL ");
  write(what);
  write(": max|err| ");
  write_double_short(max_err);
  write(" max|ref| ");
  write_double_short(max_ref);
  write(" rel ");
  write_double_short(max_ref > 0 ? max_err / max_ref : max_err);
  write(finite ? "" : " (non-finite output)");
  write(" (tol 1e-5)\n");
  ++(pass ? g_passed : g_failed);
}

/// Fills y with a value no result equals, so a row the library did not write is caught.
void poison(float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = 1e6f;
}

microattn_ref::LayerRef mha_ref() {
  return {kDM,        kH,         kHkv,        kD,          /*out_in=*/true, kMq.data(), kMk.data(),
          kMv.data(), kMo.data(), kMbq.data(), kMbk.data(), kMbv.data(),     kMbo.data()};
}

microattn_ref::LayerRef kv_ref() {
  return {kDM,        kH,         kHkv,    kD,      /*out_in=*/false, kKq.data(), kKk.data(),
          kKv.data(), kKo.data(), nullptr, nullptr, nullptr,          nullptr};
}

/// The oracle's scale, 1/sqrt(d_head) (a function: a namespace-scope double initialised with
/// std::sqrt could be a dynamic initialiser, which this image must not have).
double ref_scale() { return 1.0 / std::sqrt(static_cast<double>(kD)); }

/// The oracle for a KV sequence: the whole layer over x's T tokens (with RoPE when rot > 0).
void kv_oracle(const float* x, std::size_t T, const microattn_ref::RopeRef& r) {
  microattn_ref::layer_rope(kv_ref(), r, x, T, ref_scale(), g_ref, g_scratch);
}

/// x = first n tokens of a, then tokens of b from b0 on, kT tokens in all.
void splice(const float* a, std::size_t n, const float* b, std::size_t b0) {
  for (std::size_t i = 0; i < n * kDM; ++i) g_xmix[i] = a[i];
  for (std::size_t i = n * kDM; i < kT * kDM; ++i) g_xmix[i] = b[b0 * kDM + i - n * kDM];
}

// ------------------------------------------------------------------ MultiHeadAttention

void test_mha() {
  microattn::Weights<MhaCfg> w(microattn::WeightLayout::kOutIn);
  w.w_q = kMq.data(), w.w_k = kMk.data(), w.w_v = kMv.data(), w.w_o = kMo.data();
  w.b_q = kMbq.data(), w.b_k = kMbk.data(), w.b_v = kMbv.data(), w.b_o = kMbo.data();
  // Unset weights on an all-zero object: an error status, never a computation.
  poison(g_y, kT * kDM);
  const Status unset = g_mha.forward(g_xa, kT, g_y);
  if (unset == Status::kNullPointer) {
    write("PASS mha.forward before set_weights: kNullPointer\n");
    ++g_passed;
  } else {
    fail_status("mha.forward before set_weights (want kNullPointer)", unset);
  }
  if (!ok("mha.set_weights", g_mha.set_weights(w))) return;
  for (std::size_t T : {kT, std::size_t{17}, std::size_t{1}}) {
    poison(g_y, kT * kDM);
    if (!ok("mha.forward", g_mha.forward(g_xa, T, g_y))) continue;
    microattn_ref::layer(mha_ref(), g_xa, T, ref_scale(), g_ref, g_scratch);
    compare(T == kT   ? "mha.forward T=24 (default scale)"
            : T == 17 ? "mha.forward T=17 (default scale)"
                      : "mha.forward T=1 (default scale)",
            g_y, g_ref, 0, T, kDM);
  }
  // RoPE (half-split, all of d_head, tokens at positions 5 ..), then off again.
  microattn::RopeConfig rc;
  rc.enabled = true;
  rc.base = 10000.0f;
  rc.pairing = microattn::RopePairing::kHalfSplit;
  rc.rotary_dims = 0;
  rc.start_position = 5;
  if (ok("mha.set_rope(half-split, start 5)", g_mha.set_rope(rc))) {
    poison(g_y, kT * kDM);
    if (ok("mha.forward", g_mha.forward(g_xa, kT, g_y))) {
      microattn_ref::layer_rope(mha_ref(), {kD, 10000.0, false, 5.0}, g_xa, kT, ref_scale(), g_ref,
                                g_scratch);
      compare("mha.forward T=24 RoPE half-split from position 5", g_y, g_ref, 0, kT, kDM);
    }
  }
  if (ok("mha.set_rope(disabled)", g_mha.set_rope(microattn::RopeConfig{}))) {
    poison(g_y, kT * kDM);
    if (ok("mha.forward", g_mha.forward(g_xa, 13, g_y))) {
      microattn_ref::layer(mha_ref(), g_xa, 13, ref_scale(), g_ref, g_scratch);
      compare("mha.forward T=13 RoPE disabled again", g_y, g_ref, 0, 13, kDM);
    }
  }
}

// ------------------------------------------------------------------ ScaledDotProductAttention

void test_sdpa() {
  example::fill(g_q, kT * kH * kD, 31, 1.5f);
  example::fill(g_k, kT * kHkv * kD, 32, 1.5f);
  example::fill(g_v, kT * kHkv * kD, 33, 1.0f);
  for (std::size_t i = 0; i < kT * kH * kD; ++i) g_rq[i] = g_q[i];
  for (std::size_t i = 0; i < kT * kHkv * kD; ++i) g_rk[i] = g_k[i], g_rv[i] = g_v[i];
  for (std::size_t T : {kT, std::size_t{9}}) {
    poison(g_y, kT * kDM);
    if (!ok("sdpa.forward", g_sdpa.forward(g_q, g_k, g_v, T, g_y))) continue;
    microattn_ref::core(g_rq, g_rk, g_rv, T, T, kH, kHkv, kD, ref_scale(), g_ref, g_scratch);
    compare(T == kT ? "sdpa.forward T=24 (default scale)" : "sdpa.forward T=9 (default scale)", g_y,
            g_ref, 0, T, kH * kD);
  }
}

// ------------------------------------------------------------------ KvAttention

template <class Cfg, class Kv>
bool kv_set_weights(Kv& kv, const char* what) {
  microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = kKq.data(), w.w_k = kKk.data(), w.w_v = kKv.data(), w.w_o = kKo.data();
  return ok(what, kv.set_weights(w));
}

/// Appends tokens [t0, t1) of x to kv: one prefill of n_prefill tokens, then decodes, then
/// a prefill of the rest; outputs go to g_y at the tokens' positions.
template <class Kv>
bool kv_run(Kv& kv, const float* x, std::size_t t0, std::size_t n_prefill, std::size_t n_decode,
            std::size_t t1) {
  std::size_t t = t0;
  const std::size_t pos0 = kv.length();
  auto y = [&](std::size_t tok) { return g_y + (pos0 + tok - t0) * kDM; };
  if (n_prefill && !ok("kv.prefill", kv.prefill(x + t * kDM, n_prefill, y(t)))) return false;
  t += n_prefill;
  for (std::size_t i = 0; i < n_decode && t < t1; ++i, ++t)
    if (!ok("kv.decode", kv.decode(x + t * kDM, y(t)))) return false;
  if (t < t1 && !ok("kv.prefill", kv.prefill(x + t * kDM, t1 - t, y(t)))) return false;
  return true;
}

void test_kv() {
  const microattn_ref::RopeRef no_rope{0, 0, false};
  // Before set_weights the zero object must refuse, not compute.
  poison(g_y, kT * kDM);
  const Status unset = g_kv.decode(g_xa, g_y);
  if (unset == Status::kNullPointer && g_kv.length() == 0) {
    write("PASS kv.decode before set_weights: kNullPointer, length 0\n");
    ++g_passed;
  } else {
    fail_status("kv.decode before set_weights (want kNullPointer)", unset);
  }
  if (!kv_set_weights<KvCfg>(g_kv, "kv.set_weights")) return;

  // 1. No set_rope ever called, no set_scale: prefill 10, decode 6, prefill 8 (cache full).
  poison(g_y, kT * kDM);
  if (kv_run(g_kv, g_xa, 0, 10, 6, kT)) {
    kv_oracle(g_xa, kT, no_rope);
    compare("kv prefill 10 + decode 6 + prefill 8 (zero-initialised, default scale)", g_y, g_ref, 0,
            kT, kDM);
    const Status full = g_kv.decode(g_xa, g_y);
    if (full == Status::kCacheFull) {
      write("PASS kv.decode on a full cache: kCacheFull\n");
      ++g_passed;
    } else {
      fail_status("kv.decode on a full cache (want kCacheFull)", full);
    }
  }
  // 2. truncate(12), then 12 other tokens: prefill 5, decode 7.
  if (ok("kv.truncate(12)", g_kv.truncate(12))) {
    poison(g_y, kT * kDM);
    if (kv_run(g_kv, g_xb, 0, 5, 7, 12)) {
      splice(g_xa, 12, g_xb, 0);
      kv_oracle(g_xmix, kT, no_rope);
      compare("kv truncate(12) + prefill 5 + decode 7", g_y, g_ref, 12, kT, kDM);
    }
  }
  // 3. reset(), then decode first, prefill the rest.
  g_kv.reset();
  poison(g_y, kT * kDM);
  if (kv_run(g_kv, g_xa, 0, 0, 1, kT)) {
    kv_oracle(g_xa, kT, no_rope);
    compare("kv reset + decode 1 + prefill 23", g_y, g_ref, 0, kT, kDM);
  }
  // 4. RoPE, half-split pairs over all of d_head: prefill 13, decode 11.
  g_kv.reset();
  microattn::RopeConfig rc;
  rc.enabled = true;
  rc.base = 10000.0f;
  rc.pairing = microattn::RopePairing::kHalfSplit;
  rc.rotary_dims = 0;
  if (ok("kv.set_rope(half-split)", g_kv.set_rope(rc))) {
    poison(g_y, kT * kDM);
    if (kv_run(g_kv, g_xa, 0, 13, kT, kT)) {
      kv_oracle(g_xa, kT, {kD, 10000.0, false});
      compare("kv RoPE half-split: prefill 13 + decode 11", g_y, g_ref, 0, kT, kDM);
    }
    // 5. truncate(7), then 17 other tokens in one prefill.
    if (ok("kv.truncate(7)", g_kv.truncate(7))) {
      poison(g_y, kT * kDM);
      if (kv_run(g_kv, g_xb, 0, 17, 0, 17)) {
        splice(g_xa, 7, g_xb, 0);
        kv_oracle(g_xmix, kT, {kD, 10000.0, false});
        compare("kv RoPE half-split: truncate(7) + prefill 17", g_y, g_ref, 7, kT, kDM);
      }
    }
  }
  // 6. RoPE on the first 4 dims only, adjacent pairs, another base, from position 3:
  //    decode 3, prefill 21.
  g_kv.reset();
  rc.pairing = microattn::RopePairing::kAdjacent;
  rc.rotary_dims = 4;
  rc.base = 500000.0f;
  rc.start_position = 3;
  if (ok("kv.set_rope(adjacent, 4 dims, start 3)", g_kv.set_rope(rc))) {
    poison(g_y, kT * kDM);
    if (kv_run(g_kv, g_xa, 0, 0, 3, kT)) {
      kv_oracle(g_xa, kT, {4, 500000.0, true, 3.0});
      compare("kv RoPE adjacent 4 dims from position 3: decode 3 + prefill 21", g_y, g_ref, 0, kT,
              kDM);
    }
  }
  // 7. RoPE off again.
  g_kv.reset();
  if (ok("kv.set_rope(disabled)", g_kv.set_rope(microattn::RopeConfig{}))) {
    poison(g_y, kT * kDM);
    if (kv_run(g_kv, g_xa, 0, kT, 0, kT)) {
      kv_oracle(g_xa, kT, no_rope);
      compare("kv RoPE disabled again: prefill 24", g_y, g_ref, 0, kT, kDM);
    }
  }

  // 8. A second zero object, Config without Rope::kYes, chunked prefill (chunks of 5).
  if (!kv_set_weights<KvPlainCfg>(g_kv_chunked, "kv_chunked.set_weights")) return;
  poison(g_y, kT * kDM);
  if (kv_run(g_kv_chunked, g_xa, 0, 19, 2, kT)) {
    kv_oracle(g_xa, kT, no_rope);
    compare("kv chunk 5 (zero-initialised): prefill 19 + decode 2 + prefill 3", g_y, g_ref, 0, kT,
            kDM);
  }
}

}  // namespace zero_init

int main(int, char**) {
  using namespace zero_init;
  write("microattn zero-init image on ");
  write(microattn::port::board_name());
  write(" (");
  write(microattn::port::cpu_name());
  write(", kernels ");
  write(microattn::arch_name<>());
  write("): start-up ran no constructors\n");
  example::fill(g_xa, kT * kDM, 41, 1.0f);
  example::fill(g_xb, kT * kDM, 42, 1.0f);
  test_mha();
  test_sdpa();
  test_kv();
  microattn::port::write_u64(static_cast<std::uint64_t>(g_passed));
  write(" passed, ");
  microattn::port::write_u64(static_cast<std::uint64_t>(g_failed));
  write(" failed\n");
  microattn::port::exit(g_failed == 0 && g_passed > 0 ? 0 : 1);
}
