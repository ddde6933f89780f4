// SPDX-License-Identifier: Apache-2.0
// Text generation from a causal language model (GPT-2, the Llama family):
// autoregressive sampling with temperature and top-k. Each step runs the
// model's forward ops up to the final norm on a window of at most its
// context and projects only the last position through the LM head
// (CausalLm::next_token_logits). Causal attention means the unused tail of the window does
// not affect the positions before it, so one workspace serves every step.
// Thread-safety: reads the model and params; uses its own workspace.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/causal_lm.h"

namespace zerodp::model {

struct GenerateConfig {
  int max_new_tokens = 64;
  float temperature = 1.0f;  // 0 = greedy (argmax)
  int top_k = 0;             // keep the k most likely tokens; 0 = all
  uint64_t seed = 1;
  // The window the model sees: at most `context` tokens (0 = its maxT),
  // starting at a multiple of `align` tokens into the text. A model trained
  // on windows of T tokens knows positions below T only, and one trained on
  // windows that start on fixed-length records knows a record's digits only
  // at the positions records start at; sampling past T with context = T and
  // align = the record length keeps to what it learned.
  int context = 0;
  int align = 1;
  // Generation ends after this id (a chat template's end of turn); -1: none.
  int32_t stop_token = -1;
};

// Returns prompt + the generated tokens. The prompt must be non-empty with
// ids in [0, V) (ConfigError otherwise).
std::vector<int32_t> generate(const CausalLm& model, std::span<const float> params, std::span<const int32_t> prompt,
                              const GenerateConfig& config);

// Samples one id from logits[V] (temperature, top-k); exposed for tests.
int32_t sample_token(std::span<const float> logits, float temperature, int top_k, double uniform01);

}  // namespace zerodp::model
