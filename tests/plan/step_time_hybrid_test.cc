// SPDX-License-Identifier: Apache-2.0
// The step-time model's hybrid sharding and compressed collectives: where
// each communicator sits on the hosts, G = N being the flat layout, only the
// shards' all-reduce crossing hosts when a group is a host (bytes worked out
// by hand), the prediction's monotonic behaviour in the link's speed, and
// the codec's cost on the comm thread.
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "plan/collective_cost.h"
#include "plan/step_time.h"

namespace zerodp::plan::step_time_hybrid {
namespace {

// L 1, C 4, V 8, T 2: units of 40, 244 and 8 elements (Φ 292).
GptShape tiny() { return {.layers = 1, .heads = 1, .channels = 4, .vocab = 8, .context = 2}; }

// 2 ranks per host; the link 1 MB/s, shared memory 1 GB/s, no latency.
Hardware two_per_host() {
  Hardware hw;
  hw.ranks_per_host = 2;
  hw.link = {.latency_s = 0, .bandwidth = 1e6, .source = "test"};
  hw.local = {.latency_s = 0, .bandwidth = 1e9, .source = "test"};
  hw.gemm_flops = 1e6;
  hw.optimizer_s_per_param = 1e-6;
  return hw;
}

StepTimeRun run_at(Stage stage, int ranks, int group) {
  return {.stage = stage, .ranks = ranks, .dtype = Dtype::fp32(), .micro_batch = 1, .seq_len = 2, .shard_group = group};
}

void expect_same(const StepTime& a, const StepTime& b) {
  EXPECT_DOUBLE_EQ(a.compute_s, b.compute_s);
  EXPECT_DOUBLE_EQ(a.optimizer_s, b.optimizer_s);
  EXPECT_DOUBLE_EQ(a.comm_s, b.comm_s);
  EXPECT_DOUBLE_EQ(a.scheduled_s, b.scheduled_s);
  EXPECT_DOUBLE_EQ(a.serial_s, b.serial_s);
  EXPECT_DOUBLE_EQ(a.step_s, b.step_s);
  EXPECT_DOUBLE_EQ(a.sent_bytes, b.sent_bytes);
  EXPECT_DOUBLE_EQ(a.link_bytes, b.link_bytes);
  EXPECT_EQ(a.collectives, b.collectives);
}

TEST(HybridPlacement, GroupsOfHostsAndHostsOfGroups) {
  Hardware hw = two_per_host();
  // N 8, 2 per host, G 4: a group spans 2 hosts, 2 ranks on each; a replica
  // group has 2 ranks, one per host, and both ranks of a host run theirs.
  Placement s = shard_group_placement(8, 4, hw), r = replica_group_placement(8, 4, hw);
  EXPECT_EQ(s.ranks, 4);
  EXPECT_EQ(s.per_host, 2);
  EXPECT_EQ(s.sharing, 2);
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.per_host, 1);
  EXPECT_EQ(r.sharing, 2);
  // The host's link carries 2 ranks x 1 remote peer x S/2 per exchange.
  EXPECT_DOUBLE_EQ(link_bytes_per_exchange(1e6, r, hw), 1e6);
  // N 8, 4 per host, G 2: two groups on a host, all shared memory; the
  // replica groups have 4 ranks, 2 on each host.
  hw.ranks_per_host = 4;
  s = shard_group_placement(8, 2, hw);
  r = replica_group_placement(8, 2, hw);
  EXPECT_EQ(s.ranks, 2);
  EXPECT_EQ(s.per_host, 2);
  EXPECT_DOUBLE_EQ(link_bytes_per_exchange(1e6, s, hw), 0);
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.per_host, 2);
  EXPECT_EQ(r.sharing, 4);
  // 4 ranks x 2 remote peers x S/4.
  EXPECT_DOUBLE_EQ(link_bytes_per_exchange(1e6, r, hw), 2e6);
  EXPECT_DOUBLE_EQ(local_bytes_per_exchange(1e6, r), 2.5e5);
}

TEST(HybridStepTime, GroupOfAllRanksIsTheFlatLayout) {
  for (const Stage stage : kAllStages) {
    SCOPED_TRACE(stage_number(stage));
    expect_same(predict_step_time(tiny(), run_at(stage, 4, 4), two_per_host()),
                predict_step_time(tiny(), run_at(stage, 4, 0), two_per_host()));
  }
}

TEST(HybridStepTime, Stage0StaysFlat) {
  expect_same(predict_step_time(tiny(), run_at(Stage::k0, 4, 2), two_per_host()),
              predict_step_time(tiny(), run_at(Stage::k0, 4, 0), two_per_host()));
}

TEST(HybridStepTime, OnlyTheShardsAllReduceCrossesHostsByHand) {
  // N 4 on 2 hosts, G 2 (a group per host), stage 2. Per unit the group's
  // reduce-scatter and all-gather stay on shared memory; the shard of
  // ceil(c/2) fp32 elements is all-reduced with the other host: 2 exchanges
  // of 2 ranks x S/2 on the link = 2S. Shards 20, 122, 4: 2 x 146 x 4 =
  // 1168 bytes; the losses' all-gather over all 4 ranks (32 bytes, 2 ranks
  // x 2 remote peers x 8 bytes) 32 more. Overflow and norm stay in the group.
  const StepTime hybrid = predict_step_time(tiny(), run_at(Stage::k2, 4, 2), two_per_host());
  EXPECT_DOUBLE_EQ(hybrid.link_bytes, 1168 + 32);
  // Flat: the reduce-scatter and all-gather of every unit put 2 ranks x 2
  // remote peers x S/4 = S on the link each: 2 x 292 x 4, and the three
  // small collectives 32 each.
  const StepTime flat = predict_step_time(tiny(), run_at(Stage::k2, 4, 0), two_per_host());
  EXPECT_DOUBLE_EQ(flat.link_bytes, 2336 + 3 * 32);
  // Sent per rank: group reduce-scatter and all-gather 292 x 4 / 2 each,
  // the shards' all-reduce 146 x 4, losses 32 x 3/4, overflow and norm 16 x
  // 1/2 each.
  EXPECT_DOUBLE_EQ(hybrid.sent_bytes, 3 * 584 + 24 + 16);
  // The link is 1000x slower than shared memory: the hybrid comm is the
  // link's 2 x 146 x 4 / 1e6 s (and the small ones), less than half the flat's.
  EXPECT_NEAR(hybrid.comm_s, 1.2e-3, 1e-5);
  EXPECT_GT(flat.comm_s, 2 * hybrid.comm_s);
  // The cross-group all-reduces are the hybrid step's all-reduce term (the
  // flat stage 2 has none); the terms add up to comm_s in both.
  EXPECT_NEAR(hybrid.comm_terms.all_reduce_s, 2 * 146 * 4 / 1e6, 1e-5);
  EXPECT_EQ(flat.comm_terms.all_reduce_s, 0.0);
  EXPECT_NEAR(hybrid.comm_terms.total(), hybrid.comm_s, 1e-15);
  EXPECT_NEAR(flat.comm_terms.total(), flat.comm_s, 1e-15);
  // The optimizer updates the group's shards, as at N = G = 2.
  EXPECT_DOUBLE_EQ(hybrid.optimizer_s, 146e-6);
}

TEST(HybridStepTime, SlowerLinkNeverFasterAndWidensTheGapToFlat) {
  for (const Stage stage : {Stage::k1, Stage::k2, Stage::k3}) {
    SCOPED_TRACE(stage_number(stage));
    double last_hybrid = 0, last_gap = -1;
    for (const double bandwidth : {1e9, 1e7, 1e6, 1e5}) {
      Hardware hw = two_per_host();
      hw.link.bandwidth = bandwidth;
      const StepTime hybrid = predict_step_time(tiny(), run_at(stage, 4, 2), hw);
      const StepTime flat = predict_step_time(tiny(), run_at(stage, 4, 0), hw);
      EXPECT_GE(hybrid.step_s, last_hybrid);
      EXPECT_GE(flat.step_s - hybrid.step_s, last_gap);
      EXPECT_LT(hybrid.link_bytes, flat.link_bytes);
      last_hybrid = hybrid.step_s;
      last_gap = flat.step_s - hybrid.step_s;
    }
    EXPECT_GT(last_gap, 0);
  }
}

TEST(HybridStepTime, RefusesGroupsThatDoNotFit) {
  EXPECT_THROW(predict_step_time(tiny(), run_at(Stage::k2, 4, 3), two_per_host()), ConfigError);
  // 6 ranks, 2 per host, groups of 3: a group straddles a host.
  EXPECT_THROW(predict_step_time(tiny(), run_at(Stage::k2, 6, 3), two_per_host()), ConfigError);
  EXPECT_NO_THROW(predict_step_time(tiny(), run_at(Stage::k2, 6, 2), two_per_host()));
}

// Two ranks, one per host, the link 1 MB/s; the codec at 1 us packing and
// 2 us unpacking an element.
Hardware with_codec() {
  Hardware hw = two_per_host();
  hw.ranks_per_host = 1;
  hw.int8_codec = {.quantize_s = 1e-6, .dequantize_s = 2e-6, .source = "test"};
  return hw;
}

TEST(QuantizedStepTime, GradientCodecCostsThePackedBufferAndItsUnpacking) {
  StepTimeRun run = run_at(Stage::k2, 2, 0);
  run.quantize_grads = comm::Quantization::kInt8;
  const StepTime with = predict_step_time(tiny(), run, with_codec());
  Hardware no_codec = with_codec();
  no_codec.int8_codec = {};
  const StepTime without = predict_step_time(tiny(), run, no_codec);
  // Each unit's reduce-scatter packs its c elements and unpacks 2 x c/2:
  // 292 x (1 + 2) us in all.
  EXPECT_NEAR(with.serial_s - without.serial_s, 292 * 3e-6, 1e-12);
  EXPECT_NEAR(with.comm_s - without.comm_s, 292 * 3e-6, 1e-12);
  EXPECT_NEAR(with.comm_terms.codec_s, 292 * 3e-6, 1e-12);  // its own term
  EXPECT_EQ(without.comm_terms.codec_s, 0.0);
  EXPECT_NEAR(with.comm_terms.total(), with.comm_s, 1e-15);
  EXPECT_DOUBLE_EQ(with.sent_bytes, without.sent_bytes);
  // Packed: the link moves half of Q(c) = 4 ceil(c/256) + c per unit,
  // against half of 4c plain.
  run.quantize_grads = comm::Quantization::kNone;
  const StepTime plain = predict_step_time(tiny(), run, with_codec());
  EXPECT_DOUBLE_EQ(plain.link_bytes - without.link_bytes, (4 * 292 - (3 * 4 + 292)) / 2.0);
}

TEST(QuantizedStepTime, WeightCodecOnEveryStage3Gather) {
  StepTimeRun run = run_at(Stage::k3, 2, 0);
  run.quantize_weights = comm::Quantization::kInt8;
  Hardware no_codec = with_codec();
  no_codec.int8_codec = {};
  const double extra =
      predict_step_time(tiny(), run, with_codec()).serial_s - predict_step_time(tiny(), run, no_codec).serial_s;
  // Gathers of units 0, 1, 2 in forward (the head takes the embedding's)
  // and of 2 and 1 in backward (the head keeps its gather, the embedding
  // reads none), each packing its shard (c/2) and unpacking all c:
  // (1 x c/2 + 2 x c) us.
  double expected = 0;
  for (const double c : {40.0, 244.0, 8.0, 8.0, 244.0}) expected += std::ceil(c / 2) * 1e-6 + c * 2e-6;
  EXPECT_NEAR(extra, expected, 1e-12);
  // The stage-1/2 refresh gathers are never quantized.
  run.stage = Stage::k2;
  EXPECT_DOUBLE_EQ(predict_step_time(tiny(), run, with_codec()).serial_s,
                   predict_step_time(tiny(), run, no_codec).serial_s);
}

TEST(QuantizedStepTime, HybridQuantizesTheGroupNotTheReplicas) {
  // N 4, G 2: the group's reduce-scatter is packed, the shards' all-reduce
  // across hosts is plain: the link bytes are those of the plain run.
  Hardware hw = two_per_host();
  StepTimeRun run = run_at(Stage::k2, 4, 2);
  const StepTime plain = predict_step_time(tiny(), run, hw);
  run.quantize_grads = comm::Quantization::kInt8;
  const StepTime packed = predict_step_time(tiny(), run, hw);
  EXPECT_DOUBLE_EQ(packed.link_bytes, plain.link_bytes);
  EXPECT_LT(packed.sent_bytes, plain.sent_bytes);
}

}  // namespace
}  // namespace zerodp::plan::step_time_hybrid
