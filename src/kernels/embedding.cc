// SPDX-License-Identifier: Apache-2.0
#include "kernels/embedding.h"

#include <cstddef>

#include "core/error.h"

namespace zerodp::kernels {
namespace {

void check(std::span<const int32_t> tokens, size_t wte_size, size_t wpe_size, EmbeddingShape s) {
  ZDP_CHECK(s.batch >= 0 && s.seq > 0 && s.channels > 0 && s.vocab > 0, ShapeError,
            "[embedding] bad shape B={} T={} C={} V={}", s.batch, s.seq, s.channels, s.vocab);
  ZDP_CHECK_EQ(tokens.size(), size_t(s.batch) * s.seq, ShapeError, "[embedding] tokens size");
  ZDP_CHECK(wte_size >= size_t(s.vocab) * s.channels, ShapeError, "[embedding] token table has {} elements, needs {}",
            wte_size, size_t(s.vocab) * s.channels);
  ZDP_CHECK(wpe_size >= size_t(s.seq) * s.channels, ShapeError,
            "[embedding] sequence length {} exceeds the position table ({} rows)", s.seq, wpe_size / s.channels);
  for (int32_t t : tokens) {
    ZDP_CHECK(t >= 0 && t < s.vocab, ShapeError, "[embedding] token {} outside the vocabulary [0, {})", t, s.vocab);
  }
}

}  // namespace

namespace {

float widen(float x) { return x; }
float widen(BFloat16 x) { return bfloat16_to_float(x); }

// out = wte[token] + wpe[t], the tables' values widened to fp32 (exact).
template <typename T>
void embed(std::span<float> out, std::span<const int32_t> tokens, std::span<const T> wte, std::span<const T> wpe,
           EmbeddingShape s) {
  check(tokens, wte.size(), wpe.size(), s);
  const size_t C = s.channels;
  ZDP_CHECK_EQ(out.size(), size_t(s.batch) * s.seq * C, ShapeError, "[embedding] output size");
  for (int b = 0; b < s.batch; ++b) {
    for (int t = 0; t < s.seq; ++t) {
      const size_t bt = size_t(b) * s.seq + t;
      const T* __restrict e = wte.data() + size_t(tokens[bt]) * C;
      const T* __restrict p = wpe.data() + size_t(t) * C;
      float* __restrict o = out.data() + bt * C;
      for (size_t c = 0; c < C; ++c) o[c] = widen(e[c]) + widen(p[c]);
    }
  }
}

}  // namespace

void embedding_forward(std::span<float> out, std::span<const int32_t> tokens, std::span<const float> wte,
                       std::span<const float> wpe, EmbeddingShape s) {
  embed(out, tokens, wte, wpe, s);
}

void embedding_forward(std::span<float> out, std::span<const int32_t> tokens, std::span<const BFloat16> wte,
                       std::span<const BFloat16> wpe, EmbeddingShape s) {
  embed(out, tokens, wte, wpe, s);
}

void embedding_backward(std::span<float> dwte, std::span<float> dwpe, std::span<const float> dout,
                        std::span<const int32_t> tokens, EmbeddingShape s) {
  check(tokens, dwte.size(), dwpe.size(), s);
  const size_t C = s.channels;
  ZDP_CHECK_EQ(dout.size(), size_t(s.batch) * s.seq * C, ShapeError, "[embedding] output gradient size");
  for (int b = 0; b < s.batch; ++b) {
    for (int t = 0; t < s.seq; ++t) {
      const size_t bt = size_t(b) * s.seq + t;
      const float* __restrict d = dout.data() + bt * C;
      float* __restrict e = dwte.data() + size_t(tokens[bt]) * C;
      float* __restrict p = dwpe.data() + size_t(t) * C;
      for (size_t c = 0; c < C; ++c) e[c] += d[c];
      for (size_t c = 0; c < C; ++c) p[c] += d[c];
    }
  }
}

void embedding_backward_rows(std::span<float> rows, size_t first_row, size_t wte_rows, std::span<const float> dout,
                             std::span<const int32_t> tokens, EmbeddingShape s) {
  const size_t C = s.channels;
  ZDP_CHECK(s.channels > 0 && rows.size() % C == 0, ShapeError, "[embedding] {} gradient elements are not rows of {}",
            rows.size(), s.channels);
  check(tokens, wte_rows * C, size_t(s.seq) * C, s);
  ZDP_CHECK_EQ(dout.size(), size_t(s.batch) * s.seq * C, ShapeError, "[embedding] output gradient size");
  const size_t end_row = first_row + rows.size() / C;
  auto row = [&](size_t r) { return r >= first_row && r < end_row ? rows.data() + (r - first_row) * C : nullptr; };
  for (int b = 0; b < s.batch; ++b) {
    for (int t = 0; t < s.seq; ++t) {
      const size_t bt = size_t(b) * s.seq + t;
      const float* __restrict d = dout.data() + bt * C;
      if (float* __restrict e = row(size_t(tokens[bt]))) {
        for (size_t c = 0; c < C; ++c) e[c] += d[c];
      }
      if (float* __restrict p = row(wte_rows + size_t(t))) {
        for (size_t c = 0; c < C; ++c) p[c] += d[c];
      }
    }
  }
}

}  // namespace zerodp::kernels
