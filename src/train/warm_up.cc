// SPDX-License-Identifier: Apache-2.0
#include "train/warm_up.h"

#include <algorithm>
#include <vector>

#include "kernels/compute.h"
#include "kernels/gemm.h"
#include "kernels/linear.h"
#include "model/generate.h"
#include "model/gpt.h"
#include "zero/engine.h"

namespace zerodp::train {

void warm_up(const model::Model& model, comm::Communicator& comm, const zero::EngineConfig& config, int micro_batch,
             int seq_len, int local_index, int local_count) {
  // The rank threads of this process take turns, each packing in its own
  // slot of OpenBLAS's pool (kernels::GemmBufferHold): run concurrently, two
  // threads whose products did not overlap in time would share one slot and
  // leave another unfilled, for training to fill after the baseline. The
  // turns are one thread at a time, so past kTurns threads (and well below
  // the pool's size, 128 slots in Debian's build) the rest warm up at once.
  constexpr int kTurns = 32;
  // The products in the run's precision: bf16 ones fill this thread's
  // packing buffers (kernels/gemm_bf16.h) before the baseline is measured.
  const kernels::ScopedCompute compute(config.compute);
  const std::vector<kernels::LinearShape> shapes = model.linear_shapes(micro_batch, seq_len);
  const int turns = std::min(local_count, kTurns);
  for (int turn = 0; turn < turns; ++turn) {
    comm.barrier();
    if (turn == local_index) {
      const kernels::GemmBufferHold hold(turn);
      kernels::warm_up_linear(shapes);
    }
  }
  comm.barrier();  // the last turn is done before the rest start
  if (local_index >= turns) kernels::warm_up_linear(shapes);
  constexpr int kT = 4;
  const model::Gpt tiny(
      model::GptConfig{.max_seq_len = kT, .vocab = 16, .padded_vocab = 16, .layers = 1, .heads = 2, .channels = 8});
  const std::vector<int32_t> tokens = {1, 2, 3, 4}, targets = {2, 3, 4, 5};
  const zero::BatchFeeder feed = [&](model::Workspace& ws, int) {
    ws.set_batch(model::Batch{.tokens = tokens, .targets = targets});
  };
  zero::EngineConfig c = config;
  c.grad_accum = 1;
  for (bool checkpointing : {false, true}) {
    zero::Engine engine(tiny, comm, c, /*seed=*/1, 1, kT, checkpointing);
    engine.train_step(feed);
    engine.eval_loss(feed);
    const std::vector<float> params = engine.gather_params();
    model::generate(tiny, params, std::vector<int32_t>{1}, model::GenerateConfig{.max_new_tokens = 2, .top_k = 4});
  }
}

}  // namespace zerodp::train
