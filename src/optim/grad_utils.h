// SPDX-License-Identifier: Apache-2.0
// Gradient helpers for the engine's step: overflow detection, the sum of
// squares behind the global gradient norm, and the combined unscale/clip
// coefficient (DeepSpeed style: one multiply per element).
//
// The engine's protocol: each rank checks its own gradient shard with
// has_nonfinite() and agrees with the others by all-reduce(MAX) of the flag;
// the norm's square is summed with sum_of_squares() over fixed blocks of
// kNormBlock elements of each unit, whole blocks wherever N's shards cut
// them, and the block sums added exactly (zero/grad_norm.h), and
// unscale_and_clip() turns the total into the pre-clip norm and the
// coefficient that Optimizer::step() (or scale()) applies.
//
// Determinism: sum_of_squares() squares each element exactly in double and
// adds element i into partial sum i % 16 in index order, then combines the 16
// partial sums in a fixed tree; the AVX-512 and portable paths give identical
// bits. The result depends on the span's boundaries (a different shard cut
// rounds differently), not on the machine or the run.
// Thread-safety: pure functions over caller-owned memory.
#pragma once

#include <cstddef>
#include <span>

#include "core/convert.h"
#include "core/dtype.h"

namespace zerodp::optim {

// The gradient norm's block: the norm's square is summed over blocks of this
// many elements from each unit's start (zero/grad_norm.h).
inline constexpr size_t kNormBlock = 256;
// The scratch the engine's norm needs for `units` units over `ranks` ranks,
// in floats: every rank's and its own first partial block per unit, and one
// block (the engine books it, the planner predicts it).
inline size_t norm_scratch_floats(size_t units, int ranks) {
  return units * (kNormBlock - 1) * (static_cast<size_t>(ranks) + 1) + kNormBlock;
}

// Sum over i of double(x[i])^2. Non-finite inputs give inf or NaN.
double sum_of_squares(std::span<const float> x, SimdLevel level = active_simd_level());
double sum_of_squares(std::span<const Half> x, SimdLevel level = active_simd_level());
double sum_of_squares(std::span<const BFloat16> x, SimdLevel level = active_simd_level());

// True when any element is infinite or NaN (checks the exponent bits, so no
// floating-point exception or comparison subtlety is involved).
bool has_nonfinite(std::span<const float> x, SimdLevel level = active_simd_level());
bool has_nonfinite(std::span<const Half> x, SimdLevel level = active_simd_level());
bool has_nonfinite(std::span<const BFloat16> x, SimdLevel level = active_simd_level());

// x[i] = x[i] * factor (one float multiply per element).
void scale(std::span<float> x, float factor, SimdLevel level = active_simd_level());

// The clip threshold's epsilon, as DeepSpeed and PyTorch's clip_grad_norm_.
inline constexpr double kClipEpsilon = 1e-6;

struct ClipResult {
  // Global L2 norm of the unscaled gradients, before clipping (what the
  // metrics report as grad_norm).
  double grad_norm = 0.0;
  // The one multiplier for every gradient element:
  //   (1/loss_scale) * min(1, max_norm / (grad_norm + 1e-6)),
  // computed in double and rounded to float once. Without clipping
  // (max_norm <= 0) it is 1/loss_scale.
  float coefficient = 1.0f;
  bool clipped = false;  // the min() chose the clip factor
  bool finite = true;    // false when the sum of squares was inf or NaN
};

// global_sum_of_squares: the all-reduced sum of squares of the *loss-scaled*
// gradients; loss_scale > 0 (1 when not scaling); max_norm <= 0 disables
// clipping. A non-finite sum gives finite = false, grad_norm inf/NaN and the
// unclipped coefficient: the engine must skip such a step (overflow).
ClipResult unscale_and_clip(double global_sum_of_squares, double loss_scale, double max_norm);

}  // namespace zerodp::optim
