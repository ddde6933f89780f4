// SPDX-License-Identifier: Apache-2.0
// One Llama-family decoder block, forward and backward, on a block unit's
// parameter span (layout in llama_config.h):
//   h   = x + o(attn(rope(q(n1)), rope(k(n1)), v(n1))),  n1 = rmsnorm(x)
//   out = h + down(silu(gate(n2)) * up(n2)),              n2 = rmsnorm(h)
// Backward reads d(out) from ws.dresid() and leaves d(x) there (in place:
// the norms' backward adds into it), adding the parameter gradients into
// `grads`.
// Thread-safety: as the workspace (one thread).
#pragma once

#include <span>

#include "model/llama_config.h"
#include "model/llama_workspace.h"
#include "model/unit_params.h"

namespace zerodp::model::detail {

void llama_block_forward(const LlamaConfig& config, const LlamaBlockLayout& layout, UnitParams params,
                         std::span<const float> x, LlamaActs& acts, std::span<float> out, LlamaWorkspace& ws);

void llama_block_backward(const LlamaConfig& config, const LlamaBlockLayout& layout, UnitParams params,
                          std::span<float> grads, std::span<const float> x, const LlamaActs& acts, LlamaWorkspace& ws);

}  // namespace zerodp::model::detail
