// Text into training tokens the way llm.c's data scripts make them
// (dev/data/tinyshakespeare.py): every document starts with the
// end-of-text token, and a blank line ends a document. That is, the text
// is read as "<|endoftext|>" + text with every "\n\n" followed by
// "<|endoftext|>" (left to right, not overlapping; the "\n\n" stays with
// the document before it); each document is encoded on its own.
// Thread-safety: as the tokenizer's encode (one thread at a time).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text/bpe_tokenizer.h"

namespace zerodp::text {

// Appends the tokens of `text`, its documents each after end_of_text.
// REQUIRES tokenizer.end_of_text() >= 0.
void encode_documents(BpeTokenizer& tokenizer, std::string_view text, std::vector<int32_t>& out);

struct TokenSplit {
  std::vector<int32_t> train, val;
};

// Holds out the last `fraction` of the tokens for validation, the cut moved
// to the nearest document start (a `document_start` token) so validation
// starts a document; without one past the first token, the cut is exact.
// REQUIRES 0 < fraction < 1 and tokens.size() >= 2.
TokenSplit split_validation(std::vector<int32_t> tokens, double fraction, int32_t document_start);

}  // namespace zerodp::text
