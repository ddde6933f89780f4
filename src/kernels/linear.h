// SPDX-License-Identifier: Apache-2.0
// Fully connected layer (PyTorch's nn.Linear layout): out = inp @ weight^T + bias.
// Weights are [out_features, in_features] row-major, as in GPT-2 / llm.c.
// Both passes are GEMMs through gemm(); backward ACCUMULATES into dweight and
// dbias (+=) so micro-batches and shared weights add up, and either
// overwrites or accumulates dinp (accumulate_dinp) so residual streams can add
// in place. Spans are checked against the shapes (ShapeError). The weights
// are fp32, or bf16 read in place by the bf16 products (weights.h): the
// bits of their fp32 widening, and a ConfigError at fp32 compute (before
// anything is written).
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstddef>
#include <span>

#include "kernels/weights.h"

namespace zerodp::kernels {

struct LinearShape {
  int rows = 0;  // N: batch * sequence positions
  int in = 0;    // C
  int out = 0;   // OC
};

// out[N,OC] = inp[N,C] @ weight[OC,C]^T + bias[OC]; bias may be empty (no bias).
void linear_forward(std::span<float> out, std::span<const float> inp, Weights weight, std::span<const float> bias,
                    LinearShape s);

// With g = dout_scale * dout[N,OC] (the scale rides on the GEMMs' alpha, so
// no pass over dout is needed):
// dinp[N,C] (= or +=) g @ weight[OC,C]; dweight[OC,C] += g^T @ inp;
// dbias[OC] += column sums of g. dinp may be empty (not needed), and then
// weight may be too (it is read for dinp only); dbias may be empty (no bias).
void linear_backward(std::span<float> dinp, std::span<float> dweight, std::span<float> dbias,
                     std::span<const float> dout, std::span<const float> inp, Weights weight, LinearShape s,
                     bool accumulate_dinp, float dout_scale = 1.0f);
// linear_backward's input gradient alone: dinp[N,C] (= or +=) g @ weight.
// With linear_backward(dinp = {}, weight = {}) for the rest, the bits of
// one linear_backward call (a weight gradient computed later).
void linear_backward_input(std::span<float> dinp, std::span<const float> dout, Weights weight, LinearShape s,
                           bool accumulate_dinp, float dout_scale = 1.0f);

// linear_backward's weight gradient for the output rows [first_out,
// first_out + dweight_rows.size() / C) alone: dweight_rows += g[:, rows]^T @
// inp. With bf16 products each element's sum is its own (gemm_bf16.h), so
// these are the bits linear_backward gives those rows: a weight gradient
// can be made a few rows at a time. (With fp32 products, OpenBLAS's
// blocking of the smaller product may differ from the whole one's.)
void linear_backward_weight_rows(std::span<float> dweight_rows, size_t first_out, std::span<const float> dout,
                                 std::span<const float> inp, LinearShape s, float dout_scale = 1.0f);

// 2 * N * C * OC: FLOPs of one forward GEMM (backward is twice that).
double linear_flops(LinearShape s);

// Runs the products of linear_forward/backward for each shape once, on
// zeros, with the output width cut to 2048 columns: the OpenBLAS packing
// buffer these calls take (see GemmBufferHold) fills as far as these shapes
// fill it in training (the panels depend on the other two dimensions, kept
// whole, once the width is past the kernel's blocking). It costs up to one
// micro-batch's matrix products (less for wide layers and the vocabulary's
// forward). Temporary inputs are the size of one layer's activations and
// weights.
void warm_up_linear(std::span<const LinearShape> shapes);

}  // namespace zerodp::kernels
