// SPDX-License-Identifier: Apache-2.0
#include "plan/memory_model.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/error.h"
#include "optim/adafactor.h"

namespace zerodp::plan {

optim::OptimizerConfig parse_optimizer(std::string_view name) {
  std::string s(name);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "adamw") return {.kind = optim::OptimizerKind::kAdamW};
  if (s == "adam") return {.kind = optim::OptimizerKind::kAdam};
  if (s == "sgd-momentum" || s == "sgdm" || s == "momentum" || s == "sgd_momentum") {
    return {.kind = optim::OptimizerKind::kSgd, .sgd = {.momentum = 0.9}};
  }
  if (s == "sgd") return {.kind = optim::OptimizerKind::kSgd};
  if (s == "lion") return {.kind = optim::OptimizerKind::kLion};
  if (s == "lion-bf16") return {.kind = optim::OptimizerKind::kLion, .lion = {.bf16_momentum = true}};
  if (s == "adam8bit") return {.kind = optim::OptimizerKind::kAdam8bit};
  if (s == "adafactor") return {.kind = optim::OptimizerKind::kAdafactor};
  ZDP_THROW(ConfigError,
            "[plan] unknown optimizer '{}': use adamw, adam, sgd-momentum, sgd, lion, lion-bf16, adam8bit or "
            "adafactor",
            name);
}

std::string_view optimizer_name(const optim::OptimizerConfig& optimizer) {
  if (optimizer.kind == optim::OptimizerKind::kSgd && optimizer.sgd.momentum > 0.0) return "sgd-momentum";
  return optim::optimizer_kind_name(optimizer.kind);
}

BytesPerParam bytes_per_param(Dtype precision, const optim::OptimizerConfig& optimizer) {
  const optim::OptimizerBytesPerParam k = optim::optimizer_bytes_per_param(optimizer, precision.is_low_precision());
  BytesPerParam b;
  b.params = static_cast<int>(precision.size());
  b.grads = static_cast<int>(precision.size());
  b.master = static_cast<int>(k.master);
  b.moment1 = static_cast<int>(k.moment1);
  b.moment2 = static_cast<int>(k.moment2);
  return b;
}

uint64_t moment_extra_bytes(std::span<const uint64_t> unit_counts, int embedding_unit, int ranks, int rank,
                            bool partitioned, const optim::OptimizerConfig& optimizer) {
  const optim::OptimizerBytesPerParam k = optim::optimizer_bytes_per_param(optimizer, false);
  if (k.quant_block == 0) return 0;
  check_ranks(ranks);
  const auto n = static_cast<uint64_t>(ranks), r = static_cast<uint64_t>(rank);
  uint64_t bytes = 0;
  for (size_t u = 0; u < unit_counts.size(); ++u) {
    const uint64_t c = unit_counts[u];
    // comm::shard_range's rule: the first c % N ranks hold one more.
    const uint64_t offset = partitioned ? r * (c / n) + std::min(r, c % n) : 0;
    const uint64_t count = partitioned ? c / n + (r < c % n ? 1 : 0) : c;
    const optim::OptimizerBytesPerParam unit_k = optim::optimizer_bytes_per_param(
        optim::unit_optimizer_config(optimizer, c, static_cast<int>(u) == embedding_unit), false);
    bytes += optim::block_scale_bytes(unit_k, offset, count) + (unit_k.moment1 - k.moment1) * count;
  }
  return bytes;
}

uint64_t tensor_stats_bytes(std::span<const uint64_t> unit_counts,
                            std::span<const std::vector<optim::TensorShape>> unit_tensors, int ranks, int rank,
                            bool partitioned, const optim::OptimizerConfig& optimizer) {
  if (!optim::optimizer_bytes_per_param(optimizer, false).tensor_stats) return 0;
  check_ranks(ranks);
  const auto n = static_cast<uint64_t>(ranks), r = static_cast<uint64_t>(rank);
  uint64_t values = 0;
  for (size_t u = 0; u < unit_counts.size(); ++u) {
    const uint64_t c = unit_counts[u];
    const uint64_t offset = partitioned ? r * (c / n) + std::min(r, c % n) : 0;
    const uint64_t count = partitioned ? c / n + (r < c % n ? 1 : 0) : c;
    const std::span<const optim::TensorShape> tensors = u < unit_tensors.size()
                                                            ? std::span<const optim::TensorShape>(unit_tensors[u])
                                                            : std::span<const optim::TensorShape>();
    values += optim::adafactor_state_values(tensors, offset, count);
  }
  return 2 * values * sizeof(float);  // the statistics and their factors
}

void check_ranks(int ranks) {
  ZDP_CHECK(ranks >= 1, ConfigError, "[plan] the number of ranks must be at least 1, got {}", ranks);
}

uint64_t shard_elements(uint64_t num_params, int ranks) {
  check_ranks(ranks);
  const auto n = static_cast<uint64_t>(ranks);
  return num_params / n + (num_params % n != 0 ? 1 : 0);
}

uint64_t unit_shard_elements(std::span<const uint64_t> unit_counts, int ranks) {
  uint64_t total = 0;
  for (uint64_t c : unit_counts) total += shard_elements(c, ranks);
  return total;
}

ModelStateBytes model_state_bytes(uint64_t num_params, Stage stage, int ranks, const BytesPerParam& bpp) {
  check_ranks(ranks);
  return model_state_bytes_with_shard(num_params, shard_elements(num_params, ranks), stage, bpp);
}

ModelStateBytes model_state_bytes_with_shard(uint64_t num_params, uint64_t shard, Stage stage,
                                             const BytesPerParam& bpp) {
  const StageTraits& t = traits(stage);
  const uint64_t opt_elems = t.partitions_optimizer ? shard : num_params;
  const uint64_t grad_elems = t.partitions_grads ? shard : num_params;
  const uint64_t param_elems = t.partitions_params ? shard : num_params;
  ModelStateBytes m;
  m.params = param_elems * static_cast<uint64_t>(bpp.params);
  m.grads = grad_elems * static_cast<uint64_t>(bpp.grads);
  m.master = opt_elems * static_cast<uint64_t>(bpp.master);
  m.moment1 = opt_elems * static_cast<uint64_t>(bpp.moment1);
  m.moment2 = opt_elems * static_cast<uint64_t>(bpp.moment2);
  return m;
}

double paper_model_state_bytes(double num_params, Stage stage, int ranks, const BytesPerParam& bpp) {
  check_ranks(ranks);
  const StageTraits& t = traits(stage);
  const double n = ranks;
  const double per_rank = num_params / n;
  const double k = bpp.optimizer();
  const double opt = (t.partitions_optimizer ? per_rank : num_params) * k;
  const double grads = (t.partitions_grads ? per_rank : num_params) * bpp.grads;
  const double params = (t.partitions_params ? per_rank : num_params) * bpp.params;
  return params + grads + opt;
}

CommVolume comm_volume(uint64_t num_params, Stage stage, int ranks, Dtype comm_dtype, comm::QuantFormat weights,
                       comm::QuantFormat grads, int group) {
  check_ranks(ranks);
  if (group != 0 && group != ranks) {
    ZDP_CHECK(group >= 1 && group < ranks && ranks % group == 0, ConfigError,
              "[plan] --shard-group-size {} does not divide the {} ranks; use a divisor of {} or leave it out", group,
              ranks, ranks);
    ZDP_CHECK(stage != Stage::k0, ConfigError,
              "[plan] --shard-group-size {} needs stage 1, 2 or 3 (stage 0 partitions nothing)", group);
    CommVolume v = comm_volume(num_params, stage, group, comm_dtype, weights, grads);
    const auto replicas = static_cast<uint64_t>(ranks / group);
    const uint64_t piece = shard_elements(shard_elements(num_params, group), static_cast<int>(replicas));
    v.across_groups_sent_bytes = 2 * (replicas - 1) * piece * comm_dtype.size();
    v.sent_bytes += v.across_groups_sent_bytes;
    return v;
  }
  const StageTraits& t = traits(stage);
  CommVolume v;
  v.collectives = collectives_per_step(stage, 1);
  v.elements = static_cast<uint64_t>(v.collectives) * num_params;
  const uint64_t shard = shard_elements(num_params, ranks);
  const uint64_t peers = static_cast<uint64_t>(ranks - 1);
  // One collective over the whole model, plain or quantized.
  auto add = [&](comm::QuantFormat q, int times) {
    const auto n = static_cast<uint64_t>(times);
    if (q.codes == comm::Quantization::kNone) {
      v.bytes += n * num_params * comm_dtype.size();
      v.sent_bytes += n * peers * shard * comm_dtype.size();
    } else {
      v.bytes += n * comm::quantized_bytes(num_params, q);
      v.sent_bytes += n * peers * comm::quantized_bytes(shard, q);
    }
  };
  const comm::QuantFormat none{};
  if (t.reduce == GradReduce::kAllReduce) {
    add(none, v.collectives);  // the all-reduce: a reduce-scatter and an all-gather
  } else {
    add(grads, 1);                                                  // the gradients' reduce-scatter
    add(t.gathers_on_acquire ? weights : none, v.collectives - 1);  // the parameters' all-gather(s)
  }
  return v;
}

uint64_t max_params(uint64_t device_bytes, Stage stage, int ranks, const BytesPerParam& bpp) {
  check_ranks(ranks);
  auto fits = [&](uint64_t phi) { return model_state_bytes(phi, stage, ranks, bpp).total() <= device_bytes; };
  // Upper bound from the unpadded formula: per-rank bytes >= Φ x (min bytes
  // per parameter across the categories, divided by N), so Φ <= M N / 1 is safe
  // while the product stays in range; then binary search the exact count.
  const int total = bpp.total();
  if (total == 0) return 0;
  unsigned __int128 hi = static_cast<unsigned __int128>(device_bytes) * static_cast<unsigned>(ranks) + 1;
  const unsigned __int128 kLimit = (static_cast<unsigned __int128>(1) << 62) / 16;
  if (hi > kLimit) hi = kLimit;  // keep Φ x 16 x N in 64 bits inside model_state_bytes
  uint64_t lo = 0;
  uint64_t high = static_cast<uint64_t>(hi);
  if (fits(high)) return high;
  while (high - lo > 1) {
    const uint64_t mid = lo + (high - lo) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      high = mid;
    }
  }
  return lo;
}

}  // namespace zerodp::plan
