// SPDX-License-Identifier: Apache-2.0
// zerodp's umbrella header: the public API of the installed library in one
// include, `#include <zerodp/zerodp.h>` (docs/library.md). Every header is
// also reachable alone, as `<zerodp/zero/engine.h>` (or "zero/engine.h",
// the spelling zerodp's own files use).
#pragma once

#include "ckpt/checkpoint.h"
#include "ckpt/offline.h"
#include "comm/communicator.h"
#include "comm/world.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/stage.h"
#include "engine_ckpt/engine_checkpoint.h"
#include "model/family.h"
#include "model/model.h"
#include "model/presets.h"
#include "optim/optimizer_config.h"
#include "plan/planner.h"
#include "weights/consolidate.h"
#include "zero/engine.h"
#include "zero/engine_config.h"
