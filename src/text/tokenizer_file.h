// SPDX-License-Identifier: Apache-2.0
// A tokenizer's file read whole (GPT-2's encoder.json and vocab.bpe, a
// Hugging Face tokenizer.json), with the refusals every such file shares.
// Thread-safety: a pure function of the file.
#pragma once

#include <string>
#include <string_view>

namespace zerodp::text {

// The bytes of `path`. InputFileError: "[tokenizer] PATH does not exist:
// ADVICE" when it is not a regular file, and one line each when it cannot
// be opened or read.
std::string read_tokenizer_file(const std::string& path, std::string_view advice);

}  // namespace zerodp::text
