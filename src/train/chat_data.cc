// SPDX-License-Identifier: Apache-2.0
#include "train/chat_data.h"

#include <algorithm>
#include <fstream>
#include <span>

#include "core/error.h"
#include "kernels/softmax_xent.h"
#include "text/tokenizer_lookup.h"

namespace zerodp::train {
namespace {

// Appends one window: the record's tokens and targets, then padding (token
// 0, target -1) to seq_len + 1 places (the last place is never an input).
void append_window(const ChatTokens& r, size_t window, std::vector<int32_t>& tokens, std::vector<int32_t>& targets) {
  tokens.insert(tokens.end(), r.tokens.begin(), r.tokens.end());
  targets.insert(targets.end(), r.targets.begin(), r.targets.end());
  tokens.resize(tokens.size() + window - r.tokens.size(), 0);
  targets.resize(targets.size() + window - r.targets.size(), kernels::kIgnoreTarget);
}

// The windows of records [first, last): one a window (padded), or packed
// in order, as many as fit in the window's seq_len inputs, each numbered in
// its window from 1 in `segments` (the padding 0). Returns the windows.
size_t lay_out(std::span<const ChatTokens> records, size_t window, bool pack, std::vector<int32_t>& tokens,
               std::vector<int32_t>& targets, std::vector<int32_t>& segments) {
  if (!pack) {
    for (const ChatTokens& r : records) append_window(r, window, tokens, targets);
    return records.size();
  }
  size_t windows = 0, used = window;  // used == window: no window open
  int32_t id = 0;
  auto close = [&] {
    if (used == window) return;
    tokens.resize(tokens.size() + window - used, 0);
    targets.resize(targets.size() + window - used, kernels::kIgnoreTarget);
    segments.resize(segments.size() + window - used, 0);
    used = window;
  };
  for (const ChatTokens& r : records) {
    if (used + r.tokens.size() > window - 1) close();  // the last place is never an input
    if (used == window) used = 0, id = 0, ++windows;
    tokens.insert(tokens.end(), r.tokens.begin(), r.tokens.end());
    targets.insert(targets.end(), r.targets.begin(), r.targets.end());
    segments.resize(segments.size() + r.tokens.size(), ++id);
    used += r.tokens.size();
  }
  close();
  return windows;
}

}  // namespace

ChatTokens chat_tokens(text::BpeTokenizer& tokenizer, std::span<const text::ChatPiece> pieces) {
  std::vector<int32_t> ids;
  std::vector<bool> trained;
  for (const text::ChatPiece& p : pieces) {
    tokenizer.encode_into(p.text, ids);
    trained.resize(ids.size(), p.trained);
  }
  ChatTokens out;
  if (ids.size() < 2) return out;
  out.tokens.assign(ids.begin(), ids.end() - 1);
  out.targets.resize(out.tokens.size());
  for (size_t i = 0; i + 1 < ids.size(); ++i) out.targets[i] = trained[i + 1] ? ids[i + 1] : kernels::kIgnoreTarget;
  return out;
}

text::ChatTemplate choose_chat_template(const text::BpeTokenizer& tokenizer, const std::string& name,
                                        std::string& how) {
  auto has_token = [&tokenizer](const std::string& token) { return tokenizer.encode_uncached(token).size() == 1; };
  if (name.empty()) {
    const std::optional<text::ChatTemplate> found = text::chat_template_from_tokens(has_token);
    ZDP_CHECK(found.has_value(), ConfigError,
              "[data] the tokenizer in {} has neither ChatML's <|im_start|> <|im_end|> nor Llama 3's "
              "<|start_header_id|> <|end_header_id|> <|eot_id|>: add them, or give --chat-template",
              tokenizer.dir());
    how = "chosen from the tokenizer's special tokens";
    return *found;
  }
  const std::optional<text::ChatTemplate> t = text::parse_chat_template(name);
  ZDP_CHECK(t.has_value(), ConfigError, "[data] --chat-template '{}' is not a template: chatml or llama3", name);
  for (const std::string& token : text::chat_template_tokens(*t)) {
    ZDP_CHECK(has_token(token), ConfigError,
              "[data] --chat-template {} needs the token {}, which the tokenizer in {} "
              "lacks",
              name, token, tokenizer.dir());
  }
  how = "--chat-template";
  return *t;
}

bool is_chat_data(const std::string& path) { return path.ends_with(".jsonl"); }

Corpus load_chat_corpus(const std::string& path, const std::string& tokenizer, const std::string& template_name,
                        int seq_len, bool pack) {
  ZDP_CHECK(!tokenizer.empty(), ConfigError,
            "[data] chat data {} needs --tokenizer PATH/tokenizer.json (its chat template's special tokens)", path);
  std::ifstream in(path, std::ios::binary);
  ZDP_CHECK(static_cast<bool>(in), ConfigError, "[data] cannot open '{}': give --data an existing .jsonl file", path);
  const std::shared_ptr<text::BpeTokenizer> bpe = text::load_tokenizer(tokenizer);
  std::string how;
  const text::ChatTemplate chat = choose_chat_template(*bpe, template_name, how);
  std::vector<ChatTokens> records;
  std::vector<std::string> first_user;  // each record's first user turn: the sample's default prompt
  std::string line;
  size_t trained = 0, positions = 0;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are not records
    const std::string where = fmt::format("{}:{}", path, line_no);
    const std::vector<text::ChatMessage> messages = text::parse_chat_record(line, where);
    const auto user = std::find_if(messages.begin(), messages.end(),
                                   [](const text::ChatMessage& m) { return m.role == text::ChatRole::kUser; });
    first_user.push_back(user != messages.end() ? user->content : std::string());
    ChatTokens r = chat_tokens(*bpe, text::render_chat(messages, chat));
    ZDP_CHECK(r.tokens.size() <= static_cast<size_t>(seq_len), ConfigError,
              "[data] {}: the record is {} tokens in the {} template, longer than --seq-len {} + 1: raise --seq-len "
              "or shorten the record",
              where, r.tokens.size() + 1, text::chat_template_name(chat), seq_len);
    trained += static_cast<size_t>(
        std::count_if(r.targets.begin(), r.targets.end(), [](int32_t t) { return t != kernels::kIgnoreTarget; }));
    positions += r.tokens.size();
    records.push_back(std::move(r));
  }
  ZDP_CHECK(records.size() >= 2, ConfigError,
            "[data] {} has {} chat record{}: give at least two (the last 10%, at least one, validate)", path,
            records.size(), records.size() == 1 ? "" : "s");
  const size_t val_records = std::max<size_t>(1, records.size() / 10);
  const size_t cut = records.size() - val_records;
  const size_t window = static_cast<size_t>(seq_len) + 1;
  Corpus corpus;
  const std::span<const ChatTokens> all(records);
  const size_t train_windows =
      lay_out(all.first(cut), window, pack, corpus.train, corpus.train_targets, corpus.train_segments);
  const size_t val_windows =
      lay_out(all.subspan(cut), window, pack, corpus.val, corpus.val_targets, corpus.val_segments);
  corpus.record_length = static_cast<int>(window);
  corpus.byte_level = false;
  corpus.tokenizer = bpe;
  corpus.chat_template = chat;
  corpus.chat_sample_prompt = first_user[cut];
  int32_t top = 0;
  for (const ChatTokens& r : records) {
    for (int32_t t : r.tokens) top = std::max(top, t);
    for (int32_t t : r.targets) top = std::max(top, t);
  }
  corpus.vocab = static_cast<int>(top) + 1;
  corpus.train_name = fmt::format("the training records (the first {} of {})", cut, path);
  corpus.val_name = fmt::format("the validation records (the last {} of {})", val_records, path);
  const std::string layout = pack
                                 ? fmt::format("packed into {} + {} windows of {} (each record attends to itself only)",
                                               train_windows, val_windows, seq_len)
                                 : fmt::format("one per window of {}", seq_len);
  corpus.description = fmt::format(
      "chat records {} with {}, template {} ({}): {} training record{}, {} validation record{} (last 10%), {}; {} "
      "of {} target positions trained (the assistant's), the rest masked",
      path, bpe->describe(), text::chat_template_name(chat), how, cut, cut == 1 ? "" : "s", val_records,
      val_records == 1 ? "" : "s", layout, trained, positions);
  return corpus;
}

}  // namespace zerodp::train
