// SPDX-License-Identifier: Apache-2.0
// The offline checkpoint tools behind `zerodp ckpt inspect|reshard`: they
// need no ranks and no engine, only the files, and they read the model record
// as an opaque JSON object (weights/model_record.h parses it;
// weights/consolidate.h writes whole-model files).
// reshard streams record by record (peak: the largest new record) into a new
// checkpoint directory for M ranks, written to OUT.tmp and renamed when
// complete; the result loads like a checkpoint saved at M ranks.
// Thread-safety: independent calls on distinct outputs may run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "ckpt/shard_reader.h"

namespace zerodp::ckpt {

// ---- inspect ----
struct InspectReport {
  std::string path;  // the checkpoint directory
  Manifest manifest;
  std::vector<FileCheck> files;  // one per rank
  bool ok() const;
};
// Resolves `path` (see resolve_checkpoint), parses the manifest (throws on a
// bad manifest) and verifies every shard file completely (problems are
// reported per file, not thrown).
InspectReport inspect_checkpoint(const std::string& path);

// The full tensor (Φ elements, flat order) from all shards. `tensor` indexes
// manifest.tensors ("master" is 0). Holds 4Φ bytes: consolidate does not use
// it; tests and the fuzz target compare whole states with it. 8-bit Adam's
// codes come widened to float; a per-block tensor (its scales) holds each
// unit's blocks, units in flat order. Units that do not hold the tensor
// (version 3, Manifest::holds) contribute zeros.
std::vector<float> read_full_tensor(CheckpointReader& reader, size_t tensor);

// ---- reshard ----
struct ReshardOptions {
  int ranks = 1;                              // M
  std::optional<Stage> stage = std::nullopt;  // recorded stage; none keeps the saved one
  uint32_t chunk_bytes = 0;                   // 0 keeps the saved chunk size
};
struct ReshardResult {
  std::string path;
  uint64_t bytes_total = 0;
  uint64_t largest_record_bytes = 0;  // the buffer it streamed through
};
// OUT must not exist (or be an empty directory): ConfigError otherwise.
ReshardResult reshard(const std::string& checkpoint, const std::string& out_dir, const ReshardOptions& options);

}  // namespace zerodp::ckpt
