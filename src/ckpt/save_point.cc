// SPDX-License-Identifier: Apache-2.0
#include "ckpt/save_point.h"

#include <array>
#include <cstddef>

#include "comm/fault_injection.h"
#include "core/error.h"

namespace zerodp::ckpt {
namespace {

// Indexed by SavePoint, in the order a save reaches them.
constexpr std::array<std::string_view, 7> kNames = {
    "begin", "shard-partial", "shard-written", "manifest-written", "dir-renamed", "latest-written", "done"};
static_assert(static_cast<size_t>(SavePoint::kDone) + 1 == kNames.size());

}  // namespace

std::string_view save_point_name(SavePoint point) { return kNames.at(static_cast<size_t>(point)); }

std::optional<SavePoint> find_save_point(std::string_view name) {
  for (size_t i = 0; i < static_cast<size_t>(SavePoint::kDone); ++i) {
    if (kNames[i] == name) return static_cast<SavePoint>(i);
  }
  return std::nullopt;
}

void check_fault_save_point() {
  const std::optional<comm::FaultSpec> fault = comm::active_fault();
  if (!fault || fault->save == 0) return;
  ZDP_CHECK(find_save_point(fault->point).has_value(), ConfigError,
            "ZERODP_FAULT: [fault] unknown save point '{}': use begin, shard-partial, shard-written, manifest-written, "
            "dir-renamed or latest-written",
            fault->point);
}

}  // namespace zerodp::ckpt
