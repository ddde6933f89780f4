// SPDX-License-Identifier: Apache-2.0
// Helpers for the model tests: random batches and full-buffer passes.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/error.h"
#include "kernels/compute.h"

#include "core/grad_schedule.h"
#include "model/model.h"

namespace zerodp::model::testing {

inline std::vector<int32_t> random_tokens(size_t n, int vocab, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> v(n);
  for (auto& t : v) t = dist(gen);
  return v;
}

inline std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// One forward + backward, grads accumulated into `grads`; returns the loss.
inline float train_pass(const Model& m, const std::vector<float>& params, std::vector<float>& grads, Workspace& ws,
                        const Batch& batch, float scale = 1.0f) {
  ws.set_batch(batch);
  const float loss = forward_all(m, params, ws);
  ws.set_loss_grad_scale(scale);
  backward_all(m, params, grads, ws);
  return loss;
}

// backward_all as the engine runs it: a split op's weight part waits for
// its unit's opening op (core/grad_schedule.h), the tied LM head's until
// the embedding's backward.
inline void backward_all_deferred(const Model& m, const std::vector<float>& params, std::vector<float>& grads,
                                  Workspace& ws) {
  const GradSchedule s = grad_schedule(grad_ops(m), 0);
  const std::span<const float> all_params(params);
  const std::span<float> all_grads(grads);
  for (int i = static_cast<int>(m.ops().size()) - 1; i >= 0; --i) {
    const Op& op = m.ops()[static_cast<size_t>(i)];
    const auto p = m.unit_span(all_params, op.unit);
    const auto gr = m.unit_span(all_grads, op.unit);
    if (s.deferred[static_cast<size_t>(i)]) {
      m.backward_input(i, p, ws);
      continue;
    }
    if (s.opens_at[static_cast<size_t>(op.unit)] == i) {
      for (const int k : s.waiting[static_cast<size_t>(op.unit)]) m.backward_weights(k, gr, ws);
    }
    m.backward(i, op.backward_reads_params ? p : std::span<const float>{}, gr, ws);
  }
}

// A split head's weight part run at the end of the backward gives the
// bits of the whole backward (fp32 and bf16 products, with checkpointing).
inline void expect_deferred_head_keeps_the_bits(const Model& m, const Batch& batch, int micro_batch, int seq_len) {
  ASSERT_TRUE(m.ops().back().weight_grad_apart);
  std::vector<float> params(m.num_params());
  m.init_params(params, 31);
  for (const bool bf16 : {false, true}) {
    for (const bool checkpointing : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "bf16 products " << bf16 << ", checkpointing " << checkpointing);
      const kernels::ScopedCompute scoped(bf16 ? kernels::Compute::kBf16 : kernels::Compute::kFp32);
      auto ws = m.make_workspace(micro_batch, seq_len, checkpointing);
      std::vector<float> whole(params.size(), 0.0f), deferred(params.size(), 0.0f);
      const float loss = train_pass(m, params, whole, *ws, batch, 0.5f);
      ws->set_batch(batch);
      EXPECT_EQ(forward_all(m, params, *ws), loss);
      ws->set_loss_grad_scale(0.5f);
      backward_all_deferred(m, params, deferred, *ws);
      size_t differ = 0;
      for (size_t i = 0; i < whole.size(); ++i)
        differ += std::bit_cast<uint32_t>(whole[i]) != std::bit_cast<uint32_t>(deferred[i]);
      EXPECT_EQ(differ, 0u) << "gradients that differ";
    }
  }
  // A block's backward does not run in parts.
  auto ws = m.make_workspace(micro_batch, seq_len, false);
  EXPECT_THROW(m.backward_weights(1, std::span<float>(params).first(m.units()[1].count), *ws), ConfigError);
}

// The ops on bf16 units read in place (Model::reads_bf16_weights) give the
// bits of the fp32 calls on those units widened (bf16 products; the tied
// head whole and in two parts; with checkpointing; the bf16 product inputs'
// workspace too), each op's widening scratch exactly Op::bf16_widened
// floats (a short one throws); fp32 products refuse bf16 weights.
inline void expect_bf16_in_place_keeps_the_bits(const Model& m, const Batch& batch, int micro_batch, int seq_len) {
  ASSERT_TRUE(m.reads_bf16_weights());
  std::vector<float> init(m.num_params());
  m.init_params(init, 33);
  for (float& x : init) x += 0.01f;  // no zero gains or biases: every widened value shows
  std::vector<BFloat16> bf16(init.size());
  std::vector<float> widened(init.size());
  for (size_t i = 0; i < init.size(); ++i) {
    bf16[i] = float_to_bfloat16(init[i]);
    widened[i] = bfloat16_to_float(bf16[i]);
  }
  const std::span<const BFloat16> all(bf16);
  auto unit_of = [&](const Op& op) { return all.subspan(m.units()[op.unit].offset, m.units()[op.unit].count); };
  const kernels::ScopedCompute scoped(kernels::Compute::kBf16);
  const GradSchedule s = grad_schedule(grad_ops(m, true), 0);
  for (const bool checkpointing : {false, true}) {
    for (const bool split : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "checkpointing " << checkpointing << ", head in two parts " << split);
      auto ws = m.make_workspace_for({.micro_batch = micro_batch,
                                      .seq_len = seq_len,
                                      .checkpointing = checkpointing,
                                      .bf16_product_inputs = true});
      std::vector<float> expected(init.size(), 0.0f), got(init.size(), 0.0f);
      const float loss = train_pass(m, widened, expected, *ws, batch, 0.5f);
      ws->set_batch(batch);
      for (size_t i = 0; i < m.ops().size(); ++i) {
        const Op& op = m.ops()[i];
        std::vector<float> scratch(op.bf16_widened);
        m.forward_bf16(static_cast<int>(i), unit_of(op), scratch, *ws);
      }
      EXPECT_EQ(ws->loss(), loss);
      ws->set_loss_grad_scale(0.5f);
      const std::span<float> grads(got);
      for (int i = static_cast<int>(m.ops().size()) - 1; i >= 0; --i) {
        const Op& op = m.ops()[static_cast<size_t>(i)];
        const auto g = m.unit_span(grads, op.unit);
        std::vector<float> scratch(op.bf16_widened);
        const auto p = op.backward_reads_params ? unit_of(op) : std::span<const BFloat16>{};
        if (split && s.deferred[static_cast<size_t>(i)]) {
          m.backward_input_bf16(i, p, scratch, *ws);
          continue;
        }
        if (split && s.opens_at[static_cast<size_t>(op.unit)] == i) {
          for (const int k : s.waiting[static_cast<size_t>(op.unit)]) m.backward_weights(k, g, *ws);
        }
        m.backward_bf16(i, p, scratch, g, *ws);
      }
      size_t differ = 0;
      for (size_t i = 0; i < got.size(); ++i)
        differ += std::bit_cast<uint32_t>(expected[i]) != std::bit_cast<uint32_t>(got[i]);
      EXPECT_EQ(differ, 0u) << "gradients that differ";
    }
  }
  // A block reads its gains through the scratch: one float short throws.
  auto ws = m.make_workspace_for({.micro_batch = micro_batch, .seq_len = seq_len, .bf16_product_inputs = true});
  ws->set_batch(batch);
  std::vector<float> scratch(m.ops()[0].bf16_widened);
  m.forward_bf16(0, unit_of(m.ops()[0]), scratch, *ws);
  ASSERT_GT(m.ops()[1].bf16_widened, 0u);
  scratch.assign(m.ops()[1].bf16_widened - 1, 0.0f);
  EXPECT_THROW(m.forward_bf16(1, unit_of(m.ops()[1]), scratch, *ws), ShapeError);
  const kernels::ScopedCompute fp32(kernels::Compute::kFp32);
  scratch.assign(m.ops()[1].bf16_widened, 0.0f);
  EXPECT_THROW(m.forward_bf16(1, unit_of(m.ops()[1]), scratch, *ws), ConfigError);
}

}  // namespace zerodp::model::testing
