// SPDX-License-Identifier: Apache-2.0
// The Llama family: presets with the published parameter counts, the JSON
// schema, the model against PyTorch on the two tiny fixture models
// (tools/make_llama_fixture.py: Hugging Face names and config, PyTorch's
// loss and every gradient), the workspace's bytes against the planner's
// estimate, and activation checkpointing's bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../kernels/safetensors_fixture.h"
#include "core/error.h"
#include "core/simd.h"
#include "kernels/compute.h"
#include "kernels/softmax_xent.h"
#include "model/llama.h"
#include "model/llama_family.h"
#include "model/presets.h"
#include "model_test_util.h"

namespace zerodp::model {
namespace {

using kernels::testing::SafetensorsFixture;
using kernels::testing::scaled_max_diff;

TEST(LlamaPresets, ParameterCountsAreThePublishedOnes) {
  EXPECT_EQ(num_params(model_preset("smollm2-135m")), 134'515'008u);
  EXPECT_EQ(num_params(model_preset("smollm2-360m")), 361'821'120u);
  EXPECT_EQ(num_params(model_preset("qwen2.5-0.5b")), 494'032'768u);
  EXPECT_EQ(num_params(model_preset("llama3.2-1b")), 1'235'814'400u);
  for (const char* name : {"llama-tiny", "smollm2-135m", "qwen2.5-0.5b", "llama3.2-1b"}) {
    const ModelConfig m = model_preset(name);
    EXPECT_EQ(m.kind(), "llama") << name;
    EXPECT_EQ(make_model(m)->num_params(), num_params(m)) << name;  // the layout agrees with the formula
  }
}

TEST(LlamaSchema, JsonRoundTripsAndRefusesWhatDoesNotFit) {
  for (const char* name : {"llama-tiny", "qwen2.5-0.5b", "llama3.2-1b"}) {
    const ModelConfig m = model_preset(name);
    const ModelConfig back = model_config_from_json(model_config_json(m));
    EXPECT_EQ(back.as<LlamaSpec>()->config(), m.as<LlamaSpec>()->config()) << name;
  }
  const std::string base =
      R"({"kind":"llama","vocab":64,"hidden":32,"layers":2,"heads":4,"kv_heads":2,"head_dim":8,"intermediate":48,"max_seq_len":16)";
  EXPECT_NO_THROW(model_config_from_json(base + "}"));
  EXPECT_THROW(model_config_from_json(base + R"(,"typo":1})"), ConfigError);
  EXPECT_THROW(model_config_from_json(base + R"(,"tied":"yes"})"), ConfigError);
  const std::string bad_groups =
      R"({"kind":"llama","vocab":64,"hidden":32,"layers":2,"heads":4,"kv_heads":3,"head_dim":8,"intermediate":48,"max_seq_len":16})";
  try {
    model_config_from_json(bad_groups);
    FAIL() << "kv_heads 3 of 4 heads was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("kv_heads"), std::string::npos) << e.message();
  }
}

// A fixture's Hugging Face config.json as a Llama config.
LlamaConfig fixture_config(const std::string& dir) {
  std::ifstream in(dir + "/config.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  LlamaConfig c;
  c.vocab = j.at("vocab_size");
  c.hidden = j.at("hidden_size");
  c.layers = j.at("num_hidden_layers");
  c.heads = j.at("num_attention_heads");
  c.kv_heads = j.at("num_key_value_heads");
  c.head_dim = j.at("head_dim");
  c.intermediate = j.at("intermediate_size");
  c.max_seq_len = j.at("max_position_embeddings");
  c.tied = j.at("tie_word_embeddings");
  c.qkv_bias = j.at("architectures").at(0) == "Qwen2ForCausalLM";
  c.rope_theta = j.at("rope_theta");
  c.norm_eps = j.at("rms_norm_eps");
  const auto& rs = j.at("rope_scaling");
  if (!rs.is_null()) {
    c.rope_scaling = {true, rs.at("factor"), rs.at("low_freq_factor"), rs.at("high_freq_factor"),
                      rs.at("original_max_position_embeddings")};
  }
  return c;
}

void expect_matches_pytorch(const std::string& name) {
  const std::string dir = std::string(ZERODP_FIXTURE_DIR) + "/llama_tiny_" + name;
  const Llama model(fixture_config(dir));
  const SafetensorsFixture w(dir + "/model.safetensors");
  const SafetensorsFixture ref(dir + "/reference.safetensors");
  std::vector<float> params(model.num_params()), grads(model.num_params(), 0.0f);
  const std::vector<TensorInfo> tensors = model.tensors();
  for (const TensorInfo& t : tensors) {
    ASSERT_TRUE(w.has(t.name)) << name << ": the fixture lacks " << t.name;
    ASSERT_EQ(w.f32(t.name).size(), t.count) << t.name;
    std::copy(w.f32(t.name).begin(), w.f32(t.name).end(), params.begin() + long(t.offset));
  }
  const auto& ids = ref.i32("input_ids");
  const int B = static_cast<int>(ref.shape("input_ids")[0]), T = static_cast<int>(ref.shape("input_ids")[1]);
  auto ws = model.make_workspace(B, T, false);
  ws->set_batch({.tokens = ids, .targets = ref.i32("targets")});
  const float loss = forward_all(model, params, *ws);
  EXPECT_NEAR(loss, ref.f32("loss")[0], 1e-5 * ref.f32("loss")[0]) << name;
  // The next-token logits generation uses (CausalLm::next_token_logits), at
  // every position of the first row, against PyTorch's.
  ASSERT_TRUE(ref.has("logits")) << name;
  const int V = model.vocab();
  const std::span<const int32_t> row(ids.data(), size_t(T));
  auto one = model.make_workspace(1, T, false);
  one->set_batch({.tokens = row});
  std::vector<float> logits(V);
  for (int pos = 0; pos < T; ++pos) {
    model.next_token_logits(params, *one, pos, logits);
    const std::vector<float> want(ref.f32("logits").begin() + long(pos) * V,
                                  ref.f32("logits").begin() + long(pos + 1) * V);
    EXPECT_LT(scaled_max_diff(logits, want), 1e-5) << name << " position " << pos;
  }
  backward_all(model, params, grads, *ws);
  for (const TensorInfo& t : tensors) {
    const std::vector<float> got(grads.begin() + long(t.offset), grads.begin() + long(t.offset + t.count));
    EXPECT_LT(scaled_max_diff(got, ref.f32("grad." + t.name)), 1e-5) << name << " " << t.name;
  }
}

TEST(LlamaModel, TiedLlamaWithGroupsOfTwoMatchesPyTorch) { expect_matches_pytorch("llama"); }
TEST(LlamaModel, UntiedQwen2WithBiasesOneKvHeadAndLlama3RopeMatchesPyTorch) { expect_matches_pytorch("qwen2"); }

// Odd sizes, untied, biases and Llama 3's scaling: every option at once.
LlamaConfig odd() {
  LlamaConfig c;
  c.vocab = 37;
  c.hidden = 20;
  c.layers = 2;
  c.heads = 6;
  c.kv_heads = 2;
  c.head_dim = 6;
  c.intermediate = 23;
  c.max_seq_len = 13;
  c.tied = false;
  c.qkv_bias = true;
  c.rope_scaling = {true, 4.0, 1.0, 4.0, 8};
  return c;
}

TEST(LlamaModel, WorkspaceBytesAreThePlannersEstimate) {
  const LlamaSpec spec(odd());
  const auto model = spec.build();
  for (bool checkpointing : {false, true}) {
    for (int b : {1, 3}) {
      for (int t : {1, 7, 13}) {
        for (bool bf16_inputs : {false, true}) {
          const auto ws = model->make_workspace_for(
              {.micro_batch = b, .seq_len = t, .checkpointing = checkpointing, .bf16_product_inputs = bf16_inputs});
          ActivationConfig a;
          a.micro_batch = b;
          a.seq_len = t;
          a.checkpointing = checkpointing;
          a.bf16_product_inputs = bf16_inputs;
          EXPECT_EQ(spec.estimate_activations(a)->total_bytes, ws->total_bytes())
              << "B " << b << " T " << t << " checkpointing " << checkpointing << " bf16 inputs " << bf16_inputs;
        }
      }
    }
  }
}

TEST(LlamaModel, TheTiedHeadsWeightGradientRunLateKeepsTheBits) {
  LlamaConfig c = odd();
  c.tied = true;
  const Llama model(c);
  const int B = 2, T = 9;
  std::vector<int32_t> ids(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) ids[i] = (i * 5 + 2) % 37, targets[i] = (i * 3 + 1) % 37;
  testing::expect_deferred_head_keeps_the_bits(model, {.tokens = ids, .targets = targets}, B, T);
}

TEST(LlamaModel, Bf16WeightsReadInPlaceKeepTheBits) {
  const int B = 2, T = 9;
  std::vector<int32_t> ids(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) ids[i] = (i * 5 + 3) % 37, targets[i] = (i * 7 + 2) % 37;
  for (const bool tied : {false, true}) {
    LlamaConfig c = odd();  // untied: q, k and v biases
    c.tied = tied;
    c.qkv_bias = !tied;
    SCOPED_TRACE(tied ? "tied" : "untied, with q, k and v biases");
    testing::expect_bf16_in_place_keeps_the_bits(Llama(c), {.tokens = ids, .targets = targets}, B, T);
  }
}

TEST(LlamaModel, CheckpointingGivesTheSameBits) {
  const Llama model(odd());
  std::vector<float> params(model.num_params());
  model.init_params(params, 5);
  const int B = 2, T = 9;
  std::vector<int32_t> ids(B * T), targets(B * T);
  for (int i = 0; i < B * T; ++i) ids[i] = (i * 7 + 3) % 37, targets[i] = (i * 11 + 1) % 37;
  std::vector<std::vector<float>> grads;
  std::vector<float> losses;
  for (bool checkpointing : {false, true}) {
    auto ws = model.make_workspace(B, T, checkpointing);
    ws->set_batch({.tokens = ids, .targets = targets});
    losses.push_back(forward_all(model, params, *ws));
    grads.emplace_back(model.num_params(), 0.0f);
    backward_all(model, params, grads.back(), *ws);
  }
  EXPECT_EQ(losses[0], losses[1]);
  EXPECT_EQ(grads[0], grads[1]);
  EXPECT_GT(losses[0], 3.0f);  // about log 37 at init
}

// bf16 products round what they read to bf16: keeping n1, q, k, v, y, n2
// and m as those bf16 operands gives the same bits at every SIMD level (with
// packed records too), in fewer bytes; with fp32 products it would not,
// which shows the test can fail.
TEST(LlamaModel, Bf16ProductInputsKeepTheBitsOfBf16Products) {
  const Llama model(odd());
  std::vector<float> params(model.num_params());
  model.init_params(params, 6);
  const int B = 2, T = 13;
  std::vector<int32_t> ids(B * T), targets(B * T), segments(B * T);
  for (int i = 0; i < B * T; ++i) {
    ids[i] = (i * 7 + 3) % 37, targets[i] = (i * 11 + 1) % 37, segments[i] = (i % T) < 5 ? 0 : 1;
  }
  auto pass = [&](kernels::Compute compute, bool bf16_inputs, std::vector<float>& grads) {
    const kernels::ScopedCompute scoped(compute);
    auto ws = model.make_workspace_for({.micro_batch = B, .seq_len = T, .bf16_product_inputs = bf16_inputs});
    grads.assign(params.size(), 0.0f);
    return testing::train_pass(model, params, grads, *ws, {.tokens = ids, .targets = targets, .segments = segments});
  };
  for (const SimdLevel level : supported_simd_levels()) {
    SCOPED_TRACE(simd_level_name(level));
    const ScopedSimdLevel forced(level);
    std::vector<float> g_fp32, g_bf16;
    EXPECT_EQ(pass(kernels::Compute::kBf16, false, g_fp32), pass(kernels::Compute::kBf16, true, g_bf16));
    EXPECT_EQ(g_fp32, g_bf16);
  }
  std::vector<float> g_fp32, g_bf16;
  pass(kernels::Compute::kFp32, false, g_fp32);
  pass(kernels::Compute::kFp32, true, g_bf16);
  EXPECT_NE(g_fp32, g_bf16);
  EXPECT_LT(model.make_workspace_for({.micro_batch = B, .seq_len = T, .bf16_product_inputs = true})->total_bytes(),
            model.make_workspace(B, T, false)->total_bytes());
}

// Packed records never see each other: a row holding record A then record
// B (segments), the loss on B's targets only, gives B's loss and the
// parameters' gradients of B run alone at the start of its own row (the
// rest padding), up to the order of the GEMMs' sums over rows; with
// activation checkpointing too. Without segments, A changes B's loss.
TEST(LlamaModel, PackedRecordsGiveEachRecordsOwnLossAndGradients) {
  const Llama model(odd());
  std::vector<float> params(model.num_params());
  model.init_params(params, 5);
  const int T = 13, a_len = 5, b_len = 7;  // A and B fill 12 of the 13 positions
  std::vector<int32_t> packed(T, 0), packed_targets(T, kernels::kIgnoreTarget), segments(T, 3);
  std::vector<int32_t> alone(T, 0), alone_targets(T, kernels::kIgnoreTarget);
  for (int i = 0; i < a_len; ++i) packed[i] = (i * 5 + 2) % 37, segments[i] = 1;
  for (int i = 0; i < b_len; ++i) {
    const int32_t token = (i * 7 + 3) % 37, target = (i * 11 + 1) % 37;
    packed[a_len + i] = alone[i] = token;
    packed_targets[a_len + i] = alone_targets[i] = target;
    segments[a_len + i] = 2;
  }
  for (bool checkpointing : {false, true}) {
    auto ws = model.make_workspace(1, T, checkpointing);
    std::vector<float> packed_grads(model.num_params(), 0.0f), alone_grads(model.num_params(), 0.0f);
    const float packed_loss = testing::train_pass(model, params, packed_grads, *ws,
                                                  {.tokens = packed, .targets = packed_targets, .segments = segments});
    const float alone_loss =
        testing::train_pass(model, params, alone_grads, *ws, {.tokens = alone, .targets = alone_targets});
    EXPECT_NEAR(packed_loss, alone_loss, 1e-6f * std::abs(alone_loss)) << "checkpointing " << checkpointing;
    double max_diff = 0, max_abs = 0;
    for (size_t i = 0; i < alone_grads.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::abs(packed_grads[i] - alone_grads[i])));
      max_abs = std::max(max_abs, static_cast<double>(std::abs(alone_grads[i])));
    }
    EXPECT_LT(max_diff, 1e-5 * max_abs) << "checkpointing " << checkpointing;
    std::vector<float> unsegmented_grads(model.num_params(), 0.0f);
    const float unsegmented =
        testing::train_pass(model, params, unsegmented_grads, *ws, {.tokens = packed, .targets = packed_targets});
    EXPECT_GT(std::abs(unsegmented - alone_loss), 1e-4f) << "A should reach B without segments";
  }
  // One segment id per token, or none.
  auto ws = model.make_workspace(1, T, false);
  const std::vector<int32_t> short_segments(T - 1, 0);
  EXPECT_THROW(ws->set_batch({.tokens = packed, .segments = short_segments}), ShapeError);
}

}  // namespace
}  // namespace zerodp::model
