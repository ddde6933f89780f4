// SPDX-License-Identifier: Apache-2.0
// A pipelined run's layout (--pipeline-stages): the planner's pipeline plan
// for the run (plan/pipeline.h: the cut balanced by FLOPs, or
// --pipeline-cut) and the engine's layout from it (zero/pipeline.h: the op
// each stage starts at).
#pragma once

#include <cstdint>
#include <string>

#include "model/family.h"
#include "model/model.h"
#include "plan/pipeline.h"
#include "plan/pipeline_memory.h"
#include "plan/predict.h"
#include "train/train_config.h"
#include "zero/pipeline.h"

namespace zerodp::train {

// REQUIRES config.pipeline_stages > 1 and the batch resolved. ConfigError
// for a model the planner has no GPT shape for (only the GPT family is cut
// into stages yet).
plan::PipelinePlan run_pipeline_plan(const TrainConfig& config, const model::ModelConfig& model_config, int ranks);

// The engine's layout from the plan: stage s starts at the first op of its
// first block (an op the model can be cut before, whose layer is it).
zero::PipelineLayout engine_pipeline_layout(const plan::PipelinePlan& plan, const model::Model& model);

// The engine settings the pipeline's ranks are planned with (the stage,
// dtype, optimizer, bucket; the end's gather where the run samples or
// answers held-out sums).
plan::EngineRun pipeline_engine_run(const TrainConfig& config, bool consolidated_copy);

// The resident bytes the plan gives the ranks `local` of this process
// (plan/pipeline_memory.h, each rank as its stage's engine books it, with
// the allocator's rounding).
uint64_t pipeline_local_bytes(const plan::PipelinePlan& plan, const plan::EngineRun& run, plan::LocalRanks local);

// ConfigError (one line) when the process's ranks and `baseline` exceed
// `limit`, naming the fixes.
void check_pipeline_memory(const plan::PipelinePlan& plan, const plan::EngineRun& run, plan::LocalRanks local,
                           uint64_t baseline, uint64_t limit, const std::string& limit_source);

}  // namespace zerodp::train
