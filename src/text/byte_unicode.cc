// SPDX-License-Identifier: Apache-2.0
#include "text/byte_unicode.h"

#include <array>

#include "text/utf8.h"

namespace zerodp::text {
namespace {

bool stands_for_itself(int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

std::array<char32_t, 256> make_table() {
  std::array<char32_t, 256> table{};
  char32_t next = 0x100;
  for (int b = 0; b < 256; ++b) table[b] = stands_for_itself(b) ? static_cast<char32_t>(b) : next++;
  return table;
}

const std::array<char32_t, 256>& table() {
  static const std::array<char32_t, 256> t = make_table();
  return t;
}

}  // namespace

char32_t byte_to_unicode(uint8_t byte) { return table()[byte]; }

int unicode_to_byte(char32_t c) {
  if (c < 0x100) return stands_for_itself(static_cast<int>(c)) ? static_cast<int>(c) : -1;
  const auto& t = table();
  for (int b = 0; b < 256; ++b) {
    if (t[b] == c) return b;
  }
  return -1;
}

bool byte_level_decode(std::string_view written, std::string& bytes) {
  bytes.clear();
  for (size_t i = 0; i < written.size();) {
    const Utf8Char c = next_code_point(written, i);
    const int b = c.valid ? unicode_to_byte(c.code) : -1;
    if (b < 0) return false;
    bytes += static_cast<char>(b);
    i += c.length;
  }
  return !bytes.empty();
}

}  // namespace zerodp::text
