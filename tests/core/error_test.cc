// SPDX-License-Identifier: Apache-2.0
#include "core/error.h"

#include <gtest/gtest.h>

namespace zerodp {
namespace {

TEST(Error, ChecksNameOperationValuesAndLocation) {
  try {
    const int count = 10, ranks = 4;
    ZDP_CHECK_EQ(count % ranks, 0, ShapeError, "[reduce_scatter] count not divisible");
    FAIL() << "no throw";
  } catch (const ShapeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[reduce_scatter] count not divisible"), std::string::npos) << what;
    EXPECT_NE(what.find("got 2 vs 0"), std::string::npos) << what;
    EXPECT_NE(what.find("error_test.cc:"), std::string::npos) << what;
    EXPECT_EQ(e.message().find("error_test.cc"), std::string::npos) << e.message();
  }
  EXPECT_THROW(ZDP_CHECK(false, CommError, "[barrier] rank {} failed", 3), CommError);
  EXPECT_NO_THROW(ZDP_CHECK(true, CommError, "never"));
}

TEST(Error, HierarchyIsCatchableAsError) {
  EXPECT_THROW(ZDP_THROW(IoError, "[read] no such file {}", "x"), Error);
  EXPECT_THROW(ZDP_THROW(ConfigError, "[train] bad"), std::runtime_error);
}

}  // namespace
}  // namespace zerodp
