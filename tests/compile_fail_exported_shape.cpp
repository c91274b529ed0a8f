// SPDX-License-Identifier: Apache-2.0
// Must not compile: an exported weight header's shape used with a Config that differs from it.
// tests/CMakeLists.txt compiles it once per MISMATCH value and checks the static_assert message.
#include "microattn/weights.hpp"

struct layer0_shape {  // what tools/export_pytorch.py writes for a 4-head, d_model 16 layer
  static constexpr std::size_t kDModel = 16, kHeads = 4, kKvHeads = 4, kDHead = 4, kOutDim = 16;
  static constexpr bool kBiasQ = true, kBiasK = true, kBiasV = true, kBiasO = true;
  static constexpr bool kHasOutProj = true;
  static constexpr microattn::WeightLayout kLayout = microattn::WeightLayout::kOutIn;
};
static const float layer0_w[16 * 16] = {};

#if MISMATCH == 0
using Cfg = microattn::Config<8, 16, 4, 4, 4, microattn::Bias::kYes>;  // matches: compiles
#elif MISMATCH == 1
using Cfg = microattn::Config<8, 16, 2, 2, 8, microattn::Bias::kYes>;  // heads
#elif MISMATCH == 2
using Cfg = microattn::Config<8, 16, 4, 2, 4, microattn::Bias::kYes>;  // kv heads
#elif MISMATCH == 3
using Cfg = microattn::Config<8, 16, 4, 4, 5, microattn::Bias::kYes>;  // d_head
#elif MISMATCH == 4
using Cfg = microattn::Config<8, 16, 4, 4, 4, microattn::Bias::kNo>;  // biases
#elif MISMATCH == 5
using Cfg = microattn::Config<8, 32, 4, 4, 4, microattn::Bias::kYes>;  // d_model
#elif MISMATCH == 6
using Cfg = microattn::Config<8, 16, 4, 4, 4, microattn::Bias::kQkv>;  // no output bias
#elif MISMATCH == 7
using Cfg = microattn::Config<8, 16, 4, 4, 4, microattn::Bias::kYes, microattn::OutDim{8}>;
#endif

int main() {
  constexpr auto w = microattn::exported_weights<Cfg, layer0_shape>(
      layer0_w, layer0_w, layer0_w, layer0_w, layer0_w, layer0_w, layer0_w, layer0_w);
  return w.layout == microattn::WeightLayout::kOutIn ? 0 : 1;
}
