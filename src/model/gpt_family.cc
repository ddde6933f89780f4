// SPDX-License-Identifier: Apache-2.0
#include "model/gpt_family.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/gpt.h"
#include "model/schema_json.h"

namespace zerodp::model {
namespace {

SpecPtr gpt_spec(const GptConfig& c) { return std::make_shared<const GptSpec>(c); }

Preset preset(std::string name, int layers, int heads, int channels, int vocab, int max_seq_len) {
  return {std::move(name), gpt_spec({max_seq_len, vocab, padded_vocab_for(vocab), layers, heads, channels})};
}

// A GPT whose embedding has exactly `vocab` rows, as PyTorch's GPT counts it.
Preset unpadded(std::string name, int layers, int heads, int channels, int vocab, int max_seq_len) {
  return {std::move(name), gpt_spec({max_seq_len, vocab, vocab, layers, heads, channels})};
}

SpecPtr gpt_from_json(const nlohmann::json& j) {
  schema_check_keys(j, {"kind", "layers", "heads", "channels", "vocab", "max_seq_len", "padded_vocab"});
  GptConfig c;
  c.layers = schema_int(j, "layers");
  c.heads = schema_int(j, "heads");
  c.channels = schema_int(j, "channels");
  c.vocab = schema_int(j, "vocab");
  c.max_seq_len = schema_int(j, "max_seq_len");
  c.padded_vocab = j.contains("padded_vocab") ? schema_int(j, "padded_vocab") : padded_vocab_for(c.vocab);
  return gpt_spec(c);
}

}  // namespace

GptSpec::GptSpec(const GptConfig& config) : config_(config) { config_.validate(); }

nlohmann::ordered_json GptSpec::to_json() const {
  nlohmann::ordered_json j;
  j["kind"] = "gpt";
  j["layers"] = config_.layers;
  j["heads"] = config_.heads;
  j["channels"] = config_.channels;
  j["vocab"] = config_.vocab;
  j["max_seq_len"] = config_.max_seq_len;
  j["padded_vocab"] = config_.padded_vocab;
  return j;
}

std::unique_ptr<Model> GptSpec::build() const { return std::make_unique<Gpt>(config_); }

size_t GptSpec::num_params() const { return gpt_num_params(config_); }

std::string GptSpec::describe() const { return config_.describe(); }

std::optional<ActivationEstimate> GptSpec::estimate_activations(const ActivationConfig& config) const {
  ActivationEstimate est;
  est.config = config;
  if (est.config.seq_len == 0) est.config.seq_len = config_.max_seq_len;
  ActivationTerms terms(est);
  ZDP_CHECK(est.config.seq_len >= 1 && est.config.seq_len <= config_.max_seq_len, ConfigError,
            "[plan] --seq-len {} must be between 1 and the model's context {}", est.config.seq_len,
            config_.max_seq_len);

  const uint64_t b = static_cast<uint64_t>(est.config.micro_batch);
  const uint64_t t = static_cast<uint64_t>(est.config.seq_len);
  const uint64_t c = static_cast<uint64_t>(config_.channels);
  const uint64_t h = static_cast<uint64_t>(config_.heads);
  const uint64_t v = static_cast<uint64_t>(config_.padded_vocab);
  const uint64_t l = static_cast<uint64_t>(config_.layers);
  const uint64_t n = b * t;
  const uint64_t btc = n * c;

  const std::vector<ActivationRule> block_internals = {
      {"ln1 output", "B*T*C", btc, true},
      {"ln1 mean", "B*T", n},
      {"ln1 rstd", "B*T", n},
      {"qkv", "B*T*3C", 3 * btc, true},
      {"attention probabilities", "B*H*T*T", b * h * t * t},
      {"attention output", "B*T*C", btc, true},
      {"residual after attention", "B*T*C", btc},
      {"ln2 output", "B*T*C", btc, true},
      {"ln2 mean", "B*T", n},
      {"ln2 rstd", "B*T", n},
      {"fc output", "B*T*4C", 4 * btc},
      {"GELU output", "B*T*4C", 4 * btc, true},
  };
  const ActivationRule block_output = {"block output", "B*T*C", btc};
  const std::vector<ActivationRule> tail_rules = {
      {"final layernorm output", "B*T*C", btc},
      {"final layernorm mean", "B*T", n},
      {"final layernorm rstd", "B*T", n},
      {"logits", "B*T*V", n * v},
      {"losses", "B*T", n},
  };
  // What backward writes besides the kept tensors (GptWorkspace's d* slices).
  const std::vector<ActivationRule> scratch_rules = {
      {"residual gradient", "B*T*C", btc},
      {"layernorm input gradient", "B*T*C", btc},
      {"attention output gradient", "B*T*C", btc},
      {"qkv gradient", "B*T*3C", 3 * btc},
      {"GELU output gradient", "B*T*4C", 4 * btc},
      {"fc output gradient", "B*T*4C", 4 * btc},
      {"attention probabilities gradient (one head)", "T*T", t * t},
  };

  // The product inputs' two fp32 working buffers (GptWorkspace).
  if (terms.bf16_product_inputs() && l > 0) {
    terms.add({"product input working buffer (ln1, attention output, GELU output)", "B*T*4C", 4 * btc}, "working copy",
              1);
    terms.add({"product input working buffer (qkv, ln2)", "B*T*3C", 3 * btc}, "working copy", 1);
  }
  terms.add({"embedding output", "B*T*C", btc}, "kept", 1);
  terms.add_block_internals(block_internals, l);
  terms.add(block_output, est.config.checkpointing ? "checkpoint" : "kept", l);
  for (const ActivationRule& r : tail_rules) terms.add(r, "kept", 1);
  if (est.config.include_backward_scratch) {
    for (const ActivationRule& r : scratch_rules) terms.add(r, "backward scratch", 1);
  }
  return est;
}

Family gpt_family() {
  return {.kind = "gpt",
          .schema = R"({"kind": "gpt", "layers", "heads", "channels", "vocab", "max_seq_len", "padded_vocab"?})",
          .from_json = gpt_from_json,
          .presets = {
              preset("gpt-tiny", 4, 4, 128, 256, 128),
              preset("gpt-10m", 6, 8, 320, 8192, 256),
              preset("gpt-bench", 6, 6, 384, 50257, 64),
              unpadded("gpt-30m", 6, 6, 384, 50257, 64),
              preset("gpt2-124m", 12, 12, 768, 50257, 1024),
              preset("gpt2-350m", 24, 16, 1024, 50257, 1024),
              preset("gpt2-774m", 36, 20, 1280, 50257, 1024),
              preset("gpt2-1558m", 48, 25, 1600, 50257, 1024),
          }};
}

const GptConfig& require_gpt(const ModelConfig& model, std::string_view op) {
  const GptSpec* gpt = model.as<GptSpec>();
  ZDP_CHECK(gpt != nullptr, ConfigError, "[{}] needs a GPT model (\"kind\": \"gpt\"); {} is a {} model", op,
            model.name.empty() ? std::string("the model") : model.name, model.kind());
  return gpt->config();
}

ModelConfig gpt_model_config(std::string name, const GptConfig& config) { return {std::move(name), gpt_spec(config)}; }

}  // namespace zerodp::model
