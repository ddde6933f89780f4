// SPDX-License-Identifier: Apache-2.0
#include "plan/deepspeed_estimate.h"

#include "plan/memory_model.h"

namespace zerodp::plan {

uint64_t deepspeed_zero2_gpu_bytes(uint64_t num_params, int total_gpus) {
  check_ranks(total_gpus);
  return 2 * num_params + 18 * num_params / static_cast<uint64_t>(total_gpus);
}

uint64_t deepspeed_zero3_gpu_bytes(uint64_t num_params, uint64_t largest_layer_params, int total_gpus) {
  check_ranks(total_gpus);
  return 4 * largest_layer_params + 18 * num_params / static_cast<uint64_t>(total_gpus);
}

}  // namespace zerodp::plan
