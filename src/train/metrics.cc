// SPDX-License-Identifier: Apache-2.0
#include "train/metrics.h"

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "zero/engine.h"

namespace zerodp::train {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  ZDP_CHECK(out_.good(), ConfigError, "[metrics] cannot create '{}': check that its folder exists and is writable",
            path);
}

namespace {

// The lines of the metrics file at `path` that a run resumed after
// `resumed_step` keeps (metrics.h); ConfigError naming the first line that is
// not a record (but a last line cut short, which a crash leaves).
std::vector<std::string> lines_before_resume(const std::string& path, int64_t resumed_step) {
  std::ifstream in(path);
  ZDP_CHECK(in.good(), ConfigError, "[metrics] cannot read '{}' to continue it: check its permissions", path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(std::move(line));
  }
  std::vector<std::string> kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json j = nlohmann::json::parse(lines[i], nullptr, /*allow_exceptions=*/false);
    const bool last = i + 1 == lines.size();
    if (j.is_discarded() && last) break;
    const auto step = j.is_object() ? j.find("step") : j.end();
    const report::RecordKind kind = j.is_object() ? report::record_kind(j) : report::RecordKind::step;
    ZDP_CHECK(j.is_object() && (kind != report::RecordKind::step || (step != j.end() && step->is_number_integer())),
              ConfigError,
              "[metrics] '{}' line {} is not a record of a zerodp metrics file, which a resumed run continues: give "
              "--metrics another path, or move that file away",
              path, i + 1);
    if (kind == report::RecordKind::config ||
        (kind == report::RecordKind::step && step->get<int64_t>() <= resumed_step)) {
      kept.push_back(std::move(lines[i]));
    }
  }
  return kept;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& path, int64_t resumed_step) : path_(path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    const std::vector<std::string> kept = lines_before_resume(path, resumed_step);
    // Written beside it and renamed over it: a crash between leaves one of the two whole.
    const std::string staged = path + ".resuming";
    {
      std::ofstream out(staged, std::ios::trunc);
      for (const std::string& line : kept) out << line << '\n';
      out.flush();
      ZDP_CHECK(out.good(), IoError, "[metrics] writing '{}' failed (disk full?)", staged);
    }
    std::filesystem::rename(staged, path, ec);
    ZDP_CHECK(!ec, IoError, "[metrics] cannot replace '{}' with '{}' ({})", path, staged, ec.message());
  }
  out_.open(path, std::ios::app);
  ZDP_CHECK(out_.good(), ConfigError, "[metrics] cannot open '{}' to continue it: check that it is writable", path);
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
    if (m.disk > 0) r.disk = report::DiskBytes{m.disk, m.disk_read, m.disk_written};
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
      r[std::string(comm::collective_name(kind))] = {s[kind].calls, s[kind].bytes_sent, s[kind].bytes_received,
                                                     s[kind].seconds};
    }
  }
  return ranks;
}

report::StepRecord step_record(int64_t step, const zero::StepResult& r, double seconds, double tokens_per_step,
                               double val_loss, const AllRankFigures& figures) {
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
  // Every position of the step's micro-batches has a target, masked or not.
  rec.masked_tokens = static_cast<int64_t>(figures.masked_targets);
  rec.trained_tokens = static_cast<int64_t>(tokens_per_step) - *rec.masked_tokens;
  rec.memory = memory_records(figures.memory);
  rec.comm = comm_records(figures.step_comm);
  rec.cpu_seconds = figures.step_cpu_seconds;
  rec.comm_cpu_seconds = figures.step_comm_cpu_seconds;
  rec.comm_wait_seconds = figures.step_comm_wait_seconds;
  rec.runqueue_seconds = figures.step_runqueue_seconds;
  return rec;
}

}  // namespace zerodp::train
