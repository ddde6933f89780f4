// SPDX-License-Identifier: Apache-2.0
// Text into training tokens the way llm.c's data scripts make them
// (dev/data/tinyshakespeare.py): every document starts with the
// end-of-text token, and a blank line ends a document. That is, the text
// is read as "<|endoftext|>" + text with every "\n\n" followed by
// "<|endoftext|>" (left to right, not overlapping; the "\n\n" stays with
// the document before it); each document is encoded on its own.
// Thread-safety: as the tokenizer's encode (one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "text/bpe_tokenizer.h"

namespace zerodp::text {

// Appends the tokens of `text`, its documents each after end_of_text.
// (The document token is the tokenizer's document_start(): end-of-text for
// GPT-2, <|begin_of_text|> for Llama 3.) REQUIRES document_start() >= 0.
// Returns the number of documents (the text may hold the document token as
// an added token too, so counting that token can overcount).
size_t encode_documents(BpeTokenizer& tokenizer, std::string_view text, std::vector<int32_t>& out);

struct TokenSplit {
  std::vector<int32_t> train, val;
};

// Holds out the last `fraction` of the tokens for validation, at least one
// token on each side (an exact cut, as llm.c's scripts make theirs; a cut
// moved to a document start could move far in text of few documents).
// REQUIRES 0 < fraction < 1 and tokens.size() >= 2.
TokenSplit split_validation(std::vector<int32_t> tokens, double fraction);

}  // namespace zerodp::text
