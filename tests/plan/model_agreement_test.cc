// SPDX-License-Identifier: Apache-2.0
// plan's closed-form Φ and unit sizes against src/model, which lays out the
// real flat buffer: for every GPT preset `zerodp train` takes, the two must
// agree exactly, or plan would predict bytes the engine never allocates.
#include <gtest/gtest.h>

#include "model/gpt_config.h"
#include "model/gpt_family.h"
#include "model/presets.h"
#include "plan/model_shape.h"

namespace zerodp::plan {
namespace {

GptShape from_model(const model::GptConfig& g) {
  return GptShape{g.layers, g.heads, g.channels, g.padded_vocab, g.max_seq_len};
}

TEST(ModelAgreement, EveryModelGptPresetHasThePlannedParameterCount) {
  int gpts = 0;
  for (const std::string& name : model::model_preset_names()) {
    const model::ModelConfig m = model::model_preset(name);
    const auto* gpt = m.as<model::GptSpec>();
    if (gpt == nullptr) continue;
    ++gpts;
    const GptShape s = from_model(gpt->config());
    EXPECT_EQ(s.num_params(), model::num_params(m)) << name;
    EXPECT_EQ(s.embedding_params(), model::embedding_unit_params(gpt->config())) << name;
    EXPECT_EQ(s.block_params(), model::block_layout(gpt->config().channels).count) << name;
  }
  EXPECT_GT(gpts, 0);
}

TEST(ModelAgreement, PlanPresetsAreTheModelPresets) {
  for (const std::string& name : model::model_preset_names()) {
    const model::ModelConfig m = model::model_preset(name);
    if (m.as<model::GptSpec>() == nullptr) continue;
    ASSERT_TRUE(find_preset(name).has_value()) << name;
    EXPECT_EQ(find_preset(name)->num_params(), model::num_params(m)) << name;
  }
}

}  // namespace
}  // namespace zerodp::plan
