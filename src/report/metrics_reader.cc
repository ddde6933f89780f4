// SPDX-License-Identifier: Apache-2.0
#include "report/metrics_reader.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zerodp::report {
namespace {

using nlohmann::json;

// Where a problem is: "m.jsonl line 3".
struct Where {
  std::string_view name;
  size_t line;
};

[[noreturn]] void fail(const Where& at, const std::string& problem) {
  ZDP_THROW(ConfigError, "[report] {} line {}: {}; the file should be what `zerodp train --metrics PATH` writes",
            at.name, at.line, problem);
}

std::optional<double> number_or_null(const json& obj, const char* key, const Where& at) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) fail(at, fmt::format("\"{}\" must be a number or null, got {}", key, it->dump()));
  const double v = it->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

uint64_t byte_count(const json& v, const std::string& what, const Where& at) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
    fail(at, fmt::format("{} must be a non-negative integer, got {}", what, v.dump()));
  }
  return v.get<uint64_t>();
}

bool flag(const json& obj, const char* key, const Where& at) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_boolean()) fail(at, fmt::format("\"{}\" must be true or false, got {}", key, it->dump()));
  return it->get<bool>();
}

std::vector<RankMemoryRecord> parse_memory(const json& v, const Where& at) {
  if (!v.is_array()) fail(at, fmt::format("\"memory\" must be an array (one object per rank), got {}", v.type_name()));
  std::vector<RankMemoryRecord> out;
  for (size_t r = 0; r < v.size(); ++r) {
    const json& rank = v[r];
    if (!rank.is_object()) fail(at, fmt::format("memory[{}] must be an object of categories", r));
    RankMemoryRecord rec;
    for (const auto& [key, value] : rank.items()) {
      if (key == "model_states") {
        rec.model_states = byte_count(value, fmt::format("memory[{}].model_states", r), at);
        continue;
      }
      if (!value.is_object() || !value.contains("current") || !value.contains("peak")) {
        fail(at, fmt::format("memory[{}].{} must be {{\"current\": bytes, \"peak\": bytes}}", r, key));
      }
      rec.categories[key] = {byte_count(value["current"], fmt::format("memory[{}].{}.current", r, key), at),
                             byte_count(value["peak"], fmt::format("memory[{}].{}.peak", r, key), at)};
    }
    out.push_back(std::move(rec));
  }
  return out;
}

std::vector<std::map<std::string, CollectiveBytes>> parse_comm(const json& v, const Where& at) {
  if (!v.is_array()) fail(at, fmt::format("\"comm\" must be an array (one object per rank), got {}", v.type_name()));
  std::vector<std::map<std::string, CollectiveBytes>> out;
  for (size_t r = 0; r < v.size(); ++r) {
    const json& rank = v[r];
    if (!rank.is_object()) fail(at, fmt::format("comm[{}] must be an object of collectives", r));
    std::map<std::string, CollectiveBytes> m;
    for (const auto& item : rank.items()) {
      // Named references, not a structured binding: clang 14 cannot capture one in the lambda.
      const std::string& key = item.key();
      const json& value = item.value();
      if (!value.is_object()) fail(at, fmt::format("comm[{}].{} must be an object", r, key));
      CollectiveBytes b;
      auto get = [&](const char* field) -> uint64_t {
        const auto it = value.find(field);
        return it == value.end() ? 0 : byte_count(*it, fmt::format("comm[{}].{}.{}", r, key, field), at);
      };
      b.calls = get("calls");
      b.bytes_sent = get("bytes_sent");
      b.bytes_received = get("bytes_received");
      m[key] = b;
    }
    out.push_back(std::move(m));
  }
  return out;
}

// {"config": {"precision": {"value": "bf16", "source": "..."}, ...}}: the
// precision (also a plain string), lowercase; other settings are not drawn.
std::optional<std::string> parse_config(const json& config, const Where& at) {
  if (!config.is_object()) fail(at, fmt::format("\"config\" must be an object, got {}", config.type_name()));
  const auto p = config.find("precision");
  if (p == config.end() || p->is_null()) return std::nullopt;
  const json* value = &*p;
  if (p->is_object()) {
    const auto v = p->find("value");
    if (v == p->end()) fail(at, "\"config.precision\" has no \"value\"");
    value = &*v;
  }
  if (!value->is_string()) {
    fail(at, fmt::format("\"config.precision\" must be a dtype name like \"bf16\", got {}", value->dump()));
  }
  std::string name = value->get<std::string>();
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

// {"final": {"step": N, "val_loss": x}}.
FinalRecord parse_final(const json& f, const Where& at) {
  if (!f.is_object()) fail(at, fmt::format("\"final\" must be an object, got {}", f.type_name()));
  FinalRecord r;
  const auto step = f.find("step");
  if (step == f.end()) fail(at, "missing \"final.step\"");
  if (!step->is_number_integer()) fail(at, fmt::format("\"final.step\" must be an integer, got {}", step->dump()));
  r.step = step->get<int64_t>();
  const auto val = f.find("val_loss");
  if (val != f.end() && !val->is_null()) {
    if (!val->is_number()) fail(at, fmt::format("\"final.val_loss\" must be a number or null, got {}", val->dump()));
    if (std::isfinite(val->get<double>())) r.val_loss = val->get<double>();
  }
  return r;
}

StepRecord parse_record(const json& j, const Where& at) {
  StepRecord s;
  const auto step = j.find("step");
  if (step == j.end()) fail(at, "missing \"step\"");
  if (!step->is_number_integer()) fail(at, fmt::format("\"step\" must be an integer, got {}", step->dump()));
  s.step = step->get<int64_t>();
  if (!j.contains("loss")) fail(at, "missing \"loss\"");
  s.loss = number_or_null(j, "loss", at);
  s.val_loss = number_or_null(j, "val_loss", at);
  s.lr = number_or_null(j, "lr", at);
  s.grad_norm = number_or_null(j, "grad_norm", at);
  s.loss_scale = number_or_null(j, "loss_scale", at);
  s.tokens_per_s = number_or_null(j, "tokens_per_s", at);
  s.step_seconds = number_or_null(j, "step_seconds", at);
  s.skipped = flag(j, "skipped", at);
  s.clipped = flag(j, "clipped", at);
  if (const auto m = j.find("memory"); m != j.end() && !m->is_null()) s.memory = parse_memory(*m, at);
  if (const auto c = j.find("comm"); c != j.end() && !c->is_null()) s.comm = parse_comm(*c, at);
  return s;
}

}  // namespace

RunMetrics parse_metrics(std::istream& in, std::string_view name) {
  RunMetrics run;
  run.source = std::string(name);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(std::move(line));
  auto blank = [](const std::string& l) { return l.find_first_not_of(" \t\r") == std::string::npos; };
  size_t last = lines.size();  // the last line that is not blank
  while (last > 0 && blank(lines[last - 1])) --last;
  for (size_t i = 0; i < last; ++i) {
    const size_t number = i + 1;
    if (blank(lines[i])) continue;  // blank lines are allowed
    json j;
    try {
      j = json::parse(lines[i]);
    } catch (const json::parse_error& e) {
      // nlohmann's message names the byte; keep the first clause short.
      std::string what = e.what();
      if (const size_t colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
      if (number == last) {
        // The trainer flushes every line, so only the last can be cut short by a killed run.
        run.warnings.push_back(fmt::format(
            "[report] {} line {} is not valid JSON ({}): left out, as the last line of a run stopped while writing "
            "it",
            name, number, what));
        break;
      }
      fail({name, number}, fmt::format("not valid JSON ({})", what));
    }
    const Where at{name, number};
    if (!j.is_object()) fail(at, fmt::format("expected a JSON object, got {}", j.type_name()));
    if (!j.contains("step")) {
      if (const auto c = j.find("config"); c != j.end()) {
        run.precision = parse_config(*c, at);
        continue;
      }
      if (const auto f = j.find("final"); f != j.end()) {
        run.final_record = parse_final(*f, at);
        continue;
      }
    }
    run.steps.push_back(parse_record(j, at));
  }
  ZDP_CHECK(!run.steps.empty(), ConfigError,
            "[report] {} holds no records ({} lines): give the file `zerodp train --metrics PATH` wrote after at "
            "least one step",
            name, lines.size());
  return run;
}

RunMetrics read_metrics(const std::string& path) {
  std::error_code ec;
  ZDP_CHECK(std::filesystem::is_regular_file(path, ec), ConfigError,
            "[report] metrics file '{}' does not exist: write one with `zerodp train --metrics {}`", path, path);
  std::ifstream in(path);
  ZDP_CHECK(in.good(), ConfigError, "[report] cannot read metrics file '{}': check its permissions", path);
  return parse_metrics(in, std::filesystem::path(path).filename().string());
}

}  // namespace zerodp::report
