// SPDX-License-Identifier: Apache-2.0
// Mlp: structure, finite-difference gradients for both heads, learning.
#include "model/mlp.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "model_test_util.h"

namespace zerodp::model {
namespace {

using testing::random_floats;
using testing::random_tokens;
using testing::train_pass;

void check_gradients(MlpHead head) {
  Mlp m({{5, 7, 6, 3}, head});
  ASSERT_EQ(m.units().size(), 3u);
  EXPECT_EQ(m.num_params(), size_t(6 * 7 + 8 * 6 + 7 * 3));
  const auto tensors = m.tensors();
  ASSERT_EQ(tensors.size(), 6u);
  EXPECT_EQ(tensors[1].name, "fc0.b");
  EXPECT_FALSE(tensors[1].decay);
  EXPECT_EQ(tensors.back().offset + tensors.back().count, m.num_params());
  std::vector<float> params(m.num_params()), grads(m.num_params(), 0.0f);
  m.init_params(params, 1);
  auto noise = random_floats(params.size(), 9);
  for (size_t i = 0; i < params.size(); ++i) params[i] += 0.1f * noise[i];  // biases non-zero too
  auto ws = m.make_workspace(4, 1, false);
  auto x = random_floats(4 * 5, 2);
  auto y = random_floats(4 * 3, 3);
  auto labels = random_tokens(4, 3, 4);
  Batch b;
  b.features = x;
  b.values = y;
  b.targets = labels;
  train_pass(m, params, grads, *ws, b);
  int failed = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const float orig = params[i];
    const double eps = 1e-2;
    params[i] = orig + float(eps);
    ws->set_batch(b);
    const double fp = forward_all(m, params, *ws);
    params[i] = orig - float(eps);
    ws->set_batch(b);
    const double fm = forward_all(m, params, *ws);
    params[i] = orig;
    const double num = (fp - fm) / (2 * eps);
    if (std::abs(num - grads[i]) > 2e-4 + 2e-2 * std::abs(num)) {
      ++failed;
      ADD_FAILURE() << "param " << i << ": numeric " << num << " analytic " << grads[i];
    }
  }
  EXPECT_EQ(failed, 0);
}

TEST(Mlp, RegressionGradients) { check_gradients(MlpHead::kRegression); }
TEST(Mlp, ClassificationGradients) { check_gradients(MlpHead::kClassification); }

TEST(Mlp, LearnsARegression) {
  Mlp m({{8, 32, 2}, MlpHead::kRegression});
  std::vector<float> params(m.num_params()), grads(m.num_params());
  m.init_params(params, 3);
  auto ws = m.make_workspace(16, 1, false);
  auto x = random_floats(16 * 8, 4);
  std::vector<float> y(16 * 2);
  for (int i = 0; i < 16; ++i) {
    y[2 * i] = x[8 * i] - 0.5f * x[8 * i + 1];
    y[2 * i + 1] = 0.3f * x[8 * i + 2];
  }
  Batch b;
  b.features = x;
  b.values = y;
  float first = 0, last = 0;
  for (int step = 0; step < 100; ++step) {
    std::fill(grads.begin(), grads.end(), 0.0f);
    last = train_pass(m, params, grads, *ws, b);
    if (step == 0) first = last;
    for (size_t i = 0; i < params.size(); ++i) params[i] -= 0.05f * grads[i];
  }
  EXPECT_LT(last, 0.2f * first) << first << " -> " << last;
}

TEST(Mlp, RejectsBadConfigsAndBatches) {
  EXPECT_THROW(Mlp({{5}, MlpHead::kRegression}), ConfigError);
  EXPECT_THROW(Mlp({{5, 0, 2}, MlpHead::kRegression}), ConfigError);
  Mlp m({{3, 2}, MlpHead::kClassification});
  EXPECT_THROW(m.make_workspace(2, 1, true), ConfigError);
  auto ws = m.make_workspace(2, 1, false);
  std::vector<float> x(6);
  std::vector<int32_t> bad{0, 2};
  Batch b;
  b.features = x;
  b.targets = bad;
  EXPECT_THROW(ws->set_batch(b), ShapeError);
}

}  // namespace
}  // namespace zerodp::model
