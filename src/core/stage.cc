// SPDX-License-Identifier: Apache-2.0
#include "core/stage.h"

#include "core/error.h"

namespace zerodp {

Stage parse_stage(int64_t number, std::string_view what) {
  ZDP_CHECK(number >= 0 && number < static_cast<int64_t>(kStageTable.size()), ConfigError,
            "{} {}: ZeRO stage {} does not exist; use 0, 1, 2 or 3", what, number, number);
  return static_cast<Stage>(number);
}

}  // namespace zerodp
