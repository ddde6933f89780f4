// SPDX-License-Identifier: Apache-2.0
#include "model/activation_estimate.h"

#include "core/error.h"

namespace zerodp::model {

ActivationTerms::ActivationTerms(ActivationEstimate& est) : est_(est) {
  const ActivationConfig& c = est.config;
  ZDP_CHECK(c.micro_batch >= 1, ConfigError, "[plan] --micro-batch must be at least 1, got {}", c.micro_batch);
  ZDP_CHECK(c.element_bytes >= 1, ConfigError, "[plan] activation element size must be positive");
  ZDP_CHECK(c.align_elements >= 1, ConfigError, "[plan] activation alignment must be at least 1 element");
}

void ActivationTerms::add(const ActivationRule& r, const char* role, uint64_t count) {
  add_slots(r.name, r, role, count, r.elements);
}

void ActivationTerms::add_bf16(const ActivationRule& r, const char* role, uint64_t count) {
  add_slots(r.name + " (bf16)", r, role, count, (r.elements + 1) / 2);
}

void ActivationTerms::add_slots(std::string name, const ActivationRule& r, const char* role, uint64_t count,
                                uint64_t slots) {
  const uint64_t align = static_cast<uint64_t>(est_.config.align_elements);
  const uint64_t padded = (slots + align - 1) / align * align;
  ActivationTerm term{std::move(name), r.shape, role,
                      r.elements,      count,   padded * count * static_cast<uint64_t>(est_.config.element_bytes)};
  est_.total_bytes += term.bytes;
  est_.terms.push_back(std::move(term));
}

bool ActivationTerms::bf16_product_inputs() const {
  return est_.config.bf16_product_inputs && !est_.config.checkpointing;
}

void ActivationTerms::add_block_internals(const std::vector<ActivationRule>& rules, uint64_t layers) {
  for (const ActivationRule& r : rules) {
    if (est_.config.checkpointing) {
      add(r, "recompute", 1);
    } else if (r.product_input && bf16_product_inputs()) {
      add_bf16(r, "kept", layers);
    } else {
      add(r, "kept", layers);
    }
  }
}

void ActivationTerms::add_unpadded(const ActivationRule& r, const char* role, uint64_t count) {
  ActivationTerm term{r.name,     r.shape, role,
                      r.elements, count,   r.elements * count * static_cast<uint64_t>(est_.config.element_bytes)};
  est_.total_bytes += term.bytes;
  est_.terms.push_back(std::move(term));
}

}  // namespace zerodp::model
