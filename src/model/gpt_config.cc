// SPDX-License-Identifier: Apache-2.0
#include "model/gpt_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/error.h"

namespace zerodp::model {

void GptConfig::validate() const {
  ZDP_CHECK(layers >= 1, ConfigError, "[gpt] layers is {}, must be at least 1", layers);
  ZDP_CHECK(heads >= 1, ConfigError, "[gpt] heads is {}, must be at least 1", heads);
  ZDP_CHECK(channels >= 1 && channels % heads == 0, ConfigError,
            "[gpt] channels {} must be a positive multiple of heads {}", channels, heads);
  ZDP_CHECK(vocab >= 1, ConfigError, "[gpt] vocab is {}, must be at least 1", vocab);
  ZDP_CHECK(padded_vocab >= vocab, ConfigError,
            "[gpt] padded_vocab {} is smaller than vocab {}; use {} or leave it out", padded_vocab, vocab,
            padded_vocab_for(vocab));
  ZDP_CHECK(max_seq_len >= 1, ConfigError, "[gpt] max_seq_len is {}, must be at least 1", max_seq_len);
  // Keep every index in int range: the kernels take int shapes.
  ZDP_CHECK(double(padded_vocab) * channels < 2.0e9 && double(channels) * 4 * channels < 2.0e9, ConfigError,
            "[gpt] vocab {} x channels {} is too large", padded_vocab, channels);
}

std::string GptConfig::describe() const {
  return fmt::format("gpt L={} NH={} C={} V={} (padded {}) maxT={}", layers, heads, channels, vocab, padded_vocab,
                     max_seq_len);
}

int padded_vocab_for(int vocab) {
  // In 64 bits: a hostile vocab near INT_MAX must not overflow (found by the
  // llm.c reader's fuzzer); the shape check then refuses it.
  const int64_t padded = (static_cast<int64_t>(vocab) + 127) / 128 * 128;
  return static_cast<int>(std::min<int64_t>(padded, std::numeric_limits<int>::max()));
}

BlockLayout block_layout(int channels) {
  const size_t C = channels;
  BlockLayout b{};
  size_t o = 0;
  b.ln1w = o;
  o += C;
  b.ln1b = o;
  o += C;
  b.qkvw = o;
  o += 3 * C * C;
  b.qkvb = o;
  o += 3 * C;
  b.attprojw = o;
  o += C * C;
  b.attprojb = o;
  o += C;
  b.ln2w = o;
  o += C;
  b.ln2b = o;
  o += C;
  b.fcw = o;
  o += 4 * C * C;
  b.fcb = o;
  o += 4 * C;
  b.fcprojw = o;
  o += 4 * C * C;
  b.fcprojb = o;
  o += C;
  b.count = o;  // 12 C^2 + 13 C
  return b;
}

size_t embedding_unit_params(const GptConfig& c) { return (size_t(c.padded_vocab) + c.max_seq_len) * c.channels; }

size_t gpt_num_params(const GptConfig& c) {
  return embedding_unit_params(c) + size_t(c.layers) * block_layout(c.channels).count + 2 * size_t(c.channels);
}

}  // namespace zerodp::model
