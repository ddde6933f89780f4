// SPDX-License-Identifier: Apache-2.0
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/regex_split.h"

#include <pcre2.h>

#include "core/error.h"

namespace zerodp::text {

struct RegexSplit::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

// JavaScript's \s: WhiteSpace (tab, VT, FF, U+FEFF and the Zs spaces) and
// LineTerminator (LF, CR, U+2028, U+2029), as a class body. PCRE2's own
// \s also takes U+0085 and not U+FEFF.
constexpr const char* kJsSpace =
    "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}";

std::string javascript_white_space(const std::string& pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      if (e == 's') {
        // Appended piece by piece: GCC 12's -Wrestrict misreads an inlined
        // "[" + std::string(...) as an overlapping copy (a false warning).
        if (!in_class) out += '[';
        out += kJsSpace;
        if (!in_class) out += ']';
      } else if (e == 'S' && !in_class) {
        out += "[^";
        out += kJsSpace;
        out += ']';
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      // A ']' (or '^]') right after '[' is a literal, not the end.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

RegexSplit::RegexSplit(const std::string& pattern, const std::string& where)
    : pattern_(pattern), code_(std::make_unique<Code>()) {
  const std::string js = javascript_white_space(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(js.data()), js.size(),
                              PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error, &offset, nullptr);
  if (code_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    ZDP_THROW(InputFileError, "[tokenizer] {}: the Split regex '{}' does not compile at offset {}: {}", where, pattern,
              offset, reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);  // faster where the JIT exists; the interpreter otherwise
}

RegexSplit::~RegexSplit() = default;

void RegexSplit::split(std::string_view text, std::vector<std::string_view>& out, bool matches_only) const {
  pcre2_match_data* match = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  ZDP_CHECK(match != nullptr, Error, "[tokenizer] out of memory for a regex match");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t last = 0, at = 0;
  while (at < text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), at, 0, match, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(match);
      ZDP_THROW(Error, "[tokenizer] the Split regex '{}' failed on the text (PCRE2 error {})", pattern_, rc);
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
    const size_t start = ov[0], end = ov[1];
    if (end == start) {  // an empty match is no piece: step over one byte (and the rest of its character)
      at = start + 1;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
      continue;
    }
    if (start > last && !matches_only) out.push_back(text.substr(last, start - last));
    out.push_back(text.substr(start, end - start));
    last = at = end;
  }
  if (last < text.size() && !matches_only) out.push_back(text.substr(last));
  pcre2_match_data_free(match);
}

}  // namespace zerodp::text
