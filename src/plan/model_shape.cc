// SPDX-License-Identifier: Apache-2.0
#include "plan/model_shape.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/presets.h"

namespace zerodp::plan {

void GptShape::validate() const {
  auto positive = [](int v, const char* key) {
    ZDP_CHECK(v > 0, ConfigError, "[plan] model config: \"{}\" must be a positive integer, got {}", key, v);
  };
  positive(layers, "layers");
  positive(heads, "heads");
  positive(channels, "channels");
  positive(vocab, "vocab");
  positive(context, "context");
  ZDP_CHECK(channels % heads == 0, ConfigError,
            "[plan] model config: channels {} is not divisible by heads {}: pick channels = heads x head size",
            channels, heads);
}

uint64_t GptShape::embedding_params() const {
  const uint64_t c = static_cast<uint64_t>(channels);
  return static_cast<uint64_t>(vocab) * c + static_cast<uint64_t>(context) * c;
}

uint64_t GptShape::block_params() const {
  const uint64_t c = static_cast<uint64_t>(channels);
  return 12 * c * c + 13 * c;
}

uint64_t GptShape::final_params() const { return 2 * static_cast<uint64_t>(channels); }

double GptShape::block_train_flops(int micro_batch, int seq_len) const {
  const double c = channels, tokens = static_cast<double>(micro_batch) * seq_len;
  return (72.0 * c * c + 12.0 * seq_len * c) * tokens;
}

double GptShape::head_train_flops(int micro_batch, int seq_len) const {
  return 6.0 * vocab * static_cast<double>(channels) * micro_batch * seq_len;
}

uint64_t GptShape::num_params() const {
  return embedding_params() + static_cast<uint64_t>(layers) * block_params() + final_params();
}

std::vector<GptShape::Unit> GptShape::units() const {
  std::vector<Unit> out;
  out.reserve(static_cast<size_t>(layers) + 2);
  out.push_back({"embedding", embedding_params(), embedding_params()});
  for (int l = 0; l < layers; ++l) out.push_back({fmt::format("block {}", l), block_params(), block_params()});
  out.push_back({"final", final_params(), final_params()});
  return out;
}

uint64_t GptShape::largest_unit_params() const {
  return std::max({embedding_params(), block_params(), final_params()});
}

uint64_t GptShape::largest_module_params() const {
  const uint64_t c = static_cast<uint64_t>(channels);
  const uint64_t wte = static_cast<uint64_t>(vocab) * c;
  const uint64_t wpe = static_cast<uint64_t>(context) * c;
  const uint64_t qkv = 3 * c * c + 3 * c;
  const uint64_t fc = 4 * c * c + 4 * c;
  const uint64_t fc_proj = 4 * c * c + c;
  return std::max({wte, wpe, qkv, fc, fc_proj});
}

GptShape gpt_shape(const model::GptConfig& g) {
  return GptShape{g.layers, g.heads, g.channels, g.padded_vocab, g.max_seq_len};
}

std::optional<GptShape> find_preset(std::string_view name) {
  for (const std::string& n : model::model_preset_names()) {
    if (n != name) continue;
    const model::ModelConfig m = model::model_preset(n);
    const auto* gpt = m.as<model::GptSpec>();
    if (gpt == nullptr) return std::nullopt;
    return gpt_shape(gpt->config());
  }
  return std::nullopt;
}

GptShape resolve_model(std::string_view spec) {
  const model::ModelConfig m = model::resolve_model_config(spec);
  const auto* gpt = m.as<model::GptSpec>();
  ZDP_CHECK(gpt != nullptr, ConfigError,
            "[plan] --model '{}' is a \"{}\" model: plan needs a GPT's shape here (give --params for another "
            "model's count)",
            spec, m.kind());
  return gpt_shape(gpt->config());
}

}  // namespace zerodp::plan
