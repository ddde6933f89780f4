// SPDX-License-Identifier: Apache-2.0
#include "ckpt/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace zerodp::ckpt {
namespace {

uint32_t of(const std::string& s) { return crc32c(s.data(), s.size()); }

TEST(Crc32c, KnownValues) {
  EXPECT_EQ(of(""), 0u);
  EXPECT_EQ(of("123456789"), 0xE3069283u);  // the CRC-32C check value
  // RFC 3720 (iSCSI) B.4 test vectors.
  std::vector<unsigned char> b(32, 0);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x8A9136AAu);
  std::fill(b.begin(), b.end(), 0xFF);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) b[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) b[i] = static_cast<unsigned char>(31 - i);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x113FDB5Cu);
}

TEST(Crc32c, PortableMatchesDispatchedAtEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<unsigned char> data(300);
  for (auto& x : data) x = static_cast<unsigned char>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len = 0; start + len <= data.size(); len += 7) {
      EXPECT_EQ(crc32c(data.data() + start, len), crc32c_extend_portable(0, data.data() + start, len))
          << start << " " << len;
    }
  }
}

TEST(Crc32c, ExtendIsConcatenation) {
  const std::string a = "zerodp checkpoint ", b = "shard record";
  EXPECT_EQ(crc32c_extend(of(a), b.data(), b.size()), of(a + b));
  EXPECT_EQ(crc32c_extend_portable(of(a), b.data(), b.size()), of(a + b));
}

TEST(Crc32c, CombineIsConcatenation) {
  // Every split of a text, the empty parts included, and a long second part
  // (the power's higher bits).
  std::string text;
  for (int i = 0; i < 300; ++i) text += static_cast<char>((i * 37 + 11) % 251);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    const std::string a = text.substr(0, cut), b = text.substr(cut);
    ASSERT_EQ(crc32c_combine(of(a), of(b), b.size()), of(text)) << cut;
  }
  const std::string big(1 << 20, 'z');
  EXPECT_EQ(crc32c_combine(of("head"), of(big), big.size()), of("head" + big));
  // Three parts, combined left to right, as a shard file's parts are.
  EXPECT_EQ(crc32c_combine(crc32c_combine(of("ab"), of("cde"), 3), of("fghij"), 5), of("abcdefghij"));
}

TEST(Crc32c, DetectsEverySingleBitFlip) {
  std::string s(64, 'x');
  const uint32_t base = of(s);
  for (size_t i = 0; i < s.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string t = s;
      t[i] = static_cast<char>(t[i] ^ (1 << bit));
      EXPECT_NE(of(t), base);
    }
  }
}

}  // namespace
}  // namespace zerodp::ckpt
