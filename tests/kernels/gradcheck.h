// SPDX-License-Identifier: Apache-2.0
// Finite-difference gradient checking for the kernel tests.
// The objective is J = sum(out * r) for a fixed random r, evaluated in double
// from fp32 kernel outputs; central differences with step eps. fp32 rounding
// of the outputs limits the accuracy, so the checks use the tolerances below
// (stated in docs/models.md): |numeric - analytic| <= kAtol + kRtol |numeric|.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace zerodp::kernels::testing {

inline constexpr double kEps = 1e-2;
inline constexpr double kRtol = 1e-2;
inline constexpr double kAtol = 2e-3;

inline std::vector<float> random_vector(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline double weighted_sum(const std::vector<float>& out, const std::vector<float>& r) {
  double s = 0;
  for (size_t i = 0; i < out.size(); ++i) s += double(out[i]) * r[i];
  return s;
}

struct GradCheckResult {
  int checked = 0;
  int failed = 0;
  double worst = 0;  // largest |num - ana| / (kAtol + kRtol |num|)
  std::string first_failure;
};

// A check that ran and found every checked gradient within the tolerances.
inline void expect_grad_ok(const GradCheckResult& r, const char* what) {
  EXPECT_GT(r.checked, 0) << what;
  EXPECT_EQ(r.failed, 0) << what << ": " << r.first_failure << " (worst ratio " << r.worst << ")";
}

// Perturbs x[i] for up to max_checks evenly spread indices, recomputing the
// objective with f(); compares with analytic[i].
inline GradCheckResult grad_check(std::vector<float>& x, const std::vector<float>& analytic,
                                  const std::function<double()>& f, int max_checks = 64) {
  GradCheckResult res;
  const size_t n = x.size();
  const size_t stride = n <= size_t(max_checks) ? 1 : n / max_checks;
  for (size_t i = 0; i < n; i += stride) {
    const float orig = x[i];
    x[i] = static_cast<float>(orig + kEps);
    const double fp = f();
    x[i] = static_cast<float>(orig - kEps);
    const double fm = f();
    x[i] = orig;
    const double num = (fp - fm) / (2 * kEps);
    const double ratio = std::abs(num - analytic[i]) / (kAtol + kRtol * std::abs(num));
    res.worst = std::max(res.worst, ratio);
    ++res.checked;
    if (ratio > 1.0) {
      if (res.failed++ == 0) {
        res.first_failure = "index " + std::to_string(i) + ": numeric " + std::to_string(num) + " analytic " +
                            std::to_string(analytic[i]);
      }
    }
  }
  return res;
}

}  // namespace zerodp::kernels::testing
