// SPDX-License-Identifier: Apache-2.0
#include "model/generate.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/error.h"
#include "model/init_rng.h"

namespace zerodp::model {

int32_t sample_token(std::span<const float> logits, float temperature, int top_k, double u) {
  ZDP_CHECK(!logits.empty(), ShapeError, "[generate] no logits to sample from");
  const int V = static_cast<int>(logits.size());
  if (temperature <= 0.0f) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  // Threshold = the k-th largest logit; ties at the threshold are all kept.
  float threshold = -INFINITY;
  if (top_k > 0 && top_k < V) {
    std::vector<float> sorted(logits.begin(), logits.end());
    std::nth_element(sorted.begin(), sorted.begin() + (top_k - 1), sorted.end(), std::greater<float>());
    threshold = sorted[top_k - 1];
  }
  const float m = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(V, 0.0);
  double sum = 0;
  for (int i = 0; i < V; ++i) {
    if (logits[i] >= threshold) {
      p[i] = std::exp((double(logits[i]) - m) / temperature);
      sum += p[i];
    }
  }
  double target = u * sum, acc = 0;
  int32_t last_kept = 0;
  for (int i = 0; i < V; ++i) {
    if (p[i] == 0.0) continue;
    acc += p[i];
    last_kept = i;
    if (target < acc) return i;
  }
  return last_kept;  // rounding: u*sum landed on the total
}

std::vector<int32_t> generate(const CausalLm& model, std::span<const float> params, std::span<const int32_t> prompt,
                              const GenerateConfig& gc) {
  const int vocab = model.vocab(), max_context = model.max_context();
  ZDP_CHECK(!prompt.empty(), ConfigError, "[generate] the prompt is empty; give at least one token");
  ZDP_CHECK(gc.max_new_tokens >= 0, ConfigError, "[generate] max_new_tokens is {}, must be >= 0", gc.max_new_tokens);
  ZDP_CHECK(gc.top_k >= 0, ConfigError, "[generate] top_k is {}, must be >= 0 (0 = all)", gc.top_k);
  ZDP_CHECK_EQ(params.size(), model.num_params(), ShapeError, "[generate] parameter buffer size");
  for (int32_t t : prompt) {
    ZDP_CHECK(t >= 0 && t < vocab, ConfigError, "[generate] prompt token {} outside the vocabulary [0, {})", t, vocab);
  }
  const int context = gc.context > 0 ? std::min(gc.context, max_context) : max_context;
  ZDP_CHECK(gc.context >= 0, ConfigError, "[generate] context is {}, must be >= 0 (0 = the model's {})", gc.context,
            max_context);
  ZDP_CHECK(gc.align >= 1 && gc.align <= context, ConfigError, "[generate] align is {}, must be in [1, {}]", gc.align,
            context);
  std::vector<int32_t> out(prompt.begin(), prompt.end());
  if (gc.max_new_tokens == 0) return out;
  const int window = static_cast<int>(std::min<size_t>(context, out.size() + gc.max_new_tokens));
  const std::unique_ptr<Workspace> ws = model.make_workspace(1, window, false);
  std::vector<int32_t> tokens(window, 0);
  std::vector<float> logits(vocab);
  InitRng rng(gc.seed, 0x67656e);
  for (int step = 0; step < gc.max_new_tokens; ++step) {
    // The first token of the window: the latest that keeps `window` tokens,
    // moved on to a multiple of `align` (the window may then be shorter).
    const size_t align = static_cast<size_t>(gc.align);
    size_t start = out.size() > static_cast<size_t>(window) ? out.size() - window : 0;
    start = (start + align - 1) / align * align;
    const size_t len = out.size() - start;
    std::fill(tokens.begin(), tokens.end(), 0);
    std::copy(out.begin() + static_cast<std::ptrdiff_t>(start), out.end(), tokens.begin());
    ws->set_batch(Batch{.tokens = tokens});
    model.next_token_logits(params, *ws, static_cast<int>(len) - 1, logits);
    out.push_back(sample_token(logits, gc.temperature, gc.top_k, rng.uniform()));
    if (out.back() == gc.stop_token) break;
  }
  return out;
}

}  // namespace zerodp::model
