#include "comm/fault_injection.h"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "core/error.h"

namespace zerodp::comm {
namespace {

constexpr std::string_view kFormat = "rank=R,collective=K,action=throw|exit|hang";

struct State {
  std::mutex mutex;
  bool initialised = false;          // guarded by mutex: env read or set_fault called
  std::optional<FaultSpec> fault;    // guarded by mutex
  std::string env_error;             // guarded by mutex: a malformed ZERODP_FAULT
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
  bool have_rank = false, have_collective = false, have_action = false;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t eq = item.find('=');
    ZDP_CHECK(eq != std::string_view::npos, ConfigError, "[fault] '{}' is not key=value (format: {})", item,
              kFormat);
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
  ZDP_CHECK(have_rank && have_collective && have_action, ConfigError,
            "[fault] rank, collective and action are all required (format: {})", kFormat);
  return spec;
}

void set_fault(std::optional<FaultSpec> fault) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.initialised = true;
  s.env_error.clear();
  s.fault = fault;
  s.maybe_armed.store(fault.has_value(), std::memory_order_release);
}

std::optional<FaultSpec> active_fault() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  initialise_locked(s);
  return s.fault;
}

void inject_fault_if_due(int rank, uint64_t call, Collective kind, const std::function<bool()>& peer_failed) {
  State& s = state();
  if (!s.maybe_armed.load(std::memory_order_acquire)) return;
  std::optional<FaultSpec> fault;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    initialise_locked(s);
    if (!s.env_error.empty()) ZDP_THROW(ConfigError, "{}", s.env_error);
    if (!s.fault) {
      s.maybe_armed.store(false, std::memory_order_release);
      return;
    }
    fault = s.fault;
  }
  if (fault->rank != rank || fault->collective != call) return;
  const std::string where =
      fmt::format("[fault] rank {}: injected {} at collective {} ({})", rank,
                  fault->action == FaultAction::kThrow ? "failure" : fault->action == FaultAction::kExit ? "exit" : "hang",
                  call, collective_name(kind));
  switch (fault->action) {
    case FaultAction::kThrow: ZDP_THROW(CommError, "{}", where);
    case FaultAction::kExit:
      std::fprintf(stderr, "%s: exiting with code %d\n", where.c_str(), kFaultExitCode);
      std::fflush(stderr);
      std::_Exit(kFaultExitCode);
    case FaultAction::kHang:
      while (!peer_failed()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ZDP_THROW(CommError, "{}: ended after a peer failed", where);
  }
}

}  // namespace zerodp::comm
