// SPDX-License-Identifier: Apache-2.0
// microattn example: what the heads of the trained tiny language model (examples/tiny_lm,
// TRAINING.md) look at. It runs the whole model over a text with the building blocks, one
// layer call at a time: embedding rows; per layer RmsNorm -> MultiHeadAttention::
// forward_with_maps -> residual -> RmsNorm -> Mlp (SwiGLU) -> residual; final RmsNorm; logits
// = x embedding^T (the tied head, a Linear over the embedding in kOutIn). Every layer's every
// head's map comes from that layer's own maps call; --csv writes them for plot_heads.py.
//
// It checks itself: its logits equal microattn::Decoder's prefill_all on the same tokens
// within 1e-5 of the largest |logit| (the same model, but chunked prefill through the KV
// cache instead of whole-sequence layer calls), every map row sums to 1 (1e-5) and future
// keys are exactly 0. It prints "tiny_lm_heads: OK" and exits 0, or says what failed and exits
// 1 (2 for bad arguments).
//
// Texts: the teaching notes' sentence and a fortune of the training split (the `fortunes`
// package's file `work`), or the --text arguments. One token per UTF-8 character (the
// vocabulary header's strings; a character not in it is id 0).
//
//   microattn_tiny_lm_heads [MODEL.bin] [--csv FILE] [--text STR]...
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "microattn/microattn.hpp"
#include "tiny_lm_vocab.h"

#ifndef MICROATTN_TINY_LM_MODEL
#define MICROATTN_TINY_LM_MODEL "tiny_lm_f32.bin"
#endif

namespace {

// The shape TRAINING.md states; decoder_weights_from_blob refuses a file of another shape.
using Model = microattn::DecoderConfig<TINY_LM_VOCAB_SIZE, 128, 2, 4, 2, 32, 256, 128,
                                       microattn::LmHead::kTied>;
using AttnCfg = Model::Attn;
constexpr std::size_t kV = Model::kVocab, kDM = Model::kDModel, kLayers = Model::kLayers;
constexpr std::size_t kHeads = AttnCfg::kHeads, kTMax = Model::kTMax;
constexpr std::size_t kMaxTexts = 4;
constexpr double kLogitTol = 1e-5, kRowSumTol = 1e-5;

const char* const kDefaultTexts[] = {
    "The artist painted the portrait of a woman with a brush",  // the teaching notes
    "He who is content with his lot probably has a lot.",       // fortunes: `work`
};

struct Options {
  const char* model = MICROATTN_TINY_LM_MODEL;
  const char* csv = nullptr;
  const char* texts[kMaxTexts] = {};
  std::size_t n_texts = 0;
};

// One text as tokens: ids and, for the labels, each character's own UTF-8 bytes.
struct Text {
  const char* source = nullptr;
  std::int32_t ids[kTMax] = {};
  char chars[kTMax][5] = {};
  std::size_t T = 0;
};

// Working memory (static: no heap, nothing large on the stack). The blob is read into a
// 64-byte aligned buffer: decoder_weights_from_blob needs 16.
alignas(64) unsigned char g_blob[1u << 21];
alignas(64) float g_x[kTMax * kDM], g_n[kTMax * kDM], g_t[kTMax * kDM];
float g_maps[kLayers][kHeads * kTMax * kTMax];
float g_logits[kTMax * kV], g_ref[kTMax * kV];
microattn::MultiHeadAttention<AttnCfg> g_attn;
microattn::Mlp<Model::Ffn> g_mlp;
microattn::RmsNorm<kDM> g_norm;
microattn::Linear<Model::Head> g_head;
microattn::Decoder<Model> g_decoder;

// Bytes of the UTF-8 character that starts with c (1 for a stray continuation byte).
std::size_t utf8_len(unsigned char c) { return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1; }

// The vocabulary header's rule: at each point the id whose string matches there, else 0.
bool encode(const char* s, Text* t) {
  t->source = s;
  t->T = 0;
  for (std::size_t p = 0; s[p];) {
    if (t->T == kTMax) return false;
    std::size_t n = utf8_len(static_cast<unsigned char>(s[p]));
    std::int32_t id = 0;
    for (std::size_t v = 1; v < kV; ++v) {
      const std::size_t k = std::strlen(tiny_lm_vocab[v]);
      if (std::strncmp(s + p, tiny_lm_vocab[v], k) == 0) {
        id = static_cast<std::int32_t>(v), n = k;
        break;
      }
    }
    for (std::size_t k = 0; k < n && s[p + k]; ++k) t->chars[t->T][k] = s[p + k];
    t->ids[t->T++] = id;
    while (n-- > 0 && s[p]) ++p;
  }
  return t->T > 0;
}

long read_file(const char* path) {
  std::FILE* f = std::fopen(path, "rb");
  if (!f) return -1;
  const std::size_t n = std::fread(g_blob, 1, sizeof g_blob, f);
  const bool whole = n < sizeof g_blob && std::feof(f) && !std::ferror(f);
  std::fclose(f);
  return whole ? static_cast<long>(n) : -1;
}

// n_ = RMSNorm(x) with weight g, for T rows.
microattn::Status normalise(const float* g, std::size_t T) {
  const microattn::Status s = g_norm.set_weight(g);
  return s != microattn::Status::kOk ? s : g_norm.forward(g_x, T, g_n);
}

void add_residual(std::size_t T) {
  for (std::size_t i = 0; i < T * kDM; ++i) g_x[i] += g_t[i];
}

// The model over the whole text, one layer call at a time: g_maps[l] gets layer l's maps
// ([(h T + i) T + j]), g_logits the logits of every position.
microattn::Status run_model(const microattn::DecoderWeights<Model>& w, const Text& text) {
  using microattn::Status;
  const std::size_t T = text.T;
  for (std::size_t i = 0; i < T; ++i)
    std::memcpy(g_x + i * kDM, w.embed + static_cast<std::size_t>(text.ids[i]) * kDM,
                kDM * sizeof(float));
  for (std::size_t l = 0; l < kLayers; ++l) {
    const microattn::DecoderLayerWeights<Model>& lw = w.layers[l];
    Status s = normalise(lw.attn_norm, T);
    if (s == Status::kOk) s = g_attn.set_weights(lw.attn);
    if (s == Status::kOk) s = g_attn.forward_with_maps(g_n, T, g_t, g_maps[l], kHeads * T * T);
    if (s != Status::kOk) return s;
    add_residual(T);
    s = normalise(lw.mlp_norm, T);
    if (s == Status::kOk) s = g_mlp.set_weights(lw.mlp);
    if (s == Status::kOk) s = g_mlp.forward(g_n, T, g_t);
    if (s != Status::kOk) return s;
    add_residual(T);
  }
  // The tied head: logits = norm(x) embedding^T, the embedding [vocab][d_model] read as a
  // Linear's W in kOutIn (PyTorch's [out][in]).
  microattn::LinearWeights<Model::Head> head;
  head.layout = microattn::WeightLayout::kOutIn;
  head.w = w.embed;
  Status s = normalise(w.norm, T);
  if (s == Status::kOk) s = g_head.set_weights(head);
  return s == Status::kOk ? g_head.forward(g_n, T, g_logits) : s;
}

// The Decoder's logits for the same tokens; prints the difference; true when within kLogitTol.
bool check_logits(const microattn::DecoderWeights<Model>& w, const Text& text) {
  g_decoder.reset();
  microattn::Status s = g_decoder.set_weights(w);
  if (s == microattn::Status::kOk) s = g_decoder.prefill_all(text.ids, text.T, g_ref);
  if (s != microattn::Status::kOk) {
    std::printf("  error: Decoder: %s\n", microattn::to_string(s));
    return false;
  }
  double big = 0, diff = 0;
  for (std::size_t i = 0; i < text.T * kV; ++i) {
    big = std::fmax(big, std::fabs(static_cast<double>(g_ref[i])));
    const double d = std::fabs(static_cast<double>(g_logits[i]) - g_ref[i]);
    if (!(d <= diff)) diff = d;  // a NaN wins
  }
  const double rel = diff / big;
  const bool ok = rel <= kLogitTol;
  std::printf(
      "  logits vs Decoder::prefill_all: max |diff| %.3g, largest |logit| %.3f, "
      "relative %.2g (limit %.0e): %s\n",
      diff, big, rel, kLogitTol, ok ? "OK" : "FAIL");
  return ok;
}

// Every map row sums to 1 and hides the future exactly.
bool check_maps(std::size_t T) {
  double row_err = 0;
  std::size_t masked_bad = 0;
  for (std::size_t l = 0; l < kLayers; ++l)
    for (std::size_t h = 0; h < kHeads; ++h)
      for (std::size_t i = 0; i < T; ++i) {
        const float* row = g_maps[l] + (h * T + i) * T;
        double sum = 0;
        for (std::size_t j = 0; j < T; ++j) {
          sum += row[j];
          masked_bad += j > i && row[j] != 0.0f;
        }
        const double e = std::fabs(sum - 1.0);
        if (!(e <= row_err)) row_err = e;
      }
  const bool ok = row_err <= kRowSumTol && masked_bad == 0;
  std::printf("  maps: max |row sum - 1| %.2g (limit %.0e), %zu future keys not 0: %s\n", row_err,
              kRowSumTol, masked_bad, ok ? "OK" : "FAIL");
  return ok;
}

bool is_space(const Text& t, std::size_t i) { return t.chars[i][0] == ' '; }

// Start of the word (run of non-spaces) that holds position i.
std::size_t word_start(const Text& t, std::size_t i) {
  while (i > 0 && !is_space(t, i - 1)) --i;
  return i;
}

// Per head, the mean over the text's queries of: the weight on the query itself, on the
// previous character, on the text's first character (queries 1..T-1: an attention sink?), on
// the first letter of the query's word (queries 2+ letters into a word,
// so neither itself nor the previous one), on the space before the word (queries 1+ letters
// after it: not the previous character), the weight on all spaces and on all word-initial
// letters (with what a uniform row would give), and the mean distance back.
void print_summary(const Text& t) {
  const std::size_t T = t.T;
  std::printf(
      "  layer head   self   prev  first  word-start  space-before  on-spaces (uniform)  "
      "on-word-starts (uniform)  mean-distance\n");
  for (std::size_t l = 0; l < kLayers; ++l)
    for (std::size_t h = 0; h < kHeads; ++h) {
      double self = 0, prev = 0, first = 0, ws = 0, sb = 0, sp = 0, sp_u = 0, wi = 0, wi_u = 0,
             dist = 0;
      std::size_t n_ws = 0, n_sb = 0;
      for (std::size_t i = 0; i < T; ++i) {
        const float* row = g_maps[l] + (h * T + i) * T;
        self += row[i];
        if (i > 0) prev += row[i - 1], first += row[0];
        for (std::size_t j = 0; j <= i; ++j) {
          const bool initial = !is_space(t, j) && word_start(t, j) == j;
          sp += is_space(t, j) ? row[j] : 0.0;
          sp_u += is_space(t, j) ? 1.0 / static_cast<double>(i + 1) : 0.0;
          wi += initial ? row[j] : 0.0;
          wi_u += initial ? 1.0 / static_cast<double>(i + 1) : 0.0;
          dist += static_cast<double>(i - j) * row[j];
        }
        if (is_space(t, i)) continue;
        const std::size_t s = word_start(t, i);
        if (i >= s + 2) ws += row[s], ++n_ws;
        if (s >= 1 && i >= s + 1) sb += row[s - 1], ++n_sb;
      }
      const double n = static_cast<double>(T), n1 = T > 1 ? n - 1 : 1;
      std::printf(
          "  %5zu %4zu  %5.2f  %5.2f  %5.2f  %10.2f  %12.2f  %9.2f (%.2f)  %14.2f (%.2f)  %13.1f\n",
          l, h, self / n, prev / n1, first / n1, n_ws ? ws / static_cast<double>(n_ws) : 0.0,
          n_sb ? sb / static_cast<double>(n_sb) : 0.0, sp / n, sp_u / n, wi / n, wi_u / n,
          dist / n);
    }
}

bool is_initial(const Text& t, std::size_t j) { return !is_space(t, j) && word_start(t, j) == j; }

// Which word boundary a head looks back to: per head, the mean weight on the latest, second
// and third latest word-initial letter before the query (not the query itself), and the same
// for spaces; over the queries with at least three of each before them.
void print_boundaries(const Text& t) {
  constexpr std::size_t kBack = 3;
  std::printf(
      "  layer head   word-initial letters before the query   spaces before the query\n"
      "                latest  2nd  3rd                         latest  2nd  3rd\n");
  for (std::size_t l = 0; l < kLayers; ++l)
    for (std::size_t h = 0; h < kHeads; ++h) {
      double wi[kBack] = {}, sp[kBack] = {};
      std::size_t n = 0;
      for (std::size_t i = 0; i < t.T; ++i) {
        const float* row = g_maps[l] + (h * t.T + i) * t.T;
        double w[kBack] = {}, s[kBack] = {};
        std::size_t nw = 0, ns = 0;
        for (std::size_t j = i; j-- > 0;) {
          if (is_initial(t, j) && nw < kBack) w[nw++] = row[j];
          if (is_space(t, j) && ns < kBack) s[ns++] = row[j];
        }
        if (nw < kBack || ns < kBack) continue;
        for (std::size_t b = 0; b < kBack; ++b) wi[b] += w[b], sp[b] += s[b];
        ++n;
      }
      const double d = n ? static_cast<double>(n) : 1.0;
      std::printf("  %5zu %4zu  %8.2f %4.2f %4.2f  %30.2f %4.2f %4.2f\n", l, h, wi[0] / d,
                  wi[1] / d, wi[2] / d, sp[0] / d, sp[1] / d, sp[2] / d);
    }
}

// A character as a CSV field: quoted when it is a comma, a quote or whitespace.
void csv_char(std::FILE* f, const char* c) {
  if (std::strpbrk(c, ",\" \t\r\n") == nullptr) {
    std::fputs(c, f);
    return;
  }
  std::fputc('"', f);
  for (; *c; ++c) {
    if (*c == '"') std::fputc('"', f);
    std::fputc(*c, f);
  }
  std::fputc('"', f);
}

void write_csv_header(std::FILE* f, const Options& opt, const Text* texts) {
  std::fprintf(f, "# microattn tiny_lm heads: model %s\n", opt.model);
  std::fprintf(
      f, "# shape: %zu layers, %zu query heads, %zu key/value heads, d_head %zu, causal, RoPE\n",
      kLayers, kHeads, AttnCfg::kKvHeads, AttnCfg::kDHead);
  std::fprintf(f, "# scale: %.9g\n", static_cast<double>(g_attn.scale()));
  for (std::size_t k = 0; k < opt.n_texts; ++k) {
    std::fprintf(f, "# text %zu: ", k);
    for (const char* c = texts[k].source; *c; ++c)  // control characters escaped
      std::fprintf(f, static_cast<unsigned char>(*c) < 0x20 ? "\\x%02x" : "%c",
                   static_cast<unsigned char>(*c));
    std::fprintf(f, "\n");
  }
  std::fprintf(f, "text,layer,head,query,key,query_token,key_token,weight\n");
}

void write_csv_maps(std::FILE* f, std::size_t k, const Text& t) {
  for (std::size_t l = 0; l < kLayers; ++l)
    for (std::size_t h = 0; h < kHeads; ++h)
      for (std::size_t i = 0; i < t.T; ++i)
        for (std::size_t j = 0; j < t.T; ++j) {
          std::fprintf(f, "%zu,%zu,%zu,%zu,%zu,", k, l, h, i, j);
          csv_char(f, t.chars[i]);
          std::fputc(',', f);
          csv_char(f, t.chars[j]);
          std::fprintf(f, ",%.9g\n", static_cast<double>(g_maps[l][(h * t.T + i) * t.T + j]));
        }
}

int usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [MODEL.bin] [--csv FILE] [--text STR]...\n"
               "  MODEL.bin   the fp32 model file (default %s)\n"
               "  --csv FILE  also write every layer's every head's map as CSV (plot_heads.py)\n"
               "  --text STR  a text of 1..%zu characters instead of the two default ones "
               "(up to %zu)\n",
               prog, MICROATTN_TINY_LM_MODEL, kTMax, kMaxTexts);
  return 2;
}

bool parse(int argc, char** argv, Options* opt) {
  bool have_model = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--csv") == 0 && a + 1 < argc) {
      opt->csv = argv[++a];
    } else if (std::strcmp(argv[a], "--text") == 0 && a + 1 < argc) {
      if (opt->n_texts == kMaxTexts) return false;
      opt->texts[opt->n_texts++] = argv[++a];
    } else if (argv[a][0] != '-' && !have_model) {
      opt->model = argv[a];
      have_model = true;
    } else {
      return false;
    }
  }
  if (opt->n_texts == 0)
    for (const char* t : kDefaultTexts) opt->texts[opt->n_texts++] = t;
  return true;
}

int run(const Options& opt, const Text* texts) {
  const long bytes = read_file(opt.model);
  if (bytes < 0) {
    std::printf("error: cannot read %s (or it exceeds %zu bytes)\n", opt.model, sizeof g_blob);
    return 1;
  }
  microattn::DecoderWeights<Model> w;
  microattn::Status s =
      microattn::decoder_weights_from_blob<Model>(g_blob, static_cast<std::size_t>(bytes), &w);
  // The attention layer takes the blob's RoPE and the norm its epsilon (1e-5, not the 1e-6
  // default): the Decoder applies both from the same weights.
  if (s == microattn::Status::kOk) s = g_attn.set_rope(w.rope());
  if (s == microattn::Status::kOk) s = g_norm.set_eps(w.eps());
  if (s != microattn::Status::kOk) {
    std::printf("error: %s: %s (not the fp32 tiny LM?)\n", opt.model, microattn::to_string(s));
    return 1;
  }
  std::printf(
      "model %s: vocab %zu, d_model %zu, %zu layers, %zu heads (%zu kv), RoPE base %g, "
      "eps %g; %s kernels\n",
      opt.model, kV, kDM, kLayers, kHeads, AttnCfg::kKvHeads, static_cast<double>(w.rope().base),
      static_cast<double>(w.eps()), microattn::arch_name<>());
  std::FILE* csv = opt.csv ? std::fopen(opt.csv, "w") : nullptr;
  if (opt.csv && !csv) {
    std::printf("error: cannot open %s for writing\n", opt.csv);
    return 1;
  }
  if (csv) write_csv_header(csv, opt, texts);
  bool ok = true;
  for (std::size_t k = 0; k < opt.n_texts; ++k) {
    const Text& t = texts[k];
    std::printf("\ntext %zu (%zu characters): %s\n", k, t.T, t.source);
    s = run_model(w, t);
    if (s != microattn::Status::kOk) {
      std::printf("  error: microattn: %s\n", microattn::to_string(s));
      ok = false;
      continue;
    }
    print_summary(t);
    print_boundaries(t);
    ok &= check_maps(t.T);
    ok &= check_logits(w, t);
    if (csv) write_csv_maps(csv, k, t);
  }
  if (csv) {
    const bool written = std::ferror(csv) == 0;
    if (std::fclose(csv) != 0 || !written) {
      std::printf("error: writing %s failed\n", opt.csv);
      ok = false;
    } else {
      std::printf("\nwrote the maps to %s\n", opt.csv);
    }
  }
  std::printf("tiny_lm_heads: %s\n", ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  static Options opt;
  static Text texts[kMaxTexts];
  if (!parse(argc, argv, &opt)) return usage(argv[0]);
  for (std::size_t k = 0; k < opt.n_texts; ++k)
    if (!encode(opt.texts[k], &texts[k])) {
      std::fprintf(stderr, "error: text %zu is empty or longer than %zu characters\n", k, kTMax);
      return 2;
    }
  return run(opt, texts);
}
