// SPDX-License-Identifier: Apache-2.0
// Calibrating the step-time model: the fit of a link from bench comm rows
// (by hand), the bench model reading, the hardware file's keys and the
// typed quantities, and the errors bad input gets.
#include "plan/calibration.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/build_info.h"
#include "core/error.h"
#include "plan/hardware.h"

namespace zerodp::plan {
namespace {

using comm::Collective;

CommMeasurements two_hosts() {
  CommMeasurements m{.backend = "mpi", .ranks = 2, .dtype = "bf16", .samples = {}, .codec = {}};
  m.samples = {{Collective::kAllGather, 1024, 512, 1.1e-4},        {Collective::kReduceScatter, 1024, 512, 1.2e-4},
               {Collective::kAllReduce, 1024, 512, 2.4e-4},        {Collective::kAllGather, 1 << 20, 1 << 19, 0.0105},
               {Collective::kAllGather, 4 << 20, 2 << 20, 0.0422}, {Collective::kAllGather, 16 << 20, 8 << 20, 0.168}};
  return m;
}

TEST(Calibration, FitsTheLinkByHand) {
  Hardware hw;
  const Link link = fit_link(two_hosts(), hw, "test");
  // Latency: the smallest buffer's least time per exchange step (the
  // all-gather's 110 us; the all-reduce's two steps are 120 us each).
  EXPECT_DOUBLE_EQ(link.latency_s, 1.1e-4);
  // Bandwidth from the buffers of at least a quarter of the largest (4 and
  // 16 MiB): each puts S/2 on the link.
  const double moved = (4 << 20) / 2.0 + (16 << 20) / 2.0;
  EXPECT_NEAR(link.bandwidth, moved / (0.0422 - 1.1e-4 + 0.168 - 1.1e-4), 1e-6);
  calibrate_comm(two_hosts(), hw, "test");
  EXPECT_DOUBLE_EQ(hw.link.bandwidth, link.bandwidth);
  EXPECT_FALSE(hw.local.known());
}

TEST(Calibration, OneHostCalibratesSharedMemory) {
  Hardware hw;
  hw.ranks_per_host = 2;
  calibrate_comm(two_hosts(), hw, "test");
  EXPECT_TRUE(hw.local.known());
  EXPECT_FALSE(hw.link.known());
}

// Across hosts, calls timed after idle fit the link and calls back to back
// the back-to-back link, in either order; calls back to back alone fit both.
TEST(Calibration, CallsAfterIdleAndBackToBackFitTheirOwnLinks) {
  CommMeasurements idle = two_hosts();
  idle.idle_ms = 300;
  CommMeasurements busy = two_hosts();
  for (CommSample& s : busy.samples) s.seconds *= 2;
  const double idle_rate = fit_link(idle, Hardware{}, "idle").bandwidth;
  const double busy_rate = fit_link(busy, Hardware{}, "busy").bandwidth;
  ASSERT_LT(busy_rate, idle_rate);
  for (const bool idle_first : {true, false}) {
    SCOPED_TRACE(idle_first);
    Hardware hw;
    calibrate_comm(idle_first ? idle : busy, hw, "first");
    calibrate_comm(idle_first ? busy : idle, hw, "second");
    EXPECT_DOUBLE_EQ(hw.link.bandwidth, idle_rate);
    EXPECT_EQ(hw.link.idle_ms, 300);
    EXPECT_DOUBLE_EQ(hw.link_back_to_back.bandwidth, busy_rate);
    EXPECT_EQ(hw.link_back_to_back.idle_ms, 0);
  }
  Hardware hw;
  calibrate_comm(busy, hw, "busy");
  EXPECT_DOUBLE_EQ(hw.link.bandwidth, busy_rate);
  EXPECT_DOUBLE_EQ(hw.link_back_to_back.bandwidth, busy_rate);
  // Another build's back-to-back fit is another build's link too.
  busy.build = "0123abc";
  Hardware other;
  calibrate_comm(idle, other, "idle");
  calibrate_comm(busy, other, "busy");
  EXPECT_NE(other.link_from_another_build(2).find("0123abc"), std::string::npos);
}

TEST(Calibration, CommJsonRoundTrips) {
  const CommMeasurements m = two_hosts();
  const nlohmann::json j = comm_measurements_to_json(m);
  EXPECT_EQ(j["format"], "zerodp-bench-comm");
  EXPECT_DOUBLE_EQ(j["rows"][0]["busbw_GBps"].get<double>(), 1024 / 1.1e-4 / 1e9 / 2);
  const CommMeasurements back = comm_measurements_from_json(j, "test");
  ASSERT_EQ(back.samples.size(), m.samples.size());
  EXPECT_EQ(back.ranks, 2);
  EXPECT_EQ(back.samples[4].collective, Collective::kAllGather);
  EXPECT_EQ(back.samples[4].bytes, size_t{4} << 20);
  EXPECT_DOUBLE_EQ(back.samples[4].seconds, 0.0422);
}

TEST(Calibration, RefusesWhatIsNotABenchCommRun) {
  nlohmann::json j = comm_measurements_to_json(two_hosts());
  j["format"] = "something";
  EXPECT_THROW(comm_measurements_from_json(j, "test"), InputFileError);
  j = comm_measurements_to_json(two_hosts());
  j["rows"][0]["seconds"] = -1;
  EXPECT_THROW(comm_measurements_from_json(j, "test"), InputFileError);
  j = comm_measurements_to_json(two_hosts());
  j["rows"][0]["collective"] = "all_to_all";
  EXPECT_THROW(comm_measurements_from_json(j, "test"), InputFileError);
  CommMeasurements small = two_hosts();
  small.samples.resize(3);  // one size only: no bandwidth
  EXPECT_THROW(fit_link(small, Hardware{}, "test"), InputFileError);
}

TEST(Calibration, CodecFitsPerElementAndRoundTrips) {
  CommMeasurements m = two_hosts();
  // Packing 1 ns and unpacking 3 ns per element at the large sizes; the
  // small one (below a quarter of the largest) is left out of the fit.
  m.codec = {{.quantization = comm::Quantization::kInt8,
              .bytes = 1024,
              .count = 512,
              .quantize_seconds = 1e-3,
              .dequantize_seconds = 1e-3},
             {.quantization = comm::Quantization::kInt8,
              .bytes = size_t{4} << 20,
              .count = size_t{2} << 20,
              .quantize_seconds = 2097152e-9,
              .dequantize_seconds = 3 * 2097152e-9},
             {.quantization = comm::Quantization::kInt8,
              .bytes = size_t{16} << 20,
              .count = size_t{8} << 20,
              .quantize_seconds = 8388608e-9,
              .dequantize_seconds = 3 * 8388608e-9}};
  const CommMeasurements back = comm_measurements_from_json(comm_measurements_to_json(m), "test");
  ASSERT_EQ(back.codec.size(), 3u);
  EXPECT_EQ(back.codec[1].count, size_t{2} << 20);
  const CodecCost c = fit_codec(back, comm::Quantization::kInt8, "test");
  EXPECT_NEAR(c.quantize_s, 1e-9, 1e-15);
  EXPECT_NEAR(c.dequantize_s, 3e-9, 1e-15);
  EXPECT_FALSE(fit_codec(back, comm::Quantization::kInt4, "test").known());
  Hardware hw;
  calibrate_comm(back, hw, "test");
  EXPECT_NEAR(hw.int8_codec.dequantize_s, 3e-9, 1e-15);
  EXPECT_FALSE(hw.int4_codec.known());
  EXPECT_TRUE(hw.int8_codec.measured_by.empty());  // a file without "build": taken as it is
  EXPECT_TRUE(hw.codec_from_another_build(comm::Quantization::kInt8).empty());
  // Measured by this build: used. By another: kept, named, and the runs
  // that use the codec are not predicted (step_time_format's rows).
  m.build = build_info().commit;
  Hardware same;
  calibrate_comm(comm_measurements_from_json(comm_measurements_to_json(m), "test"), same, "test");
  EXPECT_TRUE(same.codec_from_another_build(comm::Quantization::kInt8).empty());
  m.build = "0123abc";
  Hardware other;
  calibrate_comm(comm_measurements_from_json(comm_measurements_to_json(m), "test"), other, "test");
  EXPECT_EQ(other.int8_codec.measured_by, "0123abc");
  const std::string why = other.codec_from_another_build(comm::Quantization::kInt8);
  EXPECT_NE(why.find("int8 codec's cost was measured by another build (0123abc; this is " + build_info().commit),
            std::string::npos)
      << why;
  EXPECT_TRUE(other.codec_from_another_build(comm::Quantization::kNone).empty());
  // The link's fit is kept too, named as another build's: the runs across
  // it are not predicted (the same build's is used).
  EXPECT_TRUE(other.link.known());
  EXPECT_EQ(other.link.measured_by, "0123abc");
  EXPECT_TRUE(same.link.measured_by.empty());
  EXPECT_TRUE(other.link_from_another_build(1).empty());  // one rank crosses no link
  const std::string link_why = other.link_from_another_build(4);
  EXPECT_NE(link_why.find("link was fitted to another build's collectives (0123abc; this is " + build_info().commit),
            std::string::npos)
      << link_why;
  // A run without --codec has no "codec" key and calibrates none.
  EXPECT_FALSE(comm_measurements_to_json(two_hosts()).contains("codec"));
  nlohmann::json bad = comm_measurements_to_json(m);
  bad["codec"][0]["quantization"] = "int2";
  EXPECT_THROW(comm_measurements_from_json(bad, "test"), InputFileError);
}

TEST(Calibration, ReadsBenchModel) {
  const nlohmann::json j = {{"model", "m"},
                            {"num_params", 1000},
                            {"batch", 2},
                            {"seq_len", 4},
                            {"sgemm_gflops", 10.0},
                            {"train_flops_per_position", 1e8},
                            {"seconds_per_step", {{"forward", 0.1}, {"backward", 0.2}, {"adamw", 0.01}}}};
  const ModelMeasurement m = model_measurement_from_json(j, "test");
  EXPECT_DOUBLE_EQ(m.model_flops(), 1e8 * 8 / 0.3);
  Hardware hw;
  calibrate_compute(m, hw, "test");
  EXPECT_DOUBLE_EQ(hw.gemm_flops, 1e10);
  EXPECT_DOUBLE_EQ(hw.model_efficiency, 1e8 * 8 / 0.3 / 1e10);
  EXPECT_DOUBLE_EQ(hw.optimizer_s_per_param, 1e-5);
  nlohmann::json bad = j;
  bad["seconds_per_step"].erase("backward");
  EXPECT_THROW(model_measurement_from_json(bad, "test"), InputFileError);
}

TEST(Hardware, ReadsEveryKey) {
  Hardware hw;
  apply_hardware_json(nlohmann::json::parse(R"({"ranks_per_host": 2, "model_parallel": 16, "cores_per_host": 48,
      "link": {"bandwidth_GBps": 100, "latency_us": 5}, "local": {"bandwidth_GBps": 150, "latency_us": 1},
      "link_back_to_back": {"bandwidth_GBps": 50, "latency_us": 6},
      "gemm_tflops": 90, "model_efficiency": 0.5, "optimizer_ns_per_param": 0.1, "overlap_efficiency": 0.8,
      "comment": "DGX-2"})"),
                      hw, "test");
  EXPECT_EQ(hw.ranks_per_host, 2);
  EXPECT_EQ(hw.model_parallel, 16);
  EXPECT_EQ(hw.cores_per_host, 48);
  EXPECT_DOUBLE_EQ(hw.link.bandwidth, 1e11);
  EXPECT_DOUBLE_EQ(hw.link.latency_s, 5e-6);
  EXPECT_DOUBLE_EQ(hw.local.bandwidth, 1.5e11);
  EXPECT_DOUBLE_EQ(hw.link_back_to_back.bandwidth, 5e10);
  EXPECT_DOUBLE_EQ(hw.link_back_to_back.latency_s, 6e-6);
  EXPECT_DOUBLE_EQ(hw.gemm_flops, 9e13);
  EXPECT_DOUBLE_EQ(hw.compute_flops(), 4.5e13);
  EXPECT_DOUBLE_EQ(hw.optimizer_s_per_param, 1e-10);
  EXPECT_DOUBLE_EQ(hw.overlap_efficiency, 0.8);
  apply_hardware_json(nlohmann::json::parse(R"({"codec": {"int4": {"quantize_ns": 2, "dequantize_ns": 5}}})"), hw,
                      "test");
  EXPECT_DOUBLE_EQ(hw.codec(comm::Quantization::kInt4).quantize_s, 2e-9);
  EXPECT_DOUBLE_EQ(hw.codec(comm::Quantization::kInt4).dequantize_s, 5e-9);
  EXPECT_FALSE(hw.codec(comm::Quantization::kInt8).known());
  EXPECT_THROW(apply_hardware_json(nlohmann::json::parse(R"({"codec": {"int2": {}}})"), hw, "test"), InputFileError);
  EXPECT_THROW(apply_hardware_json(nlohmann::json::parse(R"({"codec": {"int8": {"pack_ns": 1}}})"), hw, "test"),
               InputFileError);
  EXPECT_THROW(apply_hardware_json(nlohmann::json::parse(R"({"link_bw": 1})"), hw, "test"), InputFileError);
  EXPECT_THROW(apply_hardware_json(nlohmann::json::parse(R"({"overlap_efficiency": 2})"), hw, "test"), InputFileError);
  EXPECT_THROW(apply_hardware_json(nlohmann::json::parse(R"({"link": {"bandwidth": 1}})"), hw, "test"), InputFileError);
  EXPECT_THROW(apply_hardware_json(nlohmann::json::parse(R"({"gemm_tflops": "fast"})"), hw, "test"), InputFileError);
}

TEST(Hardware, ParsesRatesAndTimes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("1Gbit", "x"), 1.25e8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("800Gbps", "x"), 1e11);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5GB/s", "x"), 1.25e10);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100mbit", "x"), 1.25e7);
  EXPECT_DOUBLE_EQ(parse_duration("50us", "x"), 5e-5);
  EXPECT_DOUBLE_EQ(parse_duration("1ms", "x"), 1e-3);
  EXPECT_DOUBLE_EQ(parse_flops("100T", "x"), 1e14);
  EXPECT_DOUBLE_EQ(parse_flops("3.2e13", "x"), 3.2e13);
  EXPECT_THROW(parse_bandwidth("1", "x"), ConfigError);  // no unit
  EXPECT_THROW(parse_bandwidth("fast", "x"), ConfigError);
  EXPECT_THROW(parse_duration("-5us", "x"), ConfigError);
  EXPECT_THROW(parse_flops("100Q", "x"), ConfigError);
}

}  // namespace
}  // namespace zerodp::plan
