// SPDX-License-Identifier: Apache-2.0
// The run settings as their consumers see them: what a checkpoint records
// (the resume table's JSON, by setting name: older checkpoints are read by
// these names and shapes), what the effective configuration prints, and a
// resume taking back every recorded setting. Pinned for a run of each
// optimizer and the engine's optional parts, so that moving a setting's
// declaration cannot change what is written or printed.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "core/error.h"
#include "train/ds_config.h"
#include "train/effective_config.h"
#include "train/resume_config.h"
#include "train/settings.h"

namespace zerodp::train {
namespace {

constexpr int kRanks = 2;

TrainConfig resolved(TrainConfig c) {
  apply_data_defaults(c);
  resolve_batch(c, kRanks);
  return c;
}

std::string recorded(const TrainConfig& c) { return run_record(c, DataFingerprint{}, kRanks).at("train_config"); }

std::string printed(const TrainConfig& c) { return format_effective_config(effective_settings(c, kRanks)); }

std::string record_of(const TrainConfig& c) {
  return effective_config_record(effective_settings(c, kRanks)).at("config").dump();
}

struct Case {
  const char* name;
  TrainConfig config;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"default", resolved(TrainConfig{})});
  {
    TrainConfig c;
    c.engine.optimizer.kind = optim::OptimizerKind::kSgd;
    c.engine.optimizer.sgd.momentum = 0.9;
    c.sources["optimizer"] = "flag --optimizer";
    c.sources["momentum"] = "flag --momentum";
    c.engine.stage = Stage::k0;
    c.engine.dtype = Dtype::fp16();
    c.data = "corpus.txt";
    c.val_data = "val.txt";
    c.tokenizer = "gpt2";
    out.push_back({"sgd-stage0-fp16", resolved(c)});
  }
  {
    TrainConfig c;
    c.engine.optimizer.kind = optim::OptimizerKind::kLion;
    c.engine.optimizer.lion.bf16_momentum = true;
    c.engine.optimizer.lion.momentum_rounding = optim::RoundingMode::kStochastic;
    c.engine.optimizer.lion.beta2 = 0.99;
    c.engine.lr_schedule.kind = optim::LrScheduleKind::kWarmupLinearDecay;
    c.engine.quantize_grads = comm::Quantization::kInt4;
    c.engine.quantize_block = 64;
    c.engine.shard_group_size = 2;
    out.push_back({"lion-bf16-int4", resolved(c)});
  }
  {
    TrainConfig c;
    optim::AdafactorConfig& a = c.engine.optimizer.adafactor;
    c.engine.optimizer.kind = optim::OptimizerKind::kAdafactor;
    a.relative_step = false;
    c.engine.lr_schedule.max_lr = 1e-3;
    a.beta1 = 0.5;
    a.eps1 = 1e-29;
    c.engine.lr_schedule.kind = optim::LrScheduleKind::kConstant;
    c.engine.quantize_weights = comm::Quantization::kInt8;
    c.engine.quantize_rounding = RoundingMode::kStochastic;
    c.engine.quantize_delay = 7;
    out.push_back({"adafactor-lr-qw", resolved(c)});
  }
  {
    TrainConfig c;
    c.engine.optimizer.kind = optim::OptimizerKind::kAdafactor;
    c.engine.lr_schedule.kind = optim::LrScheduleKind::kWarmup;
    out.push_back({"adafactor-relative", resolved(c)});
  }
  {
    TrainConfig c;
    c.engine.optimizer.kind = optim::OptimizerKind::kAdam8bit;
    c.engine.optimizer.adam.min_8bit_size = 100;
    c.engine.dtype = Dtype::fp16();
    c.engine.loss_scaler.mode = optim::LossScaleMode::kStatic;
    c.engine.loss_scaler.initial_scale = 1024;
    c.activation_checkpointing = true;
    out.push_back({"adam8bit-static-scale", resolved(c)});
  }
  {
    TrainConfig c;
    apply_deepspeed_config(R"({"train_batch_size": 8, "gradient_accumulation_steps": 2,
        "zero_optimization": {"stage": 1, "reduce_bucket_size": "auto"},
        "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": 0.1}},
        "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 500, "warmup_num_steps": 10}}})",
                           "ds.json", c, [](const std::string&) {});
    c.sources["steps"] = "flag --steps";
    out.push_back({"deepspeed", resolved(c)});
  }
  return out;
}

// What a checkpoint records, the printed effective configuration and the
// metrics file's record of it, for every case; and --resume-override's names.
std::string characterization() {
  std::string out;
  for (const Case& k : cases()) {
    out += fmt::format("=== {}\n{}\n{}{}\n", k.name, recorded(k.config), printed(k.config), record_of(k.config));
  }
  std::vector<std::string> names = overridable_settings();
  std::sort(names.begin(), names.end());
  return out + fmt::format("overridable: {}\n", fmt::join(names, " "));
}

// As they were before the settings registry (settings_golden.txt): a
// checkpoint's record is a format older checkpoints are read by.
TEST(Settings, RecordAndEffectiveConfigurationAreUnchanged) {
  std::ifstream in(ZERODP_SETTINGS_GOLDEN);
  ASSERT_TRUE(in.good()) << ZERODP_SETTINGS_GOLDEN;
  std::stringstream golden;
  golden << in.rdbuf();
  const std::string now = characterization();
  if (now != golden.str()) std::printf("%s", now.c_str());  // to compare, or to replace the file when intended
  EXPECT_EQ(now, golden.str());
}

// A resume with no flags given takes every recorded setting back: the same
// record and the same printed values, now sourced "checkpoint".
TEST(Settings, AResumeTakesBackEveryRecordedSetting) {
  for (const Case& k : cases()) {
    ckpt::Manifest m;
    m.data_step = 1;
    m.ranks = kRanks;
    m.model_json = k.config.model;
    m.metadata["train_config"] = recorded(k.config);
    TrainConfig c;
    apply_checkpoint_config(c, m, "ckpt");
    EXPECT_EQ(recorded(resolved(c)), recorded(k.config)) << k.name;
  }
}

// The rows' own promises: one row per name; a flag spelled as its setting
// (TrainConfig::sources keys a flag's setting by its name without dashes);
// whatever a resume or a flag sets has a setter; a count's flag refuses 0.
TEST(Settings, RowsAreConsistent) {
  std::set<std::string_view> names;
  for (const SettingRow& row : settings()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_EQ(find_setting(row.name), &row);
    if (row.recorded()) {
      EXPECT_TRUE(row.get && row.set) << row.name;
    }
    if (row.flag.spelling.empty()) continue;
    EXPECT_EQ(row.flag.spelling, "--" + std::string(row.name));
    EXPECT_FALSE(row.flag.help.empty()) << row.name;
    EXPECT_TRUE(row.get && row.set) << row.name;
  }
  EXPECT_EQ(find_setting("no-such-setting"), nullptr);

  // The DeepSpeed reader sets a direct key through one row: two rows that
  // share a key each say for which configurations it is theirs.
  std::map<std::string_view, int> rows_of_key;
  for (const SettingRow& row : settings()) {
    if (row.flag.ds.direct) ++rows_of_key[row.flag.ds.path];
    EXPECT_TRUE(!row.flag.ds.direct || row.set) << row.name;
  }
  for (const SettingRow& row : settings()) {
    if (row.flag.ds.direct && rows_of_key[row.flag.ds.path] > 1) {
      EXPECT_NE(row.flag.ds.applies, nullptr) << row.name << " shares " << row.flag.ds.path;
    }
  }

  TrainConfig c;
  // Each row's own check: the defaults pass, a value outside the bounds
  // (each of a pair's two) is refused naming the setting.
  EXPECT_NO_THROW(check_setting_values(c));
  TrainConfig bad_eps;
  bad_eps.engine.optimizer.adafactor.eps2 = -1e-3;
  try {
    check_setting_values(bad_eps);
    ADD_FAILURE() << "a negative Adafactor eps2 passed";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "--adafactor-eps (optimizer.params.eps in --config) 1e-30,-0.001 must each be >= 0, e.g. 1e-30,1e-3"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(check_setting_values([] {
                 TrainConfig nan_lr;
                 nan_lr.engine.lr_schedule.max_lr = std::nan("");
                 return nan_lr;
               }()),
               ConfigError);
  EXPECT_THROW(set_from_flag(*find_setting("micro-batch"), c, 0), ConfigError);
  set_from_flag(*find_setting("micro-batch"), c, 4);
  EXPECT_EQ(c.micro_batch, 4);
  set_from_flag(*find_setting("grad-accum"), c, 3);
  EXPECT_EQ(c.engine.grad_accum, 3);
  EXPECT_TRUE(c.grad_accum_given);
}

}  // namespace
}  // namespace zerodp::train
