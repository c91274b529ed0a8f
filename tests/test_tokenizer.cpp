// SPDX-License-Identifier: Apache-2.0
// microattn::Tokenizer against python3-sentencepiece (ctest tokenizer.*): the ids of every line
// of tests/python/tokenizer_reference.py's corpus (the fortunes files, the teaching notes,
// digits, whitespace runs, non-ASCII text, emoji, control characters, invalid UTF-8), for the
// Llama 2 tokenizer and two 512-piece BPE models trained on the corpus (byte fallback with
// SentencePiece's removal of extra spaces; no byte fallback, no dummy prefix); and, against
// tests/python/bytelevel_bpe.py's GPT-2 encoder, a byte-level BPE of 768 merges read from
// Hugging Face tokenizer.json files (GPT-2's split; SmolLM2's digits before it with a prefix
// space). Then decode:
// the pieces' text joined is the line wherever the tokenizer is lossless; and the status rules.
// Hosted targets (the ARM ones under qemu-user): the files are read at run time from
// TOKENIZER_DATA_DIR.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "microattn/tokenizer.hpp"

namespace {

using microattn::Status;
constexpr std::size_t kMaxText = 8192;
using Tok = microattn::Tokenizer<kMaxText>;

std::vector<std::uint32_t> read_words(const std::string& name) {  // 4-byte aligned
  std::vector<std::uint32_t> w;
  std::FILE* f = std::fopen((std::string(TOKENIZER_DATA_DIR) + "/" + name).c_str(), "rb");
  if (!f) return w;
  std::fseek(f, 0, SEEK_END);
  const long n = std::ftell(f);
  std::fseek(f, 0, SEEK_SET);
  w.resize((static_cast<std::size_t>(n) + 3) / 4 + 1);
  w.back() = static_cast<std::uint32_t>(n);  // the byte count, after the data
  if (std::fread(w.data(), 1, static_cast<std::size_t>(n), f) != static_cast<std::size_t>(n))
    w.clear();
  std::fclose(f);
  return w;
}

struct Line {
  std::string text;
  std::vector<std::int32_t> ids;
};

std::vector<Line> read_reference(const std::string& name) {
  const std::vector<std::uint32_t> w = read_words(name + ".ref");
  std::vector<Line> out;
  if (w.empty()) return out;
  const auto* b = reinterpret_cast<const unsigned char*>(w.data());
  const std::size_t bytes = w.back();
  auto u32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    std::memcpy(&v, b + at, 4);
    return v;
  };
  if (bytes < 8 || std::memcmp(b, "TKR1", 4) != 0) return out;
  std::size_t at = 8;
  for (std::uint32_t i = 0, n = u32(4); i < n && at + 4 <= bytes; ++i) {
    Line l;
    const std::uint32_t len = u32(at);
    l.text.assign(reinterpret_cast<const char*>(b + at + 4), len);
    at += 4 + len;
    const std::uint32_t k = u32(at);
    l.ids.resize(k);
    if (k) std::memcpy(l.ids.data(), b + at + 4, 4 * k);
    at += 4 + 4 * k;
    out.push_back(std::move(l));
  }
  return at == bytes ? out : std::vector<Line>{};
}

// A text SentencePiece cannot give back: invalid UTF-8 (each byte becomes U+FFFD) or U+2581
// itself (the pieces' space mark: it decodes as a space).
bool valid_utf8(const std::string& s) {
  if (s.find("\xE2\x96\x81") != std::string::npos) return false;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80         ? 1
                      : (c >> 5) == 6  ? 2
                      : (c >> 4) == 14 ? 3
                      : (c >> 3) == 30 ? 4
                                       : 0;
    if (len == 0 || i + len > s.size()) return false;
    // Strictness (overlong forms, surrogates) as the tokenizer's: re-encode the code point.
    std::uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = cp << 6 | (d & 0x3F);
    }
    const std::size_t need = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (need != len || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
    i += len;
  }
  return true;
}

/// The ids' text through decode(), piece after piece.
std::string decode_all(const microattn::TokenizerModel& m, const std::vector<std::int32_t>& ids) {
  std::string out;
  char buf[512];
  std::int32_t prev = -1;
  for (const std::int32_t id : ids) {
    std::size_t n = 0;
    if (m.decode(prev, id, buf, sizeof buf, &n) != Status::kOk) return "<decode failed>";
    out.append(buf, n);
    prev = id;
  }
  return out;
}

// Emulated and sanitizer builds (MICROATTN_TEST_QUICK) take every third line: still over
// 10,000 lines, and over 10,000 round trips, per model; the host builds take every line.
#if defined(MICROATTN_TEST_QUICK)
constexpr std::size_t kStride = 3;
#else
constexpr std::size_t kStride = 1;
#endif

Tok g_tok;
std::int32_t g_ids[Tok::kMaxIds];

struct Counts {
  std::size_t lines = 0, mismatches = 0, round_trips = 0, lossy = 0;
  std::int32_t bos = -2, eos = -2;  // the model's (the view dies with check_model's blob)
};

/// Encodes every line of model `name`'s reference; decodes where lossless(line, ids).
template <class Lossless>
Counts check_model(const char* name, Lossless lossless) {
  Counts c;
  const std::vector<std::uint32_t> blob = read_words(std::string(name) + ".mat");
  const std::vector<Line> ref = read_reference(name);
  EXPECT_FALSE(blob.empty() || ref.empty()) << name << ": no test data in " TOKENIZER_DATA_DIR;
  if (blob.empty() || ref.empty()) return c;
  EXPECT_EQ(g_tok.set_blob(blob.data(), blob.back()), Status::kOk) << name;
  c.bos = g_tok.model().bos();
  c.eos = g_tok.model().eos();
  std::size_t index = 0;
  for (const Line& l : ref) {
    if (index++ % kStride != 0) continue;
    ++c.lines;
    std::size_t n = 0;
    const Status s = g_tok.encode(l.text.data(), l.text.size(), false, g_ids, Tok::kMaxIds, &n);
    const std::vector<std::int32_t> got(g_ids, g_ids + (s == Status::kOk ? n : 0));
    if (s != Status::kOk || got != l.ids) {
      if (++c.mismatches <= 5) {
        std::string a, b;
        for (auto v : got) a += std::to_string(v) + " ";
        for (auto v : l.ids) b += std::to_string(v) + " ";
        ADD_FAILURE() << name << ": \"" << l.text << "\"\n  microattn: " << a
                      << "\n  reference: " << b;
      }
      continue;
    }
    if (!lossless(g_tok.model(), l)) {
      ++c.lossy;
      continue;
    }
    ++c.round_trips;
    EXPECT_EQ(decode_all(g_tok.model(), got), l.text) << name;
  }
  std::printf(
      "tokenizer %s: %zu lines, %zu ids differ from the reference; decode(encode(s)) == s "
      "checked on %zu lines (%zu lossy: not checked)\n",
      name, c.lines, c.mismatches, c.round_trips, c.lossy);
  return c;
}

// Byte-level: every line comes back byte for byte, invalid UTF-8 included.
TEST(Tokenizer, ByteLevelMatchesGpt2) {
  const Counts c = check_model("bytelevel", [](const auto&, const Line&) { return true; });
  EXPECT_GE(c.lines, 10000u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_EQ(c.round_trips, c.lines);
  EXPECT_EQ(c.bos, 0);  // <|endoftext|>, from tokenizer_config.json
  EXPECT_EQ(c.eos, 0);
}

TEST(Tokenizer, ByteLevelDigitsAndPrefixSpaceMatchGpt2) {
  const Counts c = check_model("bytelevel_digits", [](const auto&, const Line& l) {
    return !l.text.empty() && l.text[0] == ' ';  // else the prefix space comes back too
  });
  EXPECT_GE(c.lines, 10000u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_GE(c.round_trips, 100u);
  EXPECT_EQ(c.bos, -1);  // no tokenizer_config.json
  EXPECT_EQ(c.eos, -1);
}

std::vector<std::int32_t> encode(Tok& t, const char* text) {
  std::size_t n = 0;
  if (t.encode(text, std::strlen(text), false, g_ids, Tok::kMaxIds, &n) != Status::kOk) n = 0;
  return std::vector<std::int32_t>(g_ids, g_ids + n);
}

// GPT-2's split on its hard cases (contractions, a space before each kind of run, runs of
// spaces before a word and at the end): the ids of the whole are those of its pieces encoded
// alone, so no merge crossed a piece's boundary. SmolLM2's digits: each one alone.
TEST(Tokenizer, ByteLevelSplitCases) {
  static Tok t;
  std::vector<std::uint32_t> blob = read_words("bytelevel.mat");
  ASSERT_FALSE(blob.empty());
  ASSERT_EQ(t.set_blob(blob.data(), blob.back()), Status::kOk);
  EXPECT_EQ(t.model().options(), 0u);
  struct Case {
    const char* text;
    std::vector<const char*> pieces;
  };
  const Case cases[] = {
      {"I'm it's they'll we've 'x",
       {"I", "'m", " it", "'s", " they", "'ll", " we", "'ve", " '", "x"}},
      {"a  b", {"a", " ", " b"}},
      {"a \n\n b\n", {"a", " \n\n", " b", "\n"}},
      {"x!? y,z 12a", {"x", "!?", " y", ",", "z", " 12", "a"}},
  };
  for (const Case& c : cases) {
    std::vector<std::int32_t> parts;
    for (const char* p : c.pieces) {
      const std::vector<std::int32_t> ids = encode(t, p);
      EXPECT_FALSE(ids.empty()) << p;
      parts.insert(parts.end(), ids.begin(), ids.end());
    }
    EXPECT_EQ(encode(t, c.text), parts) << "\"" << c.text << "\"";
  }
  blob = read_words("bytelevel_digits.mat");
  ASSERT_FALSE(blob.empty());
  ASSERT_EQ(t.set_blob(blob.data(), blob.back()), Status::kOk);
  EXPECT_EQ(t.model().options(),
            microattn::TokenizerModel::kSplitDigits | microattn::TokenizerModel::kPrefixSpace);
  std::vector<std::int32_t> want = encode(t, " a");
  for (const char ch : {'2', '0', '2', '4', 'b'})
    want.push_back(t.model().byte_piece(static_cast<std::uint8_t>(ch)));
  EXPECT_EQ(encode(t, "a2024b"), want);
  EXPECT_EQ(encode(t, "a2024b").size(), encode(t, " a").size() + 5);
}

// Byte fallback, no removal of spaces: every valid UTF-8 line comes back.
TEST(Tokenizer, Llama2MatchesSentencePiece) {
  const Counts c =
      check_model("llama2", [](const auto&, const Line& l) { return valid_utf8(l.text); });
  EXPECT_GE(c.lines, 10000u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_GE(c.round_trips, 10000u);
}

// Extra spaces removed: lossless where the line has no leading, trailing or repeated space.
TEST(Tokenizer, Bpe512MatchesSentencePiece) {
  const Counts c = check_model("bpe512", [](const auto&, const Line& l) {
    const std::string& s = l.text;
    return valid_utf8(s) && s.find("  ") == std::string::npos &&
           (s.empty() || (s.front() != ' ' && s.back() != ' '));
  });
  EXPECT_GE(c.lines, 10000u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_GE(c.round_trips, 10000u);
}

// No byte fallback: a line is lossless when no unknown id came out.
TEST(Tokenizer, Bpe512WithUnknownsMatchesSentencePiece) {
  const Counts c = check_model("bpe512_unk", [](const auto& m, const Line& l) {
    for (const std::int32_t id : l.ids)
      if (id == m.unk()) return false;
    return valid_utf8(l.text);
  });
  EXPECT_GE(c.lines, 10000u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_GE(c.lossy, 100u);  // the corpus has characters outside 512 pieces
  EXPECT_GE(c.round_trips, 10000u);
}

TEST(Tokenizer, StatusRules) {
  const std::vector<std::uint32_t> blob = read_words("llama2.mat");
  ASSERT_FALSE(blob.empty());
  static Tok t;  // zero-initialised: empty
  std::size_t n = 99;
  EXPECT_EQ(t.encode("a", 1, false, g_ids, Tok::kMaxIds, &n), Status::kNullPointer);
  EXPECT_EQ(t.model().size(), 0u);
  EXPECT_EQ(t.model().find("a", 1), -1);
  ASSERT_EQ(t.set_blob(blob.data(), blob.back()), Status::kOk);
  EXPECT_EQ(t.model().size(), 32000u);
  EXPECT_EQ(t.model().bos(), 1);
  EXPECT_EQ(t.model().eos(), 2);
  EXPECT_EQ(t.model().unk(), 0);
  EXPECT_EQ(t.model().find("\xE2\x96\x81Hello", 8), 15043);

  // "Hello world" is 3 ids with BOS: [1, 15043, 3186].
  std::int32_t ids[4] = {-7, -7, -7, -7};
  EXPECT_EQ(t.encode("Hello world", 11, true, ids, 2, &n), Status::kBadArgument);
  EXPECT_EQ(ids[0], -7);
  EXPECT_EQ(n, 99u);
  ASSERT_EQ(t.encode("Hello world", 11, true, ids, 3, &n), Status::kOk);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 15043);
  EXPECT_EQ(ids[2], 3186);
  static char long_text[kMaxText + 1];
  EXPECT_EQ(t.encode(long_text, kMaxText + 1, false, g_ids, Tok::kMaxIds, &n),
            Status::kBadTokenCount);
  EXPECT_EQ(t.encode(nullptr, 1, false, g_ids, Tok::kMaxIds, &n), Status::kNullPointer);
  EXPECT_EQ(t.encode(nullptr, 0, false, g_ids, Tok::kMaxIds, &n), Status::kOk);
  EXPECT_EQ(n, 0u);

  char out[8];
  std::size_t k = 0;
  EXPECT_EQ(t.model().decode(1, 15043, out, sizeof out, &k), Status::kOk);  // after BOS
  EXPECT_EQ(std::string(out, k), "Hello");
  EXPECT_EQ(t.model().decode(15043, 3186, out, sizeof out, &k), Status::kOk);
  EXPECT_EQ(std::string(out, k), " world");
  EXPECT_EQ(t.model().decode(15043, 3186, out, 5, &k), Status::kBadArgument);
  EXPECT_EQ(t.model().decode(15043, 13, out, sizeof out, &k), Status::kOk);  // <0x0A>
  EXPECT_EQ(std::string(out, k), "\n");
  EXPECT_EQ(t.model().decode(15043, 2, out, sizeof out, &k), Status::kOk);  // EOS: nothing
  EXPECT_EQ(k, 0u);
  EXPECT_EQ(t.model().decode(15043, 32000, out, sizeof out, &k), Status::kBadArgument);
}

TEST(Tokenizer, RefusesDamagedFiles) {
  std::vector<std::uint32_t> blob = read_words("bpe512.mat");
  ASSERT_FALSE(blob.empty());
  const std::size_t bytes = blob.back();
  static Tok t;
  ASSERT_EQ(t.set_blob(blob.data(), bytes), Status::kOk);
  const std::size_t size = t.model().size();
  auto refused = [&](std::vector<std::uint32_t> b, std::size_t n) {
    return t.set_blob(b.data(), n) == Status::kBadArgument && t.model().size() == size;
  };
  EXPECT_TRUE(refused(blob, bytes - 16));  // shorter than its header says
  auto w = blob;
  w[0] ^= 1;  // magic
  EXPECT_TRUE(refused(w, bytes));
  w = blob;
  w[1] = 2;  // version
  EXPECT_TRUE(refused(w, bytes));
  w = blob;
  w[13] += 2;  // the index's offset: its entries shifted, not sorted or not normal pieces
  EXPECT_TRUE(refused(w, bytes));
  w = blob;
  const std::size_t idx = w[13] / 4;
  std::swap(w[idx], w[idx + 1]);  // two index entries out of order
  EXPECT_TRUE(refused(w, bytes));
  w = blob;
  w[6] = 5;  // unk id: not an unknown piece's id is allowed (any id), but past the end is not
  w[6] = static_cast<std::uint32_t>(size);
  EXPECT_TRUE(refused(w, bytes));
  w = blob;
  w[10] = 0xFFFFFFF0u;  // the offsets table outside the file
  EXPECT_TRUE(refused(w, bytes));
  EXPECT_EQ(t.set_blob(nullptr, bytes), Status::kNullPointer);
  EXPECT_EQ(t.model().size(), size);
}

// The byte-level block: its size word, options, the merge table's order and ids, the classes.
TEST(Tokenizer, RefusesDamagedByteLevelFiles) {
  const std::vector<std::uint32_t> blob = read_words("bytelevel.mat");
  ASSERT_FALSE(blob.empty());
  const std::size_t bytes = blob.back();
  static Tok t;
  ASSERT_EQ(t.set_blob(blob.data(), bytes), Status::kOk);
  ASSERT_TRUE(t.model().byte_level());
  const std::size_t size = t.model().size(), block = blob[18] / 4;
  const std::size_t merges = blob[block + 3] / 4, ranges = blob[block + 5] / 4;
  ASSERT_GE(t.model().merge_rank(static_cast<std::int32_t>(blob[merges]),
                                 static_cast<std::int32_t>(blob[merges + 1])),
            0);
  auto refused = [&](std::vector<std::uint32_t> b) {
    return t.set_blob(b.data(), bytes) == Status::kBadArgument && t.model().size() == size;
  };
  auto changed = [&](std::size_t i, std::uint32_t v) {
    std::vector<std::uint32_t> w = blob;
    w[i] = v;
    return w;
  };
  EXPECT_TRUE(refused(changed(19, 0)));                         // no block
  EXPECT_TRUE(refused(changed(3, 1)));                          // SentencePiece with a block
  EXPECT_TRUE(refused(changed(block, 2)));                      // another split
  EXPECT_TRUE(refused(changed(block + 1, 4)));                  // an unknown option
  EXPECT_TRUE(refused(changed(block + 2, 1u << 24)));           // the merge table past the file
  EXPECT_TRUE(refused(changed(merges, blob[merges + 3] + 1)));  // merges out of order
  EXPECT_TRUE(refused(changed(merges + 2, 1u << 24)));          // a rank of 2^24
  EXPECT_TRUE(refused(changed(ranges + 1, blob[ranges + 1] | 4u << 24)));       // class 4..7
  EXPECT_TRUE(refused(changed(ranges, 0x110000)));                              // past U+10FFFF
  EXPECT_TRUE(refused(changed(blob[15] / 4 + 'a', blob[blob[15] / 4 + 'b'])));  // byte table
}

}  // namespace
