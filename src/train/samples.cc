// SPDX-License-Identifier: Apache-2.0
#include "train/samples.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/error.h"
#include "model/generate.h"

namespace zerodp::train {
namespace {

// The sample's first tokens: --prompt (through the tokenizer, or as bytes),
// else a held-out problem's prompt (embedded corpus) or a new document
// (after <|endoftext|>, as llm.c's samples start). The first `hidden` of
// them are not printed (the end-of-text token).
struct SamplePrompt {
  std::vector<int32_t> tokens;
  size_t hidden = 0;
};
SamplePrompt sample_prompt(const Corpus& corpus, const TrainConfig& config) {
  SamplePrompt p;
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
  auto out = model::generate(lm, params, prompt.tokens, g);
  out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(prompt.hidden));
  return sample_to_text(corpus, out);
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
