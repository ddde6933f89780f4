// SPDX-License-Identifier: Apache-2.0
// A tokenizer.json "Split" pre-tokenizer step (behavior "Isolated"): the
// text is cut at every match of a regex; each match is a piece, and so is
// each run of text between matches. The regex is Hugging Face's (Llama 3's,
// Qwen2's, ...), run by PCRE2 in UTF mode with Unicode properties (\p{L},
// \p{N}, (?i:...), (?!\S)). \s and \S are given JavaScript's meaning (the
// reference encoders are JavaScript, and GPT-2's pre-tokenizer has its
// classes): white space and line ends, U+FEFF included, U+0085 not.
// Ill-formed UTF-8 never matches: it lands in the pieces between matches,
// with its bytes kept, so the pieces always concatenate to the text.
// Thread-safety: split() is const and thread-safe (the compiled pattern is
// shared; each call has its own match data).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::text {

class RegexSplit {
 public:
  // Throws InputFileError naming `where` and PCRE2's message when the
  // pattern does not compile.
  RegexSplit(const std::string& pattern, const std::string& where);
  ~RegexSplit();
  RegexSplit(const RegexSplit&) = delete;
  RegexSplit& operator=(const RegexSplit&) = delete;

  // Appends the pieces of `text` (views into it) to `out`; with
  // matches_only, the matches alone (the text between them is dropped).
  void split(std::string_view text, std::vector<std::string_view>& out, bool matches_only = false) const;

  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  struct Code;
  std::unique_ptr<Code> code_;
};

// `pattern` with \s and \S spelled as JavaScript's white space, inside and
// outside character classes. Exposed for tests.
std::string javascript_white_space(const std::string& pattern);

}  // namespace zerodp::text
