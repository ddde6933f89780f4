// SPDX-License-Identifier: Apache-2.0
// Chat data for supervised fine-tuning: which targets are -1 on a small
// example, the windows the sampler draws from it (same bits for every N),
// the template chosen from the tokenizer, and refusals naming the line.
#include "train/chat_data.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/tokenizer_lookup.h"
#include "train/sampler.h"

namespace zerodp::train {
namespace {

const std::string kFixtures = ZERODP_TRAIN_FIXTURE_DIR;
const std::string kChatMlTokenizer = kFixtures + "/chat_tokenizer_chatml.json";
const std::string kLlama3Tokenizer = kFixtures + "/chat_tokenizer_llama3.json";
const std::string kChat = kFixtures + "/chat.jsonl";

// The fixture tokenizers are bytes (no merges) plus the special tokens:
// ChatML's <|endoftext|> 256, <|im_start|> 257, <|im_end|> 258.
TEST(ChatData, OnlyTheAssistantsTokensAreTargetsByHand) {
  const auto bpe = text::load_tokenizer(kChatMlTokenizer);
  const auto messages = text::parse_chat_record(R"({"prompt": "1+1", "response": "2"})", "t:1");
  const ChatTokens r = chat_tokens(*bpe, text::render_chat(messages, text::ChatTemplate::kChatMl));
  // <|im_start|>user\n1+1<|im_end|>\n<|im_start|>assistant\n2<|im_end|>\n: 25 ids, 24 inputs.
  std::vector<int32_t> ids = {257};
  for (char c : std::string("user\n1+1")) ids.push_back(static_cast<unsigned char>(c));
  ids.insert(ids.end(), {258, '\n', 257});
  for (char c : std::string("assistant\n2")) ids.push_back(static_cast<unsigned char>(c));
  ids.insert(ids.end(), {258, '\n'});
  ASSERT_EQ(r.tokens, std::vector<int32_t>(ids.begin(), ids.end() - 1));
  std::vector<int32_t> want(24, -1);
  want[21] = '2';  // after "assistant\n": the answer
  want[22] = 258;  // after the answer: <|im_end|>
  EXPECT_EQ(r.targets, want);
}

TEST(ChatData, TheTemplateComesFromTheTokenizerOrTheFlag) {
  std::string how;
  EXPECT_EQ(choose_chat_template(*text::load_tokenizer(kChatMlTokenizer), "", how), text::ChatTemplate::kChatMl);
  EXPECT_EQ(how, "chosen from the tokenizer's special tokens");
  EXPECT_EQ(choose_chat_template(*text::load_tokenizer(kLlama3Tokenizer), "", how), text::ChatTemplate::kLlama3);
  EXPECT_EQ(choose_chat_template(*text::load_tokenizer(kLlama3Tokenizer), "llama3", how), text::ChatTemplate::kLlama3);
  EXPECT_EQ(how, "--chat-template");
  EXPECT_THROW(choose_chat_template(*text::load_tokenizer(kChatMlTokenizer), "llama3", how), ConfigError);
  EXPECT_THROW(choose_chat_template(*text::load_tokenizer(kChatMlTokenizer), "alpaca", how), ConfigError);
}

// One record per window of seq_len + 1 places; the sampler reads targets
// from the corpus's target stream, and a window is a whole record.
TEST(ChatData, RecordsAreWindowsAndTheSamplerDrawsWholeOnes) {
  const int T = 64;
  const Corpus c = load_chat_corpus(kChat, kChatMlTokenizer, "", T);
  EXPECT_EQ(c.record_length, T + 1);
  EXPECT_EQ(c.train.size(), 5u * (T + 1));  // 6 records: 5 train, 1 validation
  EXPECT_EQ(c.val.size(), 1u * (T + 1));
  EXPECT_EQ(c.train_targets.size(), c.train.size());
  EXPECT_NE(c.description.find("template chatml (chosen from the tokenizer's special tokens)"), std::string::npos)
      << c.description;
  const DistributedSampler one(c.train, T, 2, 1, 7, c.record_length, "t", c.train_targets);
  const DistributedSampler two(c.train, T, 1, 2, 7, c.record_length, "t", c.train_targets);
  for (int64_t step = 0; step < 4; ++step) {
    const TokenBatch b = one.batch(step, 0, 0);
    for (int i = 0; i < 2; ++i) {
      const size_t start = one.window_start(step, i);
      EXPECT_EQ(start % (T + 1), 0u);
      const TokenBatch part = two.batch(step, 0, i);
      EXPECT_TRUE(std::equal(part.tokens.begin(), part.tokens.end(), b.tokens.begin() + i * T));
      EXPECT_TRUE(std::equal(part.targets.begin(), part.targets.end(), b.targets.begin() + i * T));
      for (int k = 0; k < T; ++k) EXPECT_EQ(b.targets[i * T + k], c.train_targets[start + k]);
    }
    const auto trained = std::count_if(b.targets.begin(), b.targets.end(), [](int32_t t) { return t >= 0; });
    EXPECT_GT(trained, 0);
    EXPECT_LT(trained, 2 * T);
  }
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

// --chat-packing pack: the training records in order, as many as fit in a
// window's T inputs, each numbered in its window from 1 (padding 0), never
// split; the same tokens and targets as the one-a-window layout, less
// padding; the sampler hands the record ids out with the window.
TEST(ChatData, PackedRecordsFillWindowsInOrderAndCarryTheirIds) {
  const int T = 64;
  const Corpus padded = load_chat_corpus(kChat, kChatMlTokenizer, "", T);
  const Corpus packed = load_chat_corpus(kChat, kChatMlTokenizer, "", T, /*pack=*/true);
  EXPECT_TRUE(padded.train_segments.empty());
  ASSERT_EQ(packed.train_segments.size(), packed.train.size());
  ASSERT_EQ(packed.train.size() % (T + 1), 0u);
  EXPECT_LT(packed.train.size(), padded.train.size());  // fewer windows
  EXPECT_NE(packed.description.find("packed into 3 + 1 windows of 64"), std::string::npos) << packed.description;
  // Each window's records, read back by their ids, are the padded layout's records in order.
  std::vector<std::vector<int32_t>> records_padded, records_packed, targets_padded, targets_packed;
  for (size_t w = 0; w < padded.train.size(); w += T + 1) {
    size_t len = 0;
    while (len < static_cast<size_t>(T) && (padded.train[w + len] != 0 || padded.train_targets[w + len] != -1)) ++len;
    records_padded.emplace_back(padded.train.begin() + w, padded.train.begin() + w + len);
    targets_padded.emplace_back(padded.train_targets.begin() + w, padded.train_targets.begin() + w + len);
  }
  for (size_t w = 0; w < packed.train.size(); w += T + 1) {
    int32_t id = 0;
    for (size_t k = 0; k < static_cast<size_t>(T) + 1; ++k) {
      const int32_t seg = packed.train_segments[w + k];
      if (seg == 0) {  // padding: to the end of the window, never an input of a record
        EXPECT_EQ(packed.train[w + k], 0);
        EXPECT_EQ(packed.train_targets[w + k], -1);
        continue;
      }
      if (seg != id) {
        EXPECT_EQ(seg, id + 1) << "records are numbered in order in their window";
        id = seg;
        records_packed.emplace_back();
        targets_packed.emplace_back();
      }
      EXPECT_LT(k, static_cast<size_t>(T)) << "a record's tokens are inputs";
      records_packed.back().push_back(packed.train[w + k]);
      targets_packed.back().push_back(packed.train_targets[w + k]);
    }
  }
  EXPECT_EQ(records_packed, records_padded);
  EXPECT_EQ(targets_packed, targets_padded);
  const DistributedSampler sampler(packed.train, T, 2, 1, 7, packed.record_length, "t", packed.train_targets,
                                   packed.train_segments);
  const TokenBatch b = sampler.batch(0, 0, 0);
  ASSERT_EQ(b.segments.size(), b.tokens.size());
  for (int i = 0; i < 2; ++i) {
    const size_t start = sampler.window_start(0, i);
    for (int k = 0; k < T; ++k) EXPECT_EQ(b.segments[i * T + k], packed.train_segments[start + k]);
  }
}

TEST(ChatData, BadRecordsAndLongRecordsAreRefusedNamingTheirLine) {
  const std::string bad = write_temp("zerodp_chat_bad.jsonl", "{\"prompt\": \"a\", \"response\": \"b\"}\n\n{oops\n");
  try {
    load_chat_corpus(bad, kChatMlTokenizer, "", 64);
    ADD_FAILURE() << "accepted";
  } catch (const InputFileError& e) {
    EXPECT_NE(std::string(e.what()).find("zerodp_chat_bad.jsonl:3: not JSON"), std::string::npos) << e.what();
  }
  const std::string long_one = write_temp("zerodp_chat_long.jsonl",
                                          "{\"prompt\": \"a\", \"response\": \"b\"}\n"
                                          "{\"prompt\": \"a long prompt\", \"response\": \"b\"}\n");
  try {
    load_chat_corpus(long_one, kChatMlTokenizer, "", 30);
    ADD_FAILURE() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("zerodp_chat_long.jsonl:2: the record is 35 tokens"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_chat_corpus(kChat, "", "", 64), ConfigError);  // no tokenizer
  const std::string one = write_temp("zerodp_chat_one.jsonl", "{\"prompt\": \"a\", \"response\": \"b\"}\n");
  EXPECT_THROW(load_chat_corpus(one, kChatMlTokenizer, "", 64), ConfigError);  // nothing to validate on
}

}  // namespace
}  // namespace zerodp::train
