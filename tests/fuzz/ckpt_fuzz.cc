// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the checkpoint readers (build with -DZERODP_FUZZ=ON
// and clang; tests/ckpt's fuzz_smoke_test also runs it on fixed inputs).
//
// The first input byte picks what the rest feeds:
//   0: the manifest parser (manifest_from_json) on the raw bytes;
//   1: shard file 0 of a small fixed checkpoint, padded or cut to the size
//      the manifest expects (so reading goes past the size check);
//   2: the same with the raw size (truncated / extended files);
//   3: a valid shard file 0 with the input applied as (offset, xor) pairs.
// Every outcome must be a zerodp::Error or a correct read; anything else
// (a crash, a sanitizer report, another exception type) is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ckpt/format.h"
#include "ckpt/manifest.h"
#include "ckpt/offline.h"
#include "ckpt/shard_reader.h"
#include "ckpt/shard_writer.h"
#include "core/error.h"

namespace {

using namespace zerodp::ckpt;

struct Fixture {
  std::string dir;
  Manifest manifest;
  std::vector<char> valid0;  // shard 0 as written
  Fixture() = default;
  Fixture(Fixture&&) = default;
  ~Fixture() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

std::vector<char> slurp(const std::string& path) {
  std::vector<char> out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

void spit(const std::string& path, const uint8_t* data, size_t size) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
}

// Two units of 5 and 3 elements, two ranks, master + exp_avg, 8-byte chunks.
const Fixture& fixture() {
  static const Fixture fx = [] {
    Fixture f;
    std::string pattern = (std::filesystem::temp_directory_path() / "zerodp-ckpt-fuzz-XXXXXX").string();
    f.dir = ::mkdtemp(pattern.data());
    Manifest& m = f.manifest;
    m.save_id = 77;
    m.created_by = "fuzz";
    m.model_kind = "mlp";
    m.model_json = R"({"kind":"mlp","widths":[1,2,1],"head":"regression"})";
    m.units = {{"fc0", 5}, {"fc1", 3}};
    m.num_params = 8;
    m.ranks = 2;
    m.tensors = {"master", "exp_avg"};
    m.chunk_bytes = 8;
    const std::vector<size_t> counts = m.unit_counts();
    for (int r = 0; r < 2; ++r) {
      const ShardLayout layout(counts, 2, r, 2, 8);
      const std::string name = shard_file_name(r, 2);
      ShardWriter w(f.dir + "/" + name, {kFormatVersion, uint32_t(r), 2, 2, 2, 8, 77}, layout);
      for (size_t u = 0; u < 2; ++u) {
        for (size_t t = 0; t < 2; ++t) {
          std::vector<float> v(layout.range(u).count, float(u * 10 + t) + 0.5f);
          w.write_record(u, t, v);
        }
      }
      ShardFileInfo info = w.finish();
      info.file = name;
      m.shards.push_back(info);
    }
    f.valid0 = slurp(f.dir + "/" + shard_file_name(0, 2));
    return f;
  }();
  return fx;
}

void read_everything(const Manifest& m, const std::string& dir) {
  CheckpointReader reader(dir, m);
  for (size_t t = 0; t < m.tensors.size(); ++t) read_full_tensor(reader, t);
  reader.verify_file(0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int mode = data[0] % 4;
  ++data;
  --size;
  try {
    if (mode == 0) {
      manifest_from_json(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/manifest.json");
      return 0;
    }
    const Fixture& fx = fixture();
    const std::string path0 = fx.dir + "/" + shard_file_name(0, 2);
    Manifest m = fx.manifest;
    if (mode == 1 || mode == 2) {
      std::vector<uint8_t> bytes(data, data + size);
      if (mode == 1) bytes.resize(m.shards[0].bytes);
      spit(path0, bytes.data(), bytes.size());
    } else {
      std::vector<char> bytes = fx.valid0;
      for (size_t i = 0; i + 1 < size; i += 2) bytes[data[i] % bytes.size()] ^= static_cast<char>(data[i + 1]);
      spit(path0, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    }
    read_everything(m, fx.dir);
  } catch (const zerodp::Error&) {
    // The expected outcome for a damaged input.
  }
  return 0;
}
