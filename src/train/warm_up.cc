// SPDX-License-Identifier: Apache-2.0
#include "train/warm_up.h"

#include <vector>

#include "kernels/linear.h"
#include "model/generate.h"
#include "model/gpt.h"
#include "zero/engine.h"

namespace zerodp::train {

void warm_up(const model::Model& model, comm::Communicator& comm, const zero::EngineConfig& config, int micro_batch,
             int seq_len) {
  kernels::warm_up_linear(model.linear_shapes(micro_batch, seq_len));
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
