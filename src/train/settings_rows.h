// SPDX-License-Identifier: Apache-2.0
// How settings*.cc declare rows (train/settings.h): typed access and the
// helpers each group's rows are built with. Internal to src/train.
// Thread-safety: functions only.
#pragma once

#include <array>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "train/settings.h"

namespace zerodp::train::rows {

using nlohmann::json;

using Pair = std::array<double, 2>;

// A row whose value has the type T in a TrainConfig's terms and T's JSON
// form in a checkpoint's record. `set` may be null (no resume sets it).
template <typename T>
using Get = T (*)(const TrainConfig&);
// Scalars by value, strings and pairs by reference.
template <typename T>
using Param = std::conditional_t<std::is_scalar_v<T>, T, const T&>;
template <typename T>
using Set = void (*)(TrainConfig&, Param<T>);

template <typename T>
constexpr ValueType value_type() {
  if constexpr (std::is_same_v<T, bool>) return ValueType::kBool;
  if constexpr (std::is_same_v<T, int>) return ValueType::kInt;
  if constexpr (std::is_same_v<T, int64_t>) return ValueType::kInt64;
  if constexpr (std::is_same_v<T, uint32_t>) return ValueType::kUint32;
  if constexpr (std::is_same_v<T, uint64_t>) return ValueType::kUint64;
  if constexpr (std::is_same_v<T, double>) return ValueType::kDouble;
  if constexpr (std::is_same_v<T, std::string>) return ValueType::kString;
  static_assert(std::is_same_v<T, Pair> || std::is_arithmetic_v<T> || std::is_same_v<T, std::string>,
                "a setting's value is a bool, an integer, a double, a string or a pair of doubles");
  return ValueType::kPair;
}

using CheckFn = std::function<void(const SettingRow&, const TrainConfig&)>;

// A number's bounds (each of a pair's two numbers): finite, in [lo, hi]
// with either end open; `hint` follows the range in the refusal
// ("e.g. 0.9 (0: no first moment)").
struct Bounds {
  double lo = 0.0;
  double hi = std::numeric_limits<double>::infinity();
  bool lo_open = false;
  bool hi_open = false;
  std::string_view hint = {};
};
CheckFn within(Bounds bounds);

template <typename T>
SettingRow row(std::string_view name, FlagSpec flag, ResumePolicy resume, DefaultFrom defaults, Get<T> get, Set<T> set,
               ShowFn show, CheckFn check = nullptr) {
  SettingRow r;
  r.name = name;
  r.flag = flag;
  r.type = value_type<T>();
  r.resume = resume;
  r.defaults = defaults;
  r.get = [get](const TrainConfig& c) { return json(get(c)); };
  if (set != nullptr) r.set = [set](TrainConfig& c, const json& v) { set(c, v.get<T>()); };
  r.show = std::move(show);
  r.check = std::move(check);
  return r;
}

// A setting no checkpoint records, whose default a config file's replaces.
template <typename T>
SettingRow engine(std::string_view name, FlagSpec flag, Get<T> get, Set<T> set, ShowFn show, CheckFn check = nullptr) {
  return row<T>(name, flag, ResumePolicy::kNotRecorded, DefaultFrom::kRun, get, set, std::move(show), std::move(check));
}
// A setting the checkpoint records and a resume must keep, whose default
// a config file's replaces.
template <typename T>
SettingRow kept(std::string_view name, FlagSpec flag, Get<T> get, Set<T> set, ShowFn show, CheckFn check = nullptr) {
  return row<T>(name, flag, ResumePolicy::kMustMatch, DefaultFrom::kRun, get, set, std::move(show), std::move(check));
}
// A value only the effective configuration shows, derived from others.
SettingRow derived(std::string_view name, ShowFn show);
// A switch of TrainConfig whose flag takes one of two words, `off` or `on`
// ("pad" / "pack"), refusing any other; shown when on.
SettingRow either(std::string_view name, FlagSpec flag, ResumePolicy resume, DefaultFrom defaults,
                  bool TrainConfig::*field, std::string_view off, std::string_view on);

// The effective configuration shows the value always, or for runs that use it.
std::optional<Shown> always(const SettingRow& r, const TrainConfig& c, int ranks);
ShowFn when(bool (*used)(const TrainConfig&));

// Each group's rows, appended in the effective configuration's order.
void add_run_rows(std::vector<SettingRow>& out);        // settings.cc
void add_optimizer_rows(std::vector<SettingRow>& out);  // settings_optim.cc
void add_schedule_rows(std::vector<SettingRow>& out);   // settings_optim.cc
void add_engine_rows(std::vector<SettingRow>& out);     // settings.cc
void add_pipeline_rows(std::vector<SettingRow>& out);   // settings_pipeline.cc

}  // namespace zerodp::train::rows
