// Corpus: the token streams a run trains and validates on, from one of three
// sources:
//   - the embedded arithmetic corpus (no file needed): lines "347+85=432\n"
//     as bytes, with held-out problems (never in training) for validation
//     and an exact-match accuracy test of the answers (operands below 100);
//   - any UTF-8 text file, tokenised as bytes (vocab 256), the last 10% held
//     out;
//   - llm.c token shards (.bin: 256 int32 header, magic 20240520, uint16
//     tokens), with the validation shard beside the training one.
// Thread-safety: immutable after loading; shared by all rank threads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace zerodp::train {

struct ArithmeticProblem {
  int a = 0, b = 0;
  std::string prompt() const;  // "a+b="
  std::string answer() const;  // "c\n"
};

struct Corpus {
  std::string description;        // one line for the log
  std::vector<int32_t> train;     // token ids
  std::vector<int32_t> val;
  int vocab = 256;                // smallest vocabulary that holds every id
  bool byte_level = true;         // tokens are bytes (printable as text)
  std::vector<ArithmeticProblem> held_out;  // the embedded corpus only
  int record_length = 1;          // windows start at multiples of this (10: one arithmetic line)
};

// The embedded corpus, generated from a fixed seed (the same on every rank
// and every run): all a+b with a, b < 1000; about 10% held out.
Corpus arithmetic_corpus();

// A text file (bytes) or an llm.c .bin shard, by extension; val_path may
// name the validation shard (default: "train" -> "val" in the file name,
// else the last 10% of the training tokens). Throws ConfigError for a
// missing, empty or unreadable file, IoError for a malformed shard.
Corpus load_corpus(const std::string& path, const std::string& val_path = "");

// Bytes of text as tokens and back (byte-level tokenizer).
std::vector<int32_t> text_to_tokens(const std::string& text);
std::string tokens_to_text(const std::vector<int32_t>& tokens);

}  // namespace zerodp::train
