// SPDX-License-Identifier: Apache-2.0
#include "text/tokenizer_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace zerodp::text {

std::string read_tokenizer_file(const std::string& path, std::string_view advice) {
  std::error_code ec;
  ZDP_CHECK(std::filesystem::is_regular_file(path, ec), InputFileError, "[tokenizer] {} does not exist: {}", path,
            advice);
  std::ifstream in(path, std::ios::binary);
  ZDP_CHECK(in.good(), InputFileError, "[tokenizer] cannot open {}: check its permissions", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  ZDP_CHECK(!in.bad(), InputFileError, "[tokenizer] reading {} failed", path);
  return ss.str();
}

}  // namespace zerodp::text
