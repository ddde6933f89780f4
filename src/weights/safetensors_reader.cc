// SPDX-License-Identifier: Apache-2.0
#include "weights/safetensors_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ckpt/file_io.h"
#include "core/error.h"

namespace zerodp::weights {

using ckpt::File;
namespace {

// The safetensors library's own limit on the header.
constexpr uint64_t kMaxHeaderBytes = 100u << 20;

uint64_t dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2") return 1;
  return 0;
}

uint64_t read_length(const unsigned char* first) {
  uint64_t n = 0;
  std::memcpy(&n, first, 8);
  return n;
}

}  // namespace

bool looks_like_safetensors(const unsigned char* first, size_t n, uint64_t file_bytes) {
  if (n < 9 || file_bytes < 10) return false;
  const uint64_t length = read_length(first);
  return length >= 2 && length <= kMaxHeaderBytes && length <= file_bytes - 8 && first[8] == '{';
}

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

SafetensorsHeader read_safetensors_header(const std::string& path) {
  const File f(path, File::Mode::kRead);
  SafetensorsHeader h;
  h.path = path;
  h.file_bytes = f.size();
  ZDP_CHECK(h.file_bytes >= 8, InputFileError, "[load] {}: {} bytes is too short for a safetensors file", path,
            h.file_bytes);
  std::array<unsigned char, 8> len{};
  f.read_at(0, std::as_writable_bytes(std::span(len)));
  const uint64_t length = read_length(len.data());
  ZDP_CHECK(length <= kMaxHeaderBytes && length <= h.file_bytes - 8, InputFileError,
            "[load] {}: its safetensors header says {} bytes but the file has {}: it is truncated or not safetensors",
            path, length, h.file_bytes);
  std::string text(length, '\0');
  f.read_at(8, std::as_writable_bytes(std::span(text.data(), text.size())));
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    ZDP_THROW(InputFileError, "[load] {}: the safetensors header is not valid JSON ({})", path, e.what());
  }
  ZDP_CHECK(j.is_object(), InputFileError, "[load] {}: the safetensors header is not a JSON object", path);
  const uint64_t data = 8 + length;
  uint64_t needed = data;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) continue;
      for (const auto& [k, s] : v.items()) {
        if (s.is_string()) h.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    // A copy: a lambda may not capture a structured binding before C++20's P1091 (clang 14).
    const std::string& tensor_name = name;
    auto bad = [&](const std::string& what) {
      ZDP_THROW(InputFileError, "[load] {}: tensor \"{}\" {} in the safetensors header", path, tensor_name, what);
    };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets")) {
      bad("lacks dtype, shape or data_offsets");
    }
    SafetensorsEntry e;
    if (!v.at("dtype").is_string()) bad("has a dtype that is not a string");
    e.dtype = v.at("dtype").get<std::string>();
    const uint64_t width = dtype_bytes(e.dtype);
    if (width == 0) bad("has an unknown dtype " + e.dtype);
    uint64_t count = 1;
    if (!v.at("shape").is_array()) bad("has a shape that is not an array");
    for (const auto& d : v.at("shape")) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0 || d.get<int64_t>() > (int64_t{1} << 40)) {
        bad("has a bad dimension " + d.dump());
      }
      e.shape.push_back(d.get<int64_t>());
      count *= static_cast<uint64_t>(e.shape.back());
      if (count > (uint64_t{1} << 40)) bad("is too large");
    }
    const auto& o = v.at("data_offsets");
    if (!o.is_array() || o.size() != 2 || !o[0].is_number_unsigned() || !o[1].is_number_unsigned()) {
      bad("has data_offsets that are not two unsigned integers");
    }
    const uint64_t b = o[0].get<uint64_t>(), end = o[1].get<uint64_t>();
    if (b > end || end - b != count * width) {
      bad(fmt::format("has data_offsets [{}, {}) that do not hold its {} {} elements", b, end, count, e.dtype));
    }
    needed = std::max(needed, data + end);
    e.begin = data + b;
    e.end = data + end;
    h.tensors.emplace(name, std::move(e));
  }
  ZDP_CHECK(h.file_bytes >= needed, InputFileError, "[load] {}: truncated: the file has {} bytes, its header needs {}",
            path, h.file_bytes, needed);
  ZDP_CHECK(h.file_bytes == needed, InputFileError,
            "[load] {}: the file has {} bytes but its safetensors header describes {}: bytes were appended", path,
            h.file_bytes, needed);
  return h;
}

}  // namespace zerodp::weights
