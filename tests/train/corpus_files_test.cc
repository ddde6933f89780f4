// SPDX-License-Identifier: Apache-2.0
// Data files beyond one: globs of llm.c shards (sorted, concatenated, with
// their validation shards found by '_train_' -> '_val_'), text with GPT-2's
// BPE (the tokens `zerodp tokenize` writes), the round trip of those tokens
// through shards, and the sample as valid UTF-8.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/llmc_io.h"
#include "support/scratch_dir.h"
#include "text/bpe_tokenizer.h"
#include "text/documents.h"
#include "text/gpt2_vocab.h"
#include "train/corpus.h"
#include "train/data_files.h"

namespace zerodp::train {
namespace {

namespace fs = std::filesystem;
using Ids = std::vector<int32_t>;

using TempDir = zerodp::testing::ScratchDir;

void write_shard(const std::string& path, const Ids& ids) {
  const std::vector<uint16_t> narrow(ids.begin(), ids.end());
  model::write_token_shard(path, narrow);
}

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.message();
  }
  return "(no ConfigError)";
}

// The build's GPT-2 files (scripts/setup installs them), or a failed test.
std::string gpt2_dir() {
  std::string dir = ZERODP_GPT2_DIR;
  if (!fs::exists(fs::path(dir) / text::kEncoderFile)) {
    ADD_FAILURE() << "GPT-2's encoder.json and vocab.bpe are not in " << dir << ": run scripts/setup";
    return "";
  }
  return dir;
}

TEST(CorpusFiles, AGlobOfShardsIsSortedConcatenatedAndFindsItsValidationShards) {
  TempDir d("zerodp_glob");
  write_shard(d / "web_train_000002.bin", {5, 6});
  write_shard(d / "web_train_000001.bin", {3, 4});
  write_shard(d / "web_train_000010.bin", {7});
  write_shard(d / "web_val_000000.bin", {8, 9});
  write_shard(d / "web_val_000001.bin", {10});
  const Corpus c = load_corpus(d / "web_train_*.bin");
  EXPECT_EQ(c.train, (Ids{3, 4, 5, 6, 7}));
  EXPECT_EQ(c.val, (Ids{8, 9, 10}));
  EXPECT_EQ(c.vocab, 11);
  EXPECT_NE(c.description.find("(3 files)"), std::string::npos) << c.description;
  // --val-data may be a glob too; a single file keeps the old rule.
  EXPECT_EQ(load_corpus(d / "web_train_*.bin", d / "web_val_000001.bin").val, Ids{10});
  EXPECT_EQ(load_corpus(d / "web_train_00000[12].bin").train, (Ids{3, 4, 5, 6}));
  write_shard(d / "one_train.bin", {1, 2, 3});
  write_shard(d / "one_val.bin", {4});
  EXPECT_EQ(load_corpus(d / "one_train.bin").val, Ids{4});
  EXPECT_EQ(validation_pattern(d / "one_train.bin"), d / "one_val.bin");
  EXPECT_EQ(validation_pattern(d / "web_train_*.bin"), d / "web_val_*.bin");
  EXPECT_EQ(validation_pattern(d / "other_*.bin"), "");
}

TEST(CorpusFiles, AGlobThatMatchesNothingOrMixesKindsIsRefused) {
  TempDir d("zerodp_glob_bad");
  const std::string none = d / "fineweb_train_*.bin";
  EXPECT_NE(config_error([&] { load_corpus(none); }).find("--data '" + none + "' matches no file"), std::string::npos);
  write_shard(d / "a_train_1.bin", {1});
  EXPECT_NE(config_error([&] { load_corpus(d / "a_train_*.bin", d / "b_val_*.bin"); }).find("--val-data"),
            std::string::npos);
  std::ofstream(d / "a_train_2.txt") << "text";
  EXPECT_NE(config_error([&] { load_corpus(d / "a_train_*"); }).find("matches text files and .bin shards"),
            std::string::npos);
  // A file whose name has a glob character is taken as it is.
  write_shard(d / "odd[1].bin", {1, 2});
  EXPECT_EQ(data_files(d / "odd[1].bin"), std::vector<std::string>{d / "odd[1].bin"});
}

TEST(CorpusFiles, TextWithTheTokenizerIsLlmcDocumentsAndRoundTripsThroughShards) {
  const std::string dir = gpt2_dir();
  if (dir.empty()) return;
  TempDir d("zerodp_bpe_corpus");
  std::string content;
  for (int i = 0; i < 40; ++i) content += "Paragraph " + std::to_string(i) + ": it's a naïve café, isn't it?\n\n";
  std::ofstream(d / "story.txt") << content;
  const Corpus c = load_corpus(d / "story.txt", "", dir);
  EXPECT_FALSE(c.byte_level);
  EXPECT_EQ(c.vocab, text::kGpt2VocabSize);
  ASSERT_TRUE(c.tokenizer);
  EXPECT_EQ(c.train.front(), text::kGpt2EndOfText);
  // The tokens are the documents' encoding, the last 10% held out.
  text::BpeTokenizer bpe(text::load_gpt2_vocab(dir));
  Ids all;
  text::encode_documents(bpe, content, all);
  EXPECT_EQ(std::count(all.begin(), all.end(), text::kGpt2EndOfText), 41);
  const text::TokenSplit split = text::split_validation(all, 0.1);
  EXPECT_EQ(c.train, split.train);
  EXPECT_EQ(c.val, split.val);
  EXPECT_EQ(c.val.size(), all.size() / 10);
  EXPECT_EQ(bpe.decode(all).size(), content.size() + 41 * std::string("<|endoftext|>").size());
  // Written as shards (what `zerodp tokenize --val-fraction 0.1` writes) and
  // read back: the same streams.
  write_shard(d / "story_train.bin", split.train);
  write_shard(d / "story_val.bin", split.val);
  const Corpus s = load_corpus(d / "story_train.bin", "", dir);
  EXPECT_EQ(s.train, c.train);
  EXPECT_EQ(s.val, c.val);
  EXPECT_EQ(sample_to_text(s, Ids(c.train.begin() + 1, c.train.begin() + 9)), "Paragraph 0: it's a naïve");
}

TEST(CorpusFiles, TheTokenizerMustHoldEveryIdOfTheShards) {
  TempDir d("zerodp_bpe_ids");
  const std::string dir = gpt2_dir();
  if (dir.empty()) return;
  write_shard(d / "big.bin", {1, 60000});
  EXPECT_NE(config_error([&] { load_corpus(d / "big.bin", d / "big.bin", dir); }).find("ids up to 60000"),
            std::string::npos);
  EXPECT_NE(config_error([&] { load_corpus(d / "big.bin", "", "no-such-tokenizer"); }).find("neither 'gpt2'"),
            std::string::npos);
}

TEST(CorpusFiles, TheSampleIsValidUtf8) {
  Corpus bytes;
  EXPECT_EQ(sample_to_text(bytes, Ids{'a', 0xE2, 0x82}), "a\xEF\xBF\xBD");
  EXPECT_EQ(sample_to_text(bytes, Ids{0xE2, 0x82, 0xAC}), "€");
  Corpus shards;
  shards.byte_level = false;
  EXPECT_EQ(sample_to_text(shards, Ids{1, 2, 3}), "1 2 3");
  const std::string dir = gpt2_dir();
  if (dir.empty()) return;
  Corpus gpt2;
  gpt2.byte_level = false;
  gpt2.tokenizer = std::make_shared<text::BpeTokenizer>(text::load_gpt2_vocab(dir));
  // 👍 is 4 bytes in 2 tokens: the first alone is a cut character.
  const Ids thumbs = {41840, 235};
  EXPECT_EQ(sample_to_text(gpt2, thumbs), "👍");
  EXPECT_EQ(sample_to_text(gpt2, Ids{15496, 41840}), "Hello\xEF\xBF\xBD");
}

}  // namespace
}  // namespace zerodp::train
