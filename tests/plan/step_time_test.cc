// SPDX-License-Identifier: Apache-2.0
// The step-time model's arithmetic against hand-computed values: the
// alpha-beta cost of each collective, the engine's schedule of a tiny GPT at
// stages 0, 2 and 3 (every event worked out by hand in the comments), and
// overlap efficiency's interpolation.
#include "plan/step_time.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/collective_cost.h"
#include "plan/engine_memory.h"
#include "plan/step_time_format.h"

namespace zerodp::plan {
namespace {

// 1 MB/s each way, no latency, one rank per host: an exchange of S bytes
// over 2 ranks takes S/2 microseconds.
Hardware slow_link() {
  Hardware hw;
  hw.link = {.latency_s = 0, .bandwidth = 1e6, .source = "test"};
  hw.gemm_flops = 1e6;
  hw.optimizer_s_per_param = 1e-6;
  return hw;
}

// L 1, C 4, V 8, T 2: units embedding 8*4 + 2*4 = 40, block 12*16 + 13*4 =
// 244, final layernorm 8 (Φ 292; flat offsets 0, 40, 284).
GptShape tiny() { return {.layers = 1, .heads = 1, .channels = 4, .vocab = 8, .context = 2}; }

StepTimeRun tiny_run(Stage stage) {
  return {.stage = stage, .ranks = 2, .dtype = Dtype::fp32(), .micro_batch = 1, .seq_len = 2};
}

TEST(CollectiveCost, FlatLayoutOneRankPerHost) {
  Hardware hw = slow_link();
  hw.link.latency_s = 1e-4;
  hw.link.bandwidth = 1e8;
  // N = 2: each rank sends S/2 over the link, one exchange (two for all-reduce).
  EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::kReduceScatter, 1e6, 2, hw), 1e-4 + 5e5 / 1e8);
  EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::kAllGather, 1e6, 2, hw), 1e-4 + 5e5 / 1e8);
  EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::kAllReduce, 1e6, 2, hw), 2 * (1e-4 + 5e5 / 1e8));
  EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::kAllGather, 1e6, 1, hw), 0);
  EXPECT_DOUBLE_EQ(sent_bytes(CollectiveOp::kAllReduce, 1e6, 4), 1.5e6);
}

TEST(CollectiveCost, RanksSharingAHostShareItsLink) {
  Hardware hw = slow_link();
  hw.ranks_per_host = 2;
  hw.link = {.latency_s = 1e-4, .bandwidth = 1e8, .source = ""};
  hw.local = {.latency_s = 1e-6, .bandwidth = 1e9, .source = ""};
  // N = 4, 2 per host: the link carries 2 ranks x 2 remote peers x S/4 = S
  // each way; shared memory 1 x S/4 per rank, in parallel (the smaller).
  EXPECT_DOUBLE_EQ(link_bytes_per_exchange(1e6, 4, hw), 1e6);
  EXPECT_DOUBLE_EQ(local_bytes_per_exchange(1e6, 4, hw), 2.5e5);
  EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::kAllGather, 1e6, 4, hw), 1e-4 + 1e6 / 1e8);
  // All 4 on one host: shared memory alone, 3 x S/4 per rank.
  hw.ranks_per_host = 4;
  EXPECT_DOUBLE_EQ(collective_seconds(CollectiveOp::kAllGather, 1e6, 4, hw), 1e-6 + 7.5e5 / 1e9);
}

TEST(CollectiveCost, ModelParallelGpusShareTheHostLink) {
  Hardware hw = slow_link();
  hw.model_parallel = 16;
  // 25 data-parallel ranks, one per host; 16 GPUs per host each exchange
  // their slice's S/25 with 24 remote peers.
  EXPECT_DOUBLE_EQ(link_bytes_per_exchange(25e6, 25, hw), 16.0 * 24 * 1e6);
}

TEST(StepTime, Stage2OnTwoRanksByHand) {
  const StepTime t = predict_step_time(tiny(), tiny_run(Stage::k2), slow_link());
  // Compute: 2 tokens x (block 72*16 + 12*2*4 = 1248, head 6*8*4 = 192)
  // = 2880 FLOPs at 1 MFLOP/s.
  EXPECT_NEAR(t.compute_s, 2.88e-3, 1e-12);
  // Optimizer on the owned shards: 20 + 122 + 4 = 146 elements at 1 us.
  EXPECT_NEAR(t.optimizer_s, 1.46e-4, 1e-12);
  // Reduce-scatter and all-gather of every unit: 292 x 4 B / 2 us each, and
  // three 16-byte collectives (losses, overflow, norm) of 8 us.
  EXPECT_NEAR(t.comm_s, 2 * 5.84e-4 + 3 * 8e-6, 1e-12);
  EXPECT_NEAR(t.serial_s, 2.88e-3 + 1.46e-4 + 1.192e-3, 1e-12);
  // The schedule: forward 0.96 ms; the head's input gradient to 1.088 ms
  // (its weight gradient, 128 us, runs at the embedding's backward); the
  // final layernorm's reduce-scatter (16 us) runs during the block's
  // backward (to 2.752 ms); the block's (488 us, to 3.24 ms) beside the
  // head's weight gradient (to 2.88 ms), then the embedding's (80 us), to
  // 3.32 ms; then the small collectives, the optimizer and the all-gathers:
  // 3.32 + 0.024 + 0.146 + 0.584 = 4.074 ms.
  EXPECT_NEAR(t.scheduled_s, 4.074e-3, 1e-12);
  EXPECT_NEAR(t.step_s, 4.074e-3, 1e-12);
  // Those two reduce-scatters beside compute: 16 + 128 us.
  EXPECT_NEAR(t.overlapped_compute_s, 1.44e-4, 1e-12);
  EXPECT_NEAR(t.hidden_fraction(), 1.44e-4 / t.comm_s, 1e-9);
  EXPECT_NEAR(t.sent_bytes, 2 * 584 + 3 * 8, 1e-9);
  EXPECT_EQ(t.collectives, 3 + 3 + 3);
  // The terms plan --predict prints: each kind of collective apart, adding
  // up to comm_s; the step is serial less what the schedule hides.
  EXPECT_NEAR(t.comm_terms.reduce_scatter_s, 5.84e-4, 1e-12);
  EXPECT_NEAR(t.comm_terms.all_gather_s, 5.84e-4, 1e-12);
  EXPECT_NEAR(t.comm_terms.small_s, 3 * 8e-6, 1e-12);
  EXPECT_EQ(t.comm_terms.all_reduce_s, 0.0);
  EXPECT_EQ(t.comm_terms.codec_s, 0.0);
  EXPECT_NEAR(t.comm_terms.total(), t.comm_s, 1e-15);
  EXPECT_NEAR(t.compute_s + t.optimizer_s + t.comm_terms.total() - t.hidden_s(), t.step_s, 1e-15);
}

// A collective that starts as the rank's previous one ends, with no compute
// between, is timed on the back-to-back link (here half the rate); one
// that follows compute on the link after idle. Stage 2 of
// Stage2OnTwoRanksByHand with both.
TEST(StepTime, CollectivesBackToBackUseTheirOwnLink) {
  Hardware hw = slow_link();
  hw.link_back_to_back = {.latency_s = 0, .bandwidth = 5e5, .source = "test"};
  const StepTime t = predict_step_time(tiny(), tiny_run(Stage::k2), hw);
  // Reduce-scatters: the final layernorm's (16 us) after the head's input
  // gradient and the block's (488 us) after its own backward: after
  // compute; the embedding's waits behind the block's on the comm thread
  // and follows it at once: 160 us. The three small ones follow it: 16 us
  // each. After the optimizer, the embedding's all-gather (80 us) follows
  // compute, the block's and the final layernorm's follow it: 976 and 32
  // us.
  EXPECT_NEAR(t.comm_terms.reduce_scatter_s, (16 + 488 + 160) * 1e-6, 1e-12);
  EXPECT_NEAR(t.comm_terms.small_s, 3 * 16e-6, 1e-12);
  EXPECT_NEAR(t.comm_terms.all_gather_s, (80 + 976 + 32) * 1e-6, 1e-12);
  EXPECT_NEAR(t.comm_s, 1.8e-3, 1e-12);
  // Overlapped: the embedding's reduce-scatter starts at 3.24 ms as the
  // block's ends, to 3.4; + 48 us small + 146 us optimizer + 1088 us of
  // all-gathers = 4.682 ms. Serial: each collective after the compute
  // before it: the block's reduce-scatter 2.768-3.256 ms, the head's weight
  // gradient to 3.384, the embedding's reduce-scatter after it on the idle
  // link (80 us), then 48 + 146 + 1088 us: 4.746 ms.
  EXPECT_NEAR(t.scheduled_s, 4.682e-3, 1e-12);
  EXPECT_NEAR(t.serial_s, 4.746e-3, 1e-12);
  // Without a back-to-back link every call takes the link.
  hw.link_back_to_back = {};
  EXPECT_NEAR(predict_step_time(tiny(), tiny_run(Stage::k2), hw).scheduled_s, 4.074e-3, 1e-12);
}

TEST(StepTime, Stage0OneBucketHidesNothing) {
  const StepTime t = predict_step_time(tiny(), tiny_run(Stage::k0), slow_link());
  // One bucket of all 292 elements, all-reduced after backward: 2 x 584 us.
  EXPECT_NEAR(t.comm_s, 1.168e-3 + 2.4e-5, 1e-12);
  EXPECT_NEAR(t.optimizer_s, 2.92e-4, 1e-12);  // every element
  EXPECT_NEAR(t.serial_s, 2.88e-3 + 2.92e-4 + 1.192e-3, 1e-12);
  EXPECT_NEAR(t.scheduled_s, t.serial_s, 1e-12);
  EXPECT_EQ(t.overlapped_compute_s, 0.0);  // the compute thread waits for it
  EXPECT_EQ(t.collectives, 1 + 3);
  EXPECT_NEAR(t.comm_terms.all_reduce_s, 1.168e-3, 1e-12);  // all of it but the small ones
  EXPECT_EQ(t.comm_terms.reduce_scatter_s + t.comm_terms.all_gather_s, 0.0);
  EXPECT_NEAR(t.comm_terms.total(), t.comm_s, 1e-15);
  EXPECT_EQ(t.hidden_s(), 0.0);
}

TEST(StepTime, Stage3PrefetchByHand) {
  const StepTime t = predict_step_time(tiny(), tiny_run(Stage::k3), slow_link());
  // Gathers: embedding 80 us, block 488 us, final layernorm 16 us; ops
  // embedding, block, final, head (the embedding again). Forward keeps the
  // embedding's gather for the head (the region of two blocks holds it
  // beside the block and the final layernorm); backward keeps the head's
  // and gathers nothing for the embedding, which reads no weights: final
  // and block only.
  EXPECT_NEAR(t.comm_s, (80 + 488 + 16) * 1e-6 + (16 + 488) * 1e-6 + 584e-6 + 24e-6, 1e-12);
  EXPECT_NEAR(t.serial_s, 2.88e-3 + 1.46e-4 + 1.696e-3, 1e-12);
  // Forward: gather 0 (to 80 us) and prefetch 1 (to 568 us); the block runs
  // 568..1400 us while 2 is gathered (to 584); the head's unit is still
  // there, so the head runs at once, to 1528 us. Backward: the head's input
  // gradient runs to 1656 us while 2 is prefetched (1528..1544); op 2
  // prefetches 1 (1656..2144) and reduces unit 2 (2144..2160); the block
  // runs 2144..3808 us; unit 1's reduce-scatter 3808..4296 beside the
  // embedding's backward (no gather; the head's weight gradient, to 3936),
  // unit 0's to 4376; then 24 us of small collectives and 146 us of
  // optimizer: 4546 us.
  EXPECT_NEAR(t.scheduled_s, 4.546e-3, 1e-12);
  // (3Φ - embedding) x 4 B x (N-1)/N (forward's Φ, backward's Φ - embedding,
  // the reduce-scatter's Φ), and the small ones.
  EXPECT_NEAR(t.sent_bytes, (3 * 292 - 40) * 4 / 2.0 + 24, 1e-9);
}

TEST(StepTime, OverlapEfficiencyInterpolates) {
  Hardware hw = slow_link();
  hw.overlap_efficiency = 0.25;
  const StepTime t = predict_step_time(tiny(), tiny_run(Stage::k3), hw);
  EXPECT_NEAR(t.step_s, 4.722e-3 - 0.25 * (4.722e-3 - 4.546e-3), 1e-12);
  hw.overlap_efficiency = 0;
  EXPECT_NEAR(predict_step_time(tiny(), tiny_run(Stage::k3), hw).step_s, 4.722e-3, 1e-12);
}

TEST(StepTime, ModelParallelDividesComputeAndBytes) {
  Hardware hw = slow_link();
  const StepTime one = predict_step_time(tiny(), tiny_run(Stage::k2), hw);
  hw.model_parallel = 2;
  hw.link.bandwidth *= 2;  // two GPUs share the host's link
  const StepTime two = predict_step_time(tiny(), tiny_run(Stage::k2), hw);
  EXPECT_NEAR(two.compute_s, one.compute_s / 2, 1e-12);
  EXPECT_NEAR(two.flops, one.flops / 2, 1e-9);
}

TEST(StepTime, RefusesAMachineWithoutTheLinkItNeeds) {
  Hardware hw = slow_link();
  hw.link = {};
  EXPECT_THROW(predict_step_time(tiny(), tiny_run(Stage::k0), hw), ConfigError);
  hw = slow_link();
  hw.ranks_per_host = 2;  // both ranks on one host: shared memory needed
  EXPECT_THROW(predict_step_time(tiny(), tiny_run(Stage::k0), hw), ConfigError);
  hw = slow_link();
  hw.gemm_flops = 0;
  EXPECT_THROW(predict_step_time(tiny(), tiny_run(Stage::k0), hw), ConfigError);
  StepTimeRun run = tiny_run(Stage::k0);
  run.micro_batch = 0;
  EXPECT_THROW(predict_step_time(tiny(), run, slow_link()), ConfigError);
}

// --offload-optimizer: the step's reads and writes (the plan's, from the
// engine's passes) at the disk's rates, the host's ranks sharing it, in
// place of the optimizer when longer; no disk rates is a ConfigError.
TEST(StepTime, OffloadAddsTheDisksTimeWhereItExceedsTheOptimizers) {
  Hardware hw = slow_link();
  StepTimeRun run = tiny_run(Stage::k3);
  run.dtype = Dtype::bf16();
  run.offload_optimizer = true;
  EXPECT_THROW(predict_step_time(tiny(), run, hw), ConfigError);
  hw.disk = {.read_Bps = 1e6, .write_Bps = 5e5, .source = "test"};
  EngineRun engine{run.stage, run.ranks, run.dtype, run.optimizer, run.grad_accum, run.prefetch, run.bucket_elements};
  engine.offload_optimizer = true;
  const RankPrediction p = predict_engine_rank(gpt_unit_schedule(tiny()), engine, 0, 0);
  ASSERT_GT(p.disk, 0u);
  const double one_rank = static_cast<double>(p.disk_read_per_step) / 1e6 + p.disk_written_per_step / 5e5;
  StepTimeRun in_ram = run;
  in_ram.offload_optimizer = false;
  const StepTime without = predict_step_time(tiny(), in_ram, hw);
  StepTime t = predict_step_time(tiny(), run, hw);
  EXPECT_DOUBLE_EQ(t.disk_s, one_rank);  // one rank per host
  EXPECT_GT(t.disk_s, t.optimizer_s);
  EXPECT_NEAR(t.serial_s, without.serial_s - without.optimizer_s + t.disk_s, 1e-12);
  hw.ranks_per_host = 2;  // both ranks stream through one disk
  hw.local = {.latency_s = 0, .bandwidth = 1e6, .source = "test"};
  EXPECT_DOUBLE_EQ(predict_step_time(tiny(), run, hw).disk_s, 2 * one_rank);
  hw.disk = {.read_Bps = 1e15, .write_Bps = 1e15, .source = "test"};  // a disk faster than the arithmetic
  t = predict_step_time(tiny(), run, hw);
  EXPECT_LT(t.disk_s, t.optimizer_s);
  in_ram.offload_optimizer = false;
  EXPECT_NEAR(t.serial_s, predict_step_time(tiny(), in_ram, hw).serial_s, 1e-12);
}

// --offload-params: each gather reads its unit's shard (as the parameter
// file rounds it) in its comm-thread task, at the host's disk shared by its
// ranks, and the step writes every shard after the optimizer; stage 3 only.
TEST(StepTime, OffloadParamsReadsInTheGathersAndWritesAfterTheOptimizer) {
  Hardware hw = slow_link();
  StepTimeRun run = tiny_run(Stage::k3);
  run.dtype = Dtype::bf16();
  run.offload_params = true;
  EXPECT_THROW(predict_step_time(tiny(), run, hw), ConfigError) << "no disk rates";
  hw.disk = {.read_Bps = 1e6, .write_Bps = 5e5, .source = "test"};
  EngineRun engine{run.stage, run.ranks, run.dtype, run.optimizer, run.grad_accum, run.prefetch, run.bucket_elements};
  engine.offload_params = true;
  const RankPrediction p = predict_engine_rank(gpt_unit_schedule(tiny()), engine, 0, 0);
  ASSERT_GT(p.param_disk_read_per_step, p.param_disk);
  StepTimeRun in_ram = run;
  in_ram.offload_params = false;
  const StepTime without = predict_step_time(tiny(), in_ram, hw);
  const StepTime t = predict_step_time(tiny(), run, hw);
  EXPECT_DOUBLE_EQ(t.comm_terms.param_read_s, static_cast<double>(p.param_disk_read_per_step) / 1e6);
  EXPECT_DOUBLE_EQ(t.param_write_s, static_cast<double>(p.param_disk_written_per_step) / 5e5);
  EXPECT_DOUBLE_EQ(t.disk_s, 0.0);
  EXPECT_NEAR(t.comm_s, without.comm_s + t.comm_terms.param_read_s, 1e-12);
  EXPECT_NEAR(t.serial_s, without.serial_s + t.param_write_s + t.comm_terms.param_read_s, 1e-12);
  EXPECT_GE(t.step_s, without.step_s + t.param_write_s);
  StepTimeRun stage2 = run;
  stage2.stage = Stage::k2;
  EXPECT_THROW(predict_step_time(tiny(), stage2, hw), ConfigError);
  // With the states offloaded too, the shards' writes join the passes on the one disk.
  run.offload_optimizer = true;
  const StepTime both = predict_step_time(tiny(), run, hw);
  EXPECT_DOUBLE_EQ(both.optimizer_phase_s(), std::max(both.optimizer_s, both.disk_s + both.param_write_s));
  EXPECT_GT(both.disk_s, 0.0);
}

// More ranks on a host than its cores: the model's one core per rank does
// not hold, so those rows say why instead of giving a time (text and JSON);
// the runs that fit are predicted as before.
TEST(StepTime, OversubscribedHostsAreNotPredicted) {
  Hardware hw = slow_link();
  hw.ranks_per_host = 4;
  hw.local = {.latency_s = 0, .bandwidth = 1e9, .source = "test"};
  hw.cores_per_host = 2;
  const StepTimePrediction p = predict_step_times(tiny(), "tiny", tiny_run(Stage::k0), {2, 4}, hw);
  ASSERT_EQ(p.rows.size(), 8u);
  for (const StepTimeRow& row : p.rows) {
    SCOPED_TRACE(row.run.ranks);
    EXPECT_EQ(row.not_predicted.empty(), row.run.ranks == 2);
    if (row.run.ranks == 2) {
      EXPECT_GT(row.time.step_s, 0.0);
    }
  }
  EXPECT_NE(p.rows.back().not_predicted.find("4 ranks on a host of 2 cores"), std::string::npos);
  const std::string text = format_step_time_text(p);
  EXPECT_NE(text.find("3     not predicted: 4 ranks on a host of 2 cores"), std::string::npos) << text;
  const nlohmann::json j = step_time_to_json(p);
  EXPECT_TRUE(j["rows"][0].contains("step_s"));
  EXPECT_FALSE(j["rows"][7].contains("step_s"));
  EXPECT_EQ(j["rows"][7]["not_predicted"], p.rows.back().not_predicted);
  // A codec measured by another build: the quantized stages' rows are not
  // predicted, the others are.
  hw.cores_per_host = 0;
  hw.int8_codec = {.quantize_s = 1e-9, .dequantize_s = 1e-9, .source = "test", .measured_by = "0123abc"};
  StepTimeRun quantized = tiny_run(Stage::k0);
  quantized.quantize_grads = comm::Quantization::kInt8;
  const StepTimePrediction q = predict_step_times(tiny(), "tiny", quantized, {2}, hw);
  ASSERT_EQ(q.rows.size(), 4u);
  EXPECT_TRUE(q.rows[0].not_predicted.empty());  // stage 0 all-reduces plainly
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_NE(q.rows[i].not_predicted.find("measured by another build (0123abc"), std::string::npos) << i;
  }
  hw.int8_codec.measured_by.clear();
  // The hosts' link fitted to another build's collectives: no row that
  // crosses it is predicted; the host's own link still predicts a run
  // that stays on one host.
  hw.link.measured_by = "0123abc";
  const StepTimePrediction l = predict_step_times(tiny(), "tiny", tiny_run(Stage::k0), {1, 8}, hw);
  ASSERT_EQ(l.rows.size(), 8u);
  for (const auto& row : l.rows) {
    EXPECT_EQ(row.not_predicted.empty(), row.run.ranks <= hw.ranks_per_host) << row.run.ranks << row.not_predicted;
  }
  EXPECT_NE(l.rows.back().not_predicted.find("hosts' link was fitted to another build's"), std::string::npos);
  hw.link.measured_by.clear();
  hw.cores_per_host = 4;  // a core each: predicted
  EXPECT_TRUE(hw.oversubscribed(4).empty());
  hw.cores_per_host = 0;  // not given: assumed
  EXPECT_TRUE(hw.oversubscribed(4).empty());
}

// With overlap each rank's comm thread polls the collectives the schedule
// runs beside compute: a host needs two cores per rank for the overlapped
// step. With fewer, the rows whose schedule does so give the serial step
// and say why not the overlapped one; a schedule that runs its collectives
// while the compute thread waits (the single bucket of stage 0 here) is
// predicted whole.
TEST(StepTime, CommThreadsNeedTheirOwnCoresToOverlap) {
  Hardware hw = slow_link();
  hw.cores_per_host = 1;  // one rank per host (the default) on one core
  const StepTimePrediction p = predict_step_times(tiny(), "tiny", tiny_run(Stage::k0), {2}, hw);
  ASSERT_EQ(p.rows.size(), 4u);
  for (const StepTimeRow& row : p.rows) {
    SCOPED_TRACE(static_cast<int>(row.run.stage));
    EXPECT_TRUE(row.not_predicted.empty());
    EXPECT_GT(row.time.serial_s, 0.0);
    const bool beside_compute = row.time.overlapped_compute_s > 0;
    EXPECT_EQ(beside_compute, row.run.stage != Stage::k0);
    EXPECT_EQ(row.overlap_not_predicted.empty(), !beside_compute) << row.overlap_not_predicted;
  }
  EXPECT_NE(p.rows[3].overlap_not_predicted.find("overlap runs 2 busy threads on a host of 1 core"), std::string::npos);
  const std::string text = format_step_time_text(p);
  EXPECT_NE(text.find("      step not predicted: overlap runs 2 busy threads"), std::string::npos) << text;
  const nlohmann::json j = step_time_to_json(p);
  EXPECT_TRUE(j["rows"][0].contains("step_s"));
  EXPECT_FALSE(j["rows"][0].contains("overlap_not_predicted"));
  EXPECT_FALSE(j["rows"][3].contains("step_s"));
  EXPECT_FALSE(j["rows"][3].contains("hidden_s"));
  EXPECT_DOUBLE_EQ(j["rows"][3]["serial_s"].get<double>(), p.rows[3].time.serial_s);
  EXPECT_EQ(j["rows"][3]["overlap_not_predicted"], p.rows[3].overlap_not_predicted);
  // Two cores a rank: every row whole.
  hw.cores_per_host = 2;
  for (const StepTimeRow& row : predict_step_times(tiny(), "tiny", tiny_run(Stage::k0), {2}, hw).rows) {
    EXPECT_TRUE(row.overlap_not_predicted.empty()) << row.overlap_not_predicted;
  }
  // Two ranks a host of three cores: the ranks fit, their comm threads do not.
  hw.ranks_per_host = 2;
  hw.cores_per_host = 3;
  hw.local = {.latency_s = 0, .bandwidth = 1e9, .source = "test"};
  EXPECT_TRUE(hw.oversubscribed(4).empty());
  EXPECT_NE(hw.comm_threads_oversubscribed(4).find("4 busy threads on a host of 3 cores"), std::string::npos);
  hw.cores_per_host = 0;  // not given: assumed
  EXPECT_TRUE(hw.comm_threads_oversubscribed(4).empty());
}

}  // namespace
}  // namespace zerodp::plan
