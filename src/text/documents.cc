// SPDX-License-Identifier: Apache-2.0
#include "text/documents.h"

#include <algorithm>
#include <cmath>

namespace zerodp::text {

size_t encode_documents(BpeTokenizer& tokenizer, std::string_view text, std::vector<int32_t>& out) {
  size_t at = 0, documents = 0;
  while (true) {
    ++documents;
    const size_t blank = text.find("\n\n", at);
    const size_t end = blank == std::string_view::npos ? text.size() : blank + 2;
    out.push_back(tokenizer.document_start());
    tokenizer.encode_into(text.substr(at, end - at), out);
    if (blank == std::string_view::npos) break;
    at = end;
  }
  return documents;
}

TokenSplit split_validation(std::vector<int32_t> tokens, double fraction) {
  const size_t n = tokens.size();
  size_t held = static_cast<size_t>(std::floor(static_cast<double>(n) * fraction));
  held = std::max<size_t>(1, std::min(held, n - 1));
  TokenSplit split;
  split.val.assign(tokens.end() - static_cast<std::ptrdiff_t>(held), tokens.end());
  tokens.resize(n - held);
  split.train = std::move(tokens);
  return split;
}

}  // namespace zerodp::text
