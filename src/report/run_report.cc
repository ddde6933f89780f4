// SPDX-License-Identifier: Apache-2.0
#include "report/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "report/bar_chart.h"
#include "report/line_chart.h"
#include "report/svg.h"

namespace zerodp::report {
namespace {

constexpr double kWidth = 900;
constexpr double kHeight = 340;
constexpr double kMB = 1e6;  // as `zerodp train` prints memory and traffic
constexpr size_t kMaxRankCharts = 8;

// The ledger's categories in its own order; unknown names follow, sorted.
const std::vector<std::string>& ledger_order() {
  static const std::vector<std::string> kOrder = {"params",  "grads",       "master", "adam_m",  "adam_v", "gathered",
                                                  "buckets", "activations", "comm",   "scratch", "offload"};
  return kOrder;
}

// One colour per ledger category, the same in every chart (Okabe-Ito; grey
// for activations, which are often the largest band).
std::string category_color(const std::string& name) {
  static const std::vector<std::string> kColors = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
                                                   "#D55E00", "#F0E442", "#999999", "#000000"};
  const auto pos =
      static_cast<size_t>(std::find(ledger_order().begin(), ledger_order().end(), name) - ledger_order().begin());
  return pos < kColors.size() ? kColors[pos] : palette_color(pos);
}

std::vector<std::string> categories_in(const RunMetrics& m) {
  std::set<std::string> seen;
  for (const StepRecord& s : m.steps) {
    for (const RankMemoryRecord& r : s.memory) {
      for (const auto& [name, bytes] : r.categories) {
        if (bytes.peak > 0 || bytes.current > 0) seen.insert(name);
      }
    }
  }
  std::vector<std::string> out;
  for (const std::string& c : ledger_order()) {
    if (seen.erase(c) > 0) out.push_back(c);
  }
  out.insert(out.end(), seen.begin(), seen.end());
  return out;
}

size_t rank_count(const RunMetrics& m) {
  size_t n = 0;
  for (const StepRecord& s : m.steps) n = std::max({n, s.memory.size(), s.comm.size()});
  return n;
}

std::string finish(const LineChart& chart) { return render_line_chart(chart, kWidth, kHeight); }

LineChart step_chart(const std::string& title, const std::string& y_label) {
  LineChart c;
  c.labels = {title, "optimizer step", y_label};
  return c;
}

// One series from an optional field of every step. With `gaps`, a step
// without a value (a skipped step's gradient norm, a non-finite loss) breaks
// the line there instead of joining its neighbours; sparse fields (the
// validation loss) are drawn without gaps.
template <typename Get>
LineSeries series_of(const RunMetrics& m, const std::string& name, Get get, bool gaps = true) {
  LineSeries s;
  s.name = name;
  bool missing = false;
  for (const StepRecord& r : m.steps) {
    const std::optional<double> v = get(r);
    if (!v) {
      missing = true;
      continue;
    }
    if (missing && gaps && !s.points.empty()) s.gaps.push_back(s.points.size());
    missing = false;
    s.points.push_back({static_cast<double>(r.step), *v});
  }
  return s;
}

// The steps fp16's scaler skipped (overflow), as marks across a chart.
VerticalMarks skipped_steps(const RunMetrics& m) {
  VerticalMarks marks;
  marks.label = "skipped step (fp16 overflow)";
  marks.css_class = "skipped-step";
  for (const StepRecord& r : m.steps) {
    if (r.skipped) marks.at.push_back(static_cast<double>(r.step));
  }
  return marks;
}

// bf16 and fp32 train without a loss scale (the trainer records 1): decided
// by the run's config record, else by a scale that is ever not 1.
bool has_dynamic_loss_scale(const RunMetrics& m) {
  if (m.precision) return *m.precision == "fp16" || *m.precision == "float16";
  return std::any_of(m.steps.begin(), m.steps.end(),
                     [](const StepRecord& s) { return s.loss_scale && *s.loss_scale != 1.0; });
}

std::optional<ReportChart> loss_chart(const RunMetrics& m) {
  LineChart c = step_chart("Loss", "loss (cross-entropy, nats)");
  LineSeries train = series_of(m, "training loss", [](const StepRecord& r) { return r.loss; });
  LineSeries val = series_of(
      m, "validation loss", [](const StepRecord& r) { return r.val_loss; }, false);
  // The validation pass after the last step ends the curve.
  if (m.final_record && m.final_record->val_loss) {
    const double x = static_cast<double>(m.final_record->step);
    if (val.points.empty() || val.points.back().x != x) val.points.push_back({x, *m.final_record->val_loss});
  }
  val.markers = true;
  val.dash = "6 4";
  if (train.points.empty() && val.points.empty()) return std::nullopt;
  c.series.push_back(std::move(train));
  if (!val.points.empty()) c.series.push_back(std::move(val));
  return ReportChart{"loss", c.labels.title, finish(c)};
}

std::optional<ReportChart> simple_chart(const RunMetrics& m, const std::string& name, const std::string& title,
                                        const std::string& y_label, const std::string& series_name,
                                        std::optional<double> (*get)(const StepRecord&), bool log_y = false,
                                        bool from_zero = false, VerticalMarks marks = {}) {
  LineChart c = step_chart(title, y_label);
  // On a log axis a value <= 0 cannot be drawn: a gap, like a missing one.
  LineSeries s = series_of(m, series_name, [&](const StepRecord& r) {
    const std::optional<double> v = get(r);
    return log_y && v && *v <= 0 ? std::nullopt : v;
  });
  if (s.points.empty()) return std::nullopt;
  c.marks = std::move(marks);
  c.series.push_back(std::move(s));
  c.y_log = log_y;
  c.y_from_zero = from_zero;
  c.show_legend = true;
  return ReportChart{name, title, finish(c)};
}

std::vector<ReportChart> memory_charts(const RunMetrics& m) {
  std::vector<ReportChart> out;
  const std::vector<std::string> cats = categories_in(m);
  if (cats.empty()) return out;
  const size_t ranks = rank_count(m);
  for (size_t r = 0; r < std::min(ranks, kMaxRankCharts); ++r) {
    LineChart c =
        step_chart(fmt::format("Memory of rank {} by ledger category (peaks, stacked)", r), "MB (10^6 bytes), stacked");
    c.y_from_zero = true;
    c.stacked = true;
    for (const std::string& cat : cats) {
      LineSeries s;
      s.name = cat;
      s.color = category_color(cat);
      for (const StepRecord& rec : m.steps) {
        if (r >= rec.memory.size()) continue;  // same x for every category, as stacking needs
        const auto it = rec.memory[r].categories.find(cat);
        const double bytes = it == rec.memory[r].categories.end() ? 0.0 : static_cast<double>(it->second.peak);
        s.points.push_back({static_cast<double>(rec.step), bytes / kMB});
      }
      if (!s.points.empty()) c.series.push_back(std::move(s));
    }
    out.push_back({fmt::format("memory_rank{}", r), c.labels.title, finish(c)});
  }
  // Every rank at the last step that has memory, stacked by category.
  const auto last =
      std::find_if(m.steps.rbegin(), m.steps.rend(), [](const StepRecord& s) { return !s.memory.empty(); });
  BarChart b;
  b.labels = {fmt::format("Memory per rank at step {} by category (peak)", last->step), "rank", "MB (10^6 bytes)"};
  for (const std::string& cat : cats) b.series.push_back({cat, category_color(cat)});
  b.value_format = [](double v) { return fmt::format("{:.1f}", v); };
  for (size_t r = 0; r < last->memory.size(); ++r) {
    Bar bar;
    for (size_t i = 0; i < cats.size(); ++i) {
      const auto it = last->memory[r].categories.find(cats[i]);
      if (it != last->memory[r].categories.end() && it->second.peak > 0) {
        bar.segments.push_back({i, static_cast<double>(it->second.peak) / kMB});
      }
    }
    b.groups.push_back({fmt::format("rank {}", r), {bar}});
  }
  out.push_back({"memory_per_rank", b.labels.title, render_bar_chart(b, kWidth, kHeight)});
  return out;
}

std::optional<ReportChart> comm_chart(const RunMetrics& m) {
  std::set<std::string> names;
  for (const StepRecord& s : m.steps) {
    for (const auto& rank : s.comm) {
      for (const auto& [name, bytes] : rank) names.insert(name);
    }
  }
  if (names.empty()) return std::nullopt;
  LineChart c =
      step_chart("Bytes sent per step by collective (mean over ranks)", "MB sent per rank per step (10^6 bytes)");
  c.y_from_zero = true;
  for (const std::string& name : names) {
    LineSeries s;
    s.name = name;
    for (const StepRecord& rec : m.steps) {
      if (rec.comm.empty()) continue;
      double sum = 0;
      for (const auto& rank : rec.comm) {
        const auto it = rank.find(name);
        if (it != rank.end()) sum += static_cast<double>(it->second.bytes_sent);
      }
      s.points.push_back({static_cast<double>(rec.step), sum / static_cast<double>(rec.comm.size()) / kMB});
    }
    c.series.push_back(std::move(s));
  }
  return ReportChart{"comm", c.labels.title, finish(c)};
}

std::string html_escape(std::string_view s) { return xml_escape(s); }

std::string summary_table(const RunMetrics& m) {
  const StepRecord& first = m.steps.front();
  const StepRecord& last = m.steps.back();
  std::optional<double> best_val;
  std::vector<double> tps;
  double tokens = 0, seconds = 0;  // over the steps that recorded both
  int skipped = 0, clipped = 0;
  for (const StepRecord& s : m.steps) {
    if (s.val_loss) best_val = std::min(best_val.value_or(*s.val_loss), *s.val_loss);
    if (s.tokens_per_s) tps.push_back(*s.tokens_per_s);
    if (s.tokens_per_s && s.step_seconds) {
      tokens += *s.tokens_per_s * *s.step_seconds;
      seconds += *s.step_seconds;
    }
    skipped += s.skipped ? 1 : 0;
    clipped += s.clipped ? 1 : 0;
  }
  const std::optional<double> final_val = m.final_record ? m.final_record->val_loss : std::nullopt;
  if (final_val) best_val = std::min(best_val.value_or(*final_val), *final_val);
  std::string median = "–";
  if (!tps.empty()) {
    std::nth_element(tps.begin(), tps.begin() + static_cast<std::ptrdiff_t>(tps.size() / 2), tps.end());
    median = fmt::format("{:.0f}", tps[tps.size() / 2]);
  }
  auto opt = [](std::optional<double> v) { return v ? fmt::format("{:.4f}", *v) : std::string("–"); };
  std::string rows;
  auto row = [&](std::string_view k, const std::string& v) {
    rows += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", html_escape(k), html_escape(v));
  };
  row("steps", fmt::format("{} (step {} to {})", m.steps.size(), first.step, last.step));
  row("training loss, first → last", fmt::format("{} → {}", opt(first.loss), opt(last.loss)));
  if (final_val) row(fmt::format("validation loss after step {}", m.final_record->step), opt(final_val));
  row("best validation loss", opt(best_val));
  if (seconds > 0) row("throughput", fmt::format("{:.0f} tokens/s over {:.1f} s", tokens / seconds, seconds));
  row("median tokens/s", median);
  row("skipped steps (fp16 overflow) / clipped steps", fmt::format("{} / {}", skipped, clipped));
  const size_t ranks = rank_count(m);
  if (ranks > 0) row("ranks", fmt::format("{}", ranks));
  if (!last.memory.empty() && last.memory[0].model_states) {
    row("model states of rank 0", fmt::format("{:.2f} MB", static_cast<double>(*last.memory[0].model_states) / kMB));
  }
  return "<table>\n" + rows + "</table>\n";
}

}  // namespace

std::vector<ReportChart> report_charts(const RunMetrics& m) {
  ZDP_CHECK(!m.steps.empty(), ConfigError, "[report] {} holds no steps to draw", m.source);
  std::vector<ReportChart> out;
  auto add = [&](std::optional<ReportChart> c) {
    if (c) out.push_back(std::move(*c));
  };
  add(loss_chart(m));
  add(simple_chart(
      m, "throughput", "Throughput", "tokens per second", "tokens/s",
      [](const StepRecord& r) { return r.tokens_per_s; }, false, true));
  if (has_dynamic_loss_scale(m)) {
    add(simple_chart(
        m, "loss_scale", "Loss scale (log axis)", "loss scale (log10 axis)", "loss scale",
        [](const StepRecord& r) { return r.loss_scale; }, true, false, skipped_steps(m)));
  }
  add(simple_chart(
      m, "lr", "Learning rate", "learning rate", "lr", [](const StepRecord& r) { return r.lr; }, false, true));
  add(simple_chart(
      m, "grad_norm", "Gradient norm (unscaled, before clipping)", "global L2 norm", "grad norm",
      [](const StepRecord& r) { return r.grad_norm; }, false, true, skipped_steps(m)));
  for (ReportChart& c : memory_charts(m)) out.push_back(std::move(c));
  add(comm_chart(m));
  return out;
}

std::string render_report_html(const RunMetrics& m) {
  const std::vector<ReportChart> charts = report_charts(m);
  std::string body;
  for (const ReportChart& c : charts) {
    std::string svg = c.svg;
    if (svg.rfind("<?xml", 0) == 0) svg = svg.substr(svg.find('\n') + 1);  // inline: no XML prolog
    body += fmt::format("<figure id=\"{}\">\n{}</figure>\n", html_escape(c.name), svg);
  }
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>zerodp run report: {0}</title>
<style>
body {{ font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 24px; color: #222; background: #fff; }}
h1 {{ font-size: 22px; }}
table {{ border-collapse: collapse; margin-bottom: 16px; }}
th, td {{ text-align: left; padding: 3px 12px 3px 0; border-bottom: 1px solid #ddd; font-size: 14px; }}
figure {{ margin: 0 0 18px 0; }}
svg {{ max-width: 100%; height: auto; }}
</style>
</head>
<body>
<h1>zerodp run report: {0}</h1>
{1}{2}</body>
</html>
)",
                     html_escape(m.source), summary_table(m), body);
}

void write_report_html(const RunMetrics& m, const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  std::error_code ec;
  ZDP_CHECK(dir.empty() || std::filesystem::is_directory(dir, ec), ConfigError,
            "[report] --out '{}': the directory '{}' does not exist: create it or choose another path", path,
            dir.string());
  const std::string html = render_report_html(m);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ZDP_CHECK(out.good(), IoError, "[report] cannot open '{}' for writing", path);
  out << html;
  out.flush();
  ZDP_CHECK(out.good(), IoError, "[report] writing '{}' failed (disk full?)", path);
}

std::vector<std::string> write_report_svgs(const RunMetrics& m, const std::string& dir) {
  // Made when missing, as --save makes its directory; a file of that name
  // is refused before anything is written.
  std::error_code ec;
  ZDP_CHECK(!std::filesystem::exists(dir, ec) || std::filesystem::is_directory(dir, ec), ConfigError,
            "[report] --svg-dir '{}' is a file, not a directory: choose another path", dir);
  std::filesystem::create_directories(dir, ec);
  ZDP_CHECK(!ec, IoError, "[report] --svg-dir '{}' cannot be made ({}): choose another path", dir, ec.message());
  std::vector<std::string> paths;
  for (const ReportChart& c : report_charts(m)) {
    const std::string path = (std::filesystem::path(dir) / (c.name + ".svg")).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    ZDP_CHECK(out.good(), IoError, "[report] cannot open '{}' for writing", path);
    out << c.svg;
    out.flush();
    ZDP_CHECK(out.good(), IoError, "[report] writing '{}' failed (disk full?)", path);
    paths.push_back(path);
  }
  return paths;
}

}  // namespace zerodp::report
