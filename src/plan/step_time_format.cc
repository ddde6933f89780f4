// SPDX-License-Identifier: Apache-2.0
#include "plan/step_time_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "comm/quantize.h"
#include "core/stage.h"
#include "plan/quantity.h"

namespace zerodp::plan {
namespace {

std::string describe_link(const Link& link) {
  if (!link.known()) return "not given";
  return fmt::format("{} GB/s each way ({} Gbit/s), latency {} us per exchange step  [{}]",
                     format_significant(link.bandwidth / 1e9), format_significant(link.bandwidth * 8 / 1e9),
                     format_significant(link.latency_s * 1e6), link.source);
}

std::string describe_codec(const CodecCost& c) {
  if (!c.known()) return "not given: the compressed collectives cost their packed bytes alone";
  return fmt::format("pack {} ns, unpack {} ns per element, on the comm thread  [{}]",
                     format_significant(c.quantize_s * 1e9, 3), format_significant(c.dequantize_s * 1e9, 3), c.source);
}

double tokens_per_step(const StepTimeRun& run) {
  return static_cast<double>(run.ranks) * run.micro_batch * run.seq_len * run.grad_accum;
}

using Out = std::back_insert_iterator<std::string>;

// One row per stage and N: the step time and what decides it.
void format_step_table(Out add, const StepTimePrediction& p) {
  int last_n = -1;
  for (const StepTimeRow& row : p.rows) {
    const StepTime& t = row.time;
    if (row.run.ranks != last_n) {
      last_n = row.run.ranks;
      fmt::format_to(add, "\nN = {}\n{:<6}{:>11}{:>10}{:>10}{:>10}{:>12}{:>10}{:>8}{:>12}{:>12}{:>13}{:>14}\n", last_n,
                     "stage", "compute s", "optim s", "comm s", "serial s", "scheduled s", "step s", "hidden",
                     "sent MB", "link MB", "tokens/s", "TFLOP/s/rank");
    }
    if (!row.not_predicted.empty()) {
      fmt::format_to(add, "{:<6}not predicted: {}\n", static_cast<int>(row.run.stage), row.not_predicted);
      continue;
    }
    if (!row.overlap_not_predicted.empty()) {  // the serial step, and why not the overlapped one
      fmt::format_to(add, "{:<6}{:>11.4f}{:>10.4f}{:>10.4f}{:>10.4f}{:>12}{:>10}{:>8}{:>12.2f}{:>12.2f}{:>13}{:>14}\n",
                     static_cast<int>(row.run.stage), t.compute_s, t.optimizer_phase_s(), t.comm_s, t.serial_s, "-",
                     "-", "-", t.sent_bytes / 1e6, t.link_bytes / 1e6, "-", "-");
      fmt::format_to(add, "{:<6}step not predicted: {}\n", "", row.overlap_not_predicted);
      continue;
    }
    fmt::format_to(
        add,
        "{:<6}{:>11.4f}{:>10.4f}{:>10.4f}{:>10.4f}{:>12.4f}{:>10.4f}{:>7.0f}%{:>12.2f}{:>12.2f}{:>13.1f}{:>14.4f}\n",
        static_cast<int>(row.run.stage), t.compute_s, t.optimizer_phase_s(), t.comm_s, t.serial_s, t.scheduled_s,
        t.step_s, 100 * t.hidden_fraction(), t.sent_bytes / 1e6, t.link_bytes / 1e6,
        tokens_per_step(row.run) / t.step_s, t.flops_per_s() / 1e12);
  }
}

// Whether some row's run has `flag` (--offload-params is stage 3's alone).
bool any_row(const StepTimePrediction& p, bool StepTimeRun::*flag) {
  return std::any_of(p.rows.begin(), p.rows.end(), [&](const StepTimeRow& r) { return r.run.*flag; });
}

// Each step time's terms, so that a miss can be traced to the assumption it
// comes from (issue: which collective, or the overlap): step = compute +
// optimizer + each kind of collective + the codec - what the schedule hides.
void format_terms_table(Out add, const StepTimePrediction& p) {
  // --offload-optimizer: the disk's time beside the optimizer's; the step
  // takes the longer of the two (the passes overlap them). --offload-params:
  // the shards' writes join the disk's time, their reads the comm thread's.
  const bool states = any_row(p, &StepTimeRun::offload_optimizer), params = any_row(p, &StepTimeRun::offload_params);
  const bool disk = states || params;
  fmt::format_to(add,
                 "\nThe terms (seconds per step): step = compute + {} + all-reduce + reduce-scatter + all-gather + "
                 "small + codec{} - hidden\n{:<4}{:<6}{:>11}{:>10}{}{:>12}{:>16}{:>12}{:>10}{:>10}{}{:>10}{:>10}\n",
                 states   ? "max(optim, disk)"
                 : params ? "optim + disk"
                          : "optim",
                 params ? " + param reads" : "", "N", "stage", "compute", "optim",
                 disk ? fmt::format("{:>10}", "disk") : "", "all-reduce", "reduce-scatter", "all-gather", "small",
                 "codec", params ? fmt::format("{:>13}", "param reads") : "", "hidden", "step");
  for (const StepTimeRow& row : p.rows) {
    if (!row.not_predicted.empty()) continue;  // said in the table above
    const StepTime& t = row.time;
    const CommTerms& c = t.comm_terms;
    // The overlapped step not predicted (said above): its terms, nothing hidden.
    const bool overlap = row.overlap_not_predicted.empty();
    fmt::format_to(add, "{:<4}{:<6}{:>11.4f}{:>10.4f}{}{:>12.4f}{:>16.4f}{:>12.4f}{:>10.4f}{:>10.4f}{}{:>10}{:>10}\n",
                   row.run.ranks, static_cast<int>(row.run.stage), t.compute_s, t.optimizer_s,
                   disk ? fmt::format("{:>10.4f}", t.disk_s + t.param_write_s) : "", c.all_reduce_s, c.reduce_scatter_s,
                   c.all_gather_s, c.small_s, c.codec_s, params ? fmt::format("{:>13.4f}", c.param_read_s) : "",
                   overlap ? fmt::format("{:.4f}", t.hidden_s()) : "-",
                   overlap ? fmt::format("{:.4f}", t.step_s) : "-");
  }
}

}  // namespace

StepTimePrediction predict_step_times(const GptShape& shape, std::string model_name, const StepTimeRun& base,
                                      const std::vector<int>& ranks, const Hardware& hw) {
  StepTimePrediction p{.model_name = std::move(model_name), .hardware = hw, .rows = {}};
  for (int n : ranks) {
    for (const StageTraits& t : kStageTable) {
      StepTimeRun run = base;
      run.ranks = n;
      run.stage = t.stage;
      run.offload_params = base.offload_params && t.partitions_params;  // stage 3's alone
      // The codecs this stage's collectives use (comm/quantize.h): stage 3's
      // gathers, stages 1-3's gradient reduce-scatter.
      const comm::Quantization weights = t.gathers_on_acquire ? run.quantize_weights : comm::Quantization::kNone;
      const comm::Quantization grads =
          t.reduce == GradReduce::kReduceScatter ? run.quantize_grads : comm::Quantization::kNone;
      std::string why = hw.oversubscribed(n);
      if (why.empty()) why = hw.link_from_another_build(n);
      if (why.empty()) why = hw.codec_from_another_build(weights);
      if (why.empty()) why = hw.codec_from_another_build(grads);
      StepTimeRow& row = p.rows.emplace_back(StepTimeRow{.run = run, .time = {}, .not_predicted = why});
      if (!why.empty()) continue;
      row.time = predict_step_time(shape, run, hw);
      // Only a schedule that runs collectives beside compute needs the comm
      // thread's core; one that runs them while the compute thread sleeps
      // (stage 0's single bucket) does not.
      if (row.time.overlapped_compute_s > 0) row.overlap_not_predicted = hw.comm_threads_oversubscribed(n);
    }
  }
  return p;
}

std::string format_step_time_text(const StepTimePrediction& p) {
  std::string out;
  auto add = std::back_inserter(out);
  const Hardware& hw = p.hardware;
  if (p.rows.empty()) return out;
  const StepTimeRun& r0 = p.rows.front().run;
  fmt::format_to(add, "\nStep time (--predict): {}, {}, micro-batch {} x {} tokens per rank, grad-accum {}{}\n",
                 p.model_name, r0.dtype.name(), r0.micro_batch, r0.seq_len, r0.grad_accum,
                 r0.checkpointing ? ", activation checkpointing" : "");
  fmt::format_to(add, "  layout              {} rank(s) of a data-parallel group per host{}{}\n", hw.ranks_per_host,
                 hw.cores_per_host > 0 ? fmt::format(", {} cores per host", hw.cores_per_host) : "",
                 hw.model_parallel > 1
                     ? fmt::format(", model parallel {} inside a host (each of its GPUs holds 1/{} of the model)",
                                   hw.model_parallel, hw.model_parallel)
                     : "");
  if (r0.shard_group > 0) {
    fmt::format_to(add,
                   "  hybrid sharding     stages 1-3 partition over groups of {} consecutive ranks (N / {} groups); "
                   "each gradient shard is all-reduced across the groups; stage 0 is flat\n",
                   r0.shard_group, r0.shard_group);
  }
  fmt::format_to(add, "  link between hosts  {}\n", describe_link(hw.link));
  if (hw.link_back_to_back.known()) {
    fmt::format_to(add, "    back to back      {}: a collective that starts as the rank's previous one ends\n",
                   describe_link(hw.link_back_to_back));
  }
  fmt::format_to(add, "  shared memory       {}\n", describe_link(hw.local));
  fmt::format_to(add, "  compute             {} GFLOP/s GEMM x {} model efficiency = {} GFLOP/s per {}  [{}]\n",
                 format_significant(hw.gemm_flops / 1e9), format_significant(hw.model_efficiency, 3),
                 format_significant(hw.compute_flops() / 1e9), hw.model_parallel > 1 ? "GPU" : "rank",
                 hw.compute_source.empty() ? "flags" : hw.compute_source);
  fmt::format_to(add, "  optimizer           {} ns per parameter updated\n",
                 format_significant(hw.optimizer_s_per_param * 1e9, 3));
  if (r0.offload_optimizer || any_row(p, &StepTimeRun::offload_params)) {
    fmt::format_to(add,
                   "  disk                {} GB/s read, {} GB/s written, shared by a host's ranks  [{}]: "
                   "--offload-optimizer's passes, overlapped with the optimizer (optim = max(optimizer, disk)); "
                   "--offload-params' reads in each gather's comm-thread task, its writes after the optimizer\n",
                   format_significant(hw.disk.read_Bps / 1e9), format_significant(hw.disk.write_Bps / 1e9),
                   hw.disk.source);
  }
  for (const comm::Quantization q : {comm::Quantization::kInt8, comm::Quantization::kInt4}) {
    if (r0.quantize_weights != q && r0.quantize_grads != q) continue;
    fmt::format_to(add, "  {} codec          {}\n", comm::quantization_name(q), describe_codec(hw.codec(q)));
  }
  fmt::format_to(add, "  overlap efficiency  {} of what the engine's schedule can hide\n",
                 format_significant(hw.overlap_efficiency, 3));
  fmt::format_to(add,
                 "  serial = compute + {} + comm (overlap off); scheduled = the engine's schedule with its comm "
                 "thread;\n  step = serial - overlap efficiency x (serial - scheduled); hidden = (serial - step) / "
                 "comm\n",
                 r0.offload_optimizer ? "max(optimizer, disk)" : "optimizer");
  format_step_table(add, p);
  format_terms_table(add, p);
  return out;
}

nlohmann::json step_time_to_json(const StepTimePrediction& p) {
  using nlohmann::json;
  const Hardware& hw = p.hardware;
  const auto link = [](const Link& l) {
    return json{{"bandwidth_GBps", l.bandwidth / 1e9}, {"latency_us", l.latency_s * 1e6}, {"source", l.source}};
  };
  const auto codec = [](const CodecCost& c) {
    return json{{"quantize_ns", c.quantize_s * 1e9}, {"dequantize_ns", c.dequantize_s * 1e9}, {"source", c.source}};
  };
  json j;
  j["hardware"] = {
      {"ranks_per_host", hw.ranks_per_host},
      {"cores_per_host", hw.cores_per_host},
      {"model_parallel", hw.model_parallel},
      {"link", link(hw.link)},
      {"link_back_to_back", link(hw.link_back_to_back)},
      {"local", link(hw.local)},
      {"gemm_tflops", hw.gemm_flops / 1e12},
      {"model_efficiency", hw.model_efficiency},
      {"optimizer_ns_per_param", hw.optimizer_s_per_param * 1e9},
      {"overlap_efficiency", hw.overlap_efficiency},
      {"codec", {{"int8", codec(hw.int8_codec)}, {"int4", codec(hw.int4_codec)}}},
      {"compute_source", hw.compute_source},
      {"disk",
       {{"read_GBps", hw.disk.read_Bps / 1e9}, {"write_GBps", hw.disk.write_Bps / 1e9}, {"source", hw.disk.source}}}};
  json rows = json::array();
  for (const StepTimeRow& row : p.rows) {
    const StepTime& t = row.time;
    rows.push_back(
        {{"ranks", row.run.ranks},
         {"stage", static_cast<int>(row.run.stage)},
         {"micro_batch", row.run.micro_batch},
         {"seq_len", row.run.seq_len},
         {"grad_accum", row.run.grad_accum},
         {"shard_group", row.run.shard_group == 0 || row.run.stage == Stage::k0 ? row.run.ranks : row.run.shard_group},
         {"quantize_weights",
          comm::quantization_name(traits(row.run.stage).gathers_on_acquire ? row.run.quantize_weights
                                                                           : comm::Quantization::kNone)},
         {"quantize_grads", comm::quantization_name(traits(row.run.stage).reduce == GradReduce::kReduceScatter
                                                        ? row.run.quantize_grads
                                                        : comm::Quantization::kNone)},
         {"quantize_block", row.run.quantize_block},
         {"compute_s", t.compute_s},
         {"optimizer_s", t.optimizer_s},
         {"disk_s", t.disk_s},
         {"param_write_s", t.param_write_s},
         {"comm_s", t.comm_s},
         {"serial_s", t.serial_s},
         {"scheduled_s", t.scheduled_s},
         {"step_s", t.step_s},
         {"hidden_fraction", t.hidden_fraction()},
         {"sent_bytes", t.sent_bytes},
         {"link_bytes", t.link_bytes},
         {"collectives", t.collectives},
         {"comm_terms",
          {{"all_reduce_s", t.comm_terms.all_reduce_s},
           {"reduce_scatter_s", t.comm_terms.reduce_scatter_s},
           {"all_gather_s", t.comm_terms.all_gather_s},
           {"small_s", t.comm_terms.small_s},
           {"codec_s", t.comm_terms.codec_s},
           {"param_read_s", t.comm_terms.param_read_s}}},
         {"hidden_s", t.hidden_s()},
         {"flops_per_rank", t.flops},
         {"tokens_per_s", tokens_per_step(row.run) / t.step_s},
         {"tflops_per_rank", t.flops_per_s() / 1e12}});
    if (!row.not_predicted.empty()) {  // the run's fields and why, no number
      json& r = rows.back();
      for (const char* key : {"compute_s", "optimizer_s", "comm_s", "serial_s", "scheduled_s", "step_s",
                              "hidden_fraction", "sent_bytes", "link_bytes", "collectives", "comm_terms", "hidden_s",
                              "flops_per_rank", "tokens_per_s", "tflops_per_rank"}) {
        r.erase(key);
      }
      r["not_predicted"] = row.not_predicted;
    } else if (!row.overlap_not_predicted.empty()) {  // serial_s and the terms stay
      json& r = rows.back();
      for (const char* key :
           {"scheduled_s", "step_s", "hidden_fraction", "hidden_s", "tokens_per_s", "tflops_per_rank"}) {
        r.erase(key);
      }
      r["overlap_not_predicted"] = row.overlap_not_predicted;
    }
  }
  j["rows"] = rows;
  return j;
}

}  // namespace zerodp::plan
