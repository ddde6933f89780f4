// SPDX-License-Identifier: Apache-2.0
#include "report/bar_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace zerodp::report {
namespace {

std::string default_format(double v) {
  if (v == 0) return "0";
  const int magnitude = static_cast<int>(std::floor(std::log10(std::fabs(v))));
  const int decimals = std::max(0, 2 - magnitude);
  std::string s = fmt::format("{:.{}f}", v, decimals);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string series_color(const BarChart& chart, size_t i) {
  return chart.series[i].color.empty() ? palette_color(i) : chart.series[i].color;
}

}  // namespace

void draw_bar_chart(SvgDocument& doc, const BarChart& chart, Rect area) {
  // Validate and find the tallest stack.
  double max_total = 0;
  for (const BarGroup& g : chart.groups) {
    for (const Bar& b : g.bars) {
      double total = 0;
      for (const BarSegment& s : b.segments) {
        ZDP_CHECK(s.series < chart.series.size(), ShapeError, "[bar_chart] segment names series {} of {}", s.series,
                  chart.series.size());
        ZDP_CHECK(std::isfinite(s.value) && s.value >= 0, ShapeError,
                  "[bar_chart] bar '{}' has a negative or non-finite value {}", b.label, s.value);
        total += s.value;
      }
      max_total = std::max(max_total, total);
    }
  }
  for (const ReferenceLine& r : chart.reference_lines) max_total = std::max(max_total, r.value);
  if (chart.y_max) max_total = std::max(max_total, *chart.y_max);
  const auto format = chart.value_format ? chart.value_format : default_format;

  std::vector<LegendEntry> legend;
  if (chart.show_legend) {
    for (size_t i = 0; i < chart.series.size(); ++i)
      legend.push_back({chart.series[i].name, series_color(chart, i), false, ""});
  }
  for (const ReferenceLine& r : chart.reference_lines) legend.push_back(legend_entry(r));
  bool any_bar_label = false;
  for (const BarGroup& g : chart.groups)
    for (const Bar& b : g.bars) any_bar_label = any_bar_label || !b.label.empty();
  const double bottom_extra = any_bar_label ? 16 : 0;

  doc.begin_group("bar-chart");
  const Rect plot = plot_area(area, chart.labels, legend_width(legend), bottom_extra);
  // Head room above the tallest bar for its total label.
  const Ticks ticks = nice_ticks(0, max_total > 0 ? max_total * (chart.show_totals ? 1.08 : 1.0) : 1, 5);
  const LinearScale y{ticks.lo, ticks.hi, plot.bottom(), plot.y};
  draw_y_axis(doc, plot, ticks, y);
  // Under the bars, so the haloed totals stay legible where they meet it.
  for (const ReferenceLine& r : chart.reference_lines) draw_reference_line(doc, plot, y, r);

  const size_t groups = std::max<size_t>(chart.groups.size(), 1);
  const double group_w = plot.w / static_cast<double>(groups);
  TextStyle label_style;
  label_style.size = 11;
  label_style.anchor = "middle";
  TextStyle group_style = label_style;
  group_style.size = 12;
  group_style.weight = "bold";
  TextStyle total_style = label_style;
  total_style.size = 10.5;
  total_style.fill = "#333";
  total_style.halo = true;

  for (size_t gi = 0; gi < chart.groups.size(); ++gi) {
    const BarGroup& g = chart.groups[gi];
    const double gx = plot.x + group_w * static_cast<double>(gi);
    const size_t nbars = std::max<size_t>(g.bars.size(), 1);
    const double inner = group_w * 0.8;
    const double slot = inner / static_cast<double>(nbars);
    const double bar_w = std::min(slot * 0.8, 90.0);
    doc.begin_group("bar-group");
    for (size_t bi = 0; bi < g.bars.size(); ++bi) {
      const Bar& b = g.bars[bi];
      const double cx = gx + group_w * 0.1 + slot * (static_cast<double>(bi) + 0.5);
      double base = 0;
      for (const BarSegment& s : b.segments) {
        const double top = y(base + s.value);
        const double bottom = y(base);
        const std::string& name = chart.series[s.series].name;
        Paint p;
        p.fill = series_color(chart, s.series);
        p.stroke = "white";
        p.stroke_width = 0.5;
        const std::string data = SvgDocument::attr("data-group", g.label) + SvgDocument::attr("data-bar", b.label) +
                                 SvgDocument::attr("data-series", name) +
                                 SvgDocument::attr("data-value", fmt::format("{}", s.value));
        const std::string title = fmt::format("{}{}{}: {} {}", g.label, g.label.empty() || b.label.empty() ? "" : ", ",
                                              b.label, name, format(s.value));
        doc.rect(cx - bar_w / 2, top, bar_w, bottom - top, p, "bar", data, title);
        base += s.value;
      }
      if (chart.show_totals && !b.segments.empty()) {
        doc.text({cx, y(base) - 4}, b.total_label.empty() ? format(base) : b.total_label, total_style, "bar-total");
      }
      if (!b.label.empty()) doc.text({cx, plot.bottom() + 14}, b.label, label_style, "bar-label");
    }
    doc.text({gx + group_w / 2, plot.bottom() + 14 + bottom_extra + 2}, g.label, group_style, "group-label");
    doc.end_group();
  }
  if (!legend.empty()) draw_legend(doc, {plot.right() + 14, plot.y + 4}, legend);
  draw_labels(doc, area, plot, chart.labels, bottom_extra);
  doc.end_group();
}

std::string render_bar_chart(const BarChart& chart, double width, double height) {
  SvgDocument doc(width, height);
  draw_bar_chart(doc, chart, {0, 0, width, height});
  return doc.str();
}

}  // namespace zerodp::report
