// SPDX-License-Identifier: Apache-2.0
#include "kernels/rope.h"

#include <cmath>
#include <cstddef>
#include <numbers>

#include "core/error.h"

namespace zerodp::kernels {
namespace {

void check_config(const RopeConfig& c) {
  ZDP_CHECK(c.head_dim > 0 && c.head_dim % 2 == 0, ShapeError, "[rope] head dim {} is not a positive even number",
            c.head_dim);
  ZDP_CHECK(c.theta > 0.0, ShapeError, "[rope] theta {} is not positive", c.theta);
  if (c.scaling == RopeScaling::kLlama3) {
    ZDP_CHECK(c.factor > 0.0, ShapeError, "[rope] llama3 factor {} is not positive", c.factor);
    ZDP_CHECK(c.low_freq_factor > 0.0 && c.high_freq_factor > c.low_freq_factor, ShapeError,
              "[rope] llama3 needs 0 < low_freq_factor < high_freq_factor, got {} and {}", c.low_freq_factor,
              c.high_freq_factor);
    ZDP_CHECK(c.original_max_position > 0.0, ShapeError, "[rope] llama3 original_max_position_embeddings {}",
              c.original_max_position);
  }
}

// The rotation by +angle (forward) or -angle (backward) of every head's
// (i, i + d/2) pairs; reads both before writing, so out may be inp.
template <bool kTranspose>
void rotate(std::span<float> out, std::span<const float> inp, const RopeTable& table,
            std::span<const int32_t> positions, RopeShape s) {
  ZDP_CHECK(s.batch >= 0 && s.seq > 0 && s.heads > 0 && s.head_dim == 2 * table.half && table.half > 0, ShapeError,
            "[rope] bad shape B={} T={} H={} d={} for a table of d/2 = {}", s.batch, s.seq, s.heads, s.head_dim,
            table.half);
  const size_t n = size_t(s.batch) * s.seq * s.heads * s.head_dim;
  ZDP_CHECK_EQ(inp.size(), n, ShapeError, "[rope] input size");
  ZDP_CHECK_EQ(out.size(), n, ShapeError, "[rope] output size");
  ZDP_CHECK(positions.empty() || positions.size() == size_t(s.batch) * s.seq, ShapeError,
            "[rope] {} positions for B*T = {} tokens", positions.size(), size_t(s.batch) * s.seq);
  ZDP_CHECK(!positions.empty() || s.seq <= table.max_positions, ShapeError,
            "[rope] sequence length {} exceeds the table's {} positions", s.seq, table.max_positions);
  const size_t half = table.half;
  const size_t d = s.head_dim;
  for (size_t bt = 0; bt < size_t(s.batch) * s.seq; ++bt) {
    const int32_t pos = positions.empty() ? static_cast<int32_t>(bt % s.seq) : positions[bt];
    ZDP_CHECK(pos >= 0 && pos < table.max_positions, ShapeError, "[rope] position {} of token {} is outside [0, {})",
              pos, bt, table.max_positions);
    const float* c = table.cos.data() + size_t(pos) * half;   // [d/2]
    const float* sn = table.sin.data() + size_t(pos) * half;  // [d/2]
    for (int h = 0; h < s.heads; ++h) {
      const float* x = inp.data() + (bt * s.heads + h) * d;  // [d]
      float* y = out.data() + (bt * s.heads + h) * d;        // [d]
      for (size_t i = 0; i < half; ++i) {
        const float x1 = x[i];
        const float x2 = x[i + half];
        if (kTranspose) {
          y[i] = x1 * c[i] + x2 * sn[i];
          y[i + half] = x2 * c[i] - x1 * sn[i];
        } else {
          y[i] = x1 * c[i] - x2 * sn[i];
          y[i + half] = x2 * c[i] + x1 * sn[i];
        }
      }
    }
  }
}

}  // namespace

std::vector<double> rope_inv_freq(const RopeConfig& config) {
  check_config(config);
  const int half = config.head_dim / 2;
  std::vector<double> inv(half);
  for (int j = 0; j < half; ++j) inv[j] = std::pow(config.theta, -2.0 * j / config.head_dim);
  if (config.scaling == RopeScaling::kLlama3) {
    const double old_len = config.original_max_position;
    const double lo_wavelen = old_len / config.low_freq_factor;   // longer waves are divided by factor
    const double hi_wavelen = old_len / config.high_freq_factor;  // shorter waves are kept
    for (double& f : inv) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen > lo_wavelen) {
        f = f / config.factor;
      } else if (!(wavelen < hi_wavelen)) {
        const double smooth =
            (old_len / wavelen - config.low_freq_factor) / (config.high_freq_factor - config.low_freq_factor);
        f = (1.0 - smooth) * f / config.factor + smooth * f;
      }
    }
  }
  return inv;
}

RopeTable make_rope_table(const RopeConfig& config, int max_positions) {
  ZDP_CHECK(max_positions > 0, ShapeError, "[rope] table of {} positions", max_positions);
  const std::vector<double> inv = rope_inv_freq(config);
  RopeTable t;
  t.max_positions = max_positions;
  t.half = config.head_dim / 2;
  t.cos.resize(size_t(max_positions) * t.half);
  t.sin.resize(t.cos.size());
  for (int p = 0; p < max_positions; ++p) {
    for (int j = 0; j < t.half; ++j) {
      const double angle = double(p) * inv[j];
      t.cos[size_t(p) * t.half + j] = static_cast<float>(std::cos(angle));
      t.sin[size_t(p) * t.half + j] = static_cast<float>(std::sin(angle));
    }
  }
  return t;
}

void rope_forward(std::span<float> out, std::span<const float> inp, const RopeTable& table,
                  std::span<const int32_t> positions, RopeShape s) {
  rotate<false>(out, inp, table, positions, s);
}

void rope_backward(std::span<float> dinp, std::span<const float> dout, const RopeTable& table,
                   std::span<const int32_t> positions, RopeShape s) {
  rotate<true>(dinp, dout, table, positions, s);
}

}  // namespace zerodp::kernels
