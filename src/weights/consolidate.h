// SPDX-License-Identifier: Apache-2.0
// consolidate: a checkpoint's sharded state as whole-model files
// (safetensors, llm.c's model.bin, a Hugging Face GPT-2 directory), streamed
// through one buffer whatever the model's size: piece by export piece (one
// layer's tensor, or wte), each read from its unit's records into one
// reusable buffer and appended to safetensors (and, for GPT, llm.c's model
// file and Hugging Face GPT-2's layout in OUT/hf/, hf_format.h), so the peak
// is the largest piece (at most a 4 MiB slice) plus the reader's batch, not
// the model. Thread-safety: calls on distinct outputs may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace zerodp::weights {

struct ConsolidateOptions {
  bool llmc = true;               // also model.bin in llm.c's format (GPT only)
  bool hf = true;                 // also hf/model.safetensors + hf/config.json (GPT-2 and the Llama family)
  bool optimizer_states = false;  // also <state>.safetensors for every optimizer tensor
  // OUT/hf/'s tensor dtype and shard size, for every family (hf_checkpoint.h).
  Dtype hf_dtype = Dtype::fp32();
  uint64_t hf_max_shard_bytes = 0;  // 0: one file
};
struct ConsolidateResult {
  std::string checkpoint;            // the directory read
  std::vector<std::string> files;    // written
  uint64_t stream_buffer_bytes = 0;  // the one buffer the tensors streamed through (export_format.h)
  uint64_t rss_before_bytes = 0;     // resident set before reading (this process)
  uint64_t peak_rss_bytes = 0;       // the process's high-water mark after
};
// Writes OUT/model.safetensors (and OUT/model.bin, OUT/hf/model.safetensors,
// OUT/hf/config.json for GPT-2; OUT/hf/ for the Llama family); OUT is created.
ConsolidateResult consolidate(const std::string& checkpoint, const std::string& out_dir,
                              const ConsolidateOptions& options = {});

}  // namespace zerodp::weights
