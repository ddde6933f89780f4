// SPDX-License-Identifier: Apache-2.0
// The shape of a GPT-2-family model and where each tensor lives in the flat
// parameter buffer.
//
// Flat order (units are contiguous; llm.c's file order differs, see llmc_io.h):
//   unit 0       "embedding": wte [Vp, C], wpe [maxT, C]
//   unit 1+l     "block<l>":  ln1w [C], ln1b [C], qkvw [3C, C], qkvb [3C],
//                             attprojw [C, C], attprojb [C], ln2w [C], ln2b [C],
//                             fcw [4C, C], fcb [4C], fcprojw [C, 4C], fcprojb [C]
//   unit L+1     "ln_f":      lnfw [C], lnfb [C]
// Linear weights are [out, in] row-major (PyTorch / llm.c layout).
// Thread-safety: plain values.
#pragma once

#include <cstddef>
#include <string>

namespace zerodp::model {

struct GptConfig {
  int max_seq_len = 0;   // maxT: rows of wpe
  int vocab = 0;         // V: real token ids [0, V)
  int padded_vocab = 0;  // Vp >= V: rows of wte (llm.c pads to a multiple of 128)
  int layers = 0;        // L
  int heads = 0;         // NH
  int channels = 0;      // C, divisible by NH

  // Throws ConfigError naming the bad field and what would fit.
  void validate() const;
  std::string describe() const;
  friend bool operator==(const GptConfig&, const GptConfig&) = default;
};

// The llm.c padding: V rounded up to a multiple of 128.
int padded_vocab_for(int vocab);

// Offsets of each tensor inside one block unit, and the block's size.
struct BlockLayout {
  size_t ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb;
  size_t count;
};
BlockLayout block_layout(int channels);

size_t embedding_unit_params(const GptConfig& c);  // (Vp + maxT) C
size_t gpt_num_params(const GptConfig& c);

}  // namespace zerodp::model
