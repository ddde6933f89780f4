// SPDX-License-Identifier: Apache-2.0
// Corpus: the token streams a run trains and validates on, from one of three
// sources:
//   - the embedded arithmetic corpus (no file needed): lines "347+85=432\n"
//     as bytes, with held-out problems (never in training) for validation
//     and an exact-match accuracy test of the answers (operands below 100);
//   - any UTF-8 text file, tokenised as bytes (vocab 256), the last 10% held
//     out; or, with a tokenizer, with GPT-2's BPE into llm.c's documents
//     (text/documents.h: the tokens `zerodp tokenize` writes), the last 10%
//     held out;
//   - llm.c token shards (.bin: 256 int32 header, magic 20240520, uint16
//     tokens), with the validation shard beside the training one.
// --data may be a glob: the matching files, sorted, are concatenated.
// Thread-safety: immutable after loading; shared by all rank threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"

namespace zerodp::train {

struct ArithmeticProblem {
  int a = 0, b = 0;
  std::string prompt() const;  // "a+b="
  std::string answer() const;  // "c\n"
};

struct Corpus {
  std::string description;     // one line for the log
  std::vector<int32_t> train;  // token ids
  std::vector<int32_t> val;
  int vocab = 256;                          // smallest vocabulary that holds every id
  bool byte_level = true;                   // tokens are bytes (printable as text)
  std::vector<ArithmeticProblem> held_out;  // the embedded corpus only
  int record_length = 1;                    // windows start at multiples of this (10: one arithmetic line)
  // Chat data (train/chat_data.h) only: each position's target, -1 where
  // there is no loss; empty = the next token of the stream.
  std::vector<int32_t> train_targets, val_targets;
  // Packed chat data (--chat-packing pack) only: each position's record id
  // within its window (model::Batch::segments); empty = one record a window.
  std::vector<int32_t> train_segments, val_segments;
  // The two splits as messages name them: "the validation split (the last 10% of notes.txt)".
  std::string train_name = "the training split";
  std::string val_name = "the validation split";
  // The tokenizer of the ids (--tokenizer), which turns the sample into
  // text; null for bytes, and for shards without --tokenizer.
  std::shared_ptr<const text::BpeTokenizer> tokenizer;
  // Chat data only: its template, in which the sample is an assistant turn
  // answering --prompt as a user message, and the default such message (the
  // first validation record's first user turn).
  std::optional<text::ChatTemplate> chat_template;
  std::string chat_sample_prompt;
};

// The embedded corpus, generated from a fixed seed (the same on every rank
// and every run): all a+b with a, b < 1000; about 10% held out.
Corpus arithmetic_corpus();

// Text files or llm.c .bin shards, by extension; `path` and `val_path` may
// be globs (data_files.h). val_path may name the validation shards
// (default: validation_pattern(path), else the last 10% of the training
// tokens). `tokenizer` ("gpt2" or a directory, text/tokenizer_lookup.h)
// tokenises text with GPT-2's BPE; with shards, which are tokens already,
// it only turns the sample into text (and must hold every id). Throws
// ConfigError for a missing, empty or unreadable file, a glob that matches
// nothing, text and shards mixed, or a tokenizer that is not found;
// InputFileError for a malformed shard or tokenizer file.
Corpus load_corpus(const std::string& path, const std::string& val_path = "", const std::string& tokenizer = "");

// The sample's tokens as printable text: bytes or the tokenizer's
// decoding, with every ill-formed UTF-8 sequence (a character cut by the
// end, a byte model's invention) replaced by U+FFFD; ids joined by spaces
// for shards without a tokenizer.
std::string sample_to_text(const Corpus& corpus, const std::vector<int32_t>& tokens);

// Bytes of text as tokens and back (byte-level tokenizer).
std::vector<int32_t> text_to_tokens(const std::string& text);
std::string tokens_to_text(const std::vector<int32_t>& tokens);

}  // namespace zerodp::train
