// SPDX-License-Identifier: Apache-2.0
#include "plan/activations.h"

#include <fmt/format.h>

#include "core/error.h"

namespace zerodp::plan {
namespace {

// One tensor of the lists in activations.h, its element count per micro-batch.
struct Rule {
  std::string name;
  std::string shape;
  uint64_t elements;
};

// Appends terms and keeps the running total; every tensor is padded to the
// alignment on its own, as the workspaces carve them.
class TermList {
 public:
  explicit TermList(ActivationEstimate& est) : est_(est) {}
  void add(const Rule& r, const char* role, uint64_t count, const std::string& prefix = "") {
    const uint64_t align = static_cast<uint64_t>(est_.config.align_elements);
    const uint64_t padded = (r.elements + align - 1) / align * align;
    ActivationTerm term{prefix + r.name, r.shape, role,
                        r.elements,      count,   padded * count * static_cast<uint64_t>(est_.config.element_bytes)};
    est_.total_bytes += term.bytes;
    est_.terms.push_back(std::move(term));
  }

 private:
  ActivationEstimate& est_;
};

void check_common(const ActivationConfig& c) {
  ZDP_CHECK(c.micro_batch >= 1, ConfigError, "[plan] --micro-batch must be at least 1, got {}", c.micro_batch);
  ZDP_CHECK(c.element_bytes >= 1, ConfigError, "[plan] activation element size must be positive");
  ZDP_CHECK(c.align_elements >= 1, ConfigError, "[plan] activation alignment must be at least 1 element");
}

}  // namespace

ActivationEstimate estimate_activations(const GptShape& shape, const ActivationConfig& config) {
  shape.validate();
  ActivationEstimate est;
  est.config = config;
  if (est.config.seq_len == 0) est.config.seq_len = shape.context;
  check_common(est.config);
  ZDP_CHECK(est.config.seq_len >= 1 && est.config.seq_len <= shape.context, ConfigError,
            "[plan] --seq-len {} must be between 1 and the model's context {}", est.config.seq_len, shape.context);

  const uint64_t b = static_cast<uint64_t>(est.config.micro_batch);
  const uint64_t t = static_cast<uint64_t>(est.config.seq_len);
  const uint64_t c = static_cast<uint64_t>(shape.channels);
  const uint64_t h = static_cast<uint64_t>(shape.heads);
  const uint64_t v = static_cast<uint64_t>(shape.vocab);
  const uint64_t l = static_cast<uint64_t>(shape.layers);
  const uint64_t n = b * t;
  const uint64_t btc = n * c;

  const std::vector<Rule> block_internals = {
      {"ln1 output", "B*T*C", btc},
      {"ln1 mean", "B*T", n},
      {"ln1 rstd", "B*T", n},
      {"qkv", "B*T*3C", 3 * btc},
      {"attention probabilities", "B*H*T*T", b * h * t * t},
      {"attention output", "B*T*C", btc},
      {"residual after attention", "B*T*C", btc},
      {"ln2 output", "B*T*C", btc},
      {"ln2 mean", "B*T", n},
      {"ln2 rstd", "B*T", n},
      {"fc output", "B*T*4C", 4 * btc},
      {"GELU output", "B*T*4C", 4 * btc},
  };
  const Rule block_output = {"block output", "B*T*C", btc};
  const std::vector<Rule> tail_rules = {
      {"final layernorm output", "B*T*C", btc},
      {"final layernorm mean", "B*T", n},
      {"final layernorm rstd", "B*T", n},
      {"logits", "B*T*V", n * v},
      {"losses", "B*T", n},
  };
  // What backward writes besides the kept tensors (GptWorkspace's d* slices).
  const std::vector<Rule> scratch_rules = {
      {"residual gradient", "B*T*C", btc},
      {"layernorm input gradient", "B*T*C", btc},
      {"attention output gradient", "B*T*C", btc},
      {"qkv gradient", "B*T*3C", 3 * btc},
      {"GELU output gradient", "B*T*4C", 4 * btc},
      {"fc output gradient", "B*T*4C", 4 * btc},
      {"attention probabilities gradient (one head)", "T*T", t * t},
  };

  TermList terms(est);
  terms.add({"embedding output", "B*T*C", btc}, "kept", 1);
  if (est.config.checkpointing) {
    terms.add(block_output, "checkpoint", l);
    for (const Rule& r : block_internals) terms.add(r, "recompute", 1);
  } else {
    for (const Rule& r : block_internals) terms.add(r, "kept", l);
    terms.add(block_output, "kept", l);
  }
  for (const Rule& r : tail_rules) terms.add(r, "kept", 1);
  if (est.config.include_backward_scratch) {
    for (const Rule& r : scratch_rules) terms.add(r, "backward scratch", 1);
  }
  return est;
}

ActivationEstimate estimate_mlp_activations(std::span<const int> widths, const ActivationConfig& config) {
  ZDP_CHECK(widths.size() >= 2, ConfigError, "[plan] an MLP needs at least [in, out] widths, got {}", widths.size());
  ActivationEstimate est;
  est.config = config;
  est.config.seq_len = 1;
  est.config.checkpointing = false;
  est.config.align_elements = 1;
  check_common(est.config);
  for (int w : widths) ZDP_CHECK(w >= 1, ConfigError, "[plan] MLP width {} must be at least 1", w);
  const uint64_t b = static_cast<uint64_t>(est.config.micro_batch);
  const size_t layers = widths.size() - 1;

  TermList terms(est);
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

}  // namespace zerodp::plan
