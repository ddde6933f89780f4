// SPDX-License-Identifier: Apache-2.0
#include "train/samples.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

#include "core/error.h"
#include "model/generate.h"
#include "text/chat_template.h"

namespace zerodp::train {
namespace {

// The sample's first tokens: --prompt (through the tokenizer, or as bytes),
// else a held-out problem's prompt (embedded corpus) or a new document
// (after <|endoftext|>, as llm.c's samples start). The first `hidden` of
// them are not printed (the end-of-text token).
struct SamplePrompt {
  std::vector<int32_t> tokens;
  size_t hidden = 0;
  std::string user;  // chat data: the user message the sample answers
};
SamplePrompt sample_prompt(const Corpus& corpus, const TrainConfig& config) {
  SamplePrompt p;
  if (corpus.chat_template) {
    // Chat data: --prompt (else a validation record's) as a user message in
    // the template, then the assistant's header; none of it is printed.
    p.user = config.prompt.empty() ? corpus.chat_sample_prompt : config.prompt;
    const std::vector<text::ChatMessage> user = {{.role = text::ChatRole::kUser, .content = p.user}};
    p.tokens = corpus.tokenizer->encode_uncached(text::render_generation_prompt(user, *corpus.chat_template));
    p.hidden = p.tokens.size();
    ZDP_CHECK(p.tokens.size() < static_cast<size_t>(config.seq_len), ConfigError,
              "[train] the sample's prompt is {} tokens in the {} template, not shorter than --seq-len {}: give a "
              "shorter --prompt",
              p.tokens.size(), text::chat_template_name(*corpus.chat_template), config.seq_len);
    return p;
  }
  const bool document = corpus.tokenizer && corpus.tokenizer->document_start() >= 0;
  if (document) {
    p.tokens = {corpus.tokenizer->document_start()};
    p.hidden = 1;
  }
  if (!config.prompt.empty()) {
    ZDP_CHECK(corpus.byte_level || corpus.tokenizer, ConfigError,
              "[train] --prompt needs a tokenizer to turn it into these shards' ids: give --tokenizer gpt2 (the one "
              "the shards were made with)");
    const std::vector<int32_t> ids =
        corpus.tokenizer ? corpus.tokenizer->encode_uncached(config.prompt) : text_to_tokens(config.prompt);
    p.tokens.insert(p.tokens.end(), ids.begin(), ids.end());
    return p;
  }
  if (document) return p;
  if (corpus.byte_level) {
    p.tokens = text_to_tokens(corpus.held_out.empty() ? std::string("\n") : corpus.held_out[0].prompt());
  } else {
    p.tokens = {0};
  }
  return p;
}

}  // namespace

void check_sample_prompt(const Corpus& corpus, const TrainConfig& config) { (void)sample_prompt(corpus, config); }

std::string sample_text(const model::CausalLm& lm, std::span<const float> params, const Corpus& corpus,
                        const TrainConfig& config) {
  const SamplePrompt prompt = sample_prompt(corpus, config);
  model::GenerateConfig g;
  g.max_new_tokens = config.sample_tokens;
  g.temperature = static_cast<float>(config.temperature);
  g.top_k = config.top_k;
  g.seed = config.seed;
  g.context = config.seq_len;      // the positions the model was trained at
  g.align = corpus.record_length;  // windows start on a record, as in training
  if (corpus.chat_template) {
    // A record starts its window, so the turn is written within one: the
    // prompt at position 0, at most the window's remaining positions.
    g.align = 1;
    g.max_new_tokens = std::min<int>(g.max_new_tokens, config.seq_len - static_cast<int>(prompt.tokens.size()));
    // The assistant's turn ends at its end-of-turn token, as in training.
    // (One token: choose_chat_template checked each of the template's special tokens.)
    g.stop_token = corpus.tokenizer->encode_uncached(text::end_of_turn(*corpus.chat_template)).front();
  }
  auto out = model::generate(lm, params, prompt.tokens, g);
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(prompt.hidden));
  if (!corpus.chat_template) return sample_to_text(corpus, out);
  const bool ended = !out.empty() && out.back() == g.stop_token;
  if (ended) out.pop_back();
  return fmt::format("user: {}\nassistant: {}{}", prompt.user, sample_to_text(corpus, out),
                     ended ? "" : " [no end of turn within the sample's tokens]");
}

double held_out_accuracy(const model::CausalLm& lm, std::span<const float> params, const Corpus& corpus, int count,
                         int context) {
  int correct = 0;
  const int n = std::min<int>(count, static_cast<int>(corpus.held_out.size()));
  for (int i = 0; i < n; ++i) {
    const ArithmeticProblem& p = corpus.held_out[i];
    const auto prompt = text_to_tokens(p.prompt());
    model::GenerateConfig g;
    g.max_new_tokens = static_cast<int>(p.answer().size());
    g.context = context;  // the positions the model was trained at
    g.temperature = 0.0f;
    const auto out = model::generate(lm, params, prompt, g);
    const std::string answer = tokens_to_text({out.begin() + static_cast<std::ptrdiff_t>(prompt.size()), out.end()});
    if (answer == p.answer()) ++correct;
  }
  return n > 0 ? static_cast<double>(correct) / n : 0.0;
}

}  // namespace zerodp::train
