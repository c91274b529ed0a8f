// SPDX-License-Identifier: Apache-2.0
// The attention kernels on their own, against a plain double-precision reference that decides
// visibility by position (not by the kernels' KeyMask): f32_attn_rows (masks, heads per group,
// cached keys before the queries, a ring's key offset, the work split, maps, the int8 cache) and
// f32_attn_decode (a window of the keys, the int8 cache, split-K), and the work split alone.
// The layer tests reach these kernels too; these pin them down where a failure is local.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/executor.hpp"
#include "microattn/kernels/f32_attn_decode.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/weights.hpp"
#include "support/check.hpp"
#include "support/rng.hpp"
#include "support/unit.hpp"

namespace {

using microattn::kernels::KeyMask;
using microattn::kernels::MapRows;
using microattn::kernels::QueryRows;
using microattn_test::for_each_arch;
using microattn_test::kQuick;

constexpr std::size_t kMaxKeys = 160, kMaxT = 100, kMaxD = 16, kMaxG = 2;
constexpr std::size_t kKtFloats = (kMaxKeys + 128) * kMaxD;  // whole key tiles of any arch
constexpr std::size_t kVFloats = (kMaxKeys + 128) * 32;      // rows padded to any kDPad

float g_q[kMaxT * kMaxG * kMaxD], g_out[kMaxT * kMaxG * kMaxD], g_out2[kMaxT * kMaxG * kMaxD];
float g_k[kMaxKeys * kMaxD], g_v[kMaxKeys * kMaxD], g_ks[kMaxKeys], g_vs[kMaxKeys];
alignas(64) float g_kt[kKtFloats], g_vr[kVFloats];
alignas(64) std::int8_t g_kt8[kKtFloats], g_vr8[kVFloats];
float g_maps[kMaxG * kMaxT * kMaxKeys];
double g_ref[kMaxT * kMaxG * kMaxD], g_wref[kMaxG * kMaxT * kMaxKeys], g_s[kMaxKeys];

/// What a query at position pos sees of key index j at position kp: causal (kp <= pos), a window
/// (pos - W < kp <= pos) or everything; and (causal) the first `sinks` key indices up to pos.
std::size_t g_sinks = 0;
bool visible(std::size_t pos, std::size_t kp, bool causal, std::size_t window, std::size_t j) {
  if (!causal) return true;
  return kp <= pos && (window == 0 || kp + window > pos || j < g_sinks);
}

/// out(t, e) = softmax(scale q(t, e) K^T over the visible keys) V, in double, and the weights
/// [e][t][j]; key j holds position key_pos0 + j, query t position pos0 + t. K, V: [n_keys][D]
/// (the dequantised values for an int8 cache).
void reference(std::size_t T, std::size_t G, std::size_t D, std::size_t n_keys, std::size_t pos0,
               std::size_t key_pos0, bool causal, std::size_t window, double scale, const float* k,
               const float* v) {
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t e = 0; e < G; ++e) {
      double mx = -INFINITY, sum = 0;
      for (std::size_t j = 0; j < n_keys; ++j) {
        if (!visible(pos0 + t, key_pos0 + j, causal, window, j)) continue;
        double d = 0;
        for (std::size_t c = 0; c < D; ++c) d += double(g_q[(t * G + e) * D + c]) * k[j * D + c];
        g_s[j] = d * scale;
        mx = g_s[j] > mx ? g_s[j] : mx;
      }
      for (std::size_t j = 0; j < n_keys; ++j)
        if (visible(pos0 + t, key_pos0 + j, causal, window, j))
          sum += (g_s[j] = std::exp(g_s[j] - mx));
      for (std::size_t c = 0; c < D; ++c) {
        double acc = 0;
        for (std::size_t j = 0; j < n_keys; ++j)
          if (visible(pos0 + t, key_pos0 + j, causal, window, j))
            acc += g_s[j] / sum * v[j * D + c];
        g_ref[(t * G + e) * D + c] = acc;
      }
      for (std::size_t j = 0; j < n_keys; ++j)
        g_wref[(e * T + t) * n_keys + j] =
            visible(pos0 + t, key_pos0 + j, causal, window, j) ? g_s[j] / sum : 0.0;
    }
}

/// Per-row int8 quantisation of n rows of D floats (the int8 cache's: scale = max |x| / 127),
/// dequantised back into x; q and scales out.
void quantise_rows(float* x, std::size_t n, std::size_t D, std::int8_t* q, float* scales) {
  for (std::size_t j = 0; j < n; ++j) {
    float amax = 0;
    for (std::size_t c = 0; c < D; ++c) amax = std::fmax(amax, std::fabs(x[j * D + c]));
    const float s = amax / 127.0f;
    scales[j] = s;
    for (std::size_t c = 0; c < D; ++c) {
      q[j * D + c] = microattn::quantize_value(x[j * D + c], s);
      x[j * D + c] = s * float(q[j * D + c]);
    }
  }
}

/// Integer scores: the kernels quantise each query row after scaling it by scale * log2 e
/// (kernels::qd8_quantize_row); the n rows of D at g_q become what those int8 rows stand for,
/// so the reference runs on the queries the integer dot products see.
template <class A>
void quantise_queries(std::size_t n, std::size_t D, float scale) {
  const float qscale = scale * microattn::kernels::kLog2e;
  float x[kMaxD];
  std::int8_t q[(kMaxD + 3) / 4 * 8];
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t d = 0; d < D; ++d) x[d] = g_q[r * D + d] * qscale;
    const float s = microattn::kernels::qd8_quantize_row<A>(D, x, q);
    for (std::size_t d = 0; d < D; ++d)
      g_q[r * D + d] =
          static_cast<float>(double(s) * microattn::kernels::qd8_value<A>(q, d) / double(qscale));
  }
}

struct TileCase {
  std::size_t T, n_keys, pos0, key_pos0, window;
  bool causal;
  std::size_t sinks;
};

/// f32_attn_rows<A, D> with G query heads per key head (CE: float or int8_t) on one case: one
/// part and the split into 2 and 3 parts (bit-identical), maps on and off (the same output
/// bits), against the reference. kIS: integer scores (int8 CE), the reference on the quantised
/// queries.
template <class A, std::size_t D, std::size_t G, class CE, bool kIS = false>
void check_tile(const TileCase& c, std::uint64_t seed) {
  using Tl = microattn::internal::Tiles<A>;
  using Scratch = microattn::kernels::AttnScratch<A, D, kIS>;
  constexpr std::size_t BK = Tl::kBK, DPad = Scratch::kDPad;
  constexpr bool kQ = !std::is_same<CE, float>::value;
  static Scratch sc;
  microattn_test::Rng rng(seed);
  rng.fill(g_q, c.T * G * D, -2, 2);
  rng.fill(g_k, c.n_keys * D, -2, 2);
  rng.fill(g_v, c.n_keys * D, -1, 1);
  CE* kt = nullptr;
  CE* vr = nullptr;
  if constexpr (kQ) {
    static std::int8_t qk[kMaxKeys * kMaxD], qv[kMaxKeys * kMaxD];
    quantise_rows(g_k, c.n_keys, D, qk, g_ks);
    quantise_rows(g_v, c.n_keys, D, qv, g_vs);
    for (std::size_t j = 0; j < c.n_keys; ++j)
      for (std::size_t d = 0; d < D; ++d) {
        g_kt8[(j / BK) * D * BK + d * BK + j % BK] = qk[j * D + d];
        g_vr8[j * DPad + d] = qv[j * D + d];
      }
    kt = g_kt8, vr = g_vr8;
  } else {
    microattn::kernels::store_key_tiles<A, D>(g_k, D, c.n_keys, 0, BK, g_kt);
    for (std::size_t j = 0; j < c.n_keys; ++j)
      for (std::size_t d = 0; d < D; ++d) g_vr[j * DPad + d] = g_v[j * D + d];
    kt = g_kt, vr = g_vr;
  }
  const float scale = 0.37f;
  if (kIS) quantise_queries<A>(c.T * G, D, scale);
  g_sinks = c.sinks;
  reference(c.T, G, D, c.n_keys, c.pos0, c.key_pos0, c.causal, c.window, scale, g_k, g_v);
  g_sinks = 0;
  const KeyMask mask{c.n_keys, c.key_pos0, c.window, c.causal, c.sinks};
  const QueryRows rows{g_q, G * D, D, g_out, G * D, D, c.T, G, c.pos0};
  const float* ks = kQ ? g_ks : nullptr;
  const float* vs = kQ ? g_vs : nullptr;
  microattn::kernels::f32_attn_rows<A, D>(rows, mask, kt, vr, scale, sc, ks, vs);
  const double tol = microattn_test::tolerance(D + c.n_keys + 8.0, 2.0 * 2.0 * D * scale);
  EXPECT_LE(microattn_test::max_diff(g_out, g_ref, c.T * G * D), tol)
      << A::name() << " D " << D << " G " << G << " T " << c.T << " keys " << c.n_keys << " pos0 "
      << c.pos0 << " key_pos0 " << c.key_pos0 << " window " << c.window << " causal " << c.causal
      << " sinks " << c.sinks;
  // The split: every part of 2 and 3 run one after the other gives the same bits.
  const QueryRows rows2{g_q, G * D, D, g_out2, G * D, D, c.T, G, c.pos0};
  for (std::size_t parts : {2, 3}) {
    std::memset(g_out2, 0xff, sizeof g_out2);
    for (std::size_t p = 0; p < parts; ++p)
      microattn::kernels::f32_attn_rows<A, D>(rows2, mask, kt, vr, scale, sc, ks, vs, nullptr, p,
                                              parts);
    EXPECT_EQ(std::memcmp(g_out, g_out2, c.T * G * D * sizeof(float)), 0)
        << A::name() << " " << parts << " parts, T " << c.T;
  }
  // Maps: the output's bits unchanged, the weights the reference's.
  const MapRows maps{g_maps, c.n_keys, c.T * c.n_keys};
  std::memset(g_out2, 0xff, sizeof g_out2);
  microattn::kernels::f32_attn_rows<A, D>(rows2, mask, kt, vr, scale, sc, ks, vs, &maps);
  EXPECT_EQ(std::memcmp(g_out, g_out2, c.T * G * D * sizeof(float)), 0) << A::name() << " maps";
  EXPECT_LE(microattn_test::max_diff(g_maps, g_wref, G * c.T * c.n_keys),
            microattn_test::tolerance(D + 8.0, 1.0))
      << A::name() << " maps, T " << c.T;
}

template <std::size_t D, std::size_t G, class CE, bool kIS = false>
void sweep_tile(std::uint64_t seed) {
  // Around the tile sizes (BQ 16/40/48 rows, BK 16/64/128 keys): the layer's shape (keys are the
  // call's tokens), cached keys before the queries (a KV cache's prefill), a ring's offset, and
  // each mask kind, and sinks beside a window (attention sinks: fewer than a key tile, more
  // than one, reaching the band, with cached keys before the queries).
  const TileCase cases[] = {{1, 1, 0, 0, 0, true, 0},         {17, 17, 0, 0, 0, true, 0},
                            {49, 49, 0, 0, 0, false, 0},      {30, 30, 0, 0, 7, true, 0},
                            {9, 100, 91, 0, 0, true, 0},      {25, 140, 115, 0, 20, true, 0},
                            {6, 40, 128, 94, 9, true, 0},     {41, 41, 0, 0, 1, true, 0},
                            {kMaxT, kMaxT, 0, 0, 0, true, 0}, {kMaxT, kMaxT, 0, 0, 33, true, 0},
                            {30, 30, 0, 0, 7, true, 4},       {41, 41, 0, 0, 1, true, 2},
                            {25, 140, 115, 0, 20, true, 70},  {kMaxT, kMaxT, 0, 0, 9, true, 17},
                            {20, 20, 0, 0, 5, true, 30}};
  std::size_t n = 0;
  for (const TileCase& c : cases) {
    if (kQuick && c.T > 50) continue;
    for_each_arch([&](auto arch) { check_tile<decltype(arch), D, G, CE, kIS>(c, seed + n); });
    ++n;
  }
}

TEST(AttnTile, AgainstReferenceD5Gqa) { sweep_tile<5, 2, float>(1); }
TEST(AttnTile, AgainstReferenceD16) { sweep_tile<16, 1, float>(2); }
TEST(AttnTile, Int8CacheAgainstReferenceOnDequantisedKeys) { sweep_tile<16, 2, std::int8_t>(3); }
TEST(AttnTile, Int8CacheIntegerScoresAgainstReferenceOnQuantisedQueries) {
  sweep_tile<16, 2, std::int8_t, true>(4);
}

// f32_attn_decode: the kRows heads of a group at the newest position over keys key0 .. key0 +
// n_keys - 1 (all visible), fp32 and int8, whole and split into key chunks (DecodePartial,
// merged in order).
template <class A, std::size_t D, std::size_t R, class CE, bool kIS = false>
void check_decode(std::size_t n_keys, std::size_t key0, std::uint64_t seed) {
  constexpr std::size_t kKeys = 256;  // whole key tiles of every arch
  using Tl = microattn::internal::Tiles<A>;
  using Scratch = microattn::kernels::DecodeScratch<A, D, R, kKeys, kIS>;
  constexpr std::size_t BK = Tl::kBK, DPad = Scratch::kDPad;
  constexpr bool kQ = !std::is_same<CE, float>::value;
  static Scratch sc;
  static microattn::kernels::DecodePartial<A, D, R> part[3];
  const std::size_t total = key0 + n_keys;
  microattn_test::Rng rng(seed);
  rng.fill(g_q, R * D, -2, 2);
  rng.fill(g_k, total * D, -2, 2);
  rng.fill(g_v, total * D, -1, 1);
  CE* kt = nullptr;
  CE* vr = nullptr;
  if constexpr (kQ) {
    static std::int8_t qk[kMaxKeys * kMaxD], qv[kMaxKeys * kMaxD];
    quantise_rows(g_k, total, D, qk, g_ks);
    quantise_rows(g_v, total, D, qv, g_vs);
    for (std::size_t j = 0; j < total; ++j)
      for (std::size_t d = 0; d < D; ++d) {
        g_kt8[(j / BK) * D * BK + d * BK + j % BK] = qk[j * D + d];
        g_vr8[j * DPad + d] = qv[j * D + d];
      }
    kt = g_kt8, vr = g_vr8;
  } else {
    microattn::kernels::store_key_tiles<A, D>(g_k, D, total, 0, BK, g_kt);
    for (std::size_t j = 0; j < total; ++j)
      for (std::size_t d = 0; d < D; ++d) g_vr[j * DPad + d] = g_v[j * D + d];
    kt = g_kt, vr = g_vr;
  }
  const float scale = 0.41f;
  if (kIS) quantise_queries<A>(R, D, scale);
  // The reference over keys key0 .. total - 1: one query "at" the last position, no mask.
  reference(1, R, D, n_keys, 0, 0, false, 0, scale, g_k + key0 * D, g_v + key0 * D);
  const float* ks = kQ ? g_ks : nullptr;
  const float* vs = kQ ? g_vs : nullptr;
  microattn::kernels::f32_attn_decode<A, D, R, kKeys>(g_q, D, g_out, D, n_keys, kt, vr, scale, sc,
                                                      ks, vs, key0);
  const double tol = microattn_test::tolerance(D + n_keys + 8.0, 2.0 * 2.0 * D * scale);
  EXPECT_LE(microattn_test::max_diff(g_out, g_ref, R * D), tol)
      << A::name() << " decode D " << D << " rows " << R << " keys " << key0 << " + " << n_keys
      << (kIS ? " integer scores" : "");
  // Split-K: three chunks of whole key tiles, merged.
  for (std::size_t c = 0; c < 3; ++c) {
    const microattn::internal::Range r = microattn::internal::split(n_keys, BK, c, 3);
    part[c].empty = r.begin >= r.end;
    if (r.begin < r.end)
      microattn::kernels::f32_attn_decode<A, D, R, kKeys>(
          g_q, D, nullptr, D, r.end - r.begin, kt, vr, scale, sc, ks, vs, key0 + r.begin, &part[c]);
  }
  microattn::kernels::f32_attn_decode_merge<A, D, R>(part, 3, g_out2, D);
  EXPECT_LE(microattn_test::max_diff(g_out2, g_ref, R * D), tol)
      << A::name() << " decode split-K, keys " << key0 << " + " << n_keys;
}

TEST(AttnDecode, AgainstReference) {
  const std::size_t cases[][2] = {{1, 0}, {15, 0}, {64, 0}, {129, 0}, {40, 57}, {7, 121}};
  std::uint64_t seed = 10;
  for (const auto& c : cases)
    for_each_arch([&](auto arch) {
      using A = decltype(arch);
      check_decode<A, 16, 2, float>(c[0], c[1], ++seed);
      check_decode<A, 5, 1, float>(c[0], c[1], ++seed);
      check_decode<A, 8, 2, float>(c[0], c[1], ++seed);  // V rows under a panel (AVX2, AVX-512)
      check_decode<A, 16, 4, std::int8_t>(c[0], c[1], ++seed);
      check_decode<A, 16, 4, std::int8_t, true>(c[0], c[1], ++seed);
      check_decode<A, 13, 2, std::int8_t, true>(c[0], c[1], ++seed);
    });
}

// The work split alone: every query tile has exactly one owner among the parts, and the dearest
// part's cost exceeds an even share by less than one tile's.
TEST(AttnTile, QueryTileSplitCoversEveryTileOnceAndBalances) {
  const KeyMask masks[] = {KeyMask{600}, KeyMask{600, 0, 0, false}, KeyMask{600, 0, 37, true},
                           KeyMask{800, 200, 0, true}, KeyMask{600, 0, 37, true, 50}};
  const std::size_t pos0s[] = {0, 0, 0, 200, 0};
  for (std::size_t mi = 0; mi < 5; ++mi)
    for (std::size_t n_rows : {1, 47, 48, 49, 300, 599})
      for (std::size_t heads : {1, 2})
        for (std::size_t parts : {1, 2, 3, 4}) {
          const std::size_t bq = 48;
          const microattn::kernels::detail::QueryTileSplit split(masks[mi], n_rows, heads,
                                                                 pos0s[mi], bq, 16, parts);
          const std::size_t tiles = (n_rows + bq - 1) / bq;
          std::size_t cost[4] = {0, 0, 0, 0}, total = 0, dearest = 0;
          for (std::size_t t = 0; t < tiles; ++t) {
            const std::size_t o = split.owner(t);
            ASSERT_LT(o, parts) << "tile " << t;
            std::size_t c = 0;
            for (std::size_t r = t * bq; r < n_rows && r < (t + 1) * bq; ++r) {
              const std::size_t pos = pos0s[mi] + r / heads;
              const std::size_t lo = masks[mi].lo(pos), hi = masks[mi].hi(pos);
              c += (hi > lo ? hi - lo : 0) + masks[mi].sink_end(pos) + 16;
            }
            cost[o] += c, total += c, dearest = c > dearest ? c : dearest;
          }
          for (std::size_t p = 0; p < parts; ++p)
            EXPECT_LE(cost[p], total / parts + dearest)
                << "mask " << mi << " rows " << n_rows << " heads " << heads << " parts " << parts;
        }
}

}  // namespace
