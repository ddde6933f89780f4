// SPDX-License-Identifier: Apache-2.0
// One pre-LN transformer block, forward and backward, on a block unit's
// parameter span (layout in gpt_config.h). Internal to src/model.
//   res2 = x + attproj(attention(qkv(ln1(x))))
//   out  = res2 + fcproj(gelu(fc(ln2(res2))))
// block_backward takes d(out) in ws.dresid() and leaves d(x) there; parameter
// gradients ACCUMULATE into grads.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>

#include "model/gpt_config.h"
#include "model/gpt_workspace.h"
#include "model/unit_params.h"

namespace zerodp::model::detail {

// x, out: [N, C]; acts: the block's LayerActs (filled).
void block_forward(const GptConfig& cfg, const BlockLayout& lay, UnitParams params, std::span<const float> x,
                   LayerActs& acts, std::span<float> out, GptWorkspace& ws);

// x: the block's input [N, C]; acts as filled by block_forward.
void block_backward(const GptConfig& cfg, const BlockLayout& lay, UnitParams params, std::span<float> grads,
                    std::span<const float> x, LayerActs& acts, GptWorkspace& ws);

}  // namespace zerodp::model::detail
