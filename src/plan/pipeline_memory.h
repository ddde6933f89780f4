// SPDX-License-Identifier: Apache-2.0
// One rank of a pipeline as zero::Pipeline's stage engine books it, exactly
// (tests/plan/plan_vs_ledger_pipeline_test.cc holds it to the ledger):
//
// - the stage's units and ops as a schedule of their own: the whole model's
//   ops [first, end), their units renumbered in flat order (model/
//   stage_model.h), the last stage holding a copy of the embedding unit for
//   its tied head;
// - its engine's ledger over the stage's D replicas (predict_engine_rank),
//   whose activations are one stage workspace per micro-batch in flight
//   (the stage's blocks, its input tensor, the head's buffers on the last
//   stage, and each workspace's backward scratch);
// - the pipeline's own buffers: the tied gradient's message buffer on both
//   end stages (comm), and at the end's gather (the sample, the held-out
//   answers) a buffer of the largest unit on every rank and the whole fp32
//   model on rank 0 (scratch).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "plan/engine_memory.h"
#include "plan/pipeline.h"

namespace zerodp::plan {

// A GPT's activations of one micro-batch by where a stage holds them: a
// block's kept tensors, a stage's input (the embedding's output on the
// first stage, the residual stream received on the others), the tail's
// (final layernorm, logits, losses), the backward scratch, and what a
// stage with blocks holds once however many it has: checkpointing's
// recompute set, or with bf16 compute the fp32 working buffers its blocks'
// product inputs share (both scratch).
struct ActivationSplit {
  uint64_t per_block = 0, input = 0, tail = 0, scratch = 0, recompute = 0, block_working = 0;
};
ActivationSplit split_activations(const PipelineConfig& config);

// Bytes of one stage workspace of `layers` blocks, with the head's buffers
// or not (model::Workspace::total_bytes()), and the part of them that is
// scratch (with the recompute set and the working buffers where it has
// blocks).
uint64_t workspace_bytes(const ActivationSplit& act, uint64_t layers, bool head);
uint64_t workspace_scratch(const ActivationSplit& act, uint64_t layers);
// One of the stage's workspaces.
uint64_t stage_workspace_bytes(const PipelineConfig& config, const PipelineStagePlan& stage);

// The stage's units and ops, in the engine's order.
UnitSchedule stage_unit_schedule(const GptShape& shape, const PipelineStagePlan& stage);

// World rank `rank` (stage-major: rank / D is its stage). `run` gives the
// engine's settings (stage 0 or 1, dtype, optimizer, accumulation, bucket,
// consolidated copy); its ranks are ignored (the stage's D replicas).
RankPrediction predict_pipeline_rank(const PipelinePlan& plan, const EngineRun& run, int rank);

}  // namespace zerodp::plan
