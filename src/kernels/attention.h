// SPDX-License-Identifier: Apache-2.0
// Causal multi-head self-attention on a fused qkv tensor (GPT-2 layout):
// qkv[B,T,3C] holds q, k and v side by side; head h uses channels
// [h*hs, (h+1)*hs) of each, hs = C / NH. Per (batch, head):
//   att = softmax(mask(q k^T / sqrt(hs)))   [T,T], zero above the diagonal
//   out = att v                             [T,hs] -> out[B,T,C]
// The products are GEMMs on strided views (no packing copies). Forward keeps
// att (the probabilities) for backward. Backward OVERWRITES dqkv and uses
// scratch[T*T] for d(att).
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>

namespace zerodp::kernels {

struct AttentionShape {
  int batch = 0;     // B
  int seq = 0;       // T
  int channels = 0;  // C
  int heads = 0;     // NH
};

// out[B,T,C], att[B,NH,T,T] <- qkv[B,T,3C]
void attention_forward(std::span<float> out, std::span<float> att, std::span<const float> qkv, AttentionShape s);

// dqkv[B,T,3C] = <- dout[B,T,C], qkv[B,T,3C], att[B,NH,T,T]; scratch[T*T]
void attention_backward(std::span<float> dqkv, std::span<float> scratch, std::span<const float> dout,
                        std::span<const float> qkv, std::span<const float> att, AttentionShape s);

// FLOPs of the forward GEMMs as executed (full T x T products): 4 B T^2 C.
double attention_flops(AttentionShape s);

}  // namespace zerodp::kernels
