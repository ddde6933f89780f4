// SPDX-License-Identifier: Apache-2.0
// Shared pieces of the checkpoint tests: a temporary directory, the small
// MLP engine driver of tests/zero, and helpers that gather a rank-sharded
// training state into full tensors (and put one back) so runs can be
// compared bitwise.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "engine_ckpt/engine_checkpoint.h"
#include "model/gpt.h"
#include "support/rank_harness.h"
#include "zero/engine.h"
#include "zero/engine_test_util.h"

namespace zerodp::ckpt::testing {

namespace fs = std::filesystem;

// The tests save and load engines through the engine's adapter
// (engine_ckpt/engine_checkpoint.h).
using engine_ckpt::load;
using engine_ckpt::save;
using zero::testing::mlp_feeder;
using zero::testing::small_mlp;

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "zerodp-ckpt-XXXXXX").string();
    const char* made = ::mkdtemp(pattern.data());
    if (made == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Full (Φ-element) tensors by state name, plus the counters.
struct FullState {
  std::map<std::string, std::vector<float>> tensors;
  zero::Engine::Counters counters;
};

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Where a unit's values start in a full tensor as read_full_tensor lays it
// out (flat elements, or each unit's blocks for a per-block tensor), and the
// full length.
inline size_t tensor_base(const zero::PartitionPlan& plan, size_t unit, const TensorLayout& layout) {
  size_t base = 0;
  for (size_t u = 0; u < unit; ++u) base += tensor_length(plan.unit_count(u), layout);
  return base;
}

// Every rank copies its plan shard (record_range) of every state view into
// `out` (shared by the rank threads; the shards are disjoint, so only
// allocation is locked). One-byte codes are widened to float.
inline void collect_state(zero::Engine& engine, FullState& out, std::mutex& mu) {
  const auto& plan = engine.plan();
  // Hybrid sharding: the plan is the shard group's, and every group holds
  // the same state; group 0 writes it.
  const int rank = engine.shard_rank();
  const bool writes = engine.communicator().rank() < plan.ranks();
  const auto views = engine.state_views();
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& v : views) {
      out.tensors[v.name].resize(tensor_base(plan, plan.num_units(), tensor_layout(v.name)));
    }
    if (rank == 0) out.counters = engine.counters();
  }
  engine.communicator().barrier();
  for (const auto& v : (writes ? views : decltype(views){})) {
    const TensorLayout l = tensor_layout(v.name);
    const comm::ShardRange own = record_range(plan.unit_count(v.unit), plan.ranks(), rank, l);
    float* dst = out.tensors.at(v.name).data() + tensor_base(plan, v.unit, l) + own.offset;
    for (size_t i = 0; i < own.count; ++i) {
      const size_t k = own.offset - v.range.offset + i;
      dst[i] = l.value_bytes == 1 ? static_cast<float>(v.codes[k]) : v.data[k];
    }
  }
  engine.communicator().barrier();
}

// The reverse: fills the engine's views from full tensors (what a run that
// "starts from this state" does without any checkpoint file).
inline void fill_state(zero::Engine& engine, const FullState& state) {
  const auto& plan = engine.plan();
  for (const auto& v : engine.state_views()) {
    const TensorLayout l = tensor_layout(v.name);
    const float* src = state.tensors.at(v.name).data() + tensor_base(plan, v.unit, l) + v.range.offset;
    for (size_t k = 0; k < v.range.count; ++k) {
      if (l.value_bytes == 1) {
        v.codes[k] = static_cast<uint8_t>(src[k]);
      } else {
        v.data[k] = src[k];
      }
    }
  }
  engine.state_loaded(state.counters);
}

inline bool same_state(const FullState& a, const FullState& b, std::string* why = nullptr) {
  if (a.tensors.size() != b.tensors.size()) {
    if (why) *why = "different tensor sets";
    return false;
  }
  for (const auto& [name, t] : a.tensors) {
    if (!b.tensors.count(name) || !bitwise_equal(t, b.tensors.at(name))) {
      if (why) *why = "tensor " + name + " differs";
      return false;
    }
  }
  if (a.counters.steps != b.counters.steps || a.counters.optimizer_steps != b.counters.optimizer_steps ||
      !(a.counters.scaler == b.counters.scaler)) {
    if (why) *why = "counters differ";
    return false;
  }
  return true;
}

// Trains `count` steps with the data of steps data_step, data_step + 1, ...
// (the trainer's counter: skipped fp16 steps advance it too); appends losses.
inline void train_steps(zero::Engine& engine, int micro_batch, int count, std::vector<double>& losses,
                        int64_t& data_step) {
  int64_t step = data_step;
  const zero::BatchFeeder feed = mlp_feeder(step, engine.communicator().rank(), micro_batch);
  for (int i = 0; i < count; ++i, ++step) losses.push_back(engine.train_step(feed).loss);
  data_step = step;
}
inline void train_steps(zero::Engine& engine, int micro_batch, int count, std::vector<double>& losses) {
  int64_t data_step = engine.steps_taken();
  train_steps(engine, micro_batch, count, losses, data_step);
}

// An engine config that exercises the step counter (a warm-up schedule) and
// the optimizer state.
inline zero::EngineConfig test_config(int stage, Dtype dtype = Dtype::fp32()) {
  zero::EngineConfig c;
  c.stage = parse_stage(stage, "test");
  c.dtype = dtype;
  c.optimizer.kind = optim::OptimizerKind::kAdamW;
  c.optimizer.adam.weight_decay = 0.01;
  c.lr_schedule.kind = optim::LrScheduleKind::kWarmupLinearDecay;
  c.lr_schedule.max_lr = 1e-2;
  c.lr_schedule.warmup_steps = 3;
  c.lr_schedule.total_steps = 40;
  return c;
}

// test_config with Lion (and the schedule's peak 3x below AdamW's).
inline zero::EngineConfig lion_config(int stage, Dtype dtype = Dtype::fp32()) {
  zero::EngineConfig c = test_config(stage, dtype);
  c.optimizer.kind = optim::OptimizerKind::kLion;
  c.optimizer.lion = {.beta1 = 0.9, .beta2 = 0.99, .weight_decay = 0.1};
  c.lr_schedule.max_lr = 3e-3;
  return c;
}

// test_config with 8-bit Adam (AdamW's settings).
// Every unit 8-bit (small_mlp's units are all under the default
// min_8bit_size): the checkpoints of format version 2.
inline zero::EngineConfig adam8bit_config(int stage, Dtype dtype = Dtype::fp32()) {
  zero::EngineConfig c = test_config(stage, dtype);
  c.optimizer.kind = optim::OptimizerKind::kAdam8bit;
  c.optimizer.adam.min_8bit_size = 0;
  return c;
}
// small_mlp's first unit (221 elements) 8-bit, the other two (162 and 50)
// in AdamW's fp32 moments: per-unit tensors, format version 3.
inline zero::EngineConfig adam8bit_mixed_config(int stage, Dtype dtype = Dtype::fp32()) {
  zero::EngineConfig c = adam8bit_config(stage, dtype);
  c.optimizer.adam.min_8bit_size = 200;
  return c;
}

// test_config with Adafactor: Hugging Face's defaults (relative steps, no
// m; the schedule is not read), or the schedule's rate with beta1's m.
inline zero::EngineConfig adafactor_config(int stage, Dtype dtype = Dtype::fp32(), bool with_m = false) {
  zero::EngineConfig c = test_config(stage, dtype);
  c.optimizer.kind = optim::OptimizerKind::kAdafactor;
  if (with_m) {
    c.optimizer.adafactor = {.beta1 = 0.9, .weight_decay = 0.01, .relative_step = false};
  }
  return c;
}

inline constexpr int kMicro = 4;
inline constexpr uint64_t kSeed = 42;

// Reads a whole file.
inline std::vector<char> read_bytes(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  std::vector<char> out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  (void)std::fclose(f);  // read only: nothing to lose
  return out;
}
inline void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << "cannot write " << path;
  const bool written = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  EXPECT_TRUE(std::fclose(f) == 0 && written) << "cannot write " << path;
}

// A safetensors file read whole: its JSON header and its data bytes.
// NOLINTNEXTLINE(bugprone-exception-escape): json's moves do not throw
struct Safetensors {
  nlohmann::json header;
  std::vector<char> data;
};

inline Safetensors parse_safetensors(const std::string& path) {
  const auto bytes = read_bytes(path);
  EXPECT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  Safetensors s;
  s.header = nlohmann::json::parse(std::string(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(n)));
  s.data.assign(bytes.begin() + 8 + static_cast<long>(n), bytes.end());
  return s;
}

// Tensor `name` of an F32 file.
inline std::vector<float> tensor(const Safetensors& s, const std::string& name) {
  const auto& t = s.header.at(name);
  EXPECT_EQ(t.at("dtype"), "F32") << name;
  const size_t b = t.at("data_offsets")[0], e = t.at("data_offsets")[1];
  std::vector<float> out((e - b) / 4);
  std::memcpy(out.data(), s.data.data() + b, e - b);
  return out;
}

// Trains one step of `g` on `ranks` ranks at `stage` in `dtype` (fixed
// tokens), saves it to `path` and returns the master weights.
inline std::vector<float> save_trained_gpt(const model::GptConfig& g, int ranks, int stage, Dtype dtype,
                                           const std::string& path) {
  const model::Gpt gpt(g);
  std::vector<float> master;
  zerodp::testing::run_on_ranks(ranks, [&](comm::Communicator& comm) {
    zero::Engine engine(gpt, comm, test_config(stage, dtype), kSeed, 2, 8);
    std::vector<int32_t> tokens(16), targets(16);
    for (int i = 0; i < 16; ++i) tokens[i] = (i * 7 + comm.rank()) % g.vocab, targets[i] = (i * 3 + 1) % g.vocab;
    const zero::BatchFeeder feed = [&](model::Workspace& ws, int) {
      model::Batch b;
      b.tokens = tokens;
      b.targets = targets;
      ws.set_batch(b);
    };
    engine.train_step(feed);
    auto m = engine.gather_master_params();
    if (comm.rank() == 0) master = m;
    save(engine, path);
  });
  return master;
}

}  // namespace zerodp::ckpt::testing
