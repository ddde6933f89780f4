// SPDX-License-Identifier: Apache-2.0
// UTF-8 decoding for the tokenizer: the next code point of a byte string,
// strictly (no overlong forms, no surrogates, nothing above U+10FFFF), and
// the repair of a byte string into valid UTF-8 for printing.
// An ill-formed sequence is one unit of its "maximal subpart" (Unicode
// 3.9, the WHATWG decoder's rule): a lead byte and the continuation bytes
// that fit it, or a single stray byte. Each becomes one U+FFFD.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace zerodp::text {

inline constexpr char32_t kReplacementChar = 0xFFFD;

struct Utf8Char {
  char32_t code = 0;  // the code point; kReplacementChar when !valid
  size_t length = 0;  // bytes it takes (>= 1)
  bool valid = false;
};

// The code point starting at bytes[at]. REQUIRES at < bytes.size().
Utf8Char next_code_point(std::string_view bytes, size_t at);

// `bytes` with every ill-formed or incomplete sequence replaced by U+FFFD
// (the bytes EF BF BD); valid UTF-8 comes back unchanged.
std::string to_valid_utf8(std::string_view bytes);

// The code point as UTF-8 bytes. REQUIRES c <= 0x10FFFF.
std::string utf8_encode(char32_t c);

}  // namespace zerodp::text
