// Kernel family: the softmax's vector exp (include/microattn/kernels/f32_exp.hpp), in
// elements per second over a tile-sized row of inputs in the softmax range [-87.3, 0].
#include <string>

#include "bench_util.hpp"
#include "microattn/kernels/f32_exp.hpp"

namespace microattn_bench {
namespace {

template <class Arch>
void bm_exp(benchmark::State& state) {
  using V = microattn::internal::Vec<Arch>;
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  AlignedFloats x = uniform_floats(n, -87.3f, 0.0f, 3);
  AlignedFloats y(n);
  for (auto _ : state) {
    for (std::size_t i = 0; i < n; i += V::kWidth)
      V::store(y.data() + i, microattn::kernels::f32_exp<Arch>(V::load(x.data() + i)));
    benchmark::ClobberMemory();
  }
  state.counters["gelem_per_s"] = benchmark::Counter(
      static_cast<double>(n) * static_cast<double>(state.iterations()) * 1e-9, benchmark::Counter::kIsRate);
  state.SetLabel(arch_label<Arch>());
}

}  // namespace

void register_exp_benchmarks() {
  benchmark::RegisterBenchmark(("f32_exp__" + arch_label<microattn::DefaultArch>()).c_str(),
                               bm_exp<microattn::DefaultArch>)
      ->Arg(4096);
#if MICROATTN_HAS_XSIMD
  benchmark::RegisterBenchmark("f32_exp__scalar", bm_exp<microattn::ScalarArch>)->Arg(4096);
#endif
}

}  // namespace microattn_bench
