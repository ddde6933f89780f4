// SPDX-License-Identifier: Apache-2.0
#include "train/metrics.h"

#include "core/error.h"
#include "zero/engine.h"

namespace zerodp::train {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  ZDP_CHECK(out_.good(), ConfigError, "[metrics] cannot create '{}': check that its folder exists and is writable",
            path);
}

void MetricsWriter::write(const report::StepRecord& record) { write(report::to_json(record)); }

void MetricsWriter::write(const report::FinalRecord& record) { write(report::to_json(record)); }

void MetricsWriter::write(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
  ZDP_CHECK(out_.good(), IoError, "[metrics] writing '{}' failed (disk full?)", path_);
}

std::vector<report::RankMemoryRecord> memory_records(const std::vector<RankMemory>& memory) {
  std::vector<report::RankMemoryRecord> ranks;
  ranks.reserve(memory.size());
  for (const RankMemory& m : memory) {
    report::RankMemoryRecord& r = ranks.emplace_back();
    for (size_t c = 0; c < zero::kNumMemoryCategories; ++c) {
      const auto name = std::string(zero::memory_category_name(static_cast<zero::MemoryCategory>(c)));
      r.categories[name] = {m.current[c], m.peak[c]};
    }
    r.model_states = m.model_states;
  }
  return ranks;
}

std::vector<report::RankCommRecord> comm_records(const std::vector<comm::CommStats>& step_comm) {
  std::vector<report::RankCommRecord> ranks;
  ranks.reserve(step_comm.size());
  for (const comm::CommStats& s : step_comm) {
    report::RankCommRecord& r = ranks.emplace_back();
    for (int k = 0; k < comm::kNumCollectives; ++k) {
      const auto kind = static_cast<comm::Collective>(k);
      if (s[kind].calls == 0) continue;
      r[std::string(comm::collective_name(kind))] = {s[kind].calls, s[kind].bytes_sent, s[kind].bytes_received};
    }
  }
  return ranks;
}

report::StepRecord step_record(int64_t step, const zero::StepResult& r, double seconds, double tokens_per_step,
                               double val_loss, const std::vector<RankMemory>& memory,
                               const std::vector<comm::CommStats>& step_comm) {
  report::StepRecord rec;
  rec.step = step;
  rec.loss = r.loss;
  if (val_loss >= 0) rec.val_loss = val_loss;
  rec.lr = r.lr;
  if (!r.skipped) rec.grad_norm = r.grad_norm;
  rec.loss_scale = r.loss_scale;
  rec.skipped = r.skipped;
  rec.clipped = r.clipped;
  rec.tokens_per_s = tokens_per_step / seconds;
  rec.step_seconds = seconds;
  rec.memory = memory_records(memory);
  rec.comm = comm_records(step_comm);
  return rec;
}

}  // namespace zerodp::train
