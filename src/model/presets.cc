// SPDX-License-Identifier: Apache-2.0
#include "model/presets.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.h"
#include "model/gpt.h"

namespace zerodp::model {
namespace {

ModelConfig gpt(std::string name, int layers, int heads, int channels, int vocab, int max_seq_len) {
  ModelConfig c;
  c.name = std::move(name);
  c.kind = ModelKind::kGpt;
  c.gpt = {max_seq_len, vocab, padded_vocab_for(vocab), layers, heads, channels};
  return c;
}

// A GPT whose embedding has exactly `vocab` rows, as PyTorch's GPT counts it.
ModelConfig gpt_unpadded(std::string name, int layers, int heads, int channels, int vocab, int max_seq_len) {
  ModelConfig c = gpt(std::move(name), layers, heads, channels, vocab, max_seq_len);
  c.gpt.padded_vocab = vocab;
  return c;
}

ModelConfig mlp(std::string name, std::vector<int> widths, MlpHead head) {
  ModelConfig c;
  c.name = std::move(name);
  c.kind = ModelKind::kMlp;
  c.mlp = {std::move(widths), head};
  return c;
}

std::vector<ModelConfig> presets() {
  return {
      gpt("gpt-tiny", 4, 4, 128, 256, 128),
      gpt("gpt-10m", 6, 8, 320, 8192, 256),
      gpt("gpt-bench", 6, 6, 384, 50257, 64),
      gpt_unpadded("gpt-30m", 6, 6, 384, 50257, 64),
      gpt("gpt2-124m", 12, 12, 768, 50257, 1024),
      gpt("gpt2-350m", 24, 16, 1024, 50257, 1024),
      gpt("gpt2-774m", 36, 20, 1280, 50257, 1024),
      gpt("gpt2-1558m", 48, 25, 1600, 50257, 1024),
      mlp("mlp-small", {64, 256, 256, 10}, MlpHead::kClassification),
      mlp("mlp-10m", {1024, 1536, 1536, 1536, 1536, 1024}, MlpHead::kRegression),
  };
}

int get_int(const nlohmann::json& j, const char* key) {
  ZDP_CHECK(j.contains(key), ConfigError, "[model config] missing \"{}\" (an integer)", key);
  ZDP_CHECK(j[key].is_number_integer(), ConfigError, "[model config] \"{}\" must be an integer, got {}", key,
            j[key].dump());
  const auto v = j[key].get<long long>();
  ZDP_CHECK(v >= 1 && v <= 1'000'000'000, ConfigError, "[model config] \"{}\" is {}, must be in [1, 1e9]", key, v);
  return static_cast<int>(v);
}

void check_keys(const nlohmann::json& j, const std::set<std::string>& allowed) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    // zerodp plan's former schema ({"type": "gpt", ..., "context": T}).
    ZDP_CHECK(it.key() != "context" || allowed.count("max_seq_len") == 0, ConfigError,
              "[model config] unknown key \"context\": write \"max_seq_len\" (the longest sequence; the model "
              "schema is what `zerodp model info` and `zerodp train --model` take)");
    ZDP_CHECK(allowed.count(it.key()) > 0, ConfigError, "[model config] unknown key \"{}\"; allowed: {}", it.key(),
              fmt::join(allowed, ", "));
  }
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : presets()) names.push_back(p.name);
  return names;
}

ModelConfig model_preset(std::string_view name) {
  for (auto& p : presets()) {
    if (p.name == name) return p;
  }
  ZDP_THROW(ConfigError, "[model] unknown model \"{}\"; use one of {} or a JSON config (file.json or '{{...}}')", name,
            fmt::join(model_preset_names(), ", "));
}

ModelConfig model_config_from_json(std::string_view text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    ZDP_THROW(ConfigError, "[model config] not valid JSON: {}", e.what());
  }
  ZDP_CHECK(j.is_object(), ConfigError, "[model config] expected a JSON object, got {}", j.type_name());
  ZDP_CHECK(!j.contains("type") || j.contains("kind"), ConfigError,
            "[model config] unknown key \"type\": write \"kind\": \"gpt\" or \"mlp\" (and \"max_seq_len\" for "
            "\"context\"; the model schema is what `zerodp model info` and `zerodp train --model` take)");
  ZDP_CHECK(j.contains("kind") && j["kind"].is_string(), ConfigError,
            "[model config] missing \"kind\": \"gpt\" or \"mlp\"");
  const std::string kind = j["kind"].get<std::string>();
  ModelConfig c;
  c.name = "custom";
  if (kind == "gpt") {
    check_keys(j, {"kind", "layers", "heads", "channels", "vocab", "max_seq_len", "padded_vocab"});
    c.kind = ModelKind::kGpt;
    c.gpt.layers = get_int(j, "layers");
    c.gpt.heads = get_int(j, "heads");
    c.gpt.channels = get_int(j, "channels");
    c.gpt.vocab = get_int(j, "vocab");
    c.gpt.max_seq_len = get_int(j, "max_seq_len");
    c.gpt.padded_vocab = j.contains("padded_vocab") ? get_int(j, "padded_vocab") : padded_vocab_for(c.gpt.vocab);
    c.gpt.validate();
  } else if (kind == "mlp") {
    check_keys(j, {"kind", "widths", "head"});
    c.kind = ModelKind::kMlp;
    ZDP_CHECK(j.contains("widths") && j["widths"].is_array(), ConfigError,
              "[model config] missing \"widths\": [in, hidden..., out]");
    for (const auto& w : j["widths"]) {
      ZDP_CHECK(w.is_number_integer() && w.get<long long>() >= 1 && w.get<long long>() <= 1'000'000, ConfigError,
                "[model config] widths must be integers in [1, 1e6], got {}", w.dump());
      c.mlp.widths.push_back(w.get<int>());
    }
    const std::string head = j.value("head", "regression");
    ZDP_CHECK(head == "regression" || head == "classification", ConfigError,
              "[model config] head \"{}\" must be \"regression\" or \"classification\"", head);
    c.mlp.head = head == "regression" ? MlpHead::kRegression : MlpHead::kClassification;
    c.mlp.validate();
  } else {
    ZDP_THROW(ConfigError, "[model config] kind \"{}\" must be \"gpt\" or \"mlp\"", kind);
  }
  return c;
}

std::string model_config_json(const ModelConfig& c) {
  nlohmann::ordered_json j;
  if (c.kind == ModelKind::kGpt) {
    j["kind"] = "gpt";
    j["layers"] = c.gpt.layers;
    j["heads"] = c.gpt.heads;
    j["channels"] = c.gpt.channels;
    j["vocab"] = c.gpt.vocab;
    j["max_seq_len"] = c.gpt.max_seq_len;
    j["padded_vocab"] = c.gpt.padded_vocab;
  } else {
    j["kind"] = "mlp";
    j["widths"] = c.mlp.widths;
    j["head"] = c.mlp.head == MlpHead::kClassification ? "classification" : "regression";
  }
  return j.dump();
}

ModelConfig resolve_model_config(std::string_view s) {
  const size_t first = s.find_first_not_of(" \t\n\r");
  if (first != std::string_view::npos && s[first] == '{') return model_config_from_json(s);
  if (s.size() > 5 && s.substr(s.size() - 5) == ".json") {
    std::ifstream in{std::string(s)};
    ZDP_CHECK(in.good(), ConfigError, "[model config] cannot open {}", s);
    std::stringstream buf;
    buf << in.rdbuf();
    return model_config_from_json(buf.str());
  }
  return model_preset(s);
}

std::unique_ptr<Model> make_model(const ModelConfig& config) {
  if (config.kind == ModelKind::kGpt) return std::make_unique<Gpt>(config.gpt);
  return std::make_unique<Mlp>(config.mlp);
}

size_t num_params(const ModelConfig& config) {
  return config.kind == ModelKind::kGpt ? gpt_num_params(config.gpt) : mlp_num_params(config.mlp);
}

}  // namespace zerodp::model
