// SPDX-License-Identifier: Apache-2.0
#include "plan/checkpoint_size.h"

#include "optim/optimizer.h"
#include "plan/memory_model.h"
#include "plan/predict.h"

namespace zerodp::plan {
namespace {

// Bounds on the format's records (ckpt/format.h: a 36-byte record header,
// a 4-byte CRC per chunk of at least 64 KiB).
constexpr uint64_t kRecordBound = 64;            // its header and the CRC of its partial last chunk
constexpr uint64_t kTensorsPerUnitBound = 8;     // master and every optimizer state tensor name
constexpr uint64_t kPayloadBytesPerCrc = 16384;  // 4 bytes per 64 KiB chunk

}  // namespace

uint64_t checkpoint_bytes(const UnitSchedule& schedule, const optim::OptimizerConfig& optimizer, int ranks) {
  check_ranks(ranks);
  // fp32 master weights and the moments, per parameter: 8-bit codes stay
  // one byte, every other state is stored as fp32 (ckpt/format.h's
  // tensor_layout; Lion's bf16 momentum too).
  const optim::OptimizerBytesPerParam k = optim::optimizer_bytes_per_param(optimizer, /*mixed_precision=*/true);
  const auto stored = [](size_t bytes) -> uint64_t { return bytes <= 1 ? bytes : sizeof(float); };
  uint64_t payload = schedule.num_params() * (k.master + stored(k.moment1) + stored(k.moment2));
  for (int rank = 0; rank < ranks; ++rank) {
    // Both moments' block scales and fp32 units (8-bit Adam).
    payload += 2 * moment_extra_bytes(schedule.unit_counts, schedule.embedding_unit, ranks, rank, true, optimizer);
  }
  // Adafactor's statistics in their packed form: one fp32 per element
  // (optim::adafactor_packed_range).
  if (k.tensor_stats) payload += schedule.num_params() * sizeof(float);
  const auto n = static_cast<uint64_t>(ranks);
  const uint64_t records = n * schedule.unit_counts.size() * kTensorsPerUnitBound;
  const uint64_t units = schedule.unit_counts.size();
  return payload + payload / kPayloadBytesPerCrc + records * kRecordBound + n * kShardFileBytes + kManifestBytes +
         units * kManifestBytesPerUnit;
}

uint64_t checkpoint_bytes(const model::ModelConfig& config, const optim::OptimizerConfig& optimizer, int ranks) {
  return checkpoint_bytes(unit_schedule(config), optimizer, ranks);
}

}  // namespace zerodp::plan
