// SPDX-License-Identifier: Apache-2.0
// GPT-2's vocabulary files, read and checked: encoder.json (token -> id,
// tokens written with the byte-to-unicode table) and vocab.bpe (the merges,
// one "left right" pair per line in rank order after a "#version" line).
// Tokens come back as the bytes they stand for, merges as token ids.
// Thread-safety: pure functions over files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace zerodp::text {

struct BpeMerge {
  int32_t left = 0, right = 0;  // the pair, as token ids
  int32_t merged = 0;           // the token of left's bytes + right's bytes
};

struct BpeVocab {
  std::vector<std::string> tokens;  // id -> bytes; ids are 0..size-1
  std::vector<BpeMerge> merges;     // rank order (rank 0 merges first)
  std::string dir;                  // where the files were read, for messages
};

inline constexpr const char* kEncoderFile = "encoder.json";
inline constexpr const char* kMergesFile = "vocab.bpe";

// Reads DIR/encoder.json and DIR/vocab.bpe. Throws InputFileError naming
// the file, the problem and the fix for a file that is missing, unreadable
// or malformed: not JSON, ids not exactly 0..n-1, a character outside the
// byte table, a byte without its own token, a merge line that is not two
// tokens of the vocabulary, or a merge whose result is no token.
BpeVocab load_gpt2_vocab(const std::string& dir);

}  // namespace zerodp::text
