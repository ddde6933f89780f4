// SPDX-License-Identifier: Apache-2.0
// Byte-level BPE (GPT-2's; Llama 3's, Qwen2's, SmolLM2's from a
// tokenizer.json): text -> token ids -> bytes.
// encode: added tokens (tokenizer.json's added_tokens, none for GPT-2's
// files) are matched first, longest at each position, and are one id each;
// the text between them is normalized (NFC, when the file says so) and cut
// into pieces (GPT-2's pre-tokenizer, or the file's Split regexes then
// ByteLevel); each piece that is a token is that token when the file sets
// ignore_merges (Llama 3); otherwise the pre-tokenizer (pretokenizer.h) splits the text; each piece's
// bytes start as one token per byte and the adjacent pair with the lowest
// merge rank is merged, leftmost first, until no pair of the piece has a
// rank. That is GPT-2's encoder.py (which merges every occurrence of the
// best pair per round: the same result, since a merge only makes pairs of
// higher rank). With GPT-2's files text is encoded as text:
// "<|endoftext|>" in it is 7 ordinary tokens, as in the reference; the
// token that starts a document is added by the caller (documents.h).
// decode: the tokens' bytes (an added token's content), concatenated; an id
// outside the vocabulary, or without a token (a gap in a tokenizer.json's
// ids), becomes U+FFFD. The bytes may end inside a UTF-8 sequence
// (utf8.h's to_valid_utf8 repairs them for printing).
// Thread-safety: encode() fills a cache, so one thread at a time per
// tokenizer; encode_uncached(), decode() and the accessors are const and
// thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/gpt2_vocab.h"
#include "text/regex_split.h"

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
  // The token each document starts with (documents.h): "<|begin_of_text|>"
  // where there is one (Llama 3, as llm.c's Llama 3 data), otherwise
  // "<|endoftext|>" (GPT-2, Qwen2, SmolLM2); -1 if there is neither.
  int32_t document_start() const { return document_start_; }
  // Where the vocabulary files were read (the directory of GPT-2's files,
  // or the tokenizer.json).
  const std::string& dir() const { return vocab_.dir; }
  // "GPT-2 BPE from DIR" or "tokenizer.json BPE from PATH", for messages.
  std::string describe() const;
  // A 32-bit FNV-1a hash of the tokens (id -> bytes) and merges, never 0:
  // what the ids mean, recorded in token shards (model/llmc_io.h). GPT-2's
  // files and a tokenizer.json of the same vocabulary share it.
  uint32_t fingerprint() const { return fingerprint_; }
  // The tokenizer.json read; "" for GPT-2's files.
  const std::string& source() const { return vocab_.source; }

 private:
  // Calls emit(piece, -1) for each piece to BPE and emit({}, id) for each
  // added token, in text order.
  template <typename Emit>
  void for_each_piece(std::string_view text, Emit&& emit) const;
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;

  BpeVocab vocab_;
  int32_t byte_token_[256];
  // (left << 32 | right) -> (rank, merged id).
  std::unordered_map<uint64_t, std::pair<int32_t, int32_t>> merges_;
  int32_t end_of_text_ = -1;
  int32_t document_start_ = -1;
  uint32_t fingerprint_ = 0;
  std::vector<std::unique_ptr<RegexSplit>> splits_;
  std::vector<int> added_by_byte_[256];                          // first byte -> added tokens, longest first
  std::unordered_map<std::string, int32_t> piece_token_;         // bytes -> id, with ignore_merges
  std::unordered_map<std::string, std::vector<int32_t>> cache_;  // piece -> ids
};

}  // namespace zerodp::text
