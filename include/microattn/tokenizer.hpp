// SPDX-License-Identifier: Apache-2.0
// microattn::Tokenizer: SentencePiece BPE by piece scores (Llama 2, TinyLlama, llama2.c's
// TinyStories models) and byte-level BPE by merge ranks (GPT-2, SmolLM2) on the device. The
// vocabulary is a tokenizer file (tools/tokenizer.py; docs/model-format.md, "Tokenizer file") read
// in place, flash included, with the sorted index the tool precomputed: nothing is sorted, hashed
// or allocated at run time. Encode's scratch is sized by a compile-time maximum text length and
// lives in the object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "microattn/status.hpp"

namespace microattn {

/// A piece's type (SentencePiece's numbering).
enum class PieceType : std::uint8_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,  ///< BOS, EOS: never produced from text, decoded as nothing
  kByte = 6,     ///< <0xNN>: byte fallback
};

/// A view of a tokenizer file: the pieces, their scores and types, the index, the settings.
/// Zero-initialised (or before set_blob): empty, every query answers "none".
class TokenizerModel {
 public:
  static constexpr std::uint32_t kMagic = 0x4B54414Du;  // "MATK"
  static constexpr std::uint32_t kVersion = 1;
  static constexpr std::uint32_t kHeaderWords = 20;
  /// Header word 5's bits: SentencePiece's normalizer and trainer settings.
  static constexpr std::uint32_t kDummyPrefix = 1;        ///< a space before non-empty text
  static constexpr std::uint32_t kRemoveExtraSpaces = 2;  ///< leading, trailing, repeated ' '
  static constexpr std::uint32_t kEscapeSpaces = 4;       ///< ' ' is U+2581 in the pieces
  static constexpr std::uint32_t kByteFallback = 8;       ///< unknown text as <0xNN> pieces
  /// Header word 3: the algorithm.
  static constexpr std::uint32_t kSentencePiece = 1;  ///< BPE by piece scores
  static constexpr std::uint32_t kByteLevel = 2;      ///< byte-level BPE by merge ranks
  /// The byte-level block's options (word 1).
  static constexpr std::uint32_t kSplitDigits = 1;  ///< every \p{N} character a piece of its own
  static constexpr std::uint32_t kPrefixSpace = 2;  ///< ' ' before text not starting with one
  /// Code-point classes of GPT-2's split (the class table; any other code point is 0).
  static constexpr std::uint32_t kLetter = 1, kNumber = 2, kSpace = 3;

  /// Points the view at a tokenizer file (4-byte aligned; it must stay). Checks every table
  /// against the file's size, the offsets' order, the index's order and types.
  /// @return kOk; kNullPointer; kBadArgument (not a valid file; the view unchanged).
  [[nodiscard]] Status set_blob(const void* blob, std::size_t bytes) noexcept {
    if (!blob) return Status::kNullPointer;
    TokenizerModel m;
    m.b_ = static_cast<const unsigned char*>(blob);
    m.bytes_ = bytes;
    if (!m.valid()) return Status::kBadArgument;
    *this = m;
    return Status::kOk;
  }
  /// The view of a file that set_blob accepted before (kept as its pointer and size, as the
  /// C API's microattn_tokenizer does), without checking it again.
  static TokenizerModel accepted(const void* blob, std::size_t bytes) noexcept {
    TokenizerModel m;
    m.b_ = static_cast<const unsigned char*>(blob);
    m.bytes_ = blob ? bytes : 0;
    return m;
  }
  [[nodiscard]] const void* blob() const noexcept { return b_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }
  [[nodiscard]] bool ready() const noexcept { return b_ != nullptr; }
  [[nodiscard]] std::size_t size() const noexcept { return ready() ? word(4) : 0; }
  [[nodiscard]] std::uint32_t flags() const noexcept { return ready() ? word(5) : 0; }
  [[nodiscard]] std::uint32_t kind() const noexcept { return ready() ? word(3) : 0; }
  [[nodiscard]] bool byte_level() const noexcept { return kind() == kByteLevel; }
  /// The byte-level block's options (kSplitDigits, kPrefixSpace); 0 for SentencePiece.
  [[nodiscard]] std::uint32_t options() const noexcept { return byte_level() ? block(1) : 0; }
  [[nodiscard]] std::int32_t unk() const noexcept { return special(6); }
  [[nodiscard]] std::int32_t bos() const noexcept { return special(7); }
  [[nodiscard]] std::int32_t eos() const noexcept { return special(8); }
  /// The longest piece, in bytes.
  [[nodiscard]] std::size_t max_piece_bytes() const noexcept { return ready() ? word(9) : 0; }

  /// Piece id's bytes (the model's text: U+2581 for a space), length in *len; null outside.
  const char* piece(std::int32_t id, std::size_t* len) const noexcept {
    if (!has(id)) return nullptr;
    const std::uint32_t a = table(10, std::size_t(id)), e = table(10, std::size_t(id) + 1);
    if (len) *len = e - a;
    return reinterpret_cast<const char*>(b_ + word(16) + a);
  }
  [[nodiscard]] float score(std::int32_t id) const noexcept {
    float s = 0.0f;
    if (has(id)) std::memcpy(&s, b_ + word(11) + 4 * std::size_t(id), sizeof s);
    return s;
  }
  [[nodiscard]] PieceType type(std::int32_t id) const noexcept {
    return has(id) ? static_cast<PieceType>(b_[word(12) + std::size_t(id)]) : PieceType::kUnknown;
  }
  /// The normal piece whose bytes are s[0..n), or -1: a binary search of the index.
  [[nodiscard]] std::int32_t find(const char* s, std::size_t n) const noexcept {
    std::size_t lo = 0, hi = ready() ? word(14) : 0;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const std::int32_t id = static_cast<std::int32_t>(table(13, mid));
      const int c = compare(id, s, n);
      if (c == 0) return id;
      if (c < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    return -1;
  }
  /// The rank of the byte-level merge of pieces left and right, or -1: a binary search of the
  /// merge table (ordered by left, then right).
  [[nodiscard]] std::int32_t merge_rank(std::int32_t left, std::int32_t right) const noexcept {
    std::size_t lo = 0, hi = byte_level() ? block(2) : 0;
    const auto l = static_cast<std::uint32_t>(left), r = static_cast<std::uint32_t>(right);
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const std::uint32_t ml = merge(mid, 0), mr = merge(mid, 1);
      if (ml == l && mr == r) return static_cast<std::int32_t>(merge(mid, 2));
      if (ml < l || (ml == l && mr < r))
        lo = mid + 1;
      else
        hi = mid;
    }
    return -1;
  }
  /// Code point cp's class in GPT-2's split (kLetter, kNumber, kSpace; 0: any other).
  [[nodiscard]] std::uint32_t char_class(std::uint32_t cp) const noexcept {
    std::size_t lo = 0, hi = byte_level() ? block(4) : 0;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const std::uint32_t first = range(mid, 0), last = range(mid, 1);
      if (cp < first)
        hi = mid;
      else if (cp > (last & 0xFFFFFFu))
        lo = mid + 1;
      else
        return last >> 24;
    }
    return 0;
  }
  /// The byte-fallback piece of byte v (byte-level: the piece of that one byte), or -1.
  [[nodiscard]] std::int32_t byte_piece(std::uint8_t v) const noexcept {
    return ready() ? static_cast<std::int32_t>(table(15, v)) : -1;
  }

  /// The text token id stands for after token prev (prev < 0: the first): U+2581 as ' ', a
  /// byte piece its byte, control pieces nothing, the unknown piece " \xE2\x81\x87 "
  /// (SentencePiece's); with kDummyPrefix the first piece (prev < 0 or a control piece) loses
  /// one leading space. Byte pieces can end mid-character: the caller joins the bytes.
  /// @return kOk (*n bytes in out); kNullPointer; kBadArgument (id outside the vocabulary or
  ///         cap below the piece's text: nothing written).
  [[nodiscard]] Status decode(std::int32_t prev, std::int32_t id, char* out, std::size_t cap,
                              std::size_t* n) const noexcept {
    if (!out || !n || !ready()) return Status::kNullPointer;
    if (!has(id)) return Status::kBadArgument;
    std::size_t len = 0;
    const char* p = piece(id, &len);
    const PieceType t = type(id);
    if (byte_level()) {  // the pieces are the text's bytes
      if (t == PieceType::kControl) len = 0;
      if (len > cap) return Status::kBadArgument;
      if (len) std::memcpy(out, p, len);
      *n = len;
      return Status::kOk;
    }
    char one = 0;
    if (t == PieceType::kControl) {
      len = 0;
    } else if (t == PieceType::kByte) {
      one = static_cast<char>(byte_of(p, len));
      p = &one;
      len = 1;
    } else if (t == PieceType::kUnknown) {
      p = " \xE2\x81\x87 ";
      len = 5;
    }
    const bool first = prev < 0 || type(prev) == PieceType::kControl;
    const bool strip = first && (flags() & kDummyPrefix) && t == PieceType::kNormal;
    return copy_text(p, len, strip, out, cap, n);
  }

 private:
  [[nodiscard]] std::uint32_t word(std::size_t i) const noexcept {
    std::uint32_t v = 0;
    std::memcpy(&v, b_ + 4 * i, sizeof v);
    return v;
  }
  // Entry i of the u32 table whose offset header word w holds.
  [[nodiscard]] std::uint32_t table(std::size_t w, std::size_t i) const noexcept {
    std::uint32_t v = 0;
    std::memcpy(&v, b_ + word(w) + 4 * i, sizeof v);
    return v;
  }
  // Word i of the byte-level block; entry i's word k of the merge (3 words) and class tables.
  [[nodiscard]] std::uint32_t block(std::size_t i) const noexcept {
    std::uint32_t v = 0;
    std::memcpy(&v, b_ + word(18) + 4 * i, sizeof v);
    return v;
  }
  [[nodiscard]] std::uint32_t merge(std::size_t i, std::size_t k) const noexcept {
    std::uint32_t v = 0;
    std::memcpy(&v, b_ + block(3) + 4 * (3 * i + k), sizeof v);
    return v;
  }
  [[nodiscard]] std::uint32_t range(std::size_t i, std::size_t k) const noexcept {
    std::uint32_t v = 0;
    std::memcpy(&v, b_ + block(5) + 4 * (2 * i + k), sizeof v);
    return v;
  }
  [[nodiscard]] std::int32_t special(std::size_t w) const noexcept {
    return ready() ? static_cast<std::int32_t>(word(w)) : -1;
  }
  [[nodiscard]] bool has(std::int32_t id) const noexcept {
    return id >= 0 && std::size_t(id) < size();
  }
  [[nodiscard]] int compare(std::int32_t id, const char* s, std::size_t n) const noexcept {
    std::size_t len = 0;
    const char* p = piece(id, &len);
    const int c = std::memcmp(p, s, len < n ? len : n);
    return c != 0 ? c : (len < n ? -1 : len > n ? 1 : 0);
  }
  static unsigned byte_of(const char* p, std::size_t len) noexcept {  // "<0xNN>"
    unsigned v = 0;
    for (std::size_t i = 3; i < 5 && i < len; ++i) {
      const char c = p[i];
      v = v * 16 + static_cast<unsigned>(c <= '9' ? c - '0' : c - 'A' + 10);
    }
    return v;
  }
  // The piece's text with U+2581 as ' ', one leading space dropped when strip.
  static Status copy_text(const char* p, std::size_t len, bool strip, char* out, std::size_t cap,
                          std::size_t* n) noexcept {
    std::size_t need = 0;
    for (int pass = 0; pass < 2; ++pass) {
      std::size_t o = 0;
      bool drop = strip;
      for (std::size_t i = 0; i < len;) {
        const bool mark = i + 3 <= len && std::memcmp(p + i, "\xE2\x96\x81", 3) == 0;
        const char c = mark || p[i] == ' ' ? ' ' : p[i];
        i += mark ? 3 : 1;
        if (drop && c == ' ') {
          drop = false;
          continue;
        }
        drop = false;
        if (pass == 1) out[o] = c;
        ++o;
      }
      if (pass == 0 && o > cap) return Status::kBadArgument;
      need = o;
    }
    *n = need;
    return Status::kOk;
  }
  [[nodiscard]] bool valid() const noexcept;
  [[nodiscard]] bool valid_tables() const noexcept;
  [[nodiscard]] bool valid_block() const noexcept;

  const unsigned char* b_ = nullptr;
  std::size_t bytes_ = 0;
};

inline bool TokenizerModel::valid() const noexcept {
  if (reinterpret_cast<std::uintptr_t>(b_) % 4 != 0 || bytes_ < std::size_t{4} * kHeaderWords)
    return false;
  if (word(0) != kMagic || word(1) != kVersion || word(2) != bytes_) return false;
  if (word(3) != kSentencePiece && word(3) != kByteLevel) return false;
  if (word(3) == kSentencePiece ? word(18) != 0 || word(19) != 0 : !valid_block()) return false;
  const std::size_t n = word(4);
  if (n == 0 || n >= (std::size_t{1} << 24) || word(14) > n) return false;
  for (std::size_t w = 6; w <= 8; ++w)
    if (word(w) != 0xFFFFFFFFu && word(w) >= n) return false;
  // Each table inside the file and 4-byte aligned (the types: bytes).
  const std::size_t words[] = {10, 11, 12, 13, 15};  // offsets, scores, types, index, bytes
  const std::size_t sizes[] = {4 * (n + 1), 4 * n, n, 4 * std::size_t(word(14)),
                               std::size_t{4} * 256};
  for (std::size_t t = 0; t < 5; ++t) {
    const std::size_t at = word(words[t]);
    if (at % 4 != 0 || at < std::size_t{4} * kHeaderWords || at > bytes_ || sizes[t] > bytes_ - at)
      return false;
  }
  if (word(16) > bytes_ || word(17) > bytes_ - word(16)) return false;
  return valid_tables();
}

inline bool TokenizerModel::valid_tables() const noexcept {
  const std::size_t n = word(4), pool = word(17);
  if (table(10, 0) != 0 || table(10, n) != pool) return false;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = table(10, i), e = table(10, i + 1);
    const std::uint8_t t = b_[word(12) + i];
    if (e < a || e - a > 255 || e == a) return false;
    if (t != 1 && t != 2 && t != 3 && t != 6) return false;
    if (word(3) == kByteLevel && t != 1 && t != 3) return false;  // normal and special only
    longest = e - a > longest ? e - a : longest;
  }
  if (longest != word(9)) return false;
  for (std::size_t i = 0; i < word(14); ++i) {  // normal pieces, strictly increasing
    const std::uint32_t id = table(13, i);
    if (id >= n || b_[word(12) + id] != 1) return false;
    if (i > 0) {
      std::size_t len = 0;
      const char* p = piece(static_cast<std::int32_t>(id), &len);
      if (compare(static_cast<std::int32_t>(table(13, i - 1)), p, len) >= 0) return false;
    }
  }
  for (std::size_t v = 0; v < 256; ++v) {
    const std::uint32_t id = table(15, v);
    if (word(3) == kByteLevel) {  // every byte's own one-byte piece
      std::size_t len = 0;
      if (id >= n || b_[word(12) + id] != 1) return false;
      const char* p = piece(static_cast<std::int32_t>(id), &len);
      if (len != 1 || static_cast<unsigned char>(p[0]) != v) return false;
    } else if (id != 0xFFFFFFFFu && (id >= n || b_[word(12) + id] != 6)) {
      return false;
    }
  }
  return true;
}

// The byte-level block (8 words at word 18's offset): GPT-2's split, known options, the merge
// table {left, right, rank} strictly ordered by (left, right) over normal pieces with ranks below
// 2^24, the class table {first, last | class << 24} ordered and disjoint below U+110000.
inline bool TokenizerModel::valid_block() const noexcept {
  const std::size_t at = word(18), n = word(4);
  if (word(19) != 32 || at % 4 != 0 || at < std::size_t{4} * kHeaderWords || at > bytes_ ||
      bytes_ - at < 32)
    return false;
  if (block(0) != 1 || (block(1) & ~(kSplitDigits | kPrefixSpace)) != 0) return false;
  const std::size_t merges = block(2), ranges = block(4);
  const std::size_t tables[] = {block(3), block(5)}, sizes[] = {12 * merges, 8 * ranges};
  for (std::size_t t = 0; t < 2; ++t)
    if (tables[t] % 4 != 0 || tables[t] > bytes_ || merges >= (std::size_t{1} << 24) ||
        ranges >= (std::size_t{1} << 21) || sizes[t] > bytes_ - tables[t])
      return false;
  for (std::size_t i = 0; i < merges; ++i) {
    const std::uint32_t l = merge(i, 0), r = merge(i, 1);
    if (l >= n || r >= n || merge(i, 2) >= (1u << 24)) return false;
    if (i > 0 && !(merge(i - 1, 0) < l || (merge(i - 1, 0) == l && merge(i - 1, 1) < r)))
      return false;
  }
  for (std::size_t i = 0; i < ranges; ++i) {
    const std::uint32_t first = range(i, 0), last = range(i, 1) & 0xFFFFFFu, c = range(i, 1) >> 24;
    if (first > last || last > 0x10FFFFu || c < 1 || c > 3) return false;
    if (i > 0 && first <= (range(i - 1, 1) & 0xFFFFFFu)) return false;
  }
  return true;
}

/// One symbol of encode's work: bytes of the normalised text and the pair it starts.
struct TokenSymbol {
  std::uint32_t start, len;  // bytes of the normalised text
  std::int32_t next, id;     // next live symbol (-1: the last); the piece (-1: none)
  std::int32_t pair_id;      // the piece of this symbol joined with next, or -1
  float pair_score;
};

/// Bytes of encode scratch for texts of up to max_text bytes: a symbol per byte plus the dummy
/// prefix, and the normalised text (every byte can become 3: a space as U+2581, an invalid
/// byte as U+FFFD; plus the prefix).
constexpr std::size_t tokenizer_scratch_bytes(std::size_t max_text) noexcept {
  return sizeof(TokenSymbol) * (max_text + 1) + 3 * max_text + 3;
}
/// encode's largest id count for max_text bytes (BOS, one byte piece per normalised byte).
constexpr std::size_t tokenizer_max_ids(std::size_t max_text) noexcept { return 3 * max_text + 4; }

namespace internal {

/// SentencePiece BPE encode of one text over caller-owned scratch (tokenizer_encode).
class Encoder {
 public:
  Encoder(const TokenizerModel& m, TokenSymbol* sym, char* buf) noexcept
      : m_(m), sym_(sym), buf_(buf) {}
  std::size_t normalize(const char* text, std::size_t n) noexcept;
  std::size_t split_and_merge(const char* text, std::size_t n) noexcept;
  void merge(std::int32_t first) noexcept;
  std::size_t emit(std::size_t count, std::int32_t* out) const noexcept;

 private:
  static std::size_t utf8_length(const unsigned char* p, std::size_t left) noexcept;
  [[nodiscard]] std::uint32_t class_at(std::size_t i, std::size_t end,
                                       std::size_t* len) const noexcept;
  [[nodiscard]] std::size_t stretch_end(std::size_t i, std::size_t end) const noexcept;
  [[nodiscard]] std::size_t piece_end(std::size_t i, std::size_t end) const noexcept;
  void append(std::size_t& m, std::size_t& count, const char* s, std::size_t len) noexcept {
    std::memcpy(buf_ + m, s, len);
    sym_[count] = TokenSymbol{static_cast<std::uint32_t>(m),
                              static_cast<std::uint32_t>(len),
                              -1,
                              m_.find(s, len),
                              -1,
                              0.0f};
    if (count > 0) sym_[count - 1].next = static_cast<std::int32_t>(count);
    m += len;
    ++count;
  }
  // The piece symbol i makes with the next and its priority: SentencePiece, the joined text's
  // score; byte-level, minus the merge's rank (a pair that is no merge is none).
  void pair(std::size_t i) noexcept {
    TokenSymbol& s = sym_[i];
    s.pair_id = -1;
    s.pair_score = 0.0f;
    if (s.next < 0) return;
    const TokenSymbol& t = sym_[s.next];
    std::int32_t rank = 0;
    if (m_.byte_level() && (rank = m_.merge_rank(s.id, t.id)) < 0) return;
    s.pair_id = m_.find(buf_ + s.start, s.len + t.len);
    if (s.pair_id >= 0) s.pair_score = m_.byte_level() ? -float(rank) : m_.score(s.pair_id);
  }

  const TokenizerModel& m_;
  TokenSymbol* sym_;
  char* buf_;
};

// The length of the valid UTF-8 character at p (strict: no overlong forms, surrogates or code
// points past U+10FFFF), or 0.
inline std::size_t Encoder::utf8_length(const unsigned char* p, std::size_t left) noexcept {
  const unsigned c = p[0];
  if (c < 0x80) return 1;
  std::size_t len = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    lo = c == 0xE0 ? 0xA0 : 0x80;
    hi = c == 0xED ? 0x9F : 0xBF;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    lo = c == 0xF0 ? 0x90 : 0x80;
    hi = c == 0xF4 ? 0x8F : 0xBF;
  } else {
    return 0;
  }
  if (left < len || p[1] < lo || p[1] > hi) return 0;
  for (std::size_t i = 2; i < len; ++i)
    if (p[i] < 0x80 || p[i] > 0xBF) return 0;
  return len;
}

// The normalised text and one symbol per character: SentencePiece's identity normaliser with
// the file's settings. Returns the symbol count.
inline std::size_t Encoder::normalize(const char* text, std::size_t n) noexcept {
  const std::uint32_t f = m_.flags();
  const bool squeeze = f & TokenizerModel::kRemoveExtraSpaces;
  const char* space = f & TokenizerModel::kEscapeSpaces ? "\xE2\x96\x81" : " ";
  const std::size_t space_len = f & TokenizerModel::kEscapeSpaces ? 3 : 1;
  const auto* t = reinterpret_cast<const unsigned char*>(text);
  std::size_t i = 0, end = n, m = 0, count = 0;
  if (squeeze) {
    while (i < end && t[i] == ' ') ++i;
    while (end > i && t[end - 1] == ' ') --end;
  }
  if (i == end) return 0;
  if (f & TokenizerModel::kDummyPrefix) append(m, count, space, space_len);
  bool prev_space = squeeze;  // (the dummy prefix counts as one)
  while (i < end) {
    if (t[i] == ' ') {
      if (!(squeeze && prev_space)) append(m, count, space, space_len);
      prev_space = true;
      ++i;
      continue;
    }
    prev_space = false;
    const std::size_t len = utf8_length(t + i, end - i);
    if (len == 0) {
      append(m, count, "\xEF\xBF\xBD", 3);  // U+FFFD
      ++i;
    } else {
      append(m, count, text + i, len);
      i += len;
    }
  }
  return count;
}

// Merges the best-scoring adjacent pair (the leftmost on a tie) of the symbol list from first
// (-1: empty) until no pair is a piece.
inline void Encoder::merge(std::int32_t first) noexcept {
  for (std::int32_t i = first; i >= 0; i = sym_[i].next) pair(static_cast<std::size_t>(i));
  for (;;) {
    std::int32_t best = -1, before = -1;  // the pair to merge, and the live symbol before it
    for (std::int32_t i = first, p = -1; i >= 0; p = i, i = sym_[i].next)
      if (sym_[i].pair_id >= 0 && (best < 0 || sym_[i].pair_score > sym_[best].pair_score)) {
        best = i;
        before = p;
      }
    if (best < 0) return;
    TokenSymbol& s = sym_[best];
    s.len += sym_[s.next].len;
    s.id = s.pair_id;
    s.next = sym_[s.next].next;
    pair(static_cast<std::size_t>(best));
    if (before >= 0) pair(static_cast<std::size_t>(before));  // its pair ends later now
  }
}

// The class of the character at buf_[i] (an invalid UTF-8 byte: one character of class 0) and
// its length in *len.
inline std::uint32_t Encoder::class_at(std::size_t i, std::size_t end,
                                       std::size_t* len) const noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(buf_ + i);
  *len = utf8_length(p, end - i);
  if (*len == 0) {
    *len = 1;
    return 0;
  }
  std::uint32_t cp = *len == 1 ? p[0] : p[0] & (0x7Fu >> *len);
  for (std::size_t k = 1; k < *len; ++k) cp = cp << 6 | (p[k] & 0x3Fu);
  return m_.char_class(cp);
}

// The end of the stretch of text from i the split runs on: with kSplitDigits a number
// character alone, or the text up to the next one (Hugging Face's Digits(individual_digits)).
inline std::size_t Encoder::stretch_end(std::size_t i, std::size_t end) const noexcept {
  if (!(m_.options() & TokenizerModel::kSplitDigits)) return end;
  std::size_t len = 0;
  if (class_at(i, end, &len) == TokenizerModel::kNumber) return i + len;
  while (i < end && class_at(i, end, &len) != TokenizerModel::kNumber) i += len;
  return i;
}

// The end of the piece GPT-2's split takes at i of a stretch ending at end, its pattern's
// alternatives in order: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|
// \s+(?!\S)|\s+.
inline std::size_t Encoder::piece_end(std::size_t i, std::size_t end) const noexcept {
  const char* t = buf_;
  if (t[i] == '\'' && i + 1 < end) {
    const char c = t[i + 1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
    if (i + 2 < end && ((c == 'r' && t[i + 2] == 'e') || (c == 'v' && t[i + 2] == 'e') ||
                        (c == 'l' && t[i + 2] == 'l')))
      return i + 3;
  }
  std::size_t len = 0, j = i;
  std::uint32_t cls = class_at(i, end, &len);
  if (t[i] == ' ' && i + 1 < end) {  // the optional space before a letter, number or other run
    std::size_t len2 = 0;
    const std::uint32_t next = class_at(i + 1, end, &len2);
    if (next != TokenizerModel::kSpace) cls = next, j = i + 1, len = len2;
  }
  if (cls != TokenizerModel::kSpace) {
    for (j += len; j < end && class_at(j, end, &len) == cls;) j += len;
    return j;
  }
  // A run of spaces: all of it at the stretch's end, else less its last character (which
  // then starts the next piece) when that leaves one.
  std::size_t last = i;
  for (j = i; j < end && class_at(j, end, &len) == TokenizerModel::kSpace; j += len) last = j;
  return j == end || last == i ? j : last;
}

// Byte-level BPE: the text (a space before it with kPrefixSpace) split into pieces, each piece
// a symbol per byte merged by rank on its own; the pieces' symbols linked in order. Returns the
// symbol count.
inline std::size_t Encoder::split_and_merge(const char* text, std::size_t n) noexcept {
  std::size_t m = 0, count = 0;
  if (n && (m_.options() & TokenizerModel::kPrefixSpace) && text[0] != ' ') buf_[m++] = ' ';
  if (n) std::memcpy(buf_ + m, text, n);
  m += n;
  std::int32_t tail = -1;  // the last live symbol of the pieces merged so far
  for (std::size_t i = 0; i < m;) {
    for (const std::size_t e = stretch_end(i, m); i < e;) {
      const std::size_t p = piece_end(i, e), first = count;
      for (; i < p; ++i, ++count) {
        const std::int32_t id = m_.byte_piece(static_cast<std::uint8_t>(buf_[i]));
        sym_[count] = TokenSymbol{static_cast<std::uint32_t>(i), 1, -1, id, -1, 0.0f};
        if (count > first) sym_[count - 1].next = static_cast<std::int32_t>(count);
      }
      merge(static_cast<std::int32_t>(first));
      if (tail >= 0) sym_[tail].next = static_cast<std::int32_t>(first);
      for (tail = static_cast<std::int32_t>(first); sym_[tail].next >= 0;) tail = sym_[tail].next;
    }
  }
  return count;
}

// The ids of the merged symbols into out (null: only counted): byte pieces for a symbol outside
// the vocabulary (byte fallback), else one unknown id per run of them.
inline std::size_t Encoder::emit(std::size_t count, std::int32_t* out) const noexcept {
  const bool bytes = m_.flags() & TokenizerModel::kByteFallback;
  std::size_t o = 0;
  bool prev_unknown = false;
  for (std::int32_t i = count ? 0 : -1; i >= 0; i = sym_[i].next) {
    const TokenSymbol& s = sym_[i];
    if (s.id >= 0) {
      if (out) out[o] = s.id;
      ++o;
      prev_unknown = false;
    } else if (bytes) {
      for (std::uint32_t k = 0; k < s.len; ++k, ++o) {
        const std::int32_t b = m_.byte_piece(static_cast<std::uint8_t>(buf_[s.start + k]));
        if (out) out[o] = b >= 0 ? b : m_.unk();
      }
      prev_unknown = false;
    } else if (!prev_unknown) {
      if (out) out[o] = m_.unk();
      ++o;
      prev_unknown = true;
    }
  }
  return o;
}

}  // namespace internal

/// The ids of UTF-8 text[0..n), BOS first when add_bos, as SentencePiece encodes it: the
/// model's normalisation (invalid UTF-8: each byte U+FFFD), then the pair of adjacent symbols
/// whose joined text is the best-scoring piece merged (the leftmost on a tie) until none is;
/// what is left outside the vocabulary as byte pieces (byte fallback) or one unknown id per
/// run. A byte-level model (GPT-2's algorithm): the text split by GPT-2's pattern (with the
/// model's options), each piece's bytes merged by the lowest merge rank (the leftmost on a tie);
/// invalid UTF-8 kept byte for byte; special tokens are not looked for in the text.
/// scratch: tokenizer_scratch_bytes(n) or more, 4-byte aligned, the caller's.
/// @return kOk (*n_ids ids in ids); kNullPointer (or the model empty); kBadTokenCount (scratch
///         too small for n bytes); kBadArgument (cap below the count, scratch misaligned:
///         nothing written).
inline Status tokenizer_encode(const TokenizerModel& m, void* scratch, std::size_t scratch_bytes,
                               const char* text, std::size_t n, bool add_bos, std::int32_t* ids,
                               std::size_t cap, std::size_t* n_ids) noexcept {
  if ((!text && n) || !ids || !n_ids || !scratch || !m.ready()) return Status::kNullPointer;
  if (n >= (std::size_t{1} << 24) || tokenizer_scratch_bytes(n) > scratch_bytes)
    return Status::kBadTokenCount;
  if (reinterpret_cast<std::uintptr_t>(scratch) % alignof(TokenSymbol) != 0)
    return Status::kBadArgument;
  // (TokenSymbol is trivial: the scratch bytes hold its objects from their first write, as
  // P0593 implicit object creation; no placement new in the library.)
  auto* sym = static_cast<TokenSymbol*>(scratch);
  internal::Encoder e(m, sym, reinterpret_cast<char*>(sym + n + 1));
  std::size_t count = 0;
  if (m.byte_level()) {
    count = e.split_and_merge(text, n);
  } else {
    count = e.normalize(text, n);
    e.merge(count ? 0 : -1);
  }
  const std::size_t bos = add_bos && m.bos() >= 0 ? 1 : 0;
  const std::size_t total = bos + e.emit(count, nullptr);
  if (total > cap) return Status::kBadArgument;
  if (bos) ids[0] = m.bos();
  (void)e.emit(count, ids + bos);
  *n_ids = total;
  return Status::kOk;
}

/// A tokenizer with the scratch for texts of up to kMaxText bytes in the object.
/// Zero-initialised it is an empty tokenizer (set_blob first).
template <std::size_t kMaxText>
class Tokenizer {
  static_assert(kMaxText >= 1 && kMaxText < (std::size_t{1} << 24),
                "microattn::Tokenizer: kMaxText 1 .. 2^24 - 1 bytes");

 public:
  /// encode()'s largest count: size ids by it.
  static constexpr std::size_t kMaxIds = tokenizer_max_ids(kMaxText);

  /// TokenizerModel::set_blob. @return as it.
  [[nodiscard]] Status set_blob(const void* blob, std::size_t bytes) noexcept {
    return model_.set_blob(blob, bytes);
  }
  [[nodiscard]] const TokenizerModel& model() const noexcept { return model_; }

  /// tokenizer_encode() with the object's scratch. @return as it (kBadTokenCount: n >
  /// kMaxText).
  [[nodiscard]] Status encode(const char* text, std::size_t n, bool add_bos, std::int32_t* ids,
                              std::size_t cap, std::size_t* n_ids) noexcept {
    return tokenizer_encode(model_, scratch_, sizeof scratch_, text, n, add_bos, ids, cap, n_ids);
  }

 private:
  alignas(TokenSymbol) unsigned char scratch_[tokenizer_scratch_bytes(kMaxText)];
  TokenizerModel model_;
};

}  // namespace microattn
