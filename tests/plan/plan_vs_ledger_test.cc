// SPDX-License-Identifier: Apache-2.0
// plan held against the engine: for GPT and MLP models, stages 0-3, N = 1..4
// thread ranks, fp32 and bf16 (and fp16 with Lion and SGD with momentum), one
// zero::Engine train_step per rank, and every rank's ledger compared with
// plan's prediction for that rank:
// model states (params, grads, master, adam_m, adam_v) exactly, the
// activations exactly (the tuned per-tensor list), the unit buffers
// (gathered) exactly, the transient gradient buffers (buckets) exactly with
// the comm thread off and inside [prediction, bound] with it on.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <vector>

#include "comm/world.h"
#include "core/offload_extents.h"
#include "ledger_expect.h"
#include "model/gpt_family.h"
#include "model/llama_family.h"
#include "model/mlp_family.h"
#include "model/presets.h"
#include "optim/quant8.h"
#include "plan/predict.h"
#include "support/scratch_dir.h"
#include "zero/engine.h"

namespace zerodp::plan {
namespace {

using zero::MemoryCategory;

model::ModelConfig odd_gpt() {
  // Odd sizes everywhere: 3 layers, 3 heads of 7 channels, vocab 37 padded
  // to 41, context 13; no count divisible by 2, 3 or 4 in general.
  return model::gpt_model_config("odd-gpt", model::GptConfig{13, 37, 41, 3, 3, 21});
}

// Every Llama option at once, in odd sizes: groups of three, untied, q/k/v
// biases, Llama 3's rope scaling.
model::ModelConfig odd_llama() {
  model::LlamaConfig c;
  c.vocab = 37;
  c.hidden = 20;
  c.layers = 2;
  c.heads = 6;
  c.kv_heads = 2;
  c.head_dim = 6;
  c.intermediate = 23;
  c.max_seq_len = 13;
  c.tied = false;
  c.qkv_bias = true;
  c.rope_scaling = {true, 4.0, 1.0, 4.0, 8};
  return model::llama_model_config("odd-llama", c);
}

model::ModelConfig odd_mlp() {
  return {"odd-mlp",
          std::make_shared<const model::MlpSpec>(model::MlpConfig{{12, 17, 9, 5}, model::MlpHead::kClassification})};
}

// A deterministic micro-batch for whichever model the workspace belongs to.
zero::BatchFeeder feeder(const model::ModelConfig& mc, const RunShape& run, int rank) {
  return [&mc, run, rank](model::Workspace& ws, int micro) {
    model::Batch batch;
    std::vector<int32_t> tokens, targets, labels;
    std::vector<float> features, values;
    const int vocab = mc.as<model::GptSpec>()     ? mc.as<model::GptSpec>()->config().vocab
                      : mc.as<model::LlamaSpec>() ? mc.as<model::LlamaSpec>()->config().vocab
                                                  : 0;
    if (vocab > 0) {  // a token model
      const int n = run.micro_batch * run.seq_len;
      for (int i = 0; i < n; ++i) {
        tokens.push_back((i * 7 + rank * 3 + micro) % vocab);
        targets.push_back((i * 5 + rank + 1) % vocab);
      }
      batch.tokens = tokens;
      batch.targets = targets;
    } else {
      const model::MlpConfig& mlp = mc.as<model::MlpSpec>()->config();
      const int in = mlp.widths.front(), out = mlp.widths.back();
      for (int i = 0; i < run.micro_batch * in; ++i) features.push_back(static_cast<float>((i * 13 + rank) % 7) - 3.0f);
      if (mlp.head == model::MlpHead::kClassification) {
        for (int i = 0; i < run.micro_batch; ++i) labels.push_back((i + rank + micro) % out);
        batch.targets = labels;
      } else {
        for (int i = 0; i < run.micro_batch * out; ++i) values.push_back(0.25f * static_cast<float>(i % 5));
        batch.values = values;
      }
      batch.features = features;
    }
    ws.set_batch(batch);
  };
}

// Two train_steps on run.ranks thread ranks (the second reuses the first's
// pooled gradient buffers, so its peak is the steady one); every rank's
// ledger after them.
std::vector<zero::LedgerSnapshot> measure(const model::ModelConfig& mc, const RunShape& run, bool overlap) {
  const auto model = model::make_model(mc);
  zero::EngineConfig ec;
  ec.stage = run.stage;
  ec.dtype = run.dtype;
  ec.grad_accum = run.grad_accum;
  ec.prefetch = run.prefetch;
  ec.bucket_elements = run.bucket_elements;
  ec.overlap = overlap;
  ec.optimizer = run.optimizer;
  ec.quantize_weights = run.quantize_weights;
  ec.quantize_grads = run.quantize_grads;
  ec.shard_group_size = run.shard_group;
  ec.compute = run.bf16_compute ? kernels::Compute::kBf16 : kernels::Compute::kFp32;
  const testing::ScratchDir offload_dir("plan_vs_ledger_offload");
  if (run.offload_optimizer) ec.offload_optimizer_dir = offload_dir.path.string();
  if (run.offload_params) ec.offload_params_dir = offload_dir.path.string();
  std::vector<zero::LedgerSnapshot> out(static_cast<size_t>(run.ranks));
  comm::run_thread_ranks(run.ranks, {}, [&](comm::Communicator& comm) {
    zero::Engine engine(*model, comm, ec, /*seed=*/7, run.micro_batch, run.seq_len, run.checkpointing);
    engine.train_step(feeder(mc, run, comm.rank()));
    engine.train_step(feeder(mc, run, comm.rank()));
    // The end of a run with a sample: rank 0's consolidated copy.
    if (run.consolidated_copy) engine.gather_params_to(0);
    out[static_cast<size_t>(comm.rank())] = engine.ledger().snapshot();
  });
  return out;
}

std::string describe(const model::ModelConfig& mc, const RunShape& r, bool overlap) {
  return fmt::format(
      "{} stage {} N={} G={} {} {} B={} T={} ckpt={} accum={} prefetch={} bucket={} overlap={} qw={} qg={}", mc.name,
      r.stage, r.ranks, r.shard_group, r.dtype.name(), optimizer_name(r.optimizer), r.micro_batch, r.seq_len,
      r.checkpointing, r.grad_accum, r.prefetch, r.bucket_elements, overlap,
      comm::quantization_name(r.quantize_weights), comm::quantization_name(r.quantize_grads));
}

// Holds every rank's ledger against plan's prediction for that rank.
void expect_ledger_matches(const model::ModelConfig& mc, const RunShape& run, bool overlap) {
  const auto measured = measure(mc, run, overlap);
  for (int r = 0; r < run.ranks; ++r) {
    SCOPED_TRACE(describe(mc, run, overlap) + fmt::format(" rank {}", r));
    const zero::LedgerSnapshot& s = measured[static_cast<size_t>(r)];
    const RankPrediction p = predict_rank(mc, run, r);
    expect_states_and_activations(s, p);
    EXPECT_EQ(s[MemoryCategory::kGathered].peak, p.gathered) << "gathered peak";
    EXPECT_EQ(s[MemoryCategory::kComm].peak, p.comm) << "comm peak";
    EXPECT_EQ(s[MemoryCategory::kComm].current, p.comm) << "comm current";
    EXPECT_EQ(s[MemoryCategory::kScratch].peak, p.scratch()) << "scratch peak";
    EXPECT_EQ(s[MemoryCategory::kScratch].current, 0u) << "scratch is released";
    // The pool keeps the step's gradient buffers; the end's consolidated
    // copy gives them back first.
    if (run.consolidated_copy) {
      EXPECT_EQ(s[MemoryCategory::kBuckets].current, 0u) << "buckets are trimmed for the consolidated copy";
    } else {
      EXPECT_EQ(s[MemoryCategory::kBuckets].current, s[MemoryCategory::kBuckets].peak) << "buckets are kept";
    }
    if (overlap) {
      EXPECT_GE(s[MemoryCategory::kBuckets].peak, p.buckets) << "buckets peak";
      EXPECT_LE(s[MemoryCategory::kBuckets].peak, p.buckets_bound) << "buckets peak";
      EXPECT_GE(s.total.peak, p.total());
      EXPECT_LE(s.total.peak, p.total_bound());
    } else {
      EXPECT_EQ(s[MemoryCategory::kBuckets].peak, p.buckets) << "buckets peak";
      EXPECT_EQ(s.total.peak, p.total()) << "total peak";
    }
  }
  // The busiest rank is rank 0; with 8-bit Adam up to the block scales: another
  // rank's unit shard may cut one block more (4 bytes per moment and unit);
  // with Adafactor up to its statistics: another rank's shards may touch
  // larger matrices (bounded here by the whole model's statistics).
  const RankPrediction busiest = predict_rank(mc, run);
  uint64_t slack = optim::optimizer_bytes_per_param(run.optimizer, false).quant_block == 0
                       ? 0
                       : 8 * model::make_model(mc)->units().size();
  // With a compressed reduce-scatter up to its scratch's ranks * Q(rank):
  // another rank's shard may be cut at more tensor starts, a 4-byte scale
  // more for each (comm/quantize.h).
  if (run.quantize_grads != comm::Quantization::kNone)
    slack += 4 * static_cast<uint64_t>(run.ranks) * model::make_model(mc)->tensors().size();
  const UnitSchedule schedule = unit_schedule(mc);
  slack += tensor_stats_bytes(schedule.unit_counts, schedule.unit_tensors, 1, 0, false, run.optimizer);
  // Offload stages three copies of the largest unit extent, each rounded
  // up to the direct-I/O block: the differences above, three times, and
  // the rounding.
  if (run.offload_optimizer) slack = (kOffloadSlots + 1) * slack + kOffloadSlots * kDirectAlignment;
  for (int r = 0; r < run.ranks; ++r) EXPECT_GE(busiest.total() + slack, predict_rank(mc, run, r).total());
}

struct Case {
  model::ModelConfig model;
  int micro_batch;
  int seq_len;
  uint64_t bucket_elements;  // stage 0: small enough to pack several units and to flush
};

// One case's run at (stage, N, dtype, optimizer).
RunShape run_shape(const Case& c, Stage stage, int n, Dtype dt, const optim::OptimizerConfig& optimizer = {}) {
  RunShape run;
  run.stage = stage;
  run.ranks = n;
  run.dtype = dt;
  run.optimizer = optimizer;
  run.micro_batch = c.micro_batch;
  run.seq_len = c.seq_len;
  run.bucket_elements = c.bucket_elements;
  return run;
}

std::vector<Case> cases() {
  return {{model::model_preset("gpt-tiny"), 2, 16, 250'000},
          {odd_gpt(), 3, 11, 3000},
          {odd_mlp(), 5, 1, 300},
          {model::model_preset("mlp-small"), 4, 1, 70'000},
          {odd_llama(), 3, 11, 3000},
          {model::model_preset("llama-tiny"), 2, 16, 250'000}};
}

TEST(PlanVsLedger, EveryStageRankCountAndPrecisionMatchesExactly) {
  for (const Case& c : cases()) {
    for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
      for (Stage stage : kAllStages) {
        for (int n = 1; n <= 4; ++n) {
          RunShape run = run_shape(c, stage, n, dt);
          expect_ledger_matches(c.model, run, /*overlap=*/false);
          run.consolidated_copy = true;
          expect_ledger_matches(c.model, run, /*overlap=*/false);
        }
      }
    }
  }
}

// bf16 products: the activations only they read are kept as bf16 (GPT),
// with and without checkpointing (which keeps none of them), at fp32 and
// bf16 storage; the consolidated copy's sample workspace stays fp32.
TEST(PlanVsLedger, Bf16ComputeKeepsProductInputsInBf16) {
  for (const Case& c : cases()) {
    for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
      for (Stage stage : {Stage::k0, Stage::k3}) {
        for (bool checkpointing : {false, true}) {
          if (checkpointing && c.model.as<model::MlpSpec>() != nullptr) continue;  // the MLP has no blocks
          RunShape run = run_shape(c, stage, 2, dt);
          run.bf16_compute = true;
          run.checkpointing = checkpointing;
          run.consolidated_copy = true;
          expect_ledger_matches(c.model, run, /*overlap=*/false);
        }
      }
    }
  }
}

// Hybrid sharding: every rank's ledger is the one of its place in a flat
// run of G ranks, but for rank 0's consolidated copy and the gathers of its
// group (stage 3); with the quantized collectives' scratch over the group.
TEST(PlanVsLedger, HybridShardingEveryStageAndGroup) {
  for (const Case& c : cases()) {
    for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
      for (Stage stage : {Stage::k1, Stage::k2, Stage::k3}) {
        for (const auto& [n, g] : {std::pair{4, 2}, std::pair{4, 1}, std::pair{6, 3}}) {
          RunShape run = run_shape(c, stage, n, dt);
          run.shard_group = g;
          run.consolidated_copy = true;
          expect_ledger_matches(c.model, run, /*overlap=*/false);
          if (g == 2 && c.model.name != "gpt-tiny") {
            // Adafactor's statistics and their reduction buffers ("comm") over the group.
            RunShape factored = run_shape(c, stage, n, dt, parse_optimizer("adafactor"));
            factored.shard_group = g;
            expect_ledger_matches(c.model, factored, /*overlap=*/false);
          }
          if (dt == Dtype::bf16() && g == 2) {
            run.quantize_grads = comm::Quantization::kInt8;
            if (stage == Stage::k3) run.quantize_weights = comm::Quantization::kInt8;
            expect_ledger_matches(c.model, run, /*overlap=*/true);
          }
        }
      }
    }
  }
}

// The compressed collectives' scratch ("comm"), booked by the constructor:
// the plan predicts it per rank, with the rest unchanged.
TEST(PlanVsLedger, CompressedCollectivesScratch) {
  for (const Case& c : {cases()[0], cases()[1], cases()[2]}) {
    for (Stage stage : {Stage::k1, Stage::k2, Stage::k3}) {
      for (int n : {1, 3, 4}) {
        for (comm::Quantization grads : {comm::Quantization::kInt8, comm::Quantization::kInt4}) {
          RunShape run = run_shape(c, stage, n, Dtype::bf16());
          run.quantize_grads = grads;
          if (stage == Stage::k3) run.quantize_weights = comm::Quantization::kInt8;
          expect_ledger_matches(c.model, run, /*overlap=*/false);
          expect_ledger_matches(c.model, run, /*overlap=*/true);
        }
      }
    }
  }
}

TEST(PlanVsLedger, GradientAccumulationCheckpointingAndOptimizers) {
  for (const Case& c : {cases()[1], cases()[2]}) {
    for (Stage stage : kAllStages) {
      RunShape run;
      run.stage = stage;
      run.ranks = 3;
      run.dtype = Dtype::bf16();
      run.micro_batch = c.micro_batch;
      run.seq_len = c.seq_len;
      run.bucket_elements = c.bucket_elements;
      run.grad_accum = 3;  // stage 1 keeps a flat staging buffer beside its owned accumulator
      expect_ledger_matches(c.model, run, false);
      run.grad_accum = 8;  // and the pairwise sum over micro-batches holds two partial sums
      expect_ledger_matches(c.model, run, false);
      run.grad_accum = 1;
      run.optimizer = {.kind = optim::OptimizerKind::kSgd, .sgd = {.momentum = 0.9}};
      expect_ledger_matches(c.model, run, false);
      run.optimizer = {.kind = optim::OptimizerKind::kSgd};
      run.dtype = Dtype::fp16();
      expect_ledger_matches(c.model, run, false);
      run.prefetch = false;
      expect_ledger_matches(c.model, run, false);
    }
  }
  RunShape ckpt;
  ckpt.ranks = 2;
  ckpt.stage = Stage::k2;
  ckpt.micro_batch = 2;
  ckpt.seq_len = 9;
  ckpt.checkpointing = true;
  expect_ledger_matches(odd_gpt(), ckpt, false);
  expect_ledger_matches(model::model_preset("gpt-tiny"), ckpt, false);
  RunShape defaults;  // the engine's default bucket (25 Mi elements)
  defaults.ranks = 2;
  defaults.micro_batch = 2;
  defaults.seq_len = 8;
  expect_ledger_matches(model::model_preset("gpt-tiny"), defaults, false);
}

// Lion (one fp32 momentum, K = 8 mixed / 4 fp32) and SGD with momentum at
// every stage, rank count and precision: `zerodp plan --optimizer lion` and
// the engine's ledger agree byte for byte on every rank.
TEST(PlanVsLedger, LionAndSgdMomentumEveryStageRankCountAndPrecision) {
  const std::vector<optim::OptimizerConfig> optimizers = {parse_optimizer("lion"), parse_optimizer("sgd-momentum"),
                                                          parse_optimizer("lion-bf16")};
  for (const Case& c : {cases()[1], cases()[2]}) {
    for (const optim::OptimizerConfig& optimizer : optimizers) {
      for (Dtype dt : {Dtype::fp32(), Dtype::bf16(), Dtype::fp16()}) {
        for (Stage stage : kAllStages) {
          for (int n = 1; n <= 4; ++n) {
            const RunShape run = run_shape(c, stage, n, dt, optimizer);
            expect_ledger_matches(c.model, run, /*overlap=*/false);
            const RankPrediction p = predict_rank(c.model, run);
            EXPECT_GT(p.adam_m, 0u);  // the momentum is there, and nothing in adam_v
            if (optimizer.lion.bf16_momentum) {
              EXPECT_EQ(p.adam_m % 2, 0u);
            }
            EXPECT_EQ(p.adam_v, 0u);
          }
        }
      }
    }
  }
}

// 8-bit Adam: one byte per element for each moment plus an fp32 scale per
// 2048-element block each unit shard touches (the blocks cut by shard ends
// counted on every rank that holds a part). mlp-small's and gpt-tiny's units
// span many blocks; the odd GPT's are smaller than one. `zerodp plan
// --optimizer adam8bit` and the ledger agree byte for byte on every rank.
// By default the GPTs' embedding unit and the units under 4096 elements
// (the odd GPT's final layernorm, odd MLP's layers) keep AdamW's fp32
// moments (optim::unit_optimizer_config); both ways are checked.
TEST(PlanVsLedger, Adam8bitEveryStageRankCountAndPrecision) {
  optim::OptimizerConfig all8 = parse_optimizer("adam8bit");
  all8.adam.fp32_embedding = false;
  all8.adam.min_8bit_size = 0;
  for (const optim::OptimizerConfig& optimizer : {parse_optimizer("adam8bit"), all8}) {
    for (const Case& c : cases()) {
      for (Dtype dt : {Dtype::fp32(), Dtype::bf16(), Dtype::fp16()}) {
        for (Stage stage : kAllStages) {
          for (int n = 1; n <= 4; ++n) {
            if (c.model.name == "gpt-tiny" && dt == Dtype::fp16()) continue;  // the largest case: two dtypes suffice
            const RunShape run = run_shape(c, stage, n, dt, optimizer);
            expect_ledger_matches(c.model, run, /*overlap=*/false);
            const RankPrediction p = predict_rank(c.model, run);
            EXPECT_EQ(p.adam_m, p.adam_v);
            EXPECT_GT(p.adam_m, p.owned_elements);  // codes plus scales, or fp32 moments
          }
        }
      }
    }
  }
  // The fp32 units cost what the plan says: gpt-tiny's embedding unit and
  // its final layernorm's (under 4096 elements) hold AdamW's 4 bytes per
  // element for each moment instead of 1 plus the block scales.
  const std::vector<Case> all = cases();  // kept: tiny refers into it
  const Case& tiny = all[0];
  const RankPrediction mixed =
      predict_rank(tiny.model, run_shape(tiny, Stage::k0, 1, Dtype::bf16(), parse_optimizer("adam8bit")));
  const RankPrediction pure = predict_rank(tiny.model, run_shape(tiny, Stage::k0, 1, Dtype::bf16(), all8));
  const UnitSchedule schedule = unit_schedule(tiny.model);
  EXPECT_EQ(schedule.embedding_unit, 0);
  uint64_t extra = 0;
  for (size_t u = 0; u < schedule.unit_counts.size(); ++u) {
    const uint64_t c = schedule.unit_counts[u];
    if (u == 0 || c < 4096) extra += 3 * c - 4 * optim::quant8::blocks_touched(0, c).count;
  }
  EXPECT_GT(extra, 3 * schedule.unit_counts[0] / 2);
  EXPECT_EQ(mixed.adam_m - pure.adam_m, extra);
}

// Adafactor: the fp32 row and column statistics of every matrix a unit
// shard touches (a matrix cut by shard ends counted whole on each rank that
// holds a part) and v of the shard's other elements, m with beta1. The plan
// reads the tensors' shapes (gpt_unit_tensors, the MLP's); `zerodp plan
// --optimizer adafactor` and the ledger agree byte for byte on every rank.
TEST(PlanVsLedger, AdafactorEveryStageRankCountAndPrecision) {
  optim::OptimizerConfig with_m = parse_optimizer("adafactor");
  with_m.adafactor = {.beta1 = 0.9, .relative_step = false};
  for (const Case& c : cases()) {
    for (const optim::OptimizerConfig& optimizer : {parse_optimizer("adafactor"), with_m}) {
      for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
        for (Stage stage : kAllStages) {
          for (int n = 1; n <= 4; ++n) {
            if (c.model.name == "gpt-tiny" && (dt == Dtype::fp32() || n == 3)) continue;  // the largest case
            const RunShape run = run_shape(c, stage, n, dt, optimizer);
            expect_ledger_matches(c.model, run, /*overlap=*/false);
            const RankPrediction p = predict_rank(c.model, run);
            if (optimizer.adafactor.beta1 == 0.0) {
              EXPECT_EQ(p.adam_m, 0u);
            }
            EXPECT_GT(p.adam_v, 0u);
          }
        }
      }
    }
  }
}

// --offload-optimizer: the master and the states leave RAM for the store's
// staging buffers (and the optimizers' work buffers), every stage,
// precision and rank count, for each optimizer's extents.
TEST(PlanVsLedger, OffloadEveryStageRankCountAndOptimizer) {
  optim::OptimizerConfig adam8bit = parse_optimizer("adam8bit");
  adam8bit.adam.min_8bit_size = 0;
  optim::OptimizerConfig adafactor = parse_optimizer("adafactor");
  adafactor.adafactor = {.beta1 = 0.9, .relative_step = false};
  optim::OptimizerConfig lion = parse_optimizer("lion");
  lion.lion.bf16_momentum = true;
  for (const Case& c : cases()) {
    if (c.model.name == "gpt-tiny" || c.model.name == "llama-tiny") continue;  // the odd shapes cut more
    for (const optim::OptimizerConfig& optimizer : {parse_optimizer("adamw"), adam8bit, adafactor, lion}) {
      for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
        for (Stage stage : kAllStages) {
          for (int n : {1, 3}) {
            RunShape run = run_shape(c, stage, n, dt, optimizer);
            run.offload_optimizer = true;
            expect_ledger_matches(c.model, run, /*overlap=*/false);
            const RankPrediction p = predict_rank(c.model, run);
            EXPECT_EQ(p.master + p.adam_m, 0u);
            EXPECT_GT(p.offload, 0u);
            EXPECT_GE(p.disk, predict_rank(c.model, run_shape(c, stage, n, dt, optimizer)).master);
          }
        }
      }
    }
  }
}

// The offload file's size and each step's reads and writes, as the plan
// counts the passes, against what the store moved: the fill writes the
// file once, then each step its passes.
TEST(PlanVsLedger, OffloadDiskBytesAndTrafficPerStep) {
  optim::OptimizerConfig adam8bit = parse_optimizer("adam8bit");
  adam8bit.adam.min_8bit_size = 0;
  optim::OptimizerConfig adafactor = parse_optimizer("adafactor");
  adafactor.adafactor = {.beta1 = 0.9, .relative_step = false};
  const Case c = cases()[1];  // odd_gpt
  const auto model = model::make_model(c.model);
  for (const optim::OptimizerConfig& optimizer : {parse_optimizer("adamw"), adam8bit, adafactor}) {
    for (Stage stage : {Stage::k0, Stage::k3}) {
      RunShape run = run_shape(c, stage, 2, Dtype::bf16(), optimizer);
      run.offload_optimizer = true;
      SCOPED_TRACE(describe(c.model, run, false));
      const testing::ScratchDir dir("plan_vs_ledger_traffic");
      zero::EngineConfig ec;
      ec.stage = stage;
      ec.dtype = run.dtype;
      ec.optimizer = optimizer;
      ec.bucket_elements = run.bucket_elements;
      ec.offload_optimizer_dir = dir.path.string();
      comm::run_thread_ranks(2, {}, [&](comm::Communicator& comm) {
        zero::Engine engine(*model, comm, ec, 7, run.micro_batch, run.seq_len);
        const RankPrediction p = predict_rank(c.model, run, comm.rank());
        const zero::OffloadStore& store = *engine.offload_store();
        EXPECT_EQ(store.disk_bytes(), p.disk);
        EXPECT_EQ(store.traffic().bytes_written, p.disk) << "the fill";
        for (int step = 1; step <= 2; ++step) {
          engine.train_step(feeder(c.model, run, comm.rank()));
          EXPECT_EQ(store.traffic().bytes_read, step * p.disk_read_per_step);
          EXPECT_EQ(store.traffic().bytes_written, p.disk + step * p.disk_written_per_step);
        }
      });
    }
  }
}

// --offload-params: stage 3's parameters leave RAM for one staging buffer
// (ledger: offload, beside the states' when they go too), every model,
// precision, rank count, prefetch and hybrid layout.
TEST(PlanVsLedger, OffloadParamsEveryModelPrecisionAndRankCount) {
  for (const Case& c : cases()) {
    for (Dtype dt : {Dtype::bf16(), Dtype::fp16()}) {
      for (int n : {1, 2, 3}) {
        for (bool states : {false, true}) {
          RunShape run = run_shape(c, Stage::k3, n, dt, parse_optimizer("adamw"));
          run.offload_params = true;
          run.offload_optimizer = states;
          run.prefetch = n != 2;
          expect_ledger_matches(c.model, run, /*overlap=*/false);
          const RankPrediction p = predict_rank(c.model, run);
          EXPECT_EQ(p.params, 0u);
          EXPECT_GT(p.param_staging, 0u);
          EXPECT_EQ(p.offload > p.param_staging, states);
        }
      }
    }
  }
  const Case c = cases()[1];
  RunShape hybrid = run_shape(c, Stage::k3, 4, Dtype::bf16(), parse_optimizer("adamw"));
  hybrid.shard_group = 2;
  hybrid.offload_params = true;
  expect_ledger_matches(c.model, hybrid, /*overlap=*/false);
}

// The parameter file's size and each step's reads (one per gather, as the
// gather schedule makes them, per micro-batch) and writes (every shard
// once), against what the store moved: the fill writes the file once.
TEST(PlanVsLedger, OffloadParamsDiskBytesAndTrafficPerStep) {
  for (const Case& c : {cases()[1], cases()[2]}) {
    for (bool prefetch : {true, false}) {
      RunShape run = run_shape(c, Stage::k3, 2, Dtype::bf16(), parse_optimizer("adamw"));
      run.offload_params = true;
      run.prefetch = prefetch;
      run.grad_accum = 2;
      SCOPED_TRACE(describe(c.model, run, false));
      const testing::ScratchDir dir("plan_vs_ledger_param_traffic");
      zero::EngineConfig ec;
      ec.stage = run.stage;
      ec.dtype = run.dtype;
      ec.prefetch = prefetch;
      ec.grad_accum = run.grad_accum;
      ec.offload_params_dir = dir.path.string();
      const auto model = model::make_model(c.model);
      comm::run_thread_ranks(2, {}, [&](comm::Communicator& comm) {
        zero::Engine engine(*model, comm, ec, 7, run.micro_batch, run.seq_len);
        const RankPrediction p = predict_rank(c.model, run, comm.rank());
        const zero::ParamStore& store = *engine.param_store();
        EXPECT_EQ(store.disk_bytes(), p.param_disk);
        EXPECT_EQ(p.disk, p.param_disk);
        EXPECT_EQ(store.traffic().bytes_written, p.param_disk) << "the fill";
        for (int step = 1; step <= 2; ++step) {
          engine.train_step(feeder(c.model, run, comm.rank()));
          EXPECT_EQ(store.traffic().bytes_read, step * p.param_disk_read_per_step);
          EXPECT_EQ(store.traffic().bytes_written, p.param_disk + step * p.param_disk_written_per_step);
        }
      });
    }
  }
}

TEST(PlanVsLedger, WithTheCommThreadBucketsLieBetweenPredictionAndBound) {
  for (const Case& c : {cases()[0], cases()[2]}) {
    for (Stage stage : kAllStages) {
      for (Dtype dt : {Dtype::fp32(), Dtype::bf16()}) {
        RunShape run;
        run.stage = stage;
        run.ranks = 3;
        run.dtype = dt;
        run.micro_batch = c.micro_batch;
        run.seq_len = c.seq_len;
        run.bucket_elements = c.bucket_elements;
        run.grad_accum = 2;
        expect_ledger_matches(c.model, run, /*overlap=*/true);
      }
    }
  }
}

}  // namespace
}  // namespace zerodp::plan
