// SPDX-License-Identifier: Apache-2.0
// Where a tokenizer's files are: `--tokenizer gpt2`, `--tokenizer DIR` or
// `--tokenizer PATH/tokenizer.json` (Hugging Face's, tokenizer_json.h).
// "gpt2" is looked up, in order, in
//   1. $ZERODP_DATA_DIR/gpt2 (when the variable is set),
//   2. EXE_DIR/share/zerodp/gpt2 (where scripts/setup puts it: build/),
//   3. EXE_DIR/../share/zerodp/gpt2 (an installed layout: PREFIX/bin),
// where EXE_DIR is the running program's folder; the first that holds
// encoder.json and vocab.bpe wins. Anything else names a directory that
// holds them, or a tokenizer.json (a file, or a directory holding
// tokenizer.json and no encoder.json). Nothing is ever downloaded.
// Thread-safety: reads the environment and the file system only.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "text/bpe_tokenizer.h"

namespace zerodp::text {

inline constexpr const char* kGpt2TokenizerName = "gpt2";
inline constexpr const char* kDataDirVariable = "ZERODP_DATA_DIR";

// The directories "gpt2" is looked up in, in order, for a program in
// `exe_dir`.
std::vector<std::string> gpt2_search_path(const std::string& exe_dir);

// The folder of the running program (/proc/self/exe); "" if unknown.
std::string executable_dir();

// The directory of `spec` ("gpt2" or a directory). Throws ConfigError
// naming where it looked and the fix (scripts/setup) when "gpt2" is not
// found, and when DIR is not a directory.
std::string find_tokenizer_dir(const std::string& spec, const std::string& exe_dir = executable_dir());

// The tokenizer.json `spec` names (a file, or a directory holding
// tokenizer.json but not GPT-2's encoder.json); "" when it names none.
std::string tokenizer_json_path(const std::string& spec);

// tokenizer_json_path + load_tokenizer_json, else find_tokenizer_dir +
// load_gpt2_vocab (InputFileError for bad files).
std::shared_ptr<BpeTokenizer> load_tokenizer(const std::string& spec);

}  // namespace zerodp::text
