// SPDX-License-Identifier: Apache-2.0
// 8-bit Adam against an independent double-precision reference written from
// the published algorithm (Dettmers et al. 2022, arXiv 2110.02861:
// dequantize, Adam's update, new block absmax, quantize to the nearest code
// of the dynamic map), with the dynamic maps rebuilt in double from
// bitsandbytes' construction; the quantization edge cases (zeros, an outlier,
// NaN and infinite gradients, v overflowing); and the bitwise properties the
// engine relies on: where the shards are cut, how many there are, and the
// gradient dtype do not change the bits once the end blocks' maxima are
// shared. Debian's python3-torch has no bitsandbytes, so there is no torch
// fixture; tools/make_dynamic_map.py generated the code table from
// bitsandbytes' construction run in torch.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/convert.h"
#include "core/simd.h"
#include "optim/adam8bit.h"
#include "optim/adam8bit_kernels.h"
#include "optim/optimizer.h"
#include "optim/quant8.h"
#include "test_data.h"

namespace zerodp::optim {
namespace {

using quant8::kBlockSize;
using testing::random_vector;

// bitsandbytes' create_dynamic_map in double: for exponents 10^-6..10^0,
// the midpoints of linspace(0.1, 1, 2^i + 1) (2^(i+1) + 1 unsigned), mirrored
// when signed, then 0 and 1, sorted.
std::vector<double> reference_map(bool is_signed) {
  std::vector<double> data;
  for (int i = 0; i < 7; ++i) {
    const int items = (is_signed ? (1 << i) : (1 << (i + 1))) + 1;
    const double scale = std::pow(10.0, -6 + i);
    for (int k = 0; k + 1 < items; ++k) {
      const double a = 0.1 + 0.9 * k / (items - 1), b = 0.1 + 0.9 * (k + 1) / (items - 1);
      data.push_back(scale * (a + b) / 2.0);
      if (is_signed) data.push_back(-scale * (a + b) / 2.0);
    }
  }
  data.push_back(0.0);
  data.push_back(1.0);
  std::sort(data.begin(), data.end());
  return data;
}

// Nearest code, ties to the lower; signed: a value whose nearest code has the
// other sign bit moves one code towards its sign (bitsandbytes).
int reference_quantize(const std::vector<double>& map, double x, bool is_signed) {
  int best = 0;
  for (int k = 1; k < static_cast<int>(map.size()); ++k) {
    if (std::abs(x - map[static_cast<size_t>(k)]) < std::abs(x - map[static_cast<size_t>(best)])) best = k;
  }
  if (is_signed && std::signbit(x) != std::signbit(map[static_cast<size_t>(best)])) best += std::signbit(x) ? -1 : 1;
  return best;
}

// How close x lies to a decision boundary of the map (relative to the gap),
// for telling a real code mismatch from a rounding tie.
double distance_to_boundary(const std::vector<double>& map, double x) {
  double d = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k + 1 < map.size(); ++k) d = std::min(d, std::abs(x - (map[k] + map[k + 1]) / 2.0));
  return d;
}

TEST(Quant8, TheTableIsBitsandbytesDynamicMap) {
  for (bool is_signed : {true, false}) {
    const quant8::DynamicMap& map = is_signed ? quant8::signed_map() : quant8::unsigned_map();
    const std::vector<double> ref = reference_map(is_signed);
    ASSERT_EQ(ref.size(), 256u);
    for (size_t k = 0; k < 256; ++k) {
      EXPECT_NEAR(map.code[k], ref[k], 1e-6 * std::abs(ref[k])) << (is_signed ? "signed " : "unsigned ") << k;
      if (k > 0) {
        EXPECT_LT(map.code[k - 1], map.code[k]) << k;
      }
    }
    EXPECT_EQ(map.code[map.zero], 0.0f);
    EXPECT_EQ(map.code[255], 1.0f);
    EXPECT_EQ(map.zero, is_signed ? 127 : 0);
  }
  EXPECT_EQ(quant8::signed_map().code[0], -quant8::signed_map().code[254]);
}

TEST(Quant8, QuantizeIsTheNearestCodeWithBitsandbytesSignRule) {
  for (bool is_signed : {true, false}) {
    const quant8::DynamicMap& map = is_signed ? quant8::signed_map() : quant8::unsigned_map();
    std::vector<double> table(map.code.begin(), map.code.end());
    std::vector<float> xs = {0.0f, 1.0f, 1e-9f, 3e-7f, 0.5f, 0.99f, std::nextafter(1.0f, 0.0f)};
    if (is_signed) xs.insert(xs.end(), {-1.0f, -1e-9f, -0.0f, -0.5f, -3e-7f});
    for (float x : random_vector(20000, 11, 0.3f)) xs.push_back(std::clamp(is_signed ? x : std::abs(x), -1.0f, 1.0f));
    for (float x : random_vector(5000, 12, 1e-4f)) xs.push_back(is_signed ? x : std::abs(x));
    for (size_t k = 0; k + 1 < 256; ++k) xs.push_back(map.mid[k]);  // exact ties go to the lower code
    for (float x : xs) {
      // The boundaries are the float midpoints of neighbouring codes (as
      // bitsandbytes computes them); a value equal to one takes the lower code.
      int want = reference_quantize(table, x, is_signed);
      const auto it = std::find(map.mid.begin(), map.mid.end(), x);
      if (it != map.mid.end()) want = static_cast<int>(it - map.mid.begin());
      EXPECT_EQ(quant8::quantize(map, x), want) << x;
    }
  }
  // A tiny negative m never rounds to 0 (it keeps its sign), a tiny positive one does.
  EXPECT_EQ(quant8::quantize(quant8::signed_map(), -1e-12f), 126);
  EXPECT_EQ(quant8::quantize(quant8::signed_map(), 1e-12f), 127);
}

// quantize starts its search from a table indexed by a float's top 16 bits;
// it must give the plain count of midpoints below x (then the sign rule) at
// every bucket's two ends, at every midpoint and its neighbours, and on
// random values.
TEST(Quant8, TheIndexedSearchEqualsCountingTheMidpoints) {
  for (bool is_signed : {true, false}) {
    const quant8::DynamicMap& map = is_signed ? quant8::signed_map() : quant8::unsigned_map();
    auto expected = [&](float x) {
      unsigned q = 0;
      for (float mid : map.mid) q += x > mid ? 1 : 0;
      if (is_signed && std::signbit(x) != std::signbit(map.code[q])) q = std::signbit(x) ? q - 1 : q + 1;
      return static_cast<int>(q);
    };
    std::vector<float> xs;
    for (uint32_t i = 0; i < (1u << 16); ++i) {
      for (uint32_t low : {0u, 0xFFFFu}) {
        const float x = std::bit_cast<float>((i << 16) | low);
        if (std::abs(x) <= 1.0f && (is_signed || x >= 0.0f)) xs.push_back(x);
      }
    }
    for (float mid : map.mid) xs.insert(xs.end(), {mid, std::nextafter(mid, -2.0f), std::nextafter(mid, 2.0f)});
    for (float x : random_vector(100000, 21, 0.2f)) xs.push_back(std::clamp(is_signed ? x : std::abs(x), -1.0f, 1.0f));
    for (float x : xs) ASSERT_EQ(quant8::quantize(map, x), expected(x)) << x;
  }
}

// The vector loops take max_steps compare-and-step rounds from first[]:
// every level's quantize gives the scalar search's index for the floats at
// both ends of every bucket, every midpoint and its neighbours, both zeros,
// subnormals and random values.
TEST(Quant8, EverySimdLevelQuantizesAsTheScalarSearch) {
  for (bool is_signed : {true, false}) {
    const quant8::DynamicMap& map = is_signed ? quant8::signed_map() : quant8::unsigned_map();
    EXPECT_GE(map.max_steps, 1);
    EXPECT_LE(map.max_steps, 4);
    std::vector<float> xs = {0.0f, -0.0f, std::numeric_limits<float>::denorm_min(), 1.0f, 1e-30f};
    if (is_signed) xs.insert(xs.end(), {-std::numeric_limits<float>::denorm_min(), -1.0f, -1e-30f});
    for (uint32_t i = 0; i < (1u << 16); ++i) {
      for (uint32_t low : {0u, 0x7FFFu, 0xFFFFu}) {
        const float x = std::bit_cast<float>((i << 16) | low);
        if (std::abs(x) <= 1.0f && (is_signed || !std::signbit(x))) xs.push_back(x);
      }
    }
    for (float mid : map.mid) xs.insert(xs.end(), {mid, std::nextafter(mid, -2.0f), std::nextafter(mid, 2.0f)});
    for (float x : random_vector(100001, 23, 0.3f)) xs.push_back(std::clamp(is_signed ? x : std::abs(x), -1.0f, 1.0f));
    std::vector<uint8_t> want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) want[i] = quant8::quantize(map, xs[i]);
    for (SimdLevel level : supported_simd_levels()) {
      std::vector<uint8_t> got(xs.size(), 0xAA);
      kernels::adam8bit_kernels(level).quantize(map, xs.data(), xs.size(), got.data());
      for (size_t i = 0; i < xs.size(); ++i) {
        ASSERT_EQ(got[i], want[i]) << simd_level_name(level) << " x = " << xs[i] << " (signed " << is_signed << ")";
      }
    }
  }
}

TEST(Quant8, BlocksAreAnchoredAtTheUnitStart) {
  EXPECT_EQ(quant8::blocks_touched(0, 2048).count, 1u);
  EXPECT_EQ(quant8::blocks_touched(1, 2048).count, 2u);
  EXPECT_EQ(quant8::blocks_touched(2047, 2).first, 0u);
  EXPECT_EQ(quant8::blocks_touched(4096, 0).count, 0u);
  // Every block starts in exactly one shard of any cut.
  for (size_t n : {1u, 2u, 3u, 7u}) {
    const size_t count = 3 * kBlockSize + 5;
    size_t blocks = 0;
    for (size_t r = 0; r < n; ++r) {
      const size_t off = r * (count / n) + std::min(r, count % n), len = count / n + (r < count % n ? 1 : 0);
      const quant8::BlockRange b = quant8::blocks_starting_in(off, len);
      EXPECT_EQ(b.first, blocks);
      blocks += b.count;
    }
    EXPECT_EQ(blocks, 4u) << n;
  }
}

// The published algorithm in double, one step, from a given quantized state.
struct Reference {
  std::vector<double> smap = reference_map(true), umap = reference_map(false);
  struct Out {
    std::vector<double> params, scale_m, scale_v, x_m, x_v;  // x: the values the codes quantize
    std::vector<double> tolerance;  // float rounding of the update: u times its terms' magnitudes
    std::vector<int> qm, qv;
  };
  Out step(const std::vector<float>& params, const std::vector<float>& grads, const std::vector<uint8_t>& qm,
           const std::vector<uint8_t>& qv, const std::vector<float>& sm, const std::vector<float>& sv, size_t origin,
           int t, double lr, double grad_scale, const AdamConfig& c, const std::vector<bool>& decays) const {
    const size_t n = params.size();
    const size_t first = origin / kBlockSize;
    const size_t blocks = quant8::blocks_touched(origin, n).count;
    std::vector<double> m(n), v(n);
    std::vector<bool> finite(n);
    Out out;
    out.params = out.x_m = out.x_v = out.tolerance = std::vector<double>(n);
    out.scale_m = out.scale_v = std::vector<double>(blocks);
    out.qm = out.qv = std::vector<int>(n);
    std::vector<double> terms(n);
    for (size_t i = 0; i < n; ++i) {
      const size_t b = (origin + i) / kBlockSize - first;
      const double g = double{grads[i]} * grad_scale;
      m[i] = c.beta1 * (smap[qm[i]] * sm[b]) + (1.0 - c.beta1) * g;
      terms[i] = c.beta1 * std::abs(smap[qm[i]] * sm[b]) + (1.0 - c.beta1) * std::abs(g);
      v[i] = c.beta2 * (umap[qv[i]] * sv[b]) + (1.0 - c.beta2) * g * g;
      finite[i] = std::isfinite(v[i]) && v[i] < double{std::numeric_limits<float>::max()};
      if (!finite[i]) m[i] = v[i] = 0.0;
      out.scale_m[b] = std::max(out.scale_m[b], std::abs(m[i]));
      out.scale_v[b] = std::max(out.scale_v[b], v[i]);
    }
    const double bc1 = 1.0 - std::pow(c.beta1, t), bc2 = 1.0 - std::pow(c.beta2, t);
    for (size_t i = 0; i < n; ++i) {
      const size_t b = (origin + i) / kBlockSize - first;
      double p = params[i];
      if (finite[i]) {
        if (decays[i]) p -= lr * c.weight_decay * p;
        const double denom = std::sqrt(v[i] / bc2) + c.eps;
        p -= lr / bc1 * m[i] / denom;
        // m's terms may cancel; each of the ~10 float roundings is relative
        // to the terms, not to the result.
        out.tolerance[i] = 1e-6 * (std::abs(p) + lr / bc1 * terms[i] / denom);
      } else {
        out.tolerance[i] = 1e-6 * std::abs(p);
      }
      out.params[i] = p;
      out.x_m[i] = out.scale_m[b] > 0 ? m[i] / out.scale_m[b] : 0.0;
      out.x_v[i] = out.scale_v[b] > 0 ? v[i] / out.scale_v[b] : 0.0;
      out.qm[i] = reference_quantize(smap, out.x_m[i], true);
      out.qv[i] = reference_quantize(umap, out.x_v[i], false);
    }
    return out;
  }
};

std::vector<uint8_t> codes(std::span<const uint8_t> s) { return {s.begin(), s.end()}; }
std::vector<float> floats(std::span<const float> s) { return {s.begin(), s.end()}; }

// Teacher-forced: every step starts the reference from the implementation's
// own quantized state, so the check is per step and as tight as one step's
// float rounding, over 40 steps with decay, a no-decay range, a varying lr
// and grad_scale, a unit offset that cuts the first block, a zero block, an
// outlier, and tiny gradients.
TEST(Adam8bit, EveryStepMatchesTheDoubleReference) {
  constexpr size_t kN = 3 * kBlockSize + 777, kOrigin = 1000;
  const AdamConfig config{.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.1};
  std::vector<float> params = random_vector(kN, 1);
  Adam8bit opt(config, kN, {.no_decay = {{300, 500}}, .unit_offset = kOrigin});
  std::vector<bool> decays(kN, true);
  for (size_t i = 300; i < 800; ++i) decays[i] = false;
  const Reference ref;
  int ambiguous = 0, compared = 0;
  for (int t = 1; t <= 40; ++t) {
    std::vector<float> grads = random_vector(kN, 100 + static_cast<uint32_t>(t), 0.5f);
    const size_t zero_block = kBlockSize - kOrigin;  // the second block of the unit is all zeros
    std::fill_n(grads.begin() + static_cast<std::ptrdiff_t>(zero_block), kBlockSize, 0.0f);
    grads[5000] = 1e4f;                                                                           // an outlier
    for (size_t i = 6000; i < 6100; ++i) grads[i] = 1e-20f * static_cast<float>(i % 7) - 3e-20f;  // tiny
    const double lr = 1e-2 * (1.0 + 0.5 * std::sin(t));
    const float grad_scale = t % 3 == 0 ? 0.5f : 1.0f;
    const Reference::Out want =
        ref.step(params, grads, codes(opt.exp_avg_codes()), codes(opt.exp_avg_sq_codes()), floats(opt.exp_avg_absmax()),
                 floats(opt.exp_avg_sq_absmax()), kOrigin, t, lr, grad_scale, config, decays);
    opt.step(params, grads, lr, grad_scale);
    for (size_t b = 0; b < opt.blocks().count; ++b) {
      EXPECT_NEAR(opt.exp_avg_absmax()[b], want.scale_m[b], 2e-6 * want.scale_m[b]) << "t " << t << " block " << b;
      EXPECT_NEAR(opt.exp_avg_sq_absmax()[b], want.scale_v[b], 2e-6 * want.scale_v[b]) << "t " << t << " block " << b;
    }
    EXPECT_EQ(opt.exp_avg_absmax()[1], 0.0f);  // the zero block: scale 0, not NaN
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_NEAR(params[i], want.params[i], want.tolerance[i]) << "t " << t << " i " << i;
      for (int moment = 0; moment < 2; ++moment) {
        const int got = moment == 0 ? opt.exp_avg_codes()[i] : opt.exp_avg_sq_codes()[i];
        const int expected = moment == 0 ? want.qm[i] : want.qv[i];
        const double x = moment == 0 ? want.x_m[i] : want.x_v[i];
        ++compared;
        if (got == expected) continue;
        // Only a value within float rounding of a decision boundary may differ, by one code.
        const std::vector<double>& map = moment == 0 ? ref.smap : ref.umap;
        ASSERT_LE(std::abs(got - expected), 1) << "t " << t << " i " << i;
        ASSERT_LT(distance_to_boundary(map, x), 1e-6 * std::abs(x) + 1e-12) << "t " << t << " i " << i;
        ++ambiguous;
      }
    }
  }
  EXPECT_LT(ambiguous, compared / 10000);  // ties are rare
  // The outlier's m sits at its block's scale exactly (code 1.0 or -1.0 only for +).
  const size_t ob = (kOrigin + 5000) / kBlockSize - opt.blocks().first;
  EXPECT_EQ(quant8::signed_map().code[opt.exp_avg_codes()[5000]] * opt.exp_avg_absmax()[ob], opt.exp_avg_absmax()[ob]);
}

// Non-finite gradients, as bitsandbytes: the element keeps its parameter and
// restarts its moments at 0; the block's other elements and its scale stay
// finite. v overflowing from a huge finite gradient is treated the same.
TEST(Adam8bit, NonFiniteGradientsLeaveTheParameterAndNeverANanScale) {
  constexpr size_t kN = 100;
  std::vector<float> params = random_vector(kN, 2);
  Adam8bit opt({.weight_decay = 0.1}, kN);
  std::vector<float> grads = random_vector(kN, 3);
  opt.step(params, grads, 1e-2);
  const std::vector<float> before = params;
  grads[3] = std::numeric_limits<float>::quiet_NaN();
  grads[4] = std::numeric_limits<float>::infinity();
  grads[5] = -std::numeric_limits<float>::infinity();
  grads[6] = 3e30f;  // finite, but (1-b2)*g*g overflows
  opt.step(params, grads, 1e-2);
  for (size_t i = 3; i <= 6; ++i) {
    EXPECT_EQ(params[i], before[i]) << i;
    EXPECT_EQ(opt.exp_avg_codes()[i], quant8::signed_map().zero) << i;
    EXPECT_EQ(opt.exp_avg_sq_codes()[i], quant8::unsigned_map().zero) << i;
  }
  EXPECT_TRUE(std::isfinite(opt.exp_avg_absmax()[0]));
  EXPECT_TRUE(std::isfinite(opt.exp_avg_sq_absmax()[0]));
  for (size_t i = 0; i < kN; ++i) EXPECT_TRUE(std::isfinite(params[i])) << i;
  EXPECT_NE(params[7], before[7]);
}

TEST(Adam8bit, ZeroGradientsGiveZeroScalesAndOnlyDecay) {
  constexpr size_t kN = 3000;
  std::vector<float> params = random_vector(kN, 2);
  const std::vector<float> start = params;
  Adam8bit opt({.weight_decay = 0.5}, kN);
  const std::vector<float> grads(kN, 0.0f);
  opt.step(params, grads, 1e-2);
  for (float s : opt.exp_avg_absmax()) EXPECT_EQ(s, 0.0f);
  for (float s : opt.exp_avg_sq_absmax()) EXPECT_EQ(s, 0.0f);
  const float factor = static_cast<float>(1.0 - 1e-2 * 0.5);
  for (size_t i = 0; i < kN; ++i) EXPECT_EQ(params[i], start[i] * factor) << i;
}

// One step at a time on every shard of a cut, the end blocks' maxima shared
// as the engine shares them: the same bits as one optimizer over the unit.
template <typename G>
void expect_shards_equal_whole(const std::vector<size_t>& cuts, size_t origin, size_t n) {
  const AdamConfig config{.weight_decay = 0.01};
  std::vector<float> whole = random_vector(n, 5);
  std::vector<float> sharded = whole;
  Adam8bit one(config, n, {.no_decay = {{10, 4000}}, .unit_offset = origin});
  std::vector<ElementRange> shards;
  size_t at = 0;
  for (size_t c : cuts) {
    shards.push_back({at, c - at});
    at = c;
  }
  shards.push_back({at, n - at});
  std::vector<std::unique_ptr<Optimizer>> parts;
  for (const ElementRange& s : shards) {
    parts.push_back(
        make_optimizer({.kind = OptimizerKind::kAdam8bit, .adam = config}, s.count,
                       {.no_decay = ranges_within_shard(std::vector<ElementRange>{{10, 4000}}, s.offset, s.count),
                        .unit_offset = origin + s.offset}));
  }
  std::vector<ElementRange> unit_shards = shards;
  for (ElementRange& s : unit_shards) s.offset += origin;
  for (int t = 0; t < 4; ++t) {
    const std::vector<float> g32 = random_vector(n, 50 + static_cast<uint32_t>(t), t == 2 ? 100.0f : 1.0f);
    std::vector<G> g(n);
    if constexpr (std::is_same_v<G, float>) {
      g = g32;
    } else {
      convert(g32, std::span<G>(g));
    }
    one.step(whole, std::span<const G>(g), 1e-3, 0.5f);
    std::vector<Optimizer::BlockEndMaxima> partials;
    for (size_t s = 0; s < shards.size(); ++s) {
      partials.push_back(
          parts[s]->block_end_maxima(std::span<const G>(g).subspan(shards[s].offset, shards[s].count), 0.5f));
    }
    for (size_t s = 0; s < shards.size(); ++s) {
      parts[s]->share_block_end_maxima(combine_block_end_maxima(unit_shards, partials, s));
      parts[s]->step(std::span<float>(sharded).subspan(shards[s].offset, shards[s].count),
                     std::span<const G>(g).subspan(shards[s].offset, shards[s].count), 1e-3, 0.5f);
    }
  }
  EXPECT_EQ(testing::first_bit_difference(whole, sharded), -1);
  for (size_t s = 0; s < shards.size(); ++s) {
    const auto state = std::as_const(*parts[s]).state();
    const auto& q = dynamic_cast<const Adam8bit&>(*parts[s]);
    for (size_t i = 0; i < shards[s].count; ++i) {
      ASSERT_EQ(state[0].codes[i], one.exp_avg_codes()[shards[s].offset + i]);
      ASSERT_EQ(state[1].codes[i], one.exp_avg_sq_codes()[shards[s].offset + i]);
    }
    for (size_t b = 0; b < q.blocks().count; ++b) {
      const size_t global = q.blocks().first + b - one.blocks().first;
      EXPECT_EQ(state[2].data[b], one.exp_avg_absmax()[global]) << "shard " << s << " block " << b;
      EXPECT_EQ(state[3].data[b], one.exp_avg_sq_absmax()[global]) << "shard " << s << " block " << b;
    }
  }
}

TEST(Adam8bit, EveryShardCutGivesTheBitsOfTheWholeUnit) {
  constexpr size_t kN = 4 * kBlockSize + 123;
  const std::vector<std::vector<size_t>> cuts = {
      {}, {kN / 2}, {1, 2, 3}, {2048, 4096}, {100, 101, 3000, 3001, 5000}, {2047, 2049, 6143, 6145}, {500, 900, 1300}};
  for (size_t origin : {size_t{0}, size_t{1500}}) {
    for (const auto& c : cuts) {
      SCOPED_TRACE(::testing::Message() << "origin " << origin << " cuts " << c.size());
      expect_shards_equal_whole<float>(c, origin, kN);
      expect_shards_equal_whole<Half>(c, origin, kN);
      expect_shards_equal_whole<BFloat16>(c, origin, kN);
    }
  }
}

// Every SIMD level's loops (adam8bit_kernels.h) give the scalar level's
// bits: parameters, codes and scales, over a shard that starts mid-block,
// with a no-decay range, a varying lr and grad scale, an all-zero region,
// an outlier, tiny gradients and non-finite ones, and tails of every length.
TEST(Adam8bit, EverySimdLevelGivesTheScalarBits) {
  for (size_t n : {size_t{3} * kBlockSize + 77, size_t{1}, size_t{15}, size_t{17}, size_t{2047}}) {
    struct Run {
      std::vector<float> params;
      std::vector<uint8_t> qm, qv;
      std::vector<float> sm, sv;
    };
    auto run = [n](SimdLevel level) {
      Run r{random_vector(n, 7), {}, {}, {}, {}};
      Adam8bit opt({.weight_decay = 0.1}, n, {.no_decay = {{n / 3, n / 4 + 1}}, .simd = level, .unit_offset = 1500});
      for (int t = 0; t < 6; ++t) {
        std::vector<float> g = random_vector(n, 30 + static_cast<uint32_t>(t), t == 1 ? 1e-20f : 1.0f);
        if (n > 1000) {
          std::fill(g.begin() + 600, g.begin() + 900, 0.0f);  // a zero region
          g[1000] = 1e4f;                                     // an outlier
        }
        if (t == 4) {
          g[0] = std::numeric_limits<float>::quiet_NaN();
          g[n / 2] = std::numeric_limits<float>::infinity();
          g[n - 1] = 3e30f;  // (1-b2)*g*g overflows
        }
        opt.step(r.params, g, 1e-2 / (t + 1), t == 3 ? 0.25f : 1.0f);
      }
      r.qm.assign(opt.exp_avg_codes().begin(), opt.exp_avg_codes().end());
      r.qv.assign(opt.exp_avg_sq_codes().begin(), opt.exp_avg_sq_codes().end());
      r.sm.assign(opt.exp_avg_absmax().begin(), opt.exp_avg_absmax().end());
      r.sv.assign(opt.exp_avg_sq_absmax().begin(), opt.exp_avg_sq_absmax().end());
      return r;
    };
    const Run scalar = run(SimdLevel::kScalar);
    for (SimdLevel level : supported_simd_levels()) {
      SCOPED_TRACE(::testing::Message() << simd_level_name(level) << " n " << n);
      const Run r = run(level);
      EXPECT_EQ(testing::first_bit_difference(scalar.params, r.params), -1);
      EXPECT_EQ(scalar.qm, r.qm);
      EXPECT_EQ(scalar.qv, r.qv);
      EXPECT_EQ(testing::first_bit_difference(scalar.sm, r.sm), -1);
      EXPECT_EQ(testing::first_bit_difference(scalar.sv, r.sv), -1);
    }
  }
}

TEST(Adam8bit, LowPrecisionGradientsEqualTheirWidening) {
  testing::expect_low_precision_grads_equal_their_widening({.kind = OptimizerKind::kAdam8bit});
}

TEST(Adam8bit, StateIsTwoBytesPerElementPlusEightPerBlock) {
  int64_t m_bytes = 0, v_bytes = 0;
  {
    auto opt =
        make_optimizer({.kind = OptimizerKind::kAdam8bit}, 5000,
                       {.accountant = [&](StateKind k, int64_t d) { (is_second_moment(k) ? v_bytes : m_bytes) += d; },
                        .unit_offset = 1000});
    EXPECT_EQ(opt->state_bytes_per_param(), 2u);
    EXPECT_EQ(opt->quant_block_size(), kBlockSize);
    // 5000 elements from offset 1000 touch blocks 0..2.
    EXPECT_EQ(m_bytes, 5000 + 3 * 4);
    EXPECT_EQ(v_bytes, 5000 + 3 * 4);
    const OptimizerBytesPerParam k = optimizer_bytes_per_param({.kind = OptimizerKind::kAdam8bit}, true);
    EXPECT_EQ(k.k(), 6u);
    EXPECT_EQ(block_scale_bytes(k, 1000, 5000), 12u);
    EXPECT_EQ(optimizer_bytes_per_param({.kind = OptimizerKind::kAdam8bit}, false).k(), 2u);
    const auto names = opt->state();
    ASSERT_EQ(names.size(), 4u);
    EXPECT_EQ(state_kind_name(names[0].kind), "exp_avg_q8");
    EXPECT_EQ(state_kind_name(names[3].kind), "exp_avg_sq_absmax");
  }
  EXPECT_EQ(m_bytes, 0);
  EXPECT_EQ(v_bytes, 0);
  EXPECT_EQ(parse_optimizer_kind("adam8bit"), OptimizerKind::kAdam8bit);
}

// Close to AdamW: over 200 steps on a quadratic, the 8-bit moments track
// the fp32 ones well enough that the parameters stay near AdamW's.
TEST(Adam8bit, TracksAdamWOnAQuadratic) {
  constexpr size_t kN = 5000;
  const std::vector<float> target = random_vector(kN, 9);
  std::vector<float> a(kN, 0.0f), b(kN, 0.0f);
  auto adamw = make_optimizer({.kind = OptimizerKind::kAdamW, .adam = {}}, kN);
  auto q8 = make_optimizer({.kind = OptimizerKind::kAdam8bit, .adam = {}}, kN);
  std::vector<float> g(kN);
  double loss_a = 0, loss_b = 0;
  for (int t = 0; t < 200; ++t) {
    for (size_t i = 0; i < kN; ++i) g[i] = a[i] - target[i];
    adamw->step(a, g, 1e-2);
    for (size_t i = 0; i < kN; ++i) g[i] = b[i] - target[i];
    q8->step(b, g, 1e-2);
  }
  for (size_t i = 0; i < kN; ++i) {
    loss_a += (a[i] - target[i]) * (a[i] - target[i]);
    loss_b += (b[i] - target[i]) * (b[i] - target[i]);
  }
  EXPECT_LT(loss_b, 1.5 * loss_a + 1e-3 * kN);
  EXPECT_LT(loss_b, 0.05 * kN);  // started at about kN
}

}  // namespace
}  // namespace zerodp::optim
