// SPDX-License-Identifier: Apache-2.0
#include "train/effective_config.h"

#include <fmt/format.h>

#include <optional>
#include <utility>

#include "train/run_facts.h"
#include "train/settings.h"

namespace zerodp::train {

std::vector<Setting> effective_settings(const TrainConfig& c, int ranks) {
  std::vector<Setting> out;
  for (const SettingRow& row : settings()) {
    if (!row.show) continue;
    std::optional<Shown> shown = row.show(row, c, ranks);
    if (!shown) continue;
    out.push_back({std::string(row.name), std::move(shown->value),
                   shown->source.empty() ? setting_source(row, c) : std::move(shown->source)});
  }
  // A config key's "auto": the flag filled it, or it was derived (a
  // default is what "auto" derives when nothing else gives a value).
  for (Setting& s : out) {
    const auto it = c.auto_keys.find(s.name);
    if (it == c.auto_keys.end()) continue;
    if (source_kind_of(s.source) == SourceKind::kFlag) {
      s.source += fmt::format(", for \"auto\" {} in --config", it->second);
    } else {
      const std::string how = s.source.starts_with("derived: ") ? s.source.substr(9) : s.source;
      s.source = fmt::format("derived: {} for \"auto\" {}", how, it->second);
    }
  }
  return out;
}

std::string format_effective_config(const std::vector<Setting>& settings) {
  // Grouped by where the values came from, most specific first; each group
  // wraps at about 110 columns.
  struct Group {
    const char* title;
    std::vector<std::string> items;
  };
  std::vector<Group> groups = {
      {"flags", {}}, {"config file", {}}, {"checkpoint", {}}, {"derived", {}}, {"defaults", {}}};
  for (const Setting& s : settings) {
    const std::string value = s.value.is_string() ? s.value.get<std::string>() : s.value.dump();
    const std::string& src = s.source;
    std::string item = s.name + " " + value;
    size_t g = 4;
    switch (source_kind_of(src)) {
      case SourceKind::kFlag:
        g = 0;
        if (src.find(',') != std::string::npos) item += " (" + src.substr(src.find(',') + 2) + ")";
        break;
      case SourceKind::kConfig:
        g = 1;
        item += " (" + src.substr(7) + ")";
        break;
      case SourceKind::kCheckpoint:
        g = 2;
        break;
      case SourceKind::kDerived:
        g = 3;
        item += " (" + src.substr(src.find(':') + 2) + ")";
        break;
      default:
        if (src != "zerodp default" && src != "DeepSpeed default") item += " (" + src + ")";
    }
    groups[g].items.push_back(item);
  }
  std::string out = "effective configuration:\n";
  for (const Group& g : groups) {
    if (g.items.empty()) continue;
    std::string line = fmt::format("  {}: ", g.title);
    const size_t indent = line.size();
    for (size_t i = 0; i < g.items.size(); ++i) {
      const std::string piece = g.items[i] + (i + 1 < g.items.size() ? ", " : "");
      if (line.size() + piece.size() > 110 && line.size() > indent) {
        line.pop_back();  // the space after the comma
        out += line + "\n";
        line = std::string(indent, ' ');
      }
      line += piece;
    }
    out += line + "\n";
  }
  return out;
}

nlohmann::json effective_config_record(const std::vector<Setting>& settings) {
  nlohmann::json config = nlohmann::json::object();
  for (const Setting& s : settings) config[s.name] = {{"value", s.value}, {"source", s.source}};
  nlohmann::json build = nlohmann::json::object();
  for (const auto& [name, value] : run_facts()) build[name] = value;
  return {{"config", config}, {"build", build}};
}

}  // namespace zerodp::train
