// SPDX-License-Identifier: Apache-2.0
// GPT-2 input embedding: out[b,t,:] = wte[token[b,t],:] + wpe[t,:].
// Backward ACCUMULATES into dwte and dwpe (+=), rows in (b, t) order, so the
// result is deterministic. Tokens are validated (ShapeError) against the
// table: an out-of-range id never reads outside wte.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/dtype.h"

namespace zerodp::kernels {

struct EmbeddingShape {
  int batch = 0;     // B
  int seq = 0;       // T (<= rows of wpe)
  int channels = 0;  // C
  int vocab = 0;     // rows of wte that tokens may address
};

// out[B,T,C] <- tokens[B,T], wte[>=V,C], wpe[>=T,C]
void embedding_forward(std::span<float> out, std::span<const int32_t> tokens, std::span<const float> wte,
                       std::span<const float> wpe, EmbeddingShape s);
// The same from bf16 tables read in place: the bits of the fp32 overload on
// their widening (bfloat16_to_float, exact but for a NaN quieted).
void embedding_forward(std::span<float> out, std::span<const int32_t> tokens, std::span<const BFloat16> wte,
                       std::span<const BFloat16> wpe, EmbeddingShape s);

// dwte[tokens] += dout, dwpe[t] += dout <- dout[B,T,C]
void embedding_backward(std::span<float> dwte, std::span<float> dwpe, std::span<const float> dout,
                        std::span<const int32_t> tokens, EmbeddingShape s);
// The same for rows [first_row, first_row + rows.size() / C) of the table
// [wte; wpe] alone (wte's `wte_rows` rows, then wpe's): each element gets
// embedding_backward's additions in its order, so a gradient made a few
// rows at a time has the whole one's bits. A table without wpe (Llama's)
// asks only for rows below wte_rows.
void embedding_backward_rows(std::span<float> rows, size_t first_row, size_t wte_rows, std::span<const float> dout,
                             std::span<const int32_t> tokens, EmbeddingShape s);

}  // namespace zerodp::kernels
