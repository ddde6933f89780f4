// SPDX-License-Identifier: Apache-2.0
#include "comm/fault_injection.h"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "core/error.h"

namespace zerodp::comm {
namespace {

constexpr std::string_view kFormat =
    "rank=R,collective=K,action=throw|exit|hang or rank=R,save=K,point=P,action=throw|exit|hang";

struct State {
  std::mutex mutex;
  bool initialised = false;                                // guarded by mutex: env read or set_fault called
  std::optional<FaultSpec> fault;                          // guarded by mutex
  std::string env_error;                                   // guarded by mutex: a malformed ZERODP_FAULT
  std::map<std::pair<int, std::string>, uint64_t> visits;  // guarded by mutex: per (rank, point)
  // Fast path: false when there is certainly nothing to do. Starts true so
  // the first call reads the environment.
  std::atomic<bool> maybe_armed{true};
};

State& state() {
  static State s;
  return s;
}

template <typename T>
T parse_number(std::string_view key, std::string_view value) {
  T out{};
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  ZDP_CHECK(ec == std::errc() && end == value.data() + value.size(), ConfigError,
            "[fault] {}='{}' is not a non-negative integer (format: {})", key, value, kFormat);
  return out;
}

// Reads ZERODP_FAULT once; REQUIRES s.mutex held.
void initialise_locked(State& s) {
  if (s.initialised) return;
  s.initialised = true;
  const char* env = std::getenv("ZERODP_FAULT");
  if (env == nullptr || *env == '\0') return;
  try {
    s.fault = parse_fault_spec(env);
  } catch (const ConfigError& e) {
    s.env_error = "ZERODP_FAULT: " + e.message();
  }
}

}  // namespace

FaultSpec parse_fault_spec(std::string_view text) {
  FaultSpec spec;
  bool have_rank = false, have_collective = false, have_action = false, have_save = false, have_point = false;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t eq = item.find('=');
    ZDP_CHECK(eq != std::string_view::npos, ConfigError, "[fault] '{}' is not key=value (format: {})", item, kFormat);
    const std::string_view key = item.substr(0, eq);
    const std::string_view value = item.substr(eq + 1);
    if (key == "rank") {
      spec.rank = parse_number<int>(key, value);
      ZDP_CHECK(spec.rank >= 0, ConfigError, "[fault] rank must be >= 0, got {}", spec.rank);
      have_rank = true;
    } else if (key == "collective") {
      spec.collective = parse_number<uint64_t>(key, value);
      ZDP_CHECK(spec.collective >= 1, ConfigError, "[fault] collective counts from 1, got 0");
      have_collective = true;
    } else if (key == "save") {
      spec.save = parse_number<uint64_t>(key, value);
      ZDP_CHECK(spec.save >= 1, ConfigError, "[fault] save counts from 1, got 0");
      have_save = true;
    } else if (key == "point") {
      // Only the syntax: the layer that owns the points knows their names.
      bool name = !value.empty();
      for (const char ch : value) name = name && ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-');
      ZDP_CHECK(name, ConfigError, "[fault] point '{}' is not a name of lowercase letters, digits and '-' (format: {})",
                value, kFormat);
      spec.point = std::string(value);
      have_point = true;
    } else if (key == "action") {
      if (value == "throw") {
        spec.action = FaultAction::kThrow;
      } else if (value == "exit") {
        spec.action = FaultAction::kExit;
      } else if (value == "hang") {
        spec.action = FaultAction::kHang;
      } else {
        ZDP_THROW(ConfigError, "[fault] unknown action '{}': use throw, exit or hang", value);
      }
      have_action = true;
    } else {
      ZDP_THROW(ConfigError, "[fault] unknown key '{}' (format: {})", key, kFormat);
    }
  }
  ZDP_CHECK(have_rank && have_action && (have_collective != have_save) && (have_save == have_point), ConfigError,
            "[fault] give rank, action and either collective or save with point (format: {})", kFormat);
  return spec;
}

void set_fault(const std::optional<FaultSpec>& fault) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.initialised = true;
  s.env_error.clear();
  s.visits.clear();
  s.fault = fault;
  s.maybe_armed.store(fault.has_value(), std::memory_order_release);
}

std::optional<FaultSpec> active_fault() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  initialise_locked(s);
  return s.fault;
}

namespace {

// The active fault, or nullopt; throws the ConfigError of a malformed
// ZERODP_FAULT. `on_locked` runs under the lock (the save counter).
std::optional<FaultSpec> current_fault(const std::function<void(State&)>& on_locked = {}) {
  State& s = state();
  if (!s.maybe_armed.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard<std::mutex> lock(s.mutex);
  initialise_locked(s);
  if (!s.env_error.empty()) ZDP_THROW(ConfigError, "{}", s.env_error);
  if (!s.fault) {
    s.maybe_armed.store(false, std::memory_order_release);
    return std::nullopt;
  }
  if (on_locked) on_locked(s);
  return s.fault;
}

// "[fault] rank R: injected failure|exit|hang at AT", then the action. A
// thrown failure is a CommError in a collective and an IoError in a save, as
// the write error it stands for would be.
[[noreturn]] void fail_here(FaultAction action, int rank, const std::string& at,
                            const std::function<bool()>& peer_failed, bool write_error = false) {
  const char* verb = action == FaultAction::kThrow ? "failure" : action == FaultAction::kExit ? "exit" : "hang";
  const std::string where = fmt::format("[fault] rank {}: injected {} at {}", rank, verb, at);
  switch (action) {
    case FaultAction::kThrow:
      if (write_error) ZDP_THROW(IoError, "{}", where);
      ZDP_THROW(CommError, "{}", where);
    case FaultAction::kExit:
      fmt::print(stderr, "{}: exiting with code {}\n", where, kFaultExitCode);
      (void)std::fflush(stderr);  // _Exit skips stdio's flush; a failure to flush changes nothing now
      std::_Exit(kFaultExitCode);
    case FaultAction::kHang:
      while (!peer_failed()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ZDP_THROW(CommError, "{}: ended after a peer failed", where);
  }
  std::abort();  // unreachable: every action is handled above
}

}  // namespace

void inject_fault_if_due(int rank, uint64_t call, Collective kind, const std::function<bool()>& peer_failed) {
  const std::optional<FaultSpec> fault = current_fault();
  if (!fault || fault->rank != rank || fault->collective != call) return;
  fail_here(fault->action, rank, fmt::format("collective {} ({})", call, collective_name(kind)), peer_failed);
}

void inject_save_fault_if_due(int rank, std::string_view point, const std::function<bool()>& peer_failed) {
  uint64_t save = 0;
  const std::optional<FaultSpec> fault =
      current_fault([&](State& s) { save = ++s.visits[std::make_pair(rank, std::string(point))]; });
  if (!fault || fault->save == 0 || fault->rank != rank || fault->save != save || fault->point != point) return;
  fail_here(fault->action, rank, fmt::format("save {} ({})", save, point), peer_failed, /*write_error=*/true);
}

}  // namespace zerodp::comm
