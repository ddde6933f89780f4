// SPDX-License-Identifier: Apache-2.0
// bench::run_engine_bench on thread ranks, its checks, and the table and
// result lines it is shown with.
#include <gtest/gtest.h>

#include "bench/engine_bench.h"
#include "bench/engine_bench_format.h"
#include "core/error.h"

namespace zerodp::bench {
namespace {

EngineBenchOptions tiny() {
  EngineBenchOptions o;
  o.model = "gpt-tiny";
  o.ranks = 2;
  o.precision = Dtype::fp32();
  o.micro_batch = 1;
  o.seq_len = 8;
  o.steps = 2;
  return o;
}

TEST(EngineBench, TimesEachStageOnceInStageOrder) {
  EngineBenchOptions o = tiny();
  o.stages = {3, 0, 3};
  const std::vector<StageTiming> timings = run_engine_bench(o, comm::Backend::kThread);
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_EQ(timings[0].stage, 0);
  EXPECT_EQ(timings[1].stage, 3);
  for (const StageTiming& t : timings) {
    EXPECT_GT(t.min_ms, 0);
    EXPECT_LE(t.min_ms, t.median_ms);
    EXPECT_LE(t.median_ms, t.max_ms);
  }
  const std::string table = format_engine_table(o, "thread", timings);
  EXPECT_EQ(table.rfind("backend  stage   median ms", 0), 0u) << table;
  EXPECT_NE(table.find(" thread      0 "), std::string::npos) << table;
  EXPECT_NE(table.find("1.000x\n"), std::string::npos) << table;
}

TEST(EngineBench, RefusesBadOptions) {
  EngineBenchOptions o = tiny();
  o.stages = {4};
  EXPECT_THROW(check_engine_bench_options(o), ConfigError);
  o = tiny();
  o.steps = 0;
  EXPECT_THROW(run_engine_bench(o, comm::Backend::kThread), ConfigError);
  o = tiny();
  o.model = "mlp-small";
  EXPECT_THROW(run_engine_bench(o, comm::Backend::kThread), ConfigError);
}

TEST(EngineBench, ResultLinesRoundTripAndTableWithoutStageZero) {
  const StageTiming t{2, 12.5, 10.5, 20};
  EXPECT_EQ(format_stage_line(t), "RESULT 2 12.5 10.5 20");
  const auto parsed = parse_stage_line(format_stage_line(t));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->stage, 2);
  EXPECT_EQ(parsed->median_ms, 12.5);
  EXPECT_EQ(parsed->min_ms, 10.5);
  EXPECT_EQ(parsed->max_ms, 20);
  EXPECT_FALSE(parse_stage_line("bench engine: gpt-tiny on 2 ranks").has_value());

  // 1 x 8 tokens per rank, 2 ranks: 16 tokens in 12.5 ms = 1280 tokens/s.
  const std::string table = format_engine_table(tiny(), "mpi", {t});
  EXPECT_NE(table.find("    mpi      2        12.5        10.5        20.0        1280             -\n"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace zerodp::bench
