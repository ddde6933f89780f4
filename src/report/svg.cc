// SPDX-License-Identifier: Apache-2.0
#include "report/svg.h"

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "core/error.h"

namespace zerodp::report {
namespace {

std::string paint_attrs(const Paint& p) {
  std::string out;
  if (!p.fill.empty()) out += SvgDocument::attr("fill", p.fill);
  if (!p.stroke.empty()) {
    out += SvgDocument::attr("stroke", p.stroke);
    out += SvgDocument::attr("stroke-width", SvgDocument::num(p.stroke_width));
  }
  if (!p.dash.empty()) out += SvgDocument::attr("stroke-dasharray", p.dash);
  if (p.opacity != 1) out += SvgDocument::attr("opacity", SvgDocument::num(p.opacity));
  return out;
}

std::string class_attr(std::string_view css_class) {
  return css_class.empty() ? std::string() : SvgDocument::attr("class", css_class);
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

SvgDocument::SvgDocument(double width, double height) : width_(width), height_(height) {
  ZDP_CHECK(std::isfinite(width) && std::isfinite(height) && width > 0 && height > 0, ShapeError,
            "[svg] document size must be positive, got {} x {}", width, height);
}

std::string SvgDocument::attr(std::string_view name, std::string_view value) {
  return fmt::format(" {}=\"{}\"", name, xml_escape(value));
}

std::string SvgDocument::num(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

void SvgDocument::check_finite(double v, std::string_view what) const {
  ZDP_CHECK(std::isfinite(v), ShapeError, "[svg] {} is not finite ({})", what, v);
}

void SvgDocument::rect(double x, double y, double w, double h, const Paint& paint, std::string_view css_class,
                       std::string_view data, std::string_view title) {
  check_finite(x, "rect x");
  check_finite(y, "rect y");
  check_finite(w, "rect width");
  check_finite(h, "rect height");
  body_ += fmt::format("<rect{}{}{}{}{}{}{}", class_attr(css_class), attr("x", num(x)), attr("y", num(y)),
                       attr("width", num(std::max(0.0, w))), attr("height", num(std::max(0.0, h))), paint_attrs(paint),
                       data);
  if (title.empty()) {
    body_ += "/>\n";
  } else {
    body_ += fmt::format("><title>{}</title></rect>\n", xml_escape(title));
  }
}

void SvgDocument::line(Point a, Point b, const Paint& paint, std::string_view css_class) {
  for (double v : {a.x, a.y, b.x, b.y}) check_finite(v, "line coordinate");
  body_ += fmt::format("<line{}{}{}{}{}{}/>\n", class_attr(css_class), attr("x1", num(a.x)), attr("y1", num(a.y)),
                       attr("x2", num(b.x)), attr("y2", num(b.y)), paint_attrs(paint));
}

void SvgDocument::polyline(std::span<const Point> points, const Paint& paint, std::string_view css_class,
                           std::string_view data) {
  std::string coords;
  for (const Point& p : points) {
    check_finite(p.x, "polyline x");
    check_finite(p.y, "polyline y");
    if (!coords.empty()) coords += ' ';
    coords += num(p.x) + "," + num(p.y);
  }
  body_ +=
      fmt::format("<polyline{}{}{}{}/>\n", class_attr(css_class), attr("points", coords), paint_attrs(paint), data);
}

void SvgDocument::path(std::span<const std::vector<Point>> runs, const Paint& paint, std::string_view css_class,
                       std::string_view data) {
  std::string d;
  for (const std::vector<Point>& run : runs) {
    if (run.size() < 2) continue;
    for (size_t i = 0; i < run.size(); ++i) {
      check_finite(run[i].x, "path x");
      check_finite(run[i].y, "path y");
      if (!d.empty()) d += ' ';
      d += i == 0 ? 'M' : 'L';
      d += num(run[i].x);
      d += ',';
      d += num(run[i].y);
    }
  }
  body_ += fmt::format("<path{}{}{}{}/>\n", class_attr(css_class), attr("d", d), paint_attrs(paint), data);
}

void SvgDocument::circle(Point center, double radius, const Paint& paint, std::string_view css_class) {
  check_finite(center.x, "circle x");
  check_finite(center.y, "circle y");
  check_finite(radius, "circle radius");
  body_ += fmt::format("<circle{}{}{}{}{}/>\n", class_attr(css_class), attr("cx", num(center.x)),
                       attr("cy", num(center.y)), attr("r", num(radius)), paint_attrs(paint));
}

void SvgDocument::text(Point at, std::string_view content, const TextStyle& style, std::string_view css_class) {
  check_finite(at.x, "text x");
  check_finite(at.y, "text y");
  std::string attrs = class_attr(css_class) + attr("x", num(at.x)) + attr("y", num(at.y)) +
                      attr("font-size", num(style.size)) + attr("text-anchor", style.anchor) + attr("fill", style.fill);
  if (!style.weight.empty()) attrs += attr("font-weight", style.weight);
  if (style.halo) {
    attrs += attr("stroke", "white") + attr("stroke-width", "3") + attr("stroke-linejoin", "round") +
             attr("paint-order", "stroke");
  }
  if (style.rotate != 0) {
    attrs += attr("transform", fmt::format("rotate({} {} {})", num(style.rotate), num(at.x), num(at.y)));
  }
  body_ += fmt::format("<text{}>{}</text>\n", attrs, xml_escape(content));
}

void SvgDocument::begin_group(std::string_view css_class, std::string_view transform) {
  body_ += "<g" + class_attr(css_class) + (transform.empty() ? "" : attr("transform", transform)) + ">\n";
  ++open_groups_;
}

void SvgDocument::end_group() {
  ZDP_CHECK(open_groups_ > 0, Error, "[svg] end_group without a matching begin_group");
  body_ += "</g>\n";
  --open_groups_;
}

std::string SvgDocument::str() const {
  ZDP_CHECK(open_groups_ == 0, Error, "[svg] {} group(s) still open", open_groups_);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
      "{2}</svg>\n",
      num(width_), num(height_), body_);
}

void SvgDocument::save(const std::string& path) const {
  const std::string text = str();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  ZDP_CHECK(out.good(), IoError, "[svg] cannot open '{}' for writing", path);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  ZDP_CHECK(!out.fail(), IoError, "[svg] failed writing '{}'", path);
}

}  // namespace zerodp::report
