// SPDX-License-Identifier: Apache-2.0
// Grouped-query causal self-attention (Llama family): Hq query heads share
// Hkv key/value heads, g = Hq / Hkv; kv head j serves query heads
// [j*g, (j+1)*g). Hq == Hkv is plain multi-head attention, Hkv == 1
// multi-query. Per (batch, query head h, kv head j = h / g):
//   att = softmax(mask(q_h k_j^T / sqrt(d)))   [T,T]
//   out_h = att v_j                             [T,d]
// The mask is causal, optionally restricted to segments: query t attends
// keys [seg_start[t], t], so that records packed into one row never see
// each other (segment_starts builds seg_start from per-token record ids).
//
// Layout: q[B,T,Hq,d], k and v [B,T,Hkv,d], out [B,T,Hq,d]: the row-major
// outputs of the q/k/v projections as they are ([B*T, H*d]), no transposes.
// A head is a [T,d] matrix of row stride H*d, which the GEMMs take as a
// strided view. (GPT-2's attention.h keeps its fused qkv[B,T,3C] layout.)
// Forward keeps att (the probabilities, zero outside the mask) for
// backward. Backward OVERWRITES dq, dk and dv; dk and dv are summed over
// the g query heads of their group in head order (fixed, so deterministic),
// and use scratch[T*T] for d(att).
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace zerodp::kernels {

struct GqaShape {
  int batch = 0;     // B
  int seq = 0;       // T
  int heads = 0;     // Hq
  int kv_heads = 0;  // Hkv, divides Hq
  int head_dim = 0;  // d
};

// out[B,T,Hq,d], att[B,Hq,T,T] <- q[B,T,Hq,d], k[B,T,Hkv,d], v[B,T,Hkv,d],
// seg_start[B*T] (each in [0, t]; empty: 0, plain causal)
void gqa_attention_forward(std::span<float> out, std::span<float> att, std::span<const float> q,
                           std::span<const float> k, std::span<const float> v, std::span<const int32_t> seg_start,
                           GqaShape s);

// dq[B,T,Hq,d] =, dk[B,T,Hkv,d] =, dv[B,T,Hkv,d] = <- dout[B,T,Hq,d], q, k, v,
// att[B,Hq,T,T], seg_start (as in forward); scratch[T*T]
void gqa_attention_backward(std::span<float> dq, std::span<float> dk, std::span<float> dv, std::span<float> scratch,
                            std::span<const float> dout, std::span<const float> q, std::span<const float> k,
                            std::span<const float> v, std::span<const float> att, std::span<const int32_t> seg_start,
                            GqaShape s);

// seg_start[B*T] from record ids [B*T]: a segment is a maximal run of equal
// ids within a row, so seg_start[t] is the first position of t's run.
std::vector<int32_t> segment_starts(std::span<const int32_t> record_ids, int batch, int seq);

// Positions that restart at 0 in every segment (t - seg_start[t]), for RoPE.
std::vector<int32_t> segment_positions(std::span<const int32_t> seg_start, int batch, int seq);

// FLOPs of the forward GEMMs as executed (full T x T products): 4 B T^2 Hq d.
double gqa_attention_flops(GqaShape s);

}  // namespace zerodp::kernels
