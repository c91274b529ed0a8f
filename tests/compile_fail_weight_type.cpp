// SPDX-License-Identifier: Apache-2.0
// WeightType values a Config family cannot compute are compile errors naming them
// (tests/project_tests.cmake, weight_type_refused_N): MISMATCH 0 compiles.
#include "microattn/microattn.hpp"

#if MISMATCH == 0  // every family takes the formats it computes
using A = microattn::Config<8, 16, 2, 1, 8, microattn::WeightType::kF16>;
using L = microattn::LatentConfig<8, 32, 2, 16, 4, 8, 8, microattn::WeightType::kInt8>;
using D = microattn::DecoderConfig<32, 16, 1, 2, 1, 8, 24, 8, microattn::WeightType::kBF16>;
int main() { return static_cast<int>(A::kGroup + L::kDQk + D::kVocab) == 0; }
#elif MISMATCH == 1  // LatentAttention has no 16-bit float path
using L = microattn::LatentConfig<8, 32, 2, 16, 4, 8, 8, microattn::WeightType::kF16>;
int main() { return static_cast<int>(L::kDQk); }
#elif MISMATCH == 2  // not a WeightType value
using A = microattn::Config<8, 16, 2, 1, 8, static_cast<microattn::WeightType>(7)>;
int main() { return static_cast<int>(A::kGroup); }
#endif
