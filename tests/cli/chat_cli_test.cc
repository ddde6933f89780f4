// SPDX-License-Identifier: Apache-2.0
// `zerodp train --data chat.jsonl --tokenizer tokenizer.json` as a user runs
// it: a tiny Llama fine-tuned for a few steps on the assistant's tokens, the
// template named in the log, and bad records refused in one line naming
// their line.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace zerodp::cli_testing {
namespace {

const std::string kFixtures = ZERODP_TRAIN_FIXTURE_DIR;
// Vocabulary 264 holds the fixture tokenizers' 256 bytes and special tokens.
const std::string kModel = R"('{"kind":"llama","vocab":264,"hidden":32,"layers":2,"heads":4,"kv_heads":2,"head_dim":8,)"
                           R"("intermediate":64,"max_seq_len":64}')";

std::string chat_run(const std::string& data, const std::string& tokenizer,
                     const std::string& sample = "--sample-tokens 0") {
  return "train --model " + kModel + " --data " + data + " --tokenizer " + kFixtures + "/" + tokenizer +
         " --seq-len 64 --micro-batch 2 --ranks 2 --steps 4 --eval-every 2 --held-out 0 " + sample;
}

TEST(CliChat, TrainsALlamaOnChatRecordsInEitherTemplate) {
  for (const char* tokenizer : {"chat_tokenizer_chatml.json", "chat_tokenizer_llama3.json"}) {
    const Result r = run(chat_run(kFixtures + "/chat.jsonl", tokenizer));
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const std::string want = std::string("template ") +
                             (std::string(tokenizer).find("chatml") != std::string::npos ? "chatml" : "llama3") +
                             " (chosen from the tokenizer's special tokens)";
    EXPECT_NE(r.out.find(want), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("5 training records, 1 validation record"), std::string::npos) << r.out;
  }
  const Result flag =
      run(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_llama3.json") + " --chat-template llama3");
  ASSERT_EQ(flag.code, 0) << flag.err;
  EXPECT_NE(flag.out.find("template llama3 (--chat-template)"), std::string::npos) << flag.out;
}

// The metrics count the step's targets with a loss and those masked (the
// prompts and the padding): together every position of the step's windows
// (2 ranks x 2 micro-batch x 64), both of them present.
TEST(CliChat, MetricsCountTrainedAndMaskedTokens) {
  const fs::path metrics = fs::temp_directory_path() / ("zerodp_cli_chat_metrics." + std::to_string(getpid()));
  const Result r =
      run(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_chatml.json") + " --metrics " + metrics.string());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  std::ifstream in(metrics);
  int steps = 0;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("step")) continue;
    ++steps;
    const int64_t trained = j.at("trained_tokens").get<int64_t>();
    const int64_t masked = j.at("masked_tokens").get<int64_t>();
    EXPECT_EQ(trained + masked, 2 * 2 * 64) << line;
    EXPECT_GT(trained, 0) << line;
    EXPECT_GT(masked, 0) << line;
  }
  EXPECT_EQ(steps, 4);
  fs::remove(metrics);
}

// The sample after training is an assistant turn answering --prompt as a
// user message, in the data's template, ended by its end-of-turn token; the
// template's tokens are not printed.
TEST(CliChat, TheSampleAnswersThePromptAsAUserMessage) {
  for (const char* tokenizer : {"chat_tokenizer_chatml.json", "chat_tokenizer_llama3.json"}) {
    const Result r = run(chat_run(kFixtures + "/chat.jsonl", tokenizer, "--sample-tokens 12 --prompt 2+3"));
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const size_t at = r.out.find("\nuser: 2+3\nassistant: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string sample = r.out.substr(at, r.out.find("\nProcess memory", at) - at);
    for (const char* special : {"<|im_start|>", "<|im_end|>", "<|start_header_id|>", "<|eot_id|>"}) {
      EXPECT_EQ(sample.find(special), std::string::npos) << special << " in " << sample;
    }
  }
  // A prompt that leaves the turn no room in the window is refused before training.
  expect_refused(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_chatml.json",
                          "--sample-tokens 4 --prompt " + std::string(80, '1')),
                 "the sample's prompt is");
}

// --chat-packing pack: the log says how the records were packed; a model
// whose attention cannot keep them apart (GPT-2) and data that are not
// chat records are refused before training.
TEST(CliChat, PackedRecordsTrainALlamaAndAreRefusedElsewhere) {
  const Result r = run(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_chatml.json") + " --chat-packing pack");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("packed into 3 + 1 windows of 64 (each record attends to itself only)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("chat-packing pack"), std::string::npos) << r.out;  // the effective configuration
  expect_refused("train --data " + kFixtures + "/chat.jsonl --tokenizer " + kFixtures +
                     "/chat_tokenizer_chatml.json --seq-len 64 --steps 1 --chat-packing pack",
                 "needs a model whose attention keeps packed records apart");
  expect_refused("train --steps 1 --chat-packing pack", "packs chat records");
  expect_refused(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_chatml.json") + " --chat-packing tight",
                 "--chat-packing tight: use pad or pack");
}

TEST(CliChat, RefusesBadRecordsAndTemplatesInOneLine) {
  const fs::path bad = write_temp("zerodp_cli_chat_bad.jsonl",
                                  "{\"prompt\": \"1+1\", \"response\": \"2\"}\n"
                                  "{\"messages\": [{\"role\": \"robot\", \"content\": \"x\"}]}\n");
  expect_refused(chat_run(bad.string(), "chat_tokenizer_chatml.json"),
                 "zerodp_cli_chat_bad.jsonl:2: message 1 has the unknown role \"robot\"");
  expect_refused(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_chatml.json") + " --chat-template llama3",
                 "needs the token <|begin_of_text|>");
  expect_refused(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_chatml.json") + " --chat-template alpaca",
                 "not a template: chatml or llama3");
  expect_refused(chat_run(kFixtures + "/chat.jsonl", "chat_tokenizer_chatml.json") + " --val-data " + bad.string(),
                 "chat data validates on the last 10% of its records");
  expect_refused("train --steps 1 --chat-template chatml", "applies to chat data");
  fs::remove(bad);
}

}  // namespace
}  // namespace zerodp::cli_testing
