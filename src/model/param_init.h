// SPDX-License-Identifier: Apache-2.0
// Parameter initialisation that any rank can do for any part of the model
// alone: the value of flat parameter i depends only on (seed, i) and the rule
// of the tensor that holds it, never on what else was generated first. So a
// rank that keeps 1/N of the model generates just that 1/N, one slice at a
// time, with the same bits as a full initialisation (ZeRO stage 3 never
// builds the whole model anywhere).
//
// The normals come from a counter-based generator: SplitMix64's mixer over
// (seed, i / 2) gives a private stream per pair of parameters, the Marsaglia
// polar method turns two uniforms into two normals (the pair's even and odd
// elements), and the logarithm it needs is computed here from +, *, / and
// sqrt only, so no libm variant (glibc picks FMA or not by CPU) can change a
// bit: the same seed gives the same weights on every CPU and build.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace zerodp::model {

// How one tensor starts: a constant, or normals N(0, std^2) in its first
// `random_count` elements and zeros after them (GPT's padded vocabulary rows).
struct TensorInit {
  enum class Kind { kConstant, kNormal };
  Kind kind = Kind::kConstant;
  float value = 0.0f;              // kConstant
  double std = 0.0;                // kNormal
  size_t random_count = SIZE_MAX;  // kNormal: elements past it are zero

  static TensorInit constant(float v) { return {Kind::kConstant, v, 0.0, SIZE_MAX}; }
  static TensorInit normal(double std, size_t random_count = SIZE_MAX) {
    return {Kind::kNormal, 0.0f, std, random_count};
  }
};

// Standard normal number `index` of the stream `seed` (counter-based).
double counter_normal(uint64_t seed, uint64_t index);

// Natural logarithm of x > 0 (finite), from exact scaling and a series in
// basic arithmetic: the same bits on every IEEE-754 machine.
double portable_log(double x);

// Fills out[k] with the value of tensor element (first_in_tensor + k), whose
// flat parameter index is (tensor_offset + first_in_tensor + k).
void init_tensor_slice(const TensorInit& init, size_t tensor_offset, size_t first_in_tensor, std::span<float> out,
                       uint64_t seed);

}  // namespace zerodp::model
