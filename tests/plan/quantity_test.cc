// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/quantity.h"

namespace zerodp::plan {
namespace {

TEST(Quantity, ParsesCountsExactly) {
  EXPECT_EQ(parse_count("7.5B"), 7'500'000'000u);
  EXPECT_EQ(parse_count("7.5e9"), 7'500'000'000u);
  EXPECT_EQ(parse_count("7.5E9"), 7'500'000'000u);
  EXPECT_EQ(parse_count("124M"), 124'000'000u);
  EXPECT_EQ(parse_count("124475904"), 124'475'904u);
  EXPECT_EQ(parse_count("1T"), 1'000'000'000'000u);
  EXPECT_EQ(parse_count("350k"), 350'000u);
  EXPECT_EQ(parse_count("0.5T"), 500'000'000'000u);
  EXPECT_EQ(parse_count(" 1.25b "), 1'250'000'000u);
  EXPECT_EQ(parse_count("1.16B"), 1'160'000'000u);  // no binary-float rounding
}

TEST(Quantity, RejectsBadCounts) {
  EXPECT_THROW(parse_count(""), ConfigError);
  EXPECT_THROW(parse_count("abc"), ConfigError);
  EXPECT_THROW(parse_count("7.5X"), ConfigError);
  EXPECT_THROW(parse_count("0"), ConfigError);
  EXPECT_THROW(parse_count("-5"), ConfigError);
  EXPECT_THROW(parse_count("1.5"), ConfigError);    // not whole
  EXPECT_THROW(parse_count("1e30"), ConfigError);   // too large
  EXPECT_THROW(parse_count("7.5GB"), ConfigError);  // a size, not a count
  try {
    parse_count("7.5Q");
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("--params"), std::string::npos);
    EXPECT_NE(e.message().find("'Q'"), std::string::npos);
  }
}

TEST(Quantity, ParsesByteSizes) {
  EXPECT_EQ(parse_bytes("32GB"), 32'000'000'000u);
  EXPECT_EQ(parse_bytes("80GiB"), 80ull << 30);
  EXPECT_EQ(parse_bytes("16 gb"), 16'000'000'000u);
  EXPECT_EQ(parse_bytes("1.5TiB"), 3ull << 39);
  EXPECT_EQ(parse_bytes("512MiB"), 512ull << 20);
  EXPECT_EQ(parse_bytes("34359738368B"), 34359738368u);
  EXPECT_EQ(parse_bytes("32e9B"), 32'000'000'000u);
  // A bare number is refused, naming the ways to say it (it was read as bytes).
  try {
    parse_bytes("32", "--device-memory");
    ADD_FAILURE() << "a size without a unit was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'32' has no unit: write e.g. 32GB"), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_bytes("40G"), 40'000'000'000u);
  EXPECT_THROW(parse_bytes("32 parsecs"), ConfigError);
  EXPECT_THROW(parse_bytes("GB"), ConfigError);
  EXPECT_THROW(parse_bytes("0GB"), ConfigError);
  EXPECT_THROW(parse_bytes("99999999999TB"), ConfigError);
}

TEST(Quantity, FormatsLikeThePaper) {
  EXPECT_EQ(format_significant(31.40625), "31.41");
  EXPECT_EQ(format_significant(120.0), "120");
  EXPECT_EQ(format_significant(1.875), "1.875");
  EXPECT_EQ(format_significant(0.1171875), "0.1172");
  EXPECT_EQ(format_significant(16000), "16000");
  EXPECT_EQ(format_significant(0), "0");
  EXPECT_EQ(format_gb(1.875e9), "1.875 GB");
  EXPECT_EQ(format_gib(1073741824.0 * 1.5), "1.5 GiB");
  EXPECT_EQ(format_count(7.5e9), "7.5B");
  EXPECT_EQ(format_count(124475904), "124.5M");
  EXPECT_EQ(format_count(1e12), "1T");
  EXPECT_EQ(format_count(512), "512");
  EXPECT_EQ(format_thousands(124475904), "124,475,904");
  EXPECT_EQ(format_thousands(7), "7");
}

}  // namespace
}  // namespace zerodp::plan
