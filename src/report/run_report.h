// SPDX-License-Identifier: Apache-2.0
// The run report: `zerodp report METRICS.jsonl --out report.html` (and
// --svg-dir DIR). From the trainer's metrics (metrics_reader.h) it draws
//   loss        training loss and validation loss per step
//   throughput  tokens per second per step
//   loss scale  on a log axis (fp16's dynamic scaler only: not for a bf16
//               or fp32 run, told by the config record or a scale always 1)
//   lr, grad norm
//   memory      per rank, each ledger category's peak over the steps, and
//               every rank's categories side by side at the last step (MB)
//   comm        MB sent per step by collective (mean over ranks)
// in `zerodp train`'s units (MB = 1e6 bytes, tokens/s, s). A step without a
// value (a skipped fp16 step has no gradient norm) is a gap in its line,
// and skipped steps are marked on the gradient-norm and loss-scale charts.
// each chart a self-contained SVG with a title, axis labels with units and
// a legend, and one self-contained HTML page holding them inline (no
// scripts, no external files) with a summary table on top.
// Thread-safety: pure functions (the writers touch only their paths).
#pragma once

#include <string>
#include <vector>

#include "report/metrics_reader.h"

namespace zerodp::report {

struct ReportChart {
  std::string name;   // file stem: "loss", "throughput", "memory_rank0", ...
  std::string title;  // the chart's title
  std::string svg;    // a complete SVG document
};

// Charts with nothing to draw (e.g. no memory records) are left out; per-rank
// memory charts stop after the first 8 ranks.
std::vector<ReportChart> report_charts(const RunMetrics& metrics);

std::string render_report_html(const RunMetrics& metrics);

// IoError when a file cannot be written; ConfigError when the directory is
// missing. write_report_svgs returns the paths written (DIR/<name>.svg).
void write_report_html(const RunMetrics& metrics, const std::string& path);
std::vector<std::string> write_report_svgs(const RunMetrics& metrics, const std::string& dir);

}  // namespace zerodp::report
