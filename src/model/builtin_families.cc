// SPDX-License-Identifier: Apache-2.0
// The families zerodp is built with (GPT-2, the MLP, the Llama family), in the order `zerodp model list`
// prints them. A new built-in family adds its entry here.
#include "model/family.h"
#include "model/gpt_family.h"
#include "model/llama_family.h"
#include "model/mlp_family.h"

namespace zerodp::model {

std::vector<Family> builtin_families() { return {gpt_family(), mlp_family(), llama_family()}; }

}  // namespace zerodp::model
