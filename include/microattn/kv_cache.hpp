// SPDX-License-Identifier: Apache-2.0
// microattn: causal multi-head attention for autoregressive inference: a fixed-capacity KV
// cache, prefill (also chunked), single-token decode, rotary embeddings, GQA/MQA.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/attention.hpp"
#include "microattn/config.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_attn_decode.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/kernels/f32_rope.hpp"
#include "microattn/status.hpp"
#include "microattn/weights.hpp"

namespace microattn {

/// What export_cache() wrote: which cached tokens, of what shape, rotated how. import_cache()
/// checks it, so a cache computed elsewhere (offline on a host and kept in flash, or handed
/// over from another process) is only accepted where it means the same thing.
struct CacheSlice {
  std::size_t first = 0;     ///< cache position of the first token (RoPE adds start_position)
  std::size_t tokens = 0;    ///< tokens in the slice
  std::size_t kv_heads = 0;  ///< H_kv of the layer it came from
  std::size_t d_head = 0;    ///< d_head of the layer it came from
  RopeConfig rope{};         ///< the RoPE its keys were rotated with (enabled == false: none)
};

/// Causal multi-head self-attention with a key/value cache, for generating or streaming one
/// token (or one chunk) at a time. Same math as MultiHeadAttention, plus optional RoPE on Q
/// and K; the cache holds the (rotated) K and V of every token seen so far, so a call only
/// projects and attends for its new tokens:
///   prefill(x, T, y): tokens at positions p = length() .. length() + T - 1 attend to every
///                     cached token and causally within the call (token p sees keys 0 .. p);
///   decode(x, y):     the same for one token, with kernels made for it (GEMV projections,
///                     a two-pass softmax over the whole cache that reads each K/V row once
///                     for all the query heads of its group).
/// prefill(x, T) in any split into calls (decode being T = 1) gives the outputs of one
/// prefill(x, T_total) up to float rounding (the tests bound the difference).
///
/// Modes:
///   causal (default): append-only, capacity T_max tokens (appending past it returns
///     kCacheFull). truncate() rolls the cache back (speculative decoding, re-running a suffix),
///     reset() empties it.
///   sliding window (Config option SlidingWindow{W}): a ring buffer. Token p sees tokens
///     p - W + 1 .. p; positions grow without bound (never kCacheFull), RoPE rotates at the
///     absolute position, the cache holds the last W + kPrefillChunk - 1 tokens (RAM O(W), not
///     O(stream)); prefill calls of up to T_max tokens, longer than the free space or not,
///     run in chunks of kPrefillChunk. truncate(n) is accepted while the tokens position n
///     would see are still held (n == 0, or n - W + 1 >= oldest()): kPrefillChunk tokens back
///     from the furthest position written, fewer after earlier truncates. T_max is then the
///     longest call (and the RoPE table's span), not a capacity.
///
/// The object holds the weight views, the cache, the RoPE tables and all working memory (no
/// heap, no globals, no exceptions); sizeof == ram_bytes(), broken down below. Every method
/// that returns a Status changes nothing (cache, length, outputs) unless it returns kOk.
/// Its default state is all zero bytes (default scale, RoPE off, empty cache, no weights), so a
/// static object is correct in .bss even when the firmware's startup runs no C++ constructors.
///
/// @tparam kPrefillChunk tokens prefill() processes at a time (1 .. T_max, default T_max).
///   The prefill workspace grows with it (kChunk * (H + H/H_kv) * d_head floats), so a
///   microcontroller can trade prefill speed for RAM; results are the same for every value
///   (a prefill is a sequence of chunked prefills).
template <class Cfg, class Arch = DefaultArch, std::size_t kPrefillChunk = Cfg::kTMax>
class KvAttention {
  static_assert(kPrefillChunk >= 1 && kPrefillChunk <= Cfg::kTMax,
                "microattn::KvAttention: kPrefillChunk must be in 1 .. T_max");
  static_assert(Cfg::kCausal,
                "microattn::KvAttention: a KV cache is causal; Mask::kNone (bidirectional) is "
                "for MultiHeadAttention and ScaledDotProductAttention");
  using Tl = internal::Tiles<Arch>;
  static constexpr std::size_t D = Cfg::kDHead, G = Cfg::kGroup, DM = Cfg::kDModel,
                               OD = Cfg::kOutDim;
  static constexpr std::size_t HKV = Cfg::kKvHeads, QD = Cfg::kQDim, KD = Cfg::kKvDim;

 public:
  /// Integer compute with the int8 cache: the scores against the cache are integer too.
  static constexpr bool kIntScores = Cfg::kInt8Compute && Cfg::kInt8Cache;

 private:
  using TileScratch = kernels::AttnScratch<Arch, D, kIntScores>;

 public:
  /// Ring-buffer mode (Cfg has SlidingWindow{W}): positions grow without bound and the cache
  /// keeps the last kRingTokens = W + kPrefillChunk - 1 of them (what one chunk's tokens see),
  /// each stored twice (slot p % kRingTokens and the slot kRingTokens above it), so every window
  /// the kernels read is one contiguous run of slots.
  static constexpr bool kRing = Cfg::kSliding;
  static constexpr std::size_t kRingTokens = kRing ? Cfg::kWindow + kPrefillChunk - 1 : 0;
  /// Keys per head the cache stores: T_max (ring: 2 * kRingTokens) rounded up to whole key tiles.
  static constexpr std::size_t kTPad =
      internal::round_up(kRing ? 2 * kRingTokens : Cfg::kTMax, Tl::kBK);
  /// Row stride of cached V (kernels::v_row_stride): d_head rounded up to whole GEMM panels, or
  /// under a panel (SIMD arches) to a power-of-two number of vectors.
  static constexpr std::size_t kDPad = TileScratch::kDPad;
  /// Key/value heads a prefill chunk works on at once: with MaxWorkers{n} > 1 one per worker up
  /// to H_kv (each worker takes whole heads, in its own Q buffer), else one.
  static constexpr std::size_t kStagedHeads = internal::staged_heads<Cfg>();

 private:
  using DecScratch = kernels::DecodeScratch<Arch, D, G, kTPad, kIntScores>;
  /// Key chunks of one decode step's attention per key/value head: 1, unless the configuration
  /// has more workers than key/value heads (MQA/GQA on many cores): then enough chunks for every
  /// worker (flash-decoding's split-K), fixed by the configuration, so the result does not
  /// depend on how many workers a call gets.
  static constexpr std::size_t kSplitK =
      HKV < Cfg::kMaxWorkers ? (Cfg::kMaxWorkers + HKV - 1) / HKV : 1;
  static_assert(DecScratch::kDPad == kDPad,
                "decode and prefill kernels must agree on V's row stride");

  /// Element type of the cache (float, or int8_t with CacheType::kInt8) and what it means
  /// (internal::Elem: scaled per token row or not).
  using CE = typename Cfg::CacheElem;
  using Elem = internal::Elem<CE>;
  static constexpr bool kQCache = Elem::kScaled;
  /// K^T tiles and V rows of each key/value head (H_kv of them, not H: GQA/MQA save memory);
  /// with a scaled element type also one K scale and one V scale per cached token and head.
  struct CacheRows {
    alignas(Tl::kAlign) CE kt[HKV * kTPad * D];
    alignas(Tl::kAlign) CE v[HKV * kTPad * kDPad];
  };
  struct CacheScaledRows : CacheRows {
    alignas(Tl::kAlign) float ks[HKV * kTPad];
    alignas(Tl::kAlign) float vs[HKV * kTPad];
  };
  using Cache = std::conditional_t<kQCache, CacheScaledRows, CacheRows>;
  /// Prefill working memory: Q of one group for a chunk of tokens (also the staging of
  /// unrotated keys and of values the cache converts), one per worker that takes whole groups
  /// (kStagedHeads, as the layer's), the concatenated heads (when W_O follows), a GEMM B panel
  /// and a tile scratch per worker.
  static constexpr std::size_t kQStride =
      internal::round_up(kPrefillChunk * G * D, Tl::kAlign / sizeof(float));
  static constexpr std::size_t kPackFloats = kernels::gemm_pack_floats<Arch>();
  // The quantised rows of integer compute (Compute::kInt8) are a base of the working memory:
  // empty otherwise, and then of no size.
  using PrefillQd8 = internal::Qd8BufferFor<Cfg, Arch, kPrefillChunk>;
  using DecodeQd8 = internal::Qd8BufferFor<Cfg, Arch, 1>;
  struct PrefillWork : PrefillQd8 {
    alignas(Tl::kAlign) float q[kStagedHeads][kQStride];
    alignas(Tl::kAlign) float ctx[Cfg::kHasOutProj ? kPrefillChunk * QD : 1];
    alignas(Tl::kAlign) float pack[Cfg::kMaxWorkers][kPackFloats];
    TileScratch tile[Cfg::kMaxWorkers];
  };
  /// Decode working memory: the token's Q, K, V, context and one score row per query head of
  /// a group.
  struct DecodeWork : DecodeQd8 {
    alignas(Tl::kAlign) float q[QD];
    alignas(Tl::kAlign) float k[KD];
    alignas(Tl::kAlign) float v[KD];
    alignas(Tl::kAlign) float ctx[QD];
    DecScratch att[Cfg::kMaxWorkers];
    /// Split-K (only when there are more workers than key/value heads): each head's keys in
    /// kSplitK chunks, their partial results, merged in chunk order.
    kernels::DecodePartial<Arch, D, G> part[kSplitK > 1 ? HKV* kSplitK : 1];
  };

 public:
  /// Bytes of the KV cache: K and V of H_kv heads x kTPad tokens. fp32:
  /// 4 * H_kv * kTPad * (d_head + kDPad), about 8 * H_kv * T_max * d_head (docs/memory.md has
  /// kTPad and kDPad per arch). int8
  /// (CacheType::kInt8): H_kv * kTPad * (d_head + kDPad + 8) (the 8: a K and a V scale per token
  /// and head), about 2 * H_kv * T_max * (d_head + 4): a quarter of fp32 plus the scales.
  static constexpr std::size_t kCacheBytes = sizeof(Cache);
  /// Bytes of the RoPE state: with Rope::kYes the cos/sin tables, 8 * T_max * (d_head / 2) (the
  /// price of no transcendental call per token), present whether or not set_rope enabled them;
  /// without Rope::kYes almost nothing.
  static constexpr std::size_t kRopeBytes = sizeof(internal::RopeState<Cfg>);
  /// Bytes of working memory: prefill (grows with kPrefillChunk * (kStagedHeads * G + H) *
  /// d_head) and decode.
  static constexpr std::size_t kWorkspaceBytes = sizeof(PrefillWork) + sizeof(DecodeWork);

  KvAttention() = default;
  KvAttention(const KvAttention&) = delete;
  KvAttention& operator=(const KvAttention&) = delete;

  /// RAM of the whole object in bytes (>= kCacheBytes + kRopeBytes + kWorkspaceBytes; weights
  /// are views and not included).
  static constexpr std::size_t ram_bytes() noexcept { return sizeof(KvAttention); }

  /// Points the layer at weights (views over caller arrays; layout and shapes in weights.hpp).
  /// Allowed at any time; cached K/V stay as they were computed.
  /// @return kOk; kNullPointer (nothing changed) when a pointer Cfg needs is null;
  ///         kBadArgument (nothing changed) for a layout Cfg cannot use (Weights::check).
  [[nodiscard]] Status set_weights(const Weights<Cfg>& w) noexcept {
    const Status s = w.check();
    if (s != Status::kOk) return s;
    w_ = w;
    return Status::kOk;
  }

  /// Enables (or disables) rotary embeddings on Q and K and precomputes the cos/sin tables
  /// (T_max x rotary_dims/2 angles, done here once, never per token). The cached token at
  /// position p is rotated at r.start_position + p. Needs Rope::kYes in the Config.
  /// Keys are cached rotated, so the setting is fixed for a sequence: only allowed while the
  /// cache is empty.
  /// @return kOk; kBadArgument (nothing changed) when the cache is not empty or, for an enabled
  ///         config, the Config has no Rope::kYes, base is not finite or <= 0, rotary_dims
  ///         (0 = d_head) is odd or > d_head, pairing is not a RopePairing value, or
  ///         start_position + T_max overflows size_t.
  [[nodiscard]] Status set_rope(const RopeConfig& r) noexcept {
    if (length_ != 0) return Status::kBadArgument;
    return rope_.set(r);
  }

  /// The current RoPE settings (enabled == false when off).
  RopeConfig rope() const noexcept { return rope_.get(); }

  /// Softmax scale, default 1/sqrt(d_head). Allowed at any time (the cache does not depend on it).
  /// @return kOk, or kBadScale (nothing changed) when scale is not finite or |scale| > FLT_MAX /
  ///         log2(e).
  [[nodiscard]] Status set_scale(float scale) noexcept { return scale_.set(scale); }

  /// The softmax scale in use.
  float scale() const noexcept { return scale_.get<Cfg>(); }

  /// Splits every later call over the executor's workers (at most Cfg::kMaxWorkers, each with
  /// its own GEMM panel, tile and decode scratch in this object; see executor.hpp): prefill by
  /// rows and query tiles, decode's projections by output columns and its attention by
  /// key/value groups. The results are bit-identical for any worker count.
  /// @return kOk, or kBadArgument (nothing changed) for workers > Cfg::kMaxWorkers or workers > 1
  ///         without a run function.
  [[nodiscard]] Status set_executor(const Executor& e) noexcept { return ex_.set(e); }

  /// Appends T tokens to the cache and returns their outputs: the token at position
  /// p = length() + i sees the cached tokens and the tokens of this call up to itself.
  /// @param x  [T][d_model] floats
  /// @param T  tokens, 1 .. T_max
  /// @param y  [T][Cfg::kOutDim] floats, written only on kOk. Without W_O it must not overlap
  ///           x. With W_O, one chunk's x is read in full before its rows of y are written: when
  ///           T <= kPrefillChunk (always with the default kPrefillChunk = T_max) y may overlap
  ///           x in any way; for a longer T, y may overlap x only if the y rows of each chunk
  ///           end before the next chunk's x rows begin (with OutDim == d_model: y starts at or
  ///           before x; y == x is fine).
  ///           y must never overlap a weight or bias array.
  /// @return kOk; kNullPointer (x, y or a needed weight null); kBadTokenCount (T == 0 or
  ///         T > T_max); kCacheFull (length() + T > T_max); kOverlap (an overlap the rules
  ///         above forbid). On error the cache, length() and y are unchanged.
  [[nodiscard]] Status prefill(const float* x, std::size_t T, float* y) noexcept {
    if (const Status s = internal::check_layer_args(w_, x, y, T); s != Status::kOk) return s;
    if (!kRing && length_ + T > Cfg::kTMax) return Status::kCacheFull;
    if (kRing && T > SIZE_MAX - length_) return Status::kCacheFull;
    if (const Status s = internal::check_layer_output(w_, x, T, y, chunks_leave_x_unread(x, T, y));
        s != Status::kOk)
      return s;
    for (std::size_t t0 = 0; t0 < T; t0 += kPrefillChunk) {
      const std::size_t n = internal::min_size(kPrefillChunk, T - t0);
      run_prefill(x + t0 * DM, n, y + t0 * Cfg::kOutDim);
      appended(n);
    }
    return Status::kOk;
  }

  /// Appends one token (at position length(), 0 on an empty cache) and returns its output,
  /// attending over the whole cache. Same result as prefill(x, 1, y) up to float rounding.
  /// @param x  [d_model] floats
  /// @param y  [Cfg::kOutDim] floats, written only on kOk; may alias x with W_O, must not
  ///           overlap it without; must not overlap a weight or bias array.
  /// @return kOk, kNullPointer, kCacheFull (length() == T_max) or kOverlap; on error nothing
  ///         changed.
  [[nodiscard]] Status decode(const float* x, float* y) noexcept {
    if (const Status s = internal::check_layer_args(w_, x, y, 1); s != Status::kOk) return s;
    if (kRing ? length_ == SIZE_MAX : length_ + 1 > Cfg::kTMax) return Status::kCacheFull;
    if (const Status s = internal::check_layer_output(w_, x, 1, y, true); s != Status::kOk)
      return s;
    run_decode(x, y);
    appended(1);
    return Status::kOk;
  }

  /// Copies the cached keys and values of tokens first .. first + n - 1 out, as the layer holds
  /// them (keys rotated when RoPE is on; an int8 cache's values dequantised, scale * q), and
  /// describes them in *info.
  /// @param k, v  [n][H_kv * d_head] floats each (head g at columns g*d_head ..), written only
  ///              on kOk
  /// @param info  written only on kOk: first, n, the shape and the RoPE settings
  /// @return kOk; kNullPointer (k, v or info null); kBadArgument (n == 0 or first + n >
  ///         length(), or, in ring mode, first < oldest()); kOverlap (k and v overlap each
  ///         other).
  [[nodiscard]] Status export_cache(std::size_t first, std::size_t n, float* k, float* v,
                                    CacheSlice* info) const noexcept {
    if (!k || !v || !info) return Status::kNullPointer;
    if (n == 0 || first > length_ || n > length_ - first || first < oldest())
      return Status::kBadArgument;
    if (internal::overlaps(k, n * KD * sizeof(float), v, n * KD * sizeof(float)))
      return Status::kOverlap;
    for (std::size_t t = 0; t < n; ++t) {
      const std::size_t p = slot(first + t);
      for (std::size_t g = 0; g < HKV; ++g) {
        const CE* kt = cache_.kt + g * (kTPad * D) + (p / Tl::kBK) * (D * Tl::kBK) + p % Tl::kBK;
        const CE* vr = cache_.v + g * (kTPad * kDPad) + p * kDPad;
        float ks = 1.0f, vs = 1.0f;
        if constexpr (kQCache) ks = cache_.ks[g * kTPad + p], vs = cache_.vs[g * kTPad + p];
        for (std::size_t d = 0; d < D; ++d) {
          k[t * KD + g * D + d] = Elem::decode(kt[d * Tl::kBK], ks);
          v[t * KD + g * D + d] = Elem::decode(vr[d], vs);
        }
      }
    }
    info->first = first, info->tokens = n, info->kv_heads = HKV, info->d_head = D;
    info->rope = rope();
    return Status::kOk;
  }

  /// Appends tokens exported by export_cache() (here or from another object of the same shape),
  /// as if they had been prefilled: they take positions length() .. length() + tokens - 1.
  /// Their keys were rotated where they were computed, so the slice must continue this cache
  /// (info.first == length()) under the same RoPE (enabled, base, pairing, rotary dims, start
  /// position), and its shape must be this layer's; the weights are not checked (a cache is
  /// only meaningful with the weights that computed it). An int8 cache quantises the rows as
  /// it does new tokens: an exported int8 slice comes back with the same int8 values (its
  /// scales within a rounding of the originals).
  /// @param k, v  [info.tokens][H_kv * d_head] floats each, as export_cache() wrote them
  /// @return kOk; kNullPointer (k or v null); kBadArgument (tokens == 0, another shape, another
  ///         position or another RoPE); kCacheFull (length() + tokens > T_max). Nothing changes
  ///         on error.
  [[nodiscard]] Status import_cache(const CacheSlice& info, const float* k,
                                    const float* v) noexcept {
    if (!k || !v) return Status::kNullPointer;
    if (info.tokens == 0 || info.kv_heads != HKV || info.d_head != D || info.first != length_ ||
        !internal::same_rope(info.rope, rope(), D))
      return Status::kBadArgument;
    if (kRing ? info.tokens > SIZE_MAX - length_ : info.tokens > Cfg::kTMax - length_)
      return Status::kCacheFull;
    for (std::size_t t = 0; t < info.tokens; ++t)
      for (std::size_t g = 0; g < HKV; ++g)
        store_kv(g, k + t * KD + g * D, KD, v + t * KD + g * D, KD, 1, length_ + t);
    appended(info.tokens);
    return Status::kOk;
  }

  /// Forgets the cached tokens at positions >= length (the next token gets position length).
  /// In ring mode the slots of dropped tokens still hold them until overwritten, and a token
  /// written after a truncate overwrites an older one: the oldest position held is oldest(),
  /// and a truncate is accepted only while every token position `length` sees is held.
  /// @return kOk, or kBadArgument (nothing changed) when length > length() or, in ring mode,
  ///         0 < length and length - W + 1 < oldest() (a token the next one sees is gone);
  ///         truncate(0) is accepted at any length (as reset()).
  [[nodiscard]] Status truncate(std::size_t length) noexcept {
    if (length > length_) return Status::kBadArgument;
    if constexpr (kRing) {
      const std::size_t first_seen = length >= Cfg::kWindow ? length + 1 - Cfg::kWindow : 0;
      if (length != 0 && first_seen < kept_) return Status::kBadArgument;
      if (length == 0) kept_ = 0;
    }
    length_ = length;
    return Status::kOk;
  }

  /// Empties the cache (weights, RoPE and scale settings stay). Stale cache contents are never
  /// read: a new sequence gives bit-for-bit the outputs of a fresh object.
  void reset() noexcept { length_ = 0, kept_ = 0; }

  /// Tokens in the cache (the position of the next token).
  std::size_t length() const noexcept { return length_; }

  /// Capacity in tokens: T_max; in ring mode (SlidingWindow) SIZE_MAX (no limit: the cache
  /// keeps the last kRingTokens).
  static constexpr std::size_t capacity() noexcept { return kRing ? SIZE_MAX : Cfg::kTMax; }

  /// The oldest position still held: 0, or in ring mode the oldest position whose slot no later
  /// token has overwritten (length() - kRingTokens once the ring has wrapped, more after a
  /// truncate). Positions oldest() .. length() - 1 are held (export_cache reads them).
  std::size_t oldest() const noexcept { return kRing ? kept_ : 0; }

 private:
  /// With W_O, prefill writes a chunk's y rows after reading its x rows and before reading
  /// the next chunk's. True when, at every chunk end e < T, the y rows written so far end at or
  /// before x row e (the condition is linear in e, so the first and last chunk ends decide).
  /// With OutDim == d_model: y starts at or before x, or the call is one chunk.
  static bool chunks_leave_x_unread(const float* x, std::size_t T, const float* y) noexcept {
    if (T <= kPrefillChunk) return true;
    const auto px = reinterpret_cast<std::uintptr_t>(x), py = reinterpret_cast<std::uintptr_t>(y);
    const std::size_t last = (T - 1) / kPrefillChunk * kPrefillChunk;
    for (std::size_t e : {kPrefillChunk, last})
      if (py + e * OD * sizeof(float) > px + e * DM * sizeof(float)) return false;
    return true;
  }

  CE* kt_head(std::size_t g) noexcept { return cache_.kt + g * (kTPad * D); }
  CE* v_head(std::size_t g) noexcept { return cache_.v + g * (kTPad * kDPad); }
  const float* ks_head(std::size_t g) const noexcept {
    if constexpr (kQCache)
      return cache_.ks + g * kTPad;
    else
      return (void)g, nullptr;
  }
  const float* vs_head(std::size_t g) const noexcept {
    if constexpr (kQCache)
      return cache_.vs + g * kTPad;
    else
      return (void)g, nullptr;
  }

  /// After n tokens were stored at positions length_ .. length_ + n - 1. Ring: each overwrote
  /// the slot of the position kRingTokens before it (or of a dropped one), so the positions held
  /// are the last kRingTokens at most (invariant: length_ - kept_ <= kRingTokens).
  void appended(std::size_t n) noexcept {
    length_ += n;
    if constexpr (kRing)
      if (length_ > kRingTokens && length_ - kRingTokens > kept_) kept_ = length_ - kRingTokens;
  }

  /// Cache slot of position p (ring: p mod kRingTokens, mirrored kRingTokens above).
  static std::size_t slot(std::size_t p) noexcept { return kRing ? p % kRingTokens : p; }
  /// Stores n tokens' keys (rows of k) of head g at positions pos .. : at their slots, and in
  /// ring mode also at the mirror slots. put_values: the same for values.
  void put_keys(std::size_t g, const float* k, std::size_t ldk, std::size_t n,
                std::size_t pos) noexcept {
    if constexpr (!kRing) {
      store_keys(g, k, ldk, n, pos);
    } else {
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t s : {slot(pos + t), slot(pos + t) + kRingTokens})
          store_keys(g, k + t * ldk, ldk, 1, s);
    }
  }
  void put_values(std::size_t g, const float* v, std::size_t ldv, std::size_t n,
                  std::size_t pos) noexcept {
    if constexpr (!kRing) {
      store_values(g, v, ldv, n, pos);
    } else {
      for (std::size_t t = 0; t < n; ++t)
        for (std::size_t s : {slot(pos + t), slot(pos + t) + kRingTokens})
          store_values(g, v + t * ldv, ldv, 1, s);
    }
  }
  void store_kv(std::size_t g, const float* k, std::size_t ldk, const float* v, std::size_t ldv,
                std::size_t n, std::size_t pos) noexcept {
    put_keys(g, k, ldk, n, pos);
    put_values(g, v, ldv, n, pos);
  }
  /// The prefill driver's Store (driver/layer_driver.hpp): this object's cache. fp32 values
  /// are projected into their rows in place; other elements and the ring's go through
  /// put_values.
  struct CacheStore {
    static constexpr bool kValueRows = std::is_same<CE, float>::value && !kRing;
    static constexpr std::size_t kVStride = kDPad;
    static constexpr std::size_t kKeyRows = kTPad;
    KvAttention& self;
    void keys(std::size_t g, std::size_t, const float* k, std::size_t ldk, std::size_t n,
              std::size_t pos) noexcept {
      self.put_keys(g, k, ldk, n, pos);
    }
    float* value_rows(std::size_t g, std::size_t, std::size_t pos) noexcept {
      if constexpr (kValueRows)
        return self.v_head(g) + pos * kDPad;
      else
        return (void)g, (void)pos, nullptr;
    }
    void values(std::size_t g, std::size_t, const float* v, std::size_t ldv, std::size_t n,
                std::size_t pos) noexcept {
      self.put_values(g, v, ldv, n, pos);
    }
    static kernels::KeyMask mask(std::size_t L, std::size_t T) noexcept {
      const RingView rv = ring_view(L, T);
      return kernels::KeyMask{rv.n_keys, rv.key_pos0, Cfg::kWindow, true};
    }
    const CE* kt(std::size_t g, std::size_t) const noexcept { return self.kt_head(g); }
    const CE* v(std::size_t g, std::size_t) const noexcept { return self.v_head(g); }
    const float* k_scale(std::size_t g) const noexcept { return self.ks_head(g); }
    const float* v_scale(std::size_t g) const noexcept { return self.vs_head(g); }
  };
  /// The kernels' view of the ring for tokens at positions L .. L + T - 1: key index j holds
  /// position key_pos0 + j, and every position those tokens see is at an index < n_keys.
  struct RingView {
    std::size_t key_pos0;
    std::size_t n_keys;
  };
  static RingView ring_view(std::size_t L, std::size_t T) noexcept {
    if constexpr (!kRing) {
      return {0, L + T};
    } else {
      // Oldest position the call's tokens may see (L - W + 1 >= it, as kRingTokens >= W + T - 1).
      const std::size_t p0 = L + T > kRingTokens ? L + T - kRingTokens : 0;
      const std::size_t base = p0 - p0 % kRingTokens;
      return {base, L + T - base};
    }
  }

  /// Writes n keys (rows of k, stride ldk) of key/value head g at cache rows row0 .. into the
  /// key tiles: fp32 by register transposes (store_key_tiles), other elements a row at a time
  /// through Elem::encode (a scaled element type's scale beside it).
  void store_keys(std::size_t g, const float* k, std::size_t ldk, std::size_t n,
                  std::size_t row0) noexcept {
    if constexpr (std::is_same<CE, float>::value) {
      kernels::store_key_tiles<Arch, D>(k, ldk, n, row0, Tl::kBK, kt_head(g));
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        const std::size_t r = row0 + i;
        CE* dst = kt_head(g) + (r / Tl::kBK) * (D * Tl::kBK) + r % Tl::kBK;
        const float sc = Elem::encode(k + i * ldk, D, dst, Tl::kBK);
        if constexpr (kQCache) cache_.ks[g * kTPad + r] = sc;
      }
    }
  }
  /// Writes n value rows (stride ldv) of head g at cache rows row0 .. (padding columns zero).
  void store_values(std::size_t g, const float* v, std::size_t ldv, std::size_t n,
                    std::size_t row0) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
      CE* dst = v_head(g) + (row0 + i) * kDPad;
      const float sc = Elem::encode(v + i * ldv, D, dst, 1);
      if constexpr (kQCache) cache_.vs[g * kTPad + row0 + i] = sc;
      for (std::size_t d = D; d < kDPad; ++d) dst[d] = CE{0};
    }
  }

  // T <= kPrefillChunk tokens at positions length_ .. length_ + T - 1, through the shared
  // prefill pipeline (driver/layer_driver.hpp) into the cache.
  void run_prefill(const float* x, std::size_t T, float* y) noexcept {
    rope_.cover(length_, T);
    CacheStore store{*this};
    const internal::PrefillBuffers<TileScratch, PrefillQd8> buf{
        pw_.q[0], kQStride, pw_.ctx, pw_.pack[0], kPackFloats, pw_.tile, pw_};
    internal::layer_prefill<Cfg, Arch, kPrefillChunk, false>(
        ex_, w_, rope_, store, {x, T, length_, y, scale(), nullptr}, buf);
  }

  // One token through the shared decode pipeline (driver/layer_driver.hpp): the projections
  // split by output columns, the attention by key/value groups (or their key chunks), W_O by
  // output columns.
  void run_decode(const float* x, float* y) noexcept {
    rope_.cover(length_, 1);
    CacheStore store{*this};
    internal::layer_decode<Cfg, Arch, kSplitK>(ex_, w_, rope_, store,
                                               {x, 1, length_, y, scale(), nullptr}, dw_);
  }

  // Every member's default is zero bytes (see the class comment): no default may need code.
  Weights<Cfg> w_{WeightLayout::kInOut};  // all null: prefill/decode say kNullPointer until set
  std::size_t length_ = 0;
  std::size_t kept_ = 0;  // ring: oldest position still in its slot (see oldest())
  internal::ScaleSetting scale_{};
  Cache cache_{};
  internal::RopeState<Cfg> rope_{};
  PrefillWork pw_{};
  DecodeWork dw_{};
  internal::ExecutorSetting<Cfg::kMaxWorkers> ex_{};
};

}  // namespace microattn
