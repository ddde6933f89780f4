// A user's workflow through the zerodp executable: what a run says about
// itself (step counts, metrics, the effective configuration), resumes, and
// the behaviours issue 14's trial asked for. Small runs of the default tiny
// GPT on the embedded corpus, a few steps each.
#include <fmt/format.h>

#include "cli_run.h"

namespace zerodp::cli_testing {
namespace {

const char* const kQuick = "--ranks 2 --sample-tokens 0 --held-out 0 --log-every 1";

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

TEST(Workflow, SkippedFp16StepsCountAndAreMarked) {
  // A loss scale of 2^40 overflows for the first steps: the progress line
  // used to count only applied steps and never reached 10/10.
  const fs::path config = write_temp("zerodp_workflow_fp16.json", R"({"fp16":{"enabled":true,"initial_scale_power":40}})");
  const fs::path metrics = fs::temp_directory_path() / "zerodp_workflow_fp16.jsonl";
  const Result r = run(fmt::format("train --config {} --steps 10 {} --metrics {}", config.string(), kQuick,
                                   metrics.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("step  1/10"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 10/10"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped (fp16 overflow"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of the steps were skipped"), std::string::npos) << r.out;
  int skipped = 0, steps = 0;
  for (const std::string& line : lines_of(take_file(metrics))) {
    if (line.find("\"step\":") == std::string::npos) continue;
    ++steps;
    if (line.find("\"skipped\":true") != std::string::npos) ++skipped;
  }
  EXPECT_GE(steps, 10);
  EXPECT_GT(skipped, 0);
  fs::remove(config);
}

}  // namespace
}  // namespace zerodp::cli_testing
