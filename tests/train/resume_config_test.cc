// SPDX-License-Identifier: Apache-2.0
// What a resume takes from a checkpoint's recorded run (train/resume_config.h):
// here, the settings that checkpoints from before them do not record (8-bit
// Adam's choice of fp32 units, the compressed collectives' block, rounding
// and delay), read as what those runs did.
#include "train/resume_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ckpt/manifest.h"
#include "core/error.h"

namespace zerodp::train {
namespace {

ckpt::Manifest saved_with(const nlohmann::json& settings) {
  ckpt::Manifest m;
  m.data_step = 10;
  m.metadata["train_config"] = settings.dump();
  return m;
}

TrainConfig run() {
  TrainConfig c;
  c.steps = 20;
  return c;
}

// Saved before the fp32 units: every unit was 8-bit, and the resume keeps
// it so (the checkpoint's tensors would be refused otherwise); saved since,
// the recorded settings are taken; given against them, refused.
TEST(ResumeConfig, Adam8bitFp32UnitsAreTakenAndOlderCheckpointsStayAll8bit) {
  TrainConfig older = run();
  apply_checkpoint_config(older, saved_with({{"optimizer", "adam8bit"}}), "ckpt");
  EXPECT_EQ(older.engine.optimizer.kind, optim::OptimizerKind::kAdam8bit);
  EXPECT_FALSE(older.engine.optimizer.adam.fp32_embedding);
  EXPECT_EQ(older.engine.optimizer.adam.min_8bit_size, 0u);

  const nlohmann::json newer = {
      {"optimizer", "adam8bit"}, {"adam8bit-fp32-embedding", true}, {"adam8bit-min-8bit-size", 100}};
  TrainConfig taken = run();
  apply_checkpoint_config(taken, saved_with(newer), "ckpt");
  EXPECT_TRUE(taken.engine.optimizer.adam.fp32_embedding);
  EXPECT_EQ(taken.engine.optimizer.adam.min_8bit_size, 100u);

  TrainConfig contradicting = run();
  contradicting.engine.optimizer.adam.fp32_embedding = false;
  contradicting.sources["adam8bit-fp32-embedding"] = "flag --adam8bit-fp32-embedding";
  EXPECT_THROW(apply_checkpoint_config(contradicting, saved_with(newer), "ckpt"), ConfigError);

  // Another optimizer's older checkpoint is left alone.
  TrainConfig adamw = run();
  apply_checkpoint_config(adamw, saved_with({{"optimizer", "adamw"}}), "ckpt");
  EXPECT_TRUE(adamw.engine.optimizer.adam.fp32_embedding);
}

// Saved before the block, rounding and delay were settings: the run used
// 256-element blocks, rounded to the nearest and quantized from step 1, and
// the resume keeps that; a flag saying otherwise is a contradiction to
// override, not a setting the checkpoint lacked.
TEST(ResumeConfig, OlderQuantizedCheckpointsReadAsBlock256NearestFromStep1) {
  const nlohmann::json older = {{"quantize-weights", "int8"}, {"quantize-grads", "int8"}};
  TrainConfig taken = run();
  taken.engine.quantize_block = 64;  // not given: the checkpoint's value replaces it
  taken.engine.quantize_rounding = RoundingMode::kStochastic;
  taken.engine.quantize_delay = 400;
  apply_checkpoint_config(taken, saved_with(older), "ckpt");
  EXPECT_EQ(taken.engine.quantize_weights, comm::Quantization::kInt8);
  EXPECT_EQ(taken.engine.quantize_grads, comm::Quantization::kInt8);
  EXPECT_EQ(taken.engine.quantize_block, 256u);
  EXPECT_EQ(taken.engine.quantize_rounding, RoundingMode::kNearest);
  EXPECT_EQ(taken.engine.quantize_delay, 0);

  TrainConfig delayed = run();
  delayed.engine.quantize_delay = 400;
  delayed.sources["quantize-delay"] = "flag --quantize-delay";
  EXPECT_THROW(apply_checkpoint_config(delayed, saved_with(older), "ckpt"), ConfigError);
  delayed.resume_overrides = {"quantize-delay"};
  apply_checkpoint_config(delayed, saved_with(older), "ckpt");
  EXPECT_EQ(delayed.engine.quantize_delay, 400);

  // A plain run's older checkpoint records neither: nothing is backfilled.
  TrainConfig plain = run();
  plain.engine.quantize_delay = 400;
  plain.sources["quantize-delay"] = "flag --quantize-delay";
  apply_checkpoint_config(plain, saved_with({{"optimizer", "adamw"}}), "ckpt");
  EXPECT_EQ(plain.engine.quantize_delay, 400);
}

}  // namespace
}  // namespace zerodp::train
