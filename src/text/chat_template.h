// SPDX-License-Identifier: Apache-2.0
// Chat records for supervised fine-tuning, and the chat templates that turn
// them into text:
//   ChatML (Qwen, SmolLM2-Instruct): <|im_start|>{role}\n{content}<|im_end|>\n
//   Llama 3: <|begin_of_text|> then <|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>
// A record is one JSON line: {"messages": [{"role": "system"|"user"|"assistant",
// "content": "..."}, ...]} or {"prompt": "...", "response": "..."} (a user
// turn and an assistant turn). The rendering comes back as pieces, each
// marked trained or not: an assistant turn's content and its end-of-turn
// token are trained, everything else (the headers, the other turns) is not.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::text {

enum class ChatTemplate { kChatMl, kLlama3 };

// "chatml" / "llama3"; nullopt for another name.
std::optional<ChatTemplate> parse_chat_template(std::string_view name);
const char* chat_template_name(ChatTemplate t);
// The special tokens a template needs, each in the tokenizer's added tokens.
std::vector<std::string> chat_template_tokens(ChatTemplate t);
// The template whose special tokens `has_token` finds (ChatML first), or
// nullopt when neither template's are all there.
template <class HasToken>
std::optional<ChatTemplate> chat_template_from_tokens(HasToken has_token) {
  for (ChatTemplate t : {ChatTemplate::kChatMl, ChatTemplate::kLlama3}) {
    bool all = true;
    for (const std::string& token : chat_template_tokens(t)) all = all && has_token(token);
    if (all) return t;
  }
  return std::nullopt;
}

enum class ChatRole { kSystem, kUser, kAssistant };

struct ChatMessage {
  ChatRole role = ChatRole::kUser;
  std::string content;
};

// One JSONL record's messages. `where` names the line in messages
// ("chat.jsonl:3"). Throws InputFileError, one line naming `where`, for a
// line that is not a JSON object, has neither "messages" nor both "prompt"
// and "response", a message without a string role and content, an unknown
// role, an empty content, or no assistant turn (nothing to train on).
std::vector<ChatMessage> parse_chat_record(std::string_view line, const std::string& where);

struct ChatPiece {
  std::string text;
  bool trained = false;  // the loss is taken on these tokens
};

// The record in the template, as pieces in order (their concatenation is
// the rendered text).
std::vector<ChatPiece> render_chat(std::span<const ChatMessage> messages, ChatTemplate t);
std::string render_chat_text(std::span<const ChatMessage> messages, ChatTemplate t);
// The messages, then the header of an assistant turn that the model is to
// write (Hugging Face's add_generation_prompt): what generation starts from.
std::string render_generation_prompt(std::span<const ChatMessage> messages, ChatTemplate t);
// The token that ends a turn: "<|im_end|>" (ChatML) or "<|eot_id|>" (Llama 3).
const char* end_of_turn(ChatTemplate t);

}  // namespace zerodp::text
