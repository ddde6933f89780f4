// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include "core/error.h"
#include "model/gpt_family.h"
#include "model/presets.h"
#include "plan/deepspeed_estimate.h"
#include "plan/model_shape.h"
#include "plan/plan_format.h"
#include "plan/planner.h"

namespace zerodp::plan {
namespace {

PlanConfig paper_config() {
  PlanConfig c;
  c.num_params = 7'500'000'000;
  c.ranks = {64};
  c.precision = Dtype::fp16();
  c.optimizer = {.kind = optim::OptimizerKind::kAdamW};
  c.device_memory = 32'000'000'000;
  return c;
}

TEST(Planner, RecommendsTheLeastCommunicationThatFits) {
  const PlanResult r = make_plan(paper_config());
  ASSERT_EQ(r.per_ranks.size(), 1u);
  const RankPlan& p = r.per_ranks[0];
  EXPECT_FALSE(*p.stages[0].fits);  // 120 GB
  EXPECT_TRUE(*p.stages[1].fits);   // 31.4 GB
  EXPECT_TRUE(*p.stages[2].fits);
  EXPECT_TRUE(*p.stages[3].fits);
  // Stages 1 and 2 move 2Φ, stage 3 3Φ; of 1 and 2, stage 2 holds less.
  EXPECT_EQ(p.recommended, Stage::k2);
}

// --offload-optimizer: K's bytes leave RAM for the disk (every byte of
// them, rounded up per unit to the direct-I/O block), the staging buffers
// join the buffers, a step reads and writes the file once (AdamW), and the
// largest model that fits counts only the parameters and gradients.
// gpt2-350m, bf16, 4 ranks of 8 GB: the offload tests' run.
PlanConfig gpt2_350m_bf16_at_4_ranks() {
  PlanConfig c = paper_config();
  c.shape = gpt_shape(model::require_gpt(model::model_preset("gpt2-350m"), "test"));
  c.ranks = {4};
  c.precision = Dtype::bf16();
  c.device_memory = 8'000'000'000;
  return c;
}

// --offload-params: stage 3's parameter shards go to the disk beside (or
// without) the states; stages 0-2 keep theirs; fp32 is refused.
TEST(Planner, OffloadParamsMovesStageThreesParametersToTheDisk) {
  PlanConfig c = gpt2_350m_bf16_at_4_ranks();
  const PlanResult in_ram = make_plan(c);
  c.offload_params = true;
  const PlanResult offloaded = make_plan(c);
  for (size_t s = 0; s < 4; ++s) {
    const StagePlan& a = in_ram.per_ranks[0].stages[s];
    const StagePlan& b = offloaded.per_ranks[0].stages[s];
    if (s < 3) {
      EXPECT_EQ(b.states.total(), a.states.total()) << s;
      EXPECT_EQ(b.disk, 0u) << s;
      continue;
    }
    EXPECT_EQ(b.states.params, 0u);
    EXPECT_EQ(b.states.grads + b.states.optimizer(), a.states.grads + a.states.optimizer());
    EXPECT_GE(b.disk, a.states.params);
    EXPECT_EQ(b.disk_written, b.disk);
    EXPECT_GT(b.disk_read, b.disk);  // every gather reads its shard
    EXPECT_GT(b.offload, 0u);
    EXPECT_GT(*b.max_params, *a.max_params);
  }
  EXPECT_NE(plan_to_json(offloaded).dump().find("\"offload_params\":true"), std::string::npos);
  c.precision = Dtype::fp32();
  EXPECT_THROW(make_plan(c), ConfigError);
}

TEST(Planner, OffloadMovesTheOptimizersBytesToTheDisk) {
  PlanConfig c = gpt2_350m_bf16_at_4_ranks();
  const PlanResult in_ram = make_plan(c);
  c.offload_optimizer = true;
  const PlanResult offloaded = make_plan(c);
  for (size_t s = 0; s < 4; ++s) {
    const StagePlan& a = in_ram.per_ranks[0].stages[s];
    const StagePlan& b = offloaded.per_ranks[0].stages[s];
    EXPECT_EQ(b.states.optimizer(), 0u) << s;
    EXPECT_EQ(b.states.params + b.states.grads, a.states.params + a.states.grads) << s;
    EXPECT_GE(b.disk, a.states.optimizer()) << s;
    EXPECT_LT(b.disk, a.states.optimizer() + 4096 * 64) << s;  // one block per unit at most
    EXPECT_EQ(b.disk_read, b.disk) << s;
    EXPECT_EQ(b.disk_written, b.disk) << s;
    EXPECT_GT(b.offload, 0u) << s;
    EXPECT_EQ(b.buffers(), a.buffers() + b.offload) << s;
    EXPECT_GT(*b.max_params, *a.max_params) << s;
  }
  const std::string json = plan_to_json(offloaded).dump();
  EXPECT_NE(json.find("\"disk_bytes\""), std::string::npos);
  EXPECT_NE(json.find("\"offload_optimizer\":true"), std::string::npos);
  c.shape.reset();
  EXPECT_THROW(make_plan(c), ConfigError);  // the staging needs the units
}

// Hybrid sharding: stages 1-3 hold what a flat run of G ranks holds, and
// send the group's collectives plus the shard's all-reduce across the N/G
// groups; stage 0 is the flat run's.
TEST(Planner, HybridShardingPlansTheGroupAndTheTrafficAcrossGroups) {
  PlanConfig flat = paper_config();
  flat.ranks = {8};
  PlanConfig group = flat;
  group.ranks = {2};
  PlanConfig hybrid = flat;
  hybrid.shard_group = 2;
  for (bool with_model : {false, true}) {
    if (with_model) {
      for (PlanConfig* c : {&flat, &group, &hybrid})
        c->shape = gpt_shape(model::require_gpt(model::model_preset("gpt-tiny"), "test"));
    }
    const RankPlan h = make_plan(hybrid).per_ranks[0];
    const RankPlan f = make_plan(flat).per_ranks[0];
    const RankPlan g = make_plan(group).per_ranks[0];
    const uint64_t phi = make_plan(flat).config.num_params;
    EXPECT_EQ(h.shard_group, 2);
    EXPECT_EQ(h.stages[0].states.total(), f.stages[0].states.total());
    EXPECT_EQ(h.stages[0].comm.sent_bytes, f.stages[0].comm.sent_bytes);
    for (int s = 1; s <= 3; ++s) {
      EXPECT_EQ(h.stages[s].states.total(), g.stages[s].states.total()) << "stage " << s;
      EXPECT_EQ(h.stages[s].peak, g.stages[s].peak) << "stage " << s;
      // R = 4 groups: 2 pieces of ceil(ceil(Φ/2)/4) fp16 elements leave the group.
      const uint64_t piece = ((phi + 1) / 2 + 3) / 4;
      EXPECT_EQ(h.stages[s].comm.across_groups_sent_bytes, 2 * 3 * piece * 2) << "stage " << s;
      EXPECT_EQ(h.stages[s].comm.sent_bytes, g.stages[s].comm.sent_bytes + h.stages[s].comm.across_groups_sent_bytes)
          << "stage " << s;
      EXPECT_EQ(f.stages[s].comm.across_groups_sent_bytes, 0u);
    }
  }
  hybrid.ranks = {6};
  hybrid.shard_group = 4;
  EXPECT_THROW(make_plan(hybrid), ConfigError);
}

TEST(Planner, RecommendsStage3WhenOnlyItFits) {
  PlanConfig c = paper_config();
  c.num_params = 128'000'000'000;
  const PlanResult r = make_plan(c);
  EXPECT_EQ(r.per_ranks[0].recommended, Stage::k3);  // 32 GB exactly: fits
  c.device_memory = 31'999'999'999;
  EXPECT_FALSE(make_plan(c).per_ranks[0].recommended.has_value());
}

TEST(Planner, RecommendsStage0ForSmallModelsOnlyOnTies) {
  PlanConfig c = paper_config();
  c.num_params = 1000;
  c.ranks = {1};
  // At N = 1 every stage holds the same bytes; the lowest-communication
  // choice with equal memory keeps the first such stage.
  EXPECT_EQ(make_plan(c).per_ranks[0].recommended, Stage::k0);
}

TEST(Planner, ActivationsAndGatheredBuffersJoinThePeak) {
  PlanConfig c;
  c.shape = GptShape{12, 12, 768, 50304, 1024};
  c.model_name = "gpt2-124m";
  c.ranks = {1, 8};
  c.precision = Dtype::bf16();
  ActivationConfig a;
  a.micro_batch = 2;
  a.seq_len = 256;
  c.activations = a;
  c.device_memory = 80ull << 30;
  const PlanResult r = make_plan(c);
  EXPECT_EQ(r.config.num_params, 124'475'904u);
  ASSERT_TRUE(r.activations.has_value());
  for (const RankPlan& p : r.per_ranks) {
    for (const StagePlan& s : p.stages) {
      EXPECT_EQ(s.activations, r.activations->total_bytes);
      EXPECT_EQ(s.peak, s.states.total() + s.buffers() + s.activations);
      // Every unit's fp32 gradient lives in the compute copy (a block's
      // after its weights, the tied embedding's at the end of the
      // backward): stages 0-1 pool nothing, stages 2-3 the bf16 copies
      // they reduce-scatter.
      EXPECT_EQ(s.buckets == 0, s.stage == Stage::k0 || s.stage == Stage::k1) << stage_number(s.stage);
      EXPECT_EQ(s.gathered, s.stage == Stage::k3 ? 2 * r.largest_unit_params.value() * 2 : 0u);
      EXPECT_EQ(s.compute_copy, r.largest_unit_params.value() * 4);
    }
  }
  // N = 1: stages 0-2 all move 2Φ and hold the same states; stages 0 and 1
  // round each unit's gradient straight into their bf16 gradient buffer and
  // reduce from it, where stage 2 makes a bf16 copy of each unit's
  // gradient. The tie goes to the lower stage.
  const RankPlan& one = r.per_ranks[0];
  EXPECT_EQ(one.stages[0].peak, one.stages[1].peak);
  EXPECT_LT(one.stages[1].peak, one.stages[2].peak);
  EXPECT_EQ(one.recommended, Stage::k0);
}

TEST(Planner, WithAShapePartitionsPerUnitLikeTheEngine) {
  // Units of 3 + 2 x 5 + 2 elements over N = 4: the busiest rank holds
  // ceil(3/4) + 2 ceil(5/4) + ceil(2/4) = 1 + 4 + 1 = 6, not ceil(15/4) = 4.
  const GptShape s{1, 1, 1, 1, 1};  // V=1, T=1, C=1: embedding 2, block 25, final 2
  PlanConfig c;
  c.shape = s;
  c.ranks = {4};
  c.precision = Dtype::fp32();
  const PlanResult r = make_plan(c);
  const uint64_t shard = 1 + 7 + 1;  // ceil(2/4) + ceil(25/4) + ceil(2/4)
  EXPECT_EQ(r.config.num_params, 29u);
  EXPECT_EQ(r.per_ranks[0].stages[3].states.total(), 16 * shard);
  EXPECT_EQ(r.per_ranks[0].stages[1].states.master, 0u);  // fp32: no master copy
  EXPECT_EQ(r.per_ranks[0].stages[1].states.moment1, 4 * shard);
  EXPECT_EQ(r.per_ranks[0].stages[0].compute_copy, 0u);  // fp32 computes in place
  const uint64_t units[] = {3, 5, 5, 2};
  EXPECT_EQ(unit_shard_elements(units, 4), 6u);
}

TEST(Planner, StageOneAccumulationCountsTheOwnedAccumulatorAsTheEngineDoes) {
  // gpt-tiny at N = 2 and gpt2-124m at N = 8 with --grad-accum 2 used to stop
  // at "engine model and paper model disagree": the paper side added a second
  // flat Φ where the engine keeps an owned accumulator of Φ/N.
  for (const auto& [shape, n] :
       {std::pair{GptShape{4, 4, 128, 256, 128}, 2}, std::pair{GptShape{12, 12, 768, 50304, 1024}, 8}}) {
    PlanConfig c;
    c.shape = shape;
    c.ranks = {n};
    c.precision = Dtype::bf16();
    c.grad_accum = 2;
    const PlanResult r = make_plan(c);
    const uint64_t phi = r.config.num_params;
    const StagePlan& s1 = r.per_ranks[0].stages[1];
    const uint64_t owned = r.per_ranks[0].stages[3].states.params / 2;  // stage 3 params: owned x 2 bytes
    EXPECT_EQ(s1.states.grads, 2 * phi + 2 * owned) << "N = " << n;
    c.grad_accum = 1;
    EXPECT_EQ(make_plan(c).per_ranks[0].stages[1].states.grads, 2 * phi) << "N = " << n;
  }
}

TEST(Planner, ActivationsWithoutShapeIsConfigError) {
  PlanConfig c = paper_config();
  c.activations = ActivationConfig{};
  EXPECT_THROW(make_plan(c), ConfigError);
  PlanConfig empty;
  EXPECT_THROW(make_plan(empty), ConfigError);
}

TEST(Planner, ParsesRankLists) {
  EXPECT_EQ(parse_rank_list("64"), std::vector<int>{64});
  EXPECT_EQ(parse_rank_list("1,4, 16,64"), (std::vector<int>{1, 4, 16, 64}));
  EXPECT_THROW(parse_rank_list("1,,4"), ConfigError);
  EXPECT_THROW(parse_rank_list("0"), ConfigError);
  EXPECT_THROW(parse_rank_list("4x"), ConfigError);
  EXPECT_THROW(parse_rank_list(""), ConfigError);
}

TEST(DeepSpeed, EstimatorsAsInReference) {
  // 2Φ + int(18Φ/N); 4 x largest layer + int(18Φ/N).
  EXPECT_EQ(deepspeed_zero2_gpu_bytes(7'500'000'000, 64), 15'000'000'000u + 2'109'375'000u);
  EXPECT_EQ(deepspeed_zero2_gpu_bytes(1001, 4), 2002u + 4504u);
  EXPECT_EQ(deepspeed_zero3_gpu_bytes(1001, 100, 4), 400u + 4504u);
}

TEST(PlanFormat, TextNamesUnitsAndStages) {
  FormatOptions o;
  o.compare_deepspeed = true;
  PlanConfig c = paper_config();
  c.ranks = {1, 4, 16, 64, 256, 1024};
  const std::string text = format_plan_text(make_plan(c), o);
  EXPECT_NE(text.find("GB = 1e9 bytes"), std::string::npos);
  EXPECT_NE(text.find("GiB = 2^30 bytes"), std::string::npos);
  EXPECT_NE(text.find("31.41"), std::string::npos);
  EXPECT_NE(text.find("16.64"), std::string::npos);
  EXPECT_NE(text.find("1.875"), std::string::npos);
  EXPECT_NE(text.find("estimate_zero2"), std::string::npos);
  EXPECT_NE(text.find("Table 1"), std::string::npos);
}

// `zerodp plan --optimizer lion`: K = 8 (master + one momentum), 12Φ a
// replica, and stage 3 divides all of it by N.
TEST(PlanFormat, LionIsKEight) {
  PlanConfig c = paper_config();
  c.optimizer = parse_optimizer("lion");
  c.ranks = {64};
  const PlanResult r = make_plan(c);
  const std::string text = format_plan_text(r, {});
  EXPECT_NE(text.find("fp16 + Lion (mixed precision: fp32 master weights)"), std::string::npos) << text;
  EXPECT_NE(text.find("optimizer K = 8 (fp32 master 4 + momentum 4) = 12"), std::string::npos) << text;
  const nlohmann::json j = plan_to_json(r, {});
  EXPECT_EQ(j["bytes_per_param"]["optimizer_k"].get<int>(), 8);
  EXPECT_EQ(j["plans"][0]["stages"][0]["model_states_bytes"].get<uint64_t>(), 12 * 7'500'000'000u);
  EXPECT_EQ(j["plans"][0]["stages"][3]["model_states_bytes"].get<uint64_t>(), 12 * 7'500'000'000u / 64);
}

// 8-bit Adam: K = 6 (fp32 master 4 + one byte per moment) plus each
// moment's fp32 scale per 2048-element block. With --params alone the model
// counts as one unit: 7.5B / 64 = 117,187,500 elements per rank, 57,221
// blocks each (the last shared with the next rank's shard).
TEST(PlanFormat, Adam8bitIsKSixPlusBlockScales) {
  PlanConfig c = paper_config();
  c.optimizer = parse_optimizer("adam8bit");
  c.ranks = {64};
  const PlanResult r = make_plan(c);
  const std::string text = format_plan_text(r, {});
  EXPECT_NE(text.find("fp16 + 8-bit Adam (mixed precision: fp32 master weights)"), std::string::npos) << text;
  EXPECT_NE(text.find("optimizer K = 6 (fp32 master 4 + Adam m 1 + Adam v 1, 8-bit, + 8 bytes per 2048 for their "
                      "scales; the token embedding's unit and units under 4096: m 4 + v 4) = 10"),
            std::string::npos)
      << text;
  const nlohmann::json j = plan_to_json(r, {});
  EXPECT_EQ(j["bytes_per_param"]["optimizer_k"].get<int>(), 6);
  const uint64_t phi = 7'500'000'000u, blocks_all = (phi + 2047) / 2048;
  EXPECT_EQ(j["plans"][0]["stages"][0]["model_states_bytes"].get<uint64_t>(), 10 * phi + 8 * blocks_all);
  const uint64_t shard = phi / 64;  // 117,187,500: rank 0's blocks 0 .. 57,220
  EXPECT_EQ(j["plans"][0]["stages"][3]["model_states_bytes"].get<uint64_t>(),
            10 * shard + 8 * ((shard - 1) / 2048 + 1));
}

// Adafactor: K = 4 (the fp32 master) plus its factored statistics, which
// need the model's shapes: with --model gpt2-124m (one unit of embeddings, 12
// blocks, the final layernorm), the stage-0 table holds 4 bytes per
// parameter plus each matrix's rows and columns and v of the vectors.
TEST(PlanFormat, AdafactorIsKFourPlusFactoredStatistics) {
  PlanConfig c;
  c.shape = gpt_shape(model::require_gpt(model::model_preset("gpt2-124m"), "test"));
  c.num_params = c.shape->num_params();
  c.precision = Dtype::bf16();
  c.optimizer = parse_optimizer("adafactor");
  c.ranks = {1};
  const PlanResult r = make_plan(c);
  const std::string text = format_plan_text(r, {});
  EXPECT_NE(text.find("bf16 + Adafactor"), std::string::npos) << text;
  EXPECT_NE(text.find("optimizer K = 4"), std::string::npos) << text;
  const GptShape& s = *c.shape;
  const uint64_t C = static_cast<uint64_t>(s.channels), V = static_cast<uint64_t>(s.vocab),
                 T = static_cast<uint64_t>(s.context);
  // wte, wpe; per block qkvw, attprojw, fcw, fcprojw as rows + columns and
  // 9C of vectors (ln1 2C, qkvb 3C, attprojb C, ln2 2C, fcb 4C, fcprojb C = 13C);
  // ln_f 2C.
  const uint64_t block = (3 * C + C) + (C + C) + (4 * C + C) + (C + 4 * C) + 13 * C;
  const uint64_t stats = (V + C) + (T + C) + static_cast<uint64_t>(s.layers) * block + 2 * C;
  const nlohmann::json j = plan_to_json(r, {});
  // The statistics and a work buffer of their size for each step's factors.
  EXPECT_EQ(j["plans"][0]["stages"][0]["model_states_bytes"].get<uint64_t>(), 8 * c.num_params + 2 * 4 * stats);
}

TEST(PlanFormat, JsonCarriesExactBytes) {
  FormatOptions o;
  o.compare_deepspeed = true;
  const nlohmann::json j = plan_to_json(make_plan(paper_config()), o);
  EXPECT_EQ(j["plans"][0]["stages"][1]["model_states_bytes"].get<uint64_t>(), 31'406'250'000u);
  EXPECT_EQ(j["plans"][0]["stages"][3]["comm"]["elements"].get<uint64_t>(), 22'500'000'000u);
  EXPECT_EQ(j["plans"][0]["recommended_stage"].get<int>(), 2);
  EXPECT_EQ(j["bytes_per_param"]["optimizer_k"].get<int>(), 12);
  EXPECT_TRUE(j["plans"][0].contains("deepspeed"));
}

}  // namespace
}  // namespace zerodp::plan
