// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/error.h"
#include "report/chart.h"
#include "report/svg.h"
#include "xml_check.h"

namespace zerodp::report {
namespace {

using testing::find_elements;
using testing::parse_xml;

TEST(XmlCheck, RejectsMalformedDocuments) {
  // The checker itself must be able to fail, or the chart tests prove nothing.
  EXPECT_TRUE(parse_xml("<svg><g></g></svg>").error.empty());
  EXPECT_FALSE(parse_xml("<svg><g></svg>").error.empty());
  EXPECT_FALSE(parse_xml("<svg><text>a < b</text></svg>").error.empty());
  EXPECT_FALSE(parse_xml("<svg a=b/>").error.empty());
  EXPECT_FALSE(parse_xml("<svg a=\"1\" a=\"2\"/>").error.empty());
  EXPECT_FALSE(parse_xml("<svg/><svg/>").error.empty());
  EXPECT_FALSE(parse_xml("<svg>&nbsp;</svg>").error.empty());
}

TEST(Svg, EscapesTextAndAttributes) {
  SvgDocument doc(100, 50);
  doc.text({1, 2}, "a < b & \"c\" 'd' > e", TextStyle{});
  doc.rect(0, 0, 10, 10, Paint{}, "bar", SvgDocument::attr("data-series", "x<&>\"y"), "tip <b>");
  const auto r = parse_xml(doc.str());
  ASSERT_EQ(r.error, "");
  const auto texts = find_elements(r, "text");
  ASSERT_EQ(texts.size(), 1u);
  EXPECT_EQ(texts[0].text, "a < b & \"c\" 'd' > e");
  const auto bars = find_elements(r, "rect", "bar");
  ASSERT_EQ(bars.size(), 1u);
  EXPECT_EQ(bars[0].attrs.at("data-series"), "x<&>\"y");
  EXPECT_EQ(find_elements(r, "title")[0].text, "tip <b>");
  EXPECT_EQ(r.elements[0].attrs.at("xmlns"), "http://www.w3.org/2000/svg");
}

TEST(Svg, NumbersAreShortAndLocaleFree) {
  EXPECT_EQ(SvgDocument::num(12.3456), "12.35");
  EXPECT_EQ(SvgDocument::num(3.0), "3");
  EXPECT_EQ(SvgDocument::num(-0.001), "0");
  EXPECT_EQ(SvgDocument::num(-2.5), "-2.5");
}

TEST(Svg, GroupsMustBalanceAndCoordinatesBeFinite) {
  SvgDocument doc(10, 10);
  doc.begin_group("a");
  EXPECT_THROW(doc.str(), Error);
  doc.end_group();
  EXPECT_NO_THROW(doc.str());
  EXPECT_THROW(doc.end_group(), Error);
  EXPECT_THROW(doc.rect(0, std::nan(""), 1, 1, Paint{}), ShapeError);
  EXPECT_THROW(SvgDocument(0, 10), ShapeError);
}

TEST(Chart, NiceTicks) {
  const Ticks t = nice_ticks(0, 120, 5);
  EXPECT_DOUBLE_EQ(t.step, 50);  // 24 -> 50: 0, 50, 100, 150
  EXPECT_DOUBLE_EQ(t.lo, 0);
  EXPECT_GE(t.hi, 120);
  const Ticks u = nice_ticks(0, 1.0, 5);
  EXPECT_DOUBLE_EQ(u.step, 0.2);
  EXPECT_EQ(u.values.size(), 6u);
  const Ticks c = nice_ticks(3, 3, 5);
  EXPECT_LT(c.lo, 3);
  EXPECT_GT(c.hi, 3);
  EXPECT_EQ(format_tick(0.25, 0.05), "0.25");
  EXPECT_EQ(format_tick(100, 50), "100");
  EXPECT_THROW(nice_ticks(0, std::nan(""), 5), ShapeError);
}

}  // namespace
}  // namespace zerodp::report
