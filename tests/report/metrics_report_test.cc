// SPDX-License-Identifier: Apache-2.0
// The metrics reader and the run report: what the trainer writes is read
// back field by field, bad files are one-line ConfigErrors naming the line,
// and the report's charts are well-formed SVG with the series they promise.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core/error.h"
#include "report/metrics_reader.h"
#include "report/run_report.h"
#include "xml_check.h"

namespace zerodp::report {
namespace {

// Two ranks, the shape src/report/metrics_record.h defines and the trainer writes.
std::string record(int step, double loss, const std::string& extra = "") {
  std::ostringstream o;
  o << R"({"step":)" << step << R"(,"loss":)" << loss << R"(,"lr":0.001,"loss_scale":)" << (step < 3 ? 65536 : 32768)
    << R"(,"skipped":)" << (step == 3 ? "true" : "false") << R"(,"clipped":false,"tokens_per_s":)" << 1000 + step * 10
    << R"(,"step_seconds":0.5,"grad_norm":)" << (step == 3 ? "null" : "1.5") << extra << R"(,"memory":[)";
  for (int r = 0; r < 2; ++r) {
    o << (r ? "," : "") << R"({"params":{"current":1048576,"peak":1048576},"grads":{"current":)" << 524288 * (r + 1)
      << R"(,"peak":1048576},"buckets":{"current":0,"peak":2097152},"comm":{"current":0,"peak":0},"model_states":3145728})";
  }
  o << R"(],"comm":[{"all_reduce":{"calls":3,"bytes_sent":2097152,"bytes_received":2097152}},)"
    << R"({"all_reduce":{"calls":3,"bytes_sent":2097152,"bytes_received":2097152},"all_gather":{"calls":1,"bytes_sent":1048576,"bytes_received":1048576}}]})";
  return o.str();
}

std::string sample() {
  return record(1, 5.5) + "\n" + record(2, 5.0, R"(,"val_loss":5.1)") + "\n\n" + record(3, 4.5) + "\n" +
         record(4, 4.0, R"(,"val_loss":4.2,"future_key":[1,2])") + "\n";
}

RunMetrics parse(const std::string& text) {
  std::istringstream in(text);
  return parse_metrics(in, "m.jsonl");
}

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(MetricsReader, ReadsEveryField) {
  const RunMetrics m = parse(sample());
  ASSERT_EQ(m.steps.size(), 4u);
  const StepRecord& s = m.steps[1];
  EXPECT_EQ(s.step, 2);
  EXPECT_DOUBLE_EQ(*s.loss, 5.0);
  EXPECT_DOUBLE_EQ(*s.val_loss, 5.1);
  EXPECT_FALSE(m.steps[0].val_loss.has_value());
  EXPECT_DOUBLE_EQ(*s.loss_scale, 65536);
  EXPECT_TRUE(m.steps[2].skipped);
  EXPECT_FALSE(m.steps[2].grad_norm.has_value());  // null when skipped
  ASSERT_EQ(s.memory.size(), 2u);
  EXPECT_EQ(s.memory[1].categories.at("grads").current, 1048576u);
  EXPECT_EQ(s.memory[0].categories.at("buckets").peak, 2097152u);
  EXPECT_EQ(*s.memory[0].model_states, 3145728u);
  ASSERT_EQ(s.comm.size(), 2u);
  EXPECT_EQ(s.comm[1].at("all_gather").bytes_sent, 1048576u);
  EXPECT_EQ(s.comm[0].count("all_gather"), 0u);
}

TEST(MetricsReader, BadFilesAreOneLineErrorsNamingTheLine) {
  // Not the last line: a cut last line is a warning (TruncatedLastLineIsAWarning).
  const std::string bad_json = error_of(record(1, 5) + "\n{\"step\": 2, \"loss\": \n" + record(3, 4) + "\n");
  EXPECT_NE(bad_json.find("m.jsonl line 2"), std::string::npos) << bad_json;
  EXPECT_NE(bad_json.find("not valid JSON"), std::string::npos) << bad_json;
  EXPECT_NE(error_of(R"({"loss": 1.0})").find("line 1: missing \"step\""), std::string::npos);
  EXPECT_NE(error_of(record(1, 5) + "\n" + R"({"step": 2})").find("line 2: missing \"loss\""), std::string::npos);
  EXPECT_NE(error_of(R"({"step": "one", "loss": 1})").find("\"step\" must be an integer"), std::string::npos);
  EXPECT_NE(error_of(R"({"step": 1, "loss": "low"})").find("\"loss\" must be a number"), std::string::npos);
  EXPECT_NE(error_of(R"([1, 2])").find("expected a JSON object"), std::string::npos);
  EXPECT_NE(error_of(R"({"step": 1, "loss": 1, "memory": {"params": 1}})").find("\"memory\" must be an array"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"step": 1, "loss": 1, "memory": [{"params": {"current": -1, "peak": 0}}]})")
                .find("memory[0].params.current must be a non-negative integer"),
            std::string::npos);
  const std::string empty = error_of("\n\n");
  EXPECT_NE(empty.find("holds no records"), std::string::npos) << empty;
  for (const std::string& e : {bad_json, empty}) EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_THROW(read_metrics("/nonexistent/metrics.jsonl"), ConfigError);
}

TEST(RunReport, DrawsEveryChartWellFormed) {
  const RunMetrics m = parse(sample());
  const std::vector<ReportChart> charts = report_charts(m);
  std::vector<std::string> names;
  for (const ReportChart& c : charts) {
    names.push_back(c.name);
    const auto xml = testing::parse_xml(c.svg);
    EXPECT_TRUE(xml.error.empty()) << c.name << ": " << xml.error;
    int titles = 0, series = 0;
    for (const auto& e : xml.elements) {
      const auto cls = e.attrs.find("class");
      if (cls == e.attrs.end()) continue;
      titles += cls->second == "title" ? 1 : 0;
      series += cls->second == "series" || cls->second == "bar" ? 1 : 0;
    }
    EXPECT_EQ(titles, 1) << c.name;
    EXPECT_GT(series, 0) << c.name;
  }
  const std::vector<std::string> expected = {"loss",         "throughput",   "loss_scale",      "lr",  "grad_norm",
                                             "memory_rank0", "memory_rank1", "memory_per_rank", "comm"};
  EXPECT_EQ(names, expected);
  // The loss chart has both curves; the loss scale's axis is logarithmic.
  EXPECT_NE(charts[0].svg.find("data-series=\"validation loss\""), std::string::npos);
  EXPECT_NE(charts[2].svg.find(">10000<"), std::string::npos) << charts[2].svg;
  // Memory shows only categories that hold bytes ("comm" is all zero).
  EXPECT_EQ(charts[5].svg.find("data-series=\"comm\""), std::string::npos);
  EXPECT_NE(charts[5].svg.find("data-series=\"buckets\""), std::string::npos);
}

TEST(RunReport, HtmlIsOneSelfContainedPage) {
  const RunMetrics m = parse(sample());
  const std::string html = render_report_html(m);
  size_t svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) ++svgs;
  EXPECT_EQ(svgs, report_charts(m).size());
  EXPECT_EQ(html.find("<?xml"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src=\""), std::string::npos);  // nothing loaded from elsewhere
  EXPECT_NE(html.find("best validation loss"), std::string::npos);
  const auto dir = std::filesystem::temp_directory_path() / "zerodp_report_test";
  std::filesystem::create_directories(dir);
  write_report_html(m, (dir / "r.html").string());
  EXPECT_GT(std::filesystem::file_size(dir / "r.html"), 1000u);
  EXPECT_EQ(write_report_svgs(m, dir.string()).size(), report_charts(m).size());
  // A missing --svg-dir is made (nested too); a file in its place is refused.
  EXPECT_EQ(write_report_svgs(m, (dir / "new" / "charts").string()).size(), report_charts(m).size());
  EXPECT_TRUE(std::filesystem::exists(dir / "new" / "charts" / "loss.svg"));
  EXPECT_THROW(write_report_svgs(m, (dir / "r.html").string()), ConfigError);
  EXPECT_THROW(write_report_html(m, (dir / "missing" / "r.html").string()), ConfigError);
  std::filesystem::remove_all(dir);
}

// The element of class `cls` whose data-series is `series` in an SVG.
std::map<std::string, std::string> series_element(const std::string& svg, const std::string& series) {
  for (const auto& e : testing::parse_xml(svg).elements) {
    const auto cls = e.attrs.find("class");
    const auto name = e.attrs.find("data-series");
    if (cls != e.attrs.end() && cls->second == "series" && name != e.attrs.end() && name->second == series) {
      return e.attrs;
    }
  }
  return {};
}

const ReportChart* chart_named(const std::vector<ReportChart>& charts, const std::string& name) {
  for (const ReportChart& c : charts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// Step 3 of the sample was skipped (fp16 overflow, grad_norm null): the
// gradient-norm line stops before it and starts again after it, and the
// step is marked, instead of a line drawn from step 2 to step 4.
TEST(RunReport, SkippedStepsAreGapsNotJoined) {
  const std::vector<ReportChart> charts = report_charts(parse(sample()));
  const ReportChart* norm = chart_named(charts, "grad_norm");
  ASSERT_NE(norm, nullptr);
  const auto line = series_element(norm->svg, "grad norm");
  ASSERT_FALSE(line.empty()) << norm->svg;
  ASSERT_TRUE(line.count("data-gaps")) << norm->svg;
  EXPECT_EQ(line.at("data-gaps"), "1");
  EXPECT_EQ(line.at("data-points"), "3");
  EXPECT_NE(norm->svg.find("class=\"skipped-step\""), std::string::npos) << norm->svg;
  EXPECT_NE(norm->svg.find("skipped step (fp16 overflow)"), std::string::npos);
  // A run without skipped steps draws one unbroken line and no marks.
  const std::vector<ReportChart> clean = report_charts(parse(record(1, 5.5) + "\n" + record(2, 5.0) + "\n"));
  const auto whole = series_element(chart_named(clean, "grad_norm")->svg, "grad norm");
  EXPECT_EQ(whole.count("data-gaps"), 0u);
  EXPECT_EQ(chart_named(clean, "grad_norm")->svg.find("skipped-step"), std::string::npos);
}

// bf16 and fp32 runs have no dynamic loss scale: no chart of a constant.
TEST(RunReport, LossScaleChartOnlyForFp16) {
  const std::string plain = R"({"step":1,"loss":2.0,"loss_scale":1})"
                            "\n"
                            R"({"step":2,"loss":1.5,"loss_scale":1})"
                            "\n";
  EXPECT_EQ(chart_named(report_charts(parse(plain)), "loss_scale"), nullptr);
  const std::string absent = R"({"step":1,"loss":2.0,"lr":0.1})"
                             "\n"
                             R"({"step":2,"loss":1.5,"lr":0.1})"
                             "\n";
  EXPECT_EQ(chart_named(report_charts(parse(absent)), "loss_scale"), nullptr);
  // The run's own config decides when it is there.
  const std::string bf16 = R"({"config":{"precision":{"value":"bf16","source":"default"}}})"
                           "\n" +
                           sample();
  const RunMetrics m = parse(bf16);
  ASSERT_TRUE(m.precision.has_value());
  EXPECT_EQ(*m.precision, "bf16");
  EXPECT_EQ(chart_named(report_charts(m), "loss_scale"), nullptr);
  const std::string fp16 = R"({"config":{"precision":{"value":"fp16","source":"--precision"}}})"
                           "\n" +
                           plain;
  EXPECT_NE(chart_named(report_charts(parse(fp16)), "loss_scale"), nullptr);
  // Without a config record, a scale that moves is fp16's.
  EXPECT_NE(chart_named(report_charts(parse(sample())), "loss_scale"), nullptr);
}

// The report's units are `zerodp train`'s: MB = 1e6 bytes, tokens/s, s.
TEST(RunReport, UnitsAreTheTrainersMegabytes) {
  const RunMetrics m = parse(sample());
  const std::vector<ReportChart> charts = report_charts(m);
  for (const char* name : {"memory_rank0", "memory_per_rank", "comm"}) {
    const ReportChart* c = chart_named(charts, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_NE(c->svg.find("MB"), std::string::npos) << name;
    EXPECT_EQ(c->svg.find("MiB"), std::string::npos) << name;
  }
  const std::string html = render_report_html(m);
  EXPECT_NE(html.find("3.15 MB"), std::string::npos);  // rank 0's model states, 3,145,728 bytes
  EXPECT_EQ(html.find("MiB"), std::string::npos);
  // Tokens over the measured seconds, as the trainer's "Throughput: N tokens/s over S s".
  EXPECT_NE(html.find("1025 tokens/s over 2.0 s"), std::string::npos) << html;
}

// A run killed while writing its metrics leaves a cut last line: the report
// draws what is there and warns; a bad line before the end is still an error.
TEST(MetricsReader, TruncatedLastLineIsAWarning) {
  const std::string cut = record(1, 5.5) + "\n" + record(2, 5.0) + "\n" + record(3, 4.5).substr(0, 40);
  const RunMetrics m = parse(cut);
  EXPECT_EQ(m.steps.size(), 2u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("m.jsonl line 3"), std::string::npos) << m.warnings[0];
  EXPECT_EQ(m.warnings[0].find('\n'), std::string::npos);
  EXPECT_TRUE(parse(cut + "\n\n").warnings.size() == 1);  // trailing blank lines change nothing
  const std::string middle = error_of(record(1, 5.5) + "\n" + record(2, 5.0).substr(0, 40) + "\n" + record(3, 4.5));
  EXPECT_NE(middle.find("m.jsonl line 2: not valid JSON"), std::string::npos) << middle;
  EXPECT_TRUE(parse(sample()).warnings.empty());
}

// The trainer's first record holds the run's config, its last the final
// validation pass; neither is a step, and the final loss counts as the best.
TEST(MetricsReader, ConfigAndFinalRecordsAreNotSteps) {
  // As the trainer writes it: no evaluation at the last step, the final pass instead.
  const std::string steps = record(1, 5.5) + "\n" + record(2, 5.0, R"(,"val_loss":5.1)") + "\n" + record(3, 4.5) +
                            "\n" + record(4, 4.0) + "\n";
  const std::string text = R"({"config":{"precision":{"value":"fp16","source":"--precision"},"steps":{"value":4}}})"
                           "\n" +
                           steps +
                           R"({"final":{"step":4,"val_loss":3.9}})"
                           "\n";
  const RunMetrics m = parse(text);
  ASSERT_EQ(m.steps.size(), 4u);
  EXPECT_EQ(m.steps.front().step, 1);
  EXPECT_EQ(*m.precision, "fp16");
  ASSERT_TRUE(m.final_record.has_value());
  EXPECT_EQ(m.final_record->step, 4);
  EXPECT_DOUBLE_EQ(*m.final_record->val_loss, 3.9);
  const std::string html = render_report_html(m);
  EXPECT_NE(html.find("<th>best validation loss</th><td>3.9000"), std::string::npos) << html;
  // The final validation loss is a point of the validation curve.
  const auto val = series_element(report_charts(m)[0].svg, "validation loss");
  EXPECT_EQ(val.at("data-points"), "2");
  // A final record of the wrong shape is an error naming the line.
  EXPECT_NE(error_of(sample() + R"({"final":{"step":"four"}})").find("line 6: \"final.step\" must be an integer"),
            std::string::npos)
      << error_of(sample() + R"({"final":{"step":"four"}})");
  EXPECT_NE(error_of(R"({"config":[1]})"
                     "\n" +
                     sample())
                .find("line 1: \"config\" must be an object"),
            std::string::npos);
}

TEST(RunReport, StepsWithoutMemoryOrCommStillDraw) {
  const RunMetrics m = parse(R"({"step":1,"loss":2.0})"
                             "\n"
                             R"({"step":2,"loss":null})"
                             "\n");
  const std::vector<ReportChart> charts = report_charts(m);
  ASSERT_EQ(charts.size(), 1u);
  EXPECT_EQ(charts[0].name, "loss");
}

}  // namespace
}  // namespace zerodp::report
