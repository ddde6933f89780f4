// SPDX-License-Identifier: Apache-2.0
// Finite-difference gradient checks for the Llama family's kernels (RMSNorm,
// RoPE with and without Llama 3 scaling, grouped-query attention with and
// without segments, SwiGLU), every input, odd shapes; and the properties
// the model code relies on: accumulate-or-overwrite as each header says,
// RoPE's rotation is orthogonal and in-place safe, GQA with g = 1 is GPT-2's
// attention, and segments make a packed row equal to its records run alone.
// Tolerances in gradcheck.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "core/error.h"
#include "gradcheck.h"
#include "kernels/attention.h"
#include "kernels/gqa_attention.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"

namespace zerodp::kernels::llama_gradcheck {
namespace {

using testing::expect_grad_ok;
using testing::grad_check;
using testing::random_vector;
using testing::weighted_sum;

TEST(LlamaGradCheck, RmsNorm) {
  const int N = 5, C = 19;
  const float eps = 1e-5f;
  auto inp = random_vector(size_t(N) * C, 1, -2.0f, 2.0f);
  auto w = random_vector(C, 2);
  auto r = random_vector(size_t(N) * C, 3);
  std::vector<float> out(inp.size()), rstd(N);
  auto f = [&] {
    rmsnorm_forward(out, rstd, inp, w, N, C, eps);
    return weighted_sum(out, r);
  };
  f();
  // rstd from the definition
  for (int i = 0; i < N; ++i) {
    double ss = 0;
    for (int k = 0; k < C; ++k) ss += double(inp[size_t(i) * C + k]) * inp[size_t(i) * C + k];
    EXPECT_NEAR(rstd[i], 1.0 / std::sqrt(ss / C + eps), 1e-6 * rstd[i]);
  }
  // Gradients start at 1: backward accumulates into both.
  std::vector<float> dinp(inp.size(), 1.0f), dw(C, 1.0f);
  rmsnorm_backward(dinp, dw, r, inp, w, rstd, N, C);
  for (auto* g : {&dinp, &dw}) {
    for (auto& v : *g) v -= 1.0f;
  }
  expect_grad_ok(grad_check(inp, dinp, f), "dinp");
  expect_grad_ok(grad_check(w, dw, f), "dweight");
  std::vector<float> bad_w(C + 1);
  EXPECT_THROW(rmsnorm_forward(out, rstd, inp, bad_w, N, C, eps), ShapeError);
}

RopeConfig llama3_config(int head_dim) {
  RopeConfig c;
  c.head_dim = head_dim;
  c.theta = 10000.0;
  c.scaling = RopeScaling::kLlama3;
  c.factor = 8.0;
  c.low_freq_factor = 1.0;
  c.high_freq_factor = 4.0;
  c.original_max_position = 64.0;  // small, so all three bands occur at d = 16
  return c;
}

TEST(LlamaGradCheck, RopeInvFreqAndLlama3Bands) {
  RopeConfig plain;
  plain.head_dim = 16;
  plain.theta = 10000.0;
  const std::vector<double> base = rope_inv_freq(plain);
  ASSERT_EQ(base.size(), 8u);
  for (int j = 0; j < 8; ++j) EXPECT_DOUBLE_EQ(base[j], std::pow(10000.0, -j / 8.0));
  const std::vector<double> scaled = rope_inv_freq(llama3_config(16));
  int kept = 0, divided = 0, smoothed = 0;
  for (int j = 0; j < 8; ++j) {
    const double wavelen = 2 * std::numbers::pi / base[j];
    if (wavelen < 64.0 / 4.0) {
      EXPECT_EQ(scaled[j], base[j]) << j;
      ++kept;
    } else if (wavelen > 64.0) {
      EXPECT_DOUBLE_EQ(scaled[j], base[j] / 8.0) << j;
      ++divided;
    } else {
      const double s = (64.0 / wavelen - 1.0) / 3.0;
      EXPECT_DOUBLE_EQ(scaled[j], (1 - s) * base[j] / 8.0 + s * base[j]) << j;
      EXPECT_LT(scaled[j], base[j]);
      EXPECT_GT(scaled[j], base[j] / 8.0);
      ++smoothed;
    }
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(smoothed, 0);
  RopeConfig odd = plain;
  odd.head_dim = 7;
  EXPECT_THROW(rope_inv_freq(odd), ShapeError);
}

void check_rope(const RopeConfig& config, bool with_positions) {
  const RopeShape s{2, 5, 3, config.head_dim};
  const RopeTable table = make_rope_table(config, 40);
  std::vector<int32_t> positions;
  if (with_positions) positions = {0, 1, 2, 0, 1, 7, 19, 39, 3, 3};
  auto x = random_vector(size_t(s.batch) * s.seq * s.heads * s.head_dim, 1);
  auto r = random_vector(x.size(), 2);
  std::vector<float> out(x.size());
  auto f = [&] {
    rope_forward(out, x, table, positions, s);
    return weighted_sum(out, r);
  };
  f();
  // A rotation keeps each (i, i + d/2) pair's length.
  const int half = s.head_dim / 2;
  for (size_t hd = 0; hd < x.size(); hd += s.head_dim) {
    for (int i = 0; i < half; ++i) {
      const double before = std::hypot(double(x[hd + i]), double(x[hd + i + half]));
      const double after = std::hypot(double(out[hd + i]), double(out[hd + i + half]));
      EXPECT_NEAR(after, before, 1e-6);
    }
  }
  std::vector<float> dx(x.size(), 9.0f);  // overwritten
  rope_backward(dx, r, table, positions, s);
  expect_grad_ok(grad_check(x, dx, f, 120), "dinp");
  // Backward undoes forward (the transpose of a rotation is its inverse),
  // and both work in place.
  f();
  std::vector<float> y = x;
  rope_forward(y, y, table, positions, s);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], out[i]) << i;
  rope_backward(y, y, table, positions, s);
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], x[i], 1e-6) << i;
}

TEST(LlamaGradCheck, Rope) {
  RopeConfig c;
  c.head_dim = 6;
  c.theta = 10000.0;
  check_rope(c, false);
  check_rope(c, true);
}

TEST(LlamaGradCheck, RopeLlama3) { check_rope(llama3_config(16), true); }

TEST(LlamaGradCheck, RopePositionZeroIsIdentityAndRejectsOutOfRange) {
  RopeConfig c;
  c.head_dim = 4;
  const RopeTable table = make_rope_table(c, 8);
  const RopeShape s{1, 2, 1, 4};
  const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> y(8);
  std::vector<int32_t> pos{0, 0};
  rope_forward(y, x, table, pos, s);
  EXPECT_EQ(y, x);
  // position 1, j = 0: angle 1 rad on the pair (5, 7)
  pos = {0, 1};
  rope_forward(y, x, table, pos, s);
  EXPECT_NEAR(y[4], 5 * std::cos(1.0) - 7 * std::sin(1.0), 1e-6);
  EXPECT_NEAR(y[6], 7 * std::cos(1.0) + 5 * std::sin(1.0), 1e-6);
  pos = {0, 8};
  EXPECT_THROW(rope_forward(y, x, table, pos, s), ShapeError);
  const RopeShape wrong_d{1, 2, 1, 6};
  std::vector<float> x6(12), y6(12);
  EXPECT_THROW(rope_forward(y6, x6, table, {}, wrong_d), ShapeError);
}

struct GqaData {
  GqaShape s;
  std::vector<float> q, k, v, r, out, att;
  GqaData(GqaShape shape, uint32_t seed) : s(shape) {
    const size_t bt = size_t(s.batch) * s.seq;
    q = random_vector(bt * s.heads * s.head_dim, seed, -1.5f, 1.5f);
    k = random_vector(bt * s.kv_heads * s.head_dim, seed + 1, -1.5f, 1.5f);
    v = random_vector(bt * s.kv_heads * s.head_dim, seed + 2);
    r = random_vector(bt * s.heads * s.head_dim, seed + 3);
    out.resize(r.size());
    att.resize(size_t(s.batch) * s.heads * s.seq * s.seq);
  }
};

void check_gqa(GqaShape shape, const std::vector<int32_t>& seg_start) {
  GqaData g(shape, 11);
  const GqaShape s = g.s;
  auto f = [&] {
    gqa_attention_forward(g.out, g.att, g.q, g.k, g.v, seg_start, s);
    return weighted_sum(g.out, g.r);
  };
  f();
  // Each row is a distribution over exactly its keys [start, t].
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < s.heads; ++h) {
      for (int t = 0; t < s.seq; ++t) {
        const int lo = seg_start.empty() ? 0 : seg_start[size_t(b) * s.seq + t];
        const float* row = g.att.data() + ((size_t(b) * s.heads + h) * s.seq + t) * s.seq;
        double sum = 0;
        for (int j = 0; j < s.seq; ++j) {
          if (j < lo || j > t) {
            EXPECT_EQ(row[j], 0.0f);
          } else {
            EXPECT_GT(row[j], 0.0f);
          }
          sum += row[j];
        }
        EXPECT_NEAR(sum, 1.0, 1e-6);
      }
    }
  }
  std::vector<float> dq(g.q.size(), 3.0f), dk(g.k.size(), 3.0f), dv(g.v.size(), 3.0f);  // overwritten
  std::vector<float> scratch(size_t(s.seq) * s.seq);
  gqa_attention_backward(dq, dk, dv, scratch, g.r, g.q, g.k, g.v, g.att, seg_start, s);
  expect_grad_ok(grad_check(g.q, dq, f, 150), "dq");
  expect_grad_ok(grad_check(g.k, dk, f, 150), "dk");
  expect_grad_ok(grad_check(g.v, dv, f, 150), "dv");
}

TEST(LlamaGradCheck, GqaGroupsOfThree) { check_gqa({2, 7, 6, 2, 5}, {}); }
TEST(LlamaGradCheck, GqaMultiQuery) { check_gqa({1, 9, 4, 1, 3}, {}); }
TEST(LlamaGradCheck, GqaOneHeadPerGroup) { check_gqa({2, 5, 3, 3, 4}, {}); }

TEST(LlamaGradCheck, GqaSegments) {
  // Row 0: records of 3, 1 and 5 tokens; row 1: one record of 9.
  const std::vector<int32_t> ids{7, 7, 7, 2, 5, 5, 5, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const std::vector<int32_t> starts = segment_starts(ids, 2, 9);
  const std::vector<int32_t> want{0, 0, 0, 3, 4, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(starts, want);
  const std::vector<int32_t> pos = segment_positions(starts, 2, 9);
  const std::vector<int32_t> want_pos{0, 1, 2, 0, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(pos, want_pos);
  check_gqa({2, 9, 4, 2, 3}, starts);
  std::vector<int32_t> bad = starts;
  bad[2] = 3;  // past its own position
  GqaData g({2, 9, 4, 2, 3}, 1);
  EXPECT_THROW(gqa_attention_forward(g.out, g.att, g.q, g.k, g.v, bad, g.s), ShapeError);
}

// A packed row gives each record what the record alone gives, values and
// gradients: the records never see each other.
TEST(LlamaGradCheck, GqaSegmentsEqualRecordsRunAlone) {
  const int T = 8, Hq = 4, Hkv = 2, d = 3;
  const std::vector<int32_t> ids{0, 0, 0, 1, 1, 1, 1, 1};
  const std::vector<int32_t> starts = segment_starts(ids, 1, T);
  GqaData packed({1, T, Hq, Hkv, d}, 5);
  gqa_attention_forward(packed.out, packed.att, packed.q, packed.k, packed.v, starts, packed.s);
  std::vector<float> dq(packed.q.size()), dk(packed.k.size()), dv(packed.v.size()), scratch(T * T);
  gqa_attention_backward(dq, dk, dv, scratch, packed.r, packed.q, packed.k, packed.v, packed.att, starts, packed.s);
  for (const auto& record : {std::pair{0, 3}, std::pair{3, 5}}) {
    const int lo = record.first, n = record.second;  // first position, length
    const GqaShape s{1, n, Hq, Hkv, d};
    auto slice = [&](const std::vector<float>& x, int heads) {
      return std::vector<float>(x.begin() + size_t(lo) * heads * d, x.begin() + size_t(lo + n) * heads * d);
    };
    const auto q = slice(packed.q, Hq), k = slice(packed.k, Hkv), v = slice(packed.v, Hkv), r = slice(packed.r, Hq);
    std::vector<float> out(q.size()), att(size_t(Hq) * n * n);
    gqa_attention_forward(out, att, q, k, v, {}, s);
    std::vector<float> sdq(q.size()), sdk(k.size()), sdv(v.size()), sscratch(size_t(n) * n);
    gqa_attention_backward(sdq, sdk, sdv, sscratch, r, q, k, v, att, {}, s);
    const auto pout = slice(packed.out, Hq), pdq = slice(dq, Hq), pdk = slice(dk, Hkv), pdv = slice(dv, Hkv);
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(pout[i], out[i], 1e-6) << i;
    for (size_t i = 0; i < sdq.size(); ++i) EXPECT_NEAR(pdq[i], sdq[i], 1e-6) << i;
    for (size_t i = 0; i < sdk.size(); ++i) EXPECT_NEAR(pdk[i], sdk[i], 1e-6) << i;
    for (size_t i = 0; i < sdv.size(); ++i) EXPECT_NEAR(pdv[i], sdv[i], 1e-6) << i;
  }
}

// With Hq == Hkv the kernel is GPT-2's attention on unfused q, k, v.
TEST(LlamaGradCheck, GqaWithOneHeadPerGroupIsGpt2Attention) {
  const int B = 2, T = 6, NH = 3, hs = 4, C = NH * hs;
  const AttentionShape as{B, T, C, NH};
  auto qkv = random_vector(size_t(B) * T * 3 * C, 3);
  auto dout = random_vector(size_t(B) * T * C, 4);
  std::vector<float> out(dout.size()), att(size_t(B) * NH * T * T), dqkv(qkv.size()), scratch(T * T);
  attention_forward(out, att, qkv, as);
  attention_backward(dqkv, scratch, dout, qkv, att, as);
  std::vector<float> q(dout.size()), k(dout.size()), v(dout.size());
  for (size_t bt = 0; bt < size_t(B) * T; ++bt) {
    for (int c = 0; c < C; ++c) {
      q[bt * C + c] = qkv[bt * 3 * C + c];
      k[bt * C + c] = qkv[bt * 3 * C + C + c];
      v[bt * C + c] = qkv[bt * 3 * C + 2 * C + c];
    }
  }
  const GqaShape gs{B, T, NH, NH, hs};
  std::vector<float> gout(out.size()), gatt(att.size()), dq(q.size()), dk(k.size()), dv(v.size());
  gqa_attention_forward(gout, gatt, q, k, v, {}, gs);
  gqa_attention_backward(dq, dk, dv, scratch, dout, q, k, v, gatt, {}, gs);
  EXPECT_EQ(gout, out);
  EXPECT_EQ(gatt, att);
  for (size_t bt = 0; bt < size_t(B) * T; ++bt) {
    for (int c = 0; c < C; ++c) {
      ASSERT_EQ(dq[bt * C + c], dqkv[bt * 3 * C + c]);
      ASSERT_EQ(dk[bt * C + c], dqkv[bt * 3 * C + C + c]);
      ASSERT_EQ(dv[bt * C + c], dqkv[bt * 3 * C + 2 * C + c]);
    }
  }
  const GqaShape uneven{B, T, 3, 2, hs};
  std::vector<float> k2(size_t(B) * T * 2 * hs), v2(k2.size());
  EXPECT_THROW(gqa_attention_forward(gout, gatt, q, k2, v2, {}, uneven), ShapeError);
}

TEST(LlamaGradCheck, SwiGlu) {
  auto gate = random_vector(101, 1, -6.0f, 6.0f);
  auto up = random_vector(101, 2, -2.0f, 2.0f);
  auto r = random_vector(101, 3);
  std::vector<float> out(gate.size());
  auto f = [&] {
    swiglu_forward(out, gate, up);
    return weighted_sum(out, r);
  };
  f();
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gate[i];
    EXPECT_NEAR(out[i], g / (1 + std::exp(-g)) * up[i], 1e-6 * (1 + std::abs(out[i])));
  }
  std::vector<float> dgate(gate.size(), 7.0f), dup(up.size(), 7.0f);  // overwritten
  swiglu_backward(dgate, dup, r, gate, up);
  expect_grad_ok(grad_check(gate, dgate, f, 101), "dgate");
  expect_grad_ok(grad_check(up, dup, f, 101), "dup");
  std::vector<float> short_up(100);
  EXPECT_THROW(swiglu_forward(out, gate, short_up), ShapeError);
}

}  // namespace
}  // namespace zerodp::kernels::llama_gradcheck
