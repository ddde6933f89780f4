// SPDX-License-Identifier: Apache-2.0
// bench::run_comm_bench on thread ranks, its sizes and flags' parsing, and
// the table and baseline lines it is shown with.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "bench/comm_bench.h"
#include "bench/comm_bench_format.h"
#include "bench/comm_bench_parse.h"
#include "core/error.h"
#include "plan/calibration.h"

namespace zerodp::bench {
namespace {

using comm::Collective;

TEST(CommBench, SizesDoubleAndRoundDownToWholeElements) {
  EXPECT_EQ(comm_bench_sizes(1024, 4096, 2, Dtype::fp32()), (std::vector<size_t>{1024, 2048, 4096}));
  EXPECT_EQ(comm_bench_sizes(1024, 16384, 4, Dtype::bf16()), (std::vector<size_t>{1024, 4096, 16384}));
  // 1 and 2 bytes hold no fp32 element; 5 is rounded down to one element.
  EXPECT_EQ(comm_bench_sizes(1, 5, 2, Dtype::fp32()), (std::vector<size_t>{4}));
  EXPECT_EQ(comm_bench_sizes(5, 5, 2, Dtype::fp32()), (std::vector<size_t>{4}));
}

TEST(CommBench, ParsesSizesAndCollectives) {
  EXPECT_EQ(parse_byte_size("12", "--min-bytes"), 12u);
  EXPECT_EQ(parse_byte_size("1K", "--min-bytes"), 1024u);
  EXPECT_EQ(parse_byte_size("64MiB", "--min-bytes"), size_t{64} << 20);
  EXPECT_EQ(parse_byte_size("2g", "--max-bytes"), size_t{2} << 30);
  EXPECT_THROW(parse_byte_size("0", "--min-bytes"), ConfigError);
  EXPECT_THROW(parse_byte_size("1X", "--min-bytes"), ConfigError);
  EXPECT_THROW(parse_byte_size("K", "--min-bytes"), ConfigError);
  EXPECT_EQ(parse_bench_collective("reduce_scatter"), Collective::kReduceScatter);
  EXPECT_THROW(parse_bench_collective("barrier"), ConfigError);
}

TEST(CommBench, CodecRowsPerSizeReachPlan) {
  CommBenchOptions o;
  o.ranks = 2;
  o.dtype = Dtype::bf16();
  o.collectives = {Collective::kAllGather};
  o.sizes = comm_bench_sizes(4096, 65536, 4, o.dtype);
  o.iters = 2;
  o.codecs = {comm::Quantization::kInt8, comm::Quantization::kInt4};
  std::vector<CodecBenchRow> codec;
  const std::vector<CommBenchRow> rows = run_comm_bench(o, false, &codec);
  ASSERT_EQ(codec.size(), 2 * o.sizes.size());
  EXPECT_EQ(codec[0].quantization, comm::Quantization::kInt8);
  EXPECT_EQ(codec.back().quantization, comm::Quantization::kInt4);
  EXPECT_EQ(codec.back().count, 32768u);
  for (const CodecBenchRow& r : codec) {
    EXPECT_GT(r.quantize_seconds, 0);
    EXPECT_GT(r.dequantize_seconds, 0);
  }
  EXPECT_NE(format_codec_table(o, codec).find("pack ns/el"), std::string::npos);
  const plan::CommMeasurements m =
      plan::comm_measurements_from_json(nlohmann::json::parse(format_comm_json(o, rows, codec)), "test");
  ASSERT_EQ(m.codec.size(), codec.size());
  EXPECT_TRUE(plan::fit_codec(m, comm::Quantization::kInt4, "test").known());
}

TEST(CommBench, TwoThreadRanksGiveOneRowPerCollectiveAndSize) {
  CommBenchOptions o;
  o.ranks = 2;
  o.dtype = Dtype::fp16();
  o.collectives = {Collective::kAllReduce, Collective::kReduceScatter, Collective::kAllGather, Collective::kBroadcast};
  o.sizes = comm_bench_sizes(1024, 4096, 2, o.dtype);
  o.iters = 2;
  const std::vector<CommBenchRow> rows = run_comm_bench(o);
  ASSERT_EQ(rows.size(), 12u);
  size_t i = 0;
  for (Collective kind : o.collectives) {
    for (size_t bytes : o.sizes) {
      const CommBenchRow& r = rows[i++];
      EXPECT_EQ(r.collective, kind);
      EXPECT_EQ(r.bytes, bytes);
      EXPECT_EQ(r.count, bytes / 2);
      EXPECT_GT(r.seconds, 0);
      EXPECT_GT(r.memcpy_seconds, 0);
      EXPECT_EQ(r.mpi_seconds, 0);  // no baseline asked for
    }
  }
  const std::string table = format_comm_table(o, rows, "none");
  EXPECT_NE(table.find("# zerodp bench comm: backend thread, 2 ranks, fp16; baseline: none;"), std::string::npos);
  EXPECT_NE(table.find("\n# broadcast\n"), std::string::npos);
  EXPECT_TRUE(std::regex_search(table, std::regex("\n +4KiB +2048 +fp16 +[0-9.]+ +[0-9.]+ +[0-9.]+ +- +- ")));

  // --json: what plan --calibrate-comm reads, row for row.
  const plan::CommMeasurements m =
      plan::comm_measurements_from_json(nlohmann::json::parse(format_comm_json(o, rows)), "test");
  EXPECT_EQ(m.backend, "thread");
  EXPECT_EQ(m.ranks, 2);
  EXPECT_EQ(m.dtype, "fp16");
  ASSERT_EQ(m.samples.size(), rows.size());
  for (size_t k = 0; k < rows.size(); ++k) {
    EXPECT_EQ(m.samples[k].collective, rows[k].collective);
    EXPECT_EQ(m.samples[k].bytes, rows[k].bytes);
    EXPECT_EQ(m.samples[k].count, rows[k].count);
    EXPECT_DOUBLE_EQ(m.samples[k].seconds, rows[k].seconds);
  }
}

TEST(CommBench, BaselineLinesRoundTripAndMergeIntoTheTable) {
  const CommBaselineRow row{Collective::kAllGather, 4096, 1024, 1.25e-5};
  const std::string line = format_baseline_line(row);
  EXPECT_EQ(line, "zerodp-baseline all_gather 4096 1024 1.250000000e-05");
  const auto parsed = parse_baseline_line(line + "\n");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->collective, Collective::kAllGather);
  EXPECT_EQ(parsed->bytes, 4096u);
  EXPECT_EQ(parsed->count, 1024u);
  EXPECT_DOUBLE_EQ(parsed->seconds, 1.25e-5);
  EXPECT_FALSE(parse_baseline_line("[mpirun] some warning").has_value());

  CommBenchOptions o;
  o.collectives = {Collective::kAllGather};
  o.sizes = {4096};
  std::vector<CommBenchRow> rows{{Collective::kAllGather, 4096, 1024, 1e-5, 1e-6, 0, 0}};
  merge_baseline(rows, {*parsed});
  EXPECT_EQ(rows[0].mpi_seconds, 1.25e-5);
  EXPECT_EQ(rows[0].mpi_count, 1024u);
  // busbw 4096 B / 1e-5 s * 1/2 = 0.2048 GB/s; OpenMPI's 0.16384 GB/s: 1.25x.
  const std::string table = format_comm_table(o, rows, "OpenMPI");
  EXPECT_NE(table.find("      4KiB        1024  fp32        10.0    0.410    0.205      0.164    1.25x"),
            std::string::npos)
      << table;
}

}  // namespace
}  // namespace zerodp::bench
