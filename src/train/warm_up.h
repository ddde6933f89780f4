// What a rank thread does before the process measures its baseline memory:
// everything that makes memory resident once and keeps it, without booking
// it in any ledger. OpenBLAS's per-thread packing buffers are filled with
// this model's product shapes (kernels::warm_up_linear), and the code of
// every kernel (and of libm under it) is paged in by one forward and
// backward of a tiny GPT. After it, the process grows only by what the
// engine books, so the baseline plus the ledgers' plan is the process.
// Thread-safety: call from each rank thread; touches no shared state.
#pragma once

#include "model/model.h"

namespace zerodp::train {

void warm_up(const model::Model& model, int micro_batch, int seq_len);

}  // namespace zerodp::train
