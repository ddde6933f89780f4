// SPDX-License-Identifier: Apache-2.0
#include "model/llama_family.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"
#include "model/llama.h"
#include "model/schema_json.h"

namespace zerodp::model {
namespace {

SpecPtr llama_spec(const LlamaConfig& c) { return std::make_shared<const LlamaSpec>(c); }

struct Shape {
  int layers, hidden, heads, kv_heads, head_dim, intermediate, vocab, max_seq_len;
};

Preset preset(std::string name, Shape s, double theta, double eps, bool qkv_bias = false,
              LlamaRopeScaling scaling = {}) {
  LlamaConfig c;
  c.layers = s.layers;
  c.hidden = s.hidden;
  c.heads = s.heads;
  c.kv_heads = s.kv_heads;
  c.head_dim = s.head_dim;
  c.intermediate = s.intermediate;
  c.vocab = s.vocab;
  c.max_seq_len = s.max_seq_len;
  c.tied = true;  // all five tie the LM head to the embedding
  c.qkv_bias = qkv_bias;
  c.rope_theta = theta;
  c.norm_eps = eps;
  c.rope_scaling = scaling;
  return {std::move(name), llama_spec(c)};
}

bool schema_bool(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.contains(key)) return fallback;
  ZDP_CHECK(j[key].is_boolean(), ConfigError, "[model config] \"{}\" must be true or false, got {}", key,
            j[key].dump());
  return j[key].get<bool>();
}

double schema_number(const nlohmann::json& j, const char* key, double fallback) {
  if (!j.contains(key)) return fallback;
  ZDP_CHECK(j[key].is_number(), ConfigError, "[model config] \"{}\" must be a number, got {}", key, j[key].dump());
  return j[key].get<double>();
}

SpecPtr llama_from_json(const nlohmann::json& j) {
  schema_check_keys(j, {"kind", "vocab", "hidden", "layers", "heads", "kv_heads", "head_dim", "intermediate",
                        "max_seq_len", "tied", "qkv_bias", "rope_theta", "norm_eps", "rope_scaling"});
  LlamaConfig c;
  c.vocab = schema_int(j, "vocab");
  c.hidden = schema_int(j, "hidden");
  c.layers = schema_int(j, "layers");
  c.heads = schema_int(j, "heads");
  c.kv_heads = schema_int(j, "kv_heads");
  c.head_dim = schema_int(j, "head_dim");
  c.intermediate = schema_int(j, "intermediate");
  c.max_seq_len = schema_int(j, "max_seq_len");
  c.tied = schema_bool(j, "tied", true);
  c.qkv_bias = schema_bool(j, "qkv_bias", false);
  c.rope_theta = schema_number(j, "rope_theta", 10000.0);
  c.norm_eps = schema_number(j, "norm_eps", 1e-5);
  if (j.contains("rope_scaling")) {
    const nlohmann::json& r = j["rope_scaling"];
    ZDP_CHECK(r.is_object(), ConfigError,
              "[model config] \"rope_scaling\" must be an object {{\"factor\", \"low_freq_factor\", "
              "\"high_freq_factor\", \"original_max_position\"}}, got {}",
              r.dump());
    schema_check_keys(r, {"factor", "low_freq_factor", "high_freq_factor", "original_max_position"});
    c.rope_scaling.llama3 = true;
    c.rope_scaling.factor = schema_number(r, "factor", 8.0);
    c.rope_scaling.low_freq_factor = schema_number(r, "low_freq_factor", 1.0);
    c.rope_scaling.high_freq_factor = schema_number(r, "high_freq_factor", 4.0);
    c.rope_scaling.original_max_position = schema_int(r, "original_max_position");
  }
  return llama_spec(c);
}

}  // namespace

LlamaSpec::LlamaSpec(const LlamaConfig& config) : config_(config) { config_.validate(); }

nlohmann::ordered_json LlamaSpec::to_json() const {
  const LlamaConfig& c = config_;
  nlohmann::ordered_json j;
  j["kind"] = "llama";
  j["vocab"] = c.vocab;
  j["hidden"] = c.hidden;
  j["layers"] = c.layers;
  j["heads"] = c.heads;
  j["kv_heads"] = c.kv_heads;
  j["head_dim"] = c.head_dim;
  j["intermediate"] = c.intermediate;
  j["max_seq_len"] = c.max_seq_len;
  j["tied"] = c.tied;
  j["qkv_bias"] = c.qkv_bias;
  j["rope_theta"] = c.rope_theta;
  j["norm_eps"] = c.norm_eps;
  if (c.rope_scaling.llama3) {
    j["rope_scaling"] = {{"factor", c.rope_scaling.factor},
                         {"low_freq_factor", c.rope_scaling.low_freq_factor},
                         {"high_freq_factor", c.rope_scaling.high_freq_factor},
                         {"original_max_position", c.rope_scaling.original_max_position}};
  }
  return j;
}

std::unique_ptr<Model> LlamaSpec::build() const { return std::make_unique<Llama>(config_); }

size_t LlamaSpec::num_params() const { return llama_num_params(config_); }

std::string LlamaSpec::describe() const { return config_.describe(); }

std::optional<ActivationEstimate> LlamaSpec::estimate_activations(const ActivationConfig& config) const {
  const LlamaConfig& c = config_;
  ActivationEstimate est;
  est.config = config;
  if (est.config.seq_len == 0) est.config.seq_len = c.max_seq_len;
  ActivationTerms terms(est);
  ZDP_CHECK(est.config.seq_len >= 1 && est.config.seq_len <= c.max_seq_len, ConfigError,
            "[plan] --seq-len {} must be between 1 and the model's context {}", est.config.seq_len, c.max_seq_len);
  const uint64_t b = static_cast<uint64_t>(est.config.micro_batch), t = static_cast<uint64_t>(est.config.seq_len);
  const uint64_t n = b * t, C = c.hidden, F = c.intermediate, V = c.vocab, L = c.layers;
  const uint64_t dq = uint64_t(c.heads) * c.head_dim, dkv = uint64_t(c.kv_heads) * c.head_dim;
  const std::vector<ActivationRule> block_internals = {
      {"input norm output", "B*T*C", n * C, true},
      {"input norm rstd", "B*T", n},
      {"q (after RoPE)", "B*T*H*d", n * dq, true},
      {"k (after RoPE)", "B*T*Hkv*d", n * dkv, true},
      {"v", "B*T*Hkv*d", n * dkv, true},
      {"attention probabilities", "B*H*T*T", b * uint64_t(c.heads) * t * t},
      {"attention output", "B*T*H*d", n * dq, true},
      {"residual after attention", "B*T*C", n * C},
      {"post-attention norm output", "B*T*C", n * C, true},
      {"post-attention norm rstd", "B*T", n},
      {"gate", "B*T*F", n * F},
      {"up", "B*T*F", n * F},
      {"silu(gate)*up", "B*T*F", n * F, true},
  };
  const ActivationRule block_output = {"block output", "B*T*C", n * C};
  // The product inputs' four fp32 working buffers (LlamaWorkspace).
  if (terms.bf16_product_inputs()) {
    terms.add({"product input working buffer (input norm output, attention output, silu(gate)*up)", "B*T*max(C,H*d,F)",
               n * std::max({C, dq, F})},
              "working copy", 1);
    terms.add({"product input working buffer (q, post-attention norm output)", "B*T*max(H*d,C)", n * std::max(dq, C)},
              "working copy", 1);
    terms.add({"product input working buffer (k)", "B*T*Hkv*d", n * dkv}, "working copy", 1);
    terms.add({"product input working buffer (v)", "B*T*Hkv*d", n * dkv}, "working copy", 1);
  }
  terms.add({"embedding output", "B*T*C", n * C}, "kept", 1);
  terms.add_block_internals(block_internals, L);
  terms.add(block_output, est.config.checkpointing ? "checkpoint" : "kept", L);
  terms.add({"final norm output", "B*T*C", n * C}, "kept", 1);
  terms.add({"final norm rstd", "B*T", n}, "kept", 1);
  terms.add({"logits", "B*T*V", n * V}, "kept", 1);
  terms.add({"losses", "B*T", n}, "kept", 1);
  if (est.config.include_backward_scratch) {
    const std::vector<ActivationRule> scratch = {
        {"residual gradient", "B*T*C", n * C},
        {"norm output gradient", "B*T*C", n * C},
        {"attention output gradient", "B*T*H*d", n * dq},
        {"q gradient", "B*T*H*d", n * dq},
        {"k gradient", "B*T*Hkv*d", n * dkv},
        {"v gradient", "B*T*Hkv*d", n * dkv},
        {"silu(gate)*up gradient", "B*T*F", n * F},
        {"gate gradient", "B*T*F", n * F},
        {"up gradient", "B*T*F", n * F},
        {"attention probabilities gradient (one head)", "T*T", t * t},
    };
    for (const ActivationRule& r : scratch) terms.add(r, "backward scratch", 1);
    const uint64_t half = uint64_t(c.head_dim) / 2;
    terms.add_unpadded({"RoPE cosines", "T*d/2", t * half}, "backward scratch", 1);
    terms.add_unpadded({"RoPE sines", "T*d/2", t * half}, "backward scratch", 1);
  }
  return est;
}

Family llama_family() {
  const LlamaRopeScaling llama3{true, 32.0, 1.0, 4.0, 8192};
  return {.kind = "llama",
          .schema = R"({"kind": "llama", "vocab", "hidden", "layers", "heads", "kv_heads", "head_dim", )"
                    R"("intermediate", "max_seq_len", "tied"?, "qkv_bias"?, "rope_theta"?, "norm_eps"?, )"
                    R"("rope_scaling"?})",
          .from_json = llama_from_json,
          .presets = {
              preset("llama-tiny", {4, 128, 4, 2, 32, 352, 256, 256}, 10000.0, 1e-5),
              preset("smollm2-135m", {30, 576, 9, 3, 64, 1536, 49152, 8192}, 100000.0, 1e-5),
              preset("smollm2-360m", {32, 960, 15, 5, 64, 2560, 49152, 8192}, 10000.0, 1e-5),
              preset("qwen2.5-0.5b", {24, 896, 14, 2, 64, 4864, 151936, 32768}, 1000000.0, 1e-6, true),
              preset("llama3.2-1b", {16, 2048, 32, 8, 64, 8192, 128256, 131072}, 500000.0, 1e-5, false, llama3),
          }};
}

ModelConfig llama_model_config(std::string name, const LlamaConfig& config) {
  return {std::move(name), llama_spec(config)};
}

}  // namespace zerodp::model
