// SPDX-License-Identifier: Apache-2.0
// microattn example: the attention maps of each head of the teaching notes' 2-head layer
// ("Visualizing different heads"): the sentence "The artist painted the portrait of a woman
// with a brush" (11 tokens), d_in 8, 2 heads of width 2 (d_out 4), W_O 4 -> 4, bidirectional
// like the notes' BERT demo (Mask::kNone; --causal for a decoder's mask).
//
// The inputs are NOT a trained model: the token embeddings (~ N(0, 1)) and the projection
// weights (~ U(-1/sqrt(fan_in), +1/sqrt(fan_in)), nn.Linear's initialisation) come from a small
// PRNG (splitmix64) with a fixed seed, so the maps show the mechanics of multi-head attention
// (two heads, two different maps of the same tokens, each row a softmax that sums to 1), not
// linguistics. examples/tiny_lm/tiny_lm_heads.cpp shows the heads of a trained model.
//
// The program also checks the library: every row of every map sums to 1 (1e-6), masked keys
// are exactly 0, the maps equal softmax(scale Q_h K_h^T) computed in double (1e-5), the layer's
// output equals concat_h(map_h V_h) W_O computed in double from the maps (1e-5), and forward()
// without maps gives the same output bit for bit. It prints "attention_maps: OK" and exits 0,
// or says which check failed and exits 1 (2 for bad arguments).
//
//   microattn_attention_maps [--causal] [--seed N] [--csv FILE]
//   --csv FILE writes the maps as CSV for examples/plot_attention_maps.py.
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "microattn/microattn.hpp"

namespace {

constexpr std::size_t kT = 11, kDIn = 8, kHeads = 2, kDHead = 2, kDOut = kHeads * kDHead;
constexpr std::size_t kWoman = 7;  // the token whose attention the notes discuss
constexpr std::uint64_t kDefaultSeed = 123;
const char* const kTokens[kT] = {"The", "artist", "painted", "the", "portrait", "of",
                                 "a",   "woman",  "with",    "a",   "brush"};

// The notes' layer: d_model = d_in = 8, H = H_kv = 2, d_head = 2, W_O: 4 -> 4.
using BidiCfg = microattn::Config<kT, kDIn, kHeads, kHeads, kDHead, microattn::OutDim{kDOut},
                                  microattn::Mask::kNone>;
using CausalCfg = microattn::Config<kT, kDIn, kHeads, kHeads, kDHead, microattn::OutDim{kDOut},
                                    microattn::Mask::kCausal>;

constexpr double kRowSumTol = 1e-6, kMapTol = 1e-5, kOutTol = 1e-5;

struct Options {
  bool causal = false;
  std::uint64_t seed = kDefaultSeed;
  const char* csv = nullptr;
};

// splitmix64: a small, well-known generator: the same seed gives the same inputs on every
// target (up to the last bit of the C library's log and cos in the normal draws).
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  float uniform(float bound) { return static_cast<float>((2.0 * uniform() - 1.0) * bound); }
  float normal() {  // Box-Muller
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
};

// Inputs and results (static: no heap, nothing large on the stack).
float g_x[kT * kDIn];                                              // token embeddings [T][d_in]
float g_wq[kDIn * kDOut], g_wk[kDIn * kDOut], g_wv[kDIn * kDOut];  // [in][out]
float g_wo[kDOut * kDOut];                                         // [in][out]
float g_y[kT * kDOut], g_y_plain[kT * kDOut];
float g_maps[kHeads * kT * kT];

void make_inputs(std::uint64_t seed) {
  Rng rng{seed};
  for (float& v : g_x) v = rng.normal();
  const float b_in = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kDIn)));
  const float b_out = static_cast<float>(1.0 / std::sqrt(static_cast<double>(kDOut)));
  for (float& v : g_wq) v = rng.uniform(b_in);
  for (float& v : g_wk) v = rng.uniform(b_in);
  for (float& v : g_wv) v = rng.uniform(b_in);
  for (float& v : g_wo) v = rng.uniform(b_out);
}

float map_at(std::size_t h, std::size_t i, std::size_t j) { return g_maps[(h * kT + i) * kT + j]; }

bool hidden(bool causal, std::size_t i, std::size_t j) { return causal && j > i; }

void print_map(std::size_t h, bool causal) {
  std::printf("\nhead %zu: row = query token, column = key token, * = the row's largest weight%s\n",
              h, causal ? ", - = masked (future) key" : "");
  std::printf("%12s", "");
  for (std::size_t j = 0; j < kT; ++j) std::printf(j + 1 < kT ? "%8zu " : "%8zu", j);
  std::printf("\n%12s", "");
  for (std::size_t j = 0; j < kT; ++j) std::printf("%8s ", kTokens[j]);
  std::printf("%7s\n", "sum");
  for (std::size_t i = 0; i < kT; ++i) {
    std::printf("%2zu %-8s ", i, kTokens[i]);
    std::size_t best = 0;
    double sum = 0.0;
    for (std::size_t j = 0; j < kT; ++j) {
      if (map_at(h, i, j) > map_at(h, i, best)) best = j;
      sum += map_at(h, i, j);
    }
    for (std::size_t j = 0; j < kT; ++j) {
      if (hidden(causal, i, j))
        std::printf("%8s ", "-");
      else
        std::printf("%8.3f%c", static_cast<double>(map_at(h, i, j)), j == best ? '*' : ' ');
    }
    std::printf("%7.3f\n", sum);
  }
}

void print_woman(bool causal) {
  std::printf("\n\"%s\" (token %zu) attends most to%s:\n", kTokens[kWoman], kWoman,
              causal ? " (causal: it sees tokens 0..7 only)" : "");
  for (std::size_t h = 0; h < kHeads; ++h) {
    // The three largest weights of the row, largest first.
    std::size_t top[3] = {kT, kT, kT};
    for (std::size_t j = 0; j < kT; ++j) {
      if (hidden(causal, kWoman, j)) continue;
      for (std::size_t r = 0; r < 3; ++r) {
        if (top[r] == kT || map_at(h, kWoman, j) > map_at(h, kWoman, top[r])) {
          for (std::size_t s = 2; s > r; --s) top[s] = top[s - 1];
          top[r] = j;
          break;
        }
      }
    }
    std::printf("  head %zu: %s (token %zu, %.3f), then %s (%.3f), %s (%.3f)\n", h, kTokens[top[0]],
                top[0], static_cast<double>(map_at(h, kWoman, top[0])), kTokens[top[1]],
                static_cast<double>(map_at(h, kWoman, top[1])), kTokens[top[2]],
                static_cast<double>(map_at(h, kWoman, top[2])));
  }
}

int write_csv(const char* path, const Options& opt, float scale) {
  std::FILE* f = std::fopen(path, "w");
  if (!f) {
    std::printf("error: cannot open %s for writing\n", path);
    return 1;
  }
  std::fprintf(f, "# microattn attention maps: %zu tokens, d_in %zu, %zu heads of width %zu\n", kT,
               kDIn, kHeads, kDHead);
  std::fprintf(f, "# mask: %s\n", opt.causal ? "causal" : "none");
  std::fprintf(f, "# seed: %" PRIu64 "\n", opt.seed);
  std::fprintf(f, "# scale: %.9g\n", static_cast<double>(scale));
  std::fprintf(f, "# weights: random with a fixed seed, not a trained model\n");
  std::fprintf(f, "# tokens:");
  for (const char* t : kTokens) std::fprintf(f, " %s", t);
  std::fprintf(f, "\nhead,query,key,query_token,key_token,weight\n");
  for (std::size_t h = 0; h < kHeads; ++h)
    for (std::size_t i = 0; i < kT; ++i)
      for (std::size_t j = 0; j < kT; ++j)
        std::fprintf(f, "%zu,%zu,%zu,%s,%s,%.9g\n", h, i, j, kTokens[i], kTokens[j],
                     static_cast<double>(map_at(h, i, j)));
  const bool ok = std::ferror(f) == 0;
  if (std::fclose(f) != 0 || !ok) {
    std::printf("error: writing %s failed\n", path);
    return 1;
  }
  std::printf("\nwrote the maps to %s\n", path);
  return 0;
}

// cur = max(cur, e), where a NaN wins and stays (std::fmax would drop it).
void worst(double& cur, double e) {
  if (!std::isnan(cur) && !(e <= cur)) cur = e;
}

// One check's line; returns whether it passed.
bool report(const char* what, const char* measure, double value, double limit) {
  const bool ok = value <= limit;  // false for NaN
  std::printf("  %s: %s %.2g (limit %.0e): %s\n", what, measure, value, limit, ok ? "OK" : "FAIL");
  return ok;
}
bool report_count(const char* what, std::size_t bad, std::size_t of, const char* which) {
  std::printf("  %s: %zu of %zu %s: %s\n", what, bad, of, which, bad == 0 ? "OK" : "FAIL");
  return bad == 0;
}

// Recomputes the layer in double from the same inputs and compares.
bool check(bool causal, double scale) {
  double q[kT][kDOut], k[kT][kDOut], v[kT][kDOut];
  for (std::size_t t = 0; t < kT; ++t)
    for (std::size_t o = 0; o < kDOut; ++o) {
      double sq = 0, sk = 0, sv = 0;
      for (std::size_t i = 0; i < kDIn; ++i) {
        const double x = g_x[t * kDIn + i];
        sq += x * g_wq[i * kDOut + o], sk += x * g_wk[i * kDOut + o], sv += x * g_wv[i * kDOut + o];
      }
      q[t][o] = sq, k[t][o] = sk, v[t][o] = sv;
    }
  double row_err = 0, map_err = 0, out_err = 0;
  std::size_t mask_bad = 0, plain_bad = 0;
  double ctx[kT][kDOut];
  for (std::size_t h = 0; h < kHeads; ++h)
    for (std::size_t i = 0; i < kT; ++i) {
      // softmax(scale q_i . k_j) over the keys token i sees.
      double s[kT], m = -HUGE_VAL, l = 0, sum = 0;
      for (std::size_t j = 0; j < kT; ++j) {
        s[j] = 0;
        for (std::size_t d = 0; d < kDHead; ++d)
          s[j] += q[i][h * kDHead + d] * k[j][h * kDHead + d];
        s[j] *= scale;
        if (!hidden(causal, i, j) && s[j] > m) m = s[j];
      }
      for (std::size_t j = 0; j < kT; ++j) l += hidden(causal, i, j) ? 0.0 : std::exp(s[j] - m);
      for (std::size_t j = 0; j < kT; ++j) {
        const double p = map_at(h, i, j);
        sum += p;
        if (hidden(causal, i, j)) {
          mask_bad += p != 0.0;
        } else {
          mask_bad += !(p > 0.0);  // with these inputs every key a row sees has weight > 0
          worst(map_err, std::fabs(p - std::exp(s[j] - m) / l));
        }
      }
      worst(row_err, std::fabs(sum - 1.0));
      // The head's context row from the maps the library returned: map_h V_h.
      for (std::size_t d = 0; d < kDHead; ++d) {
        double c = 0;
        for (std::size_t j = 0; j < kT; ++j) c += map_at(h, i, j) * v[j][h * kDHead + d];
        ctx[i][h * kDHead + d] = c;
      }
    }
  for (std::size_t t = 0; t < kT; ++t)
    for (std::size_t o = 0; o < kDOut; ++o) {
      double y = 0;
      for (std::size_t c = 0; c < kDOut; ++c) y += ctx[t][c] * g_wo[c * kDOut + o];
      worst(out_err, std::fabs(g_y[t * kDOut + o] - y));
      plain_bad += std::memcmp(&g_y[t * kDOut + o], &g_y_plain[t * kDOut + o], sizeof(float)) != 0;
    }
  // A NaN anywhere makes its maximum NaN, and report() fails it.
  std::printf("\nchecks (a reference in double from the same inputs):\n");
  bool ok = report("every row sums to 1", "max |sum - 1|", row_err, kRowSumTol);
  ok &= report_count(causal ? "masked (future) keys are exactly 0, the others > 0"
                            : "every key has a weight > 0 (nothing masked)",
                     mask_bad, kHeads * kT * kT, "weights wrong");
  ok &= report("maps = softmax(scale Q_h K_h^T)", "max |diff|", map_err, kMapTol);
  ok &= report("y = concat_h(map_h V_h) W_O", "max |diff|", out_err, kOutTol);
  ok &= report_count("forward() without maps gives the same y", plain_bad, kT * kDOut,
                     "values differ in their bits");
  return ok;
}

template <class Cfg>
int run(const Options& opt) {
  static microattn::MultiHeadAttention<Cfg> layer;  // all working memory, in .bss
  const microattn::Weights<Cfg> w(microattn::WeightLayout::kInOut, g_wq, g_wk, g_wv, g_wo);
  microattn::Status s = layer.set_weights(w);
  if (s == microattn::Status::kOk)
    s = layer.forward_with_maps(g_x, kT, g_y, g_maps, sizeof g_maps / sizeof g_maps[0]);
  if (s == microattn::Status::kOk) s = layer.forward(g_x, kT, g_y_plain);
  if (s != microattn::Status::kOk) {
    std::printf("error: microattn: %s\nattention_maps: FAIL\n", microattn::to_string(s));
    return 1;
  }
  std::printf("softmax scale %.6f (1/sqrt(head width)); %s kernels\n",
              static_cast<double>(layer.scale()), microattn::arch_name<>());
  for (std::size_t h = 0; h < kHeads; ++h) print_map(h, opt.causal);
  print_woman(opt.causal);
  if (opt.csv && write_csv(opt.csv, opt, layer.scale()) != 0) {
    std::printf("attention_maps: FAIL\n");
    return 1;
  }
  if (!check(opt.causal, static_cast<double>(layer.scale()))) {
    std::printf("attention_maps: FAIL\n");
    return 1;
  }
  std::printf("attention_maps: OK\n");
  return 0;
}

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [--causal] [--seed N] [--csv FILE]\n"
               "  --causal    causal mask (a decoder) instead of bidirectional (BERT, the notes)\n"
               "  --seed N    seed of the random embeddings and weights (default %" PRIu64
               ")\n"
               "  --csv FILE  also write the maps as CSV (for examples/plot_attention_maps.py)\n",
               prog, kDefaultSeed);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--causal") == 0) {
      opt.causal = true;
    } else if (std::strcmp(argv[a], "--csv") == 0 && a + 1 < argc) {
      opt.csv = argv[++a];
    } else if (std::strcmp(argv[a], "--seed") == 0 && a + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++a], &end, 0);
      if (!*argv[a] || *end || argv[a][0] == '-') return usage(argv[0]);
      opt.seed = v;
    } else {
      return usage(argv[0]);
    }
  }
  make_inputs(opt.seed);
  std::printf(
      "microattn attention maps: %zu tokens, d_in %zu, %zu heads of width %zu, W_O %zu -> "
      "%zu, %s\n",
      kT, kDIn, kHeads, kDHead, kDOut, kDOut,
      opt.causal ? "causal (Mask::kCausal)" : "bidirectional (Mask::kNone, like BERT)");
  std::printf("sentence:");
  for (const char* t : kTokens) std::printf(" %s", t);
  std::printf("\nweights: RANDOM with fixed seed %" PRIu64
              " (embeddings ~ N(0,1), W_q/W_k/W_v/W_o ~ U(+-1/sqrt(fan_in))),\n"
              "         not a trained model: the maps show the mechanics, not linguistics\n",
              opt.seed);
  return opt.causal ? run<CausalCfg>(opt) : run<BidiCfg>(opt);
}
