// SPDX-License-Identifier: Apache-2.0
#include "model/param_init.h"

#include <algorithm>
#include <cmath>

#include "core/counter_hash.h"

namespace zerodp::model {
namespace {

constexpr uint64_t kGolden = kGoldenGamma;

// Uniform in [-1, 1) from 53 random bits (exact in double).
double signed_uniform(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0; }

// Both normals of pair `pair` of stream `seed`.
struct NormalPair {
  double even, odd;
};

NormalPair counter_normal_pair(uint64_t seed, uint64_t pair) {
  // The pair's own SplitMix64 stream, started at a hash of (seed, pair).
  uint64_t state = mix64(mix64(seed + kGolden) ^ (pair * kGolden + 0xD1B54A32D192ED03ull));
  for (;;) {
    const double x = signed_uniform(mix64(state += kGolden));
    const double y = signed_uniform(mix64(state += kGolden));
    const double s = x * x + y * y;
    if (s > 0.0 && s < 1.0) {
      const double f = std::sqrt(-2.0 * portable_log(s) / s);  // sqrt is correctly rounded everywhere
      return {x * f, y * f};
    }
  }
}

}  // namespace

double portable_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);      // x = m * 2^e, m in [0.5, 1): exact
  if (m < 0.70710678118654752440) {  // m in [sqrt(1/2), sqrt(2)) keeps the series short
    m *= 2.0;
    e -= 1;
  }
  // log(m) = 2 atanh(t) = 2 (t + t^3/3 + t^5/5 + ...), t = (m-1)/(m+1), |t| < 0.172:
  // the 12 terms below leave an error under 1e-19.
  const double t = (m - 1.0) / (m + 1.0);
  const double t2 = t * t;
  double sum = 0.0;
  for (int k = 23; k >= 3; k -= 2) sum = (sum + 1.0 / k) * t2;
  const double log_m = 2.0 * t * (1.0 + sum);
  constexpr double kLn2Hi = 0x1.62e42fee00000p-1;  // ln 2 = hi + lo; hi ends in zero bits, so e * hi is exact
  constexpr double kLn2Lo = 0x1.a39ef35793c76p-33;
  return static_cast<double>(e) * kLn2Hi + (static_cast<double>(e) * kLn2Lo + log_m);
}

double counter_normal(uint64_t seed, uint64_t index) {
  const NormalPair p = counter_normal_pair(seed, index / 2);
  return index % 2 == 0 ? p.even : p.odd;
}

void init_tensor_slice(const TensorInit& init, size_t tensor_offset, size_t first_in_tensor, std::span<float> out,
                       uint64_t seed) {
  if (init.kind == TensorInit::Kind::kConstant) {
    std::fill(out.begin(), out.end(), init.value);
    return;
  }
  const size_t end = first_in_tensor + out.size();
  const size_t random_end = std::clamp(init.random_count, first_in_tensor, end);
  size_t k = 0;
  for (size_t i = first_in_tensor; i < random_end;) {
    const uint64_t flat = tensor_offset + i;
    const NormalPair p = counter_normal_pair(seed, flat / 2);
    if (flat % 2 == 0) {
      out[k++] = static_cast<float>(p.even * init.std);
      if (++i == random_end) break;
    }
    out[k++] = static_cast<float>(p.odd * init.std);
    ++i;
  }
  std::fill(out.begin() + static_cast<std::ptrdiff_t>(k), out.end(), 0.0f);
}

}  // namespace zerodp::model
