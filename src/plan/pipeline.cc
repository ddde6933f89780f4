// SPDX-License-Identifier: Apache-2.0
#include "plan/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "plan/activations.h"
#include "plan/collective_cost.h"
#include "plan/engine_memory.h"
#include "plan/pipeline_memory.h"

namespace zerodp::plan {
namespace {

constexpr std::array<Stage, 2> kPipelineZeroStages = {Stage::k0, Stage::k1};

// The ops a pipeline cuts, in order: the embedding, each block, and the
// final layernorm with the LM head (one item: the head reads the final
// layernorm's output), with their forward FLOPs per micro-batch (a third
// of GptShape's forward and backward).
std::vector<double> op_forward_flops(const PipelineConfig& c, int seq_len) {
  std::vector<double> flops{0.0};
  flops.insert(flops.end(), static_cast<size_t>(c.shape.layers), c.shape.block_train_flops(c.micro_batch, seq_len) / 3);
  flops.push_back(c.shape.head_train_flops(c.micro_batch, seq_len) / 3);
  return flops;
}

}  // namespace

std::vector<size_t> balanced_cut(std::span<const double> costs, int parts) {
  std::vector<double> prefix(costs.size() + 1, 0.0);
  for (size_t i = 0; i < costs.size(); ++i) prefix[i + 1] = prefix[i] + costs[i];
  return balanced_cut(costs.size(), parts, [&prefix](size_t, size_t lo, size_t hi) { return prefix[hi] - prefix[lo]; });
}

std::vector<size_t> balanced_cut(size_t n, int parts, const PartCost& cost) {
  const auto p = static_cast<size_t>(parts);
  ZDP_CHECK(parts >= 1 && p <= n, ConfigError, "[plan] {} items cannot be cut into {} non-empty parts", n, parts);
  // best[k][i]: the least largest part over cuts of items [0, i) into k parts.
  constexpr double kNone = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(p + 1, std::vector<double>(n + 1, kNone));
  std::vector<std::vector<size_t>> from(p + 1, std::vector<size_t>(n + 1, 0));
  best[0][0] = 0.0;
  for (size_t k = 1; k <= p; ++k) {
    for (size_t i = k; i <= n; ++i) {
      for (size_t j = k - 1; j < i; ++j) {
        const double worst = std::max(best[k - 1][j], cost(k - 1, j, i));
        // Ties go to the later cut: the earlier stages, which hold more
        // micro-batches in flight under 1F1B, get the fewer items.
        if (worst <= best[k][i]) {
          best[k][i] = worst;
          from[k][i] = j;
        }
      }
    }
  }
  std::vector<size_t> first(p);
  for (size_t k = p, i = n; k >= 1; --k) {
    first[k - 1] = from[k][i];
    i = from[k][i];
  }
  return first;
}

std::string_view pipeline_balance_name(PipelineBalance balance) {
  return balance == PipelineBalance::kFlops ? "flops" : "memory";
}

PipelineBalance parse_pipeline_balance(std::string_view name) {
  if (name == "memory") return PipelineBalance::kMemory;
  ZDP_CHECK(name == "flops", ConfigError, "[pipeline] --pipeline-balance '{}' is not known: use flops or memory", name);
  return PipelineBalance::kFlops;
}

namespace {

// A stage's memory per rank at ZeRO 1 for items [lo, hi) of `items` (the
// embedding, the blocks, the head) as stage `s`: its units' states among
// the D replicas and its workspaces in flight. The cut's cost, O(1) per
// part: the exact plan (pipeline_memory.h) then reports the chosen cut.
double stage_memory(const PipelineConfig& c, const ActivationSplit& act, int replicas, size_t s, size_t lo, size_t hi,
                    size_t items) {
  const bool embedding = lo == 0, head = hi == items;
  const auto layers = static_cast<uint64_t>(std::min(hi, items - 1) - std::max<size_t>(lo, 1));
  uint64_t params = layers * c.shape.block_params();
  if (embedding) params += c.shape.embedding_params();
  if (head) params += c.shape.final_params() + (embedding ? 0 : c.shape.embedding_params());
  const uint64_t shard = (params + static_cast<uint64_t>(replicas) - 1) / static_cast<uint64_t>(replicas);
  const BytesPerParam bpp = bytes_per_param(c.precision, c.optimizer);
  const uint64_t states = model_state_bytes_with_shard(params, shard, Stage::k1, bpp).total();
  const uint64_t workspace = workspace_bytes(act, layers, head);
  const int in_flight = micro_batches_in_flight(c.schedule, c.stages, static_cast<int>(s), c.micro_batches);
  return static_cast<double>(states + static_cast<uint64_t>(in_flight) * workspace);
}

}  // namespace

PipelinePlan plan_pipeline(const PipelineConfig& c) {
  c.shape.validate();
  const int p = c.stages, layers = c.shape.layers;
  ZDP_CHECK(p >= 1 && c.ranks >= p && c.ranks % p == 0, ConfigError,
            "[plan] --pipeline-stages {} does not divide the {} ranks: use a divisor of {}", p, c.ranks, c.ranks);
  ZDP_CHECK(p <= layers, ConfigError, "[plan] --pipeline-stages {} exceeds the model's {} blocks: use at most {}", p,
            layers, layers);
  ZDP_CHECK(c.micro_batches >= 1, ConfigError, "[plan] --grad-accum (the micro-batches M) {} must be at least 1",
            c.micro_batches);
  const int seq = c.seq_len > 0 ? c.seq_len : c.shape.context;
  const std::vector<double> flops = op_forward_flops(c, seq);  // embedding, L blocks, head
  const ActivationSplit act = split_activations(c);            // once: each stage's workspace is made of it
  std::vector<size_t> first;
  if (c.layers_per_stage.empty() && c.balance == PipelineBalance::kFlops) {
    first = balanced_cut(flops, p);
  } else if (c.layers_per_stage.empty()) {
    const int replicas = c.ranks / p;
    first = balanced_cut(flops.size(), p, [&](size_t s, size_t lo, size_t hi) {
      return stage_memory(c, act, replicas, s, lo, hi, flops.size());
    });
  } else {
    ZDP_CHECK(static_cast<int>(c.layers_per_stage.size()) == p &&
                  std::all_of(c.layers_per_stage.begin(), c.layers_per_stage.end(), [](int l) { return l >= 1; }) &&
                  std::accumulate(c.layers_per_stage.begin(), c.layers_per_stage.end(), 0) == layers,
              ConfigError,
              "[plan] --pipeline-cut needs {} numbers of blocks, each at least 1, summing to the model's {} blocks", p,
              layers);
    // The embedding goes with the first stage's blocks, the head with the last's.
    size_t at = 0;
    for (int s = 0; s < p; ++s) {
      first.push_back(s == 0 ? 0 : at + 1);
      at += static_cast<size_t>(c.layers_per_stage[static_cast<size_t>(s)]);
    }
  }
  const uint64_t btc = static_cast<uint64_t>(c.micro_batch) * seq * c.shape.channels;
  PipelinePlan plan;
  plan.config = c;
  plan.replicas = c.ranks / p;
  plan.bubble = bubble_fraction(p, c.micro_batches);
  // The last stage's copy is the whole embedding unit (the engine's units are whole).
  plan.tied_embedding_elements = p > 1 ? c.shape.embedding_params() : 0;
  const size_t items = flops.size();
  for (int s = 0; s < p; ++s) {
    const size_t lo = first[static_cast<size_t>(s)], hi = s + 1 < p ? first[static_cast<size_t>(s) + 1] : items;
    PipelineStagePlan st;
    st.embedding = lo == 0;
    st.head = hi == items;
    st.first_layer = static_cast<int>(std::max<size_t>(lo, 1)) - 1;
    st.layers = static_cast<int>(std::min(hi, items - 1) - std::max<size_t>(lo, 1));
    std::vector<uint64_t> units;  // the engine's units this stage holds
    if (st.embedding) units.push_back(c.shape.embedding_params());
    for (int l = 0; l < st.layers; ++l) units.push_back(c.shape.block_params());
    if (st.head) {
      units.push_back(c.shape.final_params());
      if (!st.embedding) units.push_back(c.shape.embedding_params());  // the tied embedding's copy
    }
    st.params = std::accumulate(units.begin(), units.end(), uint64_t{0});
    for (size_t i = lo; i < hi; ++i) st.forward_flops += flops[i];
    st.in_flight = micro_batches_in_flight(c.schedule, p, s, c.micro_batches);
    const uint64_t workspace = workspace_bytes(act, static_cast<uint64_t>(st.layers), st.head);
    st.scratch = workspace_scratch(act, static_cast<uint64_t>(st.layers));
    st.activations_per_micro = workspace - st.scratch;
    st.activations = static_cast<uint64_t>(st.in_flight) * workspace;
    // To its neighbours: activations up, gradients down, B x T x C fp32 per
    // micro-batch; the tied embedding: the last stage's part of its
    // gradient (fp32) per micro-batch, and the first stage's updated
    // weights once per step.
    const uint64_t neighbours = (s > 0 ? 1 : 0) + (s + 1 < p ? 1 : 0);
    st.sent_per_step = neighbours * static_cast<uint64_t>(c.micro_batches) * btc * sizeof(float);
    if (p > 1 && s == p - 1)
      st.sent_per_step += static_cast<uint64_t>(c.micro_batches) * plan.tied_embedding_elements * 4;
    if (p > 1 && s == 0) st.sent_per_step += plan.tied_embedding_elements * c.precision.size();
    plan.stages.push_back(st);
  }
  // Each stage's busiest rank (its replica 0), as its engine books it.
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    PipelineStagePlan& st = plan.stages[s];
    for (size_t z = 0; z < kPipelineZeroStages.size(); ++z) {
      const EngineRun run{.stage = kPipelineZeroStages[z], .dtype = c.precision, .optimizer = c.optimizer};
      const RankPrediction r = predict_pipeline_rank(plan, run, static_cast<int>(s) * plan.replicas);
      st.states[z] = ModelStateBytes{r.params, r.grads, r.master, r.adam_m, r.adam_v};
      st.compute_copy = r.compute_copy;
      st.peak[z] = r.total();
      plan.peak[z] = std::max(plan.peak[z], st.peak[z]);
    }
  }
  return plan;
}

PipelineStepTime predict_pipeline_step(const PipelinePlan& plan, Stage zero, const Hardware& hw) {
  const PipelineConfig& c = plan.config;
  ZDP_CHECK(zero == Stage::k0 || zero == Stage::k1, ConfigError,
            "[plan] a pipeline runs at ZeRO stage 0 or 1 (DeepSpeed refuses 2 and 3 with pipelines too)");
  ZDP_CHECK(hw.compute_flops() > 0, ConfigError,
            "[plan] --predict needs a GEMM rate: give --gemm-rate (e.g. 100T), --calibrate-model (zerodp bench model "
            "--json) or gemm_tflops in --hardware");
  const int p = c.stages, d = plan.replicas;
  const int seq = c.seq_len > 0 ? c.seq_len : c.shape.context;
  const double stream = static_cast<double>(c.micro_batch) * seq * c.shape.channels * sizeof(float);
  const auto host = [&](int rank) { return rank / std::max(1, hw.ranks_per_host); };
  // A boundary that crosses hosts: a host's replicas send through its link at once.
  const int link_sharing = std::min(d, std::max(1, hw.ranks_per_host));
  PipelineStepTime t;
  double slowest = 0;
  for (int s = 0; s < p; ++s) {
    const PipelineStagePlan& st = plan.stages[static_cast<size_t>(s)];
    // Checkpointing recomputes the blocks' forward in the backward.
    const double recompute = c.checkpointing ? st.forward_flops : 0;
    t.stage_s.push_back((3 * st.forward_flops + recompute) / hw.compute_flops());
    double send = 0;
    if (s + 1 < p) {
      // Replica 0's pair stands for all: the layout repeats.
      const bool across = host(s * d) != host((s + 1) * d);
      const Link& link = across ? hw.link : hw.local;
      ZDP_CHECK(link.known(), ConfigError,
                "[plan] --predict with --pipeline-stages needs the {} between pipeline stages: give {}",
                across ? "link between hosts" : "shared-memory link",
                across ? "--link-bandwidth" : "--local-bandwidth");
      const double sharing = across ? link_sharing : 1;
      send = 2 * (link.latency_s + stream * sharing / link.bandwidth);  // the activation, then its gradient
      t.send_s.push_back(send);
    }
    const double per_micro = t.stage_s.back() + send;
    t.schedule_s += per_micro;
    slowest = std::max(slowest, per_micro);
  }
  t.schedule_s += (c.micro_batches - 1) * slowest;
  t.bubble = 1 - c.micro_batches * slowest / t.schedule_s;
  const double dsize = static_cast<double>(c.precision.size());
  const Placement replicas = shard_group_placement(c.ranks, d, hw);
  for (const PipelineStagePlan& st : plan.stages) {
    const double bytes = static_cast<double>(st.params) * dsize;
    double seconds = 0;
    if (d > 1) {
      seconds = zero == Stage::k0 ? collective_seconds(CollectiveOp::kAllReduce, bytes, replicas, hw)
                                  : collective_seconds(CollectiveOp::kReduceScatter, bytes, replicas, hw) +
                                        collective_seconds(CollectiveOp::kAllGather, bytes, replicas, hw);
    }
    const double updated = zero == Stage::k1 ? std::ceil(static_cast<double>(st.params) / d) : st.params;
    t.reduce_s = std::max(t.reduce_s, seconds + updated * hw.optimizer_s_per_param);
  }
  if (p > 1) {
    // The tied embedding (zero/pipeline.h): the last stage's part of its
    // gradient to the first stage each micro-batch (fp32), the updated
    // weights back after the step, rendezvous sends on both ends' paths.
    const bool across = host(0) != host((p - 1) * d);
    const Link& link = across ? hw.link : hw.local;
    ZDP_CHECK(link.known(), ConfigError, "[plan] --predict needs the {} for the tied embedding: give {}",
              across ? "link between hosts" : "shared-memory link", across ? "--link-bandwidth" : "--local-bandwidth");
    const double sharing = across ? link_sharing : 1;
    const auto send = [&](double bytes) { return link.latency_s + bytes * sharing / link.bandwidth; };
    const auto e = static_cast<double>(plan.tied_embedding_elements);
    t.tied_s = c.micro_batches * send(e * sizeof(float)) + send(e * dsize);
  }
  t.step_s = t.schedule_s + t.reduce_s + t.tied_s;
  return t;
}

int largest_layers_that_fit(const PipelineConfig& config, uint64_t bytes) {
  PipelineConfig c = config;
  c.layers_per_stage.clear();  // each depth balanced anew
  const auto fits = [&](int layers) {
    c.shape.layers = layers;
    return plan_pipeline(c).peak[1] <= bytes;
  };
  // The peak grows with the depth: double to a depth that does not fit,
  // then halve the gap (some twenty plans at most).
  constexpr int kMost = kMostPipelineLayers;
  int lo = std::max(1, c.stages);
  if (!fits(lo)) return 0;
  int hi = lo;
  while (hi < kMost && fits(std::min(kMost, 2 * hi))) hi = std::min(kMost, 2 * hi);
  if (hi == kMost) return kMost;
  lo = hi;
  hi = std::min(kMost, 2 * hi);  // does not fit
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::string format_pipeline_text(const PipelinePlan& plan) {
  const PipelineConfig& c = plan.config;
  const int p = c.stages;
  std::string out = fmt::format(
      "\nPipeline: N = {} ranks = P {} stages x D {} data-parallel replicas, {} with M = {} micro-batches of {} x {} "
      "per step\n",
      c.ranks, p, plan.replicas, pipeline_schedule_name(c.schedule), c.micro_batches, c.micro_batch,
      c.seq_len > 0 ? c.seq_len : c.shape.context);
  out +=
      fmt::format("  {:<6}{:<22}{:>12}{:>14}{:>10}{:>16}{:>14}{:>14}{:>14}{:>14}\n", "stage", "holds", "params",
                  "fwd GFLOP/mb", "in flight", "activations GB", "ZeRO-0 GB", "ZeRO-1 GB", "peak-1 GB", "sent GB/step");
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const PipelineStagePlan& st = plan.stages[s];
    std::string holds = st.layers > 0 ? fmt::format("blocks {}-{}", st.first_layer, st.first_layer + st.layers - 1)
                                      : std::string("no blocks");
    if (st.embedding) holds.insert(0, "embed, ");
    if (st.head) holds += ", head";
    out += fmt::format("  {:<6}{:<22}{:>12}{:>14.2f}{:>10}{:>16.3f}{:>14.3f}{:>14.3f}{:>14.3f}{:>14.3f}\n", s, holds,
                       st.params, st.forward_flops / 1e9, st.in_flight, static_cast<double>(st.activations) / 1e9,
                       static_cast<double>(st.states[0].total()) / 1e9, static_cast<double>(st.states[1].total()) / 1e9,
                       static_cast<double>(st.peak[1]) / 1e9, static_cast<double>(st.sent_per_step) / 1e9);
  }
  out += fmt::format(
      "  bubble (P-1)/(M+P-1) = {:.1f}% of each step; activations: {} micro-batch(es) in flight at stage s ({}), "
      "each in a workspace of its own; peak-1: the stage engine's peak at ZeRO stage 1 (states, compute copy, "
      "activations, buffers)\n",
      100 * plan.bubble, c.schedule == PipelineSchedule::kGpipe ? "M" : "min(P-s, M)",
      pipeline_schedule_name(c.schedule));
  if (p > 1) {
    out += fmt::format(
        "  sent: the residual stream forward and its gradient backward, B x T x C fp32 per micro-batch and "
        "neighbour; the tied embedding's {} elements: stage {}'s part of their gradient (fp32) to stage 0 per "
        "micro-batch, the updated weights back per step\n",
        plan.tied_embedding_elements, p - 1);
  }
  out +=
      "  ZeRO stages 2 and 3 are not planned with a pipeline (DeepSpeed refuses them too): the gradients "
      "accumulate over the M micro-batches before one reduction\n";
  return out;
}

nlohmann::json pipeline_to_json(const PipelinePlan& plan) {
  const PipelineConfig& c = plan.config;
  nlohmann::json j = {{"ranks", c.ranks},
                      {"stages", c.stages},
                      {"replicas", plan.replicas},
                      {"schedule", std::string(pipeline_schedule_name(c.schedule))},
                      {"micro_batches", c.micro_batches},
                      {"bubble", plan.bubble},
                      {"tied_embedding_elements", plan.tied_embedding_elements},
                      {"peak_bytes", {{"zero0", plan.peak[0]}, {"zero1", plan.peak[1]}}},
                      {"per_stage", nlohmann::json::array()}};
  for (const PipelineStagePlan& st : plan.stages) {
    j["per_stage"].push_back({{"first_layer", st.first_layer},
                              {"layers", st.layers},
                              {"embedding", st.embedding},
                              {"head", st.head},
                              {"params", st.params},
                              {"forward_flops", st.forward_flops},
                              {"in_flight", st.in_flight},
                              {"activation_bytes", st.activations},
                              {"states_bytes", {{"zero0", st.states[0].total()}, {"zero1", st.states[1].total()}}},
                              {"peak_bytes", {{"zero0", st.peak[0]}, {"zero1", st.peak[1]}}},
                              {"sent_bytes_per_step", st.sent_per_step}});
  }
  return j;
}

}  // namespace zerodp::plan
