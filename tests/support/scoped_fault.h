// SPDX-License-Identifier: Apache-2.0
// The process-wide injected fault (comm/fault_injection.h) for one scope:
// set on construction, cleared on destruction whatever the test does.
#pragma once

#include <optional>

#include "comm/fault_injection.h"

namespace zerodp::testing {

struct ScopedFault {
  explicit ScopedFault(const std::optional<comm::FaultSpec>& fault) { comm::set_fault(fault); }
  ~ScopedFault() { comm::set_fault(std::nullopt); }
  ScopedFault(const ScopedFault&) = delete;
  ScopedFault& operator=(const ScopedFault&) = delete;
};

}  // namespace zerodp::testing
