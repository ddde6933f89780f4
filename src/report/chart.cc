// SPDX-License-Identifier: Apache-2.0
#include "report/chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/error.h"

namespace zerodp::report {
namespace {

constexpr double kTitleHeight = 30;
constexpr double kYLabelWidth = 22;
constexpr double kTickLabelWidth = 52;
constexpr double kXLabelHeight = 24;
constexpr double kPad = 10;

// Rough text width for layout: most glyphs of a sans font are ~0.6 em.
double text_width(std::string_view s, double size) {
  size_t glyphs = 0;
  for (unsigned char c : s) glyphs += (c & 0xC0) != 0x80 ? 1 : 0;
  return static_cast<double>(glyphs) * size * 0.6;
}

}  // namespace

Ticks nice_ticks(double lo, double hi, int target) {
  ZDP_CHECK(std::isfinite(lo) && std::isfinite(hi), ShapeError, "[chart] axis range [{}, {}] is not finite", lo, hi);
  if (lo > hi) std::swap(lo, hi);
  if (lo == hi) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.5;
    lo -= pad;
    hi += pad;
  }
  target = std::max(target, 2);
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  Ticks t;
  t.step = step;
  t.lo = std::floor(lo / step + 1e-9) * step;
  t.hi = std::ceil(hi / step - 1e-9) * step;
  // Each tick from its index: adding `step` up would carry its rounding on.
  const auto count = static_cast<int64_t>(std::llround((t.hi - t.lo) / step));
  for (int64_t i = 0; i <= count; ++i) {
    const double v = t.lo + static_cast<double>(i) * step;
    t.values.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  return t;
}

std::string format_tick(double value, double step) {
  int decimals = 0;
  if (step > 0 && step < 1) decimals = static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  if (std::fabs(value) >= 1e7 && decimals == 0) return fmt::format("{:g}", value);  // 1.5e+07: short
  return fmt::format("{:.{}f}", value, decimals);
}

const std::string& palette_color(size_t index) {
  static const std::string kColors[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7",
                                        "#56B4E9", "#D55E00", "#F0E442", "#000000"};
  return kColors[index % std::size(kColors)];
}

double legend_width(std::span<const LegendEntry> entries, double font_size) {
  double w = 0;
  for (const LegendEntry& e : entries) w = std::max(w, text_width(e.name, font_size));
  return entries.empty() ? 0 : w + 30 + kPad;
}

void draw_legend(SvgDocument& doc, Point at, std::span<const LegendEntry> entries, double font_size) {
  doc.begin_group("legend");
  const double row = font_size + 8;
  for (size_t i = 0; i < entries.size(); ++i) {
    const LegendEntry& e = entries[i];
    const double y = at.y + static_cast<double>(i) * row;
    if (e.line) {
      Paint p;
      p.stroke = e.color;
      p.stroke_width = 2.5;
      p.dash = e.dash;
      doc.line({at.x, y + font_size * 0.5}, {at.x + 18, y + font_size * 0.5}, p);
    } else {
      Paint p;
      p.fill = e.color;
      doc.rect(at.x, y, 14, font_size, p, "legend-swatch");
    }
    TextStyle ts;
    ts.size = font_size;
    doc.text({at.x + 22, y + font_size * 0.85}, e.name, ts, "legend-label");
  }
  doc.end_group();
}

Rect plot_area(Rect area, const AxesLabels& labels, double legend_w, double bottom_extra) {
  Rect p;
  p.x = area.x + kPad + (labels.y_label.empty() ? 0 : kYLabelWidth) + kTickLabelWidth;
  p.y = area.y + (labels.title.empty() ? kPad : kTitleHeight + kPad);
  const double right = area.right() - kPad - legend_w;
  const double bottom = area.bottom() - kPad - (labels.x_label.empty() ? 0 : kXLabelHeight) - bottom_extra - 18;
  p.w = std::max(10.0, right - p.x);
  p.h = std::max(10.0, bottom - p.y);
  return p;
}

void draw_labels(SvgDocument& doc, Rect area, Rect plot, const AxesLabels& labels, double bottom_extra) {
  if (!labels.title.empty()) {
    TextStyle ts;
    ts.size = 15;
    ts.weight = "bold";
    ts.anchor = "middle";
    doc.text({area.x + area.w / 2, area.y + 20}, labels.title, ts, "title");
  }
  if (!labels.y_label.empty()) {
    TextStyle ts;
    ts.size = 12;
    ts.anchor = "middle";
    ts.rotate = -90;
    doc.text({area.x + kPad + 12, plot.y + plot.h / 2}, labels.y_label, ts, "y-label");
  }
  if (!labels.x_label.empty()) {
    TextStyle ts;
    ts.size = 12;
    ts.anchor = "middle";
    doc.text({plot.x + plot.w / 2, plot.bottom() + 18 + bottom_extra + 16}, labels.x_label, ts, "x-label");
  }
}

Ticks log_ticks(double lo, double hi, int target) {
  ZDP_CHECK(std::isfinite(lo) && std::isfinite(hi) && lo > 0 && hi > 0, ShapeError,
            "[chart] a log axis needs positive finite values, got [{}, {}]", lo, hi);
  if (lo > hi) std::swap(lo, hi);
  double a = std::floor(std::log10(lo) + 1e-9);
  double b = std::ceil(std::log10(hi) - 1e-9);
  if (a == b) a -= 1, b += 1;
  const double step = std::max(1.0, std::ceil((b - a) / std::max(target, 2)));
  Ticks t;
  t.step = step;
  t.lo = std::floor(a / step) * step;
  t.hi = std::ceil(b / step) * step;
  const auto count = static_cast<int64_t>(std::llround((t.hi - t.lo) / step));
  for (int64_t i = 0; i <= count; ++i) t.values.push_back(t.lo + static_cast<double>(i) * step);
  return t;
}

std::string format_power_of_ten(double exponent) {
  const int k = static_cast<int>(std::lround(exponent));
  if (k >= 0 && k <= 6) return fmt::format("{:.0f}", std::pow(10.0, k));
  if (k < 0 && k >= -3) return fmt::format("{:.{}f}", std::pow(10.0, k), -k);
  return fmt::format("1e{:+03d}", k);
}

void draw_y_axis(SvgDocument& doc, Rect plot, const Ticks& ticks, const LinearScale& y,
                 const std::function<std::string(double)>& label) {
  doc.begin_group("y-axis");
  Paint grid;
  grid.stroke = "#e3e3e3";
  Paint axis;
  axis.stroke = "#444";
  TextStyle ts;
  ts.size = 11;
  ts.anchor = "end";
  ts.fill = "#444";
  for (double v : ticks.values) {
    const double py = y(v);
    doc.line({plot.x, py}, {plot.right(), py}, grid, "grid");
    doc.line({plot.x - 4, py}, {plot.x, py}, axis);
    doc.text({plot.x - 7, py + 4}, label ? label(v) : format_tick(v, ticks.step), ts, "tick-label");
  }
  doc.line({plot.x, plot.y}, {plot.x, plot.bottom()}, axis, "axis");
  doc.line({plot.x, plot.bottom()}, {plot.right(), plot.bottom()}, axis, "axis");
  doc.end_group();
}

LegendEntry legend_entry(const ReferenceLine& line) { return {line.label, line.color, true, "6 4"}; }

void draw_reference_line(SvgDocument& doc, Rect plot, const LinearScale& y, const ReferenceLine& line,
                         bool inline_label) {
  const double py = y(line.value);
  if (py < plot.y - 0.5 || py > plot.bottom() + 0.5) return;
  Paint p;
  p.stroke = line.color;
  p.stroke_width = 1.5;
  p.dash = "6 4";
  doc.line({plot.x, py}, {plot.right(), py}, p, "reference-line");
  if (!inline_label) return;
  TextStyle ts;
  ts.size = 11;
  ts.anchor = "end";
  ts.fill = line.color;
  ts.halo = true;
  doc.text({plot.right() - 4, py - 5}, line.label, ts, "reference-label");
}

}  // namespace zerodp::report
