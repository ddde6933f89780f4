// SPDX-License-Identifier: Apache-2.0
// `zerodp report METRICS.jsonl --out report.html [--svg-dir DIR]`: draws a
// training run from the metrics file `zerodp train --metrics` wrote. Strings
// become paths here; report/ reads and draws.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "report/metrics_reader.h"
#include "report/run_report.h"
#include "train/output_preflight.h"

namespace zerodp::cli {
namespace {

struct ReportOptions {
  std::string metrics;
  std::string out;
  std::string svg_dir;
};

void run_report(const ReportOptions& o) {
  ZDP_CHECK(!o.out.empty() || !o.svg_dir.empty(), ConfigError,
            "[report] nothing to write: give --out report.html and/or --svg-dir DIR");
  if (!o.out.empty()) train::check_writable_file(o.out, "[report] --out");  // before the metrics are read
  const report::RunMetrics metrics = report::read_metrics(o.metrics);
  for (const std::string& w : metrics.warnings) warn(w);
  if (!o.out.empty()) {
    report::write_report_html(metrics, o.out);
    fmt::print("wrote {} ({} steps)\n", o.out, metrics.steps.size());
  }
  if (!o.svg_dir.empty()) {
    const auto paths = report::write_report_svgs(metrics, o.svg_dir);
    fmt::print("wrote {} charts to {}\n", paths.size(), o.svg_dir);
  }
}

}  // namespace

void add_report_command(CLI::App& app) {
  auto opts = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report",
      "Draw a training run (loss, validation loss, tokens/s, loss scale, memory per rank by category, "
      "bytes per collective) from `zerodp train --metrics` JSON Lines");
  cmd->add_option("metrics", opts->metrics, "The metrics file (JSON Lines) zerodp train --metrics wrote")->required();
  cmd->add_option("--out,-o", opts->out, "Write one self-contained HTML page with inline SVG charts");
  cmd->add_option("--svg-dir", opts->svg_dir, "Also write each chart as DIR/<name>.svg (DIR is made when missing)");
  cmd->callback([opts] { run_report(*opts); });
}

}  // namespace zerodp::cli
