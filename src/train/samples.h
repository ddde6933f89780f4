// SPDX-License-Identifier: Apache-2.0
// What rank 0 makes of one fp32 copy of the trained model: the sample text
// printed at the end of a run (--sample-tokens, --prompt, --temperature,
// --top-k) and the exact-match accuracy on the embedded corpus's held-out
// sums.
// Thread-safety: pure functions of their arguments.
#pragma once

#include <span>
#include <string>

#include "model/causal_lm.h"
#include "train/corpus.h"
#include "train/train_config.h"

namespace zerodp::train {

// ConfigError when --prompt cannot be turned into the data's token ids (no
// tokenizer for these shards): checked before any rank starts.
void check_sample_prompt(const Corpus& corpus, const TrainConfig& config);

// The sample: config.sample_tokens tokens generated after the prompt
// (--prompt, else a held-out problem or a new document), as text.
std::string sample_text(const model::CausalLm& lm, std::span<const float> params, const Corpus& corpus,
                        const TrainConfig& config);

// The share of the first `count` held-out problems answered exactly by
// greedy generation at `context` positions.
double held_out_accuracy(const model::CausalLm& lm, std::span<const float> params, const Corpus& corpus, int count,
                         int context);

}  // namespace zerodp::train
