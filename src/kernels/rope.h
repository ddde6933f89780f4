// SPDX-License-Identifier: Apache-2.0
// Rotary position embedding (RoPE) in Hugging Face's half-split layout (not
// Meta's interleaved pairs): within each head of dimension d, element i < d/2
// is rotated together with element i + d/2 by the angle pos * inv_freq[i]:
//   out = x * cos + rotate_half(x) * sin,  rotate_half(x) = (-x[d/2:], x[:d/2])
//   out[i]       = x[i] cos - x[i+d/2] sin
//   out[i+d/2]   = x[i+d/2] cos + x[i] sin
// inv_freq[j] = theta^(-2j/d), j < d/2, optionally rescaled by Llama 3's
// rope_scaling (rope_type "llama3"; rope_inv_freq documents the rule).
//
// The cos/sin table is computed once per model in double (inv_freq, the
// angle pos * inv_freq, cos and sin) and rounded once to fp32. Hugging Face
// computes the angle in fp32, so its table differs from this one by the
// fp32 rounding of the angle: about pos * 6e-8 rad (1e-6 at position 16,
// 5e-4 at 8192); ours is the correctly rounded value of the exact rotation.
//
// Layout: x[B,T,H,d], the row-major output of a linear projection
// ([B*T, H*d]) with no transpose, which is what gqa_attention.h takes, for q
// (H = Hq) and k (H = Hkv) alike. Positions are per token ([B*T] int32,
// e.g. restarting at 0 for each record of a packed row), or t when empty.
// Forward and backward may work in place (out == inp exactly); backward
// OVERWRITES dinp. Backward is the transpose rotation (angle -pos*inv_freq).
// Thread-safety: pure functions of their arguments; a RopeTable is
// immutable after make_rope_table.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace zerodp::kernels {

enum class RopeScaling { kNone, kLlama3 };

struct RopeConfig {
  int head_dim = 0;        // d, even
  double theta = 10000.0;  // rope_theta
  RopeScaling scaling = RopeScaling::kNone;
  // rope_scaling {"rope_type": "llama3", ...}; read only for kLlama3
  double factor = 8.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position = 8192.0;  // original_max_position_embeddings
};

// inv_freq[d/2] in double. For kLlama3, with wavelen = 2 pi / inv_freq,
// lo = original_max_position / low_freq_factor and
// hi = original_max_position / high_freq_factor:
//   wavelen < hi:   unchanged (high frequencies)
//   wavelen > lo:   inv_freq / factor (low frequencies)
//   otherwise:      (1 - s) inv_freq / factor + s inv_freq,
//                   s = (original_max_position / wavelen - low_freq_factor)
//                       / (high_freq_factor - low_freq_factor)
std::vector<double> rope_inv_freq(const RopeConfig& config);

struct RopeTable {
  int max_positions = 0;   // P: positions 0..P-1
  int half = 0;            // d/2
  std::vector<float> cos;  // [P, d/2]: cos(pos * inv_freq[j]), rounded once from double
  std::vector<float> sin;  // [P, d/2]
};

RopeTable make_rope_table(const RopeConfig& config, int max_positions);

struct RopeShape {
  int batch = 0;     // B
  int seq = 0;       // T
  int heads = 0;     // H
  int head_dim = 0;  // d (the table's 2 * half)
};

// out[B,T,H,d] <- inp[B,T,H,d], positions[B*T] (or empty: position t)
void rope_forward(std::span<float> out, std::span<const float> inp, const RopeTable& table,
                  std::span<const int32_t> positions, RopeShape s);

// dinp[B,T,H,d] = <- dout[B,T,H,d], positions[B*T] (or empty)
void rope_backward(std::span<float> dinp, std::span<const float> dout, const RopeTable& table,
                   std::span<const int32_t> positions, RopeShape s);

}  // namespace zerodp::kernels
