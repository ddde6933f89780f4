// SPDX-License-Identifier: Apache-2.0
#include "plan/pipeline_memory.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "plan/activations.h"

namespace zerodp::plan {

ActivationSplit split_activations(const PipelineConfig& c) {
  ActivationConfig a;
  a.micro_batch = c.micro_batch;
  a.seq_len = c.seq_len;
  a.checkpointing = c.checkpointing;
  a.bf16_product_inputs = c.bf16_compute;
  const ActivationEstimate est = estimate_activations(c.shape, a);
  const auto layers = static_cast<uint64_t>(c.shape.layers);
  ActivationSplit s;
  for (const ActivationTerm& t : est.terms) {
    if (t.role == "backward scratch") {
      s.scratch += t.bytes;
    } else if (t.role == "recompute") {
      s.recompute += t.bytes;
    } else if (t.role == "working copy") {
      s.block_working += t.bytes;
    } else if (t.name == "embedding output") {
      s.input += t.bytes;                          // the size of every stage's input: the residual stream
    } else if (t.count == layers && layers > 1) {  // a block's tensor, one per block (P <= L makes L > 1)
      s.per_block += t.bytes / layers;
    } else {
      s.tail += t.bytes;
    }
  }
  return s;
}

uint64_t workspace_scratch(const ActivationSplit& act, uint64_t layers) {
  return act.scratch + (layers > 0 ? act.recompute + act.block_working : 0);
}

uint64_t workspace_bytes(const ActivationSplit& act, uint64_t layers, bool head) {
  return layers * act.per_block + act.input + (head ? act.tail : 0) + workspace_scratch(act, layers);
}

uint64_t stage_workspace_bytes(const PipelineConfig& c, const PipelineStagePlan& st) {
  return workspace_bytes(split_activations(c), static_cast<uint64_t>(st.layers), st.head);
}

namespace {

// The whole model's ops [first, end) of a stage (GPT: op 0 the embedding,
// 1 + l block l, then the final norm and the head, which a stage keeps
// together).
std::pair<size_t, size_t> stage_ops(const GptShape& shape, const PipelineStagePlan& st) {
  const auto first = static_cast<size_t>(st.embedding ? 0 : st.first_layer + 1);
  const auto end = static_cast<size_t>(st.head ? shape.layers + 3 : st.first_layer + st.layers + 1);
  return {first, end};
}

}  // namespace

UnitSchedule stage_unit_schedule(const GptShape& shape, const PipelineStagePlan& st) {
  const UnitSchedule whole = gpt_unit_schedule(shape);
  const auto [first, end] = stage_ops(shape, st);
  std::vector<int> units;  // the whole model's units the stage reads, in flat order
  for (size_t i = first; i < end; ++i) units.push_back(whole.op_units[i]);
  std::sort(units.begin(), units.end());
  units.erase(std::unique(units.begin(), units.end()), units.end());
  auto here = [&units](int u) {
    return static_cast<int>(std::lower_bound(units.begin(), units.end(), u) - units.begin());
  };
  UnitSchedule s;
  for (int u : units) {
    s.unit_counts.push_back(whole.unit_counts[static_cast<size_t>(u)]);
    s.unit_tensors.push_back(whole.unit_tensors[static_cast<size_t>(u)]);
  }
  for (size_t i = first; i < end; ++i) {
    s.op_units.push_back(here(whole.op_units[i]));
    s.op_backward_reads.push_back(whole.op_backward_reads[i]);
    s.op_weight_grad_apart.push_back(whole.op_weight_grad_apart[i]);
    s.op_bf16_widened.push_back(whole.op_bf16_widened[i]);
  }
  s.reads_bf16_weights = whole.reads_bf16_weights;
  // The token embedding's op (8-bit Adam's fp32 moments) is the first stage's.
  s.embedding_unit = st.embedding ? here(whole.embedding_unit) : -1;
  // The last stage's copy of it: its gradient goes to the first stage.
  if (st.head && !st.embedding) {
    s.exported.assign(units.size(), false);
    s.exported[static_cast<size_t>(here(whole.embedding_unit))] = true;
  }
  return s;
}

RankPrediction predict_pipeline_rank(const PipelinePlan& plan, const EngineRun& run, int rank) {
  const int d = plan.replicas;
  const auto p = plan.stages.size();
  ZDP_CHECK(rank >= 0 && static_cast<size_t>(rank) < p * static_cast<size_t>(d), ConfigError,
            "[plan] rank {} is not in the pipeline's {} ranks", rank, p * static_cast<size_t>(d));
  const auto s = static_cast<size_t>(rank / d);
  const PipelineStagePlan& st = plan.stages[s];
  const PipelineConfig& c = plan.config;
  EngineRun stage_run = run;
  stage_run.ranks = d;
  stage_run.bf16_compute = c.bf16_compute;  // the stages read bf16 units in place
  stage_run.grad_accum = c.micro_batches;
  const uint64_t workspaces = static_cast<uint64_t>(st.in_flight) * stage_workspace_bytes(c, st);
  RankPrediction r = predict_engine_rank(stage_unit_schedule(c.shape, st), stage_run, rank % d, workspaces);
  r.rank = rank;
  const bool end_stage = s == 0 || s + 1 == p;
  if (p > 1 && end_stage) r.comm += plan.tied_embedding_elements * sizeof(float);  // the tied gradient's buffer
  if (run.consolidated_copy) {
    // Pipeline::gather_params_to: one unit passes through every rank; rank 0
    // assembles the whole model.
    const UnitSchedule whole = gpt_unit_schedule(c.shape);
    r.final_scratch += whole.largest_unit() * sizeof(float) + (rank == 0 ? whole.num_params() * sizeof(float) : 0);
  }
  return r;
}

}  // namespace zerodp::plan
