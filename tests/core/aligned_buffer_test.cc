// SPDX-License-Identifier: Apache-2.0
#include "core/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace zerodp {
namespace {

TEST(AlignedBuffer, AlignedZeroedAndMovable) {
  AlignedBuffer<float> a(1001);
  ASSERT_EQ(a.size(), 1001u);
  EXPECT_EQ(a.bytes(), 4004u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % kBufferAlignment, 0u);
  for (float x : a) ASSERT_EQ(x, 0.0f);
  a[3] = 2.0f;
  AlignedBuffer<float> b = std::move(a);
  EXPECT_EQ(b[3], 2.0f);
  EXPECT_EQ(b.span().size(), 1001u);
  AlignedBuffer<float> empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.data(), nullptr);
}

}  // namespace
}  // namespace zerodp
