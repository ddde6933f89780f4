// SPDX-License-Identifier: Apache-2.0
// A small, fully specified sequential random generator (SplitMix64) for
// sampling: std::uniform_real_distribution is implementation-defined; this is
// the same on every platform, so a seed means the same sample everywhere.
// (Parameter initialisation is counter-based: model/param_init.h.)
// Thread-safety: a value type; use one per thread.
#pragma once

#include <cstdint>

namespace zerodp::model {

class InitRng {
 public:
  explicit InitRng(uint64_t seed) : state_(seed) {}
  // An independent stream for (seed, stream): e.g. one per tensor.
  InitRng(uint64_t seed, uint64_t stream) : state_(seed ^ (0x9E3779B97F4A7C15ull * (stream + 1))) { next_u64(); }

  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace zerodp::model
