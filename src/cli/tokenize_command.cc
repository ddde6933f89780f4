// SPDX-License-Identifier: Apache-2.0
// zerodp tokenize IN.txt OUT.bin: a text file into llm.c token shards with
// GPT-2's BPE (--tokenizer gpt2 or a directory of its files) or a Hugging
// Face tokenizer.json (Llama 3, Qwen2, SmolLM2). Documents follow llm.c's
// data scripts (text/documents.h): each starts with the tokenizer's
// document token (50256 for GPT-2), and a blank line ends one. The shards
// hold uint16 ids up to a 65,536-token vocabulary and uint32 ids above
// (llm.c's Llama 3 format), and record the tokenizer (model/llmc_io.h). With --val-fraction F
// the last F of the tokens go to OUT_val.bin and the rest to OUT_train.bin, which `zerodp train --data
// OUT_train.bin` pairs again by name.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "model/llmc_io.h"
#include "text/documents.h"
#include "text/tokenizer_lookup.h"
#include "train/output_preflight.h"

namespace zerodp::cli {
namespace {

struct TokenizeFlags {
  std::string in, out, tokenizer = text::kGpt2TokenizerName;
  double val_fraction = 0.0;
};

std::string read_text(const std::string& path) {
  std::error_code ec;
  ZDP_CHECK(std::filesystem::is_regular_file(path, ec), ConfigError,
            "[tokenize] '{}' does not exist or is not a file: give a UTF-8 text file", path);
  std::ifstream in(path, std::ios::binary);
  ZDP_CHECK(in.good(), ConfigError, "[tokenize] cannot open '{}': check its permissions", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_shard(const std::string& path, const std::vector<int32_t>& tokens, const text::BpeTokenizer& tokenizer) {
  model::write_tokens(path, tokens, {tokenizer.vocab_size(), tokenizer.fingerprint()});
  fmt::print("wrote {}: {} tokens\n", path, tokens.size());
}

void run(const TokenizeFlags& f) {
  const std::string bin = ".bin";
  const bool is_bin = f.out.size() > bin.size() && f.out.compare(f.out.size() - bin.size(), bin.size(), bin) == 0;
  ZDP_CHECK(is_bin, ConfigError, "[tokenize] the output '{}' must end in .bin (an llm.c token shard)", f.out);
  ZDP_CHECK(f.val_fraction >= 0.0 && f.val_fraction < 1.0, ConfigError,
            "[tokenize] --val-fraction {} must be at least 0 and below 1 (0: no validation shard)", f.val_fraction);
  // The outputs' folder is proved writable, then every input is read and
  // checked, before anything is written (train/output_preflight.h).
  const std::string stem = f.out.substr(0, f.out.size() - bin.size());
  for (const std::string& out : f.val_fraction == 0.0
                                    ? std::vector<std::string>{f.out}
                                    : std::vector<std::string>{stem + "_train.bin", stem + "_val.bin"}) {
    train::check_writable_file(out, "[tokenize] OUT");
  }
  const std::string text = read_text(f.in);
  const auto tokenizer = text::load_tokenizer(f.tokenizer);
  ZDP_CHECK(tokenizer->document_start() >= 0, ConfigError,
            "[tokenize] the tokenizer in {} has neither <|begin_of_text|> nor <|endoftext|>: documents start with one",
            tokenizer->dir());
  std::vector<int32_t> tokens;
  const size_t documents = text::encode_documents(*tokenizer, text, tokens);
  fmt::print("zerodp tokenize: {} ({} bytes) -> {} tokens in {} documents ({})\n", f.in, text.size(), tokens.size(),
             documents, tokenizer->describe());
  if (f.val_fraction == 0.0) {
    write_shard(f.out, tokens, *tokenizer);
    return;
  }
  ZDP_CHECK(tokens.size() >= 2, ConfigError,
            "[tokenize] '{}' makes {} token: too few to split off --val-fraction {}; use --val-fraction 0", f.in,
            tokens.size(), f.val_fraction);
  const text::TokenSplit split = text::split_validation(std::move(tokens), f.val_fraction);
  write_shard(stem + "_train.bin", split.train, *tokenizer);
  write_shard(stem + "_val.bin", split.val, *tokenizer);
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize a text file into llm.c token shards (256 int32 header; uint16 tokens, or uint32 above\n"
      "65,536 tokens) with GPT-2's BPE or a Hugging Face tokenizer.json. Each document starts with\n"
      "<|endoftext|> (50256 for GPT-2; <|begin_of_text|> where the tokenizer has one) and a blank line\n"
      "ends one, as in llm.c's data scripts. Train on the result with zerodp train --data OUT_train.bin");
  cmd->add_option("IN", f->in, "A UTF-8 text file")->required();
  cmd->add_option("OUT", f->out, "The shard to write (.bin); with --val-fraction, OUT_train.bin and OUT_val.bin")
      ->required();
  cmd->add_option("--tokenizer", f->tokenizer,
                  "gpt2 (GPT-2's files from $ZERODP_DATA_DIR/gpt2, else beside the executable, where\n"
                  "scripts/setup puts them), a directory holding encoder.json and vocab.bpe, or a\n"
                  "Hugging Face tokenizer.json (byte-level BPE: Llama 3, Qwen2, SmolLM2)")
      ->capture_default_str();
  cmd->add_option("--val-fraction", f->val_fraction,
                  "Hold out the last F of the tokens as OUT_val.bin and write the rest as OUT_train.bin\n"
                  "(what zerodp train --data IN --tokenizer does with 0.1); 0 writes OUT.bin alone")
      ->capture_default_str();
  cmd->callback([f] { run(*f); });
}

}  // namespace zerodp::cli
