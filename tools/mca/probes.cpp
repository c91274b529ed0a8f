// SPDX-License-Identifier: Apache-2.0
// The hot loops of the kernels, each instantiated in its own extern "C" noinline function, for
// tools/mca_report.py: it compiles this file with a target's toolchain flags (-S), finds each
// function's hot loop in the assembly (the innermost loop with the most multiply-add lanes)
// and hands that loop body to llvm-mca. Nothing here runs; the arguments are whatever the
// kernels get in the library (compile-time strides where the library's are compile-time).
//
// MCA_MR / MCA_NRV: another GEMM register tile for mca_gemm_ukernel only (mca_report.py
// --sweep), to compare tiles without editing KernelParams.
#include "microattn/kernels/f32_attn_tile.hpp"
#include "microattn/kernels/f32_exp.hpp"
#include "microattn/kernels/f32_gemm.hpp"
#include "microattn/kernels/f32_gemv.hpp"
#include "microattn/kernels/qd8_gemm.hpp"

namespace {
using Arch = microattn::DefaultArch;
using Tl = microattn::internal::Tiles<Arch>;
using V = microattn::internal::Vec<Arch>;
namespace k = microattn::kernels;
#if defined(MCA_MR) && defined(MCA_NRV)
constexpr std::size_t kMR = MCA_MR, kNRV = MCA_NRV;
#else
constexpr std::size_t kMR = Tl::kMR, kNRV = Tl::kNRVec;
#endif
// d_head of the attention probes: 64 (GPT-2, BERT-base, Qwen2-0.5B heads).
constexpr std::size_t kD = 64;
constexpr std::size_t kDPad = k::AttnScratch<Arch, kD>::kDPad;
}  // namespace

#define MCA_PROBE extern "C" __attribute__((noinline, used))

// GEMM micro-kernel as f32_gemm runs it on a packed B panel (row stride kNR), C += A B.
MCA_PROBE void mca_gemm_ukernel(std::size_t kc, const float* a, std::size_t lda, const float* b,
                                float* c, std::size_t ldc, const float* add_row, bool accumulate) {
  k::f32_gemm_ukernel<Arch, kMR, kNRV>(kc, a, lda, b, kNRV * V::kWidth, c, ldc, add_row,
                                       accumulate);
}

// Attention tile, S = (scale Q) K^T: the micro-kernel over d_head with the key tile's stride,
// as f32_attn_rows calls it (mr = kMR rows is the hot case).
MCA_PROBE void mca_attn_qk(std::size_t mr, const float* q, const float* ktile, float* s) {
  k::f32_gemm_ukernel_rows<Arch>(mr, kD, q, kD, ktile, Tl::kBK, s, Tl::kBK, nullptr, false);
}

// Attention tile, O += P V over n keys of a tile.
MCA_PROBE void mca_attn_pv(std::size_t mr, std::size_t n, const float* p, const float* v,
                           float* o) {
  k::f32_gemm_ukernel_rows<Arch>(mr, n, p, Tl::kBK, v, kDPad, o, kDPad, nullptr, true);
}

// The projections' GEMM (kInOut weights, row-major C), edges included: mca_report.py --check
// looks for string instructions in it on x86 (GCC 12 once turned its edge tiles' row copies
// into an inlined `rep movsq`, most of a tiny layer's time).
MCA_PROBE void mca_gemm(std::size_t M, std::size_t N, std::size_t K, const float* a, const float* b,
                        const float* bias, float* c, float* pack) {
  k::detail::gemm_weights<Arch>(M, N, K, a, K, b, N, microattn::WeightLayout::kInOut, nullptr, bias,
                                k::StoreRowMajor{c, N}, pack);
}

// The whole attention tile kernel, as the library instantiates it: its micro-kernel loops
// inlined among the softmax's and the mask's work, or on x86 in the row groups' frames of their
// own (score_panels_framed, pv_rows_framed; where GCC 12 once kept the x86 kernel's B vectors on
// the stack: mca_report.py --check looks at every loop of it and of the functions it calls).
MCA_PROBE void mca_attn_rows(const k::QueryRows& rows, const k::KeyMask& mask, const float* kt,
                             const float* v, float scale, k::AttnScratch<Arch, kD>& sc) {
  k::f32_attn_rows<Arch, kD>(rows, mask, kt, v, scale, sc);
}

// Attention tile, online softmax: p = 2^(s - m) over a score row, and its sum.
MCA_PROBE float mca_attn_exp2_row(float* s, std::size_t n, float m) {
  return k::detail::exp2_row<Arch>(s, n, m);
}

// Decode GEMV (single token): the three weight layouts.
MCA_PROBE void mca_gemv_panel16(std::size_t N, std::size_t K, const float* x, const float* w,
                                std::size_t ldp, const float* bias, float* y) {
  k::f32_gemv_panel16<Arch>(N, K, x, w, ldp, bias, y);
}
MCA_PROBE void mca_gemv_axpy(std::size_t N, std::size_t K, const float* x, const float* w,
                             std::size_t ldw, const float* bias, float* y) {
  k::f32_gemv_axpy<Arch>(N, K, x, w, ldw, bias, y);
}
MCA_PROBE void mca_gemv_dot(std::size_t N, std::size_t K, const float* x, const float* w,
                            std::size_t ldw, const float* bias, float* y) {
  k::f32_gemv_dot<Arch>(N, K, x, w, ldw, bias, y);
}

// exp over an array, one vector at a time (bench/f32_exp.cpp's loop).
MCA_PROBE void mca_exp(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i + V::kWidth <= n; i += V::kWidth)
    V::storeu(y + i, k::f32_exp<Arch>(V::loadu(x + i)));
}

// Integer compute (Compute::kInt8): the qd8 GEMM as the projections run it (packing, then the
// kQd8MR x kNR micro-tiles' int32 sums: its hottest loop), and decode's integer GEMV for
// [out][in] weights (one dot product per output) and for a kPanel16 panel (16 outputs at once).
MCA_PROBE void mca_qd8_gemm(std::size_t M, std::size_t N, std::size_t K, const std::int8_t* qa,
                            const std::int8_t* b, std::int32_t* c, float* pack) {
  const k::Qd8Rows a{qa, microattn::kernels::qd8_row_bytes<Arch>(K), nullptr};
  k::qd8_qc8w_gemm_i32<Arch>(M, N, K, a, b, N, microattn::WeightLayout::kInOut, c, N, pack);
}
MCA_PROBE void mca_qd8_gemv_dot(std::size_t K, const std::int8_t* a, const std::int8_t* w,
                                std::size_t ldw, std::int32_t* s) {
  k::detail::qd8_dots<Arch>(K, a, w, ldw, microattn::kWeightPanel, s);
}
MCA_PROBE void mca_qd8_gemv_panel16(std::size_t K, const std::int8_t* a, const std::int8_t* w,
                                    std::int32_t* s) {
  k::detail::qd8_dot16<Arch>(K, a, w, microattn::kWeightPanel, microattn::kWeightPanel, s);
}
