// SPDX-License-Identifier: Apache-2.0
// `zerodp model info`: a model's shape, Φ, units and op schedule; `zerodp
// model list`: the presets.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <string>

#include "cli/commands.h"
#include "model/presets.h"

namespace zerodp::cli {
namespace {

void info(const std::string& spec, bool verbose) {
  const model::ModelConfig cfg = model::resolve_model_config(spec);
  const auto m = model::make_model(cfg);
  fmt::print("model   {}\n", cfg.name);
  fmt::print("shape   {}\n", m->describe());
  fmt::print("params  {} (Φ)\n", m->num_params());
  fmt::print("units   {}, ops {}\n", m->units().size(), m->ops().size());
  if (!verbose) return;
  for (size_t u = 0; u < m->units().size(); ++u) {
    const auto& unit = m->units()[u];
    fmt::print("  unit {:<3} {:<10} offset {:>12} count {:>12}\n", u, unit.name, unit.offset, unit.count);
  }
  for (size_t i = 0; i < m->ops().size(); ++i) {
    fmt::print("  op {:<3} {:<10} unit {}\n", i, m->ops()[i].name, m->ops()[i].unit);
  }
  for (const auto& t : m->tensors()) {
    fmt::print("  tensor {:<18} offset {:>12} [{}]{}\n", t.name, t.offset, fmt::join(t.shape, ", "),
               t.decay ? "" : "  no decay");
  }
}

}  // namespace

void add_model_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("model", "Model presets and shapes (parameter count Φ, units, ops)");
  cmd->require_subcommand(1);
  auto spec = std::make_shared<std::string>(std::string(model::kDefaultModel));
  auto verbose = std::make_shared<bool>(false);
  auto* info_cmd = cmd->add_subcommand("info", "Show a model's shape, Φ, units and op schedule");
  info_cmd->add_option("--model", *spec, "Preset name, model.json, or an inline JSON config")->capture_default_str();
  info_cmd->add_flag("--units,-v", *verbose, "List every unit, op and tensor");
  info_cmd->callback([spec, verbose] { info(*spec, *verbose); });
  auto* list_cmd = cmd->add_subcommand("list", "List the model presets");
  list_cmd->callback([] {
    for (const auto& name : model::model_preset_names()) {
      const auto m = model::make_model(model::model_preset(name));
      fmt::print("{:<12} {}\n", name, m->describe());
    }
  });
}

}  // namespace zerodp::cli
