// SPDX-License-Identifier: Apache-2.0
// Internal: the activations a block keeps that only matrix products read
// (WorkspaceOptions::bf16_product_inputs). A bf16 product rounds what it
// reads to bf16 operands anyway, so such a tensor can be kept as those
// operands at half its bytes with no bit of any result changed: the block
// computes it in an fp32 working buffer its blocks share, keeps it once the
// forward's last product has read it, and restores it (widened back,
// exactly) before the backward's products read it. Without bf16 product
// inputs the tensor is kept in fp32 and both steps do nothing.
// Thread-safety: plain functions on the caller's buffers.
#pragma once

#include <cstddef>
#include <span>

#include "core/dtype.h"
#include "model/workspace_arena.h"

namespace zerodp::model::detail {

// Carves a product input: in fp32 (`fp32`, kept or recompute scratch as
// `keep` says), or with `bf16` its kept copy (`kept`, an activation); the
// caller then points `fp32` at a working buffer once the arena is carved.
void add_product_input(ArenaCarver& carver, std::span<float>& fp32, std::span<BFloat16>& kept, size_t count, bool keep,
                       bool bf16);

// Forward, after the tensor's last product: the working buffer into the kept
// copy (nothing when `kept` is empty).
void keep_product_input(std::span<const float> working, std::span<BFloat16> kept);
// Backward, before the tensor's first product: the kept copy back into the
// working buffer (nothing when `kept` is empty).
void restore_product_input(std::span<const BFloat16> kept, std::span<float> working);

}  // namespace zerodp::model::detail
