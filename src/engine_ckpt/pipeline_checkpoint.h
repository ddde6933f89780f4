// SPDX-License-Identifier: Apache-2.0
// Checkpoints of a zero::Pipeline, and of whichever trainee a run drives.
//
// A pipeline of P stages over D replicas saves the checkpoint D-rank data
// parallelism saves: D shard files, each unit's states split over the D
// replicas (ckpt::FilePart). The stage-s rank of replica d writes its
// stage's units into file d; the units are contiguous and in stage order,
// the tied unit counting as the first stage's, whose states it is (the last
// stage's copy only follows it). So at fp32, where a pipeline trains the
// bits of data parallelism, the records are the bytes a D-rank run of the
// same batch writes, and the checkpoint moves between any layouts: any N,
// stage and pipeline loads it, and a pipeline loads any checkpoint, each
// rank reading its stage's units.
// Thread-safety: one per rank, used from that rank's thread.
#pragma once

#include <string>
#include <vector>

#include "ckpt/checkpoint.h"
#include "ckpt/training_state.h"
#include "zero/pipeline.h"

namespace zerodp::engine_ckpt {

class PipelineTrainingState final : public ckpt::TrainingState {
 public:
  explicit PipelineTrainingState(zero::Pipeline& pipeline);
  ~PipelineTrainingState() override { pipeline_.engine().release_state_views(); }
  PipelineTrainingState(const PipelineTrainingState&) = delete;
  PipelineTrainingState& operator=(const PipelineTrainingState&) = delete;

  // The world's: every rank takes part in the save's collectives.
  comm::Communicator& communicator() override { return pipeline_.world(); }
  ckpt::RunRecord record() const override;  // the whole model's
  ckpt::FilePart file_part() override { return part_; }
  // The stage engine's views of the units the stage owns, numbered as the
  // whole model's.
  std::vector<ckpt::StateTensorView> state_tensors() override;
  ckpt::StepCounters counters() const override;
  void state_loaded(const ckpt::StepCounters& counters) override;
  void check_saved_model(const std::string& saved_model_json, const std::string& manifest_path) const override;

 private:
  zero::Pipeline& pipeline_;
  ckpt::FilePart part_;
};

// ckpt::save / ckpt::load of `pipeline` (collective over its world).
ckpt::SaveResult save(zero::Pipeline& pipeline, const std::string& root, const ckpt::SaveOptions& options = {});
ckpt::LoadResult load(zero::Pipeline& pipeline, const std::string& path);

// The trainee's: a Pipeline's as above, an Engine's as engine_checkpoint.h says.
ckpt::SaveResult save(zero::Trainable& trainee, const std::string& root, const ckpt::SaveOptions& options = {});
ckpt::LoadResult load(zero::Trainable& trainee, const std::string& path);

}  // namespace zerodp::engine_ckpt
