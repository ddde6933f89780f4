// SPDX-License-Identifier: Apache-2.0
// MetricsWriter: the --metrics file, JSON Lines, one object per step:
// step, loss, val_loss (when computed), lr, grad_norm (unscaled, before
// clipping), loss_scale, skipped, tokens_per_s, memory (per rank, by ledger
// category: current and peak bytes) and comm (per rank, bytes sent and
// received per collective in this step). Flushed every line, so a crash
// loses at most the line being written.
// Thread-safety: rank 0's thread only.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "train/summary.h"

namespace zerodp::train {

class MetricsWriter {
 public:
  // Opens (truncates) path; ConfigError when it cannot be created.
  explicit MetricsWriter(const std::string& path);
  void write(const nlohmann::json& record);

 private:
  std::string path_;
  std::ofstream out_;
};

nlohmann::json memory_json(const std::vector<RankMemory>& memory);
nlohmann::json comm_json(const std::vector<comm::CommStats>& step_comm);

}  // namespace zerodp::train
