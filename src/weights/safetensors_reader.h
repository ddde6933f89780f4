// SPDX-License-Identifier: Apache-2.0
// Reading a safetensors file's header (the format: export_format.h): the
// tensors' dtypes, shapes and byte ranges, checked against the file before
// anything is read from it.
//
// A file is recognised as safetensors by content (looks_like_safetensors):
// a u64 header length that fits the file, then '{'. read_safetensors_header
// checks the rest and throws InputFileError naming the file and the problem:
// not JSON, a tensor without dtype/shape/data_offsets, a byte range that does
// not match its shape and dtype, or one past the end of the file ("truncated").
// Thread-safety: pure functions of the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zerodp::weights {

struct SafetensorsEntry {
  std::string dtype;  // "F32", "BF16", ...
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // absolute byte offsets in the file
};

struct SafetensorsHeader {
  std::string path;
  uint64_t file_bytes = 0;
  std::map<std::string, std::string> metadata;  // "__metadata__" (string values)
  std::map<std::string, SafetensorsEntry> tensors;
};

// The first bytes of a file (at least 9) look like a safetensors header of a
// file of `file_bytes`.
bool looks_like_safetensors(const unsigned char* first, size_t n, uint64_t file_bytes);

SafetensorsHeader read_safetensors_header(const std::string& path);

// "[3, 8]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace zerodp::weights
