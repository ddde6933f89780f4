// SPDX-License-Identifier: Apache-2.0
#include "text/utf8.h"

#include <cstdint>

namespace zerodp::text {

Utf8Char next_code_point(std::string_view bytes, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(bytes[i]); };
  const uint8_t lead = byte(at);
  if (lead < 0x80) return {lead, 1, true};
  // Unicode's table 3-7: the continuation bytes a lead byte takes, and the
  // narrower range of its first one (no overlongs, surrogates or > U+10FFFF).
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  char32_t code = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    need = 1;
    code = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    need = 2;
    code = lead & 0x0F;
    if (lead == 0xE0) lo = 0xA0;
    if (lead == 0xED) hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    need = 3;
    code = lead & 0x07;
    if (lead == 0xF0) lo = 0x90;
    if (lead == 0xF4) hi = 0x8F;
  } else {
    return {kReplacementChar, 1, false};
  }
  for (size_t k = 1; k <= need; ++k) {
    const size_t i = at + k;
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xBF;
    if (i >= bytes.size() || byte(i) < min || byte(i) > max) return {kReplacementChar, k, false};
    code = (code << 6) | (byte(i) & 0x3F);
  }
  return {code, need + 1, true};
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const Utf8Char c = next_code_point(bytes, i);
    if (c.valid) {
      out.append(bytes.substr(i, c.length));
    } else {
      out += utf8_encode(kReplacementChar);
    }
    i += c.length;
  }
  return out;
}

std::string utf8_encode(char32_t c) {
  std::string out;
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
  return out;
}

}  // namespace zerodp::text
