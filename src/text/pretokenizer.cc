// SPDX-License-Identifier: Apache-2.0
#include "text/pretokenizer.h"

#include "text/unicode_tables.h"
#include "text/utf8.h"

namespace zerodp::text {
namespace {

enum class CharClass { kLetter, kNumber, kSpace, kOther };

CharClass class_of(const Utf8Char& c) {
  if (!c.valid) return CharClass::kOther;
  if (is_letter(c.code)) return CharClass::kLetter;
  if (is_number(c.code)) return CharClass::kNumber;
  if (is_space(c.code)) return CharClass::kSpace;
  return CharClass::kOther;
}

// The length of the contraction ('s 't 're 've 'm 'll 'd) at text[at], or 0.
size_t contraction_at(std::string_view text, size_t at) {
  if (text[at] != '\'' || at + 1 >= text.size()) return 0;
  const char a = text[at + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (at + 2 >= text.size()) return 0;
  const std::string_view two = text.substr(at + 1, 2);
  return (two == "re" || two == "ve" || two == "ll") ? 3 : 0;
}

// The end of the run of code points of class `cls` starting at `at`.
size_t run_end(std::string_view text, size_t at, CharClass cls) {
  while (at < text.size()) {
    const Utf8Char c = next_code_point(text, at);
    if (class_of(c) != cls) break;
    at += c.length;
  }
  return at;
}

}  // namespace

bool PreTokenizer::next(std::string_view& piece) {
  const size_t n = text_.size();
  const size_t start = at_;
  if (start >= n) return false;
  size_t end = start;
  if (const size_t len = contraction_at(text_, start); len > 0) {
    end = start + len;  // 's|'t|'re|'ve|'m|'ll|'d
  } else {
    const Utf8Char c = next_code_point(text_, start);
    CharClass cls = class_of(c);
    size_t body = start;
    // ` ?X+`: an ASCII space takes the run of letters, numbers or other
    // characters that follows it.
    if (c.code == ' ' && c.valid && start + 1 < n) {
      const CharClass after = class_of(next_code_point(text_, start + 1));
      if (after != CharClass::kSpace) {
        cls = after;
        body = start + 1;
      }
    }
    if (cls != CharClass::kSpace) {
      end = run_end(text_, body, cls);  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`
    } else {
      // `\s+(?!\S)`: the whitespace run, less its last code point unless the
      // run ends the text (that one then goes with the next word); a run of
      // one code point before a non-space falls through to `\s+`.
      size_t last = start;
      end = start;
      size_t count = 0;
      while (end < n) {
        const Utf8Char w = next_code_point(text_, end);
        if (class_of(w) != CharClass::kSpace) break;
        last = end;
        end += w.length;
        ++count;
      }
      if (end < n && count >= 2) end = last;
    }
  }
  piece = text_.substr(start, end - start);
  at_ = end;
  return true;
}

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  PreTokenizer cursor(text);
  std::string_view piece;
  while (cursor.next(piece)) pieces.push_back(piece);
  return pieces;
}

}  // namespace zerodp::text
