// SPDX-License-Identifier: Apache-2.0
#include "text/chat_template.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zerodp::text {
namespace {

using nlohmann::json;

const char* role_name(ChatRole r) {
  switch (r) {
    case ChatRole::kSystem:
      return "system";
    case ChatRole::kUser:
      return "user";
    case ChatRole::kAssistant:
      return "assistant";
  }
  return "?";
}

// A string member of `obj`, or InputFileError naming the line.
std::string string_member(const json& obj, const char* key, const std::string& where, const char* what) {
  const auto it = obj.find(key);
  ZDP_CHECK(it != obj.end() && it->is_string(), InputFileError, "[data] {}: {} has no string \"{}\"", where, what, key);
  return it->get<std::string>();
}

ChatMessage message_of(const json& m, const std::string& where, size_t index) {
  const std::string what = fmt::format("message {}", index + 1);
  ZDP_CHECK(m.is_object(), InputFileError, "[data] {}: {} is not an object", where, what);
  const std::string role = string_member(m, "role", where, what.c_str());
  ChatMessage out;
  if (role == "system") {
    out.role = ChatRole::kSystem;
  } else if (role == "user") {
    out.role = ChatRole::kUser;
  } else if (role == "assistant") {
    out.role = ChatRole::kAssistant;
  } else {
    ZDP_THROW(InputFileError, "[data] {}: {} has the unknown role \"{}\" (system, user or assistant)", where, what,
              role);
  }
  out.content = string_member(m, "content", where, what.c_str());
  ZDP_CHECK(!out.content.empty(), InputFileError, "[data] {}: {} ({}) is empty", where, what, role);
  return out;
}

}  // namespace

std::optional<ChatTemplate> parse_chat_template(std::string_view name) {
  if (name == "chatml") return ChatTemplate::kChatMl;
  if (name == "llama3") return ChatTemplate::kLlama3;
  return std::nullopt;
}

const char* chat_template_name(ChatTemplate t) { return t == ChatTemplate::kChatMl ? "chatml" : "llama3"; }

std::vector<std::string> chat_template_tokens(ChatTemplate t) {
  if (t == ChatTemplate::kChatMl) return {"<|im_start|>", "<|im_end|>"};
  return {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
}

std::vector<ChatMessage> parse_chat_record(std::string_view line, const std::string& where) {
  const json record = json::parse(line, nullptr, /*allow_exceptions=*/false);
  ZDP_CHECK(!record.is_discarded(), InputFileError, "[data] {}: not JSON", where);
  ZDP_CHECK(record.is_object(), InputFileError, "[data] {}: not a JSON object", where);
  std::vector<ChatMessage> messages;
  if (const auto it = record.find("messages"); it != record.end()) {
    ZDP_CHECK(it->is_array() && !it->empty(), InputFileError, "[data] {}: \"messages\" is not a non-empty array",
              where);
    for (size_t i = 0; i < it->size(); ++i) messages.push_back(message_of((*it)[i], where, i));
  } else {
    ZDP_CHECK(record.contains("prompt") || record.contains("response"), InputFileError,
              "[data] {}: no \"messages\" (nor \"prompt\" and \"response\")", where);
    messages.push_back({ChatRole::kUser, string_member(record, "prompt", where, "the record")});
    messages.push_back({ChatRole::kAssistant, string_member(record, "response", where, "the record")});
    for (const ChatMessage& m : messages) {
      ZDP_CHECK(!m.content.empty(), InputFileError, "[data] {}: the {} is empty", where,
                m.role == ChatRole::kUser ? "prompt" : "response");
    }
  }
  bool any_assistant = false;
  for (const ChatMessage& m : messages) any_assistant = any_assistant || m.role == ChatRole::kAssistant;
  ZDP_CHECK(any_assistant, InputFileError, "[data] {}: no assistant message, nothing to train on", where);
  return messages;
}

std::vector<ChatPiece> render_chat(std::span<const ChatMessage> messages, ChatTemplate t) {
  std::vector<ChatPiece> pieces;
  const bool chatml = t == ChatTemplate::kChatMl;
  if (!chatml) pieces.push_back({"<|begin_of_text|>", false});
  for (const ChatMessage& m : messages) {
    const bool trained = m.role == ChatRole::kAssistant;
    if (chatml) {
      pieces.push_back({fmt::format("<|im_start|>{}\n", role_name(m.role)), false});
      pieces.push_back({m.content + "<|im_end|>", trained});
      pieces.push_back({"\n", false});
    } else {
      pieces.push_back({fmt::format("<|start_header_id|>{}<|end_header_id|>\n\n", role_name(m.role)), false});
      pieces.push_back({m.content + "<|eot_id|>", trained});
    }
  }
  return pieces;
}

std::string render_chat_text(std::span<const ChatMessage> messages, ChatTemplate t) {
  std::string out;
  for (const ChatPiece& p : render_chat(messages, t)) out += p.text;
  return out;
}

std::string render_generation_prompt(std::span<const ChatMessage> messages, ChatTemplate t) {
  const char* const role = role_name(ChatRole::kAssistant);
  return render_chat_text(messages, t) + (t == ChatTemplate::kChatMl
                                              ? fmt::format("<|im_start|>{}\n", role)
                                              : fmt::format("<|start_header_id|>{}<|end_header_id|>\n\n", role));
}

const char* end_of_turn(ChatTemplate t) { return t == ChatTemplate::kChatMl ? "<|im_end|>" : "<|eot_id|>"; }

}  // namespace zerodp::text
