// SPDX-License-Identifier: Apache-2.0
// Supervised fine-tuning data: chat records (text/chat_template.h), one a
// line of a .jsonl file, rendered in a chat template, tokenized with a
// tokenizer.json and laid out one record per window of --seq-len (the
// record's tokens, then padding) or packed (--chat-packing pack: records in
// order, as many as fit in a window's inputs, then padding; each position
// carries its record's number in the window, Corpus::train_segments, so
// that the model keeps records apart). The targets are the next tokens
// where they are the assistant's (its content and end-of-turn token) and
// -1 (no loss) everywhere else, the padding included. A record is never
// split across windows, and none attends to another. A record longer than
// seq_len + 1 tokens is refused, naming its line.
// Thread-safety: pure functions; the Corpus is immutable after loading.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "text/bpe_tokenizer.h"
#include "text/chat_template.h"
#include "train/corpus.h"

namespace zerodp::train {

// One record's tokens and targets (-1 where there is no loss), both
// [tokens - 1]: inputs are the rendered tokens but the last, targets the
// tokens after each.
struct ChatTokens {
  std::vector<int32_t> tokens, targets;
};
ChatTokens chat_tokens(text::BpeTokenizer& tokenizer, std::span<const text::ChatPiece> pieces);

// The template for a run: `name` ("chatml", "llama3"; "" = from the
// tokenizer's special tokens), checked against the tokenizer (each of its
// special tokens must be one token). `how` says why, for the log.
// ConfigError for an unknown name or a tokenizer without the tokens.
text::ChatTemplate choose_chat_template(const text::BpeTokenizer& tokenizer, const std::string& name, std::string& how);

// Whether `path` is chat data (a .jsonl file).
bool is_chat_data(const std::string& path);

// The chat records of `path` (.jsonl) with the tokenizer.json `tokenizer`
// and the template `template_name` ("" = from the tokenizer), in windows
// of `seq_len`: Corpus::train / val hold seq_len + 1 tokens per window
// (record_length = seq_len + 1) and train_targets / val_targets the
// targets at the same places. The last 10% of the records (at least one)
// are the validation split. ConfigError without a tokenizer, for fewer
// than two records, or a record longer than the window; InputFileError,
// naming the line, for a bad record.
Corpus load_chat_corpus(const std::string& path, const std::string& tokenizer, const std::string& template_name,
                        int seq_len, bool pack = false);

}  // namespace zerodp::train
