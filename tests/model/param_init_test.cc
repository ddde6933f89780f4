// SPDX-License-Identifier: Apache-2.0
// Partitioned initialisation: any slice of the model, generated alone, has
// the bits of the full initialisation; the generator is pinned to values that
// must come out the same on every CPU and build (the arm64 CI step runs this
// under qemu).
#include "model/param_init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/error.h"
#include "model/gpt.h"
#include "model/mlp.h"

namespace zerodp::model {
namespace {

void expect_slices_match_full(const Model& m, uint64_t seed) {
  std::vector<float> full(m.num_params());
  m.init_params(full, seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t first = rng() % m.num_params();
    const size_t count = 1 + rng() % std::min<size_t>(m.num_params() - first, 5000);
    std::vector<float> part(count, -1.0f);
    m.init_range(part, first, seed);
    ASSERT_EQ(std::memcmp(part.data(), full.data() + first, count * sizeof(float)), 0)
        << "elements [" << first << ", " << first + count << ")";
  }
}

TEST(ParamInit, AnySliceHasTheBitsOfTheFullInitialisation) {
  expect_slices_match_full(Gpt(GptConfig{32, 50, 64, 3, 2, 16}), 11);
  expect_slices_match_full(Mlp(MlpConfig{.widths = {7, 33, 5}}), 5);
}

TEST(ParamInit, SlicesPastTheModelAreRefused) {
  const Gpt m(GptConfig{32, 50, 64, 1, 2, 16});
  std::vector<float> two(2);
  EXPECT_THROW(m.init_range(two, m.num_params() - 1, 1), ShapeError);
  EXPECT_NO_THROW(m.init_range(std::span<float>(two).first(1), m.num_params() - 1, 1));
}

// The same numbers on every CPU: these literals were produced once and
// must never change silently (a change re-initialises every model).
TEST(ParamInit, CounterNormalsArePinned) {
  const double expected[] = {0x1.a19c5081b922cp-1,  0x1.18e549f012402p+0, -0x1.46689f16ba7c8p-1,
                             -0x1.51d467a80ef0ep-3, 0x1.1ff7330523104p-1, 0x1.9da4419d2cd3p-1};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(counter_normal(1234, i), expected[i]) << "index " << i;
}

TEST(ParamInit, CounterNormalsAreStandardNormal) {
  const int n = 200000;
  double s = 0, s2 = 0, s4 = 0;
  for (int i = 0; i < n; ++i) {
    const double z = counter_normal(7, i);
    s += z;
    s2 += z * z;
    s4 += z * z * z * z;
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.015);
  EXPECT_NEAR(s4 / n, 3.0, 0.1);  // the kurtosis of a normal
  EXPECT_NE(counter_normal(7, 0), counter_normal(8, 0));
}

TEST(ParamInit, PortableLogAgreesWithLibm) {
  for (double x = 1e-300; x < 1e300; x *= 1.37) {
    EXPECT_NEAR(portable_log(x), std::log(x), 4e-16 * std::max(1.0, std::fabs(std::log(x)))) << x;
  }
  EXPECT_EQ(portable_log(1.0), 0.0);
}

TEST(ParamInit, GptFollowsGpt2sRules) {
  const GptConfig c{64, 100, 128, 2, 2, 32};
  const Gpt m(c);
  std::vector<float> p(m.num_params());
  m.init_params(p, 3);
  for (const TensorInfo& t : m.tensors()) {
    const std::span<const float> v(p.data() + t.offset, t.count);
    if (t.init.kind == TensorInit::Kind::kConstant) {
      for (float x : v) ASSERT_EQ(x, t.init.value) << t.name;
      continue;
    }
    const size_t random = std::min(t.count, t.init.random_count);
    for (size_t i = random; i < t.count; ++i) ASSERT_EQ(v[i], 0.0f) << t.name << " padded element " << i;
    double s2 = 0;
    for (size_t i = 0; i < random; ++i) s2 += double(v[i]) * v[i];
    EXPECT_NEAR(std::sqrt(s2 / random), t.init.std, 0.1 * t.init.std) << t.name;
  }
}

}  // namespace
}  // namespace zerodp::model
