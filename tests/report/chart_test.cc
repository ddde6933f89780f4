// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "plan/planner.h"
#include "report/bar_chart.h"
#include "report/line_chart.h"
#include "report/plan_chart.h"
#include "xml_check.h"

namespace zerodp::report {
namespace {

using testing::find_elements;
using testing::parse_xml;

TEST(BarChart, StackedGroupsBecomeOneRectPerSegment) {
  BarChart c;
  c.labels = {"Title & more", "x", "y (GB)"};
  c.series = {{"a", ""}, {"b", "#123456"}};
  c.groups = {{"g1", {Bar{"0", {{0, 1}, {1, 2}}, ""}, Bar{"1", {{0, 3}}, ""}}}, {"g2", {Bar{"0", {{1, 4}}, ""}}}};
  c.reference_lines = {{5, "limit", "#c0392b"}};
  const auto r = parse_xml(render_bar_chart(c, 600, 400));
  ASSERT_EQ(r.error, "");
  const auto bars = find_elements(r, "rect", "bar");
  ASSERT_EQ(bars.size(), 4u);
  EXPECT_EQ(bars[1].attrs.at("data-series"), "b");
  EXPECT_EQ(bars[1].attrs.at("fill"), "#123456");
  EXPECT_EQ(bars[3].attrs.at("data-group"), "g2");
  EXPECT_EQ(bars[3].attrs.at("data-value"), "4");
  // Taller values draw taller rects: 2 (b in g1) vs 4 (b in g2).
  EXPECT_NEAR(std::stod(bars[3].attrs.at("height")) / std::stod(bars[1].attrs.at("height")), 2.0, 0.02);
  // The stack: segment b sits on top of segment a.
  EXPECT_NEAR(std::stod(bars[1].attrs.at("y")) + std::stod(bars[1].attrs.at("height")),
              std::stod(bars[0].attrs.at("y")), 0.02);
  EXPECT_EQ(find_elements(r, "text", "title")[0].text, "Title & more");
  EXPECT_EQ(find_elements(r, "text", "y-label")[0].text, "y (GB)");
  const auto legend = find_elements(r, "text", "legend-label");
  ASSERT_EQ(legend.size(), 3u);  // two series and the reference line
  EXPECT_EQ(legend[2].text, "limit");
  EXPECT_EQ(find_elements(r, "line", "reference-line").size(), 1u);
  EXPECT_EQ(find_elements(r, "text", "bar-total").size(), 3u);
}

TEST(BarChart, RejectsBadSegments) {
  BarChart c;
  c.series = {{"a", ""}};
  c.groups = {{"g", {Bar{"", {{1, 1}}, ""}}}};
  EXPECT_THROW(render_bar_chart(c, 300, 200), ShapeError);
  c.groups = {{"g", {Bar{"", {{0, -1}}, ""}}}};
  EXPECT_THROW(render_bar_chart(c, 300, 200), ShapeError);
}

TEST(LineChart, OnePolylinePerSeries) {
  LineChart c;
  c.labels = {"loss", "step", "loss (nats)"};
  c.series = {{"train", "", {{0, 10}, {1, 8}, {2, 7}}, "", true, {}}, {"val", "", {{0, 11}, {2, 9}}, "6 4", false, {}}};
  const auto r = parse_xml(render_line_chart(c, 500, 300));
  ASSERT_EQ(r.error, "");
  const auto lines = find_elements(r, "polyline", "series");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].attrs.at("data-points"), "3");
  EXPECT_EQ(lines[1].attrs.at("stroke-dasharray"), "6 4");
  EXPECT_EQ(find_elements(r, "circle", "marker").size(), 3u);
  EXPECT_EQ(find_elements(r, "text", "x-label")[0].text, "step");
  // Decreasing loss draws points lower on the page (larger y) as it falls? No:
  // smaller values are lower, i.e. larger SVG y.
  std::istringstream pts(lines[0].attrs.at("points"));
  std::string first, second;
  pts >> first >> second;
  const double y0 = std::stod(first.substr(first.find(',') + 1));
  const double y1 = std::stod(second.substr(second.find(',') + 1));
  EXPECT_GT(y1, y0);
  c.series[0].points.push_back({3, std::nan("")});
  EXPECT_THROW(render_line_chart(c, 500, 300), ShapeError);
}

plan::PlanResult paper_plan(std::vector<int> ranks) {
  plan::PlanConfig c;
  c.num_params = 7'500'000'000;
  c.ranks = std::move(ranks);
  c.precision = Dtype::fp16();
  c.device_memory = 32'000'000'000;
  return plan::make_plan(c);
}

TEST(PlanChart, ReplicaBarsAndStackedStagesAtN) {
  const auto r = parse_xml(render_plan_chart(paper_plan({64})));
  ASSERT_EQ(r.error, "");
  const auto bars = find_elements(r, "rect", "bar");
  // 3 replica bars + 4 stages x 3 categories.
  ASSERT_EQ(bars.size(), 3u + 12u);
  // One replica: 2Φ, 2Φ, 12Φ of 7.5B in GB.
  EXPECT_EQ(bars[0].attrs.at("data-value"), "15");
  EXPECT_EQ(bars[1].attrs.at("data-value"), "15");
  EXPECT_EQ(bars[2].attrs.at("data-value"), "90");
  // Stage totals: 120 / 31.4 / 16.6 / 1.88 (the paper's Figure 1).
  double totals[4] = {0, 0, 0, 0};
  for (size_t i = 3; i < bars.size(); ++i) {
    const int stage = std::stoi(bars[i].attrs.at("data-bar"));
    EXPECT_EQ(bars[i].attrs.at("data-group"), "N = 64");
    totals[stage] += std::stod(bars[i].attrs.at("data-value"));
  }
  EXPECT_NEAR(totals[0], 120, 1e-9);
  EXPECT_NEAR(totals[1], 31.40625, 1e-9);
  EXPECT_NEAR(totals[2], 16.640625, 1e-9);
  EXPECT_NEAR(totals[3], 1.875, 1e-9);
  std::vector<std::string> labels;
  for (const auto& t : find_elements(r, "text", "bar-total")) labels.push_back(t.text);
  for (const char* want : {"15 GB", "90 GB", "120", "31.4", "16.6", "1.88"}) {
    EXPECT_NE(std::find(labels.begin(), labels.end(), want), labels.end()) << want;
  }
  // Titles, axis labels with units, a legend and the device-memory line.
  const auto titles = find_elements(r, "text", "title");
  ASSERT_EQ(titles.size(), 2u);
  EXPECT_EQ(titles[0].text, "One replica: 16Φ = 120 GB");
  EXPECT_EQ(titles[1].text, "Per rank at N = 64, by ZeRO stage");
  for (const auto& t : find_elements(r, "text", "y-label")) EXPECT_NE(t.text.find("GB = 1e9 bytes"), std::string::npos);
  const auto legend = find_elements(r, "text", "legend-label");
  ASSERT_EQ(legend.size(), 4u);
  EXPECT_EQ(legend[3].text, "device memory 32 GB");
  EXPECT_EQ(find_elements(r, "line", "reference-line").size(), 1u);
}

TEST(PlanChart, GroupsPerNAndWritesAFile) {
  const auto result = paper_plan({1, 4, 16, 64});
  const auto r = parse_xml(render_plan_chart(result));
  ASSERT_EQ(r.error, "");
  EXPECT_EQ(find_elements(r, "rect", "bar").size(), 3u + 4 * 4 * 3);
  EXPECT_EQ(find_elements(r, "text", "group-label").size(), 3u + 4u);
  const std::string path = ::testing::TempDir() + "plan_chart_test.svg";
  save_plan_chart(result, path);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(parse_xml(text.str()).error, "");
  std::remove(path.c_str());
  EXPECT_THROW(save_plan_chart(result, "/nonexistent-dir/x.svg"), IoError);
}

TEST(PlanChart, ShowsGatheredAndActivationsWithAModel) {
  plan::PlanConfig c;
  c.shape = plan::GptShape{12, 12, 768, 50304, 1024};
  c.ranks = {4};
  plan::ActivationConfig a;
  a.micro_batch = 4;
  c.activations = a;
  const auto r = parse_xml(render_plan_chart(plan::make_plan(c)));
  ASSERT_EQ(r.error, "");
  // 3 replica + 4 stages x (params, grads, optimizer, unit buffers, activations):
  // bf16 keeps an fp32 compute copy of one unit at every stage.
  EXPECT_EQ(find_elements(r, "rect", "bar").size(), 3u + 4 * 5);
  EXPECT_EQ(find_elements(r, "text", "legend-label").size(), 5u);
}

}  // namespace
}  // namespace zerodp::report
