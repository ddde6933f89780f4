// SPDX-License-Identifier: Apache-2.0
// A Hugging Face checkpoint directory as transformers' save_pretrained
// writes it, for every family zerodp reads and writes that way (GPT-2:
// hf_format.h; the Llama family: llama_hf_reader.h, llama_hf_writer.h):
// config.json beside model.safetensors, or beside the shards
// model-0000K-of-0000M.safetensors that model.safetensors.index.json's
// weight_map names, the tensors in F32, BF16 or F16.
//
// Reading: open_hf_files finds the files and which one holds each tensor,
// and reads every header (each checked against its file); the family's
// reader then checks names and shapes against its model. Writing:
// write_hf_checkpoint groups consecutive tensors into files of at most a
// byte budget, streams each through write_safetensors in the asked dtype
// (each value rounded to nearest even once), and writes the index (when
// there is more than one file) and the family's config.json.
// Thread-safety: pure functions and file I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "weights/export_format.h"
#include "weights/safetensors_reader.h"

namespace zerodp::weights {

inline constexpr const char* kHfWeightsName = "model.safetensors";
inline constexpr const char* kHfConfigName = "config.json";
// The index that names a sharded checkpoint's files.
inline constexpr const char* kHfIndexName = "model.safetensors.index.json";

// A checkpoint's JSON file (config.json, the index) parsed; InputFileError
// naming it when it cannot be opened or is not JSON.
nlohmann::json read_hf_json(const std::string& path);

// Where a checkpoint's config.json lies: in PATH when it is a directory,
// else beside the file.
std::string hf_config_path(const std::string& path);

// The files of the checkpoint at PATH: a directory (model.safetensors, or
// the index and its shards), or one safetensors file.
struct HfFiles {
  std::string where;                       // PATH, for messages
  std::vector<SafetensorsHeader> headers;  // one per file, in the index's order of first mention
  // Each tensor and the file that holds it: the index's weight_map (each
  // checked to be in its file), or one file's tensors.
  std::map<std::string, size_t> file_of;
  // The entry of tensor `name` (InputFileError naming the file, or the
  // index, when no file has it).
  const SafetensorsEntry& entry(const std::string& name) const;
  bool has(const std::string& name) const { return file_of.count(name) != 0; }
};

// InputFileError, naming the path and what to do: no weights file, an index
// without a weight_map, a shard that is not a file name or is missing, a
// tensor missing from the shard the index names, a header that does not fit
// its file.
HfFiles open_hf_files(const std::string& path);

// "F32" / "BF16" / "F16" as a Dtype (InputFileError naming the tensor and
// the file for any other).
Dtype hf_tensor_dtype(const SafetensorsEntry& entry, const std::string& tensor, const std::string& file);

struct HfWriteOptions {
  Dtype dtype = Dtype::fp32();  // the tensors' element type (torch_dtype in config.json)
  // A file holds at most this many bytes of tensors (one larger tensor
  // alone); 0: one file. More than one file: model-0000K-of-0000M.safetensors
  // and model.safetensors.index.json, as save_pretrained's max_shard_size.
  uint64_t max_shard_bytes = 0;
};

// config.json's "torch_dtype" for `dtype`: "float32", "bfloat16", "float16".
const char* hf_torch_dtype(Dtype dtype);

// Writes `tensors` and config_json (the family's config.json text) into
// dir (which exists); appends the files' names to `written`. Returns the
// bytes of the buffers the tensors streamed through.
uint64_t write_hf_checkpoint(const std::string& dir, const std::string& config_json,
                             std::span<const ExportTensor> tensors, const PieceReader& read,
                             const HfWriteOptions& options, std::vector<std::string>& written,
                             size_t slice_elements = kExportSliceElements);

}  // namespace zerodp::weights
