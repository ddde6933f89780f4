// SPDX-License-Identifier: Apache-2.0
// Internal to kernels/: the portable loops behind model_kernels.h, with
// internal linkage so that each level's file (model_kernels.cc for scalar,
// model_kernels_avx2.cc, model_kernels_avx512.cc) compiles its own copy with
// its own flags and the linker never mixes them. The compiler vectorises
// them on the level's vector unit; it never reorders or fuses them (no
// -ffast-math, -ffp-contract=off), so every level gives the same bits.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/model_kernels.h"
#include "kernels/vec_math.h"

namespace zerodp::kernels {
// Internal linkage on purpose: each level's file compiles its own copy.
namespace {  // NOLINT(cert-dcl59-cpp)

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCube = 0.044715f;

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + c x^3))).
void gelu_forward_loop(float* __restrict y, const float* __restrict x, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kCube * v * v * v);
    y[i] = 0.5f * v * (1.0f + detail::fast_tanh(u));
  }
}

void gelu_backward_loop(float* __restrict dx, const float* __restrict x, const float* __restrict dy, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kCube * v * v * v);
    const float t = detail::fast_tanh(u);
    // d/dx: 0.5 (1 + t) + 0.5 x (1 - t^2) du/dx, du/dx = sqrt(2/pi) (1 + 3 c x^2)
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCube * v * v);
    const float local = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du;
    dx[i] = local * dy[i];
  }
}

// SwiGLU: silu(g) * u, silu(g) = g * sigmoid(g), sigmoid(g) = 1 / (1 + e^-g).
// fast_exp clamps its argument, so e^-g stays finite and sigmoid in [0, 1].
void swiglu_forward_loop(float* __restrict y, const float* __restrict g, const float* __restrict u, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float sig = 1.0f / (1.0f + detail::fast_exp(-g[i]));
    y[i] = (g[i] * sig) * u[i];
  }
}

// d/dg silu(g) = sig (1 + g (1 - sig)); d/du = silu(g).
void swiglu_backward_loop(float* __restrict dg, float* __restrict du, const float* __restrict dy,
                          const float* __restrict g, const float* __restrict u, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float sig = 1.0f / (1.0f + detail::fast_exp(-g[i]));
    const float silu = g[i] * sig;
    du[i] = dy[i] * silu;
    dg[i] = (dy[i] * u[i]) * (sig * (1.0f + g[i] * (1.0f - sig)));
  }
}

// One row: softmax over [0, V), zero the padding, then optionally turn the
// probabilities into (p - onehot) * dloss; returns the row's loss. The row
// stays in cache across the passes.
// A negative target (the ignore id, -1) masks the row: loss 0, and with
// kGrad a zero gradient row; without it the row still becomes probabilities.
template <bool kGrad>
float xent_row(float* row, int32_t target, size_t V, size_t Vp, float dloss) {
  if (kGrad && target < 0) {
    for (size_t i = 0; i < Vp; ++i) row[i] = 0.0f;
    return 0.0f;
  }
  const float m = detail::lane_max(row, V);
  const float target_logit = target < 0 ? 0.0f : row[target];
  // exp in place and the sum in the same pass, with the fixed lane order
  const float sum = detail::exp_sum_inplace(row, V, m);
  const float scale = kGrad ? dloss / sum : 1.0f / sum;
  for (size_t i = 0; i < V; ++i) row[i] *= scale;
  for (size_t i = V; i < Vp; ++i) row[i] = 0.0f;
  if (kGrad) row[target] -= dloss;
  if (target < 0) return 0.0f;
  // -log softmax from the logits, not log(p): exact for tiny probabilities
  return std::log(sum) - (target_logit - m);
}

template <bool kGrad>
double xent_rows_loop(float* buf, float* losses, const int32_t* targets, size_t rows, size_t vocab, size_t padded,
                      float dloss) {
  double total = 0.0;
  for (size_t i = 0; i < rows; ++i) {
    losses[i] = xent_row<kGrad>(buf + i * padded, targets[i], vocab, padded, dloss);
    total += losses[i];
  }
  return total;
}

constexpr ModelKernelSet kGenericModelKernels = {gelu_forward_loop,    gelu_backward_loop,    swiglu_forward_loop,
                                                 swiglu_backward_loop, xent_rows_loop<false>, xent_rows_loop<true>};

}  // namespace
}  // namespace zerodp::kernels
