// SPDX-License-Identifier: Apache-2.0
// GPT-2's byte-level BPE tokenizer: text -> token ids -> bytes.
// encode: the pre-tokenizer (pretokenizer.h) splits the text; each piece's
// bytes start as one token per byte and the adjacent pair with the lowest
// merge rank is merged, leftmost first, until no pair of the piece has a
// rank. That is GPT-2's encoder.py (which merges every occurrence of the
// best pair per round: the same result, since a merge only makes pairs of
// higher rank). Text is encoded as text: "<|endoftext|>" in it is 7
// ordinary tokens, as in the reference; the end-of-text token is added by
// the caller (documents.h).
// decode: the tokens' bytes, concatenated; an id outside the vocabulary
// becomes U+FFFD. The bytes may end inside a UTF-8 sequence
// (utf8.h's to_valid_utf8 repairs them for printing).
// Thread-safety: encode() fills a cache, so one thread at a time per
// tokenizer; encode_uncached(), decode() and the accessors are const and
// thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/gpt2_vocab.h"

namespace zerodp::text {

inline constexpr int32_t kGpt2EndOfText = 50256;
inline constexpr int kGpt2VocabSize = 50257;

class BpeTokenizer {
 public:
  explicit BpeTokenizer(BpeVocab vocab);

  std::vector<int32_t> encode(std::string_view text);
  // Appends the ids of `text` to `out`.
  void encode_into(std::string_view text, std::vector<int32_t>& out);
  // The same ids without the cache: const and thread-safe, for short texts
  // (a prompt).
  std::vector<int32_t> encode_uncached(std::string_view text) const;
  std::string decode(std::span<const int32_t> ids) const;

  int vocab_size() const { return static_cast<int>(vocab_.tokens.size()); }
  // The id of "<|endoftext|>"; -1 if the vocabulary has none.
  int32_t end_of_text() const { return end_of_text_; }
  // Where the vocabulary files were read.
  const std::string& dir() const { return vocab_.dir; }

 private:
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  BpeVocab vocab_;
  int32_t byte_token_[256];
  // (left << 32 | right) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  int32_t end_of_text_ = -1;
  std::unordered_map<std::string, std::vector<int32_t>> cache_;  // piece -> ids
};

}  // namespace zerodp::text
