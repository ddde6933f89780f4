// SPDX-License-Identifier: Apache-2.0
#include "train/corpus.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/error.h"
#include "model/llmc_io.h"
#include "text/documents.h"
#include "text/tokenizer_lookup.h"
#include "text/utf8.h"
#include "train/data_files.h"

namespace zerodp::train {
namespace {

// Operands are below this: two-digit sums are what a tiny GPT learns in a
// minute on two cores, so the held-out accuracy visibly climbs.
constexpr int kOperandLimit = 100;

// Held out when a hash of the pair says so: about 1 in 10, fixed forever.
bool is_held_out(int a, int b) {
  uint32_t h = static_cast<uint32_t>(a) * 2654435761u ^ static_cast<uint32_t>(b) * 2246822519u;
  h ^= h >> 15;
  h *= 2654435761u;
  h ^= h >> 13;
  return h % 10 == 0;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    ZDP_THROW(ConfigError, "[data] '{}' does not exist: give --data an existing text file or llm.c .bin shard", path);
  }
  if (std::filesystem::is_directory(path, ec)) {
    ZDP_THROW(ConfigError, "[data] '{}' is a directory: give --data a file", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) ZDP_THROW(ConfigError, "[data] cannot open '{}': check its permissions", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The shard's tokens; a shard that records its tokenizer (model/llmc_io.h)
// must record `bpe`'s when there is one.
std::vector<int32_t> shard_tokens(const std::string& path, const text::BpeTokenizer* bpe) {
  model::TokenShard shard = model::read_tokens(path);
  ZDP_CHECK(!shard.tokens.empty(), ConfigError, "[data] token shard '{}' holds no tokens", path);
  if (bpe != nullptr && shard.made_by.recorded()) {
    ZDP_CHECK(shard.made_by.vocab == bpe->vocab_size() && shard.made_by.fingerprint == bpe->fingerprint(), ConfigError,
              "[data] {} was made by a tokenizer of {} tokens (fingerprint {:08x}), not by the one in {} ({} tokens, "
              "{:08x}): give --tokenizer the tokenizer that made the shards, or drop it",
              path, shard.made_by.vocab, shard.made_by.fingerprint, bpe->dir(), bpe->vocab_size(), bpe->fingerprint());
  }
  return std::move(shard.tokens);
}

void append(std::vector<int32_t>& to, const std::vector<int32_t>& from) {
  to.insert(to.end(), from.begin(), from.end());
}

int vocab_of(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  int32_t top = 0;
  for (int32_t t : a) top = std::max(top, t);
  for (int32_t t : b) top = std::max(top, t);
  return static_cast<int>(top) + 1;
}

}  // namespace

// Fixed width (two-digit operands, three-digit sums, zero-padded): every
// digit has the same position in every line, which is what lets a tiny GPT
// learn the carries in a minute.
std::string ArithmeticProblem::prompt() const { return fmt::format("{:02d}+{:02d}=", a, b); }
std::string ArithmeticProblem::answer() const { return fmt::format("{:03d}\n", a + b); }

Corpus arithmetic_corpus() {
  Corpus corpus;
  std::vector<ArithmeticProblem> train_problems;
  for (int a = 0; a < kOperandLimit; ++a) {
    for (int b = 0; b < kOperandLimit; ++b) {
      (is_held_out(a, b) ? corpus.held_out : train_problems).push_back({a, b});
    }
  }
  // A fixed shuffle, so a window of text mixes many problems.
  std::mt19937_64 rng(20240520);  // NOLINT(cert-msc51-cpp): the same corpus every run
  std::shuffle(train_problems.begin(), train_problems.end(), rng);
  std::shuffle(corpus.held_out.begin(), corpus.held_out.end(), rng);
  std::string train_text, val_text;
  for (const auto& p : train_problems) train_text += p.prompt() + p.answer();
  for (const auto& p : corpus.held_out) val_text += p.prompt() + p.answer();
  corpus.train = text_to_tokens(train_text);
  corpus.val = text_to_tokens(val_text);
  corpus.vocab = 256;
  // Every line is "aa+bb=ccc\n": windows that start on a line give every
  // digit the same position in every sample.
  corpus.record_length = static_cast<int>((corpus.held_out.front().prompt() + corpus.held_out.front().answer()).size());
  corpus.description = fmt::format("embedded arithmetic: {} training problems ({} tokens), {} held out",
                                   train_problems.size(), corpus.train.size(), corpus.held_out.size());
  return corpus;
}

Corpus load_corpus(const std::string& path, const std::string& val_path, const std::string& tokenizer) {
  Corpus corpus;
  const std::vector<std::string> files = data_files(path);
  const bool shards = files.front().ends_with(".bin");
  for (const std::string& f : files) {
    ZDP_CHECK(f.ends_with(".bin") == shards, ConfigError,
              "[data] --data '{}' matches text files and .bin shards ({} and {}): give one kind", path, files.front(),
              f);
  }
  std::shared_ptr<text::BpeTokenizer> bpe;
  if (!tokenizer.empty()) bpe = text::load_tokenizer(tokenizer);
  corpus.tokenizer = bpe;
  const std::string what = files.size() == 1 ? files.front() : fmt::format("{} ({} files)", path, files.size());
  if (shards) {
    for (const std::string& f : files) append(corpus.train, shard_tokens(f, bpe.get()));
    const std::string val = val_path.empty() ? validation_pattern(path) : val_path;
    corpus.train_name = fmt::format("the training data ({})", what);
    if (!val.empty()) {
      for (const std::string& f : data_files(val, "--val-data")) append(corpus.val, shard_tokens(f, bpe.get()));
      corpus.val_name = fmt::format("the validation data ({})", val);
    } else {
      corpus.train_name = fmt::format("the training split (the first 90% of {})", what);
      corpus.val_name = fmt::format("the validation split (the last 10% of {})", what);
      const size_t cut = corpus.train.size() - corpus.train.size() / 10;
      corpus.val.assign(corpus.train.begin() + static_cast<std::ptrdiff_t>(cut), corpus.train.end());
      corpus.train.resize(cut);
    }
    corpus.byte_level = false;
    corpus.vocab = vocab_of(corpus.train, corpus.val);
    if (bpe) {
      ZDP_CHECK(corpus.vocab <= bpe->vocab_size(), ConfigError,
                "[data] {} holds token ids up to {} but the tokenizer in {} has {} tokens: these shards were made with "
                "another tokenizer; drop --tokenizer",
                what, corpus.vocab - 1, bpe->dir(), bpe->vocab_size());
    }
    corpus.description =
        fmt::format("llm.c shard {}: {} training tokens, {} validation tokens{}", what, corpus.train.size(),
                    corpus.val.size(), val.empty() ? " (last 10%)" : (val_path.empty() ? " (" + val + ")" : ""));
    return corpus;
  }
  // Text is validated on its own last tenth: a --val-data would not be read.
  if (!val_path.empty()) {
    warn(
        fmt::format("--val-data {} is ignored: text data is validated on its last 10%; for a validation file of "
                    "your own, make shards of both (zerodp tokenize) and pass those",
                    val_path));
  }
  corpus.train_name = fmt::format("the training split (the first 90% of {})", what);
  corpus.val_name = fmt::format("the validation split (the last 10% of {})", what);
  std::vector<std::string> texts;
  for (const std::string& f : files) {
    texts.push_back(read_file(f));
    ZDP_CHECK(!texts.back().empty(), ConfigError, "[data] '{}' is empty: give --data a file with text in it", f);
  }
  if (bpe) {
    ZDP_CHECK(bpe->document_start() >= 0, ConfigError,
              "[data] the tokenizer in {} has neither <|begin_of_text|> nor <|endoftext|> to start documents with",
              bpe->dir());
    std::vector<int32_t> tokens;  // each file is documents of its own
    for (const std::string& t : texts) text::encode_documents(*bpe, t, tokens);
    text::TokenSplit split = text::split_validation(std::move(tokens), 0.1);
    corpus.train = std::move(split.train);
    corpus.val = std::move(split.val);
    corpus.byte_level = false;
    corpus.vocab = bpe->vocab_size();
    corpus.description = fmt::format("text file {} with {}: {} training tokens, {} validation tokens (last 10%)", what,
                                     bpe->describe(), corpus.train.size(), corpus.val.size());
    return corpus;
  }
  std::string text;
  for (const std::string& t : texts) text += t;
  const size_t cut = text.size() - text.size() / 10;
  corpus.train = text_to_tokens(text.substr(0, cut));
  corpus.val = text_to_tokens(text.substr(cut));
  corpus.vocab = 256;
  corpus.description = fmt::format("text file {} as bytes: {} training tokens, {} validation tokens (last 10%)", what,
                                   corpus.train.size(), corpus.val.size());
  return corpus;
}

std::string sample_to_text(const Corpus& corpus, const std::vector<int32_t>& tokens) {
  if (corpus.tokenizer) return text::to_valid_utf8(corpus.tokenizer->decode(tokens));
  if (corpus.byte_level) return text::to_valid_utf8(tokens_to_text(tokens));
  return fmt::format("{}", fmt::join(tokens, " "));
}

std::vector<int32_t> text_to_tokens(const std::string& text) {
  std::vector<int32_t> tokens(text.size());
  for (size_t i = 0; i < text.size(); ++i) tokens[i] = static_cast<unsigned char>(text[i]);
  return tokens;
}

std::string tokens_to_text(const std::vector<int32_t>& tokens) {
  std::string text;
  for (int32_t t : tokens) text += (t >= 0 && t < 256) ? static_cast<char>(t) : '?';
  return text;
}

}  // namespace zerodp::train
