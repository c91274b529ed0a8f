// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: KvAttention operation sequences (prefill(T) / decode / truncate(n) / reset /
// set_rope / set_scale / set_weights / export_cache + import_cache) chosen by the input, with
// chunked prefill, argument errors and y overlapping x at fuzzer-chosen offsets.
//
// Three objects run side by side:
//   A  gets every call, with the fuzzer's (possibly overlapping or invalid) buffers;
//   B  (the twin) gets only the calls A accepted, on separate buffers: A's outputs must equal
//      B's bit for bit (a refused call left nothing behind, an accepted overlap computed right);
//   C  gets B's calls, but each append first runs with the later rows poisoned (NaN, Inf, ...),
//      is truncated back and re-run: outputs of earlier tokens, and everything after the
//      truncation, must equal B's bit for bit.
// Invariants and input format: tests/fuzz/README.md.
#include <utility>

#include "fuzz_common.hpp"

namespace {

using namespace fz;
using microattn::Bias;
using microattn::Config;
using microattn::OutProj;

// K0/K1: GQA (2 heads per group), odd d_head (RoPE only on 2 or 4 of its 5 dims), biases;
// chunked prefill of 7 tokens vs one chunk. K2: MQA with 4 heads, 72 tokens (two SIMD key
// tiles), d_head 16 (kPanel16), chunks of 16 and one chunk. K3: no W_O (y must never overlap
// x) and no RoPE tables (set_rope must refuse an enabled RoPE), chunks of 5. K4: W_O to a
// width (7) below d_model (10), so y rows are shorter than x rows: the chunked-prefill overlap
// rule depends on both, chunks of 4.
using microattn::OutDim;
using microattn::Rope;
using K01 = Config<40, 12, 4, 2, 5, Bias::kYes, Rope::kYes>;
using K2 = Config<72, 16, 4, 1, 16, Rope::kYes>;
using K3 = Config<24, 8, 2, 2, 4, OutProj::kNo>;
using K4 = Config<30, 10, 2, 1, 6, Bias::kQkv, OutDim{7}, Rope::kYes>;

template <class Cfg, size_t kChunk>
class KvRun {
  using Kv = microattn::KvAttention<Cfg, microattn::DefaultArch, kChunk>;
  static constexpr size_t TM = Cfg::kTMax, DM = Cfg::kDModel, OD = Cfg::kOutDim, D = Cfg::kDHead;

 public:
  explicit KvRun(Reader& r) : r_(r), W_(FuzzWeights<Cfg>::get()) {}

  void run(const char* name) {
    lay_ = FuzzWeights<Cfg>::pick_layout(r_.u8());
    set_case("fuzz_kv_cache: %s, kPrefillChunk %zu, layout %d; ops:", name, kChunk,
             static_cast<int>(lay_));
    for (Kv* k : {A_.get(), B_.get(), C_.get()})
      FZ_REQUIRE(k->set_weights(W_.view(lay_)) == Status::kOk, "[status] set_weights(valid)");
    for (int op = 0; op < 32 && !r_.empty(); ++op) {
      switch (r_.u8() % 10) {
        case 0:
        case 1:
        case 2:
          prefill();
          break;
        case 3:
          decode();
          break;
        case 4:
          truncate();
          break;
        case 5:
          reset();
          break;
        case 6:
          set_rope();
          break;
        case 7:
          set_scale();
          break;
        case 8:
          set_weights();
          break;
        default:
          export_import();
          break;
      }
      const size_t n = len();
      FZ_REQUIRE(A_->length() == n && B_->length() == n && C_->length() == n,
                 "[status] length() A %zu B %zu C %zu, expected %zu", A_->length(), B_->length(),
                 C_->length(), n);
    }
  }

 private:
  size_t len() const { return hist_.size() / DM; }

  /// The per-call checks on B's accepted output rows (positions L .. L+T-1).
  void check_output(const std::vector<float>& y, size_t L, size_t T, const char* what) {
    require_nonfinite_after(hist_.data(), L + T, DM, y.data(), L, T, OD, what);
    if (!all_within(hist_.data(), hist_.size(), 4.0f)) return;
    const RefResult ref = reference_layer<Cfg>(W_, hist_.data(), L + T, scale_, rope_);
    if (all_within(hist_.data(), hist_.size(), 1.0f) && ref.no_overflow)
      for (size_t i = 0; i < T * OD; ++i)
        FZ_REQUIRE(finite(y[i]),
                   "[scale] %s: accepted scale %a, cached and new inputs finite and "
                   "<= 1, scores in range, but output position %zu col %zu is %a",
                   what, static_cast<double>(scale_), L + i / OD, i % OD,
                   static_cast<double>(y[i]));
    // Beyond ~1e6 rad (tiny bases, huge start positions) float and double RoPE tables
    // legitimately disagree (RopeSpec::max_angle): compare only below.
    if (std::fabs(scale_) <= 4.0f && rope_.max_angle(L + T) <= 1e6)
      require_close(y.data(), ref, L, L + T, OD, what);
  }

  void prefill() {
    const std::uint8_t err = r_.u8();
    const bool errs = err >= 0xf0;
    const bool null_x = errs && (err & 1), null_y = errs && (err & 2), bad_t = errs && (err & 4);
    const std::uint8_t tb = r_.u8();
    size_t T = 1 + tb % TM;
    if (bad_t) T = (tb & 1) ? 0 : TM + 1;
    const std::uint8_t ovl = r_.u8();
    const std::uint16_t ovl_arg = r_.u16();
    const std::uint8_t pb = r_.u8(), pkind = r_.u8();
    const std::uint32_t pseed = r_.u32();
    const size_t rows = T == 0 ? 1 : T;
    std::vector<float> x(rows * DM);
    fill_values(r_, x.data(), x.size(), DM);
    Region xr{0, 0, rows, DM, DM}, yr{0, 0, rows, OD, OD};
    place_pair(ovl, ovl_arg, xr, yr);
    Buffers buf;
    buf.allocate({xr, yr});
    buf.write(xr, x.data());
    const bool ov = buf.overlap(xr, yr);
    add_case(" | prefill(T %zu%s%s, x %zu:%zu y %zu:%zu%s, poison %zu.. kind %d)", T,
             null_x ? ", x null" : "", null_y ? ", y null" : "", xr.block, xr.off, yr.block, yr.off,
             ov ? " overlapping" : "", T ? pb % T : 0, pkind % 8);

    const size_t L = len();
    Expect e;
    if (null_x || null_y) e.need(Status::kNullPointer);
    if (T == 0 || T > TM) e.need(Status::kBadTokenCount);
    if (L + T > TM) e.need(Status::kCacheFull);
    // Documented: without W_O y must not overlap x. With W_O any overlap is fine when the
    // call is one chunk; else the y rows of each chunk must end before the next chunk's x rows
    // begin (y + e * OutDim <= x + e * d_model at every chunk end e < T).
    if (ov) {
      bool fine = Cfg::kHasOutProj;
      for (size_t e = kChunk; fine && e < T; e += kChunk) fine = yr.off + e * OD <= xr.off + e * DM;
      if (!fine) e.allow(Status::kOverlap);
    }
    const std::vector<std::vector<float>> before = buf.blocks;
    const Status s = A_->prefill(null_x ? nullptr : buf.ptr(xr), T, null_y ? nullptr : buf.ptr(yr));
    check_status(s, e, "KvAttention::prefill");
    if (s != Status::kOk) {
      buf.require_unchanged(before, nullptr, "status");
      FZ_REQUIRE(A_->length() == L, "[status] prefill returned '%s' but length() went %zu -> %zu",
                 st(s), L, A_->length());
      return;
    }
    buf.require_unchanged(before, &yr, "stray write");
    const std::vector<float> ya = buf.read(yr);

    std::vector<float> yb(T * OD);
    {
      std::vector<float> xs(x);
      const Status sb = B_->prefill(xs.data(), T, yb.data());
      FZ_REQUIRE(sb == Status::kOk, "[status] twin prefill on separate buffers returned '%s'",
                 st(sb));
    }
    require_same(ya.data(), yb.data(), T, OD, ov ? "overlap" : "twin",
                 "prefill output vs the twin (separate buffers, only accepted calls)");

    // C: the later rows poisoned, then truncated back and re-run.
    const size_t p1 = pb % T;
    std::vector<float> xp(x);
    poison_rows(xp.data(), T, DM, p1, pkind, pseed);
    std::vector<float> yc(T * OD);
    Status sc = C_->prefill(xp.data(), T, yc.data());
    FZ_REQUIRE(sc == Status::kOk, "[status] poisoned prefill returned '%s'", st(sc));
    require_same(yc.data(), yb.data(), p1, OD, "causality",
                 "prefill rows before the poisoned rows vs the unpoisoned prefill");
    {
      std::vector<float> hp(hist_);
      hp.insert(hp.end(), xp.begin(), xp.end());
      require_nonfinite_after(hp.data(), L + T, DM, yc.data(), L, T, OD, "poisoned prefill");
    }
    sc = C_->truncate(L);
    FZ_REQUIRE(sc == Status::kOk, "[status] truncate(%zu) returned '%s'", L, st(sc));
    sc = C_->prefill(x.data(), T, yc.data());
    FZ_REQUIRE(sc == Status::kOk, "[status] prefill after truncate returned '%s'", st(sc));
    require_same(yc.data(), yb.data(), T, OD, "causality",
                 "prefill after truncating poisoned tokens vs a cache that never held them");

    hist_.insert(hist_.end(), x.begin(), x.end());
    check_output(yb, L, T, "prefill");
  }

  void decode() {
    const std::uint8_t err = r_.u8();
    const bool errs = err >= 0xf0;
    const bool null_x = errs && (err & 1), null_y = errs && (err & 2);
    const std::uint8_t ovl = r_.u8();
    const std::uint16_t ovl_arg = r_.u16();
    const std::uint8_t pkind = r_.u8();
    const std::uint32_t pseed = r_.u32();
    std::vector<float> x(DM);
    fill_values(r_, x.data(), x.size(), DM);
    Region xr{0, 0, 1, DM, DM}, yr{0, 0, 1, OD, OD};
    place_pair(ovl, ovl_arg, xr, yr);
    Buffers buf;
    buf.allocate({xr, yr});
    buf.write(xr, x.data());
    const bool ov = buf.overlap(xr, yr);
    add_case(" | decode(%s%sx %zu:%zu y %zu:%zu%s, poison kind %d)", null_x ? "x null, " : "",
             null_y ? "y null, " : "", xr.block, xr.off, yr.block, yr.off, ov ? " overlapping" : "",
             pkind % 8);

    const size_t L = len();
    Expect e;
    if (null_x || null_y) e.need(Status::kNullPointer);
    if (L + 1 > TM) e.need(Status::kCacheFull);
    // Documented: y may alias x with W_O (y == x must work), must not overlap it without.
    if (ov && (!Cfg::kHasOutProj || yr.off != xr.off)) e.allow(Status::kOverlap);
    const std::vector<std::vector<float>> before = buf.blocks;
    const Status s = A_->decode(null_x ? nullptr : buf.ptr(xr), null_y ? nullptr : buf.ptr(yr));
    check_status(s, e, "KvAttention::decode");
    if (s != Status::kOk) {
      buf.require_unchanged(before, nullptr, "status");
      FZ_REQUIRE(A_->length() == L, "[status] decode returned '%s' but length() went %zu -> %zu",
                 st(s), L, A_->length());
      return;
    }
    buf.require_unchanged(before, &yr, "stray write");
    const std::vector<float> ya = buf.read(yr);
    std::vector<float> yb(OD);
    {
      std::vector<float> xs(x);
      const Status sb = B_->decode(xs.data(), yb.data());
      FZ_REQUIRE(sb == Status::kOk, "[status] twin decode on separate buffers returned '%s'",
                 st(sb));
    }
    require_same(ya.data(), yb.data(), 1, OD, ov ? "overlap" : "twin",
                 "decode output vs the twin (separate buffers, only accepted calls)");

    std::vector<float> xp(x), yc(OD);
    poison_rows(xp.data(), 1, DM, 0, pkind, pseed);
    Status sc = C_->decode(xp.data(), yc.data());
    FZ_REQUIRE(sc == Status::kOk, "[status] poisoned decode returned '%s'", st(sc));
    {
      std::vector<float> hp(hist_);
      hp.insert(hp.end(), xp.begin(), xp.end());
      require_nonfinite_after(hp.data(), L + 1, DM, yc.data(), L, 1, OD, "poisoned decode");
    }
    sc = C_->truncate(L);
    FZ_REQUIRE(sc == Status::kOk, "[status] truncate(%zu) returned '%s'", L, st(sc));
    sc = C_->decode(x.data(), yc.data());
    FZ_REQUIRE(sc == Status::kOk, "[status] decode after truncate returned '%s'", st(sc));
    require_same(yc.data(), yb.data(), 1, OD, "causality",
                 "decode after truncating a poisoned token vs a cache that never held it");

    hist_.insert(hist_.end(), x.begin(), x.end());
    check_output(yb, L, 1, "decode");
  }

  void truncate() {
    const size_t n = r_.u8() % (TM + 2);
    add_case(" | truncate(%zu)", n);
    const size_t L = len();
    Expect e;
    if (n > L) e.need(Status::kBadArgument);
    const Status s = A_->truncate(n);
    check_status(s, e, "KvAttention::truncate");
    if (s != Status::kOk) return;
    FZ_REQUIRE(B_->truncate(n) == Status::kOk && C_->truncate(n) == Status::kOk,
               "[status] twin truncate");
    hist_.resize(n * DM);
  }

  void reset() {
    add_case(" | reset");
    A_->reset(), B_->reset(), C_->reset();
    hist_.clear();
  }

  void set_rope() {
    bool valid = false;
    RopeSpec spec;
    const microattn::RopeConfig rc = rope_code<Cfg>(r_, &valid, &spec);
    add_case(" | set_rope(%s, base %g, dims %zu, pairing %d, start %zu)", rc.enabled ? "on" : "off",
             static_cast<double>(rc.base), rc.rotary_dims, static_cast<int>(rc.pairing),
             rc.start_position);
    Expect e;
    if (len() != 0 || !valid) e.need(Status::kBadArgument);
    const Status s = A_->set_rope(rc);
    check_status(s, e, "KvAttention::set_rope");
    if (s != Status::kOk) return;
    FZ_REQUIRE(B_->set_rope(rc) == Status::kOk && C_->set_rope(rc) == Status::kOk,
               "[status] twin set_rope");
    rc_ = rc;
    rope_ = spec;
  }

  void set_scale() {
    bool dflt = false;
    const float s0 = scale_code(r_, microattn::default_scale<Cfg>(), &dflt);
    add_case(" | set_scale(%a)", static_cast<double>(s0));
    Expect e;
    e.scale(s0);
    const Status s = A_->set_scale(s0);
    check_status(s, e, "KvAttention::set_scale");
    if (s != Status::kOk) return;
    FZ_REQUIRE(B_->set_scale(s0) == Status::kOk && C_->set_scale(s0) == Status::kOk,
               "[status] twin set_scale");
    scale_ = s0;
    scale_set_ = true;
  }

  void set_weights() {
    const std::uint8_t kind = r_.u8();
    if (kind & 0x80) {
      Status want;
      const microattn::Weights<Cfg> bw = W_.bad(kind, &want);
      add_case(" | set_weights(invalid %d)", kind % 4);
      const Status s = A_->set_weights(bw);
      FZ_REQUIRE(s == want, "[status] set_weights(invalid kind %d) returned '%s', want '%s'",
                 kind % 4, st(s), st(want));
      return;
    }
    const WeightLayout l = FuzzWeights<Cfg>::pick_layout(kind);
    add_case(" | set_weights(layout %d)", static_cast<int>(l));
    for (Kv* k : {A_.get(), B_.get(), C_.get()})
      FZ_REQUIRE(k->set_weights(W_.view(l)) == Status::kOk, "[status] set_weights(valid layout %d)",
                 static_cast<int>(l));
    lay_ = l;
  }

  /// export_cache on A with fuzzed arguments (checked against B's export), then B's cache in
  /// two slices imported into a fresh object D, which must continue bit for bit like C.
  void export_import() {
    constexpr size_t KD = Cfg::kKvDim;
    const size_t L = len();
    const size_t first = r_.u8() % (L + 2), n = r_.u8() % (L + 2);
    const std::uint8_t fl = r_.u8();  // bits 0-2: k, v, info null; bit 3: v overlaps k
    const std::uint8_t split = r_.u8(), bad = r_.u8(), pseed = r_.u8();
    add_case(" | export_cache(%zu, %zu, flags 0x%02x) + import split %zu", first, n, fl,
             L ? split % (L + 1) : 0);
    const size_t rows = n == 0 ? 1 : n;
    Region kr{0, 0, rows, KD, KD}, vr{1, 0, rows, KD, KD};
    if (fl & 8) vr.block = 0, vr.off = (fl >> 4) % (rows * KD);
    Buffers buf;
    buf.allocate({kr, vr});
    microattn::CacheSlice info;
    info.first = 12345, info.tokens = 678;
    Expect e;
    if (fl & 7) e.need(Status::kNullPointer);
    if (n == 0 || first + n > L) e.need(Status::kBadArgument);
    if (buf.overlap(kr, vr)) e.allow(Status::kOverlap);
    const std::vector<std::vector<float>> before = buf.blocks;
    const Status s = A_->export_cache(first, n, (fl & 1) ? nullptr : buf.ptr(kr),
                                      (fl & 2) ? nullptr : buf.ptr(vr), (fl & 4) ? nullptr : &info);
    check_status(s, e, "KvAttention::export_cache");
    if (s != Status::kOk) {
      buf.require_unchanged(before, nullptr, "status");
      FZ_REQUIRE(info.first == 12345 && info.tokens == 678,
                 "[status] export_cache returned '%s' "
                 "but wrote *info",
                 st(s));
    } else {
      std::vector<float> kb(n * KD), vb(n * KD);
      microattn::CacheSlice ib;
      FZ_REQUIRE(B_->export_cache(first, n, kb.data(), vb.data(), &ib) == Status::kOk,
                 "[status] twin export");
      FZ_REQUIRE(info.first == first && info.tokens == n && info.kv_heads == Cfg::kKvHeads &&
                     info.d_head == Cfg::kDHead && info.rope.enabled == rc_.enabled,
                 "[export] info: first %zu tokens %zu kv_heads %zu d_head %zu rope %d", info.first,
                 info.tokens, info.kv_heads, info.d_head, info.rope.enabled);
      // k is written before v: where they overlap only v's values remain, as in B's v.
      const std::vector<float> va = buf.read(vr);
      require_same(va.data(), vb.data(), n, KD, buf.overlap(kr, vr) ? "overlap" : "twin",
                   "exported v vs the twin's");
      if (!buf.overlap(kr, vr)) {
        const std::vector<float> ka = buf.read(kr);
        require_same(ka.data(), kb.data(), n, KD, "twin", "exported k vs the twin's");
      }
    }
    if (L == 0 || L >= TM) return;

    // Import B's cache [0, s) and [s, L) into D (fresh, same settings); D continues like C.
    auto D = std::make_unique<Kv>();
    FZ_REQUIRE(D->set_weights(W_.view(lay_)) == Status::kOk, "[status] set_weights");
    FZ_REQUIRE(D->set_rope(rc_) == Status::kOk, "[status] set_rope on a fresh object");
    if (scale_set_) FZ_REQUIRE(D->set_scale(scale_) == Status::kOk, "[status] set_scale");
    const size_t sp = split % (L + 1);
    std::vector<std::pair<size_t, size_t>> slices{{0, L}};
    if (sp != 0 && sp != L) slices = {{0, sp}, {sp, L}};
    for (const auto& [lo, hi] : slices) {
      std::vector<float> k((hi - lo) * KD), v((hi - lo) * KD);
      microattn::CacheSlice ci;
      FZ_REQUIRE(B_->export_cache(lo, hi - lo, k.data(), v.data(), &ci) == Status::kOk,
                 "[status] export");
      if (bad & 1) {  // a slice that does not fit must change nothing
        microattn::CacheSlice wrong = ci;
        switch ((bad >> 1) % 4) {
          case 0:
            wrong.first += 1;
            break;
          case 1:
            wrong.kv_heads += 1;
            break;
          case 2:
            wrong.rope.enabled = !wrong.rope.enabled;
            break;
          default:
            wrong.tokens = 0;
            break;
        }
        const size_t before_len = D->length();
        const Status sw = D->import_cache(wrong, k.data(), v.data());
        FZ_REQUIRE(sw == Status::kBadArgument && D->length() == before_len,
                   "[status] import_cache(mismatched slice, kind %d) returned '%s'", (bad >> 1) % 4,
                   st(sw));
      }
      const Status si = D->import_cache(ci, k.data(), v.data());
      FZ_REQUIRE(si == Status::kOk, "[status] import_cache(exported [%zu, %zu)) returned '%s'", lo,
                 hi, st(si));
    }
    FZ_REQUIRE(D->length() == L, "[export] imported length %zu, want %zu", D->length(), L);
    std::vector<float> x(DM), yd(OD), yc(OD);
    Rng rng(pseed);
    for (float& f : x) f = rng.sym(2.0f);
    FZ_REQUIRE(D->decode(x.data(), yd.data()) == Status::kOk &&
                   C_->decode(x.data(), yc.data()) == Status::kOk,
               "[status] decode after import");
    require_same(yd.data(), yc.data(), 1, OD, "export",
                 "decode after importing the exported cache vs the object it came from");
    FZ_REQUIRE(C_->truncate(L) == Status::kOk, "[status] truncate");
  }

  Reader& r_;
  const FuzzWeights<Cfg>& W_;
  std::unique_ptr<Kv> A_ = std::make_unique<Kv>(), B_ = std::make_unique<Kv>(),
                      C_ = std::make_unique<Kv>();
  std::vector<float> hist_;  // x rows of the cached tokens, positions 0 .. len()-1
  float scale_ = microattn::default_scale<Cfg>();
  bool scale_set_ = false;
  RopeSpec rope_{};             // the reference's view of the RoPE in use
  microattn::RopeConfig rc_{};  // the RoPE setting accepted last
  WeightLayout lay_ = WeightLayout::kInOut;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r(data, size);
  switch (r.u8() % 6) {
    case 0:
      KvRun<K01, 7>(r).run("K0 Config<40,12,4,2,5,Bias::kYes,Rope::kYes>");
      break;
    case 1:
      KvRun<K01, 40>(r).run("K1 Config<40,12,4,2,5,Bias::kYes,Rope::kYes>");
      break;
    case 2:
      KvRun<K2, 16>(r).run("K2 Config<72,16,4,1,16,Rope::kYes>");
      break;
    case 3:
      KvRun<K2, 72>(r).run("K2 Config<72,16,4,1,16,Rope::kYes>");
      break;
    case 4:
      KvRun<K3, 5>(r).run("K3 Config<24,8,2,2,4,OutProj::kNo>");
      break;
    default:
      KvRun<K4, 4>(r).run("K4 Config<30,10,2,1,6,Bias::kQkv,OutDim{7},Rope::kYes>");
      break;
  }
  trace_case();
  return 0;
}
