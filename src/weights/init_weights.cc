// SPDX-License-Identifier: Apache-2.0
#include "weights/init_weights.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/llama_family.h"
#include "weights/hf_format.h"
#include "weights/llama_hf_reader.h"
#include "weights/weights_reader.h"

namespace zerodp::weights {
std::unique_ptr<InitWeights> open_init_weights(const std::string& path, const model::ModelConfig& config) {
  if (const auto* gpt = config.as<model::GptSpec>()) {
    ZDP_CHECK(!is_llama_hf_checkpoint(path), ConfigError,
              "[train] --init-from {} is a Llama-family checkpoint (its config.json says so) and --model is a gpt "
              "model: leave out --model to train the checkpoint's own shape",
              path);
    // A directory is a Hugging Face checkpoint (config.json and
    // model.safetensors or its shards, as `ckpt consolidate` writes OUT/hf/).
    return std::make_unique<GptWeightsReader>(path, gpt->config());
  }
  if (const auto* llama = config.as<model::LlamaSpec>()) return std::make_unique<LlamaHfReader>(path, llama->config());
  ZDP_THROW(ConfigError,
            "[train] --init-from reads GPT-2 and Llama-family weights, and the model is a \"{}\" model: start it "
            "from the seed (leave out --init-from)",
            config.kind());
}

std::string model_json_of_checkpoint(const std::string& path) {
  const std::optional<nlohmann::json> config = llama_hf_config_json(path);
  if (!config) return "";
  const model::LlamaConfig c = llama_config_from_hf(*config, hf_config_path(path));
  return model::model_config_json(model::ModelConfig{"custom", std::make_shared<const model::LlamaSpec>(c)});
}

}  // namespace zerodp::weights
