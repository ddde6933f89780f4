#include "plan/activations.h"

#include "core/error.h"

namespace zerodp::plan {
namespace {

// One tensor of the list in activations.h, its element count per micro-batch.
struct Rule {
  const char* name;
  const char* shape;
  uint64_t elements;
};

}  // namespace

ActivationEstimate estimate_activations(const GptShape& shape, const ActivationConfig& config) {
  shape.validate();
  ActivationEstimate est;
  est.config = config;
  if (est.config.seq_len == 0) est.config.seq_len = shape.context;
  ZDP_CHECK(est.config.micro_batch >= 1, ConfigError, "[plan] --micro-batch must be at least 1, got {}",
            est.config.micro_batch);
  ZDP_CHECK(est.config.seq_len >= 1 && est.config.seq_len <= shape.context, ConfigError,
            "[plan] --seq-len {} must be between 1 and the model's context {}", est.config.seq_len, shape.context);
  ZDP_CHECK(est.config.element_bytes >= 1, ConfigError, "[plan] activation element size must be positive");

  const uint64_t b = static_cast<uint64_t>(est.config.micro_batch);
  const uint64_t t = static_cast<uint64_t>(est.config.seq_len);
  const uint64_t c = static_cast<uint64_t>(shape.channels);
  const uint64_t h = static_cast<uint64_t>(shape.heads);
  const uint64_t v = static_cast<uint64_t>(shape.vocab);
  const uint64_t l = static_cast<uint64_t>(shape.layers);
  const uint64_t btc = b * t * c;

  const Rule head_rules[] = {{"embedding output", "B*T*C", btc}};
  const Rule block_internals[] = {
      {"ln1 output", "B*T*C", btc},
      {"ln1 mean and rstd", "2*B*T", 2 * b * t},
      {"qkv", "B*T*3C", 3 * btc},
      {"attention probabilities", "B*H*T*T", b * h * t * t},
      {"attention output", "B*T*C", btc},
      {"residual after attention", "B*T*C", btc},
      {"ln2 output", "B*T*C", btc},
      {"ln2 mean and rstd", "2*B*T", 2 * b * t},
      {"fc output", "B*T*4C", 4 * btc},
      {"GELU output", "B*T*4C", 4 * btc},
  };
  const Rule block_output = {"block output", "B*T*C", btc};
  const Rule tail_rules[] = {
      {"final layernorm output", "B*T*C", btc},
      {"final layernorm mean and rstd", "2*B*T", 2 * b * t},
      {"logits", "B*T*V", b * t * v},
      {"losses", "B*T", b * t},
  };

  const uint64_t bytes = static_cast<uint64_t>(est.config.element_bytes);
  auto add = [&](const Rule& r, const char* role, uint64_t count, const char* prefix = "") {
    ActivationTerm term{std::string(prefix) + r.name, r.shape, role, r.elements, count,
                        r.elements * count * bytes};
    est.total_bytes += term.bytes;
    est.terms.push_back(std::move(term));
  };

  for (const Rule& r : head_rules) add(r, "kept", 1);
  if (est.config.checkpointing) {
    add(block_output, "checkpoint", l);
    for (const Rule& r : block_internals) add(r, "recompute", 1);
  } else {
    for (const Rule& r : block_internals) add(r, "kept", l);
    add(block_output, "kept", l);
  }
  for (const Rule& r : tail_rules) add(r, "kept", 1);
  if (est.config.include_backward_scratch) {
    add({"residual gradient", "B*T*C", btc}, "backward scratch", 1);
    for (const Rule& r : block_internals) {
      add(r, "backward scratch", 1, "gradient of ");
    }
  }
  return est;
}

}  // namespace zerodp::plan
