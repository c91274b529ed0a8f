// SPDX-License-Identifier: Apache-2.0
// WeightType and CacheType values (and combinations) a Config family cannot compute are compile
// errors naming them (tests/project_tests.cmake, weight_type_refused_N): MISMATCH 0 compiles.
#include "microattn/microattn.hpp"

#if MISMATCH == 0  // every family takes the formats it computes
using A = microattn::Config<8, 16, 2, 1, 8, microattn::WeightType::kF16>;
using L = microattn::LatentConfig<8, 32, 2, 16, 4, 8, 8, microattn::WeightType::kInt8>;
using D = microattn::DecoderConfig<32, 16, 1, 2, 1, 8, 24, 8, microattn::WeightType::kBF16>;
using G = microattn::DecoderConfig<32, 16, 1, 2, 1, 8, 24, 8, microattn::WeightType::kInt8G32>;
int main() { return static_cast<int>(A::kGroup + L::kDQk + D::kVocab + G::kVocab) == 0; }
#elif MISMATCH == 1  // LatentAttention has no 16-bit float path
using L = microattn::LatentConfig<8, 32, 2, 16, 4, 8, 8, microattn::WeightType::kF16>;
int main() { return static_cast<int>(L::kDQk); }
#elif MISMATCH == 2  // not a WeightType value
using A = microattn::Config<8, 16, 2, 1, 8, static_cast<microattn::WeightType>(9)>;
int main() { return static_cast<int>(A::kGroup); }
#elif MISMATCH == 3  // nor a group-wise int8 one
using L = microattn::LatentConfig<8, 32, 2, 16, 4, 8, 8, microattn::WeightType::kInt8G32>;
int main() { return static_cast<int>(L::kDQk); }
#elif MISMATCH == 4  // group-wise int8 has no integer compute
using A =
    microattn::Config<8, 16, 2, 1, 8, microattn::WeightType::kInt8G64, microattn::Compute::kInt8>;
int main() { return static_cast<int>(A::kGroup); }
#elif MISMATCH == 5  // nor in a Linear
using F =
    microattn::LinearConfig<16, 8, microattn::WeightType::kInt8G32, microattn::Compute::kInt8>;
int main() { return static_cast<int>(F::kIn); }
#elif MISMATCH == 6  // nor a 16-bit latent cache
using L = microattn::LatentConfig<8, 32, 2, 16, 4, 8, 8, microattn::CacheType::kF16>;
int main() { return static_cast<int>(L::kDQk); }
#endif
