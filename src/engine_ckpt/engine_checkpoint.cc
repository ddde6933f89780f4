// SPDX-License-Identifier: Apache-2.0
#include "engine_ckpt/engine_checkpoint.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <exception>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/file_io.h"
#include "core/error.h"
#include "model/presets.h"
#include "weights/model_record.h"

namespace zerodp::engine_ckpt {

std::string engine_config_json(const zero::EngineConfig& c) {
  nlohmann::ordered_json j;
  j["stage"] = c.stage;
  j["grad_accum"] = c.grad_accum;
  j["clip_norm"] = c.clip_norm;
  const auto& s = c.lr_schedule;
  j["lr_schedule"] = {{"kind", std::string(optim::lr_schedule_kind_name(s.kind))},
                      {"max_lr", s.max_lr},
                      {"min_lr", s.min_lr},
                      {"warmup_steps", s.warmup_steps},
                      {"total_steps", s.total_steps},
                      {"warmup_type", s.warmup_type == optim::WarmupType::kLinear ? "linear" : "log"},
                      {"warmup_min_ratio", s.warmup_min_ratio},
                      {"cos_min_ratio", s.cos_min_ratio}};
  const auto& l = c.loss_scaler;
  j["loss_scaler"] = {{"mode", l.mode == optim::LossScaleMode::kDynamic ? "dynamic" : "static"},
                      {"initial_scale", l.initial_scale},
                      {"window", l.window},
                      {"hysteresis", l.hysteresis},
                      {"min_scale", l.min_scale},
                      {"consecutive_hysteresis", l.consecutive_hysteresis},
                      {"floor_patience", l.floor_patience}};
  // Hybrid sharding (informational): the checkpoint itself is the shard
  // group's, a flat checkpoint of G ranks (engine_checkpoint.h).
  if (c.shard_group_size > 0) j["shard_group_size"] = c.shard_group_size;
  return j.dump();
}

ckpt::RunRecord EngineTrainingState::record() const { return run_record(engine_.model(), engine_.config()); }

ckpt::RunRecord run_record(const model::Model& model, const zero::EngineConfig& c) {
  const model::ModelConfig config = model.config();
  ckpt::RunRecord r;
  r.model_kind = config.kind();
  r.model_json = model::model_config_json(config);
  r.model_description = model.describe();
  // The plan partitions the model's units, in flat order.
  for (const auto& u : model.units()) r.units.push_back({.name = u.name, .count = u.count});
  r.stage = c.stage;
  r.dtype = c.dtype;
  r.optimizer = c.optimizer;
  r.engine_json = engine_config_json(c);
  return r;
}

std::vector<ckpt::StateTensorView> EngineTrainingState::state_tensors() {
  std::vector<ckpt::StateTensorView> out;
  for (auto& v : engine_.state_views()) {
    out.push_back({.name = std::move(v.name), .unit = v.unit, .range = v.range, .data = v.data, .codes = v.codes});
  }
  return out;
}

ckpt::StepCounters step_counters(const zero::Engine& engine) {
  const zero::Engine::Counters c = engine.counters();
  return {.steps = c.steps, .optimizer_steps = c.optimizer_steps, .scaler = c.scaler};
}

zero::Engine::Counters engine_counters(const zero::Engine& engine, const ckpt::StepCounters& loaded) {
  zero::Engine::Counters c = engine.counters();
  c.steps = loaded.steps;
  c.optimizer_steps = loaded.optimizer_steps;
  c.scaler = loaded.scaler;
  return c;
}

ckpt::StepCounters EngineTrainingState::counters() const { return step_counters(engine_); }

void EngineTrainingState::state_loaded(const ckpt::StepCounters& counters) {
  engine_.state_loaded(engine_counters(engine_, counters));
}

void EngineTrainingState::check_saved_model(const std::string& saved_model_json,
                                            const std::string& manifest_path) const {
  weights::check_same_model_config(saved_model_json, model::model_config_json(engine_.model().config()), manifest_path);
}

ckpt::SaveResult save(zero::Engine& engine, const std::string& root, const ckpt::SaveOptions& options) {
  comm::Communicator& world = engine.communicator();
  const int group = engine.shard_group_size();
  if (group == world.size()) {
    EngineTrainingState state(engine);
    return ckpt::save(state, root, options);
  }
  // Hybrid sharding: every group holds the same shards, so group 0 (world
  // ranks 0..G-1) writes them, a checkpoint of G ranks, while the others
  // wait for its size in a collective of all ranks. A failed save has
  // aborted the group's communicator (ckpt::save's contract), which fails
  // the world's collectives too (the thread backend poisons the parent; an
  // MPI process that fails takes the job down at exit), so a failing rank
  // rethrows at once and the waiting groups fail with PeerFailedError.
  // A write error the save survives (survive_write_errors) fails every rank
  // of group 0 alike and breaks nothing: the size's collective carries it to
  // the other groups, which then fail alike.
  constexpr uint64_t kWriteFailed = UINT64_MAX;
  ckpt::SaveResult result;
  std::exception_ptr write_error;
  if (world.rank() < group) {
    try {
      EngineTrainingState state(engine);
      result = ckpt::save(state, root, options);
    } catch (const IoError&) {
      if (!options.survive_write_errors || engine.shard_communicator().broken()) throw;
      write_error = std::current_exception();
      result.bytes_total = kWriteFailed;
    } catch (const std::exception& e) {
      if (!engine.shard_communicator().broken()) engine.shard_communicator().abort(e.what());
      throw;
    }
  }
  const uint64_t total = world.all_reduce_uint64(world.rank() == 0 ? result.bytes_total : 0, comm::ReduceOp::kMax);
  if (write_error) std::rethrow_exception(write_error);
  ZDP_CHECK(total != kWriteFailed, ckpt::SaveFailedError,
            "[ckpt save] rank {}: the shard group that writes the checkpoint could not write it", world.rank());
  if (world.rank() >= group) {
    const int64_t step = options.data_step >= 0 ? options.data_step : engine.counters().steps;
    result.path = ckpt::join_path(root, ckpt::step_dir_name(step));
    result.step = step;
    result.bytes_this_rank = 0;
  }
  result.bytes_total = total;
  return result;
}

ckpt::LoadResult load(zero::Engine& engine, const std::string& path) {
  EngineTrainingState state(engine);
  return ckpt::load(state, path);
}

}  // namespace zerodp::engine_ckpt
