// SPDX-License-Identifier: Apache-2.0
#include "weights/hf_checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ckpt/file_io.h"
#include "core/error.h"

namespace zerodp::weights {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The index's weight_map: each tensor's shard, the shards in order of
// first mention.
struct Index {
  std::vector<std::string> files;
  std::map<std::string, size_t> file_of;
};
Index read_weight_map(const fs::path& dir) {
  const std::string index_path = (dir / kHfIndexName).string();
  const json index = read_hf_json(index_path);
  ZDP_CHECK(index.contains("weight_map") && index["weight_map"].is_object(), InputFileError,
            "[init-from] {} has no \"weight_map\" object", index_path);
  Index out;
  for (const auto& [tensor, file] : index["weight_map"].items()) {
    ZDP_CHECK(file.is_string(), InputFileError, "[init-from] {}: the file of {} is not a string", index_path, tensor);
    const std::string name = file.get<std::string>();
    ZDP_CHECK(name.find('/') == std::string::npos && name != ".." && name != ".", InputFileError,
              "[init-from] {}: shard '{}' must be a file name in the checkpoint's directory", index_path, name);
    const std::string p = (dir / name).string();
    auto at = std::find(out.files.begin(), out.files.end(), p);
    if (at == out.files.end()) at = out.files.insert(at, p);
    out.file_of[tensor] = static_cast<size_t>(at - out.files.begin());
  }
  return out;
}

}  // namespace

nlohmann::json read_hf_json(const std::string& path) {
  std::ifstream in(path);
  ZDP_CHECK(in.good(), InputFileError, "[init-from] cannot open {}", path);
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    ZDP_THROW(InputFileError, "[init-from] {} is not JSON: {}", path, e.what());
  }
}

std::string hf_config_path(const std::string& path) {
  return fs::is_directory(path) ? (fs::path(path) / kHfConfigName).string()
                                : (fs::path(path).parent_path() / kHfConfigName).string();
}

const SafetensorsEntry& HfFiles::entry(const std::string& name) const {
  const auto it = file_of.find(name);
  ZDP_CHECK(it != file_of.end(), InputFileError, "[init-from] {} lacks tensor {}", where, name);
  return headers[it->second].tensors.at(name);
}

HfFiles open_hf_files(const std::string& path) {
  HfFiles out;
  out.where = path;
  std::vector<std::string> files;
  const bool indexed = fs::is_directory(path) && fs::is_regular_file(fs::path(path) / kHfIndexName);
  if (!fs::is_directory(path)) {
    files.push_back(path);
  } else if (indexed) {
    Index index = read_weight_map(path);
    files = std::move(index.files);
    out.file_of = std::move(index.file_of);
    out.where = (fs::path(path) / kHfIndexName).string();
  } else {
    ZDP_CHECK(fs::is_regular_file(fs::path(path) / kHfWeightsName), InputFileError,
              "[init-from] {} has neither {} nor {}", path, kHfWeightsName, kHfIndexName);
    files.push_back((fs::path(path) / kHfWeightsName).string());
  }
  for (const std::string& p : files) {
    ZDP_CHECK(fs::is_regular_file(p), InputFileError, "[init-from] shard {} is missing (named by the index)", p);
    out.headers.push_back(read_safetensors_header(p));
  }
  if (indexed) {  // the index says where each tensor is, as transformers reads it
    for (const auto& [name, file] : out.file_of) {
      ZDP_CHECK(out.headers[file].tensors.count(name) != 0, InputFileError,
                "[init-from] {} lacks tensor {} (the index names it there)", out.headers[file].path, name);
    }
    return out;
  }
  for (const auto& [name, entry] : out.headers.front().tensors) out.file_of.emplace(name, 0);
  return out;
}

Dtype hf_tensor_dtype(const SafetensorsEntry& entry, const std::string& tensor, const std::string& file) {
  if (entry.dtype == "F32") return Dtype::fp32();
  if (entry.dtype == "BF16") return Dtype::bf16();
  if (entry.dtype == "F16") return Dtype::fp16();
  ZDP_THROW(InputFileError, "[init-from] {}: tensor {} is {}; zerodp reads F32, BF16 and F16 weights", file, tensor,
            entry.dtype);
}

const char* hf_torch_dtype(Dtype dtype) {
  return dtype == Dtype::bf16() ? "bfloat16" : dtype == Dtype::fp16() ? "float16" : "float32";
}

uint64_t write_hf_checkpoint(const std::string& dir, const std::string& config_json,
                             std::span<const ExportTensor> tensors, const PieceReader& read,
                             const HfWriteOptions& options, std::vector<std::string>& written, size_t slice_elements) {
  // Consecutive tensors grouped into files of at most max_shard_bytes.
  std::vector<std::vector<ExportTensor>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (const ExportTensor& t : tensors) {
    const uint64_t bytes = options.dtype.size() * t.count();
    if (options.max_shard_bytes > 0 && !shards.back().empty() && in_shard + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += bytes;
    total += bytes;
  }
  uint64_t buffers = 0;
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = shards.size() == 1
                                 ? std::string(kHfWeightsName)
                                 : fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    const std::string path = (fs::path(dir) / name).string();
    buffers = std::max(buffers,
                       write_safetensors(path, shards[i], read, {{"format", "pt"}}, "", slice_elements, options.dtype));
    for (const ExportTensor& t : shards[i]) weight_map[t.name] = name;
    written.push_back(name);
  }
  if (shards.size() > 1) {
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    ckpt::write_file_atomically(dir + "/" + kHfIndexName, index.dump(2) + "\n");
    written.emplace_back(kHfIndexName);
  }
  ckpt::write_file_atomically(dir + "/" + kHfConfigName, config_json);
  written.emplace_back(kHfConfigName);
  return buffers;
}

}  // namespace zerodp::weights
