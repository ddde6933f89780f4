// SPDX-License-Identifier: Apache-2.0
// Test support: reads a reference fixture in safetensors form (the format
// is in tools/make_llama_fixture.py's header: an 8-byte little-endian header
// length, a JSON header, then F32 / I32 little-endian data) into memory, by
// tensor name. Small files only; throws std::runtime_error on anything
// unexpected, which fails the test that reads it.
// Thread-safety: an instance is immutable after construction.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace zerodp::kernels::testing {

class SafetensorsFixture {
 public:
  explicit SafetensorsFixture(const std::string& path) {
    static_assert(std::endian::native == std::endian::little, "fixtures are little-endian");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    uint64_t n = 0;
    if (bytes.size() < 8) throw std::runtime_error(path + ": too short");
    std::memcpy(&n, bytes.data(), 8);
    if (8 + n > bytes.size()) throw std::runtime_error(path + ": header past the end");
    const nlohmann::json header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + long(n));
    const size_t base = 8 + n;
    for (const auto& [name, entry] : header.items()) {
      if (name == "__metadata__") {
        for (const auto& [k, v] : entry.items()) metadata_[k] = v.get<std::string>();
        continue;
      }
      Tensor t;
      t.shape = entry.at("shape").get<std::vector<int64_t>>();
      const auto off = entry.at("data_offsets").get<std::vector<uint64_t>>();
      const std::string dtype = entry.at("dtype").get<std::string>();
      if (off.size() != 2 || off[1] < off[0] || base + off[1] > bytes.size() || (off[1] - off[0]) % 4 != 0) {
        throw std::runtime_error(path + ": bad data_offsets of " + name);
      }
      const size_t count = (off[1] - off[0]) / 4;
      const char* p = bytes.data() + base + off[0];
      if (dtype == "F32") {
        t.f32.resize(count);
        std::memcpy(t.f32.data(), p, count * 4);
      } else if (dtype == "I32") {
        t.i32.resize(count);
        std::memcpy(t.i32.data(), p, count * 4);
      } else {
        throw std::runtime_error(path + ": dtype " + dtype + " of " + name);
      }
      tensors_[name] = std::move(t);
    }
  }

  const std::vector<float>& f32(const std::string& name) const {
    const Tensor& t = get(name);
    if (t.f32.empty() && !t.i32.empty()) throw std::runtime_error(name + " is not F32");
    return t.f32;
  }
  const std::vector<int32_t>& i32(const std::string& name) const {
    const Tensor& t = get(name);
    if (t.i32.empty() && !t.f32.empty()) throw std::runtime_error(name + " is not I32");
    return t.i32;
  }
  const std::vector<int64_t>& shape(const std::string& name) const { return get(name).shape; }
  bool has(const std::string& name) const { return tensors_.count(name) != 0; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& [k, v] : tensors_) out.push_back(k);
    return out;
  }
  double number(const std::string& key) const {
    const auto it = metadata_.find(key);
    if (it == metadata_.end()) throw std::runtime_error("no metadata " + key);
    return std::stod(it->second);
  }

 private:
  struct Tensor {
    std::vector<int64_t> shape;
    std::vector<float> f32;
    std::vector<int32_t> i32;
  };
  const Tensor& get(const std::string& name) const {
    const auto it = tensors_.find(name);
    if (it == tensors_.end()) throw std::runtime_error("no tensor " + name);
    return it->second;
  }
  std::map<std::string, Tensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

// max |got - want| / max |want| (or the plain max difference when want is 0):
// the error relative to the tensor's scale.
inline double scaled_max_diff(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return 1e30;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    diff = std::max(diff, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace zerodp::kernels::testing
