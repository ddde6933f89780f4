// SPDX-License-Identifier: Apache-2.0
// Chat records and templates: each template's rendering against strings
// written by hand, which pieces are trained, and bad records refused in one
// line naming where they are.
#include "text/chat_template.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.h"

namespace zerodp::text {
namespace {

const std::vector<ChatMessage> kChat = {
    {ChatRole::kSystem, "Be brief."}, {ChatRole::kUser, "2+3?"}, {ChatRole::kAssistant, "5"}};

TEST(ChatTemplate, ChatMlRendersAsWrittenByHand) {
  EXPECT_EQ(render_chat_text(kChat, ChatTemplate::kChatMl),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n2+3?<|im_end|>\n"
            "<|im_start|>assistant\n5<|im_end|>\n");
}

TEST(ChatTemplate, Llama3RendersAsWrittenByHand) {
  EXPECT_EQ(render_chat_text(kChat, ChatTemplate::kLlama3),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\n2+3?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n5<|eot_id|>");
}

// Generation starts after the assistant's header (Hugging Face's
// add_generation_prompt) and ends at the template's end-of-turn token.
TEST(ChatTemplate, GenerationPromptEndsWithTheAssistantsHeader) {
  const std::vector<ChatMessage> user = {{ChatRole::kUser, "2+3?"}};
  EXPECT_EQ(render_generation_prompt(user, ChatTemplate::kChatMl),
            "<|im_start|>user\n2+3?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_generation_prompt(user, ChatTemplate::kLlama3),
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n2+3?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_STREQ(end_of_turn(ChatTemplate::kChatMl), "<|im_end|>");
  EXPECT_STREQ(end_of_turn(ChatTemplate::kLlama3), "<|eot_id|>");
}

// Trained: the assistant's content and its end-of-turn token, nothing else.
TEST(ChatTemplate, OnlyTheAssistantsContentAndEndOfTurnAreTrained) {
  for (ChatTemplate t : {ChatTemplate::kChatMl, ChatTemplate::kLlama3}) {
    std::string trained;
    for (const ChatPiece& p : render_chat(kChat, t)) {
      if (p.trained) trained += p.text;
    }
    EXPECT_EQ(trained, t == ChatTemplate::kChatMl ? "5<|im_end|>" : "5<|eot_id|>") << chat_template_name(t);
  }
}

TEST(ChatTemplate, NamesAndTheTemplateOfATokenizersSpecialTokens) {
  EXPECT_EQ(parse_chat_template("chatml"), ChatTemplate::kChatMl);
  EXPECT_EQ(parse_chat_template("llama3"), ChatTemplate::kLlama3);
  EXPECT_EQ(parse_chat_template("alpaca"), std::nullopt);
  const std::set<std::string> llama3 = {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
  EXPECT_EQ(chat_template_from_tokens([&](const std::string& s) { return llama3.count(s) > 0; }),
            ChatTemplate::kLlama3);
  EXPECT_EQ(chat_template_from_tokens([](const std::string& s) { return s != "<|begin_of_text|>"; }),
            ChatTemplate::kChatMl);
  EXPECT_EQ(chat_template_from_tokens([](const std::string& s) { return s == "<|im_start|>"; }), std::nullopt);
}

TEST(ChatRecord, MessagesAndPromptResponseRecords) {
  const auto m = parse_chat_record(
      R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})", "f:1");
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[1].role, ChatRole::kAssistant);
  EXPECT_EQ(m[1].content, "hello");
  const auto p = parse_chat_record(R"({"prompt": "1+1", "response": "2"})", "f:2");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].role, ChatRole::kUser);
  EXPECT_EQ(p[0].content, "1+1");
  EXPECT_EQ(p[1].content, "2");
}

// Each bad record is refused with one line naming its place and the fault.
TEST(ChatRecord, BadRecordsAreRefusedNamingTheirLine) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"messages": [)", "chat.jsonl:7: not JSON"},
      {R"([1, 2])", "chat.jsonl:7: not a JSON object"},
      {R"({"text": "hi"})", "chat.jsonl:7: no \"messages\""},
      {R"({"messages": []})", "chat.jsonl:7: \"messages\" is not a non-empty array"},
      {R"({"messages": [{"role": "bot", "content": "x"}]})", "unknown role \"bot\""},
      {R"({"messages": [{"role": "assistant", "content": ""}]})", "message 1 (assistant) is empty"},
      {R"({"messages": [{"role": "user"}]})", "message 1 has no string \"content\""},
      {R"({"messages": [{"role": "user", "content": "x"}]})", "no assistant message"},
      {R"({"prompt": "x"})", "the record has no string \"response\""},
      {R"({"prompt": "", "response": "y"})", "the prompt is empty"},
  };
  for (const auto& [line, want] : bad) {
    try {
      parse_chat_record(line, "chat.jsonl:7");
      ADD_FAILURE() << line << ": accepted";
    } catch (const InputFileError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(want), std::string::npos) << what;
      EXPECT_NE(what.find("chat.jsonl:7"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace zerodp::text
