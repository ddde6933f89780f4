// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the engine tests: a learnable synthetic classification
// task for the MLP whose global batch depends only on (seed, step, micro),
// and a driver that trains on N thread ranks and returns what rank 0 saw.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "comm/quantize.h"
#include "comm/shard.h"
#include "comm/world.h"
#include "model/mlp.h"
#include "zero/engine.h"

namespace zerodp::zero::testing {

inline constexpr int kInputs = 12;
inline constexpr int kClasses = 5;

inline model::MlpConfig small_mlp() {
  // Odd widths: Φ = 12*17+17 + 17*9+9 + 9*5+5 = 433, prime-ish and not
  // divisible by 2, 3 or 4.
  return model::MlpConfig{{kInputs, 17, 9, kClasses}, model::MlpHead::kClassification};
}

// Sample i of the global batch of (step, micro): features in [-1, 1), the
// label is the argmax of a fixed linear map, so the task is learnable.
struct Sample {
  std::vector<float> x;
  int32_t label;
};
inline Sample make_sample(uint64_t step, int micro, int index) {
  std::mt19937_64 rng((step * 131 + micro) * 1000003 + index);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Sample s{std::vector<float>(kInputs), 0};
  float best = -1e30f;
  for (int c = 0; c < kClasses; ++c) {
    float score = 0;
    for (int i = 0; i < kInputs; ++i) {
      if (c == 0) s.x[i] = u(rng);
      score += s.x[i] * static_cast<float>(((c * 7 + i * 3) % 5) - 2);
    }
    if (score > best) best = score, s.label = c;
  }
  return s;
}

// Changes sample `index` (0..b-1 within the rank) of `step` before it is fed.
using SampleEdit = std::function<void(Sample& sample, int64_t step, int index)>;

// The feeder for rank `rank` of `ranks`, micro-batch size b: rank r takes
// samples [r*b, (r+1)*b) of the global batch of b*ranks samples.
// Loads b samples, sample(i) for i < b, as one MLP micro-batch.
inline void set_mlp_batch(model::Workspace& ws, int b, const std::function<Sample(int)>& sample) {
  std::vector<float> x;
  std::vector<int32_t> y;
  for (int i = 0; i < b; ++i) {
    const Sample s = sample(i);
    x.insert(x.end(), s.x.begin(), s.x.end());
    y.push_back(s.label);
  }
  model::Batch batch;
  batch.features = x;
  batch.targets = y;
  ws.set_batch(batch);
}

inline BatchFeeder mlp_feeder(const int64_t& step, int rank, int b, const SampleEdit& edit = {}) {
  return [&step, rank, b, edit](model::Workspace& ws, int micro) {
    set_mlp_batch(ws, b, [&](int i) {
      Sample s = make_sample(static_cast<uint64_t>(step), micro, rank * b + i);
      if (edit) edit(s, step, i);
      return s;
    });
  };
}

// A fixed global batch: rank r's micro-batch m is global micro-batch
// m * ranks + r of b samples (train/sampler.h's assignment), whatever N is.
inline BatchFeeder global_batch_feeder(const int64_t& step, int rank, int ranks, int b) {
  return [&step, rank, ranks, b](model::Workspace& ws, int micro) {
    const int global = micro * ranks + rank;
    set_mlp_batch(ws, b, [&](int i) { return make_sample(static_cast<uint64_t>(step), 0, global * b + i); });
  };
}

struct RunResult {
  std::vector<double> losses;              // per step, as rank 0 saw them
  std::vector<float> master;               // final fp32 master params (rank 0)
  std::vector<float> params;               // final compute params widened (rank 0)
  std::vector<LedgerSnapshot> ledgers;     // per rank, after the run
  std::vector<comm::CommStats> step_comm;  // per rank, bytes of the last step
  std::vector<size_t> owned;               // per rank, owned element count
  size_t num_params = 0;
};

// Trains `steps` steps of the small MLP on n thread ranks.
inline RunResult train_mlp(int n, const EngineConfig& config, int steps, int micro_batch = 4,
                           const model::MlpConfig& mlp_config = small_mlp(),
                           const std::function<void(Engine&, int64_t)>& before_step = {}) {
  model::Mlp mlp(mlp_config);
  RunResult result;
  result.ledgers.resize(n);
  result.step_comm.resize(n);
  result.owned.resize(n);
  comm::run_thread_ranks(n, {}, [&](comm::Communicator& comm) {
    Engine engine(mlp, comm, config, /*seed=*/42, micro_batch, 1);
    int64_t step = 0;
    const BatchFeeder feed = mlp_feeder(step, comm.rank(), micro_batch);
    std::vector<double> losses;
    for (step = 0; step < steps; ++step) {
      if (before_step) before_step(engine, step);
      const comm::CommStats before = comm.stats();
      losses.push_back(engine.train_step(feed).loss);
      result.step_comm[comm.rank()] = comm.stats() - before;
    }
    result.ledgers[comm.rank()] = engine.ledger().snapshot();
    result.owned[comm.rank()] = engine.plan().owned_count(engine.shard_rank());
    auto master = engine.gather_master_params();
    auto params = engine.gather_params();
    if (comm.rank() == 0) {
      result.losses = losses;
      result.master = std::move(master);
      result.params = std::move(params);
      result.num_params = mlp.num_params();
    }
  });
  return result;
}

// Two runs gave the same bits: every loss, the master weights and the
// compute parameters (bits, not values: -0.0 against 0.0 or a NaN's payload
// would differ).
// Whether two runs have the same losses and final master weights, bit for
// bit (expect_same_bits says where they differ).
inline bool same_run_bits(const RunResult& a, const RunResult& b) {
  return a.losses.size() == b.losses.size() &&
         std::memcmp(a.losses.data(), b.losses.data(), a.losses.size() * sizeof(double)) == 0 &&  // NOLINT
         a.master.size() == b.master.size() &&
         std::memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)) == 0;
}

inline void expect_same_bits(const RunResult& a, const RunResult& b, const std::string& what) {
  ASSERT_EQ(a.losses.size(), b.losses.size()) << what;
  for (size_t i = 0; i < a.losses.size(); ++i) {
    // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
    ASSERT_EQ(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)), 0)
        << what << ": loss of step " << i << " " << a.losses[i] << " vs " << b.losses[i];
  }
  ASSERT_EQ(a.master.size(), b.master.size()) << what;
  ASSERT_EQ(std::memcmp(a.master.data(), b.master.data(), a.master.size() * sizeof(float)), 0)
      << what << ": master weights differ";
  ASSERT_EQ(std::memcmp(a.params.data(), b.params.data(), a.params.size() * sizeof(float)), 0)
      << what << ": parameters differ";
}

// The hybrid-sharding tests' run: AdamW with decay, lr 3e-3, an fp16 scale
// of 1024, N/G groups of `group` ranks.
inline EngineConfig hybrid_config(int stage, Dtype dtype, int group, int grad_accum = 1) {
  EngineConfig c;
  c.stage = parse_stage(stage, "test");
  c.dtype = dtype;
  c.grad_accum = grad_accum;
  c.shard_group_size = group;
  c.optimizer.kind = optim::OptimizerKind::kAdamW;
  c.optimizer.adam.weight_decay = 0.01;
  c.lr_schedule.max_lr = 3e-3;
  c.loss_scaler.initial_scale = 1024.0;
  return c;
}

// How often stage 3 gathers op_index's unit per micro-batch: once going
// forward, and once going backward unless the op is the last one (the
// backward's first op keeps the forward's gather) or its backward reads no
// parameters (model::Op::backward_reads_params).
inline int stage3_gathers(const model::Model& model, size_t op_index) {
  const auto& ops = model.ops();
  const bool backward = ops[op_index].backward_reads_params && op_index + 1 != ops.size();
  return backward ? 2 : 1;
}

// Elements stage 3 gathers per micro-batch, every op's unit by stage3_gathers.
inline double stage3_gathered_elements(const model::Model& model) {
  double elements = 0;
  for (size_t i = 0; i < model.ops().size(); ++i) {
    elements += stage3_gathers(model, i) * static_cast<double>(model.units()[model.ops()[i].unit].count);
  }
  return elements;
}

// Where the model's tensors start inside unit u, unit-relative, ascending.
inline std::vector<uint64_t> unit_tensor_starts(const model::Model& m, size_t u) {
  const model::UnitInfo& unit = m.units()[u];
  std::vector<uint64_t> starts;
  for (const model::TensorInfo& t : m.tensors()) {
    if (t.offset >= unit.offset && t.offset < unit.offset + unit.count) starts.push_back(t.offset - unit.offset);
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

// docs/comm.md: rank k's packed shard of unit u is 4 bytes per block plus
// c code bytes (int8) or ceil(c / 2) (int4), where the shard is cut at
// every tensor start inside it and each piece into blocks of `block`.
inline uint64_t packed_unit_shard(const model::Model& m, size_t u, int n, int k, comm::Quantization q, uint64_t block) {
  const comm::ShardRange s = comm::shard_range(m.units()[u].count, n, k);
  std::vector<uint64_t> cuts = {s.offset};
  for (const uint64_t t : unit_tensor_starts(m, u)) {
    if (t > s.offset && t < s.offset + s.count) cuts.push_back(t);
  }
  cuts.push_back(s.offset + s.count);
  uint64_t blocks = 0;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) blocks += (cuts[i + 1] - cuts[i] + block - 1) / block;
  return 4 * blocks + (q == comm::Quantization::kInt4 ? (s.count + 1) / 2 : s.count);
}

}  // namespace zerodp::zero::testing
