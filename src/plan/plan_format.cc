// SPDX-License-Identifier: Apache-2.0
#include "plan/plan_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plan/quantity.h"

namespace zerodp::plan {
namespace {

// The plan's words for the fp32 compute copy of a mixed-precision run.
std::string compute_copy_words(const PlanResult& r) {
  const PlanConfig& c = r.config;
  if (!c.precision.is_low_precision()) return "";
  if (!(c.bf16_compute && c.precision == Dtype::bf16()) || r.per_ranks.empty()) {
    return "an fp32 compute copy of it at every stage; ";
  }
  // bf16 products read the bf16 units in place: the copy holds what the ops
  // widen and the gradients (the tied embedding's a few rows at a time).
  return fmt::format(
      "bf16 products read the bf16 units in place, so the fp32 compute copy holds only a block's gradient and what the "
      "ops widen ({} elements), the tied embedding's gradient made a few rows at a time there; ",
      format_thousands(r.per_ranks[0].stages[0].compute_copy / 4));
}

using Row = std::vector<std::string>;

// Left-aligned columns separated by two spaces; the header underlined.
std::string render_table(const Row& header, const std::vector<Row>& rows) {
  std::vector<size_t> width(header.size(), 0);
  auto measure = [&](const Row& r) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) {
      // Count code points, not bytes, so "Φ" is one column.
      size_t n = 0;
      for (unsigned char ch : r[i]) n += (ch & 0xC0) != 0x80 ? 1 : 0;
      width[i] = std::max(width[i], n);
    }
  };
  measure(header);
  for (const Row& r : rows) measure(r);
  auto line = [&](const Row& r) {
    std::string out = "  ";
    for (size_t i = 0; i < r.size(); ++i) {
      size_t n = 0;
      for (unsigned char ch : r[i]) n += (ch & 0xC0) != 0x80 ? 1 : 0;
      out += r[i];
      if (i + 1 < r.size()) out += std::string(width[i] - n + 2, ' ');
    }
    return out + "\n";
  };
  std::string out = line(header);
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  out += "  " + std::string(total - 2, '-') + "\n";
  for (const Row& r : rows) out += line(r);
  return out;
}

std::string gb(double bytes) { return format_significant(bytes / kGB); }
std::string gib(double bytes) { return format_significant(bytes / kGiB); }

std::string optimizer_display(const optim::OptimizerConfig& o) {
  switch (o.kind) {
    case optim::OptimizerKind::kAdamW:
      return "AdamW";
    case optim::OptimizerKind::kAdam:
      return "Adam";
    case optim::OptimizerKind::kSgd:
      return o.sgd.momentum > 0.0 ? "SGD with momentum" : "SGD";
    case optim::OptimizerKind::kLion:
      return o.lion.bf16_momentum ? "Lion (bf16 momentum)" : "Lion";
    case optim::OptimizerKind::kAdam8bit:
      return "8-bit Adam";
    case optim::OptimizerKind::kAdafactor:
      return "Adafactor";
  }
  return "?";
}

}  // namespace

std::string describe_training(const PlanConfig& config) {
  return fmt::format("{} + {}{}", config.precision.name(), optimizer_display(config.optimizer),
                     config.precision.is_low_precision() ? " (mixed precision: fp32 master weights)" : "");
}

std::string describe_bytes_per_param(const BytesPerParam& bpp, const optim::OptimizerConfig& optimizer) {
  std::vector<std::string> parts;
  if (bpp.master) parts.push_back(fmt::format("fp32 master {}", bpp.master));
  const bool adam = optimizer.kind == optim::OptimizerKind::kAdamW || optimizer.kind == optim::OptimizerKind::kAdam;
  const optim::OptimizerBytesPerParam k = optim::optimizer_bytes_per_param(optimizer, false);
  if (k.quant_block) {
    parts.push_back(fmt::format("Adam m {} + Adam v {}, 8-bit, + {} bytes per {} for their scales", bpp.moment1,
                                bpp.moment2, 2 * k.scale_bytes, k.quant_block));
    // The units that keep AdamW's fp32 moments (optim::unit_optimizer_config).
    std::vector<std::string> fp32;
    if (optimizer.adam.fp32_embedding) fp32.push_back("the token embedding's unit");
    if (optimizer.adam.min_8bit_size > 0) fp32.push_back(fmt::format("units under {}", optimizer.adam.min_8bit_size));
    if (!fp32.empty()) parts.back() += fmt::format("; {}: m 4 + v 4", fmt::join(fp32, " and "));
  } else if (k.tensor_stats) {
    if (bpp.moment1) parts.push_back(fmt::format("m {}", bpp.moment1));
    parts.push_back(
        "v factored, + fp32 row and column statistics per matrix and 4 bytes per element of the other tensors");
  } else {
    if (bpp.moment1) parts.push_back(fmt::format("{} {}", adam ? "Adam m" : "momentum", bpp.moment1));
    if (bpp.moment2) parts.push_back(fmt::format("Adam v {}", bpp.moment2));
  }
  const std::string detail = parts.empty() ? "no optimizer state" : fmt::format("{}", fmt::join(parts, " + "));
  return fmt::format("params {} + grads {} + optimizer K = {} ({}) = {}", bpp.params, bpp.grads, bpp.optimizer(),
                     detail, bpp.total());
}

std::string format_plan_text(const PlanResult& r, const FormatOptions& options) {
  const PlanConfig& c = r.config;
  const BytesPerParam& bpp = r.bytes_per_param;
  std::string out;
  const std::string model =
      c.shape ? fmt::format(" ({}: L={} H={} C={} V={} T={})", c.model_name.empty() ? "custom" : c.model_name,
                            c.shape->layers, c.shape->heads, c.shape->channels, c.shape->vocab, c.shape->context)
              : "";
  out += fmt::format("zerodp plan: Φ = {} parameters ({}){}, {}\n", format_thousands(c.num_params),
                     format_count(static_cast<double>(c.num_params)), model, describe_training(c));
  const double replica = static_cast<double>(c.num_params) * bpp.total();
  out += fmt::format("Bytes per parameter, one replica: {} -> {}Φ = {} GB ({} GiB)\n",
                     describe_bytes_per_param(bpp, c.optimizer), bpp.total(), gb(replica), gib(replica));
  const auto checkpoint = static_cast<double>(r.checkpoint_bytes);
  out += fmt::format(
      "Checkpoint on disk: {} GB ({} GiB): fp32 master weights and the optimizer's state, each element once at any "
      "stage; zerodp train --save needs room for two\n",
      gb(checkpoint), gib(checkpoint));
  if (c.device_memory) {
    out += fmt::format("Device memory per rank: {} GB ({} GiB)\n", gb(static_cast<double>(*c.device_memory)),
                       gib(static_cast<double>(*c.device_memory)));
  }
  if (r.largest_unit_params) {
    out += fmt::format(
        "Largest unit: {} parameters. Unit buffers: {}stage 3 adds two gathered units (current + prefetched); "
        "backward adds the gradients of the units in flight\n",
        format_thousands(*r.largest_unit_params), compute_copy_words(r));
  }
  out += "Units: GB = 1e9 bytes (the ZeRO paper's unit), GiB = 2^30 bytes. Communication is per rank per step.\n";
  if (c.grad_accum > 1) {
    out += fmt::format(
        "--grad-accum {0}: zerodp reduces every micro-batch at every stage (docs/architecture.md), so stage 1's grads "
        "add an owned accumulator (Φ/N) to its flat local gradients, and a step sends {0} reductions where the "
        "communication columns show one (stage 2: {0} reduce-scatters + 1 all-gather = {1}Φ)\n",
        c.grad_accum, c.grad_accum + 1);
    if (pairwise_partials(c.grad_accum) > 0) {
      out += fmt::format(
          "--grad-accum {}: the micro-batches are summed pairwise (the same bits at every power-of-two N), which "
          "holds {} partial sum(s) the size of the gradient accumulator; the grads columns include them\n",
          c.grad_accum, pairwise_partials(c.grad_accum));
    }
  }

  const bool has_gathered = r.largest_unit_params.has_value();
  const bool has_act = r.activations.has_value();
  const std::string mem_label =
      c.device_memory ? fmt::format("fits {} GB", gb(static_cast<double>(*c.device_memory))) : "";

  for (const RankPlan& rp : r.per_ranks) {
    if (rp.shard_group < rp.ranks) {
      out += fmt::format(
          "\nN = {} ranks in {} groups of G = {} (hybrid sharding: stages 1-3 partition over G and replicate "
          "across groups): per-rank bytes\n",
          rp.ranks, rp.ranks / rp.shard_group, rp.shard_group);
    } else {
      out += fmt::format("\nN = {} rank{}: per-rank bytes\n", rp.ranks, rp.ranks == 1 ? "" : "s");
    }
    Row header = {"stage", "partitions", "params GB", "grads GB", "optimizer GB", "states GB", "states GiB"};
    if (has_gathered) header.push_back("buffers GB");
    const bool offload = c.offload_optimizer || c.offload_params;
    if (offload) header.push_back("disk GB");
    if (has_act) header.push_back("activations GB");
    if (has_gathered || has_act) {
      header.push_back("peak GB");
      header.push_back("peak GiB");
    }
    header.push_back("comm elements");
    header.push_back("comm GB");
    header.push_back("sent GB");
    if (c.device_memory) header.push_back(mem_label);
    std::vector<Row> rows;
    for (const StagePlan& s : rp.stages) {
      Row row = {std::to_string(stage_number(s.stage)),
                 std::string(traits(s.stage).partitions_optimizer ? traits(s.stage).paper_name : "none (DP)"),
                 gb(static_cast<double>(s.states.params)),
                 gb(static_cast<double>(s.states.grads)),
                 gb(static_cast<double>(s.states.optimizer())),
                 gb(static_cast<double>(s.states.total())),
                 gib(static_cast<double>(s.states.total()))};
      if (has_gathered) row.push_back(gb(static_cast<double>(s.buffers())));
      if (offload) row.push_back(gb(static_cast<double>(s.disk)));
      if (has_act) row.push_back(gb(static_cast<double>(s.activations)));
      if (has_gathered || has_act) {
        row.push_back(gb(static_cast<double>(s.peak)));
        row.push_back(gib(static_cast<double>(s.peak)));
      }
      row.push_back(fmt::format("{}Φ = {}", s.comm.collectives, format_count(static_cast<double>(s.comm.elements))));
      row.push_back(gb(static_cast<double>(s.comm.bytes)));
      row.push_back(gb(static_cast<double>(s.comm.sent_bytes)));
      if (s.fits) row.push_back(*s.fits ? "yes" : "no");
      rows.push_back(std::move(row));
    }
    out += render_table(header, rows);
    out += "  comm elements/GB: the paper's volume (2Φ or 3Φ, in " + std::string(c.precision.name()) +
           "); sent GB: what a ring or all-to-all puts on each rank's link, (N-1)/N of it.\n";
    if (c.offload_optimizer) {
      const StagePlan& s3 = rp.stages[3];
      out += fmt::format(
          "  --offload-optimizer: optimizer GB is what stays in RAM (the optimizers' own work buffers); the master\n"
          "  weights and states are on the disk (disk GB per rank), streamed through three staging buffers of the\n"
          "  largest unit's, in buffers GB ({} GB at stage 3). Each step reads {} GB and writes {} GB per rank at\n"
          "  stage 3 (docs/offload.md)\n",
          gb(static_cast<double>(s3.offload)), gb(static_cast<double>(s3.disk_read)),
          gb(static_cast<double>(s3.disk_written)));
    }
    if (c.offload_params) {
      const StagePlan& s3 = rp.stages[3];
      out += fmt::format(
          "  --offload-params: stage 3's params GB is 0; its parameter shards are on the disk (in disk GB), read\n"
          "  for each gather and written after each step through one staging buffer (in buffers GB). Stage 3's\n"
          "  disk traffic per step, all files: {} GB read, {} GB written (docs/offload.md)\n",
          gb(static_cast<double>(s3.disk_read)), gb(static_cast<double>(s3.disk_written)));
    }
    if (rp.shard_group < rp.ranks) {
      out += fmt::format(
          "  hybrid: sent GB at stages 1-3 is the group's collectives ((G-1)/G of them) plus the shard's "
          "all-reduce across the {} groups, {} GB per rank per micro-batch: the only bytes that leave a group\n",
          rp.ranks / rp.shard_group, gb(static_cast<double>(rp.stages[1].comm.across_groups_sent_bytes)));
    }
    if (c.quantize_weights != comm::Quantization::kNone || c.quantize_grads != comm::Quantization::kNone) {
      out += fmt::format(
          "  compressed: parameter gathers {}, gradient reduce-scatters {} (where the stage has them): comm GB and "
          "sent GB count their packed bytes, codes + a 4-byte scale per {} elements\n",
          comm::quantization_name(c.quantize_weights), comm::quantization_name(c.quantize_grads), c.quantize_block);
    }
    out += fmt::format("  recommended: {}\n", rp.recommendation);
    if (c.device_memory) {
      std::vector<std::string> sizes;
      for (const StagePlan& s : rp.stages) {
        sizes.push_back(
            fmt::format("stage {} {}", s.stage, format_count(static_cast<double>(s.max_params.value_or(0)))));
      }
      out +=
          fmt::format("  largest model whose model states{} fit {} GB at N = {}: {}\n",
                      c.offload_optimizer && c.offload_params ? " in RAM (K's bytes on disk; at stage 3 the params too)"
                      : c.offload_optimizer                   ? " in RAM (K's bytes on disk)"
                      : c.offload_params                      ? " in RAM (at stage 3 the params on disk)"
                                                              : "",
                      gb(static_cast<double>(*c.device_memory)), rp.ranks, fmt::join(sizes, ", "));
    }
    if (options.compare_deepspeed) {
      out +=
          "  DeepSpeed's estimators (their model: 2Φ fp16 params + 18Φ/N for fp16 grads, an fp32 gradient "
          "partition, fp32 master and Adam; DeepSpeed prints GiB and calls them GB):\n";
      const auto& s2 = rp.stages[2];
      out += fmt::format(
          "    estimate_zero2 (no offload) 2Φ + int(18Φ/N) = {} GiB ({} GB);  zerodp stage 2 (the "
          "paper's 16Φ model, {}) = {} GiB\n",
          gib(static_cast<double>(rp.deepspeed.zero2_bytes)), gb(static_cast<double>(rp.deepspeed.zero2_bytes)),
          c.precision.name(), gib(static_cast<double>(s2.states.total())));
      const auto& s3 = rp.stages[3];
      if (rp.deepspeed.zero3_bytes) {
        out += fmt::format(
            "    estimate_zero3 (no offload) 4 x largest layer ({}) + int(18Φ/N) = {} GiB ({} GB);  "
            "zerodp stage 3 states + unit buffers = {} GiB\n",
            format_thousands(r.largest_module_params.value_or(0)), gib(static_cast<double>(*rp.deepspeed.zero3_bytes)),
            gb(static_cast<double>(*rp.deepspeed.zero3_bytes)),
            gib(static_cast<double>(s3.states.total() + s3.buffers())));
      } else {
        out += "    estimate_zero3 needs the largest layer: give --model\n";
      }
    }
  }

  if (r.per_ranks.size() > 1) {
    out += "\nPer-rank model states in GB (the ZeRO paper's Table 1 layout)\n";
    Row header = {"N", "stage 0", "stage 1 P_os", "stage 2 P_os+g", "stage 3 P_os+g+p"};
    if (c.device_memory) header.push_back("recommended");
    std::vector<Row> rows;
    for (const RankPlan& rp : r.per_ranks) {
      Row row = {std::to_string(rp.ranks)};
      for (const StagePlan& s : rp.stages) row.push_back(gb(static_cast<double>(s.states.total())));
      if (c.device_memory) row.push_back(rp.recommended ? fmt::format("stage {}", *rp.recommended) : "none fits");
      rows.push_back(std::move(row));
    }
    out += render_table(header, rows);
  }

  if (r.activations && options.activation_breakdown) {
    const ActivationEstimate& a = *r.activations;
    // --compute bf16 keeps what only products read at 2 bytes (the GB column says each term's).
    const std::string element =
        a.config.bf16_product_inputs
            ? fmt::format("{} bytes per element, 2 for the bf16 products' inputs", a.config.element_bytes)
            : fmt::format("{} bytes per element", a.config.element_bytes);
    out += fmt::format("\nActivations per rank: B = {}, T = {}, {}, checkpointing {}: {} GB ({} GiB)\n",
                       a.config.micro_batch, a.config.seq_len, element, a.config.checkpointing ? "on" : "off",
                       gb(static_cast<double>(a.total_bytes)), gib(static_cast<double>(a.total_bytes)));
    Row header = {"tensor", "shape", "role", "count", "GB", "GiB"};
    std::vector<Row> rows;
    for (const ActivationTerm& t : a.terms) {
      rows.push_back({t.name, t.shape, t.role, std::to_string(t.count), gb(static_cast<double>(t.bytes)),
                      gib(static_cast<double>(t.bytes))});
    }
    out += render_table(header, rows);
  }
  return out;
}

nlohmann::json plan_to_json(const PlanResult& r, const FormatOptions& options) {
  using nlohmann::json;
  const PlanConfig& c = r.config;
  json j;
  j["config"] = {{"num_params", c.num_params},
                 {"ranks", c.ranks},
                 {"precision", std::string(c.precision.name())},
                 {"optimizer", std::string(optimizer_name(c.optimizer))}};
  if (c.device_memory) j["config"]["device_memory_bytes"] = *c.device_memory;
  if (c.shard_group > 0) j["config"]["shard_group"] = c.shard_group;
  if (c.offload_optimizer) j["config"]["offload_optimizer"] = true;
  if (c.offload_params) j["config"]["offload_params"] = true;
  if (c.shape) {
    // src/model's schema (`zerodp train --model` takes it); vocab as stored.
    j["config"]["model_name"] = c.model_name;
    j["config"]["model"] = {{"kind", "gpt"},
                            {"layers", c.shape->layers},
                            {"heads", c.shape->heads},
                            {"channels", c.shape->channels},
                            {"vocab", c.shape->vocab},
                            {"max_seq_len", c.shape->context},
                            {"padded_vocab", c.shape->vocab}};
  }
  const BytesPerParam& b = r.bytes_per_param;
  j["bytes_per_param"] = {{"params", b.params},   {"grads", b.grads},     {"master", b.master},
                          {"moment1", b.moment1}, {"moment2", b.moment2}, {"optimizer_k", b.optimizer()},
                          {"total", b.total()}};
  j["units"] = {{"bytes", "all sizes are in bytes"}, {"GB", 1e9}, {"GiB", 1073741824}};
  j["checkpoint_bytes"] = r.checkpoint_bytes;
  if (r.largest_unit_params) j["largest_unit_params"] = *r.largest_unit_params;
  if (r.largest_module_params) j["largest_module_params"] = *r.largest_module_params;
  if (r.activations) {
    const ActivationEstimate& a = *r.activations;
    json terms = json::array();
    for (const ActivationTerm& t : a.terms) {
      terms.push_back({{"name", t.name},
                       {"shape", t.shape},
                       {"role", t.role},
                       {"elements", t.elements},
                       {"count", t.count},
                       {"bytes", t.bytes}});
    }
    j["activations"] = {{"micro_batch", a.config.micro_batch},
                        {"seq_len", a.config.seq_len},
                        {"checkpointing", a.config.checkpointing},
                        {"element_bytes", a.config.element_bytes},
                        {"total_bytes", a.total_bytes},
                        {"terms", terms}};
  }
  json plans = json::array();
  for (const RankPlan& rp : r.per_ranks) {
    json stages = json::array();
    for (const StagePlan& s : rp.stages) {
      json st = {{"stage", stage_number(s.stage)},
                 {"name", std::string(traits(s.stage).paper_name)},
                 {"params_bytes", s.states.params},
                 {"grads_bytes", s.states.grads},
                 {"master_bytes", s.states.master},
                 {"moment1_bytes", s.states.moment1},
                 {"moment2_bytes", s.states.moment2},
                 {"optimizer_bytes", s.states.optimizer()},
                 {"model_states_bytes", s.states.total()},
                 {"paper_model_states_bytes", s.paper_bytes},
                 {"gathered_bytes", s.gathered},
                 {"compute_copy_bytes", s.compute_copy},
                 {"buckets_bytes", s.buckets},
                 {"comm_scratch_bytes", s.comm_scratch},
                 {"activation_bytes", s.activations},
                 {"offload_staging_bytes", s.offload},
                 {"disk_bytes", s.disk},
                 {"disk_read_per_step_bytes", s.disk_read},
                 {"disk_written_per_step_bytes", s.disk_written},
                 {"peak_bytes", s.peak},
                 {"comm",
                  {{"collectives", s.comm.collectives},
                   {"elements", s.comm.elements},
                   {"bytes", s.comm.bytes},
                   {"sent_bytes", s.comm.sent_bytes},
                   {"across_groups_sent_bytes", s.comm.across_groups_sent_bytes}}}};
      if (s.fits) st["fits"] = *s.fits;
      if (s.max_params) st["max_params"] = *s.max_params;
      stages.push_back(std::move(st));
    }
    json p = {{"ranks", rp.ranks},
              {"shard_group", rp.shard_group},
              {"stages", stages},
              {"recommendation", rp.recommendation}};
    p["recommended_stage"] = rp.recommended ? json(stage_number(*rp.recommended)) : json(nullptr);
    if (options.compare_deepspeed) {
      p["deepspeed"] = {{"model",
                         "DeepSpeed estimators, no offload: 2Φ + int(18Φ/N) and 4·largest layer + "
                         "int(18Φ/N); bytes (DeepSpeed prints them in GiB labelled GB)"},
                        {"zero2_bytes", rp.deepspeed.zero2_bytes}};
      if (rp.deepspeed.zero3_bytes) p["deepspeed"]["zero3_bytes"] = *rp.deepspeed.zero3_bytes;
    }
    plans.push_back(std::move(p));
  }
  j["plans"] = std::move(plans);
  return j;
}

}  // namespace zerodp::plan
