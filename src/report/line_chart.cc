// SPDX-License-Identifier: Apache-2.0
#include "report/line_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace zerodp::report {

void draw_line_chart(SvgDocument& doc, const LineChart& chart_in, Rect area) {
  // Stacking turns each series into its running sum over the series below.
  LineChart stacked_copy;
  if (chart_in.stacked) {
    stacked_copy = chart_in;
    for (size_t i = 1; i < stacked_copy.series.size(); ++i) {
      auto& cur = stacked_copy.series[i].points;
      const auto& below = stacked_copy.series[i - 1].points;
      ZDP_CHECK(cur.size() == below.size(), ShapeError,
                "[line_chart] stacked series '{}' has {} points, the one below {}", stacked_copy.series[i].name,
                cur.size(), below.size());
      for (size_t k = 0; k < cur.size(); ++k) {
        ZDP_CHECK(cur[k].x == below[k].x, ShapeError,
                  "[line_chart] stacked series '{}' point {} is at x = {}, "
                  "the one below at {}",
                  stacked_copy.series[i].name, k, cur[k].x, below[k].x);
        cur[k].y += below[k].y;
      }
    }
  }
  const LineChart& chart = chart_in.stacked ? stacked_copy : chart_in;
  // On a log axis every y is drawn as log10(y).
  auto ty = [&](double v) {
    if (!chart.y_log) return v;
    ZDP_CHECK(v > 0, ShapeError, "[line_chart] '{}' has y = {} on a log axis: only positive values can be drawn",
              chart.labels.title, v);
    return std::log10(v);
  };
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo;
  double y_lo = x_lo, y_hi = -x_lo;
  for (const LineSeries& s : chart.series) {
    for (const Point& p : s.points) {
      ZDP_CHECK(std::isfinite(p.x) && std::isfinite(p.y), ShapeError,
                "[line_chart] series '{}' has a non-finite point ({}, {})", s.name, p.x, p.y);
      x_lo = std::min(x_lo, p.x);
      x_hi = std::max(x_hi, p.x);
      y_lo = std::min(y_lo, ty(p.y));
      y_hi = std::max(y_hi, ty(p.y));
    }
  }
  for (const ReferenceLine& r : chart.reference_lines) {
    y_lo = std::min(y_lo, ty(r.value));
    y_hi = std::max(y_hi, ty(r.value));
  }
  for (double m : chart.marks.at) {
    ZDP_CHECK(std::isfinite(m), ShapeError, "[line_chart] '{}' has a vertical mark at x = {}", chart.labels.title, m);
    x_lo = std::min(x_lo, m);
    x_hi = std::max(x_hi, m);
  }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1;
  if (!std::isfinite(y_lo)) y_lo = 0, y_hi = 1;
  if (chart.y_from_zero && y_lo >= 0 && !chart.y_log) y_lo = 0;
  x_lo = chart.x_min.value_or(x_lo);
  x_hi = chart.x_max.value_or(x_hi);
  if (chart.y_min) y_lo = ty(*chart.y_min);
  if (chart.y_max) y_hi = ty(*chart.y_max);

  std::vector<LegendEntry> legend;
  auto color = [&](size_t i) { return chart.series[i].color.empty() ? palette_color(i) : chart.series[i].color; };
  if (chart.show_legend) {
    for (size_t i = 0; i < chart.series.size(); ++i) {
      legend.push_back({chart.series[i].name, color(i), true, chart.series[i].dash});
    }
  }
  for (const ReferenceLine& r : chart.reference_lines) legend.push_back(legend_entry(r));
  if (!chart.marks.at.empty()) legend.push_back({chart.marks.label, chart.marks.color, true, "2 3"});

  doc.begin_group("line-chart");
  const Rect plot = plot_area(area, chart.labels, legend_width(legend));
  const Ticks yt = chart.y_log ? log_ticks(std::pow(10.0, y_lo), std::pow(10.0, y_hi), 5) : nice_ticks(y_lo, y_hi, 5);
  const Ticks xt = nice_ticks(x_lo, x_hi, 6);
  const LinearScale y{yt.lo, yt.hi, plot.bottom(), plot.y};
  const LinearScale x{xt.lo, xt.hi, plot.x, plot.right()};
  if (chart.y_log) {
    draw_y_axis(doc, plot, yt, y, format_power_of_ten);
  } else {
    draw_y_axis(doc, plot, yt, y);
  }

  doc.begin_group("x-axis");
  Paint tick;
  tick.stroke = "#444";
  TextStyle ts;
  ts.size = 11;
  ts.anchor = "middle";
  ts.fill = "#444";
  for (double v : xt.values) {
    const double px = x(v);
    doc.line({px, plot.bottom()}, {px, plot.bottom() + 4}, tick);
    doc.text({px, plot.bottom() + 16}, format_tick(v, xt.step), ts, "tick-label");
  }
  doc.end_group();

  if (!chart.marks.at.empty()) {
    doc.begin_group("vertical-marks");
    Paint mark;
    mark.stroke = chart.marks.color;
    mark.dash = "2 3";
    mark.opacity = 0.8;
    for (double v : chart.marks.at) {
      const double px = x(v);
      doc.line({px, plot.y}, {px, plot.bottom()}, mark, chart.marks.css_class);
    }
    doc.end_group();
  }

  for (size_t i = 0; i < chart.series.size(); ++i) {
    const LineSeries& s = chart.series[i];
    std::vector<Point> mapped;
    mapped.reserve(s.points.size());
    for (const Point& p : s.points) mapped.push_back({x(p.x), y(ty(p.y))});
    Paint p;
    p.stroke = color(i);
    p.stroke_width = 2;
    p.dash = s.dash;
    const std::string data =
        SvgDocument::attr("data-series", s.name) + SvgDocument::attr("data-points", fmt::format("{}", s.points.size()));
    if (chart.stacked && !mapped.empty()) {
      // The band between this series and the one below (or the axis).
      std::vector<Point> band = mapped;
      if (i == 0) {
        band.push_back({mapped.back().x, y(yt.lo)});
        band.push_back({mapped.front().x, y(yt.lo)});
      } else {
        const auto& below = chart.series[i - 1].points;
        for (size_t k = below.size(); k-- > 0;) band.push_back({x(below[k].x), y(ty(below[k].y))});
      }
      band.push_back(band.front());
      Paint fill;
      fill.fill = color(i);
      fill.opacity = 0.55;
      doc.polyline(band, fill, "band");
    }
    if (s.gaps.empty()) {
      doc.polyline(mapped, p, "series", data);
    } else {
      // Runs between the gaps; a point alone in its run gets a dot.
      std::vector<std::vector<Point>> runs(1);
      size_t next_gap = 0;
      for (size_t k = 0; k < mapped.size(); ++k) {
        if (next_gap < s.gaps.size() && s.gaps[next_gap] == k) {
          if (!runs.back().empty()) runs.emplace_back();
          ++next_gap;
        }
        runs.back().push_back(mapped[k]);
      }
      doc.path(runs, p, "series", data + SvgDocument::attr("data-gaps", fmt::format("{}", s.gaps.size())));
      Paint dot;
      dot.fill = color(i);
      for (const std::vector<Point>& run : runs) {
        if (run.size() == 1 && !s.markers) doc.circle(run[0], 2, dot, "lone-point");
      }
    }
    if (s.markers) {
      Paint m;
      m.fill = color(i);
      for (const Point& q : mapped) doc.circle(q, 2.5, m, "marker");
    }
  }
  for (ReferenceLine r : chart.reference_lines) {
    r.value = ty(r.value);
    draw_reference_line(doc, plot, y, r);
  }
  if (!legend.empty()) draw_legend(doc, {plot.right() + 14, plot.y + 4}, legend);
  draw_labels(doc, area, plot, chart.labels);
  doc.end_group();
}

std::string render_line_chart(const LineChart& chart, double width, double height) {
  SvgDocument doc(width, height);
  draw_line_chart(doc, chart, {0, 0, width, height});
  return doc.str();
}

}  // namespace zerodp::report
