// SPDX-License-Identifier: Apache-2.0
// The checks a family's from_json runs on its JSON object, with the
// "[model config]" messages every family shares.
// Thread-safety: pure functions.
#pragma once

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string_view>

namespace zerodp::model {

// j[key] as an integer in [1, 1e9]; ConfigError naming the key when it is
// missing, not an integer or out of range.
int schema_int(const nlohmann::json& j, const char* key);
// ConfigError naming the first key of `j` not in `allowed` (and listing them).
void schema_check_keys(const nlohmann::json& j, std::initializer_list<std::string_view> allowed);

}  // namespace zerodp::model
