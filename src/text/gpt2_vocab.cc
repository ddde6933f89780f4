// SPDX-License-Identifier: Apache-2.0
#include "text/gpt2_vocab.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <sstream>
#include <unordered_map>

#include "core/error.h"
#include "text/byte_unicode.h"
#include "text/tokenizer_file.h"
#include "text/utf8.h"

namespace zerodp::text {
namespace {

constexpr const char* kFix = "reinstall GPT-2's files with scripts/setup";

std::string read_file(const std::string& path) {
  return read_tokenizer_file(
      path, fmt::format("a tokenizer directory holds GPT-2's {} and {} ({})", kEncoderFile, kMergesFile, kFix));
}

void load_encoder(const std::string& path, BpeVocab& vocab) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    ZDP_THROW(InputFileError, "[tokenizer] {} is not JSON ({}): {}", path, e.what(), kFix);
  }
  ZDP_CHECK(json.is_object() && !json.empty(), InputFileError, "[tokenizer] {} is not a JSON object of token -> id: {}",
            path, kFix);
  const size_t n = json.size();
  vocab.tokens.assign(n, std::string());
  std::vector<bool> seen(n, false);
  std::string bytes;
  for (const auto& [written, id_json] : json.items()) {
    ZDP_CHECK(id_json.is_number_integer(), InputFileError, "[tokenizer] {}: the id of token '{}' is not an integer: {}",
              path, written, kFix);
    const int64_t id = id_json.get<int64_t>();
    ZDP_CHECK(id >= 0 && id < static_cast<int64_t>(n) && !seen[static_cast<size_t>(id)], InputFileError,
              "[tokenizer] {}: token '{}' has id {}, but the {} ids must be 0..{} once each: {}", path, written, id, n,
              n - 1, kFix);
    ZDP_CHECK(byte_level_decode(written, bytes), InputFileError,
              "[tokenizer] {}: token '{}' has a character outside GPT-2's byte table: {}", path, written, kFix);
    seen[static_cast<size_t>(id)] = true;
    vocab.tokens[static_cast<size_t>(id)] = bytes;
  }
}

void load_merges(const std::string& path, BpeVocab& vocab) {
  std::unordered_map<std::string, int32_t> id_of;
  id_of.reserve(vocab.tokens.size());
  for (size_t id = 0; id < vocab.tokens.size(); ++id) id_of.emplace(vocab.tokens[id], static_cast<int32_t>(id));
  for (int b = 0; b < 256; ++b) {
    ZDP_CHECK(id_of.count(std::string(1, static_cast<char>(b))) == 1, InputFileError,
              "[tokenizer] {}/{} has no token for the byte {}: byte-level BPE needs all 256: {}", vocab.dir,
              kEncoderFile, b, kFix);
  }
  const std::string text = read_file(path);
  std::istringstream lines(text);
  std::string line, left_bytes, right_bytes;
  size_t line_no = 0;
  while (std::getline(lines, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const size_t space = line.find(' ');
    const bool two = space != std::string::npos && space > 0 && space + 1 < line.size() &&
                     line.find(' ', space + 1) == std::string::npos;
    ZDP_CHECK(two, InputFileError, "[tokenizer] {}:{}: a merge line is two tokens and one space, got '{}': {}", path,
              line_no, line, kFix);
    const std::string_view left(line.data(), space), right(line.data() + space + 1, line.size() - space - 1);
    ZDP_CHECK(byte_level_decode(left, left_bytes) && byte_level_decode(right, right_bytes), InputFileError,
              "[tokenizer] {}:{}: '{}' has a character outside GPT-2's byte table: {}", path, line_no, line, kFix);
    const auto l = id_of.find(left_bytes), r = id_of.find(right_bytes), m = id_of.find(left_bytes + right_bytes);
    ZDP_CHECK(l != id_of.end() && r != id_of.end() && m != id_of.end(), InputFileError,
              "[tokenizer] {}:{}: the merge '{}' uses or makes a token that is not in {}: the two files do not belong "
              "together: {}",
              path, line_no, line, kEncoderFile, kFix);
    vocab.merges.push_back({l->second, r->second, m->second});
  }
  ZDP_CHECK(!vocab.merges.empty(), InputFileError, "[tokenizer] {} holds no merges: {}", path, kFix);
}

}  // namespace

BpeVocab load_gpt2_vocab(const std::string& dir) {
  BpeVocab vocab;
  vocab.dir = dir;
  const std::filesystem::path d(dir);
  load_encoder((d / kEncoderFile).string(), vocab);
  load_merges((d / kMergesFile).string(), vocab);
  return vocab;
}

}  // namespace zerodp::text
