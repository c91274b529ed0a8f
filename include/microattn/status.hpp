// SPDX-License-Identifier: Apache-2.0
// microattn: status codes returned by every public entry point.
#pragma once

#include <cstdint>

namespace microattn {

/// Result of a public entry point. On any value other than kOk nothing was written:
/// outputs, caches and workspaces are exactly as they were before the call.
/// [[nodiscard]] on the type: every function returning a Status warns when its result is
/// dropped (cast to void to drop one on purpose).
// (clang-format 14 misreads an attribute before an enum's name.)
// clang-format off
enum class [[nodiscard]] Status : std::uint8_t {
  kOk = 0,
  kNullPointer,    ///< a required pointer (input, output, weight or bias) is null
  kBadTokenCount,  ///< token count is 0 or larger than the configuration's T_max
  kOverlap,        ///< an output overlaps an input or a weight array it must not alias
  kBadScale,       ///< the softmax scale is not finite, or |scale| > FLT_MAX / log2(e)
  kBadStride,      ///< a row stride is below the row width, or its span overflows
  kCacheFull,      ///< appending would exceed the KV cache capacity
  kBadArgument,    ///< any other argument outside its documented range
};
// clang-format on

/// Short, stable, human-readable name of a status ("ok", "null pointer", ...).
/// Never returns null.
const char* to_string(Status s) noexcept;

/// True for Status::kOk.
constexpr bool ok(Status s) noexcept { return s == Status::kOk; }

}  // namespace microattn
