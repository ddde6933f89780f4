// SPDX-License-Identifier: Apache-2.0
// Generation: greedy is deterministic and equals top-k 1; sampling honours
// top-k; a model trained on a repeating pattern continues it.
#include "model/generate.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "model/gpt.h"
#include "model/llama.h"
#include "model_test_util.h"

namespace zerodp::model {
namespace {

TEST(Generate, SampleTokenHonoursTopKAndTemperature) {
  std::vector<float> logits{0.0f, 3.0f, 1.0f, 2.5f, -1.0f};
  EXPECT_EQ(sample_token(logits, 0.0f, 0, 0.7), 1);  // greedy
  for (double u = 0.0; u < 1.0; u += 0.01) {
    const int t = sample_token(logits, 1.0f, 2, u);
    EXPECT_TRUE(t == 1 || t == 3) << t;
  }
  EXPECT_EQ(sample_token(logits, 1.0f, 1, 0.99), 1);
  // Very low temperature: the argmax almost surely.
  EXPECT_EQ(sample_token(logits, 1e-3f, 0, 0.999), 1);
}

// With context K and align A, the token after a text depends only on the
// window that starts at the first multiple of A that leaves at most K tokens.
TEST(Generate, ContextAndAlignChooseTheWindow) {
  const GptConfig c{16, 8, 8, 1, 2, 16};
  Gpt m(c);
  std::vector<float> params(m.num_params());
  m.init_params(params, 9);
  GenerateConfig g;
  g.max_new_tokens = 1;
  g.temperature = 0.0f;
  g.context = 6;
  g.align = 4;
  // 9 tokens: the latest start keeping 6 is 3, moved on to 4: tokens 4..8.
  const std::vector<int32_t> base{1, 2, 3, 4, 5, 6, 7, 0, 1};
  std::vector<int32_t> before = base;
  before[0] = 7;
  before[3] = 0;  // token 3 is outside the window too
  EXPECT_EQ(generate(m, params, base, g).back(), generate(m, params, before, g).back());
  // ... and it is exactly what the model sees given tokens 4..8 alone, at
  // positions 0..4 (sampled, so that the whole distribution is compared).
  g.temperature = 1.0f;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    g.seed = seed;
    GenerateConfig alone = g;
    alone.context = 0;
    alone.align = 1;
    EXPECT_EQ(generate(m, params, base, g).back(),
              generate(m, params, std::vector<int32_t>(base.begin() + 4, base.end()), alone).back())
        << "seed " << seed;
  }
  g.align = 7;  // larger than the context
  EXPECT_THROW(generate(m, params, base, g), ConfigError);
  g.align = 0;
  EXPECT_THROW(generate(m, params, base, g), ConfigError);
}

// Trains `m` (vocabulary >= 8, context >= 16) on 0 1 2 ... 7 0 1 ... and
// checks that greedy generation continues the pattern past the context.
void expect_learns_to_continue_a_pattern(const CausalLm& m) {
  std::vector<float> params(m.num_params()), grads(m.num_params());
  m.init_params(params, 4);
  // Sequence 0 1 2 3 4 5 6 7 0 1 ...: the next token is (t + 1) % 8.
  // Eight rows, each starting at a different token, so position does not
  // predict the token.
  std::vector<int32_t> tokens(8 * 16), targets(8 * 16);
  for (int i = 0; i < 8 * 16; ++i) {
    tokens[i] = (i % 16 + i / 16) % 8;
    targets[i] = (tokens[i] + 1) % 8;
  }
  auto ws = m.make_workspace(8, 16, false);
  Batch b;
  b.tokens = tokens;
  b.targets = targets;
  float loss = 0;
  for (int step = 0; step < 200; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    loss = testing::train_pass(m, params, grads, *ws, b);
    for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.3f * grads[i];
  }
  ASSERT_LT(loss, 0.1f);
  std::vector<int32_t> prompt{5, 6};
  GenerateConfig g;
  g.max_new_tokens = 20;  // runs past maxT: the window slides
  g.temperature = 0.0f;
  auto out = generate(m, params, prompt, g);
  ASSERT_EQ(out.size(), 22u);
  for (size_t i = 1; i < out.size(); ++i) EXPECT_EQ(out[i], (out[i - 1] + 1) % 8) << i;
  g.temperature = 1.0f;
  g.top_k = 1;
  EXPECT_EQ(generate(m, params, prompt, g), out);
  EXPECT_THROW(generate(m, params, std::vector<int32_t>{}, g), ConfigError);
  EXPECT_THROW(generate(m, params, std::vector<int32_t>{m.vocab()}, g), ConfigError);
}

// A stop token ends the generation right after it is sampled.
TEST(Generate, StopsAfterTheStopToken) {
  const GptConfig c{16, 8, 8, 1, 2, 16};
  Gpt m(c);
  std::vector<float> params(m.num_params());
  m.init_params(params, 9);
  const std::vector<int32_t> prompt = {1, 2, 3};
  GenerateConfig g;
  g.temperature = 0.0f;
  g.max_new_tokens = 6;
  const std::vector<int32_t> free_run = generate(m, params, prompt, g);
  ASSERT_EQ(free_run.size(), prompt.size() + 6);
  g.stop_token = free_run[prompt.size() + 1];  // the second generated token
  const std::vector<int32_t> stopped = generate(m, params, prompt, g);
  // Up to the first occurrence of the stop token, and nothing after it.
  const auto first =
      std::find(free_run.begin() + static_cast<std::ptrdiff_t>(prompt.size()), free_run.end(), g.stop_token);
  EXPECT_EQ(stopped, std::vector<int32_t>(free_run.begin(), first + 1));
}

TEST(Generate, GptLearnsToContinueAPattern) { expect_learns_to_continue_a_pattern(Gpt(GptConfig{16, 8, 8, 1, 2, 16})); }

TEST(Generate, LlamaLearnsToContinueAPattern) {
  LlamaConfig c;
  c.vocab = 8;
  c.hidden = 16;
  c.layers = 1;
  c.heads = 2;
  c.kv_heads = 1;
  c.head_dim = 8;
  c.intermediate = 24;
  c.max_seq_len = 16;
  expect_learns_to_continue_a_pattern(Llama(c));
}

}  // namespace
}  // namespace zerodp::model
