// SPDX-License-Identifier: Apache-2.0
// What the ranks do before the process measures its baseline memory:
// everything that makes memory resident once and keeps it, without booking
// it in any ledger. OpenBLAS's packing buffers are filled with this model's
// product shapes (kernels::warm_up_linear), one slot of its pool per rank
// thread of the process (local_count of them, this one local_index; the
// first 32 threads in turn, the rest at once), and the code of every path a
// run takes (kernels, libm, conversions, reductions, the optimizer, the
// collectives, generation) is paged in by one step of a tiny GPT through an
// engine configured like the run's. After it, the process grows only by
// what the engine books, so the baseline plus the ledgers' plan is the
// process.
// Thread-safety: collective over `comm`; call from every rank.
#pragma once

#include "comm/communicator.h"
#include "model/model.h"
#include "zero/engine_config.h"

namespace zerodp::train {

void warm_up(const model::Model& model, comm::Communicator& comm, const zero::EngineConfig& config, int micro_batch,
             int seq_len, int local_index, int local_count);

}  // namespace zerodp::train
