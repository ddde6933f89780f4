#include "plan/model_shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"

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

GptShape parse_gpt_shape_json(std::string_view json_text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    ZDP_THROW(ConfigError, "[plan] model config is not valid JSON ({}): write e.g. {}", e.what(),
              R"({"type":"gpt","layers":12,"heads":12,"channels":768,"vocab":50304,"context":1024})");
  }
  ZDP_CHECK(j.is_object(), ConfigError, "[plan] model config must be a JSON object, got {}", j.type_name());
  static constexpr std::string_view kKeys[] = {"type", "name", "layers", "heads", "channels", "vocab", "context"};
  for (const auto& [key, value] : j.items()) {
    const bool known = std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
    ZDP_CHECK(known, ConfigError,
              "[plan] model config has an unknown key \"{}\": the keys are type, layers, heads, channels, vocab, "
              "context (and an optional name)",
              key);
  }
  ZDP_CHECK(j.contains("type") && j["type"].is_string(), ConfigError,
            "[plan] model config needs \"type\": \"gpt\"");
  const std::string type = j["type"].get<std::string>();
  ZDP_CHECK(type == "gpt", ConfigError, "[plan] model config type \"{}\" is not supported by plan: use \"gpt\"",
            type);
  auto get_int = [&](const char* key) {
    ZDP_CHECK(j.contains(key), ConfigError, "[plan] model config is missing \"{}\"", key);
    const auto& v = j[key];
    ZDP_CHECK(v.is_number_integer(), ConfigError, "[plan] model config: \"{}\" must be an integer, got {}", key,
              v.dump());
    const int64_t x = v.get<int64_t>();
    ZDP_CHECK(x > 0 && x <= (int64_t{1} << 30), ConfigError,
              "[plan] model config: \"{}\" must be between 1 and 2^30, got {}", key, x);
    return static_cast<int>(x);
  };
  GptShape s;
  s.layers = get_int("layers");
  s.heads = get_int("heads");
  s.channels = get_int("channels");
  s.vocab = get_int("vocab");
  s.context = get_int("context");
  s.validate();
  return s;
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> kPresets = {
      {"gpt2-124m", "GPT-2 small, vocab padded to 50304 (llm.c)", {12, 12, 768, 50304, 1024}},
      {"gpt2-350m", "GPT-2 medium", {24, 16, 1024, 50304, 1024}},
      {"gpt2-774m", "GPT-2 large", {36, 20, 1280, 50304, 1024}},
      {"gpt2-1558m", "GPT-2 XL", {48, 25, 1600, 50304, 1024}},
      {"gpt-30m", "6 layers, 6 heads, 384 channels, vocab 50257, context 64 (REFERENCE.md's PyTorch baseline)",
       {6, 6, 384, 50257, 64}},
  };
  return kPresets;
}

std::optional<GptShape> find_preset(std::string_view name) {
  for (const ModelPreset& p : model_presets()) {
    if (p.name == name) return p.shape;
  }
  return std::nullopt;
}

GptShape resolve_model(std::string_view spec) {
  size_t first = spec.find_first_not_of(" \t\n");
  if (first != std::string_view::npos && spec[first] == '{') return parse_gpt_shape_json(spec);
  if (auto preset = find_preset(spec)) return *preset;
  const std::filesystem::path path{std::string(spec)};
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    std::ifstream in(path);
    ZDP_CHECK(in.good(), ConfigError, "[plan] cannot read model config file '{}'", spec);
    std::ostringstream text;
    text << in.rdbuf();
    return parse_gpt_shape_json(text.str());
  }
  std::string names;
  for (const ModelPreset& p : model_presets()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  ZDP_THROW(ConfigError,
            "[plan] --model '{}' is neither a preset ({}) nor a JSON file nor inline JSON like "
            "'{{\"type\":\"gpt\",\"layers\":12,...}}'",
            spec, names);
}

}  // namespace zerodp::plan
