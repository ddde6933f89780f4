// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the DeepSpeed config parser (apply_deepspeed_config):
// the input is the JSON text. Every outcome must be a zerodp::Error (a
// refused config) or an accepted config; a crash, a sanitizer report or
// another exception type (e.g. a JSON library exception leaking) is a finding.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.h"
#include "train/ds_config.h"
#include "train/train_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zerodp::train::TrainConfig config;
  try {
    zerodp::train::apply_deepspeed_config(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json",
                                          config, [](const std::string&) {});
  } catch (const zerodp::Error&) {
    // A refused config: the expected outcome for most inputs.
  }
  return 0;
}
