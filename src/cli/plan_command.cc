// SPDX-License-Identifier: Apache-2.0
// `zerodp plan`: which ZeRO stage fits a model on N ranks, what each rank
// holds by category, what it sends per step, and the chart of it. Strings
// become a typed plan::PlanConfig here, once; plan/ does the arithmetic and
// report/ draws.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/presets.h"
#include "plan/model_shape.h"
#include "plan/plan_format.h"
#include "plan/planner.h"
#include "plan/quantity.h"
#include "report/plan_chart.h"

namespace zerodp::cli {
namespace {

struct PlanOptions {
  std::string params;
  std::string model;
  std::string ranks;
  std::string precision = "bf16";
  std::string optimizer = "adamw";
  std::string device_memory;
  std::optional<int> micro_batch;
  std::optional<int> seq_len;
  bool checkpointing = false;
  int grad_accum = 1;
  std::string compare;
  bool json = false;
  std::string chart;
};

std::string model_display_name(const std::string& spec) {
  if (!spec.empty() && spec.find('{') == std::string::npos && spec.find(".json") != std::string::npos) {
    return std::filesystem::path(spec).stem().string();
  }
  return spec.find('{') == std::string::npos ? spec : "custom";
}

// --model: src/model's presets and JSON configs, the ones `zerodp model
// list` prints and `zerodp train --model` takes. An MLP gives Φ only.
void resolve_model_into(const std::string& spec, plan::PlanConfig& c) {
  c.model_name = model_display_name(spec);
  const model::ModelConfig m = model::resolve_model_config(spec);
  if (m.kind == ModelKind::kGpt) {
    c.shape = plan::gpt_shape(m.gpt);
    ZDP_CHECK_EQ(c.shape->num_params(), model::num_params(m), Error,
                 "[plan] plan's and src/model's parameter counts differ");
  } else {
    c.num_params = model::num_params(m);
  }
}

plan::PlanConfig to_config(const PlanOptions& o) {
  plan::PlanConfig c;
  ZDP_CHECK(o.params.empty() != o.model.empty(), ConfigError,
            "[plan] give exactly one of --params (e.g. 7.5B) or --model (a preset such as gpt2-124m, or a JSON "
            "config)");
  if (!o.params.empty()) c.num_params = plan::parse_count(o.params, "--params");
  if (!o.model.empty()) resolve_model_into(o.model, c);
  c.ranks = plan::parse_rank_list(o.ranks);
  c.precision = Dtype::parse(o.precision);
  c.optimizer = plan::parse_optimizer(o.optimizer);
  ZDP_CHECK(o.grad_accum >= 1, ConfigError, "[plan] --grad-accum {} must be at least 1 (1 = no accumulation)",
            o.grad_accum);
  c.grad_accum = o.grad_accum;
  if (!o.device_memory.empty()) c.device_memory = plan::parse_bytes(o.device_memory, "--device-memory");
  const bool wants_activations = o.micro_batch || o.seq_len || o.checkpointing;
  if (wants_activations) {
    ZDP_CHECK(c.shape.has_value(), ConfigError,
              "[plan] --micro-batch, --seq-len and --activation-checkpointing need a GPT's shape: give --model with "
              "a GPT preset or config instead of --params");
    plan::ActivationConfig a;
    a.micro_batch = o.micro_batch.value_or(1);
    a.seq_len = o.seq_len.value_or(0);
    a.checkpointing = o.checkpointing;
    c.activations = a;
  }
  if (!o.chart.empty()) {
    const std::filesystem::path dir = std::filesystem::path(o.chart).parent_path();
    std::error_code ec;
    ZDP_CHECK(dir.empty() || std::filesystem::is_directory(dir, ec), ConfigError,
              "[plan] --chart '{}': the directory '{}' does not exist: create it or choose another path", o.chart,
              dir.string());
  }
  ZDP_CHECK(o.compare.empty() || o.compare == "deepspeed", ConfigError,
            "[plan] --compare '{}' is not known: the only comparison is --compare deepspeed", o.compare);
  return c;
}

void run_plan(const PlanOptions& o) {
  const plan::PlanConfig config = to_config(o);
  const plan::PlanResult result = plan::make_plan(config);
  plan::FormatOptions format;
  format.compare_deepspeed = o.compare == "deepspeed";
  if (!o.chart.empty()) report::save_plan_chart(result, o.chart);
  if (o.json) {
    nlohmann::json j = plan::plan_to_json(result, format);
    if (!o.chart.empty()) j["chart"] = o.chart;
    fmt::print("{}\n", j.dump(2));
  } else {
    fmt::print("{}", plan::format_plan_text(result, format));
    if (!o.chart.empty()) fmt::print("\nChart written to {}\n", o.chart);
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto opts = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Predict per-rank memory (params, grads, optimizer states; activations and stage 3's gathered units with "
      "--model) and communication per step for ZeRO stages 0-3, recommend the stage with the least communication "
      "that fits, and draw it (the ZeRO paper's model: GB = 1e9 bytes, also shown in GiB)");
  cmd->add_option("--params", opts->params,
                  "Number of parameters Φ: 7.5B, 124M, 1T, 7.5e9 or a plain integer (or give --model)");
  cmd->add_option("--model", opts->model,
                  "A preset (zerodp model list: gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1558m, gpt-30m, gpt-tiny, ...), "
                  "a .json file, or inline JSON as zerodp train takes it: {\"kind\":\"gpt\",\"layers\":..,\"heads\":..,"
                  "\"channels\":..,\"vocab\":..,\"max_seq_len\":..}");
  cmd->add_option("--ranks", opts->ranks, "Number of ranks N, or a comma-separated list: 64 or 1,4,16,64")->required();
  cmd->add_option("--precision", opts->precision,
                  "Training dtype of params, grads and communication: bf16, fp16 (both with fp32 master weights) or "
                  "fp32")
      ->capture_default_str();
  cmd->add_option("--optimizer", opts->optimizer,
                  "adamw, adam, sgd-momentum, sgd, lion or adam8bit (sets K, the optimizer bytes per parameter)")
      ->capture_default_str();
  cmd->add_option("--device-memory", opts->device_memory,
                  "Memory per rank, e.g. 32GB (1e9 bytes) or 80GiB (2^30 bytes): enables fits, the recommendation and "
                  "the largest model per stage");
  cmd->add_option("--grad-accum", opts->grad_accum,
                  "Micro-batches per step (stage 1 then keeps a flat gradient staging buffer)");
  cmd->add_option("--micro-batch", opts->micro_batch,
                  "Micro-batch size B per rank for the activation estimate (needs --model)");
  cmd->add_option("--seq-len", opts->seq_len,
                  "Sequence length T for the activation estimate (default: the model's context)");
  cmd->add_flag("--activation-checkpointing", opts->checkpointing,
                "Keep only block outputs and recompute one block at a time in backward");
  cmd->add_option(
      "--compare", opts->compare,
      "Also print another tool's estimate: deepspeed (its estimate_zero2/3_model_states_mem_needs, in GiB)");
  cmd->add_flag("--json", opts->json, "Print machine-readable JSON (all sizes in bytes) instead of tables");
  cmd->add_option("--chart", opts->chart, "Write an SVG chart: one replica's states and per-rank bars per stage and N");
  cmd->callback([opts] { run_plan(*opts); });
}

}  // namespace zerodp::cli
