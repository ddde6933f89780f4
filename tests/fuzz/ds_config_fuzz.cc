// libFuzzer target for the DeepSpeed config parser (apply_deepspeed_config):
// the input is the JSON text. Every outcome must be a zerodp::Error (a
// refused config) or an accepted config; a crash, a sanitizer report or
// another exception type (e.g. a JSON library exception leaking) is a finding.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
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
  } catch (const nlohmann::json::out_of_range& e) {
    // Known finding (reported): a number too large for a double ("1e400")
    // escapes apply_deepspeed_config as a JSON exception, and the CLI prints
    // "internal error" with exit code 1 instead of a ConfigError. Only with
    // ZERODP_FUZZ_KNOWN_JSON_OVERFLOW=1 is it tolerated, so that long runs
    // can look past it until ds_config.cc is fixed.
    static const bool tolerate = std::getenv("ZERODP_FUZZ_KNOWN_JSON_OVERFLOW") != nullptr;
    if (!tolerate || e.id != 406) throw;
  }
  return 0;
}
