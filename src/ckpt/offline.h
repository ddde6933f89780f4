// SPDX-License-Identifier: Apache-2.0
// The offline checkpoint tools behind `zerodp ckpt inspect|consolidate|
// reshard`: they need no ranks and no engine, only the files.
//
// consolidate streams export piece by export piece (one layer's tensor, or
// wte): each is read from its unit's records into one reusable buffer and
// appended to safetensors (and, for GPT, llm.c's model file and Hugging Face
// GPT-2's layout in OUT/hf/, hf_format.h), so the peak is the largest piece
// (at most a 4 MiB slice) plus the reader's batch, not the model.
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

// ---- consolidate ----
// The full tensor (Φ elements, flat order) from all shards. `tensor` indexes
// manifest.tensors ("master" is 0). Holds 4Φ bytes: consolidate does not use
// it; tests and the fuzz target compare whole states with it.
std::vector<float> read_full_tensor(CheckpointReader& reader, size_t tensor);

struct ConsolidateOptions {
  bool llmc = true;               // also model.bin in llm.c's format (GPT only)
  bool hf = true;                 // also hf/model.safetensors + hf/config.json (GPT only)
  bool optimizer_states = false;  // also <state>.safetensors for every optimizer tensor
};
struct ConsolidateResult {
  std::string checkpoint;            // the directory read
  std::vector<std::string> files;    // written
  uint64_t stream_buffer_bytes = 0;  // the one buffer the tensors streamed through (export_format.h)
  uint64_t rss_before_bytes = 0;     // resident set before reading (this process)
  uint64_t peak_rss_bytes = 0;       // the process's high-water mark after
};
// Writes OUT/model.safetensors (and OUT/model.bin, OUT/hf/model.safetensors,
// OUT/hf/config.json for GPT); OUT is created.
ConsolidateResult consolidate(const std::string& checkpoint, const std::string& out_dir,
                              const ConsolidateOptions& options = {});

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
