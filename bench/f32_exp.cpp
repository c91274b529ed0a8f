// SPDX-License-Identifier: Apache-2.0
// Kernel family: the softmax's vector exponentials (include/microattn/kernels/f32_exp.hpp), in
// elements per second over a tile-sized row of inputs in the softmax range: [-87.3, 0] for
// f32_exp, the same range in base 2, [-126, 0], for f32_exp2 (what the attention kernels run).
#include "microattn/kernels/f32_exp.hpp"

#include <string>

#include "bench_util.hpp"

namespace microattn_bench {
namespace {

template <class Arch, bool Base2>
void bm_exp(benchmark::State& state) {
  using V = microattn::internal::Vec<Arch>;
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  AlignedFloats x = uniform_floats(n, Base2 ? -126.0f : -87.3f, 0.0f, 3);
  AlignedFloats y(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; i += V::kWidth) {
      const auto in = V::load(x.data() + i);
      V::store(y.data() + i, Base2 ? microattn::kernels::f32_exp2<Arch>(in)
                                   : microattn::kernels::f32_exp<Arch>(in));
    }
    benchmark::ClobberMemory();
  }
  state.counters["gelem_per_s"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate);
  state.SetLabel(arch_label<Arch>());
}

template <class Arch>
void register_arch(const std::string& arch) {
  benchmark::RegisterBenchmark(("f32_exp__" + arch).c_str(), bm_exp<Arch, false>)->Arg(4096);
  benchmark::RegisterBenchmark(("f32_exp2__" + arch).c_str(), bm_exp<Arch, true>)->Arg(4096);
}

}  // namespace

void register_exp_benchmarks() {
  register_arch<microattn::DefaultArch>(arch_label<microattn::DefaultArch>());
#if MICROATTN_HAS_XSIMD
  register_arch<microattn::ScalarArch>("scalar");
#endif
}

}  // namespace microattn_bench
