// SPDX-License-Identifier: Apache-2.0
// The checkpoint manifest (manifest.json): what was saved, by whom, and the
// size and CRC32C of every shard file. A checkpoint directory is complete
// exactly when its manifest exists (it is written last, atomically).
//
// The manifest is JSON with a "manifest_crc32c" field: the CRC32C of the
// compact dump of the object without that field (docs/checkpoint-format.md).
// Parsing never trusts the input: every field is type- and range-checked, and
// problems throw IoError naming the file (corrupt or malformed), or
// ConfigError for a format version newer than this build reads.
// Thread-safety: plain values and pure functions (file access aside).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ckpt/format.h"
#include "core/dtype.h"
#include "core/stage.h"
#include "optim/loss_scaler.h"
#include "optim/optimizer_config.h"

namespace zerodp::ckpt {

struct ShardFileInfo {
  std::string file;     // shard_file_name(rank, ranks), relative to the directory
  uint64_t bytes = 0;   // exact file size
  uint32_t crc32c = 0;  // of the whole file
};

struct UnitEntry {
  std::string name;
  size_t count = 0;
  // The indices into Manifest::tensors of the tensors this unit holds,
  // ascending, "master" (0) first; empty: all of them (format.h unit_holds).
  std::vector<uint32_t> tensors = {};
};

struct Manifest {
  uint32_t format_version = 1;  // save writes format_version_for: 2 only with 8-bit state, 3 with per-unit tensors
  uint64_t save_id = 0;         // also in every shard header: files of one save belong together
  std::string created_by;       // "zerodp 0.1.0 (4785fdf)": core/build_info.h

  // The model: model_json is what model::model_config_from_json accepts.
  // "model_kind": the model's family ("gpt", "mlp", a user's own: model/family.h),
  // lower-case letters, digits, '-', '_', '.'; the same as the model's "kind".
  std::string model_kind = "gpt";
  std::string model_json;
  std::string model_description;
  uint64_t num_params = 0;       // Φ
  std::vector<UnitEntry> units;  // flat order; counts sum to Φ

  // How it was trained and sharded.
  int ranks = 1;                     // N: shard files and plan shards
  Stage stage = Stage::k0;           // informational: any stage loads any checkpoint
  Dtype dtype = Dtype::fp32();       // parameter dtype of the run: "fp32", "fp16" or "bf16"
  std::vector<std::string> tensors;  // "master", then the optimizer's state names
  optim::OptimizerConfig optimizer;
  std::string engine_json;  // the rest of the engine config (informational)
  uint32_t chunk_bytes = kDefaultChunkBytes;

  // Where training stands.
  int64_t steps = 0;            // Engine::Counters::steps
  int64_t optimizer_steps = 0;  // Engine::Counters::optimizer_steps
  int64_t data_step = 0;        // the trainer's step (skipped fp16 steps included): where the data resumes
  optim::LossScalerState scaler;
  uint64_t seed = 0;
  std::map<std::string, std::string> metadata;  // free-form, from the caller

  std::vector<ShardFileInfo> shards;  // one per rank, in rank order

  std::vector<size_t> unit_counts() const;
  std::vector<TensorLayout> tensor_layouts() const;  // tensor_layout of each tensor
  // Index of `name` in tensors, or -1.
  int tensor_index(std::string_view name) const;
  // Each unit's UnitEntry::tensors (ShardLayout's unit_tensors).
  std::vector<std::vector<uint32_t>> unit_tensors() const;
  bool per_unit_tensors() const;  // some unit holds a subset
  // Whether unit `unit` holds tensor `tensor` (format.h unit_holds).
  bool holds(size_t unit, size_t tensor) const;
  // The names of the tensors unit `unit` holds, in order.
  std::vector<std::string> tensors_of(size_t unit) const;
};

// The manifest as JSON text, with its CRC.
std::string manifest_to_json(const Manifest& manifest);
// Parses and validates; `path` is only used in messages.
Manifest manifest_from_json(std::string_view text, const std::string& path);

// dir/manifest.json
Manifest read_manifest(const std::string& dir);
// Writes dir/manifest.json atomically (temporary, fsync, rename, fsync dir).
void write_manifest(const std::string& dir, const Manifest& manifest);

}  // namespace zerodp::ckpt
