// SPDX-License-Identifier: Apache-2.0
#include "model/schema_json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"

namespace zerodp::model {

int schema_int(const nlohmann::json& j, const char* key) {
  ZDP_CHECK(j.contains(key), ConfigError, "[model config] missing \"{}\" (an integer)", key);
  ZDP_CHECK(j[key].is_number_integer(), ConfigError, "[model config] \"{}\" must be an integer, got {}", key,
            j[key].dump());
  const auto v = j[key].get<long long>();
  ZDP_CHECK(v >= 1 && v <= 1'000'000'000, ConfigError, "[model config] \"{}\" is {}, must be in [1, 1e9]", key, v);
  return static_cast<int>(v);
}

void schema_check_keys(const nlohmann::json& j, std::initializer_list<std::string_view> allowed) {
  const std::set<std::string, std::less<>> sorted(allowed.begin(), allowed.end());
  for (auto it = j.begin(); it != j.end(); ++it) {
    // zerodp plan's former schema ({"type": "gpt", ..., "context": T}).
    ZDP_CHECK(it.key() != "context" || sorted.count("max_seq_len") == 0, ConfigError,
              "[model config] unknown key \"context\": write \"max_seq_len\" (the longest sequence; the model "
              "schema is what `zerodp model info` and `zerodp train --model` take)");
    ZDP_CHECK(sorted.count(it.key()) > 0, ConfigError, "[model config] unknown key \"{}\"; allowed: {}", it.key(),
              fmt::join(sorted, ", "));
  }
}

}  // namespace zerodp::model
