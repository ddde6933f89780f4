// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the llm.c model reader (load_llmc_model). The first
// input byte picks:
//   0: the rest is the whole file (raw bytes);
//   1: a header with a valid magic and version whose six dimension fields
//      (maxT, V, L, NH, C, Vp) come from the next 24 input bytes, then the
//      rest as parameters (probes the header checks and size arithmetic);
//   2: as 1, but with small dimensions and the parameters padded or cut to
//      the size the header implies, so reading gets past the size check.
// Every outcome must be a zerodp::Error or a correct read.
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "model/gpt_config.h"
#include "model/llmc_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace zerodp;
  if (size == 0) return 0;
  const int mode = data[0] % 3;
  ++data;
  --size;
  static const std::string path = fuzz::scratch_path("_model.bin");
  std::vector<uint8_t> file;
  if (mode == 0) {
    file.assign(data, data + size);
  } else {
    std::vector<int32_t> h(256, 0);
    h[0] = model::kLlmcModelMagic;
    h[1] = model::kLlmcModelVersionFp32;
    for (int i = 2; i < 8; ++i) h[i] = fuzz::take_i32(data, size);
    size_t payload = size;
    if (mode == 2) {
      // Small dimensions (possibly still inconsistent, e.g. C % NH != 0).
      h[2] = h[2] & 15;        // maxT
      h[3] = h[3] & 63;        // V
      h[4] = h[4] & 3;         // L
      h[5] = (h[5] & 3) + 1;   // NH
      h[6] = (h[6] & 15) + 1;  // C
      h[7] = h[7] & 127;       // Vp
      model::GptConfig c;
      c.max_seq_len = h[2], c.vocab = h[3], c.layers = h[4], c.heads = h[5], c.channels = h[6];
      c.padded_vocab = h[7];
      payload = model::gpt_num_params(c) * sizeof(float);
    }
    file.assign(reinterpret_cast<const uint8_t*>(h.data()), reinterpret_cast<const uint8_t*>(h.data()) + 1024);
    std::vector<uint8_t> params(data, data + size);
    params.resize(payload, 0);
    file.insert(file.end(), params.begin(), params.end());
  }
  fuzz::write_file(path, file.data(), file.size());
  try {
    const model::LlmcModel m = model::load_llmc_model(path);
    if (m.params.size() != model::gpt_num_params(m.config)) __builtin_trap();  // a wrong read
  } catch (const Error&) {
    // Refused: the expected outcome for a malformed file.
  }
  return 0;
}
