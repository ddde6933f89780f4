// SPDX-License-Identifier: Apache-2.0
// Counter-based random bits: SplitMix64's finalizer (Steele, Lea and Flood,
// "Fast Splittable Pseudorandom Number Generators", 2014) maps a counter to 64
// well-mixed bits, so the bits for position i of a stream depend on (stream,
// i) alone, never on what was drawn before. That is what lets every rank draw
// the bits of just the elements it holds and get those of a whole-model run
// (parameter initialisation, stochastic rounding).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace zerodp {

// The golden-ratio increment of SplitMix64's state.
inline constexpr uint64_t kGoldenGamma = 0x9E3779B97F4A7C15ull;

// SplitMix64's output function.
constexpr uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace zerodp
