// SPDX-License-Identifier: Apache-2.0
#include "plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/error.h"
#include "plan/checkpoint_size.h"
#include "plan/deepspeed_estimate.h"
#include "plan/engine_memory.h"

namespace zerodp::plan {
namespace {

std::string recommend(RankPlan& plan) {
  std::optional<Stage> best;
  for (const StagePlan& s : plan.stages) {
    if (!s.fits.value_or(false)) continue;
    if (!best) {
      best = s.stage;
      continue;
    }
    const StagePlan& b = plan.stages[static_cast<size_t>(stage_number(*best))];
    if (s.comm.elements < b.comm.elements || (s.comm.elements == b.comm.elements && s.peak < b.peak)) {
      best = s.stage;
    }
  }
  plan.recommended = best;
  if (!best) return "no stage fits: add ranks, a smaller model, activation checkpointing or a smaller micro-batch";
  const StagePlan& b = plan.stages[static_cast<size_t>(stage_number(*best))];
  if (b.comm.collectives == 3) {
    return fmt::format("stage {} ({}): the only stage that fits; it moves 3Φ per step, 1.5x the others", *best,
                       traits(*best).paper_name);
  }
  return fmt::format(
      "stage {} ({}): it fits, moves the least (2Φ per step), and of the stages that move 2Φ "
      "it holds the least",
      *best, traits(*best).paper_name);
}

}  // namespace

std::vector<int> parse_rank_list(std::string_view text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    ZDP_CHECK(!item.empty() && ec == std::errc() && ptr == item.data() + item.size() && value >= 1, ConfigError,
              "[plan] --ranks item '{}' is not a positive integer: write e.g. --ranks 64 or --ranks 1,4,16,64", item);
    out.push_back(value);
    start = end + 1;
  }
  return out;
}

PlanResult make_plan(const PlanConfig& config) {
  PlanResult result;
  result.config = config;
  PlanConfig& c = result.config;
  if (c.shape) {
    c.shape->validate();
    c.num_params = c.shape->num_params();
    result.largest_unit_params = c.shape->largest_unit_params();
    result.largest_module_params = c.shape->largest_module_params();
  }
  ZDP_CHECK(c.num_params > 0, ConfigError, "[plan] no model size: give --params (e.g. 7.5B) or --model");
  ZDP_CHECK(!c.ranks.empty(), ConfigError, "[plan] no rank count: give --ranks (e.g. 64 or 1,4,16,64)");
  if (c.activations) {
    ZDP_CHECK(c.shape.has_value(), ConfigError,
              "[plan] an activation estimate needs the model's shape: give --model (a preset or JSON config)");
    result.activations = estimate_activations(*c.shape, *c.activations);
  }
  result.bytes_per_param = bytes_per_param(c.precision, c.optimizer);
  const BytesPerParam& bpp = result.bytes_per_param;
  const uint64_t activation_bytes = result.activations ? result.activations->total_bytes : 0;

  ZDP_CHECK(c.grad_accum >= 1, ConfigError, "[plan] --grad-accum must be at least 1, got {}", c.grad_accum);
  ZDP_CHECK(!c.offload_optimizer || c.shape.has_value(), ConfigError,
            "[plan] --offload-optimizer needs --model: the staging buffers follow the model's largest unit");
  ZDP_CHECK(!c.offload_params || (c.shape.has_value() && c.precision.is_low_precision()), ConfigError,
            "[plan] --offload-params needs --model and --precision bf16 or fp16: the staging buffer follows the "
            "model's largest shard, and at fp32 the parameters are the master weights");
  std::optional<UnitSchedule> schedule;
  if (c.shape) schedule = gpt_unit_schedule(*c.shape);
  // Without a shape the model is one unit of Φ elements.
  const int largest = *std::max_element(c.ranks.begin(), c.ranks.end());
  result.checkpoint_bytes =
      checkpoint_bytes(schedule ? *schedule : UnitSchedule{.unit_counts = {c.num_params}, .op_units = {0}}, c.optimizer,
                       c.shard_group > 0 ? std::min(c.shard_group, largest) : largest);
  for (int n : c.ranks) {
    check_ranks(n);
    ZDP_CHECK(c.shard_group >= 0 && (c.shard_group == 0 || n % c.shard_group == 0), ConfigError,
              "[plan] --shard-group-size {} does not divide --ranks {}: use ranks that are multiples of it",
              c.shard_group, n);
    RankPlan rp;
    rp.ranks = n;
    rp.shard_group = c.shard_group == 0 ? n : c.shard_group;
    for (Stage s : kAllStages) {
      // Hybrid sharding partitions over the group; stage 0 partitions nothing.
      const int part = s == Stage::k0 ? n : rp.shard_group;
      const uint64_t shard =
          schedule ? owned_elements(schedule->unit_counts, part, 0) : shard_elements(c.num_params, part);
      StagePlan& sp = rp.stages[static_cast<size_t>(stage_number(s))];
      sp.stage = s;
      sp.states = model_state_bytes_with_shard(c.num_params, shard, s, bpp);
      // 8-bit Adam's block scales and fp32-moment units (a model without
      // units counts as one unit, holding no embedding).
      const std::vector<uint64_t> whole = {c.num_params};
      const uint64_t scales = moment_extra_bytes(schedule ? std::span<const uint64_t>(schedule->unit_counts) : whole,
                                                 schedule ? schedule->embedding_unit : -1, part, 0,
                                                 traits(s).partitions_optimizer, c.optimizer);
      sp.states.moment1 += scales;
      sp.states.moment2 += scales;
      // Adafactor's factored statistics.
      sp.states.moment2 +=
          tensor_stats_bytes(schedule ? std::span<const uint64_t>(schedule->unit_counts) : whole,
                             schedule ? std::span<const std::vector<optim::TensorShape>>(schedule->unit_tensors)
                                      : std::span<const std::vector<optim::TensorShape>>(),
                             part, 0, traits(s).partitions_optimizer, c.optimizer);
      // Stage 1's owned accumulator and the pairwise sum's partials (core/stage.h).
      sp.states.grads += extra_grad_elements(s, c.grad_accum, shard, c.num_params) * static_cast<uint64_t>(bpp.grads);
      sp.paper_bytes = paper_model_state_bytes(static_cast<double>(c.num_params), s, part, bpp);
      const bool params_offloaded = c.offload_params && traits(s).partitions_params;  // stage 3's alone
      if (schedule) {
        // The engine's own buffers, as its busiest rank (0) books them.
        EngineRun run{s, n, c.precision, c.optimizer, c.grad_accum, true};
        run.quantize_weights = c.quantize_weights;
        run.quantize_grads = c.quantize_grads;
        run.quantize_block = c.quantize_block;
        run.shard_group = part;
        run.offload_optimizer = c.offload_optimizer;
        run.offload_params = params_offloaded;
        run.bf16_compute = c.bf16_compute;
        const RankPrediction p = predict_engine_rank(*schedule, run, 0, activation_bytes);
        if (c.offload_optimizer) {
          // RAM keeps what the optimizers hold themselves; K's bytes are on disk.
          sp.states.master = p.master;
          sp.states.moment1 = p.adam_m;
          sp.states.moment2 = p.adam_v;
        }
        if (params_offloaded) sp.states.params = p.params;
        if (c.offload_optimizer || params_offloaded) {
          sp.offload = p.offload;
          sp.disk = p.disk;
          sp.disk_read = p.disk_read_per_step;
          sp.disk_written = p.disk_written_per_step;
        }
        ZDP_CHECK_EQ(p.model_states(), sp.states.total(), Error, "[plan] engine model and paper model disagree");
        sp.compute_copy = p.compute_copy;
        sp.gathered = p.gathered - sp.compute_copy;
        sp.buckets = p.buckets;
        sp.comm_scratch = p.comm;
      }
      sp.activations = activation_bytes;
      sp.peak = sp.states.total() + sp.buffers() + sp.activations;
      sp.comm = comm_volume(c.num_params, s, n, c.precision, {c.quantize_weights, c.quantize_block},
                            {c.quantize_grads, c.quantize_block}, part);
      if (c.device_memory) {
        sp.fits = sp.peak <= *c.device_memory;
        // Offload: only the parameters and gradients hold RAM per parameter.
        BytesPerParam in_ram = bpp;
        if (c.offload_optimizer) in_ram.master = in_ram.moment1 = in_ram.moment2 = 0;
        if (params_offloaded) in_ram.params = 0;
        sp.max_params = max_params(*c.device_memory, s, part, in_ram);
      }
    }
    if (c.device_memory) {
      rp.recommendation = recommend(rp);
    } else {
      rp.recommendation = "give --device-memory (e.g. 32GB or 80GiB) for a recommendation";
    }
    rp.deepspeed.zero2_bytes = deepspeed_zero2_gpu_bytes(c.num_params, n);
    if (result.largest_module_params) {
      rp.deepspeed.zero3_bytes = deepspeed_zero3_gpu_bytes(c.num_params, *result.largest_module_params, n);
    }
    result.per_ranks.push_back(std::move(rp));
  }
  return result;
}

}  // namespace zerodp::plan
