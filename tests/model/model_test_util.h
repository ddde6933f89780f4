// SPDX-License-Identifier: Apache-2.0
// Helpers for the model tests: random batches and full-buffer passes.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

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

}  // namespace zerodp::model::testing
