// SPDX-License-Identifier: Apache-2.0
// Checkpoints of a zero::Engine: the adapter between the engine and ckpt's
// format library, a layer above both (ckpt knows no engine; the engine
// knows no checkpoint files).
//
// EngineTrainingState is the engine's ckpt::TrainingState: its plan's units,
// its state views (fp32 master weights and optimizer state over the
// elements this rank's optimizer updates), its counters, and its config as
// the manifest records it. save/load are ckpt::save/ckpt::load through it,
// with the same contracts (ckpt/checkpoint.h).
// Thread-safety: one per rank, used from that rank's thread, like the engine.
#pragma once

#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/training_state.h"
#include "zero/engine.h"

namespace zerodp::engine_ckpt {

class EngineTrainingState final : public ckpt::TrainingState {
 public:
  explicit EngineTrainingState(zero::Engine& engine) : engine_(engine) {}
  ~EngineTrainingState() override { engine_.release_state_views(); }
  EngineTrainingState(const EngineTrainingState&) = delete;
  EngineTrainingState& operator=(const EngineTrainingState&) = delete;

  // The shard group's (the world's in the flat layout): the checkpoint's
  // ranks are the ones the states are partitioned over.
  comm::Communicator& communicator() override { return engine_.shard_communicator(); }
  ckpt::RunRecord record() const override;
  std::vector<ckpt::StateTensorView> state_tensors() override;
  ckpt::StepCounters counters() const override;
  // Engine::open_unit_views / close_unit_views (offloaded states).
  void open_unit(size_t unit, bool loading) override { engine_.open_unit_views(unit, loading); }
  void close_unit(size_t unit, bool loaded) override { engine_.close_unit_views(unit, loaded); }
  // Engine::state_loaded with these counters (the engine's other counters kept).
  void state_loaded(const ckpt::StepCounters& counters) override;
  // weights::check_same_model_config against the engine's model.
  void check_saved_model(const std::string& saved_model_json, const std::string& manifest_path) const override;

 private:
  zero::Engine& engine_;
};

// The manifest's record of a run of `model` with `config` (the engine's
// model, or a pipeline's whole model).
ckpt::RunRecord run_record(const model::Model& model, const zero::EngineConfig& config);
// An engine's step counters as the checkpoint keeps them, and back.
ckpt::StepCounters step_counters(const zero::Engine& engine);
zero::Engine::Counters engine_counters(const zero::Engine& engine, const ckpt::StepCounters& loaded);

// The engine config beyond what the manifest records elsewhere (stage,
// gradient accumulation, clipping, LR schedule, loss scaler), as the JSON
// object of the manifest's "engine" field.
std::string engine_config_json(const zero::EngineConfig& config);

// ckpt::save / ckpt::load of `engine` (collective over all ranks, as there).
// Hybrid sharding: the checkpoint is the shard group's, a flat checkpoint of
// G ranks that stores each shard once. Group 0 writes it while the other
// groups wait (in a collective of all ranks, so within the comm timeout);
// every group loads it (any saved rank count reshards to G, and a hybrid
// checkpoint loads into a flat run of any N like any G-rank checkpoint).
ckpt::SaveResult save(zero::Engine& engine, const std::string& root, const ckpt::SaveOptions& options = {});
ckpt::LoadResult load(zero::Engine& engine, const std::string& path);

}  // namespace zerodp::engine_ckpt
