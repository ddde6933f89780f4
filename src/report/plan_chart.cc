// SPDX-License-Identifier: Apache-2.0
#include "report/plan_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "core/error.h"
#include "plan/quantity.h"

namespace zerodp::report {
namespace {

constexpr double kGB = 1e9;
constexpr size_t kParams = 0, kGrads = 1, kOptimizer = 2, kGathered = 3, kActivations = 4;

std::vector<BarSeries> plan_series(const plan::PlanResult& r) {
  std::vector<BarSeries> s = {{"params", "#0072B2"}, {"grads", "#E69F00"}, {"optimizer states", "#009E73"}};
  s.push_back({"unit buffers (gathered, buckets)", "#CC79A7"});
  s.push_back({"activations", "#56B4E9"});
  (void)r;
  return s;
}

std::string gb_label(double bytes) { return plan::format_significant(bytes / kGB, 3) + " GB"; }

std::string model_title(const plan::PlanResult& r) {
  return fmt::format("Φ = {}, {} + {}", plan::format_count(static_cast<double>(r.config.num_params)),
                     r.config.precision.name(), plan::optimizer_name(r.config.optimizer));
}

double tallest(const plan::PlanResult& r) {
  const double phi = static_cast<double>(r.config.num_params);
  const auto& b = r.bytes_per_param;
  double m = phi * std::max({b.params, b.grads, b.optimizer()});
  for (const auto& rp : r.per_ranks)
    for (const auto& s : rp.stages) m = std::max(m, static_cast<double>(s.peak));
  if (r.config.device_memory) m = std::max(m, static_cast<double>(*r.config.device_memory));
  return m / kGB;
}

}  // namespace

BarChart plan_replica_chart(const plan::PlanResult& r) {
  const double phi = static_cast<double>(r.config.num_params);
  const auto& b = r.bytes_per_param;
  BarChart c;
  c.labels.title = fmt::format("One replica: {}Φ = {}", b.total(), gb_label(phi * b.total()));
  c.labels.y_label = "bytes per replica (GB = 1e9 bytes)";
  c.labels.x_label = model_title(r);
  c.series = plan_series(r);
  c.show_legend = false;
  auto add = [&](std::string label, size_t series, int bytes_per) {
    const double v = phi * bytes_per / kGB;
    c.groups.push_back({std::move(label), {Bar{"", {{series, v}}, gb_label(phi * bytes_per)}}});
  };
  add(fmt::format("params {}Φ", b.params), kParams, b.params);
  add(fmt::format("grads {}Φ", b.grads), kGrads, b.grads);
  add(fmt::format("optimizer {}Φ", b.optimizer()), kOptimizer, b.optimizer());
  c.y_max = tallest(r);
  return c;
}

BarChart plan_per_rank_chart(const plan::PlanResult& r) {
  BarChart c;
  const bool one = r.per_ranks.size() == 1;
  c.labels.title =
      one ? fmt::format("Per rank at N = {}, by ZeRO stage", r.per_ranks[0].ranks) : "Per rank by ZeRO stage and N";
  c.labels.y_label = "bytes per rank (GB = 1e9 bytes)";
  c.labels.x_label = "ZeRO stage (0: DP, 1: P_os, 2: P_os+g, 3: P_os+g+p)";
  c.series = plan_series(r);
  bool any_gathered = false;
  const bool any_act = r.activations.has_value();
  for (const auto& rp : r.per_ranks) {
    BarGroup g;
    g.label = fmt::format("N = {}", rp.ranks);
    for (const auto& s : rp.stages) {
      Bar bar;
      bar.label = std::to_string(stage_number(s.stage));
      bar.segments = {{kParams, static_cast<double>(s.states.params) / kGB},
                      {kGrads, static_cast<double>(s.states.grads) / kGB},
                      {kOptimizer, static_cast<double>(s.states.optimizer()) / kGB}};
      if (s.buffers() > 0) {
        bar.segments.push_back({kGathered, static_cast<double>(s.buffers()) / kGB});
        any_gathered = true;
      }
      if (any_act) bar.segments.push_back({kActivations, static_cast<double>(s.activations) / kGB});
      bar.total_label = plan::format_significant(static_cast<double>(s.peak) / kGB, 3);
      g.bars.push_back(std::move(bar));
    }
    c.groups.push_back(std::move(g));
  }
  // Drop legend entries nothing uses (keep indices stable by renaming only
  // through order: the unused ones are last).
  if (!any_act) c.series.pop_back();
  if (!any_gathered && !any_act) c.series.pop_back();
  if (r.config.device_memory) {
    c.reference_lines.push_back(
        {static_cast<double>(*r.config.device_memory) / kGB,
         fmt::format("device memory {}", gb_label(static_cast<double>(*r.config.device_memory)))});
  }
  c.y_max = tallest(r);
  return c;
}

std::string render_plan_chart(const plan::PlanResult& r) {
  ZDP_CHECK(!r.per_ranks.empty(), ShapeError, "[plan_chart] the plan has no rank counts");
  const double left_w = 400;
  const double right_w = std::max(600.0, 170.0 * static_cast<double>(r.per_ranks.size()) + 260.0);
  const double height = 500;
  SvgDocument doc(left_w + right_w, height);
  draw_bar_chart(doc, plan_replica_chart(r), {0, 0, left_w, height});
  draw_bar_chart(doc, plan_per_rank_chart(r), {left_w, 0, right_w, height});
  return doc.str();
}

void save_plan_chart(const plan::PlanResult& r, const std::string& path) {
  const std::string text = render_plan_chart(r);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ZDP_CHECK(out.good(), IoError, "[plan] cannot write the chart to '{}': check the directory exists", path);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  ZDP_CHECK(!out.fail(), IoError, "[plan] failed writing the chart to '{}'", path);
}

}  // namespace zerodp::report
