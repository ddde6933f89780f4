// SPDX-License-Identifier: Apache-2.0
// The predicates over the generated ranges (unicode_tables.cc): ASCII by
// hand (the common case), everything else by binary search.
#include <algorithm>

#include "text/unicode_tables.h"

namespace zerodp::text {
namespace {

bool in_ranges(const CodePointRange* ranges, size_t count, char32_t c) {
  const CodePointRange* end = ranges + count;
  // The first range whose last code point is >= c.
  const CodePointRange* it =
      std::lower_bound(ranges, end, c, [](const CodePointRange& r, char32_t v) { return r.last < v; });
  return it != end && it->first <= c;
}

}  // namespace

bool is_letter(char32_t c) {
  if (c < 0x80) return (c | 0x20) >= 'a' && (c | 0x20) <= 'z';
  return in_ranges(kLetterRanges, kLetterRangeCount, c);
}

bool is_number(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_ranges(kNumberRanges, kNumberRangeCount, c);
}

bool is_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= '\t' && c <= '\r');
  return in_ranges(kSpaceRanges, kSpaceRangeCount, c);
}

}  // namespace zerodp::text
