// SPDX-License-Identifier: Apache-2.0
// Bar charts: groups along x, several bars per group, each bar a stack of
// segments coloured by series (one legend entry per series). A plain bar
// chart is groups of one bar with one segment; a grouped chart leaves stacks
// at one segment; a stacked chart uses many. Optional dashed reference lines
// (e.g. the device memory) and a total printed above each bar.
//
// Every bar segment is a <rect class="bar"> carrying data-group, data-bar,
// data-series and data-value attributes and a hover title, so tests and
// readers can find the numbers behind the picture.
// Thread-safety: pure, drawing into a caller-owned document.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "report/chart.h"
#include "report/svg.h"

namespace zerodp::report {

struct BarSeries {
  std::string name;
  std::string color;  // empty: palette_color(index)
};

struct BarSegment {
  size_t series = 0;  // index into BarChart::series
  double value = 0;   // >= 0
};

struct Bar {
  std::string label;                 // under the bar (may be empty)
  std::vector<BarSegment> segments;  // stacked bottom-up
  std::string total_label;           // above the bar; empty: value_format(sum)
};

struct BarGroup {
  std::string label;  // under the group
  std::vector<Bar> bars;
};

struct BarChart {
  AxesLabels labels;
  std::vector<BarSeries> series;
  std::vector<BarGroup> groups;
  std::vector<ReferenceLine> reference_lines;
  bool show_totals = true;
  bool show_legend = true;
  std::optional<double> y_max;                      // share a scale across panels; unset: fit the data
  std::function<std::string(double)> value_format;  // default: 3 significant digits
};

// ShapeError on a segment naming a missing series or a negative/non-finite value.
void draw_bar_chart(SvgDocument& doc, const BarChart& chart, Rect area);
std::string render_bar_chart(const BarChart& chart, double width, double height);

}  // namespace zerodp::report
