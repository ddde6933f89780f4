// SPDX-License-Identifier: Apache-2.0
#include "text/tokenizer_lookup.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "text/gpt2_vocab.h"
#include "text/tokenizer_json.h"

namespace zerodp::text {
namespace {

namespace fs = std::filesystem;

bool holds_files(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dir) / kEncoderFile, ec) && fs::is_regular_file(fs::path(dir) / kMergesFile, ec);
}

}  // namespace

std::vector<std::string> gpt2_search_path(const std::string& exe_dir) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv(kDataDirVariable); env != nullptr && env[0] != '\0') {
    dirs.push_back((fs::path(env) / kGpt2TokenizerName).string());
  }
  if (!exe_dir.empty()) {
    dirs.push_back((fs::path(exe_dir) / "share" / "zerodp" / kGpt2TokenizerName).string());
    dirs.push_back((fs::path(exe_dir).parent_path() / "share" / "zerodp" / kGpt2TokenizerName).string());
  }
  return dirs;
}

std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string find_tokenizer_dir(const std::string& spec, const std::string& exe_dir) {
  if (spec == kGpt2TokenizerName) {
    const std::vector<std::string> dirs = gpt2_search_path(exe_dir);
    for (const std::string& dir : dirs) {
      if (holds_files(dir)) return dir;
    }
    std::string looked;
    for (const std::string& dir : dirs) looked += (looked.empty() ? "" : ", ") + dir;
    ZDP_THROW(ConfigError,
              "[tokenizer] GPT-2's {} and {} were not found (looked in {}{}): run scripts/setup, which installs them "
              "with npm, or give --tokenizer a directory that holds them",
              kEncoderFile, kMergesFile, looked.empty() ? "nowhere" : looked,
              std::getenv(kDataDirVariable) ? "" : "; $ZERODP_DATA_DIR/gpt2 is searched first when set");
  }
  std::error_code ec;
  ZDP_CHECK(fs::is_directory(spec, ec), ConfigError,
            "[tokenizer] --tokenizer '{}' is neither '{}', a directory nor a file: give 'gpt2', a directory holding "
            "GPT-2's {} and {}, or a Hugging Face {}",
            spec, kGpt2TokenizerName, kEncoderFile, kMergesFile, kTokenizerJsonFile);
  return spec;
}

std::string tokenizer_json_path(const std::string& spec) {
  std::error_code ec;
  if (spec == kGpt2TokenizerName) return "";
  if (fs::is_regular_file(spec, ec)) return spec;
  if (fs::is_directory(spec, ec) && !fs::exists(fs::path(spec) / kEncoderFile, ec) &&
      fs::is_regular_file(fs::path(spec) / kTokenizerJsonFile, ec)) {
    return (fs::path(spec) / kTokenizerJsonFile).string();
  }
  return "";
}

std::shared_ptr<BpeTokenizer> load_tokenizer(const std::string& spec) {
  if (const std::string json = tokenizer_json_path(spec); !json.empty()) {
    return std::make_shared<BpeTokenizer>(load_tokenizer_json(json));
  }
  return std::make_shared<BpeTokenizer>(load_gpt2_vocab(find_tokenizer_dir(spec)));
}

}  // namespace zerodp::text
