// SPDX-License-Identifier: Apache-2.0
// A model file through microattn::Decoder for the loaders' Python tests: the shape comes in at
// compile time (-DRUN_SHAPE=vocab,d_model,layers,heads,kv_heads,d_head,d_hidden,t_max and
// -DRUN_HEAD=kTied or kSeparate), the file and the token ids on the command line:
//   decoder_run MODEL.bin ID...
// prints one line per position, its logits (prefill_all) as C99 hex floats; a refused file is
// exit status 2 with model_check_text's reason.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "microattn/decoder.hpp"

using Cfg = microattn::DecoderConfig<RUN_SHAPE, microattn::LmHead::RUN_HEAD>;

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: decoder_run MODEL.bin ID...\n"), 2;
  std::FILE* f = std::fopen(argv[1], "rb");
  if (!f) return std::perror(argv[1]), 2;
  std::vector<unsigned char> raw;
  for (int c; (c = std::fgetc(f)) != EOF;) raw.push_back(static_cast<unsigned char>(c));
  std::fclose(f);
  std::vector<float> blob((raw.size() + 3) / 4);  // 16-byte aligned by the allocator
  std::memcpy(blob.data(), raw.data(), raw.size());
  static microattn::Decoder<Cfg> d;
  microattn::ModelCheck why;
  if (d.set_weights_blob(blob.data(), raw.size(), &why) != microattn::Status::kOk) {
    char text[256];
    (void)microattn::model_check_text(why, text, sizeof text);
    return std::fprintf(stderr, "decoder_run: %s\n", text), 2;
  }
  std::vector<std::int32_t> ids;
  for (int i = 2; i < argc; ++i) ids.push_back(std::atoi(argv[i]));
  std::vector<float> logits(ids.size() * Cfg::kVocab);
  if (d.prefill_all(ids.data(), ids.size(), logits.data()) != microattn::Status::kOk)
    return std::fprintf(stderr, "decoder_run: prefill_all failed\n"), 2;
  for (std::size_t p = 0; p < ids.size(); ++p) {
    for (std::size_t v = 0; v < Cfg::kVocab; ++v)
      std::printf("%s%a", v ? " " : "", static_cast<double>(logits[p * Cfg::kVocab + v]));
    std::printf("\n");
  }
  return 0;
}
