#include <gtest/gtest.h>

#include "moegemm/error.hpp"
#include "moegemm/types.hpp"

using namespace moegemm;

TEST(TensorView, ContiguousStridesAreRowMajor) {
  auto v = TensorView::contiguous(nullptr, DType::kBFloat16, {4, 3, 2});
  EXPECT_EQ(v.rank, 3);
  EXPECT_EQ(v.stride(0), 6);
  EXPECT_EQ(v.stride(1), 2);
  EXPECT_EQ(v.stride(-1), 1);
  EXPECT_EQ(v.numel(), 24);
  EXPECT_EQ(v.describe(), "bfloat16[4, 3, 2] strides (6, 2, 1)");
}

TEST(TensorView, RankAboveFourIsRejected) {
  EXPECT_THROW(TensorView::contiguous(nullptr, DType::kFloat32, {1, 2, 3, 4, 5}), Error);
}

TEST(Error, CarriesCodeAndMessage) {
  Error e(ErrorCode::kInvalidArgument, "a.data: must be K-major");
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_STREQ(e.what(), "moegemm: invalid argument: a.data: must be K-major");
  EXPECT_EQ(e.message(), "a.data: must be K-major");
  EXPECT_EQ(Error(ErrorCode::kCaptureError, "x").message(), "x");
}

TEST(DType, ElementSizes) {
  EXPECT_EQ(element_size(DType::kFloat8E4M3), 1u);
  EXPECT_EQ(element_size(DType::kBFloat16), 2u);
  EXPECT_EQ(element_size(DType::kFloat32), 4u);
  EXPECT_EQ(element_size(DType::kInt32), 4u);
}
