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

// A token matched in the text before it is split into pieces
// (tokenizer.json's added_tokens): the text "<|im_start|>" is this one id.
struct AddedToken {
  std::string content;  // the text it matches (and decodes to)
  int32_t id = 0;
  bool special = false;  // a control token (tokenizer.json's "special")
};

enum class Normalizer { kNone, kNfc };

// A Split step: the regex's matches are pieces, and so are the stretches
// between them ("Isolated"), unless matches_only ("Removed" with invert:
// the stretches between are dropped, as GPT-4o's file asks).
struct SplitStep {
  std::string regex;
  bool matches_only = false;
};

// How text becomes pieces: each Split step in turn (tokenizer.json's
// Sequence of Split and Digits steps), then ByteLevel: a space before each piece that
// lacks one when add_prefix_space, and GPT-2's regex when gpt2_regex.
// The defaults are GPT-2's.
struct PreTokenization {
  std::vector<SplitStep> splits;
  bool add_prefix_space = false;
  bool gpt2_regex = true;
};

struct BpeVocab {
  std::vector<std::string> tokens;  // id -> bytes; ids are 0..size-1 ("" for an id without a token)
  std::vector<BpeMerge> merges;     // rank order (rank 0 merges first)
  std::string dir;                  // where the files were read, for messages
  // tokenizer.json only (GPT-2's files have none of these):
  std::string source;             // the tokenizer.json file; "" for GPT-2's files
  std::vector<AddedToken> added;  // matched first, longest at each position
  Normalizer normalizer = Normalizer::kNone;
  PreTokenization pre;
  bool ignore_merges = false;  // a piece that is a token is that token (Llama 3)
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
