// SPDX-License-Identifier: Apache-2.0
#include "model/mlp_family.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/schema_json.h"

namespace zerodp::model {
namespace {

Preset preset(std::string name, std::vector<int> widths, MlpHead head) {
  return {std::move(name), std::make_shared<const MlpSpec>(MlpConfig{std::move(widths), head})};
}

SpecPtr mlp_from_json(const nlohmann::json& j) {
  schema_check_keys(j, {"kind", "widths", "head"});
  MlpConfig c;
  ZDP_CHECK(j.contains("widths") && j["widths"].is_array(), ConfigError,
            "[model config] missing \"widths\": [in, hidden..., out]");
  for (const auto& w : j["widths"]) {
    ZDP_CHECK(w.is_number_integer() && w.get<long long>() >= 1 && w.get<long long>() <= 1'000'000, ConfigError,
              "[model config] widths must be integers in [1, 1e6], got {}", w.dump());
    c.widths.push_back(w.get<int>());
  }
  const std::string head = j.value("head", "regression");
  ZDP_CHECK(head == "regression" || head == "classification", ConfigError,
            "[model config] head \"{}\" must be \"regression\" or \"classification\"", head);
  c.head = head == "regression" ? MlpHead::kRegression : MlpHead::kClassification;
  return std::make_shared<const MlpSpec>(std::move(c));
}

}  // namespace

MlpSpec::MlpSpec(MlpConfig config) : config_(std::move(config)) { config_.validate(); }

nlohmann::ordered_json MlpSpec::to_json() const {
  nlohmann::ordered_json j;
  j["kind"] = "mlp";
  j["widths"] = config_.widths;
  j["head"] = config_.head == MlpHead::kClassification ? "classification" : "regression";
  return j;
}

std::unique_ptr<Model> MlpSpec::build() const { return std::make_unique<Mlp>(config_); }

size_t MlpSpec::num_params() const { return mlp_num_params(config_); }

std::string MlpSpec::describe() const { return config_.describe(); }

std::optional<ActivationEstimate> MlpSpec::estimate_activations(const ActivationConfig& config) const {
  ZDP_CHECK(!config.checkpointing, ConfigError,
            "[plan] activation checkpointing applies to GPT models only: turn it off for an MLP");
  const std::vector<int>& widths = config_.widths;
  ActivationEstimate est;
  est.config = config;
  est.config.seq_len = 1;
  est.config.align_elements = 1;
  ActivationTerms terms(est);
  const uint64_t b = static_cast<uint64_t>(est.config.micro_batch);
  const size_t layers = widths.size() - 1;

  terms.add({"input features", "B*w0", b * static_cast<uint64_t>(widths[0])}, "kept", 1);
  for (size_t i = 0; i < layers; ++i) {
    const uint64_t out = b * static_cast<uint64_t>(widths[i + 1]);
    const std::string w = fmt::format("B*w{}", i + 1);
    terms.add({fmt::format("fc{} output", i), w, out}, "kept", 1);
    if (i + 1 < layers) terms.add({fmt::format("fc{} GELU output", i), w, out}, "kept", 1);
  }
  terms.add({"target values", fmt::format("B*w{}", layers), b * static_cast<uint64_t>(widths.back())}, "kept", 1);
  terms.add({"losses", "B", b}, "kept", 1);
  terms.add({"labels (int32)", "B", b}, "kept", 1);
  if (est.config.include_backward_scratch) {
    for (size_t i = 0; i < layers; ++i) {
      const uint64_t out = b * static_cast<uint64_t>(widths[i + 1]);
      const std::string w = fmt::format("B*w{}", i + 1);
      terms.add({fmt::format("fc{} output gradient", i), w, out}, "backward scratch", 1);
      if (i + 1 < layers) terms.add({fmt::format("fc{} GELU output gradient", i), w, out}, "backward scratch", 1);
    }
  }
  return est;
}

Family mlp_family() {
  return {.kind = "mlp",
          .schema = R"({"kind": "mlp", "widths": [in, hidden..., out], "head": "classification"|"regression"})",
          .from_json = mlp_from_json,
          .presets = {
              preset("mlp-small", {64, 256, 256, 10}, MlpHead::kClassification),
              preset("mlp-10m", {1024, 1536, 1536, 1536, 1536, 1024}, MlpHead::kRegression),
          }};
}

}  // namespace zerodp::model
