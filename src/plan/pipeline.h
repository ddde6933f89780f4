// SPDX-License-Identifier: Apache-2.0
// Pipeline parallelism with ZeRO, planned (docs/plan.md, Pipeline): N = P x D
// ranks, the model's ops cut into P contiguous stages, each stage's units
// partitioned among its D data-parallel replicas as ZeRO's stage says, M
// micro-batches per step flowing through the stages (GPipe: all forwards,
// then all backwards; 1F1B: after P - s warm-up forwards, stage s
// alternates one forward and one backward).
//
// What a pipeline stage holds per rank: its units' model states among D
// replicas (a GPT's last stage also holds a copy of the embedding unit for
// its tied LM head, as Megatron does), the fp32 compute copy of its largest
// unit (mixed precision), and the activations of the micro-batches in
// flight, each in a stage workspace of its own: M under GPipe, min(P - s, M)
// at stage s under 1F1B (plan/pipeline_memory.h has the exact ledger). What
// it sends: per micro-batch, the residual stream (B x T x C in fp32, the
// bits the next stage computes from) forward and its gradient backward; the
// last stage also its part of the tied embedding's gradient (fp32, so that
// the first stage's sum is the whole model's, in its order), and the first
// stage the updated embedding back once per step. The bubble, the share of a step
// a stage waits, is (P - 1) / (M + P - 1) for both schedules: 1F1B reorders
// the same work to hold fewer activations, not to wait less.
//
// ZeRO stages 0 and 1 combine with the pipeline: the gradients accumulate
// over the M micro-batches locally and are reduced once per step. Stages 2
// and 3 are refused, as DeepSpeed's PipelineEngine refuses them: stage 2
// would reduce-scatter every micro-batch's gradients (M times the traffic
// for the memory of a gradient shard), and stage 3 would gather every
// unit's parameters again for each of the M forwards and backwards.
// Thread-safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"
#include "core/pipeline_schedule.h"
#include "core/stage.h"
#include "optim/optimizer_config.h"
#include "plan/hardware.h"
#include "plan/memory_model.h"
#include "plan/model_shape.h"

namespace zerodp::plan {

// The schedules' facts (names, in-flight counts, the bubble) live in
// core/pipeline_schedule.h, beside the lists the engine runs.
using zerodp::bubble_fraction;
using zerodp::micro_batches_in_flight;
using zerodp::parse_pipeline_schedule;
using zerodp::pipeline_schedule_name;
using zerodp::PipelineSchedule;

// A contiguous cut of `costs` into `parts` non-empty parts that makes the
// largest part's cost the least possible (exact); the first index of each
// part. ConfigError when there are fewer items than parts.
std::vector<size_t> balanced_cut(std::span<const double> costs, int parts);
// The same over any cost of a part: cost(part, lo, hi) for items [lo, hi)
// as part `part` (0-based), which may depend on the part (a pipeline
// stage's micro-batches in flight do).
using PartCost = std::function<double(size_t part, size_t lo, size_t hi)>;
std::vector<size_t> balanced_cut(size_t items, int parts, const PartCost& cost);

// What the default cut balances: each stage's forward FLOPs (its time), or
// each stage's memory per rank at ZeRO 1 (its states, and its activations
// times its micro-batches in flight), for the busiest rank's peak.
enum class PipelineBalance : uint8_t { kFlops, kMemory };
std::string_view pipeline_balance_name(PipelineBalance balance);  // "flops", "memory"
// ConfigError naming the two for anything else.
PipelineBalance parse_pipeline_balance(std::string_view name);

struct PipelineConfig {
  GptShape shape;
  int ranks = 1;   // N = stages x replicas
  int stages = 1;  // P
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int micro_batches = 1;  // M: the gradient accumulation count
  int micro_batch = 1;    // B
  int seq_len = 0;        // T; 0: the model's context
  bool checkpointing = false;
  // --compute bf16: each stage's blocks keep their product inputs as bf16
  // (model::WorkspaceOptions::bf16_product_inputs).
  bool bf16_compute = false;
  Dtype precision = Dtype::bf16();
  optim::OptimizerConfig optimizer = {};
  // Blocks per stage, P numbers summing to L; empty: balanced by `balance`.
  std::vector<int> layers_per_stage = {};
  PipelineBalance balance = PipelineBalance::kFlops;
};

// One pipeline stage, per rank of it.
struct PipelineStagePlan {
  int first_layer = 0;  // its blocks: [first_layer, first_layer + layers)
  int layers = 0;
  bool embedding = false;    // the token and position embeddings (stage 0)
  bool head = false;         // the final layernorm and the LM head (stage P - 1), with its copy of wte
  uint64_t params = 0;       // Φ_s
  double forward_flops = 0;  // per micro-batch; the backward is twice
  std::array<ModelStateBytes, 2> states = {};  // per rank at ZeRO stages 0 and 1 among D replicas
  uint64_t compute_copy = 0;                   // fp32 copy of its largest unit (mixed precision)
  uint64_t activations_per_micro = 0;          // kept for backward, one micro-batch
  uint64_t scratch = 0;                        // backward scratch (and checkpointing's recompute buffers), once
  int in_flight = 0;                           // micro-batches held at once
  uint64_t activations = 0;                    // in_flight x per micro + scratch
  std::array<uint64_t, 2> peak = {};           // states + compute copy + activations, at ZeRO 0 and 1
  uint64_t sent_per_step = 0;                  // to its neighbours: activations forward, gradients backward
};

struct PipelinePlan {
  PipelineConfig config;
  int replicas = 1;  // D = N / P
  std::vector<PipelineStagePlan> stages;
  double bubble = 0;
  uint64_t tied_embedding_elements = 0;  // the embedding unit both end stages hold (P > 1)
  // The busiest rank: the largest peak over the stages, at ZeRO 0 and 1.
  std::array<uint64_t, 2> peak = {};
};

// ConfigError when P does not divide N, P exceeds L, M < 1, a given cut
// does not sum to L or has an empty stage.
PipelinePlan plan_pipeline(const PipelineConfig& config);

// The most blocks (at the shape's width) whose busiest rank fits `bytes` at
// ZeRO stage 1 with `config`'s pipeline, balanced anew at each depth; 0 when
// none does, at most kMostPipelineLayers (deeper than any GPT built; the
// exact cut's cost grows with the square of the depth).
inline constexpr int kMostPipelineLayers = 1024;
int largest_layers_that_fit(const PipelineConfig& config, uint64_t bytes);

// The step time of a pipeline (plan --predict): each stage's forward and
// backward per micro-batch at the machine's compute rate (checkpointing
// recomputes the blocks' forward), the residual stream and its gradient
// between neighbours over the link their ranks share (ranks are laid out
// stage by stage, rank = s x D + d: a boundary crosses hosts when those
// ranks sit on different hosts, and a host's ranks then share its link),
// the schedule's time sum_s t_s + (M - 1) x max_s t_s (with t_s a stage's
// compute and its sends per micro-batch: for equal stages (M + P - 1) x t),
// then, after the flush, the replicas' gradient reduction at the ZeRO stage
// (0: all-reduce; 1: reduce-scatter, then the all-gather of the updated
// parameters) with the optimizer on the stage's updated elements, and the
// tied embedding's sends between the end stages: M fp32 gradient parts one
// way, the updated weights back.
struct PipelineStepTime {
  std::vector<double> stage_s;  // per stage: one micro-batch's forward and backward
  std::vector<double> send_s;   // per boundary s -> s + 1: one micro-batch's activation and gradient
  double schedule_s = 0;        // the micro-batches through the pipeline
  double bubble = 0;            // the slowest stage's idle share of the schedule
  double reduce_s = 0;          // the busiest stage's replica reduction and optimizer
  double tied_s = 0;            // the tied embedding's sends between the end stages (P > 1)
  double step_s = 0;
};
// ConfigError without a compute rate, or without the link a boundary or
// the replicas need (collective_cost.h's rules).
PipelineStepTime predict_pipeline_step(const PipelinePlan& plan, Stage zero, const Hardware& hw);

std::string format_pipeline_text(const PipelinePlan& plan);
nlohmann::json pipeline_to_json(const PipelinePlan& plan);

}  // namespace zerodp::plan
