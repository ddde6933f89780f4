// SPDX-License-Identifier: Apache-2.0
#include "kernels/attention.h"

#include <cmath>
#include <cstddef>

#include "core/error.h"
#include "kernels/compute.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const float> qkv, std::span<const float> att, AttentionShape s) {
  ZDP_CHECK(s.batch >= 0 && s.seq > 0 && s.channels > 0 && s.heads > 0 && s.channels % s.heads == 0, ShapeError,
            "[attention] bad shape B={} T={} C={} NH={} (C must divide by NH)", s.batch, s.seq, s.channels, s.heads);
  ZDP_CHECK_EQ(qkv.size(), size_t(s.batch) * s.seq * 3 * s.channels, ShapeError, "[attention] qkv size");
  ZDP_CHECK_EQ(att.size(), size_t(s.batch) * s.heads * s.seq * s.seq, ShapeError, "[attention] att size");
}

}  // namespace

void attention_forward(std::span<float> out, std::span<float> att, std::span<const float> qkv, AttentionShape s) {
  check(qkv, att, s);
  ZDP_CHECK_EQ(out.size(), size_t(s.batch) * s.seq * s.channels, ShapeError, "[attention] output size");
  const int T = s.seq, C = s.channels, NH = s.heads, hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  for (int b = 0; b < s.batch; ++b) {
    const float* qkv_b = qkv.data() + size_t(b) * T * C3;  // [T,3C]
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv_b + size_t(h) * hs;                  // [T,hs], row stride 3C
      const float* k = qkv_b + C + size_t(h) * hs;              // [T,hs], row stride 3C
      const float* v = qkv_b + size_t(2) * C + size_t(h) * hs;  // [T,hs], row stride 3C
      float* a = att.data() + (size_t(b) * NH + h) * T * T;     // [T,T]
      // a = scale * q @ k^T (the upper triangle is computed and then masked)
      matmul(Trans::kNo, Trans::kYes, T, T, hs, scale, q, C3, k, C3, 0.0f, a, T);
      for (int t = 0; t < T; ++t) {
        float* row = a + size_t(t) * T;
        const int n = t + 1;  // causal: keys 0..t
        const float m = detail::lane_max(row, n);
        const float inv = 1.0f / detail::exp_sum_inplace(row, n, m);
        for (int j = 0; j < n; ++j) row[j] *= inv;
        for (int j = n; j < T; ++j) row[j] = 0.0f;
      }
      // out[b, :, h*hs:(h+1)*hs] = a @ v
      matmul(Trans::kNo, Trans::kNo, T, hs, T, 1.0f, a, T, v, C3, 0.0f, out.data() + size_t(b) * T * C + size_t(h) * hs,
             C);
    }
  }
}

void attention_backward(std::span<float> dqkv, std::span<float> scratch, std::span<const float> dout,
                        std::span<const float> qkv, std::span<const float> att, AttentionShape s) {
  check(qkv, att, s);
  ZDP_CHECK_EQ(dqkv.size(), qkv.size(), ShapeError, "[attention] qkv gradient size");
  ZDP_CHECK_EQ(dout.size(), size_t(s.batch) * s.seq * s.channels, ShapeError, "[attention] output gradient size");
  ZDP_CHECK_EQ(scratch.size(), size_t(s.seq) * s.seq, ShapeError, "[attention] scratch size");
  const int T = s.seq, C = s.channels, NH = s.heads, hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  float* da = scratch.data();  // [T,T]: d(att), then d(pre-softmax scores)
  for (int b = 0; b < s.batch; ++b) {
    const float* qkv_b = qkv.data() + size_t(b) * T * C3;
    float* dqkv_b = dqkv.data() + size_t(b) * T * C3;
    for (int h = 0; h < NH; ++h) {
      const float* q = qkv_b + size_t(h) * hs;
      const float* k = qkv_b + C + size_t(h) * hs;
      const float* v = qkv_b + size_t(2) * C + size_t(h) * hs;
      float* dq = dqkv_b + size_t(h) * hs;
      float* dk = dqkv_b + C + size_t(h) * hs;
      float* dv = dqkv_b + size_t(2) * C + size_t(h) * hs;
      const float* a = att.data() + (size_t(b) * NH + h) * T * T;          // [T,T]
      const float* dy = dout.data() + size_t(b) * T * C + size_t(h) * hs;  // [T,hs], stride C
      // d(att) = dy @ v^T ; dv = att^T @ dy
      matmul(Trans::kNo, Trans::kYes, T, T, hs, 1.0f, dy, C, v, C3, 0.0f, da, T);
      matmul(Trans::kYes, Trans::kNo, T, hs, T, 1.0f, a, T, dy, C, 0.0f, dv, C3);
      // softmax backward per row: ds_j = a_j (da_j - sum_k a_k da_k), j <= t
      for (int t = 0; t < T; ++t) {
        const float* arow = a + size_t(t) * T;
        float* drow = da + size_t(t) * T;
        const int n = t + 1;
        const float dot = detail::lane_dot(arow, drow, n);
        for (int j = 0; j < n; ++j) drow[j] = arow[j] * (drow[j] - dot);
        for (int j = n; j < T; ++j) drow[j] = 0.0f;
      }
      // scores = scale q k^T: dq = scale ds @ k ; dk = scale ds^T @ q
      matmul(Trans::kNo, Trans::kNo, T, hs, T, scale, da, T, k, C3, 0.0f, dq, C3);
      matmul(Trans::kYes, Trans::kNo, T, hs, T, scale, da, T, q, C3, 0.0f, dk, C3);
    }
  }
}

double attention_flops(AttentionShape s) { return 4.0 * s.batch * double(s.seq) * s.seq * s.channels; }

}  // namespace zerodp::kernels
