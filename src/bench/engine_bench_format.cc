// SPDX-License-Identifier: Apache-2.0
#include "bench/engine_bench_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <sstream>

namespace zerodp::bench {

std::string format_engine_table(const EngineBenchOptions& o, std::string_view backend,
                                const std::vector<StageTiming>& timings) {
  const double tokens = static_cast<double>(o.micro_batch) * o.seq_len * o.ranks;
  std::string out;
  auto add = std::back_inserter(out);
  fmt::format_to(add, "{:>7}  {:>5}  {:>10}  {:>10}  {:>10}  {:>10}  {:>12}\n", "backend", "stage", "median ms",
                 "min ms", "max ms", "tokens/s", "vs stage 0");
  const auto base = std::find_if(timings.begin(), timings.end(), [](const StageTiming& t) { return t.stage == 0; });
  for (const StageTiming& t : timings) {
    const std::string ratio =
        base != timings.end() ? fmt::format("{:.3f}x", t.median_ms / base->median_ms) : std::string("-");
    fmt::format_to(add, "{:>7}  {:>5}  {:>10.1f}  {:>10.1f}  {:>10.1f}  {:>10.0f}  {:>12}\n", backend, t.stage,
                   t.median_ms, t.min_ms, t.max_ms, tokens / (t.median_ms / 1000.0), ratio);
  }
  return out;
}

std::string format_stage_line(const StageTiming& t) {
  return fmt::format("RESULT {} {} {} {}", t.stage, t.median_ms, t.min_ms, t.max_ms);
}

std::optional<StageTiming> parse_stage_line(const std::string& line) {
  std::istringstream in(line);
  std::string tag;
  StageTiming t;
  if (in >> tag >> t.stage >> t.median_ms >> t.min_ms >> t.max_ms && tag == "RESULT") return t;
  return std::nullopt;
}

}  // namespace zerodp::bench
