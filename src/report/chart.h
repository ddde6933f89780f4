// SPDX-License-Identifier: Apache-2.0
// The parts every zerodp chart shares: the rectangle a chart is drawn into,
// a linear scale, "nice" axis ticks (1, 2, 5 x 10^k), a colour palette that
// stays readable for colour-blind readers (Okabe-Ito), the title, axis
// labels, y grid, and a legend. bar_chart.h and line_chart.h build on these;
// a figure with several panels draws each chart into its own Rect of one
// SvgDocument.
// Thread-safety: pure functions, plus drawing into a caller-owned document.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "report/svg.h"

namespace zerodp::report {

struct Rect {
  double x = 0;
  double y = 0;
  double w = 0;
  double h = 0;
  double right() const { return x + w; }
  double bottom() const { return y + h; }
};

// Maps [d0, d1] onto [r0, r1] (r1 < r0 for a y axis growing upwards).
struct LinearScale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  double operator()(double v) const { return d1 == d0 ? r0 : r0 + (v - d0) * (r1 - r0) / (d1 - d0); }
};

struct Ticks {
  double lo = 0;  // first tick, <= the data's low end
  double hi = 1;  // last tick, >= the data's high end
  double step = 1;
  std::vector<double> values;
};

// About `target` ticks covering [lo, hi] at a step of 1, 2 or 5 x 10^k.
// lo == hi is widened; REQUIRES finite inputs (ShapeError otherwise).
Ticks nice_ticks(double lo, double hi, int target = 5);

// A tick value with as many decimals as the step needs: 0.25 -> "0.25",
// 120 -> "120", 1e-3 steps -> "0.001".
std::string format_tick(double value, double step);

// Okabe-Ito colours, cycled.
const std::string& palette_color(size_t index);

struct LegendEntry {
  std::string name;
  std::string color;
  bool line = false;  // a line sample instead of a filled box
  std::string dash;
};

// Width a legend needs for these entries (approximate text metrics).
double legend_width(std::span<const LegendEntry> entries, double font_size = 12);
// Draws the legend's entries top-down from `at`.
void draw_legend(SvgDocument& doc, Point at, std::span<const LegendEntry> entries, double font_size = 12);

// Labels of one chart and the area left for its plot after the title, the
// axis labels, tick labels and (when `legend_w` > 0) a legend on the right.
struct AxesLabels {
  std::string title;
  std::string x_label;
  std::string y_label;
};
Rect plot_area(Rect area, const AxesLabels& labels, double legend_w, double bottom_extra = 0);

// Title above, the y label rotated on the left, the x label below.
void draw_labels(SvgDocument& doc, Rect area, Rect plot, const AxesLabels& labels, double bottom_extra = 0);
// Horizontal grid lines and y tick labels at `ticks`, and the plot's frame
// axes; `label` turns a tick value into its text (default: format_tick).
void draw_y_axis(SvgDocument& doc, Rect plot, const Ticks& ticks, const LinearScale& y,
                 const std::function<std::string(double)>& label = {});

// Ticks for a log10 axis over [lo, hi] (both > 0), in log10 units: whole
// powers of ten, every k-th one so that about `target` remain.
Ticks log_ticks(double lo, double hi, int target = 5);
// 10^exponent as a short label: 0.001, 1, 1000, 1e+06.
std::string format_power_of_ten(double exponent);

// A horizontal dashed reference line across the plot. Its label goes into the
// legend (legend_entry) so it never sits on top of bars or curves; with
// `inline_label` it is also written above the line's right end.
struct ReferenceLine {
  double value = 0;
  std::string label;
  std::string color = "#c0392b";
};
void draw_reference_line(SvgDocument& doc, Rect plot, const LinearScale& y, const ReferenceLine& line,
                         bool inline_label = false);
LegendEntry legend_entry(const ReferenceLine& line);

}  // namespace zerodp::report
