// SPDX-License-Identifier: Apache-2.0
// `zerodp tokenize` and `zerodp train --tokenizer` as a user runs them: bad
// input is exit code 2 with one line naming the fix (and nothing written);
// a text tokenised into shards and the same text trained on with
// --tokenizer give the same token streams. GPT-2's files come from where
// scripts/setup puts them beside the executable (--tokenizer gpt2); without
// them these tests fail with zerodp's own "run scripts/setup".
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "cli_run.h"
#include "support/scratch_dir.h"

namespace {

namespace fs = std::filesystem;
using zerodp::cli_testing::expect_refused;
using zerodp::cli_testing::Result;
using zerodp::cli_testing::run;

// A GPT with GPT-2's vocabulary that trains a step in a blink.
const std::string kSmallGpt2 =
    " --model '{\"kind\":\"gpt\",\"layers\":1,\"heads\":1,\"channels\":16,\"vocab\":50257,\"max_seq_len\":32}'"
    " --ranks 1 --steps 1 --seq-len 16 --micro-batch 2 --eval-batches 1 --held-out 0";

using TempDir = zerodp::testing::ScratchDir;

std::string story() {
  std::string s;
  for (int i = 0; i < 30; ++i) {
    s += "Chapter " + std::to_string(i) + ". It's a naïve café, they'll say; 日本語 too.\n\n";
  }
  return s;
}

// "N training tokens, M validation tokens" from train's `data:` line.
std::string token_counts(const Result& r) {
  std::smatch m;
  static const std::regex counts("([0-9]+ training tokens, [0-9]+ validation tokens)");
  return std::regex_search(r.out, m, counts) ? m[1].str() : "(no data line in: " + r.out + r.err + ")";
}

TEST(TokenizeCli, BadInputIsRefusedWithExitCode2AndNothingWritten) {
  TempDir d("zerodp_tokenize_bad");
  std::ofstream(d / "in.txt") << story();
  fs::create_directories(d.path / "empty");
  const std::string in = d / "in.txt", out = d / "out.bin";
  expect_refused("tokenize " + d / "missing.txt " + out, "missing.txt' does not exist");
  expect_refused("tokenize " + in + " " + d / "out.txt", "must end in .bin");
  expect_refused("tokenize " + in + " " + out + " --val-fraction 1", "--val-fraction 1 must be");
  expect_refused("tokenize " + in + " " + out + " --tokenizer " + d / "nowhere",
                 "is neither 'gpt2', a directory nor a file");
  std::ofstream(d / "bad.json") << "{\"model\": {\"type\": \"Unigram\"}}";
  expect_refused("tokenize " + in + " " + out + " --tokenizer " + d / "bad.json", "the model type 'Unigram'");
  expect_refused("tokenize " + in + " " + out + " --tokenizer " + d / "empty", "encoder.json does not exist");
  expect_refused("tokenize " + in, "OUT is required");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(d / "out_train.bin"));
  expect_refused("train --tokenizer gpt2", "--tokenizer gpt2 needs --data");
  expect_refused("train --data '" + d / "fineweb_train_*.bin" + "'", "matches no file");
  expect_refused("train --data " + in + " --tokenizer gpt2 --steps 1", "the model's vocabulary is 256");
  expect_refused("train --data " + in + " --tokenizer " + d / "empty" + " --steps 1", "encoder.json does not exist");
}

TEST(TokenizeCli, ShardsFromTokenizeTrainOnTheTokensOfTrainTokenizer) {
  TempDir d("zerodp_tokenize_run");
  std::ofstream(d / "story.txt") << story();
  const Result tok = run("tokenize " + d / "story.txt " + d / "story.bin --tokenizer gpt2 --val-fraction 0.1");
  ASSERT_EQ(tok.code, 0) << tok.err;
  // 30 paragraphs and, after the last blank line, an empty document (as in
  // llm.c's tinyshakespeare.py).
  EXPECT_NE(tok.out.find("in 31 documents"), std::string::npos) << tok.out;
  EXPECT_NE(tok.out.find("wrote " + d / "story_train.bin"), std::string::npos) << tok.out;
  EXPECT_NE(tok.out.find("wrote " + d / "story_val.bin"), std::string::npos) << tok.out;
  // The shards (their validation shard found by name) and the text with
  // --tokenizer: the same streams; the sample is text, not ids.
  const Result shards = run("train --data " + d / "story_train.bin" + kSmallGpt2 + " --sample-tokens 0");
  ASSERT_EQ(shards.code, 0) << shards.err;
  EXPECT_NE(shards.out.find("(" + d / "story_val.bin" + ")"), std::string::npos) << shards.out;
  const Result text = run("train --data " + d / "story.txt --tokenizer gpt2" + kSmallGpt2 + " --sample-tokens 6");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("with GPT-2 BPE from"), std::string::npos) << text.out;
  EXPECT_EQ(token_counts(shards), token_counts(text));
  EXPECT_NE(text.out.find("Sample (6 tokens"), std::string::npos) << text.out;
  // A quoted glob of shards, and the tokenizer printing a shard run's sample.
  const Result glob =
      run("train --data '" + d / "story_tr*.bin" + "' --tokenizer gpt2" + kSmallGpt2 + " --sample-tokens 4");
  ASSERT_EQ(glob.code, 0) << glob.err;
  EXPECT_NE(glob.out.find("llm.c shard " + d / "story_train.bin"), std::string::npos) << glob.out;
}

// A tokenizer.json (the text tests' fixture, vocab 270): tokenize, train on
// the shards and on the text, and shards that record another tokenizer are
// refused.
TEST(TokenizeCli, ATokenizerJsonTokenizesAndTrains) {
  TempDir d("zerodp_tokenize_json");
  std::ofstream(d / "story.txt") << story();
  const std::string json = ZERODP_TEXT_TEST_DIR "/tiny_tokenizer.json";
  const std::string model =
      " --model '{\"kind\":\"gpt\",\"layers\":1,\"heads\":1,\"channels\":16,\"vocab\":270,\"max_seq_len\":32}'"
      " --ranks 1 --steps 1 --seq-len 16 --micro-batch 2 --eval-batches 1 --held-out 0";
  const Result tok = run("tokenize " + d / "story.txt " + d / "story.bin --tokenizer " + json + " --val-fraction 0.1");
  ASSERT_EQ(tok.code, 0) << tok.err;
  EXPECT_NE(tok.out.find("in 31 documents (tokenizer.json BPE from " + json + ")"), std::string::npos) << tok.out;
  const Result shards = run("train --data " + d / "story_train.bin --tokenizer " + json + model + " --sample-tokens 4");
  ASSERT_EQ(shards.code, 0) << shards.err;
  const Result text = run("train --data " + d / "story.txt --tokenizer " + json + model + " --sample-tokens 4");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("with tokenizer.json BPE from"), std::string::npos) << text.out;
  EXPECT_EQ(token_counts(shards), token_counts(text));
  expect_refused("train --data " + d / "story_train.bin --tokenizer gpt2" + kSmallGpt2,
                 "was made by a tokenizer of 270 tokens");
}

TEST(TokenizeCli, HelpNamesEveryOption) {
  const Result help = run("tokenize --help");
  for (const char* word : {"IN", "OUT", "--tokenizer", "--val-fraction", "50256", "OUT_train.bin", "tokenizer.json"}) {
    EXPECT_NE(help.out.find(word), std::string::npos) << word;
  }
  const Result train_help = run("train --help");
  for (const char* word : {"--tokenizer", "glob", "encoder.json", "tokenizer.json"}) {
    EXPECT_NE(train_help.out.find(word), std::string::npos) << word;
  }
}

}  // namespace
