// SPDX-License-Identifier: Apache-2.0
// Finite-difference gradient checks for every kernel with a backward pass, on
// odd shapes. Tolerances in gradcheck.h. Each test also checks that backward
// accumulates (or overwrites) as its header promises.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "gradcheck.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/softmax_xent.h"

namespace zerodp::kernels {
namespace {

using testing::expect_grad_ok;
using testing::grad_check;
using testing::random_vector;
using testing::weighted_sum;

// The checker must be able to fail: a gradient off by 5% is caught.
TEST(GradCheck, DetectsAWrongGradient) {
  std::vector<float> x = random_vector(17, 1);
  std::vector<float> wrong(x.size());
  for (size_t i = 0; i < x.size(); ++i) wrong[i] = 1.05f * 2.0f * x[i];  // d/dx x^2 = 2x
  auto f = [&] {
    double s = 0;
    for (float v : x) s += double(v) * v;
    return s;
  };
  EXPECT_GT(grad_check(x, wrong, f).failed, 0);
}

TEST(GradCheck, Linear) {
  const LinearShape s{7, 13, 11};
  auto inp = random_vector(size_t(s.rows) * s.in, 1);
  auto w = random_vector(size_t(s.out) * s.in, 2);
  auto b = random_vector(s.out, 3);
  auto r = random_vector(size_t(s.rows) * s.out, 4);
  std::vector<float> out(r.size());
  auto f = [&] {
    linear_forward(out, inp, w, b, s);
    return weighted_sum(out, r);
  };
  // Gradients start at 1 to check that backward accumulates.
  std::vector<float> dinp(inp.size(), 1.0f), dw(w.size(), 1.0f), db(b.size(), 1.0f);
  linear_backward(dinp, dw, db, r, inp, w, s, /*accumulate_dinp=*/true);
  for (auto* g : {&dinp, &dw, &db}) {
    for (auto& v : *g) v -= 1.0f;
  }
  expect_grad_ok(grad_check(inp, dinp, f), "dinp");
  expect_grad_ok(grad_check(w, dw, f), "dweight");
  expect_grad_ok(grad_check(b, db, f), "dbias");
  // Overwrite mode ignores what dinp held.
  std::vector<float> dinp2(inp.size(), 123.0f), dw2(w.size()), db2(b.size());
  linear_backward(dinp2, dw2, db2, r, inp, w, s, false);
  for (size_t i = 0; i < dinp.size(); ++i) EXPECT_NEAR(dinp2[i], dinp[i], 1e-6);  // dinp went through +1 -1
}

TEST(GradCheck, LinearRejectsBadShapes) {
  std::vector<float> out(6), inp(6), w(5);
  EXPECT_THROW(linear_forward(out, inp, w, {}, {2, 3, 3}), ShapeError);
}

TEST(GradCheck, LayerNorm) {
  const int N = 5, C = 19;
  auto inp = random_vector(size_t(N) * C, 1, -2.0f, 2.0f);
  auto w = random_vector(C, 2);
  auto b = random_vector(C, 3);
  auto r = random_vector(size_t(N) * C, 4);
  std::vector<float> out(inp.size()), mean(N), rstd(N);
  auto f = [&] {
    layernorm_forward(out, mean, rstd, inp, w, b, N, C);
    return weighted_sum(out, r);
  };
  f();
  std::vector<float> dinp(inp.size()), dw(C), db(C);
  layernorm_backward(dinp, dw, db, r, inp, w, mean, rstd, N, C);
  expect_grad_ok(grad_check(inp, dinp, f), "dinp");
  expect_grad_ok(grad_check(w, dw, f), "dweight");
  expect_grad_ok(grad_check(b, db, f), "dbias");
}

TEST(GradCheck, Gelu) {
  auto inp = random_vector(101, 1, -4.0f, 4.0f);
  auto r = random_vector(101, 2);
  std::vector<float> out(inp.size());
  auto f = [&] {
    gelu_forward(out, inp);
    return weighted_sum(out, r);
  };
  std::vector<float> dinp(inp.size(), 7.0f);  // overwritten
  gelu_backward(dinp, inp, r);
  expect_grad_ok(grad_check(inp, dinp, f, 101), "dinp");
  // Spot value: gelu(1) = 0.841192 with the tanh approximation.
  std::vector<float> one{1.0f}, y(1);
  gelu_forward(y, one);
  EXPECT_NEAR(y[0], 0.841192f, 1e-5);
}

TEST(GradCheck, Attention) {
  const AttentionShape s{2, 7, 12, 3};  // B=2, T=7, C=12, NH=3 (hs=4)
  auto qkv = random_vector(size_t(s.batch) * s.seq * 3 * s.channels, 1);
  auto r = random_vector(size_t(s.batch) * s.seq * s.channels, 2);
  std::vector<float> out(r.size()), att(size_t(s.batch) * s.heads * s.seq * s.seq);
  auto f = [&] {
    attention_forward(out, att, qkv, s);
    return weighted_sum(out, r);
  };
  f();
  // Causality: row t of att is zero after column t and sums to 1.
  for (int t = 0; t < s.seq; ++t) {
    double sum = 0;
    for (int j = 0; j < s.seq; ++j) {
      if (j > t) {
        EXPECT_EQ(att[size_t(t) * s.seq + j], 0.0f);
      }
      sum += att[size_t(t) * s.seq + j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  std::vector<float> dqkv(qkv.size(), 5.0f), scratch(size_t(s.seq) * s.seq);
  attention_backward(dqkv, scratch, r, qkv, att, s);
  expect_grad_ok(grad_check(qkv, dqkv, f, 200), "dqkv");
}

TEST(GradCheck, SoftmaxCrossEntropyWithPadding) {
  const XentShape s{6, 11, 16};
  auto logits = random_vector(size_t(s.rows) * s.padded, 1, -3.0f, 3.0f);
  std::vector<int32_t> targets{0, 10, 3, 3, 7, 1};
  std::vector<float> buf(logits.size()), losses(s.rows);
  auto f = [&] {
    buf = logits;
    return double(softmax_xent_forward(buf, losses, targets, s));
  };
  const double loss = f();
  // Reference loss from the definition.
  double want = 0;
  for (int i = 0; i < s.rows; ++i) {
    double z = 0;
    for (int j = 0; j < s.vocab; ++j) z += std::exp(double(logits[size_t(i) * s.padded + j]));
    want += std::log(z) - logits[size_t(i) * s.padded + targets[i]];
  }
  EXPECT_NEAR(loss, want / s.rows, 1e-6);
  buf = logits;
  softmax_xent_forward(buf, losses, targets, s);
  softmax_xent_backward(buf, targets, 1.0f / s.rows, s);
  for (int i = 0; i < s.rows; ++i) {
    for (int j = s.vocab; j < s.padded; ++j) {
      EXPECT_EQ(buf[size_t(i) * s.padded + j], 0.0f);
    }
  }
  std::vector<float> grad = buf;
  expect_grad_ok(grad_check(logits, grad, f, 96), "dlogits");
  std::vector<int32_t> bad{0, 11, 0, 0, 0, 0};
  EXPECT_THROW(softmax_xent_forward(buf, losses, bad, s), ShapeError);
}

// The fused kernel gives the same loss and (to rounding) the same gradient as
// forward followed by backward.
TEST(GradCheck, SoftmaxCrossEntropyFusedMatchesTwoPasses) {
  const XentShape s{5, 37, 48};
  auto logits = random_vector(size_t(s.rows) * s.padded, 3, -4.0f, 4.0f);
  std::vector<int32_t> targets{36, 0, 17, 17, 5};
  std::vector<float> two = logits, fused = logits, l1(s.rows), l2(s.rows);
  const float loss_two = softmax_xent_forward(two, l1, targets, s);
  softmax_xent_backward(two, targets, 1.0f / s.rows, s);
  const float loss_fused = softmax_xent_fused(fused, l2, targets, 1.0f / s.rows, s);
  EXPECT_EQ(loss_two, loss_fused);
  for (size_t i = 0; i < two.size(); ++i) ASSERT_NEAR(fused[i], two[i], 1e-8) << i;
}

TEST(GradCheck, Embedding) {
  const EmbeddingShape s{2, 5, 9, 13};
  auto wte = random_vector(size_t(s.vocab) * s.channels, 1);
  auto wpe = random_vector(size_t(8) * s.channels, 2);          // maxT 8 > T
  std::vector<int32_t> tokens{3, 3, 12, 0, 5, 7, 3, 1, 0, 12};  // repeats accumulate
  auto r = random_vector(size_t(s.batch) * s.seq * s.channels, 3);
  std::vector<float> out(r.size());
  auto f = [&] {
    embedding_forward(out, tokens, wte, wpe, s);
    return weighted_sum(out, r);
  };
  std::vector<float> dwte(wte.size()), dwpe(wpe.size());
  embedding_backward(dwte, dwpe, r, tokens, s);
  expect_grad_ok(grad_check(wte, dwte, f, 200), "dwte");
  expect_grad_ok(grad_check(wpe, dwpe, f, 200), "dwpe");
  std::vector<int32_t> bad(tokens);
  bad[4] = 13;
  EXPECT_THROW(embedding_forward(out, bad, wte, wpe, s), ShapeError);
}

TEST(GradCheck, ResidualAndMse) {
  auto a = random_vector(23, 1), b = random_vector(23, 2), y = random_vector(23, 3);
  std::vector<float> out(23);
  auto f = [&] {
    residual_forward(out, a, b);
    return double(mse_forward(out, y));
  };
  f();
  std::vector<float> dout(23);
  mse_backward(dout, out, y, 1.0f);
  // d/da = d/db = dout (pass-through)
  expect_grad_ok(grad_check(a, dout, f), "da");
  expect_grad_ok(grad_check(b, dout, f), "db");
  std::vector<float> acc(23, 1.0f);
  accumulate(acc, a);
  for (size_t i = 0; i < acc.size(); ++i) EXPECT_FLOAT_EQ(acc[i], 1.0f + a[i]);
}

}  // namespace
}  // namespace zerodp::kernels
