// SPDX-License-Identifier: Apache-2.0
// Line charts: several series of (x, y) points on shared linear axes, for
// loss and validation-loss curves, tokens/s, loss scale and memory over time.
// Each series is a <polyline class="series"> with data-series and
// data-points attributes; points may be marked with circles. A series with
// gaps (a value missing between two points) is one <path class="series">
// of several runs with a data-gaps attribute; a point alone between two gaps
// gets a circle. Vertical marks (e.g. skipped steps) cross the plot at given
// x values, with one legend entry.
// Thread-safety: pure, drawing into a caller-owned document.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "report/chart.h"
#include "report/svg.h"

namespace zerodp::report {

struct LineSeries {
  std::string name;
  std::string color;          // empty: palette_color(index)
  std::vector<Point> points;  // data coordinates, drawn in the given order
  std::string dash;           // e.g. "6 4" for a dashed series
  bool markers = false;
  // Indices k (0 < k < points.size(), ascending): no line from points[k-1]
  // to points[k], because a value between them is missing.
  std::vector<size_t> gaps;
};

// Thin vertical lines across the plot at `at` (data x values), one legend
// entry `label`; each line has class `css_class`.
struct VerticalMarks {
  std::vector<double> at;
  std::string label;
  std::string css_class = "x-mark";
  std::string color = "#c0392b";
};

struct LineChart {
  AxesLabels labels;
  std::vector<LineSeries> series;
  std::vector<ReferenceLine> reference_lines;
  VerticalMarks marks;
  // Axis ranges; unset ends follow the data (y starts at 0 when all y >= 0
  // and `y_from_zero`).
  std::optional<double> x_min, x_max, y_min, y_max;
  bool y_from_zero = false;
  bool y_log = false;  // log10 y axis (powers of ten); every y must be > 0
  // Stacked areas: series i is drawn on top of series 0..i-1 (REQUIRES every
  // series to have the same x values in the same order, ShapeError
  // otherwise), its band filled; for parts of a whole, like memory by category.
  bool stacked = false;
  bool show_legend = true;
};

// ShapeError on non-finite points (and y <= 0 on a log axis).
void draw_line_chart(SvgDocument& doc, const LineChart& chart, Rect area);
std::string render_line_chart(const LineChart& chart, double width, double height);

}  // namespace zerodp::report
