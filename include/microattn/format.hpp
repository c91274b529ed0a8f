// SPDX-License-Identifier: Apache-2.0
// microattn vocabulary: how the elements of a weight matrix are stored. One descriptor
// (StorageFormat) and one entry type per format (format::F32, Qc8, F16, BF16, Qg8<G>); every Config
// family reads its weights' format through weight_format_t, and the weight views, the kernels'
// slices and the model file ask FormatTraits, never a bool. A new weight format is a WeightType
// value, its entry here and its kernels (docs/architecture.md, "A new weight format").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "microattn/arch.hpp"
#include "microattn/half.hpp"
#include "microattn/layout.hpp"

namespace microattn {

namespace internal {
/// v, as a value the optimiser knows nothing about (an empty volatile asm, no instruction):
/// under -ffast-math (-freciprocal-math) a division by a constant or loop-invariant float may
/// become a multiplication by its rounded reciprocal, which rounds differently; the quantiser
/// divides by opaque values so that it gives the same int8 values and scales (and the same as
/// tools/export_pytorch.py) in every build.
inline float opaque_divisor(float v) noexcept {
#if defined(MICROATTN_OPAQUE_F32)
  __asm__ volatile("" : MICROATTN_OPAQUE_F32(v));
  return v;
#else
  volatile float t = v;
  return t;
#endif
}
}  // namespace internal

/// int8 value of w / scale, rounded to nearest (ties away from zero) and clamped to [-127, 127],
/// computed in float exactly as tools/export_pytorch.py --quant int8 does (the two agree bit
/// for bit). 0 when scale is 0.
inline std::int8_t quantize_value(float w, float scale) noexcept {
  if (!(scale > 0.0f)) return 0;
  const float r = w / internal::opaque_divisor(scale);
  float a = r < 0.0f ? -r : r;
  const float f = static_cast<float>(static_cast<std::int32_t>(a < 127.0f ? a : 127.0f));
  a = (a - f >= 0.5f && f < 127.0f) ? f + 1.0f : f;
  const auto q = static_cast<std::int32_t>(a);
  return static_cast<std::int8_t>(r < 0.0f ? -q : q);
}

/// Element type of the weight matrices (biases are always fp32): the Config option that picks
/// a storage format.
///   WeightType::kF32   fp32 (the default; format::F32)
///   WeightType::kInt8  int8, symmetric, one fp32 scale per output column of each matrix
///                      (w(i, o) = scale[o] * q(i, o), q in [-127, 127]; "qc8w" in kernel
///                      names; format::Qc8): a quarter of the flash, read in place like fp32.
///   WeightType::kF16   IEEE fp16 (format::F16): half the flash, widened exactly as it is read
///                      (fp32 arithmetic), by F16C / VCVT where the target has them.
///   WeightType::kBF16  bfloat16 (format::BF16): as kF16, fp32's exponent range, 8 bits of
///                      mantissa; the widening is a shift on every target.
///   WeightType::kInt8G32, kInt8G64, kInt8G128
///                      int8, symmetric, one fp32 scale per output column and group of 32 / 64
///                      / 128 consecutive inputs (llama.cpp's Q8_0 at 32; "qg8w" in kernel
///                      names; format::Qg8<G>): w(i, o) = scale(i / G, o) * q(i, o). The
///                      flash of kInt8 plus 4 bytes per G weights, and a closer fit of small
///                      weights beside large ones (docs/quantization.md).
enum class WeightType : unsigned char {
  kF32 = 0,
  kInt8 = 1,
  kF16 = 2,
  kBF16 = 3,
  kInt8G32 = 4,
  kInt8G64 = 5,
  kInt8G128 = 6
};

/// The type of a stored element or of a scale.
enum class ElemType : unsigned char { kF32 = 0, kInt8 = 1, kF16 = 2, kBF16 = 3 };

/// Which elements of a matrix share one scale.
///   kNone       no scales: an element is its value
///   kPerColumn  one scale per output column
///   kPerGroup   one per output column and group of `group` consecutive inputs
enum class ScaleGrouping : unsigned char { kNone = 0, kPerColumn = 1, kPerGroup = 2 };

/// A storage format: element type and bits, the scales' grouping and type. Its code() is what
/// the model file stores per tensor and what the C API's matrix struct carries.
struct StorageFormat {
  ElemType elem;
  unsigned char bits;  ///< bits per element (8 * bytes, or fewer for sub-byte elements)
  ScaleGrouping grouping;
  std::uint16_t group;  ///< inputs per scale with kPerGroup, else 0
  ElemType scale;       ///< the scales' type (kF32), ignored with kNone

  /// One 32-bit code: elem | bits << 8 | grouping << 16 | scale << 20 | group's log2 << 24
  /// (group is a power of two). 0 is fp32.
  [[nodiscard]] constexpr std::uint32_t code() const noexcept {
    std::uint32_t lg = 0;
    while (lg < 16 && (std::uint32_t{1} << lg) < group) ++lg;
    return static_cast<std::uint32_t>(elem) |
           (static_cast<std::uint32_t>(bits == 32 ? 0 : bits) << 8) |
           (static_cast<std::uint32_t>(grouping) << 16) |
           (grouping == ScaleGrouping::kNone ? 0u : static_cast<std::uint32_t>(scale) << 20) |
           (grouping == ScaleGrouping::kPerGroup ? lg << 24 : 0u);
  }
};
constexpr bool operator==(const StorageFormat& a, const StorageFormat& b) noexcept {
  return a.code() == b.code();
}
constexpr bool operator!=(const StorageFormat& a, const StorageFormat& b) noexcept {
  return !(a == b);
}

/// The format entries: a type per format, naming its descriptor and the C++ type its arrays
/// are declared with (the unit pointer arithmetic steps in: a byte for sub-byte formats).
namespace format {
struct F32 {
  static constexpr StorageFormat kDesc{ElemType::kF32, 32, ScaleGrouping::kNone, 0, ElemType::kF32};
  using Elem = float;
};
struct Qc8 {
  static constexpr StorageFormat kDesc{ElemType::kInt8, 8, ScaleGrouping::kPerColumn, 0,
                                       ElemType::kF32};
  using Elem = std::int8_t;
};
/// fp16 and bf16 storage (half.hpp): unscaled, the fp32 kernels read them through
/// Vec::load_elem.
struct F16 {
  static constexpr StorageFormat kDesc{ElemType::kF16, 16, ScaleGrouping::kNone, 0, ElemType::kF32};
  using Elem = f16;
};
struct BF16 {
  static constexpr StorageFormat kDesc{ElemType::kBF16, 16, ScaleGrouping::kNone, 0,
                                       ElemType::kF32};
  using Elem = bf16;
};
/// int8 with a scale per output column and group of G inputs (G = 32, 64, 128).
template <std::size_t G>
struct Qg8 {
  static constexpr StorageFormat kDesc{ElemType::kInt8, 8, ScaleGrouping::kPerGroup,
                                       static_cast<std::uint16_t>(G), ElemType::kF32};
  using Elem = std::int8_t;
};
}  // namespace format

/// Where the scales of a group-wise matrix are, for the kernels: the scale of element (k, n)
/// (input k, output n) is p[n * col_stride + (k / kGroup) * group_stride]. A matrix's scales are
/// stored like its rows: [out][groups] for kOutIn (each output row's groups beside it, as
/// GGUF's Q8_0 blocks), [groups][out] for kInOut and kPanel16 (a group's scales of adjacent
/// outputs contiguous, one vector load for the outputs a kernel sums at once).
template <std::size_t kGroup_>
struct GroupScales {
  static constexpr std::size_t kGroup = kGroup_;
  const float* p = nullptr;
  std::size_t col_stride = 0, group_stride = 0;
  [[nodiscard]] float at(std::size_t k, std::size_t n) const noexcept {
    return p[n * col_stride + (k / kGroup) * group_stride];
  }
  /// The scales of outputs n0, n0 + 1, ...
  [[nodiscard]] GroupScales cols(std::size_t n0) const noexcept {
    return {p + n0 * col_stride, col_stride, group_stride};
  }
};

/// What a format means to the code that stores, checks, slices and widens its matrices.
template <class Fmt>
struct FormatTraits {
  using Elem = typename Fmt::Elem;
  static constexpr StorageFormat kDesc = Fmt::kDesc;
  static constexpr bool kScaled = kDesc.grouping != ScaleGrouping::kNone;
  static_assert(kDesc.bits == 8 * sizeof(Elem) || (sizeof(Elem) == 1 && 8 % kDesc.bits == 0),
                "microattn: a format's element is its C++ type, or a sub-byte slice of a byte");
  static_assert(kDesc.grouping != ScaleGrouping::kPerGroup ||
                    (kDesc.group > 0 && (kDesc.group & (kDesc.group - 1)) == 0),
                "microattn: a group of inputs per scale is a power of two");

  /// Bytes of n elements (sub-byte elements packed, the last byte rounded up).
  static constexpr std::size_t bytes(std::size_t n) noexcept {
    if constexpr (kDesc.bits % 8 == 0)
      return n * (kDesc.bits / 8);
    else
      return (n + 8 / kDesc.bits - 1) / (8 / kDesc.bits);
  }
  /// Bytes of a matrix with in_dim inputs and out_dim outputs stored in `layout`.
  static constexpr std::size_t matrix_bytes(WeightLayout layout, std::size_t in_dim,
                                            std::size_t out_dim) noexcept {
    return bytes(weight_floats(layout, in_dim, out_dim));
  }
  /// Elements of type Elem from the start of a row to element `idx` of it: the offset a
  /// pointer moves by (a slice of a sub-byte matrix starts on a whole byte: idx * bits % 8 == 0).
  static constexpr std::size_t elem_offset(std::size_t idx) noexcept {
    if constexpr (kDesc.bits == 8 * sizeof(Elem))
      return idx;
    else
      return idx / (8 / kDesc.bits);
  }
  /// Scales of a matrix (in_dim inputs, out_dim outputs): 0, out_dim, or out_dim per group.
  static constexpr std::size_t scale_count(std::size_t in_dim, std::size_t out_dim) noexcept {
    if (kDesc.grouping == ScaleGrouping::kNone) return 0;
    if (kDesc.grouping == ScaleGrouping::kPerColumn) return out_dim;
    return out_dim * ((in_dim + kDesc.group - 1) / kDesc.group);
  }
  /// Groups of inputs per output column (1 per column, 0 unscaled).
  static constexpr std::size_t groups(std::size_t in_dim) noexcept {
    if (kDesc.grouping == ScaleGrouping::kPerGroup) return (in_dim + kDesc.group - 1) / kDesc.group;
    return kDesc.grouping == ScaleGrouping::kPerColumn ? 1 : 0;
  }
  /// Index of the scale of element (i, o) in the scale array of a matrix (in_dim inputs, out_dim
  /// outputs) stored in `layout`: o per column; per group [out][groups] for kOutIn,
  /// [groups][out] otherwise (GroupScales). A slice of columns is a pointer offset either way.
  static constexpr std::size_t scale_index(WeightLayout layout, std::size_t i, std::size_t o,
                                           std::size_t in_dim, std::size_t out_dim) noexcept {
    if (kDesc.grouping == ScaleGrouping::kPerGroup)
      return layout == WeightLayout::kOutIn ? o * groups(in_dim) + i / kDesc.group
                                            : (i / kDesc.group) * out_dim + o;
    return kDesc.grouping == ScaleGrouping::kPerColumn ? o : 0;
  }
  /// What the kernels take for a slice's scales: the per-column array, or GroupScales.
  using ScaleRef = std::conditional_t<kDesc.grouping == ScaleGrouping::kPerGroup,
                                      GroupScales<kDesc.group>, const float*>;
  /// The scales of columns col0.. of a matrix (in_dim inputs, out_dim outputs, in `layout`)
  /// whose scale array is s (null when unscaled or s is null).
  static ScaleRef slice_scales(const float* s, WeightLayout layout, std::size_t in_dim,
                               std::size_t out_dim, std::size_t col0) noexcept {
    if constexpr (kDesc.grouping == ScaleGrouping::kPerGroup) {
      const bool rows = layout == WeightLayout::kOutIn;
      const GroupScales<kDesc.group> g{s, rows ? groups(in_dim) : 1, rows ? 1 : out_dim};
      return s ? g.cols(col0) : GroupScales<kDesc.group>{};
    } else {
      (void)layout, (void)in_dim, (void)out_dim;
      return kScaled && s ? s + col0 : nullptr;
    }
  }
  /// Element idx of the array at p (a sub-byte format's entry adds its unpacking here).
  static Elem load(const Elem* p, std::size_t idx) noexcept {
    static_assert(kDesc.bits == 8 * sizeof(Elem), "microattn: a sub-byte format needs its load");
    return p[idx];
  }
  /// The float a stored element stands for (scale: its scale; ignored when unscaled).
  static float widen(Elem e, float scale) noexcept {
    if constexpr (kScaled)
      return scale * static_cast<float>(e);
    else if constexpr (std::is_arithmetic<Elem>::value)
      return (void)scale, static_cast<float>(e);
    else
      return (void)scale, to_float(e);  // f16, bf16
  }
};

/// The format entry a WeightType names (a value without an entry does not compile).
template <WeightType W>
constexpr bool kHasNoFormat = false;  // (dependent: fails only where instantiated)
template <WeightType W>
struct WeightFormatOf {
  static_assert(kHasNoFormat<W>,
                "microattn: WeightType must be kF32, kInt8, kF16, kBF16, kInt8G32, kInt8G64 or "
                "kInt8G128");
  using type = format::F32;
};
template <>
struct WeightFormatOf<WeightType::kF32> {
  using type = format::F32;
};
template <>
struct WeightFormatOf<WeightType::kInt8> {
  using type = format::Qc8;
};
template <>
struct WeightFormatOf<WeightType::kF16> {
  using type = format::F16;
};
template <>
struct WeightFormatOf<WeightType::kBF16> {
  using type = format::BF16;
};
template <>
struct WeightFormatOf<WeightType::kInt8G32> {
  using type = format::Qg8<32>;
};
template <>
struct WeightFormatOf<WeightType::kInt8G64> {
  using type = format::Qg8<64>;
};
template <>
struct WeightFormatOf<WeightType::kInt8G128> {
  using type = format::Qg8<128>;
};

namespace internal {
/// True when [a, a + a_bytes) and [b, b + b_bytes) share a byte (both ranges must be valid
/// address ranges: internal::span_bytes() says so).
inline bool overlaps(const void* a, std::size_t a_bytes, const void* b,
                     std::size_t b_bytes) noexcept {
  const auto pa = reinterpret_cast<std::uintptr_t>(a);
  const auto pb = reinterpret_cast<std::uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}
}  // namespace internal

/// One weight matrix as the views hold it: its elements and, for a scaled format, its scales.
template <class Fmt>
struct Matrix {
  using Elem = typename Fmt::Elem;
  const Elem* data = nullptr;
  const float* scales = nullptr;  ///< FormatTraits<Fmt>::scale_count floats; null when unscaled

  /// True when every pointer the format needs is set.
  [[nodiscard]] constexpr bool complete() const noexcept {
    return data && (!FormatTraits<Fmt>::kScaled || scales);
  }
  /// True when [p, p + n) overlaps the elements or the scales of a matrix (in_dim inputs,
  /// out_dim outputs) stored in `layout`.
  bool overlaps(const void* p, std::size_t n, WeightLayout layout, std::size_t in_dim,
                std::size_t out_dim) const noexcept {
    using T = FormatTraits<Fmt>;
    return internal::overlaps(p, n, data, T::matrix_bytes(layout, in_dim, out_dim)) ||
           (T::kScaled &&
            internal::overlaps(p, n, scales, T::scale_count(in_dim, out_dim) * sizeof(float)));
  }
};

}  // namespace microattn
