// SPDX-License-Identifier: Apache-2.0
// The Engine's views of its state for checkpoints and tests: per-unit
// tensors a loader can fill, the counters, and consolidated (gathered)
// parameter copies. Split from engine.cc, which drives training.
#include <algorithm>
#include <cstring>
#include <functional>
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

// Converted views (Adafactor's packed statistics, Lion's widened bf16
// momentum) live in fp32 scratch: filled from the states before a save,
// taken back into them after a load.
void Engine::fill_converted(ConvertedView& v) {
  const optim::Optimizer& opt = *optimizers_[v.unit];
  if (v.kind == optim::StateKind::kExpAvgSqFactored) {
    dynamic_cast<const optim::Adafactor&>(opt).pack(v.data);
    return;
  }
  for (const optim::ConstStateTensor& t : opt.state()) {
    if (t.kind != v.kind) continue;
    for (size_t i = 0; i < v.data.size(); ++i) {
      BFloat16 m;
      std::memcpy(&m.bits, t.codes.data() + 2 * i, sizeof m.bits);
      v.data[i] = bfloat16_to_float(m);
    }
  }
}

void Engine::take_converted(const ConvertedView& v) {
  if (v.kind == optim::StateKind::kExpAvgSqFactored) {
    dynamic_cast<optim::Adafactor&>(*optimizers_[v.unit]).unpack(v.data);
    return;
  }
  for (const optim::StateTensor& t : optimizers_[v.unit]->state()) {
    if (t.kind != v.kind) continue;
    for (size_t i = 0; i < v.data.size(); ++i) {
      const BFloat16 m = float_to_bfloat16(v.data[i]);
      std::memcpy(t.codes.data() + 2 * i, &m.bits, sizeof m.bits);
    }
  }
}

// Unit u's views: the master weights, then its optimizer's states (which
// must be reachable), converted ones through `converted`, which gives each
// its fp32 buffer.
void Engine::add_unit_views(size_t u, std::span<float> master,
                            const std::function<std::span<float>(size_t count)>& converted,
                            std::vector<StateView>& views) {
  const comm::ShardRange upd = update_range(u);
  views.push_back({"master", u, upd, master});
  for (const optim::StateTensor& t : optimizers_[u]->state()) {
    if (optim::state_layout(t.kind).index == optim::StateIndex::kTensorStats) {
      // Adafactor's statistics, packed per element for the checkpoint
      // (optim/adafactor.h adafactor_packed_range).
      const optim::ElementRange r = dynamic_cast<const optim::Adafactor&>(*optimizers_[u]).packed_range();
      packed_views_.push_back({u, t.kind, converted(r.count)});
      views.push_back({std::string(optim::state_kind_name(t.kind)), u, {r.offset, r.count}, packed_views_.back().data});
      continue;
    }
    if (optim::state_layout(t.kind).dtype == optim::StateDtype::kBf16) {
      // Lion's bf16 momentum: the checkpoint keeps it as fp32 "exp_avg".
      packed_views_.push_back({u, t.kind, converted(upd.count)});
      views.push_back({"exp_avg", u, upd, packed_views_.back().data});
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

std::vector<Engine::StateView> Engine::state_views() {
  if (offload_) return offloaded_state_views();
  std::vector<StateView> views;
  packed_views_.clear();
  packed_views_.reserve(plan_.num_units());
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    // Each converted view owns its scratch (booked) while the views live.
    const auto converted = [this](size_t count) {
      converted_scratch_.emplace_back(ledger_, MemoryCategory::kScratch, count);
      return converted_scratch_.back().span();
    };
    add_unit_views(u, master_weights().floats(u, update_range(u)), converted, views);
  }
  for (ConvertedView& v : packed_views_) fill_converted(v);
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
  converted_scratch_.clear();
  offload_converted_.reset();
}

void Engine::state_loaded(const Counters& counters) {
  if (!offload_) {
    for (const ConvertedView& v : packed_views_) take_converted(v);
  }  // offloaded: each unit's were taken in at its close_unit_views
  release_state_views();
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
      shard_comm_.all_gather(own_params(u), gathered);
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
