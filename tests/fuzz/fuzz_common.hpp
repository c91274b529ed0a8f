// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the libFuzzer targets (tests/fuzz/README.md): the input reader, the float
// and scale codes, deterministic weights, caller buffers that may overlap, the invariant
// checks, and the double-precision reference with its tolerance.
//
// Every violated invariant aborts with "microattn fuzz: [invariant] ..." and the case, so a
// crash file names what it shows. The harness may use the heap; the library must not.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "microattn/microattn.hpp"
#include "reference/attention_ref.hpp"
#include "reference/rope_ref.hpp"

namespace fz {

using microattn::Status;
using microattn::WeightLayout;
using std::size_t;

// ---------------------------------------------------------------------------------------------
// Failure reporting

inline char g_case[4096];  // what is being run, printed with every failure

inline void set_case(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_case, sizeof g_case, fmt, ap);
  va_end(ap);
}

inline void add_case(const char* fmt, ...) {
  const size_t n = std::strlen(g_case);
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(g_case + n, sizeof g_case - n, fmt, ap);
  va_end(ap);
}

[[noreturn]] inline void fail(const char* file, int line, const char* fmt, ...) {
  std::fprintf(stderr,
               "\n==== microattn fuzz: invariant violated (%s:%d, kernels %s)\n  case: %s\n  ",
               file, line, microattn::arch_name(), g_case);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::abort();
}

/// With MICROATTN_FUZZ_TRACE=1 in the environment every input prints what it ran (to see what
/// a corpus file exercises: `MICROATTN_FUZZ_TRACE=1 fuzz_kv_cache file`).
inline void trace_case() {
  static const bool on = std::getenv("MICROATTN_FUZZ_TRACE") != nullptr;
  if (on) std::fprintf(stderr, "microattn fuzz: %s\n", g_case);
}

/// Checks an invariant in every build (not assert: the fuzz build must never compile it out).
#define FZ_REQUIRE(cond, ...)                                 \
  do {                                                        \
    if (!(cond)) ::fz::fail(__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

inline std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline bool finite(float f) { return (bits(f) & 0x7f800000u) != 0x7f800000u; }
inline bool is_nan(float f) { return (bits(f) & 0x7fffffffu) > 0x7f800000u; }

inline const char* st(Status s) { return microattn::to_string(s); }

// ---------------------------------------------------------------------------------------------
// Input reader: bytes from the front, zeros once the input is used up (so every prefix of an
// input is a valid input, and short seeds stay meaningful).

class Reader {
 public:
  Reader(const std::uint8_t* p, size_t n) : p_(p), n_(n) {}
  std::uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return u16() | (static_cast<std::uint32_t>(u16()) << 16); }
  bool empty() const { return n_ == 0; }

 private:
  const std::uint8_t* p_;
  size_t n_;
};

/// xorshift64*: the bulk of every input tensor comes from a fuzzer-chosen seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull) {}
  std::uint32_t next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return static_cast<std::uint32_t>((s_ * 0x2545F4914F6CDD1Dull) >> 32);
  }
  /// Uniform in [-a, a].
  float sym(float a) { return a * (static_cast<float>(next() >> 8) * (2.0f / 16777216.0f) - 1.0f); }

 private:
  std::uint64_t s_;
};

/// One float from a code byte:
///   0 qNaN, 1 -NaN with payload, 2 +Inf, 3 -Inf, 4 FLT_MAX, 5 -FLT_MAX, 6 1e30, 7 -3e20,
///   8 smallest denormal, 9 -FLT_MIN/2 (denormal), 10 +0, 11 -0, 12 the next 4 bytes as raw
///   bits, 13..255 the grid (c - 134) / 30.25, i.e. -4 .. 4 in steps of 1/30.25.
inline float value_code(Reader& r) {
  const std::uint8_t c = r.u8();
  switch (c) {
    case 0:
      return from_bits(0x7fc00000u);
    case 1:
      return from_bits(0xffc0deadu);
    case 2:
      return std::numeric_limits<float>::infinity();
    case 3:
      return -std::numeric_limits<float>::infinity();
    case 4:
      return FLT_MAX;
    case 5:
      return -FLT_MAX;
    case 6:
      return 1e30f;
    case 7:
      return -3e20f;
    case 8:
      return std::numeric_limits<float>::denorm_min();
    case 9:
      return -FLT_MIN / 2;
    case 10:
      return 0.0f;
    case 11:
      return -0.0f;
    case 12:
      return from_bits(r.u32());
    default:
      return static_cast<float>(static_cast<int>(c) - 134) / 30.25f;
  }
}

/// Fills n floats (rows of `width`): a seed (4 bytes) and an amplitude code (1 byte) give
/// uniform values in [-amp, amp]; then up to 15 patches, each 2 bytes of index (bit 15: the
/// whole row, else one element) and a value code.
inline void fill_values(Reader& r, float* p, size_t n, size_t width) {
  static const float kAmp[16] = {1.0f, 4.0f,  0.25f, 1.0f, 4.0f, 2.0f, 1e-3f, 1e-40f,
                                 1e4f, 1e20f, 1e38f, 4.0f, 1.0f, 0.5f, 3.0f,  1e-20f};
  const std::uint32_t seed = r.u32();
  const float amp = kAmp[r.u8() % 16];
  Rng rng(seed);
  for (size_t i = 0; i < n; ++i) p[i] = rng.sym(amp);
  const int patches = r.u8() % 16;
  for (int k = 0; k < patches; ++k) {
    const std::uint16_t at = r.u16();
    const float v = value_code(r);
    if (n == 0) continue;
    if (at & 0x8000u) {
      const size_t row = (at & 0x7fffu) % (n / width);
      for (size_t c = 0; c < width; ++c) p[row * width + c] = v;
    } else {
      p[at % n] = v;
    }
  }
}

/// Replaces rows [from, rows) of p (row length width) by "poison": 0 NaN, 1 +Inf, 2 -Inf,
/// 3 a mix of NaN/+-Inf/+-FLT_MAX, 4 huge finite values, 5..7 other finite values in [-4, 4].
inline void poison_rows(float* p, size_t rows, size_t width, size_t from, std::uint8_t kind,
                        std::uint32_t seed) {
  Rng rng(seed);
  static const float kMix[5] = {std::numeric_limits<float>::quiet_NaN(),
                                std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(), FLT_MAX, -FLT_MAX};
  for (size_t i = from * width; i < rows * width; ++i) {
    switch (kind % 8) {
      case 0:
        p[i] = std::numeric_limits<float>::quiet_NaN();
        break;
      case 1:
        p[i] = std::numeric_limits<float>::infinity();
        break;
      case 2:
        p[i] = -std::numeric_limits<float>::infinity();
        break;
      case 3:
        p[i] = kMix[rng.next() % 5];
        break;
      case 4:
        p[i] = rng.sym(FLT_MAX);
        break;
      default:
        p[i] = rng.sym(4.0f);
        break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scales

constexpr float kLog2eF = 1.44269504088896341f;

/// Scale from the input: 0 the default (the overload without a scale, where there is one),
/// 1 raw bits, 2 a value code, 3 a table entry around the overflow threshold of
/// scale * log2(e) and other edges.
inline float scale_code(Reader& r, float dflt, bool* use_default) {
  const std::uint8_t mode = r.u8() % 4;
  *use_default = mode == 0;
  if (mode == 0) return dflt;
  if (mode == 1) return from_bits(r.u32());
  if (mode == 2) return value_code(r);
  // Largest float s with s * log2(e) finite in float arithmetic, found by stepping.
  float thr = static_cast<float>(FLT_MAX / 1.4426950408889634);
  while (std::isinf(thr * kLog2eF)) thr = std::nextafter(thr, 0.0f);
  while (!std::isinf(std::nextafter(thr, FLT_MAX) * kLog2eF)) thr = std::nextafter(thr, FLT_MAX);
  const float up = std::nextafter(thr, FLT_MAX);
  const float table[16] = {thr,  up,    -thr,   -up,   1.0f,  -1.0f,  4.0f,  -4.0f,
                           0.0f, -0.0f, 1e-45f, 1e38f, 3e38f, 1e-30f, 1e30f, 0.25f};
  return table[r.u8() % 16];
}

enum class ScaleClass { kAccept, kReject, kEither };

/// What the entry points must do with a scale: reject it when it or scale * log2(e) (the
/// factor the kernels fold into Q) is not finite; accept it when |scale| * log2(e) is well
/// inside the float range; in a band of a few ulps at the threshold either answer is right
/// ("overflows float" computed in float or in double).
inline ScaleClass classify_scale(float s) {
  if (!finite(s)) return ScaleClass::kReject;
  volatile float p = s * kLog2eF;  // the product the kernels compute
  if (!finite(p)) return ScaleClass::kReject;
  if (std::fabs(static_cast<double>(s)) * 1.4426950408889634 >
      0.9999995 * static_cast<double>(FLT_MAX))
    return ScaleClass::kEither;
  return ScaleClass::kAccept;
}

// ---------------------------------------------------------------------------------------------
// Expected status: errors that apply (one of them must be returned) and those that may be
// returned instead of kOk (an overlap the library may refuse, a scale at the threshold).

struct Expect {
  std::uint32_t must = 0, may = 0;
  void need(Status s) { must |= 1u << static_cast<unsigned>(s); }
  void allow(Status s) { may |= 1u << static_cast<unsigned>(s); }
  void scale(float s) {
    const ScaleClass c = classify_scale(s);
    if (c == ScaleClass::kReject) need(Status::kBadScale);
    if (c == ScaleClass::kEither) allow(Status::kBadScale);
  }
};

inline void check_status(Status s, const Expect& e, const char* call) {
  const std::uint32_t bit = 1u << static_cast<unsigned>(s);
  if (e.must) {
    FZ_REQUIRE(s != Status::kOk && ((e.must | e.may) & bit),
               "[status] %s returned '%s' but an argument is invalid (must be one of mask 0x%x)",
               call, st(s), e.must);
  } else {
    FZ_REQUIRE(s == Status::kOk || (e.may & bit),
               "[status] %s returned '%s' for valid arguments (allowed besides ok: mask 0x%x)",
               call, st(s), e.may);
  }
}

// ---------------------------------------------------------------------------------------------
// Caller buffers. A Region is rows x width floats with row stride ld inside a Block (heap
// vector of exactly the size needed, so ASan catches any read or write past it). Regions may
// share a block and overlap.

struct Region {
  size_t block = 0, off = 0, rows = 0, ld = 0, width = 0;
  size_t span() const { return rows == 0 ? 0 : (rows - 1) * ld + width; }
};

struct Buffers {
  std::vector<std::vector<float>> blocks;
  static constexpr std::uint32_t kSentinel = 0xffa5c3e1u;  // a NaN no kernel produces

  float* ptr(const Region& r) { return blocks[r.block].data() + r.off; }
  float& at(const Region& r, size_t i, size_t c) { return ptr(r)[i * r.ld + c]; }

  /// Sizes every block to the end of its furthest region and fills it with the sentinel.
  void allocate(const std::vector<Region>& regions) {
    size_t nb = 0;
    for (const Region& r : regions) nb = r.block + 1 > nb ? r.block + 1 : nb;
    std::vector<size_t> sz(nb, 1);
    for (const Region& r : regions)
      sz[r.block] = r.off + r.span() > sz[r.block] ? r.off + r.span() : sz[r.block];
    blocks.assign(nb, {});
    for (size_t b = 0; b < nb; ++b) blocks[b].assign(sz[b], from_bits(kSentinel));
  }
  void write(const Region& r, const float* src) {  // src: dense rows x width
    for (size_t i = 0; i < r.rows; ++i)
      for (size_t c = 0; c < r.width; ++c) at(r, i, c) = src[i * r.width + c];
  }
  std::vector<float> read(const Region& r) {
    std::vector<float> out(r.rows * r.width);
    for (size_t i = 0; i < r.rows; ++i)
      for (size_t c = 0; c < r.width; ++c) out[i * r.width + c] = at(r, i, c);
    return out;
  }
  bool overlap(const Region& a, const Region& b) const {
    return a.block == b.block && a.rows && b.rows && a.off < b.off + b.span() &&
           b.off < a.off + a.span();
  }
  /// Every float bit-identical to `before`, except the elements of `written` (may be null).
  void require_unchanged(const std::vector<std::vector<float>>& before, const Region* written,
                         const char* what) {
    for (size_t b = 0; b < blocks.size(); ++b)
      for (size_t i = 0; i < blocks[b].size(); ++i) {
        if (bits(blocks[b][i]) == bits(before[b][i])) continue;
        if (written && written->block == b && i >= written->off) {
          const size_t rel = i - written->off;
          if (rel / written->ld < written->rows && rel % written->ld < written->width) continue;
        }
        FZ_REQUIRE(false, "[%s] buffer %zu float %zu changed: 0x%08x -> 0x%08x", what, b, i,
                   bits(before[b][i]), bits(blocks[b][i]));
      }
  }
};

/// Places x (span sx) and y (span sy) for an overlap mode: 0 separate blocks, 1 y == x,
/// 2 y overlapping x at an offset chosen by `arg`, 3 one block, adjacent or 1-2 floats apart
/// (no overlap). Returns whether they overlap.
inline void place_pair(std::uint8_t mode, std::uint16_t arg, Region& x, Region& y) {
  const size_t sx = x.span(), sy = y.span();
  x.block = 0, x.off = 0, y.block = 0, y.off = 0;
  switch (mode % 4) {
    case 0:
      y.block = 1;
      break;
    case 1:
      break;
    case 2: {  // d = y - x in (-sy, sx): the ranges share at least one float
      const long d = static_cast<long>(arg % (sx + sy - 1)) - static_cast<long>(sy - 1);
      if (d < 0)
        x.off = static_cast<size_t>(-d);
      else
        y.off = static_cast<size_t>(d);
      break;
    }
    default: {
      const size_t gap = arg % 3;
      if (arg & 4)
        y.off = sx + gap;
      else
        x.off = sy + gap;
      break;
    }
  }
}

/// First index where a and b differ in bits among rows [0, rows) of width floats (row-major,
/// row strides lda, ldb), or SIZE_MAX.
inline size_t first_diff(const float* a, size_t lda, const float* b, size_t ldb, size_t rows,
                         size_t width) {
  for (size_t i = 0; i < rows; ++i)
    for (size_t c = 0; c < width; ++c)
      if (bits(a[i * lda + c]) != bits(b[i * ldb + c])) return i * width + c;
  return SIZE_MAX;
}

inline void require_same(const float* a, const float* b, size_t rows, size_t width,
                         const char* what, const char* detail) {
  const size_t k = first_diff(a, width, b, width, rows, width);
  FZ_REQUIRE(k == SIZE_MAX, "[%s] %s: row %zu col %zu differs: %a (0x%08x) vs %a (0x%08x)", what,
             detail, k / width, k % width, static_cast<double>(a[k]), bits(a[k]),
             static_cast<double>(b[k]), bits(b[k]));
}

/// require_same for two calls of different shapes (T tokens vs the first p+1 alone): bits
/// equal, or both NaN. Which operand's NaN an instruction passes on is the hardware's choice
/// (IEEE 754 leaves it open), and a 1-row micro-tile feeds operands in another order than a
/// 12-row one, so a row that is NaN in both may differ in its NaN's sign or payload.
inline void require_same_nan_as_nan(const float* a, const float* b, size_t rows, size_t width,
                                    const char* what, const char* detail) {
  for (size_t k = 0; k < rows * width; ++k) {
    if (bits(a[k]) == bits(b[k]) || (a[k] != a[k] && b[k] != b[k])) continue;
    FZ_REQUIRE(false, "[%s] %s: row %zu col %zu differs: %a (0x%08x) vs %a (0x%08x)", what, detail,
               k / width, k % width, static_cast<double>(a[k]), bits(a[k]),
               static_cast<double>(b[k]), bits(b[k]));
  }
}

/// All of rows x width floats finite with |v| <= bound.
inline bool all_within(const float* p, size_t n, float bound) {
  for (size_t i = 0; i < n; ++i)
    if (!finite(p[i]) || std::fabs(p[i]) > bound) return false;
  return true;
}

/// First row with a NaN or +-Inf, or rows.
inline size_t first_nonfinite_row(const float* p, size_t rows, size_t width) {
  for (size_t i = 0; i < rows * width; ++i)
    if (!finite(p[i])) return i / width;
  return rows;
}

// ---------------------------------------------------------------------------------------------
// Weights: one deterministic set per configuration in every layout (the same math), on the
// heap with exact sizes. W_O is [H*d_head][OutDim]; biases only where the Config has them.

template <class Cfg>
struct FuzzWeights {
  static constexpr size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim, OD = Cfg::kOutDim;
  std::vector<float> wq, wk, wv, wo, bq, bk, bv, bo;  // kInOut, biases
  std::vector<float> tq, tk, tv, to;                  // kOutIn
  std::vector<float> pq, pk, pv, po;                  // kPanel16 (when the config fits it)

  static std::vector<float> transpose(const std::vector<float>& w, size_t in, size_t out) {
    std::vector<float> t(in * out);
    for (size_t i = 0; i < in; ++i)
      for (size_t o = 0; o < out; ++o) t[o * in + i] = w[i * out + o];
    return t;
  }
  static std::vector<float> panels(const std::vector<float>& w, size_t in, size_t out) {
    std::vector<float> p(microattn::weight_floats(WeightLayout::kPanel16, in, out));
    const Status s =
        microattn::pack_weight_panels(w.data(), WeightLayout::kInOut, in, out, p.data());
    if (s != Status::kOk) std::abort();
    return p;
  }
  FuzzWeights() {
    Rng rng(0x5eed0000u + DM * 131 + QD * 17 + KD + OD * 7);
    auto fill = [&](std::vector<float>& v, size_t n, size_t fan_in) {
      v.resize(n);
      const float a = 1.0f / std::sqrt(static_cast<float>(fan_in));
      for (float& f : v) f = rng.sym(a);
    };
    fill(wq, DM * QD, DM), fill(wk, DM * KD, DM), fill(wv, DM * KD, DM);
    if (Cfg::kHasOutProj) fill(wo, QD * OD, QD);
    if (Cfg::kBiasQ) fill(bq, QD, DM);
    if (Cfg::kBiasK) fill(bk, KD, DM);
    if (Cfg::kBiasV) fill(bv, KD, DM);
    if (Cfg::kBiasO) fill(bo, OD, QD);
    tq = transpose(wq, DM, QD), tk = transpose(wk, DM, KD), tv = transpose(wv, DM, KD);
    if (Cfg::kHasOutProj) to = transpose(wo, QD, OD);
    if (microattn::panel_layout_fits<Cfg>()) {
      pq = panels(wq, DM, QD), pk = panels(wk, DM, KD), pv = panels(wv, DM, KD);
      if (Cfg::kHasOutProj) po = panels(wo, QD, OD);
    }
  }
  static const FuzzWeights& get() {
    static const FuzzWeights w;
    return w;
  }
  static WeightLayout pick_layout(std::uint8_t b) {
    const WeightLayout l = static_cast<WeightLayout>(b % 3);
    return l == WeightLayout::kPanel16 && !microattn::panel_layout_fits<Cfg>()
               ? WeightLayout::kInOut
               : l;
  }
  static const float* ptr(const std::vector<float>& v) { return v.empty() ? nullptr : v.data(); }
  microattn::Weights<Cfg> view(WeightLayout l) const {
    microattn::Weights<Cfg> w(l);
    if (l == WeightLayout::kOutIn)
      w.w_q = ptr(tq), w.w_k = ptr(tk), w.w_v = ptr(tv), w.w_o = ptr(to);
    else if (l == WeightLayout::kPanel16)
      w.w_q = ptr(pq), w.w_k = ptr(pk), w.w_v = ptr(pv), w.w_o = ptr(po);
    else
      w.w_q = ptr(wq), w.w_k = ptr(wk), w.w_v = ptr(wv), w.w_o = ptr(wo);
    w.b_q = ptr(bq), w.b_k = ptr(bk), w.b_v = ptr(bv), w.b_o = ptr(bo);
    return w;
  }
  /// Weights set_weights must refuse, and the status it must give: 0 a needed matrix null,
  /// 1 a needed bias null (or w_v when the config has none), 2 a layout value outside the enum,
  /// 3 kPanel16 on a config that does not fit it (else w_q null).
  microattn::Weights<Cfg> bad(std::uint8_t kind, Status* expect) const {
    microattn::Weights<Cfg> w = view(WeightLayout::kInOut);
    *expect = Status::kNullPointer;
    switch (kind % 4) {
      case 0:
        w.w_k = nullptr;
        break;
      case 1:
        if (Cfg::kBiasV)
          w.b_v = nullptr;
        else if (Cfg::kBiasO)
          w.b_o = nullptr;
        else if (Cfg::kBiasQ)
          w.b_q = nullptr;
        else
          w.w_v = nullptr;
        break;
      case 2:
        w.layout = static_cast<WeightLayout>(7);
        *expect = Status::kBadArgument;
        break;
      default:
        if (microattn::panel_layout_fits<Cfg>()) {
          w.w_q = nullptr;
        } else {
          w.layout = WeightLayout::kPanel16;
          *expect = Status::kBadArgument;
        }
        break;
    }
    return w;
  }
};

// ---------------------------------------------------------------------------------------------
// RoPE settings from the input (used by the layer and the cache)

/// RoPE of the reference (rot == 0: none); positions start + t.
struct RopeSpec {
  size_t rot = 0;
  double base = 10000.0;
  bool adjacent = false;
  double start = 0;

  /// Largest rotation angle (start + n - 1) * max_i theta_i. Beyond ~1e6 rad one ulp of theta
  /// or of the position moves the angle by more than the tolerance allows, so the library's
  /// table and the reference legitimately disagree there.
  double max_angle(size_t n) const {
    if (!rot || n == 0) return 0.0;
    double theta = 1.0;  // pair 0
    for (size_t i = 1; i < rot / 2; ++i) {
      const double t = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(rot));
      theta = t > theta ? t : theta;
    }
    return (start + static_cast<double>(n - 1)) * theta;
  }
};

/// A RoPE setting (5 bytes): enabled bit, base (table), rotary_dims, pairing (2: not a
/// RopePairing value), start position (< 200: 3 * b; < 255: (b - 200) * 1000003; 255: one of
/// SIZE_MAX - T_max + 0/1/2 from one more byte). *valid: what set_rope must accept (for an
/// enabled setting also needs Rope::kYes); *spec: the reference's view when accepted.
template <class Cfg>
microattn::RopeConfig rope_code(Reader& r, bool* valid, RopeSpec* spec) {
  static const float kBase[8] = {
      10000.0f, 500000.0f, 1.0f,  2.5f,
      1e-30f,   0.0f,      -1.0f, std::numeric_limits<float>::quiet_NaN()};
  constexpr size_t D = Cfg::kDHead, TM = Cfg::kTMax;
  microattn::RopeConfig rc;
  rc.enabled = r.u8() & 1;
  rc.base = kBase[r.u8() % 8];
  rc.rotary_dims = r.u8() % (D + 3);
  const std::uint8_t pr = r.u8() % 3;
  rc.pairing = static_cast<microattn::RopePairing>(pr);
  const std::uint8_t sb = r.u8();
  if (sb < 200)
    rc.start_position = 3u * sb;
  else if (sb < 255)
    rc.start_position = static_cast<size_t>(sb - 200) * 1000003u;
  else
    rc.start_position = SIZE_MAX - TM + r.u8() % 3;
  const size_t dims = rc.rotary_dims == 0 ? D : rc.rotary_dims;
  *valid =
      !rc.enabled || (Cfg::kHasRope && finite(rc.base) && rc.base > 0.0f && dims >= 2 &&
                      dims % 2 == 0 && dims <= D && pr < 2 && rc.start_position <= SIZE_MAX - TM);
  *spec = RopeSpec{};
  if (rc.enabled)
    *spec = RopeSpec{dims, static_cast<double>(rc.base), pr == 0,
                     static_cast<double>(rc.start_position)};
  return rc;
}

// ---------------------------------------------------------------------------------------------
// Reference and tolerance

/// Result of the double reference: outputs, a per-row tolerance, and whether every scaled
/// query element and every score (bounded by sum_d |scale log2e q_d k_d|, i.e. in any
/// summation order) stays below FLT_MAX / 4, so a float implementation has no reason to
/// overflow.
struct RefResult {
  std::vector<double> y;
  std::vector<double> tol;  // per output row
  bool no_overflow = true;
};

/// Inputs of the score bounds: q [n][H*D], k [n][Hkv*D] (doubles) and qa, ka, element-wise
/// upper bounds of |q|, |k| that also bound their rounding history (|x| |W| + |b| for a
/// projection). The tolerance of output row i (finish_tolerance) is
///   1e-3 * R  +  4 ln2 * delta_i * vscale  +  1024 * FLT_TRUE_MIN
/// R = max(max |ref|, vscale), vscale = the largest output a value row can produce
/// (max |v|, times W_O's largest column sum of magnitudes when W_O follows). delta_i bounds
/// the float error of row i's base-2 scores: (depth + D + 8) u * S_i with
/// S_i = max_{h, j <= i} sum_d |scale log2e| qa kd and depth = the projection's inner
/// dimension (0 for the core); a softmax weight then moves by at most 2 ln2 delta relative,
/// the output by 4 ln2 delta vscale. That term matters only when scores are large (|scale| 4
/// and inputs 4), where float scores lose absolute precision whatever the implementation;
/// 1e-3 covers the rest. The last term is subnormal underflow (finish_tolerance).
struct AttnRefIn {
  size_t n, H, Hkv, D, depth;
  double scale;
  const double *q, *k, *qa, *ka;
};

/// S_i per row into smax; clears *no_overflow when a scaled query element or an S_i exceeds
/// FLT_MAX / 4.
inline void attn_bounds(const AttnRefIn& a, std::vector<double>& smax, bool* no_overflow) {
  const size_t QD = a.H * a.D, KD = a.Hkv * a.D, G = a.H / a.Hkv;
  const double qs = std::fabs(a.scale) * 1.4426950408889634;
  smax.assign(a.n, 0.0);
  const double lim = static_cast<double>(FLT_MAX) / 4;
  for (size_t i = 0; i < a.n; ++i)
    for (size_t h = 0; h < a.H; ++h) {
      const double* qi = a.qa + i * QD + h * a.D;
      for (size_t d = 0; d < a.D; ++d)
        if (qs * qi[d] > lim) *no_overflow = false;
      for (size_t j = 0; j <= i; ++j) {
        const double* kj = a.ka + j * KD + (h / G) * a.D;
        double s = 0;
        for (size_t d = 0; d < a.D; ++d) s += qs * qi[d] * kj[d];
        if (s > smax[i]) smax[i] = s;
      }
    }
  for (size_t i = 0; i < a.n; ++i)
    if (smax[i] > lim) *no_overflow = false;
}

inline void finish_tolerance(RefResult& r, size_t width, const std::vector<double>& smax,
                             double vscale, size_t depth, size_t D) {
  double mx = 0;
  for (double v : r.y) mx = std::fabs(v) > mx ? std::fabs(v) : mx;
  const double R = mx > vscale ? mx : vscale;
  const double u = std::ldexp(1.0, -24);
  const size_t n = r.y.size() / width;
  r.tol.assign(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double delta = static_cast<double>(depth + D + 8) * u * smax[i];
    // + an absolute floor for subnormal underflow: each product or sum rounded in the
    // subnormal range loses up to half of FLT_TRUE_MIN absolutely, and the chain (projection,
    // P V over up to T_max keys, W_O) has a few hundred of them; with inputs near 1e-40 the
    // true outputs lie below the smallest subnormal and float rightly returns 0.
    r.tol[i] = 1e-3 * R + 4 * 0.6931471805599453 * delta * vscale +
               1024 * static_cast<double>(std::numeric_limits<float>::denorm_min());
  }
}

/// The core: q [n][ldq] etc. as floats (dense here), scale.
inline RefResult reference_core(const float* q, const float* k, const float* v, size_t n, size_t H,
                                size_t Hkv, size_t D, float scale) {
  const size_t QD = H * D, KD = Hkv * D;
  std::vector<double> dq(n * QD), dk(n * KD), dv(n * KD), aq(n * QD), ak(n * KD);
  double vmax = 0;
  for (size_t i = 0; i < n * QD; ++i) dq[i] = q[i], aq[i] = std::fabs(dq[i]);
  for (size_t i = 0; i < n * KD; ++i) {
    dk[i] = k[i], dv[i] = v[i], ak[i] = std::fabs(dk[i]);
    vmax = std::fabs(dv[i]) > vmax ? std::fabs(dv[i]) : vmax;
  }
  RefResult r;
  r.y.assign(n * QD, 0.0);
  std::vector<double> s(n);
  microattn_ref::core(dq.data(), dk.data(), dv.data(), n, n, H, Hkv, D, scale, r.y.data(),
                      s.data());
  std::vector<double> smax;
  attn_bounds({n, H, Hkv, D, 0, scale, dq.data(), dk.data(), aq.data(), ak.data()}, smax,
              &r.no_overflow);
  finish_tolerance(r, QD, smax, vmax, 0, D);
  return r;
}

/// The layer (optionally with RoPE at positions start .. start + n - 1) for x [n][d_model].
template <class Cfg>
RefResult reference_layer(const FuzzWeights<Cfg>& W, const float* x, size_t n, float scale,
                          const RopeSpec& rope) {
  constexpr size_t DM = Cfg::kDModel, QD = Cfg::kQDim, KD = Cfg::kKvDim, D = Cfg::kDHead;
  constexpr size_t H = Cfg::kHeads, HKV = Cfg::kKvHeads, OD = Cfg::kOutDim;
  const float* bq = Cfg::kBiasQ ? W.bq.data() : nullptr;
  const float* bk = Cfg::kBiasK ? W.bk.data() : nullptr;
  const float* bv = Cfg::kBiasV ? W.bv.data() : nullptr;
  std::vector<double> q(n * QD), k(n * KD), v(n * KD), qa(n * QD), ka(n * KD), ctx(n * QD);
  microattn_ref::linear(x, n, DM, QD, W.wq.data(), false, bq, q.data());
  microattn_ref::linear(x, n, DM, KD, W.wk.data(), false, bk, k.data());
  microattn_ref::linear(x, n, DM, KD, W.wv.data(), false, bv, v.data());
  // Bounds |x| |W| + |b| of the projections (what their float rounding scales with).
  auto abs_linear = [&](const std::vector<float>& w, const float* b, size_t out,
                        std::vector<double>& dst) {
    for (size_t t = 0; t < n; ++t)
      for (size_t o = 0; o < out; ++o) {
        double acc = b ? std::fabs(static_cast<double>(b[o])) : 0.0;
        for (size_t i = 0; i < DM; ++i)
          acc += std::fabs(static_cast<double>(x[t * DM + i]) * w[i * out + o]);
        dst[t * out + o] = acc;
      }
  };
  abs_linear(W.wq, bq, QD, qa);
  abs_linear(W.wk, bk, KD, ka);
  if (rope.rot) {
    const size_t half = rope.rot / 2;
    auto rot_bound = [&](double* a, size_t heads) {  // |a c - b s| <= |a| + |b|
      for (size_t h = 0; h < heads; ++h)
        for (size_t i = 0; i < half; ++i) {
          const size_t lo = rope.adjacent ? 2 * i : i, hi = rope.adjacent ? 2 * i + 1 : i + half;
          const double s = a[h * D + lo] + a[h * D + hi];
          a[h * D + lo] = a[h * D + hi] = s;
        }
    };
    for (size_t t = 0; t < n; ++t) {
      const double pos = rope.start + static_cast<double>(t);
      for (size_t h = 0; h < H; ++h)
        microattn_ref::rope(&q[t * QD + h * D], rope.rot, pos, rope.base, rope.adjacent);
      for (size_t h = 0; h < HKV; ++h)
        microattn_ref::rope(&k[t * KD + h * D], rope.rot, pos, rope.base, rope.adjacent);
      rot_bound(&qa[t * QD], H);
      rot_bound(&ka[t * KD], HKV);
    }
  }
  RefResult r;
  std::vector<double> s(n);
  microattn_ref::core(q.data(), k.data(), v.data(), n, n, H, HKV, D, scale, ctx.data(), s.data());
  microattn_ref::LayerRef L{DM,
                            H,
                            HKV,
                            D,
                            false,
                            W.wq.data(),
                            W.wk.data(),
                            W.wv.data(),
                            Cfg::kHasOutProj ? W.wo.data() : nullptr,
                            bq,
                            bk,
                            bv,
                            Cfg::kBiasO ? W.bo.data() : nullptr};
  L.d_out = OD;
  r.y.assign(n * OD, 0.0);
  microattn_ref::output(L, ctx.data(), n, r.y.data());
  double vmax = 0;
  for (double e : v) vmax = std::fabs(e) > vmax ? std::fabs(e) : vmax;
  double wo_norm = 1;
  if (Cfg::kHasOutProj) {
    wo_norm = 0;
    for (size_t o = 0; o < OD; ++o) {
      double sum = 0;
      for (size_t e = 0; e < QD; ++e) sum += std::fabs(static_cast<double>(W.wo[e * OD + o]));
      wo_norm = sum > wo_norm ? sum : wo_norm;
    }
  }
  std::vector<double> smax;
  attn_bounds({n, H, HKV, D, DM, scale, q.data(), k.data(), qa.data(), ka.data()}, smax,
              &r.no_overflow);
  finish_tolerance(r, OD, smax, vmax * wo_norm, DM, D);
  return r;
}

/// Rows [from, n) of out (width floats) against the reference: finite and within tolerance.
inline void require_close(const float* out, const RefResult& r, size_t from, size_t n, size_t width,
                          const char* what) {
  for (size_t i = from; i < n; ++i)
    for (size_t c = 0; c < width; ++c) {
      const float got = out[(i - from) * width + c];
      const double want = r.y[i * width + c];
      FZ_REQUIRE(finite(got),
                 "[%s] row %zu col %zu is %a for all-finite inputs of magnitude <= 4 "
                 "(reference %.9g)",
                 what, i, c, static_cast<double>(got), want);
      FZ_REQUIRE(std::fabs(got - want) <= r.tol[i],
                 "[%s] row %zu col %zu: %.9g vs reference %.9g (|diff| %.3g > tolerance %.3g)",
                 what, i, c, static_cast<double>(got), want, std::fabs(got - want), r.tol[i]);
    }
}

/// Numeric contract of the layer and the cache: once a token at position j has a NaN or +-Inf
/// input, every element of the output of every position >= j is NaN or +-Inf.
/// x: positions 0 .. n_x - 1; out rows are positions pos0 .. pos0 + n_out - 1.
inline void require_nonfinite_after(const float* x, size_t n_x, size_t dm, const float* out,
                                    size_t pos0, size_t n_out, size_t od, const char* what) {
  const size_t j = first_nonfinite_row(x, n_x, dm);
  for (size_t i = 0; i < n_out; ++i) {
    if (pos0 + i < j) continue;
    for (size_t c = 0; c < od; ++c)
      FZ_REQUIRE(!finite(out[i * od + c]),
                 "[nonfinite] %s: input row %zu holds NaN/Inf but output row %zu col %zu is finite "
                 "(%a)",
                 what, j, pos0 + i, c, static_cast<double>(out[i * od + c]));
  }
}

}  // namespace fz
