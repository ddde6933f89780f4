// SPDX-License-Identifier: Apache-2.0
// The optimizer interface: parsing, validation, K, shard ranges, size checks,
// external (offloaded) states.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/error.h"
#include "optim/optimizer.h"

namespace zerodp::optim {
namespace {

TEST(Optimizer, ParsesKinds) {
  EXPECT_EQ(parse_optimizer_kind("adamw"), OptimizerKind::kAdamW);
  EXPECT_EQ(parse_optimizer_kind("adam"), OptimizerKind::kAdam);
  EXPECT_EQ(parse_optimizer_kind("sgd"), OptimizerKind::kSgd);
  EXPECT_EQ(parse_optimizer_kind("lion"), OptimizerKind::kLion);
  EXPECT_EQ(parse_optimizer_kind("adam8bit"), OptimizerKind::kAdam8bit);
  EXPECT_EQ(optimizer_kind_name(OptimizerKind::kAdamW), "adamw");
  EXPECT_EQ(optimizer_kind_name(OptimizerKind::kLion), "lion");
  try {
    parse_optimizer_kind("lamb");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.message(), "[optimizer] unknown optimizer 'lamb'; use adamw, adam, sgd, lion, adam8bit or adafactor");
  }
}

TEST(Optimizer, BytesPerParameterK) {
  const OptimizerConfig adamw{.kind = OptimizerKind::kAdamW};
  EXPECT_EQ(bytes_per_param_k(adamw, true), 12u);  // the ZeRO paper's K
  EXPECT_EQ(bytes_per_param_k(adamw, false), 8u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kAdam}, true), 12u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kSgd, .sgd = {.momentum = 0.9}}, true), 8u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kSgd, .sgd = {.momentum = 0.9}}, false), 4u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kSgd}, true), 4u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kSgd}, false), 0u);
  // Lion: fp32 master + one momentum; fp32 training keeps only the momentum.
  const OptimizerBytesPerParam lion = optimizer_bytes_per_param({.kind = OptimizerKind::kLion}, true);
  EXPECT_EQ(lion.master, 4u);
  EXPECT_EQ(lion.moment1, 4u);
  EXPECT_EQ(lion.moment2, 0u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kLion}, true), 8u);
  EXPECT_EQ(bytes_per_param_k({.kind = OptimizerKind::kLion}, false), 4u);
  EXPECT_EQ(make_optimizer({.kind = OptimizerKind::kLion}, 4)->state_bytes_per_param(), 4u);
  // The constructed optimizer agrees with the formula.
  EXPECT_EQ(make_optimizer({.kind = OptimizerKind::kSgd, .sgd = {.momentum = 0.5}}, 4)->state_bytes_per_param(), 4u);
}

TEST(Optimizer, RejectsBadConfigs) {
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kAdamW, .adam = {.beta1 = 1.0}}, 4), ConfigError);
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kAdam, .adam = {.beta2 = -0.1}}, 4), ConfigError);
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kAdam, .adam = {.eps = -1e-8}}, 4), ConfigError);
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kSgd, .sgd = {.nesterov = true}}, 4), ConfigError);
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kSgd, .sgd = {.weight_decay = -1}}, 4), ConfigError);
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kLion, .lion = {.beta1 = 1.0}}, 4), ConfigError);
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kLion, .lion = {.beta2 = -0.5}}, 4), ConfigError);
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kLion, .lion = {.weight_decay = -0.1}}, 4), ConfigError);
  // The Lion config is the one checked for a Lion: a bad Adam beta does not matter.
  EXPECT_NO_THROW(make_optimizer({.kind = OptimizerKind::kLion, .adam = {.beta1 = 2.0}}, 4));
  try {
    make_optimizer({.kind = OptimizerKind::kLion, .lion = {.beta2 = 1.0}}, 4);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.message(), "[lion] beta2 1 is outside [0, 1); use a value like 0.99");
  }
  EXPECT_THROW(make_optimizer({.kind = OptimizerKind::kAdamW}, 4, {.no_decay = {{2, 3}}}), ShapeError);
}

TEST(Optimizer, ChecksSpanSizesAndLearningRate) {
  auto opt = make_optimizer({.kind = OptimizerKind::kAdamW}, 4);
  std::vector<float> p(4), g(4), short_g(3);
  EXPECT_THROW(opt->step(p, short_g, 1e-3), ShapeError);
  EXPECT_THROW(opt->step(std::span<float>(p).first(3), short_g, 1e-3), ShapeError);
  EXPECT_THROW(opt->step(p, g, -1.0), ConfigError);
  EXPECT_THROW(opt->step(p, g, std::numeric_limits<double>::quiet_NaN()), ConfigError);
  EXPECT_EQ(opt->step_count(), 0);  // failed calls take no step
  opt->step(p, g, 1e-3);
  EXPECT_EQ(opt->step_count(), 1);
}

TEST(Optimizer, EmptyShardIsAllowed) {
  auto opt = make_optimizer({.kind = OptimizerKind::kAdamW}, 0);
  std::vector<float> none;
  opt->step(none, none, 1e-3);
  EXPECT_EQ(opt->step_count(), 1);
}

TEST(Optimizer, RangesWithinShardIntersectShiftAndMerge) {
  const std::vector<ElementRange> global = {{0, 10}, {95, 10}, {103, 4}, {150, 5}, {200, 1}};
  EXPECT_EQ(ranges_within_shard(global, 100, 100), (std::vector<ElementRange>{{0, 7}, {50, 5}}));
  EXPECT_EQ(ranges_within_shard(global, 5, 3), (std::vector<ElementRange>{{0, 3}}));
  EXPECT_TRUE(ranges_within_shard(global, 10, 85).empty());
  EXPECT_EQ(ranges_within_shard(global, 199, 1), (std::vector<ElementRange>{}));
  EXPECT_EQ(ranges_within_shard(global, 199, 2), (std::vector<ElementRange>{{1, 1}}));
  // Adjacent ranges merge.
  const std::vector<ElementRange> adjacent = {{4, 2}, {0, 4}};
  EXPECT_EQ(ranges_within_shard(adjacent, 0, 10), (std::vector<ElementRange>{{0, 6}}));
}

// External states (offload): the optimizer allocates and books none, runs
// only while attached, and gives the bits of owned states from the same
// starting values, reset_states included (8-bit Adam's codes of zero).
TEST(Optimizer, ExternalStatesGiveTheOwnedStatesBits) {
  for (const OptimizerKind kind : {OptimizerKind::kAdamW, OptimizerKind::kAdam8bit, OptimizerKind::kLion}) {
    OptimizerConfig config{.kind = kind};
    config.adam.min_8bit_size = 0;
    int64_t booked = 0;
    const size_t n = 5000;
    auto owned = make_optimizer(config, n);
    auto external =
        make_optimizer(config, n, {.accountant = [&](StateKind, int64_t b) { booked += b; }, .external_states = true});
    EXPECT_EQ(booked, 0);
    std::vector<float> grads(n), a(n, 0.5f), b(n, 0.5f);
    for (size_t i = 0; i < n; ++i) grads[i] = std::sin(static_cast<float>(i)) * 0.01f;
    EXPECT_THROW(external->step(b, grads, 1e-3), ShapeError);  // not attached
    AlignedBuffer<std::byte> memory(external->state_extent_bytes());
    std::fill(memory.begin(), memory.end(), std::byte{0x5a});  // reset_states must overwrite it
    external->attach_states(memory.span());
    external->reset_states();
    for (int step = 0; step < 3; ++step) {
      owned->step(a, grads, 1e-3);
      external->step(b, grads, 1e-3);
    }
    EXPECT_EQ(std::memcmp(a.data(), b.data(), n * sizeof(float)), 0) << optimizer_kind_name(kind);
    const auto so = owned->state(), se = external->state();
    ASSERT_EQ(so.size(), se.size());
    for (size_t i = 0; i < so.size(); ++i) {
      EXPECT_TRUE(std::equal(so[i].data.begin(), so[i].data.end(), se[i].data.begin(), se[i].data.end()));
      EXPECT_TRUE(std::equal(so[i].codes.begin(), so[i].codes.end(), se[i].codes.begin(), se[i].codes.end()));
    }
    external->detach_states();
    EXPECT_FALSE(external->states_attached());
    EXPECT_THROW(external->attach_states(memory.span().first(memory.size() - 1)), ShapeError);
    EXPECT_THROW(external->attach_states(memory.span().subspan(1, memory.size() - 64)), ShapeError);
    EXPECT_THROW(owned->attach_states(memory.span()), ShapeError);
  }
}

}  // namespace
}  // namespace zerodp::optim
