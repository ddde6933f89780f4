// SPDX-License-Identifier: Apache-2.0
// The pipeline's settings (zero/pipeline.h): how many stages, which
// schedule, where the model is cut.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <string>
#include <vector>

#include "core/error.h"
#include "plan/pipeline.h"
#include "train/settings_rows.h"

namespace zerodp::train::rows {
namespace {

bool pipelined(const TrainConfig& c) { return c.pipeline_stages > 1; }

// "9,3": blocks per stage.
std::vector<int> parse_cut(const std::string& text) {
  std::vector<int> blocks;
  if (text.empty()) return blocks;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    int v = 0;
    const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, v);
    ZDP_CHECK(ec == std::errc() && end == text.data() + comma && v >= 1, ConfigError,
              "[train] --pipeline-cut '{}': give the blocks of each stage as positive numbers separated by commas, "
              "e.g. 9,3",
              text);
    blocks.push_back(v);
    at = comma + 1;
  }
  return blocks;
}

}  // namespace

void add_pipeline_rows(std::vector<SettingRow>& out) {
  out.push_back(engine<int>(
      "pipeline-stages",
      {.spelling = "--pipeline-stages",
       .help = "Pipeline parallelism: cut the model into P consecutive stages on P groups of N/P ranks\n"
               "(rank = stage x N/P + replica); each stage's units are partitioned among its N/P replicas\n"
               "at --stage 0 or 1, and the residual stream and its gradient cross between stages. The\n"
               "same bits as data parallelism with the same global batch (docs/pipeline.md). GPT models.\n"
               "DeepSpeed: pipeline.stages",
       .count = true,
       .ds = {.path = "pipeline.stages", .direct = true}},
      [](const TrainConfig& c) { return c.pipeline_stages; }, [](TrainConfig& c, int v) { c.pipeline_stages = v; },
      when(pipelined)));
  out.push_back(engine<std::string>(
      "pipeline-schedule",
      {.spelling = "--pipeline-schedule",
       .help = "The pipeline's schedule: 1f1b (min(P - s, M) micro-batches in flight at stage s) or\n"
               "gpipe (all M forwards, then the backwards); M is --grad-accum"},
      [](const TrainConfig& c) { return std::string(pipeline_schedule_name(c.pipeline_schedule)); },
      [](TrainConfig& c, const std::string& v) { c.pipeline_schedule = parse_pipeline_schedule(v); }, when(pipelined)));
  out.push_back(engine<std::string>(
      "pipeline-cut",
      {.spelling = "--pipeline-cut",
       .help = "Blocks per pipeline stage, P numbers separated by commas summing to the model's blocks\n"
               "(e.g. 9,3); the first stage also holds the embedding, the last the final norm and the head.\n"
               "Default: balanced as --pipeline-balance says (zerodp plan --pipeline-stages prints the cut)",
       .show_default = false},
      [](const TrainConfig& c) { return fmt::format("{}", fmt::join(c.pipeline_cut, ",")); },
      [](TrainConfig& c, const std::string& v) { c.pipeline_cut = parse_cut(v); },
      when([](const TrainConfig& c) { return !c.pipeline_cut.empty(); })));
  out.push_back(engine<std::string>(
      "pipeline-balance",
      {.spelling = "--pipeline-balance",
       .help = "What the default cut balances: flops (each stage's time) or memory (each stage's peak per\n"
               "rank, its activations counted once per micro-batch in flight: under 1F1B the first stages\n"
               "hold more of them)"},
      [](const TrainConfig& c) { return c.pipeline_balance; },
      [](TrainConfig& c, const std::string& v) {
        c.pipeline_balance = std::string(plan::pipeline_balance_name(plan::parse_pipeline_balance(v)));
      },
      when(pipelined)));
}

}  // namespace zerodp::train::rows
