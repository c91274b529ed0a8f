// SPDX-License-Identifier: Apache-2.0
// The storage-format descriptor (format.hpp): codes, what FormatTraits answers for the two
// formats the library computes and for two it does not yet (a group-wise int8 and a packed int4,
// declared here as a new format's entry would be), the matrix records of every weight view, and
// the kernels' slices of a record.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "microattn/microattn.hpp"
#include "support/unit.hpp"

namespace {

using microattn::ElemType;
using microattn::FormatTraits;
using microattn::Matrix;
using microattn::ScaleGrouping;
using microattn::StorageFormat;
using microattn::WeightLayout;
using microattn::WeightType;
namespace format = microattn::format;

// The group-wise int8 entry (WeightType::kInt8G32), and one of a format the kernels do not have
// yet: what the traits must answer for it.
using Qg8x32 = format::Qg8<32>;
struct Q4x32 {  // int4 (two per byte), a scale per group of 32 inputs
  static constexpr StorageFormat kDesc{ElemType::kInt8, 4, ScaleGrouping::kPerGroup, 32,
                                       ElemType::kF32};
  using Elem = std::uint8_t;
};

TEST(Format, CodesAreDistinctAndFp32IsZero) {
  // The codes the model file and the C API will carry: fixed numbers, not an enumeration order.
  EXPECT_EQ(format::F32::kDesc.code(), 0u);
  EXPECT_EQ(format::Qc8::kDesc.code(), 0x10801u);  // int8 | 8 bits | per column | fp32 scales
  EXPECT_EQ(Qg8x32::kDesc.code(), 0x5020801u);     // ... per group, 2^5 inputs
  EXPECT_EQ(Q4x32::kDesc.code(), 0x5020401u);
  EXPECT_TRUE(format::Qc8::kDesc == format::Qc8::kDesc);
  EXPECT_TRUE(format::Qc8::kDesc != Qg8x32::kDesc);
  EXPECT_TRUE(Qg8x32::kDesc != Q4x32::kDesc);
}

TEST(Format, EveryConfigFamilyReadsOneParser) {
  using namespace microattn;
  static_assert(std::is_same<Config<8, 16, 2, 2, 8>::WeightFormat, format::F32>::value, "");
  static_assert(
      std::is_same<Config<8, 16, 2, 2, 8, WeightType::kInt8>::WeightFormat, format::Qc8>::value,
      "");
  static_assert(
      std::is_same<LinearConfig<16, 8, WeightType::kInt8>::WeightFormat, format::Qc8>::value, "");
  static_assert(
      std::is_same<MlpConfig<16, 32, Activation::kSwiGlu>::WeightFormat, format::F32>::value, "");
  static_assert(std::is_same<LatentConfig<8, 32, 2, 16, 8, 8, 8, WeightType::kInt8>::WeightFormat,
                             format::Qc8>::value,
                "");
  using D = DecoderConfig<32, 16, 1, 2, 2, 8, 32, 8, WeightType::kInt8>;
  static_assert(std::is_same<D::WeightFormat, format::Qc8>::value, "");
  static_assert(std::is_same<D::Attn::WeightFormat, D::Ffn::WeightFormat>::value &&
                    std::is_same<D::Head::WeightFormat, D::WeightFormat>::value,
                "a Decoder's blocks share its format");
  static_assert(std::is_same<Config<8, 16, 2, 2, 8>::WeightElem, float>::value &&
                    std::is_same<D::WeightElem, std::int8_t>::value,
                "");
  EXPECT_TRUE((Config<8, 16, 2, 2, 8, WeightType::kInt8>::kInt8Weights));
  EXPECT_FALSE((Config<8, 16, 2, 2, 8>::kInt8Weights));
}

TEST(Format, BytesAndScalesOfAMatrix) {
  using F = FormatTraits<format::F32>;
  using Q = FormatTraits<format::Qc8>;
  using G = FormatTraits<Qg8x32>;
  using I4 = FormatTraits<Q4x32>;
  // 48 inputs, 20 outputs; kPanel16 rounds the outputs up to 32.
  EXPECT_EQ(F::matrix_bytes(WeightLayout::kOutIn, 48, 20), 48u * 20u * 4u);
  EXPECT_EQ(F::matrix_bytes(WeightLayout::kPanel16, 48, 20), 48u * 32u * 4u);
  EXPECT_EQ(Q::matrix_bytes(WeightLayout::kInOut, 48, 20), 48u * 20u);
  EXPECT_EQ(I4::matrix_bytes(WeightLayout::kInOut, 48, 20), 48u * 20u / 2u);
  EXPECT_EQ(I4::bytes(3), 2u);  // the last byte rounded up
  EXPECT_EQ(F::scale_count(48, 20), 0u);
  EXPECT_EQ(Q::scale_count(48, 20), 20u);
  EXPECT_EQ(G::scale_count(48, 20), 40u);  // ceil(48 / 32) = 2 groups per column
  EXPECT_EQ(G::scale_count(64, 20), 40u);
  EXPECT_EQ(G::scale_count(65, 20), 60u);
  EXPECT_FALSE(F::kScaled);
  EXPECT_TRUE(Q::kScaled && G::kScaled && I4::kScaled);
}

TEST(Format, ScaleIndexAndElementOffsets) {
  using Q = FormatTraits<format::Qc8>;
  using G = FormatTraits<Qg8x32>;
  using I4 = FormatTraits<Q4x32>;
  constexpr WeightLayout kOI = WeightLayout::kOutIn, kIO = WeightLayout::kInOut;
  EXPECT_EQ(Q::scale_index(kOI, 47, 5, 48, 20), 5u);
  EXPECT_EQ(Q::scale_index(kIO, 47, 5, 48, 20), 5u);
  // Scales stored like the rows. kOutIn: column o's groups are contiguous,
  // (i, o) -> o * groups + i / 32.
  EXPECT_EQ(G::scale_index(kOI, 0, 0, 48, 20), 0u);
  EXPECT_EQ(G::scale_index(kOI, 31, 0, 48, 20), 0u);
  EXPECT_EQ(G::scale_index(kOI, 32, 0, 48, 20), 1u);
  EXPECT_EQ(G::scale_index(kOI, 40, 7, 48, 20), 15u);
  // kInOut and kPanel16: a group's outputs are contiguous, (i, o) -> (i / 32) * out + o.
  EXPECT_EQ(G::scale_index(kIO, 31, 7, 48, 20), 7u);
  EXPECT_EQ(G::scale_index(kIO, 40, 7, 48, 20), 27u);
  EXPECT_EQ(G::scale_index(WeightLayout::kPanel16, 40, 7, 48, 20), 27u);
  EXPECT_EQ(G::groups(48), 2u);
  EXPECT_EQ(Q::groups(48), 1u);
  EXPECT_EQ(FormatTraits<format::F32>::groups(48), 0u);
  EXPECT_EQ(FormatTraits<format::F32>::elem_offset(37), 37u);
  EXPECT_EQ(Q::elem_offset(37), 37u);
  EXPECT_EQ(I4::elem_offset(64), 32u);  // two int4 per byte
}

TEST(Format, WidenIsTheScaledValue) {
  using F = FormatTraits<format::F32>;
  using Q = FormatTraits<format::Qc8>;
  const float w[3] = {1.5f, -2.25f, 0.0f};
  const std::int8_t q[3] = {-127, 3, 127};
  EXPECT_EQ(F::widen(F::load(w, 1), 123.0f), -2.25f);  // unscaled: the scale is not read
  EXPECT_EQ(Q::widen(Q::load(q, 0), 0.5f), -63.5f);
  EXPECT_EQ(Q::widen(Q::load(q, 2), 0.25f), 31.75f);
}

TEST(Format, MatrixRecordCompleteAndOverlaps) {
  // Each array with room past the matrix, so a probe just past it is inside the same array.
  static float data[64 + 8], scales[8 + 8];
  static std::int8_t qdata[64 + 8];
  const Matrix<format::F32> f{data, nullptr};
  EXPECT_TRUE(f.complete());  // fp32 needs no scales
  EXPECT_FALSE((Matrix<format::F32>{nullptr, scales}.complete()));
  EXPECT_FALSE((Matrix<format::Qc8>{qdata, nullptr}.complete()));
  const Matrix<format::Qc8> q{qdata, scales};
  EXPECT_TRUE(q.complete());
  // 8 inputs x 8 outputs: the int8 matrix is 64 bytes, its scales 8 floats.
  EXPECT_TRUE(q.overlaps(qdata + 63, 1, WeightLayout::kInOut, 8, 8));
  EXPECT_FALSE(q.overlaps(qdata + 64, 1, WeightLayout::kInOut, 8, 8));
  EXPECT_TRUE(q.overlaps(scales + 7, 4, WeightLayout::kInOut, 8, 8));
  EXPECT_FALSE(q.overlaps(scales + 8, 4, WeightLayout::kInOut, 8, 8));
  EXPECT_TRUE(f.overlaps(data + 63, 4, WeightLayout::kOutIn, 8, 8));
  EXPECT_FALSE(f.overlaps(data + 64, 4, WeightLayout::kOutIn, 8, 8));
  EXPECT_FALSE(f.overlaps(scales, sizeof scales, WeightLayout::kOutIn, 8, 8));  // not read
}

TEST(Format, ViewsHoldOneRecordPerMatrix) {
  using Cfg = microattn::Config<8, 16, 2, 1, 8, WeightType::kInt8>;
  static std::int8_t wq[16 * 16], wk[16 * 8], wv[16 * 8], wo[16 * 16];
  static float sq[16], sk[8], sv[8], so[16];
  const microattn::Weights<Cfg> w(WeightLayout::kInOut, wq, sq, wk, sk, wv, sv, wo, so);
  EXPECT_TRUE(w.q().data == wq && w.q().scales == sq);
  EXPECT_TRUE(w.k().data == wk && w.k().scales == sk);
  EXPECT_TRUE(w.v().data == wv && w.v().scales == sv);
  EXPECT_TRUE(w.o().data == wo && w.o().scales == so);
  microattn::Weights<Cfg> missing = w;
  missing.s_v = nullptr;  // a scaled format's record is incomplete without its scales
  EXPECT_FALSE(missing.complete());
  EXPECT_EQ(missing.check(), microattn::Status::kNullPointer);
}

TEST(Format, SliceOfARecordOffsetsDataAndScales) {
  static std::int8_t q[48 * 64];
  static float s[64 * 2];
  // Per column: columns from 16 on start at element 16 (kInOut) and scale 16.
  const auto a = microattn::internal::weight_slice(Matrix<format::Qc8>{q, s}, WeightLayout::kInOut,
                                                   48, 64, 16);
  EXPECT_TRUE(a.b == q + 16 && a.ldb == 64u && a.scale == s + 16);
  // kOutIn: column 16 is row 16 of [out][in]; kPanel16: panel 1, a panel stride of 48 * 16.
  const auto b = microattn::internal::weight_slice(Matrix<format::Qc8>{q, s}, WeightLayout::kOutIn,
                                                   48, 64, 16);
  EXPECT_TRUE(b.b == q + 16 * 48 && b.ldb == 48u && b.scale == s + 16);
  const auto c = microattn::internal::weight_slice(Matrix<format::Qc8>{q, s},
                                                   WeightLayout::kPanel16, 48, 64, 16);
  EXPECT_TRUE(c.b == q + 16 * 48 && c.ldb == 48u * 16u && c.scale == s + 16);
  // Groups of 32 along 48 inputs: 2 scales per column, so column 16's start at scale 32
  // (kOutIn: [out][groups]), a column's next group 1 further.
  const auto g =
      microattn::internal::weight_slice(Matrix<Qg8x32>{q, s}, WeightLayout::kOutIn, 48, 64, 16);
  EXPECT_TRUE(g.b == q + 16 * 48 && g.scale.p == s + 32 && g.scale.col_stride == 2u &&
              g.scale.group_stride == 1u);
  for (int i = 0; i < 128; ++i) s[i] = float(i);
  EXPECT_EQ(g.scale.at(40, 3), float(32 + 3 * 2 + 1));  // column 19, group 1
  // kInOut ([groups][out]): column 16's first scale is 16, its next group 64 further.
  const auto gi =
      microattn::internal::weight_slice(Matrix<Qg8x32>{q, s}, WeightLayout::kInOut, 48, 64, 16);
  EXPECT_TRUE(gi.b == q + 16 && gi.scale.p == s + 16 && gi.scale.col_stride == 1u &&
              gi.scale.group_stride == 64u);
  EXPECT_EQ(gi.scale.at(40, 3), float(16 + 3 + 64));
  // fp32: no scales in the slice, whatever the record holds.
  static float f[48 * 64];
  const auto h = microattn::internal::weight_slice(Matrix<format::F32>{f, s}, WeightLayout::kInOut,
                                                   48, 64, 16);
  EXPECT_TRUE(h.b == f + 16 && h.scale == nullptr);
}

}  // namespace
