// SPDX-License-Identifier: Apache-2.0
#include "report/metrics_record.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zerodp::report {
namespace {

using nlohmann::json;

// ---- writing ----

json number_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json memory_json(const std::vector<RankMemoryRecord>& memory) {
  json ranks = json::array();
  for (const RankMemoryRecord& m : memory) {
    json r = json::object();
    for (const auto& [name, bytes] : m.categories) r[name] = {{"current", bytes.current}, {"peak", bytes.peak}};
    if (m.model_states) r["model_states"] = *m.model_states;
    if (m.disk) r["disk"] = {{"bytes", m.disk->bytes}, {"read", m.disk->read}, {"written", m.disk->written}};
    ranks.push_back(std::move(r));
  }
  return ranks;
}

json comm_json(const std::vector<RankCommRecord>& comm) {
  json ranks = json::array();
  for (const RankCommRecord& c : comm) {
    json r = json::object();
    for (const auto& [name, b] : c) {
      r[name] = {{"calls", b.calls}, {"bytes_sent", b.bytes_sent}, {"bytes_received", b.bytes_received}};
      if (b.seconds) r[name]["seconds"] = *b.seconds;
    }
    ranks.push_back(std::move(r));
  }
  return ranks;
}

// ---- reading ----

// `shown` names the key in messages ("loss", "final.val_loss").
std::optional<double> number_or_null(const json& obj, const char* key, std::string_view shown, const RecordPlace& at) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) record_error(at, fmt::format("\"{}\" must be a number or null, got {}", shown, it->dump()));
  const double v = it->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<double> number_or_null(const json& obj, const char* key, const RecordPlace& at) {
  return number_or_null(obj, key, key, at);
}

uint64_t byte_count(const json& v, const std::string& what, const RecordPlace& at) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    record_error(at, fmt::format("{} must be a non-negative integer, got {}", what, v.dump()));
  }
  return v.get<uint64_t>();
}

// An optional count: absent or null is nullopt; anything but a
// non-negative integer is refused.
std::optional<int64_t> count_or_null(const json& obj, const char* key, const RecordPlace& at) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    record_error(at, fmt::format("\"{}\" must be a count (an integer >= 0), got {}", key, it->dump()));
  }
  return it->get<int64_t>();
}

// Per-rank seconds: absent or null is empty; anything but an array of
// numbers is refused.
std::vector<double> per_rank_seconds(const json& obj, const char* key, const RecordPlace& at) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return {};
  if (!it->is_array() || !std::all_of(it->begin(), it->end(), [](const json& x) { return x.is_number(); })) {
    record_error(at, fmt::format("\"{}\" must be an array of numbers, got {}", key, it->dump()));
  }
  return it->get<std::vector<double>>();
}

bool flag(const json& obj, const char* key, const RecordPlace& at) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_boolean()) record_error(at, fmt::format("\"{}\" must be true or false, got {}", key, it->dump()));
  return it->get<bool>();
}

std::vector<RankMemoryRecord> parse_memory(const json& v, const RecordPlace& at) {
  if (!v.is_array()) {
    record_error(at, fmt::format("\"memory\" must be an array (one object per rank), got {}", v.type_name()));
  }
  std::vector<RankMemoryRecord> out;
  for (size_t r = 0; r < v.size(); ++r) {
    const json& rank = v[r];
    if (!rank.is_object()) record_error(at, fmt::format("memory[{}] must be an object of categories", r));
    RankMemoryRecord rec;
    for (const auto& [key, value] : rank.items()) {
      if (key == "model_states") {
        rec.model_states = byte_count(value, fmt::format("memory[{}].model_states", r), at);
        continue;
      }
      if (key == "disk") {
        if (!value.is_object() || !value.contains("bytes") || !value.contains("read") || !value.contains("written")) {
          record_error(at, fmt::format("memory[{}].disk must be {{\"bytes\", \"read\", \"written\"}}", r));
        }
        rec.disk = DiskBytes{byte_count(value["bytes"], fmt::format("memory[{}].disk.bytes", r), at),
                             byte_count(value["read"], fmt::format("memory[{}].disk.read", r), at),
                             byte_count(value["written"], fmt::format("memory[{}].disk.written", r), at)};
        continue;
      }
      if (!value.is_object() || !value.contains("current") || !value.contains("peak")) {
        record_error(at, fmt::format("memory[{}].{} must be {{\"current\": bytes, \"peak\": bytes}}", r, key));
      }
      rec.categories[key] = {byte_count(value["current"], fmt::format("memory[{}].{}.current", r, key), at),
                             byte_count(value["peak"], fmt::format("memory[{}].{}.peak", r, key), at)};
    }
    out.push_back(std::move(rec));
  }
  return out;
}

std::vector<RankCommRecord> parse_comm(const json& v, const RecordPlace& at) {
  if (!v.is_array()) {
    record_error(at, fmt::format("\"comm\" must be an array (one object per rank), got {}", v.type_name()));
  }
  std::vector<RankCommRecord> out;
  for (size_t r = 0; r < v.size(); ++r) {
    const json& rank = v[r];
    if (!rank.is_object()) record_error(at, fmt::format("comm[{}] must be an object of collectives", r));
    RankCommRecord m;
    for (const auto& item : rank.items()) {
      // Named references, not a structured binding: clang 14 cannot capture one in the lambda.
      const std::string& key = item.key();
      const json& value = item.value();
      if (!value.is_object()) record_error(at, fmt::format("comm[{}].{} must be an object", r, key));
      CollectiveBytes b;
      auto get = [&](const char* field) -> uint64_t {
        const auto it = value.find(field);
        return it == value.end() ? 0 : byte_count(*it, fmt::format("comm[{}].{}.{}", r, key, field), at);
      };
      b.calls = get("calls");
      b.bytes_sent = get("bytes_sent");
      b.bytes_received = get("bytes_received");
      b.seconds = number_or_null(value, "seconds", at);
      m[key] = b;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

json to_json(const StepRecord& record) {
  json j = {{"step", record.step},
            {"loss", number_or_null(record.loss)},
            {"lr", number_or_null(record.lr)},
            {"grad_norm", number_or_null(record.grad_norm)},
            {"loss_scale", number_or_null(record.loss_scale)},
            {"skipped", record.skipped},
            {"clipped", record.clipped},
            {"tokens_per_s", number_or_null(record.tokens_per_s)},
            {"step_seconds", number_or_null(record.step_seconds)},
            {"memory", memory_json(record.memory)},
            {"comm", comm_json(record.comm)}};
  if (record.val_loss) j["val_loss"] = *record.val_loss;
  if (record.trained_tokens) j["trained_tokens"] = *record.trained_tokens;
  if (record.masked_tokens) j["masked_tokens"] = *record.masked_tokens;
  if (!record.cpu_seconds.empty()) j["cpu_seconds"] = record.cpu_seconds;
  if (!record.comm_cpu_seconds.empty()) j["comm_cpu_seconds"] = record.comm_cpu_seconds;
  if (!record.comm_wait_seconds.empty()) j["comm_wait_seconds"] = record.comm_wait_seconds;
  if (!record.runqueue_seconds.empty()) j["runqueue_seconds"] = record.runqueue_seconds;
  return j;
}

json to_json(const FinalRecord& record) {
  json f = {{"step", record.step}, {"val_loss", number_or_null(record.val_loss)}};
  if (record.held_out_accuracy) f["held_out_accuracy"] = *record.held_out_accuracy;
  return {{"final", std::move(f)}};
}

void record_error(const RecordPlace& at, const std::string& problem) {
  ZDP_THROW(ConfigError, "[report] {} line {}: {}; the file should be what `zerodp train --metrics PATH` writes",
            at.file, at.line, problem);
}

RecordKind record_kind(const json& line) {
  if (line.is_object() && !line.contains("step")) {
    if (line.contains("config")) return RecordKind::config;
    if (line.contains("final")) return RecordKind::final;
  }
  return RecordKind::step;
}

StepRecord parse_step_record(const json& line, const RecordPlace& at) {
  StepRecord s;
  const auto step = line.find("step");
  if (step == line.end()) record_error(at, "missing \"step\"");
  if (!step->is_number_integer()) record_error(at, fmt::format("\"step\" must be an integer, got {}", step->dump()));
  s.step = step->get<int64_t>();
  if (!line.contains("loss")) record_error(at, "missing \"loss\"");
  s.loss = number_or_null(line, "loss", at);
  s.val_loss = number_or_null(line, "val_loss", at);
  s.lr = number_or_null(line, "lr", at);
  s.grad_norm = number_or_null(line, "grad_norm", at);
  s.loss_scale = number_or_null(line, "loss_scale", at);
  s.tokens_per_s = number_or_null(line, "tokens_per_s", at);
  s.step_seconds = number_or_null(line, "step_seconds", at);
  s.skipped = flag(line, "skipped", at);
  s.clipped = flag(line, "clipped", at);
  s.trained_tokens = count_or_null(line, "trained_tokens", at);
  s.masked_tokens = count_or_null(line, "masked_tokens", at);
  if (const auto m = line.find("memory"); m != line.end() && !m->is_null()) s.memory = parse_memory(*m, at);
  if (const auto c = line.find("comm"); c != line.end() && !c->is_null()) s.comm = parse_comm(*c, at);
  s.cpu_seconds = per_rank_seconds(line, "cpu_seconds", at);
  s.comm_cpu_seconds = per_rank_seconds(line, "comm_cpu_seconds", at);
  s.comm_wait_seconds = per_rank_seconds(line, "comm_wait_seconds", at);
  s.runqueue_seconds = per_rank_seconds(line, "runqueue_seconds", at);
  return s;
}

FinalRecord parse_final_record(const json& line, const RecordPlace& at) {
  const auto it = line.find("final");
  if (it == line.end()) record_error(at, "missing \"final\"");
  const json& f = *it;
  if (!f.is_object()) record_error(at, fmt::format("\"final\" must be an object, got {}", f.type_name()));
  FinalRecord r;
  const auto step = f.find("step");
  if (step == f.end()) record_error(at, "missing \"final.step\"");
  if (!step->is_number_integer()) {
    record_error(at, fmt::format("\"final.step\" must be an integer, got {}", step->dump()));
  }
  r.step = step->get<int64_t>();
  r.val_loss = number_or_null(f, "val_loss", "final.val_loss", at);
  r.held_out_accuracy = number_or_null(f, "held_out_accuracy", "final.held_out_accuracy", at);
  return r;
}

std::optional<std::string> parse_config_precision(const json& line, const RecordPlace& at) {
  const auto it = line.find("config");
  if (it == line.end()) record_error(at, "missing \"config\"");
  const json& config = *it;
  if (!config.is_object()) record_error(at, fmt::format("\"config\" must be an object, got {}", config.type_name()));
  const auto p = config.find("precision");
  if (p == config.end() || p->is_null()) return std::nullopt;
  const json* value = &*p;
  if (p->is_object()) {
    const auto v = p->find("value");
    if (v == p->end()) record_error(at, "\"config.precision\" has no \"value\"");
    value = &*v;
  }
  if (!value->is_string()) {
    record_error(at, fmt::format("\"config.precision\" must be a dtype name like \"bf16\", got {}", value->dump()));
  }
  std::string name = value->get<std::string>();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

}  // namespace zerodp::report
