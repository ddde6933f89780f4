// SPDX-License-Identifier: Apache-2.0
// The Engine's views of its state for checkpoints and tests: per-unit
// tensors a loader can fill, the counters, and consolidated (gathered)
// parameter copies. Split from engine.cc, which drives training.
#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include "core/convert.h"
#include "core/error.h"
#include "optim/adafactor.h"
#include "optim/quant8.h"
#include "zero/engine.h"
#include "zero/grad_accumulate.h"

namespace zerodp::zero {
// ---- checkpoint access ----

std::vector<Engine::StateView> Engine::state_views() {
  std::vector<StateView> views;
  packed_views_.clear();
  packed_views_.reserve(plan_.num_units());
  const std::vector<std::span<float>> masters = offload_ ? read_offloaded_states() : std::vector<std::span<float>>();
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const comm::ShardRange upd = update_range(u);
    views.push_back({"master", u, upd, offload_ ? masters[u] : master_weights().floats(u, upd)});
    for (const optim::StateTensor& t : optimizers_[u]->state()) {
      if (optim::state_layout(t.kind).index == optim::StateIndex::kTensorStats) {
        // Adafactor's statistics, packed per element for the checkpoint
        // (optim/adafactor.h adafactor_packed_range), in a scratch copy.
        const auto& opt = dynamic_cast<const optim::Adafactor&>(*optimizers_[u]);
        const optim::ElementRange r = opt.packed_range();
        packed_views_.push_back({u, t.kind, LedgerBuffer<float>(ledger_, MemoryCategory::kScratch, r.count)});
        const std::span<float> packed = packed_views_.back().data.span();
        opt.pack(packed);
        views.push_back({std::string(optim::state_kind_name(t.kind)), u, {r.offset, r.count}, packed});
        continue;
      }
      if (optim::state_layout(t.kind).dtype == optim::StateDtype::kBf16) {
        // Lion's bf16 momentum: the checkpoint keeps it as fp32 "exp_avg".
        packed_views_.push_back({u, t.kind, LedgerBuffer<float>(ledger_, MemoryCategory::kScratch, upd.count)});
        const std::span<float> wide = packed_views_.back().data.span();
        for (size_t i = 0; i < upd.count; ++i) {
          BFloat16 m;
          std::memcpy(&m.bits, t.codes.data() + 2 * i, sizeof m.bits);
          wide[i] = bfloat16_to_float(m);
        }
        views.push_back({"exp_avg", u, upd, wide});
        continue;
      }
      comm::ShardRange range = upd;
      if (optim::state_layout(t.kind).index == optim::StateIndex::kBlock) {
        const optim::quant8::BlockRange b = optim::quant8::blocks_touched(upd.offset, upd.count);
        range = {b.first, b.count};
      }
      views.push_back({std::string(optim::state_kind_name(t.kind)), u, range, t.data, t.codes});
    }
  }
  return views;
}

Engine::Counters Engine::counters() const {
  Counters c;
  c.steps = steps_;
  c.optimizer_steps = optimizers_.empty() ? 0 : optimizers_.front()->step_count();
  c.scaler = scaler_.state();
  return c;
}

uint64_t Engine::tensor_stats_bytes() const {
  uint64_t bytes = 0;
  for (const auto& opt : optimizers_) bytes += opt->booked_bytes(optim::StateKind::kExpAvgSqFactored);
  return bytes;
}

void Engine::release_state_views() {
  packed_views_.clear();
  release_offloaded_states(/*write_back=*/false);
}

void Engine::state_loaded(const Counters& counters) {
  for (ConvertedView& v : packed_views_) {
    if (v.kind == optim::StateKind::kExpAvgSqFactored) {
      dynamic_cast<optim::Adafactor&>(*optimizers_[v.unit]).unpack(v.data.span());
      continue;
    }
    for (const optim::StateTensor& t : optimizers_[v.unit]->state()) {
      if (t.kind != v.kind) continue;
      for (size_t i = 0; i < v.data.size(); ++i) {
        const BFloat16 m = float_to_bfloat16(v.data[i]);
        std::memcpy(t.codes.data() + 2 * i, &m.bits, sizeof m.bits);
      }
    }
  }
  packed_views_.clear();
  release_offloaded_states(/*write_back=*/true);
  steps_ = counters.steps;
  for (auto& opt : optimizers_) opt->set_step_count(counters.optimizer_steps);
  if (config_.dtype == Dtype::fp16()) scaler_.load_state(counters.scaler);
  refresh_params();
}

void Engine::load_params(const ParamSource& source) { fill_params(source); }

void Engine::set_master_params(std::span<const float> flat) {
  ZDP_CHECK(flat.size() == plan_.num_params(), ShapeError,
            "[set_master_params] {} values given for a model of {} parameters", flat.size(), plan_.num_params());
  load_params([flat](size_t first, std::span<float> out) { std::copy_n(flat.data() + first, out.size(), out.data()); });
}

// ---- consolidated views (collective) ----

std::vector<float> Engine::gather_master_params() {
  std::vector<float> full(plan_.num_params());
  // The master weights this rank updates: a whole unit at stage 0, its shard otherwise.
  visit_states(OffloadStore::Pass::kRead, [&](size_t u, std::span<float> master) {
    const comm::Buffer out(full.data() + plan_.unit_offset(u), plan_.unit_count(u), Dtype::fp32());
    const comm::Buffer mine(master.data(), master.size(), Dtype::fp32());
    if (!traits(config_.stage).partitions_optimizer) {
      convert_into(out, mine);
    } else {
      shard_comm_.all_gather(mine, out);
    }
  });
  return full;
}

std::vector<float> Engine::gather_params() {
  std::vector<float> full(plan_.num_params());
  gather_params_into(full);
  return full;
}

LedgerBuffer<float> Engine::gather_params_to(int root) {
  ZDP_CHECK(root >= 0 && root < comm_.size(), ConfigError, "[gather_params] root {} is not a rank of {}", root,
            comm_.size());
  // The steps' pooled gradient buffers go first: a consolidated copy comes
  // at the end of a run, and the plan counts it in their place.
  step_buffers_.trim();
  LedgerBuffer<float> full;
  // root is a rank of the world; with hybrid sharding only its shard group
  // takes part in the gathers.
  const int g = shard_comm_.size();
  const bool root_here = root == comm_.rank();
  if (root_here) full = LedgerBuffer<float>(ledger_, MemoryCategory::kScratch, plan_.num_params());
  if (root_here || (traits(config_.stage).partitions_params && root / g == comm_.rank() / g)) {
    gather_params_into(full.span());
  }
  return full;
}

void Engine::gather_params_into(std::span<float> full) {
  LedgerBuffer<std::byte> unit_buffer;
  const bool partitioned = traits(config_.stage).partitions_params;
  if (partitioned) {
    unit_buffer =
        LedgerBuffer<std::byte>(ledger_, MemoryCategory::kScratch, plan_.largest_unit() * config_.dtype.size());
  }
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    comm::ConstBuffer unit;
    if (partitioned) {
      const comm::Buffer gathered(unit_buffer.data(), plan_.unit_count(u), config_.dtype);
      shard_comm_.all_gather(params_.own_shard(u), gathered);
      unit = gathered;
    } else {
      unit = params_.unit(u);
    }
    if (!full.empty()) {
      convert_into(comm::Buffer(full.data() + plan_.unit_offset(u), plan_.unit_count(u), Dtype::fp32()), unit);
    }
  }
}

}  // namespace zerodp::zero
