// `zerodp plan`: which ZeRO stage fits a model on N ranks, what each rank
// holds by category, what it sends per step, and the chart of it. Strings
// become a typed plan::PlanConfig here, once; plan/ does the arithmetic and
// report/ draws.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/presets.h"
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

// src/model's config as plan's shape: wte has the padded vocab's rows, wpe
// max_seq_len rows. Checked against the model's own count.
plan::GptShape shape_from_model(const model::ModelConfig& m) {
  const model::GptConfig& g = m.gpt;
  plan::GptShape s{g.layers, g.heads, g.channels, g.padded_vocab, g.max_seq_len};
  ZDP_CHECK_EQ(s.num_params(), model::num_params(m), Error, "[plan] plan's and src/model's parameter counts differ");
  return s;
}

// --model: plan's presets and {"type":"gpt",...} configs, then src/model's
// presets and {"kind":...} configs (the ones `zerodp train` takes). An MLP
// gives Φ only.
void resolve_model_into(const std::string& spec, plan::PlanConfig& c) {
  c.model_name = model_display_name(spec);
  if (auto preset = plan::find_preset(spec)) {
    c.shape = *preset;
    return;
  }
  const bool inline_json = spec.find_first_not_of(" \t\n") != std::string::npos &&
                           spec[spec.find_first_not_of(" \t\n")] == '{';
  std::error_code ec;
  if (!inline_json && !std::filesystem::is_regular_file(spec, ec)) {
    model::ModelConfig m;
    try {
      m = model::model_preset(spec);
    } catch (const ConfigError&) {
      std::string names;
      for (const auto& p : plan::model_presets()) names += std::string(p.name) + ", ";
      for (const auto& n : model::model_preset_names()) {
        if (!plan::find_preset(n)) names += n + ", ";
      }
      ZDP_THROW(ConfigError,
                "[plan] --model '{}' is neither a preset ({}) nor a JSON file nor inline JSON like "
                "'{{\"type\":\"gpt\",\"layers\":12,...}}'",
                spec, names.substr(0, names.size() - 2));
    }
    if (m.kind == model::ModelKind::kGpt) {
      c.shape = shape_from_model(m);
    } else {
      c.num_params = model::num_params(m);
    }
    return;
  }
  // JSON: src/model's format has "kind", plan's has "type".
  std::string text = spec;
  if (!inline_json) {
    std::ifstream in(spec);
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
  }
  if (text.find("\"kind\"") != std::string::npos) {
    const model::ModelConfig m = model::model_config_from_json(text);
    if (m.kind == model::ModelKind::kGpt) {
      c.shape = shape_from_model(m);
    } else {
      c.num_params = model::num_params(m);
    }
    return;
  }
  c.shape = plan::parse_gpt_shape_json(text);
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
                  "A preset (gpt2-124m, gpt2-350m, gpt2-774m, gpt2-1558m, gpt-30m, and the train presets gpt-tiny, "
                  "gpt-10m, gpt-bench, ...), a JSON file, or inline JSON {\"type\":\"gpt\",\"layers\":..,\"heads\":..,"
                  "\"channels\":..,\"vocab\":..,\"context\":..} (or src/model's {\"kind\":\"gpt\",...,\"max_seq_len\":..})");
  cmd->add_option("--ranks", opts->ranks, "Number of ranks N, or a comma-separated list: 64 or 1,4,16,64")
      ->required();
  cmd->add_option("--precision", opts->precision,
                  "Training dtype of params, grads and communication: bf16, fp16 (both with fp32 master weights) or "
                  "fp32")
      ->capture_default_str();
  cmd->add_option("--optimizer", opts->optimizer, "adamw, adam, sgd-momentum or sgd (sets K, the optimizer bytes per parameter)")
      ->capture_default_str();
  cmd->add_option("--device-memory", opts->device_memory,
                  "Memory per rank, e.g. 32GB (1e9 bytes) or 80GiB (2^30 bytes): enables fits, the recommendation and "
                  "the largest model per stage");
  cmd->add_option("--grad-accum", opts->grad_accum,
                  "Micro-batches per step (stage 1 then keeps a flat gradient staging buffer)");
  cmd->add_option("--micro-batch", opts->micro_batch, "Micro-batch size B per rank for the activation estimate (needs --model)");
  cmd->add_option("--seq-len", opts->seq_len, "Sequence length T for the activation estimate (default: the model's context)");
  cmd->add_flag("--activation-checkpointing", opts->checkpointing,
                "Keep only block outputs and recompute one block at a time in backward");
  cmd->add_option("--compare", opts->compare,
                  "Also print another tool's estimate: deepspeed (its estimate_zero2/3_model_states_mem_needs, in GiB)");
  cmd->add_flag("--json", opts->json, "Print machine-readable JSON (all sizes in bytes) instead of tables");
  cmd->add_option("--chart", opts->chart, "Write an SVG chart: one replica's states and per-rank bars per stage and N");
  cmd->callback([opts] { run_plan(*opts); });
}

}  // namespace zerodp::cli
