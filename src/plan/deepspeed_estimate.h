// SPDX-License-Identifier: Apache-2.0
// DeepSpeed's own model-state memory estimators, reproduced beside zerodp's
// so a reader can see where the two models differ (REFERENCE.md).
//
// DeepSpeed, no offload, per GPU:
//   estimate_zero2_model_states_mem_needs:  2Φ + int(18Φ/N)
//   estimate_zero3_model_states_mem_needs:  4 x largest_layer_params + int(18Φ/N)
// The 18 counts fp16 grads 2 + an fp32 gradient partition 4 + fp32 master 4
// + Adam moments 8, i.e. DeepSpeed's implementation of mixed-precision Adam;
// zerodp's model is the paper's 16Φ (2 + 2 + 12), which keeps no fp32
// gradient copy. DeepSpeed prints these as "GB" but divides by 2^30: GiB.
// (Older DeepSpeed releases used 4Φ + int(16Φ/N) for ZeRO-2.)
// The formulas assume fp16/bf16 + Adam whatever zerodp's precision is.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>

namespace zerodp::plan {

// int(18Φ/N) is computed exactly (floor of the integer quotient).
uint64_t deepspeed_zero2_gpu_bytes(uint64_t num_params, int total_gpus);
uint64_t deepspeed_zero3_gpu_bytes(uint64_t num_params, uint64_t largest_layer_params, int total_gpus);

}  // namespace zerodp::plan
