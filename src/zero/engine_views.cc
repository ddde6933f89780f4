// The Engine's views of its state for checkpoints and tests: per-unit
// tensors a loader can fill, the counters, and consolidated (gathered)
// parameter copies. Split from engine.cc, which drives training.
#include <algorithm>
#include <span>

#include "core/convert.h"
#include "core/error.h"
#include "zero/engine.h"
#include "zero/grad_accumulate.h"

namespace zerodp::zero {
// ---- checkpoint access ----

std::vector<Engine::StateView> Engine::state_views() {
  std::vector<StateView> views;
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const comm::ShardRange upd = update_range(u);
    views.push_back({"master", u, upd, master_weights().floats(u, upd)});
    for (const optim::StateTensor& t : optimizers_[u]->state()) {
      views.push_back({std::string(optim::state_kind_name(t.kind)), u, upd, t.data});
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

void Engine::state_loaded(const Counters& counters) {
  steps_ = counters.steps;
  for (auto& opt : optimizers_) opt->set_step_count(counters.optimizer_steps);
  if (config_.dtype == Dtype::fp16()) scaler_.load_state(counters.scaler);
  refresh_params();
}

void Engine::set_master_params(std::span<const float> flat) {
  ZDP_CHECK(flat.size() == plan_.num_params(), ShapeError,
            "[set_master_params] {} values given for a model of {} parameters", flat.size(), plan_.num_params());
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const comm::ShardRange upd = update_range(u);
    const std::span<float> dst = master_weights().floats(u, upd);
    std::copy_n(flat.data() + plan_.unit_offset(u) + upd.offset, upd.count, dst.data());
  }
  refresh_params();
}

// ---- consolidated views (collective) ----

std::vector<float> Engine::gather_master_params() {
  std::vector<float> full(plan_.num_params());
  const StateBuffer& master = master_weights();
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const comm::Buffer out(full.data() + plan_.unit_offset(u), plan_.unit_count(u), Dtype::fp32());
    if (config_.stage == 0) {
      convert_into(out, master.unit(u));
    } else {
      comm_.all_gather(master.own_shard(u), out);
    }
  }
  return full;
}

std::vector<float> Engine::gather_params() {
  std::vector<float> full(plan_.num_params());
  std::vector<std::byte> unit_buffer(plan_.largest_unit() * config_.dtype.size());
  for (size_t u = 0; u < plan_.num_units(); ++u) {
    const comm::Buffer out(full.data() + plan_.unit_offset(u), plan_.unit_count(u), Dtype::fp32());
    if (config_.stage == 3) {
      const comm::Buffer gathered(unit_buffer.data(), plan_.unit_count(u), config_.dtype);
      comm_.all_gather(params_.own_shard(u), gathered);
      convert_into(out, gathered);
    } else {
      convert_into(out, params_.unit(u));
    }
  }
  return full;
}

}  // namespace zerodp::zero
