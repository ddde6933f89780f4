// SPDX-License-Identifier: Apache-2.0
// GPT-2's pre-tokenizer: splits text into the pieces BPE encodes one at a
// time, as the regex of GPT-2's encoder (and of the JavaScript reference,
// npm's gpt-3-encoder) does:
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// implemented by hand over UTF-8 code points (std::regex has no \p{L}),
// with JavaScript's classes (unicode_tables.h). At each position the first
// alternative that matches wins; every code point matches one of them, so
// the pieces tile the text. An ill-formed UTF-8 sequence (where the
// JavaScript reference would see U+FFFD) counts as one code point of the
// class [^\s\p{L}\p{N}] and keeps its bytes, so any bytes round-trip.
// Thread-safety: a PreTokenizer is one cursor over text it does not own.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace zerodp::text {

class PreTokenizer {
 public:
  explicit PreTokenizer(std::string_view text) : text_(text) {}
  // The next piece (a view into the text); false at the end.
  bool next(std::string_view& piece);

 private:
  std::string_view text_;
  size_t at_ = 0;
};

// Every piece of `text`, in order (they concatenate to `text`).
std::vector<std::string_view> pretokenize(std::string_view text);

}  // namespace zerodp::text
