// SPDX-License-Identifier: Apache-2.0
// plan/checkpoint_size.h: one checkpoint's bytes on disk from the model and
// the optimizer. The payloads are the format's (every element once: fp32
// master and moments, 8-bit codes as bytes, Lion's bf16 momentum and
// Adafactor's packed statistics as fp32); the format's own bytes stay under
// the documented bound. Measured saves of gpt-tiny (docs/train.md) were below
// these figures by 0.2-1.1 MB.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/presets.h"
#include "optim/optimizer_config.h"
#include "plan/checkpoint_size.h"
#include "plan/plan_format.h"
#include "plan/planner.h"

namespace zerodp::plan {
namespace {

optim::OptimizerConfig optimizer(optim::OptimizerKind kind) {
  optim::OptimizerConfig c;
  c.kind = kind;
  return c;
}

class CheckpointBytes : public ::testing::Test {
 protected:
  const model::ModelConfig tiny_ = model::resolve_model_config("gpt-tiny");
  const uint64_t phi_ = 842'496;  // gpt-tiny's parameters
  // The format's bytes at 2 ranks: at most the manifest's, the CRCs, 2
  // files' and the headers of 6 units x 8 tensors on each of them.
  uint64_t overhead_bound(uint64_t payload) const {
    return kManifestBytes + 6 * kManifestBytesPerUnit + payload / 16384 + 2 * kShardFileBytes + 2 * 6 * 8 * 64;
  }
  void expect_payload(const optim::OptimizerConfig& o, uint64_t payload) const {
    const uint64_t bytes = checkpoint_bytes(tiny_, o, 2);
    EXPECT_GE(bytes, payload);
    EXPECT_LE(bytes, payload + overhead_bound(payload));
  }
};

TEST_F(CheckpointBytes, MasterAndMomentsOnceAtAnyStage) {
  expect_payload(optimizer(optim::OptimizerKind::kAdamW), 12 * phi_);  // master + m + v
  expect_payload(optimizer(optim::OptimizerKind::kSgd), 4 * phi_);     // master only
  expect_payload(optimizer(optim::OptimizerKind::kLion), 8 * phi_);
}

TEST_F(CheckpointBytes, Bf16MomentumIsStoredAsFp32) {
  optim::OptimizerConfig lion = optimizer(optim::OptimizerKind::kLion);
  lion.lion.bf16_momentum = true;
  expect_payload(lion, 8 * phi_);
}

TEST_F(CheckpointBytes, AdafactorStoresItsStatisticsOneFp32PerElement) {
  optim::OptimizerConfig adafactor = optimizer(optim::OptimizerKind::kAdafactor);
  expect_payload(adafactor, 8 * phi_);
  adafactor.adafactor.beta1 = 0.9;  // and m
  expect_payload(adafactor, 12 * phi_);
}

TEST_F(CheckpointBytes, EightBitAdamKeepsCodesAsBytesAndFp32Units) {
  const uint64_t bytes = checkpoint_bytes(tiny_, optimizer(optim::OptimizerKind::kAdam8bit), 2);
  // Above master + two code bytes (the fp32 embedding unit and the scales
  // add), below AdamW's 12.
  EXPECT_GT(bytes, 6 * phi_);
  EXPECT_LT(bytes, checkpoint_bytes(tiny_, optimizer(optim::OptimizerKind::kAdamW), 2));
}

// zerodp plan prints the same figure (text and JSON), at its largest N.
TEST_F(CheckpointBytes, ThePlanPrintsIt) {
  PlanConfig c;
  c.shape = gpt_shape(tiny_.as<model::GptSpec>()->config());
  c.ranks = {1, 2};
  const PlanResult r = make_plan(c);
  EXPECT_EQ(r.checkpoint_bytes, checkpoint_bytes(tiny_, c.optimizer, 2));
  EXPECT_NE(format_plan_text(r, {}).find("Checkpoint on disk: "), std::string::npos);
  EXPECT_EQ(plan_to_json(r)["checkpoint_bytes"], r.checkpoint_bytes);
}

TEST_F(CheckpointBytes, RefusesNoRanks) {
  EXPECT_THROW(checkpoint_bytes(tiny_, optimizer(optim::OptimizerKind::kAdamW), 0), ConfigError);
}

}  // namespace
}  // namespace zerodp::plan
