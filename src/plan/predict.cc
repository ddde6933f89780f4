// SPDX-License-Identifier: Apache-2.0
#include "plan/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "core/error.h"
#include "model/presets.h"
#include "plan/activations.h"

namespace zerodp::plan {
namespace {

// 1.52 GiB, 340.0 MiB, 12.5 KiB, 900 B: binary units, as a memory limit is read.
std::string human_bytes(uint64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{} B", bytes);
}

}  // namespace

UnitSchedule unit_schedule(const model::ModelConfig& config) {
  // Building a model lays out its units, ops and tensors; it allocates no
  // parameters (the engine does), so this is cheap at any size.
  const std::unique_ptr<model::Model> m = model::make_model(config);
  UnitSchedule s;
  s.reads_bf16_weights = m->reads_bf16_weights();
  const std::vector<model::UnitInfo>& units = m->units();
  for (const model::UnitInfo& u : units) {
    s.unit_counts.push_back(u.count);
    s.unit_grad_rows.push_back(u.grad_row);
  }
  for (const model::Op& op : m->ops()) {
    s.op_units.push_back(op.unit);
    s.op_backward_reads.push_back(op.backward_reads_params);
    s.op_weight_grad_apart.push_back(op.weight_grad_apart);
    s.op_bf16_widened.push_back(op.bf16_widened);
    if (op.token_embedding) s.embedding_unit = op.unit;
  }
  s.unit_tensors.resize(units.size());
  size_t u = 0;
  for (const model::TensorInfo& t : m->tensors()) {  // flat order, each inside one unit
    while (u + 1 < units.size() && t.offset >= units[u].offset + units[u].count) ++u;
    s.unit_tensors[u].push_back(optim::tensor_shape(t.offset - units[u].offset, t.shape));
  }
  return s;
}

uint64_t predict_activation_bytes(const model::ModelConfig& config, const RunShape& run) {
  model::ActivationConfig a;
  a.micro_batch = run.micro_batch;
  a.seq_len = run.seq_len;
  a.checkpointing = run.checkpointing;
  a.bf16_product_inputs = run.bf16_compute;
  ZDP_CHECK(run.seq_len >= 1, ConfigError, "[plan] sequence length {} must be at least 1", run.seq_len);
  ZDP_CHECK(config.spec != nullptr, ConfigError, "[plan] no model to plan");
  const std::optional<model::ActivationEstimate> est = config.spec->estimate_activations(a);
  ZDP_CHECK(est.has_value(), ConfigError,
            "[plan] the \"{}\" model family gives no activation estimate (ModelSpec::estimate_activations), so "
            "its memory cannot be planned",
            config.kind());
  return est->total_bytes;
}

RankPrediction predict_rank(const model::ModelConfig& config, const RunShape& run, int rank) {
  EngineRun engine{run.stage,       run.ranks,    run.dtype,           run.optimizer,
                   run.grad_accum,  run.prefetch, run.bucket_elements, run.consolidated_copy,
                   run.load_scratch};
  engine.quantize_weights = run.quantize_weights;
  engine.quantize_grads = run.quantize_grads;
  engine.quantize_block = run.quantize_block;
  engine.shard_group = run.shard_group;
  engine.offload_optimizer = run.offload_optimizer;
  engine.offload_params = run.offload_params;
  engine.bf16_compute = run.bf16_compute;
  RankPrediction p = predict_engine_rank(unit_schedule(config), engine, rank, predict_activation_bytes(config, run));
  if (run.consolidated_copy && rank == 0) {
    // The sample's (and the held-out answers') workspace: one sequence of
    // at most the trained window, without checkpointing.
    RunShape one = run;
    one.micro_batch = 1;
    one.checkpointing = false;
    one.bf16_compute = false;  // model::generate's workspace keeps fp32
    p.sample_workspace = predict_activation_bytes(config, one);
  }
  return p;
}

RankPrediction predict_rank(const model::ModelConfig& config, const RunShape& run) {
  return predict_rank(config, run, 0);
}

std::array<RankPrediction, kStageTable.size()> predict_stages(const model::ModelConfig& config, const RunShape& run) {
  const UnitSchedule schedule = unit_schedule(config);
  const uint64_t act = predict_activation_bytes(config, run);
  std::array<RankPrediction, kStageTable.size()> out;
  for (Stage s : kAllStages) {
    EngineRun engine{s,
                     run.ranks,
                     run.dtype,
                     run.optimizer,
                     run.grad_accum,
                     run.prefetch,
                     run.bucket_elements,
                     run.consolidated_copy,
                     run.load_scratch};
    engine.quantize_weights = run.quantize_weights;
    engine.quantize_grads = run.quantize_grads;
    engine.quantize_block = run.quantize_block;
    // Hybrid sharding partitions nothing at stage 0 (the engine refuses it there).
    engine.shard_group = s == Stage::k0 ? 0 : run.shard_group;
    engine.offload_optimizer = run.offload_optimizer;
    engine.offload_params = run.offload_params && traits(s).partitions_params;  // stage 3's alone
    engine.bf16_compute = run.bf16_compute;
    out[static_cast<size_t>(stage_number(s))] = predict_engine_rank(schedule, engine, 0, act);
  }
  return out;
}

std::optional<Stage> smallest_fitting_stage(const model::ModelConfig& config, const RunShape& run, uint64_t max_bytes) {
  const auto stages = predict_stages(config, run);
  for (Stage s : kAllStages) {
    if (stages[static_cast<size_t>(stage_number(s))].resident() <= max_bytes) return s;
  }
  return std::nullopt;
}

uint64_t ProcessPrediction::ranks_total() const {
  uint64_t fill = 0, step = 0, end = 0;
  for (const RankPrediction& r : ranks) {
    fill += r.fill();
    step += r.step(r.buckets_bound);
    end += r.end() + r.sample_workspace;
  }
  return std::max({fill, step, end}) + allocator();
}

uint64_t ProcessPrediction::allocator() const {
  uint64_t sum = 0;
  for (const RankPrediction& r : ranks) sum += r.allocator;
  return sum;
}

ProcessPrediction predict_process(const model::ModelConfig& config, const RunShape& run, LocalRanks local,
                                  uint64_t baseline) {
  check_ranks(run.ranks);
  ZDP_CHECK(local.first >= 0 && local.count >= 1 && local.first + local.count <= run.ranks, ConfigError,
            "[plan] local ranks [{}, {}) are not ranks of {}", local.first, local.first + local.count, run.ranks);
  ProcessPrediction p;
  p.baseline = baseline;
  for (int r = local.first; r < local.first + local.count; ++r) p.ranks.push_back(predict_rank(config, run, r));
  return p;
}

void check_memory_fits(const model::ModelConfig& config, const RunShape& run, LocalRanks local, uint64_t baseline,
                       uint64_t max_bytes, const std::string& limit_source) {
  auto at_stage = [&](Stage stage) {
    RunShape s = run;
    s.stage = stage;
    s.offload_params = run.offload_params && traits(stage).partitions_params;  // stage 3's alone
    return predict_process(config, s, local, baseline);
  };
  const ProcessPrediction p = at_stage(run.stage);
  if (p.total() <= max_bytes) return;
  std::string fix;
  for (Stage s : kAllStages) {
    if (const ProcessPrediction q = at_stage(s); q.total() <= max_bytes) {
      fix = fmt::format("stage {} would fit ({})", s, human_bytes(q.total()));
      break;
    }
  }
  if (fix.empty() && !run.offload_optimizer) {
    RunShape offloaded = run;
    offloaded.offload_optimizer = true;
    // The run's own stage first, then the one with the least communication.
    std::vector<Stage> order{run.stage};
    for (Stage s : kAllStages) {
      if (s != run.stage) order.push_back(s);
    }
    for (Stage s : order) {
      offloaded.stage = s;
      if (const ProcessPrediction q = predict_process(config, offloaded, local, baseline); q.total() <= max_bytes) {
        fix = fmt::format(
            "stage {} with --offload-optimizer DIR would fit ({}: the master weights and optimizer states on a "
            "local disk, {} per rank)",
            s, human_bytes(q.total()), human_bytes(q.ranks.front().disk));
        break;
      }
    }
  }
  if (fix.empty() && !run.offload_params && run.dtype.is_low_precision()) {
    RunShape offloaded = run;
    offloaded.stage = Stage::k3;
    offloaded.offload_optimizer = offloaded.offload_params = true;
    if (const ProcessPrediction q = predict_process(config, offloaded, local, baseline); q.total() <= max_bytes) {
      fix = fmt::format(
          "stage 3 with --offload-optimizer DIR --offload-params DIR would fit ({}: the master weights, optimizer "
          "states and parameter shards on a local disk, {} per rank)",
          human_bytes(q.total()), human_bytes(q.ranks.front().disk));
    }
  }
  if (fix.empty()) {
    fix = fmt::format(
        "no stage fits at {} ranks (stage 3 needs {}): add ranks (or machines), lower --micro-batch, "
        "use activation checkpointing, or turn off the sample and held-out answers "
        "(--sample-tokens 0 --held-out 0)",
        run.ranks, human_bytes(at_stage(Stage::k3).total()));
  }
  const RankPrediction& b = p.ranks.front();  // the lowest local rank: the busiest
  const std::string who =
      local.count == 1 ? fmt::format("rank {}", local.first) : fmt::format("{} ranks, the busiest", local.count);
  ZDP_THROW(ConfigError,
            "[train] ZeRO stage {} needs {} in this process ({} {}: params {}, grads {}, optimizer {}, buffers {}, "
            "activations {}, scratch {}; baseline {}), over {} {}: {}",
            run.stage, human_bytes(p.total()), who, human_bytes(b.total()), human_bytes(b.params), human_bytes(b.grads),
            human_bytes(b.master + b.adam_m + b.adam_v), human_bytes(b.gathered + b.buckets + b.offload),
            human_bytes(b.activations), human_bytes(b.scratch()), human_bytes(p.baseline), limit_source,
            human_bytes(max_bytes), fix);
}

}  // namespace zerodp::plan
