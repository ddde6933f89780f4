// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the safetensors reader (weights/safetensors_reader.h)
// and the --init-from weights reader over it (weights/weights_reader.h). The
// first input byte picks:
//   0: the rest is the whole file (raw bytes);
//   1: the rest is the JSON header, framed as safetensors frames it (its u64
//      length first), followed by zeroed tensor data of the size the next
//      two input bytes give (at most 4 KiB), so the JSON checks are reached;
// and in both modes a header read without error is then opened as a tiny
// GPT's starting weights and every parameter read.
// Every outcome must be a zerodp::Error or a correct read: a tensor whose
// byte range lies outside the file, or a header that passed with a file
// size other than the one on disk, is a finding.
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/gpt_config.h"
#include "weights/safetensors_reader.h"
#include "weights/weights_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerodp;
  if (size == 0) return 0;
  const int mode = data[0] % 2;
  ++data;
  --size;
  static const std::string path = fuzz::scratch_path("_model.safetensors");
  std::vector<uint8_t> file;
  if (mode == 0) {
    file.assign(data, data + size);
  } else {
    size_t payload = 0;
    if (size >= 2) {
      payload = (static_cast<size_t>(data[0]) | static_cast<size_t>(data[1]) << 8) & 4095;
      data += 2;
      size -= 2;
    }
    const uint64_t length = size;
    file.resize(8);
    std::memcpy(file.data(), &length, 8);
    file.insert(file.end(), data, data + size);
    file.resize(file.size() + payload, 0);
  }
  fuzz::write_file(path, file.data(), file.size());
  try {
    const weights::SafetensorsHeader h = weights::read_safetensors_header(path);
    if (h.file_bytes != file.size()) __builtin_trap();  // a wrong read
    for (const auto& [name, e] : h.tensors) {
      if (e.begin > e.end || e.end > h.file_bytes) __builtin_trap();
    }
  } catch (const Error&) {
    return 0;  // refused: the expected outcome for a malformed file
  }
  // A well-formed header: open it as a tiny GPT's weights and read them all.
  model::GptConfig c;
  c.max_seq_len = 4, c.vocab = 8, c.padded_vocab = 8, c.layers = 1, c.heads = 1, c.channels = 4;
  try {
    weights::GptWeightsReader reader(path, c);
    std::vector<float> params(model::gpt_num_params(c));
    reader.read(0, params);
  } catch (const Error&) {
  }
  return 0;
}
