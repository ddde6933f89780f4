// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the libFuzzer targets whose readers take a path: one
// scratch file per process (in /dev/shm when present, so writing it each
// iteration costs little), rewritten with every input.
// Thread-safety: none needed (libFuzzer calls the target from one thread).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace zerodp::fuzz {

// A per-process path ending in `suffix` (the readers pick formats by extension).
inline std::string scratch_path(const std::string& suffix) {
  const std::string dir =
      std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path().string();
  return dir + "/zerodp_fuzz_" + std::to_string(::getpid()) + suffix;
}

inline void write_file(const std::string& path, const void* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();  // the harness itself failed
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  if (std::fclose(f) != 0) std::abort();
}

// Reads up to 4 bytes of input as an int32 (zero-filled) and advances.
inline int32_t take_i32(const uint8_t*& data, size_t& size) {
  int32_t v = 0;
  const size_t n = size < 4 ? size : 4;
  std::memcpy(&v, data, n);
  data += n;
  size -= n;
  return v;
}

}  // namespace zerodp::fuzz
