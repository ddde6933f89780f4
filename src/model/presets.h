// SPDX-License-Identifier: Apache-2.0
// Model configs by name or from JSON, and the factory that builds a Model.
//
// Presets (Φ checked by tests/model/presets_test.cc):
//   gpt-tiny    (default) byte-level GPT: L4 NH4 C128, vocab 256, maxT 128;
//               learns visibly on text in a minute on 2 cores
//   gpt-10m     L6 NH8 C320, vocab 8192, maxT 256 (~10M)
//   gpt-bench   L6 NH6 C384, vocab 50257 (padded 50304), maxT 64: the
//               benchmark GPT of REFERENCE.md
//   gpt-30m     gpt-bench without the vocab padding (50257 rows), as
//               PyTorch counts REFERENCE.md's model: 29,970,816 parameters
//   gpt2-124m   L12 NH12 C768, vocab 50257 (padded 50304), maxT 1024:
//               124,475,904 parameters
//   gpt2-350m, gpt2-774m, gpt2-1558m   GPT-2 medium, large, XL (vocab
//               50257 padded to 50304, maxT 1024)
//   mlp-small   [64, 256, 256, 10], classification
//   mlp-10m     [1024, 1536 x4, 1024], regression (~10M)
// JSON (a file whose name ends in .json, or an inline object):
//   {"kind": "gpt", "layers": 6, "heads": 6, "channels": 384, "vocab": 50257,
//    "max_seq_len": 64, "padded_vocab": 50304 (optional; default: the llm.c
//    padding to a multiple of 128)}
//   {"kind": "mlp", "widths": [64, 256, 10], "head": "classification" | "regression"}
// This is the one preset list and the one model schema: `zerodp plan
// --model` reads both from here (plan/model_shape.h). zerodp plan's former
// spellings "type" and "context" are refused naming "kind" and
// "max_seq_len". Unknown names, unknown keys and bad values are ConfigErrors
// that say what is accepted. Thread-safety: pure functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/model_kind.h"
#include "model/gpt_config.h"
#include "model/mlp.h"
#include "model/model.h"

namespace zerodp::model {

struct ModelConfig {
  std::string name;  // preset name, or "custom"
  ModelKind kind = ModelKind::kGpt;
  GptConfig gpt;  // when kind == kGpt
  MlpConfig mlp;  // when kind == kMlp
};

inline constexpr std::string_view kDefaultModel = "gpt-tiny";

std::vector<std::string> model_preset_names();
ModelConfig model_preset(std::string_view name);
// Parses a JSON object (text) into a validated config.
ModelConfig model_config_from_json(std::string_view json_text);
// The inverse, in the schema above (compact, keys in that order; the name is
// not recorded): {"kind":"gpt","layers":...} / {"kind":"mlp","widths":[...],"head":...}.
// Checkpoint manifests record a model this way.
std::string model_config_json(const ModelConfig& config);
// A preset name, a path ending in .json, or an inline JSON object ("{...}").
ModelConfig resolve_model_config(std::string_view name_or_json);

std::unique_ptr<Model> make_model(const ModelConfig& config);
size_t num_params(const ModelConfig& config);

}  // namespace zerodp::model
