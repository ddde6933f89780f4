// SPDX-License-Identifier: Apache-2.0
#include "report/metrics_reader.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zerodp::report {

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
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(lines[i]);
    } catch (const nlohmann::json::parse_error& e) {
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
      record_error({name, number}, fmt::format("not valid JSON ({})", what));
    }
    const RecordPlace at{name, number};
    if (!j.is_object()) record_error(at, fmt::format("expected a JSON object, got {}", j.type_name()));
    switch (record_kind(j)) {
      case RecordKind::config:
        run.precision = parse_config_precision(j, at);
        break;
      case RecordKind::final:
        run.final_record = parse_final_record(j, at);
        break;
      case RecordKind::step:
        run.steps.push_back(parse_step_record(j, at));
        break;
    }
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
