// SPDX-License-Identifier: Apache-2.0
#include "kernels/linear.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "core/error.h"
#include "kernels/compute.h"

namespace zerodp::kernels {
namespace {

// `weight` may be empty where weight_optional (a backward with no input
// gradient reads no weights).
void check_shapes(std::span<const float> inp, const Weights& weight, std::span<const float> bias, LinearShape s,
                  bool weight_optional = false) {
  ZDP_CHECK(s.rows >= 0 && s.in > 0 && s.out > 0, ShapeError, "[linear] bad shape N={} C={} OC={}", s.rows, s.in,
            s.out);
  ZDP_CHECK_EQ(inp.size(), size_t(s.rows) * s.in, ShapeError, "[linear] input size");
  if (!(weight_optional && weight.empty())) {
    ZDP_CHECK_EQ(weight.size(), size_t(s.out) * s.in, ShapeError, "[linear] weight size");
  }
  ZDP_CHECK(bias.empty() || bias.size() == size_t(s.out), ShapeError,
            "[linear] bias has {} elements, expected {} or none", bias.size(), s.out);
}

}  // namespace

void linear_forward(std::span<float> out, std::span<const float> inp, Weights weight, std::span<const float> bias,
                    LinearShape s) {
  check_shapes(inp, weight, bias, s);
  ZDP_CHECK_EQ(out.size(), size_t(s.rows) * s.out, ShapeError, "[linear] output size");
  check_readable(weight);  // before the bias goes into out
  // Seed the output rows with the bias and let the GEMM add onto it (beta=1):
  // one pass over out instead of two.
  float beta = 0.0f;
  if (!bias.empty()) {
    for (int i = 0; i < s.rows; ++i)
      std::copy(bias.begin(), bias.end(), out.begin() + static_cast<std::ptrdiff_t>(i) * s.out);
    beta = 1.0f;
  }
  matmul(Trans::kNo, Trans::kYes, s.rows, s.out, s.in, 1.0f, inp.data(), s.in, weight, s.in, beta, out.data(), s.out);
}

void linear_backward(std::span<float> dinp, std::span<float> dweight, std::span<float> dbias,
                     std::span<const float> dout, std::span<const float> inp, Weights weight, LinearShape s,
                     bool accumulate_dinp, float dout_scale) {
  check_shapes(inp, weight, dbias, s, /*weight_optional=*/dinp.empty());
  ZDP_CHECK_EQ(dout.size(), size_t(s.rows) * s.out, ShapeError, "[linear] output gradient size");
  ZDP_CHECK_EQ(dweight.size(), size_t(s.out) * s.in, ShapeError, "[linear] weight gradient size");
  if (!dinp.empty()) {
    ZDP_CHECK_EQ(dinp.size(), inp.size(), ShapeError, "[linear] input gradient size");
    linear_backward_input(dinp, dout, weight, s, accumulate_dinp, dout_scale);
  }
  // dW[OC,C] += dout^T[OC,N] @ inp[N,C]
  matmul(Trans::kYes, Trans::kNo, s.out, s.in, s.rows, dout_scale, dout.data(), s.out, inp.data(), s.in, 1.0f,
         dweight.data(), s.in);
  if (!dbias.empty()) {
    float* db = dbias.data();
    if (dout_scale == 1.0f) {
      for (int i = 0; i < s.rows; ++i) {
        const float* row = dout.data() + size_t(i) * s.out;
        for (int j = 0; j < s.out; ++j) db[j] += row[j];
      }
    } else {
      for (int i = 0; i < s.rows; ++i) {
        const float* row = dout.data() + size_t(i) * s.out;
        for (int j = 0; j < s.out; ++j) db[j] += dout_scale * row[j];
      }
    }
  }
}

void linear_backward_input(std::span<float> dinp, std::span<const float> dout, Weights weight, LinearShape s,
                           bool accumulate_dinp, float dout_scale) {
  ZDP_CHECK(s.rows >= 0 && s.in > 0 && s.out > 0, ShapeError, "[linear] bad shape N={} C={} OC={}", s.rows, s.in,
            s.out);
  ZDP_CHECK_EQ(dinp.size(), size_t(s.rows) * s.in, ShapeError, "[linear] input gradient size");
  ZDP_CHECK_EQ(dout.size(), size_t(s.rows) * s.out, ShapeError, "[linear] output gradient size");
  ZDP_CHECK_EQ(weight.size(), size_t(s.out) * s.in, ShapeError, "[linear] weight size");
  // dinp[N,C] = dout[N,OC] @ W[OC,C]
  matmul(Trans::kNo, Trans::kNo, s.rows, s.in, s.out, dout_scale, dout.data(), s.out, weight, s.in,
         accumulate_dinp ? 1.0f : 0.0f, dinp.data(), s.in);
}

void linear_backward_weight_rows(std::span<float> dweight_rows, size_t first_out, std::span<const float> dout,
                                 std::span<const float> inp, LinearShape s, float dout_scale) {
  ZDP_CHECK(s.rows >= 0 && s.in > 0 && s.out > 0, ShapeError, "[linear] bad shape N={} C={} OC={}", s.rows, s.in,
            s.out);
  ZDP_CHECK_EQ(inp.size(), size_t(s.rows) * s.in, ShapeError, "[linear] input size");
  ZDP_CHECK_EQ(dout.size(), size_t(s.rows) * s.out, ShapeError, "[linear] output gradient size");
  const size_t rows = dweight_rows.size() / size_t(s.in);
  ZDP_CHECK(rows * s.in == dweight_rows.size() && first_out + rows <= size_t(s.out), ShapeError,
            "[linear] weight gradient rows [{}, {}) of {} elements are not whole rows of the {} outputs", first_out,
            first_out + rows, dweight_rows.size(), s.out);
  if (rows == 0) return;
  // dW[rows, C] += dout[:, rows]^T @ inp: A is dout's columns from first_out.
  matmul(Trans::kYes, Trans::kNo, static_cast<int>(rows), s.in, s.rows, dout_scale, dout.data() + first_out, s.out,
         inp.data(), s.in, 1.0f, dweight_rows.data(), s.in);
}

double linear_flops(LinearShape s) { return 2.0 * s.rows * s.in * s.out; }

void warm_up_linear(std::span<const LinearShape> shapes) {
  // OpenBLAS packs the whole panel of the other operand only when its
  // column-major M (our n) is past its blocking P (below that it streams
  // through a small L1 slice), and its own panel grows up to P: 2048 is
  // past P on the Prescott, Sandybridge, Haswell and SkylakeX kernels
  // (measured; 1024 is not, on Prescott and Sandybridge).
  constexpr int kWidth = 2048;
  for (const LinearShape& s : shapes) {
    const int w_out = std::min(s.out, kWidth), w_in = std::min(s.in, kWidth);
    std::vector<float> inp(size_t(s.rows) * s.in), dout(size_t(s.rows) * s.out);
    std::vector<float> weight(std::max(size_t(w_out) * s.in, size_t(s.out) * w_in));
    std::vector<float> c(std::max(size_t(s.rows) * std::max(w_out, w_in), size_t(s.out) * w_in));
    // Every product with beta 1, as training runs them: the forward adds
    // onto the bias, the backward accumulates the weight gradient and, where
    // a caller asks (Llama's q, k and v), the input gradient. With beta 1
    // the bf16 product carries its sums between blocks of k (k past 1024:
    // a wide input, the head's vocabulary, or rows) in a buffer of its own,
    // up to 4 MiB a thread, that beta 0 would leave empty until training.
    matmul(Trans::kNo, Trans::kYes, s.rows, w_out, s.in, 1.0f, inp.data(), s.in, weight.data(), s.in, 1.0f, c.data(),
           w_out);
    matmul(Trans::kNo, Trans::kNo, s.rows, w_in, s.out, 1.0f, dout.data(), s.out, weight.data(), w_in, 1.0f, c.data(),
           w_in);
    matmul(Trans::kYes, Trans::kNo, s.out, w_in, s.rows, 1.0f, dout.data(), s.out, inp.data(), s.in, 1.0f, c.data(),
           w_in);
  }
}

}  // namespace zerodp::kernels
