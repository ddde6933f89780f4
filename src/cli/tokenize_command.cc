// SPDX-License-Identifier: Apache-2.0
// zerodp tokenize IN.txt OUT.bin: a text file into llm.c token shards with
// GPT-2's BPE (--tokenizer gpt2 or a directory of its files). Documents
// follow llm.c's data scripts (text/documents.h): each starts with the
// end-of-text token 50256, and a blank line ends one. With --val-fraction F
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

void write_shard(const std::string& path, const std::vector<int32_t>& tokens) {
  std::vector<uint16_t> narrow(tokens.begin(), tokens.end());  // ids < 65536: checked by the caller
  model::write_token_shard(path, narrow);
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
  ZDP_CHECK(tokenizer->end_of_text() >= 0 && tokenizer->vocab_size() <= 65536, ConfigError,
            "[tokenize] the tokenizer in {} has {} tokens{}: llm.c shards hold uint16 ids and documents start with "
            "<|endoftext|>",
            tokenizer->dir(), tokenizer->vocab_size(), tokenizer->end_of_text() < 0 ? " and no <|endoftext|>" : "");
  std::vector<int32_t> tokens;
  text::encode_documents(*tokenizer, text, tokens);
  size_t documents = 0;
  for (int32_t t : tokens) documents += t == tokenizer->end_of_text();
  fmt::print("zerodp tokenize: {} ({} bytes) -> {} tokens in {} documents (GPT-2 BPE from {})\n", f.in, text.size(),
             tokens.size(), documents, tokenizer->dir());
  if (f.val_fraction == 0.0) {
    write_shard(f.out, tokens);
    return;
  }
  ZDP_CHECK(tokens.size() >= 2, ConfigError,
            "[tokenize] '{}' makes {} token: too few to split off --val-fraction {}; use --val-fraction 0", f.in,
            tokens.size(), f.val_fraction);
  const text::TokenSplit split = text::split_validation(std::move(tokens), f.val_fraction);
  write_shard(stem + "_train.bin", split.train);
  write_shard(stem + "_val.bin", split.val);
}

}  // namespace

void add_tokenize_command(CLI::App& app) {
  auto f = std::make_shared<TokenizeFlags>();
  auto* cmd = app.add_subcommand(
      "tokenize",
      "Tokenize a text file into llm.c token shards (256 int32 header, uint16 tokens) with GPT-2's BPE.\n"
      "Each document starts with <|endoftext|> (50256) and a blank line ends one, as in llm.c's data\n"
      "scripts. Train on the result with zerodp train --data OUT_train.bin (or OUT.bin)");
  cmd->add_option("IN", f->in, "A UTF-8 text file")->required();
  cmd->add_option("OUT", f->out, "The shard to write (.bin); with --val-fraction, OUT_train.bin and OUT_val.bin")
      ->required();
  cmd->add_option("--tokenizer", f->tokenizer,
                  "gpt2 (GPT-2's files from $ZERODP_DATA_DIR/gpt2, else beside the executable, where\n"
                  "scripts/setup puts them) or a directory holding encoder.json and vocab.bpe")
      ->capture_default_str();
  cmd->add_option("--val-fraction", f->val_fraction,
                  "Hold out the last F of the tokens as OUT_val.bin and write the rest as OUT_train.bin\n"
                  "(what zerodp train --data IN --tokenizer does with 0.1); 0 writes OUT.bin alone")
      ->capture_default_str();
  cmd->callback([f] { run(*f); });
}

}  // namespace zerodp::cli
