// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/presets.h"
#include "plan/model_shape.h"

namespace zerodp::plan {
namespace {

TEST(ModelShape, Gpt2SmallWithPaddedVocab) {
  const GptShape s = *find_preset("gpt2-124m");
  EXPECT_EQ(s.num_params(), 124'475'904u);
  EXPECT_EQ(s.embedding_params(), 50304u * 768 + 1024u * 768);
  EXPECT_EQ(s.block_params(), 12u * 768 * 768 + 13 * 768);
  // The largest unit is the embedding (wte + wpe); the final unit gathers
  // the tied wte again plus its layernorm, which is smaller.
  EXPECT_EQ(s.largest_unit_params(), s.embedding_params());
  EXPECT_EQ(s.largest_module_params(), 50304u * 768);
}

TEST(ModelShape, MatchesPyTorchCountForTheReferenceGpt) {
  // REFERENCE.md: PyTorch counts 29,970,816 parameters for 6 layers, 6 heads,
  // 384 channels, vocab 50257, context 64 (tied head counted once).
  EXPECT_EQ(find_preset("gpt-30m")->num_params(), 29'970'816u);
}

TEST(ModelShape, UnitsSumToPhiAndEachUnitGathersItself) {
  const GptShape s{3, 2, 8, 11, 5};
  const auto units = s.units();
  ASSERT_EQ(units.size(), 5u);
  uint64_t owned = 0;
  for (const auto& u : units) owned += u.owned_params;
  EXPECT_EQ(owned, s.num_params());
  EXPECT_EQ(units.back().gathered_params, 2u * 8);
  EXPECT_EQ(s.largest_unit_params(), s.block_params());  // 872 > embedding 128: the block
  EXPECT_EQ(s.num_params(), 11u * 8 + 5u * 8 + 3u * (12 * 64 + 13 * 8) + 16);
}

TEST(ModelShape, ReadsTheModelSchema) {
  // The schema `zerodp train --model` takes and checkpoints record.
  const GptShape s =
      resolve_model(R"({"kind":"gpt","layers":12,"heads":12,"channels":768,"vocab":50257,"max_seq_len":1024})");
  EXPECT_EQ(s.num_params(), 124'475'904u);  // vocab padded to 50304, as the engine stores it
  EXPECT_EQ(s.vocab, 50304);
  EXPECT_EQ(s.context, 1024);
  EXPECT_EQ(
      resolve_model(R"({"kind":"gpt","layers":1,"heads":1,"channels":4,"vocab":3,"max_seq_len":2,"padded_vocab":3})")
          .vocab,
      3);
}

TEST(ModelShape, ResolvesPresetsAndFiles) {
  EXPECT_EQ(resolve_model("gpt2-350m").channels, 1024);
  const std::string path = ::testing::TempDir() + "plan_model_shape_test.json";
  {
    std::ofstream out(path);
    out << R"({"kind":"gpt","layers":2,"heads":2,"channels":8,"vocab":16,"max_seq_len":4,"padded_vocab":16})";
  }
  EXPECT_EQ(resolve_model(path).vocab, 16);
  std::remove(path.c_str());
}

// plan and train share src/model's preset list: every GPT preset `zerodp
// model list` prints has a shape here, and plan's old names are in it.
TEST(ModelShape, PresetsAreTheModelPresets) {
  for (const std::string& name : model::model_preset_names()) {
    const model::ModelConfig m = model::model_preset(name);
    if (m.as<model::GptSpec>() == nullptr) {
      EXPECT_FALSE(find_preset(name).has_value()) << name;
      continue;
    }
    ASSERT_TRUE(find_preset(name).has_value()) << name;
    EXPECT_EQ(find_preset(name)->num_params(), model::num_params(m)) << name;
  }
  for (const char* name : {"gpt2-124m", "gpt2-350m", "gpt2-774m", "gpt2-1558m", "gpt-30m", "gpt-tiny", "gpt-bench"}) {
    EXPECT_TRUE(find_preset(name).has_value()) << name;
  }
  EXPECT_FALSE(find_preset("gpt-unknown").has_value());
}

TEST(ModelShape, BadConfigsNameTheProblem) {
  auto message = [](const std::string& text) {
    try {
      resolve_model(text);
    } catch (const ConfigError& e) {
      return e.message();
    }
    return std::string("no error");
  };
  EXPECT_NE(message("gpt-unknown").find("gpt2-124m"), std::string::npos);  // lists presets
  EXPECT_NE(message(R"({"kind":"gpt","layers":12})").find("\"heads\""), std::string::npos);
  EXPECT_NE(message(R"({"kind":"gpt","layers":2,"heads":3,"channels":8,"vocab":4,"max_seq_len":4})")
                .find("multiple of heads"),
            std::string::npos);
  EXPECT_NE(message(R"({"kind":"gpt","layers":2,"heads":2,"channels":8,"vocab":4,"max_seq_len":4,"lyrs":1})")
                .find("\"lyrs\""),
            std::string::npos);
  EXPECT_NE(message(R"({"kind":"mlp","widths":[4,8,2]})").find("\"mlp\" model"), std::string::npos);
  EXPECT_NE(message(R"({"kind":"gpt",)").find("not valid JSON"), std::string::npos);
  // plan's old spellings are refused naming the key to write instead.
  EXPECT_NE(message(R"({"type":"gpt","layers":1,"heads":1,"channels":4,"vocab":3,"context":2})").find("\"kind\""),
            std::string::npos);
  EXPECT_NE(
      message(R"({"kind":"gpt","layers":1,"heads":1,"channels":4,"vocab":3,"context":2})").find("\"max_seq_len\""),
      std::string::npos);
}

}  // namespace
}  // namespace zerodp::plan
