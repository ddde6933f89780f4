// SPDX-License-Identifier: Apache-2.0
#include "zero/memory_ledger.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "core/error.h"

namespace zerodp::zero {
namespace {

void add_to(ByteCounts& counts, int64_t delta) {
  counts.current = static_cast<uint64_t>(static_cast<int64_t>(counts.current) + delta);
  counts.peak = std::max(counts.peak, counts.current);
}

void json_counts(nlohmann::json& out, std::string_view name, const ByteCounts& c) {
  out[std::string(name)] = {{"current", c.current}, {"peak", c.peak}};
}

}  // namespace

std::string_view memory_category_name(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParams:
      return "params";
    case MemoryCategory::kGrads:
      return "grads";
    case MemoryCategory::kMaster:
      return "master";
    case MemoryCategory::kAdamM:
      return "adam_m";
    case MemoryCategory::kAdamV:
      return "adam_v";
    case MemoryCategory::kGathered:
      return "gathered";
    case MemoryCategory::kBuckets:
      return "buckets";
    case MemoryCategory::kActivations:
      return "activations";
    case MemoryCategory::kComm:
      return "comm";
    case MemoryCategory::kScratch:
      return "scratch";
    case MemoryCategory::kOffload:
      return "offload";
  }
  return "?";
}

bool is_model_state(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParams:
    case MemoryCategory::kGrads:
    case MemoryCategory::kMaster:
    case MemoryCategory::kAdamM:
    case MemoryCategory::kAdamV:
      return true;
    default:
      return false;
  }
}

nlohmann::json to_json(const LedgerSnapshot& snapshot) {
  nlohmann::json out = nlohmann::json::object();
  for (size_t i = 0; i < kNumMemoryCategories; ++i) {
    json_counts(out, memory_category_name(static_cast<MemoryCategory>(i)), snapshot.categories[i]);
  }
  json_counts(out, "model_states", snapshot.model_states);
  json_counts(out, "total", snapshot.total);
  return out;
}

void MemoryLedger::add_locked(MemoryCategory category, int64_t delta) {
  add_to(counts_.categories[static_cast<size_t>(category)], delta);
  add_to(counts_.total, delta);
  if (is_model_state(category)) add_to(counts_.model_states, delta);
}

void MemoryLedger::allocate(MemoryCategory category, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  add_locked(category, static_cast<int64_t>(bytes));
}

void MemoryLedger::release(MemoryCategory category, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  const uint64_t held = counts_.categories[static_cast<size_t>(category)].current;
  ZDP_CHECK(bytes <= held, Error, "[memory_ledger] releasing {} bytes of {} which holds only {}", bytes,
            memory_category_name(category), held);
  add_locked(category, -static_cast<int64_t>(bytes));
}

uint64_t MemoryLedger::current(MemoryCategory category) const {
  std::lock_guard lock(mutex_);
  return counts_[category].current;
}

uint64_t MemoryLedger::peak(MemoryCategory category) const {
  std::lock_guard lock(mutex_);
  return counts_[category].peak;
}

uint64_t MemoryLedger::current_total() const {
  std::lock_guard lock(mutex_);
  return counts_.total.current;
}

uint64_t MemoryLedger::peak_total() const {
  std::lock_guard lock(mutex_);
  return counts_.total.peak;
}

LedgerSnapshot MemoryLedger::snapshot() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void MemoryLedger::reset_peaks() {
  std::lock_guard lock(mutex_);
  for (ByteCounts& c : counts_.categories) c.peak = c.current;
  counts_.total.peak = counts_.total.current;
  counts_.model_states.peak = counts_.model_states.current;
}

optim::StateAccountant optimizer_state_accountant(MemoryLedger& ledger) {
  return [&ledger](optim::StateKind kind, int64_t delta_bytes) {
    const MemoryCategory category = optim::is_second_moment(kind) ? MemoryCategory::kAdamV : MemoryCategory::kAdamM;
    if (delta_bytes >= 0) {
      ledger.allocate(category, static_cast<uint64_t>(delta_bytes));
    } else {
      ledger.release(category, static_cast<uint64_t>(-delta_bytes));
    }
  };
}

}  // namespace zerodp::zero
