// SPDX-License-Identifier: Apache-2.0
// microattn: fixed-size multi-head attention (the layer) and scaled dot-product
// attention (the core, for callers with their own projections).
#pragma once

#include <cmath>  // std::sqrt
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/arch.hpp"
#include "microattn/config.hpp"
#include "microattn/driver/layer_driver.hpp"
#include "microattn/executor.hpp"
#include "microattn/internal/checks.hpp"
#include "microattn/internal/vec.hpp"
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_rope.hpp"
#include "microattn/status.hpp"
#include "microattn/weights.hpp"

namespace microattn {

/// 1 / sqrt(d_head), the scale the layer uses unless told otherwise.
template <class Cfg>
inline float default_scale() noexcept {
  return 1.0f / std::sqrt(static_cast<float>(Cfg::kDHead));
}

namespace internal {

/// The softmax scale of a layer or core: its zero bytes mean the default 1/sqrt(d_head), so an
/// object never constructed (a static in .bss under a startup that runs no constructors) has
/// the right scale. One convention for all three classes: set once, used by every call.
struct ScaleSetting {
  float value = 0.0f;
  bool custom = false;
  template <class Cfg>
  float get() const noexcept {
    return custom ? value : default_scale<Cfg>();
  }
  Status set(float s) noexcept {
    if (!scale_ok(s)) return Status::kBadScale;
    value = s;
    custom = true;
    return Status::kOk;
  }
};

/// True when keys rotated under a and under b (heads d_head wide; rotary_dims 0 = d_head) are
/// the same rotation: what import_cache requires of a cache computed elsewhere.
inline bool same_rope(const RopeConfig& a, const RopeConfig& b, std::size_t d_head) noexcept {
  if (a.enabled != b.enabled) return false;
  if (!a.enabled) return true;
  const std::size_t da = a.rotary_dims ? a.rotary_dims : d_head,
                    db = b.rotary_dims ? b.rotary_dims : d_head;
  return a.base == b.base && a.pairing == b.pairing && da == db &&
         a.start_position == b.start_position;
}

/// Rotary embeddings of a layer: the settings (zero bytes: off) and, when Cfg has Rope::kYes,
/// the cos/sin tables of T_max positions from the start position on.
template <class Cfg, bool kTables = Cfg::kHasRope>
struct RopeState {
  using Table = kernels::RopeTable<Cfg::kTMax, Cfg::kDHead>;
  Table tab{};
  bool on = false;
  RopePairing pairing = RopePairing::kAdjacent;
  float base = 0.0f;
  std::size_t dims = 0;  // as given: 0 means d_head
  std::size_t half = 0;  // rotated pairs
  std::size_t start = 0;
  std::size_t origin = 0;  // table row 0 is position start + origin (moved by cover())

  /// kOk, or kBadArgument (nothing changed) for an enabled config with a base that is not
  /// finite or <= 0, rotary_dims (0 = d_head) odd or > d_head, a pairing that is not a
  /// RopePairing value, or a start position whose last table row would overflow size_t.
  Status set(const RopeConfig& r) noexcept {
    if (!r.enabled) {
      on = false;
      return Status::kOk;
    }
    const std::size_t d = r.rotary_dims == 0 ? Cfg::kDHead : r.rotary_dims;
    if (!kernels::rope_args_valid(r.base, d, Cfg::kDHead) ||
        (r.pairing != RopePairing::kAdjacent && r.pairing != RopePairing::kHalfSplit) ||
        r.start_position > SIZE_MAX - Cfg::kTMax)
      return Status::kBadArgument;
    kernels::rope_fill(tab, r.base, d / 2, r.start_position);
    on = true, pairing = r.pairing, base = r.base, dims = r.rotary_dims, half = d / 2;
    start = r.start_position, origin = 0;
    return Status::kOk;
  }
  RopeConfig get() const noexcept {
    RopeConfig r;
    if (on) {
      r.enabled = true, r.base = base, r.pairing = pairing, r.rotary_dims = dims;
      r.start_position = start;
    }
    return r;
  }
  /// Makes the tables cover cache positions pos .. pos + n - 1 (n <= T_max): when they do not,
  /// refills them from pos on (a ring-buffer cache's stream outgrows any fixed table; the
  /// refill, T_max * rotary_dims / 2 cos/sin pairs, happens once per T_max tokens at most).
  void cover(std::size_t pos, std::size_t n) noexcept {
    if (!on || (pos >= origin && pos + n <= origin + Cfg::kTMax)) return;
    kernels::rope_fill(tab, base, half, start + pos);
    origin = pos;
  }
  /// Rotates n_tokens rows of `heads` heads (see kernels::f32_rope_rows) at cache positions
  /// pos .. (absolute positions start + pos ..; the tables must cover them); nothing when RoPE
  /// is off.
  void apply(float* x, std::size_t ldx, std::size_t head_stride, std::size_t n_tokens,
             std::size_t heads, std::size_t pos) const noexcept {
    if (on)
      kernels::f32_rope_rows(x, ldx, head_stride, n_tokens, heads, pos - origin, tab, half,
                             pairing);
  }
};
/// Without Rope::kYes: no tables, and only a disabled RoPE is accepted.
template <class Cfg>
struct RopeState<Cfg, false> {
  Status set(const RopeConfig& r) noexcept {
    return r.enabled ? Status::kBadArgument : Status::kOk;
  }
  RopeConfig get() const noexcept { return RopeConfig{}; }
  void cover(std::size_t, std::size_t) noexcept {}
  void apply(float*, std::size_t, std::size_t, std::size_t, std::size_t,
             std::size_t) const noexcept {}
};

/// Checks an attention-map buffer of H * T * T floats: kNullPointer, kBadArgument (too small),
/// kBadStride (its span does not fit the address space), or kOk with *bytes set.
template <class Cfg>
Status check_maps(const float* maps, std::size_t maps_floats, std::size_t T,
                  std::size_t* bytes) noexcept {
  if (!maps) return Status::kNullPointer;
  if (maps_floats / T / T < Cfg::kHeads) return Status::kBadArgument;
  if (!span_bytes(maps, Cfg::kHeads * T, T, T, bytes)) return Status::kBadStride;
  return Status::kOk;
}

}  // namespace internal

/// Scaled dot-product attention with Cfg's mask (causal by default, like PyTorch's
/// scaled_dot_product_attention(q, k, v, is_causal=True); Mask::kNone: is_causal=False;
/// SlidingWindow{W}: a causal band), for the H / H_kv / d_head of Cfg (Cfg's d_model, bias and
/// output projection are not used).
///
/// The object is the working memory (sizeof == ram_bytes(), no heap; place it in static storage or
/// a chosen RAM section). Its only setting is the softmax scale (set_scale); it keeps no other
/// state between calls.
template <class Cfg, class Arch = DefaultArch>
class ScaledDotProductAttention {
 public:
  /// Key/value heads staged at once: one, or with MaxWorkers{n} > 1 one per worker up to H_kv
  /// (workers then attend whole heads, each in its own buffers; see set_executor).
  static constexpr std::size_t kStagedHeads = internal::staged_heads<Cfg>();

  /// RAM this object needs in bytes: K^T and V of kStagedHeads key/value heads (T_max rows
  /// each) plus one tile scratch per worker; nothing grows with T^2.
  static constexpr std::size_t ram_bytes() noexcept { return sizeof(Buffers); }

  /// Softmax scale for every later call, default 1/sqrt(d_head) (the teaching notes' worked
  /// example uses 1).
  /// @return kOk, or kBadScale (nothing changed) when scale is not finite or |scale| > FLT_MAX /
  ///         log2(e) (the kernels fold scale * log2 e into Q).
  [[nodiscard]] Status set_scale(float scale) noexcept { return scale_.set(scale); }
  /// The softmax scale in use.
  float scale() const noexcept { return scale_.get<Cfg>(); }

  /// out = softmax(scale * Q_h K_g^T + mask) V_g for every query head h, g = h / (H/H_kv).
  /// @param q    [T][ldq] floats, head h at columns h*d_head .. h*d_head + d_head - 1 (ldq >=
  /// H*d_head)
  /// @param k,v  [T][ldk] and [T][ldv] floats, head g at columns g*d_head .. (ld >= H_kv*d_head)
  /// @param T    tokens, 1 .. T_max; token i sees tokens 0 .. i (causal), i - W + 1 .. i
  ///             (SlidingWindow{W}) or all (Mask::kNone)
  /// @param out  [T][ldo] floats, written only on kOk; must not overlap q, k or v
  /// @return kOk, kNullPointer, kBadTokenCount, kBadStride (a stride below the row width, or
  ///         one whose span does not fit the address space) or kOverlap
  [[nodiscard]] Status forward(const float* q, std::size_t ldq, const float* k, std::size_t ldk,
                               const float* v, std::size_t ldv, std::size_t T, float* out,
                               std::size_t ldo) noexcept {
    return run<false>(q, ldq, k, ldk, v, ldv, T, out, ldo, nullptr, 0);
  }

  /// forward() that also writes the attention maps: maps[(h * T + i) * T + j] = the softmax
  /// probability of query i over key j in head h, the very probabilities of the fused kernel
  /// (same scores, same exp, same 1/sum), 0 where the mask hides key j. For inspection: the
  /// normal forward() does none of this work. maps: the caller's H * T * T floats
  /// (maps_floats says how many it holds); it must not overlap q, k, v or out.
  /// @return as forward(), and kNullPointer (maps null), kBadArgument (maps_floats < H * T * T),
  ///         kOverlap (maps overlaps an input or out). Nothing is written on error.
  [[nodiscard]] Status forward_with_maps(const float* q, std::size_t ldq, const float* k,
                                         std::size_t ldk, const float* v, std::size_t ldv,
                                         std::size_t T, float* out, std::size_t ldo, float* maps,
                                         std::size_t maps_floats) noexcept {
    if (!maps) return Status::kNullPointer;
    return run<true>(q, ldq, k, ldk, v, ldv, T, out, ldo, maps, maps_floats);
  }
  /// Dense layouts, with maps.
  [[nodiscard]] Status forward_with_maps(const float* q, const float* k, const float* v,
                                         std::size_t T, float* out, float* maps,
                                         std::size_t maps_floats) noexcept {
    return forward_with_maps(q, Cfg::kQDim, k, Cfg::kKvDim, v, Cfg::kKvDim, T, out, Cfg::kQDim,
                             maps, maps_floats);
  }

  /// Dense layouts: ldq = ldo = H*d_head, ldk = ldv = H_kv*d_head.
  [[nodiscard]] Status forward(const float* q, const float* k, const float* v, std::size_t T,
                               float* out) noexcept {
    return forward(q, Cfg::kQDim, k, Cfg::kKvDim, v, Cfg::kKvDim, T, out, Cfg::kQDim);
  }

 private:
  template <bool kMaps>
  Status run(const float* q, std::size_t ldq, const float* k, std::size_t ldk, const float* v,
             std::size_t ldv, std::size_t T, float* out, std::size_t ldo, float* maps,
             std::size_t maps_floats) noexcept {
    if (!q || !k || !v || !out) return Status::kNullPointer;
    if (T == 0 || T > Cfg::kTMax) return Status::kBadTokenCount;
    if (ldq < Cfg::kQDim || ldo < Cfg::kQDim || ldk < Cfg::kKvDim || ldv < Cfg::kKvDim)
      return Status::kBadStride;
    std::size_t qb = 0, kb = 0, vb = 0, ob = 0;
    if (!internal::span_bytes(q, T, ldq, Cfg::kQDim, &qb) ||
        !internal::span_bytes(k, T, ldk, Cfg::kKvDim, &kb) ||
        !internal::span_bytes(v, T, ldv, Cfg::kKvDim, &vb) ||
        !internal::span_bytes(out, T, ldo, Cfg::kQDim, &ob))
      return Status::kBadStride;
    if (internal::overlaps(out, ob, q, qb) || internal::overlaps(out, ob, k, kb) ||
        internal::overlaps(out, ob, v, vb))
      return Status::kOverlap;
    if constexpr (kMaps) {
      std::size_t mb = 0;
      if (const Status s = internal::check_maps<Cfg>(maps, maps_floats, T, &mb); s != Status::kOk)
        return s;
      if (internal::overlaps(maps, mb, q, qb) || internal::overlaps(maps, mb, k, kb) ||
          internal::overlaps(maps, mb, v, vb) || internal::overlaps(maps, mb, out, ob))
        return Status::kOverlap;
    } else {
      (void)maps, (void)maps_floats;
    }
    internal::StagedKv<Cfg, Arch, kStagedHeads> store{buf_};
    internal::GivenQkv<Cfg, decltype(store)> src{store, q, ldq, k, ldk, v, ldv};
    internal::attend_call<Cfg, Arch, kMaps>(ex_, T, 0, src, store, buf_.tile, out, ldo, scale(),
                                            maps);
    return Status::kOk;
  }

 public:
  /// Splits every later call over the executor's workers (at most Cfg::kMaxWorkers; see
  /// executor.hpp); the results are bit-identical for any worker count.
  /// @return kOk, or kBadArgument (nothing changed) for workers > Cfg::kMaxWorkers or workers > 1
  ///         without a run function.
  [[nodiscard]] Status set_executor(const Executor& e) noexcept { return ex_.set(e); }

 private:
  using Buffers = internal::CoreBuffers<Cfg, Arch, kStagedHeads>;
  Buffers buf_;
  internal::ExecutorSetting<Cfg::kMaxWorkers> ex_{};
  internal::ScaleSetting scale_{};
};

/// Multi-head self-attention layer with every dimension and the mask fixed by Cfg:
///   Q = x W_q (+ b_q), K = x W_k (+ b_k), V = x W_v (+ b_v);
///   ctx_h = softmax(scale * Q_h K_g^T + mask) V_g,  g = h / (H / H_kv);
/// (mask: causal, a causal sliding window, or none; see Config).
///   y = concat_h(ctx_h) W_o (+ b_o)        (y = concat_h(ctx_h) when Cfg has no W_O).
///
/// The object holds the weight views and all working memory (no heap, no globals); sizeof is
/// the RAM budget, ram_bytes() says it, and it can be a static object in a chosen section.
/// Key/value heads are processed one at a time, so only one head's K and V are staged; with
/// MaxWorkers{n} > 1, up to min(n, H_kv) (kStagedHeads: workers then take whole heads).
template <class Cfg, class Arch = DefaultArch>
class MultiHeadAttention : private internal::Qd8BufferFor<Cfg, Arch, Cfg::kTMax> {
  // (The base: Compute::kInt8's quantised rows of x, then of the heads; empty, and of no size,
  // otherwise.)
  using Qd8 = internal::Qd8BufferFor<Cfg, Arch, Cfg::kTMax>;

  using Tl = internal::Tiles<Arch>;

 public:
  /// Key/value heads staged at once (each with its Q buffer): see ScaledDotProductAttention.
  static constexpr std::size_t kStagedHeads = internal::staged_heads<Cfg>();

 private:
  using Core = internal::CoreBuffers<Cfg, Arch, kStagedHeads>;

 public:
  /// Floats of each working buffer, for RAM budgets:
  static constexpr std::size_t kQFloats =
      Cfg::kTMax * Cfg::kGroup * Cfg::kDHead;  ///< Q of one group (kStagedHeads of them)
  static constexpr std::size_t kCtxFloats =
      Cfg::kHasOutProj ? Cfg::kTMax * Cfg::kQDim : 1;  ///< concat
  static constexpr std::size_t kPackFloats =
      kernels::gemm_pack_floats<Arch>();  ///< GEMM B panel (one per worker)
  static constexpr std::size_t kCoreBytes =
      sizeof(Core);  ///< K^T, V of kStagedHeads groups + tile scratch

  MultiHeadAttention() = default;
  explicit MultiHeadAttention(const Weights<Cfg>& w) noexcept : w_(w) {}

  /// Points the layer at new weights (views: the arrays must outlive the layer's use).
  /// @return kOk; kNullPointer (weights unchanged) when a pointer the configuration needs is
  ///         null; kBadArgument (unchanged) for a layout Cfg cannot use (Weights::check).
  [[nodiscard]] Status set_weights(const Weights<Cfg>& w) noexcept {
    const Status s = w.check();
    if (s != Status::kOk) return s;
    w_ = w;
    return Status::kOk;
  }

  /// Softmax scale for every later call, default 1/sqrt(d_head) (the teaching notes' worked
  /// example uses 1).
  /// @return kOk, or kBadScale (nothing changed) when scale is not finite or |scale| > FLT_MAX /
  ///         log2(e) (the kernels fold scale * log2 e into Q).
  [[nodiscard]] Status set_scale(float scale) noexcept { return scale_.set(scale); }
  /// The softmax scale in use.
  float scale() const noexcept { return scale_.get<Cfg>(); }

  /// Enables (or disables) rotary embeddings on Q and K: token i of every later forward() is
  /// rotated at position r.start_position + i. Needs Rope::kYes in the Config (its cos/sin
  /// tables, computed here once, never per call).
  /// @return kOk; kBadArgument (nothing changed) for an enabled RoPE without Rope::kYes, or
  ///         invalid settings (see KvAttention::set_rope).
  [[nodiscard]] Status set_rope(const RopeConfig& r) noexcept { return rope_.set(r); }
  /// The current RoPE settings (enabled == false when off).
  RopeConfig rope() const noexcept { return rope_.get(); }

  /// Splits every later call over the executor's workers (at most Cfg::kMaxWorkers, each with
  /// its own GEMM panel and tile scratch in this object; see executor.hpp). The results are
  /// bit-identical for any worker count.
  /// @return kOk, or kBadArgument (nothing changed) for workers > Cfg::kMaxWorkers or workers > 1
  ///         without a run function.
  [[nodiscard]] Status set_executor(const Executor& e) noexcept { return ex_.set(e); }

  /// y = attention(x) for T tokens.
  /// @param x     [T][d_model] floats
  /// @param T     tokens, 1 .. T_max; token i sees tokens 0 .. i (causal), i - W + 1 .. i
  ///              (SlidingWindow{W}) or all (Mask::kNone)
  /// @param y     [T][Cfg::kOutDim] floats, written only on kOk. With W_O, y may alias x (x is
  ///              read in full before y is written); without W_O it must not overlap x.
  ///              y must never overlap a weight or bias array (kOverlap).
  /// @return kOk, kNullPointer (x, y or a needed weight null), kBadArgument (weights given to
  ///         the constructor fail Weights::check), kBadTokenCount, kOverlap
  [[nodiscard]] Status forward(const float* x, std::size_t T, float* y) noexcept {
    if (const Status s = internal::check_layer_args(w_, x, y, T); s != Status::kOk) return s;
    if (const Status s = internal::check_layer_output(w_, x, T, y, true); s != Status::kOk)
      return s;
    run<false>(x, T, y, scale(), nullptr);
    return Status::kOk;
  }

  /// forward() that also writes each head's attention map: maps[(h * T + i) * T + j] = the
  /// softmax probability of token i over token j in head h (after the mask; 0 where it hides
  /// j), the very probabilities of the fused kernel (same scores, same exp, same 1/sum). For
  /// inspection (examples/attention_maps.cpp prints them): the normal forward() does none of
  /// this work. maps: the caller's H * T * T floats (maps_floats says how many it holds),
  /// never the layer's memory.
  /// @return as forward(), and kNullPointer (maps null), kBadArgument (maps_floats < H * T * T),
  ///         kOverlap (maps overlaps x, y or a weight). Nothing is written on error.
  [[nodiscard]] Status forward_with_maps(const float* x, std::size_t T, float* y, float* maps,
                                         std::size_t maps_floats) noexcept {
    if (!maps) return Status::kNullPointer;
    if (const Status s = internal::check_layer_args(w_, x, y, T); s != Status::kOk) return s;
    if (const Status s = internal::check_layer_output(w_, x, T, y, true); s != Status::kOk)
      return s;
    const std::size_t y_bytes = T * Cfg::kOutDim * sizeof(float);
    const std::size_t x_bytes = T * Cfg::kDModel * sizeof(float);
    std::size_t mb = 0;
    if (const Status s = internal::check_maps<Cfg>(maps, maps_floats, T, &mb); s != Status::kOk)
      return s;
    if (internal::overlaps(maps, mb, x, x_bytes) || internal::overlaps(maps, mb, y, y_bytes) ||
        internal::overlaps_weights(w_, maps, mb))
      return Status::kOverlap;
    run<true>(x, T, y, scale(), maps);
    return Status::kOk;
  }

  /// Bytes of the RoPE state: the cos/sin tables (8 * T_max * (d_head / 2)) with Rope::kYes.
  static constexpr std::size_t kRopeBytes = sizeof(internal::RopeState<Cfg>);

  /// RAM of the whole object in bytes (weights are not included: they are views).
  static constexpr std::size_t ram_bytes() noexcept { return sizeof(MultiHeadAttention); }

 private:
  // The shared prefill pipeline (driver/layer_driver.hpp) over the call's own tokens.
  template <bool kMaps>
  void run(const float* x, std::size_t T, float* y, float scale, float* maps) noexcept {
    internal::StagedKv<Cfg, Arch, kStagedHeads> store{core_};
    const internal::PrefillBuffers<typename Core::Scratch, Qd8> buf{
        q_[0], kQStride, ctx_, pack_[0], kPackFloats, core_.tile, *this};
    internal::layer_prefill<Cfg, Arch, Cfg::kTMax, kMaps>(ex_, w_, rope_, store,
                                                          {x, T, 0, y, scale, maps}, buf);
  }

  Weights<Cfg> w_{WeightLayout::kInOut};  // all null: forward() says kNullPointer until set
  internal::ScaleSetting scale_{};
  internal::RopeState<Cfg> rope_{};
  // Q buffers padded to whole alignment units, so every one starts aligned.
  static constexpr std::size_t kQStride = internal::round_up(kQFloats, Tl::kAlign / sizeof(float));
  alignas(Tl::kAlign) float q_[kStagedHeads][kQStride] = {};
  alignas(Tl::kAlign) float ctx_[kCtxFloats] = {};
  alignas(Tl::kAlign) float pack_[Cfg::kMaxWorkers][kPackFloats] = {};
  Core core_{};
  internal::ExecutorSetting<Cfg::kMaxWorkers> ex_{};
  static_assert(kernels::qd8_pack_floats<Arch>() <= kPackFloats, "integer GEMM panel fits");
};

}  // namespace microattn
