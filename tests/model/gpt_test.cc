// SPDX-License-Identifier: Apache-2.0
// Gpt: unit/op structure, init, whole-model finite-difference gradients,
// gradient accumulation and scaling, activation checkpointing (bitwise), rank
// threads sharing one model, learning on a memorisable batch, and masked
// targets (-1: no loss at that position).
#include "model/gpt.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "core/simd.h"
#include "kernels/compute.h"
#include "model/gpt_workspace.h"
#include "model_test_util.h"

namespace zerodp::model {
namespace {

using testing::random_floats;
using testing::random_tokens;
using testing::train_pass;

GptConfig small_config() { return GptConfig{6, 11, 16, 2, 2, 8}; }  // maxT V Vp L NH C

struct Inputs {
  std::vector<int32_t> tokens, targets;
  Batch batch() const {
    Batch b;
    b.tokens = tokens;
    b.targets = targets;
    return b;
  }
};
Inputs random_inputs(size_t n, int vocab, uint32_t seed) {
  return {random_tokens(n, vocab, seed), random_tokens(n, vocab, seed + 1)};
}

TEST(Gpt, UnitsAreContiguousAndTheHeadReusesUnitZero) {
  Gpt m(small_config());
  const auto& units = m.units();
  ASSERT_EQ(units.size(), 4u);  // embedding, block0, block1, ln_f
  size_t offset = 0;
  for (const auto& u : units) {
    EXPECT_EQ(u.offset, offset) << u.name;
    offset += u.count;
  }
  EXPECT_EQ(offset, m.num_params());
  EXPECT_EQ(m.num_params(), gpt_num_params(small_config()));
  const auto& ops = m.ops();
  ASSERT_EQ(ops.size(), 5u);
  EXPECT_EQ(ops.front().unit, 0);
  EXPECT_EQ(ops.back().unit, 0);
  EXPECT_EQ(ops.back().name, "lm_head");
  EXPECT_TRUE(ops.front().token_embedding);
  const auto last = m.last_backward_op();
  EXPECT_EQ(last[0], 0);  // unit 0's gradient is complete after op 0's backward
  EXPECT_EQ(last[3], 3);
}

TEST(Gpt, TensorsTileTheBufferInsideUnits) {
  Gpt m(small_config());
  const auto tensors = m.tensors();
  ASSERT_EQ(tensors.size(), 2u + 12u * 2 + 2u);
  size_t offset = 0, decayed = 0;
  for (const auto& t : tensors) {
    EXPECT_EQ(t.offset, offset) << t.name;
    offset += t.count;
    if (t.decay) decayed += t.count;
    EXPECT_EQ(t.decay, t.shape.size() == 2) << t.name;
    // Inside exactly one unit.
    int inside = 0;
    for (const auto& u : m.units()) inside += t.offset >= u.offset && t.offset + t.count <= u.offset + u.count;
    EXPECT_EQ(inside, 1) << t.name;
  }
  EXPECT_EQ(offset, m.num_params());
  // Decayed: wte, wpe and the four matrices per block.
  const size_t C = 8;
  EXPECT_EQ(decayed, (16 + 6) * C + 2 * 12 * C * C);
  EXPECT_EQ(tensors[4].name, "block0.qkvw");
}

TEST(Gpt, InitIsDeterministicAndGpt2Like) {
  const GptConfig c{64, 100, 128, 2, 2, 32};
  Gpt m(c);
  std::vector<float> a(m.num_params()), b(m.num_params()), d(m.num_params());
  m.init_params(a, 7);
  m.init_params(b, 7);
  m.init_params(d, 8);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0);
  EXPECT_NE(std::memcmp(a.data(), d.data(), a.size() * 4), 0);
  // Padded wte rows are zero; wte std is about 0.02.
  for (size_t i = size_t(c.vocab) * c.channels; i < size_t(c.padded_vocab) * c.channels; ++i) ASSERT_EQ(a[i], 0.0f);
  double s2 = 0;
  for (size_t i = 0; i < size_t(c.vocab) * c.channels; ++i) s2 += double(a[i]) * a[i];
  EXPECT_NEAR(std::sqrt(s2 / (c.vocab * c.channels)), 0.02, 0.002);
  // At init the loss is close to ln(V).
  auto ws = m.make_workspace(2, 16, false);
  Inputs in = random_inputs(32, c.vocab, 3);
  ws->set_batch(in.batch());
  EXPECT_NEAR(forward_all(m, a, *ws), std::log(double(c.vocab)), 0.1);
}

// Whole-model central differences on a few parameters of every tensor kind.
// fp32 forward; tolerances: |num - ana| <= 2e-4 + 3e-2 |num| with eps 1e-2 (stated in docs/models.md).
// The whole model's gradients against central differences of the loss.
void expect_finite_difference_gradients(const Inputs& in) {
  Gpt m(small_config());
  std::vector<float> params(m.num_params());
  m.init_params(params, 1);
  // Larger weights than GPT-2's init so every path carries gradient.
  auto noise = random_floats(params.size(), 2);
  for (size_t i = 0; i < params.size(); ++i) params[i] += 0.2f * noise[i];
  auto ws = m.make_workspace(2, 5, false);
  std::vector<float> grads(params.size(), 0.0f);
  train_pass(m, params, grads, *ws, in.batch());
  auto loss_at = [&] {
    ws->set_batch(in.batch());
    return double(forward_all(m, params, *ws));
  };
  int checked = 0, failed = 0;
  for (size_t i = 0; i < params.size(); i += 11) {
    // Skip padded wte rows: no gradient by design (checked below).
    if (i >= 11 * 8 && i < 16 * 8) continue;
    const float orig = params[i];
    const double eps = 1e-2;
    params[i] = orig + float(eps);
    const double fp = loss_at();
    params[i] = orig - float(eps);
    const double fm = loss_at();
    params[i] = orig;
    const double num = (fp - fm) / (2 * eps);
    ++checked;
    if (std::abs(num - grads[i]) > 2e-4 + 3e-2 * std::abs(num)) {
      ++failed;
      ADD_FAILURE() << "param " << i << ": numeric " << num << " analytic " << grads[i];
    }
  }
  EXPECT_GT(checked, 150);
  EXPECT_EQ(failed, 0);
  for (size_t i = 11 * 8; i < 16 * 8; ++i) ASSERT_EQ(grads[i], 0.0f) << "padded wte row gradient";
}

TEST(Gpt, FiniteDifferenceGradients) { expect_finite_difference_gradients(random_inputs(10, 11, 5)); }

// Targets of -1 have no loss: the gradients are still the loss's (the mean
// over the unmasked targets) and the workspace counts them.
TEST(Gpt, FiniteDifferenceGradientsWithMaskedTargets) {
  Inputs in = random_inputs(10, 11, 5);
  for (int i : {0, 3, 4, 8}) in.targets[i] = -1;
  expect_finite_difference_gradients(in);
}

TEST(Gpt, MaskedTargetsAreLeftOutOfTheMean) {
  Gpt m(small_config());
  std::vector<float> params(m.num_params());
  m.init_params(params, 4);
  auto ws = m.make_workspace(2, 5, false);
  Inputs in = random_inputs(10, 11, 7);
  std::vector<float> grads(params.size(), 0.0f);
  train_pass(m, params, grads, *ws, in.batch());
  auto& gws = dynamic_cast<GptWorkspace&>(*ws);
  const std::vector<float> losses(gws.losses().begin(), gws.losses().end());
  for (int i : {1, 2, 9}) in.targets[i] = -1;
  std::ranges::fill(grads, 0.0f);
  const float masked = train_pass(m, params, grads, *ws, in.batch());
  EXPECT_EQ(ws->masked_targets(), 3);
  double want = 0;
  for (int i : {0, 3, 4, 5, 6, 7, 8}) want += losses[i];
  EXPECT_NEAR(masked, want / 7, 1e-6);

  // Every target masked: loss 0, every gradient 0, no NaN.
  std::ranges::fill(in.targets, -1);
  std::ranges::fill(grads, 0.0f);
  EXPECT_EQ(train_pass(m, params, grads, *ws, in.batch()), 0.0f);
  EXPECT_EQ(ws->masked_targets(), 10);
  for (float g : grads) ASSERT_EQ(g, 0.0f);

  in.targets[0] = -2;  // only -1 is the ignore id
  EXPECT_THROW(ws->set_batch(in.batch()), ShapeError);
  in.targets[0] = 0;
  in.tokens[0] = -1;  // tokens stay in [0, V)
  EXPECT_THROW(ws->set_batch(in.batch()), ShapeError);
}

TEST(Gpt, GradientsAccumulateAndScale) {
  Gpt m(small_config());
  std::vector<float> params(m.num_params());
  m.init_params(params, 3);
  auto ws = m.make_workspace(2, 6, false);
  Inputs in = random_inputs(12, 11, 9);
  std::vector<float> g1(params.size(), 0.0f), g2(params.size(), 0.0f), g4(params.size(), 0.0f);
  train_pass(m, params, g1, *ws, in.batch());
  train_pass(m, params, g2, *ws, in.batch());
  train_pass(m, params, g2, *ws, in.batch());
  train_pass(m, params, g4, *ws, in.batch(), 4.0f);
  double max_g = 0;
  for (float g : g1) max_g = std::max(max_g, double(std::abs(g)));
  ASSERT_GT(max_g, 0.0);
  for (size_t i = 0; i < g1.size(); ++i) {
    ASSERT_NEAR(g2[i], 2 * g1[i], 1e-6 * max_g) << i;
    ASSERT_NEAR(g4[i], 4 * g1[i], 1e-6 * max_g) << i;
  }
}

// Checkpointing recomputes each block in backward: the gradients must be the
// same bits, and the kept activations much smaller. 6 layers.
TEST(Gpt, CheckpointingGivesBitwiseEqualGradientsWithLessMemory) {
  const GptConfig c{64, 256, 256, 6, 4, 64};
  Gpt m(c);
  std::vector<float> params(m.num_params());
  m.init_params(params, 11);
  const int B = 4, T = 64;
  Inputs in = random_inputs(size_t(B) * T, c.vocab, 12);
  auto plain = m.make_workspace(B, T, false);
  auto ckpt = m.make_workspace(B, T, true);
  std::vector<float> g_plain(params.size(), 0.0f), g_ckpt(params.size(), 0.0f);
  const float l_plain = train_pass(m, params, g_plain, *plain, in.batch());
  const float l_ckpt = train_pass(m, params, g_ckpt, *ckpt, in.batch());
  EXPECT_EQ(l_plain, l_ckpt);
  EXPECT_EQ(std::memcmp(g_plain.data(), g_ckpt.data(), g_plain.size() * sizeof(float)), 0);
  const double kept = double(ckpt->activation_bytes()) / plain->activation_bytes();
  const double total = double(ckpt->total_bytes()) / plain->total_bytes();
  std::printf("6 layers, C=64, B=4, T=64, V=256: kept activations %.3f, all workspace bytes %.3f\n", kept, total);
  EXPECT_LT(kept, 0.15);
  EXPECT_LT(total, 0.5);
}

// bf16 products round what they read to bf16: keeping the tensors only
// products read as those bf16 operands gives the same bits at every SIMD
// level, in fewer bytes; with fp32 products the same workspace would not
// (it is made only for bf16 ones), which shows the test can fail.
TEST(Gpt, Bf16ProductInputsKeepTheBitsOfBf16Products) {
  const GptConfig c{64, 256, 256, 3, 4, 64};
  Gpt m(c);
  std::vector<float> params(m.num_params());
  m.init_params(params, 21);
  const int B = 2, T = 48;
  Inputs in = random_inputs(size_t(B) * T, c.vocab, 22);
  auto pass = [&](kernels::Compute compute, bool bf16_inputs, std::vector<float>& grads) {
    const kernels::ScopedCompute scoped(compute);
    auto ws = m.make_workspace_for({.micro_batch = B, .seq_len = T, .bf16_product_inputs = bf16_inputs});
    grads.assign(params.size(), 0.0f);
    return train_pass(m, params, grads, *ws, in.batch());
  };
  for (const SimdLevel level : supported_simd_levels()) {
    SCOPED_TRACE(simd_level_name(level));
    const ScopedSimdLevel forced(level);
    std::vector<float> g_fp32, g_bf16;
    const float l_fp32 = pass(kernels::Compute::kBf16, false, g_fp32);
    const float l_bf16 = pass(kernels::Compute::kBf16, true, g_bf16);
    EXPECT_EQ(l_fp32, l_bf16);
    EXPECT_EQ(std::memcmp(g_fp32.data(), g_bf16.data(), g_fp32.size() * sizeof(float)), 0);
  }
  std::vector<float> g_fp32, g_bf16;
  pass(kernels::Compute::kFp32, false, g_fp32);
  pass(kernels::Compute::kFp32, true, g_bf16);
  EXPECT_NE(std::memcmp(g_fp32.data(), g_bf16.data(), g_fp32.size() * sizeof(float)), 0);

  // Bytes: five of the twelve per-block tensors at half size, less two
  // shared fp32 working buffers; checkpointing keeps none of them.
  const auto plain = m.make_workspace(B, T, false);
  const auto bf16 = m.make_workspace_for({.micro_batch = B, .seq_len = T, .bf16_product_inputs = true});
  EXPECT_LT(bf16->total_bytes(), plain->total_bytes());
  const auto ckpt = m.make_workspace_for({B, T, true, true});
  EXPECT_EQ(ckpt->total_bytes(), m.make_workspace(B, T, true)->total_bytes());
}

TEST(Gpt, TheHeadsWeightGradientRunLateKeepsTheBits) {
  const GptConfig c{16, 37, 40, 2, 2, 16};
  const Gpt m(c);
  const Inputs in = random_inputs(2 * 12, c.vocab, 41);
  testing::expect_deferred_head_keeps_the_bits(m, in.batch(), 2, 12);
}

TEST(Gpt, Bf16WeightsReadInPlaceKeepTheBits) {
  const GptConfig c{16, 37, 40, 2, 2, 16};
  const Gpt m(c);
  const Inputs in = random_inputs(2 * 12, c.vocab, 43);
  testing::expect_bf16_in_place_keeps_the_bits(m, in.batch(), 2, 12);
}

TEST(Gpt, RankThreadsShareOneModel) {
  Gpt m(small_config());
  std::vector<float> params(m.num_params());
  m.init_params(params, 5);
  constexpr int kRanks = 3;
  std::vector<Inputs> inputs;
  std::vector<std::vector<float>> serial(kRanks), threaded(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    inputs.push_back(random_inputs(12, 11, 100 + r));
    serial[r].assign(params.size(), 0.0f);
    threaded[r].assign(params.size(), 0.0f);
    auto ws = m.make_workspace(2, 6, r == 1);
    train_pass(m, params, serial[r], *ws, inputs[r].batch());
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      auto ws = m.make_workspace(2, 6, r == 1);
      for (int rep = 0; rep < 5; ++rep) {
        std::fill(threaded[r].begin(), threaded[r].end(), 0.0f);
        train_pass(m, params, threaded[r], *ws, inputs[r].batch());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(std::memcmp(serial[r].data(), threaded[r].data(), params.size() * 4), 0) << "rank " << r;
  }
}

TEST(Gpt, LearnsAMemorisableBatch) {
  const GptConfig c{16, 32, 32, 2, 2, 32};
  Gpt m(c);
  std::vector<float> params(m.num_params()), grads(m.num_params());
  m.init_params(params, 21);
  auto ws = m.make_workspace(2, 16, false);
  Inputs in = random_inputs(32, c.vocab, 22);
  float first = 0, last = 0;
  for (int step = 0; step < 40; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    last = train_pass(m, params, grads, *ws, in.batch());
    if (step == 0) first = last;
    for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.5f * grads[i];
  }
  EXPECT_LT(last, 0.6f * first) << "first " << first << " last " << last;
}

TEST(Gpt, RejectsBadInputs) {
  Gpt m(small_config());
  EXPECT_THROW(m.make_workspace(1, 7, false), ConfigError);  // T > maxT
  EXPECT_THROW(m.make_workspace(0, 4, false), ConfigError);
  auto ws = m.make_workspace(1, 4, false);
  std::vector<int32_t> toks{1, 2, 11, 3}, tgts{1, 2, 3, 4}, short_toks{1, 2};
  Batch b;
  b.tokens = toks;
  b.targets = tgts;
  EXPECT_THROW(ws->set_batch(b), ShapeError);  // id 11 >= V
  b.tokens = short_toks;
  EXPECT_THROW(ws->set_batch(b), ShapeError);
  std::vector<float> params(m.num_params()), grads(m.num_params());
  const int head = static_cast<int>(m.ops().size()) - 1;
  EXPECT_THROW(
      m.backward(head, m.unit_span(std::span<const float>(params), 0), m.unit_span(std::span<float>(grads), 0), *ws),
      ConfigError);
  EXPECT_THROW(GptConfig({8, 10, 16, 2, 3, 8}).validate(), ConfigError);  // C % NH
}

// GPT-2's attention has no segments: packed records are refused, not mixed.
TEST(Gpt, PackedRecordsAreRefused) {
  const Gpt m(small_config());
  auto ws = m.make_workspace(1, 4, false);
  const std::vector<int32_t> tokens = {1, 2, 3, 4}, segments = {1, 1, 2, 2};
  EXPECT_THROW(ws->set_batch({.tokens = tokens, .segments = segments}), ConfigError);
}

}  // namespace
}  // namespace zerodp::model
