// SPDX-License-Identifier: Apache-2.0
// The Llama family's kernels against an independent implementation:
// tools/make_llama_fixture.py ran the same math in PyTorch (float64 on fp32
// inputs) and committed inputs, outputs and gradients
// (fixtures/llama_kernels.safetensors). Tolerance: each tensor's max abs
// difference <= 1e-6 x its max abs reference value (measured: 6e-8 to
// 2.3e-7, fp32 rounding); the RoPE table is held to fp32 rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/gqa_attention.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "safetensors_fixture.h"

namespace zerodp::kernels {
namespace {

using testing::SafetensorsFixture;
using testing::scaled_max_diff;

constexpr double kTol = 1e-6;

const SafetensorsFixture& fixture() {
  static const SafetensorsFixture f(std::string(ZERODP_KERNEL_FIXTURE_DIR) + "/llama_kernels.safetensors");
  return f;
}

int dim(const std::string& name, int i) { return static_cast<int>(fixture().shape(name).at(i)); }

TEST(LlamaFixture, RmsNorm) {
  const auto& fx = fixture();
  const int N = dim("rmsnorm.x", 0), C = dim("rmsnorm.x", 1);
  const auto& x = fx.f32("rmsnorm.x");
  const auto& w = fx.f32("rmsnorm.w");
  std::vector<float> y(x.size()), rstd(N);
  rmsnorm_forward(y, rstd, x, w, N, C, static_cast<float>(fx.number("rmsnorm.eps")));
  EXPECT_LT(scaled_max_diff(y, fx.f32("rmsnorm.y")), kTol);
  EXPECT_LT(scaled_max_diff(rstd, fx.f32("rmsnorm.rstd")), kTol);
  std::vector<float> dx(x.size()), dw(C);
  rmsnorm_backward(dx, dw, fx.f32("rmsnorm.dy"), x, w, rstd, N, C);
  EXPECT_LT(scaled_max_diff(dx, fx.f32("rmsnorm.dx")), kTol);
  EXPECT_LT(scaled_max_diff(dw, fx.f32("rmsnorm.dw")), kTol);
}

void check_rope(const std::string& c, RopeScaling scaling) {
  const auto& fx = fixture();
  RopeConfig config;
  config.head_dim = static_cast<int>(fx.number(c + ".head_dim"));
  config.theta = fx.number(c + ".theta");
  config.scaling = scaling;
  if (scaling == RopeScaling::kLlama3) {
    config.factor = fx.number(c + ".factor");
    config.low_freq_factor = fx.number(c + ".low_freq_factor");
    config.high_freq_factor = fx.number(c + ".high_freq_factor");
    config.original_max_position = fx.number(c + ".original_max_position_embeddings");
  }
  const std::vector<double> inv = rope_inv_freq(config);
  const auto& want_inv = fx.f32(c + ".inv_freq");
  ASSERT_EQ(inv.size(), want_inv.size());
  for (size_t j = 0; j < inv.size(); ++j) EXPECT_EQ(static_cast<float>(inv[j]), want_inv[j]) << j;
  const int P = dim(c + ".cos", 0);
  const RopeTable table = make_rope_table(config, P);
  // The table: cos and sin of the double angle, rounded once (an ulp apart
  // at most where libm and torch round a double differently).
  const auto& want_cos = fx.f32(c + ".cos");
  const auto& want_sin = fx.f32(c + ".sin");
  for (size_t i = 0; i < table.cos.size(); ++i) {
    ASSERT_NEAR(table.cos[i], want_cos[i], 6e-8) << i;
    ASSERT_NEAR(table.sin[i], want_sin[i], 6e-8) << i;
  }
  const auto& positions = fx.i32(c + ".positions");
  for (const std::string t : {"q", "k"}) {
    const std::string name = c + "." + t;
    const RopeShape s{dim(name, 0), dim(name, 1), dim(name, 2), dim(name, 3)};
    const auto& x = fx.f32(name);
    std::vector<float> y(x.size()), dx(x.size());
    rope_forward(y, x, table, positions, s);
    EXPECT_LT(scaled_max_diff(y, fx.f32(name + "_out")), kTol) << name;
    rope_backward(dx, fx.f32(c + ".d" + t + "_out"), table, positions, s);
    EXPECT_LT(scaled_max_diff(dx, fx.f32(c + ".d" + t)), kTol) << name;
  }
}

TEST(LlamaFixture, Rope) { check_rope("rope", RopeScaling::kNone); }
TEST(LlamaFixture, RopeLlama3) { check_rope("rope_llama3", RopeScaling::kLlama3); }

void check_gqa(const std::string& c) {
  const auto& fx = fixture();
  const GqaShape s{dim(c + ".q", 0), dim(c + ".q", 1), dim(c + ".q", 2), dim(c + ".k", 2), dim(c + ".q", 3)};
  std::vector<int32_t> starts;
  if (fx.has(c + ".record_ids")) starts = segment_starts(fx.i32(c + ".record_ids"), s.batch, s.seq);
  const auto& q = fx.f32(c + ".q");
  const auto& k = fx.f32(c + ".k");
  const auto& v = fx.f32(c + ".v");
  std::vector<float> out(q.size()), att(size_t(s.batch) * s.heads * s.seq * s.seq);
  gqa_attention_forward(out, att, q, k, v, starts, s);
  EXPECT_LT(scaled_max_diff(out, fx.f32(c + ".out")), kTol);
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size()), scratch(size_t(s.seq) * s.seq);
  gqa_attention_backward(dq, dk, dv, scratch, fx.f32(c + ".dout"), q, k, v, att, starts, s);
  EXPECT_LT(scaled_max_diff(dq, fx.f32(c + ".dq")), kTol);
  EXPECT_LT(scaled_max_diff(dk, fx.f32(c + ".dk")), kTol);
  EXPECT_LT(scaled_max_diff(dv, fx.f32(c + ".dv")), kTol);
}

TEST(LlamaFixture, GroupedQueryAttention) { check_gqa("gqa"); }
TEST(LlamaFixture, GroupedQueryAttentionWithinRecords) { check_gqa("gqa_seg"); }

TEST(LlamaFixture, SwiGlu) {
  const auto& fx = fixture();
  const auto& gate = fx.f32("swiglu.gate");
  const auto& up = fx.f32("swiglu.up");
  std::vector<float> out(gate.size()), dgate(gate.size()), dup(gate.size());
  swiglu_forward(out, gate, up);
  EXPECT_LT(scaled_max_diff(out, fx.f32("swiglu.out")), kTol);
  swiglu_backward(dgate, dup, fx.f32("swiglu.dout"), gate, up);
  EXPECT_LT(scaled_max_diff(dgate, fx.f32("swiglu.dgate")), kTol);
  EXPECT_LT(scaled_max_diff(dup, fx.f32("swiglu.dup")), kTol);
}

}  // namespace
}  // namespace zerodp::kernels
