// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: MultiHeadAttention::forward (the layer) and
// ScaledDotProductAttention::forward (the core) with fuzzer-chosen token counts, scales, input
// bits (NaN, +-Inf, huge, denormal), strides, argument errors and overlapping buffers.
// Invariants and input format: tests/fuzz/README.md.
#include <utility>

#include "fuzz_common.hpp"

namespace {

using namespace fz;
using microattn::Bias;
using microattn::Config;
using microattn::OutProj;

// Tile edges: AVX2/AVX-512 attention tiles are 48 query rows x 64 keys, the scalar ones 16 x 16;
// GEMM micro-tiles 6-12 rows x 4-32 columns. L0: GQA with 2 heads per group, an odd d_head
// (RoPE on 2 or 4 of its 5 dims), all biases (80 query rows at T 40: two query tiles on SIMD,
// three key tiles on scalar). L1: MQA with 3 heads per group, 72 keys (two key tiles on SIMD),
// d_head 16 (kPanel16 weights), no key bias. L2: MHA without W_O (y must not overlap x),
// d_head 3. L3: W_O to a width (7) other than d_model (10), Q/K/V biases only.
using microattn::OutDim;
using microattn::Rope;
using L0 = Config<40, 12, 4, 2, 5, Bias::kYes, Rope::kYes>;
using L1 = Config<72, 16, 3, 1, 16, Bias::kQ | Bias::kV | Bias::kO, Rope::kYes>;
using L2 = Config<20, 8, 2, 2, 3, Bias::kYes, OutProj::kNo>;
using L3 = Config<33, 10, 2, 1, 6, Bias::kQkv, OutDim{7}>;

/// The settings a call ran with (only those the object accepted).
struct Settings {
  bool custom_scale = false;
  float scale = 0.0f;
  bool rope = false;
  microattn::RopeConfig rc{};
  RopeSpec spec{};
  template <class Cfg>
  float effective_scale() const {
    return custom_scale ? scale : microattn::default_scale<Cfg>();
  }
  template <class Obj>
  void apply(Obj& o) const {
    if (custom_scale) {
      const Status s = o.set_scale(scale);
      FZ_REQUIRE(s == Status::kOk,
                 "[status] set_scale(%a) returned '%s' on a fresh object after "
                 "it was accepted",
                 static_cast<double>(scale), st(s));
    }
    if constexpr (has_rope<Obj>(0)) {
      if (rope) {
        const Status s = o.set_rope(rc);
        FZ_REQUIRE(s == Status::kOk,
                   "[status] set_rope returned '%s' on a fresh object after it "
                   "was accepted",
                   st(s));
      }
    }
  }
  template <class Obj>
  static constexpr auto has_rope(int)
      -> decltype(std::declval<Obj&>().set_rope(microattn::RopeConfig{}), bool()) {
    return true;
  }
  template <class Obj>
  static constexpr bool has_rope(long) {
    return false;
  }
};

// ----------------------------------------------------------------------------------- the layer

template <class Cfg>
std::vector<float> layer_fresh(WeightLayout lay, const Settings& set, const float* x, size_t T,
                               const char* what) {
  auto m = std::make_unique<microattn::MultiHeadAttention<Cfg>>();
  const Status sw = m->set_weights(FuzzWeights<Cfg>::get().view(lay));
  FZ_REQUIRE(sw == Status::kOk, "[status] set_weights(valid) returned '%s'", st(sw));
  set.apply(*m);
  std::vector<float> xs(x, x + T * Cfg::kDModel),
      y(T * Cfg::kOutDim, from_bits(Buffers::kSentinel));
  const Status s = m->forward(xs.data(), T, y.data());
  FZ_REQUIRE(s == Status::kOk, "[status] %s: forward(T %zu) on separate buffers returned '%s'",
             what, T, st(s));
  return y;
}

template <class Cfg>
void layer_invariants(WeightLayout lay, const Settings& set, const std::vector<float>& x, size_t T,
                      const std::vector<float>& y, std::uint8_t pb, std::uint8_t pkind,
                      std::uint32_t pseed) {
  constexpr size_t DM = Cfg::kDModel, OD = Cfg::kOutDim;
  // Non-finite inputs: rows from the first bad one on are non-finite, earlier rows as if the
  // bad values were finite.
  require_nonfinite_after(x.data(), T, DM, y.data(), 0, T, OD, "layer");
  const size_t j = first_nonfinite_row(x.data(), T, DM);
  if (j < T) {
    std::vector<float> xf(x.begin(), x.begin() + T * DM);
    for (size_t i = j * DM; i < T * DM; ++i)
      if (!finite(xf[i])) xf[i] = 0.5f;
    const std::vector<float> yf =
        layer_fresh<Cfg>(lay, set, xf.data(), T, "non-finite rows made finite");
    require_same(yf.data(), y.data(), j, OD, "nonfinite",
                 "rows before the first NaN/Inf input row vs the run with those values finite");
  }
  // Causality: rows 0 .. p1-1 do not depend on rows p1 .., nor on T.
  if (T > 1) {
    const size_t p1 = 1 + pb % (T - 1);
    std::vector<float> xp(x.begin(), x.begin() + T * DM);
    poison_rows(xp.data(), T, DM, p1, pkind, pseed);
    const std::vector<float> yp = layer_fresh<Cfg>(lay, set, xp.data(), T, "poisoned later rows");
    require_nonfinite_after(xp.data(), T, DM, yp.data(), 0, T, OD, "layer, poisoned later rows");
    char what[96];
    std::snprintf(what, sizeof what, "rows 0..%zu with rows %zu.. replaced (poison kind %d)",
                  p1 - 1, p1, pkind % 8);
    require_same(yp.data(), y.data(), p1, OD, "causality", what);
    const std::vector<float> ys = layer_fresh<Cfg>(lay, set, x.data(), p1, "T = p+1");
    std::snprintf(what, sizeof what, "rows 0..%zu of T %zu vs T %zu", p1 - 1, T, p1);
    require_same_nan_as_nan(ys.data(), y.data(), p1, OD, "causality", what);
  }
  // Finite inputs: finite outputs near the reference; with |x| <= 1 finite for any accepted
  // scale unless the scores themselves overflow.
  if (all_within(x.data(), T * DM, 4.0f)) {
    const float sc = set.effective_scale<Cfg>();
    const RefResult ref = reference_layer<Cfg>(FuzzWeights<Cfg>::get(), x.data(), T, sc, set.spec);
    if (all_within(x.data(), T * DM, 1.0f) && ref.no_overflow)
      for (size_t i = 0; i < T * OD; ++i)
        FZ_REQUIRE(finite(y[i]),
                   "[scale] accepted scale %a, inputs finite and <= 1, scores in "
                   "range, but output row %zu col %zu is %a",
                   static_cast<double>(sc), i / OD, i % OD, static_cast<double>(y[i]));
    if (std::fabs(sc) <= 4.0f && set.spec.max_angle(T) <= 1e6)
      require_close(y.data(), ref, 0, T, OD, "reference");
  }
}

/// set_scale on obj as the input says (mode 0: leave the default), checked; records it in set.
template <class Cfg, class Obj>
void fuzz_set_scale(Obj& obj, float scale, bool use_default, Settings& set) {
  if (use_default) return;
  Expect e;
  e.scale(scale);
  const Status s = obj.set_scale(scale);
  check_status(s, e, "set_scale");
  if (s == Status::kOk) set.custom_scale = true, set.scale = scale;
}

template <class Cfg>
void run_layer(Reader& r, const char* name) {
  using Mha = microattn::MultiHeadAttention<Cfg>;
  constexpr size_t TM = Cfg::kTMax, DM = Cfg::kDModel, OD = Cfg::kOutDim;
  const FuzzWeights<Cfg>& W = FuzzWeights<Cfg>::get();
  const WeightLayout lay = FuzzWeights<Cfg>::pick_layout(r.u8());
  const std::uint8_t err = r.u8();  // >= 0xf0: argument errors, low bits say which
  const bool errs = err >= 0xf0;
  const bool null_x = errs && (err & 1), null_y = errs && (err & 2), bad_t = errs && (err & 4),
             no_w = errs && (err & 8);
  const std::uint8_t tb = r.u8();
  size_t T = 1 + tb % TM;
  if (bad_t) T = (tb & 1) ? 0 : TM + 1;
  // bit 0: A ran on garbage first; bit 1: A refused bad weights (kind: bits 2-3);
  // bit 4: set_rope on A
  const std::uint8_t fl = r.u8();
  bool use_default = false;
  const float scale = scale_code(r, microattn::default_scale<Cfg>(), &use_default);
  bool rope_valid = false;
  RopeSpec spec;
  const microattn::RopeConfig rc = rope_code<Cfg>(r, &rope_valid, &spec);
  const std::uint8_t ovl = r.u8();
  const std::uint16_t ovl_arg = r.u16();
  const std::uint8_t pb = r.u8(), pkind = r.u8();
  const std::uint32_t pseed = r.u32();
  const size_t rows = T == 0 ? 1 : T;
  std::vector<float> x(rows * DM);
  fill_values(r, x.data(), x.size(), DM);
  set_case(
      "fuzz_layer: layer %s, layout %d, T %zu, scale %a%s, err 0x%02x, flags 0x%02x, "
      "overlap mode %d arg %u",
      name, static_cast<int>(lay), T, static_cast<double>(scale),
      use_default ? " (default, not set)" : "", err, fl, ovl % 4, ovl_arg);
  if (fl & 16)
    add_case(", set_rope(%s, base %g, dims %zu, pairing %d, start %zu)", rc.enabled ? "on" : "off",
             static_cast<double>(rc.base), rc.rotary_dims, static_cast<int>(rc.pairing),
             rc.start_position);

  Buffers buf;
  Region xr{0, 0, rows, DM, DM}, yr{0, 0, rows, OD, OD};
  place_pair(ovl, ovl_arg, xr, yr);
  buf.allocate({xr, yr});
  buf.write(xr, x.data());
  const bool ov = buf.overlap(xr, yr);
  add_case(" (x at %zu:%zu, y at %zu:%zu, %s)", xr.block, xr.off, yr.block, yr.off,
           ov ? "overlapping" : "disjoint");

  auto A = std::make_unique<Mha>();
  Settings set;
  if (!no_w) FZ_REQUIRE(A->set_weights(W.view(lay)) == Status::kOk, "[status] set_weights(valid)");
  fuzz_set_scale<Cfg>(*A, scale, use_default, set);
  if (fl & 16) {
    Expect e;
    if (!rope_valid) e.need(Status::kBadArgument);
    const Status s = A->set_rope(rc);
    check_status(s, e, "MultiHeadAttention::set_rope");
    if (s == Status::kOk && rc.enabled) set.rope = true, set.rc = rc, set.spec = spec;
  }
  if ((fl & 1) && !no_w) {  // leave garbage in every working buffer
    std::vector<float> g(TM * DM), gy(TM * OD);
    poison_rows(g.data(), TM, DM, 0, pkind, pseed);
    const Status s = A->forward(g.data(), TM, gy.data());
    FZ_REQUIRE(s == Status::kOk, "[status] forward on garbage returned '%s'", st(s));
  }
  if (fl & 2) {
    Status want;
    const microattn::Weights<Cfg> bw = W.bad(fl >> 2, &want);
    const Status s = A->set_weights(bw);
    FZ_REQUIRE(s == want, "[status] set_weights(invalid kind %d) returned '%s', want '%s'",
               (fl >> 2) % 4, st(s), st(want));
  }

  Expect e;
  if (null_x || null_y || no_w) e.need(Status::kNullPointer);
  if (T == 0 || T > TM) e.need(Status::kBadTokenCount);
  if (ov && !Cfg::kHasOutProj)
    e.allow(Status::kOverlap);  // with W_O any overlap is documented as fine
  const std::vector<std::vector<float>> before = buf.blocks;
  const Status s = A->forward(null_x ? nullptr : buf.ptr(xr), T, null_y ? nullptr : buf.ptr(yr));
  check_status(s, e, "MultiHeadAttention::forward");

  // The same call on a fresh object with the accepted settings and separate buffers.
  const size_t Tc = T == 0 ? 1 : (T > TM ? TM : T);
  const std::vector<float> yb = layer_fresh<Cfg>(lay, set, x.data(), Tc, "twin");
  if (s == Status::kOk) {
    buf.require_unchanged(before, &yr, "stray write");
    const std::vector<float> ya = buf.read(yr);
    require_same(ya.data(), yb.data(), T, OD, ov ? "overlap" : ((fl & 1) ? "stale state" : "twin"),
                 "forward output vs a fresh object with separate buffers (and only the accepted "
                 "settings)");
  } else {
    buf.require_unchanged(before, nullptr, "status");
    if (no_w) FZ_REQUIRE(A->set_weights(W.view(lay)) == Status::kOk, "[status] set_weights(valid)");
    std::vector<float> xs(x.begin(), x.begin() + Tc * DM), ya(Tc * OD);
    const Status s2 = A->forward(xs.data(), Tc, ya.data());
    FZ_REQUIRE(s2 == Status::kOk, "[status] forward after a failed call returned '%s'", st(s2));
    require_same(ya.data(), yb.data(), Tc, OD, "status",
                 "forward after a failed call vs an object that never saw it");
  }
  layer_invariants<Cfg>(lay, set, x, Tc, yb, pb, pkind, pseed);
}

// ------------------------------------------------------------------------------------ the core

struct CoreIn {
  std::vector<float> q, k, v;  // dense [T][H*D], [T][Hkv*D]
};

template <class Cfg>
std::vector<float> core_fresh(const Settings& set, const CoreIn& in, size_t T, const char* what) {
  constexpr size_t QD = Cfg::kQDim, KD = Cfg::kKvDim;
  auto m = std::make_unique<microattn::ScaledDotProductAttention<Cfg>>();
  set.apply(*m);
  std::vector<float> q(in.q.begin(), in.q.begin() + T * QD), k(in.k.begin(), in.k.begin() + T * KD),
      v(in.v.begin(), in.v.begin() + T * KD), out(T * QD, from_bits(Buffers::kSentinel));
  const Status s = m->forward(q.data(), QD, k.data(), KD, v.data(), KD, T, out.data(), QD);
  FZ_REQUIRE(s == Status::kOk,
             "[status] %s: core forward(T %zu) on dense separate buffers "
             "returned '%s'",
             what, T, st(s));
  return out;
}

/// The core's NaN contract (as PyTorch): NaN in q row i, head h: out row i of head h all NaN
/// (+-Inf there: all non-finite, every score being inf or NaN). NaN in k row j of key/value
/// head g: out rows i >= j of g's query heads all NaN. NaN (+-Inf) in v row j, column d of g:
/// column d of out rows i >= j of g's query heads NaN (non-finite); the other columns do not
/// read it.
template <class Cfg>
void core_contract(const CoreIn& in, size_t T, const std::vector<float>& out, const char* what) {
  constexpr size_t QD = Cfg::kQDim, KD = Cfg::kKvDim, D = Cfg::kDHead, G = Cfg::kGroup;
  for (size_t i = 0; i < T; ++i)
    for (size_t c = 0; c < QD; ++c) {
      const float qv = in.q[i * QD + c];
      if (finite(qv)) continue;
      const size_t h = c / D;
      for (size_t d = 0; d < D; ++d) {
        const float o = out[i * QD + h * D + d];
        FZ_REQUIRE(is_nan(qv) ? is_nan(o) : !finite(o),
                   "[nonfinite] %s: q row %zu col %zu is %a but out row %zu head %zu col %zu is %a",
                   what, i, c, static_cast<double>(qv), i, h, d, static_cast<double>(o));
      }
    }
  for (size_t j = 0; j < T; ++j)
    for (size_t c = 0; c < KD; ++c) {
      const float kv = in.k[j * KD + c], vv = in.v[j * KD + c];
      const size_t g = c / D;
      for (size_t i = j; i < T; ++i)
        for (size_t h = g * G; h < (g + 1) * G; ++h) {
          if (is_nan(kv))
            for (size_t d = 0; d < D; ++d) {
              const float o = out[i * QD + h * D + d];
              FZ_REQUIRE(is_nan(o),
                         "[nonfinite] %s: k row %zu col %zu is NaN but out row %zu "
                         "head %zu col %zu is %a",
                         what, j, c, i, h, d, static_cast<double>(o));
            }
          if (!finite(vv)) {
            const float o = out[i * QD + h * D + c % D];
            FZ_REQUIRE(is_nan(vv) ? is_nan(o) : !finite(o),
                       "[nonfinite] %s: v row %zu col %zu is %a but out row %zu head %zu col %zu "
                       "is %a",
                       what, j, c, static_cast<double>(vv), i, h, c % D, static_cast<double>(o));
          }
        }
    }
}

template <class Cfg>
void core_invariants(const Settings& set, const CoreIn& in, size_t T, const std::vector<float>& y,
                     std::uint8_t pb, std::uint8_t pkind, std::uint32_t pseed) {
  constexpr size_t QD = Cfg::kQDim, KD = Cfg::kKvDim;
  core_contract<Cfg>(in, T, y, "core");
  if (T > 1) {
    const size_t p1 = 1 + pb % (T - 1);
    CoreIn po = in;
    poison_rows(po.q.data(), T, QD, p1, pkind, pseed);
    poison_rows(po.k.data(), T, KD, p1, pkind >> 3, pseed + 1);
    poison_rows(po.v.data(), T, KD, p1, pkind >> 5, pseed + 2);
    const std::vector<float> yp = core_fresh<Cfg>(set, po, T, "poisoned later rows");
    core_contract<Cfg>(po, T, yp, "core, poisoned later rows");
    char what[96];
    std::snprintf(what, sizeof what, "rows 0..%zu with q/k/v rows %zu.. replaced (poison 0x%02x)",
                  p1 - 1, p1, pkind);
    require_same(yp.data(), y.data(), p1, QD, "causality", what);
    const std::vector<float> ys = core_fresh<Cfg>(set, in, p1, "T = p+1");
    std::snprintf(what, sizeof what, "rows 0..%zu of T %zu vs T %zu", p1 - 1, T, p1);
    require_same_nan_as_nan(ys.data(), y.data(), p1, QD, "causality", what);
  }
  const bool fin4 = all_within(in.q.data(), T * QD, 4.0f) &&
                    all_within(in.k.data(), T * KD, 4.0f) && all_within(in.v.data(), T * KD, 4.0f);
  if (fin4) {
    const float sc = set.effective_scale<Cfg>();
    const RefResult ref = reference_core(in.q.data(), in.k.data(), in.v.data(), T, Cfg::kHeads,
                                         Cfg::kKvHeads, Cfg::kDHead, sc);
    const bool fin1 = all_within(in.q.data(), T * QD, 1.0f) &&
                      all_within(in.k.data(), T * KD, 1.0f) &&
                      all_within(in.v.data(), T * KD, 1.0f);
    if (fin1 && ref.no_overflow)
      for (size_t i = 0; i < T * QD; ++i)
        FZ_REQUIRE(finite(y[i]),
                   "[scale] accepted scale %a, inputs finite and <= 1, scores in "
                   "range, but out row %zu col %zu is %a",
                   static_cast<double>(sc), i / QD, i % QD, static_cast<double>(y[i]));
    if (std::fabs(sc) <= 4.0f) require_close(y.data(), ref, 0, T, QD, "reference");
  }
}

template <class Cfg>
void run_core(Reader& r, const char* name) {
  using Core = microattn::ScaledDotProductAttention<Cfg>;
  constexpr size_t TM = Cfg::kTMax, QD = Cfg::kQDim, KD = Cfg::kKvDim;
  const std::uint8_t err = r.u8();  // >= 0xe0: argument errors
  const bool errs = err >= 0xe0;
  const bool null_ptr = errs && (err & 1), bad_t = errs && (err & 8), bad_ld = errs && (err & 16);
  const int null_which = (err >> 1) & 3;  // q, k, v, out
  const std::uint8_t tb = r.u8();
  size_t T = 1 + tb % TM;
  if (bad_t) T = (tb & 1) ? 0 : TM + 1;
  size_t ld[4] = {QD, KD, KD, QD};
  const size_t width[4] = {QD, KD, KD, QD};
  for (size_t i = 0; i < 4; ++i) ld[i] += r.u8() % 8;
  const std::uint8_t ldb = r.u8();
  if (bad_ld) ld[ldb % 4] = width[ldb % 4] - 1 - (ldb / 4) % width[ldb % 4];
  const std::uint8_t fl = r.u8();  // bit 0: A ran on garbage first; bit 1: one block
  bool use_default = false;
  const float scale = scale_code(r, microattn::default_scale<Cfg>(), &use_default);
  const std::uint16_t off[4] = {r.u16(), r.u16(), r.u16(), r.u16()};
  const std::uint8_t pb = r.u8(), pkind = r.u8();
  const std::uint32_t pseed = r.u32();
  const size_t rows = T == 0 ? 1 : T;
  CoreIn raw;
  raw.q.resize(rows * QD), raw.k.resize(rows * KD), raw.v.resize(rows * KD);
  fill_values(r, raw.q.data(), raw.q.size(), QD);
  fill_values(r, raw.k.data(), raw.k.size(), KD);
  fill_values(r, raw.v.data(), raw.v.size(), KD);

  // Buffers: separate blocks, or one block with fuzzer-chosen offsets (q, k, v may overlap
  // each other, out may overlap any of them).
  Region reg[4];
  size_t total = 0;
  for (size_t i = 0; i < 4; ++i) {
    reg[i] = Region{0, 0, rows, ld[i], width[i]};
    total += reg[i].span();
  }
  const bool arena = fl & 2;
  for (size_t i = 0; i < 4; ++i) {
    if (arena)
      reg[i].off = off[i] % total;
    else
      reg[i].block = i;
  }
  Buffers buf;
  buf.allocate({reg[0], reg[1], reg[2], reg[3]});
  buf.write(reg[0], raw.q.data());
  buf.write(reg[1], raw.k.data());
  buf.write(reg[2], raw.v.data());
  CoreIn in;  // what the call reads: later inputs win where inputs overlap
  in.q = buf.read(reg[0]), in.k = buf.read(reg[1]), in.v = buf.read(reg[2]);
  const bool ov =
      buf.overlap(reg[3], reg[0]) || buf.overlap(reg[3], reg[1]) || buf.overlap(reg[3], reg[2]);
  const bool dense_call = ld[0] == QD && ld[1] == KD && ld[2] == KD && ld[3] == QD && (fl & 4);
  set_case(
      "fuzz_layer: core %s, T %zu, ld q %zu k %zu v %zu out %zu, scale %a%s, err 0x%02x, "
      "flags 0x%02x, offsets %zu %zu %zu %zu (%s, out %s)%s",
      name, T, ld[0], ld[1], ld[2], ld[3], static_cast<double>(scale),
      use_default ? " (default, not set)" : "", err, fl, reg[0].off, reg[1].off, reg[2].off,
      reg[3].off, arena ? "one block" : "separate blocks", ov ? "overlapping an input" : "disjoint",
      dense_call ? ", dense overload" : "");

  auto A = std::make_unique<Core>();
  Settings set;
  fuzz_set_scale<Cfg>(*A, scale, use_default, set);
  if (fl & 1) {
    CoreIn g;
    g.q.resize(TM * QD), g.k.resize(TM * KD), g.v.resize(TM * KD);
    poison_rows(g.q.data(), TM, QD, 0, pkind, pseed);
    poison_rows(g.k.data(), TM, KD, 0, pkind + 1, pseed);
    poison_rows(g.v.data(), TM, KD, 0, pkind + 2, pseed);
    std::vector<float> go(TM * QD);
    const Status s = A->forward(g.q.data(), QD, g.k.data(), KD, g.v.data(), KD, TM, go.data(), QD);
    FZ_REQUIRE(s == Status::kOk, "[status] core forward on garbage returned '%s'", st(s));
  }
  Expect e;
  if (null_ptr) e.need(Status::kNullPointer);
  if (T == 0 || T > TM) e.need(Status::kBadTokenCount);
  if (ld[0] < QD || ld[1] < KD || ld[2] < KD || ld[3] < QD) e.need(Status::kBadStride);
  if (ov) e.allow(Status::kOverlap);
  float* p[4];
  for (size_t i = 0; i < 4; ++i)
    p[i] = (null_ptr && null_which == static_cast<int>(i)) ? nullptr : buf.ptr(reg[i]);
  const std::vector<std::vector<float>> before = buf.blocks;
  const Status s = dense_call ? A->forward(p[0], p[1], p[2], T, p[3])
                              : A->forward(p[0], ld[0], p[1], ld[1], p[2], ld[2], T, p[3], ld[3]);
  check_status(s, e, "ScaledDotProductAttention::forward");

  const size_t Tc = T == 0 ? 1 : (T > TM ? TM : T);
  const std::vector<float> yb = core_fresh<Cfg>(set, in, Tc, "twin");
  if (s == Status::kOk) {
    buf.require_unchanged(before, &reg[3], "stray write");
    const std::vector<float> ya = buf.read(reg[3]);
    require_same(ya.data(), yb.data(), T, QD, ov ? "overlap" : ((fl & 1) ? "stale state" : "twin"),
                 "core output vs a fresh object with dense separate buffers");
  } else {
    buf.require_unchanged(before, nullptr, "status");
    // The core keeps no state but its scale, and a failed call must not have left any: run A.
    std::vector<float> q(in.q.begin(), in.q.begin() + Tc * QD),
        k(in.k.begin(), in.k.begin() + Tc * KD), v(in.v.begin(), in.v.begin() + Tc * KD),
        out(Tc * QD);
    const Status s2 = A->forward(q.data(), QD, k.data(), KD, v.data(), KD, Tc, out.data(), QD);
    FZ_REQUIRE(s2 == Status::kOk, "[status] core forward after a failed call returned '%s'",
               st(s2));
    require_same(out.data(), yb.data(), Tc, QD, "status",
                 "core forward after a failed call vs an object that never saw it");
  }
  core_invariants<Cfg>(set, in, Tc, yb, pb, pkind, pseed);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Reader r(data, size);
  switch (r.u8() % 8) {
    case 0:
      run_layer<L0>(r, "L0 Config<40,12,4,2,5,Bias::kYes,Rope::kYes>");
      break;
    case 1:
      run_layer<L1>(r, "L1 Config<72,16,3,1,16,Bias::kQ|kV|kO,Rope::kYes>");
      break;
    case 2:
      run_layer<L2>(r, "L2 Config<20,8,2,2,3,Bias::kYes,OutProj::kNo>");
      break;
    case 3:
      run_layer<L3>(r, "L3 Config<33,10,2,1,6,Bias::kQkv,OutDim{7}>");
      break;
    case 4:
      run_core<L0>(r, "L0 Config<40,12,4,2,5> (H 4, H_kv 2, d_head 5)");
      break;
    case 5:
      run_core<L1>(r, "L1 Config<72,16,3,1,16> (H 3, H_kv 1, d_head 16)");
      break;
    case 6:
      run_core<L2>(r, "L2 Config<20,8,2,2,3> (H 2, H_kv 2, d_head 3)");
      break;
    default:
      run_core<L3>(r, "L3 Config<33,10,2,1,6> (H 2, H_kv 1, d_head 6)");
      break;
  }
  trace_case();
  return 0;
}
