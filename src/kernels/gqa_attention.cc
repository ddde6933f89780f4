// SPDX-License-Identifier: Apache-2.0
#include "kernels/gqa_attention.h"

#include <cmath>
#include <cstddef>

#include "core/error.h"
#include "kernels/compute.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const float> q, std::span<const float> k, std::span<const float> v, std::span<const float> att,
           std::span<const int32_t> seg_start, GqaShape s) {
  ZDP_CHECK(s.batch >= 0 && s.seq > 0 && s.heads > 0 && s.kv_heads > 0 && s.head_dim > 0 && s.heads % s.kv_heads == 0,
            ShapeError, "[gqa_attention] bad shape B={} T={} Hq={} Hkv={} d={} (Hkv must divide Hq)", s.batch, s.seq,
            s.heads, s.kv_heads, s.head_dim);
  const size_t bt = size_t(s.batch) * s.seq;
  ZDP_CHECK_EQ(q.size(), bt * s.heads * s.head_dim, ShapeError, "[gqa_attention] q size");
  ZDP_CHECK_EQ(k.size(), bt * s.kv_heads * s.head_dim, ShapeError, "[gqa_attention] k size");
  ZDP_CHECK_EQ(v.size(), bt * s.kv_heads * s.head_dim, ShapeError, "[gqa_attention] v size");
  ZDP_CHECK_EQ(att.size(), size_t(s.batch) * s.heads * s.seq * s.seq, ShapeError, "[gqa_attention] att size");
  ZDP_CHECK(seg_start.empty() || seg_start.size() == bt, ShapeError,
            "[gqa_attention] {} segment starts for B*T = {} tokens", seg_start.size(), bt);
  for (size_t i = 0; i < seg_start.size(); ++i) {
    const int t = static_cast<int>(i % s.seq);
    ZDP_CHECK(seg_start[i] >= 0 && seg_start[i] <= t, ShapeError,
              "[gqa_attention] segment start {} of token {} is outside [0, {}]", seg_start[i], i, t);
  }
}

// First key of row t of batch b.
int first_key(std::span<const int32_t> seg_start, int b, int t, int T) {
  return seg_start.empty() ? 0 : seg_start[size_t(b) * T + t];
}

}  // namespace

void gqa_attention_forward(std::span<float> out, std::span<float> att, std::span<const float> q,
                           std::span<const float> k, std::span<const float> v, std::span<const int32_t> seg_start,
                           GqaShape s) {
  check(q, k, v, att, seg_start, s);
  ZDP_CHECK_EQ(out.size(), q.size(), ShapeError, "[gqa_attention] output size");
  const int T = s.seq, Hq = s.heads, Hkv = s.kv_heads, d = s.head_dim, g = Hq / Hkv;
  const int ldq = Hq * d, ldk = Hkv * d;  // row strides of a head's [T,d] view
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  for (int b = 0; b < s.batch; ++b) {
    for (int h = 0; h < Hq; ++h) {
      const int j = h / g;
      const float* qh = q.data() + size_t(b) * T * ldq + size_t(h) * d;  // [T,d], stride Hq*d
      const float* kj = k.data() + size_t(b) * T * ldk + size_t(j) * d;  // [T,d], stride Hkv*d
      const float* vj = v.data() + size_t(b) * T * ldk + size_t(j) * d;  // [T,d], stride Hkv*d
      float* a = att.data() + (size_t(b) * Hq + h) * T * T;              // [T,T]
      // a = scale * q_h @ k_j^T (then masked: keys outside [start, t] get 0)
      matmul(Trans::kNo, Trans::kYes, T, T, d, scale, qh, ldq, kj, ldk, 0.0f, a, T);
      for (int t = 0; t < T; ++t) {
        float* row = a + size_t(t) * T;
        const int lo = first_key(seg_start, b, t, T);
        const int n = t + 1 - lo;
        const float m = detail::lane_max(row + lo, n);
        const float inv = 1.0f / detail::exp_sum_inplace(row + lo, n, m);
        for (int i = 0; i < lo; ++i) row[i] = 0.0f;
        for (int i = lo; i <= t; ++i) row[i] *= inv;
        for (int i = t + 1; i < T; ++i) row[i] = 0.0f;
      }
      // out_h = a @ v_j
      matmul(Trans::kNo, Trans::kNo, T, d, T, 1.0f, a, T, vj, ldk, 0.0f,
             out.data() + size_t(b) * T * ldq + size_t(h) * d, ldq);
    }
  }
}

void gqa_attention_backward(std::span<float> dq, std::span<float> dk, std::span<float> dv, std::span<float> scratch,
                            std::span<const float> dout, std::span<const float> q, std::span<const float> k,
                            std::span<const float> v, std::span<const float> att, std::span<const int32_t> seg_start,
                            GqaShape s) {
  check(q, k, v, att, seg_start, s);
  ZDP_CHECK_EQ(dq.size(), q.size(), ShapeError, "[gqa_attention] q gradient size");
  ZDP_CHECK_EQ(dk.size(), k.size(), ShapeError, "[gqa_attention] k gradient size");
  ZDP_CHECK_EQ(dv.size(), v.size(), ShapeError, "[gqa_attention] v gradient size");
  ZDP_CHECK_EQ(dout.size(), q.size(), ShapeError, "[gqa_attention] output gradient size");
  ZDP_CHECK_EQ(scratch.size(), size_t(s.seq) * s.seq, ShapeError, "[gqa_attention] scratch size");
  const int T = s.seq, Hq = s.heads, Hkv = s.kv_heads, d = s.head_dim, g = Hq / Hkv;
  const int ldq = Hq * d, ldk = Hkv * d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  float* da = scratch.data();  // [T,T]: d(att), then d(pre-softmax scores)
  for (int b = 0; b < s.batch; ++b) {
    for (int j = 0; j < Hkv; ++j) {
      const float* kj = k.data() + size_t(b) * T * ldk + size_t(j) * d;
      const float* vj = v.data() + size_t(b) * T * ldk + size_t(j) * d;
      float* dkj = dk.data() + size_t(b) * T * ldk + size_t(j) * d;
      float* dvj = dv.data() + size_t(b) * T * ldk + size_t(j) * d;
      for (int r = 0; r < g; ++r) {
        const int h = j * g + r;
        const float beta = r == 0 ? 0.0f : 1.0f;  // the group's first head overwrites, the rest add
        const float* qh = q.data() + size_t(b) * T * ldq + size_t(h) * d;
        float* dqh = dq.data() + size_t(b) * T * ldq + size_t(h) * d;
        const float* dy = dout.data() + size_t(b) * T * ldq + size_t(h) * d;  // [T,d], stride Hq*d
        const float* a = att.data() + (size_t(b) * Hq + h) * T * T;           // [T,T]
        // d(att) = dy @ v_j^T ; dv_j += att^T @ dy
        matmul(Trans::kNo, Trans::kYes, T, T, d, 1.0f, dy, ldq, vj, ldk, 0.0f, da, T);
        matmul(Trans::kYes, Trans::kNo, T, d, T, 1.0f, a, T, dy, ldq, beta, dvj, ldk);
        // softmax backward per row over its keys [lo, t]: ds = a (da - sum a da)
        for (int t = 0; t < T; ++t) {
          const float* arow = a + size_t(t) * T;
          float* drow = da + size_t(t) * T;
          const int lo = first_key(seg_start, b, t, T);
          const float dot = detail::lane_dot(arow + lo, drow + lo, t + 1 - lo);
          for (int i = 0; i < lo; ++i) drow[i] = 0.0f;
          for (int i = lo; i <= t; ++i) drow[i] = arow[i] * (drow[i] - dot);
          for (int i = t + 1; i < T; ++i) drow[i] = 0.0f;
        }
        // scores = scale q_h k_j^T: dq_h = scale ds @ k_j ; dk_j += scale ds^T @ q_h
        matmul(Trans::kNo, Trans::kNo, T, d, T, scale, da, T, kj, ldk, 0.0f, dqh, ldq);
        matmul(Trans::kYes, Trans::kNo, T, d, T, scale, da, T, qh, ldq, beta, dkj, ldk);
      }
    }
  }
}

std::vector<int32_t> segment_starts(std::span<const int32_t> record_ids, int batch, int seq) {
  ZDP_CHECK(batch >= 0 && seq > 0, ShapeError, "[segment_starts] bad shape B={} T={}", batch, seq);
  ZDP_CHECK_EQ(record_ids.size(), size_t(batch) * seq, ShapeError, "[segment_starts] record id count");
  std::vector<int32_t> start(record_ids.size());
  for (size_t b = 0; b < size_t(batch); ++b) {
    const int32_t* id = record_ids.data() + b * seq;
    int32_t* st = start.data() + b * seq;
    st[0] = 0;
    for (int t = 1; t < seq; ++t) st[t] = id[t] == id[t - 1] ? st[t - 1] : t;
  }
  return start;
}

std::vector<int32_t> segment_positions(std::span<const int32_t> seg_start, int batch, int seq) {
  ZDP_CHECK(batch >= 0 && seq > 0, ShapeError, "[segment_positions] bad shape B={} T={}", batch, seq);
  ZDP_CHECK_EQ(seg_start.size(), size_t(batch) * seq, ShapeError, "[segment_positions] segment start count");
  std::vector<int32_t> pos(seg_start.size());
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i % seq) - seg_start[i];
  return pos;
}

double gqa_attention_flops(GqaShape s) { return 4.0 * s.batch * double(s.seq) * s.seq * s.heads * s.head_dim; }

}  // namespace zerodp::kernels
