#include "train/warm_up.h"

#include <vector>

#include "kernels/linear.h"
#include "model/gpt.h"

namespace zerodp::train {

void warm_up(const model::Model& model, int micro_batch, int seq_len) {
  kernels::warm_up_linear(model.linear_shapes(micro_batch, seq_len));
  const model::Gpt tiny(model::GptConfig{.max_seq_len = 4, .vocab = 16, .padded_vocab = 16, .layers = 1, .heads = 2,
                                         .channels = 8});
  std::vector<float> params(tiny.num_params()), grads(tiny.num_params());
  tiny.init_params(params, 1);
  const std::vector<int32_t> tokens = {1, 2, 3, 4}, targets = {2, 3, 4, 5};
  for (bool checkpointing : {false, true}) {
    const auto ws = tiny.make_workspace(1, 4, checkpointing);
    ws->set_batch(model::Batch{.tokens = tokens, .targets = targets});
    model::forward_all(tiny, params, *ws);
    model::backward_all(tiny, params, grads, *ws);
  }
}

}  // namespace zerodp::train
