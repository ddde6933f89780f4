// SPDX-License-Identifier: Apache-2.0
#include "train/metrics.h"

#include "core/error.h"

namespace zerodp::train {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  ZDP_CHECK(out_.good(), ConfigError, "[metrics] cannot create '{}': check that its folder exists and is writable",
            path);
}

void MetricsWriter::write(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
  ZDP_CHECK(out_.good(), IoError, "[metrics] writing '{}' failed (disk full?)", path_);
}

nlohmann::json memory_json(const std::vector<RankMemory>& memory) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const RankMemory& m : memory) {
    nlohmann::json r;
    for (size_t c = 0; c < zero::kNumMemoryCategories; ++c) {
      const auto name = std::string(zero::memory_category_name(static_cast<zero::MemoryCategory>(c)));
      r[name] = {{"current", m.current[c]}, {"peak", m.peak[c]}};
    }
    r["model_states"] = m.model_states;
    ranks.push_back(r);
  }
  return ranks;
}

nlohmann::json comm_json(const std::vector<comm::CommStats>& step_comm) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const comm::CommStats& s : step_comm) {
    nlohmann::json r;
    for (int k = 0; k < comm::kNumCollectives; ++k) {
      const auto kind = static_cast<comm::Collective>(k);
      if (s[kind].calls == 0) continue;
      r[std::string(comm::collective_name(kind))] = {
          {"calls", s[kind].calls}, {"bytes_sent", s[kind].bytes_sent}, {"bytes_received", s[kind].bytes_received}};
    }
    ranks.push_back(r);
  }
  return ranks;
}

}  // namespace zerodp::train
