// SPDX-License-Identifier: Apache-2.0
#include "engine_ckpt/pipeline_checkpoint.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "engine_ckpt/engine_checkpoint.h"
#include "weights/model_record.h"

namespace zerodp::engine_ckpt {

PipelineTrainingState::PipelineTrainingState(zero::Pipeline& pipeline) : pipeline_(pipeline) {
  const std::vector<int> owner = pipeline.unit_owners();
  const int stage = pipeline.stage();
  size_t begin = owner.size(), end = 0;
  for (size_t u = 0; u < owner.size(); ++u) {
    if (owner[u] != stage) continue;
    begin = std::min(begin, u);
    end = u + 1;
  }
  for (size_t u = 0; u < owner.size(); ++u) {
    ZDP_CHECK((owner[u] == stage) == (u >= begin && u < end), ConfigError,
              "[ckpt] pipeline stage {} owns units that are not contiguous in the {} model's order (unit {}): its "
              "checkpoint cannot be the data-parallel one",
              stage, pipeline.model().kind(), u);
  }
  part_ = {.file = pipeline.replica(), .files = pipeline.replicas(), .unit_begin = begin, .unit_end = end};
}

ckpt::RunRecord PipelineTrainingState::record() const {
  zero::Pipeline& p = pipeline_;
  ckpt::RunRecord r = run_record(p.model(), p.engine().config());
  // Informational, as the rest of the engine's record: any layout loads it.
  nlohmann::ordered_json engine = nlohmann::ordered_json::parse(r.engine_json);
  engine["pipeline_stages"] = p.stages();
  r.engine_json = engine.dump();
  return r;
}

std::vector<ckpt::StateTensorView> PipelineTrainingState::state_tensors() {
  const std::vector<int>& whole = pipeline_.stage_model().whole_units();
  std::vector<ckpt::StateTensorView> out;
  for (auto& v : pipeline_.engine().state_views()) {
    const auto unit = static_cast<size_t>(whole[v.unit]);
    if (unit < part_.unit_begin || unit >= part_.unit_end) continue;  // the last stage's copy of the tied unit
    out.push_back({.name = std::move(v.name), .unit = unit, .range = v.range, .data = v.data, .codes = v.codes});
  }
  return out;
}

ckpt::StepCounters PipelineTrainingState::counters() const { return step_counters(pipeline_.engine()); }

void PipelineTrainingState::state_loaded(const ckpt::StepCounters& counters) {
  pipeline_.state_loaded(engine_counters(pipeline_.engine(), counters));
}

void PipelineTrainingState::check_saved_model(const std::string& saved_model_json,
                                              const std::string& manifest_path) const {
  weights::check_same_model_config(saved_model_json, model::model_config_json(pipeline_.model().config()),
                                   manifest_path);
}

ckpt::SaveResult save(zero::Pipeline& pipeline, const std::string& root, const ckpt::SaveOptions& options) {
  PipelineTrainingState state(pipeline);
  return ckpt::save(state, root, options);
}

ckpt::LoadResult load(zero::Pipeline& pipeline, const std::string& path) {
  PipelineTrainingState state(pipeline);
  return ckpt::load(state, path);
}

ckpt::SaveResult save(zero::Trainable& trainee, const std::string& root, const ckpt::SaveOptions& options) {
  if (auto* pipeline = dynamic_cast<zero::Pipeline*>(&trainee)) return save(*pipeline, root, options);
  return save(trainee.engine(), root, options);
}

ckpt::LoadResult load(zero::Trainable& trainee, const std::string& path) {
  if (auto* pipeline = dynamic_cast<zero::Pipeline*>(&trainee)) return load(*pipeline, path);
  return load(trainee.engine(), path);
}

}  // namespace zerodp::engine_ckpt
