// A small, fully specified random generator for parameter initialisation and
// sampling: SplitMix64 for the bits, Box-Muller for normals. std::normal_
// distribution is implementation-defined; this is the same on every platform,
// so a seed means the same weights everywhere.
// Thread-safety: a value type; use one per thread.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>

namespace zerodp::model {

class InitRng {
 public:
  explicit InitRng(uint64_t seed) : state_(seed) {}
  // An independent stream for (seed, stream): e.g. one per tensor.
  InitRng(uint64_t seed, uint64_t stream) : state_(seed ^ (0x9E3779B97F4A7C15ull * (stream + 1))) {
    next_u64();
  }

  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Standard normal (Box-Muller, both values used in turn).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
    const double u2 = uniform();
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  uint64_t state_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace zerodp::model
