// SPDX-License-Identifier: Apache-2.0
// A user's program, as built by the consumer projects in this folder (find_package and
// add_subdirectory): one forward pass of a tiny MultiHeadAttention layer on fixed data, checked
// against a plain double-precision computation. Prints the kernels, the xsimd release it was
// compiled with, a checksum, and "consumer: OK" (what the test driver looks for).
#include <cmath>
#include <cstdio>
#include <cstring>

#include "microattn/microattn.hpp"

namespace {

constexpr int kT = 6, kD = 16, kH = 2, kHkv = 1, kDh = 8;  // T_max 8: 6 tokens used
using Cfg = microattn::Config<8, kD, kH, kHkv, kDh>;

float g_wq[kD * kH * kDh], g_wk[kD * kHkv * kDh], g_wv[kD * kHkv * kDh], g_wo[kH * kDh * kD];
float g_x[kT * kD], g_y[kT * kD];
microattn::MultiHeadAttention<Cfg> g_attn;

void fill(float* p, int n, unsigned salt, float amp) {
  for (int i = 0; i < n; ++i) {
    const unsigned h = (static_cast<unsigned>(i) + salt) * 2654435761u;
    p[i] = amp * (static_cast<float>(h >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
}

// y = concat_h(softmax(q_h k_g^T / sqrt(d_head) + causal) v_g) W_o, weights [in][out].
void reference(double* y) {
  double q[kT][kH * kDh], k[kT][kHkv * kDh], v[kT][kHkv * kDh], ctx[kT][kH * kDh];
  for (int t = 0; t < kT; ++t) {
    for (int o = 0; o < kH * kDh; ++o) {
      q[t][o] = 0;
      for (int i = 0; i < kD; ++i) q[t][o] += double(g_x[t * kD + i]) * g_wq[i * kH * kDh + o];
    }
    for (int o = 0; o < kHkv * kDh; ++o) {
      k[t][o] = v[t][o] = 0;
      for (int i = 0; i < kD; ++i) {
        k[t][o] += double(g_x[t * kD + i]) * g_wk[i * kHkv * kDh + o];
        v[t][o] += double(g_x[t * kD + i]) * g_wv[i * kHkv * kDh + o];
      }
    }
  }
  for (int h = 0; h < kH; ++h) {
    const int g = h / (kH / kHkv);
    for (int i = 0; i < kT; ++i) {
      double s[kT], m = -1e300, sum = 0;
      for (int j = 0; j <= i; ++j) {
        s[j] = 0;
        for (int d = 0; d < kDh; ++d) s[j] += q[i][h * kDh + d] * k[j][g * kDh + d];
        s[j] /= std::sqrt(double(kDh));
        m = s[j] > m ? s[j] : m;
      }
      for (int j = 0; j <= i; ++j) sum += (s[j] = std::exp(s[j] - m));
      for (int d = 0; d < kDh; ++d) {
        double acc = 0;
        for (int j = 0; j <= i; ++j) acc += s[j] / sum * v[j][g * kDh + d];
        ctx[i][h * kDh + d] = acc;
      }
    }
  }
  for (int t = 0; t < kT; ++t)
    for (int o = 0; o < kD; ++o) {
      y[t * kD + o] = 0;
      for (int i = 0; i < kH * kDh; ++i) y[t * kD + o] += ctx[t][i] * g_wo[i * kD + o];
    }
}

}  // namespace

int main() {
  fill(g_wq, kD * kH * kDh, 1, 0.25f);
  fill(g_wk, kD * kHkv * kDh, 2, 0.25f);
  fill(g_wv, kD * kHkv * kDh, 3, 0.25f);
  fill(g_wo, kH * kDh * kD, 4, 0.25f);
  fill(g_x, kT * kD, 5, 1.0f);
  microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut);
  w.w_q = g_wq, w.w_k = g_wk, w.w_v = g_wv, w.w_o = g_wo;
  microattn::Status s = g_attn.set_weights(w);
  if (s == microattn::Status::kOk) s = g_attn.forward(g_x, kT, g_y);
  if (s != microattn::Status::kOk) {
    std::printf("consumer: FAILED: %s\n", microattn::to_string(s));
    return 1;
  }
  double ref[kT * kD], checksum = 0, max_err = 0;
  reference(ref);
  for (int i = 0; i < kT * kD; ++i) {
    checksum += g_y[i];
    const double e = std::fabs(g_y[i] - ref[i]);
    max_err = e > max_err ? e : max_err;
  }
  std::printf("consumer: kernels %s\n", microattn::arch_name<>());
  std::printf("consumer: version %s\n", microattn_version());
  if (std::strcmp(microattn_version(), MICROATTN_VERSION_STRING) != 0) {
    std::printf("consumer: FAILED: headers %s, library %s\n", MICROATTN_VERSION_STRING,
                microattn_version());
    return 1;
  }
#if defined(XSIMD_VERSION_MAJOR)
  std::printf("consumer: xsimd %d.%d.%d\n", XSIMD_VERSION_MAJOR, XSIMD_VERSION_MINOR,
              XSIMD_VERSION_PATCH);
#else
  std::printf("consumer: xsimd none\n");
#endif
  std::printf("consumer: checksum %.5f, max |y - reference| %.3g\n", checksum, max_err);
  if (!(max_err < 1e-4)) {
    std::printf("consumer: FAILED: differs from the reference\n");
    return 1;
  }
  std::printf("consumer: OK\n");
  return 0;
}
