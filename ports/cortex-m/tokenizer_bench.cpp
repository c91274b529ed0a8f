// SPDX-License-Identifier: Apache-2.0
// The tokenizer on a board (ctest cortex_m.<board>.tokenizer): the Llama 2 tokenizer file
// (tools/tokenizer.py --llama2c on ../shared's tokenizer.bin, linked into flash) encodes a fixed
// English paragraph; printed: its ids' count and sum (the host's ids, which tokenizer.* checks
// against SentencePiece: kIds and kSum below are the host's), the instructions of one encode
// under QEMU -icount (instructions, not cycles) and bytes per 1,000 instructions.
#include <cstdint>
#include <cstring>

#include "microattn/tokenizer.hpp"
#include "port.hpp"
#include "tiny_lm_platform.h"

#if !defined(TOKENIZER_FILE)
#error "tokenizer_bench.cpp: define TOKENIZER_FILE as the tokenizer file's path (a string)"
#endif

__asm__(
    ".pushsection .rodata.tok_blob,\"a\"\n.balign 16\n.global tok_blob\ntok_blob:\n.incbin "
    "\"" TOKENIZER_FILE
    "\"\ntok_blob_end:\n.balign 4\n.global tok_blob_bytes\ntok_blob_bytes:\n.4byte tok_blob_end - "
    "tok_blob\n.popsection\n");
extern "C" const unsigned char tok_blob[];
extern "C" const std::uint32_t tok_blob_bytes;

namespace {

const char kText[] =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the "
    "sunshine. One day, she saw a big, red ball in the park. She ran to it and kicked it as "
    "hard as she could. The ball flew high into the sky and landed in a tree! Lily was sad, "
    "but her friend Tom came by with a long stick. \"Let's get it down together,\" he said. "
    "They poked and poked until the ball fell. Lily smiled and said, \"Thank you, Tom!\" From "
    "that day on, they played together every day, and they were the best of friends.";
// The host's encode of kText with BOS (build/dev's microattn::Tokenizer; tokenizer.* checks it
// against python3-sentencepiece).
constexpr std::size_t kIds = TOKENIZER_EXPECT_IDS;
constexpr std::uint64_t kSum = TOKENIZER_EXPECT_SUM;

microattn::Tokenizer<sizeof kText> g_tok;
std::int32_t g_ids[microattn::Tokenizer<sizeof kText>::kMaxIds];

void put(const char* s) { microattn::port::write(s); }

}  // namespace

int main() {
  std::size_t n = 0;
  if (g_tok.set_blob(tok_blob, tok_blob_bytes) != microattn::Status::kOk) {
    put("tokenizer: FAIL set_blob\n");
    return 1;
  }
  const std::uint64_t t0 = tlm_counter();
  const microattn::Status s =
      g_tok.encode(kText, sizeof kText - 1, true, g_ids, sizeof g_ids / sizeof *g_ids, &n);
  const std::uint64_t used = tlm_counter() - t0;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<std::uint64_t>(g_ids[i]);
  put("tokenizer: ");
  microattn::port::write_u64(sizeof kText - 1);
  put(" bytes -> ");
  microattn::port::write_u64(n);
  put(" ids (sum ");
  microattn::port::write_u64(sum);
  put("), ");
  microattn::port::write_u64(used);
  put(" ");
  put(tlm_counter_unit());
  put(", ");
  // bytes per 1,000 of the counter's units, three decimals (no printf, no double)
  const std::uint64_t milli = used ? (sizeof kText - 1) * std::uint64_t{1000000} / used : 0;
  microattn::port::write_u64(milli / 1000);
  put(".");
  put(milli % 1000 < 100 ? (milli % 1000 < 10 ? "00" : "0") : "");
  microattn::port::write_u64(milli % 1000);
  put(" bytes per 1,000\n");
  const bool ok = s == microattn::Status::kOk && n == kIds && sum == kSum;
  put(ok ? "tokenizer: OK\n" : "tokenizer: FAIL (not the host's ids)\n");
  return ok ? 0 : 1;
}
