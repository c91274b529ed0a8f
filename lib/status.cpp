// SPDX-License-Identifier: Apache-2.0
#include "microattn/status.hpp"

#include "microattn/version.h"

extern "C" const char* microattn_version(void) { return MICROATTN_VERSION_STRING; }

namespace microattn {

const char* to_string(Status s) noexcept {
  switch (s) {
    case Status::kOk:
      return "ok";
    case Status::kNullPointer:
      return "null pointer";
    case Status::kBadTokenCount:
      return "bad token count";
    case Status::kOverlap:
      return "overlapping buffers";
    case Status::kBadScale:
      return "scale not finite";
    case Status::kBadStride:
      return "bad stride";
    case Status::kCacheFull:
      return "cache full";
    case Status::kBadArgument:
      return "bad argument";
  }
  return "unknown status";
}

}  // namespace microattn
