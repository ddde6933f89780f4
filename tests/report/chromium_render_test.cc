// SPDX-License-Identifier: Apache-2.0
// Renders zerodp's charts in headless Chromium (Debian's `chromium`) and
// checks the screenshots are not blank: the plan figure as a bare SVG and a
// run report as its HTML page. A white page is screenshotted too, as the
// control that shows the pixel check can fail. Without Chromium this test
// FAILS (it is how we know the charts display in a real browser); set
// ZERODP_CHROMIUM to use another binary.
#include <gtest/gtest.h>
#include <png.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "plan/planner.h"
#include "report/metrics_reader.h"
#include "report/plan_chart.h"
#include "report/run_report.h"

namespace zerodp::report {
namespace {

namespace fs = std::filesystem;

std::string find_chromium() {
  if (const char* env = std::getenv("ZERODP_CHROMIUM"); env != nullptr && *env != '\0') return env;
  std::vector<fs::path> dirs = {"/usr/bin", "/usr/local/bin"};
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      if (!dir.empty()) dirs.emplace_back(dir);
    }
  }
  for (const fs::path& d : dirs) {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      std::error_code ec;
      if (fs::is_regular_file(d / name, ec)) return (d / name).string();
    }
  }
  return "";
}

struct PixelStats {
  uint32_t width = 0, height = 0;
  double non_white = 0;  // fraction of pixels darker than near-white
  double colored = 0;    // fraction of saturated pixels (bars, curves)
};

PixelStats read_png(const fs::path& path) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_file(&image, path.c_str()) == 0) {
    ADD_FAILURE() << "cannot read " << path << ": " << image.message;
    return {};
  }
  image.format = PNG_FORMAT_RGB;
  std::vector<png_byte> pixels(PNG_IMAGE_SIZE(image));
  if (png_image_finish_read(&image, nullptr, pixels.data(), 0, nullptr) == 0) {
    ADD_FAILURE() << "cannot decode " << path << ": " << image.message;
    return {};
  }
  PixelStats s;
  s.width = image.width;
  s.height = image.height;
  size_t dark = 0, colored = 0;
  const size_t n = static_cast<size_t>(image.width) * image.height;
  for (size_t i = 0; i < n; ++i) {
    const int r = pixels[3 * i], g = pixels[3 * i + 1], b = pixels[3 * i + 2];
    dark += (r < 235 || g < 235 || b < 235) ? 1 : 0;
    colored += (std::max({r, g, b}) - std::min({r, g, b}) > 60) ? 1 : 0;
  }
  s.non_white = static_cast<double>(dark) / static_cast<double>(n);
  s.colored = static_cast<double>(colored) / static_cast<double>(n);
  return s;
}

class ChromiumRender : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = find_chromium();
    dir_ = fs::temp_directory_path() / ("zerodp_chromium_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Screenshots `page` (a file in dir_) at width x height.
  PixelStats shoot(const std::string& page, int width, int height) {
    EXPECT_FALSE(chromium_.empty()) << "headless Chromium is needed to check that charts display: apt-get install "
                                       "chromium (or set ZERODP_CHROMIUM)";
    if (chromium_.empty()) return {};
    const fs::path png = dir_ / (page + ".png");
    const fs::path log = dir_ / (page + ".log");
    // Root-safe and display-free: no sandbox, no GPU, a throwaway profile.
    const std::string cmd = "timeout 60 '" + chromium_ +
                            "' --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars "
                            "--no-first-run --no-default-browser-check --user-data-dir='" +
                            (dir_ / "profile").string() + "' --window-size=" + std::to_string(width) + "," +
                            std::to_string(height) + " --screenshot='" + png.string() + "' 'file://" +
                            (dir_ / page).string() + "' >'" + log.string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    std::error_code ec;
    if (rc != 0 || !fs::is_regular_file(png, ec)) {
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      ADD_FAILURE() << "chromium failed (exit " << rc << "):\n" << cmd << "\n" << text.str();
      return {};
    }
    return read_png(png);
  }

  void write(const std::string& name, const std::string& text) {
    std::ofstream out(dir_ / name);
    out << text;
  }

  std::string chromium_;
  fs::path dir_;
};

RunMetrics sample_run() {
  std::ostringstream lines;
  for (int step = 1; step <= 30; ++step) {
    lines << R"({"step":)" << step << R"(,"loss":)" << 5.0 - 0.1 * step
          << (step % 10 == 0 ? R"(,"val_loss":)" + std::to_string(5.1 - 0.1 * step) : std::string())
          << R"(,"lr":0.001,"loss_scale":)" << (step < 15 ? 65536 : 32768) << R"(,"tokens_per_s":)" << 900 + step
          << R"(,"grad_norm":1.0,"memory":[{"params":{"current":1048576,"peak":1048576},"grads":{"current":524288,)"
          << R"("peak":524288},"activations":{"current":4194304,"peak":4194304}},{"params":{"current":1048576,)"
          << R"("peak":1048576},"grads":{"current":524288,"peak":524288},"activations":{"current":4194304,)"
          << R"("peak":4194304}}],"comm":[{"reduce_scatter":{"calls":6,"bytes_sent":524288,"bytes_received":524288}},)"
          << R"({"reduce_scatter":{"calls":6,"bytes_sent":524288,"bytes_received":524288}}]})"
          << "\n";
  }
  std::istringstream in(lines.str());
  return parse_metrics(in, "sample.jsonl");
}

TEST_F(ChromiumRender, PlanChartIsNotBlank) {
  plan::PlanConfig c;
  c.num_params = 7'500'000'000;
  c.ranks = {1, 4, 16, 64};
  c.device_memory = 32'000'000'000;
  write("plan.svg", render_plan_chart(plan::make_plan(c)));
  const PixelStats s = shoot("plan.svg", 1200, 700);
  EXPECT_EQ(s.width, 1200u);
  EXPECT_GT(s.non_white, 0.03) << "the plan chart rendered (almost) white";
  EXPECT_GT(s.colored, 0.02) << "no coloured bars in the plan chart";
}

TEST_F(ChromiumRender, RunReportIsNotBlank) {
  write("report.html", render_report_html(sample_run()));
  const PixelStats s = shoot("report.html", 1000, 1600);
  EXPECT_EQ(s.width, 1000u);
  EXPECT_GT(s.non_white, 0.01) << "the report rendered (almost) white";
  EXPECT_GT(s.colored, 0.002) << "no coloured curves in the report";
}

TEST_F(ChromiumRender, AWhitePageIsSeenAsBlank) {
  write("white.html", "<!DOCTYPE html><html><body style=\"background:#fff\"></body></html>");
  const PixelStats s = shoot("white.html", 400, 300);
  EXPECT_EQ(s.width, 400u);
  EXPECT_LT(s.non_white, 0.001);
  EXPECT_EQ(s.colored, 0.0);
}

}  // namespace
}  // namespace zerodp::report
