// SPDX-License-Identifier: Apache-2.0
// A small, dependency-free SVG writer: the drawing primitives charts need
// (rectangles, lines, polylines, paths of several runs, circles, text,
// groups, titles), with XML escaping done here so callers pass plain
// strings. Numbers are written with two decimals and '.' whatever the
// locale, so output is reproducible.
//
// Contract: begin_group/end_group nest; str() REQUIRES every group closed
// (Error otherwise) and returns a complete, well-formed SVG document.
// Coordinates must be finite (ShapeError otherwise): a NaN in a chart is a
// bug upstream, not something to draw.
// Thread-safety: a SvgDocument is a plain value; use one per thread.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace zerodp::report {

struct Point {
  double x = 0;
  double y = 0;
};

// Fill and stroke of a shape; empty strings are omitted ("none" to disable).
struct Paint {
  std::string fill = "none";
  std::string stroke;
  double stroke_width = 1;
  std::string dash;  // stroke-dasharray, e.g. "6 4"
  double opacity = 1;
};

struct TextStyle {
  double size = 12;
  std::string anchor = "start";  // start | middle | end
  std::string weight;            // "bold" or empty
  std::string fill = "#222";
  double rotate = 0;  // degrees about the anchor point
  bool halo = false;  // a white outline so labels stay legible over bars and lines
};

// &, <, >, " and ' as entities.
std::string xml_escape(std::string_view text);

class SvgDocument {
 public:
  SvgDocument(double width, double height);

  double width() const { return width_; }
  double height() const { return height_; }

  // `css_class` and `data` (extra raw attributes such as data-value="...",
  // values escaped by the caller via attr()) help tests and stylesheets find
  // elements; `title` becomes a hover tooltip.
  void rect(double x, double y, double w, double h, const Paint& paint, std::string_view css_class = {},
            std::string_view data = {}, std::string_view title = {});
  void line(Point a, Point b, const Paint& paint, std::string_view css_class = {});
  void polyline(std::span<const Point> points, const Paint& paint, std::string_view css_class = {},
                std::string_view data = {});
  // One <path> of several unconnected runs of points ("M ... L ... M ..."):
  // a line with gaps. Runs of fewer than two points draw nothing.
  void path(std::span<const std::vector<Point>> runs, const Paint& paint, std::string_view css_class = {},
            std::string_view data = {});
  void circle(Point center, double radius, const Paint& paint, std::string_view css_class = {});
  void text(Point at, std::string_view content, const TextStyle& style, std::string_view css_class = {});

  void begin_group(std::string_view css_class, std::string_view transform = {});
  void end_group();

  std::string str() const;
  // Writes str() to `path`; IoError when the file cannot be written.
  void save(const std::string& path) const;

  // ` name="value"` with the value escaped, for the `data` arguments.
  static std::string attr(std::string_view name, std::string_view value);
  static std::string num(double v);  // "12.35", "-0.5", "3"

 private:
  void check_finite(double v, std::string_view what) const;

  double width_;
  double height_;
  std::string body_;
  int open_groups_ = 0;
};

}  // namespace zerodp::report
