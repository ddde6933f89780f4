// SPDX-License-Identifier: Apache-2.0
// Presets (Φ of each, gpt2-124m exactly 124,475,904) and JSON configs.
#include "model/presets.h"
#include "model/gpt_family.h"
#include "model/mlp_family.h"

#include <gtest/gtest.h>

#include <limits>

#include "core/error.h"

namespace zerodp::model {
namespace {

TEST(Presets, ParameterCounts) {
  EXPECT_EQ(num_params(model_preset("gpt2-124m")), 124'475'904u);
  EXPECT_EQ(require_gpt(model_preset("gpt2-124m"), "test").padded_vocab, 50304);
  EXPECT_EQ(num_params(model_preset("gpt-bench")), 29'988'864u);  // PyTorch's 29,970,816 + 47 padded rows x 384
  EXPECT_EQ(num_params(model_preset("gpt-tiny")), 842'496u);
  EXPECT_EQ(num_params(model_preset("gpt-10m")), 10'101'760u);
  EXPECT_EQ(num_params(model_preset("mlp-small")), 85'002u);
  EXPECT_EQ(num_params(model_preset("mlp-10m")), 10'230'784u);
  for (const auto& name : model_preset_names()) {
    auto m = make_model(model_preset(name));
    EXPECT_EQ(m->num_params(), num_params(model_preset(name))) << name;
  }
  EXPECT_EQ(model_preset(kDefaultModel).name, "gpt-tiny");
}

// plan's presets live here too (one list for train and plan): gpt2-* and
// gpt-30m, REFERENCE.md's PyTorch model, whose vocab is not padded.
TEST(Presets, PlansPresetsAreHere) {
  EXPECT_EQ(num_params(model_preset("gpt2-350m")), 354'871'296u);
  EXPECT_EQ(num_params(model_preset("gpt2-774m")), 774'090'240u);
  EXPECT_EQ(num_params(model_preset("gpt2-1558m")), 1'557'686'400u);
  EXPECT_EQ(num_params(model_preset("gpt-30m")), 29'970'816u);
  EXPECT_EQ(require_gpt(model_preset("gpt-30m"), "test").padded_vocab, 50257);
}

// One model schema: plan's old {"type": ..., "context": ...} spellings are
// refused in one line naming the key to write.
TEST(Presets, PlansOldSpellingsNameTheRightKey) {
  auto message = [](const std::string& text) {
    try {
      resolve_model_config(text);
    } catch (const ConfigError& e) {
      return e.message();
    }
    return std::string("no error");
  };
  const std::string type = message(R"({"type":"gpt","layers":2,"heads":2,"channels":16,"vocab":50,"context":8})");
  EXPECT_NE(type.find("write \"kind\""), std::string::npos) << type;
  const std::string context = message(R"({"kind":"gpt","layers":2,"heads":2,"channels":16,"vocab":50,"context":8})");
  EXPECT_NE(context.find("write \"max_seq_len\""), std::string::npos) << context;
  for (const std::string& m : {type, context}) EXPECT_EQ(m.find('\n'), std::string::npos);
}

TEST(Presets, UnknownNameListsTheChoices) {
  try {
    model_preset("gpt5");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("gpt2-124m"), std::string::npos) << e.message();
  }
}

TEST(Presets, JsonConfigs) {
  auto g = resolve_model_config(R"({"kind":"gpt","layers":2,"heads":2,"channels":16,"vocab":50,"max_seq_len":8})");
  EXPECT_EQ(g.kind(), "gpt");
  EXPECT_EQ(require_gpt(g, "test").padded_vocab, 128);
  auto m = resolve_model_config(R"({"kind":"mlp","widths":[4,8,3],"head":"classification"})");
  EXPECT_EQ(m.kind(), "mlp");
  EXPECT_EQ(m.as<MlpSpec>()->config().head, MlpHead::kClassification);
  EXPECT_EQ(num_params(m), size_t(5 * 8 + 9 * 3));
  EXPECT_THROW(resolve_model_config("{not json"), ConfigError);
  EXPECT_THROW(resolve_model_config(R"({"kind":"gpt","layers":2})"), ConfigError);  // missing keys
  EXPECT_THROW(resolve_model_config(R"({"kind":"gpt","layers":2,"heads":3,"channels":16,"vocab":5,"max_seq_len":8})"),
               ConfigError);  // 16 % 3
  EXPECT_THROW(resolve_model_config(R"({"kind":"mlp","widths":[4],"typo":1})"), ConfigError);
  EXPECT_THROW(resolve_model_config(R"({"kind":"rnn"})"), ConfigError);
  EXPECT_THROW(resolve_model_config("/nonexistent/model.json"), ConfigError);
}

}  // namespace
}  // namespace zerodp::model

namespace zerodp::model {
namespace {

// Found by the llm.c reader's fuzzer: a vocab near INT_MAX overflowed int
// while the refusal message was being built.
TEST(Presets, HugeVocabIsRefusedWithoutOverflow) {
  EXPECT_EQ(padded_vocab_for(50257), 50304);
  EXPECT_EQ(padded_vocab_for(std::numeric_limits<int>::max()), std::numeric_limits<int>::max());
  GptConfig c{16, std::numeric_limits<int>::max(), 128, 1, 1, 8};
  EXPECT_THROW(c.validate(), ConfigError);
}

}  // namespace
}  // namespace zerodp::model
