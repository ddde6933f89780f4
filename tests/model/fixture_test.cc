// SPDX-License-Identifier: Apache-2.0
// zerodp against an independent implementation: tools/make_gpt_fixture.py ran
// the same GPT in PyTorch (float64 math on fp32 weights) and committed its
// logits, loss and every parameter gradient. Tolerance: each tensor's max
// abs difference <= 1e-5 x (its max abs reference value), i.e. 1e-5 relative
// to the tensor's scale (docs/models.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "kernels/linear.h"
#include "model/gpt.h"
#include "model/gpt_workspace.h"
#include "model/llmc_io.h"

namespace zerodp::model {
namespace {

const std::string kDir = ZERODP_FIXTURE_DIR;

double scaled_max_diff(std::span<const float> got, std::span<const float> want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

TEST(TorchFixture, LogitsLossAndEveryGradientMatch) {
  const LlmcModel file = load_llmc_model(kDir + "/gpt_fixture_model.bin");
  const GptConfig& c = file.config;
  EXPECT_EQ(c, (GptConfig{12, 37, 48, 2, 2, 16}));
  const DebugState ref = read_debug_state(kDir + "/gpt_fixture_state.bin", c);
  Gpt m(c);
  auto ws_base = m.make_workspace(ref.batch, ref.seq, false);
  auto& ws = dynamic_cast<GptWorkspace&>(*ws_base);
  Batch b;
  b.tokens = ref.tokens;
  b.targets = ref.targets;
  ws.set_batch(b);
  const float loss = forward_all(m, file.params, ws);
  EXPECT_NEAR(loss, ref.loss, 1e-5 * ref.loss);

  // Logits over the real vocabulary, recomputed from ln_f's output.
  const size_t N = size_t(ref.batch) * ref.seq;
  std::vector<float> logits(N * c.padded_vocab);
  kernels::linear_forward(logits, ws.lnf(),
                          std::span<const float>(file.params).first(size_t(c.padded_vocab) * c.channels), {},
                          {static_cast<int>(N), c.channels, c.padded_vocab});
  const double logits_diff = scaled_max_diff(logits, ref.logits);
  EXPECT_LT(logits_diff, 1e-5);

  std::vector<float> grads(m.num_params(), 0.0f);
  backward_all(m, file.params, grads, ws);
  // Per tensor of each unit, and over everything.
  const BlockLayout lay = block_layout(c.channels);
  const size_t C = c.channels;
  struct Tensor {
    const char* name;
    size_t offset, count;
  };
  std::vector<Tensor> tensors{{"wte", 0, size_t(c.padded_vocab) * C},
                              {"wpe", size_t(c.padded_vocab) * C, size_t(c.max_seq_len) * C}};
  for (int l = 0; l < c.layers; ++l) {
    const size_t u = m.units()[1 + l].offset;
    tensors.push_back({"qkvw", u + lay.qkvw, 3 * C * C});
    tensors.push_back({"attprojw", u + lay.attprojw, C * C});
    tensors.push_back({"fcw", u + lay.fcw, 4 * C * C});
    tensors.push_back({"fcprojw", u + lay.fcprojw, 4 * C * C});
    tensors.push_back({"ln1 w+b", u + lay.ln1w, 2 * C});
    tensors.push_back({"biases", u + lay.qkvb, 3 * C});
  }
  tensors.push_back({"ln_f", m.units().back().offset, 2 * C});
  for (const auto& t : tensors) {
    const double d = scaled_max_diff(std::span<const float>(grads).subspan(t.offset, t.count),
                                     std::span<const float>(ref.grads).subspan(t.offset, t.count));
    EXPECT_LT(d, 1e-5) << t.name << " at " << t.offset;
  }
  const double grads_diff = scaled_max_diff(grads, ref.grads);
  EXPECT_LT(grads_diff, 1e-5);
  std::printf("vs torch: loss %.9g vs %.9g, logits %.2e, all gradients %.2e (max abs diff / max abs value)\n", loss,
              ref.loss, logits_diff, grads_diff);
}

}  // namespace
}  // namespace zerodp::model
