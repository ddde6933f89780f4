// SPDX-License-Identifier: Apache-2.0
// Hugging Face's tokenizer.json, read and checked, for byte-level BPE as
// GPT-2, Llama 3, Qwen2 and SmolLM2 define it:
//   model        {"type": "BPE", "vocab": {token: id}, "merges": ["a b", ...]
//                 or [["a", "b"], ...] (rank = order), "ignore_merges"}
//   added_tokens [{"id", "content", "special", ...}]: matched in the text
//                 before anything else
//   normalizer   null or NFC
//   pre_tokenizer ByteLevel, or a Sequence of Split (a regex, "Isolated",
//                 or "Removed" with invert) and Digits steps ending in
//                 ByteLevel
//   decoder      null or ByteLevel
// Tokens come back as the bytes they stand for (the vocabulary writes them
// with GPT-2's byte-to-unicode table; an added token is its content).
// What zerodp does not implement (another model type, byte_fallback,
// dropout, another normalizer, pre-tokenizer or decoder, an added token
// with lstrip/rstrip/single_word) is refused in one line naming it.
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "text/gpt2_vocab.h"

namespace zerodp::text {

inline constexpr const char* kTokenizerJsonFile = "tokenizer.json";

// Reads PATH (a tokenizer.json). Throws InputFileError naming the file, the
// problem and, where there is one, the fix.
BpeVocab load_tokenizer_json(const std::string& path);

// The same from the file's text; `where` names it in messages.
BpeVocab parse_tokenizer_json(std::string_view json_text, const std::string& where);

}  // namespace zerodp::text
